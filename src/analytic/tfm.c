/*
 * Transformer math (scaling_book.md §4, §6, §7): parameters, FLOPs per token,
 * training memory under rematerialization policies, KV cache; models from a
 * Hugging Face config.json, presets, or fields.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/analytic_internal.h"

#define MAX_DIM (INT64_C(1) << 40)

/* ---------------- presets (from the models' published config.json) ---------------- */

typedef struct preset {
    const char *name;
    pc_tfm_cfg cfg;
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

int pc_tfm_preset_count(void) { return NUM_PRESETS; }
const char *pc_tfm_preset_name(int i) {
    return i >= 0 && i < NUM_PRESETS ? presets[i].name : NULL;
}

pc_status pc_tfm_preset(const char *name, pc_tfm_cfg *out, pc_error *err) {
    for (int i = 0; name && i < NUM_PRESETS; i++)
        if (pc_ascii_ieq(name, presets[i].name)) {
            *out = presets[i].cfg;
            return pc_tfm_check(out, err);
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

/* Layers with experts: moe_layers, else those i >= dense_layers with
 * (i + 1) % moe_every == 0. */
static int64_t count_moe_layers(const pc_tfm_cfg *c) {
    if (c->experts <= 0) return 0;
    if (c->moe_layers > 0) return c->moe_layers;
    int64_t L = c->layers, d = c->dense_layers < 0 ? 0 : c->dense_layers;
    int64_t s = c->moe_every > 1 ? c->moe_every : 1;
    if (d >= L) return 0;
    return L / s - d / s; /* multiples of s in (d, L] */
}

/* Layers with a sliding window or chunk: local_layers, else all but every
 * global_every-th. */
static int64_t count_local_layers(const pc_tfm_cfg *c) {
    if (c->sliding_window <= 0 && c->attn_chunk <= 0) return 0;
    if (c->local_layers > 0) return c->local_layers;
    return c->global_every > 1 ? c->layers - c->layers / c->global_every : c->layers;
}

pc_status pc_tfm_check(pc_tfm_cfg *c, pc_error *err) {
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
             {"d_ff_shared", c->d_ff_shared, 0},
             {"dense_layers (first_k_dense_replace)", c->dense_layers, 0},
             {"moe_every (interleave_moe_layer_step)", c->moe_every, 0},
             {"moe_layers", c->moe_layers, 0},
             {"mtp_layers (num_nextn_predict_layers)", c->mtp_layers, 0},
             {"q_lora_rank", c->q_lora_rank, 0},
             {"kv_lora_rank", c->kv_lora_rank, 0},
             {"qk_nope_head_dim", c->qk_nope_head_dim, 0},
             {"qk_rope_head_dim", c->qk_rope_head_dim, 0},
             {"v_head_dim", c->v_head_dim, 0},
             {"sliding_window", c->sliding_window, 0},
             {"attn_chunk (attention_chunk_size)", c->attn_chunk, 0},
             {"global_every (sliding_window_pattern)", c->global_every, 0},
             {"local_layers", c->local_layers, 0}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].v < 0 || f[i].v > MAX_DIM || (f[i].required && f[i].v == 0))
            return pc_fail(err, PC_ERR_INVALID, "%s: %s must be %s (got %lld)", nm, f[i].what,
                           f[i].required ? "a positive integer" : "an integer >= 0",
                           (long long)f[i].v);
    }
    if (c->stated_params < 0)
        return pc_fail(err, PC_ERR_INVALID, "%s: stated_params (num_parameters) must be >= 0", nm);
    if (c->kv_heads == 0) c->kv_heads = c->heads;
    if (c->kv_heads > c->heads || c->heads % c->kv_heads)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: kv_heads (num_key_value_heads) %lld must divide heads "
                       "(num_attention_heads) %lld: each KV head serves a whole group of query "
                       "heads; change it to a divisor of %lld (1 = MQA, %lld = MHA)",
                       nm, (long long)c->kv_heads, (long long)c->heads, (long long)c->heads,
                       (long long)c->heads);
    if (c->kv_lora_rank > 0) {
        if (c->qk_nope_head_dim + c->qk_rope_head_dim == 0 || c->v_head_dim == 0)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: multi-head latent attention (kv_lora_rank %lld) needs "
                           "qk_nope_head_dim + qk_rope_head_dim > 0 and v_head_dim > 0 "
                           "(DeepSeek-V3: 128, 64, 128)",
                           nm, (long long)c->kv_lora_rank);
        c->head_dim = c->qk_nope_head_dim + c->qk_rope_head_dim;
    } else if (c->q_lora_rank || c->qk_nope_head_dim || c->qk_rope_head_dim || c->v_head_dim) {
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: q_lora_rank / qk_nope_head_dim / qk_rope_head_dim / v_head_dim are "
                       "multi-head latent attention fields: give kv_lora_rank too (or remove them)",
                       nm);
    }
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
        if (c->moe_every == 0) c->moe_every = 1;
        if (c->dense_layers > c->layers)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: dense_layers (first_k_dense_replace) %lld exceeds the %lld layers",
                           nm, (long long)c->dense_layers, (long long)c->layers);
        if (c->moe_layers > c->layers)
            return pc_fail(err, PC_ERR_INVALID, "%s: moe_layers %lld exceeds the %lld layers", nm,
                           (long long)c->moe_layers, (long long)c->layers);
        c->moe_layers = count_moe_layers(c);
        if (c->moe_layers == 0)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: no layer has experts: dense_layers (first_k_dense_replace) %lld "
                           "and moe_every (interleave_moe_layer_step) %lld leave none of the %lld "
                           "layers MoE",
                           nm, (long long)c->dense_layers, (long long)c->moe_every,
                           (long long)c->layers);
        if (c->moe_layers < c->layers && c->d_ff == 0)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: %lld dense layers need their width: give d_ff (intermediate_size; "
                           "llama4: intermediate_size_mlp)",
                           nm, (long long)(c->layers - c->moe_layers));
    } else {
        if (c->experts_per_token || c->shared_experts || c->moe_layers)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: experts_per_token/shared_experts/moe_layers given without "
                           "experts; set experts (num_local_experts) too",
                           nm);
        if (c->d_ff == 0)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: d_ff (intermediate_size) must be a positive "
                           "integer",
                           nm);
    }
    if (c->shared_experts > 0 && c->d_ff_shared == 0) c->d_ff_shared = c->d_ff_expert;
    if (c->sliding_window > 0 && c->attn_chunk > 0)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: give sliding_window or attn_chunk (attention_chunk_size), not both", nm);
    if (c->local_layers > c->layers)
        return pc_fail(err, PC_ERR_INVALID, "%s: local_layers %lld exceeds the %lld layers", nm,
                       (long long)c->local_layers, (long long)c->layers);
    if (c->local_layers > 0 && c->sliding_window == 0 && c->attn_chunk == 0)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: local_layers given without sliding_window or attn_chunk", nm);
    c->local_layers = count_local_layers(c);
    if (c->norms_per_layer == 0) c->norms_per_layer = 2;
    if (c->norms_per_layer < 0 || c->norms_per_layer > 16)
        return pc_fail(err, PC_ERR_INVALID, "%s: norms_per_layer must be 0..16", nm);
    if ((unsigned)c->weight_prec >= PC_PREC_COUNT) c->weight_prec = PC_PREC_BF16;
    c->tied = !!c->tied, c->gated = !!c->gated, c->layernorm = !!c->layernorm;
    c->qkv_bias = !!c->qkv_bias, c->o_bias = !!c->o_bias, c->mlp_bias = !!c->mlp_bias;
    c->qk_norm = !!c->qk_norm, c->shared_expert_gate = !!c->shared_expert_gate;
    c->router_bias = !!c->router_bias, c->attn_sink = !!c->attn_sink, c->v_norm = !!c->v_norm;
    return PC_OK;
}

/* ---------------- parameters, FLOPs, memory ---------------- */

static double mlp_params(const pc_tfm_cfg *c, double D, double F) {
    double p = (c->gated ? 3.0 : 2.0) * D * F;
    if (c->mlp_bias) p += (c->gated ? 2.0 : 1.0) * F + D;
    return p;
}

/* Per-layer shape terms shared by params, FLOPs, memory and KV cache. */
typedef struct shape {
    double L, D, N, K, H, V;
    double Hqk, Hv;        /* score and value width per head */
    double attn_w;         /* attention matmul weights per layer */
    double attn_extra;     /* attention biases and sinks per layer */
    double attn_norms;     /* q/k/v norms and MLA's LoRA norms per layer (elements) */
    double kv_elems;       /* KV cache elements per token per layer */
    double moeL, denseL;   /* layers with experts / dense MLP */
    double localL;         /* layers with a window or chunk */
    double dense_mlp;      /* params of one dense MLP */
    double dense_w;        /* its matmul weights */
    double moe_mlp;        /* all experts + shared (+ gate) of one MoE layer */
    double moe_act;        /* k routed + shared of one MoE layer */
    double moe_w_routed;   /* matmul weights of the k routed experts */
    double moe_w_shared;   /* ... of the shared experts (+ gate) */
    double router, router_w; /* router params (+ bias) and matmul weights per MoE layer */
    double nv;             /* vectors per norm: 2 LayerNorm, 1 RMSNorm */
    double layer_norms;    /* norm params per layer */
} shape;

static void get_shape(const pc_tfm_cfg *c, shape *s) {
    memset(s, 0, sizeof *s);
    s->L = (double)c->layers, s->D = (double)c->d_model, s->N = (double)c->heads;
    s->K = (double)(c->kv_heads ? c->kv_heads : c->heads);
    s->H = (double)(c->head_dim ? c->head_dim : (c->heads ? c->d_model / c->heads : 0));
    s->V = (double)c->vocab;
    const double D = s->D, N = s->N, K = s->K, H = s->H;
    s->nv = c->layernorm ? 2.0 : 1.0;
    if (c->kv_lora_rank > 0) {
        const double qr = (double)c->q_lora_rank, r = (double)c->kv_lora_rank;
        const double nope = (double)c->qk_nope_head_dim, rope = (double)c->qk_rope_head_dim;
        const double v = (double)c->v_head_dim;
        s->Hqk = nope + rope, s->Hv = v;
        s->attn_w = (qr > 0 ? D * qr + qr * N * s->Hqk : D * N * s->Hqk) /* q */
                    + D * (r + rope) + r * N * (nope + v)                  /* kv_a, kv_b */
                    + N * v * D;                                           /* o */
        s->attn_extra = (c->qkv_bias ? (qr > 0 ? qr : N * s->Hqk) + r + rope : 0) +
                        (c->o_bias ? D : 0);
        s->attn_norms = s->nv * ((qr > 0 ? qr : 0) + r);
        s->kv_elems = r + rope;
    } else {
        s->Hqk = s->Hv = H;
        s->attn_w = 2 * D * (N + K) * H; /* q, o: D*N*H each; k, v: D*K*H each */
        s->attn_extra = (c->qkv_bias ? (N + 2 * K) * H : 0) + (c->o_bias ? D : 0);
        s->attn_norms = (c->qk_norm ? 2 * H : 0) + (c->v_norm ? H : 0);
        s->kv_elems = 2 * K * H;
    }
    if (c->attn_sink) s->attn_extra += N;
    s->moeL = (double)count_moe_layers(c);
    s->denseL = s->L - s->moeL;
    s->localL = (double)count_local_layers(c);
    if (s->localL > s->L) s->localL = s->L;
    const double mult = c->gated ? 3.0 : 2.0;
    s->dense_mlp = mlp_params(c, D, (double)c->d_ff);
    s->dense_w = mult * D * (double)c->d_ff;
    if (c->experts > 0) {
        double E = (double)c->experts, k = (double)c->experts_per_token;
        double Fe = (double)(c->d_ff_expert ? c->d_ff_expert : c->d_ff);
        double S = (double)c->shared_experts;
        double Fs = (double)(c->d_ff_shared ? c->d_ff_shared : (double)Fe);
        double one = mlp_params(c, D, Fe), shared = S * mlp_params(c, D, Fs);
        double gate = c->shared_expert_gate && S > 0 ? D : 0;
        s->moe_mlp = E * one + shared + gate;
        s->moe_act = k * one + shared + gate;
        s->moe_w_routed = k * Fe * mult * D;
        s->moe_w_shared = S * Fs * mult * D + gate;
        s->router_w = D * E;
        s->router = D * E + (c->router_bias ? E : 0);
    }
    int npl = c->norms_per_layer ? c->norms_per_layer : 2;
    s->layer_norms = npl * s->nv * D + s->attn_norms;
}

void pc_tfm_params(const pc_tfm_cfg *c, pc_param_counts *o) {
    memset(o, 0, sizeof *o);
    shape s;
    get_shape(c, &s);
    const double L = s.L, D = s.D, V = s.V;
    o->embedding = V * D;
    o->unembedding = c->tied ? 0 : V * D;
    o->position = (double)c->positions * D;
    o->attention = L * (s.attn_w + s.attn_extra);
    o->mlp = s.denseL * s.dense_mlp + s.moeL * s.moe_mlp;
    o->mlp_active = s.denseL * s.dense_mlp + s.moeL * s.moe_act;
    o->router = s.moeL * s.router;
    o->norms = L * s.layer_norms + s.nv * D;
    if (c->mtp_layers > 0) {
        /* one block (an MoE layer when the model has experts) + eh_proj [2D, D] +
         * enorm, hnorm and the head's norm; embedding and head shared */
        double block = s.attn_w + s.attn_extra + s.layer_norms +
                       (c->experts > 0 ? s.moe_mlp + s.router : s.dense_mlp);
        o->mtp = (double)c->mtp_layers * (block + 2 * D * D + 3 * s.nv * D);
    }
    double embed_all = o->embedding + o->unembedding + o->position;
    o->total = embed_all + o->attention + o->mlp + o->router + o->norms + o->mtp;
    o->active = embed_all + o->attention + o->mlp_active + o->router + o->norms;
    o->non_embedding = o->total - embed_all;
    o->matmul_active = L * s.attn_w + s.denseL * s.dense_w +
                       s.moeL * (s.moe_w_routed + s.moe_w_shared + s.router_w) + V * D;
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

int pc_remat_parse_list(const char *v, unsigned *mask, double *k) {
    if (!v || !mask || !k) return -1;
    if (!strcmp(v, "all")) {
        *mask = (1u << PC_REMAT_NONE) | (1u << PC_REMAT_BIG_MATMULS) | (1u << PC_REMAT_FULL);
        return 0;
    }
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", v) >= (int)sizeof buf) return -1;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strncmp(t, "tensors:", 8) || !strncmp(t, "tensors=", 8)) {
            char *end;
            *k = strtod(t + 8, &end);
            if (*end || !(*k > 0) || *k > 1e6) return -1;
            *mask |= 1u << PC_REMAT_TENSORS;
            continue;
        }
        int r = pc_remat_parse(t);
        if (r < 0 || r == PC_REMAT_TENSORS) return -1;
        *mask |= 1u << r;
    }
    return *mask ? 0 : -1;
}

/* Average keys one token attends at sequence length T (see pc_flop_counts). */
static double keys_window(double T, double W, int causal) {
    if (!causal) return T < W ? T : W;
    return T <= W ? T / 2 : W - W * W / (2 * T);
}
static double keys_chunk(double T, double C, int causal) {
    if (T <= 0) return 0;
    if (!causal) {
        double r = fmod(T, C);
        return r > 0 ? r : C;
    }
    double q = floor(T / C), r = T - q * C;
    return (q * C * C / 2 + r * r / 2) / T;
}

void pc_tfm_flops(const pc_tfm_cfg *c, double seq, int causal, pc_remat remat,
                    pc_flop_counts *o) {
    memset(o, 0, sizeof *o);
    pc_param_counts p;
    pc_tfm_params(c, &p);
    shape s;
    get_shape(c, &s);
    double T = seq > 0 && isfinite(seq) ? seq : 0;
    o->matmul = 2 * p.matmul_active;
    o->fwd_attn_proj = 2 * s.L * s.attn_w;
    o->fwd_dense_mlp = 2 * s.denseL * s.dense_w;
    o->fwd_experts = 2 * s.moeL * s.moe_w_routed;
    o->fwd_shared = 2 * s.moeL * s.moe_w_shared;
    o->fwd_router = 2 * s.moeL * s.router_w;
    o->fwd_unembed = 2 * s.V * s.D;
    if (c->mtp_layers > 0)
        o->fwd_mtp = 2 * (double)c->mtp_layers *
                     (s.attn_w + (c->experts > 0 ? s.moe_w_routed + s.moe_w_shared + s.router_w
                                                 : s.dense_w) +
                      2 * s.D * s.D + s.V * s.D);
    const double per_key = 2 * s.N * (s.Hqk + s.Hv); /* QK^T + AV per key, one layer */
    o->keys_global = causal ? T / 2 : T;
    if (s.localL > 0)
        o->keys_local = c->sliding_window > 0
                            ? keys_window(T, (double)c->sliding_window, causal)
                            : keys_chunk(T, (double)c->attn_chunk, causal);
    o->attn_core_layer_global = per_key * o->keys_global;
    o->attn_core_layer_local = per_key * o->keys_local;
    o->attention_fwd = (s.L - s.localL) * o->attn_core_layer_global +
                       s.localL * o->attn_core_layer_local;
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
    m.struct_size = sizeof m;
    m.weight_prec = PC_PREC_BF16;
    m.grad_prec = PC_PREC_BF16;
    m.act_prec = PC_PREC_BF16;
    m.optimizer = PC_OPT_ADAM;
    m.remat = PC_REMAT_NONE;
    return m;
}

pc_status pc_tfm_memory(const pc_tfm_cfg *c, const pc_mem_opts *m, pc_train_memory *o,
                          pc_error *err) {
    memset(o, 0, sizeof *o);
    if (!c || !m) return pc_fail(err, PC_ERR_ARG, "pc_tfm_memory: NULL argument");
    if (PC_CHECK_SIZE(err, pc_mem_opts, m)) return PC_ERR_ARG;
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
    pc_tfm_params(c, &p);
    shape s;
    get_shape(c, &s);
    const double D = s.D, N = s.N;
    /* q, k, v, attention-out widths per token (MLA: k and v after kv_b) */
    const double qw = N * s.Hqk, ow = N * s.Hv;
    const double kw = c->kv_lora_rank > 0 ? N * s.Hqk : s.K * s.H;
    const double vw = c->kv_lora_rank > 0 ? N * s.Hv : s.K * s.H;
    /* MLP hidden width one token passes (all active experts), averaged over layers */
    double f_act = (double)c->d_ff, router = 0;
    if (c->experts > 0 && s.L > 0) {
        double f_moe = (double)c->experts_per_token * (double)c->d_ff_expert +
                       (double)c->shared_experts * (double)c->d_ff_shared;
        f_act = (s.moeL * f_moe + s.denseL * (double)c->d_ff) / s.L;
        router = (double)c->experts * s.moeL / s.L;
    }
    double units;
    switch (m->remat) {
    case PC_REMAT_NONE:
        /* layer input, norm out, q, k, v, attention out, softmax stats (flash
         * attention: N per token), residual, norm out, MLP hidden tensors */
        units = 4 * D + qw + ow + kw + vw + N + (c->gated ? 4 : 2) * f_act + router;
        break;
    case PC_REMAT_BIG_MATMULS:
        units = qw + kw + vw + D + (c->gated ? 2 : 1) * f_act + D;
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

double pc_tfm_kv_bytes_per_token(const pc_tfm_cfg *c, pc_prec prec) {
    shape s;
    get_shape(c, &s);
    return s.L * s.kv_elems * pc_prec_bytes(prec);
}

double pc_tfm_kv_bytes_per_seq(const pc_tfm_cfg *c, pc_prec prec, double S) {
    if (!(S > 0) || !isfinite(S)) return 0;
    shape s;
    get_shape(c, &s);
    if (s.localL <= 0) return s.L * s.kv_elems * pc_prec_bytes(prec) * S;
    double local_S = S;
    if (s.localL > 0) {
        double w = c->sliding_window > 0 ? (double)c->sliding_window : (double)c->attn_chunk;
        if (w < local_S) local_S = w;
    }
    return s.kv_elems * pc_prec_bytes(prec) * ((s.L - s.localL) * S + s.localL * local_S);
}

double pc_chip_critical_batch(const pc_chip *chip, pc_prec weight_prec, pc_prec act_prec) {
    if (!chip || (unsigned)weight_prec >= PC_PREC_COUNT || (unsigned)act_prec >= PC_PREC_COUNT)
        return 0;
    /* T_math = 2 B D F / C, T_weights = w D F / W_hbm: compute-bound iff B > C w / (2 W_hbm) */
    return pc_chip_critical_intensity(chip, act_prec, PC_LINK_HBM) * pc_prec_bytes(weight_prec) /
           2;
}

double pc_tfm_moe_critical_batch(const pc_tfm_cfg *cfg, const pc_chip *chip,
                                   pc_prec weight_prec, pc_prec act_prec) {
    if (!cfg || cfg->experts <= 0 || cfg->experts_per_token <= 0) return 0;
    return pc_chip_critical_batch(chip, weight_prec, act_prec) * (double)cfg->experts /
           (double)cfg->experts_per_token;
}

pc_status pc_tfm_mfu(const pc_tfm_cfg *cfg, const pc_chip *chip, pc_prec prec, double seq,
                       pc_attn_flops attention, pc_remat remat, double tokens, double chip_seconds,
                       pc_mfu *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    if (!cfg || !chip) return pc_fail(err, PC_ERR_ARG, "pc_tfm_mfu: NULL argument");
    if (!(tokens > 0) || !isfinite(tokens))
        return pc_fail(err, PC_ERR_ARG, "MFU: tokens must be finite and > 0");
    if (!(chip_seconds > 0) || !isfinite(chip_seconds))
        return pc_fail(err, PC_ERR_ARG, "MFU: chip-seconds (step time x chips) must be > 0");
    if (!(seq >= 0) || !isfinite(seq) || (unsigned)attention > PC_ATTN_NONE ||
        (unsigned)remat >= PC_REMAT_COUNT || (unsigned)prec >= PC_PREC_COUNT)
        return pc_fail(err, PC_ERR_ARG, "MFU: bad sequence length, attention, remat or precision");
    out->peak = pc_chip_flops(chip, prec);
    if (!(out->peak > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "chip %s has no %s FLOP/s; add flops.%s in the chip (pc_chip or chips "
                       "JSON)",
                       chip->name, pc_prec_name(prec), pc_prec_name(prec));
    pc_flop_counts fl;
    pc_tfm_flops(cfg, attention == PC_ATTN_NONE ? 0 : seq, attention == PC_ATTN_CAUSAL, remat,
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
    const char *found; /* the name hf_int found last (for messages) */
} hf_ctx;

/* A field of the text config, else of the top level (multimodal configs). */
static const cJSON *hf_get(const hf_ctx *h, const char *name) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(h->obj, name);
    if (!it && h->root != h->obj) it = cJSON_GetObjectItemCaseSensitive(h->root, name);
    return it;
}

/* 1 if the field is present with the value null ("not stated"). */
static int hf_null(const hf_ctx *h, const char *name) {
    const cJSON *it = hf_get(h, name);
    return it && cJSON_IsNull(it);
}

/* First present, non-null field among names; 1 if found. Errors on bad type. */
static int hf_int(hf_ctx *h, const char *const *names, int64_t *out, pc_status *st) {
    if (*st) return 0;
    for (const char *const *n = names; *n; n++) {
        const cJSON *it = hf_get(h, *n);
        if (!it || cJSON_IsNull(it)) continue;
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0 ||
            it->valuedouble != floor(it->valuedouble) || it->valuedouble > (double)MAX_DIM) {
            *st = pc_fail(h->err, PC_ERR_INVALID, "%s: \"%s\" must be a non-negative integer",
                          h->origin, *n);
            return 0;
        }
        *out = (int64_t)it->valuedouble;
        h->found = *n;
        return 1;
    }
    return 0;
}

/* A stated count that must not be zero (0 is not "absent"): PC_ERR_INVALID naming it. */
static void hf_nonzero(hf_ctx *h, int64_t v, const char *why, pc_status *st) {
    if (*st || v != 0) return;
    *st = pc_fail(h->err, PC_ERR_INVALID, "%s: \"%s\" is 0; expected >= 1 (%s)", h->origin,
                  h->found, why);
}

static int hf_bool(hf_ctx *h, const char *name, int *out, pc_status *st) {
    if (*st) return 0;
    const cJSON *it = hf_get(h, name);
    if (!it || cJSON_IsNull(it)) return 0;
    if (!cJSON_IsBool(it)) {
        *st = pc_fail(h->err, PC_ERR_INVALID, "%s: \"%s\" must be true or false", h->origin, name);
        return 0;
    }
    *out = cJSON_IsTrue(it);
    return 1;
}

/* A string field; NULL if absent or null, error if another type. */
static const char *hf_str(hf_ctx *h, const char *name, pc_status *st) {
    if (*st) return NULL;
    const cJSON *it = hf_get(h, name);
    if (!it || cJSON_IsNull(it)) return NULL;
    if (!cJSON_IsString(it)) {
        *st = pc_fail(h->err, PC_ERR_INVALID, "%s: \"%s\" must be a string", h->origin, name);
        return NULL;
    }
    return it->valuestring;
}

static int arch_in(const char *arch, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(arch, *list)) return 1;
    return 0;
}

static void add_note(pc_tfm_cfg *c, const char *fmt, ...) PC_PRINTF(2, 3);
static void add_note(pc_tfm_cfg *c, const char *fmt, ...) {
    size_t l = strlen(c->note);
    if (l + 3 >= sizeof c->note) return;
    if (l) {
        c->note[l++] = ';';
        c->note[l++] = ' ';
        c->note[l] = '\0';
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note + l, sizeof c->note - l, fmt, ap);
    va_end(ap);
}

/* Sets *field to v when the config did not state it, with a note. */
static void fam_default(pc_tfm_cfg *c, int64_t *field, const char *key, int64_t v,
                        const char *family) {
    if (*field) return;
    *field = v;
    add_note(c, "%s not stated: %s default %lld", key, family, (long long)v);
}

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Activations an MLP may use (transformers' ACT2FN names plus the
 * calibration files' relu2 / gpt_oss_swiglu). */
static const char *const known_acts[] = {
    "silu", "swish", "gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh",
    "gelu_python", "gelu_accurate", "gelu_10", "quick_gelu", "relu", "relu2",
    "squared_relu", "relu6", "leaky_relu", "tanh", "sigmoid", "mish",
    "linear", "gpt_oss_swiglu", "swiglu", "geglu", "reglu", "xielu",
    NULL};

/* Counts the entries of a per-layer array that are local ("sliding_attention",
 * "chunked_attention"); -1 after an error. */
static int64_t count_layer_types(hf_ctx *h, const cJSON *arr, int64_t layers, pc_status *st) {
    int64_t n = 0, i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it)) {
            *st = pc_fail(h->err, PC_ERR_INVALID, "%s: \"layer_types\"[%lld] must be a string",
                          h->origin, (long long)i);
            return -1;
        }
        const char *t = it->valuestring;
        if (!strcmp(t, "sliding_attention") || !strcmp(t, "chunked_attention") ||
            !strcmp(t, "local_attention") || !strcmp(t, "sliding"))
            n++;
        else if (strcmp(t, "full_attention") && strcmp(t, "global_attention") &&
                 strcmp(t, "attention") && strcmp(t, "full")) {
            *st = pc_fail(h->err, PC_ERR_UNSUPPORTED,
                          "%s: \"layer_types\"[%lld] is \"%s\": only full, sliding and chunked "
                          "attention layers are modelled",
                          h->origin, (long long)i, t);
            return -1;
        }
        i++;
    }
    if (layers > 0 && i != layers) {
        *st = pc_fail(h->err, PC_ERR_INVALID,
                      "%s: \"layer_types\" has %lld entries for %lld layers (num_hidden_layers)",
                      h->origin, (long long)i, (long long)layers);
        return -1;
    }
    return n;
}

pc_status pc_tfm_from_hf_json(const char *text, size_t len, const char *origin, pc_tfm_cfg *out,
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
    hf_ctx h = {root, root, origin, err, ""};
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    if (cJSON_IsObject(tc)) h.obj = tc; /* multimodal configs (gemma3, llama4, qwen-vl, ...) */
    pc_tfm_cfg c;
    memset(&c, 0, sizeof c);
    pc_status st = PC_OK;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(h.obj, "model_type");
    if (!cJSON_IsString(mt)) mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    snprintf(c.arch, sizeof c.arch, "%s", cJSON_IsString(mt) ? mt->valuestring : "unknown");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "_name_or_path");
    if (!cJSON_IsString(nm) || !nm->valuestring[0])
        nm = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (cJSON_IsString(nm) && nm->valuestring[0]) {
        snprintf(c.name, sizeof c.name, "%s", nm->valuestring);
    } else {
        const char *slash = strrchr(origin, '/');
        snprintf(c.name, sizeof c.name, "%s", slash ? slash + 1 : origin);
    }
    const char *a = c.arch;
    static const char *const gated_arch[] = {
        "llama",       "mistral",       "mixtral",      "qwen2",        "qwen2_moe",
        "qwen3",       "qwen3_moe",     "gemma",        "gemma2",       "gemma3",
        "gemma3_text", "phi3",          "olmo",         "olmo2",        "granite",
        "cohere",      "internlm2",     "yi",           "deepseek",     "deepseek_v2",
        "deepseek_v3", "kimi_k2",       "llama4",       "llama4_text",  "gpt_oss",
        "qwen2_vl",    "qwen2_5_vl",    "qwen2_5_vl_text", "qwen3_vl",  "qwen3_vl_text",
        "qwen3_vl_moe", "qwen3_vl_moe_text", "mistral3", "cohere2",     NULL};
    static const char *const plain_arch[] = {"gpt2",     "gpt_bigcode", "starcoder2", "gpt_neox",
                                             "opt",      "falcon",      "phi",        "gptj",
                                             "bloom",    "nemotron",    "maxtext-decoder-2023",
                                             NULL};
    static const char *const layernorm_arch[] = {"gpt2",  "gpt_bigcode", "starcoder2", "gpt_neox",
                                                 "opt",   "falcon",      "phi",        "gptj",
                                                 "bloom", "nemotron",    NULL};
    static const char *const tied_default[] = {"gemma",       "gemma2",  "gemma3",
                                               "gemma3_text", "gpt2",    "gpt_bigcode",
                                               "unknown",     "maxtext-decoder-2023", NULL};
    const int known = arch_in(a, gated_arch) || arch_in(a, plain_arch);
    const int gemma2 = !strcmp(a, "gemma2");
    const int gemma3 = !strcmp(a, "gemma3") || !strcmp(a, "gemma3_text");
    const int llama4 = !strcmp(a, "llama4") || !strcmp(a, "llama4_text");
    const int deepseek = !strcmp(a, "deepseek_v2") || !strcmp(a, "deepseek_v3") ||
                         !strcmp(a, "kimi_k2") || !strcmp(a, "deepseek");
    const int gptoss = !strcmp(a, "gpt_oss");
    const int gpt2 = !strcmp(a, "gpt2");
    const int maxtext = !strcmp(a, "maxtext-decoder-2023");
    c.gated = !arch_in(a, plain_arch);
    c.layernorm = arch_in(a, layernorm_arch);
    c.tied = arch_in(a, tied_default) || !known;
    if (gemma2 || gemma3) c.norms_per_layer = 4;
    if (!strcmp(a, "qwen3") || !strcmp(a, "qwen3_moe") || gemma3) c.qk_norm = 1;
    if (!strcmp(a, "qwen2") || !strcmp(a, "qwen2_moe")) c.qkv_bias = 1;
    if (gpt2 || !strcmp(a, "gpt_bigcode") || !strcmp(a, "starcoder2"))
        c.qkv_bias = c.o_bias = c.mlp_bias = 1;
    if (gptoss) c.qkv_bias = c.o_bias = c.mlp_bias = c.router_bias = c.attn_sink = 1;
    if (!strcmp(a, "deepseek_v3") || !strcmp(a, "kimi_k2")) c.router_bias = 1;
    if (maxtext) c.norms_per_layer = 1, c.qk_norm = c.v_norm = 1;
    if (!known)
        add_note(&c, "unknown model_type: read as llama-like (gated MLP, RMSNorm, no biases)");

    int64_t v;
    int b = 0;
    if (hf_int(&h, NAMES("hidden_size", "n_embd", "d_model", "dim"), &v, &st)) c.d_model = v;
    if (hf_int(&h, NAMES("num_hidden_layers", "n_layer", "num_layers", "n_layers"), &v, &st))
        c.layers = v;
    if (hf_int(&h, NAMES("num_attention_heads", "n_head", "num_heads", "n_heads"), &v, &st))
        c.heads = v;
    if (hf_int(&h, NAMES("num_key_value_heads", "n_head_kv", "num_kv_heads", "n_kv_heads"), &v,
               &st)) {
        hf_nonzero(&h, v, "leave it out for one KV head per query head", &st);
        c.kv_heads = v;
    }
    int mq = 0;
    if (hf_bool(&h, "multi_query", &mq, &st) && mq) c.kv_heads = 1;

    /* multi-head latent attention */
    if (hf_int(&h, NAMES("kv_lora_rank"), &v, &st)) c.kv_lora_rank = v;
    if (c.kv_lora_rank > 0) {
        if (hf_int(&h, NAMES("q_lora_rank"), &v, &st))
            c.q_lora_rank = v;
        else
            add_note(&c, "q_lora_rank not stated: q projected directly (no LoRA)");
        if (hf_int(&h, NAMES("qk_nope_head_dim"), &v, &st)) c.qk_nope_head_dim = v;
        if (hf_int(&h, NAMES("qk_rope_head_dim"), &v, &st)) c.qk_rope_head_dim = v;
        if (hf_int(&h, NAMES("v_head_dim"), &v, &st)) c.v_head_dim = v;
        fam_default(&c, &c.qk_nope_head_dim, "qk_nope_head_dim", 128, "deepseek");
        fam_default(&c, &c.qk_rope_head_dim, "qk_rope_head_dim", 64, "deepseek");
        fam_default(&c, &c.v_head_dim, "v_head_dim", 128, "deepseek");
        /* head_dim in MLA configs is the RoPE width; the score width is nope + rope */
    } else if (hf_int(&h, NAMES("head_dim"), &v, &st)) {
        c.head_dim = v;
    }

    /* MLP widths */
    if (llama4) {
        /* llama4: intermediate_size is the expert width, intermediate_size_mlp the dense one */
        if (hf_int(&h, NAMES("intermediate_size_mlp"), &v, &st)) c.d_ff = v;
        if (hf_int(&h, NAMES("moe_intermediate_size", "intermediate_size"), &v, &st))
            c.d_ff_expert = v;
    } else if (hf_int(&h, NAMES("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"), &v,
                      &st)) {
        c.d_ff = v;
    }
    if (hf_int(&h, NAMES("vocab_size", "padded_vocab_size"), &v, &st)) c.vocab = v;
    if (!st && (gpt2 || !strcmp(a, "gpt_bigcode")) &&
        hf_int(&h, NAMES("n_positions", "max_position_embeddings"), &v, &st))
        c.positions = v;
    const char *pe = hf_str(&h, "position_embedding", &st);
    if (pe && !strcmp(pe, "learned") && !c.positions &&
        hf_int(&h, NAMES("max_position_embeddings", "n_positions"), &v, &st))
        c.positions = v;
    else if (pe && strcmp(pe, "learned"))
        c.positions = 0;
    hf_bool(&h, "tie_word_embeddings", &c.tied, &st);
    if (hf_bool(&h, "bias", &b, &st)) c.qkv_bias = c.o_bias = c.mlp_bias = b;
    if (hf_bool(&h, "attention_bias", &b, &st)) c.qkv_bias = c.o_bias = b;
    if (hf_bool(&h, "mlp_bias", &b, &st)) c.mlp_bias = b;
    hf_bool(&h, "attention_sink", &c.attn_sink, &st);
    hf_bool(&h, "qk_norm", &c.qk_norm, &st);
    hf_bool(&h, "v_norm", &c.v_norm, &st);
    if (hf_bool(&h, "parallel_block", &b, &st) && b) c.norms_per_layer = 1;
    const char *norm = hf_str(&h, "norm", &st);
    if (norm) {
        if (!strcmp(norm, "layernorm") || !strcmp(norm, "layernorm1p"))
            c.layernorm = 1;
        else if (!strcmp(norm, "rmsnorm"))
            c.layernorm = 0;
        else if (!st)
            st = pc_fail(err, PC_ERR_UNSUPPORTED,
                         "%s: \"norm\" is \"%s\": expected layernorm, layernorm1p or rmsnorm",
                         origin, norm);
    }

    /* activation and gating */
    const char *act = NULL;
    for (const char *const *n = NAMES("hidden_act", "hidden_activation", "activation_function");
         *n && !act && !st; n++) {
        act = hf_str(&h, *n, &st);
        if (act && !arch_in(act, known_acts) && !st)
            st = pc_fail(err, PC_ERR_UNSUPPORTED,
                         "%s: \"%s\" is \"%s\", an activation perfcast does not know (silu, gelu, "
                         "gelu_new, gelu_pytorch_tanh, relu, relu2, gpt_oss_swiglu, ...)",
                         origin, *n, act);
    }
    if (act) {
        snprintf(c.act, sizeof c.act, "%s", act);
        if (!strcmp(act, "gpt_oss_swiglu") || !strcmp(act, "swiglu") || !strcmp(act, "geglu") ||
            !strcmp(act, "reglu"))
            c.gated = 1;
    }
    hf_bool(&h, "mlp_gated", &c.gated, &st);

    /* mixture of experts */
    if (hf_int(&h, NAMES("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"),
               &v, &st)) {
        c.experts = v;
        int64_t k = 0;
        const char *ename = h.found;
        if (v == 0 &&
            hf_int(&h, NAMES("num_experts_per_tok", "experts_per_token", "top_k", "moe_top_k",
                             "num_selected_experts"),
                   &k, &st) &&
            k > 0)
            st = pc_fail(h.err, PC_ERR_INVALID, "%s: \"%s\" is 0 but \"%s\" routes each token "
                         "to %lld experts; expected >= %lld experts (or no routing fields for a "
                         "dense model)", h.origin, ename, h.found, (long long)k, (long long)k);
    }
    if (llama4 && !c.experts && !hf_null(&h, "num_local_experts")) {
        /* absent: Llama4TextConfig's default */
        fam_default(&c, &c.experts, "num_local_experts", 16, "llama4");
    }
    if (c.experts > 0) {
        if (hf_int(&h,
                   NAMES("num_experts_per_tok", "experts_per_token", "top_k", "moe_top_k",
                         "num_selected_experts"),
                   &v, &st))
            c.experts_per_token = v;
        if (!llama4 && hf_int(&h, NAMES("moe_intermediate_size"), &v, &st)) c.d_ff_expert = v;
        if (hf_int(&h, NAMES("shared_expert_intermediate_size"), &v, &st) && v > 0) {
            c.shared_experts = 1;
            c.d_ff_shared = v;
            c.shared_expert_gate = !strcmp(a, "qwen2_moe");
        }
        if (hf_int(&h, NAMES("n_shared_experts", "num_shared_experts"), &v, &st)) {
            c.shared_experts = v;
            if (v == 0) c.d_ff_shared = 0;
        } else if (llama4 && !c.shared_experts) {
            c.shared_experts = 1; /* Llama4TextMoe always has one shared expert */
        }
        if (hf_int(&h, NAMES("first_k_dense_replace"), &v, &st)) c.dense_layers = v;
        if (hf_int(&h, NAMES("interleave_moe_layer_step", "decoder_sparse_step"), &v, &st))
            c.moe_every = v;
        if (hf_int(&h, NAMES("moe_layer_freq"), &v, &st) && v > 1) {
            c.moe_every = v;
            add_note(&c, "moe_layer_freq %lld read as every %lld-th layer MoE", (long long)v,
                     (long long)v);
        }
        const cJSON *only = hf_get(&h, "mlp_only_layers");
        const cJSON *moel = hf_get(&h, "moe_layers");
        if (!st && cJSON_IsArray(moel) && cJSON_GetArraySize(moel) > 0) {
            c.moe_layers = cJSON_GetArraySize(moel);
        } else if (!st && cJSON_IsArray(only) && cJSON_GetArraySize(only) > 0 && c.layers > 0) {
            /* the pattern's MoE layers less the distinct listed ones among them */
            int64_t step = c.moe_every > 1 ? c.moe_every : 1;
            int64_t n = c.dense_layers >= c.layers ? 0 : c.layers / step - c.dense_layers / step;
            int cnt = cJSON_GetArraySize(only);
            if (cnt > 4096)
                st = pc_fail(err, PC_ERR_INVALID,
                             "%s: \"mlp_only_layers\" has %d entries (at most 4096)", origin, cnt);
            const cJSON *it;
            cJSON_ArrayForEach(it, only) {
                if (st) break;
                if (!cJSON_IsNumber(it)) continue;
                double i = it->valuedouble;
                if (i != floor(i) || i < (double)c.dense_layers || i >= (double)c.layers ||
                    fmod(i + 1, (double)step) != 0)
                    continue;
                int seen = 0;
                for (const cJSON *jt = only->child; jt && jt != it && !seen; jt = jt->next)
                    seen = cJSON_IsNumber(jt) && jt->valuedouble == i;
                n -= !seen;
            }
            c.moe_layers = n;
            if (n == 0) {
                add_note(&c, "mlp_only_layers makes every layer dense");
                c.experts = c.shared_experts = c.d_ff_shared = c.moe_layers = 0;
            }
        }
    }
    if (c.experts > 0) {
        if (hf_int(&h, NAMES("num_nextn_predict_layers"), &v, &st) && v > 0) {
            c.mtp_layers = v;
            add_note(&c,
                     "%lld multi-token-prediction module(s) (num_nextn_predict_layers) counted "
                     "in total params, not in active",
                     (long long)v);
        } else if (deepseek && hf_null(&h, "num_nextn_predict_layers")) {
            add_note(&c, "num_nextn_predict_layers not stated: no MTP module counted");
        }
    } else {
        c.experts_per_token = 0;
    }

    /* attention windows */
    int use_sw = 1;
    hf_bool(&h, "use_sliding_window", &use_sw, &st);
    if (hf_int(&h, NAMES("sliding_window", "sliding_window_size"), &v, &st) && use_sw)
        c.sliding_window = v;
    if (hf_int(&h, NAMES("attention_chunk_size"), &v, &st)) c.attn_chunk = v;
    if (llama4 && !c.attn_chunk && !hf_null(&h, "attention_chunk_size"))
        fam_default(&c, &c.attn_chunk, "attention_chunk_size", 8192, "llama4");
    if (gemma2 || gemma3 || gptoss) {
        if (!c.sliding_window && !hf_null(&h, "sliding_window"))
            fam_default(&c, &c.sliding_window, "sliding_window",
                        gemma3 ? 4096
                        : gemma2 ? 4096
                                 : 128,
                        a);
    }
    const cJSON *lt = hf_get(&h, "layer_types");
    const cJSON *nrl = llama4 ? hf_get(&h, "no_rope_layers") : NULL;
    int every_other = 0;
    if (!st && (c.sliding_window > 0 || c.attn_chunk > 0)) {
        if (cJSON_IsArray(lt) && cJSON_GetArraySize(lt) > 0) {
            int64_t n = count_layer_types(&h, lt, c.layers, &st);
            if (n == 0)
                c.sliding_window = c.attn_chunk = 0;
            else if (n > 0)
                c.local_layers = n;
        } else if (cJSON_IsArray(nrl) && cJSON_GetArraySize(nrl) > 0) {
            int64_t n = 0; /* llama4: 1 = RoPE layer = chunked, 0 = NoPE global */
            const cJSON *it;
            cJSON_ArrayForEach(it, nrl) n += cJSON_IsNumber(it) && it->valuedouble != 0;
            if (n == 0)
                c.attn_chunk = 0;
            else
                c.local_layers = n;
        } else if (hf_int(&h, NAMES("sliding_window_pattern", "_sliding_window_pattern"), &v,
                          &st)) {
            c.global_every = v;
        } else if (hf_bool(&h, "sliding_window_every_other_layer", &every_other, &st)) {
            c.global_every = every_other ? 2 : 0;
        } else if (llama4) {
            if (hf_int(&h, NAMES("no_rope_layer_interval"), &v, &st))
                c.global_every = v;
            else
                fam_default(&c, &c.global_every, "no_rope_layer_interval", 4, "llama4");
        } else if (gemma2 || gptoss) {
            c.global_every = 2;
        } else if (gemma3) {
            fam_default(&c, &c.global_every, "sliding_window_pattern", 6, "gemma3");
        } else if (hf_int(&h, NAMES("max_window_layers"), &v, &st) && !strncmp(a, "qwen", 4)) {
            /* qwen2/3: layers from max_window_layers on use the window */
            if (v >= c.layers)
                c.sliding_window = 0;
            else
                c.local_layers = c.layers - v;
        }
    }

    /* family defaults for what the config leaves out */
    if (!c.vocab) {
        if (gpt2 && hf_null(&h, "vocab_size")) {
            c.vocab = 51200;
            add_note(&c, "vocab_size not stated: 51200 (Megatron-LM GPT's padded GPT-2 "
                         "vocabulary)");
        } else if (gemma3) {
            fam_default(&c, &c.vocab, "vocab_size", 262208, "gemma3");
        } else if (gemma2) {
            fam_default(&c, &c.vocab, "vocab_size", 256000, "gemma2");
        } else if (llama4) {
            fam_default(&c, &c.vocab, "vocab_size", 202048, "llama4");
        } else if (gptoss) {
            fam_default(&c, &c.vocab, "vocab_size", 201088, "gpt_oss");
        } else if (!strcmp(a, "deepseek_v3")) {
            fam_default(&c, &c.vocab, "vocab_size", 129280, "deepseek_v3");
        }
    }
    if (!c.head_dim && !c.kv_lora_rank) {
        if (gemma2 || gemma3)
            fam_default(&c, &c.head_dim, "head_dim", 256, a);
        else if (llama4)
            fam_default(&c, &c.head_dim, "head_dim", 128, "llama4");
        else if (gptoss)
            fam_default(&c, &c.head_dim, "head_dim", 64, "gpt_oss");
    }
    if (c.experts > 0 && !c.experts_per_token) {
        if (llama4)
            fam_default(&c, &c.experts_per_token, "num_experts_per_tok", 1, "llama4");
        else if (gptoss)
            fam_default(&c, &c.experts_per_token, "num_experts_per_tok", 4, "gpt_oss");
        else if (!strcmp(a, "mixtral"))
            fam_default(&c, &c.experts_per_token, "num_experts_per_tok", 2, "mixtral");
    }
    if (!st && c.experts == 0 && c.d_ff == 0 && !c.gated && c.d_model > 0) {
        c.d_ff = 4 * c.d_model; /* gpt2: n_inner null means 4 * n_embd */
    }
    /* MaxText's own count (maxtext-decoder-2023), kept for callers using its FLOP convention */
    if (hf_int(&h, NAMES("num_parameters"), &v, &st)) c.stated_params = v;
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
    st = pc_tfm_check(&c, err);
    if (st) {
        pc_error_prefix(err, "%s", origin);
        return st;
    }
    *out = c;
    return PC_OK;
}

pc_status pc_tfm_load_hf(const char *path, pc_tfm_cfg *out, pc_error *err) {
    char *text;
    size_t len;
    pc_status st = pc_read_file(path, 4u << 20, &text, &len, err);
    if (st) return st;
    st = pc_tfm_from_hf_json(text, len, path, out, err);
    free(text);
    return st;
}
