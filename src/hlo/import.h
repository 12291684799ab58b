/*
 * From parsed tuning data (proto.h) to the arrays of one dataset .npz
 * (include/perfcast/hlo.h describes the files and the filtering rules).
 * Split from the writing so the fuzz target can run everything but the I/O.
 */
#ifndef PC_HLO_IMPORT_H
#define PC_HLO_IMPORT_H

#include "hlo/proto.h"
#include "perfcast/hlo.h"

/* The arrays of one graph file. */
typedef struct pc_hlo_sample {
    pc_kind kind;          /* AUTO: the module was left out (see the reason) */
    pc_hlo_graph g;        /* node_feat, node_opcode, edges, node_splits */
    int64_t c;             /* configurations kept */
    int64_t nc;            /* layout: configurable nodes */
    float *config_feat;    /* tile (c, 24); layout (c, nc, 18) */
    int64_t *runtime;      /* (c) compute_time_ns */
    int64_t *normalizers;  /* tile (c): the default run's time */
    int64_t *config_ids;   /* layout (nc) */
    /* g.node_feat NULL (pc_hlo_featurize_lazy): its rows are made from this module while
     * the file is written (borrowed; must outlive pc_hlo_sample_write) */
    const pc_hlo_module *rows_of;
} pc_hlo_sample;

/*
 * Builds the arrays of module `t` (the `index`-th of the file `what`; -1
 * for the only module of a ModuleTuningData) for
 * `want` (AUTO: from its runs). Counts its runs into rep (may be NULL). A
 * module the dataset's iterator would leave out gives PC_OK with kind AUTO
 * and the reason in `why`; corrupt data gives an error.
 */
pc_status pc_hlo_sample_build(const pc_hlo_tuned *t, pc_kind want, const char *what, int32_t index,
                              pc_hlo_sample *s, pc_import_report *rep, char *why, size_t why_cap,
                              pc_error *err);

/* ---- sample.c: shared by the protobuf and the HLO text import -------------- */

void pc_hlo_sample_free(pc_hlo_sample *s); /* the arrays, not the struct */

/* Writes a sample's arrays as a dataset .npz (temporary name, then renamed). For
 * c = 0 (HLO text: no runs) the config arrays are written with 0 rows. The arrays
 * are read in place while the archive is written (no copy); node_feat, when the
 * sample has none, row by row from s->rows_of. */
pc_status pc_hlo_sample_write(const pc_hlo_sample *s, const char *path, pc_npz_compress mode,
                              pc_error *err);

/* A module name made safe for a file name ([A-Za-z0-9._-], at most 80 bytes). */
void pc_hlo_safe_name(const char *in, char *out, size_t cap);

/* ---- import_text.c ------------------------------------------------------------ */

/* *text = 1 if `path` is HLO text: by its extension (.hlo/.txt text, .pb
 * protobuf), else by content (no NUL or control bytes in the first 4 KiB). */
pc_status pc_hlo_is_text_file(const char *path, int *text, pc_error *err);

/* What the import's samples may hold beyond the parsed modules, checked against
 * pc_import_opts.max_memory before any is built: per node its opcode, the featurizer's id
 * map and a configurable node's id (and, from a tuning file, its node_feat row of 140
 * floats), per edge its pair. */
#define PC_IMPORT_BYTES_PER_NODE 80
#define PC_IMPORT_BYTES_PER_FEAT_ROW (PC_TPUG_NODE_FEATS * 4)
#define PC_IMPORT_BYTES_PER_EDGE 16

/* pc_import_file for HLO text: graph-only files (include/perfcast/hlo.h). */
pc_status pc_import_text(const char *path, const char *out_dir, const pc_import_opts *o,
                         pc_import_report *rep, pc_error *err);

#endif /* PC_HLO_IMPORT_H */
