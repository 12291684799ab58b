/*
 * What GPU dumps need from the HLO cost (perfcast/hlo_cost.h): cuBLAS / cuDNN
 * custom-calls, tuple outputs, per-loop trip counts, collectives, FFT and the
 * attribute readers behind them (hlo/cost_attr.h). Every expected number is
 * worked out by hand in the comments; tests/scripts/test_roofline_gpu.py
 * recomputes the GPU dump modules' FLOPs independently with regexes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlo/cost_attr.h"
#include "hlo/text.h"
#include "perfcast/hlo_cost.h"

static pc_hlo_cost *cost_of(const char *text, const pc_hlo_cost_opts *o) {
    pc_hlo_cost *c = NULL;
    pc_error e;
    pc_error_clear(&e);
    pc_status st = pc_hlo_cost_text(text, strlen(text), "t.hlo", o, &c, &e);
    if (st != PC_OK) print_message("error: %s\n", e.msg);
    assert_int_equal(st, PC_OK);
    return c;
}

static const pc_hlo_op_cost *row(const pc_hlo_cost *c, const char *name) {
    for (int64_t i = 0; i < c->n_ops; i++)
        if (strcmp(c->ops[i].name, name) == 0) return &c->ops[i];
    print_message("no row %s\n", name);
    fail();
    return NULL;
}

/* Input gradient of a 3x3 stride-2 convolution f32[2,16,16,16] -> f32[2,8,8,32]: the
 * convolution's output is operand 0, dy (2*8*8*32 = 4096 elements), kernel 3x3x16x32 (16 input
 * features): FLOPs = 2 * 4096 * 3*3*16 = 1179648. Filter gradient (kernel = the result): the
 * same. Bytes of the input gradient: read dy + kernel, written the result f32[2,16,16,16]
 * (the u8[64] workspace is not counted). */
static void test_cudnn_backward(void **state) {
    (void)state;
    pc_hlo_cost *c =
        cost_of("ENTRY e {\n"
                "  dy = f32[2,8,8,32]{3,2,1,0} parameter(0)\n"
                "  w = f32[3,3,16,32]{3,2,1,0} parameter(1)\n"
                "  x = f32[2,16,16,16]{3,2,1,0} parameter(2)\n"
                "  dx = (f32[2,16,16,16]{3,2,1,0}, u8[64]{0}) custom-call(dy, w), window={size=3x3 "
                "stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f, "
                "custom_call_target=\"__cudnn$convBackwardInput\"\n"
                "  dw = (f32[3,3,16,32]{3,2,1,0}, u8[0]{0}) custom-call(x, dy), window={size=3x3 "
                "stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f, "
                "custom_call_target=\"__cudnn$convBackwardFilter\"\n"
                "  ROOT t = (f32[2,16,16,16]{3,2,1,0}, u8[64]{0}) tuple(dx)\n"
                "}\n",
                NULL);
    /* dy has 2*8*8*32 = 4096 elements: 2 * 4096 * 144 = 1179648 */
    assert_true(row(c, "dx")->flops == 1179648.0);
    assert_true(row(c, "dw")->flops == 1179648.0);
    assert_true(row(c, "dx")->bytes_read == 4096 * 4 + 3 * 3 * 16 * 32 * 4);
    assert_true(row(c, "dx")->bytes_written == 2 * 16 * 16 * 16 * 4);
    assert_true(row(c, "dx")->matrix);
    assert_int_equal(c->library_calls, 2);
    assert_int_equal(c->unknown_ops, 0);
    pc_hlo_cost_free(c);
}

/* A GEMM without dimension numbers: the lhs's last dim (2*4*8*16 = 1024), counted as guessed;
 * a custom-call to something else: bytes only, an op without a rule. */
static void test_gemm_guess_and_other_calls(void **state) {
    (void)state;
    pc_hlo_cost *c =
        cost_of("ENTRY e {\n"
                "  a = bf16[4,16] parameter(0)\n"
                "  b = bf16[16,8] parameter(1)\n"
                "  g = bf16[4,8] custom-call(a, b), custom_call_target=\"__cublas$gemm\"\n"
                "  ROOT o = bf16[4,8] custom-call(g), custom_call_target=\"my_kernel\"\n"
                "}\n",
                NULL);
    assert_true(row(c, "g")->flops == 1024.0);
    assert_int_equal(c->dots_guessed, 1);
    assert_true(row(c, "o")->flops == 0 && row(c, "o")->bytes_read == 64);
    assert_int_equal(c->unknown_ops, 1);
    pc_hlo_cost_free(c);
}

/* Nested counted loops: the outer one runs i = 0, 2, 4, ..., 8 (i < 9, step 2: 5 trips) and the
 * inner one j = 3..9 (j <= 9 written as 9 >= j: 7 trips); the inner body's exp on f32[8] is 8
 * FLOPs, so 5 * 7 * 8 = 280 exp FLOPs (plus the counters' adds and compares). */
static const char *nested =
    "inner_c {\n  p = (s32[], f32[8]) parameter(0)\n  j = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(9)\n  ROOT ge = pred[] compare(n, j), direction=GE\n}\n"
    "inner_b {\n  p = (s32[], f32[8]) parameter(0)\n  j = s32[] get-tuple-element(p), index=0\n"
    "  one = s32[] constant(1)\n  k = s32[] add(one, j)\n"
    "  x = f32[8] get-tuple-element(p), index=1\n  y = f32[8] exponential(x)\n"
    "  ROOT t = (s32[], f32[8]) tuple(k, y)\n}\n"
    "outer_c {\n  p = (s32[], f32[8]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(9)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
    "outer_b {\n  p = (s32[], f32[8]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
    "  two = s32[] constant(2)\n  k = s32[] add(i, two)\n"
    "  x = f32[8] get-tuple-element(p), index=1\n  three = s32[] constant(3)\n"
    "  init = (s32[], f32[8]) tuple(three, x)\n"
    "  w = (s32[], f32[8]) while(init), condition=inner_c, body=inner_b\n"
    "  y = f32[8] get-tuple-element(w), index=1\n"
    "  ROOT t = (s32[], f32[8]) tuple(k, y)\n}\n"
    "ENTRY e {\n  x = f32[8] parameter(0)\n  zero = s32[] constant(0)\n"
    "  init = (s32[], f32[8]) tuple(zero, x)\n"
    "  ROOT w = (s32[], f32[8]) while(init), condition=outer_c, body=outer_b\n}\n";

static void test_nested_counted_loops(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of(nested, NULL);
    /* per inner trip: ge 1 + add 1 + exp 8 = 10; per outer trip: 7 * 10 + lt 1 + add 1 = 72 */
    assert_true(row(c, "w")->flops == 5 * 72.0);
    assert_true(row(c, "w")->transcendentals == 5 * 7 * 8.0);
    assert_int_equal(c->loops_counted, 2);
    assert_int_equal(c->loops_known, 0);
    assert_int_equal(c->loops_fallback, 0);
    pc_hlo_cost_free(c);
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    o.loop_ops = 1;
    c = cost_of(nested, &o);
    assert_true(row(c, "w/w/y")->flops == 5 * 7 * 8.0); /* the body's rows, x the trips */
    assert_true(row(c, "w/w/y")->trips == 35);
    assert_true(row(c, "w/lt")->flops == 5);
    assert_true(c->flops == 5 * 72.0);
    assert_int_equal(c->loops_counted, 2);
    pc_hlo_cost_free(c);
}

/* known_trip_count wins over the loop's own bound (bare and quoted JSON); a loop with neither
 * (the bound is a parameter) counts while_trips. exp on f32[8] = 8 FLOPs a trip, the
 * condition's compare 1. */
static void test_known_trip_count(void **state) {
    (void)state;
    static const char *fmt =
        "c {\n  p = (s32[], f32[8]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
        "  n = s32[] get-tuple-element(p), index=0\n  ROOT lt = pred[] compare(i, n), "
        "direction=LT\n}\n"
        "b {\n  p = (s32[], f32[8]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
        "  x = f32[8] get-tuple-element(p), index=1\n  y = f32[8] exponential(x)\n"
        "  ROOT t = (s32[], f32[8]) tuple(i, y)\n}\n"
        "ENTRY e {\n  a = (s32[], f32[8]) parameter(0)\n"
        "  w1 = (s32[], f32[8]) while(a), condition=c, body=b, "
        "backend_config={\"known_trip_count\":{\"n\":\"12\"}}\n"
        "  w2 = (s32[], f32[8]) while(a), condition=c, body=b, "
        "backend_config=\"{\\\"known_trip_count\\\":{\\\"n\\\":\\\"3\\\"}}\"\n"
        "  ROOT w3 = (s32[], f32[8]) while(a), condition=c, body=b\n}\n";
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    o.while_trips = 5;
    pc_hlo_cost *c = cost_of(fmt, &o);
    assert_true(row(c, "w1")->flops == 12 * 9.0);
    assert_true(row(c, "w2")->flops == 3 * 9.0);
    assert_true(row(c, "w3")->flops == 5 * 9.0);
    assert_int_equal(c->loops_known, 2);
    assert_int_equal(c->loops_fallback, 1);
    pc_hlo_cost_free(c);
}

/* Collectives: no HBM bytes; V and groups per kind; inside a loop the count is the trips. */
static void test_collectives(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of(
        "add { x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y) }\n"
        "ENTRY e {\n"
        "  x = f32[256] parameter(0)\n"
        "  ar = f32[256] all-reduce(x), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=add\n"
        "  ags = (f32[256], f32[1024]) all-gather-start(ar), replica_groups={{0,1,2,3}}, "
        "dimensions={0}\n"
        "  agd = f32[1024] all-gather-done(ags)\n"
        "  ROOT rs = f32[64] reduce-scatter(agd), replica_groups={}, dimensions={0}, to_apply=add\n"
        "}\n",
        NULL);
    assert_int_equal(c->n_collectives, 3);
    const pc_hlo_collective *ar = &c->collectives[0], *ag = &c->collectives[1];
    assert_int_equal(ar->kind, PC_HLO_COLL_ALL_REDUCE);
    assert_true(ar->bytes == 1024);
    /* iota [4,2] transposed to [2,4], rows: {0,2,4,6}, {1,3,5,7} */
    assert_int_equal(ar->group_size, 4);
    assert_int_equal(ar->n_groups, 2);
    assert_int_equal(ar->group[0], 0);
    assert_int_equal(ar->group[1], 2);
    assert_int_equal(ar->group[3], 6);
    assert_int_equal(ag->kind, PC_HLO_COLL_ALL_GATHER);
    assert_true(ag->bytes == 4096);                    /* the gathered f32[1024] */
    assert_int_equal(c->collectives[2].group_size, 0); /* {}: all devices */
    assert_true(row(c, "ar")->bytes_read == 0 && row(c, "ar")->comm_bytes == 1024);
    assert_true(c->comm_bytes == 1024 + 4096 + 4096);
    assert_int_equal(c->n_ops, 3); /* all-gather-done is free */
    assert_int_equal(pc_hlo_coll_parse("all-gather-start"), PC_HLO_COLL_ALL_GATHER);
    assert_int_equal(pc_hlo_coll_parse("all-gatherx"), -1);
    assert_string_equal(pc_hlo_coll_name(PC_HLO_COLL_PERMUTE), "collective-permute");
    pc_hlo_cost_free(c);
}

/* FFT: f32 RFFT of [4,64] -> c64[4,33]: 4 transforms of N = 64: 4 * 2.5 * 64 * 6 = 3840;
 * c64 IFFT of [2,16,16] over {16,16}: 2 transforms of 256: 2 * 5 * 256 * 8 = 20480. A module
 * with nothing to cost: no rows, zero, no error. */
static void test_fft_and_zero(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of("ENTRY e {\n"
                             "  x = f32[4,64] parameter(0)\n"
                             "  r = c64[4,33] fft(x), fft_type=RFFT, fft_length={64}\n"
                             "  z = c64[2,16,16] parameter(1)\n"
                             "  ROOT i = c64[2,16,16] fft(z), fft_type=IFFT, fft_length={16,16}\n"
                             "}\n",
                             NULL);
    assert_true(row(c, "r")->flops == 3840);
    assert_true(row(c, "i")->flops == 20480);
    pc_hlo_cost_free(c);
    c = cost_of("ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT t = (f32[4]) tuple(p)\n}\n", NULL);
    assert_int_equal(c->n_ops, 0);
    assert_true(c->flops == 0 && c->bytes_read == 0 && c->comm_bytes == 0);
    pc_hlo_cost_free(c);
}

/* The attribute readers on malformed values: nothing read, no crash. */
static void test_attr_readers(void **state) {
    (void)state;
    pc_hlo_module **m = NULL;
    int n = 0;
    pc_error e;
    const char *t = "ENTRY e {\n  x = f32[8] parameter(0)\n"
                    "  a = f32[8] all-reduce(x), replica_groups=[2]<=[8]\n"
                    "  b = f32[8] all-reduce(x), replica_groups={{0,x}}\n"
                    "  c = f32[8] custom-call(x), custom_call_target=\"__cublas$gemm\", "
                    "backend_config={\"gemm_backend_config\":{\"dot_dimension_numbers\":{}}}\n"
                    "  ROOT w = f32[8] fft(x), fft_type=NOPE, fft_length={8}\n}\n";
    assert_int_equal(pc_hlo_parse_text(t, strlen(t), "t", &m, &n, NULL, &e), PC_OK);
    const pc_hlo_computation *comp = &m[0]->comp[0];
    pc_hlo_groups g;
    assert_int_equal(pc_hlo_replica_groups(&comp->inst[1], &g), 0);
    assert_int_equal(g.known, 0);
    assert_int_equal(pc_hlo_replica_groups(&comp->inst[2], &g), 0);
    assert_int_equal(g.known, 0);
    int64_t d[4];
    assert_int_equal(pc_hlo_gemm_lhs_contracting(&comp->inst[3], d, 4), -1);
    double len;
    assert_int_equal(pc_hlo_fft(&comp->inst[4], &len), -1);
    pc_hlo_modules_free(m, n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cudnn_backward),
        cmocka_unit_test(test_gemm_guess_and_other_calls),
        cmocka_unit_test(test_nested_counted_loops),
        cmocka_unit_test(test_known_trip_count),
        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_fft_and_zero),
        cmocka_unit_test(test_attr_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
