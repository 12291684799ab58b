/* The HLO-like module builder, its layout into dataset order, and the featurizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "synth/hlo.h"

/* ---- storage ------------------------------------------------------------ */

/* Room for `need` elements; the counts stay int32_t. 0, or -1 when out of memory. */
static int grow(void **p, size_t *cap, int64_t need, size_t size) {
    if (need > INT32_MAX) return -1;
    void *q = pc_grow_array(*p, cap, (size_t)need, size);
    if (!q) return -1;
    *p = q;
    return 0;
}

void sy_module_init(sy_module *m) {
    memset(m, 0, sizeof *m);
    m->cur = -1;
}

void sy_module_free(sy_module *m) {
    if (!m) return;
    for (int32_t c = 0; c < m->ncomp; c++) {
        free(m->comps[c].inst);
        free(m->comps[c].opnd);
    }
    free(m->comps);
    free(m->attrs);
    free(m->inst);
    free(m->opnd);
    free(m->comp_order);
    sy_module_init(m);
}

int32_t sy_comp_begin(sy_module *m, const char *name, double weight) {
    if (m->failed ||
        grow((void **)&m->comps, &m->comp_cap, (int64_t)m->ncomp + 1, sizeof(sy_comp))) {
        m->failed = 1;
        return -1;
    }
    sy_comp *c = &m->comps[m->ncomp];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->root = -1;
    c->weight = weight;
    m->cur = m->ncomp;
    return m->ncomp++;
}

void sy_comp_switch(sy_module *m, int32_t c) {
    if (c >= 0 && c < m->ncomp) m->cur = c;
}

void sy_comp_set_root(sy_module *m, int32_t root) {
    if (m->cur >= 0) m->comps[m->cur].root = root;
}

/* ---- shapes ------------------------------------------------------------- */

sy_shape sy_shp(uint8_t etype, int rank, const int64_t *d) {
    sy_shape s;
    memset(&s, 0, sizeof s);
    s.etype = etype;
    s.rank = (uint8_t)(rank < 0 ? 0 : rank > SY_MAX_RANK ? SY_MAX_RANK : rank);
    for (int i = 0; i < s.rank; i++) s.d[i] = d[i];
    return s;
}
sy_shape sy_shp2(uint8_t etype, int64_t a, int64_t b) {
    int64_t d[2] = {a, b};
    return sy_shp(etype, 2, d);
}
sy_shape sy_shp3(uint8_t etype, int64_t a, int64_t b, int64_t c) {
    int64_t d[3] = {a, b, c};
    return sy_shp(etype, 3, d);
}
sy_shape sy_shp4(uint8_t etype, int64_t a, int64_t b, int64_t c, int64_t d4) {
    int64_t d[4] = {a, b, c, d4};
    return sy_shp(etype, 4, d);
}
sy_shape sy_scalar(uint8_t etype) { return sy_shp(etype, 0, NULL); }

int64_t sy_shape_elems(const sy_shape *s) {
    int64_t e = 1;
    for (int i = 0; i < s->rank; i++) e *= s->d[i];
    return e;
}

sy_shape sy_shape_of(const sy_module *m, int32_t x) {
    if (m->cur < 0 || x < 0 || x >= m->comps[m->cur].n) {
        /* a failed build (an allocation failed: m->failed, ids -1) goes on to its end
           before it is discarded: a [1] vector keeps callers' "last dim" in bounds */
        sy_shape s = sy_scalar(0);
        s.rank = 1;
        s.d[0] = 1;
        return s;
    }
    return m->comps[m->cur].inst[x].shape;
}

/* ---- generic add -------------------------------------------------------- */

int32_t sy_add(sy_module *m, const sy_inst *proto, const int32_t *ops, int nops,
               const sy_attr *attr) {
    if (m->failed || m->cur < 0) return -1;
    for (int i = 0; i < nops; i++)
        if (ops[i] < 0) return -1; /* an earlier failure propagates */
    sy_comp *c = &m->comps[m->cur];
    if (grow((void **)&c->inst, &c->cap, (int64_t)c->n + 1, sizeof(sy_inst)) ||
        grow((void **)&c->opnd, &c->opnd_cap, (int64_t)c->nopnd + nops, sizeof(int32_t)) ||
        (attr && grow((void **)&m->attrs, &m->attr_cap, (int64_t)m->nattr + 1, sizeof(sy_attr)))) {
        m->failed = 1;
        return -1;
    }
    sy_inst *in = &c->inst[c->n];
    *in = *proto;
    in->comp = m->cur;
    in->opnd0 = c->nopnd;
    in->nopnd = nops;
    if (nops) memcpy(c->opnd + c->nopnd, ops, (size_t)nops * sizeof *ops);
    c->nopnd += nops;
    in->attr = -1;
    if (attr) {
        m->attrs[m->nattr] = *attr;
        in->attr = m->nattr++;
    }
    return c->n++;
}

static sy_inst proto_of(uint8_t op, sy_shape s) {
    sy_inst p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.shape = s;
    p.called[0] = p.called[1] = -1;
    p.attr = -1;
    return p;
}

static sy_attr attr_zero(void) {
    sy_attr a;
    memset(&a, 0, sizeof a);
    return a;
}

/* ---- typed builders ----------------------------------------------------- */

int32_t sy_param(sy_module *m, sy_shape s, int32_t number) {
    sy_inst p = proto_of(PC_HLO_PARAMETER, s);
    p.param_no = number;
    return sy_add(m, &p, NULL, 0, NULL);
}

int32_t sy_tuple_param(sy_module *m, int ntuple, int32_t number) {
    sy_inst p = proto_of(PC_HLO_PARAMETER, sy_scalar(SY_TUPLE));
    p.param_no = number;
    p.ntuple = (uint8_t)(ntuple > 255 ? 255 : ntuple);
    return sy_add(m, &p, NULL, 0, NULL);
}

int32_t sy_const(sy_module *m, sy_shape s) {
    sy_inst p = proto_of(PC_HLO_CONSTANT, s);
    return sy_add(m, &p, NULL, 0, NULL);
}

int32_t sy_iota(sy_module *m, sy_shape s, int dim) {
    sy_inst p = proto_of(PC_HLO_IOTA, s);
    p.ndims = 1;
    p.dims[0] = (int8_t)dim;
    return sy_add(m, &p, NULL, 0, NULL);
}

int32_t sy_bcast(sy_module *m, int32_t x, sy_shape s, const int8_t *bdims) {
    if (m->failed || x < 0) return -1; /* x's shape is not known: nothing to map */
    sy_inst p = proto_of(PC_HLO_BROADCAST, s);
    p.ndims = sy_shape_of(m, x).rank;
    for (int i = 0; i < p.ndims; i++) p.dims[i] = bdims[i];
    return sy_add(m, &p, &x, 1, NULL);
}

int32_t sy_splat(sy_module *m, int32_t like) {
    sy_shape s = sy_shape_of(m, like);
    int32_t c = sy_const(m, sy_scalar(s.etype));
    return sy_bcast(m, c, s, NULL);
}

int32_t sy_unary(sy_module *m, uint8_t op, int32_t x) {
    sy_inst p = proto_of(op, sy_shape_of(m, x));
    return sy_add(m, &p, &x, 1, NULL);
}

int32_t sy_binary(sy_module *m, uint8_t op, int32_t x, int32_t y) {
    sy_inst p = proto_of(op, sy_shape_of(m, x));
    int32_t ops[2] = {x, y};
    return sy_add(m, &p, ops, 2, NULL);
}

int32_t sy_convert(sy_module *m, int32_t x, uint8_t etype) {
    sy_shape s = sy_shape_of(m, x);
    if (s.etype == etype) return x;
    s.etype = etype;
    sy_inst p = proto_of(PC_HLO_CONVERT, s);
    return sy_add(m, &p, &x, 1, NULL);
}

int32_t sy_compare(sy_module *m, int32_t x, int32_t y) {
    sy_shape s = sy_shape_of(m, x);
    s.etype = SY_PRED;
    sy_inst p = proto_of(PC_HLO_COMPARE, s);
    int32_t ops[2] = {x, y};
    return sy_add(m, &p, ops, 2, NULL);
}

int32_t sy_select(sy_module *m, int32_t pr, int32_t x, int32_t y) {
    sy_inst p = proto_of(PC_HLO_SELECT, sy_shape_of(m, x));
    int32_t ops[3] = {pr, x, y};
    return sy_add(m, &p, ops, 3, NULL);
}

int32_t sy_clamp(sy_module *m, int32_t lo, int32_t x, int32_t hi) {
    sy_inst p = proto_of(PC_HLO_CLAMP, sy_shape_of(m, x));
    int32_t ops[3] = {lo, x, hi};
    return sy_add(m, &p, ops, 3, NULL);
}

static int32_t root_of(const sy_module *m, int32_t comp) {
    return comp >= 0 && comp < m->ncomp ? m->comps[comp].root : -1;
}

int32_t sy_reduce(sy_module *m, int32_t x, int32_t init, int nred, const int8_t *red,
                  int32_t reducer) {
    sy_shape xs = sy_shape_of(m, x);
    sy_shape s = sy_scalar(xs.etype);
    for (int i = 0, k = 0; i < xs.rank; i++) {
        int is_red = 0;
        for (int j = 0; j < nred; j++) is_red |= red[j] == i;
        if (!is_red) s.d[k++] = xs.d[i], s.rank++;
    }
    sy_inst p = proto_of(PC_HLO_REDUCE, s);
    p.ndims = (uint8_t)nred;
    for (int j = 0; j < nred; j++) p.dims[j] = red[j];
    p.called[0] = reducer;
    if (reducer >= 0 && root_of(m, reducer) < 0) return -1;
    int32_t ops[2] = {x, init};
    return sy_add(m, &p, ops, 2, NULL);
}

int32_t sy_dot(sy_module *m, int32_t lhs, int32_t rhs, int nbatch, int lhs_c, int rhs_c) {
    sy_shape a = sy_shape_of(m, lhs), b = sy_shape_of(m, rhs);
    sy_shape s = sy_scalar(a.etype);
    for (int i = 0; i < nbatch; i++) s.d[s.rank++] = a.d[i];
    for (int i = nbatch; i < a.rank; i++)
        if (i != lhs_c && s.rank < SY_MAX_RANK) s.d[s.rank++] = a.d[i];
    for (int i = nbatch; i < b.rank; i++)
        if (i != rhs_c && s.rank < SY_MAX_RANK) s.d[s.rank++] = b.d[i];
    sy_inst p = proto_of(PC_HLO_DOT, s);
    p.flags = SY_CAND;
    sy_attr at = attr_zero();
    at.lhs_contract = (int8_t)lhs_c;
    at.rhs_contract = (int8_t)rhs_c;
    at.nbatch = (int8_t)nbatch;
    int32_t ops[2] = {lhs, rhs};
    return sy_add(m, &p, ops, 2, &at);
}

/* SAME padding for a window of k with stride s over n. */
static void same_pad(int64_t n, int64_t k, int64_t s, int64_t *out, int64_t *lo, int64_t *hi) {
    *out = (n + s - 1) / s;
    int64_t total = (*out - 1) * s + k - n;
    if (total < 0) total = 0;
    *lo = total / 2;
    *hi = total - *lo;
}

int32_t sy_conv(sy_module *m, int32_t in, int32_t kernel, int64_t stride, int64_t groups) {
    sy_shape x = sy_shape_of(m, in), k = sy_shape_of(m, kernel);
    sy_attr at = attr_zero();
    at.is_conv = 1;
    at.feature_group_count = groups > 1 ? groups : 1;
    at.nwin = 2;
    sy_shape s = sy_shp4(x.etype, x.d[0], 0, 0, groups > 1 ? x.d[3] : k.d[3]);
    for (int i = 0; i < 2; i++) {
        at.win_size[i] = k.d[i];
        at.win_stride[i] = stride;
        same_pad(x.d[1 + i], k.d[i], stride, &s.d[1 + i], &at.pad_lo[i], &at.pad_hi[i]);
    }
    sy_inst p = proto_of(PC_HLO_CONVOLUTION, s);
    p.flags = SY_CAND;
    int32_t ops[2] = {in, kernel};
    return sy_add(m, &p, ops, 2, &at);
}

int32_t sy_reduce_window(sy_module *m, int32_t x, int32_t init, int64_t k, int64_t st,
                         int32_t reducer) {
    sy_shape xs = sy_shape_of(m, x);
    sy_shape s = xs;
    sy_attr at = attr_zero();
    at.nwin = xs.rank;
    for (int i = 0; i < xs.rank; i++) {
        int spatial = xs.rank == 4 && (i == 1 || i == 2);
        at.win_size[i] = spatial ? k : 1;
        at.win_stride[i] = spatial ? st : 1;
        if (spatial) same_pad(xs.d[i], k, st, &s.d[i], &at.pad_lo[i], &at.pad_hi[i]);
    }
    sy_inst p = proto_of(PC_HLO_REDUCE_WINDOW, s);
    p.called[0] = reducer;
    if (reducer >= 0 && root_of(m, reducer) < 0) return -1;
    int32_t ops[2] = {x, init};
    return sy_add(m, &p, ops, 2, &at);
}

int32_t sy_reshape(sy_module *m, int32_t x, sy_shape s) {
    sy_inst p = proto_of(PC_HLO_RESHAPE, s);
    p.flags = SY_CAND;
    return sy_add(m, &p, &x, 1, NULL);
}

int32_t sy_transpose(sy_module *m, int32_t x, const int8_t *perm) {
    sy_shape xs = sy_shape_of(m, x);
    sy_shape s = xs;
    for (int i = 0; i < xs.rank; i++) s.d[i] = xs.d[perm[i]];
    sy_inst p = proto_of(PC_HLO_TRANSPOSE, s);
    p.ndims = xs.rank;
    for (int i = 0; i < xs.rank; i++) p.dims[i] = perm[i];
    return sy_add(m, &p, &x, 1, NULL);
}

int32_t sy_tuple(sy_module *m, int n, const int32_t *ops) {
    sy_inst p = proto_of(PC_HLO_TUPLE, sy_scalar(SY_TUPLE));
    p.ntuple = (uint8_t)(n > 255 ? 255 : n);
    return sy_add(m, &p, ops, n, NULL);
}

int32_t sy_gte(sy_module *m, int32_t t, sy_shape s, int index) {
    sy_inst p = proto_of(PC_HLO_GET_TUPLE_ELEMENT, s);
    (void)index; /* tuple_index is not featurized */
    return sy_add(m, &p, &t, 1, NULL);
}

int32_t sy_slice(sy_module *m, int32_t x, const int64_t *start, const int64_t *limit) {
    sy_shape xs = sy_shape_of(m, x);
    sy_shape s = xs;
    sy_attr at = attr_zero();
    at.nslice = xs.rank;
    for (int i = 0; i < xs.rank; i++) {
        at.sl_start[i] = start[i];
        at.sl_limit[i] = limit[i];
        at.sl_stride[i] = 1;
        s.d[i] = limit[i] - start[i];
    }
    sy_inst p = proto_of(PC_HLO_SLICE, s);
    return sy_add(m, &p, &x, 1, &at);
}

int32_t sy_dynamic_slice(sy_module *m, int32_t x, const int32_t *idx, const int64_t *sizes) {
    sy_shape xs = sy_shape_of(m, x);
    sy_shape s = xs;
    sy_attr at = attr_zero();
    at.ndss = xs.rank;
    int32_t ops[1 + SY_MAX_RANK];
    ops[0] = x;
    for (int i = 0; i < xs.rank; i++) {
        s.d[i] = at.dss[i] = sizes[i];
        ops[1 + i] = idx[i];
    }
    sy_inst p = proto_of(PC_HLO_DYNAMIC_SLICE, s);
    return sy_add(m, &p, ops, 1 + xs.rank, &at);
}

int32_t sy_concat(sy_module *m, int32_t a, int32_t b, int dim) {
    sy_shape s = sy_shape_of(m, a);
    s.d[dim] += sy_shape_of(m, b).d[dim];
    sy_inst p = proto_of(PC_HLO_CONCATENATE, s);
    p.ndims = 1;
    p.dims[0] = (int8_t)dim;
    int32_t ops[2] = {a, b};
    return sy_add(m, &p, ops, 2, NULL);
}

int32_t sy_pad(sy_module *m, int32_t x, int32_t value, const int64_t *lo, const int64_t *hi) {
    sy_shape s = sy_shape_of(m, x);
    sy_attr at = attr_zero();
    at.npad = s.rank;
    for (int i = 0; i < s.rank; i++) {
        at.pd_lo[i] = lo[i];
        at.pd_hi[i] = hi[i];
        s.d[i] += lo[i] + hi[i];
    }
    sy_inst p = proto_of(PC_HLO_PAD, s);
    int32_t ops[2] = {x, value};
    return sy_add(m, &p, ops, 2, &at);
}

int32_t sy_gather(sy_module *m, int32_t table, int32_t ids) {
    sy_shape t = sy_shape_of(m, table), i = sy_shape_of(m, ids);
    sy_shape s = i;
    s.etype = t.etype;
    if (s.rank < SY_MAX_RANK) s.d[s.rank++] = t.d[t.rank - 1];
    sy_inst p = proto_of(PC_HLO_GATHER, s);
    int32_t ops[2] = {table, ids};
    return sy_add(m, &p, ops, 2, NULL);
}

int32_t sy_while(sy_module *m, int32_t init, int32_t cond, int32_t body) {
    sy_inst p = proto_of(PC_HLO_WHILE, sy_scalar(SY_TUPLE));
    if (m->cur >= 0 && init >= 0) p.ntuple = m->comps[m->cur].inst[init].ntuple;
    p.called[0] = cond;
    p.called[1] = body;
    if (root_of(m, cond) < 0 || root_of(m, body) < 0) return -1;
    return sy_add(m, &p, &init, 1, NULL);
}

void sy_set_ntuple(sy_module *m, int32_t x, int ntuple) {
    if (m->cur < 0 || x < 0 || x >= m->comps[m->cur].n) return;
    m->comps[m->cur].inst[x].ntuple = (uint8_t)(ntuple > 255 ? 255 : ntuple);
}

/* ---- finishing ---------------------------------------------------------- */

/* Dataset order: computations in creation order with the entry moved last;
   callees are created before their callers, so operands precede users. */
static void order_comps(sy_module *m, int32_t entry) {
    int32_t k = 0;
    for (int32_t c = 0; c < m->ncomp; c++)
        if (c != entry) m->comp_order[k++] = c;
    m->comp_order[k] = entry;
}

int sy_module_finish(sy_module *m, int32_t entry) {
    if (m->failed || entry < 0 || entry >= m->ncomp) return -1;
    m->comp_order = malloc((size_t)m->ncomp * sizeof *m->comp_order);
    if (!m->comp_order) return m->failed = 1, -1;
    order_comps(m, entry);
    int64_t n = 0, nopnd = 0;
    for (int32_t k = 0; k < m->ncomp; k++) {
        sy_comp *c = &m->comps[m->comp_order[k]];
        c->begin = n;
        n += c->n;
        nopnd += c->nopnd;
    }
    m->inst = malloc((size_t)(n ? n : 1) * sizeof *m->inst);
    m->opnd = malloc((size_t)(nopnd ? nopnd : 1) * sizeof *m->opnd);
    if (!m->inst || !m->opnd || n > INT32_MAX) return m->failed = 1, -1;
    /* roots become global first: callers refer to them */
    for (int32_t k = 0; k < m->ncomp; k++) {
        sy_comp *c = &m->comps[k];
        if (c->root < 0) c->root = c->n - 1; /* XLA's default: the last instruction */
        c->root += (int32_t)c->begin;
    }
    int64_t oi = 0;
    for (int32_t k = 0; k < m->ncomp; k++) {
        sy_comp *c = &m->comps[m->comp_order[k]];
        for (int32_t j = 0; j < c->n; j++) {
            sy_inst in = c->inst[j];
            const int32_t *ops = c->opnd + in.opnd0;
            in.opnd0 = (int32_t)oi;
            for (int32_t q = 0; q < in.nopnd; q++) m->opnd[oi++] = (int32_t)(c->begin + ops[q]);
            for (int q = 0; q < 2; q++)
                if (in.called[q] >= 0) in.called[q] = m->comps[in.called[q]].root;
            m->inst[c->begin + j] = in;
        }
        free(c->inst);
        free(c->opnd);
        c->inst = NULL;
        c->opnd = NULL;
    }
    m->n = n;
    m->nopnd = oi;
    return 0;
}

/* ---- featurizer --------------------------------------------------------- */

/* Convolution dimension numbers of every synthetic convolution: NHWC input,
   HWIO kernel, NHWC output (output spatial dims are not featurized). */
static const int64_t conv_input_spatial[2] = {1, 2}, conv_kernel_spatial[2] = {0, 1};

/*
 * The instruction as the schema's featurizer reads it (tpugraphs/features.h).
 * The element type goes in as the xla::PrimitiveType it is (sy_etype): for
 * the five types synth makes (and 0), the featurizer's one-hot column is the
 * one synth's own table used to give. Windows have no reversal and
 * dilations of 1. Sums and products: see tpugraphs/features.c (synth's
 * values never overflow, so the wrapping rule gives synth's old bytes).
 */
void sy_featurize(const sy_module *m, int64_t i, float *out) {
    static const int64_t ones[SY_MAX_RANK] = {1, 1, 1, 1, 1, 1};
    const sy_inst *in = &m->inst[i];
    const sy_attr *a = in->attr >= 0 ? &m->attrs[in->attr] : NULL;
    pc_tpug_node nd;
    memset(&nd, 0, sizeof nd);
    nd.is_root = m->comps[in->comp].root == i;
    nd.element_type = in->shape.etype;
    int rank = sy_rank_bound(in->shape.rank);
    nd.dims = (pc_tpug_seq){in->shape.d, rank};
    nd.tuple_count = in->ntuple;
    nd.parameter_number = in->param_no;
    int64_t dims[SY_MAX_RANK];
    int nd_dims = in->ndims < SY_MAX_RANK ? in->ndims : SY_MAX_RANK;
    for (int k = 0; k < nd_dims; k++) dims[k] = in->dims[k];
    nd.dimensions = (pc_tpug_seq){dims, nd_dims};
    int64_t m2m[SY_MAX_RANK];
    uint8_t m2m8[SY_MAX_RANK];
    sy_row_major(rank, m2m8);
    for (int k = 0; k < rank; k++) m2m[k] = m2m8[k];
    nd.minor_to_major = (pc_tpug_seq){m2m, rank};
    if (a) {
        nd.window_n = a->nwin < SY_MAX_RANK ? a->nwin : SY_MAX_RANK;
        nd.win_size = a->win_size;
        nd.win_stride = a->win_stride;
        nd.win_pad_low = a->pad_lo;
        nd.win_pad_high = a->pad_hi;
        nd.win_dilation = ones;
        nd.win_base_dilation = ones;
        if (a->is_conv) {
            nd.conv_input_feature = 3;
            nd.conv_input_spatial = (pc_tpug_seq){conv_input_spatial, 2};
            nd.conv_kernel_input_feature = 2;
            nd.conv_kernel_output_feature = 3;
            nd.conv_kernel_spatial = (pc_tpug_seq){conv_kernel_spatial, 2};
            nd.conv_output_feature = 3;
            nd.feature_group_count = a->feature_group_count;
            nd.batch_group_count = 1;
        }
        nd.slice_start = (pc_tpug_seq){a->sl_start, a->nslice};
        nd.slice_stride = (pc_tpug_seq){a->sl_stride, a->nslice};
        nd.slice_limit = (pc_tpug_seq){a->sl_limit, a->nslice};
        nd.dynamic_slice_sizes = (pc_tpug_seq){a->dss, a->ndss};
        nd.pad_low = (pc_tpug_seq){a->pd_lo, a->npad};
        nd.pad_high = (pc_tpug_seq){a->pd_hi, a->npad};
    }
    pc_tpug_node_feat(&nd, out);
}

void sy_row_major(int rank, uint8_t *m2m) {
    rank = sy_rank_bound(rank);
    for (int k = 0; k < rank; k++) m2m[k] = (uint8_t)(rank - 1 - k);
}

/* ---- edges and splits --------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t sy_edges(const sy_module *m, int64_t *out) {
    int32_t most = 0;
    for (int64_t i = 0; i < m->n; i++)
        if (m->inst[i].nopnd > most) most = m->inst[i].nopnd;
    int64_t *tmp = malloc((size_t)(most + 2) * sizeof *tmp);
    if (!tmp) return -1;
    int64_t e = 0;
    for (int64_t i = 0; i < m->n; i++) {
        const sy_inst *in = &m->inst[i];
        const int32_t *ops = sy_operands(m, i);
        int32_t k = 0;
        for (int32_t q = 0; q < in->nopnd; q++) tmp[k++] = ops[q];
        qsort(tmp, (size_t)k, sizeof *tmp, cmp_i64);
        int32_t u = 0; /* operands deduplicated, as the extractor does */
        for (int32_t q = 0; q < k; q++)
            if (u == 0 || tmp[q] != tmp[u - 1]) tmp[u++] = tmp[q];
        /* called-computation roots lie in other computations, so they never
           repeat an operand; the extractor adds them without deduplication */
        for (int q = 0; q < 2; q++)
            if (in->called[q] >= 0) tmp[u++] = in->called[q];
        qsort(tmp, (size_t)u, sizeof *tmp, cmp_i64);
        for (int32_t q = 0; q < u; q++, e++)
            if (out) out[2 * e] = i, out[2 * e + 1] = tmp[q];
    }
    free(tmp);
    return e;
}

int sy_node_splits(const sy_module *m, int64_t *out) {
    int k = 0;
    int64_t count = 0;
    out[k++] = 0;
    for (int32_t j = 0; j < m->ncomp; j++) {
        const sy_comp *c = &m->comps[m->comp_order[j]];
        count += c->n;
        if (strstr(c->name, "cluster") || strstr(c->name, "while") || strstr(c->name, "cond"))
            out[k++] = count;
    }
    if (out[k - 1] < count) out[k++] = count;
    return k;
}
