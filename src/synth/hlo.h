/*
 * An in-memory HLO-like module, just rich enough to be featurized the way
 * the TpuGraphs extractor featurizes real HLO and to be timed by the cost
 * models: instructions with shapes, operands and the attributes the
 * featurizer reads, grouped into computations.
 *
 * Building: each computation keeps its own instruction list with local
 * operand indices, so a while body can be built in the middle of the entry
 * computation. sy_module_finish() lays the computations out as the dataset
 * does (callees before callers, the entry last) and flattens everything into
 * global arrays (sy_module.inst, .opnd), after which node i of the dataset
 * is inst[i].
 *
 * Allocation failures are sticky: builders return -1 from then on and
 * sy_module.failed is set, so model builders need not check every call.
 */
#ifndef PC_SYNTH_HLO_H
#define PC_SYNTH_HLO_H

#include <stdint.h>

#include "tpugraphs/features.h"
#include "tpugraphs/opcode.h"

#define SY_MAX_RANK PC_TPUG_MAX_RANK /* the dataset's: 6 minor-to-major slots per tensor */

/* xla::PrimitiveType values (xla_data.proto); the featurizer takes them as they are. */
enum sy_etype {
    SY_PRED = 1,
    SY_S32 = 4,
    SY_F32 = 11,
    SY_TUPLE = 13,
    SY_BF16 = 16,
};

typedef struct sy_shape {
    uint8_t etype;
    uint8_t rank; /* <= SY_MAX_RANK: sy_shp clamps it */
    int64_t d[SY_MAX_RANK];
} sy_shape;

/* A rank bounded to [0, SY_MAX_RANK] where the compiler can see it: loops
   that fill SY_MAX_RANK-sized buffers go through this. Ranks here never
   exceed it (sy_shp clamps), so it changes nothing but what gcc can prove. */
static inline int sy_rank_bound(int rank) {
    return rank < 0 ? 0 : rank > SY_MAX_RANK ? SY_MAX_RANK : rank;
}

/* Attributes of the few instructions that have them (index sy_inst.attr). */
typedef struct sy_attr {
    /* window (convolution, reduce-window); dilations are always 1 */
    uint8_t nwin;
    int64_t win_size[SY_MAX_RANK], win_stride[SY_MAX_RANK];
    int64_t pad_lo[SY_MAX_RANK], pad_hi[SY_MAX_RANK];
    /* convolution: NHWC input, HWIO kernel, NHWC output */
    uint8_t is_conv;
    int64_t feature_group_count;
    /* dot dimension numbers (batch dims are the leading nbatch of both
       operands); the featurizer leaves them out, as the dataset does */
    int8_t lhs_contract, rhs_contract, nbatch;
    /* slice */
    uint8_t nslice;
    int64_t sl_start[SY_MAX_RANK], sl_limit[SY_MAX_RANK], sl_stride[SY_MAX_RANK];
    /* pad */
    uint8_t npad;
    int64_t pd_lo[SY_MAX_RANK], pd_hi[SY_MAX_RANK];
    /* dynamic-slice sizes */
    uint8_t ndss;
    int64_t dss[SY_MAX_RANK];
} sy_attr;

enum sy_inst_flags {
    SY_CAND = 1,   /* may be chosen as a configurable (layout) node */
    SY_CONFIG = 2, /* chosen: a node of node_config_ids */
};

typedef struct sy_inst {
    sy_shape shape;
    uint8_t op;     /* TpuGraphs opcode id */
    uint8_t ntuple; /* tuple_shapes count for tuple-typed results */
    uint8_t flags;
    uint8_t ndims; /* the `dimensions` field (broadcast, transpose, reduce, ...) */
    int8_t dims[SY_MAX_RANK];
    int32_t param_no;
    int32_t attr;  /* index into sy_module.attrs, or -1 */
    int32_t opnd0; /* operands: opnd[opnd0 .. opnd0 + nopnd) */
    int32_t nopnd;
    int32_t called[2]; /* called computations (ids while building, global root
                          node indices after finish), -1 if none */
    int32_t comp;      /* computation id */
} sy_inst;

typedef struct sy_comp {
    char name[48];
    sy_inst *inst; /* while building */
    int32_t n;
    size_t cap;
    int32_t *opnd; /* while building: local indices */
    int32_t nopnd;
    size_t opnd_cap;
    int32_t root;  /* local index; after finish global */
    double weight; /* executions per run of the program */
    int64_t begin; /* global index of the first instruction (after finish) */
} sy_comp;

typedef struct sy_module {
    sy_comp *comps;
    int32_t ncomp;
    size_t comp_cap;
    sy_attr *attrs;
    int32_t nattr;
    size_t attr_cap;
    int32_t cur; /* computation being built */
    int failed;
    /* after sy_module_finish: */
    int64_t n;
    sy_inst *inst;
    int32_t *opnd;
    int64_t nopnd;
    int32_t *comp_order; /* computations in output order */
} sy_module;

/* ---- building ---------------------------------------------------------- */

void sy_module_init(sy_module *m);
void sy_module_free(sy_module *m);
/* Starts a computation and makes it current; returns its id or -1. */
int32_t sy_comp_begin(sy_module *m, const char *name, double weight);
/* Makes computation `c` current again (e.g. back to the entry). */
void sy_comp_switch(sy_module *m, int32_t c);
void sy_comp_set_root(sy_module *m, int32_t root);

sy_shape sy_shp(uint8_t etype, int rank, const int64_t *d);
sy_shape sy_shp2(uint8_t etype, int64_t a, int64_t b);
sy_shape sy_shp3(uint8_t etype, int64_t a, int64_t b, int64_t c);
sy_shape sy_shp4(uint8_t etype, int64_t a, int64_t b, int64_t c, int64_t d);
sy_shape sy_scalar(uint8_t etype);
int64_t sy_shape_elems(const sy_shape *s);
/* Shape of instruction x of the current computation, by value: builders may
   grow the instruction array, so no pointer into it is kept. */
sy_shape sy_shape_of(const sy_module *m, int32_t x);

/* Generic add: copies `proto` (shape, op, ndims/dims, param_no, ntuple, flags). */
int32_t sy_add(sy_module *m, const sy_inst *proto, const int32_t *ops, int nops,
               const sy_attr *attr);

int32_t sy_param(sy_module *m, sy_shape s, int32_t number);
int32_t sy_tuple_param(sy_module *m, int ntuple, int32_t number);
int32_t sy_const(sy_module *m, sy_shape s);
int32_t sy_iota(sy_module *m, sy_shape s, int dim);
/* Broadcast x into `s`; operand dim i goes to output dim bdims[i]. */
int32_t sy_bcast(sy_module *m, int32_t x, sy_shape s, const int8_t *bdims);
/* A scalar constant broadcast to the shape of `like` (two instructions). */
int32_t sy_splat(sy_module *m, int32_t like);
int32_t sy_unary(sy_module *m, uint8_t op, int32_t x);
int32_t sy_binary(sy_module *m, uint8_t op, int32_t x, int32_t y);
int32_t sy_convert(sy_module *m, int32_t x, uint8_t etype);
int32_t sy_compare(sy_module *m, int32_t x, int32_t y);
int32_t sy_select(sy_module *m, int32_t p, int32_t x, int32_t y);
int32_t sy_clamp(sy_module *m, int32_t lo, int32_t x, int32_t hi);
/* Reduce over `nred` dims (ascending) with computation `reducer` (-1: none,
   as inside a fused computation that is encoded on its own). */
int32_t sy_reduce(sy_module *m, int32_t x, int32_t init, int nred, const int8_t *red,
                  int32_t reducer);
/* Dot with the leading nbatch dims as batch; result [batch, lhs free, rhs free]. */
int32_t sy_dot(sy_module *m, int32_t lhs, int32_t rhs, int nbatch, int lhs_c, int rhs_c);
/* NHWC x HWIO convolution; `groups` > 1 means depthwise (groups == channels). */
int32_t sy_conv(sy_module *m, int32_t in, int32_t kernel, int64_t stride, int64_t groups);
/* Window over NHWC spatial dims (size k, stride s, SAME-style padding). */
int32_t sy_reduce_window(sy_module *m, int32_t x, int32_t init, int64_t k, int64_t s,
                         int32_t reducer);
int32_t sy_reshape(sy_module *m, int32_t x, sy_shape s);
int32_t sy_transpose(sy_module *m, int32_t x, const int8_t *perm);
int32_t sy_tuple(sy_module *m, int n, const int32_t *ops);
int32_t sy_gte(sy_module *m, int32_t t, sy_shape s, int index);
int32_t sy_slice(sy_module *m, int32_t x, const int64_t *start, const int64_t *limit);
/* Slice of `sizes` at run-time offsets idx[0..rank) (scalars). */
int32_t sy_dynamic_slice(sy_module *m, int32_t x, const int32_t *idx, const int64_t *sizes);
int32_t sy_concat(sy_module *m, int32_t a, int32_t b, int dim);
int32_t sy_pad(sy_module *m, int32_t x, int32_t value, const int64_t *lo, const int64_t *hi);
/* Row gather: table [V, H] indexed by s32 ids of shape `ids` -> ids.shape + [H]. */
int32_t sy_gather(sy_module *m, int32_t table, int32_t ids);
int32_t sy_while(sy_module *m, int32_t init, int32_t cond, int32_t body);
/* Patches the tuple arity of a tuple-typed instruction (while-body params). */
void sy_set_ntuple(sy_module *m, int32_t x, int ntuple);

/* Lays out and flattens the module; returns 0, or -1 if out of memory. */
int sy_module_finish(sy_module *m, int32_t entry);

/* ---- reading a finished module ---------------------------------------- */

static inline const int32_t *sy_operands(const sy_module *m, int64_t i) {
    return m->opnd + m->inst[i].opnd0;
}
/* Writes the PC_TPUG_NODE_FEATS node features of instruction i. */
void sy_featurize(const sy_module *m, int64_t i, float *out);
/* Deduplicated, sorted (user, operand) edges incl. called-computation edges;
   `out` may be NULL to count. Returns the edge count, or -1 if out of memory. */
int64_t sy_edges(const sy_module *m, int64_t *out);
/* node_splits as the extractor makes them; `out` holds at most ncomp + 2. */
int sy_node_splits(const sy_module *m, int64_t *out);
/* Row-major minor_to_major of a rank: fills m2m[0 .. rank), rank <= SY_MAX_RANK. */
void sy_row_major(int rank, uint8_t *m2m);

#endif /* PC_SYNTH_HLO_H */
