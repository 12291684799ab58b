/*
 * Evaluation (src/gnn/eval.h): the metrics of a graph's scores, and
 * pc_eval_run, `perfcast eval` over a split.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "gnn/checkpoint.h"
#include "gnn/eval.h"
#include "perfcast/predict.h"

void pc_eval_sum_init(pc_eval_sum *e) {
    memset(e, 0, sizeof *e);
    pc_metric_mean_init(&e->metric);
    pc_metric_mean_init(&e->tau);
    pc_metric_mean_init(&e->opa);
    for (int k = 0; k < 3; k++) pc_metric_mean_init(&e->sd[k]);
}

/* Sums of a pc_metric_mean over ranks. */
static void mean_pack(const pc_metric_mean *m, double *v) {
    v[0] = m->sum, v[1] = (double)m->count, v[2] = (double)m->nan_count;
}
static void mean_unpack(pc_metric_mean *m, const double *v) {
    m->sum = v[0], m->count = (uint64_t)v[1], m->nan_count = (uint64_t)v[2];
}

void pc_eval_sum_reduce(const pc_dist *d, pc_eval_sum *e) {
    if (pc_dist_size(d) <= 1) return;
    pc_metric_mean *ms[6] = {&e->metric, &e->tau, &e->opa, &e->sd[0], &e->sd[1], &e->sd[2]};
    double v[19];
    for (int i = 0; i < 6; i++) mean_pack(ms[i], v + 3 * i);
    v[18] = e->graphs;
    pc_dist_sum_f64(d, v, 19);
    for (int i = 0; i < 6; i++) mean_unpack(ms[i], v + 3 * i);
    e->graphs = (int)v[18];
}

pc_status pc_eval_graph(const pc_gnn *m, pc_gnn_ws *ws, pc_split_graph *t, pc_infer_scratch *x,
                        pc_eval_sum *e, pc_error *err) {
    double v[PC_EVAL_NVALUES];
    int scored;
    return pc_eval_graph_values(m, ws, t, x, e, v, &scored, err);
}

pc_status pc_eval_graph_values(const pc_gnn *m, pc_gnn_ws *ws, pc_split_graph *t,
                               pc_infer_scratch *x, pc_eval_sum *e, double v[PC_EVAL_NVALUES],
                               int *scored, pc_error *err) {
    static const size_t ks[3] = {1, 5, 10};
    pc_graph *g = t->g;
    const double *rt = t->rt, *norm = t->norm;
    int64_t nc = pc_graph_num_configs(g);
    *scored = 0;
    if (nc < 1) return PC_OK;
    pc_status st = pc_infer_all(m, ws, g, &t->d, t->gst, &t->uniq, x, NULL, err);
    if (st) return st;
    size_t c = (size_t)nc;
    double w[PC_EVAL_NVALUES];
    for (int k = 0; k < PC_EVAL_NVALUES; k++) w[k] = NAN;
    if ((st = pc_kendall_tau_b(x->pred, rt, c, &w[PC_EVAL_TAU], err)) ||
        (st = pc_ordered_pair_accuracy(x->pred, rt, c, &w[PC_EVAL_OPA], err)))
        goto fail;
    if (m->opts.kind == PC_KIND_TILE) {
        if ((st = pc_tile_score(x->pred, rt, norm, c, &w[PC_EVAL_METRIC], err))) goto fail;
        for (int k = 0; k < 3; k++)
            if ((st = pc_topk_slowdown(x->pred, rt, norm, c, ks[k], &w[PC_EVAL_SD1 + k], err)))
                goto fail;
    } else {
        w[PC_EVAL_METRIC] = w[PC_EVAL_TAU];
    }
    pc_metric_mean_add(&e->tau, w[PC_EVAL_TAU]);
    pc_metric_mean_add(&e->opa, w[PC_EVAL_OPA]);
    pc_metric_mean_add(&e->metric, w[PC_EVAL_METRIC]);
    if (m->opts.kind == PC_KIND_TILE)
        for (int k = 0; k < 3; k++) pc_metric_mean_add(&e->sd[k], w[PC_EVAL_SD1 + k]);
    e->graphs++;
    memcpy(v, w, sizeof w);
    *scored = 1;
    return PC_OK;
fail:
    pc_error_prefix(err, "%s: ", pc_graph_path(g));
    return st;
}

/* ---- evaluation of a checkpoint (perfcast eval) -------------------------------- */

/* Metrics need measured runtimes; test splits carry zeros. Refuse up front. */
static pc_status require_runtimes(const pc_split_graphs *s, pc_error *err) {
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

/*
 * Every graph's values, by its index in the split (so the intervals do not
 * depend on how graphs were shared over ranks): val[gi * PC_EVAL_NVALUES + k]
 * and have[...] = 1 where graph gi has a finite value k. A seed ensemble's
 * members' own metrics too: mval[gi * members + j], mhave[...].
 */
typedef struct eval_values {
    size_t n;       /* graphs in the split */
    size_t members; /* 1 + the ensemble's further members */
    double *val, *have, *mval, *mhave;
} eval_values;

static pc_status eval_values_new(eval_values *t, size_t n, size_t members, pc_error *err) {
    t->n = n;
    t->members = members;
    size_t len = (n ? n : 1) * PC_EVAL_NVALUES, mlen = (n ? n : 1) * members;
    t->val = calloc(len, sizeof *t->val);
    t->have = calloc(len, sizeof *t->have);
    t->mval = calloc(mlen, sizeof *t->mval);
    t->mhave = calloc(mlen, sizeof *t->mhave);
    if (!t->val || !t->have || !t->mval || !t->mhave)
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    return PC_OK;
}

static void eval_values_set(eval_values *t, size_t gi, const double *v) {
    for (int k = 0; k < PC_EVAL_NVALUES && gi < t->n; k++) {
        int ok = isfinite(v[k]);
        t->val[gi * PC_EVAL_NVALUES + k] = ok ? v[k] : 0;
        t->have[gi * PC_EVAL_NVALUES + k] = ok;
    }
}

/*
 * The headline metric of each member of m's ensemble on graph t alone, from
 * the members' scores pc_infer_all left in x->ens (centered, which leaves
 * rank metrics as they are), into row gi of the table.
 */
static pc_status eval_members_set(const pc_gnn *m, const pc_split_graph *t, const pc_infer_scratch *x,
                                  eval_values *tv, pc_error *err) {
    size_t c = (size_t)pc_graph_num_configs(t->g), N = tv->members, gi = t->gi;
    if (N < 2 || c < 1 || gi >= tv->n) return PC_OK;
    for (size_t j = 0; j < N; j++) {
        const double *s = x->ens + j * c;
        double v = NAN;
        pc_status st = m->opts.kind == PC_KIND_TILE ? pc_tile_score(s, t->rt, t->norm, c, &v, err)
                                                    : pc_kendall_tau_b(s, t->rt, c, &v, err);
        if (st) return st;
        tv->mval[gi * N + j] = isfinite(v) ? v : 0;
        tv->mhave[gi * N + j] = isfinite(v);
    }
    return PC_OK;
}

/* Each rank holds its graphs' values, zeros elsewhere: every rank gets all of them. */
static void eval_values_reduce(const pc_dist *d, eval_values *t) {
    if (pc_dist_size(d) <= 1) return;
    pc_dist_sum_f64(d, t->val, t->n * PC_EVAL_NVALUES);
    pc_dist_sum_f64(d, t->have, t->n * PC_EVAL_NVALUES);
    pc_dist_sum_f64(d, t->mval, t->n * t->members);
    pc_dist_sum_f64(d, t->mhave, t->n * t->members);
}

static void eval_values_free(eval_values *t) {
    free(t->val);
    free(t->have);
    free(t->mval);
    free(t->mhave);
}

/*
 * The bootstrap interval over graphs of the mean of value k (the graphs
 * where it is defined), into ci[0..1]; NaN when no graph has it.
 */
static pc_status interval_over_graphs(const eval_values *t, int k, double *buf, double ci[2],
                                      pc_error *err) {
    size_t m = 0;
    for (size_t g = 0; g < t->n; g++)
        if (t->have[g * PC_EVAL_NVALUES + k]) buf[m++] = t->val[g * PC_EVAL_NVALUES + k];
    return pc_bootstrap_mean_ci(buf, m, PC_BOOTSTRAP_RESAMPLES, PC_BOOTSTRAP_SEED,
                                PC_BOOTSTRAP_LEVEL, &ci[0], &ci[1], err);
}

/*
 * The members' statistics of res (perfcast/predict.h): each member's mean
 * over the graphs where it is defined, their mean and spread, and the
 * two-way interval over the graphs where every member's metric is defined.
 */
static pc_status eval_member_stats(const eval_values *t, pc_eval_result *res, pc_error *err) {
    size_t N = t->members, rows = 0;
    res->members = (int)N;
    res->member_metric_mean = res->member_metric_std = NAN;
    res->member_metric_ci[0] = res->member_metric_ci[1] = NAN;
    if (N < 2) return PC_OK;
    double *table = malloc((t->n ? t->n : 1) * N * sizeof *table), *means = malloc(N * sizeof *means);
    if (!table || !means) {
        free(table), free(means);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    for (size_t j = 0; j < N; j++) {
        pc_metric_mean mm;
        pc_metric_mean_init(&mm);
        for (size_t g = 0; g < t->n; g++)
            pc_metric_mean_add(&mm, t->mhave[g * N + j] ? t->mval[g * N + j] : NAN);
        means[j] = pc_metric_mean_value(&mm);
    }
    for (size_t g = 0; g < t->n; g++) {
        size_t j = 0;
        while (j < N && t->mhave[g * N + j]) j++;
        if (j == N) memcpy(table + rows++ * N, t->mval + g * N, N * sizeof *table);
    }
    pc_spread sp;
    pc_status st = pc_spread_compute(means, N, &sp, err);
    if (!st) {
        res->member_metric_mean = sp.mean;
        res->member_metric_std = sp.std;
        st = pc_bootstrap_mean2_ci(table, rows, N, PC_BOOTSTRAP_RESAMPLES, PC_BOOTSTRAP_SEED,
                                   PC_BOOTSTRAP_LEVEL, &res->member_metric_ci[0],
                                   &res->member_metric_ci[1], err);
    }
    free(table);
    free(means);
    return st;
}

/*
 * res's confidence intervals: a percentile bootstrap over graphs of every
 * mean (perfcast/metrics.h, PC_BOOTSTRAP_*), of the ensemble's averaged
 * scores; for an ensemble also the members' own (eval_member_stats).
 */
static pc_status eval_intervals(const eval_values *t, pc_eval_result *res, pc_error *err) {
    double *buf = malloc((t->n ? t->n : 1) * sizeof *buf);
    if (!buf) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    double(*ci[PC_EVAL_NVALUES])[2] = {&res->metric_ci,      &res->tau_ci,
                                       &res->opa_ci,         &res->slowdown_ci[0],
                                       &res->slowdown_ci[1], &res->slowdown_ci[2]};
    pc_status st = PC_OK;
    for (int k = 0; k < PC_EVAL_NVALUES && !st; k++)
        st = interval_over_graphs(t, k, buf, *ci[k], err);
    free(buf);
    res->ci_level = PC_BOOTSTRAP_LEVEL;
    res->ci_resamples = PC_BOOTSTRAP_RESAMPLES;
    return st ? st : eval_member_stats(t, res, err);
}

pc_status pc_eval_run(const char *model_path, const char *data_dir, const char *split,
                      int threads, pc_eval_result *res, pc_error *err) {
    return pc_eval_run_dist(model_path, data_dir, split, threads, NULL, res, err);
}

/* Evaluates the checkpoint at model_path, or the loaded model `given` of collection coll. */
static pc_status eval_run(const char *model_path, const pc_gnn *given, int coll,
                          const char *data_dir, int sp, int threads, uint64_t max_memory,
                          const pc_dist *dist, const pc_split_progress *pr, pc_eval_result *res,
                          pc_error *err) {
    pc_gnn *own = NULL;
    const pc_gnn *m = given;
    pc_dataset *ds = NULL;
    pc_gnn_ws *ws = NULL;
    pc_split_graphs s = {0};
    pc_infer_scratch x;
    memset(&x, 0, sizeof x);
    pc_status st = given ? PC_OK : pc_ckpt_load(model_path, max_memory, &own, &coll, err);
    if (!given) m = own;
    if (!st) st = pc_dataset_open(data_dir, &ds, err);
    int W = pc_dist_size(dist), R = pc_dist_rank(dist);
    if (!st)
        st = pc_split_graphs_load(ds, coll, sp, threads, (size_t)W, (size_t)R, (size_t)R + 1,
                                  max_memory, &s, pr, err);
    if (!st && pc_dataset_num_files(ds, coll, sp) == 0)
        st = pc_fail(err, PC_ERR_NOTFOUND, "eval: no %s graphs of %s under %s", pc_split_name(sp),
                     pc_collection_name(coll), data_dir);
    if (!st) st = require_runtimes(&s, err);
    if (!st) st = pc_split_graphs_build(m, &s, 0, err);
    if (!st && !(ws = pc_gnn_ws_new())) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pc_eval_sum e;
    pc_eval_sum_init(&e);
    eval_values t = {0, 0, NULL, NULL, NULL, NULL};
    if (!st)
        st = eval_values_new(&t, pc_dataset_num_files(ds, coll, sp), 1 + (size_t)m->n_members,
                             err);
    for (size_t i = 0; i < s.n && !st; i++) {
        double v[PC_EVAL_NVALUES];
        int scored;
        st = pc_eval_graph_values(m, ws, &s.v[i], &x, &e, v, &scored, err);
        if (!st && scored) eval_values_set(&t, s.v[i].gi, v);
        if (!st && scored) st = eval_members_set(m, &s.v[i], &x, &t, err);
        if (!st && pr && pr->fn) pr->fn(pr->user, "graphs scored", (int64_t)i + 1, (int64_t)s.n);
    }
    if (!st) pc_eval_sum_reduce(dist, &e);
    if (!st) eval_values_reduce(dist, &t);
    if (!st) {
        memset(res, 0, sizeof *res);
        res->struct_size = sizeof *res;
        res->collection = coll;
        res->tile = m->opts.kind == PC_KIND_TILE;
        res->graphs = e.graphs;
        res->metric = pc_metric_mean_value(&e.metric);
        res->tau = pc_metric_mean_value(&e.tau);
        res->opa = pc_metric_mean_value(&e.opa);
        for (int k = 0; k < 3; k++) res->slowdown[k] = pc_metric_mean_value(&e.sd[k]);
        st = eval_intervals(&t, res, err);
    }
    eval_values_free(&t);
    pc_infer_scratch_free(&x);
    pc_gnn_ws_free(ws);
    pc_split_graphs_free(&s);
    pc_dataset_close(ds);
    pc_gnn_free(own);
    return st;
}

pc_status pc_eval_run_dist(const char *model_path, const char *data_dir, const char *split,
                           int threads, const pc_dist *dist, pc_eval_result *res, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (res && PC_CHECK_RESULT_SIZE(err, pc_eval_result, res)) return PC_ERR_ARG;
    int sp = pc_split_find(split ? split : "valid");
    if (sp < 0) return pc_fail(err, PC_ERR_ARG, "eval: unknown split '%s'", split);
    int saved = pc_threads_begin(threads);
    pc_nn_blas_single();
    /* an error on some ranks only returns there; the caller ends the job (dist.h) */
    pc_status st = eval_run(model_path, NULL, -1, data_dir, sp, threads, PC_MEMORY_AUTO, dist,
                            NULL, res, err);
    pc_threads_end(saved);
    return st;
}

pc_status pc_eval_model(const pc_gnn *m, int coll, const char *data_dir, const char *split,
                        int threads, uint64_t max_memory, const pc_dist *dist,
                        pc_progress_fn progress, void *progress_user, pc_eval_result *res,
                        pc_error *err) {
    if (res && PC_CHECK_RESULT_SIZE(err, pc_eval_result, res)) return PC_ERR_ARG;
    int sp = pc_split_find(split ? split : "valid");
    if (sp < 0) return pc_fail(err, PC_ERR_ARG, "eval: unknown split '%s'", split);
    int saved = pc_threads_begin(threads);
    pc_split_progress pr = {progress, progress_user, "graphs loaded"};
    pc_status st =
        eval_run(NULL, m, coll, data_dir, sp, threads, max_memory, dist, &pr, res, err);
    pc_threads_end(saved);
    return st;
}
