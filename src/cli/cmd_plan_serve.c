/* perfcast plan serve: serving tables after the book and the calibrated
 * continuous-batching model (issue #6). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_cli.h"
#include "perfcast/query.h"
#include "plots.h"

#define CMD_SERVE PC_PCLI_SERVE

static void serve_help(FILE *f) {
    fprintf(
        f, "usage: perfcast plan serve (--config CONFIG.json|PRESET | --preset NAME) --chip NAME\n"
           "                           (--chips N | --slice AxB) --context S[,S2,...]\n"
           "                           [--batch N|sweep] [--prefill-tokens P] [--decode-tokens G]\n"
           "                           [--weight-dtype P] [--kv-dtype P] [--efficiency E]\n"
           "                           [--replicas R | --tp N] [--ep N] [--attention-dp]\n"
           "                           [--concurrency N] [--calibration builtin|none|FILE]\n"
           "                           [--price-per-chip-hour X] [--chips-file F] [--json]\n"
           "                           [--svg OUT.svg]\n\n"
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
           "  --context S        KV-cache length per sequence (8Ki = 8192, 8k = 8000); a list gives\n"
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
           "                     'perfcast calibrate'\n"
           "  --svg OUT.svg      decode latency (time per output token) against throughput\n"
           "                     per chip over the batch sizes, a curve per context, the\n"
           "                     batch where the KV cache outgrows the weights marked\n\n"
           "Exit status: 0 ok, 1 the weights (or the requested batch) do not fit, 2 bad usage.\n");
}

/* What plan serve's calibrated block is asked for beyond the layout (docs/analytic.md
 * "Calibrated serving in plan serve"). */
typedef struct serve_cal_req {
    int64_t ep;
    int attention_dp;
    double concurrency; /* --concurrency N: requests in flight over all replicas; 0: not pinned */
} serve_cal_req;

/* ---------------- options ---------------- */

/* What the command line asks plan serve for. */
typedef struct serve_args {
    const char *model, *preset, *chip, *slice, *chips_file, *calibration, *svg;
    double ctxs[16]; /* --context */
    int nctx;
    long long chips, tp, replicas; /* --tp, --replicas: 0 when not given */
    double batch;                  /* --batch N per replica; 0: sweep */
    int json;
    serve_cal_req q; /* --ep, --attention-dp, --concurrency */
    pc_serve_opts o;
    struct serve_plot *plot; /* --svg: the curves gathered */
} serve_args;

/* --svg: a curve per context, gathered while the tables are made. */
typedef struct serve_plot {
    pc_plot_serve_ctx c[16];
    int n;
} serve_plot;

static const struct option serve_opts[] = {{"config", required_argument, 0, PC_PO_CONFIG},
                                           {"model", required_argument, 0, PC_PO_MODEL},
                                           {"preset", required_argument, 0, PC_PO_PRESET},
                                           {"chip", required_argument, 0, PC_PO_CHIP},
                                           {"chips", required_argument, 0, PC_PO_CHIPS},
                                           {"slice", required_argument, 0, PC_PO_SLICE},
                                           {"chips-file", required_argument, 0, PC_PO_CHIPSFILE},
                                           {"context", required_argument, 0, PC_PO_CONTEXT},
                                           {"batch", required_argument, 0, PC_PO_SBATCH},
                                           {"prefill-tokens", required_argument, 0, PC_PO_PREFILL},
                                           {"decode-tokens", required_argument, 0, PC_PO_DECODE},
                                           {"weight-dtype", required_argument, 0, PC_PO_WDT},
                                           {"kv-dtype", required_argument, 0, PC_PO_KVDT},
                                           {"efficiency", required_argument, 0, PC_PO_EFF},
                                           {"price-per-chip-hour", required_argument, 0,
                                            PC_PO_PRICE},
                                           {"attention", required_argument, 0, PC_PO_ATTN},
                                           {"book", no_argument, 0, PC_PO_BOOK},
                                           {"calibration", required_argument, 0, PC_PO_CALIB},
                                           {"concurrency", required_argument, 0, PC_PO_CONC},
                                           {"replicas", required_argument, 0, PC_PO_REPL},
                                           {"tp", required_argument, 0, PC_PO_TP},
                                           {"ep", required_argument, 0, PC_PO_EP},
                                           {"attention-dp", no_argument, 0, PC_PO_ADP},
                                           {"json", no_argument, 0, 'j'},
                                           {"svg", required_argument, 0, PC_PO_SVG},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};

/* --batch N|sweep */
static int parse_batch(const char *v, double *batch) {
    if (!strcmp(v, "sweep")) {
        *batch = 0;
        return -1;
    }
    if (pc_pcli_parse_count(v, batch) || *batch < 1 || *batch > 1e9 || *batch != floor(*batch))
        return pc_cli_usage_error(
            CMD_SERVE, "--batch expects a whole number >= 1 or 'sweep', got '%s'", v);
    return -1;
}

/* --prefill-tokens P, --decode-tokens G (pc_pcli_parse_count) */
static int serve_tokens_opt(serve_args *a, int c, const char *v) {
    double d;
    if (pc_pcli_parse_count(v, &d) || d < 1 || d > 1e9 || d != floor(d))
        return pc_cli_usage_error(CMD_SERVE, "%s expects a token count >= 1, got '%s'",
                                  c == PC_PO_PREFILL ? "--prefill-tokens" : "--decode-tokens", v);
    if (c == PC_PO_PREFILL)
        a->o.prefill_tokens = d;
    else
        a->o.decode_tokens = d;
    return -1;
}

/* --replicas R, --tp N, --ep N */
static int serve_ways_opt(serve_args *a, int c, const char *v) {
    static const char *const flag[] = {"--replicas", "--tp", "--ep"};
    int k = c == PC_PO_REPL ? 0 : c == PC_PO_TP ? 1 : 2;
    long long n;
    if (pc_cli_parse_i64(v, 1, 1LL << 30, &n))
        return pc_cli_usage_error(CMD_SERVE, "%s expects a count >= 1, got '%s'", flag[k], v);
    if (k == 0)
        a->replicas = n;
    else if (k == 1)
        a->tp = n;
    else
        a->q.ep = n;
    return -1;
}

/* --concurrency N: requests in flight over all replicas */
static int parse_concurrency(const char *v, double *out) {
    if (pc_pcli_parse_count(v, out) || *out < 1 || *out > 1e9 || *out != floor(*out))
        return pc_cli_usage_error(
            CMD_SERVE, "--concurrency expects requests in flight >= 1, got '%s'", v);
    return -1;
}

/* --context S[,S2,...]: up to 16 lengths (pc_pcli_parse_count). Returns -1 or an exit code. */
static int parse_contexts(const char *ctx_s, double *ctxs, int *nctx) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", ctx_s);
    char *save = NULL;
    *nctx = 0;
    for (char *tk = strtok_r(buf, ",", &save); tk; tk = strtok_r(NULL, ",", &save)) {
        double d;
        if (*nctx == 16 || pc_pcli_parse_count(tk, &d) || d < 1 || d > 1e9 || d != floor(d))
            return pc_cli_usage_error(CMD_SERVE,
                                      "--context expects up to 16 lengths like 8192 or "
                                      "2Ki,8Ki,32Ki, got '%s'",
                                      ctx_s);
        ctxs[(*nctx)++] = d;
    }
    if (!*nctx) return pc_cli_usage_error(CMD_SERVE, "--context is empty");
    return -1;
}

/* One option; -1 to go on, else the exit code (0 after --help). */
static int serve_opt(serve_args *a, int c, const char *v, char **argv) {
    pc_serve_opts *o = &a->o;
    switch (c) {
    case PC_PO_MODEL:
        pc_cli_deprecated(CMD_SERVE, "--model CONFIG", "--config CONFIG");
        a->model = v;
        return -1;
    case PC_PO_CONFIG: a->model = v; return -1;
    case PC_PO_PRESET: a->preset = v; return -1;
    case PC_PO_CHIP: a->chip = v; return -1;
    case PC_PO_SLICE: a->slice = v; return -1;
    case PC_PO_CHIPSFILE: a->chips_file = v; return -1;
    case PC_PO_CONTEXT: return parse_contexts(v, a->ctxs, &a->nctx);
    case PC_PO_CHIPS: return pc_pcli_parse_chips(CMD_SERVE, v, "8", &a->chips);
    case PC_PO_SBATCH: return parse_batch(v, &a->batch);
    case PC_PO_PREFILL:
    case PC_PO_DECODE: return serve_tokens_opt(a, c, v);
    case PC_PO_WDT: return pc_pcli_parse_prec(CMD_SERVE, "--weight-dtype", v, &o->weight_prec);
    case PC_PO_KVDT: return pc_pcli_parse_prec(CMD_SERVE, "--kv-dtype", v, &o->kv_prec);
    case PC_PO_EFF: return pc_pcli_parse_efficiency(CMD_SERVE, v, &o->efficiency);
    case PC_PO_PRICE: return pc_pcli_parse_price(CMD_SERVE, v, &o->price_per_hour);
    case PC_PO_ATTN: return pc_pcli_parse_attention(CMD_SERVE, v, &o->attention);
    case PC_PO_BOOK: o->convention = PC_CONV_BOOK; return -1;
    case PC_PO_CALIB: a->calibration = v; return -1;
    case PC_PO_CONC: return parse_concurrency(v, &a->q.concurrency);
    case PC_PO_REPL:
    case PC_PO_TP:
    case PC_PO_EP: return serve_ways_opt(a, c, v);
    case PC_PO_ADP: a->q.attention_dp = 1; return -1;
    case 'j': a->json = 1; return -1;
    case PC_PO_SVG: a->svg = v; return -1;
    case 'h': serve_help(stdout); return PC_EXIT_OK;
    default:
        return pc_cli_usage_error(CMD_SERVE, "unknown or incomplete option '%s'",
                                  argv[optind - 1]);
    }
}

/* Fills a from the command line; -1 to go on, else the exit code. */
static int serve_parse(int argc, char **argv, serve_args *a) {
    memset(a, 0, sizeof *a);
    a->calibration = "builtin";
    a->o = pc_serve_opts_default();
    optind = 1;
    opterr = 0;
    int c, rc;
    while ((c = pc_cli_getopt(argc, argv, "jh", serve_opts, NULL)) != -1)
        if ((rc = serve_opt(a, c, optarg, argv)) >= 0) return rc;
    if (optind < argc)
        return pc_cli_usage_error(CMD_SERVE, "unexpected argument '%s'", argv[optind]);
    if (a->svg) {
        const char *in[3] = {a->model, a->chips_file, a->calibration};
        if ((rc = pc_cli_check_not_input(CMD_SERVE, "--svg", a->svg, in, 3)) >= 0 ||
            (rc = pc_cli_check_out_file(CMD_SERVE, "--svg", a->svg)) >= 0)
            return rc;
    }
    return -1;
}

/* ---------------- the request ---------------- */

/* The flags as a plan serve query (perfcast/query.h). */
static cJSON *serve_request(const serve_args *a) {
    const pc_serve_opts *o = &a->o;
    cJSON *q = cJSON_CreateObject();
    pc_acli_request_hw(q, a->model, a->preset, a->chip, a->chips_file, a->chips,
                       a->slice);
    if (a->nctx) {
        cJSON *jc = cJSON_AddArrayToObject(q, "context");
        for (int i = 0; i < a->nctx; i++) cJSON_AddItemToArray(jc, cJSON_CreateNumber(a->ctxs[i]));
    }
    if (a->batch > 0) cJSON_AddNumberToObject(q, "batch", a->batch);
    if (o->prefill_tokens > 0) cJSON_AddNumberToObject(q, "prefill_tokens", o->prefill_tokens);
    if (o->decode_tokens > 0) cJSON_AddNumberToObject(q, "decode_tokens", o->decode_tokens);
    cJSON_AddStringToObject(q, "weight_dtype", pc_prec_name(o->weight_prec));
    if (o->kv_prec != PC_PREC_COUNT)
        cJSON_AddStringToObject(q, "kv_dtype", pc_prec_name(o->kv_prec));
    if (o->efficiency > 0) cJSON_AddNumberToObject(q, "efficiency", o->efficiency);
    if (o->price_per_hour >= 0)
        cJSON_AddNumberToObject(q, "price_per_chip_hour", o->price_per_hour);
    cJSON_AddStringToObject(q, "attention", pc_attn_flops_name(o->attention));
    if (o->convention == PC_CONV_BOOK) cJSON_AddTrueToObject(q, "book");
    cJSON_AddStringToObject(q, "calibration", a->calibration);
    if (a->q.concurrency > 0) cJSON_AddNumberToObject(q, "concurrency", a->q.concurrency);
    if (a->replicas > 0) cJSON_AddNumberToObject(q, "replicas", (double)a->replicas);
    if (a->tp > 0) cJSON_AddNumberToObject(q, "tp", (double)a->tp);
    if (a->q.ep > 0) cJSON_AddNumberToObject(q, "ep", (double)a->q.ep);
    if (a->q.attention_dp) cJSON_AddTrueToObject(q, "attention_dp");
    return q;
}

/* Runs the query; the document in *doc, or the exit code. The query's checks are the
 * only ones: a failure is its message with the keys spelled as flags (pc_acli_query_fail),
 * with the --replicas hint when pc_plan_serve_setup finds no valid model-parallel degree
 * for one replica over all the chips. */
static int serve_query(serve_args *a, cJSON **doc) {
    pc_error e;
    pc_error_clear(&e);
    if (pc_acli_query(PC_QUERY_PLAN_SERVE, serve_request(a), doc, &e) == PC_OK) return -1;
    const char *files[] = {a->model, a->chips_file, a->calibration};
    int one = a->replicas <= 1 && (a->tp <= 0 || (a->chips > 0 && a->tp == a->chips));
    return pc_acli_query_fail(CMD_SERVE, serve_opts, files, 3, 1,
                              one && e.code == PC_ERR_INVALID
                                  ? "; or split the chips into replicas (--replicas R: chips / "
                                    "R must divide the heads)"
                                  : NULL,
                              &e);
}

/* ---------------- text, from the document ---------------- */

#define N(o, k) pc_acli_jnum(o, k)
#define S(o, k) pc_acli_jstr(o, k)
#define LL(o, k) pc_acli_jint(o, k)
#define G(o, k) cJSON_GetObjectItemCaseSensitive(o, k)

/* The lines above the first table: weights, KV cache, model-parallel limits, MoE, the
 * request shape and the replicas. */
static void serve_print_header(const cJSON *doc, const cJSON *c) {
    char a1[64], a2[64], a3[64];
    long long chips = LL(c, "chips"), shards = LL(c, "kv_head_shards");
    long long minw = LL(c, "min_chips_for_weights"), minv = LL(c, "min_chips_valid");
    printf("%s on %lld %s chip%s (slice %s), %lld-way model parallel: weights %s (%s), "
           "%s per chip of %s\n",
           S(doc, "model"), chips, S(doc, "chip"), chips == 1 ? "" : "s", S(doc, "replica_slice"),
           chips, pc_pcli_gb(N(c, "weight_bytes"), a1, sizeof a1), S(doc, "weight_dtype"),
           pc_pcli_gb(N(c, "weight_bytes") / (double)chips, a2, sizeof a2),
           pc_pcli_gb(N(doc, "chip_hbm_bytes"), a3, sizeof a3));
    printf("KV cache %s bytes/token (%s), split over %lld KV head group%s%s; weights "
           "alone need >= %lld chips",
           pc_pcli_commas(N(c, "kv_bytes_per_token"), a1, sizeof a1), S(doc, "kv_dtype"), shards,
           shards > 1 ? "s" : "", chips > shards ? " then over the batch" : "", minw);
    if (minv > minw) printf(" (%lld for a valid model-parallel degree)", minv);
    printf("\n");
    printf("model-parallel limits: TP comms exceed compute beyond %.0f-way in prefill "
           "(M_Y F W_ici/C)",
           N(c, "tp_limit_prefill"));
    if (LL(c, "max_batch") > 0)
        printf(", beyond %.0f-way in decode at batch %lld (M_Y F/(B beta))",
               N(c, "tp_limit_decode"), LL(c, "max_batch"));
    printf("\n");
    if (N(c, "moe_critical_batch") > 0)
        printf("MoE: the experts are compute-bound above a decode batch of B_crit E/k = "
               "%.0f tokens (%lld experts, %lld per token)\n",
               N(c, "moe_critical_batch"), LL(doc, "experts"), LL(doc, "experts_per_token"));
    printf("prefill %.0f tokens/request, %.0f generated tokens/request (QPS), efficiency %.2f",
           N(c, "prefill_tokens"), N(c, "decode_tokens"), N(c, "efficiency"));
    if (N(c, "price_per_chip_hour") > 0) printf(", $%.2f/chip-hour", N(c, "price_per_chip_hour"));
    if (!strcmp(S(doc, "convention"), "book"))
        printf("; book convention: collectives V/W, no decode TP AllReduces");
    printf("\n");
    if (LL(doc, "replicas") > 1)
        printf("data parallel: %lld replicas of %lld-way tensor parallel over the %lld "
               "chips (slice %s); the tables are per replica\n",
               LL(doc, "replicas"), LL(doc, "tp"), LL(doc, "chips"), S(doc, "slice"));
}

/* The weights alone do not fit: how many chips or what precision would. */
static void serve_print_no_fit(const cJSON *doc, const cJSON *c) {
    char a1[64], a2[64], a3[64], valid[160] = "";
    long long minw = LL(c, "min_chips_for_weights"), minv = LL(c, "min_chips_valid");
    fflush(stdout);
    if (minv > minw)
        snprintf(valid, sizeof valid,
                 "; %lld for a model-parallel degree that divides the %lld heads", minv,
                 LL(doc, "heads"));
    else if (minv <= 0)
        snprintf(valid, sizeof valid, "; no model-parallel degree in range divides the %lld heads",
                 LL(doc, "heads"));
    fprintf(stderr,
            "perfcast plan serve: error: the weights (%s, %s per chip) do not fit in %s of HBM "
            "per chip; use at least %lld chips%s, or smaller weights (--weight-dtype "
            "int8 / int4)\n",
            pc_pcli_gb(N(c, "weight_bytes"), a1, sizeof a1),
            pc_pcli_gb(N(c, "weight_bytes") / N(c, "chips"), a2, sizeof a2),
            pc_pcli_gb(N(doc, "chip_hbm_bytes"), a3, sizeof a3), minw, valid);
}

static void serve_print_row(const cJSON *p) {
    const cJSON *d = G(p, "decode"), *f = G(p, "prefill");
    char a1[64], a4[64], t1[32], t2[32], c1[24] = "-", c2[24] = "-";
    if (N(d, "usd_per_mtok") > 0) snprintf(c1, sizeof c1, "%.3g", N(d, "usd_per_mtok"));
    if (N(f, "usd_per_mtok") > 0) snprintf(c2, sizeof c2, "%.3g", N(f, "usd_per_mtok"));
    printf("%7.0f %9s %9s %12s  %-8s %9.4g %11.4g %9.3g %7s %9s  %-7s %7s %7.0f%s\n", N(p, "batch"),
           pc_pcli_gb(N(p, "kv_per_chip"), a1, sizeof a1),
           pc_pcli_gb(N(p, "mem_per_chip"), a4, sizeof a4),
           pc_acli_time(N(d, "step"), t1, sizeof t1), S(d, "bound"), N(d, "tokens_per_s"),
           N(d, "tokens_per_s_per_chip"), N(d, "qps_per_chip"), c1,
           pc_acli_time(N(f, "time"), t2, sizeof t2), S(f, "bound"), c2, N(p, "tp_limit_decode"),
           cJSON_IsTrue(G(p, "fits")) ? "" : "  does not fit");
}

static void serve_cal_print(const cJSON *doc, const cJSON *c, const cJSON *k) {
    char a1[48], a2[48], t1[32], t2[32], how[96];
    long long repl = LL(k, "replicas");
    double chips = N(doc, "chips");
    printf("calibrated (continuous batching; --calibration %s): tp %lld x %lld replica%s, %.0f "
           "prompt + %.0f generated tokens per request\n",
           S(k, "calibration"), LL(k, "tp"), repl, repl == 1 ? "" : "s", N(c, "prefill_tokens"),
           N(c, "decode_tokens"));
    if (cJSON_IsString(G(k, "error"))) {
        printf("  not expressible: %s\n", S(k, "error"));
        return;
    }
    double pinned = N(k, "batch_pinned");
    if (!cJSON_IsNumber(G(k, "batch_pinned")))
        snprintf(how, sizeof how, "throughput-optimal that fits");
    else if (pinned > N(k, "batch"))
        snprintf(how, sizeof how, "pinned at %.6g, capped at the largest that fits", pinned);
    else
        snprintf(how, sizeof how, "pinned");
    printf("  batch %.0f per replica (%s; largest that fits %.0f), KV %s\n", N(k, "batch"), how,
           N(k, "max_batch"), S(k, "kv_dtype"));
    printf("  output %s tokens/s (%s per chip), TTFT %s, TPOT %s\n",
           pc_pcli_commas(N(k, "output_tokens_per_s"), a1, sizeof a1),
           pc_pcli_commas(N(k, "output_tokens_per_s") / chips, a2, sizeof a2),
           pc_acli_time(N(k, "ttft_s"), t1, sizeof t1),
           pc_acli_time(N(k, "tpot_s"), t2, sizeof t2));
    const cJSON *i = G(k, "ideal");
    if (cJSON_IsObject(i))
        printf("  ideal bound: %s tokens/s (%s per chip), TTFT %s, TPOT %s at batch %.0f "
               "(largest that fits %.0f)\n",
               pc_pcli_commas(N(i, "output_tokens_per_s"), a1, sizeof a1),
               pc_pcli_commas(N(i, "output_tokens_per_s") / chips, a2, sizeof a2),
               pc_acli_time(N(i, "ttft_s"), t1, sizeof t1),
               pc_acli_time(N(i, "tpot_s"), t2, sizeof t2), N(i, "batch"), N(i, "max_batch"));
}

/* One context: the header (before the first), its table and calibrated block. */
static void serve_print_context(const cJSON *doc, const cJSON *c, int first) {
    char a1[64], a2[64];
    if (first) serve_print_header(doc, c);
    const cJSON *rows = G(c, "batches"), *k = G(c, "calibrated");
    if (!cJSON_IsArray(rows)) {
        serve_print_no_fit(doc, c);
    } else {
        printf("\ncontext %.0f: KV %s per sequence; HBM %s: largest batch %lld\n", N(c, "context"),
               pc_pcli_gb(N(c, "kv_bytes_per_seq"), a1, sizeof a1),
               pc_pcli_gb(N(c, "hbm_total"), a2, sizeof a2), LL(c, "max_batch"));
        printf("  batch   KV/chip  mem/chip  decode step  bound     tokens/s  tok/s/chip  "
               "QPS/chip  $/Mtok   prefill  bound    $/Mtok  TP lim\n");
        for (const cJSON *p = rows->child; p; p = p->next) serve_print_row(p);
        double batch = N(doc, "batch");
        if (batch > N(c, "max_batch")) {
            fflush(stdout);
            fprintf(stderr,
                    "perfcast plan serve: batch %.0f does not fit at context %.0f: the largest "
                    "that fits is %lld (more chips, int8 KV cache, or a shorter context)\n",
                    batch, N(c, "context"), LL(c, "max_batch"));
        }
    }
    if (cJSON_IsObject(k))
        serve_cal_print(doc, c, k);
    else
        printf("(ideal roofline only: --calibration none)\n");
}

/* --svg: a curve per context with a table, its fitting batches and the KV/weights crossover. */
static int serve_svg(const serve_args *a, const cJSON *doc) {
    char title[300];
    int n = 0;
    for (const cJSON *c = G(doc, "contexts")->child; c && n < 16; c = c->next) {
        const cJSON *rows = G(c, "batches"), *x = G(c, "kv_weights_crossover");
        if (!cJSON_IsArray(rows)) continue;
        pc_plot_serve_ctx *pc = &a->plot->c[n];
        memset(pc, 0, sizeof *pc);
        pc->context = N(c, "context");
        pc->max_batch = LL(c, "max_batch");
        pc->cross_latency = pc->cross_tok_s_chip = NAN;
        if (cJSON_IsObject(x)) {
            pc->cross_batch = N(x, "batch");
            if (cJSON_IsNumber(G(x, "decode_step"))) {
                pc->cross_latency = N(x, "decode_step");
                pc->cross_tok_s_chip = N(x, "tokens_per_s_per_chip");
            }
        }
        for (const cJSON *p = rows->child; p && pc->n < 64; p = p->next) {
            if (!cJSON_IsTrue(G(p, "fits"))) continue;
            pc->batch[pc->n] = N(p, "batch");
            pc->latency[pc->n] = N(G(p, "decode"), "step");
            pc->tok_s_chip[pc->n++] = N(G(p, "decode"), "tokens_per_s_per_chip");
        }
        if (pc->n > 0) n++;
    }
    if (!n) {
        fprintf(stderr, "perfcast plan serve: no batch fits: %s not written\n", a->svg);
        return -1;
    }
    snprintf(title, sizeof title, "plan serve: %s on %s %s (%s weights), decode", S(doc, "model"),
             S(doc, "chip"), S(doc, "replica_slice"), S(doc, "weight_dtype"));
    int rc = pc_plot_serve(a->svg, title, a->plot->c, n);
    if (rc < 0 && !a->json) printf("\nwrote %s\n", a->svg);
    return rc;
}

/* The library's wording of a calibrated block's error in flag names, as the command says it. */
static void serve_flag_words(cJSON *doc) {
    for (cJSON *c = G(doc, "contexts")->child; c; c = c->next) {
        cJSON *e = G(G(c, "calibrated"), "error");
        if (!cJSON_IsString(e)) continue;
        char m[sizeof(((pc_error *)0)->msg)];
        snprintf(m, sizeof m, "%s", e->valuestring);
        pc_cli_flags(m, sizeof m);
        cJSON_SetValuestring(e, m);
    }
}

int pc_pcli_serve(int argc, char **argv) {
    serve_args a;
    cJSON *doc = NULL;
    int rc;
    if ((rc = serve_parse(argc, argv, &a)) >= 0 || (rc = serve_query(&a, &doc)) >= 0) return rc;
    for (const cJSON *w = G(doc, "warnings")->child; w; w = w->next)
        fprintf(stderr, "perfcast %s: warning: %s\n", CMD_SERVE, w->valuestring);
    serve_flag_words(doc);
    if (a.json) {
        for (const cJSON *c = G(doc, "contexts")->child; c; c = c->next)
            if (!cJSON_IsArray(G(c, "batches"))) serve_print_no_fit(doc, c);
        char *out = cJSON_Print(doc);
        if (out) puts(out);
        free(out);
    } else {
        int i = 0;
        for (const cJSON *c = G(doc, "contexts")->child; c; c = c->next)
            serve_print_context(doc, c, !i++);
    }
    rc = cJSON_IsTrue(G(doc, "fits")) ? PC_EXIT_OK : PC_EXIT_FAIL;
    if (a.svg) {
        a.plot = calloc(1, sizeof *a.plot);
        int src =
            a.plot ? serve_svg(&a, doc)
                   : (fputs("perfcast plan serve: error: out of memory\n", stderr), PC_EXIT_FAIL);
        if (src >= 0) rc = src;
        free(a.plot);
    }
    cJSON_Delete(doc);
    return rc;
}
