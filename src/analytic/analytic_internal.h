/* Internal helpers of the analytic module (depends on src/common only). */
#ifndef PC_ANALYTIC_INTERNAL_H
#define PC_ANALYTIC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "perfcast/analytic.h"

/* ASCII case-insensitive string equality. */
int pc_ascii_ieq(const char *a, const char *b);

/* Reads a whole text file of at most max_bytes (NUL-terminated). */
pc_status pc_analytic_read_text(const char *path, size_t max_bytes, char **text, size_t *len,
                                pc_error *err);

/* Strict number parsing: a finite double; suffixes k/M/G/T (decimal) when
 * allow_suffix. 0 on success. */
int pc_analytic_parse_num(const char *s, int allow_suffix, double *out);

/* Greatest common divisor of two non-negative integers (plan_train.c). */
int64_t pc_gcd64(int64_t a, int64_t b);

#endif
