/*
 * Golden test (llm.c style): perfcast's models and losses against an
 * independent PyTorch twin (tests/golden/torch_twin.py, float64). The
 * reference files tests/golden/golden_<case>.npz come from
 * `/usr/bin/python3 tests/golden/make_golden.py` (see there for the keys;
 * golden_loss.npz, the losses alone, from make_loss_golden.py);
 * tests/scripts/test_golden_regen.py checks they still do.
 *
 * Per case: build the model from the file's options, copy the parameters in
 * by arena name, run forward, the combo loss and backward, and compare the
 * scores, the loss and every parameter gradient (max abs and max rel diff
 * printed per tensor); then run the same optimizer steps (zero grad,
 * forward, loss, backward, clip, AdamW) and compare the loss of each step.
 *
 * Tolerance (perfcast is float32, the twin float64): an element passes when
 * |c - r| <= GOLD_RTOL * |r| + GOLD_ATOL * max|r of that tensor| (the floor
 * keeps near-zero entries, whose relative error is pure rounding, from
 * failing); losses over the steps use STEP_RTOL.
 *
 * The data is found at $PC_TEST_DATA/../golden (PC_TEST_DATA is tests/data).
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

#include "gnn/gnn.h"
#include "perfcast/npz.h"

#define GOLD_RTOL 1e-4
#define GOLD_ATOL 1e-5
#define STEP_RTOL 1e-5

typedef struct gfile {
    pc_npz *z;
    char path[1024];
} gfile;

static void gopen(gfile *f, const char *name) {
    const char *data = getenv("PC_TEST_DATA");
    snprintf(f->path, sizeof f->path, "%s/../golden/golden_%s.npz", data ? data : "tests/data",
             name);
    pc_error err;
    pc_status st = pc_npz_open(f->path, &f->z, &err);
    if (st) fail_msg("%s: %s", f->path, err.msg);
}

/* Reads member key converted to dtype t; fails the test when absent. */
static void gread(gfile *f, const char *key, pc_dtype t, pc_array *a) {
    int i = pc_npz_find(f->z, key);
    if (i < 0) fail_msg("%s: no member %s", f->path, key);
    pc_error err;
    if (pc_npz_read(f->z, i, a, &err) || pc_array_convert(a, t, key, &err))
        fail_msg("%s: %s: %s", f->path, key, err.msg);
}

/* Compares c (float) with the reference r (double); prints and returns 1 if within tolerance. */
static int compare(const char *what, const float *c, const double *r, int64_t n, double *maxrel) {
    double rmax = 0.0, amax = 0.0, rel = 0.0;
    for (int64_t i = 0; i < n; i++) rmax = fmax(rmax, fabs(r[i]));
    int ok = 1;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)c[i] - r[i]);
        amax = fmax(amax, d);
        if (r[i] != 0.0) rel = fmax(rel, d / fabs(r[i]));
        else if (d > 0.0) rel = fmax(rel, d / fmax(rmax, 1e-30));
        if (!(d <= GOLD_RTOL * fabs(r[i]) + GOLD_ATOL * rmax)) {
            if (ok)
                print_message("  MISMATCH %s[%lld]: perfcast %.9g, torch %.9g\n", what,
                              (long long)i, (double)c[i], r[i]);
            ok = 0;
        }
    }
    print_message("  %-14s n=%-4lld max|ref| %.3e  max abs diff %.3e  max rel diff %.3e%s\n",
                  what, (long long)n, rmax, amax, rel, ok ? "" : "  FAIL");
    if (maxrel && rel > *maxrel) *maxrel = rel;
    return ok;
}

static void run_case(const char *name) {
    gfile f;
    gopen(&f, name);
    print_message("golden %s (%s)\n", name, f.path);
    pc_array meta = PC_ARRAY_INIT, x = PC_ARRAY_INIT, opc = PC_ARRAY_INIT, edges = PC_ARRAY_INIT,
             ids = PC_ARRAY_INIT, cfg = PC_ARRAY_INIT, y = PC_ARRAY_INIT, lcfg = PC_ARRAY_INIT,
             adam = PC_ARRAY_INIT, lrs = PC_ARRAY_INIT, sref = PC_ARRAY_INIT,
             lref = PC_ARRAY_INIT, stepref = PC_ARRAY_INIT;
    gread(&f, "meta", PC_DTYPE_I32, &meta);
    gread(&f, "x", PC_DTYPE_F32, &x);
    gread(&f, "opcode", PC_DTYPE_I32, &opc);
    gread(&f, "edges", PC_DTYPE_I32, &edges);
    gread(&f, "ids", PC_DTYPE_I32, &ids);
    gread(&f, "cfg", PC_DTYPE_F32, &cfg);
    gread(&f, "y", PC_DTYPE_F64, &y);
    gread(&f, "loss_cfg", PC_DTYPE_F64, &lcfg);
    gread(&f, "adam", PC_DTYPE_F64, &adam);
    gread(&f, "lrs", PC_DTYPE_F32, &lrs);
    gread(&f, "scores", PC_DTYPE_F64, &sref);
    gread(&f, "loss", PC_DTYPE_F64, &lref);
    gread(&f, "step_loss", PC_DTYPE_F64, &stepref);
    const int32_t *mt = meta.data;
    assert_int_equal(pc_array_count(&meta), 12);
    int layout = mt[0], F = mt[9], D = mt[10], steps = mt[11];
    pc_gnn_opts o = pc_gnn_opts_default(layout ? PC_KIND_LAYOUT : PC_KIND_TILE);
    o.hidden = mt[1];
    o.layers = mt[2];
    o.emb_dim = mt[3];
    o.num_opcodes = mt[4];
    o.pool = (pc_pool)mt[5];
    o.join = (pc_join)mt[6];
    o.act = (pc_act)mt[7];
    o.layernorm = mt[8];
    int n = (int)x.shape[0], K = (int)y.shape[0], nc = (int)pc_array_count(&ids);
    assert_int_equal(x.shape[1], F);
    assert_int_equal(pc_array_count(&sref), K);
    assert_int_equal(pc_array_count(&stepref), steps + 1);

    pc_error err;
    pc_gnn *m = NULL;
    assert_int_equal(pc_gnn_new(&o, F, D, 1, &m, &err), PC_OK);
    /* parameters by name; every arena tensor must be in the file and vice versa */
    int nfile = 0;
    for (int i = 0; i < pc_npz_count(f.z); i++)
        if (strncmp(pc_npz_key(f.z, i), "p.", 2) == 0) nfile++;
    assert_int_equal(nfile, m->params.count);
    for (int i = 0; i < m->params.count; i++) {
        const pc_param_info *t = &m->params.info[i];
        char key[PC_PARAM_NAME_MAX + 2];
        snprintf(key, sizeof key, "p.%s", t->name);
        pc_array a = PC_ARRAY_INIT;
        gread(&f, key, PC_DTYPE_F32, &a);
        if ((size_t)pc_array_count(&a) != t->numel) fail_msg("%s: %s has the wrong size", f.path, key);
        memcpy(pc_params_data(&m->params, i), a.data, t->numel * sizeof(float));
        pc_array_free(&a);
    }
    pc_csr csr = {0};
    assert_int_equal(pc_csr_build(&csr, edges.data, (int)edges.shape[0], n, &err), PC_OK);
    pc_gnn_graph g = {.n = n, .x = x.data, .opcode = opc.data, .csr = &csr, .nc = nc,
                        .cfg_ids = nc ? ids.data : NULL};
    const double *lc = lcfg.data;
    pc_loss_cfg loss_cfg = {.w_listmle = (float)lc[0], .w_hinge = (float)lc[1],
                            .w_mse = (float)lc[2], .listmle_temperature = (float)lc[3],
                            .hinge_margin = (float)lc[4], .hinge_temperature = (float)lc[5]};
    pc_gnn_ws *ws = pc_gnn_ws_new();
    assert_non_null(ws);
    float *s = calloc((size_t)K, sizeof(float)), *ds = calloc((size_t)K, sizeof(float));
    assert_true(s && ds);

    /* forward, loss, backward from the reference parameters */
    int ok = 1;
    double maxrel = 0.0;
    pc_params_zero_grad(&m->params);
    assert_int_equal(pc_gnn_forward(m, ws, &g, cfg.data, K, NULL, s, &err), PC_OK);
    double L = pc_loss_combo(ds, s, y.data, K, &loss_cfg, 1.0f, NULL);
    assert_int_equal(pc_gnn_backward(m, ws, ds, &err), PC_OK);
    ok &= compare("scores", s, sref.data, K, &maxrel);
    float Lf = (float)L;
    ok &= compare("loss", &Lf, lref.data, 1, &maxrel);
    double grel = 0.0;
    for (int i = 0; i < m->params.count; i++) {
        const pc_param_info *t = &m->params.info[i];
        char key[PC_PARAM_NAME_MAX + 2];
        snprintf(key, sizeof key, "g.%s", t->name);
        pc_array a = PC_ARRAY_INIT;
        gread(&f, key, PC_DTYPE_F64, &a);
        assert_int_equal((size_t)pc_array_count(&a), t->numel);
        ok &= compare(key, pc_params_grad(&m->params, i), a.data, (int64_t)t->numel, &grel);
        pc_array_free(&a);
    }
    print_message("  %s: max rel diff scores/loss %.3e, gradients %.3e\n", name, maxrel, grel);

    /* training steps: the same start, the same schedule */
    const double *ad = adam.data;
    pc_adam_cfg ac = pc_adam_cfg_default();
    ac.beta1 = (float)ad[0];
    ac.beta2 = (float)ad[1];
    ac.eps = (float)ad[2];
    ac.weight_decay = (float)ad[3];
    ac.decoupled = 1;
    const double *sr = stepref.data;
    double steprel = 0.0;
    for (int t = 0; t <= steps; t++) {
        pc_params_zero_grad(&m->params);
        memset(ds, 0, (size_t)K * sizeof(float));
        assert_int_equal(pc_gnn_forward(m, ws, &g, cfg.data, K, NULL, s, &err), PC_OK);
        double Lt = pc_loss_combo(ds, s, y.data, K, &loss_cfg, 1.0f, NULL);
        double rel = fabs(Lt - sr[t]) / fabs(sr[t]);
        steprel = fmax(steprel, rel);
        print_message("  step %d loss perfcast %.9f torch %.9f rel diff %.3e\n", t, Lt, sr[t],
                      rel);
        if (!(rel <= STEP_RTOL)) ok = 0;
        if (t == steps) break;
        assert_int_equal(pc_gnn_backward(m, ws, ds, &err), PC_OK);
        pc_clip_grad_norm(m->params.grad, m->params.numel, (float)ad[4]);
        pc_params_adam_step(&m->params, &ac, t + 1, ((const float *)lrs.data)[t]);
    }
    print_message("  %s: max rel diff of step losses %.3e\n", name, steprel);

    free(s);
    free(ds);
    pc_gnn_ws_free(ws);
    pc_csr_free(&csr);
    pc_gnn_free(m);
    pc_array *all[] = {&meta, &x,    &opc, &edges, &ids,  &cfg,   &y,
                       &lcfg, &adam, &lrs, &sref,  &lref, &stepref};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pc_array_free(all[i]);
    pc_npz_close(f.z);
    assert_true(ok);
}

static void test_golden_tile_early(void **state) {
    (void)state;
    run_case("tile_early");
}
static void test_golden_tile_late(void **state) {
    (void)state;
    run_case("tile_late");
}
static void test_golden_layout(void **state) {
    (void)state;
    run_case("layout");
}
static void test_golden_layout_late(void **state) {
    (void)state;
    run_case("layout_late");
}

/*
 * The losses' combination (pc_loss_combo), above all the margin loss over
 * close pairs, against the twin's difference-matrix formulation
 * (tests/golden/make_loss_golden.py): the loss and dL/ds of every case.
 */
static void test_golden_losses(void **state) {
    (void)state;
    static const char *const cases[] = {"margin_w1",  "margin_w2_ties", "margin_w3_t10",
                                        "margin_nan", "listmle_margin", "all_four"};
    gfile f;
    gopen(&f, "loss");
    print_message("golden losses (%s)\n", f.path);
    int ok = 1;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char key[64];
        pc_array s = PC_ARRAY_INIT, y = PC_ARRAY_INIT, cfg = PC_ARRAY_INIT, lref = PC_ARRAY_INIT,
                 gref = PC_ARRAY_INIT;
        snprintf(key, sizeof key, "s.%s", cases[c]);
        gread(&f, key, PC_DTYPE_F32, &s);
        snprintf(key, sizeof key, "y.%s", cases[c]);
        gread(&f, key, PC_DTYPE_F64, &y);
        snprintf(key, sizeof key, "cfg.%s", cases[c]);
        gread(&f, key, PC_DTYPE_F64, &cfg);
        snprintf(key, sizeof key, "loss.%s", cases[c]);
        gread(&f, key, PC_DTYPE_F64, &lref);
        snprintf(key, sizeof key, "g.%s", cases[c]);
        gread(&f, key, PC_DTYPE_F64, &gref);
        int K = (int)pc_array_count(&s);
        assert_int_equal(pc_array_count(&cfg), 10);
        assert_int_equal(pc_array_count(&gref), K);
        const double *v = cfg.data;
        pc_loss_cfg lc = {.w_listmle = (float)v[0], .w_hinge = (float)v[1],
                          .w_mse = (float)v[2], .w_margin = (float)v[3],
                          .listmle_temperature = (float)v[4], .hinge_margin = (float)v[5],
                          .hinge_temperature = (float)v[6], .margin_value = (float)v[7],
                          .margin_temperature = (float)v[8], .margin_window = (int)v[9]};
        float *ds = calloc((size_t)K, sizeof(float));
        assert_non_null(ds);
        double L = pc_loss_combo(ds, s.data, y.data, K, &lc, 1.0f, NULL);
        float Lf = (float)L;
        print_message(" %s (K=%d):\n", cases[c], K);
        ok &= compare("loss", &Lf, lref.data, 1, NULL);
        ok &= compare("dL/ds", ds, gref.data, K, NULL);
        free(ds);
        pc_array *all[] = {&s, &y, &cfg, &lref, &gref};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pc_array_free(all[i]);
    }
    pc_npz_close(f.z);
    assert_true(ok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_tile_early),
        cmocka_unit_test(test_golden_tile_late),
        cmocka_unit_test(test_golden_layout),
        cmocka_unit_test(test_golden_layout_late),
        cmocka_unit_test(test_golden_losses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
