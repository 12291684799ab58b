/* perfcast train / eval: the training loop and the evaluation of checkpoints. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "perfcast/dataset.h"
#include "perfcast/metrics.h"
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
    }
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* Loads the graphs (no gdata yet). */
static pc_status tset_load(const pc_dataset *d, int coll, int split, int threads, tset *s,
                           pc_error *err) {
    size_t n = pc_dataset_num_files(d, coll, split);
    s->n = 0;
    s->v = calloc(n ? n : 1, sizeof *s->v);
    if (!s->v) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    pc_load_opts lo = pc_load_opts_default();
    lo.kind = pc_collection_kind(coll);
    lo.threads = threads;
    for (size_t i = 0; i < n; i++) {
        tgraph *t = &s->v[i];
        pc_status st = pc_graph_load(pc_dataset_file(d, coll, split, i), &lo, &t->g, err);
        if (st) return st;
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

static pc_status tset_build(const pc_model *m, tset *s, pc_error *err) {
    for (size_t i = 0; i < s->n; i++) {
        pc_status st = pc_model_gdata_build(m, s->v[i].g, &s->v[i].d, err);
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
        pc_model_prep_configs(m, x->raw.p, K, x->cfg.p);
        return PC_OK;
    }
    size_t nc = (size_t)pc_graph_num_config_nodes(t->g);
    size_t rows = (size_t)K * nc;
    if (!fgrow(&x->raw, rows * PC_LAYOUT_CONFIG_DIM + 1) ||
        !fgrow(&x->cfg, rows * (size_t)m->cfg_dim + 1))
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    pc_status st = pc_graph_config_feat_gather(t->g, ids, K, x->raw.p, err);
    if (st) return st;
    pc_model_prep_configs(m, x->raw.p, (int64_t)rows, x->cfg.p);
    return PC_OK;
}

/* Predicted scores of every config of t into x->pred (chunks over a shared prefix). */
static pc_status predict_all(const pc_model *m, pc_model_ws *ws, tgraph *t, scratch *x,
                             pc_error *err) {
    if (!scratch_ids(x, (size_t)t->c + 1)) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pc_status st = pc_model_prefix(m, ws, &t->d.g, err);
    if (st) return st;
    /* about (10 + 4L) * H floats per node and config; keep a chunk near 256 MiB */
    double per = (double)(t->d.g.n + 1) * m->opts.hidden * (10 + 4 * m->opts.layers) * 4.0;
    int64_t chunk = (int64_t)(268435456.0 / per);
    if (chunk < 1) chunk = 1;
    if (chunk > 256) chunk = 256;
    if (!fgrow(&x->s, (size_t)chunk)) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int64_t c0 = 0; c0 < t->c; c0 += chunk) {
        int K = (int)(t->c - c0 < chunk ? t->c - c0 : chunk);
        for (int k = 0; k < K; k++) x->ids[k] = c0 + k;
        if ((st = gather_cfg(m, t, x->ids, K, x, err))) return st;
        if ((st = pc_model_score_configs(m, ws, x->cfg.p, K, x->s.p, err))) return st;
        for (int k = 0; k < K; k++) x->pred[c0 + k] = (double)x->s.p[k];
    }
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
    if (!st) st = predict_all(m, ws, &t, &x, err);
    if (!st) memcpy(scores, x.pred, (size_t)t.c * sizeof(double));
    else pc_error_prefix(err, "%s: ", pc_graph_path(g));
    pc_model_gdata_free(&t.d);
    scratch_free(&x);
    return st;
}

typedef struct evsum {
    pc_metric_mean metric, tau, opa, sd[3];
    int graphs;
} evsum;

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

static pc_status fit_prep(tset *s, pc_kind kind, pc_prep *np, pc_prep *cp, pc_error *err) {
    pc_prep_acc an = {0}, ac = {0};
    int cdim = kind == PC_KIND_TILE ? PC_TILE_CONFIG_DIM : PC_LAYOUT_CONFIG_DIM;
    pc_status st = pc_prep_acc_init(&an, PC_NODE_FEAT_DIM, PC_PREP_LOG_THRESHOLD, err);
    if (!st) st = pc_prep_acc_init(&ac, cdim, PC_PREP_LOG_THRESHOLD, err);
    float *buf = NULL;
    for (size_t i = 0; i < s->n && !st; i++) {
        tgraph *t = &s->v[i];
        if (pc_graph_node_feat_dim(t->g) != PC_NODE_FEAT_DIM ||
            pc_graph_config_dim(t->g) != cdim) {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: feature widths differ from %d / %d",
                         pc_graph_path(t->g), PC_NODE_FEAT_DIM, cdim);
            break;
        }
        pc_prep_acc_add(&an, pc_graph_node_feat(t->g), pc_graph_num_nodes(t->g));
        if (kind == PC_KIND_TILE) {
            pc_prep_acc_add(&ac, pc_graph_config_feat(t->g), t->c);
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
            pc_prep_acc_add(&ac, buf, use * nc);
        }
    }
    free(buf);
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

pc_status pc_train_run(const pc_train_opts *opts, pc_train_log_fn log, void *user,
                       pc_train_result *res, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    pc_train_opts o = *opts;
    if (!o.data_dir || !o.collection || !o.out_path)
        return pc_fail(err, PC_ERR_ARG, "train: data dir, collection and output are required");
    int coll = pc_collection_find(o.collection);
    if (coll < 0) return pc_fail(err, PC_ERR_ARG, "train: unknown collection '%s'", o.collection);
    pc_kind kind = pc_collection_kind(coll);
    if (o.epochs < 1 || o.patience < 1 || o.hidden < 1 || o.layers < 0 || !(o.lr > 0) ||
        o.configs < 0 || o.time_budget < 0 || !(o.clip > 0) || o.weight_decay < 0)
        return pc_fail(err, PC_ERR_ARG, "train: bad option value");
    if (o.configs == 0) o.configs = kind == PC_KIND_TILE ? 32 : 16;
    if (o.configs < 2) return pc_fail(err, PC_ERR_ARG, "train: --configs must be at least 2");
    pc_nn_set_threads(o.threads);
    double t0 = now_s();

    pc_dataset *ds = NULL;
    tset tr = {0}, va = {0};
    pc_prep np = {0}, cp = {0};
    pc_model *m = NULL;
    pc_model_ws *ws = NULL;
    scratch x;
    memset(&x, 0, sizeof x);
    float *best = NULL;
    int64_t *perm = NULL;
    size_t *order = NULL;
    pc_status st = pc_dataset_open(o.data_dir, &ds, err);
    if (st) goto done;
    int s_train = pc_split_find("train"), s_valid = pc_split_find("valid");
    if ((st = tset_load(ds, coll, s_train, o.threads, &tr, err)) ||
        (st = tset_load(ds, coll, s_valid, o.threads, &va, err)))
        goto done;
    if (tr.n == 0 || va.n == 0) {
        st = pc_fail(err, PC_ERR_NOTFOUND, "train: %s has %zu train and %zu valid graphs under "
                     "%s; both splits are needed", o.collection, tr.n, va.n, o.data_dir);
        goto done;
    }
    if ((st = fit_prep(&tr, kind, &np, &cp, err))) goto done;
    pc_model_opts mo = pc_model_opts_default(kind);
    mo.hidden = o.hidden;
    mo.layers = o.layers;
    if ((st = pc_model_new(&mo, np.out_dim, cp.out_dim, o.seed, &m, err)) ||
        (st = pc_model_set_prep(m, &np, &cp, err)) || (st = tset_build(m, &tr, err)) ||
        (st = tset_build(m, &va, err)))
        goto done;
    ws = pc_model_ws_new();
    best = malloc(m->params.numel * sizeof(float));
    order = malloc(tr.n * sizeof *order);
    int64_t maxc = 1;
    for (size_t i = 0; i < tr.n; i++) maxc = tr.v[i].c > maxc ? tr.v[i].c : maxc;
    perm = malloc((size_t)maxc * sizeof *perm);
    if (!ws || !best || !order || !perm || !scratch_ids(&x, (size_t)maxc + 1) ||
        !fgrow(&x.s, (size_t)o.configs) || !fgrow(&x.ds, (size_t)o.configs)) {
        st = pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        goto done;
    }
    logf_(log, user, "%s: %zu train, %zu valid graphs; %zu parameters; node features %d, "
          "config features %d", o.collection, tr.n, va.n, m->params.numel, m->feat_dim,
          m->cfg_dim);

    pc_loss_cfg lc = pc_loss_cfg_default();
    if (kind == PC_KIND_LAYOUT) {
        lc.w_listmle = 0;
        lc.w_hinge = 1;
        lc.w_mse = 0;
        lc.hinge_margin = 0.1f;
        lc.hinge_temperature = 1;
    }
    pc_adam_cfg ac = pc_adam_cfg_default();
    ac.decoupled = 1;
    ac.weight_decay = o.weight_decay;
    long total = (long)o.epochs * (long)tr.n, warmup = total / 10 < (long)tr.n ? total / 10
                                                                             : (long)tr.n;
    if (warmup < 1) warmup = 1;
    uint64_t rng = o.seed ^ 0x5eedf00dULL;
    long step = 0;
    double best_metric = -INFINITY, last_epoch_s = 0;
    int best_epoch = 0, since = 0, epoch;
    double first_loss = NAN, last_loss = NAN;
    int stopped = 0;
    for (epoch = 1; epoch <= o.epochs && !stopped; epoch++) {
        double te = now_s();
        if (o.time_budget > 0 && best_epoch > 0 && te - t0 + last_epoch_s > o.time_budget) {
            logf_(log, user, "time budget: stopping before epoch %d", epoch);
            break;
        }
        for (size_t i = 0; i < tr.n; i++) order[i] = i;
        for (size_t i = tr.n; i > 1; i--) {
            size_t j = (size_t)rand_below(&rng, i), tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
        double lsum = 0;
        size_t lcount = 0;
        for (size_t oi = 0; oi < tr.n; oi++) {
            if (o.time_budget > 0 && now_s() - t0 > o.time_budget) {
                stopped = 1;
                break;
            }
            tgraph *t = &tr.v[order[oi]];
            if (t->c < 2) continue;
            int K = (int)(t->c < o.configs ? t->c : o.configs);
            for (int64_t k = 0; k < t->c; k++) perm[k] = k;
            for (int k = 0; k < K; k++) {
                int64_t j = k + (int64_t)rand_below(&rng, (uint64_t)(t->c - k));
                int64_t tmp = perm[k];
                perm[k] = perm[j];
                perm[j] = tmp;
                x.ids[k] = perm[k];
                x.yk[k] = t->y[perm[k]];
            }
            if ((st = gather_cfg(m, t, x.ids, K, &x, err)) ||
                (st = pc_model_forward(m, ws, &t->d.g, x.cfg.p, K, NULL, x.s.p, err)))
                goto done;
            memset(x.ds.p, 0, (size_t)K * sizeof(float));
            double L = pc_loss_combo(x.ds.p, x.s.p, x.yk, K, &lc, 1.0f, NULL);
            if (!isfinite(L)) {
                st = pc_fail(err, PC_ERR_INVALID, "train: loss is not finite at epoch %d on %s",
                             epoch, pc_graph_path(t->g));
                goto done;
            }
            pc_params_zero_grad(&m->params);
            if ((st = pc_model_backward(m, ws, x.ds.p, err))) goto done;
            pc_clip_grad_norm(m->params.grad, m->params.numel, o.clip);
            float lr = pc_lr_cosine(step, o.lr, o.lr * 0.05f, warmup, total);
            pc_params_adam_step(&m->params, &ac, step + 1, lr);
            step++;
            lsum += L;
            lcount++;
        }
        if (stopped && best_epoch > 0) {
            logf_(log, user, "time budget: stopped during epoch %d", epoch);
            break;
        }
        double mean_loss = lcount ? lsum / (double)lcount : NAN;
        if (epoch == 1) first_loss = mean_loss;
        last_loss = mean_loss;
        evsum e;
        if ((st = evaluate(m, ws, &va, &x, &e, err))) goto done;
        double metric = pc_metric_mean_value(&e.metric);
        if (!isfinite(metric)) metric = -INFINITY;
        if (metric > best_metric || best_epoch == 0) {
            best_metric = metric;
            best_epoch = epoch;
            memcpy(best, m->params.data, m->params.numel * sizeof(float));
            since = 0;
        } else {
            since++;
        }
        last_epoch_s = now_s() - te;
        logf_(log, user, "epoch %d loss %.6f valid %.6f best %.6f (%.2fs)", epoch, mean_loss,
              metric, best_metric, now_s() - t0);
        if (since >= o.patience) {
            logf_(log, user, "early stop: %d epochs without improvement", since);
            epoch++;
            break;
        }
    }
    int epochs_run = epoch - 1;
    memcpy(m->params.data, best, m->params.numel * sizeof(float));
    pc_ckpt_info info = {coll, &o, o.configs, best_epoch, epochs_run, best_metric};
    if ((st = pc_ckpt_save(m, &info, o.out_path, err))) goto done;
    logf_(log, user, "wrote %s (best epoch %d, valid %s %.6f)", o.out_path, best_epoch,
          kind == PC_KIND_TILE ? "tile score" : "kendall tau", best_metric);
    if (res) {
        res->epochs_run = epochs_run;
        res->best_epoch = best_epoch;
        res->best_metric = best_metric;
        res->first_loss = first_loss;
        res->last_loss = last_loss;
    }
done:
    free(best);
    free(order);
    free(perm);
    scratch_free(&x);
    pc_model_ws_free(ws);
    pc_model_free(m);
    pc_prep_free(&np);
    pc_prep_free(&cp);
    tset_free(&tr);
    tset_free(&va);
    pc_dataset_free(ds);
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
    if (!st) st = tset_load(ds, coll, sp, threads, &s, err);
    if (!st && s.n == 0)
        st = pc_fail(err, PC_ERR_NOTFOUND, "eval: no %s graphs of %s under %s", pc_split_name(sp),
                     pc_collection_name(coll), data_dir);
    if (!st) st = require_runtimes(&s, err);
    if (!st) st = tset_build(m, &s, err);
    if (!st && !(ws = pc_model_ws_new())) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    evsum e;
    if (!st) st = evaluate(m, ws, &s, &x, &e, err);
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
