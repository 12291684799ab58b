/*
 * Unit tests for the synthetic data generator (include/perfcast/synth.h and
 * src/synth/): the output tree, determinism (same seed => same bytes, any
 * thread count), keys, dtypes and shapes as in TpuGraphs, graph invariants
 * (edges in range, sorted, unique, operands before users), config encodings,
 * node_splits, test splits without runtimes, option checks, and properties
 * of both cost models (layout mismatches and padding cost more, tiles beyond
 * VMEM and tiny tiles cost more, runtimes vary across configs).
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "common/util.h"
#include "perfcast/npz.h"
#include "perfcast/synth.h"
#include "synth/synth_internal.h"
#include "tpugraphs/opcode.h"

/* ---- fixture: three tiny datasets --------------------------------------- */

static char g_dir[1024], g_a[1100], g_b[1100], g_c[1100];

static const char *const k_cols[5] = {"tile/xla", "layout/xla/random", "layout/xla/default",
                                      "layout/nlp/random", "layout/nlp/default"};
static const char *const k_splits[3] = {"train", "valid", "test"};

static void fmt(char *buf, size_t cap, const char *f, ...) PC_PRINTF(3, 4);
static void fmt(char *buf, size_t cap, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, cap, f, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap) fail_msg("string too long: %s", buf);
}

static pc_status synth_tiny(const char *dir, uint64_t seed, int threads) {
    pc_synth_opts o = pc_synth_opts_default();
    o.scale = PC_SYNTH_TINY;
    o.seed = seed;
    o.threads = threads;
    pc_error e;
    pc_status st = pc_synth_write(dir, &o, NULL, &e);
    if (st) fprintf(stderr, "synth: %s\n", e.msg);
    return st;
}

static int group_setup(void **state) {
    (void)state;
    const char *base = getenv("PC_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    if (pc_mkdirs(base, NULL) != PC_OK) return -1;
    int n = snprintf(g_dir, sizeof g_dir, "%s/test_synth_XXXXXX", base);
    if (n < 0 || (size_t)n >= sizeof g_dir || !mkdtemp(g_dir)) return -1;
    snprintf(g_a, sizeof g_a, "%s/a", g_dir);
    snprintf(g_b, sizeof g_b, "%s/b", g_dir);
    snprintf(g_c, sizeof g_c, "%s/c", g_dir);
    /* a and b: same seed, different thread counts; c: another seed */
    if (synth_tiny(g_a, 7, 1) || synth_tiny(g_b, 7, 3) || synth_tiny(g_c, 8, 0)) return -1;
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    pc_remove_tree(g_dir);
    return 0;
}

/* ---- helpers -------------------------------------------------------------- */

typedef struct names {
    char **v;
    size_t n;
} names;

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted *.npz names in a directory (empty if it does not exist). */
static names list_npz(const char *dir) {
    names l = {NULL, 0};
    DIR *d = opendir(dir);
    if (!d) return l;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!pc_str_ends_with(e->d_name, ".npz")) continue;
        l.v = realloc(l.v, (l.n + 1) * sizeof *l.v);
        assert_non_null(l.v);
        l.v[l.n++] = strdup(e->d_name);
    }
    closedir(d);
    if (l.n) qsort(l.v, l.n, sizeof *l.v, cmp_str);
    return l;
}

static void names_free(names *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static void split_dir(char *buf, size_t cap, const char *root, int col, int split) {
    fmt(buf, cap, "%s/npz/%s/%s", root, k_cols[col], k_splits[split]);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Reads `key` and checks its dtype and rank. */
static void read_key(pc_npz *z, const char *key, pc_dtype t, int ndim, pc_array *a) {
    int i = pc_npz_find(z, key);
    if (i < 0) fail_msg("%s: no key %s", pc_npz_path(z), key);
    pc_error e;
    if (pc_npz_read(z, i, a, &e) != PC_OK) fail_msg("%s", e.msg);
    if (a->dtype != t || a->ndim != ndim)
        fail_msg("%s: %s is %s/%d-d, expected %s/%d-d", pc_npz_path(z), key,
                 pc_dtype_name(a->dtype), a->ndim, pc_dtype_name(t), ndim);
}

typedef struct graph {
    pc_npz *z;
    pc_array feat, op, edges;
    int64_t n, m;
} graph;

/* Opens a file and checks what every graph must satisfy. */
static void graph_open(graph *g, const char *path) {
    pc_error e;
    if (pc_npz_open(path, &g->z, &e) != PC_OK) fail_msg("%s", e.msg);
    pc_array init = PC_ARRAY_INIT;
    g->feat = g->op = g->edges = init;
    read_key(g->z, "node_feat", PC_DTYPE_F32, 2, &g->feat);
    read_key(g->z, "node_opcode", PC_DTYPE_U8, 1, &g->op);
    read_key(g->z, "edge_index", PC_DTYPE_I64, 2, &g->edges);
    g->n = g->feat.shape[0];
    g->m = g->edges.shape[0];
    assert_true(g->n > 0);
    assert_int_equal(g->feat.shape[1], 140);
    assert_int_equal(g->op.shape[0], g->n);
    assert_int_equal(g->edges.shape[1], 2);
    const int64_t *ed = g->edges.data;
    for (int64_t k = 0; k < g->m; k++) {
        int64_t u = ed[2 * k], v = ed[2 * k + 1];
        assert_true(u >= 0 && u < g->n && v >= 0 && v < g->n);
        assert_true(v < u); /* operands (and callees) come first */
        if (k)              /* sorted lexicographically, no duplicates */
            assert_true(u > ed[2 * k - 2] || (u == ed[2 * k - 2] && v > ed[2 * k - 1]));
    }
    const uint8_t *op = g->op.data;
    const float *f = g->feat.data;
    for (int64_t i = 0; i < g->n; i++) {
        assert_non_null(pc_hlo_opcode_name(op[i]));
        int ones = 0;
        for (int j = 2; j <= 20; j++) ones += f[i * 140 + j] == 1.0f;
        assert_int_equal(ones, 1); /* element type one-hot */
        for (int j = 0; j < 140; j++) assert_true(isfinite(f[i * 140 + j]));
    }
}

static void graph_close(graph *g) {
    pc_array_free(&g->feat);
    pc_array_free(&g->op);
    pc_array_free(&g->edges);
    pc_npz_close(g->z);
}

/* ---- the public surface ------------------------------------------------------ */

static void test_scale_names(void **state) {
    (void)state;
    for (int s = 0; s < PC_SYNTH_SCALE_COUNT; s++) {
        pc_synth_scale got = PC_SYNTH_SCALE_COUNT;
        assert_int_equal(pc_synth_scale_parse(pc_synth_scale_name((pc_synth_scale)s), &got),
                         PC_OK);
        assert_int_equal(got, s);
    }
    pc_synth_scale x = PC_SYNTH_TINY;
    assert_int_equal(pc_synth_scale_parse("huge", &x), PC_ERR_ARG);
    assert_int_equal(pc_synth_scale_parse(NULL, &x), PC_ERR_ARG);
    assert_null(pc_synth_scale_name(PC_SYNTH_SCALE_COUNT));
    pc_synth_opts o = pc_synth_opts_default();
    assert_int_equal(o.scale, PC_SYNTH_SMALL);
    assert_int_equal(o.collections, 0);
}

static void test_bad_options(void **state) {
    (void)state;
    char dir[1200];
    fmt(dir, sizeof dir, "%s/bad", g_dir);
    pc_synth_opts o = pc_synth_opts_default();
    pc_error e;
    assert_int_equal(pc_synth_write(NULL, &o, NULL, &e), PC_ERR_ARG);
    assert_int_equal(pc_synth_write(dir, NULL, NULL, &e), PC_ERR_ARG);
    o.layout_nodes = -5;
    assert_int_equal(pc_synth_write(dir, &o, NULL, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "layout_nodes"));
    o = pc_synth_opts_default();
    o.collections = 1u << 9;
    assert_int_equal(pc_synth_write(dir, &o, NULL, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "collections"));
    o = pc_synth_opts_default();
    o.scale = (pc_synth_scale)9;
    assert_int_equal(pc_synth_write(dir, &o, NULL, &e), PC_ERR_ARG);
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0); /* nothing written */
}

static void test_tree(void **state) {
    (void)state;
    static const size_t tile_n[3] = {8, 2, 2}, layout_n[3] = {3, 1, 1};
    char dir[1200];
    for (int c = 0; c < 5; c++)
        for (int s = 0; s < 3; s++) {
            split_dir(dir, sizeof dir, g_a, c, s);
            names l = list_npz(dir);
            assert_int_equal(l.n, c == 0 ? tile_n[s] : layout_n[s]);
            for (size_t i = 0; i < l.n; i++)
                if (c == 0) assert_non_null(strstr(l.v[i], "_fusion_"));
            names_free(&l);
        }
    /* random and default searches share their programs, as the public data does */
    for (int s = 0; s < 3; s++)
        for (int c = 1; c < 5; c += 2) {
            char d2[1200];
            split_dir(dir, sizeof dir, g_a, c, s);
            split_dir(d2, sizeof d2, g_a, c + 1, s);
            names a = list_npz(dir), b = list_npz(d2);
            assert_int_equal(a.n, b.n);
            for (size_t i = 0; i < a.n; i++) assert_string_equal(a.v[i], b.v[i]);
            names_free(&a);
            names_free(&b);
        }
}

/* Same seed: same names and bytes, whatever the thread count; another seed differs. */
static void test_deterministic(void **state) {
    (void)state;
    int differ = 0;
    for (int c = 0; c < 5; c++)
        for (int s = 0; s < 3; s++) {
            char da[1200], db[1200], dc[1200], pa[1500], pb[1500], pc[1500];
            split_dir(da, sizeof da, g_a, c, s);
            split_dir(db, sizeof db, g_b, c, s);
            split_dir(dc, sizeof dc, g_c, c, s);
            names a = list_npz(da), b = list_npz(db), cc = list_npz(dc);
            assert_int_equal(a.n, b.n);
            for (size_t i = 0; i < a.n; i++) {
                assert_string_equal(a.v[i], b.v[i]);
                fmt(pa, sizeof pa, "%s/%s", da, a.v[i]);
                fmt(pb, sizeof pb, "%s/%s", db, b.v[i]);
                size_t la, lb;
                unsigned char *xa = slurp(pa, &la), *xb = slurp(pb, &lb);
                assert_int_equal(la, lb);
                assert_memory_equal(xa, xb, la);
                if (i < cc.n) {
                    fmt(pc, sizeof pc, "%s/%s", dc, cc.v[i]);
                    size_t lc;
                    unsigned char *xc = slurp(pc, &lc);
                    differ += strcmp(a.v[i], cc.v[i]) != 0 || lc != la || memcmp(xa, xc, la) != 0;
                    free(xc);
                }
                free(xa);
                free(xb);
            }
            names_free(&a);
            names_free(&b);
            names_free(&cc);
        }
    assert_true(differ > 0);
}

/* ---- tile files -------------------------------------------------------------- */

static void check_tile(const char *path, int split, double *spread) {
    graph g;
    graph_open(&g, path);
    pc_array cf = PC_ARRAY_INIT, rt = PC_ARRAY_INIT, nm = PC_ARRAY_INIT;
    read_key(g.z, "config_feat", PC_DTYPE_F32, 2, &cf);
    read_key(g.z, "config_runtime", PC_DTYPE_I64, 1, &rt);
    read_key(g.z, "config_runtime_normalizers", PC_DTYPE_I64, 1, &nm);
    int64_t c = cf.shape[0];
    assert_true(c >= 1);
    assert_int_equal(cf.shape[1], 24);
    assert_int_equal(rt.shape[0], c);
    assert_int_equal(nm.shape[0], c);
    const float *f = cf.data;
    const int64_t *r = rt.data, *q = nm.data;
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t i = 0; i < c; i++) {
        /* kernel and output bounds are tiles (>= 1 where present); input bounds
           are left to the compiler: all zero, product of nothing 0 */
        assert_true(f[i * 24 + 0] >= 1.0f && f[i * 24 + 8] >= 1.0f);
        for (int j = 16; j < 24; j++) assert_true(f[i * 24 + j] == 0.0f);
        if (split == 2) {
            assert_int_equal(r[i], 0);
            assert_int_equal(q[i], 0);
        } else {
            assert_true(r[i] > 0 && q[i] > 0);
            lo = r[i] < lo ? r[i] : lo;
            hi = r[i] > hi ? r[i] : hi;
        }
    }
    *spread = split == 2 ? 0 : (double)hi / (double)lo;
    /* a fused computation has exactly one root */
    int roots = 0;
    for (int64_t i = 0; i < g.n; i++) roots += ((const float *)g.feat.data)[i * 140] == 1.0f;
    assert_int_equal(roots, 1);
    pc_array_free(&cf);
    pc_array_free(&rt);
    pc_array_free(&nm);
    graph_close(&g);
}

static void test_tile_files(void **state) {
    (void)state;
    int wide = 0, total = 0;
    for (int s = 0; s < 3; s++) {
        char dir[1200], path[1500];
        split_dir(dir, sizeof dir, g_a, 0, s);
        names l = list_npz(dir);
        for (size_t i = 0; i < l.n; i++) {
            fmt(path, sizeof path, "%s/%s", dir, l.v[i]);
            double spread;
            check_tile(path, s, &spread);
            if (s != 2) total++, wide += spread >= 1.2;
        }
        names_free(&l);
    }
    /* tile sizes matter: most kernels' configs differ by 20% or more */
    assert_true(wide * 5 >= total * 4);
}

/* ---- layout files -------------------------------------------------------------- */

/* A config tensor is all -1 or a permutation of 0..r-1 then -1s; `rank`
   (if >= 0) is the tensor's known rank. */
static void check_tensor(const float *t, int rank) {
    if (t[0] < 0) {
        for (int i = 0; i < 6; i++) assert_true(t[i] == -1.0f);
        return;
    }
    int r = 0;
    while (r < 6 && t[r] >= 0) r++;
    if (rank >= 0) assert_int_equal(r, rank);
    int seen[6] = {0};
    for (int i = 0; i < 6; i++) {
        if (i >= r) {
            assert_true(t[i] == -1.0f);
            continue;
        }
        assert_true(t[i] < r && t[i] == floorf(t[i]));
        assert_int_equal(seen[(int)t[i]]++, 0);
    }
}

static int feat_rank(const float *f) {
    int r = 0;
    while (r < 6 && f[21 + r] > 0) r++;
    return r;
}

typedef struct layout_stats {
    double spread;
    int64_t defaults; /* configs with every tensor -1 */
    int64_t nsplits;
} layout_stats;

static void check_layout(const char *path, int split, layout_stats *ls) {
    graph g;
    graph_open(&g, path);
    pc_array ids = PC_ARRAY_INIT, cf = PC_ARRAY_INIT, sp = PC_ARRAY_INIT, rt = PC_ARRAY_INIT;
    read_key(g.z, "node_config_ids", PC_DTYPE_I64, 1, &ids);
    read_key(g.z, "node_config_feat", PC_DTYPE_F32, 3, &cf);
    read_key(g.z, "node_splits", PC_DTYPE_I64, 2, &sp);
    read_key(g.z, "config_runtime", PC_DTYPE_I64, 1, &rt);
    int64_t nc = ids.shape[0], c = cf.shape[0];
    assert_true(nc >= 1 && c >= 1);
    assert_int_equal(cf.shape[1], nc);
    assert_int_equal(cf.shape[2], 18);
    assert_int_equal(rt.shape[0], c);
    const int64_t *id = ids.data;
    const uint8_t *op = g.op.data;
    const float *nf = g.feat.data;
    for (int64_t s = 0; s < nc; s++) {
        assert_true(id[s] >= 0 && id[s] < g.n);
        if (s) assert_true(id[s] > id[s - 1]); /* unique */
        uint8_t o = op[id[s]];
        assert_true(o == PC_HLO_CONVOLUTION || o == PC_HLO_DOT || o == PC_HLO_RESHAPE);
    }
    /* config tensors: output (node's rank), input, kernel (convolutions only) */
    const float *f = cf.data;
    ls->defaults = 0;
    for (int64_t k = 0; k < c; k++) {
        int all_default = 1;
        for (int64_t s = 0; s < nc; s++) {
            const float *t = f + (k * nc + s) * 18;
            int conv = op[id[s]] == PC_HLO_CONVOLUTION;
            check_tensor(t, feat_rank(nf + id[s] * 140));
            check_tensor(t + 6, conv ? 4 : -1);
            check_tensor(t + 12, conv ? 4 : 0); /* the kernel: convolutions only */
            for (int j = 0; j < 18; j += 6) all_default &= t[j] < 0;
        }
        ls->defaults += all_default;
    }
    /* node_splits: (1, k), 0 first, n last, increasing */
    assert_int_equal(sp.shape[0], 1);
    const int64_t *q = sp.data;
    int64_t k = sp.shape[1];
    assert_true(k >= 2);
    assert_int_equal(q[0], 0);
    assert_int_equal(q[k - 1], g.n);
    for (int64_t i = 1; i < k; i++) assert_true(q[i] > q[i - 1]);
    ls->nsplits = k;
    const int64_t *r = rt.data;
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t i = 0; i < c; i++) {
        if (split == 2) {
            assert_int_equal(r[i], 0);
            continue;
        }
        assert_true(r[i] > 0);
        lo = r[i] < lo ? r[i] : lo;
        hi = r[i] > hi ? r[i] : hi;
    }
    ls->spread = split == 2 ? 0 : (double)hi / (double)lo;
    pc_array_free(&ids);
    pc_array_free(&cf);
    pc_array_free(&sp);
    pc_array_free(&rt);
    graph_close(&g);
}

static void test_layout_files(void **state) {
    (void)state;
    int wide = 0, total = 0;
    for (int c = 1; c < 5; c++) {
        int is_default = c == 2 || c == 4;
        for (int s = 0; s < 3; s++) {
            char dir[1200], path[1500];
            split_dir(dir, sizeof dir, g_a, c, s);
            names l = list_npz(dir);
            for (size_t i = 0; i < l.n; i++) {
                fmt(path, sizeof path, "%s/%s", dir, l.v[i]);
                layout_stats ls;
                check_layout(path, s, &ls);
                /* the default search logs the compiler default */
                if (is_default) assert_true(ls.defaults >= 1);
                if (!is_default && s != 2) total++, wide += ls.spread >= 1.2;
            }
            names_free(&l);
        }
    }
    /* random layouts matter: tens of percent between configs in most programs */
    assert_true(wide * 4 >= total * 3);
}

/* Node features are filled as the TpuGraphs featurizer fills them. */
static void test_node_features(void **state) {
    (void)state;
    char dir[1200], path[1500];
    int convs = 0, params = 0;
    for (int c = 1; c < 5; c += 2) {
        split_dir(dir, sizeof dir, g_a, c, 0);
        names l = list_npz(dir);
        for (size_t i = 0; i < l.n; i++) {
            fmt(path, sizeof path, "%s/%s", dir, l.v[i]);
            graph g;
            graph_open(&g, path);
            const float *f = g.feat.data;
            const uint8_t *op = g.op.data;
            for (int64_t v = 0; v < g.n; v++) {
                const float *x = f + v * 140;
                int rank = feat_rank(x);
                /* row-major layout at 134.., 0-padded */
                for (int j = 0; j < 6; j++)
                    assert_true(x[134 + j] == (j < rank ? (float)(rank - 1 - j) : 0.0f));
                if (op[v] == PC_HLO_CONVOLUTION) {
                    convs++;
                    assert_true(x[37] >= 1.0f);                  /* window size */
                    assert_true(x[94] == 3.0f);                  /* input feature dim (NHWC) */
                    assert_true(x[107] >= 1.0f);                 /* feature_group_count */
                    assert_true(x[91] == 0.0f && x[92] == 2.0f); /* reversal: 0 true, 2 false */
                } else if (op[v] != PC_HLO_REDUCE_WINDOW) {
                    assert_true(x[44] == 1.0f && x[84] == 1.0f); /* empty window: product 1 */
                    assert_true(x[107] == 0.0f);
                }
                if (op[v] == PC_HLO_PARAMETER) params++;
                if (op[v] != PC_HLO_SLICE) assert_true(x[112] == 1.0f && x[120] == 1.0f);
            }
            graph_close(&g);
        }
        names_free(&l);
    }
    assert_true(params > 0);
    assert_true(convs > 0);
}

/* Overrides: counts, configs and collections as asked. */
static void test_overrides(void **state) {
    (void)state;
    char out[1200], dir[1200], path[1500];
    fmt(out, sizeof out, "%s/over", g_dir);
    pc_synth_opts o = pc_synth_opts_default();
    o.scale = PC_SYNTH_TINY;
    o.graphs_per_split = 2;
    o.layout_nodes = 400;
    o.layout_configs = 7;
    o.tile_configs = 5;
    o.compress = 1;
    o.collections = (1u << 0) | (1u << 1); /* tile:xla, layout:xla:random */
    pc_report *log = pc_report_new();
    pc_error e;
    if (pc_synth_write(out, &o, log, &e) != PC_OK) fail_msg("%s", e.msg);
    assert_true(pc_report_count(log) >= 2);
    pc_report_free(log);
    for (int s = 0; s < 3; s++) {
        split_dir(dir, sizeof dir, out, 1, s);
        names l = list_npz(dir);
        assert_int_equal(l.n, s == 0 ? 2 : 1);
        for (size_t i = 0; i < l.n; i++) {
            fmt(path, sizeof path, "%s/%s", dir, l.v[i]);
            pc_npz *z;
            if (pc_npz_open(path, &z, &e)) fail_msg("%s", e.msg);
            assert_int_equal(pc_npz_is_stored(z, 0), 0); /* deflated */
            pc_array a = PC_ARRAY_INIT;
            read_key(z, "config_runtime", PC_DTYPE_I64, 1, &a);
            assert_int_equal(a.shape[0], 7);
            pc_array_free(&a);
            read_key(z, "node_opcode", PC_DTYPE_U8, 1, &a);
            assert_true(a.shape[0] >= 300 && a.shape[0] <= 700);
            pc_array_free(&a);
            pc_npz_close(z);
        }
        names_free(&l);
        split_dir(dir, sizeof dir, out, 0, s);
        l = list_npz(dir);
        assert_int_equal(l.n, s == 0 ? 2 : 1);
        names_free(&l);
        split_dir(dir, sizeof dir, out, 3, s);
        struct stat st;
        assert_int_not_equal(stat(dir, &st), 0);
    }
}

/* ---- the opcode table ------------------------------------------------------------ */

static void test_opcode_table(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int id;
    } key[] = {{"abs", 1},           {"add", 2},          {"broadcast", 13},
               {"constant", 24},     {"convolution", 26}, {"copy", 27},
               {"dot", 34},          {"fusion", 41},      {"get-tuple-element", 45},
               {"parameter", 63},    {"reduce", 70},      {"reshape", 75},
               {"tanh", 96},         {"transpose", 98},   {"tuple", 100},
               {"while", 102},       {"tan", 120},        {"trace", 97},
               {"tuple-select", 101}};
    for (size_t i = 0; i < sizeof key / sizeof key[0]; i++) {
        assert_int_equal(pc_hlo_opcode_find(key[i].name), key[i].id);
        assert_string_equal(pc_hlo_opcode_name(key[i].id), key[i].name);
    }
    int live = 0;
    for (int id = 1; id < PC_HLO_OPCODE_COUNT; id++) {
        const char *n = pc_hlo_opcode_name(id);
        assert_non_null(n);
        assert_int_equal(pc_hlo_opcode_find(n), id); /* names are unique */
        live += !pc_hlo_opcode_is_tombstone(id);
    }
    assert_int_equal(live, 118);
    assert_int_equal(PC_HLO_OPCODE_COUNT, 121);
    assert_null(pc_hlo_opcode_name(0));
    assert_null(pc_hlo_opcode_name(121));
    assert_int_equal(pc_hlo_opcode_find("no-such-op"), PC_HLO_UNKNOWN);
    assert_int_equal(pc_hlo_opcode_find(NULL), PC_HLO_UNKNOWN);
}

/* ---- the HLO builder ------------------------------------------------------------ */

/* A while loop: callees before callers, edges to called roots, node_splits
   after the computations named cond/while/cluster. */
static void test_builder_while(void **state) {
    (void)state;
    sy_module m;
    sy_module_init(&m);
    int32_t entry = sy_comp_begin(&m, "cluster_0", 1.0);
    int32_t cond = sy_comp_begin(&m, "while_cond.0", 5.0);
    int32_t cp = sy_tuple_param(&m, 2, 0);
    int32_t cc = sy_gte(&m, cp, sy_scalar(SY_S32), 0);
    sy_comp_set_root(&m, sy_compare(&m, cc, sy_const(&m, sy_scalar(SY_S32))));
    int32_t body = sy_comp_begin(&m, "while_body.0", 4.0);
    int32_t bp = sy_tuple_param(&m, 2, 0);
    int32_t i = sy_gte(&m, bp, sy_scalar(SY_S32), 0);
    int32_t x = sy_gte(&m, bp, sy_shp2(SY_F32, 8, 128), 1);
    int32_t y = sy_unary(&m, PC_HLO_TANH, x);
    int32_t ops[2] = {sy_binary(&m, PC_HLO_ADD, i, sy_const(&m, sy_scalar(SY_S32))), y};
    sy_comp_set_root(&m, sy_tuple(&m, 2, ops));
    sy_comp_switch(&m, entry);
    int32_t p = sy_param(&m, sy_shp2(SY_F32, 8, 128), 0);
    int32_t init_ops[2] = {sy_const(&m, sy_scalar(SY_S32)), p};
    int32_t w = sy_while(&m, sy_tuple(&m, 2, init_ops), cond, body);
    sy_comp_set_root(&m, sy_gte(&m, w, sy_shp2(SY_F32, 8, 128), 1));
    assert_int_equal(sy_module_finish(&m, entry), 0);
    /* cond (4 nodes) 0..3, body (7) 4..10, entry (5) 11..15 */
    assert_int_equal(m.n, 16);
    int64_t splits[8];
    int k = sy_node_splits(&m, splits);
    assert_int_equal(k, 4);
    assert_int_equal(splits[1], 4);
    assert_int_equal(splits[2], 11);
    assert_int_equal(splits[3], 16);
    int64_t ne = sy_edges(&m, NULL);
    int64_t *ed = malloc((size_t)ne * 2 * sizeof *ed);
    assert_non_null(ed);
    assert_int_equal(sy_edges(&m, ed), ne);
    int64_t wi = 14; /* entry: param, const, tuple, while, gte */
    assert_int_equal(m.inst[wi].op, PC_HLO_WHILE);
    int to_cond = 0, to_body = 0;
    for (int64_t e = 0; e < ne; e++)
        if (ed[2 * e] == wi) to_cond += ed[2 * e + 1] == 3, to_body += ed[2 * e + 1] == 10;
    assert_int_equal(to_cond, 1);
    assert_int_equal(to_body, 1);
    float f[140];
    sy_featurize(&m, 10, f); /* body root tuple */
    assert_true(f[0] == 1.0f && f[2 + 16] == 1.0f && f[29] == 2.0f);
    sy_featurize(&m, 11, f); /* entry parameter 0: f32[8,128] */
    assert_true(f[0] == 0.0f && f[2 + 11] == 1.0f);
    assert_true(f[21] == 8.0f && f[22] == 128.0f && f[27] == 136.0f && f[28] == 1024.0f);
    free(ed);
    sy_module_free(&m);
}

/* ---- cost models ------------------------------------------------------------------ */

/* y = dot(x, w) + r, returned as a tuple; the dot is the one configurable node. */
static int64_t build_dot_add(sy_module *m, int64_t rows, int64_t k, int64_t cols) {
    sy_module_init(m);
    int32_t entry = sy_comp_begin(m, "main", 1.0);
    int32_t x = sy_param(m, sy_shp2(SY_F32, rows, k), 0);
    int32_t w = sy_param(m, sy_shp2(SY_F32, k, cols), 1);
    int32_t r = sy_param(m, sy_shp2(SY_F32, rows, cols), 2);
    int32_t d = sy_dot(m, x, w, 0, 1, 0);
    int32_t y = sy_binary(m, PC_HLO_ADD, d, r);
    sy_comp_set_root(m, sy_tuple(m, 1, &y));
    assert_int_equal(sy_module_finish(m, entry), 0);
    return 3; /* the dot's node index */
}

static void set_tensor(float *row, int t, uint8_t a, uint8_t b) {
    for (int i = 0; i < 6; i++) row[t * 6 + i] = -1.0f;
    row[t * 6 + 0] = a;
    row[t * 6 + 1] = b;
}

static void test_layout_cost_mismatch(void **state) {
    (void)state;
    sy_module m;
    int64_t id = build_dot_add(&m, 1024, 512, 512);
    sy_layout_model *lm = sy_layout_model_new(&m, &id, 1);
    assert_non_null(lm);
    float row[18];
    for (int i = 0; i < 18; i++) row[i] = -1.0f;
    double def = sy_layout_cost(lm, row);
    assert_true(def > 0 && fabs(def - sy_layout_cost(lm, NULL)) < 1e-6 * def);
    /* explicit row-major output and input: what the compiler does anyway */
    set_tensor(row, 0, 1, 0);
    set_tensor(row, 1, 1, 0);
    assert_true(fabs(sy_layout_cost(lm, row) - def) < 1e-6 * def);
    /* a column-major output no longer matches the residual's layout: a copy,
       and the result must be copied back to row-major for the tuple too */
    set_tensor(row, 0, 0, 1);
    set_tensor(row, 1, 1, 0);
    double out_mismatch = sy_layout_cost(lm, row);
    assert_true(out_mismatch > def * 1.05);
    /* asking for a column-major input copies the producer's row-major x */
    set_tensor(row, 0, 1, 0);
    set_tensor(row, 1, 0, 1);
    double in_mismatch = sy_layout_cost(lm, row);
    assert_true(in_mismatch > def * 1.02);
    sy_layout_model_free(lm);
    sy_module_free(&m);
}

/* exp(x) for x: f32[rows, cols], returned as a tuple; nothing configurable. */
static void build_exp(sy_module *m, int64_t rows, int64_t cols) {
    sy_module_init(m);
    int32_t entry = sy_comp_begin(m, "main", 1.0);
    int32_t x = sy_param(m, sy_shp2(SY_F32, rows, cols), 0);
    int32_t y = sy_unary(m, PC_HLO_EXPONENTIAL, x);
    sy_comp_set_root(m, sy_tuple(m, 1, &y));
    assert_int_equal(sy_module_finish(m, entry), 0);
}

/* Lane padding: a minor dim of 129 occupies 256 lanes. */
static void test_layout_cost_padding(void **state) {
    (void)state;
    sy_module a, b;
    build_exp(&a, 4096, 128);
    build_exp(&b, 4096, 129);
    sy_layout_model *la = sy_layout_model_new(&a, NULL, 0), *lb = sy_layout_model_new(&b, NULL, 0);
    assert_non_null(la);
    assert_non_null(lb);
    double ca = sy_layout_cost(la, NULL), cb = sy_layout_cost(lb, NULL);
    assert_true(cb > 1.6 * ca);
    sy_layout_model_free(la);
    sy_layout_model_free(lb);
    sy_module_free(&a);
    sy_module_free(&b);
}

static void test_tile_cost(void **state) {
    (void)state;
    const int64_t good[3] = {512, 512, 512}, huge[3] = {4096, 4096, 4096};
    const int64_t tiny[3] = {8, 128, 128};
    double g = sy_tile_matmul_cost(4096, 4096, 4096, good, 2);
    assert_true(g > 0);
    /* tiles far beyond the 16 MiB VMEM spill */
    assert_true(sy_tile_matmul_cost(4096, 4096, 4096, huge, 2) > 1.5 * g);
    /* tiny tiles: many grid steps and re-fetched operands */
    assert_true(sy_tile_matmul_cost(4096, 4096, 4096, tiny, 2) > 3.0 * g);
    /* an extent just past a tile multiple pays a whole extra row of tiles */
    assert_true(sy_tile_matmul_cost(4097, 4096, 4096, good, 2) > 1.08 * g);
}

/* Every tile graph lists its default config; random draws vary widely. */
static void test_tile_graph(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sy_rng r;
        sy_rng_seed(&r, seed);
        sy_tile_graph g;
        assert_int_equal(sy_tile_graph_build(&g, &r, 40), 0);
        assert_true(g.nconfigs >= 1 && g.nconfigs <= 40);
        assert_true(g.default_config >= 0 && g.default_config < g.nconfigs);
        for (int64_t i = 0; i < g.nconfigs; i++) assert_true(g.cost_ns[i] > 0);
        assert_true(g.mod.n >= 2);
        sy_tile_graph_free(&g);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_names),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_tile_files),
        cmocka_unit_test(test_layout_files),
        cmocka_unit_test(test_node_features),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_opcode_table),
        cmocka_unit_test(test_builder_while),
        cmocka_unit_test(test_layout_cost_mismatch),
        cmocka_unit_test(test_layout_cost_padding),
        cmocka_unit_test(test_tile_cost),
        cmocka_unit_test(test_tile_graph),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
