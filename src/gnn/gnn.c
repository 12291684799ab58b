/* The tile and layout GNN cost models: parameters, forward, backward (see model.h). */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "gnn/encode.h"
#include "gnn/gnn.h"
#include "gnn/gnn_ws.h"
#include "graph/graph.h"

#define LEAKY_SLOPE 0.01f
#define LN_EPS 1e-5f

/* ---- options and parameters ------------------------------------------------- */

pc_gnn_opts pc_gnn_opts_default(pc_kind kind) {
    pc_gnn_opts o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.hidden = 64;
    o.layers = 3;
    o.emb_dim = 16;
    o.num_opcodes = 256;
    o.pool = PC_POOL_MEAN;
    o.join = PC_JOIN_EARLY;
    o.act = PC_ACT_LEAKY_RELU;
    o.layernorm = 1;
    o.dropout = 0.0f;
    o.prune_hops = -1;
    return o;
}

/* Tile late join: the GNN is config-independent and the config meets the pooled graph. */
static int is_late(const pc_gnn *m) {
    return m->opts.kind == PC_KIND_TILE && m->opts.join == PC_JOIN_LATE;
}
/* Layout late join: the GNN is config-independent; configs meet configurable nodes' embeddings. */
static int layout_late(const pc_gnn *m) {
    return m->opts.kind == PC_KIND_LAYOUT && m->opts.join == PC_JOIN_LATE;
}
/* The GNN and graph pooling run once per graph, not once per config. */
static int shared_gnn(const pc_gnn *m) { return is_late(m) || layout_late(m); }
static int pool_width(const pc_gnn *m) {
    return m->opts.pool == PC_POOL_MEANMAX ? 2 * m->opts.hidden : m->opts.hidden;
}
/* Width of the head input. */
static int readout_width(const pc_gnn *m) { return pc_gnn_readout_width(m); }

static float unif(uint64_t *s, float a) { /* U(-a, a) */
    double u = (double)(pc_splitmix64(s) >> 11) * 0x1.0p-53;
    return (float)((2.0 * u - 1.0) * a);
}

static pc_status add(pc_gnn *m, const char *name, int d0, int d1, int *idx, pc_error *err) {
    int shape[2] = {d0, d1};
    return pc_params_add(&m->params, name, d1 > 0 ? 2 : 1, shape, idx, err);
}

/* Xavier-uniform fill of a (OC, IC) weight. */
static void xavier(pc_gnn *m, int idx, uint64_t *s) {
    const pc_param_info *t = &m->params.info[idx];
    int oc = t->shape[0], ic = t->ndim > 1 ? t->shape[1] : 1;
    float a = sqrtf(6.0f / (float)(oc + ic));
    float *w = pc_params_data(&m->params, idx);
    for (size_t i = 0; i < t->numel; i++) w[i] = unif(s, a);
}

/* The sizes and choices of o with feat_dim / cfg_dim inputs, or PC_ERR_ARG naming them. */
static pc_status check_sizes(const pc_gnn_opts *o, int feat_dim, int cfg_dim, pc_error *err) {
    if (o->kind != PC_KIND_TILE && o->kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "model: kind must be tile or layout");
    if (o->hidden < 1 || o->hidden > PC_GNN_MAX_HIDDEN || o->layers < 0 ||
        o->layers > PC_GNN_MAX_LAYERS || o->emb_dim < 1 || o->emb_dim > PC_GNN_MAX_EMB ||
        o->num_opcodes < 1 || o->num_opcodes > PC_GNN_MAX_OPCODES || feat_dim < 1 ||
        feat_dim > PC_GNN_MAX_FEATURES || cfg_dim < 1 || cfg_dim > PC_GNN_MAX_FEATURES)
        return pc_fail(err, PC_ERR_ARG,
                       "model: bad sizes (hidden %d, layers %d, emb %d, opcodes %d, feat %d, "
                       "cfg %d; limits %d, %d, %d, %d, %d, %d)",
                       o->hidden, o->layers, o->emb_dim, o->num_opcodes, feat_dim, cfg_dim,
                       PC_GNN_MAX_HIDDEN, PC_GNN_MAX_LAYERS, PC_GNN_MAX_EMB, PC_GNN_MAX_OPCODES,
                       PC_GNN_MAX_FEATURES, PC_GNN_MAX_FEATURES);
    if ((unsigned)o->pool > PC_POOL_MEANMAX || (unsigned)o->join > PC_JOIN_LATE ||
        (unsigned)o->act > PC_ACT_GELU)
        return pc_fail(err, PC_ERR_ARG, "model: bad pool/join/activation option");
    if (!(o->dropout >= 0.0f && o->dropout < 1.0f))
        return pc_fail(err, PC_ERR_ARG, "model: dropout %g not in [0, 1)", (double)o->dropout);
    return PC_OK;
}

/* A model of o's architecture with its parameters registered, none allocated. */
static pc_status gnn_register(const pc_gnn_opts *o, int feat_dim, int cfg_dim, pc_gnn **out,
                              pc_error *err) {
    *out = NULL;
    pc_status st = check_sizes(o, feat_dim, cfg_dim, err);
    if (st) return st;
    pc_gnn *m = calloc(1, sizeof *m);
    if (!m) return pc_fail(err, PC_ERR_NOMEM, "model: out of memory");
    m->opts = *o;
    m->feat_dim = feat_dim;
    m->cfg_dim = cfg_dim;
    pc_params_init(&m->params);
    int L = o->layers, H = o->hidden;
    size_t nl = (size_t)(L > 0 ? L : 1);
    m->p_ln_g = malloc(nl * sizeof(int));
    m->p_ln_b = malloc(nl * sizeof(int));
    m->p_w = malloc(nl * sizeof(int));
    m->p_b = malloc(nl * sizeof(int));
    if (!m->p_ln_g || !m->p_ln_b || !m->p_w || !m->p_b) {
        st = pc_fail(err, PC_ERR_NOMEM, "model: out of memory");
        goto fail;
    }
    m->p_cfg_w = m->p_cfg_b = -1;
    if ((st = add(m, "emb", o->num_opcodes, o->emb_dim, &m->p_emb, err))) goto fail;
    if ((st = add(m, "in.w", H, feat_dim + o->emb_dim, &m->p_in_w, err))) goto fail;
    if ((st = add(m, "in.b", H, 0, &m->p_in_b, err))) goto fail;
    if (!is_late(m) && (st = add(m, "cfg.w", H, cfg_dim, &m->p_cfg_w, err))) goto fail;
    if (o->kind == PC_KIND_LAYOUT && (st = add(m, "cfg.b", H, 0, &m->p_cfg_b, err))) goto fail;
    m->p_lj_w = -1;
    if (layout_late(m) && (st = add(m, "late.w", H, H, &m->p_lj_w, err))) goto fail;
    for (int i = 0; i < 10; i++) m->p_at[i] = -1;
    if (o->attn_heads > 0) {
        int R = readout_width(m);
        static const char *const an[10] = {"attn.ln.g", "attn.ln.b", "attn.wq", "attn.wk",
                                           "attn.wv", "attn.wo", "attn.bq", "attn.bk",
                                           "attn.bv", "attn.bo"};
        if (R % o->attn_heads || o->attn_group < 1) {
            st = pc_fail(err, PC_ERR_ARG, "model: attention heads %d must divide the readout "
                         "width %d and the group must be >= 1", o->attn_heads, R);
            goto fail;
        }
        for (int i = 0; i < 10 && !st; i++)
            st = add(m, an[i], R, i >= 2 && i < 6 ? R : 0, &m->p_at[i], err);
        if (st) goto fail;
    }
    for (int l = 0; l < L; l++) {
        char name[PC_PARAM_NAME_MAX];
        m->p_ln_g[l] = m->p_ln_b[l] = -1;
        if (o->layernorm) {
            snprintf(name, sizeof name, "gnn.%d.ln.g", l);
            if ((st = add(m, name, H, 0, &m->p_ln_g[l], err))) goto fail;
            snprintf(name, sizeof name, "gnn.%d.ln.b", l);
            if ((st = add(m, name, H, 0, &m->p_ln_b[l], err))) goto fail;
        }
        snprintf(name, sizeof name, "gnn.%d.w", l);
        if ((st = add(m, name, H, 3 * H, &m->p_w[l], err))) goto fail;
        snprintf(name, sizeof name, "gnn.%d.b", l);
        if ((st = add(m, name, H, 0, &m->p_b[l], err))) goto fail;
    }
    if ((st = add(m, "head.w1", H, readout_width(m), &m->p_h1_w, err))) goto fail;
    if ((st = add(m, "head.b1", H, 0, &m->p_h1_b, err))) goto fail;
    if ((st = add(m, "head.w2", 1, H, &m->p_h2_w, err))) goto fail;
    if ((st = add(m, "head.b2", 1, 0, &m->p_h2_b, err))) goto fail;
    *out = m;
    return PC_OK;
fail:
    pc_gnn_free(m);
    return st;
}

pc_status pc_gnn_param_count(const pc_gnn_opts *opts, int feat_dim, int cfg_dim, size_t *numel,
                             pc_error *err) {
    pc_gnn *m = NULL;
    pc_status st = gnn_register(opts, feat_dim, cfg_dim, &m, err);
    if (!st) *numel = m->params.numel;
    pc_gnn_free(m);
    return st;
}

pc_status pc_gnn_new(const pc_gnn_opts *opts, int feat_dim, int cfg_dim, uint64_t seed,
                       pc_gnn **out, pc_error *err) {
    *out = NULL;
    pc_gnn *m = NULL;
    pc_status st = gnn_register(opts, feat_dim, cfg_dim, &m, err);
    if (st) return st;
    int L = opts->layers, H = opts->hidden;
    if ((st = pc_params_alloc(&m->params, err))) goto fail;

    uint64_t s = seed;
    float *emb = pc_params_data(&m->params, m->p_emb);
    for (size_t i = 0; i < m->params.info[m->p_emb].numel; i++) emb[i] = unif(&s, 0.1f);
    xavier(m, m->p_in_w, &s);
    if (m->p_cfg_w >= 0) xavier(m, m->p_cfg_w, &s);
    if (m->p_lj_w >= 0) xavier(m, m->p_lj_w, &s);
    for (int l = 0; l < L; l++) {
        if (m->p_ln_g[l] >= 0) {
            float *g = pc_params_data(&m->params, m->p_ln_g[l]);
            for (int c = 0; c < H; c++) g[c] = 1.0f;
        }
        xavier(m, m->p_w[l], &s);
    }
    if (m->p_at[0] >= 0) {
        float *g = pc_params_data(&m->params, m->p_at[0]);
        int R = readout_width(m);
        for (int c = 0; c < R; c++) g[c] = 1.0f;
        for (int i = 2; i < 5; i++) xavier(m, m->p_at[i], &s);
        /* wo stays 0: the layer starts as the identity and learns to mix configs */
    }
    xavier(m, m->p_h1_w, &s);
    xavier(m, m->p_h2_w, &s);
    if ((st = pc_prep_identity(&m->node_prep, feat_dim, err))) goto fail;
    if ((st = pc_prep_identity(&m->cfg_prep, cfg_dim, err))) goto fail;
    *out = m;
    return PC_OK;
fail:
    pc_gnn_free(m);
    return st;
}

void pc_gnn_free(pc_gnn *m) {
    if (!m) return;
    for (int i = 0; i < m->n_members; i++) pc_gnn_free(m->members[i]);
    free(m->members);
    pc_params_free(&m->params);
    pc_prep_free(&m->node_prep);
    pc_prep_free(&m->cfg_prep);
    free(m->p_ln_g);
    free(m->p_ln_b);
    free(m->p_w);
    free(m->p_b);
    free(m);
}

pc_status pc_gnn_set_prep(pc_gnn *m, const pc_prep *node, const pc_prep *cfg,
                            pc_error *err) {
    if (node->out_dim != m->feat_dim || cfg->out_dim != m->cfg_dim)
        return pc_fail(err, PC_ERR_ARG,
                       "model: preprocessing gives %d node / %d config columns, model takes %d "
                       "/ %d",
                       node->out_dim, cfg->out_dim, m->feat_dim, m->cfg_dim);
    pc_prep a = {0}, b = {0};
    pc_status st = pc_prep_copy(&a, node, err);
    if (!st) st = pc_prep_copy(&b, cfg, err);
    if (st) {
        pc_prep_free(&a);
        pc_prep_free(&b);
        return st;
    }
    pc_prep_free(&m->node_prep);
    pc_prep_free(&m->cfg_prep);
    m->node_prep = a;
    m->cfg_prep = b;
    return PC_OK;
}

/* ---- graphs ------------------------------------------------------------------- */

static pc_encode_opts enc_opts(const pc_gnn *m) {
    pc_encode_opts eo = pc_encode_opts_none();
    pc_encode_opts_from_bits(m->opts.encode, &eo, NULL); /* checked at load */
    return eo;
}

/* Raw width of a config row the model takes (cfg_prep reads the encoded row). */
static int raw_cfg_dim(const pc_gnn *m) {
    return m->opts.kind == PC_KIND_TILE ? PC_TILE_CONFIG_DIM : PC_LAYOUT_CONFIG_DIM;
}

void pc_gnn_raw_widths(const pc_gnn *m, int *node, int *cfg) {
    pc_encode_opts eo = enc_opts(m);
    const int base = raw_cfg_dim(m);
    *node = m->node_prep.in_dim - (pc_encode_node_width(&eo, PC_NODE_FEAT_DIM) - PC_NODE_FEAT_DIM);
    *cfg = m->cfg_prep.in_dim - (pc_encode_config_width(&eo, m->opts.kind, base) - base);
}

/* Replaces d's graph by its pruned version (rows of x, opcodes, edges, ids, splits). */
static pc_status gdata_prune(const pc_gnn *m, pc_gnn_gdata *d, pc_error *err) {
    pc_prune_opts po = pc_prune_opts_default();
    po.hops = m->opts.prune_hops;
    po.collapse_chains = m->opts.collapse_chains;
    pc_pruned pr;
    pc_status st = pc_prune_khop(d->g.n, d->edges, d->m, d->g.cfg_ids, d->g.nc, &po, &pr, err);
    if (st) return st;
    int F = m->feat_dim, n = pr.n;
    float *x = pc_malloc_array((uint64_t)(n > 0 ? n : 1) * (uint64_t)F, sizeof(float));
    int32_t *op = malloc((size_t)(n > 0 ? n : 1) * sizeof *op);
    int64_t *sp = malloc((size_t)(d->nsplits + 1) * sizeof *sp);
    if (!x || !op || !sp) {
        free(x), free(op), free(sp);
        pc_pruned_free(&pr);
        return pc_fail(err, PC_ERR_NOMEM, "model: out of memory");
    }
    for (int i = 0; i < n; i++) {
        memcpy(x + (size_t)i * F, d->x + (size_t)pr.kept[i] * F, (size_t)F * sizeof(float));
        op[i] = d->g.opcode[pr.kept[i]];
    }
    if (d->splits && (st = pc_pruned_remap_splits(&pr, d->splits, d->nsplits, sp, err))) {
        free(x), free(op), free(sp);
        pc_pruned_free(&pr);
        return st;
    }
    pc_csr_free(&d->csr);
    if ((st = pc_csr_build(&d->csr, pr.edges, (int)pr.m, n, err))) {
        free(x), free(op), free(sp);
        pc_pruned_free(&pr);
        return st;
    }
    free(d->x);
    d->x = x;
    d->own_op = op;
    d->own_cfg = pr.config_ids;
    d->own_edges = pr.edges;
    d->own_splits = sp;
    pr.config_ids = NULL;
    pr.edges = NULL;
    d->g.n = n;
    d->g.x = x;
    d->g.opcode = op;
    d->g.cfg_ids = d->own_cfg;
    d->edges = d->own_edges;
    d->m = pr.m;
    d->splits = d->splits ? sp : NULL;
    pc_pruned_free(&pr);
    return PC_OK;
}

pc_status pc_gnn_gdata_build(const pc_gnn *m, const pc_graph *graph, pc_gnn_gdata *out,
                               pc_error *err) {
    memset(out, 0, sizeof *out);
    if (pc_graph_kind(graph) != m->opts.kind)
        return pc_fail(err, PC_ERR_ARG, "model: %s graph given to a %s model",
                       pc_kind_name(pc_graph_kind(graph)), pc_kind_name(m->opts.kind));
    int64_t n = pc_graph_num_nodes(graph), e = pc_graph_num_edges(graph);
    if (n < 1 || n > INT_MAX / 4 || e > INT_MAX)
        return pc_fail(err, PC_ERR_RANGE, "model: %lld nodes / %lld edges not supported",
                       (long long)n, (long long)e);
    pc_encode_opts eo = enc_opts(m);
    int nraw = (int)pc_graph_node_feat_dim(graph), craw = (int)pc_graph_config_dim(graph);
    int want_node, want_cfg;
    pc_gnn_raw_widths(m, &want_node, &want_cfg);
    if (pc_encode_node_width(&eo, nraw) != m->node_prep.in_dim)
        return pc_fail(err, PC_ERR_ARG, "model: node_feat has %d columns, the model expects %d",
                       nraw, want_node);
    if (craw != raw_cfg_dim(m) ||
        pc_encode_config_width(&eo, m->opts.kind, craw) != m->cfg_prep.in_dim)
        return pc_fail(err, PC_ERR_ARG, "model: configs have %d columns, expected %d", craw,
                       raw_cfg_dim(m));
    const int32_t *op = pc_graph_node_opcode(graph);
    for (int64_t i = 0; i < n; i++)
        if (op[i] < 0 || op[i] >= m->opts.num_opcodes)
            return pc_fail(err, PC_ERR_RANGE, "model: node %lld opcode %d not in [0, %d)",
                           (long long)i, (int)op[i], m->opts.num_opcodes);
    out->x = pc_malloc_array((uint64_t)n * (uint64_t)m->feat_dim, sizeof(float));
    if (!out->x) return pc_fail(err, PC_ERR_NOMEM, "model: out of memory");
    if (m->opts.encode) {
        float *enc = pc_malloc_array((uint64_t)n * (uint64_t)m->node_prep.in_dim, sizeof(float));
        pc_encode_graph eg = pc_encode_graph_of(graph);
        pc_status es = enc ? pc_encode_node_graph(&eo, &eg, enc, err)
                           : pc_fail(err, PC_ERR_NOMEM, "model: out of memory");
        if (!es) pc_prep_apply(&m->node_prep, enc, n, out->x);
        free(enc);
        if (es) {
            pc_gnn_gdata_free(out);
            return es;
        }
    } else {
        pc_prep_apply(&m->node_prep, pc_graph_node_feat(graph), n, out->x);
    }
    pc_status st = pc_csr_build(&out->csr, pc_graph_edge_index(graph), (int)e, (int)n, err);
    if (st) {
        pc_gnn_gdata_free(out);
        return st;
    }
    out->g.n = (int)n;
    out->g.x = out->x;
    out->g.opcode = op;
    out->g.csr = &out->csr;
    out->edges = pc_graph_edge_index(graph);
    out->m = e;
    out->splits = pc_graph_node_splits(graph, &out->nsplits);
    out->n_orig = (int32_t)n;
    out->m_orig = e;
    if (m->opts.kind == PC_KIND_LAYOUT) {
        int64_t nc = pc_graph_num_config_nodes(graph);
        const int32_t *ids = pc_graph_node_config_ids(graph);
        for (int64_t j = 0; j < nc; j++)
            if (ids[j] < 0 || ids[j] >= n) {
                pc_gnn_gdata_free(out);
                return pc_fail(err, PC_ERR_RANGE, "model: config node id %d out of range",
                               (int)ids[j]);
            }
        out->g.nc = (int)nc;
        out->g.cfg_ids = ids;
        if (m->opts.prune_hops >= 0 && (st = gdata_prune(m, out, err))) {
            pc_gnn_gdata_free(out);
            return st;
        }
    }
    return PC_OK;
}

void pc_gnn_gdata_free(pc_gnn_gdata *d) {
    if (!d) return;
    free(d->own_op);
    free(d->own_cfg);
    free(d->own_edges);
    free(d->own_splits);
    free(d->x);
    pc_csr_free(&d->csr);
    memset(d, 0, sizeof *d);
}

pc_status pc_gnn_prep_configs(const pc_gnn *m, const pc_graph *g, const float *raw,
                              int64_t rows, float *out, pc_error *err) {
    if (!m->opts.encode) {
        pc_prep_apply(&m->cfg_prep, raw, rows, out);
        return PC_OK;
    }
    pc_encode_opts eo = enc_opts(m);
    int W = m->cfg_prep.in_dim, R = raw_cfg_dim(m), O = m->cfg_prep.out_dim;
    if (pc_encode_config_width(&eo, m->opts.kind, R) != W)
        return pc_fail(err, PC_ERR_ARG, "model: config encoding width does not match the model");
    /* the layout mismatch columns read whole configs and the graph, the tile
       steps columns the kernel root's shape */
    pc_encode_mm mm = {0};
    int64_t unit = 1;
    int graphwide = (eo.mismatch && m->opts.kind == PC_KIND_LAYOUT) ||
                    ((eo.steps || eo.rsteps) && m->opts.kind == PC_KIND_TILE);
    if (graphwide) {
        if (!g)
            return pc_fail(err, PC_ERR_ARG, "model: the %s encoding needs the graph",
                           m->opts.kind == PC_KIND_TILE ? (eo.steps ? "steps" : "rsteps")
                                                        : "mismatch");
        pc_encode_graph eg = pc_encode_graph_of(g);
        pc_status st = pc_encode_plan_build(&eo, m->opts.kind, &eg, &mm, err);
        if (st) return st;
        if (m->opts.kind == PC_KIND_LAYOUT) unit = mm.nc > 0 ? mm.nc : 1;
    }
    /* Encoded rows go through one small buffer per thread straight into the
       preprocessing. Encoding a whole chunk first (up to a million layout rows
       when ranking) meant a fresh buffer of hundreds of MB per chunk whose
       page faults cost more than the encoding itself. */
    int64_t block = 2048 / unit > 0 ? 2048 / unit * unit : unit;
    int64_t nblk = (rows + block - 1) / block;
    int fail = 0;
#pragma omp parallel if(nblk > 1) num_threads(pc_threads())
    {
        float *enc = pc_malloc_array((uint64_t)block * (uint64_t)W, sizeof(float));
        if (!enc) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nblk; b++) {
            if (!enc) continue;
            int64_t r0 = b * block, n = rows - r0 < block ? rows - r0 : block;
            /* widths were checked above: these cannot fail but for rows that are
               not whole configs */
            if (pc_encode_configs_mm(&eo, m->opts.kind, graphwide ? &mm : NULL,
                                     raw + (size_t)r0 * (size_t)R, n, R, enc, NULL)) {
#pragma omp atomic write
                fail = 2;
                continue;
            }
            pc_prep_apply(&m->cfg_prep, enc, n, out + (size_t)r0 * (size_t)O);
        }
        free(enc);
    }
    pc_encode_mm_free(&mm);
    if (fail == 2)
        return pc_fail(err, PC_ERR_ARG, "model: %lld config rows are not whole configs",
                       (long long)rows);
    return fail ? pc_fail(err, PC_ERR_NOMEM, "model: out of memory") : PC_OK;
}

/* ---- workspace (the size table and its plan: gnn_ws.h) ------------------------ */

static pc_status nomem(pc_error *err) {
    return pc_fail(err, PC_ERR_NOMEM, "model: out of memory for activations");
}

static void zero(float *p, size_t n) { memset(p, 0, n * sizeof(float)); }

/* The sizes of the pass ws is set up for, over K configs. */
static pc_gnn_ws_dims pass_dims(const pc_gnn_ws *ws, int K, int backward, int fused) {
    pc_gnn_ws_dims d = {(size_t)ws->g.n, (size_t)ws->g.nc, (size_t)K, ws->train, backward, fused};
    return d;
}

/* ---- small helpers -------------------------------------------------------------- */

static void act_fwd(const pc_gnn *m, float *out, const float *in, size_t n) {
    switch (m->opts.act) {
    case PC_ACT_RELU: pc_relu_forward(out, in, n); break;
    case PC_ACT_GELU: pc_gelu_forward(out, in, n); break;
    default: pc_leaky_relu_forward(out, in, LEAKY_SLOPE, n); break;
    }
}
static void act_bwd(const pc_gnn *m, float *dinp, const float *dout, const float *in,
                    size_t n) {
    switch (m->opts.act) {
    case PC_ACT_RELU: pc_relu_backward(dinp, dout, in, n); break;
    case PC_ACT_GELU: pc_gelu_backward(dinp, dout, in, n); break;
    default: pc_leaky_relu_backward(dinp, dout, in, LEAKY_SLOPE, n); break;
    }
}

static float *P(const pc_gnn *m, int i) { return pc_params_data(&m->params, i); }
static float *G(const pc_gnn *m, int i) { return pc_params_grad(&m->params, i); }

/* out (G, P) from x over segments off; pa, pb, am: scratch of G*H each (as the pool needs). */
static void pool_rows(const pc_gnn *m, float *out, float *pa, float *pb, int32_t *am,
                      const float *x, const int32_t *off, int Gs, int H) {
    switch (m->opts.pool) {
    case PC_POOL_SUM: pc_pool_forward(out, NULL, x, off, Gs, H, PC_REDUCE_SUM); break;
    case PC_POOL_MAX: pc_pool_forward(out, am, x, off, Gs, H, PC_REDUCE_MAX); break;
    case PC_POOL_MEANMAX: {
        pc_pool_forward(pa, NULL, x, off, Gs, H, PC_REDUCE_MEAN);
        pc_pool_forward(pb, am, x, off, Gs, H, PC_REDUCE_MAX);
        const float *ins[2] = {pa, pb};
        int cs[2] = {H, H};
        pc_concat_forward(out, ins, cs, 2, Gs);
        break;
    }
    default: pc_pool_forward(out, NULL, x, off, Gs, H, PC_REDUCE_MEAN); break;
    }
}

/* dx += pool backward of dout (G, P); dpa, dpb: scratch (G, H) (meanmax). */
static void pool_bwd(const pc_gnn *m, float *dx, const float *dout, float *dpa, float *dpb,
                     const int32_t *am, const int32_t *off, int Gs, int H) {
    switch (m->opts.pool) {
    case PC_POOL_SUM: pc_pool_backward(dx, dout, NULL, off, Gs, H, PC_REDUCE_SUM); break;
    case PC_POOL_MAX: pc_pool_backward(dx, dout, am, off, Gs, H, PC_REDUCE_MAX); break;
    case PC_POOL_MEANMAX: {
        size_t gh = (size_t)Gs * (size_t)H;
        zero(dpa, gh);
        zero(dpb, gh);
        float *dins[2] = {dpa, dpb};
        int cs[2] = {H, H};
        pc_concat_backward(dins, dout, cs, 2, Gs);
        pc_pool_backward(dx, dpa, NULL, off, Gs, H, PC_REDUCE_MEAN);
        pc_pool_backward(dx, dpb, am, off, Gs, H, PC_REDUCE_MAX);
        break;
    }
    default: pc_pool_backward(dx, dout, NULL, off, Gs, H, PC_REDUCE_MEAN); break;
    }
}

static void offsets(int32_t *off, int Gs, int step) {
    for (int k = 0; k <= Gs; k++) off[k] = k * step;
}

/* ---- GNN over S segments -------------------------------------------------------- */

/* Layer l's slices of the (L, N, ...) buffers. */
typedef struct layer_act {
    float *z, *mean, *rstd, *ao, *au, *cat, *u, *a, *d, *h;
    uint8_t *mask;
} layer_act;

static int use_dropout(const pc_gnn *m, const pc_gnn_ws *ws) {
    return ws->train && m->opts.dropout > 0.0f;
}

static layer_act layer(const pc_gnn *m, const pc_gnn_ws *ws, int l) {
    size_t N = (size_t)ws->N, NH = N * (size_t)m->opts.hidden, o = (size_t)l * NH;
    layer_act a = {.ao = ws->agg_ops + o,
                   .au = ws->agg_users + o,
                   .cat = ws->cat + 3 * o,
                   .u = ws->upd_pre + o,
                   .a = ws->upd + o,
                   .h = ws->h + o};
    if (m->opts.layernorm) {
        a.z = ws->ln_out + o;
        a.mean = ws->ln_mean + (size_t)l * N;
        a.rstd = ws->ln_rstd + (size_t)l * N;
    }
    if (use_dropout(m, ws)) {
        a.d = ws->upd_drop + o;
        a.mask = ws->drop_mask + o;
    }
    return a;
}

/* h_l: the input of layer l. */
static float *layer_in(const pc_gnn *m, const pc_gnn_ws *ws, int l) {
    return l == 0 ? ws->h0 : layer(m, ws, l - 1).h;
}
/* What layer l aggregates: LayerNorm(h_l), or h_l without norm. */
static const float *layer_z(const pc_gnn *m, const pc_gnn_ws *ws, const layer_act *b, int l) {
    return m->opts.layernorm ? b->z : layer_in(m, ws, l);
}
/* The update added to h_l: after dropout when training with it. */
static const float *layer_d(const pc_gnn *m, const pc_gnn_ws *ws, const layer_act *b) {
    return use_dropout(m, ws) ? b->d : b->a;
}
/* The final node tensor h_L. */
static float *gnn_out(const pc_gnn *m, const pc_gnn_ws *ws) {
    return layer_in(m, ws, m->opts.layers);
}

/* h0 = act(pre0), then the L layers, over S segments of n rows (buffers planned). */
static void gnn_forward(const pc_gnn *m, pc_gnn_ws *ws, int S, uint64_t *seed) {
    int n = ws->g.n, H = m->opts.hidden, L = m->opts.layers;
    int N = S * n;
    size_t NH = (size_t)N * (size_t)H;
    ws->N = N;
    act_fwd(m, ws->h0, ws->pre0, NH);
    for (int l = 0; l < L; l++) {
        layer_act b = layer(m, ws, l);
        const float *hin = layer_in(m, ws, l);
        if (m->opts.layernorm)
            pc_layernorm_forward(b.z, b.mean, b.rstd, hin, P(m, m->p_ln_g[l]), P(m, m->p_ln_b[l]),
                                 N, H, LN_EPS);
        const float *z = layer_z(m, ws, &b, l);
        for (int k = 0; k < S; k++) {
            size_t o = (size_t)k * (size_t)n * (size_t)H;
            pc_edge_aggregate_forward(b.ao + o, z + o, ws->g.csr, PC_EDGE_FROM_OPERANDS,
                                      PC_REDUCE_MEAN, H);
            pc_edge_aggregate_forward(b.au + o, z + o, ws->g.csr, PC_EDGE_FROM_USERS,
                                      PC_REDUCE_MEAN, H);
        }
        const float *ins[3] = {z, b.ao, b.au};
        int cs[3] = {H, H, H};
        pc_concat_forward(b.cat, ins, cs, 3, N);
        pc_linear_forward(b.u, b.cat, P(m, m->p_w[l]), P(m, m->p_b[l]), N, 3 * H, H);
        act_fwd(m, b.a, b.u, NH);
        if (use_dropout(m, ws)) pc_dropout_forward(b.d, b.mask, b.a, m->opts.dropout, seed, NH);
        pc_residual_forward(b.h, hin, layer_d(m, ws, &b), NH);
    }
}

/* ws->d_h (S*n, H) holds dL/dh_L (it is consumed); leaves dL/dpre0 in ws->d_pre0. */
static void gnn_backward(pc_gnn *m, pc_gnn_ws *ws, int S) {
    int n = ws->g.n, H = m->opts.hidden, L = m->opts.layers;
    int N = S * n;
    size_t NH = (size_t)N * (size_t)H;
    float *dh = ws->d_h;
    for (int l = L - 1; l >= 0; l--) {
        layer_act b = layer(m, ws, l);
        const float *da = dh;
        if (use_dropout(m, ws)) {
            zero(ws->d_upd, NH);
            pc_dropout_backward(ws->d_upd, dh, b.mask, m->opts.dropout, NH);
            da = ws->d_upd;
        }
        zero(ws->d_upd_pre, NH);
        zero(ws->d_cat, 3 * NH);
        zero(ws->d_ln_out, NH);
        zero(ws->d_agg_ops, NH);
        zero(ws->d_agg_users, NH);
        act_bwd(m, ws->d_upd_pre, da, b.u, NH);
        pc_linear_backward(ws->d_cat, G(m, m->p_w[l]), G(m, m->p_b[l]), ws->d_upd_pre, b.cat,
                           P(m, m->p_w[l]), N, 3 * H, H);
        float *dins[3] = {ws->d_ln_out, ws->d_agg_ops, ws->d_agg_users};
        int cs[3] = {H, H, H};
        pc_concat_backward(dins, ws->d_cat, cs, 3, N);
        for (int k = 0; k < S; k++) {
            size_t o = (size_t)k * (size_t)n * (size_t)H;
            pc_edge_aggregate_backward(ws->d_ln_out + o, ws->d_agg_ops + o, ws->g.csr,
                                       PC_EDGE_FROM_OPERANDS, PC_REDUCE_MEAN, H);
            pc_edge_aggregate_backward(ws->d_ln_out + o, ws->d_agg_users + o, ws->g.csr,
                                       PC_EDGE_FROM_USERS, PC_REDUCE_MEAN, H);
        }
        /* dh already holds the residual path; add the update path */
        if (m->opts.layernorm)
            pc_layernorm_backward(dh, G(m, m->p_ln_g[l]), G(m, m->p_ln_b[l]), ws->d_ln_out,
                                  layer_in(m, ws, l), P(m, m->p_ln_g[l]), b.mean, b.rstd, N, H);
        else
            pc_residual_backward(dh, NULL, ws->d_ln_out, NH);
    }
    zero(ws->d_pre0, NH);
    act_bwd(m, ws->d_pre0, dh, ws->pre0, NH);
}

/* ---- forward -------------------------------------------------------------------- */

static pc_status check_graph(const pc_gnn *m, const pc_gnn_graph *g, pc_error *err) {
    if (!g || g->n < 1 || !g->x || !g->opcode || !g->csr || g->csr->n != g->n)
        return pc_fail(err, PC_ERR_ARG, "model: bad graph (no nodes or CSR mismatch)");
    if (m->opts.kind == PC_KIND_LAYOUT && (g->nc < 0 || (g->nc > 0 && !g->cfg_ids)))
        return pc_fail(err, PC_ERR_ARG, "model: layout graph without config node ids");
    return PC_OK;
}

static pc_status prefix_impl(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                             int train, uint64_t *seed, pc_error *err) {
    pc_status st = check_graph(m, g, err);
    if (st) return st;
    ws->have_prefix = 0;
    ws->K = 0;
    ws->g = *g;
    if (m->opts.kind != PC_KIND_LAYOUT) {
        ws->g.nc = 0;
        ws->g.cfg_ids = NULL;
    }
    ws->train = train;
    pc_gnn_ws_dims dims = pass_dims(ws, 0, 0, 0);
    if (pc_gnn_ws_plan(m, ws, PC_WS_GRAPH, &dims) < 0) return nomem(err);
    int n = g->n, F = m->feat_dim, E = m->opts.emb_dim, H = m->opts.hidden;
    pc_embedding_forward(ws->emb, P(m, m->p_emb), g->opcode, n, E);
    const float *ins[2] = {g->x, ws->emb};
    int cs[2] = {F, E};
    pc_concat_forward(ws->x0, ins, cs, 2, n);
    pc_linear_forward(ws->base, ws->x0, P(m, m->p_in_w), P(m, m->p_in_b), n, F + E, H);
    if (shared_gnn(m)) {
        /* the whole GNN and the pooling are config-independent */
        memcpy(ws->pre0, ws->base, (size_t)n * H * sizeof(float));
        gnn_forward(m, ws, 1, seed);
        offsets(ws->seg_off, 1, n);
        pool_rows(m, ws->pooled, ws->pool_mean, ws->pool_max, ws->pool_arg, gnn_out(m, ws),
                  ws->seg_off, 1, H);
    }
    if (layout_late(m) && ws->g.nc > 0) {
        /* configurable nodes' final embeddings and their projection, shared by all configs */
        int nc = ws->g.nc;
        pc_gather_forward(ws->cfg_node_h, gnn_out(m, ws), ws->g.cfg_ids, nc, H);
        pc_linear_forward(ws->late_proj, ws->cfg_node_h, P(m, m->p_lj_w), NULL, nc, H, H);
    }
    ws->have_prefix = 1;
    return PC_OK;
}

/*
 * Layout late join for inference: one config at a time per thread, so the
 * (K*nc, H) buffers of the training path never exist and each config's rows
 * stay in cache. Same ops in the same order per config as the batched path.
 */
static void layout_late_fused(const pc_gnn *m, pc_gnn_ws *ws, const float *cfg, int K) {
    int H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc, Pw = pool_width(m);
    int T = pc_threads(); /* as planned (gnn_ws.c) */
    size_t nh = (size_t)nc * H, per = 3 * nh + 2 * (size_t)H;
    offsets(ws->cfg_off, 1, nc);
    const int32_t *off = ws->cfg_off;
#pragma omp parallel for schedule(dynamic, 1) num_threads(T)
    for (int k = 0; k < K; k++) {
        int t = omp_get_thread_num();
        float *inj = ws->fused_scratch + (size_t)t * per, *u = inj + nh, *a = u + nh, *pa = a + nh;
        if (nc > 0) {
            pc_linear_forward(inj, cfg + (size_t)k * nc * D, P(m, m->p_cfg_w), P(m, m->p_cfg_b),
                              nc, D, H);
            pc_residual_forward(u, inj, ws->late_proj, nh);
            act_fwd(m, a, u, nh);
        }
        pool_rows(m, ws->cfg_pooled + (size_t)k * Pw, pa, pa + H, ws->fused_arg + (size_t)t * H, a,
                  off, 1, H);
    }
}

/* scores (K) from the readout ws->readout (K, R): Linear -> act -> Linear. */
static pc_cfg_attn_params attn_params(const pc_gnn *m) {
    pc_cfg_attn_params p = {P(m, m->p_at[0]), P(m, m->p_at[1]), P(m, m->p_at[2]),
                            P(m, m->p_at[3]), P(m, m->p_at[4]), P(m, m->p_at[5]),
                            P(m, m->p_at[6]), P(m, m->p_at[7]), P(m, m->p_at[8]),
                            P(m, m->p_at[9])};
    return p;
}

/* Attention groups of K rows: attn_group configs each (one group when K is smaller). */
static int attn_groups(const pc_gnn *m, int K, int *group) {
    *group = K < m->opts.attn_group ? K : m->opts.attn_group;
    return K % *group ? -1 : K / *group;
}

/* The head's input: the readout itself, or after cross-config attention. */
static const float *head_in(const pc_gnn *m, const pc_gnn_ws *ws) {
    return m->opts.attn_heads > 0 ? ws->attn_out : ws->readout;
}

/* The head on ws->readout (K, R), planned; scores (K) unless NULL (backward's recompute). */
static pc_status head_fwd(const pc_gnn *m, pc_gnn_ws *ws, int K, float *scores,
                          pc_error *err) {
    int H = m->opts.hidden, R = readout_width(m);
    if (m->opts.attn_heads > 0) {
        int grp, Gs = attn_groups(m, K, &grp);
        if (Gs < 0)
            return pc_fail(err, PC_ERR_ARG,
                           "model: %d configs are not whole attention groups "
                           "of %d",
                           K, m->opts.attn_group);
        pc_cfg_attn_params p = attn_params(m);
        pc_cfg_attention_forward(ws->attn_out, ws->attn_cache, ws->readout, &p, Gs, grp, R,
                                 m->opts.attn_heads, LN_EPS);
    }
    pc_linear_forward(ws->head_pre, head_in(m, ws), P(m, m->p_h1_w), P(m, m->p_h1_b), K, R, H);
    act_fwd(m, ws->head_act, ws->head_pre, (size_t)K * H);
    if (scores) pc_linear_forward(scores, ws->head_act, P(m, m->p_h2_w), P(m, m->p_h2_b), K, H, 1);
    return PC_OK;
}

/* Head backward: parameter gradients accumulate; ws->d_readout (K, R) is overwritten. */
static void head_bwd(pc_gnn *m, pc_gnn_ws *ws, int K, const float *dscores) {
    int H = m->opts.hidden, R = readout_width(m);
    zero(ws->d_head_act, (size_t)K * H);
    zero(ws->d_head_pre, (size_t)K * H);
    zero(ws->d_readout, (size_t)K * R);
    pc_linear_backward(ws->d_head_act, G(m, m->p_h2_w), G(m, m->p_h2_b), dscores, ws->head_act,
                       P(m, m->p_h2_w), K, H, 1);
    act_bwd(m, ws->d_head_pre, ws->d_head_act, ws->head_pre, (size_t)K * H);
    if (m->opts.attn_heads <= 0) {
        pc_linear_backward(ws->d_readout, G(m, m->p_h1_w), G(m, m->p_h1_b), ws->d_head_pre,
                           ws->readout, P(m, m->p_h1_w), K, R, H);
        return;
    }
    int grp, Gs = attn_groups(m, K, &grp), heads = m->opts.attn_heads;
    zero(ws->d_attn_out, (size_t)K * R);
    pc_linear_backward(ws->d_attn_out, G(m, m->p_h1_w), G(m, m->p_h1_b), ws->d_head_pre,
                       ws->attn_out, P(m, m->p_h1_w), K, R, H);
    pc_cfg_attn_params p = attn_params(m);
    pc_cfg_attn_grads g = {G(m, m->p_at[0]), G(m, m->p_at[1]), G(m, m->p_at[2]),
                           G(m, m->p_at[3]), G(m, m->p_at[4]), G(m, m->p_at[5]),
                           G(m, m->p_at[6]), G(m, m->p_at[7]), G(m, m->p_at[8]),
                           G(m, m->p_at[9])};
    pc_cfg_attention_backward(ws->d_readout, &g, ws->d_attn_out, ws->readout, ws->attn_cache, &p,
                              Gs, grp, R, heads, ws->attn_scratch);
}

/* [pooled || cfg_pooled[k]] per config into the readout (K, R): layout late join. */
static void readout_layout_late(const pc_gnn *m, pc_gnn_ws *ws, int K) {
    int Pw = pool_width(m), R = readout_width(m);
    for (int k = 0; k < K; k++) {
        float *row = ws->readout + (size_t)k * R;
        memcpy(row, ws->pooled, (size_t)Pw * sizeof(float));
        memcpy(row + Pw, ws->cfg_pooled + (size_t)k * Pw, (size_t)Pw * sizeof(float));
    }
}

/* Early join: the configs enter the GNN's input, on S = K copies of the nodes. */
static void configs_early(const pc_gnn *m, pc_gnn_ws *ws, const float *cfg, int K, uint64_t *seed) {
    int n = ws->g.n, H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc;
    size_t nh = (size_t)n * H;
    for (int k = 0; k < K; k++) memcpy(ws->pre0 + k * nh, ws->base, nh * sizeof(float));
    if (m->opts.kind != PC_KIND_LAYOUT) {
        /* tile: the config's projection added to every node */
        pc_linear_forward(ws->cfg_proj, cfg, P(m, m->p_cfg_w), NULL, K, D, H);
        for (int k = 0; k < K; k++)
            for (int i = 0; i < n; i++) {
                float *row = ws->pre0 + k * nh + (size_t)i * H;
                const float *v = ws->cfg_proj + (size_t)k * H;
                for (int c = 0; c < H; c++) row[c] += v[c];
            }
    } else {
        /* layout: per-node configs scattered onto configurable nodes */
        for (int k = 0; k < K; k++)
            for (int j = 0; j < nc; j++)
                ws->cfg_rows[(size_t)k * nc + j] = k * n + ws->g.cfg_ids[j];
        if (nc > 0) {
            pc_linear_forward(ws->cfg_proj, cfg, P(m, m->p_cfg_w), P(m, m->p_cfg_b), K * nc, D, H);
            pc_scatter_add_forward(ws->pre0, ws->cfg_proj, ws->cfg_rows, K * nc, K * n, H);
        }
    }
    gnn_forward(m, ws, K, seed);
    offsets(ws->seg_off, K, n);
    pool_rows(m, ws->pooled, ws->pool_mean, ws->pool_max, ws->pool_arg, gnn_out(m, ws), ws->seg_off,
              K, H);
}

/*
 * The readout (K, R) of K configs against the prefix, the configs part planned
 * first, with backward's buffers when `backward`. scoring: for
 * pc_gnn_score_configs (the layout late join fused).
 */
static pc_status configs_impl(const pc_gnn *m, pc_gnn_ws *ws, const float *cfg, int K,
                              uint64_t *seed, int scoring, int backward, pc_error *err) {
    if (!ws->have_prefix) return pc_fail(err, PC_ERR_ARG, "model: no prefix computed");
    if (K < 1 || !cfg) return pc_fail(err, PC_ERR_ARG, "model: need K >= 1 configs");
    int n = ws->g.n, H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc;
    int late = shared_gnn(m), layout = m->opts.kind == PC_KIND_LAYOUT;
    if ((int64_t)K * n > INT_MAX / 4 || (int64_t)K * nc > INT_MAX / 4)
        return pc_fail(err, PC_ERR_RANGE, "model: %d configs x %d nodes too large", K, n);
    ws->K = 0;
    ws->fused = layout && late && scoring;
    pc_gnn_ws_dims dims = pass_dims(ws, K, backward, ws->fused);
    if (pc_gnn_ws_plan(m, ws, PC_WS_CONFIGS, &dims) < 0) return nomem(err);
    ws->for_backward = backward;
    ws->cfg = cfg;
    ws->K = K;
    ws->S = late ? 1 : K;
    ws->cfg_has_seed = seed != NULL;
    ws->cfg_seed = seed ? *seed : 0;
    int Pw = pool_width(m), R = readout_width(m);
    if (!late) configs_early(m, ws, cfg, K, seed);
    if (ws->fused) {
        layout_late_fused(m, ws, cfg, K);
        readout_layout_late(m, ws, K);
    } else if (layout && late) {
        /* u[k][j] = act(cfg[k][j] @ cfg.w^T + cfg.b + hn[j] @ late.w^T), pooled per config */
        size_t KN = (size_t)K * nc;
        offsets(ws->cfg_off, K, nc);
        if (nc > 0) {
            pc_linear_forward(ws->cfg_proj, cfg, P(m, m->p_cfg_w), P(m, m->p_cfg_b), K * nc, D, H);
            size_t nh = (size_t)nc * H;
            for (int k = 0; k < K; k++)
                pc_residual_forward(ws->late_pre + k * nh, ws->cfg_proj + k * nh, ws->late_proj,
                                    nh);
            act_fwd(m, ws->late_act, ws->late_pre, KN * H);
        }
        pool_rows(m, ws->cfg_pooled, ws->cfg_pool_mean, ws->cfg_pool_max, ws->cfg_pool_arg,
                  ws->late_act, ws->cfg_off, K, H);
        readout_layout_late(m, ws, K);
    } else if (layout) {
        offsets(ws->cfg_off, K, nc);
        if (nc > 0) pc_gather_forward(ws->cfg_gather, gnn_out(m, ws), ws->cfg_rows, K * nc, H);
        pool_rows(m, ws->cfg_pooled, ws->cfg_pool_mean, ws->cfg_pool_max, ws->cfg_pool_arg,
                  ws->cfg_gather, ws->cfg_off, K, H);
        const float *ins[2] = {ws->pooled, ws->cfg_pooled};
        int cs[2] = {Pw, Pw};
        pc_concat_forward(ws->readout, ins, cs, 2, K);
    } else if (late) {
        for (int k = 0; k < K; k++) {
            float *row = ws->readout + (size_t)k * R;
            memcpy(row, ws->pooled, (size_t)Pw * sizeof(float));
            memcpy(row + Pw, cfg + (size_t)k * D, (size_t)D * sizeof(float));
        }
    } else {
        memcpy(ws->readout, ws->pooled, (size_t)K * R * sizeof(float));
    }
    return PC_OK;
}

pc_status pc_gnn_forward(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                           const float *cfg, int K, uint64_t *dropout_seed, float *scores,
                           pc_error *err) {
    int train = dropout_seed != NULL;
    pc_status st = prefix_impl(m, ws, g, train, dropout_seed, err);
    /* training's entry: backward's buffers planned up front */
    if (!st) st = configs_impl(m, ws, cfg, K, dropout_seed, 0, 1, err);
    if (!st) st = head_fwd(m, ws, K, scores, err);
    return st;
}

size_t pc_gnn_bytes_per_config(const pc_gnn *m, const pc_gnn_graph *g) {
    size_t H = (size_t)m->opts.hidden, L = (size_t)m->opts.layers;
    size_t rows = (size_t)(m->opts.kind == PC_KIND_LAYOUT ? g->nc : 0) + 1;
    if (!shared_gnn(m)) rows += (size_t)g->n * (10 + 4 * L); /* a GNN pass per config */
    return rows * (H + (size_t)m->cfg_dim) * 4 * sizeof(float);
}

/*
 * The floats a pass writes, after the size table (gnn_ws.h): forward, plus
 * backward when train. Buffers of another path (dropout's without it, the
 * layout late join's outside it) are never touched and cost no resident
 * memory; the 1.5x growth slack is not touched either. The formula the
 * memory estimate was measured with (bench/RESULTS.md), kept as it was.
 */
double pc_gnn_pass_bytes(const pc_gnn *m, int64_t n, int64_t nc, int64_t K, int train) {
    double H = m->opts.hidden, L = m->opts.layers, F = m->feat_dim, E = m->opts.emb_dim;
    double Pw = pool_width(m), R = readout_width(m), Kd = (double)(K > 0 ? K : 1);
    int layout = m->opts.kind == PC_KIND_LAYOUT, late = shared_gnn(m);
    int drop = train && m->opts.dropout > 0.0f, ln = m->opts.layernorm;
    double nd = (double)n, ncd = layout ? (double)nc : 0.0;
    double S = late ? 1.0 : Kd, N = S * nd, NH = N * H;
    /* prefix (n rows) and the GNN over S copies */
    double f = nd * E + nd * (F + E) + nd * H;
    double per_layer = 8.0 * NH + (ln ? NH + 2.0 * N : 0.0) + (drop ? NH + NH / 4.0 : 0.0);
    f += NH /* pre0 */ + NH /* h0 */ + L * per_layer;
    f += 3.0 * S * Pw + S * H; /* pooled, pool_mean/max/arg */
    if (!late && layout)
        f += Kd * ncd * H * 2.0 + Kd * ncd; /* cfg_proj, cfg_gather, cfg_rows */
    else if (!late)
        f += Kd * H; /* cfg_proj */
    if (layout && late)
        f += 2.0 * ncd * H + 3.0 * Kd * ncd * H; /* cfg_node_h, late_proj;
                                          cfg_proj, late_pre, late_act */
    if (layout) f += 3.0 * Kd * Pw;              /* cfg_pooled, cfg_pool_mean/max */
    f += Kd * R + 2.0 * Kd * H;                  /* readout, head_pre, head_act */
    if (m->opts.attn_heads > 0) f += 2.0 * Kd * R + 4.0 * Kd * R; /* attn_out, cache (about) */
    if (train) {
        f += 9.0 * NH + (drop ? NH : 0.0);                     /* d_h .. d_pre0 (d_cat 3), d_upd */
        f += nd * H + nd * (F + E) + nd * E;                   /* d_base, d_x0, d_emb */
        f += Kd * (ncd + 1.0) * H + Kd * ncd * H;              /* d_cfg_proj, d_cfg_gather */
        if (layout && late) f += 2.0 * Kd * ncd * H + ncd * H; /* d_late_act/pre/proj */
        f += 2.0 * Kd * H + Kd * R + 4.0 * S * Pw;             /* d_head_*, d_readout, pooling */
        if (m->opts.attn_heads > 0) f += 6.0 * Kd * R;
    }
    return f * (double)sizeof(float);
}

pc_status pc_gnn_prefix(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                          pc_error *err) {
    return prefix_impl(m, ws, g, 0, NULL, err);
}

pc_status pc_gnn_score_configs(const pc_gnn *m, pc_gnn_ws *ws, const float *cfg, int K,
                                 float *scores, pc_error *err) {
    if (ws->train) return pc_fail(err, PC_ERR_ARG, "model: prefix was computed for training");
    /* chunks of configs are large: never backward's buffers (a backward recomputes) */
    pc_status st = configs_impl(m, ws, cfg, K, NULL, 1, 0, err);
    return st ? st : head_fwd(m, ws, K, scores, err);
}

/* ---- backward ------------------------------------------------------------------- */

/*
 * Backward's buffers, planned before any gradient is touched. A pass planned
 * without them (pc_gnn_readout before the first backward in ws, or
 * pc_gnn_score_configs) is recomputed when planning them re-planned the
 * configs part, or when it skipped the activations (fused): exactly, with
 * the same dropout masks; the head too when `head`.
 */
static pc_status ensure_backward(const pc_gnn *m, pc_gnn_ws *ws, int head, pc_error *err) {
    ws->backward_seen = 1;
    if (ws->for_backward) return PC_OK;
    int K = ws->K;
    pc_gnn_ws_dims dims = pass_dims(ws, K, 1, 0);
    int moved = pc_gnn_ws_plan(m, ws, PC_WS_CONFIGS, &dims);
    if (moved < 0) {
        ws->K = 0;
        return nomem(err);
    }
    ws->for_backward = 1;
    if (!moved && !ws->fused) return PC_OK;
    uint64_t seed = ws->cfg_seed;
    pc_status st = configs_impl(m, ws, ws->cfg, K, ws->cfg_has_seed ? &seed : NULL, 0, 1, err);
    if (!st && head) st = head_fwd(m, ws, K, NULL, err);
    return st;
}

/* Layout late join, from ws->d_readout down to ws->d_h (n, H) of the shared GNN's output. */
static void layout_late_backward(pc_gnn *m, pc_gnn_ws *ws) {
    int n = ws->g.n, H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc, K = ws->K;
    int Pw = pool_width(m);
    size_t nh = (size_t)nc * H, KN = (size_t)K * nc;
    zero(ws->d_pooled, (size_t)K * Pw);
    zero(ws->d_cfg_pooled, (size_t)K * Pw);
    float *dins[2] = {ws->d_pooled, ws->d_cfg_pooled};
    int cs[2] = {Pw, Pw};
    pc_concat_backward(dins, ws->d_readout, cs, 2, K);
    /* the graph pooling is shared: its gradient is the sum over configs (row 0) */
    for (int k = 1; k < K; k++)
        pc_residual_backward(ws->d_pooled, NULL, ws->d_pooled + (size_t)k * Pw, (size_t)Pw);
    pool_bwd(m, ws->d_h, ws->d_pooled, ws->d_pool_mean, ws->d_pool_max, ws->pool_arg, ws->seg_off,
             1, H);
    if (nc == 0) return;
    zero(ws->d_late_act, KN * H);
    zero(ws->d_late_pre, KN * H);
    pool_bwd(m, ws->d_late_act, ws->d_cfg_pooled, ws->d_pool_mean, ws->d_pool_max, ws->cfg_pool_arg,
             ws->cfg_off, K, H);
    act_bwd(m, ws->d_late_pre, ws->d_late_act, ws->late_pre, KN * H);
    pc_linear_backward(NULL, G(m, m->p_cfg_w), G(m, m->p_cfg_b), ws->d_late_pre, ws->cfg,
                       P(m, m->p_cfg_w), K * nc, D, H);
    zero(ws->d_late_proj, nh);
    for (int k = 0; k < K; k++)
        pc_residual_backward(ws->d_late_proj, NULL, ws->d_late_pre + k * nh, nh);
    zero(ws->d_cfg_node_h, nh);
    pc_linear_backward(ws->d_cfg_node_h, G(m, m->p_lj_w), NULL, ws->d_late_proj, ws->cfg_node_h,
                       P(m, m->p_lj_w), nc, H, H);
    pc_gather_backward(ws->d_h, ws->d_cfg_node_h, ws->g.cfg_ids, nc, n, H);
}

static void readout_bwd(pc_gnn *m, pc_gnn_ws *ws);

pc_status pc_gnn_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dscores, pc_error *err) {
    if (!ws->have_prefix || ws->K < 1)
        return pc_fail(err, PC_ERR_ARG, "model: backward without a forward");
    pc_status st = ensure_backward(m, ws, 1, err);
    if (st) return st;
    head_bwd(m, ws, ws->K, dscores);
    readout_bwd(m, ws);
    return PC_OK;
}

pc_status pc_gnn_readout(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                           const float *cfg, int K, uint64_t *dropout_seed, float *r,
                           pc_error *err) {
    pc_status st = prefix_impl(m, ws, g, dropout_seed != NULL, dropout_seed, err);
    if (!st) st = configs_impl(m, ws, cfg, K, dropout_seed, 0, ws->backward_seen, err);
    if (!st) memcpy(r, ws->readout, (size_t)K * readout_width(m) * sizeof(float));
    return st;
}

pc_status pc_gnn_readout_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dr,
                                    pc_error *err) {
    if (!ws->have_prefix || ws->K < 1)
        return pc_fail(err, PC_ERR_ARG, "model: backward without a forward");
    pc_status st = ensure_backward(m, ws, 0, err);
    if (st) return st;
    memcpy(ws->d_readout, dr, (size_t)ws->K * readout_width(m) * sizeof(float));
    readout_bwd(m, ws);
    return PC_OK;
}

pc_status pc_gnn_head_forward(const pc_gnn *m, pc_gnn_ws *ws, const float *r, int K,
                                float *scores, pc_error *err) {
    if (K < 1) return pc_fail(err, PC_ERR_ARG, "model: need K >= 1 configs");
    /* the head alone, with its backward: no graph rows */
    pc_gnn_ws_dims dims = {0, 0, (size_t)K, 0, 1, 0};
    int moved = pc_gnn_ws_plan(m, ws, PC_WS_CONFIGS, &dims);
    ws->hK = 0;
    if (moved < 0) return nomem(err);
    if (moved) ws->for_backward = 0; /* a pass over configs in ws is recomputed for backward */
    memcpy(ws->readout, r, (size_t)K * readout_width(m) * sizeof(float));
    ws->hK = K;
    return head_fwd(m, ws, K, scores, err);
}

pc_status pc_gnn_head_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dscores, float *dr,
                                 pc_error *err) {
    if (ws->hK < 1) return pc_fail(err, PC_ERR_ARG, "model: head backward without a forward");
    head_bwd(m, ws, ws->hK, dscores);
    if (dr) memcpy(dr, ws->d_readout, (size_t)ws->hK * readout_width(m) * sizeof(float));
    return PC_OK;
}

/* From ws->d_readout (K, R) down to the parameters (every buffer planned). */
static void readout_bwd(pc_gnn *m, pc_gnn_ws *ws) {
    int n = ws->g.n, H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc, K = ws->K, S = ws->S;
    int F = m->feat_dim, E = m->opts.emb_dim;
    int late = shared_gnn(m), layout = m->opts.kind == PC_KIND_LAYOUT;
    int Pw = pool_width(m), R = readout_width(m);
    const float *cfg = ws->cfg;
    size_t nh = (size_t)n * H, NH = (size_t)S * nh;
    zero(ws->d_h, NH);
    if (layout && late) {
        layout_late_backward(m, ws);
    } else if (layout) {
        zero(ws->d_pooled, (size_t)K * Pw);
        zero(ws->d_cfg_pooled, (size_t)K * Pw);
        zero(ws->d_cfg_gather, (size_t)K * nc * H);
        float *dins[2] = {ws->d_pooled, ws->d_cfg_pooled};
        int cs[2] = {Pw, Pw};
        pc_concat_backward(dins, ws->d_readout, cs, 2, K);
        pool_bwd(m, ws->d_h, ws->d_pooled, ws->d_pool_mean, ws->d_pool_max, ws->pool_arg,
                 ws->seg_off, K, H);
        pool_bwd(m, ws->d_cfg_gather, ws->d_cfg_pooled, ws->d_pool_mean, ws->d_pool_max,
                 ws->cfg_pool_arg, ws->cfg_off, K, H);
        if (nc > 0) pc_gather_backward(ws->d_h, ws->d_cfg_gather, ws->cfg_rows, K * nc, S * n, H);
    } else if (late) {
        zero(ws->d_pooled, (size_t)Pw);
        for (int k = 0; k < K; k++)
            for (int c = 0; c < Pw; c++) ws->d_pooled[c] += ws->d_readout[(size_t)k * R + c];
        pool_bwd(m, ws->d_h, ws->d_pooled, ws->d_pool_mean, ws->d_pool_max, ws->pool_arg,
                 ws->seg_off, 1, H);
    } else {
        pool_bwd(m, ws->d_h, ws->d_readout, ws->d_pool_mean, ws->d_pool_max, ws->pool_arg,
                 ws->seg_off, K, H);
    }
    gnn_backward(m, ws, S);
    /* config injection and the shared base */
    zero(ws->d_base, nh);
    for (int k = 0; k < S; k++) pc_residual_backward(ws->d_base, NULL, ws->d_pre0 + k * nh, nh);
    if (!late && !layout) {
        zero(ws->d_cfg_proj, (size_t)K * H);
        for (int k = 0; k < K; k++) {
            float *d = ws->d_cfg_proj + (size_t)k * H;
            for (int i = 0; i < n; i++) {
                const float *row = ws->d_pre0 + k * nh + (size_t)i * H;
                for (int c = 0; c < H; c++) d[c] += row[c];
            }
        }
        pc_linear_backward(NULL, G(m, m->p_cfg_w), NULL, ws->d_cfg_proj, cfg, P(m, m->p_cfg_w), K,
                           D, H);
    } else if (layout && !late && nc > 0) {
        zero(ws->d_cfg_proj, (size_t)K * nc * H);
        pc_scatter_add_backward(ws->d_cfg_proj, ws->d_pre0, ws->cfg_rows, K * nc, H);
        pc_linear_backward(NULL, G(m, m->p_cfg_w), G(m, m->p_cfg_b), ws->d_cfg_proj, cfg,
                           P(m, m->p_cfg_w), K * nc, D, H);
    }
    zero(ws->d_x0, (size_t)n * (F + E));
    zero(ws->d_emb, (size_t)n * E);
    pc_linear_backward(ws->d_x0, G(m, m->p_in_w), G(m, m->p_in_b), ws->d_base, ws->x0,
                       P(m, m->p_in_w), n, F + E, H);
    float *dins[2] = {NULL, ws->d_emb};
    int cs[2] = {F, E};
    pc_concat_backward(dins, ws->d_x0, cs, 2, n);
    pc_embedding_backward(G(m, m->p_emb), ws->d_emb, ws->g.opcode, n, m->opts.num_opcodes, E);
}
