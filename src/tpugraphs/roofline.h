/*
 * Per-node roofline estimates from TpuGraphs rows (node_feat, node_opcode,
 * edge_index): the FLOPs and HBM bytes of an HLO instruction and where it
 * sits against a chip's critical intensity. An analytic prior for the cost
 * models (src/gnn/encode.h, the "roofline" encoding), computed from what the
 * dataset holds and nothing else.
 *
 * The chip is fixed: TPU v4, 2.75e14 bf16 FLOP/s and 1.2e12 B/s of HBM
 * (src/analytic/chips.c, scaling_book.md), critical intensity 229.2 FLOP/B.
 *
 * Per node u (dims, element counts and types read from the rows; elems(v) =
 * column 28, the product of all dims, 0 if negative; esize from the first
 * column > 0.5 of the element-type one-hot 2..20: PRED/S8/U8 1,
 * S16/U16/F16/BF16 2, S32/U32/F32 4, S64/U64/F64/C64 8, C128 16, the rest
 * (and no column set) 0; bytes(v) = elems(v) * esize(v);
 * operands of u = the v of every edge [u, v], in the file's edge order;
 * out = elems(u)):
 *
 *   B = bytes(u) + sum over operand edges of bytes(v)
 *   F by opcode (TpuGraphs ids, tpugraphs/opcode.h):
 *    dot (34)       2 * out * K, K = sqrt(elems(a) * elems(b) / (out * Bt)) over
 *                   the first two operands a, b (K = 1 when below 1 or when u
 *                   has fewer than 2 operands); Bt = product of the leading
 *                   dims i < min(rank u, rank a, rank b) - 2 equal in all three
 *                   (the batch dims), ranks = 1 + last slot of 21..26 > 0
 *    convolution (26) 2 * out * elems(k) / Cout, Cout = u's dim at the axis
 *                   in column 106 (output feature; an axis outside 0..5 or
 *                   Cout <= 0: no k), k = of the first two operands those
 *                   whose rank equals u's and whose dim at the axis in u's
 *                   column 100 (kernel output feature) equals Cout, the one
 *                   with fewer elements (the first on a tie); without one,
 *                   2 * out * max(1, column 44) (the window's product)
 *    reduce (70)    max(out, elems of the largest operand)
 *    reduce-window (72) out * max(1, column 44)
 *    elementwise    out: ids 1 2 7 12 15 17 19-21 25 30 32 37 38 40 46 49-60
 *                   65-67 71 73 80 81 83 87-91 94-96 103 107 118-120
 *    copy (27), transpose (98) 0
 *    anything else  no estimate: every column -1
 *
 * Output, PC_TPUG_ROOF_COLS per node:
 *   +0 log2(1 + F)
 *   +1 log2(1 + B)
 *   +2 min(16, (F / B) / critical intensity), 0 when B = 0
 *   +3 1 when compute-bound (F / peak >= B / bandwidth and F > 0), else 0
 *   +4 log2(1 + t), t = max(F / peak, B / bandwidth) in ns
 */
#ifndef PC_TPUGRAPHS_ROOFLINE_H
#define PC_TPUGRAPHS_ROOFLINE_H

#include <stdint.h>

#define PC_TPUG_ROOF_COLS 5
#define PC_TPUG_ROOF_PEAK_FLOPS 2.75e14 /* TPU v4 bf16 FLOP/s */
#define PC_TPUG_ROOF_HBM_BW 1.2e12      /* TPU v4 HBM bytes/s */
#define PC_TPUG_ROOF_MAX_RATIO 16.0

/* What F counts for an opcode id. */
typedef enum pc_tpug_roof_cat {
    PC_TPUG_ROOF_NONE = 0, /* no estimate */
    PC_TPUG_ROOF_DOT,
    PC_TPUG_ROOF_CONV,
    PC_TPUG_ROOF_REDUCE,
    PC_TPUG_ROOF_REDUCE_WINDOW,
    PC_TPUG_ROOF_ELEMENTWISE,
    PC_TPUG_ROOF_MOVE /* copy, transpose: bytes only */
} pc_tpug_roof_cat;

pc_tpug_roof_cat pc_tpug_roof_category(int32_t opcode);

/* Bytes per element of a node row's element type (table above). */
int pc_tpug_roof_esize(const float *row);

/*
 * The columns above for n nodes: feat (n, dim) rows (dim >= 140), opcode
 * (n,), edges (m, 2) as [consumer, producer]; out (n, PC_TPUG_ROOF_COLS).
 * Returns 0, -1 when out of memory, -2 when an edge names a node outside
 * 0..n-1 (*bad_edge is then its index).
 */
int pc_tpug_roofline(int64_t n, const float *feat, int dim, const int32_t *opcode,
                     const int32_t *edges, int64_t m, float *out, int64_t *bad_edge);

#endif /* PC_TPUGRAPHS_ROOFLINE_H */
