/* Shared pieces of perfcast validate / calibrate (calib_cli.h): the validate query's
 * document (src/query/q_validate.c) as text. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"
#include "calib_cli.h"

int pc_ccli_parse_kind(const char *s) {
    if (!strcmp(s, "train")) return 1;
    if (!strcmp(s, "serve")) return 2;
    if (!strcmp(s, "all")) return 3;
    return 0;
}

pc_status pc_ccli_validate(cJSON *req, cJSON **doc, pc_error *err) {
    return pc_acli_query(PC_QUERY_VALIDATE, req, doc, err);
}

cJSON *pc_ccli_runs_request(int nfiles, char **paths) {
    cJSON *req = cJSON_CreateObject(), *runs = cJSON_AddArrayToObject(req, "runs");
    for (int i = 0; i < nfiles; i++) cJSON_AddItemToArray(runs, cJSON_CreateString(paths[i]));
    return req;
}

int pc_ccli_print_problems(const cJSON *doc) {
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "invalid_runs")) {
        if (cJSON_IsString(it)) fprintf(stderr, "perfcast: invalid run: %s\n", it->valuestring);
        n++;
    }
    return n;
}

static void print_sum(const char *label, const cJSON *e) {
    printf("  %-26s %4lld runs %4lld expressed  median %6.1f%%  mean %6.1f%%  max %6.1f%%  "
           "over-predicted %3.0f%%\n",
           label, pc_acli_jint(e, "runs"), pc_acli_jint(e, "expressed"),
           100 * pc_acli_jnum(e, "median_abs_error"), 100 * pc_acli_jnum(e, "mean_abs_error"),
           100 * pc_acli_jnum(e, "max_abs_error"), 100 * pc_acli_jnum(e, "over_predicted_fraction"));
}

void pc_ccli_print_summaries(const cJSON *summary, const char *title) {
    printf("\n%s\n", title);
    for (int k = 0; k < 2; k++) {
        const cJSON *ko = cJSON_GetObjectItemCaseSensitive(summary, k ? "serve" : "train");
        if (!ko) continue;
        print_sum(k ? "serving (output tok/s)" : "training (step time)", ko);
        for (int by_chip = 0; by_chip < 2; by_chip++) {
            const cJSON *g = cJSON_GetObjectItemCaseSensitive(ko, by_chip ? "by_chip" : "by_source");
            const cJSON *e;
            cJSON_ArrayForEach(e, g) {
                char label[64];
                snprintf(label, sizeof label, "  %s %s", by_chip ? "chip" : "source", e->string);
                print_sum(label, e);
            }
        }
    }
}

/* "compute 61% tp 14% bubble 9%": the three largest parts of the breakdown. */
static void top_parts(const cJSON *r, char *buf, size_t cap) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(r, "breakdown"), *used[3] = {0};
    double pred = pc_acli_jnum(r, "predicted");
    buf[0] = 0;
    size_t off = 0;
    for (int k = 0; k < 3; k++) {
        const cJSON *best = NULL, *it;
        cJSON_ArrayForEach(it, b) {
            int u = 0;
            for (int q = 0; q < k; q++) u |= used[q] == it;
            if (!u && cJSON_IsNumber(it) && it->valuedouble > 0 &&
                (!best || it->valuedouble > best->valuedouble))
                best = it;
        }
        if (!best) break;
        used[k] = best;
        int w = snprintf(buf + off, cap - off, "%s%s %.0f%%", k ? " " : "", best->string,
                         100 * best->valuedouble / pred);
        if (w < 0 || (size_t)w >= cap - off) break;
        off += (size_t)w;
    }
}

void pc_ccli_print_runs(const cJSON *doc) {
    printf("%-46s %-9s %5s %11s %11s %8s %11s  %s\n", "run", "chip", "chips", "measured",
           "predicted", "error", "ideal", "breakdown / why");
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "runs")) {
        int serve = !strcmp(pc_acli_jstr(r, "kind"), "serve");
        double meas = pc_acli_jnum(r, "measured");
        const char *unit = serve ? "tok/s" : "s";
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "expressed"))) {
            printf("%-46.46s %-9.9s %5lld %10.4g%s %11s %8s %11s  not expressed: %s\n",
                   pc_acli_jstr(r, "id"), pc_acli_jstr(r, "chip"), pc_acli_jint(r, "chips"), meas,
                   unit, "-", "miss", "-", pc_acli_jstr(r, "why"));
            continue;
        }
        char parts[128];
        if (!serve)
            top_parts(r, parts, sizeof parts);
        else
            snprintf(parts, sizeof parts, "batch %.0f%s x %lld replicas, TTFT %.3g s, TPOT %.3g ms",
                     pc_acli_jnum(r, "batch"),
                     pc_acli_jnum(r, "batch_stated") ? "" : " (throughput-optimal)",
                     pc_acli_jint(r, "replicas"), pc_acli_jnum(r, "ttft_s"),
                     1e3 * pc_acli_jnum(r, "tpot_s"));
        printf("%-46.46s %-9.9s %5lld %10.4g%s %10.4g%s %+7.1f%% %10.4g%s  %s\n",
               pc_acli_jstr(r, "id"), pc_acli_jstr(r, "chip"), pc_acli_jint(r, "chips"), meas, unit,
               pc_acli_jnum(r, "predicted"), unit, 100 * pc_acli_jnum(r, "error"),
               pc_acli_jnum(r, "ideal"), unit, parts);
    }
}
