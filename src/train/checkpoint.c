/*
 * Writing model checkpoints (parameters, preprocessing, the architecture and
 * the training options as metadata) and reading back the resume state. The
 * format and its reader, which inference needs, are src/gnn/checkpoint.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "perfcast/dataset.h"
#include "perfcast/safetensors.h"
#include "gnn/checkpoint.h"
#include "gnn/encode.h"
#include "gnn/gst.h"
#include "train/train.h"


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

/* Member k's parameters p (laid out as m's) as "member<k>.param.<name>". */
static pc_status add_member(pc_st_writer *w, const pc_gnn *m, int k, const float *p,
                            pc_error *err) {
    pc_status st = PC_OK;
    for (int i = 0; i < m->params.count && st == PC_OK; i++) {
        const pc_param_info *pi = &m->params.info[i];
        char name[PC_PARAM_NAME_MAX + 32];
        int64_t shape[PC_PARAM_MAX_DIMS];
        for (int d = 0; d < pi->ndim; d++) shape[d] = pi->shape[d];
        snprintf(name, sizeof name, "member%d.param.%s", k, pi->name);
        st = pc_st_writer_add(w, name, PC_DTYPE_F32, pi->ndim, shape, p + pi->offset, err);
    }
    return st;
}

static pc_status add_state(pc_st_writer *w, const pc_gnn *m, const pc_ckpt_info *info,
                           pc_error *err) {
    int64_t n[1] = {(int64_t)m->params.numel}, no[1] = {info->norder};
    pc_status st = pc_st_writer_add(w, "state.adam_m", PC_DTYPE_F32, 1, n, info->adam_m, err);
    if (!st) st = pc_st_writer_add(w, "state.adam_v", PC_DTYPE_F32, 1, n, info->adam_v, err);
    if (!st) st = pc_st_writer_add(w, "state.best", PC_DTYPE_F32, 1, n, info->best, err);
    if (!st) st = pc_st_writer_add(w, "state.order", PC_DTYPE_I64, 1, no, info->order, err);
    if (!st) st = pc_st_writer_set_meta(w, "perfcast_state", info->state_json, err);
    return st;
}

/* An ensemble's per-member training results under "train". */
static void add_members_json(cJSON *tr, const pc_ckpt_info *info) {
    cJSON_AddNumberToObject(tr, "ensemble", info->ensemble);
    cJSON *mm = cJSON_AddArrayToObject(tr, "member_metrics");
    cJSON *me = cJSON_AddArrayToObject(tr, "member_best_epochs");
    for (int k = 0; k < info->ensemble; k++) {
        double v = info->member_metric[k];
        if (mm) cJSON_AddItemToArray(mm, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
        if (me) cJSON_AddItemToArray(me, cJSON_CreateNumber(info->member_best_epoch[k]));
    }
}

static char *meta_json(const pc_gnn *m, const pc_ckpt_info *info) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    const pc_gnn_opts *o = &m->opts;
    cJSON_AddStringToObject(root, "format", PC_CKPT_FORMAT);
    cJSON_AddNumberToObject(root, "version", PC_CKPT_VERSION);
    cJSON_AddStringToObject(root, "collection", pc_collection_name(info->collection));
    cJSON *a = cJSON_AddObjectToObject(root, "architecture");
    if (a) {
        cJSON_AddStringToObject(a, "kind", pc_kind_name(o->kind));
        cJSON_AddNumberToObject(a, "hidden", o->hidden);
        cJSON_AddNumberToObject(a, "layers", o->layers);
        cJSON_AddNumberToObject(a, "emb_dim", o->emb_dim);
        cJSON_AddNumberToObject(a, "num_opcodes", o->num_opcodes);
        cJSON_AddStringToObject(a, "pool", pc_pool_name(o->pool));
        cJSON_AddStringToObject(a, "join", pc_join_name(o->join));
        cJSON_AddStringToObject(a, "act", pc_act_name(o->act));
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
            if (t->dedup) cJSON_AddTrueToObject(tr, "dedup");
            if (info->ntrain > 0) {
                cJSON *d = cJSON_AddObjectToObject(tr, "data");
                char id[24];
                snprintf(id, sizeof id, "%016llx", (unsigned long long)info->data_id);
                if (d) {
                    cJSON_AddNumberToObject(d, "train_graphs", (double)info->ntrain);
                    cJSON_AddNumberToObject(d, "valid_graphs", (double)info->nvalid);
                    cJSON_AddStringToObject(d, "id", id);
                }
            }
            cJSON_AddNumberToObject(tr, "epochs_run", info->epochs_run);
            cJSON_AddNumberToObject(tr, "best_epoch", info->best_epoch);
            if (info->ensemble > 1) add_members_json(tr, info);
        }
    }
    if (info->ensemble > 1) cJSON_AddNumberToObject(root, "ensemble", info->ensemble);
    cJSON_AddStringToObject(root, "metric", o->kind == PC_KIND_TILE ? "tile_score" : "kendall_tau");
    if (isfinite(info->best_metric)) cJSON_AddNumberToObject(root, "best_metric", info->best_metric);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

pc_status pc_ckpt_save(const pc_gnn *m, const pc_ckpt_info *info, const char *path,
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
    for (int k = 1; k < info->ensemble && st == PC_OK; k++)
        st = add_member(w, m, k, info->member_params[k], err);
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

pc_status pc_ckpt_load_state(const char *path, pc_gnn *m, float *best, int64_t *order,
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
