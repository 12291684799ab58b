/*
 * A graph prepared once for scoring many candidate sets (perfcast/predict.h,
 * pc_prepared_graph): the model input built once and, without attention and
 * GST, each member's prefix (pc_gnn_prefix) computed once in a workspace of
 * its own; each call then preprocesses the candidates and runs only
 * pc_gnn_score_configs, in the chunks inference uses (src/gnn/infer.c), so a
 * plain model's scores are pc_predictor_score's bit for bit. Ensembles are
 * combined with a fixed offset per member (its mean score of the reference
 * configs) instead of per-call centering.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "gnn/infer.h"
#include "gnn/predictor.h"

#define REF_MAX 1024 /* the graph's own configs used as the reference */

struct pc_prepared_graph {
    pc_predictor *p;
    pc_graph *g;
    int cached, N;  /* prefixes cached; members */
    int64_t rowdim; /* raw floats per candidate */
    int64_t prows;  /* preprocessed rows per candidate (tile 1, layout nc) */
    int64_t chunk;  /* candidates per pc_gnn_score_configs call */
    pc_gnn_gdata d;
    pc_gnn_ws **ws; /* N, each with its member's prefix */
    double *offset; /* N */
    pc_fbuf cfg, s; /* preprocessed candidates, one chunk's scores */
    double *ens;    /* N x n raw member scores */
    size_t ens_cap;
    int64_t *zeros; /* fallback: runtimes and normalizers of a call */
    size_t zcap;
};

int pc_prepared_graph_cached(const pc_prepared_graph *pg) { return pg ? pg->cached : 0; }

void pc_prepared_graph_free(pc_prepared_graph *pg) {
    if (!pg) return;
    for (int j = 0; pg->ws && j < pg->N; j++) pc_gnn_ws_free(pg->ws[j]);
    free(pg->ws);
    pc_gnn_gdata_free(&pg->d);
    free(pg->offset);
    free(pg->cfg.p);
    free(pg->s.p);
    free(pg->ens);
    free(pg->zeros);
    free(pg);
}

static const pc_gnn *member(const pc_prepared_graph *pg, int j) {
    return j ? pg->p->m->members[j - 1] : pg->p->m;
}

/* Each member's raw scores of n candidates into pg->ens (N x n). */
static pc_status member_scores(pc_prepared_graph *pg, const float *configs, int64_t n,
                               pc_error *err) {
    const pc_gnn *m = pg->p->m;
    size_t rows = (size_t)n * (size_t)pg->prows, D = (size_t)m->cfg_dim;
    double *e = pc_reserve_array(pg->ens, &pg->ens_cap, (size_t)n * (size_t)pg->N, sizeof *e);
    if (e) pg->ens = e;
    if (!e || !pc_fbuf_grow(&pg->cfg, rows * D + 1) || !pc_fbuf_grow(&pg->s, (size_t)pg->chunk))
        return pc_fail(err, PC_ERR_NOMEM, "out of memory for %lld candidates", (long long)n);
    pc_status st = pc_gnn_prep_configs(m, pg->g, configs, (int64_t)rows, pg->cfg.p, err);
    size_t per = (size_t)pg->prows * D;
    for (int j = 0; j < pg->N && !st; j++)
        for (int64_t c0 = 0; c0 < n && !st; c0 += pg->chunk) {
            int K = (int)(n - c0 < pg->chunk ? n - c0 : pg->chunk);
            st = pc_gnn_score_configs(member(pg, j), pg->ws[j], pg->cfg.p + (size_t)c0 * per, K,
                                      pg->s.p, err);
            for (int k = 0; k < K && !st; k++) pg->ens[(size_t)j * n + c0 + k] = pg->s.p[k];
        }
    return st;
}

static pc_array view(pc_dtype t, int ndim, int64_t d0, int64_t d1, int64_t d2, const void *data) {
    pc_array a = PC_ARRAY_INIT;
    a.dtype = t;
    a.ndim = ndim;
    a.shape[0] = d0, a.shape[1] = d1, a.shape[2] = d2;
    a.data = (void *)data;
    return a;
}

/* Attention and GST models: the candidates as a graph of g's arrays, scored whole. */
static pc_status score_as_graph(pc_prepared_graph *pg, const float *configs, int64_t n,
                                double *scores, double *spread, pc_error *err) {
    enum { A_FEAT, A_OPCODE, A_EDGES, A_RUNTIME, A_CONFIGS, A_IDS_OR_NORM, A_SPLITS, A_COUNT };
    const pc_graph *g = pg->g;
    pc_kind kind = pc_graph_kind(g);
    int64_t *z = pc_reserve_array(pg->zeros, &pg->zcap, (size_t)n, sizeof *z);
    if (!z) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pg->zeros = z;
    memset(z, 0, (size_t)n * sizeof *z);
    int64_t nn = pc_graph_num_nodes(g), nsplits = 0;
    const int64_t *splits = pc_graph_node_splits(g, &nsplits);
    pc_array a[A_COUNT];
    const char *keys[A_COUNT] = {"node_feat", "node_opcode", "edge_index", "config_runtime"};
    int count = A_IDS_OR_NORM + 1;
    a[A_FEAT] = view(PC_DTYPE_F32, 2, nn, pc_graph_node_feat_dim(g), 0, pc_graph_node_feat(g));
    a[A_OPCODE] = view(PC_DTYPE_I32, 1, nn, 0, 0, pc_graph_node_opcode(g));
    a[A_EDGES] = view(PC_DTYPE_I32, 2, pc_graph_num_edges(g), 2, 0, pc_graph_edge_index(g));
    a[A_RUNTIME] = view(PC_DTYPE_I64, 1, n, 0, 0, z);
    if (kind == PC_KIND_TILE) {
        keys[A_CONFIGS] = "config_feat";
        a[A_CONFIGS] = view(PC_DTYPE_F32, 2, n, PC_TILE_CONFIG_DIM, 0, configs);
        keys[A_IDS_OR_NORM] = "config_runtime_normalizers";
        a[A_IDS_OR_NORM] = view(PC_DTYPE_I64, 1, n, 0, 0, z);
    } else {
        int64_t nc = pc_graph_num_config_nodes(g);
        keys[A_CONFIGS] = "node_config_feat";
        a[A_CONFIGS] = view(PC_DTYPE_F32, 3, n, nc, PC_LAYOUT_CONFIG_DIM, configs);
        keys[A_IDS_OR_NORM] = "node_config_ids";
        a[A_IDS_OR_NORM] = view(PC_DTYPE_I32, 1, nc, 0, 0, pc_graph_node_config_ids(g));
        if (splits && nsplits) {
            keys[A_SPLITS] = "node_splits";
            a[A_SPLITS] = view(PC_DTYPE_I64, 2, 1, nsplits, 0, splits);
            count++;
        }
    }
    pc_graph *cand = NULL;
    pc_status st = pc_graph_from_arrays(pc_graph_path(g), kind, keys, a, count, &cand, err);
    if (!st) st = pc_predictor_score_spread(pg->p, cand, scores, spread, err);
    pc_graph_free(cand);
    return st;
}

/* The members' offsets: each one's mean raw score over the reference rows. */
static pc_status set_offsets(pc_prepared_graph *pg, const float *ref, int64_t nref, pc_error *err) {
    float *own = NULL;
    pc_status st = PC_OK;
    if (!ref && pc_graph_num_configs(pg->g) > 0) {
        nref = pc_graph_num_configs(pg->g) < REF_MAX ? pc_graph_num_configs(pg->g) : REF_MAX;
        if (!(own = pc_malloc_array((uint64_t)nref, (uint64_t)pg->rowdim * sizeof *own)))
            return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        if (pc_graph_kind(pg->g) == PC_KIND_TILE)
            memcpy(own, pc_graph_config_feat(pg->g), (size_t)(nref * pg->rowdim) * sizeof *own);
        else
            st = pc_graph_config_feat_rows(pg->g, 0, nref, own, err);
        ref = own;
    }
    if (!st && ref && nref > 0) st = member_scores(pg, ref, nref, err);
    for (int j = 0; j < pg->N && !st; j++) {
        double sum = 0;
        for (int64_t i = 0; ref && i < nref; i++) sum += pg->ens[(size_t)j * nref + i];
        pg->offset[j] = ref && nref > 0 ? sum / (double)nref : 0.0;
    }
    free(own);
    return st;
}

/* The model input and (cached) each member's prefix; first, the estimate of what the
   scoring holds within the predictor's max_memory (pc_infer_fit: the chunk shrunk to fit;
   a member's workspace each). Attention and GST models build per call (score_as_graph),
   checked there. */
static pc_status prepare(pc_prepared_graph *pg, const float *ref, int64_t nref, pc_error *err) {
    const pc_gnn *m = pg->p->m;
    int64_t cap = 0;
    pc_status st = pg->cached ? pc_infer_fit(m, pg->g, pg->p->max_memory, pg->N, &cap, err)
                              : PC_OK;
    if (st) return st;
    st = pc_gnn_gdata_build(m, pg->g, &pg->d, err);
    if (st || !pg->cached) return st;
    pg->chunk = pc_infer_chunk(m, &pg->d.g);
    if (cap > 0 && cap < pg->chunk) pg->chunk = cap;
    for (int j = 0; j < pg->N && !st; j++) {
        if (!(pg->ws[j] = pc_gnn_ws_new())) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        st = pc_gnn_prefix(member(pg, j), pg->ws[j], &pg->d.g, err);
    }
    if (!st && pg->N > 1) st = set_offsets(pg, ref, nref, err);
    return st;
}

pc_status pc_prepared_graph_new(pc_predictor *p, pc_graph *g, const float *ref, int64_t nref,
                                pc_prepared_graph **out, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!p || !g || !out || nref < 0 || (nref > 0 && !ref))
        return pc_fail(err, PC_ERR_ARG, "predict: NULL argument or ref without rows");
    *out = NULL;
    pc_kind want = p->m->opts.kind;
    pc_status cst = pc_predictor_check_graph(p, g, err);
    if (cst) return cst;
    int cdim = want == PC_KIND_TILE ? PC_TILE_CONFIG_DIM : PC_LAYOUT_CONFIG_DIM;
    pc_prepared_graph *pg = calloc(1, sizeof *pg);
    if (!pg) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pg->p = p, pg->g = g, pg->N = 1 + p->m->n_members;
    pg->cached = !p->m->opts.gst && p->m->opts.attn_heads <= 0;
    pg->prows = want == PC_KIND_TILE ? 1 : pc_graph_num_config_nodes(g);
    pg->rowdim = pg->prows * cdim;
    pg->ws = calloc((size_t)pg->N, sizeof *pg->ws);
    pg->offset = calloc((size_t)pg->N, sizeof *pg->offset);
    pc_status st = pg->ws && pg->offset ? PC_OK : pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (!st) {
        int saved = pc_threads_begin(p->threads);
        st = prepare(pg, ref, nref, err);
        pc_threads_end(saved);
    }
    if (st) {
        pc_error_prefix(err, "%s: ", pc_graph_path(g));
        pc_prepared_graph_free(pg);
        return st;
    }
    *out = pg;
    return PC_OK;
}

pc_status pc_prepared_graph_score(pc_prepared_graph *pg, const float *configs, int64_t n,
                                  double *scores, double *spread, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!pg || (n > 0 && (!configs || !scores)) || n < 0)
        return pc_fail(err, PC_ERR_ARG, "predict: NULL argument");
    if (n == 0) return PC_OK;
    if (!pg->cached) return score_as_graph(pg, configs, n, scores, spread, err);
    int saved = pc_threads_begin(pg->p->threads);
    pc_status st = member_scores(pg, configs, n, err);
    pc_threads_end(saved);
    if (st) {
        pc_error_prefix(err, "%s: ", pc_graph_path(pg->g));
        return st;
    }
    size_t N = (size_t)pg->N;
    for (int64_t i = 0; i < n; i++) {
        if (N == 1) { /* a plain model: its raw score */
            scores[i] = pg->ens[i];
            if (spread) spread[i] = 0;
            continue;
        }
        double mean = 0, var = 0;
        for (size_t j = 0; j < N; j++) mean += pg->ens[j * n + i] - pg->offset[j];
        mean /= (double)N;
        for (size_t j = 0; j < N; j++) {
            double dv = pg->ens[j * n + i] - pg->offset[j] - mean;
            var += dv * dv;
        }
        scores[i] = mean;
        if (spread) spread[i] = sqrt(var / (double)N);
    }
    return PC_OK;
}
