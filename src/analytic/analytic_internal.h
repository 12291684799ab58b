/* Internal helpers of the analytic module (depends on src/common only). */
#ifndef PC_ANALYTIC_INTERNAL_H
#define PC_ANALYTIC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "perfcast/analytic.h"

/* Strict number parsing: a finite double; suffixes k/M/G/T (decimal) when
 * allow_suffix. 0 on success. */
int pc_analytic_parse_num(const char *s, int allow_suffix, double *out);

/* The divisors of n >= 1, ascending, into out (room for PC_MAX_DIVISORS);
 * returns how many (slice.c). */
#define PC_MAX_DIVISORS 4096
int pc_divisors(int64_t n, int64_t *out);
/* 1 if v is a power of two (1, 2, 4, ...). */
static inline int pc_is_pow2(int64_t v) { return v >= 1 && !(v & (v - 1)); }

#endif
