/*
 * Dense ops: linear (OpenBLAS SGEMM), residual, concat, gather/scatter,
 * embedding, activations and dropout. See nn.h for shapes and conventions.
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "nn/nn.h"

/* ---- threads and GEMM ----------------------------------------------------- */

void pc_nn_blas_single(void) {
    /* serial OpenBLAS: 1 already; OpenMP OpenBLAS: its setter would set the
       process's OpenMP count, and it runs alone inside OpenMP regions anyway */
    if (openblas_get_parallel() == OPENBLAS_THREAD && openblas_get_num_threads() != 1)
        openblas_set_num_threads(1);
}

/*
 * C (M,N) = op(A) @ op(B) + beta * C, row-major, with OpenBLAS
 * single-threaded. A large product is cut into blocks of C, one sgemm call
 * per block, spread over OpenMP threads. The blocks depend only on the
 * shape, never on the thread count, so results are bitwise the same for any
 * thread count (OpenBLAS picks kernels by block size). Row blocks when C is
 * tall (activations, dinp); column blocks when it is short and wide (dW).
 */
enum { GEMM_ROW_BLOCK = 256, GEMM_COL_BLOCK = 32 };

static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    int by_rows = M >= 2 * GEMM_ROW_BLOCK, by_cols = !by_rows && N >= 2 * GEMM_COL_BLOCK;
    if ((double)M * N * K < PC_GEMM_PAR_MIN || (!by_rows && !by_cols)) {
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    int bs = by_rows ? GEMM_ROW_BLOCK : GEMM_COL_BLOCK;
    int nb = ((by_rows ? M : N) + bs - 1) / bs;
#pragma omp parallel for schedule(static) if(!omp_in_parallel()) num_threads(pc_threads())
    for (int i = 0; i < nb; i++) {
        int lo = i * bs, len = (by_rows ? M : N) - lo < bs ? (by_rows ? M : N) - lo : bs;
        if (by_rows) { // rows lo.. of op(A): a row offset for NoTrans, a column one for Trans
            const float *a = ta == CblasNoTrans ? A + (size_t)lo * lda : A + lo;
            cblas_sgemm(CblasRowMajor, ta, tb, len, N, K, 1.0f, a, lda, B, ldb, beta,
                        C + (size_t)lo * ldc, ldc);
        } else { // columns lo.. of op(B)
            const float *b = tb == CblasNoTrans ? B + lo : B + (size_t)lo * ldb;
            cblas_sgemm(CblasRowMajor, ta, tb, M, len, K, 1.0f, A, lda, b, ldb, beta, C + lo,
                        ldc);
        }
    }
}

/* ---- linear -------------------------------------------------------------- */

void pc_linear_forward(float *out, const float *in, const float *w, const float *b, int N, int IC,
                       int OC) {
    if (N <= 0 || OC <= 0) return;
    if (IC <= 0) { /* empty inner product: out = b */
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) out[(size_t)n * OC + o] = b ? b[o] : 0.0f;
        return;
    }
    // out (N,OC) = in (N,IC) @ w^T, w (OC,IC)
    gemm(CblasNoTrans, CblasTrans, N, OC, IC, in, IC, w, IC, 0.0f, out, OC);
    if (!b) return;
#pragma omp parallel for schedule(static) if((size_t)N * OC >= PC_PAR_MIN) num_threads(pc_threads())
    for (int n = 0; n < N; n++) {
        float *row = out + (size_t)n * OC;
        for (int o = 0; o < OC; o++) row[o] += b[o];
    }
}

void pc_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *in,
                        const float *w, int N, int IC, int OC) {
    if (N <= 0 || OC <= 0) return;
    if (IC > 0) {
        // dinp (N,IC) += dout (N,OC) @ w (OC,IC)
        if (dinp) gemm(CblasNoTrans, CblasNoTrans, N, IC, OC, dout, OC, w, IC, 1.0f, dinp, IC);
        // dw (OC,IC) += dout^T (OC,N) @ in (N,IC)
        gemm(CblasTrans, CblasNoTrans, OC, IC, N, dout, OC, in, IC, 1.0f, dw, IC);
    }
    if (!db) return;
    // db (OC) += column sums of dout, each in row order by one thread (as layernorm)
#pragma omp parallel for schedule(static) if((size_t)N * OC >= PC_PAR_MIN) num_threads(pc_threads())
    for (int o0 = 0; o0 < OC; o0 += PC_COL_BLOCK) {
        int nc = OC - o0 < PC_COL_BLOCK ? OC - o0 : PC_COL_BLOCK;
        float s[PC_COL_BLOCK] = {0};
        for (int n = 0; n < N; n++) {
            const float *row = dout + (size_t)n * OC + o0;
            for (int j = 0; j < nc; j++) s[j] += row[j];
        }
        for (int j = 0; j < nc; j++) db[o0 + j] += s[j];
    }
}

/* ---- residual and concat -------------------------------------------------- */

void pc_residual_forward(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void pc_residual_backward(float *da, float *db, const float *dout, size_t n) {
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) {
        if (da) da[i] += dout[i];
        if (db) db[i] += dout[i];
    }
}

static int concat_width(const int *cs, int k) {
    int w = 0;
    for (int j = 0; j < k; j++) w += cs[j];
    return w;
}

void pc_concat_forward(float *out, const float *const *ins, const int *cs, int k, int N) {
    int W = concat_width(cs, k);
#pragma omp parallel for schedule(static) if((size_t)N * W >= PC_PAR_MIN) num_threads(pc_threads())
    for (int n = 0; n < N; n++) {
        float *row = out + (size_t)n * W;
        for (int j = 0; j < k; j++) {
            memcpy(row, ins[j] + (size_t)n * cs[j], (size_t)cs[j] * sizeof(float));
            row += cs[j];
        }
    }
}

void pc_concat_backward(float *const *dins, const float *dout, const int *cs, int k, int N) {
    int W = concat_width(cs, k);
#pragma omp parallel for schedule(static) if((size_t)N * W >= PC_PAR_MIN) num_threads(pc_threads())
    for (int n = 0; n < N; n++) {
        const float *row = dout + (size_t)n * W;
        for (int j = 0; j < k; j++) {
            if (dins[j]) {
                float *d = dins[j] + (size_t)n * cs[j];
                for (int c = 0; c < cs[j]; c++) d[c] += row[c];
            }
            row += cs[j];
        }
    }
}

/* ---- gather / scatter / embedding ----------------------------------------- */

void pc_gather_forward(float *out, const float *x, const int32_t *idx, int K, int C) {
#pragma omp parallel for schedule(static) if((size_t)K * C >= PC_PAR_MIN) num_threads(pc_threads())
    for (int k = 0; k < K; k++)
        memcpy(out + (size_t)k * C, x + (size_t)idx[k] * C, (size_t)C * sizeof(float));
}

/*
 * Rows of idx may repeat, so two k can hit the same dx row. Threads split
 * the channels instead of k: each thread owns whole columns and adds in k
 * order, which is deterministic and needs no atomics.
 */
void pc_gather_backward(float *dx, const float *dout, const int32_t *idx, int K, int Nx, int C) {
    (void)Nx;
#pragma omp parallel for schedule(static) if((size_t)K * C >= PC_PAR_MIN) num_threads(pc_threads())
    for (int c0 = 0; c0 < C; c0 += PC_COL_BLOCK) {
        int nc = C - c0 < PC_COL_BLOCK ? C - c0 : PC_COL_BLOCK;
        for (int k = 0; k < K; k++) {
            float *d = dx + (size_t)idx[k] * C + c0;
            const float *g = dout + (size_t)k * C + c0;
            for (int j = 0; j < nc; j++) d[j] += g[j];
        }
    }
}

void pc_scatter_add_forward(float *out, const float *src, const int32_t *idx, int K, int Nout,
                            int C) {
    // out[idx[k]] += src[k] is the gather backward with src as the gradient
    pc_gather_backward(out, src, idx, K, Nout, C);
}

void pc_scatter_add_backward(float *dsrc, const float *dout, const int32_t *idx, int K, int C) {
#pragma omp parallel for schedule(static) if((size_t)K * C >= PC_PAR_MIN) num_threads(pc_threads())
    for (int k = 0; k < K; k++) {
        const float *g = dout + (size_t)idx[k] * C;
        float *d = dsrc + (size_t)k * C;
        for (int c = 0; c < C; c++) d[c] += g[c];
    }
}

void pc_embedding_forward(float *out, const float *table, const int32_t *ids, int N, int C) {
    pc_gather_forward(out, table, ids, N, C);
}

void pc_embedding_backward(float *dtable, const float *dout, const int32_t *ids, int N, int V,
                           int C) {
    pc_gather_backward(dtable, dout, ids, N, V, C);
}

/* ---- activations ----------------------------------------------------------- */

void pc_relu_forward(float *out, const float *in, size_t n) {
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

void pc_relu_backward(float *dinp, const float *dout, const float *in, size_t n) {
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++)
        if (in[i] > 0.0f) dinp[i] += dout[i];
}

/*
 * Leaky ReLU as x times a gain of 1 or slope, the gain picked with an integer
 * mask so the loop has no branch: gcc -O3 vectorizes it (compare, and/andnot/
 * or, multiply). Written as `x > 0 ? x : slope * x` (or with a float select
 * of the gain, which gcc turns back into that) the multiply sits in one arm
 * and, under the default -ftrapping-math, the vectorizer will not speculate
 * it: the loop stayed scalar. Same bits as the branchy form: x * 1 == x,
 * slope * x == x * slope, NaN stays NaN, and x == 0 takes the slope.
 */
static inline float lrelu_gain(float x, uint32_t one_bits, uint32_t slope_bits) {
    uint32_t pos = 0u - (uint32_t)(x > 0.0f); /* all ones when x > 0 */
    uint32_t g = (one_bits & pos) | (slope_bits & ~pos);
    float gain;
    memcpy(&gain, &g, sizeof gain);
    return gain;
}

static uint32_t f32_bits(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

void pc_leaky_relu_forward(float *out, const float *in, float slope, size_t n) {
    const uint32_t ob = f32_bits(1.0f), sb = f32_bits(slope);
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) out[i] = in[i] * lrelu_gain(in[i], ob, sb);
}

void pc_leaky_relu_backward(float *dinp, const float *dout, const float *in, float slope,
                            size_t n) {
    const uint32_t ob = f32_bits(1.0f), sb = f32_bits(slope);
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) dinp[i] += dout[i] * lrelu_gain(in[i], ob, sb);
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

void pc_gelu_forward(float *out, const float *in, size_t n) {
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN / 4) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) {
        float x = in[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanhf(u));
    }
}

void pc_gelu_backward(float *dinp, const float *dout, const float *in, size_t n) {
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN / 4) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) {
        float x = in[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float t = tanhf(u);
        float sech2 = 1.0f - t * t;
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += dout[i] * (0.5f * (1.0f + t) + 0.5f * x * sech2 * du);
    }
}

void pc_prelu_forward(float *out, const float *in, const float *a, int N, int C) {
#pragma omp parallel for schedule(static) if((size_t)N * C >= PC_PAR_MIN) num_threads(pc_threads())
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)n * C + c;
            out[i] = in[i] >= 0.0f ? in[i] : a[c] * in[i];
        }
}

void pc_prelu_backward(float *dinp, float *da, const float *dout, const float *in, const float *a,
                       int N, int C) {
    if (dinp) {
#pragma omp parallel for schedule(static) if((size_t)N * C >= PC_PAR_MIN) num_threads(pc_threads())
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
                size_t i = (size_t)n * C + c;
                dinp[i] += in[i] >= 0.0f ? dout[i] : a[c] * dout[i];
            }
    }
    // da sums over rows: one thread per channel keeps the order fixed
#pragma omp parallel for schedule(static) if((size_t)N * C >= PC_PAR_MIN) num_threads(pc_threads())
    for (int c = 0; c < C; c++) {
        float s = 0.0f;
        for (int n = 0; n < N; n++) {
            size_t i = (size_t)n * C + c;
            if (in[i] < 0.0f) s += dout[i] * in[i];
        }
        da[c] += s;
    }
}

/* ---- dropout ---------------------------------------------------------------- */

/* splitmix64 finalizer: a counter-based hash, so element i's draw is independent of threads. */
static uint64_t mix64(uint64_t z) { return pc_splitmix64(&z); }

void pc_dropout_forward(float *out, uint8_t *mask, const float *in, float p, uint64_t *seed,
                        size_t n) {
    if (p <= 0.0f) {
        memmove(out, in, n * sizeof(float));
        memset(mask, 1, n);
        return;
    }
    uint64_t key = mix64(*seed);
    *seed = mix64(key ^ UINT64_C(0xD1B54A32D192ED03));
    // keep when a uniform 53-bit draw is >= p
    uint64_t thresh = (uint64_t)((double)p * 9007199254740992.0);
    float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) {
        uint64_t r = mix64(key + (uint64_t)i) >> 11;
        mask[i] = r >= thresh;
        out[i] = mask[i] ? in[i] * scale : 0.0f;
    }
}

void pc_dropout_backward(float *dinp, const float *dout, const uint8_t *mask, float p, size_t n) {
    float scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++)
        if (mask[i]) dinp[i] += dout[i] * scale;
}
