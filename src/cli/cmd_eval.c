/* perfcast eval: scores trained models on a split, with how sure each score is. */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "perfcast/dist.h"
#include "perfcast/metrics.h"
#include "perfcast/predict.h"
#include "plots.h"

static void eval_help(FILE *f) {
    fprintf(
        f,
        "usage: perfcast eval --model MODEL [--model MODEL ...] --data DIR [--split valid]\n"
        "                     [--seeds N [--seed S]] [--max-memory SIZE] [--json]\n"
        "                     [--svg OUT.svg]\n\n"
        "Scores every graph of the split with the model's collection metric: tile prints\n"
        "the mean tile score, ordered-pair accuracy and top-1/5/10 slowdown; layout the\n"
        "mean Kendall tau-b and ordered-pair accuracy. Each mean comes with its 95%%\n"
        "confidence interval, a percentile bootstrap over the graphs (%d resamples,\n"
        "fixed seed: the same interval every run).\n\n"
        "Several checkpoints (--model repeated, or --seeds) are each scored as above,\n"
        "then summarized per metric: mean ± sample std (and min, max) over them, the\n"
        "spread between training seeds.\n\n"
        "  --model MODEL   checkpoint written by perfcast train (repeat for several)\n"
        "  --data DIR      dataset root\n"
        "  --split S       train, valid (default) or test (needs runtimes)\n"
        "  --seeds N       the N checkpoints of 'perfcast train --seeds N --out MODEL':\n"
        "                  MODEL with .seedS before its extension, S = seed .. seed+N-1\n"
        "                  (model.safetensors -> model.seed1.safetensors, ...)\n"
        "  --seed S        first seed of --seeds (default 1, train's default)\n"
        "  --threads N     worker threads (0 = all cores)\n"
        "  --max-memory SIZE  the memory budget of the model's and each graph's load: GiB,\n"
        "                  or with a unit (512MiB); default half the available memory\n"
        "  --tta M         models with --cfg-attention: average each config's score over\n"
        "                  M orderings of the configs (default 1 = off)\n"
        "  --tta-seed S    seed of those orderings (default 1)\n"
        "  --mpi-timeout S under mpirun: end the job when a rank waits more than S seconds\n"
        "                  for the others (a stalled rank; default $PERFCAST_MPI_TIMEOUT,\n"
        "                  else 300; 0: never)\n"
        "  --svg OUT.svg   one checkpoint: its predicted score against the measured\n"
        "                  runtime of every config, one panel per graph (the first %d of\n"
        "                  the split), the true and the predicted best marked\n"
        "  --json          machine-readable output: each metric's key as before plus\n"
        "                  KEY_ci95 = [lo, hi]; several checkpoints: \"models\" (one such\n"
        "                  object each, with \"model\") and \"mean\", \"std\", \"min\", \"max\"\n",
        PC_BOOTSTRAP_RESAMPLES, PC_PLOT_MAX_PANELS);
    fputs("\nAn ensemble model (perfcast train --ensemble N) is scored as one: each config\n"
          "gets the mean of its members' scores, each centered over the graph's configs.\n",
          f);
}

/* ---- one result's metrics ---- */

enum { M_METRIC, M_TAU, M_SD1, M_SD5, M_SD10, M_OPA, M_COUNT };
static const char *const json_key[M_COUNT] = {"metric",        "kendall_tau",    "top1_slowdown",
                                              "top5_slowdown", "top10_slowdown", "opa"};
/* The text lines' order (tile: all; layout: metric, opa). */
static const int text_order[M_COUNT] = {M_METRIC, M_TAU, M_OPA, M_SD1, M_SD5, M_SD10};

static int shown(const pc_eval_result *r, int k, int text) {
    if (k == M_SD1 || k == M_SD5 || k == M_SD10) return r->tile;
    if (k == M_TAU) return r->tile || !text; /* layout text: the metric is tau */
    return 1;
}

static double value_of(const pc_eval_result *r, int k, double ci[2]) {
    const double *c;
    double v;
    switch (k) {
    case M_METRIC: v = r->metric, c = r->metric_ci; break;
    case M_TAU: v = r->tau, c = r->tau_ci; break;
    case M_OPA: v = r->opa, c = r->opa_ci; break;
    default: v = r->slowdown[k - M_SD1], c = r->slowdown_ci[k - M_SD1]; break;
    }
    if (ci) ci[0] = c[0], ci[1] = c[1];
    return v;
}

static const char *text_name(const pc_eval_result *r, int k) {
    if (k == M_METRIC) return r->tile ? "tile_score" : "kendall_tau";
    return json_key[k];
}

static void jnum(const char *key, double v, int last) {
    if (isfinite(v)) printf("\"%s\": %.10g%s", key, v, last ? "" : ", ");
    else printf("\"%s\": null%s", key, last ? "" : ", ");
}

static void jval(double v) {
    if (isfinite(v))
        printf("%.10g", v);
    else
        printf("null");
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void jstr(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

/* One result as a JSON object (no newline); model is NULL for a single checkpoint. */
static void print_json_one(const pc_eval_result *r, const char *split, const char *model) {
    printf("{");
    if (model) {
        printf("\"model\": ");
        jstr(model);
        printf(", ");
    }
    printf("\"collection\": \"%s\", \"split\": \"%s\", \"graphs\": %d, \"metric_name\": "
           "\"%s\", ",
           pc_collection_name(r->collection), split, r->graphs, text_name(r, M_METRIC));
    for (int k = 0; k < M_COUNT; k++)
        if (shown(r, k, 0)) jnum(json_key[k], value_of(r, k, NULL), 0);
    for (int k = 0; k < M_COUNT; k++) {
        double ci[2];
        if (!shown(r, k, 0)) continue;
        value_of(r, k, ci);
        printf("\"%s_ci95\": [", json_key[k]);
        jval(ci[0]);
        printf(", ");
        jval(ci[1]);
        printf("], ");
    }
    if (r->members > 1) {
        printf("\"members\": %d, \"member_metric\": {", r->members);
        jnum("mean", r->member_metric_mean, 0);
        jnum("std", r->member_metric_std, 1);
        printf("}, \"member_metric_ci95\": [");
        jval(r->member_metric_ci[0]);
        printf(", ");
        jval(r->member_metric_ci[1]);
        printf("], ");
    }
    printf("\"ci\": {\"level\": %g, \"resamples\": %d, \"over\": \"graphs\"}}", r->ci_level,
           r->ci_resamples);
}

/* An ensemble's members, each scored alone: how much the score depends on the seed. */
static void print_text_members(const pc_eval_result *r, const char *indent) {
    if (r->members < 2) return;
    printf("%s%d members alone: %s %.6f ± %.6f (mean ± std over members)", indent, r->members,
           text_name(r, M_METRIC), r->member_metric_mean, r->member_metric_std);
    if (isfinite(r->member_metric_ci[0]) && isfinite(r->member_metric_ci[1]))
        printf("   %g%% CI over graphs and members [%.6f, %.6f]", 100 * r->ci_level,
               r->member_metric_ci[0], r->member_metric_ci[1]);
    printf("\n");
}

static void print_text_one(const pc_eval_result *r, const char *indent) {
    for (int i = 0; i < M_COUNT; i++) {
        int k = text_order[i];
        double ci[2];
        if (!shown(r, k, 1)) continue;
        double v = value_of(r, k, ci);
        printf("%s%-15s %.6f", indent, text_name(r, k), v);
        if (isfinite(ci[0]) && isfinite(ci[1]))
            printf("   %g%% CI [%.6f, %.6f]", 100 * r->ci_level, ci[0], ci[1]);
        printf("\n");
    }
    print_text_members(r, indent);
}

/* ---- several checkpoints ---- */

static int print_several(const pc_eval_result *r, const char *const *models, int n,
                         const char *split, int json) {
    pc_spread sp[M_COUNT];
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return fputs("perfcast: error: out of memory\n", stderr), PC_EXIT_FAIL;
    for (int k = 0; k < M_COUNT; k++) {
        for (int i = 0; i < n; i++) v[i] = value_of(&r[i], k, NULL);
        pc_error e;
        if (pc_spread_compute(v, (size_t)n, &sp[k], &e) != PC_OK) {
            free(v);
            return pc_cli_fail(&e);
        }
    }
    free(v);
    if (json) {
        printf("{\"collection\": \"%s\", \"split\": \"%s\", \"metric_name\": \"%s\", "
               "\"models\": [",
               pc_collection_name(r[0].collection), split, text_name(&r[0], M_METRIC));
        for (int i = 0; i < n; i++) {
            print_json_one(&r[i], split, models[i]);
            printf(i + 1 < n ? ", " : "], ");
        }
        static const char *const stat[4] = {"mean", "std", "min", "max"};
        for (int s = 0; s < 4; s++) {
            printf("\"%s\": {", stat[s]);
            for (int k = 0, first = 1; k < M_COUNT; k++) {
                if (!shown(&r[0], k, 0)) continue;
                double x = s == 0   ? sp[k].mean
                           : s == 1 ? sp[k].std
                           : s == 2 ? sp[k].min
                                    : sp[k].max;
                printf("%s", first ? "" : ", ");
                jnum(json_key[k], x, 1);
                first = 0;
            }
            printf("}%s", s < 3 ? ", " : "");
        }
        printf("}\n");
        return PC_EXIT_OK;
    }
    printf("%s %s: %d checkpoints\n", pc_collection_name(r[0].collection), split, n);
    for (int i = 0; i < n; i++) {
        printf("%s (%d graphs)\n", models[i], r[i].graphs);
        print_text_one(&r[i], "  ");
    }
    printf("over %d checkpoints: mean ± std (min .. max)\n", n);
    for (int i = 0; i < M_COUNT; i++) {
        int k = text_order[i];
        if (!shown(&r[0], k, 1)) continue;
        printf("  %-15s %.6f ± %.6f (%.6f .. %.6f)\n", text_name(&r[0], k), sp[k].mean, sp[k].std,
               sp[k].min, sp[k].max);
    }
    return PC_EXIT_OK;
}

/* ---- the command ---- */

#define MAX_MODELS 256

typedef struct eval_args {
    const char *models[MAX_MODELS], *data, *split, *svg;
    int n_models, json, threads, tta;
    uint64_t tta_seed, max_memory;
    double mpi_timeout; /* --mpi-timeout; < 0: not given */
    long long seeds, seed;
    char **owned; /* the --seeds paths */
} eval_args;

/* --seeds N: the one --model's seed siblings; -1 to go on, else the exit code. */
static int expand_seeds(eval_args *a) {
    if (a->seeds == 0) return -1;
    if (a->n_models != 1)
        return pc_cli_usage_error("eval",
                                  "--seeds N takes one --model (the --out of train "
                                  "--seeds), got %d",
                                  a->n_models);
    if (a->seed + a->seeds - 1 < a->seed)
        return pc_cli_usage_error("eval", "--seed + --seeds overflows");
    a->owned = calloc((size_t)a->seeds, sizeof *a->owned);
    if (!a->owned) return fputs("perfcast: error: out of memory\n", stderr), PC_EXIT_FAIL;
    const char *out = a->models[0];
    size_t cap = strlen(out) + 32;
    for (long long i = 0; i < a->seeds; i++) {
        if (!(a->owned[i] = malloc(cap)) ||
            pc_cli_seed_path(out, (unsigned long long)(a->seed + i), a->owned[i], cap))
            return fputs("perfcast: error: out of memory\n", stderr), PC_EXIT_FAIL;
        a->models[i] = a->owned[i];
    }
    a->n_models = (int)a->seeds;
    return -1;
}

static int eval_parse(int argc, char **argv, eval_args *a) {
    static const struct option opts[] = {{"model", required_argument, 0, 'm'},
                                         {"data", required_argument, 0, 'd'},
                                         {"split", required_argument, 0, 's'},
                                         {"threads", required_argument, 0, 't'},
                                         {"seeds", required_argument, 0, 'N'},
                                         {"seed", required_argument, 0, 'S'},
                                         {"json", no_argument, 0, 'j'},
                                         {"tta", required_argument, 0, 'A'},
                                         {"tta-seed", required_argument, 0, 'B'},
                                         {"svg", required_argument, 0, 'V'},
                                         {"mpi-timeout", required_argument, 0, 'T'},
                                         {"max-memory", required_argument, 0, 'M'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    long long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "m:d:s:t:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (a->n_models == MAX_MODELS)
                return pc_cli_usage_error("eval", "at most %d --model", MAX_MODELS);
            a->models[a->n_models++] = optarg;
            break;
        case 'd': a->data = optarg; break;
        case 's':
            if (pc_split_find(optarg) < 0)
                return pc_cli_usage_error("eval", "--split expects train, valid or test, got "
                                          "'%s'", optarg);
            a->split = optarg;
            break;
        case 't':
            if (pc_cli_parse_i64(optarg, 0, 1024, &v))
                return pc_cli_usage_error("eval", "--threads expects 0..1024, got '%s'", optarg);
            a->threads = (int)v;
            break;
        case 'N':
            if (pc_cli_parse_i64(optarg, 1, MAX_MODELS, &a->seeds))
                return pc_cli_usage_error("eval", "--seeds expects 1..%d, got '%s'", MAX_MODELS,
                                          optarg);
            break;
        case 'S':
            if (pc_cli_parse_i64(optarg, 0, INT64_MAX, &a->seed))
                return pc_cli_usage_error("eval",
                                          "--seed expects a non-negative integer, got "
                                          "'%s'",
                                          optarg);
            break;
        case 'j': a->json = 1; break;
        case 'V': a->svg = optarg; break;
        case 'T':
            if ((v = pc_cli_mpi_timeout("eval", optarg, &a->mpi_timeout)) >= 0) return (int)v;
            break;
        case 'M':
            if (pc_cli_max_memory("eval", optarg, &a->max_memory)) return PC_EXIT_USAGE;
            break;
        case 'A':
        case 'B':
            if (pc_cli_tta_opt("eval", c == 'A' ? "--tta" : "--tta-seed", optarg, &a->tta,
                               &a->tta_seed))
                return PC_EXIT_USAGE;
            break;
        case 'h': eval_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("eval", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!a->n_models) return pc_cli_usage_error("eval", "--model MODEL is required");
    if (!a->data) return pc_cli_usage_error("eval", "--data DIR is required");
    if (optind != argc) return pc_cli_usage_error("eval", "unexpected argument '%s'", argv[optind]);
    int rc = expand_seeds(a);
    if (rc < 0 && a->svg) {
        if (a->n_models > 1)
            return pc_cli_usage_error("eval", "--svg draws one checkpoint, got %d", a->n_models);
        const char *in[2] = {a->models[0], a->data};
        rc = pc_cli_check_not_input("eval", "--svg", a->svg, in, 2);
        if (rc < 0) rc = pc_cli_check_out_file("eval", "--svg", a->svg);
    }
    return rc;
}

/* pc_eval_run_dist with test-time augmentation, the memory budget and progress: the model
   loaded as a predictor. */
static pc_status eval_one(const char *model, const eval_args *a, const pc_dist *dist,
                          pc_cli_progress *pr, pc_eval_result *r, pc_error *e) {
    pc_predictor *p = NULL;
    pc_status st = pc_predictor_load_max(model, a->threads, a->max_memory, &p, e);
    if (!st && a->tta > 1) st = pc_predictor_set_tta(p, a->tta, a->tta_seed, e);
    if (!st && pr) pc_predictor_set_progress(p, pc_cli_progress_cb, pr);
    if (!st) st = pc_predictor_eval(p, a->data, a->split, dist, r, e);
    pc_predictor_free(p);
    return st;
}

/* Under MPI: the ranks agree on the options, the checkpoints and the split's files. */
static pc_status eval_agree(const pc_dist *dist, const eval_args *a, pc_error *e) {
    if (pc_dist_size(dist) <= 1) return PC_OK;
    pc_dataset *ds = NULL;
    pc_status st = pc_dataset_open(a->data, &ds, e);
    char opts[256];
    snprintf(opts, sizeof opts, "split=%s|tta=%d|tta_seed=%llu|models=%d", a->split, a->tta,
             (unsigned long long)a->tta_seed, a->n_models);
    /* every rank joins the agreement, one that cannot open the data with no files */
    pc_status ag = pc_cli_dist_agree(dist, "eval", opts, a->models, a->n_models, ds,
                                     pc_split_find(a->split), st ? &(pc_error){0} : e);
    pc_dataset_close(ds);
    return st ? st : ag;
}

/* Scores every checkpoint (all ranks); rank 0 prints. */
static int eval_all(int argc, char **argv, eval_args *a) {
    pc_error e;
    pc_eval_result *r = calloc((size_t)a->n_models, sizeof *r);
    if (!r) return fputs("perfcast: error: out of memory\n", stderr), PC_EXIT_FAIL;
    pc_dist *dist = NULL;
    if (pc_cli_dist_open(&argc, &argv, a->mpi_timeout, &dist, &e) != PC_OK) {
        free(r);
        return pc_cli_fail(&e);
    }
    pc_status st = eval_agree(dist, a, &e);
    pc_cli_progress *pr =
        pc_cli_progress_new("eval", pc_dist_rank(dist) == 0 && pc_cli_progress_wanted());
    for (int i = 0; i < a->n_models && !st; i++) {
        r[i].struct_size = sizeof r[i];
        st = eval_one(a->models[i], a, dist, pr, &r[i], &e);
        if (!st && r[i].collection != r[0].collection) {
            e.code = st = PC_ERR_INVALID;
            snprintf(e.msg, sizeof e.msg,
                     "eval: %.400s is a %s model, %.400s a %s one: "
                     "checkpoints evaluated together must share a collection",
                     a->models[i], pc_collection_name(r[i].collection), a->models[0],
                     pc_collection_name(r[0].collection));
        }
    }
    pc_cli_progress_end(pr);
    if (st != PC_OK && pc_dist_size(dist) > 1)
        pc_cli_dist_abort(dist, e.msg); /* the other ranks must not wait */
    int rank = pc_dist_rank(dist), rc = PC_EXIT_OK;
    pc_cli_dist_close(dist);
    if (st != PC_OK)
        rc = pc_cli_fail(&e);
    else if (rank == 0 && a->n_models > 1)
        rc = print_several(r, a->models, a->n_models, a->split, a->json);
    else if (rank == 0 && a->json) {
        print_json_one(&r[0], a->split, NULL);
        printf("\n");
    } else if (rank == 0) {
        printf("%s %s: %d graphs\n", pc_collection_name(r[0].collection), a->split, r[0].graphs);
        print_text_one(&r[0], "");
    }
    if (rc == PC_EXIT_OK && rank == 0 && a->svg) {
        int prc = pc_plot_eval(a->models[0], a->data, a->split, a->threads, a->tta, a->tta_seed,
                               a->max_memory, a->svg);
        rc = prc < 0 ? PC_EXIT_OK : prc;
        if (rc == PC_EXIT_OK && !a->json) printf("wrote %s\n", a->svg);
    }
    free(r);
    return rc;
}

int pc_cmd_eval(int argc, char **argv) {
    eval_args a;
    memset(&a, 0, sizeof a);
    a.split = "valid";
    a.seed = 1;
    a.tta = 1;
    a.tta_seed = 1;
    a.mpi_timeout = -1; /* not given */
    a.max_memory = PC_MEMORY_AUTO;
    int rc = eval_parse(argc, argv, &a);
    if (rc < 0) rc = eval_all(argc, argv, &a);
    if (a.owned)
        for (long long i = 0; i < a.seeds; i++) free(a.owned[i]);
    free(a.owned);
    return rc;
}
