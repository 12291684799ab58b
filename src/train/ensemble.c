/*
 * perfcast train: seed ensembles (pc_train_opts.ensemble > 1). The members
 * train one after the other in the same trainer, on the data loaded once:
 * between two members the model and the training state start afresh (seed
 * seed0 + k, the same model and state a plain run with that seed starts
 * from), and each member gets an equal share of the time budget left. The
 * kept members become one model (gnn/checkpoint.h: member 0's tensors as a
 * plain model's, the others' under "member<k>."), validated as an ensemble
 * (gnn/infer.h averages it) and written once, at the end.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnn/eval.h"
#include "train/train_internal.h"

static const char *metric_name(const trainer *t) {
    return t->kind == PC_KIND_TILE ? "tile score" : "kendall tau";
}

/* Member k's share of the budget left (none: 0), counted from now. */
static void member_budget(trainer *t, int k) {
    tr_ens *e = &t->ens;
    double now = pc_tr_now();
    if (e->budget0 > 0) t->o.time_budget = (e->budget0 - (now - e->t0)) / (e->n - k);
    t->clock.t0 = now;
    t->clock.last_epoch_s = t->clock.last_valid_s = 0;
    if (e->budget0 > 0)
        pc_tr_logf(t->log, t->user, "ensemble: member %d of %d (seed %llu), %.1f s of the budget",
                   k + 1, e->n, (unsigned long long)t->o.seed, t->o.time_budget);
    else
        pc_tr_logf(t->log, t->user, "ensemble: member %d of %d (seed %llu)", k + 1, e->n,
                   (unsigned long long)t->o.seed);
}

pc_status pc_tr_ens_begin(trainer *t, pc_error *err) {
    tr_ens *e = &t->ens;
    if (t->o.ensemble <= 1) return PC_OK;
    e->n = t->o.ensemble;
    e->seed0 = t->o.seed;
    e->budget0 = t->o.time_budget;
    e->t0 = t->clock.t0;
    size_t n = (size_t)e->n;
    e->params = calloc(n, sizeof *e->params);
    e->metric = calloc(n, sizeof *e->metric);
    e->best_epoch = calloc(n, sizeof *e->best_epoch);
    e->epochs_run = calloc(n, sizeof *e->epochs_run);
    if (!e->params || !e->metric || !e->best_epoch || !e->epochs_run)
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    member_budget(t, 0);
    return PC_OK;
}

/* GST models: every train graph's embedding table starts empty, as in a fresh run. */
static pc_status fresh_gst(trainer *t, pc_error *err) {
    if (!t->m->opts.gst) return PC_OK;
    for (size_t i = 0; i < t->tr.n; i++) {
        pc_split_graph *g = &t->tr.v[i];
        pc_gst_graph_free(g->gst);
        g->gst = NULL;
        pc_gst_opts go = pc_gst_opts_of(t->m);
        pc_status st = pc_gst_graph_build(t->m, &g->d, &go, g->c, &g->gst, err);
        if (st) return st;
    }
    pc_gst_ctx_free(t->gx);
    if (!(t->gx = pc_gst_ctx_new(t->o.gst_train_segs)))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    return PC_OK;
}

pc_status pc_tr_ens_next(trainer *t, int k, int *go, pc_error *err) {
    tr_ens *e = &t->ens;
    *go = 0;
    /* ranks agree, or one would train a member the others skip */
    int spent = e->budget0 > 0 && e->budget0 - (pc_tr_now() - e->t0) <= 0;
    if (pc_dist_any(t->topo.dist, spent)) {
        pc_tr_logf(t->log, t->user, "time budget: spent after %d of %d members", k, e->n);
        return PC_OK;
    }
    pc_gnn_opts mo;
    pc_gnn *m = NULL;
    pc_status st = pc_tr_model_opts(t, &mo, err);
    if (!st) st = pc_gnn_new(&mo, t->m->feat_dim, t->m->cfg_dim, e->seed0 + (uint64_t)k, &m, err);
    if (!st) st = pc_gnn_set_prep(m, &t->m->node_prep, &t->m->cfg_prep, err);
    if (st) {
        pc_gnn_free(m);
        return st;
    }
    pc_gnn_free(t->m);
    t->m = m;
    if ((st = fresh_gst(t, err))) return st;
    /* a fresh state, in the buffers of the last */
    float *best = t->state.best;
    int64_t *order = t->state.order;
    memset(&t->state, 0, sizeof t->state);
    t->state.best = best;
    t->state.order = order;
    t->o.seed = e->seed0 + (uint64_t)k;
    pc_tr_state_init(t);
    member_budget(t, k);
    *go = 1;
    return PC_OK;
}

pc_status pc_tr_ens_keep(trainer *t, int k, pc_error *err) {
    tr_ens *e = &t->ens;
    const tr_state *r = &t->state;
    if (r->best_epoch == 0) {
        pc_tr_logf(t->log, t->user, "ensemble: member %d completed no epoch; left out", k + 1);
        return PC_OK;
    }
    size_t n = t->m->params.numel;
    int j = e->kept;
    if (!(e->params[j] = malloc(n * sizeof(float))))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    memcpy(e->params[j], r->best, n * sizeof(float));
    e->metric[j] = r->best_metric;
    e->best_epoch[j] = r->best_epoch;
    e->epochs_run[j] = r->epochs_done;
    if (j == 0) e->first_loss = r->first_loss;
    e->kept++;
    pc_tr_logf(t->log, t->user,
               "ensemble: member %d of %d (seed %llu): best epoch %d of %d, "
               "valid %s %.6f",
               k + 1, e->n, (unsigned long long)t->o.seed, r->best_epoch, r->epochs_done,
               metric_name(t), r->best_metric);
    return PC_OK;
}

/* t->m becomes the ensemble of the kept members: member 0 in place, the others attached. */
static pc_status assemble(trainer *t, pc_error *err) {
    tr_ens *e = &t->ens;
    pc_gnn *m = t->m;
    memcpy(m->params.data, e->params[0], m->params.numel * sizeof(float));
    if (e->kept < 2) return PC_OK;
    if (!(m->members = calloc((size_t)e->kept - 1, sizeof *m->members)))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    for (int j = 1; j < e->kept; j++) {
        pc_gnn *mj = NULL;
        pc_status st = pc_gnn_new(&m->opts, m->feat_dim, m->cfg_dim, 0, &mj, err);
        if (!st) m->members[m->n_members++] = mj;
        if (!st) st = pc_gnn_set_prep(mj, &m->node_prep, &m->cfg_prep, err);
        if (st) return st;
        memcpy(mj->params.data, e->params[j], m->params.numel * sizeof(float));
    }
    return PC_OK;
}

/* The ensemble's valid metric over every rank's graphs. */
static pc_status validate(trainer *t, double *metric, pc_error *err) {
    pc_eval_sum es;
    pc_eval_sum_init(&es);
    for (size_t i = 0; i < t->va.n; i++) {
        if (t->va.v[i].c < 1) continue;
        pc_status st = pc_eval_graph(t->m, t->ws, &t->va.v[i], &t->x, &es, err);
        if (st) return st;
    }
    pc_eval_sum_reduce(t->topo.dist, &es);
    *metric = pc_metric_mean_value(&es.metric);
    return PC_OK;
}

/* Every kept member's metric, for the log. */
static void members_text(const tr_ens *e, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int j = 0; j < e->kept && len < cap; j++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%.6f", j ? ", " : "", e->metric[j]);
}

pc_status pc_tr_ens_finish(trainer *t, pc_error *err) {
    tr_ens *e = &t->ens;
    tr_state *r = &t->state;
    t->o.seed = e->seed0;
    t->o.time_budget = e->budget0;
    if (e->kept == 0) {
        r->best_epoch = 0;
        pc_tr_logf(t->log, t->user, "no epoch completed: %s not written", t->o.out_path);
        return PC_OK;
    }
    double metric = NAN;
    pc_status st = assemble(t, err);
    if (!st) st = validate(t, &metric, err);
    if (st) return st;
    char buf[256];
    members_text(e, buf, sizeof buf);
    pc_tr_logf(t->log, t->user, "ensemble of %d members: valid %s %.6f (members: %s)", e->kept,
               metric_name(t), metric, buf);
    r->best_metric = metric;
    r->best_epoch = e->best_epoch[0];
    r->first_loss = e->first_loss;
    r->epochs_done = 0;
    for (int j = 0; j < e->kept; j++) r->epochs_done += e->epochs_run[j];
    if (t->topo.R == 0) { /* rank 0 writes */
        pc_ckpt_info info = pc_tr_ckpt_info(t);
        info.best_epoch = e->best_epoch[0];
        info.epochs_run = e->epochs_run[0];
        info.ensemble = e->kept;
        info.member_params = (const float *const *)e->params;
        info.member_metric = e->metric;
        info.member_best_epoch = e->best_epoch;
        if ((st = pc_ckpt_save(t->m, &info, t->o.out_path, err))) return st;
    }
    pc_tr_logf(t->log, t->user, "wrote %s (ensemble of %d, valid %s %.6f)", t->o.out_path, e->kept,
               metric_name(t), metric);
    return PC_OK;
}

void pc_tr_ens_free(trainer *t) {
    tr_ens *e = &t->ens;
    for (int j = 0; e->params && j < e->n; j++) free(e->params[j]);
    free(e->params);
    free(e->metric);
    free(e->best_epoch);
    free(e->epochs_run);
}
