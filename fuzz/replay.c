/*
 * fuzz_replay: runs fuzz targets over files without libFuzzer, so normal CI
 * (gcc, optionally with sanitizers) replays the committed corpus and the
 * must-fail files in bounded time.
 *
 *   fuzz_replay TARGET FILE_OR_DIR...   directories are walked recursively
 *   fuzz_replay --list                  prints the target names
 *
 * Prints "replayed N inputs for TARGET" (and the slowest input) on success.
 * A crashing input crashes the replayer (the last "running" line printed with
 * -v, or the sanitizer report, names it). Exit 2 on usage errors or when a
 * path cannot be read; exit 1 if no input was found.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* One line per fuzz/fuzz_<name>.c (PC_FUZZ_TARGET(name)). */
int pc_fuzz_analytic(const uint8_t *data, size_t size);
int pc_fuzz_cache(const uint8_t *data, size_t size);
int pc_fuzz_calib(const uint8_t *data, size_t size);
int pc_fuzz_checkpoint(const uint8_t *data, size_t size);
int pc_fuzz_graph(const uint8_t *data, size_t size);
int pc_fuzz_hlo_cost(const uint8_t *data, size_t size);
int pc_fuzz_hlo_proto(const uint8_t *data, size_t size);
int pc_fuzz_hlo_text(const uint8_t *data, size_t size);
int pc_fuzz_npy_header(const uint8_t *data, size_t size);
int pc_fuzz_npz(const uint8_t *data, size_t size);
int pc_fuzz_query(const uint8_t *data, size_t size);
int pc_fuzz_rank_candidates(const uint8_t *data, size_t size);
int pc_fuzz_runs(const uint8_t *data, size_t size);
int pc_fuzz_safetensors(const uint8_t *data, size_t size);

typedef int (*fuzz_fn)(const uint8_t *, size_t);

static const struct {
    const char *name;
    fuzz_fn fn;
} targets[] = {
    {"analytic", pc_fuzz_analytic},
    {"cache", pc_fuzz_cache},
    {"calib", pc_fuzz_calib},
    {"checkpoint", pc_fuzz_checkpoint},
    {"graph", pc_fuzz_graph},
    {"hlo_cost", pc_fuzz_hlo_cost},
    {"hlo_proto", pc_fuzz_hlo_proto},
    {"hlo_text", pc_fuzz_hlo_text},
    {"npy_header", pc_fuzz_npy_header},
    {"npz", pc_fuzz_npz},
    {"query", pc_fuzz_query},
    {"rank_candidates", pc_fuzz_rank_candidates},
    {"runs", pc_fuzz_runs},
    {"safetensors", pc_fuzz_safetensors},
};

typedef struct replay {
    fuzz_fn fn;
    int verbose;
    long count;
    double slowest_s;
    char slowest[1024];
    int errors;
} replay;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run_file(replay *r, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 0;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            fprintf(stderr, "%s: out of memory\n", path);
            return 0;
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        cap *= 2;
        uint8_t *nb = realloc(buf, cap);
        if (!nb) free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        fprintf(stderr, "%s: read error\n", path);
        return 0;
    }
    if (r->verbose) {
        fprintf(stderr, "running %s (%zu bytes)\n", path, len);
        fflush(stderr);
    }
    /* libFuzzer passes a heap copy of exactly `len` bytes; so do we. */
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) {
        free(buf);
        return 0;
    }
    memcpy(copy, buf, len);
    free(buf);
    double t0 = now_s();
    r->fn(copy, len);
    double dt = now_s() - t0;
    free(copy);
    r->count++;
    if (dt > r->slowest_s) {
        r->slowest_s = dt;
        snprintf(r->slowest, sizeof r->slowest, "%s", path);
    }
    return 1;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_path(replay *r, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        r->errors++;
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (!run_file(r, path)) r->errors++;
        return;
    }
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        r->errors++;
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue; /* ., .., hidden files */
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
        if (!names[n]) break;
        sprintf(names[n], "%s/%s", path, e->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str); /* deterministic order */
    for (size_t i = 0; i < n; i++) {
        run_path(r, names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    const size_t ntargets = sizeof targets / sizeof targets[0];
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < ntargets; i++) puts(targets[i].name);
        return 0;
    }
    replay r;
    memset(&r, 0, sizeof r);
    int a = 1;
    if (a < argc && strcmp(argv[a], "-v") == 0) {
        r.verbose = 1;
        a++;
    }
    if (argc - a < 2) {
        fprintf(stderr, "usage: fuzz_replay [-v] TARGET FILE_OR_DIR...\n       fuzz_replay --list\n");
        return 2;
    }
    const char *name = argv[a++];
    for (size_t i = 0; i < ntargets; i++)
        if (strcmp(targets[i].name, name) == 0) r.fn = targets[i].fn;
    if (!r.fn) {
        fprintf(stderr, "fuzz_replay: unknown target '%s' (see --list)\n", name);
        return 2;
    }
    for (; a < argc; a++) run_path(&r, argv[a]);
    printf("replayed %ld inputs for %s", r.count, name);
    if (r.count) printf(" (slowest %.3f s: %s)", r.slowest_s, r.slowest);
    printf("\n");
    if (r.errors) return 2;
    return r.count ? 0 : 1;
}
