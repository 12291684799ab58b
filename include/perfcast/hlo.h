/*
 * Bring your own program: raw XLA HLO tuning data in, TpuGraphs .npz out.
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
 * Output names: a ModuleTuningData FILE.pb gives DIR/FILE.npz; a TuningData
 * gives DIR/FILE_<NNN>_<module name>.npz (NNN = the module's index in the
 * file). Every file is written under a temporary name and renamed; nothing is
 * written unless the whole input parsed and featurized.
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
    pc_kind kind;             /* PC_KIND_AUTO: from the runs; TILE/LAYOUT: required */
    pc_npz_compress compress; /* PC_NPZ_STORED (default) or PC_NPZ_DEFLATED */
} pc_import_opts;

/* kind AUTO, stored archives. */
pc_import_opts pc_import_opts_default(void);

/* What an import found and wrote. */
typedef struct pc_import_report {
    pc_kind kind;            /* of the modules written (AUTO if none) */
    const char *container;   /* "TuningData" or "ModuleTuningData" (static string) */
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
    /*
     * Optional, owned by the caller (may be NULL): one line per file written
     * ("wrote PATH: ...") and per module left out ("skipped module ...").
     */
    pc_report *notes;
} pc_import_report;

/*
 * Imports `path` into `out_dir` (created if missing). `opts` may be NULL
 * (defaults); `rep` may be NULL. Fails with PC_ERR_FORMAT naming the file
 * and the broken part for a truncated or corrupt protobuf, an unknown
 * operand / called-computation id, a cycle of called computations, or a
 * configurable node id out of range; with PC_ERR_INVALID when no module is
 * left to write or the runs do not match opts->kind.
 */
pc_status pc_import_file(const char *path, const char *out_dir, const pc_import_opts *opts,
                         pc_import_report *rep, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_HLO_H */
