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
 *    clipped, cosine learning rate with linear warmup over the first epoch or
 *    a tenth of the run, annealed to its end);
 *  - evaluates on the valid split after every epoch with the collection's
 *    metric (tile: mean Kaggle tile score; layout: mean Kendall tau-b over
 *    ALL configs of each graph), keeps the best parameters and stops after
 *    `patience` epochs without improvement, after `epochs`, or when the time
 *    budget would be exceeded;
 *  - the length: without a time budget (or with `epochs` set) `epochs`
 *    (default 20) and `patience` (default 5) epochs, the schedule over them.
 *    With a time budget and `epochs` PC_TRAIN_AUTO the budget sets it: epochs
 *    run until the budget (a next epoch that would not fit is not started)
 *    or patience; after each epoch the epochs that fit are estimated from
 *    this run's speed (steps and validation), the cosine schedule ends with
 *    the last of them (the peak is held until the first estimate) and an
 *    AUTO patience is half of them (at least 5) validation rounds;
 *  - a budget too small for one epoch validates and writes the partial
 *    epoch's model (or the initial weights if no step was taken) and logs
 *    so;
 *  - writes the best model as a safetensors checkpoint (temp + rename).
 *
 * Losses: pc_loss_weights below (by default tile ListMLE T=10 + 0.02 MSE, the
 * TpuGraphs tile baseline; layout the pairwise hinge loss, margin 0.1, T=1,
 * as GST, since its metric, Kendall tau, is itself pairwise).
 *
 * Checkpoint: tensors "param.<name>" (F32, the model parameters) and
 * "prep.{node,cfg}.{keep,logt,mean,std}" (the preprocessing), metadata key
 * "perfcast" holding a JSON object with the format version, collection,
 * architecture, training options and best validation metric.
 *
 * Determinism: for a given seed the checkpoint is byte-for-byte the same
 * (the NN kernels are thread-count independent; timing is never stored),
 * unless the time budget cut the run short or set its length (then the
 * learning rate schedule and patience come from measured speed).
 */
#ifndef PERFCAST_TRAIN_H
#define PERFCAST_TRAIN_H

#include <signal.h>

#include "perfcast/dataset.h"
#include "perfcast/gnn.h"
#include "perfcast/perfcast.h"
#include "perfcast/predict.h" /* the predictor and pc_eval_run, declared here before */

#ifdef __cplusplus
extern "C" {
#endif

/* Which configurations a training step sees. */
typedef enum pc_sampling {
    PC_SAMPLING_UNIFORM = 0, /* "uniform": K configs without replacement */
    PC_SAMPLING_FAST,        /* "fast": half of K drawn from the fastest max(K, c/10) configs of
                                the graph, the rest uniformly from the others (the ranking
                                metrics care most about the fast end) */
    PC_SAMPLING_COUNT
} pc_sampling;
PC_API const char *pc_sampling_name(pc_sampling s);
PC_API pc_status pc_sampling_parse(const char *name, pc_sampling *out);

/*
 * The loss: a weighted sum (weights renormalized to sum 1) of ListMLE
 * (temperature 10 on tile, 1 on layout), the pairwise hinge over all pairs
 * (margin 0.1, temperature 1), the mean squared error and the margin loss
 * over close pairs (2nd place TpuGraphs' difference-matrix margin loss:
 * the same hinge, margin 0.1, temperature 1, on the pairs of sampled configs
 * at most 2 distinct runtimes apart in the true order, so the gradient goes
 * to near neighbours instead of being diluted by the many easy far pairs).
 * Weights are >= 0 with a positive sum, or all four PC_TRAIN_AUTO: the
 * collection's default (tile listmle 1 + mse 0.02, the TpuGraphs tile
 * baseline; layout hinge 1, as GST, since Kendall tau is itself pairwise).
 * margin left PC_TRAIN_AUTO beside three set weights counts as 0 (code
 * written before it existed).
 */
typedef struct pc_loss_weights {
    float listmle, hinge, mse;
    float margin;
} pc_loss_weights;
/*
 * Parses comma-separated name:weight terms ("listmle:1,margin:0.5"; a bare
 * name has weight 1, terms not named weigh 0) from listmle, hinge, mse,
 * margin. PC_ERR_ARG with a message starting "loss " on a bad term, weight or
 * a spec without a positive weight.
 */
PC_API pc_status pc_loss_weights_parse(const char *spec, pc_loss_weights *out, pc_error *err);

/* An int option set to this takes the collection's default (said per field). */
#define PC_TRAIN_AUTO (-1)

/*
 * Obtain from pc_train_opts_default() only, then set what differs: every
 * field's default is said beside it (the "auto" ones are resolved per
 * collection when training starts). Library messages name a field as
 * "pc_train_opts.<field>".
 */
typedef struct pc_train_opts {
    size_t struct_size;     /* sizeof(pc_train_opts), set by pc_train_opts_default() */
    const char *data_dir;   /* dataset root (as pc_dataset_open); required (default NULL) */
    const char *collection; /* "tile:xla", "layout:xla:random", ...; required (default NULL) */
    const char *out_path;   /* checkpoint to write; required (default NULL) */
    double time_budget;     /* seconds, default 0 = none */
    /* default PC_TRAIN_AUTO: 20, or with a time_budget as many as the budget holds (see
       above; the checkpoint then records -1) */
    int epochs;
    /* early stop after this many epochs without gain; default PC_TRAIN_AUTO: 5, or when the
       budget sets the length half the epochs estimated to fit, at least 5 */
    int patience;
    uint64_t seed;          /* default 1 */
    /*
     * A seed ensemble (default 1 = one model; 1..64): this many models,
     * trained one after the other with seeds seed, seed + 1, ... on the data
     * loaded once, each given an equal share of the time budget left when it
     * starts (a member that would start with none left is not trained), are
     * written as one checkpoint and averaged at inference (perfcast/predict.h:
     * pc_predictor_score, pc_predictor_score_spread). Member k is the model a
     * plain run with seed + k gives (without a budget: byte for byte). The
     * valid metric reported is the ensemble's (pc_train_result: best_metric
     * the ensemble's, epochs_run the members' sum, best_epoch and first_loss
     * member 0's). Not with resume; an ensemble writes its checkpoint once, at
     * the end.
     */
    int ensemble;
    int threads;            /* threads of this run, 0 = OpenMP default (predict.h) */
    int configs;            /* sampled per graph and step (>= 2); default PC_TRAIN_AUTO: 32
                               on tile, 16 on layout */
    float lr;               /* peak learning rate, default 1e-3 */
    float weight_decay;     /* AdamW decoupled decay, default 1e-4 */
    float clip;             /* gradient-norm clip, default 1 */
    /* architecture */
    int hidden;             /* default 64 */
    int layers;             /* default 3 */
    pc_pool pool;           /* default PC_POOL_MEAN */
    pc_join join;           /* default PC_JOIN_AUTO: tile early, layout late */
    pc_act act;             /* default PC_ACT_LEAKY_RELU */
    int emb_dim;            /* opcode embedding width, default 16 */
    int layernorm;          /* LayerNorm before each layer: default 1, or 0 */
    float dropout;          /* on each layer's update, in [0, 1); default 0 */
    /* cross-configuration attention with this many heads before the head MLP
       (default 0 = off): the configs of a step attend to each other;
       inference then scores groups of `configs` configs */
    int attn_heads;
    /* layout: keep only configurable nodes and their prune_hops-hop
       neighbourhood (0 = the whole graph); default PC_TRAIN_AUTO: layout 1,
       tile 0 (tile graphs are never pruned). collapse_chains (default 0)
       also removes linear chains (src/graph/graph.h). The model records
       both, so inference prunes alike */
    int prune_hops;
    int collapse_chains;
    /* feature encodings, PC_ENCODE_* bits (perfcast/gnn.h); default
       PC_ENCODE_AUTO: layout PC_ENCODE_ALL, tile PC_ENCODE_STEPS | PC_ENCODE_RSTEPS */
    unsigned encode;
    pc_loss_weights loss;   /* default all PC_TRAIN_AUTO (see pc_loss_weights) */
    pc_sampling sampling;   /* default PC_SAMPLING_UNIFORM */
    /* identical configs of a train graph become one sample with the group's
       fastest runtime (default 0 = off) */
    int dedup;
    /*
     * resume = 1: continue the run whose state is in out_path + ".state"
     * (written after every epoch and whenever training is interrupted; removed
     * when training completes). The data, collection, seed, architecture,
     * loss, sampling and optimizer options must match; epochs, patience, time
     * budget and threads may change. Resuming with the same options gives the
     * same checkpoint bytes as an uninterrupted run. Default 0.
     */
    int resume;
    /*
     * Graph Segment Training (layout only): gst = 1 (default 0) cuts every
     * graph into segments (seg_method, default PC_SEGMENTS_CONTIGUOUS; about
     * seg_size nodes each, default 1000), back-propagates through
     * gst_train_segs (default 1) sampled segments per step and takes the
     * others from a historical embedding table, each kept with probability
     * gst_keep (in [0, 1], default 0.5); then gst_finetune epochs (default 0)
     * train only the head on fresh embeddings of every segment. A resumed GST
     * run starts with an empty table (not bitwise equal to an uninterrupted
     * one).
     */
    int gst;
    pc_segments seg_method;
    int seg_size;
    int gst_train_segs;
    float gst_keep;
    int gst_finetune;
    /*
     * Data parallelism: each optimizer step takes batch_graphs graphs (default
     * 1) on each of the dist's ranks (perfcast/dist.h; default NULL = one
     * process); gradients are averaged over all of them. Graph i of the train
     * split belongs to lane i % (ranks * batch_graphs) and each rank loads only
     * its lanes, so 2 ranks x 1 graph train the same as 1 process x 2 graphs.
     */
    int batch_graphs;
    const struct pc_dist *dist;
    /* training refuses up front when its estimated peak resident memory
       (loaded data, model inputs, activations; logged) is above this many GiB;
       default 0 = the machine's available memory plus what the process holds */
    double max_memory_gib;
    long stop_after_steps;  /* > 0: stop after this many steps of this run (state kept);
                               default 0 = no limit */
    /* set to non-zero (e.g. from a signal handler) to stop after the current
       step; default NULL */
    volatile const sig_atomic_t *stop_flag;
    /* Called as the data loads ("train graphs loaded", then "valid graphs
       loaded", this rank's graphs); default NULL (perfcast/perfcast.h,
       pc_progress_fn). Training's own progress is pc_train_run's callback. */
    pc_progress_fn load_progress;
    void *load_progress_user; /* its first argument; default NULL */
} pc_train_opts;

PC_API pc_train_opts pc_train_opts_default(void);

/* Called with one plain line (no newline) per epoch and for notes. */
typedef void (*pc_train_log_fn)(void *user, const char *line);

/* Where training stands; passed to the progress callback. */
typedef struct pc_train_progress {
    size_t struct_size;           /* sizeof(pc_train_progress), set by the library */
    int epoch, epochs;            /* 1-based current epoch, planned epochs (when the time
                                     budget sets the length: the estimate, 0 before it) */
    size_t step, steps_per_epoch; /* steps done in this epoch */
    double samples_per_s;         /* config samples per second, this run */
    double eta_s;                 /* to the planned end (an upper bound with early stop) */
    double loss;                  /* running mean train loss of this epoch */
    double valid;                 /* last validation metric, NaN before the first */
    double elapsed_s;
    /* added for issue #17: read them when struct_size covers them */
    long total_steps; /* optimizer steps so far in the run (all epochs; resumed runs count on) */
    double lr;        /* learning rate of the last step (the schedule's; 0 before the first) */
    int validated;    /* 1 on the call that follows a validation round (an epoch's end):
                         loss is that epoch's mean, valid its metric */
} pc_train_progress;

/* Called about 4 times a second during training (never from worker threads). */
typedef void (*pc_train_progress_fn)(void *user, const pc_train_progress *p);

/* The caller sets struct_size = sizeof(pc_train_result) before the call. */
typedef struct pc_train_result {
    size_t struct_size;
    int epochs_run;
    int best_epoch;      /* 1-based */
    double best_metric;  /* on valid */
    double first_loss;   /* mean train loss of epoch 1 */
    double last_loss;    /* mean train loss of the last epoch */
    int interrupted;     /* 1 when stopped early (stop flag, step limit); state kept */
} pc_train_result;

/*
 * log, progress, user and res may be NULL. Returns PC_OK also when
 * interrupted (res->interrupted set; the best model so far is in out_path if
 * an epoch completed). PC_ERR_ARG names the pc_train_opts field at fault.
 * With a dist of several ranks, an error on one rank returns there while the
 * others may wait: end the job with pc_dist_abort (perfcast/dist.h).
 */
PC_API pc_status pc_train_run(const pc_train_opts *opts, pc_train_log_fn log,
                              pc_train_progress_fn progress, void *user, pc_train_result *res,
                              pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_TRAIN_H */
