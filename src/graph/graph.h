/*
 * Graph algorithms on plain arrays (internal): pruning to the neighbourhood of
 * the configurable nodes, linear-chain collapse, and segmentation for Graph
 * Segment Training (contiguous ranges, HLO computations via node_splits,
 * METIS k-way partitions).
 *
 * Conventions:
 *  - Nodes are 0..n-1 with 1 <= n <= INT32_MAX; node ids are int32, edge
 *    counts and edge indices int64.
 *  - edges is edge_index (m, 2) row-major: row [u, v] means "u consumes v"
 *    (v is an operand of u, u a user of v), as in TpuGraphs. edges may be
 *    NULL when m == 0. Endpoints outside [0, n) fail with PC_ERR_RANGE and a
 *    message naming the row.
 *  - Results go into a caller-owned struct whose arrays the call allocates;
 *    release them with the matching *_free (NULL and zeroed structs are
 *    fine). On failure the struct is left zeroed (nothing to free).
 *  - Everything is deterministic and linear in n + m (segment listing uses
 *    counting sorts; per-node operand lists are sorted, which is
 *    O(m log maxdeg)). METIS is serial and seeded.
 */
#ifndef PC_GRAPH_H
#define PC_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/perfcast.h"

/* ---- pruning ------------------------------------------------------------ */

typedef struct pc_prune_opts {
    int hops;            /* k >= 0: keep nodes within k undirected hops of a
                            configurable node (0 = the configurable nodes only) */
    int collapse_chains; /* 1: collapse linear chains after the k-hop step */
} pc_prune_opts;

/* hops = 1, collapse_chains = 0. */
pc_prune_opts pc_prune_opts_default(void);

typedef struct pc_pruned {
    /* counts for reports */
    int32_t n_old;       /* nodes before */
    int64_t m_old;       /* edges before */
    int32_t n_khop;      /* nodes kept by the k-hop step */
    int64_t m_khop;      /* edges with both ends kept by the k-hop step */
    int32_t n_collapsed; /* nodes then removed by chain collapse */
    int64_t m_bridge;    /* edges of `edges` that bridge a collapsed chain */
    int32_t n;           /* nodes after */
    int64_t m;           /* edges after */
    int32_t nc;          /* configurable nodes (same before and after) */
    /* arrays (owned) */
    int32_t *kept;       /* (n) old id of each new node, ascending (new -> old) */
    int32_t *old_to_new; /* (n_old) new id, or -1 for a dropped node */
    int32_t *edges;      /* (m, 2) [u, v] in new ids */
    int32_t *config_ids; /* (nc) new id of config_ids[j], same order as the input */
} pc_pruned;

/*
 * Keeps the configurable nodes and every node within opts->hops hops of one,
 * edges taken in both directions (multi-source BFS), and drops the rest.
 * Kept nodes keep their relative order (kept[] ascending), so a topological
 * order stays topological and node_config_feat (c, nc, 18) needs no change:
 * config_ids[j] is the new id of input config_ids[j].
 *
 * Edges: without chain collapse, the input edges with both ends kept, in
 * input order (duplicates kept). With chain collapse, sorted by (u, v) and
 * unique.
 *
 * Chain collapse (on the graph left by the k-hop step): a node that is not
 * configurable, has exactly one distinct operand and exactly one distinct
 * user there, and no self-loop, is removed; its user is connected to the
 * first non-removed node down the chain (a chain of any length collapses to
 * one bridging edge). Removed nodes pass nothing on: their features are
 * simply dropped. (A cycle made only of such nodes, impossible in an HLO
 * DAG, is kept as it is.)
 *
 * No configurable nodes (nc == 0, e.g. tile graphs): the k-hop step keeps
 * every node (there is nothing to centre on); chain collapse still applies
 * if asked for.
 *
 * config_ids (nc) must be in [0, n) and unique (PC_ERR_RANGE /
 * PC_ERR_INVALID otherwise); it may be NULL when nc == 0. opts may be NULL
 * for the defaults.
 */
pc_status pc_prune_khop(int64_t n, const int32_t *edges, int64_t m, const int32_t *config_ids,
                        int64_t nc, const pc_prune_opts *opts, pc_pruned *out, pc_error *err);
void pc_pruned_free(pc_pruned *p);

/*
 * Maps node_splits of the original graph onto the pruned one: out[i] = the
 * number of kept nodes with old id < splits[i] (so boundaries stay
 * boundaries; out may equal splits). splits must lie in [0, n_old].
 */
pc_status pc_pruned_remap_splits(const pc_pruned *p, const int64_t *splits, int64_t k,
                                 int64_t *out, pc_error *err);

/*
 * One line for reports, e.g.
 *   "nodes 13502 -> 2143 (15.9%), edges 14210 -> 2301 (16.2%), 112 configurable"
 * plus ", 37 collapsed" when chains were collapsed. Returns out.
 */
char *pc_pruned_describe(const pc_pruned *p, char *out, size_t cap);

/* ---- segmentation ------------------------------------------------------- */

typedef enum pc_seg_method {
    PC_SEG_LABELS = 0,  /* pc_segmentation_from_labels */
    PC_SEG_CONTIGUOUS,
    PC_SEG_NODE_SPLITS,
    PC_SEG_METIS
} pc_seg_method;

const char *pc_seg_method_name(pc_seg_method m); /* "labels", "contiguous", ... */

typedef struct pc_segmentation {
    pc_seg_method method;
    int32_t target;        /* requested segment size (0 for labels) */
    int32_t n;             /* nodes */
    int32_t nseg;          /* segments, every one non-empty */
    int32_t min_size, max_size;
    int32_t *seg_of_node;  /* (n) segment of each node, in [0, nseg) */
    int32_t *seg_ptr;      /* (nseg + 1) offsets into seg_nodes; seg_ptr[0] = 0 */
    int32_t *seg_nodes;    /* (n) node ids by segment, ascending within one */
    int64_t m;             /* edges given */
    int64_t n_cross;       /* edges whose ends lie in different segments */
    int64_t *cross;        /* (n_cross) their row indices into edges, ascending;
                              NULL when n_cross == 0 */
} pc_segmentation;

/*
 * Segments are numbered by their smallest node (segment s's first node is
 * below segment s+1's first node), so the result is canonical: equal
 * partitions give equal structs.
 */

/*
 * Any partition: labels (n) with values >= 0 (any ids, gaps allowed); empty
 * label values are dropped and segments renumbered as above.
 */
pc_status pc_segmentation_from_labels(int64_t n, const int32_t *labels, const int32_t *edges,
                                      int64_t m, pc_segmentation *out, pc_error *err);

/*
 * (a) Contiguous node ranges (the dataset's node order is topological):
 * nseg = ceil(n / target) ranges whose sizes differ by at most one, so every
 * segment has between floor(target / 2) and target nodes (a single segment
 * of n nodes when n <= target). target >= 1.
 */
pc_status pc_segment_contiguous(int64_t n, const int32_t *edges, int64_t m, int32_t target,
                                pc_segmentation *out, pc_error *err);

/*
 * (b) HLO computations from node_splits (k boundaries in [0, n],
 * non-decreasing; 0 and n are implied, repeats ignored, k may be 0):
 *  1. The computations are the ranges between consecutive boundaries.
 *  2. Consecutive computations of at most `target` nodes are packed
 *     greedily, in order, while the pack stays <= target nodes.
 *  3. A computation of more than `target` nodes is cut into ceil(size /
 *     target) contiguous ranges of near-equal size (as in (a)).
 *  4. A segment still under min = max(1, target / 4) nodes (a small
 *     computation squeezed between two large segments) is merged into its
 *     smaller neighbour (the previous one on ties).
 * So a computation of <= target nodes is never cut; a cut inside a larger
 * one is at most `target` nodes from the previous cut. Sizes: at least min
 * (unless the whole graph is one segment of n < min nodes) and at most
 * target + 2 * (min - 1) <= 1.5 * target.
 */
pc_status pc_segment_node_splits(int64_t n, const int32_t *edges, int64_t m, const int64_t *splits,
                                 int64_t k, int32_t target, pc_segmentation *out, pc_error *err);

/*
 * (c) METIS_PartGraphKway on the undirected simple graph (edge directions,
 * repeats and self-loops dropped), nparts = ceil(n / target), unit weights,
 * METIS's default 3% imbalance tolerance, METIS_OPTION_SEED = seed (METIS
 * is single-threaded, so a seed gives one result). nparts == 1 and
 * nparts == n are answered without METIS. METIS may leave parts empty
 * (disconnected graphs), so nseg <= nparts. Fails with PC_ERR_RANGE when
 * 2 * m does not fit METIS's idx_t.
 */
pc_status pc_segment_metis(int64_t n, const int32_t *edges, int64_t m, int32_t target, int seed,
                           pc_segmentation *out, pc_error *err);

void pc_segmentation_free(pc_segmentation *s);

#endif /* PC_GRAPH_H */
