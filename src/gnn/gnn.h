/*
 * The learned cost models (internal): feature preprocessing and the GNNs for
 * the tile and layout collections, with hand-written forward and backward
 * passes on top of the NN engine (src/nn/nn.h).
 *
 * One forward call scores K configurations of ONE graph and returns one
 * score per configuration (higher = predicted slower; the ranking losses
 * decide the sign convention). Backward takes dscores (K) and ACCUMULATES
 * into the model's arena gradients (m->params.grad), like every nn op.
 *
 * Network (F = preprocessed node-feature width, E = opcode embedding, H =
 * hidden, D = preprocessed config width, L = layers, n nodes, K configs):
 *
 *   x0   = [x (n,F) || emb[opcode] (n,E)]
 *   base = x0 @ in.w^T + in.b                      (n,H)    config-independent
 *   pre0 = base + injection of config features     (S*n,H)  S segments
 *   h0   = act(pre0)
 *   h_{l+1} = h_l + dropout(act([z || mean_ops(z) || mean_users(z)] @ W_l^T + b_l)),
 *            z = LayerNorm(h_l) (or h_l when opts.layernorm == 0)
 *   readout per config, then head: Linear(R,H) -> act -> Linear(H,1).
 *
 * Joins:
 *  - tile EARLY: the config's features are broadcast onto every node. As
 *    concat-then-linear equals a sum of linears, this is done as
 *    pre0[k] = base + cfg[k] @ cfg.w^T on every node of segment k (S = K).
 *    Readout: pool(h_L[k]).
 *  - tile LATE: the GNN runs once (S = 1) and is pooled once; the head input
 *    of config k is [pool || cfg[k]].
 *  - layout EARLY (default): the projection cfg[k][j] @ cfg.w^T + cfg.b is
 *    scatter-added onto configurable node ids[j] of segment k (S = K); other
 *    nodes get none. Readout: [pool(all nodes of segment k) || pool(configurable
 *    nodes)].
 *  - layout LATE: the GNN runs once (S = 1) without configs; configurable node
 *    j of config k gets u = act(cfg[k][j] @ cfg.w^T + cfg.b + h_L[ids[j]] @
 *    late.w^T). Readout: [pool(all nodes) || pool_j(u[k][j])]. Scoring a config
 *    then costs nc * D * H multiply-adds instead of a GNN pass: the mode for
 *    ranking many configurations of large graphs.
 *
 * What is shared across configurations ("computed once"): x0, the opcode
 * embedding and `base` (the input projection of every node) always; for
 * tile LATE also the whole GNN and pooling. For EARLY and layout the GNN
 * layers see config features from layer 0 on, so they run once per config
 * (K copies of the node tensor); restricting them to the k-hop neighbourhood
 * of configurable nodes is not done. pc_gnn_prefix computes the shared
 * part once and pc_gnn_score_configs then scores any number of config
 * chunks against it (inference).
 *
 * Memory: the workspace holds about (10 + 4L) * H floats per node and
 * segment (layer activations kept for backward), so K * n * H * (10 + 4L)
 * * 4 bytes; large layout graphs need few configs per call. Its buffers,
 * their shapes and sizes are one table, src/gnn/gnn_ws.h.
 */
#ifndef PC_MODEL_H
#define PC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "nn/nn.h"
#include "perfcast/dataset.h"
#include "perfcast/gnn.h"

/* ---- feature preprocessing ------------------------------------------------ */

/*
 * Column transform fitted on training rows: constant columns (max == min on
 * the fit data) are dropped; a kept column whose max |x| exceeds log_threshold
 * is transformed by sign(x) * log1p(|x|); each kept column is then
 * standardized with the mean and std of its (transformed) fit values. A
 * column with std below 1e-6 after transform gets std 1.
 *
 * Everything needed to apply it is four plain arrays of out_dim entries, so a
 * checkpoint can store them: keep (source column, int32, increasing), logt
 * (0/1 as int32), mean and std (float). Functions that fill a pc_prep take
 * one that is zeroed or valid, and free its old arrays.
 */
typedef struct pc_prep {
    int in_dim, out_dim;
    int32_t *keep; /* (out_dim) */
    int32_t *logt; /* (out_dim) */
    float *mean;   /* (out_dim) */
    float *std;    /* (out_dim) */
} pc_prep;

#define PC_PREP_LOG_THRESHOLD 100.0

/* Running statistics for fitting over many graphs (in double). */
typedef struct pc_prep_acc {
    int dim;
    double log_threshold;
    int64_t rows;
    double *min, *max, *maxabs; /* raw values */
    double *s1, *s2;            /* sum and sum of squares, raw */
    double *l1, *l2;            /* same after sign*log1p(|x|) */
} pc_prep_acc;

pc_status pc_prep_acc_init(pc_prep_acc *a, int dim, double log_threshold, pc_error *err);
/* Adds rows (rows, dim) row-major. */
void pc_prep_acc_add(pc_prep_acc *a, const float *x, int64_t rows);
/* Produces the transform; fails with PC_ERR_ARG when no rows were added. */
pc_status pc_prep_acc_finish(const pc_prep_acc *a, pc_prep *out, pc_error *err);
void pc_prep_acc_free(pc_prep_acc *a);

/* The identity on dim columns (nothing dropped, no log, mean 0, std 1). */
pc_status pc_prep_identity(pc_prep *p, int dim, pc_error *err);
/* Copies the four arrays in, checking keep is increasing in [0, in_dim), std > 0. */
pc_status pc_prep_set(pc_prep *p, int in_dim, int out_dim, const int32_t *keep,
                      const int32_t *logt, const float *mean, const float *std, pc_error *err);
pc_status pc_prep_copy(pc_prep *dst, const pc_prep *src, pc_error *err);
/* out (rows, out_dim) from in (rows, in_dim). */
void pc_prep_apply(const pc_prep *p, const float *in, int64_t rows, float *out);
void pc_prep_free(pc_prep *p); /* NULL and zeroed structs are fine */

/* ---- options -------------------------------------------------------------- */

/* pc_pool, pc_join, pc_act: perfcast/gnn.h (a model's join is never PC_JOIN_AUTO). */

typedef struct pc_gnn_opts {
    pc_kind kind;      /* PC_KIND_TILE or PC_KIND_LAYOUT */
    int hidden;        /* H, default 64 */
    int layers;        /* L GNN layers, default 3 (0 allowed) */
    int emb_dim;       /* E opcode embedding, default 16 */
    int num_opcodes;   /* embedding rows, default 256 */
    pc_pool pool;      /* default MEAN */
    pc_join join;      /* default EARLY (see Joins above) */
    pc_act act;        /* default LEAKY_RELU (slope 0.01) */
    int layernorm;     /* pre-norm in each layer, default 1 */
    float dropout;     /* on each layer's update, training only; default 0 */
    /* Graph Segment Training (src/gnn/gst.h): the graph is read as segments
       with the edges between them dropped; the model code itself ignores these */
    /* cross-configuration attention before the head: the K configs of a graph
       attend to each other (src/nn/attention.c); 0 = off (default). Scores
       then depend on the group: inference scores groups of attn_group configs */
    int attn_heads;
    int attn_group;
    int prune_hops;    /* layout: keep configurable nodes + k hops; -1 = off (default) */
    unsigned encode;   /* feature encodings before the preprocessing (model/encode.h bits) */
    int collapse_chains; /* with pruning: collapse linear chains */
    int gst;           /* 0 = whole graph (default) */
    int seg_method;    /* pc_seg_method */
    int seg_size;      /* target nodes per segment */
} pc_gnn_opts;

pc_gnn_opts pc_gnn_opts_default(pc_kind kind);

/* ---- the model ------------------------------------------------------------ */

typedef struct pc_gnn {
    pc_gnn_opts opts;
    int feat_dim, cfg_dim; /* F, D: model input widths (after preprocessing) */
    pc_params params;
    /* stored with the model; identity until set (out_dim must equal F, D) */
    pc_prep node_prep, cfg_prep;
    /* parameter indices */
    int p_emb, p_in_w, p_in_b, p_cfg_w, p_cfg_b; /* p_cfg_b: layout only, else -1 */
    int p_lj_w;                                  /* layout late join only, else -1 */
    int p_at[10]; /* attention: ln_g, ln_b, wq, wk, wv, wo, bq, bk, bv, bo; -1 without */
    int *p_ln_g, *p_ln_b, *p_w, *p_b;            /* (layers) each; ln -1 without norm */
    int p_h1_w, p_h1_b, p_h2_w, p_h2_b;
    /* inference only (src/gnn/infer.h): a seed ensemble's further members, of
       the same architecture and preprocessing, owned (freed with the model),
       whose scores are averaged with this one's; and test-time augmentation
       of attention models: tta orderings of the configs (<= 1: one, as given)
       drawn from tta_seed. All zero for a plain model. */
    struct pc_gnn **members;
    int n_members;
    int tta;
    uint64_t tta_seed;
} pc_gnn;

/*
 * Registers and initializes all parameters from seed (Xavier-uniform
 * weights, zero biases, LayerNorm gamma 1, embedding U(-0.1, 0.1)); the
 * same seed gives bitwise the same model. cfg_dim is 24-ish for tile and
 * 18-ish for layout, after preprocessing.
 */
pc_status pc_gnn_new(const pc_gnn_opts *opts, int feat_dim, int cfg_dim, uint64_t seed,
                       pc_gnn **out, pc_error *err);
void pc_gnn_free(pc_gnn *m);
/*
 * The number of parameters (floats) pc_gnn_new would allocate for these
 * options, without allocating them: what a checkpoint's tensors must hold
 * before its model is built. The same checks as pc_gnn_new (the
 * PC_GNN_MAX_* limits of perfcast/gnn.h).
 */
pc_status pc_gnn_param_count(const pc_gnn_opts *opts, int feat_dim, int cfg_dim, size_t *numel,
                             pc_error *err);
/*
 * The raw widths the model reads, from its preprocessing (the checkpoint's
 * prep.*.keep widths) less the columns its encodings add: node_feat columns
 * and config_feat (tile) or node_config_feat (layout) columns.
 */
void pc_gnn_raw_widths(const pc_gnn *m, int *node, int *cfg);
/* Stores copies of the preprocessing (out dims must match F and D). */
pc_status pc_gnn_set_prep(pc_gnn *m, const pc_prep *node, const pc_prep *cfg,
                            pc_error *err);

/* One graph as the model reads it (borrowed pointers). */
typedef struct pc_gnn_graph {
    int n;                  /* nodes */
    const float *x;         /* (n, F), preprocessed */
    const int32_t *opcode;  /* (n), in [0, num_opcodes) */
    const pc_csr *csr;      /* adjacency, csr->n == n */
    int nc;                 /* layout: configurable nodes, else 0 */
    const int32_t *cfg_ids; /* (nc), distinct, in [0, n) */
} pc_gnn_graph;

/* Owning version built from a dataset graph with the model's node_prep. */
typedef struct pc_gnn_gdata {
    pc_gnn_graph g;
    float *x;
    pc_csr csr;
    /* the graph as read (after pruning when the model prunes): edges (m, 2),
       node_splits (nsplits); borrowed from the pc_graph or owned below */
    const int32_t *edges;
    int64_t m;
    const int64_t *splits;
    int64_t nsplits;
    int32_t n_orig;  /* nodes before pruning */
    int64_t m_orig;  /* edges before pruning */
    int32_t *own_op, *own_cfg, *own_edges;
    int64_t *own_splits;
} pc_gnn_gdata;

/*
 * Checks opcodes and dims, applies node_prep, builds the CSR. A layout model
 * with opts.prune_hops >= 0 keeps only the configurable nodes and their
 * k-hop neighbourhood (src/graph/prune.c; chains collapsed with
 * opts.collapse_chains); configs keep their layout since configurable nodes
 * keep their order.
 */
pc_status pc_gnn_gdata_build(const pc_gnn *m, const pc_graph *graph, pc_gnn_gdata *out,
                               pc_error *err);
void pc_gnn_gdata_free(pc_gnn_gdata *d);
/* Encodes (opts.encode) and applies cfg_prep: rows (rows, raw config dim) -> (rows, D).
   g: the graph the configs belong to (the mismatch and steps encodings read it; may
   be NULL without them); layout rows are then whole configs. */
pc_status pc_gnn_prep_configs(const pc_gnn *m, const pc_graph *g, const float *raw,
                              int64_t rows, float *out, pc_error *err);

/*
 * Activations of the last forward, owned by the caller (one workspace per
 * thread): two allocations planned from the size table of gnn_ws.h, the
 * graph's part (pc_gnn_prefix) and the configs' part, re-planned only when a
 * pass needs more. pc_gnn_forward plans backward's buffers too,
 * pc_gnn_readout once the workspace has run a backward.
 */
typedef struct pc_gnn_ws pc_gnn_ws;
pc_gnn_ws *pc_gnn_ws_new(void);
void pc_gnn_ws_free(pc_gnn_ws *ws);

/*
 * Scores K configs of g: cfg is (K, D) for tile, (K, nc, D) for layout, both
 * preprocessed. dropout_seed NULL = evaluation; else training with
 * opts.dropout, the seed advanced per mask. g and cfg must stay valid until
 * pc_gnn_backward.
 */
pc_status pc_gnn_forward(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                           const float *cfg, int K, uint64_t *dropout_seed, float *scores,
                           pc_error *err);
/*
 * Accumulates into m->params.grad from dscores (K), for the last forward
 * (pc_gnn_forward, or pc_gnn_score_configs after a prefix). All scratch
 * is allocated before any gradient is touched, so a PC_ERR_NOMEM leaves the
 * gradients unchanged.
 */
pc_status pc_gnn_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dscores, pc_error *err);

/*
 * Inference with reuse: pc_gnn_prefix computes the config-independent part
 * of g once (evaluation mode); then each pc_gnn_score_configs call scores a
 * chunk of configs against it, giving the same scores as pc_gnn_forward.
 * A later pc_gnn_forward or pc_gnn_prefix replaces the prefix.
 */
pc_status pc_gnn_prefix(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                          pc_error *err);
pc_status pc_gnn_score_configs(const pc_gnn *m, pc_gnn_ws *ws, const float *cfg, int K,
                                 float *scores, pc_error *err);
/*
 * The model in two parts, for Graph Segment Training (src/gnn/gst.c), which
 * combines the readouts of several segments before the head:
 *  - pc_gnn_readout: like pc_gnn_forward but stops at the head's input
 *    r (K, R), R = pc_gnn_readout_width (layout: [mean over nodes || mean
 *    over configurable nodes], each of pool width); pc_gnn_readout_backward
 *    takes dr (K, R) and accumulates the gradients of everything below the head.
 *  - pc_gnn_head_forward / _backward: the head alone on a given r; backward
 *    accumulates the head's gradients and returns dr (may be NULL). Give
 *    them a workspace of their own (a readout's there is recomputed).
 * pc_gnn_forward == head(readout(...)) exactly.
 */
pc_status pc_gnn_readout(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                           const float *cfg, int K, uint64_t *dropout_seed, float *r,
                           pc_error *err);
pc_status pc_gnn_readout_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dr,
                                    pc_error *err);
/* R: the head input's width (inline: the workspace plan needs it too). */
static inline int pc_gnn_readout_width(const pc_gnn *m) {
    int P = m->opts.pool == PC_POOL_MEANMAX ? 2 * m->opts.hidden : m->opts.hidden;
    if (m->opts.kind == PC_KIND_LAYOUT) return 2 * P;
    return m->opts.join == PC_JOIN_LATE ? P + m->cfg_dim : P;
}
pc_status pc_gnn_head_forward(const pc_gnn *m, pc_gnn_ws *ws, const float *r, int K,
                                float *scores, pc_error *err);
pc_status pc_gnn_head_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dscores, float *dr,
                                 pc_error *err);

/* Workspace bytes one more config adds to a score_configs call (for chunking). */
size_t pc_gnn_bytes_per_config(const pc_gnn *m, const pc_gnn_graph *g);
/*
 * Resident bytes of the workspace buffers one pass over K configs of a graph
 * with n nodes (nc configurable) writes: the forward, plus the backward when
 * train. For memory estimates before training (src/train/train_memory.c).
 */
double pc_gnn_pass_bytes(const pc_gnn *m, int64_t n, int64_t nc, int64_t K, int train);
/*
 * Bytes a fresh workspace maps (src/gnn/gnn_ws.c: both parts, with the
 * planner's 1.5x slack) for pc_gnn_prefix on a graph of n nodes (nc
 * configurable) and then pc_gnn_score_configs of K configs: what inference
 * allocates (src/gnn/infer.c's estimate), more than pc_gnn_pass_bytes' resident share.
 */
double pc_gnn_ws_score_bytes(const pc_gnn *m, int64_t n, int64_t nc, int64_t K);

#endif /* PC_MODEL_H */
