/* The validate query (perfcast validate): every measured run of some runs files predicted
 * with a calibration (or leave one source out) against its measurement, and the error
 * summaries overall, per source and per chip. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "perfcast/calib.h"
#include "query/q_internal.h"
#include "query/request.h"

#define MAX_FILES 8

static const char *const VALIDATE_KEYS[] = {"runs", "calibration", "loso", "kind",
                                            "huber", "prior_weight", NULL};

/* The runs of up to 8 files, flattened. */
typedef struct runset {
    pc_runs *runs[MAX_FILES];
    int nfiles, n;
    const pc_run **run;
    const char **problem;
    pc_run_pred *pred;
} runset;

static void runset_free(runset *s) {
    for (int i = 0; i < s->nfiles; i++) pc_runs_free(s->runs[i]);
    free(s->run), free(s->problem), free(s->pred);
    memset(s, 0, sizeof *s);
}

static pc_status runset_load(runset *s, const char *const *paths, int nfiles, pc_error *err) {
    memset(s, 0, sizeof *s);
    for (int f = 0; f < nfiles; f++) {
        pc_status st = pc_runs_load(paths[f], &s->runs[f], err);
        if (st) return st;
        s->nfiles++;
        s->n += pc_runs_count(s->runs[f]);
    }
    size_t n = s->n > 0 ? (size_t)s->n : 1;
    s->run = calloc(n, sizeof *s->run);
    s->problem = calloc(n, sizeof *s->problem);
    s->pred = calloc(n, sizeof *s->pred);
    if (!s->run || !s->problem || !s->pred) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    int k = 0;
    for (int f = 0; f < s->nfiles; f++)
        for (int i = 0; i < pc_runs_count(s->runs[f]); i++, k++) {
            s->run[k] = pc_runs_at(s->runs[f], i);
            s->problem[k] = pc_runs_problem(s->runs[f], i);
        }
    return PC_OK;
}

/* kinds: bit 0 training, bit 1 serving */
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

/* The calibration fitted, from the priors and file by file, on the runs of run i's kind
 * outside its group gi; NULL when none could be fitted. */
static pc_calib *fit_without(const runset *s, int i, const char *gi, int by_chip,
                             const pc_calib_fit_opts *fo, unsigned char *use) {
    const pc_run *ri = s->run[i];
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
    if (st) pc_calib_free(cal), cal = NULL;
    return cal;
}

/* Leave one group out: each source's runs (each chip's, for a kind with one
 * source) are predicted by a calibration fitted, from the priors, on the other
 * groups of the same kind only. */
static pc_status predict_loso(runset *s, int kinds, const pc_calib_fit_opts *fo, int *by_chip_runs,
                              pc_error *err) {
    unsigned char *use = calloc((size_t)(s->n > 0 ? s->n : 1), 1);
    unsigned char *done = calloc((size_t)(s->n > 0 ? s->n : 1), 1);
    pc_status st = PC_OK;
    if (!use || !done) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    *by_chip_runs = 0;
    for (int i = 0; i < s->n && !st; i++) {
        if (done[i] || s->problem[i] || !kind_ok(kinds, s->run[i]->kind)) continue;
        int by_chip;
        const char *gi = group_of(s, i, &by_chip);
        pc_calib *cal = fit_without(s, i, gi, by_chip, fo, use);
        if (!cal) {
            st = pc_fail(err, PC_ERR_INVALID,
                         "leave-one-out fit without '%s' failed (no other runs of its kind?)", gi);
            break;
        }
        for (int q = 0; q < s->n; q++) {
            int bq;
            if (done[q] || s->problem[q] || s->run[q]->kind != s->run[i]->kind ||
                strcmp(group_of(s, q, &bq), gi))
                continue;
            pc_run_predict(s->run[q], cal, &s->pred[q], NULL);
            done[q] = 1;
            if (by_chip) (*by_chip_runs)++;
        }
        pc_calib_free(cal);
    }
    free(use), free(done);
    return st;
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
        if (!kind_ok(kinds, r->kind) || (source && strcmp(r->source, source)) ||
            (chip && strcmp(r->chip_name, chip)))
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

/* ---------------- the request ---------------- */

typedef struct validate_req {
    const char *paths[MAX_FILES];
    int nfiles, loso, kinds, cal_given;
    const char *calibration;
    pc_calib_fit_opts fo;
} validate_req;

static pc_status read_request(const cJSON *root, validate_req *r, pc_error *err) {
    const cJSON *list;
    const char *kind = NULL;
    pc_status st = pc_qreq_list(root, "runs", &list, &r->nfiles, err);
    if (st) return st;
    if (r->nfiles < 1) return pc_fail(err, PC_ERR_ARG, "validate: give a runs file ('runs')");
    if (r->nfiles > MAX_FILES)
        return pc_fail(err, PC_ERR_ARG, "validate: at most %d runs files in 'runs'", MAX_FILES);
    for (int i = 0; i < r->nfiles; i++) {
        const cJSON *it = pc_qreq_item(list, r->nfiles, i);
        if (!cJSON_IsString(it))
            return pc_fail(err, PC_ERR_ARG, "'runs': expected the path of a runs file (a "
                                            "string) or a list of them");
        r->paths[i] = it->valuestring;
    }
    r->calibration = "builtin";
    r->kinds = 3;
    r->fo = pc_calib_fit_opts_default();
    if ((st = pc_qreq_string(root, "calibration", &r->calibration, err)) ||
        (st = pc_qreq_bool(root, "loso", &r->loso, err)) ||
        (st = pc_qreq_string(root, "kind", &kind, err)) ||
        (st = pc_qreq_count(root, "huber", 1, &r->fo.huber, err)) ||
        (st = pc_qreq_count(root, "prior_weight", 0, &r->fo.prior_weight, err)))
        return st;
    r->cal_given = cJSON_GetObjectItemCaseSensitive(root, "calibration") != NULL &&
                   !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "calibration"));
    if (kind) {
        r->kinds = !strcmp(kind, "train") ? 1 : !strcmp(kind, "serve") ? 2 : !strcmp(kind, "all") ? 3 : 0;
        if (!r->kinds)
            return pc_fail(err, PC_ERR_ARG, "'kind': expected train, serve or all, got '%s'",
                           kind);
    }
    if (!(r->fo.prior_weight >= 0))
        return pc_fail(err, PC_ERR_ARG, "'prior_weight': expected a number >= 0, got %g",
                       r->fo.prior_weight);
    if (!(r->fo.huber >= 1e-6 && r->fo.huber <= 10))
        return pc_fail(err, PC_ERR_ARG, "'huber': expected a number in [1e-6, 10], got %g",
                       r->fo.huber);
    /* a calibration as well as loso: the calibration would silently not be used */
    if (r->loso && r->cal_given)
        return pc_fail(err, PC_ERR_ARG, "'loso' fits its own calibrations; drop 'calibration'");
    return PC_OK;
}

pc_status pc_q_validate(const char *request, cJSON **out, pc_error *err) {
    cJSON *root = NULL;
    validate_req r;
    memset(&r, 0, sizeof r);
    pc_status st = pc_qreq_parse(request, "validate", VALIDATE_KEYS, &root, err);
    if (!st) st = read_request(root, &r, err);
    pc_calib *cal = NULL;
    if (!st && !r.loso) st = pc_calib_from_spec(r.calibration, &cal, err);
    runset s;
    memset(&s, 0, sizeof s);
    if (!st) st = runset_load(&s, r.paths, r.nfiles, err);
    int by_chip = 0;
    if (!st && r.loso) st = predict_loso(&s, r.kinds, &r.fo, &by_chip, err);
    else if (!st) predict_all(&s, cal, r.kinds);
    if (!st) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "calibration",
                                r.loso ? "leave-one-source-out" : pc_calib_origin(cal));
        cJSON *arr = cJSON_AddArrayToObject(doc, "runs");
        for (int i = 0; i < s.n; i++)
            if (kind_ok(r.kinds, s.run[i]->kind))
                cJSON_AddItemToArray(arr, run_json(s.run[i], s.problem[i], &s.pred[i]));
        cJSON *sum = summaries_json(&s, r.kinds);
        if (r.loso) cJSON_AddNumberToObject(sum, "held_out_by_chip_runs", by_chip);
        cJSON_AddItemToObject(doc, "summary", sum);
        cJSON *bad = cJSON_AddArrayToObject(doc, "invalid_runs");
        for (int i = 0; i < s.n; i++)
            if (s.problem[i]) cJSON_AddItemToArray(bad, cJSON_CreateString(s.problem[i]));
        *out = doc;
    }
    runset_free(&s);
    pc_calib_free(cal);
    cJSON_Delete(root);
    return st;
}
