/*
 * The command's pictures: one small SVG writer (no dependency) that every
 * --svg of the CLI uses (roofline, plot train, eval, rank, plan train, plan
 * serve). The document grows in memory and is written under a temporary
 * name, then renamed into place. Elements carry a class the tests read:
 * "title", "axis", "tick", "grid", "marker", "label", "legend", "bar",
 * "curve", "best" (tests/scripts/test_svg.py).
 */
#ifndef PC_CLI_SVG_H
#define PC_CLI_SVG_H

#include <stddef.h>

typedef struct pc_svg pc_svg;

/* A w x h picture with a white background and `title` on top (NULL when out of memory). */
pc_svg *pc_svg_new(double w, double h, const char *title);
void pc_svg_free(pc_svg *s);
/* Raw markup, printf style. */
void pc_svg_raw(pc_svg *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Text, XML-escaped. */
void pc_svg_esc(pc_svg *s, const char *text);
/* <text class=cls x y attrs>escaped printf text</text>; attrs may be "" */
void pc_svg_text(pc_svg *s, const char *cls, double x, double y, const char *attrs, const char *fmt,
                 ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/*
 * Ends the document and writes it to `path` (a temporary name, then
 * renamed). Frees s. -1 on success, else PC_EXIT_FAIL after printing
 * "perfcast CMD: error: cannot write PATH: why".
 */
int pc_svg_save(pc_svg *s, const char *cmd, const char *path);

/* ---- plots ---- */

typedef struct pc_svg_axis {
    double lo, hi;     /* the range drawn (data units) */
    int log;           /* log10 scale (lo, hi > 0) */
    const char *label; /* axis title */
    const char *unit;  /* tick labels: "s" times (ms, us), else SI prefixes + unit; NULL plain */
    int hide;          /* no ticks nor grid (bars' category axis) */
} pc_svg_axis;

typedef struct pc_svg_plot {
    double left, top, w, h; /* the plot area in picture units */
    pc_svg_axis x, y;
    int id; /* its clip path: "clipN" */
} pc_svg_plot;

/* Widens [lo, hi] to hold v[0..n) (NaN, inf and, on a log axis, v <= 0 ignored). */
void pc_svg_extend(pc_svg_axis *a, const double *v, size_t n);
/* Rounds the range out to tick steps (decades on a log axis), with a margin. */
void pc_svg_nice(pc_svg_axis *a);
/* Picture coordinates of a data value (clamped far outside to stay finite). */
double pc_svg_px(const pc_svg_plot *p, double v);
double pc_svg_py(const pc_svg_plot *p, double v);
/* Grid, ticks and their labels, the frame and both axis titles; defines the clip path. */
void pc_svg_axes(pc_svg *s, pc_svg_plot *p);
/* clip-path="url(#clipN)" for an element inside the plot area */
const char *pc_svg_clip(const pc_svg_plot *p, char *buf, size_t cap);
/* A tick-label style number: "12.5k", "3.2G", "1.5 ms" (unit as pc_svg_axis.unit). */
const char *pc_svg_num(double v, const char *unit, char *buf, size_t cap);

/* Marker shapes. */
typedef enum { PC_SVG_CIRCLE, PC_SVG_SQUARE, PC_SVG_DIAMOND, PC_SVG_STAR } pc_svg_shape;
/* One marker of radius r with a tooltip (title may be NULL); cls "marker" or "best". */
void pc_svg_marker(pc_svg *s, const char *cls, pc_svg_shape shape, double x, double y, double r,
                   const char *fill, const char *stroke, const char *title);
/* A legend box at (x, y): n rows of a swatch and a name. */
void pc_svg_legend(pc_svg *s, double x, double y, int n, const char *const *names,
                   const char *const *colors, const pc_svg_shape *shapes);

/* The colours of a series / bound / part index (a fixed palette). */
const char *pc_svg_color(int i);

#endif
