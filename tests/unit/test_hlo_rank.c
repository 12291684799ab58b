/*
 * Configurable nodes, fused kernels and in-memory candidates (hlo/candidates.h,
 * pc_rank_sets_from_hlo, pc_graph_from_arrays):
 * - the configurable-node rule picks exactly the 62 config_index_to_node
 *   nodes of the real layout fixture, and no other;
 * - the fixture's module printed as HLO text and parsed back featurizes to
 *   the same arrays as the protobuf (so text and proto imports agree);
 * - a tile fixture module's kernel view (fused computation + wrapper)
 *   featurizes to the same arrays as the module itself when its entry is
 *   just parameters and the fusion, as the tile collection's modules are;
 * - candidates from text: counts, notation round trip, errors with lines.
 * Fixture tests need $PC_SHARED_DIR/fixtures/tpugraphs_raw; without it they
 * are skipped and the program exits 77.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hlo/candidates.h"
#include "hlo/import.h"
#include "hlo/proto.h"
#include "hlo/text.h"
#include "perfcast/hlo.h"
#include "fixtures.h"

static char g_raw[1024];
static int g_fixtures_missing = 1;

static pc_hlo_tuning *read_fixture(const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_raw, name);
    pc_hlo_tuning *t = NULL;
    pc_error err;
    if (pc_hlo_tuning_read(path, &t, &err) != PC_OK) fail_msg("%s", err.msg);
    return t;
}

static void same_graph(const pc_hlo_graph *a, const pc_hlo_graph *b) {
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->m, b->m);
    assert_int_equal(a->k, b->k);
    assert_memory_equal(a->node_feat, b->node_feat, (size_t)a->n * PC_TPUG_NODE_FEATS * 4);
    assert_memory_equal(a->node_opcode, b->node_opcode, (size_t)a->n);
    assert_memory_equal(a->edges, b->edges, (size_t)a->m * 2 * 8);
    assert_memory_equal(a->node_splits, b->node_splits, (size_t)a->k * 8);
}

static void test_rule_matches_fixture(void **state) {
    (void)state;
    if (g_fixtures_missing) skip();
    pc_hlo_tuning *t = read_fixture("module_tuning_data_layout.pb");
    const pc_hlo_tuned *m = &t->mods[0];
    pc_hlo_cfg_node *cn = NULL;
    int64_t nc = 0;
    pc_error err;
    assert_int_equal(pc_hlo_layout_nodes(m->module, &cn, &nc, &err), PC_OK);
    assert_int_equal(m->n_config_nodes, 62);
    assert_int_equal(nc, 62);
    for (int64_t j = 0; j < nc; j++) assert_int_equal(cn[j].node, m->config_index_to_node[j]);
    /* convolutions: output, input, kernel of rank 5; the runs set 2 slots each */
    int convs = 0;
    for (int64_t j = 0; j < nc; j++)
        if (cn[j].tensors == 3) {
            convs++;
            assert_int_equal(cn[j].slots, 2);
            assert_int_equal(cn[j].rank[0], 5);
        }
    assert_int_equal(convs, 53);
    free(cn);
    pc_hlo_tuning_free(t);
}

static void test_text_equals_proto(void **state) {
    (void)state;
    if (g_fixtures_missing) skip();
    pc_hlo_tuning *t = read_fixture("module_tuning_data_layout.pb");
    pc_error err;
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(pc_hlo_print_text_buf(t->mods[0].module, &text, &len, &err), PC_OK);
    pc_hlo_module **mods = NULL;
    int n = 0;
    assert_int_equal(pc_hlo_parse_text(text, len, "layout.hlo", &mods, &n, NULL, &err), PC_OK);
    assert_int_equal(n, 1);
    pc_hlo_graph a, b;
    assert_int_equal(pc_hlo_featurize(t->mods[0].module, &a, &err), PC_OK);
    assert_int_equal(pc_hlo_featurize(mods[0], &b, &err), PC_OK);
    assert_int_equal(a.n, 3163);
    same_graph(&a, &b);
    pc_hlo_cfg_node *cn = NULL;
    int64_t nc = 0;
    assert_int_equal(pc_hlo_layout_nodes(mods[0], &cn, &nc, &err), PC_OK);
    assert_int_equal(nc, 62);
    for (int64_t j = 0; j < nc; j++) assert_int_equal(cn[j].node, t->mods[0].config_index_to_node[j]);
    free(cn);
    pc_hlo_graph_free(&a);
    pc_hlo_graph_free(&b);
    pc_hlo_modules_free(mods, n);
    free(text);
    pc_hlo_tuning_free(t);
}

/* Entry = its parameters in operand order, then the fusion as root. */
static int plain_wrapper(const pc_hlo_module *m) {
    const pc_hlo_computation *e = &m->comp[m->n_comp - 1];
    const pc_hlo_instruction *f = &e->inst[e->n_inst - 1];
    if (f->opcode_id != 41 || f->id != e->root_id || f->operand_ids.n != e->n_inst - 1) return 0;
    for (int32_t p = 0; p + 1 < e->n_inst; p++)
        if (e->inst[p].opcode_id != 63 || e->inst[p].parameter_number != p ||
            f->operand_ids.v[p] != e->inst[p].id)
            return 0;
    return 1;
}

static void test_kernel_view_matches_tile_modules(void **state) {
    (void)state;
    if (g_fixtures_missing) skip();
    pc_hlo_tuning *t = read_fixture("op_tuning_data.pb");
    int compared = 0;
    for (int32_t i = 0; i < t->n_mods; i++) {
        const pc_hlo_module *m = t->mods[i].module;
        pc_hlo_kernel *k = NULL;
        int nk = 0;
        pc_error err;
        assert_int_equal(pc_hlo_kernels(m, &k, &nk, &err), PC_OK);
        assert_int_equal(nk, 1); /* nested bitcast fusions belong to the kernel */
        if (plain_wrapper(m)) {
            pc_hlo_graph a, b;
            assert_int_equal(pc_hlo_featurize(m, &a, &err), PC_OK);
            assert_int_equal(pc_hlo_featurize(&k->view, &b, &err), PC_OK);
            same_graph(&a, &b);
            pc_hlo_graph_free(&a);
            pc_hlo_graph_free(&b);
            compared++;
        }
        pc_hlo_kernels_free(k, nk);
    }
    fprintf(stderr, "kernel view equal to the module for %d of %d tile modules\n", compared,
            (int)t->n_mods);
    assert_true(compared >= 5);
    pc_hlo_tuning_free(t);
}

/* ---- candidates from text (no fixtures needed) ----------------------------- */

static const char *k_conv =
    "HloModule m\n\n"
    "fused {\n  a = f32[8,16] parameter(0)\n  ROOT e = f32[8,16] exponential(a)\n}\n\n"
    "ENTRY main {\n"
    "  x = f32[1,8,8,4] parameter(0)\n"
    "  w = f32[3,3,4,16] parameter(1)\n"
    "  c = f32[1,8,8,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
    "  r = f32[8,128] reshape(c)\n"
    "  s = f32[8,16] slice(r), slice={[0:8], [0:16]}\n"
    "  ROOT f = f32[8,16] fusion(s), kind=kLoop, calls=fused\n"
    "}\n";

static char *write_tmp(const char *name, const char *body) {
    const char *dir = getenv("PC_TEST_TMP");
    static char path[1024]; /* one test thread */
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/tmp", name);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir && *dir ? dir : "/tmp");
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    return path;
}

static void test_layout_candidates(void **state) {
    (void)state;
    char hlo[1024];
    snprintf(hlo, sizeof hlo, "%s", write_tmp("rank_conv.hlo", k_conv));
    pc_rank_opts o = pc_rank_opts_default();
    o.kind = PC_KIND_LAYOUT;
    o.candidates = 20;
    pc_rank_set **s = NULL;
    int n = 0;
    pc_error err;
    assert_int_equal(pc_rank_sets_from_hlo(hlo, &o, &s, &n, NULL, &err), PC_OK);
    assert_int_equal(n, 1);
    assert_int_equal(pc_rank_set_config_nodes(s[0]), 2); /* the convolution and the reshape */
    assert_int_equal(pc_rank_set_count(s[0]), 20);
    pc_graph *g = pc_rank_set_graph(s[0]);
    assert_int_equal(pc_graph_kind(g), PC_KIND_LAYOUT);
    assert_int_equal(pc_graph_num_configs(g), 20);
    const float *f = pc_graph_node_config_feat(g);
    for (int q = 0; q < 2 * 18; q++) assert_true(f[q] == -1.0f); /* config 0: all defaults */
    char *d0 = pc_rank_set_describe(s[0], 0, 0);
    assert_string_equal(d0, "default");
    free(d0);
    /* every description read back as a candidates file gives the same rows */
    char body[20000] = "";
    for (int64_t k = 0; k < 20; k++) {
        char *d = pc_rank_set_describe(s[0], k, 0);
        strcat(body, d);
        strcat(body, "   # comment\n\n");
        free(d);
    }
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "%s", write_tmp("rank_conv.cfg", body));
    pc_rank_opts o2 = o;
    o2.configs = cfg;
    pc_rank_set **s2 = NULL;
    int n2 = 0;
    assert_int_equal(pc_rank_sets_from_hlo(hlo, &o2, &s2, &n2, NULL, &err), PC_OK);
    assert_int_equal(pc_rank_set_count(s2[0]), 20);
    assert_memory_equal(pc_graph_node_config_feat(pc_rank_set_graph(s2[0])), f, 20 * 2 * 18 * 4);
    pc_rank_sets_free(s2, n2);
    pc_rank_sets_free(s, n);
}

static void expect_cfg_error(const char *hlo, pc_kind kind, const char *body, const char *want) {
    pc_rank_opts o = pc_rank_opts_default();
    o.kind = kind;
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "%s", write_tmp("rank_bad.cfg", body));
    o.configs = cfg;
    pc_rank_set **s = NULL;
    int n = 0;
    pc_error err;
    assert_int_equal(pc_rank_sets_from_hlo(hlo, &o, &s, &n, NULL, &err), PC_ERR_FORMAT);
    assert_null(s);
    if (!strstr(err.msg, want)) fail_msg("'%s' lacks '%s'", err.msg, want);
}

static void test_bad_configs(void **state) {
    (void)state;
    char hlo[1024];
    snprintf(hlo, sizeof hlo, "%s", write_tmp("rank_conv2.hlo", k_conv));
    expect_cfg_error(hlo, PC_KIND_LAYOUT, "default\nnope=1,0\n", "rank_bad.cfg:2: 'nope' is not");
    expect_cfg_error(hlo, PC_KIND_LAYOUT, "c=3,3\n", "a dimension listed twice");
    expect_cfg_error(hlo, PC_KIND_LAYOUT, "r=2,0\n", "not a dimension");
    expect_cfg_error(hlo, PC_KIND_LAYOUT, "r=1,0/1,0,2,3/0\n", "has 2 tensors");
    expect_cfg_error(hlo, PC_KIND_LAYOUT, "# only a comment\n", "no configurations");
    expect_cfg_error(hlo, PC_KIND_TILE, "output=8,x\n", "rank_bad.cfg:1: output bounds");
    expect_cfg_error(hlo, PC_KIND_TILE, "output=8\ntiles=2\n", "rank_bad.cfg:2: 'tiles'");
    expect_cfg_error(hlo, PC_KIND_TILE, "output=0\n", "out of range");
}

static void test_tile_candidates(void **state) {
    (void)state;
    char hlo[1024];
    snprintf(hlo, sizeof hlo, "%s", write_tmp("rank_conv3.hlo", k_conv));
    pc_rank_opts o = pc_rank_opts_default();
    o.kind = PC_KIND_TILE;
    o.candidates = 1000;
    pc_rank_set **s = NULL;
    int n = 0;
    pc_error err;
    assert_int_equal(pc_rank_sets_from_hlo(hlo, &o, &s, &n, NULL, &err), PC_OK);
    assert_int_equal(n, 1);
    assert_string_equal(pc_rank_set_name(s[0]), "f");
    /* output 8x16: {8,4,2,1} x {16,8,4,2,1} */
    assert_int_equal(pc_rank_set_count(s[0]), 20);
    char *d = pc_rank_set_describe(s[0], 0, 0);
    assert_string_equal(d, "output=8,16");
    free(d);
    d = pc_rank_set_describe(s[0], 19, 1);
    assert_string_equal(d, "{\"output\": [1, 1], \"kernel\": [], \"input\": []}");
    free(d);
    /* config_feat as the importer computes it: 6 slots + sum + product per list */
    const float *cf = pc_graph_config_feat(pc_rank_set_graph(s[0]));
    assert_true(cf[8] == 8.0f && cf[9] == 16.0f && cf[14] == 24.0f && cf[15] == 128.0f);
    assert_true(cf[7] == 0.0f); /* empty kernel list: product 0 */
    /* the kernel graph: wrapper (1 parameter + fusion) + fused computation (2) */
    assert_int_equal(pc_graph_num_nodes(pc_rank_set_graph(s[0])), 4);
    pc_rank_sets_free(s, n);
    o.kernel = "nope";
    assert_int_equal(pc_rank_sets_from_hlo(hlo, &o, &s, &n, NULL, &err), PC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "kernels: 'f'"));
    o.kernel = "fused"; /* the fused computation's name works too */
    assert_int_equal(pc_rank_sets_from_hlo(hlo, &o, &s, &n, NULL, &err), PC_OK);
    pc_rank_sets_free(s, n);
}

static void test_no_configurable_nodes(void **state) {
    (void)state;
    char hlo[1024];
    snprintf(hlo, sizeof hlo, "%s",
             write_tmp("rank_add.hlo", "ENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] "
                                       "add(a, a)\n}\n"));
    pc_rank_opts o = pc_rank_opts_default();
    pc_rank_set **s = NULL;
    int n = 0;
    pc_error err;
    assert_int_equal(pc_rank_sets_from_hlo(hlo, &o, &s, &n, NULL, &err), PC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "no configurable nodes"));
}

static int setup(void **state) {
    (void)state;
    char probe[1200];
    if (pc_test_fixture(probe, sizeof probe, "tpugraphs_raw", "module_tuning_data_layout.pb") &&
        pc_test_fixture(g_raw, sizeof g_raw, "tpugraphs_raw", ""))
        g_fixtures_missing = 0;
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_matches_fixture),
        cmocka_unit_test(test_text_equals_proto),
        cmocka_unit_test(test_kernel_view_matches_tile_modules),
        cmocka_unit_test(test_layout_candidates),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_tile_candidates),
        cmocka_unit_test(test_no_configurable_nodes),
    };
    int failed = cmocka_run_group_tests(tests, setup, NULL);
    if (failed) return failed;
    return g_fixtures_missing ? 77 : 0;
}
