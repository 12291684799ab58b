/*
 * The progress line of long commands (cli.h, "progress"): one self-overwriting
 * line on stderr, "perfcast eval: 120/400 graphs scored, 3.1/s, ETA 1m30s",
 * redrawn at most 4 times a second, ended with a newline. Only on a terminal
 * and never under --json: tests and scripts that read stderr see nothing. A
 * `what` of "UNITS; NOTE" is the stage UNITS with NOTE shown after the counts
 * ("perfcast tune: 512/2048 candidates scored, 900/s, ETA 2s; best so far ..."),
 * the note replaced at each update.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define PROGRESS_REDRAW_S 0.25

struct pc_cli_progress {
    const char *cmd;
    char what[64];  /* the stage under way ("" before the first update) */
    char note[128]; /* what the last update said after "; " ("" for none) */
    int64_t done, total;
    double start;     /* when the stage began */
    double last_draw; /* when the line was last drawn */
    int shown;        /* the line of this stage is on the screen, unfinished */
};

/* The progress whose line is on the screen, unfinished (there is one stderr):
   pc_cli_progress_break wipes it before an error message. */
static pc_cli_progress *g_shown;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void pc_cli_duration(double s, char *buf, size_t n) {
    if (!isfinite(s) || s < 0)
        snprintf(buf, n, "?");
    else if (s < 10)
        snprintf(buf, n, "%.1fs", s);
    else if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)s % 3600 / 60);
}

int pc_cli_progress_wanted(void) { return !pc_cli_json_mode() && isatty(STDERR_FILENO); }

pc_cli_progress *pc_cli_progress_new(const char *cmd, int enabled) {
    if (!enabled) return NULL;
    pc_cli_progress *p = calloc(1, sizeof *p);
    if (!p) return NULL; /* no progress line is no failure */
    p->cmd = cmd;
    return p;
}

/* A byte count in decimal units, the total's unit for both counts ("12.3/50.0 MB"). */
static const char *byte_unit(double total, double *div) {
    *div = total >= 1e9 ? 1e9 : total >= 1e6 ? 1e6 : 1e3;
    return *div == 1e9 ? "GB" : *div == 1e6 ? "MB" : "kB";
}

/* Draws the line: the rate and ETA while going on, the elapsed time at the end. A
 * stage "bytes VERB" shows sizes: "12.3/50.0 MB parsed, 20.1 MB/s, ETA 2s". */
static void draw(pc_cli_progress *p, double t, int final) {
    double el = t - p->start, rate = el > 0 ? (double)p->done / el : 0, div = 1;
    char count[64], tail[64] = "", d[32];
    const char *unit = NULL, *what = p->what;
    if (!strncmp(p->what, "bytes ", 6)) {
        unit = byte_unit((double)(p->total > 0 ? p->total : p->done), &div);
        what = p->what + 6;
    }
    if (unit && p->total > 0)
        snprintf(count, sizeof count, "%.1f/%.1f %s", (double)p->done / div,
                 (double)p->total / div, unit);
    else if (unit)
        snprintf(count, sizeof count, "%.1f %s", (double)p->done / div, unit);
    else if (p->total > 0)
        snprintf(count, sizeof count, "%lld/%lld", (long long)p->done, (long long)p->total);
    else
        snprintf(count, sizeof count, "%lld", (long long)p->done);
    if (final) {
        pc_cli_duration(el, d, sizeof d);
        snprintf(tail, sizeof tail, " in %s", d);
    } else if (rate > 0) {
        double r = rate / div; /* div 1 without a unit */
        int n = unit ? snprintf(tail, sizeof tail, ", %.*f %s/s", r < 10 ? 1 : 0, r, unit)
                     : snprintf(tail, sizeof tail, ", %.*f/s", r < 10 ? 1 : 0, r);
        if (p->total > 0 && p->done < p->total && n > 0) {
            pc_cli_duration((double)(p->total - p->done) / rate, d, sizeof d);
            snprintf(tail + n, sizeof tail - (size_t)n, ", ETA %s", d);
        }
    }
    fprintf(stderr, "\r\033[Kperfcast %s: %s %s%s%s%s%s", p->cmd, count, what, tail,
            p->note[0] ? "; " : "", p->note, final ? "\n" : "");
    fflush(stderr);
    p->last_draw = t;
    p->shown = !final;
    g_shown = final ? (g_shown == p ? NULL : g_shown) : p;
}

void pc_cli_progress_update(pc_cli_progress *p, const char *what, int64_t done, int64_t total) {
    if (!p) return;
    double t = now_s();
    const char *w = what ? what : "", *sep = strstr(w, "; ");
    size_t n = sep ? (size_t)(sep - w) : strlen(w);
    if (n >= sizeof p->what) n = sizeof p->what - 1;
    if (strncmp(p->what, w, n) != 0 || p->what[n]) {
        if (p->shown) draw(p, t, 1); /* the previous stage ends on its own line */
        snprintf(p->what, sizeof p->what, "%.*s", (int)n, w);
        p->note[0] = 0;
        p->start = t;
        p->last_draw = -1;
    }
    snprintf(p->note, sizeof p->note, "%s", sep ? sep + 2 : "");
    p->done = done;
    p->total = total;
    if (p->last_draw < 0 || t - p->last_draw >= PROGRESS_REDRAW_S || (total > 0 && done >= total))
        draw(p, t, 0);
}

void pc_cli_progress_cb(void *user, const char *what, int64_t done, int64_t total) {
    pc_cli_progress_update(user, what, done, total);
}

void pc_cli_progress_clear(pc_cli_progress *p) {
    if (!p || !p->shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
    if (g_shown == p) g_shown = NULL;
}

void pc_cli_progress_break(void) { pc_cli_progress_clear(g_shown); }

void pc_cli_progress_end(pc_cli_progress *p) {
    if (!p) return;
    if (p->shown) draw(p, now_s(), 1);
    if (g_shown == p) g_shown = NULL;
    free(p);
}
