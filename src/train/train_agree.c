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

pc_status pc_tr_agree(const trainer *t, pc_error *err) {
    const pc_dist *d = t->topo.dist;
    if (pc_dist_size(d) <= 1) return PC_OK;
    char mine[4096];
    agreement(t, mine, sizeof mine);
    return pc_dist_agree(d, "train", mine, err);
}
