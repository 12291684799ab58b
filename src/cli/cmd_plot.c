/* perfcast plot: pictures of what other commands wrote (plot train: a --log of train). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "svg.h"

static void plot_help(FILE *f) {
    fprintf(f,
            "usage: perfcast plot train FILE.jsonl --svg OUT.svg [--json]\n\n"
            "Draws the log of 'perfcast train --log FILE.jsonl': the mean training loss of each\n"
            "epoch (top) and the validation metric (bottom; tile score or Kendall tau, higher\n"
            "is better) against the optimizer step, one curve per seed, the best validation\n"
            "round starred. OUT.svg is written under a temporary name, then renamed.\n\n"
            "  --json   one JSON object: kind, file, out, metric, points, series (per seed:\n"
            "           points, best valid and its step; docs/json.md)\n");
}

#define MAX_SERIES 12

typedef struct rec {
    double step, loss, valid;
    int epoch;
} rec;

typedef struct series {
    unsigned long long seed;
    rec *r;
    size_t n, cap;
} series;

typedef struct train_log {
    series s[MAX_SERIES];
    int ns;
    size_t total;
    char metric[32];
} train_log;

static double num_field(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int add_rec(train_log *L, unsigned long long seed, rec r) {
    int k = 0;
    while (k < L->ns && L->s[k].seed != seed) k++;
    if (k == L->ns) {
        if (L->ns == MAX_SERIES) return 0; /* more seeds than curves: the first ones drawn */
        L->s[L->ns++].seed = seed;
    }
    series *s = &L->s[k];
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        rec *nr = realloc(s->r, nc * sizeof *nr);
        if (!nr) return -1;
        s->r = nr, s->cap = nc;
    }
    s->r[s->n++] = r;
    L->total++;
    return 0;
}

/* One line of the log; 0, or -1 after printing what is wrong. */
static int parse_line(train_log *L, const char *path, int lineno, const char *line) {
    cJSON *o = cJSON_Parse(line);
    rec r;
    r.step = num_field(o, "step");
    r.epoch = (int)num_field(o, "epoch");
    r.loss = num_field(o, "loss");
    r.valid = num_field(o, "valid");
    double seed = num_field(o, "seed");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "metric");
    const char *bad = !cJSON_IsObject(o)                ? "a JSON object"
                      : !(r.step >= 0)                  ? "field 'step', a number >= 0"
                      : !(num_field(o, "epoch") >= 0)   ? "field 'epoch', a number >= 0"
                      : !cJSON_HasObjectItem(o, "loss") ? "field 'loss', a number or null"
                                                        : NULL;
    if (!bad && cJSON_IsString(m) && !L->metric[0])
        snprintf(L->metric, sizeof L->metric, "%s", m->valuestring);
    cJSON_Delete(o);
    if (bad) {
        fprintf(stderr,
                "perfcast plot: error: %s: line %d: expected %s (a line of perfcast train "
                "--log)\n",
                path, lineno, bad);
        return -1;
    }
    if (add_rec(L, isfinite(seed) && seed >= 0 ? (unsigned long long)seed : 0, r)) {
        fprintf(stderr, "perfcast plot: error: out of memory\n");
        return -1;
    }
    return 0;
}

static const char *kind_of(mode_t m) {
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

/* The log opened for reading without ever blocking: a FIFO with no writer would
   block a plain fopen, so O_NONBLOCK, then fstat; only a regular file is read. */
static FILE *open_log(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        fprintf(stderr, "perfcast plot: error: %s: cannot read: %s\n", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        fprintf(stderr, "perfcast plot: error: %s: is %s, expected a regular file (a training "
                "log)\n", path, kind_of(sb.st_mode));
        close(fd);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        fprintf(stderr, "perfcast plot: error: %s: cannot read: %s\n", path, strerror(errno));
        close(fd);
    }
    return f;
}

static int read_log(const char *path, train_log *L) {
    FILE *f = open_log(path);
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    while (!rc && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == (size_t)len) continue;
        rc = parse_line(L, path, lineno, line);
    }
    free(line);
    fclose(f);
    if (!rc && L->total == 0) {
        fprintf(stderr, "perfcast plot: error: %s: no records (train writes one per epoch)\n",
                path);
        rc = -1;
    }
    return rc;
}

/* One panel: y = field (loss or valid) of every series against the step. */
static void panel(pc_svg *s, pc_svg_plot *p, const train_log *L, int valid) {
    for (int k = 0; k < L->ns; k++)
        for (size_t i = 0; i < L->s[k].n; i++) {
            const rec *r = &L->s[k].r[i];
            double v = valid ? r->valid : r->loss;
            pc_svg_extend(&p->x, &r->step, 1);
            pc_svg_extend(&p->y, &v, 1);
        }
    if (!valid && p->y.lo > 0 && p->y.hi / p->y.lo > 30) p->y.log = 1;
    if (!(p->x.lo < p->x.hi)) p->x.lo = 0;
    pc_svg_nice(&p->x);
    pc_svg_nice(&p->y);
    pc_svg_axes(s, p);
    char clip[64], tip[160];
    pc_svg_clip(p, clip, sizeof clip);
    for (int k = 0; k < L->ns; k++) {
        const series *se = &L->s[k];
        pc_svg_raw(s,
                   "<polyline class=\"curve\" %s fill=\"none\" stroke=\"%s\" "
                   "stroke-width=\"1.8\" points=\"",
                   clip, pc_svg_color(k));
        size_t best = se->n;
        for (size_t i = 0; i < se->n; i++) {
            double v = valid ? se->r[i].valid : se->r[i].loss;
            if (!isfinite(v) || (p->y.log && !(v > 0))) continue;
            pc_svg_raw(s, "%.1f,%.1f ", pc_svg_px(p, se->r[i].step), pc_svg_py(p, v));
            if (valid && (best == se->n || v > se->r[best].valid)) best = i;
        }
        pc_svg_raw(s, "\"/>\n");
        for (size_t i = 0; i < se->n; i++) {
            double v = valid ? se->r[i].valid : se->r[i].loss;
            if (!isfinite(v) || (p->y.log && !(v > 0))) continue;
            snprintf(tip, sizeof tip, "seed %llu, epoch %d, step %.0f: %s %.6g", se->seed,
                     se->r[i].epoch, se->r[i].step, valid ? "valid" : "loss", v);
            pc_svg_marker(s, i == best ? "best" : "marker", i == best ? PC_SVG_STAR : PC_SVG_CIRCLE,
                          pc_svg_px(p, se->r[i].step), pc_svg_py(p, v), i == best ? 8 : 2.5,
                          pc_svg_color(k), i == best ? "black" : NULL, tip);
        }
    }
}

/* The --json description of what was drawn. */
static int plot_train_json(const char *path, const char *out, const train_log *L) {
    cJSON *j = cJSON_CreateObject(), *ser = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "kind", "train");
    cJSON_AddStringToObject(j, "file", path);
    cJSON_AddStringToObject(j, "out", out);
    cJSON_AddItemToObject(j, "metric",
                          L->metric[0] ? cJSON_CreateString(L->metric) : cJSON_CreateNull());
    cJSON_AddNumberToObject(j, "points", (double)L->total);
    for (int k = 0; k < L->ns; k++) {
        const series *se = &L->s[k];
        size_t best = se->n;
        for (size_t i = 0; i < se->n; i++)
            if (isfinite(se->r[i].valid) && (best == se->n || se->r[i].valid > se->r[best].valid))
                best = i;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "seed", (double)se->seed);
        cJSON_AddNumberToObject(o, "points", (double)se->n);
        cJSON_AddItemToObject(o, "best_valid",
                              best < se->n ? cJSON_CreateNumber(se->r[best].valid)
                                           : cJSON_CreateNull());
        cJSON_AddItemToObject(o, "best_step",
                              best < se->n ? cJSON_CreateNumber(se->r[best].step)
                                           : cJSON_CreateNull());
        cJSON_AddItemToArray(ser, o);
    }
    cJSON_AddItemToObject(j, "series", ser);
    return pc_cli_json_print(j);
}

static int plot_train(const char *path, const char *out, int json) {
    train_log L;
    memset(&L, 0, sizeof L);
    int rc = read_log(path, &L) ? PC_EXIT_FAIL : -1;
    char title[600], vl[96];
    const char *base = strrchr(path, '/');
    snprintf(title, sizeof title, "Training: %s (%zu validation round%s)", base ? base + 1 : path,
             L.total, L.total == 1 ? "" : "s");
    pc_svg *s = rc < 0 ? pc_svg_new(760, 640, title) : NULL;
    if (rc < 0 && !s) {
        fputs("perfcast plot: error: out of memory\n", stderr);
        rc = PC_EXIT_FAIL;
    }
    if (rc < 0) {
        snprintf(vl, sizeof vl, "valid %s (higher is better)", L.metric[0] ? L.metric : "metric");
        pc_svg_plot p;
        memset(&p, 0, sizeof p);
        p.left = 80, p.top = 50, p.w = 520, p.h = 230;
        p.x = (pc_svg_axis){NAN, NAN, 0, NULL, NULL, 0};
        p.y = (pc_svg_axis){NAN, NAN, 0, "train loss (epoch mean)", NULL, 0};
        panel(s, &p, &L, 0);
        pc_svg_plot q = p;
        q.top = 340;
        q.x = (pc_svg_axis){NAN, NAN, 0, "optimizer step", NULL, 0};
        q.y = (pc_svg_axis){NAN, NAN, 0, vl, NULL, 0};
        panel(s, &q, &L, 1);
        const char *names[MAX_SERIES + 1], *colors[MAX_SERIES + 1];
        char nb[MAX_SERIES][32];
        pc_svg_shape shapes[MAX_SERIES + 1];
        for (int k = 0; k < L.ns; k++) {
            snprintf(nb[k], sizeof nb[k], "seed %llu", L.s[k].seed);
            names[k] = nb[k], colors[k] = pc_svg_color(k), shapes[k] = PC_SVG_SQUARE;
        }
        names[L.ns] = "best valid", colors[L.ns] = "#777", shapes[L.ns] = PC_SVG_STAR;
        pc_svg_legend(s, p.left + p.w + 16, p.top, L.ns + 1, names, colors, shapes);
        rc = pc_svg_save(s, "plot", out);
    }
    if (rc < 0 && json)
        rc = plot_train_json(path, out, &L);
    else if (rc < 0)
        printf("wrote %s\n", out);
    for (int k = 0; k < L.ns; k++) free(L.s[k].r);
    return rc < 0 ? PC_EXIT_OK : rc;
}

int pc_cmd_plot(int argc, char **argv) {
    static const struct option opts[] = {{"svg", required_argument, 0, 's'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    int c, json = 0;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "s:jh", opts, NULL)) != -1) {
        if (c == 's')
            out = optarg;
        else if (c == 'j')
            json = 1;
        else if (c == 'h') {
            plot_help(stdout);
            return PC_EXIT_OK;
        } else
            return pc_cli_usage_error("plot", "unknown option '%s'", argv[optind - 1]);
    }
    if (optind >= argc)
        return pc_cli_usage_error("plot", "what to plot? 'perfcast plot train FILE.jsonl "
                                          "--svg OUT.svg'");
    if (strcmp(argv[optind], "train"))
        return pc_cli_usage_error("plot", "unknown picture '%s' (train)", argv[optind]);
    if (optind + 2 != argc)
        return pc_cli_usage_error("plot", "plot train takes one FILE.jsonl (train --log)");
    if (!out) return pc_cli_usage_error("plot", "--svg OUT.svg is required");
    const char *in[1] = {argv[optind + 1]};
    int rc = pc_cli_check_not_input("plot", "--svg", out, in, 1);
    if (rc < 0) rc = pc_cli_check_out_file("plot", "--svg", out);
    return rc >= 0 ? rc : plot_train(in[0], out, json);
}
