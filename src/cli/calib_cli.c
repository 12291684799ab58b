/* Shared pieces of perfcast validate / calibrate (calib_cli.h). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib_cli.h"

/* ---------------- runs and predictions ---------------- */

void pc_ccli_runset_free(pc_ccli_runset *s) {
    for (int i = 0; i < s->nfiles; i++)
        pc_runs_free(s->runs[i]);
    free(s->run), free(s->problem), free(s->pred);
    memset(s, 0, sizeof *s);
}

static int runset_load(pc_ccli_runset *s, int nfiles, char **paths, pc_error *err) {
    memset(s, 0, sizeof *s);
    for (int f = 0; f < nfiles; f++) {
        if (pc_runs_load(paths[f], &s->runs[f], err))
            return -1;
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

int pc_ccli_kind_ok(int kinds, pc_run_kind k) { return (kinds >> (k == PC_RUN_SERVE)) & 1; }

void pc_ccli_predict_all(pc_ccli_runset *s, const pc_calib *cal, int kinds) {
    for (int i = 0; i < s->n; i++) {
        memset(&s->pred[i], 0, sizeof s->pred[i]);
        if (s->problem[i] || !pc_ccli_kind_ok(kinds, s->run[i]->kind))
            continue;
        pc_run_predict(s->run[i], cal, &s->pred[i], NULL);
    }
}

/* The hold-out group of run i: its source, or its chip when its kind has a
 * single source (the shipped serving runs all come from one page, so they are
 * held out chip by chip instead). */
static const char *group_of(const pc_ccli_runset *s, int i, int *by_chip) {
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
int pc_ccli_predict_loso(pc_ccli_runset *s, int kinds, const pc_calib_fit_opts *fo,
                         int *by_chip_runs, pc_error *err) {
    unsigned char *use = calloc((size_t)(s->n > 0 ? s->n : 1), 1);
    unsigned char *done = calloc((size_t)(s->n > 0 ? s->n : 1), 1);
    if (!use || !done) {
        free(use), free(done);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return -1;
    }
    *by_chip_runs = 0;
    for (int i = 0; i < s->n; i++) {
        if (done[i] || s->problem[i] || !pc_ccli_kind_ok(kinds, s->run[i]->kind))
            continue;
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
                if (st == PC_ERR_INVALID)
                    st = PC_OK; /* nothing expressible in this file */
                if (next)
                    pc_calib_free(cal), cal = next;
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
            if (by_chip)
                (*by_chip_runs)++;
        }
        pc_calib_free(cal);
    }
    free(use), free(done);
    return 0;
}

/* ---------------- summaries ---------------- */

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A run that cannot be expressed, or is invalid, counts as a 100% miss. */
#define MISS 1.0

pc_ccli_errsum pc_ccli_summarize(const pc_ccli_runset *s, int kinds, const char *source,
                                 const char *chip) {
    pc_ccli_errsum e;
    memset(&e, 0, sizeof e);
    double *a = malloc(sizeof(double) * (size_t)(s->n > 0 ? s->n : 1));
    if (!a)
        return e;
    int over = 0;
    for (int i = 0; i < s->n; i++) {
        const pc_run *r = s->run[i];
        if (!pc_ccli_kind_ok(kinds, r->kind))
            continue;
        if (source && strcmp(r->source, source))
            continue;
        if (chip && strcmp(r->chip_name, chip))
            continue;
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
        for (int i = 0; i < e.runs; i++)
            e.mean += a[i];
        e.mean /= e.runs;
        e.max = a[e.runs - 1];
        e.over = e.expressed ? (double)over / e.expressed : 0;
    }
    free(a);
    return e;
}

/* Distinct values of a run field (source or chip), in file order. */
static int distinct(const pc_ccli_runset *s, int kinds, int by_chip, const char **out, int cap) {
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        if (!pc_ccli_kind_ok(kinds, s->run[i]->kind))
            continue;
        const char *v = by_chip ? s->run[i]->chip_name : s->run[i]->source;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = !strcmp(out[k], v);
        if (!seen && n < cap)
            out[n++] = v;
    }
    return n;
}

static void print_sum(const char *label, const pc_ccli_errsum *e) {
    printf("  %-26s %4d runs %4d expressed  median %6.1f%%  mean %6.1f%%  max %6.1f%%  "
           "over-predicted %3.0f%%\n",
           label, e->runs, e->expressed, 100 * e->median, 100 * e->mean, 100 * e->max,
           100 * e->over);
}

void pc_ccli_print_summaries(const pc_ccli_runset *s, int kinds, const char *title) {
    printf("\n%s\n", title);
    for (int k = 0; k < 2; k++) {
        if (!pc_ccli_kind_ok(kinds, (pc_run_kind)k))
            continue;
        pc_ccli_errsum all = pc_ccli_summarize(s, 1 << k, NULL, NULL);
        if (!all.runs)
            continue;
        print_sum(k ? "serving (output tok/s)" : "training (step time)", &all);
        const char *v[64];
        for (int by_chip = 0; by_chip < 2; by_chip++) {
            int nv = distinct(s, 1 << k, by_chip, v, 64);
            for (int q = 0; q < nv; q++) {
                char label[64];
                snprintf(label, sizeof label, "  %s %s", by_chip ? "chip" : "source", v[q]);
                pc_ccli_errsum e = by_chip ? pc_ccli_summarize(s, 1 << k, NULL, v[q])
                                           : pc_ccli_summarize(s, 1 << k, v[q], NULL);
                print_sum(label, &e);
            }
        }
    }
}

static cJSON *sum_json(const pc_ccli_errsum *e) {
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

cJSON *pc_ccli_summaries_json(const pc_ccli_runset *s, int kinds) {
    pc_ccli_errsum all = pc_ccli_summarize(s, kinds, NULL, NULL);
    cJSON *o = sum_json(&all);
    for (int k = 0; k < 2; k++) {
        if (!pc_ccli_kind_ok(kinds, (pc_run_kind)k))
            continue;
        pc_ccli_errsum ek = pc_ccli_summarize(s, 1 << k, NULL, NULL);
        if (!ek.runs)
            continue;
        cJSON *ko = sum_json(&ek);
        const char *v[64];
        for (int by_chip = 0; by_chip < 2; by_chip++) {
            cJSON *g = cJSON_AddObjectToObject(ko, by_chip ? "by_chip" : "by_source");
            int nv = distinct(s, 1 << k, by_chip, v, 64);
            for (int q = 0; q < nv; q++) {
                pc_ccli_errsum e = by_chip ? pc_ccli_summarize(s, 1 << k, NULL, v[q])
                                           : pc_ccli_summarize(s, 1 << k, v[q], NULL);
                cJSON_AddItemToObject(g, v[q], sum_json(&e));
            }
        }
        cJSON_AddItemToObject(o, k ? "serve" : "train", ko);
    }
    return o;
}

cJSON *pc_ccli_run_json(const pc_run *r, const char *problem, const pc_run_pred *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "kind", r->kind == PC_RUN_SERVE ? "serve" : "train");
    cJSON_AddStringToObject(o, "source", r->source);
    cJSON_AddStringToObject(o, "chip", r->chip_name);
    cJSON_AddNumberToObject(o, "chips", (double)r->chips);
    cJSON_AddStringToObject(o, "metric",
                            r->kind == PC_RUN_SERVE ? "output_tokens_per_s" : "step_time_s");
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
            if (!used[i] && p->part[i] > 0 && (best < 0 || p->part[i] > p->part[best]))
                best = i;
        if (best < 0)
            break;
        used[best] = 1;
        int w = snprintf(buf + off, cap - off, "%s%s %.0f%%", k ? " " : "",
                         pc_step_part_name((pc_step_part)best), 100 * p->part[best] / p->predicted);
        if (w < 0 || (size_t)w >= cap - off)
            break;
        off += (size_t)w;
    }
}

void pc_ccli_print_runs(const pc_ccli_runset *s, int kinds) {
    printf("%-46s %-9s %5s %11s %11s %8s %11s  %s\n", "run", "chip", "chips", "measured",
           "predicted", "error", "ideal", "breakdown / why");
    for (int i = 0; i < s->n; i++) {
        const pc_run *r = s->run[i];
        if (!pc_ccli_kind_ok(kinds, r->kind))
            continue;
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
               r->chip_name, (long long)r->chips, meas, unit, p->predicted, unit, 100 * p->error,
               p->ideal, unit, parts);
    }
}

int pc_ccli_parse_kind(const char *s) {
    if (!strcmp(s, "train"))
        return 1;
    if (!strcmp(s, "serve"))
        return 2;
    if (!strcmp(s, "all"))
        return 3;
    return 0;
}

int pc_ccli_load_or_fail(pc_ccli_runset *s, int nfiles, char **paths) {
    pc_error err;
    memset(&err, 0, sizeof err);
    if (runset_load(s, nfiles, paths, &err)) {
        pc_ccli_runset_free(s);
        return pc_cli_fail(&err);
    }
    return -1;
}

void pc_ccli_print_problems(const pc_ccli_runset *s) {
    for (int i = 0; i < s->n; i++)
        if (s->problem[i])
            fprintf(stderr, "perfcast: invalid run: %s\n", s->problem[i]);
}
