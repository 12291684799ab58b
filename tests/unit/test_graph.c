/*
 * Graph module: k-hop pruning and chain collapse on small hand-checked
 * graphs, segmentation invariants for the three methods, edge cases and
 * error messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "graph/graph.h"

#define NE(a) ((int64_t)(sizeof(a) / sizeof((a)[0]) / 2))
#define NI(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

static void assert_i32s(const int32_t *got, const int32_t *want, int64_t n) {
    for (int64_t i = 0; i < n; i++) assert_int_equal(got[i], want[i]);
}

static void assert_msg_has(const pc_error *e, const char *needle) {
    if (!strstr(e->msg, needle)) fail_msg("message \"%s\" lacks \"%s\"", e->msg, needle);
}

/* Checks the structure of a result against the input it was built from. */
static void check_pruned(const pc_pruned *p, int32_t n_old, const int32_t *cfg, int64_t nc) {
    assert_int_equal(p->n_old, n_old);
    assert_int_equal(p->nc, nc);
    assert_int_equal(p->n, p->n_khop - p->n_collapsed);
    for (int32_t i = 0; i < p->n; i++) {
        assert_int_equal(p->old_to_new[p->kept[i]], i);
        if (i) assert_true(p->kept[i - 1] < p->kept[i]);
    }
    int32_t kept = 0;
    for (int32_t x = 0; x < n_old; x++) kept += p->old_to_new[x] >= 0;
    assert_int_equal(kept, p->n);
    for (int64_t j = 0; j < nc; j++) assert_int_equal(p->config_ids[j], p->old_to_new[cfg[j]]);
    for (int64_t e = 0; e < 2 * p->m; e++) assert_true(p->edges[e] >= 0 && p->edges[e] < p->n);
}

/* ---- pruning --------------------------------------------------------------- */

/* 10 nodes; configurable 3 and 7. */
static const int32_t g10[] = {2, 0, 2, 1, 3, 2, 4, 3, 5, 3, 6, 5, 7, 6, 8, 7, 9, 4, 9, 8};
static const int32_t g10_cfg[] = {3, 7};

static void test_prune_1hop(void **state) {
    (void)state;
    pc_pruned p;
    pc_error e;
    assert_int_equal(pc_prune_khop(10, g10, NE(g10), g10_cfg, 2, NULL, &p, &e), PC_OK);
    check_pruned(&p, 10, g10_cfg, 2);
    /* 3: operand 2, users 4 5; 7: operand 6, user 8 */
    static const int32_t kept[] = {2, 3, 4, 5, 6, 7, 8};
    static const int32_t edges[] = {1, 0, 2, 1, 3, 1, 4, 3, 5, 4, 6, 5};
    static const int32_t cfg[] = {1, 5};
    assert_int_equal(p.n, 7);
    assert_int_equal(p.n_khop, 7);
    assert_int_equal(p.m_old, 10);
    assert_int_equal(p.m_khop, 6);
    assert_int_equal(p.m, 6);
    assert_int_equal(p.n_collapsed, 0);
    assert_int_equal(p.m_bridge, 0);
    assert_i32s(p.kept, kept, 7);
    assert_i32s(p.edges, edges, 12);
    assert_i32s(p.config_ids, cfg, 2);
    assert_int_equal(p.old_to_new[0], -1);
    assert_int_equal(p.old_to_new[9], -1);
    char line[256];
    assert_string_equal(pc_pruned_describe(&p, line, sizeof line),
                        "nodes 10 -> 7 (70.0%), edges 10 -> 6 (60.0%), 2 configurable");
    pc_pruned_free(&p);
    pc_pruned_free(&p); /* zeroed: fine twice */
    pc_pruned_free(NULL);
}

static void test_prune_2hop_and_0hop(void **state) {
    (void)state;
    pc_prune_opts o = pc_prune_opts_default();
    assert_int_equal(o.hops, 1);
    assert_int_equal(o.collapse_chains, 0);
    pc_pruned p;
    o.hops = 2; /* reaches 0 and 1 (via 2), 9 (via 4 and 8): everything */
    assert_int_equal(pc_prune_khop(10, g10, NE(g10), g10_cfg, 2, &o, &p, NULL), PC_OK);
    check_pruned(&p, 10, g10_cfg, 2);
    assert_int_equal(p.n, 10);
    assert_int_equal(p.m, 10);
    assert_i32s(p.edges, g10, 20); /* input order kept */
    pc_pruned_free(&p);

    /* a chain 0 <- 1 <- ... <- 7, configurable 3: 2 hops keep 1..5 */
    static const int32_t chain[] = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6};
    static const int32_t c3[] = {3};
    assert_int_equal(pc_prune_khop(8, chain, NE(chain), c3, 1, &o, &p, NULL), PC_OK);
    static const int32_t kept2[] = {1, 2, 3, 4, 5};
    static const int32_t edges2[] = {1, 0, 2, 1, 3, 2, 4, 3};
    assert_int_equal(p.n, 5);
    assert_int_equal(p.m, 4);
    assert_i32s(p.kept, kept2, 5);
    assert_i32s(p.edges, edges2, 8);
    assert_int_equal(p.config_ids[0], 2);
    pc_pruned_free(&p);

    o.hops = 0; /* the configurable nodes only */
    assert_int_equal(pc_prune_khop(10, g10, NE(g10), g10_cfg, 2, &o, &p, NULL), PC_OK);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.m, 0);
    assert_int_equal(p.kept[0], 3);
    assert_int_equal(p.kept[1], 7);
    assert_int_equal(p.config_ids[0], 0);
    assert_int_equal(p.config_ids[1], 1);
    pc_pruned_free(&p);
}

static void test_prune_collapse(void **state) {
    (void)state;
    pc_prune_opts o = {.hops = 1, .collapse_chains = 1};
    pc_pruned p;
    /* 1 hop keeps 2..8; there 5 (3 -> 5 -> 6) and 6 (5 -> 6 -> 7) are a chain, so
       7 gets a bridge to 3; 4 (no user left) and 8 (no user) stay. */
    assert_int_equal(pc_prune_khop(10, g10, NE(g10), g10_cfg, 2, &o, &p, NULL), PC_OK);
    check_pruned(&p, 10, g10_cfg, 2);
    static const int32_t kept[] = {2, 3, 4, 7, 8};
    static const int32_t edges[] = {1, 0, 2, 1, 3, 1, 4, 3};
    static const int32_t cfg[] = {1, 3};
    assert_int_equal(p.n_khop, 7);
    assert_int_equal(p.n_collapsed, 2);
    assert_int_equal(p.n, 5);
    assert_int_equal(p.m_khop, 6);
    assert_int_equal(p.m, 4);
    assert_int_equal(p.m_bridge, 1);
    assert_i32s(p.kept, kept, 5);
    assert_i32s(p.edges, edges, 8);
    assert_i32s(p.config_ids, cfg, 2);
    char line[256];
    assert_string_equal(pc_pruned_describe(&p, line, sizeof line),
                        "nodes 10 -> 5 (50.0%), edges 10 -> 4 (40.0%), 2 configurable, "
                        "2 collapsed");
    pc_pruned_free(&p);

    /* a whole chain between two configurable ends collapses to one edge */
    static const int32_t chain[] = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6};
    static const int32_t ends[] = {0, 7};
    o.hops = 100;
    assert_int_equal(pc_prune_khop(8, chain, NE(chain), ends, 2, &o, &p, NULL), PC_OK);
    check_pruned(&p, 8, ends, 2);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.n_collapsed, 6);
    assert_int_equal(p.m, 1);
    assert_int_equal(p.m_bridge, 1);
    assert_int_equal(p.edges[0], 1);
    assert_int_equal(p.edges[1], 0);
    pc_pruned_free(&p);

    /* a configurable node breaks a chain: 0 <- 1 <- 2* <- 3 <- 4 */
    static const int32_t c2[] = {2};
    assert_int_equal(pc_prune_khop(5, chain, 4, c2, 1, &o, &p, NULL), PC_OK);
    static const int32_t kept3[] = {0, 2, 4};
    static const int32_t edges3[] = {1, 0, 2, 1};
    assert_int_equal(p.n, 3);
    assert_int_equal(p.m_bridge, 2);
    assert_i32s(p.kept, kept3, 3);
    assert_i32s(p.edges, edges3, 4);
    assert_int_equal(p.config_ids[0], 1);
    pc_pruned_free(&p);

    /* a bridge that repeats a direct edge is dropped: 2 -> 1 -> 0 and 2 -> 0 */
    static const int32_t tri[] = {1, 0, 2, 0, 2, 1};
    assert_int_equal(pc_prune_khop(3, tri, NE(tri), NULL, 0, &o, &p, NULL), PC_OK);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.m, 1);
    assert_int_equal(p.m_bridge, 0);
    assert_int_equal(p.edges[0], 1);
    assert_int_equal(p.edges[1], 0);
    pc_pruned_free(&p);

    /* repeated edges count once: 1 has one distinct operand and user */
    static const int32_t rep[] = {1, 0, 1, 0, 2, 1, 2, 1};
    assert_int_equal(pc_prune_khop(3, rep, NE(rep), NULL, 0, &o, &p, NULL), PC_OK);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.m, 1);
    assert_int_equal(p.m_bridge, 1);
    pc_pruned_free(&p);

    /* fan-out and fan-in are not chains; self-loops are not chains */
    static const int32_t fan[] = {1, 0, 2, 0, 3, 1, 3, 2, 4, 4, 4, 3, 5, 4};
    assert_int_equal(pc_prune_khop(6, fan, NE(fan), NULL, 0, &o, &p, NULL), PC_OK);
    /* 1 and 2 are chains (0 -> 1 -> 3, 0 -> 2 -> 3): both collapse, 3 -> 0
       once; 4 has a self-loop, so stays */
    static const int32_t kept4[] = {0, 3, 4, 5};
    static const int32_t edges4[] = {1, 0, 2, 1, 2, 2, 3, 2};
    assert_int_equal(p.n, 4);
    assert_i32s(p.kept, kept4, 4);
    assert_int_equal(p.m, 4);
    assert_i32s(p.edges, edges4, 8);
    assert_int_equal(p.m_bridge, 1);
    pc_pruned_free(&p);

    /* a cycle of chain nodes only (not an HLO DAG) is kept as it is */
    static const int32_t cyc[] = {0, 1, 1, 0};
    assert_int_equal(pc_prune_khop(2, cyc, NE(cyc), NULL, 0, &o, &p, NULL), PC_OK);
    static const int32_t edges5[] = {0, 1, 1, 0};
    assert_int_equal(p.n, 2);
    assert_int_equal(p.n_collapsed, 0);
    assert_int_equal(p.m, 2);
    assert_i32s(p.edges, edges5, 4);
    pc_pruned_free(&p);
}

static void test_prune_edge_cases(void **state) {
    (void)state;
    pc_pruned p;
    pc_prune_opts col = {.hops = 1, .collapse_chains = 1};
    /* n = 1, no edges */
    static const int32_t zero[] = {0};
    assert_int_equal(pc_prune_khop(1, NULL, 0, zero, 1, NULL, &p, NULL), PC_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.m, 0);
    assert_int_equal(p.kept[0], 0);
    assert_int_equal(p.config_ids[0], 0);
    pc_pruned_free(&p);
    assert_int_equal(pc_prune_khop(1, NULL, 0, NULL, 0, &col, &p, NULL), PC_OK);
    assert_int_equal(p.n, 1);
    pc_pruned_free(&p);

    /* no configurable nodes: every node kept (documented), edges unchanged */
    assert_int_equal(pc_prune_khop(10, g10, NE(g10), NULL, 0, NULL, &p, NULL), PC_OK);
    assert_int_equal(p.n, 10);
    assert_int_equal(p.m, 10);
    assert_int_equal(p.nc, 0);
    assert_i32s(p.edges, g10, 20);
    pc_pruned_free(&p);

    /* all nodes configurable: everything kept, nothing collapses */
    int32_t all[10];
    for (int i = 0; i < 10; i++) all[i] = 9 - i; /* any order */
    col.hops = 0;
    assert_int_equal(pc_prune_khop(10, g10, NE(g10), all, 10, &col, &p, NULL), PC_OK);
    check_pruned(&p, 10, all, 10);
    assert_int_equal(p.n, 10);
    assert_int_equal(p.n_collapsed, 0);
    assert_int_equal(p.m, 10);
    assert_i32s(p.config_ids, all, 10);
    pc_pruned_free(&p);

    /* isolated configurable node, no edges at all */
    static const int32_t c2[] = {2};
    assert_int_equal(pc_prune_khop(5, NULL, 0, c2, 1, NULL, &p, NULL), PC_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.kept[0], 2);
    pc_pruned_free(&p);
}

static void test_prune_remap_splits(void **state) {
    (void)state;
    pc_pruned p;
    /* keeps 2..8 of 0..9 */
    assert_int_equal(pc_prune_khop(10, g10, NE(g10), g10_cfg, 2, NULL, &p, NULL), PC_OK);
    static const int64_t splits[] = {0, 1, 3, 5, 9, 10};
    static const int64_t want[] = {0, 0, 1, 3, 7, 7};
    int64_t got[6];
    assert_int_equal(pc_pruned_remap_splits(&p, splits, 6, got, NULL), PC_OK);
    for (int i = 0; i < 6; i++) assert_int_equal(got[i], want[i]);
    pc_error e;
    static const int64_t bad[] = {0, 11};
    assert_int_equal(pc_pruned_remap_splits(&p, bad, 2, got, &e), PC_ERR_RANGE);
    assert_msg_has(&e, "node_splits[1] = 11");
    pc_pruned_free(&p);
}

static void test_prune_bad_input(void **state) {
    (void)state;
    pc_pruned p;
    pc_error e;
    static const int32_t bad_edge[] = {1, 0, 2, 5};
    static const int32_t c0[] = {0};
    assert_int_equal(pc_prune_khop(3, bad_edge, 2, c0, 1, NULL, &p, &e), PC_ERR_RANGE);
    assert_msg_has(&e, "edge_index[1] = [2, 5]");
    assert_msg_has(&e, "[0, 3)");
    assert_null(p.kept); /* zeroed on failure */
    static const int32_t neg_edge[] = {-1, 0};
    assert_int_equal(pc_prune_khop(3, neg_edge, 1, c0, 1, NULL, &p, &e), PC_ERR_RANGE);
    assert_msg_has(&e, "edge_index[0] = [-1, 0]");
    static const int32_t cfg_out[] = {0, 3};
    assert_int_equal(pc_prune_khop(3, NULL, 0, cfg_out, 2, NULL, &p, &e), PC_ERR_RANGE);
    assert_msg_has(&e, "node_config_ids[1] = 3");
    static const int32_t cfg_dup[] = {1, 1};
    assert_int_equal(pc_prune_khop(3, NULL, 0, cfg_dup, 2, NULL, &p, &e), PC_ERR_INVALID);
    assert_msg_has(&e, "node_config_ids[1] = 1 repeats");
    pc_prune_opts o = {.hops = -1, .collapse_chains = 0};
    assert_int_equal(pc_prune_khop(3, NULL, 0, c0, 1, &o, &p, &e), PC_ERR_ARG);
    assert_msg_has(&e, "hops = -1");
    assert_int_equal(pc_prune_khop(0, NULL, 0, NULL, 0, NULL, &p, &e), PC_ERR_ARG);
    assert_msg_has(&e, "node count 0");
    assert_int_equal(pc_prune_khop((int64_t)INT32_MAX + 1, NULL, 0, NULL, 0, NULL, &p, &e),
                     PC_ERR_ARG);
    assert_int_equal(pc_prune_khop(3, NULL, 2, c0, 1, NULL, &p, &e), PC_ERR_ARG);
    assert_msg_has(&e, "edge_index is NULL");
    assert_int_equal(pc_prune_khop(3, NULL, 0, NULL, 1, NULL, &p, &e), PC_ERR_ARG);
    assert_int_equal(pc_prune_khop(3, NULL, 0, c0, 4, NULL, &p, &e), PC_ERR_ARG);
    assert_int_equal(pc_prune_khop(3, NULL, 0, c0, 1, NULL, NULL, &e), PC_ERR_ARG);
}

/* ---- segmentation ---------------------------------------------------------- */

/* Invariants every segmentation satisfies. */
static void check_seg(const pc_segmentation *s, int32_t n, const int32_t *edges, int64_t m) {
    assert_int_equal(s->n, n);
    assert_int_equal(s->m, m);
    assert_true(s->nseg >= 1 && s->nseg <= n);
    assert_int_equal(s->seg_ptr[0], 0);
    assert_int_equal(s->seg_ptr[s->nseg], n);
    char *seen = calloc((size_t)n, 1);
    assert_non_null(seen);
    int32_t mn = INT32_MAX, mx = 0;
    for (int32_t g = 0; g < s->nseg; g++) {
        int32_t b = s->seg_ptr[g], e = s->seg_ptr[g + 1];
        assert_true(e > b); /* non-empty */
        if (e - b < mn) mn = e - b;
        if (e - b > mx) mx = e - b;
        if (g) assert_true(s->seg_nodes[s->seg_ptr[g - 1]] < s->seg_nodes[b]); /* canonical */
        for (int32_t i = b; i < e; i++) {
            int32_t x = s->seg_nodes[i];
            assert_true(x >= 0 && x < n);
            assert_false(seen[x]); /* in exactly one segment */
            seen[x] = 1;
            assert_int_equal(s->seg_of_node[x], g);
            if (i > b) assert_true(s->seg_nodes[i - 1] < x);
        }
    }
    free(seen);
    assert_int_equal(s->min_size, mn);
    assert_int_equal(s->max_size, mx);
    int64_t k = 0;
    for (int64_t e = 0; e < m; e++)
        if (s->seg_of_node[edges[2 * e]] != s->seg_of_node[edges[2 * e + 1]]) {
            assert_true(k < s->n_cross);
            assert_int_equal(s->cross[k++], e);
        }
    assert_int_equal(k, s->n_cross);
}

static void assert_contiguous(const pc_segmentation *s) {
    for (int32_t i = 1; i < s->n; i++)
        assert_true(s->seg_of_node[i] == s->seg_of_node[i - 1] ||
                    s->seg_of_node[i] == s->seg_of_node[i - 1] + 1);
}

/* A chain 0 <- 1 <- ... <- n-1 plus a skip edge i -> i-3 every few nodes. */
static int32_t *make_graph(int32_t n, int64_t *m) {
    int32_t *e = malloc(sizeof *e * 4 * (size_t)(n + 1));
    assert_non_null(e);
    int64_t k = 0;
    for (int32_t i = 1; i < n; i++) {
        e[2 * k] = i, e[2 * k + 1] = i - 1, k++;
        if (i >= 3 && i % 5 == 0) e[2 * k] = i, e[2 * k + 1] = i - 3, k++;
    }
    *m = k;
    return e;
}

static void test_seg_contiguous(void **state) {
    (void)state;
    pc_segmentation s;
    int64_t m;
    int32_t *e = make_graph(10, &m);
    assert_int_equal(pc_segment_contiguous(10, e, m, 3, &s, NULL), PC_OK);
    check_seg(&s, 10, e, m);
    static const int32_t want[] = {0, 0, 1, 1, 1, 2, 2, 3, 3, 3};
    assert_int_equal(s.nseg, 4);
    assert_i32s(s.seg_of_node, want, 10);
    assert_int_equal(s.method, PC_SEG_CONTIGUOUS);
    assert_string_equal(pc_seg_method_name(s.method), "contiguous");
    assert_int_equal(s.target, 3);
    /* chain edges 2->1, 5->4, 7->6 and skip edge 5->2 cross */
    assert_int_equal(s.n_cross, 4);
    pc_segmentation_free(&s);
    free(e);

    for (int32_t n = 1; n <= 40; n++) {
        e = make_graph(n, &m);
        for (int32_t t = 1; t <= 12; t++) {
            assert_int_equal(pc_segment_contiguous(n, e, m, t, &s, NULL), PC_OK);
            check_seg(&s, n, e, m);
            assert_contiguous(&s);
            assert_int_equal(s.nseg, (n + t - 1) / t);
            assert_true(s.max_size <= t);
            assert_true(s.max_size - s.min_size <= 1);
            if (s.nseg > 1) assert_true(s.min_size >= t / 2);
            pc_segmentation_free(&s);
        }
        free(e);
    }
}

static void test_seg_node_splits_known(void **state) {
    (void)state;
    pc_segmentation s;
    int64_t m;
    int32_t *e = make_graph(30, &m);
    /* computations [0,2) [2,3) [3,20) [20,21) [21,30), target 8:
       [0,3) packed; [3,20) cut in 3 ([3,8) [8,14) [14,20)); [20,21) alone is
       under min 2 and joins the smaller neighbour, [21,25) of [21,25) [25,30) */
    static const int64_t splits[] = {0, 2, 3, 20, 21, 30};
    assert_int_equal(pc_segment_node_splits(30, e, m, splits, NI(splits), 8, &s, NULL), PC_OK);
    check_seg(&s, 30, e, m);
    assert_contiguous(&s);
    static const int32_t starts[] = {0, 3, 8, 14, 20, 25};
    assert_int_equal(s.nseg, 6);
    for (int g = 0; g < 6; g++) assert_int_equal(s.seg_nodes[s.seg_ptr[g]], starts[g]);
    pc_segmentation_free(&s);

    /* no splits: one computation, as contiguous */
    assert_int_equal(pc_segment_node_splits(30, e, m, NULL, 0, 8, &s, NULL), PC_OK);
    assert_int_equal(s.nseg, 4);
    assert_int_equal(s.max_size, 8);
    assert_int_equal(s.min_size, 7);
    pc_segmentation_free(&s);

    /* small computations pack up to the target: sizes 3 3 3 3 3, target 7 */
    free(e);
    e = make_graph(15, &m);
    static const int64_t small[] = {3, 6, 9, 12};
    assert_int_equal(pc_segment_node_splits(15, e, m, small, 4, 7, &s, NULL), PC_OK);
    check_seg(&s, 15, e, m);
    static const int32_t starts2[] = {0, 6, 12};
    assert_int_equal(s.nseg, 3);
    for (int g = 0; g < 3; g++) assert_int_equal(s.seg_nodes[s.seg_ptr[g]], starts2[g]);
    pc_segmentation_free(&s);
    free(e);
}

static void test_seg_node_splits_random(void **state) {
    (void)state;
    uint64_t rng = 7;
    int64_t splits[64];
    for (int trial = 0; trial < 300; trial++) {
        int32_t n = 1 + (int32_t)(pc_splitmix64(&rng) % 200);
        int32_t t = 1 + (int32_t)(pc_splitmix64(&rng) % 40);
        int64_t k = (int64_t)(pc_splitmix64(&rng) % 20);
        for (int64_t i = 0; i < k; i++)
            splits[i] = (int64_t)(pc_splitmix64(&rng) % (uint64_t)(n + 1));
        for (int64_t i = 1; i < k; i++) /* sort (insertion) */
            for (int64_t j = i; j > 0 && splits[j - 1] > splits[j]; j--) {
                int64_t x = splits[j];
                splits[j] = splits[j - 1];
                splits[j - 1] = x;
            }
        int64_t m;
        int32_t *e = make_graph(n, &m);
        pc_segmentation s;
        assert_int_equal(pc_segment_node_splits(n, e, m, splits, k, t, &s, NULL), PC_OK);
        check_seg(&s, n, e, m);
        assert_contiguous(&s);
        int32_t min = t / 4 > 1 ? t / 4 : 1;
        if (s.nseg > 1) assert_true(s.min_size >= min);
        assert_true(s.max_size <= t + 2 * (min - 1));
        /* computations of <= t nodes are never cut; larger ones are cut at most
           t nodes apart (a segment start inside a computation) */
        int64_t si = 0;
        for (int32_t b = 0; b < n;) {
            while (si < k && splits[si] <= b) si++;
            int32_t ce = si < k ? (int32_t)splits[si] : n;
            if (ce - b <= t) {
                for (int32_t i = b + 1; i < ce; i++)
                    assert_int_equal(s.seg_of_node[i], s.seg_of_node[b]);
            } else {
                int32_t last = b;
                for (int32_t i = b + 1; i < ce; i++)
                    if (s.seg_of_node[i] != s.seg_of_node[i - 1]) {
                        assert_true(i - last <= t);
                        last = i;
                    }
            }
            b = ce;
        }
        pc_segmentation_free(&s);
        free(e);
    }
}

/* rows x cols grid, node r*cols+c; edges to the left and upper neighbour */
static int32_t *make_grid(int32_t rows, int32_t cols, int64_t *m) {
    int32_t *e = malloc(sizeof *e * 4 * (size_t)rows * (size_t)cols);
    assert_non_null(e);
    int64_t k = 0;
    for (int32_t r = 0; r < rows; r++)
        for (int32_t c = 0; c < cols; c++) {
            int32_t x = r * cols + c;
            if (c) e[2 * k] = x, e[2 * k + 1] = x - 1, k++;
            if (r) e[2 * k] = x, e[2 * k + 1] = x - cols, k++;
        }
    *m = k;
    return e;
}

static void test_seg_metis(void **state) {
    (void)state;
    int64_t m;
    int32_t *e = make_grid(20, 20, &m);
    pc_segmentation s, s2;
    assert_int_equal(pc_segment_metis(400, e, m, 50, 1, &s, NULL), PC_OK);
    check_seg(&s, 400, e, m);
    assert_int_equal(s.method, PC_SEG_METIS);
    assert_int_equal(s.nseg, 8); /* ceil(400 / 50) */
    assert_true(s.max_size <= 55); /* METIS allows 3% over n / nparts */
    assert_true(s.min_size >= 25);
    assert_true(s.n_cross > 0 && s.n_cross < m / 4);
    /* the same seed gives the same partition */
    assert_int_equal(pc_segment_metis(400, e, m, 50, 1, &s2, NULL), PC_OK);
    assert_int_equal(s2.nseg, s.nseg);
    assert_i32s(s2.seg_of_node, s.seg_of_node, 400);
    pc_segmentation_free(&s2);
    pc_segmentation_free(&s);

    /* uneven: ceil(400 / 60) = 7 parts */
    assert_int_equal(pc_segment_metis(400, e, m, 60, 3, &s, NULL), PC_OK);
    check_seg(&s, 400, e, m);
    assert_int_equal(s.nseg, 7);
    assert_true(s.max_size <= 62);
    pc_segmentation_free(&s);

    /* repeated edges and self-loops are fine */
    int32_t *e2 = malloc(sizeof *e2 * 2 * (size_t)(2 * m + 400));
    assert_non_null(e2);
    memcpy(e2, e, sizeof *e * 2 * (size_t)m);
    memcpy(e2 + 2 * m, e, sizeof *e * 2 * (size_t)m);
    for (int32_t i = 0; i < 400; i++) e2[4 * m + 2 * i] = e2[4 * m + 2 * i + 1] = i;
    assert_int_equal(pc_segment_metis(400, e2, 2 * m + 400, 100, 1, &s, NULL), PC_OK);
    check_seg(&s, 400, e2, 2 * m + 400);
    assert_int_equal(s.nseg, 4);
    pc_segmentation_free(&s);
    free(e2);

    /* one part; one node per part (both answered without METIS) */
    assert_int_equal(pc_segment_metis(400, e, m, 400, 1, &s, NULL), PC_OK);
    assert_int_equal(s.nseg, 1);
    assert_int_equal(s.n_cross, 0);
    assert_null(s.cross);
    pc_segmentation_free(&s);
    assert_int_equal(pc_segment_metis(400, e, m, 1, 1, &s, NULL), PC_OK);
    check_seg(&s, 400, e, m);
    assert_int_equal(s.nseg, 400);
    assert_int_equal(s.n_cross, m);
    pc_segmentation_free(&s);
    free(e);

    /* no edges, and a disconnected graph: parts may come back empty */
    assert_int_equal(pc_segment_metis(30, NULL, 0, 10, 1, &s, NULL), PC_OK);
    check_seg(&s, 30, NULL, 0);
    assert_true(s.nseg >= 1 && s.nseg <= 3);
    pc_segmentation_free(&s);
    e = make_grid(3, 3, &m);
    int32_t e3[2 * 24];
    memcpy(e3, e, sizeof *e * 2 * (size_t)m);
    for (int64_t i = 0; i < m; i++) /* a second copy on nodes 9..17 */
        e3[2 * (m + i)] = e[2 * i] + 9, e3[2 * (m + i) + 1] = e[2 * i + 1] + 9;
    assert_int_equal(pc_segment_metis(18, e3, 2 * m, 9, 1, &s, NULL), PC_OK);
    check_seg(&s, 18, e3, 2 * m);
    assert_int_equal(s.nseg, 2);
    assert_int_equal(s.n_cross, 0); /* the two components */
    pc_segmentation_free(&s);
    free(e);
}

static void test_seg_edge_cases(void **state) {
    (void)state;
    pc_segmentation s;
    /* n = 1, no edges, for every method */
    static const int64_t sp[] = {0, 1};
    assert_int_equal(pc_segment_contiguous(1, NULL, 0, 5, &s, NULL), PC_OK);
    check_seg(&s, 1, NULL, 0);
    assert_int_equal(s.nseg, 1);
    pc_segmentation_free(&s);
    assert_int_equal(pc_segment_node_splits(1, NULL, 0, sp, 2, 5, &s, NULL), PC_OK);
    check_seg(&s, 1, NULL, 0);
    pc_segmentation_free(&s);
    assert_int_equal(pc_segment_metis(1, NULL, 0, 1, 0, &s, NULL), PC_OK);
    check_seg(&s, 1, NULL, 0);
    pc_segmentation_free(&s);
    /* self-loops never cross */
    static const int32_t loop[] = {0, 0, 1, 1};
    assert_int_equal(pc_segment_contiguous(2, loop, 2, 1, &s, NULL), PC_OK);
    assert_int_equal(s.nseg, 2);
    assert_int_equal(s.n_cross, 0);
    pc_segmentation_free(&s);

    /* labels: renumbered by first node, gaps dropped */
    static const int32_t lab[] = {7, 3, 7, 100, 3};
    static const int32_t e[] = {1, 0, 2, 0, 4, 3};
    assert_int_equal(pc_segmentation_from_labels(5, lab, e, NE(e), &s, NULL), PC_OK);
    check_seg(&s, 5, e, NE(e));
    static const int32_t want[] = {0, 1, 0, 2, 1};
    assert_int_equal(s.nseg, 3);
    assert_i32s(s.seg_of_node, want, 5);
    assert_int_equal(s.n_cross, 2);
    assert_int_equal(s.cross[0], 0);
    assert_int_equal(s.cross[1], 2);
    pc_segmentation_free(&s);
    pc_segmentation_free(&s);
    pc_segmentation_free(NULL);
}

static void test_seg_bad_input(void **state) {
    (void)state;
    pc_segmentation s;
    pc_error e;
    assert_int_equal(pc_segment_contiguous(5, NULL, 0, 0, &s, &e), PC_ERR_ARG);
    assert_msg_has(&e, "target segment size 0 must be >= 1");
    assert_null(s.seg_of_node);
    assert_int_equal(pc_segment_metis(5, NULL, 0, -3, 0, &s, &e), PC_ERR_ARG);
    assert_msg_has(&e, "pc_segment_metis");
    assert_int_equal(pc_segment_node_splits(5, NULL, 0, NULL, 0, 0, &s, &e), PC_ERR_ARG);
    static const int32_t bad[] = {0, 1, 1, 9};
    assert_int_equal(pc_segment_contiguous(5, bad, 2, 2, &s, &e), PC_ERR_RANGE);
    assert_msg_has(&e, "edge_index[1] = [1, 9]");
    assert_int_equal(pc_segment_metis(5, bad, 2, 2, 0, &s, &e), PC_ERR_RANGE);
    assert_int_equal(pc_segment_contiguous(0, NULL, 0, 2, &s, &e), PC_ERR_ARG);
    assert_msg_has(&e, "node count 0");
    static const int64_t dec[] = {0, 3, 2, 5};
    assert_int_equal(pc_segment_node_splits(5, NULL, 0, dec, 4, 2, &s, &e), PC_ERR_INVALID);
    assert_msg_has(&e, "node_splits[2] = 2 is smaller than node_splits[1] = 3");
    static const int64_t over[] = {0, 6};
    assert_int_equal(pc_segment_node_splits(5, NULL, 0, over, 2, 2, &s, &e), PC_ERR_RANGE);
    assert_msg_has(&e, "node_splits[1] = 6 is outside [0, 5]");
    static const int64_t neg[] = {-1};
    assert_int_equal(pc_segment_node_splits(5, NULL, 0, neg, 1, 2, &s, &e), PC_ERR_RANGE);
    assert_int_equal(pc_segment_node_splits(5, NULL, 0, NULL, 2, 2, &s, &e), PC_ERR_ARG);
    static const int32_t lab[] = {0, -2};
    assert_int_equal(pc_segmentation_from_labels(2, lab, NULL, 0, &s, &e), PC_ERR_RANGE);
    assert_msg_has(&e, "labels[1] = -2 is negative");
    assert_int_equal(pc_segmentation_from_labels(2, NULL, NULL, 0, &s, &e), PC_ERR_ARG);
    assert_int_equal(pc_segment_contiguous(5, NULL, 0, 2, NULL, &e), PC_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prune_1hop),
        cmocka_unit_test(test_prune_2hop_and_0hop),
        cmocka_unit_test(test_prune_collapse),
        cmocka_unit_test(test_prune_edge_cases),
        cmocka_unit_test(test_prune_remap_splits),
        cmocka_unit_test(test_prune_bad_input),
        cmocka_unit_test(test_seg_contiguous),
        cmocka_unit_test(test_seg_node_splits_known),
        cmocka_unit_test(test_seg_node_splits_random),
        cmocka_unit_test(test_seg_metis),
        cmocka_unit_test(test_seg_edge_cases),
        cmocka_unit_test(test_seg_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
