/* roofline --svg: ops on the chip's roofline, sized by time, coloured by bound. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"
#include "plots.h"
#include "svg.h"

static const char *const bound_color[3] = {"#1f77b4", "#ff7f0e", "#2ca02c"};
static const char *const bound_label[3] = {"compute-bound", "memory-bound", "communication-bound"};

static const char *color_of(pc_bound b) { return bound_color[(unsigned)b < 3 ? b : 0]; }

typedef struct op_ix {
    double time;
    size_t i;
} op_ix;

static int by_time_desc(const void *x, const void *y) {
    const op_ix *a = x, *b = y;
    if (a->time != b->time) return a->time < b->time ? 1 : -1;
    return (a->i > b->i) - (a->i < b->i);
}

static int drawable(const pc_plot_roof_op *o) { return o->intensity > 0 && o->rate > 0; }

/* The plot's ranges: the ops and the roof around the critical intensity. */
static void roof_ranges(pc_svg_plot *p, const pc_plot_roof_chip *chip, double peak,
                        const pc_plot_roof_op *ops, size_t n) {
    double crit = peak / chip->hbm_bw;
    p->x.lo = p->x.hi = crit;
    p->y.lo = p->y.hi = peak;
    for (size_t i = 0; i < n; i++) {
        if (!drawable(&ops[i])) continue;
        pc_svg_extend(&p->x, &ops[i].intensity, 1);
        pc_svg_extend(&p->y, &ops[i].rate, 1);
    }
    p->x.lo /= 3, p->x.hi *= 3;
    p->y.hi *= 2;
    if (p->y.lo > p->x.lo * chip->hbm_bw) p->y.lo = p->x.lo * chip->hbm_bw;
    pc_svg_nice(&p->x);
    pc_svg_nice(&p->y);
    if (log10(p->y.hi) - log10(p->y.lo) > 12) p->y.lo = p->y.hi / 1e12;
}

static void draw_roof(pc_svg *s, const pc_svg_plot *p, const pc_plot_roof_chip *chip, double peak) {
    char clip[64], b[48];
    double crit = peak / chip->hbm_bw, xl = p->x.lo, xr = p->x.hi;
    pc_svg_clip(p, clip, sizeof clip);
    pc_svg_raw(s,
               "<polyline class=\"curve\" %s fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" "
               "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
               clip, pc_svg_px(p, xl), pc_svg_py(p, xl * chip->hbm_bw), pc_svg_px(p, crit),
               pc_svg_py(p, peak), pc_svg_px(p, xr), pc_svg_py(p, peak));
    if (chip->vector_flops > 0 && chip->vector_flops < peak) {
        double vc = chip->vector_flops / chip->hbm_bw;
        pc_svg_raw(s,
                   "<polyline class=\"curve\" %s fill=\"none\" stroke=\"#c0392b\" "
                   "stroke-dasharray=\"4,3\" points=\"%.1f,%.1f %.1f,%.1f\"/>\n",
                   clip, pc_svg_px(p, vc), pc_svg_py(p, chip->vector_flops), pc_svg_px(p, xr),
                   pc_svg_py(p, chip->vector_flops));
    }
    /* the key in the top-left corner: above the memory roof, where no op can be */
    double kx = p->left + 8, ky = p->top + 16;
    pc_svg_raw(s,
               "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
               "stroke-width=\"2\"/>\n",
               kx, ky - 4, kx + 18, ky - 4);
    pc_svg_text(s, "note", kx + 24, ky, "fill=\"#c0392b\"",
                "roof: peak %s, critical intensity %.0f", pc_svg_num(peak, "FLOP/s", b, sizeof b),
                crit);
    if (chip->vector_flops > 0 && chip->vector_flops < peak) {
        pc_svg_raw(s,
                   "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
                   "stroke-dasharray=\"4,3\"/>\n",
                   kx, ky + 12, kx + 18, ky + 12);
        pc_svg_text(s, "note", kx + 24, ky + 16, "fill=\"#c0392b\"",
                    "vector units (non-matmul ops): %s",
                    pc_svg_num(chip->vector_flops, "FLOP/s", b, sizeof b));
    }
}

/* The markers, largest first (small ones stay visible on top); the top ones numbered. */
static void draw_ops(pc_svg *s, const pc_svg_plot *p, const pc_plot_roof_op *ops, const op_ix *ord,
                     size_t n, size_t top, double total) {
    char tip[512], t1[32];
    for (size_t k = 0; k < n; k++) {
        const pc_plot_roof_op *o = &ops[ord[k].i];
        if (!drawable(o)) continue;
        double share = total > 0 ? o->time / total : 0;
        double r = 2.5 + 22 * sqrt(share);
        snprintf(tip, sizeof tip, "%s (%s): %s, %.2f%% of the time, intensity %.4g, %s", o->label,
                 o->kind, pc_acli_time(o->time, t1, sizeof t1), 100 * share, o->intensity,
                 bound_label[(unsigned)o->bound < 3 ? o->bound : 0]);
        pc_svg_marker(s, "marker", PC_SVG_CIRCLE, pc_svg_px(p, o->intensity), pc_svg_py(p, o->rate),
                      r, color_of(o->bound), "white", tip);
    }
    /* numbers beside the top ops; ops drawn at the same spot share one label ("1,3,5") */
    double lx[64], ly[64];
    char txt[64][48];
    int nl = 0;
    for (size_t k = 0; k < top && k < n; k++) {
        const pc_plot_roof_op *o = &ops[ord[k].i];
        if (!drawable(o)) continue;
        double share = total > 0 ? o->time / total : 0;
        double r = 2.5 + 22 * sqrt(share), x = pc_svg_px(p, o->intensity) + r * 0.7 + 2,
               y = pc_svg_py(p, o->rate) - r * 0.7 - 1;
        int j = 0;
        while (j < nl && !(fabs(lx[j] - x) < 10 && fabs(ly[j] - y) < 8)) j++;
        if (j < nl) {
            size_t l = strlen(txt[j]);
            if (l + 8 < sizeof txt[j]) snprintf(txt[j] + l, sizeof txt[j] - l, ",%zu", k + 1);
            continue;
        }
        if (nl == 64) break;
        lx[nl] = x, ly[nl] = y;
        snprintf(txt[nl++], sizeof txt[0], "%zu", k + 1);
    }
    for (int j = 0; j < nl; j++)
        pc_svg_text(s, "label", lx[j], ly[j],
                    "font-size=\"10\" font-weight=\"bold\" stroke=\"white\" stroke-width=\"3\" "
                    "paint-order=\"stroke\"",
                    "%s", txt[j]);
}

/* The side list of the slowest ops: number, share, name. */
static void draw_list(pc_svg *s, double x, double y, const pc_plot_roof_op *ops, const op_ix *ord,
                      size_t top, double total) {
    pc_svg_text(s, "axis", x, y, "font-weight=\"bold\"", "the %zu slowest ops", top);
    for (size_t k = 0; k < top; k++) {
        const pc_plot_roof_op *o = &ops[ord[k].i];
        char name[40];
        snprintf(name, sizeof name, "%s", o->label);
        if (strlen(o->label) > 30) memcpy(name + 27, "...", 4);
        double cy = y + 16 + 15.0 * (double)k;
        pc_svg_marker(s, "swatch", PC_SVG_CIRCLE, x + 4, cy - 4, 4, color_of(o->bound), NULL, NULL);
        pc_svg_text(s, "row", x + 12, cy, "font-size=\"10\"", "%2zu %5.1f%%  %s%s", k + 1,
                    total > 0 ? 100 * o->time / total : 0, name, drawable(o) ? "" : " (no FLOPs)");
    }
}

int pc_plot_roofline(const char *path, const pc_plot_roof_chip *chip, const pc_plot_roof_op *ops,
                     size_t n, size_t top) {
    double peak = chip->peak;
    if (!(peak > 0) || !(chip->hbm_bw > 0)) {
        fprintf(stderr, "perfcast roofline: error: %s: chip %s has no %s FLOP/s rate to plot\n",
                path, chip->name, chip->prec);
        return PC_EXIT_FAIL;
    }
    op_ix *ord = calloc(n + 1, sizeof *ord);
    char title[512], t1[32];
    if (!ord) return fputs("perfcast roofline: error: out of memory\n", stderr), PC_EXIT_FAIL;
    double total = 0, off_time = 0;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        ord[i] = (op_ix){ops[i].time, i};
        total += ops[i].time;
        if (!drawable(&ops[i])) off++, off_time += ops[i].time;
    }
    qsort(ord, n, sizeof *ord, by_time_desc);
    if (top > n) top = n;
    int list = top > 0;
    double W = list ? 1000 : 760, H = 40 + 400 + 130 + (list && top > 24 ? (top - 24) * 15.0 : 0);
    snprintf(title, sizeof title, "Roofline: %s, %s (%zu op%s, %s in all)", chip->full_name,
             chip->prec, n, n == 1 ? "" : "s", pc_acli_time(total, t1, sizeof t1));
    pc_svg *s = pc_svg_new(W, H, title);
    if (!s) {
        free(ord);
        return fputs("perfcast roofline: error: out of memory\n", stderr), PC_EXIT_FAIL;
    }
    pc_svg_plot p;
    memset(&p, 0, sizeof p);
    p.left = 80, p.top = 60, p.w = 620, p.h = 380;
    p.x = (pc_svg_axis){NAN, NAN, 1, "arithmetic intensity (FLOPs/byte)", "", 0};
    p.y = (pc_svg_axis){NAN, NAN, 1, "achieved FLOP/s (FLOPs / roofline time)", "", 0};
    roof_ranges(&p, chip, peak, ops, n);
    pc_svg_axes(s, &p);
    draw_roof(s, &p, chip, peak);
    draw_ops(s, &p, ops, ord, n, top, total);
    double ly = p.top + p.h + 50;
    pc_svg_legend(s, p.left, ly, 3, bound_label, bound_color, NULL);
    pc_svg_text(s, "note", p.left + 170, ly + 12, "", "marker area: share of the module's time");
    if (off)
        pc_svg_text(s, "note", p.left + 170, ly + 28, "",
                    "%zu op%s without FLOPs (%.1f%% of the time) not drawn", off,
                    off == 1 ? "" : "s", total > 0 ? 100 * off_time / total : 0);
    if (list) draw_list(s, p.left + p.w + 20, p.top + 4, ops, ord, top, total);
    free(ord);
    return pc_svg_save(s, "roofline", path);
}
