/* perfcast predict: competition-format CSV of predicted config rankings. */
#define _GNU_SOURCE
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
            "                        [--split test] --out FILE.csv\n\n"
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
            "  --threads N     worker threads (0 = all cores)\n");
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

/* One CSV value: idx[0..k) joined by ';'. */
static char *join_idx(const size_t *idx, size_t k) {
    size_t cap = k * 21 + 1, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    for (size_t i = 0; i < k; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%zu", i ? ";" : "", idx[i]);
    return s;
}

static int fail_msg(const char *msg) {
    fprintf(stderr, "perfcast predict: error: %s\n", msg);
    return PC_EXIT_FAIL;
}

/* Scores one model's collection into r; returns an exit code. */
static int predict_model(const char *model_path, int *seen, const pc_dataset *ds, int split,
                         int threads, const pc_dist *dist, rows *r) {
    int W = pc_dist_size(dist), R = pc_dist_rank(dist);
    pc_error e;
    pc_predictor *p = NULL;
    if (pc_predictor_load(model_path, threads, &p, &e) != PC_OK) return pc_cli_fail(&e);
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
    int rc = PC_EXIT_OK;
    double *scores = NULL;
    size_t *idx = NULL;
    for (size_t i = 0; i < n && rc == PC_EXIT_OK; i++) {
        if ((int)(i % (size_t)W) != R) continue; /* another rank's graph */
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
        free(idx);
        scores = malloc((size_t)c * sizeof *scores);
        idx = malloc((size_t)c * sizeof *idx);
        size_t k = tile ? PREDICT_TILE_TOP : (size_t)c, got = 0;
        if (!scores || !idx) {
            pc_graph_free(g);
            rc = fail_msg("out of memory");
            break;
        }
        if (pc_predictor_score(p, g, scores, &e) != PC_OK ||
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
        char *val = join_idx(idx, got);
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
    }
    free(scores);
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

static int write_csv(const char *out, rows *r) {
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.%ld", out, (long)getpid()) < 0) return fail_msg("out of memory");
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "perfcast predict: error: cannot write %s\n", tmp);
        free(tmp);
        return PC_EXIT_FAIL;
    }
    int bad = fprintf(f, "ID,TopConfigs\n") < 0;
    for (size_t i = 0; i < r->n && !bad; i++)
        bad = fprintf(f, "%s,%s\n", r->v[i].id, r->v[i].val) < 0;
    if (fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, out) != 0) {
        unlink(tmp);
        fprintf(stderr, "perfcast predict: error: cannot write %s\n", out);
        free(tmp);
        return PC_EXIT_FAIL;
    }
    free(tmp);
    return PC_EXIT_OK;
}

int pc_cmd_predict(int argc, char **argv) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"data", required_argument, 0, 'd'},
        {"split", required_argument, 0, 's'}, {"out", required_argument, 0, 'o'},
        {"threads", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *models[PREDICT_MAX_MODELS];
    int nmodels = 0, threads = 0;
    const char *data = NULL, *split = "test", *out = NULL;
    long long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "m:d:s:o:t:h", opts, NULL)) != -1) {
        switch (c) {
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
        case 'h': predict_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("predict", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (nmodels == 0) return pc_cli_usage_error("predict", "--model MODEL is required");
    if (!data) return pc_cli_usage_error("predict", "--data DIR is required");
    if (!out) return pc_cli_usage_error("predict", "--out FILE is required");
    if (optind != argc)
        return pc_cli_usage_error("predict", "unexpected argument '%s'", argv[optind]);
    pc_error e;
    pc_dataset *ds = NULL;
    if (pc_dataset_open(data, &ds, &e) != PC_OK) return pc_cli_fail(&e);
    int sp = pc_split_find(split);
    int seen[PC_NUM_COLLECTIONS] = {0};
    rows r = {0};
    int rc = PC_EXIT_OK;
    pc_dist *dist = NULL;
    if (pc_cli_dist_open(&argc, &argv, &dist, &e) != PC_OK) {
        pc_dataset_close(ds);
        return pc_cli_fail(&e);
    }
    for (int i = 0; i < nmodels && rc == PC_EXIT_OK; i++)
        rc = predict_model(models[i], seen, ds, sp, threads, dist, &r);
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
        rc = write_csv(out, &r);
        if (rc == PC_EXIT_OK) fprintf(stderr, "wrote %zu rows to %s\n", r.n, out);
    }
    rows_free(&r);
    return rc;
}
