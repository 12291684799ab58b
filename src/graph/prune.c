/*
 * Pruning to the k-hop neighbourhood of the configurable nodes, then optional
 * linear-chain collapse. See graph.h for the rules.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "graph/graph_internal.h"

pc_prune_opts pc_prune_opts_default(void) {
    pc_prune_opts o = {.hops = 1, .collapse_chains = 0};
    return o;
}

void pc_pruned_free(pc_pruned *p) {
    if (!p) return;
    free(p->kept);
    free(p->old_to_new);
    free(p->edges);
    free(p->config_ids);
    memset(p, 0, sizeof *p);
}

/* keep[] from a multi-source BFS over undirected edges, depth <= hops. */
static pc_status khop_mark(int32_t n, const int32_t *edges, int64_t m, const int32_t *cfg,
                           int64_t nc, int hops, uint8_t *keep, pc_error *err) {
    if (nc == 0) { /* nothing to centre on: keep everything */
        memset(keep, 1, (size_t)n);
        return PC_OK;
    }
    for (int64_t j = 0; j < nc; j++) keep[cfg[j]] = 1;
    if (hops == 0) return PC_OK;
    pc_adj_ a;
    pc_status st = pc_adj_build_(&a, n, edges, m, NULL, PC_ADJ_BOTH, err);
    if (st) return st;
    int32_t *queue = pc_graph_calloc_(n, sizeof *queue, "k-hop pruning", err);
    if (!queue) {
        pc_adj_free_(&a);
        return PC_ERR_NOMEM;
    }
    int64_t head = 0, tail = 0;
    for (int64_t j = 0; j < nc; j++) queue[tail++] = cfg[j];
    /* level by level: [head, level_end) holds the nodes at distance d */
    for (int d = 0; d < hops && head < tail; d++) {
        int64_t level_end = tail;
        for (; head < level_end; head++) {
            int32_t x = queue[head];
            for (int64_t p = a.ptr[x]; p < a.ptr[x + 1]; p++) {
                int32_t y = a.idx[p];
                if (!keep[y]) {
                    keep[y] = 1;
                    queue[tail++] = y;
                }
            }
        }
    }
    free(queue);
    pc_adj_free_(&a);
    return PC_OK;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void sort_i64(int64_t *l, int64_t len) {
    if (len > 16) {
        qsort(l, (size_t)len, sizeof *l, cmp_i64);
        return;
    }
    for (int64_t p = 1; p < len; p++) { /* short lists: insertion sort */
        int64_t x = l[p], q = p;
        for (; q > 0 && l[q - 1] > x; q--) l[q] = l[q - 1];
        l[q] = x;
    }
}

/*
 * Chain collapse on the kept subgraph. On return gone[x] = 1 for collapsed
 * nodes, and *out_edges / *out_m hold the new edges (old ids, sorted by
 * (u, v), unique); bridge counts those not among the kept edges.
 */
static pc_status collapse(int32_t n, const int32_t *edges, int64_t m, const uint8_t *keep,
                          const uint8_t *is_cfg, uint8_t *gone, int32_t **out_edges,
                          int64_t *out_m, int64_t *bridge, pc_error *err) {
    pc_adj_ ops, users;
    memset(&users, 0, sizeof users);
    int32_t *res = NULL;
    int64_t *key = NULL;
    pc_status st = pc_adj_build_(&ops, n, edges, m, keep, PC_ADJ_OPERANDS, err);
    if (!st) st = pc_adj_build_(&users, n, edges, m, keep, PC_ADJ_USERS, err);
    if (st) goto done;
    pc_adj_sort_unique_(&ops, 0);
    pc_adj_sort_unique_(&users, 0);
    /* candidates: gone = 2; confirmed by a walk from a non-candidate: gone = 1 */
    for (int32_t x = 0; x < n; x++) {
        if (!keep[x] || is_cfg[x]) continue;
        if (ops.ptr[x + 1] - ops.ptr[x] != 1 || users.ptr[x + 1] - users.ptr[x] != 1) continue;
        if (ops.idx[ops.ptr[x]] == x) continue; /* self-loop */
        gone[x] = 2;
    }
    for (int32_t u = 0; u < n; u++) {
        if (!keep[u] || gone[u] == 2) continue;
        for (int64_t p = ops.ptr[u]; p < ops.ptr[u + 1]; p++)
            for (int32_t w = ops.idx[p]; gone[w] == 2; w = ops.idx[ops.ptr[w]]) gone[w] = 1;
    }
    /* candidates no walk reached lie on cycles of candidates only: keep them */
    for (int32_t x = 0; x < n; x++)
        if (gone[x] == 2) gone[x] = 0;
    /* every remaining node's operands, chains followed, as keys 2 * w + bridged
       so that sorting puts a direct edge before a bridge to the same node */
    int64_t total = ops.ptr[n];
    res = pc_graph_calloc_(2 * total, sizeof *res, "chain collapse", err);
    key = pc_graph_calloc_(total, sizeof *key, "chain collapse", err);
    if (!res || !key) {
        st = PC_ERR_NOMEM;
        goto done;
    }
    int64_t k = 0, nb = 0;
    for (int32_t u = 0; u < n; u++) {
        if (!keep[u] || gone[u]) continue;
        int64_t b = ops.ptr[u], e = ops.ptr[u + 1];
        for (int64_t p = b; p < e; p++) {
            int32_t w = ops.idx[p];
            int64_t bridged = 0;
            while (gone[w]) {
                w = ops.idx[ops.ptr[w]];
                bridged = 1;
            }
            key[p] = 2 * (int64_t)w + bridged;
        }
        sort_i64(key + b, e - b);
        int32_t last = -1;
        for (int64_t p = b; p < e; p++) {
            int32_t w = (int32_t)(key[p] >> 1);
            if (w == last) continue;
            last = w;
            res[2 * k] = u;
            res[2 * k + 1] = w;
            nb += key[p] & 1;
            k++;
        }
    }
    *out_edges = res;
    *out_m = k;
    *bridge = nb;
    res = NULL;
done:
    free(res);
    free(key);
    pc_adj_free_(&ops);
    pc_adj_free_(&users);
    return st;
}

pc_status pc_prune_khop(int64_t n, const int32_t *edges, int64_t m, const int32_t *config_ids,
                        int64_t nc, const pc_prune_opts *opts, pc_pruned *out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pc_prune_khop: out is NULL");
    memset(out, 0, sizeof *out);
    pc_prune_opts o = opts ? *opts : pc_prune_opts_default();
    pc_status st = pc_graph_check_edges_("pc_prune_khop", n, edges, m, err);
    if (st) return st;
    if (o.hops < 0)
        return pc_fail(err, PC_ERR_ARG, "pc_prune_khop: hops = %d must be >= 0", o.hops);
    if (nc < 0 || nc > n)
        return pc_fail(err, PC_ERR_ARG,
                       "pc_prune_khop: %" PRId64 " configurable nodes for %" PRId64 " nodes", nc,
                       n);
    if (nc > 0 && !config_ids)
        return pc_fail(err, PC_ERR_ARG, "pc_prune_khop: node_config_ids is NULL but has %" PRId64
                                        " entries", nc);
    int32_t nn = (int32_t)n;
    uint8_t *keep = pc_graph_calloc_(n, 1, "pc_prune_khop", err);
    uint8_t *is_cfg = pc_graph_calloc_(n, 1, "pc_prune_khop", err);
    uint8_t *gone = pc_graph_calloc_(n, 1, "pc_prune_khop", err);
    int32_t *cedges = NULL;
    if (!keep || !is_cfg || !gone) {
        st = PC_ERR_NOMEM;
        goto fail;
    }
    for (int64_t j = 0; j < nc; j++) {
        int32_t c = config_ids[j];
        if (c < 0 || c >= n) {
            st = pc_fail(err, PC_ERR_RANGE,
                         "pc_prune_khop: node_config_ids[%" PRId64 "] = %" PRId32
                         " is outside [0, %" PRId64 ")",
                         j, c, n);
            goto fail;
        }
        if (is_cfg[c]) {
            st = pc_fail(err, PC_ERR_INVALID,
                         "pc_prune_khop: node_config_ids[%" PRId64 "] = %" PRId32
                         " repeats an earlier entry (ids must be unique)",
                         j, c);
            goto fail;
        }
        is_cfg[c] = 1;
    }
    st = khop_mark(nn, edges, m, config_ids, nc, o.hops, keep, err);
    if (st) goto fail;

    out->n_old = nn;
    out->m_old = m;
    out->nc = (int32_t)nc;
    for (int32_t x = 0; x < nn; x++) out->n_khop += keep[x];
    for (int64_t e = 0; e < m; e++) out->m_khop += keep[edges[2 * e]] && keep[edges[2 * e + 1]];

    int64_t cm = 0;
    if (o.collapse_chains) {
        st = collapse(nn, edges, m, keep, is_cfg, gone, &cedges, &cm, &out->m_bridge, err);
        if (st) goto fail;
    }
    for (int32_t x = 0; x < nn; x++)
        if (gone[x]) {
            keep[x] = 0;
            out->n_collapsed++;
        }
    out->n = out->n_khop - out->n_collapsed;
    out->m = o.collapse_chains ? cm : out->m_khop;
    out->kept = pc_graph_calloc_(out->n, sizeof *out->kept, "pc_prune_khop", err);
    out->old_to_new = pc_graph_calloc_(n, sizeof *out->old_to_new, "pc_prune_khop", err);
    out->edges = pc_graph_calloc_(2 * out->m, sizeof *out->edges, "pc_prune_khop", err);
    out->config_ids = pc_graph_calloc_(nc, sizeof *out->config_ids, "pc_prune_khop", err);
    if (!out->kept || !out->old_to_new || !out->edges || !out->config_ids) {
        st = PC_ERR_NOMEM;
        goto fail;
    }
    int32_t k = 0;
    for (int32_t x = 0; x < nn; x++) {
        out->old_to_new[x] = keep[x] ? k : -1;
        if (keep[x]) out->kept[k++] = x;
    }
    const int32_t *src = o.collapse_chains ? cedges : edges;
    int64_t q = 0;
    for (int64_t e = 0; e < (o.collapse_chains ? cm : m); e++) {
        int32_t u = src[2 * e], v = src[2 * e + 1];
        if (!keep[u] || !keep[v]) continue;
        out->edges[2 * q] = out->old_to_new[u];
        out->edges[2 * q + 1] = out->old_to_new[v];
        q++;
    }
    for (int64_t j = 0; j < nc; j++) out->config_ids[j] = out->old_to_new[config_ids[j]];
    free(keep);
    free(is_cfg);
    free(gone);
    free(cedges);
    return PC_OK;
fail:
    free(keep);
    free(is_cfg);
    free(gone);
    free(cedges);
    pc_pruned_free(out);
    return st;
}

pc_status pc_pruned_remap_splits(const pc_pruned *p, const int64_t *splits, int64_t k,
                                 int64_t *out, pc_error *err) {
    if (!p || (k > 0 && (!splits || !out)))
        return pc_fail(err, PC_ERR_ARG, "pc_pruned_remap_splits: NULL argument");
    for (int64_t i = 0; i < k; i++) {
        int64_t s = splits[i];
        if (s < 0 || s > p->n_old)
            return pc_fail(err, PC_ERR_RANGE,
                           "pc_pruned_remap_splits: node_splits[%" PRId64 "] = %" PRId64
                           " is outside [0, %" PRId32 "]",
                           i, s, p->n_old);
        /* kept nodes below s: binary search in the ascending kept[] */
        int64_t lo = 0, hi = p->n;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (p->kept[mid] < s)
                lo = mid + 1;
            else
                hi = mid;
        }
        out[i] = lo;
    }
    return PC_OK;
}

char *pc_pruned_describe(const pc_pruned *p, char *out, size_t cap) {
    if (!out || cap == 0) return out;
    double fn = p->n_old ? 100.0 * p->n / p->n_old : 0.0;
    double fm = p->m_old ? 100.0 * (double)p->m / (double)p->m_old : 0.0;
    int len = snprintf(out, cap,
                       "nodes %" PRId32 " -> %" PRId32 " (%.1f%%), edges %" PRId64 " -> %" PRId64
                       " (%.1f%%), %" PRId32 " configurable",
                       p->n_old, p->n, fn, p->m_old, p->m, fm, p->nc);
    if (p->n_collapsed && len >= 0 && (size_t)len < cap)
        snprintf(out + len, cap - (size_t)len, ", %" PRId32 " collapsed", p->n_collapsed);
    return out;
}
