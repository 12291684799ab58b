/* perfcast plan train: parallelism plans for training (issue #6). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan_cli.h"
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

/* ---------------- one plan: strings, JSON, parts and rates ---------------- */

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
static void jax_snippet(const pc_train_plan *p, const pc_tfm_cfg *m, double seqs, double rk,
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
        if (parse_remat_list(v, &o->remat_mask, &o->remat_tensors))
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

/* ---------------- setup and search ---------------- */

/* What plan train works on once the command line checks out. */
typedef struct train_job {
    pc_tfm_cfg m;
    pc_calib *cal;
    pc_chipdb *db;
    const pc_chip *chip;
    pc_mesh slice;
} train_job;

static void train_job_free(train_job *j) {
    pc_chipdb_free(j->db);
    pc_calib_free(j->cal);
}

/* The batch must split into the pinned micro-batches and hold a sequence. */
static int train_check_batch(const pc_plan_train_opts *o) {
    if (o->micro > 0 && o->micro_batch_size > 0) {
        double seqs = o->batch_tokens / o->seq;
        double per = (double)o->micro * (double)o->micro_batch_size;
        if (seqs != floor(seqs) || fmod(seqs, per) != 0)
            return pc_cli_usage_error(CMD_TRAIN,
                                      "--micro %lld x --micro-batch-size %lld = %.0f sequences "
                                      "per data shard does not divide the batch's %.6g sequences",
                                      (long long)o->micro, (long long)o->micro_batch_size, per,
                                      seqs);
    }
    if (o->batch_tokens < o->seq)
        return pc_cli_usage_error(CMD_TRAIN,
                                  "--batch-tokens %.0f is less than one %.0f-token sequence; "
                                  "raise it or lower --seq",
                                  o->batch_tokens, o->seq);
    return -1;
}

/* Model, calibration, chip and slice; -1 to go on (free j), else the exit code. */
static int train_setup(train_args *a, train_job *j) {
    pc_plan_train_opts *o = &a->o;
    int rc;
    memset(j, 0, sizeof *j);
    if (o->vp > 1 && o->fixed[PC_PAR_PP] == 1)
        return pc_cli_usage_error(CMD_TRAIN,
                                  "--vp %lld needs a pipeline: --pp 1 has no stages to interleave",
                                  (long long)o->vp);
    if ((rc = pc_pcli_load_model(CMD_TRAIN, a->model, a->preset, &j->m)) >= 0) return rc;
    if (!a->chip) return pc_cli_usage_error(CMD_TRAIN, "give --chip (e.g. --chip v5p)");
    if (!a->have_batch)
        return pc_cli_usage_error(CMD_TRAIN, "give --batch-tokens (e.g. 4Mi = 1024 x 4096 tokens)");
    pc_error ce;
    pc_error_clear(&ce);
    if (pc_calib_from_spec(a->calibration, &j->cal, &ce)) return pc_cli_fail(&ce);
    o->calibration = pc_calib_is_ideal(j->cal) ? NULL : j->cal;
    if ((rc = pc_acli_open_chip(CMD_TRAIN, a->chips_file, a->chip, &j->db, &j->chip)) >= 0 ||
        (rc = pc_pcli_resolve_slice(CMD_TRAIN, j->chip, a->chips, a->slice, &j->slice)) >= 0 ||
        (rc = train_check_batch(o)) >= 0) {
        train_job_free(j);
        return rc;
    }
    return -1;
}

/* The search's answer. */
typedef struct train_result {
    pc_train_plan best[100];
    pc_train_search s;
    double secs;   /* the search's wall time */
    double params; /* the model's parameters */
    double seqs;   /* sequences per batch */
    char slice[96];
} train_result;

/* Runs the search; -1 to go on, else the exit code. */
static int train_search(const train_args *a, const train_job *j, train_result *r) {
    pc_error e;
    pc_error_clear(&e);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pc_status st =
        pc_plan_train(j->chip, &j->m, &j->slice, &a->o, r->best, (int)a->top, &r->s, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (st) return st == PC_ERR_ARG ? pc_cli_usage_error(CMD_TRAIN, "%s", e.msg) : pc_cli_fail(&e);
    pc_cli_flags(r->s.unpriced_reason, sizeof r->s.unpriced_reason);
    pc_param_counts pcnt;
    pc_tfm_params(&j->m, &pcnt);
    r->params = pcnt.total;
    r->seqs = a->o.batch_tokens / a->o.seq;
    pc_pcli_mesh_str(&j->slice, r->slice, sizeof r->slice);
    return -1;
}

/* ---------------- JSON ---------------- */

static cJSON *search_json(const pc_train_search *s, double secs) {
    cJSON *js = cJSON_CreateObject();
    cJSON_AddNumberToObject(js, "layouts", (double)s->layouts);
    cJSON_AddNumberToObject(js, "layouts_not_fitting_model", (double)s->unmapped);
    cJSON_AddNumberToObject(js, "plans_evaluated", (double)s->evaluated);
    cJSON_AddNumberToObject(js, "plans_fitting", (double)s->fitting);
    cJSON_AddNumberToObject(js, "not_priced", (double)s->unpriced);
    if (s->unpriced) cJSON_AddStringToObject(js, "not_priced_reason", s->unpriced_reason);
    cJSON_AddNumberToObject(js, "seconds", secs);
    return js;
}

static cJSON *thresholds_json(const pc_train_thresholds *th) {
    cJSON *jt = cJSON_CreateObject();
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
    return jt;
}

/* The plans found (the best with its JAX snippet), or the least-memory one. */
static void plans_json(cJSON *j, const train_args *a, const train_job *jb,
                       const train_result *r) {
    cJSON *jp = cJSON_AddArrayToObject(j, "plans");
    for (int i = 0; i < r->s.nbest; i++) {
        cJSON *pj = plan_json(&r->best[i], a->o.remat_tensors);
        calibrated_json(pj, &r->best[i]);
        if (i == 0) {
            char snip[4096];
            jax_snippet(&r->best[0], &jb->m, r->seqs, a->o.remat_tensors, snip, sizeof snip);
            cJSON_AddStringToObject(pj, "jax", snip);
        }
        cJSON_AddItemToArray(jp, pj);
    }
    if (!r->s.nbest && r->s.evaluated)
        cJSON_AddItemToObject(j, "least_memory_plan",
                              plan_json(&r->s.least_memory, a->o.remat_tensors));
    else
        cJSON_AddNullToObject(j, "least_memory_plan"); /* one shape (docs/json.md) */
}

/* --json: the whole answer on stdout, what went wrong on stderr; returns the
 * exit code. */
static int train_print_json(const train_args *a, const train_job *jb, const train_result *r) {
    const pc_plan_train_opts *o = &a->o;
    const pc_train_search *s = &r->s;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", jb->m.name);
    cJSON_AddNumberToObject(j, "params", r->params);
    cJSON_AddStringToObject(j, "chip", jb->chip->name);
    cJSON_AddNumberToObject(j, "chips", (double)s->chips);
    cJSON_AddStringToObject(j, "slice", r->slice);
    cJSON_AddNumberToObject(j, "batch_tokens", o->batch_tokens);
    cJSON_AddNumberToObject(j, "seq", o->seq);
    cJSON_AddNumberToObject(j, "total_tokens", o->total_tokens);
    cJSON_AddNumberToObject(j, "efficiency", s->efficiency);
    cJSON_AddStringToObject(j, "calibration", pc_calib_origin(jb->cal));
    cJSON_AddNumberToObject(j, "price_per_chip_hour", s->price_per_hour);
    cJSON_AddStringToObject(j, "attention", pc_attn_flops_name(o->attention));
    cJSON_AddStringToObject(j, "convention", pc_coll_conv_name(o->convention));
    cJSON_AddItemToObject(j, "search", search_json(s, r->secs));
    cJSON_AddItemToObject(j, "thresholds", thresholds_json(&s->thr));
    plans_json(j, a, jb, r);
    char *out = cJSON_Print(j);
    if (out) puts(out);
    free(out);
    cJSON_Delete(j);
    char a1[64];
    if (s->unpriced)
        fprintf(stderr, "perfcast plan train: %s: %s\n",
                s->nbest ? "warning: some layouts not priced" : "no plan could be priced",
                s->unpriced_reason);
    if (!s->nbest && !s->evaluated && train_pinned(o))
        fprintf(stderr, "perfcast plan train: no layout of %lld chips fits the model and the "
                        "pins (--micro, --micro-batch-size, --vp, --cp)\n",
                (long long)s->chips);
    else if (!s->nbest)
        fprintf(stderr, "perfcast plan train: no plan fits in %s of HBM per chip\n",
                pc_pcli_gb(jb->chip->hbm_bytes, a1, sizeof a1));
    return s->nbest ? PC_EXIT_OK : PC_EXIT_FAIL;
}

/* ---------------- text ---------------- */

/* Model, slice, batch and the search's size. */
static void train_print_header(const train_args *a, const train_job *j, const train_result *r) {
    const pc_plan_train_opts *o = &a->o;
    const pc_train_search *s = &r->s;
    const pc_chip *chip = j->chip;
    char a1[64], a2[64], a3[64], a4[64], a5[64], t[32];
    printf("%s (%s params) on %lld %s chip%s: slice %s (%s)\n", j->m.name,
           pc_acli_count(r->params, a1, sizeof a1), (long long)s->chips, chip->name,
           s->chips == 1 ? "" : "s", r->slice, wrap_str(chip, &j->slice));
    if (r->seqs == floor(r->seqs))
        printf("batch %s tokens = %s x %.0f", pc_pcli_commas(o->batch_tokens, a1, sizeof a1),
               pc_pcli_commas(r->seqs, a2, sizeof a2), o->seq);
    else
        printf("batch %s tokens = %.4g x %.0f", pc_pcli_commas(o->batch_tokens, a1, sizeof a1),
               r->seqs, o->seq);
    if (o->total_tokens > 0)
        printf("; %s tokens to train", pc_acli_count(o->total_tokens, a4, sizeof a4));
    printf("; attention FLOPs %s; compute at %.2f x %s%s\n", pc_attn_flops_name(o->attention),
           s->efficiency, pc_acli_si(pc_chip_flops(chip, o->act_prec), "FLOP/s", a3, sizeof a3),
           o->convention == PC_CONV_BOOK ? "; book collectives (V/W)" : "");
    printf("searched %s layouts (%s do not fit the model's heads/layers/experts%s%s), %s plans "
           "in %s; %s fit in %s of HBM\n",
           pc_pcli_commas((double)s->layouts, a1, sizeof a1),
           pc_pcli_commas((double)s->unmapped, a2, sizeof a2),
           train_pinned(o) ? " or the pins" : "", s->unpriced ? " or cannot be priced" : "",
           pc_pcli_commas((double)s->evaluated, a3, sizeof a3),
           pc_acli_time(r->secs, t, sizeof t), pc_pcli_commas((double)s->fitting, a4, sizeof a4),
           pc_pcli_gb(chip->hbm_bytes, a5, sizeof a5));
}

/* Nothing fits: the smallest footprint found and what to change to fit it. */
static void train_print_how_to_fit(const train_args *a, const train_job *j,
                                   const train_result *r) {
    const pc_plan_train_opts *o = &a->o;
    const pc_train_plan *l = &r->s.least_memory;
    const pc_chip *chip = j->chip;
    char a1[64], a2[64], a3[64], a4[64], a5[64], a6[64], lay[160], rm[32];
    fprintf(stderr,
            "  smallest footprint found: %s per chip (%s, remat %s, %lld micro-batch%s): "
            "weights %s, grads %s, optimizer %s, activations %s, transient %s\n",
            pc_pcli_gb(l->mem_total, a1, sizeof a1), layout_str(l, lay, sizeof lay),
            remat_str(l->remat, o->remat_tensors, rm, sizeof rm), (long long)l->micro,
            l->micro > 1 ? "es" : "", pc_pcli_gb(l->mem_weights, a2, sizeof a2),
            pc_pcli_gb(l->mem_grads, a3, sizeof a3), pc_pcli_gb(l->mem_opt, a4, sizeof a4),
            pc_pcli_gb(l->mem_act, a5, sizeof a5), pc_pcli_gb(l->mem_transient, a6, sizeof a6));
    int fixed = 0;
    for (int x = 0; x < PC_PAR_COUNT; x++) fixed |= o->fixed[x] > 0;
    int sharded = l->axis[PC_PAR_TP] * l->axis[PC_PAR_PP] * l->axis[PC_PAR_EP] > 1 ||
                  (l->axis[PC_PAR_FSDP] > 1 && l->zero >= 1);
    fprintf(stderr, "  to fit, change one of:\n");
    if (fixed)
        fprintf(stderr, "  - drop or change the fixed --dp/--fsdp/--tp/--pp/--ep sizes "
                        "(replicated weights and optimizer state do not shrink with "
                        "more chips)\n");
    if (sharded) {
        const pc_train_thresholds *th = &r->s.thr;
        double need = ceil((double)r->s.chips * l->mem_total / chip->hbm_bytes);
        fprintf(stderr,
                "  - more chips: about %.0f (this layout's sharded state scaled; the "
                "whole batch at once would need %s = %.0f chips' HBM with remat %s)\n",
                need, pc_pcli_gb(th->job_memory, a1, sizeof a1), ceil(th->min_chips_memory),
                remat_str(l->remat, o->remat_tensors, rm, sizeof rm));
    }
    double state = l->mem_weights + l->mem_grads + l->mem_opt;
    if (l->mem_act + l->mem_transient > 0.2 * l->mem_total && state < chip->hbm_bytes)
        fprintf(stderr,
                "  - a smaller --batch-tokens or --seq: activations and transients take "
                "%s per chip\n",
                pc_pcli_gb(l->mem_act + l->mem_transient, a1, sizeof a1));
    if (o->remat_mask && !(o->remat_mask & (1u << PC_REMAT_FULL)))
        fprintf(stderr, "  - allow --remat full (save only each layer's input)\n");
    if (o->zero_mask && !(o->zero_mask & (1u << 3)))
        fprintf(stderr, "  - allow --zero 3 (shard weights, gradients and optimizer)\n");
    if (o->max_micro > 0 && o->max_micro < 256)
        fprintf(stderr, "  - allow more micro-batches (--max-micro)\n");
    if (o->optimizer == PC_OPT_ADAM && l->mem_opt > 0.3 * l->mem_total)
        fprintf(stderr, "  - a lighter optimizer (--optimizer momentum: 4 B/param "
                        "instead of Adam's 8)\n");
}

/* Unpriced layouts and no plan at all, on stderr; returns -1 when there is a
 * best plan to print, else the exit code. */
static int train_print_problems(const train_args *a, const train_job *j, const train_result *r) {
    const pc_train_search *s = &r->s;
    int pinned = train_pinned(&a->o);
    char a1[64];
    if (s->unpriced && (s->nbest || s->evaluated)) {
        fflush(stdout);
        fprintf(stderr, "perfcast plan train: warning: %s layout%s or plan%s not priced: %s\n",
                pc_pcli_commas((double)s->unpriced, a1, sizeof a1), s->unpriced == 1 ? "" : "s",
                s->unpriced == 1 ? "" : "s", s->unpriced_reason);
    }
    if (!s->nbest && !s->evaluated && s->unpriced) {
        fflush(stdout);
        fprintf(stderr, "perfcast plan train: no layout of %lld chips can be priced: %s\n",
                (long long)s->chips, s->unpriced_reason);
        return PC_EXIT_FAIL;
    }
    if (s->nbest) return -1;
    fflush(stdout);
    fprintf(stderr, "perfcast plan train: no plan fits in %s of HBM per chip.\n",
            pc_pcli_gb(j->chip->hbm_bytes, a1, sizeof a1));
    if (s->evaluated)
        train_print_how_to_fit(a, j, r);
    else
        fprintf(stderr,
                "  no layout of %lld chips fits the model (tensor must divide the "
                "heads, stage the layers, expert the experts)%s: change --chips or "
                "the fixed axes%s\n",
                (long long)s->chips,
                pinned ? " and the pins (whole micro-batches of the data shards' sequences; "
                         "--vp needs stage > 1, stage x vp <= layers; --cp must divide the "
                         "data shards)"
                       : "",
                pinned ? " or the pins (--micro, --micro-batch-size, --vp, --cp)" : "");
    return PC_EXIT_FAIL;
}

/* "best: ...": the layout, the step's parts, calibrated and ideal rates,
 * memory per chip, and a note when the batch does not split evenly. */
static void train_print_best(const train_args *a, const train_job *j, const train_result *r) {
    const pc_plan_train_opts *o = &a->o;
    const pc_train_plan *b = &r->best[0];
    const pc_chip *chip = j->chip;
    char a1[64], a2[64], a3[64], a4[64], a5[64], a6[64], lay[160], rm[32];
    printf("\nbest: %s, remat %s, %lld micro-batch%s%s", layout_str(b, lay, sizeof lay),
           remat_str(b->remat, o->remat_tensors, rm, sizeof rm), (long long)b->micro,
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
    print_calibrated(b, o);
    if (b->calibrated_step > 0) {
        double k = b->calibrated_step / b->step_time;
        print_rates("calibrated: ", b->calibrated_mfu, b->tokens_per_s / k, b->days * k,
                    b->cost * k, o, &r->s, chip);
        print_rates("ideal bound: ", b->mfu, b->tokens_per_s, b->days, b->cost, o, &r->s, chip);
    } else {
        print_rates("", b->mfu, b->tokens_per_s, b->days, b->cost, o, &r->s, chip);
    }
    printf("  per chip: %.0f tokens of the batch (%s per data shard); memory %s of %s:",
           b->tokens_per_chip, pc_pcli_commas(b->tokens_per_shard, a1, sizeof a1),
           pc_pcli_gb(b->mem_total, a2, sizeof a2), pc_pcli_gb(chip->hbm_bytes, a3, sizeof a3));
    printf(" weights %s, grads %s, optimizer %s,", pc_pcli_gb(b->mem_weights, a4, sizeof a4),
           pc_pcli_gb(b->mem_grads, a5, sizeof a5), pc_pcli_gb(b->mem_opt, a6, sizeof a6));
    printf(" activations %s, transient %s\n", pc_pcli_gb(b->mem_act, a1, sizeof a1),
           pc_pcli_gb(b->mem_transient, a3, sizeof a3));
    double shards = (double)(b->axis[PC_PAR_DP] * b->axis[PC_PAR_FSDP] * b->axis[PC_PAR_EP]);
    if (b->tokens_per_shard * shards != o->batch_tokens)
        printf("  note: %s tokens do not split evenly over %.0f data shards: each is padded "
               "to %s tokens (%.2g%% extra work); JAX needs a batch that divides, e.g. %s "
               "tokens\n",
               pc_pcli_commas(o->batch_tokens, a1, sizeof a1), shards,
               pc_pcli_commas(b->tokens_per_shard, a2, sizeof a2),
               100 * (b->tokens_per_shard * shards / o->batch_tokens - 1),
               pc_pcli_commas(b->tokens_per_shard * shards, a3, sizeof a3));
}

/* The book's thresholds (scaling_book.md §5, §6) against the best plan. */
static void train_print_thresholds(const train_args *a, const train_job *j,
                                   const train_result *r) {
    const pc_train_thresholds *th = &r->s.thr;
    const pc_train_plan *b = &r->best[0];
    const pc_chip *chip = j->chip;
    char a1[64], rm[32];
    printf("thresholds (scaling_book.md §5, §6):\n");
    const char *link = chip->kind == PC_CHIP_GPU
                           ? (r->s.chips > chip->nvlink_domain ? "W_node (IB)" : "W_nvlink")
                           : "W_ici";
    printf("  alpha = C/%s = %.0f tokens; pure FSDP over all %lld chips (%d %s) is "
           "compute-bound above %.0f tokens/chip, a %s-token batch; this batch has %.0f/chip\n",
           link, th->alpha, (long long)r->s.chips, th->slice_axes,
           th->slice_axes == 1 ? "axis" : "axes", th->fsdp_per_chip,
           pc_acli_si(th->fsdp_pod_batch, "", a1, sizeof a1), b->tokens_per_chip);
    printf("  FSDP + TP (M_X=%d, M_Y=%d): above alpha^2/(M_X M_Y F) = %.0f tokens/chip; TP "
           "beyond %.1f-way (M_Y F/alpha) is comms-bound\n",
           th->m_x, th->m_y, th->mixed_per_chip, th->tp_limit);
    printf("  X_opt = sqrt((B/F)(M_X/M_Y) N) = %.0f-way FSDP", th->fsdp_opt);
    if (th->dcn_per_slice > 0)
        printf("; DP over DCN needs %.0f tokens per slice", th->dcn_per_slice);
    printf("\n  the job needs %s (remat %s) = at least %.0f chips' HBM\n",
           pc_pcli_gb(th->job_memory, a1, sizeof a1),
           remat_str(b->remat, a->o.remat_tensors, rm, sizeof rm), ceil(th->min_chips_memory));
}

/* "top N plans:" and one row per plan. */
static void train_print_top(const train_args *a, const train_result *r) {
    char a1[64], rm[32], t[32], tc[32];
    printf("\ntop %d plans:\n", r->s.nbest);
    printf("   # stage  data  fsdp ZeRO expert tensor remat       micro  calibrated   ideal   MFU "
           "mem/chip  bottleneck\n");
    for (int i = 0; i < r->s.nbest; i++) {
        const pc_train_plan *p = &r->best[i];
        printf("%4d %5lld %5lld %5lld %4s %6lld %6lld %-11s %5lld %11s %7s %5.1f%% %8s  %s\n",
               i + 1,
               (long long)p->axis[PC_PAR_PP], (long long)p->axis[PC_PAR_DP],
               (long long)p->axis[PC_PAR_FSDP],
               p->axis[PC_PAR_FSDP] > 1 ? (p->zero == 1   ? "1"
                                           : p->zero == 2 ? "2"
                                                          : "3")
                                        : "-",
               (long long)p->axis[PC_PAR_EP], (long long)p->axis[PC_PAR_TP],
               remat_str(p->remat, a->o.remat_tensors, rm, sizeof rm), (long long)p->micro,
               p->calibrated_step > 0 ? pc_acli_time(p->calibrated_step, tc, sizeof tc) : "-",
               pc_acli_time(p->step_time, t, sizeof t),
               100 * (p->calibrated_step > 0 ? p->calibrated_mfu : p->mfu),
               pc_pcli_gb(p->mem_total, a1, sizeof a1),
               p->calibrated_step > 0 ? pc_step_part_name((pc_step_part)p->calibrated_bottleneck)
                                      : pc_plan_part_name(p->bottleneck));
    }
}

/* The text answer; returns the exit code. */
static int train_print_text(const train_args *a, const train_job *j, const train_result *r) {
    train_print_header(a, j, r);
    int rc = train_print_problems(a, j, r);
    if (rc >= 0) return rc;
    train_print_best(a, j, r);
    train_print_thresholds(a, j, r);
    train_print_top(a, r);
    char snip[4096];
    jax_snippet(&r->best[0], &j->m, r->seqs, a->o.remat_tensors, snip, sizeof snip);
    printf("\nJAX mesh and shardings of the best plan:\n%s", snip);
    return PC_EXIT_OK;
}

/* --svg: the top plans' step breakdown. -1 or an exit code. */
static int train_svg(const train_args *a, const train_job *j, const train_result *r) {
    pc_plot_plan pl[100];
    char rm[32], lay[160], title[300];
    int n = r->s.nbest < 100 ? r->s.nbest : 100;
    for (int i = 0; i < n; i++) {
        const pc_train_plan *p = &r->best[i];
        snprintf(pl[i].label, sizeof pl[i].label, "%.50s, %s, m %lld",
                 layout_str(p, lay, sizeof lay), remat_str(p->remat, a->o.remat_tensors, rm,
                                                           sizeof rm),
                 (long long)p->micro);
        memcpy(pl[i].part, p->part, sizeof pl[i].part);
        pl[i].step = p->step_time;
        pl[i].calibrated = p->calibrated_step > 0 ? p->calibrated_step : 0;
    }
    snprintf(title, sizeof title, "plan train: %s on %s %s, the top %d plans' step time",
             j->m.name, j->chip->name, r->slice, n);
    return pc_plot_train_plans(a->svg, title, pl, n);
}

int pc_pcli_train(int argc, char **argv) {
    train_args a;
    train_job j;
    train_result r;
    int rc;
    if ((rc = train_parse(argc, argv, &a)) >= 0 || (rc = train_setup(&a, &j)) >= 0) return rc;
    rc = train_search(&a, &j, &r);
    int wrote = rc < 0 && a.svg && r.s.nbest > 0;
    if (wrote) wrote = (rc = train_svg(&a, &j, &r)) < 0;
    if (rc < 0) rc = a.json ? train_print_json(&a, &j, &r) : train_print_text(&a, &j, &r);
    if (wrote && !a.json) printf("\nwrote %s\n", a.svg);
    else if (a.svg && r.s.nbest == 0) fprintf(stderr, "no plan fits: %s not written\n", a.svg);
    train_job_free(&j);
    return rc;
}
