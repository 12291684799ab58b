/*
 * perfcast train: the resume state. After every epoch and when training
 * stops early, MODEL.state holds the parameters, the AdamW moments, the best
 * parameters, every lane's order and the scalars of tr_state (JSON), so that
 * --resume ends with the same bytes as an uninterrupted run; the options that
 * must not change are recorded with it. Also the writes of the best model.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "train/train_internal.h"

void pc_tr_state_init(trainer *t) {
    tr_state *r = &t->state;
    r->rng = t->o.seed ^ 0x5eedf00dULL;
    r->epoch = 1;
    r->oi = t->topo.S; /* no epoch started */
    r->best_metric = -INFINITY;
    r->first_loss = r->last_loss = r->last_valid = NAN;
}

/*
 * The options that must not change across --resume, as "key=value|...": each
 * one alters the trajectory (the data by content, pc_tr_load_data's data_id,
 * not by path). A mismatch names the first key that differs.
 */
void pc_tr_fixed_string(const trainer *t, char *s, size_t cap) {
    const pc_train_opts *o = &t->o;
    snprintf(s, cap,
             "collection=%s|data=%016llx|seed=%llu|configs=%d|lr=%.9g|weight_decay=%.9g|"
             "clip=%.9g|loss=%s|sampling=%s|dedup=%d|gst_train_segs=%d|gst_keep=%.9g|"
             "batch_graphs=%d|train_graphs=%zu|valid_graphs=%zu|lanes=%zu",
             o->collection, (unsigned long long)t->data_id, (unsigned long long)o->seed,
             o->configs, (double)o->lr, (double)o->weight_decay, (double)o->clip, t->loss_desc,
             t->fast ? "fast" : "uniform", o->dedup, o->gst_train_segs, (double)o->gst_keep,
             o->batch_graphs, t->ntrain, t->nvalid, t->topo.G);
}

/* The JSON of the resumable scalars, and the options that must not change. */
static char *state_json(const trainer *t) {
    const tr_state *r = &t->state;
    char *s = malloc(4096), fixed[2048];
    if (!s) return NULL;
    pc_tr_fixed_string(t, fixed, sizeof fixed);
    /* the budget's estimate (trainer.budget_len runs only, so other states keep their bytes) */
    char est[64] = "";
    if (t->budget_len)
        snprintf(est, sizeof est, "\"epochs_est\":%d,\"total_est\":%ld,", r->epochs_est,
                 r->total_est);
    snprintf(s, 4096,
             "{%s\"rng\":\"%llu\",\"step\":%ld,\"epoch\":%d,\"oi\":%zu,\"best_epoch\":%d,"
             "\"since\":%d,\"best_metric\":%.17g,\"first_loss\":%.17g,\"lsum\":%.17g,"
             "\"lcount\":%zu,\"last_valid\":%.17g,\"fixed\":\"%s\"}",
             est, (unsigned long long)r->rng, r->step, r->epoch, r->oi, r->best_epoch, r->since,
             isfinite(r->best_metric) ? r->best_metric : -1e308,
             isfinite(r->first_loss) ? r->first_loss : -1.0, r->lsum, r->lcount,
             isfinite(r->last_valid) ? r->last_valid : -1e308, fixed);
    return s;
}

pc_ckpt_info pc_tr_ckpt_info(const trainer *t) {
    pc_ckpt_info info;
    memset(&info, 0, sizeof info);
    info.collection = t->coll;
    info.train = &t->o;
    info.configs = t->o.configs;
    info.best_epoch = t->state.best_epoch;
    info.epochs_run = t->state.epochs_done;
    info.best_metric = t->state.best_metric;
    info.loss = t->loss_desc;
    info.sampling = t->fast ? "fast" : "uniform";
    info.ntrain = t->ntrain;
    info.nvalid = t->nvalid;
    info.data_id = t->data_id;
    info.dedup = t->o.dedup;
    return info;
}

pc_status pc_tr_save_state(trainer *t, pc_error *err) {
    if (t->topo.R != 0 || t->ens.n > 1) return PC_OK; /* rank 0 writes; ensembles at the end */
    pc_ckpt_info info = pc_tr_ckpt_info(t);
    char *js = state_json(t);
    if (!js) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    info.adam_m = t->m->params.m;
    info.adam_v = t->m->params.v;
    info.best = t->state.best;
    info.order = t->state.order;
    info.norder = (int64_t)t->ntrain;
    info.state_json = js;
    pc_status st = pc_ckpt_save(t->m, &info, t->state_path, err);
    free(js);
    return st;
}

/* Writes the best parameters as the model, keeping the current ones. */
pc_status pc_tr_save_best(trainer *t, pc_error *err) {
    if (t->topo.R != 0 || t->ens.n > 1) return PC_OK; /* rank 0 writes; ensembles at the end */
    size_t n = t->m->params.numel;
    float *cur = malloc(n * sizeof(float));
    if (!cur) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    memcpy(cur, t->m->params.data, n * sizeof(float));
    memcpy(t->m->params.data, t->state.best, n * sizeof(float));
    pc_ckpt_info info = pc_tr_ckpt_info(t);
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

/*
 * The state's model a against the one these options make (b): every field
 * that shapes the model or what it reads, the first difference named.
 */
static pc_status same_architecture(const pc_gnn_opts *a, const pc_gnn_opts *b, const char *path,
                                   pc_error *err) {
    const struct {
        const char *field;
        double was, now;
    } f[] = {
        {"hidden", a->hidden, b->hidden},
        {"layers", a->layers, b->layers},
        {"emb_dim", a->emb_dim, b->emb_dim},
        {"pool", a->pool, b->pool},
        {"join", a->join, b->join},
        {"act", a->act, b->act},
        {"layernorm", a->layernorm, b->layernorm},
        {"dropout", a->dropout, b->dropout},
        {"encode", a->encode, b->encode},
        {"attn_heads", a->attn_heads, b->attn_heads},
        {"attn_group (cfg attention group)", a->attn_heads ? a->attn_group : 0,
         b->attn_heads ? b->attn_group : 0},
        {"prune_hops", a->prune_hops, b->prune_hops},
        {"collapse_chains", a->collapse_chains, b->collapse_chains},
        {"gst", a->gst, b->gst},
        {"seg_method", a->gst ? a->seg_method : 0, b->gst ? b->seg_method : 0},
        {"seg_size", a->gst ? a->seg_size : 0, b->gst ? b->seg_size : 0},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].was != f[i].now)
            return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.resume: %s was made with "
                           "pc_train_opts.%s = %g, these options give %g; resuming needs the "
                           "same architecture", path, f[i].field, f[i].was, f[i].now);
    return PC_OK;
}

/*
 * The model, AdamW moments, best parameters and order of out_path.state,
 * refused when made for another collection or architecture; *js receives the
 * state's JSON.
 */
static pc_status load_state_arrays(trainer *t, char **js, pc_error *err) {
    int coll = -1;
    if (access(t->state_path, F_OK) != 0)
        return pc_fail(err, PC_ERR_NOTFOUND, "train: pc_train_opts.resume: no state to resume "
                       "from: %s cannot be opened (it is written after each epoch and when training "
                       "stops early, and removed when training completes)", t->state_path);
    const uint64_t budget =
        t->o.max_memory_gib > 0 ? (uint64_t)(t->o.max_memory_gib * 1073741824.0) : PC_MEMORY_AUTO;
    pc_status st = pc_ckpt_load(t->state_path, budget, &t->m, &coll, err);
    if (st) return st;
    pc_gnn_opts mo;
    if ((st = pc_tr_model_opts(t, &mo, err))) return st;
    if (coll != t->coll)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.resume: %s was made for %s, not "
                       "pc_train_opts.collection %s", t->state_path, pc_collection_name(coll),
                       t->o.collection);
    if ((st = same_architecture(&t->m->opts, &mo, t->state_path, err))) return st;
    tr_state *r = &t->state;
    size_t n = t->m->params.numel;
    r->best = malloc(n * sizeof(float));
    r->order = malloc((t->ntrain ? t->ntrain : 1) * sizeof *r->order);
    if (!r->best || !r->order) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    return pc_ckpt_load_state(t->state_path, t->m, r->best, r->order, (int64_t)t->ntrain, js,
                              err);
}

/* The scalars of tr_state from v[] (in the order of state_json's keys) and rng. */
static pc_status restore_scalars(trainer *t, const char *rng, const double *v, pc_error *err) {
    tr_state *r = &t->state;
    static const char *const keys[10] = {"step", "epoch", "oi", "best_epoch", "since",
                                         "best_metric", "first_loss", "lsum", "lcount",
                                         "last_valid"};
    /* every scalar in its range before it is used (the file's checksum guards the bytes,
       this the values of a state written by hand or by another version) */
    const double lo[10] = {0, 1, 0, 0, 0, -1e308, -1, -1e300, 0, -1e308};
    const double hi[10] = {9e15, PC_TRAIN_MAX_EPOCHS, (double)t->topo.S, v[1], v[1], 1e300,
                           1e300, 1e300, 9e15, 1e300};
    for (int i = 0; i < 10; i++)
        if (!(v[i] >= lo[i] && v[i] <= hi[i]) || (i != 5 && i != 6 && i != 7 && i != 9 &&
                                                   v[i] != floor(v[i])))
            return pc_fail(err, PC_ERR_FORMAT, "%s: training state field '%s' = %g is out of "
                           "range (expected %s in [%g, %g])", t->state_path, keys[i], v[i],
                           i == 5 || i == 6 || i == 7 || i == 9 ? "a number" : "an integer",
                           lo[i], hi[i]);
    char *end = NULL;
    if (strspn(rng, "0123456789") != strlen(rng) || !*rng)
        return pc_fail(err, PC_ERR_FORMAT, "%s: training state field 'rng' = '%s', expected "
                       "decimal digits", t->state_path, rng);
    r->rng = strtoull(rng, &end, 10);
    r->step = (long)v[0];
    r->epoch = (int)v[1];
    r->oi = (size_t)v[2];
    r->best_epoch = (int)v[3];
    r->since = (int)v[4];
    r->best_metric = v[5] <= -1e307 ? -INFINITY : v[5];
    r->first_loss = v[6] < 0 ? NAN : v[6];
    r->lsum = v[7];
    r->lcount = (size_t)v[8];
    r->last_valid = v[9] <= -1e307 ? NAN : v[9];
    // a state written at an epoch's end continues with the next epoch
    r->epochs_done = r->oi >= t->topo.S ? r->epoch : r->epoch - 1;
    if (r->oi >= t->topo.S) r->epoch++;
    /* each lane's order a permutation of that lane's graphs (lane l holds i % G == l) */
    unsigned char *seen = calloc(t->ntrain ? t->ntrain : 1, 1);
    if (!seen) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    size_t bad = t->ntrain;
    for (size_t l = 0; l < t->topo.G && bad == t->ntrain; l++)
        for (size_t k = t->topo.lane_off[l]; k < t->topo.lane_off[l + 1]; k++) {
            int64_t g = r->order[k];
            if (g < 0 || (size_t)g >= t->ntrain || seen[g] || (size_t)g % t->topo.G != l) {
                bad = k;
                break;
            }
            seen[g] = 1;
        }
    free(seen);
    if (bad < t->ntrain)
        return pc_fail(err, PC_ERR_FORMAT, "%s: training state tensor 'order'[%zu] = %lld is "
                       "not part of a permutation of its lane's train graphs", t->state_path, bad,
                       (long long)r->order[bad]);
    return PC_OK;
}

/* The first "key=value" of was and now that differ, named. */
static pc_status fixed_mismatch(const char *path, const char *was, const char *now,
                                pc_error *err) {
    if (!strchr(was, '='))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "train: pc_train_opts.resume: %s was written by "
                       "an older perfcast; it cannot be resumed (start afresh)", path);
    const char *a = was, *b = now;
    while (*a && *b) {
        size_t la = strcspn(a, "|"), lb = strcspn(b, "|");
        if (la != lb || memcmp(a, b, la)) {
            size_t k = strcspn(a, "=");
            return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.resume: the run in %s used "
                           "%.*s, these options give %.*s; resuming needs the same data and "
                           "options (%.*s)", path, (int)la, a, (int)lb, b, (int)(k < la ? k : la),
                           a);
        }
        a += la + (a[la] == '|');
        b += lb + (b[lb] == '|');
    }
    return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.resume: the run in %s used other "
                   "options: '%s', now '%s'", path, was, now);
}

pc_status pc_tr_resume(trainer *t, pc_error *err) {
    char *js = NULL;
    pc_status st = load_state_arrays(t, &js, err);
    if (st) {
        free(js);
        return st;
    }
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
    if (bad)
        st = pc_fail(err, PC_ERR_FORMAT, "%s: malformed training state", t->state_path);
    else if (strcmp(fx->valuestring, fx2->valuestring))
        st = fixed_mismatch(t->state_path, fx->valuestring, fx2->valuestring, err);
    else
        st = restore_scalars(t, rng->valuestring, v, err);
    double est[2];
    if (!st && t->budget_len && !jnum(root, "epochs_est", &est[0]) &&
        !jnum(root, "total_est", &est[1]) && est[0] >= 0 && est[0] <= PC_TRAIN_MAX_EPOCHS &&
        est[1] >= 0 && est[1] <= 9e15) {
        t->state.epochs_est = (int)est[0];
        t->state.total_est = (long)est[1];
    }
    cJSON_Delete(root);
    cJSON_Delete(me);
    free(mine);
    free(js);
    return st;
}
