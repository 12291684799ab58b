/*
 * An XLA HLO module in memory: exactly the fields the TpuGraphs featurizer
 * reads (../shared/reference/tpugraphs.md section 6), whichever way the
 * module was read: from a raw ModuleTuningData / HloModuleProto (hlo/proto.c,
 * protobuf-c) or from HLO text (hlo/text_parse.c). The featurizer
 * (hlo/featurize.c) turns it into the dataset's arrays, so both readers give
 * identical arrays for the same module.
 *
 * Ownership: one arena-like owner, pc_hlo_module; pc_hlo_module_free frees
 * everything. Integer lists are int64 (as in the protos). Field numbers in
 * comments are HloInstructionProto's.
 */
#ifndef PC_HLO_IR_H
#define PC_HLO_IR_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/perfcast.h"
#include "tpugraphs/features.h"

/* An int64 list (owned). */
typedef struct pc_i64s {
    int64_t *v;
    int32_t n;
} pc_i64s;

/* xla.PrimitiveType numbers (xla_data.proto): PRED 1 ... F32 11, BF16 16, TUPLE 13, TOKEN 17. */
typedef struct pc_hlo_shape {
    int32_t element_type;   /* ShapeProto.element_type (2) */
    int32_t tuple_count;    /* number of tuple_shapes (4) */
    pc_i64s dims;           /* dimensions (3) */
    pc_i64s minor_to_major; /* layout (5).minor_to_major (1); n = 0 without a layout */
    /* The tuple_count element shapes (owned, nested tuples recursively) where the reader kept
     * them (HLO text); NULL otherwise (the protos: only counted). Not featurized: read by
     * hlo/cost.c for the bytes of tuple outputs. */
    struct pc_hlo_shape *tuple_shapes;
} pc_hlo_shape;

/* An attribute kept as written, for costing only (hlo/cost.c; not featurized): see
 * PC_HLO_COST_ATTRS in hlo/text.h for which. */
typedef struct pc_hlo_attr {
    char *name, *value;
} pc_hlo_attr;

/* WindowDimension fields, one entry per window dimension. */
typedef struct pc_hlo_window {
    int32_t n; /* window dimensions; the lists below have n entries (0 = no window) */
    int64_t *size, *stride, *padding_low, *padding_high, *window_dilation, *base_dilation;
    uint8_t *window_reversal;
} pc_hlo_window;

typedef struct pc_hlo_conv_dims { /* ConvolutionDimensionNumbers (16); present = 1 if set */
    int present;
    int64_t input_batch, input_feature, kernel_input_feature, kernel_output_feature,
        output_batch, output_feature;
    pc_i64s input_spatial, kernel_spatial, output_spatial;
} pc_hlo_conv_dims;

/* DotDimensionNumbers (30): not featurized; read for FLOP counting (hlo/cost.c).
 * present = 1 if the proto field or any *_dims text attribute was given. */
typedef struct pc_hlo_dot_dims {
    int present;
    pc_i64s lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
} pc_hlo_dot_dims;

/* The fields only some opcodes have (convolution, reduce-window, slice, dynamic-slice, pad,
 * dot), apart so that the other instructions do not carry them (issue #18: 536 bytes per
 * instruction before, 2M-instruction files took 1.6 GB). Read them with pc_hlo_x(in), which
 * gives a zeroed one when the instruction has none; write them through pc_hlo_x_mut(in). */
typedef struct pc_hlo_inst_ext {
    pc_hlo_window window;                          /* window (15) */
    pc_hlo_conv_dims conv;                         /* convolution_dimension_numbers (16) */
    pc_i64s slice_start, slice_limit, slice_stride; /* slice_dimensions (17) */
    pc_i64s dynamic_slice_sizes;                   /* (20) */
    pc_i64s pad_low, pad_high, pad_interior;       /* padding_config (21) */
    pc_hlo_dot_dims dot;                           /* dot_dimension_numbers (30) */
} pc_hlo_inst_ext;

typedef struct pc_hlo_instruction {
    char *name;              /* name (1), without a leading '%' */
    char *opcode;            /* opcode (2) as XLA spells it: "get-tuple-element" */
    int32_t opcode_id;       /* TpuGraphs id (tpugraphs/opcode.h), 0 = unknown */
    int32_t n_attrs;         /* attributes in attrs */
    int32_t is_stable;       /* (60) */
    int64_t id;              /* id (35): unique in the module */
    pc_hlo_shape shape;      /* shape (3) */
    int64_t parameter_number; /* (9); -1 when not a parameter */
    pc_i64s dimensions;      /* dimensions (14) */
    int64_t feature_group_count;                   /* (50), 0 when absent */
    int64_t batch_group_count;                     /* (58), 0 when absent */
    pc_i64s operand_ids;                           /* (36), ids of instructions */
    pc_i64s called_computation_ids;                /* (38), ids of computations */
    pc_hlo_inst_ext *ext; /* owned; NULL: none of its fields set (pc_hlo_x) */
    pc_hlo_attr *attrs;   /* n_attrs attributes kept as text for costing (hlo/cost.c) */
} pc_hlo_instruction;

/* The instruction's rarely set fields; all zero (a static empty one) when it has none. */
extern const pc_hlo_inst_ext pc_hlo_ext_none;
static inline const pc_hlo_inst_ext *pc_hlo_x(const pc_hlo_instruction *in) {
    return in->ext ? in->ext : &pc_hlo_ext_none;
}
/* The same to write: made (zeroed) on first use; NULL when out of memory. */
pc_hlo_inst_ext *pc_hlo_x_mut(pc_hlo_instruction *in);

/* The value of a kept attribute (pc_hlo_instruction.attrs), NULL if absent. */
const char *pc_hlo_attr_get(const pc_hlo_instruction *in, const char *name);
/* Frees a shape's tuple element shapes (recursively) and its lists; leaves it zeroed. */
void pc_hlo_shape_clear(pc_hlo_shape *s);
void pc_hlo_window_clear(pc_hlo_window *w); /* frees its arrays, zeroes it */

typedef struct pc_hlo_computation {
    char *name;   /* name (1) */
    int64_t id;   /* id (5) */
    int64_t root_id; /* root_id (6): id of its root instruction */
    pc_hlo_instruction *inst;
    int32_t n_inst;
    int32_t line; /* of its name in the HLO text (1-based; messages); 0 unknown (protos) */
} pc_hlo_computation;

typedef struct pc_hlo_module {
    char *name;
    int64_t entry_computation_id;
    /* in HloModuleProto.computations order: callees before callers, entry last */
    pc_hlo_computation *comp;
    int32_t n_comp;
    /* With n_opcodes > 0 (HLO text): every instruction's opcode is one of these strings,
     * shared (one per known opcode) and freed with the module, not with the instruction. */
    int32_t n_opcodes;
    char **opcodes;
} pc_hlo_module;

void pc_hlo_module_free(pc_hlo_module *m); /* NULL ok; frees the struct itself */

/* ---- featurizer (hlo/featurize.c) ---------------------------------------- */

/*
 * The dataset's graph arrays for a module (tpugraphs.md 6.3 / 6.4): nodes in
 * computation order then instruction order; node_feat (n, 140) float32;
 * node_opcode (n) (unknown opcodes map to 0, reported in `unknown`); edges
 * (m, 2) [user, operand] sorted lexicographically, operand edges deduplicated,
 * plus one edge to the root of each called computation; node_splits (k).
 */
typedef struct pc_hlo_graph {
    int64_t n, m, k;
    float *node_feat;    /* (n, 140) */
    uint8_t *node_opcode; /* (n) */
    int64_t *edges;      /* (m, 2) */
    int64_t *node_splits; /* (k) */
    int64_t unknown;     /* instructions with an unknown opcode */
} pc_hlo_graph;

pc_status pc_hlo_featurize(const pc_hlo_module *mod, pc_hlo_graph *out, pc_error *err);
/* The same without node_feat (left NULL): its rows are made from the module when
 * needed (pc_hlo_feat_rows), so the (n, 140) array need not exist whole. */
pc_status pc_hlo_featurize_lazy(const pc_hlo_module *mod, pc_hlo_graph *out, pc_error *err);

/* Where pc_hlo_feat_rows is in the module: node `node` is instruction `inst` of
 * computation `comp`. Zeroed = node 0. */
typedef struct pc_hlo_row_cursor {
    int64_t node;
    int32_t comp, inst;
} pc_hlo_row_cursor;
/* node_feat rows [first, first + count) of a module pc_hlo_featurize accepted, into
 * dst (count * 140 floats): the rows pc_hlo_featurize writes. Fastest when called
 * in increasing order with the same cursor. */
void pc_hlo_feat_rows(const pc_hlo_module *mod, pc_hlo_row_cursor *cur, int64_t first, int64_t count,
                      float *dst);
void pc_hlo_graph_free(pc_hlo_graph *g); /* frees the arrays, not the struct */

/* What a parsed module holds (its instructions, lists and names: an estimate for memory
 * budgets); *nodes and *edges (may be NULL) grow by its instructions and by its operands
 * and called computations (the graph's edges at most). */
uint64_t pc_hlo_module_bytes(const pc_hlo_module *m, int64_t *nodes, int64_t *edges);

/*
 * A name (module, computation, instruction: bytes from a file) made safe for
 * a one-line message: at most 64 bytes ("..." when cut), anything but
 * printable ASCII as '?'. `buf` holds PC_HLO_NAME_BUF bytes; returns buf.
 */
#define PC_HLO_NAME_BUF 72
const char *pc_hlo_printable(const char *s, char *buf);

/* Node index of the instruction with this id (after featurize's ordering); -1 if none. */
int64_t pc_hlo_node_of_id(const pc_hlo_module *mod, int64_t id);

#endif /* PC_HLO_IR_H */
