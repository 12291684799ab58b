/*
 * Shapes XLA infers when HLO text omits them (text_internal.h): an
 * instruction written `x = add(a, b)` or nested as an operand gets the
 * shape XLA's ShapeInference would give it. The opcodes whose shape XLA
 * infers are XLA's CanInferShape list (hlo_parser.cc); of those, these are
 * inferred here: elementwise unary and binary ops, compare (pred),
 * is-finite, real/imag/abs of complex, complex, select, clamp, tuple,
 * get-tuple-element (through tuples, parameters and loops), while, copy,
 * optimization-barrier, domain, add-dependency, reverse, sort, cholesky,
 * triangular-solve, set-dimension-size, select-and-scatter, single-operand
 * scatter, batch-norm-inference, map, after-all, partition-id, replica-id,
 * get-dimension-size, transpose, concatenate, pad, reduce, reduce-window,
 * dot, convolution, and call and conditional (the root shape of the called
 * computation, or of the first branch, defined earlier in the text, as XLA
 * requires). The rest of XLA's list (broadcast, fft, gather, batch-norm
 * training/grad, top-k, ...) is an error asking for the shape. Inferred array shapes have the default layout, except those
 * copied from an operand, which keep its layout.
 *
 * Tuple element shapes are not in the IR (pc_hlo_shape keeps only the
 * count), so get-tuple-element finds its element through the parser's side
 * information: the operand's shape text, an inferred tuple's operands, or
 * the instruction whose shape an inferred one shares.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/text_internal.h"

enum { ET_PRED = 1, ET_S32 = 4, ET_U32 = 8, ET_F32 = 11, ET_F64 = 12, ET_C64 = 15, ET_C128 = 18 };

typedef enum {
    K_NONE, K_SAME, K_REAL, K_PRED, K_BINARY, K_COMPARE, K_COMPLEX, K_OP1, K_TUPLE, K_GTE, K_TOKEN,
    K_U32, K_S32, K_SORT, K_TRANSPOSE, K_CONCAT, K_PAD, K_REDUCE, K_REDUCE_WINDOW, K_DOT, K_CONV,
    K_MAP, K_CALL, K_NOT_HERE
} kind;

static const struct {
    const char *name;
    kind k;
} rules[] = {
    {"ceil", K_SAME}, {"floor", K_SAME}, {"cos", K_SAME}, {"sin", K_SAME}, {"tan", K_SAME},
    {"exponential", K_SAME}, {"exponential-minus-one", K_SAME}, {"log", K_SAME},
    {"log-plus-one", K_SAME}, {"logistic", K_SAME}, {"negate", K_SAME}, {"not", K_SAME},
    {"sign", K_SAME}, {"sqrt", K_SAME}, {"rsqrt", K_SAME}, {"cbrt", K_SAME}, {"tanh", K_SAME},
    {"round-nearest-afz", K_SAME}, {"round-nearest-even", K_SAME}, {"copy", K_SAME},
    {"count-leading-zeros", K_SAME}, {"popcnt", K_SAME}, {"erf", K_SAME}, {"acos", K_SAME},
    {"acosh", K_SAME}, {"asin", K_SAME}, {"asinh", K_SAME}, {"atanh", K_SAME}, {"cosh", K_SAME},
    {"sinh", K_SAME}, {"reverse", K_SAME}, {"cholesky", K_SAME}, {"set-dimension-size", K_SAME},
    {"domain", K_SAME}, {"add-dependency", K_SAME}, {"opt-barrier", K_SAME}, {"while", K_SAME},
    {"select-and-scatter", K_SAME}, {"scatter", K_SAME}, {"batch-norm-inference", K_SAME},
    {"abs", K_REAL}, {"real", K_REAL}, {"imag", K_REAL}, {"is-finite", K_PRED},
    {"add", K_BINARY}, {"subtract", K_BINARY}, {"multiply", K_BINARY}, {"divide", K_BINARY},
    {"remainder", K_BINARY}, {"maximum", K_BINARY}, {"minimum", K_BINARY}, {"power", K_BINARY},
    {"atan2", K_BINARY}, {"and", K_BINARY}, {"or", K_BINARY}, {"xor", K_BINARY},
    {"shift-left", K_BINARY}, {"shift-right-arithmetic", K_BINARY},
    {"shift-right-logical", K_BINARY}, {"compare", K_COMPARE}, {"complex", K_COMPLEX},
    {"select", K_OP1}, {"clamp", K_OP1}, {"triangular-solve", K_OP1}, {"tuple", K_TUPLE},
    {"get-tuple-element", K_GTE}, {"after-all", K_TOKEN}, {"partition-id", K_U32},
    {"replica-id", K_U32}, {"get-dimension-size", K_S32}, {"sort", K_SORT},
    {"transpose", K_TRANSPOSE}, {"concatenate", K_CONCAT}, {"pad", K_PAD}, {"reduce", K_REDUCE},
    {"reduce-window", K_REDUCE_WINDOW}, {"dot", K_DOT}, {"convolution", K_CONV}, {"map", K_MAP},
    {"call", K_CALL}, {"conditional", K_CALL},
    /* XLA infers these too; perfcast asks for the shape */
    {"broadcast", K_NOT_HERE},
    {"fft", K_NOT_HERE}, {"gather", K_NOT_HERE}, {"batch-norm-training", K_NOT_HERE},
    {"batch-norm-grad", K_NOT_HERE}, {"topk", K_NOT_HERE}, {"ragged-dot", K_NOT_HERE},
    {"scaled-dot", K_NOT_HERE}, {"scan", K_NOT_HERE},
};

static kind rule_of(const char *op) {
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i].name, op) == 0) return rules[i].k;
    return K_NONE;
}

int tx_can_infer(const char *opcode) { return rule_of(opcode) != K_NONE; }

/* ---- results ----------------------------------------------------------------------- */

typedef struct ctx {
    parser *p;
    int32_t comp, i;
    pc_hlo_instruction *in;
    ixinfo *ix;
} ctx;

static int fail(ctx *c, const char *why) {
    return tx_perr(c->p, c->ix[c->i].pos, PC_ERR_FORMAT,
                   "expected a shape before '%s' in '%s': its shape cannot be inferred (%s)", c->in->opcode,
                   c->in->name, why);
}

static const pc_hlo_shape *operand(ctx *c, int32_t k) {
    const pc_hlo_computation *cp = &c->p->m->comp[c->comp];
    return &cp->inst[c->in->operand_ids.v[k]].shape;
}

static int set_array(ctx *c, int32_t et, const int64_t *dims, int32_t n, const pc_i64s *layout) {
    pc_hlo_shape *s = &c->in->shape;
    free(s->dims.v);
    free(s->minor_to_major.v);
    memset(s, 0, sizeof *s);
    s->element_type = et;
    if (n <= 0) return 0;
    s->dims.v = pc_malloc_array((uint64_t)n, sizeof(int64_t));
    s->minor_to_major.v = pc_malloc_array((uint64_t)n, sizeof(int64_t));
    if (!s->dims.v || !s->minor_to_major.v) return tx_nomem(c->p);
    memcpy(s->dims.v, dims, (size_t)n * sizeof *dims);
    s->dims.n = s->minor_to_major.n = n;
    for (int32_t j = 0; j < n; j++)
        s->minor_to_major.v[j] = layout && layout->n == n ? layout->v[j] : n - 1 - j;
    return 0;
}

/* The operand's shape, its layout too, with element type et (0: the same). */
static int copy_of(ctx *c, const pc_hlo_shape *src, int32_t et) {
    if (src->element_type == ET_TUPLE) {
        set_array(c, ET_TUPLE, NULL, 0, NULL);
        c->in->shape.tuple_count = src->tuple_count;
        return 0;
    }
    return set_array(c, et ? et : src->element_type, src->dims.v, src->dims.n, &src->minor_to_major);
}

static int need_ops(ctx *c, int32_t n) {
    if (c->in->operand_ids.n >= n) return 0;
    return fail(c, n == 1 ? "it has no operand" : "it has too few operands");
}

static int checked_dims(ctx *c, const pc_i64s *l, int32_t rank) {
    for (int32_t j = 0; j < l->n; j++)
        if (l->v[j] < 0 || l->v[j] >= rank) return fail(c, "a dimension number is out of range");
    return 0;
}

/* ---- get-tuple-element ---------------------------------------------------------------- */

/* Element k of the tuple whose text is sp: its shape in *out and its text in *el. */
static int span_element(ctx *c, struct span sp, int64_t k, pc_hlo_shape *out, struct span *el) {
    parser *p = c->p;
    size_t pos = p->pos, end = p->end;
    p->pos = sp.off;
    p->end = sp.off + sp.len;
    int rc = 0;
    if (tx_skip_ws(p) || peekc(p) != '(') {
        rc = 1;
    } else {
        p->pos++;
        for (int64_t j = 0; j < k && !rc; j++) {
            if (tx_skip_ws(p) || peekc(p) == ')' || tx_parse_shape(p, NULL, 0) || tx_skip_ws(p) || peekc(p) != ',')
                rc = 1;
            else
                p->pos++;
        }
        if (!rc && (tx_skip_ws(p) || peekc(p) == ')')) rc = 1;
        if (!rc) {
            el->off = p->pos;
            rc = tx_parse_shape(p, out, 0) ? 1 : 0;
            el->len = p->pos - el->off;
        }
    }
    p->pos = pos;
    p->end = end;
    if (rc && p->failed) return -1;
    return rc ? fail(c, "the tuple has no such element") : 0;
}

static int infer_gte(ctx *c) {
    if (need_ops(c, 1)) return -1;
    int64_t k = c->ix[c->i].tindex;
    if (k < 0) return fail(c, "get-tuple-element needs index=N");
    const pc_hlo_computation *cp = &c->p->m->comp[c->comp];
    int32_t t = (int32_t)c->in->operand_ids.v[0];
    for (int32_t guard = 0; guard <= cp->n_inst; guard++) {
        const ixinfo *x = &c->ix[t];
        if (x->shape.len) {
            pc_hlo_shape s;
            memset(&s, 0, sizeof s);
            struct span el;
            if (span_element(c, x->shape, k, &s, &el)) return -1;
            free(c->in->shape.dims.v);
            free(c->in->shape.minor_to_major.v);
            c->in->shape = s;
            c->ix[c->i].shape = el;
            return 0;
        }
        if (x->tup) {
            if (k >= cp->inst[t].operand_ids.n) return fail(c, "the tuple has no such element");
            int32_t e = (int32_t)cp->inst[t].operand_ids.v[k];
            c->ix[c->i].same = e;
            return copy_of(c, &cp->inst[e].shape, 0);
        }
        if (x->same < 0) break;
        t = x->same;
    }
    return fail(c, "the operand's tuple elements are not known");
}

/* ---- shapes computed from attributes ---------------------------------------------------- */

static int64_t window_out(int64_t d, const pc_hlo_window *w, int32_t j) {
    if (d < 0) return INT64_MIN;
    int64_t base = d > 0 ? (d - 1) * w->base_dilation[j] + 1 : 0;
    int64_t padded = base + w->padding_low[j] + w->padding_high[j];
    int64_t win = (w->size[j] - 1) * w->window_dilation[j] + 1;
    if (w->stride[j] <= 0 || padded < win) return 0;
    return (padded - win) / w->stride[j] + 1;
}

static int small_window(const pc_hlo_window *w) {
    for (int32_t j = 0; j < w->n; j++)
        if (w->size[j] < 0 || w->size[j] > (1 << 30) || w->base_dilation[j] < 0 || w->base_dilation[j] > (1 << 30) ||
            w->window_dilation[j] < 0 || w->window_dilation[j] > (1 << 30) || w->padding_low[j] < -(1LL << 40) ||
            w->padding_low[j] > (1LL << 40) || w->padding_high[j] < -(1LL << 40) || w->padding_high[j] > (1LL << 40))
            return 0;
    return 1;
}

static int small_dims(const pc_hlo_shape *s) {
    for (int32_t j = 0; j < s->dims.n; j++)
        if (s->dims.v[j] > (1LL << 40)) return 0;
    return 1;
}

static int infer_transpose(ctx *c, const pc_hlo_shape *a) {
    const pc_i64s *d = &c->in->dimensions;
    if (d->n != a->dims.n) return fail(c, "dimensions={...} must list every dimension");
    if (checked_dims(c, d, a->dims.n)) return -1;
    int64_t *o = pc_malloc_array((uint64_t)(d->n ? d->n : 1), sizeof *o);
    if (!o) return tx_nomem(c->p);
    for (int32_t j = 0; j < d->n; j++) o[j] = a->dims.v[d->v[j]];
    int rc = set_array(c, a->element_type, o, d->n, NULL);
    free(o);
    return rc;
}

static int infer_concat(ctx *c, const pc_hlo_shape *a) {
    const pc_i64s *d = &c->in->dimensions;
    if (d->n != 1 || checked_dims(c, d, a->dims.n)) return d->n != 1 ? fail(c, "dimensions={d} is missing") : -1;
    int64_t *o = pc_malloc_array((uint64_t)a->dims.n, sizeof *o);
    if (!o) return tx_nomem(c->p);
    memcpy(o, a->dims.v, (size_t)a->dims.n * sizeof *o);
    int64_t cd = d->v[0];
    for (int32_t k = 1; k < c->in->operand_ids.n; k++) {
        const pc_hlo_shape *b = operand(c, k);
        if (b->dims.n != a->dims.n) {
            free(o);
            return fail(c, "its operands have different ranks");
        }
        if (o[cd] < 0 || b->dims.v[cd] < 0) o[cd] = INT64_MIN;
        else if (__builtin_add_overflow(o[cd], b->dims.v[cd], &o[cd])) o[cd] = INT64_MAX;
    }
    int rc = set_array(c, a->element_type, o, a->dims.n, NULL);
    free(o);
    return rc;
}

static int infer_pad(ctx *c, const pc_hlo_shape *a) {
    const pc_hlo_instruction *in = c->in;
    if (pc_hlo_x(in)->pad_low.n != a->dims.n || !small_dims(a)) return fail(c, "padding= must have one entry per dimension");
    int64_t *o = pc_malloc_array((uint64_t)(a->dims.n ? a->dims.n : 1), sizeof *o);
    if (!o) return tx_nomem(c->p);
    for (int32_t j = 0; j < a->dims.n; j++) {
        int64_t d = a->dims.v[j], it = pc_hlo_x(in)->pad_interior.v[j], lo = pc_hlo_x(in)->pad_low.v[j], hi = pc_hlo_x(in)->pad_high.v[j];
        if (it < 0 || it > (1LL << 20) || lo < -(1LL << 40) || lo > (1LL << 40) || hi < -(1LL << 40) ||
            hi > (1LL << 40)) {
            free(o);
            return fail(c, "a padding is out of range");
        }
        o[j] = d < 0 ? INT64_MIN : d + lo + hi + (d > 0 ? (d - 1) * it : 0);
    }
    int rc = set_array(c, a->element_type, o, a->dims.n, NULL);
    free(o);
    return rc;
}

/* reduce: dims without dimensions={...}; reduce-window: windowed dims. Type of the init value(s). */
static int infer_reduce(ctx *c, int windowed) {
    int32_t n = c->in->operand_ids.n;
    if (n < 2 || n % 2) return fail(c, "it needs inputs and as many init values");
    const pc_hlo_shape *a = operand(c, 0);
    const pc_hlo_window *w = &pc_hlo_x(c->in)->window;
    if (windowed && (w->n != a->dims.n || !small_window(w) || !small_dims(a))) return fail(c, "window= must cover every dimension");
    if (!windowed && checked_dims(c, &c->in->dimensions, a->dims.n)) return -1;
    int64_t *o = pc_malloc_array((uint64_t)(a->dims.n ? a->dims.n : 1), sizeof *o);
    if (!o) return tx_nomem(c->p);
    int32_t r = 0;
    for (int32_t j = 0; j < a->dims.n; j++) {
        int drop = 0;
        for (int32_t q = 0; !windowed && q < c->in->dimensions.n; q++) drop |= c->in->dimensions.v[q] == j;
        if (!drop) o[r++] = windowed ? window_out(a->dims.v[j], w, j) : a->dims.v[j];
    }
    int rc = 0;
    if (n / 2 > 1) { /* several outputs: a tuple (element shapes not kept) */
        rc = set_array(c, ET_TUPLE, NULL, 0, NULL);
        c->in->shape.tuple_count = n / 2;
    } else {
        rc = set_array(c, operand(c, n / 2)->element_type, o, r, NULL);
    }
    free(o);
    return rc;
}

static int in_list(const pc_i64s *l, int64_t v) {
    for (int32_t j = 0; j < l->n; j++)
        if (l->v[j] == v) return 1;
    return 0;
}

static int infer_dot(ctx *c) {
    if (need_ops(c, 2)) return -1;
    const pc_hlo_shape *a = operand(c, 0), *b = operand(c, 1);
    const pc_hlo_dot_dims *d = &pc_hlo_x(c->in)->dot;
    if (checked_dims(c, &d->lhs_batch, a->dims.n) || checked_dims(c, &d->lhs_contracting, a->dims.n) ||
        checked_dims(c, &d->rhs_batch, b->dims.n) || checked_dims(c, &d->rhs_contracting, b->dims.n))
        return -1;
    if (d->lhs_batch.n > a->dims.n) return fail(c, "lhs_batch_dims lists too many dimensions");
    int64_t *o = pc_malloc_array(2 * (uint64_t)a->dims.n + (uint64_t)b->dims.n + 1, sizeof *o);
    if (!o) return tx_nomem(c->p);
    int32_t r = 0;
    for (int32_t j = 0; j < d->lhs_batch.n; j++) o[r++] = a->dims.v[d->lhs_batch.v[j]];
    for (int32_t j = 0; j < a->dims.n; j++)
        if (!in_list(&d->lhs_batch, j) && !in_list(&d->lhs_contracting, j)) o[r++] = a->dims.v[j];
    for (int32_t j = 0; j < b->dims.n; j++)
        if (!in_list(&d->rhs_batch, j) && !in_list(&d->rhs_contracting, j)) o[r++] = b->dims.v[j];
    int rc = set_array(c, a->element_type, o, r, NULL);
    free(o);
    return rc;
}

static int infer_conv(ctx *c) {
    if (need_ops(c, 2)) return -1;
    const pc_hlo_shape *a = operand(c, 0), *b = operand(c, 1);
    const pc_hlo_conv_dims *d = &pc_hlo_x(c->in)->conv;
    const pc_hlo_window *w = &pc_hlo_x(c->in)->window;
    int32_t rank = a->dims.n, ns = d->input_spatial.n;
    if (!d->present || w->n != ns || rank != ns + 2 || b->dims.n != ns + 2 || !small_window(w) || !small_dims(a))
        return fail(c, "dim_labels= and window= must match the operands");
    for (int32_t j = 0; j < ns; j++)
        if (d->output_spatial.v[j] >= rank || d->input_spatial.v[j] >= rank) return fail(c, "dim_labels= is out of range");
    if (d->output_batch >= rank || d->output_feature >= rank || d->input_batch >= rank ||
        d->kernel_output_feature >= b->dims.n)
        return fail(c, "dim_labels= is out of range");
    int64_t *o = pc_calloc_array((uint64_t)rank, sizeof *o);
    if (!o) return tx_nomem(c->p);
    int64_t bg = c->in->batch_group_count > 0 ? c->in->batch_group_count : 1;
    int64_t bd = a->dims.v[d->input_batch];
    o[d->output_batch] = bd < 0 ? INT64_MIN : bd / bg;
    o[d->output_feature] = b->dims.v[d->kernel_output_feature];
    for (int32_t j = 0; j < ns; j++) o[d->output_spatial.v[j]] = window_out(a->dims.v[d->input_spatial.v[j]], w, j);
    int rc = set_array(c, a->element_type, o, rank, NULL);
    free(o);
    return rc;
}

/* ---- call, conditional: the called computation's root -------------------------------- */

/* The computation a call takes its shape from: to_apply= / calls= of a call, the first
 * of true_computation= / branch_computations= of a conditional; -1 when it is not (yet)
 * parsed (XLA too wants a computation defined before it is called). */
static int32_t callee_of(const ctx *c) {
    const parser *p = c->p;
    const cref *best = NULL;
    for (size_t k = 0; k < p->ncref; k++) { /* the instruction's calls, first of the lowest role */
        const cref *r = &p->crefs[k];
        if (r->comp == c->comp && r->inst == c->i && (!best || r->prio < best->prio)) best = r;
    }
    if (!best) return -1;
    if (best->direct >= 0) return best->direct;
    const pc_hlo_module *m = p->m;
    for (int32_t k = 0; k < m->n_comp; k++)
        if (k != c->comp && p->ci[k].root >= 0 && m->comp[k].name && strlen(m->comp[k].name) == best->len &&
            memcmp(m->comp[k].name, p->buf + best->off, best->len) == 0)
            return k;
    return -1;
}

static int infer_call(ctx *c) {
    int32_t k = callee_of(c);
    if (k < 0) return fail(c, "the called computation must be defined before it");
    parser *p = c->p;
    const ixinfo *rx = &p->ci[k].ix[p->ci[k].root];
    const pc_hlo_shape *rs = &p->m->comp[k].inst[p->ci[k].root].shape;
    if (!rx->shape.len) return copy_of(c, rs, 0); /* an inferred root: its shape as kept */
    /* the root's written shape, parsed again: tuple elements too (get-tuple-element reads them) */
    size_t pos = p->pos, end = p->end;
    p->pos = rx->shape.off;
    p->end = rx->shape.off + rx->shape.len;
    pc_hlo_shape s;
    memset(&s, 0, sizeof s);
    int rc = tx_parse_shape(p, &s, 0);
    p->pos = pos;
    p->end = end;
    if (rc) {
        pc_hlo_shape_clear(&s);
        return -1;
    }
    pc_hlo_shape_clear(&c->in->shape);
    c->in->shape = s;
    c->ix[c->i].shape = rx->shape;
    return 0;
}

static int tuple_of_operands(ctx *c) {
    set_array(c, ET_TUPLE, NULL, 0, NULL);
    c->in->shape.tuple_count = c->in->operand_ids.n;
    c->ix[c->i].tup = 1;
    return 0;
}

static int infer_one(ctx *c) {
    kind k = rule_of(c->in->opcode);
    int32_t nops = c->in->operand_ids.n;
    switch (k) {
    case K_SAME:
    case K_MAP:
        if (need_ops(c, 1)) return -1;
        c->ix[c->i].same = k == K_SAME ? (int32_t)c->in->operand_ids.v[0] : -1;
        return copy_of(c, operand(c, 0), 0);
    case K_REAL: {
        if (need_ops(c, 1)) return -1;
        int32_t et = operand(c, 0)->element_type;
        return copy_of(c, operand(c, 0), et == ET_C64 ? ET_F32 : et == ET_C128 ? ET_F64 : et);
    }
    case K_PRED:
    case K_COMPARE:
        return need_ops(c, 1) ? -1 : copy_of(c, operand(c, 0), ET_PRED);
    case K_BINARY:
        if (need_ops(c, 2)) return -1;
        return copy_of(c, operand(c, operand(c, 0)->dims.n == 0 && operand(c, 1)->dims.n > 0), 0);
    case K_COMPLEX: {
        if (need_ops(c, 2)) return -1;
        int32_t et = operand(c, 0)->element_type;
        return copy_of(c, operand(c, 0), et == ET_F64 ? ET_C128 : ET_C64);
    }
    case K_OP1:
        return need_ops(c, 2) ? -1 : copy_of(c, operand(c, 1), 0);
    case K_SORT: /* several operands sort to a tuple of them */
        if (need_ops(c, 1)) return -1;
        return nops == 1 ? copy_of(c, operand(c, 0), 0) : tuple_of_operands(c);
    case K_TUPLE: return tuple_of_operands(c);
    case K_GTE: return infer_gte(c);
    case K_TOKEN: return set_array(c, ET_TOKEN, NULL, 0, NULL);
    case K_U32: return set_array(c, ET_U32, NULL, 0, NULL);
    case K_S32: return set_array(c, ET_S32, NULL, 0, NULL);
    case K_TRANSPOSE: return need_ops(c, 1) ? -1 : infer_transpose(c, operand(c, 0));
    case K_CONCAT: return need_ops(c, 1) ? -1 : infer_concat(c, operand(c, 0));
    case K_PAD: return need_ops(c, 1) ? -1 : infer_pad(c, operand(c, 0));
    case K_REDUCE: return infer_reduce(c, 0);
    case K_REDUCE_WINDOW: return infer_reduce(c, 1);
    case K_DOT: return infer_dot(c);
    case K_CONV: return infer_conv(c);
    case K_CALL: return infer_call(c);
    case K_NOT_HERE:
    case K_NONE: break;
    }
    return fail(c, "perfcast infers elementwise ops, compare, select, tuple, get-tuple-element, while, transpose, "
                   "concatenate, pad, reduce, reduce-window, dot, convolution, call and conditional; write this one's "
                   "shape");
}

int tx_infer_shapes(parser *p, int32_t comp) {
    pc_hlo_computation *cp = &p->m->comp[comp];
    ixinfo *ix = p->ci[comp].ix;
    int32_t n = cp->n_inst;
    uint8_t *seen = pc_calloc_array((uint64_t)n, 1);
    int32_t *stack = pc_malloc_array((uint64_t)n, sizeof *stack);
    int32_t *next = pc_calloc_array((uint64_t)n, sizeof *next);
    int rc = 0;
    if (!seen || !stack || !next) rc = tx_nomem(p);
    for (int32_t s = 0; s < n && !rc; s++) {
        if (!ix[s].pend || seen[s]) continue;
        int32_t top = 0;
        stack[top++] = s;
        seen[s] = 1;
        while (top && !rc) { /* operands first (the computation has no operand cycle) */
            int32_t v = stack[top - 1];
            const pc_i64s *ops = &cp->inst[v].operand_ids;
            if (next[v] < ops->n) {
                int32_t w = (int32_t)ops->v[next[v]++];
                if (ix[w].pend && !seen[w]) {
                    seen[w] = 1;
                    stack[top++] = w;
                }
                continue;
            }
            ctx c = {p, comp, v, &cp->inst[v], ix};
            rc = infer_one(&c);
            ix[v].pend = 0;
            top--;
        }
    }
    free(seen);
    free(stack);
    free(next);
    return rc;
}
