/*
 * Ranking-speed benchmark (the in-process side of run_rank.sh), on the
 * public API only (perfcast/train.h, perfcast/dataset.h):
 *
 *   bench_rank MODEL.st FILE.npz THREADS REPEATS
 *
 * Opens the predictor once (pc_predictor_load, timed once), then REPEATS
 * times: pc_graph_load of FILE.npz (timed: "load") and pc_predictor_score of
 * all its configs (timed: "score": node preprocessing + CSR build, the
 * config-independent prefix, then every config in chunks: config gather and
 * preprocessing, GNN layers, readout, head). Prints one line per repeat and
 * a summary line with best and median of each phase and of load + score.
 * The checksum (sum of scores) shows every repeat scored the same.
 * "score_cpu_s" is the process CPU time (all threads) of the score phase:
 * at 1 thread it is what the wall clock would read on an idle machine (it
 * does not count time the thread waited for a core); at 2 threads it also
 * counts OpenMP spin-waiting.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perfcast/dataset.h"
#include "perfcast/train.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double best(const double *v, int n) {
    double b = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < b) b = v[i];
    return b;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: bench_rank MODEL FILE.npz THREADS REPEATS\n");
        return 2;
    }
    const char *model = argv[1], *path = argv[2];
    int threads = atoi(argv[3]), reps = atoi(argv[4]);
    if (threads < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "bench_rank: THREADS and REPEATS must be positive (REPEATS <= 1000)\n");
        return 2;
    }
    pc_error e;
    pc_error_clear(&e);
    pc_predictor *p = NULL;
    double t0 = now_s();
    if (pc_predictor_load(model, threads, &p, &e) != PC_OK) {
        fprintf(stderr, "bench_rank: %s\n", e.msg);
        return 1;
    }
    double t_open = now_s() - t0;
    double *tl = calloc((size_t)reps, sizeof *tl), *ts = calloc((size_t)reps, sizeof *ts);
    double *tt = calloc((size_t)reps, sizeof *tt);
    if (!tl || !ts || !tt) {
        fprintf(stderr, "bench_rank: out of memory\n");
        return 1;
    }
    int64_t nodes = 0, configs = 0, cnodes = 0;
    int rc = 0;
    for (int r = 0; r < reps && !rc; r++) {
        pc_load_opts lo = pc_load_opts_default();
        lo.threads = threads;
        pc_graph *g = NULL;
        double *scores = NULL;
        t0 = now_s();
        if (pc_graph_load(path, &lo, &g, &e) != PC_OK) {
            fprintf(stderr, "bench_rank: %s\n", e.msg);
            rc = 1;
            break;
        }
        double t1 = now_s(), c1 = cpu_s();
        nodes = pc_graph_num_nodes(g);
        configs = pc_graph_num_configs(g);
        cnodes = pc_graph_num_config_nodes(g);
        scores = malloc((size_t)(configs > 0 ? configs : 1) * sizeof *scores);
        if (!scores) {
            fprintf(stderr, "bench_rank: out of memory\n");
            rc = 1;
        } else if (pc_predictor_score(p, g, scores, &e) != PC_OK) {
            fprintf(stderr, "bench_rank: %s\n", e.msg);
            rc = 1;
        }
        double t2 = now_s(), c2 = cpu_s();
        if (!rc) {
            double sum = 0;
            for (int64_t i = 0; i < configs; i++) sum += scores[i];
            tl[r] = t1 - t0;
            ts[r] = t2 - t1;
            tt[r] = t2 - t0;
            printf("bench_rank threads %d rep %d load_s %.4f score_s %.4f total_s %.4f "
                   "score_cpu_s %.4f checksum %.6f\n",
                   threads, r + 1, tl[r], ts[r], tt[r], c2 - c1, sum);
        }
        free(scores);
        pc_graph_free(g);
    }
    if (!rc) {
        double bl = best(tl, reps), bs = best(ts, reps), bt = best(tt, reps);
        double ml = median(tl, reps), ms = median(ts, reps), mt = median(tt, reps);
        printf("bench_rank threads %d nodes %lld config_nodes %lld configs %lld reps %d "
               "open_s %.4f load_s best %.4f med %.4f score_s best %.4f med %.4f "
               "load+score_s best %.4f med %.4f score_ms_per_config %.3f\n",
               threads, (long long)nodes, (long long)cnodes, (long long)configs, reps, t_open,
               bl, ml, bs, ms, bt, mt, configs > 0 ? 1e3 * bs / (double)configs : 0.0);
    }
    free(tl);
    free(ts);
    free(tt);
    pc_predictor_free(p);
    return rc;
}
