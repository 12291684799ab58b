/*
 * What pruning would keep of a layout graph: the configurable nodes and their
 * k-hop neighbourhood (edges in both directions), optionally with linear
 * chains collapsed; the same rule `perfcast train --prune-hops` applies
 * (src/graph/graph.h documents the details). Used by `perfcast stats
 * --prune-hops K` to report the reduction per graph.
 */
#ifndef PERFCAST_PRUNE_H
#define PERFCAST_PRUNE_H

#include "perfcast/dataset.h"
#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The caller sets struct_size = sizeof(pc_prune_summary) before the call. */
typedef struct pc_prune_summary {
    size_t struct_size;
    int64_t nodes, edges;             /* before */
    int64_t nodes_after, edges_after; /* after */
    int64_t config_nodes;
    int64_t collapsed;                /* nodes removed by chain collapse */
} pc_prune_summary;

/* g: a loaded graph (layout; a tile graph keeps every node). hops >= 0. */
PC_API pc_status pc_graph_prune_summary(const pc_graph *g, int hops, int collapse_chains,
                                        pc_prune_summary *out, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_PRUNE_H */
