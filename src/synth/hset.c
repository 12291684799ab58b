/*
 * A tiny open-addressing set of nonzero 64-bit hashes (synth_internal.h): the
 * layout search and the tile kernels keep their configs distinct with it.
 */
#include <stdlib.h>

#include "synth/synth_internal.h"

int sy_hset_init(sy_hset *s, size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2 + 2) cap *= 2;
    s->slot = calloc(cap, sizeof *s->slot);
    s->cap = s->slot ? cap : 0;
    return s->slot ? 0 : -1;
}

void sy_hset_free(sy_hset *s) {
    free(s->slot);
    s->slot = NULL;
    s->cap = 0;
}

int sy_hset_add(sy_hset *s, uint64_t h) {
    if (h == 0) h = 1;
    size_t i = (size_t)h & (s->cap - 1);
    while (s->slot[i]) {
        if (s->slot[i] == h) return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->slot[i] = h;
    return 1;
}
