/*
 * The trainer's clock and log lines: used by every train/ file, so they sit
 * below all of them (no file of the module calls back into the loop).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "train/train_internal.h"

double pc_tr_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void pc_tr_logf(pc_train_log_fn log, void *user, const char *fmt, ...) {
    if (!log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log(user, line);
}
