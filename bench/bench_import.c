/*
 * HLO import speed (issue #5: "importing and featurizing an HLO module of
 * 100k instructions in under 1 second").
 *
 *   bench_import N_INST CONFIG_NODES CONFIGS REPEATS [DIR]
 *
 * Builds a ModuleTuningData in memory (no protobuf library needed: the wire
 * format is written by hand) with N_INST instructions in computations of
 * 1,000 (every one has two parameters, then ops on the two previous
 * instructions with f32[128,256]{1,0} shapes; every computation's first op
 * calls the previous computation; every tenth computation is a "while_body"),
 * CONFIG_NODES configurable nodes and CONFIGS layout runs (two tensors of two
 * dims per node; the first run is the default). Then times, best of REPEATS:
 *   parse      pc_hlo_tuning_parse (wire walk + protobuf-c + copy into the IR)
 *   featurize  pc_hlo_featurize (140 features, edges, node_splits)
 *   build      pc_hlo_sample_build (featurize + config arrays), i.e. parse +
 *              build = everything import does before writing
 *   import     pc_import_file end to end from DIR/bench.pb into DIR/out
 *              (stored .npz), if DIR is given
 *   text       the same module printed as HLO text (an XLA dump), then
 *              pc_hlo_parse_text + pc_hlo_featurize: the text import path
 * One line per step: wall seconds, instructions per second, and CPU seconds
 * (which a busy machine does not inflate); plus the file size.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlo/import.h"
#include "hlo/proto.h"
#include "hlo/text.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU seconds of this process: on a shared machine, what the work itself costs. */
static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- a growable byte buffer and the protobuf wire format ------------------- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) {
            fprintf(stderr, "bench_import: out of memory\n");
            exit(1);
        }
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void varint(buf *b, uint64_t v) {
    uint8_t t[10];
    int n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[n] |= 0x80;
        n++;
    } while (v);
    put(b, t, (size_t)n);
}

static void f_int(buf *b, unsigned field, int64_t v) {
    varint(b, (uint64_t)field << 3);
    varint(b, (uint64_t)v);
}

static void f_bytes(buf *b, unsigned field, const void *d, size_t n) {
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    put(b, d, n);
}

static void f_str(buf *b, unsigned field, const char *s) { f_bytes(b, field, s, strlen(s)); }

static void f_msg(buf *b, unsigned field, buf *m) {
    f_bytes(b, field, m->p, m->n);
    m->n = 0;
}

static void f_packed(buf *b, unsigned field, const int64_t *v, int n) {
    buf t = {0};
    for (int i = 0; i < n; i++) varint(&t, (uint64_t)v[i]);
    f_msg(b, field, &t);
    free(t.p);
}

/* ---- the synthetic module ---------------------------------------------------- */

static buf make_module_tuning(int64_t n_inst, int64_t config_nodes, int64_t configs) {
    const int64_t per = 1000;
    buf mod = {0}, comp = {0}, in = {0}, sh = {0}, lay = {0};
    f_str(&mod, 1, "bench");
    int64_t id = 1, prev_comp = -1, ncomp = (n_inst + per - 1) / per;
    for (int64_t c = 0; c < ncomp; c++) {
        int64_t k = c == ncomp - 1 ? n_inst - c * per : per;
        char name[64];
        snprintf(name, sizeof name, c % 10 == 9 ? "while_body.%lld" : "computation.%lld",
                 (long long)c);
        f_str(&comp, 1, name);
        for (int64_t i = 0; i < k; i++, id++) {
            char iname[32];
            snprintf(iname, sizeof iname, "i.%lld", (long long)id);
            f_str(&in, 1, iname);
            f_str(&in, 2, i < 2 ? "parameter" : (i % 3 ? "add" : "multiply"));
            const int64_t dims[2] = {128, 256}, m2m[2] = {1, 0};
            f_int(&sh, 2, 11);
            f_packed(&sh, 3, dims, 2);
            f_packed(&lay, 1, m2m, 2);
            f_msg(&sh, 5, &lay);
            f_msg(&in, 3, &sh);
            if (i < 2) f_int(&in, 9, i);
            f_int(&in, 35, id);
            if (i >= 2) {
                const int64_t ops[2] = {id - 1, id - 2};
                f_packed(&in, 36, ops, 2);
            }
            if (i == 2 && prev_comp > 0) f_packed(&in, 38, &prev_comp, 1);
            f_msg(&comp, 2, &in);
        }
        f_int(&comp, 5, c + 1);
        f_int(&comp, 6, id - 1);
        prev_comp = c + 1; /* the id of this computation, called by the next one */
        f_msg(&mod, 3, &comp);
    }
    f_int(&mod, 6, ncomp);

    buf mtd = {0}, run = {0}, cfg = {0}, lc = {0}, node = {0}, ten = {0}, prof = {0};
    f_msg(&mtd, 1, &mod);
    f_int(&mtd, 2, 12345);
    for (int64_t r = 0; r < configs; r++) {
        for (int64_t j = 0; j < config_nodes; j++) {
            for (int t = 0; t < 2; t++) {
                const int64_t d[2] = {(r + j + t) % 2, 1 - (r + j + t) % 2};
                if (r > 0) f_packed(&ten, 1, d, 2);
                f_msg(&node, 1, &ten);
            }
            f_msg(&lc, 1, &node);
        }
        f_msg(&cfg, 1, &lc);
        f_msg(&run, 2, &cfg);
        f_int(&prof, 4, 1000000 + 37 * r);
        f_msg(&run, 4, &prof);
        if (r == 0) f_int(&run, 5, 1);
        f_msg(&mtd, 3, &run);
    }
    int64_t *ids = malloc((size_t)config_nodes * sizeof *ids);
    for (int64_t j = 0; j < config_nodes; j++) ids[j] = 2 + j * (n_inst / config_nodes);
    f_packed(&mtd, 4, ids, (int)config_nodes);
    free(ids);
    free(mod.p), free(comp.p), free(in.p), free(sh.p), free(lay.p);
    free(run.p), free(cfg.p), free(lc.p), free(node.p), free(ten.p), free(prof.p);
    return mtd;
}

static int die(const pc_error *e) {
    fprintf(stderr, "bench_import: %s\n", e->msg);
    return 1;
}

/* Text path: print the module once (untimed), then time parse + featurize. */
static int text_step(const buf *b, int64_t n, int reps) {
    pc_error e;
    pc_hlo_tuning *t;
    char *text = NULL;
    size_t len = 0;
    if (pc_hlo_tuning_parse(b->p, b->n, "bench.pb", &t, &e) ||
        pc_hlo_print_text_buf(t->mods[0].module, &text, &len, &e))
        return die(&e);
    pc_hlo_tuning_free(t);
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now(), c0 = cpu();
        pc_hlo_module **mods = NULL;
        int nm = 0;
        pc_hlo_graph g;
        if (pc_hlo_parse_text(text, len, "bench.hlo", &mods, &nm, NULL, &e) ||
            pc_hlo_featurize(mods[0], &g, &e))
            return die(&e);
        double dt = now() - t0, dc = cpu() - c0;
        if (g.n != n) {
            fprintf(stderr, "bench_import: text module has %lld nodes, not %lld\n",
                    (long long)g.n, (long long)n);
            return 1;
        }
        pc_hlo_graph_free(&g);
        pc_hlo_modules_free(mods, nm);
        if (dt < best) best = dt;
        if (dc < best_cpu) best_cpu = dc;
    }
    printf("text parse+feat  %6.3f  %8.2f  %6.3f   (%.1f MB of HLO text)\n", best,
           n / best / 1e6, best_cpu, (double)len / 1e6);
    free(text);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: bench_import N_INST CONFIG_NODES CONFIGS REPEATS [DIR]\n");
        return 2;
    }
    int64_t n = atoll(argv[1]), nc = atoll(argv[2]), c = atoll(argv[3]);
    int reps = atoi(argv[4]);
    if (n < 3 || nc < 1 || nc > n / 2 || c < 1 || reps < 1) {
        fprintf(stderr, "bench_import: bad sizes\n");
        return 2;
    }
    buf b = make_module_tuning(n, nc, c);
    printf("module: %lld instructions, %lld configurable nodes, %lld configs, %.1f MB\n",
           (long long)n, (long long)nc, (long long)c, (double)b.n / 1e6);
    double best_parse = 1e30, best_feat = 1e30, best_build = 1e30, best_import = 1e30;
    double cpu_parse = 1e30, cpu_feat = 1e30, cpu_build = 1e30, cpu_import = 1e30;
    pc_error e;
    for (int r = 0; r < reps; r++) {
        double c0 = cpu(), t0 = now();
        pc_hlo_tuning *t;
        if (pc_hlo_tuning_parse(b.p, b.n, "bench.pb", &t, &e)) return die(&e);
        double t1 = now(), c1 = cpu();
        pc_hlo_graph g;
        if (pc_hlo_featurize(t->mods[0].module, &g, &e)) return die(&e);
        double t2 = now(), c2 = cpu();
        pc_hlo_sample s;
        char why[256];
        if (pc_hlo_sample_build(&t->mods[0], PC_KIND_AUTO, "bench.pb", -1, &s, NULL, why,
                                sizeof why, &e))
            return die(&e);
        double t3 = now(), c3 = cpu();
        if (s.kind != PC_KIND_LAYOUT || s.g.n != n || s.c != c) {
            fprintf(stderr, "bench_import: unexpected sample (%s)\n", why);
            return 1;
        }
        pc_hlo_sample_free(&s);
        pc_hlo_graph_free(&g);
        pc_hlo_tuning_free(t);
        if (t1 - t0 < best_parse) best_parse = t1 - t0;
        if (t2 - t1 < best_feat) best_feat = t2 - t1;
        if ((t1 - t0) + (t3 - t2) < best_build) best_build = (t1 - t0) + (t3 - t2);
        if (c1 - c0 < cpu_parse) cpu_parse = c1 - c0;
        if (c2 - c1 < cpu_feat) cpu_feat = c2 - c1;
        if ((c1 - c0) + (c3 - c2) < cpu_build) cpu_build = (c1 - c0) + (c3 - c2);
    }
    printf("step             wall s  M inst/s   CPU s\n");
    printf("parse            %6.3f  %8.2f  %6.3f\n", best_parse, n / best_parse / 1e6, cpu_parse);
    printf("featurize        %6.3f  %8.2f  %6.3f\n", best_feat, n / best_feat / 1e6, cpu_feat);
    printf("parse + build    %6.3f  %8.2f  %6.3f\n", best_build, n / best_build / 1e6, cpu_build);
    if (text_step(&b, n, reps)) return 1;
    if (argc > 5) {
        char path[4096], out[4096];
        snprintf(path, sizeof path, "%s/bench.pb", argv[5]);
        snprintf(out, sizeof out, "%s/out", argv[5]);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(b.p, 1, b.n, f) != b.n || fclose(f) != 0) {
            fprintf(stderr, "bench_import: cannot write %s\n", path);
            return 1;
        }
        for (int r = 0; r < reps; r++) {
            double t0 = now(), c0 = cpu();
            if (pc_import_file(path, out, NULL, NULL, &e)) return die(&e);
            double dt = now() - t0, dc = cpu() - c0;
            if (dt < best_import) best_import = dt;
            if (dc < cpu_import) cpu_import = dc;
        }
        printf("import (file)    %6.3f  %8.2f  %6.3f\n", best_import, n / best_import / 1e6,
               cpu_import);
    }
    free(b.p);
    return 0;
}
