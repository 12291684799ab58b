/*
 * Fitting a calibration (docs/analytic.md "Calibration"): robust
 * Levenberg-Marquardt on the log error of every selected run, with a
 * Gaussian prior on each coefficient.
 *
 * Each coefficient c in [lo, hi] is fitted through an unbounded x with
 * c = lo + (hi - lo) * sigmoid(x), so bounds hold by construction. The cost
 *
 *   sum_i huber(ln(pred_i / measured_i)) / d^2 + w_p * sum_j ((x_j - x0_j) / sigma_j)^2
 *
 * (d, the Huber threshold, doubles as the expected log error of one run, so a
 * run off by d weighs as much as a coefficient one prior width away)
 *
 * keeps a coefficient no run constrains at its prior x0 (leave-one-source-out
 * fits rely on that). Huber is applied by iteratively reweighting. The
 * Jacobian is by forward differences: a prediction costs microseconds and
 * there are a few hundred runs and ~20 coefficients.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/calib_internal.h"

pc_calib_fit_opts pc_calib_fit_opts_default(void) {
    pc_calib_fit_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.huber = 0.10;
    o.prior_weight = 1;
    o.max_iter = 60;
    return o;
}

#define NC PC_COEF_COUNT

typedef struct fitctx {
    const pc_runs *runs;
    int *idx; /* selected runs */
    int n;
    double *meas;
    double lo[NC], hi[NC], sigma[NC], x0[NC];
    /* coefficients no selected run depends on keep their starting value
     * exactly (x -> c does not round-trip, and to_x clamps at the bounds) */
    double c_start[NC];
    int frozen[NC];
    double huber, pw;
    pc_calib *cal; /* scratch calibration the predictions read */
} fitctx;

static double to_c(const fitctx *f, int j, double x) {
    return f->lo[j] + (f->hi[j] - f->lo[j]) / (1 + exp(-x));
}
static double to_x(const fitctx *f, int j, double c) {
    double u = (c - f->lo[j]) / (f->hi[j] - f->lo[j]);
    if (u < 1e-4) u = 1e-4;
    if (u > 1 - 1e-4) u = 1 - 1e-4;
    return log(u / (1 - u));
}

static void set_x(fitctx *f, const double *x) {
    for (int j = 0; j < NC; j++) f->cal->c[j] = f->frozen[j] ? f->c_start[j] : to_c(f, j, x[j]);
    f->cal->ideal = 0;
}

/* Log errors of the selected runs at x; a run that stops being expressed
 * counts as a large miss so the fit steers away. */
static void log_errors(fitctx *f, const double *x, double *r) {
    set_x(f, x);
    for (int i = 0; i < f->n; i++) {
        pc_run_pred p;
        if (pc_run_predict(pc_runs_at(f->runs, f->idx[i]), f->cal, &p, NULL) != PC_OK ||
            !p.expressed || !(p.predicted > 0) || !isfinite(p.predicted)) {
            r[i] = 3;
            continue;
        }
        r[i] = log(p.predicted / f->meas[i]);
    }
}

static double huber_w(double r, double d) {
    double a = fabs(r);
    return a <= d ? 1 : d / a;
}

static double cost(const fitctx *f, const double *r, const double *x, const int *active) {
    double s = 0;
    for (int i = 0; i < f->n; i++) {
        double a = fabs(r[i]);
        s += (a <= f->huber ? a * a : f->huber * (2 * a - f->huber)) / (f->huber * f->huber);
    }
    for (int j = 0; j < NC; j++) {
        if (active && active[j] == 0) continue;
        double z = (x[j] - f->x0[j]) / f->sigma[j];
        s += f->pw * z * z;
    }
    return s;
}

/* Solves the SPD system A d = b (n x n) by Cholesky; 0 on success. */
static int chol_solve(double *A, double *b, int n) {
    for (int j = 0; j < n; j++) {
        double s = A[j * n + j];
        for (int k = 0; k < j; k++) s -= A[j * n + k] * A[j * n + k];
        if (!(s > 0)) return -1;
        A[j * n + j] = sqrt(s);
        for (int i = j + 1; i < n; i++) {
            double t = A[i * n + j];
            for (int k = 0; k < j; k++) t -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = t / A[j * n + j];
        }
    }
    for (int i = 0; i < n; i++) {
        double t = b[i];
        for (int k = 0; k < i; k++) t -= A[i * n + k] * b[k];
        b[i] = t / A[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double t = b[i];
        for (int k = i + 1; k < n; k++) t -= A[k * n + i] * b[k];
        b[i] = t / A[i * n + i];
    }
    return 0;
}

/* One Levenberg-Marquardt run from x (updated in place). */
static pc_status lm(fitctx *f, double *x, int max_iter, pc_error *err) {
    int n = f->n;
    double *r = malloc(sizeof(double) * (size_t)n), *r2 = malloc(sizeof(double) * (size_t)n);
    double *J = malloc(sizeof(double) * (size_t)n * NC);
    if (!r || !r2 || !J) {
        free(r), free(r2), free(J);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    double lambda = 1e-2, xt[NC], A[NC * NC], g[NC], d[NC];
    /* coefficients no selected run depends on keep their starting value
     * (fitting training runs leaves the serving coefficients alone) */
    int active[NC];
    for (int j = 0; j < NC; j++) active[j] = -1;
    log_errors(f, x, r);
    double c0 = cost(f, r, x, NULL);
    for (int it = 0; it < max_iter; it++) {
        for (int j = 0; j < NC; j++) {
            memcpy(xt, x, sizeof xt);
            double h = 1e-4 * (1 + fabs(x[j]));
            xt[j] += h;
            log_errors(f, xt, r2);
            for (int i = 0; i < n; i++) J[(size_t)i * NC + j] = (r2[i] - r[i]) / h;
            if (active[j] < 0) {
                active[j] = 0;
                for (int i = 0; i < n; i++) active[j] |= J[(size_t)i * NC + j] != 0;
                f->frozen[j] = !active[j];
            }
        }
        /* normal equations of the reweighted problem */
        memset(A, 0, sizeof A);
        memset(g, 0, sizeof g);
        for (int i = 0; i < n; i++) {
            double w = huber_w(r[i], f->huber) / (f->huber * f->huber);
            const double *Ji = J + (size_t)i * NC;
            for (int a = 0; a < NC; a++) {
                g[a] += w * Ji[a] * r[i];
                for (int b = 0; b <= a; b++) A[a * NC + b] += w * Ji[a] * Ji[b];
            }
        }
        for (int j = 0; j < NC; j++) {
            double s2 = f->sigma[j] * f->sigma[j];
            if (!active[j]) { /* frozen: d_j = 0 */
                for (int b = 0; b < NC; b++) A[j * NC + b] = A[b * NC + j] = 0;
                A[j * NC + j] = 1, g[j] = 0;
                continue;
            }
            A[j * NC + j] += f->pw / s2;
            g[j] += f->pw * (x[j] - f->x0[j]) / s2;
        }
        for (int a = 0; a < NC; a++)
            for (int b = a + 1; b < NC; b++) A[a * NC + b] = A[b * NC + a];
        if (it == 0) c0 = cost(f, r, x, active);
        int improved = 0;
        for (int tries = 0; tries < 10 && !improved; tries++) {
            double M[NC * NC];
            memcpy(M, A, sizeof M);
            for (int j = 0; j < NC; j++) M[j * NC + j] *= 1 + lambda, M[j * NC + j] += 1e-12;
            for (int j = 0; j < NC; j++) d[j] = -g[j];
            if (chol_solve(M, d, NC)) {
                lambda *= 10;
                continue;
            }
            for (int j = 0; j < NC; j++) xt[j] = x[j] + d[j];
            log_errors(f, xt, r2);
            double c1 = cost(f, r2, xt, active);
            if (c1 < c0) {
                memcpy(x, xt, sizeof xt);
                memcpy(r, r2, sizeof(double) * (size_t)n);
                improved = c0 - c1 > 1e-10 * (1 + c0) ? 1 : 2;
                c0 = c1;
                lambda = lambda / 3 > 1e-7 ? lambda / 3 : 1e-7;
            } else {
                lambda *= 10;
            }
        }
        if (improved != 1) break;
    }
    set_x(f, x);
    free(r), free(r2), free(J);
    return PC_OK;
}

static int kind_selected(const pc_calib_fit_opts *o, pc_run_kind k) {
    int kinds = o->kinds ? o->kinds : 3;
    return (kinds >> (k == PC_RUN_SERVE ? 1 : 0)) & 1;
}

pc_status pc_calib_fit(const pc_runs *runs, const unsigned char *use, const pc_calib *start,
                       const pc_calib_fit_opts *opts, pc_calib **out, pc_error *err) {
    *out = NULL;
    if (!runs) return pc_fail(err, PC_ERR_ARG, "pc_calib_fit: NULL runs");
    if (opts && PC_CHECK_SIZE(err, pc_calib_fit_opts, opts)) return PC_ERR_ARG;
    pc_calib_fit_opts o = opts ? *opts : pc_calib_fit_opts_default();
    /* the cost divides by huber^2: a threshold whose square under- or
     * overflows would silently return the start */
    if (!(o.huber <= 0 || (o.huber >= 1e-100 && o.huber <= 1e100)) ||
        !(o.prior_weight < 0 || o.prior_weight <= 1e100))
        return pc_fail(err, PC_ERR_ARG, "pc_calib_fit: huber %g or prior_weight %g out of range",
                       o.huber, o.prior_weight);
    fitctx f;
    memset(&f, 0, sizeof f);
    f.runs = runs;
    f.huber = o.huber > 0 ? o.huber : 0.10;
    f.pw = o.prior_weight >= 0 ? o.prior_weight : 1;
    int nr = pc_runs_count(runs);
    f.idx = malloc(sizeof(int) * (size_t)(nr > 0 ? nr : 1));
    f.meas = malloc(sizeof(double) * (size_t)(nr > 0 ? nr : 1));
    pc_status st = pc_calib_prior(&f.cal, err);
    if (st || !f.idx || !f.meas) {
        free(f.idx), free(f.meas), pc_calib_free(f.cal);
        return st ? st : pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    double x[NC];
    for (int j = 0; j < NC; j++) {
        double prior;
        pc_calib_coef_prior(j, &prior, &f.lo[j], &f.hi[j], &f.sigma[j]);
        if (!(f.sigma[j] > 0)) f.sigma[j] = 1;
        f.x0[j] = to_x(&f, j, prior);
        f.c_start[j] = start && !start->ideal ? start->c[j] : prior;
        x[j] = start && !start->ideal ? to_x(&f, j, start->c[j]) : f.x0[j];
    }
    set_x(&f, x);
    for (int i = 0; i < nr; i++) {
        const pc_run *run = pc_runs_at(runs, i);
        if ((use && !use[i]) || pc_runs_problem(runs, i) || !kind_selected(&o, run->kind))
            continue;
        pc_run_pred p;
        if (pc_run_predict(run, f.cal, &p, NULL) != PC_OK || !p.expressed || !(p.measured > 0))
            continue;
        f.idx[f.n] = i;
        f.meas[f.n++] = p.measured;
    }
    if (f.n == 0) {
        free(f.idx), free(f.meas), pc_calib_free(f.cal);
        return pc_fail(err, PC_ERR_INVALID, "no expressible runs to fit");
    }
    st = lm(&f, x, o.max_iter > 0 ? o.max_iter : 60, err);
    free(f.idx), free(f.meas);
    if (st) {
        pc_calib_free(f.cal);
        return st;
    }
    snprintf(f.cal->origin, sizeof f.cal->origin, "fitted on %d runs", f.n);
    *out = f.cal;
    return PC_OK;
}
