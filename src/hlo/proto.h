/*
 * Raw TpuGraphs tuning data (tpu_graphs/proto/tuning.proto) read with
 * protobuf-c into the HLO IR (hlo_ir.h) plus the measured runs.
 *
 * A file holds one of:
 *  - TuningData{modules}: several ModuleTuningData (the tile collection's
 *    op_tuning_data.pb: one fused kernel per module);
 *  - ModuleTuningData{module, fingerprint, runs, config_index_to_node}: one
 *    program and its runs (the layout collection);
 *  - a bare HloModuleProto (no runs).
 * Which one is decided from the top-level field numbers and wire types, then
 * confirmed by parsing. Every count and id is checked: a truncated or
 * corrupt file gives PC_ERR_FORMAT with the file name, and where possible the
 * module / run / byte offset that is broken.
 */
#ifndef PC_HLO_PROTO_H
#define PC_HLO_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "hlo/hlo_ir.h"

/* What a ConfigProfile holds. */
typedef enum pc_hlo_run_config {
    PC_HLO_RUN_NONE = 0, /* neither op_config nor module_config */
    PC_HLO_RUN_TILE,     /* op_config (HloOpConfig) */
    PC_HLO_RUN_LAYOUT    /* module_config (HloModuleConfig) */
} pc_hlo_run_config;

/* One ConfigProfile: a configuration and its measurement. */
typedef struct pc_hlo_run {
    pc_hlo_run_config config;
    int error;       /* ConfigProfile.error (3) */
    int is_default;  /* ConfigProfile.is_default (5) */
    int has_profile; /* profile (4) present */
    int64_t ns;      /* profile.compute_time_ns (4); 0 without a profile */
    /* tile: op_config.tile_size_config (has_tile = 0 if absent) */
    int has_tile;
    pc_i64s kernel_bounds, output_bounds, input_bounds;
    /* layout: module_config.layout_config (has_layout = 0 if absent) */
    int has_layout;
    int32_t layout_nodes; /* LayoutConfig.nodes */
    int32_t *layout;      /* (layout_nodes, PC_TPUG_LAYOUT_FEATS): tensors' dims, -1 padded */
} pc_hlo_run;

/* One ModuleTuningData (or a bare HloModuleProto: no runs). */
typedef struct pc_hlo_tuned {
    pc_hlo_module *module; /* NULL if the message had none */
    uint64_t fingerprint;
    pc_hlo_run *runs;
    int32_t n_runs;
    int64_t *config_index_to_node; /* node indices of the configurable nodes */
    int32_t n_config_nodes;
} pc_hlo_tuned;

typedef enum pc_hlo_file_kind {
    PC_HLO_FILE_TUNING_DATA = 0,
    PC_HLO_FILE_MODULE_TUNING_DATA,
    PC_HLO_FILE_MODULE
} pc_hlo_file_kind;

const char *pc_hlo_file_kind_name(pc_hlo_file_kind k); /* "TuningData", ... */

typedef struct pc_hlo_tuning {
    pc_hlo_file_kind file_kind;
    pc_hlo_tuned *mods;
    int32_t n_mods;
} pc_hlo_tuning;

/* Largest file read (protobuf messages are limited to 2 GiB). */
#define PC_HLO_PROTO_MAX_BYTES ((size_t)INT32_MAX)

/* Parses `len` bytes; `what` names the source in errors (a path). */
pc_status pc_hlo_tuning_parse(const uint8_t *buf, size_t len, const char *what,
                              pc_hlo_tuning **out, pc_error *err);
/* Reads and parses a file. */
pc_status pc_hlo_tuning_read(const char *path, pc_hlo_tuning **out, pc_error *err);
/*
 * Within a memory budget (bytes, or PC_MEMORY_AUTO as perfcast/npz.h defines
 * it; the plain functions use PC_MEMORY_AUTO): a file whose size alone is
 * over it is refused before it is read; after the wire walk (which counts
 * what protobuf-c would allocate for the messages, `unpacked`) the parse
 * bound pc_hlo_proto_parse_bound(len, unpacked) is checked before anything
 * is unpacked: the file's bytes plus PC_HLO_PROTO_BYTES_PER_UNPACKED times
 * `unpacked` (the IR's structs are larger than protobuf-c's: an instruction
 * is 536 bytes against 200; with its lists, names, id index and the arena
 * of one computation, measured peaks above the file are 2.7-3.7 times
 * `unpacked`: 267 MiB for 300k instructions without shapes in 6 MB, whose
 * messages unpack to 70 MiB; bench/RESULTS.md, issue #18). Over it:
 * PC_ERR_NOMEM "PATH needs N in memory to read and parse it (...), more than
 * the memory budget of B (max_memory)".
 */
pc_status pc_hlo_tuning_parse_max(const uint8_t *buf, size_t len, const char *what,
                                  uint64_t max_memory, pc_hlo_tuning **out, pc_error *err);
pc_status pc_hlo_tuning_read_max(const char *path, uint64_t max_memory, pc_hlo_tuning **out,
                                 pc_error *err);
/* With progress (fn NULL: none): a file of PC_PROGRESS_MIN_BYTES or more (common/util.h)
   reports "bytes read" while it is read, then "bytes decoded" (at the start, after each
   module of a TuningData, at the end); the results are the same. */
pc_status pc_hlo_tuning_parse_progress(const uint8_t *buf, size_t len, const char *what,
                                       uint64_t max_memory, pc_progress_fn fn, void *user,
                                       pc_hlo_tuning **out, pc_error *err);
pc_status pc_hlo_tuning_read_progress(const char *path, uint64_t max_memory, pc_progress_fn fn,
                                      void *user, pc_hlo_tuning **out, pc_error *err);
#define PC_HLO_PROTO_BYTES_PER_UNPACKED 5
uint64_t pc_hlo_proto_parse_bound(size_t len, uint64_t unpacked);
void pc_hlo_tuning_free(pc_hlo_tuning *t); /* NULL ok */

#endif /* PC_HLO_PROTO_H */
