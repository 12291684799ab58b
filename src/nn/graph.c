/*
 * Graph ops: the two adjacency lists of a graph (CSR), GraphSAGE-style
 * neighbour aggregation along either edge direction, and per-graph pooling.
 */
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "nn/nn.h"

/* ---- CSR -------------------------------------------------------------------- */

/*
 * Counting sort of the M (key, val) pairs by key into ptr (n+1) / idx (M).
 * Stable, so each node's neighbours keep edge order and the sums in the
 * aggregation run in an order that does not depend on anything but the data.
 */
static void csr_fill(int32_t *ptr, int32_t *idx, const int32_t *edges, int m, int n, int key_col) {
    memset(ptr, 0, (size_t)(n + 1) * sizeof(int32_t));
    for (int e = 0; e < m; e++) ptr[edges[2 * e + key_col] + 1]++;
    for (int i = 0; i < n; i++) ptr[i + 1] += ptr[i];
    // ptr[i] is the start of row i; use it as row i's write cursor
    for (int e = 0; e < m; e++) {
        int32_t k = edges[2 * e + key_col];
        idx[ptr[k]++] = edges[2 * e + 1 - key_col];
    }
    // each ptr[i] moved on to the start of row i+1; shift back by one row
    for (int i = n; i > 0; i--) ptr[i] = ptr[i - 1];
    ptr[0] = 0;
}

pc_status pc_csr_build(pc_csr *csr, const int32_t *edges, int m, int n, pc_error *err) {
    memset(csr, 0, sizeof *csr);
    if (n < 0 || m < 0) return pc_fail(err, PC_ERR_ARG, "csr: negative size (n=%d, m=%d)", n, m);
    for (int e = 0; e < m; e++)
        for (int j = 0; j < 2; j++)
            if (edges[2 * e + j] < 0 || edges[2 * e + j] >= n)
                return pc_fail(err, PC_ERR_RANGE,
                               "csr: edge_index[%d][%d] = %d, expected a node id in [0, %d)", e, j,
                               (int)edges[2 * e + j], n);
    csr->ops_ptr = pc_malloc_array((uint64_t)n + 1, sizeof(int32_t));
    csr->users_ptr = pc_malloc_array((uint64_t)n + 1, sizeof(int32_t));
    // +1 so m == 0 still allocates
    csr->ops_idx = pc_malloc_array((uint64_t)m + 1, sizeof(int32_t));
    csr->users_idx = pc_malloc_array((uint64_t)m + 1, sizeof(int32_t));
    if (!csr->ops_ptr || !csr->users_ptr || !csr->ops_idx || !csr->users_idx) {
        pc_csr_free(csr);
        return pc_fail(err, PC_ERR_NOMEM, "csr: out of memory for %d nodes, %d edges", n, m);
    }
    csr->n = n;
    csr->m = m;
    csr_fill(csr->ops_ptr, csr->ops_idx, edges, m, n, 0);   // u -> its operands v
    csr_fill(csr->users_ptr, csr->users_idx, edges, m, n, 1); // v -> its users u
    return PC_OK;
}

void pc_csr_free(pc_csr *csr) {
    if (!csr) return;
    free(csr->ops_ptr);
    free(csr->ops_idx);
    free(csr->users_ptr);
    free(csr->users_idx);
    memset(csr, 0, sizeof *csr);
}

/* ---- edge aggregation --------------------------------------------------- */

/* The list each node reads from in the forward pass, and its transpose. */
static void csr_pick(const pc_csr *csr, pc_edge_dir dir, const int32_t **ptr, const int32_t **idx,
                     const int32_t **tptr, const int32_t **tidx) {
    int fwd_ops = dir == PC_EDGE_FROM_OPERANDS;
    *ptr = fwd_ops ? csr->ops_ptr : csr->users_ptr;
    *idx = fwd_ops ? csr->ops_idx : csr->users_idx;
    *tptr = fwd_ops ? csr->users_ptr : csr->ops_ptr;
    *tidx = fwd_ops ? csr->users_idx : csr->ops_idx;
}

void pc_edge_aggregate_forward(float *out, const float *x, const pc_csr *csr, pc_edge_dir dir,
                               pc_reduce mode, int C) {
    const int32_t *ptr, *idx, *tptr, *tidx;
    csr_pick(csr, dir, &ptr, &idx, &tptr, &tidx);
    int N = csr->n;
#pragma omp parallel for schedule(dynamic, 64) if((size_t)N * C >= PC_PAR_MIN) \
    num_threads(pc_threads())
    for (int d = 0; d < N; d++) {
        float *o = out + (size_t)d * C; // (C)
        for (int c = 0; c < C; c++) o[c] = 0.0f;
        int lo = ptr[d], hi = ptr[d + 1];
        for (int e = lo; e < hi; e++) {
            const float *xs = x + (size_t)idx[e] * C;
            for (int c = 0; c < C; c++) o[c] += xs[c];
        }
        if (mode == PC_REDUCE_MEAN && hi > lo) {
            float inv = 1.0f / (float)(hi - lo);
            for (int c = 0; c < C; c++) o[c] *= inv;
        }
    }
}

/*
 * out[d] = w_d * sum_{s in list(d)} x[s] with w_d = 1 or 1/deg(d), so
 * dx[s] += sum_{d : s in list(d)} w_d * dout[d]: a walk over the transposed
 * list, which gives each source row to one thread.
 */
void pc_edge_aggregate_backward(float *dx, const float *dout, const pc_csr *csr, pc_edge_dir dir,
                                pc_reduce mode, int C) {
    const int32_t *ptr, *idx, *tptr, *tidx;
    csr_pick(csr, dir, &ptr, &idx, &tptr, &tidx);
    int N = csr->n;
#pragma omp parallel for schedule(dynamic, 64) if((size_t)N * C >= PC_PAR_MIN) \
    num_threads(pc_threads())
    for (int s = 0; s < N; s++) {
        float *g = dx + (size_t)s * C; // (C)
        for (int e = tptr[s]; e < tptr[s + 1]; e++) {
            int d = tidx[e];
            float w = mode == PC_REDUCE_MEAN ? 1.0f / (float)(ptr[d + 1] - ptr[d]) : 1.0f;
            const float *go = dout + (size_t)d * C;
            for (int c = 0; c < C; c++) g[c] += w * go[c];
        }
    }
}

/* ---- pooling ---------------------------------------------------------------- */

static void pool_max_segment(float *o, int32_t *am, const float *x, int lo, int hi, int C) {
    for (int c = 0; c < C; c++) {
        o[c] = 0.0f;
        am[c] = -1;
    }
    for (int i = lo; i < hi; i++) {
        const float *xi = x + (size_t)i * C;
        for (int c = 0; c < C; c++)
            if (am[c] < 0 || xi[c] > o[c]) {
                o[c] = xi[c];
                am[c] = i;
            }
    }
}

void pc_pool_forward(float *out, int32_t *argmax, const float *x, const int32_t *off, int G,
                     int C, pc_reduce mode) {
#pragma omp parallel for schedule(dynamic, 1) if(G > 1 && (size_t)off[G] * C >= PC_PAR_MIN) \
    num_threads(pc_threads())
    for (int g = 0; g < G; g++) {
        float *o = out + (size_t)g * C; // (C)
        int lo = off[g], hi = off[g + 1];
        if (mode == PC_REDUCE_MAX) {
            pool_max_segment(o, argmax + (size_t)g * C, x, lo, hi, C);
            continue;
        }
        for (int c = 0; c < C; c++) o[c] = 0.0f;
        for (int i = lo; i < hi; i++)
            for (int c = 0; c < C; c++) o[c] += x[(size_t)i * C + c];
        if (mode == PC_REDUCE_MEAN && hi > lo)
            for (int c = 0; c < C; c++) o[c] /= (float)(hi - lo);
    }
}

void pc_pool_backward(float *dx, const float *dout, const int32_t *argmax, const int32_t *off,
                      int G, int C, pc_reduce mode) {
    // segments are disjoint row ranges, so graphs can run on different threads
#pragma omp parallel for schedule(dynamic, 1) if(G > 1 && (size_t)off[G] * C >= PC_PAR_MIN) \
    num_threads(pc_threads())
    for (int g = 0; g < G; g++) {
        const float *go = dout + (size_t)g * C; // (C)
        int lo = off[g], hi = off[g + 1];
        if (mode == PC_REDUCE_MAX) {
            const int32_t *am = argmax + (size_t)g * C;
            for (int c = 0; c < C; c++)
                if (am[c] >= 0) dx[(size_t)am[c] * C + c] += go[c];
            continue;
        }
        float w = mode == PC_REDUCE_MEAN && hi > lo ? 1.0f / (float)(hi - lo) : 1.0f;
        for (int i = lo; i < hi; i++)
            for (int c = 0; c < C; c++) dx[(size_t)i * C + c] += w * go[c];
    }
}
