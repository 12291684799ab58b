/* The model query (perfcast model): parameters, FLOPs per token, training memory, KV cache,
 * the MoE critical batch and the MFU of a measured run of one transformer. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "perfcast/analytic.h"
#include "query/q_internal.h"
#include "query/request.h"

/* The model's fields a request may set (over a config, or the whole model). */
enum {
    F_LAYERS,
    F_DMODEL,
    F_DFF,
    F_HEADS,
    F_KVH,
    F_HDIM,
    F_VOCAB,
    F_EXP,
    F_EXPK,
    F_DFFE,
    F_SHARED,
    F_COUNT
};
static const char *const FIELD_KEYS[F_COUNT] = {
    "layers",  "d_model",           "d_ff",        "heads",         "kv_heads", "head_dim", "vocab",
    "experts", "experts_per_token", "d_ff_expert", "shared_experts"};

static const char *const MODEL_KEYS[] = {"config",
                                         "preset",
                                         "seq",
                                         "batch_tokens",
                                         "remat",
                                         "causal",
                                         "attention",
                                         "weight_dtype",
                                         "grad_dtype",
                                         "act_dtype",
                                         "kv_dtype",
                                         "optimizer",
                                         "master_weights",
                                         "layers",
                                         "d_model",
                                         "d_ff",
                                         "heads",
                                         "kv_heads",
                                         "head_dim",
                                         "vocab",
                                         "tied",
                                         "untied",
                                         "plain_mlp",
                                         "layernorm",
                                         "experts",
                                         "experts_per_token",
                                         "d_ff_expert",
                                         "shared_experts",
                                         "chip",
                                         "chips_file",
                                         "chips",
                                         "mfu_step_time",
                                         "gpu_hours",
                                         "chip_hours",
                                         "tokens",
                                         NULL};

typedef struct model_req {
    const cJSON *config; /* a path or preset name (string), or a config.json (object) */
    const char *preset, *chip, *chips_file, *remat, *attention, *optimizer;
    const char *wdt, *gdt, *adt, *kvdt;
    double seq, batch; /* batch: -1 when not given */
    double step, chips, hours, tokens;
    int causal, master, tied, untied, plain, ln; /* tied: -1 when not given */
    long long f[F_COUNT];                        /* -1 when not given */
} model_req;

/* Everything the model query reports. */
typedef struct model_rep {
    pc_tfm_cfg m;
    pc_mem_opts mo;
    pc_prec kv;
    double seq, remat_k;
    int causal, no_attn;
    pc_remat remat;
    pc_param_counts p;
    pc_flop_counts fl;
    pc_train_memory mem;
    pc_mfu mfu;
    double mfu_tokens, moe_b, kvb, kvs; /* mfu_tokens 0: no MFU asked for */
    pc_attn_flops attn;
    char remat_s[48];
    const char *opt_s;
    pc_chipdb *db;
    const pc_chip *chip; /* NULL without 'chip' */
} model_rep;

/* ---- the request ------------------------------------------------------------------ */

static pc_status read_prec(const cJSON *o, const char *key, const char **s, pc_prec *out,
                           pc_error *err) {
    pc_status st = pc_qreq_string(o, key, s, err);
    if (st != PC_OK || !*s) return st;
    int p = pc_prec_parse(*s);
    if (p < 0)
        return pc_fail(err, PC_ERR_ARG, "'%s' '%s' unknown (fp32 bf16 fp16 fp8 int8 int4 fp4)", key,
                       *s);
    *out = (pc_prec)p;
    return PC_OK;
}

static pc_status read_tokens(const cJSON *o, const char *key, double *out, pc_error *err) {
    double v = *out;
    pc_status st = pc_qreq_count(o, key, 0, &v, err);
    if (st != PC_OK) return st;
    if (v != *out && (!(v >= 1) || v != floor(v) || v > 1e18))
        return pc_fail(err, PC_ERR_ARG, "'%s' expects a whole token count >= 1, got %g", key, v);
    *out = v;
    return PC_OK;
}

/* The MFU keys: a positive number each, whole for 'chips'. */
static pc_status read_mfu(const cJSON *o, model_req *a, pc_error *err) {
    static const char *const keys[] = {"mfu_step_time", "chips", "gpu_hours", "chip_hours",
                                       "tokens"};
    double *dst[] = {&a->step, &a->chips, &a->hours, &a->hours, &a->tokens};
    for (int i = 0; i < 5; i++) {
        if (!cJSON_GetObjectItemCaseSensitive(o, keys[i])) continue;
        double v = 0;
        pc_status st = pc_qreq_count(o, keys[i], 1, &v, err);
        if (st != PC_OK) return st;
        if (v > (i == 0 || i == 1 ? 1e9 : 1e21) || (i == 1 && v != floor(v)))
            return pc_fail(err, PC_ERR_ARG, "'%s' out of range: %g", keys[i], v);
        *dst[i] = v;
    }
    return PC_OK;
}

static pc_status read_bools(const cJSON *o, model_req *a, pc_error *err) {
    pc_status st;
    int tied = -1;
    if ((st = pc_qreq_bool(o, "causal", &a->causal, err)) ||
        (st = pc_qreq_bool(o, "master_weights", &a->master, err)) ||
        (st = pc_qreq_bool(o, "tied", &tied, err)) ||
        (st = pc_qreq_bool(o, "untied", &a->untied, err)) ||
        (st = pc_qreq_bool(o, "plain_mlp", &a->plain, err)) ||
        (st = pc_qreq_bool(o, "layernorm", &a->ln, err)))
        return st;
    if (tied >= 0 && a->untied && tied)
        return pc_fail(err, PC_ERR_ARG, "'tied' true and 'untied' true: give one");
    a->tied = a->untied ? 0 : tied;
    return PC_OK;
}

static pc_status read_req(const cJSON *o, model_req *a, pc_mem_opts *mo, pc_prec *kv,
                          pc_error *err) {
    pc_status st;
    memset(a, 0, sizeof *a);
    a->seq = 4096;
    a->batch = -1;
    for (int i = 0; i < F_COUNT; i++) a->f[i] = -1;
    a->config = cJSON_GetObjectItemCaseSensitive(o, "config");
    if (cJSON_IsNull(a->config)) a->config = NULL;
    if (a->config && !cJSON_IsString(a->config) && !cJSON_IsObject(a->config))
        return pc_fail(err, PC_ERR_ARG,
                       "'config' expects a config.json path, a preset name or a config object");
    if ((st = pc_qreq_string(o, "preset", &a->preset, err)) ||
        (st = pc_qreq_string(o, "chip", &a->chip, err)) ||
        (st = pc_qreq_string(o, "chips_file", &a->chips_file, err)) ||
        (st = pc_qreq_string(o, "remat", &a->remat, err)) ||
        (st = pc_qreq_string(o, "attention", &a->attention, err)) ||
        (st = pc_qreq_string(o, "optimizer", &a->optimizer, err)) ||
        (st = read_prec(o, "weight_dtype", &a->wdt, &mo->weight_prec, err)) ||
        (st = read_prec(o, "grad_dtype", &a->gdt, &mo->grad_prec, err)) ||
        (st = read_prec(o, "act_dtype", &a->adt, &mo->act_prec, err)) ||
        (st = read_prec(o, "kv_dtype", &a->kvdt, kv, err)) ||
        (st = read_tokens(o, "seq", &a->seq, err)) ||
        (st = read_tokens(o, "batch_tokens", &a->batch, err)) || (st = read_bools(o, a, err)) ||
        (st = read_mfu(o, a, err)))
        return st;
    for (int i = 0; i < F_COUNT; i++)
        if ((st = pc_qreq_int(o, FIELD_KEYS[i], 0, 1LL << 40, &a->f[i], err))) return st;
    if (a->config && a->preset)
        return pc_fail(err, PC_ERR_ARG, "give 'config' or 'preset', not both");
    return PC_OK;
}

/* remat, attention and optimizer as the report holds them. */
static pc_status read_choices(const model_req *a, model_rep *r, pc_error *err) {
    r->remat = PC_REMAT_NONE;
    if (a->remat && (!strncmp(a->remat, "tensors:", 8) || !strncmp(a->remat, "tensors=", 8))) {
        char *end;
        r->remat_k = strtod(a->remat + 8, &end);
        if (*end || !(r->remat_k > 0) || r->remat_k > 1e6)
            return pc_fail(err, PC_ERR_ARG,
                           "'remat' tensors:K needs K > 0 tensors per layer, got '%s'", a->remat);
        r->remat = PC_REMAT_TENSORS;
    } else if (a->remat) {
        int x = pc_remat_parse(a->remat);
        if (x < 0 || x == PC_REMAT_TENSORS)
            return pc_fail(err, PC_ERR_ARG,
                           "'remat' '%s' unknown (none, big_matmuls, full, tensors:K)", a->remat);
        r->remat = (pc_remat)x;
    }
    r->causal = a->causal;
    if (a->attention) {
        int at = pc_attn_flops_parse(a->attention);
        if (at < 0)
            return pc_fail(err, PC_ERR_ARG, "'attention' '%s' unknown (causal, full, none)",
                           a->attention);
        r->causal = at == PC_ATTN_CAUSAL;
        r->no_attn = at == PC_ATTN_NONE;
    }
    if (a->optimizer) {
        const char *v = a->optimizer;
        if (!strcmp(v, "adam") || !strcmp(v, "adamw"))
            r->mo.optimizer = PC_OPT_ADAM;
        else if (!strcmp(v, "momentum"))
            r->mo.optimizer = PC_OPT_SGD_MOMENTUM;
        else if (!strcmp(v, "sgd"))
            r->mo.optimizer = PC_OPT_SGD;
        else
            return pc_fail(err, PC_ERR_ARG, "'optimizer' '%s' unknown (adam, momentum, sgd)", v);
    }
    if (a->master) r->mo.master_weights = 1;
    return PC_OK;
}

/* ---- the model ---------------------------------------------------------------------- */

/* A 'config' string: a file (it exists, or has a '/' or ".json") or a preset name. */
static int is_path(const char *s) {
    struct stat sb;
    return stat(s, &sb) == 0 || strchr(s, '/') || strstr(s, ".json");
}

/* The config, the preset, or a bare model the fields fill in. */
static pc_status model_source(const model_req *a, pc_tfm_cfg *m, pc_error *err) {
    memset(m, 0, sizeof *m);
    if (cJSON_IsObject(a->config)) {
        char *text = cJSON_PrintUnformatted(a->config);
        if (!text) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        pc_status st = pc_tfm_from_hf_json(text, strlen(text), "config", m, err);
        cJSON_free(text);
        return st;
    }
    const char *c = a->config ? a->config->valuestring : NULL;
    if (c && is_path(c)) return pc_tfm_load_hf(c, m, err);
    if (c || a->preset) return pc_tfm_preset(c ? c : a->preset, m, err);
    const long long *f = a->f;
    if (f[F_LAYERS] < 0 || f[F_DMODEL] < 0 || f[F_HEADS] < 0 || f[F_VOCAB] < 0 ||
        (f[F_DFF] < 0 && f[F_DFFE] < 0))
        return pc_fail(err, PC_ERR_ARG,
                       "give 'config' (a config.json path, a preset name or a config object) or "
                       "at least 'layers', 'd_model', 'd_ff', 'heads' and 'vocab'");
    snprintf(m->name, sizeof m->name, "custom");
    snprintf(m->arch, sizeof m->arch, "custom");
    m->gated = 1;
    m->weight_prec = PC_PREC_BF16;
    return PC_OK;
}

/* The request's fields over the loaded model; returns whether any changed it. */
static int apply_fields(const model_req *a, pc_tfm_cfg *m) {
    const long long *f = a->f;
    int changed = 0;
    int derived_hd = m->heads > 0 && m->head_dim * m->heads == m->d_model; /* head_dim = D / N */
    int64_t *dst[F_COUNT] = {&m->layers,      &m->d_model,       &m->d_ff,
                             &m->heads,       &m->kv_heads,      &m->head_dim,
                             &m->vocab,       &m->experts,       &m->experts_per_token,
                             &m->d_ff_expert, &m->shared_experts};
    for (int i = 0; i < F_COUNT; i++) {
        if (f[i] < 0) continue;
        *dst[i] = (int64_t)f[i];
        changed = 1;
        if (i == F_LAYERS) m->moe_layers = 0, m->local_layers = 0; /* recounted */
    }
    if ((f[F_DMODEL] >= 0 || f[F_HEADS] >= 0) && f[F_HDIM] < 0 && derived_hd) m->head_dim = 0;
    if (a->tied >= 0) m->tied = a->tied, changed = 1;
    if (a->plain) m->gated = 0, changed = 1;
    if (a->ln) m->layernorm = 1, changed = 1;
    return changed;
}

/* The model the request describes, checked: a check failure of a model the request's fields
 * made or changed is PC_ERR_ARG (the request is at fault), of a config as loaded its own. */
static pc_status model_build(const model_req *a, pc_tfm_cfg *m, pc_error *err) {
    pc_status st = model_source(a, m, err);
    if (st != PC_OK) return st;
    int from_fields = !a->config && !a->preset;
    int changed = apply_fields(a, m);
    if (changed && !from_fields) {
        size_t l = strlen(m->name);
        snprintf(m->name + l, sizeof m->name - l, "%s", l + 10 < sizeof m->name ? " (edited)" : "");
    }
    if ((st = pc_tfm_check(m, err)) != PC_OK && (from_fields || changed)) {
        st = PC_ERR_ARG;
        if (err) err->code = st;
    }
    return st;
}

/* ---- the numbers -------------------------------------------------------------------- */

/* The MFU keys checked; *tokens and *chip_s get what pc_tfm_mfu needs (0: no MFU). */
static pc_status mfu_inputs(const model_req *a, double *tokens, double *chip_s, pc_error *err) {
    *tokens = 0;
    *chip_s = 0;
    if (a->step > 0 && a->hours > 0)
        return pc_fail(err, PC_ERR_ARG, "'mfu_step_time' or 'gpu_hours': give one, not both");
    if (a->step > 0) {
        if (!a->chip || !(a->chips > 0) || !(a->batch > 0))
            return pc_fail(err, PC_ERR_ARG,
                           "'mfu_step_time' needs 'chip', 'chips' and "
                           "'batch_tokens' (tokens per step)");
        *tokens = a->batch;
        *chip_s = a->step * a->chips;
    } else if (a->hours > 0) {
        if (!a->chip || !(a->tokens > 0))
            return pc_fail(err, PC_ERR_ARG,
                           "'gpu_hours' needs 'chip' and 'tokens' (tokens "
                           "trained in those hours)");
        *tokens = a->tokens;
        *chip_s = a->hours * 3600;
    } else if (a->chips > 0 || a->tokens > 0) {
        return pc_fail(err, PC_ERR_ARG,
                       "'chips' and 'tokens' go with 'mfu_step_time' or 'gpu_hours'");
    }
    return PC_OK;
}

/* Parameters, FLOPs, memory, the chip, MFU, KV cache. */
static pc_status model_compute(const model_req *a, model_rep *r, pc_error *err) {
    pc_mem_opts *mo = &r->mo;
    double chip_s;
    if (!a->wdt) mo->weight_prec = PC_PREC_BF16;
    r->seq = a->seq;
    mo->tokens = a->batch > 0 ? a->batch : a->seq;
    mo->remat = r->remat;
    mo->remat_tensors = r->remat_k;
    pc_tfm_params(&r->m, &r->p);
    pc_tfm_flops(&r->m, r->no_attn ? 0 : a->seq, r->causal, r->remat, &r->fl);
    pc_status st = pc_tfm_memory(&r->m, mo, &r->mem, err);
    if (st == PC_OK) st = mfu_inputs(a, &r->mfu_tokens, &chip_s, err);
    if (st == PC_OK && a->chip) st = pc_q_open_chip(a->chips_file, a->chip, &r->db, &r->chip, err);
    if (st != PC_OK) return st;
    r->attn = r->no_attn ? PC_ATTN_NONE : r->causal ? PC_ATTN_CAUSAL : PC_ATTN_FULL;
    if (r->mfu_tokens > 0 &&
        (st = pc_tfm_mfu(&r->m, r->chip, mo->act_prec, a->seq, r->attn, r->remat, r->mfu_tokens,
                         chip_s, &r->mfu, err)) != PC_OK)
        return st;
    r->moe_b =
        r->chip ? pc_tfm_moe_critical_batch(&r->m, r->chip, mo->weight_prec, mo->act_prec) : 0;
    r->kvb = pc_tfm_kv_bytes_per_token(&r->m, r->kv);
    r->kvs = pc_tfm_kv_bytes_per_seq(&r->m, r->kv, a->seq);
    if (r->remat == PC_REMAT_TENSORS)
        snprintf(r->remat_s, sizeof r->remat_s, "tensors:%g", r->remat_k);
    else
        snprintf(r->remat_s, sizeof r->remat_s, "%s", pc_remat_name(r->remat));
    r->opt_s = mo->optimizer == PC_OPT_ADAM           ? "adam"
               : mo->optimizer == PC_OPT_SGD_MOMENTUM ? "momentum"
                                                      : "sgd";
    return PC_OK;
}

/* ---- the document ------------------------------------------------------------------- */

static cJSON *cfg_json(const pc_tfm_cfg *m) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddStringToObject(o, "arch", m->arch);
    cJSON_AddNumberToObject(o, "layers", (double)m->layers);
    cJSON_AddNumberToObject(o, "d_model", (double)m->d_model);
    cJSON_AddNumberToObject(o, "d_ff", (double)m->d_ff);
    cJSON_AddNumberToObject(o, "heads", (double)m->heads);
    cJSON_AddNumberToObject(o, "kv_heads", (double)m->kv_heads);
    cJSON_AddNumberToObject(o, "head_dim", (double)m->head_dim);
    cJSON_AddNumberToObject(o, "vocab", (double)m->vocab);
    cJSON_AddNumberToObject(o, "positions", (double)m->positions);
    cJSON_AddBoolToObject(o, "tied", m->tied);
    cJSON_AddBoolToObject(o, "gated", m->gated);
    cJSON_AddBoolToObject(o, "layernorm", m->layernorm);
    cJSON_AddNumberToObject(o, "experts", (double)m->experts);
    cJSON_AddNumberToObject(o, "experts_per_token", (double)m->experts_per_token);
    cJSON_AddNumberToObject(o, "d_ff_expert", (double)m->d_ff_expert);
    cJSON_AddNumberToObject(o, "shared_experts", (double)m->shared_experts);
    cJSON_AddNumberToObject(o, "d_ff_shared", (double)m->d_ff_shared);
    cJSON_AddNumberToObject(o, "moe_layers", (double)m->moe_layers);
    cJSON_AddNumberToObject(o, "dense_layers", (double)(m->layers - m->moe_layers));
    cJSON_AddNumberToObject(o, "first_dense_layers", (double)m->dense_layers);
    cJSON_AddNumberToObject(o, "moe_every", (double)m->moe_every);
    cJSON_AddNumberToObject(o, "mtp_layers", (double)m->mtp_layers);
    if (m->kv_lora_rank > 0) {
        cJSON *mla = cJSON_AddObjectToObject(o, "mla");
        cJSON_AddNumberToObject(mla, "q_lora_rank", (double)m->q_lora_rank);
        cJSON_AddNumberToObject(mla, "kv_lora_rank", (double)m->kv_lora_rank);
        cJSON_AddNumberToObject(mla, "qk_nope_head_dim", (double)m->qk_nope_head_dim);
        cJSON_AddNumberToObject(mla, "qk_rope_head_dim", (double)m->qk_rope_head_dim);
        cJSON_AddNumberToObject(mla, "v_head_dim", (double)m->v_head_dim);
    }
    cJSON_AddNumberToObject(o, "sliding_window", (double)m->sliding_window);
    cJSON_AddNumberToObject(o, "attn_chunk", (double)m->attn_chunk);
    cJSON_AddNumberToObject(o, "local_layers", (double)m->local_layers);
    cJSON_AddNumberToObject(o, "global_every", (double)m->global_every);
    if (m->act[0]) cJSON_AddStringToObject(o, "hidden_act", m->act);
    cJSON_AddBoolToObject(o, "attn_sink", m->attn_sink);
    if (m->stated_params > 0) cJSON_AddNumberToObject(o, "stated_params", (double)m->stated_params);
    cJSON_AddStringToObject(o, "weight_dtype", pc_prec_name(m->weight_prec));
    if (m->note[0]) cJSON_AddStringToObject(o, "note", m->note);
    return o;
}

static cJSON *params_json(const pc_param_counts *p) {
    cJSON *jp = cJSON_CreateObject();
    cJSON_AddNumberToObject(jp, "total", p->total);
    cJSON_AddNumberToObject(jp, "active", p->active);
    cJSON_AddNumberToObject(jp, "non_embedding", p->non_embedding);
    cJSON_AddNumberToObject(jp, "matmul_active", p->matmul_active);
    cJSON_AddNumberToObject(jp, "embedding", p->embedding);
    cJSON_AddNumberToObject(jp, "unembedding", p->unembedding);
    cJSON_AddNumberToObject(jp, "position", p->position);
    cJSON_AddNumberToObject(jp, "attention", p->attention);
    cJSON_AddNumberToObject(jp, "mlp", p->mlp);
    cJSON_AddNumberToObject(jp, "mlp_active", p->mlp_active);
    cJSON_AddNumberToObject(jp, "router", p->router);
    cJSON_AddNumberToObject(jp, "norms", p->norms);
    cJSON_AddNumberToObject(jp, "mtp", p->mtp);
    return jp;
}

static cJSON *flops_json(const pc_flop_counts *fl, double seq, int causal) {
    cJSON *jf = cJSON_CreateObject();
    cJSON_AddNumberToObject(jf, "seq", seq);
    cJSON_AddBoolToObject(jf, "causal", causal);
    cJSON_AddNumberToObject(jf, "train", fl->train);
    cJSON_AddNumberToObject(jf, "train_with_remat", fl->train_remat);
    cJSON_AddNumberToObject(jf, "remat_extra", fl->remat_extra);
    cJSON_AddNumberToObject(jf, "six_n", fl->six_n);
    cJSON_AddNumberToObject(jf, "attention_train", 3 * fl->attention_fwd);
    cJSON_AddNumberToObject(jf, "matmul_train", 3 * fl->matmul);
    cJSON_AddNumberToObject(jf, "prefill", fl->prefill);
    cJSON_AddNumberToObject(jf, "decode", fl->decode);
    cJSON *js = cJSON_AddObjectToObject(jf, "forward_split");
    cJSON_AddNumberToObject(js, "attn_proj", fl->fwd_attn_proj);
    cJSON_AddNumberToObject(js, "dense_mlp", fl->fwd_dense_mlp);
    cJSON_AddNumberToObject(js, "experts", fl->fwd_experts);
    cJSON_AddNumberToObject(js, "shared_experts", fl->fwd_shared);
    cJSON_AddNumberToObject(js, "router", fl->fwd_router);
    cJSON_AddNumberToObject(js, "unembed", fl->fwd_unembed);
    cJSON_AddNumberToObject(js, "attention_core", fl->attention_fwd);
    cJSON_AddNumberToObject(js, "mtp", fl->fwd_mtp);
    cJSON_AddNumberToObject(jf, "keys_global", fl->keys_global);
    cJSON_AddNumberToObject(jf, "keys_local", fl->keys_local);
    return jf;
}

static cJSON *memory_json(const model_rep *r) {
    cJSON *jm = cJSON_CreateObject();
    cJSON_AddNumberToObject(jm, "tokens", r->mo.tokens);
    cJSON_AddStringToObject(jm, "remat", r->remat_s);
    cJSON_AddStringToObject(jm, "optimizer", r->opt_s);
    cJSON_AddNumberToObject(jm, "weights", r->mem.weights);
    cJSON_AddNumberToObject(jm, "grads", r->mem.grads);
    cJSON_AddNumberToObject(jm, "optimizer_state", r->mem.optimizer);
    cJSON_AddNumberToObject(jm, "activations", r->mem.activations);
    cJSON_AddNumberToObject(jm, "total", r->mem.total);
    cJSON_AddNumberToObject(jm, "act_elems_per_token_layer", r->mem.act_elems_per_token_layer);
    cJSON_AddStringToObject(jm, "weight_dtype", pc_prec_name(r->mo.weight_prec));
    cJSON_AddStringToObject(jm, "grad_dtype", pc_prec_name(r->mo.grad_prec));
    cJSON_AddStringToObject(jm, "act_dtype", pc_prec_name(r->mo.act_prec));
    return jm;
}

static const char *attn_conv(pc_attn_flops a) {
    return a == PC_ATTN_NONE     ? "6N, no attention (the book's rule)"
           : a == PC_ATTN_CAUSAL ? "6N + 6 L N H T causal attention"
                                 : "6N + 12 L N H T full attention";
}

static void mfu_json(cJSON *o, const model_req *a, const model_rep *r) {
    const pc_mfu *f = &r->mfu;
    cJSON *j = cJSON_AddObjectToObject(o, "mfu");
    cJSON_AddStringToObject(j, "convention", attn_conv(r->attn));
    cJSON_AddStringToObject(j, "attention", pc_attn_flops_name(r->attn));
    if (a->step > 0) {
        cJSON_AddNumberToObject(j, "step_time", a->step);
        cJSON_AddNumberToObject(j, "chips", a->chips);
    } else {
        cJSON_AddNumberToObject(j, "chip_hours", a->hours);
    }
    cJSON_AddNumberToObject(j, "tokens", r->mfu_tokens);
    cJSON_AddNumberToObject(j, "flops_per_token", f->flops_per_token);
    cJSON_AddNumberToObject(j, "model_flops", f->flops);
    cJSON_AddNumberToObject(j, "achieved_flops_per_chip", f->achieved);
    cJSON_AddNumberToObject(j, "peak_flops_per_chip", f->peak);
    cJSON_AddNumberToObject(j, "mfu", f->mfu);
    cJSON_AddStringToObject(j, "remat", r->remat_s);
    cJSON_AddNumberToObject(j, "hfu", f->hfu);
}

static cJSON *model_doc(const model_req *a, const model_rep *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "model", cfg_json(&r->m));
    cJSON_AddItemToObject(o, "params", params_json(&r->p));
    cJSON_AddItemToObject(o, "flops_per_token", flops_json(&r->fl, r->seq, r->causal));
    cJSON_AddItemToObject(o, "train_memory", memory_json(r));
    cJSON *jk = cJSON_AddObjectToObject(o, "kv_cache");
    cJSON_AddStringToObject(jk, "dtype", pc_prec_name(r->kv));
    cJSON_AddNumberToObject(jk, "bytes_per_token", r->kvb);
    cJSON_AddNumberToObject(jk, "bytes_per_sequence", r->kvs);
    cJSON_AddNumberToObject(o, "weight_bytes", r->p.total * pc_prec_bytes(r->mo.weight_prec));
    /* one shape (docs/json.md): keys that do not apply are null */
    if (r->chip)
        cJSON_AddStringToObject(o, "chip", r->chip->name);
    else
        cJSON_AddNullToObject(o, "chip");
    if (r->m.experts > 0 && r->chip)
        cJSON_AddNumberToObject(o, "moe_critical_batch", r->moe_b);
    else
        cJSON_AddNullToObject(o, "moe_critical_batch");
    if (r->mfu_tokens > 0)
        mfu_json(o, a, r);
    else
        cJSON_AddNullToObject(o, "mfu");
    return o;
}

/* ---- the query -------------------------------------------------------------------------- */

pc_status pc_q_model(const char *request, cJSON **out, pc_error *err) {
    cJSON *root;
    model_req a;
    model_rep *r = calloc(1, sizeof *r);
    if (!r) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pc_status st = pc_qreq_parse(request, "model", MODEL_KEYS, &root, err);
    if (st != PC_OK) {
        free(r);
        return st;
    }
    r->mo = pc_mem_opts_default();
    r->kv = PC_PREC_BF16;
    if ((st = read_req(root, &a, &r->mo, &r->kv, err)) == PC_OK &&
        (st = read_choices(&a, r, err)) == PC_OK && (st = model_build(&a, &r->m, err)) == PC_OK &&
        (st = model_compute(&a, r, err)) == PC_OK) {
        *out = model_doc(&a, r);
        if (!*out) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    pc_chipdb_free(r->db);
    free(r);
    cJSON_Delete(root);
    return st;
}
