/*
 * perfcast tune: searches a graph's configuration space with a trained
 * model (or, --oracle, with synth's simulator) and writes the best
 * configurations found as a TpuGraphs .npz (include/perfcast/tune.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "analytic_cli.h"
#include "perfcast/synth.h"
#include "perfcast/tune.h"

static void tune_help(FILE *f) {
    fprintf(f, "usage: perfcast tune --model MODEL FILE.npz|PROGRAM.hlo [--out OUT.npz] [--top K]\n"
               "                     [--budget-s S] [--seed N] [--max-memory SIZE] [--json]\n"
               "       perfcast tune --model MODEL --data DIR [--split test] --out OUTDIR\n"
               "       perfcast tune --oracle [--synth-seed N ...] FILE.npz [--out OUT.npz]\n\n"
               "Searches the graph's configuration space for the configs the model predicts\n"
               "fastest and writes the best K, best first, as a TpuGraphs .npz of the same\n"
               "kind with the same graph arrays (config_runtime all 0). The space is valid by\n"
               "construction: layout, per configurable node each tensor the file's configs\n"
               "set gets -1 (the compiler's choice) or a minor_to_major order of its rank;\n"
               "tile, the bounds the file's configs use, each taking the tile\n"
               "sizes the file's configs give it (--tile-new-sizes: more). The search\n"
               "starts from the compiler's default (layout: all -1; tile files do not say\n"
               "which config is the default) and the file's best-scored configs, scores\n"
               "--batch candidates per model call, and stops on --budget-s or when\n"
               "--patience rounds bring nothing better (small tile spaces: all of it).\n"
               "PROGRAM.hlo: the graph and candidates are built as `rank` builds them\n"
               "(--candidates enumerated) and the proposals are also printed in rank's\n"
               "notation (feed them back with rank --configs).\n\n"
               "  --model MODEL       checkpoint written by perfcast train\n"
               "  --out PATH          output .npz (--data: output directory, one <stem>.npz\n"
               "                      per graph)\n"
               "  --data DIR          tune every graph of a split of the model's collection\n"
               "  --split NAME        with --data (default test)\n"
               "  --top K             proposals kept (default 5)\n"
               "  --budget-s S        search time per graph, seconds (default 10)\n"
               "  --seed N            search seed (default 1)\n"
               "  --batch N           candidates per model call (default 256)\n"
               "  --patience N        rounds without improvement before stopping (default 40)\n"
               "  --max-scored N      stop after N candidates (reproducible runs; default none)\n"
               "  --candidates N      HLO: enumerated candidates the space is learned from\n"
               "                      (default 256)\n"
               "  --kernel NAME       HLO, tile: only this kernel\n"
               "  --threads N         model threads (0 = all cores)\n"
               "  --max-memory SIZE   the memory budget of the model's and each graph's load,\n"
               "                      of reading PROGRAM.hlo, of the model's prepared graph\n"
               "                      and of the search's batches: GiB, or with a unit\n"
               "                      (512MiB); default half the available memory\n"
               "  --risk K            rank by the conservative score mean + K x spread of an\n"
               "                      ensemble model (train --ensemble N), the spread of its\n"
               "                      predicted difference from the default: a layout proposal\n"
               "                      beats the default only by a gain over K spreads\n"
               "                      (default 1; 0: the mean)\n"
               "  --tile-risk K       --risk for tile graphs (default 0: the mean; no default\n"
               "                      is known there, and the spread favoured agreed, not\n"
               "                      faster, configs)\n"
               "  --max-changes N     layout trust region: at most N tensors changed from the\n"
               "                      compiler default (default 4; 0 = no limit; --oracle:\n"
               "                      no limit unless given)\n"
               "  --tile-max-changes N  tile trust region: at most N bounds changed from the\n"
               "                      nearest of the file's configs (0: only those; -1: no\n"
               "                      limit); default 2 for models trained with the rsteps\n"
               "                      encoding (train's tile default), else 0\n"
               "  --tile-new-sizes    tile: also try sizes no config of the file uses (synth's\n"
               "                      autotuner rule); default: with a region and an rsteps\n"
               "                      model; --no-tile-new-sizes: the file's sizes, combined\n"
               "                      anew\n"
               "  --oracle            score with synth's simulator instead of a model (the\n"
               "                      search's ceiling on a synth file); --synth-seed N,\n"
               "                      --synth-scale S, --synth-graphs N, --synth-layout-nodes N,\n"
               "                      --synth-tile-configs N say how synth was run\n"
               "  --json              machine-readable output\n");
}

typedef struct tune_args {
    const char *model, *path, *out, *data, *split, *kernel;
    int json, threads, oracle, max_changes_set;
    long long candidates;
    pc_tune_opts o;
    pc_synth_opts so;
    pc_predictor *p; /* --data: the model, for its collection and every graph's query */
} tune_args;

/* ---- the request: the flags as the tune query's keys (perfcast/query.h) ----------- */

static cJSON *request_of(const tune_args *a, const char *file, const char *out) {
    cJSON *r = cJSON_CreateObject();
    if (a->model) cJSON_AddStringToObject(r, "model", a->model);
    cJSON_AddStringToObject(r, "file", file);
    if (out) cJSON_AddStringToObject(r, "out", out);
    if (a->kernel) cJSON_AddStringToObject(r, "kernel", a->kernel);
    if (a->oracle) cJSON_AddTrueToObject(r, "oracle");
    if (a->o.tile_new_sizes != PC_TUNE_AUTO) /* else the model decides */
        cJSON_AddBoolToObject(r, "tile_new_sizes", a->o.tile_new_sizes > 0);
    cJSON_AddNumberToObject(r, "top", a->o.top_k);
    cJSON_AddNumberToObject(r, "budget_s", a->o.budget_s);
    cJSON_AddNumberToObject(r, "seed", (double)a->o.seed);
    cJSON_AddNumberToObject(r, "batch", (double)a->o.batch);
    cJSON_AddNumberToObject(r, "patience", a->o.patience);
    cJSON_AddNumberToObject(r, "max_scored", (double)a->o.max_scored);
    cJSON_AddNumberToObject(r, "candidates", (double)a->candidates);
    cJSON_AddNumberToObject(r, "threads", a->threads);
    if (a->o.max_memory != PC_MEMORY_AUTO)
        cJSON_AddNumberToObject(r, "max_memory", (double)a->o.max_memory);
    cJSON_AddNumberToObject(r, "risk", a->o.risk);
    cJSON_AddNumberToObject(r, "tile_risk", a->o.tile_risk);
    cJSON_AddNumberToObject(r, "max_changes", (double)a->o.max_changes);
    if (a->o.tile_max_changes != PC_TUNE_AUTO)
        cJSON_AddNumberToObject(r, "tile_max_changes", (double)a->o.tile_max_changes);
    if (a->oracle) {
        cJSON_AddNumberToObject(r, "synth_seed", (double)a->so.seed);
        cJSON_AddStringToObject(r, "synth_scale", pc_synth_scale_name(a->so.scale));
        if (a->so.graphs_per_split)
            cJSON_AddNumberToObject(r, "synth_graphs", (double)a->so.graphs_per_split);
        if (a->so.layout_nodes)
            cJSON_AddNumberToObject(r, "synth_layout_nodes", (double)a->so.layout_nodes);
        if (a->so.tile_configs)
            cJSON_AddNumberToObject(r, "synth_tile_configs", (double)a->so.tile_configs);
    }
    if (!a->json) cJSON_AddTrueToObject(r, "spelled");
    return r;
}

static pc_status nomem(pc_error *e) {
    e->code = PC_ERR_NOMEM;
    snprintf(e->msg, sizeof e->msg, "out of memory");
    return PC_ERR_NOMEM;
}

static double num(const cJSON *v) { return cJSON_IsNumber(v) ? v->valuedouble : NAN; }

/* Runs the tune query on file (progress on a terminal): its document, or NULL after
 * printing the error (*rc: the exit code). */
static cJSON *run_query(const tune_args *a, const char *file, const char *out, int *rc) {
    cJSON *req = request_of(a, file, out), *doc = NULL;
    char *text = cJSON_PrintUnformatted(req), *res = NULL;
    cJSON_Delete(req);
    pc_error e;
    pc_error_clear(&e);
    pc_cli_progress *pr = pc_cli_progress_new("tune", pc_cli_progress_wanted());
    /* --data: the model loaded once (a->p) serves every graph */
    pc_status st = text ? pc_query_tune_json(text, a->p, pr ? pc_cli_progress_cb : NULL, pr, &res,
                                             &e)
                        : nomem(&e);
    pc_cli_progress_end(pr);
    cJSON_free(text);
    if (!st && !(doc = cJSON_Parse(res))) st = nomem(&e);
    pc_query_free(res);
    if (st) *rc = pc_cli_fail(&e);
    return doc;
}

/* ---- printing ----------------------------------------------------------------- */

static void print_summary(const tune_args *a, const cJSON *o) {
    int tile = !strcmp(pc_acli_jstr(o, "kind"), "tile");
    const cJSON *scores = cJSON_GetObjectItemCaseSensitive(o, "scores");
    double best = num(cJSON_GetArrayItem(scores, 0));
    int k = cJSON_GetArraySize(scores);
    printf("%s: %s, %lld searched %s, space 10^%.1f\n", pc_acli_jstr(o, "graph"),
           pc_acli_jstr(o, "kind"), pc_acli_jint(o, "vars"), tile ? "tile bounds" : "tensors",
           pc_acli_jnum(o, "log10_space"));
    printf("  scored %lld candidates in %lld rounds, %.2f s (stopped: %s)\n",
           pc_acli_jint(o, "scored"), pc_acli_jint(o, "rounds"), pc_acli_jnum(o, "seconds"),
           pc_acli_jstr(o, "stop"));
    const char *unit = a->oracle ? "ns (simulated)" : "(model score, lower = faster)";
    if (k > 0 && cJSON_GetObjectItemCaseSensitive(o, "default_score")) {
        double d = pc_acli_jnum(o, "default_score");
        printf("  best %.6g vs compiler default %.6g %s: predicted gain %.6g%s\n", best, d, unit,
               d - best, a->oracle ? "" : " score units");
    }
    if (k > 0 && cJSON_GetObjectItemCaseSensitive(o, "input_best"))
        printf("  best %.6g vs the file's best-scored config %lld: %.6g\n", best,
               pc_acli_jint(o, "input_best"), pc_acli_jnum(o, "input_best_score"));
}

/* One file (.npz, cache folder or HLO program): the query's document as text or JSON. */
static int tune_file(const tune_args *a) {
    int rc = PC_EXIT_OK;
    cJSON *doc = run_query(a, a->path, a->out, &rc);
    if (!doc) return rc;
    if (a->json) return pc_cli_json_print(doc);
    int hlo = cJSON_IsArray(doc);
    const cJSON *o;
    const cJSON *list = hlo ? doc : NULL;
    cJSON_ArrayForEach(o, list) {
        print_summary(a, o);
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(o, "spelled");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "scores");
        for (int k = 0; k < cJSON_GetArraySize(sc); k++)
            printf("  %d  score %.6g  %s\n", k + 1, num(cJSON_GetArrayItem(sc, k)),
                   cJSON_IsString(cJSON_GetArrayItem(sp, k))
                       ? cJSON_GetArrayItem(sp, k)->valuestring
                       : "?");
        if (a->out) printf("wrote %s\n", pc_acli_jstr(o, "out"));
    }
    if (!hlo) {
        print_summary(a, doc);
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(doc, "scores");
        for (int k = 0; k < cJSON_GetArraySize(sc); k++)
            printf("  %d  score %.6g\n", k + 1, num(cJSON_GetArrayItem(sc, k)));
        if (a->out) printf("wrote %s (%d proposals)\n", a->out, cJSON_GetArraySize(sc));
    }
    cJSON_Delete(doc);
    return rc;
}

/* ---- a whole split ------------------------------------------------------------- */

static void stem_of(const char *path, char *buf, size_t cap) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t len = strlen(b);
    if (len > 4 && !strcmp(b + len - 4, ".npz")) len -= 4;
    snprintf(buf, cap, "%.*s", (int)len, b);
}

static int tune_split(tune_args *a) {
    pc_error e;
    pc_dataset *ds = NULL;
    int coll = pc_predictor_collection(a->p), split = pc_split_find(a->split);
    if (split < 0)
        return pc_cli_usage_error("tune",
                                  "--split expects train, valid or test, got "
                                  "'%s'",
                                  a->split);
    if (pc_dataset_open(a->data, &ds, &e) != PC_OK) return pc_cli_fail(&e);
    size_t n = pc_dataset_num_files(ds, coll, split);
    int rc = PC_EXIT_OK;
    if (n == 0) {
        fprintf(stderr, "perfcast tune: error: %s has no %s %s graphs\n", a->data,
                pc_collection_name(coll), a->split);
        rc = PC_EXIT_FAIL;
    }
    if (!rc && mkdir(a->out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "perfcast tune: error: cannot create %s\n", a->out);
        rc = PC_EXIT_FAIL;
    }
    cJSON *all = cJSON_CreateArray();
    for (size_t i = 0; i < n && rc == PC_EXIT_OK; i++) {
        char stem[1024], out[4096];
        const char *path = pc_dataset_file(ds, coll, split, i);
        stem_of(path, stem, sizeof stem);
        snprintf(out, sizeof out, "%s/%s.npz", a->out, stem);
        cJSON *doc = run_query(a, path, out, &rc);
        if (!doc) break;
        if (!a->json) print_summary(a, doc);
        cJSON_AddItemToArray(all, doc);
    }
    if (a->json && rc == PC_EXIT_OK)
        rc = pc_cli_json_print(all);
    else
        cJSON_Delete(all);
    if (!a->json && !rc) printf("wrote %zu files to %s\n", n, a->out);
    pc_dataset_close(ds);
    return rc;
}

/* ---- options ------------------------------------------------------------------- */

static int parse_num(tune_args *a, int c, const char *flag, const char *v) {
    long long x;
    double d;
    char *end;
    enum {
        O_TOP = 256,
        O_BUDGET,
        O_BATCH,
        O_PATIENCE,
        O_MAXS,
        O_CAND,
        O_THREADS,
        O_SSEED,
        O_SSCALE,
        O_SGRAPHS,
        O_SNODES,
        O_STILE,
        O_RISK,
        O_MAXCH,
        O_TMAXCH,
        O_TRISK
    };
    switch (c) {
    case O_BUDGET:
        d = strtod(v, &end);
        if (end == v || *end || !(d > 0) || d > 1e6)
            return pc_cli_usage_error("tune", "--budget-s expects seconds > 0, got '%s'", v);
        a->o.budget_s = d;
        return 0;
    case O_RISK:
    case O_TRISK:
        d = strtod(v, &end);
        if (end == v || *end || !(d >= 0) || d > 1e6)
            return pc_cli_usage_error("tune", "%s expects a number >= 0, got '%s'", flag, v);
        if (c == O_RISK) a->o.risk = d;
        else a->o.tile_risk = d;
        return 0;
    case O_SSCALE:
        if (pc_synth_scale_parse(v, &a->so.scale) != PC_OK)
            return pc_cli_usage_error("tune",
                                      "--synth-scale expects tiny, small or full, got "
                                      "'%s'",
                                      v);
        return 0;
    default: break;
    }
    long long lo = c == O_TMAXCH                                              ? -1
                   : c == O_MAXS || c == O_THREADS || c == O_SSEED || c == O_MAXCH ? 0
                                                                                   : 1;
    long long hi = c == O_SSEED ? INT64_MAX : c == O_THREADS ? 1024 : 100000000;
    if (pc_cli_parse_i64(v, lo, hi, &x))
        return pc_cli_usage_error("tune", "%s expects an integer in [%lld, %lld], got '%s'", flag,
                                  lo, hi, v);
    switch (c) {
    case O_TOP: a->o.top_k = (int)(x < 100000 ? x : 100000); break;
    case O_BATCH: a->o.batch = x; break;
    case O_PATIENCE: a->o.patience = (int)x; break;
    case O_MAXS: a->o.max_scored = x; break;
    case O_CAND: a->candidates = x; break;
    case O_THREADS: a->threads = (int)x; break;
    case O_SSEED: a->so.seed = (uint64_t)x; break;
    case O_SGRAPHS: a->so.graphs_per_split = x; break;
    case O_SNODES: a->so.layout_nodes = x; break;
    case O_STILE: a->so.tile_configs = x; break;
    case O_MAXCH: a->o.max_changes = x, a->max_changes_set = 1; break;
    case O_TMAXCH: a->o.tile_max_changes = x, a->max_changes_set = 1; break;
    default: break;
    }
    return 0;
}

int pc_cmd_tune(int argc, char **argv) {
    static const struct option opts[] = {{"model", required_argument, 0, 'm'},
                                         {"out", required_argument, 0, 'o'},
                                         {"data", required_argument, 0, 'd'},
                                         {"split", required_argument, 0, 'p'},
                                         {"kernel", required_argument, 0, 'k'},
                                         {"seed", required_argument, 0, 'S'},
                                         {"json", no_argument, 0, 'j'},
                                         {"oracle", no_argument, 0, 'O'},
                                         {"top", required_argument, 0, 256},
                                         {"budget-s", required_argument, 0, 257},
                                         {"batch", required_argument, 0, 258},
                                         {"patience", required_argument, 0, 259},
                                         {"max-scored", required_argument, 0, 260},
                                         {"candidates", required_argument, 0, 261},
                                         {"threads", required_argument, 0, 262},
                                         {"synth-seed", required_argument, 0, 263},
                                         {"synth-scale", required_argument, 0, 264},
                                         {"synth-graphs", required_argument, 0, 265},
                                         {"synth-layout-nodes", required_argument, 0, 266},
                                         {"synth-tile-configs", required_argument, 0, 267},
                                         {"risk", required_argument, 0, 268},
                                         {"max-changes", required_argument, 0, 269},
                                         {"tile-max-changes", required_argument, 0, 270},
                                         {"tile-risk", required_argument, 0, 271},
                                         {"max-memory", required_argument, 0, 272},
                                         {"tile-new-sizes", no_argument, 0, 'N'},
                                         {"no-tile-new-sizes", no_argument, 0, 273},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    tune_args a;
    memset(&a, 0, sizeof a);
    a.o = pc_tune_opts_default();
    a.so = pc_synth_opts_default();
    a.split = "test";
    a.candidates = 256;
    long long v;
    int c, rc;
    optind = 1;
    opterr = 0;
    int li = -1;
    while ((c = pc_cli_getopt(argc, argv, "m:o:d:p:k:S:jONh", opts, &li)) != -1) {
        switch (c) {
        case 'm': a.model = optarg; break;
        case 'o': a.out = optarg; break;
        case 'd': a.data = optarg; break;
        case 'p': a.split = optarg; break;
        case 'k': a.kernel = optarg; break;
        case 'j': a.json = 1; break;
        case 'O': a.oracle = 1; break;
        case 'N': a.o.tile_new_sizes = 1; break;
        case 273: a.o.tile_new_sizes = 0; break;
        case 'S':
            if (pc_cli_parse_i64(optarg, 0, INT64_MAX, &v))
                return pc_cli_usage_error("tune",
                                          "--seed expects a non-negative integer, got "
                                          "'%s'",
                                          optarg);
            a.o.seed = (uint64_t)v;
            break;
        case 'h': tune_help(stdout); return PC_EXIT_OK;
        case 272:
            if (pc_cli_max_memory("tune", optarg, &a.o.max_memory)) return PC_EXIT_USAGE;
            break;
        default:
            if (c >= 256 && c <= 271) {
                char flag[64];
                snprintf(flag, sizeof flag, "--%s", li >= 0 ? opts[li].name : "?");
                if ((rc = parse_num(&a, c, flag, optarg))) return rc;
                break;
            }
            return pc_cli_usage_error("tune", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!a.model && !a.oracle) return pc_cli_usage_error("tune", "--model MODEL is required");
    if (a.model && a.oracle) return pc_cli_usage_error("tune", "--oracle replaces --model");
    /* the simulator needs no trust region: the oracle is the unrestricted ceiling */
    if (a.oracle && !a.max_changes_set) a.o.max_changes = 0, a.o.tile_max_changes = -1;
    if (a.data) {
        if (optind != argc)
            return pc_cli_usage_error("tune", "--data tunes a split; no FILE as well");
        if (!a.out) return pc_cli_usage_error("tune", "--data needs --out OUTDIR");
        if (a.oracle) return pc_cli_usage_error("tune", "--oracle tunes one FILE.npz");
    } else if (optind + 1 != argc)
        return pc_cli_usage_error("tune", optind == argc ? "FILE.npz, PROGRAM.hlo or --data DIR "
                                                           "is required"
                                                         : "one FILE at a time");
    else
        a.path = argv[optind];
    pc_error e;
    if (a.data) { /* the model's collection says which files */
        if (pc_predictor_load_max(a.model, a.threads, a.o.max_memory, &a.p, &e) != PC_OK)
            return pc_cli_fail(&e);
        rc = tune_split(&a);
        pc_predictor_free(a.p);
        return rc;
    }
    return tune_file(&a);
}
