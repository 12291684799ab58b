/* Model checkpoints: parameters and preprocessing as safetensors. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "perfcast/dataset.h"
#include "perfcast/safetensors.h"
#include "model/encode.h"
#include "train/gst.h"
#include "train/train.h"

#define CKPT_FORMAT "perfcast-model"
#define CKPT_VERSION 1

static const char *pool_names[] = {"mean", "max", "sum", "meanmax"};
static const char *join_names[] = {"early", "late"};
static const char *act_names[] = {"leaky_relu", "relu", "gelu"};

static int name_index(const char *const *names, int n, const char *s) {
    for (int i = 0; s && i < n; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

static pc_status add_prep(pc_st_writer *w, const char *which, const pc_prep *p, pc_error *err) {
    char name[64];
    int64_t shape[1] = {p->out_dim};
    pc_status st;
    snprintf(name, sizeof name, "prep.%s.keep", which);
    if ((st = pc_st_writer_add(w, name, PC_DTYPE_I32, 1, shape, p->keep, err))) return st;
    snprintf(name, sizeof name, "prep.%s.logt", which);
    if ((st = pc_st_writer_add(w, name, PC_DTYPE_I32, 1, shape, p->logt, err))) return st;
    snprintf(name, sizeof name, "prep.%s.mean", which);
    if ((st = pc_st_writer_add(w, name, PC_DTYPE_F32, 1, shape, p->mean, err))) return st;
    snprintf(name, sizeof name, "prep.%s.std", which);
    return pc_st_writer_add(w, name, PC_DTYPE_F32, 1, shape, p->std, err);
}

static pc_status add_state(pc_st_writer *w, const pc_model *m, const pc_ckpt_info *info,
                           pc_error *err) {
    int64_t n[1] = {(int64_t)m->params.numel}, no[1] = {info->norder};
    pc_status st = pc_st_writer_add(w, "state.adam_m", PC_DTYPE_F32, 1, n, info->adam_m, err);
    if (!st) st = pc_st_writer_add(w, "state.adam_v", PC_DTYPE_F32, 1, n, info->adam_v, err);
    if (!st) st = pc_st_writer_add(w, "state.best", PC_DTYPE_F32, 1, n, info->best, err);
    if (!st) st = pc_st_writer_add(w, "state.order", PC_DTYPE_I64, 1, no, info->order, err);
    if (!st) st = pc_st_writer_set_meta(w, "perfcast_state", info->state_json, err);
    return st;
}

static char *meta_json(const pc_model *m, const pc_ckpt_info *info) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    const pc_model_opts *o = &m->opts;
    cJSON_AddStringToObject(root, "format", CKPT_FORMAT);
    cJSON_AddNumberToObject(root, "version", CKPT_VERSION);
    cJSON_AddStringToObject(root, "collection", pc_collection_name(info->collection));
    cJSON *a = cJSON_AddObjectToObject(root, "architecture");
    if (a) {
        cJSON_AddStringToObject(a, "kind", pc_kind_name(o->kind));
        cJSON_AddNumberToObject(a, "hidden", o->hidden);
        cJSON_AddNumberToObject(a, "layers", o->layers);
        cJSON_AddNumberToObject(a, "emb_dim", o->emb_dim);
        cJSON_AddNumberToObject(a, "num_opcodes", o->num_opcodes);
        cJSON_AddStringToObject(a, "pool", pool_names[o->pool]);
        cJSON_AddStringToObject(a, "join", join_names[o->join]);
        cJSON_AddStringToObject(a, "act", act_names[o->act]);
        cJSON_AddNumberToObject(a, "layernorm", o->layernorm);
        cJSON_AddNumberToObject(a, "dropout", (double)o->dropout);
        if (o->prune_hops >= 0) {
            cJSON_AddNumberToObject(a, "prune_hops", o->prune_hops);
            cJSON_AddNumberToObject(a, "collapse_chains", o->collapse_chains);
        }
        if (o->encode) cJSON_AddNumberToObject(a, "encode", (double)o->encode);
        if (o->attn_heads > 0) {
            cJSON_AddNumberToObject(a, "attn_heads", o->attn_heads);
            cJSON_AddNumberToObject(a, "attn_group", o->attn_group);
        }
        if (o->gst) {
            cJSON *g = cJSON_AddObjectToObject(a, "gst");
            if (g) {
                cJSON_AddStringToObject(g, "segments", pc_gst_method_name((pc_seg_method)o->seg_method));
                cJSON_AddNumberToObject(g, "seg_size", o->seg_size);
            }
        }
        cJSON_AddNumberToObject(a, "feat_dim", m->feat_dim);
        cJSON_AddNumberToObject(a, "cfg_dim", m->cfg_dim);
        cJSON_AddNumberToObject(a, "node_in_dim", m->node_prep.in_dim);
        cJSON_AddNumberToObject(a, "cfg_in_dim", m->cfg_prep.in_dim);
    }
    if (info->train) {
        const pc_train_opts *t = info->train;
        cJSON *tr = cJSON_AddObjectToObject(root, "train");
        if (tr) {
            char seed[32];
            snprintf(seed, sizeof seed, "%llu", (unsigned long long)t->seed);
            cJSON_AddStringToObject(tr, "seed", seed);
            cJSON_AddNumberToObject(tr, "epochs", t->epochs);
            cJSON_AddNumberToObject(tr, "patience", t->patience);
            cJSON_AddNumberToObject(tr, "configs", info->configs);
            cJSON_AddNumberToObject(tr, "lr", (double)t->lr);
            cJSON_AddNumberToObject(tr, "weight_decay", (double)t->weight_decay);
            cJSON_AddNumberToObject(tr, "clip", (double)t->clip);
            cJSON_AddNumberToObject(tr, "time_budget", t->time_budget);
            if (info->loss) cJSON_AddStringToObject(tr, "loss", info->loss);
            if (info->sampling) cJSON_AddStringToObject(tr, "sampling", info->sampling);
            cJSON_AddNumberToObject(tr, "epochs_run", info->epochs_run);
            cJSON_AddNumberToObject(tr, "best_epoch", info->best_epoch);
        }
    }
    cJSON_AddStringToObject(root, "metric", o->kind == PC_KIND_TILE ? "tile_score" : "kendall_tau");
    if (isfinite(info->best_metric)) cJSON_AddNumberToObject(root, "best_metric", info->best_metric);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

pc_status pc_ckpt_save(const pc_model *m, const pc_ckpt_info *info, const char *path,
                       pc_error *err) {
    pc_st_writer *w = pc_st_writer_new();
    if (!w) return pc_fail(err, PC_ERR_NOMEM, "checkpoint: out of memory");
    pc_status st = PC_OK;
    for (int i = 0; i < m->params.count && st == PC_OK; i++) {
        const pc_param_info *pi = &m->params.info[i];
        char name[PC_PARAM_NAME_MAX + 8];
        int64_t shape[PC_PARAM_MAX_DIMS];
        for (int d = 0; d < pi->ndim; d++) shape[d] = pi->shape[d];
        snprintf(name, sizeof name, "param.%s", pi->name);
        st = pc_st_writer_add(w, name, PC_DTYPE_F32, pi->ndim, shape, m->params.data + pi->offset, err);
    }
    if (st == PC_OK) st = add_prep(w, "node", &m->node_prep, err);
    if (st == PC_OK) st = add_prep(w, "cfg", &m->cfg_prep, err);
    if (st == PC_OK && info->state_json) st = add_state(w, m, info, err);
    if (st == PC_OK) {
        char *meta = meta_json(m, info);
        if (!meta) st = pc_fail(err, PC_ERR_NOMEM, "checkpoint: out of memory");
        else st = pc_st_writer_set_meta(w, "perfcast", meta, err);
        free(meta);
    }
    if (st == PC_OK) st = pc_st_writer_save(w, path, err);
    pc_st_writer_free(w);
    return st;
}

static int jint(const cJSON *o, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
        fabs(v->valuedouble) > 1e9)
        return -1;
    *out = (int)v->valuedouble;
    return 0;
}

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Reads a 1-D tensor of `n` elements of type t into a malloc'd copy. */
static void *read_vec(const pc_st *r, const char *name, pc_dtype t, int n, const char *path,
                      pc_error *err) {
    int i = pc_st_find(r, name);
    pc_dtype dt;
    int nd;
    int64_t shape[PC_MAX_DIMS];
    if (i < 0 || pc_st_info(r, i, &dt, &nd, shape) || dt != t || nd != 1 || shape[0] != n) {
        pc_fail(err, PC_ERR_FORMAT, "%s: tensor '%s' missing or not a %d-vector of %s", path,
                name, n, pc_st_dtype_name(t));
        return NULL;
    }
    void *p = malloc((size_t)(n > 0 ? n : 1) * 4);
    if (!p) {
        pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    if (n > 0) memcpy(p, pc_st_data(r, i), (size_t)n * 4);
    return p;
}

static pc_status load_prep(const pc_st *r, const char *which, int in_dim, int out_dim,
                           pc_prep *p, const char *path, pc_error *err) {
    char n1[64], n2[64], n3[64], n4[64];
    snprintf(n1, sizeof n1, "prep.%s.keep", which);
    snprintf(n2, sizeof n2, "prep.%s.logt", which);
    snprintf(n3, sizeof n3, "prep.%s.mean", which);
    snprintf(n4, sizeof n4, "prep.%s.std", which);
    int32_t *keep = read_vec(r, n1, PC_DTYPE_I32, out_dim, path, err);
    int32_t *logt = keep ? read_vec(r, n2, PC_DTYPE_I32, out_dim, path, err) : NULL;
    float *mean = logt ? read_vec(r, n3, PC_DTYPE_F32, out_dim, path, err) : NULL;
    float *sd = mean ? read_vec(r, n4, PC_DTYPE_F32, out_dim, path, err) : NULL;
    pc_status st = sd ? pc_prep_set(p, in_dim, out_dim, keep, logt, mean, sd, err) : err->code;
    if (st != PC_OK && sd) pc_error_prefix(err, "%s: ", path);
    free(keep);
    free(logt);
    free(mean);
    free(sd);
    return st;
}

pc_status pc_ckpt_load(const char *path, pc_model **out, int *collection, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    *out = NULL;
    pc_st *r = NULL;
    pc_status st = pc_st_open(path, &r, err);
    if (st) return st;
    pc_model *m = NULL;
    pc_prep np = {0}, cp = {0};
    const char *meta = pc_st_meta(r, "perfcast");
    cJSON *root = meta ? cJSON_Parse(meta) : NULL;
    const cJSON *a = root ? cJSON_GetObjectItemCaseSensitive(root, "architecture") : NULL;
    const char *fmt = root ? jstr(root, "format") : NULL;
    int version = 0;
    if (!root || !fmt || strcmp(fmt, CKPT_FORMAT) || jint(root, "version", &version) ||
        !cJSON_IsObject(a)) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: not a perfcast model (metadata 'perfcast' missing "
                     "or malformed)", path);
        goto done;
    }
    if (version != CKPT_VERSION) {
        st = pc_fail(err, PC_ERR_UNSUPPORTED, "%s: model format version %d, expected %d", path,
                     version, CKPT_VERSION);
        goto done;
    }
    int coll = pc_collection_find(jstr(root, "collection") ? jstr(root, "collection") : "");
    pc_model_opts o = pc_model_opts_default(PC_KIND_TILE);
    int feat_dim, cfg_dim, node_in, cfg_in;
    const cJSON *dj = cJSON_GetObjectItemCaseSensitive(a, "dropout");
    int pool = name_index(pool_names, 4, jstr(a, "pool"));
    int join = name_index(join_names, 2, jstr(a, "join"));
    int act = name_index(act_names, 3, jstr(a, "act"));
    if (coll < 0 || jint(a, "hidden", &o.hidden) || jint(a, "layers", &o.layers) ||
        jint(a, "emb_dim", &o.emb_dim) || jint(a, "num_opcodes", &o.num_opcodes) ||
        jint(a, "layernorm", &o.layernorm) || jint(a, "feat_dim", &feat_dim) ||
        jint(a, "cfg_dim", &cfg_dim) || jint(a, "node_in_dim", &node_in) ||
        jint(a, "cfg_in_dim", &cfg_in) || !cJSON_IsNumber(dj) || pool < 0 || join < 0 ||
        act < 0) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: model metadata lacks or has a bad collection or "
                     "architecture field", path);
        goto done;
    }
    o.kind = pc_collection_kind(coll);
    o.pool = (pc_pool_kind)pool;
    o.join = (pc_join)join;
    o.act = (pc_act)act;
    o.dropout = (float)dj->valuedouble;
    if (cJSON_GetObjectItemCaseSensitive(a, "prune_hops") &&
        (jint(a, "prune_hops", &o.prune_hops) || o.prune_hops < 0 || o.prune_hops > 64 ||
         jint(a, "collapse_chains", &o.collapse_chains))) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: model metadata has a bad 'prune_hops' field", path);
        goto done;
    }
    int enc = 0;
    if (cJSON_GetObjectItemCaseSensitive(a, "encode") && (jint(a, "encode", &enc) || enc < 0)) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: model metadata has a bad 'encode' field", path);
        goto done;
    }
    o.encode = (unsigned)enc;
    if (cJSON_GetObjectItemCaseSensitive(a, "attn_heads") &&
        (jint(a, "attn_heads", &o.attn_heads) || jint(a, "attn_group", &o.attn_group) ||
         o.attn_heads < 1 || o.attn_group < 1)) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: model metadata has a bad 'attn_heads' field", path);
        goto done;
    }
    pc_encode_opts eo;
    if (pc_encode_opts_from_bits(o.encode, &eo, NULL)) {
        st = pc_fail(err, PC_ERR_UNSUPPORTED, "%s: unknown feature encodings 0x%x", path, o.encode);
        goto done;
    }
    const cJSON *gj = cJSON_GetObjectItemCaseSensitive(a, "gst");
    if (gj) {
        o.gst = 1;
        o.seg_method = pc_gst_method_find(jstr(gj, "segments"));
        if (o.seg_method < 0 || jint(gj, "seg_size", &o.seg_size) || o.seg_size < 1) {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: model metadata has a bad 'gst' field", path);
            goto done;
        }
    }
    if ((st = pc_model_new(&o, feat_dim, cfg_dim, 0, &m, err))) {
        pc_error_prefix(err, "%s: ", path);
        goto done;
    }
    for (int i = 0; i < m->params.count; i++) {
        const pc_param_info *pi = &m->params.info[i];
        char name[PC_PARAM_NAME_MAX + 8];
        snprintf(name, sizeof name, "param.%s", pi->name);
        int t = pc_st_find(r, name);
        pc_dtype dt;
        int nd;
        int64_t shape[PC_MAX_DIMS];
        int ok = t >= 0 && pc_st_info(r, t, &dt, &nd, shape) == PC_OK && dt == PC_DTYPE_F32 &&
                 nd == pi->ndim;
        for (int d = 0; ok && d < nd; d++) ok = shape[d] == pi->shape[d];
        if (!ok) {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: parameter '%s' missing or of the wrong "
                         "shape", path, name);
            goto done;
        }
        memcpy(m->params.data + pi->offset, pc_st_data(r, t), pi->numel * sizeof(float));
    }
    if ((st = load_prep(r, "node", node_in, feat_dim, &np, path, err)) ||
        (st = load_prep(r, "cfg", cfg_in, cfg_dim, &cp, path, err)) ||
        (st = pc_model_set_prep(m, &np, &cp, err)))
        goto done;
    *collection = coll;
    *out = m;
    m = NULL;
done:
    pc_prep_free(&np);
    pc_prep_free(&cp);
    pc_model_free(m);
    cJSON_Delete(root);
    pc_st_close(r);
    return st;
}

/* Copies tensor `name` (a vector of n elements of type t) into dst. */
static pc_status read_into(const pc_st *r, const char *name, pc_dtype t, int64_t n, void *dst,
                           const char *path, pc_error *err) {
    int i = pc_st_find(r, name);
    pc_dtype dt;
    int nd;
    int64_t shape[PC_MAX_DIMS];
    if (i < 0 || pc_st_info(r, i, &dt, &nd, shape) || dt != t || nd != 1 || shape[0] != n)
        return pc_fail(err, PC_ERR_FORMAT, "%s: training state tensor '%s' missing or not a "
                       "%lld-vector of %s", path, name, (long long)n, pc_st_dtype_name(t));
    if (n > 0) memcpy(dst, pc_st_data(r, i), (size_t)pc_st_nbytes(r, i));
    return PC_OK;
}

pc_status pc_ckpt_load_state(const char *path, pc_model *m, float *best, int64_t *order,
                             int64_t norder, char **state_json, pc_error *err) {
    *state_json = NULL;
    pc_st *r = NULL;
    pc_status st = pc_st_open(path, &r, err);
    if (st) return st;
    const char *meta = pc_st_meta(r, "perfcast_state");
    int64_t n = (int64_t)m->params.numel;
    if (!meta)
        st = pc_fail(err, PC_ERR_FORMAT, "%s: no training state (metadata 'perfcast_state')",
                     path);
    if (!st) st = read_into(r, "state.adam_m", PC_DTYPE_F32, n, m->params.m, path, err);
    if (!st) st = read_into(r, "state.adam_v", PC_DTYPE_F32, n, m->params.v, path, err);
    if (!st) st = read_into(r, "state.best", PC_DTYPE_F32, n, best, path, err);
    if (!st) st = read_into(r, "state.order", PC_DTYPE_I64, norder, order, path, err);
    if (!st && !(*state_json = strdup(meta)))
        st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    pc_st_close(r);
    return st;
}
