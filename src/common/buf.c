/* Growing arrays (util.h): one growth rule for the whole library. Depends on
 * nothing, so every common/ file may use it. */
#include <stdint.h>
#include <stdlib.h>

#include "common/util.h"

static void *resize(void *ptr, size_t *cap, size_t nc, size_t elem) {
    if (elem == 0 || nc > SIZE_MAX / elem) return NULL;
    void *np = realloc(ptr, nc * elem);
    if (!np) return NULL;
    *cap = nc;
    return np;
}

void *pc_grow_array(void *ptr, size_t *cap, size_t need, size_t elem) {
    if (need == 0) need = 1;
    if (ptr && need <= *cap) return ptr;
    size_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > SIZE_MAX / 2) return NULL;
        nc *= 2;
    }
    return resize(ptr, cap, nc, elem);
}

void *pc_reserve_array(void *ptr, size_t *cap, size_t need, size_t elem) {
    if (need == 0) need = 1;
    if (ptr && need <= *cap) return ptr;
    return resize(ptr, cap, need, elem);
}
