/*
 * Searching a graph's configuration space for faster configurations
 * (`perfcast tune`): the space of valid configurations of a TpuGraphs graph,
 * a search over it driven by any scorer (a trained model, a simulator, a
 * test's toy function), and writing the proposals as a TpuGraphs .npz.
 */
#ifndef PERFCAST_TUNE_H
#define PERFCAST_TUNE_H

#include "perfcast/dataset.h"
#include "perfcast/perfcast.h"
#include "perfcast/predict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the space ------------------------------------------------------------ */

/*
 * The configurations of one graph that are valid by construction, learned
 * from the graph and the configurations it holds (those of the dataset's
 * autotuner, or a program's enumerated candidates):
 *   layout: per configurable node, each tensor (output, operand 0, kernel)
 *     that some config of the file sets gets either -1 (the compiler's
 *     choice) or a minor_to_major order of as many distinct dims as the
 *     file's configs give it (a full permutation, or the 2-dim prefix of
 *     convolutions in the public data). The output's rank comes from its
 *     node_feat shape and must agree with the file's configs (PC_ERR_FORMAT
 *     otherwise); an operand's rank from the full permutations the configs
 *     give, else from its producers' shapes;
 *   tile: the bounds the file's configs use (kernel, output, input), a bound
 *     always equal to an earlier one tied to it; each free bound takes every
 *     size the file's configs give it, combined anew, and with
 *     pc_tune_opts.tile_new_sizes also the sizes synth's autotuner rule gives
 *     below its largest (multiples of 128, powers of two, the whole extent).
 *     Unresolved (PC_TUNE_AUTO) it is seen sizes only: a model ranks sizes
 *     it never saw well only when trained with the rsteps encoding
 *     (pc_tune_opts_for_model; bench/RESULTS.md, issue #15).
 * A graph without configs, without configurable nodes, or whose space holds
 * one configuration: PC_ERR_INVALID saying so.
 */
typedef struct pc_tune_space pc_tune_space;

struct pc_tune_opts;
/* opts NULL: the defaults (only tile_new_sizes is read). */
PC_API pc_status pc_tune_space_from_graph(pc_graph *g, const struct pc_tune_opts *opts,
                                          pc_tune_space **out, pc_error *err);
PC_API void pc_tune_space_free(pc_tune_space *s); /* NULL ok */
PC_API pc_kind pc_tune_space_kind(const pc_tune_space *s);
/* Floats per configuration: 24 (tile) or config nodes x 18 (layout). */
PC_API int64_t pc_tune_space_width(const pc_tune_space *s);
/* Choices searched: configurable tensors (layout) or free tile bounds. */
PC_API int64_t pc_tune_space_vars(const pc_tune_space *s);
/* log10 of the number of configurations in the space. */
PC_API double pc_tune_space_log10_size(const pc_tune_space *s);
/* The compiler's default (layout: all -1) into row; 0 if the space does not
   know it (tile files do not say which config is the default). */
PC_API int pc_tune_space_default(const pc_tune_space *s, float *row);
/* 1 if row (width floats) is a configuration of the space, else 0 and, when
   why is not NULL, the reason in it. */
PC_API int pc_tune_space_contains(const pc_tune_space *s, const float *row, pc_error *why);

/* ---- the search ---------------------------------------------------------- */

/*
 * A scorer: scores[i] for configs[i] (n rows of pc_tune_space_width
 * floats), lower = faster. Called with up to pc_tune_opts.batch rows.
 */
typedef pc_status (*pc_tune_score_fn)(void *ctx, const float *configs, int64_t n, double *scores,
                                      pc_error *err);

typedef enum pc_tune_stop {
    PC_TUNE_STOP_BUDGET = 0, /* budget_s ran out */
    PC_TUNE_STOP_CONVERGED,  /* patience rounds without a better configuration */
    PC_TUNE_STOP_EXHAUSTED,  /* every configuration of the space was scored */
    PC_TUNE_STOP_MAX_SCORED, /* max_scored candidates were scored */
    PC_TUNE_STOP_COUNT
} pc_tune_stop;

PC_API const char *pc_tune_stop_name(pc_tune_stop s); /* "budget", ...; NULL outside */
PC_API pc_status pc_tune_stop_parse(const char *name, pc_tune_stop *out);

/*
 * The search's best so far (pc_tune_opts.best): after each batch is scored and
 * kept, `best` is the score of the best proposal the search holds (what
 * pc_tune_result.scores[0] would be if it stopped now; +INFINITY while it holds
 * none; the graph's configs count only where they are proposals, inside the
 * trust region), `scored` the candidates scored so far (pc_tune_result.scored).
 */
typedef void (*pc_tune_best_fn)(void *user, double best, int64_t scored);

typedef struct pc_tune_opts {
    size_t struct_size; /* sizeof(pc_tune_opts), set by pc_tune_opts_default() */
    int top_k;          /* proposals kept, best first; default 5 */
    double budget_s;    /* wall-clock budget of the search (> 0); default 10 */
    uint64_t seed;      /* default 1 */
    int64_t batch;      /* candidates per scorer call; default 256 */
    int64_t max_scored; /* stop after this many candidates; default 0 = no limit */
    int patience;       /* rounds without a better best before stopping; default 40 */
    int64_t max_inputs; /* the graph's configs scored as starting points; default 4096 */
    /* 1: tile spaces also hold sizes no config of the file uses; 0: not; default
       PC_TUNE_AUTO (pc_tune_opts_for_model decides; unresolved: 0) */
    int tile_new_sizes;
    /*
     * How far the model is trusted (bench/RESULTS.md, issue #15, "the policy"):
     *  risk: a model scorer (pc_tune_model) ranks layout candidates by the
     *    conservative score
     *    mean + risk * spread, the spread being a seed ensemble's disagreement
     *    about the candidate's difference from the reference (layout: the
     *    compiler default, whose spread is 0). A layout proposal then ranks
     *    above the default only when its predicted gain exceeds risk spreads.
     *    0 ranks by the mean; a single model's spread is 0. Default
     *    PC_TUNE_DEFAULT_RISK;
     *  max_changes: the trust region of spaces that know their default
     *    (layout): every candidate differs from the default in at most this
     *    many searched tensors, and the graph's configs farther away are
     *    scored but not used as starting points. 0 = no limit. Default
     *    PC_TUNE_DEFAULT_MAX_CHANGES;
     *  tile_max_changes: the trust region of tile spaces: every candidate
     *    differs from the nearest of the graph's configs in at most this many
     *    free bounds (0: only the graph's configs are proposed); -1 = no
     *    limit. Default PC_TUNE_AUTO: pc_tune_opts_for_model decides (left
     *    unresolved, the search takes 0);
     *  tile_risk: risk for tile graphs, whose reference is the graph's own
     *    configs (no default is known): there the spread favours the configs
     *    the members agree on, not the safe ones, and a risk of 1 made a
     *    5-member ensemble's first proposal 8% slower (bench/RESULTS.md,
     *    issue #15 third pass). Default PC_TUNE_DEFAULT_TILE_RISK (the mean).
     */
    double risk;
    int64_t max_changes;
    int64_t tile_max_changes;
    double tile_risk;
    /*
     * The memory budget of the search's batches (bytes, or PC_MEMORY_AUTO:
     * half the available memory, perfcast/npz.h), checked before they are
     * allocated: per candidate of `batch`, 8 bytes per variable and 12 per
     * float of a config row (the candidates, their rows, the model's
     * preprocessed copy). Over it: PC_ERR_NOMEM naming the graph, the batch
     * and both sizes. Default PC_MEMORY_AUTO.
     */
    uint64_t max_memory;
    pc_tune_best_fn best; /* the best so far after each scored batch; default NULL: none */
    void *best_user;      /* its first argument; default NULL */
} pc_tune_opts;

#define PC_TUNE_DEFAULT_RISK 1.0
#define PC_TUNE_DEFAULT_MAX_CHANGES 4
#define PC_TUNE_DEFAULT_TILE_RISK 0.0
/* tile_max_changes and tile_new_sizes: "decided by the model" (pc_tune_opts_for_model) */
#define PC_TUNE_AUTO (-2)
/* The tile region pc_tune_opts_for_model gives models trained with the rsteps
   encoding (PC_ENCODE_RSTEPS, perfcast/gnn.h; train's tile default), with new
   sizes: better than the file's configs alone in 19 of 20 paired comparisons
   (10 of 10 on a second simulator), and catastrophic (picks up to 170x slower)
   for models without it
   (bench/RESULTS.md, issue #15 ninth and tenth passes). */
#define PC_TUNE_RSTEPS_TILE_MAX_CHANGES 2

PC_API pc_tune_opts pc_tune_opts_default(void);
/*
 * Resolves the fields left at PC_TUNE_AUTO for the scorer: a tile model
 * trained with the rsteps encoding gets tile_max_changes
 * PC_TUNE_RSTEPS_TILE_MAX_CHANGES and tile_new_sizes 1; any other model, or
 * p NULL (a simulator, a test's function), 0 and 0 (the file's configs only).
 * Fields set to anything else are kept.
 */
PC_API void pc_tune_opts_for_model(pc_tune_opts *o, const pc_predictor *p);

/* The caller sets struct_size = sizeof(pc_tune_result); pc_tune_result_clear frees. */
typedef struct pc_tune_result {
    size_t struct_size;
    int64_t k;               /* proposals (<= top_k), distinct, best first */
    int64_t width;           /* floats per proposal */
    float *configs;          /* k x width */
    double *scores;          /* k */
    int has_default;         /* 1 when the space knows the default (layout) */
    double default_score;    /* its score; NaN without it */
    int64_t input_best;      /* the graph's best-scored config, -1 without configs */
    double input_best_score; /* its score; NaN without it */
    int64_t scored;          /* candidates scored (input configs included) */
    int64_t rounds;
    double seconds;
    pc_tune_stop stop;
} pc_tune_result;

PC_API void pc_tune_result_clear(pc_tune_result *r); /* frees configs and scores */

/*
 * Searches the space for the configurations `score` rates lowest: from the
 * default (when known) and the graph's best-scored configs, rounds of
 * `batch` candidates (single-choice moves of the best, mutations and
 * crossovers of the best found so far, and the best with every improving
 * move of the last round applied); a tile space small enough is enumerated
 * whole. With max_changes (layout), every candidate lies within that many
 * changed tensors of the default (a move past it sends another changed tensor
 * back to the default); with tile_max_changes (tile), within that many
 * changed bounds of the nearest of the graph's configs. Stops on budget_s, patience, max_scored or an
 * exhausted space.
 * Given the scores, the search is deterministic for a seed; a budget stop
 * depends on time (use max_scored for reproducible runs). g is the graph
 * the space was made from (its configs seed the search).
 */
PC_API pc_status pc_tune_search(const pc_tune_space *s, pc_graph *g, const pc_tune_opts *opts,
                                pc_tune_score_fn score, void *ctx, pc_tune_result *res,
                                pc_error *err);

/* ---- a trained model as the scorer --------------------------------------- */

/*
 * Scores candidate configurations of g with a predictor: g is prepared once
 * (pc_prepared_graph, perfcast/predict.h: the model's config-independent part
 * cached) and each call scores only its candidates. The score is the
 * conservative mean + opts->risk * spread (opts NULL: the defaults), the
 * ensemble's members offset by their score of the compiler default (layout)
 * or their mean over g's configs (tile). The model must be of g's kind
 * (PC_ERR_ARG naming both otherwise). Borrows p and g.
 */
typedef struct pc_tune_model pc_tune_model;

PC_API pc_status pc_tune_model_new(pc_predictor *p, pc_graph *g, const pc_tune_opts *opts,
                                   pc_tune_model **out, pc_error *err);
PC_API void pc_tune_model_free(pc_tune_model *m); /* NULL ok */
/* A pc_tune_score_fn: ctx is a pc_tune_model. */
PC_API pc_status pc_tune_model_score(void *ctx, const float *configs, int64_t n, double *scores,
                                     pc_error *err);

/* ---- the output ------------------------------------------------------------ */

/*
 * Writes `path`: g's graph arrays (node_feat, node_opcode, edge_index, and
 * node_config_ids, node_splits for layout) and k configurations (tile
 * config_feat (k, 24); layout node_config_feat (k, nc, 18)) with
 * config_runtime all 0, through a temporary name renamed into place.
 */
PC_API pc_status pc_tune_write(const char *path, const pc_graph *g, const float *configs, int64_t k,
                               pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_TUNE_H */
