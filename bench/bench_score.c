/*
 * Prints a model's score of every config of one graph, as pc_tune_model
 * sees it (issue #15 layout diagnosis, bench/layout_tune_diag.py): the
 * graph is prepared with the compiler default (all -1) as the reference,
 * so each line is "mean spread" of a config's predicted difference from
 * the default over the ensemble's members (spread 0 for a single model).
 *   bench_score MODEL FILE.npz [THREADS]
 */
#include <stdio.h>
#include <stdlib.h>

#include "perfcast/perfcast.h"
#include "perfcast/predict.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_score MODEL FILE.npz [THREADS]\n");
        return 2;
    }
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    pc_error e;
    pc_error_clear(&e);
    pc_predictor *p = NULL;
    pc_graph *g = NULL;
    pc_prepared_graph *pg = NULL;
    pc_load_opts lo = pc_load_opts_default();
    int rc = 1;
    float *ref = NULL, *rows = NULL;
    double *sc = NULL, *sp = NULL;
    if (pc_predictor_load(argv[1], threads, &p, &e) || pc_graph_load(argv[2], &lo, &g, &e))
        goto out;
    int64_t nc = pc_graph_num_config_nodes(g), c = pc_graph_num_configs(g), w = nc * 18;
    if (pc_graph_kind(g) != PC_KIND_LAYOUT || nc < 1 || c < 1) {
        fprintf(stderr, "%s: not a layout graph with configs\n", argv[2]);
        goto out;
    }
    ref = malloc((size_t)w * sizeof *ref);
    rows = malloc((size_t)(c * w) * sizeof *rows);
    sc = malloc((size_t)c * sizeof *sc);
    sp = malloc((size_t)c * sizeof *sp);
    if (!ref || !rows || !sc || !sp) goto out;
    for (int64_t i = 0; i < w; i++) ref[i] = -1.0f;
    if (pc_prepared_graph_new(p, g, ref, 1, &pg, &e) ||
        pc_graph_config_feat_rows(g, 0, c, rows, &e))
        goto out;
    for (int64_t i0 = 0; i0 < c; i0 += 256) {
        int64_t n = c - i0 < 256 ? c - i0 : 256;
        if (pc_prepared_graph_score(pg, rows + i0 * w, n, sc + i0, sp + i0, &e)) goto out;
    }
    for (int64_t i = 0; i < c; i++) printf("%.9g %.9g\n", sc[i], sp[i]);
    rc = 0;
out:
    if (rc && e.msg[0]) fprintf(stderr, "%s\n", e.msg);
    pc_prepared_graph_free(pg);
    pc_graph_free(g);
    pc_predictor_free(p);
    free(ref), free(rows), free(sc), free(sp);
    return rc;
}
