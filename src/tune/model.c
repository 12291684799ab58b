/*
 * A trained model as the search's scorer (pc_tune_model): each call makes a
 * graph of the borrowed graph's arrays and the candidates
 * (pc_graph_from_arrays) and scores it with pc_predictor_score, the code
 * path of `rank` and `eval`.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tune/tune_internal.h"

enum { A_FEAT, A_OPCODE, A_EDGES, A_RUNTIME, A_CONFIGS, A_IDS_OR_NORM, A_SPLITS, A_COUNT };

struct pc_tune_model {
    pc_predictor *p;
    pc_graph *g;
    pc_kind kind;
    int64_t *zeros; /* runtimes (and tile normalizers) of a call */
    size_t zcap;
};

static pc_array view(pc_dtype t, int ndim, int64_t d0, int64_t d1, int64_t d2, const void *data) {
    pc_array a = PC_ARRAY_INIT;
    a.dtype = t;
    a.ndim = ndim;
    a.shape[0] = d0, a.shape[1] = d1, a.shape[2] = d2;
    a.data = (void *)data;
    return a;
}

pc_status pc_tune_model_new(pc_predictor *p, pc_graph *g, pc_tune_model **out, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!p || !g || !out) return pc_fail(err, PC_ERR_ARG, "tune: NULL argument");
    *out = NULL;
    int coll = pc_predictor_collection(p);
    if (pc_collection_kind(coll) != pc_graph_kind(g))
        return pc_fail(err, PC_ERR_ARG,
                       "%s: a %s graph, but the model is for %s (%s configs): "
                       "tune it with a %s model",
                       pc_graph_path(g), pc_kind_name(pc_graph_kind(g)), pc_collection_name(coll),
                       pc_kind_name(pc_collection_kind(coll)), pc_kind_name(pc_graph_kind(g)));
    pc_tune_model *m = calloc(1, sizeof *m);
    if (!m) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    m->p = p, m->g = g, m->kind = pc_graph_kind(g);
    *out = m;
    return PC_OK;
}

void pc_tune_model_free(pc_tune_model *m) {
    if (!m) return;
    free(m->zeros);
    free(m);
}

pc_status pc_tune_model_score(void *ctx, const float *configs, int64_t n, double *scores,
                              pc_error *err) {
    pc_tune_model *m = ctx;
    const pc_graph *g = m->g;
    if (n < 1) return PC_OK;
    if ((size_t)n > m->zcap) {
        int64_t *z = calloc((size_t)n, sizeof *z);
        if (!z) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        free(m->zeros);
        m->zeros = z, m->zcap = (size_t)n;
    }
    int64_t nn = pc_graph_num_nodes(g), nsplits = 0;
    const int64_t *splits = pc_graph_node_splits(g, &nsplits);
    pc_array a[A_COUNT];
    const char *keys[A_COUNT];
    int count = A_IDS_OR_NORM + 1;
    keys[A_FEAT] = "node_feat";
    a[A_FEAT] = view(PC_DTYPE_F32, 2, nn, pc_graph_node_feat_dim(g), 0, pc_graph_node_feat(g));
    keys[A_OPCODE] = "node_opcode";
    a[A_OPCODE] = view(PC_DTYPE_I32, 1, nn, 0, 0, pc_graph_node_opcode(g));
    keys[A_EDGES] = "edge_index";
    a[A_EDGES] = view(PC_DTYPE_I32, 2, pc_graph_num_edges(g), 2, 0, pc_graph_edge_index(g));
    keys[A_RUNTIME] = "config_runtime";
    a[A_RUNTIME] = view(PC_DTYPE_I64, 1, n, 0, 0, m->zeros);
    if (m->kind == PC_KIND_TILE) {
        keys[A_CONFIGS] = "config_feat";
        a[A_CONFIGS] = view(PC_DTYPE_F32, 2, n, PC_TILE_CONFIG_DIM, 0, configs);
        keys[A_IDS_OR_NORM] = "config_runtime_normalizers";
        a[A_IDS_OR_NORM] = view(PC_DTYPE_I64, 1, n, 0, 0, m->zeros);
    } else {
        int64_t nc = pc_graph_num_config_nodes(g);
        keys[A_CONFIGS] = "node_config_feat";
        a[A_CONFIGS] = view(PC_DTYPE_F32, 3, n, nc, PC_LAYOUT_CONFIG_DIM, configs);
        keys[A_IDS_OR_NORM] = "node_config_ids";
        a[A_IDS_OR_NORM] = view(PC_DTYPE_I32, 1, nc, 0, 0, pc_graph_node_config_ids(g));
        if (splits && nsplits) {
            keys[A_SPLITS] = "node_splits";
            a[A_SPLITS] = view(PC_DTYPE_I64, 2, 1, nsplits, 0, splits);
            count++;
        }
    }
    pc_graph *cand = NULL;
    pc_status st = pc_graph_from_arrays(pc_graph_path(g), m->kind, keys, a, count, &cand, err);
    if (!st) st = pc_predictor_score(m->p, cand, scores, err);
    pc_graph_free(cand);
    return st;
}
