/* The graphs of a split a process holds (see split_graphs.h). */
#include <stdlib.h>

#include "common/util.h"
#include "gnn/split_graphs.h"

void pc_split_graphs_free(pc_split_graphs *s) {
    for (size_t i = 0; i < s->n; i++) {
        pc_split_graph *t = &s->v[i];
        pc_gnn_gdata_free(&t->d);
        pc_graph_free(t->g);
        free(t->rt);
        free(t->norm);
        pc_gst_graph_free(t->gst);
        pc_infer_uniq_free(&t->uniq);
    }
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/*
 * The content checks (pc_graph_validate, as `perfcast check` runs them) on
 * every graph before it is used: a graph that fails them is refused, never
 * silently trained or evaluated on. Runtimes must be positive, except a test
 * split's all-zero ones.
 */
static pc_status refuse_invalid(const pc_graph *g, int split, pc_error *err) {
    pc_report *r = pc_report_new();
    if (!r) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pc_status st = PC_OK;
    if (pc_graph_validate(g, split == pc_split_find("test"), r) != PC_OK) {
        size_t n = pc_report_count(r);
        st = pc_fail(err, PC_ERR_INVALID,
                     "%s%s (%zu problem%s in all, by pc_graph_validate; "
                     "the graph is not used)",
                     n ? "" : pc_graph_path(g), n ? pc_report_get(r, 0) : ": invalid", n,
                     n == 1 ? "" : "s");
    }
    pc_report_free(r);
    return st;
}

pc_status pc_split_graphs_load(const pc_dataset *d, int coll, int split, int threads, size_t mod,
                               size_t lo, size_t hi, uint64_t max_memory, pc_split_graphs *s,
                               const pc_split_progress *pr, pc_error *err) {
    size_t n = pc_dataset_num_files(d, coll, split), mine = 0;
    for (size_t i = 0; i < n; i++) mine += i % mod >= lo && i % mod < hi;
    s->n = 0;
    s->v = calloc(n ? n : 1, sizeof *s->v);
    if (!s->v) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pc_load_opts lo_opts = pc_load_opts_default();
    lo_opts.kind = pc_collection_kind(coll);
    lo_opts.threads = threads;
    lo_opts.max_memory = max_memory;
    for (size_t i = 0; i < n; i++) {
        if (i % mod < lo || i % mod >= hi) continue;
        pc_split_graph *t = &s->v[s->n];
        pc_status st = pc_graph_load(pc_dataset_file(d, coll, split, i), &lo_opts, &t->g, err);
        if (st) return st;
        t->gi = i;
        s->n++;
        if ((st = refuse_invalid(t->g, split, err))) return st;
        t->c = pc_graph_num_configs(t->g);
        const int64_t *rt = pc_graph_config_runtime(t->g);
        const int64_t *nz = pc_graph_runtime_normalizers(t->g);
        size_t c = (size_t)(t->c > 0 ? t->c : 1);
        t->rt = malloc(c * sizeof(double));
        t->norm = nz ? malloc(c * sizeof(double)) : NULL;
        if (!t->rt || (nz && !t->norm)) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        for (int64_t k = 0; k < t->c; k++) {
            t->rt[k] = (double)rt[k];
            if (nz) t->norm[k] = (double)nz[k];
        }
        if (pr && pr->fn) pr->fn(pr->user, pr->what, (int64_t)s->n, (int64_t)mine);
    }
    return PC_OK;
}

pc_status pc_split_graphs_build(const pc_gnn *m, pc_split_graphs *s, int table, pc_error *err) {
    for (size_t i = 0; i < s->n; i++) {
        pc_split_graph *t = &s->v[i];
        pc_status st = pc_gnn_gdata_build(m, t->g, &t->d, err);
        if (!st && m->opts.gst) {
            pc_gst_opts go = pc_gst_opts_of(m);
            st = pc_gst_graph_build(m, &t->d, &go, table ? t->c : 0, &t->gst, err);
        }
        if (st) {
            pc_error_prefix(err, "%s: ", pc_graph_path(t->g));
            return st;
        }
    }
    return PC_OK;
}
