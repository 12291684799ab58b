/*
 * perfcast check: validates one file, a cache directory, or a whole dataset
 * tree, and lists every problem found (not just the first). Exit 1 if any.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "perfcast/predict.h"

typedef struct check_result {
    pc_report *problems;
    pc_error load_error;
    int loaded;
} check_result;

/* Test splits of the public data carry all-zero runtimes. */
static int in_test_split(const char *path) {
    return strstr(path, "/test/") != NULL || strncmp(path, "test/", 5) == 0;
}

/* Streams every array (bounded memory); what would not load within the budget fails. */
static void check_one(const char *path, int allow_zero, int threads, uint64_t max_memory,
                      const pc_graph_widths *w, check_result *res) {
    pc_load_opts o = pc_load_opts_default();
    o.threads = threads;
    o.max_memory = max_memory;
    pc_error_clear(&res->load_error);
    res->problems = pc_report_new();
    pc_status st = pc_graph_check_file_widths(path, &o, allow_zero || in_test_split(path), w,
                                              res->problems, &res->load_error);
    res->loaded = st == PC_OK || st == PC_ERR_INVALID;
    if (!res->loaded) pc_cli_flags(res->load_error.msg, sizeof res->load_error.msg);
}

/* {"file", "ok", "problems": [...]} of one file (--json). */
static int report_json(cJSON *results, const char *path, const check_result *res) {
    cJSON *o = cJSON_CreateObject(), *pr = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "file", path);
    if (!res->loaded) cJSON_AddItemToArray(pr, cJSON_CreateString(res->load_error.msg));
    for (size_t i = 0; res->loaded && i < pc_report_count(res->problems); i++)
        cJSON_AddItemToArray(pr, cJSON_CreateString(pc_report_get(res->problems, i)));
    int bad = cJSON_GetArraySize(pr) > 0;
    cJSON_AddBoolToObject(o, "ok", !bad);
    cJSON_AddItemToObject(o, "problems", pr);
    cJSON_AddItemToArray(results, o);
    return bad;
}

static int report(const char *path, const check_result *res, int quiet) {
    if (!res->loaded) {
        printf("FAIL %s\n  %s\n", path, res->load_error.msg);
        return 1;
    }
    size_t n = pc_report_count(res->problems);
    if (n == 0) {
        if (!quiet) printf("ok   %s\n", path);
        return 0;
    }
    printf("FAIL %s (%zu problem%s)\n", path, n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) printf("  %s\n", pc_report_get(res->problems, i));
    return 1;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The files that one run checks, from every PATH: one summary for all. */
typedef struct file_list {
    char **v;
    size_t n, cap;
} file_list;

static int list_add(file_list *l, const char *path) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path))) return -1;
    l->n++;
    return 0;
}

static void list_free(file_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n > m && !strcmp(s + n - m, suf);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every .npz file and .pcc folder under dir (any layout, e.g. what import wrote), sorted. */
static int scan_plain(const char *dir, file_list *l, int depth) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t first = l->n;
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[4096];
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p) continue;
        if (ends_with(p, ".npz") && !is_dir(p)) rc = list_add(l, p);
        else if (ends_with(p, ".pcc") && is_dir(p)) rc = list_add(l, p);
        else if (is_dir(p) && depth < 8) rc = scan_plain(p, l, depth + 1);
    }
    closedir(d);
    if (l->n > first) qsort(l->v + first, l->n - first, sizeof *l->v, cmp_str);
    return rc;
}

/* What the files were checked against (--json): the model, or null, and the widths. */
static void add_widths_json(cJSON *o, const char *model, const pc_graph_widths *w) {
    if (model) cJSON_AddStringToObject(o, "model", model);
    else cJSON_AddNullToObject(o, "model");
    cJSON *j = cJSON_AddObjectToObject(o, "widths");
    if (w->kind == PC_KIND_AUTO) cJSON_AddNullToObject(j, "kind");
    else cJSON_AddStringToObject(j, "kind", pc_kind_name(w->kind));
    cJSON_AddNumberToObject(j, "node_feat", (double)w->node_feat_dim);
    if (w->kind != PC_KIND_LAYOUT) cJSON_AddNumberToObject(j, "config_feat", (double)w->tile_config_dim);
    else cJSON_AddNullToObject(j, "config_feat");
    if (w->kind != PC_KIND_TILE)
        cJSON_AddNumberToObject(j, "node_config_feat", (double)w->layout_config_dim);
    else cJSON_AddNullToObject(j, "node_config_feat");
    cJSON_AddNumberToObject(j, "opcodes", (double)w->num_opcodes);
}

typedef struct check_args {
    int allow_zero, threads, quiet, json;
    uint64_t max_memory;
    const char *model;  /* --model, or NULL */
    pc_graph_widths w;  /* what the files must have */
} check_args;

static int check_files(char **files, size_t n, const check_args *a) {
    const int allow_zero = a->allow_zero, threads = a->threads, quiet = a->quiet, json = a->json;
    const uint64_t max_memory = a->max_memory;
    check_result *res = calloc(n ? n : 1, sizeof *res);
    if (!res) return PC_EXIT_FAIL;
    /* Graphs are independent; each load is single-threaded inside. */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 2)
    for (size_t i = 0; i < n; i++) check_one(files[i], allow_zero, 1, max_memory, &a->w, &res[i]);
    size_t bad = 0, problems = 0;
    cJSON *results = json ? cJSON_CreateArray() : NULL;
    for (size_t i = 0; i < n; i++) {
        bad += (size_t)(json ? report_json(results, files[i], &res[i])
                             : report(files[i], &res[i], quiet));
        problems += res[i].loaded ? pc_report_count(res[i].problems) : 1;
        pc_report_free(res[i].problems);
    }
    free(res);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "files", (double)n);
        cJSON_AddNumberToObject(o, "ok", (double)(n - bad));
        cJSON_AddNumberToObject(o, "with_problems", (double)bad);
        cJSON_AddNumberToObject(o, "problems", (double)problems);
        add_widths_json(o, a->model, &a->w);
        cJSON_AddItemToObject(o, "results", results);
        int rc = pc_cli_json_print(o);
        return bad ? PC_EXIT_FAIL : rc;
    }
    printf("checked %zu file%s%s%s: %zu ok, %zu with problems (%zu problem%s)\n", n,
           n == 1 ? "" : "s", a->model ? " for model " : "", a->model ? a->model : "", n - bad, bad,
           problems, problems == 1 ? "" : "s");
    return bad ? PC_EXIT_FAIL : PC_EXIT_OK;
}

/*
 * The files of a dataset root (every collection and split), or of any other
 * folder its .npz files and .pcc folders wherever they lie; 0, or an exit code.
 */
static int collect_dir(const char *root, file_list *l) {
    pc_error e;
    pc_dataset *d;
    if (pc_dataset_open(root, &d, &e) == PC_OK) {
        int rc = 0;
        for (int c = 0; c < PC_NUM_COLLECTIONS; c++)
            for (int s = 0; s < PC_NUM_SPLITS; s++)
                for (size_t i = 0; rc == 0 && i < pc_dataset_num_files(d, c, s); i++)
                    rc = list_add(l, pc_dataset_file(d, c, s, i));
        pc_dataset_close(d);
        if (rc) return PC_EXIT_FAIL;
        if (l->n) return 0;
    }
    size_t before = l->n;
    if (scan_plain(root, l, 0)) return PC_EXIT_FAIL;
    if (l->n == before) {
        e.code = PC_ERR_INVALID;
        snprintf(e.msg, sizeof e.msg, "%s: no .npz files or .pcc folders found", root);
        return pc_cli_fail(&e);
    }
    return 0;
}

/* The widths the checkpoint at `model` reads (--model); 0, or an exit code. */
static int model_widths(const char *model, uint64_t max_memory, pc_graph_widths *w, char *who,
                        size_t cap) {
    pc_error e;
    pc_predictor *p = NULL;
    pc_status st = pc_predictor_load_max(model, 1, max_memory, &p, &e);
    if (st == PC_OK) st = pc_predictor_widths(p, w, &e);
    if (st == PC_OK) {
        snprintf(who, cap, "model %s (%s)", model, pc_collection_name(pc_predictor_collection(p)));
        w->who = who;
    }
    pc_predictor_free(p);
    if (st != PC_OK) pc_cli_flags(e.msg, sizeof e.msg);
    return st == PC_OK ? 0 : pc_cli_fail(&e);
}

static void check_help(FILE *f) {
    fprintf(f, "usage: perfcast check [--quiet] [--json] [--allow-zero-runtimes] [--threads N]\n"
               "                      [--max-memory SIZE] [--model MODEL] PATH...\n\n"
               "PATH is a .npz file, a .pcc cache directory, a dataset root (checks every\n"
               "file of every collection and split; an entry named *.npz that is not a regular\n"
               "file is a problem) or any folder of .npz files (e.g. what import wrote); one\n"
               "summary covers every PATH. Checks shapes and dtypes, the widths the models need\n"
               "(node features 140, tile configs 24, layout configs 18), edge endpoints and\n"
               "config ids in range, unique ids, monotone node_splits, positive runtimes\n"
               "(all-zero runtimes are accepted in test splits or with --allow-zero-runtimes),\n"
               "finite features, and that the file loads within the memory budget; prints\n"
               "every problem; exit 1 if any. What passes trains; train and eval refuse what\n"
               "fails. Arrays are streamed in chunks, never inflated whole.\n"
               "  --quiet            print only files with problems and the summary\n"
               "  --json             one JSON object: files, ok, with_problems, problems,\n"
               "                     results (docs/json.md)\n"
               "  --max-memory SIZE  the memory a load may use: GiB, or with a unit (512MiB)\n"
               "                     (default: half the available memory)\n"
               "  --model MODEL      check the widths MODEL (a checkpoint) reads instead: its\n"
               "                     kind, node features, config features and opcode range,\n"
               "                     from its metadata\n");
}

int pc_cmd_check(int argc, char **argv) {
    static const struct option opts[] = {{"quiet", no_argument, 0, 'q'},
                                         {"allow-zero-runtimes", no_argument, 0, 'z'},
                                         {"threads", required_argument, 0, 't'},
                                         {"json", no_argument, 0, 'j'},
                                         {"max-memory", required_argument, 0, 'm'},
                                         {"model", required_argument, 0, 'M'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int quiet = 0, allow_zero = 0, json = 0, c;
    long long threads = 0;
    uint64_t max_memory = PC_MEMORY_AUTO;
    const char *model = NULL;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "qzt:jm:M:h", opts, NULL)) != -1) {
        if (c == 'q') quiet = 1;
        else if (c == 'M') model = optarg;
        else if (c == 'm') {
            int mrc = pc_cli_max_memory("check", optarg, &max_memory);
            if (mrc) return mrc;
        }
        else if (c == 'j') json = 1;
        else if (c == 'z') allow_zero = 1;
        else if (c == 't') {
            if (pc_cli_parse_i64(optarg, 0, 1024, &threads))
                return pc_cli_usage_error("check", "--threads expects 0..1024, got '%s'", optarg);
        } else if (c == 'h') {
            check_help(stdout);
            return PC_EXIT_OK;
        } else return pc_cli_usage_error("check", "unknown option '%s'", argv[optind - 1]);
    }
    if (optind >= argc) return pc_cli_usage_error("check", "expected at least one PATH");
    check_args a = {allow_zero, (int)threads, quiet, json, max_memory, model,
                    pc_graph_widths_default()};
    char who[1200];
    if (model) {
        int mrc = model_widths(model, max_memory, &a.w, who, sizeof who);
        if (mrc) return mrc;
    }
    file_list l = {0};
    int rc = PC_EXIT_OK;
    for (int i = optind; i < argc && rc == PC_EXIT_OK; i++) {
        const char *p = argv[i];
        if (is_dir(p) && !ends_with(p, ".pcc")) rc = collect_dir(p, &l);
        else if (list_add(&l, p)) rc = PC_EXIT_FAIL;
    }
    if (rc == PC_EXIT_OK) rc = check_files(l.v, l.n, &a);
    list_free(&l);
    return rc;
}
