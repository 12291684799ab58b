/* perfcast model: parameters, FLOPs, training memory and KV cache of a transformer. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"

static void model_help(FILE *f) {
    fprintf(
        f,
        "usage: perfcast model (CONFIG.json | --preset NAME | --layers L --d-model D ...)\n"
        "                      [--seq T] [--batch-tokens N] [--remat POLICY] [--causal]\n"
        "                      [--weight-dtype P] [--grad-dtype P] [--act-dtype P]\n"
        "                      [--kv-dtype P] [--optimizer adam|momentum|sgd]\n"
        "                      [--master-weights] [--json] [--list-presets]\n\n"
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
    O_SHARED
};

static int parse_prec_opt(const char *flag, const char *v, pc_prec *out) {
    int p = pc_prec_parse(v);
    if (p < 0)
        return pc_cli_usage_error("model", "%s '%s' unknown (fp32 bf16 fp16 fp8 int8 int4 fp4)",
                                  flag, v);
    *out = (pc_prec)p;
    return -1;
}

static cJSON *cfg_json(const pc_model_cfg *m) {
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

int pc_cmd_model(int argc, char **argv) {
    static const struct option opts[] = {{"preset", required_argument, 0, O_PRESET},
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
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *preset = NULL;
    double seq = 4096, batch = -1, remat_k = 0;
    int causal = 0, json = 0, c, rc;
    pc_remat remat = PC_REMAT_NONE;
    pc_mem_opts mo = pc_mem_opts_default();
    pc_prec kv = PC_PREC_BF16;
    int wdt_given = 0;
    /* field overrides: -1 = not given */
    long long f[O_SHARED + 1];
    for (int i = 0; i <= O_SHARED; i++) f[i] = -1;
    int tied = -1, plain = 0, ln = 0;
    pc_error e;
    pc_error_clear(&e);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        switch (c) {
        case O_PRESET: preset = optarg; break;
        case O_SEQ:
        case O_BATCH: {
            double v;
            if (pc_parse_bytes(optarg, &v, &e) != PC_OK || !(v >= 1) || v != floor(v))
                return pc_cli_usage_error("model",
                                          "--%s expects a positive token count like 4096 "
                                          "or 4M, got '%s'",
                                          c == O_SEQ ? "seq" : "batch-tokens", optarg);
            if (c == O_SEQ)
                seq = v;
            else
                batch = v;
            break;
        }
        case O_REMAT: {
            if (!strncmp(optarg, "tensors:", 8) || !strncmp(optarg, "tensors=", 8)) {
                char *end;
                remat_k = strtod(optarg + 8, &end);
                if (*end || !(remat_k > 0) || remat_k > 1e6)
                    return pc_cli_usage_error("model",
                                              "--remat tensors:K needs K > 0 tensors per "
                                              "layer, got '%s'",
                                              optarg);
                remat = PC_REMAT_TENSORS;
                break;
            }
            int r = pc_remat_parse(optarg);
            if (r < 0 || r == PC_REMAT_TENSORS)
                return pc_cli_usage_error("model",
                                          "--remat '%s' unknown (none, big_matmuls, full, "
                                          "tensors:K)",
                                          optarg);
            remat = (pc_remat)r;
            break;
        }
        case O_CAUSAL: causal = 1; break;
        case O_WDT:
            if ((rc = parse_prec_opt("--weight-dtype", optarg, &mo.weight_prec)) >= 0) return rc;
            wdt_given = 1;
            break;
        case O_GDT:
            if ((rc = parse_prec_opt("--grad-dtype", optarg, &mo.grad_prec)) >= 0) return rc;
            break;
        case O_ADT:
            if ((rc = parse_prec_opt("--act-dtype", optarg, &mo.act_prec)) >= 0) return rc;
            break;
        case O_KVDT:
            if ((rc = parse_prec_opt("--kv-dtype", optarg, &kv)) >= 0) return rc;
            break;
        case O_OPT:
            if (!strcmp(optarg, "adam") || !strcmp(optarg, "adamw"))
                mo.optimizer = PC_OPT_ADAM;
            else if (!strcmp(optarg, "momentum"))
                mo.optimizer = PC_OPT_SGD_MOMENTUM;
            else if (!strcmp(optarg, "sgd"))
                mo.optimizer = PC_OPT_SGD;
            else
                return pc_cli_usage_error("model", "--optimizer '%s' unknown (adam, momentum, sgd)",
                                          optarg);
            break;
        case O_MASTER: mo.master_weights = 1; break;
        case O_LIST:
            for (int i = 0; i < pc_model_preset_count(); i++) puts(pc_model_preset_name(i));
            return PC_EXIT_OK;
        case O_TIED: tied = 1; break;
        case O_UNTIED: tied = 0; break;
        case O_PLAIN: plain = 1; break;
        case O_LN: ln = 1; break;
        case 'j': json = 1; break;
        case 'h': model_help(stdout); return PC_EXIT_OK;
        case '?':
            return pc_cli_usage_error("model", "unknown or incomplete option '%s'",
                                      argv[optind - 1]);
        default: {
            long long v;
            if (c < O_LAYERS || c > O_SHARED || pc_cli_parse_i64(optarg, 0, 1LL << 40, &v))
                return pc_cli_usage_error("model", "%s expects an integer >= 0, got '%s'",
                                          argv[optind - 1], optarg ? optarg : "");
            f[c] = v;
        }
        }
    }
    const char *config = NULL;
    if (optind < argc) config = argv[optind++];
    if (optind < argc) return pc_cli_usage_error("model", "unexpected argument '%s'", argv[optind]);
    if (config && preset)
        return pc_cli_usage_error("model", "give a CONFIG.json or --preset, not both");
    pc_model_cfg m;
    memset(&m, 0, sizeof m);
    int from_flags = !config && !preset;
    if (config) {
        if (pc_model_load_hf(config, &m, &e) != PC_OK) return pc_cli_fail(&e);
    } else if (preset) {
        if (pc_model_preset(preset, &m, &e) != PC_OK)
            return pc_cli_usage_error("model", "%s", e.msg);
    } else {
        if (f[O_LAYERS] < 0 || f[O_DMODEL] < 0 || f[O_HEADS] < 0 || f[O_VOCAB] < 0 ||
            (f[O_DFF] < 0 && f[O_DFFE] < 0))
            return pc_cli_usage_error("model", "give a CONFIG.json, a --preset, or at least "
                                               "--layers --d-model --d-ff --heads --vocab");
        snprintf(m.name, sizeof m.name, "custom");
        snprintf(m.arch, sizeof m.arch, "custom");
        m.gated = 1;
        m.weight_prec = PC_PREC_BF16;
    }
    int changed = 0;
    int derived_hd = m.heads > 0 && m.head_dim * m.heads == m.d_model; /* head_dim = D / N */
#define OVR(opt, field)                                                                            \
    if (f[opt] >= 0) m.field = (int64_t)f[opt], changed = 1
    OVR(O_LAYERS, layers);
    if (f[O_LAYERS] >= 0) m.moe_layers = 0, m.local_layers = 0; /* recounted from the patterns */
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
    if ((f[O_DMODEL] >= 0 || f[O_HEADS] >= 0) && f[O_HDIM] < 0 && derived_hd) m.head_dim = 0;
    if (tied >= 0) m.tied = tied, changed = 1;
    if (plain) m.gated = 0, changed = 1;
    if (ln) m.layernorm = 1, changed = 1;
    if (changed && !from_flags) {
        size_t l = strlen(m.name);
        snprintf(m.name + l, sizeof m.name - l, "%s", l + 10 < sizeof m.name ? " (edited)" : "");
    }
    if (pc_model_check(&m, &e) != PC_OK) {
        if (from_flags || changed) return pc_cli_usage_error("model", "%s", e.msg);
        return pc_cli_fail(&e);
    }
    if (!wdt_given) mo.weight_prec = PC_PREC_BF16;
    mo.tokens = batch > 0 ? batch : seq;
    mo.remat = remat;
    mo.remat_tensors = remat_k;
    pc_param_counts p;
    pc_flop_counts fl;
    pc_train_memory mem;
    pc_model_params(&m, &p);
    pc_model_flops(&m, seq, causal, remat, &fl);
    if (pc_model_memory(&m, &mo, &mem, &e) != PC_OK)
        return pc_cli_usage_error("model", "%s", e.msg);
    double kvb = pc_model_kv_bytes_per_token(&m, kv);
    double kvs = pc_model_kv_bytes_per_seq(&m, kv, seq);
    char remat_s[48];
    if (remat == PC_REMAT_TENSORS)
        snprintf(remat_s, sizeof remat_s, "tensors:%g", remat_k);
    else
        snprintf(remat_s, sizeof remat_s, "%s", pc_remat_name(remat));
    const char *opt_s = mo.optimizer == PC_OPT_ADAM           ? "adam"
                        : mo.optimizer == PC_OPT_SGD_MOMENTUM ? "momentum"
                                                              : "sgd";

    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "model", cfg_json(&m));
        cJSON *jp = cJSON_AddObjectToObject(o, "params");
        cJSON_AddNumberToObject(jp, "total", p.total);
        cJSON_AddNumberToObject(jp, "active", p.active);
        cJSON_AddNumberToObject(jp, "non_embedding", p.non_embedding);
        cJSON_AddNumberToObject(jp, "matmul_active", p.matmul_active);
        cJSON_AddNumberToObject(jp, "embedding", p.embedding);
        cJSON_AddNumberToObject(jp, "unembedding", p.unembedding);
        cJSON_AddNumberToObject(jp, "position", p.position);
        cJSON_AddNumberToObject(jp, "attention", p.attention);
        cJSON_AddNumberToObject(jp, "mlp", p.mlp);
        cJSON_AddNumberToObject(jp, "mlp_active", p.mlp_active);
        cJSON_AddNumberToObject(jp, "router", p.router);
        cJSON_AddNumberToObject(jp, "norms", p.norms);
        cJSON_AddNumberToObject(jp, "mtp", p.mtp);
        cJSON *jf = cJSON_AddObjectToObject(o, "flops_per_token");
        cJSON_AddNumberToObject(jf, "seq", seq);
        cJSON_AddBoolToObject(jf, "causal", causal);
        cJSON_AddNumberToObject(jf, "train", fl.train);
        cJSON_AddNumberToObject(jf, "train_with_remat", fl.train_remat);
        cJSON_AddNumberToObject(jf, "remat_extra", fl.remat_extra);
        cJSON_AddNumberToObject(jf, "six_n", fl.six_n);
        cJSON_AddNumberToObject(jf, "attention_train", 3 * fl.attention_fwd);
        cJSON_AddNumberToObject(jf, "prefill", fl.prefill);
        cJSON_AddNumberToObject(jf, "decode", fl.decode);
        cJSON *js = cJSON_AddObjectToObject(jf, "forward_split");
        cJSON_AddNumberToObject(js, "attn_proj", fl.fwd_attn_proj);
        cJSON_AddNumberToObject(js, "dense_mlp", fl.fwd_dense_mlp);
        cJSON_AddNumberToObject(js, "experts", fl.fwd_experts);
        cJSON_AddNumberToObject(js, "shared_experts", fl.fwd_shared);
        cJSON_AddNumberToObject(js, "router", fl.fwd_router);
        cJSON_AddNumberToObject(js, "unembed", fl.fwd_unembed);
        cJSON_AddNumberToObject(js, "attention_core", fl.attention_fwd);
        cJSON_AddNumberToObject(js, "mtp", fl.fwd_mtp);
        cJSON_AddNumberToObject(jf, "keys_global", fl.keys_global);
        cJSON_AddNumberToObject(jf, "keys_local", fl.keys_local);
        cJSON *jm = cJSON_AddObjectToObject(o, "train_memory");
        cJSON_AddNumberToObject(jm, "tokens", mo.tokens);
        cJSON_AddStringToObject(jm, "remat", remat_s);
        cJSON_AddStringToObject(jm, "optimizer", opt_s);
        cJSON_AddNumberToObject(jm, "weights", mem.weights);
        cJSON_AddNumberToObject(jm, "grads", mem.grads);
        cJSON_AddNumberToObject(jm, "optimizer_state", mem.optimizer);
        cJSON_AddNumberToObject(jm, "activations", mem.activations);
        cJSON_AddNumberToObject(jm, "total", mem.total);
        cJSON_AddNumberToObject(jm, "act_elems_per_token_layer", mem.act_elems_per_token_layer);
        cJSON *jk = cJSON_AddObjectToObject(o, "kv_cache");
        cJSON_AddStringToObject(jk, "dtype", pc_prec_name(kv));
        cJSON_AddNumberToObject(jk, "bytes_per_token", kvb);
        cJSON_AddNumberToObject(jk, "bytes_per_sequence", kvs);
        cJSON_AddNumberToObject(o, "weight_bytes", p.total * pc_prec_bytes(mo.weight_prec));
        char *s = cJSON_Print(o);
        if (s) puts(s);
        free(s);
        cJSON_Delete(o);
        return PC_EXIT_OK;
    }
    char a[64], b[64], c1[64], d[64], e1[64], g[64];
    printf("%s (%s): L=%lld D=%lld F=%lld N=%lld K=%lld H=%lld V=%lld", m.name, m.arch,
           (long long)m.layers, (long long)m.d_model, (long long)m.d_ff, (long long)m.heads,
           (long long)m.kv_heads, (long long)m.head_dim, (long long)m.vocab);
    if (m.experts)
        printf(" E=%lld k=%lld F_e=%lld", (long long)m.experts, (long long)m.experts_per_token,
               (long long)m.d_ff_expert);
    if (m.shared_experts)
        printf(" shared=%lldx%lld", (long long)m.shared_experts, (long long)m.d_ff_shared);
    printf("\n  %s MLP%s%s%s, %s, %s embeddings, %s attention%s%s\n", m.gated ? "gated" : "plain",
           m.act[0] ? " (" : "", m.act, m.act[0] ? ")" : "", m.layernorm ? "LayerNorm" : "RMSNorm",
           m.tied ? "tied" : "untied",
           m.kv_lora_rank > 0    ? "MLA"
           : m.kv_heads == m.heads ? "MHA"
           : m.kv_heads == 1     ? "MQA"
                                 : "GQA",
           m.positions ? ", learned positions" : "", m.attn_sink ? ", attention sinks" : "");
    if (m.kv_lora_rank > 0)
        printf("  MLA: q_lora_rank %lld, kv_lora_rank %lld, qk nope %lld + rope %lld, v %lld; "
               "cache %lld values/token/layer\n",
               (long long)m.q_lora_rank, (long long)m.kv_lora_rank, (long long)m.qk_nope_head_dim,
               (long long)m.qk_rope_head_dim, (long long)m.v_head_dim,
               (long long)(m.kv_lora_rank + m.qk_rope_head_dim));
    if (m.experts)
        printf("  layers: %lld MoE, %lld dense (F=%lld)%s\n", (long long)m.moe_layers,
               (long long)(m.layers - m.moe_layers), (long long)m.d_ff,
               m.mtp_layers ? "; + MTP module(s), see note" : "");
    if (m.sliding_window > 0 || m.attn_chunk > 0)
        printf("  attention: %lld of %lld layers %s %lld tokens, the rest global\n",
               (long long)m.local_layers, (long long)m.layers,
               m.sliding_window > 0 ? "sliding window" : "chunked, chunk",
               (long long)(m.sliding_window > 0 ? m.sliding_window : m.attn_chunk));
    if (m.note[0]) printf("  note: %s\n", m.note);
    printf("parameters      total %s  active/token %s  non-embedding %s  in matmuls %s\n",
           pc_acli_count(p.total, a, sizeof a), pc_acli_count(p.active, b, sizeof b),
           pc_acli_count(p.non_embedding, c1, sizeof c1),
           pc_acli_count(p.matmul_active, d, sizeof d));
    printf("                embedding %s  unembedding %s  attention %s  MLP %s",
           pc_acli_count(p.embedding, a, sizeof a), pc_acli_count(p.unembedding, b, sizeof b),
           pc_acli_count(p.attention, c1, sizeof c1), pc_acli_count(p.mlp, d, sizeof d));
    if (p.router > 0) printf("  router %s", pc_acli_count(p.router, a, sizeof a));
    if (p.position > 0) printf("  positions %s", pc_acli_count(p.position, a, sizeof a));
    if (p.mtp > 0) printf("  MTP %s", pc_acli_count(p.mtp, a, sizeof a));
    printf("  norms %s\n", pc_acli_count(p.norms, e1, sizeof e1));
    printf("FLOPs/token     T=%.0f%s: train %.3g (matmuls %.3g + attention %.3g); 6N %.3g\n", seq,
           causal ? " causal" : "", fl.train, 3 * fl.matmul, 3 * fl.attention_fwd, fl.six_n);
    if (fl.remat_extra > 0)
        printf("                with remat %s: %.3g (+%.3g recomputed)\n", remat_s, fl.train_remat,
               fl.remat_extra);
    printf("                prefill %.3g per prompt token, decode %.3g per token at context %.0f\n",
           fl.prefill, fl.decode, seq);
    printf("                forward split: attention proj %.3g, dense MLP %.3g, experts %.3g, "
           "shared %.3g, router %.3g, unembed %.3g, attention core %.3g\n",
           fl.fwd_attn_proj, fl.fwd_dense_mlp, fl.fwd_experts, fl.fwd_shared, fl.fwd_router,
           fl.fwd_unembed, fl.attention_fwd);
    printf("train memory    %.0f tokens, remat %s, %s: weights %s (%s), grads %s (%s), optimizer "
           "%s, activations %s; total %s\n",
           mo.tokens, remat_s, opt_s, pc_acli_si(mem.weights, "B", a, sizeof a),
           pc_prec_name(mo.weight_prec), pc_acli_si(mem.grads, "B", b, sizeof b),
           pc_prec_name(mo.grad_prec), pc_acli_si(mem.optimizer, "B", c1, sizeof c1),
           pc_acli_si(mem.activations, "B", d, sizeof d),
           pc_acli_si(mem.total, "B", e1, sizeof e1));
    printf("KV cache        %.0f bytes/token (%s), %s per %.0f-token sequence%s\n", kvb,
           pc_prec_name(kv), pc_acli_si(kvs, "B", g, sizeof g), seq,
           kvs < kvb * seq ? " (windows cap local layers)" : "");
    return PC_EXIT_OK;
}
