/* Graph Segment Training: segments, the historical embedding table, steps (see gst.h). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gnn/gst.h"

static const char *const seg_names[] = {"contiguous", "splits", "metis"};
static const pc_seg_method seg_methods[] = {PC_SEG_CONTIGUOUS, PC_SEG_NODE_SPLITS, PC_SEG_METIS};

pc_gst_opts pc_gst_opts_default(void) {
    pc_gst_opts o;
    o.method = PC_SEG_CONTIGUOUS;
    o.seg_size = 1000;
    o.train_segs = 1;
    o.keep = 0.5f;
    return o;
}

pc_gst_opts pc_gst_opts_of(const pc_gnn *m) {
    pc_gst_opts o = pc_gst_opts_default();
    o.method = (pc_seg_method)m->opts.seg_method;
    o.seg_size = m->opts.seg_size;
    return o;
}

const char *pc_gst_method_name(pc_seg_method m) {
    for (int i = 0; i < 3; i++)
        if (seg_methods[i] == m) return seg_names[i];
    return "?";
}

int pc_gst_method_find(const char *name) {
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, seg_names[i])) return (int)seg_methods[i];
    return -1;
}

/* ---- segmented graph ------------------------------------------------------ */

typedef struct seg {
    int n, nc;
    int32_t *op;       /* (n) */
    float *x;          /* (n, F) */
    int32_t *cfg_local; /* (nc) configurable nodes, local ids */
    int32_t *cfg_j;     /* (nc) their index in the graph's configurable-node list */
    pc_csr csr;
    pc_gnn_graph g;
} seg;

struct pc_gst_graph {
    int S, n, nc, R;
    seg *seg;
    int64_t configs;
    float *table;        /* (configs, S, R) */
    uint8_t *valid;      /* (configs, S) */
    float *shared;       /* (S, R) segments without configurable nodes */
    uint8_t *shared_ok;  /* (S) */
};

static void seg_free(seg *s) {
    free(s->op);
    free(s->x);
    free(s->cfg_local);
    free(s->cfg_j);
    pc_csr_free(&s->csr);
}

void pc_gst_graph_free(pc_gst_graph *gg) {
    if (!gg) return;
    for (int s = 0; s < gg->S; s++) seg_free(&gg->seg[s]);
    free(gg->seg);
    free(gg->table);
    free(gg->valid);
    free(gg->shared);
    free(gg->shared_ok);
    free(gg);
}

int pc_gst_graph_segments(const pc_gst_graph *gg) { return gg->S; }

int pc_gst_graph_largest(const pc_gst_graph *gg) {
    int mx = 0;
    for (int s = 0; s < gg->S; s++) mx = gg->seg[s].n > mx ? gg->seg[s].n : mx;
    return mx;
}

const float *pc_gst_table_entry(const pc_gst_graph *gg, int64_t config, int s) {
    if (!gg->table || config < 0 || config >= gg->configs || s < 0 || s >= gg->S) return NULL;
    if (gg->seg[s].nc == 0) return gg->shared_ok[s] ? gg->shared + (size_t)s * gg->R : NULL;
    return gg->valid[config * gg->S + s]
               ? gg->table + ((size_t)config * gg->S + (size_t)s) * gg->R
               : NULL;
}

void pc_gst_segment_size(const pc_gst_graph *gg, int s, int *nodes, int *config_nodes) {
    *nodes = gg->seg[s].n;
    *config_nodes = gg->seg[s].nc;
}

/* seg_of (n) by the chosen method (src/graph/segment.c). */
static pc_status segment_nodes(const pc_gnn_gdata *d, const pc_gst_opts *o, int32_t *seg_of,
                               int *S, pc_error *err) {
    int64_t n = d->g.n, m = d->m, k = d->nsplits;
    const int32_t *edges = d->edges;
    const int64_t *splits = d->splits;
    pc_segmentation sg;
    pc_status st;
    switch (o->method) {
    case PC_SEG_METIS:
        st = pc_segment_metis(n, edges, m, o->seg_size, 1, &sg, err);
        break;
    case PC_SEG_NODE_SPLITS:
        st = pc_segment_node_splits(n, edges, m, splits, splits ? k : 0, o->seg_size, &sg, err);
        break;
    default:
        st = pc_segment_contiguous(n, edges, m, o->seg_size, &sg, err);
        break;
    }
    if (st) return st;
    memcpy(seg_of, sg.seg_of_node, (size_t)n * sizeof *seg_of);
    *S = sg.nseg;
    pc_segmentation_free(&sg);
    return PC_OK;
}

/* Builds segment s's induced subgraph from the full graph. */
static pc_status seg_build(seg *sg, const pc_gnn_graph *g, const int32_t *edges, int64_t m,
                           const int32_t *seg_of, int s, int32_t *local, int F, pc_error *err) {
    int n = 0;
    for (int i = 0; i < g->n; i++)
        if (seg_of[i] == s) local[i] = n++;
    sg->n = n;
    sg->op = malloc((size_t)n * sizeof *sg->op);
    sg->x = pc_malloc_array((uint64_t)n * (uint64_t)F, sizeof(float));
    int nc = 0;
    for (int j = 0; j < g->nc; j++) nc += seg_of[g->cfg_ids[j]] == s;
    sg->nc = nc;
    sg->cfg_local = malloc((size_t)(nc + 1) * sizeof(int32_t));
    sg->cfg_j = malloc((size_t)(nc + 1) * sizeof(int32_t));
    int64_t me = 0;
    for (int64_t e = 0; e < m; e++)
        me += seg_of[edges[2 * e]] == s && seg_of[edges[2 * e + 1]] == s;
    int32_t *ed = malloc((size_t)(2 * me + 2) * sizeof(int32_t));
    if (!sg->op || !sg->x || !sg->cfg_local || !sg->cfg_j || !ed) {
        free(ed);
        return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
    }
    for (int i = 0; i < g->n; i++)
        if (seg_of[i] == s) {
            sg->op[local[i]] = g->opcode[i];
            memcpy(sg->x + (size_t)local[i] * F, g->x + (size_t)i * F, (size_t)F * sizeof(float));
        }
    for (int j = 0, c = 0; j < g->nc; j++)
        if (seg_of[g->cfg_ids[j]] == s) {
            sg->cfg_local[c] = local[g->cfg_ids[j]];
            sg->cfg_j[c++] = j;
        }
    int64_t k = 0;
    for (int64_t e = 0; e < m; e++) {
        int32_t u = edges[2 * e], v = edges[2 * e + 1];
        if (seg_of[u] == s && seg_of[v] == s) {
            ed[2 * k] = local[u];
            ed[2 * k + 1] = local[v];
            k++;
        }
    }
    pc_status st = pc_csr_build(&sg->csr, ed, (int)me, n, err);
    free(ed);
    if (st) return st;
    sg->g.n = n;
    sg->g.x = sg->x;
    sg->g.opcode = sg->op;
    sg->g.csr = &sg->csr;
    sg->g.nc = nc;
    sg->g.cfg_ids = sg->cfg_local;
    return PC_OK;
}

pc_status pc_gst_graph_build(const pc_gnn *m, const pc_gnn_gdata *d, const pc_gst_opts *o,
                             int64_t configs, pc_gst_graph **out, pc_error *err) {
    const pc_gnn_graph *g = &d->g;
    *out = NULL;
    if (m->opts.kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "gst: Graph Segment Training is for layout graphs");
    if (m->opts.pool != PC_POOL_MEAN && m->opts.pool != PC_POOL_SUM)
        return pc_fail(err, PC_ERR_ARG, "gst: segments combine mean or sum pooling only");
    pc_gst_graph *gg = calloc(1, sizeof *gg);
    int32_t *seg_of = malloc((size_t)g->n * sizeof *seg_of);
    int32_t *local = malloc((size_t)g->n * sizeof *local);
    pc_status st = PC_OK;
    if (!gg || !seg_of || !local) {
        st = pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
        goto done;
    }
    gg->n = g->n;
    gg->nc = g->nc;
    gg->R = pc_gnn_readout_width(m);
    if ((st = segment_nodes(d, o, seg_of, &gg->S, err))) goto done;
    gg->seg = calloc((size_t)gg->S, sizeof *gg->seg);
    if (!gg->seg) {
        st = pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
        goto done;
    }
    const int32_t *edges = d->edges;
    int64_t ne = d->m;
    for (int s = 0; s < gg->S && !st; s++)
        st = seg_build(&gg->seg[s], g, edges, ne, seg_of, s, local, m->feat_dim, err);
    if (st) goto done;
    gg->configs = configs;
    size_t SR = (size_t)gg->S * (size_t)gg->R;
    gg->shared = calloc(SR, sizeof(float));
    gg->shared_ok = calloc((size_t)gg->S, 1);
    if (configs > 0) {
        gg->table = calloc((size_t)configs * SR, sizeof(float)); /* pages appear when used */
        gg->valid = calloc((size_t)configs * (size_t)gg->S, 1);
    }
    if (!gg->shared || !gg->shared_ok || (configs > 0 && (!gg->table || !gg->valid)))
        st = pc_fail(err, PC_ERR_NOMEM, "gst: out of memory for the embedding table (%lld "
                     "configs x %d segments)", (long long)configs, gg->S);
done:
    free(seg_of);
    free(local);
    if (st) pc_gst_graph_free(gg);
    else *out = gg;
    return st;
}

/* ---- steps ---------------------------------------------------------------- */

struct pc_gst_ctx {
    int slots;                 /* trained segments per step */
    pc_gnn_ws **tws, *ews, *hws;
    float **tcfg, **tr;        /* per slot: segment configs, readout (K, R) */
    size_t *tcfg_cap, *tr_cap;
    int *tseg;                 /* per slot: its segment */
    float *ecfg, *er, *r, *dr, *drs;
    size_t ecfg_cap, er_cap, r_cap, dr_cap, drs_cap;
    int *perm;
    uint8_t *kept;
    size_t perm_cap;
    int64_t *ids;
    int *miss;
    int K, ntrained;
    float wn_sum, wc_sum;      /* kept nodes and configurable nodes */
};

pc_gst_ctx *pc_gst_ctx_new(int train_segs) {
    if (train_segs < 1) train_segs = 1;
    pc_gst_ctx *cx = calloc(1, sizeof *cx);
    if (!cx) return NULL;
    cx->slots = train_segs;
    cx->tws = calloc((size_t)train_segs, sizeof *cx->tws);
    cx->tcfg = calloc((size_t)train_segs, sizeof *cx->tcfg);
    cx->tr = calloc((size_t)train_segs, sizeof *cx->tr);
    cx->tcfg_cap = calloc((size_t)train_segs, sizeof *cx->tcfg_cap);
    cx->tr_cap = calloc((size_t)train_segs, sizeof *cx->tr_cap);
    cx->tseg = calloc((size_t)train_segs, sizeof *cx->tseg);
    cx->ews = pc_gnn_ws_new();
    cx->hws = pc_gnn_ws_new();
    int ok = cx->tws && cx->tcfg && cx->tr && cx->tcfg_cap && cx->tr_cap && cx->tseg &&
             cx->ews && cx->hws;
    for (int i = 0; ok && i < train_segs; i++) ok = (cx->tws[i] = pc_gnn_ws_new()) != NULL;
    if (!ok) {
        pc_gst_ctx_free(cx);
        return NULL;
    }
    return cx;
}

void pc_gst_ctx_free(pc_gst_ctx *cx) {
    if (!cx) return;
    for (int i = 0; i < cx->slots; i++) {
        if (cx->tws) pc_gnn_ws_free(cx->tws[i]);
        if (cx->tcfg) free(cx->tcfg[i]);
        if (cx->tr) free(cx->tr[i]);
    }
    free(cx->tws);
    free(cx->tcfg);
    free(cx->tr);
    free(cx->tcfg_cap);
    free(cx->tr_cap);
    free(cx->tseg);
    pc_gnn_ws_free(cx->ews);
    pc_gnn_ws_free(cx->hws);
    free(cx->ecfg);
    free(cx->er);
    free(cx->r);
    free(cx->dr);
    free(cx->drs);
    free(cx->perm);
    free(cx->kept);
    free(cx->ids);
    free(cx->miss);
    free(cx);
}

static int grow(float **p, size_t *cap, size_t n) {
    float *q = pc_reserve_array(*p, cap, n, sizeof(float));
    if (!q) return 0;
    *p = q;
    return 1;
}

/* Segment s's rows of cfg (K, nc, D) into out (K, nc_s, D). */
static void seg_cfg(const seg *sg, const float *cfg, int K, int nc, int D, float *out) {
    for (int k = 0; k < K; k++)
        for (int c = 0; c < sg->nc; c++)
            memcpy(out + ((size_t)k * sg->nc + c) * D,
                   cfg + ((size_t)k * nc + sg->cfg_j[c]) * D, (size_t)D * sizeof(float));
}

/* Readouts of segment s for K configs, fresh (evaluation workspace) into out (K, R). */
static pc_status seg_fresh(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, int s,
                           const float *cfg, int K, int D, float *out, pc_error *err) {
    const seg *sg = &gg->seg[s];
    if (!grow(&cx->ecfg, &cx->ecfg_cap, (size_t)K * sg->nc * D + 1))
        return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
    seg_cfg(sg, cfg, K, gg->nc, D, cx->ecfg);
    return pc_gnn_readout(m, cx->ews, &sg->g, cx->ecfg, K, NULL, out, err);
}

/* Weight of segment s's two readout halves in the graph's readout. */
static void seg_weights(const pc_gnn *m, const pc_gst_graph *gg, const seg *sg, float wn_sum,
                        float wc_sum, float *wn, float *wc) {
    int mean = m->opts.pool == PC_POOL_MEAN;
    *wn = wn_sum > 0 ? (mean ? (float)sg->n : (float)gg->n) / wn_sum : 0.0f;
    *wc = wc_sum > 0 && sg->nc > 0 ? (mean ? (float)sg->nc : (float)gg->nc) / wc_sum : 0.0f;
}

/* r (K, R) += weights * rs (K, R), or rs's row 0 for every k when shared. */
static void accumulate(float *r, const float *rs, int K, int R, float wn, float wc, int shared) {
    int Pw = R / 2;
    for (int k = 0; k < K; k++) {
        const float *src = rs + (shared ? 0 : (size_t)k * R);
        float *dst = r + (size_t)k * R;
        for (int c = 0; c < Pw; c++) dst[c] += wn * src[c];
        for (int c = Pw; c < R; c++) dst[c] += wc * src[c];
    }
}

/* Stale readouts of segment s for the K configs (computing what the table lacks). */
static pc_status stale(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, int s,
                       const float *cfg, int K, int D, pc_error *err) {
    const seg *sg = &gg->seg[s];
    int R = gg->R;
    size_t SR = (size_t)gg->S * R;
    if (sg->nc == 0) {
        if (!gg->shared_ok[s]) {
            pc_status st = seg_fresh(m, cx, gg, s, cfg, 1, D, gg->shared + (size_t)s * R, err);
            if (st) return st;
            gg->shared_ok[s] = 1;
        }
        return PC_OK;
    }
    int Km = 0;
    for (int k = 0; k < K; k++)
        if (!gg->valid[cx->ids[k] * gg->S + s]) cx->miss[Km++] = k;
    if (Km == 0) return PC_OK;
    /* one batched fresh readout of the configs the table lacks */
    if (!grow(&cx->ecfg, &cx->ecfg_cap, (size_t)Km * sg->nc * D + 1) ||
        !grow(&cx->er, &cx->er_cap, (size_t)Km * R))
        return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
    for (int i = 0; i < Km; i++)
        seg_cfg(sg, cfg + (size_t)cx->miss[i] * gg->nc * D, 1, gg->nc, D,
                cx->ecfg + (size_t)i * sg->nc * D);
    pc_status st = pc_gnn_readout(m, cx->ews, &sg->g, cx->ecfg, Km, NULL, cx->er, err);
    if (st) return st;
    for (int i = 0; i < Km; i++) {
        int64_t c = cx->ids[cx->miss[i]];
        memcpy(gg->table + (size_t)c * SR + (size_t)s * R, cx->er + (size_t)i * R,
               (size_t)R * sizeof(float));
        gg->valid[c * gg->S + s] = 1;
    }
    return PC_OK;
}

pc_status pc_gst_forward(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const int64_t *ids,
                         const float *cfg, int K, const pc_gst_opts *o, uint64_t *rng,
                         float *scores, pc_error *err) {
    int S = gg->S, R = gg->R, D = m->cfg_dim;
    if (!gg->table || S < 1 || K < 1)
        return pc_fail(err, PC_ERR_ARG, "gst: graph built without a table, or no configs");
    if ((size_t)S > cx->perm_cap) {
        int *p = realloc(cx->perm, (size_t)S * sizeof *p);
        uint8_t *q = p ? realloc(cx->kept, (size_t)S) : NULL;
        if (p) cx->perm = p;
        if (q) cx->kept = q;
        if (!p || !q) return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
        cx->perm_cap = (size_t)S;
    }
    int64_t *idc = realloc(cx->ids, (size_t)K * sizeof *idc);
    if (idc) cx->ids = idc;
    int *mi = idc ? realloc(cx->miss, (size_t)K * sizeof *mi) : NULL;
    if (mi) cx->miss = mi;
    if (!idc || !mi || !grow(&cx->r, &cx->r_cap, (size_t)K * R))
        return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
    memcpy(cx->ids, ids, (size_t)K * sizeof *ids);
    for (int64_t k = 0; k < K; k++)
        if (ids[k] < 0 || ids[k] >= gg->configs)
            return pc_fail(err, PC_ERR_RANGE, "gst: config %lld not in the table",
                           (long long)ids[k]);
    cx->K = K;
    /* the trained segments: a uniform sample without replacement */
    int T = o->train_segs < S ? o->train_segs : S;
    if (T > cx->slots) T = cx->slots;
    for (int s = 0; s < S; s++) cx->perm[s] = s;
    for (int i = 0; i < T; i++) {
        int j = i + (int)(pc_splitmix64(rng) % (uint64_t)(S - i));
        int tmp = cx->perm[i];
        cx->perm[i] = cx->perm[j];
        cx->perm[j] = tmp;
    }
    memset(cx->kept, 0, (size_t)S);
    for (int i = 0; i < T; i++) cx->kept[cx->perm[i]] = 2; /* trained */
    float wn_sum = 0, wc_sum = 0;
    for (int s = 0; s < S; s++) {
        if (!cx->kept[s]) {
            double u = (double)(pc_splitmix64(rng) >> 11) * 0x1.0p-53;
            cx->kept[s] = u < (double)o->keep;
        }
        if (cx->kept[s]) {
            wn_sum += (float)gg->seg[s].n;
            wc_sum += (float)gg->seg[s].nc;
        }
    }
    cx->ntrained = T;
    cx->wn_sum = wn_sum;
    cx->wc_sum = wc_sum;
    memset(cx->r, 0, (size_t)K * R * sizeof(float));
    pc_status st;
    for (int i = 0; i < T; i++) {
        int s = cx->perm[i];
        const seg *sg = &gg->seg[s];
        cx->tseg[i] = s;
        if (!grow(&cx->tcfg[i], &cx->tcfg_cap[i], (size_t)K * sg->nc * D + 1) ||
            !grow(&cx->tr[i], &cx->tr_cap[i], (size_t)K * R))
            return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
        seg_cfg(sg, cfg, K, gg->nc, D, cx->tcfg[i]);
        if ((st = pc_gnn_readout(m, cx->tws[i], &sg->g, cx->tcfg[i], K, NULL, cx->tr[i], err)))
            return st;
        float wn, wc;
        seg_weights(m, gg, sg, wn_sum, wc_sum, &wn, &wc);
        accumulate(cx->r, cx->tr[i], K, R, wn, wc, 0);
    }
    size_t SR = (size_t)S * R;
    for (int s = 0; s < S; s++) {
        if (cx->kept[s] != 1) continue;
        if ((st = stale(m, cx, gg, s, cfg, K, D, err))) return st;
        const seg *sg = &gg->seg[s];
        float wn, wc;
        seg_weights(m, gg, sg, wn_sum, wc_sum, &wn, &wc);
        if (sg->nc == 0) {
            accumulate(cx->r, gg->shared + (size_t)s * R, K, R, wn, wc, 1);
            continue;
        }
        for (int k = 0; k < K; k++)
            accumulate(cx->r + (size_t)k * R, gg->table + (size_t)ids[k] * SR + (size_t)s * R, 1,
                       R, wn, wc, 0);
    }
    return pc_gnn_head_forward(m, cx->hws, cx->r, K, scores, err);
}

pc_status pc_gst_backward(pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const float *dscores,
                          pc_error *err) {
    int K = cx->K, R = gg->R, Pw = R / 2;
    size_t SR = (size_t)gg->S * R;
    if (!grow(&cx->dr, &cx->dr_cap, (size_t)K * R) || !grow(&cx->drs, &cx->drs_cap, (size_t)K * R))
        return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
    pc_status st = pc_gnn_head_backward(m, cx->hws, dscores, cx->dr, err);
    for (int i = 0; i < cx->ntrained && !st; i++) {
        int s = cx->tseg[i];
        const seg *sg = &gg->seg[s];
        float wn, wc;
        seg_weights(m, gg, sg, cx->wn_sum, cx->wc_sum, &wn, &wc);
        for (int k = 0; k < K; k++)
            for (int c = 0; c < R; c++)
                cx->drs[(size_t)k * R + c] = (c < Pw ? wn : wc) * cx->dr[(size_t)k * R + c];
        st = pc_gnn_readout_backward(m, cx->tws[i], cx->drs, err);
        /* the table takes the fresh readouts */
        if (sg->nc == 0) {
            memcpy(gg->shared + (size_t)s * R, cx->tr[i], (size_t)R * sizeof(float));
            gg->shared_ok[s] = 1;
        } else {
            for (int k = 0; k < K; k++) {
                memcpy(gg->table + (size_t)cx->ids[k] * SR + (size_t)s * R,
                       cx->tr[i] + (size_t)k * R, (size_t)R * sizeof(float));
                gg->valid[cx->ids[k] * gg->S + s] = 1;
            }
        }
    }
    return st;
}

pc_status pc_gst_score(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const float *cfg,
                       int K, float *scores, pc_error *err) {
    int R = gg->R, D = m->cfg_dim;
    if (!grow(&cx->r, &cx->r_cap, (size_t)K * R) || !grow(&cx->er, &cx->er_cap, (size_t)K * R))
        return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
    memset(cx->r, 0, (size_t)K * R * sizeof(float));
    float wn_sum = (float)gg->n, wc_sum = (float)gg->nc;
    for (int s = 0; s < gg->S; s++) {
        const seg *sg = &gg->seg[s];
        int shared = sg->nc == 0, Ks = shared ? 1 : K;
        pc_status st = seg_fresh(m, cx, gg, s, cfg, Ks, D, cx->er, err);
        if (st) return st;
        float wn, wc;
        seg_weights(m, gg, sg, wn_sum, wc_sum, &wn, &wc);
        accumulate(cx->r, cx->er, K, R, wn, wc, shared);
    }
    cx->K = K;
    return pc_gnn_head_forward(m, cx->hws, cx->r, K, scores, err);
}

pc_status pc_gst_head_backward(pc_gnn *m, pc_gst_ctx *cx, const float *dscores,
                               pc_error *err) {
    return pc_gnn_head_backward(m, cx->hws, dscores, NULL, err);
}
