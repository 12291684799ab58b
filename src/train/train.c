/* perfcast train / eval: the training loop and the evaluation of checkpoints. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "perfcast/dataset.h"
#include "perfcast/metrics.h"
#include "dataset/config_pack.h"
#include "perfcast/dist.h"
#include "model/encode.h"
#include "train/gst.h"
#include "train/train.h"

pc_train_opts pc_train_opts_default(void) {
    pc_train_opts o;
    memset(&o, 0, sizeof o);
    o.epochs = 20;
    o.patience = 5;
    o.seed = 1;
    o.lr = 1e-3f;
    o.weight_decay = 1e-4f;
    o.clip = 1.0f;
    o.hidden = 64;
    o.layers = 3;
    o.layernorm = -1;
    o.gst_keep = -1;
    o.prune_hops = -1;
    return o;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rand_below(uint64_t *s, uint64_t n) { return pc_splitmix64(s) % n; }

/* ---- loaded graphs ---------------------------------------------------- */

typedef struct tgraph {
    pc_graph *g;
    pc_model_gdata d;
    int64_t c;
    double *rt;   /* runtime (c) */
    double *norm; /* tile normalizers (c), NULL for layout */
    double *y;    /* training target: rt / norm or rt */
    int64_t *by_speed; /* config ids by y, fastest first (sampling "fast" only) */
    pc_gst_graph *gst; /* segments and table (GST models only) */
    size_t gi;         /* index of the file in its split (all ranks agree) */
    int64_t *cand;     /* training candidates: one config per duplicate group (--dedup) */
    int64_t ncand;     /* candidates (c without --dedup) */
    /* inference over distinct configs (tgraph_uniq): the first config of each
       group of identical ones, each config's group; NULL when all differ */
    int64_t *ufirst, *umap, nu;
    int uniq_done;
} tgraph;

typedef struct tset {
    tgraph *v;
    size_t n;
} tset;

static void tset_free(tset *s) {
    for (size_t i = 0; i < s->n; i++) {
        pc_model_gdata_free(&s->v[i].d);
        pc_graph_free(s->v[i].g);
        free(s->v[i].rt);
        free(s->v[i].norm);
        free(s->v[i].y);
        free(s->v[i].by_speed);
        pc_gst_graph_free(s->v[i].gst);
        free(s->v[i].cand);
        free(s->v[i].ufirst);
        free(s->v[i].umap);
    }
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/*
 * Loads the graphs of a split whose index i has i % mod in [lo, hi): a rank's
 * share in multi-process runs (mod 1, [0, 1) = every graph).
 */
static pc_status tset_load(const pc_dataset *d, int coll, int split, int threads, size_t mod,
                           size_t lo_lane, size_t hi_lane, tset *s, pc_error *err) {
    size_t n = pc_dataset_num_files(d, coll, split);
    s->n = 0;
    s->v = calloc(n ? n : 1, sizeof *s->v);
    if (!s->v) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    pc_load_opts lo = pc_load_opts_default();
    lo.kind = pc_collection_kind(coll);
    lo.threads = threads;
    for (size_t i = 0; i < n; i++) {
        if (i % mod < lo_lane || i % mod >= hi_lane) continue;
        tgraph *t = &s->v[s->n];
        pc_status st = pc_graph_load(pc_dataset_file(d, coll, split, i), &lo, &t->g, err);
        if (st) return st;
        t->gi = i;
        s->n++;
        t->c = pc_graph_num_configs(t->g);
        const int64_t *rt = pc_graph_config_runtime(t->g);
        const int64_t *nz = pc_graph_runtime_normalizers(t->g);
        size_t c = (size_t)(t->c > 0 ? t->c : 1);
        t->rt = malloc(c * sizeof(double));
        t->y = malloc(c * sizeof(double));
        t->norm = nz ? malloc(c * sizeof(double)) : NULL;
        if (!t->rt || !t->y || (nz && !t->norm))
            return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        for (int64_t k = 0; k < t->c; k++) {
            t->rt[k] = (double)rt[k];
            if (nz) t->norm[k] = (double)nz[k];
            t->y[k] = nz && nz[k] > 0 ? t->rt[k] / t->norm[k] : t->rt[k];
        }
    }
    return PC_OK;
}

static pc_gst_opts gst_opts_of(const pc_model *m) {
    pc_gst_opts o = pc_gst_opts_default();
    o.method = (pc_seg_method)m->opts.seg_method;
    o.seg_size = m->opts.seg_size;
    return o;
}

/* Model inputs of every graph; GST models also segment them (with a table if `table`). */
static pc_status tset_build(const pc_model *m, tset *s, int table, pc_error *err) {
    for (size_t i = 0; i < s->n; i++) {
        pc_status st = pc_model_gdata_build(m, s->v[i].g, &s->v[i].d, err);
        if (!st && m->opts.gst) {
            pc_gst_opts go = gst_opts_of(m);
            st = pc_gst_graph_build(m, &s->v[i].d, &go, table ? s->v[i].c : 0, &s->v[i].gst,
                                    err);
        }
        if (st) {
            pc_error_prefix(err, "%s: ", pc_graph_path(s->v[i].g));
            return st;
        }
    }
    return PC_OK;
}

/* ---- scratch ---------------------------------------------------------- */

typedef struct fbuf {
    float *p;
    size_t cap;
} fbuf;

static int fgrow(fbuf *b, size_t n) {
    if (n <= b->cap) return 1;
    float *p = realloc(b->p, n * sizeof *p);
    if (!p) return 0;
    b->p = p;
    b->cap = n;
    return 1;
}

typedef struct scratch {
    fbuf raw, cfg, s, ds;
    double *pred, *yk;
    int64_t *ids;
    size_t pcap, icap;
} scratch;

static void scratch_free(scratch *x) {
    free(x->raw.p);
    free(x->cfg.p);
    free(x->s.p);
    free(x->ds.p);
    free(x->pred);
    free(x->yk);
    free(x->ids);
}

static int scratch_ids(scratch *x, size_t n) {
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

/* Preprocessed config features of configs ids[0..K) into x->cfg. */
static pc_status gather_cfg(const pc_model *m, tgraph *t, const int64_t *ids, int K, scratch *x,
                            pc_error *err) {
    if (m->opts.kind == PC_KIND_TILE) {
        const float *cf = pc_graph_config_feat(t->g);
        int D0 = (int)pc_graph_config_dim(t->g);
        if (!fgrow(&x->raw, (size_t)K * D0) || !fgrow(&x->cfg, (size_t)K * m->cfg_dim))
            return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        for (int k = 0; k < K; k++)
            memcpy(x->raw.p + (size_t)k * D0, cf + ids[k] * D0, (size_t)D0 * sizeof(float));
        return pc_model_prep_configs(m, x->raw.p, K, x->cfg.p, err);
    }
    size_t nc = (size_t)pc_graph_num_config_nodes(t->g);
    size_t rows = (size_t)K * nc;
    if (!fgrow(&x->raw, rows * PC_LAYOUT_CONFIG_DIM + 1) ||
        !fgrow(&x->cfg, rows * (size_t)m->cfg_dim + 1))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    pc_status st = pc_graph_config_feat_gather(t->g, ids, K, x->raw.p, err);
    if (st) return st;
    return pc_model_prep_configs(m, x->raw.p, (int64_t)rows, x->cfg.p, err);
}

/* Predicted scores of every config of t into x->pred (chunks over a shared prefix). */
/*
 * Configs c0.. of a chunk into x->ids: K real ones, padded (cyclically from
 * config 0) to whole attention groups when the model has cross-config
 * attention, since its scores are only defined per group. Returns the padded
 * count.
 */
static int chunk_ids(const pc_model *m, const tgraph *t, int64_t c0, int64_t chunk, int *real,
                     scratch *x) {
    int64_t n = t->ufirst ? t->nu : t->c; /* configs to score */
    int K = (int)(n - c0 < chunk ? n - c0 : chunk), Kp = K;
    int g = m->opts.attn_heads > 0 ? m->opts.attn_group : 1;
    if (g > 1 && n >= g && K % g) Kp = K + (g - K % g);
    if (g > 1 && n < g) Kp = (int)n; /* one group of every config */
    for (int k = 0; k < Kp; k++) {
        int64_t i = (c0 + k) % n;
        x->ids[k] = t->ufirst ? t->ufirst[i] : i;
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
static void tgraph_uniq(const pc_model *m, tgraph *t) {
    if (t->uniq_done) return;
    t->uniq_done = 1;
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
        t->ufirst = d.first, t->umap = d.map, t->nu = d.n_out;
        d.first = d.map = NULL;
    }
    pc_dedup_free(&d);
}

/* Scores of the distinct configs (x->pred[0..nu)) to every config, in place:
   a config's group is never after the config, so going down reads only
   entries not yet overwritten. */
static void expand_uniq(const tgraph *t, scratch *x) {
    if (!t->ufirst) return;
    for (int64_t c = t->c - 1; c >= 0; c--) x->pred[c] = x->pred[t->umap[c]];
}

/* Chunk size: about `budget` configs, whole attention groups. */
static int64_t chunk_of(const pc_model *m, int64_t budget) {
    int g = m->opts.attn_heads > 0 ? m->opts.attn_group : 1;
    if (budget < g) budget = g;
    return budget / g * g;
}

/* GST models: every segment fresh, chunks of configs. */
static pc_status predict_all_gst(const pc_model *m, tgraph *t, scratch *x, pc_error *err) {
    pc_gst_ctx *cx = pc_gst_ctx_new(1);
    int64_t chunk = chunk_of(m, 64);
    if (!cx || !fgrow(&x->s, (size_t)chunk) || !scratch_ids(x, (size_t)(t->c + chunk))) {
        pc_gst_ctx_free(cx);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    pc_status st = PC_OK;
    int64_t n = t->ufirst ? t->nu : t->c;
    for (int64_t c0 = 0; c0 < n && !st; c0 += chunk) {
        int K, Kp = chunk_ids(m, t, c0, chunk, &K, x);
        if (!(st = gather_cfg(m, t, x->ids, Kp, x, err)))
            st = pc_gst_score(m, cx, t->gst, x->cfg.p, Kp, x->s.p, err);
        for (int k = 0; k < K && !st; k++) x->pred[c0 + k] = (double)x->s.p[k];
    }
    pc_gst_ctx_free(cx);
    if (!st) expand_uniq(t, x);
    return st;
}

/* Configs per chunk of full-graph inference: a chunk's activations near 256 MiB. */
static int64_t infer_chunk(const pc_model *m, const tgraph *t) {
    double per = (double)pc_model_bytes_per_config(m, &t->d.g);
    int64_t chunk = (int64_t)(268435456.0 / per);
    if (chunk < 1) chunk = 1;
    if (chunk > 1024) chunk = 1024;
    return chunk_of(m, chunk);
}

static pc_status predict_all(const pc_model *m, pc_model_ws *ws, tgraph *t, scratch *x,
                             pc_error *err) {
    if (!scratch_ids(x, (size_t)t->c + 1)) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    tgraph_uniq(m, t);
    if (m->opts.gst) return predict_all_gst(m, t, x, err);
    pc_status st = pc_model_prefix(m, ws, &t->d.g, err);
    if (st) return st;
    int64_t chunk = infer_chunk(m, t);
    if (!fgrow(&x->s, (size_t)chunk) || !scratch_ids(x, (size_t)(t->c + chunk)))
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    int64_t n = t->ufirst ? t->nu : t->c;
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        int K, Kp = chunk_ids(m, t, c0, chunk, &K, x);
        if ((st = gather_cfg(m, t, x->ids, Kp, x, err))) return st;
        if ((st = pc_model_score_configs(m, ws, x->cfg.p, Kp, x->s.p, err))) return st;
        for (int k = 0; k < K; k++) x->pred[c0 + k] = (double)x->s.p[k];
    }
    expand_uniq(t, x);
    return PC_OK;
}

pc_status pc_train_score_graph(const pc_model *m, pc_model_ws *ws, pc_graph *g, double *scores,
                               pc_error *err) {
    tgraph t;
    memset(&t, 0, sizeof t);
    t.g = g;
    t.c = pc_graph_num_configs(g);
    if (t.c < 1) return PC_OK;
    scratch x;
    memset(&x, 0, sizeof x);
    pc_status st = pc_model_gdata_build(m, g, &t.d, err);
    if (!st && m->opts.gst) {
        pc_gst_opts go = gst_opts_of(m);
        st = pc_gst_graph_build(m, &t.d, &go, 0, &t.gst, err);
    }
    if (!st) st = predict_all(m, ws, &t, &x, err);
    if (!st) memcpy(scores, x.pred, (size_t)t.c * sizeof(double));
    else pc_error_prefix(err, "%s: ", pc_graph_path(g));
    pc_model_gdata_free(&t.d);
    pc_gst_graph_free(t.gst);
    free(t.ufirst);
    free(t.umap);
    scratch_free(&x);
    return st;
}

typedef struct evsum {
    pc_metric_mean metric, tau, opa, sd[3];
    int graphs;
} evsum;

/* Sums of a pc_metric_mean over ranks. */
static void mean_pack(const pc_metric_mean *m, double *v) {
    v[0] = m->sum, v[1] = (double)m->count, v[2] = (double)m->nan_count;
}
static void mean_unpack(pc_metric_mean *m, const double *v) {
    m->sum = v[0], m->count = (uint64_t)v[1], m->nan_count = (uint64_t)v[2];
}

/* Every rank scored its own graphs; the means over all of them, on every rank. */
static void evsum_reduce(const pc_dist *d, evsum *e) {
    if (pc_dist_size(d) <= 1) return;
    pc_metric_mean *ms[6] = {&e->metric, &e->tau, &e->opa, &e->sd[0], &e->sd[1], &e->sd[2]};
    double v[19];
    for (int i = 0; i < 6; i++) mean_pack(ms[i], v + 3 * i);
    v[18] = e->graphs;
    pc_dist_sum_f64(d, v, 19);
    for (int i = 0; i < 6; i++) mean_unpack(ms[i], v + 3 * i);
    e->graphs = (int)v[18];
}

static pc_status evaluate(const pc_model *m, pc_model_ws *ws, tset *s, scratch *x, evsum *e,
                          pc_error *err) {
    memset(e, 0, sizeof *e);
    pc_metric_mean_init(&e->metric);
    pc_metric_mean_init(&e->tau);
    pc_metric_mean_init(&e->opa);
    for (int k = 0; k < 3; k++) pc_metric_mean_init(&e->sd[k]);
    static const size_t ks[3] = {1, 5, 10};
    for (size_t i = 0; i < s->n; i++) {
        tgraph *t = &s->v[i];
        if (t->c < 1) continue;
        pc_status st = predict_all(m, ws, t, x, err);
        if (st) return st;
        size_t c = (size_t)t->c;
        double tau, opa, v;
        if ((st = pc_kendall_tau_b(x->pred, t->rt, c, &tau, err)) ||
            (st = pc_ordered_pair_accuracy(x->pred, t->rt, c, &opa, err)))
            goto fail;
        pc_metric_mean_add(&e->tau, tau);
        pc_metric_mean_add(&e->opa, opa);
        if (m->opts.kind == PC_KIND_TILE) {
            if ((st = pc_tile_score(x->pred, t->rt, t->norm, c, &v, err))) goto fail;
            pc_metric_mean_add(&e->metric, v);
            for (int k = 0; k < 3; k++) {
                if ((st = pc_topk_slowdown(x->pred, t->rt, t->norm, c, ks[k], &v, err)))
                    goto fail;
                pc_metric_mean_add(&e->sd[k], v);
            }
        } else {
            pc_metric_mean_add(&e->metric, tau);
        }
        e->graphs++;
        continue;
    fail:
        pc_error_prefix(err, "%s: ", pc_graph_path(t->g));
        return st;
    }
    return PC_OK;
}

/* ---- preprocessing ------------------------------------------------------ */

/* Encoded rows of in (rows, din) into *buf (grown), or in itself without encodings. */
static const float *encoded(const pc_encode_opts *eo, int node, pc_kind kind, const float *in,
                            int64_t rows, int din, int dout, float **buf, pc_status *st,
                            pc_error *err) {
    if (!eo->pad_minus1 && !eo->dim_encodings && !eo->layout_categories) return in;
    free(*buf);
    *buf = pc_malloc_array((uint64_t)(rows > 0 ? rows : 1) * (uint64_t)dout, sizeof(float));
    if (!*buf) {
        *st = pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        return NULL;
    }
    *st = node ? pc_encode_node(eo, in, rows, din, *buf, err)
               : pc_encode_configs(eo, kind, in, rows, din, *buf, err);
    return *st ? NULL : *buf;
}

/* Statistics of every rank's graphs: sums add, minima and maxima combine. */
static void prep_acc_reduce(const pc_dist *d, pc_prep_acc *a) {
    if (pc_dist_size(d) <= 1) return;
    size_t n = (size_t)a->dim;
    double rows = (double)a->rows;
    pc_dist_sum_f64(d, &rows, 1);
    a->rows = (int64_t)rows;
    pc_dist_sum_f64(d, a->s1, n);
    pc_dist_sum_f64(d, a->s2, n);
    pc_dist_sum_f64(d, a->l1, n);
    pc_dist_sum_f64(d, a->l2, n);
    pc_dist_max_f64(d, a->max, n);
    pc_dist_max_f64(d, a->maxabs, n);
    for (size_t i = 0; i < n; i++) a->min[i] = -a->min[i];
    pc_dist_max_f64(d, a->min, n);
    for (size_t i = 0; i < n; i++) a->min[i] = -a->min[i];
}

static pc_status fit_prep(tset *s, pc_kind kind, unsigned encode, const pc_dist *dist,
                          pc_prep *np, pc_prep *cp, pc_error *err) {
    pc_prep_acc an = {0}, ac = {0};
    pc_encode_opts eo = pc_encode_opts_none();
    int cdim = kind == PC_KIND_TILE ? PC_TILE_CONFIG_DIM : PC_LAYOUT_CONFIG_DIM;
    pc_status st = pc_encode_opts_from_bits(encode, &eo, err);
    int nw = pc_encode_node_width(&eo, PC_NODE_FEAT_DIM);
    int cw = pc_encode_config_width(&eo, kind, cdim);
    if (!st) st = pc_prep_acc_init(&an, nw, PC_PREP_LOG_THRESHOLD, err);
    if (!st) st = pc_prep_acc_init(&ac, cw, PC_PREP_LOG_THRESHOLD, err);
    float *buf = NULL, *ebuf = NULL;
    for (size_t i = 0; i < s->n && !st; i++) {
        tgraph *t = &s->v[i];
        if (pc_graph_node_feat_dim(t->g) != PC_NODE_FEAT_DIM ||
            pc_graph_config_dim(t->g) != cdim) {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: feature widths differ from %d / %d",
                         pc_graph_path(t->g), PC_NODE_FEAT_DIM, cdim);
            break;
        }
        int64_t n = pc_graph_num_nodes(t->g);
        const float *x = encoded(&eo, 1, kind, pc_graph_node_feat(t->g), n, PC_NODE_FEAT_DIM,
                                 nw, &ebuf, &st, err);
        if (!x) break;
        pc_prep_acc_add(&an, x, n);
        if (kind == PC_KIND_TILE) {
            x = encoded(&eo, 0, kind, pc_graph_config_feat(t->g), t->c, cdim, cw, &ebuf, &st,
                        err);
            if (!x) break;
            pc_prep_acc_add(&ac, x, t->c);
        } else {
            int64_t nc = pc_graph_num_config_nodes(t->g);
            int64_t use = t->c < 256 ? t->c : 256; /* the first configs are enough */
            if (nc < 1 || use < 1) continue;
            free(buf);
            buf = malloc((size_t)(use * nc * cdim) * sizeof(float));
            if (!buf) {
                st = pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
                break;
            }
            if ((st = pc_graph_config_feat_rows(t->g, 0, use, buf, err))) break;
            x = encoded(&eo, 0, kind, buf, use * nc, cdim, cw, &ebuf, &st, err);
            if (!x) break;
            pc_prep_acc_add(&ac, x, use * nc);
        }
    }
    free(buf);
    free(ebuf);
    if (pc_dist_any(dist, st != PC_OK)) {
        if (!st) st = pc_fail(err, PC_ERR_INVALID, "train: another rank failed to read its data");
    } else {
        prep_acc_reduce(dist, &an);
        prep_acc_reduce(dist, &ac);
    }
    if (!st) st = pc_prep_acc_finish(&an, np, err);
    if (!st) st = pc_prep_acc_finish(&ac, cp, err);
    if (!st && (np->out_dim < 1 || cp->out_dim < 1))
        st = pc_fail(err, PC_ERR_INVALID, "train: every node or config feature is constant "
                     "on the train split");
    pc_prep_acc_free(&an);
    pc_prep_acc_free(&ac);
    return st;
}

/* ---- training ------------------------------------------------------------ */

static void logf_(pc_train_log_fn log, void *user, const char *fmt, ...) PC_PRINTF(3, 4);
static void logf_(pc_train_log_fn log, void *user, const char *fmt, ...) {
    if (!log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log(user, line);
}

static int name_in(const char *s, const char *const *names, int n, int dflt) {
    if (!s) return dflt;
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Parses "listmle:1,mse:0.02" into weights; NULL keeps the collection default. */
static pc_status parse_loss(const char *spec, pc_kind kind, pc_loss_cfg *lc, char *desc,
                            size_t dn, pc_error *err) {
    *lc = pc_loss_cfg_default();
    lc->hinge_margin = 0.1f;
    lc->hinge_temperature = 1.0f;
    if (kind == PC_KIND_LAYOUT) lc->listmle_temperature = 1.0f;
    if (!spec) spec = kind == PC_KIND_TILE ? "listmle:1,mse:0.02" : "hinge:1";
    lc->w_listmle = lc->w_hinge = lc->w_mse = 0;
    char buf[256];
    if (strlen(spec) >= sizeof buf) return pc_fail(err, PC_ERR_ARG, "train: --loss is too long");
    strcpy(buf, spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':'), *end = NULL;
        double w = 1.0;
        if (colon) {
            *colon = 0;
            w = strtod(colon + 1, &end);
            if (end == colon + 1 || *end || !isfinite(w) || w < 0)
                return pc_fail(err, PC_ERR_ARG, "train: --loss term '%s': weight '%s' is not a "
                               "number >= 0", t, colon + 1);
        }
        if (!strcmp(t, "listmle")) lc->w_listmle = (float)w;
        else if (!strcmp(t, "hinge")) lc->w_hinge = (float)w;
        else if (!strcmp(t, "mse")) lc->w_mse = (float)w;
        else
            return pc_fail(err, PC_ERR_ARG, "train: --loss term '%s': expected listmle, hinge "
                           "or mse", t);
    }
    if (!(lc->w_listmle + lc->w_hinge + lc->w_mse > 0))
        return pc_fail(err, PC_ERR_ARG, "train: --loss '%s' has no positive weight", spec);
    snprintf(desc, dn, "listmle(T=%g):%g,hinge(margin=%g,T=%g):%g,mse:%g",
             (double)lc->listmle_temperature, (double)lc->w_listmle, (double)lc->hinge_margin,
             (double)lc->hinge_temperature, (double)lc->w_hinge, (double)lc->w_mse);
    return PC_OK;
}

/* Everything a run needs; the mutable part (rng .. lcount) is the resumable state. */
typedef struct trainer {
    pc_train_opts o;
    int coll;
    pc_kind kind;
    int fast; /* sampling "fast" */
    pc_train_log_fn log;
    pc_train_progress_fn progress;
    void *user;
    pc_loss_cfg lc;
    char loss_desc[160];
    pc_adam_cfg ac;
    tset tr, va;
    pc_model *m;
    pc_model_ws *ws;
    pc_gst_ctx *gx;
    pc_gst_opts gsto;
    scratch x;
    float *best;
    int64_t *perm, *order;
    char state_path[4096];
    /* data parallelism: W ranks (this is R), B graphs per rank and step, G = W * B
       lanes; order holds every lane's permutation (lane_off), local_of maps a
       train graph's index to this rank's copy (-1: another rank's) */
    const pc_dist *dist;
    int W, R, B;
    size_t G, ntrain, nvalid, S;
    size_t *lane_off;
    int64_t *local_of;
    /* state */
    uint64_t rng;
    long step, total, warmup;
    int epoch, best_epoch, since, epochs_done;
    size_t oi; /* next position in order[] within the epoch */
    double best_metric, first_loss, last_loss, lsum, last_valid;
    size_t lcount;
    /* this run */
    double t0, t_steps0, last_epoch_s, last_valid_s, last_progress;
    long steps_run;
    size_t samples_run;
} trainer;

/* Graphs in lane l (global indices l, l + G, ...). */
static size_t lane_len(const trainer *t, size_t l) {
    return t->ntrain > l ? (t->ntrain - l + t->G - 1) / t->G : 0;
}

static void trainer_free(trainer *t) {
    free(t->best);
    free(t->order);
    free(t->lane_off);
    free(t->local_of);
    free(t->perm);
    scratch_free(&t->x);
    pc_model_ws_free(t->ws);
    pc_gst_ctx_free(t->gx);
    pc_model_free(t->m);
    tset_free(&t->tr);
    tset_free(&t->va);
}

static pc_status check_opts(trainer *t, pc_error *err) {
    pc_train_opts *o = &t->o;
    if (!o->data_dir || !o->collection || !o->out_path)
        return pc_fail(err, PC_ERR_ARG, "train: data dir, collection and output are required");
    if ((t->coll = pc_collection_find(o->collection)) < 0)
        return pc_fail(err, PC_ERR_ARG, "train: unknown collection '%s'", o->collection);
    t->kind = pc_collection_kind(t->coll);
    if (o->gst && (o->seg_size < 0 || o->gst_train_segs < 0 || o->gst_finetune < 0 ||
                   o->gst_keep > 1 || (o->gst_keep < 0 && o->gst_keep != -1)))
        return pc_fail(err, PC_ERR_ARG, "train: bad GST option value");
    if (o->batch_graphs < 0) return pc_fail(err, PC_ERR_ARG, "train: --batch-graphs must be >= 1");
    if (o->epochs < 1 || o->patience < 1 || o->hidden < 1 || o->layers < 0 || !(o->lr > 0) ||
        o->configs < 0 || o->time_budget < 0 || !(o->clip > 0) || o->weight_decay < 0 ||
        o->emb_dim < 0 || !(o->dropout >= 0 && o->dropout < 1) || o->stop_after_steps < 0)
        return pc_fail(err, PC_ERR_ARG, "train: bad option value");
    if (o->configs == 0) o->configs = t->kind == PC_KIND_TILE ? 32 : 16;
    if (o->configs < 2) return pc_fail(err, PC_ERR_ARG, "train: --configs must be at least 2");
    static const char *const samp[] = {"uniform", "fast"};
    int s = name_in(o->sampling, samp, 2, 0);
    if (s < 0)
        return pc_fail(err, PC_ERR_ARG, "train: --sampling expects uniform or fast, got '%s'",
                       o->sampling);
    t->fast = s == 1;
    if (snprintf(t->state_path, sizeof t->state_path, "%s.state", o->out_path) >=
        (int)sizeof t->state_path)
        return pc_fail(err, PC_ERR_ARG, "train: output path is too long");
    return parse_loss(o->loss, t->kind, &t->lc, t->loss_desc, sizeof t->loss_desc, err);
}

static pc_status model_opts(const trainer *t, pc_model_opts *mo, pc_error *err) {
    static const char *const pools[] = {"mean", "max", "sum", "meanmax"};
    static const char *const joins[] = {"early", "late"};
    static const char *const acts[] = {"leaky_relu", "relu", "gelu"};
    const pc_train_opts *o = &t->o;
    *mo = pc_model_opts_default(t->kind);
    if (t->kind == PC_KIND_LAYOUT) mo->join = PC_TRAIN_DEFAULT_LAYOUT_JOIN;
    int pool = name_in(o->pool, pools, 4, (int)mo->pool);
    int join = name_in(o->join, joins, 2, (int)mo->join);
    int act = name_in(o->act, acts, 3, (int)mo->act);
    if (pool < 0) return pc_fail(err, PC_ERR_ARG, "train: --pool expects mean, max, sum or "
                                 "meanmax, got '%s'", o->pool);
    if (join < 0) return pc_fail(err, PC_ERR_ARG, "train: --join expects early or late, got "
                                 "'%s'", o->join);
    if (act < 0) return pc_fail(err, PC_ERR_ARG, "train: --act expects leaky_relu, relu or "
                                "gelu, got '%s'", o->act);
    mo->hidden = o->hidden;
    mo->layers = o->layers;
    mo->pool = (pc_pool_kind)pool;
    mo->join = (pc_join)join;
    mo->act = (pc_act)act;
    if (o->emb_dim > 0) mo->emb_dim = o->emb_dim;
    /* layout prunes to the 1-hop neighbourhood by default (bench/RESULTS.md, issue #4:
       ~4x cheaper epochs, no quality change measured); 0 = the whole graph */
    int hops = o->prune_hops >= 0 ? o->prune_hops
                                  : t->kind == PC_KIND_LAYOUT ? PC_TRAIN_DEFAULT_PRUNE_HOPS : 0;
    if (hops > 0) {
        if (t->kind != PC_KIND_LAYOUT)
            return pc_fail(err, PC_ERR_ARG, "train: --prune-hops applies to layout collections "
                           "(tile graphs have no configurable nodes)");
        mo->prune_hops = hops;
        mo->collapse_chains = o->collapse_chains ? 1 : 0;
    }
    /* layout encodes all by default (bench/RESULTS.md, issue #4: the best layout variant in
       the ablation, and better than the twin with the same encodings); "none" turns it off */
    const char *enc = o->encode ? o->encode
                                : t->kind == PC_KIND_LAYOUT ? PC_TRAIN_DEFAULT_LAYOUT_ENCODE : NULL;
    if (enc) {
        pc_encode_opts eo = pc_encode_opts_none();
        char buf[128];
        snprintf(buf, sizeof buf, "%s", enc);
        char *save = NULL;
        for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            if (!strcmp(w, "all")) eo = pc_encode_opts_all();
            else if (!strcmp(w, "none")) eo = pc_encode_opts_none();
            else if (!strcmp(w, "pad")) eo.pad_minus1 = 1;
            else if (!strcmp(w, "dims")) eo.dim_encodings = 1;
            else if (!strcmp(w, "layout")) eo.layout_categories = 1;
            else return pc_fail(err, PC_ERR_ARG, "train: --encode expects a comma list of pad, "
                                "dims, layout, all, none; got '%s'", w);
        }
        mo->encode = pc_encode_opts_bits(&eo);
    }
    if (o->gst) {
        int sm = o->seg_method ? pc_gst_method_find(o->seg_method) : PC_SEG_CONTIGUOUS;
        if (sm < 0) return pc_fail(err, PC_ERR_ARG, "train: --segments expects contiguous, "
                                   "splits or metis, got '%s'", o->seg_method);
        if (t->kind != PC_KIND_LAYOUT)
            return pc_fail(err, PC_ERR_ARG, "train: --gst applies to layout collections (tile "
                           "graphs are small)");
        mo->gst = 1;
        mo->seg_method = sm;
        mo->seg_size = o->seg_size > 0 ? o->seg_size : 1000;
    }
    if (o->layernorm >= 0) mo->layernorm = o->layernorm ? 1 : 0;
    mo->dropout = o->dropout;
    if (o->attn_heads > 0) {
        mo->attn_heads = o->attn_heads;
        mo->attn_group = o->configs; /* training groups: the configs of one step */
    }
    return PC_OK;
}

/* The JSON of the resumable scalars, and the options that must not change. */
static char *state_json(const trainer *t) {
    const pc_train_opts *o = &t->o;
    char *s = malloc(2048);
    if (!s) return NULL;
    snprintf(s, 2048,
             "{\"rng\":\"%llu\",\"step\":%ld,\"epoch\":%d,\"oi\":%zu,\"best_epoch\":%d,"
             "\"since\":%d,\"best_metric\":%.17g,\"first_loss\":%.17g,\"lsum\":%.17g,"
             "\"lcount\":%zu,\"last_valid\":%.17g,"
             "\"fixed\":\"%s|%s|%llu|%d|%.9g|%.9g|%.9g|%s|%s|%zu|%zu|%zu\"}",
             (unsigned long long)t->rng, t->step, t->epoch, t->oi, t->best_epoch, t->since,
             isfinite(t->best_metric) ? t->best_metric : -1e308,
             isfinite(t->first_loss) ? t->first_loss : -1.0, t->lsum, t->lcount,
             isfinite(t->last_valid) ? t->last_valid : -1e308, o->collection, o->data_dir,
             (unsigned long long)o->seed, o->configs, (double)o->lr, (double)o->weight_decay,
             (double)o->clip, t->loss_desc, t->fast ? "fast" : "uniform", t->ntrain, t->nvalid, t->G);
    return s;
}

static pc_ckpt_info ckpt_info(const trainer *t) {
    pc_ckpt_info info;
    memset(&info, 0, sizeof info);
    info.collection = t->coll;
    info.train = &t->o;
    info.configs = t->o.configs;
    info.best_epoch = t->best_epoch;
    info.epochs_run = t->epochs_done;
    info.best_metric = t->best_metric;
    info.loss = t->loss_desc;
    info.sampling = t->fast ? "fast" : "uniform";
    return info;
}

static pc_status save_state(trainer *t, pc_error *err) {
    if (t->R != 0) return PC_OK; /* rank 0 writes */
    pc_ckpt_info info = ckpt_info(t);
    char *js = state_json(t);
    if (!js) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    info.adam_m = t->m->params.m;
    info.adam_v = t->m->params.v;
    info.best = t->best;
    info.order = t->order;
    info.norder = (int64_t)t->ntrain;
    info.state_json = js;
    pc_status st = pc_ckpt_save(t->m, &info, t->state_path, err);
    free(js);
    return st;
}

/* Writes the best parameters as the model, keeping the current ones. */
static pc_status save_best(trainer *t, pc_error *err) {
    if (t->R != 0) return PC_OK; /* rank 0 writes */
    size_t n = t->m->params.numel;
    float *cur = malloc(n * sizeof(float));
    if (!cur) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    memcpy(cur, t->m->params.data, n * sizeof(float));
    memcpy(t->m->params.data, t->best, n * sizeof(float));
    pc_ckpt_info info = ckpt_info(t);
    pc_status st = pc_ckpt_save(t->m, &info, t->o.out_path, err);
    memcpy(t->m->params.data, cur, n * sizeof(float));
    free(cur);
    return st;
}

static int jnum(const cJSON *o, const char *k, double *v) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(j)) return -1;
    *v = j->valuedouble;
    return 0;
}

/* Restores the model and the state from out_path.state (after the data is loaded). */
static pc_status resume_from_state(trainer *t, pc_error *err) {
    int coll = -1;
    FILE *f = fopen(t->state_path, "rb");
    if (!f)
        return pc_fail(err, PC_ERR_NOTFOUND, "train --resume: no state to resume from: %s "
                       "cannot be opened (it is written after each epoch and when training "
                       "stops early, and removed when training completes)", t->state_path);
    fclose(f);
    pc_status st = pc_ckpt_load(t->state_path, &t->m, &coll, err);
    if (st) return st;
    pc_model_opts mo;
    if ((st = model_opts(t, &mo, err))) return st;
    const pc_model_opts *a = &t->m->opts;
    if (coll != t->coll || a->hidden != mo.hidden || a->layers != mo.layers ||
        a->emb_dim != mo.emb_dim || a->pool != mo.pool || a->join != mo.join ||
        a->act != mo.act || a->layernorm != mo.layernorm || a->dropout != mo.dropout)
        return pc_fail(err, PC_ERR_ARG, "train --resume: %s was made for another collection or "
                       "architecture than these options", t->state_path);
    size_t n = t->m->params.numel;
    t->best = malloc(n * sizeof(float));
    t->order = malloc((t->ntrain ? t->ntrain : 1) * sizeof *t->order);
    if (!t->best || !t->order) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    char *js = NULL;
    if ((st = pc_ckpt_load_state(t->state_path, t->m, t->best, t->order, (int64_t)t->ntrain, &js,
                                 err)))
        return st;
    cJSON *root = cJSON_Parse(js);
    char *mine = state_json(t);
    cJSON *me = mine ? cJSON_Parse(mine) : NULL;
    const cJSON *rng = root ? cJSON_GetObjectItemCaseSensitive(root, "rng") : NULL;
    const cJSON *fx = root ? cJSON_GetObjectItemCaseSensitive(root, "fixed") : NULL;
    const cJSON *fx2 = me ? cJSON_GetObjectItemCaseSensitive(me, "fixed") : NULL;
    double v[10];
    static const char *keys[10] = {"step", "epoch", "oi", "best_epoch", "since", "best_metric",
                                   "first_loss", "lsum", "lcount", "last_valid"};
    int bad = !root || !cJSON_IsString(rng) || !cJSON_IsString(fx) || !cJSON_IsString(fx2);
    for (int i = 0; i < 10 && !bad; i++) bad = jnum(root, keys[i], &v[i]);
    if (bad) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: malformed training state", t->state_path);
    } else if (strcmp(fx->valuestring, fx2->valuestring)) {
        st = pc_fail(err, PC_ERR_ARG, "train --resume: the run in %s used other data or "
                     "options (collection|data|seed|configs|lr|wd|clip|loss|sampling|train "
                     "graphs|valid graphs): '%s', now '%s'", t->state_path, fx->valuestring,
                     fx2->valuestring);
    } else {
        t->rng = strtoull(rng->valuestring, NULL, 10);
        t->step = (long)v[0];
        t->epoch = (int)v[1];
        t->oi = (size_t)v[2];
        t->best_epoch = (int)v[3];
        t->since = (int)v[4];
        t->best_metric = v[5] <= -1e307 ? -INFINITY : v[5];
        t->first_loss = v[6] < 0 ? NAN : v[6];
        t->lsum = v[7];
        t->lcount = (size_t)v[8];
        t->last_valid = v[9] <= -1e307 ? NAN : v[9];
        // a state written at an epoch's end continues with the next epoch
        t->epochs_done = t->oi >= t->S ? t->epoch : t->epoch - 1;
        if (t->oi >= t->S) t->epoch++;
        for (size_t i = 0; i < t->ntrain && !st; i++)
            if (t->order[i] < 0 || (size_t)t->order[i] >= t->ntrain || t->oi > t->S)
                st = pc_fail(err, PC_ERR_FORMAT, "%s: malformed training state", t->state_path);
    }
    cJSON_Delete(root);
    cJSON_Delete(me);
    free(mine);
    free(js);
    return st;
}

/* Stable merge sort of ids by y (ascending): ids[] holds 0..n-1 on entry. */
static void argsort_rec(int64_t *ids, int64_t *tmp, size_t n, const double *y) {
    if (n < 2) return;
    size_t h = n / 2;
    argsort_rec(ids, tmp, h, y);
    argsort_rec(ids + h, tmp, n - h, y);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = y[ids[j]] < y[ids[i]] ? ids[j++] : ids[i++];
    while (i < h) tmp[k++] = ids[i++];
    while (j < n) tmp[k++] = ids[j++];
    memcpy(ids, tmp, n * sizeof *ids);
}

static pc_status build_by_speed(tset *s, pc_error *err) {
    for (size_t i = 0; i < s->n; i++) {
        tgraph *g = &s->v[i];
        size_t c = (size_t)(g->c > 0 ? g->c : 1);
        int64_t *tmp = malloc(c * sizeof *tmp);
        g->by_speed = malloc(c * sizeof *g->by_speed);
        if (!tmp || !g->by_speed) {
            free(tmp);
            return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        }
        for (int64_t k = 0; k < g->ncand; k++) g->by_speed[k] = g->cand ? g->cand[k] : k;
        argsort_rec(g->by_speed, tmp, (size_t)g->ncand, g->y);
        free(tmp);
    }
    return PC_OK;
}

/*
 * --dedup: identical configurations of a train graph become one candidate
 * (the group's first index) whose target is the group's fastest measurement
 * (src/dataset/config_pack.h: re-measuring a fixed program only adds noise
 * and time). Validation still scores every config.
 */
static pc_status dedup_train(trainer *t, pc_error *err) {
    int64_t total = 0, kept = 0;
    for (size_t i = 0; i < t->tr.n; i++) {
        tgraph *g = &t->tr.v[i];
        total += g->c;
        if (!t->o.dedup || g->c < 2) {
            kept += g->c;
            continue;
        }
        pc_dedup d;
        pc_status st = pc_graph_config_dedup(g->g, PC_DEDUP_MIN, &d, err);
        if (st) return st;
        kept += d.n_out;
        if (d.n_out < g->c) {
            g->cand = malloc((size_t)d.n_out * sizeof *g->cand);
            if (!g->cand) {
                pc_dedup_free(&d);
                return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
            }
            for (int64_t k = 0; k < d.n_out; k++) {
                int64_t f = d.first[k], p = d.pick[k];
                g->cand[k] = f;
                g->y[f] = g->norm && g->norm[p] > 0 ? g->rt[p] / g->norm[p] : g->rt[p];
            }
            g->ncand = d.n_out;
        }
        pc_dedup_free(&d);
    }
    if (t->o.dedup)
        logf_(t->log, t->user, "dedup: %lld of %lld train configs are distinct",
              (long long)kept, (long long)total);
    return PC_OK;
}

/* The GNN runs once per graph (late join), not once per config. */
static int shared_gnn_of(const pc_model_opts *mo) { return mo->join == PC_JOIN_LATE; }

/* MemAvailable from /proc/meminfo in bytes, 0 if unknown. */
static double mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024.0;
}

/* Resident bytes of this process (/proc/self/statm), 0 if unknown. */
static double mem_resident(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    double size = 0, res = 0;
    int ok = fscanf(f, "%lf %lf", &size, &res) == 2;
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return ok && page > 0 ? res * (double)page : 0;
}

/* The arrays of a loaded graph (node_config_feat only when resident). */
static double graph_bytes(const pc_graph *g) {
    double n = (double)pc_graph_num_nodes(g), e = (double)pc_graph_num_edges(g);
    double c = (double)pc_graph_num_configs(g), nc = (double)pc_graph_num_config_nodes(g);
    int64_t ns = 0;
    pc_graph_node_splits(g, &ns);
    double b = n * (double)pc_graph_node_feat_dim(g) * 4 + n * 4 + e * 8 + c * 8 + (double)ns * 8;
    if (pc_graph_kind(g) == PC_KIND_TILE) {
        b += c * (double)pc_graph_config_dim(g) * 4;
        if (pc_graph_runtime_normalizers(g)) b += c * 8;
    } else {
        b += nc * 4;
        b += pc_graph_node_config_feat(g) ? c * nc * PC_LAYOUT_CONFIG_DIM * 4
                                          : 64.0 * 1048576.0; /* streamed in chunks */
    }
    return b;
}

/* What tset_load and tset_build add per graph: targets, model inputs, GST segments + table. */
static double inputs_bytes(const pc_model *m, const tgraph *g) {
    const pc_model_gdata *d = &g->d;
    double n = d->g.n, c = (double)g->c, e = (double)d->m;
    double b = 4 * c * 8;                                       /* rt, y, norm, by_speed */
    b += n * m->feat_dim * 4 + (2 * (n + 1) + 2 * e) * 4;       /* x, CSR */
    if (d->own_op) b += n * 4 + d->g.nc * 4.0 + e * 8 + d->nsplits * 8.0; /* pruned copies */
    if (g->gst) {
        int S = pc_gst_graph_segments(g->gst);
        double R = pc_model_readout_width(m);
        b += n * m->feat_dim * 4 + n * 4 * 2 + (2.0 * (n + S) + 2 * e) * 4; /* segment copies */
        b += c * S * (R * 4 + 1) + S * (R * 4 + 1);             /* table (fills as it is used) */
    }
    return b;
}

/* Scratch of gather_cfg for K configs of g: raw and preprocessed config rows. */
static double cfg_scratch_bytes(const pc_model *m, const pc_graph *g, int64_t K) {
    if (m->opts.kind == PC_KIND_TILE)
        return (double)K * ((double)pc_graph_config_dim(g) + m->cfg_dim) * 4;
    return (double)K * (double)pc_graph_num_config_nodes(g) * (PC_LAYOUT_CONFIG_DIM + m->cfg_dim) * 4;
}

/* The process itself: code, libraries, OpenBLAS and OpenMP thread buffers (measured). */
#define PROCESS_BASE_BYTES (16.0 * 1048576.0)

/*
 * Workspaces grow (fgrow, by 1.5x at least) as graphs of other sizes come,
 * freeing the old buffer. glibc serves buffers under its mmap threshold
 * (at most 32 MiB) from the heap, which keeps freed copies resident: with
 * graphs (or GST segments) of several sizes, measured peaks were 1.1-1.3x the
 * final buffers' sizes. Larger buffers are mmap'ed and returned on free:
 * measured 1-2% above (bench/RESULTS.md, "Memory estimate").
 */
#define HEAP_SLACK 1.35
#define MMAP_SLACK 1.05
#define MMAP_THRESHOLD_MAX (32.0 * 1048576.0)

/* Slack for the full-graph workspace of graph g: by the size of one (S*n, H) buffer. */
static double heap_slack(const trainer *t, const tgraph *g) {
    if (!g) return HEAP_SLACK;
    double S = shared_gnn_of(&t->m->opts) ? 1.0 : (double)t->o.configs;
    double buf = S * (double)g->d.g.n * t->m->opts.hidden * sizeof(float);
    return buf < MMAP_THRESHOLD_MAX ? HEAP_SLACK : MMAP_SLACK;
}

typedef struct mem_est {
    double data, inputs, act, total;
    const tgraph *big; /* the train graph whose activations dominate */
} mem_est;

/*
 * Peak resident memory of training, up front: the loaded graphs of both
 * splits, their model inputs (and GST segments and tables), the largest
 * training pass (forward + backward of K configs of the largest graph, or
 * of the largest segment under GST), the validation pass in the same
 * workspace (chunks of configs, forward only) and the process itself.
 */
static mem_est estimate_memory(const trainer *t) {
    mem_est e;
    memset(&e, 0, sizeof e);
    const pc_model *m = t->m;
    const tset *sets[2] = {&t->tr, &t->va};
    double scr = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sets[k]->n; i++) {
            const tgraph *g = &sets[k]->v[i];
            e.data += graph_bytes(g->g);
            e.inputs += inputs_bytes(m, g);
        }
    int64_t K = t->o.configs;
    double fwd_train = 0, bwd_train = 0, fwd_valid = 0;
    if (!m->opts.gst) {
        for (size_t i = 0; i < t->tr.n; i++) {
            const tgraph *g = &t->tr.v[i];
            double fb = pc_model_pass_bytes(m, g->d.g.n, g->d.g.nc, K, 1);
            double f = pc_model_pass_bytes(m, g->d.g.n, g->d.g.nc, K, 0);
            if (fb > fwd_train + bwd_train) fwd_train = f, bwd_train = fb - f, e.big = g;
            double sc = cfg_scratch_bytes(m, g->g, K);
            scr = sc > scr ? sc : scr;
        }
        for (size_t i = 0; i < t->va.n; i++) {
            const tgraph *g = &t->va.v[i];
            int64_t ch = infer_chunk(m, g);
            if (ch > g->c) ch = g->c > 0 ? g->c : 1;
            double f = pc_model_pass_bytes(m, g->d.g.n, g->d.g.nc, ch, 0);
            fwd_valid = f > fwd_valid ? f : fwd_valid;
            double sc = cfg_scratch_bytes(m, g->g, ch);
            scr = sc > scr ? sc : scr;
        }
        e.act = (fwd_train > fwd_valid ? fwd_train : fwd_valid) + bwd_train;
        e.act *= heap_slack(t, e.big);
    } else {
        /* train_segs workspaces with backward, the fresh-segment workspace for K configs,
           and inference's own context (chunks of 64 configs) */
        int slots = t->o.gst_train_segs > 0 ? t->o.gst_train_segs : 1;
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < sets[k]->n; i++) {
                const tgraph *g = &sets[k]->v[i];
                int S = pc_gst_graph_segments(g->gst), sn = 0, snc = 0;
                for (int s = 0; s < S; s++) {
                    int a, b;
                    pc_gst_segment_size(g->gst, s, &a, &b);
                    sn = a > sn ? a : sn;
                    snc = b > snc ? b : snc;
                }
                double tr = k == 0 ? slots * pc_model_pass_bytes(m, sn, snc, K, 1) +
                                         pc_model_pass_bytes(m, sn, snc, K, 0) : 0;
                double inf = pc_model_pass_bytes(m, sn, snc, chunk_of(m, 64), 0);
                if (tr > fwd_train) fwd_train = tr, e.big = g;
                fwd_valid = inf > fwd_valid ? inf : fwd_valid;
                double sc = cfg_scratch_bytes(m, g->g, k == 0 ? K : 64) * 2;
                scr = sc > scr ? sc : scr;
            }
        e.act = HEAP_SLACK * (fwd_train + fwd_valid); /* segment buffers are small */
    }
    /* parameters, gradients, AdamW moments and the best copy */
    e.act += scr + (double)m->params.numel * 4 * 5;
    e.total = e.data + e.inputs + e.act + PROCESS_BASE_BYTES;
    return e;
}

/* "1.23 GiB" or "345.6 MiB". */
static void fmt_bytes(double b, char *buf, size_t n) {
    if (b >= 1073741824.0) snprintf(buf, n, "%.2f GiB", b / 1073741824.0);
    else snprintf(buf, n, "%.1f MiB", b / 1048576.0);
}

/*
 * Logs the estimate and refuses (before any training allocation) when it is
 * above --max-memory, or above what the machine has available (free memory
 * plus what this process holds already), instead of meeting the OOM killer.
 */
static pc_status check_memory(trainer *t, pc_error *err) {
    mem_est e = estimate_memory(t);
    char tot[32], dat[32], inp[32], act[32], lim[32];
    fmt_bytes(e.total, tot, sizeof tot);
    fmt_bytes(e.data, dat, sizeof dat);
    fmt_bytes(e.inputs, inp, sizeof inp);
    fmt_bytes(e.act, act, sizeof act);
    logf_(t->log, t->user, "memory: about %s at the peak (data %s, model inputs %s, "
          "activations %s)", tot, dat, inp, act);
    double limit = t->o.max_memory_gib * 1073741824.0;
    if (!(t->o.max_memory_gib > 0)) {
        double avail = mem_available();
        limit = avail > 0 ? avail + mem_resident() : 0;
    }
    if (!(limit > 0) || e.total <= limit) return PC_OK;
    fmt_bytes(limit, lim, sizeof lim);
    const pc_model_opts *mo = &t->m->opts;
    const char *big = e.big ? pc_graph_path(e.big->g) : "";
    long long nb = e.big ? (long long)e.big->d.g.n : 0;
    const char *cap = t->o.max_memory_gib > 0 ? "allowed by --max-memory" : "available";
    if (mo->gst)
        return pc_fail(err, PC_ERR_NOMEM, "train: Graph Segment Training needs about %s (data "
                       "%s, model inputs and embedding tables %s, activations %s; largest graph "
                       "%s, %lld nodes), more than the %s %s; use a smaller --seg-size, fewer "
                       "--configs or a smaller --hidden", tot, dat, inp, act, big, nb, lim, cap);
    int S = shared_gnn_of(mo) ? 1 : t->o.configs;
    return pc_fail(err, PC_ERR_NOMEM, "train: full-graph training needs about %s (data %s, "
                   "model inputs %s, activations %s for %s: %lld nodes x %d configs x hidden %d, "
                   "%d layers), more than the %s %s; use --gst (Graph Segment Training), "
                   "--prune-hops, fewer --configs or a smaller --hidden", tot, dat, inp, act,
                   big, nb, S, mo->hidden, mo->layers, lim, cap);
}

static pc_status setup(trainer *t, pc_error *err) {
    pc_dataset *ds = NULL;
    pc_status st = pc_dataset_open(t->o.data_dir, &ds, err);
    if (st) return st;
    int s_train = pc_split_find("train"), s_valid = pc_split_find("valid");
    /* lanes: graph i belongs to lane i % G; this rank trains lanes [R*B, R*B + B)
       and validates graphs i % W == R (multi-process runs; one process: all) */
    t->ntrain = pc_dataset_num_files(ds, t->coll, s_train);
    t->nvalid = pc_dataset_num_files(ds, t->coll, s_valid);
    if (!(st = tset_load(ds, t->coll, s_train, t->o.threads, t->G, (size_t)t->R * t->B,
                         (size_t)t->R * t->B + t->B, &t->tr, err)))
        st = tset_load(ds, t->coll, s_valid, t->o.threads, (size_t)t->W, (size_t)t->R,
                       (size_t)t->R + 1, &t->va, err);
    pc_dataset_free(ds);
    if (st) return st;
    if (t->ntrain == 0 || t->nvalid == 0)
        return pc_fail(err, PC_ERR_NOTFOUND, "train: %s has %zu train and %zu valid graphs "
                       "under %s; both splits are needed", t->o.collection, t->ntrain,
                       t->nvalid, t->o.data_dir);
    t->lane_off = malloc((t->G + 1) * sizeof *t->lane_off);
    t->local_of = malloc(t->ntrain * sizeof *t->local_of);
    if (!t->lane_off || !t->local_of) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    t->lane_off[0] = 0;
    for (size_t l = 0; l < t->G; l++) t->lane_off[l + 1] = t->lane_off[l] + lane_len(t, l);
    for (size_t i = 0; i < t->ntrain; i++) t->local_of[i] = -1;
    for (size_t i = 0; i < t->tr.n; i++) t->local_of[t->tr.v[i].gi] = (int64_t)i;
    t->S = lane_len(t, 0);
    t->rng = t->o.seed ^ 0x5eedf00dULL;
    t->epoch = 1;
    t->oi = t->S; /* no epoch started */
    t->best_metric = -INFINITY;
    t->first_loss = t->last_loss = t->last_valid = NAN;
    if (t->o.resume) {
        if ((st = resume_from_state(t, err))) return st;
    } else {
        pc_prep np = {0}, cp = {0};
        pc_model_opts mo;
        st = model_opts(t, &mo, err);
        if (!st) st = fit_prep(&t->tr, t->kind, mo.encode, t->dist, &np, &cp, err);
        if (!st) st = pc_model_new(&mo, np.out_dim, cp.out_dim, t->o.seed, &t->m, err);
        if (!st) st = pc_model_set_prep(t->m, &np, &cp, err);
        pc_prep_free(&np);
        pc_prep_free(&cp);
        if (st) return st;
        t->best = malloc(t->m->params.numel * sizeof(float));
        t->order = malloc(t->ntrain * sizeof *t->order);
        if (!t->best || !t->order) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    }
    if ((st = tset_build(t->m, &t->tr, 1, err)) || (st = tset_build(t->m, &t->va, 0, err)))
        return st;
    for (size_t i = 0; i < t->tr.n; i++) t->tr.v[i].ncand = t->tr.v[i].c;
    if ((st = check_memory(t, err))) return st;
    if (t->m->opts.gst && !(t->gx = pc_gst_ctx_new(t->o.gst_train_segs)))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    if ((st = dedup_train(t, err))) return st;
    if (t->fast && (st = build_by_speed(&t->tr, err))) return st;
    int64_t maxc = 1;
    for (size_t i = 0; i < t->tr.n; i++) maxc = t->tr.v[i].c > maxc ? t->tr.v[i].c : maxc;
    t->ws = pc_model_ws_new();
    t->perm = malloc((size_t)maxc * sizeof *t->perm);
    if (!t->ws || !t->perm || !scratch_ids(&t->x, (size_t)maxc + 1) ||
        !fgrow(&t->x.s, (size_t)t->o.configs) || !fgrow(&t->x.ds, (size_t)t->o.configs))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    t->gsto = gst_opts_of(t->m);
    if (t->o.gst_train_segs > 0) t->gsto.train_segs = t->o.gst_train_segs;
    if (t->o.gst_keep >= 0) t->gsto.keep = t->o.gst_keep;
    t->ac = pc_adam_cfg_default();
    t->ac.decoupled = 1;
    t->ac.weight_decay = t->o.weight_decay;
    t->total = (long)t->o.epochs * (long)t->S;
    t->warmup = t->total / 10 < (long)t->S ? t->total / 10 : (long)t->S;
    if (t->warmup < 1) t->warmup = 1;
    return PC_OK;
}

/* Swaps perm[k] with a uniform pick from perm[k .. hi) and records it as the k-th sample. */
static void pick(trainer *t, tgraph *g, int k, int64_t hi, uint64_t *rng) {
    int64_t j = k + (int64_t)rand_below(rng, (uint64_t)(hi - k));
    int64_t tmp = t->perm[k];
    t->perm[k] = t->perm[j];
    t->perm[j] = tmp;
    t->x.ids[k] = t->perm[k];
    t->x.yk[k] = g->y[t->perm[k]];
}

/* Chooses K distinct configs of g into x.ids / x.yk (see pc_train_opts.sampling). */
static int sample_configs(trainer *t, tgraph *g, uint64_t *rng) {
    int64_t n = g->ncand;
    int K = (int)(n < t->o.configs ? n : t->o.configs);
    if (!t->fast || n <= K) {
        for (int64_t k = 0; k < n; k++) t->perm[k] = g->cand ? g->cand[k] : k;
        for (int k = 0; k < K; k++) pick(t, g, k, n, rng);
        return K;
    }
    memcpy(t->perm, g->by_speed, (size_t)n * sizeof *t->perm);
    int64_t nf = n / 10 > K ? n / 10 : K;
    int kf = K / 2;
    for (int k = 0; k < kf; k++) pick(t, g, k, nf, rng);
    for (int k = kf; k < K; k++) pick(t, g, k, n, rng);
    return K;
}

/*
 * Loss of one graph and its gradient, ADDED to the arena's gradients.
 * head_only: GST's fine-tuning (every segment fresh, only the head learns).
 */
static pc_status graph_grad(trainer *t, tgraph *g, uint64_t *rng, int head_only, double *loss,
                            pc_error *err) {
    int K = sample_configs(t, g, rng);
    scratch *x = &t->x;
    pc_status st = gather_cfg(t->m, g, x->ids, K, x, err);
    uint64_t dseed = *rng ^ 0xd50u;
    if (!st && head_only)
        st = pc_gst_score(t->m, t->gx, g->gst, x->cfg.p, K, x->s.p, err);
    else if (!st && t->m->opts.gst)
        st = pc_gst_forward(t->m, t->gx, g->gst, x->ids, x->cfg.p, K, &t->gsto, rng, x->s.p, err);
    else if (!st)
        st = pc_model_forward(t->m, t->ws, &g->d.g, x->cfg.p, K,
                              t->m->opts.dropout > 0 ? &dseed : NULL, x->s.p, err);
    if (st) return st;
    memset(x->ds.p, 0, (size_t)K * sizeof(float));
    double L = pc_loss_combo(x->ds.p, x->s.p, x->yk, K, &t->lc, 1.0f, NULL);
    if (!isfinite(L))
        return pc_fail(err, PC_ERR_INVALID, "train: loss is not finite at epoch %d on %s",
                       t->epoch, pc_graph_path(g->g));
    if (head_only) st = pc_gst_head_backward(t->m, t->gx, x->ds.p, err);
    else if (t->m->opts.gst) st = pc_gst_backward(t->m, t->gx, g->gst, x->ds.p, err);
    else st = pc_model_backward(t->m, t->ws, x->ds.p, err);
    t->samples_run += (size_t)K;
    *loss = L;
    return st;
}


/* The RNG of one graph of a step: a function of (seed, epoch, lane, step) only,
   so any split of the lanes over ranks samples the same configs. */
static uint64_t step_rng(const trainer *t, size_t lane, size_t s) {
    uint64_t r = t->o.seed ^ 0x5a3c0ffeeULL;
    r ^= pc_splitmix64(&r) + (uint64_t)t->epoch * 0x9E3779B97F4A7C15ULL;
    r ^= pc_splitmix64(&r) + (uint64_t)lane * 0xBF58476D1CE4E5B9ULL;
    r ^= pc_splitmix64(&r) + (uint64_t)s * 0x94D049BB133111EBULL;
    return r;
}

/*
 * One optimizer step over step t->oi: this rank's B lanes, gradients summed
 * over ranks and divided by the graphs of the step (all ranks), then clip and
 * AdamW (head parameters only in GST's fine-tuning) on every rank alike.
 */
static pc_status train_group(trainer *t, int head_only, pc_error *err) {
    pc_model *m = t->m;
    double agg[2] = {0, 0}; /* loss sum, graphs */
    pc_params_zero_grad(&m->params);
    for (int j = 0; j < t->B; j++) {
        size_t lane = (size_t)t->R * (size_t)t->B + (size_t)j;
        if (t->oi >= lane_len(t, lane)) continue;
        size_t gi = (size_t)t->order[t->lane_off[lane] + t->oi];
        tgraph *g = &t->tr.v[t->local_of[gi]];
        if (g->c < 2) continue;
        uint64_t rng = step_rng(t, lane, t->oi);
        double L = 0;
        pc_status st = graph_grad(t, g, &rng, head_only, &L, err);
        if (st) return st;
        agg[0] += L;
        agg[1] += 1;
    }
    pc_dist_sum_f64(t->dist, agg, 2);
    if (agg[1] == 0) return PC_OK; /* no graph of this step has two configs */
    size_t np = m->params.numel;
    pc_dist_sum_f32(t->dist, m->params.grad, np);
    if (agg[1] > 1) {
        float inv = (float)(1.0 / agg[1]);
        for (size_t i = 0; i < np; i++) m->params.grad[i] *= inv;
    }
    pc_clip_grad_norm(m->params.grad, np, t->o.clip);
    if (head_only) {
        const int heads[4] = {m->p_h1_w, m->p_h1_b, m->p_h2_w, m->p_h2_b};
        for (int h = 0; h < 4; h++) {
            const pc_param_info *pi = &m->params.info[heads[h]];
            size_t o = pi->offset;
            pc_adam_step(m->params.data + o, m->params.grad + o, m->params.m + o,
                         m->params.v + o, pi->numel, &t->ac, t->step + 1, t->o.lr * 0.1f);
        }
    } else {
        float lr = pc_lr_cosine(t->step, t->o.lr, t->o.lr * 0.05f, t->warmup, t->total);
        pc_params_adam_step(&m->params, &t->ac, t->step + 1, lr);
    }
    t->step++;
    t->steps_run++;
    t->lsum += agg[0];
    t->lcount += (size_t)agg[1];
    return PC_OK;
}

static void report_progress(trainer *t, int force) {
    if (!t->progress) return;
    double now = now_s();
    if (!force && now - t->last_progress < 0.25) return;
    t->last_progress = now;
    pc_train_progress p;
    p.epoch = t->epoch;
    p.epochs = t->o.epochs;
    p.step = t->oi;
    p.steps_per_epoch = t->S;
    p.elapsed_s = now - t->t0;
    // rates over the training so far in this run (not loading)
    double busy = now - t->t_steps0;
    p.samples_per_s = busy > 0 ? (double)t->samples_run / busy : 0;
    p.loss = t->lcount ? t->lsum / (double)t->lcount : NAN;
    p.valid = t->last_valid;
    double rate = busy > 0 ? (double)t->steps_run / busy : 0;
    double left = (double)(t->o.epochs - t->epoch) * (double)t->S + (double)(t->S - t->oi);
    p.eta_s = rate > 0 ? left / rate + t->last_valid_s * (t->o.epochs - t->epoch + 1) : NAN;
    if (t->o.time_budget > 0 && p.eta_s > t->o.time_budget - p.elapsed_s)
        p.eta_s = t->o.time_budget - p.elapsed_s > 0 ? t->o.time_budget - p.elapsed_s : 0;
    t->progress(t->user, &p);
}

/* A new epoch: every lane's graphs in a fresh order (the same on every rank). */
static void shuffle(trainer *t) {
    for (size_t l = 0; l < t->G; l++) {
        int64_t *o = t->order + t->lane_off[l];
        size_t n = lane_len(t, l);
        for (size_t i = 0; i < n; i++) o[i] = (int64_t)(l + i * t->G);
        for (size_t i = n; i > 1; i--) {
            size_t j = (size_t)rand_below(&t->rng, i);
            int64_t tmp = o[i - 1];
            o[i - 1] = o[j];
            o[j] = tmp;
        }
    }
    t->oi = 0;
    t->lsum = 0;
    t->lcount = 0;
}

/* Validates, keeps the best parameters (and writes them), counts patience. */
/* Parameters must stay identical on every rank: compare a checksum after each epoch. */
static pc_status check_replicas(trainer *t, pc_error *err) {
    if (t->W <= 1) return PC_OK;
    double c = 0;
    for (size_t i = 0; i < t->m->params.numel; i++) c += (double)t->m->params.data[i] * (double)(i % 7 + 1);
    double lo[1] = {-c}, hi[1] = {c};
    pc_dist_max_f64(t->dist, lo, 1);
    pc_dist_max_f64(t->dist, hi, 1);
    if (-lo[0] != hi[0])
        return pc_fail(err, PC_ERR_INVALID, "train: parameters diverged across ranks after epoch "
                       "%d (checksums %.17g .. %.17g)", t->epoch, -lo[0], hi[0]);
    return PC_OK;
}

static pc_status end_epoch(trainer *t, pc_error *err) {
    double tv = now_s();
    double mean_loss = t->lcount ? t->lsum / (double)t->lcount : NAN;
    if (t->epoch == 1) t->first_loss = mean_loss;
    t->last_loss = mean_loss;
    evsum e;
    pc_status st = evaluate(t->m, t->ws, &t->va, &t->x, &e, err);
    if (st) return st;
    evsum_reduce(t->dist, &e);
    if ((st = check_replicas(t, err))) return st;
    double metric = pc_metric_mean_value(&e.metric);
    if (!isfinite(metric)) metric = -INFINITY;
    t->last_valid = metric;
    t->last_valid_s = now_s() - tv;
    t->epochs_done = t->epoch;
    int improved = metric > t->best_metric || t->best_epoch == 0;
    if (improved) {
        t->best_metric = metric;
        t->best_epoch = t->epoch;
        memcpy(t->best, t->m->params.data, t->m->params.numel * sizeof(float));
        t->since = 0;
    } else {
        t->since++;
    }
    logf_(t->log, t->user, "epoch %d loss %.6f valid %.6f best %.6f (%.2fs)", t->epoch,
          mean_loss, metric, t->best_metric, now_s() - t->t0);
    return improved ? save_best(t, err) : PC_OK;
}

/*
 * GST's last phase: from the best parameters, train only the head on fresh
 * embeddings of every segment (no table, no dropout), which removes the bias
 * stale embeddings left in it. Learning rate: a tenth of the peak.
 */
static pc_status gst_finetune(trainer *t, pc_error *err) {
    pc_model *m = t->m;
    memcpy(m->params.data, t->best, m->params.numel * sizeof(float));
    logf_(t->log, t->user, "gst: fine-tuning the head for %d epochs", t->o.gst_finetune);
    pc_status st = PC_OK;
    for (int e = 0; e < t->o.gst_finetune && !st; e++) {
        t->epoch++;
        shuffle(t);
        for (; t->oi < t->S && !st; t->oi++) st = train_group(t, 1, err);
        if (!st) st = end_epoch(t, err);
    }
    return st;
}

pc_status pc_train_run(const pc_train_opts *opts, pc_train_log_fn log,
                       pc_train_progress_fn progress, void *user, pc_train_result *res,
                       pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    trainer *t = calloc(1, sizeof *t);
    if (!t) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    t->o = *opts;
    t->log = log;
    t->progress = progress;
    t->user = user;
    pc_status st = check_opts(t, err);
    if (st) goto done;
    t->dist = t->o.dist;
    t->W = pc_dist_size(t->dist);
    t->R = pc_dist_rank(t->dist);
    t->B = t->o.batch_graphs > 0 ? t->o.batch_graphs : 1;
    t->G = (size_t)t->W * (size_t)t->B;
    if (t->R != 0) { /* rank 0 alone logs and reports */
        t->log = NULL;
        t->progress = NULL;
        log = NULL;
    }
    pc_nn_set_threads(t->o.threads);
    t->t0 = now_s();
    if ((st = setup(t, err))) goto done;
    logf_(log, user, "%s: %zu train, %zu valid graphs; %zu parameters; node features %d, "
          "config features %d%s", t->o.collection, t->ntrain, t->nvalid, t->m->params.numel,
          t->m->feat_dim, t->m->cfg_dim, t->o.resume ? "; resumed" : "");
    if (t->o.resume)
        logf_(log, user, "resuming at epoch %d, step %zu of %zu (best %.6f at epoch %d)",
              t->epoch + (t->oi >= t->S), t->oi < t->S ? t->oi : 0, t->S, t->best_metric,
              t->best_epoch);
    int interrupted = 0, finished = 0;
    t->t_steps0 = now_s();
    for (; t->epoch <= t->o.epochs; t->epoch++) {
        if (t->since >= t->o.patience) {
            finished = 1;
            break;
        }
        if (t->oi >= t->S) { /* a new epoch */
            if (t->o.time_budget > 0 && t->best_epoch > 0 &&
                now_s() - t->t0 + t->last_epoch_s > t->o.time_budget) {
                logf_(log, user, "time budget: stopping before epoch %d", t->epoch);
                t->epoch--; /* the state's epoch is the last one completed */
                interrupted = 1;
                break;
            }
            shuffle(t);
        }
        double te = now_s();
        int budget_hit = 0;
        for (; t->oi < t->S; t->oi++) {
            if (t->o.time_budget > 0 && now_s() - t->t0 > t->o.time_budget) budget_hit = 1;
            int stop = budget_hit ||
                       (t->o.stop_after_steps > 0 && t->steps_run >= t->o.stop_after_steps) ||
                       (t->o.stop_flag && *t->o.stop_flag);
            /* ranks stop together, or the others would wait in the next all-reduce */
            stop = pc_dist_any(t->dist, stop);
            budget_hit = pc_dist_any(t->dist, budget_hit);
            if (stop) {
                interrupted = 1;
                break;
            }
            if ((st = train_group(t, 0, err))) goto done;
            report_progress(t, 0);
        }
        if (interrupted && !(budget_hit && t->best_epoch == 0)) {
            logf_(log, user, "%s: stopped during epoch %d after %zu of %zu steps",
                  budget_hit ? "time budget" : "interrupted", t->epoch, t->oi, t->S);
            break;
        }
        // the epoch is complete, or the budget ran out before any epoch did:
        // validate what there is, so a model gets written
        if (interrupted) t->oi = t->S;
        if ((st = end_epoch(t, err))) goto done;
        t->last_epoch_s = now_s() - te;
        report_progress(t, 1);
        if (interrupted) break;
        if ((st = save_state(t, err))) goto done;
        if (t->since >= t->o.patience) {
            logf_(log, user, "early stop: %d epochs without improvement", t->since);
            finished = 1;
            t->epoch++;
            break;
        }
    }
    if (!interrupted && !finished) finished = 1;
    if (!interrupted && t->m->opts.gst && t->o.gst_finetune > 0 && t->best_epoch > 0) {
        t->epoch--; /* the loop left it one past the last epoch */
        if ((st = gst_finetune(t, err))) goto done;
        t->epoch++;
    }
    if (interrupted) {
        if ((st = save_state(t, err))) goto done;
        logf_(log, user, "state saved to %s; continue with --resume", t->state_path);
    } else {
        if (t->R == 0) remove(t->state_path);
    }
    if (t->best_epoch > 0 && (st = save_best(t, err))) goto done; /* final epochs_run */
    if (t->best_epoch > 0)
        logf_(log, user, "wrote %s (best epoch %d, valid %s %.6f)", t->o.out_path,
              t->best_epoch, t->kind == PC_KIND_TILE ? "tile score" : "kendall tau",
              t->best_metric);
    else
        logf_(log, user, "no epoch completed: %s not written", t->o.out_path);
    if (res) {
        memset(res, 0, sizeof *res);
        res->epochs_run = t->epochs_done;
        res->best_epoch = t->best_epoch;
        res->best_metric = t->best_metric;
        res->first_loss = t->first_loss;
        res->last_loss = t->last_loss;
        res->interrupted = interrupted;
    }
done:
    if (st && t->W > 1) pc_dist_abort(t->dist, err->msg); /* the other ranks must not wait */
    trainer_free(t);
    free(t);
    return st;
}

/* ---- evaluation ---------------------------------------------------------- */

/* Metrics need measured runtimes; test splits carry zeros. Refuse up front. */
static pc_status require_runtimes(const tset *s, pc_error *err) {
    for (size_t i = 0; i < s->n; i++) {
        const pc_graph *g = s->v[i].g;
        const int64_t *rt = pc_graph_config_runtime(g);
        int64_t c = pc_graph_num_configs(g), k = 0;
        while (k < c && rt[k] > 0) k++;
        if (k < c)
            return pc_fail(err, PC_ERR_INVALID, "eval: %s: config_runtime[%lld] = %lld; eval needs "
                           "positive runtimes (test splits carry none: evaluate on valid, or use "
                           "'perfcast predict')", pc_graph_path(g), (long long)k, (long long)rt[k]);
    }
    return PC_OK;
}

pc_status pc_eval_run(const char *model_path, const char *data_dir, const char *split,
                      int threads, pc_eval_result *res, pc_error *err) {
    return pc_eval_run_dist(model_path, data_dir, split, threads, NULL, res, err);
}

pc_status pc_eval_run_dist(const char *model_path, const char *data_dir, const char *split,
                           int threads, const pc_dist *dist, pc_eval_result *res, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    int sp = pc_split_find(split ? split : "valid");
    if (sp < 0) return pc_fail(err, PC_ERR_ARG, "eval: unknown split '%s'", split);
    pc_nn_set_threads(threads);
    pc_model *m = NULL;
    pc_dataset *ds = NULL;
    pc_model_ws *ws = NULL;
    tset s = {0};
    scratch x;
    memset(&x, 0, sizeof x);
    int coll = -1;
    pc_status st = pc_ckpt_load(model_path, &m, &coll, err);
    if (!st) st = pc_dataset_open(data_dir, &ds, err);
    int W = pc_dist_size(dist), R = pc_dist_rank(dist);
    if (!st) st = tset_load(ds, coll, sp, threads, (size_t)W, (size_t)R, (size_t)R + 1, &s, err);
    if (!st && pc_dataset_num_files(ds, coll, sp) == 0)
        st = pc_fail(err, PC_ERR_NOTFOUND, "eval: no %s graphs of %s under %s", pc_split_name(sp),
                     pc_collection_name(coll), data_dir);
    if (!st) st = require_runtimes(&s, err);
    if (!st) st = tset_build(m, &s, 0, err);
    if (!st && !(ws = pc_model_ws_new())) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    evsum e;
    if (!st) st = evaluate(m, ws, &s, &x, &e, err);
    if (st && W > 1) pc_dist_abort(dist, err->msg); /* the other ranks must not wait */
    if (!st) evsum_reduce(dist, &e);
    if (!st) {
        memset(res, 0, sizeof *res);
        res->collection = coll;
        res->tile = m->opts.kind == PC_KIND_TILE;
        res->graphs = e.graphs;
        res->metric = pc_metric_mean_value(&e.metric);
        res->tau = pc_metric_mean_value(&e.tau);
        res->opa = pc_metric_mean_value(&e.opa);
        for (int k = 0; k < 3; k++) res->slowdown[k] = pc_metric_mean_value(&e.sd[k]);
    }
    scratch_free(&x);
    pc_model_ws_free(ws);
    tset_free(&s);
    pc_dataset_free(ds);
    pc_model_free(m);
    return st;
}
