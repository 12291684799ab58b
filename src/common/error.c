/* Status names, error records and the problem report. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

const char *pc_version(void) { return PC_VERSION_STRING; }

unsigned pc_version_number(void) { return PC_VERSION_NUMBER; }

const char *pc_status_name(pc_status s) {
    static const char *const names[PC_STATUS_COUNT] = {
        "ok", "bad argument", "i/o error", "format error", "unsupported",
        "out of range", "out of memory", "invalid data", "not found", "busy",
    };
    return (unsigned)s < PC_STATUS_COUNT ? names[s] : "unknown status";
}

void pc_error_clear(pc_error *err) {
    if (!err) return;
    err->code = PC_OK;
    err->msg[0] = '\0';
}

pc_status pc_fail(pc_error *err, pc_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

pc_status pc_check_struct_size(pc_error *err, const char *type, size_t got, size_t want,
                               int result) {
    if (got == want) return PC_OK;
    return pc_fail(err, PC_ERR_ARG, "%s.struct_size is %zu, this library's is %zu: built against "
                   "a different perfcast, or %s", type, got, want,
                   result ? "struct_size not set to sizeof the struct before the call"
                          : "the struct was not obtained from its _default()");
}

void pc_error_prefix(pc_error *err, const char *fmt, ...) {
    if (!err) return;
    char prefix[PC_ERROR_MSG_MAX];
    char old[PC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t n = strlen(prefix);
    /* a prefix written with its own ": " gets one separator, not ": : " */
    while (n > 0 && (prefix[n - 1] == ' ' || prefix[n - 1] == ':')) n--;
    if (n + 2 >= sizeof err->msg) n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t rest = sizeof err->msg - n - 3;
    size_t olen = strnlen(old, rest);
    memcpy(err->msg + n + 2, old, olen);
    err->msg[n + 2 + olen] = '\0';
}

struct pc_report {
    char **lines;
    size_t n, cap;
};

pc_report *pc_report_new(void) { return calloc(1, sizeof(pc_report)); }

void pc_report_clear(pc_report *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) free(r->lines[i]);
    r->n = 0;
}

void pc_report_free(pc_report *r) {
    if (!r) return;
    pc_report_clear(r);
    free(r->lines);
    free(r);
}

pc_status pc_report_add(pc_report *r, const char *fmt, ...) {
    if (!r) return PC_ERR_ARG;
    if (r->n == r->cap) {
        char **lines = pc_grow_array(r->lines, &r->cap, r->n + 1, sizeof *lines);
        if (!lines) return PC_ERR_NOMEM;
        r->lines = lines;
    }
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0) return PC_ERR_ARG;
    char *s = malloc((size_t)len + 1);
    if (!s) return PC_ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    r->lines[r->n++] = s;
    return PC_OK;
}

size_t pc_report_count(const pc_report *r) { return r ? r->n : 0; }

const char *pc_report_get(const pc_report *r, size_t i) {
    return (r && i < r->n) ? r->lines[i] : NULL;
}
