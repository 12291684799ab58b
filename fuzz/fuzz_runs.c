/*
 * Fuzz target: the measured-runs reader (pc_runs_parse), the input being a
 * runs file. Promises checked:
 *  - a rejected file fails with PC_ERR_FORMAT (or NOMEM), a message, no handle;
 *  - an accepted file: pc_runs_invalid() counts the runs with a problem, and
 *    every problem starts with "run '<id>': ";
 *  - every good run is usable as the calibration code will use it: its chip
 *    resolves, degrees are positive and multiply to the chips, a training
 *    run's batch splits exactly (gbs = mbs x dp x fsdp x ga) and has a
 *    positive step time and sequence length, a serving run positive lengths
 *    and throughput, its model passes pc_tfm_check; good runs' ids are
 *    unique.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "perfcast/calib.h"

static void check_good_run(const pc_run *r) {
    check(r->id[0] != '\0' && r->id[0] != '#');
    check(pc_run_chip(r) != NULL);
    const int64_t deg[] = {r->tp, r->pp, r->vp, r->cp, r->ep, r->etp, r->dp, r->fsdp};
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++)
        check(deg[i] >= 1);
    check(r->chips >= 1 && r->slices >= 1);
    check(r->chips == r->tp * r->pp * r->cp * r->dp * r->fsdp);
    check(r->zero >= -1 && r->zero <= 3);
    check((unsigned)r->prec < PC_PREC_COUNT && (unsigned)r->weight_prec < PC_PREC_COUNT &&
          (unsigned)r->kv_prec < PC_PREC_COUNT);
    check((unsigned)r->remat < PC_RRM_COUNT && (unsigned)r->framework < PC_FW_COUNT);
    check(isfinite(r->measured_value) && r->measured_value > 0);
    pc_tfm_cfg m = r->model;
    pc_error err;
    check(pc_tfm_check(&m, &err) == PC_OK);
    if (r->kind == PC_RUN_TRAIN) {
        check(r->global_batch_size >= 1 && r->micro_batch_size >= 1 && r->grad_accum >= 1);
        check(r->global_batch_size == r->micro_batch_size * r->dp * r->fsdp * r->grad_accum);
        check(isfinite(r->step_time_s) && r->step_time_s > 0);
        check(isfinite(r->seq_len) && r->seq_len >= 1);
    } else {
        check(r->kind == PC_RUN_SERVE);
        check(r->input_len >= 1 && r->output_len >= 1);
        check(isfinite(r->output_tokens_per_s) && r->output_tokens_per_s > 0);
        check(r->step_time_s == 0);
    }
}

PC_FUZZ_TARGET(runs) {
    pc_runs *rs = (pc_runs *)(uintptr_t)1; /* must be reset to NULL on failure */
    pc_error err;
    pc_status st = pc_runs_parse((const char *)data, size, "fuzz.json", &rs, &err);
    if (st != PC_OK) {
        check(rs == NULL && err.msg[0] != '\0');
        check(st == PC_ERR_FORMAT || st == PC_ERR_NOMEM);
        return 0;
    }
    int n = pc_runs_count(rs), bad = 0;
    check(n >= 0);
    for (int i = 0; i < n; i++) {
        const pc_run *r = pc_runs_at(rs, i);
        check(r != NULL);
        check(memchr(r->id, '\0', sizeof r->id) != NULL);
        const char *p = pc_runs_problem(rs, i);
        if (p) {
            bad++;
            char want[PC_RUN_ID_MAX + 16];
            snprintf(want, sizeof want, "run '%s': ", r->id);
            check(strncmp(p, want, strlen(want)) == 0 && strlen(p) > strlen(want));
            continue;
        }
        check_good_run(r);
        for (int j = 0; j < i; j++)
            if (!pc_runs_problem(rs, j)) check(strcmp(pc_runs_at(rs, j)->id, r->id) != 0);
    }
    check(bad == pc_runs_invalid(rs));
    check(pc_runs_at(rs, n) == NULL && pc_runs_problem(rs, n) == NULL);
    pc_runs_free(rs);
    return 0;
}
