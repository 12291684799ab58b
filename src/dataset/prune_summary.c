/*
 * pc_graph_prune_summary: the public face of pruning for reports (perfcast/prune.h).
 * It lives with the graphs it reads: graph/ prunes plain edge arrays and knows
 * nothing of pc_graph (CONTRIBUTING.md, layering).
 */
#include <string.h>

#include "common/util.h"
#include "graph/graph.h"
#include "perfcast/prune.h"

pc_status pc_graph_prune_summary(const pc_graph *g, int hops, int collapse_chains,
                                 pc_prune_summary *out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pc_graph_prune_summary: NULL output");
    if (PC_CHECK_RESULT_SIZE(err, pc_prune_summary, out)) return PC_ERR_ARG;
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    pc_prune_opts po = pc_prune_opts_default();
    po.hops = hops;
    po.collapse_chains = collapse_chains;
    pc_pruned p;
    pc_status st = pc_prune_khop(pc_graph_num_nodes(g), pc_graph_edge_index(g),
                                 pc_graph_num_edges(g), pc_graph_node_config_ids(g),
                                 pc_graph_num_config_nodes(g), &po, &p, err);
    if (st) return st;
    out->nodes = p.n_old;
    out->edges = p.m_old;
    out->nodes_after = p.n;
    out->edges_after = p.m;
    out->config_nodes = p.nc;
    out->collapsed = p.n_collapsed;
    pc_pruned_free(&p);
    return PC_OK;
}
