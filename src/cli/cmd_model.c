/* perfcast model: parameters, FLOPs, training memory and KV cache of a transformer. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analytic_cli.h"
#include "perfcast/query.h"

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
        return pc_cli_usage_error(
            "model", "%s expects a positive number (k/M/G/T decimal), got '%s'", flag, v);
    }
    if (c == O_CHIPS && (x != floor(x) || x > 1e9))
        return pc_cli_usage_error("model", "--chips expects a whole chip count, got '%s'", v);
    *(c == O_STEP    ? &a->step
      : c == O_CHIPS ? &a->chips
      : c == O_HOURS ? &a->hours
                     : &a->tokens) = x;
    return -1;
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
    const char *remat_arg; /* --remat as given */
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
    a->remat_arg = v;
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
        return pc_cli_usage_error("model", "%s expects an integer >= 0, got '%s'", argv[optind - 1],
                                  v ? v : "");
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

/* ---------------- the request ---------------- */

/* The flags as a model query (perfcast/query.h): the library computes, this prints. */
static cJSON *model_request(const model_args *a) {
    static const char *const fields[] = {
        [O_LAYERS] = "layers",    [O_DMODEL] = "d_model",       [O_DFF] = "d_ff",
        [O_HEADS] = "heads",      [O_KVH] = "kv_heads",         [O_HDIM] = "head_dim",
        [O_VOCAB] = "vocab",      [O_EXP] = "experts",          [O_EXPK] = "experts_per_token",
        [O_DFFE] = "d_ff_expert", [O_SHARED] = "shared_experts"};
    cJSON *q = cJSON_CreateObject();
    if (a->config) cJSON_AddStringToObject(q, "config", a->config);
    if (a->preset) cJSON_AddStringToObject(q, "preset", a->preset);
    for (int i = O_LAYERS; i <= O_SHARED; i++)
        if (a->f[i] >= 0) cJSON_AddNumberToObject(q, fields[i], (double)a->f[i]);
    if (a->tied >= 0) cJSON_AddBoolToObject(q, "tied", a->tied);
    if (a->plain) cJSON_AddTrueToObject(q, "plain_mlp");
    if (a->ln) cJSON_AddTrueToObject(q, "layernorm");
    cJSON_AddNumberToObject(q, "seq", a->seq);
    if (a->batch > 0) cJSON_AddNumberToObject(q, "batch_tokens", a->batch);
    if (a->remat_arg) cJSON_AddStringToObject(q, "remat", a->remat_arg);
    if (a->no_attn) cJSON_AddStringToObject(q, "attention", "none");
    if (a->causal) cJSON_AddTrueToObject(q, "causal");
    if (a->wdt_given) cJSON_AddStringToObject(q, "weight_dtype", pc_prec_name(a->mo.weight_prec));
    cJSON_AddStringToObject(q, "grad_dtype", pc_prec_name(a->mo.grad_prec));
    cJSON_AddStringToObject(q, "act_dtype", pc_prec_name(a->mo.act_prec));
    cJSON_AddStringToObject(q, "kv_dtype", pc_prec_name(a->kv));
    cJSON_AddStringToObject(q, "optimizer",
                            a->mo.optimizer == PC_OPT_ADAM           ? "adam"
                            : a->mo.optimizer == PC_OPT_SGD_MOMENTUM ? "momentum"
                                                                     : "sgd");
    if (a->mo.master_weights) cJSON_AddTrueToObject(q, "master_weights");
    if (a->chip) cJSON_AddStringToObject(q, "chip", a->chip);
    if (a->chips_file) cJSON_AddStringToObject(q, "chips_file", a->chips_file);
    if (a->mf.step > 0) cJSON_AddNumberToObject(q, "mfu_step_time", a->mf.step);
    if (a->mf.chips > 0) cJSON_AddNumberToObject(q, "chips", a->mf.chips);
    if (a->mf.hours > 0) cJSON_AddNumberToObject(q, "gpu_hours", a->mf.hours);
    if (a->mf.tokens > 0) cJSON_AddNumberToObject(q, "tokens", a->mf.tokens);
    return q;
}

/* Runs the query; the document in *doc, or the exit code. The query's checks are the
 * only ones: a failure is its message with the keys spelled as flags (pc_acli_query_fail). */
static int model_query(const model_args *a, cJSON **doc) {
    pc_error e;
    pc_error_clear(&e);
    if (pc_acli_query(PC_QUERY_MODEL, model_request(a), doc, &e) == PC_OK) return -1;
    const char *files[] = {a->config, a->chips_file};
    return pc_acli_query_fail("model", model_opts, files, 2, 0, NULL, &e);
}

/* ---------------- text, from the document ---------------- */

#define N(o, k) pc_acli_jnum(o, k)
#define S(o, k) pc_acli_jstr(o, k)
#define LL(o, k) pc_acli_jint(o, k)

/* The shape line and the architecture lines under it. */
static void print_config(const cJSON *m) {
    const char *act = S(m, "hidden_act");
    const cJSON *mla = cJSON_GetObjectItemCaseSensitive(m, "mla");
    long long heads = LL(m, "heads"), kvh = LL(m, "kv_heads");
    printf("%s (%s): L=%lld D=%lld F=%lld N=%lld K=%lld H=%lld V=%lld", S(m, "name"), S(m, "arch"),
           LL(m, "layers"), LL(m, "d_model"), LL(m, "d_ff"), heads, kvh, LL(m, "head_dim"),
           LL(m, "vocab"));
    if (LL(m, "experts"))
        printf(" E=%lld k=%lld F_e=%lld", LL(m, "experts"), LL(m, "experts_per_token"),
               LL(m, "d_ff_expert"));
    if (LL(m, "shared_experts"))
        printf(" shared=%lldx%lld", LL(m, "shared_experts"), LL(m, "d_ff_shared"));
    printf("\n  %s MLP%s%s%s, %s, %s embeddings, %s attention%s%s\n",
           N(m, "gated") ? "gated" : "plain", act[0] ? " (" : "", act, act[0] ? ")" : "",
           N(m, "layernorm") ? "LayerNorm" : "RMSNorm", N(m, "tied") ? "tied" : "untied",
           mla            ? "MLA"
           : kvh == heads ? "MHA"
           : kvh == 1     ? "MQA"
                          : "GQA",
           LL(m, "positions") ? ", learned positions" : "",
           N(m, "attn_sink") ? ", attention sinks" : "");
    if (mla)
        printf("  MLA: q_lora_rank %lld, kv_lora_rank %lld, qk nope %lld + rope %lld, v %lld; "
               "cache %lld values/token/layer\n",
               LL(mla, "q_lora_rank"), LL(mla, "kv_lora_rank"), LL(mla, "qk_nope_head_dim"),
               LL(mla, "qk_rope_head_dim"), LL(mla, "v_head_dim"),
               LL(mla, "kv_lora_rank") + LL(mla, "qk_rope_head_dim"));
    if (LL(m, "experts"))
        printf("  layers: %lld MoE, %lld dense (F=%lld)%s\n", LL(m, "moe_layers"),
               LL(m, "dense_layers"), LL(m, "d_ff"),
               LL(m, "mtp_layers") ? "; + MTP module(s), see note" : "");
    long long sw = LL(m, "sliding_window"), ch = LL(m, "attn_chunk");
    if (sw > 0 || ch > 0)
        printf("  attention: %lld of %lld layers %s %lld tokens, the rest global\n",
               LL(m, "local_layers"), LL(m, "layers"), sw > 0 ? "sliding window" : "chunked, chunk",
               sw > 0 ? sw : ch);
    if (S(m, "note")[0]) printf("  note: %s\n", S(m, "note"));
}

static void print_params(const cJSON *p) {
    char a[64], b[64], c1[64], d[64], e1[64];
    printf("parameters      total %s  active/token %s  non-embedding %s  in matmuls %s\n",
           pc_acli_count(N(p, "total"), a, sizeof a), pc_acli_count(N(p, "active"), b, sizeof b),
           pc_acli_count(N(p, "non_embedding"), c1, sizeof c1),
           pc_acli_count(N(p, "matmul_active"), d, sizeof d));
    printf("                embedding %s  unembedding %s  attention %s  MLP %s",
           pc_acli_count(N(p, "embedding"), a, sizeof a),
           pc_acli_count(N(p, "unembedding"), b, sizeof b),
           pc_acli_count(N(p, "attention"), c1, sizeof c1),
           pc_acli_count(N(p, "mlp"), d, sizeof d));
    if (N(p, "router") > 0) printf("  router %s", pc_acli_count(N(p, "router"), a, sizeof a));
    if (N(p, "position") > 0)
        printf("  positions %s", pc_acli_count(N(p, "position"), a, sizeof a));
    if (N(p, "mtp") > 0) printf("  MTP %s", pc_acli_count(N(p, "mtp"), a, sizeof a));
    printf("  norms %s\n", pc_acli_count(N(p, "norms"), e1, sizeof e1));
}

static void print_flops(const cJSON *fl, const char *remat_s) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(fl, "forward_split");
    double seq = N(fl, "seq");
    printf("FLOPs/token     T=%.0f%s: train %.3g (matmuls %.3g + attention %.3g); 6N %.3g\n", seq,
           N(fl, "causal") ? " causal" : "", N(fl, "train"), N(fl, "matmul_train"),
           N(fl, "attention_train"), N(fl, "six_n"));
    if (N(fl, "remat_extra") > 0)
        printf("                with remat %s: %.3g (+%.3g recomputed)\n", remat_s,
               N(fl, "train_with_remat"), N(fl, "remat_extra"));
    printf("                prefill %.3g per prompt token, decode %.3g per token at context %.0f\n",
           N(fl, "prefill"), N(fl, "decode"), seq);
    printf("                forward split: attention proj %.3g, dense MLP %.3g, experts %.3g, "
           "shared %.3g, router %.3g, unembed %.3g, attention core %.3g\n",
           N(s, "attn_proj"), N(s, "dense_mlp"), N(s, "experts"), N(s, "shared_experts"),
           N(s, "router"), N(s, "unembed"), N(s, "attention_core"));
}

/* Training memory and the KV cache. */
static void print_memory(const cJSON *mem, const cJSON *kv, double seq) {
    char x[64], y[64], z[64], w[64], t[64], g[64];
    double kvb = N(kv, "bytes_per_token"), kvs = N(kv, "bytes_per_sequence");
    printf("train memory    %.0f tokens, remat %s, %s: weights %s (%s), grads %s (%s), optimizer "
           "%s, activations %s; total %s\n",
           N(mem, "tokens"), S(mem, "remat"), S(mem, "optimizer"),
           pc_acli_si(N(mem, "weights"), "B", x, sizeof x), S(mem, "weight_dtype"),
           pc_acli_si(N(mem, "grads"), "B", y, sizeof y), S(mem, "grad_dtype"),
           pc_acli_si(N(mem, "optimizer_state"), "B", z, sizeof z),
           pc_acli_si(N(mem, "activations"), "B", w, sizeof w),
           pc_acli_si(N(mem, "total"), "B", t, sizeof t));
    printf("KV cache        %.0f bytes/token (%s), %s per %.0f-token sequence%s\n", kvb,
           S(kv, "dtype"), pc_acli_si(kvs, "B", g, sizeof g), seq,
           kvs < kvb * seq ? " (windows cap local layers)" : "");
}

static void print_moe(const cJSON *doc, const cJSON *m, const cJSON *mem) {
    double ek = N(m, "experts") / N(m, "experts_per_token");
    const char *chip = S(doc, "chip");
    if (!chip[0]) {
        printf("MoE             E/k = %.3g: a MoE layer is compute-bound above a total batch of "
               "B_crit x E/k tokens (--chip X for the number)\n",
               ek);
        return;
    }
    double moe_b = N(doc, "moe_critical_batch");
    printf("MoE             compute-bound above a total batch of B_crit x E/k = %.0f x %.3g = "
           "%.0f tokens on %s (%s weights, %s compute)\n",
           moe_b / ek, ek, moe_b, chip, S(mem, "weight_dtype"), S(mem, "act_dtype"));
}

static void print_mfu(const cJSON *doc, const cJSON *f, const cJSON *mem) {
    char x[64], y[64], z[64], t[64];
    double fpt = N(f, "flops_per_token"), flops = N(f, "model_flops");
    double mfu = N(f, "mfu"), hfu = N(f, "hfu");
    if (cJSON_GetObjectItemCaseSensitive(f, "step_time"))
        printf("MFU             step %s x %.0f chips, %s tokens/step",
               pc_acli_time(N(f, "step_time"), t, sizeof t), N(f, "chips"),
               pc_acli_count(flops / fpt, x, sizeof x));
    else
        printf("MFU             %.4g chip-hours for %s tokens", N(f, "chip_hours"),
               pc_acli_count(flops / fpt, x, sizeof x));
    printf(": model FLOPs %.4g/token (%s, no remat) = %.4g; achieved %s per chip of %s (%s %s)"
           " -> MFU %.1f%%",
           fpt, S(f, "convention"), flops,
           pc_acli_si(N(f, "achieved_flops_per_chip"), "FLOP/s", y, sizeof y),
           pc_acli_si(N(f, "peak_flops_per_chip"), "FLOP/s", z, sizeof z), S(doc, "chip"),
           S(mem, "act_dtype"), 100 * mfu);
    if (hfu > mfu) printf(", HFU %.1f%% (remat %s recomputed)", 100 * hfu, S(f, "remat"));
    printf("\n");
}

static void model_print_text(const cJSON *doc) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "model");
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(doc, "flops_per_token");
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(doc, "train_memory");
    const cJSON *mfu = cJSON_GetObjectItemCaseSensitive(doc, "mfu");
    print_config(m);
    print_params(cJSON_GetObjectItemCaseSensitive(doc, "params"));
    print_flops(fl, S(mem, "remat"));
    print_memory(mem, cJSON_GetObjectItemCaseSensitive(doc, "kv_cache"), N(fl, "seq"));
    if (N(m, "experts") > 0) print_moe(doc, m, mem);
    if (cJSON_IsObject(mfu)) print_mfu(doc, mfu, mem);
}

int pc_cmd_model(int argc, char **argv) {
    model_args a;
    int rc;
    if ((rc = model_parse(argc, argv, &a)) >= 0) return rc;
    const long long *f = a.f;
    if (!a.config && !a.preset &&
        (f[O_LAYERS] < 0 || f[O_DMODEL] < 0 || f[O_HEADS] < 0 || f[O_VOCAB] < 0 ||
         (f[O_DFF] < 0 && f[O_DFFE] < 0)))
        return pc_cli_usage_error("model", "give --config CONFIG.json, a --preset, or at least "
                                           "--layers --d-model --d-ff --heads --vocab");
    cJSON *doc = NULL;
    if ((rc = model_query(&a, &doc)) >= 0) return rc;
    if (a.json) {
        char *s = cJSON_Print(doc);
        if (s) puts(s);
        free(s);
    } else {
        model_print_text(doc);
    }
    cJSON_Delete(doc);
    return PC_EXIT_OK;
}
