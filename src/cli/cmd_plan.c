/* perfcast plan train | serve: parallelism plans for training, serving tables (issue #6). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analytic_cli.h"
#include "perfcast/calib.h"

#define CMD_TRAIN "plan train"
#define CMD_SERVE "plan serve"

static void plan_help(FILE *f) {
    fprintf(f, "usage: perfcast plan train ...   (perfcast plan train --help)\n"
               "       perfcast plan serve ...   (perfcast plan serve --help)\n\n"
               "Analytical planning after the scaling book (docs/analytic.md, \"Planning\"):\n"
               "  train  search data x FSDP/ZeRO x tensor x pipeline x expert parallelism, remat\n"
               "         and micro-batches for a model on a TPU slice or GPU cluster; rank the\n"
               "         plans that fit by roofline step time; days, cost, thresholds, JAX mesh\n"
               "  serve  prefill/decode latency and throughput against batch and context, KV\n"
               "         cache, largest batch, model-parallel limits, cost per million tokens\n");
}

static void train_help(FILE *f) {
    fprintf(
        f,
        "usage: perfcast plan train (--model CONFIG.json|PRESET | --preset NAME) --chip NAME\n"
        "                           (--chips N | --slice AxBxC) --batch-tokens B [--seq T]\n"
        "                           [--tokens TOTAL] [--price-per-chip-hour X] [--top N] [--json]\n"
        "                           [--remat LIST] [--zero LIST] [--dp N --fsdp N --tp N --pp N\n"
        "                           --ep N] [--max-micro M] [--micro M] [--micro-batch-size S]\n"
        "                           [--vp V] [--cp C] [--efficiency E] [--attention A]\n"
        "                           [--optimizer adam|momentum|sgd] [--master-weights]\n"
        "                           [--weight-dtype P] [--grad-dtype P] [--act-dtype P]\n"
        "                           [--chips-file F]\n\n"
        "Searches every factorization of the chips into stage (pipeline) x data x fsdp (ZeRO\n"
        "stage 1/2/3) x expert (MoE) x tensor axes that maps onto the slice and the model,\n"
        "every remat policy and micro-batch count (powers of two and divisors of the\n"
        "sequences per data shard: gradient accumulation; pipeline micro-batches with bubble\n"
        "(p-1)/(v m) of the pipelined time, v interleaved virtual stages); keeps the plans\n"
        "whose weights, gradients, optimizer state, activations (in-flight micro-batches)\n"
        "and transients fit in HBM; ranks them by the calibrated step time (the run each\n"
        "plan stands for under a model fitted on measured runs), shown beside the ideal\n"
        "roofline bound (compute at peak x efficiency, HBM traffic, each axis's collectives,\n"
        "overlapped where the book says they can be).\n\n"
        "  --model X          a Hugging Face config.json, or a preset name\n"
        "  --chips N          chips; a slice shape is chosen (the most collective bandwidth,\n"
        "                     then the fewest hops; several slices over DCN if N does not\n"
        "                     fit one pod); --slice for a specific topology\n"
        "  --slice AxBxC      one slice of this shape (with --chips, they must agree)\n"
        "  --batch-tokens B   tokens per optimizer step: 4M = 4,194,304 (k/M/G binary, as the\n"
        "                     book's batch sizes), or SEQSxLEN like 1024x4096\n"
        "  --seq T            sequence length (default 4096; k binary)\n"
        "  --tokens TOTAL     training tokens for days and cost: 15T = 15e12 (decimal; B = 1e9)\n"
        "  --price-per-chip-hour X   USD (default: the chip's, when known)\n"
        "  --remat LIST       policies to search: none,big_matmuls,full,tensors:K or all\n"
        "                     (default none,big_matmuls,full)\n"
        "  --zero LIST        ZeRO stages for the fsdp axis (default 1,2,3)\n"
        "  --dp/--fsdp/--tp/--pp/--ep N   fix an axis size (default: search)\n"
        "  --max-micro M      most micro-batches searched (default 256)\n"
        "  --micro M          pin the micro-batches per step (gradient accumulation steps;\n"
        "                     pipeline micro-batches)\n"
        "  --micro-batch-size S   pin the sequences per micro-batch (per data shard)\n"
        "  --vp V             interleaved pipeline schedule: V virtual stages per stage\n"
        "                     (needs stage > 1; the largest stage holds V chunks of\n"
        "                     ceil(L/(pp V)) layers; uneven stages are allowed)\n"
        "  --cp C             context parallel: each sequence split over C chips of the data\n"
        "                     axes (ring attention; C must divide the data shards)\n"
        "  --efficiency E     fraction of peak FLOP/s reached by the matmuls (default: the\n"
        "                     book's TPU 0.95, GPU 0.80; --efficiency 0.4 for the book's MFU)\n"
        "  --attention A      attention FLOPs: causal (default), full, none (the 6N rule)\n"
        "  --book             price collectives as the book's answers (V/W_ici per axis, no\n"
        "                     (n-1)/n ring factor; V/W_dcn per chip); default exact\n"
        "  --calibration C    builtin (default: fitted on published measured runs), none (the\n"
        "                     ideal roofline only), or a file from 'perfcast calibrate'; plans\n"
        "                     rank by the calibrated step time, shown beside the ideal bound\n"
        "  --top N            plans listed (default 5)\n"
        "  --json             machine-readable output\n\n"
        "Exit status: 0 a plan was found, 1 none fits (the message says what to change),\n"
        "2 bad usage (unknown chip/model, mesh not matching the chips, ...).\n");
}

static void serve_help(FILE *f) {
    fprintf(
        f, "usage: perfcast plan serve (--model CONFIG.json|PRESET | --preset NAME) --chip NAME\n"
           "                           (--chips N | --slice AxB) --context S[,S2,...]\n"
           "                           [--batch N|sweep] [--prefill-tokens P] [--decode-tokens G]\n"
           "                           [--weight-dtype P] [--kv-dtype P] [--efficiency E]\n"
           "                           [--replicas R | --tp N] [--ep N] [--attention-dp]\n"
           "                           [--concurrency N] [--calibration builtin|none|FILE]\n"
           "                           [--price-per-chip-hour X] [--chips-file F] [--json]\n\n"
           "The model is sharded over all chips by tensor (model) parallelism (query heads and\n"
           "d_ff split; the KV cache split over KV heads, then over the batch). For each context\n"
           "length: KV cache size, the largest batch whose weights + KV cache fit in HBM, the\n"
           "model-parallel limits, and a table over batch sizes 1, 2, 4, ... max: decode step\n"
           "(= KV load + max(matmul FLOPs, weight load, TP AllReduces)), tokens/s, QPS per chip,\n"
           "prefill time of the batch's prompts, cost per million tokens, and the decode TP\n"
           "limit at that batch (\"TP lim\": M_Y F/(B beta), beta = W_hbm/W_ici, §7). MoE\n"
           "models: the decode batch above which the experts are compute-bound (B_crit E/k).\n"
           "These tables are the ideal roofline (the book's). Then, per context, the calibrated\n"
           "continuous-batching model (fitted on measured serving runs): output tokens/s of the\n"
           "whole job and per chip, TTFT, TPOT, the batch used (the throughput-optimal one that\n"
           "fits unless pinned) and the largest that fits, beside the ideal bound.\n\n"
           "  --context S        KV-cache length per sequence (k binary: 8k = 8192); a list gives\n"
           "                     one table per context\n"
           "  --batch N|sweep    one batch size, or the doubling table (default)\n"
           "  --prefill-tokens P prompt tokens per request (default: the context)\n"
           "  --decode-tokens G  generated tokens per request, for QPS (default 512)\n"
           "  --weight-dtype P   weights (default bf16); --kv-dtype P (default: the weights')\n"
           "  --efficiency E     fraction of peak FLOP/s (default TPU 0.95, GPU 0.80)\n"
           "  --attention A      attention FLOPs: causal (default; decode reads the whole\n"
           "                     context), full, none (the book's 2N rule)\n"
           "  --book             the book's convention: collectives priced V/W (no (n-1)/n),\n"
           "                     and no decode TP AllReduces (the book's §7 decode formula\n"
           "                     leaves them out); default exact, with them\n"
           "  --replicas R       data parallelism: R model replicas of chips/R-way tensor\n"
           "                     parallelism (it must divide the heads), so any chip count gets\n"
           "                     an answer; the tables are then per replica\n"
           "  --tp N             tensor parallel degree (default: all chips; replicas = chips/N)\n"
           "  --ep N             expert parallel ways (MoE); --attention-dp: attention data\n"
           "                     parallel over the tp GPUs (MoE, TensorRT-LLM style)\n"
           "  --concurrency N    requests in flight over all replicas (pins the calibrated\n"
           "                     batch: N / replicas each); --batch N pins it per replica\n"
           "  --calibration C    builtin (default), none (tables only), or a file from\n"
           "                     'perfcast calibrate'\n\n"
           "Exit status: 0 ok, 1 the weights (or the requested batch) do not fit, 2 bad usage.\n");
}

/* ---------------- parsing helpers ---------------- */

/* "4M" (binary when `binary`), "15T", "1.5e13", "1024x4096". */
static int parse_count(const char *s, int binary, double *out) {
    if (!s || !*s) return -1;
    const char *x = strchr(s, 'x');
    if (x) {
        char a[64];
        size_t n = (size_t)(x - s);
        if (n == 0 || n >= sizeof a) return -1;
        memcpy(a, s, n);
        a[n] = '\0';
        double u, v;
        if (parse_count(a, binary, &u) || parse_count(x + 1, binary, &v)) return -1;
        *out = u * v;
        return isfinite(*out) ? 0 : -1;
    }
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0) return -1;
    double mul = 1;
    if (*end) {
        char c = (char)toupper((unsigned char)*end);
        if (c == 'B' && !binary) c = 'G'; /* "10B" tokens = 1e10 */
        const char *units = "KMGTP";
        const char *p = strchr(units, c);
        if (!c || !p || end[1]) return -1;
        mul = binary ? pow(1024, (double)(p - units + 1)) : pow(1000, (double)(p - units + 1));
    }
    *out = v * mul;
    return isfinite(*out) ? 0 : -1;
}

static int parse_prec(const char *cmd, const char *flag, const char *v, pc_prec *out) {
    int p = pc_prec_parse(v);
    if (p < 0)
        return pc_cli_usage_error(cmd, "%s '%s' unknown (fp32 bf16 fp16 fp8 int8 int4 fp4)", flag,
                                  v);
    *out = (pc_prec)p;
    return -1;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* --model X: a config.json path or a preset name. Returns -1 or an exit code. */
static int load_model(const char *cmd, const char *model, const char *preset, pc_model_cfg *m) {
    pc_error e;
    pc_error_clear(&e);
    if (model && preset) return pc_cli_usage_error(cmd, "give --model or --preset, not both");
    if (!model && !preset)
        return pc_cli_usage_error(cmd, "no model: give --model CONFIG.json or --preset NAME "
                                       "(e.g. --preset llama3-70b)");
    const char *name = preset ? preset : model;
    if (model && (file_exists(model) || strchr(model, '/') || strstr(model, ".json"))) {
        if (pc_model_load_hf(model, m, &e) != PC_OK) return pc_cli_fail(&e);
        return -1;
    }
    if (pc_model_preset(name, m, &e) != PC_OK)
        return pc_cli_usage_error(cmd, "%s (or give a config.json path)", e.msg);
    return -1;
}

/* Resolves --chips / --slice into a checked mesh. Returns -1 or an exit code. */
static int resolve_slice(const char *cmd, const pc_chip *chip, long long chips, const char *slice_s,
                         pc_mesh *mesh) {
    pc_error e;
    pc_error_clear(&e);
    if (slice_s) {
        if (pc_mesh_parse(slice_s, mesh, &e) != PC_OK)
            return pc_cli_usage_error(cmd, "--slice: %s", e.msg);
        if (pc_mesh_check(chip, mesh, &e) != PC_OK)
            return pc_cli_usage_error(cmd, "--slice %s: %s", slice_s, e.msg);
        long long n = (long long)pc_mesh_devices(mesh);
        if (chips > 0 && chips != n)
            return pc_cli_usage_error(cmd,
                                      "--slice %s has %lld chips but --chips says %lld; give one "
                                      "of them, or make them agree",
                                      slice_s, n, chips);
        return -1;
    }
    if (chips <= 0)
        return pc_cli_usage_error(cmd, "give --chips N or --slice AxBxC (e.g. --chips 8960)");
    pc_slice_note note;
    if (pc_plan_slice_for_chips_note(chip, chips, mesh, &note, &e) != PC_OK)
        return pc_cli_usage_error(cmd, "--chips %lld: %s", chips, e.msg);
    if (note.warn) fprintf(stderr, "perfcast %s: warning: %s\n", cmd, note.text);
    return -1;
}

static void mesh_str(const pc_mesh *m, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->ndims && used + 24 < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld%s", i ? "x" : "",
                                 (long long)m->size[i], (m->dcn_mask >> i) & 1 ? "(DCN)" : "");
}

static const char *wrap_str(const pc_chip *c, const pc_mesh *m) {
    if (c->kind == PC_CHIP_GPU) return "NVLink + InfiniBand";
    int any = 0, all = 1;
    for (int i = 0; i < m->ndims; i++) {
        if ((m->dcn_mask >> i) & 1 || m->size[i] <= 1) continue;
        any |= m->wrap[i] == 1;
        all &= m->wrap[i] == 1;
    }
    return all && any ? "wraparound" : any ? "wraparound on some axes" : "no wraparound";
}

static const char *commas(double v, char *buf, size_t cap) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.0f", v);
    size_t n = strlen(tmp), o = 0;
    for (size_t i = 0; i < n && o + 2 < cap; i++) {
        buf[o++] = tmp[i];
        size_t left = n - i - 1;
        if (left && left % 3 == 0 && tmp[i] != '-') buf[o++] = ',';
    }
    buf[o] = '\0';
    return buf;
}

static const char *gb(double bytes, char *buf, size_t cap) {
    if (bytes >= 1e12)
        snprintf(buf, cap, "%.3g TB", bytes / 1e12);
    else if (bytes >= 1e8)
        snprintf(buf, cap, "%.3g GB", bytes / 1e9);
    else
        snprintf(buf, cap, "%.3g MB", bytes / 1e6);
    return buf;
}

static const char *money(double usd, char *buf, size_t cap) {
    if (usd >= 1e6)
        snprintf(buf, cap, "$%.3gM", usd / 1e6);
    else if (usd >= 1e3)
        snprintf(buf, cap, "$%.3gk", usd / 1e3);
    else
        snprintf(buf, cap, "$%.3g", usd);
    return buf;
}

static const char *remat_str(pc_remat r, double k, char *buf, size_t cap) {
    if (r == PC_REMAT_TENSORS)
        snprintf(buf, cap, "tensors:%g", k);
    else
        snprintf(buf, cap, "%s", pc_remat_name(r));
    return buf;
}

/* "fsdp 2240 (ZeRO-3) x tensor 4" */
static const char *layout_str(const pc_train_plan *p, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int x = 0; x < PC_PAR_COUNT && used + 40 < cap; x++) {
        if (p->axis[x] <= 1) continue;
        used += (size_t)snprintf(buf + used, cap - used, "%s%s %lld", used ? " x " : "",
                                 pc_par_axis_name((pc_par_axis)x), (long long)p->axis[x]);
        if (x == PC_PAR_FSDP)
            used += (size_t)snprintf(buf + used, cap - used, " (ZeRO-%d)", p->zero);
    }
    if (!used) snprintf(buf, cap, "one chip");
    return buf;
}

/* The chosen mesh as a JAX snippet. */
static void jax_snippet(const pc_train_plan *p, const pc_model_cfg *m, double seqs, double rk,
                        char *buf, size_t cap) {
    size_t u = 0;
#define OUT(...)                                                                                   \
    do {                                                                                           \
        if (u < cap) u += (size_t)snprintf(buf + u, cap - u, __VA_ARGS__);                         \
    } while (0)
    char shape[128] = "", names[128] = "";
    size_t a = 0, b = 0;
    int n = 0;
    for (int x = 0; x < PC_PAR_COUNT; x++) {
        if (p->axis[x] <= 1) continue;
        a += (size_t)snprintf(shape + a, sizeof shape - a, "%s%lld", n ? ", " : "",
                              (long long)p->axis[x]);
        b += (size_t)snprintf(names + b, sizeof names - b, "%s'%s'", n ? ", " : "",
                              pc_par_axis_name((pc_par_axis)x));
        n++;
    }
    if (!n) snprintf(shape, sizeof shape, "1"), snprintf(names, sizeof names, "'data'");
    const char *S = p->axis[PC_PAR_PP] > 1 ? "'stage'" : "None";
    const char *Fw = p->axis[PC_PAR_FSDP] > 1 && p->zero == 3 ? "'fsdp'" : "None";
    const char *Fo = p->axis[PC_PAR_FSDP] > 1 ? "'fsdp'" : "None";
    const char *T = p->axis[PC_PAR_TP] > 1 ? "'tensor'" : "None";
    const char *E = p->axis[PC_PAR_EP] > 1 ? "'expert'" : "None";
    int64_t K = m->kv_heads ? m->kv_heads : m->heads;
    const char *Tk = p->axis[PC_PAR_TP] > 1 && K % p->axis[PC_PAR_TP] == 0 ? T : "None";
    /* batch axes while they fit the sequences, the rest shard the sequence */
    char bax[96] = "", sax[96] = "";
    size_t ba = 0, sa = 0;
    int nb = 0, ns = 0;
    double prod = 1;
    static const int data_axes[3] = {PC_PAR_DP, PC_PAR_FSDP, PC_PAR_EP};
    for (int i = 0; i < 3; i++) {
        int x = data_axes[i];
        if (p->axis[x] <= 1) continue;
        const char *nm = pc_par_axis_name((pc_par_axis)x);
        if (prod * (double)p->axis[x] <= seqs + 1e-9 && !ns) {
            prod *= (double)p->axis[x];
            ba += (size_t)snprintf(bax + ba, sizeof bax - ba, "%s'%s'", nb++ ? ", " : "", nm);
        } else {
            sa += (size_t)snprintf(sax + sa, sizeof sax - sa, "%s'%s'", ns++ ? ", " : "", nm);
        }
    }
    double shards = (double)(p->axis[PC_PAR_DP] * p->axis[PC_PAR_FSDP] * p->axis[PC_PAR_EP]);
    int chunked = shards > seqs + 1e-9 && ns && nb == 0;
    char bspec[100], sspec[100];
    snprintf(bspec, sizeof bspec, "%s%s%s", nb > 1 ? "(" : "", nb ? bax : "None",
             nb > 1 ? ")" : "");
    snprintf(sspec, sizeof sspec, "%s%s%s", ns > 1 ? "(" : "", ns ? sax : "None",
             ns > 1 ? ")" : "");
    OUT("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n");
    OUT("mesh = jax.make_mesh((%s%s), (%s%s))\n", shape, n == 1 || !n ? "," : "", names,
        n == 1 || !n ? "," : "");
    OUT("# weights, layers stacked on a leading [L] axis%s\n",
        p->axis[PC_PAR_PP] > 1 ? " split over 'stage'" : "");
    OUT("w_q   = P(%s, %s, %s, None)   # [L, D, N, H]\n", S, Fw, T);
    OUT("w_kv  = P(%s, %s, %s, None)   # [L, D, K, H]%s\n", S, Fw, Tk,
        strcmp(Tk, T) ? "  (K < tensor: KV heads replicated)" : "");
    OUT("w_o   = P(%s, %s, None, %s)   # [L, N, H, D]\n", S, T, Fw);
    if (m->experts > 0) {
        OUT("w_in  = P(%s, %s, %s, %s)   # [L, E, D, F] experts\n", S, E, Fw, T);
        OUT("w_out = P(%s, %s, %s, %s)   # [L, E, F, D]\n", S, E, T, Fw);
    } else {
        OUT("w_in  = P(%s, %s, %s)   # [L, D, F]%s\n", S, Fw, T, m->gated ? " (gate and up)" : "");
        OUT("w_out = P(%s, %s, %s)   # [L, F, D]\n", S, T, Fw);
    }
    OUT("embed = P(%s, %s)   # [V, D]\n", T, Fw);
    if (p->axis[PC_PAR_FSDP] > 1 && p->zero < 3)
        OUT("# ZeRO-%d: Adam moments%s use the same specs with %s in place of None on D\n", p->zero,
            p->zero == 2 ? " and gradients" : "", Fo);
    if (chunked) /* one data axis larger than the batch's sequences */
        OUT("x     = P(%s, None, %s)   # activations [%.0f chunks of %.0f tokens, D]: each "
            "sequence split over %.3g shards (ring attention)\n",
            sspec, T, shards, p->tokens_per_shard, shards / seqs);
    else
        OUT("x     = P(%s, %s, %s)   # activations [batch, seq, D]\n", bspec, sspec, T);
    switch (p->remat) {
    case PC_REMAT_NONE: OUT("# remat: none (save every activation)\n"); break;
    case PC_REMAT_BIG_MATMULS:
        OUT("layer = jax.checkpoint(layer, policy=jax.checkpoint_policies."
            "dots_with_no_batch_dims_saveable)\n");
        break;
    case PC_REMAT_FULL:
        OUT("layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)\n");
        break;
    default:
        OUT("layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.save_only_these_names("
            "...))  # %g [tokens, D] tensors per layer\n",
            rk);
    }
    if (p->axis[PC_PAR_PP] > 1)
        OUT("# pipeline: %lld stages, %lld micro-batches per step\n", (long long)p->axis[PC_PAR_PP],
            (long long)p->micro);
    else if (p->micro > 1)
        OUT("# gradient accumulation over %lld micro-batches\n", (long long)p->micro);
#undef OUT
}

static cJSON *plan_json(const pc_train_plan *p, double rk) {
    cJSON *o = cJSON_CreateObject();
    cJSON *ax = cJSON_AddObjectToObject(o, "axes");
    for (int x = 0; x < PC_PAR_COUNT; x++)
        cJSON_AddNumberToObject(ax, pc_par_axis_name((pc_par_axis)x), (double)p->axis[x]);
    cJSON *sp = cJSON_AddObjectToObject(o, "physical_axes");
    for (int x = 0; x < PC_PAR_COUNT; x++)
        cJSON_AddNumberToObject(sp, pc_par_axis_name((pc_par_axis)x), p->span[x]);
    cJSON *dc = cJSON_AddArrayToObject(o, "dcn_axes");
    for (int x = 0; x < PC_PAR_COUNT; x++)
        if (p->dcn[x])
            cJSON_AddItemToArray(dc, cJSON_CreateString(pc_par_axis_name((pc_par_axis)x)));
    cJSON_AddNumberToObject(o, "zero", p->zero);
    char r[32];
    cJSON_AddStringToObject(o, "remat", remat_str(p->remat, rk, r, sizeof r));
    cJSON_AddNumberToObject(o, "micro_batches", (double)p->micro);
    cJSON_AddNumberToObject(o, "micro_batch_size", (double)p->micro_batch_size);
    cJSON_AddNumberToObject(o, "virtual_stages", (double)p->vp);
    cJSON_AddNumberToObject(o, "context_parallel", (double)p->cp);
    cJSON_AddNumberToObject(o, "tokens_per_chip", p->tokens_per_chip);
    cJSON_AddNumberToObject(o, "tokens_per_data_shard", p->tokens_per_shard);
    cJSON *m = cJSON_AddObjectToObject(o, "memory_per_chip");
    cJSON_AddNumberToObject(m, "weights", p->mem_weights);
    cJSON_AddNumberToObject(m, "grads", p->mem_grads);
    cJSON_AddNumberToObject(m, "optimizer", p->mem_opt);
    cJSON_AddNumberToObject(m, "activations", p->mem_act);
    cJSON_AddNumberToObject(m, "transient", p->mem_transient);
    cJSON_AddNumberToObject(m, "total", p->mem_total);
    cJSON_AddBoolToObject(o, "fits", p->fits);
    cJSON *c = cJSON_AddObjectToObject(o, "per_micro_batch");
    cJSON_AddNumberToObject(c, "math", p->t_math);
    cJSON_AddNumberToObject(c, "hbm", p->t_hbm);
    cJSON_AddNumberToObject(c, "fsdp", p->t_fsdp);
    cJSON_AddNumberToObject(c, "tp", p->t_tp);
    cJSON_AddNumberToObject(c, "sp", p->t_sp);
    cJSON_AddNumberToObject(c, "ep", p->t_ep);
    cJSON_AddNumberToObject(c, "pp", p->t_pp);
    cJSON_AddNumberToObject(o, "end_of_step_collectives", p->t_dp);
    static const char *const keys[PC_PART_COUNT] = {
        "compute", "hbm", "fsdp", "tp", "sp", "ep", "pp_p2p", "bubble", "dp", "optimizer"};
    cJSON *pt = cJSON_AddObjectToObject(o, "step_parts");
    for (int i = 0; i < PC_PART_COUNT; i++) cJSON_AddNumberToObject(pt, keys[i], p->part[i]);
    cJSON_AddNumberToObject(o, "step_time", p->step_time);
    cJSON_AddNumberToObject(o, "step_time_no_overlap", p->step_time_upper);
    cJSON_AddNumberToObject(o, "mfu", p->mfu);
    cJSON_AddNumberToObject(o, "tokens_per_s", p->tokens_per_s);
    cJSON_AddNumberToObject(o, "days", p->days);
    cJSON_AddNumberToObject(o, "cost_usd", p->cost);
    cJSON_AddStringToObject(o, "bottleneck", pc_plan_part_name(p->bottleneck));
    return o;
}

static void print_parts(const pc_train_plan *p) {
    char t[32];
    printf("  step %s =", pc_acli_time(p->step_time, t, sizeof t));
    int first = 1;
    for (int i = 0; i < PC_PART_COUNT; i++) {
        if (!(p->part[i] > 0) || p->part[i] < 1e-4 * p->step_time) continue;
        printf("%s %s %s", first ? "" : " +", pc_plan_part_name((pc_plan_part)i),
               pc_acli_time(p->part[i], t, sizeof t));
        first = 0;
    }
    printf("\n  bottleneck: %s (%.0f%% of the step)\n", pc_plan_part_name(p->bottleneck),
           p->step_time > 0 ? 100 * p->part[p->bottleneck] / p->step_time : 0.0);
}

/* The calibrated prediction beside the ideal bound (docs/analytic.md
 * "Calibrated planning"). */
static void print_calibrated(const pc_train_plan *p, const pc_plan_train_opts *o) {
    char t[32], t2[32];
    if (!o->calibration) {
        printf("  (ideal roofline only: --calibration none)\n");
        return;
    }
    if (!(p->calibrated_step > 0)) {
        printf("  calibrated: not priced for this plan (the batch does not split into whole "
               "sequences per data shard or whole shards per sequence, or the calibrated step is "
               "not finite); ranked by the ideal roofline\n");
        return;
    }
    printf("  calibrated step %s (MFU %.1f%%) against the ideal bound %s: %.2fx; largest exposed "
           "part: %s\n",
           pc_acli_time(p->calibrated_step, t, sizeof t), 100 * p->calibrated_mfu,
           pc_acli_time(p->step_time, t2, sizeof t2), p->calibrated_step / p->step_time,
           pc_step_part_name((pc_step_part)p->calibrated_bottleneck));
}

static void calibrated_json(cJSON *o, const pc_train_plan *p) {
    if (p->calibrated_step > 0) {
        cJSON_AddNumberToObject(o, "calibrated_step_time", p->calibrated_step);
        cJSON_AddNumberToObject(o, "calibrated_mfu", p->calibrated_mfu);
        /* tokens/s, days and cost follow the step time */
        double r = p->step_time / p->calibrated_step;
        cJSON_AddNumberToObject(o, "calibrated_tokens_per_s", p->tokens_per_s * r);
        cJSON_AddNumberToObject(o, "calibrated_days", p->days / r);
        cJSON_AddNumberToObject(o, "calibrated_cost_usd", p->cost / r);
        cJSON_AddStringToObject(o, "calibrated_bottleneck",
                                pc_step_part_name((pc_step_part)p->calibrated_bottleneck));
    } else {
        cJSON_AddNullToObject(o, "calibrated_step_time");
    }
}

/* "  MFU 40.0%, 3.94 M tokens/s, 44 days for 15e12 tokens, $39.8M at $4.20/chip-hour" */
static void print_rates(const char *label, double mfu, double tps, double days, double cost,
                        const pc_plan_train_opts *o, const pc_train_search *s,
                        const pc_chip *chip) {
    char a1[64], a2[64], a3[64];
    printf("  %sMFU %.1f%%, %s tokens/s", label, 100 * mfu, pc_acli_si(tps, "", a1, sizeof a1));
    if (o->total_tokens > 0) {
        printf(", %.3g days for %s tokens", days, pc_acli_count(o->total_tokens, a3, sizeof a3));
        if (s->price_per_hour > 0)
            printf(", %s at $%.2f/chip-hour", money(cost, a2, sizeof a2), s->price_per_hour);
        else
            printf(" (no price known for %s: --price-per-chip-hour)", chip->name);
    }
    printf("\n");
}

/* ---------------- plan train ---------------- */

enum {
    T_MODEL = 256,
    T_CALIB,
    T_PRESET,
    T_CHIP,
    T_CHIPS,
    T_SLICE,
    T_CHIPSFILE,
    T_BATCH,
    T_SEQ,
    T_TOKENS,
    T_PRICE,
    T_EFF,
    T_ATTN,
    T_REMAT,
    T_ZERO,
    T_DP,
    T_FSDP,
    T_TP,
    T_PP,
    T_EP,
    T_MICRO,
    T_OPT,
    T_MASTER,
    T_WDT,
    T_GDT,
    T_ADT,
    T_TOP,
    T_KVDT,
    T_CONTEXT,
    T_PREFILL,
    T_DECODE,
    T_SBATCH,
    T_BOOK,
    T_PMICRO,
    T_MBS,
    T_VP,
    T_CP,
    T_CONC,
    T_REPL,
    T_ADP
};

static int parse_remat_list(const char *v, unsigned *mask, double *k) {
    if (!strcmp(v, "all")) {
        *mask = (1u << PC_REMAT_NONE) | (1u << PC_REMAT_BIG_MATMULS) | (1u << PC_REMAT_FULL);
        return 0;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
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

static int plan_train(int argc, char **argv) {
    static const struct option opts[] = {{"model", required_argument, 0, T_MODEL},
                                         {"calibration", required_argument, 0, T_CALIB},
                                         {"preset", required_argument, 0, T_PRESET},
                                         {"chip", required_argument, 0, T_CHIP},
                                         {"chips", required_argument, 0, T_CHIPS},
                                         {"slice", required_argument, 0, T_SLICE},
                                         {"chips-file", required_argument, 0, T_CHIPSFILE},
                                         {"batch-tokens", required_argument, 0, T_BATCH},
                                         {"seq", required_argument, 0, T_SEQ},
                                         {"tokens", required_argument, 0, T_TOKENS},
                                         {"price-per-chip-hour", required_argument, 0, T_PRICE},
                                         {"efficiency", required_argument, 0, T_EFF},
                                         {"attention", required_argument, 0, T_ATTN},
                                         {"remat", required_argument, 0, T_REMAT},
                                         {"zero", required_argument, 0, T_ZERO},
                                         {"dp", required_argument, 0, T_DP},
                                         {"fsdp", required_argument, 0, T_FSDP},
                                         {"tp", required_argument, 0, T_TP},
                                         {"pp", required_argument, 0, T_PP},
                                         {"ep", required_argument, 0, T_EP},
                                         {"max-micro", required_argument, 0, T_MICRO},
                                         {"micro", required_argument, 0, T_PMICRO},
                                         {"micro-batch-size", required_argument, 0, T_MBS},
                                         {"vp", required_argument, 0, T_VP},
                                         {"cp", required_argument, 0, T_CP},
                                         {"optimizer", required_argument, 0, T_OPT},
                                         {"master-weights", no_argument, 0, T_MASTER},
                                         {"weight-dtype", required_argument, 0, T_WDT},
                                         {"grad-dtype", required_argument, 0, T_GDT},
                                         {"act-dtype", required_argument, 0, T_ADT},
                                         {"top", required_argument, 0, T_TOP},
                                         {"book", no_argument, 0, T_BOOK},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *model_s = NULL, *preset = NULL, *chip_s = NULL, *slice_s = NULL, *cfile = NULL;
    const char *calspec = "builtin";
    long long chips = 0, top = 5, v;
    int json = 0, c, rc;
    pc_plan_train_opts o = pc_plan_train_opts_default();
    int have_batch = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        switch (c) {
        case T_MODEL: model_s = optarg; break;
        case T_CALIB: calspec = optarg; break;
        case T_PRESET: preset = optarg; break;
        case T_CHIP: chip_s = optarg; break;
        case T_SLICE: slice_s = optarg; break;
        case T_CHIPSFILE: cfile = optarg; break;
        case T_CHIPS: {
            double d;
            if (parse_count(optarg, 0, &d) || d < 1 || d > 1073741824.0 || d != floor(d))
                return pc_cli_usage_error(
                    CMD_TRAIN, "--chips expects a chip count like 8960, got '%s'", optarg);
            chips = (long long)d;
            break;
        }
        case T_BATCH:
            if (parse_count(optarg, 1, &o.batch_tokens) || o.batch_tokens < 1 ||
                o.batch_tokens > 1e15)
                return pc_cli_usage_error(CMD_TRAIN,
                                          "--batch-tokens expects tokens like 4M or 1024x4096, "
                                          "got '%s'",
                                          optarg);
            have_batch = 1;
            break;
        case T_SEQ:
            if (parse_count(optarg, 1, &o.seq) || o.seq < 1 || o.seq > 1e9 || o.seq != floor(o.seq))
                return pc_cli_usage_error(
                    CMD_TRAIN, "--seq expects a length like 4096 or 8k, got '%s'", optarg);
            break;
        case T_TOKENS:
            if (parse_count(optarg, 0, &o.total_tokens) || o.total_tokens > 1e18)
                return pc_cli_usage_error(
                    CMD_TRAIN, "--tokens expects a count like 15T or 1.5e13, got '%s'", optarg);
            break;
        case T_PRICE: {
            char *end;
            o.price_per_hour = strtod(optarg, &end);
            if (*end || !(o.price_per_hour >= 0) || o.price_per_hour > 1e6)
                return pc_cli_usage_error(
                    CMD_TRAIN, "--price-per-chip-hour expects USD >= 0, got '%s'", optarg);
            break;
        }
        case T_EFF: {
            char *end;
            o.efficiency = strtod(optarg, &end);
            if (*end || !(o.efficiency > 0 && o.efficiency <= 1))
                return pc_cli_usage_error(
                    CMD_TRAIN, "--efficiency expects a fraction in (0, 1], got '%s'", optarg);
            break;
        }
        case T_ATTN: {
            int a = pc_attn_flops_parse(optarg);
            if (a < 0)
                return pc_cli_usage_error(CMD_TRAIN,
                                          "--attention '%s' unknown (causal, full, none)", optarg);
            o.attention = (pc_attn_flops)a;
            break;
        }
        case T_REMAT:
            if (parse_remat_list(optarg, &o.remat_mask, &o.remat_tensors))
                return pc_cli_usage_error(CMD_TRAIN,
                                          "--remat '%s': give a list of none, big_matmuls, full, "
                                          "tensors:K, or all",
                                          optarg);
            break;
        case T_ZERO: {
            o.zero_mask = 0;
            for (const char *p = optarg; *p; p++) {
                if (*p >= '1' && *p <= '3')
                    o.zero_mask |= 1u << (*p - '0');
                else if (*p != ',')
                    return pc_cli_usage_error(CMD_TRAIN,
                                              "--zero expects stages like 1,2,3, got '%s'", optarg);
            }
            if (!o.zero_mask)
                return pc_cli_usage_error(CMD_TRAIN, "--zero expects stages like 1,2,3");
            break;
        }
        case T_DP:
        case T_FSDP:
        case T_TP:
        case T_PP:
        case T_EP: {
            static const char *const flag[] = {"--dp", "--fsdp", "--tp", "--pp", "--ep"};
            if (pc_cli_parse_i64(optarg, 1, 1LL << 30, &v))
                return pc_cli_usage_error(CMD_TRAIN, "%s expects an axis size >= 1, got '%s'",
                                          flag[c - T_DP], optarg);
            static const int map[] = {PC_PAR_DP, PC_PAR_FSDP, PC_PAR_TP, PC_PAR_PP, PC_PAR_EP};
            o.fixed[map[c - T_DP]] = v;
            break;
        }
        case T_MICRO:
            if (pc_cli_parse_i64(optarg, 1, 1 << 20, &v))
                return pc_cli_usage_error(CMD_TRAIN, "--max-micro expects a count >= 1, got '%s'",
                                          optarg);
            o.max_micro = v;
            break;
        case T_PMICRO:
        case T_MBS:
        case T_VP:
        case T_CP: {
            static const char *const flag[] = {"--micro", "--micro-batch-size", "--vp", "--cp"};
            static const char *const what[] = {"a micro-batch count", "sequences per micro-batch",
                                               "virtual stages per pipeline stage",
                                               "context-parallel ways"};
            if (pc_cli_parse_i64(optarg, 1, c == T_CP ? 1LL << 30 : 1LL << 20, &v))
                return pc_cli_usage_error(CMD_TRAIN, "%s expects %s >= 1, got '%s'",
                                          flag[c - T_PMICRO], what[c - T_PMICRO], optarg);
            int64_t *dst[] = {&o.micro, &o.micro_batch_size, &o.vp, &o.cp};
            *dst[c - T_PMICRO] = v;
            break;
        }
        case T_OPT:
            if (!strcmp(optarg, "adam") || !strcmp(optarg, "adamw"))
                o.optimizer = PC_OPT_ADAM;
            else if (!strcmp(optarg, "momentum"))
                o.optimizer = PC_OPT_SGD_MOMENTUM;
            else if (!strcmp(optarg, "sgd"))
                o.optimizer = PC_OPT_SGD;
            else
                return pc_cli_usage_error(CMD_TRAIN,
                                          "--optimizer '%s' unknown (adam, momentum, sgd)", optarg);
            break;
        case T_MASTER: o.master_weights = 1; break;
        case T_WDT:
            if ((rc = parse_prec(CMD_TRAIN, "--weight-dtype", optarg, &o.weight_prec)) >= 0)
                return rc;
            break;
        case T_GDT:
            if ((rc = parse_prec(CMD_TRAIN, "--grad-dtype", optarg, &o.grad_prec)) >= 0) return rc;
            break;
        case T_ADT:
            if ((rc = parse_prec(CMD_TRAIN, "--act-dtype", optarg, &o.act_prec)) >= 0) return rc;
            break;
        case T_TOP:
            if (pc_cli_parse_i64(optarg, 1, 100, &top))
                return pc_cli_usage_error(CMD_TRAIN, "--top expects 1..100, got '%s'", optarg);
            break;
        case T_BOOK: o.convention = PC_CONV_BOOK; break;
        case 'j': json = 1; break;
        case 'h': train_help(stdout); return PC_EXIT_OK;
        default:
            return pc_cli_usage_error(CMD_TRAIN, "unknown or incomplete option '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind < argc)
        return pc_cli_usage_error(CMD_TRAIN, "unexpected argument '%s'", argv[optind]);
    int pinned = o.micro > 0 || o.micro_batch_size > 0 || o.vp > 1 || o.cp > 1;
    if (o.vp > 1 && o.fixed[PC_PAR_PP] == 1)
        return pc_cli_usage_error(CMD_TRAIN,
                                  "--vp %lld needs a pipeline: --pp 1 has no stages to interleave",
                                  (long long)o.vp);
    pc_model_cfg m;
    if ((rc = load_model(CMD_TRAIN, model_s, preset, &m)) >= 0) return rc;
    if (!chip_s) return pc_cli_usage_error(CMD_TRAIN, "give --chip (e.g. --chip v5p)");
    if (!have_batch)
        return pc_cli_usage_error(CMD_TRAIN, "give --batch-tokens (e.g. 4M = 1024 x 4096 tokens)");
    pc_calib *cal = NULL;
    pc_error ce;
    pc_error_clear(&ce);
    if (pc_calib_open(calspec, &cal, &ce)) return pc_cli_fail(&ce);
    o.calibration = pc_calib_is_ideal(cal) ? NULL : cal;
    pc_chipdb *db;
    const pc_chip *chip;
    if ((rc = pc_acli_open_chip(CMD_TRAIN, cfile, chip_s, &db, &chip)) >= 0) {
        pc_calib_free(cal);
        return rc;
    }
    pc_mesh slice;
    if ((rc = resolve_slice(CMD_TRAIN, chip, chips, slice_s, &slice)) >= 0) {
        pc_chipdb_free(db);
        pc_calib_free(cal);
        return rc;
    }
    if (o.micro > 0 && o.micro_batch_size > 0) {
        double seqs = o.batch_tokens / o.seq, per = (double)o.micro * (double)o.micro_batch_size;
        if (seqs != floor(seqs) || fmod(seqs, per) != 0) {
            pc_chipdb_free(db);
            pc_calib_free(cal);
            return pc_cli_usage_error(CMD_TRAIN,
                                      "--micro %lld x --micro-batch-size %lld = %.0f sequences "
                                      "per data shard does not divide the batch's %.6g sequences",
                                      (long long)o.micro, (long long)o.micro_batch_size, per,
                                      seqs);
        }
    }
    if (o.batch_tokens < o.seq) {
        pc_chipdb_free(db);
        pc_calib_free(cal);
        return pc_cli_usage_error(CMD_TRAIN,
                                  "--batch-tokens %.0f is less than one %.0f-token sequence; "
                                  "raise it or lower --seq",
                                  o.batch_tokens, o.seq);
    }
    pc_train_plan best[100];
    pc_train_search s;
    pc_error e;
    pc_error_clear(&e);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pc_status st = pc_plan_train(chip, &m, &slice, &o, best, (int)top, &s, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (st) {
        pc_chipdb_free(db);
        pc_calib_free(cal);
        return st == PC_ERR_ARG ? pc_cli_usage_error(CMD_TRAIN, "%s", e.msg) : pc_cli_fail(&e);
    }
    pc_param_counts pcnt;
    pc_model_params(&m, &pcnt);
    char sl[96], a1[64], a2[64], a3[64], a4[64], a5[64], a6[64], t[32];
    mesh_str(&slice, sl, sizeof sl);
    double seqs = o.batch_tokens / o.seq;
    const pc_train_thresholds *th = &s.thr;
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "model", m.name);
        cJSON_AddNumberToObject(j, "params", pcnt.total);
        cJSON_AddStringToObject(j, "chip", chip->name);
        cJSON_AddNumberToObject(j, "chips", (double)s.chips);
        cJSON_AddStringToObject(j, "slice", sl);
        cJSON_AddNumberToObject(j, "batch_tokens", o.batch_tokens);
        cJSON_AddNumberToObject(j, "seq", o.seq);
        cJSON_AddNumberToObject(j, "total_tokens", o.total_tokens);
        cJSON_AddNumberToObject(j, "efficiency", s.efficiency);
        cJSON_AddStringToObject(j, "calibration", pc_calib_origin(cal));
        cJSON_AddNumberToObject(j, "price_per_chip_hour", s.price_per_hour);
        cJSON_AddStringToObject(j, "attention", pc_attn_flops_name(o.attention));
        cJSON_AddStringToObject(j, "convention", pc_coll_conv_name(o.convention));
        cJSON *js = cJSON_AddObjectToObject(j, "search");
        cJSON_AddNumberToObject(js, "layouts", (double)s.layouts);
        cJSON_AddNumberToObject(js, "layouts_not_fitting_model", (double)s.unmapped);
        cJSON_AddNumberToObject(js, "plans_evaluated", (double)s.evaluated);
        cJSON_AddNumberToObject(js, "plans_fitting", (double)s.fitting);
        cJSON_AddNumberToObject(js, "not_priced", (double)s.unpriced);
        if (s.unpriced) cJSON_AddStringToObject(js, "not_priced_reason", s.unpriced_reason);
        cJSON_AddNumberToObject(js, "seconds", secs);
        cJSON *jt = cJSON_AddObjectToObject(j, "thresholds");
        cJSON_AddNumberToObject(jt, "alpha", th->alpha);
        cJSON_AddNumberToObject(jt, "slice_axes", th->slice_axes);
        cJSON_AddNumberToObject(jt, "m_x", th->m_x);
        cJSON_AddNumberToObject(jt, "m_y", th->m_y);
        cJSON_AddNumberToObject(jt, "fsdp_critical_tokens_per_chip", th->fsdp_per_chip);
        cJSON_AddNumberToObject(jt, "fsdp_critical_batch", th->fsdp_pod_batch);
        cJSON_AddNumberToObject(jt, "fsdp_tp_critical_tokens_per_chip", th->mixed_per_chip);
        cJSON_AddNumberToObject(jt, "tp_limit", th->tp_limit);
        cJSON_AddNumberToObject(jt, "fsdp_optimal", th->fsdp_opt);
        cJSON_AddNumberToObject(jt, "dcn_critical_tokens_per_slice", th->dcn_per_slice);
        cJSON_AddNumberToObject(jt, "job_memory", th->job_memory);
        cJSON_AddNumberToObject(jt, "min_chips_by_memory", th->min_chips_memory);
        cJSON *jp = cJSON_AddArrayToObject(j, "plans");
        for (int i = 0; i < s.nbest; i++) {
            cJSON *pj = plan_json(&best[i], o.remat_tensors);
            calibrated_json(pj, &best[i]);
            if (i == 0) {
                char snip[4096];
                jax_snippet(&best[0], &m, seqs, o.remat_tensors, snip, sizeof snip);
                cJSON_AddStringToObject(pj, "jax", snip);
            }
            cJSON_AddItemToArray(jp, pj);
        }
        if (!s.nbest && s.evaluated)
            cJSON_AddItemToObject(j, "least_memory_plan",
                                  plan_json(&s.least_memory, o.remat_tensors));
        char *out = cJSON_Print(j);
        if (out) puts(out);
        free(out);
        cJSON_Delete(j);
        if (s.unpriced)
            fprintf(stderr, "perfcast plan train: %s: %s\n",
                    s.nbest ? "warning: some layouts not priced" : "no plan could be priced",
                    s.unpriced_reason);
        if (!s.nbest && !s.evaluated && pinned)
            fprintf(stderr, "perfcast plan train: no layout of %lld chips fits the model and the "
                            "pins (--micro, --micro-batch-size, --vp, --cp)\n",
                    (long long)s.chips);
        else if (!s.nbest)
            fprintf(stderr, "perfcast plan train: no plan fits in %s of HBM per chip\n",
                    gb(chip->hbm_bytes, a1, sizeof a1));
        pc_chipdb_free(db);
        pc_calib_free(cal);
        return s.nbest ? PC_EXIT_OK : PC_EXIT_FAIL;
    }
    printf("%s (%s params) on %lld %s chip%s: slice %s (%s)\n", m.name,
           pc_acli_count(pcnt.total, a1, sizeof a1), (long long)s.chips, chip->name,
           s.chips == 1 ? "" : "s", sl, wrap_str(chip, &slice));
    if (seqs == floor(seqs))
        printf("batch %s tokens = %s x %.0f", commas(o.batch_tokens, a1, sizeof a1),
               commas(seqs, a2, sizeof a2), o.seq);
    else
        printf("batch %s tokens = %.4g x %.0f", commas(o.batch_tokens, a1, sizeof a1), seqs, o.seq);
    if (o.total_tokens > 0)
        printf("; %s tokens to train", pc_acli_count(o.total_tokens, a4, sizeof a4));
    printf("; attention FLOPs %s; compute at %.2f x %s%s\n", pc_attn_flops_name(o.attention),
           s.efficiency, pc_acli_si(pc_chip_flops(chip, o.act_prec), "FLOP/s", a3, sizeof a3),
           o.convention == PC_CONV_BOOK ? "; book collectives (V/W)" : "");
    printf("searched %s layouts (%s do not fit the model's heads/layers/experts%s%s), %s plans "
           "in %s; %s fit in %s of HBM\n",
           commas((double)s.layouts, a1, sizeof a1), commas((double)s.unmapped, a2, sizeof a2),
           pinned ? " or the pins" : "", s.unpriced ? " or cannot be priced" : "",
           commas((double)s.evaluated, a3, sizeof a3), pc_acli_time(secs, t, sizeof t),
           commas((double)s.fitting, a4, sizeof a4), gb(chip->hbm_bytes, a5, sizeof a5));
    if (s.unpriced && (s.nbest || s.evaluated)) {
        fflush(stdout);
        fprintf(stderr, "perfcast plan train: warning: %s layout%s or plan%s not priced: %s\n",
                commas((double)s.unpriced, a1, sizeof a1), s.unpriced == 1 ? "" : "s",
                s.unpriced == 1 ? "" : "s", s.unpriced_reason);
    }
    if (!s.nbest && !s.evaluated && s.unpriced) {
        fflush(stdout);
        fprintf(stderr, "perfcast plan train: no layout of %lld chips can be priced: %s\n",
                (long long)s.chips, s.unpriced_reason);
        pc_chipdb_free(db);
        pc_calib_free(cal);
        return PC_EXIT_FAIL;
    }
    if (!s.nbest) {
        const pc_train_plan *l = &s.least_memory;
        char lay[160], r[32];
        fflush(stdout);
        fprintf(stderr, "perfcast plan train: no plan fits in %s of HBM per chip.\n",
                gb(chip->hbm_bytes, a1, sizeof a1));
        if (s.evaluated) {
            fprintf(stderr,
                    "  smallest footprint found: %s per chip (%s, remat %s, %lld micro-batch%s): "
                    "weights %s, grads %s, optimizer %s, activations %s, transient %s\n",
                    gb(l->mem_total, a1, sizeof a1), layout_str(l, lay, sizeof lay),
                    remat_str(l->remat, o.remat_tensors, r, sizeof r), (long long)l->micro,
                    l->micro > 1 ? "es" : "", gb(l->mem_weights, a2, sizeof a2),
                    gb(l->mem_grads, a3, sizeof a3), gb(l->mem_opt, a4, sizeof a4),
                    gb(l->mem_act, a5, sizeof a5), gb(l->mem_transient, a6, sizeof a6));
            int fixed = 0;
            for (int x = 0; x < PC_PAR_COUNT; x++) fixed |= o.fixed[x] > 0;
            int sharded = l->axis[PC_PAR_TP] * l->axis[PC_PAR_PP] * l->axis[PC_PAR_EP] > 1 ||
                          (l->axis[PC_PAR_FSDP] > 1 && l->zero >= 1);
            fprintf(stderr, "  to fit, change one of:\n");
            if (fixed)
                fprintf(stderr, "  - drop or change the fixed --dp/--fsdp/--tp/--pp/--ep sizes "
                                "(replicated weights and optimizer state do not shrink with "
                                "more chips)\n");
            if (sharded) {
                double need = ceil((double)s.chips * l->mem_total / chip->hbm_bytes);
                fprintf(stderr,
                        "  - more chips: about %.0f (this layout's sharded state scaled; the "
                        "whole batch at once would need %s = %.0f chips' HBM with remat %s)\n",
                        need, gb(th->job_memory, a1, sizeof a1), ceil(th->min_chips_memory),
                        remat_str(l->remat, o.remat_tensors, r, sizeof r));
            }
            double state = l->mem_weights + l->mem_grads + l->mem_opt;
            if (l->mem_act + l->mem_transient > 0.2 * l->mem_total && state < chip->hbm_bytes)
                fprintf(stderr,
                        "  - a smaller --batch-tokens or --seq: activations and transients take "
                        "%s per chip\n",
                        gb(l->mem_act + l->mem_transient, a1, sizeof a1));
            if (o.remat_mask && !(o.remat_mask & (1u << PC_REMAT_FULL)))
                fprintf(stderr, "  - allow --remat full (save only each layer's input)\n");
            if (o.zero_mask && !(o.zero_mask & (1u << 3)))
                fprintf(stderr, "  - allow --zero 3 (shard weights, gradients and optimizer)\n");
            if (o.max_micro > 0 && o.max_micro < 256)
                fprintf(stderr, "  - allow more micro-batches (--max-micro)\n");
            if (o.optimizer == PC_OPT_ADAM && l->mem_opt > 0.3 * l->mem_total)
                fprintf(stderr, "  - a lighter optimizer (--optimizer momentum: 4 B/param "
                                "instead of Adam's 8)\n");
        } else {
            fprintf(stderr,
                    "  no layout of %lld chips fits the model (tensor must divide the "
                    "heads, stage the layers, expert the experts)%s: change --chips or "
                    "the fixed axes%s\n",
                    (long long)s.chips,
                    pinned ? " and the pins (whole micro-batches of the data shards' sequences; "
                             "--vp needs stage > 1, stage x vp <= layers; --cp must divide the "
                             "data shards)"
                           : "",
                    pinned ? " or the pins (--micro, --micro-batch-size, --vp, --cp)" : "");
        }
        pc_chipdb_free(db);
        pc_calib_free(cal);
        return PC_EXIT_FAIL;
    }
    const pc_train_plan *b = &best[0];
    char lay[160], r[32];
    printf("\nbest: %s, remat %s, %lld micro-batch%s%s", layout_str(b, lay, sizeof lay),
           remat_str(b->remat, o.remat_tensors, r, sizeof r), (long long)b->micro,
           b->micro > 1 ? "es" : "",
           b->axis[PC_PAR_PP] > 1 ? " (pipeline)"
           : b->micro > 1         ? " (gradient accumulation)"
                                  : "");
    if (b->micro_batch_size > 0)
        printf(" of %lld sequence%s", (long long)b->micro_batch_size,
               b->micro_batch_size > 1 ? "s" : "");
    if (b->vp > 1) printf(", interleaved: %lld virtual stages per stage", (long long)b->vp);
    if (b->cp > 1) printf(", context parallel %lld (of the data shards)", (long long)b->cp);
    printf("\n");
    print_parts(b);
    print_calibrated(b, &o);
    if (b->calibrated_step > 0) {
        double k = b->calibrated_step / b->step_time;
        print_rates("calibrated: ", b->calibrated_mfu, b->tokens_per_s / k, b->days * k,
                    b->cost * k, &o, &s, chip);
        print_rates("ideal bound: ", b->mfu, b->tokens_per_s, b->days, b->cost, &o, &s, chip);
    } else {
        print_rates("", b->mfu, b->tokens_per_s, b->days, b->cost, &o, &s, chip);
    }
    printf("  per chip: %.0f tokens of the batch (%s per data shard); memory %s of %s:",
           b->tokens_per_chip, commas(b->tokens_per_shard, a1, sizeof a1),
           gb(b->mem_total, a2, sizeof a2), gb(chip->hbm_bytes, a3, sizeof a3));
    printf(" weights %s, grads %s, optimizer %s,", gb(b->mem_weights, a4, sizeof a4),
           gb(b->mem_grads, a5, sizeof a5), gb(b->mem_opt, a6, sizeof a6));
    printf(" activations %s, transient %s\n", gb(b->mem_act, a1, sizeof a1),
           gb(b->mem_transient, a3, sizeof a3));
    {
        double shards = (double)(b->axis[PC_PAR_DP] * b->axis[PC_PAR_FSDP] * b->axis[PC_PAR_EP]);
        if (b->tokens_per_shard * shards != o.batch_tokens)
            printf("  note: %s tokens do not split evenly over %.0f data shards: each is padded "
                   "to %s tokens (%.2g%% extra work); JAX needs a batch that divides, e.g. %s "
                   "tokens\n",
                   commas(o.batch_tokens, a1, sizeof a1), shards,
                   commas(b->tokens_per_shard, a2, sizeof a2),
                   100 * (b->tokens_per_shard * shards / o.batch_tokens - 1),
                   commas(b->tokens_per_shard * shards, a3, sizeof a3));
    }
    printf("thresholds (scaling_book.md §5, §6):\n");
    const char *link = chip->kind == PC_CHIP_GPU
                           ? (s.chips > chip->nvlink_domain ? "W_node (IB)" : "W_nvlink")
                           : "W_ici";
    printf("  alpha = C/%s = %.0f tokens; pure FSDP over all %lld chips (%d %s) is "
           "compute-bound above %.0f tokens/chip, a %s-token batch; this batch has %.0f/chip\n",
           link, th->alpha, (long long)s.chips, th->slice_axes,
           th->slice_axes == 1 ? "axis" : "axes", th->fsdp_per_chip,
           pc_acli_si(th->fsdp_pod_batch, "", a1, sizeof a1), b->tokens_per_chip);
    printf("  FSDP + TP (M_X=%d, M_Y=%d): above alpha^2/(M_X M_Y F) = %.0f tokens/chip; TP "
           "beyond %.1f-way (M_Y F/alpha) is comms-bound\n",
           th->m_x, th->m_y, th->mixed_per_chip, th->tp_limit);
    printf("  X_opt = sqrt((B/F)(M_X/M_Y) N) = %.0f-way FSDP", th->fsdp_opt);
    if (th->dcn_per_slice > 0)
        printf("; DP over DCN needs %.0f tokens per slice", th->dcn_per_slice);
    printf("\n  the job needs %s (remat %s) = at least %.0f chips' HBM\n",
           gb(th->job_memory, a1, sizeof a1), remat_str(b->remat, o.remat_tensors, r, sizeof r),
           ceil(th->min_chips_memory));
    printf("\ntop %d plans:\n", s.nbest);
    printf("   # stage  data  fsdp ZeRO expert tensor remat       micro  calibrated   ideal   MFU "
           "mem/chip  bottleneck\n");
    for (int i = 0; i < s.nbest; i++) {
        const pc_train_plan *p = &best[i];
        char tc[32];
        printf("%4d %5lld %5lld %5lld %4s %6lld %6lld %-11s %5lld %11s %7s %5.1f%% %8s  %s\n",
               i + 1,
               (long long)p->axis[PC_PAR_PP], (long long)p->axis[PC_PAR_DP],
               (long long)p->axis[PC_PAR_FSDP],
               p->axis[PC_PAR_FSDP] > 1 ? (p->zero == 1   ? "1"
                                           : p->zero == 2 ? "2"
                                                          : "3")
                                        : "-",
               (long long)p->axis[PC_PAR_EP], (long long)p->axis[PC_PAR_TP],
               remat_str(p->remat, o.remat_tensors, r, sizeof r), (long long)p->micro,
               p->calibrated_step > 0 ? pc_acli_time(p->calibrated_step, tc, sizeof tc) : "-",
               pc_acli_time(p->step_time, t, sizeof t),
               100 * (p->calibrated_step > 0 ? p->calibrated_mfu : p->mfu),
               gb(p->mem_total, a1, sizeof a1),
               p->calibrated_step > 0 ? pc_step_part_name((pc_step_part)p->calibrated_bottleneck)
                                      : pc_plan_part_name(p->bottleneck));
    }
    char snip[4096];
    jax_snippet(b, &m, seqs, o.remat_tensors, snip, sizeof snip);
    printf("\nJAX mesh and shardings of the best plan:\n%s", snip);
    pc_chipdb_free(db);
    pc_calib_free(cal);
    return PC_EXIT_OK;
}

/* ---- plan serve: the calibrated continuous-batching block ---- */

/* What plan serve's calibrated block is asked for (docs/analytic.md
 * "Calibrated serving in plan serve"). */
typedef struct serve_cal_req {
    const pc_calib *cal; /* NULL: --calibration none (no block) */
    int64_t chips, tp, replicas, ep;
    int attention_dp;
    double batch;       /* --batch N: sequences per replica; 0: not pinned */
    double concurrency; /* --concurrency N: requests in flight over all replicas; 0: not pinned */
} serve_cal_req;

/* The serving run plan serve's inputs stand for: model parallel over tp
 * chips, chips / tp replicas, prompt P and generated G tokens per request. */
static void serve_cal_run(const serve_cal_req *q, const pc_model_cfg *m, const pc_chip *chip,
                          const pc_serve_opts *o, double P, double G, pc_run *r) {
    pc_run_serve_init(r);
    snprintf(r->id, sizeof r->id, "plan-serve");
    r->model = *m;
    snprintf(r->chip_name, sizeof r->chip_name, "%s", chip->name);
    r->chips = q->chips;
    r->tp = q->tp;
    r->ep = q->ep > 1 ? q->ep : 1;
    r->attention_dp = q->attention_dp;
    r->input_len = P;
    r->output_len = G;
    r->weight_prec = o->weight_prec;
    /* not given: the engine's own KV type (docs/analytic.md) */
    r->kv_prec = o->kv_prec;
    /* matmuls run in the weights' type when the chip has fp8 / fp4 units */
    r->prec = o->weight_prec == PC_PREC_FP8 || o->weight_prec == PC_PREC_FP4 ? o->weight_prec
                                                                            : PC_PREC_BF16;
    r->concurrency = q->concurrency;
}

typedef struct serve_cal_out {
    int ok;
    char why[sizeof(((pc_error *)0)->msg)];
    pc_serve_detail d, ideal;
    int ideal_ok;
    double pinned; /* sequences per replica asked for (0: the throughput-optimal batch) */
} serve_cal_out;

static void serve_cal_eval(const serve_cal_req *q, const pc_run *r, const pc_chip *chip,
                           serve_cal_out *out) {
    memset(out, 0, sizeof *out);
    pc_error e;
    pc_error_clear(&e);
    out->pinned = q->batch > 0 ? q->batch
                  : q->concurrency > 0 ? q->concurrency / (double)q->replicas
                                       : 0;
    if (pc_serve_explain(r, chip, q->cal, q->batch, &out->d, &e) != PC_OK) {
        snprintf(out->why, sizeof out->why, "%s", e.msg);
        return;
    }
    out->ok = isfinite(out->d.tokens_per_s) && out->d.tokens_per_s > 0 &&
              isfinite(out->d.ttft_s) && isfinite(out->d.tpot_s);
    if (!out->ok) snprintf(out->why, sizeof out->why, "no finite throughput for this run");
    /* the ideal bound: the same run with no fitted losses */
    out->ideal_ok = pc_serve_explain(r, chip, NULL, q->batch, &out->ideal, &e) == PC_OK &&
                    isfinite(out->ideal.tokens_per_s);
}

static const char *serve_batch_how(const serve_cal_out *c, char *buf, size_t cap) {
    if (!(c->pinned > 0))
        snprintf(buf, cap, "throughput-optimal that fits");
    else if (c->pinned > c->d.batch)
        snprintf(buf, cap, "pinned at %.6g, capped at the largest that fits", c->pinned);
    else
        snprintf(buf, cap, "pinned");
    return buf;
}

static void serve_cal_print(const serve_cal_req *q, const serve_cal_out *c, const char *origin,
                            const pc_run *r) {
    char a1[48], a2[48], t1[32], t2[32], how[96];
    printf("calibrated (continuous batching; --calibration %s): tp %lld x %lld replica%s, %.0f "
           "prompt + %.0f generated tokens per request\n",
           origin, (long long)q->tp, (long long)q->replicas, q->replicas == 1 ? "" : "s",
           r->input_len, r->output_len);
    if (!c->ok) {
        printf("  not expressible: %s\n", c->why);
        return;
    }
    const pc_serve_detail *d = &c->d;
    printf("  batch %.0f per replica (%s; largest that fits %.0f), KV %s\n", d->batch,
           serve_batch_how(c, how, sizeof how), d->max_batch, pc_prec_name(d->kv_prec));
    printf("  output %s tokens/s (%s per chip), TTFT %s, TPOT %s\n",
           commas(d->tokens_per_s, a1, sizeof a1),
           commas(d->tokens_per_s / (double)q->chips, a2, sizeof a2),
           pc_acli_time(d->ttft_s, t1, sizeof t1), pc_acli_time(d->tpot_s, t2, sizeof t2));
    if (c->ideal_ok)
        printf("  ideal bound: %s tokens/s (%s per chip), TTFT %s, TPOT %s at batch %.0f "
               "(largest that fits %.0f)\n",
               commas(c->ideal.tokens_per_s, a1, sizeof a1),
               commas(c->ideal.tokens_per_s / (double)q->chips, a2, sizeof a2),
               pc_acli_time(c->ideal.ttft_s, t1, sizeof t1),
               pc_acli_time(c->ideal.tpot_s, t2, sizeof t2), c->ideal.batch,
               c->ideal.max_batch);
}

static cJSON *serve_detail_json(const pc_serve_detail *d, int64_t chips) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "batch", d->batch);
    cJSON_AddNumberToObject(o, "max_batch", d->max_batch);
    cJSON_AddNumberToObject(o, "output_tokens_per_s", d->tokens_per_s);
    cJSON_AddNumberToObject(o, "output_tokens_per_s_per_chip", d->tokens_per_s / (double)chips);
    cJSON_AddNumberToObject(o, "ttft_s", d->ttft_s);
    cJSON_AddNumberToObject(o, "tpot_s", d->tpot_s);
    return o;
}

static cJSON *serve_cal_json(const serve_cal_req *q, const serve_cal_out *c, const char *origin) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "calibration", origin);
    cJSON_AddNumberToObject(o, "tp", (double)q->tp);
    cJSON_AddNumberToObject(o, "replicas", (double)q->replicas);
    cJSON_AddNumberToObject(o, "ep", (double)(q->ep > 1 ? q->ep : 1));
    cJSON_AddBoolToObject(o, "attention_dp", q->attention_dp);
    if (!c->ok) {
        cJSON_AddStringToObject(o, "error", c->why);
        return o;
    }
    const pc_serve_detail *d = &c->d;
    cJSON_AddNumberToObject(o, "batch", d->batch);
    cJSON_AddBoolToObject(o, "batch_chosen", !(c->pinned > 0));
    if (c->pinned > 0)
        cJSON_AddNumberToObject(o, "batch_pinned", c->pinned);
    else
        cJSON_AddNullToObject(o, "batch_pinned");
    cJSON_AddNumberToObject(o, "max_batch", d->max_batch);
    cJSON_AddStringToObject(o, "kv_dtype", pc_prec_name(d->kv_prec));
    cJSON_AddNumberToObject(o, "output_tokens_per_s", d->tokens_per_s);
    cJSON_AddNumberToObject(o, "output_tokens_per_s_per_chip", d->tokens_per_s / (double)q->chips);
    cJSON_AddNumberToObject(o, "ttft_s", d->ttft_s);
    cJSON_AddNumberToObject(o, "tpot_s", d->tpot_s);
    cJSON_AddNumberToObject(o, "step_s", d->t_step);
    if (c->ideal_ok)
        cJSON_AddItemToObject(o, "ideal", serve_detail_json(&c->ideal, q->chips));
    else
        cJSON_AddNullToObject(o, "ideal");
    return o;
}

/* The calibrated block of one context: printed, or a "calibrated" object in
 * jc (JSON); nothing but a note under --calibration none. */
static void serve_cal_context(const serve_cal_req *q, const pc_model_cfg *m, const pc_chip *chip,
                              const pc_serve_opts *o, double P, double G, const char *origin,
                              cJSON *jc) {
    if (!q->cal) {
        if (jc)
            cJSON_AddNullToObject(jc, "calibrated");
        else
            printf("(ideal roofline only: --calibration none)\n");
        return;
    }
    pc_run r;
    serve_cal_out c;
    serve_cal_run(q, m, chip, o, P, G, &r);
    serve_cal_eval(q, &r, chip, &c);
    if (jc)
        cJSON_AddItemToObject(jc, "calibrated", serve_cal_json(q, &c, origin));
    else
        serve_cal_print(q, &c, origin, &r);
}

/* One replica's slice: the whole slice, or tp chips cut as
 * pc_plan_slice_for_chips would. Returns -1 or an exit code. */
static int serve_replica_slice(const pc_chip *chip, const pc_mesh *slice, const serve_cal_req *q,
                               pc_mesh *out) {
    if (q->replicas <= 1) {
        *out = *slice;
        return -1;
    }
    pc_error e;
    pc_error_clear(&e);
    if (pc_plan_slice_for_chips(chip, q->tp, out, &e) != PC_OK)
        return pc_cli_usage_error(CMD_SERVE, "a replica of %lld chips: %s", (long long)q->tp,
                                  e.msg);
    return -1;
}

/* tp x replicas = chips (pipeline 1): --tp and --replicas, either or both;
 * default tp = all chips. tp must divide the query heads. Returns -1 or an
 * exit code. */
static int serve_resolve_tp(const pc_model_cfg *m, int64_t chips, long long tp_flag,
                            long long repl_flag, serve_cal_req *q) {
    q->chips = chips;
    if (tp_flag > 0 && repl_flag > 0 && tp_flag * repl_flag != chips)
        return pc_cli_usage_error(CMD_SERVE,
                                  "--tp %lld x --replicas %lld = %lld, but there are %lld chips",
                                  tp_flag, repl_flag, tp_flag * repl_flag, (long long)chips);
    const char *flag = tp_flag > 0 ? "--tp" : "--replicas";
    long long given = tp_flag > 0 ? tp_flag : repl_flag;
    if (given > 0 && chips % given)
        return pc_cli_usage_error(CMD_SERVE, "%s %lld does not divide the %lld chips", flag,
                                  given, (long long)chips);
    q->tp = tp_flag > 0 ? tp_flag : repl_flag > 0 ? chips / repl_flag : chips;
    q->replicas = chips / q->tp;
    /* default (tp = all chips): pc_plan_serve_setup names the valid counts */
    if ((tp_flag > 0 || repl_flag > 0) && m->heads % q->tp)
        return pc_cli_usage_error(CMD_SERVE,
                                  "tensor parallel %lld (%s) must divide the %lld query heads "
                                  "of %s; use --replicas R with chips / R dividing them",
                                  (long long)q->tp,
                                  tp_flag > 0 ? "--tp" : repl_flag > 0 ? "chips / --replicas"
                                                                      : "all chips",
                                  (long long)m->heads, m->name);
    if (q->ep > 1 && (m->experts <= 0 || m->experts % q->ep))
        return pc_cli_usage_error(CMD_SERVE,
                                  "--ep %lld: expert parallelism needs a MoE model whose experts "
                                  "it divides (%s has %lld)",
                                  (long long)q->ep, m->name, (long long)m->experts);
    return -1;
}

/* ---------------- plan serve ---------------- */

static const char *bound_str(const pc_serve_point *p, int decode) {
    if (decode && p->dec_kv_bound) return "KV load";
    pc_bound b = decode ? p->dec_bound : p->pre_bound;
    if (b == PC_BOUND_MEMORY) return decode ? "weights" : "HBM";
    return b == PC_BOUND_COMPUTE ? "compute" : "comm";
}

static cJSON *point_json(const pc_serve_point *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "batch", p->batch);
    cJSON_AddBoolToObject(o, "fits", p->fits);
    cJSON_AddNumberToObject(o, "mem_per_chip", p->mem_total);
    cJSON_AddNumberToObject(o, "kv_per_chip", p->mem_kv);
    cJSON_AddNumberToObject(o, "kv_bytes", p->kv_bytes);
    cJSON_AddNumberToObject(o, "tp_limit_decode", p->tp_limit_decode);
    cJSON *d = cJSON_AddObjectToObject(o, "decode");
    cJSON_AddNumberToObject(d, "step", p->dec_step);
    cJSON_AddNumberToObject(d, "kv_load", p->dec_kv);
    cJSON_AddNumberToObject(d, "weight_load", p->dec_weights);
    cJSON_AddNumberToObject(d, "math", p->dec_math);
    cJSON_AddNumberToObject(d, "comm", p->dec_comm);
    cJSON_AddStringToObject(d, "bound", bound_str(p, 1));
    cJSON_AddNumberToObject(d, "tokens_per_s", p->dec_tok_s);
    cJSON_AddNumberToObject(d, "tokens_per_s_per_chip", p->dec_tok_s_chip);
    cJSON_AddNumberToObject(d, "qps_per_chip", p->qps_per_chip);
    cJSON_AddNumberToObject(d, "usd_per_mtok", p->cost_per_mtok_decode);
    cJSON *f = cJSON_AddObjectToObject(o, "prefill");
    cJSON_AddNumberToObject(f, "time", p->pre_time);
    cJSON_AddNumberToObject(f, "math", p->pre_math);
    cJSON_AddNumberToObject(f, "hbm", p->pre_hbm);
    cJSON_AddNumberToObject(f, "comm", p->pre_comm);
    cJSON_AddStringToObject(f, "bound", bound_str(p, 0));
    cJSON_AddNumberToObject(f, "tokens_per_s", p->pre_tok_s);
    cJSON_AddNumberToObject(f, "usd_per_mtok", p->cost_per_mtok_prefill);
    return o;
}

static int serve_contexts(const pc_chip *chip, const pc_model_cfg *mp, const pc_mesh *fslice,
                          const pc_mesh *rslice, pc_serve_opts *op, const serve_cal_req *q,
                          const char *origin, const double *ctxs, int nctx, double batch,
                          int json);

static int plan_serve(int argc, char **argv) {
    static const struct option opts[] = {{"model", required_argument, 0, T_MODEL},
                                         {"preset", required_argument, 0, T_PRESET},
                                         {"chip", required_argument, 0, T_CHIP},
                                         {"chips", required_argument, 0, T_CHIPS},
                                         {"slice", required_argument, 0, T_SLICE},
                                         {"chips-file", required_argument, 0, T_CHIPSFILE},
                                         {"context", required_argument, 0, T_CONTEXT},
                                         {"batch", required_argument, 0, T_SBATCH},
                                         {"prefill-tokens", required_argument, 0, T_PREFILL},
                                         {"decode-tokens", required_argument, 0, T_DECODE},
                                         {"weight-dtype", required_argument, 0, T_WDT},
                                         {"kv-dtype", required_argument, 0, T_KVDT},
                                         {"efficiency", required_argument, 0, T_EFF},
                                         {"price-per-chip-hour", required_argument, 0, T_PRICE},
                                         {"attention", required_argument, 0, T_ATTN},
                                         {"book", no_argument, 0, T_BOOK},
                                         {"calibration", required_argument, 0, T_CALIB},
                                         {"concurrency", required_argument, 0, T_CONC},
                                         {"replicas", required_argument, 0, T_REPL},
                                         {"tp", required_argument, 0, T_TP},
                                         {"ep", required_argument, 0, T_EP},
                                         {"attention-dp", no_argument, 0, T_ADP},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *model_s = NULL, *preset = NULL, *chip_s = NULL, *slice_s = NULL, *cfile = NULL;
    const char *ctx_s = NULL, *calspec = "builtin";
    long long chips = 0, tp_flag = 0, repl_flag = 0, lv;
    double batch = 0; /* 0: sweep */
    serve_cal_req q;
    memset(&q, 0, sizeof q);
    int json = 0, c, rc;
    pc_serve_opts o = pc_serve_opts_default();
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        switch (c) {
        case T_MODEL: model_s = optarg; break;
        case T_PRESET: preset = optarg; break;
        case T_CHIP: chip_s = optarg; break;
        case T_SLICE: slice_s = optarg; break;
        case T_CHIPSFILE: cfile = optarg; break;
        case T_CONTEXT: ctx_s = optarg; break;
        case T_CHIPS: {
            double d;
            if (parse_count(optarg, 0, &d) || d < 1 || d > 1073741824.0 || d != floor(d))
                return pc_cli_usage_error(CMD_SERVE,
                                          "--chips expects a chip count like 8, got '%s'", optarg);
            chips = (long long)d;
            break;
        }
        case T_SBATCH:
            if (!strcmp(optarg, "sweep")) {
                batch = 0;
                break;
            }
            if (parse_count(optarg, 0, &batch) || batch < 1 || batch > 1e9 || batch != floor(batch))
                return pc_cli_usage_error(
                    CMD_SERVE, "--batch expects a whole number >= 1 or 'sweep', got '%s'", optarg);
            break;
        case T_PREFILL:
        case T_DECODE: {
            double d;
            if (parse_count(optarg, 1, &d) || d < 1 || d > 1e9 || d != floor(d))
                return pc_cli_usage_error(CMD_SERVE, "%s expects a token count >= 1, got '%s'",
                                          c == T_PREFILL ? "--prefill-tokens" : "--decode-tokens",
                                          optarg);
            if (c == T_PREFILL)
                o.prefill_tokens = d;
            else
                o.decode_tokens = d;
            break;
        }
        case T_WDT:
            if ((rc = parse_prec(CMD_SERVE, "--weight-dtype", optarg, &o.weight_prec)) >= 0)
                return rc;
            break;
        case T_KVDT:
            if ((rc = parse_prec(CMD_SERVE, "--kv-dtype", optarg, &o.kv_prec)) >= 0) return rc;
            break;
        case T_EFF: {
            char *end;
            o.efficiency = strtod(optarg, &end);
            if (*end || !(o.efficiency > 0 && o.efficiency <= 1))
                return pc_cli_usage_error(
                    CMD_SERVE, "--efficiency expects a fraction in (0, 1], got '%s'", optarg);
            break;
        }
        case T_PRICE: {
            char *end;
            o.price_per_hour = strtod(optarg, &end);
            if (*end || !(o.price_per_hour >= 0) || o.price_per_hour > 1e6)
                return pc_cli_usage_error(
                    CMD_SERVE, "--price-per-chip-hour expects USD >= 0, got '%s'", optarg);
            break;
        }
        case T_ATTN: {
            int a = pc_attn_flops_parse(optarg);
            if (a < 0)
                return pc_cli_usage_error(CMD_SERVE,
                                          "--attention '%s' unknown (causal, full, none)", optarg);
            o.attention = (pc_attn_flops)a;
            break;
        }
        case T_BOOK: o.convention = PC_CONV_BOOK; break;
        case T_CALIB: calspec = optarg; break;
        case T_CONC:
            if (parse_count(optarg, 0, &q.concurrency) || q.concurrency < 1 ||
                q.concurrency > 1e9 || q.concurrency != floor(q.concurrency))
                return pc_cli_usage_error(
                    CMD_SERVE, "--concurrency expects requests in flight >= 1, got '%s'", optarg);
            break;
        case T_REPL:
        case T_TP:
        case T_EP: {
            static const char *const flag[] = {"--replicas", "--tp", "--ep"};
            int k = c == T_REPL ? 0 : c == T_TP ? 1 : 2;
            if (pc_cli_parse_i64(optarg, 1, 1LL << 30, &lv))
                return pc_cli_usage_error(CMD_SERVE, "%s expects a count >= 1, got '%s'", flag[k],
                                          optarg);
            if (k == 0) repl_flag = lv;
            else if (k == 1) tp_flag = lv;
            else q.ep = lv;
            break;
        }
        case T_ADP: q.attention_dp = 1; break;
        case 'j': json = 1; break;
        case 'h': serve_help(stdout); return PC_EXIT_OK;
        default:
            return pc_cli_usage_error(CMD_SERVE, "unknown or incomplete option '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind < argc)
        return pc_cli_usage_error(CMD_SERVE, "unexpected argument '%s'", argv[optind]);
    pc_model_cfg m;
    if ((rc = load_model(CMD_SERVE, model_s, preset, &m)) >= 0) return rc;
    if (!chip_s) return pc_cli_usage_error(CMD_SERVE, "give --chip (e.g. --chip v5e)");
    if (!ctx_s) return pc_cli_usage_error(CMD_SERVE, "give --context (e.g. --context 8192)");
    double ctxs[16];
    int nctx = 0;
    {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", ctx_s);
        char *save = NULL;
        for (char *tk = strtok_r(buf, ",", &save); tk; tk = strtok_r(NULL, ",", &save)) {
            double d;
            if (nctx == 16 || parse_count(tk, 1, &d) || d < 1 || d > 1e9 || d != floor(d))
                return pc_cli_usage_error(CMD_SERVE,
                                          "--context expects up to 16 lengths like 8192 or "
                                          "2k,8k,32k, got '%s'",
                                          ctx_s);
            ctxs[nctx++] = d;
        }
        if (!nctx) return pc_cli_usage_error(CMD_SERVE, "--context is empty");
    }
    pc_chipdb *db;
    const pc_chip *chip;
    if ((rc = pc_acli_open_chip(CMD_SERVE, cfile, chip_s, &db, &chip)) >= 0) return rc;
    pc_mesh slice, rslice;
    if ((rc = resolve_slice(CMD_SERVE, chip, chips, slice_s, &slice)) >= 0 ||
        (rc = serve_resolve_tp(&m, pc_mesh_devices(&slice), tp_flag, repl_flag, &q)) >= 0 ||
        (rc = serve_replica_slice(chip, &slice, &q, &rslice)) >= 0) {
        pc_chipdb_free(db);
        return rc;
    }
    pc_error e;
    pc_error_clear(&e);
    pc_calib *cal = NULL;
    if (pc_calib_open(calspec, &cal, &e)) {
        pc_chipdb_free(db);
        return pc_cli_fail(&e);
    }
    q.cal = pc_calib_is_ideal(cal) ? NULL : cal;
    q.batch = batch; /* --batch N pins the calibrated batch per replica too */
    int rc_loop = serve_contexts(chip, &m, &slice, &rslice, &o, &q, pc_calib_origin(cal), ctxs,
                                 nctx, batch, json);
    pc_calib_free(cal);
    pc_chipdb_free(db);
    return rc_loop;
}

/* The tables and calibrated blocks of every context; returns the exit code. */
static int serve_contexts(const pc_chip *chip, const pc_model_cfg *mp, const pc_mesh *fslice,
                          const pc_mesh *rslice, pc_serve_opts *op, const serve_cal_req *q,
                          const char *origin, const double *ctxs, int nctx, double batch,
                          int json) {
    const pc_model_cfg m = *mp;
    pc_serve_opts o = *op;
    const pc_mesh slice = *rslice; /* one replica: the book's tables */
    pc_error e;
    pc_error_clear(&e);
    char sl[96], fsl[96], a1[64], a2[64], a3[64], a4[64], t1[32], t2[32];
    mesh_str(&slice, sl, sizeof sl);
    mesh_str(fslice, fsl, sizeof fsl);
    pc_prec kvp = o.kv_prec == PC_PREC_COUNT ? o.weight_prec : o.kv_prec;
    cJSON *jroot = json ? cJSON_CreateObject() : NULL;
    cJSON *jctx = NULL;
    if (jroot) {
        cJSON_AddStringToObject(jroot, "model", m.name);
        cJSON_AddStringToObject(jroot, "chip", chip->name);
        cJSON_AddStringToObject(jroot, "slice", fsl);
        cJSON_AddStringToObject(jroot, "replica_slice", sl);
        cJSON_AddNumberToObject(jroot, "tp", (double)q->tp);
        cJSON_AddNumberToObject(jroot, "replicas", (double)q->replicas);
        cJSON_AddStringToObject(jroot, "calibration", origin);
        cJSON_AddStringToObject(jroot, "weight_dtype", pc_prec_name(o.weight_prec));
        cJSON_AddStringToObject(jroot, "kv_dtype", pc_prec_name(kvp));
        cJSON_AddStringToObject(jroot, "attention", pc_attn_flops_name(o.attention));
        cJSON_AddStringToObject(jroot, "convention", pc_coll_conv_name(o.convention));
        jctx = cJSON_AddArrayToObject(jroot, "contexts");
    }
    int status = PC_EXIT_OK;
    for (int ci = 0; ci < nctx; ci++) {
        o.context = ctxs[ci];
        pc_serve_summary s;
        pc_status st = pc_plan_serve_setup(chip, &m, &slice, &o, &s, &e);
        if (st) {
            cJSON_Delete(jroot);
            if (st == PC_ERR_INVALID && q->replicas == 1)
                return pc_cli_usage_error(CMD_SERVE,
                                          "%s; or split the chips into replicas (--replicas R: "
                                          "chips / R must divide the heads)",
                                          e.msg);
            return st == PC_ERR_INVALID || st == PC_ERR_ARG
                       ? pc_cli_usage_error(CMD_SERVE, "%s", e.msg)
                       : pc_cli_fail(&e);
        }
        double P = o.prefill_tokens > 0 ? o.prefill_tokens : o.context;
        double G = o.decode_tokens > 0 ? o.decode_tokens : 512;
        if (!json && ci == 0) {
            printf("%s on %lld %s chip%s (slice %s), %lld-way model parallel: weights %s (%s), "
                   "%s per chip of %s\n",
                   m.name, (long long)s.chips, chip->name, s.chips == 1 ? "" : "s", sl,
                   (long long)s.chips, gb(s.weight_bytes, a1, sizeof a1),
                   pc_prec_name(o.weight_prec), gb(s.weight_bytes / (double)s.chips, a2, sizeof a2),
                   gb(chip->hbm_bytes, a3, sizeof a3));
            printf("KV cache %s bytes/token (%s), split over %lld KV head group%s%s; weights "
                   "alone need >= %lld chips",
                   commas(s.kv_bytes_per_token, a1, sizeof a1), pc_prec_name(kvp),
                   (long long)s.kv_head_shards, s.kv_head_shards > 1 ? "s" : "",
                   s.chips > s.kv_head_shards ? " then over the batch" : "",
                   (long long)s.min_chips_weights);
            if (s.min_chips_valid > s.min_chips_weights)
                printf(" (%lld for a valid model-parallel degree)", (long long)s.min_chips_valid);
            printf("\n");
            printf("model-parallel limits: TP comms exceed compute beyond %.0f-way in prefill "
                   "(M_Y F W_ici/C)",
                   s.tp_limit_prefill);
            if (s.max_batch > 0)
                printf(", beyond %.0f-way in decode at batch %lld (M_Y F/(B beta))",
                       s.tp_limit_decode, (long long)s.max_batch);
            printf("\n");
            if (s.moe_batch > 0)
                printf("MoE: the experts are compute-bound above a decode batch of B_crit E/k = "
                       "%.0f tokens (%lld experts, %lld per token)\n",
                       s.moe_batch, (long long)m.experts, (long long)m.experts_per_token);
            printf("prefill %.0f tokens/request, %.0f generated tokens/request (QPS), "
                   "efficiency %.2f",
                   P, G, s.efficiency);
            if (s.price_per_hour > 0) printf(", $%.2f/chip-hour", s.price_per_hour);
            if (o.convention == PC_CONV_BOOK)
                printf("; book convention: collectives V/W, no decode TP AllReduces");
            printf("\n");
            if (q->replicas > 1)
                printf("data parallel: %lld replicas of %lld-way tensor parallel over the %lld "
                       "chips (slice %s); the tables are per replica\n",
                       (long long)q->replicas, (long long)q->tp, (long long)q->chips, fsl);
        }
        cJSON *jc = NULL;
        if (jroot) {
            jc = cJSON_CreateObject();
            cJSON_AddNumberToObject(jc, "context", o.context);
            cJSON_AddNumberToObject(jc, "prefill_tokens", P);
            cJSON_AddNumberToObject(jc, "decode_tokens", G);
            cJSON_AddNumberToObject(jc, "chips", (double)s.chips);
            cJSON_AddNumberToObject(jc, "kv_head_shards", (double)s.kv_head_shards);
            cJSON_AddNumberToObject(jc, "weight_bytes", s.weight_bytes);
            cJSON_AddNumberToObject(jc, "kv_bytes_per_token", s.kv_bytes_per_token);
            cJSON_AddNumberToObject(jc, "kv_bytes_per_seq", s.kv_bytes_per_seq);
            cJSON_AddNumberToObject(jc, "hbm_total", s.hbm_total);
            cJSON_AddNumberToObject(jc, "max_batch", (double)s.max_batch);
            cJSON_AddNumberToObject(jc, "min_chips_for_weights", (double)s.min_chips_weights);
            cJSON_AddNumberToObject(jc, "min_chips_valid", (double)s.min_chips_valid);
            cJSON_AddNumberToObject(jc, "tp_limit_prefill", s.tp_limit_prefill);
            cJSON_AddNumberToObject(jc, "tp_limit_decode", s.tp_limit_decode);
            cJSON_AddNumberToObject(jc, "moe_critical_batch", s.moe_batch);
            cJSON_AddNumberToObject(jc, "efficiency", s.efficiency);
            cJSON_AddNumberToObject(jc, "price_per_chip_hour", s.price_per_hour);
            cJSON_AddItemToArray(jctx, jc);
        }
        if (s.max_batch < 1) {
            fflush(stdout);
            fprintf(stderr,
                    "perfcast plan serve: the weights (%s, %s per chip) do not fit in %s of HBM "
                    "per chip; use at least %lld chips (%lld for a valid model-parallel "
                    "degree: it must divide the %lld heads), or smaller weights (--weight-dtype "
                    "int8 / int4)\n",
                    gb(s.weight_bytes, a1, sizeof a1),
                    gb(s.weight_bytes / (double)s.chips, a2, sizeof a2),
                    gb(chip->hbm_bytes, a3, sizeof a3), (long long)s.min_chips_weights,
                    (long long)s.min_chips_valid, (long long)m.heads);
            status = PC_EXIT_FAIL;
            serve_cal_context(q, &m, chip, &o, P, G, origin, jc);
            continue;
        }
        if (!json)
            printf("\ncontext %.0f: KV %s per sequence; HBM %s: largest batch %lld\n", o.context,
                   gb(s.kv_bytes_per_seq, a1, sizeof a1), gb(s.hbm_total, a2, sizeof a2),
                   (long long)s.max_batch);
        double bl[64];
        int nb = 0;
        if (batch > 0) {
            bl[nb++] = batch;
        } else {
            for (double b = 1; b < (double)s.max_batch && nb < 62; b *= 2) bl[nb++] = b;
            bl[nb++] = (double)s.max_batch;
        }
        if (!json)
            printf("  batch   KV/chip  mem/chip  decode step  bound     tokens/s  tok/s/chip  "
                   "QPS/chip  $/Mtok   prefill  bound    $/Mtok  TP lim\n");
        cJSON *jrows = jc ? cJSON_AddArrayToObject(jc, "batches") : NULL;
        for (int i = 0; i < nb; i++) {
            pc_serve_point p;
            if (pc_plan_serve_eval(chip, &m, &slice, &o, bl[i], &p, &e) != PC_OK) {
                cJSON_Delete(jroot);
                return pc_cli_fail(&e);
            }
            if (jrows) cJSON_AddItemToArray(jrows, point_json(&p));
            if (!p.fits) status = PC_EXIT_FAIL;
            if (json) continue;
            char c1[24] = "-", c2[24] = "-";
            if (p.cost_per_mtok_decode > 0) snprintf(c1, sizeof c1, "%.3g", p.cost_per_mtok_decode);
            if (p.cost_per_mtok_prefill > 0)
                snprintf(c2, sizeof c2, "%.3g", p.cost_per_mtok_prefill);
            printf("%7.0f %9s %9s %12s  %-8s %9.4g %11.4g %9.3g %7s %9s  %-7s %7s %7.0f%s\n",
                   p.batch, gb(p.mem_kv, a1, sizeof a1), gb(p.mem_total, a4, sizeof a4),
                   pc_acli_time(p.dec_step, t1, sizeof t1), bound_str(&p, 1), p.dec_tok_s,
                   p.dec_tok_s_chip, p.qps_per_chip, c1, pc_acli_time(p.pre_time, t2, sizeof t2),
                   bound_str(&p, 0), c2, p.tp_limit_decode, p.fits ? "" : "  does not fit");
        }
        if (!json && batch > (double)s.max_batch) {
            fflush(stdout);
            fprintf(stderr,
                    "perfcast plan serve: batch %.0f does not fit at context %.0f: the largest "
                    "that fits is %lld (more chips, int8 KV cache, or a shorter context)\n",
                    batch, o.context, (long long)s.max_batch);
        }
        serve_cal_context(q, &m, chip, &o, P, G, origin, jc);
    }
    if (jroot) {
        char *out = cJSON_Print(jroot);
        if (out) puts(out);
        free(out);
        cJSON_Delete(jroot);
    }
    return status;
}

int pc_cmd_plan(int argc, char **argv) {
    if (argc < 2) {
        plan_help(stderr);
        return PC_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        plan_help(stdout);
        return PC_EXIT_OK;
    }
    if (!strcmp(sub, "train")) return plan_train(argc - 1, argv + 1);
    if (!strcmp(sub, "serve")) return plan_serve(argc - 1, argv + 1);
    return pc_cli_usage_error("plan", "unknown subcommand '%s' (train, serve)", sub);
}
