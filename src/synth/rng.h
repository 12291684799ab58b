/*
 * A small local PRNG (xoshiro256** seeded through splitmix64). Every graph
 * gets its own generator seeded from (seed, collection, split, index), so the
 * output never depends on thread count or on the order graphs are made in.
 */
#ifndef PC_SYNTH_RNG_H
#define PC_SYNTH_RNG_H

#include <math.h>
#include <stdint.h>

#include "common/util.h"

typedef struct sy_rng {
    uint64_t s[4];
} sy_rng;

static inline uint64_t sy_splitmix(uint64_t *x) { return pc_splitmix64(x); }

/* Mixes two words into one seed; order matters. */
static inline uint64_t sy_mix(uint64_t a, uint64_t b) {
    uint64_t x = a ^ (b * UINT64_C(0x9E3779B97F4A7C15));
    return sy_splitmix(&x);
}

static inline void sy_rng_seed(sy_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = sy_splitmix(&x);
}

static inline uint64_t sy_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t sy_next(sy_rng *r) {
    uint64_t *s = r->s;
    uint64_t out = sy_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = sy_rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1). */
static inline double sy_unif(sy_rng *r) { return (double)(sy_next(r) >> 11) * 0x1.0p-53; }

/* Uniform integer in [lo, hi] (hi >= lo). */
static inline int64_t sy_range(sy_rng *r, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(span ? sy_next(r) % span : sy_next(r));
}

/* 1 with probability p. */
static inline int sy_chance(sy_rng *r, double p) { return sy_unif(r) < p; }

/* Picks one of n values. */
static inline int64_t sy_pick(sy_rng *r, const int64_t *v, int n) {
    return v[sy_range(r, 0, n - 1)];
}

/* Standard normal (Box-Muller; one value per call keeps the stream simple). */
static inline double sy_normal(sy_rng *r) {
    double u = 1.0 - sy_unif(r); /* (0, 1] so log is finite */
    double v = sy_unif(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

#endif /* PC_SYNTH_RNG_H */
