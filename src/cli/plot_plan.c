/* plan train --svg (step breakdown of the top plans) and plan serve --svg (latency vs throughput).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"
#include "plots.h"
#include "svg.h"

/* ---- plan train: one stacked bar per plan ---- */

/* The bars of plan i: its parts left to right, each with a tooltip. */
static void plan_bar(pc_svg *s, const pc_svg_plot *p, const pc_plot_plan *pl, int i, double y,
                     double bh) {
    double x0 = 0;
    char tip[160], t[32];
    for (int k = 0; k < PC_PART_COUNT; k++) {
        double v = pl->part[k];
        if (!(v > 0)) continue;
        double a = pc_svg_px(p, x0), b = pc_svg_px(p, x0 + v);
        snprintf(tip, sizeof tip, "plan %d: %s %s (%.1f%% of the step)", i + 1,
                 pc_plan_part_name((pc_plan_part)k), pc_acli_time(v, t, sizeof t),
                 pl->step > 0 ? 100 * v / pl->step : 0);
        pc_svg_raw(s,
                   "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                   "fill=\"%s\"><title>",
                   a, y, b - a, bh, pc_svg_color(k));
        pc_svg_esc(s, tip);
        pc_svg_raw(s, "</title></rect>\n");
        x0 += v;
    }
    if (pl->calibrated > 0) {
        double cx = pc_svg_px(p, pl->calibrated);
        snprintf(tip, sizeof tip, "plan %d: calibrated step %s", i + 1,
                 pc_acli_time(pl->calibrated, t, sizeof t));
        pc_svg_raw(s,
                   "<line class=\"best\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"#000\" stroke-width=\"2.5\"><title>",
                   cx, y - 4, cx, y + bh + 4);
        pc_svg_esc(s, tip);
        pc_svg_raw(s, "</title></line>\n");
    }
    pc_svg_text(s, "label", p->left - 8, y + bh / 2 + 4, "text-anchor=\"end\"", "%d. %s", i + 1,
                pl->label);
}

int pc_plot_train_plans(const char *path, const char *title, const pc_plot_plan *pl, int n) {
    double bh = 22, gap = 12, W = 980, H = 60 + n * (bh + gap) + 110;
    pc_svg *s = pc_svg_new(W, H, title);
    if (!s) return fputs("perfcast plan train: error: out of memory\n", stderr), PC_EXIT_FAIL;
    pc_svg_plot p;
    memset(&p, 0, sizeof p);
    p.left = 380, p.top = 50, p.w = 560, p.h = n * (bh + gap) + gap;
    p.x = (pc_svg_axis){0,
                        0,
                        0,
                        "time per step: the ideal roofline's exposed parts (bars), "
                        "the calibrated step (black line)",
                        "s",
                        0};
    p.y = (pc_svg_axis){0, 1, 0, NULL, NULL, 1}; /* the plans: no ticks */
    int used[PC_PART_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        double v[2] = {pl[i].step, pl[i].calibrated};
        pc_svg_extend(&p.x, v, 2);
        for (int k = 0; k < PC_PART_COUNT; k++) used[k] |= pl[i].part[k] > 0;
    }
    pc_svg_nice(&p.x);
    pc_svg_axes(s, &p);
    for (int i = 0; i < n; i++) plan_bar(s, &p, &pl[i], i, p.top + gap + i * (bh + gap), bh);
    const char *names[PC_PART_COUNT + 1], *colors[PC_PART_COUNT + 1];
    int nl = 0;
    for (int k = 0; k < PC_PART_COUNT; k++)
        if (used[k]) names[nl] = pc_plan_part_name((pc_plan_part)k), colors[nl++] = pc_svg_color(k);
    names[nl] = "calibrated step", colors[nl++] = "#000";
    /* the legend in one row under the axis title */
    double lx = p.left, ly = p.top + p.h + 46;
    pc_svg_raw(s, "<g class=\"legend\">\n");
    for (int k = 0; k < nl; k++) {
        double w = 26 + 6.5 * (double)strlen(names[k]);
        if (lx + w > W - 10) lx = p.left, ly += 18;
        pc_svg_raw(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>\n", lx,
                   ly, colors[k]);
        pc_svg_text(s, "legend", lx + 14, ly + 9, "", "%s", names[k]);
        lx += w;
    }
    pc_svg_raw(s, "</g>\n");
    return pc_svg_save(s, "plan train", path);
}

/* ---- plan serve: decode latency against throughput ---- */

int pc_plot_serve(const char *path, const char *title, const pc_plot_serve_ctx *c, int n) {
    pc_svg *s = pc_svg_new(860, 50 + 400 + 60 + 16.0 * (n + 1) + 16, title);
    if (!s) return fputs("perfcast plan serve: error: out of memory\n", stderr), PC_EXIT_FAIL;
    pc_svg_plot p;
    memset(&p, 0, sizeof p);
    p.left = 90, p.top = 50, p.w = 560, p.h = 400;
    p.x = (pc_svg_axis){NAN, NAN, 1, "decode throughput (tokens/s per chip)", "", 0};
    p.y = (pc_svg_axis){NAN, NAN, 1, "decode step = time per output token", "s", 0};
    for (int k = 0; k < n; k++) {
        pc_svg_extend(&p.x, c[k].tok_s_chip, (size_t)c[k].n);
        pc_svg_extend(&p.y, c[k].latency, (size_t)c[k].n);
    }
    pc_svg_nice(&p.x);
    pc_svg_nice(&p.y);
    pc_svg_axes(s, &p);
    char clip[64], tip[200], t[32];
    pc_svg_clip(&p, clip, sizeof clip);
    const char *names[18], *colors[18];
    char nb[16][112];
    pc_svg_shape shapes[18];
    for (int k = 0; k < n; k++) {
        const pc_plot_serve_ctx *x = &c[k];
        pc_svg_raw(s,
                   "<polyline class=\"curve\" %s fill=\"none\" stroke=\"%s\" "
                   "stroke-width=\"1.8\" points=\"",
                   clip, pc_svg_color(k));
        for (int i = 0; i < x->n; i++)
            pc_svg_raw(s, "%.1f,%.1f ", pc_svg_px(&p, x->tok_s_chip[i]),
                       pc_svg_py(&p, x->latency[i]));
        pc_svg_raw(s, "\"/>\n");
        for (int i = 0; i < x->n; i++) {
            double px = pc_svg_px(&p, x->tok_s_chip[i]), py = pc_svg_py(&p, x->latency[i]);
            snprintf(tip, sizeof tip, "context %.0f, batch %.0f: %s per token, %.4g tokens/s/chip",
                     x->context, x->batch[i], pc_acli_time(x->latency[i], t, sizeof t),
                     x->tok_s_chip[i]);
            pc_svg_marker(s, "marker", PC_SVG_CIRCLE, px, py, 3.5, pc_svg_color(k), NULL, tip);
            pc_svg_text(s, "label", px + 5, py - 5, "font-size=\"9\" fill=\"#555\"", "%.0f",
                        x->batch[i]);
        }
        if (x->cross_batch > 0 && isfinite(x->cross_latency)) {
            snprintf(tip, sizeof tip, "context %.0f: KV cache = weights at batch %.0f", x->context,
                     x->cross_batch);
            pc_svg_marker(s, "best", PC_SVG_DIAMOND, pc_svg_px(&p, x->cross_tok_s_chip),
                          pc_svg_py(&p, x->cross_latency), 8, "white", pc_svg_color(k), tip);
        }
        if (x->cross_batch > (double)x->max_batch)
            snprintf(nb[k], sizeof nb[k],
                     "context %.0f (KV = weights at batch %.0f: beyond "
                     "the largest that fits, %lld)",
                     x->context, x->cross_batch, (long long)x->max_batch);
        else
            snprintf(nb[k], sizeof nb[k], "context %.0f (KV = weights at batch %.0f)", x->context,
                     x->cross_batch);
        if (!(x->cross_batch > 0)) snprintf(nb[k], sizeof nb[k], "context %.0f", x->context);
        names[k] = nb[k], colors[k] = pc_svg_color(k), shapes[k] = PC_SVG_CIRCLE;
    }
    names[n] = "KV cache = weights", colors[n] = "#444", shapes[n] = PC_SVG_DIAMOND;
    pc_svg_legend(s, p.left, p.top + p.h + 44, n + 1, names, colors, shapes);
    pc_svg_text(s, "note", p.left + p.w + 10, p.top + 12, "font-size=\"10\"",
                "numbers: batch size");
    return pc_svg_save(s, "plan serve", path);
}
