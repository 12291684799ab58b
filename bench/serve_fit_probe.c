/*
 * serve_fit_probe: evaluates (and hand-fits) the calibrated serving model
 * (src/analytic/serve_model.c) on ../shared/calibration/serving_runs.json
 * with its own reader and fit: the stand-in used before pc_runs_load and
 * pc_calib_fit landed (`perfcast validate|calibrate --kind serve` supersede
 * it; kept to reproduce docs/analytic.md's numbers and to try variants).
 *
 *   serve_fit_probe RUNS.json [--fit] [--ideal] [--set name=value ...] [--list]
 *                   [--no-fold]
 *
 * It reads the serving rows itself (a subset of the README's schema, cJSON;
 * --kv-fp4w / --kv-fp8w set the KV type the rows leave null). --fit: coordinate search of the serve.*
 * coefficients on the Huber loss of log error (threshold 0.1) plus the
 * priors' pull (the lead's pc_calib_fit objective, approximately).
 * Llama 4 Maverick (MoE on every 2nd layer) is folded into an all-MoE model
 * with E / 2 experts plus the shared expert (same total and active
 * parameters) unless --no-fold.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/calib_internal.h"

static const double k_prior[PC_COEF_COUNT] = {
#define X(id, name, ideal, prior, lo, hi, sigma, doc) prior,
#include "analytic/calib_coefs.h"
#undef X
};
static const double k_lo[PC_COEF_COUNT] = {
#define X(id, name, ideal, prior, lo, hi, sigma, doc) lo,
#include "analytic/calib_coefs.h"
#undef X
};
static const double k_hi[PC_COEF_COUNT] = {
#define X(id, name, ideal, prior, lo, hi, sigma, doc) hi,
#include "analytic/calib_coefs.h"
#undef X
};
static const double k_sigma[PC_COEF_COUNT] = {
#define X(id, name, ideal, prior, lo, hi, sigma, doc) sigma,
#include "analytic/calib_coefs.h"
#undef X
};
static const char *const k_name[PC_COEF_COUNT] = {
#define X(id, name, ideal, prior, lo, hi, sigma, doc) name,
#include "analytic/calib_coefs.h"
#undef X
};


static double num(const cJSON *o, const char *k) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(it) ? it->valuedouble : 0;
}
static const char *str(const cJSON *o, const char *k) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(it) ? it->valuestring : "";
}

static pc_prec prec_of(const char *s, int *block) {
    if (!strcmp(s, "nvfp4")) return *block = 1, PC_PREC_FP4;
    if (!strcmp(s, "mxfp8")) return *block = 1, PC_PREC_FP8;
    int p = pc_prec_parse(s);
    return p >= 0 ? (pc_prec)p : PC_PREC_BF16;
}

static int g_kv_fp4w = -1, g_kv_fp8w = -1; /* --kv-fp4w / --kv-fp8w: KV type when not stated */

static int to_run(const cJSON *o, int fold, pc_run *r) {
    pc_run_serve_init(r);
    snprintf(r->id, sizeof r->id, "%s", str(o, "id"));
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "model");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "hardware");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "parallelism");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "workload");
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "measured");
    pc_model_cfg *c = &r->model;
    snprintf(c->name, sizeof c->name, "%s", str(m, "name"));
    snprintf(c->arch, sizeof c->arch, "%s", str(m, "model_type"));
    c->layers = (int64_t)num(m, "num_hidden_layers");
    c->d_model = (int64_t)num(m, "hidden_size");
    c->heads = (int64_t)num(m, "num_attention_heads");
    c->kv_heads = (int64_t)num(m, "num_key_value_heads");
    c->head_dim = (int64_t)num(m, "head_dim");
    c->d_ff = (int64_t)num(m, "intermediate_size");
    c->vocab = (int64_t)num(m, "vocab_size");
    c->gated = 1;
    c->qk_norm = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "qk_norm"));
    c->experts = (int64_t)num(m, "num_local_experts");
    if (c->experts > 0) {
        c->experts_per_token = (int64_t)num(m, "num_experts_per_tok");
        c->d_ff_expert = (int64_t)num(m, "moe_intermediate_size");
        c->shared_experts = (int64_t)num(m, "n_shared_experts");
        if (c->shared_experts) c->d_ff_shared = c->d_ff;
        int64_t step = (int64_t)num(m, "interleave_moe_layer_step");
        if (fold && step > 1) c->experts /= step;
    }
    pc_error err;
    if (pc_model_check(c, &err)) {
        fprintf(stderr, "%s: %s\n", r->id, err.msg);
        return -1;
    }
    snprintf(r->chip_name, sizeof r->chip_name, "%s", str(h, "chip"));
    r->chips = (int64_t)num(h, "chips");
    r->tp = num(p, "tp") > 0 ? (int64_t)num(p, "tp") : 1;
    r->pp = num(p, "pp") > 0 ? (int64_t)num(p, "pp") : 1;
    r->ep = num(p, "ep") > 0 ? (int64_t)num(p, "ep") : 1;
    r->attention_dp = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "attention_dp"));
    r->input_len = num(w, "input_len");
    r->output_len = num(w, "output_len");
    r->batch = num(w, "batch");
    r->concurrency = num(w, "concurrency");
    r->prec = prec_of(str(w, "precision"), &r->block_scaled);
    r->weight_prec = prec_of(str(w, "weight_dtype"), &r->block_scaled);
    if (str(w, "kv_dtype")[0]) r->kv_prec = prec_of(str(w, "kv_dtype"), &r->block_scaled);
    if (r->kv_prec == PC_PREC_COUNT && r->weight_prec == PC_PREC_FP4 && g_kv_fp4w >= 0)
        r->kv_prec = (pc_prec)g_kv_fp4w;
    if (r->kv_prec == PC_PREC_COUNT && r->weight_prec == PC_PREC_FP8 && g_kv_fp8w >= 0)
        r->kv_prec = (pc_prec)g_kv_fp8w;
    r->measured_value = num(ms, "value");
    r->output_tokens_per_s = r->measured_value;
    return 0;
}

typedef struct probe {
    pc_run *runs;
    const pc_chip **chips;
    int n;
} probe;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median / mean / max |error| of the expressed runs; loss for the fit. */
static double evaluate(const probe *pr, const pc_calib *cal, int list, double *med, double *mean,
                       double *mx, int *nexp) {
    static double errs[4096];
    int n = 0;
    double loss = 0, sum = 0, worst = 0;
    for (int i = 0; i < pr->n; i++) {
        pc_run_pred o;
        pc_error err;
        if (pc_serve_predict(&pr->runs[i], pr->chips[i], cal, &o, &err)) {
            fprintf(stderr, "%s: %s\n", pr->runs[i].id, err.msg);
            continue;
        }
        if (list)
            printf("%-52s %s meas %8.0f pred %8.0f err %+6.1f%% ideal %8.0f B %6.0f tpot %.4f%s%s\n",
                   pr->runs[i].id, o.expressed ? "ok" : "--", o.measured, o.predicted,
                   100 * o.error, o.ideal, o.batch, o.tpot_s, o.expressed ? "" : "  ", o.why);
        if (!o.expressed) {
            loss += 1; /* an unexpressed run costs like a large error */
            continue;
        }
        double le = log(o.predicted / o.measured), a = fabs(le);
        loss += a <= 0.1 ? 0.5 * le * le : 0.1 * (a - 0.05);
        errs[n++] = fabs(o.error);
        sum += fabs(o.error);
        if (fabs(o.error) > worst) worst = fabs(o.error);
    }
    qsort(errs, (size_t)n, sizeof errs[0], cmp_d);
    *med = n ? (n % 2 ? errs[n / 2] : 0.5 * (errs[n / 2 - 1] + errs[n / 2])) : 0;
    *mean = n ? sum / n : 0;
    *mx = worst;
    *nexp = n;
    loss /= pr->n;
    if (cal && !cal->ideal)
        for (int i = 0; i < PC_COEF_COUNT; i++)
            if (!strncmp(k_name[i], "serve.", 6)) {
                double a = k_prior[i] > 0 && cal->c[i] > 0 ? log(cal->c[i] / k_prior[i]) / k_sigma[i]
                                                          : (cal->c[i] - k_prior[i]) / 1e-3;
                loss += 0.5 * a * a / pr->n;
            }
    return loss;
}

static void fit(const probe *pr, pc_calib *cal) {
    double med, mean, mx;
    int ne;
    double best = evaluate(pr, cal, 0, &med, &mean, &mx, &ne);
    for (int sweep = 0; sweep < 6; sweep++) {
        for (int i = 0; i < PC_COEF_COUNT; i++) {
            if (strncmp(k_name[i], "serve.", 6)) continue;
            double lo = k_lo[i] > 0 ? k_lo[i] : k_hi[i] * 1e-4, hi = k_hi[i];
            double keep = cal->c[i];
            for (int g = -1; g <= 60; g++) {
                double v = g < 0 ? (k_lo[i] > 0 ? lo : 0) : lo * pow(hi / lo, g / 60.0);
                cal->c[i] = v;
                double l = evaluate(pr, cal, 0, &med, &mean, &mx, &ne);
                if (l < best) best = l, keep = v;
            }
            cal->c[i] = keep;
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: serve_fit_probe RUNS.json [--fit] [--ideal] [--list] "
                        "[--no-fold] [--set name=value]...\n");
        return 2;
    }
    int do_fit = 0, ideal = 0, list = 0, fold = 1;
    pc_calib cal;
    memset(&cal, 0, sizeof cal);
    for (int i = 0; i < PC_COEF_COUNT; i++) cal.c[i] = k_prior[i];
    for (int a = 2; a < argc; a++) {
        if (!strcmp(argv[a], "--fit")) do_fit = 1;
        else if (!strcmp(argv[a], "--ideal")) ideal = 1;
        else if (!strcmp(argv[a], "--list")) list = 1;
        else if (!strcmp(argv[a], "--no-fold")) fold = 0;
        else if (!strcmp(argv[a], "--kv-fp4w") && a + 1 < argc) g_kv_fp4w = pc_prec_parse(argv[++a]);
        else if (!strcmp(argv[a], "--kv-fp8w") && a + 1 < argc) g_kv_fp8w = pc_prec_parse(argv[++a]);
        else if (!strcmp(argv[a], "--set") && a + 1 < argc) {
            char *eq = strchr(argv[++a], '=');
            int found = 0;
            for (int i = 0; eq && i < PC_COEF_COUNT; i++)
                if (!strncmp(k_name[i], argv[a], (size_t)(eq - argv[a])) &&
                    k_name[i][eq - argv[a]] == '\0')
                    cal.c[i] = atof(eq + 1), found = 1;
            if (!found) return fprintf(stderr, "unknown coefficient %s\n", argv[a]), 2;
        } else
            return fprintf(stderr, "unknown option %s\n", argv[a]), 2;
    }
    char *text;
    size_t len;
    pc_error err;
    if (pc_analytic_read_text(argv[1], 64u << 20, &text, &len, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsArray(root)) return fprintf(stderr, "%s: not a JSON list\n", argv[1]), 1;
    pc_chipdb *db;
    if (pc_chipdb_new(&db, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    int cap = cJSON_GetArraySize(root);
    probe pr = {calloc((size_t)cap, sizeof(pc_run)), calloc((size_t)cap, sizeof(pc_chip *)), 0};
    const cJSON *o;
    cJSON_ArrayForEach(o, root) {
        if (strcmp(str(o, "kind"), "serve")) continue;
        pc_run *r = &pr.runs[pr.n];
        if (to_run(o, fold, r)) continue;
        pr.chips[pr.n] = pc_chipdb_find(db, r->chip_name);
        if (!pr.chips[pr.n]) {
            fprintf(stderr, "%s: unknown chip %s\n", r->id, r->chip_name);
            continue;
        }
        pr.n++;
    }
    cal.ideal = ideal;
    if (do_fit) fit(&pr, &cal);
    double med, mean, mx;
    int ne;
    double loss = evaluate(&pr, &cal, list, &med, &mean, &mx, &ne);
    printf("%s: %d of %d runs expressed; |error| median %.1f%% mean %.1f%% max %.1f%%; loss %.4f\n",
           ideal ? "ideal" : do_fit ? "fitted" : "given", ne, pr.n, 100 * med, 100 * mean, 100 * mx,
           loss);
    for (int i = 0; !ideal && i < PC_COEF_COUNT; i++)
        if (!strncmp(k_name[i], "serve.", 6)) printf("  %-24s %.4g (prior %.4g)\n", k_name[i], cal.c[i], k_prior[i]);
    cJSON_Delete(root);
    pc_chipdb_free(db);
    free(pr.runs);
    free((void *)pr.chips);
    return 0;
}
