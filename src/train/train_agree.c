/*
 * perfcast train under MPI: the ranks agree before they exchange anything
 * (train_internal.h, pc_tr_agree). Ranks given other options or other data
 * would otherwise meet in collectives of different sizes (a corrupted heap)
 * or train silently on shifted partitions.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_internal.h"

/* Everything that must be equal on every rank, "key=value|...". */
static void agreement(const trainer *t, char *s, size_t cap) {
    const pc_train_opts *o = &t->o;
    char fixed[2048];
    pc_tr_fixed_string(t, fixed, sizeof fixed);
    snprintf(s, cap,
             "%s|hidden=%d|layers=%d|emb_dim=%d|pool=%d|join=%d|act=%d|layernorm=%d|"
             "dropout=%.9g|encode=%u|attn_heads=%d|prune_hops=%d|gst=%d|seg_size=%d|"
             "epochs=%d|patience=%d|time_budget=%.9g|ensemble=%d|stop_after_steps=%ld",
             fixed, o->hidden, o->layers, o->emb_dim, (int)o->pool, (int)o->join, (int)o->act,
             o->layernorm, (double)o->dropout, o->encode, o->attn_heads, o->prune_hops, o->gst,
             o->seg_size, o->epochs, o->patience, o->time_budget, o->ensemble,
             o->stop_after_steps);
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* Rank 0's message: the first rank whose text differs from its own, and the first key. */
static pc_status describe(const char *all, size_t each, int W, const char *mine, pc_error *err) {
    for (int r = 1; r < W; r++) {
        const char *other = all + (size_t)r * each;
        if (!strncmp(other, mine, each)) continue;
        const char *a = mine, *b = other;
        while (*a && *b) {
            size_t la = strcspn(a, "|"), lb = strcspn(b, "|");
            if (la != lb || memcmp(a, b, la))
                return pc_fail(err, PC_ERR_ARG, "train: the ranks disagree before training: rank "
                               "%d has %.*s, rank 0 has %.*s (every rank needs the same options "
                               "and the same data files)", r, (int)lb, b, (int)la, a);
            a += la + (a[la] == '|');
            b += lb + (b[lb] == '|');
        }
        return pc_fail(err, PC_ERR_ARG, "train: the ranks disagree before training: rank %d "
                       "differs from rank 0", r);
    }
    return pc_fail(err, PC_ERR_ARG, "train: the ranks disagree before training");
}

pc_status pc_tr_agree(const trainer *t, pc_error *err) {
    const pc_dist *d = t->topo.dist;
    int W = pc_dist_size(d);
    if (W <= 1) return PC_OK;
    enum { EACH = 4096 };
    char mine[EACH];
    memset(mine, 0, sizeof mine);
    agreement(t, mine, sizeof mine - 1);
    /* equal everywhere iff the max and the min of each 32-bit half of the hash agree */
    uint64_t h = fnv1a(mine);
    double v[4] = {(double)(h >> 32), (double)(h & 0xffffffffu), -(double)(h >> 32),
                   -(double)(h & 0xffffffffu)};
    pc_dist_max_f64(d, v, 4);
    if (v[0] == -v[2] && v[1] == -v[3]) return PC_OK;
    /* fixed-size records, so rank 0 can find each rank's text in the gather */
    char *padded = malloc(EACH + 1);
    if (!padded) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    memset(padded, '|', EACH);
    memcpy(padded, mine, strlen(mine));
    padded[EACH] = 0;
    char *all = NULL;
    pc_error gerr;
    pc_status st = pc_dist_gather_text(d, padded, &all, &gerr);
    free(padded);
    if (t->topo.R == 0 && !st && all && strlen(all) >= (size_t)W * EACH) {
        char *m = malloc(EACH + 1);
        if (m) {
            memset(m, '|', EACH);
            memcpy(m, mine, strlen(mine));
            m[EACH] = 0;
            st = describe(all, EACH, W, m, err);
            free(m);
        }
    }
    free(all);
    if (t->topo.R != 0 || err->code == PC_OK)
        return pc_fail(err, PC_ERR_ARG, "train: the ranks disagree before training on options "
                       "or data (rank 0 names the difference)");
    return err->code;
}
