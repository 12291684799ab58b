/*
 * Load-speed benchmark: one mode per process so peak RSS is per mode.
 *   bench_load npz FILE.npz THREADS REPEATS   read every array (pc_npz_read_all)
 *   bench_load cache DIR.pcc REPEATS          load a cache directory (mmap) and touch every byte
 *   bench_load graph FILE.npz REPEATS         pc_graph_load (typed, validated shapes) of the .npz
 *   bench_load build FILE.npz DIR.pcc         build the cache once
 * Prints one line: mode, best seconds, peak RSS MiB, checksum (to keep the
 * work from being optimised away and to compare with numpy's sum).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "perfcast/dataset.h"
#include "perfcast/npz.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* Reads one byte per 4 KiB page: makes a mapped array resident (faults it in)
   at the cost of the paging alone; numpy_load.py does the same. */
static uint64_t page_touch(const void *p, size_t n) {
    const volatile unsigned char *b = p;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i += 4096) s += b[i];
    return s;
}

/* Byte sum (untimed): the same checksum as the numpy side, to show both read
   the same bytes. */
static uint64_t byte_sum(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += b[i];
    return s;
}

static int die(const pc_error *e) {
    fprintf(stderr, "bench_load: %s\n", e->msg);
    return 1;
}

static int run_npz(const char *path, int threads, int reps) {
    double best = 1e30;
    uint64_t sum = 0;
    for (int r = 0; r < reps; r++) {
        pc_error e;
        double t0 = now();
        pc_npz *z;
        if (pc_npz_open(path, &z, &e)) return die(&e);
        int n = pc_npz_count(z);
        pc_array *a = calloc((size_t)n, sizeof *a);
        if (pc_npz_read_all(z, a, threads, &e)) return die(&e);
        double t1 = now();
        sum = 0;
        for (int i = 0; i < n; i++) sum += byte_sum(a[i].data, pc_array_nbytes(&a[i]));
        for (int i = 0; i < n; i++) pc_array_free(&a[i]);
        free(a);
        pc_npz_close(z);
        if (t1 - t0 < best) best = t1 - t0;
    }
    printf("npz_t%d %.4f %.1f %llu\n", threads, best, peak_rss_mib(), (unsigned long long)sum);
    return 0;
}

static uint64_t graph_sum(const pc_graph *g) {
    int64_t n = pc_graph_num_nodes(g), m = pc_graph_num_edges(g), c = pc_graph_num_configs(g);
    int64_t nc = pc_graph_num_config_nodes(g);
    uint64_t s = byte_sum(pc_graph_node_feat(g), (size_t)(n * pc_graph_node_feat_dim(g) * 4));
    s += byte_sum(pc_graph_edge_index(g), (size_t)(m * 2 * 4));
    s += byte_sum(pc_graph_config_runtime(g), (size_t)c * 8);
    if (pc_graph_node_config_feat(g))
        s += byte_sum(pc_graph_node_config_feat(g), (size_t)(c * nc * PC_LAYOUT_CONFIG_DIM * 4));
    return s;
}

static void graph_touch(const pc_graph *g) {
    int64_t n = pc_graph_num_nodes(g), m = pc_graph_num_edges(g), c = pc_graph_num_configs(g);
    int64_t nc = pc_graph_num_config_nodes(g);
    uint64_t s = page_touch(pc_graph_node_feat(g), (size_t)(n * pc_graph_node_feat_dim(g) * 4));
    s += page_touch(pc_graph_edge_index(g), (size_t)(m * 2 * 4));
    s += page_touch(pc_graph_config_runtime(g), (size_t)c * 8);
    if (pc_graph_node_config_feat(g))
        s += page_touch(pc_graph_node_config_feat(g), (size_t)(c * nc * PC_LAYOUT_CONFIG_DIM * 4));
    if (s == UINT64_MAX) puts(""); /* keep the reads */
}

static int run_graph(const char *path, int reps, const char *label, int touch) {
    double best = 1e30, best_touch = 1e30;
    uint64_t sum = 0;
    for (int r = 0; r < reps; r++) {
        pc_error e;
        pc_load_opts o = pc_load_opts_default();
        o.max_resident_config_bytes = 0; /* everything resident (or mapped) */
        double t0 = now();
        pc_graph *g;
        if (pc_graph_load(path, &o, &g, &e)) return die(&e);
        double t1 = now();
        if (touch) graph_touch(g);
        double t2 = now();
        sum = touch ? graph_sum(g) : 0;
        pc_graph_free(g);
        if (t1 - t0 < best) best = t1 - t0;
        if (t2 - t0 < best_touch) best_touch = t2 - t0;
    }
    printf("%s %.4f %.1f %llu load+touch %.4f\n", label, best, peak_rss_mib(),
           (unsigned long long)sum, best_touch);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "npz")) return run_npz(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc >= 4 && !strcmp(argv[1], "cache")) return run_graph(argv[2], atoi(argv[3]), "cache", 1);
    if (argc >= 4 && !strcmp(argv[1], "graph")) return run_graph(argv[2], atoi(argv[3]), "graph", 1);
    if (argc >= 4 && !strcmp(argv[1], "build")) {
        pc_error e;
        double t0 = now();
        if (pc_cache_build(argv[2], argv[3], &e)) return die(&e);
        printf("build %.4f %.1f\n", now() - t0, peak_rss_mib());
        return 0;
    }
    fprintf(stderr, "usage: see the comment at the top of bench/bench_load.c\n");
    return 2;
}
