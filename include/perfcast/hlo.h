/*
 * Bring your own program: raw XLA HLO tuning data or HLO text in, TpuGraphs
 * .npz out; and candidate configurations of an HLO program for ranking.
 *
 * pc_import_file reads a TpuGraphs tuning protobuf (tpu_graphs/proto/
 * tuning.proto):
 *  - a TuningData (several ModuleTuningData, e.g. op_tuning_data.pb: one fused
 *    kernel per module, each with tile-size runs), or
 *  - a ModuleTuningData (one program with layout runs, e.g.
 *    module_tuning_data_layout.pb),
 * featurizes every module exactly as the dataset's extractor does (140 node
 * features, opcode ids, operand and called-computation edges, node_splits;
 * ../shared/reference/tpugraphs.md 6.3-6.4) and writes one dataset-layout
 * .npz per module that `perfcast info/check` and pc_graph_load read:
 *  - tile:   node_feat, node_opcode, edge_index, config_feat (c,24),
 *            config_runtime, config_runtime_normalizers;
 *  - layout: node_feat, node_opcode, edge_index, node_config_feat (c,nc,18),
 *            node_config_ids, node_splits (1,k), config_runtime.
 * Runs are filtered as the dataset's iterator does: runs with `error` set or
 * without a profile are dropped, tile runs of <= 1 ns too; the runtime of the
 * run marked is_default is the tile normalizer, and a module without one
 * (or, for tile, with a single run or a run without a tile config) is left
 * out with a note.
 *
 * HLO text (XLA dumps, .hlo test files; FILE.hlo / FILE.txt, or any file
 * that is text rather than protobuf) is featurized the same way, but text
 * has no measured runs, so every module becomes a graph-only file: the graph
 * arrays, zero configurations and no runtimes:
 *  - layout (kind AUTO or LAYOUT): node_feat, node_opcode, edge_index,
 *    node_splits (1,k), node_config_ids (nc) = the nodes a layout autotuner
 *    configures (every convolution, dot and reshape; see hlo/candidates.h),
 *    node_config_feat (0,nc,18), config_runtime (0,);
 *  - tile (kind TILE): node_feat, node_opcode, edge_index, config_feat
 *    (0,24), config_runtime (0,), config_runtime_normalizers (0,) (no
 *    node_splits, like the dataset's tile files).
 * pc_graph_load and `perfcast info` read them; `perfcast check` reports
 * "graph has no configs" (they are programs to rank, not training data).
 * Instructions with opcodes outside the TpuGraphs table get id 0 and are
 * counted in unknown_opcodes / first_unknown.
 *
 * Output names: a ModuleTuningData FILE.pb gives DIR/FILE.npz; a TuningData
 * gives DIR/FILE_<NNN>_<module name>.npz (NNN = the module's index in the
 * file). HLO text with one module gives DIR/FILE.npz, with several ("// -----"
 * separated) DIR/FILE_<NNN>_<module name>.npz. Every file is written under a
 * temporary name and renamed; nothing is written unless the whole input
 * parsed and featurized.
 */
#ifndef PERFCAST_HLO_H
#define PERFCAST_HLO_H

#include "perfcast/dataset.h"
#include "perfcast/npz.h"
#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pc_import_opts {
    size_t struct_size;       /* sizeof(pc_import_opts), set by pc_import_opts_default() */
    pc_kind kind;             /* PC_KIND_AUTO: from the runs; TILE/LAYOUT: required */
    pc_npz_compress compress; /* PC_NPZ_STORED (default) or PC_NPZ_DEFLATED */
    /* Called after each module featurized ("modules read") and each file
       written ("files written"), and for an input of 4 MiB or more while it is
       read and parsed ("bytes read", "bytes parsed": done of total bytes, about
       every MiB); default NULL (perfcast/perfcast.h, pc_progress_fn). */
    pc_progress_fn progress;
    void *progress_user; /* its first argument; default NULL */
    /* The memory budget (bytes, or PC_MEMORY_AUTO: half the available memory,
       perfcast/npz.h; the default) of reading and parsing the input, checked
       before it is read and parsed: HLO text as pc_rank_opts.max_memory says
       (the files of a dump directory all together), a tuning protobuf its size
       plus 5 times what its messages unpack to; then, before any module's
       arrays are built, the parsed modules and every module's graph (80 bytes
       a node, 16 an edge; from a tuning file also its node_feat rows and
       configurations). Over it: PC_ERR_NOMEM naming the file and both sizes,
       nothing written. */
    uint64_t max_memory;
} pc_import_opts;

/* kind AUTO, stored archives. */
PC_API pc_import_opts pc_import_opts_default(void);

/* What an import found and wrote. The caller sets struct_size =
   sizeof(pc_import_report) (and notes) before the call. */
typedef struct pc_import_report {
    size_t struct_size;
    pc_kind kind;            /* of the modules written (AUTO if none) */
    const char *container;   /* "TuningData", "ModuleTuningData" or "HLO text" (static) */
    int64_t modules;         /* modules in the file */
    int64_t written;         /* .npz files written */
    int64_t skipped;         /* modules left out (the reasons are in `notes`) */
    int64_t runs;            /* runs in the file */
    int64_t runs_kept;       /* configurations written */
    int64_t runs_error;      /* dropped: `error` set */
    int64_t runs_no_profile; /* dropped: no ExecutionProfile (and no error flag) */
    int64_t runs_bad_time;   /* dropped: compute_time_ns <= 1 (tile) or <= 0 (layout) */
    int64_t defaults;        /* kept runs marked is_default */
    int64_t nodes, edges;    /* totals over the written graphs */
    int64_t unknown_opcodes; /* instructions whose opcode is not in the TpuGraphs table (id 0) */
    char first_unknown[64];  /* the first such opcode ("" if none; HLO text only) */
    /*
     * Optional, owned by the caller (may be NULL): one line per file written
     * ("wrote PATH: ...") and per module left out ("skipped module ...").
     */
    pc_report *notes;
} pc_import_report;

/*
 * Imports `path` into `out_dir` (created if missing): HLO text when the name
 * ends in .hlo or .txt, a protobuf when it ends in .pb, otherwise by content
 * (text has no NUL or control bytes in its first 4 KiB). `opts` may be NULL
 * (defaults); `rep` may be NULL. Fails with PC_ERR_FORMAT naming the file
 * and the broken part for a truncated or corrupt protobuf ("PATH:LINE:COLUMN:
 * expected ..." for HLO text), an unknown operand / called-computation id, a
 * cycle of called computations, or a configurable node id out of range; with
 * PC_ERR_INVALID when no module is left to write or the runs do not match
 * opts->kind.
 */
PC_API pc_status pc_import_file(const char *path, const char *out_dir, const pc_import_opts *opts,
                                pc_import_report *rep, pc_error *err);

/* ---- ranking a program's candidate configurations ----------------------- */

/*
 * Candidates for one graph of an HLO text file, built in memory (no files):
 *  - layout: the whole module; its configurable nodes are every convolution,
 *    dot and reshape (on the real layout fixture: exactly its 62
 *    config_index_to_node nodes). A candidate gives each of them up to 3
 *    tensor layouts (output, operand 0, operand 1), each a minor_to_major
 *    prefix (convolution / dot: the 2 most-minor dims; reshape: all), -1 =
 *    the compiler's default, as node_config_feat holds them.
 *  - tile: one graph per fused kernel (each fusion instruction, wrapped as
 *    the tile collection's modules are: its operands as parameters), or the
 *    whole module when it has no fusion; a candidate is a tile-size config
 *    (kernel / output / input bounds) and its config_feat (24) is computed as
 *    the importer computes it from TileSizeConfig.
 *
 * Candidates come from a file (opts.configs) or are enumerated:
 *  - layout: config 0 = all defaults, then up to `candidates`-1 distinct
 *    random layouts (each configurable node: default, or a random
 *    permutation per tensor), drawn from `seed`;
 *  - tile: per output dimension d the tiles d, then the powers of two below
 *    d, descending; config 0 = the whole output; all combinations when they
 *    are at most `candidates`, else config 0 and distinct random ones.
 *
 * The candidates file, one configuration per line ('#' starts a comment,
 * blank lines are skipped):
 *  - layout: `default` (all -1), or whitespace-separated NODE=T0/T1/T2
 *    items, NODE an instruction name of a configurable node or @J (its
 *    index among them), each Ti a comma-separated minor_to_major prefix
 *    (distinct dims of that tensor) or '-' for the default; nodes not
 *    named keep the default. Example: `convolution.3=3,0/3,0/2,3 reshape.1=1,0`.
 *  - tile: `output=8,128 kernel=1,2 input=` items (comma lists of positive
 *    sizes; missing lists are empty); a bare list is the output bounds.
 * pc_rank_set_describe prints a configuration in the same notation, so its
 * output read back as a candidates file gives the same configurations.
 */
typedef struct pc_rank_opts {
    size_t struct_size;  /* sizeof(pc_rank_opts), set by pc_rank_opts_default() */
    pc_kind kind;        /* TILE or LAYOUT: the model's kind */
    const char *configs; /* candidates file, or NULL to enumerate */
    const char *kernel;  /* tile: only the kernel with this fusion (or computation) name */
    int64_t candidates;  /* enumerated: at most this many, config 0 included (default 64) */
    uint64_t seed;       /* enumerated layouts / sampled tiles (default 1) */
    /*
     * The memory budget (bytes, or PC_MEMORY_AUTO: half the available memory,
     * perfcast/npz.h) of reading the program and building its sets, checked
     * before each allocation it bounds: the text (its size, then up to 384
     * bytes per '(' and 24 bytes per byte of text for parsing it), each module's or
     * kernel's graph (1130 bytes per node, 32 per edge) with its candidates
     * (layout: 9 bytes per configurable node and each of its 18 slots, tile:
     * about 600 bytes each), added to what the parsed modules and the sets
     * built before it hold. Over it: PC_ERR_NOMEM naming the file (and
     * module or kernel), the count of candidates and both sizes. Default
     * PC_MEMORY_AUTO.
     */
    uint64_t max_memory;
    /* Progress of reading and parsing HLO text of 4 MiB or more: "bytes read"
       then "bytes parsed", done of total bytes, about every MiB; default NULL
       (perfcast/perfcast.h, pc_progress_fn). */
    pc_progress_fn progress;
    void *progress_user; /* its first argument; default NULL */
} pc_rank_opts;

PC_API pc_rank_opts pc_rank_opts_default(void);

typedef struct pc_rank_set pc_rank_set;

/*
 * Reads the HLO text `path` and builds one set per module (layout) or per
 * kernel (tile) into a malloc'd array *sets of *n >= 1. `rep` (may be NULL)
 * receives modules, nodes, edges, unknown_opcodes and first_unknown. Errors:
 * PC_ERR_FORMAT for malformed HLO ("PATH:LINE:COLUMN: expected ...") or a bad
 * candidates file ("CONFIGS:LINE: ..." naming the field and what was
 * expected); PC_ERR_INVALID for a layout module without configurable nodes
 * or a --kernel name that matches no kernel (the message lists them).
 */
PC_API pc_status pc_rank_sets_from_hlo(const char *path, const pc_rank_opts *opts,
                                       pc_rank_set ***sets, int *n, pc_import_report *rep,
                                       pc_error *err);
PC_API void pc_rank_sets_free(pc_rank_set **sets, int n); /* NULL ok */

PC_API const char *pc_rank_set_name(const pc_rank_set *s); /* module or kernel (fusion) name */
PC_API pc_graph *pc_rank_set_graph(pc_rank_set *s);        /* scored by pc_predictor_score */
PC_API int64_t pc_rank_set_count(const pc_rank_set *s);    /* candidates */
PC_API int64_t pc_rank_set_config_nodes(const pc_rank_set *s); /* layout nc; tile 0 */
/*
 * Configuration k spelled out: the candidates-file notation (json = 0), or a
 * JSON value (json = 1: layout, an array of the non-default nodes with
 * name, opcode, node and output/input/kernel minor_to_major; tile, an object
 * of kernel/output/input bounds). malloc'd; NULL when out of memory.
 */
PC_API char *pc_rank_set_describe(const pc_rank_set *s, int64_t k, int json);
/* The same for any configuration row of the set's graph (tile config_feat,
   24 floats; layout node_config_feat, config nodes x 18), e.g. one that
   perfcast tune proposes. */
PC_API char *pc_rank_set_describe_config(const pc_rank_set *s, const float *config, int json);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_HLO_H */
