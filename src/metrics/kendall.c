/*
 * Pair statistics, Kendall tau-b and ordered-pair accuracy in O(n log n)
 * (Knight 1966): sort the pairs by (x, y), count ties in x and joint ties
 * from runs, count discordant pairs as the strict inversions of the y
 * sequence with a merge sort, then count ties in y from the sorted y.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "perfcast/metrics.h"

typedef struct xy_pair {
    double x, y;
} xy_pair;

static pc_status check_input(const char *fn, const char *name, const double *v, size_t n,
                             pc_error *err) {
    if (n > 0 && !v) return pc_fail(err, PC_ERR_ARG, "%s: %s is NULL with n = %zu", fn, name, n);
    for (size_t i = 0; i < n; i++)
        if (isnan(v[i])) return pc_fail(err, PC_ERR_ARG, "%s: %s[%zu] is NaN", fn, name, i);
    return PC_OK;
}

static int cmp_xy(const void *pa, const void *pb) {
    const xy_pair *a = pa, *b = pb;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    if (a->y != b->y) return a->y < b->y ? -1 : 1;
    return 0;
}

static uint64_t pairs_of(uint64_t run) { return run * (run - 1) / 2; }

/* Ties in x and joint ties, from pairs sorted by (x, y). */
static void count_x_ties(const xy_pair *p, size_t n, uint64_t *tx, uint64_t *txy) {
    uint64_t runx = 1, runxy = 1;
    *tx = *txy = 0;
    for (size_t i = 1; i <= n; i++) {
        int same_x = i < n && p[i].x == p[i - 1].x;
        int same_xy = same_x && p[i].y == p[i - 1].y;
        if (!same_xy) *txy += pairs_of(runxy), runxy = 0;
        if (!same_x) *tx += pairs_of(runx), runx = 0;
        runx++, runxy++;
    }
}

/* Ties in a sorted sequence. */
static uint64_t count_sorted_ties(const double *v, size_t n) {
    uint64_t ties = 0, run = 1;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && v[i] == v[i - 1]) {
            run++;
        } else {
            ties += pairs_of(run);
            run = 1;
        }
    }
    return ties;
}

/* Merges sorted a[0..na) and b[0..nb) into out; returns strict inversions. */
static uint64_t merge_count(const double *a, size_t na, const double *b, size_t nb, double *out) {
    uint64_t inv = 0;
    size_t i = 0, j = 0, k = 0;
    while (i < na && j < nb) {
        if (b[j] < a[i]) {
            inv += na - i;
            out[k++] = b[j++];
        } else {
            out[k++] = a[i++];
        }
    }
    while (i < na) out[k++] = a[i++];
    while (j < nb) out[k++] = b[j++];
    return inv;
}

/* Bottom-up merge sort of v (tmp has room for n); returns strict inversions. */
static uint64_t sort_count_inversions(double *v, double *tmp, size_t n) {
    uint64_t inv = 0;
    double *src = v, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = mid + width < n ? mid + width : n;
            inv += merge_count(src + lo, mid - lo, src + mid, hi - mid, dst + lo);
        }
        double *t = src;
        src = dst, dst = t;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
    return inv;
}

static pc_status counts_sorted(const char *fn, const double *x, const double *y, size_t n,
                               pc_pair_counts *out, pc_error *err) {
    xy_pair *p = pc_malloc_array(n, sizeof *p);
    double *ys = pc_malloc_array(n, sizeof *ys);
    double *tmp = pc_malloc_array(n, sizeof *tmp);
    if (!p || !ys || !tmp) {
        free(p), free(ys), free(tmp);
        return pc_fail(err, PC_ERR_NOMEM, "%s: no memory for %zu values", fn, n);
    }
    for (size_t i = 0; i < n; i++) p[i].x = x[i], p[i].y = y[i];
    qsort(p, n, sizeof *p, cmp_xy);
    count_x_ties(p, n, &out->ties_x, &out->ties_xy);
    for (size_t i = 0; i < n; i++) ys[i] = p[i].y;
    free(p);
    out->discordant = sort_count_inversions(ys, tmp, n);
    out->ties_y = count_sorted_ties(ys, n);
    free(ys), free(tmp);
    out->concordant = out->pairs - out->ties_x - out->ties_y + out->ties_xy - out->discordant;
    return PC_OK;
}

/* Validates and counts; messages start with fn and use the array names. */
static pc_status compute_counts(const char *fn, const char *xname, const char *yname,
                                const double *x, const double *y, size_t n,
                                pc_pair_counts *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    pc_status st = check_input(fn, xname, x, n, err);
    if (!st) st = check_input(fn, yname, y, n, err);
    if (st) return st;
    if ((uint64_t)n > UINT64_C(4000000000))
        return pc_fail(err, PC_ERR_RANGE, "%s: n = %zu is too large", fn, n);
    if (n < 2) return PC_OK;
    out->pairs = pairs_of(n);
    return counts_sorted(fn, x, y, n, out, err);
}

pc_status pc_pair_counts_compute(const double *x, const double *y, size_t n,
                                 pc_pair_counts *out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pair counts: out is NULL");
    return compute_counts("pair counts", "x", "y", x, y, n, out, err);
}

double pc_kendall_tau_b_from_counts(const pc_pair_counts *c) {
    if (!c || c->ties_x == c->pairs || c->ties_y == c->pairs) return NAN;
    uint64_t dx = c->pairs - c->ties_x, dy = c->pairs - c->ties_y;
    /* Exact agreement (every untied pair concordant, or every one discordant). */
    if (dx == dy && c->concordant == dx) return 1.0;
    if (dx == dy && c->discordant == dx) return -1.0;
    /* The same operations as scipy.stats.kendalltau, so results match it. */
    double num = (double)c->concordant - (double)c->discordant;
    double tau = num / sqrt((double)dx) / sqrt((double)dy);
    return tau > 1.0 ? 1.0 : tau < -1.0 ? -1.0 : tau;
}

pc_status pc_kendall_tau_b(const double *x, const double *y, size_t n, double *tau,
                           pc_error *err) {
    if (!tau) return pc_fail(err, PC_ERR_ARG, "kendall tau-b: tau is NULL");
    *tau = NAN;
    pc_pair_counts c;
    pc_status st = compute_counts("kendall tau-b", "x", "y", x, y, n, &c, err);
    if (st) return st;
    *tau = pc_kendall_tau_b_from_counts(&c);
    return PC_OK;
}

double pc_ordered_pair_accuracy_from_counts(const pc_pair_counts *c) {
    if (!c || c->ties_y == c->pairs) return NAN;
    return (double)c->concordant / (double)(c->pairs - c->ties_y);
}

pc_status pc_ordered_pair_accuracy(const double *pred, const double *runtime, size_t n,
                                   double *opa, pc_error *err) {
    if (!opa) return pc_fail(err, PC_ERR_ARG, "ordered-pair accuracy: opa is NULL");
    *opa = NAN;
    pc_pair_counts c;
    pc_status st = compute_counts("ordered-pair accuracy", "pred", "runtime", pred, runtime, n,
                                  &c, err);
    if (st) return st;
    *opa = pc_ordered_pair_accuracy_from_counts(&c);
    return PC_OK;
}
