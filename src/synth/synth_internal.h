/*
 * Internal interfaces of the synthetic-data generator (src/synth/):
 *   models.c  - whole programs (convnets, transformers, MLPs) as HLO modules
 *   layout.c  - layout configurations and the layout cost model
 *   tile.c    - fused kernels, tile configurations and the tile cost model
 *   synth.c   - scales, file layout, parallel generation, .npz writing
 *   hset.c    - the set of config hashes both searches keep configs distinct with
 * The formulas are documented in docs/synth.md.
 */
#ifndef PC_SYNTH_INTERNAL_H
#define PC_SYNTH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/synth.h"
#include "synth/hlo.h"
#include "synth/rng.h"

/* ---- models.c ------------------------------------------------------------ */

/*
 * Builds and finishes a whole program of roughly `target_nodes` instructions:
 * transformer-heavy when `nlp`, otherwise a mix of convnets, MLPs and small
 * vision transformers. Writes a model-like name ("resnet_v1_34_b8") to `name`.
 * Returns 0, or -1 if out of memory.
 */
int sy_build_program(sy_module *m, sy_rng *r, int nlp, int64_t target_nodes, char *name,
                     size_t cap);

/* ---- layout.c ------------------------------------------------------------ */

/*
 * Chooses the configurable nodes among the SY_CAND instructions (about
 * `frac` of all nodes, at least one), marks them SY_CONFIG and returns
 * their indices in ascending order through *ids (malloc'd) and *nc.
 */
int sy_choose_config_nodes(sy_module *m, sy_rng *r, double frac, int64_t **ids, int64_t *nc);

/* Fills one config row (nc x 18 floats) as the "random" search draws it:
   per tensor -1, row-major, one move from row-major, or any permutation. */
void sy_layout_config_random(const sy_module *m, const int64_t *ids, int64_t nc, sy_rng *r,
                             float *row);

typedef struct sy_layout_model sy_layout_model;

/*
 * "default" search: c configs as a simulated autotuner logs them, starting
 * from the compiler default (row 0, all -1) and mutating one of the fastest
 * configs measured so far each time. meas[i] is config i's noisy runtime
 * (ns, noise exp(sigma N(0,1))), the measurement that guided the search.
 */
void sy_layout_search_default(const sy_module *m, const int64_t *ids, int64_t nc,
                              sy_layout_model *lm, sy_rng *r, int64_t c, double sigma, float *rows,
                              double *meas);

/* Ranks of the tensors configurable node v exposes, in node_config_feat's
   order (output, operand 0, and for convolutions the kernel); returns how
   many (2 or 3). */
int sy_layout_tensor_ranks(const sy_module *m, int64_t v, int *ranks);

/* Prepares the cost model of a finished module whose configurable nodes are
   `ids` (ascending). Returns NULL if out of memory. */
sy_layout_model *sy_layout_model_new(const sy_module *m, const int64_t *ids, int64_t nc);
void sy_layout_model_free(sy_layout_model *lm);
/* Noise-free runtime in ns of one config row (NULL: every tensor default). */
double sy_layout_cost(sy_layout_model *lm, const float *row);

/* ---- tile.c -------------------------------------------------------------- */

typedef struct sy_tile_graph {
    sy_module mod;  /* one fused computation */
    char model[96]; /* model-like name of the program it came from */
    int64_t nconfigs;
    float *config_feat; /* (nconfigs, 24) */
    double *cost_ns;    /* noise-free runtime of each config */
    int64_t default_config;
    struct tk_spec *spec; /* the kernel's loop nest (tile.c) */
} sy_tile_graph;

/* Builds one fused kernel with `nconfigs` distinct tile configs (fewer if its
   tile space is smaller), one of them the compiler's default. */
int sy_tile_graph_build(sy_tile_graph *g, sy_rng *r, int64_t nconfigs);
void sy_tile_graph_free(sy_tile_graph *g);
/* Iteration dims of a tile graph's kernel (config_feat's kernel bounds, in
   order) and their extents (ext: SY_MAX_RANK entries). */
int sy_tile_graph_dims(const sy_tile_graph *g, int64_t *ext);
/* Noise-free cost (ns) of tiling the kernel with t (one size per iteration
   dim, each in [1, its extent]). */
double sy_tile_graph_cost(const sy_tile_graph *g, const int64_t *t);
/* Cost (ns) of a plain [m,k] x [k,n] matmul kernel tiled (tm, tn, tk);
   exposed for tests and for the worked examples in docs/synth.md. */
double sy_tile_matmul_cost(int64_t m, int64_t n, int64_t k, const int64_t tile[3], int esize);

/* ---- plan.c: what pc_synth_write makes, graph by graph ------------------- */

/* Collections in pc_collection_name order (bits of pc_synth_opts.collections). */
enum { SY_COL_TILE = 0, SY_COL_XLA_RANDOM, SY_COL_XLA_DEFAULT, SY_COL_NLP_RANDOM,
       SY_COL_NLP_DEFAULT, SY_NCOL };

typedef struct sy_scale_cfg {
    int64_t tile_graphs, tile_cfg_lo, tile_cfg_hi;
    int64_t layout_graphs, cfg_lo, cfg_hi;
    int64_t xla_lo, xla_hi, nlp_lo, nlp_hi;
} sy_scale_cfg;

typedef struct sy_plan {
    const pc_synth_opts *o;
    sy_scale_cfg sc;
    int64_t count[2][3]; /* [tile, layout][split] graphs */
    unsigned cols;
} sy_plan;

void sy_plan_make(sy_plan *p, const pc_synth_opts *o);
/* Seed of one graph: independent of everything but its coordinates. */
uint64_t sy_graph_seed(uint64_t seed, int family, int split, int64_t index);
/* A global index per collection family (kind 0 tile, 1 layout), so stems are
   unique across splits. */
int64_t sy_stem_index(const sy_plan *p, int kind, int split, int64_t index);

/* One layout program as pc_synth_write builds it (before its configs). */
typedef struct sy_layout_prog {
    sy_module m;
    int64_t *ids, nc;
    char name[128];
} sy_layout_prog;

/* Builds program `index` of `split` (nlp: the nlp family); 0 or -1 (out of
   memory; *lp is then still safe to free). */
int sy_layout_prog_build(const sy_plan *p, int nlp, int split, int64_t index, sy_layout_prog *lp);
void sy_layout_prog_free(sy_layout_prog *lp);
/* Builds tile graph `index` of `split` with *r seeded as pc_synth_write seeds
   it and left where the graph's build leaves it (the measurements and the
   stem draw from it next). 0 or -1. */
int sy_tile_prog_build(const sy_plan *p, int split, int64_t index, sy_tile_graph *g, sy_rng *r);

/* ---- shared helpers (hset.c) --------------------------------------------- */

/* 64-bit FNV-1a over bytes; used to keep configs distinct. */
static inline uint64_t sy_hash_bytes(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h;
}

/* A tiny open-addressing set of nonzero hashes. */
typedef struct sy_hset {
    uint64_t *slot;
    size_t cap;
} sy_hset;

int sy_hset_init(sy_hset *s, size_t expected);
void sy_hset_free(sy_hset *s);
/* Inserts h; returns 1 if it was new, 0 if present. */
int sy_hset_add(sy_hset *s, uint64_t h);

#endif /* PC_SYNTH_INTERNAL_H */
