/*
 * Feature encodings (internal): fixed, unfitted rewrites of the RAW dataset
 * features, applied before the fitted preprocessing (pc_prep, model.h):
 *
 *     raw (rows, in_dim) --pc_encode_*--> (rows, out_dim) --pc_prep--> model input
 *
 * so pc_prep is fitted on, and applied to, the encoded columns. Every output
 * row starts with the input row (all in_dim columns, some rewritten in place
 * by pad_minus1), then the appended blocks in the order of the flags below.
 * The same options must be used at training and at inference: store
 * pc_encode_opts_bits() and PC_ENCODE_VERSION with the model.
 *
 * Options (each on/off):
 *  pad_minus1        "absent" becomes -1 where the dataset writes 0 although
 *                    0 is a valid value (node features only, see below).
 *  dim_encodings     per tensor-dimension size d: log2(1+d), d mod B and
 *                    floor(d / B), B = 128 (the TPU's 128 lanes) unless said.
 *  layout_categories minor-to-major vectors as PC_ENCODE_LAYOUT_COLS
 *                    indicator columns each.
 *  roofline          node rows: PC_TPUG_ROOF_COLS = 5 analytic columns (FLOPs,
 *                    bytes, intensity against TPU v4's critical intensity,
 *                    compute-bound, roofline time; tpugraphs/roofline.h).
 *                    Needs the graph: pc_encode_node_graph.
 *  mismatch          layout config rows: PC_ENCODE_MISMATCH_COLS = 3 counts of
 *                    producer/consumer layout disagreements (below). Needs
 *                    the graph: pc_encode_mm_build + pc_encode_configs_mm.
 *  steps             tile config rows: PC_ENCODE_STEPS_COLS = 8 grid-step
 *                    columns (below) from the output tile and the kernel
 *                    root's output shape. Needs the graph:
 *                    pc_encode_plan_build + pc_encode_configs_mm.
 *
 * Column conventions shared by all appended blocks: a dimension that is
 * absent (beyond the tensor's rank, or not determinable) gives -1 in ALL its
 * appended columns, whatever pad_minus1 says, so appended columns never
 * confuse "absent" with "size 0".
 *
 * ---- node features (PC_NODE_FEAT_DIM = 140 columns, tpugraphs.md 6.3) ----
 *  21-26 shape dims (first 6, 0-padded), 27 sum, 28 product,
 *  37-84 window: 6 groups (size, stride, padding_low, padding_high,
 *        window_dilation, base_dilation) of 6 slots + sum + product,
 *  85-90 window_reversal bools, 91 true count, 92 false count,
 *  121-122 dynamic_slice_sizes (first 2), 123 sum, 124 product,
 *  134-139 shape.layout.minor_to_major (first 6, 0-padded).
 *
 * Rank r of the node's shape (pc_encode_node_rank), from the row alone:
 *  r = max(1 + index of the last dim slot (21-26) that is > 0,
 *          1 + the largest minor_to_major value (134-139),
 *          1 if the product (28) is 0 [some dim is 0, so rank >= 1]).
 *  Dims of size >= 1 are always counted; only a trailing size-0 dim of a
 *  zero-element tensor without a layout can be missed. Scalars and tuples
 *  give 0. Values < 0 count as absent, so already -1-padded rows (the
 *  1st-place re-export) give the same rank and pad_minus1 is idempotent on
 *  well-formed rows (a layout that is a permutation of the shape's axes; a
 *  malformed one such as [0,0,1,0,0,0] with no dims may lose rank when padded).
 *  r may exceed 6 (the dataset shows 6 slots); slot rules use min(r, 6).
 * Window rank w = min(6, max(f91 + f92 [reversal true + false counts = number
 *  of window dims], 1 + index of the last window size slot > 0)).
 *
 * pad_minus1 on node rows (in place in the first 140 output columns):
 *  - shape dims 21+i and minor_to_major 134+i for i >= min(r, 6) -> -1;
 *  - if r >= 2 and all of 134-139 are <= 0, the shape has no layout (a rank
 *    >= 2 permutation has a non-zero entry): 134-139 -> -1;
 *  - window slots 37+8g+i (g = 0..5) and reversal bools 85+i for i >= w -> -1.
 *  Sums, products and counts are left alone. Not rewritten, as their count is
 *  not derivable from the row: dimensions (31-36), slice (109-120), dynamic
 *  slice sizes (121-124), padding config (125-132).
 *
 * dim_encodings node block (PC_ENCODE_NODE_DIM_COLS = 32 columns, base b):
 *  b+0  .. b+17  shape dim slot i = 0..5: [log2(1+d), d mod 128, floor(d/128)]
 *                at b+3i .. b+3i+2; d = -1 (absent) for i >= min(r, 6)
 *  b+18 .. b+23  dynamic slice size slot i = 0..1: same three at b+18+3i
 *                (raw values; 0 is not rewritten)
 *  b+24 .. b+27  minor-most dim (lanes): [d, log2(1+d), d mod 128, floor(d/128)]
 *                with d = dims[m2m[0]]
 *  b+28 .. b+31  second-minor dim (sublanes): [d, log2(1+d), d mod 8, floor(d/8)]
 *                with d = dims[m2m[1]]
 *  (the minor dims are absent = -1 when the layout is missing, r < 1 resp.
 *  r < 2, or the axis is >= min(r, 6) so its size is not in the row)
 *
 * layout_categories node block: PC_ENCODE_LAYOUT_COLS columns for the node's
 *  own layout (134-139) with rank r (see the per-vector layout below); all 0
 *  when the layout is missing.
 *
 * roofline node block (last, PC_TPUG_ROOF_COLS = 5): pc_tpug_roofline of the
 *  node with the graph's opcodes and edges (formulas in tpugraphs/roofline.h;
 *  -1 in all five for opcodes without an estimate).
 *
 * ---- tile config features (PC_TILE_CONFIG_DIM = 24, tpugraphs.md 6.4) ----
 *  kernel_bounds 0-5 (+6 sum, 7 product), output_bounds 8-13 (+14, 15),
 *  input_bounds 16-21 (+22, 23); 0-padded, and the product of none is 0.
 *  pad_minus1: no-op. A tile bound is >= 1, so 0 already means absent.
 *  dim_encodings block (PC_ENCODE_TILE_DIM_COLS = 54): group g = 0..2
 *   (kernel, output, input), slot i = 0..5 at b + 18g + 3i: [log2(1+d),
 *   d mod 128, floor(d/128)], absent (-1) for slots after the group's last
 *   slot > 0.
 *  layout_categories: no-op (tile configs hold no layouts).
 *  steps block (last, PC_ENCODE_STEPS_COLS = 8, base b): how the output tile
 *   cuts the kernel's output, the quantity a tile's cost depends on (grid
 *   steps, padding of the last tile) as a ratio of a node feature and a
 *   config feature, which the model did not learn from few kernels
 *   (bench/RESULTS.md, issue #15 third and fourth pass).
 *   The extent e_i of output dim i = 0..5 is slot 21+i of the kernel root's
 *   raw node row, for i < min(r, 6) with r = pc_encode_node_rank(row) and
 *   e_i >= 0, else absent. The kernel root is the last node whose column 0
 *   ("is the root of its computation") is 1: the dataset lists computations
 *   callees first, so this is the root of the last (the kernel's) computation;
 *   the last node when no row has column 0 set. A tuple root has rank 0, so
 *   every dim is absent. The tile t_i is output_bounds slot 8+i, present when
 *   > 0 (0-padded by the dataset; -1 from a -1-padded re-export). Dim i counts
 *   when both are present, slot by slot (a config whose tile rank differs
 *   from the root's rank counts the common slots only).
 *   b+0 .. b+5  steps_i = ceil(e_i / t_i) (0 for e_i = 0; 1 for a tile larger
 *               than the extent); -1 when dim i does not count
 *   b+6         the product of the counted steps_i (the grid); -1 if none counts
 *   b+7         the last tile's fill: the minimum over counted dims of
 *               (e_i - (steps_i - 1) t_i) / t_i in (0, 1] (1 when the tile
 *               divides the extent, e_i / t_i when it is larger; a dim with
 *               e_i = 0 gives 1); -1 if none counts
 *  rsteps block (after steps, PC_ENCODE_RSTEPS_COLS = 4, base b): the
 *   reduction steps of the kernel's contraction, ceil(reduction extent /
 *   reduction tile), which the output tile does not show (bench/RESULTS.md,
 *   issue #15 fifth and sixth pass). The reduction node is the last node
 *   whose opcode (node_opcode) is dot (34) or convolution (26); none: every
 *   column -1. Its operands are the producers of its first edges in edge
 *   order (one edge: both operands are that node). Reduction extents
 *   R_0..R_2 (-1 where absent):
 *    dot: node_feat holds no dot_dimension_numbers, so one contracting dim
 *     is assumed, the batch dims being the nb = r_lhs + r_rhs - r_out - 2
 *     leading output dims (r = pc_encode_node_rank, all <= 6, nb in
 *     0..r_out): R_0 = round(sqrt(P_lhs P_rhs / (P_out B))), P the
 *     products of dims 21.. of each row, B the product of the output's
 *     first nb dims; absent when a product is not > 0 or R_0 < 1.
 *    convolution: R_0 = the input operand's dim at index column 94
 *     (input_feature_dimension), when an integer in 0..min(r_in, 6)-1 and
 *     the dim is > 0; R_1, R_2 = window sizes (columns 37, 38) while > 0.
 *   The reduction tile of R_i is kernel_bounds slot s + i (s = the rank of
 *   the reduction node: kernel_bounds lists the output's iteration dims
 *   first, then the reduced ones, as tpugraphs' tiles do in synth/tile.c).
 *   b+0 .. b+2  ceil(R_i / t_i) when R_i > 0 and slot s + i < 6 holds t_i > 0;
 *               -1 otherwise
 *   b+3         the product of the counted ones; -1 if none counts
 *   Why appended and not written into input_bounds (16-23): the dataset
 *   leaves input_bounds "usually" 0 (the compiler infers it, tpugraphs.md
 *   6.4), not always, so those slots are not provably free.
 *   A layout config: no-op.
 *
 * ---- layout config features (PC_LAYOUT_CONFIG_DIM = 18, tpugraphs.md 1.5) ----
 *  3 tensors (output, input, kernel) x 6 minor-to-major slots, -1 padded;
 *  all -1 = the compiler's default layout.
 *  pad_minus1: no-op (already -1 padded). dim_encodings: no-op (the slots
 *  are axis indices, not sizes).
 *  layout_categories block (3 * PC_ENCODE_LAYOUT_COLS = 33): tensor t at
 *   b + 11t, rank = number of leading slots >= 0.
 *  mismatch block (last, PC_ENCODE_MISMATCH_COLS = 3), row of config c and
 *   configurable node j (node u = node_config_ids[j]):
 *   b+0 in:    over tensors t = 1, 2 (input, kernel) of j: mismatches of the
 *              layout j asks for (slots 6t..6t+5) against what its producer
 *              gives, the producer being operand t-1 of u (the t-th edge
 *              [u, v] in the file's edge order; the dataset sorts edges, so
 *              this is the operand of the t-th smallest node id: a heuristic)
 *   b+1 out:   over (configurable j', t) whose producer is u: the same
 *              mismatches, counted on the producer's row
 *   b+2 total: the sum of `in` over every configurable node of config c
 *   (a node listed twice in node_config_ids: its last entry is the one that
 *   has producers and is a producer's config)
 *   A producer v gives: its config output slots 0..5 when v is configurable
 *   and they are set (rank >= 1), else its own node_feat layout (134-139,
 *   rank pc_encode_node_rank; unknown when the layout is missing, the rank
 *   is 0 or above 6). A pair counts 1 when the asked layout is set (rank
 *   >= 1), the given one is known, both ranks agree, and the two orders
 *   differ once axes of size 1 in v's shape (21-26) are dropped (moving a
 *   size-1 axis moves no byte): a copy or transpose the compiler must add.
 *
 * ---- one minor-to-major vector -> PC_ENCODE_LAYOUT_COLS = 11 columns ----
 *  (k = min(rank, 6) slots s[0..k-1] are used; all 11 are 0 when rank = 0)
 *  +0      set: 1 if rank >= 1 (config: not the compiler default)
 *  +1      default order: s = [r-1, r-2, ...] (XLA's row-major default)
 *  +2      minor-most is the last logical axis: s[0] == r-1
 *  +3      second-minor is the second-last axis: r >= 2 and s[1] == r-2
 *  +4      disorder: pairs i < j with s[i] < s[j] over k(k-1)/2 (0 row-major,
 *          1 fully reversed; 0 when k < 2)
 *  +5..+10 one-hot of the minor-most axis s[0] in 0..5
 * Why not a one-hot of the full permutation: there are 874 layouts of rank
 * <= 6 (pc_encode_layout_category), most seen rarely, and an 874-wide block
 * per tensor would dwarf everything else. What costs time on a TPU is which
 * axis lands on the 128 lanes (minor-most, +2 and +5..+10), on the 8
 * sublanes (+3) and whether the layout departs from the default so that
 * copies/transposes appear (+1, +4). The dense category id is available
 * for an embedding table instead.
 */
#ifndef PC_MODEL_ENCODE_H
#define PC_MODEL_ENCODE_H

#include <stdint.h>

#include "perfcast/dataset.h"

/* Bump when any output column changes meaning; store with checkpoints. */
#define PC_ENCODE_VERSION 1

#define PC_ENCODE_LAYOUT_COLS 11
#define PC_ENCODE_NODE_DIM_COLS 32
#define PC_ENCODE_TILE_DIM_COLS 54
#define PC_ENCODE_ROOF_COLS 5 /* = PC_TPUG_ROOF_COLS (checked in encode.c) */
#define PC_ENCODE_MISMATCH_COLS 3
#define PC_ENCODE_STEPS_COLS 8
#define PC_ENCODE_RED_DIMS 3
#define PC_ENCODE_RSTEPS_COLS 4 /* PC_ENCODE_RED_DIMS + 1 */
#define PC_OP_CONVOLUTION 26
#define PC_OP_DOT 34
/* Number of layout categories of rank 0..6: sum of r! = 874. */
#define PC_ENCODE_LAYOUT_CATEGORIES 874

/* Node feature columns used here (tpugraphs.md 6.3). */
#define PC_NF_SHAPE_DIMS 21
#define PC_NF_SHAPE_PROD 28
#define PC_NF_WINDOW 37
#define PC_NF_CONV_IN_FEAT 94
#define PC_NF_WIN_REV 85
#define PC_NF_WIN_REV_TRUE 91
#define PC_NF_WIN_REV_FALSE 92
#define PC_NF_DYN_SLICE 121
#define PC_NF_LAYOUT 134

typedef struct pc_encode_opts {
    int pad_minus1;
    int dim_encodings;
    int layout_categories;
    int roofline;
    int mismatch;
    int steps;
    int rsteps;
} pc_encode_opts;

pc_encode_opts pc_encode_opts_none(void); /* all off: every transform is a copy */
/* The three row-local encodings (PC_ENCODE_ALL): pad, dims, layout. */
pc_encode_opts pc_encode_opts_all(void);

/* Bit 0 pad_minus1, bit 1 dim_encodings, bit 2 layout_categories, bit 3
   roofline, bit 4 mismatch, bit 5 steps, bit 6 rsteps. */
uint32_t pc_encode_opts_bits(const pc_encode_opts *o);
/* Fails with PC_ERR_ARG on unknown bits (a newer checkpoint). */
pc_status pc_encode_opts_from_bits(uint32_t bits, pc_encode_opts *o, pc_error *err);

/*
 * Output widths for in_dim input columns, or -1 when an enabled option needs
 * more columns than in_dim (node 140, tile 24, layout 18). With every option
 * off the width is in_dim.
 */
int pc_encode_node_width(const pc_encode_opts *o, int in_dim);
int pc_encode_tile_width(const pc_encode_opts *o, int in_dim);
int pc_encode_layout_width(const pc_encode_opts *o, int in_dim);
/* By kind (PC_KIND_TILE or PC_KIND_LAYOUT; -1 otherwise). */
int pc_encode_config_width(const pc_encode_opts *o, pc_kind kind, int in_dim);

/*
 * in (rows, in_dim) -> out (rows, width) row-major, width from the matching
 * _width function; in and out must not overlap. No allocation; OpenMP over
 * rows when there are many. PC_ERR_ARG when the width is -1, and when
 * roofline (node), mismatch (layout) or steps (tile) is on: they need the
 * graph (pc_encode_node_graph, pc_encode_configs_mm).
 */
pc_status pc_encode_node(const pc_encode_opts *o, const float *in, int64_t rows, int in_dim,
                         float *out, pc_error *err);
pc_status pc_encode_tile(const pc_encode_opts *o, const float *in, int64_t rows, int in_dim,
                         float *out, pc_error *err);
pc_status pc_encode_layout(const pc_encode_opts *o, const float *in, int64_t rows, int in_dim,
                           float *out, pc_error *err);
pc_status pc_encode_configs(const pc_encode_opts *o, pc_kind kind, const float *in,
                            int64_t rows, int in_dim, float *out, pc_error *err);

/* What the graph-wide encodings (roofline, mismatch) read of one graph. */
typedef struct pc_encode_graph {
    int64_t n;              /* nodes */
    const float *feat;      /* (n, dim) raw node_feat, dim >= 140 */
    int dim;
    const int32_t *opcode;  /* (n,) */
    const int32_t *edges;   /* (m, 2): [consumer, producer] */
    int64_t m;
    const int32_t *cfg_ids; /* (nc,) layout graphs; NULL for tile */
    int64_t nc;
} pc_encode_graph;

pc_encode_graph pc_encode_graph_of(const pc_graph *g);

/*
 * Node rows of a whole graph (g->n rows of g->feat) into out (n, width):
 * pc_encode_node plus the roofline block. Allocates scratch. PC_ERR_RANGE
 * for an edge outside the graph.
 */
pc_status pc_encode_node_graph(const pc_encode_opts *o, const pc_encode_graph *g, float *out,
                               pc_error *err);

/* The graph-wide config blocks' per-graph plan. Mismatch (layout): for each
   configurable node and tensor t = 1, 2 the producer (rules above). Steps
   (tile): the kernel root's output extents. */
typedef struct pc_encode_mm {
    int64_t nc;
    int32_t *src;  /* (nc, 2) config index of the producer, -1 when not configurable */
    int8_t *known; /* (nc, 2) 1 when there is a producer and its node layout is known */
    int8_t *rank;  /* (nc, 2) the rank of that node layout */
    float *lay;    /* (nc, 2, 6) the producer's node layout, -1 padded */
    float *dims;   /* (nc, 2, 6) the producer's dims (21-26); 0 without a producer */
    int tile;      /* 1: built for a tile graph (ext is set) */
    float ext[6];  /* the kernel root's output extents, -1 where absent (steps block) */
    float red[PC_ENCODE_RED_DIMS]; /* reduction extents, -1 where absent (rsteps block) */
    int red_slot;  /* kernel_bounds slot of red[0]: the reduction node's rank; -1 none */
} pc_encode_mm;

/* PC_ERR_RANGE for a config id or edge outside the graph. */
pc_status pc_encode_mm_build(const pc_encode_graph *g, pc_encode_mm *p, pc_error *err);
void pc_encode_mm_free(pc_encode_mm *p); /* NULL and zeroed plans are fine */

/*
 * The plan the config encodings o need for a graph of this kind: the
 * mismatch plan (pc_encode_mm_build) for layout with mismatch, the kernel
 * root's extents for tile with steps (g->feat, g->n, g->dim only), else a
 * zeroed plan. PC_ERR_ARG for a node row narrower than 140 or a tile graph
 * without nodes. Free with pc_encode_mm_free.
 */
pc_status pc_encode_plan_build(const pc_encode_opts *o, pc_kind kind, const pc_encode_graph *g,
                               pc_encode_mm *p, pc_error *err);
/* The kernel root's extents of a tile graph (the steps block's rules) into ext[6]. */
/* The rsteps block's reduction extents and first kernel_bounds slot (encode.h). */
void pc_encode_tile_reduction(const pc_encode_graph *g, float red[PC_ENCODE_RED_DIMS], int *slot);
void pc_encode_tile_root(const pc_encode_graph *g, float ext[6]);

/*
 * pc_encode_configs with the graph-wide blocks: mm the graph's plan (may be
 * NULL unless o->mismatch and kind is layout, or o->steps and kind is tile);
 * for layout with mismatch rows must be whole configs (a multiple of mm->nc,
 * starting at a config's first row).
 */
pc_status pc_encode_configs_mm(const pc_encode_opts *o, pc_kind kind, const pc_encode_mm *mm,
                               const float *in, int64_t rows, int in_dim, float *out,
                               pc_error *err);

/* Rank of the node's shape from one raw 140-wide row (rules above). */
int pc_encode_node_rank(const float *row);

/*
 * Dense category id of a minor-to-major vector s[0..5] of rank r (slots
 * beyond r ignored): the ids of rank r follow those of
 * smaller ranks (offset sum_{q<r} q!) and within a rank are the Lehmer
 * index of the permutation (row-major [r-1..0] is the last one of its
 * rank); rank 0 is id 0. Returns -1 if r > 6 or s[0..r-1] is not a
 * permutation of 0..r-1. For an embedding table of PC_ENCODE_LAYOUT_CATEGORIES rows.
 */
int pc_encode_layout_category(const float *s, int r);
/* Rank of a -1-padded vector: the number of leading slots >= 0. */
int pc_encode_layout_rank(const float *s);

/* The PC_ENCODE_LAYOUT_COLS indicator columns of one vector (layout above). */
void pc_encode_layout_cols(const float *s, int r, float *out);

#endif /* PC_MODEL_ENCODE_H */
