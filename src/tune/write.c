/* pc_tune_write: a graph's arrays and the proposals as a TpuGraphs .npz. */
#include <stdlib.h>

#include "common/util.h"
#include "perfcast/npz.h"
#include "tune/tune_internal.h"

/* An int32 array widened to int64 (malloc'd). */
static int64_t *widen(const int32_t *v, int64_t n) {
    int64_t *w = pc_malloc_array((uint64_t)(n ? n : 1), sizeof *w);
    for (int64_t i = 0; w && i < n; i++) w[i] = v[i];
    return w;
}

pc_status pc_tune_write(const char *path, const pc_graph *g, const float *configs, int64_t k,
                        pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!path || !g || (k > 0 && !configs) || k < 0)
        return pc_fail(err, PC_ERR_ARG, "tune: NULL argument or negative count");
    int64_t nn = pc_graph_num_nodes(g), ne = pc_graph_num_edges(g);
    int64_t nc = pc_graph_num_config_nodes(g), nsplits = 0;
    const int64_t *splits = pc_graph_node_splits(g, &nsplits);
    uint8_t *op = pc_malloc_array((uint64_t)(nn ? nn : 1), 1);
    int64_t *edges = widen(pc_graph_edge_index(g), 2 * ne);
    int64_t *ids =
        pc_graph_kind(g) == PC_KIND_LAYOUT ? widen(pc_graph_node_config_ids(g), nc) : NULL;
    int64_t *zeros = pc_calloc_array((uint64_t)(k ? k : 1), sizeof *zeros);
    pc_status st = PC_OK;
    if (!op || !edges || !zeros || (pc_graph_kind(g) == PC_KIND_LAYOUT && !ids))
        st = pc_fail(err, PC_ERR_NOMEM, "out of memory writing %s", path);
    const int32_t *opc = pc_graph_node_opcode(g);
    for (int64_t i = 0; !st && i < nn; i++) op[i] = (uint8_t)opc[i];
    pc_npz_writer *w = NULL;
    if (!st) st = pc_npz_writer_open(path, PC_NPZ_STORED, &w, err);
    int64_t sf[2] = {nn, pc_graph_node_feat_dim(g)}, so[1] = {nn}, se[2] = {ne, 2}, sk[1] = {k};
    if (!st)
        st = pc_npz_writer_add(w, "node_feat", PC_DTYPE_F32, 2, sf, pc_graph_node_feat(g), err);
    if (!st) st = pc_npz_writer_add(w, "node_opcode", PC_DTYPE_U8, 1, so, op, err);
    if (!st) st = pc_npz_writer_add(w, "edge_index", PC_DTYPE_I64, 2, se, edges, err);
    if (pc_graph_kind(g) == PC_KIND_TILE) {
        int64_t sc[2] = {k, PC_TILE_CONFIG_DIM};
        if (!st) st = pc_npz_writer_add(w, "config_feat", PC_DTYPE_F32, 2, sc, configs, err);
        if (!st)
            st =
                pc_npz_writer_add(w, "config_runtime_normalizers", PC_DTYPE_I64, 1, sk, zeros, err);
    } else {
        int64_t sc[3] = {k, nc, PC_LAYOUT_CONFIG_DIM}, si[1] = {nc}, ss[2] = {1, nsplits};
        if (!st) st = pc_npz_writer_add(w, "node_config_feat", PC_DTYPE_F32, 3, sc, configs, err);
        if (!st) st = pc_npz_writer_add(w, "node_config_ids", PC_DTYPE_I64, 1, si, ids, err);
        if (!st && splits && nsplits)
            st = pc_npz_writer_add(w, "node_splits", PC_DTYPE_I64, 2, ss, splits, err);
    }
    if (!st) st = pc_npz_writer_add(w, "config_runtime", PC_DTYPE_I64, 1, sk, zeros, err);
    if (!st)
        st = pc_npz_writer_commit(w, err);
    else
        pc_npz_writer_abort(w);
    free(op), free(edges), free(ids), free(zeros);
    return st;
}
