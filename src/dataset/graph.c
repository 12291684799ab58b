/*
 * Typed TpuGraphs graphs: key table, shape checks shared by both sources,
 * loading from .npz, accessors. pc_graph_load (load.c) picks the source.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dataset/graph_internal.h"

/* ---- key table --------------------------------------------------------- */

static const char *const key_names[PC_K_COUNT] = {
    "node_feat",       "node_opcode",     "edge_index",
    "config_feat",     "config_runtime",  "config_runtime_normalizers",
    "node_config_ids", "node_config_feat", "node_splits",
};

/* What each array becomes once loaded: ints widened, floats float32. */
static const pc_dtype key_dtypes[PC_K_COUNT] = {
    PC_DTYPE_F32, PC_DTYPE_I32, PC_DTYPE_I32, PC_DTYPE_F32, PC_DTYPE_I64,
    PC_DTYPE_I64, PC_DTYPE_I32, PC_DTYPE_F32, PC_DTYPE_I64,
};

#define BIT(k) (1u << (k))
#define COMMON_KEYS (BIT(PC_K_NODE_FEAT) | BIT(PC_K_NODE_OPCODE) | BIT(PC_K_EDGE_INDEX) | \
                     BIT(PC_K_CONFIG_RUNTIME))
#define TILE_REQUIRED (COMMON_KEYS | BIT(PC_K_CONFIG_FEAT) | BIT(PC_K_NORMALIZERS))
#define LAYOUT_REQUIRED (COMMON_KEYS | BIT(PC_K_NODE_CONFIG_IDS) | BIT(PC_K_NODE_CONFIG_FEAT))
#define LAYOUT_USED (LAYOUT_REQUIRED | BIT(PC_K_NODE_SPLITS))

const char *pc_key_name_(int k) { return key_names[k]; }
pc_dtype pc_key_dtype_(int k) { return key_dtypes[k]; }

int pc_key_used_(int k, pc_kind kind) {
    unsigned mask = kind == PC_KIND_TILE ? TILE_REQUIRED : LAYOUT_USED;
    return (mask & BIT(k)) != 0;
}

static int key_required(int k, pc_kind kind) {
    unsigned mask = kind == PC_KIND_TILE ? TILE_REQUIRED : LAYOUT_REQUIRED;
    return (mask & BIT(k)) != 0;
}

/* ---- small public helpers ----------------------------------------------- */

const char *pc_kind_name(pc_kind k) {
    switch (k) {
    case PC_KIND_TILE: return "tile";
    case PC_KIND_LAYOUT: return "layout";
    case PC_KIND_AUTO: return "auto";
    }
    return "unknown";
}

pc_load_opts pc_load_opts_default(void) {
    pc_load_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.kind = PC_KIND_AUTO;
    o.max_resident_config_bytes = PC_LOAD_DEFAULT_RESIDENT_BYTES;
    o.threads = 0;
    o.max_memory = PC_MEMORY_AUTO;
    return o;
}

void pc_shape_str_(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t len = 0;
    len += (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, d ? ", " : "", shape[d]);
    if (len < cap) snprintf(buf + len, cap - len, ndim == 1 ? ",)" : ")");
}

/* ---- shape checks ------------------------------------------------------ */

static pc_status bad_shape(pc_error *err, const pc_graph *g, int k, const pc_slot *s,
                           const char *expected) {
    char got[160];
    pc_shape_str_(s->ndim, s->shape, got, sizeof got);
    return pc_fail(err, PC_ERR_FORMAT, "%s: key '%s': expected shape %s, got %s", g->path,
                   key_names[k], expected, got);
}

static pc_status decide_kind(pc_graph *g, const pc_slot *s, pc_kind want, pc_error *err) {
    if (want == PC_KIND_TILE || want == PC_KIND_LAYOUT) {
        g->kind = want;
    } else if (s[PC_K_NODE_CONFIG_FEAT].present) {
        g->kind = PC_KIND_LAYOUT;
    } else if (s[PC_K_CONFIG_FEAT].present) {
        g->kind = PC_KIND_TILE;
    } else {
        return pc_fail(err, PC_ERR_NOTFOUND,
                       "%s: cannot tell a tile graph from a layout graph: neither key "
                       "'config_feat' (tile) nor 'node_config_feat' (layout) is present",
                       g->path);
    }
    return PC_OK;
}

static int is_float_dtype(pc_dtype t) {
    return t == PC_DTYPE_F16 || t == PC_DTYPE_F32 || t == PC_DTYPE_F64;
}

/* Presence and dtype class of every key this kind uses. */
static pc_status check_keys(pc_graph *g, const pc_slot *s, pc_error *err) {
    for (int k = 0; k < PC_K_COUNT; k++) {
        if (!pc_key_used_(k, g->kind)) continue;
        if (!s[k].present) {
            if (!key_required(k, g->kind)) continue;
            return pc_fail(err, PC_ERR_NOTFOUND, "%s: missing key '%s' (required for %s graphs)",
                           g->path, key_names[k], pc_kind_name(g->kind));
        }
        int want_float = key_dtypes[k] == PC_DTYPE_F32;
        if (want_float && !is_float_dtype(s[k].dtype))
            return pc_fail(err, PC_ERR_FORMAT,
                           "%s: key '%s': expected a float dtype (float16/32/64), got %s",
                           g->path, key_names[k], pc_dtype_name(s[k].dtype));
        if (!want_float && !pc_dtype_is_int(s[k].dtype))
            return pc_fail(err, PC_ERR_FORMAT, "%s: key '%s': expected an integer dtype, got %s",
                           g->path, key_names[k], pc_dtype_name(s[k].dtype));
        g->has[k] = 1;
    }
    return PC_OK;
}

/* A (len,) vector whose length must equal a size taken from another key. */
static pc_status check_vector(pc_graph *g, const pc_slot *s, int k, int64_t len,
                              const char *sym, const char *from, pc_error *err) {
    if (s[k].ndim == 1 && s[k].shape[0] == len) return PC_OK;
    char expected[160];
    snprintf(expected, sizeof expected, "(%s,) with %s = %" PRId64 " (from '%s')", sym, sym,
             len, from);
    return bad_shape(err, g, k, &s[k], expected);
}

static pc_status check_common(pc_graph *g, const pc_slot *s, pc_error *err) {
    const pc_slot *nf = &s[PC_K_NODE_FEAT], *ei = &s[PC_K_EDGE_INDEX];
    if (nf->ndim != 2) return bad_shape(err, g, PC_K_NODE_FEAT, nf, "(n, d)");
    g->n = nf->shape[0];
    g->feat_dim = nf->shape[1];
    pc_status st = check_vector(g, s, PC_K_NODE_OPCODE, g->n, "n", "node_feat", err);
    if (st != PC_OK) return st;
    /* An edgeless graph saved from an empty list arrives as shape (0,). */
    int empty = ei->ndim == 1 && ei->shape[0] == 0;
    if (!empty && !(ei->ndim == 2 && ei->shape[1] == 2))
        return bad_shape(err, g, PC_K_EDGE_INDEX, ei, "(m, 2)");
    g->m = ei->shape[0];
    return PC_OK;
}

static pc_status check_tile(pc_graph *g, const pc_slot *s, pc_error *err) {
    const pc_slot *cf = &s[PC_K_CONFIG_FEAT];
    if (cf->ndim != 2) return bad_shape(err, g, PC_K_CONFIG_FEAT, cf, "(c, 24)");
    g->c = cf->shape[0];
    g->cfg_dim = cf->shape[1];
    pc_status st = check_vector(g, s, PC_K_CONFIG_RUNTIME, g->c, "c", "config_feat", err);
    if (st == PC_OK) st = check_vector(g, s, PC_K_NORMALIZERS, g->c, "c", "config_feat", err);
    return st;
}

static pc_status check_splits(pc_graph *g, const pc_slot *sp, pc_error *err) {
    if (!sp->present) return PC_OK;
    if (sp->ndim == 1) {
        g->nsplits = sp->shape[0];
    } else if (sp->ndim == 2 && sp->shape[0] == 1) {
        g->nsplits = sp->shape[1];
    } else {
        return bad_shape(err, g, PC_K_NODE_SPLITS, sp, "(k,) or (1, k)");
    }
    return PC_OK;
}

static pc_status check_layout(pc_graph *g, const pc_slot *s, pc_error *err) {
    const pc_slot *ids = &s[PC_K_NODE_CONFIG_IDS], *cf = &s[PC_K_NODE_CONFIG_FEAT];
    if (ids->ndim != 1) return bad_shape(err, g, PC_K_NODE_CONFIG_IDS, ids, "(nc,)");
    g->nc = ids->shape[0];
    if (cf->ndim != 3 || cf->shape[1] != g->nc) {
        char expected[160];
        snprintf(expected, sizeof expected,
                 "(c, nc, 18) with nc = %" PRId64 " (from 'node_config_ids')", g->nc);
        return bad_shape(err, g, PC_K_NODE_CONFIG_FEAT, cf, expected);
    }
    g->c = cf->shape[0];
    g->cfg_dim = cf->shape[2];
    pc_status st = check_vector(g, s, PC_K_CONFIG_RUNTIME, g->c, "c", "node_config_feat", err);
    if (st == PC_OK) st = check_splits(g, &s[PC_K_NODE_SPLITS], err);
    return st;
}

pc_status pc_graph_check_shapes_(pc_graph *g, const pc_slot *slots, pc_kind want,
                                 pc_error *err) {
    pc_status st = decide_kind(g, slots, want, err);
    if (st == PC_OK) st = check_keys(g, slots, err);
    if (st == PC_OK) st = check_common(g, slots, err);
    if (st != PC_OK) return st;
    return g->kind == PC_KIND_TILE ? check_tile(g, slots, err) : check_layout(g, slots, err);
}

void pc_graph_canon_shape_(pc_graph *g, int k) {
    pc_array *a = &g->a[k];
    if (k == PC_K_EDGE_INDEX && a->ndim == 1) {
        a->ndim = 2;
        a->shape[0] = 0;
        a->shape[1] = 2;
    } else if (k == PC_K_NODE_SPLITS && a->ndim == 2) {
        a->ndim = 1;
        a->shape[0] = a->shape[1];
        a->shape[1] = 0;
    }
}

/* ---- graph record ------------------------------------------------------ */

pc_graph *pc_graph_new_(const char *path) {
    pc_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->path = strdup(path);
    if (!g->path) {
        free(g);
        return NULL;
    }
    for (int k = 0; k < PC_K_COUNT; k++) g->a[k] = (pc_array)PC_ARRAY_INIT;
    g->ncf_member = -1;
    g->chunk_bytes = PC_STREAM_CHUNK_BYTES;
    return g;
}

void pc_graph_free(pc_graph *g) {
    if (!g) return;
    for (int k = 0; k < PC_K_COUNT; k++) pc_array_free(&g->a[k]);
    pc_npz_close(g->z);
    free(g->path);
    free(g);
}

void pc_graph_set_chunk_bytes_(pc_graph *g, uint64_t bytes) {
    g->chunk_bytes = bytes ? bytes : PC_STREAM_CHUNK_BYTES;
}

/* ---- loading from .npz -------------------------------------------------- */

/* Header of every known key; absent keys are left not present. */
static pc_status npz_slots(pc_graph *g, pc_slot *s, int *member, pc_error *err) {
    for (int k = 0; k < PC_K_COUNT; k++) {
        memset(&s[k], 0, sizeof s[k]);
        member[k] = pc_npz_find(g->z, key_names[k]);
        if (member[k] < 0) continue;
        pc_array_info info;
        pc_status st = pc_npz_info(g->z, member[k], &info, err);
        if (st != PC_OK) return st;
        s[k].present = 1;
        s[k].dtype = info.dtype;
        s[k].fortran = info.fortran_order;
        s[k].ndim = info.ndim;
        memcpy(s[k].shape, info.shape, sizeof s[k].shape);
        s[k].data_bytes = info.data_bytes;
    }
    return PC_OK;
}

/* Bytes node_config_feat would take resident: the larger of file and f32 sizes. */
static uint64_t ncf_resident_bytes(const pc_slot *s) {
    uint64_t count = 1, f32;
    for (int d = 0; d < s->ndim; d++)
        if (!pc_mul_u64(count, (uint64_t)s->shape[d], &count)) return UINT64_MAX;
    if (!pc_mul_u64(count, 4, &f32)) return UINT64_MAX;
    return f32 > s->data_bytes ? f32 : s->data_bytes;
}

/* Checks a freshly read array against its header, widens it, canonicalises its shape. */
static pc_status finish_member(pc_graph *g, int k, const pc_slot *s, pc_error *err) {
    pc_array *a = &g->a[k];
    if (a->ndim != s->ndim || memcmp(a->shape, s->shape, (size_t)a->ndim * sizeof a->shape[0]))
        return pc_fail(err, PC_ERR_FORMAT, "%s: key '%s': data does not match its header",
                       g->path, key_names[k]);
    if (a->dtype != key_dtypes[k]) {
        char what[1200];
        snprintf(what, sizeof what, "%s: key '%s'", g->path, key_names[k]);
        pc_status st = pc_array_convert(a, key_dtypes[k], what, err);
        if (st != PC_OK) return st;
    }
    pc_graph_canon_shape_(g, k);
    return PC_OK;
}

/* Leaves node_config_feat in the file; rows are read on demand. */
static pc_status start_streaming(pc_graph *g, int member, const pc_slot *s, pc_error *err) {
    if (s->fortran)
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "%s: key 'node_config_feat': Fortran-order arrays larger than the "
                       "resident limit cannot be streamed by rows; raise the limit or "
                       "re-save the array in C order",
                       g->path);
    g->ncf_member = member;
    g->a[PC_K_NODE_CONFIG_FEAT].ndim = 3;
    memcpy(g->a[PC_K_NODE_CONFIG_FEAT].shape, s->shape, 3 * sizeof s->shape[0]);
    return PC_OK;
}

static pc_status fetch_each(pc_graph *g, const pc_slot *s, const int *member, int streamed,
                            pc_error *err) {
    for (int k = 0; k < PC_K_COUNT; k++) {
        if (!g->has[k]) continue;
        pc_status st;
        if (k == PC_K_NODE_CONFIG_FEAT && streamed) {
            st = start_streaming(g, member[k], &s[k], err);
        } else {
            st = pc_npz_read(g->z, member[k], &g->a[k], err);
            if (st == PC_OK) st = finish_member(g, k, &s[k], err);
        }
        if (st != PC_OK) return st;
    }
    return PC_OK;
}

/* Parallel inflate of the whole archive; only used when every member is kept. */
static pc_status fetch_all(pc_graph *g, const pc_slot *s, const int *member, int threads,
                           pc_error *err) {
    int count = pc_npz_count(g->z);
    pc_array *outs = pc_calloc_array((uint64_t)count, sizeof *outs);
    if (!outs) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", g->path);
    pc_status st = pc_npz_read_all(g->z, outs, threads, err);
    for (int k = 0; k < PC_K_COUNT && st == PC_OK; k++) {
        if (!g->has[k]) continue;
        g->a[k] = outs[member[k]];
        outs[member[k]] = (pc_array)PC_ARRAY_INIT;
        st = finish_member(g, k, &s[k], err);
    }
    for (int i = 0; i < count; i++) pc_array_free(&outs[i]);
    free(outs);
    return st;
}

/* Bytes array k takes loaded: the inflated member (plus its compressed copy
   while it inflates) and, when it is widened or narrowed, the converted copy. */
static uint64_t member_load_bytes(const pc_graph *g, int k, int member, const pc_slot *s) {
    uint64_t b = pc_npz_member_size(g->z, member), count = 1, conv = 0;
    if (!pc_npz_is_stored(g->z, member) && !pc_add_u64(b, pc_npz_member_csize(g->z, member), &b))
        return UINT64_MAX;
    for (int d = 0; d < s->ndim; d++)
        if (!pc_mul_u64(count, (uint64_t)s->shape[d], &count)) return UINT64_MAX;
    if (s->dtype != key_dtypes[k] &&
        (!pc_mul_u64(count, pc_dtype_size(key_dtypes[k]), &conv) || !pc_add_u64(b, conv, &b)))
        return UINT64_MAX;
    return b;
}

/* The load's bytes against pc_load_opts.max_memory, before anything is inflated. */
static pc_status check_budget(const pc_graph *g, const pc_slot *s, const int *member, int streamed,
                              const pc_load_opts *o, uint64_t *need, pc_error *err) {
    uint64_t total = 0, big = 0;
    int bigk = -1;
    for (int k = 0; k < PC_K_COUNT; k++) {
        if (!g->has[k]) continue;
        uint64_t b = k == PC_K_NODE_CONFIG_FEAT && streamed
                         ? g->chunk_bytes
                         : member_load_bytes(g, k, member[k], &s[k]);
        if (!pc_add_u64(total, b, &total)) total = UINT64_MAX;
        if (b > big || bigk < 0) big = b, bigk = k;
    }
    *need = total;
    if (o->max_memory == PC_MEMORY_AUTO && total <= PC_MEMORY_AUTO_MIN) return PC_OK;
    const uint64_t budget = pc_memory_budget(o->max_memory);
    if (total <= budget) return PC_OK;
    char t[32], b[32], bg[32], cs[32];
    pc_fmt_bytes(total, t, sizeof t);
    pc_fmt_bytes(budget, b, sizeof b);
    pc_fmt_bytes(pc_npz_member_size(g->z, member[bigk]), bg, sizeof bg);
    pc_fmt_bytes(pc_npz_member_csize(g->z, member[bigk]), cs, sizeof cs);
    return pc_fail(err, PC_ERR_NOMEM,
                   "%s: loading the graph needs %s in memory, more than the "
                   "memory budget of %s (max_memory); the largest array, member '%s.npy', "
                   "inflates to %s from %s in the file",
                   g->path, t, b, key_names[bigk], bg, cs);
}

pc_status pc_graph_npz_plan_(pc_graph *g, const pc_load_opts *o, pc_slot *slots, int *member,
                             int *streamed, uint64_t *need, pc_error *err) {
    pc_status st = npz_slots(g, slots, member, err);
    if (st == PC_OK) st = pc_graph_check_shapes_(g, slots, o->kind, err);
    if (st != PC_OK) return st;
    const uint64_t limit = o->max_resident_config_bytes;
    *streamed = g->has[PC_K_NODE_CONFIG_FEAT] && limit &&
                ncf_resident_bytes(&slots[PC_K_NODE_CONFIG_FEAT]) > limit;
    pc_npz_set_max_memory(g->z, o->max_memory);
    return check_budget(g, slots, member, *streamed, o, need, err);
}

pc_status pc_graph_load_npz_(const char *path, const pc_load_opts *o, pc_graph **out,
                             pc_error *err) {
    pc_graph *g = pc_graph_new_(path);
    if (!g) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    pc_slot slots[PC_K_COUNT];
    int member[PC_K_COUNT], streamed = 0;
    uint64_t need = 0;
    pc_status st = pc_npz_open(path, &g->z, err);
    if (st == PC_OK) st = pc_graph_npz_plan_(g, o, slots, member, &streamed, &need, err);
    if (st == PC_OK) {
        int kept = 0;
        for (int k = 0; k < PC_K_COUNT; k++) kept += g->has[k];
        /* the budget was checked for the whole load: reads go unchecked again */
        pc_npz_set_max_memory(g->z, UINT64_MAX - 1);
        if (!streamed && o->threads != 1 && kept == pc_npz_count(g->z))
            st = fetch_all(g, slots, member, o->threads, err);
        else
            st = fetch_each(g, slots, member, streamed, err);
        pc_npz_set_max_memory(g->z, o->max_memory);
    }
    if (st != PC_OK) {
        pc_graph_free(g);
        return st;
    }
    /* The archive stays open only to serve streamed rows. */
    if (g->ncf_member < 0) {
        pc_npz_close(g->z);
        g->z = NULL;
    }
    *out = g;
    return PC_OK;
}

/* ---- accessors ----------------------------------------------------------- */

const char *pc_graph_path(const pc_graph *g) { return g->path; }
pc_kind pc_graph_kind(const pc_graph *g) { return g->kind; }
int64_t pc_graph_num_nodes(const pc_graph *g) { return g->n; }
int64_t pc_graph_num_edges(const pc_graph *g) { return g->m; }
int64_t pc_graph_num_configs(const pc_graph *g) { return g->c; }
int64_t pc_graph_num_config_nodes(const pc_graph *g) { return g->nc; }
int64_t pc_graph_node_feat_dim(const pc_graph *g) { return g->feat_dim; }
int64_t pc_graph_config_dim(const pc_graph *g) { return g->cfg_dim; }

const float *pc_graph_node_feat(const pc_graph *g) { return g->a[PC_K_NODE_FEAT].data; }
const int32_t *pc_graph_node_opcode(const pc_graph *g) { return g->a[PC_K_NODE_OPCODE].data; }
const int32_t *pc_graph_edge_index(const pc_graph *g) { return g->a[PC_K_EDGE_INDEX].data; }

const int64_t *pc_graph_config_runtime(const pc_graph *g) {
    return g->a[PC_K_CONFIG_RUNTIME].data;
}

const float *pc_graph_config_feat(const pc_graph *g) { return g->a[PC_K_CONFIG_FEAT].data; }

const int64_t *pc_graph_runtime_normalizers(const pc_graph *g) {
    return g->a[PC_K_NORMALIZERS].data;
}

const int32_t *pc_graph_node_config_ids(const pc_graph *g) {
    return g->a[PC_K_NODE_CONFIG_IDS].data;
}

const int64_t *pc_graph_node_splits(const pc_graph *g, int64_t *count) {
    if (count) *count = g->has[PC_K_NODE_SPLITS] ? g->nsplits : 0;
    return g->has[PC_K_NODE_SPLITS] ? g->a[PC_K_NODE_SPLITS].data : NULL;
}

const float *pc_graph_node_config_feat(const pc_graph *g) {
    return g->a[PC_K_NODE_CONFIG_FEAT].data;
}
