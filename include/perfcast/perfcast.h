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
 *  - Handles are opaque; each `*_open/_new/_load` has a matching `*_close/_free`
 *    that accepts NULL.
 *  - No global mutable state: everything lives in handles the caller owns.
 *  - Every function is declared PC_API (perfcast/export.h): a shared
 *    libperfcast exports exactly these and none of its internals.
 */
#ifndef PERFCAST_PERFCAST_H
#define PERFCAST_PERFCAST_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PC_VERSION_MAJOR 0
#define PC_VERSION_MINOR 1
#define PC_VERSION_PATCH 0
#define PC_VERSION_STRING "0.1.0"

PC_API const char *pc_version(void);

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

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_PERFCAST_H */
