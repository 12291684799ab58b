/*
 * Normalization: LayerNorm over the channels of a row, and GraphNorm /
 * InstanceNorm over the nodes of each graph segment. See nn.h.
 */
#include <math.h>

#include "common/threads.h"
#include "nn/nn.h"

/* ---- LayerNorm ------------------------------------------------------------ */

void pc_layernorm_forward(float *out, float *mean, float *rstd, const float *in,
                          const float *gamma, const float *beta, int N, int C, float eps) {
#pragma omp parallel for schedule(static) if((size_t)N * C >= PC_PAR_MIN) num_threads(pc_threads())
    for (int n = 0; n < N; n++) {
        const float *x = in + (size_t)n * C; // (C)
        float *y = out + (size_t)n * C;      // (C)
        // two passes: the variance of centred values does not cancel catastrophically
        float m = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= (float)C;
        float v = 0.0f;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= (float)C;
        float s = 1.0f / sqrtf(v + eps);
        for (int c = 0; c < C; c++) y[c] = (x[c] - m) * s * gamma[c] + beta[c];
        mean[n] = m;
        rstd[n] = s;
    }
}

void pc_layernorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout,
                           const float *in, const float *gamma, const float *mean,
                           const float *rstd, int N, int C) {
    // dinp: rows are independent
#pragma omp parallel for schedule(static) if((size_t)N * C >= PC_PAR_MIN) num_threads(pc_threads())
    for (int n = 0; n < N; n++) {
        const float *x = in + (size_t)n * C;
        const float *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C;
        float m = mean[n], s = rstd[n];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float dnorm = gamma[c] * dy[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * (x[c] - m) * s;
        }
        dnorm_mean /= (float)C;
        dnorm_norm_mean /= (float)C;
        for (int c = 0; c < C; c++) {
            float norm = (x[c] - m) * s;
            dx[c] += (gamma[c] * dy[c] - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
    }
    // dgamma, dbeta sum over rows. Each channel is summed in row order by one
    // thread; threads own blocks of 16 channels (one cache line of a row), so
    // rows are read sequentially and the sums do not depend on the threads.
#pragma omp parallel for schedule(static) if((size_t)N * C >= PC_PAR_MIN) num_threads(pc_threads())
    for (int c0 = 0; c0 < C; c0 += PC_COL_BLOCK) {
        int nc = C - c0 < PC_COL_BLOCK ? C - c0 : PC_COL_BLOCK;
        float sg[PC_COL_BLOCK] = {0}, sb[PC_COL_BLOCK] = {0};
        for (int n = 0; n < N; n++) {
            const float *dy = dout + (size_t)n * C + c0, *x = in + (size_t)n * C + c0;
            float m = mean[n], r = rstd[n];
            for (int j = 0; j < nc; j++) {
                sg[j] += dy[j] * (x[j] - m) * r;
                sb[j] += dy[j];
            }
        }
        for (int j = 0; j < nc; j++) {
            dgamma[c0 + j] += sg[j];
            dbeta[c0 + j] += sb[j];
        }
    }
}

/* ---- GraphNorm / InstanceNorm --------------------------------------------- */

/*
 * Threads split channels; each handles its channel for every graph, so the
 * per-channel parameter gradients in backward are written by one thread.
 */
void pc_graphnorm_forward(float *out, float *mean, float *rstd, const float *in,
                          const float *alpha, const float *gamma, const float *beta,
                          const int32_t *off, int G, int C, float eps) {
#pragma omp parallel for schedule(static) if((size_t)off[G] * C >= PC_PAR_MIN) \
    num_threads(pc_threads())
    for (int c = 0; c < C; c++) {
        float a = alpha ? alpha[c] : 1.0f;
        for (int g = 0; g < G; g++) {
            int lo = off[g], hi = off[g + 1];
            if (hi <= lo) continue;
            float m = 0.0f;
            for (int i = lo; i < hi; i++) m += in[(size_t)i * C + c];
            m /= (float)(hi - lo);
            float v = 0.0f;
            for (int i = lo; i < hi; i++) {
                float d = in[(size_t)i * C + c] - a * m;
                v += d * d;
            }
            v /= (float)(hi - lo);
            float s = 1.0f / sqrtf(v + eps);
            for (int i = lo; i < hi; i++) {
                size_t k = (size_t)i * C + c;
                out[k] = (in[k] - a * m) * s * gamma[c] + beta[c];
            }
            mean[(size_t)g * C + c] = m;
            rstd[(size_t)g * C + c] = s;
        }
    }
}

/*
 * With xhat = (x - a m) * rstd and dxhat = gamma * dy:
 *   dcentred_i = rstd * (dxhat_i - xhat_i * mean(dxhat * xhat))
 *   dx_i = dcentred_i - a * mean(dcentred),  dalpha -= m * sum(dcentred).
 */
void pc_graphnorm_backward(float *dinp, float *dalpha, float *dgamma, float *dbeta,
                           const float *dout, const float *in, const float *alpha,
                           const float *gamma, const float *mean, const float *rstd,
                           const int32_t *off, int G, int C) {
#pragma omp parallel for schedule(static) if((size_t)off[G] * C >= PC_PAR_MIN) \
    num_threads(pc_threads())
    for (int c = 0; c < C; c++) {
        float a = alpha ? alpha[c] : 1.0f;
        float sa = 0.0f, sg = 0.0f, sb = 0.0f;
        for (int g = 0; g < G; g++) {
            int lo = off[g], hi = off[g + 1];
            if (hi <= lo) continue;
            float m = mean[(size_t)g * C + c], s = rstd[(size_t)g * C + c];
            float inv_n = 1.0f / (float)(hi - lo);
            float dxx = 0.0f; // sum dxhat * xhat
            for (int i = lo; i < hi; i++) {
                size_t k = (size_t)i * C + c;
                float xhat = (in[k] - a * m) * s;
                dxx += gamma[c] * dout[k] * xhat;
                sg += dout[k] * xhat;
                sb += dout[k];
            }
            dxx *= inv_n;
            float dcsum = 0.0f; // sum of dcentred
            for (int i = lo; i < hi; i++) {
                size_t k = (size_t)i * C + c;
                float xhat = (in[k] - a * m) * s;
                dcsum += s * (gamma[c] * dout[k] - xhat * dxx);
            }
            sa -= m * dcsum;
            if (!dinp) continue;
            for (int i = lo; i < hi; i++) {
                size_t k = (size_t)i * C + c;
                float xhat = (in[k] - a * m) * s;
                float dcen = s * (gamma[c] * dout[k] - xhat * dxx);
                dinp[k] += dcen - a * dcsum * inv_n;
            }
        }
        if (alpha && dalpha) dalpha[c] += sa;
        dgamma[c] += sg;
        dbeta[c] += sb;
    }
}
