/*
 * The predictor handle (perfcast/predict.h), shared by the files that
 * implement its functions: predict.c (loading, scoring whole graphs) and
 * prepared.c (a graph prepared once, scored for many candidate sets).
 */
#ifndef PC_GNN_PREDICTOR_H
#define PC_GNN_PREDICTOR_H

#include "gnn/gnn.h"
#include "perfcast/predict.h"

struct pc_predictor {
    pc_gnn *m;
    pc_gnn_ws *ws;
    int collection;
    int threads; /* for each pc_predictor_score call; 0 = OpenMP's default */
    uint64_t max_memory; /* the budget of the checkpoint's and pc_predictor_eval's loads */
    pc_progress_fn progress; /* of pc_predictor_eval (pc_predictor_set_progress) */
    void *progress_user;
};

/* The graph must be of the model's kind and feature widths (predict.c). */
pc_status pc_predictor_check_graph(const pc_predictor *p, const pc_graph *g, pc_error *err);

#endif /* PC_GNN_PREDICTOR_H */
