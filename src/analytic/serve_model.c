/* Placeholder until the serving model lands (replaced by the h-serve branch). */
#include <stdio.h>
#include <string.h>

#include "analytic/calib_internal.h"

pc_status pc_serve_predict(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                           pc_run_pred *out, pc_error *err) {
    (void)chip, (void)cal, (void)err;
    memset(out, 0, sizeof *out);
    out->measured = run->output_tokens_per_s;
    snprintf(out->why, sizeof out->why, "serving model not built yet");
    return PC_OK;
}
