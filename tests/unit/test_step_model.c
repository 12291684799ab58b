/*
 * Tests of the calibrated training step model (src/analytic/step_model.c,
 * docs/analytic.md "Calibrated training model"), each term against a value
 * derived by hand from its formula:
 * - pipeline bubble: (p - 1) stage times for 1F1B, (p - 1) / v interleaved,
 *   i.e. (p - 1) / (v m) of the pipelined micro-batches;
 * - uneven stages: ceil(L / p) layers on the slowest stage;
 * - Megatron TP all-reduces with nothing hidden: 4 ring all-reduces of
 *   [tokens, D] per layer per micro-batch over NVLink;
 * - MaxText across slices: the DCN ring of each chip's FSDP shard of the
 *   float32 gradients, plus 2 (S - 1) ring steps per layer;
 * - FSDP gathers and scatters, expert all-to-alls, element-wise traffic
 *   replicated over TP without sequence parallelism;
 * - the parts add up to the step, the ideal calibration is a lower bound.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perfcast/calib.h"

/* 16 layers of D 2048, MHA, gated MLP 8192: a small llama. */
#define MODEL(layers)                                                                              \
    "{\"model_type\": \"llama\", \"name\": \"m\", \"hidden_size\": 2048,"                          \
    " \"num_hidden_layers\": " #layers ", \"num_attention_heads\": 16,"                            \
    " \"num_key_value_heads\": 16, \"head_dim\": 128, \"intermediate_size\": 8192,"                \
    " \"vocab_size\": 32000, \"mlp_gated\": true}"

static char *run_json(const char *model, const char *chip, int chips, const char *fw, int tp, int pp,
                      int vp, int dp, int fsdp, int slices, int mbs, int ga, int sp,
                      const char *remat) {
    char *s = malloc(4096);
    int gbs = mbs * dp * fsdp * ga;
    snprintf(s, 4096,
             "[{\"id\": \"r\", \"kind\": \"train\", \"framework\": \"%s\", \"model\": %s,"
             " \"hardware\": {\"chip\": \"%s\", \"chips\": %d, \"slices\": %d},"
             " \"parallelism\": {\"tp\": %d, \"pp\": %d, \"vp\": %d, \"dp\": %d, \"fsdp\": %d,"
             "  \"sequence_parallel\": %s, \"micro_batch_size\": %d, \"global_batch_size\": %d,"
             "  \"grad_accum\": %d},"
             " \"workload\": {\"seq_len\": 2048, \"precision\": \"bf16\", \"remat\": \"%s\","
             "  \"flash_attention\": true},"
             " \"measured\": {\"metric\": \"step_time_s\", \"value\": 1.0}, \"step_time_s\": 1.0}]",
             fw, model, chip, chips, slices, tp, pp, vp, dp, fsdp, sp ? "true" : "false", mbs, gbs,
             ga, remat);
    return s;
}

static pc_run_pred predict(const char *json, const pc_calib *cal, pc_run *copy) {
    pc_runs *rs = NULL;
    pc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(pc_runs_parse(json, strlen(json), "t.json", &rs, &err), PC_OK);
    if (pc_runs_problem(rs, 0)) fail_msg("%s", pc_runs_problem(rs, 0));
    pc_run_pred p;
    assert_int_equal(pc_run_predict(pc_runs_at(rs, 0), cal, &p, &err), PC_OK);
    if (!p.expressed) fail_msg("not expressed: %s", p.why);
    if (copy) *copy = *pc_runs_at(rs, 0);
    pc_runs_free(rs);
    return p;
}

static void close_rel(double got, double want, double tol, const char *what) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%s: got %.9g, want %.9g (tol %g)", what, got, want, tol);
}

/* The parts of one micro-batch on the slowest stage, times m. */
static double pipelined(const pc_run_pred *p) {
    return p->part[PC_STEP_COMPUTE] + p->part[PC_STEP_MEMORY] + p->part[PC_STEP_TP] +
           p->part[PC_STEP_CP] + p->part[PC_STEP_FSDP] + p->part[PC_STEP_EP] +
           p->part[PC_STEP_PP];
}

static void test_parts_sum_to_step(void **state) {
    (void)state;
    pc_calib *cal;
    assert_int_equal(pc_calib_builtin(&cal, NULL), PC_OK);
    char *j = run_json(MODEL(16), "h100-sxm", 16, "nemo", 2, 2, 2, 4, 1, 1, 1, 8, 1, "full");
    pc_run_pred p = predict(j, cal, NULL);
    double sum = 0;
    for (int i = 0; i < PC_STEP_COUNT; i++) {
        assert_true(p.part[i] >= 0 && isfinite(p.part[i]));
        sum += p.part[i];
    }
    close_rel(sum, p.predicted, 1e-12, "parts sum to the step");
    assert_true(p.ideal > 0 && p.ideal <= p.predicted);
    assert_true(p.mfu > 0 && p.mfu < 1);
    free(j);
    pc_calib_free(cal);
}

static void test_bubble_closed_forms(void **state) {
    (void)state;
    /* 1F1B: p = 4, m = 8 -> bubble = (p - 1) / m of the pipelined time */
    char *j1 = run_json(MODEL(16), "h100-sxm", 4, "nemo", 1, 4, 1, 1, 1, 1, 1, 8, 0, "none");
    pc_run_pred a = predict(j1, NULL, NULL);
    close_rel(a.part[PC_STEP_BUBBLE], 3.0 / 8 * pipelined(&a), 1e-12, "1F1B bubble (p-1)/m");
    /* interleaved, v = 2 (16 layers = 4 stages x 2 chunks x 2): (p - 1) / (v m) */
    char *j2 = run_json(MODEL(16), "h100-sxm", 4, "nemo", 1, 4, 2, 1, 1, 1, 1, 8, 0, "none");
    pc_run_pred b = predict(j2, NULL, NULL);
    close_rel(b.part[PC_STEP_BUBBLE], 3.0 / (2 * 8) * pipelined(&b), 1e-12,
              "interleaved bubble (p-1)/(v m)");
    /* the same layers per stage: interleaving halves the bubble, compute unchanged */
    close_rel(b.part[PC_STEP_COMPUTE], a.part[PC_STEP_COMPUTE], 1e-12, "same compute");
    /* no pipeline, no bubble */
    char *j3 = run_json(MODEL(16), "h100-sxm", 4, "nemo", 1, 1, 1, 4, 1, 1, 1, 2, 0, "none");
    pc_run_pred c = predict(j3, NULL, NULL);
    assert_true(c.part[PC_STEP_BUBBLE] == 0 && c.part[PC_STEP_PP] == 0);
    free(j1), free(j2), free(j3);
}

static void test_uneven_stages(void **state) {
    (void)state;
    /* 30 layers over 4 stages: the slowest holds ceil(30/4) = 8, like 32 over 4 */
    char *j30 = run_json(MODEL(30), "h100-sxm", 4, "nemo", 1, 4, 1, 1, 1, 1, 1, 8, 0, "none");
    char *j32 = run_json(MODEL(32), "h100-sxm", 4, "nemo", 1, 4, 1, 1, 1, 1, 1, 8, 0, "none");
    char *j28 = run_json(MODEL(28), "h100-sxm", 4, "nemo", 1, 4, 1, 1, 1, 1, 1, 8, 0, "none");
    pc_run_pred a = predict(j30, NULL, NULL), b = predict(j32, NULL, NULL),
                c = predict(j28, NULL, NULL);
    close_rel(a.part[PC_STEP_COMPUTE], b.part[PC_STEP_COMPUTE], 1e-12, "ceil(30/4) = 32/4");
    assert_true(c.part[PC_STEP_COMPUTE] < a.part[PC_STEP_COMPUTE]); /* 7 layers */
    free(j30), free(j32), free(j28);
}

/* A calibration with every coefficient at its prior except the ones set. */
static pc_calib *calib_with(const char *const *names, const double *values, int n) {
    pc_calib *cal;
    assert_int_equal(pc_calib_prior(&cal, NULL), PC_OK);
    for (int k = 0; k < n; k++) {
        int found = 0;
        for (int i = 0; i < pc_calib_coef_count(); i++)
            if (!strcmp(pc_calib_coef_name(i), names[k])) {
                assert_int_equal(pc_calib_set(cal, i, values[k], NULL), PC_OK);
                found = 1;
            }
        if (!found) fail_msg("no coefficient %s", names[k]);
    }
    return cal;
}

static void test_tp_allreduce_by_hand(void **state) {
    (void)state;
    /* Megatron-LM, nothing overlapped, full link bandwidth */
    const char *names[] = {"train.megatron-lm.overlap_tp", "train.bw_eff"};
    const double vals[] = {0.0, 1.0};
    pc_calib *cal = calib_with(names, vals, 2);
    /* tp 8 in one H100 node, mbs 2, seq 2048, 16 layers, 3 micro-batches, no remat */
    char *j = run_json(MODEL(16), "h100-sxm", 8, "megatron-lm", 8, 1, 1, 1, 1, 1, 2, 3, 1, "none");
    pc_run run;
    pc_run_pred p = predict(j, cal, &run);
    const pc_chip *h100 = pc_run_chip(&run);
    double V = 2.0 * 2048 * 2048 * 2; /* [mbs x seq, D] in bf16 */
    double one = 2.0 * 7 / 8 * V / h100->nvlink_bw + h100->coll_latency;
    close_rel(p.part[PC_STEP_TP], 3 * 16 * 4 * one, 1e-9, "4 all-reduces x 16 layers x 3 mb");
    /* full recomputation adds 2 more all-reduces per layer */
    char *jf = run_json(MODEL(16), "h100-sxm", 8, "megatron-lm", 8, 1, 1, 1, 1, 1, 2, 3, 1, "full");
    pc_run_pred q = predict(jf, cal, NULL);
    close_rel(q.part[PC_STEP_TP], 3 * 16 * 6 * one, 1e-9, "6 all-reduces with full remat");
    free(j), free(jf);
    pc_calib_free(cal);
}

static void test_dcn_by_hand(void **state) {
    (void)state;
    const char *names[] = {"train.overlap_dp", "train.dcn_eff", "train.dcn_step_s"};
    const double vals[] = {0.0, 0.5, 2e-4};
    pc_calib *cal = calib_with(names, vals, 3);
    /* MaxText: 4 slices of a v5e-256, FSDP 256 in each, DP 4 over DCN */
    char *j = run_json(MODEL(16), "tpu-v5e", 1024, "maxtext", 1, 1, 1, 4, 256, 4, 2, 1, 0, "full");
    pc_run run;
    pc_run_pred p = predict(j, cal, &run);
    pc_flop_counts fl;
    pc_tfm_flops(&run.model, 2048, 1, PC_REMAT_NONE, &fl);
    double P = (fl.fwd_attn_proj + fl.fwd_dense_mlp + fl.fwd_shared + fl.fwd_router +
                fl.fwd_unembed) /
               2;
    double V = P / 256 * 4; /* this chip's FSDP shard of the float32 gradients */
    const pc_chip *v5e = pc_run_chip(&run);
    double ring = 2.0 * 3 / 4 * V / (v5e->dcn_bw * 0.5);
    double steps = 2.0 * 3 * 16 * 2e-4;
    close_rel(p.part[PC_STEP_DCN], ring + steps, 1e-9, "DCN ring + per-layer ring steps");
    /* one slice: nothing over DCN */
    char *j1 = run_json(MODEL(16), "tpu-v5e", 256, "maxtext", 1, 1, 1, 1, 256, 1, 2, 1, 0, "full");
    pc_run_pred q = predict(j1, cal, NULL);
    assert_true(q.part[PC_STEP_DCN] == 0);
    assert_true(p.predicted > q.predicted);
    free(j), free(j1);
    pc_calib_free(cal);
}


/* Forward matmul weights of the model (what FSDP gathers): FLOPs / 2. */
static double matmul_params(const pc_run *run) {
    pc_flop_counts fl;
    pc_tfm_flops(&run->model, 2048, 1, PC_REMAT_NONE, &fl);
    return (fl.fwd_attn_proj + fl.fwd_dense_mlp + fl.fwd_shared + fl.fwd_router +
            fl.fwd_unembed) /
           2;
}

static void test_fsdp_by_hand(void **state) {
    (void)state;
    const char *names[] = {"train.megatron.overlap_fsdp", "train.bw_eff"};
    const double vals[] = {0.0, 1.0};
    pc_calib *cal = calib_with(names, vals, 2);
    /* FSDP 8 in one H100 node, 2 micro-batches: every micro-batch gathers the
     * bf16 weights twice (forward, backward) and reduce-scatters bf16 grads */
    char *j =
        run_json(MODEL(16), "h100-sxm", 8, "megatron-bridge", 1, 1, 1, 1, 8, 1, 1, 2, 0, "none");
    pc_run run;
    pc_run_pred p = predict(j, cal, &run);
    const pc_chip *h = pc_run_chip(&run);
    double one = 7.0 / 8 * matmul_params(&run) * 2 / h->nvlink_bw + h->coll_latency;
    close_rel(p.part[PC_STEP_FSDP], 2 * 3 * one, 1e-9, "2 x (2 gathers + 1 scatter)");
    free(j);
    pc_calib_free(cal);
}

#define MOE_MODEL                                                                                  \
    "{\"model_type\": \"mixtral\", \"name\": \"moe\", \"hidden_size\": 2048,"                       \
    " \"num_hidden_layers\": 8, \"num_attention_heads\": 16, \"num_key_value_heads\": 8,"          \
    " \"head_dim\": 128, \"intermediate_size\": 4096, \"vocab_size\": 32000,"                       \
    " \"num_local_experts\": 8, \"num_experts_per_tok\": 2, \"mlp_gated\": true}"

static void test_ep_alltoall_by_hand(void **state) {
    (void)state;
    const char *names[] = {"train.overlap_ep", "train.bw_eff"};
    const double vals[] = {0.0, 1.0};
    pc_calib *cal = calib_with(names, vals, 2);
    /* 8 experts over EP 8 (carved from DP 8) in one H100 node, 3 micro-batches
     * of 1 x 2048 tokens: dispatch + combine forward and backward per layer,
     * each chip sending the k = 2 copies of its tokens */
    char *j = run_json(MOE_MODEL, "h100-sxm", 8, "megatron-bridge", 1, 1, 1, 8, 1, 1, 1, 3, 0,
                       "none");
    /* add the schema's ep field in front of dp */
    char *at = strstr(j, "\"dp\": 8");
    assert_non_null(at);
    char *j2 = malloc(strlen(j) + 16);
    snprintf(j2, strlen(j) + 16, "%.*s\"ep\": 8, %s", (int)(at - j), j, at);
    pc_run run;
    pc_run_pred p = predict(j2, cal, &run);
    assert_int_equal(run.ep, 8);
    const pc_chip *h = pc_run_chip(&run);
    double v = 2048.0 * 2 * 2048 * 2; /* tokens x k x D x bf16 */
    double one = 7.0 / 8 * v / h->nvlink_bw + h->coll_latency;
    close_rel(p.part[PC_STEP_EP], 3 * 8 * 4 * one, 1e-9, "4 all-to-alls x 8 layers x 3 mb");
    free(j), free(j2);
    pc_calib_free(cal);
}

static void test_memory_replicated_without_sp(void **state) {
    (void)state;
    /* Megatron without sequence parallelism repeats the element-wise work on
     * every TP rank; with it each rank does 1/tp */
    pc_calib *cal;
    assert_int_equal(pc_calib_builtin(&cal, NULL), PC_OK);
    char *a = run_json(MODEL(16), "h100-sxm", 4, "nemo", 4, 1, 1, 1, 1, 1, 1, 2, 0, "none");
    char *b = run_json(MODEL(16), "h100-sxm", 4, "nemo", 4, 1, 1, 1, 1, 1, 1, 2, 1, "none");
    pc_run run;
    pc_run_pred pa = predict(a, cal, &run), pb = predict(b, cal, NULL);
    close_rel(pa.part[PC_STEP_MEMORY], 4 * pb.part[PC_STEP_MEMORY], 1e-9, "x tp without SP");
    /* and by hand: mem_elems x D elements per token per layer, bf16, over HBM */
    double elems = -1;
    for (int i = 0; i < pc_calib_coef_count(); i++)
        if (!strcmp(pc_calib_coef_name(i), "train.mem_elems")) elems = pc_calib_get(cal, i);
    assert_true(elems > 0);
    double want = 2 * elems * 2048 * 16 * 2048 * 2 / 4 / pc_run_chip(&run)->hbm_bw;
    close_rel(pb.part[PC_STEP_MEMORY], want, 1e-9, "element-wise traffic");
    free(a), free(b);
    pc_calib_free(cal);
}

static void test_ideal_is_a_lower_bound(void **state) {
    (void)state;
    pc_calib *cal;
    assert_int_equal(pc_calib_builtin(&cal, NULL), PC_OK);
    const char *chips[] = {"a100-80gb", "h100-sxm", "b200", "gb200"};
    for (int c = 0; c < 4; c++) {
        char *j = run_json(MODEL(16), chips[c], 16, "nemo", 2, 2, 1, 4, 1, 1, 1, 4, 1, "selective");
        pc_run_pred p = predict(j, cal, NULL), id = predict(j, NULL, NULL);
        assert_true(id.predicted <= p.predicted);
        close_rel(p.ideal, id.predicted, 1e-12, "ideal field = prediction under none");
        free(j);
    }
    pc_calib_free(cal);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_sum_to_step),
        cmocka_unit_test(test_bubble_closed_forms),
        cmocka_unit_test(test_uneven_stages),
        cmocka_unit_test(test_tp_allreduce_by_hand),
        cmocka_unit_test(test_dcn_by_hand),
        cmocka_unit_test(test_fsdp_by_hand),
        cmocka_unit_test(test_ep_alltoall_by_hand),
        cmocka_unit_test(test_memory_replicated_without_sp),
        cmocka_unit_test(test_ideal_is_a_lower_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
