/*
 * SGEMM throughput at perfcast's model shapes vs OpenBLAS's own peak (the
 * C side of run_gemm.sh).
 *
 *   bench_gemm peak SIZE BLAS_THREADS TRIALS
 *       C (S,S) = A (S,S) @ B (S,S), one plain cblas_sgemm call, OpenBLAS
 *       using BLAS_THREADS of its own threads (openblas_set_num_threads).
 *   bench_gemm model ROWS IC OC OMP_THREADS TRIALS
 *       the three GEMMs of one linear layer with ROWS rows, IC inputs and OC
 *       outputs, exactly as src/nn/ops.c issues them (OpenBLAS single-threaded,
 *       the product cut into row blocks of 256 or column blocks of 32 that
 *       OpenMP threads share; same thresholds):
 *         fwd  out (ROWS,OC)  = in (ROWS,IC) @ w^T          NoTrans, Trans,  beta 0
 *         dX   din (ROWS,IC) += dout (ROWS,OC) @ w (OC,IC)  NoTrans, NoTrans, beta 1
 *         dW   dw (OC,IC)    += dout^T @ in                 Trans,   NoTrans, beta 1
 *       (bias adds, which ops.c does in separate loops, are not included).
 *
 * Each trial repeats the product enough times to take about 0.2 s and
 * yields one rate; prints best and median GFLOP/s (2*M*N*K flops per
 * product) over TRIALS trials. Inputs are random in [-1, 1]; beta-1 outputs
 * are reset only at allocation (their growth does not change the speed).
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the constants of src/nn/ops.c and src/nn/nn.h (kept in sync by hand) */
enum { GEMM_ROW_BLOCK = 256, GEMM_COL_BLOCK = 32 };
#define GEMM_PAR_MIN (1 << 18)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A copy of gemm() in src/nn/ops.c. */
static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    int by_rows = M >= 2 * GEMM_ROW_BLOCK, by_cols = !by_rows && N >= 2 * GEMM_COL_BLOCK;
    if ((double)M * N * K < GEMM_PAR_MIN || (!by_rows && !by_cols)) {
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    int bs = by_rows ? GEMM_ROW_BLOCK : GEMM_COL_BLOCK;
    int nb = ((by_rows ? M : N) + bs - 1) / bs;
#pragma omp parallel for schedule(static) if(!omp_in_parallel())
    for (int i = 0; i < nb; i++) {
        int lo = i * bs, len = (by_rows ? M : N) - lo < bs ? (by_rows ? M : N) - lo : bs;
        if (by_rows) {
            const float *a = ta == CblasNoTrans ? A + (size_t)lo * lda : A + lo;
            cblas_sgemm(CblasRowMajor, ta, tb, len, N, K, 1.0f, a, lda, B, ldb, beta,
                        C + (size_t)lo * ldc, ldc);
        } else {
            const float *b = tb == CblasNoTrans ? B + lo : B + (size_t)lo * ldb;
            cblas_sgemm(CblasRowMajor, ta, tb, M, len, K, 1.0f, A, lda, b, ldb, beta, C + lo,
                        ldc);
        }
    }
}

static float *rnd(size_t n, unsigned *seed) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_gemm: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = (float)(*seed >> 8) / 8388608.0f - 1.0f;
    }
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct job {
    int which; /* 0 peak, 1 fwd, 2 dX, 3 dW */
    int M, N, K;
    const float *a, *b;
    float *c;
} job;

static void run_once(const job *j) {
    switch (j->which) {
    case 0:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->M, j->N, j->K, 1.0f, j->a, j->K,
                    j->b, j->N, 0.0f, j->c, j->N);
        break;
    case 1: /* out (R,OC) = in (R,IC) @ w^T: M=R N=OC K=IC, a=in, b=w */
        gemm(CblasNoTrans, CblasTrans, j->M, j->N, j->K, j->a, j->K, j->b, j->K, 0.0f, j->c,
             j->N);
        break;
    case 2: /* din (R,IC) += dout (R,OC) @ w (OC,IC): M=R N=IC K=OC, a=dout, b=w */
        gemm(CblasNoTrans, CblasNoTrans, j->M, j->N, j->K, j->a, j->K, j->b, j->N, 1.0f, j->c,
             j->N);
        break;
    default: /* dw (OC,IC) += dout^T (OC,R) @ in (R,IC): M=OC N=IC K=R, a=dout, b=in */
        gemm(CblasTrans, CblasNoTrans, j->M, j->N, j->K, j->a, j->M, j->b, j->N, 1.0f, j->c,
             j->N);
        break;
    }
}

/* Prints best and median GFLOP/s over trials of about 0.2 s each. */
static void measure(const char *label, const job *j, int trials) {
    double flops = 2.0 * j->M * (double)j->N * j->K;
    run_once(j); /* warm: page faults, OpenBLAS buffers, thread start */
    double t0 = now_s();
    run_once(j);
    double one = now_s() - t0;
    long iters = one > 0 ? (long)(0.2 / one) : 1000;
    if (iters < 1) iters = 1;
    double *r = malloc((size_t)trials * sizeof *r);
    if (!r) exit(1);
    for (int t = 0; t < trials; t++) {
        t0 = now_s();
        for (long i = 0; i < iters; i++) run_once(j);
        r[t] = flops * (double)iters / (now_s() - t0) / 1e9;
    }
    qsort(r, (size_t)trials, sizeof *r, cmp_double);
    double med = trials % 2 ? r[trials / 2] : 0.5 * (r[trials / 2 - 1] + r[trials / 2]);
    printf("%s M %d N %d K %d iters %ld gflops best %.1f med %.1f\n", label, j->M, j->N, j->K,
           iters, r[trials - 1], med);
    free(r);
}

int main(int argc, char **argv) {
    unsigned seed = 12345u;
    if (argc == 5 && !strcmp(argv[1], "peak")) {
        int S = atoi(argv[2]), bt = atoi(argv[3]), trials = atoi(argv[4]);
        if (S < 1 || bt < 1 || trials < 1) return 2;
        openblas_set_num_threads(bt);
        size_t n = (size_t)S * (size_t)S;
        float *a = rnd(n, &seed), *b = rnd(n, &seed), *c = rnd(n, &seed);
        printf("# openblas %s core %s, blas threads %d\n", openblas_get_config(),
               openblas_get_corename(), openblas_get_num_threads());
        char label[64];
        snprintf(label, sizeof label, "peak blas_threads %d", bt);
        job j = {0, S, S, S, a, b, c};
        measure(label, &j, trials);
        free(a);
        free(b);
        free(c);
        return 0;
    }
    if (argc == 7 && !strcmp(argv[1], "model")) {
        int R = atoi(argv[2]), IC = atoi(argv[3]), OC = atoi(argv[4]);
        int th = atoi(argv[5]), trials = atoi(argv[6]);
        if (R < 1 || IC < 1 || OC < 1 || th < 1 || trials < 1) return 2;
        omp_set_num_threads(th);
        openblas_set_num_threads(1);
        float *in = rnd((size_t)R * IC, &seed), *w = rnd((size_t)OC * IC, &seed);
        float *dout = rnd((size_t)R * OC, &seed), *out = rnd((size_t)R * OC, &seed);
        float *din = calloc((size_t)R * IC, sizeof *din), *dw = calloc((size_t)OC * IC, sizeof *dw);
        if (!din || !dw) return 1;
        char label[96];
        job jf = {1, R, OC, IC, in, w, out};
        snprintf(label, sizeof label, "model omp_threads %d fwd", th);
        measure(label, &jf, trials);
        job jx = {2, R, IC, OC, dout, w, din};
        snprintf(label, sizeof label, "model omp_threads %d dX ", th);
        measure(label, &jx, trials);
        job jw = {3, OC, IC, R, dout, in, dw};
        snprintf(label, sizeof label, "model omp_threads %d dW ", th);
        measure(label, &jw, trials);
        free(in);
        free(w);
        free(dout);
        free(out);
        free(din);
        free(dw);
        return 0;
    }
    fprintf(stderr, "usage: bench_gemm peak SIZE BLAS_THREADS TRIALS\n"
                    "       bench_gemm model ROWS IC OC OMP_THREADS TRIALS\n");
    return 2;
}
