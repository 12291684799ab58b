/*
 * perfcast check: validates one file, a cache directory, or a whole dataset
 * tree, and lists every problem found (not just the first). Exit 1 if any.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

typedef struct check_result {
    pc_report *problems;
    pc_error load_error;
    int loaded;
} check_result;

/* Test splits of the public data carry all-zero runtimes. */
static int in_test_split(const char *path) {
    return strstr(path, "/test/") != NULL || strncmp(path, "test/", 5) == 0;
}

static void check_one(const char *path, int allow_zero, int threads, check_result *res) {
    pc_load_opts o = pc_load_opts_default();
    o.threads = threads;
    pc_graph *g = NULL;
    pc_error_clear(&res->load_error);
    res->problems = pc_report_new();
    if (pc_graph_load(path, &o, &g, &res->load_error) != PC_OK) return;
    res->loaded = 1;
    pc_graph_validate(g, allow_zero || in_test_split(path), res->problems);
    pc_graph_free(g);
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

static int check_files(const char **files, size_t n, int allow_zero, int threads, int quiet) {
    check_result *res = calloc(n ? n : 1, sizeof *res);
    if (!res) return PC_EXIT_FAIL;
    /* Graphs are independent; each load is single-threaded inside. */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 2)
    for (size_t i = 0; i < n; i++) check_one(files[i], allow_zero, 1, &res[i]);
    size_t bad = 0, problems = 0;
    for (size_t i = 0; i < n; i++) {
        bad += (size_t)report(files[i], &res[i], quiet);
        problems += res[i].loaded ? pc_report_count(res[i].problems) : 1;
        pc_report_free(res[i].problems);
    }
    free(res);
    printf("checked %zu file%s: %zu ok, %zu with problems (%zu problem%s)\n", n, n == 1 ? "" : "s",
           n - bad, bad, problems, problems == 1 ? "" : "s");
    return bad ? PC_EXIT_FAIL : PC_EXIT_OK;
}

static int check_tree(const char *root, int allow_zero, int threads, int quiet) {
    pc_error e;
    pc_dataset *d;
    if (pc_dataset_open(root, &d, &e) != PC_OK) return pc_cli_fail(&e);
    size_t total = 0;
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++)
        for (int s = 0; s < PC_NUM_SPLITS; s++) total += pc_dataset_num_files(d, c, s);
    const char **files = malloc((total ? total : 1) * sizeof *files);
    if (!files) {
        pc_dataset_close(d);
        return PC_EXIT_FAIL;
    }
    size_t k = 0;
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++)
        for (int s = 0; s < PC_NUM_SPLITS; s++)
            for (size_t i = 0; i < pc_dataset_num_files(d, c, s); i++)
                files[k++] = pc_dataset_file(d, c, s, i);
    int rc = check_files(files, total, allow_zero, threads, quiet);
    free(files);
    pc_dataset_close(d);
    return rc;
}

static void check_help(FILE *f) {
    fprintf(f,
            "usage: perfcast check [--quiet] [--allow-zero-runtimes] [--threads N] PATH...\n\n"
            "PATH is a .npz file, a .pcc cache directory, or a dataset root (checks every\n"
            "file of every collection and split). Checks shapes and dtypes, edge endpoints\n"
            "and config ids in range, unique ids, monotone node_splits, positive runtimes\n"
            "(all-zero runtimes are accepted in test splits or with --allow-zero-runtimes)\n"
            "and finite features; prints every problem; exit 1 if any.\n"
            "  --quiet   print only files with problems and the summary\n");
}

int pc_cmd_check(int argc, char **argv) {
    static const struct option opts[] = {{"quiet", no_argument, 0, 'q'},
                                         {"allow-zero-runtimes", no_argument, 0, 'z'},
                                         {"threads", required_argument, 0, 't'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int quiet = 0, allow_zero = 0, c;
    long long threads = 0;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "qzt:h", opts, NULL)) != -1) {
        if (c == 'q') quiet = 1;
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
    int rc = PC_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        const char *p = argv[i];
        size_t len = strlen(p);
        int r;
        if (is_dir(p) && !(len > 4 && !strcmp(p + len - 4, ".pcc")))
            r = check_tree(p, allow_zero, (int)threads, quiet);
        else r = check_files(&p, 1, allow_zero, (int)threads, quiet);
        if (r != PC_EXIT_OK) rc = r;
    }
    return rc;
}
