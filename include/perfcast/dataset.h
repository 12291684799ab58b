/*
 * The TpuGraphs dataset: typed graphs of the two collections, validation,
 * discovery of a dataset tree, and a memory-mappable cache.
 *
 * Tile graph (one fused kernel, graph-level configs):
 *   node_feat (n,140) f32, node_opcode (n,), edge_index (m,2),
 *   config_feat (c,24) f32, config_runtime (c,), config_runtime_normalizers (c,)
 * Layout graph (whole program, per-node configs):
 *   node_feat, node_opcode, edge_index as above, node_config_ids (nc,),
 *   node_config_feat (c,nc,18) f32, node_splits (k,) or (1,k), config_runtime (c,)
 *
 * Edge row [u, v] means "u consumes v". Integer arrays of any width seen in
 * the wild are accepted and widened: opcodes to int32, edges and ids to
 * int32 (checked to fit), runtimes to int64.
 */
#ifndef PERFCAST_DATASET_H
#define PERFCAST_DATASET_H

#include "perfcast/npz.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PC_NODE_FEAT_DIM 140
#define PC_TILE_CONFIG_DIM 24
#define PC_LAYOUT_CONFIG_DIM 18

typedef enum pc_kind {
    PC_KIND_AUTO = 0, /* decide from the keys present */
    PC_KIND_TILE,
    PC_KIND_LAYOUT
} pc_kind;

PC_API const char *pc_kind_name(pc_kind k); /* "tile", "layout" */

typedef struct pc_graph pc_graph;

typedef struct pc_load_opts {
    size_t struct_size; /* sizeof(pc_load_opts), set by pc_load_opts_default() */
    pc_kind kind;       /* default PC_KIND_AUTO */
    /*
     * Layout node_config_feat larger than this many bytes is not read at load
     * time; its rows are then streamed on demand (pc_graph_config_feat_rows /
     * _gather). 0 means always read it whole. Default
     * PC_LOAD_DEFAULT_RESIDENT_BYTES.
     */
    uint64_t max_resident_config_bytes;
    int threads; /* for parallel inflate; default 0 = all cores */
    /*
     * The memory budget of a load (perfcast/npz.h, "memory budget"): the
     * bytes the arrays take once inflated and converted (plus compressed
     * copies while they inflate; a streamed node_config_feat counts one
     * streaming step), checked from the headers before any data is read.
     * Over it the load fails with PC_ERR_NOMEM naming the file, the largest
     * member and the sizes. Bytes, or the default PC_MEMORY_AUTO (half the
     * available memory). Cache directories are mapped, not counted.
     */
    uint64_t max_memory;
} pc_load_opts;

#define PC_LOAD_DEFAULT_RESIDENT_BYTES (UINT64_C(1) << 30)
/* Default options: kind AUTO, 1 GiB resident limit, all cores, PC_MEMORY_AUTO. */
PC_API pc_load_opts pc_load_opts_default(void);

/*
 * Loads a graph from a .npz file or from a cache directory made by
 * pc_cache_build (arrays then come memory-mapped). opts NULL: the defaults. Shape and dtype errors
 * fail the load; content checks are pc_graph_validate's job.
 */
PC_API pc_status pc_graph_load(const char *path, const pc_load_opts *opts, pc_graph **out,
                               pc_error *err);
PC_API void pc_graph_free(pc_graph *g);
/*
 * Builds a graph from arrays in memory, as if they were the members of an
 * .npz: keys[i] names arrays[i] ("node_feat", ...; unknown keys are
 * ignored), any accepted dtype, checked and widened exactly as
 * pc_graph_load does. The data is copied. `label` stands for the path in
 * messages and pc_graph_path (NULL: "<memory>").
 */
PC_API pc_status pc_graph_from_arrays(const char *label, pc_kind kind, const char *const *keys,
                                      const pc_array *arrays, int count, pc_graph **out,
                                      pc_error *err);
/*
 * Threads: different graphs may be used from different threads. A graph whose
 * node_config_feat is streamed drives its own file handle, so its row access
 * and pc_graph_validate must not run concurrently on that one graph.
 */

PC_API const char *pc_graph_path(const pc_graph *g);
PC_API pc_kind pc_graph_kind(const pc_graph *g);
PC_API int64_t pc_graph_num_nodes(const pc_graph *g);
PC_API int64_t pc_graph_num_edges(const pc_graph *g);
PC_API int64_t pc_graph_num_configs(const pc_graph *g);
/* Layout: configurable nodes (nc); tile: 0. */
PC_API int64_t pc_graph_num_config_nodes(const pc_graph *g);
/* Width of node_feat (140 in the dataset). */
PC_API int64_t pc_graph_node_feat_dim(const pc_graph *g);
/* Width of one config: 24 (tile) or 18 (layout). */
PC_API int64_t pc_graph_config_dim(const pc_graph *g);

PC_API const float *pc_graph_node_feat(const pc_graph *g);      /* (n, feat_dim) */
PC_API const int32_t *pc_graph_node_opcode(const pc_graph *g);  /* (n,) */
PC_API const int32_t *pc_graph_edge_index(const pc_graph *g);   /* (m, 2) */
PC_API const int64_t *pc_graph_config_runtime(const pc_graph *g); /* (c,) */
/* Tile only (NULL for layout). */
PC_API const float *pc_graph_config_feat(const pc_graph *g);           /* (c, 24) */
PC_API const int64_t *pc_graph_runtime_normalizers(const pc_graph *g); /* (c,) */
/* Layout only (NULL for tile). */
PC_API const int32_t *pc_graph_node_config_ids(const pc_graph *g); /* (nc,) */
/* Layout node_splits, flattened; NULL and 0 if absent. */
PC_API const int64_t *pc_graph_node_splits(const pc_graph *g, int64_t *count);
/*
 * Layout node_config_feat if resident (or mapped), else NULL: then use
 * pc_graph_config_feat_rows.
 */
PC_API const float *pc_graph_node_config_feat(const pc_graph *g); /* (c, nc, 18) */

/*
 * Copies configs [c0, c0+n) of a layout graph's node_config_feat into
 * out[n][nc][18], from memory if resident, else streaming from the file.
 */
PC_API pc_status pc_graph_config_feat_rows(pc_graph *g, int64_t c0, int64_t n, float *out,
                                           pc_error *err);
/*
 * Copies the listed configs (any order, repeats allowed) into
 * out[n][nc][18]. Streaming reads sort the ids and make one pass.
 */
PC_API pc_status pc_graph_config_feat_gather(pc_graph *g, const int64_t *ids, int64_t n,
                                             float *out, pc_error *err);

/*
 * Checks content: the widths the models need (node_feat 140 columns,
 * config_feat 24, node_config_feat 18), at least one node and config, edge
 * endpoints and config ids in range, ids unique, splits monotone and within
 * [0, n], runtimes positive (zeros are allowed only when
 * `allow_zero_runtimes`, as test splits carry them), opcodes in [0, 255],
 * features finite. Adds one line per problem to `r` (prefixed with the file
 * path) and returns PC_ERR_INVALID if any were found.
 */
PC_API pc_status pc_graph_validate(const pc_graph *g, int allow_zero_runtimes, pc_report *r);

/*
 * What a graph file is, from its headers alone: everything pc_graph_load
 * checks before it reads array data (keys, dtypes, shapes against each
 * other, and that the load fits opts->max_memory). A cache directory is
 * loaded (mapped) instead.
 */
typedef struct pc_graph_shape {
    size_t struct_size; /* the caller sets sizeof(pc_graph_shape) */
    pc_kind kind;
    int64_t nodes, edges, configs, config_nodes, node_splits;
    int64_t node_feat_dim, config_dim;
    uint64_t load_bytes; /* what pc_graph_load with these options would hold */
} pc_graph_shape;

PC_API pc_status pc_graph_probe(const char *path, const pc_load_opts *opts, pc_graph_shape *out,
                                pc_error *err);

/*
 * Validates a graph file in bounded memory: pc_graph_probe's checks (a file
 * that would not load, or not within opts->max_memory, fails here as the
 * load would: the status is returned with err set), then
 * pc_graph_validate's content checks with every array streamed from the
 * file in chunks of a few MiB, deflated members inflated once and their CRC
 * verified at the end, whatever their size. Content problems go to `r`
 * (PC_ERR_INVALID). A cache directory is loaded (mapped) and validated.
 * What passes loads, and trains (the widths are the models').
 */
PC_API pc_status pc_graph_check_file(const char *path, const pc_load_opts *opts,
                                     int allow_zero_runtimes, pc_report *r, pc_error *err);

/*
 * The widths and opcode range the graphs must have for the model(s) that
 * will read them. pc_graph_widths_default() is what every model perfcast
 * trains needs, and what pc_graph_validate and pc_graph_check_file check;
 * pc_model_graph_widths (perfcast/predict.h) reads one checkpoint's.
 */
typedef struct pc_graph_widths {
    size_t struct_size;        /* sizeof(pc_graph_widths), set by pc_graph_widths_default() */
    pc_kind kind;              /* the one kind accepted; default PC_KIND_AUTO (either) */
    int64_t node_feat_dim;     /* node_feat columns; default PC_NODE_FEAT_DIM (140) */
    int64_t tile_config_dim;   /* tile config_feat columns; default PC_TILE_CONFIG_DIM (24) */
    int64_t layout_config_dim; /* layout node_config_feat columns; default PC_LAYOUT_CONFIG_DIM (18) */
    int64_t num_opcodes;       /* node_opcode must lie in [0, num_opcodes); default 256 */
    /* Who needs the widths, named in the messages ("model m.safetensors"); default NULL:
       "the models" (the widths every model needs). Not copied: must outlive the call. */
    const char *who;
} pc_graph_widths;
PC_API pc_graph_widths pc_graph_widths_default(void);

/*
 * pc_graph_validate and pc_graph_check_file against the given widths (NULL:
 * the defaults): a node_feat, config_feat or node_config_feat of another width,
 * an opcode outside [0, num_opcodes) or a graph of another kind is a
 * problem naming the file, the field, what `who` expects and what was found.
 */
PC_API pc_status pc_graph_validate_widths(const pc_graph *g, int allow_zero_runtimes,
                                          const pc_graph_widths *widths, pc_report *r);
PC_API pc_status pc_graph_check_file_widths(const char *path, const pc_load_opts *opts,
                                            int allow_zero_runtimes,
                                            const pc_graph_widths *widths, pc_report *r,
                                            pc_error *err);

/* ---- dataset trees ---------------------------------------------------- */

/*
 * The five collections, in this fixed order:
 *   tile:xla, layout:xla:random, layout:xla:default,
 *   layout:nlp:random, layout:nlp:default
 */
#define PC_NUM_COLLECTIONS 5
#define PC_NUM_SPLITS 3
PC_API const char *pc_collection_name(int c);     /* "layout:xla:random" */
PC_API const char *pc_collection_dir(int c);      /* "layout/xla/random" */
PC_API pc_kind pc_collection_kind(int c);
PC_API int pc_collection_find(const char *name);  /* -1 if unknown */
PC_API const char *pc_split_name(int s);          /* "train", "valid", "test" */
PC_API int pc_split_find(const char *name);       /* -1 if unknown */

typedef struct pc_dataset pc_dataset;

/*
 * Scans a dataset root: `root` may hold npz/{tile/xla,layout/...}/{split}/
 * (the public download) or those folders directly. Missing collections and
 * splits are simply empty; a root holding none at all is PC_ERR_NOTFOUND.
 * Files are listed in name order. Every entry named *.npz is listed, and every *.pcc
 * entry that is not a cache directory beside its .npz, whatever it really is: a
 * directory, FIFO or dangling symbolic link named so then fails to load
 * (naming what it is) rather than being skipped. Hidden names are skipped.
 */
PC_API pc_status pc_dataset_open(const char *root, pc_dataset **out, pc_error *err);
PC_API void pc_dataset_close(pc_dataset *d);
PC_API const char *pc_dataset_root(const pc_dataset *d); /* the folder holding tile/ and layout/ */
PC_API size_t pc_dataset_num_files(const pc_dataset *d, int collection, int split);
PC_API const char *pc_dataset_file(const pc_dataset *d, int collection, int split, size_t i);

/* ---- memory-mappable cache -------------------------------------------- */

/*
 * Converts one .npz into a cache directory (`out_dir`, created) of
 * uncompressed, native-endian, C-order .npy files — one per array, integer
 * arrays already widened as pc_graph_load would — so later loads map them
 * instead of inflating. Written under a temporary name and renamed.
 */
PC_API pc_status pc_cache_build(const char *npz_path, const char *out_dir, pc_error *err);

typedef struct pc_cache_opts {
    size_t struct_size; /* sizeof(pc_cache_opts), set by pc_cache_opts_default() */
    int threads;        /* files converted at once; default 0 = all cores */
    /* Called after each file ("files cached", done of all the files, up-to-date
       ones included); default NULL (perfcast/perfcast.h, pc_progress_fn). */
    pc_progress_fn progress;
    void *progress_user; /* its first argument; default NULL */
} pc_cache_opts;

PC_API pc_cache_opts pc_cache_opts_default(void);

/* What a tree build did. The caller sets struct_size = sizeof(pc_cache_result). */
typedef struct pc_cache_result {
    size_t struct_size;
    int64_t files;      /* .npz sources in the dataset */
    int64_t built;      /* entries written (new or out of date) */
    int64_t up_to_date; /* entries kept as they were */
    int64_t failed;     /* sources that could not be cached (listed in the report) */
} pc_cache_result;

/*
 * Converts every file of a dataset tree into `cache_root`, mirroring the
 * layout (…/<collection dir>/<split>/<stem>.pcc/). Existing up-to-date
 * entries are kept. Reports per-file failures to `r` and goes on; any
 * failure makes the call fail (naming the first) once the others are done.
 * opts NULL: the defaults; r and res may be NULL (res is filled on failure
 * too, once the files were tried).
 */
PC_API pc_status pc_cache_build_tree(const pc_dataset *d, const char *cache_root,
                                     const pc_cache_opts *opts, pc_report *r, pc_cache_result *res,
                                     pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_DATASET_H */
