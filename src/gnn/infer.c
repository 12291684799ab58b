/*
 * Inference (src/gnn/infer.h): every configuration of a graph scored in
 * chunks over the shared prefix, distinct configurations once.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dataset/config_pack.h"
#include "gnn/infer.h"

/* ---- buffers ------------------------------------------------------------------ */

int pc_fbuf_grow(pc_fbuf *b, size_t n) {
    float *p = pc_reserve_array(b->p, &b->cap, n, sizeof *p);
    if (!p) return 0;
    b->p = p;
    return 1;
}

void pc_infer_scratch_free(pc_infer_scratch *x) {
    free(x->raw.p);
    free(x->cfg.p);
    free(x->s.p);
    free(x->ds.p);
    free(x->pred);
    free(x->yk);
    free(x->ids);
}

int pc_infer_scratch_ids(pc_infer_scratch *x, size_t n) {
    if (n <= x->icap) return 1;
    int64_t *p = realloc(x->ids, n * sizeof *p);
    double *q = realloc(x->pred, n * sizeof *q);
    if (q) x->pred = q;
    double *r = q ? realloc(x->yk, n * sizeof *r) : NULL;
    if (r) x->yk = r;
    if (!p) return 0;
    x->ids = p;
    if (!q || !r) return 0;
    x->icap = n;
    return 1;
}

pc_status pc_infer_gather_cfg(const pc_gnn *m, pc_graph *g, const int64_t *ids, int K,
                              pc_infer_scratch *x, pc_error *err) {
    if (m->opts.kind == PC_KIND_TILE) {
        const float *cf = pc_graph_config_feat(g);
        int D0 = (int)pc_graph_config_dim(g);
        if (!pc_fbuf_grow(&x->raw, (size_t)K * D0) ||
            !pc_fbuf_grow(&x->cfg, (size_t)K * m->cfg_dim))
            return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        for (int k = 0; k < K; k++)
            memcpy(x->raw.p + (size_t)k * D0, cf + ids[k] * D0, (size_t)D0 * sizeof(float));
        return pc_gnn_prep_configs(m, g, x->raw.p, K, x->cfg.p, err);
    }
    size_t nc = (size_t)pc_graph_num_config_nodes(g);
    size_t rows = (size_t)K * nc;
    if (!pc_fbuf_grow(&x->raw, rows * PC_LAYOUT_CONFIG_DIM + 1) ||
        !pc_fbuf_grow(&x->cfg, rows * (size_t)m->cfg_dim + 1))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    pc_status st = pc_graph_config_feat_gather(g, ids, K, x->raw.p, err);
    if (st) return st;
    return pc_gnn_prep_configs(m, g, x->raw.p, (int64_t)rows, x->cfg.p, err);
}

void pc_infer_uniq_free(pc_infer_uniq *u) {
    free(u->first);
    free(u->map);
    u->first = u->map = NULL;
}

/* ---- scoring every config of a graph ------------------------------------------ */

/* What one scoring of a graph works on. */
typedef struct igraph {
    pc_graph *g;
    const pc_gnn_gdata *d;
    pc_gst_graph *gst;
    int64_t c;
    pc_infer_uniq *u;
} igraph;

/*
 * Configs c0.. of a chunk into x->ids: K real ones, padded (cyclically from
 * config 0) to whole attention groups when the model has cross-config
 * attention, since its scores are only defined per group. Returns the padded
 * count.
 */
static int chunk_ids(const pc_gnn *m, const igraph *t, int64_t c0, int64_t chunk, int *real,
                     pc_infer_scratch *x) {
    const pc_infer_uniq *u = t->u;
    int64_t n = u->first ? u->n : t->c; /* configs to score */
    int K = (int)(n - c0 < chunk ? n - c0 : chunk), Kp = K;
    int g = m->opts.attn_heads > 0 ? m->opts.attn_group : 1;
    if (g > 1 && n >= g && K % g) Kp = K + (g - K % g);
    if (g > 1 && n < g) Kp = (int)n; /* one group of every config */
    for (int k = 0; k < Kp; k++) {
        int64_t i = (c0 + k) % n;
        x->ids[k] = u->first ? u->first[i] : i;
    }
    *real = K;
    return Kp;
}

/*
 * Scores only distinct configurations, computed once per graph: identical
 * configurations must get identical scores (and the ranking's lowest-index
 * tie rule then applies), while a score computed in a GEMM batch can differ in
 * the last bit with its row's position. Attention models score configs in
 * groups, so a config's score depends on its group: they score every config.
 * If the grouping cannot be computed (out of memory, layout values the packer
 * refuses) or would need over 256 MiB of layout codes, every config is scored.
 */
static void uniq_build(const pc_gnn *m, const igraph *t) {
    pc_infer_uniq *u = t->u;
    if (u->done) return;
    u->done = 1;
    if (m->opts.attn_heads > 0 || t->c < 2) return;
    /* layout dedup holds 12 bytes of codes per (config, configurable node):
       skip it where that would be a large allocation of its own */
    if (pc_graph_kind(t->g) == PC_KIND_LAYOUT &&
        (double)t->c * (double)pc_graph_num_config_nodes(t->g) * 12.0 > 268435456.0)
        return;
    pc_dedup d;
    pc_error e;
    if (pc_graph_config_dedup(t->g, PC_DEDUP_MIN, &d, &e) != PC_OK) return;
    if (d.n_out < d.n_in) {
        u->first = d.first, u->map = d.map, u->n = d.n_out;
        d.first = d.map = NULL;
    }
    pc_dedup_free(&d);
}

/* Scores of the distinct configs (x->pred[0..n)) to every config, in place:
   a config's group is never after the config, so going down reads only
   entries not yet overwritten. */
static void expand_uniq(const igraph *t, pc_infer_scratch *x) {
    if (!t->u->first) return;
    for (int64_t c = t->c - 1; c >= 0; c--) x->pred[c] = x->pred[t->u->map[c]];
}

int64_t pc_infer_chunk_of(const pc_gnn *m, int64_t budget) {
    int g = m->opts.attn_heads > 0 ? m->opts.attn_group : 1;
    if (budget < g) budget = g;
    return budget / g * g;
}

/* GST models: every segment fresh, chunks of configs. */
static pc_status infer_all_gst(const pc_gnn *m, const igraph *t, pc_infer_scratch *x,
                               pc_error *err) {
    pc_gst_ctx *cx = pc_gst_ctx_new(1);
    int64_t chunk = pc_infer_chunk_of(m, 64);
    if (!cx || !pc_fbuf_grow(&x->s, (size_t)chunk) ||
        !pc_infer_scratch_ids(x, (size_t)(t->c + chunk))) {
        pc_gst_ctx_free(cx);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    pc_status st = PC_OK;
    int64_t n = t->u->first ? t->u->n : t->c;
    for (int64_t c0 = 0; c0 < n && !st; c0 += chunk) {
        int K, Kp = chunk_ids(m, t, c0, chunk, &K, x);
        if (!(st = pc_infer_gather_cfg(m, t->g, x->ids, Kp, x, err)))
            st = pc_gst_score(m, cx, t->gst, x->cfg.p, Kp, x->s.p, err);
        for (int k = 0; k < K && !st; k++) x->pred[c0 + k] = (double)x->s.p[k];
    }
    pc_gst_ctx_free(cx);
    if (!st) expand_uniq(t, x);
    return st;
}

int64_t pc_infer_chunk(const pc_gnn *m, const pc_gnn_graph *g) {
    double per = (double)pc_gnn_bytes_per_config(m, g);
    int64_t chunk = (int64_t)(268435456.0 / per);
    if (chunk < 1) chunk = 1;
    if (chunk > 1024) chunk = 1024;
    return pc_infer_chunk_of(m, chunk);
}

pc_status pc_infer_all(const pc_gnn *m, pc_gnn_ws *ws, pc_graph *g, const pc_gnn_gdata *d,
                       pc_gst_graph *gst, pc_infer_uniq *u, pc_infer_scratch *x, pc_error *err) {
    igraph t = {g, d, gst, pc_graph_num_configs(g), u};
    if (!pc_infer_scratch_ids(x, (size_t)t.c + 1))
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    uniq_build(m, &t);
    if (m->opts.gst) return infer_all_gst(m, &t, x, err);
    pc_status st = pc_gnn_prefix(m, ws, &d->g, err);
    if (st) return st;
    int64_t chunk = pc_infer_chunk(m, &d->g);
    if (!pc_fbuf_grow(&x->s, (size_t)chunk) || !pc_infer_scratch_ids(x, (size_t)(t.c + chunk)))
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    int64_t n = u->first ? u->n : t.c;
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        int K, Kp = chunk_ids(m, &t, c0, chunk, &K, x);
        if ((st = pc_infer_gather_cfg(m, g, x->ids, Kp, x, err))) return st;
        if ((st = pc_gnn_score_configs(m, ws, x->cfg.p, Kp, x->s.p, err))) return st;
        for (int k = 0; k < K; k++) x->pred[c0 + k] = (double)x->s.p[k];
    }
    expand_uniq(&t, x);
    return PC_OK;
}

pc_status pc_infer_score_graph(const pc_gnn *m, pc_gnn_ws *ws, pc_graph *g, double *scores,
                               pc_error *err) {
    int64_t c = pc_graph_num_configs(g);
    if (c < 1) return PC_OK;
    pc_gnn_gdata d;
    memset(&d, 0, sizeof d);
    pc_gst_graph *gst = NULL;
    pc_infer_uniq u;
    memset(&u, 0, sizeof u);
    pc_infer_scratch x;
    memset(&x, 0, sizeof x);
    pc_status st = pc_gnn_gdata_build(m, g, &d, err);
    if (!st && m->opts.gst) {
        pc_gst_opts go = pc_gst_opts_of(m);
        st = pc_gst_graph_build(m, &d, &go, 0, &gst, err);
    }
    if (!st) st = pc_infer_all(m, ws, g, &d, gst, &u, &x, err);
    if (!st) memcpy(scores, x.pred, (size_t)c * sizeof(double));
    else pc_error_prefix(err, "%s: ", pc_graph_path(g));
    pc_gnn_gdata_free(&d);
    pc_gst_graph_free(gst);
    pc_infer_uniq_free(&u);
    pc_infer_scratch_free(&x);
    return st;
}
