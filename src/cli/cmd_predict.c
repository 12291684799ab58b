/* perfcast predict: competition-format CSV of predicted config rankings. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "perfcast/dist.h"
#include "perfcast/metrics.h"
#include "perfcast/predict.h"

#define PREDICT_TILE_TOP 5
#define PREDICT_MAX_MODELS 16

static void predict_help(FILE *f) {
    fprintf(f,
            "usage: perfcast predict --model MODEL [--model MODEL2 ...] --data DIR\n"
            "                        [--split test] [--max-memory SIZE] --out FILE.csv\n\n"
            "Scores every config of every graph of each model's collection in the split and\n"
            "writes the Kaggle submission format: header ID,TopConfigs; tile rows\n"
            "tile:xla:<stem>,<top 5 config indices>; layout rows\n"
            "layout:<source>:<search>:<stem>,<all config indices>; best first, ';'-separated.\n"
            "Rows are sorted by ID. The file is written under a temporary name and renamed.\n\n"
            "  --model MODEL   checkpoint written by perfcast train (repeatable, one per\n"
            "                  collection)\n"
            "  --data DIR      dataset root\n"
            "  --split S       train, valid or test (default)\n"
            "  --out FILE      CSV to write\n"
            "  --threads N     worker threads (0 = all cores)\n"
            "  --max-memory SIZE  the memory budget of each model's and each graph's load:\n"
            "                  GiB, or with a unit (512MiB); default half the available memory\n"
            "  --tta M         models with --cfg-attention: average each config's score over\n"
            "                  M orderings of the configs (default 1 = off)\n"
            "  --tta-seed S    seed of those orderings (default 1)\n"
            "  --json          print {out, split, rows, spread, collections} (docs/json.md)\n"
            "                  instead of the \"wrote\" line\n"
            "  --mpi-timeout S under mpirun: end the job when a rank waits more than S seconds\n"
            "                  for the others (a stalled rank; default $PERFCAST_MPI_TIMEOUT,\n"
            "                  else 300; 0: never)\n\n"
            "With an ensemble model (perfcast train --ensemble N) the file gets a third\n"
            "column, Spread: the members' standard deviation of each listed config's score\n"
            "(';'-separated, in the order of TopConfigs; empty on rows of single models).\n");
}

typedef struct row {
    char *id, *val;
} row;

typedef struct rows {
    row *v;
    size_t n, cap;
} rows;

static int row_cmp(const void *a, const void *b) {
    return strcmp(((const row *)a)->id, ((const row *)b)->id);
}

static void rows_free(rows *r) {
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].id);
        free(r->v[i].val);
    }
    free(r->v);
}

/* Basename of path without a trailing ".npz" (and trailing slashes). */
static char *path_stem(const char *path) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    size_t b = len;
    while (b > 0 && path[b - 1] != '/') b--;
    size_t n = len - b;
    if (n > 4 && !memcmp(path + len - 4, ".npz", 4)) n -= 4;
    return strndup(path + b, n);
}

/* One CSV value: idx[0..k) joined by ';' (with spread: then ',' and spread[idx[i]] joined). */
static char *join_idx(const size_t *idx, size_t k, const double *spread) {
    size_t cap = k * (spread ? 40 : 21) + 2, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    for (size_t i = 0; i < k; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%zu", i ? ";" : "", idx[i]);
    if (spread) len += (size_t)snprintf(s + len, cap - len, ",");
    for (size_t i = 0; spread && i < k; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%.6g", i ? ";" : "", spread[idx[i]]);
    return s;
}

/* What predict_model needs besides the model and the rows. */
typedef struct predict_ctx {
    const pc_dataset *ds;
    int split, threads, tta;
    uint64_t tta_seed, max_memory;
    const pc_dist *dist;
    int *seen;  /* (PC_NUM_COLLECTIONS) collections that have a model */
    int spread; /* some model is an ensemble: the Spread column */
} predict_ctx;

/* The ensembles among models[0..n) (loaded to count their members): *any set; exit code. */
static int any_ensemble(const char *const *models, int n, uint64_t max_memory, int *any) {
    *any = 0;
    for (int i = 0; i < n; i++) {
        pc_error e;
        pc_predictor *p = NULL;
        if (pc_predictor_load_max(models[i], 1, max_memory, &p, &e) != PC_OK)
            return pc_cli_fail(&e);
        if (pc_predictor_members(p) > 1) *any = 1;
        pc_predictor_free(p);
    }
    return PC_EXIT_OK;
}

/* The --json object: the file written and its rows per collection. */
static int predict_json(const char *out, const char *split, const rows *r, int spread) {
    cJSON *j = cJSON_CreateObject(), *colls = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "out", out);
    cJSON_AddStringToObject(j, "split", split);
    cJSON_AddNumberToObject(j, "rows", (double)r->n);
    cJSON_AddBoolToObject(j, "spread", spread);
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++) {
        const char *name = pc_collection_name(c);
        size_t n = 0, len = strlen(name);
        for (size_t i = 0; i < r->n; i++)
            n += !strncmp(r->v[i].id, name, len) && r->v[i].id[len] == ':';
        if (n) cJSON_AddNumberToObject(colls, name, (double)n);
    }
    cJSON_AddItemToObject(j, "collections", colls);
    return pc_cli_json_print(j);
}

static int fail_msg(const char *msg) {
    pc_cli_progress_break();
    fprintf(stderr, "perfcast predict: error: %s\n", msg);
    return PC_EXIT_FAIL;
}

/* Scores one model's collection into r; returns an exit code. */
static int predict_model(const char *model_path, const predict_ctx *cx, rows *r) {
    const pc_dataset *ds = cx->ds;
    int split = cx->split, threads = cx->threads, *seen = cx->seen;
    int W = pc_dist_size(cx->dist), R = pc_dist_rank(cx->dist);
    pc_error e;
    pc_predictor *p = NULL;
    if (pc_predictor_load_max(model_path, threads, cx->max_memory, &p, &e) != PC_OK)
        return pc_cli_fail(&e);
    if (pc_predictor_set_tta(p, cx->tta, cx->tta_seed, &e) != PC_OK) {
        pc_predictor_free(p);
        return pc_cli_fail(&e);
    }
    int ens = pc_predictor_members(p) > 1;
    int coll = pc_predictor_collection(p);
    char msg[1024];
    if (seen[coll]) {
        snprintf(msg, sizeof msg, "%s: a second model for %s; give one model per collection",
                 model_path, pc_collection_name(coll));
        pc_predictor_free(p);
        return fail_msg(msg);
    }
    seen[coll] = 1;
    size_t n = pc_dataset_num_files(ds, coll, split);
    if (n == 0) {
        snprintf(msg, sizeof msg, "no %s graphs of %s under %s", pc_split_name(split),
                 pc_collection_name(coll), pc_dataset_root(ds));
        pc_predictor_free(p);
        return fail_msg(msg);
    }
    int tile = pc_collection_kind(coll) == PC_KIND_TILE;
    pc_load_opts lo = pc_load_opts_default();
    lo.kind = pc_collection_kind(coll);
    lo.threads = threads;
    lo.max_memory = cx->max_memory;
    int rc = PC_EXIT_OK;
    double *scores = NULL, *spread = NULL;
    size_t *idx = NULL;
    int64_t mine = 0, done = 0; /* this rank's graphs */
    for (size_t i = 0; i < n; i++) mine += (int)(i % (size_t)W) == R;
    pc_cli_progress *pr = pc_cli_progress_new("predict", R == 0 && pc_cli_progress_wanted());
    for (size_t i = 0; i < n && rc == PC_EXIT_OK; i++) {
        if ((int)(i % (size_t)W) != R) continue; /* another rank's graph */
        pc_cli_progress_update(pr, "graphs scored", done, mine);
        const char *path = pc_dataset_file(ds, coll, split, i);
        pc_graph *g = NULL;
        if (pc_graph_load(path, &lo, &g, &e) != PC_OK) {
            rc = pc_cli_fail(&e);
            break;
        }
        int64_t c = pc_graph_num_configs(g);
        if (c < 1) {
            snprintf(msg, sizeof msg, "%s: no configs to rank", path);
            pc_graph_free(g);
            rc = fail_msg(msg);
            break;
        }
        free(scores);
        free(spread);
        free(idx);
        scores = malloc((size_t)c * sizeof *scores);
        spread = ens ? malloc((size_t)c * sizeof *spread) : NULL;
        idx = malloc((size_t)c * sizeof *idx);
        size_t k = tile ? PREDICT_TILE_TOP : (size_t)c, got = 0;
        if (!scores || !idx || (ens && !spread)) {
            pc_graph_free(g);
            rc = fail_msg("out of memory");
            break;
        }
        if (pc_predictor_score_spread(p, g, scores, spread, &e) != PC_OK ||
            pc_topk_indices(scores, (size_t)c, k, idx, &got, &e) != PC_OK) {
            pc_graph_free(g);
            rc = pc_cli_fail(&e);
            break;
        }
        pc_graph_free(g);
        char *stem = path_stem(path);
        char *id = NULL;
        if (stem && asprintf(&id, "%s:%s", pc_collection_name(coll), stem) < 0) id = NULL;
        free(stem);
        char *val = join_idx(idx, got, spread);
        if (val && cx->spread && !ens) { /* an empty Spread field */
            char *v2 = NULL;
            if (asprintf(&v2, "%s,", val) < 0) v2 = NULL;
            free(val);
            val = v2;
        }
        if (r->n == r->cap) {
            size_t nc = r->cap ? 2 * r->cap : 64;
            row *nv = realloc(r->v, nc * sizeof *nv);
            if (nv) r->v = nv, r->cap = nc;
        }
        if (!id || !val || r->n == r->cap) {
            free(id);
            free(val);
            rc = fail_msg("out of memory");
            break;
        }
        r->v[r->n].id = id;
        r->v[r->n].val = val;
        r->n++;
        pc_cli_progress_update(pr, "graphs scored", ++done, mine);
    }
    pc_cli_progress_end(pr);
    free(scores);
    free(spread);
    free(idx);
    pc_predictor_free(p);
    return rc;
}

/*
 * Multi-process predict: every rank's rows go to rank 0 as "id,val\n" lines
 * (rank order; sorted by id before writing, so the file is the same as one
 * process's). On rank 0, r is replaced by all rows.
 */
static int gather_rows(const pc_dist *dist, rows *r) {
    size_t len = 1;
    for (size_t i = 0; i < r->n; i++) len += strlen(r->v[i].id) + strlen(r->v[i].val) + 2;
    char *mine = malloc(len), *all = NULL, *p = mine;
    if (!mine) return -1;
    *p = 0;
    for (size_t i = 0; i < r->n; i++) p += sprintf(p, "%s,%s\n", r->v[i].id, r->v[i].val);
    pc_error e;
    int bad = pc_dist_gather_text(dist, mine, &all, &e) != PC_OK;
    free(mine);
    rows_free(r);
    memset(r, 0, sizeof *r);
    if (bad || !all) return bad ? -1 : 0;
    for (char *line = all; *line;) {
        char *nl = strchr(line, '\n'), *comma = strchr(line, ',');
        if (!nl || !comma || comma > nl) break;
        *nl = 0;
        *comma = 0;
        if (r->n == r->cap) {
            size_t nc = r->cap ? 2 * r->cap : 64;
            row *nv = realloc(r->v, nc * sizeof *nv);
            if (!nv) break;
            r->v = nv, r->cap = nc;
        }
        r->v[r->n].id = strdup(line);
        r->v[r->n].val = strdup(comma + 1);
        if (!r->v[r->n].id || !r->v[r->n].val) {
            free(r->v[r->n].id), free(r->v[r->n].val);
            break;
        }
        r->n++;
        line = nl + 1;
    }
    free(all);
    return 0;
}

static int write_csv(const char *out, rows *r, int spread) {
    pc_output *o = NULL;
    pc_error e;
    if (pc_output_open(out, &o, &e) != PC_OK) return pc_cli_fail(&e);
    FILE *f = pc_output_file(o);
    int bad = fprintf(f, spread ? "ID,TopConfigs,Spread\n" : "ID,TopConfigs\n") < 0;
    for (size_t i = 0; i < r->n && !bad; i++)
        bad = fprintf(f, "%s,%s\n", r->v[i].id, r->v[i].val) < 0;
    if (pc_output_close(o, !bad, 0, &e) != PC_OK) return pc_cli_fail(&e);
    if (bad) return fail_msg("cannot write the CSV");
    return PC_EXIT_OK;
}

int pc_cmd_predict(int argc, char **argv) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"data", required_argument, 0, 'd'},
        {"split", required_argument, 0, 's'}, {"out", required_argument, 0, 'o'},
        {"threads", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
        {"tta", required_argument, 0, 'A'},     {"tta-seed", required_argument, 0, 'B'},
        {"json", no_argument, 0, 'j'},          {"mpi-timeout", required_argument, 0, 'T'},
        {"max-memory", required_argument, 0, 'M'},
        {0, 0, 0, 0}};
    const char *models[PREDICT_MAX_MODELS];
    int nmodels = 0, threads = 0, tta = 1;
    uint64_t tta_seed = 1, max_memory = PC_MEMORY_AUTO;
    double mpi_timeout = -1; /* not given */
    const char *data = NULL, *split = "test", *out = NULL;
    long long v;
    int c, json = 0;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "m:d:s:o:t:A:B:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'M':
            if (pc_cli_max_memory("predict", optarg, &max_memory)) return PC_EXIT_USAGE;
            break;
        case 'm':
            if (nmodels == PREDICT_MAX_MODELS)
                return pc_cli_usage_error("predict", "at most %d --model", PREDICT_MAX_MODELS);
            models[nmodels++] = optarg;
            break;
        case 'd': data = optarg; break;
        case 's':
            if (pc_split_find(optarg) < 0)
                return pc_cli_usage_error("predict", "--split expects train, valid or test, "
                                          "got '%s'", optarg);
            split = optarg;
            break;
        case 'o': out = optarg; break;
        case 't':
            if (pc_cli_parse_i64(optarg, 0, 1024, &v))
                return pc_cli_usage_error("predict", "--threads expects 0..1024, got '%s'",
                                          optarg);
            threads = (int)v;
            break;
        case 'A':
        case 'B':
            if (pc_cli_tta_opt("predict", c == 'A' ? "--tta" : "--tta-seed", optarg, &tta,
                               &tta_seed))
                return PC_EXIT_USAGE;
            break;
        case 'T':
            if ((c = pc_cli_mpi_timeout("predict", optarg, &mpi_timeout)) >= 0) return c;
            break;
        case 'h': predict_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("predict", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (nmodels == 0) return pc_cli_usage_error("predict", "--model MODEL is required");
    if (!data) return pc_cli_usage_error("predict", "--data DIR is required");
    if (!out) return pc_cli_usage_error("predict", "--out FILE is required");
    for (int i = 0; i < nmodels; i++)
        if (pc_same_file(out, models[i]))
            return pc_cli_usage_error("predict", "--out %s is the model %s; refusing to "
                                      "overwrite an input", out, models[i]);
    if (optind != argc)
        return pc_cli_usage_error("predict", "unexpected argument '%s'", argv[optind]);
    int rc = pc_cli_check_not_input("predict", "--out", out, models, nmodels);
    if (rc < 0) rc = pc_cli_check_out_file("predict", "--out", out);
    if (rc >= 0) return rc;
    pc_error e;
    pc_dataset *ds = NULL;
    if (pc_dataset_open(data, &ds, &e) != PC_OK) return pc_cli_fail(&e);
    int sp = pc_split_find(split);
    int seen[PC_NUM_COLLECTIONS] = {0};
    rows r = {0};
    rc = PC_EXIT_OK;
    pc_dist *dist = NULL;
    if (pc_cli_dist_open(&argc, &argv, mpi_timeout, &dist, &e) != PC_OK) {
        pc_dataset_close(ds);
        return pc_cli_fail(&e);
    }
    predict_ctx cx = {ds, sp, threads, tta, tta_seed, max_memory, dist, seen, 0};
    char agree[256];
    snprintf(agree, sizeof agree, "split=%s|tta=%d|tta_seed=%llu|models=%d", split, tta,
             (unsigned long long)tta_seed, nmodels);
    if (pc_cli_dist_agree(dist, "predict", agree, models, nmodels, ds, sp, &e) != PC_OK)
        rc = pc_cli_fail(&e);
    else
        rc = any_ensemble(models, nmodels, max_memory, &cx.spread);
    for (int i = 0; i < nmodels && rc == PC_EXIT_OK; i++) rc = predict_model(models[i], &cx, &r);
    pc_dataset_close(ds);
    /* a failed rank ends the job: the other ranks must not wait */
    if (rc != PC_EXIT_OK && pc_dist_size(dist) > 1)
        pc_cli_dist_abort(dist, "prediction failed (see above)");
    if (rc == PC_EXIT_OK && pc_dist_size(dist) > 1 && gather_rows(dist, &r) != 0)
        pc_cli_dist_abort(dist, "gathering the ranks' rows failed");
    if (rc == PC_EXIT_OK && pc_dist_rank(dist) != 0) { /* rank 0 writes */
        rows_free(&r);
        pc_cli_dist_close(dist);
        return PC_EXIT_OK;
    }
    pc_cli_dist_close(dist);
    if (rc == PC_EXIT_OK) {
        qsort(r.v, r.n, sizeof *r.v, row_cmp);
        rc = write_csv(out, &r, cx.spread);
        if (rc == PC_EXIT_OK && json) rc = predict_json(out, split, &r, cx.spread);
        else if (rc == PC_EXIT_OK) fprintf(stderr, "wrote %zu rows to %s\n", r.n, out);
    }
    rows_free(&r);
    return rc;
}
