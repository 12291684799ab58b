/*
 * Fuzz target: raw TpuGraphs tuning protos (src/hlo/proto.c: the wire-format
 * walk, protobuf-c parsing, copying into the HLO IR) and everything import
 * does short of writing files (src/hlo/import.c and featurize.c: run
 * filtering, featurization, id and call-graph checks, config arrays).
 *
 * The input is parsed from memory. On success every module is built as its
 * runs say, and what comes out must hold together: edges sorted, unique and
 * in range, node_splits rising from 0 to n, opcodes and configurable node
 * ids in range, runtimes above the filter thresholds, tile normalizers equal
 * to a kept runtime. Failures must carry a message naming the input.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "hlo/import.h"
#include "hlo/proto.h"

static void check_sample(const pc_hlo_sample *s) {
    const pc_hlo_graph *g = &s->g;
    check(g->n >= 0 && g->m >= 0 && g->k >= 1);
    for (int64_t e = 0; e < g->m; e++) {
        int64_t u = g->edges[2 * e], v = g->edges[2 * e + 1];
        check(u >= 0 && u < g->n && v >= 0 && v < g->n && u != v);
        if (e) {
            int64_t pu = g->edges[2 * e - 2], pv = g->edges[2 * e - 1];
            check(pu < u || (pu == u && pv < v));
        }
    }
    check(g->node_splits[0] == 0 && g->node_splits[g->k - 1] == g->n);
    for (int64_t i = 1; i < g->k; i++) check(g->node_splits[i] >= g->node_splits[i - 1]);
    int64_t unknown = 0;
    for (int64_t i = 0; i < g->n; i++) unknown += g->node_opcode[i] == 0;
    check(unknown == g->unknown);
    check(s->c >= 1);
    if (s->kind == PC_KIND_TILE) {
        int found = 0;
        for (int64_t c = 0; c < s->c; c++) {
            check(s->runtime[c] > 1 && s->normalizers[c] == s->normalizers[0]);
            found |= s->runtime[c] == s->normalizers[0];
        }
        check(found);
    } else {
        check(s->kind == PC_KIND_LAYOUT && s->nc >= 1);
        for (int64_t c = 0; c < s->c; c++) check(s->runtime[c] > 0);
        for (int64_t j = 0; j < s->nc; j++) check(s->config_ids[j] >= 0 && s->config_ids[j] < g->n);
    }
}

PC_FUZZ_TARGET(hlo_proto) {
    pc_hlo_tuning *t = NULL;
    pc_error err;
    memset(&err, 0, sizeof err);
    pc_status st = pc_hlo_tuning_parse(data, size, "fuzz.pb", &t, &err);
    if (st != PC_OK) {
        check(t == NULL && err.code == st && strstr(err.msg, "fuzz.pb") != NULL);
        return 0;
    }
    check(t != NULL && t->n_mods >= 0);
    for (int32_t i = 0; i < t->n_mods; i++) {
        const pc_hlo_tuned *m = &t->mods[i];
        check(m->n_runs >= 0 && m->n_config_nodes >= 0);
        for (int32_t r = 0; r < m->n_runs; r++) {
            const pc_hlo_run *run = &m->runs[r];
            check(!run->has_layout || run->layout_nodes == 0 || run->layout != NULL);
        }
        pc_hlo_sample s;
        char why[256];
        pc_import_report rep;
        memset(&rep, 0, sizeof rep);
        pc_error e2;
        memset(&e2, 0, sizeof e2);
        st = pc_hlo_sample_build(m, PC_KIND_AUTO, "fuzz.pb", i, &s, &rep, why, sizeof why, &e2);
        if (st != PC_OK) {
            check(e2.code == st && strstr(e2.msg, "fuzz.pb") != NULL);
            continue;
        }
        check(rep.runs == m->n_runs);
        if (s.kind == PC_KIND_AUTO) check(why[0] != '\0');
        else check_sample(&s);
        pc_hlo_sample_free(&s);
    }
    pc_hlo_tuning_free(t);
    return 0;
}
