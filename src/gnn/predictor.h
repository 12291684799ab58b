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
};

#endif /* PC_GNN_PREDICTOR_H */
