/*
 * perfcast train: the training loop. Setup (data, model, workspaces), one
 * optimizer step over the lanes of this rank, the epochs with validation,
 * early stopping, the time budget and stops, GST's head fine-tuning, and the
 * final writes (pc_train_run).
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/threads.h"
#include "train/train_internal.h"

static void trainer_free(trainer *t) {
    free(t->state.best);
    free(t->state.order);
    free(t->topo.lane_off);
    free(t->topo.local_of);
    free(t->perm);
    pc_infer_scratch_free(&t->x);
    pc_gnn_ws_free(t->ws);
    pc_gst_ctx_free(t->gx);
    pc_gnn_free(t->m);
    pc_tr_candidates_free(t);
    pc_split_graphs_free(&t->tr);
    pc_split_graphs_free(&t->va);
    pc_tr_ens_free(t);
}

/* ---- setup ------------------------------------------------------------------ */

/* The topology of the run: ranks, graphs per rank and step, lanes. */
static void init_topology(trainer *t) {
    tr_topo *p = &t->topo;
    p->dist = t->o.dist;
    p->W = pc_dist_size(p->dist);
    p->R = pc_dist_rank(p->dist);
    p->B = t->o.batch_graphs;
    p->G = (size_t)p->W * (size_t)p->B;
    if (p->R != 0) { /* rank 0 alone logs and reports */
        t->log = NULL;
        t->progress = NULL;
    }
}

/* A new model with the preprocessing fitted on the train split, or the resumed one. */
static pc_status init_model(trainer *t, pc_error *err) {
    if (t->o.resume) return pc_tr_resume(t, err);
    pc_prep np = {0}, cp = {0};
    pc_gnn_opts mo;
    pc_status st = pc_tr_model_opts(t, &mo, err);
    if (!st) st = pc_tr_fit_prep(&t->tr, t->kind, mo.encode, t->topo.dist, &np, &cp, err);
    if (!st) st = pc_tr_check_attention(&mo, cp.out_dim, err);
    if (!st) st = pc_gnn_new(&mo, np.out_dim, cp.out_dim, t->o.seed, &t->m, err);
    if (!st) st = pc_gnn_set_prep(t->m, &np, &cp, err);
    pc_prep_free(&np);
    pc_prep_free(&cp);
    if (st) return st;
    t->state.best = malloc(t->m->params.numel * sizeof(float));
    t->state.order = malloc(t->ntrain * sizeof *t->state.order);
    if (!t->state.best || !t->state.order)
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    return PC_OK;
}

/*
 * When the time budget sets the length: the schedule's last step and an AUTO patience from
 * the estimate in the state (after an epoch of this run, or saved by the run resumed).
 */
static void apply_estimate(trainer *t) {
    const tr_state *s = &t->state;
    if (!t->budget_len || s->epochs_est <= 0) return;
    t->total = s->total_est;
    if (t->o.patience == PC_TRAIN_AUTO) {
        int p = (int)ceil(PC_TRAIN_BUDGET_PATIENCE_FRAC * (double)s->epochs_est);
        t->patience = p > PC_TRAIN_DEFAULT_PATIENCE ? p : PC_TRAIN_DEFAULT_PATIENCE;
    }
}

/*
 * After each epoch when the budget sets the length: the epochs that fit are those done plus
 * the whole epochs (steps and validation at this run's mean speed so far) the rest of the
 * budget holds; the cosine schedule ends with the last of them. Timing decides it, so such
 * runs are not bitwise reproducible.
 */
static void budget_estimate(trainer *t) {
    tr_state *s = &t->state;
    const tr_clock *c = &t->clock;
    if (!t->budget_len || c->steps_run <= 0 || t->topo.S == 0) return;
    double now = pc_tr_now(), S = (double)t->topo.S;
    /* the ranks' clocks differ: every rank takes the slowest, or the schedules would */
    double v[2] = {(now - c->t_steps0) * S / (double)c->steps_run,
                   (now - c->t0) - t->o.time_budget};
    pc_dist_max_f64(t->topo.dist, v, 2);
    double per_epoch = v[0], left = -v[1];
    double fit = per_epoch > 0 && left > 0 ? floor(left / per_epoch) : 0;
    double room = (double)(PC_TRAIN_MAX_EPOCHS - s->epochs_done);
    if (fit > room) fit = room;
    double steps_left = (double)(LONG_MAX / 2 - s->step) / S; /* no overflow of the total */
    if (fit > steps_left) fit = floor(steps_left);
    int first = c->estimates == 0;
    s->epochs_est = s->epochs_done + (int)fit;
    s->total_est = s->step + (long)fit * (long)t->topo.S;
    apply_estimate(t);
    if (first)
        pc_tr_logf(t->log, t->user, "time budget: about %d epochs fit (%.2fs each); the learning "
                   "rate anneals over them; patience %d epochs", s->epochs_est, per_epoch,
                   t->patience);
    t->clock.estimates++;
}

/* The step's workspaces and buffers, the GST and AdamW options, the schedule. */
static pc_status init_step(trainer *t, pc_error *err) {
    int64_t maxc = 1;
    for (size_t i = 0; i < t->tr.n; i++) maxc = t->tr.v[i].c > maxc ? t->tr.v[i].c : maxc;
    t->ws = pc_gnn_ws_new();
    t->perm = malloc((size_t)maxc * sizeof *t->perm);
    if (!t->ws || !t->perm || !pc_infer_scratch_ids(&t->x, (size_t)maxc + 1) ||
        !pc_fbuf_grow(&t->x.s, (size_t)t->o.configs) || !pc_fbuf_grow(&t->x.ds, (size_t)t->o.configs))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    t->gsto = pc_gst_opts_of(t->m);
    t->gsto.train_segs = t->o.gst_train_segs;
    t->gsto.keep = t->o.gst_keep;
    t->ac = pc_adam_cfg_default();
    t->ac.decoupled = 1;
    t->ac.weight_decay = t->o.weight_decay;
    long S = (long)t->topo.S;
    if (t->budget_len) {
        /* the budget sets the length: warm up over the first epoch and hold the peak until
           the first estimate of the epochs that fit (budget_estimate) */
        t->total = LONG_MAX;
        t->warmup = S > 1 ? S : 1;
        apply_estimate(t);
        return PC_OK;
    }
    t->total = (long)t->o.epochs * S;
    t->warmup = t->total / 10 < S ? t->total / 10 : S;
    if (t->warmup < 1) t->warmup = 1;
    return PC_OK;
}

static pc_status setup(trainer *t, pc_error *err) {
    pc_status st = pc_tr_load_data(t, err);
    if (st) return st;
    pc_tr_state_init(t);
    if ((st = init_model(t, err))) return st;
    if ((st = pc_split_graphs_build(t->m, &t->tr, 1, err)) ||
        (st = pc_split_graphs_build(t->m, &t->va, 0, err)))
        return st;
    /* the estimate needs the model inputs, and comes before the training buffers */
    if ((st = pc_tr_check_memory(t, err))) return st;
    if (t->m->opts.gst && !(t->gx = pc_gst_ctx_new(t->o.gst_train_segs)))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    if ((st = pc_tr_prepare_candidates(t, err))) return st;
    return init_step(t, err);
}

/* ---- one step --------------------------------------------------------------- */

/*
 * Loss of one graph and its gradient, ADDED to the arena's gradients.
 * head_only: GST's fine-tuning (every segment fresh, only the head learns).
 */
static pc_status graph_grad(trainer *t, size_t li, uint64_t *rng, int head_only, double *loss,
                            pc_error *err) {
    const pc_split_graph *g = &t->tr.v[li];
    int K = pc_tr_sample_configs(t, &t->cand[li], rng);
    scratch *x = &t->x;
    pc_status st = pc_infer_gather_cfg(t->m, g->g, x->ids, K, x, err);
    uint64_t dseed = *rng ^ 0xd50u;
    if (!st && head_only)
        st = pc_gst_score(t->m, t->gx, g->gst, x->cfg.p, K, x->s.p, err);
    else if (!st && t->m->opts.gst)
        st = pc_gst_forward(t->m, t->gx, g->gst, x->ids, x->cfg.p, K, &t->gsto, rng, x->s.p, err);
    else if (!st)
        st = pc_gnn_forward(t->m, t->ws, &g->d.g, x->cfg.p, K,
                              t->m->opts.dropout > 0 ? &dseed : NULL, x->s.p, err);
    if (st) return st;
    memset(x->ds.p, 0, (size_t)K * sizeof(float));
    double L = pc_loss_combo(x->ds.p, x->s.p, x->yk, K, &t->lc, 1.0f, NULL);
    if (!isfinite(L))
        return pc_fail(err, PC_ERR_INVALID, "train: loss is not finite at epoch %d on %s",
                       t->state.epoch, pc_graph_path(g->g));
    if (head_only) st = pc_gst_head_backward(t->m, t->gx, x->ds.p, err);
    else if (t->m->opts.gst) st = pc_gst_backward(t->m, t->gx, g->gst, x->ds.p, err);
    else st = pc_gnn_backward(t->m, t->ws, x->ds.p, err);
    t->clock.samples_run += (size_t)K;
    *loss = L;
    return st;
}

/*
 * One optimizer step over step state.oi: this rank's B lanes, gradients summed
 * over ranks and divided by the graphs of the step (all ranks), then clip and
 * AdamW (head parameters only in GST's fine-tuning) on every rank alike.
 */
static pc_status train_group(trainer *t, int head_only, pc_error *err) {
    pc_gnn *m = t->m;
    const tr_topo *p = &t->topo;
    tr_state *r = &t->state;
    double agg[2] = {0, 0}; /* loss sum, graphs */
    pc_params_zero_grad(&m->params);
    for (int j = 0; j < p->B; j++) {
        size_t lane = (size_t)p->R * (size_t)p->B + (size_t)j;
        if (r->oi >= pc_tr_lane_len(t, lane)) continue;
        size_t gi = (size_t)r->order[p->lane_off[lane] + r->oi];
        size_t li = (size_t)p->local_of[gi];
        if (t->tr.v[li].c < 2) continue;
        uint64_t rng = pc_tr_step_rng(t, lane, r->oi);
        double L = 0;
        pc_status st = graph_grad(t, li, &rng, head_only, &L, err);
        if (st) return st;
        agg[0] += L;
        agg[1] += 1;
    }
    pc_dist_sum_f64(p->dist, agg, 2);
    if (agg[1] == 0) return PC_OK; /* no graph of this step has two configs */
    size_t np = m->params.numel;
    pc_dist_sum_f32(p->dist, m->params.grad, np);
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
                         m->params.v + o, pi->numel, &t->ac, r->step + 1, t->o.lr * 0.1f);
        }
    } else {
        float lr = pc_lr_cosine(r->step, t->o.lr, t->o.lr * 0.05f, t->warmup, t->total);
        pc_params_adam_step(&m->params, &t->ac, r->step + 1, lr);
    }
    r->step++;
    t->clock.steps_run++;
    r->lsum += agg[0];
    r->lcount += (size_t)agg[1];
    return PC_OK;
}

static void report_progress(trainer *t, int force) {
    if (!t->progress) return;
    double now = pc_tr_now();
    tr_clock *c = &t->clock;
    const tr_state *r = &t->state;
    size_t S = t->topo.S;
    if (!force && now - c->last_progress < 0.25) return;
    c->last_progress = now;
    pc_train_progress p;
    p.struct_size = sizeof p;
    p.epoch = r->epoch;
    p.epochs = t->budget_len ? r->epochs_est : t->o.epochs; /* 0: not estimated yet */
    p.step = r->oi;
    p.steps_per_epoch = S;
    p.elapsed_s = now - c->t0;
    // rates over the training so far in this run (not loading)
    double busy = now - c->t_steps0;
    p.samples_per_s = busy > 0 ? (double)c->samples_run / busy : 0;
    p.loss = r->lcount ? r->lsum / (double)r->lcount : NAN;
    p.valid = r->last_valid;
    p.total_steps = r->step;
    p.lr = r->step > 0 ? pc_lr_cosine(r->step - 1, t->o.lr, t->o.lr * 0.05f, t->warmup, t->total)
                       : 0;
    p.validated = force;
    double rate = busy > 0 ? (double)c->steps_run / busy : 0;
    double left = (double)(p.epochs - r->epoch) * (double)S + (double)(S - r->oi);
    p.eta_s = rate > 0 && p.epochs > 0
                  ? left / rate + c->last_valid_s * (p.epochs - r->epoch + 1)
                  : t->budget_len ? INFINITY : NAN; /* capped by the budget below */
    if (t->o.time_budget > 0 && p.eta_s > t->o.time_budget - p.elapsed_s)
        p.eta_s = t->o.time_budget - p.elapsed_s > 0 ? t->o.time_budget - p.elapsed_s : 0;
    t->progress(t->user, &p);
}

/* ---- the epochs ------------------------------------------------------------- */

/*
 * GST's last phase: from the best parameters, train only the head on fresh
 * embeddings of every segment (no table, no dropout), which removes the bias
 * stale embeddings left in it. Learning rate: a tenth of the peak.
 */
static pc_status gst_finetune(trainer *t, pc_error *err) {
    pc_gnn *m = t->m;
    memcpy(m->params.data, t->state.best, m->params.numel * sizeof(float));
    pc_tr_logf(t->log, t->user, "gst: fine-tuning the head for %d epochs", t->o.gst_finetune);
    pc_status st = PC_OK;
    for (int e = 0; e < t->o.gst_finetune && !st; e++) {
        t->state.epoch++;
        pc_tr_shuffle(t);
        for (; t->state.oi < t->topo.S && !st; t->state.oi++) st = train_group(t, 1, err);
        if (!st) st = pc_tr_end_epoch(t, err);
    }
    return st;
}

/*
 * The steps of the epoch under way, from state.oi. *stop: a stop was asked
 * (Ctrl-C, --stop-after-steps or the time budget; *budget_hit: the budget).
 */
static pc_status run_steps(trainer *t, int *stop, int *budget_hit, pc_error *err) {
    tr_state *s = &t->state;
    *stop = *budget_hit = 0;
    for (; s->oi < t->topo.S; s->oi++) {
        if (t->o.time_budget > 0 && pc_tr_now() - t->clock.t0 > t->o.time_budget)
            *budget_hit = 1;
        int halt = *budget_hit ||
                   (t->o.stop_after_steps > 0 && t->clock.steps_run >= t->o.stop_after_steps) ||
                   (t->o.stop_flag && *t->o.stop_flag);
        /* ranks stop together, or the others would wait in the next all-reduce */
        halt = pc_dist_any(t->topo.dist, halt);
        *budget_hit = pc_dist_any(t->topo.dist, *budget_hit);
        if (halt) {
            *stop = 1;
            return PC_OK;
        }
        pc_status st = train_group(t, 0, err);
        if (st) return st;
        report_progress(t, 0);
    }
    return PC_OK;
}

/*
 * The time budget ran out before the first epoch was complete (s->oi of its steps done):
 * says so, and what gets written instead (the partial epoch, validated as epoch 1).
 */
static void log_budget_short(const trainer *t) {
    const tr_state *s = &t->state;
    const tr_clock *c = &t->clock;
    double load = c->t_steps0 - c->t0, steps = pc_tr_now() - c->t_steps0;
    if (s->oi == 0) {
        pc_tr_logf(t->log, t->user, "time budget: pc_train_opts.time_budget (%gs) ran out "
                   "before the first training step (loading and setup took %.2fs): writing the "
                   "untrained model (its initial weights), validated as epoch %d",
                   t->o.time_budget, load, s->epoch);
        return;
    }
    pc_tr_logf(t->log, t->user, "time budget: pc_train_opts.time_budget (%gs) is too small for "
               "one epoch: it ran out after %zu of %zu steps of epoch %d (loading took %.2fs; "
               "the other steps need about %.2fs more): writing the model of this partial "
               "epoch, validated as epoch %d", t->o.time_budget, s->oi, t->topo.S, s->epoch,
               load, steps * (double)(t->topo.S - s->oi) / (double)s->oi, s->epoch);
}

/*
 * Epochs from state.epoch until the last, early stopping or a stop
 * (*interrupted: the run stopped before its end and leaves a state to resume).
 * Every completed epoch is validated and its state saved.
 */
static pc_status run_epochs(trainer *t, int *interrupted, pc_error *err) {
    tr_state *s = &t->state;
    *interrupted = 0;
    for (; s->epoch <= t->epochs_max; s->epoch++) {
        if (s->since >= t->patience) break;
        if (s->oi >= t->topo.S) { /* a new epoch */
            if (t->o.time_budget > 0 && s->best_epoch > 0 &&
                pc_tr_now() - t->clock.t0 + t->clock.last_epoch_s > t->o.time_budget) {
                pc_tr_logf(t->log, t->user, "time budget: stopping before epoch %d", s->epoch);
                s->epoch--; /* the state's epoch is the last one completed */
                *interrupted = 1;
                return PC_OK;
            }
            pc_tr_shuffle(t);
        }
        double te = pc_tr_now();
        int stop, budget_hit;
        pc_status st = run_steps(t, &stop, &budget_hit, err);
        if (st) return st;
        *interrupted = stop;
        if (stop && !(budget_hit && s->best_epoch == 0)) {
            pc_tr_logf(t->log, t->user, "%s: stopped during epoch %d after %zu of %zu steps",
                       budget_hit ? "time budget" : "interrupted", s->epoch, s->oi, t->topo.S);
            return PC_OK;
        }
        // the epoch is complete, or the budget ran out before any epoch did:
        // validate what there is, so a model gets written
        if (stop) {
            log_budget_short(t);
            s->oi = t->topo.S;
        }
        if ((st = pc_tr_end_epoch(t, err))) return st;
        t->clock.last_epoch_s = pc_tr_now() - te;
        if (!stop) budget_estimate(t);
        report_progress(t, 1);
        if (stop) return PC_OK;
        if ((st = pc_tr_save_state(t, err))) return st;
        if (s->since >= t->patience) {
            pc_tr_logf(t->log, t->user, "early stop: %d epochs without improvement", s->since);
            s->epoch++;
            return PC_OK;
        }
    }
    return PC_OK;
}

/* One model: the epochs, then GST's fine-tuning when they completed. */
static pc_status train_model(trainer *t, int *interrupted, pc_error *err) {
    tr_state *s = &t->state;
    pc_status st = run_epochs(t, interrupted, err);
    if (!st && !*interrupted && t->m->opts.gst && t->o.gst_finetune > 0 && s->best_epoch > 0) {
        s->epoch--; /* the loop left it one past the last epoch */
        st = gst_finetune(t, err);
        s->epoch++;
    }
    return st;
}

/*
 * A seed ensemble (ensemble.c): the members one after the other, until the
 * budget is spent or a stop is asked (*interrupted: a stop, not the budget),
 * then the ensemble validated and written.
 */
static pc_status train_ensemble(trainer *t, int *interrupted, pc_error *err) {
    pc_status st = pc_tr_ens_begin(t, err);
    int go = 1;
    *interrupted = 0;
    for (int k = 0; k < t->o.ensemble && go && !st && !*interrupted; k++) {
        if (k > 0 && ((st = pc_tr_ens_next(t, k, &go, err)) || !go)) break;
        int stopped = 0;
        if ((st = train_model(t, &stopped, err)) || (st = pc_tr_ens_keep(t, k, err))) break;
        int stop = (t->o.stop_flag && *t->o.stop_flag) ||
                   (t->o.stop_after_steps > 0 && t->clock.steps_run >= t->o.stop_after_steps);
        *interrupted = pc_dist_any(t->topo.dist, stop); /* ranks stop together */
    }
    return st ? st : pc_tr_ens_finish(t, err);
}

/* After the epochs: the state kept or removed, the model written. */
static pc_status finish(trainer *t, int interrupted, pc_error *err) {
    tr_state *s = &t->state;
    pc_status st;
    if (interrupted) {
        if ((st = pc_tr_save_state(t, err))) return st;
        pc_tr_logf(t->log, t->user, "state saved to %s; continue with pc_train_opts.resume",
                   t->state_path);
    } else {
        if (t->topo.R == 0) remove(t->state_path);
    }
    if (s->best_epoch > 0 && (st = pc_tr_save_best(t, err))) return st; /* final epochs_run */
    if (s->best_epoch > 0)
        pc_tr_logf(t->log, t->user, "wrote %s (best epoch %d, valid %s %.6f)", t->o.out_path,
                   s->best_epoch, t->kind == PC_KIND_TILE ? "tile score" : "kendall tau",
                   s->best_metric);
    else
        pc_tr_logf(t->log, t->user, "no epoch completed: %s not written", t->o.out_path);
    return PC_OK;
}

static void log_start(const trainer *t) {
    const tr_state *s = &t->state;
    pc_tr_logf(t->log, t->user, "%s: %zu train, %zu valid graphs; %zu parameters; node "
               "features %d, config features %d%s", t->o.collection, t->ntrain, t->nvalid,
               t->m->params.numel, t->m->feat_dim, t->m->cfg_dim,
               t->o.resume ? "; resumed" : "");
    if (t->o.resume)
        pc_tr_logf(t->log, t->user, "resuming at epoch %d, step %zu of %zu (best %.6f at "
                   "epoch %d)", s->epoch + (s->oi >= t->topo.S), s->oi < t->topo.S ? s->oi : 0,
                   t->topo.S, s->best_metric, s->best_epoch);
}

static void fill_result(const trainer *t, int interrupted, pc_train_result *res) {
    memset(res, 0, sizeof *res);
    res->struct_size = sizeof *res;
    res->epochs_run = t->state.epochs_done;
    res->best_epoch = t->state.best_epoch;
    res->best_metric = t->state.best_metric;
    res->first_loss = t->state.first_loss;
    res->last_loss = t->state.last_loss;
    res->interrupted = interrupted;
}

/*
 * One training per output: rank 0 holds "<dir>/.<base>.lock" (flock) while
 * it writes the model and its state, so a second run on the same --out
 * fails at once instead of both reporting success over each other's files.
 */
static pc_status lock_output(trainer *t, pc_error *err) {
    if (t->topo.R != 0) return PC_OK;
    const char *out = t->o.out_path, *slash = strrchr(out, '/');
    int dl = slash ? (int)(slash - out + 1) : 0;
    if (snprintf(t->lock_path, sizeof t->lock_path, "%.*s.%s.lock", dl, out,
                 slash ? slash + 1 : out) >= (int)sizeof t->lock_path)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.out_path is too long");
    pc_status st = pc_lock_acquire(t->lock_path, out, &t->lock_fd, err);
    if (st) t->lock_path[0] = 0;
    if (st) pc_error_prefix(err, "train: pc_train_opts.out_path");
    return st;
}

pc_status pc_train_run(const pc_train_opts *opts, pc_train_log_fn log,
                       pc_train_progress_fn progress, void *user, pc_train_result *res,
                       pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!opts) return pc_fail(err, PC_ERR_ARG, "train: no options");
    pc_status st = PC_CHECK_SIZE(err, pc_train_opts, opts);
    if (!st && res) st = PC_CHECK_RESULT_SIZE(err, pc_train_result, res);
    if (st) return st;
    trainer *t = calloc(1, sizeof *t);
    if (!t) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    t->o = *opts;
    t->log = log;
    t->progress = progress;
    t->user = user;
    t->lock_fd = -1;
    int interrupted = 0, saved = pc_threads_begin(opts->threads);
    st = pc_tr_check_opts(t, err);
    if (!st) init_topology(t);
    if (!st) st = lock_output(t, err);
    if (!st) {
        pc_nn_blas_single();
        t->clock.t0 = pc_tr_now();
        st = setup(t, err);
    }
    if (!st) {
        log_start(t);
        t->clock.t_steps0 = pc_tr_now();
        if (t->o.ensemble > 1) st = train_ensemble(t, &interrupted, err);
        else if (!(st = train_model(t, &interrupted, err))) st = finish(t, interrupted, err);
    }
    if (!st && res) fill_result(t, interrupted, res);
    /* an error on some ranks only returns there; the caller ends the job (dist.h) */
    pc_lock_release(t->lock_fd, t->lock_path);
    trainer_free(t);
    free(t);
    pc_threads_end(saved);
    return st;
}
