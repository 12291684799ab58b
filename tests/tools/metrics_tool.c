/*
 * pc_metrics_tool: drives the public metrics API (perfcast/metrics.h) so
 * tests/scripts/test_metrics_scipy.py can check it against scipy and numpy.
 * Arrays are raw native-endian float64 files (numpy's tofile); n is the file
 * size / 8.
 *
 *   pc_metrics_tool pairs X.f64 Y.f64
 *       one line: pairs concordant discordant ties_x ties_y ties_xy tau opa
 *   pc_metrics_tool rank PRED.f64 RUNTIME.f64 NORM.f64|- K...
 *       per K: "topk K i0,i1,..." and "slowdown K value"; then "tile value"
 *       (NORM "-" means unnormalized)
 *   pc_metrics_tool bootstrap VALUES.f64 RESAMPLES SEED LEVEL
 *       one line: lo hi (pc_bootstrap_mean_ci)
 *   pc_metrics_tool indices N RESAMPLES SEED
 *       one line per resample: its n indices, comma-separated (pc_bootstrap_indices)
 *   pc_metrics_tool percentile X.f64 Q
 *       one line: the percentile (pc_percentile)
 *   pc_metrics_tool spread X.f64
 *       one line: mean std min max count nan_count (pc_spread_compute)
 *
 * Fields are tab-separated; doubles are printed with %.17g ("nan" for NaN).
 * Exit status: 0 success, 1 pc_* failure ("pc_metrics_tool: error (<status>):
 * <message>" on stderr), 2 usage or file errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfcast/metrics.h"

typedef struct vec {
    double *v;
    size_t n;
} vec;

static int fail(const pc_error *err) {
    fprintf(stderr, "pc_metrics_tool: error (%s): %s\n", pc_status_name(err->code), err->msg);
    return 1;
}

static int usage(void) {
    fputs("usage: pc_metrics_tool pairs X Y | rank PRED RUNTIME NORM|- K... | bootstrap V R S L"
          " | indices N R S | percentile X Q | spread X\n",
          stderr);
    return 2;
}

static int read_vec(const char *path, vec *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return perror(path), 0;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    rewind(f);
    out->n = size > 0 ? (size_t)size / sizeof(double) : 0;
    out->v = malloc((out->n ? out->n : 1) * sizeof(double));
    int ok = size >= 0 && size % (long)sizeof(double) == 0 && out->v &&
             fread(out->v, sizeof(double), out->n, f) == out->n;
    fclose(f);
    if (!ok) fprintf(stderr, "pc_metrics_tool: cannot read %s as float64\n", path);
    return ok;
}

static int cmd_pairs(const char *xp, const char *yp) {
    vec x = {NULL, 0}, y = {NULL, 0};
    int rc = 2;
    if (!read_vec(xp, &x) || !read_vec(yp, &y) || x.n != y.n) goto done;
    pc_error e;
    pc_pair_counts c;
    double tau, opa;
    rc = 1;
    if (pc_pair_counts_compute(x.v, y.v, x.n, &c, &e) ||
        pc_kendall_tau_b(x.v, y.v, x.n, &tau, &e) ||
        pc_ordered_pair_accuracy(x.v, y.v, x.n, &opa, &e)) {
        fail(&e);
        goto done;
    }
    printf("%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
           "\t%.17g\t%.17g\n",
           c.pairs, c.concordant, c.discordant, c.ties_x, c.ties_y, c.ties_xy, tau, opa);
    rc = 0;
done:
    free(x.v), free(y.v);
    return rc;
}

static int rank_one_k(const vec *pred, const vec *rt, const double *norm, size_t k) {
    pc_error e;
    size_t *idx = malloc((k ? k : 1) * sizeof *idx), got = 0;
    double slow;
    if (!idx) return 2;
    if (pc_topk_indices(pred->v, pred->n, k, idx, &got, &e) ||
        pc_topk_slowdown(pred->v, rt->v, norm, pred->n, k, &slow, &e)) {
        free(idx);
        return fail(&e);
    }
    printf("topk\t%zu\t", k);
    for (size_t i = 0; i < got; i++) printf("%s%zu", i ? "," : "", idx[i]);
    printf("\nslowdown\t%zu\t%.17g\n", k, slow);
    free(idx);
    return 0;
}

static int cmd_rank(int argc, char **argv) {
    vec pred = {NULL, 0}, rt = {NULL, 0}, norm = {NULL, 0};
    int rc = 2;
    int use_norm = strcmp(argv[2], "-") != 0;
    if (!read_vec(argv[0], &pred) || !read_vec(argv[1], &rt) || pred.n != rt.n) goto done;
    if (use_norm && (!read_vec(argv[2], &norm) || norm.n != pred.n)) goto done;
    const double *nv = use_norm ? norm.v : NULL;
    rc = 0;
    for (int a = 3; a < argc && !rc; a++)
        rc = rank_one_k(&pred, &rt, nv, strtoul(argv[a], NULL, 10));
    if (rc) goto done;
    pc_error e;
    double score;
    if (pc_tile_score(pred.v, rt.v, nv, pred.n, &score, &e)) {
        rc = fail(&e);
        goto done;
    }
    printf("tile\t%.17g\n", score);
done:
    free(pred.v), free(rt.v), free(norm.v);
    return rc;
}

static int cmd_bootstrap(char **argv) {
    vec x = {NULL, 0};
    if (!read_vec(argv[0], &x)) return 2;
    pc_error e;
    double lo, hi;
    int rc = 0;
    if (pc_bootstrap_mean_ci(x.v, x.n, strtoull(argv[1], NULL, 10), strtoull(argv[2], NULL, 10),
                             strtod(argv[3], NULL), &lo, &hi, &e))
        rc = fail(&e);
    else
        printf("%.17g\t%.17g\n", lo, hi);
    free(x.v);
    return rc;
}

static int cmd_indices(char **argv) {
    size_t n = strtoull(argv[0], NULL, 10), r = strtoull(argv[1], NULL, 10);
    size_t total = n * r;
    size_t *idx = malloc((total > 0 ? total : 1) * sizeof *idx);
    if (!idx) return 2;
    pc_error e;
    int rc = 0;
    if (pc_bootstrap_indices(n, r, strtoull(argv[2], NULL, 10), idx, &e))
        rc = fail(&e);
    else
        for (size_t b = 0; b < r; b++)
            for (size_t k = 0; k < n; k++) printf("%zu%s", idx[b * n + k], k + 1 < n ? "," : "\n");
    free(idx);
    return rc;
}

static int cmd_percentile(char **argv) {
    vec x = {NULL, 0};
    if (!read_vec(argv[0], &x)) return 2;
    pc_error e;
    double v;
    int rc = 0;
    if (pc_percentile(x.v, x.n, strtod(argv[1], NULL), &v, &e))
        rc = fail(&e);
    else
        printf("%.17g\n", v);
    free(x.v);
    return rc;
}

static int cmd_spread(char **argv) {
    vec x = {NULL, 0};
    if (!read_vec(argv[0], &x)) return 2;
    pc_error e;
    pc_spread s;
    int rc = 0;
    if (pc_spread_compute(x.v, x.n, &s, &e))
        rc = fail(&e);
    else
        printf("%.17g\t%.17g\t%.17g\t%.17g\t%" PRIu64 "\t%" PRIu64 "\n", s.mean, s.std, s.min,
               s.max, s.count, s.nan_count);
    free(x.v);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "pairs") == 0) return cmd_pairs(argv[2], argv[3]);
    if (argc >= 5 && strcmp(argv[1], "rank") == 0) return cmd_rank(argc - 2, argv + 2);
    if (argc == 6 && strcmp(argv[1], "bootstrap") == 0) return cmd_bootstrap(argv + 2);
    if (argc == 5 && strcmp(argv[1], "indices") == 0) return cmd_indices(argv + 2);
    if (argc == 4 && strcmp(argv[1], "percentile") == 0) return cmd_percentile(argv + 2);
    if (argc == 3 && strcmp(argv[1], "spread") == 0) return cmd_spread(argv + 2);
    return usage();
}
