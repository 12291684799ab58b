/*
 * A program outside the perfcast tree, built by tests/scripts/test_install.sh
 * against an installed perfcast (pkg-config and find_package(perfcast)).
 * Includes every public header (each must compile as C11 with -Wall -Wextra
 * -Werror -pedantic), predicts one small training run from a JSON string with
 * the built-in calibration, and prints a line that consumer.cpp prints too.
 * It is built against the headers of the library it links, so it may use the
 * unversioned analytic API (PC_STATIC_LINKING_ONLY, perfcast/perfcast.h).
 */
#define PC_STATIC_LINKING_ONLY
#include <stdio.h>
#include <string.h>

#include <perfcast/analytic.h>
#include <perfcast/calib.h>
#include <perfcast/dataset.h>
#include <perfcast/dist.h>
#include <perfcast/hlo.h>
#include <perfcast/hlo_cost.h>
#include <perfcast/metrics.h>
#include <perfcast/npz.h>
#include <perfcast/perfcast.h>
#include <perfcast/prune.h>
#include <perfcast/safetensors.h>
#include <perfcast/synth.h>
#include <perfcast/train.h>
#include <perfcast/tune.h>

#include "consumer_run.h"

static int fail(const char *what, const pc_error *err) {
    fprintf(stderr, "consumer: %s: %s\n", what, err->msg);
    return 1;
}

int main(void) {
    pc_error err = {PC_OK, ""};
    if (strcmp(pc_version(), PC_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: library %s, headers %s\n", pc_version(), PC_VERSION_STRING);
        return 1;
    }

    /* An option struct of another build is refused, not read past its end. */
    if (pc_version_number() != PC_VERSION_NUMBER) {
        fprintf(stderr, "consumer: library %u, headers %u\n", pc_version_number(),
                PC_VERSION_NUMBER);
        return 1;
    }
    pc_train_opts to = pc_train_opts_default();
    to.struct_size -= 8;
    if (pc_train_run(&to, NULL, NULL, NULL, NULL, &err) != PC_ERR_ARG ||
        !strstr(err.msg, "pc_train_opts.struct_size")) {
        fprintf(stderr, "consumer: a wrong struct_size was not refused: %s\n", err.msg);
        return 1;
    }

    /* Analytic model: a built-in chip and a model preset. */
    const pc_chip *chip = NULL;
    for (int i = 0; i < pc_chip_builtin_count(); i++)
        if (strcmp(pc_chip_builtin(i)->name, "h100") == 0) chip = pc_chip_builtin(i);
    if (!chip) {
        fprintf(stderr, "consumer: no built-in chip h100\n");
        return 1;
    }
    pc_tfm_cfg model;
    if (pc_tfm_preset("llama3-8b", &model, &err) != PC_OK) return fail("pc_tfm_preset", &err);
    pc_param_counts params;
    pc_tfm_params(&model, &params);

    /* A measured run from a JSON string, predicted with the built-in calibration. */
    pc_runs *runs = NULL;
    pc_calib *cal = NULL;
    if (pc_runs_parse(CONSUMER_RUN_JSON, strlen(CONSUMER_RUN_JSON), "consumer", &runs, &err) != PC_OK)
        return fail("pc_runs_parse", &err);
    if (pc_runs_count(runs) != 1 || pc_runs_problem(runs, 0)) {
        fprintf(stderr, "consumer: run: %s\n", pc_runs_problem(runs, 0));
        return 1;
    }
    if (pc_calib_builtin(&cal, &err) != PC_OK) return fail("pc_calib_builtin", &err);
    pc_run_pred pred;
    if (pc_run_predict(pc_runs_at(runs, 0), cal, &pred, &err) != PC_OK)
        return fail("pc_run_predict", &err);
    if (!pred.expressed || !(pred.predicted > 0.0) || !(pred.ideal > 0.0)) {
        fprintf(stderr, "consumer: run not predicted: %s\n", pred.why);
        return 1;
    }
    printf("perfcast %s chip %s llama3-8b params %.4g run %s measured %.4g s predicted %.6g s "
           "(ideal %.6g s, %s)\n",
           pc_version(), chip->name, params.total, pc_runs_at(runs, 0)->id, pred.measured,
           pred.predicted, pred.ideal, pc_calib_origin(cal));
    pc_calib_free(cal);
    pc_runs_free(runs);
    return 0;
}
