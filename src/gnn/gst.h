/*
 * Graph Segment Training (GST; Cao et al., "Learning Large Graph Property
 * Prediction via Graph Segment Training", NeurIPS 2023) for layout graphs.
 *
 * A graph is cut into segments (src/graph/: contiguous ranges, node_splits or
 * METIS). Each segment is run through the model on its own (its induced
 * subgraph: edges between segments are dropped, in training and inference
 * alike) up to the head's input, giving a readout r_s (K, R) = [mean over the
 * segment's nodes || mean over its configurable nodes]. The graph's readout
 * is their weighted mean (weights: nodes, resp. configurable nodes, per
 * segment), and the head scores it.
 *
 * Training step: gradients flow through `train_segs` sampled segments; every
 * other segment's readout comes from the historical embedding table (one
 * entry per graph, config and segment, filled on first use and refreshed
 * whenever the segment is trained), each kept with probability `keep`
 * (stale-embedding dropout; the weights are renormalised over what is kept).
 * Segments without configurable nodes do not depend on the config: one table
 * entry per segment. Inference computes every segment fresh (no table).
 *
 * Memory: one segment's activations for K configs instead of the graph's,
 * plus the table (configs x segments x R floats per graph).
 */
#ifndef PC_MODEL_GST_H
#define PC_MODEL_GST_H

#include "graph/graph.h"
#include "gnn/gnn.h"

typedef struct pc_gst_opts {
    pc_seg_method method; /* PC_SEG_CONTIGUOUS (default), _NODE_SPLITS or _METIS */
    int seg_size;         /* target nodes per segment */
    int train_segs;       /* segments back-propagated per step */
    float keep;           /* keep probability of a stale table embedding */
} pc_gst_opts;

pc_gst_opts pc_gst_opts_default(void);
/* CLI and checkpoint names: "contiguous", "splits", "metis". */
const char *pc_gst_method_name(pc_seg_method m);
int pc_gst_method_find(const char *name); /* -1 if unknown */
/* The segmentation a GST model records (its method and segment size). */
pc_gst_opts pc_gst_opts_of(const pc_gnn *m);

/* One graph cut into segments, with its embedding table. */
typedef struct pc_gst_graph pc_gst_graph;

/*
 * Segments the graph (model kind layout only; d as pc_gnn_gdata_build made
 * it, pruned if the model prunes) and allocates the table for `configs` configs
 * (0: no table, inference only).
 */
pc_status pc_gst_graph_build(const pc_gnn *m, const pc_gnn_gdata *d, const pc_gst_opts *o,
                             int64_t configs, pc_gst_graph **out, pc_error *err);
void pc_gst_graph_free(pc_gst_graph *gg);
int pc_gst_graph_segments(const pc_gst_graph *gg);
int pc_gst_graph_largest(const pc_gst_graph *gg); /* nodes of the largest segment */

/* The table entry of (config, segment): NULL while empty (tests, reports). */
const float *pc_gst_table_entry(const pc_gst_graph *gg, int64_t config, int seg);
/* Nodes and configurable nodes of segment s. */
void pc_gst_segment_size(const pc_gst_graph *gg, int s, int *nodes, int *config_nodes);

/* Workspaces and scratch of GST steps (one per thread of work). */
typedef struct pc_gst_ctx pc_gst_ctx;
pc_gst_ctx *pc_gst_ctx_new(int train_segs);
void pc_gst_ctx_free(pc_gst_ctx *cx);

/*
 * Training forward: scores (K) of configs ids[0..K) whose preprocessed
 * features are cfg (K, nc, D) in the full graph's configurable-node order.
 * rng drives the segment sample and the dropout.
 */
pc_status pc_gst_forward(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const int64_t *ids,
                         const float *cfg, int K, const pc_gst_opts *o, uint64_t *rng,
                         float *scores, pc_error *err);
/* Accumulates gradients for the last pc_gst_forward and refreshes its table rows. */
pc_status pc_gst_backward(pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const float *dscores,
                          pc_error *err);
/*
 * Inference: every segment fresh; readout r (K, R) (may be NULL) and scores.
 * With head_only_train set, also keeps what pc_gnn_head_backward needs (for
 * the head fine-tuning phase) in cx.
 */
pc_status pc_gst_score(const pc_gnn *m, pc_gst_ctx *cx, pc_gst_graph *gg, const float *cfg,
                       int K, float *scores, pc_error *err);
/* Head-only backward after pc_gst_score (fine-tuning phase). */
pc_status pc_gst_head_backward(pc_gnn *m, pc_gst_ctx *cx, const float *dscores,
                               pc_error *err);

#endif /* PC_MODEL_GST_H */
