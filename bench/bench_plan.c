/*
 * Planner speed (issue #6): candidate training plans evaluated per second by
 * pc_plan_train (each candidate: memory per chip and roofline step time with
 * its collectives), for big searches on the public API, one thread.
 *
 *   build/bench/bench_plan [SECONDS_PER_CASE]
 *
 * Target: at least 100,000 plans/s. The binary is linked with
 * -Wl,--wrap=malloc,calloc,realloc so it also counts the allocations made
 * during the timed searches (the inner evaluation must make none).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perfcast/analytic.h"

/* ---- allocation counter (ld --wrap) ---- */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t s);
void *__wrap_realloc(void *p, size_t n);
static uint64_t g_allocs;
void *__wrap_malloc(size_t n) {
    g_allocs++;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t s) {
    g_allocs++;
    return __real_calloc(n, s);
}
void *__wrap_realloc(void *p, size_t n) {
    g_allocs++;
    return __real_realloc(p, n);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct bcase {
    const char *label, *model, *chip;
    int64_t chips;
    double batch, seq;
    unsigned remat_mask; /* 0: default (none, big_matmuls, full) */
} bcase;

static int run_case(pc_chipdb *db, const bcase *c, double seconds) {
    pc_error e;
    pc_tfm_cfg m;
    if (pc_tfm_preset(c->model, &m, &e) != PC_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    const pc_chip *chip = pc_chipdb_find(db, c->chip);
    pc_mesh slice;
    if (!chip || pc_plan_slice_for_chips(chip, c->chips, &slice, &e) != PC_OK) {
        fprintf(stderr, "%s: %s\n", c->label, chip ? e.msg : "unknown chip");
        return 1;
    }
    pc_plan_train_opts o = pc_plan_train_opts_default();
    o.batch_tokens = c->batch;
    o.seq = c->seq;
    o.total_tokens = 15e12;
    o.remat_mask = c->remat_mask;
    o.remat_tensors = 4;
    pc_train_plan best[10];
    pc_train_search r;
    /* warm up once */
    if (pc_plan_train(chip, &m, &slice, &o, best, 10, &r, &e) != PC_OK) {
        fprintf(stderr, "%s: %s\n", c->label, e.msg);
        return 1;
    }
    uint64_t plans = 0, layouts = 0, searches = 0, allocs0 = g_allocs;
    double t0 = now(), t = t0;
    do {
        pc_plan_train(chip, &m, &slice, &o, best, 10, &r, &e);
        plans += r.evaluated;
        layouts += r.layouts;
        searches++;
        t = now();
    } while (t - t0 < seconds);
    uint64_t allocs = g_allocs - allocs0;
    double el = t - t0;
    printf("%-44s chips %6lld  layouts %6llu  plans/search %8llu  fit %8llu  search %8.3f ms  "
           "plans/s %10.0f  allocs %llu  best step %.4g s\n",
           c->label, (long long)c->chips, (unsigned long long)(layouts / searches),
           (unsigned long long)(plans / searches), (unsigned long long)r.fitting,
           1e3 * el / (double)searches, (double)plans / el, (unsigned long long)allocs,
           r.nbest ? best[0].step_time : 0.0);
    return 0;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    if (!(seconds > 0)) seconds = 2.0;
    pc_chipdb *db;
    pc_error e;
    if (pc_chipdb_new(&db, &e) != PC_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    const unsigned all4 = 0xFu; /* none, big_matmuls, full, tensors:4 */
    const bcase cases[] = {
        {"llama3-70b v5p pod, 4M batch (default)", "llama3-70b", "v5p", 8960, 4194304, 4096, 0},
        {"llama3-70b v5p pod, 16M batch, 4 remat", "llama3-70b", "v5p", 8960, 16777216, 4096, all4},
        {"llama3-405b v5p 2 pods (DCN), 16M, 4 remat", "llama3-405b", "v5p", 17920, 16777216, 4096,
         all4},
        {"mixtral-8x7b v5p pod (EP), 16M, 4 remat", "mixtral-8x7b", "v5p", 8960, 16777216, 4096,
         all4},
        {"llama3-70b 4096 H100, 16M, 4 remat", "llama3-70b", "h100", 4096, 16777216, 4096, all4},
    };
    printf("# bench_plan: pc_plan_train, one thread, %.1f s per case\n", seconds);
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        rc |= run_case(db, &cases[i], seconds);
    pc_chipdb_free(db);
    return rc;
}
