/* perfcast calibrate: fit the analytic model's coefficients to measured runs (issue #12). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"
#include "calib_cli.h"

static void calibrate_help(FILE *f) {
    fprintf(f, "usage: perfcast calibrate RUNS.json [RUNS.json ...] --out C.json [--json]\n"
               "                          [--huber D] [--prior-weight W] [--no-loso]\n\n"
               "Fits the model's few free coefficients (efficiencies, overlap fractions,\n"
               "overheads; per chip family and framework, never per run) to the measured runs by\n"
               "robust least squares on log step time (log tokens/s for serving), with a prior on\n"
               "every coefficient, writes them to C.json (use with --calibration C.json on plan\n"
               "train, plan serve and validate), and reports the in-sample error and the\n"
               "leave-one-source-out error (fit without a source, predict it).\n\n"
               "  --out FILE        the calibration to write (temporary file, then rename)\n"
               "  --huber D         Huber threshold on the log error, 1e-6 to 10 (default 0.10)\n"
               "  --prior-weight W  weight of the priors (default 1; 0 = none)\n"
               "  --no-loso         skip the leave-one-source-out report\n"
               "  --json            machine-readable report\n");
}

static int parse_pos(const char *s, double *v) {
    char *end;
    *v = strtod(s, &end);
    return *s && !*end && isfinite(*v) && *v >= 0 ? 0 : -1;
}

/* Fits file by file (each file's runs move only the coefficients they
 * depend on), starting from the priors. */
static int fit_all(pc_runs **runs, char **paths, int nfiles, const pc_calib_fit_opts *fo,
                   pc_calib **out, pc_error *err) {
    pc_calib *cal = NULL;
    for (int f = 0; f < nfiles; f++) {
        pc_calib *next = NULL;
        pc_status st = pc_calib_fit(runs[f], NULL, cal, fo, &next, err);
        if (st == PC_ERR_INVALID)
            continue; /* nothing expressible in this file */
        if (st) {
            pc_calib_free(cal);
            return -1;
        }
        pc_calib_free(cal);
        cal = next;
    }
    if (!cal) {
        snprintf(err->msg, sizeof err->msg, "no expressible runs to fit in the files given");
        return -1;
    }
    char origin[256];
    int off = snprintf(origin, sizeof origin, "perfcast calibrate");
    for (int f = 0; f < nfiles && off > 0 && (size_t)off < sizeof origin; f++)
        off += snprintf(origin + off, sizeof origin - (size_t)off, " %s", paths[f]);
    pc_calib_set_origin(cal, origin);
    *out = cal;
    return 0;
}

/* The runs files, their invalid runs said on stderr (*bad: how many); -1 or the exit code. */
static int load_runs(pc_runs **runs, char **paths, int nfiles, int *bad) {
    pc_error err;
    memset(&err, 0, sizeof err);
    *bad = 0;
    for (int f = 0; f < nfiles; f++)
        if (pc_runs_load(paths[f], &runs[f], &err)) {
            for (int q = 0; q < f; q++)
                pc_runs_free(runs[q]);
            return pc_cli_fail(&err);
        }
    for (int f = 0; f < nfiles; f++)
        for (int i = 0; i < pc_runs_count(runs[f]); i++)
            if (pc_runs_problem(runs[f], i)) {
                fprintf(stderr, "perfcast: invalid run: %s\n", pc_runs_problem(runs[f], i));
                (*bad)++;
            }
    return -1;
}

/* The validate query's summary of the runs files (under calibration `out`, or leave one
 * source out with the fit options), detached from its document into *sum. */
static pc_status summary_of(char **paths, int nfiles, const char *out, const pc_calib_fit_opts *fo,
                            cJSON **sum, pc_error *err) {
    cJSON *req = pc_ccli_runs_request(nfiles, paths), *doc = NULL;
    if (out) {
        cJSON_AddStringToObject(req, "calibration", out);
    } else {
        cJSON_AddTrueToObject(req, "loso");
        cJSON_AddNumberToObject(req, "huber", fo->huber);
        cJSON_AddNumberToObject(req, "prior_weight", fo->prior_weight);
    }
    pc_status st = pc_ccli_validate(req, &doc, err);
    if (!st)
        *sum = cJSON_DetachItemFromObjectCaseSensitive(doc, "summary");
    cJSON_Delete(doc);
    return st;
}

int pc_cmd_calibrate(int argc, char **argv) {
    static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                         {"huber", required_argument, 0, 'u'},
                                         {"prior-weight", required_argument, 0, 'w'},
                                         {"no-loso", no_argument, 0, 'n'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    int json = 0, loso = 1, c;
    pc_calib_fit_opts fo = pc_calib_fit_opts_default();
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'n': loso = 0; break;
        case 'j': json = 1; break;
        case 'u':
            /* a log error: below 1e-6 is noise of the predictions, above 10 a factor
             * e^10; outside, the cost's 1/D^2 scaling under- or overflows */
            if (parse_pos(optarg, &fo.huber) || !(fo.huber >= 1e-6 && fo.huber <= 10))
                return pc_cli_usage_error("calibrate",
                                          "--huber: expected a number in [1e-6, 10], "
                                          "got '%s'",
                                          optarg);
            break;
        case 'w':
            if (parse_pos(optarg, &fo.prior_weight))
                return pc_cli_usage_error("calibrate",
                                          "--prior-weight: expected a number >= 0, "
                                          "got '%s'",
                                          optarg);
            break;
        case 'h': calibrate_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("calibrate", "unknown option '%s'", argv[optind - 1]);
        }
    }
    int nfiles = argc - optind;
    if (nfiles < 1)
        return pc_cli_usage_error("calibrate", "give a runs file (RUNS.json)");
    if (nfiles > 8)
        return pc_cli_usage_error("calibrate", "at most 8 runs files");
    if (!out)
        return pc_cli_usage_error("calibrate", "--out C.json is required");
    int rc = pc_cli_check_not_input("calibrate", "--out", out, (const char *const *)(argv + optind),
                                    nfiles);
    if (rc < 0) rc = pc_cli_check_out_file("calibrate", "--out", out);
    if (rc >= 0) return rc;
    pc_runs *runs[8] = {0};
    int bad = 0;
    char **paths = argv + optind;
    rc = load_runs(runs, paths, nfiles, &bad);
    if (rc >= 0)
        return rc;
    pc_error err;
    memset(&err, 0, sizeof err);
    pc_calib *cal = NULL, *prior = NULL;
    cJSON *sum = NULL;
    int st = fit_all(runs, paths, nfiles, &fo, &cal, &err) || pc_calib_prior(&prior, &err) ||
             pc_calib_save(cal, out, &err) || summary_of(paths, nfiles, out, &fo, &sum, &err);
    for (int f = 0; f < nfiles; f++)
        pc_runs_free(runs[f]);
    if (st) {
        pc_calib_free(cal), pc_calib_free(prior);
        return pc_cli_fail(&err);
    }
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    if (json) {
        cJSON_AddStringToObject(root, "out", out);
        cJSON *co = cJSON_AddObjectToObject(root, "coefficients");
        for (int i = 0; i < pc_calib_coef_count(); i++)
            cJSON_AddNumberToObject(co, pc_calib_coef_name(i), pc_calib_get(cal, i));
        cJSON *fit = cJSON_AddObjectToObject(root, "in_sample");
        cJSON_AddItemToObject(fit, "summary", sum);
    } else {
        printf("%-32s %12s %12s  %s\n", "coefficient", "prior", "fitted", "meaning");
        for (int i = 0; i < pc_calib_coef_count(); i++)
            printf("%-32s %12.4g %12.4g  %s\n", pc_calib_coef_name(i), pc_calib_get(prior, i),
                   pc_calib_get(cal, i), pc_calib_coef_doc(i));
        printf("\nwrote %s\n", out);
        pc_ccli_print_summaries(sum, "in-sample absolute error (fitted on these runs)");
        cJSON_Delete(sum);
    }
    pc_calib_free(cal), pc_calib_free(prior);
    if (loso) {
        if (summary_of(paths, nfiles, NULL, &fo, &sum, &err)) {
            cJSON_Delete(root);
            return pc_cli_fail(&err);
        }
        long long in_sample = pc_acli_jint(sum, "held_out_by_chip_runs");
        if (json) {
            cJSON *lo = cJSON_AddObjectToObject(root, "leave_one_source_out");
            cJSON_AddItemToObject(lo, "summary", sum);
        } else {
            pc_ccli_print_summaries(sum,
                                    "leave-one-source-out absolute error (fit without the source, "
                                    "predict it)");
            if (in_sample)
                printf("  (%lld runs of a kind with a single source: held out chip by chip)\n",
                       in_sample);
            cJSON_Delete(sum);
        }
    }
    if (json) {
        char *txt = cJSON_Print(root);
        if (txt)
            puts(txt);
        free(txt);
        cJSON_Delete(root);
    }
    return bad ? PC_EXIT_FAIL : PC_EXIT_OK;
}
