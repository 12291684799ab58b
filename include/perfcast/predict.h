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
PC_API void pc_predictor_free(pc_predictor *p);
/* The model's collection index (as pc_collection_name). */
PC_API int pc_predictor_collection(const pc_predictor *p);
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
 * pc_eval_run_dist with the loaded predictor (its threads, ensemble and
 * test-time augmentation): scores every graph of `split` ("valid" when NULL)
 * of its collection under data_dir. dist may be NULL (one process).
 */
PC_API pc_status pc_predictor_eval(pc_predictor *p, const char *data_dir, const char *split,
                                   const struct pc_dist *dist, pc_eval_result *res, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_PREDICT_H */
