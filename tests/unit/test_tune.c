/*
 * The configuration search (perfcast/tune.h) with hand-built toy scorers
 * whose optimum is known: the space learned from a graph's configs (ranks
 * from node_feat, operands from the full permutations the configs give,
 * tile ties), every proposal inside it, the optimum found, determinism for
 * a seed, and refusals (no configs, one-config space, bad options).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perfcast/npz.h"
#include "perfcast/tune.h"
#include "tpugraphs/features.h"

#define NC 12 /* configurable nodes */
#define NN (2 * NC)
#define LC 6 /* configs in the file */

/* ---- a layout graph: node 2j is a rank-(2 + j % 3) producer, node 2j+1 a
   configurable node of the same rank fed by it ------------------------------- */

static int rank_of(int j) { return 2 + j % 3; }

static void row_major(int r, float *f) {
    for (int i = 0; i < 6; i++) f[i] = i < r ? (float)(r - 1 - i) : -1.0f;
}

static pc_graph *layout_graph(void) {
    static float feat[NN * 140], cfg[LC * NC * 18];
    static int64_t edges[NC * 2], ids[NC], rt[LC], splits[2] = {0, NN};
    static uint8_t op[NN];
    memset(feat, 0, sizeof feat);
    for (int j = 0; j < NC; j++) {
        for (int v = 2 * j; v <= 2 * j + 1; v++)
            for (int d = 0; d < rank_of(j); d++) feat[v * 140 + PC_TPUG_COL_DIMS + d] = 16.0f;
        op[2 * j] = 1, op[2 * j + 1] = 26;
        edges[2 * j] = 2 * j + 1, edges[2 * j + 1] = 2 * j; /* consumer, producer */
        ids[j] = 2 * j + 1;
    }
    for (int c = 0; c < LC; c++) {
        rt[c] = 100 + c;
        for (int j = 0; j < NC; j++) {
            float *f = cfg + (c * NC + j) * 18;
            for (int i = 0; i < 18; i++) f[i] = -1.0f;
            if (c % 2) row_major(rank_of(j), f);      /* output: full permutation */
            if (c >= 2) row_major(rank_of(j), f + 6); /* operand 0: full permutation */
        }
    }
    const char *keys[] = {"node_feat",        "node_opcode",    "edge_index", "node_config_ids",
                          "node_config_feat", "config_runtime", "node_splits"};
    pc_array a[7];
    int64_t sh[7][3] = {{NN, 140}, {NN}, {NC, 2}, {NC}, {LC, NC, 18}, {LC}, {1, 2}};
    pc_dtype t[7] = {PC_DTYPE_F32, PC_DTYPE_U8,  PC_DTYPE_I64, PC_DTYPE_I64,
                     PC_DTYPE_F32, PC_DTYPE_I64, PC_DTYPE_I64};
    void *d[7] = {feat, op, edges, ids, cfg, rt, splits};
    int nd[7] = {2, 1, 2, 1, 3, 1, 2};
    for (int i = 0; i < 7; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].dtype = t[i], a[i].ndim = nd[i], a[i].data = d[i];
        memcpy(a[i].shape, sh[i], sizeof sh[i]);
    }
    pc_graph *g = NULL;
    pc_error e;
    assert_int_equal(pc_graph_from_arrays("toy_layout", PC_KIND_LAYOUT, keys, a, 7, &g, &e), PC_OK);
    return g;
}

/* Toy layout cost: per tensor, 0 when it is the target (node j's output:
   dims reversed from row-major, i.e. 0,1,..; operand: -1), else 1 + the
   number of positions that differ. Optimum 0, reached by one config. */
static pc_status toy_layout(void *ctx, const float *cfg, int64_t n, double *s, pc_error *err) {
    (void)err;
    int64_t *calls = ctx;
    (*calls)++;
    for (int64_t c = 0; c < n; c++) {
        double v = 0;
        for (int j = 0; j < NC; j++) {
            const float *f = cfg + (c * NC + j) * 18;
            for (int i = 0; i < rank_of(j); i++) v += f[i] != (float)i; /* output wants 0,1,2.. */
            v += f[6] != -1.0f;                                         /* operand 0: wants -1 */
        }
        s[c] = v;
    }
    return PC_OK;
}

static void test_layout_space(void **state) {
    (void)state;
    pc_graph *g = layout_graph();
    pc_tune_space *sp = NULL;
    pc_error e;
    assert_int_equal(pc_tune_space_from_graph(g, NULL, &sp, &e), PC_OK);
    assert_int_equal(pc_tune_space_kind(sp), PC_KIND_LAYOUT);
    assert_int_equal(pc_tune_space_width(sp), NC * 18);
    assert_int_equal(pc_tune_space_vars(sp), 2 * NC); /* output and operand 0; no kernel */
    double want = 0;                                  /* each tensor: -1 or one of rank! orders */
    for (int j = 0; j < NC; j++) {
        double f = 1;
        for (int i = 2; i <= rank_of(j); i++) f *= i;
        want += 2 * log10(1 + f);
    }
    assert_true(fabs(pc_tune_space_log10_size(sp) - want) < 1e-9);
    float row[NC * 18];
    assert_int_equal(pc_tune_space_default(sp, row), 1);
    assert_true(pc_tune_space_contains(sp, row, NULL));
    row_major(rank_of(0), row);
    assert_true(pc_tune_space_contains(sp, row, NULL));
    row[1] = row[0]; /* a dim twice */
    assert_false(pc_tune_space_contains(sp, row, &e));
    row_major(rank_of(0), row);
    row[12] = 0; /* the kernel tensor is never configured in the file */
    assert_false(pc_tune_space_contains(sp, row, NULL));
    pc_tune_space_free(sp);
    pc_graph_free(g);
}

/* pc_tune_opts.best: every report, the last equal to the result's scores[0] and scored. */
typedef struct best_rec {
    int n;
    double last;
    int64_t scored;
    int rising; /* a report above the one before: the search's best never gets worse */
} best_rec;

static void on_best(void *user, double best, int64_t scored) {
    best_rec *b = user;
    if (b->n && best > b->last) b->rising = 1;
    b->n++, b->last = best, b->scored = scored;
}

static void run_layout_r(uint64_t seed, int64_t max_changes, pc_tune_result *r, int64_t *calls) {
    pc_graph *g = layout_graph();
    pc_tune_space *sp = NULL;
    pc_error e;
    assert_int_equal(pc_tune_space_from_graph(g, NULL, &sp, &e), PC_OK);
    pc_tune_opts o = pc_tune_opts_default();
    o.seed = seed;
    o.batch = 64;
    o.budget_s = 1000; /* the patience stops it */
    o.patience = 20;
    o.max_changes = max_changes;
    best_rec b = {0, 0, 0, 0};
    o.best = on_best, o.best_user = &b;
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    assert_int_equal(pc_tune_search(sp, g, &o, toy_layout, calls, r, &e), PC_OK);
    assert_true(r->k >= 1 && r->k <= 5);
    assert_true(b.n >= 2 && !b.rising);
    assert_true(b.last == r->scores[0]); /* the proposal, not the graph's best input */
    assert_int_equal(b.scored, r->scored);
    for (int64_t k = 0; k < r->k; k++) {
        assert_true(pc_tune_space_contains(sp, r->configs + k * r->width, NULL));
        if (k) assert_true(r->scores[k] >= r->scores[k - 1]);
    }
    pc_tune_space_free(sp);
    pc_graph_free(g);
}

static void run_layout(uint64_t seed, pc_tune_result *r, int64_t *calls) {
    run_layout_r(seed, 0, r, calls);
}

/* Tensors a layout row sets (not -1). */
static int changed(const float *row) {
    int d = 0;
    for (int j = 0; j < NC; j++) d += (row[j * 18] != -1.0f) + (row[j * 18 + 6] != -1.0f);
    return d;
}

/* The trust region: every proposal within 3 changed tensors of the default;
   the best then fixes the outputs of 3 rank-4 nodes (4 wrong dims each). */
static void test_layout_trust_region(void **state) {
    (void)state;
    pc_tune_result a;
    int64_t calls = 0;
    run_layout_r(5, 3, &a, &calls);
    for (int64_t k = 0; k < a.k; k++) assert_true(changed(a.configs + k * a.width) <= 3);
    assert_true(a.scores[0] == a.default_score - 12.0);
    pc_tune_result_clear(&a);
}

static void test_layout_search(void **state) {
    (void)state;
    pc_tune_result a, b;
    int64_t calls = 0;
    run_layout(3, &a, &calls);
    assert_int_equal(a.has_default, 1);
    /* the default scores one per output dim; the optimum 0 */
    assert_true(a.default_score > 0);
    assert_true(a.scores[0] == 0.0);
    assert_int_equal(a.stop, PC_TUNE_STOP_CONVERGED);
    assert_true(a.input_best >= 0 && a.input_best < LC);
    const float *best = a.configs;
    for (int j = 0; j < NC; j++)
        for (int i = 0; i < rank_of(j); i++) assert_true(best[j * 18 + i] == (float)i);
    run_layout(3, &b, &calls); /* the same seed: the same search */
    assert_int_equal(a.scored, b.scored);
    assert_int_equal(a.k, b.k);
    assert_memory_equal(a.configs, b.configs, (size_t)(a.k * a.width) * sizeof(float));
    pc_tune_result_clear(&a);
    pc_tune_result_clear(&b);
}

/* ---- a tile graph: kernel bounds (M, N, K) with output bounds tied to M, N --- */

static pc_graph *tile_graph(int same) {
    static float feat[2 * 140], cfg[8 * 24];
    static int64_t edges[2] = {1, 0}, rt[8], norm[8];
    static uint8_t op[2] = {1, 6};
    static const int64_t ms[8] = {8, 16, 64, 256, 8, 256, 32, 128};
    for (int c = 0; c < 8; c++) {
        int64_t m = same ? 1 : ms[c], n = same ? 1 : ms[7 - c] * 2, k = same ? 1 : 512;
        int64_t kern[3] = {m, n, k}, out[2] = {m, n};
        pc_tpug_tile_feat((pc_tpug_seq){kern, 3}, (pc_tpug_seq){out, 2}, (pc_tpug_seq){NULL, 0},
                          cfg + c * 24);
        rt[c] = norm[c] = 1000 + c;
    }
    const char *keys[] = {"node_feat",   "node_opcode",    "edge_index",
                          "config_feat", "config_runtime", "config_runtime_normalizers"};
    pc_array a[6];
    int64_t sh[6][2] = {{2, 140}, {2}, {1, 2}, {8, 24}, {8}, {8}};
    pc_dtype t[6] = {PC_DTYPE_F32, PC_DTYPE_U8,  PC_DTYPE_I64,
                     PC_DTYPE_F32, PC_DTYPE_I64, PC_DTYPE_I64};
    void *d[6] = {feat, op, edges, cfg, rt, norm};
    int nd[6] = {2, 1, 2, 2, 1, 1};
    for (int i = 0; i < 6; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].dtype = t[i], a[i].ndim = nd[i], a[i].data = d[i];
        memcpy(a[i].shape, sh[i], sizeof sh[i]);
    }
    pc_graph *g = NULL;
    pc_error e;
    assert_int_equal(pc_graph_from_arrays("toy_tile", PC_KIND_TILE, keys, a, 6, &g, &e), PC_OK);
    return g;
}

/* (same: every bound 1, a space of one config.) Toy tile cost: |log2(M/32)| + |log2(N/384)| +
   |log2(K/128)|, inconsistent output bounds cost 1000. Optimum 0 at (32, 384, 128). */
static pc_status toy_tile(void *ctx, const float *cfg, int64_t n, double *s, pc_error *err) {
    (void)ctx, (void)err;
    for (int64_t c = 0; c < n; c++) {
        const float *f = cfg + c * 24;
        s[c] = fabs(log2(f[0] / 32.0)) + fabs(log2(f[1] / 384.0)) + fabs(log2(f[2] / 128.0));
        if (f[8] != f[0] || f[9] != f[1]) s[c] += 1000;
    }
    return PC_OK;
}

static void test_tile_search(void **state) {
    (void)state;
    pc_graph *g = tile_graph(0);
    pc_tune_space *sp = NULL;
    pc_error e;
    pc_tune_opts o = pc_tune_opts_default();
    assert_int_equal(pc_tune_space_from_graph(g, NULL, &sp, &e), PC_OK);
    assert_true(fabs(pc_tune_space_log10_size(sp) - log10(6.0 * 6 * 1)) < 1e-9); /* sizes seen */
    pc_tune_space_free(sp);
    o.tile_new_sizes = 1; /* the optimum needs sizes the file never uses */
    o.tile_max_changes = -1; /* and leaving the file's configs */
    assert_int_equal(pc_tune_space_from_graph(g, &o, &sp, &e), PC_OK);
    assert_int_equal(pc_tune_space_vars(sp), 3); /* M, N, K; the output bounds are tied */
    float row[24];
    assert_int_equal(pc_tune_space_default(sp, row), 0);
    pc_tune_result r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    assert_int_equal(pc_tune_search(sp, g, &o, toy_tile, NULL, &r, &e), PC_OK);
    assert_int_equal(r.stop, PC_TUNE_STOP_EXHAUSTED);
    assert_int_equal(r.has_default, 0);
    assert_true(r.scores[0] == 0.0);
    assert_true(r.configs[0] == 32 && r.configs[1] == 384 && r.configs[2] == 128);
    for (int64_t k = 0; k < r.k; k++) {
        const float *f = r.configs + k * 24;
        assert_true(pc_tune_space_contains(sp, f, NULL));
        assert_true(f[8] == f[0] && f[9] == f[1] && f[10] == 0); /* ties kept, rank kept */
        assert_true(f[0] >= 1 && f[0] <= 256 && f[1] <= 512 && f[2] <= 512);
    }
    pc_tune_result_clear(&r);
    pc_tune_space_free(sp);
    pc_graph_free(g);
}

/* Bounds (M, N, K) in which row f differs from the nearest of the file's configs. */
static int tile_distance(pc_graph *g, const float *f) {
    int best = 99;
    for (int64_t c = 0; c < pc_graph_num_configs(g); c++) {
        const float *in = pc_graph_config_feat(g) + c * 24;
        int d = (f[0] != in[0]) + (f[1] != in[1]) + (f[2] != in[2]);
        if (d < best) best = d;
    }
    return best;
}

/* The space of g and a search of it with the toy tile scorer, both succeeding. */
static void search_tile(pc_graph *g, const pc_tune_opts *o, pc_tune_space **sp,
                        pc_tune_result *r) {
    pc_error e;
    assert_int_equal(pc_tune_space_from_graph(g, o, sp, &e), PC_OK);
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    assert_int_equal(pc_tune_search(*sp, g, o, toy_tile, NULL, r, &e), PC_OK);
}

/* The tile trust region: 0 proposes only the file's configs, 1 at most one bound away. */
static void test_tile_trust_region(void **state) {
    (void)state;
    pc_graph *g = tile_graph(0);
    for (int R = 0; R <= 1; R++) {
        pc_tune_opts o = pc_tune_opts_default();
        o.tile_new_sizes = 1;
        o.tile_max_changes = R;
        o.top_k = 20;
        pc_tune_space *sp = NULL;
        pc_tune_result r;
        search_tile(g, &o, &sp, &r);
        assert_true(r.k >= 1);
        for (int64_t k = 0; k < r.k; k++) assert_true(tile_distance(g, r.configs + k * 24) <= R);
        if (R == 0) assert_true(r.k == 8 || r.k == pc_graph_num_configs(g)); /* only those */
        if (R == 1) assert_true(r.scores[0] < 1000.0 && r.k == 20);
        pc_tune_result_clear(&r);
        pc_tune_space_free(sp);
    }
    pc_graph_free(g);
}

/* Left at PC_TUNE_AUTO (the default) and unresolved, the tile region is the file's
 * configs only; pc_tune_opts_for_model without a model resolves to that and keeps
 * explicit values (with a model: test_tune.py, which trains one with and without rsteps). */
static void test_tile_auto_region(void **state) {
    (void)state;
    pc_tune_opts o = pc_tune_opts_default();
    assert_int_equal(o.tile_max_changes, PC_TUNE_AUTO);
    assert_int_equal(o.tile_new_sizes, PC_TUNE_AUTO);
    pc_graph *g = tile_graph(0);
    pc_error e;
    o.top_k = 20;
    pc_tune_space *sp = NULL;
    pc_tune_result r;
    search_tile(g, &o, &sp, &r);
    for (int64_t k = 0; k < r.k; k++) assert_true(tile_distance(g, r.configs + k * 24) == 0);
    pc_tune_result_clear(&r);
    o.tile_max_changes = -3; /* neither a region nor PC_TUNE_AUTO */
    assert_int_equal(pc_tune_search(sp, g, &o, toy_tile, NULL, &r, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "tile_max_changes"));
    pc_tune_space_free(sp);
    pc_graph_free(g);
    o = pc_tune_opts_default();
    pc_tune_opts_for_model(&o, NULL);
    assert_int_equal(o.tile_max_changes, 0);
    assert_int_equal(o.tile_new_sizes, 0);
    o = pc_tune_opts_default();
    o.tile_max_changes = 3, o.tile_new_sizes = 1;
    pc_tune_opts_for_model(&o, NULL);
    assert_int_equal(o.tile_max_changes, 3);
    assert_int_equal(o.tile_new_sizes, 1);
}

static void test_refusals(void **state) {
    (void)state;
    pc_graph *g = tile_graph(1);
    pc_tune_space *sp = NULL;
    pc_error e;
    assert_int_equal(pc_tune_space_from_graph(g, NULL, &sp, &e), PC_ERR_INVALID);
    assert_non_null(strstr(e.msg, "one configuration"));
    pc_graph_free(g);
    g = tile_graph(0);
    assert_int_equal(pc_tune_space_from_graph(g, NULL, &sp, &e), PC_OK);
    pc_tune_opts o = pc_tune_opts_default();
    pc_tune_result r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    o.budget_s = 0;
    assert_int_equal(pc_tune_search(sp, g, &o, toy_tile, NULL, &r, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "pc_tune_opts.budget_s"));
    o = pc_tune_opts_default();
    o.top_k = 0;
    assert_int_equal(pc_tune_search(sp, g, &o, toy_tile, NULL, &r, &e), PC_ERR_ARG);
    o = pc_tune_opts_default();
    assert_true(o.tile_risk == PC_TUNE_DEFAULT_TILE_RISK && o.tile_risk == 0.0);
    o.tile_risk = -1;
    assert_int_equal(pc_tune_search(sp, g, &o, toy_tile, NULL, &r, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "pc_tune_opts.tile_risk"));
    pc_tune_stop stop;
    assert_int_equal(pc_tune_stop_parse("converged", &stop), PC_OK);
    assert_int_equal(stop, PC_TUNE_STOP_CONVERGED);
    assert_string_equal(pc_tune_stop_name(PC_TUNE_STOP_BUDGET), "budget");
    assert_null(pc_tune_stop_name(PC_TUNE_STOP_COUNT));
    pc_tune_space_free(sp);
    pc_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_space),
        cmocka_unit_test(test_layout_search),
        cmocka_unit_test(test_layout_trust_region),
        cmocka_unit_test(test_tile_search),
        cmocka_unit_test(test_tile_trust_region),
        cmocka_unit_test(test_tile_auto_region),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
