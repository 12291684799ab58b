/* Scoring graphs with a trained checkpoint (perfcast predict / rank). */
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "gnn/checkpoint.h"
#include "gnn/infer.h"
#include "perfcast/predict.h"

struct pc_predictor {
    pc_gnn *m;
    pc_gnn_ws *ws;
    int collection;
    int threads; /* for each pc_predictor_score call; 0 = OpenMP's default */
};

pc_status pc_predictor_load(const char *model_path, int threads, pc_predictor **out,
                            pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    *out = NULL;
    if (!model_path) return pc_fail(err, PC_ERR_ARG, "predict: no model path");
    pc_nn_blas_single();
    pc_predictor *p = calloc(1, sizeof *p);
    if (!p) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    p->threads = threads;
    pc_status st = pc_ckpt_load(model_path, &p->m, &p->collection, err);
    if (!st && !(p->ws = pc_gnn_ws_new())) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (st) {
        pc_predictor_free(p);
        return st;
    }
    *out = p;
    return PC_OK;
}

void pc_predictor_free(pc_predictor *p) {
    if (!p) return;
    pc_gnn_ws_free(p->ws);
    pc_gnn_free(p->m);
    free(p);
}

int pc_predictor_collection(const pc_predictor *p) { return p->collection; }

pc_status pc_predictor_score(pc_predictor *p, pc_graph *g, double *scores, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!p || !g || !scores) return pc_fail(err, PC_ERR_ARG, "predict: NULL argument");
    pc_kind want = p->m->opts.kind;
    if (pc_graph_kind(g) != want)
        return pc_fail(err, PC_ERR_ARG, "%s: a %s graph, but the model is for %s (%s)",
                       pc_graph_path(g), pc_kind_name(pc_graph_kind(g)),
                       pc_collection_name(p->collection), pc_kind_name(want));
    int cdim = want == PC_KIND_TILE ? PC_TILE_CONFIG_DIM : PC_LAYOUT_CONFIG_DIM;
    if (pc_graph_node_feat_dim(g) != PC_NODE_FEAT_DIM || pc_graph_config_dim(g) != cdim)
        return pc_fail(err, PC_ERR_FORMAT, "%s: feature widths differ from %d / %d",
                       pc_graph_path(g), PC_NODE_FEAT_DIM, cdim);
    int saved = pc_threads_begin(p->threads);
    pc_status st = pc_infer_score_graph(p->m, p->ws, g, scores, err);
    pc_threads_end(saved);
    return st;
}
