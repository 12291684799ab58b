/*
 * Reading model checkpoints (src/gnn/checkpoint.h): what inference (predict,
 * rank, eval) and a resumed training run load. The writer records training
 * options and resume state, so it lives with the trainer (src/train/checkpoint.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "gnn/checkpoint.h"
#include "io/io_internal.h"
#include "gnn/encode.h"
#include "gnn/gst.h"
#include "perfcast/dataset.h"
#include "perfcast/safetensors.h"
#include "perfcast/gnn.h"

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

/* The parameters of m from tensors "<prefix>param.<name>". */
static pc_status load_params(const pc_st *r, pc_gnn *m, const char *prefix, const char *path,
                             pc_error *err) {
    for (int i = 0; i < m->params.count; i++) {
        const pc_param_info *pi = &m->params.info[i];
        char name[PC_PARAM_NAME_MAX + 32];
        snprintf(name, sizeof name, "%sparam.%s", prefix, pi->name);
        int t = pc_st_find(r, name);
        pc_dtype dt;
        int nd;
        int64_t shape[PC_MAX_DIMS];
        int ok = t >= 0 && pc_st_info(r, t, &dt, &nd, shape) == PC_OK && dt == PC_DTYPE_F32 &&
                 nd == pi->ndim;
        for (int d = 0; ok && d < nd; d++) ok = shape[d] == pi->shape[d];
        if (!ok)
            return pc_fail(err, PC_ERR_FORMAT, "%s: parameter '%s' missing or of the wrong "
                           "shape", path, name);
        memcpy(m->params.data + pi->offset, pc_st_data(r, t), pi->numel * sizeof(float));
    }
    return PC_OK;
}

/*
 * A seed ensemble (metadata "ensemble": N >= 2): members 1 .. N-1 of m's
 * architecture and preprocessing, from tensors "member<k>.param.<name>".
 */
static pc_status load_members(const pc_st *r, const cJSON *root, pc_gnn *m, const char *path,
                              pc_error *err) {
    int n = 1;
    if (!cJSON_GetObjectItemCaseSensitive(root, "ensemble")) return PC_OK;
    if (jint(root, "ensemble", &n) || n < 2 || n > PC_CKPT_MAX_MEMBERS)
        return pc_fail(err, PC_ERR_FORMAT, "%s: model metadata has a bad 'ensemble' field "
                       "(expected 2..%d members)", path, PC_CKPT_MAX_MEMBERS);
    if (!(m->members = calloc((size_t)n - 1, sizeof *m->members)))
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    for (int k = 1; k < n; k++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "member%d.", k);
        pc_gnn *mk = NULL;
        pc_status st = pc_gnn_new(&m->opts, m->feat_dim, m->cfg_dim, 0, &mk, err);
        if (!st) m->members[m->n_members++] = mk;
        if (!st) st = load_params(r, mk, prefix, path, err);
        if (!st) st = pc_gnn_set_prep(mk, &m->node_prep, &m->cfg_prep, err);
        if (st) return st;
    }
    return PC_OK;
}

/*
 * Before anything is allocated: the parameters the metadata's architecture
 * implies (times the ensemble's members) must be held by the file's
 * "param." tensors, so edited metadata cannot make the reader allocate
 * more than the file's own size (perfcast/gnn.h, PC_GNN_MAX_*).
 */
static pc_status check_param_budget(const pc_st *r, const cJSON *root, const pc_gnn_opts *o,
                                    int feat_dim, int cfg_dim, uint64_t max_memory,
                                    const char *path, pc_error *err) {
    size_t numel = 0;
    pc_status st = pc_gnn_param_count(o, feat_dim, cfg_dim, &numel, err);
    if (st) {
        pc_error_prefix(err, "%s: model metadata: ", path);
        return st;
    }
    int members = 1;
    if (cJSON_GetObjectItemCaseSensitive(root, "ensemble") &&
        (jint(root, "ensemble", &members) || members < 2 || members > PC_CKPT_MAX_MEMBERS))
        return pc_fail(err, PC_ERR_FORMAT, "%s: model metadata has a bad 'ensemble' field "
                       "(expected 2..%d members)", path, PC_CKPT_MAX_MEMBERS);
    uint64_t held = 0;
    for (int i = 0; i < pc_st_count(r); i++) {
        const char *name = pc_st_name(r, i);
        if (strncmp(name, "param.", 6) == 0 || (strncmp(name, "member", 6) == 0 && strstr(name, ".param.")))
            held += pc_st_nbytes(r, i);
    }
    uint64_t need = (uint64_t)numel * sizeof(float) * (uint64_t)members;
    if (need > held)
        return pc_fail(err, PC_ERR_FORMAT, "%s: model metadata describes %zu parameters x %d "
                       "member(s) (%llu bytes) but the file's parameter tensors hold %llu bytes: "
                       "the architecture fields do not match the tensors", path, numel, members,
                       (unsigned long long)need, (unsigned long long)held);
    /* each parameter is four floats in memory: the value, its gradient and Adam's two moments */
    return pc_io_budget_check(need * 4, max_memory, path,
                              " for the model's parameters (values, gradients, Adam moments)", err);
}

pc_status pc_ckpt_load(const char *path, uint64_t max_memory, pc_gnn **out, int *collection,
                       pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    *out = NULL;
    pc_st *r = NULL;
    pc_status st = pc_st_open_max(path, max_memory, &r, err);
    if (st == PC_ERR_FORMAT) { /* a README, an .npz, a truncated file: say what is expected */
        char why[PC_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        return pc_fail(err, st, "%s: not a perfcast checkpoint (a safetensors file written by "
                       "perfcast train): %s", path, why);
    }
    if (!st) st = pc_ckpt_load_st(r, path, max_memory, out, collection, err);
    pc_st_close(r);
    return st;
}

pc_status pc_ckpt_load_st(const pc_st *r, const char *path, uint64_t max_memory, pc_gnn **out,
                          int *collection, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    *out = NULL;
    pc_status st = PC_OK;
    pc_gnn *m = NULL;
    pc_prep np = {0}, cp = {0};
    const char *meta = pc_st_meta(r, "perfcast");
    cJSON *root = meta ? cJSON_Parse(meta) : NULL;
    const cJSON *a = root ? cJSON_GetObjectItemCaseSensitive(root, "architecture") : NULL;
    const char *fmt = root ? jstr(root, "format") : NULL;
    int version = 0;
    if (!root || !fmt || strcmp(fmt, PC_CKPT_FORMAT) || jint(root, "version", &version) ||
        !cJSON_IsObject(a)) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: not a perfcast model (metadata 'perfcast' missing "
                     "or malformed)", path);
        goto done;
    }
    if (version != PC_CKPT_VERSION) {
        st = pc_fail(err, PC_ERR_UNSUPPORTED, "%s: model format version %d, expected %d", path,
                     version, PC_CKPT_VERSION);
        goto done;
    }
    int coll = pc_collection_find(jstr(root, "collection") ? jstr(root, "collection") : "");
    pc_gnn_opts o = pc_gnn_opts_default(PC_KIND_TILE);
    int feat_dim, cfg_dim, node_in, cfg_in;
    const cJSON *dj = cJSON_GetObjectItemCaseSensitive(a, "dropout");
    pc_pool pool = PC_POOL_MEAN;
    pc_join join = PC_JOIN_EARLY;
    pc_act act = PC_ACT_LEAKY_RELU;
    int bad_arch = pc_pool_parse(jstr(a, "pool"), &pool) || pc_join_parse(jstr(a, "join"), &join) ||
                   join == PC_JOIN_AUTO || pc_act_parse(jstr(a, "act"), &act);
    if (coll < 0 || jint(a, "hidden", &o.hidden) || jint(a, "layers", &o.layers) ||
        jint(a, "emb_dim", &o.emb_dim) || jint(a, "num_opcodes", &o.num_opcodes) ||
        jint(a, "layernorm", &o.layernorm) || jint(a, "feat_dim", &feat_dim) ||
        jint(a, "cfg_dim", &cfg_dim) || jint(a, "node_in_dim", &node_in) ||
        jint(a, "cfg_in_dim", &cfg_in) || !cJSON_IsNumber(dj) || bad_arch) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: model metadata lacks or has a bad collection or "
                     "architecture field", path);
        goto done;
    }
    o.kind = pc_collection_kind(coll);
    o.pool = pool;
    o.join = join;
    o.act = act;
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
    if ((st = check_param_budget(r, root, &o, feat_dim, cfg_dim, max_memory, path, err))) goto done;
    if ((st = pc_gnn_new(&o, feat_dim, cfg_dim, 0, &m, err))) {
        pc_error_prefix(err, "%s: ", path);
        goto done;
    }
    if ((st = load_params(r, m, "", path, err))) goto done;
    if ((st = load_prep(r, "node", node_in, feat_dim, &np, path, err)) ||
        (st = load_prep(r, "cfg", cfg_in, cfg_dim, &cp, path, err)) ||
        (st = pc_gnn_set_prep(m, &np, &cp, err)) ||
        (st = load_members(r, root, m, path, err)))
        goto done;
    *collection = coll;
    *out = m;
    m = NULL;
done:
    pc_prep_free(&np);
    pc_prep_free(&cp);
    pc_gnn_free(m);
    cJSON_Delete(root);
    return st;
}
