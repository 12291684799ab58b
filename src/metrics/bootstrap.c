/*
 * Bootstrap percentile intervals of a mean and the spread of a few values
 * (perfcast/metrics.h): how sure `perfcast eval` is over graphs, and over
 * seeds with several checkpoints.
 */
#include <math.h>
#include <stdlib.h>

#include "common/util.h"
#include "perfcast/metrics.h"

/* The next index in [0, n) of the stream (n >= 1): splitmix64 words, rejection below
   (2^64 - n) mod n so that r mod n is unbiased. */
static size_t draw_index(uint64_t *state, uint64_t n) {
    uint64_t skip = (0 - n) % n, r;
    do r = pc_splitmix64(state);
    while (r < skip);
    return (size_t)(r % n);
}

static pc_status check_finite(const double *v, size_t n, pc_error *err) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return pc_fail(err, PC_ERR_ARG,
                           "bootstrap: values[%zu] is %g, expected a finite "
                           "value",
                           i, v[i]);
    return PC_OK;
}

pc_status pc_bootstrap_indices(size_t n, size_t resamples, uint64_t seed, size_t *idx,
                               pc_error *err) {
    uint64_t total;
    if (n < 1 || resamples < 1)
        return pc_fail(err, PC_ERR_ARG, "bootstrap: n (%zu) and resamples (%zu) must be >= 1", n,
                       resamples);
    if (!pc_mul_u64(n, resamples, &total) || total > SIZE_MAX / sizeof *idx)
        return pc_fail(err, PC_ERR_ARG, "bootstrap: resamples * n overflows");
    if (!idx) return pc_fail(err, PC_ERR_ARG, "bootstrap: idx is NULL");
    uint64_t state = seed;
    for (uint64_t k = 0; k < total; k++) idx[k] = draw_index(&state, n);
    return PC_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

pc_status pc_percentile(double *x, size_t n, double q, double *out, pc_error *err) {
    if (n < 1 || !x) return pc_fail(err, PC_ERR_ARG, "percentile: needs n >= 1 values");
    if (!(q >= 0 && q <= 1))
        return pc_fail(err, PC_ERR_ARG,
                       "percentile: q = %g, expected "
                       "0 <= q <= 1",
                       q);
    pc_status st = check_finite(x, n, err);
    if (st) return st;
    qsort(x, n, sizeof *x, cmp_double);
    double h = (double)(n - 1) * q, f = floor(h);
    size_t i = (size_t)f;
    *out = i + 1 < n ? x[i] + (h - f) * (x[i + 1] - x[i]) : x[n - 1];
    return PC_OK;
}

/* The shared checks of the bootstrap intervals. */
static pc_status check_args(const double *values, size_t n, size_t resamples, double level,
                            pc_error *err) {
    if (resamples < 1) return pc_fail(err, PC_ERR_ARG, "bootstrap: resamples must be >= 1");
    if (!(level > 0 && level < 1))
        return pc_fail(err, PC_ERR_ARG, "bootstrap: level = %g, expected 0 < level < 1", level);
    if (n > 0 && !values) return pc_fail(err, PC_ERR_ARG, "bootstrap: values is NULL");
    return check_finite(values, n, err);
}

/*
 * The interval of a rows x cols table's mean over resamples (cols == 1: the
 * one-way bootstrap of a vector). ci[0..1] = NaN when the table is empty.
 */
static pc_status mean2_ci(const double *values, size_t rows, size_t cols, size_t resamples,
                          uint64_t seed, double level, double ci[2], pc_error *err) {
    ci[0] = ci[1] = NAN;
    if (rows == 0 || cols == 0) return PC_OK;
    double *means = resamples <= SIZE_MAX / sizeof *means ? malloc(resamples * sizeof *means) : NULL;
    size_t *ri = malloc(rows * sizeof *ri), *cj = malloc(cols * sizeof *cj);
    pc_status st = PC_OK;
    if (!means || !ri || !cj) {
        st = pc_fail(err, PC_ERR_NOMEM, "bootstrap: out of memory for %zu resamples", resamples);
        goto done;
    }
    uint64_t state = seed;
    for (size_t r = 0; r < resamples; r++) {
        for (size_t k = 0; k < rows; k++) ri[k] = draw_index(&state, rows);
        for (size_t k = 0; k < cols; k++) cj[k] = cols > 1 ? draw_index(&state, cols) : 0;
        double s = 0;
        for (size_t k = 0; k < rows; k++)
            for (size_t l = 0; l < cols; l++) s += values[ri[k] * cols + cj[l]];
        means[r] = s / ((double)rows * (double)cols);
    }
    st = pc_percentile(means, resamples, (1 - level) / 2, &ci[0], err);
    /* sorted now: the upper percentile reads the same order statistics */
    if (!st) st = pc_percentile(means, resamples, (1 + level) / 2, &ci[1], err);
done:
    free(means);
    free(ri);
    free(cj);
    return st;
}

pc_status pc_bootstrap_mean_ci(const double *values, size_t n, size_t resamples, uint64_t seed,
                               double level, double *lo, double *hi, pc_error *err) {
    return pc_bootstrap_mean2_ci(values, n, 1, resamples, seed, level, lo, hi, err);
}

pc_status pc_bootstrap_mean2_ci(const double *values, size_t rows, size_t cols, size_t resamples,
                                uint64_t seed, double level, double *lo, double *hi,
                                pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    uint64_t n;
    if (!pc_mul_u64(rows, cols, &n) || n > SIZE_MAX / sizeof(double))
        return pc_fail(err, PC_ERR_ARG, "bootstrap: rows * cols overflows");
    double ci[2];
    pc_status st = check_args(values, (size_t)n, resamples, level, err);
    if (!st) st = mean2_ci(values, rows, cols, resamples, seed, level, ci, err);
    if (st) return st;
    if (lo) *lo = ci[0];
    if (hi) *hi = ci[1];
    return PC_OK;
}

pc_status pc_spread_compute(const double *values, size_t n, pc_spread *out, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!out) return pc_fail(err, PC_ERR_ARG, "spread: out is NULL");
    if (n > 0 && !values) return pc_fail(err, PC_ERR_ARG, "spread: values is NULL");
    pc_spread s = {NAN, NAN, NAN, NAN, 0, 0};
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        double v = values[i];
        if (isnan(v)) {
            s.nan_count++;
            continue;
        }
        if (isinf(v))
            return pc_fail(err, PC_ERR_ARG,
                           "spread: values[%zu] is %g, expected a finite value "
                           "or NaN",
                           i, v);
        if (!s.count || v < s.min) s.min = v;
        if (!s.count || v > s.max) s.max = v;
        sum += v;
        s.count++;
    }
    if (s.count) s.mean = sum / (double)s.count;
    if (s.count > 1) {
        double ss = 0;
        for (size_t i = 0; i < n; i++)
            if (!isnan(values[i])) ss += (values[i] - s.mean) * (values[i] - s.mean);
        s.std = sqrt(ss / (double)(s.count - 1));
    }
    *out = s;
    return PC_OK;
}
