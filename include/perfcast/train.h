/*
 * Training of the learned cost models (the GNNs of src/gnn/), as used by
 * `perfcast train`. Scoring with a checkpoint (`perfcast eval`, `predict`,
 * `rank`) is perfcast/predict.h, included below.
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

#include <signal.h>

#include "perfcast/dataset.h"
#include "perfcast/perfcast.h"
#include "perfcast/predict.h" /* the predictor and pc_eval_run, declared here before */

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
    int threads;            /* threads of this run, 0 = OpenMP default (predict.h) */
    int configs;            /* sampled per graph and step, default 32 (tile) / 16 (layout) if 0 */
    float lr;               /* peak learning rate, default 1e-3 */
    float weight_decay;     /* AdamW decoupled decay, default 1e-4 */
    float clip;             /* gradient-norm clip, default 1 */
    int hidden;             /* default 64 */
    int layers;             /* default 3 */
    /* architecture (NULL / 0 / negative = the default) */
    const char *pool;       /* "mean" (default), "max", "sum", "meanmax" */
    const char *join;       /* "early" or "late"; NULL: tile early, layout late */
    const char *act;        /* "leaky_relu" (default), "relu", "gelu" */
    int emb_dim;            /* opcode embedding width, default 16 */
    int layernorm;          /* 1 (default) or 0; -1 = default */
    float dropout;          /* on each layer's update, default 0 */
    /*
     * Loss: NULL = the collection's default (tile "listmle:1,mse:0.02",
     * layout "hinge:1"); else comma-separated name:weight terms from listmle,
     * hinge, mse (a bare name has weight 1). ListMLE uses temperature 10 on
     * tile and 1 on layout; hinge margin 0.1, temperature 1.
     */
    const char *loss;
    /*
     * Which configs a step sees: "uniform" (default; K without replacement)
     * or "fast": half of K drawn from the fastest max(K, c/10) configs of the
     * graph, the rest uniformly from the others (the ranking metrics care
     * most about the fast end).
     */
    const char *sampling;
    /*
     * --resume: continue the run whose state is in out_path + ".state"
     * (written after every epoch and whenever training is interrupted; removed
     * when training completes). The data, collection, seed, architecture,
     * loss, sampling and optimizer options must match; epochs, patience, time
     * budget and threads may change. Resuming with the same options gives the
     * same checkpoint bytes as an uninterrupted run.
     */
    int resume;
    /*
     * Graph Segment Training (layout only): gst = 1 cuts every graph into
     * segments (seg_method "contiguous" (default), "splits" (node_splits) or
     * "metis"; about seg_size nodes each, default 1000), back-propagates
     * through gst_train_segs (default 1) sampled segments per step and takes
     * the others from a historical embedding table, each kept with probability
     * gst_keep (default 0.5; -1 = default); then gst_finetune epochs (default
     * 0) train only the head on fresh embeddings of every segment. A resumed
     * GST run starts with an empty table (not bitwise equal to an
     * uninterrupted one).
     */
    /* layout: keep only configurable nodes and their prune_hops-hop
       neighbourhood; -1 = the collection's default (layout 1 hop, tile
       none), 0 = the whole graph; collapse_chains also removes linear chains
       (src/graph/graph.h). The model records it, so inference prunes alike */
    /* cross-configuration attention with this many heads before the head MLP
       (0 = off, the default): the configs of a step attend to each other;
       inference then scores groups of `configs` configs */
    int attn_heads;
    /* identical configs of a train graph become one sample with the group's
       fastest runtime (default 0 = off) */
    int dedup;
    int prune_hops;
    int collapse_chains;
    /* feature encodings (comma list of pad, dims, layout; or all / none):
       -1 for absent dims, log2 / mod 128 / div 128 of dimension sizes, layout
       indicator columns; NULL = none */
    const char *encode;
    int gst;
    const char *seg_method;
    int seg_size;
    int gst_train_segs;
    float gst_keep;
    int gst_finetune;
    /*
     * Data parallelism: each optimizer step takes batch_graphs graphs (default
     * 1) on each of the dist's ranks (perfcast/dist.h; NULL = one process);
     * gradients are averaged over all of them. Graph i of the train split
     * belongs to lane i % (ranks * batch_graphs) and each rank loads only its
     * lanes, so 2 ranks x 1 graph train the same as 1 process x 2 graphs.
     */
    int batch_graphs;
    const struct pc_dist *dist;
    /* training refuses up front when its estimated peak resident memory
       (loaded data, model inputs, activations; logged) is above this (GiB;
       0 = the machine's available memory plus what the process holds) */
    double max_memory_gib;
    long stop_after_steps;  /* > 0: stop after this many steps of this run (state kept) */
    /* set to non-zero (e.g. from a signal handler) to stop after the current step */
    volatile const sig_atomic_t *stop_flag;
} pc_train_opts;

PC_API pc_train_opts pc_train_opts_default(void);

/* Called with one plain line (no newline) per epoch and for notes. */
typedef void (*pc_train_log_fn)(void *user, const char *line);

/* Where training stands; passed to the progress callback. */
typedef struct pc_train_progress {
    int epoch, epochs;            /* 1-based current epoch, planned epochs */
    size_t step, steps_per_epoch; /* steps done in this epoch */
    double samples_per_s;         /* config samples per second, this run */
    double eta_s;                 /* to the planned end (an upper bound with early stop) */
    double loss;                  /* running mean train loss of this epoch */
    double valid;                 /* last validation metric, NaN before the first */
    double elapsed_s;
} pc_train_progress;

/* Called about 4 times a second during training (never from worker threads). */
typedef void (*pc_train_progress_fn)(void *user, const pc_train_progress *p);

typedef struct pc_train_result {
    int epochs_run;
    int best_epoch;      /* 1-based */
    double best_metric;  /* on valid */
    double first_loss;   /* mean train loss of epoch 1 */
    double last_loss;    /* mean train loss of the last epoch */
    int interrupted;     /* 1 when stopped early (stop flag, step limit); state kept */
} pc_train_result;

/*
 * progress may be NULL. Returns PC_OK also when interrupted (res->interrupted
 * set; the best model so far is in out_path if an epoch completed). With a
 * dist of several ranks, an error on one rank returns there while the others
 * may wait: end the job with pc_dist_abort (perfcast/dist.h).
 */
PC_API pc_status pc_train_run(const pc_train_opts *opts, pc_train_log_fn log,
                              pc_train_progress_fn progress, void *user, pc_train_result *res,
                              pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_TRAIN_H */
