/*
 * The architecture choices of the GNN cost models (src/gnn/): how node
 * embeddings are pooled, where the configuration features join the graph,
 * the activation, the feature encodings and how Graph Segment Training cuts
 * a graph. pc_train_opts (perfcast/train.h) takes them; a checkpoint records
 * them by the names below.
 *
 * Every enum has a _COUNT (the number of concrete values, 0 .. _COUNT - 1),
 * pc_<enum>_name(value) (NULL for a value outside the enum) and
 * pc_<enum>_parse(name, &value) (PC_ERR_ARG for an unknown name; the value is
 * then left alone). A value `_AUTO` (outside 0 .. _COUNT - 1) stands for "the
 * collection's default" and is resolved when training starts.
 */
#ifndef PERFCAST_GNN_H
#define PERFCAST_GNN_H

#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Size limits of a model, checked when one is built (training options) and
 * when a checkpoint is read, before anything is allocated: a checkpoint's
 * metadata cannot ask for more than these, nor for more parameters than
 * its tensors hold.
 */
#define PC_GNN_MAX_HIDDEN 8192   /* hidden width */
#define PC_GNN_MAX_LAYERS 256    /* message-passing layers */
#define PC_GNN_MAX_EMB 1024      /* opcode embedding width */
#define PC_GNN_MAX_OPCODES 65536 /* opcode vocabulary */
#define PC_GNN_MAX_FEATURES 65536 /* node or configuration feature columns */

/* Graph readout: how node embeddings become one vector. */
typedef enum pc_pool {
    PC_POOL_MEAN = 0, /* "mean" */
    PC_POOL_MAX,      /* "max" */
    PC_POOL_SUM,      /* "sum" */
    PC_POOL_MEANMAX,  /* "meanmax": mean and max concatenated */
    PC_POOL_COUNT
} pc_pool;
PC_API const char *pc_pool_name(pc_pool p);
PC_API pc_status pc_pool_parse(const char *name, pc_pool *out);

/*
 * Where the configuration features meet the graph: "early" (they enter the
 * GNN's input; one GNN pass per configuration) or "late" (one GNN pass per
 * graph; configurations meet the pooled graph (tile) or the configurable
 * nodes' embeddings (layout): much faster ranking of many configurations).
 */
typedef enum pc_join {
    PC_JOIN_AUTO = -1, /* "auto": tile early, layout late */
    PC_JOIN_EARLY = 0, /* "early" */
    PC_JOIN_LATE,      /* "late" */
    PC_JOIN_COUNT
} pc_join;
PC_API const char *pc_join_name(pc_join j);
PC_API pc_status pc_join_parse(const char *name, pc_join *out);

typedef enum pc_act {
    PC_ACT_LEAKY_RELU = 0, /* "leaky_relu" (slope 0.01) */
    PC_ACT_RELU,           /* "relu" */
    PC_ACT_GELU,           /* "gelu" */
    PC_ACT_COUNT
} pc_act;
PC_API const char *pc_act_name(pc_act a);
PC_API pc_status pc_act_parse(const char *name, pc_act *out);

/* How Graph Segment Training cuts a layout graph into segments. */
typedef enum pc_segments {
    PC_SEGMENTS_CONTIGUOUS = 0, /* "contiguous": runs of node ids */
    PC_SEGMENTS_SPLITS,         /* "splits": the graph's node_splits */
    PC_SEGMENTS_METIS,          /* "metis": METIS partitions */
    PC_SEGMENTS_COUNT
} pc_segments;
PC_API const char *pc_segments_name(pc_segments s);
PC_API pc_status pc_segments_parse(const char *name, pc_segments *out);

/*
 * Feature encodings before the preprocessing, a bitmask (a checkpoint records
 * the bits as its "encode" number): -1 for absent dimensions, log2 / mod 128 /
 * div 128 of dimension sizes, layout indicator columns; and two analytic
 * priors: per-node roofline columns (FLOPs, bytes, arithmetic intensity
 * against TPU v4's critical intensity, roofline time); on layout
 * configs, counts of producer/consumer layout mismatches that force copies;
 * on tile configs, the grid steps ceil(output extent / output tile) per
 * output dimension of the kernel's root, their product and the last tile's
 * fill; and the reduction steps ceil(reduction extent / kernel_bounds tile) of
 * the kernel's last dot or convolution (rsteps).
 */
#define PC_ENCODE_NONE 0u
#define PC_ENCODE_PAD 1u       /* "pad" */
#define PC_ENCODE_DIMS 2u      /* "dims" */
#define PC_ENCODE_LAYOUT 4u    /* "layout" */
#define PC_ENCODE_ALL 7u       /* "all": pad, dims and layout */
#define PC_ENCODE_ROOFLINE 8u  /* "roofline" (not in "all") */
#define PC_ENCODE_MISMATCH 16u /* "mismatch" (not in "all"; layout configs only) */
#define PC_ENCODE_STEPS 32u    /* "steps" (not in "all"; tile configs only) */
#define PC_ENCODE_RSTEPS 64u   /* "rsteps" (not in "all"; tile configs only) */
#define PC_ENCODE_COUNT 7      /* bits */
/* Not an encoding: "the collection's default" (layout all, tile steps,rsteps). */
#define PC_ENCODE_AUTO 0x80000000u
/* The name of one bit ("pad", "dims", "layout", "roofline", "mismatch", "steps",
   "rsteps");
   NULL for anything else. */
PC_API const char *pc_encode_name(unsigned bit);
/* A comma list of pad, dims, layout, roofline, mismatch, steps, rsteps, all, none
   ("pad,dims"; later words add to earlier ones, "none" clears) into *bits;
   PC_ERR_ARG on an unknown word. */
PC_API pc_status pc_encode_parse(const char *list, unsigned *bits);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_GNN_H */
