/* Scoring graphs with a trained checkpoint (perfcast predict / rank). */
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "gnn/checkpoint.h"
#include "gnn/eval.h"
#include "gnn/infer.h"
#include "gnn/predictor.h"
#include "perfcast/predict.h"


pc_status pc_predictor_load(const char *model_path, int threads, pc_predictor **out,
                            pc_error *err) {
    return pc_predictor_load_max(model_path, threads, PC_MEMORY_AUTO, out, err);
}

pc_status pc_predictor_load_max(const char *model_path, int threads, uint64_t max_memory,
                                pc_predictor **out, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    *out = NULL;
    if (!model_path) return pc_fail(err, PC_ERR_ARG, "predict: no model path");
    pc_nn_blas_single();
    pc_predictor *p = calloc(1, sizeof *p);
    if (!p) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    p->threads = threads;
    p->max_memory = max_memory;
    pc_status st = pc_ckpt_load(model_path, max_memory, &p->m, &p->collection, err);
    if (!st && !(p->ws = pc_gnn_ws_new())) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (st) {
        pc_predictor_free(p);
        return st;
    }
    *out = p;
    return PC_OK;
}

void pc_predictor_free(pc_predictor *p) {
    if (!p) return;
    pc_gnn_ws_free(p->ws);
    pc_gnn_free(p->m);
    free(p);
}

int pc_predictor_collection(const pc_predictor *p) { return p->collection; }

unsigned pc_predictor_encode(const pc_predictor *p) { return p->m->opts.encode; }

pc_status pc_predictor_widths(const pc_predictor *p, pc_graph_widths *out, pc_error *err) {
    if (!p || !out) return pc_fail(err, PC_ERR_ARG, "pc_predictor_widths: NULL argument");
    if (PC_CHECK_RESULT_SIZE(err, pc_graph_widths, out)) return PC_ERR_ARG;
    int node, cfg;
    pc_gnn_raw_widths(p->m, &node, &cfg);
    *out = pc_graph_widths_default();
    out->kind = p->m->opts.kind;
    out->node_feat_dim = node;
    out->tile_config_dim = out->kind == PC_KIND_TILE ? cfg : 0;
    out->layout_config_dim = out->kind == PC_KIND_LAYOUT ? cfg : 0;
    out->num_opcodes = p->m->opts.num_opcodes;
    return PC_OK;
}

int pc_predictor_members(const pc_predictor *p) { return 1 + p->m->n_members; }

pc_status pc_predictor_set_tta(pc_predictor *p, int orderings, uint64_t seed, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!p) return pc_fail(err, PC_ERR_ARG, "predict: NULL predictor");
    if (orderings < 1)
        return pc_fail(err, PC_ERR_ARG, "predict: test-time augmentation needs orderings >= 1, "
                       "got %d", orderings);
    if (orderings > 1 && p->m->opts.attn_heads <= 0)
        return pc_fail(err, PC_ERR_ARG, "test-time augmentation (orderings %d) applies "
                       "to models with cross-configuration attention (pc_train_opts.attn_heads "
                       "> 0); this model scores each config on its own, so every ordering gives "
                       "the same scores", orderings);
    p->m->tta = orderings;
    p->m->tta_seed = seed;
    return PC_OK;
}

pc_status pc_predictor_check_graph(const pc_predictor *p, const pc_graph *g, pc_error *err) {
    pc_kind want = p->m->opts.kind;
    if (pc_graph_kind(g) != want)
        return pc_fail(err, PC_ERR_ARG, "%s: a %s graph, but the model is for %s (%s)",
                       pc_graph_path(g), pc_kind_name(pc_graph_kind(g)),
                       pc_collection_name(p->collection), pc_kind_name(want));
    int cdim = want == PC_KIND_TILE ? PC_TILE_CONFIG_DIM : PC_LAYOUT_CONFIG_DIM;
    if (pc_graph_node_feat_dim(g) != PC_NODE_FEAT_DIM || pc_graph_config_dim(g) != cdim)
        return pc_fail(err, PC_ERR_FORMAT, "%s: feature widths differ from %d / %d",
                       pc_graph_path(g), PC_NODE_FEAT_DIM, cdim);
    return PC_OK;
}

pc_status pc_predictor_score_spread(pc_predictor *p, pc_graph *g, double *scores,
                                    double *spread, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!p || !g || !scores) return pc_fail(err, PC_ERR_ARG, "predict: NULL argument");
    pc_status st = pc_predictor_check_graph(p, g, err);
    if (st) return st;
    int saved = pc_threads_begin(p->threads);
    pc_infer_run run = {p->max_memory, 0, p->progress, p->progress_user};
    st = pc_infer_score_graph(p->m, p->ws, g, scores, spread, &run, err);
    pc_threads_end(saved);
    return st;
}

pc_status pc_predictor_score(pc_predictor *p, pc_graph *g, double *scores, pc_error *err) {
    return pc_predictor_score_spread(p, g, scores, NULL, err);
}

pc_status pc_predictor_eval(pc_predictor *p, const char *data_dir, const char *split,
                            const struct pc_dist *dist, pc_eval_result *res, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!p || !data_dir || !res) return pc_fail(err, PC_ERR_ARG, "eval: NULL argument");
    pc_nn_blas_single();
    return pc_eval_model(p->m, p->collection, data_dir, split, p->threads, p->max_memory, dist,
                         p->progress, p->progress_user, res, err);
}

void pc_predictor_set_progress(pc_predictor *p, pc_progress_fn fn, void *user) {
    if (!p) return;
    p->progress = fn;
    p->progress_user = user;
}
