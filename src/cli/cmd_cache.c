/* perfcast cache: converts a dataset tree into memory-mappable .pcc folders. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>

#include "cli.h"

static void cache_help(FILE *f) {
    fprintf(f,
            "usage: perfcast cache DIR --out CACHE_DIR [--threads N] [--json]\n\n"
            "Converts every .npz of the dataset at DIR into CACHE_DIR/<collection>/<split>/\n"
            "<stem>.pcc/ folders of uncompressed .npy arrays that later runs map instead of\n"
            "inflating. Up-to-date entries are kept, so re-running is cheap. Every command\n"
            "that takes a dataset DIR also takes CACHE_DIR.\n");
}

int pc_cmd_cache(int argc, char **argv) {
    static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                         {"threads", required_argument, 0, 't'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    long long threads = 0;
    int c, json = 0;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "o:t:jh", opts, NULL)) != -1) {
        if (c == 'o') out = optarg;
        else if (c == 'j') json = 1;
        else if (c == 't') {
            if (pc_cli_parse_i64(optarg, 0, 1024, &threads))
                return pc_cli_usage_error("cache", "--threads expects 0..1024, got '%s'", optarg);
        } else if (c == 'h') {
            cache_help(stdout);
            return PC_EXIT_OK;
        } else return pc_cli_usage_error("cache", "unknown option '%s'", argv[optind - 1]);
    }
    if (!out) return pc_cli_usage_error("cache", "--out CACHE_DIR is required");
    if (optind != argc - 1) return pc_cli_usage_error("cache", "expected exactly one dataset DIR");
    int rc = pc_cli_check_out_dir("cache", "--out", out, 0);
    if (rc >= 0) return rc;
    pc_error e;
    pc_dataset *d;
    if (pc_dataset_open(argv[optind], &d, &e) != PC_OK) return pc_cli_fail(&e);
    pc_report *r = pc_report_new();
    pc_status st = pc_cache_build_tree(d, out, (int)threads, r, &e);
    cJSON *fails = cJSON_CreateArray();
    for (size_t i = 0; i < pc_report_count(r); i++) {
        if (json) cJSON_AddItemToArray(fails, cJSON_CreateString(pc_report_get(r, i)));
        else fprintf(stderr, "perfcast cache: %s\n", pc_report_get(r, i));
    }
    size_t failed = pc_report_count(r);
    pc_report_free(r);
    pc_dataset_close(d);
    if (st != PC_OK) {
        cJSON_Delete(fails);
        return pc_cli_fail(&e);
    }
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "out", out);
        cJSON_AddItemToObject(j, "collections", pc_cli_json_dataset(out));
        cJSON_AddItemToObject(j, "failures", fails);
        rc = pc_cli_json_print(j);
        return failed ? PC_EXIT_FAIL : rc;
    }
    cJSON_Delete(fails);
    printf("cache written to %s%s\n", out, failed ? " (with failures above)" : "");
    return failed ? PC_EXIT_FAIL : PC_EXIT_OK;
}
