/* Feature preprocessing: fitted column drop, sign-log and standardization. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "gnn/gnn.h"

static double slog(double x) { return x < 0 ? -log1p(-x) : log1p(x); }

pc_status pc_prep_acc_init(pc_prep_acc *a, int dim, double log_threshold, pc_error *err) {
    memset(a, 0, sizeof *a);
    if (dim <= 0) return pc_fail(err, PC_ERR_ARG, "prep: dim %d must be positive", dim);
    a->dim = dim;
    a->log_threshold = log_threshold;
    double **arrs[] = {&a->min, &a->max, &a->maxabs, &a->s1, &a->s2, &a->l1, &a->l2};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        *arrs[i] = pc_calloc_array((uint64_t)dim, sizeof(double));
        if (!*arrs[i]) {
            pc_prep_acc_free(a);
            return pc_fail(err, PC_ERR_NOMEM, "prep: out of memory");
        }
    }
    for (int c = 0; c < dim; c++) {
        a->min[c] = INFINITY;
        a->max[c] = -INFINITY;
    }
    return PC_OK;
}

void pc_prep_acc_add(pc_prep_acc *a, const float *x, int64_t rows) {
    int D = a->dim;
    for (int64_t r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * (size_t)D;
        for (int c = 0; c < D; c++) {
            double v = row[c];
            if (v < a->min[c]) a->min[c] = v;
            if (v > a->max[c]) a->max[c] = v;
            if (fabs(v) > a->maxabs[c]) a->maxabs[c] = fabs(v);
            a->s1[c] += v;
            a->s2[c] += v * v;
            double l = slog(v);
            a->l1[c] += l;
            a->l2[c] += l * l;
        }
    }
    a->rows += rows;
}

static pc_status prep_alloc(pc_prep *p, int in_dim, int out_dim, pc_error *err) {
    memset(p, 0, sizeof *p);
    uint64_t n = out_dim > 0 ? (uint64_t)out_dim : 1;
    p->keep = pc_calloc_array(n, sizeof(int32_t));
    p->logt = pc_calloc_array(n, sizeof(int32_t));
    p->mean = pc_calloc_array(n, sizeof(float));
    p->std = pc_calloc_array(n, sizeof(float));
    if (!p->keep || !p->logt || !p->mean || !p->std) {
        pc_prep_free(p);
        return pc_fail(err, PC_ERR_NOMEM, "prep: out of memory");
    }
    p->in_dim = in_dim;
    p->out_dim = out_dim;
    return PC_OK;
}

pc_status pc_prep_acc_finish(const pc_prep_acc *a, pc_prep *out, pc_error *err) {
    if (a->rows <= 0) return pc_fail(err, PC_ERR_ARG, "prep: no rows to fit on");
    int kept = 0;
    for (int c = 0; c < a->dim; c++) kept += a->max[c] > a->min[c];
    pc_prep tmp;
    pc_status st = prep_alloc(&tmp, a->dim, kept, err);
    if (st) return st;
    pc_prep_free(out);
    *out = tmp;
    double n = (double)a->rows;
    int j = 0;
    for (int c = 0; c < a->dim; c++) {
        if (!(a->max[c] > a->min[c])) continue;
        int lg = a->maxabs[c] > a->log_threshold;
        double s1 = lg ? a->l1[c] : a->s1[c], s2 = lg ? a->l2[c] : a->s2[c];
        double mean = s1 / n;
        double var = s2 / n - mean * mean;
        double sd = var > 0 ? sqrt(var) : 0.0;
        out->keep[j] = c;
        out->logt[j] = lg;
        out->mean[j] = (float)mean;
        out->std[j] = sd < 1e-6 ? 1.0f : (float)sd;
        j++;
    }
    return PC_OK;
}

void pc_prep_acc_free(pc_prep_acc *a) {
    if (!a) return;
    free(a->min);
    free(a->max);
    free(a->maxabs);
    free(a->s1);
    free(a->s2);
    free(a->l1);
    free(a->l2);
    memset(a, 0, sizeof *a);
}

pc_status pc_prep_identity(pc_prep *p, int dim, pc_error *err) {
    if (dim <= 0) return pc_fail(err, PC_ERR_ARG, "prep: dim %d must be positive", dim);
    pc_prep tmp;
    pc_status st = prep_alloc(&tmp, dim, dim, err);
    if (st) return st;
    pc_prep_free(p);
    *p = tmp;
    for (int c = 0; c < dim; c++) {
        p->keep[c] = c;
        p->std[c] = 1.0f;
    }
    return PC_OK;
}

pc_status pc_prep_set(pc_prep *p, int in_dim, int out_dim, const int32_t *keep,
                      const int32_t *logt, const float *mean, const float *std, pc_error *err) {
    if (in_dim <= 0 || out_dim < 0 || out_dim > in_dim)
        return pc_fail(err, PC_ERR_ARG, "prep: bad dims in %d out %d", in_dim, out_dim);
    for (int j = 0; j < out_dim; j++) {
        if (keep[j] < 0 || keep[j] >= in_dim || (j > 0 && keep[j] <= keep[j - 1]))
            return pc_fail(err, PC_ERR_ARG, "prep: keep[%d] = %d not increasing in [0, %d)", j,
                           (int)keep[j], in_dim);
        if (logt[j] != 0 && logt[j] != 1)
            return pc_fail(err, PC_ERR_ARG, "prep: logt[%d] = %d not 0/1", j, (int)logt[j]);
        if (!(std[j] > 0.0f) || !isfinite(std[j]) || !isfinite(mean[j]))
            return pc_fail(err, PC_ERR_ARG, "prep: column %d has bad mean/std", j);
    }
    pc_prep tmp;
    pc_status st = prep_alloc(&tmp, in_dim, out_dim, err);
    if (st) return st;
    size_t n = (size_t)out_dim;
    if (n) {
        memcpy(tmp.keep, keep, n * sizeof *keep);
        memcpy(tmp.logt, logt, n * sizeof *logt);
        memcpy(tmp.mean, mean, n * sizeof *mean);
        memcpy(tmp.std, std, n * sizeof *std);
    }
    pc_prep_free(p);
    *p = tmp;
    return PC_OK;
}

pc_status pc_prep_copy(pc_prep *dst, const pc_prep *src, pc_error *err) {
    return pc_prep_set(dst, src->in_dim, src->out_dim, src->keep, src->logt, src->mean, src->std,
                       err);
}

void pc_prep_apply(const pc_prep *p, const float *in, int64_t rows, float *out) {
    int I = p->in_dim, O = p->out_dim;
#pragma omp parallel for schedule(static) if((size_t)rows * (size_t)O >= PC_PAR_MIN) \
    num_threads(pc_threads())
    for (int64_t r = 0; r < rows; r++) {
        const float *x = in + (size_t)r * (size_t)I;
        float *y = out + (size_t)r * (size_t)O;
        for (int j = 0; j < O; j++) {
            double v = x[p->keep[j]];
            if (p->logt[j]) v = slog(v);
            y[j] = (float)((v - p->mean[j]) / p->std[j]);
        }
    }
}

void pc_prep_free(pc_prep *p) {
    if (!p) return;
    free(p->keep);
    free(p->logt);
    free(p->mean);
    free(p->std);
    memset(p, 0, sizeof *p);
}
