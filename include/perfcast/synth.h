/*
 * Synthetic TpuGraphs-format data: realistic HLO-like graphs (convolutional
 * nets, transformer blocks, MLPs) with real opcode ids and node features
 * filled the way the dataset's featurizer fills them, timed by a documented
 * simulated-TPU cost model in which tiles and layouts matter (see
 * docs/synth.md). Deterministic for a seed.
 */
#ifndef PERFCAST_SYNTH_H
#define PERFCAST_SYNTH_H

#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pc_synth_scale {
    PC_SYNTH_TINY = 0, /* seconds; tests */
    PC_SYNTH_SMALL,    /* the demo and quick training */
    PC_SYNTH_FULL,     /* benchmarks */
    PC_SYNTH_SCALE_COUNT
} pc_synth_scale;

/* "tiny", "small", "full"; NULL for a value outside the enum. */
PC_API const char *pc_synth_scale_name(pc_synth_scale s);
/* The scale of a name; PC_ERR_ARG (and *out unchanged) if unknown. */
PC_API pc_status pc_synth_scale_parse(const char *name, pc_synth_scale *out);

typedef struct pc_synth_opts {
    size_t struct_size;        /* sizeof(pc_synth_opts), set by pc_synth_opts_default() */
    pc_synth_scale scale;      /* default PC_SYNTH_SMALL */
    uint64_t seed;             /* default 1 */
    int threads;               /* default 0 = all cores */
    int compress;              /* 1: deflated .npz (like savez_compressed); default 0 */
    /* Overrides of the scale's defaults; 0 keeps the default. */
    int64_t graphs_per_split;  /* tile and layout graphs per split (train) */
    int64_t layout_nodes;      /* target nodes of each layout graph */
    int64_t layout_configs;    /* configs per layout graph */
    int64_t tile_configs;      /* configs per tile graph */
    /* Which collections to write (bit c set = pc_collection_name(c)); 0 = all. */
    unsigned collections;
    /* 1: write the simulator's noise-free runtimes (what pc_synth_sim_run
       gives) instead of measurements with noise; default 0. Graphs and
       stems are the same either way. */
    int noise_free;
    /* Called after each graph written ("graphs written", done of all the
       graphs); default NULL (perfcast/perfcast.h, pc_progress_fn). */
    pc_progress_fn progress;
    void *progress_user; /* its first argument; default NULL */
} pc_synth_opts;

PC_API pc_synth_opts pc_synth_opts_default(void);

/*
 * Writes <out_dir>/npz/{tile/xla,layout/{xla,nlp}/{random,default}}/
 * {train,valid,test}/ (one .npz per graph). Test splits carry zero runtimes, as in the
 * public data. Progress lines go to `log` if not NULL.
 */
PC_API pc_status pc_synth_write(const char *out_dir, const pc_synth_opts *opts, pc_report *log,
                                pc_error *err);

/* ---- the simulated TPU, on one graph synth wrote ------------------------- */

/*
 * A graph written by pc_synth_write, rebuilt with its cost model so that any
 * configuration of it can be timed: the true, noise-free runtime the
 * measurements in the file were drawn around (`perfcast simulate`).
 */
typedef struct pc_synth_sim pc_synth_sim;

/*
 * Rebuilds the graph of the .npz at `path`: its stem ("<model>_s<N>" for
 * layout, "<model>_s<N>_fusion_<K>" for tile; any directory, so a copy such
 * as a tune output named after it works too) says which graph, and `opts`
 * how synth was run: seed, and graphs_per_split, layout_nodes and
 * tile_configs when they were overridden (opts->scale is tried first, then
 * the other scales). The file's node_feat, node_opcode and edge_index (and
 * node_config_ids) must equal the rebuilt graph's, else PC_ERR_FORMAT naming
 * the file: a file synth did not write, or wrote with other options, is
 * refused. NULL opts: the defaults.
 */
PC_API pc_status pc_synth_sim_load(const char *path, const pc_synth_opts *opts,
                                   pc_synth_sim **out, pc_error *err);
PC_API void pc_synth_sim_free(pc_synth_sim *s); /* NULL ok */
/* 1 for a tile graph (configs are config_feat rows of 24 floats), 0 for a
   layout graph (node_config_feat rows of config_nodes x 18 floats). */
PC_API int pc_synth_sim_is_tile(const pc_synth_sim *s);
PC_API int64_t pc_synth_sim_config_nodes(const pc_synth_sim *s); /* layout nc; tile 0 */
/* Where the graph sits in synth's output: "layout:xla train 3 (scale small)". */
PC_API const char *pc_synth_sim_describe(const pc_synth_sim *s);
/*
 * Noise-free runtimes (ns) of n configs, rows as in the .npz. Layout: each
 * tensor all -1 (the compiler's choice) or a permutation of its rank's dims;
 * tile: kernel bounds within the kernel's extents. Anything else: PC_ERR_ARG
 * naming the config, node and tensor. Not for concurrent use on one sim.
 */
PC_API pc_status pc_synth_sim_run(pc_synth_sim *s, const float *configs, int64_t n, double *ns,
                                  pc_error *err);
/* Runtime (ns) of the compiler's default: layout all -1; tile the tiling
   synth's simulated compiler picks (one of the file's configs, unmarked). */
PC_API double pc_synth_sim_default_ns(const pc_synth_sim *s);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_SYNTH_H */
