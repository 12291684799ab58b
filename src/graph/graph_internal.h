/* Internals of the graph module: input checks and compressed adjacency. */
#ifndef PC_GRAPH_INTERNAL_H
#define PC_GRAPH_INTERNAL_H

#include "graph/graph.h"

/* Checks 1 <= n <= INT32_MAX, m >= 0, edges != NULL when m > 0 and every
   endpoint in [0, n). `what` names the caller in messages. */
pc_status pc_graph_check_edges_(const char *what, int64_t n, const int32_t *edges, int64_t m,
                                pc_error *err);

/*
 * Compressed adjacency: the neighbours of node i are idx[ptr[i] .. ptr[i+1]).
 * Lists keep edge order (counting sort, stable).
 */
typedef struct pc_adj_ {
    int32_t n;
    int64_t *ptr; /* (n + 1) */
    int32_t *idx; /* (ptr[n]) */
} pc_adj_;

enum {
    PC_ADJ_OPERANDS = 1, /* u -> v for each row [u, v] */
    PC_ADJ_USERS = 2,    /* v -> u */
    PC_ADJ_BOTH = 3      /* both (undirected) */
};

/*
 * Builds the adjacency of the edges whose rows pass `keep` (keep[u] && keep[v];
 * keep NULL = all). Edges must be checked already.
 */
pc_status pc_adj_build_(pc_adj_ *a, int32_t n, const int32_t *edges, int64_t m,
                        const uint8_t *keep, int dir, pc_error *err);
/* Sorts each list and removes repeats (and self-loops if drop_self). */
void pc_adj_sort_unique_(pc_adj_ *a, int drop_self);
void pc_adj_free_(pc_adj_ *a);

/* calloc of n elements of `size` (n == 0 gets one element, so never NULL on
   success); fails the call with PC_ERR_NOMEM naming `what`. */
void *pc_graph_calloc_(int64_t n, size_t size, const char *what, pc_error *err);

#endif /* PC_GRAPH_INTERNAL_H */
