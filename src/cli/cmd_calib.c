/* perfcast validate / calibrate: predictions against measured runs (issue #12). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"
#include "perfcast/calib.h"

/* ---------------- runs and predictions ---------------- */

typedef struct runset {
    pc_runs *runs[8];
    const char *paths[8];
    int nfiles;
    /* flattened view over all files */
    int n;
    const pc_run **run;
    const char **problem;
    pc_run_pred *pred;
} runset;

static void runset_free(runset *s) {
    for (int i = 0; i < s->nfiles; i++) pc_runs_free(s->runs[i]);
    free(s->run), free(s->problem), free(s->pred);
    memset(s, 0, sizeof *s);
}

static int runset_load(runset *s, int nfiles, char **paths, pc_error *err) {
    memset(s, 0, sizeof *s);
    for (int f = 0; f < nfiles; f++) {
        if (pc_runs_load(paths[f], &s->runs[f], err)) return -1;
        s->paths[f] = paths[f];
        s->nfiles++;
        s->n += pc_runs_count(s->runs[f]);
    }
    size_t n = s->n > 0 ? (size_t)s->n : 1;
    s->run = calloc(n, sizeof *s->run);
    s->problem = calloc(n, sizeof *s->problem);
    s->pred = calloc(n, sizeof *s->pred);
    if (!s->run || !s->problem || !s->pred) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return -1;
    }
    int k = 0;
    for (int f = 0; f < s->nfiles; f++)
        for (int i = 0; i < pc_runs_count(s->runs[f]); i++, k++) {
            s->run[k] = pc_runs_at(s->runs[f], i);
            s->problem[k] = pc_runs_problem(s->runs[f], i);
        }
    return 0;
}

static int kind_ok(int kinds, pc_run_kind k) { return (kinds >> (k == PC_RUN_SERVE)) & 1; }

static void predict_all(runset *s, const pc_calib *cal, int kinds) {
    for (int i = 0; i < s->n; i++) {
        memset(&s->pred[i], 0, sizeof s->pred[i]);
        if (s->problem[i] || !kind_ok(kinds, s->run[i]->kind)) continue;
        pc_run_predict(s->run[i], cal, &s->pred[i], NULL);
    }
}

/* The hold-out group of run i: its source, or its chip when its kind has a
 * single source (the shipped serving runs all come from one page, so they are
 * held out chip by chip instead). */
static const char *group_of(const runset *s, int i, int *by_chip) {
    const pc_run *r = s->run[i];
    for (int q = 0; q < s->n; q++)
        if (!s->problem[q] && s->run[q]->kind == r->kind && strcmp(s->run[q]->source, r->source)) {
            *by_chip = 0;
            return r->source;
        }
    *by_chip = 1;
    return r->chip_name;
}

/* Leave one group out: each source's runs (each chip's, for a kind with one
 * source) are predicted by a calibration fitted, from the priors, on the other
 * groups of the same kind only. */
static int predict_loso(runset *s, int kinds, const pc_calib_fit_opts *fo, int *by_chip_runs,
                        pc_error *err) {
    unsigned char *use = calloc((size_t)(s->n > 0 ? s->n : 1), 1);
    unsigned char *done = calloc((size_t)(s->n > 0 ? s->n : 1), 1);
    if (!use || !done) {
        free(use), free(done);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return -1;
    }
    *by_chip_runs = 0;
    for (int i = 0; i < s->n; i++) {
        if (done[i] || s->problem[i] || !kind_ok(kinds, s->run[i]->kind)) continue;
        const pc_run *ri = s->run[i];
        int by_chip;
        const char *gi = group_of(s, i, &by_chip);
        /* the fit takes one runs file at a time: fit file by file */
        pc_calib *cal = NULL;
        pc_status st = PC_OK;
        for (int f = 0, base = 0; f < s->nfiles && !st; f++) {
            int nf = pc_runs_count(s->runs[f]), any = 0;
            for (int q = 0; q < nf; q++) {
                const pc_run *rq = s->run[base + q];
                use[q] = !s->problem[base + q] && rq->kind == ri->kind &&
                         strcmp(by_chip ? rq->chip_name : rq->source, gi) != 0;
                any |= use[q];
            }
            pc_calib_fit_opts o = *fo;
            o.kinds = ri->kind == PC_RUN_SERVE ? 2 : 1;
            pc_calib *next = NULL;
            if (any) {
                pc_error e2;
                st = pc_calib_fit(s->runs[f], use, cal, &o, &next, &e2);
                if (st == PC_ERR_INVALID) st = PC_OK; /* nothing expressible in this file */
                if (next) pc_calib_free(cal), cal = next;
            }
            base += nf;
        }
        if (st || !cal) {
            pc_calib_free(cal);
            free(use), free(done);
            snprintf(err->msg, sizeof err->msg,
                     "leave-one-out fit without '%s' failed (no other runs of its kind?)", gi);
            return -1;
        }
        for (int q = 0; q < s->n; q++) {
            int bq;
            if (done[q] || s->problem[q] || s->run[q]->kind != ri->kind ||
                strcmp(group_of(s, q, &bq), gi))
                continue;
            pc_run_predict(s->run[q], cal, &s->pred[q], NULL);
            done[q] = 1;
            if (by_chip) (*by_chip_runs)++;
        }
        pc_calib_free(cal);
    }
    free(use), free(done);
    return 0;
}

/* ---------------- summaries ---------------- */

typedef struct errsum {
    int runs, expressed, invalid;
    double median, mean, max, over; /* abs errors; over: fraction predicted too high */
} errsum;

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A run that cannot be expressed, or is invalid, counts as a 100% miss. */
#define MISS 1.0

static errsum summarize(const runset *s, int kinds, const char *source, const char *chip) {
    errsum e;
    memset(&e, 0, sizeof e);
    double *a = malloc(sizeof(double) * (size_t)(s->n > 0 ? s->n : 1));
    if (!a) return e;
    int over = 0;
    for (int i = 0; i < s->n; i++) {
        const pc_run *r = s->run[i];
        if (!kind_ok(kinds, r->kind)) continue;
        if (source && strcmp(r->source, source)) continue;
        if (chip && strcmp(r->chip_name, chip)) continue;
        double v = MISS;
        if (s->problem[i]) {
            e.invalid++;
        } else if (s->pred[i].expressed) {
            e.expressed++;
            v = fabs(s->pred[i].error);
            over += s->pred[i].error > 0;
        }
        a[e.runs++] = v;
    }
    if (e.runs) {
        qsort(a, (size_t)e.runs, sizeof *a, cmp_dbl);
        e.median = e.runs % 2 ? a[e.runs / 2] : 0.5 * (a[e.runs / 2 - 1] + a[e.runs / 2]);
        for (int i = 0; i < e.runs; i++) e.mean += a[i];
        e.mean /= e.runs;
        e.max = a[e.runs - 1];
        e.over = e.expressed ? (double)over / e.expressed : 0;
    }
    free(a);
    return e;
}

/* Distinct values of a run field (source or chip), in file order. */
static int distinct(const runset *s, int kinds, int by_chip, const char **out, int cap) {
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        if (!kind_ok(kinds, s->run[i]->kind)) continue;
        const char *v = by_chip ? s->run[i]->chip_name : s->run[i]->source;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++) seen = !strcmp(out[k], v);
        if (!seen && n < cap) out[n++] = v;
    }
    return n;
}

static void print_sum(const char *label, const errsum *e) {
    printf("  %-26s %4d runs %4d expressed  median %6.1f%%  mean %6.1f%%  max %6.1f%%  "
           "over-predicted %3.0f%%\n",
           label, e->runs, e->expressed, 100 * e->median, 100 * e->mean, 100 * e->max,
           100 * e->over);
}

static void print_summaries(const runset *s, int kinds, const char *title) {
    printf("\n%s\n", title);
    for (int k = 0; k < 2; k++) {
        if (!kind_ok(kinds, (pc_run_kind)k)) continue;
        errsum all = summarize(s, 1 << k, NULL, NULL);
        if (!all.runs) continue;
        print_sum(k ? "serving (output tok/s)" : "training (step time)", &all);
        const char *v[64];
        for (int by_chip = 0; by_chip < 2; by_chip++) {
            int nv = distinct(s, 1 << k, by_chip, v, 64);
            for (int q = 0; q < nv; q++) {
                char label[64];
                snprintf(label, sizeof label, "  %s %s", by_chip ? "chip" : "source", v[q]);
                errsum e = by_chip ? summarize(s, 1 << k, NULL, v[q])
                                   : summarize(s, 1 << k, v[q], NULL);
                print_sum(label, &e);
            }
        }
    }
}

static cJSON *sum_json(const errsum *e) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "median_abs_error", e->median);
    cJSON_AddNumberToObject(o, "mean_abs_error", e->mean);
    cJSON_AddNumberToObject(o, "max_abs_error", e->max);
    cJSON_AddNumberToObject(o, "runs", e->runs);
    cJSON_AddNumberToObject(o, "expressed", e->expressed);
    cJSON_AddNumberToObject(o, "invalid", e->invalid);
    cJSON_AddNumberToObject(o, "over_predicted_fraction", e->over);
    return o;
}

static cJSON *summaries_json(const runset *s, int kinds) {
    errsum all = summarize(s, kinds, NULL, NULL);
    cJSON *o = sum_json(&all);
    for (int k = 0; k < 2; k++) {
        if (!kind_ok(kinds, (pc_run_kind)k)) continue;
        errsum ek = summarize(s, 1 << k, NULL, NULL);
        if (!ek.runs) continue;
        cJSON *ko = sum_json(&ek);
        const char *v[64];
        for (int by_chip = 0; by_chip < 2; by_chip++) {
            cJSON *g = cJSON_AddObjectToObject(ko, by_chip ? "by_chip" : "by_source");
            int nv = distinct(s, 1 << k, by_chip, v, 64);
            for (int q = 0; q < nv; q++) {
                errsum e = by_chip ? summarize(s, 1 << k, NULL, v[q])
                                   : summarize(s, 1 << k, v[q], NULL);
                cJSON_AddItemToObject(g, v[q], sum_json(&e));
            }
        }
        cJSON_AddItemToObject(o, k ? "serve" : "train", ko);
    }
    return o;
}

static cJSON *run_json(const pc_run *r, const char *problem, const pc_run_pred *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "kind", r->kind == PC_RUN_SERVE ? "serve" : "train");
    cJSON_AddStringToObject(o, "source", r->source);
    cJSON_AddStringToObject(o, "chip", r->chip_name);
    cJSON_AddNumberToObject(o, "chips", (double)r->chips);
    cJSON_AddStringToObject(o, "metric", r->kind == PC_RUN_SERVE ? "output_tokens_per_s"
                                                                 : "step_time_s");
    cJSON_AddNumberToObject(o, "measured",
                            r->kind == PC_RUN_SERVE ? r->output_tokens_per_s : r->step_time_s);
    if (problem || !p->expressed) {
        cJSON_AddNullToObject(o, "predicted");
        cJSON_AddNullToObject(o, "error");
        cJSON_AddFalseToObject(o, "expressed");
        cJSON_AddStringToObject(o, "why", problem ? problem : p->why);
        return o;
    }
    cJSON_AddTrueToObject(o, "expressed");
    cJSON_AddNumberToObject(o, "predicted", p->predicted);
    cJSON_AddNumberToObject(o, "error", p->error);
    cJSON_AddNumberToObject(o, "ideal", p->ideal);
    if (r->kind == PC_RUN_TRAIN) {
        cJSON_AddNumberToObject(o, "mfu", p->mfu);
        cJSON *b = cJSON_AddObjectToObject(o, "breakdown");
        for (int i = 0; i < PC_STEP_COUNT; i++)
            cJSON_AddNumberToObject(b, pc_step_part_name((pc_step_part)i), p->part[i]);
    } else {
        cJSON_AddNumberToObject(o, "batch", p->batch);
        cJSON_AddBoolToObject(o, "batch_stated", p->batch_stated);
        cJSON_AddNumberToObject(o, "replicas", (double)p->replicas);
        cJSON_AddNumberToObject(o, "ttft_s", p->ttft_s);
        cJSON_AddNumberToObject(o, "tpot_s", p->tpot_s);
    }
    return o;
}

/* "compute 61% tp 14% bubble 9%": the three largest parts. */
static void top_parts(const pc_run_pred *p, char *buf, size_t cap) {
    int used[PC_STEP_COUNT] = {0};
    buf[0] = 0;
    size_t off = 0;
    for (int k = 0; k < 3; k++) {
        int best = -1;
        for (int i = 0; i < PC_STEP_COUNT; i++)
            if (!used[i] && p->part[i] > 0 && (best < 0 || p->part[i] > p->part[best])) best = i;
        if (best < 0) break;
        used[best] = 1;
        int w = snprintf(buf + off, cap - off, "%s%s %.0f%%", k ? " " : "",
                         pc_step_part_name((pc_step_part)best),
                         100 * p->part[best] / p->predicted);
        if (w < 0 || (size_t)w >= cap - off) break;
        off += (size_t)w;
    }
}

static void print_runs(const runset *s, int kinds) {
    printf("%-46s %-9s %5s %11s %11s %8s %11s  %s\n", "run", "chip", "chips", "measured",
           "predicted", "error", "ideal", "breakdown / why");
    for (int i = 0; i < s->n; i++) {
        const pc_run *r = s->run[i];
        if (!kind_ok(kinds, r->kind)) continue;
        const pc_run_pred *p = &s->pred[i];
        double meas = r->kind == PC_RUN_SERVE ? r->output_tokens_per_s : r->step_time_s;
        const char *unit = r->kind == PC_RUN_SERVE ? "tok/s" : "s";
        if (s->problem[i] || !p->expressed) {
            printf("%-46.46s %-9.9s %5lld %10.4g%s %11s %8s %11s  not expressed: %s\n", r->id,
                   r->chip_name, (long long)r->chips, meas, unit, "-", "miss", "-",
                   s->problem[i] ? s->problem[i] : p->why);
            continue;
        }
        char parts[128];
        if (r->kind == PC_RUN_TRAIN)
            top_parts(p, parts, sizeof parts);
        else
            snprintf(parts, sizeof parts, "batch %.0f%s x %lld replicas, TTFT %.3g s, TPOT %.3g ms",
                     p->batch, p->batch_stated ? "" : " (throughput-optimal)",
                     (long long)p->replicas, p->ttft_s, 1e3 * p->tpot_s);
        printf("%-46.46s %-9.9s %5lld %10.4g%s %10.4g%s %+7.1f%% %10.4g%s  %s\n", r->id,
               r->chip_name, (long long)r->chips, meas, unit, p->predicted, unit,
               100 * p->error, p->ideal, unit, parts);
    }
}

/* ---------------- options ---------------- */

static int parse_kind(const char *s) {
    if (!strcmp(s, "train")) return 1;
    if (!strcmp(s, "serve")) return 2;
    if (!strcmp(s, "all")) return 3;
    return 0;
}

static void validate_help(FILE *f) {
    fprintf(f,
            "usage: perfcast validate RUNS.json [RUNS.json ...] [--calibration builtin|none|C.json]\n"
            "                         [--loso] [--kind train|serve|all] [--json]\n\n"
            "Predicts every measured run of the files (schema: ../shared/calibration/README.md)\n"
            "with everything the run pins (chip, count, slices, tp, pp, vp, cp, ep, dp, fsdp,\n"
            "ZeRO, sequence parallel, micro-batch size and count, batch, sequence, remat,\n"
            "precision, framework) and prints measured vs predicted step time (training) or\n"
            "output tokens/s (serving), the signed error (predicted - measured) / measured, the\n"
            "ideal-roofline bound and the predicted breakdown; then median / mean / max absolute\n"
            "error overall, per source and per chip. A run that is invalid or cannot be\n"
            "expressed is listed with the reason and counted as a 100%% miss.\n\n"
            "  --calibration C  builtin (default: fitted on the shipped measurements), none\n"
            "                   (the ideal roofline: a lower bound), or a file from 'calibrate'\n"
            "  --loso           leave one source out: predict each source with a calibration\n"
            "                   fitted on the other sources only (honest out-of-sample error);\n"
            "                   a kind with a single source is held out chip by chip\n"
            "  --kind K         train, serve or all (default all)\n"
            "  --json           {\"runs\": [...], \"summary\": {...}}\n\n"
            "Exit status: 0, or 1 if any run of the files was invalid.\n");
}

static int load_or_fail(runset *s, int nfiles, char **paths) {
    pc_error err;
    memset(&err, 0, sizeof err);
    if (runset_load(s, nfiles, paths, &err)) {
        runset_free(s);
        return pc_cli_fail(&err);
    }
    return -1;
}

static void print_problems(const runset *s) {
    for (int i = 0; i < s->n; i++)
        if (s->problem[i]) fprintf(stderr, "perfcast: invalid run: %s\n", s->problem[i]);
}

int pc_cmd_validate(int argc, char **argv) {
    static const struct option opts[] = {{"calibration", required_argument, 0, 'c'},
                                         {"loso", no_argument, 0, 'l'},
                                         {"kind", required_argument, 0, 'k'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *calspec = "builtin";
    int json = 0, loso = 0, kinds = 3, cal_given = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': calspec = optarg, cal_given = 1; break;
        case 'l': loso = 1; break;
        case 'j': json = 1; break;
        case 'k':
            if (!(kinds = parse_kind(optarg)))
                return pc_cli_usage_error("validate", "--kind: expected train, serve or all, "
                                                      "got '%s'", optarg);
            break;
        case 'h': validate_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("validate", "unknown option");
        }
    }
    int nfiles = argc - optind;
    if (nfiles < 1) return pc_cli_usage_error("validate", "give a runs file (RUNS.json)");
    if (nfiles > 8) return pc_cli_usage_error("validate", "at most 8 runs files");
    /* --calibration builtin --loso too: the built-in would silently not be used */
    if (loso && cal_given)
        return pc_cli_usage_error("validate", "--loso fits its own calibrations; drop "
                                              "--calibration");
    pc_error err;
    memset(&err, 0, sizeof err);
    pc_calib *cal = NULL;
    if (!loso && pc_calib_open(calspec, &cal, &err)) return pc_cli_fail(&err);
    runset s;
    int rc = load_or_fail(&s, nfiles, argv + optind);
    if (rc >= 0) {
        pc_calib_free(cal);
        return rc;
    }
    int in_sample = 0;
    if (loso) {
        pc_calib_fit_opts fo = pc_calib_fit_opts_default();
        if (predict_loso(&s, kinds, &fo, &in_sample, &err)) {
            runset_free(&s);
            return pc_cli_fail(&err);
        }
    } else {
        predict_all(&s, cal, kinds);
    }
    print_problems(&s);
    const char *label = loso ? "leave-one-source-out" : pc_calib_origin(cal);
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "calibration", label);
        cJSON *arr = cJSON_AddArrayToObject(root, "runs");
        for (int i = 0; i < s.n; i++)
            if (kind_ok(kinds, s.run[i]->kind))
                cJSON_AddItemToArray(arr, run_json(s.run[i], s.problem[i], &s.pred[i]));
        cJSON *sum = summaries_json(&s, kinds);
        if (loso) cJSON_AddNumberToObject(sum, "held_out_by_chip_runs", in_sample);
        cJSON_AddItemToObject(root, "summary", sum);
        char *txt = cJSON_Print(root);
        if (txt) puts(txt);
        free(txt);
        cJSON_Delete(root);
    } else {
        print_runs(&s, kinds);
        char title[160];
        snprintf(title, sizeof title, "absolute error (calibration: %s)", label);
        print_summaries(&s, kinds, title);
        if (loso && in_sample)
            printf("  (%d runs of a kind with a single source were held out chip by chip)\n",
                   in_sample);
    }
    int bad = 0;
    for (int i = 0; i < s.n; i++) bad |= s.problem[i] != NULL;
    runset_free(&s);
    pc_calib_free(cal);
    return bad ? PC_EXIT_FAIL : PC_EXIT_OK;
}

/* ---------------- calibrate ---------------- */

static void calibrate_help(FILE *f) {
    fprintf(f,
            "usage: perfcast calibrate RUNS.json [RUNS.json ...] --out C.json [--json]\n"
            "                          [--huber D] [--prior-weight W] [--no-loso]\n\n"
            "Fits the model's few free coefficients (efficiencies, overlap fractions,\n"
            "overheads; per chip family and framework, never per run) to the measured runs by\n"
            "robust least squares on log step time (log tokens/s for serving), with a prior on\n"
            "every coefficient, writes them to C.json (use with --calibration C.json on plan\n"
            "train, plan serve and validate), and reports the in-sample error and the\n"
            "leave-one-source-out error (fit without a source, predict it).\n\n"
            "  --out FILE        the calibration to write (temporary file, then rename)\n"
            "  --huber D         Huber threshold on the log error, 1e-6 to 10 (default 0.10)\n"
            "  --prior-weight W  weight of the priors (default 1; 0 = none)\n"
            "  --no-loso         skip the leave-one-source-out report\n"
            "  --json            machine-readable report\n");
}

static int parse_pos(const char *s, double *v) {
    char *end;
    *v = strtod(s, &end);
    return *s && !*end && isfinite(*v) && *v >= 0 ? 0 : -1;
}

/* Fits file by file (each file's runs move only the coefficients they
 * depend on), starting from the priors. */
static int fit_all(runset *s, const pc_calib_fit_opts *fo, pc_calib **out, pc_error *err) {
    pc_calib *cal = NULL;
    for (int f = 0; f < s->nfiles; f++) {
        pc_calib *next = NULL;
        pc_status st = pc_calib_fit(s->runs[f], NULL, cal, fo, &next, err);
        if (st == PC_ERR_INVALID) continue; /* nothing expressible in this file */
        if (st) {
            pc_calib_free(cal);
            return -1;
        }
        pc_calib_free(cal);
        cal = next;
    }
    if (!cal) {
        snprintf(err->msg, sizeof err->msg, "no expressible runs to fit in the files given");
        return -1;
    }
    char origin[256];
    int off = snprintf(origin, sizeof origin, "perfcast calibrate");
    for (int f = 0; f < s->nfiles && off > 0 && (size_t)off < sizeof origin; f++)
        off += snprintf(origin + off, sizeof origin - (size_t)off, " %s", s->paths[f]);
    pc_calib_set_origin(cal, origin);
    *out = cal;
    return 0;
}

int pc_cmd_calibrate(int argc, char **argv) {
    static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                         {"huber", required_argument, 0, 'u'},
                                         {"prior-weight", required_argument, 0, 'w'},
                                         {"no-loso", no_argument, 0, 'n'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    int json = 0, loso = 1, c;
    pc_calib_fit_opts fo = pc_calib_fit_opts_default();
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'n': loso = 0; break;
        case 'j': json = 1; break;
        case 'u':
            /* a log error: below 1e-6 is noise of the predictions, above 10 a factor
             * e^10; outside, the cost's 1/D^2 scaling under- or overflows */
            if (parse_pos(optarg, &fo.huber) || !(fo.huber >= 1e-6 && fo.huber <= 10))
                return pc_cli_usage_error("calibrate", "--huber: expected a number in [1e-6, 10], "
                                                       "got '%s'", optarg);
            break;
        case 'w':
            if (parse_pos(optarg, &fo.prior_weight))
                return pc_cli_usage_error("calibrate", "--prior-weight: expected a number >= 0, "
                                                       "got '%s'", optarg);
            break;
        case 'h': calibrate_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("calibrate", "unknown option");
        }
    }
    int nfiles = argc - optind;
    if (nfiles < 1) return pc_cli_usage_error("calibrate", "give a runs file (RUNS.json)");
    if (nfiles > 8) return pc_cli_usage_error("calibrate", "at most 8 runs files");
    if (!out) return pc_cli_usage_error("calibrate", "--out C.json is required");
    runset s;
    int rc = load_or_fail(&s, nfiles, argv + optind);
    if (rc >= 0) return rc;
    print_problems(&s);
    pc_error err;
    memset(&err, 0, sizeof err);
    pc_calib *cal = NULL, *prior = NULL;
    if (fit_all(&s, &fo, &cal, &err) || pc_calib_prior(&prior, &err) ||
        pc_calib_save(cal, out, &err)) {
        pc_calib_free(cal), pc_calib_free(prior);
        runset_free(&s);
        return pc_cli_fail(&err);
    }
    predict_all(&s, cal, 3);
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    if (json) {
        cJSON_AddStringToObject(root, "out", out);
        cJSON *co = cJSON_AddObjectToObject(root, "coefficients");
        for (int i = 0; i < pc_calib_coef_count(); i++)
            cJSON_AddNumberToObject(co, pc_calib_coef_name(i), pc_calib_get(cal, i));
        cJSON *fit = cJSON_AddObjectToObject(root, "in_sample");
        cJSON_AddItemToObject(fit, "summary", summaries_json(&s, 3));
    } else {
        printf("%-32s %12s %12s  %s\n", "coefficient", "prior", "fitted", "meaning");
        for (int i = 0; i < pc_calib_coef_count(); i++)
            printf("%-32s %12.4g %12.4g  %s\n", pc_calib_coef_name(i), pc_calib_get(prior, i),
                   pc_calib_get(cal, i), pc_calib_coef_doc(i));
        printf("\nwrote %s\n", out);
        print_summaries(&s, 3, "in-sample absolute error (fitted on these runs)");
    }
    if (loso) {
        int in_sample = 0;
        if (predict_loso(&s, 3, &fo, &in_sample, &err)) {
            cJSON_Delete(root);
            pc_calib_free(cal), pc_calib_free(prior);
            runset_free(&s);
            return pc_cli_fail(&err);
        }
        if (json) {
            cJSON *lo = cJSON_AddObjectToObject(root, "leave_one_source_out");
            cJSON *sum = summaries_json(&s, 3);
            cJSON_AddNumberToObject(sum, "held_out_by_chip_runs", in_sample);
            cJSON_AddItemToObject(lo, "summary", sum);
        } else {
            print_summaries(&s, 3, "leave-one-source-out absolute error (fit without the source, "
                                   "predict it)");
            if (in_sample)
                printf("  (%d runs of a kind with a single source: held out chip by chip)\n",
                       in_sample);
        }
    }
    if (json) {
        char *txt = cJSON_Print(root);
        if (txt) puts(txt);
        free(txt);
        cJSON_Delete(root);
    }
    pc_calib_free(cal), pc_calib_free(prior);
    int bad = 0;
    for (int i = 0; i < s.n; i++) bad |= s.problem[i] != NULL;
    runset_free(&s);
    return bad ? PC_EXIT_FAIL : PC_EXIT_OK;
}
