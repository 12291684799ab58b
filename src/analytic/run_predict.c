/*
 * pc_run_predict: a measured or planned run to its model, the training step
 * model (step_model.c) or the serving model (serve_model.c). Above both and
 * calib.c, so the models read calibrations without a way back up.
 */
#include <stdio.h>
#include <string.h>

#include "analytic/calib_internal.h"

pc_status pc_run_predict(const pc_run *run, const pc_calib *cal, pc_run_pred *out, pc_error *err) {
    if (!run || !out) return pc_fail(err, PC_ERR_ARG, "pc_run_predict: NULL argument");
    memset(out, 0, sizeof *out);
    const pc_chip *chip = pc_run_chip(run);
    if (!chip) {
        snprintf(out->why, sizeof out->why, "hardware.chip: '%s' is not a known chip",
                 run->chip_name);
        return PC_OK;
    }
    return pc_run_predict_on(run, chip, cal, out, err);
}

pc_status pc_run_predict_on(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                            pc_run_pred *out, pc_error *err) {
    if (!run || !chip || !out) return pc_fail(err, PC_ERR_ARG, "pc_run_predict_on: NULL argument");
    if (run->kind == PC_RUN_SERVE) return pc_serve_predict(run, chip, cal, out, err);
    return pc_train_predict(run, chip, cal, out, err);
}
