/*
 * Layout configurations and the simulated-TPU layout cost model.
 *
 * A config gives, for each configurable node (convolution, dot, reshape), the
 * minor-to-major order of its output, its first operand and (convolutions)
 * its kernel; -1 means "compiler's choice". The model then plays the compiler:
 * it propagates layouts through the program in topological order, inserts a
 * copy wherever a producer's layout differs from what a consumer needs, and
 * prices every op from the padded bytes it moves and the work it does. See
 * docs/synth.md for the formulas and why simple heuristics do not solve it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"
#include "synth/tpu.h"

/* ---- small layout helpers ------------------------------------------------ */

typedef uint8_t sy_lay[SY_MAX_RANK]; /* minor_to_major, first `rank` entries used */

static void lay_row_major(int rank, uint8_t *l) { sy_row_major(rank, l); }

/* Bytes an array occupies in HBM under a layout: the minor dim is padded to
   the 128 lanes, the second-minor to the sublane count. */
static double pad_bytes(const sy_shape *s, const uint8_t *l) {
    int es = tpu_esize(s->etype);
    if (s->rank == 0) return es;
    double b = (double)tpu_ceil_to(s->d[l[0]], TPU_LANES);
    if (s->rank >= 2) b *= (double)tpu_ceil_to(s->d[l[1]], tpu_sublanes(es));
    for (int i = 2; i < s->rank; i++) b *= (double)s->d[l[i]];
    return b * es;
}

/* Layouts that differ only in where size-1 dims sit are the same bytes. */
static int lay_equiv(const sy_shape *s, const uint8_t *a, const uint8_t *b) {
    int i = 0, j = 0;
    for (;;) {
        while (i < s->rank && s->d[a[i]] == 1) i++;
        while (j < s->rank && s->d[b[j]] == 1) j++;
        if (i == s->rank || j == s->rank) return i == s->rank && j == s->rank;
        if (a[i++] != b[j++]) return 0;
    }
}

static int lay_is_row_major(const sy_shape *s, const uint8_t *l) {
    sy_lay rm;
    lay_row_major(s->rank, rm);
    return lay_equiv(s, l, rm);
}

/* The minor-most dim of size > 1: what actually sits in the lanes. */
static int eff_minor(const sy_shape *s, const uint8_t *l) {
    for (int i = 0; i < s->rank; i++)
        if (s->d[l[i]] > 1) return l[i];
    return s->rank ? l[0] : 0;
}

/* An inserted copy from layout a to b: read and write the padded bytes, and
   pay the cross-lane transpose when the minor dim changes. */
static double copy_ns(const sy_shape *s, const uint8_t *a, const uint8_t *b) {
    if (lay_equiv(s, a, b)) return 0.0;
    double f = eff_minor(s, a) == eff_minor(s, b) ? 1.1 : 1.6;
    return (pad_bytes(s, a) + pad_bytes(s, b)) / TPU_HBM_BYTES_PER_NS * f + TPU_OP_LAUNCH_NS;
}

static double padded_elems(const sy_shape *s, const uint8_t *l) {
    return pad_bytes(s, l) / tpu_esize(s->etype);
}

/* Row-major with dim d moved to the minor (lane) position. */
static void lay_with_minor(int rank, int d, uint8_t *l) {
    l[0] = (uint8_t)d;
    for (int i = rank - 1, k = 1; i >= 0; i--)
        if (i != d) l[k++] = (uint8_t)i;
}

/*
 * The compiler's own choice for a dot or convolution output when the config
 * leaves it open: among row-major and the layouts that bring one dim into
 * the lanes, the one wasting the least padding (it must save a fifth to
 * beat row-major). Greedy and local: it ignores what the users of the value
 * need, which is what an autotuner can fix.
 */
static void compiler_pick(const sy_shape *s, uint8_t *out) {
    lay_row_major(s->rank, out);
    double best = pad_bytes(s, out) * 0.8;
    sy_lay c;
    for (int d = 0; d + 1 < s->rank; d++) {
        if (s->d[d] < 8) continue;
        lay_with_minor(s->rank, d, c);
        if (s->rank >= 2 && s->d[c[1]] == 1) continue;
        double b = pad_bytes(s, c);
        if (b < best) best = b, memcpy(out, c, sizeof c);
    }
}

/* ---- op classes ---------------------------------------------------------- */

enum lclass {
    LC_FIXED, /* parameter, get-tuple-element, constant array, while: row-major */
    LC_FLEX,  /* broadcast, iota, scalar constant: takes whatever layout its user wants */
    LC_ELTWISE,
    LC_REDUCE,
    LC_RWINDOW,
    LC_TRANSPOSE,
    LC_PASS0, /* slice, dynamic-slice, pad, concatenate: keep operand 0's layout */
    LC_RESHAPE,
    LC_DOT,
    LC_CONV,
    LC_TUPLE,
    LC_GATHER,
};

static uint8_t classify(const sy_inst *in) {
    switch (in->op) {
    case PC_HLO_PARAMETER:
    case PC_HLO_GET_TUPLE_ELEMENT:
    case PC_HLO_WHILE: return LC_FIXED;
    case PC_HLO_CONSTANT: return in->shape.rank ? LC_FIXED : LC_FLEX;
    case PC_HLO_BROADCAST:
    case PC_HLO_IOTA: return LC_FLEX;
    case PC_HLO_REDUCE: return LC_REDUCE;
    case PC_HLO_REDUCE_WINDOW: return LC_RWINDOW;
    case PC_HLO_TRANSPOSE: return LC_TRANSPOSE;
    case PC_HLO_SLICE:
    case PC_HLO_DYNAMIC_SLICE:
    case PC_HLO_PAD:
    case PC_HLO_CONCATENATE:
    case PC_HLO_REVERSE: return LC_PASS0;
    case PC_HLO_RESHAPE: return LC_RESHAPE;
    case PC_HLO_DOT: return LC_DOT;
    case PC_HLO_CONVOLUTION: return LC_CONV;
    case PC_HLO_TUPLE: return LC_TUPLE;
    case PC_HLO_GATHER: return LC_GATHER;
    default: return LC_ELTWISE;
    }
}

/* Vector-unit cost of one element of an elementwise op, in VPU op units:
   transcendentals go through the slower EUP. */
static double eltwise_weight(uint8_t op) {
    switch (op) {
    case PC_HLO_EXPONENTIAL:
    case PC_HLO_LOG:
    case PC_HLO_TANH:
    case PC_HLO_RSQRT:
    case PC_HLO_SQRT:
    case PC_HLO_LOGISTIC:
    case PC_HLO_POWER: return TPU_VPU_OPS_PER_NS / TPU_EUP_OPS_PER_NS;
    case PC_HLO_DIVIDE: return 2.0;
    default: return 1.0;
    }
}

/* ---- the model ----------------------------------------------------------- */

struct sy_layout_model {
    const sy_module *m;
    uint8_t *cls;
    int32_t *slot; /* config slot of a node, -1 if not configurable */
    sy_lay *lay;   /* current layout of every node */
    sy_lay *pick;  /* the compiler's own output layout of dots and convolutions */
    int32_t *aff;  /* nodes whose cost or layout can depend on the config */
    int64_t naff;
    double static_ns; /* weighted cost of every other node */
    const float *row; /* config being evaluated, NULL = all default */
};

/* The layout a config asks for on tensor t of node v, or NULL for default. */
static const uint8_t *cfg_layout(const sy_layout_model *lm, int64_t v, int t, int rank,
                                 uint8_t *buf) {
    int32_t s = lm->slot[v];
    if (s < 0 || !lm->row) return NULL;
    const float *f = lm->row + (int64_t)s * PC_TPUG_LAYOUT_FEATS + t * SY_MAX_RANK;
    if (f[0] < 0) return NULL;
    rank = sy_rank_bound(rank);
    for (int i = 0; i < rank; i++) buf[i] = (uint8_t)f[i];
    return buf;
}

static int is_flex(const sy_layout_model *lm, int32_t v) { return lm->cls[v] == LC_FLEX; }

static const sy_shape *shape(const sy_layout_model *lm, int64_t v) { return &lm->m->inst[v].shape; }

/* Operand o as the consumer wants it in layout `want`: a copy unless it
   already is (flexible producers always are). */
static double fetch(const sy_layout_model *lm, int32_t o, const uint8_t *want) {
    if (is_flex(lm, o)) return 0.0;
    return copy_ns(shape(lm, o), lm->lay[o], want);
}

static double eval_eltwise(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    const int32_t *ops = sy_operands(lm->m, v);
    const sy_shape *s = &in->shape;
    uint8_t *L = lm->lay[v];
    int found = 0;
    for (int32_t q = 0; q < in->nopnd && !found; q++)
        if (!is_flex(lm, ops[q]) && shape(lm, ops[q])->rank == s->rank) {
            memcpy(L, lm->lay[ops[q]], sizeof(sy_lay));
            found = 1;
        }
    if (!found) lay_row_major(s->rank, L);
    double cost = 0.0, bytes = pad_bytes(s, L);
    for (int32_t q = 0; q < in->nopnd; q++) {
        const sy_shape *so = shape(lm, ops[q]);
        if (so->rank != s->rank) {
            bytes += pad_bytes(so, lm->lay[ops[q]]);
            continue;
        }
        cost += fetch(lm, ops[q], L);
        bytes += pad_bytes(so, L);
    }
    double compute = padded_elems(s, L) * eltwise_weight(in->op) / TPU_VPU_OPS_PER_NS;
    return cost + fmax(bytes / TPU_HBM_BYTES_PER_NS, compute) + TPU_OP_LAUNCH_NS;
}

static double eval_reduce(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    int32_t x = sy_operands(lm->m, v)[0];
    const sy_shape *sx = shape(lm, x), *s = &in->shape;
    sy_lay rm;
    lay_row_major(sx->rank, rm);
    const uint8_t *Lx = is_flex(lm, x) ? rm : lm->lay[x];
    /* the output keeps the input's order of the surviving dims */
    int newidx[SY_MAX_RANK], k = 0, minor_reduced = 0, em = eff_minor(sx, Lx);
    for (int i = 0; i < sx->rank; i++) {
        int red = 0;
        for (int j = 0; j < in->ndims; j++) red |= in->dims[j] == i;
        newidx[i] = red ? -1 : k++;
        if (red && i == em) minor_reduced = 1;
    }
    uint8_t *L = lm->lay[v];
    for (int i = 0, j = 0; i < sx->rank; i++)
        if (newidx[Lx[i]] >= 0) L[j++] = (uint8_t)newidx[Lx[i]];
    double bytes = pad_bytes(sx, Lx) + pad_bytes(s, L);
    /* reducing across lanes needs cross-lane shuffles */
    double compute = padded_elems(sx, Lx) * (minor_reduced ? 3.0 : 1.0) / TPU_VPU_OPS_PER_NS;
    return fmax(bytes / TPU_HBM_BYTES_PER_NS, compute) + TPU_OP_LAUNCH_NS;
}

static double eval_rwindow(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    int32_t x = sy_operands(lm->m, v)[0];
    const sy_attr *a = &lm->m->attrs[in->attr];
    uint8_t *L = lm->lay[v];
    if (is_flex(lm, x))
        lay_row_major(in->shape.rank, L);
    else
        memcpy(L, lm->lay[x], sizeof(sy_lay));
    double win = 1;
    for (int i = 0; i < a->nwin; i++) win *= (double)a->win_size[i];
    double bytes = pad_bytes(shape(lm, x), L) + pad_bytes(&in->shape, L);
    double compute = padded_elems(&in->shape, L) * win / TPU_VPU_OPS_PER_NS;
    return fmax(bytes / TPU_HBM_BYTES_PER_NS, compute) + TPU_OP_LAUNCH_NS;
}

/* Layout assignment makes a transpose a bitcast: the output takes the
   permuted input layout, for free, and hands it on to its users. */
static double eval_transpose(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    int32_t x = sy_operands(lm->m, v)[0];
    int r = in->shape.rank;
    sy_lay rm, inv;
    lay_row_major(r, rm);
    const uint8_t *Lx = is_flex(lm, x) ? rm : lm->lay[x];
    for (int j = 0; j < r; j++) inv[(int)in->dims[j]] = (uint8_t)j;
    for (int i = 0; i < r; i++) lm->lay[v][i] = inv[Lx[i]];
    return 0.15 * TPU_OP_LAUNCH_NS;
}

static double eval_pass0(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    const int32_t *ops = sy_operands(lm->m, v);
    const sy_shape *s = &in->shape;
    uint8_t *L = lm->lay[v];
    if (is_flex(lm, ops[0]))
        lay_row_major(s->rank, L);
    else
        memcpy(L, lm->lay[ops[0]], sizeof(sy_lay));
    double cost = 0.0, bytes = 2.0 * pad_bytes(s, L);
    if (in->op == PC_HLO_DYNAMIC_SLICE)
        return bytes / TPU_HBM_BYTES_PER_NS + TPU_OP_LAUNCH_NS; /* reads only the slice */
    bytes = pad_bytes(s, L);
    for (int32_t q = 0; q < in->nopnd; q++) {
        const sy_shape *so = shape(lm, ops[q]);
        if (so->rank != s->rank) continue;
        if (q > 0) cost += fetch(lm, ops[q], L);
        bytes += pad_bytes(so, L);
    }
    return cost + bytes / TPU_HBM_BYTES_PER_NS + TPU_OP_LAUNCH_NS;
}

/* A reshape is a bitcast only between row-major layouts; anything else
   moves every byte. A configurable reshape may ask for its input and output
   layouts; a fixed one wants a row-major input and gives a row-major output. */
static double eval_reshape(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    int32_t x = sy_operands(lm->m, v)[0];
    const sy_shape *sx = shape(lm, x), *s = &in->shape;
    sy_lay rmx, bin, bout;
    lay_row_major(sx->rank, rmx);
    const uint8_t *Lp = is_flex(lm, x) ? rmx : lm->lay[x];
    double cost = 0.0;
    const uint8_t *Lin = cfg_layout(lm, v, 1, sx->rank, bin);
    if (!Lin) Lin = lm->slot[v] >= 0 ? Lp : rmx;
    if (!is_flex(lm, x)) cost += copy_ns(sx, Lp, Lin);
    const uint8_t *Lout = cfg_layout(lm, v, 0, s->rank, bout);
    if (Lout)
        memcpy(lm->lay[v], Lout, s->rank);
    else
        lay_row_major(s->rank, lm->lay[v]);
    if (lay_is_row_major(sx, Lin) && lay_is_row_major(s, lm->lay[v]))
        return cost + 0.15 * TPU_OP_LAUNCH_NS;
    double bytes = pad_bytes(sx, Lin) + pad_bytes(s, lm->lay[v]);
    return cost + 1.3 * bytes / TPU_HBM_BYTES_PER_NS + TPU_OP_LAUNCH_NS;
}

/* MXU time with its 128-wide contraction and output lanes, the sublane
   granularity of the streamed rows, and the layout penalties. */
static double mxu_ns(double batch, double mm, double kk, double nn, double pen) {
    double util = kk / (double)tpu_ceil_to((int64_t)kk, TPU_LANES) *
                  (nn / (double)tpu_ceil_to((int64_t)nn, TPU_LANES)) *
                  (mm / (double)tpu_ceil_to((int64_t)mm, 8));
    return 2.0 * batch * mm * kk * nn / (TPU_MXU_FLOPS_PER_NS * util) * pen;
}

static double roofline(double compute, double bytes) {
    double mem = bytes / TPU_HBM_BYTES_PER_NS;
    return fmax(compute, mem) + 0.15 * fmin(compute, mem) + TPU_OP_LAUNCH_NS;
}

/* Operand layouts of a dot/conv input: the config's, else the producer's. */
static const uint8_t *input_layout(sy_layout_model *lm, int64_t v, int t, int32_t o, uint8_t *buf,
                                   uint8_t *rm, double *cost) {
    const sy_shape *so = shape(lm, o);
    lay_row_major(so->rank, rm);
    const uint8_t *Lp = is_flex(lm, o) ? rm : lm->lay[o];
    const uint8_t *L = cfg_layout(lm, v, t, so->rank, buf);
    if (!L) return Lp;
    if (!is_flex(lm, o)) *cost += copy_ns(so, Lp, L);
    return L;
}

static void output_layout(sy_layout_model *lm, int64_t v) {
    const sy_shape *s = shape(lm, v);
    sy_lay b;
    const uint8_t *L = cfg_layout(lm, v, 0, s->rank, b);
    memcpy(lm->lay[v], L ? L : lm->pick[v], s->rank);
}

/* Role of a dot dim: 0 batch, 1 contracting, 2 free. */
static int dot_role(int d, int nbatch, int contract) {
    return d < nbatch ? 0 : d == contract ? 1 : 2;
}

static double eval_dot(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    const sy_attr *a = &lm->m->attrs[in->attr];
    const int32_t *ops = sy_operands(lm->m, v);
    const sy_shape *sl = shape(lm, ops[0]), *sr = shape(lm, ops[1]), *so = &in->shape;
    sy_lay bl, rl, br, rr;
    double cost = 0.0;
    const uint8_t *Ll = input_layout(lm, v, 1, ops[0], bl, rl, &cost);
    const uint8_t *Lr = input_layout(lm, v, 2, ops[1], br, rr, &cost);
    output_layout(lm, v);
    const uint8_t *Lo = lm->lay[v];
    int nb = a->nbatch;
    double batch = 1, mm = 1, kk = (double)sl->d[a->lhs_contract], nn = 1;
    for (int i = 0; i < nb; i++) batch *= (double)sl->d[i];
    for (int i = nb; i < sl->rank; i++)
        if (i != a->lhs_contract) mm *= (double)sl->d[i];
    for (int i = nb; i < sr->rank; i++)
        if (i != a->rhs_contract) nn *= (double)sr->d[i];
    /* lhs wants K in the lanes, rhs wants N there, the result N */
    static const double pen_l[3] = {1.6, 1.0, 1.15}, pen_r[3] = {1.6, 1.1, 1.0};
    double pen = pen_l[dot_role(eff_minor(sl, Ll), nb, a->lhs_contract)];
    pen *= is_flex(lm, ops[1]) ? 1.0 : pen_r[dot_role(eff_minor(sr, Lr), nb, a->rhs_contract)];
    int om = eff_minor(so, Lo), lhs_free = sl->rank - nb - 1;
    pen *= om < nb ? 1.6 : om < nb + lhs_free ? 1.1 : 1.0;
    double bytes = pad_bytes(sl, Ll) + pad_bytes(sr, Lr) + pad_bytes(so, Lo);
    return cost + roofline(mxu_ns(batch, mm, kk, nn, pen), bytes);
}

static double eval_conv(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    const sy_attr *a = &lm->m->attrs[in->attr];
    const int32_t *ops = sy_operands(lm->m, v);
    const sy_shape *sx = shape(lm, ops[0]), *sk = shape(lm, ops[1]), *so = &in->shape;
    sy_lay bx, rx, bk, rk;
    double cost = 0.0;
    const uint8_t *Lx = input_layout(lm, v, 1, ops[0], bx, rx, &cost);
    const uint8_t *Lk = input_layout(lm, v, 2, ops[1], bk, rk, &cost);
    output_layout(lm, v);
    const uint8_t *Lo = lm->lay[v];
    /* NHWC input wants features in the lanes; HWIO kernel wants O, then I */
    static const double pen_x[4] = {1.3, 1.15, 1.15, 1.0}, pen_k[4] = {1.4, 1.4, 1.1, 1.0};
    static const double pen_o[4] = {1.3, 1.1, 1.1, 1.0};
    double pen = pen_x[eff_minor(sx, Lx)] * pen_o[eff_minor(so, Lo)];
    double taps = (double)(sk->d[0] * sk->d[1]);
    double bytes = pad_bytes(sx, Lx) + pad_bytes(sk, Lk) + pad_bytes(so, Lo);
    double compute;
    if (a->feature_group_count > 1) /* depthwise: the vector unit does it */
        compute = 2.0 * padded_elems(so, Lo) * taps / TPU_VPU_OPS_PER_NS * pen;
    else
        compute = mxu_ns(1, (double)(so->d[0] * so->d[1] * so->d[2]), (double)sk->d[2] * taps,
                         (double)sk->d[3], pen * pen_k[eff_minor(sk, Lk)]);
    return cost + roofline(compute, bytes);
}

/* Tuples feed loop state and program results, whose layouts are fixed to
   row-major: anything else is copied back. */
static double eval_tuple(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    const int32_t *ops = sy_operands(lm->m, v);
    double cost = 0.1 * TPU_OP_LAUNCH_NS;
    sy_lay rm;
    for (int32_t q = 0; q < in->nopnd; q++) {
        const sy_shape *so = shape(lm, ops[q]);
        if (so->rank == 0 || so->etype == SY_TUPLE || is_flex(lm, ops[q])) continue;
        lay_row_major(so->rank, rm);
        cost += copy_ns(so, lm->lay[ops[q]], rm);
    }
    return cost;
}

static double eval_node(sy_layout_model *lm, int64_t v) {
    const sy_inst *in = &lm->m->inst[v];
    switch (lm->cls[v]) {
    case LC_FIXED:
        lay_row_major(in->shape.rank, lm->lay[v]);
        return in->op == PC_HLO_WHILE ? TPU_OP_LAUNCH_NS : 0.0;
    case LC_FLEX:
        lay_row_major(in->shape.rank, lm->lay[v]);
        if (in->op == PC_HLO_CONSTANT) return 0.0;
        return pad_bytes(&in->shape, lm->lay[v]) / TPU_HBM_BYTES_PER_NS + TPU_OP_LAUNCH_NS;
    case LC_ELTWISE: return eval_eltwise(lm, v);
    case LC_REDUCE: return eval_reduce(lm, v);
    case LC_RWINDOW: return eval_rwindow(lm, v);
    case LC_TRANSPOSE: return eval_transpose(lm, v);
    case LC_PASS0: return eval_pass0(lm, v);
    case LC_RESHAPE: return eval_reshape(lm, v);
    case LC_DOT: return eval_dot(lm, v);
    case LC_CONV: return eval_conv(lm, v);
    case LC_TUPLE: return eval_tuple(lm, v);
    case LC_GATHER:
        lay_row_major(in->shape.rank, lm->lay[v]);
        return 2.0 * pad_bytes(&in->shape, lm->lay[v]) / TPU_HBM_BYTES_PER_NS + TPU_OP_LAUNCH_NS;
    default: return 0.0;
    }
}

static double node_weight(const sy_layout_model *lm, int64_t v) {
    return lm->m->comps[lm->m->inst[v].comp].weight;
}

/* A node's layout can follow the config if it is configurable or passes an
   operand's layout on; its cost can if that holds for it or an operand. */
static int64_t find_affected(sy_layout_model *lm, uint8_t *dyn) {
    const sy_module *m = lm->m;
    int64_t naff = 0;
    for (int64_t v = 0; v < m->n; v++) {
        const int32_t *ops = sy_operands(m, v);
        int any = 0;
        for (int32_t q = 0; q < m->inst[v].nopnd; q++) any |= dyn[ops[q]];
        uint8_t c = lm->cls[v];
        int passes = c == LC_ELTWISE || c == LC_REDUCE || c == LC_RWINDOW || c == LC_TRANSPOSE ||
                     c == LC_PASS0;
        dyn[v] = (uint8_t)(lm->slot[v] >= 0 || (passes && any));
        if (dyn[v] || any) lm->aff[naff++] = (int32_t)v;
    }
    return naff;
}

sy_layout_model *sy_layout_model_new(const sy_module *m, const int64_t *ids, int64_t nc) {
    sy_layout_model *lm = calloc(1, sizeof *lm);
    uint8_t *dyn = calloc((size_t)m->n + 1, 1);
    if (!lm || !dyn) goto fail;
    lm->m = m;
    lm->cls = malloc((size_t)m->n + 1);
    lm->slot = malloc(((size_t)m->n + 1) * sizeof *lm->slot);
    lm->lay = calloc((size_t)m->n + 1, sizeof *lm->lay);
    lm->aff = malloc(((size_t)m->n + 1) * sizeof *lm->aff);
    lm->pick = calloc((size_t)m->n + 1, sizeof *lm->pick);
    if (!lm->cls || !lm->slot || !lm->lay || !lm->aff || !lm->pick) goto fail;
    for (int64_t v = 0; v < m->n; v++) {
        lm->cls[v] = classify(&m->inst[v]);
        lm->slot[v] = -1;
        if (lm->cls[v] == LC_DOT || lm->cls[v] == LC_CONV)
            compiler_pick(&m->inst[v].shape, lm->pick[v]);
    }
    for (int64_t s = 0; s < nc; s++) lm->slot[ids[s]] = (int32_t)s;
    lm->naff = find_affected(lm, dyn);
    /* one all-default pass fixes the layouts and costs of everything else */
    lm->row = NULL;
    double total = 0.0, aff = 0.0;
    int64_t k = 0;
    for (int64_t v = 0; v < m->n; v++) {
        double c = eval_node(lm, v) * node_weight(lm, v);
        total += c;
        if (k < lm->naff && lm->aff[k] == v) aff += c, k++;
    }
    lm->static_ns = total - aff;
    free(dyn);
    return lm;
fail:
    free(dyn);
    sy_layout_model_free(lm);
    return NULL;
}

void sy_layout_model_free(sy_layout_model *lm) {
    if (!lm) return;
    free(lm->cls);
    free(lm->slot);
    free(lm->lay);
    free(lm->aff);
    free(lm->pick);
    free(lm);
}

double sy_layout_cost(sy_layout_model *lm, const float *row) {
    lm->row = row;
    double total = lm->static_ns;
    for (int64_t k = 0; k < lm->naff; k++) {
        int64_t v = lm->aff[k];
        total += eval_node(lm, v) * node_weight(lm, v);
    }
    lm->row = NULL;
    return total;
}

/* ---- choosing configurable nodes ---------------------------------------- */

int sy_choose_config_nodes(sy_module *m, sy_rng *r, double frac, int64_t **ids, int64_t *nc) {
    int64_t cands = 0, first = -1;
    for (int64_t v = 0; v < m->n; v++)
        if (m->inst[v].flags & SY_CAND) cands++;
    double p = cands ? fmin(1.0, frac * (double)m->n / (double)cands) : 0.0;
    int64_t k = 0;
    for (int64_t v = 0; v < m->n; v++) {
        if (!(m->inst[v].flags & SY_CAND)) continue;
        /* the autotuner explores matmuls more often than reshapes */
        double pv = m->inst[v].op == PC_HLO_RESHAPE ? 0.6 * p : fmin(1.0, 1.4 * p);
        if (first < 0 && m->inst[v].op != PC_HLO_RESHAPE) first = v;
        if (sy_chance(r, pv)) m->inst[v].flags |= SY_CONFIG, k++;
    }
    if (k == 0 && first >= 0) m->inst[first].flags |= SY_CONFIG, k = 1;
    *ids = malloc((size_t)(k ? k : 1) * sizeof **ids);
    if (!*ids) return -1;
    int64_t j = 0;
    for (int64_t v = 0; v < m->n; v++)
        if (m->inst[v].flags & SY_CONFIG) (*ids)[j++] = v;
    *nc = k;
    return 0;
}

/* ---- configs -------------------------------------------------------------- */

/* Ranks of the tensors a configurable node exposes: output, operand 0 and,
   for convolutions only, the kernel (as in the dataset). */
int sy_layout_tensor_ranks(const sy_module *m, int64_t v, int *ranks) {
    const sy_inst *in = &m->inst[v];
    const int32_t *ops = sy_operands(m, v);
    ranks[0] = in->shape.rank;
    ranks[1] = m->inst[ops[0]].shape.rank;
    if (in->op != PC_HLO_CONVOLUTION) return 2;
    ranks[2] = m->inst[ops[1]].shape.rank;
    return 3;
}

static const sy_shape *tensor_shape(const sy_module *m, int64_t v, int t) {
    return t == 0 ? &m->inst[v].shape : &m->inst[sy_operands(m, v)[t - 1]].shape;
}

static void random_perm(sy_rng *r, int rank, uint8_t *p) {
    rank = sy_rank_bound(rank);
    for (int i = 0; i < rank; i++) p[i] = (uint8_t)i;
    for (int i = rank - 1; i > 0; i--) {
        int j = (int)sy_range(r, 0, i);
        uint8_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* 1 if a layout puts a size-1 dim in the lanes or sublanes while bigger
   dims are left outside (8x to 128x padding): a search never keeps those. */
static int wasteful(const sy_shape *s, const uint8_t *p) {
    int big = 0;
    for (int i = 0; i < s->rank; i++) big += s->d[i] > 1;
    for (int i = 0; i < 2 && i < s->rank; i++)
        if (s->d[p[i]] == 1 && big > i) return 1;
    return 0;
}

/* A random layout, redrawn while wasteful. */
static void random_layout(sy_rng *r, const sy_shape *s, uint8_t *p) {
    for (int tries = 0; tries < 8; tries++) {
        random_perm(r, s->rank, p);
        if (!wasteful(s, p)) return;
    }
}

static void write_tensor(float *f, int rank, const uint8_t *p) {
    for (int i = 0; i < SY_MAX_RANK; i++) f[i] = i < rank && p ? (float)p[i] : -1.0f;
}

/* Forward declaration: near_row_major is shared with the default search. */
static void near_row_major(sy_rng *r, const sy_shape *s, uint8_t *p);

/*
 * A random config draws each tensor's layout from the mix a random search
 * over layout space actually visits: the compiler's choice (-1), explicit
 * row-major, one move from row-major, or any permutation. Drawing the common
 * layouts often makes producer and consumer choices meet, so a config's cost
 * depends on pairs of nodes, not just on each node alone.
 */
void sy_layout_config_random(const sy_module *m, const int64_t *ids, int64_t nc, sy_rng *r,
                             float *row) {
    for (int64_t s = 0; s < nc; s++) {
        int ranks[3];
        int nt = sy_layout_tensor_ranks(m, ids[s], ranks);
        float *f = row + s * PC_TPUG_LAYOUT_FEATS;
        for (int t = 0; t < 3; t++) {
            uint8_t p[SY_MAX_RANK];
            double u = sy_unif(r);
            if (t >= nt || ranks[t] == 0 || u < 0.3) {
                write_tensor(f + t * SY_MAX_RANK, 0, NULL);
                continue;
            }
            const sy_shape *sh = tensor_shape(m, ids[s], t);
            if (u < 0.45)
                lay_row_major(ranks[t], p);
            else if (u < 0.7)
                near_row_major(r, sh, p);
            else
                random_layout(r, sh, p);
            write_tensor(f + t * SY_MAX_RANK, ranks[t], p);
        }
    }
}

/* One local move away from row-major: swap two neighbouring positions, or
   bring one dim to the minor (lane) position keeping the others' order. */
static void near_row_major(sy_rng *r, const sy_shape *s, uint8_t *p) {
    for (int tries = 0; tries < 8; tries++) {
        lay_row_major(s->rank, p);
        if (s->rank < 2) return;
        int i = (int)sy_range(r, 0, s->rank - 2);
        if (sy_chance(r, 0.5)) {
            uint8_t t = p[i];
            p[i] = p[i + 1];
            p[i + 1] = t;
        } else {
            uint8_t t = p[i + 1];
            memmove(p + 1, p, (size_t)(i + 1));
            p[0] = t;
        }
        if (!wasteful(s, p)) return;
    }
    lay_row_major(s->rank, p);
}

/* One mutation of a config row: a tensor of a node moves near row-major,
   to a random layout, or back to the compiler's choice. */
static void mutate(const sy_module *m, const int64_t *ids, int64_t nc, sy_rng *r, float *row) {
    for (int tries = 0; tries < 8; tries++) {
        int64_t s = sy_range(r, 0, nc - 1);
        int ranks[3];
        int nt = sy_layout_tensor_ranks(m, ids[s], ranks);
        int t = (int)sy_range(r, 0, nt - 1);
        if (ranks[t] < 2) continue;
        const sy_shape *sh = tensor_shape(m, ids[s], t);
        uint8_t p[SY_MAX_RANK];
        double u = sy_unif(r);
        float *f = row + s * PC_TPUG_LAYOUT_FEATS + t * SY_MAX_RANK;
        if (u < 0.2 && f[0] >= 0) {
            write_tensor(f, 0, NULL);
            return;
        }
        if (u < 0.8)
            near_row_major(r, sh, p);
        else
            random_layout(r, sh, p);
        write_tensor(f, ranks[t], p);
        return;
    }
}

/* Index of a parent for the next config: the fastest measured so far, or one
   of the faster ones; the search keeps returning to what looks fast. */
static int64_t pick_parent(const double *meas, int64_t done, sy_rng *r) {
    int64_t best = 0;
    for (int64_t i = 1; i < done; i++)
        if (meas[i] < meas[best]) best = i;
    if (sy_chance(r, 0.4)) return best;
    int64_t a = sy_range(r, 0, done - 1), b = sy_range(r, 0, done - 1);
    return meas[a] < meas[b] ? a : b; /* a tournament of two */
}

void sy_layout_search_default(const sy_module *m, const int64_t *ids, int64_t nc,
                              sy_layout_model *lm, sy_rng *r, int64_t c, double sigma, float *rows,
                              double *meas) {
    size_t row = (size_t)nc * PC_TPUG_LAYOUT_FEATS;
    sy_hset seen;
    int have_set = sy_hset_init(&seen, (size_t)c) == 0;
    for (int64_t i = 0; i < c; i++) {
        float *f = rows + i * row;
        for (int tries = 0; tries < 10; tries++) {
            if (i == 0) {
                for (size_t k = 0; k < row; k++) f[k] = -1.0f; /* the compiler's default */
            } else {
                memcpy(f, rows + pick_parent(meas, i, r) * row, row * sizeof *f);
                int64_t k = 1;
                while (k < 3 && sy_chance(r, 0.35)) k++;
                for (int64_t j = 0; j < k; j++) mutate(m, ids, nc, r, f);
            }
            if (!have_set || sy_hset_add(&seen, sy_hash_bytes(f, row * sizeof *f))) break;
        }
        meas[i] = sy_layout_cost(lm, f) * exp(sigma * sy_normal(r));
    }
    if (have_set) sy_hset_free(&seen);
}
