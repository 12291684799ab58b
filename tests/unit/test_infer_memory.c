/*
 * The scoring's memory estimate (pc_infer_peak_bytes, src/gnn/infer.h)
 * against the bytes pc_infer_score_graph actually allocates: the library's
 * malloc, calloc, realloc, aligned_alloc, free and the workspace's mmap and
 * munmap are redirected at link time (-Wl,--wrap=..., tests/CMakeLists.txt,
 * as the fault-injection harness does), and the live bytes counted (freed
 * ones by malloc_usable_size, mappings by length). For a tile and a layout
 * model, at budgets that leave the default chunk and that shrink it: the
 * measured peak lies within the estimate, the estimate within 3x of it (+
 * 512 KiB; the layout model prunes, which the estimate counts whole), the scores agree with the unbudgeted ones (to float rounding:
 * BLAS kernels are picked by row count) and the ranking is the same; below
 * the smallest chunk's need the call fails with PC_ERR_NOMEM naming the file
 * and the budget, before allocating anything of size.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "gnn/infer.h"
#include "gnn/predictor.h"
#include "perfcast/dataset.h"
#include "perfcast/synth.h"
#include "perfcast/train.h"

/* ---- counted allocation --------------------------------------------------- */

static long long g_live, g_base, g_peak;
static int g_armed;

static void add(long long n) {
    g_live += n;
    if (g_armed && g_live > g_peak) g_peak = g_live;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t al, size_t n);
void __real_free(void *p);
void *__real_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *a, size_t len);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t al, size_t n);
void __wrap_free(void *p);
void *__wrap_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *a, size_t len);

void *__wrap_malloc(size_t n) {
    void *p = __real_malloc(n);
    if (p) add((long long)malloc_usable_size(p));
    return p;
}
void *__wrap_calloc(size_t a, size_t b) {
    void *p = __real_calloc(a, b);
    if (p) add((long long)malloc_usable_size(p));
    return p;
}
void *__wrap_realloc(void *p, size_t n) {
    long long old = p ? (long long)malloc_usable_size(p) : 0;
    void *q = __real_realloc(p, n);
    if (q || !n) add(-old);
    if (q) add((long long)malloc_usable_size(q));
    return q;
}
void *__wrap_aligned_alloc(size_t al, size_t n) {
    void *p = __real_aligned_alloc(al, n);
    if (p) add((long long)malloc_usable_size(p));
    return p;
}
void __wrap_free(void *p) {
    if (p) add(-(long long)malloc_usable_size(p));
    __real_free(p);
}
void *__wrap_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off) {
    void *p = __real_mmap(a, len, prot, flags, fd, off);
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS)) add((long long)len);
    return p;
}
int __wrap_munmap(void *a, size_t len) {
    /* the library unmaps only what it mapped: anonymous workspace blocks, or a
       file's mapping (not counted when mapped, before arming here) */
    int r = __real_munmap(a, len);
    if (!r && g_armed) add(-(long long)len);
    return r;
}

static void arm(void) {
    g_base = g_peak = g_live;
    g_armed = 1;
}

static double disarm(void) {
    g_armed = 0;
    return (double)(g_peak - g_base);
}

/* ---- data and models ------------------------------------------------------ */

static char data[512];

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("PC_TEST_TMP");
    snprintf(data, sizeof data, "%s/infer_memory_data", tmp ? tmp : "/tmp");
    pc_synth_opts so = pc_synth_opts_default();
    so.scale = PC_SYNTH_SMALL;
    so.seed = 5;
    so.threads = 2;
    so.collections =
        (1u << pc_collection_find("tile:xla")) | (1u << pc_collection_find("layout:xla:random"));
    pc_error e;
    return pc_synth_write(data, &so, NULL, &e) == PC_OK ? 0 : -1;
}

static void train(const char *coll, const char *name, char *model, size_t cap) {
    const char *tmp = getenv("PC_TEST_TMP");
    snprintf(model, cap, "%s/infer_memory_%s.st", tmp ? tmp : "/tmp", name);
    pc_train_opts o = pc_train_opts_default();
    o.data_dir = data;
    o.collection = coll;
    o.out_path = model;
    o.epochs = 1;
    o.threads = 2;
    o.hidden = 16;
    o.layers = 2;
    o.configs = 4;
    pc_train_result tr = {.struct_size = sizeof tr};
    pc_error e;
    pc_status st = pc_train_run(&o, NULL, NULL, NULL, &tr, &e);
    if (st) print_error("%s\n", e.msg);
    assert_int_equal(st, PC_OK);
}

/* The valid graph of coll with the most configs. */
static pc_graph *big_graph(const char *coll) {
    pc_dataset *ds = NULL;
    pc_error e;
    assert_int_equal(pc_dataset_open(data, &ds, &e), PC_OK);
    int c = pc_collection_find(coll), sp = pc_split_find("valid");
    pc_graph *best = NULL;
    for (size_t i = 0; i < pc_dataset_num_files(ds, c, sp); i++) {
        pc_graph *g = NULL;
        pc_load_opts lo = pc_load_opts_default();
        assert_int_equal(pc_graph_load(pc_dataset_file(ds, c, sp, i), &lo, &g, &e), PC_OK);
        if (!best || pc_graph_num_configs(g) > pc_graph_num_configs(best)) {
            pc_graph_free(best);
            best = g;
        } else {
            pc_graph_free(g);
        }
    }
    pc_dataset_close(ds);
    assert_non_null(best);
    return best;
}

/* ---- the checks ----------------------------------------------------------- */

typedef struct prog {
    int64_t calls, last, total;
} prog;

static void on_progress(void *user, const char *what, int64_t done, int64_t total) {
    prog *p = user;
    assert_string_equal(what, "configs scored");
    assert_true(done >= p->last && done <= total);
    p->calls++, p->last = done, p->total = total;
}

/* Scores g under `budget`, measured; returns the chunk pc_infer_fit chose (0: default). */
static int64_t measured(pc_predictor *p, pc_graph *g, uint64_t budget, double *peak, double *est,
                        double *scores, prog *pr) {
    const pc_gnn *m = p->m;
    int64_t cap = 0;
    pc_error e;
    assert_int_equal(pc_infer_fit(m, g, budget, 1, &cap, &e), PC_OK);
    *est = pc_infer_peak_bytes(m, g, cap > 0 ? cap : pc_infer_chunk_for(m, g), 1, NULL, NULL);
    pc_gnn_ws *ws = pc_gnn_ws_new();
    assert_non_null(ws);
    pc_infer_run run = {budget, 0, pr ? on_progress : NULL, pr};
    arm();
    pc_status st = pc_infer_score_graph(m, ws, g, scores, NULL, &run, &e);
    *peak = disarm();
    if (st) print_error("%s\n", e.msg);
    assert_int_equal(st, PC_OK);
    pc_gnn_ws_free(ws);
    return cap;
}

/* The estimate over the measured peak at most (plus 512 KiB): the layout model
   prunes its graph (prune_hops), which the estimate, made before, counts whole. */
#define SLACK 3.0

static void check_model(const char *coll, const char *name) {
    char model[600];
    train(coll, name, model, sizeof model);
    pc_predictor *p = NULL;
    pc_error e;
    assert_int_equal(pc_predictor_load(model, 2, &p, &e), PC_OK);
    pc_graph *g = big_graph(coll);
    int64_t c = pc_graph_num_configs(g);
    double *ref = malloc((size_t)c * sizeof *ref), *s = malloc((size_t)c * sizeof *s);
    assert_true(ref && s);
    double peak, est;
    prog pr = {0, 0, 0};
    int64_t cap = measured(p, g, PC_MEMORY_AUTO, &peak, &est, ref, &pr);
    assert_int_equal(cap, 0);
    assert_true(pr.calls >= 1 && pr.last == c && pr.total == c);
    print_message("%s: %lld configs, default chunk %lld: measured %.0f, estimated %.0f\n", name,
                  (long long)c, (long long)pc_infer_chunk_for(p->m, g), peak, est);
    assert_true(peak <= est && est <= SLACK * peak + 524288.0);
    double full = est;
    int64_t last = pc_infer_chunk_for(p->m, g);
    /* budgets that shrink the chunk */
    for (double f = 0.7; f > 0.01; f *= 0.6) {
        uint64_t budget = (uint64_t)(full * f);
        int64_t lo_cap = 0;
        if (pc_infer_fit(p->m, g, budget, 1, &lo_cap, &e) != PC_OK) break;
        memset(&pr, 0, sizeof pr);
        cap = measured(p, g, budget, &peak, &est, s, &pr);
        print_message("%s: budget %llu: chunk %lld: measured %.0f, estimated %.0f, %lld "
                      "progress calls\n", name, (unsigned long long)budget, (long long)cap, peak,
                      est, (long long)pr.calls);
        assert_true(cap > 0 && cap <= last);
        last = cap;
        assert_true(peak <= est && est <= SLACK * peak + 524288.0);
        assert_true(est <= (double)budget);
        assert_true(pr.last == c && pr.calls >= (c + cap - 1) / cap);
        for (int64_t i = 0; i < c; i++) /* equal to float rounding */
            assert_true(fabs(s[i] - ref[i]) <= 1e-5 * (1.0 + fabs(ref[i])));
    }
    assert_true(last < pc_infer_chunk_for(p->m, g)); /* some budget shrank it */
    /* below the smallest chunk's need: refused, naming the file and the budget */
    int64_t lo = pc_infer_chunk_min(p->m);
    uint64_t budget = (uint64_t)(pc_infer_peak_bytes(p->m, g, lo, 1, NULL, NULL) * 0.9);
    pc_gnn_ws *ws = pc_gnn_ws_new();
    pc_infer_run run = {budget, 0, NULL, NULL};
    arm();
    pc_status st = pc_infer_score_graph(p->m, ws, g, s, NULL, &run, &e);
    peak = disarm();
    assert_int_equal(st, PC_ERR_NOMEM);
    assert_non_null(strstr(e.msg, pc_graph_path(g)));
    assert_non_null(strstr(e.msg, "memory budget of"));
    assert_true(peak < 65536.0); /* refused before the model input is built */
    pc_gnn_ws_free(ws);
    free(ref);
    free(s);
    pc_graph_free(g);
    pc_predictor_free(p);
}

static void test_tile(void **state) {
    (void)state;
    check_model("tile:xla", "tile");
}

static void test_layout(void **state) {
    (void)state;
    check_model("layout:xla:random", "layout");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tile),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
