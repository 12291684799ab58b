/* eval --svg and rank --svg: predicted score against measured runtime, the true best marked. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perfcast/predict.h"
#include "plots.h"
#include "svg.h"

/* markers per panel (one panel, several): a stride sample beyond, the bests always kept */
#define MAX_POINTS_ONE 600
#define MAX_POINTS_GRID 200

/* The true best (lowest runtime, then lowest index) and the predicted best (lowest score). */
static void bests(const pc_plot_graph *g, size_t *tb, size_t *pb) {
    *tb = *pb = 0;
    for (size_t i = 1; i < g->n; i++) {
        if (g->runtime[i] < g->runtime[*tb]) *tb = i;
        if (g->score[i] < g->score[*pb]) *pb = i;
    }
}

static void draw_panel(pc_svg *s, pc_svg_plot *p, const pc_plot_graph *g, size_t max_points) {
    size_t tb, pb;
    bests(g, &tb, &pb);
    double best = (double)g->runtime[tb];
    if (!(best > 0)) best = 1;
    double hi = 1;
    for (size_t i = 0; i < g->n; i++) {
        double r = (double)g->runtime[i] / best;
        if (r > hi) hi = r;
        pc_svg_extend(&p->x, &g->score[i], 1);
    }
    p->y.lo = 1, p->y.hi = hi;
    p->y.log = hi > 20;
    if (!p->y.log) p->y.lo = 0.95;
    pc_svg_nice(&p->x);
    pc_svg_nice(&p->y);
    pc_svg_axes(s, p);
    size_t stride = g->n > max_points ? (g->n + max_points - 1) / max_points : 1;
    char tip[200];
    for (size_t i = 0; i < g->n; i++) {
        if (i % stride && i != tb && i != pb) continue;
        if (i == tb || i == pb) continue; /* drawn last, on top */
        snprintf(tip, sizeof tip, "config %zu: %.4g, %.3gx", i, g->score[i],
                 (double)g->runtime[i] / best);
        pc_svg_marker(s, "marker", PC_SVG_CIRCLE, pc_svg_px(p, g->score[i]),
                      pc_svg_py(p, (double)g->runtime[i] / best), 2.5, "#1f77b4", NULL, tip);
    }
    snprintf(tip, sizeof tip, "predicted best: config %zu, runtime %.3gx the best", pb,
             (double)g->runtime[pb] / best);
    pc_svg_marker(s, "best", PC_SVG_DIAMOND, pc_svg_px(p, g->score[pb]),
                  pc_svg_py(p, (double)g->runtime[pb] / best), 7, "none", "#000", tip);
    snprintf(tip, sizeof tip, "true best: config %zu, runtime %lld", tb, (long long)g->runtime[tb]);
    pc_svg_marker(s, "best", PC_SVG_STAR, pc_svg_px(p, g->score[tb]), pc_svg_py(p, 1), 8, "#d62728",
                  "#000", tip);
    char name[128];
    size_t fit = (size_t)(p->w / 6.2);
    snprintf(name, sizeof name, "%s", g->name);
    if (fit >= 8 && fit < sizeof name && strlen(name) > fit) memcpy(name + fit - 3, "...", 4);
    pc_svg_text(s, "label", p->left, p->top - 5, "font-size=\"10\"", "%s", name);
    pc_svg_text(s, "note", p->left + p->w - 4, p->top + 12,
                "text-anchor=\"end\" "
                "font-size=\"10\"",
                "%zu configs; predicted best %.3gx", g->n, (double)g->runtime[pb] / best);
}

int pc_plot_rank(const char *cmd, const char *path, const char *title, const pc_plot_graph *g,
                 int ng, int total) {
    if (ng > PC_PLOT_MAX_PANELS) ng = PC_PLOT_MAX_PANELS;
    int cols = ng < 3 ? ng : 3, rows = (ng + cols - 1) / cols;
    double pw = ng == 1 ? 560 : 250, ph = ng == 1 ? 360 : 190, cw = pw + 95, rh = ph + 80;
    char t[600];
    if (total > ng)
        snprintf(t, sizeof t, "%s (the first %d of %d graphs)", title, ng, total);
    else
        snprintf(t, sizeof t, "%s", title);
    pc_svg *s = pc_svg_new(cols * cw + 30, rows * rh + 90, t);
    if (!s) {
        fprintf(stderr, "perfcast %s: error: out of memory\n", cmd);
        return PC_EXIT_FAIL;
    }
    for (int k = 0; k < ng; k++) {
        pc_svg_plot p;
        memset(&p, 0, sizeof p);
        p.left = 90 + (k % cols) * cw, p.top = 60 + (k / cols) * rh, p.w = pw, p.h = ph;
        p.x = (pc_svg_axis){NAN, NAN, 0, "predicted score (lower = predicted faster)", NULL, 0};
        p.y = (pc_svg_axis){NAN, NAN, 0, "runtime / the best", NULL, 0};
        draw_panel(s, &p, &g[k], ng == 1 ? MAX_POINTS_ONE : MAX_POINTS_GRID);
    }
    static const char *const names[3] = {"config", "true best (measured)",
                                         "predicted best (lowest score)"};
    static const char *const colors[3] = {"#1f77b4", "#d62728", "#000"};
    static const pc_svg_shape shapes[3] = {PC_SVG_CIRCLE, PC_SVG_STAR, PC_SVG_DIAMOND};
    pc_svg_legend(s, 90, rows * rh + 40, 3, names, colors, shapes);
    return pc_svg_save(s, cmd, path);
}

/* ---- eval --svg: the first graphs of the split scored again ---- */

typedef struct scored_graph {
    pc_graph *g;
    double *score;
    char name[128];
} scored_graph;

static int score_one(pc_predictor *p, const char *file, int threads, uint64_t max_memory,
                     scored_graph *sg) {
    pc_error e;
    pc_load_opts lo = pc_load_opts_default();
    lo.threads = threads;
    lo.max_memory = max_memory;
    if (pc_graph_load(file, &lo, &sg->g, &e) != PC_OK) return pc_cli_fail(&e);
    int64_t n = pc_graph_num_configs(sg->g);
    const int64_t *rt = pc_graph_config_runtime(sg->g);
    if (n < 1 || !rt) return -2; /* nothing to draw: skipped */
    sg->score = malloc((size_t)n * sizeof *sg->score);
    if (!sg->score) return fputs("perfcast eval: error: out of memory\n", stderr), PC_EXIT_FAIL;
    if (pc_predictor_score(p, sg->g, sg->score, &e) != PC_OK) return pc_cli_fail(&e);
    const char *base = strrchr(file, '/');
    snprintf(sg->name, sizeof sg->name, "%s", base ? base + 1 : file);
    return -1;
}

int pc_plot_eval(const char *model, const char *data, const char *split, int threads, int tta,
                 uint64_t tta_seed, uint64_t max_memory, const char *path) {
    pc_error e;
    pc_predictor *p = NULL;
    pc_dataset *d = NULL;
    if (pc_predictor_load_max(model, threads, max_memory, &p, &e) != PC_OK ||
        pc_predictor_set_tta(p, tta, tta_seed, &e) != PC_OK ||
        pc_dataset_open(data, &d, &e) != PC_OK) {
        pc_predictor_free(p);
        return pc_cli_fail(&e);
    }
    int coll = pc_predictor_collection(p), sp = pc_split_find(split);
    size_t nf = pc_dataset_num_files(d, coll, sp);
    scored_graph sg[PC_PLOT_MAX_PANELS];
    pc_plot_graph pg[PC_PLOT_MAX_PANELS];
    memset(sg, 0, sizeof sg);
    int ng = 0, rc = -1;
    for (size_t i = 0; i < nf && ng < PC_PLOT_MAX_PANELS && rc < 0; i++) {
        rc = score_one(p, pc_dataset_file(d, coll, sp, i), threads, max_memory, &sg[ng]);
        if (rc == -1) {
            pg[ng] = (pc_plot_graph){sg[ng].name, (size_t)pc_graph_num_configs(sg[ng].g),
                                     sg[ng].score, pc_graph_config_runtime(sg[ng].g)};
            ng++;
        } else if (rc == -2) {
            pc_graph_free(sg[ng].g);
            free(sg[ng].score);
            memset(&sg[ng], 0, sizeof sg[ng]);
            rc = -1;
        }
    }
    if (rc < 0 && ng == 0) {
        fprintf(stderr, "perfcast eval: error: --svg: no graph of %s %s has measured runtimes\n",
                pc_collection_name(coll), split);
        rc = PC_EXIT_FAIL;
    }
    if (rc < 0) {
        char title[300];
        snprintf(title, sizeof title, "%s on %s %s: predicted score vs measured runtime",
                 pc_collection_name(coll), split, "split");
        rc = pc_plot_rank("eval", path, title, pg, ng, (int)nf);
    }
    for (int k = 0; k < PC_PLOT_MAX_PANELS; k++) {
        pc_graph_free(sg[k].g);
        free(sg[k].score);
    }
    pc_dataset_close(d);
    pc_predictor_free(p);
    return rc;
}
