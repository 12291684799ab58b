/*
 * pc_synth_sim: one graph synth wrote, rebuilt from its stem and synth's
 * options (plan.c builds it exactly as pc_synth_write did) and checked
 * against the file's arrays, with its noise-free cost model: layout.c's
 * sy_layout_cost or tile.c's sy_tile_graph_cost.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "perfcast/npz.h"
#include "perfcast/synth.h"
#include "synth/synth_internal.h"

struct pc_synth_sim {
    int tile;
    sy_tile_graph g;     /* tile */
    sy_layout_prog lp;   /* layout */
    sy_layout_model *lm; /* layout */
    double default_ns;
    char desc[160];
};

/* ---- the file ------------------------------------------------------------ */

typedef struct file_graph {
    int tile;
    char model[192]; /* the stem before "_s<N>" */
    int64_t stem_index;
    pc_array feat, opcode, edges, ids; /* F32, I64, I64, I64 (ids: layout) */
} file_graph;

static void file_graph_free(file_graph *f) {
    pc_array_free(&f->feat);
    pc_array_free(&f->opcode);
    pc_array_free(&f->edges);
    pc_array_free(&f->ids);
}

static int all_digits(const char *s, const char *e) {
    if (s >= e) return 0;
    for (; s < e; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

/* "<model>_s<N>" ending at e: the model into f->model and N. */
static int split_stem(const char *s, const char *e, file_graph *f) {
    for (const char *p = e - 2; p > s; p--)
        if (p[0] == '_' && p[1] == 's' && all_digits(p + 2, e)) {
            size_t n = (size_t)(p - s);
            if (n >= sizeof f->model) return -1;
            memcpy(f->model, s, n);
            f->model[n] = 0;
            f->stem_index = strtoll(p + 2, NULL, 10);
            return f->stem_index >= 0 && f->stem_index < INT64_C(1) << 40 ? 0 : -1;
        }
    return -1;
}

static pc_status parse_stem(const char *path, file_graph *f, pc_error *err) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *e = b + strlen(b);
    if (e - b > 4 && !strcmp(e - 4, ".npz")) e -= 4;
    const char *want = f->tile ? "<model>_s<N>_fusion_<K>" : "<model>_s<N>";
    if (f->tile) {
        const char *fu = NULL;
        for (const char *p = b; p + 8 <= e; p++)
            if (!memcmp(p, "_fusion_", 8) && all_digits(p + 8, e)) fu = p;
        if (!fu) goto bad;
        e = fu;
    }
    if (split_stem(b, e, f) == 0) return PC_OK;
bad:
    return pc_fail(err, PC_ERR_FORMAT,
                   "%s: the name is not one synth gives a %s graph (expected %s.npz), so "
                   "it names no synthetic graph",
                   path, f->tile ? "tile" : "layout", want);
}

static pc_status read_as(pc_npz *z, const char *path, const char *key, pc_dtype t, pc_array *out,
                         pc_error *err) {
    int i = pc_npz_find(z, key);
    if (i < 0) return pc_fail(err, PC_ERR_FORMAT, "%s: no '%s' array", path, key);
    pc_status st = pc_npz_read(z, i, out, err);
    if (!st) st = pc_array_convert(out, t, key, err);
    return st;
}

static pc_status read_file(const char *path, file_graph *f, pc_error *err) {
    pc_npz *z = NULL;
    pc_status st = pc_npz_open(path, &z, err);
    if (st) return st;
    int tile = pc_npz_find(z, "config_feat") >= 0, layout = pc_npz_find(z, "node_config_feat") >= 0;
    if (tile == layout)
        st = pc_fail(err, PC_ERR_FORMAT,
                     "%s: expected either config_feat (tile) or "
                     "node_config_feat (layout), found %s",
                     path, tile ? "both" : "neither");
    f->tile = tile;
    if (!st) st = parse_stem(path, f, err);
    if (!st) st = read_as(z, path, "node_feat", PC_DTYPE_F32, &f->feat, err);
    if (!st) st = read_as(z, path, "node_opcode", PC_DTYPE_I64, &f->opcode, err);
    if (!st) st = read_as(z, path, "edge_index", PC_DTYPE_I64, &f->edges, err);
    if (!st && !tile) st = read_as(z, path, "node_config_ids", PC_DTYPE_I64, &f->ids, err);
    pc_npz_close(z);
    return st;
}

/* ---- matching a rebuilt graph --------------------------------------------- */

/* 1 if module m (and its configurable nodes ids, layout) is the file's graph. */
static int same_graph(const sy_module *m, const int64_t *ids, int64_t nc, const file_graph *f) {
    if (f->feat.ndim != 2 || f->feat.shape[0] != m->n || f->feat.shape[1] != PC_TPUG_NODE_FEATS ||
        pc_array_count(&f->opcode) != m->n)
        return 0;
    const float *feat = f->feat.data;
    const int64_t *op = f->opcode.data;
    float row[PC_TPUG_NODE_FEATS];
    for (int64_t i = 0; i < m->n; i++) {
        if (op[i] != m->inst[i].op) return 0;
        sy_featurize(m, i, row);
        if (memcmp(row, feat + i * PC_TPUG_NODE_FEATS, sizeof row)) return 0;
    }
    int64_t ne = sy_edges(m, NULL);
    if (ne < 0 || pc_array_count(&f->edges) != 2 * ne) return 0;
    int64_t *e = malloc((size_t)(ne ? ne : 1) * 2 * sizeof *e);
    int same = e && sy_edges(m, e) == ne && !memcmp(e, f->edges.data, (size_t)ne * 2 * sizeof *e);
    free(e);
    if (!same || !ids) return same;
    return pc_array_count(&f->ids) == nc && !memcmp(ids, f->ids.data, (size_t)nc * sizeof *ids);
}

/* The split and index of stem index k in plan p (kind 0 tile, 1 layout); -1 past the end. */
static int locate(const sy_plan *p, int kind, int64_t k, int64_t *index) {
    for (int s = 0; s < 3; s++) {
        if (k < p->count[kind][s]) {
            *index = k;
            return s;
        }
        k -= p->count[kind][s];
    }
    return -1;
}

static const char *const split_names[3] = {"train", "valid", "test"};

/* Tries one scale; 1 found (s filled), 0 not this one, -1 out of memory. */
static int try_scale(pc_synth_sim *s, const pc_synth_opts *o, const file_graph *f) {
    sy_plan p;
    sy_plan_make(&p, o);
    int64_t index;
    int split = locate(&p, f->tile ? 0 : 1, f->stem_index, &index);
    if (split < 0) return 0;
    if (f->tile) {
        sy_rng r;
        if (sy_tile_prog_build(&p, split, index, &s->g, &r) != 0) return -1;
        if (!strcmp(s->g.model, f->model) && same_graph(&s->g.mod, NULL, 0, f)) {
            s->default_ns = s->g.cost_ns[s->g.default_config];
            snprintf(s->desc, sizeof s->desc, "tile:xla %s %lld (scale %s)", split_names[split],
                     (long long)index, pc_synth_scale_name(o->scale));
            return 1;
        }
        sy_tile_graph_free(&s->g);
        return 0;
    }
    for (int nlp = 0; nlp < 2; nlp++) {
        if (sy_layout_prog_build(&p, nlp, split, index, &s->lp) != 0) return -1;
        if (!strcmp(s->lp.name, f->model) && same_graph(&s->lp.m, s->lp.ids, s->lp.nc, f)) {
            if (!(s->lm = sy_layout_model_new(&s->lp.m, s->lp.ids, s->lp.nc))) return -1;
            s->default_ns = sy_layout_cost(s->lm, NULL);
            snprintf(s->desc, sizeof s->desc, "layout:%s %s %lld (scale %s)", nlp ? "nlp" : "xla",
                     split_names[split], (long long)index, pc_synth_scale_name(o->scale));
            return 1;
        }
        sy_layout_prog_free(&s->lp);
    }
    return 0;
}

pc_status pc_synth_sim_load(const char *path, const pc_synth_opts *opts, pc_synth_sim **out,
                            pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!out) return pc_fail(err, PC_ERR_ARG, "simulate: NULL output");
    *out = NULL;
    if (!path) return pc_fail(err, PC_ERR_ARG, "simulate: no file");
    pc_synth_opts o = opts ? *opts : pc_synth_opts_default();
    if (opts && PC_CHECK_SIZE(err, pc_synth_opts, opts)) return PC_ERR_ARG;
    if ((unsigned)o.scale >= PC_SYNTH_SCALE_COUNT)
        return pc_fail(err, PC_ERR_ARG, "simulate: unknown pc_synth_opts.scale");
    file_graph f;
    memset(&f, 0, sizeof f);
    pc_status st = read_file(path, &f, err);
    pc_synth_sim *s = calloc(1, sizeof *s);
    if (!st && !s) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    int found = 0;
    pc_synth_scale first = o.scale;
    for (int k = 0; !st && !found && k < PC_SYNTH_SCALE_COUNT; k++) {
        o.scale = k == 0 ? first : (pc_synth_scale)(k <= (int)first ? k - 1 : k);
        found = try_scale(s, &o, &f);
        if (found < 0)
            st = pc_fail(err, PC_ERR_NOMEM, "simulate: out of memory rebuilding %s", path);
    }
    if (!st && !found)
        st = pc_fail(err, PC_ERR_FORMAT,
                     "%s: not a graph synth wrote with pc_synth_opts.seed %llu: no %s graph "
                     "'%s' at stem index %lld of any scale has this node_feat, node_opcode and "
                     "edge_index (graphs_per_split, layout_nodes and tile_configs must be the "
                     "ones synth was run with)",
                     path, (unsigned long long)o.seed, f.tile ? "tile" : "layout", f.model,
                     (long long)f.stem_index);
    if (s) s->tile = f.tile;
    file_graph_free(&f);
    if (st) {
        pc_synth_sim_free(s);
        return st;
    }
    *out = s;
    return PC_OK;
}

void pc_synth_sim_free(pc_synth_sim *s) {
    if (!s) return;
    sy_tile_graph_free(&s->g);
    sy_layout_model_free(s->lm);
    sy_layout_prog_free(&s->lp);
    free(s);
}

int pc_synth_sim_is_tile(const pc_synth_sim *s) { return s->tile; }
int64_t pc_synth_sim_config_nodes(const pc_synth_sim *s) { return s->tile ? 0 : s->lp.nc; }
const char *pc_synth_sim_describe(const pc_synth_sim *s) { return s->desc; }
double pc_synth_sim_default_ns(const pc_synth_sim *s) { return s->default_ns; }

/* ---- timing configs ---------------------------------------------------------- */

static pc_status check_tile(const pc_synth_sim *s, int64_t c, const float *row, int64_t *t,
                            pc_error *err) {
    int64_t ext[SY_MAX_RANK];
    int n = sy_tile_graph_dims(&s->g, ext);
    for (int i = 0; i < SY_MAX_RANK; i++) {
        float v = row[PC_TPUG_TILE_COL_KERNEL + i];
        t[i] = i < n ? (int64_t)v : 0;
        if (i < n && !(v >= 1.0f && (double)v <= (double)ext[i] && (float)t[i] == v))
            return pc_fail(err, PC_ERR_ARG,
                           "config %lld: kernel bound %d is %g, expected an "
                           "integer in [1, %lld] (the kernel's extent)",
                           (long long)c, i, (double)v, (long long)ext[i]);
    }
    return PC_OK;
}

/* Each tensor of each node: all -1, or a permutation of its rank's dims. */
static pc_status check_layout(const pc_synth_sim *s, int64_t c, const float *row, pc_error *err) {
    for (int64_t j = 0; j < s->lp.nc; j++) {
        int ranks[3] = {0, 0, 0};
        int nt = sy_layout_tensor_ranks(&s->lp.m, s->lp.ids[j], ranks);
        for (int t = 0; t < 3; t++) {
            const float *f = row + j * PC_TPUG_LAYOUT_FEATS + t * SY_MAX_RANK;
            int r = t < nt ? sy_rank_bound(ranks[t]) : 0, seen = 0, ok = 1;
            if (f[0] < 0) {
                for (int i = 1; i < SY_MAX_RANK; i++) ok &= f[i] < 0;
            } else {
                for (int i = 0; i < SY_MAX_RANK; i++) {
                    int v = (int)f[i];
                    if (i >= r)
                        ok &= f[i] < 0;
                    else if (!(f[i] >= 0 && f[i] == (float)v && v < r && !(seen & 1 << v)))
                        ok = 0;
                    else
                        seen |= 1 << v;
                }
                ok &= r > 0;
            }
            if (!ok)
                return pc_fail(err, PC_ERR_ARG,
                               "config %lld: node_config_feat of configurable "
                               "node %lld (node %lld) tensor %d is not all -1 or a permutation "
                               "of 0..%d (the tensor's rank is %d)",
                               (long long)c, (long long)j, (long long)s->lp.ids[j], t, r - 1, r);
        }
    }
    return PC_OK;
}

pc_status pc_synth_sim_run(pc_synth_sim *s, const float *configs, int64_t n, double *ns,
                           pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!s || (n > 0 && (!configs || !ns)) || n < 0)
        return pc_fail(err, PC_ERR_ARG, "simulate: NULL argument or negative count");
    size_t w = s->tile ? PC_TPUG_TILE_FEATS : (size_t)s->lp.nc * PC_TPUG_LAYOUT_FEATS;
    for (int64_t c = 0; c < n; c++) {
        const float *row = configs + (size_t)c * w;
        if (s->tile) {
            int64_t t[SY_MAX_RANK];
            pc_status st = check_tile(s, c, row, t, err);
            if (st) return st;
            ns[c] = sy_tile_graph_cost(&s->g, t);
        } else {
            pc_status st = check_layout(s, c, row, err);
            if (st) return st;
            ns[c] = sy_layout_cost(s->lm, row);
        }
    }
    return PC_OK;
}
