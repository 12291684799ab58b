/*
 * perfcast train / eval: the validation at the end of each training epoch and
 * pc_eval_run over a split, both scoring every configuration of a graph with
 * the model's inference (src/model/infer.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_internal.h"

/* ---- scoring every config of a graph ------------------------------------------ */

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
        pc_status st = pc_infer_all(m, ws, t->g, &t->d, t->gst, &t->uniq, x, err);
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
    pc_infer_scratch_free(&x);
    pc_model_ws_free(ws);
    pc_tr_set_free(&s);
    pc_dataset_free(ds);
    pc_model_free(m);
    return st;
}
