/* The names of the GNN architecture choices (perfcast/gnn.h), as flags and checkpoints spell them.
 */
#include <string.h>

#include "perfcast/gnn.h"

static const char *const pool_names[PC_POOL_COUNT] = {"mean", "max", "sum", "meanmax"};
static const char *const join_names[PC_JOIN_COUNT] = {"early", "late"};
static const char *const act_names[PC_ACT_COUNT] = {"leaky_relu", "relu", "gelu"};
static const char *const segments_names[PC_SEGMENTS_COUNT] = {"contiguous", "splits", "metis"};
static const char *const encode_names[PC_ENCODE_COUNT] = {"pad",      "dims",    "layout",
                                                            "roofline", "mismatch", "steps",
                                                            "rsteps"};

/* Index of name in names[0..n), or -1. */
static int find(const char *const *names, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

const char *pc_pool_name(pc_pool p) { return p >= 0 && p < PC_POOL_COUNT ? pool_names[p] : NULL; }

pc_status pc_pool_parse(const char *name, pc_pool *out) {
    int i = find(pool_names, PC_POOL_COUNT, name);
    if (i < 0) return PC_ERR_ARG;
    *out = (pc_pool)i;
    return PC_OK;
}

const char *pc_join_name(pc_join j) {
    if (j == PC_JOIN_AUTO) return "auto";
    return j >= 0 && j < PC_JOIN_COUNT ? join_names[j] : NULL;
}

pc_status pc_join_parse(const char *name, pc_join *out) {
    if (name && !strcmp(name, "auto")) {
        *out = PC_JOIN_AUTO;
        return PC_OK;
    }
    int i = find(join_names, PC_JOIN_COUNT, name);
    if (i < 0) return PC_ERR_ARG;
    *out = (pc_join)i;
    return PC_OK;
}

const char *pc_act_name(pc_act a) { return a >= 0 && a < PC_ACT_COUNT ? act_names[a] : NULL; }

pc_status pc_act_parse(const char *name, pc_act *out) {
    int i = find(act_names, PC_ACT_COUNT, name);
    if (i < 0) return PC_ERR_ARG;
    *out = (pc_act)i;
    return PC_OK;
}

const char *pc_segments_name(pc_segments s) {
    return s >= 0 && s < PC_SEGMENTS_COUNT ? segments_names[s] : NULL;
}

pc_status pc_segments_parse(const char *name, pc_segments *out) {
    int i = find(segments_names, PC_SEGMENTS_COUNT, name);
    if (i < 0) return PC_ERR_ARG;
    *out = (pc_segments)i;
    return PC_OK;
}

const char *pc_encode_name(unsigned bit) {
    for (int i = 0; i < PC_ENCODE_COUNT; i++)
        if (bit == 1u << i) return encode_names[i];
    return NULL;
}

pc_status pc_encode_parse(const char *list, unsigned *bits) {
    if (!list) return PC_ERR_ARG;
    unsigned b = PC_ENCODE_NONE;
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        int i = -1;
        for (int k = 0; k < PC_ENCODE_COUNT && i < 0; k++)
            if (strlen(encode_names[k]) == n && !strncmp(p, encode_names[k], n)) i = k;
        if (i >= 0)
            b |= 1u << i;
        else if (n == 3 && !strncmp(p, "all", 3))
            b |= PC_ENCODE_ALL;
        else if (n == 4 && !strncmp(p, "none", 4))
            b = PC_ENCODE_NONE;
        else if (n > 0)
            return PC_ERR_ARG;
        if (!p[n]) break;
        p += n + 1;
    }
    *bits = b;
    return PC_OK;
}
