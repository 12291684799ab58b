/*
 * perfcast train: the validation at the end of each training epoch, with the
 * model's evaluation (src/gnn/eval.h, which also has pc_eval_run).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnn/eval.h"
#include "train/train_internal.h"

/* ---- scoring every config of a graph ------------------------------------------ */

/* Scores every graph of s and sums its metrics into e. */
static pc_status evaluate(const pc_gnn *m, pc_gnn_ws *ws, pc_split_graphs *s, scratch *x,
                          pc_eval_sum *e, pc_error *err) {
    pc_eval_sum_init(e);
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].c < 1) continue;
        pc_status st = pc_eval_graph(m, ws, &s->v[i], x, e, err);
        if (st) return st;
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
    pc_eval_sum e;
    pc_status st = evaluate(t->m, t->ws, &t->va, &t->x, &e, err);
    if (st) return st;
    pc_eval_sum_reduce(t->topo.dist, &e);
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
