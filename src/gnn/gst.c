/* Graph Segment Training: segments, the historical embedding table, steps (see gst.h). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gnn/gnn_ws.h"
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
    int max_seg_nc; /* configurable nodes of the segment with the most */
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
    for (int s = 0; s < gg->S; s++)
        if (gg->seg[s].nc > gg->max_seg_nc) gg->max_seg_nc = gg->seg[s].nc;
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

/*
 * The context's buffers, one planned allocation: X(type, name, elements), the
 * shape in the comment, for a step over K configs of a graph of S segments
 * (readout width R, config width D, at most ncs configurable nodes in a
 * segment) with T trained segments. Scoring plans them all too, so a
 * score between a step's forward and backward keeps the step's buffers.
 */
// clang-format off
#define GST_CTX_BUFFERS(X)                                                                       \
    X(float, slot_cfg, T * K * ncs * D) /* (T, K, ncs, D) the trained segments' configs */       \
    X(float, slot_readout, T * K * R)   /* (T, K, R) their fresh readouts */                     \
    X(int, slot_seg, T)                 /* (T) their segments */                                 \
    X(float, fresh_cfg, K * ncs * D)    /* (K, ncs, D) configs of a segment read fresh */        \
    X(float, fresh_readout, K * R)      /* (K, R) its readouts */                                \
    X(float, readout, K * R)            /* (K, R) the graph's: the segments' weighted sum */     \
    X(float, d_readout, K * R)          /* (K, R) its gradient from the head */                  \
    X(float, d_slot_readout, K * R)     /* (K, R) one trained segment's share of it */           \
    X(int, order, S)                    /* (S) the segments, the trained ones first */           \
    X(uint8_t, kept, S)                 /* (S) 2 trained, 1 stale and kept, 0 dropped */         \
    X(int64_t, ids, K)                  /* (K) the step's config ids */                          \
    X(int, missing, K)                  /* (K) configs whose table entry is empty */
// clang-format on

enum {
#define GST_INDEX(type, name, size) GST_##name,
    GST_CTX_BUFFERS(GST_INDEX)
#undef GST_INDEX
    GST_COUNT
};

static const size_t gst_elem[GST_COUNT] = {
#define GST_ELEM(type, name, size) sizeof(type),
    GST_CTX_BUFFERS(GST_ELEM)
#undef GST_ELEM
};

struct pc_gst_ctx {
    int slots;            /* T: trained segments per step */
    pc_gnn_ws **train_ws; /* (T) per trained segment: its readout and backward */
    pc_gnn_ws *fresh_ws;  /* readouts computed fresh (table misses, scoring) */
    pc_gnn_ws *head_ws;   /* the head on the graph's readout */
#define GST_FIELD(type, name, size) type *name;
    GST_CTX_BUFFERS(GST_FIELD)
#undef GST_FIELD
    size_t cap[GST_COUNT]; /* elements planned for each buffer */
    void *block;           /* the one allocation */
    size_t block_len;      /* its bytes */
    size_t slot_cfg_len;   /* K * ncs * D of the step: slot_cfg's stride */
    int K, R, ntrained;
    float wn_sum, wc_sum; /* kept nodes and configurable nodes */
};

pc_gst_ctx *pc_gst_ctx_new(int train_segs) {
    if (train_segs < 1) train_segs = 1;
    pc_gst_ctx *cx = calloc(1, sizeof *cx);
    if (!cx) return NULL;
    cx->slots = train_segs;
    cx->train_ws = calloc((size_t)train_segs, sizeof *cx->train_ws);
    cx->fresh_ws = pc_gnn_ws_new();
    cx->head_ws = pc_gnn_ws_new();
    int ok = cx->train_ws && cx->fresh_ws && cx->head_ws;
    for (int i = 0; ok && i < train_segs; i++) ok = (cx->train_ws[i] = pc_gnn_ws_new()) != NULL;
    if (!ok) {
        pc_gst_ctx_free(cx);
        return NULL;
    }
    return cx;
}

void pc_gst_ctx_free(pc_gst_ctx *cx) {
    if (!cx) return;
    for (int i = 0; cx->train_ws && i < cx->slots; i++) pc_gnn_ws_free(cx->train_ws[i]);
    free(cx->train_ws);
    pc_gnn_ws_free(cx->fresh_ws);
    pc_gnn_ws_free(cx->head_ws);
    pc_ws_block_free(cx->block, cx->block_len);
    free(cx);
}

/* Plans the buffers of a step over K configs of gg; 0 when out of memory. */
static int ctx_plan(pc_gst_ctx *cx, const pc_gst_graph *gg, int Kc, int Dc) {
    size_t T = (size_t)cx->slots, K = (size_t)Kc, S = (size_t)gg->S, R = (size_t)gg->R;
    size_t D = (size_t)Dc, ncs = (size_t)gg->max_seg_nc;
    size_t need[GST_COUNT], off[GST_COUNT] = {0};
#define GST_NEED(type, name, size) need[GST_##name] = (size_t)(size);
    GST_CTX_BUFFERS(GST_NEED)
#undef GST_NEED
    int r =
        pc_ws_plan_block(&cx->block, &cx->block_len, GST_COUNT, gst_elem, NULL, need, cx->cap, off);
    if (r) {
        char *b = cx->block;
#define GST_POINT(type, name, size) cx->name = b ? (type *)(void *)(b + off[GST_##name]) : NULL;
        GST_CTX_BUFFERS(GST_POINT)
#undef GST_POINT
    }
    cx->slot_cfg_len = K * ncs * D;
    cx->R = gg->R;
    return r >= 0;
}

static float *slot_cfg(const pc_gst_ctx *cx, int i) {
    return cx->slot_cfg + (size_t)i * cx->slot_cfg_len;
}
static float *slot_readout(const pc_gst_ctx *cx, int i) {
    return cx->slot_readout + (size_t)i * (size_t)cx->K * (size_t)cx->R;
}

/* Segment s's rows of cfg (K, nc, D) into out (K, nc_s, D). */
static void seg_cfg(const seg *sg, const float *cfg, int K, int nc, int D, float *out) {
    for (int k = 0; k < K; k++)
        for (int c = 0; c < sg->nc; c++)
            memcpy(out + ((size_t)k * sg->nc + c) * D,
                   cfg + ((size_t)k * nc + sg->cfg_j[c]) * D, (size_t)D * sizeof(float));
}

/* Readouts of segment s for K configs, fresh (no backward) into out (K, R). */
static pc_status seg_fresh(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, int s,
                           const float *cfg, int K, int D, float *out, pc_error *err) {
    const seg *sg = &gg->seg[s];
    seg_cfg(sg, cfg, K, gg->nc, D, cx->fresh_cfg);
    return pc_gnn_readout(m, cx->fresh_ws, &sg->g, cx->fresh_cfg, K, NULL, out, err);
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
        if (!gg->valid[cx->ids[k] * gg->S + s]) cx->missing[Km++] = k;
    if (Km == 0) return PC_OK;
    /* one batched fresh readout of the configs the table lacks */
    for (int i = 0; i < Km; i++)
        seg_cfg(sg, cfg + (size_t)cx->missing[i] * gg->nc * D, 1, gg->nc, D,
                cx->fresh_cfg + (size_t)i * sg->nc * D);
    pc_status st =
        pc_gnn_readout(m, cx->fresh_ws, &sg->g, cx->fresh_cfg, Km, NULL, cx->fresh_readout, err);
    if (st) return st;
    for (int i = 0; i < Km; i++) {
        int64_t c = cx->ids[cx->missing[i]];
        memcpy(gg->table + (size_t)c * SR + (size_t)s * R, cx->fresh_readout + (size_t)i * R,
               (size_t)R * sizeof(float));
        gg->valid[c * gg->S + s] = 1;
    }
    return PC_OK;
}

/* The step's trained segments (a uniform sample without replacement) and kept stale ones. */
static void sample_segments(pc_gst_ctx *cx, const pc_gst_graph *gg, const pc_gst_opts *o,
                            uint64_t *rng) {
    int S = gg->S;
    int T = o->train_segs < S ? o->train_segs : S;
    if (T > cx->slots) T = cx->slots;
    for (int s = 0; s < S; s++) {
        cx->order[s] = s;
        cx->kept[s] = 0;
    }
    for (int i = 0; i < T; i++) {
        int j = i + (int)(pc_splitmix64(rng) % (uint64_t)(S - i));
        int tmp = cx->order[i];
        cx->order[i] = cx->order[j];
        cx->order[j] = tmp;
    }
    for (int i = 0; i < T; i++) cx->kept[cx->order[i]] = 2; /* trained */
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
}

pc_status pc_gst_forward(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const int64_t *ids,
                         const float *cfg, int K, const pc_gst_opts *o, uint64_t *rng,
                         float *scores, pc_error *err) {
    int S = gg->S, R = gg->R, D = m->cfg_dim;
    if (!gg->table || S < 1 || K < 1)
        return pc_fail(err, PC_ERR_ARG, "gst: graph built without a table, or no configs");
    cx->K = 0;
    if (!ctx_plan(cx, gg, K, D)) return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
    memcpy(cx->ids, ids, (size_t)K * sizeof *ids);
    for (int64_t k = 0; k < K; k++)
        if (ids[k] < 0 || ids[k] >= gg->configs)
            return pc_fail(err, PC_ERR_RANGE, "gst: config %lld not in the table",
                           (long long)ids[k]);
    cx->K = K;
    sample_segments(cx, gg, o, rng);
    memset(cx->readout, 0, (size_t)K * R * sizeof(float));
    pc_status st;
    for (int i = 0; i < cx->ntrained; i++) {
        int s = cx->order[i];
        const seg *sg = &gg->seg[s];
        cx->slot_seg[i] = s;
        seg_cfg(sg, cfg, K, gg->nc, D, slot_cfg(cx, i));
        if ((st = pc_gnn_readout(m, cx->train_ws[i], &sg->g, slot_cfg(cx, i), K, NULL,
                                 slot_readout(cx, i), err)))
            return st;
        float wn, wc;
        seg_weights(m, gg, sg, cx->wn_sum, cx->wc_sum, &wn, &wc);
        accumulate(cx->readout, slot_readout(cx, i), K, R, wn, wc, 0);
    }
    size_t SR = (size_t)S * R;
    for (int s = 0; s < S; s++) {
        if (cx->kept[s] != 1) continue;
        if ((st = stale(m, cx, gg, s, cfg, K, D, err))) return st;
        const seg *sg = &gg->seg[s];
        float wn, wc;
        seg_weights(m, gg, sg, cx->wn_sum, cx->wc_sum, &wn, &wc);
        if (sg->nc == 0) {
            accumulate(cx->readout, gg->shared + (size_t)s * R, K, R, wn, wc, 1);
            continue;
        }
        for (int k = 0; k < K; k++)
            accumulate(cx->readout + (size_t)k * R, gg->table + (size_t)ids[k] * SR + (size_t)s * R,
                       1, R, wn, wc, 0);
    }
    return pc_gnn_head_forward(m, cx->head_ws, cx->readout, K, scores, err);
}

pc_status pc_gst_backward(pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const float *dscores,
                          pc_error *err) {
    int K = cx->K, R = gg->R, Pw = R / 2;
    size_t SR = (size_t)gg->S * R;
    if (K < 1) return pc_fail(err, PC_ERR_ARG, "gst: backward without a forward");
    pc_status st = pc_gnn_head_backward(m, cx->head_ws, dscores, cx->d_readout, err);
    for (int i = 0; i < cx->ntrained && !st; i++) {
        int s = cx->slot_seg[i];
        const seg *sg = &gg->seg[s];
        float wn, wc;
        seg_weights(m, gg, sg, cx->wn_sum, cx->wc_sum, &wn, &wc);
        for (int k = 0; k < K; k++)
            for (int c = 0; c < R; c++)
                cx->d_slot_readout[(size_t)k * R + c] =
                    (c < Pw ? wn : wc) * cx->d_readout[(size_t)k * R + c];
        st = pc_gnn_readout_backward(m, cx->train_ws[i], cx->d_slot_readout, err);
        /* the table takes the fresh readouts */
        const float *fresh = slot_readout(cx, i);
        if (sg->nc == 0) {
            memcpy(gg->shared + (size_t)s * R, fresh, (size_t)R * sizeof(float));
            gg->shared_ok[s] = 1;
        } else {
            for (int k = 0; k < K; k++) {
                memcpy(gg->table + (size_t)cx->ids[k] * SR + (size_t)s * R, fresh + (size_t)k * R,
                       (size_t)R * sizeof(float));
                gg->valid[cx->ids[k] * gg->S + s] = 1;
            }
        }
    }
    return st;
}

pc_status pc_gst_score(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const float *cfg,
                       int K, float *scores, pc_error *err) {
    int R = gg->R, D = m->cfg_dim;
    if (!ctx_plan(cx, gg, K, D)) {
        cx->K = 0;
        return pc_fail(err, PC_ERR_NOMEM, "gst: out of memory");
    }
    memset(cx->readout, 0, (size_t)K * R * sizeof(float));
    float wn_sum = (float)gg->n, wc_sum = (float)gg->nc;
    for (int s = 0; s < gg->S; s++) {
        const seg *sg = &gg->seg[s];
        int shared = sg->nc == 0, Ks = shared ? 1 : K;
        pc_status st = seg_fresh(m, cx, gg, s, cfg, Ks, D, cx->fresh_readout, err);
        if (st) return st;
        float wn, wc;
        seg_weights(m, gg, sg, wn_sum, wc_sum, &wn, &wc);
        accumulate(cx->readout, cx->fresh_readout, K, R, wn, wc, shared);
    }
    cx->K = K;
    return pc_gnn_head_forward(m, cx->head_ws, cx->readout, K, scores, err);
}

pc_status pc_gst_head_backward(pc_gnn *m, pc_gst_ctx *cx, const float *dscores,
                               pc_error *err) {
    return pc_gnn_head_backward(m, cx->head_ws, dscores, NULL, err);
}
