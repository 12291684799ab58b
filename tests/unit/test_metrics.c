/*
 * Unit tests for the ranking metrics (include/perfcast/metrics.h,
 * src/metrics/): pair counts, Kendall tau-b and OPA against naive O(n^2)
 * versions on random data with many ties (exact counts), known values,
 * top-K selection, slowdown and tile score against a naive full sort,
 * edge cases (n = 0, 1, 2, all ties, NaN, NULL), the scoreboard, a
 * scaling sanity run at n = 1e6 (no timing asserts), and the bootstrap
 * interval: a direct computation from its own draws, determinism, coverage
 * of the true mean on synthetic normal data (about 95%), degenerate cases.
 * (The draws and intervals against numpy / scipy: test_metrics_scipy.py.)
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perfcast/dataset.h"
#include "perfcast/metrics.h"

/* ---- helpers ------------------------------------------------------------ */

static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Values from {0, .., levels-1} (many ties when levels is small), scaled. */
static void fill_levels(double *v, size_t n, uint64_t levels, double scale, uint64_t *s) {
    for (size_t i = 0; i < n; i++) v[i] = (double)(next_u64(s) % levels) * scale;
}

static double *alloc_doubles(size_t n) {
    double *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    return v;
}

static int sign_of(double d) { return (d > 0) - (d < 0); }

static pc_pair_counts naive_counts(const double *x, const double *y, size_t n) {
    pc_pair_counts c = {0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            int sx = sign_of(x[i] - x[j]), sy = sign_of(y[i] - y[j]);
            c.pairs++;
            if (sx == 0) c.ties_x++;
            if (sy == 0) c.ties_y++;
            if (sx == 0 && sy == 0) c.ties_xy++;
            if (sx * sy > 0) c.concordant++;
            if (sx * sy < 0) c.discordant++;
        }
    }
    return c;
}

static double naive_tau(const pc_pair_counts *c) {
    double a = (double)(c->pairs - c->ties_x), b = (double)(c->pairs - c->ties_y);
    if (a == 0 || b == 0) return NAN;
    return ((double)c->concordant - (double)c->discordant) / sqrt(a * b);
}

/* OPA straight from its definition (lower score = faster). */
static double naive_opa(const double *pred, const double *rt, size_t n) {
    uint64_t good = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            if (!(rt[i] < rt[j])) continue;
            total++;
            if (pred[i] < pred[j]) good++;
        }
    }
    return total ? (double)good / (double)total : NAN;
}

static void assert_counts_equal(const pc_pair_counts *a, const pc_pair_counts *b) {
    assert_int_equal(a->pairs, b->pairs);
    assert_int_equal(a->concordant, b->concordant);
    assert_int_equal(a->discordant, b->discordant);
    assert_int_equal(a->ties_x, b->ties_x);
    assert_int_equal(a->ties_y, b->ties_y);
    assert_int_equal(a->ties_xy, b->ties_xy);
}

static void assert_close_or_nan(double got, double want, double tol) {
    if (isnan(want)) {
        assert_true(isnan(got));
        return;
    }
    assert_false(isnan(got));
    assert_true(fabs(got - want) <= tol);
}

/* ---- pair counts, tau-b, OPA vs naive ------------------------------------ */

static void check_against_naive(const double *x, const double *y, size_t n) {
    pc_pair_counts got, want = naive_counts(x, y, n);
    pc_error e;
    assert_int_equal(pc_pair_counts_compute(x, y, n, &got, &e), PC_OK);
    assert_counts_equal(&got, &want);
    assert_int_equal(got.pairs,
                     got.concordant + got.discordant + got.ties_x + got.ties_y - got.ties_xy);
    double tau, opa;
    assert_int_equal(pc_kendall_tau_b(x, y, n, &tau, &e), PC_OK);
    assert_close_or_nan(tau, naive_tau(&want), 1e-12);
    assert_int_equal(pc_ordered_pair_accuracy(x, y, n, &opa, &e), PC_OK);
    assert_close_or_nan(opa, naive_opa(x, y, n), 1e-12);
}

static void test_counts_random_ties(void **state) {
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 3, 4, 7, 16, 100, 333, 1000, 2000};
    static const uint64_t levels[] = {1, 2, 3, 7, 50, 1000000};
    uint64_t s = 42;
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++) {
        size_t n = sizes[a];
        double *x = alloc_doubles(n), *y = alloc_doubles(n);
        for (size_t lx = 0; lx < 6; lx++) {
            for (size_t ly = 0; ly < 6; ly++) {
                if (n > 500 && (lx + ly) % 3) continue; /* keep the O(n^2) part short */
                fill_levels(x, n, levels[lx], 0.5, &s);
                fill_levels(y, n, levels[ly], 1000.0, &s);
                check_against_naive(x, y, n);
            }
        }
        free(x), free(y);
    }
}

/* y partly follows x, so tau is far from 0 and both signs occur. */
static void test_counts_correlated(void **state) {
    (void)state;
    uint64_t s = 7;
    size_t n = 1500;
    double *x = alloc_doubles(n), *y = alloc_doubles(n);
    for (int rep = 0; rep < 6; rep++) {
        double dir = rep % 2 ? -1.0 : 1.0;
        for (size_t i = 0; i < n; i++) {
            x[i] = (double)(next_u64(&s) % 200);
            y[i] = dir * x[i] + (double)(next_u64(&s) % (uint64_t)(10 * rep + 1));
        }
        check_against_naive(x, y, n);
    }
    free(x), free(y);
}

/* Signed zeros are ties; infinities order like any other value. */
static void test_counts_special_values(void **state) {
    (void)state;
    const double x[] = {0.0, -0.0, INFINITY, -INFINITY, 1.0, -0.0, INFINITY, 2.0};
    const double y[] = {3.0, 3.0, -0.0, 0.0, INFINITY, 1.0, 5.0, -INFINITY};
    check_against_naive(x, y, 8);
    pc_pair_counts c;
    assert_int_equal(pc_pair_counts_compute(x, y, 8, &c, NULL), PC_OK);
    assert_int_equal(c.ties_x, 3 + 1); /* {0,-0,-0} and {inf,inf} */
}

/* scipy.stats.kendalltau documentation example. */
static void test_tau_known_values(void **state) {
    (void)state;
    const double x1[] = {12, 2, 1, 12, 2}, x2[] = {1, 4, 7, 1, 0};
    double tau;
    assert_int_equal(pc_kendall_tau_b(x1, x2, 5, &tau, NULL), PC_OK);
    assert_true(fabs(tau - -0.47140452079103173) < 1e-15);
    const double a[] = {1, 2, 3, 4, 5}, b[] = {10, 20, 30, 40, 50}, r[] = {5, 4, 3, 2, 1};
    assert_int_equal(pc_kendall_tau_b(a, b, 5, &tau, NULL), PC_OK);
    assert_true(tau == 1.0);
    assert_int_equal(pc_kendall_tau_b(a, r, 5, &tau, NULL), PC_OK);
    assert_true(tau == -1.0);
    /* tau-b with ties: x has one tied pair, y none: (P - Q) = 9 - 0. */
    const double t[] = {1, 1, 2, 3, 4};
    assert_int_equal(pc_kendall_tau_b(t, a, 5, &tau, NULL), PC_OK);
    assert_true(fabs(tau - 9.0 / sqrt(9.0 * 10.0)) < 1e-15);
}

static void test_tau_edge_cases(void **state) {
    (void)state;
    double tau = 0;
    assert_int_equal(pc_kendall_tau_b(NULL, NULL, 0, &tau, NULL), PC_OK);
    assert_true(isnan(tau));
    const double one[] = {3.0}, two[] = {1.0, 2.0}, two_r[] = {2.0, 1.0}, tied[] = {4.0, 4.0};
    assert_int_equal(pc_kendall_tau_b(one, one, 1, &tau, NULL), PC_OK);
    assert_true(isnan(tau));
    assert_int_equal(pc_kendall_tau_b(two, two, 2, &tau, NULL), PC_OK);
    assert_true(tau == 1.0);
    assert_int_equal(pc_kendall_tau_b(two, two_r, 2, &tau, NULL), PC_OK);
    assert_true(tau == -1.0);
    assert_int_equal(pc_kendall_tau_b(tied, two, 2, &tau, NULL), PC_OK);
    assert_true(isnan(tau));
    assert_int_equal(pc_kendall_tau_b(two, tied, 2, &tau, NULL), PC_OK);
    assert_true(isnan(tau));
    double opa = 0;
    assert_int_equal(pc_ordered_pair_accuracy(two, tied, 2, &opa, NULL), PC_OK);
    assert_true(isnan(opa));
    assert_int_equal(pc_ordered_pair_accuracy(tied, two, 2, &opa, NULL), PC_OK);
    assert_true(opa == 0.0); /* tied scores on different runtimes are wrong */
    assert_int_equal(pc_ordered_pair_accuracy(two, two, 2, &opa, NULL), PC_OK);
    assert_true(opa == 1.0);
    assert_int_equal(pc_ordered_pair_accuracy(two_r, two, 2, &opa, NULL), PC_OK);
    assert_true(opa == 0.0);
}

static void test_tau_bad_input(void **state) {
    (void)state;
    const double ok[] = {1, 2, 3, 4}, bad[] = {1, 2, 3, NAN};
    double tau = 0;
    pc_error e;
    assert_int_equal(pc_kendall_tau_b(bad, ok, 4, &tau, &e), PC_ERR_ARG);
    assert_int_equal(e.code, PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "x[3] is NaN"));
    assert_true(isnan(tau));
    assert_int_equal(pc_kendall_tau_b(ok, bad, 4, &tau, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "y[3] is NaN"));
    double opa;
    assert_int_equal(pc_ordered_pair_accuracy(ok, bad, 4, &opa, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "runtime[3] is NaN"));
    assert_int_equal(pc_kendall_tau_b(NULL, ok, 4, &tau, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "NULL"));
    assert_int_equal(pc_kendall_tau_b(ok, ok, 4, NULL, &e), PC_ERR_ARG);
    assert_int_equal(pc_pair_counts_compute(ok, ok, 4, NULL, NULL), PC_ERR_ARG);
}

/* ---- top-K ------------------------------------------------------------- */

typedef struct scored {
    double pred;
    size_t idx;
} scored;

static int cmp_naive(const void *pa, const void *pb) {
    const scored *a = pa, *b = pb;
    if (a->pred != b->pred) return a->pred < b->pred ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Full sort by (score, index): the reference ranking. */
static size_t *naive_order(const double *pred, size_t n) {
    scored *t = malloc(n * sizeof *t);
    size_t *o = malloc(n * sizeof *o);
    assert_non_null(t);
    assert_non_null(o);
    for (size_t i = 0; i < n; i++) t[i].pred = pred[i], t[i].idx = i;
    qsort(t, n, sizeof *t, cmp_naive);
    for (size_t i = 0; i < n; i++) o[i] = t[i].idx;
    free(t);
    return o;
}

static double naive_slowdown(const size_t *order, const double *rt, const double *norm,
                             size_t n, size_t k, double *tile) {
    double best = INFINITY, best_k = INFINITY, best_5 = INFINITY;
    for (size_t i = 0; i < n; i++) {
        double yv = norm ? rt[order[i]] / norm[order[i]] : rt[order[i]];
        best = fmin(best, yv);
        if (i < k) best_k = fmin(best_k, yv);
        if (i < 5) best_5 = fmin(best_5, yv);
    }
    *tile = 2.0 - best_5 / best;
    return (best_k - best) / best;
}

static void check_topk_case(const double *pred, const double *rt, const double *norm,
                            size_t n) {
    static const size_t ks[] = {1, 2, 5, 10, 100};
    size_t *order = naive_order(pred, n);
    size_t *idx = malloc((n + 3) * sizeof *idx);
    assert_non_null(idx);
    for (size_t a = 0; a < 7; a++) {
        size_t k = a < 5 ? ks[a] : a == 5 ? n : n + 3, got = 0;
        assert_int_equal(pc_topk_indices(pred, n, k, idx, &got, NULL), PC_OK);
        assert_int_equal(got, k < n ? k : n);
        for (size_t i = 0; i < got; i++) assert_int_equal(idx[i], order[i]);
        double slow, tile, want_tile;
        double want = naive_slowdown(order, rt, norm, n, k, &want_tile);
        assert_int_equal(pc_topk_slowdown(pred, rt, norm, n, k, &slow, NULL), PC_OK);
        assert_true(slow == want);
        assert_int_equal(pc_tile_score(pred, rt, norm, n, &tile, NULL), PC_OK);
        assert_true(tile == want_tile);
    }
    free(order), free(idx);
}

static void test_topk_random_ties(void **state) {
    (void)state;
    static const size_t sizes[] = {1, 2, 5, 6, 11, 64, 1000, 2000};
    static const uint64_t levels[] = {1, 2, 5, 1000000};
    uint64_t s = 99;
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++) {
        size_t n = sizes[a];
        double *pred = alloc_doubles(n), *rt = alloc_doubles(n), *norm = alloc_doubles(n);
        for (size_t l = 0; l < 4; l++) {
            fill_levels(pred, n, levels[l], 0.25, &s);
            for (size_t i = 0; i < n; i++) {
                rt[i] = (double)(1000 + next_u64(&s) % 50);
                norm[i] = (double)(2000 + next_u64(&s) % 3);
            }
            check_topk_case(pred, rt, norm, n);
            check_topk_case(pred, rt, NULL, n);
        }
        free(pred), free(rt), free(norm);
    }
}

static void test_topk_known(void **state) {
    (void)state;
    /* Lower score = predicted faster; ties go to the lower index. */
    const double pred[] = {0.5, 0.1, 0.3, 0.1, 0.9, 0.0, 0.3};
    const double rt[] = {10, 40, 30, 20, 5, 50, 25};
    size_t idx[7], got;
    assert_int_equal(pc_topk_indices(pred, 7, 4, idx, &got, NULL), PC_OK);
    assert_int_equal(got, 4);
    assert_int_equal(idx[0], 5);
    assert_int_equal(idx[1], 1);
    assert_int_equal(idx[2], 3);
    assert_int_equal(idx[3], 2);
    double slow;
    assert_int_equal(pc_topk_slowdown(pred, rt, NULL, 7, 1, &slow, NULL), PC_OK);
    assert_true(slow == (50.0 - 5.0) / 5.0);
    assert_int_equal(pc_topk_slowdown(pred, rt, NULL, 7, 3, &slow, NULL), PC_OK);
    assert_true(slow == (20.0 - 5.0) / 5.0);
    assert_int_equal(pc_topk_slowdown(pred, rt, NULL, 7, 7, &slow, NULL), PC_OK);
    assert_true(slow == 0.0);
    double tile;
    /* top-5: indices 5, 1, 3, 2, 6 -> best 20; true best 5 -> 2 - 4 = -2. */
    assert_int_equal(pc_tile_score(pred, rt, NULL, 7, &tile, NULL), PC_OK);
    assert_true(tile == -2.0);
    /* normalized: y = rt / norm; best overall y is index 0 (10/20 = 0.5). */
    const double norm[] = {20, 40, 30, 20, 5, 100, 25};
    assert_int_equal(pc_tile_score(pred, rt, norm, 7, &tile, NULL), PC_OK);
    assert_true(tile == 2.0 - 0.5 / 0.5);
    assert_int_equal(pc_topk_slowdown(pred, rt, norm, 7, 1, &slow, NULL), PC_OK);
    assert_true(slow == 0.0);
}

static void test_topk_bad_input(void **state) {
    (void)state;
    const double pred[] = {1, 2, 3}, rt[] = {1, 2, 3}, zero[] = {1, 0, 3}, neg[] = {1, -2, 3};
    const double nan3[] = {1, NAN, 3}, inf3[] = {1, INFINITY, 3};
    size_t idx[3];
    double v = 0;
    pc_error e;
    assert_int_equal(pc_topk_indices(pred, 3, 0, idx, NULL, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "k must be"));
    assert_int_equal(pc_topk_indices(pred, 0, 1, idx, NULL, &e), PC_ERR_ARG);
    assert_int_equal(pc_topk_indices(nan3, 3, 1, idx, NULL, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "pred[1] is NaN"));
    assert_int_equal(pc_topk_slowdown(pred, rt, NULL, 3, 0, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_topk_slowdown(pred, rt, NULL, 0, 1, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_topk_slowdown(pred, zero, NULL, 3, 1, &v, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "runtime[1]"));
    assert_true(isnan(v));
    assert_int_equal(pc_topk_slowdown(pred, neg, NULL, 3, 1, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_topk_slowdown(pred, inf3, NULL, 3, 1, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_topk_slowdown(pred, rt, nan3, 3, 1, &v, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "normalizer[1]"));
    assert_int_equal(pc_tile_score(nan3, rt, rt, 3, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_tile_score(pred, NULL, rt, 3, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_tile_score(pred, rt, rt, 3, NULL, &e), PC_ERR_ARG);
    /* infinite predictions are fine */
    const double ipred[] = {INFINITY, -INFINITY, 0};
    assert_int_equal(pc_topk_slowdown(ipred, rt, NULL, 3, 1, &v, &e), PC_OK);
    assert_true(v == 1.0);
}

/* ---- aggregation -------------------------------------------------------- */

static void test_scoreboard(void **state) {
    (void)state;
    assert_int_equal(PC_SCORE_COLLECTIONS, PC_NUM_COLLECTIONS);
    assert_int_equal(pc_collection_kind(PC_SCORE_TILE_COLLECTION), PC_KIND_TILE);
    for (int c = 1; c < PC_SCORE_COLLECTIONS; c++)
        assert_int_equal(pc_collection_kind(c), PC_KIND_LAYOUT);

    pc_scoreboard b;
    pc_scoreboard_init(&b);
    assert_true(isnan(pc_scoreboard_collection(&b, 0)));
    assert_true(pc_scoreboard_overall(&b) == 0.0);

    const double pred[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    const double rt[] = {10, 20, 30, 40, 50, 60}, rev[] = {60, 50, 40, 30, 20, 10};
    const double norm[] = {1, 1, 1, 1, 1, 1};
    double v;
    pc_error e;
    assert_int_equal(pc_scoreboard_add_graph(&b, 0, pred, rt, norm, 6, &v, &e), PC_OK);
    assert_true(v == 1.0);
    assert_int_equal(pc_scoreboard_add_graph(&b, 0, pred, rev, NULL, 6, &v, &e), PC_OK);
    assert_true(v == 2.0 - 20.0 / 10.0);
    assert_true(pc_scoreboard_collection(&b, 0) == 0.5);
    assert_int_equal(pc_scoreboard_add_graph(&b, 1, pred, rt, NULL, 6, &v, &e), PC_OK);
    assert_true(v == 1.0);
    assert_int_equal(pc_scoreboard_add_graph(&b, 1, pred, rev, NULL, 6, &v, &e), PC_OK);
    assert_true(v == -1.0);
    assert_int_equal(pc_scoreboard_add_value(&b, 1, 0.5, &e), PC_OK);
    assert_true(fabs(pc_scoreboard_collection(&b, 1) - 0.5 / 3.0) < 1e-15);
    /* NaN (an all-tied layout graph) is counted apart, not averaged. */
    const double tied[] = {7, 7, 7, 7, 7, 7};
    assert_int_equal(pc_scoreboard_add_graph(&b, 2, pred, tied, NULL, 6, &v, &e), PC_OK);
    assert_true(isnan(v));
    assert_int_equal(b.coll[2].nan_count, 1);
    assert_true(isnan(pc_scoreboard_collection(&b, 2)));
    assert_int_equal(pc_scoreboard_add_value(&b, 3, 0.25, &e), PC_OK);
    assert_int_equal(pc_scoreboard_add_value(&b, 4, 0.75, &e), PC_OK);
    /* collection 2 has no averaged graph: it contributes 0. */
    double want = (0.5 + 0.5 / 3.0 + 0.0 + 0.25 + 0.75) / 5.0;
    assert_true(fabs(pc_scoreboard_overall(&b) - want) < 1e-15);
    assert_int_equal(pc_scoreboard_add_value(&b, 2, 0.4, &e), PC_OK);
    want = (0.5 + 0.5 / 3.0 + 0.4 + 0.25 + 0.75) / 5.0;
    assert_true(fabs(pc_scoreboard_overall(&b) - want) < 1e-15);

    /* errors leave the board unchanged */
    pc_scoreboard before = b;
    const double bad[] = {0.1, NAN, 0.3, 0.4, 0.5, 0.6};
    assert_int_equal(pc_scoreboard_add_graph(&b, 0, bad, rt, norm, 6, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_scoreboard_add_graph(&b, 3, bad, rt, NULL, 6, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_scoreboard_add_graph(&b, 5, pred, rt, NULL, 6, &v, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "collection 5"));
    assert_int_equal(pc_scoreboard_add_value(&b, -1, 0.0, &e), PC_ERR_ARG);
    assert_int_equal(pc_scoreboard_add_value(&b, 0, INFINITY, &e), PC_ERR_ARG);
    assert_memory_equal(&before, &b, sizeof b);
    assert_true(isnan(pc_scoreboard_collection(&b, 9)));
}

static void test_metric_mean(void **state) {
    (void)state;
    pc_metric_mean m;
    pc_metric_mean_init(&m);
    assert_true(isnan(pc_metric_mean_value(&m)));
    pc_metric_mean_add(&m, 1.0);
    pc_metric_mean_add(&m, NAN);
    pc_metric_mean_add(&m, 2.0);
    assert_true(pc_metric_mean_value(&m) == 1.5);
    assert_int_equal(m.count, 2);
    assert_int_equal(m.nan_count, 1);
}

/* ---- scaling sanity ---------------------------------------------------- */

static void test_scale_1e6(void **state) {
    (void)state;
    size_t n = 1000000;
    double *x = alloc_doubles(n), *y = alloc_doubles(n);
    uint64_t s = 5;
    for (size_t i = 0; i < n; i++) {
        x[i] = (double)(next_u64(&s) % 100000);
        y[i] = x[i] * 3.0 + (double)(next_u64(&s) % 1000);
    }
    pc_pair_counts c;
    assert_int_equal(pc_pair_counts_compute(x, y, n, &c, NULL), PC_OK);
    assert_int_equal(c.pairs, (uint64_t)n * (n - 1) / 2);
    assert_int_equal(c.pairs, c.concordant + c.discordant + c.ties_x + c.ties_y - c.ties_xy);
    double tau = pc_kendall_tau_b_from_counts(&c);
    assert_true(tau > 0.9 && tau <= 1.0);
    assert_int_equal(pc_kendall_tau_b(x, x, n, &tau, NULL), PC_OK);
    assert_true(tau == 1.0);
    double slow;
    assert_int_equal(pc_topk_slowdown(x, y, NULL, n, 10, &slow, NULL), PC_OK);
    assert_true(slow >= 0.0);
    free(x), free(y);
}

/* ---- bootstrap ---------------------------------------------------------- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A standard normal (Box-Muller) from the test's stream. */
static double normal(uint64_t *s) {
    double u = ((double)(next_u64(s) >> 11) + 0.5) / 9007199254740992.0;
    double v = ((double)(next_u64(s) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* The interval from pc_bootstrap_indices by hand: means, sorted, interpolated. */
static void test_bootstrap_direct(void **state) {
    (void)state;
    size_t n = 13, r = 301;
    double v[13], lo, hi;
    uint64_t s = 11;
    for (size_t i = 0; i < n; i++) v[i] = normal(&s);
    size_t *idx = malloc(n * r * sizeof *idx);
    double *m = alloc_doubles(r);
    assert_int_equal(pc_bootstrap_indices(n, r, 42, idx, NULL), PC_OK);
    for (size_t b = 0; b < r; b++) {
        double sum = 0;
        for (size_t k = 0; k < n; k++) {
            assert_true(idx[b * n + k] < n);
            sum += v[idx[b * n + k]];
        }
        m[b] = sum / (double)n;
    }
    qsort(m, r, sizeof *m, cmp_d);
    /* level 0.9: positions 0.05 * 300 = 15 and 0.95 * 300 = 285 (up to rounding of 0.05) */
    assert_int_equal(pc_bootstrap_mean_ci(v, n, r, 42, 0.9, &lo, &hi, NULL), PC_OK);
    assert_true(fabs(lo - m[15]) < 1e-14 && fabs(hi - m[285]) < 1e-14);
    /* level 0.95: 7.5 and 292.5, halfway */
    assert_int_equal(pc_bootstrap_mean_ci(v, n, r, 42, 0.95, &lo, &hi, NULL), PC_OK);
    assert_true(fabs(lo - (m[7] + m[8]) / 2) < 1e-15 && fabs(hi - (m[292] + m[293]) / 2) < 1e-15);
    /* same seed, same interval; another seed, another one */
    double lo2, hi2;
    assert_int_equal(pc_bootstrap_mean_ci(v, n, r, 42, 0.95, &lo2, &hi2, NULL), PC_OK);
    assert_true(lo2 == lo && hi2 == hi);
    assert_int_equal(pc_bootstrap_mean_ci(v, n, r, 43, 0.95, &lo2, &hi2, NULL), PC_OK);
    assert_true(lo2 != lo || hi2 != hi);
    free(idx), free(m);
}

/* About 95% of the intervals hold the true mean (0) of normal samples of 40. */
static void test_bootstrap_coverage(void **state) {
    (void)state;
    enum { TRIALS = 400, N = 40 };
    double v[N], lo, hi;
    uint64_t s = 2024;
    int hits = 0;
    for (int t = 0; t < TRIALS; t++) {
        for (int i = 0; i < N; i++) v[i] = 3 + 2 * normal(&s);
        assert_int_equal(pc_bootstrap_mean_ci(v, N, 1000, (uint64_t)t, 0.95, &lo, &hi, NULL),
                         PC_OK);
        assert_true(lo <= hi);
        hits += lo <= 3 && 3 <= hi;
    }
    /* the percentile bootstrap undercovers a little at n = 40 (about 0.94); binomial sd 0.011 */
    double cov = (double)hits / TRIALS;
    print_message("bootstrap coverage %.3f over %d trials\n", cov, TRIALS);
    assert_true(cov > 0.90 && cov < 0.985);
}

/* Two-way (graphs x members): one column is the one-way interval; spread between
   columns widens it; the table's mean lies inside; empty is NaN; bad values named. */
static void test_bootstrap_two_way(void **state) {
    (void)state;
    enum { R = 30, C = 4 };
    double a[R], t[R * C], flat[R * C], lo1, hi1, lo, hi, lo2, hi2;
    uint64_t s = 77;
    double mean = 0;
    for (int r = 0; r < R; r++) a[r] = normal(&s);
    assert_int_equal(pc_bootstrap_mean_ci(a, R, 500, 9, 0.95, &lo1, &hi1, NULL), PC_OK);
    assert_int_equal(pc_bootstrap_mean2_ci(a, R, 1, 500, 9, 0.95, &lo, &hi, NULL), PC_OK);
    assert_true(lo == lo1 && hi == hi1);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            flat[r * C + c] = a[r];
            t[r * C + c] = a[r] + 2.0 * (c - 1.5); /* members far apart */
            mean += t[r * C + c] / (R * C);
        }
    assert_int_equal(pc_bootstrap_mean2_ci(flat, R, C, 500, 9, 0.95, &lo, &hi, NULL), PC_OK);
    assert_int_equal(pc_bootstrap_mean2_ci(t, R, C, 500, 9, 0.95, &lo2, &hi2, NULL), PC_OK);
    assert_true(lo2 <= mean && mean <= hi2);
    assert_true(hi2 - lo2 > 2 * (hi - lo));
    assert_int_equal(pc_bootstrap_mean2_ci(NULL, 0, C, 10, 1, 0.95, &lo, &hi, NULL), PC_OK);
    assert_true(isnan(lo) && isnan(hi));
    pc_error e;
    t[5] = NAN;
    assert_int_equal(pc_bootstrap_mean2_ci(t, R, C, 10, 1, 0.95, &lo, &hi, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "values[5]"));
    assert_int_equal(pc_bootstrap_mean2_ci(t, SIZE_MAX / 2, 4, 10, 1, 0.95, &lo, &hi, &e),
                     PC_ERR_ARG);
}

static void test_bootstrap_edges(void **state) {
    (void)state;
    double lo = 0, hi = 0, one = 0.75, two[2] = {1, 2}, bad[2] = {1, NAN};
    pc_error e;
    assert_int_equal(pc_bootstrap_mean_ci(NULL, 0, 10, 1, 0.95, &lo, &hi, &e), PC_OK);
    assert_true(isnan(lo) && isnan(hi));
    assert_int_equal(pc_bootstrap_mean_ci(&one, 1, 10, 1, 0.95, &lo, &hi, &e), PC_OK);
    assert_true(lo == 0.75 && hi == 0.75);
    assert_int_equal(pc_bootstrap_mean_ci(two, 2, 500, 1, 0.95, &lo, &hi, &e), PC_OK);
    assert_true(lo >= 1 && hi <= 2 && lo < hi);
    assert_int_equal(pc_bootstrap_mean_ci(two, 2, 500, 1, 0.95, NULL, NULL, &e), PC_OK);
    assert_int_equal(pc_bootstrap_mean_ci(bad, 2, 10, 1, 0.95, &lo, &hi, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "values[1]"));
    assert_int_equal(pc_bootstrap_mean_ci(two, 2, 0, 1, 0.95, &lo, &hi, &e), PC_ERR_ARG);
    assert_int_equal(pc_bootstrap_mean_ci(two, 2, 10, 1, 1.0, &lo, &hi, &e), PC_ERR_ARG);
    assert_int_equal(pc_bootstrap_mean_ci(two, 2, 10, 1, NAN, &lo, &hi, &e), PC_ERR_ARG);
    size_t idx[4];
    assert_int_equal(pc_bootstrap_indices(0, 2, 1, idx, &e), PC_ERR_ARG);
    assert_int_equal(pc_bootstrap_indices(2, 0, 1, idx, &e), PC_ERR_ARG);
    assert_int_equal(pc_bootstrap_indices(SIZE_MAX / 2, 4, 1, idx, &e), PC_ERR_ARG);
    double q;
    assert_int_equal(pc_percentile(two, 2, 1.5, &q, &e), PC_ERR_ARG);
    assert_int_equal(pc_percentile(two, 0, 0.5, &q, &e), PC_ERR_ARG);
}

static void test_spread(void **state) {
    (void)state;
    double v[5] = {1, 2, NAN, 4, 8};
    pc_spread s;
    assert_int_equal(pc_spread_compute(v, 5, &s, NULL), PC_OK);
    assert_true(s.count == 4 && s.nan_count == 1 && s.min == 1 && s.max == 8);
    assert_true(fabs(s.mean - 3.75) < 1e-15);
    /* sum of squares 7.5625 + 3.0625 + 0.0625 + 18.0625 = 28.75, over 3 */
    assert_true(fabs(s.std - sqrt(28.75 / 3)) < 1e-15);
    assert_int_equal(pc_spread_compute(v, 1, &s, NULL), PC_OK);
    assert_true(s.mean == 1 && isnan(s.std) && s.count == 1);
    assert_int_equal(pc_spread_compute(NULL, 0, &s, NULL), PC_OK);
    assert_true(isnan(s.mean) && isnan(s.min) && s.count == 0);
    v[0] = INFINITY;
    assert_int_equal(pc_spread_compute(v, 5, &s, NULL), PC_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_random_ties),    cmocka_unit_test(test_counts_correlated),
        cmocka_unit_test(test_counts_special_values), cmocka_unit_test(test_tau_known_values),
        cmocka_unit_test(test_tau_edge_cases),        cmocka_unit_test(test_tau_bad_input),
        cmocka_unit_test(test_topk_random_ties),      cmocka_unit_test(test_topk_known),
        cmocka_unit_test(test_topk_bad_input),        cmocka_unit_test(test_scoreboard),
        cmocka_unit_test(test_metric_mean),           cmocka_unit_test(test_scale_1e6),
        cmocka_unit_test(test_bootstrap_direct),      cmocka_unit_test(test_bootstrap_coverage),
        cmocka_unit_test(test_bootstrap_edges), cmocka_unit_test(test_bootstrap_two_way),       cmocka_unit_test(test_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
