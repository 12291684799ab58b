/*
 * Evaluation: every config of a graph scored (src/gnn/infer.h) and compared
 * with its measured runtimes (tile: Kaggle tile score and top-K slowdowns;
 * both kinds: Kendall tau-b and ordered-pair accuracy). `perfcast eval`
 * (pc_eval_run, src/gnn/eval.c) and the trainer's validation share it.
 */
#ifndef PC_MODEL_EVAL_H
#define PC_MODEL_EVAL_H

#include "gnn/infer.h"
#include "gnn/split_graphs.h"
#include "perfcast/dist.h"
#include "perfcast/metrics.h"
#include "perfcast/predict.h"

/* Means over the graphs evaluated so far. */
typedef struct pc_eval_sum {
    pc_metric_mean metric, tau, opa, sd[3]; /* sd: top-1/5/10 slowdown (tile) */
    int graphs;
} pc_eval_sum;

void pc_eval_sum_init(pc_eval_sum *e);
/* Every rank evaluated its own graphs: the means over all of them, on every rank. */
void pc_eval_sum_reduce(const pc_dist *d, pc_eval_sum *e);

/*
 * Scores every config of t (as pc_infer_all, its distinct configs found on
 * first use) and adds its metrics against its runtimes (tile: and
 * normalizers) to e. A graph without configs is skipped.
 */
pc_status pc_eval_graph(const pc_gnn *m, pc_gnn_ws *ws, pc_split_graph *t, pc_infer_scratch *x,
                        pc_eval_sum *e, pc_error *err);

/* A graph's own metrics, in this order (pc_eval_graph_values). */
enum {
    PC_EVAL_METRIC,
    PC_EVAL_TAU,
    PC_EVAL_OPA,
    PC_EVAL_SD1,
    PC_EVAL_SD5,
    PC_EVAL_SD10,
    PC_EVAL_NVALUES
};
/*
 * pc_eval_graph that also writes the graph's values to v (NaN where a metric
 * is undefined or not of the model's kind: tau of an all-tied graph, the
 * slowdowns of layout). *scored is 0 when the graph has no configs (v
 * untouched, e unchanged). The per-graph values feed the bootstrap intervals
 * of pc_eval_run.
 */
pc_status pc_eval_graph_values(const pc_gnn *m, pc_gnn_ws *ws, pc_split_graph *t,
                               pc_infer_scratch *x, pc_eval_sum *e, double v[PC_EVAL_NVALUES],
                               int *scored, pc_error *err);
/*
 * pc_eval_run_dist with a loaded model m of collection coll (its ensemble
 * members and TTA settings apply), each graph loaded within max_memory
 * (bytes or PC_MEMORY_AUTO): pc_predictor_eval (src/gnn/predict.c).
 * progress (may be NULL): "graphs loaded", then "graphs scored", of this
 * rank's graphs.
 */
pc_status pc_eval_model(const pc_gnn *m, int coll, const char *data_dir, const char *split,
                        int threads, uint64_t max_memory, const pc_dist *dist,
                        pc_progress_fn progress, void *progress_user, pc_eval_result *res,
                        pc_error *err);

#endif /* PC_MODEL_EVAL_H */
