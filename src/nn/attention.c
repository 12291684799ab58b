/*
 * Cross-configuration attention: multi-head scaled dot-product
 * self-attention over the K configurations of each graph, with a residual
 * and an optional pre-LayerNorm. See nn.h for the formula and buffers.
 *
 * The projections run over all G*K rows at once (pc_linear_*); the small
 * per-(group, head) products Q Kt^T and A V are single cblas_sgemm calls.
 * OpenMP splits the (group, head) pairs, each of which writes only its own
 * att/scratch slice and its own columns of its own rows, so the results do
 * not depend on the thread count.
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "common/threads.h"
#include "nn/nn.h"

/* Offsets (floats) of the cache parts; R = G*K rows. */
typedef struct attn_layout {
    size_t y, mean, rstd, q, k, v, att, ctx, end;
} attn_layout;

static attn_layout layout_of(int G, int K, int C, int heads, int layernorm) {
    size_t R = (size_t)G * K, RC = R * (size_t)C;
    attn_layout l;
    size_t at = 0;
    l.y = at, at += layernorm ? RC : 0;
    l.mean = at, at += layernorm ? R : 0;
    l.rstd = at, at += layernorm ? R : 0;
    l.q = at, at += RC;
    l.k = at, at += RC;
    l.v = at, at += RC;
    l.att = at, at += (size_t)G * heads * K * K;
    l.ctx = at, at += RC;
    l.end = at;
    return l;
}

size_t pc_cfg_attention_cache_size(int G, int K, int C, int heads, int layernorm) {
    return layout_of(G, K, C, heads, layernorm).end;
}

const float *pc_cfg_attention_att(const float *cache, int G, int K, int C, int layernorm) {
    return cache + layout_of(G, K, C, 1, layernorm).att; // att does not depend on heads
}

size_t pc_cfg_attention_scratch_size(int G, int K, int C, int heads, int layernorm) {
    size_t RC = (size_t)G * K * C;
    return (layernorm ? 5 : 4) * RC + (size_t)G * heads * K * K;
}

/* Parallel over (group, head) pairs only when there is enough work. */
static int attn_parallel(int G, int K, int C) {
    return (double)G * K * K * C >= PC_GEMM_PAR_MIN;
}

void pc_cfg_attention_forward(float *out, float *cache, const float *x,
                              const pc_cfg_attn_params *p, int G, int K, int C, int heads,
                              float eps) {
    if (G <= 0 || K <= 0 || C <= 0 || heads <= 0) return;
    int ln = p->ln_g != NULL;
    attn_layout l = layout_of(G, K, C, heads, ln);
    int R = G * K, d = C / heads;
    float *q = cache + l.q, *k = cache + l.k, *v = cache + l.v, *att = cache + l.att,
          *ctx = cache + l.ctx;
    const float *y = x;
    if (ln) {
        pc_layernorm_forward(cache + l.y, cache + l.mean, cache + l.rstd, x, p->ln_g, p->ln_b, R,
                             C, eps);
        y = cache + l.y;
    }
    pc_linear_forward(q, y, p->wq, p->bq, R, C, C);
    pc_linear_forward(k, y, p->wk, p->bk, R, C, C);
    pc_linear_forward(v, y, p->wv, p->bv, R, C, C);

    float scale = 1.0f / sqrtf((float)d);
    int pairs = G * heads;
#pragma omp parallel for schedule(static) if(attn_parallel(G, K, C)) num_threads(pc_threads())
    for (int gh = 0; gh < pairs; gh++) {
        int g = gh / heads, h = gh % heads;
        size_t row0 = (size_t)g * K * C + (size_t)h * d; // (row g*K, column h*d)
        float *a = att + (size_t)gh * K * K;             // (K,K)
        // a = scale * Q_h Kt_h^T
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, K, K, d, scale, q + row0, C,
                    k + row0, C, 0.0f, a, K);
        for (int i = 0; i < K; i++) {
            float *row = a + (size_t)i * K;
            float mx = row[0];
            for (int j = 1; j < K; j++) mx = row[j] > mx ? row[j] : mx;
            float s = 0.0f;
            for (int j = 0; j < K; j++) {
                row[j] = expf(row[j] - mx);
                s += row[j];
            }
            float inv = 1.0f / s;
            for (int j = 0; j < K; j++) row[j] *= inv;
        }
        // ctx_h (K,d) = A V_h
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, d, K, 1.0f, a, K, v + row0, C,
                    0.0f, ctx + row0, C);
    }

    pc_linear_forward(out, ctx, p->wo, p->bo, R, C, C);
    pc_residual_forward(out, out, x, (size_t)R * C);
}

void pc_cfg_attention_backward(float *dx, const pc_cfg_attn_grads *g, const float *dout,
                               const float *x, const float *cache, const pc_cfg_attn_params *p,
                               int G, int K, int C, int heads, float *scratch) {
    if (G <= 0 || K <= 0 || C <= 0 || heads <= 0) return;
    int ln = p->ln_g != NULL;
    attn_layout l = layout_of(G, K, C, heads, ln);
    int R = G * K, d = C / heads;
    size_t RC = (size_t)R * C;
    const float *q = cache + l.q, *k = cache + l.k, *v = cache + l.v, *att = cache + l.att,
                *ctx = cache + l.ctx, *y = ln ? cache + l.y : x;
    float *dctx = scratch, *dq = scratch + RC, *dk = scratch + 2 * RC, *dv = scratch + 3 * RC;
    float *datt = scratch + 4 * RC; // (G*heads*K*K)
    float *dy = ln ? datt + (size_t)G * heads * K * K : dx; // without LN, y == x

    // out = x + ctx Wo^T + bo
    pc_residual_backward(dx, NULL, dout, RC);
    memset(dctx, 0, RC * sizeof(float));
    pc_linear_backward(dctx, g->wo, g->bo, dout, ctx, p->wo, R, C, C);

    float scale = 1.0f / sqrtf((float)d);
    int pairs = G * heads;
#pragma omp parallel for schedule(static) if(attn_parallel(G, K, C)) num_threads(pc_threads())
    for (int gh = 0; gh < pairs; gh++) {
        int gg = gh / heads, h = gh % heads;
        size_t row0 = (size_t)gg * K * C + (size_t)h * d;
        const float *a = att + (size_t)gh * K * K;
        float *da = datt + (size_t)gh * K * K;
        // dA = dctx_h V_h^T; dV_h = A^T dctx_h (every column of dV is written by one pair)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, K, K, d, 1.0f, dctx + row0, C,
                    v + row0, C, 0.0f, da, K);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, d, K, 1.0f, a, K, dctx + row0, C,
                    0.0f, dv + row0, C);
        // softmax backward, in place, with the 1/sqrt(d) folded in:
        // dS_ij = scale * A_ij (dA_ij - sum_m A_im dA_im)
        for (int i = 0; i < K; i++) {
            const float *ar = a + (size_t)i * K;
            float *dr = da + (size_t)i * K;
            float s = 0.0f;
            for (int j = 0; j < K; j++) s += ar[j] * dr[j];
            for (int j = 0; j < K; j++) dr[j] = scale * ar[j] * (dr[j] - s);
        }
        // dQ_h = dS Kt_h; dKt_h = dS^T Q_h
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, d, K, 1.0f, da, K, k + row0, C,
                    0.0f, dq + row0, C);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, d, K, 1.0f, da, K, q + row0, C,
                    0.0f, dk + row0, C);
    }

    // projections: dy += dQ Wq + dKt Wk + dV Wv (in this order)
    if (ln) memset(dy, 0, RC * sizeof(float));
    pc_linear_backward(dy, g->wq, g->bq, dq, y, p->wq, R, C, C);
    pc_linear_backward(dy, g->wk, g->bk, dk, y, p->wk, R, C, C);
    pc_linear_backward(dy, g->wv, g->bv, dv, y, p->wv, R, C, C);
    if (ln)
        pc_layernorm_backward(dx, g->ln_g, g->ln_b, dy, x, p->ln_g, cache + l.mean,
                              cache + l.rstd, R, C);
}
