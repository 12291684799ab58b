/* perfcast calibrate: fit the analytic model's coefficients to measured runs (issue #12). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
static int fit_all(pc_ccli_runset *s, const pc_calib_fit_opts *fo, pc_calib **out, pc_error *err) {
    pc_calib *cal = NULL;
    for (int f = 0; f < s->nfiles; f++) {
        pc_calib *next = NULL;
        pc_status st = pc_calib_fit(s->runs[f], NULL, cal, fo, &next, err);
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
    for (int f = 0; f < s->nfiles && off > 0 && (size_t)off < sizeof origin; f++)
        off += snprintf(origin + off, sizeof origin - (size_t)off, " %s", s->paths[f]);
    pc_calib_set_origin(cal, origin);
    *out = cal;
    return 0;
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
    pc_ccli_runset s;
    rc = pc_ccli_load_or_fail(&s, nfiles, argv + optind);
    if (rc >= 0)
        return rc;
    pc_ccli_print_problems(&s);
    pc_error err;
    memset(&err, 0, sizeof err);
    pc_calib *cal = NULL, *prior = NULL;
    if (fit_all(&s, &fo, &cal, &err) || pc_calib_prior(&prior, &err) ||
        pc_calib_save(cal, out, &err)) {
        pc_calib_free(cal), pc_calib_free(prior);
        pc_ccli_runset_free(&s);
        return pc_cli_fail(&err);
    }
    pc_ccli_predict_all(&s, cal, 3);
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    if (json) {
        cJSON_AddStringToObject(root, "out", out);
        cJSON *co = cJSON_AddObjectToObject(root, "coefficients");
        for (int i = 0; i < pc_calib_coef_count(); i++)
            cJSON_AddNumberToObject(co, pc_calib_coef_name(i), pc_calib_get(cal, i));
        cJSON *fit = cJSON_AddObjectToObject(root, "in_sample");
        cJSON_AddItemToObject(fit, "summary", pc_ccli_summaries_json(&s, 3));
    } else {
        printf("%-32s %12s %12s  %s\n", "coefficient", "prior", "fitted", "meaning");
        for (int i = 0; i < pc_calib_coef_count(); i++)
            printf("%-32s %12.4g %12.4g  %s\n", pc_calib_coef_name(i), pc_calib_get(prior, i),
                   pc_calib_get(cal, i), pc_calib_coef_doc(i));
        printf("\nwrote %s\n", out);
        pc_ccli_print_summaries(&s, 3, "in-sample absolute error (fitted on these runs)");
    }
    if (loso) {
        int in_sample = 0;
        if (pc_ccli_predict_loso(&s, 3, &fo, &in_sample, &err)) {
            cJSON_Delete(root);
            pc_calib_free(cal), pc_calib_free(prior);
            pc_ccli_runset_free(&s);
            return pc_cli_fail(&err);
        }
        if (json) {
            cJSON *lo = cJSON_AddObjectToObject(root, "leave_one_source_out");
            cJSON *sum = pc_ccli_summaries_json(&s, 3);
            cJSON_AddNumberToObject(sum, "held_out_by_chip_runs", in_sample);
            cJSON_AddItemToObject(lo, "summary", sum);
        } else {
            pc_ccli_print_summaries(&s, 3,
                                    "leave-one-source-out absolute error (fit without the source, "
                                    "predict it)");
            if (in_sample)
                printf("  (%d runs of a kind with a single source: held out chip by chip)\n",
                       in_sample);
        }
    }
    if (json) {
        char *txt = cJSON_Print(root);
        if (txt)
            puts(txt);
        free(txt);
        cJSON_Delete(root);
    }
    pc_calib_free(cal), pc_calib_free(prior);
    int bad = 0;
    for (int i = 0; i < s.n; i++)
        bad |= s.problem[i] != NULL;
    pc_ccli_runset_free(&s);
    return bad ? PC_EXIT_FAIL : PC_EXIT_OK;
}
