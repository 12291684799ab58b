/*
 * Config hygiene (src/dataset/config_pack.h): base-7 layout codes
 * (hand-checked values, every code round trips, pack/unpack of random
 * valid configs is exact, bad values and codes are named in the error),
 * dedup of crafted duplicates (groups, min and median runtimes, tile
 * normalizers, mapping and expansion), dedup against a brute-force
 * grouping, and dedup of tile and layout graphs written to .npz (layout
 * resident and streamed, in several chunks).
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

#include "common/util.h"
#include "dataset/config_pack.h"
#include "perfcast/dataset.h"

static char tmp_root[2048];

static uint64_t rnd(uint64_t *s) { return pc_splitmix64(s); }

/* ---- codes ---------------------------------------------------------------------- */

static void test_code_values(void **state) {
    (void)state;
    float dflt[6] = {-1, -1, -1, -1, -1, -1}, top[6] = {5, 5, 5, 5, 5, 5};
    float first[6] = {0, -1, -1, -1, -1, -1}, rm[6] = {2, 1, 0, -1, -1, -1};
    assert_int_equal(pc_layout_code(dflt), 0);
    assert_int_equal(pc_layout_code(top), PC_LAYOUT_CODE_COUNT - 1);
    assert_int_equal(pc_layout_code(first), 16807);           /* 1 * 7^5 */
    assert_int_equal(pc_layout_code(rm), 3 * 16807 + 2 * 2401 + 343);
    float bad[4][6] = {{6}, {-2}, {0.5f}, {NAN}};
    for (int i = 0; i < 4; i++) assert_int_equal(pc_layout_code(bad[i]), -1);
    float s[6];
    for (int32_t c = 0; c < PC_LAYOUT_CODE_COUNT; c++) {
        pc_layout_decode(c, s);
        if (pc_layout_code(s) != c) fail_msg("code %d does not round trip", (int)c);
    }
}

static void test_pack_roundtrip(void **state) {
    (void)state;
    enum { C = 7, NC = 5 };
    float feat[C * NC * 18], back[C * NC * 18];
    int32_t codes[C * NC * 3];
    uint64_t s = 1;
    for (size_t i = 0; i < sizeof feat / sizeof *feat; i++) feat[i] = (float)(rnd(&s) % 7) - 1.0f;
    pc_error e;
    assert_int_equal(pc_layout_pack(feat, C, NC, codes, &e), PC_OK);
    for (int i = 0; i < C * NC * 3; i++) assert_int_equal(codes[i], pc_layout_code(feat + 6 * i));
    assert_int_equal(pc_layout_unpack(codes, C, NC, back, &e), PC_OK);
    assert_memory_equal(feat, back, sizeof feat);
    assert_int_equal(pc_layout_pack(feat, 0, NC, codes, &e), PC_OK); /* empty */
}

static void expect_pack_error(float v, const char *want) {
    enum { C = 3, NC = 2 };
    float feat[C * NC * 18];
    int32_t codes[C * NC * 3];
    for (int i = 0; i < C * NC * 18; i++) feat[i] = -1;
    feat[(2 * NC + 1) * 18 + 13] = v; /* config 2, node 1, slot 13 = tensor 2, slot 1 */
    pc_error e;
    assert_int_equal(pc_layout_pack(feat, C, NC, codes, &e), PC_ERR_RANGE);
    assert_non_null(strstr(e.msg, "config 2, node 1 (position in node_config_ids), slot 13"
                                  " (tensor 2, slot 1)"));
    assert_non_null(strstr(e.msg, want));
}

static void test_pack_errors(void **state) {
    (void)state;
    expect_pack_error(6, "value 6 is not an integer in [-1, 5]");
    expect_pack_error(-2, "value -2 ");
    expect_pack_error(2.5f, "value 2.5 ");
    expect_pack_error(NAN, "value nan ");
    int32_t codes[6] = {0, 1, 2, 3, PC_LAYOUT_CODE_COUNT, 0};
    float feat[36];
    pc_error e;
    assert_int_equal(pc_layout_unpack(codes, 1, 2, feat, &e), PC_ERR_RANGE);
    assert_non_null(strstr(e.msg, "config 0, node 1, tensor 1: code 117649 not in [0, 117649)"));
    codes[4] = -1;
    assert_int_equal(pc_layout_unpack(codes, 2, 1, feat, &e), PC_ERR_RANGE);
    assert_non_null(strstr(e.msg, "config 1, node 0, tensor 1: code -1"));
}

/* ---- dedup ---------------------------------------------------------------------- */

static void test_dedup_groups(void **state) {
    (void)state;
    /* rows 0..7 over 4 distinct values: A B A C A B D A */
    float rows[8][2] = {{1, 2}, {3, 4}, {1, 2}, {5, 6}, {1, 2}, {3, 4}, {7, 8}, {1, 2}};
    int64_t rt[8] = {50, 9, 40, 7, 60, 8, 5, 45};
    pc_dedup d;
    pc_error e;
    assert_int_equal(pc_config_dedup(rows, 8, sizeof rows[0], rt, NULL,
                                     PC_DEDUP_MIN, &d, &e),
                     PC_OK);
    assert_int_equal(d.n_in, 8);
    assert_int_equal(d.n_out, 4);
    int64_t map[8] = {0, 1, 0, 2, 0, 1, 3, 0}, first[4] = {0, 1, 3, 6}, count[4] = {4, 2, 1, 1};
    int64_t pick[4] = {2, 5, 3, 6}, kept_rt[4] = {40, 8, 7, 5};
    assert_memory_equal(d.map, map, sizeof map);
    assert_memory_equal(d.first, first, sizeof first);
    assert_memory_equal(d.count, count, sizeof count);
    assert_memory_equal(d.pick, pick, sizeof pick);
    assert_memory_equal(d.runtime, kept_rt, sizeof kept_rt);
    float kept[4] = {10, 11, 12, 13}, all[8];
    pc_dedup_expand(&d, kept, all);
    float want_all[8] = {10, 11, 10, 12, 10, 11, 13, 10};
    assert_memory_equal(all, want_all, sizeof all);
    pc_dedup_free(&d);
    /* lower median: A {40,45,50,60} -> 45 (config 7); B {8,9} -> 8 (config 5) */
    assert_int_equal(pc_config_dedup(rows, 8, sizeof rows[0], rt, NULL, PC_DEDUP_MEDIAN, &d, &e),
                     PC_OK);
    int64_t mpick[4] = {7, 5, 3, 6}, mrt[4] = {45, 8, 7, 5};
    assert_memory_equal(d.pick, mpick, sizeof mpick);
    assert_memory_equal(d.runtime, mrt, sizeof mrt);
    pc_dedup_free(&d);
    /* ties go to the lower index; no runtimes: pick = first */
    int64_t tie[8] = {5, 5, 5, 5, 5, 5, 5, 5};
    assert_int_equal(pc_config_dedup(rows, 8, sizeof rows[0], tie, NULL,
                                     PC_DEDUP_MIN, &d, &e),
                     PC_OK);
    assert_memory_equal(d.pick, first, sizeof first);
    pc_dedup_free(&d);
    assert_int_equal(pc_config_dedup(rows, 8, sizeof rows[0], NULL, NULL,
                                     PC_DEDUP_MIN, &d, &e),
                     PC_OK);
    assert_memory_equal(d.pick, first, sizeof first);
    assert_int_equal(d.runtime[0], 0);
    pc_dedup_free(&d);
    pc_dedup_free(NULL);
}

static void test_dedup_normalizers_and_edges(void **state) {
    (void)state;
    float rows[3] = {1, 1, 1};
    int64_t rt[3] = {100, 90, 120}, norm[3] = {50, 30, 100};
    pc_dedup d;
    pc_error e;
    /* ratios 2, 3, 1.2: the min ratio is config 2 although its runtime is largest */
    assert_int_equal(pc_config_dedup(rows, 3, sizeof(float), rt, norm,
                                     PC_DEDUP_MIN, &d, &e),
                     PC_OK);
    assert_int_equal(d.n_out, 1);
    assert_int_equal(d.pick[0], 2);
    assert_int_equal(d.runtime[0], 120);
    pc_dedup_free(&d);
    norm[1] = 0;
    assert_int_equal(pc_config_dedup(rows, 3, sizeof(float), rt, norm, PC_DEDUP_MIN, &d, &e),
                     PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "normalizer of config 1 is 0"));
    assert_null(d.map);
    /* byte equality: -0.0 and 0.0 differ */
    float z[2] = {0.0f, -0.0f};
    assert_int_equal(pc_config_dedup(z, 2, sizeof(float), NULL, NULL, PC_DEDUP_MIN, &d, &e), PC_OK);
    assert_int_equal(d.n_out, 2);
    pc_dedup_free(&d);
    /* no configs; empty rows (all equal) */
    assert_int_equal(pc_config_dedup(NULL, 0, 4, NULL, NULL, PC_DEDUP_MIN, &d, &e), PC_OK);
    assert_int_equal(d.n_out, 0);
    pc_dedup_free(&d);
    assert_int_equal(pc_config_dedup(NULL, 3, 0, rt, NULL, PC_DEDUP_MIN, &d, &e), PC_OK);
    assert_int_equal(d.n_out, 1);
    assert_int_equal(d.pick[0], 1);
    pc_dedup_free(&d);
    assert_int_equal(pc_config_dedup(rows, 3, 4, rt, NULL, (pc_dedup_rule)7, &d, &e), PC_ERR_ARG);
}

/* Random rows over a tiny alphabet (many duplicates) against O(c^2) grouping. */
static void test_dedup_brute_force(void **state) {
    (void)state;
    enum { C = 600, W = 5 };
    static uint8_t rows[C][W];
    static int64_t rt[C];
    uint64_t s = 7;
    for (int i = 0; i < C; i++) {
        for (int j = 0; j < W; j++) rows[i][j] = (uint8_t)(rnd(&s) % 3);
        rt[i] = 1 + (int64_t)(rnd(&s) % 1000);
    }
    pc_dedup d;
    pc_error e;
    assert_int_equal(pc_config_dedup(rows, C, W, rt, NULL, PC_DEDUP_MIN, &d, &e), PC_OK);
    assert_true(d.n_out <= 243);
    int64_t total = 0;
    for (int64_t g = 0; g < d.n_out; g++) {
        total += d.count[g];
        if (g > 0) assert_true(d.first[g] > d.first[g - 1]);
        int64_t lo = INT64_MAX, n = 0;
        for (int i = 0; i < C; i++) {
            int same = memcmp(rows[i], rows[d.first[g]], W) == 0;
            assert_int_equal(same, d.map[i] == g);
            if (same && rt[i] < lo) lo = rt[i];
            n += same;
            if (same && i < d.first[g]) fail_msg("group %d starts late", (int)g);
        }
        assert_int_equal(n, d.count[g]);
        assert_int_equal(d.runtime[g], lo);
        assert_int_equal(d.map[d.pick[g]], g);
    }
    assert_int_equal(total, C);
    pc_dedup_free(&d);
}

/* ---- graphs ---------------------------------------------------------------------- */

static void add(pc_npz_writer *w, const char *key, pc_dtype t, int ndim, const int64_t *shape,
                const void *data) {
    pc_error e;
    if (pc_npz_writer_add(w, key, t, ndim, shape, data, &e) != PC_OK) fail_msg("%s", e.msg);
}

/* A 3-node graph; tile if nc == 0, else layout with nc configurable nodes. */
static const char *write_graph(const char *name, int64_t c, int64_t nc, const float *cfg,
                               const int64_t *rt, const int64_t *norm) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmp_root, name);
    float nf[3 * 4] = {0};
    uint8_t op[3] = {1, 2, 3};
    int64_t edges[2 * 2] = {1, 0, 2, 1}, ids[3] = {0, 1, 2};
    int64_t s_nf[2] = {3, 4}, s_op = 3, s_e[2] = {2, 2}, s_c = c, s_nc = nc;
    pc_npz_writer *w = NULL;
    pc_error e;
    if (pc_npz_writer_open(path, PC_NPZ_DEFLATED, &w, &e) != PC_OK) fail_msg("%s", e.msg);
    add(w, "node_feat", PC_DTYPE_F32, 2, s_nf, nf);
    add(w, "node_opcode", PC_DTYPE_U8, 1, &s_op, op);
    add(w, "edge_index", PC_DTYPE_I64, 2, s_e, edges);
    add(w, "config_runtime", PC_DTYPE_I64, 1, &s_c, rt);
    if (nc == 0) {
        int64_t s_cf[2] = {c, 24};
        add(w, "config_feat", PC_DTYPE_F32, 2, s_cf, cfg);
        add(w, "config_runtime_normalizers", PC_DTYPE_I64, 1, &s_c, norm);
    } else {
        int64_t s_ncf[3] = {c, nc, 18};
        add(w, "node_config_ids", PC_DTYPE_I64, 1, &s_nc, ids);
        add(w, "node_config_feat", PC_DTYPE_F32, 3, s_ncf, cfg);
    }
    if (pc_npz_writer_commit(w, &e) != PC_OK) fail_msg("%s", e.msg);
    return path;
}

static pc_graph *load(const char *path, uint64_t resident) {
    pc_load_opts o = pc_load_opts_default();
    o.max_resident_config_bytes = resident;
    pc_graph *g = NULL;
    pc_error e;
    if (pc_graph_load(path, &o, &g, &e) != PC_OK) fail_msg("%s", e.msg);
    return g;
}

static void test_graph_tile(void **state) {
    (void)state;
    float cf[4 * 24] = {0};
    for (int i = 0; i < 4; i++) cf[i * 24] = (float)(i % 2 + 1); /* A B A B */
    int64_t rt[4] = {10, 20, 8, 30}, norm[4] = {10, 10, 10, 10};
    pc_graph *g = load(write_graph("tile.npz", 4, 0, cf, rt, norm), 0);
    pc_dedup d;
    pc_error e;
    assert_int_equal(pc_graph_config_dedup(g, PC_DEDUP_MIN, &d, &e), PC_OK);
    int64_t map[4] = {0, 1, 0, 1}, pick[2] = {2, 1}, krt[2] = {8, 20};
    assert_memory_equal(d.map, map, sizeof map);
    assert_memory_equal(d.pick, pick, sizeof pick);
    assert_memory_equal(d.runtime, krt, sizeof krt);
    pc_dedup_free(&d);
    pc_graph_free(g);
}

static void test_graph_layout(void **state) {
    (void)state;
    enum { C = 9, NC = 3 };
    float ncf[C * NC * 18];
    int64_t rt[C];
    uint64_t s = 3;
    for (int c = 0; c < C; c++) {
        /* configs c and c + 3 (and c + 6) are equal: 3 groups */
        for (int i = 0; i < NC * 18; i++)
            ncf[c * NC * 18 + i] = c < 3 ? (float)(rnd(&s) % 7) - 1 : ncf[(c % 3) * NC * 18 + i];
        rt[c] = 100 - c;
    }
    const char *path = write_graph("layout.npz", C, NC, ncf, rt, NULL);
    uint64_t chunks[3] = {0, NC * 18 * 4, 2 * NC * 18 * 4}; /* one, 9 and 5 chunks */
    for (int k = 0; k < 6; k++) {
        pc_graph *g = load(path, k < 3 ? 0 : 1); /* resident, then streamed */
        assert_int_equal(pc_graph_node_config_feat(g) == NULL, k >= 3);
        pc_dedup d;
        pc_error e;
        assert_int_equal(pc_graph_config_dedup_ex(g, PC_DEDUP_MIN, chunks[k % 3], &d, &e), PC_OK);
        assert_int_equal(d.n_out, 3);
        for (int c = 0; c < C; c++) assert_int_equal(d.map[c], c % 3);
        int64_t pick[3] = {6, 7, 8}, krt[3] = {94, 93, 92}, count[3] = {3, 3, 3};
        assert_memory_equal(d.pick, pick, sizeof pick);
        assert_memory_equal(d.runtime, krt, sizeof krt);
        assert_memory_equal(d.count, count, sizeof count);
        pc_dedup_free(&d);
        pc_graph_free(g);
    }
    /* a bad value is named with the graph's path and the config */
    ncf[(7 * NC + 2) * 18 + 4] = 9;
    path = write_graph("layout_bad.npz", C, NC, ncf, rt, NULL);
    pc_graph *g = load(path, 1);
    pc_dedup d;
    pc_error e;
    assert_int_equal(pc_graph_config_dedup_ex(g, PC_DEDUP_MIN, NC * 18 * 4, &d, &e), PC_ERR_RANGE);
    assert_non_null(strstr(e.msg, "layout_bad.npz: node_config_feat: config 7, node 2"));
    assert_non_null(strstr(e.msg, "slot 4 (tensor 0, slot 4): value 9"));
    pc_graph_free(g);
}

static int setup(void **state) {
    (void)state;
    const char *base = getenv("PC_TEST_TMP");
    snprintf(tmp_root, sizeof tmp_root, "%s/test_config_pack", base ? base : "/tmp");
    pc_remove_tree(tmp_root);
    pc_error e;
    return pc_mkdirs(tmp_root, &e) == PC_OK ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_code_values),
        cmocka_unit_test(test_pack_roundtrip),
        cmocka_unit_test(test_pack_errors),
        cmocka_unit_test(test_dedup_groups),
        cmocka_unit_test(test_dedup_normalizers_and_edges),
        cmocka_unit_test(test_dedup_brute_force),
        cmocka_unit_test(test_graph_tile),
        cmocka_unit_test(test_graph_layout),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
