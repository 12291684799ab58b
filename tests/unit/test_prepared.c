/*
 * A graph prepared once for many candidate sets (pc_prepared_graph,
 * perfcast/predict.h) against pc_predictor_score on a graph holding the same
 * candidates: plain tile and layout models bit for bit (also after other
 * calls on the same handle), an attention model through its fallback, and a
 * seed ensemble: its offsets fixed by the reference (the reference itself
 * scores 0 with spread 0) and its differences between candidates those of
 * the centered scores.
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

#include "perfcast/dataset.h"
#include "perfcast/synth.h"
#include "perfcast/train.h"

static char data[512];

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("PC_TEST_TMP");
    snprintf(data, sizeof data, "%s/prepared_data", tmp ? tmp : "/tmp");
    pc_synth_opts so = pc_synth_opts_default();
    so.scale = PC_SYNTH_TINY;
    so.seed = 7;
    so.threads = 2;
    so.collections =
        (1u << pc_collection_find("tile:xla")) | (1u << pc_collection_find("layout:xla:random"));
    pc_error e;
    return pc_synth_write(data, &so, NULL, &e) == PC_OK ? 0 : -1;
}

static void train(const char *coll, const char *name, int ensemble, int attn, char *model,
                  size_t cap) {
    const char *tmp = getenv("PC_TEST_TMP");
    snprintf(model, cap, "%s/prepared_%s.st", tmp ? tmp : "/tmp", name);
    pc_train_opts o = pc_train_opts_default();
    o.data_dir = data;
    o.collection = coll;
    o.out_path = model;
    o.epochs = 1;
    o.threads = 2;
    o.hidden = 8;
    o.layers = 1;
    o.configs = 4;
    o.ensemble = ensemble;
    o.attn_heads = attn;
    pc_train_result tr = {.struct_size = sizeof tr};
    pc_error e;
    pc_status st = pc_train_run(&o, NULL, NULL, NULL, &tr, &e);
    if (st) print_error("%s\n", e.msg);
    assert_int_equal(st, PC_OK);
}

static pc_graph *test_graph(const char *coll) {
    pc_dataset *ds = NULL;
    pc_error e;
    assert_int_equal(pc_dataset_open(data, &ds, &e), PC_OK);
    int c = pc_collection_find(coll), sp = pc_split_find("valid");
    assert_true(pc_dataset_num_files(ds, c, sp) > 0);
    pc_graph *g = NULL;
    pc_load_opts lo = pc_load_opts_default();
    assert_int_equal(pc_graph_load(pc_dataset_file(ds, c, sp, 0), &lo, &g, &e), PC_OK);
    pc_dataset_close(ds);
    return g;
}

/* The graph's configs as rows (n x width). */
static float *rows_of(pc_graph *g, int64_t *width) {
    int64_t n = pc_graph_num_configs(g);
    pc_error e;
    if (pc_graph_kind(g) == PC_KIND_TILE) {
        *width = PC_TILE_CONFIG_DIM;
        float *r = malloc((size_t)(n * *width) * sizeof *r);
        memcpy(r, pc_graph_config_feat(g), (size_t)(n * *width) * sizeof *r);
        return r;
    }
    *width = pc_graph_num_config_nodes(g) * PC_LAYOUT_CONFIG_DIM;
    float *r = malloc((size_t)(n * *width) * sizeof *r);
    assert_int_equal(pc_graph_config_feat_rows(g, 0, n, r, &e), PC_OK);
    return r;
}

/* Prepared scores of the graph's own configs equal the predictor's, bit for bit. */
static void same_as_predictor(const char *coll, const char *name, int attn) {
    char model[600];
    train(coll, name, 1, attn, model, sizeof model);
    pc_predictor *p = NULL;
    pc_error e;
    assert_int_equal(pc_predictor_load(model, 2, &p, &e), PC_OK);
    pc_graph *g = test_graph(coll);
    int64_t n = pc_graph_num_configs(g), w;
    float *rows = rows_of(g, &w);
    double *want = calloc((size_t)n, sizeof *want), *got = calloc((size_t)n, sizeof *got);
    double *spread = calloc((size_t)n, sizeof *spread);
    assert_int_equal(pc_predictor_score(p, g, want, &e), PC_OK);
    pc_prepared_graph *pg = NULL;
    assert_int_equal(pc_prepared_graph_new(p, g, NULL, 0, &pg, &e), PC_OK);
    assert_int_equal(pc_prepared_graph_cached(pg), attn ? 0 : 1);
    /* another call first: the cache must not depend on it */
    assert_int_equal(pc_prepared_graph_score(pg, rows + w, n - 1, got, NULL, &e), PC_OK);
    assert_int_equal(pc_prepared_graph_score(pg, rows, n, got, spread, &e), PC_OK);
    for (int64_t i = 0; i < n; i++) {
        assert_memory_equal(&got[i], &want[i], sizeof(double));
        assert_true(spread[i] == 0.0);
    }
    pc_prepared_graph_free(pg);
    free(want), free(got), free(spread), free(rows);
    pc_graph_free(g);
    pc_predictor_free(p);
}

static void test_tile_plain(void **state) {
    (void)state;
    same_as_predictor("tile:xla", "tile", 0);
}

static void test_layout_plain(void **state) {
    (void)state;
    same_as_predictor("layout:xla:random", "layout", 0);
}

static void test_layout_attention_fallback(void **state) {
    (void)state;
    same_as_predictor("layout:xla:random", "layout_attn", 2);
}

static void test_layout_ensemble(void **state) {
    (void)state;
    char model[600];
    train("layout:xla:random", "layout_ens", 3, 0, model, sizeof model);
    pc_predictor *p = NULL;
    pc_error e;
    assert_int_equal(pc_predictor_load(model, 2, &p, &e), PC_OK);
    assert_int_equal(pc_predictor_members(p), 3);
    pc_graph *g = test_graph("layout:xla:random");
    int64_t n = pc_graph_num_configs(g), w;
    float *rows = rows_of(g, &w);
    float *def = malloc((size_t)w * sizeof *def);
    for (int64_t i = 0; i < w; i++) def[i] = -1.0f;
    double *cent = calloc((size_t)n, sizeof *cent), *got = calloc((size_t)n, sizeof *got);
    double *spread = calloc((size_t)n, sizeof *spread);
    assert_int_equal(pc_predictor_score(p, g, cent, &e), PC_OK);
    pc_prepared_graph *pg = NULL;
    assert_int_equal(pc_prepared_graph_new(p, g, def, 1, &pg, &e), PC_OK);
    double d0 = NAN, ds0 = NAN;
    assert_int_equal(pc_prepared_graph_score(pg, def, 1, &d0, &ds0, &e), PC_OK);
    assert_true(d0 == 0.0 && ds0 == 0.0); /* the reference is the origin */
    assert_int_equal(pc_prepared_graph_score(pg, rows, n, got, spread, &e), PC_OK);
    int some_spread = 0;
    for (int64_t i = 1; i < n; i++) {
        double a = got[i] - got[0], b = cent[i] - cent[0];
        assert_true(fabs(a - b) <= 1e-5 * (1.0 + fabs(b)));
        assert_true(spread[i] >= 0.0);
        some_spread |= spread[i] > 0.0;
    }
    assert_true(some_spread);
    /* the same candidates in a call of their own: the same scores (no per-call centering) */
    double again = NAN;
    assert_int_equal(pc_prepared_graph_score(pg, rows + w, 1, &again, NULL, &e), PC_OK);
    assert_true(again == got[1]);
    pc_prepared_graph_free(pg);
    free(cent), free(got), free(spread), free(rows), free(def);
    pc_graph_free(g);
    pc_predictor_free(p);
}

static void test_refusals(void **state) {
    (void)state;
    char model[600];
    train("tile:xla", "tile_ref", 1, 0, model, sizeof model);
    pc_predictor *p = NULL;
    pc_error e;
    assert_int_equal(pc_predictor_load(model, 1, &p, &e), PC_OK);
    pc_graph *g = test_graph("layout:xla:random");
    pc_prepared_graph *pg = NULL;
    assert_int_equal(pc_prepared_graph_new(p, g, NULL, 0, &pg, &e), PC_ERR_ARG);
    assert_null(pg);
    assert_non_null(strstr(e.msg, "layout graph"));
    assert_int_equal(pc_prepared_graph_new(p, g, NULL, 2, &pg, &e), PC_ERR_ARG);
    pc_prepared_graph_free(NULL);
    pc_graph_free(g);
    pc_predictor_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tile_plain),
        cmocka_unit_test(test_layout_plain),
        cmocka_unit_test(test_layout_attention_fallback),
        cmocka_unit_test(test_layout_ensemble),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
