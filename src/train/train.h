/* Training internals: model checkpoints (safetensors) and shared helpers. */
#ifndef PC_TRAIN_INTERNAL_H
#define PC_TRAIN_INTERNAL_H

#include "model/model.h"
#include "perfcast/train.h"

/* What a checkpoint records besides the tensors. */
typedef struct pc_ckpt_info {
    int collection;
    const pc_train_opts *train; /* NULL when not known (written as absent) */
    int configs;                /* effective configs per step */
    int best_epoch, epochs_run;
    double best_metric;
} pc_ckpt_info;

pc_status pc_ckpt_save(const pc_model *m, const pc_ckpt_info *info, const char *path,
                       pc_error *err);
/* Loads a model; *collection receives the collection index. */
pc_status pc_ckpt_load(const char *path, pc_model **out, int *collection, pc_error *err);

/*
 * Scores every config of g (chunks over the shared prefix, as eval) into
 * scores[0 .. pc_graph_num_configs(g)). ws is the caller's workspace.
 */
pc_status pc_train_score_graph(const pc_model *m, pc_model_ws *ws, pc_graph *g, double *scores,
                               pc_error *err);

#endif
