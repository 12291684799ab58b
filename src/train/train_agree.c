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
#include <sys/stat.h>

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

/* Appends "|SPLIT/NAME=SIZE" for each file of the split (the dataset's sorted order). */
static int append_files(char **s, size_t *len, size_t *cap, const pc_dataset *ds, int coll,
                        int split) {
    for (size_t i = 0; i < pc_dataset_num_files(ds, coll, split); i++) {
        const char *path = pc_dataset_file(ds, coll, split, i);
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        struct stat sb;
        long long size = stat(path, &sb) ? -1 : (long long)sb.st_size;
        size_t need = strlen(base) + 64;
        if (*len + need >= *cap) {
            size_t nc = 2 * (*cap + need);
            char *ns = realloc(*s, nc);
            if (!ns) return -1;
            *s = ns, *cap = nc;
        }
        *len += (size_t)snprintf(*s + *len, *cap - *len, "%s/%s=%lld bytes|",
                                 pc_split_name(split), base, size);
    }
    return 0;
}

pc_status pc_tr_agree(const trainer *t, const pc_dataset *ds, pc_error *err) {
    const pc_dist *d = t->topo.dist;
    if (pc_dist_size(d) <= 1) return PC_OK;
    /* the files first, so that a missing or other file is named */
    size_t cap = 8192, len = 0;
    char *s = malloc(cap);
    if (!s) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    int bad = 0;
    for (int sp = 0; sp < 2 && !bad; sp++)
        bad = append_files(&s, &len, &cap, ds, t->coll, pc_split_find(sp ? "valid" : "train"));
    char mine[4096];
    agreement(t, mine, sizeof mine);
    char *all = bad ? NULL : malloc(len + strlen(mine) + 64);
    if (!all) {
        free(s);
        return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    }
    sprintf(all, "%.*strain files=%zu|valid files=%zu|%s", (int)len, s, t->ntrain, t->nvalid,
            mine);
    free(s);
    pc_status st = pc_dist_agree(d, "train", all, err);
    free(all);
    return st;
}
