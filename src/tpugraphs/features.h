/*
 * The TpuGraphs feature schema (tpugraphs.md 6.3 / 6.4): the widths of the
 * dataset's feature rows, the named columns of a node row, and the one node
 * featurizer and one tile-config featurizer that every producer of rows
 * (hlo/ for real programs, synth/ for synthetic ones) calls.
 *
 * A node is described by a pc_tpug_node that each caller fills from its own
 * IR; the featurizer alone decides where each value lands in the row.
 */
#ifndef PC_TPUGRAPHS_FEATURES_H
#define PC_TPUGRAPHS_FEATURES_H

#include <stdint.h>

/* Widths of one row (include/perfcast/dataset.h repeats them as
   PC_NODE_FEAT_DIM, PC_TILE_CONFIG_DIM, PC_LAYOUT_CONFIG_DIM for the public
   API; hlo/featurize.c checks at compile time that they agree). */
#define PC_TPUG_NODE_FEATS 140  /* node_feat */
#define PC_TPUG_TILE_FEATS 24   /* tile config_feat: 3 x (6 values, sum, product) */
#define PC_TPUG_LAYOUT_FEATS 18 /* layout node_config_feat: 3 tensors x PC_TPUG_MAX_RANK dims */
#define PC_TPUG_MAX_RANK 6      /* dims (and minor_to_major slots) kept per tensor */
_Static_assert(PC_TPUG_LAYOUT_FEATS == 3 * PC_TPUG_MAX_RANK, "output, input, kernel slots");

/* Columns of a node_feat row: the first column of each field. A "seq" field
   is k values (0-padded), then the sum and the product of all of them. */
enum pc_tpug_node_col {
    PC_TPUG_COL_IS_ROOT = 0,
    PC_TPUG_COL_ELEMENT_SIZE = 1, /* element_size_in_bits: always 0 */
    PC_TPUG_COL_ETYPE = 2,        /* 19-column one-hot of the element type */
    PC_TPUG_COL_DIMS = 21,        /* seq, k = 6 */
    PC_TPUG_COL_TUPLE_COUNT = 29,
    PC_TPUG_COL_PARAMETER_NUMBER = 30,
    PC_TPUG_COL_DIMENSIONS = 31, /* the first 6, no aggregates */
    PC_TPUG_COL_WIN_SIZE = 37,   /* the six window fields: seq, k = 6 each */
    PC_TPUG_COL_WIN_STRIDE = 45,
    PC_TPUG_COL_WIN_PAD_LOW = 53,
    PC_TPUG_COL_WIN_PAD_HIGH = 61,
    PC_TPUG_COL_WIN_DILATION = 69,
    PC_TPUG_COL_WIN_BASE_DILATION = 77,
    PC_TPUG_COL_WIN_REVERSAL = 85, /* 6 bools, then the true count, the false count */
    PC_TPUG_COL_CONV_INPUT_BATCH = 93,
    PC_TPUG_COL_CONV_INPUT_FEATURE = 94,
    PC_TPUG_COL_CONV_INPUT_SPATIAL = 95, /* the first 4 */
    PC_TPUG_COL_CONV_KERNEL_INPUT_FEATURE = 99,
    PC_TPUG_COL_CONV_KERNEL_OUTPUT_FEATURE = 100,
    PC_TPUG_COL_CONV_KERNEL_SPATIAL = 101, /* the first 4 */
    PC_TPUG_COL_CONV_OUTPUT_BATCH = 105,
    PC_TPUG_COL_CONV_OUTPUT_FEATURE = 106,
    PC_TPUG_COL_FEATURE_GROUP_COUNT = 107,
    PC_TPUG_COL_BATCH_GROUP_COUNT = 108,
    PC_TPUG_COL_SLICE_START = 109, /* the six slice/pad fields: seq, k = 2 each */
    PC_TPUG_COL_SLICE_STRIDE = 113,
    PC_TPUG_COL_SLICE_LIMIT = 117,
    PC_TPUG_COL_DYNAMIC_SLICE_SIZES = 121,
    PC_TPUG_COL_PAD_LOW = 125,
    PC_TPUG_COL_PAD_HIGH = 129,
    PC_TPUG_COL_IS_STABLE = 133,
    PC_TPUG_COL_LAYOUT = 134 /* minor_to_major, the first 6, to the end of the row */
};

/* Columns of a tile config_feat row: three seq fields, k = 6. */
enum pc_tpug_tile_col {
    PC_TPUG_TILE_COL_KERNEL = 0,
    PC_TPUG_TILE_COL_OUTPUT = 8,
    PC_TPUG_TILE_COL_INPUT = 16
};

/* n values; v may be NULL when n is 0. */
typedef struct pc_tpug_seq {
    const int64_t *v;
    int64_t n;
} pc_tpug_seq;

/* What the node featurizer reads of one HLO instruction. Zero-initialise and
   fill what the instruction has; every field left 0 / empty writes 0 (the
   products of empty seq fields write 1, as the extractor does). */
typedef struct pc_tpug_node {
    int is_root;              /* the root of its computation */
    int32_t element_type;     /* xla::PrimitiveType of the result */
    pc_tpug_seq dims;         /* result shape dims */
    int64_t tuple_count;      /* tuple_shapes count (top level) */
    int64_t parameter_number; /* written only when > 0 */
    pc_tpug_seq dimensions;   /* the `dimensions` attribute */
    /* window: window_n dims; each array holds window_n values (may be NULL
       only when window_n is 0); window_reversal NULL = none reversed */
    int64_t window_n;
    const int64_t *win_size, *win_stride, *win_pad_low, *win_pad_high;
    const int64_t *win_dilation, *win_base_dilation;
    const uint8_t *win_reversal;
    /* convolution dimension numbers */
    int64_t conv_input_batch, conv_input_feature;
    pc_tpug_seq conv_input_spatial;
    int64_t conv_kernel_input_feature, conv_kernel_output_feature;
    pc_tpug_seq conv_kernel_spatial;
    int64_t conv_output_batch, conv_output_feature;
    int64_t feature_group_count, batch_group_count;
    pc_tpug_seq slice_start, slice_stride, slice_limit, dynamic_slice_sizes;
    pc_tpug_seq pad_low, pad_high;
    int is_stable;
    pc_tpug_seq minor_to_major; /* the result's layout */
} pc_tpug_node;

/* Column (0..18) of the element-type one-hot for an xla::PrimitiveType, or
   -1 for a type outside the table (no column set). */
int pc_tpug_type_column(int32_t element_type);

/* Writes the PC_TPUG_NODE_FEATS features of one node into out. */
void pc_tpug_node_feat(const pc_tpug_node *nd, float *out);

/* Writes the PC_TPUG_TILE_FEATS features of one TileSizeConfig (its kernel,
   output and input bounds) into out; the product of an empty list is 0 here. */
void pc_tpug_tile_feat(pc_tpug_seq kernel, pc_tpug_seq output, pc_tpug_seq input, float *out);

/* The most sizes pc_tpug_tile_sizes writes. */
#define PC_TPUG_TILE_MAX_SIZES 32

/*
 * Tile sizes an autotuner tries for an iteration dim of extent e (>= 1), the
 * rule synth's tile configs are drawn by and tune searches: a lane dim
 * (role 2, the minor dim of some tensor) multiples of 128 up to 2048, a
 * sublane dim (role 1) powers of two from 8, any other dim (role 0) powers
 * of two from 1, each below e; the whole extent e is always one. Writes them
 * ascending and distinct to out (PC_TPUG_TILE_MAX_SIZES entries); returns
 * how many.
 */
int pc_tpug_tile_sizes(int64_t e, int role, int64_t *out);

#endif /* PC_TPUGRAPHS_FEATURES_H */
