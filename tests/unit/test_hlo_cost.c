/*
 * FLOPs and bytes of HLO instructions (perfcast/hlo_cost.h), on small HLO
 * texts whose numbers are worked out by hand in the comments, and on two
 * openxla fixtures ($PC_SHARED_DIR/fixtures/hlo; without them those tests
 * are skipped and the program exits 77). An independent regex-based check
 * of every dot of graphsage_tf.hlo is in tests/scripts/test_roofline_hlo.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perfcast/hlo_cost.h"
#include "fixtures.h"

static pc_hlo_cost *cost_of(const char *text, const pc_hlo_cost_opts *o) {
    pc_hlo_cost *c = NULL;
    pc_error e;
    pc_error_clear(&e);
    pc_status st = pc_hlo_cost_text(text, strlen(text), "t.hlo", o, &c, &e);
    if (st != PC_OK) print_message("error: %s\n", e.msg);
    assert_int_equal(st, PC_OK);
    assert_non_null(c);
    return c;
}

static const pc_hlo_op_cost *row(const pc_hlo_cost *c, const char *name) {
    for (int64_t i = 0; i < c->n_ops; i++)
        if (strcmp(c->ops[i].name, name) == 0) return &c->ops[i];
    print_message("no row %s\n", name);
    fail();
    return NULL;
}

#define CHECK_ROW(r, f, rd, wr)                     \
    do {                                            \
        assert_true((r)->flops == (double)(f));     \
        assert_true((r)->bytes_read == (double)(rd));  \
        assert_true((r)->bytes_written == (double)(wr)); \
    } while (0)

/* Batched dot [4,16,32] x [4,32,8] -> [4,16,8], contracting 32:
 * FLOPs 2*4*16*8*32 = 32768; read (4*16*32 + 4*32*8)*2 B = 6144; write 4*16*8*2 = 1024. */
static void test_dot_batch(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of("ENTRY e {\n"
                             "  a = bf16[4,16,32] parameter(0)\n"
                             "  b = bf16[4,32,8] parameter(1)\n"
                             "  ROOT d = bf16[4,16,8] dot(a, b), lhs_batch_dims={0}, "
                             "rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
                             "}\n",
                             NULL);
    assert_int_equal(c->n_ops, 1); /* the parameters cost nothing */
    assert_int_equal(c->free_ops, 2);
    const pc_hlo_op_cost *d = row(c, "d");
    CHECK_ROW(d, 32768, 6144, 1024);
    assert_true(d->matrix);
    assert_int_equal(d->compute_type, PC_HLO_TYPE_BF16);
    assert_string_equal(d->opcode, "dot");
    assert_int_equal(c->dots_guessed, 0);
    assert_true(c->flops == 32768 && c->bytes_read == 6144 && c->bytes_written == 1024);
    pc_hlo_cost_free(c);
}

/* Contracting two dims: [8,3,5] x [3,5,7], lhs {1,2} rhs {0,1} -> [8,7]: 2*56*15 = 1680. A
 * dot without dimension numbers contracts lhs's last dim (and is counted). */
static void test_dot_two_contracting_and_guess(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of("ENTRY e {\n"
                             "  a = f32[8,3,5] parameter(0)\n"
                             "  b = f32[3,5,7] parameter(1)\n"
                             "  d = f32[8,7] dot(a, b), lhs_contracting_dims={1,2}, "
                             "rhs_contracting_dims={0,1}\n"
                             "  x = f32[8,5] parameter(2)\n"
                             "  y = f32[5,2] parameter(3)\n"
                             "  ROOT g = f32[8,2] dot(x, y)\n"
                             "}\n",
                             NULL);
    assert_true(row(c, "d")->flops == 1680);
    assert_true(row(c, "g")->flops == 2 * 16 * 5);
    assert_int_equal(c->dots_guessed, 1);
    pc_hlo_cost_free(c);
}

/* Depthwise-style grouped convolution: input [1,8,8,16] (b01f), kernel [3,3,4,16] (01io),
 * 4 groups, output [1,8,8,16]: 2 * 1024 outputs * 9 taps * 4 input features per group =
 * 73728 FLOPs; read (1024 + 576)*4 = 6400 B; write 1024*4 = 4096 B. */
static void test_conv_groups(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of("ENTRY e {\n"
                             "  x = f32[1,8,8,16] parameter(0)\n"
                             "  k = f32[3,3,4,16] parameter(1)\n"
                             "  ROOT y = f32[1,8,8,16] convolution(x, k), window={size=3x3 "
                             "pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4\n"
                             "}\n",
                             NULL);
    const pc_hlo_op_cost *y = row(c, "y");
    CHECK_ROW(y, 73728, 6400, 4096);
    assert_true(y->matrix);
    assert_int_equal(y->compute_type, PC_HLO_TYPE_F32);
    pc_hlo_cost_free(c);
}

/* A fusion is one row: multiply + exp + add over [8,16] = 3*128 = 384 FLOPs (128 of them
 * transcendental); bytes only at the boundary: two f32[8,16] in (1024 B), one out (512 B). */
static void test_fusion_unit(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of("f {\n"
                             "  p0 = f32[8,16] parameter(0)\n"
                             "  p1 = f32[8,16] parameter(1)\n"
                             "  m = f32[8,16] multiply(p0, p1)\n"
                             "  x = f32[8,16] exponential(m)\n"
                             "  ROOT r = f32[8,16] add(x, p0)\n"
                             "}\n"
                             "ENTRY e {\n"
                             "  a = f32[8,16] parameter(0)\n"
                             "  b = f32[8,16] parameter(1)\n"
                             "  ROOT fu = f32[8,16] fusion(a, b), kind=kLoop, calls=f\n"
                             "}\n",
                             NULL);
    assert_int_equal(c->n_ops, 1);
    const pc_hlo_op_cost *fu = row(c, "fu");
    CHECK_ROW(fu, 384, 1024, 512);
    assert_true(fu->transcendentals == 128);
    assert_false(fu->matrix);
    pc_hlo_cost_free(c);
}

/* A multi-output fusion containing a dot: FLOPs of the dot (2*4*4*8 = 256) plus the add
 * (16); the tuple result's bytes are its elements': f32[4,4] + f32[4,4] = 128 B; the
 * get-tuple-elements cost nothing. */
static void test_fusion_tuple_and_dot(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of("f {\n"
                             "  p0 = bf16[4,8] parameter(0)\n"
                             "  p1 = bf16[8,4] parameter(1)\n"
                             "  d = f32[4,4] dot(p0, p1), lhs_contracting_dims={1}, "
                             "rhs_contracting_dims={0}\n"
                             "  s = f32[4,4] add(d, d)\n"
                             "  ROOT t = (f32[4,4], f32[4,4]) tuple(d, s)\n"
                             "}\n"
                             "ENTRY e {\n"
                             "  a = bf16[4,8] parameter(0)\n"
                             "  b = bf16[8,4] parameter(1)\n"
                             "  fu = (f32[4,4], f32[4,4]) fusion(a, b), kind=kOutput, calls=f\n"
                             "  ROOT g = f32[4,4] get-tuple-element(fu), index=1\n"
                             "}\n",
                             NULL);
    assert_int_equal(c->n_ops, 1);
    const pc_hlo_op_cost *fu = row(c, "fu");
    CHECK_ROW(fu, 256 + 16, 64 + 64, 128);
    assert_true(fu->matrix);
    assert_int_equal(fu->compute_type, PC_HLO_TYPE_BF16); /* the dot's lhs, not the f32 result */
    assert_int_equal(fu->element_type, PC_HLO_TYPE_TUPLE);
    assert_int_equal(c->unsized, 0);
    pc_hlo_cost_free(c);
}

/* reduce [32,64] -> [32]: 2048 FLOPs (one per input element); reads 2048*4 + the 4-byte init;
 * writes 32*4. Elementwise add [10,10]: 100 FLOPs, 800 B in, 400 out. Broadcast [16] ->
 * [8,16]: 0 FLOPs, 64 B in, 512 out. Transpose: 0 FLOPs, bytes both ways. Row-major
 * reshape and bitcast: nothing. */
static void test_reduce_elementwise_broadcast(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of("add {\n"
                             "  x = f32[] parameter(0)\n"
                             "  y = f32[] parameter(1)\n"
                             "  ROOT s = f32[] add(x, y)\n"
                             "}\n"
                             "ENTRY e {\n"
                             "  p = f32[32,64] parameter(0)\n"
                             "  z = f32[] constant(0)\n"
                             "  r = f32[32] reduce(p, z), dimensions={1}, to_apply=add\n"
                             "  q = f32[10,10] parameter(1)\n"
                             "  s = f32[10,10] add(q, q)\n"
                             "  v = f32[16] parameter(2)\n"
                             "  b = f32[8,16] broadcast(v), dimensions={1}\n"
                             "  t = f32[16,8] transpose(b), dimensions={1,0}\n"
                             "  rs = f32[128] reshape(t)\n"
                             "  bc = f32[128] bitcast(rs)\n"
                             "  ROOT o = (f32[32], f32[10,10], f32[128]) tuple(r, s, bc)\n"
                             "}\n",
                             NULL);
    CHECK_ROW(row(c, "r"), 2048, 2048 * 4 + 4, 128);
    CHECK_ROW(row(c, "s"), 100, 800, 400);
    CHECK_ROW(row(c, "b"), 0, 64, 512);
    CHECK_ROW(row(c, "t"), 0, 512, 512);
    assert_int_equal(c->n_ops, 4);
    assert_int_equal(c->instructions, 11);
    assert_int_equal(c->free_ops, 7);
    pc_hlo_cost_free(c);
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    o.keep_free = 1;
    c = cost_of("ENTRY e {\n  ROOT p = s8[4] parameter(0)\n}\n", &o);
    assert_int_equal(c->n_ops, 1);
    CHECK_ROW(row(c, "p"), 0, 0, 0);
    pc_hlo_cost_free(c);
}

/* Slices read only what they keep; gather reads the rows it gathers and the indices. */
static void test_slice_gather(void **state) {
    (void)state;
    pc_hlo_cost *c = cost_of("ENTRY e {\n"
                             "  p = bf16[100,64] parameter(0)\n"
                             "  s = bf16[10,64] slice(p), slice={[0:10], [0:64]}\n"
                             "  i = s32[5] parameter(1)\n"
                             "  ROOT g = bf16[5,64] gather(p, i), offset_dims={1}, "
                             "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                             "slice_sizes={1,64}\n"
                             "}\n",
                             NULL);
    CHECK_ROW(row(c, "s"), 0, 1280, 1280);
    CHECK_ROW(row(c, "g"), 0, 640 + 20, 640);
    pc_hlo_cost_free(c);
}

/* A while loop is one row; its body (one f32[4] add: 4 FLOPs, 32 B in, 16 out) counts
 * once, or while_trips times. */
static void test_while(void **state) {
    (void)state;
    const char *text = "cond {\n"
                       "  p = (s32[], f32[4]) parameter(0)\n"
                       "  ROOT c = pred[] constant(false)\n"
                       "}\n"
                       "body {\n"
                       "  p = (s32[], f32[4]) parameter(0)\n"
                       "  i = s32[] get-tuple-element(p), index=0\n"
                       "  x = f32[4] get-tuple-element(p), index=1\n"
                       "  y = f32[4] add(x, x)\n"
                       "  ROOT t = (s32[], f32[4]) tuple(i, y)\n"
                       "}\n"
                       "ENTRY e {\n"
                       "  a = (s32[], f32[4]) parameter(0)\n"
                       "  ROOT w = (s32[], f32[4]) while(a), condition=cond, body=body\n"
                       "}\n";
    pc_hlo_cost *c = cost_of(text, NULL);
    CHECK_ROW(row(c, "w"), 4, 32, 16);
    assert_int_equal(c->while_loops, 1);
    pc_hlo_cost_free(c);
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    o.while_trips = 10;
    c = cost_of(text, &o);
    CHECK_ROW(row(c, "w"), 40, 320, 160);
    pc_hlo_cost_free(c);
}

/* A tuple's bytes are its declared element shapes' (HLO text keeps them): 60 levels of
 * t_k = tuple(t_k-1, t_k-1) declared (f32[1], f32[1]) read by a custom-call is 8 bytes.
 * Without element shapes (protos) the size comes from what makes the tuple, memoized. */
static void test_tuple_sharing(void **state) {
    (void)state;
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof text, "ENTRY e {\n  t0 = f32[1] parameter(0)\n");
    for (int k = 1; k <= 60; k++)
        n += (size_t)snprintf(text + n, sizeof text - n,
                              "  t%d = (f32[1], f32[1]) tuple(t%d, t%d)\n", k, k - 1, k - 1);
    snprintf(text + n, sizeof text - n,
             "  ROOT c = f32[1] custom-call(t60), custom_call_target=\"x\"\n}\n");
    pc_hlo_cost *c = cost_of(text, NULL);
    CHECK_ROW(row(c, "c"), 0, 8, 4);
    assert_int_equal(c->unknown_ops, 1);
    assert_string_equal(c->first_unknown, "custom-call");
    pc_hlo_cost_free(c);
}

static void test_types(void **state) {
    (void)state;
    assert_string_equal(pc_hlo_type_name(16), "bf16");
    assert_string_equal(pc_hlo_type_name(1), "pred");
    assert_string_equal(pc_hlo_type_name(999), "?");
    assert_true(pc_hlo_type_bytes(16) == 2 && pc_hlo_type_bytes(11) == 4);
    assert_true(pc_hlo_type_bytes(1) == 1 && pc_hlo_type_bytes(2) == 1);
    assert_true(pc_hlo_type_bytes(21) == 0.5 && pc_hlo_type_bytes(13) == 0);
    assert_true(pc_hlo_type_bytes(-3) == 0);
}

static void test_errors(void **state) {
    (void)state;
    pc_hlo_cost *c = (pc_hlo_cost *)1;
    pc_error e;
    const char *bad = "ENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2 add(a, a)\n}\n";
    assert_int_equal(pc_hlo_cost_text(bad, strlen(bad), "bad.hlo", NULL, &c, &e), PC_ERR_FORMAT);
    assert_null(c);
    assert_non_null(strstr(e.msg, "bad.hlo:3:"));
    const char *oob = "ENTRY e {\n  a = f32[2,3] parameter(0)\n  b = f32[3,4] parameter(1)\n"
                      "  ROOT d = f32[2,4] dot(a, b), lhs_contracting_dims={5}\n}\n";
    assert_int_equal(pc_hlo_cost_text(oob, strlen(oob), "oob.hlo", NULL, &c, &e), PC_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "lhs_contracting_dims"));
    const char *ok = "ENTRY e {\n  ROOT a = f32[2] parameter(0)\n}\n";
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    o.module = 3;
    assert_int_equal(pc_hlo_cost_text(ok, strlen(ok), "ok.hlo", &o, &c, &e), PC_ERR_ARG);
    assert_int_equal(pc_hlo_cost_file("/nonexistent/x.hlo", NULL, &c, &e), PC_ERR_IO);
    pc_hlo_cost_free(NULL);
    /* calls nested deeper than the cost step follows: FILE:LINE of the computation named */
    size_t cap = 400 * 96 + 256, len = 0;
    char *deep = malloc(cap);
    assert_non_null(deep);
    len += (size_t)snprintf(deep + len, cap - len, "HloModule m\nc0 {\n  ROOT p = f32[] parameter(0)\n}\n");
    for (int i = 1; i < 300; i++)
        len += (size_t)snprintf(deep + len, cap - len, "c%d {\n  p = f32[] parameter(0)\n  ROOT r = f32[] "
                                "call(p), to_apply=c%d\n}\n", i, i - 1);
    len += (size_t)snprintf(deep + len, cap - len, "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = "
                            "f32[] call(p), to_apply=c299\n}\n");
    assert_int_equal(pc_hlo_cost_text(deep, len, "deep.hlo", NULL, &c, &e), PC_ERR_FORMAT);
    free(deep);
    /* c43 (line 5 + 42 * 4) is the one reached through 257 calls from the entry */
    assert_non_null(strstr(e.msg, "deep.hlo:173: module m: computation 'c43'"));
    assert_non_null(strstr(e.msg, "nest too deep"));
}

static pc_status cost_status(const char *text, const pc_hlo_cost_opts *o, pc_error *e) {
    pc_hlo_cost *c = (pc_hlo_cost *)1;
    pc_status st = pc_hlo_cost_text(text, strlen(text), "big.hlo", o, &c, e);
    if (st != PC_OK) assert_null(c);
    pc_hlo_cost_free(c);
    return st;
}

/* 33 dims of 2^32 is 2^1056 elements: more than a double holds. The cost is an error naming
 * the instruction (not inf, nor NaN where a zero dim meets it: that shape has 0 elements). */
static void test_overflow(void **state) {
    (void)state;
    char big[400] = "4294967296", text[2048];
    for (int i = 1; i < 33; i++) strcat(big, ",4294967296");
    snprintf(text, sizeof text,
             "ENTRY e {\n  a = f32[%s] parameter(0)\n  ROOT b = f32[%s] add(a, a)\n}\n", big,
             big);
    pc_error e;
    assert_int_equal(cost_status(text, NULL, &e), PC_ERR_RANGE);
    assert_non_null(strstr(e.msg, "instruction 'b'"));
    assert_non_null(strstr(e.msg, "overflow"));
    snprintf(text, sizeof text,
             "ENTRY e {\n  a = f32[%s,0] parameter(0)\n  ROOT b = f32[%s,0] add(a, a)\n}\n", big,
             big);
    pc_hlo_cost *c = cost_of(text, NULL);
    assert_int_equal(c->n_ops, 0); /* 0 elements: free, not NaN */
    pc_hlo_cost_free(c);
}

/* A while in a while body counts while_trips^2 times: 1e300^2 overflows, an error naming the
 * outer while; a negative window size (malformed) counts 0 FLOPs, never negative ones. */
static void test_overflow_trips_and_window(void **state) {
    (void)state;
    const char *text = "cond {\n  p = f32[4] parameter(0)\n  ROOT c = pred[] constant(false)\n}\n"
                       "inner {\n  p = f32[4] parameter(0)\n  ROOT y = f32[4] add(p, p)\n}\n"
                       "outer {\n  p = f32[4] parameter(0)\n"
                       "  ROOT w = f32[4] while(p), condition=cond, body=inner\n}\n"
                       "ENTRY e {\n  a = f32[4] parameter(0)\n"
                       "  ROOT w2 = f32[4] while(a), condition=cond, body=outer\n}\n";
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    o.while_trips = 1e300;
    pc_error e;
    assert_int_equal(cost_status(text, &o, &e), PC_ERR_RANGE);
    assert_non_null(strstr(e.msg, "instruction 'w2'"));
    o.while_trips = 1e100; /* 1e200 fits */
    pc_hlo_cost *c = cost_of(text, &o);
    assert_true(c->flops == 4 * 1e100 * 1e100);
    pc_hlo_cost_free(c);
    c = cost_of("ENTRY e {\n  x = f32[1,8,8,4] parameter(0)\n  w = f32[3,3,4,16] parameter(1)\n"
                "  ROOT g = f32[1,8,8,16] convolution(x, w), window={size=-3x3 pad=1_1x1_1}\n}\n",
                NULL);
    CHECK_ROW(row(c, "g"), 0, (256 + 576) * 4, 1024 * 4);
    pc_hlo_cost_free(c);
}

/* 300 nested calls: past the nesting limit, an error at once (not a stack overflow). */
static void test_deep_calls(void **state) {
    (void)state;
    size_t cap = 64 * 1024, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    n += (size_t)snprintf(text + n, cap - n, "c0 {\n  ROOT a = f32[8] parameter(0)\n}\n");
    for (int i = 1; i <= 300; i++)
        n += (size_t)snprintf(text + n, cap - n, "c%d {\n  a = f32[8] parameter(0)\n"
                              "  ROOT b = f32[8] call(a), to_apply=c%d\n}\n", i, i - 1);
    snprintf(text + n, cap - n, "ENTRY e {\n  a = f32[8] parameter(0)\n"
             "  ROOT b = f32[8] call(a), to_apply=c300\n}\n");
    pc_error e;
    assert_int_equal(cost_status(text, NULL, &e), PC_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "nest too deep"));
    free(text);
}

/* ---- openxla fixtures ------------------------------------------------------------- */

static pc_hlo_cost *fixture_cost(const char *name) {
    char path[4096];
    if (!pc_test_fixture(path, sizeof path, "hlo", name)) {
        print_message("HLO fixtures not found (PC_SHARED_DIR): skipped\n");
        skip();
    }
    pc_hlo_cost *c = NULL;
    pc_error e;
    pc_status st = pc_hlo_cost_file(path, NULL, &c, &e);
    if (st != PC_OK) print_message("%s\n", e.msg);
    assert_int_equal(st, PC_OK);
    return c;
}

/* dot.hlo: a fusion around f32[128,256] x [256,64] -> [128,64]: 2*128*64*256 = 4194304
 * FLOPs; reads (128*256 + 256*64)*4 = 196608 B; writes 128*64*4 = 32768 B.
 * reduce_row.hlo: a fusion reducing f32[128,256] over dim 1: 32768 FLOPs; reads 131072 B
 * (the fused constant init is inside the fusion); writes 128*4 = 512 B. */
static void test_fixture_dot_reduce(void **state) {
    (void)state;
    pc_hlo_cost *c = fixture_cost("dot.hlo");
    assert_int_equal(c->n_ops, 1);
    CHECK_ROW(row(c, "fusion"), 4194304, 196608, 32768);
    assert_true(c->ops[0].matrix);
    pc_hlo_cost_free(c);
    c = fixture_cost("reduce_row.hlo");
    assert_int_equal(c->n_ops, 1);
    CHECK_ROW(row(c, "fusion"), 32768, 131072, 512);
    pc_hlo_cost_free(c);
}

/* ssd_mobilenet_tf.hlo: 47 convolutions, all counted as matrix ops with FLOPs > 0. */
static void test_fixture_ssd(void **state) {
    (void)state;
    pc_hlo_cost *c = fixture_cost("ssd_mobilenet_tf.hlo");
    int64_t convs = 0;
    for (int64_t i = 0; i < c->n_ops; i++) {
        if (strcmp(c->ops[i].opcode, "convolution")) continue;
        convs++;
        assert_true(c->ops[i].matrix && c->ops[i].flops > 0);
    }
    assert_int_equal(convs, 47);
    assert_int_equal(c->unknown_ops, 0);
    pc_hlo_cost_free(c);
}

static int fixtures_present(void) {
    char path[4096];
    return pc_test_fixture(path, sizeof path, "hlo", "dot.hlo");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dot_batch),
        cmocka_unit_test(test_dot_two_contracting_and_guess),
        cmocka_unit_test(test_conv_groups),
        cmocka_unit_test(test_fusion_unit),
        cmocka_unit_test(test_fusion_tuple_and_dot),
        cmocka_unit_test(test_reduce_elementwise_broadcast),
        cmocka_unit_test(test_slice_gather),
        cmocka_unit_test(test_while),
        cmocka_unit_test(test_tuple_sharing),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_overflow_trips_and_window),
        cmocka_unit_test(test_deep_calls),
        cmocka_unit_test(test_fixture_dot_reduce),
        cmocka_unit_test(test_fixture_ssd),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed) return failed;
    return fixtures_present() ? 0 : 77;
}
