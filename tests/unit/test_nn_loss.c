/*
 * Unit tests for the ranking losses (src/nn/loss.c): pairwise hinge, the
 * margin loss over close pairs, ListMLE, MSE on mean-normalized runtime,
 * their combination and the batch wrappers. (tests/unit/test_golden.c also
 * checks the margin loss and its combinations against the PyTorch twin.)
 *
 * Each loss has an independent double reference here (naive O(K^2) suffix
 * logsumexp with max subtraction for ListMLE, insertion sort for the true
 * order; the margin loss as a masked difference matrix, dense ranks counted
 * pair by pair). Checks:
 *  - value: |L - L_ref| / max(1, |L_ref|) <= 1e-9 (both sum in double);
 *  - gradient: the float ds (with a weight != 1) against weight times the
 *    central differences (h = 1e-6) of the reference in double,
 *    |ds - num| / max(|num|, 1e-4) <= 1e-3 (max printed per case);
 *    hinge kinks are avoided by scores on a 0.3 grid, so every pair is at
 *    least 0.01 (after temperature) from margin - (s_j - s_i) / T = 0;
 *  - hand-computed values for K = 2, 3; ties; K = 0, 1; scores of +-1e4;
 *    permutation invariance; the combo's weight normalization; invalid
 *    parameters; NULL ds and accumulation into ds.
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

#include "nn/nn.h"

#define VAL_TOL 1e-9
#define GRAD_TOL 1e-3
#define GRAD_FLOOR 1e-4
#define FD_H 1e-6
#define KMAX 64

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

static double trng_unif(trng *r, double lo, double hi) {
    double u = (double)(trng_next(r) >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * u;
}

/* perm = random permutation of 0..K-1 (Fisher-Yates). */
static void trng_perm(trng *r, int *perm, int K) {
    for (int k = 0; k < K; k++) perm[k] = k;
    for (int k = K - 1; k > 0; k--) {
        int j = (int)(trng_next(r) % (uint64_t)(k + 1));
        int t = perm[k];
        perm[k] = perm[j], perm[j] = t;
    }
}

/* Runtimes in [1, 5) rounded to 0.5 when `ties`, so some are equal. */
static void rand_runtimes(trng *r, double *y, int K, int ties) {
    for (int k = 0; k < K; k++) {
        y[k] = trng_unif(r, 1.0, 5.0);
        if (ties) y[k] = floor(y[k] * 2.0) / 2.0;
    }
}

/* ---- double references --------------------------------------------------------- */

typedef enum lossid { L_HINGE, L_LISTMLE, L_MSE, L_COMBO, L_MARGIN } lossid;

typedef struct lcase {
    lossid id;
    double margin, t_hinge, t_listmle;
    double w[4];     /* combo: listmle, hinge, mse, margin (unnormalized) */
    double cm, t_cm; /* the margin loss's margin and temperature */
    int window;
} lcase;

static double ref_hinge(const double *s, const double *y, int K, double m, double T) {
    double L = 0.0;
    long np = 0;
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++)
            if (y[i] < y[j]) {
                np++;
                L += fmax(0.0, m - (s[j] - s[i]) / T);
            }
    return np ? L / np : 0.0;
}

/* Dense rank of y[i]: how many distinct runtimes are smaller. */
static int dense_rank(const double *y, int K, int i) {
    int r = 0;
    for (int j = 0; j < K; j++) {
        if (!(y[j] < y[i])) continue;
        int first = 1; // count each distinct value once: at its lowest index
        for (int k = 0; k < j; k++)
            if (y[k] == y[j]) first = 0;
        r += first;
    }
    return r;
}

/* The difference matrices D_ij = s_j - s_i and R_ij = rank_j - rank_i, masked to 1..w. */
static double ref_margin(const double *s, const double *y, int K, double m, double T, int w) {
    double L = 0.0;
    long np = 0;
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            if (isnan(y[i]) || isnan(y[j])) continue;
            int d = dense_rank(y, K, j) - dense_rank(y, K, i);
            if (d < 1 || d > w) continue;
            np++;
            L += fmax(0.0, m - (s[j] - s[i]) / T);
        }
    return np ? L / np : 0.0;
}

static double ref_listmle(const double *s, const double *y, int K, double T) {
    int ord[KMAX];
    // Insertion sort by (y, index): stable, ties keep the lower index first.
    for (int k = 0; k < K; k++) {
        int j = k;
        while (j > 0 && y[ord[j - 1]] > y[k]) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = k;
    }
    double L = 0.0;
    for (int k = 0; k < K; k++) {
        double mx = -INFINITY;
        for (int m = k; m < K; m++) mx = fmax(mx, -s[ord[m]] / T);
        double sum = 0.0;
        for (int m = k; m < K; m++) sum += exp(-s[ord[m]] / T - mx);
        L += mx + log(sum) - (-s[ord[k]] / T);
    }
    return L;
}

static double ref_mse(const double *s, const double *y, int K) {
    if (K <= 0) return 0.0;
    double mean = 0.0;
    for (int k = 0; k < K; k++) mean += y[k];
    mean /= K;
    double L = 0.0;
    for (int k = 0; k < K; k++) {
        double t = mean > 0.0 ? y[k] / mean : 0.0;
        L += (s[k] - t) * (s[k] - t);
    }
    return L / K;
}

/* Parameters pass through float, as the implementation receives them. */
static double fp(double v) { return (double)(float)v; }

static double ref_loss(const lcase *c, const double *s, const double *y, int K) {
    const double m = fp(c->margin), th = fp(c->t_hinge), tl = fp(c->t_listmle);
    switch (c->id) {
    case L_HINGE: return ref_hinge(s, y, K, m, th);
    case L_LISTMLE: return ref_listmle(s, y, K, tl);
    case L_MSE: return ref_mse(s, y, K);
    case L_MARGIN: return ref_margin(s, y, K, fp(c->cm), fp(c->t_cm), c->window);
    case L_COMBO: {
        const double w0 = fp(c->w[0]), w1 = fp(c->w[1]), w2 = fp(c->w[2]), w3 = fp(c->w[3]);
        // a part with weight 0 is not evaluated (its parameters may be invalid)
        return ((w0 > 0 ? w0 * ref_listmle(s, y, K, tl) : 0.0) +
                (w1 > 0 ? w1 * ref_hinge(s, y, K, m, th) : 0.0) +
                (w2 > 0 ? w2 * ref_mse(s, y, K) : 0.0) +
                (w3 > 0 ? w3 * ref_margin(s, y, K, fp(c->cm), fp(c->t_cm), c->window) : 0.0)) /
               (w0 + w1 + w2 + w3);
    }
    }
    return NAN;
}

static pc_loss_cfg cfg_of(const lcase *c) {
    return (pc_loss_cfg){.w_listmle = (float)c->w[0], .w_hinge = (float)c->w[1],
                         .w_mse = (float)c->w[2], .listmle_temperature = (float)c->t_listmle,
                         .hinge_margin = (float)c->margin, .hinge_temperature = (float)c->t_hinge,
                         .w_margin = (float)c->w[3], .margin_value = (float)c->cm,
                         .margin_temperature = (float)c->t_cm, .margin_window = c->window};
}

/* The float implementation under test. */
static double run_loss(const lcase *c, float *ds, const float *s, const double *y, int K,
                       float weight) {
    switch (c->id) {
    case L_HINGE:
        return pc_loss_pairwise_hinge(ds, s, y, K, (float)c->margin, (float)c->t_hinge, weight);
    case L_LISTMLE: return pc_loss_listmle(ds, s, y, K, (float)c->t_listmle, weight);
    case L_MSE: return pc_loss_mse_norm(ds, s, y, K, weight);
    case L_MARGIN:
        return pc_loss_close_margin(ds, s, y, K, (float)c->cm, (float)c->t_cm, c->window, weight);
    case L_COMBO: {
        pc_loss_cfg cfg = cfg_of(c);
        return pc_loss_combo(ds, s, y, K, &cfg, weight, NULL);
    }
    }
    return NAN;
}

/* ---- the finite-difference harness --------------------------------------------- */

static void check_grad(const char *name, const lcase *c, const float *s, const double *y, int K) {
    assert_true(K <= KMAX);
    const float weight = 0.7f;
    float ds[KMAX] = {0};
    double sd[KMAX] = {0};
    for (int k = 0; k < K; k++) sd[k] = s[k];
    double L = run_loss(c, ds, s, y, K, weight);
    double Lr = ref_loss(c, sd, y, K);
    double val_err = fabs(L - Lr) / fmax(1.0, fabs(Lr));
    double grad_err = 0.0;
    for (int k = 0; k < K; k++) {
        double save = sd[k];
        sd[k] = save + FD_H;
        double lp = ref_loss(c, sd, y, K);
        sd[k] = save - FD_H;
        double lm = ref_loss(c, sd, y, K);
        sd[k] = save;
        double num = weight * (lp - lm) / (2 * FD_H);
        double e = fabs(ds[k] - num) / fmax(fabs(num), GRAD_FLOOR);
        if (e > GRAD_TOL)
            fprintf(stderr, "  %s: ds[%d] analytic %.9g numeric %.9g\n", name, k, (double)ds[k],
                    num);
        grad_err = fmax(grad_err, e);
    }
    printf("%-34s K=%-3d L=%-12.6g val rel %.1e  grad rel %.1e\n", name, K, L, val_err, grad_err);
    assert_true(val_err <= VAL_TOL);
    assert_true(grad_err <= GRAD_TOL);
}

/* Scores on a 0.3 grid (a shuffled ladder): with margin 1, T = 1 or margin 0.1,
 * T = 10 every pair is >= 0.01 away from the hinge kink. */
static void grid_scores(trng *r, float *s, int K) {
    int perm[KMAX];
    trng_perm(r, perm, K);
    for (int k = 0; k < K; k++) s[k] = 0.3f * (float)perm[k] - 1.0f;
}

/* ---- gradients ------------------------------------------------------------------ */

static void test_hinge_grad(void **state) {
    (void)state;
    trng r = {11};
    const lcase cases[] = {{.id = L_HINGE, .margin = 1.0, .t_hinge = 1.0},
                           {.id = L_HINGE, .margin = 0.1, .t_hinge = 10.0},
                           {.id = L_HINGE, .margin = 1.0, .t_hinge = 10.0}};
    const int Ks[] = {2, 3, 8, 17};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
            for (int ties = 0; ties < 2; ties++) {
                int K = Ks[ki];
                float s[KMAX];
                double y[KMAX];
                grid_scores(&r, s, K);
                rand_runtimes(&r, y, K, ties);
                char name[64];
                snprintf(name, sizeof name, "hinge m=%g T=%g%s", cases[ci].margin,
                         cases[ci].t_hinge, ties ? " ties" : "");
                check_grad(name, &cases[ci], s, y, K);
            }
}

static void test_margin_grad(void **state) {
    (void)state;
    trng r = {19};
    const lcase cases[] = {{.id = L_MARGIN, .cm = 1.0, .t_cm = 1.0, .window = 1},
                           {.id = L_MARGIN, .cm = 0.1, .t_cm = 10.0, .window = 2},
                           {.id = L_MARGIN, .cm = 1.0, .t_cm = 10.0, .window = 3},
                           {.id = L_MARGIN, .cm = 1.0, .t_cm = 1.0, .window = 100}};
    const int Ks[] = {2, 3, 8, 17, 33};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
            for (int ties = 0; ties < 2; ties++) {
                int K = Ks[ki];
                float s[KMAX];
                double y[KMAX];
                grid_scores(&r, s, K);
                rand_runtimes(&r, y, K, ties);
                char name[64];
                snprintf(name, sizeof name, "margin m=%g T=%g w=%d%s", cases[ci].cm,
                         cases[ci].t_cm, cases[ci].window, ties ? " ties" : "");
                check_grad(name, &cases[ci], s, y, K);
            }
}

static void test_listmle_grad(void **state) {
    (void)state;
    trng r = {12};
    const double Ts[] = {1.0, 10.0, 0.5};
    const int Ks[] = {2, 3, 10, 33};
    for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
            for (int ties = 0; ties < 2; ties++) {
                lcase c = {.id = L_LISTMLE, .t_listmle = Ts[ti]};
                int K = Ks[ki];
                float s[KMAX];
                double y[KMAX];
                for (int k = 0; k < K; k++) s[k] = (float)trng_unif(&r, -3.0, 3.0);
                rand_runtimes(&r, y, K, ties);
                char name[64];
                snprintf(name, sizeof name, "listmle T=%g%s", Ts[ti], ties ? " ties" : "");
                check_grad(name, &c, s, y, K);
            }
}

static void test_mse_grad(void **state) {
    (void)state;
    trng r = {13};
    const int Ks[] = {1, 2, 3, 12};
    for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
        lcase c = {.id = L_MSE};
        int K = Ks[ki];
        float s[KMAX];
        double y[KMAX];
        for (int k = 0; k < K; k++) s[k] = (float)trng_unif(&r, -2.0, 3.0);
        rand_runtimes(&r, y, K, 1);
        check_grad("mse_norm", &c, s, y, K);
    }
}

static void test_combo_grad(void **state) {
    (void)state;
    trng r = {14};
    const lcase cases[] = {
        {.id = L_COMBO, .margin = 1.0, .t_hinge = 1.0, .t_listmle = 1.0, .w = {1.0, 1.0, 1.0}},
        {.id = L_COMBO, .margin = 0.1, .t_hinge = 10.0, .t_listmle = 10.0, .w = {1.0, 0.0, 0.02}},
        {.id = L_COMBO, .margin = 1.0, .t_hinge = 10.0, .t_listmle = 2.0, .w = {3.0, 2.0, 0.5}},
        {.id = L_COMBO, .t_listmle = 1.0, .w = {1.0, 0, 0, 0.5}, .cm = 0.1, .t_cm = 1.0,
         .window = 2},
        {.id = L_COMBO, .margin = 1.0, .t_hinge = 1.0, .t_listmle = 10.0, .w = {1, 1, 0.02, 2},
         .cm = 1.0, .t_cm = 1.0, .window = 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        int K = 9;
        float s[KMAX];
        double y[KMAX];
        grid_scores(&r, s, K);
        rand_runtimes(&r, y, K, 1);
        check_grad("combo", &cases[ci], s, y, K);
    }
}

/* ---- hand-computed values -------------------------------------------------------- */

static void test_hand_values(void **state) {
    (void)state;
    const double e1 = exp(-1.0), e2 = exp(-2.0);
    {   // hinge K=2: pair (0 faster, 1 slower): 1 - (0.3 - 0) = 0.7; ds = (+1, -1)
        float s[] = {0.0f, 0.3f}, ds[2] = {0};
        double y[] = {1.0, 2.0};
        assert_float_equal(pc_loss_pairwise_hinge(ds, s, y, 2, 1.0f, 1.0f, 1.0f), 0.7, 1e-7);
        assert_float_equal(ds[0], 1.0, 1e-7);
        assert_float_equal(ds[1], -1.0, 1e-7);
    }
    {   // hinge K=3: pairs (1,0): 1-2 <0; (1,2): 1-0.5 = 0.5; (2,0): 1-1.5 <0. L = 0.5/3.
        float s[] = {2.0f, 0.0f, 0.5f}, ds[3] = {0};
        double y[] = {3.0, 1.0, 2.0};
        assert_float_equal(pc_loss_pairwise_hinge(ds, s, y, 3, 1.0f, 1.0f, 1.0f), 0.5 / 3,
                           1e-7);
        assert_float_equal(ds[0], 0.0, 1e-7);
        assert_float_equal(ds[1], 1.0 / 3, 1e-7);
        assert_float_equal(ds[2], -1.0 / 3, 1e-7);
        // temperature 10: every pair active: (1,0): 1-0.2, (1,2): 1-0.05, (2,0): 1-0.15
        memset(ds, 0, sizeof ds);
        assert_float_equal(pc_loss_pairwise_hinge(ds, s, y, 3, 1.0f, 10.0f, 1.0f),
                           (0.8 + 0.95 + 0.85) / 3, 1e-7);
        assert_float_equal(ds[0], -2.0 / 30, 1e-7); // slower in both its pairs
        assert_float_equal(ds[1], 2.0 / 30, 1e-7);  // faster in both
        assert_float_equal(ds[2], 0.0, 1e-7);
    }
    {   // ListMLE K=2, equal scores: L = log 2; dL/dz = (-1/2, 1/2), ds = -dL/dz
        float s[] = {0.0f, 0.0f}, ds[2] = {0};
        double y[] = {1.0, 2.0};
        assert_float_equal(pc_loss_listmle(ds, s, y, 2, 1.0f, 1.0f), log(2.0), 1e-12);
        assert_float_equal(ds[0], 0.5, 1e-7);
        assert_float_equal(ds[1], -0.5, 1e-7);
    }
    {   // ListMLE K=3: true order 1, 0, 2 -> z = (0, -1, -2):
        // L = log(1 + e^-1 + e^-2) + log(1 + e^-1)
        float s[] = {1.0f, 0.0f, 2.0f}, ds[3] = {0};
        double y[] = {2.0, 1.0, 3.0};
        double L = log(1 + e1 + e2) + log(1 + e1);
        assert_float_equal(pc_loss_listmle(ds, s, y, 3, 1.0f, 1.0f), L, 1e-12);
        double z0 = 1 + e1 + e2; // dL/dz for config 1 (first): 1/z0 - 1
        assert_float_equal(ds[1], -(1.0 / z0 - 1.0), 1e-6);
        assert_float_equal(ds[0], -(e1 / z0 + e1 / (e1 + e2) - 1.0), 1e-6);
        assert_float_equal(ds[2], -(e2 / z0 + e2 / (e1 + e2)), 1e-6);
        // Temperature 2 equals temperature 1 on halved scores.
        float sh[] = {0.5f, 0.0f, 1.0f};
        assert_float_equal(pc_loss_listmle(NULL, s, y, 3, 2.0f, 1.0f),
                           pc_loss_listmle(NULL, sh, y, 3, 1.0f, 1.0f), 1e-12);
    }
    {   // MSE K=2: t = (0.5, 1.5); L = (0.25 + 2.25) / 2; ds = 2 (s - t) / 2
        float s[] = {0.0f, 0.0f}, ds[2] = {0};
        double y[] = {1.0, 3.0};
        assert_float_equal(pc_loss_mse_norm(ds, s, y, 2, 1.0f), 1.25, 1e-12);
        assert_float_equal(ds[0], -0.5, 1e-7);
        assert_float_equal(ds[1], -1.5, 1e-7);
    }
    {   // MSE K=3: y = (2, 4, 6) -> t = (0.5, 1, 1.5); s = (1, 1, 1): L = (0.25 + 0 + 0.25)/3
        float s[] = {1.0f, 1.0f, 1.0f}, ds[3] = {0};
        double y[] = {2.0, 4.0, 6.0};
        assert_float_equal(pc_loss_mse_norm(ds, s, y, 3, 1.0f), 0.5 / 3, 1e-12);
        assert_float_equal(ds[0], 1.0 / 3, 1e-7);
        assert_float_equal(ds[1], 0.0, 1e-7);
        assert_float_equal(ds[2], -1.0 / 3, 1e-7);
        // Scale-free target: y * 1000 gives the same loss.
        double y2[] = {2000.0, 4000.0, 6000.0};
        assert_float_equal(pc_loss_mse_norm(NULL, s, y2, 3, 1.0f), 0.5 / 3, 1e-12);
        // All-zero runtimes (test splits): t = 0.
        double y0[] = {0.0, 0.0, 0.0};
        assert_float_equal(pc_loss_mse_norm(NULL, s, y0, 3, 1.0f), 1.0, 1e-12);
    }
}

/* ---- ties, K = 0 / 1 --------------------------------------------------------------- */

static void test_ties(void **state) {
    (void)state;
    {   // All runtimes tied: hinge has no pair -> 0, nothing added.
        float s[] = {0.5f, -1.0f, 2.0f}, ds[3] = {0};
        double y[] = {7.0, 7.0, 7.0};
        assert_true(pc_loss_pairwise_hinge(ds, s, y, 3, 1.0f, 1.0f, 1.0f) == 0.0);
        for (int k = 0; k < 3; k++) assert_true(ds[k] == 0.0f);
    }
    {   // Partial ties: y = (1, 1, 2): pairs (0,2), (1,2) only; the tied pair is skipped.
        float s[] = {0.0f, 5.0f, 0.5f}, ds[3] = {0};
        double y[] = {1.0, 1.0, 2.0};
        // (0,2): 1 - 0.5 = 0.5; (1,2): 1 - (0.5 - 5) = 5.5
        assert_float_equal(pc_loss_pairwise_hinge(ds, s, y, 3, 1.0f, 1.0f, 1.0f), 3.0, 1e-7);
        assert_float_equal(ds[0], 0.5, 1e-7);
        assert_float_equal(ds[1], 0.5, 1e-7);
        assert_float_equal(ds[2], -1.0, 1e-7);
    }
    {   // ListMLE ties broken by index: y = (1, 1) is the order (0, 1).
        float s[] = {0.0f, 1.0f}, sw[] = {1.0f, 0.0f};
        double y[] = {1.0, 1.0};
        // order (0,1), z = (0, -1): L = log(1 + e^-1)
        assert_float_equal(pc_loss_listmle(NULL, s, y, 2, 1.0f, 1.0f), log(1 + exp(-1.0)), 1e-12);
        // order (0,1), z = (-1, 0): L = log(1 + e^1)
        assert_float_equal(pc_loss_listmle(NULL, sw, y, 2, 1.0f, 1.0f), log(1 + exp(1.0)), 1e-12);
        // Same as runtimes (1, 1 + tiny): index order = runtime order.
        double y2[] = {1.0, 1.0 + 1e-9};
        assert_float_equal(pc_loss_listmle(NULL, sw, y, 2, 1.0f, 1.0f),
                           pc_loss_listmle(NULL, sw, y2, 2, 1.0f, 1.0f), 1e-15);
        // Repeated calls are bitwise identical.
        float d1[2] = {0}, d2[2] = {0};
        double a = pc_loss_listmle(d1, sw, y, 2, 1.0f, 1.0f);
        double b = pc_loss_listmle(d2, sw, y, 2, 1.0f, 1.0f);
        assert_true(a == b && memcmp(d1, d2, sizeof d1) == 0);
    }
}

static void test_k01(void **state) {
    (void)state;
    float s[] = {3.0f}, ds[1] = {0};
    double y[] = {2.0};
    pc_loss_cfg cfg = pc_loss_cfg_default();
    assert_true(pc_loss_pairwise_hinge(ds, s, y, 1, 1.0f, 1.0f, 1.0f) == 0.0);
    assert_true(pc_loss_listmle(ds, s, y, 1, 10.0f, 1.0f) == 0.0);
    assert_true(ds[0] == 0.0f);
    // MSE with K = 1: t = y / mean(y) = 1, L = (3 - 1)^2, ds = 2 (3 - 1).
    assert_float_equal(pc_loss_mse_norm(ds, s, y, 1, 1.0f), 4.0, 1e-12);
    assert_float_equal(ds[0], 4.0, 1e-7);
    ds[0] = 0.0f;
    double parts[PC_LOSS_PARTS];
    double L = pc_loss_combo(ds, s, y, 1, &cfg, 1.0f, parts);
    assert_true(isfinite(L) && isfinite(ds[0]));
    assert_true(parts[0] == 0.0 && parts[1] == 0.0);
    // K = 0: everything is 0, nothing touched.
    assert_true(pc_loss_pairwise_hinge(NULL, s, y, 0, 1.0f, 1.0f, 1.0f) == 0.0);
    assert_true(pc_loss_close_margin(NULL, s, y, 0, 1.0f, 1.0f, 1, 1.0f) == 0.0);
    assert_true(pc_loss_close_margin(ds, s, y, 1, 1.0f, 1.0f, 1, 1.0f) == 0.0);
    assert_true(pc_loss_listmle(NULL, s, y, 0, 1.0f, 1.0f) == 0.0);
    assert_true(pc_loss_mse_norm(NULL, s, y, 0, 1.0f) == 0.0);
    assert_true(pc_loss_combo(NULL, s, y, 0, &cfg, 1.0f, NULL) == 0.0);
    assert_true(pc_loss_combo_batch(NULL, s, y, 0, 4, &cfg, 1.0f, NULL) == 0.0);
}

/* ---- large magnitudes -------------------------------------------------------------- */

static void test_listmle_large(void **state) {
    (void)state;
    trng r = {15};
    const int K = 16;
    const float Ts[] = {1.0f, 0.1f, 10.0f};
    for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++)
        for (int trial = 0; trial < 4; trial++) {
            float s[KMAX], ds[KMAX] = {0};
            double y[KMAX], sd[KMAX];
            for (int k = 0; k < K; k++) {
                s[k] = (float)trng_unif(&r, -1e4, 1e4);
                if (trial == 3) s[k] = (k & 1) ? 1e4f : -1e4f; // extremes with ties in s
                sd[k] = s[k];
            }
            rand_runtimes(&r, y, K, trial == 2);
            double L = pc_loss_listmle(ds, s, y, K, Ts[ti], 1.0f);
            assert_true(isfinite(L) && L >= 0.0);
            double Lr = ref_listmle(sd, y, K, Ts[ti]);
            assert_true(fabs(L - Lr) <= 1e-9 * fmax(1.0, fabs(Lr)));
            // The loss is shift invariant, so the gradient sums to 0 (each
            // |ds| <= K / T).
            double sum = 0.0;
            for (int k = 0; k < K; k++) {
                assert_true(isfinite(ds[k]));
                assert_true(fabs(ds[k]) <= K / Ts[ti] * (1 + 1e-6));
                sum += ds[k];
            }
            assert_true(fabs(sum) <= 1e-5 * K / Ts[ti]);
        }
    // Perfectly ordered huge scores: loss ~ 0, gradient ~ 0.
    float s[4] = {-3e4f, -1e4f, 1e4f, 3e4f}, ds[4] = {0};
    double y[4] = {1, 2, 3, 4};
    double L = pc_loss_listmle(ds, s, y, 4, 1.0f, 1.0f);
    assert_true(L >= 0.0 && L < 1e-300);
    for (int k = 0; k < 4; k++) assert_true(fabs(ds[k]) < 1e-30);
    // Reversed: z = (-3e4, -1e4, 1e4, 3e4), each suffix lse ~ 3e4: L ~ 6e4 + 4e4 + 2e4.
    float sr[4] = {3e4f, 1e4f, -1e4f, -3e4f};
    L = pc_loss_listmle(ds, sr, y, 4, 1.0f, 1.0f);
    assert_float_equal(L, 6e4 + 4e4 + 2e4, 1e-6 * 12e4);
}

/* ---- permutation invariance --------------------------------------------------------- */

static void test_permutation(void **state) {
    (void)state;
    trng r = {16};
    const int K = 12;
    const lcase cases[] = {
        {.id = L_HINGE, .margin = 1.0, .t_hinge = 1.0},
        {.id = L_LISTMLE, .t_listmle = 1.0},
        {.id = L_MSE},
        {.id = L_COMBO, .margin = 0.1, .t_hinge = 10.0, .t_listmle = 10.0, .w = {1, 1, 0.02}},
        {.id = L_MARGIN, .cm = 0.5, .t_cm = 1.0, .window = 2}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int trial = 0; trial < 5; trial++) {
            float s[KMAX], sp[KMAX], ds[KMAX] = {0}, dsp[KMAX] = {0};
            double y[KMAX], yp[KMAX];
            int perm[KMAX];
            for (int k = 0; k < K; k++) s[k] = (float)trng_unif(&r, -2.0, 2.0);
            // ListMLE is invariant only without runtime ties (ties follow the index).
            // (dense ranks make the margin loss invariant with ties too)
            rand_runtimes(&r, y, K,
                          cases[ci].id == L_HINGE || cases[ci].id == L_MSE ||
                              cases[ci].id == L_MARGIN);
            trng_perm(&r, perm, K);
            for (int k = 0; k < K; k++) sp[k] = s[perm[k]], yp[k] = y[perm[k]];
            double L = run_loss(&cases[ci], ds, s, y, K, 1.0f);
            double Lp = run_loss(&cases[ci], dsp, sp, yp, K, 1.0f);
            assert_true(fabs(L - Lp) <= 1e-12 * fmax(1.0, fabs(L)));
            for (int k = 0; k < K; k++)
                assert_true(fabs(dsp[k] - ds[perm[k]]) <= 1e-6 * fmax(1.0, fabs(ds[perm[k]])));
        }
}

/* ---- combination weights ------------------------------------------------------------- */

static void test_combo_weights(void **state) {
    (void)state;
    trng r = {17};
    const int K = 10;
    float s[KMAX], ds[KMAX] = {0}, ref[KMAX] = {0};
    double y[KMAX];
    for (int k = 0; k < K; k++) s[k] = (float)trng_unif(&r, -2.0, 2.0);
    rand_runtimes(&r, y, K, 1);
    pc_loss_cfg cfg = {.w_listmle = 2.0f, .w_hinge = 1.0f, .w_mse = 1.0f,
                       .listmle_temperature = 10.0f, .hinge_margin = 0.1f,
                       .hinge_temperature = 1.0f};
    double parts[PC_LOSS_PARTS];
    double L = pc_loss_combo(ds, s, y, K, &cfg, 1.0f, parts);
    double ll = pc_loss_listmle(ref, s, y, K, 10.0f, 0.5f);
    double lh = pc_loss_pairwise_hinge(ref, s, y, K, 0.1f, 1.0f, 0.25f);
    double lm = pc_loss_mse_norm(ref, s, y, K, 0.25f);
    assert_true(parts[0] == ll && parts[1] == lh && parts[2] == lm && parts[3] == 0.0);
    assert_float_equal(L, 0.5 * ll + 0.25 * lh + 0.25 * lm, 1e-12);
    for (int k = 0; k < K; k++) assert_float_equal(ds[k], ref[k], 1e-6);

    // Scaling every weight leaves the result unchanged.
    pc_loss_cfg cfg10 = cfg;
    cfg10.w_listmle *= 10, cfg10.w_hinge *= 10, cfg10.w_mse *= 10;
    float ds10[KMAX] = {0};
    assert_float_equal(pc_loss_combo(ds10, s, y, K, &cfg10, 1.0f, NULL), L, 1e-12);
    for (int k = 0; k < K; k++) assert_float_equal(ds10[k], ds[k], 1e-6);

    // The default is the TpuGraphs tile loss ListMLE:1,MSE:0.02 with T = 10.
    pc_loss_cfg d = pc_loss_cfg_default();
    assert_true(d.w_listmle == 1.0f && d.w_hinge == 0.0f && d.w_mse == 0.02f);
    assert_true(d.listmle_temperature == 10.0f && d.hinge_temperature == 10.0f);
    L = pc_loss_combo(NULL, s, y, K, &d, 1.0f, parts);
    assert_true(parts[1] == 0.0); // weight 0: not evaluated
    assert_float_equal(L, (pc_loss_listmle(NULL, s, y, K, 10.0f, 1.0f) +
                           0.02f * pc_loss_mse_norm(NULL, s, y, K, 1.0f)) / (1.0 + 0.02f),
                       1e-12);

    // A single component reproduces that loss exactly.
    pc_loss_cfg only = {.w_hinge = 3.0f, .hinge_margin = 1.0f, .hinge_temperature = 10.0f,
                        .listmle_temperature = 0.0f}; // unused temperature may be invalid
    assert_float_equal(pc_loss_combo(NULL, s, y, K, &only, 1.0f, NULL),
                       pc_loss_pairwise_hinge(NULL, s, y, K, 1.0f, 10.0f, 1.0f), 1e-15);

    // Invalid weights: NaN, ds untouched.
    float keep[KMAX];
    memcpy(keep, ds, sizeof keep);
    pc_loss_cfg bad = cfg;
    bad.w_mse = -1.0f;
    assert_true(isnan(pc_loss_combo(ds, s, y, K, &bad, 1.0f, NULL)));
    bad = (pc_loss_cfg){.listmle_temperature = 1.0f, .hinge_temperature = 1.0f};
    assert_true(isnan(pc_loss_combo(ds, s, y, K, &bad, 1.0f, NULL)));
    bad = cfg;
    bad.listmle_temperature = 0.0f;
    assert_true(isnan(pc_loss_combo(ds, s, y, K, &bad, 1.0f, NULL)));
    assert_true(isnan(pc_loss_combo(ds, s, y, K, NULL, 1.0f, NULL)));
    assert_true(memcmp(keep, ds, sizeof keep) == 0);
}

/* ---- parameters, NULL ds, accumulation ------------------------------------------------ */

static void test_params_accumulate(void **state) {
    (void)state;
    float s[] = {0.3f, -0.2f, 1.1f}, ds[3] = {0}, ds2[3] = {0};
    double y[] = {2.0, 1.0, 3.0};
    // Invalid temperature: NaN and ds untouched.
    assert_true(isnan(pc_loss_listmle(ds, s, y, 3, 0.0f, 1.0f)));
    assert_true(isnan(pc_loss_listmle(ds, s, y, 3, -1.0f, 1.0f)));
    assert_true(isnan(pc_loss_pairwise_hinge(ds, s, y, 3, 1.0f, NAN, 1.0f)));
    assert_true(isnan(pc_loss_pairwise_hinge(ds, s, y, 3, INFINITY, 1.0f, 1.0f)));
    for (int k = 0; k < 3; k++) assert_true(ds[k] == 0.0f);
    // NULL ds gives the same value; ds accumulates (two calls = weight 2).
    const lcase cases[] = {{.id = L_HINGE, .margin = 1.0, .t_hinge = 1.0},
                           {.id = L_LISTMLE, .t_listmle = 1.0},
                           {.id = L_MSE}};
    for (size_t ci = 0; ci < 3; ci++) {
        memset(ds, 0, sizeof ds), memset(ds2, 0, sizeof ds2);
        double a = run_loss(&cases[ci], NULL, s, y, 3, 1.0f);
        double b = run_loss(&cases[ci], ds, s, y, 3, 1.0f);
        run_loss(&cases[ci], ds, s, y, 3, 1.0f);
        double c = run_loss(&cases[ci], ds2, s, y, 3, 2.0f); // weight does not scale L
        assert_true(a == b && b == c);
        for (int k = 0; k < 3; k++) assert_float_equal(ds[k], ds2[k], 1e-6);
    }
}

/* ---- batch wrappers ---------------------------------------------------------------------- */

static void test_batch(void **state) {
    (void)state;
    trng r = {18};
    enum { G = 4, K = 7 };
    float s[G * K], ds[G * K] = {0}, ref[G * K] = {0};
    double y[G * K];
    for (int i = 0; i < G * K; i++) s[i] = (float)trng_unif(&r, -2.0, 2.0);
    for (int g = 0; g < G; g++) rand_runtimes(&r, y + g * K, K, g & 1);
    const float w = 1.5f;

    double L = pc_loss_listmle_batch(ds, s, y, G, K, 10.0f, w), Lr = 0.0;
    for (int g = 0; g < G; g++)
        Lr += pc_loss_listmle(ref + g * K, s + g * K, y + g * K, K, 10.0f, w / G);
    assert_float_equal(L, Lr / G, 1e-12);
    for (int i = 0; i < G * K; i++) assert_float_equal(ds[i], ref[i], 1e-7);

    memset(ds, 0, sizeof ds), memset(ref, 0, sizeof ref), Lr = 0.0;
    L = pc_loss_pairwise_hinge_batch(ds, s, y, G, K, 0.1f, 1.0f, w);
    for (int g = 0; g < G; g++)
        Lr += pc_loss_pairwise_hinge(ref + g * K, s + g * K, y + g * K, K, 0.1f, 1.0f, w / G);
    assert_float_equal(L, Lr / G, 1e-12);
    for (int i = 0; i < G * K; i++) assert_float_equal(ds[i], ref[i], 1e-7);

    memset(ds, 0, sizeof ds), memset(ref, 0, sizeof ref), Lr = 0.0;
    L = pc_loss_mse_norm_batch(ds, s, y, G, K, w);
    for (int g = 0; g < G; g++)
        Lr += pc_loss_mse_norm(ref + g * K, s + g * K, y + g * K, K, w / G);
    assert_float_equal(L, Lr / G, 1e-12);
    for (int i = 0; i < G * K; i++) assert_float_equal(ds[i], ref[i], 1e-7);

    memset(ds, 0, sizeof ds), memset(ref, 0, sizeof ref), Lr = 0.0;
    pc_loss_cfg cfg = {.w_listmle = 1.0f, .w_hinge = 0.5f, .w_mse = 0.02f,
                       .listmle_temperature = 10.0f, .hinge_margin = 1.0f,
                       .hinge_temperature = 10.0f};
    cfg.w_margin = 0.7f, cfg.margin_value = 0.1f, cfg.margin_temperature = 1.0f;
    cfg.margin_window = 2;
    double parts[PC_LOSS_PARTS], pacc[PC_LOSS_PARTS] = {0, 0, 0, 0};
    L = pc_loss_combo_batch(ds, s, y, G, K, &cfg, w, parts);
    for (int g = 0; g < G; g++) {
        double p[PC_LOSS_PARTS];
        Lr += pc_loss_combo(ref + g * K, s + g * K, y + g * K, K, &cfg, w / G, p);
        for (int c = 0; c < PC_LOSS_PARTS; c++) pacc[c] += p[c];
    }
    assert_float_equal(L, Lr / G, 1e-12);
    assert_true(parts[3] > 0.0);
    for (int c = 0; c < PC_LOSS_PARTS; c++) assert_float_equal(parts[c], pacc[c] / G, 1e-12);
    for (int i = 0; i < G * K; i++) assert_float_equal(ds[i], ref[i], 1e-7);

    // Finite differences through the batch mean: dL/ds = weight/G * dL_g/ds.
    lcase c = {.id = L_LISTMLE, .t_listmle = 2.0};
    double sd[G * K], gerr = 0.0;
    memset(ds, 0, sizeof ds);
    pc_loss_listmle_batch(ds, s, y, G, K, 2.0f, w);
    for (int i = 0; i < G * K; i++) sd[i] = s[i];
    for (int i = 0; i < G * K; i++) {
        int g = i / K;
        double save = sd[i];
        sd[i] = save + FD_H;
        double lp = ref_loss(&c, sd + g * K, y + g * K, K);
        sd[i] = save - FD_H;
        double lm = ref_loss(&c, sd + g * K, y + g * K, K);
        sd[i] = save;
        double num = w / G * (lp - lm) / (2 * FD_H);
        gerr = fmax(gerr, fabs(ds[i] - num) / fmax(fabs(num), GRAD_FLOOR));
    }
    printf("%-34s G=%d K=%d grad rel %.1e\n", "listmle_batch", G, K, gerr);
    assert_true(gerr <= GRAD_TOL);
}

/* ---- the margin loss: hand values, its window, ties, NaN, bad parameters -------------- */

static void test_margin_cases(void **state) {
    (void)state;
    {   // y = (3, 1, 2, 4): levels 2, 0, 1, 3. Window 1: pairs (1,2), (2,0), (0,3).
        // s = (0.5, 0, 1, 0.2), margin 1, T 1: 1-(1-0)=0, 1-(0.5-1)=1.5, 1-(0.2-0.5)=1.3.
        float s[] = {0.5f, 0.0f, 1.0f, 0.2f}, ds[4] = {0};
        double y[] = {3.0, 1.0, 2.0, 4.0};
        assert_float_equal(pc_loss_close_margin(ds, s, y, 4, 1.0f, 1.0f, 1, 1.0f), 2.8 / 3,
                           1e-7);
        // active (2,0): ds2 += 1/3, ds0 -= 1/3; (0,3): ds0 += 1/3, ds3 -= 1/3
        const float want[] = {0.0f, 0.0f, 1.0f / 3, -1.0f / 3};
        for (int k = 0; k < 4; k++) assert_float_equal(ds[k], want[k], 1e-7);
        // Window 2 adds (1,0) (1-0.5 = 0.5) and (2,3) (1-(0.2-1) = 1.8): 5 pairs
        assert_float_equal(pc_loss_close_margin(NULL, s, y, 4, 1.0f, 1.0f, 2, 1.0f),
                           (2.8 + 0.5 + 1.8) / 5, 1e-7);
        // Window 3 = every pair: the hinge.
        assert_float_equal(pc_loss_close_margin(NULL, s, y, 4, 1.0f, 1.0f, 3, 1.0f),
                           pc_loss_pairwise_hinge(NULL, s, y, 4, 1.0f, 1.0f, 1.0f), 1e-12);
    }
    {   // A window as wide as the levels gives the hinge back, ties and all.
        trng r = {20};
        for (int trial = 0; trial < 8; trial++) {
            const int K = 13;
            float s[KMAX], ds[KMAX] = {0}, dh[KMAX] = {0};
            double y[KMAX];
            for (int k = 0; k < K; k++) s[k] = (float)trng_unif(&r, -2.0, 2.0);
            rand_runtimes(&r, y, K, trial & 1);
            double a = pc_loss_close_margin(ds, s, y, K, 0.3f, 2.0f, K, 0.9f);
            double b = pc_loss_pairwise_hinge(dh, s, y, K, 0.3f, 2.0f, 0.9f);
            assert_float_equal(a, b, 1e-12);
            for (int k = 0; k < K; k++) assert_float_equal(ds[k], dh[k], 1e-6);
        }
    }
    {   // Duplicates: tied configs form no pair and do not narrow the window.
        // y = (1, 1, 1, 2, 3): window 1 pairs: 0-2 with 3 (three), 3 with 4 (one).
        float s[] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, ds[5] = {0};
        double y[] = {1.0, 1.0, 1.0, 2.0, 3.0};
        assert_float_equal(pc_loss_close_margin(ds, s, y, 5, 1.0f, 1.0f, 1, 1.0f), 1.0, 1e-12);
        const float want[] = {0.25f, 0.25f, 0.25f, -0.75f + 0.25f, -0.25f};
        for (int k = 0; k < 5; k++) assert_float_equal(ds[k], want[k], 1e-7);
        // all tied: no pair, nothing added
        double yt[] = {2.0, 2.0, 2.0, 2.0, 2.0};
        memset(ds, 0, sizeof ds);
        assert_true(pc_loss_close_margin(ds, s, yt, 5, 1.0f, 1.0f, 1, 1.0f) == 0.0);
        for (int k = 0; k < 5; k++) assert_true(ds[k] == 0.0f);
    }
    {   // NaN runtimes take no part: the same as the list without them.
        float s[] = {0.4f, 9.0f, -0.3f, 0.1f}, s3[] = {0.4f, -0.3f, 0.1f}, ds[4] = {0},
              d3[3] = {0};
        double y[] = {2.0, NAN, 1.0, 3.0}, y3[] = {2.0, 1.0, 3.0};
        double a = pc_loss_close_margin(ds, s, y, 4, 1.0f, 1.0f, 1, 1.0f);
        double b = pc_loss_close_margin(d3, s3, y3, 3, 1.0f, 1.0f, 1, 1.0f);
        assert_true(a == b && ds[1] == 0.0f);
        assert_true(ds[0] == d3[0] && ds[2] == d3[1] && ds[3] == d3[2]);
    }
    {   // Bad parameters: NaN, ds untouched; the combo refuses them only when weighted.
        float s[] = {0.3f, -0.2f, 1.1f}, ds[3] = {0};
        double y[] = {2.0, 1.0, 3.0};
        assert_true(isnan(pc_loss_close_margin(ds, s, y, 3, 1.0f, 1.0f, 0, 1.0f)));
        assert_true(isnan(pc_loss_close_margin(ds, s, y, 3, 1.0f, 0.0f, 1, 1.0f)));
        assert_true(isnan(pc_loss_close_margin(ds, s, y, 3, NAN, 1.0f, 1, 1.0f)));
        pc_loss_cfg c = pc_loss_cfg_default();
        c.margin_window = 0;
        assert_true(isfinite(pc_loss_combo(ds, s, y, 3, &c, 1.0f, NULL)));
        memset(ds, 0, sizeof ds);
        c.w_margin = 1.0f;
        assert_true(isnan(pc_loss_combo(ds, s, y, 3, &c, 1.0f, NULL)));
        for (int k = 0; k < 3; k++) assert_true(ds[k] == 0.0f);
        // the default: weight 0, margin 0.1, T 1, window 2
        pc_loss_cfg d = pc_loss_cfg_default();
        assert_true(d.w_margin == 0.0f && d.margin_value == 0.1f &&
                    d.margin_temperature == 1.0f && d.margin_window == 2);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hinge_grad),     cmocka_unit_test(test_listmle_grad),
        cmocka_unit_test(test_mse_grad),       cmocka_unit_test(test_combo_grad),
        cmocka_unit_test(test_hand_values),    cmocka_unit_test(test_ties),
        cmocka_unit_test(test_k01),            cmocka_unit_test(test_listmle_large),
        cmocka_unit_test(test_permutation),    cmocka_unit_test(test_combo_weights),
        cmocka_unit_test(test_params_accumulate), cmocka_unit_test(test_batch),
        cmocka_unit_test(test_margin_grad),    cmocka_unit_test(test_margin_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
