/*
 * Segmentation for Graph Segment Training: contiguous ranges, HLO
 * computations (node_splits) and METIS k-way partitions, all reduced to a
 * canonical labelling by pc_segmentation_from_labels. See graph.h.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <metis.h>

#include "common/util.h"
#include "graph/graph_internal.h"

const char *pc_seg_method_name(pc_seg_method m) {
    switch (m) {
    case PC_SEG_LABELS: return "labels";
    case PC_SEG_CONTIGUOUS: return "contiguous";
    case PC_SEG_NODE_SPLITS: return "node_splits";
    case PC_SEG_METIS: return "metis";
    }
    return "unknown";
}

void pc_segmentation_free(pc_segmentation *s) {
    if (!s) return;
    free(s->seg_of_node);
    free(s->seg_ptr);
    free(s->seg_nodes);
    free(s->cross);
    memset(s, 0, sizeof *s);
}

/* Fills out from labels (checked >= 0) that it may rewrite in place. */
static pc_status from_labels(int32_t n, int32_t *lab, const int32_t *edges, int64_t m,
                             pc_segmentation *out, pc_error *err) {
    const char *what = "segmentation";
    int32_t maxl = 0;
    for (int32_t i = 0; i < n; i++)
        if (lab[i] > maxl) maxl = lab[i];
    /* renumber by first appearance in node order */
    int32_t *map = pc_graph_calloc_((int64_t)maxl + 1, sizeof *map, what, err);
    if (!map) return PC_ERR_NOMEM;
    for (int32_t l = 0; l <= maxl; l++) map[l] = -1;
    int32_t nseg = 0;
    for (int32_t i = 0; i < n; i++) {
        if (map[lab[i]] < 0) map[lab[i]] = nseg++;
        lab[i] = map[lab[i]];
    }
    free(map);
    out->n = n;
    out->nseg = nseg;
    out->m = m;
    out->seg_of_node = lab;
    out->seg_ptr = pc_graph_calloc_((int64_t)nseg + 1, sizeof *out->seg_ptr, what, err);
    out->seg_nodes = pc_graph_calloc_(n, sizeof *out->seg_nodes, what, err);
    if (!out->seg_ptr || !out->seg_nodes) return PC_ERR_NOMEM;
    int32_t *ptr = out->seg_ptr;
    for (int32_t i = 0; i < n; i++) ptr[lab[i] + 1]++;
    out->min_size = INT32_MAX;
    for (int32_t s = 0; s < nseg; s++) {
        int32_t sz = ptr[s + 1];
        if (sz < out->min_size) out->min_size = sz;
        if (sz > out->max_size) out->max_size = sz;
        ptr[s + 1] += ptr[s];
    }
    for (int32_t i = 0; i < n; i++) out->seg_nodes[ptr[lab[i]]++] = i;
    for (int32_t s = nseg; s > 0; s--) ptr[s] = ptr[s - 1];
    ptr[0] = 0;
    for (int64_t e = 0; e < m; e++) out->n_cross += lab[edges[2 * e]] != lab[edges[2 * e + 1]];
    if (out->n_cross) {
        out->cross = pc_graph_calloc_(out->n_cross, sizeof *out->cross, what, err);
        if (!out->cross) return PC_ERR_NOMEM;
        int64_t k = 0;
        for (int64_t e = 0; e < m; e++)
            if (lab[edges[2 * e]] != lab[edges[2 * e + 1]]) out->cross[k++] = e;
    }
    return PC_OK;
}

/* Common start of every method: checks, zeroed out, a label array. */
static pc_status begin(const char *what, int64_t n, const int32_t *edges, int64_t m,
                       pc_segmentation *out, int32_t **lab, pc_error *err) {
    *lab = NULL;
    if (!out) return pc_fail(err, PC_ERR_ARG, "%s: out is NULL", what);
    memset(out, 0, sizeof *out);
    pc_status st = pc_graph_check_edges_(what, n, edges, m, err);
    if (st) return st;
    *lab = pc_graph_calloc_(n, sizeof **lab, what, err);
    return *lab ? PC_OK : PC_ERR_NOMEM;
}

static pc_status finish(pc_status st, int32_t n, int32_t *lab, const int32_t *edges, int64_t m,
                        pc_seg_method method, int32_t target, pc_segmentation *out,
                        pc_error *err) {
    if (!st) st = from_labels(n, lab, edges, m, out, err); /* takes lab on success */
    if (st) {
        if (out->seg_of_node != lab) free(lab);
        pc_segmentation_free(out);
        return st;
    }
    out->method = method;
    out->target = target;
    return PC_OK;
}

static pc_status check_target(const char *what, int32_t target, pc_error *err) {
    if (target < 1)
        return pc_fail(err, PC_ERR_ARG, "%s: target segment size %" PRId32 " must be >= 1", what,
                       target);
    return PC_OK;
}

pc_status pc_segmentation_from_labels(int64_t n, const int32_t *labels, const int32_t *edges,
                                      int64_t m, pc_segmentation *out, pc_error *err) {
    const char *what = "pc_segmentation_from_labels";
    int32_t *lab;
    pc_status st = begin(what, n, edges, m, out, &lab, err);
    if (st) return st;
    if (!labels) st = pc_fail(err, PC_ERR_ARG, "%s: labels is NULL", what);
    for (int32_t i = 0; !st && i < n; i++) {
        if (labels[i] < 0)
            st = pc_fail(err, PC_ERR_RANGE, "%s: labels[%" PRId32 "] = %" PRId32 " is negative",
                         what, i, labels[i]);
        else
            lab[i] = labels[i];
    }
    return finish(st, (int32_t)n, lab, edges, m, PC_SEG_LABELS, 0, out, err);
}

/* Labels [b, e) as ceil(len / target) near-equal ranges starting at label s. */
static int32_t label_ranges(int32_t *lab, int32_t b, int32_t e, int32_t target, int32_t s) {
    int64_t len = e - b;
    int64_t parts = (len + target - 1) / target;
    for (int64_t p = 0; p < parts; p++) {
        int64_t lo = b + p * len / parts, hi = b + (p + 1) * len / parts;
        for (int64_t i = lo; i < hi; i++) lab[i] = s;
        s++;
    }
    return s;
}

pc_status pc_segment_contiguous(int64_t n, const int32_t *edges, int64_t m, int32_t target,
                                pc_segmentation *out, pc_error *err) {
    const char *what = "pc_segment_contiguous";
    int32_t *lab;
    pc_status st = begin(what, n, edges, m, out, &lab, err);
    if (st) return st;
    st = check_target(what, target, err);
    if (!st) label_ranges(lab, 0, (int32_t)n, target, 0);
    return finish(st, (int32_t)n, lab, edges, m, PC_SEG_CONTIGUOUS, target, out, err);
}

pc_status pc_segment_node_splits(int64_t n, const int32_t *edges, int64_t m, const int64_t *splits,
                                 int64_t k, int32_t target, pc_segmentation *out, pc_error *err) {
    const char *what = "pc_segment_node_splits";
    int32_t *lab;
    int32_t *sb = NULL, *se = NULL; /* segment ranges [sb, se) */
    pc_status st = begin(what, n, edges, m, out, &lab, err);
    if (st) return st;
    st = check_target(what, target, err);
    if (!st && k < 0)
        st = pc_fail(err, PC_ERR_ARG, "%s: node_splits count %" PRId64 " < 0", what, k);
    if (!st && k > 0 && !splits)
        st = pc_fail(err, PC_ERR_ARG, "%s: node_splits is NULL but has %" PRId64 " entries", what,
                     k);
    for (int64_t i = 0; !st && i < k; i++) {
        if (splits[i] < 0 || splits[i] > n)
            st = pc_fail(err, PC_ERR_RANGE,
                         "%s: node_splits[%" PRId64 "] = %" PRId64 " is outside [0, %" PRId64 "]",
                         what, i, splits[i], n);
        else if (i > 0 && splits[i] < splits[i - 1])
            st = pc_fail(err, PC_ERR_INVALID,
                         "%s: node_splits[%" PRId64 "] = %" PRId64
                         " is smaller than node_splits[%" PRId64 "] = %" PRId64
                         " (splits must be non-decreasing)",
                         what, i, splits[i], i - 1, splits[i - 1]);
    }
    /* at most one segment per node */
    if (!st) {
        sb = pc_graph_calloc_(n, sizeof *sb, what, err);
        se = pc_graph_calloc_(n, sizeof *se, what, err);
        if (!sb || !se) st = PC_ERR_NOMEM;
    }
    if (st) {
        free(sb);
        free(se);
        return finish(st, (int32_t)n, lab, edges, m, PC_SEG_NODE_SPLITS, target, out, err);
    }
    int32_t nn = (int32_t)n, ns = 0;
    /* steps 1-3: computations packed greedily, large ones cut into ranges */
    int32_t pack_b = 0, pack_e = 0; /* open pack [pack_b, pack_e), empty if equal */
    int64_t si = 0;
    int32_t cb = 0;
    while (cb < nn) {
        while (si < k && splits[si] <= cb) si++;
        int32_t ce = si < k ? (int32_t)splits[si] : nn;
        int32_t len = ce - cb;
        if (len > target || pack_e - pack_b + len > target) {
            if (pack_e > pack_b) sb[ns] = pack_b, se[ns] = pack_e, ns++;
            pack_b = pack_e = cb;
        }
        if (len > target) {
            int64_t parts = ((int64_t)len + target - 1) / target;
            for (int64_t p = 0; p < parts; p++) {
                sb[ns] = (int32_t)(cb + p * len / parts);
                se[ns] = (int32_t)(cb + (p + 1) * len / parts);
                ns++;
            }
            pack_b = pack_e = ce;
        } else {
            pack_e = ce;
        }
        cb = ce;
    }
    if (pack_e > pack_b) sb[ns] = pack_b, se[ns] = pack_e, ns++;
    /* step 4: tiny segments join their smaller neighbour */
    int32_t min = target / 4 > 1 ? target / 4 : 1;
    int32_t w = 0; /* segments kept so far: [0, w) */
    for (int32_t s = 0; s < ns; s++) {
        int32_t len = se[s] - sb[s];
        if (len >= min || ns == 1) {
            sb[w] = sb[s], se[w] = se[s], w++;
            continue;
        }
        int have_prev = w > 0, have_next = s + 1 < ns;
        int32_t prev = have_prev ? se[w - 1] - sb[w - 1] : INT32_MAX;
        int32_t next = have_next ? se[s + 1] - sb[s + 1] : INT32_MAX;
        if (have_prev && prev <= next)
            se[w - 1] = se[s];
        else
            sb[s + 1] = sb[s]; /* the next one starts earlier */
    }
    for (int32_t s = 0; s < w; s++)
        for (int32_t i = sb[s]; i < se[s]; i++) lab[i] = s;
    free(sb);
    free(se);
    return finish(PC_OK, nn, lab, edges, m, PC_SEG_NODE_SPLITS, target, out, err);
}

pc_status pc_segment_metis(int64_t n, const int32_t *edges, int64_t m, int32_t target, int seed,
                           pc_segmentation *out, pc_error *err) {
    const char *what = "pc_segment_metis";
    int32_t *lab;
    pc_status st = begin(what, n, edges, m, out, &lab, err);
    if (st) return st;
    st = check_target(what, target, err);
    int32_t nn = (int32_t)n;
    int64_t nparts = ((int64_t)n + target - 1) / target;
    if (st || nparts == 1) /* lab is all zeros */
        return finish(st, nn, lab, edges, m, PC_SEG_METIS, target, out, err);
    if (nparts >= n) {
        for (int32_t i = 0; i < nn; i++) lab[i] = i;
        return finish(st, nn, lab, edges, m, PC_SEG_METIS, target, out, err);
    }
    if (2 * m > (int64_t)IDX_MAX || n > (int64_t)IDX_MAX) {
        st = pc_fail(err, PC_ERR_RANGE,
                     "%s: %" PRId64 " nodes and %" PRId64 " edges exceed METIS's %d-bit idx_t",
                     what, n, m, IDXTYPEWIDTH);
        return finish(st, nn, lab, edges, m, PC_SEG_METIS, target, out, err);
    }
    pc_adj_ a;
    st = pc_adj_build_(&a, nn, edges, m, NULL, PC_ADJ_BOTH, err);
    if (st) return finish(st, nn, lab, edges, m, PC_SEG_METIS, target, out, err);
    pc_adj_sort_unique_(&a, 1); /* METIS wants a simple graph */
    idx_t *xadj = pc_graph_calloc_(n + 1, sizeof *xadj, what, err);
    idx_t *adjncy = pc_graph_calloc_(a.ptr[nn], sizeof *adjncy, what, err);
    idx_t *part = pc_graph_calloc_(n, sizeof *part, what, err);
    if (!xadj || !adjncy || !part) {
        st = PC_ERR_NOMEM;
    } else {
        for (int32_t i = 0; i <= nn; i++) xadj[i] = (idx_t)a.ptr[i];
        for (int64_t p = 0; p < a.ptr[nn]; p++) adjncy[p] = (idx_t)a.idx[p];
        idx_t options[METIS_NOPTIONS];
        METIS_SetDefaultOptions(options);
        options[METIS_OPTION_SEED] = (idx_t)seed;
        options[METIS_OPTION_NUMBERING] = 0;
        idx_t nv = (idx_t)n, ncon = 1, np = (idx_t)nparts, objval = 0;
        int r = METIS_PartGraphKway(&nv, &ncon, xadj, adjncy, NULL, NULL, NULL, &np, NULL, NULL,
                                    options, &objval, part);
        if (r != METIS_OK) {
            st = pc_fail(err, r == METIS_ERROR_MEMORY ? PC_ERR_NOMEM : PC_ERR_INVALID,
                         "%s: METIS_PartGraphKway failed (%s) on %" PRId64 " nodes, %" PRId64
                         " undirected edges, %" PRId64 " parts",
                         what,
                         r == METIS_ERROR_INPUT    ? "input error"
                         : r == METIS_ERROR_MEMORY ? "out of memory"
                                                   : "error",
                         n, a.ptr[nn] / 2, nparts);
        } else {
            for (int32_t i = 0; i < nn; i++) {
                if (part[i] < 0 || part[i] >= np) {
                    st = pc_fail(err, PC_ERR_INVALID, "%s: METIS put node %" PRId32
                                 " in part %" PRId64 " of %" PRId64, what, i, (int64_t)part[i],
                                 nparts);
                    break;
                }
                lab[i] = (int32_t)part[i];
            }
        }
    }
    free(xadj);
    free(adjncy);
    free(part);
    pc_adj_free_(&a);
    return finish(st, nn, lab, edges, m, PC_SEG_METIS, target, out, err);
}
