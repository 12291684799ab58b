/*
 * The tables the HLO text parser and printer share (text_internal.h): the
 * element type names of xla.PrimitiveType, and the two open-addressing hash
 * tables (name -> index, id -> index) that keep parsing and printing linear
 * in the input.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/text_internal.h"

/* ---- element types (xla.PrimitiveType) ------------------------------------ */

static const struct {
    const char *name;
    int32_t type;
} elem_types[] = {
    {"pred", 1},        {"s8", 2},          {"s16", 3},         {"s32", 4},
    {"s64", 5},         {"u8", 6},          {"u16", 7},         {"u32", 8},
    {"u64", 9},         {"f16", 10},        {"f32", 11},        {"f64", 12},
    {"opaque", 14},     {"c64", 15},        {"bf16", 16},       {"token", 17},
    {"c128", 18},       {"f8e5m2", 19},     {"f8e4m3fn", 20},   {"s4", 21},
    {"u4", 22},         {"f8e4m3b11fnuz", 23}, {"f8e5m2fnuz", 24}, {"f8e4m3fnuz", 25},
    {"s2", 26},         {"u2", 27},         {"f8e4m3", 28},     {"f8e3m4", 29},
    {"s1", 30},         {"u1", 31},         {"f4e2m1fn", 32},   {"f8e8m0fnu", 33},
};
#define N_ELEM_TYPES (sizeof elem_types / sizeof elem_types[0])

int32_t tx_elem_type_find(const char *s, size_t n) {
    for (size_t i = 0; i < N_ELEM_TYPES; i++)
        if (strlen(elem_types[i].name) == n && memcmp(elem_types[i].name, s, n) == 0)
            return elem_types[i].type;
    return 0;
}

const char *tx_elem_type_name(int32_t t) {
    for (size_t i = 0; i < N_ELEM_TYPES; i++)
        if (elem_types[i].type == t) return elem_types[i].name;
    return NULL;
}

/* ---- small helpers ---------------------------------------------------------- */

char *tx_dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

uint64_t tx_hash_bytes(const char *s, size_t n) {
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static uint64_t hash_i64(int64_t v) {
    uint64_t s = (uint64_t)v;
    return pc_splitmix64(&s);
}

/* ---- name -> index ----------------------------------------------------------- */

int tx_name_map_init(name_map *m, size_t n, key_fn key_of, const void *ctx) {
    size_t cap = 16;
    while (cap < 2 * n + 2) {
        if (cap > SIZE_MAX / 8) return -1;
        cap *= 2;
    }
    m->slot = calloc(cap, sizeof *m->slot);
    m->hash = malloc(cap * sizeof *m->hash);
    m->mask = cap - 1;
    m->key_of = key_of;
    m->ctx = ctx;
    if (m->slot && m->hash) return 0;
    tx_name_map_free(m); /* callers do not free a map whose init failed */
    return -1;
}

void tx_name_map_free(name_map *m) {
    free(m->slot);
    free(m->hash);
    m->slot = NULL;
    m->hash = NULL;
}

static int key_eq(const name_map *m, int32_t i, const char *s, size_t n) {
    size_t kn;
    const char *k = m->key_of(m->ctx, i, &kn);
    return kn == n && memcmp(k, s, n) == 0;
}

/* Index of the name, or -1. */
int32_t tx_name_map_find(const name_map *m, const char *s, size_t n) {
    uint64_t hv = tx_hash_bytes(s, n);
    for (size_t h = hv & m->mask;; h = (h + 1) & m->mask) {
        int32_t v = m->slot[h];
        if (!v) return -1;
        if (m->hash[h] == (uint32_t)(hv >> 32) && key_eq(m, v - 1, s, n)) return v - 1;
    }
}

/* Inserts entry i; returns the index already holding its key, or -1 if new. */
int32_t tx_name_map_add(name_map *m, int32_t i) {
    size_t n;
    const char *k = m->key_of(m->ctx, i, &n);
    uint64_t hv = tx_hash_bytes(k, n);
    for (size_t h = hv & m->mask;; h = (h + 1) & m->mask) {
        int32_t v = m->slot[h];
        if (!v) {
            m->slot[h] = i + 1;
            m->hash[h] = (uint32_t)(hv >> 32);
            return -1;
        }
        if (m->hash[h] == (uint32_t)(hv >> 32) && key_eq(m, v - 1, k, n)) return v - 1;
    }
}

/* ---- id -> index --------------------------------------------------------------- */

int tx_id_map_init(id_map *m, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 2) {
        if (cap > SIZE_MAX / 4) return -1;
        cap *= 2;
    }
    m->key = calloc(cap, sizeof *m->key);
    m->val = calloc(cap, sizeof *m->val);
    m->mask = cap - 1;
    return m->key && m->val ? 0 : -1;
}

void tx_id_map_free(id_map *m) {
    free(m->key);
    free(m->val);
    m->key = NULL;
    m->val = NULL;
}

/* 0 if added, 1 if the key was already there. */
int tx_id_map_add(id_map *m, int64_t k, int32_t i) {
    for (size_t h = hash_i64(k) & m->mask;; h = (h + 1) & m->mask) {
        if (!m->val[h]) {
            m->key[h] = k;
            m->val[h] = i + 1;
            return 0;
        }
        if (m->key[h] == k) return 1;
    }
}

int32_t tx_id_map_find(const id_map *m, int64_t k) {
    for (size_t h = hash_i64(k) & m->mask;; h = (h + 1) & m->mask) {
        if (!m->val[h]) return -1;
        if (m->key[h] == k) return m->val[h] - 1;
    }
}
