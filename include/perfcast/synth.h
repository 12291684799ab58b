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
} pc_synth_opts;

PC_API pc_synth_opts pc_synth_opts_default(void);

/*
 * Writes <out_dir>/npz/{tile/xla,layout/{xla,nlp}/{random,default}}/
 * {train,valid,test}/ (one .npz per graph). Test splits carry zero runtimes, as in the
 * public data. Progress lines go to `log` if not NULL.
 */
PC_API pc_status pc_synth_write(const char *out_dir, const pc_synth_opts *opts, pc_report *log,
                                pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_SYNTH_H */
