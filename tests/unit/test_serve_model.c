/*
 * The calibrated serving model (src/analytic/serve_model.c): each term of an
 * engine step against a value derived by hand on a tiny hand-built run and
 * chip (2 layers, d_model 64, 4 query / 2 KV heads of 16, d_ff 128, vocab
 * 100), the batch search against a brute-force scan, and runs the model
 * cannot express.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analytic/calib_internal.h"

static const double k_prior[PC_COEF_COUNT] = {
#define X(id, name, ideal, prior, lo, hi, sigma, doc) prior,
#include "analytic/calib_coefs.h"
#undef X
};

static void check_rel_at(double actual, double expected, double tol, const char *what, int line) {
    double err = fabs(actual - expected) / (expected != 0 ? fabs(expected) : 1);
    if (!(err <= tol)) {
        print_error("line %d: %s: got %.10g, expected %.10g (rel. error %.3g > %.3g)\n", line, what,
                    actual, expected, err, tol);
        fail();
    }
}
#define check_rel(a, e, tol, what) check_rel_at((a), (e), (tol), (what), __LINE__)

/* The hand-derived numbers of the tiny model (bf16):
 *   attention 2 x 2 D (N + K) H = 2 x 2 x 64 x 6 x 16 = 24576
 *   MLP       2 x 3 D F          = 2 x 3 x 64 x 128   = 49152
 *   embedding + unembedding 2 x 100 x 64 = 12800; norms 2 x 2 x 64 + 64 = 320
 *   KV per token 2 L K H x 2 B = 2 x 2 x 2 x 16 x 2 = 256 B */
#define TINY_BLOCKS 73728.0
#define TINY_BF16 13120.0
#define TINY_KV_TOK 256.0
/* workspace: 2 GB reserve + 8192 tokens x 12 D x 2 B */
#define TINY_WS (2e9 + 8192.0 * 12 * 64 * 2)

static pc_chip tiny_chip(void) {
    pc_chip c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tiny");
    c.kind = PC_CHIP_GPU;
    c.flops[PC_PREC_BF16] = 1e14;
    c.flops[PC_PREC_FP8] = 2e14;
    c.hbm_bytes = 10e9;
    c.hbm_bw = 1e12;
    c.nvlink_bw = 1e11;
    c.nvlink_domain = 8;
    c.coll_latency = 1e-6;
    return c;
}

static pc_run tiny_run(void) {
    pc_run r;
    pc_run_serve_init(&r);
    snprintf(r.id, sizeof r.id, "tiny");
    pc_tfm_cfg *m = &r.model;
    snprintf(m->name, sizeof m->name, "tiny");
    m->layers = 2, m->d_model = 64, m->heads = 4, m->kv_heads = 2, m->head_dim = 16;
    m->d_ff = 128, m->vocab = 100, m->gated = 1;
    pc_error e;
    assert_int_equal(pc_tfm_check(m, &e), PC_OK);
    r.input_len = 100;
    r.output_len = 50;
    r.output_tokens_per_s = 1000;
    return r;
}

/* A calibration at the priors (the test's pc_calib_c reads c[]). */
static pc_calib prior_calib(void) {
    pc_calib c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < PC_COEF_COUNT; i++) c.c[i] = k_prior[i];
    return c;
}

static void test_weight_bytes(void **state) {
    (void)state;
    pc_chip chip = tiny_chip();
    pc_run r = tiny_run();
    pc_serve_detail d;
    pc_error e;
    assert_int_equal(pc_serve_explain(&r, &chip, NULL, 1, &d, &e), PC_OK);
    check_rel(d.weight_bytes, (TINY_BLOCKS + TINY_BF16) * 2, 1e-12, "bf16 weights, tp 1");
    r.tp = r.chips = 2; /* everything split over tp */
    assert_int_equal(pc_serve_explain(&r, &chip, NULL, 1, &d, &e), PC_OK);
    check_rel(d.weight_bytes, (TINY_BLOCKS + TINY_BF16) * 2 / 2, 1e-12, "bf16 weights, tp 2");
    /* nvfp4: 0.5 B + one fp8 scale per 16 weights; embeddings, norms stay bf16 */
    r.tp = r.chips = 1;
    r.weight_prec = PC_PREC_FP4;
    r.prec = PC_PREC_BF16;
    assert_int_equal(pc_serve_explain(&r, &chip, NULL, 1, &d, &e), PC_OK);
    check_rel(d.weight_bytes, TINY_BLOCKS * (0.5 + 1.0 / 16) + TINY_BF16 * 2, 1e-12, "nvfp4 weights");
    assert_int_equal(d.kv_prec, PC_PREC_BF16); /* KV not stated, fp4 checkpoint: 16-bit cache */
    r.weight_prec = PC_PREC_FP8;
    assert_int_equal(pc_serve_explain(&r, &chip, NULL, 1, &d, &e), PC_OK);
    check_rel(d.weight_bytes, TINY_BLOCKS * 1 + TINY_BF16 * 2, 1e-12, "fp8 weights");
    assert_int_equal(d.kv_prec, PC_PREC_FP8); /* 8-bit checkpoint: fp8 cache */
}

static void test_kv_capacity(void **state) {
    (void)state;
    pc_chip chip = tiny_chip();
    pc_run r = tiny_run();
    pc_calib cal = prior_calib();
    cal.c[PC_COEF_SERVE_KV_FRAC] = 0.5;
    pc_serve_detail d;
    pc_error e;
    assert_int_equal(pc_serve_explain(&r, &chip, &cal, 1, &d, &e), PC_OK);
    double w = (TINY_BLOCKS + TINY_BF16) * 2;
    double budget = 0.5 * (10e9 - w - TINY_WS);
    check_rel(d.workspace_bytes, TINY_WS, 1e-12, "workspace");
    check_rel(d.kv_budget, budget, 1e-12, "KV budget = frac x (HBM - weights - workspace)");
    check_rel(d.kv_bytes_seq, 150 * TINY_KV_TOK, 1e-12, "KV of one 100 + 50 token sequence");
    check_rel(d.max_batch_kv, floor(budget / (150 * TINY_KV_TOK)), 1e-12, "sequences that fit");
    /* the engine's batch cap (4096) and token cap (32768 / (1 + 100/50)) bind here */
    check_rel(d.max_batch, fmin(PC_SERVE_MAX_BATCH, floor(PC_SERVE_MAX_TOKENS / 3.0)), 1e-12,
              "max batch");
    /* a small HBM: the KV cache binds */
    chip.hbm_bytes = w + TINY_WS + 2 * 100 * 150 * TINY_KV_TOK + 1;
    assert_int_equal(pc_serve_explain(&r, &chip, &cal, 1, &d, &e), PC_OK);
    check_rel(d.max_batch, 100, 1e-12, "KV-bound max batch");
    /* tp 4 > 2 KV heads: each GPU keeps one KV head, a sequence is split 2 ways */
    r.tp = r.chips = 4;
    chip.hbm_bytes = 10e9;
    assert_int_equal(pc_serve_explain(&r, &chip, &cal, 1, &d, &e), PC_OK);
    check_rel(d.max_batch_kv, floor(0.5 * (10e9 - w / 4 - TINY_WS) / (150 * TINY_KV_TOK / 2)),
              1e-12, "KV heads replicated beyond tp = K");
    /* a 50-token sliding window on every other layer: that layer keeps 50 tokens */
    r = tiny_run();
    r.model.sliding_window = 50;
    r.model.global_every = 2;
    assert_int_equal(pc_tfm_check(&r.model, &e), PC_OK);
    assert_int_equal(pc_serve_explain(&r, &chip, &cal, 1, &d, &e), PC_OK);
    check_rel(d.kv_bytes_seq, TINY_KV_TOK / 2 * (150 + 50), 1e-12, "windowed KV of a sequence");
}

static void test_decode_memory_time(void **state) {
    (void)state;
    pc_chip chip = tiny_chip();
    pc_run r = tiny_run();
    pc_calib cal = prior_calib();
    const double eff = cal.c[PC_COEF_SERVE_HBM_EFF], B = 64;
    pc_serve_detail d;
    pc_error e;
    assert_int_equal(pc_serve_explain(&r, &chip, &cal, B, &d, &e), PC_OK);
    double bw = 1e12 * eff;
    check_rel(d.t_weights, (TINY_BLOCKS + TINY_BF16) * 2 / bw, 1e-12, "weights read once a step");
    /* KV: every sequence at context 100 + 50/2, plus the prefill's writes (B x 100/50) */
    check_rel(d.t_kv, (B * 125 + B * 2) * TINY_KV_TOK / bw, 1e-12, "KV read");
    /* activations: T = B (1 + 100/50) tokens x L x (8 D + 4 (N + K) H + 6 F) x 2 B */
    check_rel(d.t_act, 3 * B * 2 * (8 * 64 + 4 * 6 * 16 + 6 * 128) * 2 / bw, 1e-12, "activations");
    check_rel(d.t_memory, d.t_weights + d.t_kv + d.t_act, 1e-12, "memory total");
    assert_true(d.t_mm >= d.t_weights && d.t_attn >= d.t_kv);
    check_rel(d.t_gpu, d.t_mm + d.t_attn + d.t_act + d.t_comm + d.t_overhead, 1e-12, "GPU step");
    check_rel(d.t_overhead, cal.c[PC_COEF_SERVE_OVERHEAD], 1e-12, "overhead");
    check_rel(d.t_host, cal.c[PC_COEF_SERVE_SEQ_OVERHEAD] * B, 1e-12, "host work");
    check_rel(d.t_step, fmax(d.t_gpu, d.t_host), 1e-12, "step");
    check_rel(d.tokens_per_s, B / d.t_step, 1e-12, "tokens/s = replicas x B / step");
    /* compute: 2 x matmul weights x T + logits of B + attention (hand count) */
    double mm = 3 * B * 2 * TINY_BLOCKS + B * 2 * 100 * 64;
    double att = B * 4 * 2 * 4 * 16 * 125 + B / 50 * 4 * 2 * 4 * 16 * 100 * 100 / 2;
    check_rel(d.flops, mm + att, 1e-12, "FLOPs");
}

static void test_moe_distinct_experts(void **state) {
    (void)state;
    pc_chip chip = tiny_chip();
    pc_run r = tiny_run();
    r.model.experts = 8;
    r.model.experts_per_token = 2;
    r.model.d_ff_expert = 32;
    pc_error e;
    assert_int_equal(pc_tfm_check(&r.model, &e), PC_OK);
    pc_serve_detail d;
    for (double B = 1; B <= 16; B *= 2) {
        assert_int_equal(pc_serve_explain(&r, &chip, NULL, B, &d, &e), PC_OK);
        double T = 3 * B; /* B decode + B x 100/50 prefill tokens */
        /* P(an expert is untouched) = (1 - k/E)^T */
        check_rel(d.experts_touched, 8 * (1 - pow(0.75, T)), 1e-12, "E (1 - (1 - k/E)^T)");
        assert_true(d.experts_touched >= 2 && d.experts_touched <= 8);
        /* the expert bytes read scale with the experts touched */
        double one = 3.0 * 64 * 32 * 2 * 2; /* one expert, two layers, bf16 */
        double fixed = d.weight_bytes - 8 * one;
        check_rel(d.t_weights * 1e12, fixed + d.experts_touched * one, 1e-9, "weights read");
    }
}

static void test_tp_allreduce(void **state) {
    (void)state;
    pc_chip chip = tiny_chip();
    pc_run r = tiny_run();
    r.tp = r.chips = 2;
    pc_calib cal = prior_calib();
    const double bw = cal.c[PC_COEF_SERVE_BW_EFF], B = 32;
    pc_serve_detail d;
    pc_error e;
    assert_int_equal(pc_serve_explain(&r, &chip, &cal, B, &d, &e), PC_OK);
    /* 2 ring all-reduces per layer of [T, D] bf16: 2 (n-1)/n V / (W x eff) + latency */
    double V = 3 * B * 64 * 2;
    check_rel(d.t_comm, 2 * 2 * (2 * 0.5 * V / (1e11 * bw) + 1e-6), 1e-12, "TP all-reduces");
    /* attention DP over the same 2 GPUs (MoE): no all-reduce, an all-to-all per MoE layer */
    r.model.experts = 8;
    r.model.experts_per_token = 2;
    r.model.d_ff_expert = 32;
    r.attention_dp = 1;
    assert_int_equal(pc_tfm_check(&r.model, &e), PC_OK);
    assert_int_equal(pc_serve_explain(&r, &chip, &cal, B, &d, &e), PC_OK);
    double a2a = 3 * B / 2 * 2 * 64 * 2 * 0.5; /* T/tp tokens x k copies x D x 2 B x (ep-1)/ep */
    check_rel(d.t_comm, 2 * 2 * (a2a / (1e11 * bw) + 1e-6), 1e-12, "expert dispatch + combine");
    assert_int_equal(d.ep, 2);
}

static void test_ttft_tpot(void **state) {
    (void)state;
    pc_chip chip = tiny_chip();
    pc_run r = tiny_run();
    pc_serve_detail d;
    pc_error e;
    assert_int_equal(pc_serve_explain(&r, &chip, NULL, 10, &d, &e), PC_OK);
    check_rel(d.tpot_s, d.t_step, 1e-12, "TPOT = step");
    /* 10 sequences get 10 x 100/50 = 20 prompt tokens a step: a 100-token prompt needs 5 */
    check_rel(d.ttft_s, 5 * d.t_step, 1e-12, "TTFT = out/B steps");
    assert_int_equal(pc_serve_explain(&r, &chip, NULL, 200, &d, &e), PC_OK);
    check_rel(d.ttft_s, d.t_step, 1e-12, "TTFT = one step once B >= out");
}

static void test_best_batch_is_argmax(void **state) {
    (void)state;
    pc_chip chip = tiny_chip();
    pc_run r = tiny_run();
    pc_calib cal = prior_calib();
    /* room for ~450 sequences, so the scan is short */
    chip.hbm_bytes = 2.03e9;
    pc_serve_detail d, best;
    pc_error e;
    for (int moe = 0; moe < 3; moe++) {
        if (moe == 2) cal.c[PC_COEF_SERVE_SEQ_OVERHEAD] = 0; /* no host plateau: GPU-bound */
        if (moe == 1) { /* saturating expert reads make tokens/s less regular */
            r.model.experts = 64, r.model.experts_per_token = 2, r.model.d_ff_expert = 1024;
            assert_int_equal(pc_tfm_check(&r.model, &e), PC_OK);
            chip.hbm_bytes = 2.07e9;
        }
        assert_int_equal(pc_serve_explain(&r, &chip, &cal, 0, &best, &e), PC_OK);
        assert_true(best.max_batch > 64 && best.max_batch < 2000);
        double arg = 0, top = -1, v[2048];
        for (int b = 1; b <= (int)best.max_batch; b++) {
            assert_int_equal(pc_serve_explain(&r, &chip, &cal, b, &d, &e), PC_OK);
            v[b] = d.tokens_per_s;
            if (v[b] > top) top = v[b];
        }
        for (int b = 1; !arg; b++) /* the smallest batch within 1e-9 of the best */
            if (v[b] >= top * (1 - 1e-9)) arg = b;
        check_rel(best.tokens_per_s, top, 1e-9, "best tokens/s");
        check_rel(best.batch, arg, 0, "throughput-optimal batch");
    }
}

static void test_predict_and_unexpressed(void **state) {
    (void)state;
    pc_chip chip = tiny_chip();
    pc_run r = tiny_run();
    pc_calib cal = prior_calib();
    pc_run_pred p;
    pc_error e;
    assert_int_equal(pc_serve_predict(&r, &chip, &cal, &p, &e), PC_OK);
    assert_true(p.expressed);
    assert_int_equal(p.batch_stated, 0);
    assert_int_equal(p.replicas, 1);
    check_rel(p.error, (p.predicted - 1000) / 1000, 1e-12, "error");
    assert_true(p.ideal >= p.predicted); /* the ideal roofline bounds throughput */
    /* a stated concurrency over 2 replicas: half each */
    r.chips = 2;
    r.concurrency = 64;
    assert_int_equal(pc_serve_predict(&r, &chip, &cal, &p, &e), PC_OK);
    assert_int_equal(p.batch_stated, 1);
    assert_int_equal(p.replicas, 2);
    check_rel(p.batch, 32, 0, "batch per replica");
    /* weights larger than HBM: not expressed, with the reason */
    chip.hbm_bytes = 1e9;
    assert_int_equal(pc_serve_predict(&r, &chip, &cal, &p, &e), PC_OK);
    assert_false(p.expressed);
    assert_non_null(strstr(p.why, "do not fit"));
    /* no fp4 peak on the chip */
    chip = tiny_chip();
    r.prec = PC_PREC_FP4;
    assert_int_equal(pc_serve_predict(&r, &chip, &cal, &p, &e), PC_OK);
    assert_false(p.expressed);
    assert_non_null(strstr(p.why, "fp4"));
    /* bad arguments fail */
    r = tiny_run();
    r.output_len = 0;
    assert_int_equal(pc_serve_predict(&r, &chip, &cal, &p, &e), PC_ERR_ARG);
    r = tiny_run();
    r.kind = PC_RUN_TRAIN;
    assert_int_equal(pc_serve_predict(&r, &chip, &cal, &p, &e), PC_ERR_ARG);
}

static void test_builtin_chips_have_fp4(void **state) {
    (void)state;
    /* the B200 / GB200 runs are nvfp4: the built-in chips carry an fp4 peak */
    for (int i = 0; i < pc_chip_builtin_count(); i++) {
        const pc_chip *c = pc_chip_builtin(i);
        if (!strcmp(c->name, "b200") || !strcmp(c->name, "gb200-nvl72"))
            check_rel(pc_chip_flops(c, PC_PREC_FP4), 2 * pc_chip_flops(c, PC_PREC_FP8), 1e-12,
                      "fp4 = 2 x fp8");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_bytes),
        cmocka_unit_test(test_kv_capacity),
        cmocka_unit_test(test_decode_memory_time),
        cmocka_unit_test(test_moe_distinct_experts),
        cmocka_unit_test(test_tp_allreduce),
        cmocka_unit_test(test_ttft_tpot),
        cmocka_unit_test(test_best_batch_is_argmax),
        cmocka_unit_test(test_predict_and_unexpressed),
        cmocka_unit_test(test_builtin_chips_have_fp4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
