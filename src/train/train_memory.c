/*
 * perfcast train: the peak-memory estimate. Training logs it up front and
 * refuses above the available RAM or pc_train_opts.max_memory_gib, before any
 * training allocation, instead of meeting the OOM killer (measured against the peak
 * RSS in bench/RESULTS.md, "Memory estimate").
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "train/train_internal.h"

/* The GNN runs once per graph (late join), not once per config. */
static int shared_gnn_of(const pc_gnn_opts *mo) { return mo->join == PC_JOIN_LATE; }

/* MemAvailable from /proc/meminfo in bytes, 0 if unknown. */
static double mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024.0;
}

/* Resident bytes of this process (/proc/self/statm), 0 if unknown. */
static double mem_resident(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    double size = 0, res = 0;
    int ok = fscanf(f, "%lf %lf", &size, &res) == 2;
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return ok && page > 0 ? res * (double)page : 0;
}

/* The arrays of a loaded graph (node_config_feat only when resident). */
static double graph_bytes(const pc_graph *g) {
    double n = (double)pc_graph_num_nodes(g), e = (double)pc_graph_num_edges(g);
    double c = (double)pc_graph_num_configs(g), nc = (double)pc_graph_num_config_nodes(g);
    int64_t ns = 0;
    pc_graph_node_splits(g, &ns);
    double b = n * (double)pc_graph_node_feat_dim(g) * 4 + n * 4 + e * 8 + c * 8 + (double)ns * 8;
    if (pc_graph_kind(g) == PC_KIND_TILE) {
        b += c * (double)pc_graph_config_dim(g) * 4;
        if (pc_graph_runtime_normalizers(g)) b += c * 8;
    } else {
        b += nc * 4;
        b += pc_graph_node_config_feat(g) ? c * nc * PC_LAYOUT_CONFIG_DIM * 4
                                          : 64.0 * 1048576.0; /* streamed in chunks */
    }
    return b;
}

/* What pc_split_graphs_load and _build, and the trainer's targets, add per graph: runtimes,
   targets, model inputs, GST segments + table. */
static double inputs_bytes(const pc_gnn *m, const pc_split_graph *g) {
    const pc_gnn_gdata *d = &g->d;
    double n = d->g.n, c = (double)g->c, e = (double)d->m;
    double b = 4 * c * 8;                                       /* rt, y, norm, by_speed */
    b += n * m->feat_dim * 4 + (2 * (n + 1) + 2 * e) * 4;       /* x, CSR */
    if (d->own_op) b += n * 4 + d->g.nc * 4.0 + e * 8 + d->nsplits * 8.0; /* pruned copies */
    if (g->gst) {
        int S = pc_gst_graph_segments(g->gst);
        double R = pc_gnn_readout_width(m);
        b += n * m->feat_dim * 4 + n * 4 * 2 + (2.0 * (n + S) + 2 * e) * 4; /* segment copies */
        b += c * S * (R * 4 + 1) + S * (R * 4 + 1);             /* table (fills as it is used) */
    }
    return b;
}

/* Scratch of pc_infer_gather_cfg for K configs of g: raw and preprocessed config rows. */
static double cfg_scratch_bytes(const pc_gnn *m, const pc_graph *g, int64_t K) {
    if (m->opts.kind == PC_KIND_TILE)
        return (double)K * ((double)pc_graph_config_dim(g) + m->cfg_dim) * 4;
    return (double)K * (double)pc_graph_num_config_nodes(g) *
           (PC_LAYOUT_CONFIG_DIM + m->cfg_dim) * 4;
}

/* The process itself: code, libraries, OpenBLAS and OpenMP thread buffers (measured). */
#define PROCESS_BASE_BYTES (16.0 * 1048576.0)

/*
 * Buffers grow (by 1.5x at least) as graphs of other sizes come, freeing the
 * old ones. glibc serves buffers under its mmap threshold (at most 32 MiB)
 * from the heap, which keeps freed copies resident: with graphs (or GST
 * segments) of several sizes, measured peaks were 1.1-1.3x the final
 * buffers' sizes. Larger buffers are mmap'ed and returned on free: measured
 * 1-2% above (bench/RESULTS.md, "Memory estimate"). Measured with the
 * per-buffer workspace; the GNN workspace's parts are now mapped directly
 * (src/gnn/gnn_ws.c), which measured at or below it.
 */
#define HEAP_SLACK 1.35
#define MMAP_SLACK 1.05
#define MMAP_THRESHOLD_MAX (32.0 * 1048576.0)

/* Slack for the full-graph workspace of graph g: by the size of one (S*n, H) buffer. */
static double heap_slack(const trainer *t, const pc_split_graph *g) {
    if (!g) return HEAP_SLACK;
    double S = shared_gnn_of(&t->m->opts) ? 1.0 : (double)t->o.configs;
    double buf = S * (double)g->d.g.n * t->m->opts.hidden * sizeof(float);
    return buf < MMAP_THRESHOLD_MAX ? HEAP_SLACK : MMAP_SLACK;
}

typedef struct mem_est {
    double data, inputs, act, total;
    const pc_split_graph *big; /* the train graph whose activations dominate */
} mem_est;

/*
 * Activations of full-graph training: the largest training pass (forward +
 * backward of K configs) and the validation pass in the same workspace
 * (chunks of configs, forward only). *scr: the largest config scratch; *big:
 * the train graph whose pass dominates.
 */
static double full_graph_act(const trainer *t, double *scr, const pc_split_graph **big) {
    const pc_gnn *m = t->m;
    int64_t K = t->o.configs;
    double fwd_train = 0, bwd_train = 0, fwd_valid = 0;
    for (size_t i = 0; i < t->tr.n; i++) {
        const pc_split_graph *g = &t->tr.v[i];
        double fb = pc_gnn_pass_bytes(m, g->d.g.n, g->d.g.nc, K, 1);
        double f = pc_gnn_pass_bytes(m, g->d.g.n, g->d.g.nc, K, 0);
        if (fb > fwd_train + bwd_train) fwd_train = f, bwd_train = fb - f, *big = g;
        double sc = cfg_scratch_bytes(m, g->g, K);
        *scr = sc > *scr ? sc : *scr;
    }
    for (size_t i = 0; i < t->va.n; i++) {
        const pc_split_graph *g = &t->va.v[i];
        int64_t ch = pc_infer_chunk(m, &g->d.g);
        if (ch > g->c) ch = g->c > 0 ? g->c : 1;
        double f = pc_gnn_pass_bytes(m, g->d.g.n, g->d.g.nc, ch, 0);
        fwd_valid = f > fwd_valid ? f : fwd_valid;
        double sc = cfg_scratch_bytes(m, g->g, ch);
        *scr = sc > *scr ? sc : *scr;
    }
    double act = (fwd_train > fwd_valid ? fwd_train : fwd_valid) + bwd_train;
    act *= heap_slack(t, *big);
    return act;
}

/*
 * Activations of Graph Segment Training, by the largest segment: train_segs
 * workspaces with backward, the fresh-segment workspace for K configs, and
 * inference's own context (chunks of 64 configs).
 */
static double gst_act(const trainer *t, double *scr, const pc_split_graph **big) {
    const pc_gnn *m = t->m;
    const pc_split_graphs *sets[2] = {&t->tr, &t->va};
    int64_t K = t->o.configs;
    double fwd_train = 0, fwd_valid = 0;
    int slots = t->o.gst_train_segs > 0 ? t->o.gst_train_segs : 1;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sets[k]->n; i++) {
            const pc_split_graph *g = &sets[k]->v[i];
            int S = pc_gst_graph_segments(g->gst), sn = 0, snc = 0;
            for (int s = 0; s < S; s++) {
                int a, b;
                pc_gst_segment_size(g->gst, s, &a, &b);
                sn = a > sn ? a : sn;
                snc = b > snc ? b : snc;
            }
            double tr = k == 0 ? slots * pc_gnn_pass_bytes(m, sn, snc, K, 1) +
                                     pc_gnn_pass_bytes(m, sn, snc, K, 0) : 0;
            double inf = pc_gnn_pass_bytes(m, sn, snc, pc_infer_chunk_of(m, 64), 0);
            if (tr > fwd_train) fwd_train = tr, *big = g;
            fwd_valid = inf > fwd_valid ? inf : fwd_valid;
            double sc = cfg_scratch_bytes(m, g->g, k == 0 ? K : 64) * 2;
            *scr = sc > *scr ? sc : *scr;
        }
    return HEAP_SLACK * (fwd_train + fwd_valid); /* segment buffers are small */
}

/*
 * Peak resident memory of training, up front: the loaded graphs of both
 * splits, their model inputs (and GST segments and tables), the activations
 * of the largest training pass and of the validation pass, and the process
 * itself.
 */
static mem_est estimate_memory(const trainer *t) {
    mem_est e;
    memset(&e, 0, sizeof e);
    const pc_gnn *m = t->m;
    const pc_split_graphs *sets[2] = {&t->tr, &t->va};
    double scr = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sets[k]->n; i++) {
            const pc_split_graph *g = &sets[k]->v[i];
            e.data += graph_bytes(g->g);
            e.inputs += inputs_bytes(m, g);
        }
    e.act = m->opts.gst ? gst_act(t, &scr, &e.big) : full_graph_act(t, &scr, &e.big);
    /* parameters, gradients, AdamW moments and the best copy */
    e.act += scr + (double)m->params.numel * 4 * 5;
    e.total = e.data + e.inputs + e.act + PROCESS_BASE_BYTES;
    return e;
}

/* "1.23 GiB" or "345.6 MiB". */
static void fmt_bytes(double b, char *buf, size_t n) {
    if (b >= 1073741824.0) snprintf(buf, n, "%.2f GiB", b / 1073741824.0);
    else snprintf(buf, n, "%.1f MiB", b / 1048576.0);
}

/*
 * Logs the estimate and refuses (before any training allocation) when it is
 * above pc_train_opts.max_memory_gib, or above what the machine has available
 * (free memory plus what this process holds already), instead of meeting the OOM killer.
 */
pc_status pc_tr_check_memory(trainer *t, pc_error *err) {
    mem_est e = estimate_memory(t);
    char tot[32], dat[32], inp[32], act[32], lim[32];
    fmt_bytes(e.total, tot, sizeof tot);
    fmt_bytes(e.data, dat, sizeof dat);
    fmt_bytes(e.inputs, inp, sizeof inp);
    fmt_bytes(e.act, act, sizeof act);
    pc_tr_logf(t->log, t->user, "memory: about %s at the peak (data %s, model inputs %s, "
          "activations %s)", tot, dat, inp, act);
    double limit = t->o.max_memory_gib * 1073741824.0;
    if (!(t->o.max_memory_gib > 0)) {
        double avail = mem_available();
        limit = avail > 0 ? avail + mem_resident() : 0;
    }
    if (!(limit > 0) || e.total <= limit) return PC_OK;
    fmt_bytes(limit, lim, sizeof lim);
    const pc_gnn_opts *mo = &t->m->opts;
    const char *big = e.big ? pc_graph_path(e.big->g) : "";
    long long nb = e.big ? (long long)e.big->d.g.n : 0;
    const char *cap =
        t->o.max_memory_gib > 0 ? "allowed by pc_train_opts.max_memory_gib" : "available";
    if (mo->gst)
        return pc_fail(err, PC_ERR_NOMEM, "train: Graph Segment Training needs about %s (data "
                       "%s, model inputs and embedding tables %s, activations %s; largest graph "
                       "%s, %lld nodes), more than the %s %s; use a smaller "
                       "pc_train_opts.seg_size, fewer pc_train_opts.configs or a smaller "
                       "pc_train_opts.hidden", tot, dat, inp, act, big, nb, lim, cap);
    int S = shared_gnn_of(mo) ? 1 : t->o.configs;
    return pc_fail(err, PC_ERR_NOMEM, "train: full-graph training needs about %s (data %s, "
                   "model inputs %s, activations %s for %s: %lld nodes x %d configs x hidden %d, "
                   "%d layers), more than the %s %s; use pc_train_opts.gst (Graph Segment "
                   "Training), pc_train_opts.prune_hops, fewer pc_train_opts.configs or a "
                   "smaller pc_train_opts.hidden", tot, dat, inp, act,
                   big, nb, S, mo->hidden, mo->layers, lim, cap);
}
