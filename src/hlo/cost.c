/*
 * FLOPs and bytes of the instructions of an HLO module (perfcast/hlo_cost.h;
 * the rules are listed in docs/analytic.md, "Roofline of an HLO module").
 *
 * Instructions and computations are found by id through sorted index
 * arrays; a computation's summed cost is memoized (and a call cycle is an
 * error), so shared or nested callees cost linear time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/hlo_ir.h"
#include "hlo/proto.h"
#include "hlo/text.h"
#include "perfcast/hlo_cost.h"
#include "tpugraphs/opcode.h"

#define MAX_DEPTH 256 /* nesting of calls and of tuple values */

static const struct {
    const char *name;
    double bytes;
} type_info[] = {
    {"?", 0},       {"pred", 1},    {"s8", 1},       {"s16", 2},       {"s32", 4},
    {"s64", 8},     {"u8", 1},      {"u16", 2},      {"u32", 4},       {"u64", 8},
    {"f16", 2},     {"f32", 4},     {"f64", 8},      {"tuple", 0},     {"opaque", 0},
    {"c64", 8},     {"bf16", 2},    {"token", 0},    {"c128", 16},     {"f8e5m2", 1},
    {"f8e4m3fn", 1}, {"s4", 0.5},   {"u4", 0.5},     {"f8e4m3b11fnuz", 1}, {"f8e5m2fnuz", 1},
    {"f8e4m3fnuz", 1}, {"s2", 0.25}, {"u2", 0.25},   {"f8e4m3", 1},    {"f8e3m4", 1},
    {"s1", 0.125},  {"u1", 0.125},  {"f4e2m1fn", 0.5}, {"f8e8m0fnu", 1},
};
#define N_TYPES ((int32_t)(sizeof type_info / sizeof type_info[0]))

const char *pc_hlo_type_name(int32_t type) {
    return type > 0 && type < N_TYPES ? type_info[type].name : "?";
}

double pc_hlo_type_bytes(int32_t type) {
    return type > 0 && type < N_TYPES ? type_info[type].bytes : 0;
}

pc_hlo_cost_opts pc_hlo_cost_opts_default(void) {
    pc_hlo_cost_opts o = {
        .struct_size = sizeof(pc_hlo_cost_opts), .module = -1, .while_trips = 1, .keep_free = 0};
    return o;
}

/* ---- lookups ------------------------------------------------------------------ */

typedef struct loc {
    int64_t id;
    int32_t comp, idx;
} loc;

/* A cost being summed: one instruction or a whole computation. */
typedef struct unit {
    double flops, trans, rd, wr;
    int32_t mxu_type; /* lhs type of the first dot/convolution; 0 = none */
} unit;

typedef struct cctx {
    const pc_hlo_module *m;
    loc *inst, *comp; /* sorted by id */
    int64_t n_inst;
    unit *memo;       /* per computation (module order) */
    double *vbytes;   /* per entry of inst: a tuple value's bytes; < 0 = not yet known */
    uint8_t *state;   /* 0 new, 1 summing, 2 done */
    double trips;
    pc_hlo_cost *rep;
    pc_error *err;
    int failed;
} cctx;

static int loc_cmp(const void *a, const void *b) {
    const loc *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static const loc *loc_find(const loc *v, int64_t n, int64_t id) {
    loc key = {.id = id};
    return n ? bsearch(&key, v, (size_t)n, sizeof *v, loc_cmp) : NULL;
}

static const pc_hlo_instruction *inst_by_id(const cctx *cx, int64_t id) {
    const loc *l = loc_find(cx->inst, cx->n_inst, id);
    return l ? &cx->m->comp[l->comp].inst[l->idx] : NULL;
}

static int32_t comp_by_id(const cctx *cx, int64_t id) {
    const loc *l = loc_find(cx->comp, cx->m->n_comp, id);
    return l ? l->comp : -1;
}

static int fail(cctx *cx, pc_status code, const char *what, const pc_hlo_instruction *in) {
    char b[PC_HLO_NAME_BUF];
    char c[PC_HLO_NAME_BUF];
    if (!cx->failed && in)
        pc_fail(cx->err, code, "module %s: instruction '%s': %s", pc_hlo_printable(cx->m->name, b),
                pc_hlo_printable(in->name, c), what);
    else if (!cx->failed)
        pc_fail(cx->err, code, "module %s: %s", pc_hlo_printable(cx->m->name, b), what);
    cx->failed = 1;
    return -1;
}

static pc_status index_module(cctx *cx) {
    const pc_hlo_module *m = cx->m;
    int64_t n = 0;
    for (int32_t c = 0; c < m->n_comp; c++) n += m->comp[c].n_inst;
    cx->inst = pc_malloc_array((uint64_t)n + 1, sizeof *cx->inst);
    cx->comp = pc_malloc_array((uint64_t)m->n_comp + 1, sizeof *cx->comp);
    cx->memo = pc_calloc_array((uint64_t)m->n_comp + 1, sizeof *cx->memo);
    cx->state = pc_calloc_array((uint64_t)m->n_comp + 1, 1);
    cx->vbytes = pc_malloc_array((uint64_t)n + 1, sizeof *cx->vbytes);
    if (!cx->inst || !cx->comp || !cx->memo || !cx->state || !cx->vbytes)
        return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
    for (int32_t c = 0; c < m->n_comp; c++) {
        cx->comp[c] = (loc){m->comp[c].id, c, 0};
        for (int32_t i = 0; i < m->comp[c].n_inst; i++)
            cx->inst[cx->n_inst++] = (loc){m->comp[c].inst[i].id, c, i};
    }
    for (int64_t i = 0; i < n; i++) cx->vbytes[i] = -1;
    qsort(cx->inst, (size_t)cx->n_inst, sizeof *cx->inst, loc_cmp);
    qsort(cx->comp, (size_t)m->n_comp, sizeof *cx->comp, loc_cmp);
    return PC_OK;
}

static void cctx_free(cctx *cx) {
    free(cx->inst);
    free(cx->comp);
    free(cx->memo);
    free(cx->state);
    free(cx->vbytes);
}

/* ---- sizes ---------------------------------------------------------------------- */

static int is_tuple(const pc_hlo_shape *s) { return s->element_type == PC_HLO_TYPE_TUPLE; }

/* Elements of an array shape (dynamic `<=N` dims count N; unbounded ones 0). A zero dim
 * gives 0 even when the other dims' product overflows (inf * 0 would be NaN). */
static double elems(const pc_hlo_shape *s) {
    double e = 1;
    for (int32_t i = 0; i < s->dims.n; i++) {
        if (s->dims.v[i] <= 0) return 0;
        e *= (double)s->dims.v[i];
    }
    return e;
}

static double dim(const pc_hlo_shape *s, int64_t d) {
    return d >= 0 && d < s->dims.n && s->dims.v[d] > 0 ? (double)s->dims.v[d] : 0;
}

/* Elements of a window; a non-positive size (malformed) counts 0, as a dim does, so FLOPs
 * never go negative. */
static double window_elems(const pc_hlo_window *w) {
    double e = 1;
    for (int32_t i = 0; i < w->n; i++) {
        if (w->size[i] <= 0) return 0;
        e *= (double)w->size[i];
    }
    return e;
}

static const pc_hlo_instruction *operand(const cctx *cx, const pc_hlo_instruction *in, int32_t k) {
    return k < in->operand_ids.n ? inst_by_id(cx, in->operand_ids.v[k]) : NULL;
}

static double value_bytes(cctx *cx, const pc_hlo_instruction *in, int depth);

static double operands_bytes_from(cctx *cx, const pc_hlo_instruction *in, int32_t from, int depth) {
    double b = 0;
    for (int32_t k = from; k < in->operand_ids.n; k++) {
        const pc_hlo_instruction *o = operand(cx, in, k);
        if (o) b += value_bytes(cx, o, depth + 1);
    }
    return b;
}

static const pc_hlo_instruction *called_root(const cctx *cx, const pc_hlo_instruction *in,
                                             int32_t k) {
    if (k >= in->called_computation_ids.n) return NULL;
    int32_t c = comp_by_id(cx, in->called_computation_ids.v[k]);
    return c < 0 ? NULL : inst_by_id(cx, cx->m->comp[c].root_id);
}

/* Bytes of a tuple-shaped value, from what makes it (the IR keeps no tuple element shapes). */
static double tuple_bytes(cctx *cx, const pc_hlo_instruction *in, int depth) {
    const pc_hlo_instruction *r = NULL;
    switch (in->opcode_id) {
    case PC_HLO_TUPLE:
    case PC_HLO_SORT:
    case PC_HLO_ALL_REDUCE:
    case PC_HLO_ALL_TO_ALL:
    case PC_HLO_OPT_BARRIER: return operands_bytes_from(cx, in, 0, depth);
    case PC_HLO_WHILE: r = operand(cx, in, 0); break;
    case PC_HLO_FUSION:
    case PC_HLO_CALL: r = called_root(cx, in, 0); break;
    case PC_HLO_CONDITIONAL: r = called_root(cx, in, 0); break;
    default: break;
    }
    if (r) return value_bytes(cx, r, depth + 1);
    cx->rep->unsized++;
    return 0;
}

/* Tuple sizes are memoized: a tuple may use one operand many times, at every level. */
static double value_bytes(cctx *cx, const pc_hlo_instruction *in, int depth) {
    if (!is_tuple(&in->shape)) { /* sizes stay in [0, inf]: a NaN would defeat the memo */
        double tb = pc_hlo_type_bytes(in->shape.element_type);
        return tb > 0 ? elems(&in->shape) * tb : 0;
    }
    const loc *l = loc_find(cx->inst, cx->n_inst, in->id);
    double *memo = l ? &cx->vbytes[l - cx->inst] : NULL;
    if (memo && *memo >= 0) return *memo;
    double b = 0;
    if (depth > MAX_DEPTH)
        cx->rep->unsized++;
    else
        b = tuple_bytes(cx, in, depth);
    if (memo) *memo = b;
    return b;
}

/* ---- FLOP rules ----------------------------------------------------------------- */

static int is_transcendental(const pc_hlo_instruction *in) {
    switch (in->opcode_id) {
    case PC_HLO_EXPONENTIAL:
    case PC_HLO_EXPONENTIAL_MINUS_ONE:
    case PC_HLO_LOG:
    case PC_HLO_LOG_PLUS_ONE:
    case PC_HLO_LOGISTIC:
    case PC_HLO_TANH:
    case PC_HLO_TAN:
    case PC_HLO_SINE:
    case PC_HLO_COSINE:
    case PC_HLO_SQRT:
    case PC_HLO_RSQRT:
    case PC_HLO_CBRT:
    case PC_HLO_POWER:
    case PC_HLO_ATAN2: return 1;
    default: return in->opcode_id == PC_HLO_UNKNOWN && strcmp(in->opcode, "erf") == 0;
    }
}

static int is_elementwise(const pc_hlo_instruction *in) {
    static const int ids[] = {
        PC_HLO_ABS, PC_HLO_ADD, PC_HLO_AND, PC_HLO_CEIL, PC_HLO_CLAMP, PC_HLO_COMPARE,
        PC_HLO_COMPLEX, PC_HLO_CONVERT, PC_HLO_COUNT_LEADING_ZEROS, PC_HLO_DIVIDE,
        PC_HLO_FLOOR, PC_HLO_IMAG, PC_HLO_IS_FINITE, PC_HLO_MAP, PC_HLO_MAXIMUM, PC_HLO_MINIMUM,
        PC_HLO_MULTIPLY, PC_HLO_NEGATE, PC_HLO_NOT, PC_HLO_OR, PC_HLO_POPCNT, PC_HLO_REAL,
        PC_HLO_REDUCE_PRECISION, PC_HLO_REMAINDER, PC_HLO_ROUND_NEAREST_AFZ,
        PC_HLO_ROUND_NEAREST_EVEN, PC_HLO_SELECT, PC_HLO_SHIFT_LEFT,
        PC_HLO_SHIFT_RIGHT_ARITHMETIC, PC_HLO_SHIFT_RIGHT_LOGICAL, PC_HLO_SIGN,
        PC_HLO_STOCHASTIC_CONVERT, PC_HLO_SUBTRACT, PC_HLO_XOR, PC_HLO_BITCAST_CONVERT};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (in->opcode_id == ids[i]) return 1;
    return is_transcendental(in);
}

/* 2 * result elements * product of the lhs's contracting dims. */
static double dot_flops(cctx *cx, const pc_hlo_instruction *in) {
    const pc_hlo_instruction *lhs = operand(cx, in, 0);
    if (!lhs || is_tuple(&lhs->shape)) return fail(cx, PC_ERR_FORMAT, "dot needs an array lhs", in);
    double k = 1;
    if (!in->dot.present) {
        cx->rep->dots_guessed++;
        k = lhs->shape.dims.n ? dim(&lhs->shape, lhs->shape.dims.n - 1) : 1;
    }
    for (int32_t i = 0; in->dot.present && i < in->dot.lhs_contracting.n; i++) {
        int64_t d = in->dot.lhs_contracting.v[i];
        if (d < 0 || d >= lhs->shape.dims.n)
            return fail(cx, PC_ERR_FORMAT, "lhs_contracting_dims out of the lhs's rank", in);
        k *= dim(&lhs->shape, d);
    }
    return 2 * elems(&in->shape) * k;
}

/* 2 * output elements * kernel spatial elements * kernel input features (= input
 * features / feature_group_count). */
static double conv_flops(cctx *cx, const pc_hlo_instruction *in) {
    const pc_hlo_instruction *lhs = operand(cx, in, 0), *rhs = operand(cx, in, 1);
    if (!lhs || !rhs) return fail(cx, PC_ERR_FORMAT, "convolution needs two operands", in);
    double per_out = 1;
    if (in->conv.present) {
        per_out = dim(&rhs->shape, in->conv.kernel_input_feature);
        for (int32_t i = 0; i < in->conv.kernel_spatial.n; i++)
            per_out *= dim(&rhs->shape, in->conv.kernel_spatial.v[i]);
    } else { /* no dimension numbers: window sizes x lhs's last dim / groups */
        per_out = window_elems(&in->window);
        double g = in->feature_group_count > 0 ? (double)in->feature_group_count : 1;
        per_out *= lhs->shape.dims.n ? dim(&lhs->shape, lhs->shape.dims.n - 1) / g : 1;
    }
    return 2 * elems(&in->shape) * per_out;
}

/* Elements of the reduced inputs (the first half of the operands; the rest are inits). */
static double reduce_flops(cctx *cx, const pc_hlo_instruction *in) {
    double f = 0;
    for (int32_t k = 0; k < in->operand_ids.n / 2; k++) {
        const pc_hlo_instruction *o = operand(cx, in, k);
        if (o && !is_tuple(&o->shape)) f += elems(&o->shape);
    }
    return f;
}

static double reduce_window_flops(const pc_hlo_instruction *in) {
    double w = window_elems(&in->window);
    double outs = is_tuple(&in->shape) ? 0 : elems(&in->shape);
    return outs * w * (in->operand_ids.n > 2 ? in->operand_ids.n / 2 : 1);
}

/* ---- bytes rules ---------------------------------------------------------------- */

static int row_major(const pc_hlo_shape *s) {
    for (int32_t i = 0; i < s->minor_to_major.n; i++)
        if (s->minor_to_major.v[i] != s->minor_to_major.n - 1 - i) return 0;
    return 1;
}

/* Instructions that move no data and compute nothing. */
static int is_free(cctx *cx, const pc_hlo_instruction *in) {
    switch (in->opcode_id) {
    case PC_HLO_PARAMETER:
    case PC_HLO_CONSTANT:
    case PC_HLO_TUPLE:
    case PC_HLO_GET_TUPLE_ELEMENT:
    case PC_HLO_BITCAST:
    case PC_HLO_AFTER_ALL:
    case PC_HLO_ADD_DEPENDENCY:
    case PC_HLO_DOMAIN:
    case PC_HLO_PARTITION_ID:
    case PC_HLO_REPLICA_ID:
    case PC_HLO_OPT_BARRIER:
    case PC_HLO_GET_DIMENSION_SIZE: return 1;
    case PC_HLO_RESHAPE: {
        const pc_hlo_instruction *o = operand(cx, in, 0);
        return o && row_major(&o->shape) && row_major(&in->shape);
    }
    default: return 0;
    }
}

static void set_io(unit *u, double rd, double wr) {
    u->rd = rd;
    u->wr = wr;
}

/* Slices read only what they keep; in-place updates touch only the update. */
static int partial_access(cctx *cx, const pc_hlo_instruction *in, unit *u) {
    double out = value_bytes(cx, in, 0);
    switch (in->opcode_id) {
    case PC_HLO_SLICE: set_io(u, out, out); return 1;
    case PC_HLO_DYNAMIC_SLICE:
    case PC_HLO_GATHER: set_io(u, out + operands_bytes_from(cx, in, 1, 0), out); return 1;
    case PC_HLO_DYNAMIC_UPDATE_SLICE: {
        const pc_hlo_instruction *upd = operand(cx, in, 1);
        double ub = upd ? value_bytes(cx, upd, 0) : 0;
        set_io(u, operands_bytes_from(cx, in, 1, 0), ub);
        return 1;
    }
    case PC_HLO_SCATTER: { /* N inputs, indices, N updates: read updates + the region + indices */
        int32_t n = (in->operand_ids.n - 1) / 2;
        double upd = operands_bytes_from(cx, in, n + 1, 0);
        set_io(u, operands_bytes_from(cx, in, n, 0) + upd, upd);
        return 1;
    }
    default: return 0;
    }
}

/* ---- costing -------------------------------------------------------------------- */

static void unit_add(unit *a, const unit *b, double times) {
    a->flops += times * b->flops;
    a->trans += times * b->trans;
    a->rd += times * b->rd;
    a->wr += times * b->wr;
    if (!a->mxu_type) a->mxu_type = b->mxu_type;
}

static int comp_unit(cctx *cx, int64_t comp_id, int depth, unit *out);

/* The sum over called computation k (0 if absent). */
static int called_unit(cctx *cx, const pc_hlo_instruction *in, int32_t k, int depth, unit *out) {
    memset(out, 0, sizeof *out);
    if (k >= in->called_computation_ids.n) return 0;
    return comp_unit(cx, in->called_computation_ids.v[k], depth + 1, out);
}

static int while_unit(cctx *cx, const pc_hlo_instruction *in, int depth, unit *u) {
    unit c;
    cx->rep->while_loops++;
    for (int32_t k = 0; k < in->called_computation_ids.n; k++) {
        if (called_unit(cx, in, k, depth, &c)) return -1;
        unit_add(u, &c, cx->trips);
    }
    return 0;
}

/* The costliest branch (by FLOPs, then bytes), plus reading the predicate. */
static int conditional_unit(cctx *cx, const pc_hlo_instruction *in, int depth, unit *u) {
    unit best = {0}, c;
    for (int32_t k = 0; k < in->called_computation_ids.n; k++) {
        if (called_unit(cx, in, k, depth, &c)) return -1;
        if (c.flops > best.flops || (c.flops == best.flops && c.rd + c.wr > best.rd + best.wr))
            best = c;
    }
    const pc_hlo_instruction *p = operand(cx, in, 0);
    unit_add(u, &best, 1);
    u->rd += p ? value_bytes(cx, p, 0) : 0;
    return 0;
}

/* A fusion: the fused computation's FLOPs, the boundary's bytes. */
static int fusion_unit(cctx *cx, const pc_hlo_instruction *in, int depth, unit *u) {
    unit c;
    if (called_unit(cx, in, 0, depth, &c)) return -1;
    u->flops = c.flops;
    u->trans = c.trans;
    u->mxu_type = c.mxu_type;
    set_io(u, operands_bytes_from(cx, in, 0, 0), value_bytes(cx, in, 0));
    return 0;
}

static int32_t lhs_type(cctx *cx, const pc_hlo_instruction *in) {
    const pc_hlo_instruction *lhs = operand(cx, in, 0);
    return lhs && !is_tuple(&lhs->shape) ? lhs->shape.element_type : in->shape.element_type;
}

static double compute_flops(cctx *cx, const pc_hlo_instruction *in, unit *u) {
    switch (in->opcode_id) {
    case PC_HLO_DOT: u->mxu_type = lhs_type(cx, in); return dot_flops(cx, in);
    case PC_HLO_CONVOLUTION: u->mxu_type = lhs_type(cx, in); return conv_flops(cx, in);
    case PC_HLO_REDUCE: return reduce_flops(cx, in);
    case PC_HLO_REDUCE_WINDOW: return reduce_window_flops(in);
    default: break;
    }
    if (!is_elementwise(in)) return 0;
    double e = is_tuple(&in->shape) ? 0 : elems(&in->shape);
    if (is_transcendental(in)) u->trans = e;
    return e;
}

/* Opcodes handled by the rules above or as pure data movement. */
static int has_rule(const pc_hlo_instruction *in) {
    return in->opcode_id != PC_HLO_UNKNOWN && in->opcode_id != PC_HLO_CUSTOM_CALL;
}

static int inst_unit_raw(cctx *cx, const pc_hlo_instruction *in, int depth, unit *u) {
    memset(u, 0, sizeof *u);
    if (is_free(cx, in)) return 0;
    switch (in->opcode_id) {
    case PC_HLO_FUSION: return fusion_unit(cx, in, depth, u);
    case PC_HLO_WHILE: return while_unit(cx, in, depth, u);
    case PC_HLO_CONDITIONAL: return conditional_unit(cx, in, depth, u);
    case PC_HLO_CALL: return called_unit(cx, in, 0, depth, u);
    default: break;
    }
    u->flops = compute_flops(cx, in, u);
    if (cx->failed) return -1;
    if (!partial_access(cx, in, u))
        set_io(u, operands_bytes_from(cx, in, 0, 0), value_bytes(cx, in, 0));
    if (!has_rule(in) && !is_transcendental(in)) {
        if (!cx->rep->unknown_ops++)
            snprintf(cx->rep->first_unknown, sizeof cx->rep->first_unknown, "%s", in->opcode);
    }
    return 0;
}

static int finite_unit(const unit *u) {
    return isfinite(u->flops) && isfinite(u->trans) && isfinite(u->rd) && isfinite(u->wr);
}

/* Huge shapes, window sizes or while_trips can overflow a double (inf, or NaN from
 * inf * 0): an error naming the instruction, rather than rows that are not numbers. */
static int inst_unit(cctx *cx, const pc_hlo_instruction *in, int depth, unit *u) {
    if (inst_unit_raw(cx, in, depth, u)) return -1;
    if (!finite_unit(u))
        return fail(cx, PC_ERR_RANGE, "its FLOPs or bytes overflow a double (shapes, windows "
                    "or while trips too large)", in);
    return 0;
}

static int comp_unit(cctx *cx, int64_t comp_id, int depth, unit *out) {
    int32_t c = comp_by_id(cx, comp_id);
    memset(out, 0, sizeof *out);
    if (c < 0) return fail(cx, PC_ERR_FORMAT, "calls an unknown computation id", NULL);
    if (cx->state[c] == 2) {
        *out = cx->memo[c];
        return 0;
    }
    if (cx->state[c] == 1 || depth > MAX_DEPTH)
        return fail(cx, PC_ERR_FORMAT, "computations call each other in a cycle (or nest too deep)",
                    NULL);
    cx->state[c] = 1;
    const pc_hlo_computation *comp = &cx->m->comp[c];
    for (int32_t i = 0; i < comp->n_inst; i++) {
        unit u;
        if (inst_unit(cx, &comp->inst[i], depth, &u)) return -1;
        unit_add(out, &u, 1);
    }
    cx->memo[c] = *out;
    cx->state[c] = 2;
    return 0;
}

/* ---- the report ----------------------------------------------------------------- */

static char *dup_str(const char *s) {
    size_t n = strlen(s ? s : "");
    char *r = malloc(n + 1);
    if (r) memcpy(r, s ? s : "", n + 1);
    return r;
}

static int32_t first_array_operand_type(cctx *cx, const pc_hlo_instruction *in) {
    for (int32_t k = 0; k < in->operand_ids.n; k++) {
        const pc_hlo_instruction *o = operand(cx, in, k);
        if (o && !is_tuple(&o->shape) && o->shape.element_type > 0) return o->shape.element_type;
    }
    return PC_HLO_TYPE_F32;
}

static pc_status add_row(cctx *cx, const pc_hlo_instruction *in, const unit *u, int32_t module,
                         size_t *cap) {
    pc_hlo_cost *r = cx->rep;
    if ((size_t)r->n_ops == *cap) {
        pc_hlo_op_cost *v = pc_grow_array(r->ops, cap, (size_t)r->n_ops + 1, sizeof *v);
        if (!v) return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
        r->ops = v;
    }
    pc_hlo_op_cost *o = &r->ops[r->n_ops];
    memset(o, 0, sizeof *o);
    r->n_ops++;
    o->name = dup_str(in->name);
    o->opcode = dup_str(in->opcode);
    if (!o->name || !o->opcode) return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
    o->module = module;
    o->element_type = in->shape.element_type;
    o->matrix = u->mxu_type != 0;
    o->compute_type = u->mxu_type              ? u->mxu_type
                      : !is_tuple(&in->shape) ? in->shape.element_type
                                               : first_array_operand_type(cx, in);
    o->flops = u->flops;
    o->transcendentals = u->trans;
    o->bytes_read = u->rd;
    o->bytes_written = u->wr;
    r->flops += u->flops;
    r->transcendentals += u->trans;
    r->bytes_read += u->rd;
    r->bytes_written += u->wr;
    if (!isfinite(r->flops) || !isfinite(r->transcendentals) || !isfinite(r->bytes_read) ||
        !isfinite(r->bytes_written)) {
        char b[PC_HLO_NAME_BUF];
        return pc_fail(cx->err, PC_ERR_RANGE, "module %s: the total FLOPs or bytes overflow a "
                       "double", pc_hlo_printable(cx->m->name, b));
    }
    return PC_OK;
}

static pc_status cost_entry(cctx *cx, int32_t module, int keep_free, size_t *cap) {
    int32_t e = comp_by_id(cx, cx->m->entry_computation_id);
    if (e < 0) e = cx->m->n_comp - 1;
    if (e < 0) return PC_OK;
    const pc_hlo_computation *comp = &cx->m->comp[e];
    for (int32_t i = 0; i < comp->n_inst; i++) {
        const pc_hlo_instruction *in = &comp->inst[i];
        unit u;
        cx->rep->instructions++;
        if (inst_unit(cx, in, 0, &u)) return cx->err ? cx->err->code : PC_ERR_FORMAT;
        int nothing = u.flops == 0 && u.rd == 0 && u.wr == 0;
        cx->rep->free_ops += nothing;
        if (nothing && !keep_free) continue;
        pc_status st = add_row(cx, in, &u, module, cap);
        if (st) return st;
    }
    return PC_OK;
}

static pc_status cost_module(const pc_hlo_module *m, const pc_hlo_cost_opts *o, pc_hlo_cost *rep,
                             size_t *cap, pc_error *err) {
    cctx cx = {.m = m, .rep = rep, .err = err};
    cx.trips = o->while_trips > 0 ? o->while_trips : 1;
    int32_t idx = rep->n_modules;
    rep->module_names[idx] = dup_str(m->name ? m->name : "");
    if (!rep->module_names[idx]) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    rep->n_modules++;
    pc_status st = index_module(&cx);
    if (st == PC_OK) st = cost_entry(&cx, idx, o->keep_free, cap);
    cctx_free(&cx);
    return st;
}

void pc_hlo_cost_free(pc_hlo_cost *c) {
    if (!c) return;
    for (int64_t i = 0; i < c->n_ops; i++) {
        free((char *)c->ops[i].name);
        free((char *)c->ops[i].opcode);
    }
    free(c->ops);
    for (int32_t i = 0; i < c->n_modules; i++) free(c->module_names[i]);
    free(c->module_names);
    free(c);
}

/* Costs the selected modules of an array; NULL entries (messages without a module) are skipped. */
static pc_status cost_modules(pc_hlo_module *const *mods, int32_t n, const char *format,
                              const char *what, const pc_hlo_cost_opts *opts, pc_hlo_cost **out,
                              pc_error *err) {
    pc_hlo_cost_opts o = opts ? *opts : pc_hlo_cost_opts_default();
    if (o.module >= n)
        return pc_fail(err, PC_ERR_ARG, "%s: module %d asked for, the file has %d (0..%d)", what,
                       o.module, (int)n, (int)n - 1);
    pc_hlo_cost *rep = calloc(1, sizeof *rep);
    if (!rep || !(rep->module_names = pc_calloc_array((uint64_t)n + 1, sizeof(char *)))) {
        free(rep);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    rep->format = format;
    size_t cap = 0;
    pc_status st = PC_OK;
    for (int32_t i = 0; i < n && st == PC_OK; i++)
        if (mods[i] && (o.module < 0 || o.module == i)) st = cost_module(mods[i], &o, rep, &cap, err);
    if (st == PC_OK && rep->n_modules == 0)
        st = pc_fail(err, PC_ERR_INVALID, "%s: no HLO module in the file", what);
    if (st != PC_OK) {
        pc_hlo_cost_free(rep);
        return st;
    }
    *out = rep;
    return PC_OK;
}

pc_status pc_hlo_cost_text(const char *text, size_t len, const char *what,
                           const pc_hlo_cost_opts *opts, pc_hlo_cost **out, pc_error *err) {
    pc_hlo_module **mods = NULL;
    int n = 0;
    *out = NULL;
    if (opts && PC_CHECK_SIZE(err, pc_hlo_cost_opts, opts)) return PC_ERR_ARG;
    if (!what) what = "<hlo>";
    pc_status st = pc_hlo_parse_text(text, len, what, &mods, &n, NULL, err);
    if (st == PC_OK) st = cost_modules(mods, n, "HLO text", what, opts, out, err);
    pc_hlo_modules_free(mods, n);
    return st;
}

static pc_status cost_proto(const char *path, const pc_hlo_cost_opts *opts, pc_hlo_cost **out,
                            pc_error *err) {
    pc_hlo_tuning *t = NULL;
    pc_status st = pc_hlo_tuning_read(path, &t, err);
    if (st != PC_OK) return st;
    pc_hlo_module **mods = pc_calloc_array((uint64_t)t->n_mods + 1, sizeof *mods);
    if (!mods) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; mods && i < t->n_mods; i++) mods[i] = t->mods[i].module;
    if (st == PC_OK)
        st = cost_modules(mods, t->n_mods, pc_hlo_file_kind_name(t->file_kind), path, opts, out,
                          err);
    free(mods);
    pc_hlo_tuning_free(t);
    return st;
}

pc_status pc_hlo_cost_file(const char *path, const pc_hlo_cost_opts *opts, pc_hlo_cost **out,
                           pc_error *err) {
    *out = NULL;
    if (!path) return pc_fail(err, PC_ERR_ARG, "pc_hlo_cost_file: NULL path");
    if (opts && PC_CHECK_SIZE(err, pc_hlo_cost_opts, opts)) return PC_ERR_ARG;
    if (pc_str_ends_with(path, ".pb") || pc_str_ends_with(path, ".binpb"))
        return cost_proto(path, opts, out, err);
    pc_hlo_module **mods = NULL;
    int n = 0;
    pc_status st = pc_hlo_read_text_file(path, &mods, &n, NULL, err);
    if (st == PC_OK) st = cost_modules(mods, n, "HLO text", path, opts, out, err);
    pc_hlo_modules_free(mods, n);
    return st;
}
