/*
 * perfcast — learned and analytical performance models for ML programs.
 *
 * This is the umbrella header: version, status codes, the error record every
 * fallible call fills, and the problem report used by validators.
 *
 * Conventions for the whole public API (prefix pc_):
 *  - Fallible calls return pc_status (PC_OK == 0) and take a trailing
 *    `pc_error *err` that may be NULL; on failure err->msg names the file, the
 *    field and what was expected.
 *  - Handles are opaque, with one verb pair per kind, and every release accepts
 *    NULL:
 *      - a handle that reads from (or writes to) a file or process group for as
 *        long as it lives is opened and closed: pc_npz_open/_close,
 *        pc_npz_rows_open/_close, pc_st_open/_close, pc_dataset_open/_close,
 *        pc_dist_open/_close, pc_output_open/_close;
 *      - an object in memory is made by _new or by a constructor named for
 *        its source (_load from a file, _parse from text, _from_*, ...) and
 *        released with _free: pc_report, pc_graph, pc_predictor,
 *        pc_prepared_graph, pc_st_writer, pc_chipdb, pc_calib, pc_runs,
 *        pc_rank_sets, pc_hlo_cost, pc_op arrays;
 *      - a one-shot file writer is opened and ended by _commit (keep) or _abort
 *        (drop): pc_npz_writer.
 *  - No global mutable state: everything lives in handles the caller owns.
 *  - Options and defaults: an option struct (pc_*_opts) is obtained from its
 *    pc_*_opts_default() only and then changed field by field; each field's
 *    default is documented beside it. Where the default depends on what is
 *    known only later (the collection being trained, the machine), the field
 *    holds an explicit "auto" value (an enum's _AUTO, PC_TRAIN_AUTO,
 *    PC_ENCODE_AUTO). Choices are enums with a _COUNT and pc_<enum>_name /
 *    pc_<enum>_parse, never strings.
 *
 * Structs across versions (the ABI rule):
 *  - Option structs (filled by the caller, read by the library) start with
 *    `size_t struct_size`, set by their _default(). Every function that reads
 *    one checks it and fails with PC_ERR_ARG ("pc_train_opts.struct_size is
 *    ..., this library's is ...: built against a different perfcast") instead
 *    of reading past the caller's struct.
 *  - Result structs the caller provides for the library to fill
 *    (pc_train_result, pc_eval_result, pc_import_report, pc_prune_summary)
 *    start with `size_t struct_size` too: the caller sets it to sizeof the
 *    struct before the call, the library checks it the same way. A struct the
 *    library hands to a callback (pc_train_progress) carries the library's
 *    struct_size for the callback to compare.
 *  - Plain value structs (pc_error, pc_array, pc_array_info, pc_pair_counts,
 *    pc_metric_mean, pc_scoreboard, pc_spread) are frozen: their fields do not change
 *    within a major version.
 *  - The analytic and calibration models and the HLO cost report
 *    (perfcast/analytic.h, calib.h, hlo_cost.h) pass large value structs by
 *    value, nested and in arrays (chips, transformer configs, runs, plans),
 *    that grow as the models do, which a size field cannot version. As zstd's
 *    ZSTD_STATIC_LINKING_ONLY, those headers declare nothing unless
 *    PC_STATIC_LINKING_ONLY is defined before they are included: defining it
 *    is a promise to run against the very version whose headers were used (a
 *    static libperfcast guarantees it; with a shared one, compare
 *    pc_version_number() with PC_VERSION_NUMBER at start).
 *  - Every function is declared PC_API (perfcast/export.h): a shared
 *    libperfcast exports exactly these and none of its internals.
 */
#ifndef PERFCAST_PERFCAST_H
#define PERFCAST_PERFCAST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perfcast/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PC_VERSION_MAJOR 0
#define PC_VERSION_MINOR 1
#define PC_VERSION_PATCH 0
#define PC_VERSION_STRING "0.1.0"
/* major * 10000 + minor * 100 + patch */
#define PC_VERSION_NUMBER (PC_VERSION_MAJOR * 10000 + PC_VERSION_MINOR * 100 + PC_VERSION_PATCH)

/* The library's PC_VERSION_STRING and PC_VERSION_NUMBER (which may differ
   from the headers' a program was built with, with a shared library). */
PC_API const char *pc_version(void);
PC_API unsigned pc_version_number(void);

typedef enum pc_status {
    PC_OK = 0,
    PC_ERR_ARG,         /* bad argument or flag from the caller */
    PC_ERR_IO,          /* open/read/write/rename failed */
    PC_ERR_FORMAT,      /* file is not what it claims (magic, header, zip) */
    PC_ERR_UNSUPPORTED, /* valid but not handled (e.g. object dtype) */
    PC_ERR_RANGE,       /* index/row/size out of range, overflow */
    PC_ERR_NOMEM,       /* allocation failed */
    PC_ERR_INVALID,     /* data loaded but failed validation */
    PC_ERR_NOTFOUND,    /* missing key / file / collection */
    PC_ERR_BUSY,        /* another process holds the output's lock */
    PC_STATUS_COUNT
} pc_status;

PC_API const char *pc_status_name(pc_status s);

#define PC_ERROR_MSG_MAX 1024

typedef struct pc_error {
    pc_status code;
    char msg[PC_ERROR_MSG_MAX];
} pc_error;

/* Clears an error record (code PC_OK, empty message). NULL is a no-op. */
PC_API void pc_error_clear(pc_error *err);

/*
 * A growing list of human-readable problems, used by validators that report
 * every problem they find rather than stopping at the first.
 */
typedef struct pc_report pc_report;

PC_API pc_report *pc_report_new(void);
PC_API void pc_report_free(pc_report *r);
/* printf-style; returns PC_ERR_NOMEM only if the message could not be kept. */
PC_API pc_status pc_report_add(pc_report *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
PC_API size_t pc_report_count(const pc_report *r);
PC_API const char *pc_report_get(const pc_report *r, size_t i);
PC_API void pc_report_clear(pc_report *r);

/*
 * Progress of a long call (pc_synth_opts.progress, pc_cache_opts.progress,
 * pc_import_opts.progress, pc_train_opts.load_progress,
 * pc_predictor_set_progress): `done` of `total` units of `what` ("graphs
 * written", "files cached"; a static string), total 0 when not known. Called
 * after each unit, from the calling thread or a worker thread, never two
 * calls at once; it should return quickly and must not call back into the
 * library. A NULL function is no progress.
 */
typedef void (*pc_progress_fn)(void *user, const char *what, int64_t done, int64_t total);

/*
 * An output file written the way perfcast writes its own: to a temporary
 * name beside `path` (".<base>.<pid>.tmpXXXXXX", created exclusively with an
 * unpredictable suffix, never through a symlink; temporaries of `path` left
 * by killed processes are removed first) and renamed into place by
 * pc_output_close(o, 1, ...), so `path` is never half-written. Write with
 * pc_output_file(o). commit = 0 discards the output. durable = 1 also
 * fsyncs the file before the rename and its folder after. A write error
 * anywhere (full disk) makes the commit fail and leaves `path` as it was.
 * pc_output_close frees o whatever happens (NULL is a no-op).
 */
typedef struct pc_output pc_output;
PC_API pc_status pc_output_open(const char *path, pc_output **out, pc_error *err);
PC_API FILE *pc_output_file(pc_output *o);
PC_API pc_status pc_output_close(pc_output *o, int commit, int durable, pc_error *err);
/* 1 when a and b name one existing file (same device and inode): an output over an input. */
PC_API int pc_same_file(const char *a, const char *b);

/*
 * Units: the one size / count vocabulary of every perfcast input (CLI flags,
 * op specs, bindings; docs/units.md). A plain decimal number ("4096", "1.5",
 * "4e9") and an optional case-insensitive unit: decimal k M G T P (1e3 ..
 * 1e15), binary Ki Mi Gi Ti Pi (2^10 .. 2^50). "8k" is 8000, "8Ki" 8192.
 * pc_parse_bytes also takes a trailing B ("512MB", "1GiB"; "B" alone: bytes);
 * pc_parse_count takes B alone as a billion ("300B" tokens = 3e11). Fails
 * (PC_ERR_ARG) on junk, signs, hex, inf/nan; PC_ERR_RANGE when not finite.
 */
PC_API pc_status pc_parse_bytes(const char *s, double *out, pc_error *err);
PC_API pc_status pc_parse_count(const char *s, double *out, pc_error *err);

/*
 * "Did you mean": the name of names[0..n) closest to word by edit distance
 * (an adjacent transposition counts one edit), if within a third of word's
 * length (at least 1, at most 3 edits); NULL otherwise. NULL entries skipped.
 */
PC_API const char *pc_closest_name(const char *word, const char *const *names, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_PERFCAST_H */
