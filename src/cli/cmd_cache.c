/* perfcast cache: converts a dataset tree into memory-mappable .pcc folders. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <string.h>

#include "cli.h"

static void cache_help(FILE *f) {
    fprintf(f, "usage: perfcast cache DIR --out CACHE_DIR [--threads N] [--json]\n\n"
               "Converts every .npz of the dataset at DIR into CACHE_DIR/<collection>/<split>/\n"
               "<stem>.pcc/ folders of uncompressed .npy arrays that later runs map instead of\n"
               "inflating. Up-to-date entries are kept, so re-running is cheap. Every command\n"
               "that takes a dataset DIR also takes CACHE_DIR. Ends with the counts: entries\n"
               "built, up to date, failed. On a terminal a progress line shows the files done.\n");
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
    pc_cache_opts o = pc_cache_opts_default();
    o.threads = (int)threads;
    pc_cli_progress *pr = pc_cli_progress_new("cache", pc_cli_progress_wanted());
    o.progress = pr ? pc_cli_progress_cb : NULL;
    o.progress_user = pr;
    pc_cache_result res;
    memset(&res, 0, sizeof res);
    res.struct_size = sizeof res;
    pc_status st = pc_cache_build_tree(d, out, &o, r, &res, &e);
    pc_cli_progress_end(pr);
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
        if (!json && res.files)
            fprintf(stderr, "perfcast cache: %lld built, %lld up to date, %lld failed\n",
                    (long long)res.built, (long long)res.up_to_date, (long long)res.failed);
        return pc_cli_fail(&e);
    }
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "out", out);
        cJSON_AddNumberToObject(j, "files", (double)res.files);
        cJSON_AddNumberToObject(j, "built", (double)res.built);
        cJSON_AddNumberToObject(j, "up_to_date", (double)res.up_to_date);
        cJSON_AddNumberToObject(j, "failed", (double)res.failed);
        cJSON_AddItemToObject(j, "collections", pc_cli_json_dataset(out));
        cJSON_AddItemToObject(j, "failures", fails);
        rc = pc_cli_json_print(j);
        return failed ? PC_EXIT_FAIL : rc;
    }
    cJSON_Delete(fails);
    printf("cache written to %s: %lld built, %lld up to date, %lld failed\n", out,
           (long long)res.built, (long long)res.up_to_date, (long long)res.failed);
    return failed ? PC_EXIT_FAIL : PC_EXIT_OK;
}
