/*
 * Training and evaluation of the learned cost models (the GNNs of
 * src/model/), as used by `perfcast train` and `perfcast eval`.
 *
 * Training (pc_train_run), one collection at a time:
 *  - loads every graph of the collection's train and valid splits;
 *  - fits the feature preprocessing (log for large columns, standardization,
 *    constant columns dropped) on the train split;
 *  - each epoch visits the train graphs in an order shuffled by a PRNG seeded
 *    from opts.seed, samples `configs` configurations per graph uniformly
 *    without replacement and takes one AdamW step per graph (gradient norm
 *    clipped, cosine learning rate with linear warmup);
 *  - evaluates on the valid split after every epoch with the collection's
 *    metric (tile: mean Kaggle tile score; layout: mean Kendall tau-b over
 *    ALL configs of each graph), keeps the best parameters and stops after
 *    `patience` epochs without improvement, after `epochs`, or when the time
 *    budget would be exceeded;
 *  - writes the best model as a safetensors checkpoint (temp + rename).
 *
 * Losses: tile uses pc_loss_cfg_default (ListMLE T=10 + 0.02 MSE, the
 * TpuGraphs tile baseline); layout uses the pairwise hinge loss (margin 0.1,
 * T=1, as GST) since its metric, Kendall tau, is itself pairwise.
 *
 * Checkpoint: tensors "param.<name>" (F32, the model parameters) and
 * "prep.{node,cfg}.{keep,logt,mean,std}" (the preprocessing), metadata key
 * "perfcast" holding a JSON object with the format version, collection,
 * architecture, training options and best validation metric.
 *
 * Determinism: for a given seed the checkpoint is byte-for-byte the same
 * (the NN kernels are thread-count independent; timing is never stored),
 * unless the time budget cut the run short.
 */
#ifndef PERFCAST_TRAIN_H
#define PERFCAST_TRAIN_H

#include "perfcast/dataset.h"
#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pc_train_opts {
    const char *data_dir;   /* dataset root (as pc_dataset_open) */
    const char *collection; /* "tile:xla", "layout:xla:random", ... */
    const char *out_path;   /* checkpoint to write */
    double time_budget;     /* seconds, 0 = none */
    int epochs;             /* default 20 */
    int patience;           /* early stop after this many epochs without gain, default 5 */
    uint64_t seed;          /* default 1 */
    int threads;            /* OpenMP threads, 0 = default */
    int configs;            /* sampled per graph and step, default 32 (tile) / 16 (layout) if 0 */
    float lr;               /* peak learning rate, default 1e-3 */
    float weight_decay;     /* AdamW decoupled decay, default 1e-4 */
    float clip;             /* gradient-norm clip, default 1 */
    int hidden;             /* default 64 */
    int layers;             /* default 3 */
} pc_train_opts;

pc_train_opts pc_train_opts_default(void);

/* Called with one plain line (no newline) per epoch and for notes. */
typedef void (*pc_train_log_fn)(void *user, const char *line);

typedef struct pc_train_result {
    int epochs_run;
    int best_epoch;      /* 1-based */
    double best_metric;  /* on valid */
    double first_loss;   /* mean train loss of epoch 1 */
    double last_loss;    /* mean train loss of the last epoch */
} pc_train_result;

pc_status pc_train_run(const pc_train_opts *opts, pc_train_log_fn log, void *user,
                       pc_train_result *res, pc_error *err);

typedef struct pc_eval_result {
    int collection;   /* index as pc_collection_name */
    int tile;         /* 1 for the tile collection */
    int graphs;       /* graphs scored */
    double metric;    /* tile: mean tile score; layout: mean Kendall tau-b */
    double tau;       /* mean Kendall tau-b (both kinds; NaN graphs skipped) */
    double opa;       /* mean ordered-pair accuracy */
    double slowdown[3]; /* tile: mean top-1/5/10 slowdown; layout: NaN */
} pc_eval_result;

/* Scores every graph of `split` ("valid" by default when NULL). */
pc_status pc_eval_run(const char *model_path, const char *data_dir, const char *split,
                      int threads, pc_eval_result *res, pc_error *err);

/* ---- prediction ---------------------------------------------------------- */

/*
 * A loaded checkpoint for scoring graphs (`perfcast predict` / `rank`).
 * Scores follow the metrics convention: lower = predicted faster. Every
 * config of a graph is scored in chunks over the model's shared prefix, the
 * same code path as pc_eval_run, so the scores are identical to eval's.
 */
typedef struct pc_predictor pc_predictor;

/* Loads a checkpoint; threads > 0 sets the OpenMP thread count. */
pc_status pc_predictor_open(const char *model_path, int threads, pc_predictor **out,
                            pc_error *err);
void pc_predictor_free(pc_predictor *p);
/* The model's collection index (as pc_collection_name). */
int pc_predictor_collection(const pc_predictor *p);
/*
 * Scores all pc_graph_num_configs(g) configs of g into scores[]. g must be
 * of the model's kind (PC_ERR_ARG otherwise) with the model's feature widths.
 */
pc_status pc_predictor_score(pc_predictor *p, pc_graph *g, double *scores, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_TRAIN_H */
