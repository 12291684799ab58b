/* perfcast validate: predictions against measured runs (issue #12). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"
#include "calib_cli.h"

static void validate_help(FILE *f) {
    fprintf(
        f,
        "usage: perfcast validate RUNS.json [RUNS.json ...] [--calibration builtin|none|C.json]\n"
        "                         [--loso] [--kind train|serve|all] [--json]\n\n"
        "Predicts every measured run of the files (schema: data/calibration/SOURCE_README.md)\n"
        "with everything the run pins (chip, count, slices, tp, pp, vp, cp, ep, dp, fsdp,\n"
        "ZeRO, sequence parallel, micro-batch size and count, batch, sequence, remat,\n"
        "precision, framework) and prints measured vs predicted step time (training) or\n"
        "output tokens/s (serving), the signed error (predicted - measured) / measured, the\n"
        "ideal-roofline bound and the predicted breakdown; then median / mean / max absolute\n"
        "error overall, per source and per chip. A run that is invalid or cannot be\n"
        "expressed is listed with the reason and counted as a 100%% miss.\n\n"
        "  --calibration C  builtin (default: fitted on the shipped measurements), none\n"
        "                   (the ideal roofline: a lower bound), or a file from 'calibrate'\n"
        "  --loso           leave one source out: predict each source with a calibration\n"
        "                   fitted on the other sources only (honest out-of-sample error);\n"
        "                   a kind with a single source is held out chip by chip\n"
        "  --kind K         train, serve or all (default all)\n"
        "  --json           {\"runs\": [...], \"summary\": {...}}\n\n"
        "Exit status: 0, or 1 if any run of the files was invalid.\n");
}

int pc_cmd_validate(int argc, char **argv) {
    static const struct option opts[] = {{"calibration", required_argument, 0, 'c'},
                                         {"loso", no_argument, 0, 'l'},
                                         {"kind", required_argument, 0, 'k'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *calspec = "builtin";
    int json = 0, loso = 0, kinds = 3, cal_given = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': calspec = optarg, cal_given = 1; break;
        case 'l': loso = 1; break;
        case 'j': json = 1; break;
        case 'k':
            if (!(kinds = pc_ccli_parse_kind(optarg)))
                return pc_cli_usage_error("validate",
                                          "--kind: expected train, serve or all, "
                                          "got '%s'",
                                          optarg);
            break;
        case 'h': validate_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("validate", "unknown option '%s'", argv[optind - 1]);
        }
    }
    int nfiles = argc - optind;
    if (nfiles < 1)
        return pc_cli_usage_error("validate", "give a runs file (RUNS.json)");
    if (nfiles > 8)
        return pc_cli_usage_error("validate", "at most 8 runs files");
    /* --calibration builtin --loso too: the built-in would silently not be used */
    if (loso && cal_given)
        return pc_cli_usage_error("validate", "--loso fits its own calibrations; drop "
                                              "--calibration");
    pc_error err;
    memset(&err, 0, sizeof err);
    cJSON *req = pc_ccli_runs_request(nfiles, argv + optind), *doc = NULL;
    if (loso)
        cJSON_AddTrueToObject(req, "loso");
    else
        cJSON_AddStringToObject(req, "calibration", calspec);
    cJSON_AddStringToObject(req, "kind", kinds == 1 ? "train" : kinds == 2 ? "serve" : "all");
    if (pc_ccli_validate(req, &doc, &err) != PC_OK)
        return pc_cli_fail(&err);
    int bad = pc_ccli_print_problems(doc);
    if (json) {
        char *txt = cJSON_Print(doc);
        if (txt)
            puts(txt);
        free(txt);
    } else {
        const cJSON *sum = cJSON_GetObjectItemCaseSensitive(doc, "summary");
        pc_ccli_print_runs(doc);
        char title[160];
        snprintf(title, sizeof title, "absolute error (calibration: %s)",
                 pc_acli_jstr(doc, "calibration"));
        pc_ccli_print_summaries(sum, title);
        long long in_sample = pc_acli_jint(sum, "held_out_by_chip_runs");
        if (loso && in_sample)
            printf("  (%lld runs of a kind with a single source were held out chip by chip)\n",
                   in_sample);
    }
    cJSON_Delete(doc);
    return bad ? PC_EXIT_FAIL : PC_EXIT_OK;
}
