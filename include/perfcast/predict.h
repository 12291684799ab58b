/*
 * Scoring graphs with a trained checkpoint (`perfcast predict`, `rank` and
 * `eval`): the GNN cost models' inference (src/gnn/), which needs nothing
 * of the trainer. perfcast/train.h includes this header.
 */
#ifndef PERFCAST_PREDICT_H
#define PERFCAST_PREDICT_H

#include "perfcast/dataset.h"
#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pc_dist; /* perfcast/dist.h */

/* The caller sets struct_size = sizeof(pc_eval_result) before the call. */
typedef struct pc_eval_result {
    size_t struct_size;
    int collection;   /* index as pc_collection_name */
    int tile;         /* 1 for the tile collection */
    int graphs;       /* graphs scored */
    double metric;    /* tile: mean tile score; layout: mean Kendall tau-b */
    double tau;       /* mean Kendall tau-b (both kinds; NaN graphs skipped) */
    double opa;       /* mean ordered-pair accuracy */
    double slowdown[3]; /* tile: mean top-1/5/10 slowdown; layout: NaN */
    /*
     * How sure each mean is: a percentile bootstrap over the graphs (each
     * graph's value one sample; perfcast/metrics.h pc_bootstrap_mean_ci with
     * PC_BOOTSTRAP_RESAMPLES, _SEED and _LEVEL, so reproducible): the interval
     * [lo, hi] of the mean above it. NaN where the mean is NaN. The same
     * whatever the number of ranks.
     */
    double metric_ci[2];
    double tau_ci[2];
    double opa_ci[2];
    double slowdown_ci[3][2];
    double ci_level;  /* 0.95 */
    int ci_resamples; /* 2000 */
    /*
     * A seed ensemble (several members): each member also scored alone on
     * every graph (its own TTA-averaged scores, as inside the ensemble).
     * member_metric_mean / _std: the mean and sample std (n - 1) over the
     * members of each member's mean metric over the graphs; member_metric_ci:
     * the two-way bootstrap over graphs and members (pc_bootstrap_mean2_ci,
     * the PC_BOOTSTRAP_* settings) of one member's metric, over the graphs
     * where every member's is defined. How much the score depends on the
     * seed; the intervals above stay those of the ensemble's averaged
     * scores. members = 1 and these NaN for a plain model.
     */
    int members;
    double member_metric_mean, member_metric_std;
    double member_metric_ci[2];
} pc_eval_result;

/* Scores every graph of `split` ("valid" by default when NULL). */
PC_API pc_status pc_eval_run(const char *model_path, const char *data_dir, const char *split,
                             int threads, pc_eval_result *res, pc_error *err);
/* The same over the ranks of dist: each scores graphs i % ranks == rank; every
   rank gets the means over all graphs. An error on one rank returns there
   while the others may wait: end the job with pc_dist_abort (dist.h).
   Both run on `threads` threads (0 = OpenMP's default), as the predictor. */
PC_API pc_status pc_eval_run_dist(const char *model_path, const char *data_dir, const char *split,
                                  int threads, const struct pc_dist *dist, pc_eval_result *res,
                                  pc_error *err);

/*
 * A loaded checkpoint for scoring graphs (`perfcast predict` / `rank`).
 * Scores follow the metrics convention: lower = predicted faster. Every
 * config of a graph is scored in chunks over the model's shared prefix, the
 * same code path as pc_eval_run, so the scores are identical to eval's.
 */
typedef struct pc_predictor pc_predictor;

/*
 * Loads a checkpoint. Each pc_predictor_score runs on `threads` threads
 * (0 = OpenMP's default); the process's OpenMP settings are left alone.
 * The one process-wide effect: a multi-threaded (pthreads) OpenBLAS is set
 * to one thread, as perfcast runs its GEMMs on its own threads (also
 * pc_eval_run* and pc_train_run; none with a serial OpenBLAS).
 */
PC_API pc_status pc_predictor_load(const char *model_path, int threads, pc_predictor **out,
                                   pc_error *err);
/*
 * pc_predictor_load within a memory budget (bytes, or PC_MEMORY_AUTO as
 * pc_predictor_load uses; perfcast/npz.h): the checkpoint's header and the
 * model's parameters are checked against it before they are allocated
 * (PC_ERR_NOMEM naming the file and the budget), and pc_predictor_eval loads
 * each graph within it (pc_load_opts.max_memory). Scoring a graph
 * (pc_predictor_score, _score_spread, pc_prepared_graph_new: a workspace per
 * ensemble member) checks its own peak against it too, estimated from the
 * graph's shapes before anything is built (model input, activations of a
 * chunk of configs, buffers); when the default chunk (activations near 256
 * MiB) does not fit, the chunk is halved until it does, down to one config
 * (one attention group), and only if that does not fit either is the call
 * refused: PC_ERR_NOMEM, "FILE: scoring configs of this graph needs N in
 * memory even in chunks of 1 config (...), more than the memory budget of
 * B (max_memory)". Scores in smaller chunks equal the default's to float
 * rounding (BLAS kernels are picked by row count), not always bit for bit.
 */
PC_API pc_status pc_predictor_load_max(const char *model_path, int threads, uint64_t max_memory,
                                       pc_predictor **out, pc_error *err);
PC_API void pc_predictor_free(pc_predictor *p);
/* The model's collection index (as pc_collection_name). */
PC_API int pc_predictor_collection(const pc_predictor *p);
/* The feature encodings the model was trained with (PC_ENCODE_* bits, perfcast/gnn.h). */
PC_API unsigned pc_predictor_encode(const pc_predictor *p);
/*
 * What graphs the model reads, from its checkpoint (architecture and
 * preprocessing): its kind, node_feat columns, config_feat (tile) or
 * node_config_feat (layout) columns (the other kind's width is 0) and
 * opcode vocabulary; `who` is left NULL. For pc_graph_check_file_widths.
 */
PC_API pc_status pc_predictor_widths(const pc_predictor *p, pc_graph_widths *out, pc_error *err);
/*
 * Scores all pc_graph_num_configs(g) configs of g into scores[]. g must be
 * of the model's kind (PC_ERR_ARG otherwise) with the model's feature widths.
 */
PC_API pc_status pc_predictor_score(pc_predictor *p, pc_graph *g, double *scores, pc_error *err);

/*
 * Seed ensembles (a checkpoint trained with pc_train_opts.ensemble = N > 1
 * holds N members): pc_predictor_score gives each config the mean over the
 * members of their scores of the graph, each member's centered over the
 * graph's configs (minus its mean there), so an ensemble's scores of a graph
 * average 0 (they rank as the members' raw mean does) while a single model's
 * stay raw. pc_predictor_members: N (1 for a plain model).
 */
PC_API int pc_predictor_members(const pc_predictor *p);
/*
 * As pc_predictor_score, and spread[c] (when not NULL; pc_graph_num_configs(g)
 * entries) the standard deviation over the members (population: divided by
 * N) of their centered scores of config c: on the scale of scores[], the
 * ensemble's uncertainty. All 0 for a single model.
 */
PC_API pc_status pc_predictor_score_spread(pc_predictor *p, pc_graph *g, double *scores,
                                           double *spread, pc_error *err);
/*
 * Test-time augmentation for models with cross-configuration attention,
 * whose score of a config depends on the group it is scored with: score the
 * configs in `orderings` orderings (the first as given, the others random
 * permutations drawn from `seed`, the same for every call) and average each
 * config's scores (per member, before the ensemble's mean). orderings 1
 * (the default) turns it off. PC_ERR_ARG for orderings < 1, and for
 * orderings > 1 with a model without attention (its scores do not depend on
 * the ordering). Applies to pc_predictor_score* and pc_predictor_eval.
 */
PC_API pc_status pc_predictor_set_tta(pc_predictor *p, int orderings, uint64_t seed, pc_error *err);
/*
 * A graph prepared for scoring many sets of candidate configurations with a
 * predictor (`perfcast tune`): the graph's model input (preprocessed nodes,
 * CSR, pruning) is built once and, for models without cross-configuration
 * attention and without Graph Segment Training, the config-independent part
 * of every member (pc_gnn_prefix: the input projection, and for the layout
 * late join and the tile late join the whole GNN, its pooling and the
 * configurable nodes' projections) is computed once, so a candidate costs only
 * the per-config part (layout late join: a small MLP per configurable node).
 * Attention and GST models fall back to scoring each call as one graph.
 *
 * pc_prepared_graph_score scores n candidate rows (tile: n x 24; layout: n x
 * nc x 18, nc = pc_graph_num_config_nodes(g)) into scores[n] and, when not
 * NULL, spread[n]. A plain model's scores are those pc_predictor_score gives a
 * graph of g's arrays holding the same (distinct) candidates, bit for bit. A
 * seed ensemble's member scores are not centered over each call (that would
 * shift scores from call to call) but by a fixed offset per member: its mean
 * score over the reference configs `ref` (nref rows, copied at creation; the
 * compiler default is the natural reference for layout, then its spread is 0
 * and a candidate's spread is the members' disagreement about its difference
 * from the default). ref NULL (nref 0): the graph's own configs, the first
 * 1024 (offsets 0 without any). scores[] is the members' mean, spread[] their
 * standard deviation (population), so scores of different calls compare.
 * (The attention/GST fallback centers each call as pc_predictor_score does.)
 * Borrows p and g (both must outlive the handle); not thread-safe.
 */
typedef struct pc_prepared_graph pc_prepared_graph;

PC_API pc_status pc_prepared_graph_new(pc_predictor *p, pc_graph *g, const float *ref,
                                       int64_t nref, pc_prepared_graph **out, pc_error *err);
PC_API void pc_prepared_graph_free(pc_prepared_graph *pg); /* NULL ok */
PC_API pc_status pc_prepared_graph_score(pc_prepared_graph *pg, const float *configs, int64_t n,
                                         double *scores, double *spread, pc_error *err);
/* 1 when the config-independent part is cached (no attention, no GST), else 0. */
PC_API int pc_prepared_graph_cached(const pc_prepared_graph *pg);

/*
 * pc_eval_run_dist with the loaded predictor (its threads, ensemble and
 * test-time augmentation): scores every graph of `split` ("valid" when NULL)
 * of its collection under data_dir. dist may be NULL (one process).
 */
PC_API pc_status pc_predictor_eval(pc_predictor *p, const char *data_dir, const char *split,
                                   const struct pc_dist *dist, pc_eval_result *res, pc_error *err);
/*
 * Progress of pc_predictor_eval (perfcast/perfcast.h, pc_progress_fn):
 * "graphs loaded", then "graphs scored", counting this rank's graphs; and of
 * pc_predictor_score / _score_spread: "configs scored" of the graph's configs
 * after each chunk (ensemble members and test-time orderings as fractions of
 * it). fn NULL (the default): none. p NULL: nothing.
 */
PC_API void pc_predictor_set_progress(pc_predictor *p, pc_progress_fn fn, void *user);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_PREDICT_H */
