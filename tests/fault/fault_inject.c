/*
 * Fault injection (issue #18): every allocation of the library made to fail
 * in turn, as SQLite's and rax's test harnesses do, and its writes, renames
 * and fsyncs too.
 *
 * The library's calls to malloc, calloc, realloc, posix_memalign, fwrite,
 * fsync and rename are redirected here at link time (-Wl,--wrap=..., see
 * tests/CMakeLists.txt): the library itself has no hook. For each scenario,
 * for N = 1, 2, ...: the N-th such call of the scenario fails (NULL and
 * ENOMEM, or EIO for I/O) and the scenario runs to its end; it must return
 * an error with a message or succeed (a fallback), never crash, and must
 * leave no output under its final name unless it succeeded (and none of
 * the temporaries). The loop ends when the scenario makes fewer than N
 * calls. Leaks are caught by LeakSanitizer in the sanitizer build.
 *
 * Scenarios (tiny synthetic data written once, faults off): load a tile and
 * a layout graph and validate them; reload and write back a checkpoint;
 * import an HLO module to .npz; parse and cost HLO; load a model and score a
 * graph; train one epoch; eval a split; rank an HLO module's candidates;
 * build a cache entry; synthesize a dataset. Every call N is tried (the
 * whole loop takes seconds on tiny data); a scenario of more than 3,000
 * calls is strided to 3,000 runs unless PC_FAULT_FULL=1.
 *   fault_inject [SCENARIO]   (default: all)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfcast/dataset.h"
#include "perfcast/hlo.h"
#include "perfcast/hlo_cost.h"
#include "perfcast/perfcast.h"
#include "perfcast/predict.h"
#include "perfcast/safetensors.h"
#include "perfcast/synth.h"
#include "perfcast/train.h"

/* ---- the wrapped calls ---------------------------------------------------- */

static atomic_long g_calls;   /* counted calls since arm() */
static long g_fail_at;        /* the call that fails (1-based); 0 = none */
static atomic_int g_failed;   /* 1 once the fault was injected */
static int g_io_only;         /* count only fwrite/fsync/rename */

static int hit(int io) {
    if (!g_fail_at || (g_io_only && !io)) return 0;
    long n = atomic_fetch_add(&g_calls, 1) + 1;
    if (n != g_fail_at) return 0;
    atomic_store(&g_failed, 1);
    return 1;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t al, size_t n);
size_t __real_fwrite(const void *p, size_t a, size_t b, FILE *f);
int __real_fsync(int fd);
int __real_rename(const char *a, const char *b);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t al, size_t n);
size_t __wrap_fwrite(const void *p, size_t a, size_t b, FILE *f);
int __wrap_fsync(int fd);
int __wrap_rename(const char *a, const char *b);

void *__wrap_malloc(size_t n) {
    if (hit(0)) return errno = ENOMEM, NULL;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t a, size_t b) {
    if (hit(0)) return errno = ENOMEM, NULL;
    return __real_calloc(a, b);
}
void *__wrap_realloc(void *p, size_t n) {
    if (hit(0)) return errno = ENOMEM, NULL;
    return __real_realloc(p, n);
}
int __wrap_posix_memalign(void **p, size_t al, size_t n) {
    if (hit(0)) return ENOMEM;
    return __real_posix_memalign(p, al, n);
}
size_t __wrap_fwrite(const void *p, size_t a, size_t b, FILE *f) {
    if (hit(1)) return errno = EIO, 0;
    return __real_fwrite(p, a, b, f);
}
int __wrap_fsync(int fd) {
    if (hit(1)) return errno = EIO, -1;
    return __real_fsync(fd);
}
int __wrap_rename(const char *a, const char *b) {
    if (hit(1)) return errno = EIO, -1;
    return __real_rename(a, b);
}

static void arm(long n, int io_only) {
    atomic_store(&g_calls, 0);
    atomic_store(&g_failed, 0);
    g_io_only = io_only;
    g_fail_at = n;
}
static long disarm(void) {
    g_fail_at = 0;
    return atomic_load(&g_calls);
}

/* ---- scenarios -------------------------------------------------------------- */

static char g_dir[512], g_tile[1024], g_layout[1024], g_model[1024], g_hlo[1024];
static int g_fails;

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    g_fails++;
}

typedef struct scenario {
    const char *name;
    /* runs once; out: the final output path it writes (or "" for none) */
    pc_status (*run)(pc_error *err, char *out, size_t cap);
} scenario;

static pc_status sc_load(pc_error *err, char *out, size_t cap) {
    (void)out, (void)cap;
    const char *paths[2] = {g_tile, g_layout};
    for (int i = 0; i < 2; i++) {
        pc_load_opts o = pc_load_opts_default();
        o.threads = 1;
        pc_graph *g = NULL;
        pc_status st = pc_graph_load(paths[i], &o, &g, err);
        if (st) return st;
        pc_report *r = pc_report_new();
        st = r ? pc_graph_validate(g, 0, r) : PC_ERR_NOMEM;
        if (st && !r) snprintf(err->msg, sizeof err->msg, "report: out of memory"), err->code = st;
        pc_report_free(r);
        pc_graph_free(g);
        if (st) {
            if (!err->msg[0]) snprintf(err->msg, sizeof err->msg, "validate failed (%d)", st);
            err->code = st;
            return st;
        }
    }
    return PC_OK;
}

static pc_status sc_checkpoint(pc_error *err, char *out, size_t cap) {
    snprintf(out, cap, "%s/copy.safetensors", g_dir);
    pc_predictor *p = NULL; /* the model read, then written back (the write last) */
    pc_status st = pc_predictor_load(g_model, 1, &p, err);
    pc_predictor_free(p);
    if (st) return st;
    pc_st *r = NULL;
    st = pc_st_open(g_model, &r, err);
    if (st) return st;
    pc_st_writer *w = pc_st_writer_new();
    if (!w) {
        pc_st_close(r);
        snprintf(err->msg, sizeof err->msg, "writer: out of memory");
        return err->code = PC_ERR_NOMEM;
    }
    for (int i = 0; i < pc_st_count(r) && !st; i++) {
        pc_dtype t;
        int nd;
        int64_t shape[PC_MAX_DIMS];
        st = pc_st_info(r, i, &t, &nd, shape);
        if (!st) st = pc_st_writer_add(w, pc_st_name(r, i), t, nd, shape, pc_st_data(r, i), err);
    }
    for (int i = 0; i < pc_st_meta_count(r) && !st; i++)
        st = pc_st_writer_set_meta(w, pc_st_meta_key(r, i), pc_st_meta_value(r, i), err);
    if (!st) st = pc_st_writer_save(w, out, err);
    pc_st_writer_free(w);
    pc_st_close(r);
    return st;
}

static pc_status sc_import(pc_error *err, char *out, size_t cap) {
    snprintf(out, cap, "%s/import/m.npz", g_dir);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/import", g_dir);
    pc_import_opts o = pc_import_opts_default();
    return pc_import_file(g_hlo, dir, &o, NULL, err);
}

static pc_status sc_cost(pc_error *err, char *out, size_t cap) {
    (void)out, (void)cap;
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    pc_hlo_cost *c = NULL;
    pc_status st = pc_hlo_cost_file(g_hlo, &o, &c, err);
    pc_hlo_cost_free(c);
    return st;
}

static pc_status sc_score(pc_error *err, char *out, size_t cap) {
    (void)out, (void)cap;
    pc_predictor *p = NULL;
    pc_status st = pc_predictor_load(g_model, 1, &p, err);
    pc_graph *g = NULL;
    pc_load_opts o = pc_load_opts_default();
    o.threads = 1;
    if (!st) st = pc_graph_load(g_tile, &o, &g, err);
    double *s = NULL;
    if (!st && !(s = calloc((size_t)pc_graph_num_configs(g), sizeof *s))) {
        snprintf(err->msg, sizeof err->msg, "test: out of memory");
        st = err->code = PC_ERR_NOMEM;
    }
    if (!st) st = pc_predictor_score(p, g, s, err);
    free(s);
    pc_graph_free(g);
    pc_predictor_free(p);
    return st;
}

static pc_status sc_train(pc_error *err, char *out, size_t cap) {
    snprintf(out, cap, "%s/trained.safetensors", g_dir);
    pc_train_opts o = pc_train_opts_default();
    o.data_dir = g_dir;
    o.collection = "tile:xla";
    o.out_path = out;
    o.epochs = 1;
    o.patience = 1;
    o.hidden = 4;
    o.layers = 1;
    o.emb_dim = 2;
    o.threads = 1;
    return pc_train_run(&o, NULL, NULL, NULL, NULL, err);
}

static pc_status sc_eval(pc_error *err, char *out, size_t cap) {
    (void)out, (void)cap;
    pc_eval_result r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    return pc_eval_run(g_model, g_dir, "valid", 1, &r, err);
}

static pc_status sc_rank_hlo(pc_error *err, char *out, size_t cap) {
    (void)out, (void)cap;
    pc_rank_opts o = pc_rank_opts_default();
    o.candidates = 8;
    pc_rank_set **sets = NULL;
    int n = 0;
    pc_status st = pc_rank_sets_from_hlo(g_hlo, &o, &sets, &n, NULL, err);
    pc_predictor *p = NULL;
    if (!st) st = pc_predictor_load(g_model, 1, &p, err);
    for (int i = 0; i < n && !st; i++) {
        pc_graph *g = pc_rank_set_graph(sets[i]);
        double *sc = calloc((size_t)pc_rank_set_count(sets[i]) + 1, sizeof *sc);
        if (!sc) {
            snprintf(err->msg, sizeof err->msg, "test: out of memory");
            st = err->code = PC_ERR_NOMEM;
            break;
        }
        if (pc_graph_kind(g) == PC_KIND_TILE) st = pc_predictor_score(p, g, sc, err);
        char *d = st ? NULL : pc_rank_set_describe(sets[i], 0, 1);
        free(d);
        free(sc);
    }
    pc_predictor_free(p);
    pc_rank_sets_free(sets, n);
    return st;
}

static pc_status sc_cache(pc_error *err, char *out, size_t cap) {
    snprintf(out, cap, "%s/cache_entry.pcc", g_dir);
    return pc_cache_build(g_tile, out, err);
}

static pc_status sc_synth(pc_error *err, char *out, size_t cap) {
    (void)out, (void)cap;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/synth_again", g_dir);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return err->code = PC_ERR_IO;
    pc_synth_opts so = pc_synth_opts_default();
    so.scale = PC_SYNTH_TINY;
    so.threads = 1;
    so.graphs_per_split = 1;
    so.collections = 1u << pc_collection_find("tile:xla");
    return pc_synth_write(dir, &so, NULL, err);
}

static const scenario k_scenarios[] = {
    {"load", sc_load},   {"checkpoint", sc_checkpoint}, {"import", sc_import},
    {"cost", sc_cost},   {"score", sc_score},           {"train", sc_train},
    {"eval", sc_eval},   {"rank_hlo", sc_rank_hlo},     {"cache", sc_cache},
    {"synth", sc_synth},
};

/* Temporaries left beside out ('.<base>.<pid>.tmp...'): must be none. */
static int temporaries_beside(const char *out) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    if (!slash) return 0;
    *slash = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp")) n++;
    closedir(d);
    return n;
}

/*
 * An output under its final name must be whole even when the run failed later
 * (training writes its model after each epoch, then its state): it opens and
 * its checksum holds. Read with the faults off.
 */
static int complete(const char *out) {
    pc_error e;
    if (strstr(out, ".safetensors")) {
        pc_st *r = NULL;
        int ok = pc_st_open(out, &r, &e) == PC_OK;
        pc_st_close(r);
        return ok;
    }
    pc_load_opts o = pc_load_opts_default();
    pc_graph *g = NULL;
    int ok = pc_graph_load(out, &o, &g, &e) == PC_OK;
    pc_graph_free(g);
    return ok;
}

/* One run with the N-th call failing; returns the calls the scenario made. */
static long run_once(const scenario *s, long n, int io_only) {
    char out[1024] = "";
    pc_error err;
    memset(&err, 0, sizeof err);
    arm(n, io_only);
    pc_status st = s->run(&err, out, sizeof out);
    long calls = disarm();
    int failed = atomic_load(&g_failed);
    struct stat sb;
    int have_out = out[0] && stat(out, &sb) == 0;
    if (getenv("PC_FAULT_VERBOSE"))
        printf("  %s %s call %ld: %s\n", s->name, io_only ? "i/o" : "alloc", n,
               st ? err.msg : "ok");
    if (st != PC_OK && !err.msg[0])
        failf("%s: fault at %s call %ld: status %d without a message", s->name,
              io_only ? "i/o" : "alloc", n, st);
    if (st != PC_OK && have_out && !complete(out))
        failf("%s: fault at call %ld: failed (%s) and left a broken %s", s->name, n, err.msg,
              out);
    if (out[0] && temporaries_beside(out))
        failf("%s: fault at call %ld: temporaries left beside %s", s->name, n, out);
    if (!failed && st != PC_OK)
        failf("%s: no fault injected (run %ld) but it failed: %s", s->name, n, err.msg);
    if (have_out) unlink(out);
    return calls;
}

/* The calls (allocations, or i/o with io) one clean run of s makes. */
static long count_calls(const scenario *s, int io) {
    char out[1024] = "";
    pc_error err;
    memset(&err, 0, sizeof err);
    arm(LONG_MAX, io);
    pc_status st = s->run(&err, out, sizeof out);
    long calls = disarm();
    if (st != PC_OK) failf("%s: a clean run failed: %s", s->name, err.msg);
    if (out[0]) unlink(out);
    return calls;
}

static void run_scenario(const scenario *s, int full) {
    for (int io = 0; io < 2; io++) {
        int before = g_fails;
        long calls = count_calls(s, io);
        long stride = full || calls <= 3000 ? 1 : calls / 3000, tried = 0;
        for (long n = 1; n <= calls; n += stride, tried++) run_once(s, n, io);
        printf("%-10s %s: %ld calls, %ld faults injected, %d failure(s)\n", s->name,
               io ? "i/o  " : "alloc", calls, tried, g_fails - before);
        fflush(stdout);
    }
}

static int setup(void) {
    const char *tmp = getenv("PC_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/fault_inject", tmp ? tmp : "/tmp");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) return -1;
    pc_error err;
    pc_synth_opts so = pc_synth_opts_default();
    so.scale = PC_SYNTH_TINY;
    so.threads = 1;
    so.collections = 0;
    if (pc_synth_write(g_dir, &so, NULL, &err) != PC_OK) {
        fprintf(stderr, "synth: %s\n", err.msg);
        return -1;
    }
    snprintf(g_tile, sizeof g_tile, "%s/npz/tile/xla/train", g_dir);
    snprintf(g_layout, sizeof g_layout, "%s/npz/layout/xla/random/train", g_dir);
    char *dirs[2] = {g_tile, g_layout};
    for (int i = 0; i < 2; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *e;
        char first[256] = "";
        while (d && (e = readdir(d)))
            if (strstr(e->d_name, ".npz") && (!first[0] || strcmp(e->d_name, first) < 0))
                snprintf(first, sizeof first, "%s", e->d_name);
        if (d) closedir(d);
        if (!first[0]) return -1;
        size_t l = strlen(dirs[i]);
        snprintf(dirs[i] + l, 1024 - l, "/%s", first);
    }
    pc_error e2;
    char m[1024];
    if (sc_train(&e2, m, sizeof m) != PC_OK) {
        fprintf(stderr, "train: %s\n", e2.msg);
        return -1;
    }
    snprintf(g_model, sizeof g_model, "%s/model.safetensors", g_dir);
    if (rename(m, g_model) != 0) return -1;
    snprintf(g_hlo, sizeof g_hlo, "%s/m.hlo", g_dir);
    FILE *f = fopen(g_hlo, "w");
    if (!f) return -1;
    fputs("HloModule m\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
          "  ROOT s = f32[] add(x, y)\n}\n\nENTRY e {\n  a = f32[64,128]{1,0} parameter(0)\n"
          "  b = f32[128,32]{1,0} parameter(1)\n"
          "  d = f32[64,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
          "  c = f32[] constant(0)\n"
          "  r = f32[64]{0} reduce(d, c), dimensions={1}, to_apply=add\n"
          "  ROOT t = f32[32,64]{1,0} transpose(d), dimensions={1,0}\n}\n",
          f);
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    int full = getenv("PC_FAULT_FULL") && atoi(getenv("PC_FAULT_FULL")) > 0;
    if (setup() != 0) {
        fprintf(stderr, "fault_inject: setup failed\n");
        return 1;
    }
    int ran = 0;
    for (size_t i = 0; i < sizeof k_scenarios / sizeof k_scenarios[0]; i++) {
        if (only && strcmp(only, k_scenarios[i].name)) continue;
        run_scenario(&k_scenarios[i], full);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "fault_inject: unknown scenario '%s'\n", only);
        return 2;
    }
    printf("%d failure(s)%s\n", g_fails, full ? " (every call)" : "");
    return g_fails ? 1 : 0;
}
