/*
 * The arrays of one imported module (hlo/import.h): freeing them, writing them
 * as a dataset .npz, and the module's name made safe for a file name. Shared
 * by the protobuf import (import.c) and the HLO text import (import_text.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/import.h"
#include "tpugraphs/features.h"

void pc_hlo_sample_free(pc_hlo_sample *s) {
    if (!s) return;
    pc_hlo_graph_free(&s->g);
    free(s->config_feat);
    free(s->runtime);
    free(s->normalizers);
    free(s->config_ids);
    memset(s, 0, sizeof *s);
}

pc_status pc_hlo_sample_write(const pc_hlo_sample *s, const char *path, pc_npz_compress mode,
                              pc_error *err) {
    pc_npz_writer *w;
    pc_status st = pc_npz_writer_open(path, mode, &w, err);
    if (st) return st;
    const pc_hlo_graph *g = &s->g;
    int64_t se[2] = {g->m, 2}, sf[2] = {g->n, PC_TPUG_NODE_FEATS}, so[1] = {g->n};
    int64_t sc1[1] = {s->c};
    st = pc_npz_writer_add(w, "edge_index", PC_DTYPE_I64, 2, se, g->edges, err);
    if (!st) st = pc_npz_writer_add(w, "node_feat", PC_DTYPE_F32, 2, sf, g->node_feat, err);
    if (!st) st = pc_npz_writer_add(w, "node_opcode", PC_DTYPE_U8, 1, so, g->node_opcode, err);
    if (s->kind == PC_KIND_TILE) {
        int64_t sc[2] = {s->c, PC_TILE_CONFIG_DIM};
        if (!st) st = pc_npz_writer_add(w, "config_feat", PC_DTYPE_F32, 2, sc, s->config_feat, err);
        if (!st) st = pc_npz_writer_add(w, "config_runtime", PC_DTYPE_I64, 1, sc1, s->runtime, err);
        if (!st)
            st = pc_npz_writer_add(w, "config_runtime_normalizers", PC_DTYPE_I64, 1, sc1,
                                   s->normalizers, err);
    } else {
        int64_t sn[3] = {s->c, s->nc, PC_LAYOUT_CONFIG_DIM}, si[1] = {s->nc};
        int64_t ss[2] = {1, g->k};
        if (!st)
            st = pc_npz_writer_add(w, "node_config_feat", PC_DTYPE_F32, 3, sn, s->config_feat, err);
        if (!st)
            st = pc_npz_writer_add(w, "node_config_ids", PC_DTYPE_I64, 1, si, s->config_ids, err);
        if (!st) st = pc_npz_writer_add(w, "node_splits", PC_DTYPE_I64, 2, ss, g->node_splits, err);
        if (!st) st = pc_npz_writer_add(w, "config_runtime", PC_DTYPE_I64, 1, sc1, s->runtime, err);
    }
    if (st) {
        pc_npz_writer_abort(w);
        return st;
    }
    return pc_npz_writer_commit(w, err);
}

/* Module names become part of file names: keep [A-Za-z0-9._-], replace the rest. */
void pc_hlo_safe_name(const char *in, char *out, size_t cap) {
    size_t j = 0;
    for (const char *p = in; *p && j + 1 < cap && j < 80; p++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '_' || ch == '-';
        out[j++] = ok ? ch : '_';
    }
    if (j == 0 && cap > 1) out[j++] = 'm';
    out[j] = '\0';
}
