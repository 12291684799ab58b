/* The tile and layout GNN cost models: parameters, forward, backward (see model.h). */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "graph/graph.h"
#include "gnn/encode.h"
#include "gnn/gnn.h"

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
static int readout_width(const pc_gnn *m) {
    int P = pool_width(m);
    if (m->opts.kind == PC_KIND_LAYOUT) return 2 * P;
    return is_late(m) ? P + m->cfg_dim : P;
}

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

pc_status pc_gnn_new(const pc_gnn_opts *opts, int feat_dim, int cfg_dim, uint64_t seed,
                       pc_gnn **out, pc_error *err) {
    *out = NULL;
    const pc_gnn_opts *o = opts;
    if (o->kind != PC_KIND_TILE && o->kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "model: kind must be tile or layout");
    if (o->hidden < 1 || o->layers < 0 || o->emb_dim < 1 || o->num_opcodes < 1 ||
        feat_dim < 1 || cfg_dim < 1)
        return pc_fail(err, PC_ERR_ARG,
                       "model: bad sizes (hidden %d, layers %d, emb %d, opcodes %d, feat %d, "
                       "cfg %d)",
                       o->hidden, o->layers, o->emb_dim, o->num_opcodes, feat_dim, cfg_dim);
    if ((unsigned)o->pool > PC_POOL_MEANMAX || (unsigned)o->join > PC_JOIN_LATE ||
        (unsigned)o->act > PC_ACT_GELU)
        return pc_fail(err, PC_ERR_ARG, "model: bad pool/join/activation option");
    if (!(o->dropout >= 0.0f && o->dropout < 1.0f))
        return pc_fail(err, PC_ERR_ARG, "model: dropout %g not in [0, 1)", (double)o->dropout);
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
    pc_status st = PC_OK;
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
    if (pc_encode_node_width(&eo, nraw) != m->node_prep.in_dim)
        return pc_fail(err, PC_ERR_ARG, "model: node_feat has %d columns, the model expects %s",
                       nraw, m->opts.encode ? "140 (encoded)" : "another width");
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
        pc_status es = enc ? pc_encode_node(&eo, pc_graph_node_feat(graph), n, nraw, enc, err)
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

pc_status pc_gnn_prep_configs(const pc_gnn *m, const float *raw, int64_t rows, float *out,
                                pc_error *err) {
    if (!m->opts.encode) {
        pc_prep_apply(&m->cfg_prep, raw, rows, out);
        return PC_OK;
    }
    pc_encode_opts eo = enc_opts(m);
    int W = m->cfg_prep.in_dim, R = raw_cfg_dim(m), O = m->cfg_prep.out_dim;
    if (pc_encode_config_width(&eo, m->opts.kind, R) != W)
        return pc_fail(err, PC_ERR_ARG, "model: config encoding width does not match the model");
    /* Encoded rows go through one small buffer per thread straight into the
       preprocessing. Encoding a whole chunk first (up to a million layout rows
       when ranking) meant a fresh buffer of hundreds of MB per chunk whose
       page faults cost more than the encoding itself. */
    enum { BLOCK = 2048 };
    int64_t nblk = (rows + BLOCK - 1) / BLOCK;
    int fail = 0;
#pragma omp parallel if(nblk > 1) num_threads(pc_threads())
    {
        float *enc = pc_malloc_array((uint64_t)BLOCK * (uint64_t)W, sizeof(float));
        if (!enc) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nblk; b++) {
            if (!enc) continue;
            int64_t r0 = b * BLOCK, n = rows - r0 < BLOCK ? rows - r0 : BLOCK;
            /* widths were checked above: these cannot fail */
            pc_encode_configs(&eo, m->opts.kind, raw + (size_t)r0 * (size_t)R, n, R, enc, NULL);
            pc_prep_apply(&m->cfg_prep, enc, n, out + (size_t)r0 * (size_t)O);
        }
        free(enc);
    }
    return fail ? pc_fail(err, PC_ERR_NOMEM, "model: out of memory") : PC_OK;
}

/* ---- workspace ------------------------------------------------------------------ */

typedef struct fbuf {
    float *p;
    size_t cap;
} fbuf;
typedef struct ibuf {
    int32_t *p;
    size_t cap;
} ibuf;
typedef struct ubuf {
    uint8_t *p;
    size_t cap;
} ubuf;

/* Activations of one GNN layer over N = S*n rows. */
typedef struct lbuf {
    fbuf z, lnm, lnr, ao, au, cat, u, a, d, hout;
    ubuf mask;
} lbuf;

struct pc_gnn_ws {
    /* what the last forward saw */
    pc_gnn_graph g;
    const float *cfg;
    int K, S, train, have_prefix;
    /* prefix, n rows */
    fbuf emb, x0, base;
    /* GNN, S*n rows */
    fbuf pre0, inj, h0;
    lbuf *lay;
    int nlay;
    fbuf pa, pb, pooled, gath, cpa, cpb, cpooled;
    ibuf am, cam, off, coff, cidx;
    /* head, K rows */
    fbuf r, h1, a1;
    /* layout late join: hn @ late.w^T (nc, H); u, act(u) (K*nc, H) */
    fbuf ljp, lu, la, dla, dlu, dljp;
    int fused; /* the last layout-late scoring skipped the buffers backward needs */
    int hK;    /* configs of the last pc_gnn_head_forward */
    fbuf ra, acache, dra, ascratch; /* cross-config attention */
    /* backward scratch */
    fbuf dh, dt, du, dcat, dz, dao, dau, dpre, dbase, dx0, demb, dinj, dr, dh1, da1, dpa, dpb,
        dgath, dpooled, dcpooled;
};

pc_gnn_ws *pc_gnn_ws_new(void) { return calloc(1, sizeof(pc_gnn_ws)); }

static void lbuf_free(lbuf *l) {
    fbuf *fs[] = {&l->z, &l->lnm, &l->lnr, &l->ao, &l->au, &l->cat, &l->u, &l->a, &l->d, &l->hout};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) free(fs[i]->p);
    free(l->mask.p);
}

void pc_gnn_ws_free(pc_gnn_ws *ws) {
    if (!ws) return;
    fbuf *fs[] = {&ws->emb, &ws->x0,  &ws->base,  &ws->pre0, &ws->inj,     &ws->h0,
                  &ws->pa,  &ws->pb,  &ws->pooled, &ws->gath, &ws->cpa,     &ws->cpb,
                  &ws->cpooled, &ws->r, &ws->h1,  &ws->a1,   &ws->dh,      &ws->dt,
                  &ws->du,  &ws->dcat, &ws->dz,   &ws->dao,  &ws->dau,     &ws->dpre,
                  &ws->dbase, &ws->dx0, &ws->demb, &ws->dinj, &ws->dr,     &ws->dh1,
                  &ws->da1, &ws->dpa, &ws->dpb,   &ws->dgath, &ws->dpooled, &ws->dcpooled,
                  &ws->ljp, &ws->lu,  &ws->la,    &ws->dla,   &ws->dlu,     &ws->dljp,
                  &ws->ra,  &ws->acache, &ws->dra, &ws->ascratch};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) free(fs[i]->p);
    free(ws->am.p);
    free(ws->cam.p);
    free(ws->off.p);
    free(ws->coff.p);
    free(ws->cidx.p);
    for (int l = 0; l < ws->nlay; l++) lbuf_free(&ws->lay[l]);
    free(ws->lay);
    free(ws);
}

/*
 * Grows b to n floats (contents are not kept when it grows). Growth is by at
 * least 1.5x: graphs of a training set differ in size, and each fresh buffer
 * costs page faults on first touch (measured: 7% of a layout step).
 */
static size_t grow_to(size_t cap, size_t n) { return n > cap + cap / 2 ? n : cap + cap / 2; }
static int fgrow(fbuf *b, size_t n) {
    if (n == 0) n = 1;
    if (b->cap >= n) return 1;
    n = grow_to(b->cap, n);
    free(b->p);
    b->p = pc_malloc_array(n, sizeof(float));
    b->cap = b->p ? n : 0;
    return b->p != NULL;
}
static int igrow(ibuf *b, size_t n) {
    if (n == 0) n = 1;
    if (b->cap >= n) return 1;
    n = grow_to(b->cap, n);
    free(b->p);
    b->p = pc_malloc_array(n, sizeof(int32_t));
    b->cap = b->p ? n : 0;
    return b->p != NULL;
}
static int ugrow(ubuf *b, size_t n) {
    if (n == 0) n = 1;
    if (b->cap >= n) return 1;
    n = grow_to(b->cap, n);
    free(b->p);
    b->p = pc_malloc_array(n, 1);
    b->cap = b->p ? n : 0;
    return b->p != NULL;
}
/* Zeroes the first n floats; backward grows every buffer first (bwd_grow). */
static float *fzero(fbuf *b, size_t n) {
    memset(b->p, 0, (n ? n : 1) * sizeof(float));
    return b->p;
}

static pc_status nomem(pc_error *err) {
    return pc_fail(err, PC_ERR_NOMEM, "model: out of memory for activations");
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

/* out (G, P) from x over segments off; pa, pb, am: scratch of G*H each, sized. */
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

/* out (G, P) from x over segments off; pa, pb, am are grown scratch (G, H). */
static int pool_fwd(const pc_gnn *m, fbuf *out, fbuf *pa, fbuf *pb, ibuf *am, const float *x,
                    const int32_t *off, int Gs, int H) {
    size_t gh = (size_t)Gs * (size_t)H;
    if (!fgrow(out, (size_t)Gs * (size_t)pool_width(m)) || !igrow(am, gh) || !fgrow(pa, gh) ||
        !fgrow(pb, gh))
        return 0;
    pool_rows(m, out->p, pa->p, pb->p, am->p, x, off, Gs, H);
    return 1;
}

/* dx += pool backward of dout (G, P); dpa, dpb scratch. */
static void pool_bwd(const pc_gnn *m, float *dx, const float *dout, fbuf *dpa, fbuf *dpb,
                    const ibuf *am, const int32_t *off, int Gs, int H) {
    switch (m->opts.pool) {
    case PC_POOL_SUM: pc_pool_backward(dx, dout, NULL, off, Gs, H, PC_REDUCE_SUM); break;
    case PC_POOL_MAX: pc_pool_backward(dx, dout, am->p, off, Gs, H, PC_REDUCE_MAX); break;
    case PC_POOL_MEANMAX: {
        size_t gh = (size_t)Gs * (size_t)H;
        fzero(dpa, gh);
        fzero(dpb, gh);
        float *dins[2] = {dpa->p, dpb->p};
        int cs[2] = {H, H};
        pc_concat_backward(dins, dout, cs, 2, Gs);
        pc_pool_backward(dx, dpa->p, NULL, off, Gs, H, PC_REDUCE_MEAN);
        pc_pool_backward(dx, dpb->p, am->p, off, Gs, H, PC_REDUCE_MAX);
        break;
    }
    default: pc_pool_backward(dx, dout, NULL, off, Gs, H, PC_REDUCE_MEAN); break;
    }
}

static int offsets(ibuf *b, int Gs, int step) {
    if (!igrow(b, (size_t)Gs + 1)) return 0;
    for (int k = 0; k <= Gs; k++) b->p[k] = k * step;
    return 1;
}

/* ---- GNN over S segments -------------------------------------------------------- */

static float *layer_in(pc_gnn_ws *ws, int l) { return l == 0 ? ws->h0.p : ws->lay[l - 1].hout.p; }
static float *layer_z(const pc_gnn *m, pc_gnn_ws *ws, int l) {
    return m->opts.layernorm ? ws->lay[l].z.p : layer_in(ws, l);
}
static int use_dropout(const pc_gnn *m, const pc_gnn_ws *ws) {
    return ws->train && m->opts.dropout > 0.0f;
}
static float *layer_d(const pc_gnn *m, pc_gnn_ws *ws, int l) {
    return use_dropout(m, ws) ? ws->lay[l].d.p : ws->lay[l].a.p;
}
/* The final node tensor h_L. */
static float *gnn_out(const pc_gnn *m, pc_gnn_ws *ws) {
    return m->opts.layers ? ws->lay[m->opts.layers - 1].hout.p : ws->h0.p;
}

/* h0 = act(pre0), then the L layers, over S segments of n rows. */
static pc_status gnn_forward(const pc_gnn *m, pc_gnn_ws *ws, int S, uint64_t *seed,
                             pc_error *err) {
    int n = ws->g.n, H = m->opts.hidden, L = m->opts.layers;
    int N = S * n;
    size_t NH = (size_t)N * (size_t)H;
    if (ws->nlay < L) {
        lbuf *lay = realloc(ws->lay, (size_t)L * sizeof *lay);
        if (!lay) return nomem(err);
        memset(lay + ws->nlay, 0, (size_t)(L - ws->nlay) * sizeof *lay);
        ws->lay = lay;
        ws->nlay = L;
    }
    if (!fgrow(&ws->h0, NH)) return nomem(err);
    act_fwd(m, ws->h0.p, ws->pre0.p, NH);
    for (int l = 0; l < L; l++) {
        lbuf *b = &ws->lay[l];
        if (!fgrow(&b->ao, NH) || !fgrow(&b->au, NH) || !fgrow(&b->cat, 3 * NH) ||
            !fgrow(&b->u, NH) || !fgrow(&b->a, NH) || !fgrow(&b->hout, NH))
            return nomem(err);
        const float *hin = layer_in(ws, l);
        if (m->opts.layernorm) {
            if (!fgrow(&b->z, NH) || !fgrow(&b->lnm, (size_t)N) || !fgrow(&b->lnr, (size_t)N))
                return nomem(err);
            pc_layernorm_forward(b->z.p, b->lnm.p, b->lnr.p, hin, P(m, m->p_ln_g[l]),
                                 P(m, m->p_ln_b[l]), N, H, LN_EPS);
        }
        const float *z = layer_z(m, ws, l);
        for (int k = 0; k < S; k++) {
            size_t o = (size_t)k * (size_t)n * (size_t)H;
            pc_edge_aggregate_forward(b->ao.p + o, z + o, ws->g.csr, PC_EDGE_FROM_OPERANDS,
                                      PC_REDUCE_MEAN, H);
            pc_edge_aggregate_forward(b->au.p + o, z + o, ws->g.csr, PC_EDGE_FROM_USERS,
                                      PC_REDUCE_MEAN, H);
        }
        const float *ins[3] = {z, b->ao.p, b->au.p};
        int cs[3] = {H, H, H};
        pc_concat_forward(b->cat.p, ins, cs, 3, N);
        pc_linear_forward(b->u.p, b->cat.p, P(m, m->p_w[l]), P(m, m->p_b[l]), N, 3 * H, H);
        act_fwd(m, b->a.p, b->u.p, NH);
        if (use_dropout(m, ws)) {
            if (!fgrow(&b->d, NH) || !ugrow(&b->mask, NH)) return nomem(err);
            pc_dropout_forward(b->d.p, b->mask.p, b->a.p, m->opts.dropout, seed, NH);
        }
        pc_residual_forward(b->hout.p, hin, layer_d(m, ws, l), NH);
    }
    return PC_OK;
}

/* ws->dh (S*n, H) holds dL/dh_L (it is consumed); leaves dL/dpre0 in ws->dpre. */
static void gnn_backward(pc_gnn *m, pc_gnn_ws *ws, int S) {
    int n = ws->g.n, H = m->opts.hidden, L = m->opts.layers;
    int N = S * n;
    size_t NH = (size_t)N * (size_t)H;
    float *dh = ws->dh.p;
    for (int l = L - 1; l >= 0; l--) {
        lbuf *b = &ws->lay[l];
        const float *da = dh;
        if (use_dropout(m, ws)) {
            fzero(&ws->dt, NH);
            pc_dropout_backward(ws->dt.p, dh, b->mask.p, m->opts.dropout, NH);
            da = ws->dt.p;
        }
        fzero(&ws->du, NH);
        fzero(&ws->dcat, 3 * NH);
        fzero(&ws->dz, NH);
        fzero(&ws->dao, NH);
        fzero(&ws->dau, NH);
        act_bwd(m, ws->du.p, da, b->u.p, NH);
        pc_linear_backward(ws->dcat.p, G(m, m->p_w[l]), G(m, m->p_b[l]), ws->du.p, b->cat.p,
                           P(m, m->p_w[l]), N, 3 * H, H);
        float *dins[3] = {ws->dz.p, ws->dao.p, ws->dau.p};
        int cs[3] = {H, H, H};
        pc_concat_backward(dins, ws->dcat.p, cs, 3, N);
        for (int k = 0; k < S; k++) {
            size_t o = (size_t)k * (size_t)n * (size_t)H;
            pc_edge_aggregate_backward(ws->dz.p + o, ws->dao.p + o, ws->g.csr,
                                       PC_EDGE_FROM_OPERANDS, PC_REDUCE_MEAN, H);
            pc_edge_aggregate_backward(ws->dz.p + o, ws->dau.p + o, ws->g.csr,
                                       PC_EDGE_FROM_USERS, PC_REDUCE_MEAN, H);
        }
        /* dh already holds the residual path; add the update path */
        if (m->opts.layernorm)
            pc_layernorm_backward(dh, G(m, m->p_ln_g[l]), G(m, m->p_ln_b[l]), ws->dz.p,
                                  layer_in(ws, l), P(m, m->p_ln_g[l]), b->lnm.p, b->lnr.p, N, H);
        else
            pc_residual_backward(dh, NULL, ws->dz.p, NH);
    }
    fzero(&ws->dpre, NH);
    act_bwd(m, ws->dpre.p, dh, ws->pre0.p, NH);
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
    ws->g = *g;
    if (m->opts.kind != PC_KIND_LAYOUT) {
        ws->g.nc = 0;
        ws->g.cfg_ids = NULL;
    }
    ws->train = train;
    int n = g->n, F = m->feat_dim, E = m->opts.emb_dim, H = m->opts.hidden;
    if (!fgrow(&ws->emb, (size_t)n * E) || !fgrow(&ws->x0, (size_t)n * (F + E)) ||
        !fgrow(&ws->base, (size_t)n * H))
        return nomem(err);
    pc_embedding_forward(ws->emb.p, P(m, m->p_emb), g->opcode, n, E);
    const float *ins[2] = {g->x, ws->emb.p};
    int cs[2] = {F, E};
    pc_concat_forward(ws->x0.p, ins, cs, 2, n);
    pc_linear_forward(ws->base.p, ws->x0.p, P(m, m->p_in_w), P(m, m->p_in_b), n, F + E, H);
    if (shared_gnn(m)) {
        /* the whole GNN and the pooling are config-independent */
        if (!fgrow(&ws->pre0, (size_t)n * H)) return nomem(err);
        memcpy(ws->pre0.p, ws->base.p, (size_t)n * H * sizeof(float));
        if ((st = gnn_forward(m, ws, 1, seed, err))) return st;
        if (!offsets(&ws->off, 1, n) ||
            !pool_fwd(m, &ws->pooled, &ws->pa, &ws->pb, &ws->am, gnn_out(m, ws), ws->off.p, 1, H))
            return nomem(err);
    }
    if (layout_late(m)) {
        /* configurable nodes' final embeddings and their projection, shared by all configs */
        int nc = ws->g.nc;
        if (!fgrow(&ws->gath, (size_t)nc * H) || !fgrow(&ws->ljp, (size_t)nc * H))
            return nomem(err);
        if (nc > 0) {
            pc_gather_forward(ws->gath.p, gnn_out(m, ws), ws->g.cfg_ids, nc, H);
            pc_linear_forward(ws->ljp.p, ws->gath.p, P(m, m->p_lj_w), NULL, nc, H, H);
        }
    }
    ws->have_prefix = 1;
    return PC_OK;
}

/*
 * Layout late join for inference: one config at a time per thread, so the
 * (K*nc, H) buffers of the training path never exist and each config's rows
 * stay in cache. Same ops in the same order per config as the batched path.
 */
static pc_status layout_late_fused(const pc_gnn *m, pc_gnn_ws *ws, const float *cfg, int K,
                                   pc_error *err) {
    int H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc, Pw = pool_width(m);
    int T = pc_threads();
    size_t nh = (size_t)nc * H, per = 3 * nh + 2 * (size_t)H;
    if (!fgrow(&ws->cpooled, (size_t)K * Pw) || !fgrow(&ws->lu, (size_t)T * per) ||
        !igrow(&ws->cam, (size_t)T * H) || !offsets(&ws->coff, 1, nc))
        return nomem(err);
    const int32_t *off = ws->coff.p;
#pragma omp parallel for schedule(dynamic, 1) num_threads(T)
    for (int k = 0; k < K; k++) {
        int t = omp_get_thread_num();
        float *inj = ws->lu.p + (size_t)t * per, *u = inj + nh, *a = u + nh, *pa = a + nh;
        if (nc > 0) {
            pc_linear_forward(inj, cfg + (size_t)k * nc * D, P(m, m->p_cfg_w), P(m, m->p_cfg_b),
                              nc, D, H);
            pc_residual_forward(u, inj, ws->ljp.p, nh);
            act_fwd(m, a, u, nh);
        }
        pool_rows(m, ws->cpooled.p + (size_t)k * Pw, pa, pa + H, ws->cam.p + (size_t)t * H, a,
                  off, 1, H);
    }
    return PC_OK;
}

/* scores (K) from the readout ws->r (K, R): Linear -> act -> Linear. */
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

/* The head's input: r itself, or r after cross-config attention (ws->ra). */
static const float *head_in(const pc_gnn *m, const pc_gnn_ws *ws) {
    return m->opts.attn_heads > 0 ? ws->ra.p : ws->r.p;
}

static pc_status attn_fwd(const pc_gnn *m, pc_gnn_ws *ws, int K, pc_error *err) {
    int R = readout_width(m), grp, G = attn_groups(m, K, &grp);
    if (G < 0)
        return pc_fail(err, PC_ERR_ARG, "model: %d configs are not whole attention groups of "
                       "%d", K, m->opts.attn_group);
    if (!fgrow(&ws->ra, (size_t)K * R) ||
        !fgrow(&ws->acache, pc_cfg_attention_cache_size(G, grp, R, m->opts.attn_heads, 1)))
        return nomem(err);
    pc_cfg_attn_params p = attn_params(m);
    pc_cfg_attention_forward(ws->ra.p, ws->acache.p, ws->r.p, &p, G, grp, R, m->opts.attn_heads,
                             LN_EPS);
    return PC_OK;
}

static pc_status head_fwd(const pc_gnn *m, pc_gnn_ws *ws, int K, float *scores,
                          pc_error *err) {
    int H = m->opts.hidden, R = readout_width(m);
    if (!fgrow(&ws->h1, (size_t)K * H) || !fgrow(&ws->a1, (size_t)K * H)) return nomem(err);
    if (m->opts.attn_heads > 0) {
        pc_status st = attn_fwd(m, ws, K, err);
        if (st) return st;
    }
    pc_linear_forward(ws->h1.p, head_in(m, ws), P(m, m->p_h1_w), P(m, m->p_h1_b), K, R, H);
    act_fwd(m, ws->a1.p, ws->h1.p, (size_t)K * H);
    pc_linear_forward(scores, ws->a1.p, P(m, m->p_h2_w), P(m, m->p_h2_b), K, H, 1);
    return PC_OK;
}

/* Head backward: parameter gradients accumulate; ws->dr (K, R) is overwritten. */
static pc_status head_bwd(pc_gnn *m, pc_gnn_ws *ws, int K, const float *dscores,
                          pc_error *err) {
    int H = m->opts.hidden, R = readout_width(m);
    if (!fgrow(&ws->da1, (size_t)K * H) || !fgrow(&ws->dh1, (size_t)K * H) ||
        !fgrow(&ws->dr, (size_t)K * R))
        return nomem(err);
    fzero(&ws->da1, (size_t)K * H);
    fzero(&ws->dh1, (size_t)K * H);
    fzero(&ws->dr, (size_t)K * R);
    pc_linear_backward(ws->da1.p, G(m, m->p_h2_w), G(m, m->p_h2_b), dscores, ws->a1.p,
                       P(m, m->p_h2_w), K, H, 1);
    act_bwd(m, ws->dh1.p, ws->da1.p, ws->h1.p, (size_t)K * H);
    if (m->opts.attn_heads <= 0) {
        pc_linear_backward(ws->dr.p, G(m, m->p_h1_w), G(m, m->p_h1_b), ws->dh1.p, ws->r.p,
                           P(m, m->p_h1_w), K, R, H);
        return PC_OK;
    }
    int grp, Gs = attn_groups(m, K, &grp), heads = m->opts.attn_heads;
    if (!fgrow(&ws->dra, (size_t)K * R) ||
        !fgrow(&ws->ascratch, pc_cfg_attention_scratch_size(Gs, grp, R, heads, 1)))
        return nomem(err);
    fzero(&ws->dra, (size_t)K * R);
    pc_linear_backward(ws->dra.p, G(m, m->p_h1_w), G(m, m->p_h1_b), ws->dh1.p, ws->ra.p,
                       P(m, m->p_h1_w), K, R, H);
    pc_cfg_attn_params p = attn_params(m);
    pc_cfg_attn_grads g = {G(m, m->p_at[0]), G(m, m->p_at[1]), G(m, m->p_at[2]),
                           G(m, m->p_at[3]), G(m, m->p_at[4]), G(m, m->p_at[5]),
                           G(m, m->p_at[6]), G(m, m->p_at[7]), G(m, m->p_at[8]),
                           G(m, m->p_at[9])};
    pc_cfg_attention_backward(ws->dr.p, &g, ws->dra.p, ws->r.p, ws->acache.p, &p, Gs, grp, R,
                              heads, ws->ascratch.p);
    return PC_OK;
}

/* Readout ws->r (K, R) of K configs against the prefix, then scores (unless NULL). */
static pc_status configs_impl(const pc_gnn *m, pc_gnn_ws *ws, const float *cfg, int K,
                              uint64_t *seed, int fused, float *scores, pc_error *err) {
    if (!ws->have_prefix) return pc_fail(err, PC_ERR_ARG, "model: no prefix computed");
    if (K < 1 || !cfg) return pc_fail(err, PC_ERR_ARG, "model: need K >= 1 configs");
    int n = ws->g.n, H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc;
    int late = shared_gnn(m), layout = m->opts.kind == PC_KIND_LAYOUT;
    if ((int64_t)K * n > INT_MAX / 4 || (int64_t)K * nc > INT_MAX / 4)
        return pc_fail(err, PC_ERR_RANGE, "model: %d configs x %d nodes too large", K, n);
    ws->cfg = cfg;
    ws->K = K;
    ws->S = late ? 1 : K;
    pc_status st;
    int Pw = pool_width(m), R = readout_width(m);
    if (!late) {
        int N = K * n;
        size_t nh = (size_t)n * H;
        if (!fgrow(&ws->pre0, (size_t)N * H)) return nomem(err);
        for (int k = 0; k < K; k++) memcpy(ws->pre0.p + k * nh, ws->base.p, nh * sizeof(float));
        if (!layout) {
            /* early join: the config's projection added to every node */
            if (!fgrow(&ws->inj, (size_t)K * H)) return nomem(err);
            pc_linear_forward(ws->inj.p, cfg, P(m, m->p_cfg_w), NULL, K, D, H);
            for (int k = 0; k < K; k++)
                for (int i = 0; i < n; i++) {
                    float *row = ws->pre0.p + k * nh + (size_t)i * H;
                    const float *v = ws->inj.p + (size_t)k * H;
                    for (int c = 0; c < H; c++) row[c] += v[c];
                }
        } else {
            /* layout: per-node configs scattered onto configurable nodes */
            if (!igrow(&ws->cidx, (size_t)K * nc) || !fgrow(&ws->inj, (size_t)K * nc * H))
                return nomem(err);
            for (int k = 0; k < K; k++)
                for (int j = 0; j < nc; j++) ws->cidx.p[(size_t)k * nc + j] = k * n + ws->g.cfg_ids[j];
            if (nc > 0) {
                pc_linear_forward(ws->inj.p, cfg, P(m, m->p_cfg_w), P(m, m->p_cfg_b), K * nc, D,
                                  H);
                pc_scatter_add_forward(ws->pre0.p, ws->inj.p, ws->cidx.p, K * nc, N, H);
            }
        }
        if ((st = gnn_forward(m, ws, K, seed, err))) return st;
        if (!offsets(&ws->off, K, n) ||
            !pool_fwd(m, &ws->pooled, &ws->pa, &ws->pb, &ws->am, gnn_out(m, ws), ws->off.p, K, H))
            return nomem(err);
    }
    if (!fgrow(&ws->r, (size_t)K * R)) return nomem(err);
    ws->fused = layout && late && fused;
    if (ws->fused) {
        if ((st = layout_late_fused(m, ws, cfg, K, err))) return st;
        for (int k = 0; k < K; k++) {
            float *row = ws->r.p + (size_t)k * R;
            memcpy(row, ws->pooled.p, (size_t)Pw * sizeof(float));
            memcpy(row + Pw, ws->cpooled.p + (size_t)k * Pw, (size_t)Pw * sizeof(float));
        }
    } else if (layout && late) {
        /* u[k][j] = act(cfg[k][j] @ cfg.w^T + cfg.b + hn[j] @ late.w^T), pooled per config */
        size_t KN = (size_t)K * nc;
        if (!fgrow(&ws->inj, KN * H) || !fgrow(&ws->lu, KN * H) || !fgrow(&ws->la, KN * H) ||
            !offsets(&ws->coff, K, nc))
            return nomem(err);
        if (nc > 0) {
            pc_linear_forward(ws->inj.p, cfg, P(m, m->p_cfg_w), P(m, m->p_cfg_b), K * nc, D, H);
            size_t nh = (size_t)nc * H;
            for (int k = 0; k < K; k++)
                pc_residual_forward(ws->lu.p + k * nh, ws->inj.p + k * nh, ws->ljp.p, nh);
            act_fwd(m, ws->la.p, ws->lu.p, KN * H);
        }
        if (!pool_fwd(m, &ws->cpooled, &ws->cpa, &ws->cpb, &ws->cam, ws->la.p, ws->coff.p, K, H))
            return nomem(err);
        for (int k = 0; k < K; k++) {
            float *row = ws->r.p + (size_t)k * R;
            memcpy(row, ws->pooled.p, (size_t)Pw * sizeof(float));
            memcpy(row + Pw, ws->cpooled.p + (size_t)k * Pw, (size_t)Pw * sizeof(float));
        }
    } else if (layout) {
        if (!fgrow(&ws->gath, (size_t)K * nc * H) || !offsets(&ws->coff, K, nc)) return nomem(err);
        if (nc > 0) pc_gather_forward(ws->gath.p, gnn_out(m, ws), ws->cidx.p, K * nc, H);
        if (!pool_fwd(m, &ws->cpooled, &ws->cpa, &ws->cpb, &ws->cam, ws->gath.p, ws->coff.p, K, H))
            return nomem(err);
        const float *ins[2] = {ws->pooled.p, ws->cpooled.p};
        int cs[2] = {Pw, Pw};
        pc_concat_forward(ws->r.p, ins, cs, 2, K);
    } else if (late) {
        for (int k = 0; k < K; k++) {
            float *row = ws->r.p + (size_t)k * R;
            memcpy(row, ws->pooled.p, (size_t)Pw * sizeof(float));
            memcpy(row + Pw, cfg + (size_t)k * D, (size_t)D * sizeof(float));
        }
    } else {
        memcpy(ws->r.p, ws->pooled.p, (size_t)K * R * sizeof(float));
    }
    return scores ? head_fwd(m, ws, K, scores, err) : PC_OK;
}

pc_status pc_gnn_forward(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                           const float *cfg, int K, uint64_t *dropout_seed, float *scores,
                           pc_error *err) {
    int train = dropout_seed != NULL;
    pc_status st = prefix_impl(m, ws, g, train, dropout_seed, err);
    if (!st) st = configs_impl(m, ws, cfg, K, dropout_seed, 0, scores, err);
    return st;
}

size_t pc_gnn_bytes_per_config(const pc_gnn *m, const pc_gnn_graph *g) {
    size_t H = (size_t)m->opts.hidden, L = (size_t)m->opts.layers;
    size_t rows = (size_t)(m->opts.kind == PC_KIND_LAYOUT ? g->nc : 0) + 1;
    if (!shared_gnn(m)) rows += (size_t)g->n * (10 + 4 * L); /* a GNN pass per config */
    return rows * (H + (size_t)m->cfg_dim) * 4 * sizeof(float);
}

/*
 * Mirrors the fgrow/fzero calls of prefix_impl, configs_impl, gnn_forward,
 * head_fwd and (train) bwd_grow / gnn_backward / head_bwd: the floats a pass
 * writes. Buffers only grown for another path (dt without dropout, dla / dlu
 * outside layout late join) are never touched and cost no resident memory;
 * fgrow's 1.5x slack is not touched either.
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
    f += 3.0 * S * Pw + S * H;                         /* pooled, pa, pb, am */
    if (!late && layout) f += Kd * ncd * H * 2.0 + Kd * ncd; /* inj, gath, cidx */
    else if (!late) f += Kd * H;                       /* inj */
    if (layout && late) f += 2.0 * ncd * H + 3.0 * Kd * ncd * H; /* gath, ljp; inj, lu, la */
    if (layout) f += 3.0 * Kd * Pw;                    /* cpooled, cpa, cpb */
    f += Kd * R + 2.0 * Kd * H;                        /* r, h1, a1 */
    if (m->opts.attn_heads > 0) f += 2.0 * Kd * R + 4.0 * Kd * R; /* ra, cache (about) */
    if (train) {
        f += 9.0 * NH + (drop ? NH : 0.0);             /* dh du dcat(3) dz dao dau dpre [dt] */
        f += nd * H + nd * (F + E) + nd * E;           /* dbase, dx0, demb */
        f += Kd * (ncd + 1.0) * H + Kd * ncd * H;      /* dinj, dgath */
        if (layout && late) f += 2.0 * Kd * ncd * H + ncd * H; /* dla, dlu, dljp */
        f += 2.0 * Kd * H + Kd * R + 4.0 * S * Pw;     /* da1, dh1, dr, pooling scratch */
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
    return configs_impl(m, ws, cfg, K, NULL, 1, scores, err);
}

/* ---- backward ------------------------------------------------------------------- */

/* Grows every backward buffer before any gradient is touched. */
static int bwd_grow(const pc_gnn *m, pc_gnn_ws *ws) {
    size_t n = (size_t)ws->g.n, H = (size_t)m->opts.hidden, K = (size_t)ws->K;
    size_t S = (size_t)ws->S, nc = (size_t)ws->g.nc, NH = S * n * H;
    size_t Pw = (size_t)pool_width(m), R = (size_t)readout_width(m);
    size_t G = K > 1 ? K : 1;
    return fgrow(&ws->da1, K * H) && fgrow(&ws->dh1, K * H) && fgrow(&ws->dr, K * R) &&
           fgrow(&ws->dh, NH) && fgrow(&ws->dt, NH) && fgrow(&ws->du, NH) &&
           fgrow(&ws->dcat, 3 * NH) && fgrow(&ws->dz, NH) && fgrow(&ws->dao, NH) &&
           fgrow(&ws->dau, NH) && fgrow(&ws->dpre, NH) && fgrow(&ws->dbase, n * H) &&
           fgrow(&ws->dx0, n * (size_t)(m->feat_dim + m->opts.emb_dim)) &&
           fgrow(&ws->demb, n * (size_t)m->opts.emb_dim) && fgrow(&ws->dinj, K * (nc + 1) * H) &&
           fgrow(&ws->dpa, G * H) && fgrow(&ws->dpb, G * H) && fgrow(&ws->dgath, K * nc * H) &&
           fgrow(&ws->dpooled, G * Pw) && fgrow(&ws->dcpooled, G * Pw) &&
           fgrow(&ws->dla, K * nc * H + 1) && fgrow(&ws->dlu, K * nc * H + 1) &&
           fgrow(&ws->dljp, nc * H + 1) && fgrow(&ws->dgath, nc * H + 1);
}

/* Layout late join, from ws->dr down to ws->dh (n, H) of the shared GNN's output. */
static void layout_late_backward(pc_gnn *m, pc_gnn_ws *ws) {
    int n = ws->g.n, H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc, K = ws->K;
    int Pw = pool_width(m);
    size_t nh = (size_t)nc * H, KN = (size_t)K * nc;
    fzero(&ws->dpooled, (size_t)K * Pw);
    fzero(&ws->dcpooled, (size_t)K * Pw);
    float *dins[2] = {ws->dpooled.p, ws->dcpooled.p};
    int cs[2] = {Pw, Pw};
    pc_concat_backward(dins, ws->dr.p, cs, 2, K);
    /* the graph pooling is shared: its gradient is the sum over configs (row 0) */
    for (int k = 1; k < K; k++)
        pc_residual_backward(ws->dpooled.p, NULL, ws->dpooled.p + (size_t)k * Pw, (size_t)Pw);
    pool_bwd(m, ws->dh.p, ws->dpooled.p, &ws->dpa, &ws->dpb, &ws->am, ws->off.p, 1, H);
    if (nc == 0) return;
    fzero(&ws->dla, KN * H);
    fzero(&ws->dlu, KN * H);
    pool_bwd(m, ws->dla.p, ws->dcpooled.p, &ws->dpa, &ws->dpb, &ws->cam, ws->coff.p, K, H);
    act_bwd(m, ws->dlu.p, ws->dla.p, ws->lu.p, KN * H);
    pc_linear_backward(NULL, G(m, m->p_cfg_w), G(m, m->p_cfg_b), ws->dlu.p, ws->cfg,
                       P(m, m->p_cfg_w), K * nc, D, H);
    fzero(&ws->dljp, nh);
    for (int k = 0; k < K; k++) pc_residual_backward(ws->dljp.p, NULL, ws->dlu.p + k * nh, nh);
    fzero(&ws->dgath, nh);
    pc_linear_backward(ws->dgath.p, G(m, m->p_lj_w), NULL, ws->dljp.p, ws->gath.p,
                       P(m, m->p_lj_w), nc, H, H);
    pc_gather_backward(ws->dh.p, ws->dgath.p, ws->g.cfg_ids, nc, n, H);
}

static pc_status readout_bwd(pc_gnn *m, pc_gnn_ws *ws, pc_error *err);

pc_status pc_gnn_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dscores, pc_error *err) {
    if (!ws->have_prefix || ws->K < 1)
        return pc_fail(err, PC_ERR_ARG, "model: backward without a forward");
    if (!bwd_grow(m, ws)) return nomem(err);
    pc_status st = PC_OK;
    if (ws->fused) { /* rebuild the activations the fused scoring did not keep */
        if ((st = configs_impl(m, ws, ws->cfg, ws->K, NULL, 0, NULL, err))) return st;
        if (!bwd_grow(m, ws)) return nomem(err);
    }
    if ((st = head_bwd(m, ws, ws->K, dscores, err))) return st;
    return readout_bwd(m, ws, err);
}

pc_status pc_gnn_readout(const pc_gnn *m, pc_gnn_ws *ws, const pc_gnn_graph *g,
                           const float *cfg, int K, uint64_t *dropout_seed, float *r,
                           pc_error *err) {
    pc_status st = prefix_impl(m, ws, g, dropout_seed != NULL, dropout_seed, err);
    if (!st) st = configs_impl(m, ws, cfg, K, dropout_seed, 0, NULL, err);
    if (!st) memcpy(r, ws->r.p, (size_t)K * readout_width(m) * sizeof(float));
    return st;
}

pc_status pc_gnn_readout_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dr,
                                    pc_error *err) {
    if (!ws->have_prefix || ws->K < 1)
        return pc_fail(err, PC_ERR_ARG, "model: backward without a forward");
    if (!bwd_grow(m, ws)) return nomem(err);
    memcpy(ws->dr.p, dr, (size_t)ws->K * readout_width(m) * sizeof(float));
    return readout_bwd(m, ws, err);
}

int pc_gnn_readout_width(const pc_gnn *m) { return readout_width(m); }

pc_status pc_gnn_head_forward(const pc_gnn *m, pc_gnn_ws *ws, const float *r, int K,
                                float *scores, pc_error *err) {
    if (K < 1) return pc_fail(err, PC_ERR_ARG, "model: need K >= 1 configs");
    size_t n = (size_t)K * readout_width(m);
    if (!fgrow(&ws->r, n)) return nomem(err);
    memcpy(ws->r.p, r, n * sizeof(float));
    ws->hK = K;
    return head_fwd(m, ws, K, scores, err);
}

pc_status pc_gnn_head_backward(pc_gnn *m, pc_gnn_ws *ws, const float *dscores, float *dr,
                                 pc_error *err) {
    if (ws->hK < 1) return pc_fail(err, PC_ERR_ARG, "model: head backward without a forward");
    pc_status st = head_bwd(m, ws, ws->hK, dscores, err);
    if (!st && dr) memcpy(dr, ws->dr.p, (size_t)ws->hK * readout_width(m) * sizeof(float));
    return st;
}

/* From ws->dr (K, R) down to the parameters. */
static pc_status readout_bwd(pc_gnn *m, pc_gnn_ws *ws, pc_error *err) {
    (void)err;
    int n = ws->g.n, H = m->opts.hidden, D = m->cfg_dim, nc = ws->g.nc, K = ws->K, S = ws->S;
    int F = m->feat_dim, E = m->opts.emb_dim;
    int late = shared_gnn(m), layout = m->opts.kind == PC_KIND_LAYOUT;
    int Pw = pool_width(m), R = readout_width(m);
    const float *cfg = ws->cfg;
    size_t nh = (size_t)n * H, NH = (size_t)S * nh;
    /* allocation failures leave the gradients partial; buffers only ever grow, and
       every size here was already allocated once by the forward for the same shapes */
    fzero(&ws->dh, NH);
    if (layout && late) {
        layout_late_backward(m, ws);
    } else if (layout) {
        fzero(&ws->dpooled, (size_t)K * Pw);
        fzero(&ws->dcpooled, (size_t)K * Pw);
        fzero(&ws->dgath, (size_t)K * nc * H);
        float *dins[2] = {ws->dpooled.p, ws->dcpooled.p};
        int cs[2] = {Pw, Pw};
        pc_concat_backward(dins, ws->dr.p, cs, 2, K);
        pool_bwd(m, ws->dh.p, ws->dpooled.p, &ws->dpa, &ws->dpb, &ws->am, ws->off.p, K, H);
        pool_bwd(m, ws->dgath.p, ws->dcpooled.p, &ws->dpa, &ws->dpb, &ws->cam, ws->coff.p, K,
                 H);
        if (nc > 0) pc_gather_backward(ws->dh.p, ws->dgath.p, ws->cidx.p, K * nc, S * n, H);
    } else if (late) {
        fzero(&ws->dpooled, (size_t)Pw);
        for (int k = 0; k < K; k++)
            for (int c = 0; c < Pw; c++) ws->dpooled.p[c] += ws->dr.p[(size_t)k * R + c];
        pool_bwd(m, ws->dh.p, ws->dpooled.p, &ws->dpa, &ws->dpb, &ws->am, ws->off.p, 1, H);
    } else {
        pool_bwd(m, ws->dh.p, ws->dr.p, &ws->dpa, &ws->dpb, &ws->am, ws->off.p, K, H);
    }
    gnn_backward(m, ws, S);
    /* config injection and the shared base */
    fzero(&ws->dbase, nh);
    for (int k = 0; k < S; k++) pc_residual_backward(ws->dbase.p, NULL, ws->dpre.p + k * nh, nh);
    if (!late && !layout) {
        fzero(&ws->dinj, (size_t)K * H);
        for (int k = 0; k < K; k++) {
            float *d = ws->dinj.p + (size_t)k * H;
            for (int i = 0; i < n; i++) {
                const float *row = ws->dpre.p + k * nh + (size_t)i * H;
                for (int c = 0; c < H; c++) d[c] += row[c];
            }
        }
        pc_linear_backward(NULL, G(m, m->p_cfg_w), NULL, ws->dinj.p, cfg, P(m, m->p_cfg_w), K, D,
                           H);
    } else if (layout && !late && nc > 0) {
        fzero(&ws->dinj, (size_t)K * nc * H);
        pc_scatter_add_backward(ws->dinj.p, ws->dpre.p, ws->cidx.p, K * nc, H);
        pc_linear_backward(NULL, G(m, m->p_cfg_w), G(m, m->p_cfg_b), ws->dinj.p, cfg,
                           P(m, m->p_cfg_w), K * nc, D, H);
    }
    fzero(&ws->dx0, (size_t)n * (F + E));
    fzero(&ws->demb, (size_t)n * E);
    pc_linear_backward(ws->dx0.p, G(m, m->p_in_w), G(m, m->p_in_b), ws->dbase.p, ws->x0.p,
                       P(m, m->p_in_w), n, F + E, H);
    float *dins[2] = {NULL, ws->demb.p};
    int cs[2] = {F, E};
    pc_concat_backward(dins, ws->dx0.p, cs, 2, n);
    pc_embedding_backward(G(m, m->p_emb), ws->demb.p, ws->g.opcode, n, m->opts.num_opcodes, E);
    return PC_OK;
}
