/*
 * perfcast import for HLO text: every module becomes a graph-only dataset
 * .npz (include/perfcast/hlo.h): text carries no measured runs, so the files
 * hold the graph, zero configurations and, for layout, the nodes a layout
 * autotuner would configure, ready for a user to add measurements.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "hlo/candidates.h"
#include "hlo/import.h"
#include "hlo/text.h"
#include "io/io_internal.h"

pc_status pc_hlo_is_text_file(const char *path, int *text, pc_error *err) {
    *text = 0;
    if (pc_hlo_text_path_kind(path) != PC_HLO_PATH_FILE || pc_str_ends_with(path, ".hlo") ||
        pc_str_ends_with(path, ".txt")) {
        *text = 1;
        return PC_OK;
    }
    if (pc_str_ends_with(path, ".pb")) return PC_OK;
    int fd = -1;
    uint64_t size = 0;
    pc_status ost = pc_open_regular(path, &fd, &size, err); /* a FIFO is refused, not waited on */
    if (ost) return ost;
    unsigned char buf[4096];
    ssize_t got = read(fd, buf, sizeof buf);
    close(fd);
    size_t n = got > 0 ? (size_t)got : 0;
    /* Protobufs are full of small tag and length bytes; HLO text has none. */
    int ok = n > 0;
    for (size_t i = 0; i < n && ok; i++)
        ok = buf[i] >= 0x20 || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t';
    *text = ok;
    return PC_OK;
}

/* The graph-only arrays of one module (c = 0); node_feat is made from the module
 * while the file is written (the module must live until then). */
static pc_status text_sample(const pc_hlo_module *m, pc_kind kind, pc_hlo_sample *s,
                             pc_error *err) {
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->rows_of = m;
    pc_status st = pc_hlo_featurize_lazy(m, &s->g, err);
    if (st) return st;
    /* 0-row config arrays still need a buffer to hand to the writer */
    s->config_feat = malloc(sizeof *s->config_feat);
    s->runtime = malloc(sizeof *s->runtime);
    s->normalizers = malloc(sizeof *s->normalizers);
    if (!s->config_feat || !s->runtime || !s->normalizers)
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (kind != PC_KIND_LAYOUT) return PC_OK;
    pc_hlo_cfg_node *cn = NULL;
    st = pc_hlo_layout_nodes(m, &cn, &s->nc, err);
    if (st) return st;
    s->config_ids = pc_malloc_array((uint64_t)(s->nc ? s->nc : 1), sizeof *s->config_ids);
    if (!s->config_ids) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; !st && j < s->nc; j++) s->config_ids[j] = cn[j].node;
    free(cn);
    return st;
}

static void text_file_name(const char *path, const char *out_dir, const pc_hlo_module *m,
                           int index, int nmods, char *file, size_t cap) {
    char stem[256], name[96], dir[4096];
    int kind = pc_hlo_text_path_kind(path);
    if (kind != PC_HLO_PATH_FILE) { /* a dump directory or DIR/pattern: named after DIR */
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = kind == PC_HLO_PATH_PATTERN ? strrchr(dir, '/') : NULL;
        if (slash) *slash = '\0';
        else if (kind == PC_HLO_PATH_PATTERN) snprintf(dir, sizeof dir, "hlo");
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/') dir[--n] = '\0';
        pc_path_stem(dir, NULL, stem, sizeof stem);
        if (!stem[0] || !strcmp(stem, ".") || !strcmp(stem, "..")) snprintf(stem, sizeof stem, "hlo");
        nmods = nmods < 2 ? 2 : nmods; /* always FILE_NNN_module: the names say which module */
    } else {
        pc_path_stem(path, pc_str_ends_with(path, ".txt") ? ".txt" : ".hlo", stem, sizeof stem);
    }
    if (nmods == 1) {
        snprintf(file, cap, "%s/%s.npz", out_dir, stem);
        return;
    }
    pc_hlo_safe_name(m->name ? m->name : "", name, sizeof name);
    snprintf(file, cap, "%s/%s_%03d_%s.npz", out_dir, stem, index, name);
}

static void note_written(pc_import_report *rep, const pc_hlo_sample *s, const char *file) {
    rep->written++;
    rep->nodes += s->g.n;
    rep->edges += s->g.m;
    if (!rep->notes) return;
    if (s->kind == PC_KIND_LAYOUT)
        pc_report_add(rep->notes, "wrote %s: layout graph without configs, %lld nodes, %lld "
                      "edges, %lld configurable nodes", file, (long long)s->g.n,
                      (long long)s->g.m, (long long)s->nc);
    else
        pc_report_add(rep->notes, "wrote %s: tile graph without configs, %lld nodes, %lld edges",
                      file, (long long)s->g.n, (long long)s->g.m);
}

/* Every module's graph is built before any file is written: the parsed modules and those
 * graphs within pc_import_opts.max_memory. */
static pc_status samples_budget(const char *path, pc_hlo_module *const *mods, int nmods,
                                uint64_t max_memory, pc_error *err) {
    int64_t nodes = 0, edges = 0;
    uint64_t held = 0;
    for (int i = 0; i < nmods; i++) held += pc_hlo_module_bytes(mods[i], &nodes, &edges);
    char how[240];
    snprintf(how, sizeof how,
             " to import it (its parsed modules and graphs of %lld nodes and "
             "%lld edges, %d and %d bytes each)",
             (long long)nodes, (long long)edges, PC_IMPORT_BYTES_PER_NODE,
             PC_IMPORT_BYTES_PER_EDGE);
    return pc_io_budget_check(held + (uint64_t)nodes * PC_IMPORT_BYTES_PER_NODE +
                                  (uint64_t)edges * PC_IMPORT_BYTES_PER_EDGE,
                              max_memory, path, how, err);
}

pc_status pc_import_text(const char *path, const char *out_dir, const pc_import_opts *o,
                         pc_import_report *rep, pc_error *err) {
    pc_hlo_module **mods = NULL;
    int nmods = 0;
    pc_hlo_text_stats ts;
    memset(&ts, 0, sizeof ts);
    rep->container = "HLO text";
    pc_hlo_read_opts rdo = {o->max_memory, o->progress, o->progress_user};
    pc_status st = pc_hlo_read_text_file_opts(path, &rdo, &mods, &nmods, &ts, err);
    if (st) return st;
    pc_kind kind = o->kind == PC_KIND_TILE ? PC_KIND_TILE : PC_KIND_LAYOUT;
    rep->modules = nmods;
    rep->unknown_opcodes = ts.unknown_opcodes;
    snprintf(rep->first_unknown, sizeof rep->first_unknown, "%s", ts.first_unknown);
    st = samples_budget(path, mods, nmods, o->max_memory, err);
    pc_hlo_sample *samples = st ? NULL : pc_calloc_array((uint64_t)nmods, sizeof *samples);
    if (!st && !samples) st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    /* Everything is featurized before anything is written. */
    for (int i = 0; i < nmods && !st; i++) {
        st = text_sample(mods[i], kind, &samples[i], err);
        if (!st && o->progress) o->progress(o->progress_user, "modules read", i + 1, nmods);
        char nb[PC_HLO_NAME_BUF];
        if (st) pc_error_prefix(err, "%s: module %d ('%s')", path, i,
                                pc_hlo_printable(mods[i]->name, nb));
    }
    if (!st) st = pc_mkdirs(out_dir, err);
    /* Peak memory is the IR plus the small arrays: node_feat (560 bytes a node) never
     * exists whole, the writer reads every array in place, and each module's IR goes
     * once its file is written. */
    for (int i = 0; i < nmods && !st; i++) {
        char file[4096];
        text_file_name(path, out_dir, mods[i], i, nmods, file, sizeof file);
        st = pc_hlo_sample_write(&samples[i], file, o->compress, err);
        if (!st) note_written(rep, &samples[i], file);
        if (!st && o->progress) o->progress(o->progress_user, "files written", i + 1, nmods);
        pc_hlo_sample_free(&samples[i]);
        pc_hlo_module_free(mods[i]);
        mods[i] = NULL;
    }
    if (!st) rep->kind = kind;
    for (int i = 0; samples && i < nmods; i++) pc_hlo_sample_free(&samples[i]);
    free(samples);
    pc_hlo_modules_free(mods, nmods);
    return st;
}
