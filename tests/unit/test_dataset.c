/*
 * Dataset module: typed loading of tile and layout graphs across the integer
 * dtypes seen in the wild, load-time shape errors, validation reports,
 * streamed node_config_feat access, the mmap cache and tree discovery.
 * Every graph is written here with pc_npz_writer, so the tests need no data.
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zip.h>

#include "common/util.h"
#include "dataset/graph_internal.h"
#include "perfcast/dataset.h"

#define FD PC_NODE_FEAT_DIM /* any width loads; pc_graph_validate wants the models' 140 */
#define TD PC_TILE_CONFIG_DIM
#define LD PC_LAYOUT_CONFIG_DIM
#define MAX_N 64
#define MAX_M 2048
#define MAX_C 64
#define MAX_NC 8

static char tmp_root[2048];

/* Paths under the scratch folder; a ring of buffers, so copy long-lived ones. */
static const char *tmp(const char *name) {
    static char buf[16][4096];
    static int next;
    char *out = buf[next++ % 16];
    snprintf(out, 4096, "%s/%s", tmp_root, name);
    return out;
}

/* ---- building graphs -------------------------------------------------- */

enum { O_NODE_FEAT = 1, O_OPCODE = 2, O_EDGES = 4, O_CONFIG_FEAT = 8, O_RUNTIME = 16,
       O_NORM = 32, O_IDS = 64, O_NCF = 128 };

typedef struct gspec {
    pc_kind kind;
    int64_t n, m, c, nc, k; /* k < 0: no node_splits */
    int64_t op[MAX_N], edge[2 * MAX_M], ids[MAX_NC], splits[16], rt[MAX_C], norm[MAX_C];
    float nf[MAX_N * FD], cf[MAX_C * TD], ncf[MAX_C * MAX_NC * LD];
    pc_dtype op_t, edge_t, id_t, rt_t, split_t, nf_t, cfg_t;
    int splits_2d;
    int extra; /* add an unrelated key, as some re-exports do */
    unsigned omit;
    pc_npz_compress mode;
} gspec;

static gspec *spec_tile(void) {
    gspec *s = calloc(1, sizeof *s);
    *s = (gspec){.kind = PC_KIND_TILE, .n = 5, .m = 4, .c = 6, .k = -1};
    s->op_t = PC_DTYPE_U8, s->edge_t = PC_DTYPE_I64, s->rt_t = PC_DTYPE_I64;
    s->nf_t = s->cfg_t = PC_DTYPE_F32;
    for (int i = 0; i < s->n; i++) s->op[i] = i + 1;
    for (int i = 0; i < s->m; i++) s->edge[2 * i] = i + 1, s->edge[2 * i + 1] = i;
    for (int i = 0; i < s->c; i++) s->rt[i] = 100 + i, s->norm[i] = 100;
    for (int i = 0; i < s->n * FD; i++) s->nf[i] = (float)i * 0.25f;
    for (int i = 0; i < s->c * TD; i++) s->cf[i] = (float)(i % 9);
    return s;
}

static gspec *spec_layout(void) {
    gspec *s = calloc(1, sizeof *s);
    *s = (gspec){.kind = PC_KIND_LAYOUT, .n = 6, .m = 5, .c = 20, .nc = 3, .k = 3};
    s->op_t = PC_DTYPE_U8, s->edge_t = PC_DTYPE_I64, s->id_t = PC_DTYPE_I64;
    s->rt_t = PC_DTYPE_I64, s->split_t = PC_DTYPE_I64;
    s->nf_t = s->cfg_t = PC_DTYPE_F32;
    for (int i = 0; i < s->n; i++) s->op[i] = 26 + i;
    for (int i = 0; i < s->m; i++) s->edge[2 * i] = i + 1, s->edge[2 * i + 1] = i;
    for (int i = 0; i < s->nc; i++) s->ids[i] = 2 * i + 1;
    for (int i = 0; i < s->k; i++) s->splits[i] = 2 * i;
    for (int i = 0; i < s->c; i++) s->rt[i] = 1000 + 7 * i;
    for (int i = 0; i < s->n * FD; i++) s->nf[i] = (float)i * 0.5f;
    /* small halves: exact in float16 too */
    for (int i = 0; i < s->c * s->nc * LD; i++) s->ncf[i] = (float)(i % 64) * 0.5f - 1.0f;
    return s;
}

static uint16_t to_half(float f) { /* exact for the normal values used here */
    uint32_t b;
    memcpy(&b, &f, 4);
    if (f == 0.0f) return (uint16_t)((b >> 16) & 0x8000u);
    uint32_t sign = (b >> 16) & 0x8000u, exp = ((b >> 23) & 0xffu) - 127 + 15;
    return (uint16_t)(sign | (exp << 10) | ((b >> 13) & 0x3ffu));
}

static void *pack(pc_dtype t, const int64_t *iv, const float *fv, int64_t count) {
    size_t es = pc_dtype_size(t);
    unsigned char *buf = calloc((size_t)count + 1, es);
    for (int64_t i = 0; i < count; i++) {
        unsigned char *p = buf + (size_t)i * es;
        double v = fv ? (double)fv[i] : (double)iv[i];
        switch (t) {
        case PC_DTYPE_U8: *p = (uint8_t)iv[i]; break;
        case PC_DTYPE_I32: { int32_t x = (int32_t)iv[i]; memcpy(p, &x, 4); } break;
        case PC_DTYPE_I64: memcpy(p, &iv[i], 8); break;
        case PC_DTYPE_F16: { uint16_t h = to_half((float)v); memcpy(p, &h, 2); } break;
        case PC_DTYPE_F32: { float x = (float)v; memcpy(p, &x, 4); } break;
        case PC_DTYPE_F64: memcpy(p, &v, 8); break;
        default: fail_msg("pack: dtype %s not supported by the test", pc_dtype_name(t));
        }
    }
    return buf;
}

static void add(pc_npz_writer *w, const char *key, pc_dtype t, int ndim, const int64_t *shape,
                const int64_t *iv, const float *fv) {
    int64_t count = 1;
    for (int d = 0; d < ndim; d++) count *= shape[d];
    void *data = pack(t, iv, fv, count);
    pc_error e;
    /* The writer takes no float16: write the bits as uint16, retag later. */
    pc_dtype wt = t == PC_DTYPE_F16 ? PC_DTYPE_U16 : t;
    pc_status st = pc_npz_writer_add(w, key, wt, ndim, shape, data, &e);
    if (st != PC_OK) fail_msg("%s", e.msg);
    free(data);
}

/* Rewrites member key.npy's dtype from '<u2' to '<f2' (same header length). */
static void retag_f16(const char *path, const char *key) {
    int zerr = 0;
    zip_t *za = zip_open(path, 0, &zerr);
    assert_non_null(za);
    char name[128];
    snprintf(name, sizeof name, "%s.npy", key);
    zip_int64_t idx = zip_name_locate(za, name, 0);
    assert_true(idx >= 0);
    zip_stat_t st;
    assert_int_equal(zip_stat_index(za, (zip_uint64_t)idx, 0, &st), 0);
    char *buf = malloc(st.size);
    zip_file_t *zf = zip_fopen_index(za, (zip_uint64_t)idx, 0);
    assert_int_equal(zip_fread(zf, buf, st.size), (zip_int64_t)st.size);
    zip_fclose(zf);
    char *descr = strstr(buf + 10, "<u2");
    assert_non_null(descr);
    descr[1] = 'f';
    zip_source_t *src = zip_source_buffer(za, buf, st.size, 1);
    assert_int_equal(zip_file_replace(za, (zip_uint64_t)idx, src, 0), 0);
    assert_int_equal(zip_close(za), 0);
}

static void add_layout_keys(pc_npz_writer *w, const gspec *s) {
    if (!(s->omit & O_IDS)) add(w, "node_config_ids", s->id_t, 1, &s->nc, s->ids, NULL);
    int64_t shape[3] = {s->c, s->nc, LD};
    if (!(s->omit & O_NCF)) add(w, "node_config_feat", s->cfg_t, 3, shape, NULL, s->ncf);
    if (s->k >= 0) {
        int64_t sp[2] = {1, s->k};
        add(w, "node_splits", s->split_t, s->splits_2d ? 2 : 1, s->splits_2d ? sp : sp + 1,
            s->splits, NULL);
    }
}

static void add_tile_keys(pc_npz_writer *w, const gspec *s) {
    int64_t shape[2] = {s->c, TD};
    if (!(s->omit & O_CONFIG_FEAT)) add(w, "config_feat", s->cfg_t, 2, shape, NULL, s->cf);
    if (!(s->omit & O_NORM))
        add(w, "config_runtime_normalizers", s->rt_t, 1, &s->c, s->norm, NULL);
}

static const char *write_graph(const char *name, const gspec *s) {
    const char *path = tmp(name);
    pc_npz_writer *w = NULL;
    pc_error e;
    if (pc_npz_writer_open(path, s->mode, &w, &e) != PC_OK) fail_msg("%s", e.msg);
    int64_t nf[2] = {s->n, FD}, ei[2] = {s->m, 2};
    if (!(s->omit & O_NODE_FEAT)) add(w, "node_feat", s->nf_t, 2, nf, NULL, s->nf);
    if (!(s->omit & O_OPCODE)) add(w, "node_opcode", s->op_t, 1, &s->n, s->op, NULL);
    if (!(s->omit & O_EDGES)) add(w, "edge_index", s->edge_t, 2, ei, s->edge, NULL);
    if (s->kind == PC_KIND_TILE) add_tile_keys(w, s);
    else add_layout_keys(w, s);
    if (!(s->omit & O_RUNTIME)) add(w, "config_runtime", s->rt_t, 1, &s->c, s->rt, NULL);
    if (s->extra) add(w, "graph_name", PC_DTYPE_I64, 1, &s->n, s->op, NULL);
    if (pc_npz_writer_commit(w, &e) != PC_OK) fail_msg("%s", e.msg);
    if (s->nf_t == PC_DTYPE_F16) retag_f16(path, "node_feat");
    if (s->cfg_t == PC_DTYPE_F16)
        retag_f16(path, s->kind == PC_KIND_TILE ? "config_feat" : "node_config_feat");
    return path;
}

static pc_graph *load_ok(const char *path, uint64_t resident) {
    pc_load_opts o = pc_load_opts_default();
    o.max_resident_config_bytes = resident;
    pc_graph *g = NULL;
    pc_error e;
    if (pc_graph_load(path, &o, &g, &e) != PC_OK) fail_msg("load %s: %s", path, e.msg);
    return g;
}

/* Loads expecting failure; returns the message. */
static const char *load_fail(const char *path, pc_status want, pc_error *e) {
    pc_graph *g = NULL;
    pc_status st = pc_graph_load(path, NULL, &g, e);
    assert_null(g);
    if (st != want) fail_msg("%s: got %s, want %s: %s", path, pc_status_name(st),
                             pc_status_name(want), e->msg);
    assert_non_null(strstr(e->msg, path));
    return e->msg;
}

/* Number of problems validate finds (and checks every line names the file). */
static size_t validate_count(const pc_graph *g, int allow_zero) {
    pc_report *r = pc_report_new();
    pc_status st = pc_graph_validate(g, allow_zero, r);
    size_t n = pc_report_count(r);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(strstr(pc_report_get(r, i), pc_graph_path(g)));
        if (getenv("PC_TEST_VERBOSE")) printf("  %s\n", pc_report_get(r, i));
    }
    assert_int_equal(st, n ? PC_ERR_INVALID : PC_OK);
    pc_report_free(r);
    return n;
}

static void check_tile_values(const pc_graph *g, const gspec *s) {
    assert_int_equal(pc_graph_kind(g), PC_KIND_TILE);
    assert_int_equal(pc_graph_num_nodes(g), s->n);
    assert_int_equal(pc_graph_num_edges(g), s->m);
    assert_int_equal(pc_graph_num_configs(g), s->c);
    assert_int_equal(pc_graph_num_config_nodes(g), 0);
    assert_int_equal(pc_graph_node_feat_dim(g), FD);
    assert_int_equal(pc_graph_config_dim(g), TD);
    for (int i = 0; i < s->n; i++) assert_int_equal(pc_graph_node_opcode(g)[i], s->op[i]);
    for (int i = 0; i < 2 * s->m; i++) assert_int_equal(pc_graph_edge_index(g)[i], s->edge[i]);
    for (int i = 0; i < s->c; i++) {
        assert_int_equal(pc_graph_config_runtime(g)[i], s->rt[i]);
        assert_int_equal(pc_graph_runtime_normalizers(g)[i], s->norm[i]);
    }
    assert_memory_equal(pc_graph_node_feat(g), s->nf, sizeof(float) * (size_t)(s->n * FD));
    assert_memory_equal(pc_graph_config_feat(g), s->cf, sizeof(float) * (size_t)(s->c * TD));
    assert_null(pc_graph_node_config_ids(g));
    assert_null(pc_graph_node_config_feat(g));
}

static void check_layout_values(pc_graph *g, const gspec *s) {
    assert_int_equal(pc_graph_kind(g), PC_KIND_LAYOUT);
    assert_int_equal(pc_graph_num_nodes(g), s->n);
    assert_int_equal(pc_graph_num_configs(g), s->c);
    assert_int_equal(pc_graph_num_config_nodes(g), s->nc);
    assert_int_equal(pc_graph_config_dim(g), LD);
    for (int i = 0; i < s->nc; i++) assert_int_equal(pc_graph_node_config_ids(g)[i], s->ids[i]);
    for (int i = 0; i < s->c; i++) assert_int_equal(pc_graph_config_runtime(g)[i], s->rt[i]);
    int64_t k = -1;
    const int64_t *sp = pc_graph_node_splits(g, &k);
    assert_int_equal(k, s->k < 0 ? 0 : s->k);
    for (int i = 0; i < k; i++) assert_int_equal(sp[i], s->splits[i]);
    if (s->k < 0) assert_null(sp);
    size_t bytes = sizeof(float) * (size_t)(s->c * s->nc * LD);
    float *rows = malloc(bytes);
    pc_error e;
    assert_int_equal(pc_graph_config_feat_rows(g, 0, s->c, rows, &e), PC_OK);
    assert_memory_equal(rows, s->ncf, bytes);
    free(rows);
    assert_null(pc_graph_config_feat(g));
    assert_null(pc_graph_runtime_normalizers(g));
}

/* ---- typed loading ------------------------------------------------------ */

static void test_tile_int_dtypes(void **state) {
    (void)state;
    const pc_dtype ops[] = {PC_DTYPE_U8, PC_DTYPE_I32, PC_DTYPE_I64};
    const pc_dtype edges[] = {PC_DTYPE_I32, PC_DTYPE_I64};
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 2; b++) {
            gspec *s = spec_tile();
            s->op_t = ops[a], s->edge_t = edges[b], s->rt_t = b ? PC_DTYPE_I64 : PC_DTYPE_I32;
            s->mode = b ? PC_NPZ_DEFLATED : PC_NPZ_STORED;
            pc_graph *g = load_ok(write_graph("tile.npz", s), PC_LOAD_DEFAULT_RESIDENT_BYTES);
            check_tile_values(g, s);
            assert_int_equal(validate_count(g, 0), 0);
            pc_graph_free(g);
            free(s);
        }
    }
}

static void test_layout_splits_and_ids(void **state) {
    (void)state;
    for (int variant = 0; variant < 4; variant++) {
        gspec *s = spec_layout();
        s->splits_2d = variant == 1;
        if (variant == 2) s->k = -1;
        s->id_t = s->split_t = variant == 3 ? PC_DTYPE_I32 : PC_DTYPE_I64;
        s->rt_t = variant == 3 ? PC_DTYPE_I32 : PC_DTYPE_I64; /* README says int32 */
        pc_graph *g = load_ok(write_graph("layout.npz", s), PC_LOAD_DEFAULT_RESIDENT_BYTES);
        check_layout_values(g, s);
        assert_non_null(pc_graph_node_config_feat(g));
        assert_int_equal(validate_count(g, 0), 0);
        pc_graph_free(g);
        free(s);
    }
}

static void test_float_widths(void **state) {
    (void)state;
    gspec *s = spec_layout();
    s->nf_t = PC_DTYPE_F64, s->cfg_t = PC_DTYPE_F16;
    pc_graph *g = load_ok(write_graph("floats.npz", s), 0);
    check_layout_values(g, s);
    assert_memory_equal(pc_graph_node_feat(g), s->nf, sizeof(float) * (size_t)(s->n * FD));
    pc_graph_free(g);
    free(s);
}

/* Unknown keys are ignored, and both fetch paths (whole archive, per key) agree. */
static void test_extra_keys_and_threads(void **state) {
    (void)state;
    gspec *s = spec_layout();
    s->extra = 1;
    const char *path = write_graph("extra.npz", s);
    for (int threads = 0; threads < 3; threads++) {
        pc_load_opts o = pc_load_opts_default();
        o.threads = threads;
        pc_graph *g = NULL;
        pc_error e;
        assert_int_equal(pc_graph_load(path, &o, &g, &e), PC_OK);
        check_layout_values(g, s);
        pc_graph_free(g);
    }
    free(s);
}

static void test_forced_kind(void **state) {
    (void)state;
    gspec *s = spec_tile();
    const char *path = write_graph("tile.npz", s);
    pc_load_opts o = pc_load_opts_default();
    o.kind = PC_KIND_LAYOUT;
    pc_graph *g = NULL;
    pc_error e;
    assert_int_equal(pc_graph_load(path, &o, &g, &e), PC_ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "'node_config_ids' (required for layout graphs)"));
    assert_string_equal(pc_kind_name(PC_KIND_TILE), "tile");
    assert_string_equal(pc_kind_name(PC_KIND_LAYOUT), "layout");
    free(s);
}

static void test_empty_edges(void **state) {
    (void)state;
    gspec *s = spec_tile();
    s->m = 0;
    pc_graph *g = load_ok(write_graph("noedge.npz", s), 0);
    assert_int_equal(pc_graph_num_edges(g), 0);
    pc_graph_free(g);
    /* An edge list saved from an empty Python list has shape (0,). */
    pc_npz_writer *w;
    pc_error e;
    const char *path = tmp("flat_empty.npz");
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &e), PC_OK);
    int64_t nf[2] = {s->n, FD}, zero = 0, c = s->c, cf[2] = {s->c, TD};
    add(w, "node_feat", PC_DTYPE_F32, 2, nf, NULL, s->nf);
    add(w, "node_opcode", PC_DTYPE_U8, 1, &s->n, s->op, NULL);
    add(w, "edge_index", PC_DTYPE_I64, 1, &zero, s->edge, NULL);
    add(w, "config_feat", PC_DTYPE_F32, 2, cf, NULL, s->cf);
    add(w, "config_runtime", PC_DTYPE_I64, 1, &c, s->rt, NULL);
    add(w, "config_runtime_normalizers", PC_DTYPE_I64, 1, &c, s->norm, NULL);
    assert_int_equal(pc_npz_writer_commit(w, &e), PC_OK);
    g = load_ok(path, 0);
    assert_int_equal(pc_graph_num_edges(g), 0);
    assert_int_equal(validate_count(g, 0), 0);
    pc_graph_free(g);
    free(s);
}

/* ---- load-time errors ---------------------------------------------------- */

static void test_missing_keys(void **state) {
    (void)state;
    pc_error e;
    gspec *s = spec_tile();
    s->omit = O_NODE_FEAT;
    const char *msg = load_fail(write_graph("nofeat.npz", s), PC_ERR_NOTFOUND, &e);
    assert_non_null(strstr(msg, "missing key 'node_feat' (required for tile graphs)"));
    s->omit = O_NORM;
    msg = load_fail(write_graph("nonorm.npz", s), PC_ERR_NOTFOUND, &e);
    assert_non_null(strstr(msg, "'config_runtime_normalizers'"));
    s->omit = O_CONFIG_FEAT;
    msg = load_fail(write_graph("nokind.npz", s), PC_ERR_NOTFOUND, &e);
    assert_non_null(strstr(msg, "'config_feat'"));
    assert_non_null(strstr(msg, "'node_config_feat'"));
    free(s);
    s = spec_layout();
    s->omit = O_IDS;
    msg = load_fail(write_graph("noids.npz", s), PC_ERR_NOTFOUND, &e);
    assert_non_null(strstr(msg, "missing key 'node_config_ids' (required for layout graphs)"));
    s->omit = O_RUNTIME;
    msg = load_fail(write_graph("nort.npz", s), PC_ERR_NOTFOUND, &e);
    assert_non_null(strstr(msg, "'config_runtime'"));
    free(s);
}

/* Writes a tile graph with one key replaced by an array of the given shape. */
static const char *write_odd_tile(const char *key, pc_dtype t, int ndim, const int64_t *shape) {
    static int64_t zeros[4096];
    gspec *s = spec_tile();
    const char *path = tmp("odd.npz");
    pc_npz_writer *w;
    pc_error e;
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &e), PC_OK);
    int64_t nf[2] = {s->n, FD}, ei[2] = {s->m, 2}, cf[2] = {s->c, TD};
    const char *keys[] = {"node_feat", "node_opcode", "edge_index", "config_feat",
                          "config_runtime", "config_runtime_normalizers"};
    for (int k = 0; k < 6; k++) {
        if (!strcmp(keys[k], key)) {
            float fz[4096] = {0};
            add(w, key, t, ndim, shape, zeros, pc_dtype_is_int(t) ? NULL : fz);
            continue;
        }
        if (k == 0) add(w, keys[k], PC_DTYPE_F32, 2, nf, NULL, s->nf);
        if (k == 1) add(w, keys[k], PC_DTYPE_U8, 1, &s->n, s->op, NULL);
        if (k == 2) add(w, keys[k], PC_DTYPE_I64, 2, ei, s->edge, NULL);
        if (k == 3) add(w, keys[k], PC_DTYPE_F32, 2, cf, NULL, s->cf);
        if (k == 4) add(w, keys[k], PC_DTYPE_I64, 1, &s->c, s->rt, NULL);
        if (k == 5) add(w, keys[k], PC_DTYPE_I64, 1, &s->c, s->norm, NULL);
    }
    assert_int_equal(pc_npz_writer_commit(w, &e), PC_OK);
    free(s);
    return path;
}

static void expect_shape_error(const char *key, pc_dtype t, int ndim, const int64_t *shape,
                               const char *expected, const char *got) {
    pc_error e;
    const char *msg = load_fail(write_odd_tile(key, t, ndim, shape), PC_ERR_FORMAT, &e);
    char want[256];
    snprintf(want, sizeof want, "key '%s': expected ", key);
    if (!strstr(msg, want) || !strstr(msg, expected) || !strstr(msg, got))
        fail_msg("unexpected message: %s", msg);
}

static void test_wrong_shapes(void **state) {
    (void)state;
    expect_shape_error("edge_index", PC_DTYPE_I64, 2, (int64_t[]){5, 3}, "(m, 2)", "got (5, 3)");
    expect_shape_error("node_opcode", PC_DTYPE_U8, 1, (int64_t[]){4}, "(n,) with n = 5",
                       "got (4,)");
    expect_shape_error("node_feat", PC_DTYPE_F32, 1, (int64_t[]){5}, "(n, d)", "got (5,)");
    expect_shape_error("config_runtime", PC_DTYPE_I64, 2, (int64_t[]){6, 1}, "(c,) with c = 6",
                       "got (6, 1)");
    expect_shape_error("config_runtime_normalizers", PC_DTYPE_I64, 1, (int64_t[]){7},
                       "(c,) with c = 6", "got (7,)");
    pc_error e;
    const char *msg = load_fail(write_odd_tile("node_opcode", PC_DTYPE_F32, 1, (int64_t[]){5}),
                                PC_ERR_FORMAT, &e);
    assert_non_null(strstr(msg, "key 'node_opcode': expected an integer dtype, got float32"));
    msg = load_fail(write_odd_tile("node_feat", PC_DTYPE_I32, 2, (int64_t[]){5, FD}),
                    PC_ERR_FORMAT, &e);
    assert_non_null(strstr(msg, "key 'node_feat': expected a float dtype"));
}

static void test_wrong_layout_shapes(void **state) {
    (void)state;
    pc_error e;
    gspec *s = spec_layout();
    s->k = 6, s->splits_2d = 0;
    /* node_splits (2, 3) is neither (k,) nor (1, k). */
    pc_npz_writer *w;
    const char *path = tmp("splits23.npz");
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &e), PC_OK);
    int64_t nf[2] = {s->n, FD}, ei[2] = {s->m, 2}, ncf[3] = {s->c, s->nc, LD}, sp[2] = {2, 3};
    add(w, "node_feat", PC_DTYPE_F32, 2, nf, NULL, s->nf);
    add(w, "node_opcode", PC_DTYPE_U8, 1, &s->n, s->op, NULL);
    add(w, "edge_index", PC_DTYPE_I32, 2, ei, s->edge, NULL);
    add(w, "node_config_ids", PC_DTYPE_I32, 1, &s->nc, s->ids, NULL);
    add(w, "node_config_feat", PC_DTYPE_F32, 3, ncf, NULL, s->ncf);
    add(w, "config_runtime", PC_DTYPE_I64, 1, &s->c, s->rt, NULL);
    add(w, "node_splits", PC_DTYPE_I64, 2, sp, s->splits, NULL);
    assert_int_equal(pc_npz_writer_commit(w, &e), PC_OK);
    const char *msg = load_fail(path, PC_ERR_FORMAT, &e);
    assert_non_null(strstr(msg, "key 'node_splits': expected shape (k,) or (1, k), got (2, 3)"));
    /* node_config_feat whose middle axis (2) disagrees with node_config_ids (3). */
    path = tmp("ncbad.npz");
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &e), PC_OK);
    ncf[1] = 2;
    int64_t three = 3;
    add(w, "node_feat", PC_DTYPE_F32, 2, nf, NULL, s->nf);
    add(w, "node_opcode", PC_DTYPE_U8, 1, &s->n, s->op, NULL);
    add(w, "edge_index", PC_DTYPE_I32, 2, ei, s->edge, NULL);
    add(w, "node_config_ids", PC_DTYPE_I32, 1, &three, s->ids, NULL);
    add(w, "node_config_feat", PC_DTYPE_F32, 3, ncf, NULL, s->ncf);
    add(w, "config_runtime", PC_DTYPE_I64, 1, &s->c, s->rt, NULL);
    assert_int_equal(pc_npz_writer_commit(w, &e), PC_OK);
    msg = load_fail(path, PC_ERR_FORMAT, &e);
    assert_non_null(strstr(msg, "key 'node_config_feat': expected shape (c, nc, 18) with nc = 3"));
    assert_non_null(strstr(msg, "got (20, 2, 18)"));
    free(s);
}

static void test_int_overflow(void **state) {
    (void)state;
    gspec *s = spec_tile();
    s->edge[3] = INT64_C(1) << 40;
    pc_error e;
    const char *msg = load_fail(write_graph("bigedge.npz", s), PC_ERR_RANGE, &e);
    assert_non_null(strstr(msg, "edge_index"));
    free(s);
}

static void write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void test_bad_files(void **state) {
    (void)state;
    pc_error e;
    pc_graph *g = NULL;
    write_bytes(tmp("garbage.npz"), "this is not a zip archive at all", 32);
    assert_int_not_equal(pc_graph_load(tmp("garbage.npz"), NULL, &g, &e), PC_OK);
    assert_null(g);
    assert_non_null(strstr(e.msg, tmp("garbage.npz")));
    /* a valid archive cut in half */
    gspec *s = spec_layout();
    s->mode = PC_NPZ_DEFLATED;
    const char *path = write_graph("cut.npz", s);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(truncate(path, sb.st_size / 2), 0);
    assert_int_not_equal(pc_graph_load(path, NULL, &g, &e), PC_OK);
    assert_null(g);
    assert_non_null(strstr(e.msg, "cut.npz"));
    assert_int_equal(pc_graph_load(tmp("does_not_exist.npz"), NULL, &g, &e), PC_ERR_NOTFOUND);
    /* a folder that is not a cache */
    assert_int_equal(pc_mkdirs(tmp("plain_dir"), &e), PC_OK);
    assert_int_equal(pc_graph_load(tmp("plain_dir"), NULL, &g, &e), PC_ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "not a perfcast cache"));
    free(s);
}

/* ---- validation --------------------------------------------------------- */

/* Eleven independent problems in one layout graph (n = 6). */
static void break_layout(gspec *s) {
    s->op_t = PC_DTYPE_I32;
    s->op[0] = 300;                 /* 1: opcode above 255 */
    s->edge[1] = 6;                 /* 2: endpoint == n */
    s->edge[4] = -1;                /* 3: negative endpoint */
    s->ids[1] = 9;                  /* 4: id out of range */
    s->ids[2] = 1;                  /* 5: repeats ids[0] */
    s->splits[0] = 2;               /* 6: splits {2, 0, 7}: 0 < 2 is out of order */
    s->splits[1] = 0;
    s->splits[2] = 7;               /* 7: 7 > n */
    s->rt[3] = 0;                   /* 8: zero among positive runtimes */
    s->rt[4] = -5;                  /* 9: negative runtime */
    s->nf[2] = NAN;                 /* 10 */
    s->ncf[40] = INFINITY;          /* 11 */
}

static void test_validate_reports_all(void **state) {
    (void)state;
    gspec *s = spec_layout();
    break_layout(s);
    const char *path = write_graph("broken.npz", s);
    pc_graph *g = load_ok(path, 0);
    assert_int_equal(validate_count(g, 0), 11);
    /* zero runtimes mixed with positive ones are still a problem in test splits */
    assert_int_equal(validate_count(g, 1), 11);
    pc_graph_free(g);
    /* streamed node_config_feat: the non-finite value is found by a chunked scan */
    g = load_ok(path, 1);
    assert_null(pc_graph_node_config_feat(g));
    pc_graph_set_chunk_bytes_(g, 1);
    assert_int_equal(validate_count(g, 0), 11);
    pc_graph_free(g);
    free(s);
}

static void test_validate_zero_runtimes(void **state) {
    (void)state;
    gspec *s = spec_tile();
    for (int i = 0; i < s->c; i++) s->rt[i] = s->norm[i] = 0;
    pc_graph *g = load_ok(write_graph("testsplit.npz", s), 0);
    assert_int_equal(validate_count(g, 1), 0);
    assert_int_equal(validate_count(g, 0), 2); /* one line per key, not per config */
    pc_graph_free(g);
    s->c = 0; /* no configs loads, but is a problem */
    g = load_ok(write_graph("noconf.npz", s), 0);
    assert_int_equal(pc_graph_num_configs(g), 0);
    assert_int_equal(validate_count(g, 1), 1);
    pc_graph_free(g);
    free(s);
}

static void test_validate_caps_lines(void **state) {
    (void)state;
    gspec *s = spec_tile();
    s->m = 1000;
    for (int i = 0; i < s->m; i++) s->edge[2 * i] = 1, s->edge[2 * i + 1] = 50 + i;
    pc_graph *g = load_ok(write_graph("manybad.npz", s), 0);
    pc_report *r = pc_report_new();
    assert_int_equal(pc_graph_validate(g, 0, r), PC_ERR_INVALID);
    assert_int_equal(pc_report_count(r), 11);
    assert_non_null(strstr(pc_report_get(r, 10), "... and 990 more"));
    pc_report_free(r);
    pc_graph_free(g);
    free(s);
}

/* ---- streamed rows ------------------------------------------------------- */

static void compare_access(pc_graph *res, pc_graph *str) {
    int64_t c = pc_graph_num_configs(res), row = pc_graph_num_config_nodes(res) * LD;
    const float *all = pc_graph_node_config_feat(res);
    float *buf = calloc((size_t)(c * row) + 1, sizeof(float));
    pc_error e;
    assert_int_equal(pc_graph_config_feat_rows(str, 7, 20, buf, &e), PC_OK);
    assert_memory_equal(buf, all + 7 * row, sizeof(float) * (size_t)(20 * row));
    assert_int_equal(pc_graph_config_feat_rows(str, 0, c, buf, &e), PC_OK);
    assert_memory_equal(buf, all, sizeof(float) * (size_t)(c * row));
    const int64_t ids[] = {45, 3, 3, 17, 0, 49, 18, 46};
    assert_int_equal(pc_graph_config_feat_gather(str, ids, 8, buf, &e), PC_OK);
    for (int i = 0; i < 8; i++)
        assert_memory_equal(buf + i * row, all + ids[i] * row, sizeof(float) * (size_t)row);
    const int64_t bad[] = {2, 50};
    assert_int_equal(pc_graph_config_feat_gather(str, bad, 2, buf, &e), PC_ERR_RANGE);
    assert_int_equal(pc_graph_config_feat_rows(str, 45, 6, buf, &e), PC_ERR_RANGE);
    free(buf);
}

static void test_streamed_rows(void **state) {
    (void)state;
    const pc_dtype cfg[] = {PC_DTYPE_F32, PC_DTYPE_F64, PC_DTYPE_F16};
    for (int v = 0; v < 6; v++) {
        gspec *s = spec_layout();
        s->c = 50, s->nc = 4, s->ids[3] = 0, s->cfg_t = cfg[v % 3];
        for (int i = 0; i < s->c * s->nc * LD; i++) s->ncf[i] = (float)(i % 50) - 3.5f;
        s->mode = v < 3 ? PC_NPZ_STORED : PC_NPZ_DEFLATED;
        const char *path = write_graph("stream.npz", s);
        pc_graph *res = load_ok(path, 0), *str = load_ok(path, 1);
        assert_non_null(pc_graph_node_config_feat(res));
        assert_null(pc_graph_node_config_feat(str));
        compare_access(res, str); /* one chunk */
        pc_graph_set_chunk_bytes_(str, 3 * 4 * LD * 8);
        compare_access(res, str); /* three rows per chunk */
        pc_graph_set_chunk_bytes_(str, 1);
        compare_access(res, str); /* one row per chunk */
        compare_access(res, res);
        pc_graph_free(res);
        pc_graph_free(str);
        free(s);
    }
}

/* ---- cache -------------------------------------------------------------- */

static void assert_same_graph(pc_graph *a, pc_graph *b) {
    assert_int_equal(pc_graph_kind(a), pc_graph_kind(b));
    int64_t n = pc_graph_num_nodes(a), m = pc_graph_num_edges(a), c = pc_graph_num_configs(a);
    assert_int_equal(n, pc_graph_num_nodes(b));
    assert_int_equal(m, pc_graph_num_edges(b));
    assert_int_equal(c, pc_graph_num_configs(b));
    assert_int_equal(pc_graph_num_config_nodes(a), pc_graph_num_config_nodes(b));
    assert_memory_equal(pc_graph_node_feat(a), pc_graph_node_feat(b), 4 * (size_t)(n * FD));
    assert_memory_equal(pc_graph_node_opcode(a), pc_graph_node_opcode(b), 4 * (size_t)n);
    if (m) assert_memory_equal(pc_graph_edge_index(a), pc_graph_edge_index(b), 8 * (size_t)m);
    assert_memory_equal(pc_graph_config_runtime(a), pc_graph_config_runtime(b), 8 * (size_t)c);
    if (pc_graph_kind(a) == PC_KIND_TILE) {
        assert_memory_equal(pc_graph_config_feat(a), pc_graph_config_feat(b), 4 * (size_t)(c * TD));
        assert_memory_equal(pc_graph_runtime_normalizers(a), pc_graph_runtime_normalizers(b),
                            8 * (size_t)c);
        return;
    }
    int64_t nc = pc_graph_num_config_nodes(a), ka, kb;
    assert_memory_equal(pc_graph_node_config_ids(a), pc_graph_node_config_ids(b), 4 * (size_t)nc);
    const int64_t *sa = pc_graph_node_splits(a, &ka), *sb = pc_graph_node_splits(b, &kb);
    assert_int_equal(ka, kb);
    if (ka) assert_memory_equal(sa, sb, 8 * (size_t)ka);
    size_t bytes = 4 * (size_t)(c * nc * LD);
    float *ra = malloc(bytes + 4), *rb = malloc(bytes + 4);
    pc_error e;
    assert_int_equal(pc_graph_config_feat_rows(a, 0, c, ra, &e), PC_OK);
    assert_int_equal(pc_graph_config_feat_rows(b, 0, c, rb, &e), PC_OK);
    assert_memory_equal(ra, rb, bytes);
    free(ra);
    free(rb);
}

static void roundtrip(const char *src, const char *dir, uint64_t resident, uint64_t chunk) {
    pc_error e;
    if (pc_cache_build_ex_(src, dir, resident, chunk, &e) != PC_OK) fail_msg("%s", e.msg);
    pc_graph *a = load_ok(src, 0), *b = load_ok(dir, 1);
    assert_same_graph(a, b);
    /* mapped, not streamed, whatever the resident limit */
    if (pc_graph_kind(b) == PC_KIND_LAYOUT) assert_non_null(pc_graph_node_config_feat(b));
    assert_int_equal(validate_count(b, 0), 0);
    pc_graph_free(a);
    pc_graph_free(b);
}

static void test_cache_roundtrip(void **state) {
    (void)state;
    gspec *s = spec_layout();
    s->splits_2d = 1, s->op_t = PC_DTYPE_U8, s->edge_t = PC_DTYPE_I32, s->cfg_t = PC_DTYPE_F64;
    s->mode = PC_NPZ_DEFLATED;
    char src[4096];
    snprintf(src, sizeof src, "%s", write_graph("cache_layout.npz", s));
    roundtrip(src, tmp("cache/layout.pcc"), 0, 0);
    roundtrip(src, tmp("cache/layout.pcc/"), 1, 1); /* streamed conversion, replacing */
    free(s);
    s = spec_tile();
    roundtrip(write_graph("cache_tile.npz", s), tmp("cache/tile.pcc"), 0, 0);
    free(s);
    /* a folder that is not a cache is never replaced */
    pc_error e;
    assert_int_equal(pc_mkdirs(tmp("cache/precious"), &e), PC_OK);
    write_bytes(tmp("cache/precious/keep.txt"), "x", 1);
    assert_int_equal(pc_cache_build(src, tmp("cache/precious"), &e), PC_ERR_IO);
    assert_non_null(strstr(e.msg, "not a perfcast cache"));
    struct stat sb;
    assert_int_equal(stat(tmp("cache/precious/keep.txt"), &sb), 0);
    /* a broken source leaves nothing behind */
    assert_int_equal(pc_cache_build(tmp("garbage.npz"), tmp("cache/garbage.pcc"), &e) != PC_OK, 1);
    assert_int_not_equal(stat(tmp("cache/garbage.pcc"), &sb), 0);
}

static void test_cache_tampered(void **state) {
    (void)state;
    gspec *s = spec_tile();
    pc_error e;
    const char *dir = tmp("tamper.pcc");
    assert_int_equal(pc_cache_build(write_graph("tamper.npz", s), dir, &e), PC_OK);
    /* an opcode array of the wrong width must not be trusted */
    pc_array a = PC_ARRAY_INIT;
    int64_t shape[1] = {s->n};
    assert_int_equal(pc_array_alloc(&a, PC_DTYPE_I64, 1, shape, &e), PC_OK);
    char path[4096];
    snprintf(path, sizeof path, "%s/node_opcode.npy", dir);
    assert_int_equal(pc_npy_save(path, &a, &e), PC_OK);
    pc_array_free(&a);
    const char *msg = load_fail(dir, PC_ERR_FORMAT, &e);
    assert_non_null(strstr(msg, "key 'node_opcode': cache holds int64, expected int32"));
    snprintf(path, sizeof path, "%s/edge_index.npy", dir);
    assert_int_equal(unlink(path), 0);
    msg = load_fail(dir, PC_ERR_NOTFOUND, &e);
    assert_non_null(strstr(msg, "missing key 'edge_index'"));
    free(s);
}

/* ---- dataset trees -------------------------------------------------------- */

static void test_collection_tables(void **state) {
    (void)state;
    assert_string_equal(pc_collection_name(0), "tile:xla");
    assert_string_equal(pc_collection_dir(3), "layout/nlp/random");
    assert_int_equal(pc_collection_kind(0), PC_KIND_TILE);
    assert_int_equal(pc_collection_kind(4), PC_KIND_LAYOUT);
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++) {
        assert_int_equal(pc_collection_find(pc_collection_name(c)), c);
        assert_int_equal(pc_collection_find(pc_collection_dir(c)), c);
    }
    assert_int_equal(pc_collection_find("layout:xla"), -1);
    assert_null(pc_collection_name(5));
    assert_string_equal(pc_split_name(1), "valid");
    assert_int_equal(pc_split_find("test"), 2);
    assert_int_equal(pc_split_find("validation"), -1);
}

static void put(const char *rel, const gspec *s) {
    char dir[4096];
    pc_error e;
    snprintf(dir, sizeof dir, "%s", tmp(rel));
    *strrchr(dir, '/') = '\0';
    assert_int_equal(pc_mkdirs(dir, &e), PC_OK);
    write_graph(rel, s);
}

static void make_tree(void) {
    gspec *t = spec_tile(), *l = spec_layout();
    put("ds/npz/tile/xla/train/b.npz", t);
    put("ds/npz/tile/xla/train/a.npz", t);
    put("ds/npz/tile/xla/test/c.npz", t);
    put("ds/npz/layout/nlp/default/valid/x.npz", l);
    write_bytes(tmp("ds/npz/tile/xla/train/notes.txt"), "hi", 2);
    free(t);
    free(l);
}

static pc_dataset *open_ok(const char *root) {
    pc_dataset *d = NULL;
    pc_error e;
    if (pc_dataset_open(root, &d, &e) != PC_OK) fail_msg("%s", e.msg);
    return d;
}

static void test_dataset_discovery(void **state) {
    (void)state;
    make_tree();
    const char *roots[] = {tmp("ds"), tmp("ds/npz"), tmp("ds/npz/")};
    for (int i = 0; i < 3; i++) {
        pc_dataset *d = open_ok(roots[i]);
        assert_true(pc_str_ends_with(pc_dataset_root(d), "ds/npz"));
        assert_int_equal(pc_dataset_num_files(d, 0, 0), 2);
        assert_true(pc_str_ends_with(pc_dataset_file(d, 0, 0, 0), "tile/xla/train/a.npz"));
        assert_true(pc_str_ends_with(pc_dataset_file(d, 0, 0, 1), "tile/xla/train/b.npz"));
        assert_null(pc_dataset_file(d, 0, 0, 2));
        assert_int_equal(pc_dataset_num_files(d, 0, 1), 0);
        assert_int_equal(pc_dataset_num_files(d, 0, 2), 1);
        assert_int_equal(pc_dataset_num_files(d, 4, 1), 1);
        assert_int_equal(pc_dataset_num_files(d, 1, 0), 0);
        pc_dataset_close(d);
    }
    pc_error e;
    pc_dataset *d = NULL;
    assert_int_equal(pc_mkdirs(tmp("empty_ds/npz/tile/xla/train"), &e), PC_OK);
    assert_int_equal(pc_dataset_open(tmp("empty_ds"), &d, &e), PC_ERR_NOTFOUND);
    assert_null(d);
    assert_non_null(strstr(e.msg, "no TpuGraphs files"));
    assert_int_equal(pc_dataset_open(tmp("nowhere"), &d, &e), PC_ERR_NOTFOUND);
}

static ino_t inode_of(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) fail_msg("%s missing", path);
    return sb.st_ino;
}

#define NFILES 4 /* the .npz files of make_tree */

typedef struct tree_progress {
    int64_t calls, last_done, last_total, backwards;
} tree_progress;

static void on_tree_progress(void *user, const char *what, int64_t done, int64_t total) {
    tree_progress *t = user;
    assert_string_equal(what, "files cached");
    if (done <= t->last_done) t->backwards++;
    t->calls++;
    t->last_done = done;
    t->last_total = total;
}

/* Builds the cache of src in out; the counts it reports must be built / kept / failed. */
static void build_tree(const char *src, const char *out, int64_t want_built, int64_t want_kept,
                       int64_t want_failures) {
    pc_dataset *d = open_ok(src);
    pc_report *r = pc_report_new();
    pc_error e;
    pc_cache_opts o = pc_cache_opts_default();
    o.threads = 2;
    tree_progress tp = {0, 0, 0, 0};
    o.progress = on_tree_progress;
    o.progress_user = &tp;
    pc_cache_result res;
    res.struct_size = sizeof res;
    pc_status st = pc_cache_build_tree(d, out, &o, r, &res, &e);
    assert_int_equal(pc_report_count(r), (size_t)want_failures);
    assert_int_equal(st == PC_OK, want_failures == 0);
    assert_int_equal(res.built, want_built);
    assert_int_equal(res.up_to_date, want_kept);
    assert_int_equal(res.failed, want_failures);
    assert_int_equal(res.files, want_built + want_kept + want_failures);
    /* one call per file, counting up to all of them */
    assert_int_equal(tp.calls, res.files);
    assert_int_equal(tp.last_done, res.files);
    assert_int_equal(tp.last_total, res.files);
    assert_int_equal(tp.backwards, 0);
    pc_report_free(r);
    pc_dataset_close(d);
}

static void test_cache_opts_checked(void **state) {
    (void)state;
    make_tree();
    pc_dataset *d = open_ok(tmp("ds"));
    pc_error e;
    pc_cache_opts o = pc_cache_opts_default();
    o.struct_size = sizeof o - 1;
    assert_int_equal(pc_cache_build_tree(d, tmp("dscache_x"), &o, NULL, NULL, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "pc_cache_opts.struct_size"));
    pc_cache_result res;
    res.struct_size = 8;
    assert_int_equal(pc_cache_build_tree(d, tmp("dscache_x"), NULL, NULL, &res, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "pc_cache_result.struct_size"));
    /* opts, report and result NULL: the defaults, nothing counted */
    assert_int_equal(pc_cache_build_tree(d, tmp("dscache_x"), NULL, NULL, NULL, &e), PC_OK);
    pc_dataset_close(d);
}

static void test_cache_tree(void **state) {
    (void)state;
    make_tree();
    build_tree(tmp("ds"), tmp("dscache"), NFILES, 0, 0);
    pc_dataset *d = open_ok(tmp("dscache"));
    assert_int_equal(pc_dataset_num_files(d, 0, 0), 2);
    assert_int_equal(pc_dataset_num_files(d, 4, 1), 1);
    const char *entry = pc_dataset_file(d, 0, 0, 0);
    assert_true(pc_str_ends_with(entry, "dscache/tile/xla/train/a.pcc"));
    pc_graph *a = load_ok(tmp("ds/npz/tile/xla/train/a.npz"), 0), *b = load_ok(entry, 0);
    assert_same_graph(a, b);
    pc_graph_free(a);
    pc_graph_free(b);
    pc_dataset_close(d);
    /* up-to-date entries are kept; a touched source is rebuilt */
    char ea[4096], eb[4096];
    snprintf(ea, sizeof ea, "%s", tmp("dscache/tile/xla/train/a.pcc"));
    snprintf(eb, sizeof eb, "%s", tmp("dscache/tile/xla/train/b.pcc"));
    ino_t ia = inode_of(ea), ib = inode_of(eb);
    build_tree(tmp("ds"), tmp("dscache"), 0, NFILES, 0);
    assert_true(inode_of(ea) == ia && inode_of(eb) == ib);
    struct timespec past[2] = {{1000000000, 5}, {1000000000, 5}};
    assert_int_equal(utimensat(AT_FDCWD, tmp("ds/npz/tile/xla/train/b.npz"), past, 0), 0);
    build_tree(tmp("ds"), tmp("dscache"), 1, NFILES - 1, 0);
    assert_true(inode_of(ea) == ia);
    assert_true(inode_of(eb) != ib);
    /* a broken file is reported and the rest still converts */
    write_bytes(tmp("ds/npz/tile/xla/train/zz.npz"), "PK\x03\x04 broken", 12);
    build_tree(tmp("ds"), tmp("dscache2"), NFILES, 0, 1);
    d = open_ok(tmp("dscache2"));
    assert_int_equal(pc_dataset_num_files(d, 0, 0), 2);
    pc_dataset_close(d);
    unlink(tmp("ds/npz/tile/xla/train/zz.npz"));
}

static int setup(void **state) {
    (void)state;
    const char *base = getenv("PC_TEST_TMP");
    snprintf(tmp_root, sizeof tmp_root, "%s/test_dataset", base ? base : "/tmp");
    pc_remove_tree(tmp_root);
    pc_error e;
    return pc_mkdirs(tmp_root, &e) == PC_OK ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tile_int_dtypes),
        cmocka_unit_test(test_layout_splits_and_ids),
        cmocka_unit_test(test_float_widths),
        cmocka_unit_test(test_extra_keys_and_threads),
        cmocka_unit_test(test_forced_kind),
        cmocka_unit_test(test_empty_edges),
        cmocka_unit_test(test_missing_keys),
        cmocka_unit_test(test_wrong_shapes),
        cmocka_unit_test(test_wrong_layout_shapes),
        cmocka_unit_test(test_int_overflow),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_validate_reports_all),
        cmocka_unit_test(test_validate_zero_runtimes),
        cmocka_unit_test(test_validate_caps_lines),
        cmocka_unit_test(test_streamed_rows),
        cmocka_unit_test(test_cache_roundtrip),
        cmocka_unit_test(test_cache_tampered),
        cmocka_unit_test(test_collection_tables),
        cmocka_unit_test(test_dataset_discovery),
        cmocka_unit_test(test_cache_tree),
        cmocka_unit_test(test_cache_opts_checked),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
