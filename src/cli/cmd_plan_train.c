/* perfcast plan train: parallelism plans for training (issue #6). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_cli.h"
#include "perfcast/query.h"
#include "plots.h"

#define CMD_TRAIN PC_PCLI_TRAIN

static void train_help(FILE *f) {
    fprintf(
        f,
        "usage: perfcast plan train (--config CONFIG.json|PRESET | --preset NAME) --chip NAME\n"
        "                           (--chips N | --slice AxBxC) --batch-tokens B [--seq T]\n"
        "                           [--tokens TOTAL] [--price-per-chip-hour X] [--top N] [--json]\n"
        "                           [--remat LIST] [--zero LIST] [--dp N --fsdp N --tp N --pp N\n"
        "                           --ep N] [--max-micro M] [--micro M] [--micro-batch-size S]\n"
        "                           [--vp V] [--cp C] [--efficiency E] [--attention A]\n"
        "                           [--optimizer adam|momentum|sgd] [--master-weights]\n"
        "                           [--weight-dtype P] [--grad-dtype P] [--act-dtype P]\n"
        "                           [--chips-file F] [--svg OUT.svg]\n\n"
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
        "  --config X         a Hugging Face config.json, or a preset name\n"
        "  --chips N          chips; a slice shape is chosen (the most collective bandwidth,\n"
        "                     then the fewest hops; several slices over DCN if N does not\n"
        "                     fit one pod); --slice for a specific topology\n"
        "  --slice AxBxC      one slice of this shape (with --chips, they must agree)\n"
        "  --batch-tokens B   tokens per optimizer step: 4Mi = 4,194,304 (the book's batch\n"
        "                     sizes), 4M = 4,000,000, or SEQSxLEN like 1024x4096\n"
        "  --seq T            sequence length (default 4096; 8k = 8000, 8Ki = 8192)\n"
        "  --tokens TOTAL     training tokens for days and cost: 15T = 15e12 (B = 1e9)\n"
        "Counts and sizes: k M G T decimal, Ki Mi Gi Ti binary (docs/units.md).\n"
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
        "  --top N            plans listed (default 10)\n"
        "  --json             machine-readable output\n"
        "  --svg OUT.svg      the step time of the top plans as stacked bars of the ideal\n"
        "                     roofline's exposed parts, the calibrated step marked\n\n"
        "Exit status: 0 a plan was found, 1 none fits (the message says what to change),\n"
        "2 bad usage (unknown chip/model, mesh not matching the chips, ...).\n");
}

/* ---------------- formatting ---------------- */

static const char *money(double usd, char *buf, size_t cap) {
    if (usd >= 1e6)
        snprintf(buf, cap, "$%.3gM", usd / 1e6);
    else if (usd >= 1e3)
        snprintf(buf, cap, "$%.3gk", usd / 1e3);
    else
        snprintf(buf, cap, "$%.3g", usd);
    return buf;
}


/* ---------------- options ---------------- */

/* What the command line asks plan train for. */
typedef struct train_args {
    const char *model, *preset, *chip, *slice, *chips_file, *calibration, *svg;
    long long chips;
    int64_t top; /* plans listed */
    int json, have_batch;
    pc_plan_train_opts o;
} train_args;

static const struct option train_opts[] = {{"config", required_argument, 0, PC_PO_CONFIG},
                                           {"model", required_argument, 0, PC_PO_MODEL},
                                           {"calibration", required_argument, 0, PC_PO_CALIB},
                                           {"preset", required_argument, 0, PC_PO_PRESET},
                                           {"chip", required_argument, 0, PC_PO_CHIP},
                                           {"chips", required_argument, 0, PC_PO_CHIPS},
                                           {"slice", required_argument, 0, PC_PO_SLICE},
                                           {"chips-file", required_argument, 0, PC_PO_CHIPSFILE},
                                           {"batch-tokens", required_argument, 0, PC_PO_BATCH},
                                           {"seq", required_argument, 0, PC_PO_SEQ},
                                           {"tokens", required_argument, 0, PC_PO_TOKENS},
                                           {"price-per-chip-hour", required_argument, 0,
                                            PC_PO_PRICE},
                                           {"efficiency", required_argument, 0, PC_PO_EFF},
                                           {"attention", required_argument, 0, PC_PO_ATTN},
                                           {"remat", required_argument, 0, PC_PO_REMAT},
                                           {"zero", required_argument, 0, PC_PO_ZERO},
                                           {"dp", required_argument, 0, PC_PO_DP},
                                           {"fsdp", required_argument, 0, PC_PO_FSDP},
                                           {"tp", required_argument, 0, PC_PO_TP},
                                           {"pp", required_argument, 0, PC_PO_PP},
                                           {"ep", required_argument, 0, PC_PO_EP},
                                           {"max-micro", required_argument, 0, PC_PO_MICRO},
                                           {"micro", required_argument, 0, PC_PO_PMICRO},
                                           {"micro-batch-size", required_argument, 0, PC_PO_MBS},
                                           {"vp", required_argument, 0, PC_PO_VP},
                                           {"cp", required_argument, 0, PC_PO_CP},
                                           {"optimizer", required_argument, 0, PC_PO_OPT},
                                           {"master-weights", no_argument, 0, PC_PO_MASTER},
                                           {"weight-dtype", required_argument, 0, PC_PO_WDT},
                                           {"grad-dtype", required_argument, 0, PC_PO_GDT},
                                           {"act-dtype", required_argument, 0, PC_PO_ADT},
                                           {"top", required_argument, 0, PC_PO_TOP},
                                           {"book", no_argument, 0, PC_PO_BOOK},
                                           {"json", no_argument, 0, 'j'},
                                           {"svg", required_argument, 0, PC_PO_SVG},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};

/* The integer flags: fixed axis sizes, --max-micro, the pins, --top. One
 * table, so each flag's range and message sit on one line. */
static int train_int_opt(train_args *a, int c, const char *v) {
    pc_plan_train_opts *o = &a->o;
    const struct {
        int code;
        const char *flag, *what; /* "<flag> expects <what>, got '<v>'" */
        long long hi;            /* all start at 1 */
        int64_t *dst;
    } t[] = {
        {PC_PO_DP, "--dp", "an axis size >= 1", 1LL << 30, &o->fixed[PC_PAR_DP]},
        {PC_PO_FSDP, "--fsdp", "an axis size >= 1", 1LL << 30, &o->fixed[PC_PAR_FSDP]},
        {PC_PO_TP, "--tp", "an axis size >= 1", 1LL << 30, &o->fixed[PC_PAR_TP]},
        {PC_PO_PP, "--pp", "an axis size >= 1", 1LL << 30, &o->fixed[PC_PAR_PP]},
        {PC_PO_EP, "--ep", "an axis size >= 1", 1LL << 30, &o->fixed[PC_PAR_EP]},
        {PC_PO_MICRO, "--max-micro", "a count >= 1", 1 << 20, &o->max_micro},
        {PC_PO_PMICRO, "--micro", "a micro-batch count >= 1", 1 << 20, &o->micro},
        {PC_PO_MBS, "--micro-batch-size", "sequences per micro-batch >= 1", 1 << 20,
         &o->micro_batch_size},
        {PC_PO_VP, "--vp", "virtual stages per pipeline stage >= 1", 1 << 20, &o->vp},
        {PC_PO_CP, "--cp", "context-parallel ways >= 1", 1LL << 30, &o->cp},
        {PC_PO_TOP, "--top", "1..100", 100, &a->top},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (t[i].code != c) continue;
        long long n;
        if (pc_cli_parse_i64(v, 1, t[i].hi, &n))
            return pc_cli_usage_error(CMD_TRAIN, "%s expects %s, got '%s'", t[i].flag, t[i].what,
                                      v);
        *t[i].dst = n;
        return -1;
    }
    return -1;
}

/* --batch-tokens (a count or SEQSxLEN), --seq, --tokens: pc_pcli_parse_count. */
static int train_count_opt(train_args *a, int c, const char *v) {
    pc_plan_train_opts *o = &a->o;
    if (c == PC_PO_BATCH) {
        if (pc_pcli_parse_count(v, &o->batch_tokens) || o->batch_tokens < 1 ||
            o->batch_tokens > 1e15)
            return pc_cli_usage_error(CMD_TRAIN,
                                      "--batch-tokens expects tokens like 4Mi or 1024x4096, "
                                      "got '%s'",
                                      v);
        a->have_batch = 1;
    } else if (c == PC_PO_SEQ) {
        if (pc_pcli_parse_count(v, &o->seq) || o->seq < 1 || o->seq > 1e9 ||
            o->seq != floor(o->seq))
            return pc_cli_usage_error(CMD_TRAIN,
                                      "--seq expects a length like 4096 or 8Ki, got '%s'", v);
    } else if (pc_pcli_parse_count(v, &o->total_tokens) || o->total_tokens > 1e18) {
        return pc_cli_usage_error(CMD_TRAIN,
                                  "--tokens expects a count like 15T or 1.5e13, got '%s'", v);
    }
    return -1;
}

/* --zero 1,2,3: the ZeRO stages searched on the fsdp axis. */
static int parse_zero(const char *v, unsigned *mask) {
    *mask = 0;
    for (const char *p = v; *p; p++) {
        if (*p >= '1' && *p <= '3')
            *mask |= 1u << (*p - '0');
        else if (*p != ',')
            return pc_cli_usage_error(CMD_TRAIN, "--zero expects stages like 1,2,3, got '%s'",
                                      v);
    }
    if (!*mask) return pc_cli_usage_error(CMD_TRAIN, "--zero expects stages like 1,2,3");
    return -1;
}

/* One option; -1 to go on, else the exit code (0 after --help). */
static int train_opt(train_args *a, int c, const char *v, char **argv) {
    pc_plan_train_opts *o = &a->o;
    switch (c) {
    case PC_PO_MODEL:
        pc_cli_deprecated(CMD_TRAIN, "--model CONFIG", "--config CONFIG");
        a->model = v;
        return -1;
    case PC_PO_CONFIG: a->model = v; return -1;
    case PC_PO_CALIB: a->calibration = v; return -1;
    case PC_PO_PRESET: a->preset = v; return -1;
    case PC_PO_CHIP: a->chip = v; return -1;
    case PC_PO_SLICE: a->slice = v; return -1;
    case PC_PO_CHIPSFILE: a->chips_file = v; return -1;
    case PC_PO_CHIPS: return pc_pcli_parse_chips(CMD_TRAIN, v, "8960", &a->chips);
    case PC_PO_BATCH:
    case PC_PO_SEQ:
    case PC_PO_TOKENS: return train_count_opt(a, c, v);
    case PC_PO_PRICE: return pc_pcli_parse_price(CMD_TRAIN, v, &o->price_per_hour);
    case PC_PO_EFF: return pc_pcli_parse_efficiency(CMD_TRAIN, v, &o->efficiency);
    case PC_PO_ATTN: return pc_pcli_parse_attention(CMD_TRAIN, v, &o->attention);
    case PC_PO_REMAT:
        if (pc_remat_parse_list(v, &o->remat_mask, &o->remat_tensors))
            return pc_cli_usage_error(CMD_TRAIN,
                                      "--remat '%s': give a list of none, big_matmuls, full, "
                                      "tensors:K, or all",
                                      v);
        return -1;
    case PC_PO_ZERO: return parse_zero(v, &o->zero_mask);
    case PC_PO_DP:
    case PC_PO_FSDP:
    case PC_PO_TP:
    case PC_PO_PP:
    case PC_PO_EP:
    case PC_PO_MICRO:
    case PC_PO_PMICRO:
    case PC_PO_MBS:
    case PC_PO_VP:
    case PC_PO_CP:
    case PC_PO_TOP: return train_int_opt(a, c, v);
    case PC_PO_OPT: return pc_acli_parse_optimizer(CMD_TRAIN, v, &o->optimizer);
    case PC_PO_MASTER: o->master_weights = 1; return -1;
    case PC_PO_WDT: return pc_pcli_parse_prec(CMD_TRAIN, "--weight-dtype", v, &o->weight_prec);
    case PC_PO_GDT: return pc_pcli_parse_prec(CMD_TRAIN, "--grad-dtype", v, &o->grad_prec);
    case PC_PO_ADT: return pc_pcli_parse_prec(CMD_TRAIN, "--act-dtype", v, &o->act_prec);
    case PC_PO_BOOK: o->convention = PC_CONV_BOOK; return -1;
    case 'j': a->json = 1; return -1;
    case PC_PO_SVG: a->svg = v; return -1;
    case 'h': train_help(stdout); return PC_EXIT_OK;
    default:
        return pc_cli_usage_error(CMD_TRAIN, "unknown or incomplete option '%s'",
                                  argv[optind - 1]);
    }
}

/* Fills a from the command line; -1 to go on, else the exit code. */
static int train_parse(int argc, char **argv, train_args *a) {
    memset(a, 0, sizeof *a);
    a->calibration = "builtin";
    a->top = 10;
    a->o = pc_plan_train_opts_default();
    optind = 1;
    opterr = 0;
    int c, rc;
    while ((c = pc_cli_getopt(argc, argv, "jh", train_opts, NULL)) != -1)
        if ((rc = train_opt(a, c, optarg, argv)) >= 0) return rc;
    if (optind < argc)
        return pc_cli_usage_error(CMD_TRAIN, "unexpected argument '%s'", argv[optind]);
    if (a->svg) {
        const char *in[3] = {a->model, a->chips_file, a->calibration};
        if ((rc = pc_cli_check_not_input(CMD_TRAIN, "--svg", a->svg, in, 3)) >= 0 ||
            (rc = pc_cli_check_out_file(CMD_TRAIN, "--svg", a->svg)) >= 0)
            return rc;
    }
    return -1;
}

/* Any of --micro, --micro-batch-size, --vp, --cp: the messages name the pins. */
static int train_pinned(const pc_plan_train_opts *o) {
    return o->micro > 0 || o->micro_batch_size > 0 || o->vp > 1 || o->cp > 1;
}

/* ---------------- the request ---------------- */

/* The flags as a plan train query (perfcast/query.h). */
static cJSON *train_request(const train_args *a) {
    static const char *const ax[PC_PAR_COUNT] = {[PC_PAR_PP] = "pp",
                                                 [PC_PAR_DP] = "dp",
                                                 [PC_PAR_FSDP] = "fsdp",
                                                 [PC_PAR_EP] = "ep",
                                                 [PC_PAR_TP] = "tp"};
    const pc_plan_train_opts *o = &a->o;
    cJSON *q = cJSON_CreateObject();
    pc_acli_request_hw(q, a->model, a->preset, a->chip, a->chips_file, a->chips,
                       a->slice);
    if (a->have_batch) cJSON_AddNumberToObject(q, "batch_tokens", o->batch_tokens);
    if (o->seq > 0) cJSON_AddNumberToObject(q, "seq", o->seq);
    if (o->total_tokens > 0) cJSON_AddNumberToObject(q, "tokens", o->total_tokens);
    if (o->price_per_hour >= 0)
        cJSON_AddNumberToObject(q, "price_per_chip_hour", o->price_per_hour);
    if (o->efficiency > 0) cJSON_AddNumberToObject(q, "efficiency", o->efficiency);
    cJSON_AddStringToObject(q, "attention", pc_attn_flops_name(o->attention));
    if (o->remat_mask) { /* the policies of every --remat, as a list */
        cJSON *rl = cJSON_AddArrayToObject(q, "remat");
        char k[48];
        for (int r = 0; r < PC_REMAT_COUNT; r++) {
            if (!(o->remat_mask & (1u << r))) continue;
            if (r == PC_REMAT_TENSORS)
                snprintf(k, sizeof k, "tensors:%.17g", o->remat_tensors);
            else
                snprintf(k, sizeof k, "%s", pc_remat_name((pc_remat)r));
            cJSON_AddItemToArray(rl, cJSON_CreateString(k));
        }
    }
    if (o->zero_mask) {
        cJSON *zl = cJSON_AddArrayToObject(q, "zero");
        for (int z = 1; z <= 3; z++)
            if (o->zero_mask & (1u << z)) cJSON_AddItemToArray(zl, cJSON_CreateNumber(z));
    }
    for (int x = 0; x < PC_PAR_COUNT; x++)
        if (o->fixed[x] > 0 && ax[x]) cJSON_AddNumberToObject(q, ax[x], (double)o->fixed[x]);
    if (o->max_micro > 0) cJSON_AddNumberToObject(q, "max_micro", (double)o->max_micro);
    if (o->micro > 0) cJSON_AddNumberToObject(q, "micro", (double)o->micro);
    if (o->micro_batch_size > 0)
        cJSON_AddNumberToObject(q, "micro_batch_size", (double)o->micro_batch_size);
    if (o->vp > 0) cJSON_AddNumberToObject(q, "vp", (double)o->vp);
    if (o->cp > 0) cJSON_AddNumberToObject(q, "cp", (double)o->cp);
    cJSON_AddStringToObject(q, "optimizer",
                            o->optimizer == PC_OPT_ADAM           ? "adam"
                            : o->optimizer == PC_OPT_SGD_MOMENTUM ? "momentum"
                                                                  : "sgd");
    if (o->master_weights) cJSON_AddTrueToObject(q, "master_weights");
    cJSON_AddStringToObject(q, "weight_dtype", pc_prec_name(o->weight_prec));
    cJSON_AddStringToObject(q, "grad_dtype", pc_prec_name(o->grad_prec));
    cJSON_AddStringToObject(q, "act_dtype", pc_prec_name(o->act_prec));
    cJSON_AddNumberToObject(q, "top", (double)a->top);
    if (o->convention == PC_CONV_BOOK) cJSON_AddTrueToObject(q, "book");
    cJSON_AddStringToObject(q, "calibration", a->calibration);
    return q;
}

/* Runs the query; the document in *doc, or the exit code. The query's checks are the
 * only ones: a failure is its message with the keys spelled as flags (pc_acli_query_fail). */
static int train_query(train_args *a, cJSON **doc) {
    pc_error e;
    pc_error_clear(&e);
    cJSON *req = train_request(a);
    if (pc_acli_query(PC_QUERY_PLAN_TRAIN, req, doc, &e) == PC_OK) return -1;
    const char *files[] = {a->model, a->chips_file, a->calibration};
    return pc_acli_query_fail(CMD_TRAIN, train_opts, files, 3, 0, NULL, &e);
}

/* ---------------- text, from the document ---------------- */

#define N(o, k) pc_acli_jnum(o, k)
#define S(o, k) pc_acli_jstr(o, k)
#define LL(o, k) pc_acli_jint(o, k)
#define G(o, k) cJSON_GetObjectItemCaseSensitive(o, k)

static const char *const PART_KEYS[PC_PART_COUNT] = {
    "compute", "hbm", "fsdp", "tp", "sp", "ep", "pp_p2p", "bubble", "dp", "optimizer"};

static long long axis(const cJSON *p, int x) {
    return LL(G(p, "axes"), pc_par_axis_name((pc_par_axis)x));
}

/* "fsdp 2240 (ZeRO-3) x tensor 4" */
static const char *layout_str(const cJSON *p, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int x = 0; x < PC_PAR_COUNT && used + 40 < cap; x++) {
        if (axis(p, x) <= 1) continue;
        used += (size_t)snprintf(buf + used, cap - used, "%s%s %lld", used ? " x " : "",
                                 pc_par_axis_name((pc_par_axis)x), axis(p, x));
        if (x == PC_PAR_FSDP)
            used += (size_t)snprintf(buf + used, cap - used, " (ZeRO-%lld)", LL(p, "zero"));
    }
    if (!used) snprintf(buf, cap, "one chip");
    return buf;
}

static void print_parts(const cJSON *p) {
    char t[32];
    const cJSON *pt = G(p, "step_parts");
    double step = N(p, "step_time"), bn = 0;
    printf("  step %s =", pc_acli_time(step, t, sizeof t));
    int first = 1;
    for (int i = 0; i < PC_PART_COUNT; i++) {
        double v = N(pt, PART_KEYS[i]);
        if (!strcmp(pc_plan_part_name((pc_plan_part)i), S(p, "bottleneck"))) bn = v;
        if (!(v > 0) || v < 1e-4 * step) continue;
        printf("%s %s %s", first ? "" : " +", pc_plan_part_name((pc_plan_part)i),
               pc_acli_time(v, t, sizeof t));
        first = 0;
    }
    printf("\n  bottleneck: %s (%.0f%% of the step)\n", S(p, "bottleneck"),
           step > 0 ? 100 * bn / step : 0.0);
}

static int priced(const cJSON *p) { return N(p, "calibrated_step_time") > 0; }

/* The calibrated prediction beside the ideal bound (docs/analytic.md "Calibrated planning"). */
static void print_calibrated(const cJSON *doc, const cJSON *p) {
    char t[32], t2[32];
    if (!cJSON_IsTrue(G(doc, "calibrated"))) {
        printf("  (ideal roofline only: --calibration none)\n");
        return;
    }
    if (!priced(p)) {
        printf("  calibrated: not priced for this plan (the batch does not split into whole "
               "sequences per data shard or whole shards per sequence, or the calibrated step is "
               "not finite); ranked by the ideal roofline\n");
        return;
    }
    printf("  calibrated step %s (MFU %.1f%%) against the ideal bound %s: %.2fx; largest exposed "
           "part: %s\n",
           pc_acli_time(N(p, "calibrated_step_time"), t, sizeof t), 100 * N(p, "calibrated_mfu"),
           pc_acli_time(N(p, "step_time"), t2, sizeof t2),
           N(p, "calibrated_step_time") / N(p, "step_time"), S(p, "calibrated_bottleneck"));
}

/* "  MFU 40.0%, 3.94 M tokens/s, 44 days for 15e12 tokens, $39.8M at $4.20/chip-hour" */
static void print_rates(const cJSON *doc, const char *label, double mfu, double tps, double days,
                        double cost) {
    char a1[64], a2[64], a3[64];
    double total = N(doc, "total_tokens"), price = N(doc, "price_per_chip_hour");
    printf("  %sMFU %.1f%%, %s tokens/s", label, 100 * mfu, pc_acli_si(tps, "", a1, sizeof a1));
    if (total > 0) {
        printf(", %.3g days for %s tokens", days, pc_acli_count(total, a3, sizeof a3));
        if (price > 0)
            printf(", %s at $%.2f/chip-hour", money(cost, a2, sizeof a2), price);
        else
            printf(" (no price known for %s: --price-per-chip-hour)", S(doc, "chip"));
    }
    printf("\n");
}

/* Model, slice, batch and the search's size. */
static void train_print_header(const train_args *a, const cJSON *doc) {
    const cJSON *s = G(doc, "search");
    char a1[64], a2[64], a3[64], a4[64], a5[64], t[32];
    double bt = N(doc, "batch_tokens"), seq = N(doc, "seq"), seqs = bt / seq;
    long long chips = LL(doc, "chips");
    printf("%s (%s params) on %lld %s chip%s: slice %s (%s)\n", S(doc, "model"),
           pc_acli_count(N(doc, "params"), a1, sizeof a1), chips, S(doc, "chip"),
           chips == 1 ? "" : "s", S(doc, "slice"), S(doc, "links"));
    if (seqs == floor(seqs))
        printf("batch %s tokens = %s x %.0f", pc_pcli_commas(bt, a1, sizeof a1),
               pc_pcli_commas(seqs, a2, sizeof a2), seq);
    else
        printf("batch %s tokens = %.4g x %.0f", pc_pcli_commas(bt, a1, sizeof a1), seqs, seq);
    if (N(doc, "total_tokens") > 0)
        printf("; %s tokens to train", pc_acli_count(N(doc, "total_tokens"), a4, sizeof a4));
    printf("; attention FLOPs %s; compute at %.2f x %s%s\n", S(doc, "attention"),
           N(doc, "efficiency"), pc_acli_si(N(doc, "peak_flops"), "FLOP/s", a3, sizeof a3),
           !strcmp(S(doc, "convention"), "book") ? "; book collectives (V/W)" : "");
    printf("searched %s layouts (%s do not fit the model's heads/layers/experts%s%s), %s plans "
           "in %s; %s fit in %s of HBM\n",
           pc_pcli_commas(N(s, "layouts"), a1, sizeof a1),
           pc_pcli_commas(N(s, "layouts_not_fitting_model"), a2, sizeof a2),
           train_pinned(&a->o) ? " or the pins" : "",
           N(s, "not_priced") > 0 ? " or cannot be priced" : "",
           pc_pcli_commas(N(s, "plans_evaluated"), a3, sizeof a3),
           pc_acli_time(N(s, "seconds"), t, sizeof t),
           pc_pcli_commas(N(s, "plans_fitting"), a4, sizeof a4),
           pc_pcli_gb(N(doc, "chip_hbm_bytes"), a5, sizeof a5));
}

/* Nothing fits: the smallest footprint found and what to change to fit it. */
static void train_print_how_to_fit(const train_args *a, const cJSON *doc) {
    const pc_plan_train_opts *o = &a->o;
    const cJSON *l = G(doc, "least_memory_plan"), *m = G(l, "memory_per_chip");
    double hbm = N(doc, "chip_hbm_bytes");
    long long micro = LL(l, "micro_batches");
    char a1[64], a2[64], a3[64], a4[64], a5[64], a6[64], lay[160];
    fprintf(stderr,
            "  smallest footprint found: %s per chip (%s, remat %s, %lld micro-batch%s): "
            "weights %s, grads %s, optimizer %s, activations %s, transient %s\n",
            pc_pcli_gb(N(m, "total"), a1, sizeof a1), layout_str(l, lay, sizeof lay), S(l, "remat"),
            micro, micro > 1 ? "es" : "", pc_pcli_gb(N(m, "weights"), a2, sizeof a2),
            pc_pcli_gb(N(m, "grads"), a3, sizeof a3), pc_pcli_gb(N(m, "optimizer"), a4, sizeof a4),
            pc_pcli_gb(N(m, "activations"), a5, sizeof a5),
            pc_pcli_gb(N(m, "transient"), a6, sizeof a6));
    int fixed = 0;
    for (int x = 0; x < PC_PAR_COUNT; x++) fixed |= o->fixed[x] > 0;
    int sharded = axis(l, PC_PAR_TP) * axis(l, PC_PAR_PP) * axis(l, PC_PAR_EP) > 1 ||
                  (axis(l, PC_PAR_FSDP) > 1 && LL(l, "zero") >= 1);
    fprintf(stderr, "  to fit, change one of:\n");
    if (fixed)
        fprintf(stderr, "  - drop or change the fixed --dp/--fsdp/--tp/--pp/--ep sizes "
                        "(replicated weights and optimizer state do not shrink with "
                        "more chips)\n");
    if (sharded) {
        const cJSON *th = G(doc, "thresholds");
        double need = ceil(N(doc, "chips") * N(m, "total") / hbm);
        fprintf(stderr,
                "  - more chips: about %.0f (this layout's sharded state scaled; the "
                "whole batch at once would need %s = %.0f chips' HBM with remat %s)\n",
                need, pc_pcli_gb(N(th, "job_memory"), a1, sizeof a1),
                ceil(N(th, "min_chips_by_memory")), S(l, "remat"));
    }
    double state = N(m, "weights") + N(m, "grads") + N(m, "optimizer");
    double act = N(m, "activations") + N(m, "transient");
    if (act > 0.2 * N(m, "total") && state < hbm)
        fprintf(stderr,
                "  - a smaller --batch-tokens or --seq: activations and transients take "
                "%s per chip\n",
                pc_pcli_gb(act, a1, sizeof a1));
    if (o->remat_mask && !(o->remat_mask & (1u << PC_REMAT_FULL)))
        fprintf(stderr, "  - allow --remat full (save only each layer's input)\n");
    if (o->zero_mask && !(o->zero_mask & (1u << 3)))
        fprintf(stderr, "  - allow --zero 3 (shard weights, gradients and optimizer)\n");
    if (o->max_micro > 0 && o->max_micro < 256)
        fprintf(stderr, "  - allow more micro-batches (--max-micro)\n");
    if (o->optimizer == PC_OPT_ADAM && N(m, "optimizer") > 0.3 * N(m, "total"))
        fprintf(stderr, "  - a lighter optimizer (--optimizer momentum: 4 B/param "
                        "instead of Adam's 8)\n");
}

/* Unpriced layouts and no plan at all, on stderr; returns -1 when there is a best plan to
 * print, else the exit code. */
static int train_print_problems(const train_args *a, const cJSON *doc) {
    const cJSON *s = G(doc, "search");
    int nbest = cJSON_GetArraySize(G(doc, "plans"));
    double unpriced = N(s, "not_priced"), evaluated = N(s, "plans_evaluated");
    int pinned = train_pinned(&a->o);
    char a1[64];
    if (unpriced > 0 && (nbest || evaluated > 0)) {
        fflush(stdout);
        fprintf(stderr, "perfcast plan train: warning: %s layout%s or plan%s not priced: %s\n",
                pc_pcli_commas(unpriced, a1, sizeof a1), unpriced == 1 ? "" : "s",
                unpriced == 1 ? "" : "s", S(s, "not_priced_reason"));
    }
    if (!nbest && !(evaluated > 0) && unpriced > 0) {
        fflush(stdout);
        fprintf(stderr, "perfcast plan train: no layout of %lld chips can be priced: %s\n",
                LL(doc, "chips"), S(s, "not_priced_reason"));
        return PC_EXIT_FAIL;
    }
    if (nbest) return -1;
    fflush(stdout);
    fprintf(stderr, "perfcast plan train: no plan fits in %s of HBM per chip.\n",
            pc_pcli_gb(N(doc, "chip_hbm_bytes"), a1, sizeof a1));
    if (evaluated > 0)
        train_print_how_to_fit(a, doc);
    else
        fprintf(stderr,
                "  no layout of %lld chips fits the model (tensor must divide the "
                "heads, stage the layers, expert the experts)%s: change --chips or "
                "the fixed axes%s\n",
                LL(doc, "chips"),
                pinned ? " and the pins (whole micro-batches of the data shards' sequences; "
                         "--vp needs stage > 1, stage x vp <= layers; --cp must divide the "
                         "data shards)"
                       : "",
                pinned ? " or the pins (--micro, --micro-batch-size, --vp, --cp)" : "");
    return PC_EXIT_FAIL;
}

/* "best: ...": the layout, the step's parts, calibrated and ideal rates, memory per chip,
 * and a note when the batch does not split evenly. */
static void train_print_best(const cJSON *doc, const cJSON *b) {
    const cJSON *m = G(b, "memory_per_chip");
    char a1[64], a2[64], a3[64], a4[64], a5[64], a6[64], lay[160];
    long long micro = LL(b, "micro_batches"), mbs = LL(b, "micro_batch_size");
    long long vp = LL(b, "virtual_stages"), cp = LL(b, "context_parallel");
    printf("\nbest: %s, remat %s, %lld micro-batch%s%s", layout_str(b, lay, sizeof lay),
           S(b, "remat"), micro, micro > 1 ? "es" : "",
           axis(b, PC_PAR_PP) > 1 ? " (pipeline)"
           : micro > 1            ? " (gradient accumulation)"
                                  : "");
    if (mbs > 0) printf(" of %lld sequence%s", mbs, mbs > 1 ? "s" : "");
    if (vp > 1) printf(", interleaved: %lld virtual stages per stage", vp);
    if (cp > 1) printf(", context parallel %lld (of the data shards)", cp);
    printf("\n");
    print_parts(b);
    print_calibrated(doc, b);
    double tps = N(b, "tokens_per_s"), days = N(b, "days"), cost = N(b, "cost_usd");
    if (priced(b)) {
        double k = N(b, "calibrated_step_time") / N(b, "step_time");
        print_rates(doc, "calibrated: ", N(b, "calibrated_mfu"), tps / k, days * k, cost * k);
        print_rates(doc, "ideal bound: ", N(b, "mfu"), tps, days, cost);
    } else {
        print_rates(doc, "", N(b, "mfu"), tps, days, cost);
    }
    double shard = N(b, "tokens_per_data_shard"), bt = N(doc, "batch_tokens");
    printf("  per chip: %.0f tokens of the batch (%s per data shard); memory %s of %s:",
           N(b, "tokens_per_chip"), pc_pcli_commas(shard, a1, sizeof a1),
           pc_pcli_gb(N(m, "total"), a2, sizeof a2),
           pc_pcli_gb(N(doc, "chip_hbm_bytes"), a3, sizeof a3));
    printf(" weights %s, grads %s, optimizer %s,", pc_pcli_gb(N(m, "weights"), a4, sizeof a4),
           pc_pcli_gb(N(m, "grads"), a5, sizeof a5), pc_pcli_gb(N(m, "optimizer"), a6, sizeof a6));
    printf(" activations %s, transient %s\n", pc_pcli_gb(N(m, "activations"), a1, sizeof a1),
           pc_pcli_gb(N(m, "transient"), a3, sizeof a3));
    double shards = (double)(axis(b, PC_PAR_DP) * axis(b, PC_PAR_FSDP) * axis(b, PC_PAR_EP));
    if (shard * shards != bt)
        printf("  note: %s tokens do not split evenly over %.0f data shards: each is padded "
               "to %s tokens (%.2g%% extra work); JAX needs a batch that divides, e.g. %s "
               "tokens\n",
               pc_pcli_commas(bt, a1, sizeof a1), shards, pc_pcli_commas(shard, a2, sizeof a2),
               100 * (shard * shards / bt - 1), pc_pcli_commas(shard * shards, a3, sizeof a3));
}

/* The book's thresholds (scaling_book.md §5, §6) against the best plan. */
static void train_print_thresholds(const cJSON *doc, const cJSON *b) {
    const cJSON *th = G(doc, "thresholds");
    char a1[64];
    long long chips = LL(doc, "chips");
    int axes = (int)LL(th, "slice_axes");
    printf("thresholds (scaling_book.md §5, §6):\n");
    const char *link = !strcmp(S(doc, "chip_kind"), "gpu")
                           ? (chips > LL(doc, "nvlink_domain") ? "W_node (IB)" : "W_nvlink")
                           : "W_ici";
    printf("  alpha = C/%s = %.0f tokens; pure FSDP over all %lld chips (%d %s) is "
           "compute-bound above %.0f tokens/chip, a %s-token batch; this batch has %.0f/chip\n",
           link, N(th, "alpha"), chips, axes, axes == 1 ? "axis" : "axes",
           N(th, "fsdp_critical_tokens_per_chip"),
           pc_acli_si(N(th, "fsdp_critical_batch"), "", a1, sizeof a1), N(b, "tokens_per_chip"));
    printf("  FSDP + TP (M_X=%d, M_Y=%d): above alpha^2/(M_X M_Y F) = %.0f tokens/chip; TP "
           "beyond %.1f-way (M_Y F/alpha) is comms-bound\n",
           (int)LL(th, "m_x"), (int)LL(th, "m_y"), N(th, "fsdp_tp_critical_tokens_per_chip"),
           N(th, "tp_limit"));
    printf("  X_opt = sqrt((B/F)(M_X/M_Y) N) = %.0f-way FSDP", N(th, "fsdp_optimal"));
    if (N(th, "dcn_critical_tokens_per_slice") > 0)
        printf("; DP over DCN needs %.0f tokens per slice", N(th, "dcn_critical_tokens_per_slice"));
    printf("\n  the job needs %s (remat %s) = at least %.0f chips' HBM\n",
           pc_pcli_gb(N(th, "job_memory"), a1, sizeof a1), S(b, "remat"),
           ceil(N(th, "min_chips_by_memory")));
}

/* "top N plans:" and one row per plan. */
static void train_print_top(const cJSON *plans) {
    char a1[64], t[32], tc[32];
    int i = 0;
    printf("\ntop %d plans:\n", cJSON_GetArraySize(plans));
    printf("   # stage  data  fsdp ZeRO expert tensor remat       micro  calibrated   ideal   MFU "
           "mem/chip  bottleneck\n");
    for (const cJSON *p = plans->child; p; p = p->next) {
        long long z = LL(p, "zero");
        printf("%4d %5lld %5lld %5lld %4s %6lld %6lld %-11s %5lld %11s %7s %5.1f%% %8s  %s\n", ++i,
               axis(p, PC_PAR_PP), axis(p, PC_PAR_DP), axis(p, PC_PAR_FSDP),
               axis(p, PC_PAR_FSDP) > 1 ? (z == 1   ? "1"
                                           : z == 2 ? "2"
                                                    : "3")
                                        : "-",
               axis(p, PC_PAR_EP), axis(p, PC_PAR_TP), S(p, "remat"), LL(p, "micro_batches"),
               priced(p) ? pc_acli_time(N(p, "calibrated_step_time"), tc, sizeof tc) : "-",
               pc_acli_time(N(p, "step_time"), t, sizeof t),
               100 * (priced(p) ? N(p, "calibrated_mfu") : N(p, "mfu")),
               pc_pcli_gb(N(G(p, "memory_per_chip"), "total"), a1, sizeof a1),
               priced(p) ? S(p, "calibrated_bottleneck") : S(p, "bottleneck"));
    }
}

/* The text answer; returns the exit code. */
static int train_print_text(const train_args *a, const cJSON *doc) {
    train_print_header(a, doc);
    int rc = train_print_problems(a, doc);
    if (rc >= 0) return rc;
    const cJSON *plans = G(doc, "plans"), *b = plans->child;
    train_print_best(doc, b);
    train_print_thresholds(doc, b);
    train_print_top(plans);
    printf("\nJAX mesh and shardings of the best plan:\n%s", S(b, "jax"));
    return PC_EXIT_OK;
}

/* --json: the whole answer on stdout, what went wrong on stderr; returns the exit code. */
static int train_print_json(const train_args *a, const cJSON *doc) {
    const cJSON *s = G(doc, "search");
    int nbest = cJSON_GetArraySize(G(doc, "plans"));
    char *out = cJSON_Print(doc), a1[64];
    if (out) puts(out);
    free(out);
    if (N(s, "not_priced") > 0)
        fprintf(stderr, "perfcast plan train: %s: %s\n",
                nbest ? "warning: some layouts not priced" : "no plan could be priced",
                S(s, "not_priced_reason"));
    if (!nbest && !(N(s, "plans_evaluated") > 0) && train_pinned(&a->o))
        fprintf(stderr,
                "perfcast plan train: no layout of %lld chips fits the model and the "
                "pins (--micro, --micro-batch-size, --vp, --cp)\n",
                LL(doc, "chips"));
    else if (!nbest)
        fprintf(stderr, "perfcast plan train: no plan fits in %s of HBM per chip\n",
                pc_pcli_gb(N(doc, "chip_hbm_bytes"), a1, sizeof a1));
    return nbest ? PC_EXIT_OK : PC_EXIT_FAIL;
}

/* --svg: the top plans' step breakdown. -1 or an exit code. */
static int train_svg(const train_args *a, const cJSON *doc) {
    pc_plot_plan pl[100];
    char lay[160], title[300];
    int n = 0;
    for (const cJSON *p = G(doc, "plans")->child; p && n < 100; p = p->next, n++) {
        snprintf(pl[n].label, sizeof pl[n].label, "%.50s, %s, m %lld",
                 layout_str(p, lay, sizeof lay), S(p, "remat"), LL(p, "micro_batches"));
        for (int i = 0; i < PC_PART_COUNT; i++) pl[n].part[i] = N(G(p, "step_parts"), PART_KEYS[i]);
        pl[n].step = N(p, "step_time");
        pl[n].calibrated = priced(p) ? N(p, "calibrated_step_time") : 0;
    }
    snprintf(title, sizeof title, "plan train: %s on %s %s, the top %d plans' step time",
             S(doc, "model"), S(doc, "chip"), S(doc, "slice"), n);
    return pc_plot_train_plans(a->svg, title, pl, n);
}

int pc_pcli_train(int argc, char **argv) {
    train_args a;
    cJSON *doc = NULL;
    int rc;
    if ((rc = train_parse(argc, argv, &a)) >= 0 || (rc = train_query(&a, &doc)) >= 0) return rc;
    for (const cJSON *w = G(doc, "warnings")->child; w; w = w->next)
        fprintf(stderr, "perfcast %s: warning: %s\n", CMD_TRAIN, w->valuestring);
    cJSON *reason = G(G(doc, "search"), "not_priced_reason");
    if (cJSON_IsString(reason)) { /* the library's wording in flag names */
        char m[256];
        snprintf(m, sizeof m, "%s", reason->valuestring);
        pc_cli_flags(m, sizeof m);
        cJSON_SetValuestring(reason, m);
    }
    int nbest = cJSON_GetArraySize(G(doc, "plans"));
    int wrote = a.svg && nbest > 0;
    rc = -1;
    if (wrote) wrote = (rc = train_svg(&a, doc)) < 0;
    if (rc < 0) rc = a.json ? train_print_json(&a, doc) : train_print_text(&a, doc);
    if (wrote && !a.json)
        printf("\nwrote %s\n", a.svg);
    else if (a.svg && nbest == 0)
        fprintf(stderr, "no plan fits: %s not written\n", a.svg);
    cJSON_Delete(doc);
    return rc;
}
