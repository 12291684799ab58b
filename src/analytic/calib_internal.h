/* Internals shared by runs.c, calib.c, step_model.c and serve_model.c. */
#ifndef PC_CALIB_INTERNAL_H
#define PC_CALIB_INTERNAL_H

#include "analytic/analytic_internal.h"
#include "perfcast/calib.h"

enum {
#define X(id, name, ideal, prior, lo, hi, sigma, doc) PC_COEF_##id,
#include "analytic/calib_coefs.h"
#undef X
    PC_COEF_COUNT
};

struct pc_calib {
    int ideal; /* 1: pc_calib_ideal (every coefficient at its ideal value) */
    char origin[256];
    double c[PC_COEF_COUNT];
};

/* Coefficient `id` of cal (its ideal value when cal is NULL or ideal). */
double pc_calib_c(const pc_calib *cal, int id);

/* The fit's prior, bounds and prior width of coefficient i (calib.c). */
void pc_calib_coef_prior(int i, double *prior, double *lo, double *hi, double *sigma);

/* Training step time (step_model.c) and serving throughput (serve_model.c)
 * of a good run on its chip. Same contract as pc_run_predict. */
pc_status pc_train_predict(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                           pc_run_pred *out, pc_error *err);
/* pc_train_predict with the TPU slice already known (one slice of the job's
 * chips, no DCN axes; NULL: find it) and the ideal bound only on request. */
pc_status pc_train_predict_on_slice(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                                    const pc_mesh *slice, int want_ideal, pc_run_pred *out);
pc_status pc_serve_predict(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                           pc_run_pred *out, pc_error *err);

/* The run a planner plan stands for, in two parts (plan_calib.c): the
 * layout-independent base once per search, then each plan's layout into the
 * same run (-1: the plan cannot be expressed as a run). */
void pc_plan_run_base(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                      const pc_plan_train_opts *o, pc_run *r);
int pc_plan_run_layout(const pc_chip *chip, const pc_plan_train_opts *o, const pc_train_plan *pl,
                       pc_run *r);
/* The calibrated fields of a planner plan under o->calibration; `work` from
 * pc_plan_run_base (plan_calib.c). */
void pc_plan_calibrate(const pc_chip *chip, const pc_plan_train_opts *o, pc_run *work,
                       pc_train_plan *pl);

#endif
