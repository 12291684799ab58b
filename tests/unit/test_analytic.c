/*
 * Accuracy tests of the analytic model (include/perfcast/analytic.h,
 * src/analytic/): every test reproduces a worked example of the scaling book
 * (/work/shared/reference/scaling_book.md, "§N" = its section) within the
 * book's own rounding, and says so where perfcast uses a more exact formula
 * (and by how much). Also: public parameter counts of the presets, the HF
 * config reader, the chip JSON loader and the op description parser.
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

#include "perfcast/analytic.h"

/* ---- helpers ------------------------------------------------------------ */

/* |actual - expected| <= tol * |expected|, naming the example on failure. */
static void check_rel_at(double actual, double expected, double tol, const char *what, int line) {
    double err = fabs(actual - expected) / (expected != 0 ? fabs(expected) : 1);
    if (!(err <= tol)) {
        print_error("line %d: %s: got %.10g, expected %.10g (rel. error %.3g > %.3g)\n", line, what,
                    actual, expected, err, tol);
        fail();
    }
}
#define check_rel(a, e, tol, what) check_rel_at((a), (e), (tol), (what), __LINE__)

static pc_chipdb *db_open(void) {
    pc_chipdb *db = NULL;
    pc_error e;
    assert_int_equal(pc_chipdb_new(&db, &e), PC_OK);
    return db;
}

static const pc_chip *chip(pc_chipdb *db, const char *name) {
    const pc_chip *c = pc_chipdb_find(db, name);
    if (!c) print_error("chip %s not found\n", name);
    assert_non_null(c);
    return c;
}

static pc_tfm_cfg preset(const char *name) {
    pc_tfm_cfg m;
    pc_error e;
    if (pc_tfm_preset(name, &m, &e) != PC_OK) print_error("%s\n", e.msg);
    assert_int_equal(pc_tfm_preset(name, &m, &e), PC_OK);
    return m;
}

static pc_coll_cost coll(const pc_chip *c, const char *mesh_s, unsigned axes, unsigned dcn,
                         int wrap, pc_coll op, double bytes) {
    pc_mesh m;
    pc_error e;
    assert_int_equal(pc_mesh_parse(mesh_s, &m, &e), PC_OK);
    m.dcn_mask = dcn;
    for (int i = 0; i < m.ndims; i++) m.wrap[i] = (signed char)wrap;
    if (pc_mesh_check(c, &m, &e) != PC_OK) print_error("%s\n", e.msg);
    assert_int_equal(pc_mesh_check(c, &m, &e), PC_OK);
    pc_coll_cost r;
    if (pc_collective_cost(c, &m, axes, op, bytes, &r, &e) != PC_OK) print_error("%s\n", e.msg);
    assert_int_equal(pc_collective_cost(c, &m, axes, op, bytes, &r, &e), PC_OK);
    return r;
}

static pc_coll_cost coll_conv(const pc_chip *c, const char *mesh_s, unsigned axes, unsigned dcn,
                              int wrap, pc_coll op, double bytes, pc_coll_conv conv) {
    pc_mesh m;
    pc_error e;
    assert_int_equal(pc_mesh_parse(mesh_s, &m, &e), PC_OK);
    m.dcn_mask = dcn;
    for (int i = 0; i < m.ndims; i++) m.wrap[i] = (signed char)wrap;
    assert_int_equal(pc_mesh_check(c, &m, &e), PC_OK);
    pc_coll_cost r;
    if (pc_collective_cost_conv(c, &m, axes, op, bytes, conv, &r, &e) != PC_OK)
        print_error("%s\n", e.msg);
    assert_int_equal(pc_collective_cost_conv(c, &m, axes, op, bytes, conv, &r, &e), PC_OK);
    return r;
}

static pc_roofline roof(const pc_chip *c, const pc_op *op, double comm_bw) {
    pc_cost cost;
    pc_roofline r;
    pc_error e;
    if (pc_op_cost(op, &cost, &e) != PC_OK) print_error("%s\n", e.msg);
    assert_int_equal(pc_op_cost(op, &cost, &e), PC_OK);
    assert_int_equal(pc_roofline_eval(c, &cost, comm_bw, &r, &e), PC_OK);
    return r;
}

static pc_op matmul(double m, double k, double n, pc_prec p, pc_prec wp) {
    pc_op op = pc_op_init(PC_OP_MATMUL);
    op.m = m, op.k = k, op.n = n, op.prec = p, op.wprec = wp;
    return op;
}

/* ---- chips and rooflines (§1, §2, §5) ----------------------------------- */

static void test_critical_intensities(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    /* §2: "v5e: 1.97e14 / 8.2e11 ~ 240 FLOPs/byte" */
    check_rel(pc_chip_critical_intensity(chip(db, "v5e"), PC_PREC_BF16, PC_LINK_HBM), 240, 0.002,
              "scaling_book.md §2: v5e critical intensity 240");
    /* §2: "H100: 9.89e14 / 3.35e12 ~ 295" */
    check_rel(pc_chip_critical_intensity(chip(db, "h100"), PC_PREC_BF16, PC_LINK_HBM), 295, 0.002,
              "scaling_book.md §2: H100 critical intensity 295");
    /* §2: "B200 2250e12/8e12 ~ 281; fp8 doubles: 590 / 562" */
    check_rel(pc_chip_critical_intensity(chip(db, "b200"), PC_PREC_BF16, PC_LINK_HBM), 281, 0.002,
              "scaling_book.md §2: B200 critical intensity 281");
    check_rel(pc_chip_critical_intensity(chip(db, "h100"), PC_PREC_FP8, PC_LINK_HBM), 590, 0.002,
              "scaling_book.md §2: H100 fp8 critical intensity 590");
    check_rel(pc_chip_critical_intensity(chip(db, "b200"), PC_PREC_FP8, PC_LINK_HBM), 562, 0.002,
              "scaling_book.md §2: B200 fp8 critical intensity 562");
    /* §5: "v5p: C/W_ici = 4.59e14/1.8e11 ~ 2550"; "v5e: 1.97e14/9e10 ~ 2200" (exactly 2189) */
    check_rel(pc_chip_critical_intensity(chip(db, "v5p"), PC_PREC_BF16, PC_LINK_ICI), 2550, 0.001,
              "scaling_book.md §5: v5p ICI critical intensity 2550");
    check_rel(pc_chip_critical_intensity(chip(db, "v5e"), PC_PREC_BF16, PC_LINK_ICI), 2200, 0.006,
              "scaling_book.md §5: v5e ICI critical intensity ~2200 (exactly 2188.9)");
    /* §5: "per-slice batch > C/W_dcn = 4.59e14/6.25e9 = 73,440" */
    check_rel(pc_chip_critical_intensity(chip(db, "v5p"), PC_PREC_BF16, PC_LINK_DCN), 73440, 1e-9,
              "scaling_book.md §5: v5p DCN critical batch 73,440");
    /* §5 GPU: "H100 in node 990e12/450e9 = 2200, across nodes 990e12/400e9 = 2475; B200 across
     * nodes 5625" (perfcast uses 9.89e14, so 2197.8 and 2472.5) */
    check_rel(pc_chip_critical_intensity(chip(db, "h100"), PC_PREC_BF16, PC_LINK_NVLINK), 2200,
              0.002, "scaling_book.md §5: H100 NVLink critical batch 2200");
    check_rel(pc_chip_critical_intensity(chip(db, "h100"), PC_PREC_BF16, PC_LINK_IB), 2475, 0.002,
              "scaling_book.md §5: H100 across-node critical batch 2475");
    check_rel(pc_chip_critical_intensity(chip(db, "b200"), PC_PREC_BF16, PC_LINK_IB), 5625, 1e-9,
              "scaling_book.md §5: B200 across-node critical batch 5625");
    pc_chipdb_free(db);
}

static void test_pod_totals_and_prices(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5e = chip(db, "v5e"), *v5p = chip(db, "v5p"), *h100 = chip(db, "h100");
    /* §1 quiz: "v5e pod 256 chips, ~5.1e16 bf16 FLOP/s, 4 TB HBM" */
    check_rel(256 * v5e->flops[PC_PREC_BF16], 5.1e16, 0.02, "scaling_book.md §1: v5e pod FLOP/s");
    check_rel(256 * v5e->hbm_bytes, 4e12, 0.03, "scaling_book.md §1: v5e pod HBM 4 TB");
    /* "v5p pod 8960 chips, ~4.1e18 FLOP/s, ~860 TB HBM; 16x16x16 slice 393 TB" */
    int pod = v5p->pod_shape[0] * v5p->pod_shape[1] * v5p->pod_shape[2];
    assert_int_equal(pod, 8960);
    check_rel(pod * v5p->flops[PC_PREC_BF16], 4.1e18, 0.01, "scaling_book.md §1: v5p pod FLOP/s");
    check_rel(pod * v5p->hbm_bytes, 860e12, 0.001, "scaling_book.md §1: v5p pod HBM 860 TB");
    check_rel(4096 * v5p->hbm_bytes, 393e12, 0.001, "scaling_book.md §1: 16x16x16 v5p 393 TB");
    /* §1 pricing: "H100 $10.8/h (3.3e17 FLOPs/$), v5p $4.2/h (3.9e17), v5e $1.2/h (5.8e17)" */
    check_rel(h100->flops[PC_PREC_BF16] * 3600 / h100->price_per_hour, 3.3e17, 0.01,
              "scaling_book.md §1: H100 FLOPs per dollar");
    check_rel(v5p->flops[PC_PREC_BF16] * 3600 / v5p->price_per_hour, 3.9e17, 0.01,
              "scaling_book.md §1: v5p FLOPs per dollar");
    check_rel(v5e->flops[PC_PREC_BF16] * 3600 / v5e->price_per_hour, 5.8e17, 0.02,
              "scaling_book.md §1: v5e FLOPs per dollar (5.91e17 unrounded)");
    /* §1: v4/v5p 3-D torus, v5e/v6e 2-D; v5p 90 GB/s per axis one-way */
    assert_int_equal(v5p->torus_dims, 3);
    assert_int_equal(v5e->torus_dims, 2);
    check_rel(v5p->ici_link_bw, 9e10, 1e-12, "scaling_book.md §1: v5p 90 GB/s per axis one-way");
    /* aliases */
    assert_ptr_equal(pc_chipdb_find(db, "TPU-v5e"), v5e);
    assert_ptr_equal(pc_chipdb_find(db, "v5litepod"), v5e);
    assert_ptr_equal(pc_chipdb_find(db, "H100-SXM5"), h100);
    assert_ptr_equal(pc_chipdb_find(db, "v4p"), chip(db, "v4"));
    assert_ptr_equal(pc_chipdb_find(db, "ironwood"), chip(db, "tpu7x"));
    assert_null(pc_chipdb_find(db, "v9z"));
    for (int i = 0; i < pc_chip_builtin_count(); i++) {
        pc_error e;
        assert_int_equal(pc_chip_validate(pc_chip_builtin(i), &e), PC_OK);
        assert_true(pc_chip_builtin(i)->source[0] != '\0');
    }
    pc_chipdb_free(db);
}

static void test_matmul_roofline(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5e = chip(db, "v5e");
    /* §2: "bf16 matmul is compute-bound when per-replica token batch B > 240 (v5e)";
     * intensity BDF/(BD+DF+BF) ~ B for B << D, F */
    double D = 1 << 17, F = 1 << 17;
    pc_op op = matmul(230, D, F, PC_PREC_BF16, PC_PREC_BF16);
    pc_roofline r = roof(v5e, &op, 0);
    check_rel(r.intensity, 230, 0.01, "scaling_book.md §2: bf16 matmul intensity ~ B");
    assert_int_equal(r.bound, PC_BOUND_MEMORY);
    op.m = 250;
    r = roof(v5e, &op, 0);
    assert_int_equal(r.bound, PC_BOUND_COMPUTE);
    check_rel(r.t_compute, 2 * 250 * D * F / 1.97e14, 1e-12, "scaling_book.md §2: T_math");
    check_rel(r.time_upper, r.t_compute + r.t_memory, 1e-12, "scaling_book.md §2: upper bound");
    /* §2: "int8 weights + bf16 compute -> B > 120" */
    op = matmul(115, D, F, PC_PREC_BF16, PC_PREC_INT8);
    assert_int_equal(roof(v5e, &op, 0).bound, PC_BOUND_MEMORY);
    op.m = 125;
    assert_int_equal(roof(v5e, &op, 0).bound, PC_BOUND_COMPUTE);
    /* "int8 weights + int8 compute (3.94e14) -> 240 again" */
    op = matmul(230, D, F, PC_PREC_INT8, PC_PREC_INT8);
    assert_int_equal(roof(v5e, &op, 0).bound, PC_BOUND_MEMORY);
    op.m = 250;
    assert_int_equal(roof(v5e, &op, 0).bound, PC_BOUND_COMPUTE);
    /* §2: dot product bf16: (2N-1)/(4N+2) -> 1/2 (perfcast counts 2N FLOPs: 2N/(4N+2)) */
    op = matmul(1, 1e6, 1, PC_PREC_BF16, PC_PREC_BF16);
    r = roof(v5e, &op, 0);
    check_rel(r.intensity, 0.5, 1e-5, "scaling_book.md §2: dot product intensity -> 1/2");
    assert_int_equal(r.bound, PC_BOUND_MEMORY);
    /* §2: tiling: intensity of bm x bn tiles ~ bm*bn/(bm+bn) (a [bm,K]x[K,bn] block, K large) */
    op = matmul(512, 1e7, 256, PC_PREC_BF16, PC_PREC_BF16);
    check_rel(roof(v5e, &op, 0).intensity, 512.0 * 256 / (512 + 256), 1e-4,
              "scaling_book.md §2: tile intensity bm*bn/(bm+bn)");
    /* fp32 has no TPU rate in the book: a clear error naming the fix */
    pc_cost c = {.flops = 1, .bytes = 1, .prec = PC_PREC_FP32};
    pc_error e;
    assert_int_equal(pc_roofline_eval(v5e, &c, 0, &r, &e), PC_ERR_UNSUPPORTED);
    assert_non_null(strstr(e.msg, "flops.fp32 in the chip (pc_chip or chips JSON)"));
    assert_null(strstr(e.msg, "--")); /* library messages name no CLI flags */
    pc_chipdb_free(db);
}

static void test_interchip_roofline(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5e = chip(db, "v5e");
    /* §2: matmul split over 2 chips along D, partial sums exchanged at 4.5e10 B/s:
     * T_math = BDF/1.97e14, T_comms = 2BF/4.5e10 -> compute-bound iff D > 8755 */
    double B = 4096, F = 16384;
    for (int k = 0; k < 2; k++) {
        double Dt = k == 0 ? 8700 : 8800;
        pc_op op = matmul(B, Dt / 2, F, PC_PREC_BF16, PC_PREC_BF16);
        op.comm_bytes = 2 * B * F;
        pc_roofline r = roof(v5e, &op, 4.5e10);
        check_rel(r.t_comm, 2 * B * F / 4.5e10, 1e-12, "scaling_book.md §2: inter-chip T_comms");
        assert_int_equal(r.bound, k == 0 ? PC_BOUND_COMM : PC_BOUND_COMPUTE);
    }
    pc_chipdb_free(db);
}

static void test_profiling_examples(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    pc_error e;
    /* §8: 8 TPU v2 cores (23e12 FLOP/s each), [32,1024,8192] x [8192,32768] -> 95.6 ms;
     * the chip comes from JSON, as a user would define it */
    const char *js = "{\"chips\": [{\"name\": \"v2-8\", \"kind\": \"tpu\", "
                     "\"flops\": {\"bf16\": 1.84e14}, \"hbm_bw\": 5.4e12, "
                     "\"torus_dims\": 2, \"pod_shape\": [2, 2], \"ici_link_bw\": 6e10}]}";
    assert_int_equal(pc_chipdb_load_json(db, js, strlen(js), "test", &e), PC_OK);
    const pc_chip *v2 = chip(db, "v2-8");
    pc_op op = matmul(32 * 1024, 8192, 32768, PC_PREC_BF16, PC_PREC_BF16);
    pc_roofline r = roof(v2, &op, 0);
    check_rel(r.time, 95.6e-3, 0.001, "scaling_book.md §8: v2 matmul 95.6 ms");
    assert_int_equal(r.bound, PC_BOUND_COMPUTE);
    /* §8: "a 128 MB ReduceScatter over 1.2e11 B/s ~ 1.1 ms" (exactly 1.067 ms; measured 1.13) */
    pc_op rs = pc_op_init(PC_OP_RAW);
    rs.comm_bytes = 128e6;
    check_rel(roof(v2, &rs, 1.2e11).time, 1.1e-3, 0.04,
              "scaling_book.md §8: 128 MB ReduceScatter ~1.1 ms");
    pc_chipdb_free(db);
}

/* ---- collectives (§3, §5 GPU) ------------------------------------------- */

static void test_tpu_allgather(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5e = chip(db, "v5e"), *v5p = chip(db, "v5p");
    const double V = 1073741824.0, W = 9e10; /* v5e W_ici, bidirectional */
    /* §3: AllGather on a bidirectional ring: T = V / W_ici, independent of X. perfcast keeps
     * the exact (X-1)/X factor: 6.25% below V/W at X = 16. */
    pc_coll_cost r = coll(v5e, "16", 1, 0, -1, PC_COLL_ALLGATHER, V);
    check_rel(r.time, V / W, 0.0626, "scaling_book.md §3: AllGather = V/W_ici (within (X-1)/X)");
    check_rel(r.time, V / W * 15 / 16, 1e-12, "AllGather exact (X-1)/X form");
    assert_string_equal(r.network, "ICI");
    /* independent of X: v5p 4-axis vs 16-axis (cube slices, wrapped) differ only by (X-1)/X */
    pc_coll_cost r4 = coll(v5p, "4x4x4", 1, 0, -1, PC_COLL_ALLGATHER, V);
    pc_coll_cost r16 = coll(v5p, "16x4x4", 1, 0, -1, PC_COLL_ALLGATHER, V);
    check_rel(r4.time / r16.time, (3.0 / 4) / (15.0 / 16), 1e-12,
              "scaling_book.md §3: AllGather time independent of X");
    /* §3 ReduceScatter = AllGather; AllReduce = RS + AG = 2 V / W_ici */
    check_rel(coll(v5e, "16", 1, 0, -1, PC_COLL_REDUCESCATTER, V).time, r.time, 1e-12,
              "scaling_book.md §3: ReduceScatter costs the same as AllGather");
    check_rel(coll(v5e, "16", 1, 0, -1, PC_COLL_ALLREDUCE, V).time, 2 * r.time, 1e-12,
              "scaling_book.md §3: AllReduce = 2 V / W_ici");
    /* §3 unidirectional / no wraparound: V/W_uni (X-1)/X, i.e. twice the ring: a v5e axis of 8
     * has no wraparound (§1: v5e wraps only on axes of 16) */
    pc_coll_cost r8 = coll(v5e, "8x16", 1, 0, -1, PC_COLL_ALLGATHER, V);
    check_rel(r8.bw_time, V / 4.5e10 * 7 / 8, 1e-12,
              "scaling_book.md §3: no wraparound -> V/W_uni (X-1)/X");
    pc_coll_cost r8w = coll(v5e, "8x16", 1, 0, 1, PC_COLL_ALLGATHER, V);
    check_rel(r8.bw_time / r8w.bw_time, 2, 1e-12,
              "scaling_book.md §1: no wraparound roughly doubles collective time");
    /* §3 multi-axis: T = max(T_min sum|X_i|/2, V/(W_ici N_axes)) */
    pc_coll_cost r2 = coll(v5e, "16x16", 3, 0, -1, PC_COLL_ALLGATHER, V);
    check_rel(r2.bw_time, V / (2 * W) * 255 / 256, 1e-12,
              "scaling_book.md §3: two-axis AllGather V/(2 W_ici)");
    check_rel(r2.latency_time, 1e-6 * (16 + 16) / 2, 1e-12,
              "scaling_book.md §3: multi-axis latency T_min sum X_i / 2");
    /* §3 "gathering over one axis of an array sharded over another axis Y costs 1/Y": V/Y */
    check_rel(coll(v5e, "16x16", 1, 0, -1, PC_COLL_ALLGATHER, V / 16).time, r.time / 16, 1e-12,
              "scaling_book.md §3: gather of a Y-sharded array costs 1/Y");
    pc_chipdb_free(db);
}

/* The book's convention (PC_CONV_BOOK, `collective --book`): the answers of §3 and §5
 * exactly, no (n-1)/n ring factor. */
static void test_collective_book_convention(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5e = chip(db, "v5e"), *v5p = chip(db, "v5p"), *h100 = chip(db, "h100");
    const double V = 1073741824.0, W = 9e10;
    const pc_coll_conv B = PC_CONV_BOOK, X = PC_CONV_EXACT;
    /* §3: AllGather = ReduceScatter = V / W_ici on a ring, whatever X */
    check_rel(coll_conv(v5e, "16", 1, 0, -1, PC_COLL_ALLGATHER, V, B).time, V / W, 1e-12,
              "scaling_book.md §3 (book convention): AllGather = V/W_ici");
    check_rel(coll_conv(v5e, "16", 1, 0, -1, PC_COLL_REDUCESCATTER, V, B).time, V / W, 1e-12,
              "scaling_book.md §3 (book convention): ReduceScatter = V/W_ici");
    check_rel(coll_conv(v5e, "16", 1, 0, -1, PC_COLL_ALLREDUCE, V, B).time, 2 * V / W, 1e-12,
              "scaling_book.md §3 (book convention): AllReduce = 2 V/W_ici");
    /* n = 4 (a wrapped axis of 4): the book's V/W vs the exact 3/4 V/W, 25% apart */
    pc_coll_cost b4 = coll_conv(v5e, "4x4", 1, 0, 1, PC_COLL_ALLGATHER, V, B);
    pc_coll_cost x4 = coll_conv(v5e, "4x4", 1, 0, 1, PC_COLL_ALLGATHER, V, X);
    check_rel(b4.time, V / W, 1e-12, "book convention at n = 4: V/W_ici");
    check_rel(x4.time, 0.75 * V / W, 1e-12, "exact convention at n = 4: 3/4 V/W_ici");
    check_rel(coll(v5e, "4x4", 1, 0, 1, PC_COLL_ALLGATHER, V).time, x4.time, 1e-12,
              "pc_collective_cost is the exact convention");
    /* §3 multi-axis: V/(W_ici N_axes), latency T_min sum X_i / 2 */
    pc_coll_cost b2 = coll_conv(v5e, "16x16", 3, 0, -1, PC_COLL_ALLGATHER, V, B);
    check_rel(b2.bw_time, V / (2 * W), 1e-12, "scaling_book.md §3: V/(W_ici N_axes)");
    check_rel(b2.latency_time, 1e-6 * 32 / 2, 1e-12, "scaling_book.md §3: T_min sum X_i/2");
    /* odd axis: the book's X/2 hops (exact: floor) */
    check_rel(coll_conv(v5e, "5x16", 1, 0, 1, PC_COLL_ALLGATHER, 1, B).latency_time, 2.5e-6, 1e-12,
              "scaling_book.md §3: T_min X/2 hops");
    /* AllToAll is the book's formula in both conventions */
    check_rel(coll_conv(v5e, "16", 1, 0, -1, PC_COLL_ALLTOALL, V, B).time, V / (4 * W), 1e-12,
              "scaling_book.md §3: AllToAll V/(4 W_ici)");
    /* §5 cross-pod DP: T_comms = 8DF/(M W_dcn) for the 4DF bytes of one layer's gradients, M
     * chips per slice; the exact convention is (S-1)/S of it (1/2 at S = 2) */
    const double D = 8192, F = 28672, M = 4096;
    pc_coll_cost dc = coll_conv(v5p, "2x16x16x16", 15, 1, -1, PC_COLL_ALLREDUCE, 4 * D * F, B);
    pc_coll_cost ic = coll_conv(v5p, "2x16x16x16", 14, 1, -1, PC_COLL_ALLREDUCE, 4 * D * F, B);
    check_rel(dc.bw_time - ic.bw_time, 8 * D * F / (M * 6.25e9), 1e-12,
              "scaling_book.md §5 (book convention): DCN AllReduce 8DF/(M W_dcn)");
    pc_coll_cost dx = coll_conv(v5p, "2x16x16x16", 15, 1, -1, PC_COLL_ALLREDUCE, 4 * D * F, X);
    pc_coll_cost ix = coll_conv(v5p, "2x16x16x16", 14, 1, -1, PC_COLL_ALLREDUCE, 4 * D * F, X);
    check_rel(dx.bw_time - ix.bw_time, 0.5 * 8 * D * F / (M * 6.25e9), 1e-12,
              "exact convention: DCN AllReduce (S-1)/S of the book's");
    /* §5 GPU: AG/RS in a node = bytes/450e9 (H100); across nodes bytes/400e9 (node egress);
     * AllToAll in a node B/(8W), across M nodes B/(M W_node) */
    check_rel(coll_conv(h100, "8", 1, 0, -1, PC_COLL_ALLGATHER, V, B).bw_time, V / 450e9, 1e-12,
              "scaling_book.md §5 (book convention): H100 node AllGather V/450e9");
    check_rel(coll_conv(h100, "64x8", 3, 0, -1, PC_COLL_REDUCESCATTER, V, B).bw_time, V / 400e9,
              1e-12, "scaling_book.md §5 (book convention): across nodes V/400e9");
    check_rel(coll_conv(h100, "8", 1, 0, -1, PC_COLL_ALLTOALL, V, B).bw_time, V / (8 * 450e9),
              1e-12, "scaling_book.md §5 (book convention): node AllToAll B/(8W)");
    check_rel(coll_conv(h100, "64x8", 3, 0, -1, PC_COLL_ALLTOALL, V, B).bw_time,
              V / (64 * 400e9), 1e-12, "scaling_book.md §5 (book convention): B/(M W_node)");
    pc_coll_cost r;
    pc_mesh m;
    pc_error e;
    assert_int_equal(pc_mesh_parse("16", &m, &e), PC_OK);
    assert_int_equal(pc_mesh_check(v5e, &m, &e), PC_OK);
    assert_int_equal(pc_collective_cost_conv(v5e, &m, 1, PC_COLL_ALLGATHER, 1, (pc_coll_conv)7,
                                             &r, &e),
                     PC_ERR_ARG);
    assert_string_equal(pc_coll_conv_name(PC_CONV_BOOK), "book");
    pc_chipdb_free(db);
}

/* Collective-permute (send/recv): each device sends V to a neighbour over one link, one way:
 * V / link + latency. Hand values from the §1 link numbers. */
static void test_collective_permute(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5e = chip(db, "v5e"), *v5p = chip(db, "v5p"), *h100 = chip(db, "h100");
    const double V = 1e9;
    pc_coll_cost t = coll(v5e, "4x4", 1, 0, -1, PC_COLL_PERMUTE, V);
    check_rel(t.time, V / 4.5e10 + 1e-6, 1e-12, "v5e permute: V / 4.5e10 (one ICI link) + 1 hop");
    assert_string_equal(t.network, "ICI");
    check_rel(t.shard_bytes, V, 1e-12, "permute: each device's buffer is V");
    check_rel(coll_conv(v5e, "4x4", 1, 0, -1, PC_COLL_PERMUTE, V, PC_CONV_BOOK).time, t.time,
              1e-12, "permute: same in both conventions");
    pc_coll_cost d = coll(v5p, "2x16x16x16", 1, 1, -1, PC_COLL_PERMUTE, V);
    check_rel(d.time, V / 6.25e9 + 1e-5, 1e-12, "v5p permute across slices: V / W_dcn + 10 us");
    assert_string_equal(d.network, "DCN");
    check_rel(coll(h100, "8", 1, 0, -1, PC_COLL_PERMUTE, V).time, V / 450e9 + 5e-6, 1e-12,
              "H100 permute in a node: V / 450e9 (NVLink) + 5 us");
    pc_coll_cost ib = coll(h100, "16x8", 1, 0, -1, PC_COLL_PERMUTE, V);
    check_rel(ib.time, V / 50e9 + 1e-5, 1e-12, "H100 permute across nodes: V / 50e9 (IB) + 10 us");
    assert_string_equal(ib.network, "IB");
    assert_int_equal(pc_coll_parse("permute"), PC_COLL_PERMUTE);
    assert_int_equal(pc_coll_parse("collective-permute"), PC_COLL_PERMUTE);
    assert_int_equal(pc_coll_parse("p2p"), PC_COLL_PERMUTE);
    assert_int_equal(pc_coll_parse("send-recv"), PC_COLL_PERMUTE);
    assert_int_equal(pc_coll_parse("sendrecv"), PC_COLL_PERMUTE);
    assert_string_equal(pc_coll_name(PC_COLL_PERMUTE), "permute");
    pc_chipdb_free(db);
}

/* MFU of a measured run, hand-derived. LLaMA-2 13B (matmul weights N = 13,015,864,320 total
 * - 163,840,000 embedding - 414,720 norms = 12,851,609,600): §6 "step ~ 6 x 3e6 x 13e9 /
 * (4096 x 4.6e14 x 0.4) ~ 300 ms", read backwards: a 300 ms step of 3e6 tokens on 4096 v5p
 * is MFU = 3e6 x 6N / (4096 x 0.3 x 4.59e14) = 41.01% (the book's 40% with N ~ 13e9). */
static void test_model_mfu(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5p = chip(db, "v5p"), *h100 = chip(db, "h100");
    pc_tfm_cfg m = preset("llama2-13b");
    const double N = 12851609600.0;
    pc_mfu f;
    pc_error e;
    assert_int_equal(pc_tfm_mfu(&m, v5p, PC_PREC_BF16, 4096, PC_ATTN_NONE, PC_REMAT_NONE, 3e6,
                                  0.3 * 4096, &f, &e),
                     PC_OK);
    check_rel(f.flops_per_token, 6 * N, 1e-12, "MFU: 6N FLOPs per token");
    check_rel(f.mfu, 3e6 * 6 * N / (4096 * 0.3 * 4.59e14), 1e-12, "MFU from a step time");
    check_rel(f.mfu, 0.41014, 1e-4, "hand value 41.01%");
    check_rel(f.mfu, 0.40, 0.03, "scaling_book.md §6: LLaMA-2 13B ~300 ms at 40% MFU");
    check_rel(f.achieved, 3e6 * 6 * N / (4096 * 0.3), 1e-12, "achieved FLOP/s per chip");
    /* attention: full 12 L N H T (40 x 40 x 128 x 4096 x 12), causal half of it */
    const double att = 12.0 * 40 * 40 * 128 * 4096;
    assert_int_equal(pc_tfm_mfu(&m, v5p, PC_PREC_BF16, 4096, PC_ATTN_FULL, PC_REMAT_NONE, 3e6,
                                  0.3 * 4096, &f, &e),
                     PC_OK);
    check_rel(f.flops_per_token, 6 * N + att, 1e-12, "MFU: 6N + 12 L N H T (full)");
    assert_int_equal(pc_tfm_mfu(&m, v5p, PC_PREC_BF16, 4096, PC_ATTN_CAUSAL, PC_REMAT_FULL, 3e6,
                                  0.3 * 4096, &f, &e),
                     PC_OK);
    check_rel(f.flops_per_token, 6 * N + att / 2, 1e-12, "MFU: causal halves attention");
    /* HFU: block remat adds one forward (2N + the forward attention) */
    check_rel(f.hfu / f.mfu, (8 * N + att / 2 * 4 / 3) / (6 * N + att / 2), 1e-12,
              "HFU with remat full");
    /* GPU-hours: §6 H100: 15T tokens of LLaMA-3 70B (N = 69,501,714,432) in 3.93e6 GPU-hours
     * -> 15e12 x 6N / (3.93e6 x 3600 x 9.89e14) = 44.7% (the book's 4096 H100 x 40 days at
     * 45% MFU with N ~ 70e9) */
    pc_tfm_cfg l = preset("llama3-70b");
    assert_int_equal(pc_tfm_mfu(&l, h100, PC_PREC_BF16, 4096, PC_ATTN_NONE, PC_REMAT_NONE,
                                  15e12, 3.93e6 * 3600, &f, &e),
                     PC_OK);
    check_rel(f.mfu, 15e12 * 6 * 69501714432.0 / (3.93e6 * 3600 * 9.89e14), 1e-12,
              "MFU from GPU-hours");
    check_rel(f.mfu, 0.45, 0.01, "scaling_book.md §6: ~45% MFU");
    assert_int_equal(pc_tfm_mfu(&l, h100, PC_PREC_BF16, 4096, PC_ATTN_NONE, PC_REMAT_NONE, 1, 0,
                                  &f, &e),
                     PC_ERR_ARG);
    assert_int_equal(pc_tfm_mfu(&l, v5p, PC_PREC_FP32, 4096, PC_ATTN_NONE, PC_REMAT_NONE, 1, 1,
                                  &f, &e),
                     PC_ERR_UNSUPPORTED);
    pc_chipdb_free(db);
}

static void test_tpu_latency_regime(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5e = chip(db, "v5e");
    /* §3: "v5e (4.5e10 one-way): per-shard buffers below ~45 kB are latency bound" with
     * T = max(T_min X/2, V/W_ici), T_min ~ 1 us/hop. With the exact (X-1)/X factor the crossover
     * at X = 16 is 48 kB (7% above the book's 45 kB). */
    pc_coll_cost lo = coll(v5e, "16", 1, 0, -1, PC_COLL_ALLGATHER, 16 * 40e3);
    pc_coll_cost hi = coll(v5e, "16", 1, 0, -1, PC_COLL_ALLGATHER, 16 * 50e3);
    assert_true(lo.latency_bound);
    assert_false(hi.latency_bound);
    check_rel(lo.time, 8e-6, 1e-12, "scaling_book.md §3: latency floor T_min X/2 = 8 us");
    double cross = 8e-6 * 9e10 / 15; /* shard bytes where the two terms meet */
    check_rel(cross, 45e3, 0.07, "scaling_book.md §3: latency-bound below ~45 kB per shard");
    /* §3: "measured v5e AllGather reaches ~95% of 4.5e10 at ~10 MB total (16-way)": the model
     * is bandwidth-bound there, its latency term is under 10% of the time */
    pc_coll_cost m10 = coll(v5e, "16", 1, 0, -1, PC_COLL_ALLGATHER, 10e6);
    assert_false(m10.latency_bound);
    assert_true(m10.latency_time < 0.1 * m10.bw_time);
    /* §3: "without wraparound (e.g. v5e axis of 4) edge shards need X-1 hops" */
    pc_coll_cost l4 = coll(v5e, "4x4", 1, 0, -1, PC_COLL_ALLGATHER, 1);
    check_rel(l4.latency_time, 3e-6, 1e-12, "scaling_book.md §3: X-1 hops without wraparound");
    pc_coll_cost l4w = coll(v5e, "4x4", 1, 0, 1, PC_COLL_ALLGATHER, 1);
    check_rel(l4w.latency_time, 2e-6, 1e-12, "scaling_book.md §3: X/2 hops with wraparound");
    /* §7: "latency-bound collectives: bytes per shard / 4.5e10 < 1 us; 8-way Megatron -> buffers
     * < 360 kB" (total over 8 shards of 45 kB) */
    check_rel(8 * 4.5e10 * 1e-6, 360e3, 1e-12, "scaling_book.md §7: 8-way latency bound 360 kB");
    pc_chipdb_free(db);
}

static void test_tpu_alltoall(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5e = chip(db, "v5e");
    const double V = 1e9, W = 9e10;
    /* §3: AllToAll on a bidirectional 1-D ring: V/(4 W_ici) = 1/4 of an AllGather */
    check_rel(coll(v5e, "16", 1, 0, -1, PC_COLL_ALLTOALL, V).time, V / (4 * W), 1e-12,
              "scaling_book.md §3: AllToAll V/(4 W_ici)");
    /* unidirectional ring (no wraparound): 1/2 of an AllGather */
    check_rel(coll(v5e, "8x16", 1, 0, -1, PC_COLL_ALLTOALL, V).bw_time, V / (2 * W), 1e-12,
              "scaling_book.md §3: AllToAll without wraparound V/(2 W_ici)");
    /* ND torus A x B: T = V max(A, B) / (4 N W_ici) */
    check_rel(coll(v5e, "16x16", 3, 0, -1, PC_COLL_ALLTOALL, V).bw_time, V * 16 / (4 * 256 * W),
              1e-12, "scaling_book.md §3: ND-torus AllToAll V max(A,B)/(4 N W)");
    pc_chipdb_free(db);
}

static void test_tpu_wraparound_rules(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5p = chip(db, "v5p"), *v5e = chip(db, "v5e"), *v4 = chip(db, "v4");
    pc_error e;
    /* §1: v4/v5p wraparound only for whole multiples of a 4x4x4 cube (4x4x4, 4x4x8);
     * 2x2x1, 2x2x4 have none; v5e/v6e wrap only on axes of 16 (an 8x16 wraps on the 16 axis) */
    const struct {
        const pc_chip *c;
        const char *mesh;
        int wrap[3];
    } cases[] = {{v5p, "4x4x4", {1, 1, 1}}, {v5p, "4x4x8", {1, 1, 1}}, {v4, "16x16x16", {1, 1, 1}},
                 {v5p, "2x2x1", {0, 0, 0}}, {v5p, "2x2x4", {0, 0, 0}}, {v5p, "16x16", {0, 0, 0}},
                 {v5e, "8x16", {0, 1, 0}},  {v5e, "16x16", {1, 1, 0}}, {v5e, "4x4", {0, 0, 0}}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pc_mesh m;
        assert_int_equal(pc_mesh_parse(cases[i].mesh, &m, &e), PC_OK);
        assert_int_equal(pc_mesh_check(cases[i].c, &m, &e), PC_OK);
        for (int d = 0; d < m.ndims; d++)
            if (m.wrap[d] != cases[i].wrap[d]) {
                print_error("%s %s axis %d: wrap %d, expected %d\n", cases[i].c->name,
                            cases[i].mesh, d, m.wrap[d], cases[i].wrap[d]);
                fail();
            }
    }
    /* meshes that do not fit: messages say what to change */
    pc_mesh m;
    assert_int_equal(pc_mesh_parse("32x32", &m, &e), PC_OK);
    assert_int_equal(pc_mesh_check(v5e, &m, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "in the mesh's dcn_mask"));
    assert_null(strstr(e.msg, "--")); /* library messages name no CLI flags */
    assert_int_equal(pc_mesh_parse("4x4x4", &m, &e), PC_OK);
    assert_int_equal(pc_mesh_check(v5e, &m, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "2-D torus"));
    assert_int_equal(pc_mesh_parse("16x20x28", &m, &e), PC_OK);
    assert_int_equal(pc_mesh_check(v5p, &m, &e), PC_OK); /* the full 8960-chip pod */
    assert_int_equal(pc_mesh_parse("28x20x16", &m, &e), PC_OK);
    assert_int_equal(pc_mesh_check(v5p, &m, &e), PC_OK); /* any axis order */
    assert_int_equal(pc_mesh_parse("32x16x16", &m, &e), PC_OK);
    assert_int_equal(pc_mesh_check(v5p, &m, &e), PC_ERR_ARG);
    assert_int_equal(pc_mesh_parse("2x16x16", &m, &e), PC_OK);
    m.dcn_mask = 1;
    assert_int_equal(pc_mesh_check(v5e, &m, &e), PC_OK); /* two v5e pods over DCN */
    assert_int_equal(pc_mesh_check(chip(db, "h100"), &m, &e), PC_ERR_ARG);
    assert_int_equal(pc_mesh_parse("16xx16", &m, &e), PC_ERR_ARG);
    assert_int_equal(pc_mesh_parse("0x16", &m, &e), PC_ERR_ARG);
    assert_int_equal(pc_mesh_parse("", &m, &e), PC_ERR_ARG);
    /* collective over no axis / a missing axis */
    assert_int_equal(pc_mesh_parse("16x16", &m, &e), PC_OK);
    assert_int_equal(pc_mesh_check(v5e, &m, &e), PC_OK);
    pc_coll_cost r;
    assert_int_equal(pc_collective_cost(v5e, &m, 0, PC_COLL_ALLGATHER, 1, &r, &e), PC_ERR_ARG);
    assert_int_equal(pc_collective_cost(v5e, &m, 4, PC_COLL_ALLGATHER, 1, &r, &e), PC_ERR_ARG);
    assert_int_equal(pc_collective_cost(v5e, &m, 1, PC_COLL_ALLGATHER, -1, &r, &e), PC_ERR_ARG);
    pc_chipdb_free(db);
}

static void test_dcn(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *v5p = chip(db, "v5p");
    /* §5: pure DP across slices over DCN: per-chip AllReduce of V bytes over S slices costs
     * 2 V (S-1)/S / W_dcn (W_dcn = 6.25e9 per chip) */
    const double V = 1e9;
    pc_coll_cost r = coll(v5p, "2x16x16x16", 1, 1, -1, PC_COLL_ALLREDUCE, V);
    check_rel(r.bw_time, 2 * V * 0.5 / 6.25e9, 1e-12, "scaling_book.md §5: DCN AllReduce");
    assert_string_equal(r.network, "DCN");
    /* hierarchical: gather over ICI and DCN = DCN gather of V/n_ici + ICI gather of V */
    pc_coll_cost h = coll(v5p, "2x16x16x16", 3, 1, -1, PC_COLL_ALLGATHER, V);
    pc_coll_cost i1 = coll(v5p, "2x16x16x16", 2, 1, -1, PC_COLL_ALLGATHER, V);
    check_rel(h.bw_time, i1.bw_time + V / 16 * 0.5 / 6.25e9, 1e-12, "ICI+DCN AllGather");
    assert_string_equal(h.network, "ICI+DCN");
    pc_chipdb_free(db);
}

static void test_gpu_collectives(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    const pc_chip *h100 = chip(db, "h100"), *b200 = chip(db, "b200");
    const double V = 1e9;
    /* §5 GPU: "AG/RS in a node: bytes (N-1)/(N W_gpu_egress) ~ bytes/450e9 (H100), /900e9 (B200)"
     */
    pc_coll_cost r = coll(h100, "8", 1, 0, -1, PC_COLL_ALLGATHER, V);
    check_rel(r.bw_time, V * 7 / (8 * 450e9), 1e-12, "scaling_book.md §5: H100 node AllGather");
    check_rel(V / r.bw_time, 514e9, 0.001, "scaling_book.md §5: node level 514 GB/s");
    assert_string_equal(r.network, "NVLink");
    check_rel(coll(b200, "8", 1, 0, -1, PC_COLL_ALLGATHER, V).bw_time, V * 7 / (8 * 900e9), 1e-12,
              "scaling_book.md §5: B200 node AllGather");
    /* "AllReduce 2x" */
    check_rel(coll(h100, "8", 1, 0, -1, PC_COLL_ALLREDUCE, V).bw_time, 2 * r.bw_time, 1e-12,
              "scaling_book.md §5: node AllReduce 2x AllGather");
    /* "Precise AllGather bandwidth = min over levels of D_i W_i/(D_i-1): node 514 GB/s, leaf 413
     * GB/s -> 413 GB/s" (a 32-node scalable unit, 256 GPUs) */
    pc_coll_cost su = coll(h100, "32x8", 3, 0, -1, PC_COLL_ALLGATHER, V);
    check_rel(V / su.bw_time, 413e9, 0.001, "scaling_book.md §5: SuperPod AllGather 413 GB/s");
    assert_int_equal(su.nodes, 32);
    assert_string_equal(su.network, "NVLink+IB");
    /* "Beyond node: AG/RS ~ bytes / W_node_egress (400e9 on H100 DGX)" */
    pc_coll_cost many = coll(h100, "512x8", 3, 0, -1, PC_COLL_ALLGATHER, V);
    check_rel(many.bw_time, V / 400e9, 0.003, "scaling_book.md §5: AllGather beyond a node");
    /* one GPU per node (outer axis): each GPU's own 50 GB/s NIC */
    pc_coll_cost outer = coll(h100, "16x8", 1, 0, -1, PC_COLL_ALLGATHER, V);
    check_rel(outer.bw_time, V * 15 / 16 / 50e9, 1e-12, "AllGather across nodes on one NIC");
    assert_string_equal(outer.network, "IB");
    /* "AllToAll in node: B (N-1)/(W N^2) ~ B/(8W)" */
    check_rel(coll(h100, "8", 1, 0, -1, PC_COLL_ALLTOALL, V).bw_time, V * 7 / (450e9 * 64), 1e-12,
              "scaling_book.md §5: node AllToAll B(N-1)/(W N^2)");
    /* "across M nodes ~ B/(M W_node)": perfcast's exact form has (M-1)/M of it, 1.6% less at
     * M = 64 */
    check_rel(coll(h100, "64x8", 3, 0, -1, PC_COLL_ALLTOALL, V).bw_time, V / (64 * 400e9), 0.016,
              "scaling_book.md §5: AllToAll across M nodes ~ B/(M W_node)");
    /* NVL72: 72 GPUs in one NVLink domain */
    pc_coll_cost nvl = coll(chip(db, "gb200"), "72", 1, 0, -1, PC_COLL_ALLGATHER, V);
    assert_string_equal(nvl.network, "NVLink");
    check_rel(nvl.bw_time, V * 71 / (72 * 900e9), 1e-12, "NVL72 AllGather inside the domain");
    pc_chipdb_free(db);
}

/* ---- transformer math (§4, §6, §7) -------------------------------------- */

static void test_llama3_70b(void **state) {
    (void)state;
    pc_tfm_cfg m = preset("llama3-70b");
    pc_param_counts p;
    pc_tfm_params(&m, &p);
    /* §6: "FFW 56.3e9, vocab 2.1e9, attention 12e9, total ~ 70.4e9 (exact formula 70.55e9)" */
    check_rel(p.mlp, 56.3e9, 0.002, "scaling_book.md §6: LLaMA-3 70B FFW params 56.3e9");
    check_rel(p.embedding + p.unembedding, 2.1e9, 0.003, "scaling_book.md §6: vocab params 2.1e9");
    check_rel(p.attention, 12e9, 0.007, "scaling_book.md §6: attention params 12e9");
    check_rel(p.total, 70.55e9, 0.0002, "scaling_book.md §6: LLaMA-3 70B total 70.55e9");
    assert_true(p.total == 70553706496.0); /* HF model card: 70,553,706,496 */
    /* §6: "FLOPs/token = 6 * 70e9 = 4.2e11; 15T tokens -> 6.3e24; full v5p pod at 40% MFU ->
     * 3.8e6 s ~ 44 days" */
    pc_flop_counts f;
    pc_tfm_flops(&m, 0, 0, PC_REMAT_NONE, &f);
    check_rel(f.six_n, 4.2e11, 0.008, "scaling_book.md §6: 6N = 4.2e11 FLOPs/token");
    check_rel(f.train, 4.2e11, 0.008, "scaling_book.md §6: 6 x matmul params (T -> 0)");
    double total = f.six_n * 15e12;
    check_rel(total, 6.3e24, 0.008, "scaling_book.md §6: 15T tokens -> 6.3e24 FLOPs");
    /* (44.7 days from the exact 70.55e9 params; the book's 6 * 70e9 gives 44.3) */
    check_rel(total / (8960 * 4.59e14 * 0.4) / 86400, 44, 0.02,
              "scaling_book.md §6: full v5p pod at 40% MFU ~ 44 days");
    /* gpus.md quiz: "4096 H100 at 45% MFU -> 3.5e6 s ~ 40 days"; "weights + Adam >= 700 GB ->
     * >= 9 H100s" */
    check_rel(total / (4096 * 9.89e14 * 0.45), 3.5e6, 0.02,
              "scaling_book.md §6: 4096 H100 at 45% MFU ~ 3.5e6 s");
    assert_int_equal((int)ceil(p.total * 10 / 80e9), 9);
    /* §6: memory at a 4M-token batch with 4 bf16 checkpoints/layer: params 140 GB, optimizer
     * 560 GB, checkpoints 2*8192*4e6*4*80 ~ 20.9 TB, total ~ 21.6 TB -> >= 225 v5p chips.
     * perfcast's total also counts bf16 gradients (+141 GB); without them it is the book's. */
    pc_mem_opts mo = pc_mem_opts_default();
    mo.tokens = 4e6;
    mo.remat = PC_REMAT_TENSORS;
    mo.remat_tensors = 4;
    pc_train_memory mem;
    pc_error e;
    assert_int_equal(pc_tfm_memory(&m, &mo, &mem, &e), PC_OK);
    /* (the book rounds params to 70e9: perfcast's 70.55e9 gives 0.8% more) */
    check_rel(mem.weights, 140e9, 0.01, "scaling_book.md §6: bf16 params 140 GB");
    check_rel(mem.optimizer, 560e9, 0.01, "scaling_book.md §6: Adam state 560 GB");
    check_rel(mem.activations, 20.9e12, 0.004, "scaling_book.md §6: checkpoints 20.9 TB");
    double book_total = mem.total - mem.grads;
    check_rel(book_total, 21.6e12, 0.005, "scaling_book.md §6: total 21.6 TB (no gradients)");
    check_rel(mem.grads, 141.1e9, 0.001, "bf16 gradients perfcast adds to the total");
    check_rel(book_total / 96e9, 225, 0.005, "scaling_book.md §6: >= 225 v5p chips");
    /* §7: KV bytes per token 2 L K H: int8 163,840 B (book "160kB"), bf16 327,680 */
    assert_true(pc_tfm_kv_bytes_per_token(&m, PC_PREC_INT8) == 163840.0);
    assert_true(pc_tfm_kv_bytes_per_token(&m, PC_PREC_BF16) == 327680.0);
    /* "32k seq -> 5.3 GB; batch 240 -> 1.3 TB" */
    double seq32k = pc_tfm_kv_bytes_per_token(&m, PC_PREC_INT8) * 32768;
    check_rel(seq32k, 5.3e9, 0.015, "scaling_book.md §7: 32k-token int8 KV cache 5.3 GB");
    check_rel(seq32k * 240, 1.3e12, 0.01, "scaling_book.md §7: batch 240 -> 1.3 TB");
    /* applied-inference: batch 32 x 8192 ctx int8 KV = 41.9 GB, from "160kB" = 160,000 B/token;
     * the exact 163,840 B gives 42.9 GB (+2.5%) */
    check_rel(pc_tfm_kv_bytes_per_token(&m, PC_PREC_INT8) * 8192 * 32, 41.9e9, 0.026,
              "scaling_book.md §7: LLaMA-3 70B batch-32 KV 41.9 GB");
    /* §7: "Prefill 8192 tokens on 16 v5e at 40% MFU ~ 0.91 s" (2 * params FLOPs per token) */
    check_rel(f.six_n / 3 * 8192 / (16 * 1.97e14 * 0.4), 0.91, 0.01,
              "scaling_book.md §7: 8192-token prefill on 16 v5e ~ 0.91 s");
}

static void test_llama2_13b(void **state) {
    (void)state;
    pc_tfm_cfg m = preset("llama2-13b");
    pc_param_counts p;
    pc_tfm_params(&m, &p);
    /* §6: "8.5e9 FFW + 4.2e9 attn + 0.33e9 vocab = 13.0e9" */
    check_rel(p.mlp, 8.5e9, 0.002, "scaling_book.md §6: LLaMA-2 13B FFW 8.5e9");
    check_rel(p.attention, 4.2e9, 0.003, "scaling_book.md §6: LLaMA-2 13B attention 4.2e9");
    check_rel(p.embedding + p.unembedding, 0.33e9, 0.01, "scaling_book.md §6: vocab 0.33e9");
    check_rel(p.total, 13.0e9, 0.002, "scaling_book.md §6: LLaMA-2 13B total 13.0e9");
    /* "16M batch: params + Adam 130 GB" (10 bytes/param) */
    pc_mem_opts mo = pc_mem_opts_default();
    pc_train_memory mem;
    pc_error e;
    mo.tokens = 16e6;
    mo.remat = PC_REMAT_TENSORS;
    mo.remat_tensors = (5120.0 + 2 * 13824) / 5120; /* "3 checkpoints/layer: 2 L B (D + 2F)" */
    assert_int_equal(pc_tfm_memory(&m, &mo, &mem, &e), PC_OK);
    check_rel(mem.weights + mem.optimizer, 130e9, 0.002, "scaling_book.md §6: params+Adam 130 GB");
    check_rel(mem.activations, 42e12, 0.003, "scaling_book.md §6: activations 42 TB");
    /* §7: "LLaMA-2 13B (MHA) 8192-token seq bf16 = 6.7 GB" */
    double kv_seq = pc_tfm_kv_bytes_per_token(&m, PC_PREC_BF16) * 8192;
    check_rel(kv_seq, 6.7e9, 0.002, "scaling_book.md §7: LLaMA-2 13B 8k KV 6.7 GB");
    /* §7: on 8x v5e (6.56e12 B/s): step = B KV/BW + max(2 B N/C, N bytes/BW):
     * batch 1 -> 4.98 ms, 240 -> 249.09 ms (963.5 tok/s); with 8 KV heads 4.17 ms at batch 1 */
    const double bw = 8 * 8.2e11, C = 8 * 1.97e14;
    double step1 = kv_seq / bw + fmax(2 * p.total / C, 2 * p.total / bw);
    check_rel(step1, 4.98e-3, 0.003, "scaling_book.md §7: LLaMA-2 13B decode step, batch 1");
    double step240 = 240 * kv_seq / bw + fmax(2 * 240 * p.total / C, 2 * p.total / bw);
    check_rel(step240, 249.09e-3, 0.003, "scaling_book.md §7: decode step, batch 240");
    check_rel(240 / step240, 963.5, 0.003, "scaling_book.md §7: 963.5 tokens/s at batch 240");
    m.kv_heads = 8;
    double kv8 = pc_tfm_kv_bytes_per_token(&m, PC_PREC_BF16) * 8192;
    check_rel(kv8 / bw + 2 * p.total / bw, 4.17e-3, 0.003,
              "scaling_book.md §7: 8 KV heads -> 4.17 ms at batch 1");
}

static void test_invented_model(void **state) {
    (void)state;
    /* §7 quizzes: L=64, D=4096, F=16384, N=32, K=8, H=256, V=32,128, tied: 18.4e9 params; KV
     * 262 kB/token int8; full param load (int8) on v5e 4x4 1.4 ms; as MoE E=16, k=2: 212e9 total,
     * 31.2e9 active */
    pc_tfm_cfg m = {.name = "invented",
                      .layers = 64,
                      .d_model = 4096,
                      .d_ff = 16384,
                      .heads = 32,
                      .kv_heads = 8,
                      .head_dim = 256,
                      .vocab = 32128,
                      .tied = 1,
                      .gated = 1};
    pc_error e;
    assert_int_equal(pc_tfm_check(&m, &e), PC_OK);
    pc_param_counts p;
    pc_tfm_params(&m, &p);
    check_rel(p.total, 18.4e9, 0.002, "scaling_book.md §7: invented model 18.4e9 params");
    check_rel(pc_tfm_kv_bytes_per_token(&m, PC_PREC_INT8), 262e3, 0.001,
              "scaling_book.md §7: invented model KV 262 kB/token int8");
    pc_chipdb *db = db_open();
    pc_op load = pc_op_init(PC_OP_RAW);
    load.bytes = p.total / 16; /* int8 weights over 16 chips */
    check_rel(roof(chip(db, "v5e"), &load, 0).time, 1.4e-3, 0.005,
              "scaling_book.md §7: full int8 param load on v5e 4x4 1.4 ms");
    pc_chipdb_free(db);
    m.experts = 16;
    m.experts_per_token = 2;
    assert_int_equal(pc_tfm_check(&m, &e), PC_OK);
    pc_tfm_params(&m, &p);
    check_rel(p.total, 212e9, 0.002, "scaling_book.md §7: MoE E=16 total 212e9");
    check_rel(p.active, 31.2e9, 0.004, "scaling_book.md §7: MoE k=2 active 31.2e9");
    /* §4: "MoE: params x E, FLOPs x k": 6N uses active params */
    pc_flop_counts f;
    pc_tfm_flops(&m, 0, 0, PC_REMAT_NONE, &f);
    check_rel(f.six_n, 6 * p.active, 1e-12, "scaling_book.md §4: MoE FLOPs use active params");
}

static void test_kv_and_memory_rules(void **state) {
    (void)state;
    pc_error e;
    /* §4: "8k ctx, 64 layers, K*H = 8192, int8 -> 8 GiB per sequence" */
    pc_tfm_cfg m = {.layers = 64,
                      .d_model = 8192,
                      .d_ff = 32768,
                      .heads = 64,
                      .kv_heads = 64,
                      .vocab = 32000,
                      .gated = 1};
    assert_int_equal(pc_tfm_check(&m, &e), PC_OK);
    check_rel(pc_tfm_kv_bytes_per_token(&m, PC_PREC_INT8) * 8192, 8.0 * (1 << 30), 1e-12,
              "scaling_book.md §4: KV cache 8 GiB per 8k sequence");
    /* §4: "training memory: bf16 params + fp32 Adam = 10 bytes/param; pure-DP limit HBM/10,
     * v5p ~ 9B" */
    pc_mem_opts mo = pc_mem_opts_default();
    pc_train_memory mem;
    assert_int_equal(pc_tfm_memory(&m, &mo, &mem, &e), PC_OK);
    pc_param_counts p;
    pc_tfm_params(&m, &p);
    check_rel((mem.weights + mem.optimizer) / p.total, 10, 1e-12,
              "scaling_book.md §4: 10 bytes per parameter");
    check_rel(96e9 / 10, 9e9, 0.07, "scaling_book.md §4: v5p pure-DP limit ~9B params");
    /* §4: "activations without remat ~ 2*20*B*T*D*L bytes (B*T = 4M, L=64, D=8192 -> ~84 TB)":
     * perfcast lists the saved tensors; for a gated MLP with F=4D, MHA it keeps 4D + 2D + 2D +
     * N + 4F = 24 D + N per layer (the book's ~20 is its round figure) */
    mo.tokens = 4e6;
    assert_int_equal(pc_tfm_memory(&m, &mo, &mem, &e), PC_OK);
    check_rel(mem.activations, 84e12, 0.21, "scaling_book.md §4: ~84 TB without remat");
    check_rel(mem.act_elems_per_token_layer, 24 * 8192 + 64, 1e-12, "saved tensors, no remat");
    /* LLaMA-3 70B keeps 20.25 D per layer: the book's ~20 */
    pc_tfm_cfg l70 = preset("llama3-70b");
    assert_int_equal(pc_tfm_memory(&l70, &mo, &mem, &e), PC_OK);
    check_rel(mem.act_elems_per_token_layer / 8192, 20, 0.015,
              "scaling_book.md §4: ~20 saved D-sized tensors per layer");
    /* "Block remat (save only layer input) -> ~4.2 TB" */
    mo.remat = PC_REMAT_FULL;
    assert_int_equal(pc_tfm_memory(&m, &mo, &mem, &e), PC_OK);
    check_rel(mem.activations, 4.2e12, 0.003, "scaling_book.md §4: block remat ~4.2 TB");
    /* '"Big matmuls only" policy: ~7 saved tensors per layer instead of ~20' (q, k, v, o, gate,
     * up, down outputs) */
    mo.remat = PC_REMAT_BIG_MATMULS;
    assert_int_equal(pc_tfm_memory(&l70, &mo, &mem, &e), PC_OK);
    double units = mem.act_elems_per_token_layer;
    check_rel(units, 8192 + 2 * 1024 + 8192 + 2 * 28672 + 8192, 1e-12,
              "scaling_book.md §4: big-matmuls policy keeps the 7 matmul outputs");
    /* "FLOPs rise from 6N to ~8N per token" with block remat */
    pc_flop_counts f;
    pc_tfm_flops(&m, 0, 0, PC_REMAT_FULL, &f);
    check_rel(f.train_remat / f.train, 8.0 / 6.0, 1e-12, "scaling_book.md §4: block remat 8N");
}

static void test_attention_flops(void **state) {
    (void)state;
    /* §4: attention/matmul train FLOPs = T/(8D) for gated F=4D, D=NH, N=K; attention dominates
     * when T > 8D (D = 8k -> ~64k tokens) */
    pc_tfm_cfg m = {.layers = 10,
                      .d_model = 8192,
                      .d_ff = 4 * 8192,
                      .heads = 64,
                      .kv_heads = 64,
                      .vocab = 1,
                      .gated = 1};
    pc_error e;
    assert_int_equal(pc_tfm_check(&m, &e), PC_OK);
    pc_param_counts p;
    pc_tfm_params(&m, &p);
    for (double T = 4096; T <= 65536 * 2; T *= 4) {
        pc_flop_counts f;
        pc_tfm_flops(&m, T, 0, PC_REMAT_NONE, &f);
        double attn = 3 * f.attention_fwd;
        double mm = 6 * (p.matmul_active - p.embedding); /* the book's ratio leaves out vocab */
        check_rel(attn / mm, T / (8 * 8192), 1e-12,
                  "scaling_book.md §4: attention/matmul FLOPs = T/(8D)");
        /* "Dot-product attention train FLOPs 12 B T S N H" per layer */
        check_rel(attn, 12 * T * 64 * 128 * 10, 1e-12, "scaling_book.md §4: 12 T N H per layer");
    }
    /* §4: per layer, gated MLP, GQA: MLP params 3DF, attention 2D(N+K)H */
    pc_tfm_cfg g = preset("llama3-8b");
    pc_tfm_params(&g, &p);
    check_rel(p.mlp, 32 * 3.0 * 4096 * 14336, 1e-12, "scaling_book.md §4: MLP params 3DF");
    check_rel(p.attention, 32 * 2.0 * 4096 * (32 + 8) * 128, 1e-12,
              "scaling_book.md §4: attention params 2D(N+K)H");
    /* causal halves the attention term */
    pc_flop_counts a, b;
    pc_tfm_flops(&g, 8192, 0, PC_REMAT_NONE, &a);
    pc_tfm_flops(&g, 8192, 1, PC_REMAT_NONE, &b);
    check_rel(b.attention_fwd, a.attention_fwd / 2, 1e-12, "causal mask halves attention");
}

static void test_presets_public_counts(void **state) {
    (void)state;
    /* Not from the book: the models' published parameter counts (HF model cards/configs). */
    const struct {
        const char *name;
        double total, active;
    } cases[] = {{"gpt2", 124439808.0, 124439808.0},
                 {"llama3-8b", 8030261248.0, 8030261248.0},
                 {"llama3-405b", 405853388800.0, 405853388800.0},
                 {"mistral-7b", 7241732096.0, 7241732096.0},
                 {"mixtral-8x7b", 46702792704.0, 12879925248.0},
                 {"gemma-7b", 8537680896.0, 8537680896.0},
                 {"gpt2-xl", 1557611200.0, 1557611200.0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pc_tfm_cfg m = preset(cases[i].name);
        pc_param_counts p;
        pc_tfm_params(&m, &p);
        char what[96];
        snprintf(what, sizeof what, "%s published parameter count", cases[i].name);
        check_rel(p.total, cases[i].total, 0, what);
        check_rel(p.active, cases[i].active, 0, what);
    }
    pc_tfm_cfg m;
    pc_error e;
    assert_int_equal(pc_tfm_preset("llama9", &m, &e), PC_ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "llama3-8b"));
}

/* ---- HF config.json ----------------------------------------------------- */

static const char LLAMA3_8B[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, "
    "\"bos_token_id\": 128000, \"hidden_act\": \"silu\", \"hidden_size\": 4096, "
    "\"intermediate_size\": 14336, \"max_position_embeddings\": 8192, \"model_type\": \"llama\", "
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
    "\"rms_norm_eps\": 1e-05, \"rope_theta\": 500000.0, \"tie_word_embeddings\": false, "
    "\"torch_dtype\": \"bfloat16\", \"vocab_size\": 128256}";

static const char GPT2[] =
    "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], "
    "\"model_type\": \"gpt2\", \"n_ctx\": 1024, \"n_embd\": 768, \"n_head\": 12, "
    "\"n_inner\": null, \"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 50257}";

static const char MIXTRAL[] =
    "{\"model_type\": \"mixtral\", \"hidden_size\": 4096, \"intermediate_size\": 14336, "
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
    "\"num_local_experts\": 8, \"num_experts_per_tok\": 2, \"vocab_size\": 32000, "
    "\"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\"}";

static const char GEMMA[] =
    "{\"model_type\": \"gemma\", \"head_dim\": 256, \"hidden_size\": 3072, "
    "\"intermediate_size\": 24576, \"num_attention_heads\": 16, \"num_hidden_layers\": 28, "
    "\"num_key_value_heads\": 16, \"vocab_size\": 256000}";

/* Qwen2-0.5B's published config (tied, q/k/v biases) */
static const char QWEN2[] =
    "{\"model_type\": \"qwen2\", \"hidden_size\": 896, \"intermediate_size\": 4864, "
    "\"num_attention_heads\": 14, \"num_hidden_layers\": 24, \"num_key_value_heads\": 2, "
    "\"tie_word_embeddings\": true, \"vocab_size\": 151936, \"torch_dtype\": \"bfloat16\"}";

static void test_hf_configs(void **state) {
    (void)state;
    pc_tfm_cfg m, ref;
    pc_error e;
    pc_param_counts p, pr;
    assert_int_equal(pc_tfm_from_hf_json(LLAMA3_8B, strlen(LLAMA3_8B), "llama.json", &m, &e),
                     PC_OK);
    ref = preset("llama3-8b");
    pc_tfm_params(&m, &p);
    pc_tfm_params(&ref, &pr);
    assert_true(p.total == pr.total && m.kv_heads == 8 && m.head_dim == 128 && !m.tied);
    assert_int_equal(m.weight_prec, PC_PREC_BF16);
    assert_int_equal(pc_tfm_from_hf_json(GPT2, strlen(GPT2), "gpt2.json", &m, &e), PC_OK);
    pc_tfm_params(&m, &p);
    check_rel(p.total, 124439808.0, 0, "gpt2 config.json: 124,439,808 parameters");
    assert_true(m.tied && !m.gated && m.layernorm && m.d_ff == 3072 && m.positions == 1024);
    assert_int_equal(pc_tfm_from_hf_json(MIXTRAL, strlen(MIXTRAL), "mixtral.json", &m, &e),
                     PC_OK);
    pc_tfm_params(&m, &p);
    check_rel(p.total, 46702792704.0, 0, "mixtral config.json total");
    check_rel(p.active, 12879925248.0, 0, "mixtral config.json active");
    assert_int_equal(pc_tfm_from_hf_json(GEMMA, strlen(GEMMA), "gemma.json", &m, &e), PC_OK);
    pc_tfm_params(&m, &p);
    check_rel(p.total, 8537680896.0, 0, "gemma config.json total (tied by default)");
    assert_int_equal(pc_tfm_from_hf_json(QWEN2, strlen(QWEN2), "qwen2.json", &m, &e), PC_OK);
    pc_tfm_params(&m, &p);
    check_rel(p.total, 494032768.0, 0, "Qwen2-0.5B published count 494,032,768");
    assert_true(m.qkv_bias && m.tied);
    /* errors say which field to change */
    const char *bad_heads = "{\"model_type\": \"llama\", \"hidden_size\": 4096, "
                            "\"intermediate_size\": 100, \"num_attention_heads\": 30, "
                            "\"num_hidden_layers\": 2, \"vocab_size\": 10}";
    assert_int_equal(pc_tfm_from_hf_json(bad_heads, strlen(bad_heads), "x.json", &m, &e),
                     PC_ERR_INVALID);
    assert_non_null(strstr(e.msg, "does not divide"));
    assert_non_null(strstr(e.msg, "head_dim"));
    const char *bad_kv =
        "{\"model_type\": \"llama\", \"hidden_size\": 4096, "
        "\"intermediate_size\": 100, \"num_attention_heads\": 32, "
        "\"num_key_value_heads\": 5, \"num_hidden_layers\": 2, \"vocab_size\": 10}";
    assert_int_equal(pc_tfm_from_hf_json(bad_kv, strlen(bad_kv), "x.json", &m, &e),
                     PC_ERR_INVALID);
    assert_non_null(strstr(e.msg, "kv_heads"));
    const char *missing = "{\"model_type\": \"llama\", \"hidden_size\": 4096}";
    assert_int_equal(pc_tfm_from_hf_json(missing, strlen(missing), "x.json", &m, &e),
                     PC_ERR_INVALID);
    assert_non_null(strstr(e.msg, "num_hidden_layers"));
    const char *neg = "{\"model_type\": \"llama\", \"hidden_size\": -5}";
    assert_int_equal(pc_tfm_from_hf_json(neg, strlen(neg), "x.json", &m, &e), PC_ERR_INVALID);
    const char *mla =
        "{\"model_type\": \"deepseek_v3\", \"kv_lora_rank\": 512, \"hidden_size\": 7168}";
    /* MLA is modelled (tests/unit/test_model_cfg.c); an incomplete config names what is missing */
    assert_int_equal(pc_tfm_from_hf_json(mla, strlen(mla), "x.json", &m, &e), PC_ERR_INVALID);
    assert_non_null(strstr(e.msg, "num_hidden_layers"));
    assert_int_equal(pc_tfm_from_hf_json("[1,2]", 5, "x.json", &m, &e), PC_ERR_FORMAT);
    assert_int_equal(pc_tfm_from_hf_json("{", 1, "x.json", &m, &e), PC_ERR_FORMAT);
    /* unknown model types are read llama-like, with a note */
    const char *odd =
        "{\"model_type\": \"weird\", \"hidden_size\": 64, \"intermediate_size\": 128, "
        "\"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 10, "
        "\"tie_word_embeddings\": false}";
    assert_int_equal(pc_tfm_from_hf_json(odd, strlen(odd), "x.json", &m, &e), PC_OK);
    assert_non_null(strstr(m.note, "unknown model_type"));
    /* MoE shape errors */
    pc_tfm_cfg bad = preset("mixtral-8x7b");
    bad.experts_per_token = 9;
    assert_int_equal(pc_tfm_check(&bad, &e), PC_ERR_INVALID);
    assert_non_null(strstr(e.msg, "experts_per_token"));
}

/* ---- chips JSON ---------------------------------------------------------- */

static void test_chips_json(void **state) {
    (void)state;
    pc_chipdb *db = db_open();
    pc_error e;
    int n0 = pc_chipdb_count(db);
    const char *ok = "{\"chips\": [{\"name\": \"v5e\", \"price_per_hour\": 1.0},"
                     " {\"name\": \"my-tpu\", \"base\": \"v5p\", \"hbm_bw\": 3e12,"
                     "  \"flops\": {\"fp8\": 9e14}, \"pod_shape\": [8, 8, 8]}]}";
    assert_int_equal(pc_chipdb_load_json(db, ok, strlen(ok), "mine.json", &e), PC_OK);
    assert_int_equal(pc_chipdb_count(db), n0 + 1);
    const pc_chip *v5e = chip(db, "v5e"), *mine = chip(db, "my-tpu");
    check_rel(v5e->price_per_hour, 1.0, 0, "override keeps other fields");
    check_rel(v5e->hbm_bw, 8.2e11, 0, "override keeps other fields");
    assert_non_null(strstr(v5e->source, "mine.json"));
    check_rel(mine->hbm_bw, 3e12, 0, "based chip field");
    check_rel(mine->flops[PC_PREC_BF16], 4.59e14, 0, "based chip keeps the base's numbers");
    check_rel(mine->flops[PC_PREC_FP8], 9e14, 0, "based chip adds fp8");
    assert_int_equal(mine->pod_shape[0], 8);
    /* failures leave the database unchanged and name the field */
    const char *bads[] = {
        "{\"chips\": [{\"name\": \"x\", \"base\": \"v5e\", \"hbm_bandwidth\": 1}]}",
        "{\"chips\": [{\"name\": \"v5e\", \"hbm_bw\": -1}]}",
        "{\"chips\": [{\"name\": \"v5e\", \"flops\": {\"bf17\": 1}}]}",
        "{\"chips\": [{\"name\": \"new\", \"hbm_bw\": 1e12}]}",
        "{\"chips\": [{\"name\": \"y\", \"base\": \"nope\"}]}",
        "{\"chips\": [{\"name\": \"v5e\", \"price_per_hour\": 9}, {\"hbm_bw\": 1}]}",
        "{\"chips\": 5}",
        "not json",
        ("{\"chips\": [{\"name\": \"g\", \"kind\": \"gpu\", \"flops\": {\"bf16\": 1e15}, "
         "\"hbm_bw\": 1e12, \"nvlink_domain\": 0}]}"),
    };
    const char *needles[] = {"hbm_bandwidth", "hbm_bw", "bf17", "FLOP/s",       "nope",
                             "name",          "chips",  "JSON", "nvlink_domain"};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        pc_status st = pc_chipdb_load_json(db, bads[i], strlen(bads[i]), "bad.json", &e);
        if (st == PC_OK) {
            print_error("accepted: %s\n", bads[i]);
            fail();
        }
        if (!strstr(e.msg, needles[i]) || !strstr(e.msg, "bad.json")) {
            print_error("message for %s: %s\n", bads[i], e.msg);
            fail();
        }
    }
    assert_int_equal(pc_chipdb_count(db), n0 + 1);
    check_rel(chip(db, "v5e")->price_per_hour, 1.0, 0, "failed load left the database unchanged");
    /* a user-defined GPU */
    const char *gpu = "[{\"name\": \"mi300x\", \"kind\": \"gpu\", \"flops\": {\"bf16\": 1.3e15},"
                      " \"hbm_bytes\": 192e9, \"hbm_bw\": 5.3e12, \"nvlink_bw\": 4.48e11,"
                      " \"nvlink_domain\": 8, \"ib_bw\": 5e10}]";
    assert_int_equal(pc_chipdb_load_json(db, gpu, strlen(gpu), "gpu.json", &e), PC_OK);
    pc_coll_cost r = coll(chip(db, "mi300x"), "8", 1, 0, -1, PC_COLL_ALLGATHER, 1e9);
    check_rel(r.bw_time, 1e9 * 7 / (8 * 4.48e11), 1e-12, "user GPU AllGather");
    pc_chipdb_free(db);
}

/* ---- op descriptions ----------------------------------------------------- */

static void test_ops_parse(void **state) {
    (void)state;
    pc_error e;
    const char *text = "# a layer\n"
                       "matmul m=8192 k=4096 n=14336 name=up count=2\n"
                       "  elementwise shape=8192x14336 inputs=2 flops=1\n"
                       "reduce shape=8192x4096 axis=1 dtype=fp32\n"
                       "transpose shape=4096x4096\n"
                       "gather table=128256x4096 indices=8192\n"
                       "conv input=32x56x56x64 kernel=3x3 out=64 stride=2\n"
                       "raw flops=1e12 bytes=4GB comm=1MiB\n"
                       "matmul shape=4x128x256x512 wdtype=int8\n";
    const char *json =
        "{\"ops\": [{\"kind\": \"matmul\", \"m\": 8192, \"k\": 4096, \"n\": 14336, \"name\": "
        "\"up\","
        " \"count\": 2}, {\"kind\": \"elementwise\", \"shape\": [8192, 14336]},"
        " {\"kind\": \"reduce\", \"shape\": [8192, 4096], \"axis\": 1, \"dtype\": \"fp32\"},"
        " {\"kind\": \"transpose\", \"shape\": [4096, 4096]},"
        " {\"kind\": \"gather\", \"table\": [128256, 4096], \"indices\": 8192},"
        " {\"kind\": \"conv\", \"input\": [32, 56, 56, 64], \"kernel\": [3, 3], \"out\": 64,"
        "  \"stride\": 2}, {\"kind\": \"raw\", \"flops\": 1e12, \"bytes\": \"4GB\","
        " \"comm\": \"1MiB\"}, {\"kind\": \"matmul\", \"wdtype\": \"int8\","
        " \"shape\": [4, 128, 256, 512]}]}";
    pc_op *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(pc_ops_parse(text, strlen(text), "ops.txt", &a, &na, &e), PC_OK);
    assert_int_equal(pc_ops_parse(json, strlen(json), "ops.json", &b, &nb, &e), PC_OK);
    assert_int_equal(na, 8);
    assert_int_equal(nb, 8);
    const double expect_flops[8] = {2 * 2.0 * 8192 * 4096 * 14336,
                                    8192.0 * 14336,
                                    8192.0 * 4096,
                                    0,
                                    0,
                                    2.0 * 32 * 28 * 28 * 64 * 64 * 9,
                                    1e12,
                                    2.0 * 4 * 128 * 256 * 512};
    const double expect_bytes[8] = {2 * 2.0 * (8192.0 * 4096 + 4096.0 * 14336 + 8192.0 * 14336),
                                    3 * 2.0 * 8192 * 14336,
                                    4 * (8192.0 * 4096 + 8192),
                                    2 * 2.0 * 4096 * 4096,
                                    8192.0 * 4096 * 2 * 2 + 8192 * 4,
                                    2 * (32.0 * 56 * 56 * 64 + 9.0 * 64 * 64 + 32.0 * 28 * 28 * 64),
                                    4e9,
                                    4 * (2.0 * 128 * 256 + 256.0 * 512 + 2.0 * 128 * 512)};
    for (size_t i = 0; i < 8; i++) {
        pc_cost ca, cb;
        assert_int_equal(pc_op_cost(&a[i], &ca, &e), PC_OK);
        assert_int_equal(pc_op_cost(&b[i], &cb, &e), PC_OK);
        check_rel(ca.flops, expect_flops[i], 1e-12, "op FLOPs (text)");
        check_rel(ca.bytes, expect_bytes[i], 1e-12, "op bytes (text)");
        check_rel(cb.flops, ca.flops, 0, "JSON op == text op (FLOPs)");
        check_rel(cb.bytes, ca.bytes, 0, "JSON op == text op (bytes)");
        check_rel(cb.comm_bytes, ca.comm_bytes, 0, "JSON op == text op (comm)");
    }
    assert_string_equal(a[0].name, "up");
    assert_string_equal(a[1].name, "op1");
    assert_int_equal(a[2].prec, PC_PREC_FP32);
    check_rel(a[6].comm_bytes, 1048576, 0, "comm=1MiB");
    pc_ops_free(a);
    pc_ops_free(b);
    /* errors name the line and the field */
    const struct {
        const char *text, *needle;
    } bad[] = {{"matmul m=1 k=2\n", "'n'"},
               {"matmul m=1 k=2 n=3 q=4\n", "unknown field 'q'"},
               {"softmax shape=2x2\n", "unknown op kind"},
               {"elementwise shape=2xx\n", "shape="},
               {"\n\nreduce shape=4x4 axis=3\n", "ops.txt:3"},
               {"matmul m=-1 k=2 n=3\n", "m=-1"},
               {"matmul m=1 k=2 n=3 dtype=fp64\n", "unknown dtype"},
               {"# nothing\n", "no ops"},
               {"[{\"m\": 1}]", "kind"},
               {"[{\"kind\": \"matmul\", \"m\": [1, \"x\"]}]", "array of sizes"},
               {"{\"ops\": 3}", "array of ops"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pc_op *o = NULL;
        size_t n = 0;
        pc_status st = pc_ops_parse(bad[i].text, strlen(bad[i].text), "ops.txt", &o, &n, &e);
        if (st == PC_OK || o != NULL || !strstr(e.msg, bad[i].needle)) {
            print_error("'%s': status %d, message '%s' (wanted '%s')\n", bad[i].text, st, e.msg,
                        bad[i].needle);
            fail();
        }
    }
}

static void test_parse_helpers(void **state) {
    (void)state;
    pc_error e;
    double v;
    const struct {
        const char *s;
        double v;
    } ok[] = {{"1GiB", 1073741824.0}, {"512MB", 512e6}, {"4e9", 4e9}, {"64k", 64e3},
              {"1.5 TB", -1},         {"2KiB", 2048},   {"0", 0},     {"10b", 10}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        pc_status st = pc_parse_bytes(ok[i].s, &v, &e);
        if (ok[i].v < 0) {
            assert_int_not_equal(st, PC_OK); /* spaces are not accepted */
            continue;
        }
        assert_int_equal(st, PC_OK);
        check_rel(v, ok[i].v, 0, ok[i].s);
    }
    const char *bad[] = {"", "GiB", "-1", "1XB", "nan", "inf", "1e400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_not_equal(pc_parse_bytes(bad[i], &v, &e), PC_OK);
    assert_int_equal(pc_prec_parse("bfloat16"), PC_PREC_BF16);
    assert_int_equal(pc_prec_parse("E4M3"), PC_PREC_FP8);
    assert_int_equal(pc_prec_parse("fp64"), -1);
    assert_int_equal(pc_coll_parse("all-gather"), PC_COLL_ALLGATHER);
    assert_int_equal(pc_coll_parse("psum"), PC_COLL_ALLREDUCE);
    assert_int_equal(pc_coll_parse("all_to_all"), PC_COLL_ALLTOALL);
    assert_int_equal(pc_coll_parse("broadcast"), -1);
    assert_int_equal(pc_remat_parse("block"), PC_REMAT_FULL);
    assert_int_equal(pc_remat_parse("dots"), PC_REMAT_BIG_MATMULS);
    unsigned mask = 0;
    double k = 0;
    assert_int_equal(pc_remat_parse_list("none,tensors:3", &mask, &k), 0);
    assert_int_equal(mask, (1u << PC_REMAT_NONE) | (1u << PC_REMAT_TENSORS));
    assert_true(k == 3);
    mask = 0;
    assert_int_equal(pc_remat_parse_list("all", &mask, &k), 0);
    assert_int_equal(mask,
                     (1u << PC_REMAT_NONE) | (1u << PC_REMAT_BIG_MATMULS) | (1u << PC_REMAT_FULL));
    mask = 0;
    assert_int_equal(pc_remat_parse_list("full,tensors:0", &mask, &k), -1);
    mask = 0;
    assert_int_equal(pc_remat_parse_list("tensors", &mask, &k), -1);
    mask = 0;
    assert_int_equal(pc_remat_parse_list("", &mask, &k), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_critical_intensities),
        cmocka_unit_test(test_pod_totals_and_prices),
        cmocka_unit_test(test_matmul_roofline),
        cmocka_unit_test(test_interchip_roofline),
        cmocka_unit_test(test_profiling_examples),
        cmocka_unit_test(test_tpu_allgather),
        cmocka_unit_test(test_tpu_latency_regime),
        cmocka_unit_test(test_tpu_alltoall),
        cmocka_unit_test(test_tpu_wraparound_rules),
        cmocka_unit_test(test_dcn),
        cmocka_unit_test(test_gpu_collectives),
        cmocka_unit_test(test_llama3_70b),
        cmocka_unit_test(test_llama2_13b),
        cmocka_unit_test(test_invented_model),
        cmocka_unit_test(test_kv_and_memory_rules),
        cmocka_unit_test(test_attention_flops),
        cmocka_unit_test(test_presets_public_counts),
        cmocka_unit_test(test_hf_configs),
        cmocka_unit_test(test_chips_json),
        cmocka_unit_test(test_ops_parse),
        cmocka_unit_test(test_parse_helpers),
        cmocka_unit_test(test_collective_book_convention),
        cmocka_unit_test(test_collective_permute),
        cmocka_unit_test(test_model_mfu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
