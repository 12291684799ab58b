/*
 * FLOPs and bytes of the instructions of an HLO module (perfcast/hlo_cost.h;
 * the rules are listed in docs/analytic.md, "Roofline of an HLO module").
 *
 * Instructions and computations are found by id through sorted index
 * arrays; a computation's summed cost is memoized (and a call cycle is an
 * error), so shared or nested callees cost linear time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/cost_attr.h"
#include "hlo/hlo_ir.h"
#include "hlo/proto.h"
#include "hlo/text.h"
#include "io/io_internal.h"
#include "perfcast/hlo_cost.h"
#include "tpugraphs/opcode.h"

#define MAX_DEPTH 256 /* nesting of calls and of tuple values */
#define MAX_GEMM_DIMS 16
#define WALK_BUDGET 4000000 /* instructions visited looking for collectives, per module */

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
    pc_hlo_cost_opts o = {.struct_size = sizeof(pc_hlo_cost_opts),
                          .module = -1,
                          .while_trips = 1,
                          .keep_free = 0,
                          .loop_ops = 0,
                          .max_memory = PC_MEMORY_AUTO};
    return o;
}

static const char *const coll_names[PC_HLO_COLL_COUNT] = {
    "all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute"};

const char *pc_hlo_coll_name(pc_hlo_coll c) {
    return (unsigned)c < PC_HLO_COLL_COUNT ? coll_names[c] : "?";
}

int pc_hlo_coll_parse(const char *s) {
    for (int i = 0; s && i < PC_HLO_COLL_COUNT; i++) {
        size_t n = strlen(coll_names[i]);
        if (!strncmp(s, coll_names[i], n) && (!s[n] || !strcmp(s + n, "-start"))) return i;
    }
    return -1;
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

/* The memory budget of costing (pc_hlo_cost_opts.max_memory), checked before the rows are
 * made and again whenever they outgrow what was checked (loop_ops repeats a body's rows). */
typedef struct row_budget {
    uint64_t held;   /* the parsed modules and the per-instruction tables */
    int64_t rows_ok; /* rows checked to fit */
    uint64_t max_memory;
    const char *what;
} row_budget;

typedef struct cctx {
    const pc_hlo_module *m;
    row_budget *rb;
    loc *inst, *comp; /* sorted by id */
    int64_t n_inst;
    unit *memo;       /* per computation (module order) */
    double *vbytes;   /* per entry of inst: a tuple value's bytes; < 0 = not yet known */
    double *trips_memo; /* per entry of inst: a while's trip count; < 0 = not yet known */
    size_t coll_cap;
    int64_t walk_budget; /* instructions the collective walk may still visit */
    uint8_t *state;   /* 0 new, 1 summing, 2 done */
    double trips;
    pc_hlo_cost *rep;
    pc_error *err;
    int failed;
    int keep_free, loop_ops;
    int32_t module; /* index into the report's module_names */
    const char *what; /* the file, for messages */
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
    cx->trips_memo = pc_malloc_array((uint64_t)n + 1, sizeof *cx->trips_memo);
    if (!cx->inst || !cx->comp || !cx->memo || !cx->state || !cx->vbytes || !cx->trips_memo)
        return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
    for (int32_t c = 0; c < m->n_comp; c++) {
        cx->comp[c] = (loc){m->comp[c].id, c, 0};
        for (int32_t i = 0; i < m->comp[c].n_inst; i++)
            cx->inst[cx->n_inst++] = (loc){m->comp[c].inst[i].id, c, i};
    }
    for (int64_t i = 0; i < n; i++) cx->vbytes[i] = cx->trips_memo[i] = -1;
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
    free(cx->trips_memo);
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

/* Bytes of a shape: an array's, or the sum of a tuple's leaves (when the element shapes are
 * known). Sizes stay in [0, inf]: a NaN would defeat the memo. */
static double shape_bytes(const pc_hlo_shape *s, int depth) {
    if (!is_tuple(s)) {
        double tb = pc_hlo_type_bytes(s->element_type);
        return tb > 0 ? elems(s) * tb : 0;
    }
    double b = 0;
    for (int32_t i = 0; s->tuple_shapes && i < s->tuple_count && depth < MAX_DEPTH; i++)
        b += shape_bytes(&s->tuple_shapes[i], depth + 1);
    return b;
}

static int shape_known(const pc_hlo_shape *s) {
    return !is_tuple(s) || s->tuple_shapes || s->tuple_count == 0;
}

/* Tuple sizes are memoized: a tuple may use one operand many times, at every level. */
static double value_bytes(cctx *cx, const pc_hlo_instruction *in, int depth) {
    if (shape_known(&in->shape)) return shape_bytes(&in->shape, 0);
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
    if (!pc_hlo_x(in)->dot.present) {
        cx->rep->dots_guessed++;
        k = lhs->shape.dims.n ? dim(&lhs->shape, lhs->shape.dims.n - 1) : 1;
    }
    for (int32_t i = 0; pc_hlo_x(in)->dot.present && i < pc_hlo_x(in)->dot.lhs_contracting.n; i++) {
        int64_t d = pc_hlo_x(in)->dot.lhs_contracting.v[i];
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
    if (pc_hlo_x(in)->conv.present) {
        per_out = dim(&rhs->shape, pc_hlo_x(in)->conv.kernel_input_feature);
        for (int32_t i = 0; i < pc_hlo_x(in)->conv.kernel_spatial.n; i++)
            per_out *= dim(&rhs->shape, pc_hlo_x(in)->conv.kernel_spatial.v[i]);
    } else { /* no dimension numbers: window sizes x lhs's last dim / groups */
        per_out = window_elems(&pc_hlo_x(in)->window);
        double g = in->feature_group_count > 0 ? (double)in->feature_group_count : 1;
        per_out *= lhs->shape.dims.n ? dim(&lhs->shape, lhs->shape.dims.n - 1) / g : 1;
    }
    return 2 * elems(&in->shape) * per_out;
}

/* The array result of an op that may return a tuple: library calls return (result,
 * workspace). NULL if unknown. */
static const pc_hlo_shape *first_result(const pc_hlo_instruction *in) {
    const pc_hlo_shape *s = &in->shape;
    if (!is_tuple(s)) return s;
    return s->tuple_shapes && s->tuple_count > 0 && !is_tuple(&s->tuple_shapes[0])
               ? &s->tuple_shapes[0]
               : NULL;
}

/* The workspace a cuBLAS/cuDNN call returns last: a rank-1 u8/s8 element of a tuple of 2+. */
static double workspace_bytes(const pc_hlo_instruction *in) {
    const pc_hlo_shape *s = &in->shape;
    if (!is_tuple(s) || !s->tuple_shapes || s->tuple_count < 2) return 0;
    const pc_hlo_shape *w = &s->tuple_shapes[s->tuple_count - 1];
    return (w->element_type == 2 || w->element_type == 6) && w->dims.n == 1 ? shape_bytes(w, 0) : 0;
}

/* cuBLAS GEMM: 2 * result elements * product of the lhs's contracting dims, from
 * backend_config's dot_dimension_numbers (without them the lhs's last dim, as for dots). */
static double gemm_flops(cctx *cx, const pc_hlo_instruction *in) {
    const pc_hlo_instruction *lhs = operand(cx, in, 0);
    const pc_hlo_shape *out = first_result(in);
    if (!lhs || is_tuple(&lhs->shape) || !out)
        return fail(cx, PC_ERR_FORMAT, "a GEMM custom-call needs an array lhs and an array "
                    "result (or a tuple whose first element is one)", in);
    int64_t d[MAX_GEMM_DIMS];
    int n = pc_hlo_gemm_lhs_contracting(in, d, MAX_GEMM_DIMS);
    double k = 1;
    if (n < 0) {
        cx->rep->dots_guessed++;
        k = lhs->shape.dims.n ? dim(&lhs->shape, lhs->shape.dims.n - 1) : 1;
    }
    for (int i = 0; i < n; i++) {
        if (d[i] < 0 || d[i] >= lhs->shape.dims.n)
            return fail(cx, PC_ERR_FORMAT, "backend_config lhs_contracting_dimensions out of the "
                        "lhs's rank", in);
        k *= dim(&lhs->shape, d[i]);
    }
    return 2 * elems(out) * k;
}

/* cuDNN convolution: its (input, kernel, output) are (operand 0, operand 1, result) forward,
 * (result, operand 1, operand 0) for the input gradient, (operand 0, result, operand 1) for
 * the kernel gradient; dim_labels and window describe that convolution. FLOPs as for
 * convolution: 2 * output elements * kernel input features * kernel spatial elements. */
static double libconv_flops(cctx *cx, const pc_hlo_instruction *in, pc_hlo_lib_call kind) {
    const pc_hlo_instruction *a = operand(cx, in, 0), *b = operand(cx, in, 1);
    const pc_hlo_shape *res = first_result(in);
    if (!a || !b || !res || is_tuple(&a->shape) || is_tuple(&b->shape))
        return fail(cx, PC_ERR_FORMAT, "a cuDNN convolution custom-call needs two array operands "
                    "and an array result (or a tuple whose first element is one)", in);
    const pc_hlo_shape *input = &a->shape, *kernel = &b->shape, *output = res;
    if (kind == PC_HLO_LIB_CONV_BWD_INPUT) input = res, output = &a->shape;
    if (kind == PC_HLO_LIB_CONV_BWD_FILTER) kernel = res, output = &b->shape;
    double per_out;
    if (pc_hlo_x(in)->conv.present) {
        per_out = dim(kernel, pc_hlo_x(in)->conv.kernel_input_feature);
        for (int32_t i = 0; i < pc_hlo_x(in)->conv.kernel_spatial.n; i++)
            per_out *= dim(kernel, pc_hlo_x(in)->conv.kernel_spatial.v[i]);
    } else {
        double g = in->feature_group_count > 0 ? (double)in->feature_group_count : 1;
        per_out = window_elems(&pc_hlo_x(in)->window);
        per_out *= input->dims.n ? dim(input, input->dims.n - 1) / g : 1;
    }
    return 2 * elems(output) * per_out;
}

/* FFT: 5 N log2 N per complex transform (FFT, IFFT) of N = product of fft_length points,
 * 2.5 N log2 N per real one (RFFT, IRFFT); transforms = the complex input's (RFFT: the real
 * input's; IRFFT: the real result's) elements / N. */
static double fft_flops(cctx *cx, const pc_hlo_instruction *in) {
    double n;
    int t = pc_hlo_fft(in, &n);
    const pc_hlo_instruction *x = operand(cx, in, 0);
    if (t < 0 || !x || !(n >= 2)) return 0;
    const pc_hlo_shape *s = t == 3 ? &in->shape : &x->shape;
    if (is_tuple(s)) return 0;
    return elems(s) / n * (t >= 2 ? 2.5 : 5) * n * log2(n);
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
    double w = window_elems(&pc_hlo_x(in)->window);
    double outs = is_tuple(&in->shape) ? 0 : elems(&in->shape);
    return outs * w * (in->operand_ids.n > 2 ? in->operand_ids.n / 2 : 1);
}

/* The collective an instruction is (its -start form included), -1 if none. */
static int coll_kind(const pc_hlo_instruction *in) {
    switch (in->opcode_id) {
    case PC_HLO_ALL_GATHER:
    case PC_HLO_ALL_GATHER_START: return PC_HLO_COLL_ALL_GATHER;
    case PC_HLO_REDUCE_SCATTER: return PC_HLO_COLL_REDUCE_SCATTER;
    case PC_HLO_ALL_REDUCE:
    case PC_HLO_ALL_REDUCE_START: return PC_HLO_COLL_ALL_REDUCE;
    case PC_HLO_ALL_TO_ALL: return PC_HLO_COLL_ALL_TO_ALL;
    case PC_HLO_COLLECTIVE_PERMUTE:
    case PC_HLO_COLLECTIVE_PERMUTE_START: return PC_HLO_COLL_PERMUTE;
    default: return in->opcode_id == PC_HLO_UNKNOWN ? pc_hlo_coll_parse(in->opcode) : -1;
    }
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
    case PC_HLO_GET_DIMENSION_SIZE:
    case PC_HLO_ALL_GATHER_DONE: /* async pairs: costed at their start */
    case PC_HLO_ALL_REDUCE_DONE:
    case PC_HLO_COLLECTIVE_PERMUTE_DONE:
    case PC_HLO_ASYNC_UPDATE:
    case PC_HLO_ASYNC_DONE: return 1;
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

/* ---- while trip counts ---------------------------------------------------------- */

static const pc_hlo_instruction *comp_root(const cctx *cx, const pc_hlo_instruction *in, int k) {
    return called_root(cx, in, k);
}

/* k of get-tuple-element(parameter, index=k), else -1. */
static int64_t param_element(const cctx *cx, const pc_hlo_instruction *x) {
    if (!x || x->opcode_id != PC_HLO_GET_TUPLE_ELEMENT) return -1;
    const pc_hlo_instruction *p = operand(cx, x, 0);
    const char *s = pc_hlo_attr_get(x, "index");
    if (!p || p->opcode_id != PC_HLO_PARAMETER || !s) return -1;
    char *end;
    long long k = strtoll(s, &end, 10);
    return end != s && !*end && k >= 0 ? k : -1;
}

static int const_int(const cctx *cx, const pc_hlo_instruction *in, int32_t k, int64_t *v) {
    const pc_hlo_instruction *x = operand(cx, in, k);
    return x && x->opcode_id == PC_HLO_CONSTANT && pc_hlo_literal_int(x, v);
}

/* The condition `element k < limit` (LT, LE, or GT/GE with the constant first): k, else -1. */
static int64_t loop_bound(const cctx *cx, const pc_hlo_instruction *c, int64_t *limit) {
    char d[8];
    if (!c || c->opcode_id != PC_HLO_COMPARE || c->operand_ids.n != 2) return -1;
    pc_hlo_compare_direction(c, d);
    int lt = !strcmp(d, "LT") || !strcmp(d, "LE"), gt = !strcmp(d, "GT") || !strcmp(d, "GE");
    int64_t k = -1;
    if (lt && const_int(cx, c, 1, limit)) k = param_element(cx, operand(cx, c, 0));
    if (gt && const_int(cx, c, 0, limit)) k = param_element(cx, operand(cx, c, 1));
    if (k >= 0 && d[1] == 'E') {
        if (*limit == INT64_MAX) return -1;
        ++*limit;
    }
    return k;
}

/* A counted loop: the condition is `element k < limit`, the body's root tuple has
 * `element k + step` (step a positive constant) at k, and the init tuple a constant there.
 * Trips = ceil((limit - start) / step). 1 and *trips if so, else 0. */
static int counted_loop(const cctx *cx, const pc_hlo_instruction *w, double *trips) {
    int64_t limit, step, start;
    if (w->called_computation_ids.n != 2) return 0;
    int64_t k = loop_bound(cx, comp_root(cx, w, 0), &limit);
    const pc_hlo_instruction *body = comp_root(cx, w, 1), *init = operand(cx, w, 0);
    if (k < 0 || !body || body->opcode_id != PC_HLO_TUPLE || k >= body->operand_ids.n || !init ||
        init->opcode_id != PC_HLO_TUPLE || k >= init->operand_ids.n)
        return 0;
    const pc_hlo_instruction *upd = operand(cx, body, (int32_t)k);
    if (!upd || upd->opcode_id != PC_HLO_ADD || upd->operand_ids.n != 2) return 0;
    int ok = (param_element(cx, operand(cx, upd, 0)) == k && const_int(cx, upd, 1, &step)) ||
             (param_element(cx, operand(cx, upd, 1)) == k && const_int(cx, upd, 0, &step));
    if (!ok || step <= 0 || !const_int(cx, init, (int32_t)k, &start)) return 0;
    *trips = limit > start ? ceil(((double)limit - (double)start) / (double)step) : 0;
    return 1;
}

/* A while's trip count (memoized; each loop counted once in the report's loops_*). */
static double while_trips(cctx *cx, const pc_hlo_instruction *in) {
    const loc *l = loc_find(cx->inst, cx->n_inst, in->id);
    double *memo = l ? &cx->trips_memo[l - cx->inst] : NULL, t;
    if (memo && *memo >= 0) return *memo;
    if (pc_hlo_known_trip_count(in, &t))
        cx->rep->loops_known++;
    else if (counted_loop(cx, in, &t))
        cx->rep->loops_counted++;
    else
        t = cx->trips, cx->rep->loops_fallback++;
    if (memo) *memo = t;
    return t;
}

static int while_unit(cctx *cx, const pc_hlo_instruction *in, int depth, unit *u) {
    unit c;
    cx->rep->while_loops++;
    double trips = while_trips(cx, in);
    for (int32_t k = 0; k < in->called_computation_ids.n; k++) {
        if (called_unit(cx, in, k, depth, &c)) return -1;
        unit_add(u, &c, trips);
    }
    return 0;
}

/* The costliest branch (by FLOPs, then bytes): its index (-1 if none, or on an error). */
static int32_t best_branch(cctx *cx, const pc_hlo_instruction *in, int depth, unit *best) {
    unit c;
    int32_t b = -1;
    memset(best, 0, sizeof *best);
    for (int32_t k = 0; k < in->called_computation_ids.n; k++) {
        if (called_unit(cx, in, k, depth, &c)) return -1;
        if (b < 0 || c.flops > best->flops ||
            (c.flops == best->flops && c.rd + c.wr > best->rd + best->wr))
            *best = c, b = k;
    }
    return b;
}

/* The costliest branch, plus reading the predicate. */
static int conditional_unit(cctx *cx, const pc_hlo_instruction *in, int depth, unit *u) {
    unit best;
    best_branch(cx, in, depth, &best);
    if (cx->failed) return -1;
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
    case PC_HLO_FFT: return fft_flops(cx, in);
    case PC_HLO_CUSTOM_CALL: {
        pc_hlo_lib_call k = pc_hlo_lib_call_kind(in);
        if (k == PC_HLO_LIB_NONE) return 0;
        cx->rep->library_calls++;
        u->mxu_type = lhs_type(cx, in);
        return k == PC_HLO_LIB_GEMM ? gemm_flops(cx, in) : libconv_flops(cx, in, k);
    }
    default: break;
    }
    if (!is_elementwise(in)) return 0;
    double e = is_tuple(&in->shape) ? 0 : elems(&in->shape);
    if (is_transcendental(in)) u->trans = e;
    return e;
}

/* Opcodes handled by the rules above or as pure data movement. */
static int has_rule(const pc_hlo_instruction *in) {
    return in->opcode_id != PC_HLO_UNKNOWN &&
           (in->opcode_id != PC_HLO_CUSTOM_CALL || pc_hlo_lib_call_kind(in) != PC_HLO_LIB_NONE);
}

static int inst_unit_raw(cctx *cx, const pc_hlo_instruction *in, int depth, unit *u) {
    memset(u, 0, sizeof *u);
    if (is_free(cx, in)) return 0;
    switch (in->opcode_id) {
    case PC_HLO_FUSION: return fusion_unit(cx, in, depth, u);
    case PC_HLO_WHILE: return while_unit(cx, in, depth, u);
    case PC_HLO_CONDITIONAL: return conditional_unit(cx, in, depth, u);
    case PC_HLO_CALL:
    case PC_HLO_ASYNC_START: return called_unit(cx, in, 0, depth, u);
    default: break;
    }
    if (coll_kind(in) >= 0) return 0; /* communication: pc_hlo_cost.collectives */
    u->flops = compute_flops(cx, in, u);
    if (cx->failed) return -1;
    if (!partial_access(cx, in, u))
        set_io(u, operands_bytes_from(cx, in, 0, 0), value_bytes(cx, in, 0));
    if (in->opcode_id == PC_HLO_CUSTOM_CALL && u->mxu_type) u->wr -= workspace_bytes(in);
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

/* "PATH:LINE: module M: computation 'C' ..." at a computation that is part of a cycle of calls
 * or nested too deep (LINE where the text gave it). */
static int fail_calls(cctx *cx, int32_t c, int cycle) {
    char b[PC_HLO_NAME_BUF], n[PC_HLO_NAME_BUF], at[32] = "";
    const pc_hlo_computation *comp = &cx->m->comp[c];
    if (comp->line > 0) snprintf(at, sizeof at, ":%ld", (long)comp->line);
    if (!cx->failed) {
        if (cycle)
            pc_fail(cx->err, PC_ERR_FORMAT, "%s%s: module %s: computation '%s' calls itself "
                    "(computations call each other in a cycle)", cx->what ? cx->what : "<hlo>", at,
                    pc_hlo_printable(cx->m->name, b), pc_hlo_printable(comp->name, n));
        else
            pc_fail(cx->err, PC_ERR_FORMAT, "%s%s: module %s: computation '%s' is called through "
                    "more than %d nested calls (computations nest too deep)",
                    cx->what ? cx->what : "<hlo>", at, pc_hlo_printable(cx->m->name, b),
                    pc_hlo_printable(comp->name, n), MAX_DEPTH);
    }
    cx->failed = 1;
    return -1;
}

static int comp_unit(cctx *cx, int64_t comp_id, int depth, unit *out) {
    int32_t c = comp_by_id(cx, comp_id);
    memset(out, 0, sizeof *out);
    if (c < 0) return fail(cx, PC_ERR_FORMAT, "calls an unknown computation id", NULL);
    if (cx->state[c] == 2) {
        *out = cx->memo[c];
        return 0;
    }
    if (cx->state[c] == 1 || depth > MAX_DEPTH) return fail_calls(cx, c, cx->state[c] == 1);
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

/* ---- collectives ----------------------------------------------------------------- */

/* The collective's V (pc_hlo_collective.bytes). */
static double coll_bytes(cctx *cx, const pc_hlo_instruction *in, int kind, int64_t size) {
    double opb = operands_bytes_from(cx, in, 0, 0);
    double n = size > 0 ? (double)size : 1;
    switch (kind) {
    case PC_HLO_COLL_ALL_GATHER: { /* the gathered result; -start: (operand, result) */
        double out = value_bytes(cx, in, 0);
        if (is_tuple(&in->shape)) out = shape_known(&in->shape) ? out - opb : opb * n;
        return out > 0 ? out : 0;
    }
    case PC_HLO_COLL_ALL_TO_ALL: return opb * n;
    default: return opb;
    }
}

static pc_status record_coll(cctx *cx, const pc_hlo_instruction *in, int kind, double count,
                             int64_t row) {
    pc_hlo_cost *r = cx->rep;
    pc_hlo_groups g;
    if (pc_hlo_replica_groups(in, &g)) return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
    if ((size_t)r->n_collectives == cx->coll_cap) {
        pc_hlo_collective *v =
            pc_grow_array(r->collectives, &cx->coll_cap, (size_t)r->n_collectives + 1, sizeof *v);
        if (!v) {
            free(g.first);
            return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
        }
        r->collectives = v;
    }
    pc_hlo_collective *c = &r->collectives[r->n_collectives++];
    memset(c, 0, sizeof *c);
    c->op = row;
    c->kind = (pc_hlo_coll)kind;
    c->count = count;
    c->group_size = g.size;
    c->n_groups = g.count;
    c->group = g.first;
    c->group_ids = g.size < PC_HLO_GROUP_MAX ? g.size : PC_HLO_GROUP_MAX;
    c->groups_known = g.known;
    c->bytes = coll_bytes(cx, in, kind, g.size);
    c->name = dup_str(in->name);
    if (!c->name) return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
    return PC_OK;
}

static pc_status walk_comp(cctx *cx, int64_t comp_id, double count, int64_t row, int depth);

/* Records the collectives an instruction is or runs (through while, call, async-start and
 * the costliest branch of a conditional), each with the trip counts around it. */
static pc_status walk_inst(cctx *cx, const pc_hlo_instruction *in, double count, int64_t row,
                           int depth) {
    int kind = coll_kind(in);
    if (kind >= 0) return record_coll(cx, in, kind, count, row);
    pc_status st = PC_OK;
    switch (in->opcode_id) {
    case PC_HLO_WHILE: {
        double t = while_trips(cx, in);
        for (int32_t k = 0; k < in->called_computation_ids.n && !st; k++)
            st = walk_comp(cx, in->called_computation_ids.v[k], count * t, row, depth + 1);
        return st;
    }
    case PC_HLO_CALL:
    case PC_HLO_ASYNC_START:
        if (!in->called_computation_ids.n) return PC_OK;
        return walk_comp(cx, in->called_computation_ids.v[0], count, row, depth + 1);
    case PC_HLO_CONDITIONAL: {
        unit best;
        int32_t b = best_branch(cx, in, depth, &best);
        if (cx->failed) return cx->err ? cx->err->code : PC_ERR_FORMAT;
        return b < 0 ? PC_OK : walk_comp(cx, in->called_computation_ids.v[b], count, row, depth + 1);
    }
    default: return PC_OK;
    }
}

static pc_status walk_comp(cctx *cx, int64_t comp_id, double count, int64_t row, int depth) {
    int32_t c = comp_by_id(cx, comp_id);
    if (c < 0 || depth > MAX_DEPTH) return PC_OK;
    const pc_hlo_computation *comp = &cx->m->comp[c];
    for (int32_t i = 0; i < comp->n_inst; i++) {
        if (cx->walk_budget-- <= 0) return PC_OK; /* pathological call graphs: stop looking */
        pc_status st = walk_inst(cx, &comp->inst[i], count, row, depth);
        if (st) return st;
    }
    return PC_OK;
}

/* ---- rows --------------------------------------------------------------------------- */

/* The report as allocated: its rows' names and opcodes are copied into blocks (one opcode
 * string per TpuGraphs id), not one malloc each (issue #18: 2M rows took 64 bytes each more). */
typedef struct str_block {
    struct str_block *next;
    size_t used, cap;
    char data[];
} str_block;
typedef struct cost_rep {
    pc_hlo_cost pub; /* first: a pc_hlo_cost * of the report points here */
    str_block *strs;
    const char *opcode[PC_HLO_OPCODE_COUNT];
} cost_rep;

/* A NUL-terminated copy of a + b owned by the report; NULL when out of memory. */
static const char *rep_str(pc_hlo_cost *r, const char *a, const char *b) {
    cost_rep *cr = (cost_rep *)r;
    size_t na = strlen(a), nb = strlen(b);
    if (na > SIZE_MAX / 4 || nb > SIZE_MAX / 4) return NULL;
    str_block *k = cr->strs;
    if (!k || k->cap - k->used < na + nb + 1) {
        size_t cap = na + nb + 1 > (size_t)1 << 18 ? na + nb + 1 : (size_t)1 << 18;
        if (!(k = malloc(sizeof *k + cap))) return NULL;
        k->next = cr->strs;
        k->used = 0;
        k->cap = cap;
        cr->strs = k;
    }
    char *d = k->data + k->used;
    memcpy(d, a, na);
    memcpy(d + na, b, nb + 1);
    k->used += na + nb + 1;
    return d;
}

static const char *rep_opcode(pc_hlo_cost *r, const pc_hlo_instruction *in) {
    cost_rep *cr = (cost_rep *)r;
    int32_t id = in->opcode_id;
    const char *op = in->opcode ? in->opcode : "";
    if (id <= PC_HLO_UNKNOWN || id >= PC_HLO_OPCODE_COUNT) return rep_str(r, op, "");
    if (!cr->opcode[id]) cr->opcode[id] = rep_str(r, op, "");
    return cr->opcode[id] && strcmp(cr->opcode[id], op) ? rep_str(r, op, "") : cr->opcode[id];
}

/* A row: its struct (the array grows by doubling), its name and opcode; the costing's
 * tables per instruction of the module (loc, a tuple's bytes, a trip count, a state). */
#define COST_BYTES_PER_ROW (2 * sizeof(pc_hlo_op_cost) + 48)
#define COST_BYTES_PER_INST 48

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* `rows` rows with what rb holds within the budget; on success rb->rows_ok = rows. */
static pc_status rows_check(row_budget *rb, int64_t rows, pc_error *err) {
    char how[200];
    snprintf(how, sizeof how,
             " to cost it (its parsed modules and room for %lld cost rows of up to %d "
             "bytes)",
             (long long)rows, (int)COST_BYTES_PER_ROW);
    pc_status st =
        pc_io_budget_check(sat_add(rb->held, sat_mul((uint64_t)rows, COST_BYTES_PER_ROW)),
                           rb->max_memory, rb->what, how, err);
    if (!st) rb->rows_ok = rows;
    return st;
}

static pc_status add_row(cctx *cx, const pc_hlo_instruction *in, const char *prefix,
                         const unit *u, double trips, int64_t coll0, size_t *cap) {
    pc_hlo_cost *r = cx->rep;
    if (cx->rb && r->n_ops >= cx->rb->rows_ok) { /* loop_ops: more rows than instructions */
        pc_status st = rows_check(cx->rb, r->n_ops < 1024 ? 2048 : 2 * r->n_ops, cx->err);
        if (st) return st;
    }
    if ((size_t)r->n_ops == *cap) {
        pc_hlo_op_cost *v = pc_grow_array(r->ops, cap, (size_t)r->n_ops + 1, sizeof *v);
        if (!v) return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
        r->ops = v;
    }
    pc_hlo_op_cost *o = &r->ops[r->n_ops];
    memset(o, 0, sizeof *o);
    r->n_ops++;
    o->name = rep_str(r, prefix, in->name ? in->name : "");
    o->opcode = rep_opcode(r, in);
    if (!o->name || !o->opcode) return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
    o->module = cx->module;
    o->element_type = in->shape.element_type;
    o->matrix = u->mxu_type != 0;
    o->compute_type = u->mxu_type              ? u->mxu_type
                      : !is_tuple(&in->shape) ? in->shape.element_type
                                               : first_array_operand_type(cx, in);
    o->flops = u->flops;
    o->transcendentals = u->trans;
    o->bytes_read = u->rd;
    o->bytes_written = u->wr;
    o->trips = trips;
    for (int64_t i = coll0; i < r->n_collectives; i++) {
        o->comm_bytes += r->collectives[i].bytes * r->collectives[i].count;
        o->collectives++;
    }
    r->comm_bytes += o->comm_bytes;
    r->flops += u->flops;
    r->transcendentals += u->trans;
    r->bytes_read += u->rd;
    r->bytes_written += u->wr;
    if (!isfinite(r->flops) || !isfinite(r->transcendentals) || !isfinite(r->bytes_read) ||
        !isfinite(r->bytes_written) || !isfinite(r->comm_bytes)) {
        char b[PC_HLO_NAME_BUF];
        return pc_fail(cx->err, PC_ERR_RANGE, "module %s: the total FLOPs or bytes overflow a "
                       "double", pc_hlo_printable(cx->m->name, b));
    }
    return PC_OK;
}

/* The report's counters, kept across a loop's rows (they count each instruction once). */
typedef struct counters {
    int64_t unsized, dots_guessed, unknown_ops, while_loops, library_calls;
} counters;

static counters counters_get(const pc_hlo_cost *r) {
    counters c = {r->unsized, r->dots_guessed, r->unknown_ops, r->while_loops, r->library_calls};
    return c;
}

static void counters_set(pc_hlo_cost *r, const counters *c) {
    r->unsized = c->unsized;
    r->dots_guessed = c->dots_guessed;
    r->unknown_ops = c->unknown_ops;
    r->while_loops = c->while_loops;
    r->library_calls = c->library_calls;
}

static pc_status emit(cctx *cx, const pc_hlo_instruction *in, const char *prefix, double trips,
                      int depth, size_t *cap);

/* With loop_ops: a while's rows are its condition's and body's, `trips` times each. */
static pc_status emit_loop(cctx *cx, const pc_hlo_instruction *in, const char *prefix,
                           double trips, int depth, size_t *cap) {
    unit u;
    if (inst_unit(cx, in, depth, &u)) return cx->err ? cx->err->code : PC_ERR_FORMAT;
    double t = trips * while_trips(cx, in);
    size_t np = strlen(prefix), nn = strlen(in->name ? in->name : "");
    char *pre = malloc(np + nn + 2);
    if (!pre) return pc_fail(cx->err, PC_ERR_NOMEM, "out of memory");
    snprintf(pre, np + nn + 2, "%s%s/", prefix, in->name ? in->name : "");
    counters saved = counters_get(cx->rep);
    pc_status st = PC_OK;
    for (int32_t k = 0; k < in->called_computation_ids.n && !st; k++) {
        int32_t c = comp_by_id(cx, in->called_computation_ids.v[k]);
        for (int32_t i = 0; c >= 0 && i < cx->m->comp[c].n_inst && !st; i++)
            st = emit(cx, &cx->m->comp[c].inst[i], pre, t, depth + 1, cap);
    }
    counters_set(cx->rep, &saved);
    free(pre);
    return st;
}

/* One row (or a loop's rows) for an instruction, running `trips` times. */
static pc_status emit(cctx *cx, const pc_hlo_instruction *in, const char *prefix, double trips,
                      int depth, size_t *cap) {
    if (cx->loop_ops && in->opcode_id == PC_HLO_WHILE && depth < MAX_DEPTH)
        return emit_loop(cx, in, prefix, trips, depth, cap);
    unit u, one;
    if (inst_unit(cx, in, depth, &one)) return cx->err ? cx->err->code : PC_ERR_FORMAT;
    memset(&u, 0, sizeof u);
    unit_add(&u, &one, trips);
    int64_t coll0 = cx->rep->n_collectives;
    pc_status st = walk_inst(cx, in, trips, cx->rep->n_ops, depth);
    if (st) return st;
    if (!finite_unit(&u))
        return fail(cx, PC_ERR_RANGE, "its FLOPs or bytes times the loop trips overflow a double",
                    in), cx->err ? cx->err->code : PC_ERR_RANGE;
    int nothing = u.flops == 0 && u.rd == 0 && u.wr == 0 && cx->rep->n_collectives == coll0;
    if (depth == 0) cx->rep->free_ops += nothing;
    if (nothing && !cx->keep_free) return PC_OK;
    return add_row(cx, in, prefix, &u, trips, coll0, cap);
}

static pc_status cost_entry(cctx *cx, size_t *cap) {
    int32_t e = comp_by_id(cx, cx->m->entry_computation_id);
    if (e < 0) e = cx->m->n_comp - 1;
    if (e < 0) return PC_OK;
    const pc_hlo_computation *comp = &cx->m->comp[e];
    for (int32_t i = 0; i < comp->n_inst; i++) {
        cx->rep->instructions++;
        pc_status st = emit(cx, &comp->inst[i], "", 1, 0, cap);
        if (st) return st;
    }
    return PC_OK;
}

static pc_status cost_module(const pc_hlo_module *m, const char *what, const pc_hlo_cost_opts *o,
                             pc_hlo_cost *rep, size_t *cap, size_t *coll_cap, row_budget *rb,
                             pc_error *err) {
    cctx cx = {.m = m, .rep = rep, .err = err, .what = what, .rb = rb};
    cx.trips = o->while_trips > 0 ? o->while_trips : 1;
    cx.keep_free = o->keep_free;
    cx.loop_ops = o->loop_ops;
    cx.coll_cap = *coll_cap;
    cx.walk_budget = WALK_BUDGET;
    int32_t idx = rep->n_modules;
    cx.module = idx;
    rep->module_names[idx] = dup_str(m->name ? m->name : "");
    if (!rep->module_names[idx]) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    rep->n_modules++;
    pc_status st = index_module(&cx);
    if (st == PC_OK) st = cost_entry(&cx, cap);
    *coll_cap = cx.coll_cap;
    cctx_free(&cx);
    return st;
}

void pc_hlo_cost_free(pc_hlo_cost *c) {
    if (!c) return;
    for (str_block *k = ((cost_rep *)c)->strs, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    free(c->ops);
    for (int64_t i = 0; i < c->n_collectives; i++) {
        free((char *)c->collectives[i].name);
        free((int64_t *)c->collectives[i].group);
    }
    free(c->collectives);
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
    cost_rep *cr = calloc(1, sizeof *cr);
    pc_hlo_cost *rep = cr ? &cr->pub : NULL;
    if (!rep || !(rep->module_names = pc_calloc_array((uint64_t)n + 1, sizeof(char *)))) {
        free(cr);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    rep->format = format;
    size_t cap = 0, coll_cap = 0;
    row_budget rb = {.max_memory = o.max_memory, .what = what};
    int64_t insts = 0; /* the rows: one per instruction at most, loop_ops aside */
    for (int32_t i = 0; i < n; i++)
        if (mods[i] && (o.module < 0 || o.module == i))
            rb.held = sat_add(rb.held, pc_hlo_module_bytes(mods[i], &insts, NULL));
    rb.held = sat_add(rb.held, sat_mul((uint64_t)insts, COST_BYTES_PER_INST));
    pc_status st = rows_check(&rb, insts, err);
    for (int32_t i = 0; i < n && st == PC_OK; i++)
        if (mods[i] && (o.module < 0 || o.module == i))
            st = cost_module(mods[i], what, &o, rep, &cap, &coll_cap, &rb, err);
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
    char how[128];
    snprintf(how, sizeof how, " to parse it (up to %d bytes per '(' and %d per byte of HLO text)",
             PC_HLO_TEXT_BYTES_PER_PAREN, 1 + PC_HLO_TEXT_BYTES_PER_BYTE);
    pc_status st = pc_io_budget_check(pc_hlo_text_parse_bound(text, len),
                                      opts ? opts->max_memory : PC_MEMORY_AUTO, what, how, err);
    if (st == PC_OK) st = pc_hlo_parse_text(text, len, what, &mods, &n, NULL, err);
    if (st == PC_OK) st = cost_modules(mods, n, "HLO text", what, opts, out, err);
    pc_hlo_modules_free(mods, n);
    return st;
}

static pc_status cost_proto(const char *path, const pc_hlo_cost_opts *opts, pc_hlo_cost **out,
                            pc_error *err) {
    pc_hlo_tuning *t = NULL;
    pc_status st =
        pc_hlo_tuning_read_progress(path, opts ? opts->max_memory : PC_MEMORY_AUTO,
                                    opts ? opts->progress : NULL, opts ? opts->progress_user : NULL,
                                    &t, err);
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
    pc_hlo_read_opts rdo = {opts ? opts->max_memory : PC_MEMORY_AUTO, opts ? opts->progress : NULL,
                            opts ? opts->progress_user : NULL};
    pc_status st = pc_hlo_read_text_file_opts(path, &rdo, &mods, &n, NULL, err);
    if (st == PC_OK) st = cost_modules(mods, n, "HLO text", path, opts, out, err);
    pc_hlo_modules_free(mods, n);
    return st;
}
