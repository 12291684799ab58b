/*
 * Unit tests for the cross-configuration attention (src/nn/attention.c):
 *
 * - fd_*: float forward against a double reference forward written here,
 *   and float backward against central finite differences (in double) of
 *   that reference for L = sum(out * R), R random, for x and every
 *   parameter; also that backward accumulates and ignores stale scratch.
 * - golden: against PyTorch (torch.nn.MultiheadAttention + F.layer_norm in
 *   float64), tests/golden/golden_attention.npz from
 *   tests/golden/make_attention_golden.py, found at
 *   $PC_TEST_DATA/../golden as in test_golden.c.
 * - k1_identity: K == 1 gives A = 1 and out = x + (y Wv^T + bv) Wo^T + bo.
 * - permutation: permuting the rows of a group permutes out and dx and
 *   leaves the parameter gradients unchanged (to rounding).
 * - threads_identical: bitwise equal results with 1 and 2 OpenMP threads.
 *
 * Tolerances: forward |f - d| / max(1, |d|) <= 1e-5, gradients
 * |analytic - numeric| / max(1, |numeric|) <= 1e-4 (max printed per case);
 * golden: |c - r| <= 1e-5 |r| + 1e-5 max|r of that tensor| (max rel diff
 * printed per tensor).
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

#include "common/threads.h"
#include "nn/nn.h"
#include "perfcast/npz.h"

#define FWD_TOL 1e-5
#define GRAD_TOL 1e-4
#define FD_H 1e-6
#define GOLD_RTOL 1e-5
#define GOLD_ATOL 1e-5
#define EPS 1e-5f

/* ---- random numbers (as test_nn_ops.c) --------------------------------------- */

typedef struct trng {
    uint64_t s;
} trng;

static uint64_t trng_next(trng *r) {
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static float trng_unif(trng *r, float lo, float hi) {
    double u = (double)(trng_next(r) >> 11) * 0x1.0p-53;
    return (float)(lo + (hi - lo) * u);
}

static float *fzeros(size_t n) {
    float *x = calloc(n ? n : 1, sizeof(float));
    assert_non_null(x);
    return x;
}

static float *fnan(size_t n) { // stale buffer contents that must not matter
    float *x = fzeros(n);
    for (size_t i = 0; i < n; i++) x[i] = NAN;
    return x;
}

/* ---- one attention instance ---------------------------------------------------- */

/* Tensor slots: x, then the parameters in pc_cfg_attn_params order. */
enum { T_X, T_LNG, T_LNB, T_WQ, T_WK, T_WV, T_WO, T_BQ, T_BK, T_BV, T_BO, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x",  "ln_g", "ln_b", "wq", "wk", "wv",
                                           "wo", "bq",   "bk",   "bv", "bo"};

typedef struct acase {
    int G, K, C, heads, ln, bias;
    float eps;
    float *t[T_COUNT];  /* values; NULL when absent */
    float *gt[T_COUNT]; /* gradients (same presence) */
    float *out, *cache, *scratch, *R;
} acase;

static size_t tsize(const acase *a, int i) {
    size_t C = (size_t)a->C;
    if (i == T_X) return (size_t)a->G * a->K * C;
    if (i >= T_WQ && i <= T_WO) return C * C;
    return C;
}

static int tpresent(const acase *a, int i) {
    if (i == T_LNG || i == T_LNB) return a->ln;
    if (i >= T_BQ) return a->bias;
    return 1;
}

/* Allocates everything; fills x, parameters and R randomly when r != NULL. */
static void acase_init(acase *a, int G, int K, int C, int heads, int ln, int bias, trng *r) {
    memset(a, 0, sizeof *a);
    a->G = G, a->K = K, a->C = C, a->heads = heads, a->ln = ln, a->bias = bias, a->eps = EPS;
    for (int i = 0; i < T_COUNT; i++) {
        if (!tpresent(a, i)) continue;
        size_t n = tsize(a, i);
        a->t[i] = fzeros(n), a->gt[i] = fzeros(n);
        if (!r) continue;
        for (size_t j = 0; j < n; j++) {
            float v = trng_unif(r, -1, 1);
            if (i == T_LNG) v = 1.0f + 0.3f * v;
            else if (i >= T_WQ && i <= T_WO) v *= 1.2f; // a peaked softmax, not a uniform one
            a->t[i][j] = v;
        }
    }
    size_t RC = tsize(a, T_X);
    a->out = fzeros(RC), a->R = fzeros(RC);
    if (r)
        for (size_t j = 0; j < RC; j++) a->R[j] = trng_unif(r, -1, 1);
    a->cache = fnan(pc_cfg_attention_cache_size(G, K, C, heads, ln));
    a->scratch = fnan(pc_cfg_attention_scratch_size(G, K, C, heads, ln));
}

static void acase_free(acase *a) {
    for (int i = 0; i < T_COUNT; i++) free(a->t[i]), free(a->gt[i]);
    free(a->out), free(a->cache), free(a->scratch), free(a->R);
}

static pc_cfg_attn_params params_of(const acase *a) {
    pc_cfg_attn_params p = {a->t[T_LNG], a->t[T_LNB], a->t[T_WQ], a->t[T_WK], a->t[T_WV],
                            a->t[T_WO],  a->t[T_BQ],  a->t[T_BK], a->t[T_BV], a->t[T_BO]};
    return p;
}

static pc_cfg_attn_grads grads_of(const acase *a) {
    pc_cfg_attn_grads g = {a->gt[T_LNG], a->gt[T_LNB], a->gt[T_WQ], a->gt[T_WK], a->gt[T_WV],
                           a->gt[T_WO],  a->gt[T_BQ],  a->gt[T_BK], a->gt[T_BV], a->gt[T_BO]};
    return g;
}

static void run_forward(acase *a) {
    pc_cfg_attn_params p = params_of(a);
    pc_cfg_attention_forward(a->out, a->cache, a->t[T_X], &p, a->G, a->K, a->C, a->heads,
                             a->eps);
}

/* Backward with dout = R into the (not zeroed) gradients. */
static void run_backward(acase *a) {
    pc_cfg_attn_params p = params_of(a);
    pc_cfg_attn_grads g = grads_of(a);
    pc_cfg_attention_backward(a->gt[T_X], &g, a->R, a->t[T_X], a->cache, &p, a->G, a->K, a->C,
                              a->heads, a->scratch);
}

/* ---- double reference --------------------------------------------------------- */

/* out (n,oc) = in (n,ic) w^T + b (b may be NULL) */
static void dlinear(double *out, const double *in, const double *w, const double *b, int n,
                    int ic, int oc) {
    for (int r = 0; r < n; r++)
        for (int o = 0; o < oc; o++) {
            double s = b ? b[o] : 0.0;
            for (int i = 0; i < ic; i++) s += in[r * ic + i] * w[o * ic + i];
            out[r * oc + o] = s;
        }
}

static void ref_forward(const acase *a, double *const *in, double *out) {
    int G = a->G, K = a->K, C = a->C, H = a->heads, d = C / H, R = G * K;
    size_t RC = (size_t)R * C;
    double *y = malloc(RC * sizeof(double)), *q = malloc(RC * sizeof(double)),
           *k = malloc(RC * sizeof(double)), *v = malloc(RC * sizeof(double)),
           *ctx = malloc(RC * sizeof(double)), *s = malloc((size_t)K * sizeof(double));
    const double *x = in[T_X];
    for (int r = 0; r < R; r++) {
        const double *xr = x + (size_t)r * C;
        if (!a->ln) {
            memcpy(y + (size_t)r * C, xr, (size_t)C * sizeof(double));
            continue;
        }
        double m = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) m += xr[c];
        m /= C;
        for (int c = 0; c < C; c++) var += (xr[c] - m) * (xr[c] - m);
        var /= C;
        double rs = 1.0 / sqrt(var + (double)a->eps);
        for (int c = 0; c < C; c++)
            y[(size_t)r * C + c] = (xr[c] - m) * rs * in[T_LNG][c] + in[T_LNB][c];
    }
    dlinear(q, y, in[T_WQ], in[T_BQ], R, C, C);
    dlinear(k, y, in[T_WK], in[T_BK], R, C, C);
    dlinear(v, y, in[T_WV], in[T_BV], R, C, C);
    for (int g = 0; g < G; g++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < K; i++) {
                const double *qi = q + (size_t)(g * K + i) * C + h * d;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j < K; j++) {
                    const double *kj = k + (size_t)(g * K + j) * C + h * d;
                    double dot = 0.0;
                    for (int e = 0; e < d; e++) dot += qi[e] * kj[e];
                    s[j] = dot / sqrt((double)d);
                    mx = fmax(mx, s[j]);
                }
                for (int j = 0; j < K; j++) sum += (s[j] = exp(s[j] - mx));
                for (int e = 0; e < d; e++) {
                    double acc = 0.0;
                    for (int j = 0; j < K; j++) acc += s[j] / sum * v[(size_t)(g * K + j) * C + h * d + e];
                    ctx[(size_t)(g * K + i) * C + h * d + e] = acc;
                }
            }
    dlinear(out, ctx, in[T_WO], in[T_BO], R, C, C);
    for (size_t i = 0; i < RC; i++) out[i] += x[i];
    free(y), free(q), free(k), free(v), free(ctx), free(s);
}

static double ref_loss(const acase *a, double *const *in, double *out) {
    ref_forward(a, in, out);
    double L = 0.0;
    size_t n = tsize(a, T_X);
    for (size_t i = 0; i < n; i++) L += out[i] * a->R[i];
    return L;
}

/* ---- finite differences ---------------------------------------------------------- */

static void fd_case(const char *name, int G, int K, int C, int heads, int ln, int bias,
                    uint64_t seed) {
    trng r = {seed};
    acase a;
    acase_init(&a, G, K, C, heads, ln, bias, &r);
    run_forward(&a);
    run_backward(&a);

    double *in[T_COUNT] = {0};
    for (int i = 0; i < T_COUNT; i++) {
        if (!a.t[i]) continue;
        size_t n = tsize(&a, i);
        in[i] = malloc(n * sizeof(double));
        for (size_t j = 0; j < n; j++) in[i][j] = a.t[i][j];
    }
    size_t RC = tsize(&a, T_X);
    double *out = malloc(RC * sizeof(double));
    ref_forward(&a, in, out);
    double fwd = 0.0;
    for (size_t j = 0; j < RC; j++)
        fwd = fmax(fwd, fabs(a.out[j] - out[j]) / fmax(1.0, fabs(out[j])));

    double worst = 0.0;
    for (int i = 0; i < T_COUNT; i++) {
        if (!in[i]) continue;
        double terr = 0.0;
        for (size_t j = 0; j < tsize(&a, i); j++) {
            double save = in[i][j];
            in[i][j] = save + FD_H;
            double lp = ref_loss(&a, in, out);
            in[i][j] = save - FD_H;
            double lm = ref_loss(&a, in, out);
            in[i][j] = save;
            double num = (lp - lm) / (2 * FD_H);
            double e = fabs(a.gt[i][j] - num) / fmax(1.0, fabs(num));
            if (e > GRAD_TOL)
                fprintf(stderr, "  %s: %s[%zu] analytic %.7g numeric %.7g\n", name, TNAME[i], j,
                        (double)a.gt[i][j], num);
            terr = fmax(terr, e);
        }
        worst = fmax(worst, terr);
    }
    printf("%-34s fwd max rel diff %.2e   grad max rel diff %.2e\n", name, fwd, worst);
    assert_true(fwd <= FWD_TOL);
    assert_true(worst <= GRAD_TOL);

    // backward accumulates: a second call adds the same gradients again
    float *first[T_COUNT] = {0};
    for (int i = 0; i < T_COUNT; i++)
        if (a.gt[i]) {
            first[i] = fzeros(tsize(&a, i));
            memcpy(first[i], a.gt[i], tsize(&a, i) * sizeof(float));
        }
    for (size_t j = 0; j < pc_cfg_attention_scratch_size(G, K, C, heads, ln); j++)
        a.scratch[j] = NAN;
    run_backward(&a);
    for (int i = 0; i < T_COUNT; i++)
        for (size_t j = 0; first[i] && j < tsize(&a, i); j++) {
            double want = 2.0 * first[i][j];
            assert_true(fabs(a.gt[i][j] - want) <= 1e-6 * fmax(1.0, fabs(want)));
        }
    for (int i = 0; i < T_COUNT; i++) free(in[i]), free(first[i]);
    free(out);
    acase_free(&a);
}

static void test_fd_ln_bias_heads2(void **state) {
    (void)state;
    fd_case("fd G2 K5 C8 h2 layernorm bias", 2, 5, 8, 2, 1, 1, 11);
}

static void test_fd_plain(void **state) {
    (void)state;
    fd_case("fd G1 K6 C8 h1 plain", 1, 6, 8, 1, 0, 0, 12);
}

static void test_fd_heads3_bias(void **state) {
    (void)state;
    fd_case("fd G3 K4 C6 h3 bias", 3, 4, 6, 3, 0, 1, 13);
}

static void test_fd_k1(void **state) {
    (void)state;
    fd_case("fd G3 K1 C4 h2 layernorm bias", 3, 1, 4, 2, 1, 1, 14);
}

/* ---- golden (PyTorch) ------------------------------------------------------------ */

typedef struct gfile {
    pc_npz *z;
    char path[1024];
} gfile;

static void gread(gfile *f, const char *key, pc_dtype t, pc_array *a) {
    int i = pc_npz_find(f->z, key);
    if (i < 0) fail_msg("%s: no member %s", f->path, key);
    pc_error err;
    if (pc_npz_read(f->z, i, a, &err) || pc_array_convert(a, t, key, &err))
        fail_msg("%s: %s: %s", f->path, key, err.msg);
}

/*
 * Prints and checks c (float) against r (double); returns the max rel diff.
 * floor stands in for max|r| when that is smaller (dbk, exactly 0 in the
 * file, is checked against the scale of dbq).
 */
static double gcompare(const char *what, const float *c, const double *r, size_t n,
                       double floor, int *ok) {
    double rmax = floor, amax = 0.0, rel = 0.0;
    for (size_t i = 0; i < n; i++) rmax = fmax(rmax, fabs(r[i]));
    int good = 1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)c[i] - r[i]);
        amax = fmax(amax, d);
        // relative to the element, floored at 1e-3 of the tensor's largest
        // (near-zero entries are pure rounding on both sides)
        rel = fmax(rel, d / fmax(fabs(r[i]), 1e-3 * rmax + 1e-30));
        if (!(d <= GOLD_RTOL * fabs(r[i]) + GOLD_ATOL * rmax)) good = 0;
    }
    print_message("  %-6s n=%-3zu max|ref| %.3e  max abs diff %.3e (%.1e of max|ref|)  "
                  "max rel diff %.3e%s\n",
                  what, n, rmax, amax, amax / rmax, rel, good ? "" : "  FAIL");
    if (!good) *ok = 0;
    return rel;
}

static void golden_case(gfile *f, const char *name) {
    char key[64];
    pc_array meta = PC_ARRAY_INIT, eps = PC_ARRAY_INIT, arr = PC_ARRAY_INIT;
    snprintf(key, sizeof key, "meta.%s", name);
    gread(f, key, PC_DTYPE_I32, &meta);
    snprintf(key, sizeof key, "eps.%s", name);
    gread(f, key, PC_DTYPE_F64, &eps);
    const int32_t *m = meta.data;
    acase a;
    acase_init(&a, m[0], m[1], m[2], m[3], m[4], m[5], NULL);
    a.eps = (float)((const double *)eps.data)[0];
    print_message("golden %s: G %d K %d C %d heads %d layernorm %d bias %d\n", name, a.G, a.K,
                  a.C, a.heads, a.ln, a.bias);
    pc_array_free(&meta), pc_array_free(&eps);
    for (int i = 0; i < T_COUNT; i++) {
        if (!a.t[i]) continue;
        if (i == T_X) snprintf(key, sizeof key, "x.%s", name);
        else snprintf(key, sizeof key, "p.%s.%s", name, TNAME[i]);
        gread(f, key, PC_DTYPE_F32, &arr);
        assert_int_equal(pc_array_count(&arr), (int64_t)tsize(&a, i));
        memcpy(a.t[i], arr.data, tsize(&a, i) * sizeof(float));
        pc_array_free(&arr);
    }
    size_t RC = tsize(&a, T_X);
    snprintf(key, sizeof key, "r.%s", name);
    gread(f, key, PC_DTYPE_F32, &arr);
    memcpy(a.R, arr.data, RC * sizeof(float));
    pc_array_free(&arr);

    run_forward(&a);
    run_backward(&a);

    int ok = 1;
    double worst = 0.0;
    snprintf(key, sizeof key, "out.%s", name);
    gread(f, key, PC_DTYPE_F64, &arr);
    worst = fmax(worst, gcompare("out", a.out, arr.data, RC, 0.0, &ok));
    pc_array_free(&arr);
    double bq_max = 0.0;
    for (int i = 0; i < T_COUNT; i++) {
        if (!a.t[i]) continue;
        snprintf(key, sizeof key, "g.%s.%s", name, TNAME[i]);
        gread(f, key, PC_DTYPE_F64, &arr);
        const double *r = arr.data;
        if (i == T_BQ)
            for (size_t j = 0; j < tsize(&a, i); j++) bq_max = fmax(bq_max, fabs(r[j]));
        char what[32];
        snprintf(what, sizeof what, "d%s", TNAME[i]);
        double rel = gcompare(what, a.gt[i], r, tsize(&a, i), i == T_BK ? bq_max : 0.0, &ok);
        if (i != T_BK) worst = fmax(worst, rel); // dbk is 0 in exact arithmetic: rounding only
        pc_array_free(&arr);
    }
    print_message("golden %s: max rel diff %.3e\n", name, worst);
    acase_free(&a);
    assert_true(ok);
}

static void test_golden_torch(void **state) {
    (void)state;
    gfile f;
    const char *data = getenv("PC_TEST_DATA");
    snprintf(f.path, sizeof f.path, "%s/../golden/golden_attention.npz",
             data ? data : "tests/data");
    pc_error err;
    if (pc_npz_open(f.path, &f.z, &err)) fail_msg("%s: %s", f.path, err.msg);
    golden_case(&f, "ln");
    golden_case(&f, "plain");
    pc_npz_close(f.z);
}

/* ---- K == 1 -------------------------------------------------------------------- */

static void test_k1_identity(void **state) {
    (void)state;
    trng r = {21};
    int G = 4, C = 8;
    acase a;
    acase_init(&a, G, 1, C, 2, 1, 1, &r);
    run_forward(&a);
    const float *att = pc_cfg_attention_att(a.cache, G, 1, C, 1);
    for (int i = 0; i < G * 2; i++) assert_true(att[i] == 1.0f);
    // out = x + (LN(x) Wv^T + bv) Wo^T + bo, with the same kernels: bitwise
    float *y = fzeros((size_t)G * C), *v = fzeros((size_t)G * C), *o = fzeros((size_t)G * C);
    float *mean = fzeros(G), *rstd = fzeros(G);
    pc_layernorm_forward(y, mean, rstd, a.t[T_X], a.t[T_LNG], a.t[T_LNB], G, C, EPS);
    pc_linear_forward(v, y, a.t[T_WV], a.t[T_BV], G, C, C);
    pc_linear_forward(o, v, a.t[T_WO], a.t[T_BO], G, C, C);
    pc_residual_forward(o, o, a.t[T_X], (size_t)G * C);
    assert_memory_equal(o, a.out, (size_t)G * C * sizeof(float));
    // no gradient reaches Q and K: A is constant
    run_backward(&a);
    for (int i = 0; i < C * C; i++) assert_true(a.gt[T_WQ][i] == 0.0f && a.gt[T_WK][i] == 0.0f);
    for (int i = 0; i < C; i++) assert_true(a.gt[T_BQ][i] == 0.0f && a.gt[T_BK][i] == 0.0f);
    free(y), free(v), free(o), free(mean), free(rstd);
    acase_free(&a);
}

/* ---- permutation equivariance ------------------------------------------------------- */

static void test_permutation(void **state) {
    (void)state;
    trng r = {31};
    int G = 2, K = 7, C = 8, heads = 2;
    acase a, b;
    acase_init(&a, G, K, C, heads, 1, 1, &r);
    acase_init(&b, G, K, C, heads, 1, 1, NULL);
    for (int i = T_LNG; i < T_COUNT; i++) memcpy(b.t[i], a.t[i], tsize(&a, i) * sizeof(float));
    // b's row (g, j) is a's row (g, perm_g(j)); a different permutation per group
    int perm[2][7] = {{3, 0, 6, 1, 5, 2, 4}, {6, 5, 4, 3, 2, 1, 0}};
    for (int g = 0; g < G; g++)
        for (int j = 0; j < K; j++) {
            size_t dst = (size_t)(g * K + j) * C, src = (size_t)(g * K + perm[g][j]) * C;
            memcpy(b.t[T_X] + dst, a.t[T_X] + src, (size_t)C * sizeof(float));
            memcpy(b.R + dst, a.R + src, (size_t)C * sizeof(float));
        }
    run_forward(&a), run_backward(&a);
    run_forward(&b), run_backward(&b);
    double eo = 0.0, edx = 0.0, ep = 0.0;
    for (int g = 0; g < G; g++)
        for (int j = 0; j < K; j++)
            for (int c = 0; c < C; c++) {
                size_t ib = (size_t)(g * K + j) * C + c, ia = (size_t)(g * K + perm[g][j]) * C + c;
                eo = fmax(eo, fabs(b.out[ib] - a.out[ia]) / fmax(1.0, fabs(a.out[ia])));
                edx = fmax(edx, fabs(b.gt[T_X][ib] - a.gt[T_X][ia]) / fmax(1.0, fabs(a.gt[T_X][ia])));
            }
    for (int i = T_LNG; i < T_COUNT; i++)
        for (size_t j = 0; j < tsize(&a, i); j++)
            ep = fmax(ep, fabs(b.gt[i][j] - a.gt[i][j]) / fmax(1.0, fabs(a.gt[i][j])));
    printf("permutation: out %.2e  dx %.2e  dparams %.2e (max rel diff)\n", eo, edx, ep);
    assert_true(eo <= FWD_TOL && edx <= GRAD_TOL && ep <= GRAD_TOL); // sums run in another order
    acase_free(&a), acase_free(&b);
}

/* ---- determinism across thread counts ----------------------------------------------- */

static void run_threads(acase *a, int threads) {
    pc_nn_blas_single();
    int saved = pc_threads_begin(threads);
    for (int i = 0; i < T_COUNT; i++)
        if (a->gt[i]) memset(a->gt[i], 0, tsize(a, i) * sizeof(float));
    run_forward(a);
    run_backward(a);
    pc_threads_end(saved);
}

static void test_threads_identical(void **state) {
    (void)state;
    trng r = {41};
    // big enough for the parallel paths: (group, head) pairs (G*K*K*C >= PC_GEMM_PAR_MIN),
    // row-split projections (G*K >= 512) and LayerNorm (G*K*C >= PC_PAR_MIN)
    int G = 40, K = 32, C = 32, heads = 4;
    acase a, b;
    acase_init(&a, G, K, C, heads, 1, 1, &r);
    acase_init(&b, G, K, C, heads, 1, 1, NULL);
    for (int i = 0; i < T_COUNT; i++) memcpy(b.t[i], a.t[i], tsize(&a, i) * sizeof(float));
    memcpy(b.R, a.R, tsize(&a, T_X) * sizeof(float));
    run_threads(&a, 1);
    run_threads(&b, 2);
    assert_memory_equal(a.out, b.out, tsize(&a, T_X) * sizeof(float));
    assert_memory_equal(a.cache, b.cache,
                        pc_cfg_attention_cache_size(G, K, C, heads, 1) * sizeof(float));
    for (int i = 0; i < T_COUNT; i++) assert_memory_equal(a.gt[i], b.gt[i], tsize(&a, i) * sizeof(float));
    acase_free(&a), acase_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fd_ln_bias_heads2),
        cmocka_unit_test(test_fd_plain),
        cmocka_unit_test(test_fd_heads3_bias),
        cmocka_unit_test(test_fd_k1),
        cmocka_unit_test(test_golden_torch),
        cmocka_unit_test(test_k1_identity),
        cmocka_unit_test(test_permutation),
        cmocka_unit_test(test_threads_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
