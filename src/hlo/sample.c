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

/* node_feat made from the module while the archive is written: rows into a small
 * buffer, copied out by bytes. */
#define ROWS_AT_ONCE 64
typedef struct feat_stream {
    const pc_hlo_module *mod;
    pc_hlo_row_cursor cur;
    int64_t first, count; /* rows held in buf */
    int64_t mod_rows;     /* the module's nodes */
    float buf[ROWS_AT_ONCE * PC_TPUG_NODE_FEATS];
} feat_stream;

static int fill_feat(void *ctx, uint64_t offset, void *dst, size_t n) {
    feat_stream *fs = ctx;
    const uint64_t row_bytes = PC_TPUG_NODE_FEATS * sizeof(float);
    unsigned char *out = dst;
    while (n) {
        int64_t row = (int64_t)(offset / row_bytes);
        if (row < fs->first || row >= fs->first + fs->count) {
            int64_t left = fs->mod_rows - row;
            fs->count = left < ROWS_AT_ONCE ? left : ROWS_AT_ONCE;
            fs->first = row;
            pc_hlo_feat_rows(fs->mod, &fs->cur, row, fs->count, fs->buf);
        }
        uint64_t at = offset - (uint64_t)fs->first * row_bytes, have = (uint64_t)fs->count * row_bytes - at;
        size_t k = have < n ? (size_t)have : n;
        memcpy(out, (const unsigned char *)fs->buf + at, k);
        out += k;
        offset += k;
        n -= k;
    }
    return 0;
}

pc_status pc_hlo_sample_write(const pc_hlo_sample *s, const char *path, pc_npz_compress mode,
                              pc_error *err) {
    const pc_hlo_graph *g = &s->g;
    feat_stream *fs = NULL;
    if (!g->node_feat) {
        if (!s->rows_of) return pc_fail(err, PC_ERR_ARG, "%s: no node features to write", path);
        fs = calloc(1, sizeof *fs);
        if (!fs) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
        fs->mod = s->rows_of;
        fs->mod_rows = g->n;
    }
    pc_npz_writer *w;
    pc_status st = pc_npz_writer_open(path, mode, &w, err);
    if (st) {
        free(fs);
        return st;
    }
    int64_t se[2] = {g->m, 2}, sf[2] = {g->n, PC_TPUG_NODE_FEATS}, so[1] = {g->n};
    int64_t sc1[1] = {s->c};
    st = pc_npz_writer_add_borrowed(w, "edge_index", PC_DTYPE_I64, 2, se, g->edges, err);
    if (!st && fs) st = pc_npz_writer_add_stream(w, "node_feat", PC_DTYPE_F32, 2, sf, fill_feat, fs, err);
    if (!st && !fs) st = pc_npz_writer_add_borrowed(w, "node_feat", PC_DTYPE_F32, 2, sf, g->node_feat, err);
    if (!st) st = pc_npz_writer_add_borrowed(w, "node_opcode", PC_DTYPE_U8, 1, so, g->node_opcode, err);
    if (s->kind == PC_KIND_TILE) {
        int64_t sc[2] = {s->c, PC_TILE_CONFIG_DIM};
        if (!st) st = pc_npz_writer_add_borrowed(w, "config_feat", PC_DTYPE_F32, 2, sc, s->config_feat, err);
        if (!st) st = pc_npz_writer_add_borrowed(w, "config_runtime", PC_DTYPE_I64, 1, sc1, s->runtime, err);
        if (!st)
            st = pc_npz_writer_add_borrowed(w, "config_runtime_normalizers", PC_DTYPE_I64, 1, sc1,
                                   s->normalizers, err);
    } else {
        int64_t sn[3] = {s->c, s->nc, PC_LAYOUT_CONFIG_DIM}, si[1] = {s->nc};
        int64_t ss[2] = {1, g->k};
        if (!st)
            st = pc_npz_writer_add_borrowed(w, "node_config_feat", PC_DTYPE_F32, 3, sn, s->config_feat, err);
        if (!st)
            st = pc_npz_writer_add_borrowed(w, "node_config_ids", PC_DTYPE_I64, 1, si, s->config_ids, err);
        if (!st) st = pc_npz_writer_add_borrowed(w, "node_splits", PC_DTYPE_I64, 2, ss, g->node_splits, err);
        if (!st) st = pc_npz_writer_add_borrowed(w, "config_runtime", PC_DTYPE_I64, 1, sc1, s->runtime, err);
    }
    if (st) {
        pc_npz_writer_abort(w);
    } else {
        st = pc_npz_writer_commit(w, err);
    }
    free(fs);
    return st;
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
