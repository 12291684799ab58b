/*
 * A graph file checked without loading it: its headers planned as
 * pc_graph_load plans them (graph.c: shapes and the memory budget), then
 * every array streamed through a row cursor in chunks of a few MiB, converted
 * as the load converts it and handed to the chunked content checks
 * (validate.c). Memory stays bounded whatever the arrays inflate to, and
 * reading each member to its end makes the CRC and size checks the same as
 * a whole read's.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dataset/graph_internal.h"

/* Bytes of file data read per chunk (plus the converted copy). */
#define CHECK_CHUNK_BYTES (UINT64_C(8) << 20)

static pc_status load_checked(const char *path, const pc_load_opts *o, pc_graph **g,
                              pc_error *err) {
    return pc_graph_load(path, o, g, err);
}

/* Chunk of `rows` rows (file dtype already native, in memory dtype) -> the key's dtype. */
static pc_status convert_chunk(const pc_graph *g, int k, pc_array *a, pc_error *err) {
    if (a->dtype == pc_key_dtype_(k)) return PC_OK;
    char what[1200];
    snprintf(what, sizeof what, "%s: key '%s'", g->path, pc_key_name_(k));
    return pc_array_convert(a, pc_key_dtype_(k), what, err);
}

/* A Fortran-order member cannot be read by rows: read whole (within the budget). */
static pc_status check_whole(pc_graph *g, pc_vcheck *c, int k, int member, pc_error *err) {
    pc_array a = PC_ARRAY_INIT;
    pc_status st = pc_npz_read(g->z, member, &a, err);
    if (st == PC_OK) st = convert_chunk(g, k, &a, err);
    if (st == PC_OK) pc_vcheck_chunk_(c, k, a.data, 0, pc_array_count(&a));
    pc_array_free(&a);
    return st;
}

static pc_status check_rows(pc_graph *g, pc_vcheck *c, int k, pc_npz_rows *r, pc_error *err) {
    const pc_array_info *info = pc_npz_rows_info(r);
    const int64_t rows = info->shape[0];
    if (rows <= 0 || info->count == 0) return PC_OK;
    const int64_t per_row = info->count / rows;
    const pc_dtype mt = info->dtype == PC_DTYPE_F16 ? PC_DTYPE_F32 : info->dtype;
    const uint64_t row_bytes = (uint64_t)per_row * pc_dtype_size(mt);
    int64_t step = (int64_t)(CHECK_CHUNK_BYTES / (row_bytes ? row_bytes : 1));
    if (step < 1) step = 1;
    if (step > rows) step = rows;
    /* one buffer for every chunk; a chunk that needs converting gets a converted copy */
    void *buf = pc_malloc_array((uint64_t)step, row_bytes);
    if (!buf)
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for a chunk of '%s'", g->path,
                       pc_key_name_(k));
    pc_status st = PC_OK;
    for (int64_t r0 = 0; r0 < rows && st == PC_OK; r0 += step) {
        const int64_t n = rows - r0 < step ? rows - r0 : step;
        st = pc_npz_rows_read(r, r0, n, buf, err);
        if (st != PC_OK) break;
        if (mt == pc_key_dtype_(k)) {
            pc_vcheck_chunk_(c, k, buf, r0 * per_row, n * per_row);
            continue;
        }
        const int64_t shape[1] = {n * per_row};
        pc_array a = PC_ARRAY_INIT;
        st = pc_array_alloc(&a, mt, 1, shape, err);
        if (st == PC_OK) memcpy(a.data, buf, (size_t)(n * per_row) * pc_dtype_size(mt));
        if (st == PC_OK) st = convert_chunk(g, k, &a, err);
        if (st == PC_OK) pc_vcheck_chunk_(c, k, a.data, r0 * per_row, n * per_row);
        pc_array_free(&a);
    }
    free(buf);
    return st;
}

static pc_status check_key(pc_graph *g, pc_vcheck *c, int k, int member, pc_error *err) {
    pc_npz_rows *r = NULL;
    pc_status st = pc_npz_rows_open(g->z, member, &r, err);
    if (st == PC_ERR_UNSUPPORTED) return check_whole(g, c, k, member, err);
    if (st == PC_OK) st = check_rows(g, c, k, r, err);
    pc_npz_rows_close(r);
    return st;
}

/* The graph's shell: sizes and canonical shapes, no data. */
static void shell_shapes(pc_graph *g, const pc_slot *s) {
    for (int k = 0; k < PC_K_COUNT; k++) {
        if (!g->has[k]) continue;
        g->a[k].ndim = s[k].ndim;
        memcpy(g->a[k].shape, s[k].shape, sizeof g->a[k].shape);
        pc_graph_canon_shape_(g, k);
    }
    g->nsplits = g->has[PC_K_NODE_SPLITS] ? g->a[PC_K_NODE_SPLITS].shape[0] : 0;
}

static pc_status check_npz(const char *path, const pc_load_opts *o, int allow_zero,
                           const pc_graph_widths *w, pc_report *r, pc_error *err) {
    pc_graph *g = pc_graph_new_(path);
    if (!g) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    pc_slot slots[PC_K_COUNT];
    int member[PC_K_COUNT], streamed = 0;
    uint64_t need = 0;
    pc_status st = pc_npz_open(path, &g->z, err);
    if (st == PC_OK) st = pc_graph_npz_plan_(g, o, slots, member, &streamed, &need, err);
    pc_vcheck *c = NULL;
    if (st == PC_OK) {
        shell_shapes(g, slots);
        if (!(c = pc_vcheck_new_(g, allow_zero, w, r)))
            st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    }
    int keys[PC_K_COUNT];
    const int nk = st == PC_OK ? pc_vcheck_keys_(g, keys) : 0;
    for (int i = 0; i < nk && st == PC_OK; i++) {
        st = check_key(g, c, keys[i], member[keys[i]], err);
        pc_vcheck_key_end_(c, keys[i]);
    }
    const int64_t problems = pc_vcheck_free_(c);
    pc_graph_free(g);
    if (st != PC_OK) return st;
    return problems ? PC_ERR_INVALID : PC_OK;
}

static pc_status opts_of(const pc_load_opts *opts, pc_load_opts *o, pc_error *err) {
    if (opts && PC_CHECK_SIZE(err, pc_load_opts, opts)) return PC_ERR_ARG;
    *o = opts ? *opts : pc_load_opts_default();
    return PC_OK;
}

pc_status pc_graph_check_file(const char *path, const pc_load_opts *opts, int allow_zero_runtimes,
                              pc_report *r, pc_error *err) {
    return pc_graph_check_file_widths(path, opts, allow_zero_runtimes, NULL, r, err);
}

pc_status pc_graph_check_file_widths(const char *path, const pc_load_opts *opts,
                                     int allow_zero_runtimes, const pc_graph_widths *widths,
                                     pc_report *r, pc_error *err) {
    pc_load_opts o;
    if (!path) return pc_fail(err, PC_ERR_ARG, "pc_graph_check_file: NULL path");
    pc_status st = opts_of(opts, &o, err);
    if (st != PC_OK) return st;
    if (widths && PC_CHECK_SIZE(err, pc_graph_widths, widths)) return PC_ERR_ARG;
    if (pc_is_regular(path)) return check_npz(path, &o, allow_zero_runtimes, widths, r, err);
    pc_graph *g = NULL; /* a cache directory; anything else fails as the load does */
    if ((st = load_checked(path, &o, &g, err)) != PC_OK) return st;
    st = pc_graph_validate_widths(g, allow_zero_runtimes, widths, r);
    pc_graph_free(g);
    return st;
}

pc_status pc_graph_probe(const char *path, const pc_load_opts *opts, pc_graph_shape *out,
                         pc_error *err) {
    if (!path || !out) return pc_fail(err, PC_ERR_ARG, "pc_graph_probe: NULL argument");
    if (PC_CHECK_RESULT_SIZE(err, pc_graph_shape, out)) return PC_ERR_ARG;
    pc_load_opts o;
    pc_status st = opts_of(opts, &o, err);
    if (st != PC_OK) return st;
    pc_graph *g = NULL;
    uint64_t need = 0;
    if (!pc_is_regular(path)) {
        st = load_checked(path, &o, &g, err);
    } else if ((g = pc_graph_new_(path)) == NULL) {
        st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    } else {
        pc_slot slots[PC_K_COUNT];
        int member[PC_K_COUNT], streamed = 0;
        st = pc_npz_open(path, &g->z, err);
        if (st == PC_OK) st = pc_graph_npz_plan_(g, &o, slots, member, &streamed, &need, err);
        if (st == PC_OK) shell_shapes(g, slots);
    }
    if (st == PC_OK) {
        const size_t size = out->struct_size;
        memset(out, 0, sizeof *out);
        out->struct_size = size;
        out->kind = g->kind;
        out->nodes = g->n;
        out->edges = g->m;
        out->configs = g->c;
        out->config_nodes = g->nc;
        out->node_splits = g->nsplits;
        out->node_feat_dim = g->feat_dim;
        out->config_dim = g->cfg_dim;
        out->load_bytes = need;
    }
    pc_graph_free(g);
    return st;
}
