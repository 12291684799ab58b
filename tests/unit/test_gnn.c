/*
 * Unit tests for the learned cost models (src/gnn/): whole-model gradient
 * checks by central finite differences, K-config batches against single
 * configs, prefix reuse at inference, seed determinism, and preprocessing.
 *
 * Gradient checks: the loss is L = sum_k score_k * r_k (r random), computed
 * from the float model (sums in double). Every parameter element is moved
 * by +-FD_EPS and (L+ - L-) / (2 FD_EPS) is compared with the analytic
 * gradient from pc_gnn_backward(dscores = r). Since the forward is float
 * (relative rounding ~1e-7 on an O(1) loss, so ~1e-5 noise in the numeric
 * derivative at eps 1e-2, ~1e-4 at 1e-3) and eps is not tiny (truncation
 * ~eps^2), the check per element is |a - n| <= FD_ATOL + FD_RTOL *
 * max(|a|, |n|), plus a relative L2 error over the whole parameter vector
 * <= FD_NORM_TOL. The maxima are printed (max rel diff is dominated by
 * near-zero gradients, hence the absolute floor). GELU keeps the model
 * smooth. Max pooling is piecewise linear: at eps 1e-2 a step can move an
 * argmax (seen on layout/max: errors of 15% on in.w that vanish at 1e-3),
 * so pooling with max uses eps 1e-3.
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

#include "common/util.h"
#include "gnn/encode.h"
#include "gnn/gnn.h"

#define FD_EPS 1e-2f     /* smooth models */
#define FD_EPS_MAX 1e-3f /* max pooling: smaller steps keep argmax switches out of reach */
#define FD_ATOL 2e-3
#define FD_RTOL 2e-2
#define FD_NORM_TOL 5e-3

typedef struct trng {
    uint64_t s;
} trng;

static uint64_t trng_next(trng *r) {
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
static float unif(trng *r, float lo, float hi) {
    double u = (double)(trng_next(r) >> 11) * 0x1.0p-53;
    return (float)(lo + (hi - lo) * u);
}

/* ---- a random graph ---------------------------------------------------------------- */

#define NOPS 8

typedef struct tgraph {
    pc_gnn_graph g;
    float *x;
    int32_t *op, *edges, *ids;
    pc_csr csr;
} tgraph;

static void tgraph_make(tgraph *t, trng *r, int n, int m, int F, int nc) {
    memset(t, 0, sizeof *t);
    t->x = malloc((size_t)n * F * sizeof(float));
    t->op = malloc((size_t)n * sizeof(int32_t));
    t->edges = malloc((size_t)(m ? m : 1) * 2 * sizeof(int32_t));
    t->ids = malloc((size_t)(nc ? nc : 1) * sizeof(int32_t));
    assert_non_null(t->x);
    for (int i = 0; i < n * F; i++) t->x[i] = unif(r, -1.5f, 1.5f);
    for (int i = 0; i < n; i++) t->op[i] = (int32_t)(trng_next(r) % NOPS);
    for (int e = 0; e < m; e++) { /* u consumes an earlier v: a DAG */
        int u = 1 + (int)(trng_next(r) % (uint64_t)(n - 1));
        int v = (int)(trng_next(r) % (uint64_t)u);
        t->edges[2 * e] = u;
        t->edges[2 * e + 1] = v;
    }
    assert_int_equal(pc_csr_build(&t->csr, t->edges, m, n, NULL), PC_OK);
    /* nc distinct configurable nodes: every (n / nc)-th node, shifted */
    for (int j = 0; j < nc; j++) t->ids[j] = (int32_t)((j * n) / nc + 1) % n;
    t->g.n = n;
    t->g.x = t->x;
    t->g.opcode = t->op;
    t->g.csr = &t->csr;
    t->g.nc = nc;
    t->g.cfg_ids = t->ids;
}

static void tgraph_free(tgraph *t) {
    free(t->x);
    free(t->op);
    free(t->edges);
    free(t->ids);
    pc_csr_free(&t->csr);
}

static pc_gnn_opts small_opts(pc_kind kind, pc_join join, pc_pool pool) {
    pc_gnn_opts o = pc_gnn_opts_default(kind);
    o.hidden = 6;
    o.layers = 2;
    o.emb_dim = 3;
    o.num_opcodes = NOPS;
    o.join = join;
    o.pool = pool;
    o.act = PC_ACT_GELU;
    return o;
}

static pc_gnn *new_model(const pc_gnn_opts *o, int F, int D, uint64_t seed, trng *r) {
    pc_gnn *m = NULL;
    assert_int_equal(pc_gnn_new(o, F, D, seed, &m, NULL), PC_OK);
    /* move every parameter off its init (biases 0, gamma 1) so all are exercised */
    if (r)
        for (size_t i = 0; i < m->params.numel; i++) m->params.data[i] += unif(r, -0.3f, 0.3f);
    return m;
}

static float *config_block(trng *r, int K, int nc, int D) {
    size_t n = (size_t)K * (size_t)(nc ? nc : 1) * (size_t)D;
    float *c = malloc(n * sizeof(float));
    assert_non_null(c);
    for (size_t i = 0; i < n; i++) c[i] = unif(r, -1.5f, 1.5f);
    return c;
}

static double loss(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g, const float *cfg,
                   int K, const float *rr) {
    float sc[16];
    assert_int_equal(pc_gnn_forward(m, ws, g, cfg, K, NULL, sc, NULL), PC_OK);
    double L = 0;
    for (int k = 0; k < K; k++) L += (double)sc[k] * rr[k];
    return L;
}

static void grad_check(const char *name, const pc_gnn_opts *o, int n, int medges, int nc) {
    const float eps =
        o->pool == PC_POOL_MAX || o->pool == PC_POOL_MEANMAX ? FD_EPS_MAX : FD_EPS;
    trng r = {42 + (uint64_t)o->kind * 7 + (uint64_t)o->join * 3 + (uint64_t)o->pool};
    const int F = 5, D = o->kind == PC_KIND_LAYOUT ? 3 : 4, K = 3;
    tgraph t;
    tgraph_make(&t, &r, n, medges, F, nc);
    pc_gnn *m = new_model(o, F, D, 7, &r);
    float *cfg = config_block(&r, K, o->kind == PC_KIND_LAYOUT ? nc : 1, D);
    float rr[3];
    for (int k = 0; k < K; k++) rr[k] = unif(&r, -1.0f, 1.0f);
    pc_gnn_ws *ws = pc_gnn_ws_new();
    assert_non_null(ws);

    (void)loss(m, ws, &t.g, cfg, K, rr);
    pc_params_zero_grad(&m->params);
    assert_int_equal(pc_gnn_backward(m, ws, rr, NULL), PC_OK);
    size_t N = m->params.numel;
    float *ga = malloc(N * sizeof(float));
    memcpy(ga, m->params.grad, N * sizeof(float));

    double max_abs = 0, max_rel = 0, num2 = 0, diff2 = 0;
    int bad = 0, nonzero = 0;
    for (size_t i = 0; i < N; i++) {
        float save = m->params.data[i];
        m->params.data[i] = save + eps;
        double lp = loss(m, ws, &t.g, cfg, K, rr);
        m->params.data[i] = save - eps;
        double lm = loss(m, ws, &t.g, cfg, K, rr);
        m->params.data[i] = save;
        /* the actual float step, not the nominal one */
        double h = ((double)(save + eps) - (double)(save - eps));
        double num = (lp - lm) / h, a = ga[i];
        double d = fabs(a - num);
        num2 += num * num;
        diff2 += d * d;
        nonzero += fabs(a) > 1e-6;
        if (d > max_abs) max_abs = d;
        double rel = d / fmax(fmax(fabs(a), fabs(num)), 1e-3);
        if (d > 1e-4 && rel > max_rel) max_rel = rel;
        if (d > FD_ATOL + FD_RTOL * fmax(fabs(a), fabs(num))) {
            if (bad < 5) {
                int pi = 0;
                while (pi + 1 < m->params.count && m->params.info[pi + 1].offset <= i) pi++;
                print_message("  %s: %s[%zu] analytic %.6g numeric %.6g\n", name,
                              m->params.info[pi].name, i - m->params.info[pi].offset, a, num);
            }
            bad++;
        }
    }
    double relnorm = sqrt(diff2) / fmax(sqrt(num2), 1e-12);
    print_message("%s: %zu params, %d nonzero grads, max abs diff %.3g, max rel diff %.3g "
                  "(|d|>1e-4), rel L2 %.3g\n",
                  name, N, nonzero, max_abs, max_rel, relnorm);
    assert_int_equal(bad, 0);
    assert_true(relnorm <= FD_NORM_TOL);
    assert_true(nonzero > (int)(N / 2)); /* the check is not vacuous */

    /* every parameter tensor receives some gradient */
    for (int p = 0; p < m->params.count; p++) {
        const pc_param_info *info = &m->params.info[p];
        double s = 0;
        for (size_t i = 0; i < info->numel; i++) s += fabs(ga[info->offset + i]);
        if (strcmp(info->name, "emb") != 0 && s == 0.0)
            fail_msg("%s: parameter %s has zero gradient", name, info->name);
    }
    free(ga);
    free(cfg);
    pc_gnn_ws_free(ws);
    pc_gnn_free(m);
    tgraph_free(&t);
}

static void test_grad_tile_early(void **state) {
    (void)state;
    pc_gnn_opts o = small_opts(PC_KIND_TILE, PC_JOIN_EARLY, PC_POOL_MEAN);
    grad_check("tile-early/mean", &o, 8, 11, 0);
    o.pool = PC_POOL_SUM;
    o.layernorm = 0;
    grad_check("tile-early/sum/no-ln", &o, 7, 9, 0);
}

static void test_grad_tile_late(void **state) {
    (void)state;
    pc_gnn_opts o = small_opts(PC_KIND_TILE, PC_JOIN_LATE, PC_POOL_MEANMAX);
    grad_check("tile-late/meanmax", &o, 9, 12, 0);
    o.pool = PC_POOL_MEAN;
    o.layers = 0;
    grad_check("tile-late/mean/0-layers", &o, 6, 7, 0);
}

static void test_grad_layout(void **state) {
    (void)state;
    pc_gnn_opts o = small_opts(PC_KIND_LAYOUT, PC_JOIN_EARLY, PC_POOL_MEAN);
    grad_check("layout/mean", &o, 10, 14, 3);
    o.pool = PC_POOL_MAX;
    grad_check("layout/max", &o, 9, 12, 4);
}

static void close_arrays(const float *a, const float *b, int n, double tol) {
    for (int i = 0; i < n; i++)
        if (fabs((double)a[i] - b[i]) > tol * fmax(1.0, fabs((double)b[i])))
            fail_msg("element %d: %.9g vs %.9g", i, (double)a[i], (double)b[i]);
}

static void test_grad_attention(void **state) {
    (void)state;
    pc_gnn_opts o = small_opts(PC_KIND_LAYOUT, PC_JOIN_EARLY, PC_POOL_MEAN);
    o.attn_heads = 2;
    o.attn_group = 3;
    grad_check("layout/attention", &o, 10, 14, 3);
    o = small_opts(PC_KIND_TILE, PC_JOIN_LATE, PC_POOL_MEAN);
    o.attn_heads = 1;
    o.attn_group = 3;
    grad_check("tile-late/attention", &o, 8, 10, 0);
}

/* With attention, configs are scored in groups: a group's scores are the same in any chunk. */
static void test_attention_groups(void **state) {
    (void)state;
    trng r = {77};
    pc_gnn_opts o = small_opts(PC_KIND_LAYOUT, PC_JOIN_LATE, PC_POOL_MEAN);
    o.attn_heads = 2;
    o.attn_group = 2;
    tgraph t;
    tgraph_make(&t, &r, 12, 16, 5, 3);
    pc_gnn *m = new_model(&o, 5, 3, 3, &r);
    float *wo = pc_params_data(&m->params, m->p_at[5]); /* non-zero: attention mixes */
    for (size_t j = 0; j < m->params.info[m->p_at[5]].numel; j++) wo[j] = unif(&r, -0.5f, 0.5f);
    float *cfg = config_block(&r, 4, 3, 3);
    pc_gnn_ws *ws = pc_gnn_ws_new();
    float all[4], two[2], swapped[2];
    assert_int_equal(pc_gnn_prefix(m, ws, &t.g, NULL), PC_OK);
    assert_int_equal(pc_gnn_score_configs(m, ws, cfg, 4, all, NULL), PC_OK);
    assert_int_equal(pc_gnn_score_configs(m, ws, cfg + 2 * 3 * 3, 2, two, NULL), PC_OK);
    close_arrays(two, all + 2, 2, 1e-5);
    /* another partner changes the score: the configs do see each other */
    float *pair = malloc(sizeof(float) * 2 * 3 * 3);
    memcpy(pair, cfg, sizeof(float) * 3 * 3);
    memcpy(pair + 9, cfg + 27, sizeof(float) * 3 * 3);
    assert_int_equal(pc_gnn_score_configs(m, ws, pair, 2, swapped, NULL), PC_OK);
    assert_true(fabsf(swapped[0] - all[0]) > 1e-6f);
    /* 3 configs are not whole groups of 2 */
    assert_int_equal(pc_gnn_score_configs(m, ws, cfg, 3, all, NULL), PC_ERR_ARG);
    free(pair);
    free(cfg);
    pc_gnn_ws_free(ws);
    pc_gnn_free(m);
    tgraph_free(&t);
}

static void test_grad_layout_late(void **state) {
    (void)state;
    pc_gnn_opts o = small_opts(PC_KIND_LAYOUT, PC_JOIN_LATE, PC_POOL_MEAN);
    grad_check("layout-late/mean", &o, 10, 14, 3);
    o.pool = PC_POOL_MEANMAX;
    grad_check("layout-late/meanmax", &o, 9, 12, 4);
}

/* ---- batches, prefix reuse, determinism -------------------------------------------- */


static void batch_vs_single(const pc_gnn_opts *o, int nc) {
    trng r = {5};
    const int F = 5, D = 4, K = 4, n = 9;
    int rows = o->kind == PC_KIND_LAYOUT ? nc : 1;
    tgraph t;
    tgraph_make(&t, &r, n, 12, F, nc);
    pc_gnn *m = new_model(o, F, D, 11, &r);
    float *cfg = config_block(&r, K, rows, D);
    pc_gnn_ws *ws = pc_gnn_ws_new();
    float batch[4], single[4], chunk[4];
    assert_int_equal(pc_gnn_forward(m, ws, &t.g, cfg, K, NULL, batch, NULL), PC_OK);
    for (int k = 0; k < K; k++)
        assert_int_equal(pc_gnn_forward(m, ws, &t.g, cfg + (size_t)k * rows * D, 1, NULL,
                                          &single[k], NULL),
                         PC_OK);
    close_arrays(batch, single, K, 1e-5);
    /* prefix once, then configs in chunks of 1 and 3 */
    assert_int_equal(pc_gnn_prefix(m, ws, &t.g, NULL), PC_OK);
    assert_int_equal(pc_gnn_score_configs(m, ws, cfg, 1, chunk, NULL), PC_OK);
    assert_int_equal(pc_gnn_score_configs(m, ws, cfg + (size_t)rows * D, 3, chunk + 1, NULL),
                     PC_OK);
    close_arrays(chunk, batch, K, 1e-5);
    /* backward after score_configs matches backward after forward */
    float ds[4] = {0.3f, -1.0f, 0.5f, 0.2f};
    pc_params_zero_grad(&m->params);
    assert_int_equal(pc_gnn_score_configs(m, ws, cfg, K, chunk, NULL), PC_OK);
    assert_int_equal(pc_gnn_backward(m, ws, ds, NULL), PC_OK);
    float *g1 = malloc(m->params.numel * sizeof(float));
    memcpy(g1, m->params.grad, m->params.numel * sizeof(float));
    pc_params_zero_grad(&m->params);
    assert_int_equal(pc_gnn_forward(m, ws, &t.g, cfg, K, NULL, chunk, NULL), PC_OK);
    assert_int_equal(pc_gnn_backward(m, ws, ds, NULL), PC_OK);
    close_arrays(g1, m->params.grad, (int)m->params.numel, 1e-6);
    /* backward accumulates: a second call doubles the gradient */
    assert_int_equal(pc_gnn_backward(m, ws, ds, NULL), PC_OK);
    for (size_t i = 0; i < m->params.numel; i++) g1[i] *= 2.0f;
    close_arrays(g1, m->params.grad, (int)m->params.numel, 1e-6);
    free(g1);
    free(cfg);
    pc_gnn_ws_free(ws);
    pc_gnn_free(m);
    tgraph_free(&t);
}

static void test_batch_and_prefix(void **state) {
    (void)state;
    pc_gnn_opts o = pc_gnn_opts_default(PC_KIND_TILE);
    o.hidden = 8;
    o.num_opcodes = NOPS;
    batch_vs_single(&o, 0);
    o.join = PC_JOIN_LATE;
    o.pool = PC_POOL_MEANMAX;
    batch_vs_single(&o, 0);
    pc_gnn_opts lo = pc_gnn_opts_default(PC_KIND_LAYOUT);
    lo.hidden = 8;
    lo.num_opcodes = NOPS;
    lo.pool = PC_POOL_SUM;
    batch_vs_single(&lo, 3);
    batch_vs_single(&lo, 0); /* a layout graph without configurable nodes */
    lo.join = PC_JOIN_LATE;
    batch_vs_single(&lo, 3);
    lo.pool = PC_POOL_MEANMAX;
    batch_vs_single(&lo, 4);
}

/* head(readout(x)) == forward, and their backward passes give the same gradients */
static void readout_head_split(const pc_gnn_opts *o, int nc) {
    trng r = {21};
    const int F = 5, D = 4, K = 3, n = 10;
    int rows = o->kind == PC_KIND_LAYOUT ? nc : 1;
    tgraph t;
    tgraph_make(&t, &r, n, 14, F, nc);
    pc_gnn *m = new_model(o, F, D, 13, &r);
    float *cfg = config_block(&r, K, rows, D);
    pc_gnn_ws *ws = pc_gnn_ws_new(), *hws = pc_gnn_ws_new();
    int R = pc_gnn_readout_width(m);
    float full[3], split[3], ds[3] = {0.7f, -0.4f, 1.1f};
    float *rd = malloc(sizeof(float) * (size_t)K * R), *dr = malloc(sizeof(float) * (size_t)K * R);
    size_t np = m->params.numel;
    float *g1 = malloc(np * sizeof(float));
    pc_params_zero_grad(&m->params);
    assert_int_equal(pc_gnn_forward(m, ws, &t.g, cfg, K, NULL, full, NULL), PC_OK);
    assert_int_equal(pc_gnn_backward(m, ws, ds, NULL), PC_OK);
    memcpy(g1, m->params.grad, np * sizeof(float));
    pc_params_zero_grad(&m->params);
    assert_int_equal(pc_gnn_readout(m, ws, &t.g, cfg, K, NULL, rd, NULL), PC_OK);
    assert_int_equal(pc_gnn_head_forward(m, hws, rd, K, split, NULL), PC_OK);
    assert_int_equal(pc_gnn_head_backward(m, hws, ds, dr, NULL), PC_OK);
    assert_int_equal(pc_gnn_readout_backward(m, ws, dr, NULL), PC_OK);
    assert_memory_equal(full, split, sizeof full);
    close_arrays(m->params.grad, g1, (int)np, 1e-6);
    free(rd), free(dr), free(g1), free(cfg);
    pc_gnn_ws_free(ws);
    pc_gnn_ws_free(hws);
    pc_gnn_free(m);
    tgraph_free(&t);
}

static void test_readout_head_split(void **state) {
    (void)state;
    pc_gnn_opts o = small_opts(PC_KIND_TILE, PC_JOIN_EARLY, PC_POOL_MEAN);
    readout_head_split(&o, 0);
    o = small_opts(PC_KIND_LAYOUT, PC_JOIN_EARLY, PC_POOL_MEAN);
    readout_head_split(&o, 3);
    o = small_opts(PC_KIND_LAYOUT, PC_JOIN_LATE, PC_POOL_MEANMAX);
    readout_head_split(&o, 4);
}

static void test_determinism_and_dropout(void **state) {
    (void)state;
    pc_gnn_opts o = pc_gnn_opts_default(PC_KIND_LAYOUT);
    o.num_opcodes = NOPS;
    o.dropout = 0.3f;
    pc_gnn *a = new_model(&o, 5, 3, 99, NULL), *b = new_model(&o, 5, 3, 99, NULL);
    pc_gnn *c = new_model(&o, 5, 3, 100, NULL);
    assert_int_equal(a->params.numel, b->params.numel);
    assert_memory_equal(a->params.data, b->params.data, a->params.numel * sizeof(float));
    assert_true(memcmp(a->params.data, c->params.data, a->params.numel * sizeof(float)) != 0);
    /* Xavier init: weights are bounded and not all zero; biases zero */
    const float *w = pc_params_data(&a->params, a->p_in_w);
    float bound = sqrtf(6.0f / (64.0f + 5.0f + 16.0f));
    double s = 0;
    for (size_t i = 0; i < a->params.info[a->p_in_w].numel; i++) {
        assert_true(fabsf(w[i]) <= bound);
        s += fabs(w[i]);
    }
    assert_true(s > 0);
    assert_true(pc_params_data(&a->params, a->p_in_b)[0] == 0.0f);

    trng r = {3};
    tgraph t;
    tgraph_make(&t, &r, 12, 16, 5, 4);
    float *cfg = config_block(&r, 2, 4, 3);
    pc_gnn_ws *ws = pc_gnn_ws_new();
    float e1[2], e2[2], t1[2], t2[2];
    uint64_t s1 = 1, s2 = 1;
    assert_int_equal(pc_gnn_forward(a, ws, &t.g, cfg, 2, NULL, e1, NULL), PC_OK);
    assert_int_equal(pc_gnn_forward(b, ws, &t.g, cfg, 2, NULL, e2, NULL), PC_OK);
    assert_memory_equal(e1, e2, sizeof e1);
    assert_int_equal(pc_gnn_forward(a, ws, &t.g, cfg, 2, &s1, t1, NULL), PC_OK);
    assert_true(s1 != 1); /* the dropout seed advanced */
    float ds[2] = {1.0f, -1.0f};
    assert_int_equal(pc_gnn_backward(a, ws, ds, NULL), PC_OK);
    assert_int_equal(pc_gnn_forward(a, ws, &t.g, cfg, 2, &s2, t2, NULL), PC_OK);
    assert_memory_equal(t1, t2, sizeof t1);
    assert_true(t1[0] != e1[0] || t1[1] != e1[1]);
    /* score_configs refuses a training prefix */
    assert_int_equal(pc_gnn_score_configs(a, ws, cfg, 2, t2, NULL), PC_ERR_ARG);
    free(cfg);
    pc_gnn_ws_free(ws);
    pc_gnn_free(a);
    pc_gnn_free(b);
    pc_gnn_free(c);
    tgraph_free(&t);
}

static void test_bad_args(void **state) {
    (void)state;
    pc_gnn_opts o = pc_gnn_opts_default(PC_KIND_TILE);
    pc_gnn *m = NULL;
    pc_error err;
    o.hidden = 0;
    assert_int_equal(pc_gnn_new(&o, 5, 4, 1, &m, &err), PC_ERR_ARG);
    assert_null(m);
    o = pc_gnn_opts_default(PC_KIND_AUTO);
    assert_int_equal(pc_gnn_new(&o, 5, 4, 1, &m, &err), PC_ERR_ARG);
    o = pc_gnn_opts_default(PC_KIND_TILE);
    o.dropout = 1.0f;
    assert_int_equal(pc_gnn_new(&o, 5, 4, 1, &m, &err), PC_ERR_ARG);
    o.dropout = 0.0f;
    assert_int_equal(pc_gnn_new(&o, 5, 4, 1, &m, &err), PC_OK);
    pc_gnn_ws *ws = pc_gnn_ws_new();
    float sc[1], ds[1] = {1};
    assert_int_equal(pc_gnn_backward(m, ws, ds, &err), PC_ERR_ARG);
    float cfg[4] = {0};
    assert_int_equal(pc_gnn_score_configs(m, ws, cfg, 1, sc, &err), PC_ERR_ARG);
    pc_prep p = {0};
    assert_int_equal(pc_prep_identity(&p, 3, NULL), PC_OK);
    assert_int_equal(pc_gnn_set_prep(m, &p, &p, &err), PC_ERR_ARG);
    pc_prep_free(&p);
    pc_gnn_ws_free(ws);
    pc_gnn_free(m);
}

/* ---- preprocessing ---------------------------------------------------------------- */

static void test_preprocess(void **state) {
    (void)state;
    enum { ROWS = 200, DIM = 5 };
    trng r = {17};
    float *x = malloc(ROWS * DIM * sizeof(float));
    for (int i = 0; i < ROWS; i++) {
        float *row = x + i * DIM;
        row[0] = unif(&r, -2.0f, 3.0f);                         /* plain */
        row[1] = 7.0f;                                          /* constant: dropped */
        row[2] = expf(unif(&r, 0.0f, 14.0f));                   /* heavy tail: log */
        row[3] = (trng_next(&r) & 1) ? -expf(unif(&r, 0, 10)) : 5.0f; /* signed heavy */
        row[4] = (float)(trng_next(&r) % 4);                    /* small ints */
    }
    pc_prep_acc acc;
    assert_int_equal(pc_prep_acc_init(&acc, DIM, PC_PREP_LOG_THRESHOLD, NULL), PC_OK);
    pc_prep p = {0}, q = {0};
    assert_int_equal(pc_prep_acc_finish(&acc, &p, NULL), PC_ERR_ARG); /* no rows */
    /* fitting in two chunks (as over two graphs) */
    pc_prep_acc_add(&acc, x, 120);
    pc_prep_acc_add(&acc, x + 120 * DIM, ROWS - 120);
    assert_int_equal(pc_prep_acc_finish(&acc, &p, NULL), PC_OK);
    pc_prep_acc_free(&acc);
    assert_int_equal(p.in_dim, DIM);
    assert_int_equal(p.out_dim, 4);
    int keep[4] = {0, 2, 3, 4}, logt[4] = {0, 1, 1, 0};
    for (int j = 0; j < 4; j++) {
        assert_int_equal(p.keep[j], keep[j]);
        assert_int_equal(p.logt[j], logt[j]);
    }
    float *y = malloc(ROWS * 4 * sizeof(float));
    pc_prep_apply(&p, x, ROWS, y);
    for (int j = 0; j < 4; j++) {
        double s1 = 0, s2 = 0;
        for (int i = 0; i < ROWS; i++) {
            s1 += y[i * 4 + j];
            s2 += (double)y[i * 4 + j] * y[i * 4 + j];
        }
        double mean = s1 / ROWS, sd = sqrt(s2 / ROWS - mean * mean);
        assert_true(fabs(mean) < 1e-4);
        assert_true(fabs(sd - 1.0) < 1e-4);
    }
    /* the log column: sign(x) log1p(|x|) standardized */
    double v = log1p((double)x[2]);
    assert_true(fabs(y[1] - (v - p.mean[1]) / p.std[1]) < 1e-5);
    /* round trip through the plain arrays (what a checkpoint stores) */
    assert_int_equal(pc_prep_set(&q, p.in_dim, p.out_dim, p.keep, p.logt, p.mean, p.std, NULL),
                     PC_OK);
    float *y2 = malloc(ROWS * 4 * sizeof(float));
    pc_prep_apply(&q, x, ROWS, y2);
    assert_memory_equal(y, y2, ROWS * 4 * sizeof(float));
    /* set rejects bad arrays */
    int32_t badkeep[2] = {3, 1}, lt[2] = {0, 0};
    float mu[2] = {0, 0}, sd[2] = {1, 1}, sd0[2] = {1, 0};
    assert_int_equal(pc_prep_set(&q, 5, 2, badkeep, lt, mu, sd, NULL), PC_ERR_ARG);
    int32_t okkeep[2] = {1, 3};
    assert_int_equal(pc_prep_set(&q, 5, 2, okkeep, lt, mu, sd0, NULL), PC_ERR_ARG);
    assert_int_equal(pc_prep_set(&q, 3, 2, okkeep, lt, mu, sd, NULL), PC_ERR_ARG);
    assert_int_equal(q.out_dim, 4); /* unchanged after failures */
    /* the model stores copies with matching widths */
    pc_prep ci = {0};
    assert_int_equal(pc_prep_identity(&ci, 24, NULL), PC_OK);
    pc_gnn_opts o = pc_gnn_opts_default(PC_KIND_TILE);
    pc_gnn *m = NULL;
    assert_int_equal(pc_gnn_new(&o, 4, 24, 1, &m, NULL), PC_OK);
    assert_int_equal(pc_gnn_set_prep(m, &p, &ci, NULL), PC_OK);
    assert_int_equal(m->node_prep.out_dim, 4);
    assert_memory_equal(m->node_prep.mean, p.mean, 4 * sizeof(float));
    pc_gnn_free(m);
    pc_prep_free(&ci);
    pc_prep_free(&p);
    pc_prep_free(&q);
    free(x);
    free(y);
    free(y2);
}

/* Encoded configs are preprocessed in blocks per thread: the same rows as
 * encoding the whole matrix and then preprocessing it, for any row count. */
static void test_prep_configs_blocks(void **state) {
    (void)state;
    pc_encode_opts eo = pc_encode_opts_all();
    int W = pc_encode_layout_width(&eo, PC_LAYOUT_CONFIG_DIM), D = W - 3;
    int32_t *keep = malloc((size_t)D * sizeof *keep), *logt = malloc((size_t)D * sizeof *logt);
    float *mu = malloc((size_t)D * sizeof *mu), *sd = malloc((size_t)D * sizeof *sd);
    assert_true(keep && logt && mu && sd);
    for (int j = 0; j < D; j++) keep[j] = j + 3, logt[j] = j % 3 == 0, mu[j] = 0.1f * (float)j,
                                sd[j] = 1.0f + 0.5f * (float)(j % 4);
    pc_prep cp = {0}, np = {0};
    assert_int_equal(pc_prep_set(&cp, W, D, keep, logt, mu, sd, NULL), PC_OK);
    assert_int_equal(pc_prep_identity(&np, 6, NULL), PC_OK);
    pc_gnn_opts o = pc_gnn_opts_default(PC_KIND_LAYOUT);
    o.encode = pc_encode_opts_bits(&eo);
    pc_gnn *m = NULL;
    assert_int_equal(pc_gnn_new(&o, 6, D, 1, &m, NULL), PC_OK);
    assert_int_equal(pc_gnn_set_prep(m, &np, &cp, NULL), PC_OK);
    const int64_t counts[] = {0, 1, 2047, 2048, 2049, 5000};
    int64_t R = 5000;
    float *raw = malloc((size_t)R * PC_LAYOUT_CONFIG_DIM * sizeof *raw);
    float *enc = malloc((size_t)R * (size_t)W * sizeof *enc);
    float *want = malloc((size_t)R * (size_t)D * sizeof *want);
    float *got = malloc((size_t)R * (size_t)D * sizeof *got);
    assert_true(raw && enc && want && got);
    uint64_t rng = 7;
    for (int64_t r = 0; r < R; r++) { /* random permutations of random rank, -1 padded */
        for (int t = 0; t < 3; t++) {
            float *s = raw + r * PC_LAYOUT_CONFIG_DIM + 6 * t;
            int rank = (int)(pc_splitmix64(&rng) % 7);
            for (int i = 0; i < 6; i++) s[i] = i < rank ? (float)i : -1.0f;
            for (int i = rank - 1; i > 0; i--) {
                int k = (int)(pc_splitmix64(&rng) % (uint64_t)(i + 1));
                float v = s[i];
                s[i] = s[k], s[k] = v;
            }
        }
    }
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int64_t n = counts[c];
        assert_int_equal(pc_encode_layout(&eo, raw, n, PC_LAYOUT_CONFIG_DIM, enc, NULL), PC_OK);
        pc_prep_apply(&cp, enc, n, want);
        memset(got, 0xff, (size_t)R * (size_t)D * sizeof *got);
        assert_int_equal(pc_gnn_prep_configs(m, NULL, raw, n, got, NULL), PC_OK);
        assert_memory_equal(got, want, (size_t)n * (size_t)D * sizeof *got);
        if (n < R) assert_int_equal(((uint32_t *)got)[n * D], 0xffffffffu); /* nothing past n rows */
    }
    pc_gnn_free(m);
    pc_prep_free(&cp);
    pc_prep_free(&np);
    free(keep), free(logt), free(mu), free(sd), free(raw), free(enc), free(want), free(got);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grad_tile_early),
        cmocka_unit_test(test_grad_tile_late),
        cmocka_unit_test(test_grad_layout),
        cmocka_unit_test(test_grad_layout_late),
        cmocka_unit_test(test_grad_attention),
        cmocka_unit_test(test_attention_groups),
        cmocka_unit_test(test_batch_and_prefix),
        cmocka_unit_test(test_readout_head_split),
        cmocka_unit_test(test_determinism_and_dropout),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_preprocess),
        cmocka_unit_test(test_prep_configs_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
