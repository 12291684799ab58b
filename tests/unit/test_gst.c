/*
 * Unit tests for Graph Segment Training (src/train/gst.c):
 *  - with one segment covering the graph, GST scores equal the plain model's;
 *  - a training forward whose table is filled fresh (keep = 1, empty table)
 *    scores like GST inference (every segment fresh);
 *  - the historical table: empty until used, filled for the configs a step
 *    saw, refreshed by backward with the trained segment's fresh readout, and
 *    NOT recomputed when the parameters change (it is stale by design);
 *  - gradients of a GST step (table entries held fixed) against central
 *    finite differences;
 *  - every node lands in exactly one segment (sizes add up to n).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gnn/gst.h"

#define NOPS 8
#define F 5
#define D 4

static uint64_t rnd(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
static float unif(uint64_t *s, float a) {
    return (float)(((double)(rnd(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0) * a);
}

/* A random DAG as pc_gnn_gdata_build would make it. */
typedef struct tg {
    pc_gnn_gdata d;
    float *x;
    int32_t *op, *edges, *ids;
} tg;

static void tg_make(tg *t, uint64_t seed, int n, int m, int nc) {
    uint64_t s = seed;
    memset(t, 0, sizeof *t);
    t->x = malloc(sizeof(float) * (size_t)n * F);
    t->op = malloc(sizeof(int32_t) * (size_t)n);
    t->edges = malloc(sizeof(int32_t) * 2 * (size_t)m);
    t->ids = malloc(sizeof(int32_t) * (size_t)nc);
    for (int i = 0; i < n * F; i++) t->x[i] = unif(&s, 1.5f);
    for (int i = 0; i < n; i++) t->op[i] = (int32_t)(rnd(&s) % NOPS);
    for (int e = 0; e < m; e++) {
        int u = 1 + (int)(rnd(&s) % (uint64_t)(n - 1));
        t->edges[2 * e] = u;
        t->edges[2 * e + 1] = (int)(rnd(&s) % (uint64_t)u);
    }
    for (int j = 0; j < nc; j++) t->ids[j] = (int32_t)((j * n) / nc + 1) % n;
    assert_int_equal(pc_csr_build(&t->d.csr, t->edges, m, n, NULL), PC_OK);
    t->d.g.n = n;
    t->d.g.x = t->x;
    t->d.g.opcode = t->op;
    t->d.g.csr = &t->d.csr;
    t->d.g.nc = nc;
    t->d.g.cfg_ids = t->ids;
    t->d.edges = t->edges;
    t->d.m = m;
}

static void tg_free(tg *t) {
    pc_csr_free(&t->d.csr);
    free(t->x), free(t->op), free(t->edges), free(t->ids);
}

static pc_gnn *model(uint64_t seed) {
    pc_gnn_opts o = pc_gnn_opts_default(PC_KIND_LAYOUT);
    o.hidden = 6;
    o.layers = 2;
    o.emb_dim = 3;
    o.num_opcodes = NOPS;
    o.act = PC_ACT_GELU;
    pc_gnn *m = NULL;
    assert_int_equal(pc_gnn_new(&o, F, D, seed, &m, NULL), PC_OK);
    uint64_t s = seed * 3 + 1;
    for (size_t i = 0; i < m->params.numel; i++) m->params.data[i] += unif(&s, 0.3f);
    return m;
}

static float *configs(uint64_t seed, int C, int nc) {
    uint64_t s = seed;
    float *c = malloc(sizeof(float) * (size_t)C * nc * D);
    for (int i = 0; i < C * nc * D; i++) c[i] = unif(&s, 1.5f);
    return c;
}

static void close_to(const float *a, const float *b, int n, double tol) {
    for (int i = 0; i < n; i++)
        if (fabs((double)a[i] - b[i]) > tol * fmax(1.0, fabs((double)b[i])))
            fail_msg("element %d: %.9g vs %.9g", i, (double)a[i], (double)b[i]);
}

static void test_one_segment_is_the_model(void **state) {
    (void)state;
    tg t;
    tg_make(&t, 1, 30, 45, 6);
    pc_gnn *m = model(2);
    float *cfg = configs(3, 4, 6);
    pc_gst_opts o = pc_gst_opts_default();
    o.seg_size = 1000;
    pc_gst_graph *gg = NULL;
    assert_int_equal(pc_gst_graph_build(m, &t.d, &o, 0, &gg, NULL), PC_OK);
    assert_int_equal(pc_gst_graph_segments(gg), 1);
    pc_gst_ctx *cx = pc_gst_ctx_new(1);
    pc_gnn_ws *ws = pc_gnn_ws_new();
    float a[4], b[4];
    assert_int_equal(pc_gst_score(m, cx, gg, cfg, 4, a, NULL), PC_OK);
    assert_int_equal(pc_gnn_forward(m, ws, &t.d.g, cfg, 4, NULL, b, NULL), PC_OK);
    close_to(a, b, 4, 1e-5);
    pc_gnn_ws_free(ws);
    pc_gst_ctx_free(cx);
    pc_gst_graph_free(gg);
    free(cfg);
    pc_gnn_free(m);
    tg_free(&t);
}

static void test_segments_cover_nodes(void **state) {
    (void)state;
    tg t;
    tg_make(&t, 4, 53, 80, 7);
    pc_gnn *m = model(5);
    for (int method = 0; method < 3; method++) {
        pc_gst_opts o = pc_gst_opts_default();
        o.method = method == 0 ? PC_SEG_CONTIGUOUS : method == 1 ? PC_SEG_NODE_SPLITS
                                                                  : PC_SEG_METIS;
        o.seg_size = 10;
        pc_gst_graph *gg = NULL;
        assert_int_equal(pc_gst_graph_build(m, &t.d, &o, 3, &gg, NULL), PC_OK);
        int S = pc_gst_graph_segments(gg), tn = 0, tc = 0;
        assert_true(S >= 3);
        for (int s = 0; s < S; s++) {
            int a, b;
            pc_gst_segment_size(gg, s, &a, &b);
            assert_true(a >= 1);
            tn += a;
            tc += b;
        }
        assert_int_equal(tn, 53);
        assert_int_equal(tc, 7);
        pc_gst_graph_free(gg);
    }
    pc_gnn_free(m);
    tg_free(&t);
}

/* A step with keep = 1 on an empty table == inference (all fresh). */
static void test_fresh_table_matches_inference(void **state) {
    (void)state;
    tg t;
    tg_make(&t, 7, 60, 90, 9);
    pc_gnn *m = model(8);
    const int C = 5, K = 3;
    float *cfg = configs(9, C, 9);
    pc_gst_opts o = pc_gst_opts_default();
    o.seg_size = 15;
    o.keep = 1.0f;
    pc_gst_graph *gg = NULL;
    assert_int_equal(pc_gst_graph_build(m, &t.d, &o, C, &gg, NULL), PC_OK);
    int S = pc_gst_graph_segments(gg);
    assert_true(S >= 3);
    int64_t ids[3] = {4, 0, 2};
    float *sel = malloc(sizeof(float) * K * 9 * D);
    for (int k = 0; k < K; k++)
        memcpy(sel + (size_t)k * 9 * D, cfg + (size_t)ids[k] * 9 * D, sizeof(float) * 9 * D);
    for (int s = 0; s < S; s++) assert_null(pc_gst_table_entry(gg, 4, s));
    pc_gst_ctx *cx = pc_gst_ctx_new(1);
    uint64_t rng = 11;
    float a[3], b[3];
    assert_int_equal(pc_gst_forward(m, cx, gg, ids, sel, K, &o, &rng, a, NULL), PC_OK);
    assert_int_equal(pc_gst_score(m, cx, gg, sel, K, b, NULL), PC_OK);
    close_to(a, b, K, 1e-5);
    /* every segment of the configs seen, except the trained one, is in the table now */
    int filled = 0;
    for (int s = 0; s < S; s++) filled += pc_gst_table_entry(gg, 4, s) != NULL;
    assert_true(filled >= S - 1);
    /* backward refreshes the trained segment: now all segments are there */
    float ds[3] = {0.5f, -1.0f, 0.25f};
    pc_params_zero_grad(&m->params);
    assert_int_equal(pc_gst_backward(m, cx, gg, ds, NULL), PC_OK);
    for (int s = 0; s < S; s++) assert_non_null(pc_gst_table_entry(gg, 4, s));
    /* the table is stale by design: new parameters do not change stored entries */
    int R = pc_gnn_readout_width(m);
    float *before = malloc(sizeof(float) * (size_t)R);
    memcpy(before, pc_gst_table_entry(gg, 0, S - 1), sizeof(float) * (size_t)R);
    for (size_t i = 0; i < m->params.numel; i++) m->params.data[i] *= 1.1f;
    rng = 11;
    assert_int_equal(pc_gst_forward(m, cx, gg, ids, sel, K, &o, &rng, a, NULL), PC_OK);
    int trained = -1;
    for (int s = 0; s < S; s++)
        if (memcmp(before, pc_gst_table_entry(gg, 0, s), sizeof(float) * (size_t)R) == 0)
            trained = s;
    assert_int_equal(trained, S - 1); /* untouched */
    assert_int_equal(pc_gst_score(m, cx, gg, sel, K, b, NULL), PC_OK);
    int differ = 0;
    for (int k = 0; k < K; k++) differ += fabsf(a[k] - b[k]) > 1e-6f;
    assert_true(differ > 0); /* stale entries make the step differ from fresh inference */
    free(before);
    pc_gst_ctx_free(cx);
    pc_gst_graph_free(gg);
    free(sel);
    free(cfg);
    pc_gnn_free(m);
    tg_free(&t);
}

/* loss = sum_k score_k * r_k with the segment sample and table fixed */
static double step_loss(pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const int64_t *ids,
                        const float *sel, int K, const pc_gst_opts *o, const float *r) {
    uint64_t rng = 5;
    float sc[4];
    assert_int_equal(pc_gst_forward(m, cx, gg, ids, sel, K, o, &rng, sc, NULL), PC_OK);
    double L = 0;
    for (int k = 0; k < K; k++) L += (double)sc[k] * r[k];
    return L;
}

static void test_gst_gradients(void **state) {
    (void)state;
    tg t;
    tg_make(&t, 12, 40, 60, 6);
    pc_gnn *m = model(13);
    const int K = 3;
    float *sel = configs(14, K, 6);
    int64_t ids[3] = {0, 1, 2};
    float r[3] = {0.7f, -1.1f, 0.4f};
    pc_gst_opts o = pc_gst_opts_default();
    o.seg_size = 12;
    o.keep = 0.7f;
    o.train_segs = 2;
    pc_gst_graph *gg = NULL;
    assert_int_equal(pc_gst_graph_build(m, &t.d, &o, K, &gg, NULL), PC_OK);
    pc_gst_ctx *cx = pc_gst_ctx_new(2);
    /* fill the table once, so later forwards only read it */
    (void)step_loss(m, cx, gg, ids, sel, K, &o, r);
    for (int s = 0; s < pc_gst_graph_segments(gg); s++)
        for (int k = 0; k < K; k++)
            if (!pc_gst_table_entry(gg, k, s)) {
                o.keep = 1.0f;
                (void)step_loss(m, cx, gg, ids, sel, K, &o, r);
                o.keep = 0.7f;
            }
    pc_params_zero_grad(&m->params);
    (void)step_loss(m, cx, gg, ids, sel, K, &o, r);
    /* backward refreshes only the trained segments, which later forwards recompute */
    assert_int_equal(pc_gst_backward(m, cx, gg, r, NULL), PC_OK);
    size_t np = m->params.numel;
    float *g = malloc(sizeof(float) * np);
    memcpy(g, m->params.grad, sizeof(float) * np);
    double worst = 0, num2 = 0, den2 = 0;
    const float eps = 1e-2f;
    for (size_t i = 0; i < np; i++) {
        float keep = m->params.data[i];
        m->params.data[i] = keep + eps;
        double lp = step_loss(m, cx, gg, ids, sel, K, &o, r);
        m->params.data[i] = keep - eps;
        double lm = step_loss(m, cx, gg, ids, sel, K, &o, r);
        m->params.data[i] = keep;
        double n = (lp - lm) / (2.0 * eps), a = g[i];
        double d = fabs(a - n);
        if (d > 2e-3 + 2e-2 * fmax(fabs(a), fabs(n)))
            fail_msg("param %zu: analytic %.6g numeric %.6g", i, a, n);
        worst = fmax(worst, d);
        num2 += (a - n) * (a - n);
        den2 += n * n;
    }
    print_message("gst: %zu params, max abs diff %.3g, rel L2 %.3g\n", np, worst,
                  sqrt(num2 / fmax(den2, 1e-30)));
    assert_true(sqrt(num2 / fmax(den2, 1e-30)) < 5e-3);
    free(g);
    pc_gst_ctx_free(cx);
    pc_gst_graph_free(gg);
    free(sel);
    pc_gnn_free(m);
    tg_free(&t);
}

static void test_bad_args(void **state) {
    (void)state;
    tg t;
    tg_make(&t, 21, 20, 30, 3);
    pc_gnn *m = model(22);
    pc_gst_opts o = pc_gst_opts_default();
    o.seg_size = 0;
    pc_gst_graph *gg = NULL;
    pc_error e;
    assert_int_not_equal(pc_gst_graph_build(m, &t.d, &o, 2, &gg, &e), PC_OK);
    assert_null(gg);
    assert_non_null(strstr(e.msg, "target"));
    pc_gnn_free(m);
    pc_gnn_opts mo = pc_gnn_opts_default(PC_KIND_LAYOUT);
    mo.num_opcodes = NOPS;
    mo.pool = PC_POOL_MAX;
    assert_int_equal(pc_gnn_new(&mo, F, D, 1, &m, NULL), PC_OK);
    o.seg_size = 5;
    assert_int_equal(pc_gst_graph_build(m, &t.d, &o, 2, &gg, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "mean or sum"));
    pc_gnn_free(m);
    tg_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_segment_is_the_model),
        cmocka_unit_test(test_segments_cover_nodes),
        cmocka_unit_test(test_fresh_table_matches_inference),
        cmocka_unit_test(test_gst_gradients),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
