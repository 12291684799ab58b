/*
 * Transformer math (scaling_book.md §4, §6, §7): parameters, FLOPs per token,
 * training memory under rematerialization policies, KV cache; models from a
 * Hugging Face config.json, presets, or fields.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/analytic_internal.h"

#define MAX_DIM (INT64_C(1) << 40)

/* ---------------- presets (from the models' published config.json) ---------------- */

typedef struct preset {
    const char *name;
    pc_model_cfg cfg;
} preset;

#define LLAMA(nm, L, D, F, N, K, V)                                                                \
    {                                                                                              \
        nm, {                                                                                      \
            .name = nm, .arch = "llama", .layers = L, .d_model = D, .d_ff = F, .heads = N,         \
            .kv_heads = K, .vocab = V, .gated = 1, .weight_prec = PC_PREC_BF16                     \
        }                                                                                          \
    }

static const preset presets[] = {
    LLAMA("llama3-8b", 32, 4096, 14336, 32, 8, 128256),
    LLAMA("llama3-70b", 80, 8192, 28672, 64, 8, 128256),
    LLAMA("llama3-405b", 126, 16384, 53248, 128, 8, 128256),
    LLAMA("llama2-13b", 40, 5120, 13824, 40, 40, 32000),
    {"mistral-7b",
     {.name = "mistral-7b",
      .arch = "mistral",
      .layers = 32,
      .d_model = 4096,
      .d_ff = 14336,
      .heads = 32,
      .kv_heads = 8,
      .vocab = 32000,
      .gated = 1,
      .weight_prec = PC_PREC_BF16}},
    {"mixtral-8x7b",
     {.name = "mixtral-8x7b",
      .arch = "mixtral",
      .layers = 32,
      .d_model = 4096,
      .d_ff = 14336,
      .heads = 32,
      .kv_heads = 8,
      .vocab = 32000,
      .gated = 1,
      .experts = 8,
      .experts_per_token = 2,
      .weight_prec = PC_PREC_BF16}},
    {"gemma-7b",
     {.name = "gemma-7b",
      .arch = "gemma",
      .layers = 28,
      .d_model = 3072,
      .d_ff = 24576,
      .heads = 16,
      .kv_heads = 16,
      .head_dim = 256,
      .vocab = 256000,
      .tied = 1,
      .gated = 1,
      .weight_prec = PC_PREC_BF16}},
    {"gpt2",
     {.name = "gpt2",
      .arch = "gpt2",
      .layers = 12,
      .d_model = 768,
      .d_ff = 3072,
      .heads = 12,
      .vocab = 50257,
      .positions = 1024,
      .tied = 1,
      .layernorm = 1,
      .qkv_bias = 1,
      .o_bias = 1,
      .mlp_bias = 1,
      .weight_prec = PC_PREC_FP32}},
    {"gpt2-xl",
     {.name = "gpt2-xl",
      .arch = "gpt2",
      .layers = 48,
      .d_model = 1600,
      .d_ff = 6400,
      .heads = 25,
      .vocab = 50257,
      .positions = 1024,
      .tied = 1,
      .layernorm = 1,
      .qkv_bias = 1,
      .o_bias = 1,
      .mlp_bias = 1,
      .weight_prec = PC_PREC_FP32}},
};
#define NUM_PRESETS ((int)(sizeof presets / sizeof presets[0]))

int pc_model_preset_count(void) { return NUM_PRESETS; }
const char *pc_model_preset_name(int i) {
    return i >= 0 && i < NUM_PRESETS ? presets[i].name : NULL;
}

pc_status pc_model_preset(const char *name, pc_model_cfg *out, pc_error *err) {
    for (int i = 0; name && i < NUM_PRESETS; i++)
        if (pc_ascii_ieq(name, presets[i].name)) {
            *out = presets[i].cfg;
            return pc_model_check(out, err);
        }
    char list[512];
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; i < NUM_PRESETS; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                 presets[i].name);
    return pc_fail(err, PC_ERR_NOTFOUND, "unknown preset '%s' (known: %s)", name ? name : "", list);
}

/* ---------------- checking ---------------- */

pc_status pc_model_check(pc_model_cfg *c, pc_error *err) {
    const char *nm = c->name[0] ? c->name : "model";
    const struct {
        const char *what;
        int64_t v;
        int required;
    } f[] = {{"layers (num_hidden_layers)", c->layers, 1},
             {"d_model (hidden_size)", c->d_model, 1},
             {"heads (num_attention_heads)", c->heads, 1},
             {"vocab (vocab_size)", c->vocab, 1},
             {"d_ff (intermediate_size)", c->d_ff, 0},
             {"kv_heads (num_key_value_heads)", c->kv_heads, 0},
             {"head_dim", c->head_dim, 0},
             {"positions", c->positions, 0},
             {"experts", c->experts, 0},
             {"experts_per_token", c->experts_per_token, 0},
             {"d_ff_expert (moe_intermediate_size)", c->d_ff_expert, 0},
             {"shared_experts", c->shared_experts, 0},
             {"d_ff_shared", c->d_ff_shared, 0}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].v < 0 || f[i].v > MAX_DIM || (f[i].required && f[i].v == 0))
            return pc_fail(err, PC_ERR_INVALID, "%s: %s must be %s (got %lld)", nm, f[i].what,
                           f[i].required ? "a positive integer" : "an integer >= 0",
                           (long long)f[i].v);
    }
    if (c->kv_heads == 0) c->kv_heads = c->heads;
    if (c->kv_heads > c->heads || c->heads % c->kv_heads)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: kv_heads (num_key_value_heads) %lld must divide heads "
                       "(num_attention_heads) %lld: each KV head serves a whole group of query "
                       "heads; change it to a divisor of %lld (1 = MQA, %lld = MHA)",
                       nm, (long long)c->kv_heads, (long long)c->heads, (long long)c->heads,
                       (long long)c->heads);
    if (c->head_dim == 0) {
        if (c->d_model % c->heads)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: heads (num_attention_heads) %lld does not divide d_model "
                           "(hidden_size) %lld; give head_dim or change heads to a divisor of %lld",
                           nm, (long long)c->heads, (long long)c->d_model, (long long)c->d_model);
        c->head_dim = c->d_model / c->heads;
    }
    if (c->experts > 0) {
        if (c->experts_per_token < 1 || c->experts_per_token > c->experts)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: experts_per_token (num_experts_per_tok) %lld must be between 1 and "
                           "the %lld experts",
                           nm, (long long)c->experts_per_token, (long long)c->experts);
        if (c->d_ff_expert == 0) c->d_ff_expert = c->d_ff;
        if (c->d_ff_expert == 0)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: MoE needs the expert width: give d_ff (intermediate_size) or "
                           "d_ff_expert (moe_intermediate_size)",
                           nm);
    } else {
        if (c->experts_per_token || c->shared_experts)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: experts_per_token/shared_experts given without experts; set "
                           "experts (num_local_experts) too",
                           nm);
        if (c->d_ff == 0)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: d_ff (intermediate_size) must be a positive "
                           "integer",
                           nm);
    }
    if (c->shared_experts > 0 && c->d_ff_shared == 0) c->d_ff_shared = c->d_ff_expert;
    if (c->norms_per_layer == 0) c->norms_per_layer = 2;
    if (c->norms_per_layer < 0 || c->norms_per_layer > 16)
        return pc_fail(err, PC_ERR_INVALID, "%s: norms_per_layer must be 0..16", nm);
    if ((unsigned)c->weight_prec >= PC_PREC_COUNT) c->weight_prec = PC_PREC_BF16;
    c->tied = !!c->tied, c->gated = !!c->gated, c->layernorm = !!c->layernorm;
    c->qkv_bias = !!c->qkv_bias, c->o_bias = !!c->o_bias, c->mlp_bias = !!c->mlp_bias;
    c->qk_norm = !!c->qk_norm, c->shared_expert_gate = !!c->shared_expert_gate;
    return PC_OK;
}

/* ---------------- parameters, FLOPs, memory ---------------- */

static double mlp_params(const pc_model_cfg *c, double D, double F) {
    double p = (c->gated ? 3.0 : 2.0) * D * F;
    if (c->mlp_bias) p += (c->gated ? 2.0 : 1.0) * F + D;
    return p;
}

void pc_model_params(const pc_model_cfg *c, pc_param_counts *o) {
    memset(o, 0, sizeof *o);
    const double L = (double)c->layers, D = (double)c->d_model, N = (double)c->heads;
    const double K = (double)(c->kv_heads ? c->kv_heads : c->heads);
    const double H = (double)(c->head_dim ? c->head_dim : (c->heads ? c->d_model / c->heads : 0));
    const double V = (double)c->vocab;
    o->embedding = V * D;
    o->unembedding = c->tied ? 0 : V * D;
    o->position = (double)c->positions * D;
    double attn_w = 2 * D * (N + K) * H; /* q, o: D*N*H each; k, v: D*K*H each */
    double attn = attn_w + (c->qkv_bias ? (N + 2 * K) * H : 0) + (c->o_bias ? D : 0);
    o->attention = L * attn;
    double mlp, mlp_act, mlp_w_act, router = 0;
    if (c->experts > 0) {
        double E = (double)c->experts, k = (double)c->experts_per_token;
        double Fe = (double)(c->d_ff_expert ? c->d_ff_expert : c->d_ff);
        double S = (double)c->shared_experts;
        double Fs =
            (double)(c->d_ff_shared ? c->d_ff_shared : (c->d_ff_expert ? c->d_ff_expert : c->d_ff));
        double one = mlp_params(c, D, Fe), shared = S * mlp_params(c, D, Fs);
        if (c->shared_expert_gate && S > 0) shared += D;
        mlp = E * one + shared;
        mlp_act = k * one + shared;
        mlp_w_act = (k * Fe + S * Fs) * (c->gated ? 3.0 : 2.0) * D +
                    (c->shared_expert_gate && S > 0 ? D : 0);
        router = D * E;
    } else {
        mlp = mlp_act = mlp_params(c, D, (double)c->d_ff);
        mlp_w_act = (c->gated ? 3.0 : 2.0) * D * (double)c->d_ff;
    }
    o->mlp = L * mlp;
    o->mlp_active = L * mlp_act;
    o->router = L * router;
    double nv = c->layernorm ? 2.0 : 1.0;
    int npl = c->norms_per_layer ? c->norms_per_layer : 2;
    o->norms = L * (npl * nv * D + (c->qk_norm ? 2 * H : 0)) + nv * D;
    double embed_all = o->embedding + o->unembedding + o->position;
    o->total = embed_all + o->attention + o->mlp + o->router + o->norms;
    o->active = embed_all + o->attention + o->mlp_active + o->router + o->norms;
    o->non_embedding = o->total - embed_all;
    o->matmul_active = L * (attn_w + mlp_w_act + router) + V * D;
}

static const char *const remat_names[PC_REMAT_COUNT] = {"none", "big_matmuls", "full", "tensors"};
const char *pc_remat_name(pc_remat r) {
    return (unsigned)r < PC_REMAT_COUNT ? remat_names[r] : "?";
}
int pc_remat_parse(const char *s) {
    if (!s) return -1;
    for (int i = 0; i < PC_REMAT_COUNT; i++)
        if (pc_ascii_ieq(s, remat_names[i])) return i;
    if (pc_ascii_ieq(s, "dots") || pc_ascii_ieq(s, "big-matmuls") || pc_ascii_ieq(s, "matmuls"))
        return PC_REMAT_BIG_MATMULS;
    if (pc_ascii_ieq(s, "block") || pc_ascii_ieq(s, "layer") || pc_ascii_ieq(s, "layer_input"))
        return PC_REMAT_FULL;
    return -1;
}

void pc_model_flops(const pc_model_cfg *c, double seq, int causal, pc_remat remat,
                    pc_flop_counts *o) {
    memset(o, 0, sizeof *o);
    pc_param_counts p;
    pc_model_params(c, &p);
    const double L = (double)c->layers, N = (double)c->heads;
    const double H = (double)(c->head_dim ? c->head_dim : (c->heads ? c->d_model / c->heads : 0));
    double T = seq > 0 && isfinite(seq) ? seq : 0;
    o->matmul = 2 * p.matmul_active;
    o->attention_fwd = 4 * L * N * H * T * (causal ? 0.5 : 1.0);
    o->train = 3 * o->matmul + 3 * o->attention_fwd; /* 6N + 12 L N H T */
    switch (remat) {
    case PC_REMAT_BIG_MATMULS: o->remat_extra = o->attention_fwd; break;
    case PC_REMAT_FULL:
    case PC_REMAT_TENSORS: o->remat_extra = o->matmul + o->attention_fwd; break;
    default: o->remat_extra = 0;
    }
    o->train_remat = o->train + o->remat_extra;
    o->six_n = 6 * p.active;
    o->prefill = o->matmul + o->attention_fwd;
    o->decode = o->matmul + o->attention_fwd;
}

pc_mem_opts pc_mem_opts_default(void) {
    pc_mem_opts m;
    memset(&m, 0, sizeof m);
    m.weight_prec = PC_PREC_BF16;
    m.grad_prec = PC_PREC_BF16;
    m.act_prec = PC_PREC_BF16;
    m.optimizer = PC_OPT_ADAM;
    m.remat = PC_REMAT_NONE;
    return m;
}

pc_status pc_model_memory(const pc_model_cfg *c, const pc_mem_opts *m, pc_train_memory *o,
                          pc_error *err) {
    memset(o, 0, sizeof *o);
    if (!c || !m) return pc_fail(err, PC_ERR_ARG, "pc_model_memory: NULL argument");
    if (!isfinite(m->tokens) || m->tokens < 0)
        return pc_fail(err, PC_ERR_ARG, "tokens per batch must be finite and >= 0");
    if ((unsigned)m->weight_prec >= PC_PREC_COUNT || (unsigned)m->grad_prec >= PC_PREC_COUNT ||
        (unsigned)m->act_prec >= PC_PREC_COUNT || (unsigned)m->optimizer >= PC_OPT_COUNT ||
        (unsigned)m->remat >= PC_REMAT_COUNT)
        return pc_fail(err, PC_ERR_ARG, "bad memory options (precision, optimizer or remat)");
    if (m->remat == PC_REMAT_TENSORS && !(m->remat_tensors > 0 && isfinite(m->remat_tensors)))
        return pc_fail(err, PC_ERR_ARG,
                       "remat policy 'tensors' needs a positive number of [tokens, D] tensors "
                       "saved per layer");
    pc_param_counts p;
    pc_model_params(c, &p);
    const double D = (double)c->d_model, N = (double)c->heads;
    const double K = (double)(c->kv_heads ? c->kv_heads : c->heads);
    const double H = (double)(c->head_dim ? c->head_dim : (c->heads ? c->d_model / c->heads : 0));
    double f_act; /* MLP hidden width one token passes (all active experts) */
    double router = 0;
    if (c->experts > 0) {
        f_act = (double)c->experts_per_token * (double)c->d_ff_expert +
                (double)c->shared_experts * (double)c->d_ff_shared;
        router = (double)c->experts;
    } else {
        f_act = (double)c->d_ff;
    }
    double units;
    switch (m->remat) {
    case PC_REMAT_NONE:
        /* layer input, norm out, q, k, v, attention out, softmax stats (flash
         * attention: N per token), residual, norm out, MLP hidden tensors */
        units = 4 * D + 2 * N * H + 2 * K * H + N + (c->gated ? 4 : 2) * f_act + router;
        break;
    case PC_REMAT_BIG_MATMULS:
        units = N * H + 2 * K * H + D + (c->gated ? 2 : 1) * f_act + D;
        break;
    case PC_REMAT_FULL: units = D; break;
    default: units = m->remat_tensors * D;
    }
    o->act_elems_per_token_layer = units;
    double params = p.total;
    o->weights = params * pc_prec_bytes(m->weight_prec);
    o->grads = params * pc_prec_bytes(m->grad_prec);
    double opt_b = m->optimizer == PC_OPT_ADAM ? 8 : m->optimizer == PC_OPT_SGD_MOMENTUM ? 4 : 0;
    o->optimizer = params * (opt_b + (m->master_weights ? 4 : 0));
    o->activations = m->tokens * (double)c->layers * units * pc_prec_bytes(m->act_prec);
    o->total = o->weights + o->grads + o->optimizer + o->activations;
    return PC_OK;
}

double pc_model_kv_bytes_per_token(const pc_model_cfg *c, pc_prec prec) {
    const double K = (double)(c->kv_heads ? c->kv_heads : c->heads);
    const double H = (double)(c->head_dim ? c->head_dim : (c->heads ? c->d_model / c->heads : 0));
    return 2 * (double)c->layers * K * H * pc_prec_bytes(prec);
}

double pc_chip_critical_batch(const pc_chip *chip, pc_prec weight_prec, pc_prec act_prec) {
    if (!chip || (unsigned)weight_prec >= PC_PREC_COUNT || (unsigned)act_prec >= PC_PREC_COUNT)
        return 0;
    /* T_math = 2 B D F / C, T_weights = w D F / W_hbm: compute-bound iff B > C w / (2 W_hbm) */
    return pc_chip_critical_intensity(chip, act_prec, PC_LINK_HBM) * pc_prec_bytes(weight_prec) /
           2;
}

double pc_model_moe_critical_batch(const pc_model_cfg *cfg, const pc_chip *chip,
                                   pc_prec weight_prec, pc_prec act_prec) {
    if (!cfg || cfg->experts <= 0 || cfg->experts_per_token <= 0) return 0;
    return pc_chip_critical_batch(chip, weight_prec, act_prec) * (double)cfg->experts /
           (double)cfg->experts_per_token;
}

pc_status pc_model_mfu(const pc_model_cfg *cfg, const pc_chip *chip, pc_prec prec, double seq,
                       pc_attn_flops attention, pc_remat remat, double tokens, double chip_seconds,
                       pc_mfu *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    if (!cfg || !chip) return pc_fail(err, PC_ERR_ARG, "pc_model_mfu: NULL argument");
    if (!(tokens > 0) || !isfinite(tokens))
        return pc_fail(err, PC_ERR_ARG, "MFU: tokens must be finite and > 0");
    if (!(chip_seconds > 0) || !isfinite(chip_seconds))
        return pc_fail(err, PC_ERR_ARG, "MFU: chip-seconds (step time x chips) must be > 0");
    if (!(seq >= 0) || !isfinite(seq) || (unsigned)attention > PC_ATTN_NONE ||
        (unsigned)remat >= PC_REMAT_COUNT || (unsigned)prec >= PC_PREC_COUNT)
        return pc_fail(err, PC_ERR_ARG, "MFU: bad sequence length, attention, remat or precision");
    out->peak = pc_chip_flops(chip, prec);
    if (!(out->peak > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "chip %s has no %s FLOP/s; add flops.%s in a "
                       "--chips-file", chip->name, pc_prec_name(prec), pc_prec_name(prec));
    pc_flop_counts fl;
    pc_model_flops(cfg, attention == PC_ATTN_NONE ? 0 : seq, attention == PC_ATTN_CAUSAL, remat,
                   &fl);
    out->flops_per_token = fl.train;
    out->flops = tokens * fl.train;
    out->achieved = out->flops / chip_seconds;
    out->mfu = out->achieved / out->peak;
    out->hfu = tokens * fl.train_remat / chip_seconds / out->peak;
    return PC_OK;
}

/* ---------------- Hugging Face config.json ---------------- */

typedef struct hf_ctx {
    const cJSON *obj, *root;
    const char *origin;
    pc_error *err;
} hf_ctx;

/* First present, non-null field among names; 1 if found. Errors on bad type. */
static int hf_int(hf_ctx *h, const char *const *names, int64_t *out, pc_status *st) {
    for (const char *const *n = names; *n; n++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(h->obj, *n);
        if (!it && h->root != h->obj) it = cJSON_GetObjectItemCaseSensitive(h->root, *n);
        if (!it || cJSON_IsNull(it)) continue;
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0 ||
            it->valuedouble != floor(it->valuedouble) || it->valuedouble > (double)MAX_DIM) {
            *st = pc_fail(h->err, PC_ERR_INVALID, "%s: \"%s\" must be a non-negative integer",
                          h->origin, *n);
            return 0;
        }
        *out = (int64_t)it->valuedouble;
        return 1;
    }
    return 0;
}

static int hf_bool(hf_ctx *h, const char *name, int *out, pc_status *st) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(h->obj, name);
    if (!it && h->root != h->obj) it = cJSON_GetObjectItemCaseSensitive(h->root, name);
    if (!it || cJSON_IsNull(it)) return 0;
    if (!cJSON_IsBool(it)) {
        *st = pc_fail(h->err, PC_ERR_INVALID, "%s: \"%s\" must be true or false", h->origin, name);
        return 0;
    }
    *out = cJSON_IsTrue(it);
    return 1;
}

static int arch_in(const char *arch, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(arch, *list)) return 1;
    return 0;
}

static void add_note(pc_model_cfg *c, const char *text) {
    size_t l = strlen(c->note);
    snprintf(c->note + l, sizeof c->note - l, "%s%s", l ? "; " : "", text);
}

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

pc_status pc_model_from_hf_json(const char *text, size_t len, const char *origin, pc_model_cfg *out,
                                pc_error *err) {
    memset(out, 0, sizeof *out);
    if (!origin) origin = "config.json";
    cJSON *root = cJSON_ParseWithLength(text ? text : "", len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return pc_fail(err, PC_ERR_FORMAT,
                       "%s: not a JSON object (expected a Hugging Face "
                       "config.json)",
                       origin);
    }
    hf_ctx h = {root, root, origin, err};
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    if (cJSON_IsObject(tc)) h.obj = tc; /* multimodal configs (gemma3, llava, ...) */
    pc_model_cfg c;
    memset(&c, 0, sizeof c);
    pc_status st = PC_OK;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(h.obj, "model_type");
    if (!cJSON_IsString(mt)) mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    snprintf(c.arch, sizeof c.arch, "%s", cJSON_IsString(mt) ? mt->valuestring : "unknown");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "_name_or_path");
    if (cJSON_IsString(nm) && nm->valuestring[0]) {
        snprintf(c.name, sizeof c.name, "%s", nm->valuestring);
    } else {
        const char *slash = strrchr(origin, '/');
        snprintf(c.name, sizeof c.name, "%s", slash ? slash + 1 : origin);
    }
    const char *a = c.arch;
    static const char *const gated_arch[] = {
        "llama",   "mistral", "mixtral",   "qwen2",       "qwen2_moe", "qwen3", "qwen3_moe",
        "gemma",   "gemma2",  "gemma3",    "gemma3_text", "phi3",      "olmo",  "olmo2",
        "granite", "cohere",  "internlm2", "yi",          "deepseek",  NULL};
    static const char *const plain_arch[] = {"gpt2",  "gpt_bigcode", "starcoder2", "gpt_neox",
                                             "opt",   "falcon",      "phi",        "gptj",
                                             "bloom", NULL};
    static const char *const layernorm_arch[] = {"gpt2",  "gpt_bigcode", "starcoder2", "gpt_neox",
                                                 "opt",   "falcon",      "phi",        "gptj",
                                                 "bloom", NULL};
    static const char *const tied_default[] = {"gemma", "gemma2",      "gemma3",  "gemma3_text",
                                               "gpt2",  "gpt_bigcode", "unknown", NULL};
    int known = arch_in(a, gated_arch) || arch_in(a, plain_arch);
    if (cJSON_GetObjectItemCaseSensitive(h.obj, "kv_lora_rank")) {
        cJSON_Delete(root);
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "%s: multi-head latent attention (kv_lora_rank, %s) is not modelled yet; "
                       "give an equivalent GQA shape with flags instead",
                       origin, a);
    }
    c.gated = !arch_in(a, plain_arch);
    c.layernorm = arch_in(a, layernorm_arch);
    c.tied = arch_in(a, tied_default) || !known;
    if (!strcmp(a, "gemma2") || !strcmp(a, "gemma3") || !strcmp(a, "gemma3_text"))
        c.norms_per_layer = 4;
    if (!strcmp(a, "qwen3") || !strcmp(a, "qwen3_moe") || !strcmp(a, "gemma3") ||
        !strcmp(a, "gemma3_text"))
        c.qk_norm = 1;
    if (!strcmp(a, "qwen2") || !strcmp(a, "qwen2_moe")) c.qkv_bias = 1;
    if (!strcmp(a, "gpt2") || !strcmp(a, "gpt_bigcode") || !strcmp(a, "starcoder2"))
        c.qkv_bias = c.o_bias = c.mlp_bias = 1;
    if (!known)
        add_note(&c, "unknown model_type: read as llama-like (gated MLP, RMSNorm, no biases)");

    int64_t v;
    if (hf_int(&h, NAMES("hidden_size", "n_embd", "d_model", "dim"), &v, &st)) c.d_model = v;
    if (!st && hf_int(&h, NAMES("num_hidden_layers", "n_layer", "num_layers", "n_layers"), &v, &st))
        c.layers = v;
    if (!st && hf_int(&h, NAMES("num_attention_heads", "n_head", "num_heads", "n_heads"), &v, &st))
        c.heads = v;
    if (!st && hf_int(&h, NAMES("num_key_value_heads", "n_head_kv", "num_kv_heads", "n_kv_heads"),
                      &v, &st))
        c.kv_heads = v;
    int mq = 0;
    if (!st && hf_bool(&h, "multi_query", &mq, &st) && mq) c.kv_heads = 1;
    if (!st && hf_int(&h, NAMES("head_dim"), &v, &st)) c.head_dim = v;
    if (!st &&
        hf_int(&h, NAMES("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"), &v, &st))
        c.d_ff = v;
    if (!st && hf_int(&h, NAMES("vocab_size", "padded_vocab_size"), &v, &st)) c.vocab = v;
    if (!st && (!strcmp(a, "gpt2") || !strcmp(a, "gpt_bigcode")) &&
        hf_int(&h, NAMES("n_positions", "max_position_embeddings"), &v, &st))
        c.positions = v;
    if (!st) hf_bool(&h, "tie_word_embeddings", &c.tied, &st);
    int b = 0;
    if (!st && hf_bool(&h, "attention_bias", &b, &st)) c.qkv_bias = c.o_bias = b;
    if (!st && hf_bool(&h, "mlp_bias", &b, &st)) c.mlp_bias = b;
    if (!st &&
        hf_int(&h, NAMES("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"),
               &v, &st))
        c.experts = v;
    if (!st &&
        hf_int(&h, NAMES("num_experts_per_tok", "top_k", "moe_top_k", "num_selected_experts"), &v,
               &st) &&
        c.experts > 0)
        c.experts_per_token = v;
    if (!st && c.experts > 0 && hf_int(&h, NAMES("moe_intermediate_size"), &v, &st))
        c.d_ff_expert = v;
    if (!st && c.experts > 0 && hf_int(&h, NAMES("shared_expert_intermediate_size"), &v, &st) &&
        v > 0) {
        c.shared_experts = 1;
        c.d_ff_shared = v;
        c.shared_expert_gate = !strcmp(a, "qwen2_moe");
    }
    if (!st && c.experts > 0 && hf_int(&h, NAMES("n_shared_experts"), &v, &st) && v > 0)
        c.shared_experts = v;
    if (!st && c.experts > 0) {
        int64_t step = 1;
        const cJSON *only = cJSON_GetObjectItemCaseSensitive(h.obj, "mlp_only_layers");
        if ((hf_int(&h, NAMES("decoder_sparse_step"), &step, &st) && step > 1) ||
            (cJSON_IsArray(only) && cJSON_GetArraySize(only) > 0) ||
            cJSON_GetObjectItemCaseSensitive(h.obj, "first_k_dense_replace"))
            add_note(&c, "some layers are dense in this config; counted every layer as MoE");
    }
    if (!st && c.experts == 0 && c.d_ff == 0 && !c.gated && c.d_model > 0) {
        c.d_ff = 4 * c.d_model; /* gpt2: n_inner null means 4 * n_embd */
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    if (!dt) dt = cJSON_GetObjectItemCaseSensitive(h.obj, "torch_dtype");
    if (!dt) dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    int p = cJSON_IsString(dt) ? pc_prec_parse(dt->valuestring) : -1;
    c.weight_prec = p >= 0 ? (pc_prec)p : PC_PREC_BF16;
    cJSON_Delete(root);
    if (st) return st;
    const char *missing = !c.d_model                ? "hidden_size (n_embd)"
                          : !c.layers               ? "num_hidden_layers (n_layer)"
                          : !c.heads                ? "num_attention_heads (n_head)"
                          : !c.vocab                ? "vocab_size"
                          : (!c.d_ff && !c.experts) ? "intermediate_size"
                                                    : NULL;
    if (missing)
        return pc_fail(err, PC_ERR_INVALID, "%s: no %s field: is this a transformer config.json?",
                       origin, missing);
    st = pc_model_check(&c, err);
    if (st) {
        pc_error_prefix(err, "%s", origin);
        return st;
    }
    *out = c;
    return PC_OK;
}

pc_status pc_model_load_hf(const char *path, pc_model_cfg *out, pc_error *err) {
    char *text;
    size_t len;
    pc_status st = pc_analytic_read_text(path, 4u << 20, &text, &len, err);
    if (st) return st;
    st = pc_model_from_hf_json(text, len, path, out, err);
    free(text);
    return st;
}
