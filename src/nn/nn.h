/*
 * The NN engine: float32 kernels with hand-written forward and backward
 * passes, a parameter arena and optimizers (internal for now).
 *
 * Style follows llm.c: every op is a pair `pc_<op>_forward` /
 * `pc_<op>_backward` over plain contiguous row-major float arrays. Backward
 * passes ACCUMULATE (+=) into the input and parameter gradients, so the
 * caller zeroes gradients once per step and may fan one tensor out to
 * several consumers. A NULL input gradient means "not needed" where noted.
 *
 * Letters used in shapes:
 *   N nodes (rows), C channels, IC / OC linear in / out features (not I:
 *   <complex.h>, pulled in by cblas.h, defines it),
 *   V vocabulary (embedding rows), K gathered rows, M edges, G graphs.
 *
 * Graph segments: the nodes of graph g are rows off[g] .. off[g+1]-1 of a
 * node tensor; off has G+1 non-decreasing entries with off[0] == 0.
 *
 * Edges: edge_index (M, 2), row [u, v] means "u consumes v" (v is an operand
 * of u, u is a user of v), as in TpuGraphs.
 *
 * Determinism: OpenMP loops split independent output rows/columns only, and
 * every sum runs in a fixed order inside one thread, so results are bitwise
 * identical for any thread count.
 */
#ifndef PC_NN_H
#define PC_NN_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/perfcast.h"

/* ---- threads -------------------------------------------------------------- */

/*
 * Thread counts are per call (common/threads.h): every parallel loop here
 * runs on num_threads(pc_threads()), the count of the public call it runs
 * under; nothing sets the process's OpenMP count.
 *
 * GEMMs: perfcast splits a large GEMM over its own OpenMP threads
 * (pc_linear_*) and needs each sgemm call single-threaded. Debian's default
 * OpenBLAS (libopenblas0-pthread) runs its own pthread pool; next to
 * OpenMP's pool the two spin against each other on few cores (4x slower on
 * 2 cores). pc_nn_blas_single sets a pthreads OpenBLAS to one thread: the
 * library's one process-wide effect, as OpenBLAS (0.3.21) has no per-call or
 * per-thread count. It changes nothing when the OpenBLAS loaded is serial
 * (libopenblas0-serial: no effect at all) or already runs one thread, nor
 * with an OpenMP OpenBLAS, whose setter would change the process's OpenMP
 * count and which runs single-threaded inside OpenMP regions by itself.
 * The public calls that run the NN (pc_train_run, pc_eval_run*,
 * pc_predictor_load) call it, as their headers say.
 */
void pc_nn_blas_single(void);

/*
 * Loops over fewer elements than this run on one thread: an OpenMP fork/join
 * costs more than the work (tile graphs have ~15 nodes).
 */
#define PC_PAR_MIN 32768
/* Column sums run over blocks of this many columns (one 64-byte line). */
#define PC_COL_BLOCK 16
/* GEMMs under this many multiply-adds run as one sgemm call. */
#define PC_GEMM_PAR_MIN (1 << 18)

/* ---- linear, residual, concat ------------------------------------------- */

/* out (N,OC) = in (N,IC) @ w^T + b; w (OC,IC) as in llm.c/PyTorch, b (OC) or NULL. */
void pc_linear_forward(float *out, const float *in, const float *w, const float *b, int N, int IC,
                       int OC);
/* dinp (N,IC) may be NULL (first layer); db may be NULL when b was NULL. */
void pc_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *in,
                        const float *w, int N, int IC, int OC);

/* out (n) = a (n) + b (n). */
void pc_residual_forward(float *out, const float *a, const float *b, size_t n);
/* da, db (n) += dout; either may be NULL. */
void pc_residual_backward(float *da, float *db, const float *dout, size_t n);

/* out (N, sum cs) = [ins[0] (N,cs[0]) || ins[1] || ...]. */
void pc_concat_forward(float *out, const float *const *ins, const int *cs, int k, int N);
/* dins[j] (N,cs[j]) += the matching columns of dout; a NULL dins[j] is skipped. */
void pc_concat_backward(float *const *dins, const float *dout, const int *cs, int k, int N);

/* ---- gather / scatter / embedding ---------------------------------------- */

/* out (K,C) = x[idx[k]]; idx values in [0, rows of x). */
void pc_gather_forward(float *out, const float *x, const int32_t *idx, int K, int C);
/* dx[idx[k]] += dout[k]; dx has Nx rows (duplicates in idx add up). */
void pc_gather_backward(float *dx, const float *dout, const int32_t *idx, int K, int Nx, int C);

/* out[idx[k]] += src[k]: places K rows (e.g. configurable-node features) into out (Nout,C). */
void pc_scatter_add_forward(float *out, const float *src, const int32_t *idx, int K, int Nout,
                            int C);
/* dsrc (K,C) += dout[idx[k]]. */
void pc_scatter_add_backward(float *dsrc, const float *dout, const int32_t *idx, int K, int C);

/* out (N,C) = table[ids[n]] with table (V,C); the caller checks ids < V. */
void pc_embedding_forward(float *out, const float *table, const int32_t *ids, int N, int C);
/* dtable (V,C) += dout rows at ids. */
void pc_embedding_backward(float *dtable, const float *dout, const int32_t *ids, int N, int V,
                           int C);

/* ---- activations (elementwise over n values; PReLU over (N,C)) ------------ */

void pc_relu_forward(float *out, const float *in, size_t n);
void pc_relu_backward(float *dinp, const float *dout, const float *in, size_t n);

void pc_leaky_relu_forward(float *out, const float *in, float slope, size_t n);
void pc_leaky_relu_backward(float *dinp, const float *dout, const float *in, float slope,
                            size_t n);

/* GELU, tanh approximation (as GPT-2 / llm.c). */
void pc_gelu_forward(float *out, const float *in, size_t n);
void pc_gelu_backward(float *dinp, const float *dout, const float *in, size_t n);

/* out = x >= 0 ? x : a[c] * x, with a learnable slope a (C) per channel. */
void pc_prelu_forward(float *out, const float *in, const float *a, int N, int C);
/* dinp (N,C) may be NULL; da (C) += sum over rows. */
void pc_prelu_backward(float *dinp, float *da, const float *dout, const float *in, const float *a,
                       int N, int C);

/* ---- dropout ------------------------------------------------------------- */

/*
 * Inverted dropout: out = in * mask / (1 - p), mask[i] in {0, 1}. The mask
 * bit for element i is a hash of (*seed, i), so it does not depend on thread
 * count; *seed is then advanced so the next call draws a fresh mask. p == 0
 * (evaluation) copies in and sets every mask byte to 1. Requires 0 <= p < 1.
 */
void pc_dropout_forward(float *out, uint8_t *mask, const float *in, float p, uint64_t *seed,
                        size_t n);
void pc_dropout_backward(float *dinp, const float *dout, const uint8_t *mask, float p, size_t n);

/* ---- normalization ------------------------------------------------------- */

/*
 * LayerNorm over the C channels of each row:
 * out = (x - mean) * rstd * gamma + beta; caches mean, rstd (N) for backward.
 */
void pc_layernorm_forward(float *out, float *mean, float *rstd, const float *in,
                          const float *gamma, const float *beta, int N, int C, float eps);
void pc_layernorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout,
                           const float *in, const float *gamma, const float *mean,
                           const float *rstd, int N, int C);

/*
 * Per-graph normalization of each channel over the nodes of a segment
 * (GraphNorm, Cai et al. 2021):
 *   c = x - alpha[c] * mean_seg(x),  out = c * rstd * gamma + beta,
 *   rstd = 1 / sqrt(mean_seg(c^2) + eps).
 * alpha == NULL means alpha = 1, which is InstanceNorm over each graph.
 * Caches mean and rstd (G,C). Empty segments produce nothing.
 */
void pc_graphnorm_forward(float *out, float *mean, float *rstd, const float *in,
                          const float *alpha, const float *gamma, const float *beta,
                          const int32_t *off, int G, int C, float eps);
/* dalpha (C) is ignored when alpha is NULL; dinp may be NULL. */
void pc_graphnorm_backward(float *dinp, float *dalpha, float *dgamma, float *dbeta,
                           const float *dout, const float *in, const float *alpha,
                           const float *gamma, const float *mean, const float *rstd,
                           const int32_t *off, int G, int C);

/* ---- message passing over edges ------------------------------------------ */

/*
 * Both adjacency lists of one graph, built once and reused every layer:
 * ops lists, for each node, the operands it consumes (in edge order);
 * users lists, for each node, the nodes that consume it. Each list is the
 * transpose of the other, which is what the backward pass needs to write
 * each input row from a single thread (no atomics).
 */
typedef struct pc_csr {
    int n, m;
    int32_t *ops_ptr;   /* (n+1) */
    int32_t *ops_idx;   /* (m) */
    int32_t *users_ptr; /* (n+1) */
    int32_t *users_idx; /* (m) */
} pc_csr;

typedef enum pc_edge_dir {
    PC_EDGE_FROM_OPERANDS, /* node u aggregates x[v] over its operands v */
    PC_EDGE_FROM_USERS,    /* node v aggregates x[u] over its users u */
    PC_EDGE_DIR_COUNT
} pc_edge_dir;

typedef enum pc_reduce {
    PC_REDUCE_SUM,
    PC_REDUCE_MEAN, /* a node without neighbours (or an empty graph) gets 0 */
    PC_REDUCE_MAX,  /* pooling only */
    PC_REDUCE_COUNT
} pc_reduce;

/* edges (m,2) with endpoints in [0,n); fails with PC_ERR_RANGE otherwise. */
pc_status pc_csr_build(pc_csr *csr, const int32_t *edges, int m, int n, pc_error *err);
void pc_csr_free(pc_csr *csr); /* NULL and zeroed structs are fine */

/* out (N,C) = sum or mean of x (N,C) over the neighbours chosen by dir. */
void pc_edge_aggregate_forward(float *out, const float *x, const pc_csr *csr, pc_edge_dir dir,
                               pc_reduce mode, int C);
/* dx (N,C) += transpose of the forward applied to dout (N,C). */
void pc_edge_aggregate_backward(float *dx, const float *dout, const pc_csr *csr, pc_edge_dir dir,
                                pc_reduce mode, int C);

/* ---- per-graph pooling ---------------------------------------------------- */

/*
 * out (G,C) = sum / mean / max of x over the nodes of each segment. argmax
 * (G,C) holds the winning row for MAX (first one on ties, -1 for an empty
 * segment whose output is 0) and may be NULL for SUM and MEAN.
 */
void pc_pool_forward(float *out, int32_t *argmax, const float *x, const int32_t *off, int G,
                     int C, pc_reduce mode);
void pc_pool_backward(float *dx, const float *dout, const int32_t *argmax, const int32_t *off,
                      int G, int C, pc_reduce mode);

/* ---- parameter arena ------------------------------------------------------ */

#define PC_PARAM_NAME_MAX 64
#define PC_PARAM_MAX_DIMS 4

typedef struct pc_param_info {
    char name[PC_PARAM_NAME_MAX];
    int ndim;
    int shape[PC_PARAM_MAX_DIMS];
    size_t offset, numel; /* into the arena blocks, in floats */
} pc_param_info;

/*
 * All parameters live in one float block, their gradients in a second and
 * the Adam moments in two more, all with the same layout; so zero_grad,
 * clipping and the optimizer step are flat loops. Register every tensor
 * first, then allocate once (llm.c's parameter-size table).
 */
typedef struct pc_params {
    pc_param_info *info;
    int count, cap;
    int *slot, nslot; /* open-addressing index of info by name (-1 empty; nslot a power of 2) */
    size_t numel;
    float *data, *grad, *m, *v; /* (numel) each, NULL until alloc */
} pc_params;

void pc_params_init(pc_params *p);
/* Registers a tensor; *index (may be NULL) receives its index. Fails after alloc. */
pc_status pc_params_add(pc_params *p, const char *name, int ndim, const int *shape, int *index,
                        pc_error *err);
/* Allocates the four blocks, all zeroed. */
pc_status pc_params_alloc(pc_params *p, pc_error *err);
void pc_params_free(pc_params *p);
int pc_params_find(const pc_params *p, const char *name); /* -1 if absent; O(1) by hash */
float *pc_params_data(const pc_params *p, int index);
float *pc_params_grad(const pc_params *p, int index);
void pc_params_zero_grad(pc_params *p);

/* ---- optimizers and schedule --------------------------------------------- */

/*
 * Scales grad (n) so its L2 norm is at most max_norm; returns the norm
 * before clipping (summed in double).
 */
double pc_clip_grad_norm(float *grad, size_t n, float max_norm);

typedef struct pc_adam_cfg {
    float beta1, beta2, eps;
    float weight_decay;
    int decoupled; /* 0: Adam, decay added to the gradient (L2); 1: AdamW */
} pc_adam_cfg;

pc_adam_cfg pc_adam_cfg_default(void); /* 0.9, 0.999, 1e-8, no decay, Adam */

/* One step at t (1-based, for bias correction) with learning rate lr. */
void pc_adam_step(float *param, const float *grad, float *m, float *v, size_t n,
                  const pc_adam_cfg *cfg, long t, float lr);
/* pc_adam_step over the whole arena. */
void pc_params_adam_step(pc_params *p, const pc_adam_cfg *cfg, long t, float lr);

/*
 * Learning rate at step (0-based): linear warmup base*(step+1)/warmup over
 * the first warmup steps, then cosine decay from base to min_lr reached at
 * step == total, and min_lr afterwards.
 */
float pc_lr_cosine(long step, float base_lr, float min_lr, long warmup, long total);

/* ==== losses (src/nn/loss.c) ============================================== */

/*
 * Ranking losses for the learned cost model, one graph at a time or over a
 * batch of G graphs with K configurations each.
 *
 * Score convention (as in perfcast/metrics.h): the model outputs one
 * runtime-like score per configuration, LOWER score = predicted FASTER.
 * A loss takes scores s[K] (float) and true runtimes y[K] (double; any
 * positive scale, ties allowed), returns the scalar loss L (summed in
 * double, NOT multiplied by weight) and, when ds is not NULL, ACCUMULATES
 * ds[k] += weight * dL/ds[k]. weight plays the role of a backward pass's
 * dout (pass 1 for a plain loss). With ds == NULL nothing is written
 * (evaluation).
 *
 * Degenerate lists are well defined: K <= 1, or no pair with different
 * runtimes, gives L = 0 and a zero gradient (nothing added). Scores must be
 * finite. Invalid parameters (temperature <= 0 or not finite, negative or
 * all-zero combo weights) or a failed scratch allocation return NaN and
 * leave ds untouched (a batch call that fails on allocation may already
 * have updated the rows of earlier graphs).
 *
 * temperature T > 0 divides the scores before the loss (z = s / T, as
 * TF-Ranking's `temperature`; TpuGraphs tile baselines use T = 10). T = 1
 * means no scaling.
 *
 * Batch wrappers take contiguous (G,K) arrays s, y, ds (row g = graph g),
 * return the mean over the G graphs of the per-graph losses and add
 * weight / G * dL_g/ds into each row; G <= 0 returns 0.
 */

/*
 * Pairwise hinge: over the pairs P = {(i,j) : y_i < y_j} (i truly faster;
 * pairs with tied runtimes are skipped),
 *   L = 1/|P| * sum_P max(0, margin - (s_j - s_i) / T),
 * i.e. the slower config's score should exceed the faster one's by at least
 * margin (after scaling). O(K^2). GST: margin 0.1; 1st place Kaggle: 1.
 * At the kink (margin == (s_j - s_i)/T exactly) the pair counts as inactive.
 */
double pc_loss_pairwise_hinge(float *ds, const float *s, const double *y, int K, float margin,
                              float temperature, float weight);
double pc_loss_pairwise_hinge_batch(float *ds, const float *s, const double *y, int G, int K,
                                    float margin, float temperature, float weight);

/*
 * Margin loss over close pairs (2nd place TpuGraphs' difference-matrix
 * margin loss, restricted to a band): sort the configs by runtime and give
 * each distinct runtime its dense rank r (tied configs share one; NaN
 * runtimes take no part). Over the pairs C = {(i,j) : 1 <= r_j - r_i <= window}
 * (i truly faster, at most `window` distinct runtimes apart),
 *   L = 1/|C| * sum_C max(0, margin - (s_j - s_i) / T).
 * Unlike the all-pairs hinge, far pairs (easy, and the bulk of the K^2) do
 * not dilute the mean: the gradient goes to neighbours in the true order,
 * the pairs a model that has the coarse order still gets wrong; window >=
 * the number of distinct runtimes gives the hinge back (up to rounding). O(K log K + |C|);
 * allocates O(K) scratch per call. window < 1 returns NaN.
 */
double pc_loss_close_margin(float *ds, const float *s, const double *y, int K, float margin,
                            float temperature, int window, float weight);

/*
 * ListMLE (Plackett-Luce negative log-likelihood of the true order): sort
 * the configs by runtime, fastest first, giving pi(0..K-1); ties in y are
 * broken deterministically by index (stable: the lower index comes first;
 * NaN runtimes sort last). With logits z_k = -s_k / T (faster = higher),
 *   L = sum_{k=0}^{K-1} [ logsumexp_{m>=k} z_pi(m) - z_pi(k) ],
 * summed over positions, not averaged (as TF-Ranking's ListMLELoss per
 * list). The suffix logsumexps are built from the tail with a stable
 * log-add-exp and the gradient uses only exp of non-positive numbers, so
 * score magnitudes of 1e4 and more stay finite. O(K log K); allocates
 * O(K) scratch per call.
 */
double pc_loss_listmle(float *ds, const float *s, const double *y, int K, float temperature,
                       float weight);
double pc_loss_listmle_batch(float *ds, const float *s, const double *y, int G, int K,
                             float temperature, float weight);

/*
 * MSE against the per-graph mean-normalized runtime:
 *   t_k = y_k / mean(y),  L = 1/K * sum_k (s_k - t_k)^2.
 * t is scale-free (the targets of a graph average 1, so a score of 1 means
 * "average speed for this graph") and needs no statistics from other
 * graphs. When mean(y) is not both finite and > 0 (e.g. all runtimes 0,
 * as in test splits) the targets are t = 0. No temperature: the scores are
 * compared as they are. K <= 0 gives 0.
 */
double pc_loss_mse_norm(float *ds, const float *s, const double *y, int K, float weight);
double pc_loss_mse_norm_batch(float *ds, const float *s, const double *y, int G, int K,
                              float weight);

/*
 * Weighted combination, weights renormalized to sum to 1 like the TpuGraphs
 * baseline's "ListMLELoss:1,MSE:0.02":
 *   L = (w_l * L_listmle + w_h * L_hinge + w_m * L_mse + w_c * L_margin)
 *       / (w_l + w_h + w_m + w_c).
 * Weights must be >= 0 and finite with a positive sum; a component with
 * weight 0 is not evaluated (its part is reported as 0). The gradients are
 * added in the order listmle, hinge, mse, margin.
 */
typedef struct pc_loss_cfg {
    float w_listmle, w_hinge, w_mse;
    float listmle_temperature;
    float hinge_margin, hinge_temperature;
    float w_margin; /* pc_loss_close_margin */
    float margin_value, margin_temperature;
    int margin_window;
} pc_loss_cfg;

/* TpuGraphs tile default: ListMLE 1, hinge 0, MSE 0.02; T = 10 for both
 * ranking losses; hinge margin 1; margin loss weight 0 (margin 0.1, T 1,
 * window 2). */
pc_loss_cfg pc_loss_cfg_default(void);

/* The combination's components, in the order of parts[] below. */
#define PC_LOSS_PARTS 4
/* parts (may be NULL) receives the unweighted {L_listmle, L_hinge, L_mse, L_margin}. */
double pc_loss_combo(float *ds, const float *s, const double *y, int K, const pc_loss_cfg *cfg,
                     float weight, double parts[PC_LOSS_PARTS]);
/* parts (may be NULL) receives the graph means of the components. */
double pc_loss_combo_batch(float *ds, const float *s, const double *y, int G, int K,
                           const pc_loss_cfg *cfg, float weight, double parts[PC_LOSS_PARTS]);

/* ==== end of losses ======================================================== */

/* ==== cross-configuration attention (src/nn/attention.c) ================== */

/*
 * Self-attention over the configuration axis: lets the model compare the K
 * configurations of one graph. x is (G,K,C): G groups (graphs of a batch)
 * of K rows each (one embedding per configuration); attention runs inside
 * each group only, so groups never see each other and K is the same for
 * every group. With h = heads, d = C / h (C % heads == 0):
 *
 *   y   = LN(x) (pre-LayerNorm with ln_g, ln_b over C, eps) or y = x
 *   Q   = y Wq^T + bq,  Kt = y Wk^T + bk,  V = y Wv^T + bv        (G*K, C)
 *   A   = softmax_rows(Q_h Kt_h^T / sqrt(d))   per group and head (K, K)
 *   ctx = A V_h            (heads concatenated along C)            (G*K, C)
 *   out = x + ctx Wo^T + bo                                        (G*K, C)
 *
 * Q_h is columns h*d .. h*d+d-1 of Q (PyTorch nn.MultiheadAttention layout:
 * Wq/Wk/Wv are the three C-row blocks of in_proj_weight). W* are (C,C) as in
 * pc_linear (out features, in features). The softmax subtracts the row max.
 * bk is accepted for symmetry but cancels in the softmax (its gradient is
 * ~0). K == 1 gives A = 1 exactly: out = x + V Wo^T + bo.
 */
typedef struct pc_cfg_attn_params {
    const float *ln_g, *ln_b;       /* (C) each, both or neither; NULL: no pre-LayerNorm */
    const float *wq, *wk, *wv, *wo; /* (C,C) each, required */
    const float *bq, *bk, *bv, *bo; /* (C) each, or NULL: no bias */
} pc_cfg_attn_params;

/* Gradients, ACCUMULATED (+=). Each is NULL exactly when its parameter is. */
typedef struct pc_cfg_attn_grads {
    float *ln_g, *ln_b;
    float *wq, *wk, *wv, *wo;
    float *bq, *bk, *bv, *bo;
} pc_cfg_attn_grads;

/*
 * Floats of the cache that forward fills and backward reads (R = G*K rows):
 *   layernorm ? R*C (y) + 2*R (mean, rstd) : 0,  then q, k, v (R*C each),
 *   att (G*heads*K*K, the softmax rows, group-major then head), ctx (R*C).
 * pc_cfg_attention_att() points at att inside a cache.
 */
size_t pc_cfg_attention_cache_size(int G, int K, int C, int heads, int layernorm);
const float *pc_cfg_attention_att(const float *cache, int G, int K, int C, int layernorm);
/* Floats of backward's scratch: 4*R*C + G*heads*K*K, plus R*C with layernorm. */
size_t pc_cfg_attention_scratch_size(int G, int K, int C, int heads, int layernorm);

/*
 * out (G*K,C) must not alias x. cache: pc_cfg_attention_cache_size floats.
 * eps is the LayerNorm epsilon (ignored without LayerNorm). No allocation.
 */
void pc_cfg_attention_forward(float *out, float *cache, const float *x,
                              const pc_cfg_attn_params *p, int G, int K, int C, int heads,
                              float eps);
/*
 * dx (G*K,C) += dL/dx (required), parameter gradients into g. cache, x and p
 * as in forward; scratch: pc_cfg_attention_scratch_size floats (contents
 * need not be initialised, overwritten). No allocation.
 */
void pc_cfg_attention_backward(float *dx, const pc_cfg_attn_grads *g, const float *dout,
                               const float *x, const float *cache, const pc_cfg_attn_params *p,
                               int G, int K, int C, int heads, float *scratch);

/* ==== end of cross-configuration attention ================================= */

#endif /* PC_NN_H */
