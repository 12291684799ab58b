/*
 * The commands' pictures (--svg), drawn with svg.h from plain data the
 * commands gather: one file per picture (plot_roofline.c, plot_rank.c,
 * plot_plan.c, cmd_plot.c). Each returns -1 once the file is written, else
 * an exit code after printing why.
 */
#ifndef PC_CLI_PLOTS_H
#define PC_CLI_PLOTS_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "perfcast/analytic.h"

/* ---- roofline --svg ---- */

typedef struct pc_plot_roof_op {
    const char *label, *kind;
    double intensity; /* FLOPs/byte (0: no FLOPs, not drawn) */
    double rate;      /* achieved FLOP/s */
    double time;      /* roofline seconds */
    pc_bound bound;
} pc_plot_roof_op;

/* The roof: the chip as the roofline query's "plot" describes it. */
typedef struct pc_plot_roof_chip {
    const char *name, *full_name;
    const char *prec;    /* the roof's precision ("bf16") */
    double peak;         /* its FLOP/s */
    double hbm_bw;       /* bytes/s */
    double vector_flops; /* the vector units' FLOP/s (0: unknown) */
} pc_plot_roof_chip;

/* Every op a marker (area ~ its share of the time, colour its bound), the
 * `top` slowest numbered and listed beside the plot. */
int pc_plot_roofline(const char *path, const pc_plot_roof_chip *chip, const pc_plot_roof_op *ops,
                     size_t n, size_t top);

/* ---- eval --svg, rank --svg ---- */

typedef struct pc_plot_graph {
    const char *name;       /* the graph (file stem) */
    size_t n;               /* configs */
    const double *score;    /* predicted, lower = faster */
    const int64_t *runtime; /* measured */
} pc_plot_graph;

/* Predicted score against measured runtime (relative to the graph's best), one
 * panel per graph (at most PC_PLOT_MAX_PANELS; `total` graphs were scored),
 * the true best and the predicted best marked. */
#define PC_PLOT_MAX_PANELS 12
int pc_plot_rank(const char *cmd, const char *path, const char *title, const pc_plot_graph *g,
                 int ng, int total);
/* eval --svg: the first PC_PLOT_MAX_PANELS graphs with runtimes of the split
 * scored by the model (loaded within max_memory, as the graphs), drawn by pc_plot_rank. */
int pc_plot_eval(const char *model, const char *data, const char *split, int threads, int tta,
                 uint64_t tta_seed, uint64_t max_memory, const char *path);

/* ---- plan train --svg ---- */

typedef struct pc_plot_plan {
    char label[96];             /* "fsdp 64 x tensor 4, full remat, m 8" */
    double part[PC_PART_COUNT]; /* exposed seconds per step (ideal) */
    double step, calibrated;    /* ideal and calibrated step (0: none) */
} pc_plot_plan;

/* One stacked bar per plan (the parts of the ideal step), the calibrated
 * step marked on it. */
int pc_plot_train_plans(const char *path, const char *title, const pc_plot_plan *p, int n);

/* ---- plan serve --svg ---- */

typedef struct pc_plot_serve_ctx {
    double context;
    int n;                                         /* points */
    double batch[64], latency[64], tok_s_chip[64]; /* per batch: decode step, tokens/s/chip */
    double cross_batch; /* KV cache bytes = weight bytes at this batch (0: none) */
    double cross_latency, cross_tok_s_chip; /* there (when it fits, else NaN) */
    int64_t max_batch;
} pc_plot_serve_ctx;

/* Decode latency against throughput per chip over the batch sizes, one curve
 * per context, the KV/weights crossover marked. */
int pc_plot_serve(const char *path, const char *title, const pc_plot_serve_ctx *c, int n);

#endif
