/* Per-node roofline estimates from TpuGraphs rows (rules in roofline.h). */
#include "tpugraphs/roofline.h"

#include <math.h>
#include <stdlib.h>

#include "tpugraphs/features.h"
#include "tpugraphs/opcode.h"

#define NSLOT 6

pc_tpug_roof_cat pc_tpug_roof_category(int32_t op) {
    switch (op) {
    case PC_HLO_DOT: return PC_TPUG_ROOF_DOT;
    case PC_HLO_CONVOLUTION: return PC_TPUG_ROOF_CONV;
    case PC_HLO_REDUCE: return PC_TPUG_ROOF_REDUCE;
    case PC_HLO_REDUCE_WINDOW: return PC_TPUG_ROOF_REDUCE_WINDOW;
    case PC_HLO_COPY:
    case PC_HLO_TRANSPOSE: return PC_TPUG_ROOF_MOVE;
    case PC_HLO_ABS:
    case PC_HLO_ADD:
    case PC_HLO_ATAN2:
    case PC_HLO_BITCAST_CONVERT:
    case PC_HLO_CEIL:
    case PC_HLO_CLAMP:
    case PC_HLO_COUNT_LEADING_ZEROS:
    case PC_HLO_COMPARE:
    case PC_HLO_COMPLEX:
    case PC_HLO_CONVERT:
    case PC_HLO_COSINE:
    case PC_HLO_DIVIDE:
    case PC_HLO_EXPONENTIAL:
    case PC_HLO_EXPONENTIAL_MINUS_ONE:
    case PC_HLO_FLOOR:
    case PC_HLO_IMAG:
    case PC_HLO_IS_FINITE:
    case PC_HLO_LOG:
    case PC_HLO_LOG_PLUS_ONE:
    case PC_HLO_AND:
    case PC_HLO_NOT:
    case PC_HLO_OR:
    case PC_HLO_XOR:
    case PC_HLO_MAP:
    case PC_HLO_MAXIMUM:
    case PC_HLO_MINIMUM:
    case PC_HLO_MULTIPLY:
    case PC_HLO_NEGATE:
    case PC_HLO_POPCNT:
    case PC_HLO_POWER:
    case PC_HLO_REAL:
    case PC_HLO_REDUCE_PRECISION:
    case PC_HLO_REMAINDER:
    case PC_HLO_ROUND_NEAREST_AFZ:
    case PC_HLO_RSQRT:
    case PC_HLO_SELECT:
    case PC_HLO_SHIFT_LEFT:
    case PC_HLO_SHIFT_RIGHT_ARITHMETIC:
    case PC_HLO_SHIFT_RIGHT_LOGICAL:
    case PC_HLO_SIGN:
    case PC_HLO_SINE:
    case PC_HLO_SQRT:
    case PC_HLO_SUBTRACT:
    case PC_HLO_TANH:
    case PC_HLO_CBRT:
    case PC_HLO_LOGISTIC:
    case PC_HLO_ROUND_NEAREST_EVEN:
    case PC_HLO_STOCHASTIC_CONVERT:
    case PC_HLO_TAN: return PC_TPUG_ROOF_ELEMENTWISE;
    default: return PC_TPUG_ROOF_NONE;
    }
}

int pc_tpug_roof_esize(const float *row) {
    /* one-hot columns: INVALID PRED S8 S16 S32 S64 U8 U16 U32 U64 F16 F32 F64 BF16 C64 C128
       TUPLE OPAQUE TOKEN */
    static const int8_t size[19] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8, 16, 0, 0, 0};
    for (int c = 0; c < 19; c++)
        if (row[PC_TPUG_COL_ETYPE + c] > 0.5f) return size[c];
    return 0;
}

static double elems(const float *row) {
    double e = (double)row[PC_TPUG_COL_DIMS + NSLOT + 1];
    return e > 0.0 ? e : 0.0;
}

static double bytes_of(const float *row) { return elems(row) * pc_tpug_roof_esize(row); }

static int rank6(const float *row) {
    for (int i = NSLOT - 1; i >= 0; i--)
        if (row[PC_TPUG_COL_DIMS + i] > 0.0f) return i + 1;
    return 0;
}

/* Dim `col` names (an axis index in the row), or -1 when not in the 6 slots. */
static double dim_at(const float *row, float axis) {
    if (!(axis >= 0.0f && axis < (float)NSLOT)) return -1.0;
    return (double)row[PC_TPUG_COL_DIMS + (int)axis];
}

static double dot_flops(const float *u, const float *a, const float *b) {
    double out = elems(u);
    if (!a || !b) return 2.0 * out;
    int ru = rank6(u), ra = rank6(a), rb = rank6(b);
    int nb = ru < ra ? ru : ra;
    nb = (nb < rb ? nb : rb) - 2;
    double bt = 1.0;
    for (int i = 0; i < nb; i++) {
        float d = u[PC_TPUG_COL_DIMS + i];
        if (d != a[PC_TPUG_COL_DIMS + i] || d != b[PC_TPUG_COL_DIMS + i]) break;
        bt *= (double)d;
    }
    double k2 = out > 0.0 ? elems(a) * elems(b) / (out * bt) : 0.0;
    return 2.0 * out * (k2 >= 1.0 ? sqrt(k2) : 1.0);
}

static double conv_flops(const float *u, const float *a, const float *b) {
    double out = elems(u), win = (double)u[PC_TPUG_COL_WIN_SIZE + NSLOT + 1];
    double cout = dim_at(u, u[PC_TPUG_COL_CONV_OUTPUT_FEATURE]);
    const float *k = NULL;
    const float *cand[2] = {a, b};
    for (int i = 0; i < 2 && cout > 0.0; i++) {
        const float *p = cand[i];
        if (!p || rank6(p) != rank6(u) ||
            dim_at(p, u[PC_TPUG_COL_CONV_KERNEL_OUTPUT_FEATURE]) != cout)
            continue;
        if (!k || elems(p) < elems(k)) k = p;
    }
    if (k) return 2.0 * out * elems(k) / cout;
    return 2.0 * out * (win > 1.0 ? win : 1.0);
}

static void node_roof(const float *feat, int dim, int64_t u, int32_t op, const int32_t *opnd,
                      int64_t nop, float *o) {
    pc_tpug_roof_cat cat = pc_tpug_roof_category(op);
    if (cat == PC_TPUG_ROOF_NONE) {
        for (int c = 0; c < PC_TPUG_ROOF_COLS; c++) o[c] = -1.0f;
        return;
    }
    const float *row = feat + (size_t)u * (size_t)dim;
    const float *a = nop > 0 ? feat + (size_t)opnd[0] * (size_t)dim : NULL;
    const float *b = nop > 1 ? feat + (size_t)opnd[1] * (size_t)dim : NULL;
    double out = elems(row), B = bytes_of(row), F = 0.0, biggest = 0.0;
    for (int64_t i = 0; i < nop; i++) {
        const float *v = feat + (size_t)opnd[i] * (size_t)dim;
        B += bytes_of(v);
        if (elems(v) > biggest) biggest = elems(v);
    }
    double win = (double)row[PC_TPUG_COL_WIN_SIZE + NSLOT + 1];
    switch (cat) {
    case PC_TPUG_ROOF_DOT: F = dot_flops(row, a, b); break;
    case PC_TPUG_ROOF_CONV: F = conv_flops(row, a, b); break;
    case PC_TPUG_ROOF_REDUCE: F = biggest > out ? biggest : out; break;
    case PC_TPUG_ROOF_REDUCE_WINDOW: F = out * (win > 1.0 ? win : 1.0); break;
    case PC_TPUG_ROOF_ELEMENTWISE: F = out; break;
    default: F = 0.0; break;
    }
    double crit = PC_TPUG_ROOF_PEAK_FLOPS / PC_TPUG_ROOF_HBM_BW;
    double tc = F / PC_TPUG_ROOF_PEAK_FLOPS, tm = B / PC_TPUG_ROOF_HBM_BW;
    double ratio = B > 0.0 ? F / B / crit : 0.0;
    o[0] = (float)log2(1.0 + F);
    o[1] = (float)log2(1.0 + B);
    o[2] = (float)(ratio < PC_TPUG_ROOF_MAX_RATIO ? ratio : PC_TPUG_ROOF_MAX_RATIO);
    o[3] = F > 0.0 && tc >= tm ? 1.0f : 0.0f;
    o[4] = (float)log2(1.0 + 1e9 * (tc > tm ? tc : tm));
}

int pc_tpug_roofline(int64_t n, const float *feat, int dim, const int32_t *opcode,
                     const int32_t *edges, int64_t m, float *out, int64_t *bad_edge) {
    for (int64_t e = 0; e < m; e++)
        if (edges[2 * e] < 0 || edges[2 * e] >= n || edges[2 * e + 1] < 0 ||
            edges[2 * e + 1] >= n) {
            if (bad_edge) *bad_edge = e;
            return -2;
        }
    /* operands per consumer, in edge order */
    int64_t *start = calloc((size_t)n + 1, sizeof *start);
    int32_t *opnd = malloc((size_t)(m > 0 ? m : 1) * sizeof *opnd);
    int64_t *fill = malloc((size_t)(n > 0 ? n : 1) * sizeof *fill);
    if (!start || !opnd || !fill) {
        free(start), free(opnd), free(fill);
        return -1;
    }
    for (int64_t e = 0; e < m; e++) start[edges[2 * e] + 1]++;
    for (int64_t i = 0; i < n; i++) start[i + 1] += start[i];
    for (int64_t i = 0; i < n; i++) fill[i] = start[i];
    for (int64_t e = 0; e < m; e++) opnd[fill[edges[2 * e]]++] = edges[2 * e + 1];
    free(fill);
    for (int64_t u = 0; u < n; u++)
        node_roof(feat, dim, u, opcode[u], opnd + start[u], start[u + 1] - start[u],
                  out + (size_t)u * PC_TPUG_ROOF_COLS);
    free(start);
    free(opnd);
    return 0;
}
