/*
 * Unit tests for the raw tuning-proto reader (src/hlo/proto.h), the
 * featurizer (hlo_ir.h: pc_hlo_featurize) and the sample builder
 * (src/hlo/import.h).
 *
 * - A module built by hand in the IR: features of every group against
 *   numbers worked out by hand (64-bit wrapping products included), edges
 *   sorted and deduplicated, called-computation edges to roots, node_splits,
 *   unknown opcodes counted, pc_hlo_node_of_id.
 * - Every structural error the featurizer refuses (unknown operand / callee,
 *   call cycles, duplicate ids, self operands, callees without a root).
 * - The real fixtures in $PC_SHARED_DIR/fixtures/tpugraphs_raw: kinds, counts
 *   of modules, computations, instructions, runs, errors and defaults; every
 *   module featurizes and builds; every truncation of a small kernel and a
 *   stride of truncations of the layout program fails cleanly; random bit
 *   flips never crash. Without the folder those tests are skipped and the
 *   program exits 77 (CTest: skipped, never passed).
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "hlo/import.h"
#include "hlo/proto.h"
#include "tpugraphs/opcode.h"

static int g_fixtures_missing = 1;
static char g_raw[1024];

/* ---- building IR by hand --------------------------------------------------- */

static char *s_dup(const char *s) {
    char *r = malloc(strlen(s) + 1);
    assert_non_null(r);
    strcpy(r, s);
    return r;
}

static pc_i64s list(int n, ...) {
    pc_i64s l = {NULL, 0};
    if (n == 0) return l;
    l.v = malloc((size_t)n * sizeof *l.v);
    assert_non_null(l.v);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) l.v[i] = va_arg(ap, int64_t);
    va_end(ap);
    l.n = n;
    return l;
}

#define L0() list(0)
#define L(...) list(PP_NARG(__VA_ARGS__), __VA_ARGS__)
#define PP_NARG(...) PP_NARG_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1)
#define PP_NARG_(a, b, c, d, e, f, g, h, n, ...) n
#define I(x) ((int64_t)(x))

static pc_hlo_instruction mk(const char *name, const char *op, int64_t id, int32_t et) {
    pc_hlo_instruction in;
    memset(&in, 0, sizeof in);
    in.name = s_dup(name);
    in.opcode = s_dup(op);
    in.opcode_id = pc_hlo_opcode_find(op);
    in.id = id;
    in.shape.element_type = et;
    in.parameter_number = strcmp(op, "parameter") == 0 ? 0 : -1;
    return in;
}

static pc_hlo_module *mk_module(int ncomp) {
    pc_hlo_module *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->name = s_dup("m");
    m->comp = calloc((size_t)ncomp, sizeof *m->comp);
    assert_non_null(m->comp);
    m->n_comp = ncomp;
    return m;
}

static void set_comp(pc_hlo_computation *c, const char *name, int64_t id, int64_t root, int n) {
    c->name = s_dup(name);
    c->id = id;
    c->root_id = root;
    c->inst = calloc((size_t)n, sizeof *c->inst);
    assert_non_null(c->inst);
    c->n_inst = n;
}

/*
 * comp 0 "add_while" (id 7, root 12): 10 p0, 11 p1, 12 add(10, 11)
 * comp 1 "main"      (id 8, root 24): 20 p f32[4294967296, 4294967296] {1,0},
 *   21 conv(20, 20, 20) with a window and dimension numbers,
 *   22 reduce(21, 20) calls 7, dims {0}, 23 sort(22) calls 7 7, is_stable,
 *   24 weird(23) (unknown opcode), slice/pad/dynamic-slice fields on 24.
 */
static pc_hlo_module *sample_module(void) {
    pc_hlo_module *m = mk_module(2);
    pc_hlo_computation *a = &m->comp[0], *b = &m->comp[1];
    set_comp(a, "add_while", 7, 12, 3);
    a->inst[0] = mk("p0", "parameter", 10, 11);
    a->inst[1] = mk("p1", "parameter", 11, 11);
    a->inst[1].parameter_number = 1;
    a->inst[2] = mk("add", "add", 12, 11);
    a->inst[2].operand_ids = L(I(10), I(11));
    set_comp(b, "main", 8, 24, 5);
    pc_hlo_instruction *p = &b->inst[0];
    *p = mk("p", "parameter", 20, 16); /* BF16 */
    p->shape.dims = L(I(1) << 32, I(1) << 32);
    p->shape.minor_to_major = L(I(1), I(0));
    pc_hlo_instruction *c = &b->inst[1];
    *c = mk("conv", "convolution", 21, 11);
    c->operand_ids = L(I(20), I(20), I(20));
    c->shape.dims = L(I(1), I(2), I(3), I(4), I(5), I(6), I(7));
    pc_hlo_inst_ext *cx = pc_hlo_x_mut(c);
    assert_non_null(cx);
    cx->window.n = 2;
    int64_t *w[6];
    for (int k = 0; k < 6; k++) {
        w[k] = malloc(2 * sizeof(int64_t));
        assert_non_null(w[k]);
        w[k][0] = k + 1;
        w[k][1] = -(k + 1);
    }
    cx->window.size = w[0], cx->window.stride = w[1], cx->window.padding_low = w[2];
    cx->window.padding_high = w[3], cx->window.window_dilation = w[4], cx->window.base_dilation = w[5];
    cx->window.window_reversal = calloc(2, 1);
    cx->window.window_reversal[1] = 1;
    cx->conv.present = 1;
    cx->conv.input_batch = 0, cx->conv.input_feature = 3, cx->conv.kernel_input_feature = 2;
    cx->conv.kernel_output_feature = 3, cx->conv.output_batch = 0, cx->conv.output_feature = 3;
    cx->conv.input_spatial = L(I(1), I(2), I(4), I(5), I(6));
    cx->conv.kernel_spatial = L(I(0), I(1));
    c->feature_group_count = 2;
    c->batch_group_count = 3;
    pc_hlo_instruction *r = &b->inst[2];
    *r = mk("red", "reduce", 22, 11);
    r->operand_ids = L(I(21), I(20));
    r->called_computation_ids = L(I(7));
    r->dimensions = L(I(0));
    pc_hlo_instruction *s = &b->inst[3];
    *s = mk("sort", "sort", 23, 13);
    s->shape.tuple_count = 2;
    s->operand_ids = L(I(22));
    s->called_computation_ids = L(I(7), I(7));
    s->is_stable = 1;
    pc_hlo_instruction *x = &b->inst[4];
    *x = mk("x", "weird-op", 24, 99);
    x->operand_ids = L(I(23));
    pc_hlo_inst_ext *xx = pc_hlo_x_mut(x);
    assert_non_null(xx);
    xx->slice_start = L(I(1), I(2), I(3));
    xx->slice_limit = L(I(5), I(6), I(7));
    xx->slice_stride = L(I(1), I(1), I(2));
    xx->dynamic_slice_sizes = L(I(9));
    xx->pad_low = L(I(-1), I(2));
    xx->pad_high = L(I(3), I(4));
    xx->pad_interior = L(I(7), I(7));
    return m;
}

static void expect_feats(const float *f, int from, int n, ...) {
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        double want = va_arg(ap, double);
        if ((double)f[from + i] != want)
            fail_msg("feature %d: %g, expected %g", from + i, (double)f[from + i], want);
    }
    va_end(ap);
}

static void test_featurize_by_hand(void **state) {
    (void)state;
    pc_hlo_module *m = sample_module();
    pc_hlo_graph g;
    pc_error err;
    assert_int_equal(pc_hlo_featurize(m, &g, &err), PC_OK);
    assert_int_equal(g.n, 8);
    assert_int_equal(g.unknown, 1);
    const uint8_t ops[8] = {63, 63, 2, 63, 26, 70, 93, 0};
    assert_memory_equal(g.node_opcode, ops, 8);
    /* roots: add (2) and x (7) */
    for (int i = 0; i < 8; i++)
        assert_true(g.node_feat[i * 140] == ((i == 2 || i == 7) ? 1.0f : 0.0f));
    const float *p = g.node_feat + 3 * 140, *c = g.node_feat + 4 * 140;
    const float *r = g.node_feat + 5 * 140, *s = g.node_feat + 6 * 140, *x = g.node_feat + 7 * 140;
    /* BF16 is column 2 + 13; dims 2^32 x 2^32: sum 2^33, product wraps to 0 */
    expect_feats(p, 2, 19, 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 1., 0., 0., 0., 0.,
                 0.);
    expect_feats(p, 21, 8, 4294967296., 4294967296., 0., 0., 0., 0., 8589934592., 0.);
    expect_feats(p, 134, 6, 1., 0., 0., 0., 0., 0.);
    expect_feats(g.node_feat + 1 * 140, 30, 1, 1.);
    /* conv: 7 dims (6 shown, sum 28, product 5040), window, reversal, dims numbers, groups */
    expect_feats(c, 21, 8, 1., 2., 3., 4., 5., 6., 28., 5040.);
    expect_feats(c, 37, 8, 1., -1., 0., 0., 0., 0., 0., -1.);
    expect_feats(c, 77, 8, 6., -6., 0., 0., 0., 0., 0., -36.);
    expect_feats(c, 85, 8, 0., 1., 0., 0., 0., 0., 1., 1.);
    expect_feats(c, 93, 14, 0., 3., 1., 2., 4., 5., 2., 3., 0., 1., 0., 0., 0., 3.);
    expect_feats(c, 107, 2, 2., 3.);
    expect_feats(c, 109, 24, 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0., 1., 0.,
                 0., 0., 1., 0., 0., 0., 1.);
    expect_feats(r, 31, 6, 0., 0., 0., 0., 0., 0.);
    /* sort: TUPLE one-hot (column 2 + 16), 2 tuple shapes, is_stable */
    expect_feats(s, 18, 1, 1.);
    expect_feats(s, 29, 1, 2.);
    expect_feats(s, 133, 1, 1.);
    /* x: element type 99 has no column; slice start/stride/limit, dynamic sizes, padding */
    for (int k = 2; k < 21; k++) assert_true(x[k] == 0.0f);
    expect_feats(x, 109, 12, 1., 2., 6., 6., 1., 1., 4., 2., 5., 6., 18., 210.);
    expect_feats(x, 121, 4, 9., 0., 9., 9.);
    expect_feats(x, 125, 8, -1., 2., 1., -2., 3., 4., 7., 12.);

    /* edges: conv's three uses of p are one edge; sort calls 7 twice: one edge */
    const int64_t edges[][2] = {{2, 0}, {2, 1}, {4, 3}, {5, 2}, {5, 3}, {5, 4},
                                {6, 2}, {6, 5}, {7, 6}};
    assert_int_equal(g.m, 9);
    assert_memory_equal(g.edges, edges, sizeof edges);
    /* "add_while" contains "while": splits [0, 3, 8] */
    assert_int_equal(g.k, 3);
    assert_int_equal(g.node_splits[1], 3);
    assert_int_equal(g.node_splits[2], 8);
    assert_int_equal(pc_hlo_node_of_id(m, 23), 6);
    assert_int_equal(pc_hlo_node_of_id(m, 99), -1);
    pc_hlo_graph_free(&g);
    pc_hlo_graph_free(&g); /* twice is fine */
    pc_hlo_module_free(m);
    pc_hlo_module_free(NULL);
}

static void test_featurize_empty(void **state) {
    (void)state;
    pc_hlo_module *m = mk_module(1);
    set_comp(&m->comp[0], "cluster", 1, 1, 0);
    free(m->comp[0].inst);
    m->comp[0].inst = NULL;
    pc_hlo_graph g;
    pc_error err;
    assert_int_equal(pc_hlo_featurize(m, &g, &err), PC_OK);
    assert_int_equal(g.n, 0);
    assert_int_equal(g.m, 0);
    assert_int_equal(g.k, 2); /* [0, 0]: "cluster" splits after its 0 instructions */
    pc_hlo_graph_free(&g);
    pc_hlo_module_free(m);
}

static void expect_featurize_error(pc_hlo_module *m, const char *want) {
    pc_hlo_graph g;
    pc_error err;
    memset(&g, 0x5a, sizeof g);
    pc_status st = pc_hlo_featurize(m, &g, &err);
    if (st != PC_ERR_FORMAT) fail_msg("expected a format error with '%s', got %d", want, st);
    if (!strstr(err.msg, want)) fail_msg("message '%s' lacks '%s'", err.msg, want);
    assert_null(g.node_feat);
    assert_null(g.edges);
    pc_hlo_module_free(m);
}

static void test_featurize_errors(void **state) {
    (void)state;
    pc_hlo_module *m = sample_module();
    m->comp[1].inst[4].operand_ids.v[0] = 1234;
    expect_featurize_error(m, "operand id 1234, which is not an instruction of the module");

    m = sample_module();
    m->comp[1].inst[2].called_computation_ids.v[0] = 55;
    expect_featurize_error(m, "calls computation id 55, which is not in the module");

    m = sample_module(); /* add_while calls main, main calls add_while */
    m->comp[0].inst[2].called_computation_ids = L(I(8));
    expect_featurize_error(m, "cycle in called_computation_ids");

    m = sample_module(); /* a computation calling itself */
    m->comp[0].inst[2].called_computation_ids = L(I(7));
    expect_featurize_error(m, "cycle in called_computation_ids");

    m = sample_module();
    m->comp[1].inst[3].id = 10;
    expect_featurize_error(m, "has id 10, already used");

    m = sample_module();
    m->comp[1].id = 7;
    expect_featurize_error(m, "id 7 is used twice");

    m = sample_module();
    m->comp[1].inst[4].operand_ids.v[0] = 24;
    expect_featurize_error(m, "is its own operand");

    m = sample_module(); /* root of the called computation is in another computation */
    m->comp[0].root_id = 20;
    expect_featurize_error(m, "has no root instruction (root_id 20");
}

/* A chain of n instructions in one computation (ids 1..n). */
static pc_hlo_module *chain(int n) {
    pc_hlo_module *m = mk_module(1);
    set_comp(&m->comp[0], "entry", 1, n, n);
    for (int i = 0; i < n; i++) {
        pc_hlo_instruction *in = &m->comp[0].inst[i];
        *in = mk("n", i ? "negate" : "parameter", i + 1, 11);
        in->shape.dims = L(I(128), I(256));
        if (i) in->operand_ids = L(I(i), I(i));
    }
    return m;
}

static void test_featurize_chain(void **state) {
    (void)state;
    pc_hlo_module *m = chain(100000);
    pc_hlo_graph g;
    pc_error err;
    assert_int_equal(pc_hlo_featurize(m, &g, &err), PC_OK);
    assert_int_equal(g.n, 100000);
    assert_int_equal(g.m, 99999);
    for (int64_t e = 0; e < g.m; e++) {
        assert_int_equal(g.edges[2 * e], e + 1);
        assert_int_equal(g.edges[2 * e + 1], e);
    }
    assert_true(g.node_feat[99999 * 140] == 1.0f);
    pc_hlo_graph_free(&g);
    pc_hlo_module_free(m);
}

/* ---- the real fixtures ------------------------------------------------------- */

static uint8_t *slurp(const char *name, size_t *len) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_raw, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static pc_hlo_tuning *read_fixture(const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_raw, name);
    pc_hlo_tuning *t;
    pc_error err;
    if (pc_hlo_tuning_read(path, &t, &err) != PC_OK) fail_msg("%s", err.msg);
    return t;
}

static void test_fixture_tile(void **state) {
    (void)state;
    if (g_fixtures_missing) skip();
    pc_hlo_tuning *t = read_fixture("op_tuning_data.pb");
    assert_int_equal(t->file_kind, PC_HLO_FILE_TUNING_DATA);
    assert_int_equal(t->n_mods, 15);
    int64_t runs = 0, errors = 0, defaults = 0, kept = 0;
    pc_import_report rep;
    memset(&rep, 0, sizeof rep);
    for (int i = 0; i < t->n_mods; i++) {
        const pc_hlo_tuned *m = &t->mods[i];
        assert_non_null(m->module);
        runs += m->n_runs;
        for (int r = 0; r < m->n_runs; r++) {
            errors += m->runs[r].error;
            defaults += m->runs[r].is_default;
            assert_int_equal(m->runs[r].config, PC_HLO_RUN_TILE);
            assert_true(m->runs[r].has_tile);
        }
        pc_hlo_sample s;
        pc_error err;
        char why[256];
        if (pc_hlo_sample_build(m, PC_KIND_AUTO, "op_tuning_data.pb", i, &s, &rep, why, sizeof why,
                                &err) != PC_OK)
            fail_msg("%s", err.msg);
        assert_int_equal(s.kind, PC_KIND_TILE);
        kept += s.c;
        for (int64_t c = 0; c < s.c; c++) assert_true(s.runtime[c] > 1 && s.normalizers[c] > 1);
        pc_hlo_sample_free(&s);
    }
    assert_int_equal(runs, 754);
    assert_int_equal(errors, 2);
    assert_int_equal(defaults, 15);
    assert_int_equal(kept, 752);
    assert_int_equal(rep.runs, 754);
    assert_int_equal(rep.runs_error, 2);
    assert_int_equal(rep.defaults, 15);
    /* kernel 0: fusion.232, 3 computations, 20 instructions, root of the last is fusion.232 */
    const pc_hlo_module *m0 = t->mods[0].module;
    assert_string_equal(m0->name, "fusion.232");
    assert_int_equal(m0->n_comp, 3);
    assert_int_equal(m0->comp[0].n_inst + m0->comp[1].n_inst + m0->comp[2].n_inst, 20);
    const pc_hlo_instruction *fusion = &m0->comp[2].inst[2];
    assert_string_equal(fusion->opcode, "fusion");
    assert_int_equal(fusion->opcode_id, PC_HLO_FUSION);
    assert_int_equal(fusion->id, m0->comp[2].root_id);
    assert_int_equal(fusion->shape.dims.n, 1);
    assert_int_equal(fusion->shape.dims.v[0], 192);
    assert_int_equal(t->mods[0].runs[0].output_bounds.n, 4);
    assert_int_equal(t->mods[0].runs[0].ns, 57188);
    pc_hlo_tuning_free(t);
}

static void test_fixture_layout(void **state) {
    (void)state;
    if (g_fixtures_missing) skip();
    pc_hlo_tuning *t = read_fixture("module_tuning_data_layout.pb");
    assert_int_equal(t->file_kind, PC_HLO_FILE_MODULE_TUNING_DATA);
    assert_int_equal(t->n_mods, 1);
    const pc_hlo_tuned *m = &t->mods[0];
    assert_int_equal(m->module->n_comp, 143);
    int64_t n = 0;
    for (int c = 0; c < m->module->n_comp; c++) n += m->module->comp[c].n_inst;
    assert_int_equal(n, 3163);
    assert_int_equal(m->n_config_nodes, 62);
    assert_int_equal(m->n_runs, 122);
    int errors = 0, defaults = 0;
    for (int r = 0; r < m->n_runs; r++) {
        errors += m->runs[r].error;
        defaults += m->runs[r].is_default;
        assert_int_equal(m->runs[r].config, PC_HLO_RUN_LAYOUT);
        if (m->runs[r].error) assert_int_equal(m->runs[r].ns, 0); /* an empty profile */
    }
    assert_int_equal(errors, 10);
    assert_int_equal(defaults, 1);
    pc_hlo_sample s;
    pc_error err;
    char why[256];
    pc_import_report rep;
    memset(&rep, 0, sizeof rep);
    if (pc_hlo_sample_build(m, PC_KIND_LAYOUT, "layout", 0, &s, &rep, why, sizeof why, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.kind, PC_KIND_LAYOUT);
    assert_int_equal(s.c, 112);
    assert_int_equal(s.nc, 62);
    assert_int_equal(s.g.n, 3163);
    assert_int_equal(s.g.unknown, 0);
    assert_int_equal(rep.runs_error, 10);
    for (int64_t j = 0; j < s.nc; j++) {
        int op = s.g.node_opcode[s.config_ids[j]];
        assert_true(op == PC_HLO_CONVOLUTION || op == PC_HLO_DOT || op == PC_HLO_RESHAPE);
    }
    /* asking for tile is an error naming both kinds */
    pc_hlo_sample s2;
    assert_int_equal(pc_hlo_sample_build(m, PC_KIND_TILE, "layout", 0, &s2, NULL, why, sizeof why,
                                         &err),
                     PC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "holds layout runs, but tile was asked for"));
    pc_hlo_sample_free(&s);
    pc_hlo_tuning_free(t);
}

/*
 * Parses buf[0, len) and, if it parses, builds every module: must not crash.
 * Returns the parse status; *built_ok (if not NULL) says whether every module built.
 */
static pc_status parse_and_build_ex(const uint8_t *buf, size_t len, pc_error *err, int *built_ok) {
    if (built_ok) *built_ok = 0;
    pc_hlo_tuning *t;
    pc_status st = pc_hlo_tuning_parse(buf, len, "mem.pb", &t, err);
    if (st) {
        assert_null(t);
        assert_true(err->msg[0] != '\0');
        assert_non_null(strstr(err->msg, "mem.pb"));
        return st;
    }
    int bad_builds = 0;
    for (int i = 0; i < t->n_mods; i++) {
        pc_hlo_sample s;
        char why[256];
        pc_error e2;
        pc_status bs = pc_hlo_sample_build(&t->mods[i], PC_KIND_AUTO, "mem.pb", i, &s, NULL, why,
                                           sizeof why, &e2);
        if (bs == PC_OK) pc_hlo_sample_free(&s);
        else assert_non_null(strstr(e2.msg, "mem.pb"));
        bad_builds += bs != PC_OK;
    }
    pc_hlo_tuning_free(t);
    if (built_ok) *built_ok = bad_builds == 0;
    return PC_OK;
}

static pc_status parse_and_build(const uint8_t *buf, size_t len, pc_error *err) {
    return parse_and_build_ex(buf, len, err, NULL);
}

static void test_fixture_truncated(void **state) {
    (void)state;
    if (g_fixtures_missing) skip();
    size_t len;
    uint8_t *b = slurp("op_tuning_data.pb", &len);
    /* Module boundaries: a cut there is a valid, shorter TuningData. */
    size_t bounds[32] = {0}, nb = 0, i = 0;
    while (i < len && nb < 32) {
        assert_int_equal(b[i], 0x0a); /* field 1, length-delimited */
        size_t at = i + 1;
        uint64_t n = 0;
        int sh = 0;
        while (b[at] & 0x80) {
            n |= (uint64_t)(b[at++] & 0x7f) << sh;
            sh += 7;
        }
        n |= (uint64_t)b[at++] << sh;
        i = at + (size_t)n;
        bounds[nb++] = i;
    }
    assert_int_equal(nb, 15);
    assert_int_equal(bounds[14], len);
    /* Every cut inside the last two (small) modules, every 97th byte elsewhere. */
    for (size_t cut = 1; cut < len; cut += (cut > bounds[12] ? 1 : 97)) {
        int at_bound = 0;
        for (size_t k = 0; k < nb; k++) at_bound |= bounds[k] == cut;
        pc_error err;
        pc_status st = parse_and_build(b, cut, &err);
        if (at_bound) assert_int_equal(st, PC_OK);
        else if (st != PC_ERR_FORMAT) fail_msg("cut at %zu: status %d (%s)", cut, st, err.msg);
    }
    free(b);
    b = slurp("module_tuning_data_layout.pb", &len);
    /* A stride of cuts through the program: each fails or (at a field boundary) parses. */
    for (size_t cut = 0; cut < len; cut += 4099) {
        pc_error err;
        pc_status st = parse_and_build(b, cut, &err);
        if (cut == 0) assert_int_equal(st, PC_ERR_FORMAT);
    }
    free(b);
}

static void test_fixture_bitflips(void **state) {
    (void)state;
    if (g_fixtures_missing) skip();
    const char *names[2] = {"op_tuning_data.pb", "module_tuning_data_layout.pb"};
    uint64_t rng = 12345;
    for (int f = 0; f < 2; f++) {
        size_t len;
        uint8_t *orig = slurp(names[f], &len);
        uint8_t *b = malloc(len);
        assert_non_null(b);
        int ok = 0, bad = 0;
        for (int k = 0; k < (f ? 30 : 300); k++) {
            memcpy(b, orig, len);
            for (int j = 0; j < 1 + k % 3; j++) {
                rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                b[(size_t)(rng >> 33) % len] ^= (uint8_t)(1u << ((rng >> 20) & 7));
            }
            pc_error err;
            int built;
            if (parse_and_build_ex(b, len, &err, &built) == PC_OK && built) ok++;
            else bad++;
        }
        /* Some flips land in names or runtimes and keep the file valid; many do not. */
        fprintf(stderr, "%s: %d random flips parsed, %d refused\n", names[f], ok, bad);
        assert_true(ok > 0 && bad > 0);
        free(b);
        free(orig);
    }
}

static int setup(void **state) {
    (void)state;
    char probe[1200];
    if (pc_test_fixture(probe, sizeof probe, "tpugraphs_raw", "op_tuning_data.pb") &&
        pc_test_fixture(g_raw, sizeof g_raw, "tpugraphs_raw", ""))
        g_fixtures_missing = 0;
    return 0;
}

/* The parse bound (issue #18): the file plus PC_HLO_PROTO_BYTES_PER_UNPACKED times what
 * protobuf-c would allocate, checked before anything is unpacked. A bare HloModuleProto
 * holding only name "m" (0a 01 6d) unpacks to one string: 1 byte + 16 (the walk's count
 * for a string), so the bound is 3 + 5 x 17 = 88 bytes. */
static void test_parse_bound(void **state) {
    (void)state;
    assert_int_equal(PC_HLO_PROTO_BYTES_PER_UNPACKED, 5);
    assert_int_equal(pc_hlo_proto_parse_bound(3, 17), 88);
    assert_true(pc_hlo_proto_parse_bound(10, UINT64_MAX / 2) == UINT64_MAX);
    assert_true(pc_hlo_proto_parse_bound(SIZE_MAX, UINT64_MAX - 1) == UINT64_MAX);
    static const uint8_t named[] = {0x0a, 0x01, 0x6d};
    pc_hlo_tuning *t = NULL;
    pc_error err;
    assert_int_equal(pc_hlo_tuning_parse_max(named, sizeof named, "m.pb", 87, &t, &err),
                     PC_ERR_NOMEM);
    assert_null(t);
    assert_non_null(strstr(err.msg, "m.pb needs 88 bytes in memory to read and parse it"));
    assert_non_null(strstr(err.msg, "budget of 87 bytes"));
    pc_status st = pc_hlo_tuning_parse_max(named, sizeof named, "m.pb", 88, &t, &err);
    assert_int_not_equal(st, PC_ERR_NOMEM); /* within the budget: the parse's own verdict */
    pc_hlo_tuning_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_bound),
        cmocka_unit_test(test_featurize_by_hand),
        cmocka_unit_test(test_featurize_empty),
        cmocka_unit_test(test_featurize_errors),
        cmocka_unit_test(test_featurize_chain),
        cmocka_unit_test(test_fixture_tile),
        cmocka_unit_test(test_fixture_layout),
        cmocka_unit_test(test_fixture_truncated),
        cmocka_unit_test(test_fixture_bitflips),
    };
    int failed = cmocka_run_group_tests(tests, setup, NULL);
    if (failed) return failed;
    /* all ran tests passed; without the fixtures the run counts as skipped */
    return g_fixtures_missing ? 77 : 0;
}
