/* Shared pieces of `perfcast validate` and `perfcast calibrate`: runs files,
 * predictions (plain and leave one source out), error summaries. */
#ifndef PC_CALIB_CLI_H
#define PC_CALIB_CLI_H

#include <cjson/cJSON.h>

#include "cli.h"
#include "perfcast/calib.h"

/* The runs of up to 8 files, flattened. */
typedef struct pc_ccli_runset {
    pc_runs *runs[8];
    const char *paths[8];
    int nfiles;
    /* flattened view over all files */
    int n;
    const pc_run **run;
    const char **problem;
    pc_run_pred *pred;
} pc_ccli_runset;

/* Absolute errors of a set of runs; a run not expressed or invalid counts as
 * a 100% miss. over: fraction of the expressed runs predicted too high. */
typedef struct pc_ccli_errsum {
    int runs, expressed, invalid;
    double median, mean, max, over; /* abs errors; over: fraction predicted too high */
} pc_ccli_errsum;

void pc_ccli_runset_free(pc_ccli_runset *s);
/* -1 on success, else the exit code after printing the error. */
int pc_ccli_load_or_fail(pc_ccli_runset *s, int nfiles, char **paths);
void pc_ccli_print_problems(const pc_ccli_runset *s);
/* kinds: bit 0 training, bit 1 serving */
int pc_ccli_kind_ok(int kinds, pc_run_kind k);
int pc_ccli_parse_kind(const char *s); /* "train", "serve", "all" -> 1, 2, 3; 0 if unknown */
void pc_ccli_predict_all(pc_ccli_runset *s, const pc_calib *cal, int kinds);
int pc_ccli_predict_loso(pc_ccli_runset *s, int kinds, const pc_calib_fit_opts *fo,
                         int *by_chip_runs, pc_error *err);
pc_ccli_errsum pc_ccli_summarize(const pc_ccli_runset *s, int kinds, const char *source,
                                 const char *chip);
void pc_ccli_print_summaries(const pc_ccli_runset *s, int kinds, const char *title);
cJSON *pc_ccli_summaries_json(const pc_ccli_runset *s, int kinds);
cJSON *pc_ccli_run_json(const pc_run *r, const char *problem, const pc_run_pred *p);
void pc_ccli_print_runs(const pc_ccli_runset *s, int kinds);

#endif
