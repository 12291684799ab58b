/* The command's pictures: a small SVG writer (see svg.h). */
#define _GNU_SOURCE
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct pc_svg {
    char *buf;
    size_t len, cap;
    int oom;
    int clips; /* clip paths defined */
};

static void put(pc_svg *s, const char *p, size_t n) {
    if (s->oom) return;
    if (s->len + n + 1 > s->cap) {
        size_t nc = s->cap ? s->cap : 4096;
        while (nc < s->len + n + 1) nc *= 2;
        char *b = realloc(s->buf, nc);
        if (!b) {
            s->oom = 1;
            return;
        }
        s->buf = b, s->cap = nc;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = 0;
}

static void vraw(pc_svg *s, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;
static void vraw(pc_svg *s, const char *fmt, va_list ap) {
    char small[512];
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(small, sizeof small, fmt, cp);
    va_end(cp);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        put(s, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        s->oom = 1;
        return;
    }
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    put(s, big, (size_t)n);
    free(big);
}

void pc_svg_raw(pc_svg *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vraw(s, fmt, ap);
    va_end(ap);
}

void pc_svg_esc(pc_svg *s, const char *t) {
    for (; t && *t; t++) {
        switch (*t) {
        case '<': put(s, "&lt;", 4); break;
        case '>': put(s, "&gt;", 4); break;
        case '&': put(s, "&amp;", 5); break;
        case '"': put(s, "&quot;", 6); break;
        default:
            if ((unsigned char)*t >= 0x20 || *t == '\t') put(s, t, 1);
        }
    }
}

void pc_svg_text(pc_svg *s, const char *cls, double x, double y, const char *attrs, const char *fmt,
                 ...) {
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    pc_svg_raw(s, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\"%s%s>", cls, x, y, *attrs ? " " : "",
               attrs);
    pc_svg_esc(s, small);
    put(s, "</text>\n", 8);
}

pc_svg *pc_svg_new(double w, double h, const char *title) {
    pc_svg *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pc_svg_raw(s,
               "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
               "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n",
               w, h, w, h, w, h);
    if (title)
        pc_svg_text(s, "title", w / 2, 22, "text-anchor=\"middle\" font-size=\"14\"", "%s", title);
    if (s->oom) {
        pc_svg_free(s);
        return NULL;
    }
    return s;
}

void pc_svg_free(pc_svg *s) {
    if (!s) return;
    free(s->buf);
    free(s);
}

int pc_svg_save(pc_svg *s, const char *cmd, const char *path) {
    put(s, "</svg>\n", 7);
    const char *why = NULL;
    char *tmp = NULL;
    if (s->oom || asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0) {
        tmp = NULL;
        why = "out of memory";
    }
    FILE *f = why ? NULL : fopen(tmp, "wb");
    if (!why && !f) why = strerror(errno);
    if (f) {
        int bad = fwrite(s->buf, 1, s->len, f) != s->len;
        if (fclose(f) != 0 || bad)
            why = strerror(errno ? errno : EIO);
        else if (rename(tmp, path) != 0)
            why = strerror(errno);
        if (why) unlink(tmp);
    }
    free(tmp);
    pc_svg_free(s);
    if (!why) return -1;
    fprintf(stderr, "perfcast %s: error: cannot write %s: %s\n", cmd, path, why);
    return PC_EXIT_FAIL;
}

/* ---- plots ---- */

void pc_svg_extend(pc_svg_axis *a, const double *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]) || (a->log && !(v[i] > 0))) continue;
        if (!(a->lo <= a->hi)) { /* empty: NaN bounds */
            a->lo = a->hi = v[i];
            continue;
        }
        if (v[i] < a->lo) a->lo = v[i];
        if (v[i] > a->hi) a->hi = v[i];
    }
}

/* A 1-2-5 step giving about `want` intervals over span. */
static double nice_step(double span, int want) {
    double raw = span / want, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

void pc_svg_nice(pc_svg_axis *a) {
    if (!(a->lo <= a->hi) || !isfinite(a->lo) || !isfinite(a->hi))
        a->lo = a->log ? 1 : 0, a->hi = a->log ? 10 : 1;
    if (a->log) {
        double l0 = floor(log10(a->lo)), l1 = ceil(log10(a->hi));
        if (l1 <= l0) l1 = l0 + 1;
        if (l1 - l0 > 18) l0 = l1 - 18;
        a->lo = pow(10, l0), a->hi = pow(10, l1);
        return;
    }
    if (a->hi == a->lo) {
        double d = a->lo != 0 ? fabs(a->lo) * 0.1 : 1;
        a->lo -= d, a->hi += d;
    }
    double st = nice_step(a->hi - a->lo, 6);
    a->lo = floor(a->lo / st) * st;
    a->hi = ceil(a->hi / st) * st;
}

static double frac(const pc_svg_axis *a, double v) {
    double f = a->log ? (log10(v > 0 ? v : 1e-300) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                      : (v - a->lo) / (a->hi - a->lo);
    if (!isfinite(f)) f = 0;
    return f < -10 ? -10 : f > 10 ? 10 : f;
}

double pc_svg_px(const pc_svg_plot *p, double v) { return p->left + frac(&p->x, v) * p->w; }
double pc_svg_py(const pc_svg_plot *p, double v) { return p->top + p->h - frac(&p->y, v) * p->h; }

const char *pc_svg_clip(const pc_svg_plot *p, char *buf, size_t cap) {
    snprintf(buf, cap, "clip-path=\"url(#clip%d)\"", p->id);
    return buf;
}

const char *pc_svg_num(double v, const char *unit, char *buf, size_t cap) {
    if (v == 0) {
        snprintf(buf, cap, "0");
        return buf;
    }
    double a = fabs(v);
    if (unit && !strcmp(unit, "s")) {
        static const struct {
            double f;
            const char *u;
        } t[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
        size_t k = 0;
        while (k + 1 < sizeof t / sizeof t[0] && a < t[k].f * 0.9999) k++;
        snprintf(buf, cap, "%.3g %s", v / t[k].f, t[k].u);
        return buf;
    }
    static const char *const pre[] = {"", "k", "M", "G", "T", "P", "E"};
    int k = 0;
    while (k < 6 && a >= 999.5) a /= 1000, k++;
    if (unit || k)
        snprintf(buf, cap, "%.3g%s%s%s", v < 0 ? -a : a, pre[k], unit && *unit ? " " : "",
                 unit ? unit : "");
    else if (a < 1e-3)
        snprintf(buf, cap, "%.2g", v);
    else
        snprintf(buf, cap, "%.4g", v);
    return buf;
}

/* The ticks of an axis into t[] (at most cap); their count. */
static int ticks(const pc_svg_axis *a, double *t, int cap) {
    int n = 0;
    if (a->log) {
        double l0 = ceil(log10(a->lo) - 1e-9), l1 = floor(log10(a->hi) + 1e-9);
        int step = (int)ceil((l1 - l0 + 1) / 9);
        if (step < 1) step = 1;
        for (double e = l0; e <= l1 && n < cap; e += step) t[n++] = pow(10, e);
        if (l1 - l0 <= 1) /* a decade or less: 2 and 5 too */
            for (double e = floor(log10(a->lo)); e <= l1 && n + 2 <= cap; e++)
                for (int m = 2; m <= 5; m += 3)
                    if (m * pow(10, e) > a->lo && m * pow(10, e) < a->hi) t[n++] = m * pow(10, e);
        return n;
    }
    double st = nice_step(a->hi - a->lo, 6);
    for (double v = ceil(a->lo / st - 1e-9) * st; v <= a->hi + st * 1e-9 && n < cap; v += st)
        t[n++] = fabs(v) < st * 1e-9 ? 0 : v;
    return n;
}

void pc_svg_axes(pc_svg *s, pc_svg_plot *p) {
    double t[32];
    char b[48];
    p->id = ++s->clips;
    pc_svg_raw(s,
               "<defs><clipPath id=\"clip%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\"/></clipPath></defs>\n",
               p->id, p->left, p->top, p->w, p->h);
    int n = p->x.hide ? 0 : ticks(&p->x, t, 32);
    for (int i = 0; i < n; i++) {
        double x = pc_svg_px(p, t[i]);
        pc_svg_raw(s,
                   "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"#e4e4e4\"/>\n",
                   x, p->top, x, p->top + p->h);
        pc_svg_text(s, "tick", x, p->top + p->h + 14, "text-anchor=\"middle\"", "%s",
                    pc_svg_num(t[i], p->x.unit, b, sizeof b));
    }
    n = p->y.hide ? 0 : ticks(&p->y, t, 32);
    for (int i = 0; i < n; i++) {
        double y = pc_svg_py(p, t[i]);
        pc_svg_raw(s,
                   "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"#e4e4e4\"/>\n",
                   p->left, y, p->left + p->w, y);
        pc_svg_text(s, "tick", p->left - 5, y + 4, "text-anchor=\"end\"", "%s",
                    pc_svg_num(t[i], p->y.unit, b, sizeof b));
    }
    pc_svg_raw(s,
               "<rect class=\"axis\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
               "fill=\"none\" stroke=\"#333\"/>\n",
               p->left, p->top, p->w, p->h);
    if (p->x.label)
        pc_svg_text(s, "axis", p->left + p->w / 2, p->top + p->h + 32, "text-anchor=\"middle\"",
                    "%s", p->x.label);
    if (p->y.label) {
        char at[96];
        double cy = p->top + p->h / 2, cx = p->left - 52;
        snprintf(at, sizeof at, "text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\"", cx,
                 cy);
        pc_svg_text(s, "axis", cx, cy, at, "%s", p->y.label);
    }
}

void pc_svg_marker(pc_svg *s, const char *cls, pc_svg_shape shape, double x, double y, double r,
                   const char *fill, const char *stroke, const char *title) {
    const char *st = stroke ? stroke : "none";
    switch (shape) {
    case PC_SVG_SQUARE:
        pc_svg_raw(s,
                   "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                   "fill=\"%s\" stroke=\"%s\">",
                   cls, x - r, y - r, 2 * r, 2 * r, fill, st);
        break;
    case PC_SVG_DIAMOND:
        pc_svg_raw(s,
                   "<polygon class=\"%s\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" "
                   "fill=\"%s\" stroke=\"%s\">",
                   cls, x, y - r, x + r, y, x, y + r, x - r, y, fill, st);
        break;
    case PC_SVG_STAR: {
        pc_svg_raw(s, "<polygon class=\"%s\" points=\"", cls);
        for (int k = 0; k < 10; k++) {
            double a = -M_PI / 2 + k * M_PI / 5, rr = k % 2 ? r * 0.45 : r;
            pc_svg_raw(s, "%s%.1f,%.1f", k ? " " : "", x + rr * cos(a), y + rr * sin(a));
        }
        pc_svg_raw(s, "\" fill=\"%s\" stroke=\"%s\">", fill, st);
        break;
    }
    default:
        pc_svg_raw(s,
                   "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" "
                   "stroke=\"%s\">",
                   cls, x, y, r, fill, st);
    }
    if (title) {
        put(s, "<title>", 7);
        pc_svg_esc(s, title);
        put(s, "</title>", 8);
    }
    pc_svg_raw(s, "</%s>\n",
               shape == PC_SVG_CIRCLE   ? "circle"
               : shape == PC_SVG_SQUARE ? "rect"
                                        : "polygon");
}

void pc_svg_legend(pc_svg *s, double x, double y, int n, const char *const *names,
                   const char *const *colors, const pc_svg_shape *shapes) {
    double w = 0;
    for (int i = 0; i < n; i++) {
        double l = 6.2 * (double)strlen(names[i]);
        if (l > w) w = l;
    }
    pc_svg_raw(s,
               "<g class=\"legend\">\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#bbb\"/>\n",
               x, y, w + 30, 16.0 * n + 6);
    for (int i = 0; i < n; i++) {
        double cy = y + 11 + 16.0 * i;
        pc_svg_marker(s, "swatch", shapes ? shapes[i] : PC_SVG_SQUARE, x + 10, cy, 5, colors[i],
                      NULL, NULL);
        pc_svg_text(s, "legend", x + 20, cy + 4, "", "%s", names[i]);
    }
    put(s, "</g>\n", 5);
}

const char *pc_svg_color(int i) {
    static const char *const pal[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                      "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                      "#bcbd22", "#17becf", "#393b79", "#ad494a"};
    return pal[(i < 0 ? -i : i) % (int)(sizeof pal / sizeof pal[0])];
}
