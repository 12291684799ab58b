/*
 * Feature encodings (src/gnn/encode.h): widths, option bits, node rank
 * derivation, -1 padding (hand-checked, idempotent), dimension encodings,
 * layout indicator columns and category ids (hand-checked; the ids of all
 * permutations of rank <= 6 are exactly 0..873), config transforms, and
 * the threaded path against single-row calls.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gnn/encode.h"

#define NF PC_NODE_FEAT_DIM
#define NODE_ALL (NF + PC_ENCODE_NODE_DIM_COLS + PC_ENCODE_LAYOUT_COLS)

static void assert_floats(const float *got, const float *want, int n) {
    for (int i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i]))))
            fail_msg("column %d: got %.7g, want %.7g", i, (double)got[i], (double)want[i]);
}

/* A raw node row: shape dims, product, minor_to_major (0-padded like the dataset). */
static void node_row(float *row, const float *dims, int rank, const float *m2m) {
    memset(row, 0, NF * sizeof *row);
    double prod = 1.0, sum = 0.0;
    for (int i = 0; i < rank; i++) {
        row[PC_NF_SHAPE_DIMS + i] = dims[i];
        row[PC_NF_LAYOUT + i] = m2m ? m2m[i] : 0.0f;
        prod *= dims[i];
        sum += dims[i];
    }
    row[PC_NF_SHAPE_DIMS + 6] = (float)sum;
    row[PC_NF_SHAPE_PROD] = (float)prod;
}

static void test_widths_and_bits(void **state) {
    (void)state;
    pc_encode_opts none = pc_encode_opts_none(), all = pc_encode_opts_all();
    assert_int_equal(pc_encode_node_width(&none, 7), 7);
    assert_int_equal(pc_encode_node_width(&all, NF), 183);
    assert_int_equal(pc_encode_node_width(&all, NF + 2), 185);
    assert_int_equal(pc_encode_node_width(&all, 139), -1);
    assert_int_equal(pc_encode_node_width(&none, 0), -1);
    assert_int_equal(pc_encode_tile_width(&all, 24), 78);
    assert_int_equal(pc_encode_layout_width(&all, 18), 51);
    assert_int_equal(pc_encode_layout_width(&all, 17), -1);
    pc_encode_opts pad = {1, 0, 0, 0, 0, 0, 0}; /* a no-op for configs: any width */
    assert_int_equal(pc_encode_config_width(&pad, PC_KIND_TILE, 5), 5);
    assert_int_equal(pc_encode_config_width(&pad, PC_KIND_LAYOUT, 5), 5);
    assert_int_equal(pc_encode_config_width(&all, PC_KIND_AUTO, 18), -1);
    pc_encode_opts o;
    pc_error e;
    for (uint32_t b = 0; b < 128; b++) {
        assert_int_equal(pc_encode_opts_from_bits(b, &o, &e), PC_OK);
        assert_int_equal(pc_encode_opts_bits(&o), b);
    }
    assert_int_equal(pc_encode_opts_from_bits(128, &o, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "unknown option bits 0x80"));
    pc_encode_opts steps = pc_encode_opts_none();
    steps.steps = 1; /* tile only: 8 columns; a no-op on layout configs */
    assert_int_equal(pc_encode_tile_width(&steps, 24), 32);
    assert_int_equal(pc_encode_tile_width(&steps, 23), -1);
    assert_int_equal(pc_encode_layout_width(&steps, 18), 18);
    steps.dim_encodings = 1;
    assert_int_equal(pc_encode_tile_width(&steps, 24), 86);
    float x[NF] = {0}, y[NODE_ALL];
    assert_int_equal(pc_encode_node(&all, x, 1, 100, y, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "100 columns, need 140"));
    assert_int_equal(pc_encode_configs(&all, PC_KIND_AUTO, x, 1, 18, y, &e), PC_ERR_ARG);
}

static void test_node_rank(void **state) {
    (void)state;
    float row[NF];
    float d[8] = {5, 3, 1, 1, 7, 2, 0, 0};
    node_row(row, d, 0, NULL); /* scalar: product 1 */
    assert_int_equal(pc_encode_node_rank(row), 0);
    float m2[6] = {1, 0};
    node_row(row, d, 2, m2);
    assert_int_equal(pc_encode_node_rank(row), 2);
    float m3[6] = {0, 1, 2}; /* trailing size-1 dims still count */
    float d3[3] = {5, 1, 1};
    node_row(row, d3, 3, m3);
    assert_int_equal(pc_encode_node_rank(row), 3);
    float z[1] = {0}; /* a zero-size rank-1 tensor: product 0 */
    node_row(row, z, 1, NULL);
    assert_int_equal(pc_encode_node_rank(row), 1);
    float d50[2] = {5, 0}, m10[2] = {1, 0}; /* trailing 0 dim, seen through the layout */
    node_row(row, d50, 2, m10);
    assert_int_equal(pc_encode_node_rank(row), 2);
    float m8[6] = {7, 6, 5, 4, 3, 2}; /* rank 8: only 6 slots shown */
    node_row(row, d, 6, m8);
    assert_int_equal(pc_encode_node_rank(row), 8);
    node_row(row, d, 0, NULL);
    row[29] = 2; /* a tuple: no dims */
    assert_int_equal(pc_encode_node_rank(row), 0);
}

static void test_node_pad(void **state) {
    (void)state;
    pc_encode_opts pad = {1, 0, 0, 0, 0, 0, 0};
    pc_error e;
    float row[NF], y[NF], y2[NF];
    float d[2] = {4, 256}, m[2] = {1, 0};
    node_row(row, d, 2, m);
    /* a 2-d window: sizes 3x3, padding_low 0 (present), 1 true + 1 false reversal */
    row[PC_NF_WINDOW + 0] = row[PC_NF_WINDOW + 1] = 3;
    row[PC_NF_WINDOW + 6] = 6;
    row[PC_NF_WINDOW + 7] = 9;
    row[PC_NF_WIN_REV + 0] = 1;
    row[PC_NF_WIN_REV_TRUE] = 1;
    row[PC_NF_WIN_REV_FALSE] = 1;
    assert_int_equal(pc_encode_node(&pad, row, 1, NF, y, &e), PC_OK);
    float dims[8] = {4, 256, -1, -1, -1, -1, 260, 1024};
    assert_floats(y + PC_NF_SHAPE_DIMS, dims, 8);
    float lay[6] = {1, 0, -1, -1, -1, -1};
    assert_floats(y + PC_NF_LAYOUT, lay, 6);
    float pl[8] = {0, 0, -1, -1, -1, -1, 0, 0}; /* padding_low group, sums untouched */
    assert_floats(y + PC_NF_WINDOW + 16, pl, 8);
    float rev[8] = {1, 0, -1, -1, -1, -1, 1, 1};
    assert_floats(y + PC_NF_WIN_REV, rev, 8);
    for (int i = 0; i < NF; i++) /* nothing else moved */
        if (i < PC_NF_SHAPE_DIMS || (i >= 29 && i < PC_NF_WINDOW) || (i >= 93 && i < PC_NF_LAYOUT))
            assert_true(y[i] == row[i]);
    /* idempotent: padded rows give the same rank and the same output */
    assert_int_equal(pc_encode_node_rank(y), 2);
    assert_int_equal(pc_encode_node(&pad, y, 1, NF, y2, &e), PC_OK);
    assert_memory_equal(y, y2, sizeof y);
    /* rank 3 with no layout at all: every layout slot absent */
    float d3[3] = {2, 3, 4};
    node_row(row, d3, 3, NULL);
    assert_int_equal(pc_encode_node(&pad, row, 1, NF, y, &e), PC_OK);
    float none[6] = {-1, -1, -1, -1, -1, -1};
    assert_floats(y + PC_NF_LAYOUT, none, 6);
    assert_floats(y + PC_NF_SHAPE_DIMS, d3, 3);
    /* rank 1: axis 0 stays a real 0 */
    float d1[1] = {9};
    node_row(row, d1, 1, NULL);
    assert_int_equal(pc_encode_node(&pad, row, 1, NF, y, &e), PC_OK);
    float l1[6] = {0, -1, -1, -1, -1, -1};
    assert_floats(y + PC_NF_LAYOUT, l1, 6);
}

static void test_node_dims_and_categories(void **state) {
    (void)state;
    pc_encode_opts all = pc_encode_opts_all();
    pc_error e;
    float row[NF], y[NODE_ALL];
    float d[3] = {300, 128, 1}, m[3] = {2, 1, 0}; /* row-major */
    node_row(row, d, 3, m);
    row[PC_NF_DYN_SLICE] = 129;
    assert_int_equal(pc_encode_node(&all, row, 1, NF, y, &e), PC_OK);
    const float *b = y + NF;
    float want[PC_ENCODE_NODE_DIM_COLS] = {
        log2f(301), 44, 2, log2f(129), 0, 1, 1, 1, 0, /* dims 300, 128, 1 */
        -1, -1, -1, -1, -1, -1, -1, -1, -1,           /* absent dims 3..5 */
        log2f(130), 1, 1, 0, 0, 0,                    /* dynamic slice 129, 0 */
        1, 1, 1, 0,                                   /* minor-most dim: dims[2] = 1 */
        128, log2f(129), 0, 16};                      /* second-minor: dims[1], mod/div 8 */
    assert_floats(b, want, PC_ENCODE_NODE_DIM_COLS);
    float cat[PC_ENCODE_LAYOUT_COLS] = {1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0};
    assert_floats(b + PC_ENCODE_NODE_DIM_COLS, cat, PC_ENCODE_LAYOUT_COLS);
    /* no layout (rank 3, all slots 0): minor dims and categories absent */
    node_row(row, d, 3, NULL);
    assert_int_equal(pc_encode_node(&all, row, 1, NF, y, &e), PC_OK);
    float absent[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    assert_floats(b + 24, absent, 8);
    float zeros[PC_ENCODE_LAYOUT_COLS] = {0};
    assert_floats(b + PC_ENCODE_NODE_DIM_COLS, zeros, PC_ENCODE_LAYOUT_COLS);
    /* only the category block: it starts right after the input */
    pc_encode_opts cats = {0, 0, 1, 0, 0, 0, 0};
    node_row(row, d, 3, m);
    assert_int_equal(pc_encode_node(&cats, row, 1, NF, y, &e), PC_OK);
    assert_floats(y + NF, cat, PC_ENCODE_LAYOUT_COLS);
    assert_memory_equal(y, row, sizeof row);
}

static void test_layout_cols(void **state) {
    (void)state;
    float out[PC_ENCODE_LAYOUT_COLS];
    float rm[6] = {2, 1, 0, -1, -1, -1};
    pc_encode_layout_cols(rm, 3, out);
    float w1[PC_ENCODE_LAYOUT_COLS] = {1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0};
    assert_floats(out, w1, PC_ENCODE_LAYOUT_COLS);
    float asc[6] = {0, 1, 2, -1, -1, -1}; /* fully reversed: disorder 1 */
    pc_encode_layout_cols(asc, 3, out);
    float w2[PC_ENCODE_LAYOUT_COLS] = {1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0};
    assert_floats(out, w2, PC_ENCODE_LAYOUT_COLS);
    float mix[6] = {3, 0, 2, 1, -1, -1}; /* pairs in ascending order: (0,2),(0,1)... */
    pc_encode_layout_cols(mix, 4, out);
    /* ascending pairs: (0,2) (0,1) -> 2 of 6 */
    float w3[PC_ENCODE_LAYOUT_COLS] = {1, 0, 1, 0, 2.0f / 6, 0, 0, 0, 1, 0, 0};
    assert_floats(out, w3, PC_ENCODE_LAYOUT_COLS);
    float dflt[6] = {-1, -1, -1, -1, -1, -1};
    assert_int_equal(pc_encode_layout_rank(dflt), 0);
    pc_encode_layout_cols(dflt, 0, out);
    float w0[PC_ENCODE_LAYOUT_COLS] = {0};
    assert_floats(out, w0, PC_ENCODE_LAYOUT_COLS);
    float one[6] = {0, -1, -1, -1, -1, -1};
    pc_encode_layout_cols(one, pc_encode_layout_rank(one), out);
    float w4[PC_ENCODE_LAYOUT_COLS] = {1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0};
    assert_floats(out, w4, PC_ENCODE_LAYOUT_COLS);
}

/* Visits every permutation of 0..r-1 (Heap's algorithm would do; plain recursion here). */
static void perms(float *s, int r, int at, int *seen, int *count) {
    if (at == r) {
        int id = pc_encode_layout_category(s, r);
        assert_true(id >= 0 && id < PC_ENCODE_LAYOUT_CATEGORIES);
        assert_int_equal(seen[id], 0);
        seen[id] = 1;
        (*count)++;
        return;
    }
    for (int v = 0; v < r; v++) {
        int used = 0;
        for (int i = 0; i < at; i++) used |= s[i] == (float)v;
        if (used) continue;
        s[at] = (float)v;
        perms(s, r, at + 1, seen, count);
    }
}

static void test_layout_category(void **state) {
    (void)state;
    float s[6] = {-1, -1, -1, -1, -1, -1};
    assert_int_equal(pc_encode_layout_category(s, 0), 0);
    float a[6] = {0}, b[6] = {0, 1}, c[6] = {1, 0}, d[6] = {0, 1, 2}, f[6] = {2, 1, 0};
    assert_int_equal(pc_encode_layout_category(a, 1), 1);
    assert_int_equal(pc_encode_layout_category(b, 2), 2);
    assert_int_equal(pc_encode_layout_category(c, 2), 3);
    assert_int_equal(pc_encode_layout_category(d, 3), 4);
    assert_int_equal(pc_encode_layout_category(f, 3), 9);
    float bad1[6] = {0, 0}, bad2[6] = {0, 2}, bad3[6] = {0.5f, 1};
    assert_int_equal(pc_encode_layout_category(bad1, 2), -1);
    assert_int_equal(pc_encode_layout_category(bad2, 2), -1);
    assert_int_equal(pc_encode_layout_category(bad3, 2), -1);
    assert_int_equal(pc_encode_layout_category(d, 7), -1);
    int seen[PC_ENCODE_LAYOUT_CATEGORIES] = {0}, count = 0;
    for (int r = 0; r <= 6; r++) perms(s, r, 0, seen, &count);
    assert_int_equal(count, PC_ENCODE_LAYOUT_CATEGORIES);
}

static void test_configs(void **state) {
    (void)state;
    pc_encode_opts all = pc_encode_opts_all();
    pc_error e;
    /* tile: kernel bounds (1, 256, 300), output (8, 128), input none */
    float t[24] = {1, 256, 300, 0, 0, 0, 557, 76800, 8, 128, 0, 0, 0, 0, 136, 1024};
    float ty[78];
    assert_int_equal(pc_encode_configs(&all, PC_KIND_TILE, t, 1, 24, ty, &e), PC_OK);
    assert_memory_equal(ty, t, sizeof t);
    float tw[54];
    for (int i = 0; i < 54; i++) tw[i] = -1;
    float k[9] = {1, 1, 0, log2f(257), 0, 2, log2f(301), 44, 2};
    float o[6] = {log2f(9), 8, 0, log2f(129), 0, 1};
    memcpy(tw, k, sizeof k);
    memcpy(tw + 18, o, sizeof o);
    assert_floats(ty + 24, tw, 54);
    /* layout: output row-major rank 2, input default, kernel column-major rank 3 */
    float l[18] = {1, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 2, -1, -1, -1};
    float ly[51];
    assert_int_equal(pc_encode_configs(&all, PC_KIND_LAYOUT, l, 1, 18, ly, &e), PC_OK);
    assert_memory_equal(ly, l, sizeof l);
    float lw[33] = {1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, /* output */
                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* input: compiler default */
                    1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0};
    assert_floats(ly + 18, lw, 33);
    /* options off: plain copies */
    pc_encode_opts none = pc_encode_opts_none();
    assert_int_equal(pc_encode_configs(&none, PC_KIND_LAYOUT, l, 1, 18, ly, &e), PC_OK);
    assert_memory_equal(ly, l, sizeof l);
}

static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Many rows take the threaded path; each must equal its single-row encoding. */
/* The steps block (encode.h) on a hand-made kernel: golden values worked out
   by hand (tests/scripts/test_encode_numpy.py checks many more against numpy). */
static void test_tile_steps(void **state) {
    (void)state;
    enum { N = 4, C = 5, W = PC_TILE_CONFIG_DIM + PC_ENCODE_STEPS_COLS };
    float feat[N * NF];
    float inner[1] = {999}, root[3] = {100, 384, 7}, after[1] = {5};
    node_row(feat, inner, 1, NULL);
    node_row(feat + NF, inner, 1, NULL);
    node_row(feat + 2 * NF, root, 3, NULL);
    node_row(feat + 3 * NF, after, 1, NULL);
    feat[NF] = 1.0f;     /* the root of an inner computation */
    feat[2 * NF] = 1.0f; /* the kernel's root: the last node marked as a root */
    pc_encode_graph g = {N, feat, NF, NULL, NULL, 0, NULL, 0};
    float ext[6];
    pc_encode_tile_root(&g, ext);
    float want_ext[6] = {100, 384, 7, -1, -1, -1};
    for (int i = 0; i < 6; i++) assert_float_equal(ext[i], want_ext[i], 0);
    static const float ob[C][6] = {
        {32, 128, 7}, {256, 512, 8}, {50}, {-1, -1, -1}, {10, 128, 7, 2}};
    float cf[C * PC_TILE_CONFIG_DIM] = {0}, y[C * W];
    for (int c = 0; c < C; c++)
        for (int i = 0; i < 6; i++) cf[c * PC_TILE_CONFIG_DIM + 8 + i] = ob[c][i];
    static const float want[C][PC_ENCODE_STEPS_COLS] = {
        {4, 3, 1, -1, -1, -1, 12, 0.125f},   /* 100/32 -> 4 steps, the last 4/32 full */
        {1, 1, 1, -1, -1, -1, 1, 0.390625f}, /* tiles beyond the extent: 100/256 */
        {2, -1, -1, -1, -1, -1, 2, 1},       /* a rank-1 tile: one dim counts */
        {-1, -1, -1, -1, -1, -1, -1, -1},    /* -1 tiles: nothing counts */
        {10, 3, 1, -1, -1, -1, 30, 1}};      /* a 4th tile dim beyond the root's rank */
    pc_encode_opts o = pc_encode_opts_none();
    o.steps = 1;
    pc_error e;
    pc_encode_mm mm;
    assert_int_equal(pc_encode_plan_build(&o, PC_KIND_TILE, &g, &mm, &e), PC_OK);
    assert_int_equal(mm.tile, 1);
    assert_int_equal(pc_encode_configs_mm(&o, PC_KIND_TILE, &mm, cf, C, 24, y, &e), PC_OK);
    for (int c = 0; c < C; c++) {
        for (int j = 0; j < PC_TILE_CONFIG_DIM; j++)
            assert_float_equal(y[c * W + j], cf[c * PC_TILE_CONFIG_DIM + j], 0);
        for (int j = 0; j < PC_ENCODE_STEPS_COLS; j++)
            assert_float_equal(y[c * W + PC_TILE_CONFIG_DIM + j], want[c][j], 1e-7);
    }
    pc_encode_mm_free(&mm);
    /* without a root mark: the last node; a zero extent gives 0 steps, fill 1 */
    float zero[2] = {0, 64};
    node_row(feat + 3 * NF, zero, 2, NULL);
    feat[NF] = feat[2 * NF] = 0.0f;
    assert_int_equal(pc_encode_plan_build(&o, PC_KIND_TILE, &g, &mm, &e), PC_OK);
    float t2[PC_TILE_CONFIG_DIM] = {0};
    t2[8] = 8, t2[9] = 48;
    assert_int_equal(pc_encode_configs_mm(&o, PC_KIND_TILE, &mm, t2, 1, 24, y, &e), PC_OK);
    float w2[PC_ENCODE_STEPS_COLS] = {0, 2, -1, -1, -1, -1, 0, 1.0f / 3.0f};
    for (int j = 0; j < PC_ENCODE_STEPS_COLS; j++)
        assert_float_equal(y[PC_TILE_CONFIG_DIM + j], w2[j], 1e-7);
    /* the steps encoding without the graph's plan, and a graph without nodes */
    assert_int_equal(pc_encode_configs(&o, PC_KIND_TILE, t2, 1, 24, y, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "needs the kernel root"));
    g.n = 0;
    assert_int_equal(pc_encode_plan_build(&o, PC_KIND_TILE, &g, &mm, &e), PC_ERR_ARG);
    /* on layout configs and without the bit the plan is empty */
    g.n = N;
    assert_int_equal(pc_encode_plan_build(&o, PC_KIND_LAYOUT, &g, &mm, &e), PC_OK);
    assert_int_equal(mm.tile, 0);
}

/* The rsteps block (encode.h) after steps: a dot [64, 96] x [96, 32] -> [64, 32] under
   an add (the kernel root); kernel_bounds M, N, K; golden values by hand. */
static void test_tile_rsteps(void **state) {
    (void)state;
    enum { N = 4, C = 3, W = PC_TILE_CONFIG_DIM + PC_ENCODE_STEPS_COLS + PC_ENCODE_RSTEPS_COLS };
    float feat[N * NF];
    float lhs[2] = {64, 96}, rhs[2] = {96, 32}, out[2] = {64, 32};
    node_row(feat, lhs, 2, NULL);
    node_row(feat + NF, rhs, 2, NULL);
    node_row(feat + 2 * NF, out, 2, NULL);
    node_row(feat + 3 * NF, out, 2, NULL);
    feat[3 * NF] = 1.0f;
    int32_t op[N] = {63, 63, PC_OP_DOT, 2}, edges[6] = {2, 0, 2, 1, 3, 2};
    pc_encode_graph g = {N, feat, NF, op, edges, 3, NULL, 0};
    float red[PC_ENCODE_RED_DIMS];
    int slot;
    pc_encode_tile_reduction(&g, red, &slot);
    assert_float_equal(red[0], 96, 0);
    assert_float_equal(red[1], -1, 0);
    assert_int_equal(slot, 2);
    static const float kb[C][3] = {{64, 32, 8}, {64, 32, 96}, {64, 32, 0}};
    static const float want[C][PC_ENCODE_RSTEPS_COLS] = {
        {12, -1, -1, 12}, {1, -1, -1, 1}, {-1, -1, -1, -1}};
    float cf[C * PC_TILE_CONFIG_DIM] = {0}, y[C * W];
    for (int c = 0; c < C; c++)
        for (int i = 0; i < 3; i++) cf[c * PC_TILE_CONFIG_DIM + i] = kb[c][i];
    pc_encode_opts o = pc_encode_opts_none();
    o.steps = o.rsteps = 1;
    assert_int_equal(pc_encode_tile_width(&o, 24), W);
    pc_error e;
    pc_encode_mm mm;
    assert_int_equal(pc_encode_plan_build(&o, PC_KIND_TILE, &g, &mm, &e), PC_OK);
    assert_int_equal(pc_encode_configs_mm(&o, PC_KIND_TILE, &mm, cf, C, 24, y, &e), PC_OK);
    for (int c = 0; c < C; c++)
        for (int j = 0; j < PC_ENCODE_RSTEPS_COLS; j++)
            assert_float_equal(y[c * W + W - PC_ENCODE_RSTEPS_COLS + j], want[c][j], 0);
    pc_encode_mm_free(&mm);
    /* no dot or convolution, or no opcodes: every reduction column absent */
    op[2] = 2;
    pc_encode_tile_reduction(&g, red, &slot);
    assert_int_equal(slot, -1);
    g.opcode = NULL;
    pc_encode_tile_reduction(&g, red, &slot);
    assert_float_equal(red[0], -1, 0);
}

static void test_many_rows(void **state) {
    (void)state;
    enum { ROWS = 5000, IN = NF + 1 };
    pc_encode_opts all = pc_encode_opts_all();
    int W = pc_encode_node_width(&all, IN);
    float *x = malloc(sizeof(float) * ROWS * IN), *y = malloc(sizeof(float) * ROWS * (size_t)W);
    float *one = malloc(sizeof(float) * (size_t)W);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(one);
    uint64_t s = 42;
    for (int r = 0; r < ROWS; r++) {
        float *row = x + (size_t)r * IN;
        int rank = (int)(next(&s) % 7);
        float d[6], m[6];
        for (int i = 0; i < rank; i++) {
            d[i] = (float)(next(&s) % 1000);
            m[i] = (float)(rank - 1 - i);
        }
        node_row(row, d, rank, m);
        for (int i = 37; i < 134; i++) row[i] = (float)(next(&s) % 5);
        row[NF] = (float)r; /* an extra column passes through */
    }
    pc_error e;
    assert_int_equal(pc_encode_node(&all, x, ROWS, IN, y, &e), PC_OK);
    for (int r = 0; r < ROWS; r += 7) {
        assert_int_equal(pc_encode_node(&all, x + (size_t)r * IN, 1, IN, one, &e), PC_OK);
        assert_memory_equal(one, y + (size_t)r * (size_t)W, sizeof(float) * (size_t)W);
        assert_true(one[NF] == (float)r);
    }
    free(x);
    free(y);
    free(one);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_widths_and_bits),
        cmocka_unit_test(test_node_rank),
        cmocka_unit_test(test_node_pad),
        cmocka_unit_test(test_node_dims_and_categories),
        cmocka_unit_test(test_layout_cols),
        cmocka_unit_test(test_layout_category),
        cmocka_unit_test(test_configs),
        cmocka_unit_test(test_tile_steps),
        cmocka_unit_test(test_tile_rsteps),
        cmocka_unit_test(test_many_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
