/*
 * Inference: scoring every configuration of a graph with a model, as
 * `perfcast predict`, `rank` and `eval` and the trainer's validation do.
 *
 * The graph's shared prefix (the GNN up to the config join) runs once and the
 * configurations are scored in chunks over it (GST models: every segment
 * fresh, chunks of 64 configs). Identical configurations are scored once
 * (pc_infer_uniq), so they get identical scores. Models with cross-config
 * attention score whole groups of configs (the last one padded cyclically
 * from config 0) and score every config.
 */
#ifndef PC_MODEL_INFER_H
#define PC_MODEL_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "gnn/gst.h"
#include "gnn/gnn.h"

/* A float buffer that only grows. */
typedef struct pc_fbuf {
    float *p;
    size_t cap;
} pc_fbuf;

int pc_fbuf_grow(pc_fbuf *b, size_t n); /* 0: out of memory */

/*
 * Buffers of a graph's scoring, grown to the largest use. The trainer shares
 * one with its steps, which also use ds (score gradients) and yk (targets).
 */
typedef struct pc_infer_scratch {
    pc_fbuf raw, cfg, s, ds; /* raw and preprocessed config rows, scores, their gradient */
    double *pred, *yk;       /* predicted scores; targets of the sampled configs */
    int64_t *ids;            /* config ids of a step or a chunk */
    size_t icap;             /* capacity of ids, pred and yk */
    /* ensembles and test-time augmentation (pc_infer_all): the members'
       scores (members x configs), one ordering's scores, an ordering, and
       the spread of the members' scores per config */
    double *ens, *pass, *spread;
    int64_t *perm;
    size_t ens_cap, pass_cap, spread_cap, perm_cap;
} pc_infer_scratch;

void pc_infer_scratch_free(pc_infer_scratch *x);
/* ids, pred and yk for n; 0: out of memory */
int pc_infer_scratch_ids(pc_infer_scratch *x, size_t n);
/* Preprocessed config features of configs ids[0..K) of g into x->cfg. */
pc_status pc_infer_gather_cfg(const pc_gnn *m, pc_graph *g, const int64_t *ids, int K,
                              pc_infer_scratch *x, pc_error *err);

/*
 * The distinct configurations of a graph, computed once (done): the first
 * config of each group of identical ones, each config's group; first NULL
 * when every config is scored.
 */
typedef struct pc_infer_uniq {
    int64_t *first, *map, n;
    int done;
} pc_infer_uniq;

void pc_infer_uniq_free(pc_infer_uniq *u);

/*
 * What one scoring of a graph may use and report (pc_infer_all,
 * pc_infer_score_graph); NULL: the defaults (no cap, no progress).
 *  - max_memory: the budget (bytes, PC_MEMORY_AUTO: half the memory
 *    available) of the scoring's own allocations (pc_infer_peak_bytes),
 *    checked by pc_infer_score_graph before anything is allocated;
 *  - chunk_max: configs per chunk at most (0: pc_infer_chunk's), which
 *    pc_infer_score_graph sets from max_memory (pc_infer_fit);
 *  - progress: "configs scored" of the graph's configs after each chunk
 *    (ensemble members and TTA orderings counted as fractions of it).
 */
typedef struct pc_infer_run {
    uint64_t max_memory;
    int64_t chunk_max;
    pc_progress_fn progress;
    void *progress_user;
} pc_infer_run;

/* Chunk size: about `budget` configs, whole attention groups. */
int64_t pc_infer_chunk_of(const pc_gnn *m, int64_t budget);
/* Configs per chunk of full-graph inference on g: a chunk's activations near 256 MiB. */
int64_t pc_infer_chunk(const pc_gnn *m, const pc_gnn_graph *g);

/*
 * The peak bytes pc_infer_score_graph allocates to score every config of g
 * in chunks of (at most) `chunk` configs, from shapes alone, before
 * anything is built: the model input (node features, CSR, pruned copies;
 * GST: the segments), the workspace's pass over a chunk (pc_gnn_pass_bytes,
 * the unpruned graph: an upper bound), and the buffers (ids, scores, config
 * rows of a chunk, the distinct-config grouping, the ensemble's and TTA's
 * per-config scores). Not counted: the loaded graph itself and the caller's
 * score arrays. *input and *act (may be NULL) receive the model input's and
 * the activations' shares. workspaces: how many hold a pass (pc_infer_all:
 * 1; a prepared graph, src/gnn/prepared.c: one per ensemble member).
 */
double pc_infer_peak_bytes(const pc_gnn *m, const pc_graph *g, int64_t chunk, int workspaces,
                           double *input, double *act);
/* The chunk pc_infer_all uses on g without a cap, from g's unpruned shapes. */
int64_t pc_infer_chunk_for(const pc_gnn *m, const pc_graph *g);
/* The smallest chunk: one config (attention models: one group). */
int64_t pc_infer_chunk_min(const pc_gnn *m);
/*
 * The chunk cap within max_memory (pc_infer_run): *chunk_max 0 when the
 * default chunk fits, else the default halved until the peak fits (down to
 * pc_infer_chunk_min); PC_ERR_NOMEM naming the need and the budget when
 * even the smallest chunk does not fit (the caller prefixes g's file).
 */
pc_status pc_infer_fit(const pc_gnn *m, const pc_graph *g, uint64_t max_memory, int workspaces,
                       int64_t *chunk_max, pc_error *err);

/*
 * Scores every config of g into x->pred[0 .. pc_graph_num_configs(g)): d is
 * g's model input (pc_gnn_gdata_build), gst its segments (GST models; NULL
 * otherwise), u its distinct configs (filled on first use). ws is the
 * caller's workspace.
 *
 * Test-time augmentation (m->tta > 1, attention models only; ignored
 * otherwise): each member scores the configs in m->tta orderings, the first
 * as given, ordering p >= 1 the permutation pc_infer_tta_perm(m->tta_seed, p),
 * and a config's score is the mean of its scores over the orderings.
 *
 * A seed ensemble (m->n_members > 0; N = 1 + n_members models): each
 * member's scores of the graph are centered (minus their mean over the
 * graph's configs) and x->pred is the mean over the members of the centered
 * scores, x->spread their standard deviation over the members (population,
 * divided by N). Centering removes the per-graph offset on which the ranking
 * losses (shift-invariant) leave each member free, so the spread measures
 * disagreement about the configs, not about an offset; the mean ranks as the
 * raw mean does. Scales are kept: standardizing each member (also dividing
 * by its standard deviation) was measured worse (bench/RESULTS.md: it
 * amplifies a member that learned little). A plain model (N = 1) keeps its
 * raw scores and x->spread is all 0.
 */
pc_status pc_infer_all(const pc_gnn *m, pc_gnn_ws *ws, pc_graph *g, const pc_gnn_gdata *d,
                       pc_gst_graph *gst, pc_infer_uniq *u, pc_infer_scratch *x,
                       const pc_infer_run *run, pc_error *err);

/*
 * The TTA ordering p (>= 1) of n configs: position i scores config perm[i], a
 * Fisher-Yates shuffle driven by splitmix64 seeded from seed and p (the
 * same for every graph with n configs).
 */
void pc_infer_tta_perm(uint64_t seed, int p, int64_t n, int64_t *perm);

/*
 * Scores every config of g into scores[0 .. pc_graph_num_configs(g)) (and
 * the ensemble's spread into spread when not NULL), building g's model
 * input (and segments) for the call. run (may be NULL: no budget, no
 * progress): its max_memory is checked first (pc_infer_fit), shrinking the
 * chunk when the default one does not fit; its chunk_max is ignored.
 */
pc_status pc_infer_score_graph(const pc_gnn *m, pc_gnn_ws *ws, pc_graph *g, double *scores,
                               double *spread, const pc_infer_run *run, pc_error *err);

#endif /* PC_MODEL_INFER_H */
