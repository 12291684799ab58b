/*
 * perfcast import: tuning protobuf -> one dataset .npz per module
 * (include/perfcast/hlo.h). The run filtering follows the dataset's
 * tuning_data_iterator.cc (tpugraphs.md 6.1).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/import.h"
#include "io/io_internal.h"
#include "tpugraphs/features.h"
#include "tpugraphs/opcode.h"

pc_import_opts pc_import_opts_default(void) {
    pc_import_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.kind = PC_KIND_AUTO;
    o.compress = PC_NPZ_STORED;
    o.max_memory = PC_MEMORY_AUTO;
    return o;
}

static const char *mod_name(const pc_hlo_tuned *t) {
    return t->module && t->module->name ? t->module->name : "";
}

/* Runs' counts: error, no profile, bad time (threshold: kept only above it). */
static void count_runs(const pc_hlo_tuned *t, int64_t min_ns, pc_import_report *rep) {
    if (!rep) return;
    for (int32_t i = 0; i < t->n_runs; i++) {
        const pc_hlo_run *r = &t->runs[i];
        rep->runs++;
        if (r->error) rep->runs_error++;
        else if (!r->has_profile) rep->runs_no_profile++;
        else if (r->ns <= min_ns) rep->runs_bad_time++;
    }
}

static pc_status skip(pc_hlo_sample *s, char *why, size_t cap, const char *fmt, ...)
    PC_PRINTF(4, 5);
static pc_status skip(pc_hlo_sample *s, char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (why && cap) vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    pc_hlo_sample_free(s);
    s->kind = PC_KIND_AUTO;
    return PC_OK;
}

static pc_status build_tile(const pc_hlo_tuned *t, const char *where, pc_hlo_sample *s,
                            pc_import_report *rep, char *why, size_t cap, pc_error *err) {
    count_runs(t, 1, rep);
    if (!t->module) return skip(s, why, cap, "no HloModuleProto");
    /* The iterator reads only modules with more than one run, all with a tile config. */
    if (t->n_runs <= 1) return skip(s, why, cap, "only %d run", (int)t->n_runs);
    for (int32_t i = 0; i < t->n_runs; i++)
        if (!t->runs[i].has_tile)
            return skip(s, why, cap, "run %d has no tile_size_config", (int)i);
    int64_t c = 0, def = -1;
    for (int32_t i = 0; i < t->n_runs; i++) {
        const pc_hlo_run *r = &t->runs[i];
        if (r->error || r->ns <= 1) continue;
        if (def < 0 && r->is_default) def = r->ns;
        c++;
    }
    if (def < 0) return skip(s, why, cap, "no default run among the %lld kept runs", (long long)c);

    s->kind = PC_KIND_TILE;
    s->c = c;
    s->config_feat = pc_malloc_array((uint64_t)c * PC_TILE_CONFIG_DIM, sizeof *s->config_feat);
    s->runtime = pc_malloc_array((uint64_t)c, sizeof *s->runtime);
    s->normalizers = pc_malloc_array((uint64_t)c, sizeof *s->normalizers);
    if (!s->config_feat || !s->runtime || !s->normalizers)
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", where);
    int64_t k = 0;
    for (int32_t i = 0; i < t->n_runs; i++) {
        const pc_hlo_run *r = &t->runs[i];
        if (r->error || r->ns <= 1) continue;
        pc_tpug_tile_feat((pc_tpug_seq){r->kernel_bounds.v, r->kernel_bounds.n},
                          (pc_tpug_seq){r->output_bounds.v, r->output_bounds.n},
                          (pc_tpug_seq){r->input_bounds.v, r->input_bounds.n},
                          s->config_feat + k * PC_TILE_CONFIG_DIM);
        s->runtime[k] = r->ns;
        s->normalizers[k] = def;
        k++;
        if (rep) rep->defaults += r->is_default;
    }
    pc_status st = pc_hlo_featurize(t->module, &s->g, err);
    if (st) pc_error_prefix(err, "%s", where);
    return st;
}

static pc_status build_layout(const pc_hlo_tuned *t, const char *where, pc_hlo_sample *s,
                              pc_import_report *rep, char *why, size_t cap, pc_error *err) {
    count_runs(t, 0, rep);
    if (!t->module) return skip(s, why, cap, "no HloModuleProto");
    if (t->n_config_nodes == 0)
        return skip(s, why, cap, "no configurable nodes (config_index_to_node is empty)");
    int64_t nc = t->n_config_nodes, c = 0, def = -1;
    for (int32_t i = 0; i < t->n_runs; i++) {
        const pc_hlo_run *r = &t->runs[i];
        if (r->config != PC_HLO_RUN_LAYOUT || r->error || !r->has_profile || r->ns <= 0) continue;
        if (!r->has_layout || r->layout_nodes != nc)
            return pc_fail(err, PC_ERR_FORMAT, "%s: run %d: its layout config has %d nodes, "
                           "config_index_to_node has %lld", where, (int)i,
                           r->has_layout ? (int)r->layout_nodes : 0, (long long)nc);
        if (def < 0 && r->is_default) def = r->ns;
        c++;
    }
    if (def < 0) return skip(s, why, cap, "no default run among the %lld kept runs", (long long)c);

    pc_status st = pc_hlo_featurize(t->module, &s->g, err);
    if (st) {
        pc_error_prefix(err, "%s", where);
        return st;
    }
    s->kind = PC_KIND_LAYOUT;
    s->c = c;
    s->nc = nc;
    uint64_t per = (uint64_t)nc * PC_LAYOUT_CONFIG_DIM, total;
    if (!pc_mul_u64(per, (uint64_t)c, &total))
        return pc_fail(err, PC_ERR_RANGE, "%s: %lld configs x %lld nodes overflow", where,
                       (long long)c, (long long)nc);
    s->config_ids = pc_malloc_array((uint64_t)nc, sizeof *s->config_ids);
    s->config_feat = pc_malloc_array(total ? total : 1, sizeof *s->config_feat);
    s->runtime = pc_malloc_array((uint64_t)c, sizeof *s->runtime);
    uint8_t *seen = pc_calloc_array((uint64_t)s->g.n + 1, 1);
    if (!s->config_ids || !s->config_feat || !s->runtime || !seen) {
        free(seen);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for %lld x %lld layout configs",
                       where, (long long)c, (long long)nc);
    }
    for (int64_t j = 0; j < nc; j++) {
        int64_t id = t->config_index_to_node[j];
        if (id < 0 || id >= s->g.n || seen[id]) {
            free(seen);
            return pc_fail(err, PC_ERR_FORMAT, "%s: config_index_to_node[%lld] = %lld is %s",
                           where, (long long)j, (long long)id,
                           id >= 0 && id < s->g.n ? "listed twice"
                                                  : "not a node index of the module");
        }
        seen[id] = 1;
        s->config_ids[j] = id;
    }
    free(seen);
    int64_t k = 0;
    for (int32_t i = 0; i < t->n_runs; i++) {
        const pc_hlo_run *r = &t->runs[i];
        if (r->config != PC_HLO_RUN_LAYOUT || r->error || !r->has_profile || r->ns <= 0) continue;
        float *dst = s->config_feat + (uint64_t)k * per;
        for (uint64_t q = 0; q < per; q++) dst[q] = (float)r->layout[q];
        s->runtime[k] = r->ns;
        k++;
        if (rep) rep->defaults += r->is_default;
    }
    return PC_OK;
}

pc_status pc_hlo_sample_build(const pc_hlo_tuned *t, pc_kind want, const char *what, int32_t index,
                              pc_hlo_sample *s, pc_import_report *rep, char *why, size_t why_cap,
                              pc_error *err) {
    memset(s, 0, sizeof *s);
    if (why && why_cap) why[0] = '\0';
    char where[400], nb[PC_HLO_NAME_BUF];
    if (index >= 0)
        snprintf(where, sizeof where, "%s: module %d ('%s')", what ? what : "<memory>", (int)index,
                 pc_hlo_printable(mod_name(t), nb));
    else
        snprintf(where, sizeof where, "%s: module '%s'", what ? what : "<memory>",
                 pc_hlo_printable(mod_name(t), nb));
    int64_t tile = 0, layout = 0;
    for (int32_t i = 0; i < t->n_runs; i++) {
        tile += t->runs[i].config == PC_HLO_RUN_TILE;
        layout += t->runs[i].config == PC_HLO_RUN_LAYOUT;
    }
    if (tile && layout)
        return pc_fail(err, PC_ERR_FORMAT, "%s: mixes %lld tile and %lld layout runs", where,
                       (long long)tile, (long long)layout);
    pc_kind kind = tile ? PC_KIND_TILE : layout ? PC_KIND_LAYOUT : PC_KIND_AUTO;
    if (kind == PC_KIND_AUTO) {
        count_runs(t, 0, rep);
        return skip(s, why, why_cap, t->n_runs ? "no run has a configuration" : "no runs");
    }
    if (want != PC_KIND_AUTO && want != kind)
        return pc_fail(err, PC_ERR_INVALID, "%s: holds %s runs, but %s was asked for", where,
                       pc_kind_name(kind), pc_kind_name(want));
    pc_status st = kind == PC_KIND_TILE ? build_tile(t, where, s, rep, why, why_cap, err)
                                        : build_layout(t, where, s, rep, why, why_cap, err);
    if (st) pc_hlo_sample_free(s);
    return st;
}

/* The first instruction's opcode outside the TpuGraphs table, for the warning. */
static void note_first_unknown(const pc_hlo_module *m, pc_import_report *rep) {
    if (!m || rep->first_unknown[0]) return;
    for (int32_t c = 0; c < m->n_comp; c++)
        for (int32_t i = 0; i < m->comp[c].n_inst; i++) {
            const char *op = m->comp[c].inst[i].opcode;
            if (op && pc_hlo_opcode_find(op) == 0) {
                char nb[PC_HLO_NAME_BUF];
                snprintf(rep->first_unknown, sizeof rep->first_unknown, "%s",
                         pc_hlo_printable(op, nb));
                return;
            }
        }
}

/* Every module's arrays are built before any file is written: the parsed modules, their
 * graphs (node_feat whole) and configurations within pc_import_opts.max_memory. */
static pc_status samples_budget(const char *path, const pc_hlo_tuning *t, uint64_t max_memory,
                                pc_error *err) {
    int64_t nodes = 0, edges = 0;
    uint64_t held = 0, configs = 0; /* config_feat, runtime, normalizers, config_ids */
    for (int32_t i = 0; i < t->n_mods; i++) {
        const pc_hlo_tuned *m = &t->mods[i];
        if (m->module) held += pc_hlo_module_bytes(m->module, &nodes, &edges);
        configs += 8 * (uint64_t)(m->n_config_nodes > 0 ? m->n_config_nodes : 0);
        for (int32_t r = 0; r < m->n_runs; r++)
            configs += 16 + 4 * (m->runs[r].has_tile ? PC_TPUG_TILE_FEATS : 0) +
                       4 * (uint64_t)(m->runs[r].layout_nodes > 0 ? m->runs[r].layout_nodes : 0) *
                           PC_TPUG_LAYOUT_FEATS;
    }
    char how[260];
    snprintf(how, sizeof how,
             " to import it (its parsed modules, graphs of %lld nodes and %lld "
             "edges, %d and %d bytes each, and their configurations)",
             (long long)nodes, (long long)edges,
             PC_IMPORT_BYTES_PER_NODE + PC_IMPORT_BYTES_PER_FEAT_ROW, PC_IMPORT_BYTES_PER_EDGE);
    uint64_t need = held + configs +
                    (uint64_t)nodes * (PC_IMPORT_BYTES_PER_NODE + PC_IMPORT_BYTES_PER_FEAT_ROW) +
                    (uint64_t)edges * PC_IMPORT_BYTES_PER_EDGE;
    return pc_io_budget_check(need, max_memory, path, how, err);
}

pc_status pc_import_file(const char *path, const char *out_dir, const pc_import_opts *opts,
                         pc_import_report *rep, pc_error *err) {
    if (!path || !out_dir) return pc_fail(err, PC_ERR_ARG, "pc_import_file: NULL path");
    if (opts && PC_CHECK_SIZE(err, pc_import_opts, opts)) return PC_ERR_ARG;
    if (rep && PC_CHECK_RESULT_SIZE(err, pc_import_report, rep)) return PC_ERR_ARG;
    pc_import_opts o = opts ? *opts : pc_import_opts_default();
    if (o.kind != PC_KIND_AUTO && o.kind != PC_KIND_TILE && o.kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "pc_import_file: bad kind %d", (int)o.kind);
    pc_import_report local;
    pc_report *notes = rep ? rep->notes : NULL;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    rep->struct_size = sizeof *rep;
    rep->notes = notes;
    rep->container = "";
    int text = 0;
    pc_status sniffed = pc_hlo_is_text_file(path, &text, err);
    if (sniffed) return sniffed;
    if (text) return pc_import_text(path, out_dir, &o, rep, err);

    pc_hlo_tuning *t;
    pc_status st = pc_hlo_tuning_read_progress(path, o.max_memory, o.progress, o.progress_user, &t,
                                               err);
    if (st) return st;
    rep->container = pc_hlo_file_kind_name(t->file_kind);
    if (t->file_kind == PC_HLO_FILE_MODULE) {
        pc_hlo_tuning_free(t);
        return pc_fail(err, PC_ERR_INVALID, "%s: a bare HloModuleProto without tuning runs: there "
                       "are no configurations to import (expected a TuningData or "
                       "ModuleTuningData)", path);
    }
    rep->modules = t->n_mods;
    if ((st = samples_budget(path, t, o.max_memory, err))) {
        pc_hlo_tuning_free(t);
        return st;
    }
    pc_hlo_sample *samples =
        pc_calloc_array((uint64_t)(t->n_mods ? t->n_mods : 1), sizeof *samples);
    if (!samples) {
        pc_hlo_tuning_free(t);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    }

    /* Everything is featurized before anything is written. */
    char why[256];
    pc_kind kind = PC_KIND_AUTO;
    for (int32_t i = 0; i < t->n_mods && !st; i++) {
        int32_t index = t->file_kind == PC_HLO_FILE_TUNING_DATA ? i : -1;
        st = pc_hlo_sample_build(&t->mods[i], o.kind, path, index, &samples[i], rep, why,
                                 sizeof why, err);
        if (st) break;
        if (o.progress) o.progress(o.progress_user, "modules read", i + 1, t->n_mods);
        pc_hlo_sample *s = &samples[i];
        if (s->kind == PC_KIND_AUTO) {
            rep->skipped++;
            char nb[PC_HLO_NAME_BUF];
            if (notes)
                pc_report_add(notes, "skipped module %d ('%s'): %s", (int)i,
                              pc_hlo_printable(mod_name(&t->mods[i]), nb), why);
            continue;
        }
        if (kind != PC_KIND_AUTO && kind != s->kind)
            st = pc_fail(err, PC_ERR_FORMAT, "%s: mixes tile and layout modules (module %d is %s)",
                         path, (int)i, pc_kind_name(s->kind));
        kind = s->kind;
    }
    if (!st && kind == PC_KIND_AUTO && rep->modules == 0)
        st = pc_fail(err, PC_ERR_INVALID, "%s: the %s holds no modules", path, rep->container);
    else if (!st && kind == PC_KIND_AUTO)
        st = pc_fail(err, PC_ERR_INVALID,
                     "%s: no module left to import (%lld of %lld left out; last reason: %s)", path,
                     (long long)rep->skipped, (long long)rep->modules, why);
    if (!st) st = pc_mkdirs(out_dir, err);

    char stem[256], name[96], file[4096];
    pc_path_stem(path, ".pb", stem, sizeof stem);
    for (int32_t i = 0; i < t->n_mods && !st; i++) {
        pc_hlo_sample *s = &samples[i];
        if (s->kind == PC_KIND_AUTO) continue;
        if (t->file_kind == PC_HLO_FILE_TUNING_DATA) {
            pc_hlo_safe_name(mod_name(&t->mods[i]), name, sizeof name);
            snprintf(file, sizeof file, "%s/%s_%03d_%s.npz", out_dir, stem, (int)i, name);
        } else {
            snprintf(file, sizeof file, "%s/%s.npz", out_dir, stem);
        }
        st = pc_hlo_sample_write(s, file, o.compress, err);
        if (st) break;
        rep->written++;
        if (o.progress)
            o.progress(o.progress_user, "files written", rep->written, rep->modules - rep->skipped);
        rep->runs_kept += s->c;
        rep->nodes += s->g.n;
        rep->edges += s->g.m;
        rep->unknown_opcodes += s->g.unknown;
        if (s->g.unknown) note_first_unknown(t->mods[i].module, rep);
        if (notes)
            pc_report_add(notes, "wrote %s: %s, %lld nodes, %lld edges, %lld configs%s", file,
                          pc_kind_name(s->kind), (long long)s->g.n, (long long)s->g.m,
                          (long long)s->c, s->g.unknown ? " (unknown opcodes: id 0)" : "");
    }
    if (!st) rep->kind = kind;
    for (int32_t i = 0; i < t->n_mods; i++) pc_hlo_sample_free(&samples[i]);
    free(samples);
    pc_hlo_tuning_free(t);
    return st;
}
