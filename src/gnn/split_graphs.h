/*
 * The graphs of a split a process holds, loaded once and kept with their
 * measured runtimes, their model inputs and what scoring them keeps between
 * calls: `perfcast eval` (src/gnn/eval.c) and the trainer (both splits,
 * src/train/train_data.c) share it.
 */
#ifndef PC_GNN_SPLIT_GRAPHS_H
#define PC_GNN_SPLIT_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

#include "gnn/gst.h"
#include "gnn/infer.h"
#include "perfcast/dataset.h"

/* One graph of a split. */
typedef struct pc_split_graph {
    pc_graph *g;
    size_t gi;          /* index of the file in its split (every rank agrees) */
    int64_t c;          /* configs */
    double *rt;         /* (c) measured runtimes */
    double *norm;       /* (c) tile normalizers, NULL for layout */
    pc_gnn_gdata d;     /* the model's input (pc_split_graphs_build) */
    pc_gst_graph *gst;  /* its segments (GST models), with a table when training */
    pc_infer_uniq uniq; /* its distinct configs, filled by the first scoring */
} pc_split_graph;

typedef struct pc_split_graphs {
    pc_split_graph *v;
    size_t n;
} pc_split_graphs;

/* Progress of a load (NULL or fn NULL: none): fn(user, what, graphs loaded, to load). */
typedef struct pc_split_progress {
    pc_progress_fn fn;
    void *user;
    const char *what; /* "graphs loaded" */
} pc_split_progress;

/*
 * Loads the graphs of `split` of collection `coll` whose index i has i % mod
 * in [lo, hi): a rank's share in multi-process runs (mod 1, [0, 1): every
 * graph), in index order, each load within the memory budget `max_memory`
 * (bytes or PC_MEMORY_AUTO, pc_load_opts.max_memory) and each graph
 * validated (pc_graph_validate: one that fails is refused). On failure s
 * holds what was loaded (free it).
 */
pc_status pc_split_graphs_load(const pc_dataset *d, int coll, int split, int threads, size_t mod,
                               size_t lo, size_t hi, uint64_t max_memory, pc_split_graphs *s,
                               const pc_split_progress *pr, pc_error *err);
/*
 * The model's input of every graph; GST models also segment them, with an
 * embedding table for every config when `table` (training) or none.
 */
pc_status pc_split_graphs_build(const pc_gnn *m, pc_split_graphs *s, int table, pc_error *err);
void pc_split_graphs_free(pc_split_graphs *s); /* zeroed sets are fine */

#endif /* PC_GNN_SPLIT_GRAPHS_H */
