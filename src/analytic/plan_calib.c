/*
 * Calibrated ranking of the training planner's plans: a plan becomes the
 * run it stands for, and the calibrated step-time model prices it
 * (docs/analytic.md "Calibrated planning").
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

int pc_run_from_plan(const pc_chip *chip, const pc_model_cfg *model, const pc_mesh *slice,
                     const pc_plan_train_opts *o, const pc_train_plan *pl, pc_run *r) {
    memset(r, 0, sizeof *r);
    double T = o->seq > 0 ? o->seq : 4096;
    const int64_t *a = pl->axis;
    int64_t shards = a[PC_PAR_DP] * a[PC_PAR_FSDP] * a[PC_PAR_EP];
    double seqs = o->batch_tokens / T;
    double per_shard = seqs / (double)shards / (double)pl->micro;
    if (per_shard < 1 || seqs != floor(seqs)) return -1;
    snprintf(r->id, sizeof r->id, "plan");
    snprintf(r->source, sizeof r->source, "plan");
    r->kind = PC_RUN_TRAIN;
    int gpu = chip->kind == PC_CHIP_GPU;
    r->framework = gpu ? PC_FW_MEGATRON : PC_FW_MAXTEXT;
    snprintf(r->framework_name, sizeof r->framework_name, "%s", pc_framework_name(r->framework));
    r->model = *model;
    snprintf(r->chip_name, sizeof r->chip_name, "%s", chip->name);
    r->chips = pc_mesh_devices(slice);
    r->slices = 1;
    for (int i = 0; i < slice->ndims; i++)
        if ((slice->dcn_mask >> i) & 1) r->slices *= slice->size[i];
    r->chips_per_node = gpu ? chip->nvlink_domain : 4;
    r->tp = a[PC_PAR_TP], r->pp = a[PC_PAR_PP], r->vp = 1, r->cp = 1, r->ep = a[PC_PAR_EP];
    r->etp = 1;
    /* expert ranks are data ranks for everything but the experts */
    r->dp = a[PC_PAR_DP] * a[PC_PAR_EP];
    r->fsdp = 1;
    r->zero = a[PC_PAR_FSDP] > 1 ? pl->zero : 0;
    if (a[PC_PAR_FSDP] > 1 && pl->zero == 3)
        r->fsdp = a[PC_PAR_FSDP];
    else
        r->dp *= a[PC_PAR_FSDP];
    r->sequence_parallel = gpu && r->tp > 1;
    r->micro_batch_size = (int64_t)floor(per_shard);
    r->grad_accum = pl->micro;
    r->global_batch_size = (int64_t)seqs;
    r->seq_len = T;
    r->prec = o->act_prec;
    r->remat = run_remat(pl->remat);
    r->flash_attention = 1;
    r->weight_prec = o->weight_prec;
    r->kv_prec = o->act_prec;
    return 0;
}

/* Fills the calibrated fields of a plan (0 when it cannot be expressed). */
void pc_plan_calibrate(const pc_chip *chip, const pc_model_cfg *model, const pc_mesh *slice,
                       const pc_plan_train_opts *o, pc_train_plan *pl) {
    pl->calibrated_step = pl->calibrated_mfu = 0;
    pl->calibrated_bottleneck = 0;
    if (!o->calibration) return;
    pc_run r;
    pc_run_pred p;
    if (pc_run_from_plan(chip, model, slice, o, pl, &r)) return;
    /* one slice of the job: the physical axes without the DCN ones */
    pc_mesh one;
    memset(&one, 0, sizeof one);
    for (int i = 0; i < slice->ndims; i++)
        if (!((slice->dcn_mask >> i) & 1)) {
            one.size[one.ndims] = slice->size[i];
            one.wrap[one.ndims++] = slice->wrap[i];
        }
    if (pc_train_predict_on_slice(&r, chip, o->calibration, chip->kind == PC_CHIP_TPU ? &one : NULL,
                                  0, &p) != PC_OK ||
        !p.expressed)
        return;
    pl->calibrated_step = p.predicted;
    pl->calibrated_mfu = pl->mfu * pl->step_time / p.predicted;
    for (int i = 1; i < PC_STEP_COUNT; i++)
        if (p.part[i] > p.part[pl->calibrated_bottleneck]) pl->calibrated_bottleneck = i;
}
