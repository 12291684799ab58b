/*
 * Internals of the dataset module: the graph record shared by the .npz loader
 * (graph.c), the cache (cache.c), the choice between them (load.c), config-row
 * access (config_rows.c) and the validator (validate.c). Not part of the public API.
 */
#ifndef PC_DATASET_GRAPH_INTERNAL_H
#define PC_DATASET_GRAPH_INTERNAL_H

#include "perfcast/dataset.h"

/* Every array a graph may hold, in one table so loaders can loop over keys. */
enum {
    PC_K_NODE_FEAT = 0,
    PC_K_NODE_OPCODE,
    PC_K_EDGE_INDEX,
    PC_K_CONFIG_FEAT,
    PC_K_CONFIG_RUNTIME,
    PC_K_NORMALIZERS,
    PC_K_NODE_CONFIG_IDS,
    PC_K_NODE_CONFIG_FEAT,
    PC_K_NODE_SPLITS,
    PC_K_COUNT
};

/* The npz key of array k ("node_feat", ...). */
const char *pc_key_name_(int k);
/* The dtype array k is held in once loaded (widened ints, float32 floats). */
pc_dtype pc_key_dtype_(int k);
/* 1 if array k belongs to graphs of `kind` (required or optional). */
int pc_key_used_(int k, pc_kind kind);

/* What a source says about one array before its data is fetched. */
typedef struct pc_slot {
    int present;
    pc_dtype dtype; /* file dtype */
    int fortran;
    int ndim;
    int64_t shape[PC_MAX_DIMS];
    uint64_t data_bytes;
} pc_slot;

/* Bytes of node_config_feat read per step when it is streamed. */
#define PC_STREAM_CHUNK_BYTES (UINT64_C(32) << 20)

struct pc_graph {
    char *path;
    pc_kind kind;
    int64_t n, m, c, nc, nsplits;
    int64_t feat_dim, cfg_dim;
    pc_array a[PC_K_COUNT]; /* data NULL when absent (or streamed) */
    int has[PC_K_COUNT];
    /* Open only while node_config_feat is streamed rather than resident. */
    pc_npz *z;
    int ncf_member;
    uint64_t chunk_bytes; /* streaming step; tests shrink it */
};

pc_graph *pc_graph_new_(const char *path);
/*
 * Checks keys, dtypes and shapes against each other, decides the kind (from
 * `want`, or the keys when AUTO) and fills g's sizes and has[].
 */
pc_status pc_graph_check_shapes_(pc_graph *g, const pc_slot *slots, pc_kind want,
                                 pc_error *err);
/* Rewrites the accepted alternative shapes to the canonical one in place. */
void pc_graph_canon_shape_(pc_graph *g, int k);
/* Formats "(5, 3)" / "(5,)" / "()". */
void pc_shape_str_(int ndim, const int64_t *shape, char *buf, size_t cap);

/* The two sources pc_graph_load (load.c) chooses between: an .npz file (graph.c;
 * `o` complete, path not checked) and a cache directory made by pc_cache_build
 * (cache.c). */
pc_status pc_graph_load_npz_(const char *path, const pc_load_opts *o, pc_graph **out,
                             pc_error *err);
pc_status pc_graph_load_cache_(const char *dir, const pc_load_opts *opts, pc_graph **out,
                               pc_error *err);

/* 1 if node_config_feat is read from the file on demand. */
int pc_graph_streamed_(const pc_graph *g);
/* Rows per streaming step for node_config_feat (bounded by chunk_bytes). */
int64_t pc_graph_chunk_rows_(const pc_graph *g);

/*
 * One forward pass over node_config_feat, resident or streamed: reads must
 * come at non-decreasing, non-overlapping config offsets, so a deflated
 * member is inflated once per pass rather than once per read. Not
 * thread-safe (it drives the graph's archive handle).
 */
typedef struct pc_ncf_pass {
    const pc_graph *g;
    pc_npz_rows *cur;  /* NULL when resident */
    double *scratch;   /* float64 files: rows before narrowing */
    int64_t scratch_rows;
} pc_ncf_pass;

pc_status pc_ncf_pass_open_(const pc_graph *g, pc_ncf_pass *p, pc_error *err);
/* Copies configs [c0, c0+n) as float32 into out[n][nc][d]; n <= chunk rows. */
pc_status pc_ncf_pass_read_(pc_ncf_pass *p, int64_t c0, int64_t n, float *out, pc_error *err);
void pc_ncf_pass_close_(pc_ncf_pass *p);

/*
 * Reads the headers of an .npz graph (g->z open), checks keys, dtypes and
 * shapes, decides whether node_config_feat is streamed, and checks that the
 * load fits o->max_memory, before any array data is read. *need: the bytes
 * the load holds.
 */
pc_status pc_graph_npz_plan_(pc_graph *g, const pc_load_opts *o, pc_slot *slots, int *member,
                             int *streamed, uint64_t *need, pc_error *err);

/*
 * Content checks taking each array in chunks of its loaded dtype (validate.c):
 * pc_vcheck_new_ checks the sizes and widths; then for each key of
 * pc_vcheck_keys_ (in report order), the chunks in order (first and count in
 * elements) and pc_vcheck_key_end_. pc_vcheck_free_ returns the problem count.
 */
typedef struct pc_vcheck pc_vcheck;
/* widths: what the model(s) need (NULL: pc_graph_widths_default()) */
pc_vcheck *pc_vcheck_new_(const pc_graph *g, int allow_zero_runtimes, const pc_graph_widths *w,
                          pc_report *r);
int pc_vcheck_keys_(const pc_graph *g, int *keys);
void pc_vcheck_chunk_(pc_vcheck *c, int key, const void *data, int64_t first, int64_t count);
void pc_vcheck_key_end_(pc_vcheck *c, int key);
void pc_vcheck_problem_(pc_vcheck *c, const char *msg);
int64_t pc_vcheck_free_(pc_vcheck *c);

/* Test hook: the streaming step in bytes (0 restores the default). */
void pc_graph_set_chunk_bytes_(pc_graph *g, uint64_t bytes);

/*
 * pc_cache_build with an explicit resident limit (0 reads node_config_feat
 * whole) and streaming step (0 = default) for the conversion, so tests can
 * force the chunked path.
 */
pc_status pc_cache_build_ex_(const char *npz_path, const char *out_dir, uint64_t resident,
                             uint64_t chunk_bytes, pc_error *err);

#endif /* PC_DATASET_GRAPH_INTERNAL_H */
