/* Training internals: writing checkpoints (safetensors) and shared helpers. */
#ifndef PC_TRAIN_INTERNAL_H
#define PC_TRAIN_INTERNAL_H

#include "gnn/checkpoint.h"
#include "gnn/gnn.h"
#include "perfcast/train.h"

/* Layout collections keep the configurable nodes and their k-hop
   neighbourhood by default (pc_train_opts.prune_hops PC_TRAIN_AUTO); tile graphs are
   not pruned. */
#define PC_TRAIN_DEFAULT_PRUNE_HOPS 1

/* Layout collections join the configurations late by default: the GNN runs
   once per graph and a configuration costs a small MLP over the configurable
   nodes (bench/RESULTS.md, issue #4 ablation: no quality loss under a time
   budget; ranking 1,000 configs of a 10k-node graph in well under 1 s).
   Tile keeps the early join (a tie under a time budget, worse per epoch). */
#define PC_TRAIN_DEFAULT_LAYOUT_JOIN PC_JOIN_LATE

/* Layout collections encode their features with every --encode option by
   default (-1 padding, dimension-size encodings, layout categories): the
   strongest layout toggle of the issue #4 ablation, and measured against the
   PyTorch twin given the same encodings (bench/RESULTS.md). Tile configs hold
   no layouts and the ablation could not separate the row-local encodings on
   tile; the grid steps of the output tile (steps) picked better on mean in
   every paired comparison of issue #15's fourth pass (bench/RESULTS.md), within
   the seed spread on top-1, so tile defaulted to steps. Adding the reduction
   steps of the kernel's last dot/convolution (rsteps) picked better beyond the
   spread of 5 training seeds on held-out kernels (issue #15's ninth pass: top-1
   0.898 +- 0.005 vs 0.923 +- 0.008 of the default) and better on mean, with
   a smaller spread, on the benchmark's kernels, so tile defaults to steps,rsteps. */
#define PC_TRAIN_DEFAULT_LAYOUT_ENCODE PC_ENCODE_ALL
#define PC_TRAIN_DEFAULT_TILE_ENCODE (PC_ENCODE_STEPS | PC_ENCODE_RSTEPS)

/* The run's length without a time budget (pc_train_opts.epochs and patience
   PC_TRAIN_AUTO), as before the budget could set it. */
#define PC_TRAIN_DEFAULT_EPOCHS 20
#define PC_TRAIN_DEFAULT_PATIENCE 5
/* With a time budget and epochs PC_TRAIN_AUTO the budget sets the length:
   epochs stop at this bound only (the CLI's --epochs limit), and an AUTO
   patience is PC_TRAIN_BUDGET_PATIENCE_FRAC of the epochs estimated to fit
   in the budget, at least PC_TRAIN_DEFAULT_PATIENCE: with the learning rate
   annealed over the budget the late epochs still gain, and a validation
   metric over few graphs is noisy (issue #14: 20 epochs / patience 5 under a
   6-minute budget lost half of layout:xla:random's tau), so the run stops
   early only when half of its budget brought nothing. */
#define PC_TRAIN_MAX_EPOCHS 1000000000
#define PC_TRAIN_BUDGET_PATIENCE_FRAC 0.5

/* What a checkpoint records besides the tensors. */
typedef struct pc_ckpt_info {
    int collection;
    const pc_train_opts *train; /* NULL when not known (written as absent) */
    int configs;                /* effective configs per step */
    int best_epoch, epochs_run;
    double best_metric;
    const char *loss;     /* description of the loss, NULL = absent */
    const char *sampling; /* config sampling policy, NULL = absent */
    /* the training data: train and valid graphs and their content identity
       (train_data.c data_identity), written under "train" as "data" when ntrain > 0 */
    size_t ntrain, nvalid;
    uint64_t data_id;
    int dedup;
    /* training state for --resume (NULL for plain models): written as the
       tensors state.adam_m, state.adam_v, state.best (numel each) and
       state.order (norder, int64), and the metadata key "perfcast_state" */
    const float *adam_m, *adam_v, *best;
    const int64_t *order;
    int64_t norder;
    const char *state_json;
    /* a seed ensemble (gnn/checkpoint.h): ensemble > 1 members, m being member
       0; member_params[k] (k >= 1) the parameters of member k (numel each),
       member_metric and member_best_epoch each member's (written under
       "train"); 0 or 1: a plain model, the fields unused */
    int ensemble;
    const float *const *member_params;
    const double *member_metric;
    const int *member_best_epoch;
} pc_ckpt_info;

pc_status pc_ckpt_save(const pc_gnn *m, const pc_ckpt_info *info, const char *path,
                       pc_error *err);

/*
 * Reads the training state of a checkpoint written with adam_m etc. into
 * m (already loaded from the same file by pc_ckpt_load: its Adam moments),
 * best (numel floats) and order (norder int64); *state_json receives a
 * malloc'ed copy of the "perfcast_state" metadata.
 */
pc_status pc_ckpt_load_state(const char *path, pc_gnn *m, float *best, int64_t *order,
                             int64_t norder, char **state_json, pc_error *err);

#endif
