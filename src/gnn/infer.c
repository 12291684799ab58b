/*
 * Inference (src/gnn/infer.h): every configuration of a graph scored in
 * chunks over the shared prefix, distinct configurations once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dataset/config_pack.h"
#include "gnn/infer.h"
#include "perfcast/npz.h"

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
    free(x->ens);
    free(x->pass);
    free(x->spread);
    free(x->perm);
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
    const int64_t *perm; /* TTA: position i scores config perm[i]; NULL: config i */
    double *out;         /* (c) the scores, by config */
    int64_t chunk;       /* configs per chunk */
    const pc_infer_run *run; /* its progress; NULL: none */
    double work, work_total; /* configs scored over all members and orderings, of */
} igraph;

/* After a chunk of K configs: "configs scored", the graph's configs as the unit. */
static void chunk_progress(igraph *t, int K) {
    if (!t->run || !t->run->progress) return;
    t->work += K;
    double f = t->work_total > 0 ? t->work / t->work_total : 1.0;
    int64_t done = (int64_t)((double)t->c * (f < 1.0 ? f : 1.0));
    t->run->progress(t->run->progress_user, "configs scored", done, t->c);
}

/*
 * Configs c0.. of a chunk into x->ids: K real ones, padded (cyclically from
 * position 0) to whole attention groups when the model has cross-config
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
        x->ids[k] = u->first ? u->first[i] : t->perm ? t->perm[i] : i;
    }
    *real = K;
    return Kp;
}

/* The K real scores of a chunk at positions c0.. into t->out. */
static void chunk_out(const igraph *t, int64_t c0, int K, const float *s) {
    for (int k = 0; k < K; k++) t->out[t->perm ? t->perm[c0 + k] : c0 + k] = (double)s[k];
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

/* Scores of the distinct configs (t->out[0..n)) to every config, in place:
   a config's group is never after the config, so going down reads only
   entries not yet overwritten. */
static void expand_uniq(const igraph *t) {
    if (!t->u->first) return;
    for (int64_t c = t->c - 1; c >= 0; c--) t->out[c] = t->out[t->u->map[c]];
}

int64_t pc_infer_chunk_of(const pc_gnn *m, int64_t budget) {
    int g = m->opts.attn_heads > 0 ? m->opts.attn_group : 1;
    if (budget < g) budget = g;
    return budget / g * g;
}

/* GST models: every segment fresh, chunks of configs, into t->out. */
static pc_status infer_all_gst(const pc_gnn *m, igraph *t, pc_infer_scratch *x,
                               pc_error *err) {
    pc_gst_ctx *cx = pc_gst_ctx_new(1);
    if (!cx) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pc_status st = PC_OK;
    int64_t n = t->u->first ? t->u->n : t->c;
    for (int64_t c0 = 0; c0 < n && !st; c0 += t->chunk) {
        int K, Kp = chunk_ids(m, t, c0, t->chunk, &K, x);
        if (!(st = pc_infer_gather_cfg(m, t->g, x->ids, Kp, x, err)))
            st = pc_gst_score(m, cx, t->gst, x->cfg.p, Kp, x->s.p, err);
        if (!st) chunk_out(t, c0, K, x->s.p);
        if (!st) chunk_progress(t, K);
    }
    pc_gst_ctx_free(cx);
    if (!st) expand_uniq(t);
    return st;
}

int64_t pc_infer_chunk(const pc_gnn *m, const pc_gnn_graph *g) {
    double per = (double)pc_gnn_bytes_per_config(m, g);
    int64_t chunk = (int64_t)(268435456.0 / per);
    if (chunk < 1) chunk = 1;
    if (chunk > 1024) chunk = 1024;
    return pc_infer_chunk_of(m, chunk);
}

/* ---- the memory a scoring needs ------------------------------------------------ */

int64_t pc_infer_chunk_min(const pc_gnn *m) { return pc_infer_chunk_of(m, 1); }

int64_t pc_infer_chunk_for(const pc_gnn *m, const pc_graph *g) {
    if (m->opts.gst) return pc_infer_chunk_of(m, 64);
    pc_gnn_graph gg;
    memset(&gg, 0, sizeof gg);
    gg.n = (int)pc_graph_num_nodes(g);
    gg.nc = m->opts.kind == PC_KIND_LAYOUT ? (int)pc_graph_num_config_nodes(g) : 0;
    return pc_infer_chunk(m, &gg);
}

double pc_infer_peak_bytes(const pc_gnn *m, const pc_graph *g, int64_t chunk, int workspaces,
                           double *input, double *act) {
    double n = (double)pc_graph_num_nodes(g), e = (double)pc_graph_num_edges(g);
    double c = (double)pc_graph_num_configs(g), F = m->feat_dim;
    int layout = m->opts.kind == PC_KIND_LAYOUT;
    double nc = layout ? (double)pc_graph_num_config_nodes(g) : 0;
    int64_t nsplits = 0;
    pc_graph_node_splits(g, &nsplits);
    /* the configs a chunk scores: at most every config, whole attention groups */
    int64_t K = pc_infer_chunk_of(m, chunk < 1 ? 1 : chunk);
    int64_t all = pc_infer_chunk_of(m, (int64_t)c);
    if (all < K) K = all;
    double Kd = (double)K;
    /* model input: features, CSR (both directions), pruned copies */
    double in = n * F * 4 + (2 * (n + 1) + 2 * e) * 4;
    if (layout && m->opts.prune_hops >= 0) in += n * 4 + nc * 4 + e * 8 + (double)nsplits * 8;
    if (m->opts.encode) in += n * m->node_prep.in_dim * 4; /* the encoded features, briefly */
    double a;
    if (m->opts.gst) { /* segments: copies of the input, a pass over the largest */
        pc_gst_opts go = pc_gst_opts_of(m);
        double seg = go.seg_size > 0 && go.seg_size < n ? go.seg_size : n;
        double S = n / (seg > 0 ? seg : 1) + 1;
        in += n * F * 4 + n * 8 + (2 * (n + S) + 2 * e) * 4;
        double snc = nc < seg ? nc : seg;
        a = pc_gnn_pass_bytes(m, (int64_t)seg, (int64_t)snc, K, 0) +
            Kd * S * pc_gnn_readout_width(m) * 4;
        a *= 1.5; /* the planner's slack, allocated (not all touched) */
    } else {
        a = pc_gnn_ws_score_bytes(m, (int64_t)n, (int64_t)nc, K);
    }
    a *= workspaces > 1 ? workspaces : 1;
    /* buffers: ids/pred/yk, a chunk's scores, its raw and preprocessed config rows */
    double rows = layout ? Kd * nc : Kd;
    double raw = layout ? PC_LAYOUT_CONFIG_DIM : (double)pc_graph_config_dim(g);
    double b = (c + Kd + 1) * 24 + Kd * 4 + rows * (raw + m->cfg_dim) * 4 + 8;
    /* small ones: the GST context, the dedup's tables; and 256 KiB the configs'
       preprocessing allocates at any chunk size (measured, tests/unit/test_infer_memory.c) */
    b += 327680;
    int passes = m->opts.attn_heads > 0 && m->tta > 1 ? m->tta : 1;
    if (m->opts.attn_heads <= 0 && c >= 2) /* the grouping and what computes it */
        b += c * 16 + (layout ? c * nc * 12 + c * 8 : c * (raw * 4 + 24));
    if (m->n_members > 0 || passes > 1)
        b += c * 8 * (1 + m->n_members) + c * 8 + (passes > 1 ? c * 16 : 0);
    if (input) *input = in;
    if (act) *act = a;
    return in + a + b;
}

pc_status pc_infer_fit(const pc_gnn *m, const pc_graph *g, uint64_t max_memory, int workspaces,
                       int64_t *chunk_max, pc_error *err) {
    *chunk_max = 0;
    int64_t chunk = pc_infer_chunk_for(m, g), lo = pc_infer_chunk_min(m);
    double need = pc_infer_peak_bytes(m, g, chunk, workspaces, NULL, NULL);
    if (max_memory == PC_MEMORY_AUTO && need <= (double)PC_MEMORY_AUTO_MIN) return PC_OK;
    const double budget = (double)pc_memory_budget(max_memory);
    if (need <= budget) return PC_OK;
    while (chunk > lo && need > budget) {
        chunk = pc_infer_chunk_of(m, chunk / 2 > lo ? chunk / 2 : lo);
        need = pc_infer_peak_bytes(m, g, chunk, workspaces, NULL, NULL);
    }
    if (need <= budget) {
        *chunk_max = chunk;
        return PC_OK;
    }
    double in = 0, act = 0;
    need = pc_infer_peak_bytes(m, g, lo, workspaces, &in, &act);
    char t[32], b[32], ti[32], ta[32];
    pc_fmt_bytes((uint64_t)need, t, sizeof t);
    pc_fmt_bytes((uint64_t)budget, b, sizeof b);
    pc_fmt_bytes((uint64_t)in, ti, sizeof ti);
    pc_fmt_bytes((uint64_t)act, ta, sizeof ta);
    return pc_fail(err, PC_ERR_NOMEM,
                   "scoring configs of this graph needs %s in memory even in chunks of "
                   "%lld config%s (model input %s, activations %s; %lld nodes, hidden %d, %d "
                   "layers%s), more than the memory budget of %s (max_memory)",
                   t, (long long)lo, lo == 1 ? "" : "s", ti, ta,
                   (long long)pc_graph_num_nodes(g), m->opts.hidden, m->opts.layers,
                   workspaces > 1 ? ", a workspace per ensemble member" : "", b);
}

/* One ordering of every config through the model, its prefix computed, into t->out. */
static pc_status score_chunks(const pc_gnn *m, pc_gnn_ws *ws, igraph *t,
                              pc_infer_scratch *x, pc_error *err) {
    int64_t n = t->u->first ? t->u->n : t->c;
    for (int64_t c0 = 0; c0 < n; c0 += t->chunk) {
        int K, Kp = chunk_ids(m, t, c0, t->chunk, &K, x);
        pc_status st = pc_infer_gather_cfg(m, t->g, x->ids, Kp, x, err);
        if (!st) st = pc_gnn_score_configs(m, ws, x->cfg.p, Kp, x->s.p, err);
        if (st) return st;
        chunk_out(t, c0, K, x->s.p);
        chunk_progress(t, K);
    }
    expand_uniq(t);
    return PC_OK;
}

void pc_infer_tta_perm(uint64_t seed, int p, int64_t n, int64_t *perm) {
    uint64_t r = seed ^ 0x77a0c0de5eedULL;
    uint64_t z = pc_splitmix64(&r);
    r ^= z + (uint64_t)p * 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(pc_splitmix64(&r) % (uint64_t)(i + 1));
        int64_t v = perm[i];
        perm[i] = perm[j];
        perm[j] = v;
    }
}

/* One model's score of every config, the mean over `passes` TTA orderings, into out. */
static pc_status score_member(const pc_gnn *mm, int passes, uint64_t seed, pc_gnn_ws *ws,
                              igraph *t, pc_infer_scratch *x, double *out, pc_error *err) {
    pc_status st = mm->opts.gst ? PC_OK : pc_gnn_prefix(mm, ws, &t->d->g, err);
    for (int p = 0; p < passes && !st; p++) {
        t->perm = NULL;
        t->out = out;
        if (p > 0) {
            pc_infer_tta_perm(seed, p, t->c, x->perm);
            t->perm = x->perm;
            t->out = x->pass;
        }
        st = mm->opts.gst ? infer_all_gst(mm, t, x, err) : score_chunks(mm, ws, t, x, err);
        for (int64_t i = 0; i < t->c && !st && p > 0; i++) out[i] += x->pass[i];
    }
    for (int64_t i = 0; i < t->c && !st && passes > 1; i++) out[i] /= passes;
    t->perm = NULL;
    return st;
}

/* Scores minus their mean over the graph's configs. */
static void center(double *s, int64_t c) {
    double mean = 0;
    for (int64_t i = 0; i < c; i++) mean += s[i];
    mean /= (double)c;
    for (int64_t i = 0; i < c; i++) s[i] -= mean;
}

static int grow_f64(double **p, size_t *cap, size_t n) {
    double *q = pc_reserve_array(*p, cap, n ? n : 1, sizeof *q);
    if (q) *p = q;
    return q != NULL;
}

/* Every member's scores (TTA-averaged, centered when several) into x->ens, then
   their mean into x->pred and their spread into x->spread. */
static pc_status score_ensemble(const pc_gnn *m, int passes, pc_gnn_ws *ws, igraph *t,
                                pc_infer_scratch *x, pc_error *err) {
    size_t c = (size_t)t->c, N = 1 + (size_t)m->n_members;
    int64_t *pp = passes > 1 ? pc_reserve_array(x->perm, &x->perm_cap, c ? c : 1, sizeof *pp)
                             : x->perm;
    if (pp) x->perm = pp;
    if (!grow_f64(&x->ens, &x->ens_cap, N * c) || !grow_f64(&x->spread, &x->spread_cap, c) ||
        (passes > 1 && (!pp || !grow_f64(&x->pass, &x->pass_cap, c))))
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (size_t j = 0; j < N; j++) {
        const pc_gnn *mm = j ? m->members[j - 1] : m;
        double *s = x->ens + j * c;
        pc_status st = score_member(mm, passes, m->tta_seed, ws, t, x, s, err);
        if (st) return st;
        if (N > 1 && c > 0) center(s, t->c);
    }
    for (size_t i = 0; i < c; i++) {
        double mean = 0, var = 0;
        for (size_t j = 0; j < N; j++) mean += x->ens[j * c + i];
        mean /= (double)N;
        for (size_t j = 0; j < N; j++) var += (x->ens[j * c + i] - mean) * (x->ens[j * c + i] - mean);
        x->pred[i] = mean;
        x->spread[i] = sqrt(var / (double)N);
    }
    return PC_OK;
}

pc_status pc_infer_all(const pc_gnn *m, pc_gnn_ws *ws, pc_graph *g, const pc_gnn_gdata *d,
                       pc_gst_graph *gst, pc_infer_uniq *u, pc_infer_scratch *x,
                       const pc_infer_run *run, pc_error *err) {
    int64_t c = pc_graph_num_configs(g);
    int64_t chunk = m->opts.gst ? pc_infer_chunk_of(m, 64) : pc_infer_chunk(m, &d->g);
    if (run && run->chunk_max > 0 && run->chunk_max < chunk)
        chunk = pc_infer_chunk_of(m, run->chunk_max);
    /* every buffer first: t.out may point into x->pred */
    if (!pc_infer_scratch_ids(x, (size_t)(c + chunk) + 1) || !pc_fbuf_grow(&x->s, (size_t)chunk))
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    igraph t = {g, d, gst, c, u, NULL, x->pred, chunk, run, 0, 0};
    uniq_build(m, &t);
    int passes = m->opts.attn_heads > 0 && m->tta > 1 ? m->tta : 1;
    t.work_total = (double)(u->first ? u->n : c) * passes * (1 + m->n_members);
    if (m->n_members == 0 && passes == 1) return score_member(m, 1, 0, ws, &t, x, x->pred, err);
    return score_ensemble(m, passes, ws, &t, x, err);
}

pc_status pc_infer_score_graph(const pc_gnn *m, pc_gnn_ws *ws, pc_graph *g, double *scores,
                               double *spread, const pc_infer_run *run, pc_error *err) {
    int64_t c = pc_graph_num_configs(g);
    if (c < 1) return PC_OK;
    pc_infer_run r = {PC_MEMORY_AUTO, 0, NULL, NULL};
    if (run) r = *run;
    r.chunk_max = 0;
    pc_gnn_gdata d;
    memset(&d, 0, sizeof d);
    pc_gst_graph *gst = NULL;
    pc_infer_uniq u;
    memset(&u, 0, sizeof u);
    pc_infer_scratch x;
    memset(&x, 0, sizeof x);
    pc_status st = run ? pc_infer_fit(m, g, r.max_memory, 1, &r.chunk_max, err) : PC_OK;
    if (!st) st = pc_gnn_gdata_build(m, g, &d, err);
    if (!st && m->opts.gst) {
        pc_gst_opts go = pc_gst_opts_of(m);
        st = pc_gst_graph_build(m, &d, &go, 0, &gst, err);
    }
    if (!st) st = pc_infer_all(m, ws, g, &d, gst, &u, &x, &r, err);
    if (!st) memcpy(scores, x.pred, (size_t)c * sizeof(double));
    if (!st && spread && x.spread) memcpy(spread, x.spread, (size_t)c * sizeof(double));
    else if (!st && spread) memset(spread, 0, (size_t)c * sizeof(double));
    if (st) pc_error_prefix(err, "%s: ", pc_graph_path(g));
    pc_gnn_gdata_free(&d);
    pc_gst_graph_free(gst);
    pc_infer_uniq_free(&u);
    pc_infer_scratch_free(&x);
    return st;
}
