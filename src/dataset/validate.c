/*
 * Content checks of a graph. Every problem is reported, but each kind of
 * problem is capped at a few lines plus a count, so a broken file with a
 * million bad edges yields a readable report. The checks take each array in
 * chunks (pc_vcheck_chunk_), so a loaded graph hands them whole arrays and
 * pc_graph_check_file (check_file.c) streams them from the file in bounded
 * memory: one verdict whichever way the data arrives.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dataset/graph_internal.h"

#define PC_REPORT_CAP 10

typedef struct vctx {
    const pc_graph *g;
    pc_report *r;
    int64_t problems;
    pc_graph_widths w; /* what the model(s) need */
    int named;         /* w.who names one model (else the messages say "the models") */
} vctx;

/* One kind of problem: lines past the cap are only counted. */
typedef struct vkind {
    vctx *v;
    char what[96]; /* for the "... and N more <what>" line */
    int64_t count;
} vkind;

/* Non-positive runtimes seen so far: the first PC_REPORT_CAP kept for the report. */
typedef struct rt_seen {
    int64_t zeros, bad;
    int64_t idx[PC_REPORT_CAP], val[PC_REPORT_CAP];
} rt_seen;

struct pc_vcheck {
    vctx v;
    int allow_zero;
    vkind k1[PC_K_COUNT], k2[PC_K_COUNT]; /* per key: up to two kinds of problem */
    rt_seen rt[PC_K_COUNT];
    unsigned char *seen; /* node_config_ids: one bit per node */
    int64_t prev_split;
};

static void emit(vctx *v, const char *fmt, va_list ap) PC_PRINTF(2, 0);

static void emit(vctx *v, const char *fmt, va_list ap) {
    char line[768];
    vsnprintf(line, sizeof line, fmt, ap);
    if (v->r) pc_report_add(v->r, "%s: %s", v->g->path, line);
}

static void problem(vctx *v, const char *fmt, ...) PC_PRINTF(2, 3);

static void problem(vctx *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit(v, fmt, ap);
    va_end(ap);
    v->problems++;
}

static void kind_add(vkind *k, const char *fmt, ...) PC_PRINTF(2, 3);

static void kind_add(vkind *k, const char *fmt, ...) {
    k->v->problems++;
    if (k->count++ >= PC_REPORT_CAP) return;
    va_list ap;
    va_start(ap, fmt);
    emit(k->v, fmt, ap);
    va_end(ap);
}

static void kind_end(vkind *k) {
    if (k->count > PC_REPORT_CAP && k->v->r)
        pc_report_add(k->v->r, "%s: ... and %" PRId64 " more %s", k->v->g->path,
                      k->count - PC_REPORT_CAP, k->what);
}

/* ---- structure --------------------------------------------------------- */

/* The widths the model(s) need: by default those every model is built for
   (tpugraphs/features.h; train refuses others), else one checkpoint's. */
static void check_widths(vctx *v) {
    const pc_graph *g = v->g;
    const pc_graph_widths *w = &v->w;
    const char *cfg = g->kind == PC_KIND_TILE ? "config_feat" : "node_config_feat";
    if (w->kind != PC_KIND_AUTO && g->kind != w->kind) {
        problem(v, "a %s graph, but %s reads %s graphs", pc_kind_name(g->kind), w->who,
                pc_kind_name(w->kind));
        return;
    }
    const int64_t want = g->kind == PC_KIND_TILE ? w->tile_config_dim : w->layout_config_dim;
    if (!v->named) { /* every model: the messages as they always were */
        if (g->feat_dim != w->node_feat_dim)
            problem(v, "node_feat has %" PRId64 " columns, the models need %" PRId64,
                    g->feat_dim, w->node_feat_dim);
        if (g->cfg_dim != want)
            problem(v, "%s has %" PRId64 " features per config, the %s models need %" PRId64,
                    cfg, g->cfg_dim, pc_kind_name(g->kind), want);
        return;
    }
    if (g->feat_dim != w->node_feat_dim)
        problem(v, "node_feat has %" PRId64 " columns, %s expects %" PRId64, g->feat_dim, w->who,
                w->node_feat_dim);
    if (g->cfg_dim != want)
        problem(v, "%s has %" PRId64 " features per config, %s expects %" PRId64, cfg, g->cfg_dim,
                w->who, want);
}

static void check_sizes(vctx *v) {
    const pc_graph *g = v->g;
    if (g->n == 0) problem(v, "graph has no nodes (node_feat has 0 rows)");
    if (g->c == 0) problem(v, "graph has no configs (config_runtime is empty)");
    if (g->kind == PC_KIND_LAYOUT && g->nc == 0)
        problem(v, "layout graph has no configurable nodes (node_config_ids is empty)");
    check_widths(v);
}

static void check_opcodes(vkind *k, const int32_t *op, int64_t i0, int64_t n) {
    const int64_t max = k->v->w.num_opcodes - 1;
    for (int64_t j = 0; j < n; j++)
        if (op[j] < 0 || op[j] > max)
            kind_add(k, "node_opcode[%" PRId64 "] = %" PRId32 " is outside [0, %" PRId64 "]%s%s",
                     i0 + j, op[j], max, k->v->named ? " as " : "",
                     k->v->named ? k->v->w.who : "");
}

/* e: `n` edges (pairs) from edge i0 on. */
static void check_edges(vkind *k, const int32_t *e, int64_t i0, int64_t n) {
    const int64_t nodes = k->v->g->n;
    for (int64_t j = 0; j < n; j++) {
        int32_t a = e[2 * j], b = e[2 * j + 1];
        if (a < 0 || a >= nodes || b < 0 || b >= nodes)
            kind_add(k,
                     "edge_index[%" PRId64 "] = [%" PRId32 ", %" PRId32
                     "]: endpoint outside [0, %" PRId64 ")",
                     i0 + j, a, b, nodes);
    }
}

static void check_config_ids(pc_vcheck *c, const int32_t *ids, int64_t i0, int64_t n) {
    const int64_t nodes = c->v.g->n;
    vkind *range = &c->k1[PC_K_NODE_CONFIG_IDS], *dup = &c->k2[PC_K_NODE_CONFIG_IDS];
    for (int64_t j = 0; j < n; j++) {
        const int64_t i = i0 + j;
        if (ids[j] < 0 || ids[j] >= nodes) {
            kind_add(range,
                     "node_config_ids[%" PRId64 "] = %" PRId32 " is outside [0, %" PRId64 ")", i,
                     ids[j], nodes);
        } else if (c->seen && (c->seen[ids[j] >> 3] >> (ids[j] & 7)) & 1) {
            kind_add(dup, "node_config_ids[%" PRId64 "] = %" PRId32 " repeats an earlier id", i,
                     ids[j]);
        } else if (c->seen) {
            c->seen[ids[j] >> 3] |= (unsigned char)(1u << (ids[j] & 7));
        }
    }
}

static void check_splits(pc_vcheck *c, const int64_t *s, int64_t i0, int64_t n) {
    const int64_t nodes = c->v.g->n;
    vkind *range = &c->k1[PC_K_NODE_SPLITS], *order = &c->k2[PC_K_NODE_SPLITS];
    for (int64_t j = 0; j < n; j++) {
        const int64_t i = i0 + j;
        if (s[j] < 0 || s[j] > nodes)
            kind_add(range, "node_splits[%" PRId64 "] = %" PRId64 " is outside [0, %" PRId64 "]", i,
                     s[j], nodes);
        if (i > 0 && s[j] < c->prev_split)
            kind_add(order,
                     "node_splits[%" PRId64 "] = %" PRId64 " is smaller than node_splits[%" PRId64
                     "] = %" PRId64 " (splits must be non-decreasing)",
                     i, s[j], i - 1, c->prev_split);
        c->prev_split = s[j];
    }
}

/* ---- runtimes ---------------------------------------------------------- */

static void runtimes_add(rt_seen *r, const int64_t *t, int64_t i0, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        r->zeros += t[j] == 0;
        if (t[j] > 0) continue;
        if (r->bad < PC_REPORT_CAP) {
            r->idx[r->bad] = i0 + j;
            r->val[r->bad] = t[j];
        }
        r->bad++;
    }
}

static void runtimes_end(pc_vcheck *c, int key) {
    vctx *v = &c->v;
    const rt_seen *r = &c->rt[key];
    const char *name = pc_key_name_(key);
    const int64_t n = v->g->c;
    /* Test splits carry all-zero runtimes; a mix of zeros and values is a bug. */
    if (c->allow_zero && r->zeros == n) return;
    if (r->zeros == n && n > 0) {
        problem(v,
                "%s: all %" PRId64 " values are zero (as in a test split; allow zero "
                "runtimes for test data)",
                name, n);
        return;
    }
    const char *why =
        c->allow_zero && r->zeros ? " (zeros are accepted only when all are zero)" : "";
    vkind k = {v, "", 0};
    snprintf(k.what, sizeof k.what, "non-positive values in %s", name);
    for (int64_t i = 0; i < r->bad && i < PC_REPORT_CAP; i++)
        kind_add(&k, "%s[%" PRId64 "] = %" PRId64 " is not positive%s", name, r->idx[i], r->val[i],
                 why);
    v->problems += r->bad - k.count;
    k.count = r->bad;
    kind_end(&k);
}

/* ---- features ---------------------------------------------------------- */

/* "[i][j][k]" for a flat index into a C-order array. */
static void index_str(int64_t flat, int ndim, const int64_t *shape, char *buf, size_t cap) {
    int64_t idx[PC_MAX_DIMS];
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t dim = shape[d] > 0 ? shape[d] : 1;
        idx[d] = flat % dim;
        flat /= dim;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "[%" PRId64 "]", idx[d]);
}

/* Scans count floats that start at flat index `base` of the array `key`. */
static void scan_finite(vkind *k, int key, const float *x, int64_t base, int64_t count) {
    const pc_array *a = &k->v->g->a[key];
    for (int64_t i = 0; i < count; i++) {
        if (isfinite(x[i])) continue;
        char where[128];
        index_str(base + i, a->ndim, a->shape, where, sizeof where);
        kind_add(k, "%s%s = %g is not finite", pc_key_name_(key), where, (double)x[i]);
    }
}

/* ---- the chunked interface ---------------------------------------------- */

static const char *const kind1_what[PC_K_COUNT] = {
    [PC_K_NODE_OPCODE] = "opcodes out of range",
    [PC_K_EDGE_INDEX] = "edges with endpoints out of range",
    [PC_K_NODE_CONFIG_IDS] = "config ids out of range",
    [PC_K_NODE_SPLITS] = "splits out of range",
};
static const char *const kind2_what[PC_K_COUNT] = {
    [PC_K_NODE_CONFIG_IDS] = "repeated config ids",
    [PC_K_NODE_SPLITS] = "splits out of order",
};

pc_graph_widths pc_graph_widths_default(void) {
    pc_graph_widths w;
    memset(&w, 0, sizeof w);
    w.struct_size = sizeof w;
    w.kind = PC_KIND_AUTO;
    w.node_feat_dim = PC_NODE_FEAT_DIM;
    w.tile_config_dim = PC_TILE_CONFIG_DIM;
    w.layout_config_dim = PC_LAYOUT_CONFIG_DIM;
    w.num_opcodes = 256;
    w.who = NULL;
    return w;
}

pc_vcheck *pc_vcheck_new_(const pc_graph *g, int allow_zero_runtimes, const pc_graph_widths *w,
                          pc_report *r) {
    pc_vcheck *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->v.g = g;
    c->v.r = r;
    c->v.w = w ? *w : pc_graph_widths_default();
    c->v.named = c->v.w.who != NULL;
    if (!c->v.named) c->v.w.who = "the models";
    c->allow_zero = allow_zero_runtimes;
    for (int k = 0; k < PC_K_COUNT; k++) {
        c->k1[k].v = c->k2[k].v = &c->v;
        if (kind1_what[k])
            snprintf(c->k1[k].what, sizeof c->k1[k].what, "%s", kind1_what[k]);
        else
            snprintf(c->k1[k].what, sizeof c->k1[k].what, "non-finite values in %s",
                     pc_key_name_(k));
        if (kind2_what[k]) snprintf(c->k2[k].what, sizeof c->k2[k].what, "%s", kind2_what[k]);
    }
    check_sizes(&c->v);
    if (g->kind == PC_KIND_LAYOUT && g->n > 0) {
        /* n is backed by node_feat's header, checked against the file: n/8 bytes */
        c->seen = calloc((size_t)((uint64_t)g->n / 8 + 1), 1);
        if (!c->seen) problem(&c->v, "node_config_ids: out of memory checking uniqueness");
    }
    return c;
}

/* The keys a graph of this kind is checked on, in the order of the report. */
int pc_vcheck_keys_(const pc_graph *g, int *keys) {
    static const int tile[] = {PC_K_NODE_OPCODE, PC_K_EDGE_INDEX, PC_K_CONFIG_RUNTIME,
                               PC_K_NORMALIZERS, PC_K_NODE_FEAT,  PC_K_CONFIG_FEAT};
    static const int layout[] = {PC_K_NODE_OPCODE,     PC_K_EDGE_INDEX,     PC_K_NODE_CONFIG_IDS,
                                 PC_K_NODE_SPLITS,     PC_K_CONFIG_RUNTIME, PC_K_NODE_FEAT,
                                 PC_K_NODE_CONFIG_FEAT};
    const int *src = g->kind == PC_KIND_TILE ? tile : layout;
    int n = g->kind == PC_KIND_TILE ? (int)(sizeof tile / sizeof *tile)
                                    : (int)(sizeof layout / sizeof *layout);
    int w = 0;
    for (int i = 0; i < n; i++)
        if (g->has[src[i]]) keys[w++] = src[i];
    return w;
}

void pc_vcheck_chunk_(pc_vcheck *c, int key, const void *data, int64_t first, int64_t count) {
    switch (key) {
    case PC_K_NODE_OPCODE: check_opcodes(&c->k1[key], data, first, count); break;
    case PC_K_EDGE_INDEX: check_edges(&c->k1[key], data, first / 2, count / 2); break;
    case PC_K_NODE_CONFIG_IDS: check_config_ids(c, data, first, count); break;
    case PC_K_NODE_SPLITS: check_splits(c, data, first, count); break;
    case PC_K_CONFIG_RUNTIME:
    case PC_K_NORMALIZERS: runtimes_add(&c->rt[key], data, first, count); break;
    default: scan_finite(&c->k1[key], key, data, first, count); break;
    }
}

void pc_vcheck_key_end_(pc_vcheck *c, int key) {
    if (key == PC_K_CONFIG_RUNTIME || key == PC_K_NORMALIZERS) {
        runtimes_end(c, key);
        return;
    }
    kind_end(&c->k1[key]);
    if (c->k2[key].v && kind2_what[key]) kind_end(&c->k2[key]);
}

void pc_vcheck_problem_(pc_vcheck *c, const char *msg) { problem(&c->v, "%s", msg); }

int64_t pc_vcheck_free_(pc_vcheck *c) {
    if (!c) return 0;
    int64_t n = c->v.problems;
    free(c->seen);
    free(c);
    return n;
}

/* A streamed node_config_feat is scanned in one chunked pass (bounded memory). */
static void check_finite_streamed(pc_vcheck *c) {
    const pc_graph *g = c->v.g;
    int64_t step = pc_graph_chunk_rows_(g), row = g->nc * g->cfg_dim;
    if (g->c == 0 || row == 0) return;
    if (step > g->c) step = g->c;
    pc_error e;
    pc_ncf_pass p = {NULL, NULL, NULL, 0}; /* closing an unopened pass is a no-op */
    float *buf = pc_malloc_array((uint64_t)step, (uint64_t)row * 4);
    pc_status st = buf ? pc_ncf_pass_open_(g, &p, &e)
                       : pc_fail(&e, PC_ERR_NOMEM, "out of memory for a chunk of rows");
    for (int64_t c0 = 0; st == PC_OK && c0 < g->c; c0 += step) {
        int64_t take = g->c - c0 < step ? g->c - c0 : step;
        st = pc_ncf_pass_read_(&p, c0, take, buf, &e);
        if (st == PC_OK) pc_vcheck_chunk_(c, PC_K_NODE_CONFIG_FEAT, buf, c0 * row, take * row);
    }
    pc_ncf_pass_close_(&p);
    if (st != PC_OK) problem(&c->v, "node_config_feat: cannot scan the streamed rows: %s", e.msg);
    free(buf);
}

pc_status pc_graph_validate(const pc_graph *g, int allow_zero_runtimes, pc_report *r) {
    return pc_graph_validate_widths(g, allow_zero_runtimes, NULL, r);
}

pc_status pc_graph_validate_widths(const pc_graph *g, int allow_zero_runtimes,
                                   const pc_graph_widths *widths, pc_report *r) {
    if (!g || (widths && PC_CHECK_SIZE(NULL, pc_graph_widths, widths))) return PC_ERR_ARG;
    pc_vcheck *c = pc_vcheck_new_(g, allow_zero_runtimes, widths, r);
    if (!c) {
        if (r) pc_report_add(r, "%s: out of memory validating", g->path);
        return PC_ERR_INVALID;
    }
    int keys[PC_K_COUNT];
    const int nk = pc_vcheck_keys_(g, keys);
    for (int i = 0; i < nk; i++) {
        const int k = keys[i];
        if (k == PC_K_NODE_CONFIG_FEAT && pc_graph_streamed_(g))
            check_finite_streamed(c);
        else if (g->a[k].data)
            pc_vcheck_chunk_(c, k, g->a[k].data, 0, pc_array_count(&g->a[k]));
        pc_vcheck_key_end_(c, k);
    }
    return pc_vcheck_free_(c) ? PC_ERR_INVALID : PC_OK;
}
