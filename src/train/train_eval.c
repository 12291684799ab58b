/*
 * perfcast train / eval: scoring every configuration of a graph (chunks over
 * the shared prefix, distinct configurations once), the validation at the end
 * of each training epoch, and pc_eval_run over a split.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_internal.h"

/* ---- scoring every config of a graph ------------------------------------------ */

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
int64_t pc_tr_chunk_of(const pc_model *m, int64_t budget) {
    int g = m->opts.attn_heads > 0 ? m->opts.attn_group : 1;
    if (budget < g) budget = g;
    return budget / g * g;
}

/* GST models: every segment fresh, chunks of configs. */
static pc_status predict_all_gst(const pc_model *m, tgraph *t, scratch *x, pc_error *err) {
    pc_gst_ctx *cx = pc_gst_ctx_new(1);
    int64_t chunk = pc_tr_chunk_of(m, 64);
    if (!cx || !pc_tr_fgrow(&x->s, (size_t)chunk) ||
        !pc_tr_scratch_ids(x, (size_t)(t->c + chunk))) {
        pc_gst_ctx_free(cx);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    pc_status st = PC_OK;
    int64_t n = t->ufirst ? t->nu : t->c;
    for (int64_t c0 = 0; c0 < n && !st; c0 += chunk) {
        int K, Kp = chunk_ids(m, t, c0, chunk, &K, x);
        if (!(st = pc_tr_gather_cfg(m, t, x->ids, Kp, x, err)))
            st = pc_gst_score(m, cx, t->gst, x->cfg.p, Kp, x->s.p, err);
        for (int k = 0; k < K && !st; k++) x->pred[c0 + k] = (double)x->s.p[k];
    }
    pc_gst_ctx_free(cx);
    if (!st) expand_uniq(t, x);
    return st;
}

/* Configs per chunk of full-graph inference: a chunk's activations near 256 MiB. */
int64_t pc_tr_infer_chunk(const pc_model *m, const tgraph *t) {
    double per = (double)pc_model_bytes_per_config(m, &t->d.g);
    int64_t chunk = (int64_t)(268435456.0 / per);
    if (chunk < 1) chunk = 1;
    if (chunk > 1024) chunk = 1024;
    return pc_tr_chunk_of(m, chunk);
}

/* Predicted scores of every config of t into x->pred (chunks over a shared prefix). */
static pc_status predict_all(const pc_model *m, pc_model_ws *ws, tgraph *t, scratch *x,
                             pc_error *err) {
    if (!pc_tr_scratch_ids(x, (size_t)t->c + 1)) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    tgraph_uniq(m, t);
    if (m->opts.gst) return predict_all_gst(m, t, x, err);
    pc_status st = pc_model_prefix(m, ws, &t->d.g, err);
    if (st) return st;
    int64_t chunk = pc_tr_infer_chunk(m, t);
    if (!pc_tr_fgrow(&x->s, (size_t)chunk) || !pc_tr_scratch_ids(x, (size_t)(t->c + chunk)))
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    int64_t n = t->ufirst ? t->nu : t->c;
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        int K, Kp = chunk_ids(m, t, c0, chunk, &K, x);
        if ((st = pc_tr_gather_cfg(m, t, x->ids, Kp, x, err))) return st;
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
        pc_gst_opts go = pc_tr_gst_opts(m);
        st = pc_gst_graph_build(m, &t.d, &go, 0, &t.gst, err);
    }
    if (!st) st = predict_all(m, ws, &t, &x, err);
    if (!st) memcpy(scores, x.pred, (size_t)t.c * sizeof(double));
    else pc_error_prefix(err, "%s: ", pc_graph_path(g));
    pc_model_gdata_free(&t.d);
    pc_gst_graph_free(t.gst);
    free(t.ufirst);
    free(t.umap);
    pc_tr_scratch_free(&x);
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

/* ---- validation during training ---------------------------------------------- */

/* Parameters must stay identical on every rank: compare a checksum after each epoch. */
static pc_status check_replicas(trainer *t, pc_error *err) {
    if (t->topo.W <= 1) return PC_OK;
    const float *p = t->m->params.data;
    double c = 0;
    for (size_t i = 0; i < t->m->params.numel; i++) c += (double)p[i] * (double)(i % 7 + 1);
    double lo[1] = {-c}, hi[1] = {c};
    pc_dist_max_f64(t->topo.dist, lo, 1);
    pc_dist_max_f64(t->topo.dist, hi, 1);
    if (-lo[0] != hi[0])
        return pc_fail(err, PC_ERR_INVALID, "train: parameters diverged across ranks after epoch "
                       "%d (checksums %.17g .. %.17g)", t->state.epoch, -lo[0], hi[0]);
    return PC_OK;
}

pc_status pc_tr_end_epoch(trainer *t, pc_error *err) {
    tr_state *r = &t->state;
    double tv = pc_tr_now();
    double mean_loss = r->lcount ? r->lsum / (double)r->lcount : NAN;
    if (r->epoch == 1) r->first_loss = mean_loss;
    r->last_loss = mean_loss;
    evsum e;
    pc_status st = evaluate(t->m, t->ws, &t->va, &t->x, &e, err);
    if (st) return st;
    evsum_reduce(t->topo.dist, &e);
    if ((st = check_replicas(t, err))) return st;
    double metric = pc_metric_mean_value(&e.metric);
    if (!isfinite(metric)) metric = -INFINITY;
    r->last_valid = metric;
    t->clock.last_valid_s = pc_tr_now() - tv;
    r->epochs_done = r->epoch;
    int improved = metric > r->best_metric || r->best_epoch == 0;
    if (improved) {
        r->best_metric = metric;
        r->best_epoch = r->epoch;
        memcpy(r->best, t->m->params.data, t->m->params.numel * sizeof(float));
        r->since = 0;
    } else {
        r->since++;
    }
    pc_tr_logf(t->log, t->user, "epoch %d loss %.6f valid %.6f best %.6f (%.2fs)", r->epoch,
               mean_loss, metric, r->best_metric, pc_tr_now() - t->clock.t0);
    return improved ? pc_tr_save_best(t, err) : PC_OK;
}

/* ---- evaluation of a checkpoint (perfcast eval) -------------------------------- */

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
    if (!st)
        st = pc_tr_set_load(ds, coll, sp, threads, (size_t)W, (size_t)R, (size_t)R + 1, &s, err);
    if (!st && pc_dataset_num_files(ds, coll, sp) == 0)
        st = pc_fail(err, PC_ERR_NOTFOUND, "eval: no %s graphs of %s under %s", pc_split_name(sp),
                     pc_collection_name(coll), data_dir);
    if (!st) st = require_runtimes(&s, err);
    if (!st) st = pc_tr_set_build(m, &s, 0, err);
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
    pc_tr_scratch_free(&x);
    pc_model_ws_free(ws);
    pc_tr_set_free(&s);
    pc_dataset_free(ds);
    pc_model_free(m);
    return st;
}
