/* Feature encodings of raw node and config features (column layouts in encode.h). */
#include "gnn/encode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "tpugraphs/roofline.h"

_Static_assert(PC_ENCODE_ROOF_COLS == PC_TPUG_ROOF_COLS, "roofline block width");

/* Rows below this are encoded without forking threads. */
#define ENCODE_PAR_ROWS 4096
#define NSLOT 6

#define KNOWN_BITS 0x7fu

pc_encode_opts pc_encode_opts_none(void) {
    pc_encode_opts o = {0, 0, 0, 0, 0, 0, 0};
    return o;
}

pc_encode_opts pc_encode_opts_all(void) {
    pc_encode_opts o = {1, 1, 1, 0, 0, 0, 0};
    return o;
}

uint32_t pc_encode_opts_bits(const pc_encode_opts *o) {
    return (o->pad_minus1 ? 1u : 0u) | (o->dim_encodings ? 2u : 0u) |
           (o->layout_categories ? 4u : 0u) | (o->roofline ? 8u : 0u) | (o->mismatch ? 16u : 0u) |
           (o->steps ? 32u : 0u) | (o->rsteps ? 64u : 0u);
}

pc_status pc_encode_opts_from_bits(uint32_t bits, pc_encode_opts *o, pc_error *err) {
    if (bits & ~KNOWN_BITS)
        return pc_fail(err, PC_ERR_ARG, "encode: unknown option bits 0x%x (known: 0x%x)",
                       (unsigned)bits, KNOWN_BITS);
    o->pad_minus1 = (bits & 1u) != 0;
    o->dim_encodings = (bits & 2u) != 0;
    o->layout_categories = (bits & 4u) != 0;
    o->roofline = (bits & 8u) != 0;
    o->mismatch = (bits & 16u) != 0;
    o->steps = (bits & 32u) != 0;
    o->rsteps = (bits & 64u) != 0;
    return PC_OK;
}

/* Any option that reads the node row's named columns. */
static int node_any(const pc_encode_opts *o) {
    return o->pad_minus1 || o->dim_encodings || o->layout_categories || o->roofline;
}

/* ---- widths ------------------------------------------------------------------ */

int pc_encode_node_width(const pc_encode_opts *o, int in_dim) {
    if (in_dim <= 0 || (node_any(o) && in_dim < PC_NODE_FEAT_DIM)) return -1;
    return in_dim + (o->dim_encodings ? PC_ENCODE_NODE_DIM_COLS : 0) +
           (o->layout_categories ? PC_ENCODE_LAYOUT_COLS : 0) +
           (o->roofline ? PC_ENCODE_ROOF_COLS : 0);
}

int pc_encode_tile_width(const pc_encode_opts *o, int in_dim) {
    if (in_dim <= 0 ||
        ((o->dim_encodings || o->steps || o->rsteps) && in_dim < PC_TILE_CONFIG_DIM))
        return -1;
    return in_dim + (o->dim_encodings ? PC_ENCODE_TILE_DIM_COLS : 0) +
           (o->steps ? PC_ENCODE_STEPS_COLS : 0) + (o->rsteps ? PC_ENCODE_RSTEPS_COLS : 0);
}

int pc_encode_layout_width(const pc_encode_opts *o, int in_dim) {
    if (in_dim <= 0 || ((o->layout_categories || o->mismatch) && in_dim < PC_LAYOUT_CONFIG_DIM))
        return -1;
    return in_dim + (o->layout_categories ? 3 * PC_ENCODE_LAYOUT_COLS : 0) +
           (o->mismatch ? PC_ENCODE_MISMATCH_COLS : 0);
}

int pc_encode_config_width(const pc_encode_opts *o, pc_kind kind, int in_dim) {
    if (kind == PC_KIND_TILE) return pc_encode_tile_width(o, in_dim);
    if (kind == PC_KIND_LAYOUT) return pc_encode_layout_width(o, in_dim);
    return -1;
}

/* ---- small pieces ---------------------------------------------------------------- */

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

/* 1 + index of the last slot > 0, or 0. */
static int last_positive(const float *s, int n) {
    for (int i = n - 1; i >= 0; i--)
        if (s[i] > 0.0f) return i + 1;
    return 0;
}

int pc_encode_node_rank(const float *row) {
    int r = last_positive(row + PC_NF_SHAPE_DIMS, NSLOT);
    if (row[PC_NF_SHAPE_PROD] == 0.0f) r = imax(r, 1);
    for (int i = 0; i < NSLOT; i++) {
        float v = row[PC_NF_LAYOUT + i];
        if (v > 0.0f && v < 1e6f) r = imax(r, (int)v + 1);
    }
    return r;
}

static int window_rank(const float *row) {
    float cnt = row[PC_NF_WIN_REV_TRUE] + row[PC_NF_WIN_REV_FALSE];
    int w = cnt > 0.0f ? (cnt >= NSLOT ? NSLOT : (int)cnt) : 0;
    return imin(NSLOT, imax(w, last_positive(row + PC_NF_WINDOW, NSLOT)));
}

/* The node's layout is missing: rank >= 2 but no slot names an axis > 0. */
static int node_layout_missing(const float *row, int r) {
    return r >= 2 && last_positive(row + PC_NF_LAYOUT, NSLOT) == 0;
}

/* [log2(1+d), d mod base, floor(d/base)], or three -1 for an absent d < 0. */
static void dim3(float d, double base, float *o) {
    if (d < 0.0f) {
        o[0] = o[1] = o[2] = -1.0f;
        return;
    }
    o[0] = (float)log2(1.0 + (double)d);
    o[1] = (float)fmod((double)d, base);
    o[2] = (float)floor((double)d / base);
}

/* [d, dim3(d)]. */
static void dim4(float d, double base, float *o) {
    o[0] = d < 0.0f ? -1.0f : d;
    dim3(d, base, o + 1);
}

int pc_encode_layout_rank(const float *s) {
    int r = 0;
    while (r < NSLOT && s[r] >= 0.0f) r++;
    return r;
}

void pc_encode_layout_cols(const float *s, int r, float *out) {
    memset(out, 0, PC_ENCODE_LAYOUT_COLS * sizeof *out);
    int k = imin(r, NSLOT);
    if (k < 1) return;
    out[0] = 1.0f;
    int dflt = 1, inv = 0;
    for (int i = 0; i < k; i++) {
        dflt &= s[i] == (float)(r - 1 - i);
        for (int j = i + 1; j < k; j++) inv += s[i] < s[j];
    }
    out[1] = (float)dflt;
    out[2] = s[0] == (float)(r - 1);
    out[3] = r >= 2 && s[1] == (float)(r - 2);
    out[4] = k >= 2 ? (float)inv / (float)(k * (k - 1) / 2) : 0.0f;
    for (int a = 0; a < NSLOT; a++) out[5 + a] = s[0] == (float)a;
}

int pc_encode_layout_category(const float *s, int r) {
    static const int fact[7] = {1, 1, 2, 6, 24, 120, 720};
    if (r < 0 || r > NSLOT) return -1;
    int off = 0, seen = 0, lehmer = 0;
    for (int q = 0; q < r; q++) off += fact[q];
    for (int i = 0; i < r; i++) {
        float v = s[i];
        if (!(v >= 0.0f && v < (float)r) || v != floorf(v) || ((seen >> (int)v) & 1)) return -1;
        seen |= 1 << (int)v;
        int smaller = 0;
        for (int j = i + 1; j < r; j++) smaller += s[j] < v;
        lehmer += smaller * fact[r - 1 - i];
    }
    return off + lehmer;
}

/* ---- node rows ------------------------------------------------------------------- */

static void node_pad(const float *in, int r, float *y) {
    int k = imin(r, NSLOT);
    for (int i = k; i < NSLOT; i++) y[PC_NF_SHAPE_DIMS + i] = y[PC_NF_LAYOUT + i] = -1.0f;
    if (node_layout_missing(in, r))
        for (int i = 0; i < NSLOT; i++) y[PC_NF_LAYOUT + i] = -1.0f;
    int w = window_rank(in);
    for (int i = w; i < NSLOT; i++) {
        for (int g = 0; g < NSLOT; g++) y[PC_NF_WINDOW + 8 * g + i] = -1.0f;
        y[PC_NF_WIN_REV + i] = -1.0f;
    }
}

/* Size of the axis in layout slot `slot`, or -1 when not determinable. */
static float node_layout_dim(const float *in, int r, int slot) {
    int k = imin(r, NSLOT);
    if (slot >= k || node_layout_missing(in, r)) return -1.0f;
    float a = in[PC_NF_LAYOUT + slot];
    if (!(a >= 0.0f && a < (float)k)) return -1.0f;
    return in[PC_NF_SHAPE_DIMS + (int)a];
}

static void node_dims(const float *in, int r, float *o) {
    int k = imin(r, NSLOT);
    for (int i = 0; i < NSLOT; i++)
        dim3(i < k ? in[PC_NF_SHAPE_DIMS + i] : -1.0f, 128.0, o + 3 * i);
    for (int i = 0; i < 2; i++) dim3(in[PC_NF_DYN_SLICE + i], 128.0, o + 18 + 3 * i);
    dim4(node_layout_dim(in, r, 0), 128.0, o + 24);
    dim4(node_layout_dim(in, r, 1), 8.0, o + 28);
}

/* roof: the row's PC_ENCODE_ROOF_COLS roofline columns (o->roofline only). */
static void node_row(const pc_encode_opts *o, const float *in, int in_dim, const float *roof,
                     float *y) {
    memcpy(y, in, (size_t)in_dim * sizeof *y);
    /* with every option off any width is a plain copy: the rank reads
       columns up to 139, which a narrower row does not have */
    if (!node_any(o)) return;
    int r = pc_encode_node_rank(in);
    if (o->pad_minus1) node_pad(in, r, y);
    float *b = y + in_dim;
    if (o->dim_encodings) {
        node_dims(in, r, b);
        b += PC_ENCODE_NODE_DIM_COLS;
    }
    if (o->layout_categories) {
        pc_encode_layout_cols(in + PC_NF_LAYOUT, node_layout_missing(in, r) ? 0 : r, b);
        b += PC_ENCODE_LAYOUT_COLS;
    }
    if (o->roofline) memcpy(b, roof, PC_ENCODE_ROOF_COLS * sizeof *b);
}

static pc_status nodes(const pc_encode_opts *o, const float *in, int64_t rows, int in_dim,
                       const float *roof, float *out, pc_error *err) {
    int W = pc_encode_node_width(o, in_dim);
    if (W < 0)
        return pc_fail(err, PC_ERR_ARG, "encode: node features have %d columns, need %d",
                       in_dim, PC_NODE_FEAT_DIM);
    if (o->roofline && !roof)
        return pc_fail(err, PC_ERR_ARG, "encode: the roofline encoding needs the graph's "
                       "opcodes and edges (pc_encode_node_graph)");
#pragma omp parallel for schedule(static) if(rows >= ENCODE_PAR_ROWS) num_threads(pc_threads())
    for (int64_t i = 0; i < rows; i++)
        node_row(o, in + (size_t)i * (size_t)in_dim, in_dim,
                 roof ? roof + (size_t)i * PC_ENCODE_ROOF_COLS : NULL, out + (size_t)i * (size_t)W);
    return PC_OK;
}

pc_status pc_encode_node(const pc_encode_opts *o, const float *in, int64_t rows, int in_dim,
                         float *out, pc_error *err) {
    return nodes(o, in, rows, in_dim, NULL, out, err);
}

pc_encode_graph pc_encode_graph_of(const pc_graph *g) {
    pc_encode_graph e = {pc_graph_num_nodes(g),       pc_graph_node_feat(g),
                         (int)pc_graph_node_feat_dim(g), pc_graph_node_opcode(g),
                         pc_graph_edge_index(g),       pc_graph_num_edges(g),
                         NULL,                         0};
    if (pc_graph_kind(g) == PC_KIND_LAYOUT) {
        e.cfg_ids = pc_graph_node_config_ids(g);
        e.nc = pc_graph_num_config_nodes(g);
    }
    return e;
}

pc_status pc_encode_node_graph(const pc_encode_opts *o, const pc_encode_graph *g, float *out,
                               pc_error *err) {
    if (!o->roofline) return nodes(o, g->feat, g->n, g->dim, NULL, out, err);
    if (pc_encode_node_width(o, g->dim) < 0)
        return pc_fail(err, PC_ERR_ARG, "encode: node features have %d columns, need %d",
                       g->dim, PC_NODE_FEAT_DIM);
    float *roof =
        pc_malloc_array((uint64_t)(g->n > 0 ? g->n : 1), PC_ENCODE_ROOF_COLS * sizeof(float));
    if (!roof) return pc_fail(err, PC_ERR_NOMEM, "encode: out of memory");
    int64_t bad = 0;
    int rc = pc_tpug_roofline(g->n, g->feat, g->dim, g->opcode, g->edges, g->m, roof, &bad);
    pc_status st = PC_OK;
    if (rc == -1) st = pc_fail(err, PC_ERR_NOMEM, "encode: out of memory");
    if (rc == -2)
        st = pc_fail(err, PC_ERR_RANGE, "encode: edge_index row %lld names a node outside "
                     "0..%lld", (long long)bad, (long long)g->n - 1);
    if (!st) st = nodes(o, g->feat, g->n, g->dim, roof, out, err);
    free(roof);
    return st;
}

/* ---- config rows ----------------------------------------------------------------- */

/* The steps block (encode.h) of one tile row from the root's extents. */
static void tile_steps(const float *in, const float *ext, float *b) {
    double prod = 1.0, fill = 2.0;
    int any = 0;
    for (int i = 0; i < NSLOT; i++) {
        double t = in[8 + i], e = ext[i];
        b[i] = -1.0f;
        if (!(t > 0.0) || !(e >= 0.0)) continue;
        double s = ceil(e / t);
        double f = s >= 1.0 ? (e - (s - 1.0) * t) / t : 1.0;
        b[i] = (float)s;
        prod *= s;
        if (f < fill) fill = f;
        any = 1;
    }
    b[NSLOT] = any ? (float)prod : -1.0f;
    b[NSLOT + 1] = any ? (float)fill : -1.0f;
}

/* The rsteps block (encode.h) of one tile row from the reduction extents. */
static void tile_rsteps(const float *in, const pc_encode_mm *p, float *b) {
    double prod = 1.0;
    int any = 0;
    for (int i = 0; i < PC_ENCODE_RED_DIMS; i++) {
        int j = p->red_slot + i;
        double r = p->red[i], t = j >= 0 && j < NSLOT ? in[j] : 0.0;
        b[i] = -1.0f;
        if (!(t > 0.0) || !(r > 0.0)) continue;
        double s = ceil(r / t);
        b[i] = (float)s;
        prod *= s;
        any = 1;
    }
    b[PC_ENCODE_RED_DIMS] = any ? (float)prod : -1.0f;
}

/* p: the plan (o->steps, o->rsteps only). */
static void tile_row(const pc_encode_opts *o, const float *in, int in_dim, const pc_encode_mm *p,
                     float *y) {
    memcpy(y, in, (size_t)in_dim * sizeof *y);
    float *b = y + in_dim;
    if (o->dim_encodings) {
        for (int g = 0; g < 3; g++) {
            const float *s = in + 8 * g;
            int k = last_positive(s, NSLOT);
            for (int i = 0; i < NSLOT; i++) dim3(i < k ? s[i] : -1.0f, 128.0, b + 18 * g + 3 * i);
        }
        b += PC_ENCODE_TILE_DIM_COLS;
    }
    if (o->steps) {
        tile_steps(in, p->ext, b);
        b += PC_ENCODE_STEPS_COLS;
    }
    if (o->rsteps) tile_rsteps(in, p, b);
}

static void layout_row(const pc_encode_opts *o, const float *in, int in_dim, float *y) {
    memcpy(y, in, (size_t)in_dim * sizeof *y);
    if (!o->layout_categories) return;
    for (int t = 0; t < 3; t++) {
        const float *s = in + NSLOT * t;
        pc_encode_layout_cols(s, pc_encode_layout_rank(s), y + in_dim + PC_ENCODE_LAYOUT_COLS * t);
    }
}

static pc_status tiles(const pc_encode_opts *o, const pc_encode_mm *mm, const float *in,
                       int64_t rows, int in_dim, float *out, pc_error *err) {
    int W = pc_encode_tile_width(o, in_dim);
    if (W < 0)
        return pc_fail(err, PC_ERR_ARG, "encode: tile configs have %d columns, need %d", in_dim,
                       PC_TILE_CONFIG_DIM);
    if ((o->steps || o->rsteps) && (!mm || !mm->tile))
        return pc_fail(err, PC_ERR_ARG, "encode: the %s encoding needs the kernel root's "
                       "shape (pc_encode_plan_build, pc_encode_configs_mm)",
                       o->steps ? "steps" : "rsteps");
#pragma omp parallel for schedule(static) if(rows >= ENCODE_PAR_ROWS) num_threads(pc_threads())
    for (int64_t i = 0; i < rows; i++)
        tile_row(o, in + (size_t)i * (size_t)in_dim, in_dim, mm, out + (size_t)i * (size_t)W);
    return PC_OK;
}

pc_status pc_encode_tile(const pc_encode_opts *o, const float *in, int64_t rows, int in_dim,
                         float *out, pc_error *err) {
    return tiles(o, NULL, in, rows, in_dim, out, err);
}

static pc_status layouts(const pc_encode_opts *o, const pc_encode_mm *mm, const float *in,
                         int64_t rows, int in_dim, float *out, pc_error *err);

pc_status pc_encode_layout(const pc_encode_opts *o, const float *in, int64_t rows, int in_dim,
                           float *out, pc_error *err) {
    return layouts(o, NULL, in, rows, in_dim, out, err);
}

/* ---- layout mismatches (the mismatch block, encode.h) ------------------------------ */

void pc_encode_mm_free(pc_encode_mm *p) {
    if (!p) return;
    free(p->src);
    free(p->known);
    free(p->rank);
    free(p->lay);
    free(p->dims);
    memset(p, 0, sizeof *p);
}

/* Slot t (0, 1) of configurable node j: operand row v of node u. */
static void mm_operand(pc_encode_mm *p, int64_t s, const float *row, int32_t cfg) {
    p->src[s] = cfg;
    for (int i = 0; i < NSLOT; i++) p->dims[s * NSLOT + i] = row[PC_NF_SHAPE_DIMS + i];
    int r = pc_encode_node_rank(row);
    if (r < 1 || r > NSLOT || node_layout_missing(row, r)) return;
    p->known[s] = 1;
    p->rank[s] = (int8_t)r;
    for (int i = 0; i < r; i++) p->lay[s * NSLOT + i] = row[PC_NF_LAYOUT + i];
}

static pc_status mm_check(const pc_encode_graph *g, pc_error *err) {
    if (g->dim < PC_NODE_FEAT_DIM)
        return pc_fail(err, PC_ERR_ARG, "encode: node features have %d columns, need %d",
                       g->dim, PC_NODE_FEAT_DIM);
    for (int64_t j = 0; j < g->nc; j++)
        if (g->cfg_ids[j] < 0 || g->cfg_ids[j] >= g->n)
            return pc_fail(err, PC_ERR_RANGE, "encode: node_config_ids[%lld] = %d is not a node",
                           (long long)j, (int)g->cfg_ids[j]);
    for (int64_t e = 0; e < g->m; e++)
        if (g->edges[2 * e] < 0 || g->edges[2 * e] >= g->n || g->edges[2 * e + 1] < 0 ||
            g->edges[2 * e + 1] >= g->n)
            return pc_fail(err, PC_ERR_RANGE, "encode: edge_index row %lld names a node outside "
                           "0..%lld", (long long)e, (long long)g->n - 1);
    return PC_OK;
}

pc_status pc_encode_mm_build(const pc_encode_graph *g, pc_encode_mm *p, pc_error *err) {
    memset(p, 0, sizeof *p);
    pc_status st = mm_check(g, err);
    if (st) return st;
    uint64_t s = (uint64_t)(g->nc > 0 ? g->nc : 1) * 2;
    int32_t *map = pc_malloc_array((uint64_t)(g->n > 0 ? g->n : 1), sizeof *map);
    int8_t *cnt = calloc(s / 2, 1);
    p->nc = g->nc;
    p->src = pc_malloc_array(s, sizeof *p->src);
    p->known = calloc(s, 1);
    p->rank = calloc(s, 1);
    p->lay = pc_malloc_array(s * NSLOT, sizeof *p->lay);
    p->dims = calloc(s * NSLOT, sizeof *p->dims);
    if (!map || !cnt || !p->src || !p->known || !p->rank || !p->lay || !p->dims) {
        free(map), free(cnt);
        pc_encode_mm_free(p);
        return pc_fail(err, PC_ERR_NOMEM, "encode: out of memory");
    }
    for (uint64_t i = 0; i < s; i++) p->src[i] = -1;
    for (uint64_t i = 0; i < s * NSLOT; i++) p->lay[i] = -1.0f;
    for (int64_t i = 0; i < g->n; i++) map[i] = -1;
    for (int64_t j = 0; j < g->nc; j++) map[g->cfg_ids[j]] = (int32_t)j;
    for (int64_t e = 0; e < g->m; e++) {
        int32_t u = g->edges[2 * e], v = g->edges[2 * e + 1], j = map[u];
        if (j < 0 || g->cfg_ids[j] != u || cnt[j] >= 2) continue;
        mm_operand(p, 2 * (int64_t)j + cnt[j]++, g->feat + (size_t)v * (size_t)g->dim, map[v]);
    }
    free(map);
    free(cnt);
    return PC_OK;
}

void pc_encode_tile_root(const pc_encode_graph *g, float ext[6]) {
    for (int i = 0; i < NSLOT; i++) ext[i] = -1.0f;
    if (g->n < 1 || !g->feat || g->dim < PC_NODE_FEAT_DIM) return;
    int64_t root = g->n - 1;
    for (int64_t v = g->n - 1; v >= 0; v--)
        if (g->feat[(size_t)v * (size_t)g->dim] == 1.0f) {
            root = v;
            break;
        }
    const float *row = g->feat + (size_t)root * (size_t)g->dim;
    int k = imin(pc_encode_node_rank(row), NSLOT);
    for (int i = 0; i < k; i++)
        if (row[PC_NF_SHAPE_DIMS + i] >= 0.0f) ext[i] = row[PC_NF_SHAPE_DIMS + i];
}

/* Product of the first r (<= 6) dims of a node row; -1 when one is negative. */
static double dims_prod(const float *row, int r) {
    double p = 1.0;
    for (int i = 0; i < r; i++) {
        if (row[PC_NF_SHAPE_DIMS + i] < 0.0f) return -1.0;
        p *= row[PC_NF_SHAPE_DIMS + i];
    }
    return p;
}

/* Reduction extents of a dot (rows v, lhs, rhs): one contracting dim, the
   leading nb = rank(lhs) + rank(rhs) - rank(v) - 2 dims batch dims. */
static void red_dot(const float *v, const float *l, const float *r, float red[3]) {
    int rv = pc_encode_node_rank(v), rl = pc_encode_node_rank(l), rr = pc_encode_node_rank(r);
    int nb = rl + rr - rv - 2;
    if (rv > NSLOT || rl > NSLOT || rr > NSLOT || nb < 0 || nb > rv) return;
    double pv = dims_prod(v, rv), pl = dims_prod(l, rl), pr = dims_prod(r, rr), b = dims_prod(v, nb);
    if (!(pv > 0.0) || !(pl > 0.0) || !(pr > 0.0) || !(b > 0.0)) return;
    double k = floor(sqrt(pl * pr / (pv * b)) + 0.5);
    if (k >= 1.0) red[0] = (float)k;
}

/* Reduction extents of a convolution (rows v, input): the input feature dim
   (column 94 names it), then the first two window sizes (37-42). */
static void red_conv(const float *v, const float *in, float red[3]) {
    int ri = pc_encode_node_rank(in), f = (int)v[PC_NF_CONV_IN_FEAT];
    if (f >= 0 && f < ri && f < NSLOT && (float)f == v[PC_NF_CONV_IN_FEAT] &&
        in[PC_NF_SHAPE_DIMS + f] > 0.0f)
        red[0] = in[PC_NF_SHAPE_DIMS + f];
    for (int i = 0; i < 2 && v[PC_NF_WINDOW + i] > 0.0f; i++) red[1 + i] = v[PC_NF_WINDOW + i];
}

void pc_encode_tile_reduction(const pc_encode_graph *g, float red[3], int *slot) {
    for (int i = 0; i < PC_ENCODE_RED_DIMS; i++) red[i] = -1.0f;
    *slot = -1;
    if (g->n < 1 || !g->feat || g->dim < PC_NODE_FEAT_DIM || !g->opcode) return;
    int64_t v = g->n - 1;
    while (v >= 0 && g->opcode[v] != PC_OP_DOT && g->opcode[v] != PC_OP_CONVOLUTION) v--;
    if (v < 0) return;
    int64_t opnd[2] = {-1, -1};
    int k = 0;
    for (int64_t e = 0; e < g->m && k < 2; e++)
        if (g->edges[2 * e] == v && g->edges[2 * e + 1] >= 0 && g->edges[2 * e + 1] < g->n)
            opnd[k++] = g->edges[2 * e + 1];
    if (k == 0) return;
    if (k == 1) opnd[1] = opnd[0];
    const float *row = g->feat + (size_t)v * (size_t)g->dim;
    const float *a = g->feat + (size_t)opnd[0] * (size_t)g->dim;
    const float *b = g->feat + (size_t)opnd[1] * (size_t)g->dim;
    if (g->opcode[v] == PC_OP_DOT)
        red_dot(row, a, b, red);
    else
        red_conv(row, a, red);
    *slot = pc_encode_node_rank(row);
}

pc_status pc_encode_plan_build(const pc_encode_opts *o, pc_kind kind, const pc_encode_graph *g,
                               pc_encode_mm *p, pc_error *err) {
    memset(p, 0, sizeof *p);
    if (kind == PC_KIND_LAYOUT && o->mismatch) return pc_encode_mm_build(g, p, err);
    if (kind != PC_KIND_TILE || !(o->steps || o->rsteps)) return PC_OK;
    if (g->dim < PC_NODE_FEAT_DIM || !g->feat)
        return pc_fail(err, PC_ERR_ARG, "encode: node features have %d columns, need %d",
                       g->dim, PC_NODE_FEAT_DIM);
    if (g->n < 1) return pc_fail(err, PC_ERR_ARG, "encode: the %s encoding needs a graph "
                                 "with nodes (the kernel root)", o->steps ? "steps" : "rsteps");
    p->tile = 1;
    pc_encode_tile_root(g, p->ext);
    pc_encode_tile_reduction(g, p->red, &p->red_slot);
    return PC_OK;
}

/* Orders a and b (rank r) differ once the axes of size 1 in dims are dropped. */
static int mm_differ(const float *a, const float *b, int r, const float *dims) {
    int i = 0, j = 0;
    for (;;) {
        while (i < r && a[i] >= 0.0f && a[i] < (float)NSLOT && dims[(int)a[i]] == 1.0f) i++;
        while (j < r && b[j] >= 0.0f && b[j] < (float)NSLOT && dims[(int)b[j]] == 1.0f) j++;
        if (i == r || j == r) return !(i == r && j == r);
        if (a[i++] != b[j++]) return 1;
    }
}

/* The mismatch columns (at b) of one config's nc rows in (in_dim wide) / y (W wide). */
static void mm_config(const pc_encode_mm *p, const float *in, int in_dim, float *y, int W, int b) {
    int64_t nc = p->nc, total = 0;
    for (int64_t j = 0; j < nc; j++) y[j * W + b] = y[j * W + b + 1] = 0.0f;
    for (int64_t j = 0; j < nc; j++)
        for (int t = 0; t < 2; t++) {
            int64_t s = 2 * j + t;
            const float *want = in + (size_t)j * (size_t)in_dim + NSLOT * (t + 1), *give = NULL;
            int rw = pc_encode_layout_rank(want), rg = 0;
            if (rw < 1) continue;
            int32_t k = p->src[s];
            if (k >= 0) {
                give = in + (size_t)k * (size_t)in_dim;
                rg = pc_encode_layout_rank(give);
                if (rg < 1) give = NULL;
            }
            if (!give && p->known[s]) {
                give = p->lay + s * NSLOT;
                rg = p->rank[s];
            }
            if (!give || rg != rw || !mm_differ(want, give, rw, p->dims + s * NSLOT)) continue;
            y[j * W + b] += 1.0f;
            if (k >= 0) y[(int64_t)k * W + b + 1] += 1.0f;
            total++;
        }
    for (int64_t j = 0; j < nc; j++) y[j * W + b + 2] = (float)total;
}

static pc_status layouts(const pc_encode_opts *o, const pc_encode_mm *mm, const float *in,
                         int64_t rows, int in_dim, float *out, pc_error *err) {
    int W = pc_encode_layout_width(o, in_dim);
    if (W < 0)
        return pc_fail(err, PC_ERR_ARG, "encode: layout configs have %d columns, need %d",
                       in_dim, PC_LAYOUT_CONFIG_DIM);
    if (o->mismatch && !mm)
        return pc_fail(err, PC_ERR_ARG, "encode: the mismatch encoding needs the graph's plan "
                       "(pc_encode_configs_mm)");
    if (o->mismatch && (mm->nc < 1 || rows % mm->nc))
        return pc_fail(err, PC_ERR_ARG, "encode: %lld layout rows are not whole configs of %lld "
                       "configurable nodes", (long long)rows, (long long)mm->nc);
#pragma omp parallel for schedule(static) if(rows >= ENCODE_PAR_ROWS) num_threads(pc_threads())
    for (int64_t i = 0; i < rows; i++)
        layout_row(o, in + (size_t)i * (size_t)in_dim, in_dim, out + (size_t)i * (size_t)W);
    if (o->mismatch) {
        int b = W - PC_ENCODE_MISMATCH_COLS;
        int64_t nconf = rows / mm->nc;
#pragma omp parallel for schedule(static) if(rows >= ENCODE_PAR_ROWS) num_threads(pc_threads())
        for (int64_t c = 0; c < nconf; c++)
            mm_config(mm, in + (size_t)(c * mm->nc) * (size_t)in_dim, in_dim,
                      out + (size_t)(c * mm->nc) * (size_t)W, W, b);
    }
    return PC_OK;
}

pc_status pc_encode_configs_mm(const pc_encode_opts *o, pc_kind kind, const pc_encode_mm *mm,
                               const float *in, int64_t rows, int in_dim, float *out,
                               pc_error *err) {
    if (kind == PC_KIND_LAYOUT) return layouts(o, mm, in, rows, in_dim, out, err);
    if (kind == PC_KIND_TILE) return tiles(o, mm, in, rows, in_dim, out, err);
    return pc_encode_configs(o, kind, in, rows, in_dim, out, err);
}

pc_status pc_encode_configs(const pc_encode_opts *o, pc_kind kind, const float *in,
                            int64_t rows, int in_dim, float *out, pc_error *err) {
    if (kind == PC_KIND_TILE) return pc_encode_tile(o, in, rows, in_dim, out, err);
    if (kind == PC_KIND_LAYOUT) return pc_encode_layout(o, in, rows, in_dim, out, err);
    return pc_fail(err, PC_ERR_ARG, "encode: configs of kind %d (need tile or layout)", (int)kind);
}
