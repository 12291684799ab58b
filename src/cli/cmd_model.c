/* perfcast model: parameters, FLOPs, training memory and KV cache of a transformer. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analytic_cli.h"

static void model_help(FILE *f) {
    fprintf(
        f,
        "usage: perfcast model (--config CONFIG.json|PRESET | --preset NAME | --layers L ...)\n"
        "                      [--seq T] [--batch-tokens N] [--remat POLICY] [--causal]\n"
        "                      [--weight-dtype P] [--grad-dtype P] [--act-dtype P]\n"
        "                      [--kv-dtype P] [--optimizer adam|momentum|sgd]\n"
        "                      [--master-weights] [--attention causal|full|none]\n"
        "                      [--chip X [--chips-file F]] [--json] [--list-presets]\n"
        "                      [--mfu-step-time S --chips N --batch-tokens B |\n"
        "                       --gpu-hours H --tokens TOTAL]\n\n"
        "Transformer math (scaling_book.md §4): parameter counts (embeddings, attention with\n"
        "GQA/MQA, gated or plain MLP, MoE experts, norms), FLOPs per token (training 6N +\n"
        "12 L N H T attention; prefill/decode forward), training memory (weights, gradients,\n"
        "optimizer state, activations under a rematerialization policy) and KV cache.\n\n"
        "Model: a Hugging Face config.json (llama, mistral, mixtral, qwen2, qwen2_moe, qwen3,\n"
        "qwen3_moe, gemma, gemma2, gemma3, llama4, deepseek_v2/v3 (MLA, MTP), gpt_oss, nemotron,\n"
        "gpt2, ...), a --preset, or fields given as flags (flags also override a config's\n"
        "fields). Sliding-window and chunked layers cap the KV cache and attention FLOPs:\n"
        "  --layers L --d-model D --d-ff F --heads N [--kv-heads K] [--head-dim H] --vocab V\n"
        "  [--tied] [--untied] [--plain-mlp] [--layernorm] [--experts E --experts-per-token k]\n"
        "  [--d-ff-expert F] [--shared-experts S]\n"
        "Presets: llama3-8b llama3-70b llama3-405b llama2-13b mistral-7b mixtral-8x7b\n"
        "         gemma-7b gpt2 gpt2-xl (--list-presets)\n\n"
        "  --seq T          sequence / context length for attention FLOPs (default 4096)\n"
        "  --batch-tokens N tokens per training batch held at once (default: --seq)\n"
        "  --remat POLICY   activations kept for the backward pass:\n"
        "                   none         every activation the backward needs (~20 D/layer)\n"
        "                   big_matmuls  only outputs of the big matmuls (q,k,v,o, MLP in/out);\n"
        "                                attention recomputed\n"
        "                   full         only each layer's input (block remat; ~8N FLOPs)\n"
        "                   tensors:K    K tensors of [tokens, D] per layer (the book's\n"
        "                                \"K checkpoints per layer\")\n"
        "  --causal         halve attention FLOPs (causal mask with a kernel that skips it)\n"
        "  --attention A    attention FLOPs: full (default, the book's 12 L N H T), causal\n"
        "                   (= --causal), none (the book's 6N rule)\n"
        "  --chip X         a chip: MoE critical batch (B_crit E/k) and MFU use its peak\n"
        "MFU of a measured run (model FLOPs = 6N + attention as above, without remat;\n"
        "with --remat also HFU, recomputation included):\n"
        "  --mfu-step-time S  seconds per optimizer step of --batch-tokens B on --chips N\n"
        "  --gpu-hours H      chip-hours (GPU or TPU) spent on --tokens TOTAL (15T = 15e12)\n"
        "                     (--chip-hours is the same)\n"
        "  --kv-dtype P     KV cache precision (default bf16)\n"
        "  --json           machine-readable output\n");
}

enum {
    O_PRESET = 256,
    O_SEQ,
    O_BATCH,
    O_REMAT,
    O_CAUSAL,
    O_WDT,
    O_GDT,
    O_ADT,
    O_KVDT,
    O_OPT,
    O_MASTER,
    O_LIST,
    O_LAYERS,
    O_DMODEL,
    O_DFF,
    O_HEADS,
    O_KVH,
    O_HDIM,
    O_VOCAB,
    O_TIED,
    O_UNTIED,
    O_PLAIN,
    O_LN,
    O_EXP,
    O_EXPK,
    O_DFFE,
    O_SHARED,
    O_ATTN,
    O_CHIP,
    O_CHIPSFILE,
    O_CHIPS,
    O_STEP,
    O_HOURS,
    O_TOKENS,
    O_CONFIG
};

static int parse_prec_opt(const char *flag, const char *v, pc_prec *out) {
    int p = pc_prec_parse(v);
    if (p < 0)
        return pc_cli_usage_error("model", "%s '%s' unknown (fp32 bf16 fp16 fp8 int8 int4 fp4)",
                                  flag, v);
    *out = (pc_prec)p;
    return -1;
}

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

/* MFU of a measured run: --mfu-step-time S --chips N, or --gpu-hours H --tokens T. */
typedef struct mfu_args {
    double step, chips, hours, tokens;
} mfu_args;

static int parse_mfu_arg(int c, const char *v, mfu_args *a) {
    const char *flag = c == O_STEP    ? "--mfu-step-time"
                       : c == O_CHIPS ? "--chips"
                       : c == O_HOURS ? "--gpu-hours"
                                      : "--tokens";
    pc_error e;
    double x;
    char *end;
    if (c == O_STEP) {
        x = strtod(v, &end);
        if (end == v || *end || !(x > 0) || !isfinite(x) || x > 1e9)
            return pc_cli_usage_error("model", "%s expects seconds > 0, got '%s'", flag, v);
    } else if (pc_parse_count(v, &x, &e) != PC_OK || !(x > 0) || x > 1e21) {
        return pc_cli_usage_error("model", "%s expects a positive number (k/M/G/T decimal), got '%s'",
                                  flag, v);
    }
    if (c == O_CHIPS && (x != floor(x) || x > 1e9))
        return pc_cli_usage_error("model", "--chips expects a whole chip count, got '%s'", v);
    *(c == O_STEP ? &a->step : c == O_CHIPS ? &a->chips : c == O_HOURS ? &a->hours : &a->tokens) =
        x;
    return -1;
}

/* Checks the MFU flags; *tokens and *chip_s get what pc_tfm_mfu needs (0: no MFU). */
static int mfu_inputs(const mfu_args *a, double batch, const char *chip_s, double *tokens,
                      double *chip_s_out) {
    *tokens = 0;
    *chip_s_out = 0;
    if (a->step > 0 && a->hours > 0)
        return pc_cli_usage_error("model", "give --mfu-step-time or --gpu-hours, not both");
    if (a->step > 0) {
        if (!chip_s || !(a->chips > 0) || !(batch > 0))
            return pc_cli_usage_error("model", "--mfu-step-time needs --chip X, --chips N and "
                                               "--batch-tokens B (tokens per step)");
        *tokens = batch;
        *chip_s_out = a->step * a->chips;
    } else if (a->hours > 0) {
        if (!chip_s || !(a->tokens > 0))
            return pc_cli_usage_error("model", "--gpu-hours needs --chip X and --tokens TOTAL "
                                               "(tokens trained in those hours)");
        *tokens = a->tokens;
        *chip_s_out = a->hours * 3600;
    } else if (a->chips > 0 || a->tokens > 0) {
        return pc_cli_usage_error("model", "--chips and --tokens go with --mfu-step-time or "
                                           "--gpu-hours");
    }
    return -1;
}

static const char *attn_conv(pc_attn_flops a) {
    return a == PC_ATTN_NONE     ? "6N, no attention (the book's rule)"
           : a == PC_ATTN_CAUSAL ? "6N + 6 L N H T causal attention"
                                 : "6N + 12 L N H T full attention";
}

static void add_mfu_json(cJSON *o, const pc_mfu *f, pc_attn_flops a, const char *remat_s,
                         double step, double chips, double hours, double tokens) {
    cJSON *j = cJSON_AddObjectToObject(o, "mfu");
    cJSON_AddStringToObject(j, "convention", attn_conv(a));
    cJSON_AddStringToObject(j, "attention", pc_attn_flops_name(a));
    if (step > 0) {
        cJSON_AddNumberToObject(j, "step_time", step);
        cJSON_AddNumberToObject(j, "chips", chips);
    } else {
        cJSON_AddNumberToObject(j, "chip_hours", hours);
    }
    cJSON_AddNumberToObject(j, "tokens", tokens);
    cJSON_AddNumberToObject(j, "flops_per_token", f->flops_per_token);
    cJSON_AddNumberToObject(j, "model_flops", f->flops);
    cJSON_AddNumberToObject(j, "achieved_flops_per_chip", f->achieved);
    cJSON_AddNumberToObject(j, "peak_flops_per_chip", f->peak);
    cJSON_AddNumberToObject(j, "mfu", f->mfu);
    cJSON_AddStringToObject(j, "remat", remat_s);
    cJSON_AddNumberToObject(j, "hfu", f->hfu);
}

static void print_moe(const pc_tfm_cfg *m, const pc_chip *chip, double moe_b,
                      const pc_mem_opts *mo) {
    double ek = (double)m->experts / (double)m->experts_per_token;
    if (!chip) {
        printf("MoE             E/k = %.3g: a MoE layer is compute-bound above a total batch of "
               "B_crit x E/k tokens (--chip X for the number)\n",
               ek);
        return;
    }
    printf("MoE             compute-bound above a total batch of B_crit x E/k = %.0f x %.3g = "
           "%.0f tokens on %s (%s weights, %s compute)\n",
           moe_b / ek, ek, moe_b, chip->name, pc_prec_name(mo->weight_prec),
           pc_prec_name(mo->act_prec));
}

static void print_mfu(const pc_mfu *f, const pc_chip *chip, pc_attn_flops a, const char *remat_s,
                      const mfu_args *mf, const pc_mem_opts *mo) {
    char x[64], y[64], z[64], t[64];
    if (mf->step > 0)
        printf("MFU             step %s x %.0f chips, %s tokens/step", pc_acli_time(mf->step, t,
               sizeof t), mf->chips, pc_acli_count(f->flops / f->flops_per_token, x, sizeof x));
    else
        printf("MFU             %.4g chip-hours for %s tokens", mf->hours,
               pc_acli_count(f->flops / f->flops_per_token, x, sizeof x));
    printf(": model FLOPs %.4g/token (%s, no remat) = %.4g; achieved %s per chip of %s (%s %s)"
           " -> MFU %.1f%%",
           f->flops_per_token, attn_conv(a), f->flops, pc_acli_si(f->achieved, "FLOP/s", y, sizeof y),
           pc_acli_si(f->peak, "FLOP/s", z, sizeof z), chip->name, pc_prec_name(mo->act_prec),
           100 * f->mfu);
    if (f->hfu > f->mfu) printf(", HFU %.1f%% (remat %s recomputed)", 100 * f->hfu, remat_s);
    printf("\n");
}

/* ---------------- options ---------------- */

static const struct option model_opts[] = {{"config", required_argument, 0, O_CONFIG},
                                           {"preset", required_argument, 0, O_PRESET},
                                           {"seq", required_argument, 0, O_SEQ},
                                           {"batch-tokens", required_argument, 0, O_BATCH},
                                           {"remat", required_argument, 0, O_REMAT},
                                           {"causal", no_argument, 0, O_CAUSAL},
                                           {"weight-dtype", required_argument, 0, O_WDT},
                                           {"grad-dtype", required_argument, 0, O_GDT},
                                           {"act-dtype", required_argument, 0, O_ADT},
                                           {"kv-dtype", required_argument, 0, O_KVDT},
                                           {"optimizer", required_argument, 0, O_OPT},
                                           {"master-weights", no_argument, 0, O_MASTER},
                                           {"list-presets", no_argument, 0, O_LIST},
                                           {"layers", required_argument, 0, O_LAYERS},
                                           {"d-model", required_argument, 0, O_DMODEL},
                                           {"d-ff", required_argument, 0, O_DFF},
                                           {"heads", required_argument, 0, O_HEADS},
                                           {"kv-heads", required_argument, 0, O_KVH},
                                           {"head-dim", required_argument, 0, O_HDIM},
                                           {"vocab", required_argument, 0, O_VOCAB},
                                           {"tied", no_argument, 0, O_TIED},
                                           {"untied", no_argument, 0, O_UNTIED},
                                           {"plain-mlp", no_argument, 0, O_PLAIN},
                                           {"layernorm", no_argument, 0, O_LN},
                                           {"experts", required_argument, 0, O_EXP},
                                           {"experts-per-token", required_argument, 0, O_EXPK},
                                           {"d-ff-expert", required_argument, 0, O_DFFE},
                                           {"shared-experts", required_argument, 0, O_SHARED},
                                           {"attention", required_argument, 0, O_ATTN},
                                           {"chip", required_argument, 0, O_CHIP},
                                           {"chips-file", required_argument, 0, O_CHIPSFILE},
                                           {"chips", required_argument, 0, O_CHIPS},
                                           {"mfu-step-time", required_argument, 0, O_STEP},
                                           {"gpu-hours", required_argument, 0, O_HOURS},
                                           {"chip-hours", required_argument, 0, O_HOURS},
                                           {"tokens", required_argument, 0, O_TOKENS},
                                           {"json", no_argument, 0, 'j'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};

/* What the command line asks perfcast model for. */
typedef struct model_args {
    const char *preset, *chip, *chips_file, *config;
    mfu_args mf;
    double seq, batch, remat_k; /* batch: -1 when not given */
    int causal, no_attn, json, wdt_given;
    pc_remat remat;
    pc_mem_opts mo;
    pc_prec kv;
    long long f[O_SHARED + 1]; /* field overrides (O_LAYERS..O_SHARED): -1 = not given */
    int tied, plain, ln;       /* tied: -1 = not given */
} model_args;

/* --seq T, --batch-tokens N: whole token counts (k/M/G). */
static int parse_tokens_opt(model_args *a, int c, const char *v) {
    double x;
    pc_error e;
    if (pc_parse_count(v, &x, &e) != PC_OK || !(x >= 1) || x != floor(x))
        return pc_cli_usage_error("model",
                                  "--%s expects a positive token count like 4096 "
                                  "or 4M, got '%s'",
                                  c == O_SEQ ? "seq" : "batch-tokens", v);
    if (c == O_SEQ)
        a->seq = x;
    else
        a->batch = x;
    return -1;
}

/* --remat none|big_matmuls|full|tensors:K */
static int parse_remat(model_args *a, const char *v) {
    if (!strncmp(v, "tensors:", 8) || !strncmp(v, "tensors=", 8)) {
        char *end;
        a->remat_k = strtod(v + 8, &end);
        if (*end || !(a->remat_k > 0) || a->remat_k > 1e6)
            return pc_cli_usage_error("model",
                                      "--remat tensors:K needs K > 0 tensors per "
                                      "layer, got '%s'",
                                      v);
        a->remat = PC_REMAT_TENSORS;
        return -1;
    }
    int r = pc_remat_parse(v);
    if (r < 0 || r == PC_REMAT_TENSORS)
        return pc_cli_usage_error("model",
                                  "--remat '%s' unknown (none, big_matmuls, full, "
                                  "tensors:K)",
                                  v);
    a->remat = (pc_remat)r;
    return -1;
}

/* --attention causal|full|none */
static int parse_attention(model_args *a, const char *v) {
    int at = pc_attn_flops_parse(v);
    if (at < 0)
        return pc_cli_usage_error("model", "--attention '%s' unknown (causal, full, none)", v);
    a->causal = at == PC_ATTN_CAUSAL;
    a->no_attn = at == PC_ATTN_NONE;
    return -1;
}

/* --layers L, --d-model D, ...: a model field as an integer >= 0. */
static int parse_field(model_args *a, int c, const char *v, char **argv) {
    long long n;
    if (c < O_LAYERS || c > O_SHARED || pc_cli_parse_i64(v, 0, 1LL << 40, &n))
        return pc_cli_usage_error("model", "%s expects an integer >= 0, got '%s'",
                                  argv[optind - 1], v ? v : "");
    a->f[c] = n;
    return -1;
}

/* One option; -1 to go on, else the exit code (0 after --help, --list-presets). */
static int model_opt(model_args *a, int c, const char *v, char **argv) {
    int rc;
    switch (c) {
    case O_PRESET: a->preset = v; return -1;
    case O_CONFIG: a->config = v; return -1;
    case O_SEQ:
    case O_BATCH: return parse_tokens_opt(a, c, v);
    case O_REMAT: return parse_remat(a, v);
    case O_CAUSAL: a->causal = 1; return -1;
    case O_ATTN: return parse_attention(a, v);
    case O_CHIP: a->chip = v; return -1;
    case O_CHIPSFILE: a->chips_file = v; return -1;
    case O_CHIPS:
    case O_STEP:
    case O_HOURS:
    case O_TOKENS: return parse_mfu_arg(c, v, &a->mf);
    case O_WDT:
        if ((rc = parse_prec_opt("--weight-dtype", v, &a->mo.weight_prec)) >= 0) return rc;
        a->wdt_given = 1;
        return -1;
    case O_GDT: return parse_prec_opt("--grad-dtype", v, &a->mo.grad_prec);
    case O_ADT: return parse_prec_opt("--act-dtype", v, &a->mo.act_prec);
    case O_KVDT: return parse_prec_opt("--kv-dtype", v, &a->kv);
    case O_OPT: return pc_acli_parse_optimizer("model", v, &a->mo.optimizer);
    case O_MASTER: a->mo.master_weights = 1; return -1;
    case O_LIST:
        for (int i = 0; i < pc_tfm_preset_count(); i++) puts(pc_tfm_preset_name(i));
        return PC_EXIT_OK;
    case O_TIED: a->tied = 1; return -1;
    case O_UNTIED: a->tied = 0; return -1;
    case O_PLAIN: a->plain = 1; return -1;
    case O_LN: a->ln = 1; return -1;
    case 'j': a->json = 1; return -1;
    case 'h': model_help(stdout); return PC_EXIT_OK;
    case '?':
        return pc_cli_usage_error("model", "unknown or incomplete option '%s'", argv[optind - 1]);
    default: return parse_field(a, c, v, argv);
    }
}

/* Fills a from the command line; -1 to go on, else the exit code. */
static int model_parse(int argc, char **argv, model_args *a) {
    memset(a, 0, sizeof *a);
    a->seq = 4096;
    a->batch = -1;
    a->remat = PC_REMAT_NONE;
    a->mo = pc_mem_opts_default();
    a->kv = PC_PREC_BF16;
    for (int i = 0; i <= O_SHARED; i++) a->f[i] = -1;
    a->tied = -1;
    optind = 1;
    opterr = 0;
    int c, rc;
    while ((c = pc_cli_getopt(argc, argv, "jh", model_opts, NULL)) != -1)
        if ((rc = model_opt(a, c, optarg, argv)) >= 0) return rc;
    if (optind < argc && !a->config) {
        pc_cli_deprecated("model", "a positional CONFIG", "--config CONFIG");
        a->config = argv[optind++];
    }
    if (optind < argc) return pc_cli_usage_error("model", "unexpected argument '%s'", argv[optind]);
    if (a->config && a->preset)
        return pc_cli_usage_error("model", "give --config or --preset, not both");
    /* --config NAME without a path or .json: a preset, as in plan train/serve */
    struct stat st;
    if (a->config && stat(a->config, &st) != 0 && !strchr(a->config, '/') &&
        !strstr(a->config, ".json"))
        a->preset = a->config, a->config = NULL;
    return -1;
}

/* ---------------- the model ---------------- */

/* The config.json, the preset, or a bare model the flags fill in. */
static int model_source(const model_args *a, pc_tfm_cfg *m, pc_error *e) {
    memset(m, 0, sizeof *m);
    if (a->config) {
        if (pc_tfm_load_hf(a->config, m, e) != PC_OK) return pc_cli_fail(e);
    } else if (a->preset) {
        if (pc_tfm_preset(a->preset, m, e) != PC_OK)
            return pc_cli_usage_error("model", "%s", e->msg);
    } else {
        const long long *f = a->f;
        if (f[O_LAYERS] < 0 || f[O_DMODEL] < 0 || f[O_HEADS] < 0 || f[O_VOCAB] < 0 ||
            (f[O_DFF] < 0 && f[O_DFFE] < 0))
            return pc_cli_usage_error("model", "give --config CONFIG.json, a --preset, or at least "
                                               "--layers --d-model --d-ff --heads --vocab");
        snprintf(m->name, sizeof m->name, "custom");
        snprintf(m->arch, sizeof m->arch, "custom");
        m->gated = 1;
        m->weight_prec = PC_PREC_BF16;
    }
    return -1;
}

/* The field flags over the loaded model; returns whether any changed it. */
static int model_apply_flags(const model_args *a, pc_tfm_cfg *m) {
    const long long *f = a->f;
    int changed = 0;
    int derived_hd = m->heads > 0 && m->head_dim * m->heads == m->d_model; /* head_dim = D / N */
#define OVR(opt, field)                                                                            \
    if (f[opt] >= 0) m->field = (int64_t)f[opt], changed = 1
    OVR(O_LAYERS, layers);
    if (f[O_LAYERS] >= 0) m->moe_layers = 0, m->local_layers = 0; /* recounted from the patterns */
    OVR(O_DMODEL, d_model);
    OVR(O_DFF, d_ff);
    OVR(O_HEADS, heads);
    OVR(O_KVH, kv_heads);
    OVR(O_HDIM, head_dim);
    OVR(O_VOCAB, vocab);
    OVR(O_EXP, experts);
    OVR(O_EXPK, experts_per_token);
    OVR(O_DFFE, d_ff_expert);
    OVR(O_SHARED, shared_experts);
#undef OVR
    if ((f[O_DMODEL] >= 0 || f[O_HEADS] >= 0) && f[O_HDIM] < 0 && derived_hd) m->head_dim = 0;
    if (a->tied >= 0) m->tied = a->tied, changed = 1;
    if (a->plain) m->gated = 0, changed = 1;
    if (a->ln) m->layernorm = 1, changed = 1;
    return changed;
}

/* The model the command line describes, checked. Returns -1 or an exit code. */
static int model_build(const model_args *a, pc_tfm_cfg *m) {
    pc_error e;
    pc_error_clear(&e);
    int rc;
    if ((rc = model_source(a, m, &e)) >= 0) return rc;
    int from_flags = !a->config && !a->preset;
    int changed = model_apply_flags(a, m);
    if (changed && !from_flags) {
        size_t l = strlen(m->name);
        snprintf(m->name + l, sizeof m->name - l, "%s", l + 10 < sizeof m->name ? " (edited)" : "");
    }
    if (pc_tfm_check(m, &e) != PC_OK) {
        if (from_flags || changed) return pc_cli_usage_error("model", "%s", e.msg);
        return pc_cli_fail(&e);
    }
    return -1;
}

/* ---------------- the numbers ---------------- */

/* Everything perfcast model reports. */
typedef struct model_report {
    pc_tfm_cfg m;
    pc_mem_opts mo; /* with the tokens and remat of the command line */
    pc_param_counts p;
    pc_flop_counts fl;
    pc_train_memory mem;
    pc_mfu mfu;
    double mfu_tokens, moe_b, kvb, kvs; /* mfu_tokens 0: no MFU asked for */
    pc_attn_flops attn;
    char remat_s[48];
    const char *opt_s;
    pc_chipdb *db;
    const pc_chip *chip; /* NULL without --chip */
} model_report;

/* MFU flags, the chip, and the MFU; -1 to go on (free r->db), else the exit code. */
static int model_chip_and_mfu(const model_args *a, model_report *r) {
    pc_error e;
    pc_error_clear(&e);
    double mfu_cs;
    int rc;
    if ((rc = mfu_inputs(&a->mf, a->batch, a->chip, &r->mfu_tokens, &mfu_cs)) >= 0) return rc;
    if (a->chip && (rc = pc_acli_open_chip("model", a->chips_file, a->chip, &r->db, &r->chip)) >= 0)
        return rc;
    r->attn = a->no_attn ? PC_ATTN_NONE : a->causal ? PC_ATTN_CAUSAL : PC_ATTN_FULL;
    if (r->mfu_tokens > 0 && pc_tfm_mfu(&r->m, r->chip, r->mo.act_prec, a->seq, r->attn,
                                          a->remat, r->mfu_tokens, mfu_cs, &r->mfu, &e) != PC_OK) {
        pc_chipdb_free(r->db);
        return pc_cli_fail(&e);
    }
    return -1;
}

/* Parameters, FLOPs, memory, MFU, KV cache; -1 to go on, else the exit code. */
static int model_compute(const model_args *a, model_report *r) {
    pc_error e;
    pc_error_clear(&e);
    pc_mem_opts *mo = &r->mo;
    *mo = a->mo;
    if (!a->wdt_given) mo->weight_prec = PC_PREC_BF16;
    mo->tokens = a->batch > 0 ? a->batch : a->seq;
    mo->remat = a->remat;
    mo->remat_tensors = a->remat_k;
    pc_tfm_params(&r->m, &r->p);
    pc_tfm_flops(&r->m, a->no_attn ? 0 : a->seq, a->causal, a->remat, &r->fl);
    if (pc_tfm_memory(&r->m, mo, &r->mem, &e) != PC_OK)
        return pc_cli_usage_error("model", "%s", e.msg);
    int rc = model_chip_and_mfu(a, r);
    if (rc >= 0) return rc;
    r->moe_b = r->chip ? pc_tfm_moe_critical_batch(&r->m, r->chip, mo->weight_prec, mo->act_prec)
                       : 0;
    r->kvb = pc_tfm_kv_bytes_per_token(&r->m, a->kv);
    r->kvs = pc_tfm_kv_bytes_per_seq(&r->m, a->kv, a->seq);
    if (a->remat == PC_REMAT_TENSORS)
        snprintf(r->remat_s, sizeof r->remat_s, "tensors:%g", a->remat_k);
    else
        snprintf(r->remat_s, sizeof r->remat_s, "%s", pc_remat_name(a->remat));
    r->opt_s = mo->optimizer == PC_OPT_ADAM           ? "adam"
               : mo->optimizer == PC_OPT_SGD_MOMENTUM ? "momentum"
                                                      : "sgd";
    return -1;
}

/* ---------------- JSON ---------------- */

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

static cJSON *memory_json(const model_report *r) {
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
    return jm;
}

static void model_print_json(const model_args *a, const model_report *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "model", cfg_json(&r->m));
    cJSON_AddItemToObject(o, "params", params_json(&r->p));
    cJSON_AddItemToObject(o, "flops_per_token", flops_json(&r->fl, a->seq, a->causal));
    cJSON_AddItemToObject(o, "train_memory", memory_json(r));
    cJSON *jk = cJSON_AddObjectToObject(o, "kv_cache");
    cJSON_AddStringToObject(jk, "dtype", pc_prec_name(a->kv));
    cJSON_AddNumberToObject(jk, "bytes_per_token", r->kvb);
    cJSON_AddNumberToObject(jk, "bytes_per_sequence", r->kvs);
    cJSON_AddNumberToObject(o, "weight_bytes", r->p.total * pc_prec_bytes(r->mo.weight_prec));
    if (r->chip) cJSON_AddStringToObject(o, "chip", r->chip->name);
    else cJSON_AddNullToObject(o, "chip"); /* one shape (docs/json.md) */
    if (r->m.experts > 0 && r->chip) cJSON_AddNumberToObject(o, "moe_critical_batch", r->moe_b);
    else cJSON_AddNullToObject(o, "moe_critical_batch");
    if (r->mfu_tokens > 0)
        add_mfu_json(o, &r->mfu, r->attn, r->remat_s, a->mf.step > 0 ? a->mf.step : 0,
                     a->mf.chips, a->mf.hours, r->mfu_tokens);
    else
        cJSON_AddNullToObject(o, "mfu");
    char *s = cJSON_Print(o);
    if (s) puts(s);
    free(s);
    cJSON_Delete(o);
}

/* ---------------- text ---------------- */

/* The shape line and the architecture lines under it. */
static void print_config(const pc_tfm_cfg *m) {
    printf("%s (%s): L=%lld D=%lld F=%lld N=%lld K=%lld H=%lld V=%lld", m->name, m->arch,
           (long long)m->layers, (long long)m->d_model, (long long)m->d_ff, (long long)m->heads,
           (long long)m->kv_heads, (long long)m->head_dim, (long long)m->vocab);
    if (m->experts)
        printf(" E=%lld k=%lld F_e=%lld", (long long)m->experts, (long long)m->experts_per_token,
               (long long)m->d_ff_expert);
    if (m->shared_experts)
        printf(" shared=%lldx%lld", (long long)m->shared_experts, (long long)m->d_ff_shared);
    printf("\n  %s MLP%s%s%s, %s, %s embeddings, %s attention%s%s\n",
           m->gated ? "gated" : "plain", m->act[0] ? " (" : "", m->act, m->act[0] ? ")" : "",
           m->layernorm ? "LayerNorm" : "RMSNorm", m->tied ? "tied" : "untied",
           m->kv_lora_rank > 0       ? "MLA"
           : m->kv_heads == m->heads ? "MHA"
           : m->kv_heads == 1        ? "MQA"
                                     : "GQA",
           m->positions ? ", learned positions" : "", m->attn_sink ? ", attention sinks" : "");
    if (m->kv_lora_rank > 0)
        printf("  MLA: q_lora_rank %lld, kv_lora_rank %lld, qk nope %lld + rope %lld, v %lld; "
               "cache %lld values/token/layer\n",
               (long long)m->q_lora_rank, (long long)m->kv_lora_rank,
               (long long)m->qk_nope_head_dim, (long long)m->qk_rope_head_dim,
               (long long)m->v_head_dim, (long long)(m->kv_lora_rank + m->qk_rope_head_dim));
    if (m->experts)
        printf("  layers: %lld MoE, %lld dense (F=%lld)%s\n", (long long)m->moe_layers,
               (long long)(m->layers - m->moe_layers), (long long)m->d_ff,
               m->mtp_layers ? "; + MTP module(s), see note" : "");
    if (m->sliding_window > 0 || m->attn_chunk > 0)
        printf("  attention: %lld of %lld layers %s %lld tokens, the rest global\n",
               (long long)m->local_layers, (long long)m->layers,
               m->sliding_window > 0 ? "sliding window" : "chunked, chunk",
               (long long)(m->sliding_window > 0 ? m->sliding_window : m->attn_chunk));
    if (m->note[0]) printf("  note: %s\n", m->note);
}

static void print_params(const pc_param_counts *p) {
    char a[64], b[64], c1[64], d[64], e1[64];
    printf("parameters      total %s  active/token %s  non-embedding %s  in matmuls %s\n",
           pc_acli_count(p->total, a, sizeof a), pc_acli_count(p->active, b, sizeof b),
           pc_acli_count(p->non_embedding, c1, sizeof c1),
           pc_acli_count(p->matmul_active, d, sizeof d));
    printf("                embedding %s  unembedding %s  attention %s  MLP %s",
           pc_acli_count(p->embedding, a, sizeof a), pc_acli_count(p->unembedding, b, sizeof b),
           pc_acli_count(p->attention, c1, sizeof c1), pc_acli_count(p->mlp, d, sizeof d));
    if (p->router > 0) printf("  router %s", pc_acli_count(p->router, a, sizeof a));
    if (p->position > 0) printf("  positions %s", pc_acli_count(p->position, a, sizeof a));
    if (p->mtp > 0) printf("  MTP %s", pc_acli_count(p->mtp, a, sizeof a));
    printf("  norms %s\n", pc_acli_count(p->norms, e1, sizeof e1));
}

static void print_flops(const pc_flop_counts *fl, double seq, int causal, const char *remat_s) {
    printf("FLOPs/token     T=%.0f%s: train %.3g (matmuls %.3g + attention %.3g); 6N %.3g\n", seq,
           causal ? " causal" : "", fl->train, 3 * fl->matmul, 3 * fl->attention_fwd, fl->six_n);
    if (fl->remat_extra > 0)
        printf("                with remat %s: %.3g (+%.3g recomputed)\n", remat_s,
               fl->train_remat, fl->remat_extra);
    printf("                prefill %.3g per prompt token, decode %.3g per token at context %.0f\n",
           fl->prefill, fl->decode, seq);
    printf("                forward split: attention proj %.3g, dense MLP %.3g, experts %.3g, "
           "shared %.3g, router %.3g, unembed %.3g, attention core %.3g\n",
           fl->fwd_attn_proj, fl->fwd_dense_mlp, fl->fwd_experts, fl->fwd_shared, fl->fwd_router,
           fl->fwd_unembed, fl->attention_fwd);
}

/* Training memory and the KV cache. */
static void print_memory(const model_args *a, const model_report *r) {
    const pc_mem_opts *mo = &r->mo;
    const pc_train_memory *mem = &r->mem;
    char x[64], y[64], z[64], w[64], t[64], g[64];
    printf("train memory    %.0f tokens, remat %s, %s: weights %s (%s), grads %s (%s), optimizer "
           "%s, activations %s; total %s\n",
           mo->tokens, r->remat_s, r->opt_s, pc_acli_si(mem->weights, "B", x, sizeof x),
           pc_prec_name(mo->weight_prec), pc_acli_si(mem->grads, "B", y, sizeof y),
           pc_prec_name(mo->grad_prec), pc_acli_si(mem->optimizer, "B", z, sizeof z),
           pc_acli_si(mem->activations, "B", w, sizeof w),
           pc_acli_si(mem->total, "B", t, sizeof t));
    printf("KV cache        %.0f bytes/token (%s), %s per %.0f-token sequence%s\n", r->kvb,
           pc_prec_name(a->kv), pc_acli_si(r->kvs, "B", g, sizeof g), a->seq,
           r->kvs < r->kvb * a->seq ? " (windows cap local layers)" : "");
}

static void model_print_text(const model_args *a, const model_report *r) {
    print_config(&r->m);
    print_params(&r->p);
    print_flops(&r->fl, a->seq, a->causal, r->remat_s);
    print_memory(a, r);
    if (r->m.experts > 0) print_moe(&r->m, r->chip, r->moe_b, &r->mo);
    if (r->mfu_tokens > 0) print_mfu(&r->mfu, r->chip, r->attn, r->remat_s, &a->mf, &r->mo);
}

int pc_cmd_model(int argc, char **argv) {
    model_args a;
    model_report r;
    int rc;
    memset(&r, 0, sizeof r);
    if ((rc = model_parse(argc, argv, &a)) >= 0 || (rc = model_build(&a, &r.m)) >= 0 ||
        (rc = model_compute(&a, &r)) >= 0)
        return rc;
    if (a.json)
        model_print_json(&a, &r);
    else
        model_print_text(&a, &r);
    pc_chipdb_free(r.db);
    return PC_EXIT_OK;
}
