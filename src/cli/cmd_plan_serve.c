/* perfcast plan serve: serving tables after the book and the calibrated
 * continuous-batching model (issue #6). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_cli.h"
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
static void serve_cal_run(const serve_cal_req *q, const pc_tfm_cfg *m, const pc_chip *chip,
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
        pc_cli_flags(out->why, sizeof out->why);
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
           pc_pcli_commas(d->tokens_per_s, a1, sizeof a1),
           pc_pcli_commas(d->tokens_per_s / (double)q->chips, a2, sizeof a2),
           pc_acli_time(d->ttft_s, t1, sizeof t1), pc_acli_time(d->tpot_s, t2, sizeof t2));
    if (c->ideal_ok)
        printf("  ideal bound: %s tokens/s (%s per chip), TTFT %s, TPOT %s at batch %.0f "
               "(largest that fits %.0f)\n",
               pc_pcli_commas(c->ideal.tokens_per_s, a1, sizeof a1),
               pc_pcli_commas(c->ideal.tokens_per_s / (double)q->chips, a2, sizeof a2),
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
static void serve_cal_context(const serve_cal_req *q, const pc_tfm_cfg *m, const pc_chip *chip,
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
static int serve_resolve_tp(const pc_tfm_cfg *m, int64_t chips, long long tp_flag,
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

/* ---------------- the ideal tables ---------------- */

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


/* ---------------- options ---------------- */

/* What the command line asks plan serve for. */
typedef struct serve_args {
    const char *model, *preset, *chip, *slice, *chips_file, *context, *calibration, *svg;
    long long chips, tp, replicas; /* --tp, --replicas: 0 when not given */
    double batch;                  /* --batch N per replica; 0: sweep */
    int json;
    serve_cal_req q; /* --ep, --attention-dp, --concurrency; the rest once resolved */
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
    case PC_PO_CONTEXT: a->context = v; return -1;
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

/* ---------------- setup ---------------- */

/* What plan serve works on once the command line checks out. */
typedef struct serve_job {
    pc_tfm_cfg m;
    double ctxs[16];
    int nctx;
    pc_chipdb *db;
    const pc_chip *chip;
    pc_mesh slice, rslice; /* all the chips; one replica's */
    pc_calib *cal;
} serve_job;

static void serve_job_free(serve_job *j) {
    pc_calib_free(j->cal);
    pc_chipdb_free(j->db);
}

/* The slice, tp x replicas and one replica's slice; -1 or an exit code. */
static int serve_resolve_layout(serve_args *a, serve_job *j) {
    int rc;
    if ((rc = pc_pcli_resolve_slice(CMD_SERVE, j->chip, a->chips, a->slice, &j->slice)) >= 0)
        return rc;
    int64_t chips = pc_mesh_devices(&j->slice);
    if ((rc = serve_resolve_tp(&j->m, chips, a->tp, a->replicas, &a->q)) >= 0) return rc;
    return serve_replica_slice(j->chip, &j->slice, &a->q, &j->rslice);
}

/* Model, contexts, chip, slice, tp x replicas, calibration; -1 to go on (free
 * j), else the exit code. */
static int serve_setup(serve_args *a, serve_job *j) {
    int rc;
    memset(j, 0, sizeof *j);
    if ((rc = pc_pcli_load_model(CMD_SERVE, a->model, a->preset, &j->m)) >= 0) return rc;
    if (!a->chip) return pc_cli_usage_error(CMD_SERVE, "give --chip (e.g. --chip v5e)");
    if (!a->context) return pc_cli_usage_error(CMD_SERVE, "give --context (e.g. --context 8192)");
    if ((rc = parse_contexts(a->context, j->ctxs, &j->nctx)) >= 0) return rc;
    if ((rc = pc_acli_open_chip(CMD_SERVE, a->chips_file, a->chip, &j->db, &j->chip)) >= 0)
        return rc;
    if ((rc = serve_resolve_layout(a, j)) >= 0) {
        serve_job_free(j);
        return rc;
    }
    pc_error e;
    pc_error_clear(&e);
    if (pc_calib_from_spec(a->calibration, &j->cal, &e)) {
        serve_job_free(j);
        return pc_cli_fail(&e);
    }
    a->q.cal = pc_calib_is_ideal(j->cal) ? NULL : j->cal;
    a->q.batch = a->batch; /* --batch N pins the calibrated batch per replica too */
    return -1;
}

/* ---------------- one context ---------------- */

/* The weights' precision, and the KV cache's (the weights' unless given). */
static pc_prec serve_kv_prec(const pc_serve_opts *o) {
    return o->kv_prec == PC_PREC_COUNT ? o->weight_prec : o->kv_prec;
}

/* The lines above the first table: weights, KV cache, model-parallel limits,
 * MoE, the request shape and the replicas. */
static void serve_print_header(const serve_args *a, const serve_job *j, const pc_serve_opts *o,
                               const pc_serve_summary *s, double P, double G) {
    const pc_chip *chip = j->chip;
    const serve_cal_req *q = &a->q;
    char sl[96], fsl[96], a1[64], a2[64], a3[64];
    pc_pcli_mesh_str(&j->rslice, sl, sizeof sl);
    pc_pcli_mesh_str(&j->slice, fsl, sizeof fsl);
    printf("%s on %lld %s chip%s (slice %s), %lld-way model parallel: weights %s (%s), "
           "%s per chip of %s\n",
           j->m.name, (long long)s->chips, chip->name, s->chips == 1 ? "" : "s", sl,
           (long long)s->chips, pc_pcli_gb(s->weight_bytes, a1, sizeof a1),
           pc_prec_name(o->weight_prec),
           pc_pcli_gb(s->weight_bytes / (double)s->chips, a2, sizeof a2),
           pc_pcli_gb(chip->hbm_bytes, a3, sizeof a3));
    printf("KV cache %s bytes/token (%s), split over %lld KV head group%s%s; weights "
           "alone need >= %lld chips",
           pc_pcli_commas(s->kv_bytes_per_token, a1, sizeof a1), pc_prec_name(serve_kv_prec(o)),
           (long long)s->kv_head_shards, s->kv_head_shards > 1 ? "s" : "",
           s->chips > s->kv_head_shards ? " then over the batch" : "",
           (long long)s->min_chips_weights);
    if (s->min_chips_valid > s->min_chips_weights)
        printf(" (%lld for a valid model-parallel degree)", (long long)s->min_chips_valid);
    printf("\n");
    printf("model-parallel limits: TP comms exceed compute beyond %.0f-way in prefill "
           "(M_Y F W_ici/C)",
           s->tp_limit_prefill);
    if (s->max_batch > 0)
        printf(", beyond %.0f-way in decode at batch %lld (M_Y F/(B beta))", s->tp_limit_decode,
               (long long)s->max_batch);
    printf("\n");
    if (s->moe_batch > 0)
        printf("MoE: the experts are compute-bound above a decode batch of B_crit E/k = "
               "%.0f tokens (%lld experts, %lld per token)\n",
               s->moe_batch, (long long)j->m.experts, (long long)j->m.experts_per_token);
    printf("prefill %.0f tokens/request, %.0f generated tokens/request (QPS), "
           "efficiency %.2f",
           P, G, s->efficiency);
    if (s->price_per_hour > 0) printf(", $%.2f/chip-hour", s->price_per_hour);
    if (o->convention == PC_CONV_BOOK)
        printf("; book convention: collectives V/W, no decode TP AllReduces");
    printf("\n");
    if (q->replicas > 1)
        printf("data parallel: %lld replicas of %lld-way tensor parallel over the %lld "
               "chips (slice %s); the tables are per replica\n",
               (long long)q->replicas, (long long)q->tp, (long long)q->chips, fsl);
}

static cJSON *serve_summary_json(const pc_serve_opts *o, const pc_serve_summary *s, double P,
                                 double G) {
    cJSON *jc = cJSON_CreateObject();
    cJSON_AddNumberToObject(jc, "context", o->context);
    cJSON_AddNumberToObject(jc, "prefill_tokens", P);
    cJSON_AddNumberToObject(jc, "decode_tokens", G);
    cJSON_AddNumberToObject(jc, "chips", (double)s->chips);
    cJSON_AddNumberToObject(jc, "kv_head_shards", (double)s->kv_head_shards);
    cJSON_AddNumberToObject(jc, "weight_bytes", s->weight_bytes);
    cJSON_AddNumberToObject(jc, "kv_bytes_per_token", s->kv_bytes_per_token);
    cJSON_AddNumberToObject(jc, "kv_bytes_per_seq", s->kv_bytes_per_seq);
    cJSON_AddNumberToObject(jc, "hbm_total", s->hbm_total);
    cJSON_AddNumberToObject(jc, "max_batch", (double)s->max_batch);
    cJSON_AddNumberToObject(jc, "min_chips_for_weights", (double)s->min_chips_weights);
    cJSON_AddNumberToObject(jc, "min_chips_valid", (double)s->min_chips_valid);
    cJSON_AddNumberToObject(jc, "tp_limit_prefill", s->tp_limit_prefill);
    cJSON_AddNumberToObject(jc, "tp_limit_decode", s->tp_limit_decode);
    cJSON_AddNumberToObject(jc, "moe_critical_batch", s->moe_batch);
    cJSON_AddNumberToObject(jc, "efficiency", s->efficiency);
    cJSON_AddNumberToObject(jc, "price_per_chip_hour", s->price_per_hour);
    return jc;
}

/* The weights alone do not fit: how many chips or what precision would. */
static void serve_print_no_fit(const serve_job *j, const pc_serve_summary *s) {
    char a1[64], a2[64], a3[64];
    fflush(stdout);
    char valid[160] = "";
    if (s->min_chips_valid > s->min_chips_weights)
        snprintf(valid, sizeof valid, "; %lld for a model-parallel degree that divides the %lld "
                 "heads", (long long)s->min_chips_valid, (long long)j->m.heads);
    else if (s->min_chips_valid <= 0)
        snprintf(valid, sizeof valid, "; no model-parallel degree in range divides the %lld "
                 "heads", (long long)j->m.heads);
    fprintf(stderr,
            "perfcast plan serve: error: the weights (%s, %s per chip) do not fit in %s of HBM "
            "per chip; use at least %lld chips%s, or smaller weights (--weight-dtype "
            "int8 / int4)\n",
            pc_pcli_gb(s->weight_bytes, a1, sizeof a1),
            pc_pcli_gb(s->weight_bytes / (double)s->chips, a2, sizeof a2),
            pc_pcli_gb(j->chip->hbm_bytes, a3, sizeof a3), (long long)s->min_chips_weights,
            valid);
}

static void serve_print_row(const pc_serve_point *p) {
    char a1[64], a4[64], t1[32], t2[32], c1[24] = "-", c2[24] = "-";
    if (p->cost_per_mtok_decode > 0) snprintf(c1, sizeof c1, "%.3g", p->cost_per_mtok_decode);
    if (p->cost_per_mtok_prefill > 0) snprintf(c2, sizeof c2, "%.3g", p->cost_per_mtok_prefill);
    printf("%7.0f %9s %9s %12s  %-8s %9.4g %11.4g %9.3g %7s %9s  %-7s %7s %7.0f%s\n", p->batch,
           pc_pcli_gb(p->mem_kv, a1, sizeof a1), pc_pcli_gb(p->mem_total, a4, sizeof a4),
           pc_acli_time(p->dec_step, t1, sizeof t1), bound_str(p, 1), p->dec_tok_s,
           p->dec_tok_s_chip, p->qps_per_chip, c1, pc_acli_time(p->pre_time, t2, sizeof t2),
           bound_str(p, 0), c2, p->tp_limit_decode, p->fits ? "" : "  does not fit");
}

/* The batch sizes of the table: the one pinned, or 1, 2, 4, ... and the
 * largest that fits. */
static int serve_batches(double batch, int64_t max_batch, double *bl) {
    int nb = 0;
    if (batch > 0) {
        bl[nb++] = batch;
    } else {
        for (double b = 1; b < (double)max_batch && nb < 62; b *= 2) bl[nb++] = b;
        bl[nb++] = (double)max_batch;
    }
    return nb;
}

/* --svg: one point of the current context's curve. */
static void serve_plot_add(serve_plot *sp, const pc_serve_point *p) {
    pc_plot_serve_ctx *c = &sp->c[sp->n - 1];
    if (c->n == 64 || !p->fits) return;
    c->batch[c->n] = p->batch;
    c->latency[c->n] = p->dec_step;
    c->tok_s_chip[c->n++] = p->dec_tok_s_chip;
}

/* --svg: where the KV cache per chip grows as large as the weights (linear in the batch). */
static void serve_plot_cross(const serve_job *j, const pc_serve_opts *o, pc_plot_serve_ctx *c) {
    pc_serve_point p;
    pc_error e;
    c->cross_latency = c->cross_tok_s_chip = NAN;
    if (pc_plan_serve_eval(j->chip, &j->m, &j->rslice, o, 1, &p, &e) != PC_OK ||
        !(p.mem_kv > 0))
        return;
    c->cross_batch = ceil(p.mem_weights / p.mem_kv);
    if (c->cross_batch > (double)c->max_batch ||
        pc_plan_serve_eval(j->chip, &j->m, &j->rslice, o, c->cross_batch, &p, &e) != PC_OK)
        return;
    c->cross_latency = p.dec_step;
    c->cross_tok_s_chip = p.dec_tok_s_chip;
}

/* The ideal table of one context (printed, or "batches" in jc); *status
 * becomes 1 when a batch does not fit. Returns -1 or an exit code. */
static int serve_table(const serve_args *a, const serve_job *j, const pc_serve_opts *o,
                       const pc_serve_summary *s, cJSON *jc, int *status) {
    double bl[64];
    int nb = serve_batches(a->batch, s->max_batch, bl);
    if (a->plot && a->plot->n < 16) {
        pc_plot_serve_ctx *c = &a->plot->c[a->plot->n++];
        c->context = o->context;
        c->max_batch = s->max_batch;
        serve_plot_cross(j, o, c);
    }
    if (!a->json)
        printf("  batch   KV/chip  mem/chip  decode step  bound     tokens/s  tok/s/chip  "
               "QPS/chip  $/Mtok   prefill  bound    $/Mtok  TP lim\n");
    cJSON *jrows = jc ? cJSON_AddArrayToObject(jc, "batches") : NULL;
    pc_error e;
    pc_error_clear(&e);
    for (int i = 0; i < nb; i++) {
        pc_serve_point p;
        if (pc_plan_serve_eval(j->chip, &j->m, &j->rslice, o, bl[i], &p, &e) != PC_OK)
            return pc_cli_fail(&e);
        if (jrows) cJSON_AddItemToArray(jrows, point_json(&p));
        if (a->plot) serve_plot_add(a->plot, &p);
        if (!p.fits) *status = PC_EXIT_FAIL;
        if (!a->json) serve_print_row(&p);
    }
    if (!a->json && a->batch > (double)s->max_batch) {
        fflush(stdout);
        fprintf(stderr,
                "perfcast plan serve: batch %.0f does not fit at context %.0f: the largest "
                "that fits is %lld (more chips, int8 KV cache, or a shorter context)\n",
                a->batch, o->context, (long long)s->max_batch);
    }
    return -1;
}

/* pc_plan_serve_setup failed: a usage error (with the --replicas hint when
 * there is one replica) or a failure. */
static int serve_setup_error(pc_status st, const pc_error *e, int64_t replicas) {
    if (st == PC_ERR_INVALID && replicas == 1)
        return pc_cli_usage_error(CMD_SERVE,
                                  "%s; or split the chips into replicas (--replicas R: "
                                  "chips / R must divide the heads)",
                                  e->msg);
    return st == PC_ERR_INVALID || st == PC_ERR_ARG ? pc_cli_usage_error(CMD_SERVE, "%s", e->msg)
                                                    : pc_cli_fail(e);
}

/* One context: the header (before the first), its summary, table and
 * calibrated block, printed or added to jctx. *status becomes 1 when
 * something does not fit. Returns -1 to go on, else the exit code. */
static int serve_context(const serve_args *a, const serve_job *j, const pc_serve_opts *o,
                         int first, cJSON *jctx, int *status) {
    pc_error e;
    pc_error_clear(&e);
    pc_serve_summary s;
    pc_status st = pc_plan_serve_setup(j->chip, &j->m, &j->rslice, o, &s, &e);
    if (st) return serve_setup_error(st, &e, a->q.replicas);
    double P = o->prefill_tokens > 0 ? o->prefill_tokens : o->context;
    double G = o->decode_tokens > 0 ? o->decode_tokens : 512;
    if (!a->json && first) serve_print_header(a, j, o, &s, P, G);
    cJSON *jc = NULL;
    if (jctx) {
        jc = serve_summary_json(o, &s, P, G);
        cJSON_AddItemToArray(jctx, jc);
    }
    const char *origin = pc_calib_origin(j->cal);
    if (s.max_batch < 1) {
        serve_print_no_fit(j, &s);
        *status = PC_EXIT_FAIL;
        serve_cal_context(&a->q, &j->m, j->chip, o, P, G, origin, jc);
        return -1;
    }
    char a1[64], a2[64];
    if (!a->json)
        printf("\ncontext %.0f: KV %s per sequence; HBM %s: largest batch %lld\n", o->context,
               pc_pcli_gb(s.kv_bytes_per_seq, a1, sizeof a1),
               pc_pcli_gb(s.hbm_total, a2, sizeof a2), (long long)s.max_batch);
    int rc = serve_table(a, j, o, &s, jc, status);
    if (rc >= 0) return rc;
    serve_cal_context(&a->q, &j->m, j->chip, o, P, G, origin, jc);
    return -1;
}

/* The --json document's top level; its "contexts" array comes back in *jctx. */
static cJSON *serve_root_json(const serve_args *a, const serve_job *j, cJSON **jctx) {
    const pc_serve_opts *o = &a->o;
    char sl[96], fsl[96];
    pc_pcli_mesh_str(&j->rslice, sl, sizeof sl);
    pc_pcli_mesh_str(&j->slice, fsl, sizeof fsl);
    cJSON *jroot = cJSON_CreateObject();
    cJSON_AddStringToObject(jroot, "model", j->m.name);
    cJSON_AddStringToObject(jroot, "chip", j->chip->name);
    cJSON_AddStringToObject(jroot, "slice", fsl);
    cJSON_AddStringToObject(jroot, "replica_slice", sl);
    cJSON_AddNumberToObject(jroot, "tp", (double)a->q.tp);
    cJSON_AddNumberToObject(jroot, "replicas", (double)a->q.replicas);
    cJSON_AddStringToObject(jroot, "calibration", pc_calib_origin(j->cal));
    cJSON_AddStringToObject(jroot, "weight_dtype", pc_prec_name(o->weight_prec));
    cJSON_AddStringToObject(jroot, "kv_dtype", pc_prec_name(serve_kv_prec(o)));
    cJSON_AddStringToObject(jroot, "attention", pc_attn_flops_name(o->attention));
    cJSON_AddStringToObject(jroot, "convention", pc_coll_conv_name(o->convention));
    *jctx = cJSON_AddArrayToObject(jroot, "contexts");
    return jroot;
}

/* The tables and calibrated blocks of every context; returns the exit code. */
static int serve_contexts(const serve_args *a, const serve_job *j) {
    pc_serve_opts o = a->o;
    cJSON *jctx = NULL;
    cJSON *jroot = a->json ? serve_root_json(a, j, &jctx) : NULL;
    int status = PC_EXIT_OK;
    for (int ci = 0; ci < j->nctx; ci++) {
        o.context = j->ctxs[ci];
        int rc = serve_context(a, j, &o, ci == 0, jctx, &status);
        if (rc >= 0) {
            cJSON_Delete(jroot);
            return rc;
        }
    }
    if (jroot) {
        char *out = cJSON_Print(jroot);
        if (out) puts(out);
        free(out);
        cJSON_Delete(jroot);
    }
    return status;
}

/* --svg after the tables: -1 or an exit code. */
static int serve_svg(const serve_args *a, const serve_job *j) {
    char title[300], sl[96];
    int n = 0;
    for (int k = 0; k < a->plot->n; k++)
        if (a->plot->c[k].n > 0) a->plot->c[n++] = a->plot->c[k];
    if (!n) {
        fprintf(stderr, "perfcast plan serve: no batch fits: %s not written\n", a->svg);
        return -1;
    }
    pc_pcli_mesh_str(&j->rslice, sl, sizeof sl);
    snprintf(title, sizeof title, "plan serve: %s on %s %s (%s weights), decode", j->m.name,
             j->chip->name, sl, pc_prec_name(a->o.weight_prec));
    int rc = pc_plot_serve(a->svg, title, a->plot->c, n);
    if (rc < 0 && !a->json) printf("\nwrote %s\n", a->svg);
    return rc;
}

int pc_pcli_serve(int argc, char **argv) {
    serve_args a;
    serve_job j;
    int rc;
    if ((rc = serve_parse(argc, argv, &a)) >= 0 || (rc = serve_setup(&a, &j)) >= 0) return rc;
    serve_plot *plot = a.svg ? calloc(1, sizeof *plot) : NULL;
    if (a.svg && !plot) {
        serve_job_free(&j);
        return fputs("perfcast plan serve: error: out of memory\n", stderr), PC_EXIT_FAIL;
    }
    a.plot = plot;
    rc = serve_contexts(&a, &j);
    if (plot && rc != PC_EXIT_USAGE) {
        int src = serve_svg(&a, &j);
        if (src >= 0) rc = src;
    }
    free(plot);
    serve_job_free(&j);
    return rc;
}
