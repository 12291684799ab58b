/*
 * Ranking metrics for learned cost models (TpuGraphs conventions, see
 * shared/reference/tpugraphs.md section 2): Kendall tau-b, ordered-pair
 * accuracy (OPA), top-K slowdown, the Kaggle tile score, the per-collection
 * and overall competition score, and how sure a mean over graphs or seeds is
 * (bootstrap confidence intervals, the spread over seeds).
 *
 * Score convention: a model's predicted score is runtime-like, LOWER means
 * predicted FASTER. A perfect model orders its scores like the runtimes, so
 * tau-b(pred, runtime) = 1 and OPA = 1; the predicted top-K are the K configs
 * with the lowest scores. (A model whose score means "higher is faster" must
 * negate its output before calling these functions.)
 *
 * Inputs are double. Runtimes from the dataset are int64 nanoseconds, which
 * convert exactly below 2^53. NaN anywhere is rejected with PC_ERR_ARG (the
 * message names the array and the index); +-inf predictions are accepted and
 * ordered as usual; -0.0 and +0.0 are equal (a tie).
 *
 * Cost: Kendall tau-b, the pair counts and OPA take O(n log n) time and
 * O(n) extra memory (Knight's algorithm); top-K takes O(n log K) time and
 * O(K) memory. All functions are reentrant (no global state).
 */
#ifndef PERFCAST_METRICS_H
#define PERFCAST_METRICS_H

#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- pair statistics ---------------------------------------------------- */

/*
 * Counts over the n(n-1)/2 unordered pairs i < j:
 *   concordant  (x_i - x_j) and (y_i - y_j) have the same strict sign
 *   discordant  they have opposite strict signs
 *   ties_x      x_i == x_j (including pairs also tied in y)
 *   ties_y      y_i == y_j (including pairs also tied in x)
 *   ties_xy     x_i == x_j and y_i == y_j
 * so pairs == concordant + discordant + ties_x + ties_y - ties_xy.
 */
typedef struct pc_pair_counts {
    uint64_t pairs;
    uint64_t concordant;
    uint64_t discordant;
    uint64_t ties_x;
    uint64_t ties_y;
    uint64_t ties_xy;
} pc_pair_counts;

/* Fills *out (all zero for n < 2). x and y may be NULL only when n == 0. */
PC_API pc_status pc_pair_counts_compute(const double *x, const double *y, size_t n,
                                        pc_pair_counts *out, pc_error *err);

/*
 * Kendall tau-b = (P - Q) / sqrt((pairs - ties_x) * (pairs - ties_y)),
 * computed as scipy.stats.kendalltau does (variant 'b', the TpuGraphs layout
 * metric) and clipped to [-1, 1]; perfect agreement (disagreement) gives
 * exactly 1 (-1) where scipy may give 0.9999999999999999. When n < 2 or all x or all y are tied the
 * value is undefined: *tau is NaN and the call returns PC_OK, like scipy.
 */
PC_API pc_status pc_kendall_tau_b(const double *x, const double *y, size_t n, double *tau,
                                  pc_error *err);
/* tau-b from counts already computed (NaN when undefined, as above). */
PC_API double pc_kendall_tau_b_from_counts(const pc_pair_counts *c);

/*
 * Ordered-pair accuracy: among the pairs with different runtimes, the fraction
 * whose predicted scores are strictly ordered like the runtimes (lower score
 * on the faster config). A pair with tied scores but different runtimes counts
 * as wrong (as in tfr.keras.metrics.OPAMetric). Equals
 * concordant / (pairs - ties_y) with x = pred, y = runtime. *opa is NaN (and
 * the call returns PC_OK) when no pair has different runtimes.
 */
PC_API pc_status pc_ordered_pair_accuracy(const double *pred, const double *runtime, size_t n,
                                          double *opa, pc_error *err);
PC_API double pc_ordered_pair_accuracy_from_counts(const pc_pair_counts *c);

/* ---- top-K ------------------------------------------------------------- */

/*
 * The predicted top-K: the min(k, n) configs with the lowest predicted
 * scores. Ties in the score are broken by index (the lower index ranks
 * first), so the choice is deterministic. Writes the indices, best first,
 * to idx[0 .. min(k, n)) and their count to *count (count may be NULL).
 * Requires k >= 1 and n >= 1.
 */
PC_API pc_status pc_topk_indices(const double *pred, size_t n, size_t k, size_t *idx, size_t *count,
                                 pc_error *err);

/*
 * Top-K slowdown (TpuGraphs tiles/metrics.py), with y_i = runtime_i /
 * normalizer_i, or y_i = runtime_i when normalizer is NULL:
 *   slowdown = (min over the predicted top-K of y - min over all of y)
 *              / (min over all of y)
 * 0 means the top-K holds a best config; 0.2 means the best of the top-K is
 * 20% slower. k > n is clamped to n (slowdown 0). Requires n >= 1, k >= 1,
 * runtimes and normalizers finite and > 0; PC_ERR_ARG otherwise.
 */
PC_API pc_status pc_topk_slowdown(const double *pred, const double *runtime,
                                  const double *normalizer, size_t n, size_t k, double *slowdown,
                                  pc_error *err);

/*
 * Kaggle tile score of one kernel:
 *   2 - (min over the predicted top-5 of y) / (min over all of y)
 * with y as for pc_topk_slowdown (the dataset's tile y is
 * config_runtime / config_runtime_normalizers). 1 is perfect.
 */
#define PC_TILE_SCORE_K 5
PC_API pc_status pc_tile_score(const double *pred, const double *runtime, const double *normalizer,
                               size_t n, double *score, pc_error *err);

/* ---- aggregation -------------------------------------------------------- */

/* Mean of per-graph values. NaN values are not averaged but counted apart. */
typedef struct pc_metric_mean {
    double sum;
    uint64_t count;     /* values averaged */
    uint64_t nan_count; /* NaN values skipped (e.g. tau of an all-tied graph) */
} pc_metric_mean;

PC_API void pc_metric_mean_init(pc_metric_mean *m);
PC_API void pc_metric_mean_add(pc_metric_mean *m, double v);
/* sum / count, NaN when count == 0. */
PC_API double pc_metric_mean_value(const pc_metric_mean *m);

/*
 * The competition score. Collections are indexed 0..4 in the order of
 * dataset.h (pc_collection_name): tile:xla, layout:xla:random,
 * layout:xla:default, layout:nlp:random, layout:nlp:default. Index 0 (tile)
 * scores each graph with pc_tile_score; the layout collections with
 * pc_kendall_tau_b(pred, runtime).
 */
#define PC_SCORE_COLLECTIONS 5
#define PC_SCORE_TILE_COLLECTION 0

typedef struct pc_scoreboard {
    pc_metric_mean coll[PC_SCORE_COLLECTIONS];
} pc_scoreboard;

PC_API void pc_scoreboard_init(pc_scoreboard *b);
/*
 * Scores one graph of `collection` and adds it. normalizer is used for the
 * tile collection only (NULL = unnormalized) and ignored for layout. On error
 * the board is unchanged. *value (may be NULL) receives the graph's score.
 */
PC_API pc_status pc_scoreboard_add_graph(pc_scoreboard *b, int collection, const double *pred,
                                         const double *runtime, const double *normalizer, size_t n,
                                         double *value, pc_error *err);
/* Adds a per-graph score computed elsewhere; +-inf is PC_ERR_ARG, NaN is skipped. */
PC_API pc_status pc_scoreboard_add_value(pc_scoreboard *b, int collection, double value,
                                         pc_error *err);
/* Mean over the collection's graphs; NaN if it has none (or bad index). */
PC_API double pc_scoreboard_collection(const pc_scoreboard *b, int collection);
/*
 * Mean of the five collection means. A collection without graphs contributes
 * 0, as a missing part of a Kaggle submission does (a perfect tile-only
 * result scores 0.2); check pc_scoreboard_collection for NaN to detect one.
 */
PC_API double pc_scoreboard_overall(const pc_scoreboard *b);

/* ---- confidence intervals and spread ------------------------------------ */

/*
 * Bootstrap percentile interval of a mean (Efron): `resamples` samples of n
 * values drawn with replacement from values[0 .. n), the mean of each, and
 * the (1 - level) / 2 and (1 + level) / 2 percentiles of those means,
 * interpolated linearly between order statistics as numpy.percentile's
 * default ('linear') does. `perfcast eval` bootstraps over graphs this way
 * (each graph's metric is one value).
 *
 * The draws are a fixed function of seed, n and resamples, so the interval
 * is reproducible: one splitmix64 stream (state = seed; each step adds
 * 0x9E3779B97F4A7C15 and mixes) gives every index of resample 0, then of
 * resample 1, ..., each index drawn by rejection without modulo bias:
 * words r < (2^64 - n) mod n are skipped and the index is r mod n.
 * pc_bootstrap_indices writes that very stream.
 *
 * n == 0: *lo = *hi = NaN and PC_OK (no values, no interval); n == 1: the
 * value twice. Values must be finite (NaN or +-inf is PC_ERR_ARG naming
 * the index: drop undefined values, e.g. the tau of an all-tied graph,
 * first); resamples >= 1; 0 < level < 1. lo or hi may be NULL.
 * Takes O(resamples * n) time and O(resamples) memory.
 */
#define PC_BOOTSTRAP_RESAMPLES 2000 /* what perfcast eval draws */
#define PC_BOOTSTRAP_SEED 20231101u /* and its seed */
#define PC_BOOTSTRAP_LEVEL 0.95     /* and its level */
PC_API pc_status pc_bootstrap_mean_ci(const double *values, size_t n, size_t resamples,
                                      uint64_t seed, double level, double *lo, double *hi,
                                      pc_error *err);

/*
 * Two-way bootstrap percentile interval of the mean of a rows x cols table
 * (row-major, values[r * cols + c]): each resample draws `rows` row indices
 * and then `cols` column indices with replacement, independently, and takes
 * the mean of the rows x cols cells they select. `perfcast eval` of a seed
 * ensemble bootstraps this way over graphs (rows) and members (columns),
 * each cell one member's metric on one graph: the interval of what one
 * member, a seed drawn at random, scores on a graph drawn at random, so it
 * widens with the spread between seeds as well as between graphs.
 *
 * The draws are pc_bootstrap_mean_ci's stream, per resample the row indices
 * and then the column indices; with cols == 1 no column is drawn, so the
 * interval equals pc_bootstrap_mean_ci's of the one column. rows == 0 or
 * cols == 0: NaN and PC_OK. Values finite; resamples >= 1; 0 < level < 1.
 * O(resamples * rows * cols) time, O(resamples + rows + cols) memory.
 */
PC_API pc_status pc_bootstrap_mean2_ci(const double *values, size_t rows, size_t cols,
                                       size_t resamples, uint64_t seed, double level, double *lo,
                                       double *hi, pc_error *err);

/*
 * The draws of pc_bootstrap_mean_ci: resamples * n indices in [0, n),
 * resample b's at idx[b * n .. (b + 1) * n). Requires n >= 1 and
 * resamples >= 1 (PC_ERR_ARG otherwise, or when resamples * n overflows).
 */
PC_API pc_status pc_bootstrap_indices(size_t n, size_t resamples, uint64_t seed, size_t *idx,
                                      pc_error *err);

/*
 * The linear-interpolation percentile (numpy.percentile's default) of
 * x[0 .. n) at q in [0, 1]: with x sorted ascending and h = (n - 1) q,
 * x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]). Sorts x in
 * place. n >= 1 and finite x; PC_ERR_ARG otherwise.
 */
PC_API pc_status pc_percentile(double *x, size_t n, double q, double *out, pc_error *err);

/*
 * Mean, sample standard deviation (n - 1 in the denominator, numpy's
 * ddof=1), minimum and maximum of values, NaN values skipped and counted
 * apart (as pc_metric_mean): `perfcast train --seeds` and `eval` over
 * several checkpoints report the spread over seeds this way. With no values
 * every statistic is NaN; with one, std is NaN. +-inf is PC_ERR_ARG.
 */
typedef struct pc_spread {
    double mean, std, min, max;
    uint64_t count;     /* values used */
    uint64_t nan_count; /* NaN values skipped */
} pc_spread;
PC_API pc_status pc_spread_compute(const double *values, size_t n, pc_spread *out, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_METRICS_H */
