/* Input checks and compressed adjacency for the graph module. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "graph/graph_internal.h"

void *pc_graph_calloc_(int64_t n, size_t size, const char *what, pc_error *err) {
    void *p = pc_calloc_array(n > 0 ? (uint64_t)n : 1u, size);
    if (!p)
        pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for %" PRId64 " elements of %zu bytes",
                what, n, size);
    return p;
}

pc_status pc_graph_check_edges_(const char *what, int64_t n, const int32_t *edges, int64_t m,
                                pc_error *err) {
    if (n < 1 || n > INT32_MAX)
        return pc_fail(err, PC_ERR_ARG, "%s: node count %" PRId64 " is outside [1, %d]", what, n,
                       INT32_MAX);
    if (m < 0)
        return pc_fail(err, PC_ERR_ARG, "%s: edge count %" PRId64 " is negative", what, m);
    if (m > 0 && !edges)
        return pc_fail(err, PC_ERR_ARG, "%s: edge_index is NULL but has %" PRId64 " rows", what,
                       m);
    for (int64_t e = 0; e < m; e++) {
        int32_t u = edges[2 * e], v = edges[2 * e + 1];
        if (u < 0 || u >= n || v < 0 || v >= n)
            return pc_fail(err, PC_ERR_RANGE,
                           "%s: edge_index[%" PRId64 "] = [%" PRId32 ", %" PRId32
                           "] has an endpoint outside [0, %" PRId64 ")",
                           what, e, u, v, n);
    }
    return PC_OK;
}

void pc_adj_free_(pc_adj_ *a) {
    if (!a) return;
    free(a->ptr);
    free(a->idx);
    memset(a, 0, sizeof *a);
}

pc_status pc_adj_build_(pc_adj_ *a, int32_t n, const int32_t *edges, int64_t m,
                        const uint8_t *keep, int dir, pc_error *err) {
    memset(a, 0, sizeof *a);
    a->n = n;
    a->ptr = pc_graph_calloc_((int64_t)n + 1, sizeof *a->ptr, "adjacency", err);
    if (!a->ptr) return PC_ERR_NOMEM;
    int64_t *ptr = a->ptr;
    for (int64_t e = 0; e < m; e++) {
        int32_t u = edges[2 * e], v = edges[2 * e + 1];
        if (keep && !(keep[u] && keep[v])) continue;
        if (dir & PC_ADJ_OPERANDS) ptr[u + 1]++;
        if (dir & PC_ADJ_USERS) ptr[v + 1]++;
    }
    for (int32_t i = 0; i < n; i++) ptr[i + 1] += ptr[i];
    a->idx = pc_graph_calloc_(ptr[n], sizeof *a->idx, "adjacency", err);
    if (!a->idx) {
        pc_adj_free_(a);
        return PC_ERR_NOMEM;
    }
    /* fill with ptr[i] as the cursor of list i, then shift back */
    for (int64_t e = 0; e < m; e++) {
        int32_t u = edges[2 * e], v = edges[2 * e + 1];
        if (keep && !(keep[u] && keep[v])) continue;
        if (dir & PC_ADJ_OPERANDS) a->idx[ptr[u]++] = v;
        if (dir & PC_ADJ_USERS) a->idx[ptr[v]++] = u;
    }
    for (int32_t i = n; i > 0; i--) ptr[i] = ptr[i - 1];
    ptr[0] = 0;
    return PC_OK;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void pc_adj_sort_unique_(pc_adj_ *a, int drop_self) {
    int64_t w = 0;
    for (int32_t i = 0; i < a->n; i++) {
        int64_t b = a->ptr[i], e = a->ptr[i + 1];
        int32_t *l = a->idx + b;
        int64_t len = e - b;
        if (len <= 16) { /* lists are short in HLO graphs: insertion sort */
            for (int64_t p = 1; p < len; p++) {
                int32_t x = l[p];
                int64_t q = p;
                for (; q > 0 && l[q - 1] > x; q--) l[q] = l[q - 1];
                l[q] = x;
            }
        } else {
            qsort(l, (size_t)len, sizeof *l, cmp_i32);
        }
        a->ptr[i] = w;
        for (int64_t p = 0; p < len; p++) {
            int32_t x = l[p];
            if (drop_self && x == i) continue;
            if (w > a->ptr[i] && a->idx[w - 1] == x) continue;
            a->idx[w++] = x;
        }
    }
    a->ptr[a->n] = w;
}
