/*
 * A trained model as the search's scorer (pc_tune_model): the graph is
 * prepared once (pc_prepared_graph: its model input and every member's
 * config-independent prefix cached), each call scores only the candidates.
 * The score is conservative: the members' mean plus pc_tune_opts.risk (tile:
 * tile_risk) times their spread, both relative to the reference (layout: the
 * compiler default, whose spread is then 0; tile: the graph's own configs).
 * How far it is trusted by default depends on how it was trained
 * (pc_tune_opts_for_model).
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "perfcast/gnn.h"
#include "tune/tune_internal.h"

/* Only a tile model that sees the reduction's grid steps (rsteps) ranks tiles
 * off the file's configs well enough to search there: with 2 bounds and new
 * sizes such models proposed faster configs than with the file's configs alone
 * in 19 of 20 paired comparisons on perfcast's simulator and 10 of 10 on a
 * second one; models without it made picks up to 170x slower (bench/RESULTS.md,
 * issue #15 ninth and tenth passes). */
void pc_tune_opts_for_model(pc_tune_opts *o, const pc_predictor *p) {
    if (!o) return;
    int trusted = p && pc_collection_kind(pc_predictor_collection(p)) == PC_KIND_TILE &&
                  (pc_predictor_encode(p) & PC_ENCODE_RSTEPS);
    if (o->tile_max_changes == PC_TUNE_AUTO)
        o->tile_max_changes = trusted ? PC_TUNE_RSTEPS_TILE_MAX_CHANGES : 0;
    if (o->tile_new_sizes == PC_TUNE_AUTO) o->tile_new_sizes = trusted && o->tile_max_changes;
}

struct pc_tune_model {
    pc_prepared_graph *pg;
    double risk;
    double *spread;
    size_t scap;
};

pc_status pc_tune_model_new(pc_predictor *p, pc_graph *g, const pc_tune_opts *opts,
                            pc_tune_model **out, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!p || !g || !out) return pc_fail(err, PC_ERR_ARG, "tune: NULL argument");
    *out = NULL;
    pc_tune_opts dflt = pc_tune_opts_default();
    if (!opts) opts = &dflt;
    if (PC_CHECK_SIZE(err, pc_tune_opts, opts)) return PC_ERR_ARG;
    if (!(opts->risk >= 0) || opts->risk > 1e6)
        return pc_fail(err, PC_ERR_ARG, "tune: pc_tune_opts.risk must lie in [0, 1e6], got %g",
                       opts->risk);
    if (!(opts->tile_risk >= 0) || opts->tile_risk > 1e6)
        return pc_fail(err, PC_ERR_ARG,
                       "tune: pc_tune_opts.tile_risk must lie in [0, 1e6], got %g",
                       opts->tile_risk);
    int coll = pc_predictor_collection(p);
    if (pc_collection_kind(coll) != pc_graph_kind(g))
        return pc_fail(err, PC_ERR_ARG,
                       "%s: a %s graph, but the model is for %s (%s configs): "
                       "tune it with a %s model",
                       pc_graph_path(g), pc_kind_name(pc_graph_kind(g)), pc_collection_name(coll),
                       pc_kind_name(pc_collection_kind(coll)), pc_kind_name(pc_graph_kind(g)));
    pc_tune_model *m = calloc(1, sizeof *m);
    if (!m) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    m->risk = pc_graph_kind(g) == PC_KIND_TILE ? opts->tile_risk : opts->risk;
    float *ref = NULL;
    int64_t nref = 0;
    pc_status st = PC_OK;
    if (pc_graph_kind(g) == PC_KIND_LAYOUT) { /* the compiler default: all -1 */
        int64_t w = pc_graph_num_config_nodes(g) * PC_LAYOUT_CONFIG_DIM;
        if (!(ref = pc_malloc_array((uint64_t)(w ? w : 1), sizeof *ref)))
            st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; ref && i < w; i++) ref[i] = -1.0f;
        nref = 1;
    }
    if (!st) st = pc_prepared_graph_new(p, g, ref, nref, &m->pg, err);
    free(ref);
    if (st) {
        pc_tune_model_free(m);
        return st;
    }
    *out = m;
    return PC_OK;
}

void pc_tune_model_free(pc_tune_model *m) {
    if (!m) return;
    pc_prepared_graph_free(m->pg);
    free(m->spread);
    free(m);
}

pc_status pc_tune_model_score(void *ctx, const float *configs, int64_t n, double *scores,
                              pc_error *err) {
    pc_tune_model *m = ctx;
    if (n < 1) return PC_OK;
    double *sp = pc_reserve_array(m->spread, &m->scap, (size_t)n, sizeof *sp);
    if (!sp) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    m->spread = sp;
    pc_status st = pc_prepared_graph_score(m->pg, configs, n, scores, sp, err);
    for (int64_t i = 0; i < n && !st && m->risk > 0; i++) scores[i] += m->risk * sp[i];
    return st;
}
