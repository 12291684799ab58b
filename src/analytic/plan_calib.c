/*
 * Calibrated ranking of the training planner's plans: a plan becomes the
 * run it stands for, and the calibrated step-time model prices it
 * (docs/analytic.md "Calibrated planning").
 *
 * The run is built in two parts so the search pays only for what changes
 * per plan: pc_plan_run_base (model, chip, workload: once per search) and
 * pc_plan_run_layout (axes, ZeRO, remat, micro-batches: per plan).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analytic/calib_internal.h"

static pc_run_remat run_remat(pc_remat r) {
    switch (r) {
    case PC_REMAT_NONE: return PC_RRM_NONE;
    case PC_REMAT_BIG_MATMULS: return PC_RRM_SELECTIVE; /* matmul outputs kept, the rest redone */
    default: return PC_RRM_FULL;
    }
}

/* Bounded copy without the cost of snprintf (called per plan). */
static void copy_str(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void pc_plan_run_base(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                      const pc_plan_train_opts *o, pc_run *r) {
    memset(r, 0, sizeof *r);
    copy_str(r->id, sizeof r->id, "plan");
    copy_str(r->source, sizeof r->source, "plan");
    r->kind = PC_RUN_TRAIN;
    int gpu = chip->kind == PC_CHIP_GPU;
    r->framework = gpu ? PC_FW_MEGATRON : PC_FW_MAXTEXT;
    copy_str(r->framework_name, sizeof r->framework_name, pc_framework_name(r->framework));
    r->model = *model;
    copy_str(r->chip_name, sizeof r->chip_name, chip->name);
    r->chips = pc_mesh_devices(slice);
    r->slices = 1;
    for (int i = 0; i < slice->ndims; i++)
        if ((slice->dcn_mask >> i) & 1) r->slices *= slice->size[i];
    r->chips_per_node = gpu ? chip->nvlink_domain : 4;
    double T = o->seq > 0 ? o->seq : 4096;
    r->seq_len = T;
    r->global_batch_size = (int64_t)floor(o->batch_tokens / T);
    r->prec = o->act_prec;
    r->flash_attention = 1;
    r->weight_prec = o->weight_prec;
    r->kv_prec = o->act_prec;
    r->zero = 0;
    r->etp = 1;
}

/* Context-parallel ways of a plan as a run: the pinned cp, else the split a
 * plan makes when it has more data shards than sequences (a whole number of
 * shards per sequence; 0 when the split is not whole). */
static int64_t plan_cp(const pc_train_plan *pl, int64_t shards, double seqs) {
    if (pl->cp > 1) return pl->cp;
    if (seqs >= (double)shards) return 1;
    double c = (double)shards / seqs;
    return c == floor(c) ? (int64_t)c : 0;
}

int pc_plan_run_layout(const pc_chip *chip, const pc_plan_train_opts *o, const pc_train_plan *pl,
                       pc_run *r) {
    const int64_t *a = pl->axis;
    int64_t shards = a[PC_PAR_DP] * a[PC_PAR_FSDP] * a[PC_PAR_EP];
    double seqs = (double)r->global_batch_size;
    if (seqs < 1 || seqs * r->seq_len != o->batch_tokens) return -1; /* not whole sequences */
    int64_t cp = plan_cp(pl, shards, seqs);
    if (cp < 1 || shards % cp) return -1;
    double per_mb = seqs / (double)(shards / cp) / (double)pl->micro;
    if (per_mb < 1) return -1;
    r->tp = a[PC_PAR_TP], r->pp = a[PC_PAR_PP], r->ep = a[PC_PAR_EP];
    r->vp = pl->vp > 1 ? pl->vp : 1;
    /* expert ranks are data ranks for everything but the experts; ZeRO-1/2
     * is a distributed optimizer over the data ranks, ZeRO-3 is FSDP */
    int zero3 = a[PC_PAR_FSDP] > 1 && pl->zero == 3;
    int64_t dp = a[PC_PAR_DP] * a[PC_PAR_EP] * (zero3 ? 1 : a[PC_PAR_FSDP]);
    int64_t fsdp = zero3 ? a[PC_PAR_FSDP] : 1;
    /* cp ranks come out of the data ranks (chips = tp pp cp dp fsdp) */
    int64_t g = pc_gcd64(dp, cp), rest = cp / g;
    if (fsdp % rest) return -1;
    r->cp = cp;
    r->dp = dp / g;
    r->fsdp = fsdp / rest;
    r->zero = a[PC_PAR_FSDP] > 1 ? pl->zero : 0;
    r->sequence_parallel = chip->kind == PC_CHIP_GPU && r->tp > 1;
    /* a shard holds whole sequences: an uneven split pads (as the ideal pads tokens) */
    r->micro_batch_size = (int64_t)ceil(per_mb - 1e-9);
    r->grad_accum = pl->micro;
    r->remat = run_remat(pl->remat);
    return 0;
}

int pc_run_from_plan(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                     const pc_plan_train_opts *o, const pc_train_plan *pl, pc_run *out) {
    if (!o || o->struct_size != sizeof *o) return -1;
    pc_plan_run_base(chip, model, slice, o, out);
    return pc_plan_run_layout(chip, o, pl, out);
}

/* Fills the calibrated fields of a plan (0 when it cannot be expressed or
 * its calibrated step is not finite: the plan then ranks by its ideal step,
 * after the calibrated ones). `work` comes from pc_plan_run_base. */
void pc_plan_calibrate(const pc_chip *chip, const pc_plan_train_opts *o, pc_run *work,
                       pc_train_plan *pl) {
    pl->calibrated_step = pl->calibrated_mfu = 0;
    pl->calibrated_bottleneck = 0;
    if (!o->calibration) return;
    pc_run_pred p;
    if (pc_plan_run_layout(chip, o, pl, work)) return;
    /* the ideal bound of the plan is the planner's own step: not repriced here */
    if (pc_train_predict_on_slice(work, chip, o->calibration, NULL, 0, &p) != PC_OK ||
        !p.expressed)
        return;
    double mfu = pl->mfu * pl->step_time / p.predicted;
    if (!isfinite(p.predicted) || !(p.predicted > 0) || !isfinite(mfu) || !(mfu > 0)) return;
    pl->calibrated_step = p.predicted;
    pl->calibrated_mfu = mfu;
    for (int i = 1; i < PC_STEP_COUNT; i++)
        if (p.part[i] > p.part[pl->calibrated_bottleneck]) pl->calibrated_bottleneck = i;
}
