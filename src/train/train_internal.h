/*
 * The trainer's own internals, shared by the files of src/train/ that make up
 * `perfcast train`; nothing outside src/train/ includes it
 * (train.h is the module's header for the rest of the library).
 *
 *   train_opts.c    options: defaults, checks, the loss and the model options
 *   train_data.c    loading the splits over the lanes, preprocessing fit, the
 *                   targets, dedup, the epoch's order of graphs and the configs
 *                   of a step
 *   train_loop.c    setup, the optimizer step and the epoch loop (pc_train_run)
 *   train_eval.c    validation at an epoch's end
 *   train_state.c   the resume state (MODEL.state) and the best model's writes
 *   train_memory.c  the peak-memory estimate and the refusal above the limit
 *   ensemble.c      seed ensembles: the next member's fresh model and state,
 *                   the members kept, their ensemble validated and written
 *   checkpoint.c    writing safetensors checkpoints, reading the resume state
 *
 * Scoring every config of a graph (inference), evaluation (and pc_eval_run),
 * the loaded graphs of a split, the checkpoint reader and GST are the model's:
 * src/gnn/infer.h, eval.h, split_graphs.h, checkpoint.h, gst.h.
 *
 * Internal functions shared between these files are named pc_tr_*.
 */
#ifndef PC_TRAIN_TRAINER_INTERNAL_H
#define PC_TRAIN_TRAINER_INTERNAL_H

#include <stdint.h>

#include "common/util.h"
#include "dataset/config_pack.h"
#include "gnn/gst.h"
#include "gnn/infer.h"
#include "gnn/split_graphs.h"
#include "perfcast/dataset.h"
#include "perfcast/dist.h"
#include "perfcast/metrics.h"
#include "train/train.h"

/* ---- loaded graphs: src/gnn/split_graphs.h; training's own per graph (train_data.c) */

/* What a train graph (t->tr.v[i]) adds for training: t->cand[i]. */
typedef struct tcand {
    double *y;         /* (c) training target: rt / norm or rt */
    int64_t *by_speed; /* (ncand) config ids by y, fastest first (sampling "fast" only) */
    int64_t *cand;     /* (ncand) training candidates: one config per duplicate group (--dedup);
                          NULL: every config */
    int64_t ncand;     /* candidates (c without --dedup) */
} tcand;

/* ---- scratch: the inference buffers (src/gnn/infer.h), shared by the steps */

typedef pc_fbuf fbuf;
typedef pc_infer_scratch scratch;

/* ---- the trainer ---------------------------------------------------------- */

/*
 * Data-parallel topology: W ranks (this one is R), B graphs per rank and step,
 * G = W * B lanes. Train graph i belongs to lane i % G; this rank trains lanes
 * [R*B, R*B + B) and validates the graphs i % W == R. One process: W 1, R 0.
 */
typedef struct tr_topo {
    const pc_dist *dist;
    int W, R, B;
    size_t G;
    size_t S;          /* steps per epoch: the length of lane 0 (the longest) */
    size_t *lane_off;  /* lane l's graphs are order[lane_off[l] .. lane_off[l + 1]) */
    int64_t *local_of; /* train graph index -> this rank's tr.v index (-1: another rank's) */
} tr_topo;

/*
 * What MODEL.state holds besides the parameters and AdamW moments: an
 * interrupted run continues from it with the same bytes as an uninterrupted
 * one (train_state.c writes the scalars as JSON).
 */
typedef struct tr_state {
    uint64_t rng;    /* draws the epochs' orders (a step's RNG is derived, step_rng) */
    long step;       /* optimizer steps so far: AdamW's t and the schedule's position */
    int epoch;       /* the epoch under way (1-based) */
    int best_epoch;  /* 0: no epoch validated yet */
    int since;       /* epochs since the best (patience) */
    int epochs_done; /* epochs validated (the checkpoint's epochs_run) */
    size_t oi;       /* next position in order[] within the epoch; S: no epoch started */
    double best_metric, first_loss, last_valid;
    double lsum;     /* loss sum and graphs of the epoch so far */
    size_t lcount;
    double last_loss; /* the last epoch's mean loss (reported, not saved) */
    /* when the time budget sets the length (trainer.budget_len): the epochs estimated to
       fit and the schedule's last step from them, 0 = no estimate yet (saved) */
    int epochs_est;
    long total_est;
    float *best;      /* parameters of the best epoch (numel) */
    int64_t *order;   /* every lane's permutation of its graphs (ntrain) */
} tr_state;

/* This run's clock and counters (not resumed: rates and ETA of this process). */
typedef struct tr_clock {
    double t0;           /* start of the run (the time budget counts from it) */
    double t_steps0;     /* start of the steps, after loading */
    double last_epoch_s; /* duration of the last epoch's steps and validation */
    double last_valid_s; /* duration of the last validation */
    double last_progress;
    long steps_run;
    size_t samples_run;
    int estimates; /* budget estimates made by this run (budget_estimate) */
} tr_clock;

/*
 * A seed ensemble (pc_train_opts.ensemble > 1, ensemble.c): member k trains
 * with seed seed0 + k (t->o.seed while it trains) from a fresh model and
 * state on the same loaded data; its best parameters are kept here. Members
 * write nothing (no best model, no resume state) until the ensemble's
 * checkpoint at the end.
 */
typedef struct tr_ens {
    int n;              /* members asked for (0: no ensemble) */
    int kept;           /* members trained and kept */
    uint64_t seed0;     /* pc_train_opts.seed as given */
    double budget0, t0; /* pc_train_opts.time_budget as given, start of the run */
    float **params;     /* (n) each kept member's best parameters (numel) */
    double *metric;     /* (n) each kept member's best valid metric */
    int *best_epoch, *epochs_run;
    double first_loss;  /* member 0's */
} tr_ens;

/* Everything one pc_train_run needs. */
typedef struct trainer {
    /* options, checked and completed (train_opts.c) */
    pc_train_opts o;
    int coll;
    pc_kind kind;
    int fast;             /* sampling "fast" */
    pc_loss_cfg lc;       /* pc_train_opts.loss resolved */
    char loss_desc[256];  /* its description in the checkpoint and the state */
    pc_adam_cfg ac;
    long total, warmup;   /* the cosine schedule's steps */
    /* the run's length: epochs_max (o.epochs, or unbounded when budget_len) and patience
       (o.patience, or re-estimated after each epoch when budget_len and AUTO) */
    int budget_len; /* o.time_budget > 0 and o.epochs PC_TRAIN_AUTO: the budget sets it */
    int epochs_max, patience;
    char state_path[4096];/* out_path + ".state" */
    char lock_path[4096]; /* "<dir>/.<base>.lock", held by rank 0 for the run (lock_fd) */
    int lock_fd;
    /* rank 0's log and progress callbacks (NULL on the other ranks) */
    pc_train_log_fn log;
    pc_train_progress_fn progress;
    void *user;
    /* data: this rank's graphs, and the splits' sizes over every rank */
    pc_split_graphs tr, va;
    tcand *cand; /* (tr.n) */
    size_t ntrain, nvalid;
    uint64_t data_id; /* the train and valid files by content: names and sizes (pc_tr_load_data) */
    /* the model, its workspaces and the step's buffers */
    pc_gnn *m;
    pc_gnn_ws *ws;
    pc_gst_ctx *gx;   /* GST training context (GST models only) */
    pc_gst_opts gsto; /* GST training options */
    scratch x;
    int64_t *perm;    /* candidate configs being sampled (largest c) */
    tr_topo topo;
    tr_state state;
    tr_clock clock;
    tr_ens ens;
} trainer;

/* train_opts.c: checks t->o and fills coll, kind, fast, lc, loss_desc, state_path,
   budget_len, epochs_max, patience. */
pc_status pc_tr_check_opts(trainer *t, pc_error *err);
/* The model options t->o asks for. */
pc_status pc_tr_model_opts(const trainer *t, pc_gnn_opts *mo, pc_error *err);
/* Refuses attention heads that do not divide the head's input with these model options and
   cfg_dim config features after preprocessing (-1: not known yet, checked when it matters). */
pc_status pc_tr_check_attention(const pc_gnn_opts *mo, int cfg_dim, pc_error *err);

/* train_data.c */
/* Graphs in lane l (global indices l, l + G, ...). */
size_t pc_tr_lane_len(const trainer *t, size_t l);
/* Opens the dataset, loads this rank's train and valid graphs, lays out the lanes. */
pc_status pc_tr_load_data(trainer *t, pc_error *err);
/* Preprocessing fitted on the train graphs of every rank. */
pc_status pc_tr_fit_prep(const pc_split_graphs *s, pc_kind kind, unsigned encode,
                         const pc_dist *dist, pc_prep *np, pc_prep *cp, pc_error *err);
/* The train graphs' targets, --dedup's candidates and "fast" sampling's order. */
pc_status pc_tr_prepare_candidates(trainer *t, pc_error *err);
void pc_tr_candidates_free(trainer *t);
/* A new epoch: every lane's graphs in a fresh order (the same on every rank). */
void pc_tr_shuffle(trainer *t);
/* The RNG of one graph of a step. */
uint64_t pc_tr_step_rng(const trainer *t, size_t lane, size_t s);
/* Chooses the configs of train graph g for a step into x.ids / x.yk; returns their count. */
int pc_tr_sample_configs(trainer *t, const tcand *g, uint64_t *rng);

/* train_loop.c */
double pc_tr_now(void);
void pc_tr_logf(pc_train_log_fn log, void *user, const char *fmt, ...) PC_PRINTF(3, 4);

/* train_eval.c */
/* Validates, keeps the best parameters (and writes them), counts patience. */
pc_status pc_tr_end_epoch(trainer *t, pc_error *err);

/* train_state.c */
/* The starting state of a fresh run. */
void pc_tr_state_init(trainer *t);
/* The options that must not change across --resume, "key=value|..." (train_state.c). */
void pc_tr_fixed_string(const trainer *t, char *s, size_t cap);
/*
 * Under MPI, before the first collective: every rank must run the same
 * options on the same data (pc_tr_fixed_string, the architecture, the run's
 * length and the data's content identity: ds's train and valid files by name
 * and size); a difference fails on every rank,
 * rank 0's message naming the first key that differs and the rank
 * (train_agree.c).
 */
pc_status pc_tr_agree(const trainer *t, const pc_dataset *ds, pc_error *err);
pc_status pc_tr_save_state(trainer *t, pc_error *err);
/* What the checkpoint of this run records besides the tensors. */
pc_ckpt_info pc_tr_ckpt_info(const trainer *t);
/* Writes the best parameters as the model, keeping the current ones. */
pc_status pc_tr_save_best(trainer *t, pc_error *err);
/* Restores the model and the state from out_path.state (after the data is loaded). */
pc_status pc_tr_resume(trainer *t, pc_error *err);

/* train_memory.c: logs the estimate; refuses above the limit. */
pc_status pc_tr_check_memory(trainer *t, pc_error *err);

/* ensemble.c (pc_train_opts.ensemble > 1; t->ens.n 0 otherwise) */
/* Before member 0 (after setup): the members' store, member 0's share of the budget. */
pc_status pc_tr_ens_begin(trainer *t, pc_error *err);
/*
 * Member k >= 1: a fresh model (seed seed0 + k) and state, its share of the
 * budget. *go = 0 (PC_OK) when the budget left is spent: no more members.
 */
pc_status pc_tr_ens_next(trainer *t, int k, int *go, pc_error *err);
/* Keeps the member just trained (its best parameters and metric), if it validated. */
pc_status pc_tr_ens_keep(trainer *t, int k, pc_error *err);
/* The kept members as one model: validated (logged) and written; t->state gets its metric. */
pc_status pc_tr_ens_finish(trainer *t, pc_error *err);
void pc_tr_ens_free(trainer *t);

#endif
