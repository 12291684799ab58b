/*
 * Unit tests for the NN engine (src/nn/): every op's float forward against a
 * double reference forward written here, and its float backward against
 * central finite differences of that reference in double, for the scalar
 * loss L = sum(out * R) with random R. Also: the parameter arena, gradient
 * clipping, Adam/AdamW against hand-computed steps, the cosine schedule,
 * dropout determinism and scaling, and bitwise-identical results with 1 and
 * 2 OpenMP threads.
 *
 * Tolerances: forward |f - d| / max(1, |d|) <= 1e-5; gradient
 * |analytic - numeric| / max(1, |numeric|) <= 1e-3 (max printed per op).
 * Kinks (ReLU at 0, max-pool ties) are avoided by building inputs away
 * from them, as ggml's test-backend-ops does with grad_expect.
 */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/threads.h"
#include "nn/nn.h"

#define FWD_TOL 1e-5
#define GRAD_TOL 1e-3
#define FD_H 1e-6

/* ---- random numbers -------------------------------------------------------- */

typedef struct trng {
    uint64_t s;
} trng;

static uint64_t trng_next(trng *r) {
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static float trng_unif(trng *r, float lo, float hi) {
    double u = (double)(trng_next(r) >> 11) * 0x1.0p-53;
    return (float)(lo + (hi - lo) * u);
}

static float *frand(trng *r, size_t n, float lo, float hi) {
    float *x = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(x);
    for (size_t i = 0; i < n; i++) x[i] = trng_unif(r, lo, hi);
    return x;
}

/* Uniform in +-[0.1, 1): keeps ReLU-like kinks at 0 out of finite-difference reach. */
static float *frand_away0(trng *r, size_t n) {
    float *x = frand(r, n, 0.1f, 1.0f);
    for (size_t i = 0; i < n; i++)
        if (trng_next(r) & 1) x[i] = -x[i];
    return x;
}

static float *fzeros(size_t n) {
    float *x = calloc(n ? n : 1, sizeof(float));
    assert_non_null(x);
    return x;
}

/* ---- the finite-difference harness ------------------------------------------ */

#define MAX_IN 4

/*
 * One op under test: its float inputs, the float forward output, the float
 * analytic gradients (from backward with dout = R; NULL = not checked) and
 * a double reference forward. The op-specific fields are read by ref().
 */
typedef struct opcase {
    const char *name;
    int nin;
    size_t n[MAX_IN];
    const float *x[MAX_IN];
    const float *g[MAX_IN];
    size_t nout;
    const float *out;
    const float *R;
    void (*ref)(const struct opcase *c, double *const *in, double *out);
    /* op parameters */
    int N, C, IC, OC, K, G, k3;
    int cs[3];
    const int32_t *idx, *off, *edges;
    int m;
    int mode, dir;
    float slope, p, eps;
    const uint8_t *mask;
} opcase;

static double loss_of(const opcase *c, double *const *in, double *out, const double *R) {
    c->ref(c, in, out);
    double L = 0.0;
    for (size_t i = 0; i < c->nout; i++) L += out[i] * R[i];
    return L;
}

static void check_op(const opcase *c) {
    double *in[MAX_IN] = {0};
    for (int k = 0; k < c->nin; k++) {
        in[k] = malloc((c->n[k] ? c->n[k] : 1) * sizeof(double));
        for (size_t i = 0; i < c->n[k]; i++) in[k][i] = c->x[k][i];
    }
    double *out = malloc((c->nout ? c->nout : 1) * sizeof(double));
    double *R = malloc((c->nout ? c->nout : 1) * sizeof(double));
    for (size_t i = 0; i < c->nout; i++) R[i] = c->R[i];

    c->ref(c, in, out);
    double fwd_err = 0.0;
    for (size_t i = 0; i < c->nout; i++) {
        double e = fabs(c->out[i] - out[i]) / fmax(1.0, fabs(out[i]));
        fwd_err = fmax(fwd_err, e);
    }

    double grad_err = 0.0;
    for (int k = 0; k < c->nin; k++) {
        if (!c->g[k]) continue;
        for (size_t i = 0; i < c->n[k]; i++) {
            double save = in[k][i];
            in[k][i] = save + FD_H;
            double lp = loss_of(c, in, out, R);
            in[k][i] = save - FD_H;
            double lm = loss_of(c, in, out, R);
            in[k][i] = save;
            double num = (lp - lm) / (2 * FD_H);
            double e = fabs(c->g[k][i] - num) / fmax(1.0, fabs(num));
            if (e > GRAD_TOL)
                fprintf(stderr, "  %s: input %d [%zu] analytic %.7g numeric %.7g\n", c->name, k, i,
                        (double)c->g[k][i], num);
            grad_err = fmax(grad_err, e);
        }
    }
    printf("%-28s fwd max rel diff %.2e   grad max rel diff %.2e\n", c->name, fwd_err, grad_err);
    for (int k = 0; k < c->nin; k++) free(in[k]);
    free(out);
    free(R);
    assert_true(fwd_err <= FWD_TOL);
    assert_true(grad_err <= GRAD_TOL);
}

/* ---- linear ------------------------------------------------------------------ */

static void ref_linear(const opcase *c, double *const *in, double *out) {
    const double *x = in[0], *w = in[1], *b = in[2];
    for (int n = 0; n < c->N; n++)
        for (int o = 0; o < c->OC; o++) {
            double s = b[o];
            for (int i = 0; i < c->IC; i++) s += x[n * c->IC + i] * w[o * c->IC + i];
            out[n * c->OC + o] = s;
        }
}

static void test_linear(void **state) {
    (void)state;
    trng r = {1};
    int N = 7, IC = 5, OC = 4;
    float *x = frand(&r, N * IC, -1, 1), *w = frand(&r, OC * IC, -1, 1), *b = frand(&r, OC, -1, 1);
    float *out = fzeros(N * OC), *R = frand(&r, N * OC, -1, 1);
    float *dx = fzeros(N * IC), *dw = fzeros(OC * IC), *db = fzeros(OC);
    pc_linear_forward(out, x, w, b, N, IC, OC);
    pc_linear_backward(dx, dw, db, R, x, w, N, IC, OC);
    opcase c = {.name = "linear", .nin = 3, .n = {N * IC, OC * IC, OC}, .x = {x, w, b},
                .g = {dx, dw, db}, .nout = N * OC, .out = out, .R = R, .ref = ref_linear,
                .N = N, .IC = IC, .OC = OC};
    check_op(&c);
    free(x), free(w), free(b), free(out), free(R), free(dx), free(dw), free(db);
}

/* ---- residual and concat ---------------------------------------------------- */

static void ref_residual(const opcase *c, double *const *in, double *out) {
    for (size_t i = 0; i < c->nout; i++) out[i] = in[0][i] + in[1][i];
}

static void test_residual(void **state) {
    (void)state;
    trng r = {2};
    size_t n = 33;
    float *a = frand(&r, n, -1, 1), *b = frand(&r, n, -1, 1), *R = frand(&r, n, -1, 1);
    float *out = fzeros(n), *da = fzeros(n), *db = fzeros(n);
    pc_residual_forward(out, a, b, n);
    pc_residual_backward(da, db, R, n);
    opcase c = {.name = "residual", .nin = 2, .n = {n, n}, .x = {a, b}, .g = {da, db},
                .nout = n, .out = out, .R = R, .ref = ref_residual};
    check_op(&c);
    free(a), free(b), free(R), free(out), free(da), free(db);
}

static void ref_concat(const opcase *c, double *const *in, double *out) {
    int W = c->cs[0] + c->cs[1] + c->cs[2], col = 0;
    for (int j = 0; j < 3; j++) {
        for (int n = 0; n < c->N; n++)
            for (int k = 0; k < c->cs[j]; k++) out[n * W + col + k] = in[j][n * c->cs[j] + k];
        col += c->cs[j];
    }
}

static void test_concat(void **state) {
    (void)state;
    trng r = {3};
    int N = 5, cs[3] = {3, 1, 4}, W = 8;
    float *a = frand(&r, N * 3, -1, 1), *b = frand(&r, N * 1, -1, 1), *d = frand(&r, N * 4, -1, 1);
    float *R = frand(&r, N * W, -1, 1), *out = fzeros(N * W);
    float *da = fzeros(N * 3), *db = fzeros(N), *dd = fzeros(N * 4);
    const float *ins[3] = {a, b, d};
    float *dins[3] = {da, db, dd};
    pc_concat_forward(out, ins, cs, 3, N);
    pc_concat_backward(dins, R, cs, 3, N);
    opcase c = {.name = "concat", .nin = 3, .n = {N * 3, N, N * 4}, .x = {a, b, d},
                .g = {da, db, dd}, .nout = N * W, .out = out, .R = R, .ref = ref_concat, .N = N,
                .cs = {3, 1, 4}};
    check_op(&c);
    free(a), free(b), free(d), free(R), free(out), free(da), free(db), free(dd);
}

/* ---- gather / scatter / embedding -------------------------------------------- */

static void ref_gather(const opcase *c, double *const *in, double *out) {
    for (int k = 0; k < c->K; k++)
        for (int j = 0; j < c->C; j++) out[k * c->C + j] = in[0][c->idx[k] * c->C + j];
}

static void test_gather_and_embedding(void **state) {
    (void)state;
    trng r = {4};
    int Nx = 6, C = 3, K = 8;
    const int32_t idx[8] = {5, 0, 2, 2, 5, 1, 5, 0}; // duplicates; rows 3, 4 unused
    float *x = frand(&r, Nx * C, -1, 1), *R = frand(&r, K * C, -1, 1);
    float *out = fzeros(K * C), *dx = fzeros(Nx * C), *out2 = fzeros(K * C), *dx2 = fzeros(Nx * C);
    pc_gather_forward(out, x, idx, K, C);
    pc_gather_backward(dx, R, idx, K, Nx, C);
    opcase c = {.name = "gather", .nin = 1, .n = {Nx * C}, .x = {x}, .g = {dx}, .nout = K * C,
                .out = out, .R = R, .ref = ref_gather, .K = K, .C = C, .idx = idx};
    check_op(&c);
    pc_embedding_forward(out2, x, idx, K, C);
    pc_embedding_backward(dx2, R, idx, K, Nx, C);
    c.name = "embedding", c.out = out2, c.g[0] = dx2;
    check_op(&c);
    free(x), free(R), free(out), free(dx), free(out2), free(dx2);
}

static void ref_scatter(const opcase *c, double *const *in, double *out) {
    for (size_t i = 0; i < c->nout; i++) out[i] = in[0][i];
    for (int k = 0; k < c->K; k++)
        for (int j = 0; j < c->C; j++) out[c->idx[k] * c->C + j] += in[1][k * c->C + j];
}

static void test_scatter_add(void **state) {
    (void)state;
    trng r = {5};
    int Nout = 7, C = 2, K = 4;
    const int32_t idx[4] = {6, 1, 3, 1}; // configurable nodes, one repeated
    float *base = frand(&r, Nout * C, -1, 1), *src = frand(&r, K * C, -1, 1);
    float *R = frand(&r, Nout * C, -1, 1), *out = fzeros(Nout * C), *dsrc = fzeros(K * C);
    memcpy(out, base, sizeof(float) * Nout * C);
    pc_scatter_add_forward(out, src, idx, K, Nout, C);
    pc_scatter_add_backward(dsrc, R, idx, K, C);
    opcase c = {.name = "scatter_add", .nin = 2, .n = {Nout * C, K * C}, .x = {base, src},
                .g = {NULL, dsrc}, .nout = Nout * C, .out = out, .R = R, .ref = ref_scatter,
                .K = K, .C = C, .idx = idx};
    check_op(&c);
    free(base), free(src), free(R), free(out), free(dsrc);
}

/* ---- activations ------------------------------------------------------------ */

enum { ACT_RELU, ACT_LEAKY, ACT_GELU };

static double gelu_d(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

static void ref_act(const opcase *c, double *const *in, double *out) {
    for (size_t i = 0; i < c->nout; i++) {
        double x = in[0][i];
        if (c->mode == ACT_RELU) out[i] = x > 0 ? x : 0;
        else if (c->mode == ACT_LEAKY) out[i] = x > 0 ? x : c->slope * x;
        else out[i] = gelu_d(x);
    }
}

static void test_activations(void **state) {
    (void)state;
    trng r = {6};
    size_t n = 40;
    float slope = 0.1f;
    float *x = frand_away0(&r, n), *R = frand(&r, n, -1, 1);
    const char *names[3] = {"relu", "leaky_relu", "gelu"};
    for (int mode = 0; mode < 3; mode++) {
        float *out = fzeros(n), *dx = fzeros(n);
        if (mode == ACT_RELU) pc_relu_forward(out, x, n), pc_relu_backward(dx, R, x, n);
        if (mode == ACT_LEAKY)
            pc_leaky_relu_forward(out, x, slope, n), pc_leaky_relu_backward(dx, R, x, slope, n);
        if (mode == ACT_GELU) {
            for (size_t i = 0; i < n; i++) x[i] *= 3.0f; // cover the tails too
            pc_gelu_forward(out, x, n), pc_gelu_backward(dx, R, x, n);
        }
        opcase c = {.name = names[mode], .nin = 1, .n = {n}, .x = {x}, .g = {dx}, .nout = n,
                    .out = out, .R = R, .ref = ref_act, .mode = mode, .slope = slope};
        check_op(&c);
        free(out), free(dx);
    }
    free(x), free(R);
}

static void ref_prelu(const opcase *c, double *const *in, double *out) {
    for (int n = 0; n < c->N; n++)
        for (int j = 0; j < c->C; j++) {
            double x = in[0][n * c->C + j];
            out[n * c->C + j] = x >= 0 ? x : in[1][j] * x;
        }
}

static void test_prelu(void **state) {
    (void)state;
    trng r = {7};
    int N = 9, C = 4;
    float *x = frand_away0(&r, N * C), *a = frand(&r, C, 0.0f, 0.5f), *R = frand(&r, N * C, -1, 1);
    float *out = fzeros(N * C), *dx = fzeros(N * C), *da = fzeros(C);
    pc_prelu_forward(out, x, a, N, C);
    pc_prelu_backward(dx, da, R, x, a, N, C);
    opcase c = {.name = "prelu", .nin = 2, .n = {N * C, C}, .x = {x, a}, .g = {dx, da},
                .nout = N * C, .out = out, .R = R, .ref = ref_prelu, .N = N, .C = C};
    check_op(&c);
    free(x), free(a), free(R), free(out), free(dx), free(da);
}

/* ---- dropout -------------------------------------------------------------- */

static void ref_dropout(const opcase *c, double *const *in, double *out) {
    for (size_t i = 0; i < c->nout; i++) out[i] = c->mask[i] ? in[0][i] / (1.0 - c->p) : 0.0;
}

static void test_dropout_grad(void **state) {
    (void)state;
    trng r = {8};
    size_t n = 50;
    float p = 0.3f;
    uint64_t seed = 42;
    float *x = frand(&r, n, -1, 1), *R = frand(&r, n, -1, 1), *out = fzeros(n), *dx = fzeros(n);
    uint8_t *mask = malloc(n);
    pc_dropout_forward(out, mask, x, p, &seed, n);
    pc_dropout_backward(dx, R, mask, p, n);
    opcase c = {.name = "dropout", .nin = 1, .n = {n}, .x = {x}, .g = {dx}, .nout = n,
                .out = out, .R = R, .ref = ref_dropout, .p = p, .mask = mask};
    check_op(&c);
    free(x), free(R), free(out), free(dx), free(mask);
}

static void test_dropout_determinism(void **state) {
    (void)state;
    trng r = {9};
    size_t n = 100000;
    float p = 0.25f;
    float *x = frand(&r, n, 0.5f, 1.0f), *o1 = fzeros(n), *o2 = fzeros(n), *o3 = fzeros(n);
    uint8_t *m1 = malloc(n), *m2 = malloc(n), *m3 = malloc(n);
    uint64_t s1 = 123, s2 = 123;
    pc_dropout_forward(o1, m1, x, p, &s1, n);
    pc_dropout_forward(o2, m2, x, p, &s2, n);
    assert_int_equal(s1, s2);
    assert_true(s1 != 123); // the seed moves on
    assert_memory_equal(o1, o2, n * sizeof(float));
    assert_memory_equal(m1, m2, n);
    pc_dropout_forward(o3, m3, x, p, &s1, n); // next call: a different mask
    assert_true(memcmp(m1, m3, n) != 0);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        kept += m1[i];
        assert_true(o1[i] == (m1[i] ? x[i] * (1.0f / (1.0f - p)) : 0.0f));
    }
    double frac = (double)kept / (double)n;
    printf("dropout p=%.2f kept fraction %.4f\n", p, frac);
    assert_true(fabs(frac - (1.0 - p)) < 0.01);
    uint64_t s0 = 5;
    pc_dropout_forward(o3, m3, x, 0.0f, &s0, n); // evaluation: identity
    assert_memory_equal(o3, x, n * sizeof(float));
    free(x), free(o1), free(o2), free(o3), free(m1), free(m2), free(m3);
}

/* ---- normalization ----------------------------------------------------------- */

static void ref_layernorm(const opcase *c, double *const *in, double *out) {
    int C = c->C;
    for (int n = 0; n < c->N; n++) {
        const double *x = in[0] + n * C;
        double m = 0, v = 0;
        for (int j = 0; j < C; j++) m += x[j];
        m /= C;
        for (int j = 0; j < C; j++) v += (x[j] - m) * (x[j] - m);
        v /= C;
        double s = 1.0 / sqrt(v + c->eps);
        for (int j = 0; j < C; j++) out[n * C + j] = (x[j] - m) * s * in[1][j] + in[2][j];
    }
}

static void test_layernorm(void **state) {
    (void)state;
    trng r = {10};
    int N = 6, C = 5;
    float eps = 1e-5f;
    float *x = frand(&r, N * C, -2, 2), *gm = frand(&r, C, 0.5f, 1.5f), *bt = frand(&r, C, -1, 1);
    float *R = frand(&r, N * C, -1, 1), *out = fzeros(N * C), *mean = fzeros(N), *rstd = fzeros(N);
    float *dx = fzeros(N * C), *dg = fzeros(C), *dbt = fzeros(C);
    pc_layernorm_forward(out, mean, rstd, x, gm, bt, N, C, eps);
    pc_layernorm_backward(dx, dg, dbt, R, x, gm, mean, rstd, N, C);
    opcase c = {.name = "layernorm", .nin = 3, .n = {N * C, C, C}, .x = {x, gm, bt},
                .g = {dx, dg, dbt}, .nout = N * C, .out = out, .R = R, .ref = ref_layernorm,
                .N = N, .C = C, .eps = eps};
    check_op(&c);
    free(x), free(gm), free(bt), free(R), free(out), free(mean), free(rstd), free(dx), free(dg),
        free(dbt);
}

/* in: x, gamma, beta, alpha (alpha only when k3 == 1). */
static void ref_graphnorm(const opcase *c, double *const *in, double *out) {
    int C = c->C;
    for (int g = 0; g < c->G; g++) {
        int lo = c->off[g], hi = c->off[g + 1];
        if (hi <= lo) continue;
        for (int j = 0; j < C; j++) {
            double a = c->k3 ? in[3][j] : 1.0, m = 0, v = 0;
            for (int i = lo; i < hi; i++) m += in[0][i * C + j];
            m /= hi - lo;
            for (int i = lo; i < hi; i++) v += pow(in[0][i * C + j] - a * m, 2);
            v /= hi - lo;
            double s = 1.0 / sqrt(v + c->eps);
            for (int i = lo; i < hi; i++)
                out[i * C + j] = (in[0][i * C + j] - a * m) * s * in[1][j] + in[2][j];
        }
    }
}

static void run_graphnorm_case(int with_alpha) {
    trng r = {11};
    int G = 4, C = 3;
    const int32_t off[5] = {0, 4, 4, 9, 11}; // graph 1 is empty, graph 3 has two nodes
    int N = off[G];
    float eps = 1e-5f;
    float *x = frand(&r, N * C, -2, 2), *gm = frand(&r, C, 0.5f, 1.5f), *bt = frand(&r, C, -1, 1);
    float *al = frand(&r, C, 0.2f, 0.9f), *R = frand(&r, N * C, -1, 1), *out = fzeros(N * C);
    float *mean = fzeros(G * C), *rstd = fzeros(G * C);
    float *dx = fzeros(N * C), *dg = fzeros(C), *dbt = fzeros(C), *dal = fzeros(C);
    const float *alpha = with_alpha ? al : NULL;
    pc_graphnorm_forward(out, mean, rstd, x, alpha, gm, bt, off, G, C, eps);
    pc_graphnorm_backward(dx, dal, dg, dbt, R, x, alpha, gm, mean, rstd, off, G, C);
    opcase c = {.name = with_alpha ? "graphnorm" : "instancenorm", .nin = 3 + with_alpha,
                .n = {N * C, C, C, C}, .x = {x, gm, bt, al}, .g = {dx, dg, dbt, dal},
                .nout = N * C, .out = out, .R = R, .ref = ref_graphnorm, .C = C, .G = G,
                .off = off, .eps = eps, .k3 = with_alpha};
    check_op(&c);
    free(x), free(gm), free(bt), free(al), free(R), free(out), free(mean), free(rstd), free(dx),
        free(dg), free(dbt), free(dal);
}

static void test_graphnorm(void **state) {
    (void)state;
    run_graphnorm_case(1);
    run_graphnorm_case(0);
}

/* ---- edge aggregation ------------------------------------------------------- */

static void ref_edge_agg(const opcase *c, double *const *in, double *out) {
    int C = c->C;
    int *deg = calloc((size_t)c->N, sizeof(int));
    for (size_t i = 0; i < c->nout; i++) out[i] = 0;
    for (int e = 0; e < c->m; e++) {
        int u = c->edges[2 * e], v = c->edges[2 * e + 1];
        int d = c->dir == PC_EDGE_FROM_OPERANDS ? u : v, s = c->dir == PC_EDGE_FROM_OPERANDS ? v : u;
        deg[d]++;
        for (int j = 0; j < C; j++) out[d * C + j] += in[0][s * C + j];
    }
    if (c->mode == PC_REDUCE_MEAN)
        for (int d = 0; d < c->N; d++)
            for (int j = 0; j < C && deg[d]; j++) out[d * C + j] /= deg[d];
    free(deg);
}

static void test_edge_aggregate(void **state) {
    (void)state;
    trng r = {12};
    int N = 7, C = 3, m = 9;
    // u consumes v; a duplicate edge (3,1), node 6 isolated, node 0 a pure source
    const int32_t edges[18] = {1, 0, 2, 0, 2, 1, 3, 1, 3, 1, 3, 2, 4, 3, 5, 3, 5, 4};
    pc_csr csr;
    assert_int_equal(pc_csr_build(&csr, edges, m, N, NULL), PC_OK);
    float *x = frand(&r, N * C, -1, 1), *R = frand(&r, N * C, -1, 1);
    const char *names[2][2] = {{"edge_agg operands sum", "edge_agg operands mean"},
                               {"edge_agg users sum", "edge_agg users mean"}};
    for (int dir = 0; dir < 2; dir++)
        for (int mode = 0; mode < 2; mode++) {
            pc_reduce red = mode ? PC_REDUCE_MEAN : PC_REDUCE_SUM;
            float *out = fzeros(N * C), *dx = fzeros(N * C);
            pc_edge_aggregate_forward(out, x, &csr, (pc_edge_dir)dir, red, C);
            pc_edge_aggregate_backward(dx, R, &csr, (pc_edge_dir)dir, red, C);
            opcase c = {.name = names[dir][mode], .nin = 1, .n = {N * C}, .x = {x}, .g = {dx},
                        .nout = N * C, .out = out, .R = R, .ref = ref_edge_agg, .N = N, .C = C,
                        .edges = edges, .m = m, .dir = dir, .mode = red};
            check_op(&c);
            free(out), free(dx);
        }
    pc_csr_free(&csr);
    free(x), free(R);
}

static void test_csr_errors(void **state) {
    (void)state;
    const int32_t edges[4] = {0, 1, 1, 5};
    pc_csr csr;
    pc_error err;
    assert_int_equal(pc_csr_build(&csr, edges, 2, 3, &err), PC_ERR_RANGE);
    assert_non_null(strstr(err.msg, "edge_index[1][1]"));
    pc_csr_free(&csr); // zeroed by the failed build
    assert_int_equal(pc_csr_build(&csr, edges, 0, 0, &err), PC_OK); // empty graph
    pc_csr_free(&csr);
    pc_csr_free(NULL);
}

/* ---- pooling ---------------------------------------------------------------- */

static void ref_pool(const opcase *c, double *const *in, double *out) {
    int C = c->C;
    for (int g = 0; g < c->G; g++)
        for (int j = 0; j < C; j++) {
            int lo = c->off[g], hi = c->off[g + 1];
            double acc = c->mode == PC_REDUCE_MAX && hi > lo ? -INFINITY : 0.0;
            for (int i = lo; i < hi; i++) {
                double x = in[0][i * C + j];
                acc = c->mode == PC_REDUCE_MAX ? fmax(acc, x) : acc + x;
            }
            if (c->mode == PC_REDUCE_MEAN && hi > lo) acc /= hi - lo;
            out[g * C + j] = acc;
        }
}

static void test_pool(void **state) {
    (void)state;
    trng r = {13};
    int G = 4, C = 3;
    const int32_t off[5] = {0, 3, 3, 8, 9}; // an empty graph and a single-node graph
    int N = off[G];
    // distinct values spaced 0.05 apart: no max ties within finite-difference reach
    float *x = fzeros(N * C);
    for (int i = 0; i < N * C; i++) x[i] = -1.0f + 0.05f * (float)i;
    for (int i = N * C - 1; i > 0; i--) { // shuffle
        int j = (int)(trng_next(&r) % (uint64_t)(i + 1));
        float t = x[i];
        x[i] = x[j], x[j] = t;
    }
    float *R = frand(&r, G * C, -1, 1);
    int32_t *am = calloc((size_t)(G * C), sizeof(int32_t));
    const char *names[3] = {"pool sum", "pool mean", "pool max"};
    for (int mode = 0; mode < 3; mode++) {
        float *out = fzeros(G * C), *dx = fzeros(N * C);
        pc_pool_forward(out, am, x, off, G, C, (pc_reduce)mode);
        pc_pool_backward(dx, R, am, off, G, C, (pc_reduce)mode);
        opcase c = {.name = names[mode], .nin = 1, .n = {N * C}, .x = {x}, .g = {dx},
                    .nout = G * C, .out = out, .R = R, .ref = ref_pool, .G = G, .C = C,
                    .off = off, .mode = mode};
        check_op(&c);
        if (mode == PC_REDUCE_MAX) assert_int_equal(am[1 * C + 0], -1); // empty graph
        free(out), free(dx);
    }
    free(x), free(R), free(am);
}

/* ---- arena, clipping, Adam, schedule ------------------------------------------- */

static void test_params_arena(void **state) {
    (void)state;
    pc_params p;
    pc_params_init(&p);
    int i0 = -1, i1 = -1, s0[2] = {3, 4}, s1[1] = {5}, bad[1] = {0};
    assert_int_equal(pc_params_add(&p, "w", 2, s0, &i0, NULL), PC_OK);
    assert_int_equal(pc_params_add(&p, "b", 1, s1, &i1, NULL), PC_OK);
    assert_int_equal(pc_params_add(&p, "w", 1, s1, NULL, NULL), PC_ERR_ARG);
    assert_int_equal(pc_params_add(&p, "z", 1, bad, NULL, NULL), PC_ERR_RANGE);
    assert_int_equal(p.numel, 17);
    assert_int_equal(pc_params_alloc(&p, NULL), PC_OK);
    assert_int_equal(pc_params_add(&p, "late", 1, s1, NULL, NULL), PC_ERR_ARG);
    assert_int_equal(pc_params_find(&p, "b"), i1);
    assert_int_equal(pc_params_find(&p, "nope"), -1);
    assert_ptr_equal(pc_params_data(&p, i1), p.data + 12);
    assert_ptr_equal(pc_params_grad(&p, i1), p.grad + 12);
    for (size_t i = 0; i < p.numel; i++) p.grad[i] = 1.0f;
    pc_params_zero_grad(&p);
    for (size_t i = 0; i < p.numel; i++) assert_true(p.grad[i] == 0.0f);
    pc_params_free(&p);
    pc_params_free(NULL);
}

static void test_clip(void **state) {
    (void)state;
    float g[2] = {3.0f, 4.0f};
    assert_true(pc_clip_grad_norm(g, 2, 10.0f) == 5.0); // below: untouched
    assert_true(g[0] == 3.0f && g[1] == 4.0f);
    assert_true(pc_clip_grad_norm(g, 2, 1.0f) == 5.0);
    assert_float_equal(g[0], 0.6f, 1e-7f);
    assert_float_equal(g[1], 0.8f, 1e-7f);
    double n2 = sqrt((double)g[0] * g[0] + (double)g[1] * g[1]);
    assert_true(fabs(n2 - 1.0) < 1e-7);
}

/* Adam/AdamW in double, straight from the papers' pseudo-code. */
static double adam_ref(double p, const double *grads, int steps, double lr, double wd,
                       int decoupled) {
    double m = 0, v = 0, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    for (int t = 1; t <= steps; t++) {
        double g = grads[t - 1] + (decoupled ? 0 : wd * p);
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
        double step = (m / (1 - pow(b1, t))) / (sqrt(v / (1 - pow(b2, t))) + eps);
        p -= lr * (step + (decoupled ? wd * p : 0));
    }
    return p;
}

static void test_adam(void **state) {
    (void)state;
    // hand-computed first step: mhat/sqrt(vhat) = g/|g|, so p moves by lr against the sign
    float p = 1.0f, g = 0.5f, m = 0, v = 0;
    pc_adam_cfg cfg = pc_adam_cfg_default();
    pc_adam_step(&p, &g, &m, &v, 1, &cfg, 1, 0.1f);
    assert_float_equal(p, 0.9f, 1e-6f);
    // 1 - 0.9f and 1 - 0.999f are off by 2e-7 and 4e-5 relative in float
    assert_float_equal(m, 0.05f, 1e-7f);
    assert_float_equal(v, 0.00025f, 2e-8f);

    const double grads[4] = {0.5, -0.3, 0.8, 0.1};
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        cfg.weight_decay = 0.1f;
        cfg.decoupled = decoupled;
        float pf = 1.0f, mf = 0, vf = 0;
        for (int t = 1; t <= 4; t++) {
            float gf = (float)grads[t - 1];
            pc_adam_step(&pf, &gf, &mf, &vf, 1, &cfg, t, 0.01f);
        }
        double want = adam_ref(1.0, grads, 4, 0.01, 0.1, decoupled);
        printf("%s 4 steps: %.8f, reference %.8f\n", decoupled ? "AdamW" : "Adam", (double)pf,
               want);
        assert_true(fabs(pf - want) < 1e-6);
    }
    // Adam's L2 and AdamW's decoupled decay differ
    assert_true(fabs(adam_ref(1.0, grads, 4, 0.01, 0.1, 0) - adam_ref(1.0, grads, 4, 0.01, 0.1, 1)) >
                1e-6);
}

static void test_cosine(void **state) {
    (void)state;
    float base = 1e-3f, lo = 1e-5f;
    assert_float_equal(pc_lr_cosine(0, base, lo, 10, 110), 1e-4f, 1e-10f);
    assert_float_equal(pc_lr_cosine(4, base, lo, 10, 110), 5e-4f, 1e-10f);
    assert_float_equal(pc_lr_cosine(9, base, lo, 10, 110), base, 1e-10f);
    assert_float_equal(pc_lr_cosine(10, base, lo, 10, 110), base, 1e-10f);
    assert_float_equal(pc_lr_cosine(60, base, lo, 10, 110), lo + 0.5f * (base - lo), 1e-10f);
    assert_float_equal(pc_lr_cosine(110, base, lo, 10, 110), lo, 1e-12f);
    assert_float_equal(pc_lr_cosine(500, base, lo, 10, 110), lo, 1e-12f);
    assert_float_equal(pc_lr_cosine(0, base, lo, 0, 100), base, 1e-10f); // no warmup
    for (long s = 11; s <= 110; s++) // monotone after warmup
        assert_true(pc_lr_cosine(s, base, lo, 10, 110) <= pc_lr_cosine(s - 1, base, lo, 10, 110));
}

/* ---- determinism across thread counts ------------------------------------------- */

/*
 * Runs every op forward and backward on one random graph and appends all
 * outputs to sink; returns the number of floats written.
 */
static size_t run_all_ops(float *sink, const float *x, const float *w, const int32_t *edges, int m,
                          const int32_t *off, int G, int N, int C) {
    size_t at = 0, nc = (size_t)N * C;
    pc_csr csr;
    assert_int_equal(pc_csr_build(&csr, edges, m, N, NULL), PC_OK);
    float *a = fzeros(nc), *b = fzeros(nc), *d = fzeros(nc), *mean = fzeros(nc), *rstd = fzeros(nc);
    float *gam = fzeros(C), *bet = fzeros(C), *dg = fzeros(C), *dbt = fzeros(C), *dw = fzeros(C * C);
    int32_t *am = calloc((size_t)G * C, sizeof(int32_t));
    uint8_t *mask = malloc(nc);
    uint64_t seed = 99;
    for (int j = 0; j < C; j++) gam[j] = 1.0f + 0.01f * (float)j;
#define KEEP(ptr, cnt) (memcpy(sink + at, (ptr), (cnt) * sizeof(float)), at += (cnt))
    pc_linear_forward(a, x, w, NULL, N, C, C);
    KEEP(a, nc);
    pc_linear_backward(d, dw, NULL, x, x, w, N, C, C);
    KEEP(d, nc), KEEP(dw, (size_t)C * C);
    for (int dir = 0; dir < 2; dir++) {
        pc_edge_aggregate_forward(b, x, &csr, (pc_edge_dir)dir, PC_REDUCE_MEAN, C);
        pc_edge_aggregate_backward(d, x, &csr, (pc_edge_dir)dir, PC_REDUCE_MEAN, C);
        KEEP(b, nc), KEEP(d, nc);
    }
    pc_graphnorm_forward(b, mean, rstd, x, gam, gam, bet, off, G, C, 1e-5f);
    pc_graphnorm_backward(d, dg, dg, dbt, x, x, gam, gam, mean, rstd, off, G, C);
    KEEP(b, nc), KEEP(d, nc), KEEP(dg, (size_t)C), KEEP(dbt, (size_t)C);
    pc_layernorm_forward(b, mean, rstd, x, gam, bet, N, C, 1e-5f);
    pc_layernorm_backward(d, dg, dbt, x, x, gam, mean, rstd, N, C);
    KEEP(b, nc), KEEP(d, nc), KEEP(dg, (size_t)C), KEEP(dbt, (size_t)C);
    pc_gelu_forward(b, x, nc), pc_gelu_backward(d, x, x, nc);
    KEEP(b, nc), KEEP(d, nc);
    pc_prelu_forward(b, x, gam, N, C), pc_prelu_backward(d, dg, x, x, gam, N, C);
    KEEP(b, nc), KEEP(d, nc), KEEP(dg, (size_t)C);
    pc_dropout_forward(b, mask, x, 0.1f, &seed, nc);
    KEEP(b, nc);
    // scatter-add with repeated rows: the K = N edge endpoints as indices
    pc_gather_backward(d, x, edges, 2 * m > N ? N : 2 * m, N, C);
    KEEP(d, nc);
    for (int mode = 0; mode < 3; mode++) {
        pc_pool_forward(b, am, x, off, G, C, (pc_reduce)mode);
        pc_pool_backward(d, x, am, off, G, C, (pc_reduce)mode);
        KEEP(b, (size_t)G * C), KEEP(d, nc);
    }
    pc_clip_grad_norm(d, nc, 1.0f);
    pc_adam_cfg cfg = pc_adam_cfg_default();
    cfg.decoupled = 1, cfg.weight_decay = 0.01f;
    pc_adam_step(a, d, b, mean, nc, &cfg, 3, 1e-3f);
    KEEP(a, nc);
#undef KEEP
    pc_csr_free(&csr);
    free(a), free(b), free(d), free(mean), free(rstd), free(gam), free(bet), free(dg), free(dbt),
        free(dw), free(am), free(mask);
    return at;
}

/* Per-call thread counts (common/threads.h): scoped, nested, never the process's. */
static void test_threads_scope(void **state) {
    (void)state;
    int def = omp_get_max_threads();
    assert_int_equal(pc_threads(), def);
    int outer = pc_threads_begin(3);
    assert_int_equal(pc_threads(), 3);
    int inner = pc_threads_begin(0); /* 0 keeps the enclosing call's count */
    assert_int_equal(pc_threads(), 3);
    int inner2 = pc_threads_begin(1);
    assert_int_equal(pc_threads(), 1);
    int team = 0;
#pragma omp parallel num_threads(pc_threads())
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    assert_int_equal(team, 1);
    pc_threads_end(inner2);
    assert_int_equal(pc_threads(), 3);
    pc_threads_end(inner);
    pc_threads_end(outer);
    assert_int_equal(pc_threads(), def);
    assert_int_equal(omp_get_max_threads(), def);
}

static void test_threads_identical(void **state) {
    (void)state;
    trng r = {14};
    // big enough that every loop and GEMM takes its parallel path (PC_PAR_MIN, PC_GEMM_PAR_MIN)
    int N = 6000, C = 16, m = 15000, G = 5;
    const int32_t off[6] = {0, 1000, 2500, 2500, 4200, 6000};
    int32_t *edges = malloc(sizeof(int32_t) * 2 * (size_t)m);
    for (int e = 0; e < m; e++) { // edges inside each graph, u consumes v < u
        int g = (int)(trng_next(&r) % 5);
        int lo = off[g], n = off[g + 1] - lo;
        if (n < 2) g = 0, lo = 0, n = 1000;
        int u = lo + 1 + (int)(trng_next(&r) % (uint64_t)(n - 1));
        edges[2 * e] = u;
        edges[2 * e + 1] = lo + (int)(trng_next(&r) % (uint64_t)(u - lo));
    }
    float *x = frand(&r, (size_t)N * C, -1, 1), *w = frand(&r, (size_t)C * C, -1, 1);
    size_t cap = (size_t)N * C * 40;
    float *s1 = fzeros(cap), *s2 = fzeros(cap);
    int before = omp_get_max_threads();
    pc_nn_blas_single();
    int saved = pc_threads_begin(1);
    size_t n1 = run_all_ops(s1, x, w, edges, m, off, G, N, C);
    pc_threads_end(saved);
    saved = pc_threads_begin(2);
    size_t n2 = run_all_ops(s2, x, w, edges, m, off, G, N, C);
    pc_threads_end(saved);
    assert_int_equal(omp_get_max_threads(), before); /* the process's count is left alone */
    assert_true(n1 <= cap);
    assert_int_equal(n1, n2);
    assert_memory_equal(s1, s2, n1 * sizeof(float));
    free(edges), free(x), free(w), free(s1), free(s2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_residual),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_gather_and_embedding),
        cmocka_unit_test(test_scatter_add),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_dropout_grad),
        cmocka_unit_test(test_dropout_determinism),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_graphnorm),
        cmocka_unit_test(test_edge_aggregate),
        cmocka_unit_test(test_csr_errors),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_params_arena),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_adam),
        cmocka_unit_test(test_cosine),
        cmocka_unit_test(test_threads_scope),
        cmocka_unit_test(test_threads_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
