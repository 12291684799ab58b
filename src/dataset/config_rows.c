/*
 * Row access to a layout graph's node_config_feat (c, nc, d): straight
 * copies when the array is resident or mapped, bounded forward passes over
 * the archive member when it is streamed.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dataset/graph_internal.h"

int pc_graph_streamed_(const pc_graph *g) { return g->ncf_member >= 0; }

/* Floats in one config row: nc * d. */
static uint64_t row_floats(const pc_graph *g) {
    return (uint64_t)g->nc * (uint64_t)g->cfg_dim;
}

int64_t pc_graph_chunk_rows_(const pc_graph *g) {
    /* Sized for the worst case, a float64 file read before narrowing. */
    uint64_t row_bytes = row_floats(g) * 8;
    if (row_bytes == 0) return g->c > 0 ? g->c : 1;
    uint64_t rows = g->chunk_bytes / row_bytes;
    if (rows < 1) rows = 1;
    return rows > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)rows;
}

/* ---- forward passes ---------------------------------------------------- */

pc_status pc_ncf_pass_open_(const pc_graph *g, pc_ncf_pass *p, pc_error *err) {
    memset(p, 0, sizeof *p);
    p->g = g;
    if (!pc_graph_streamed_(g)) return PC_OK;
    pc_status st = pc_npz_rows_open(g->z, g->ncf_member, &p->cur, err);
    if (st != PC_OK) return st;
    if (pc_npz_rows_info(p->cur)->dtype != PC_DTYPE_F64) return PC_OK;
    p->scratch_rows = pc_graph_chunk_rows_(g);
    /* A small array needs no more scratch than its own rows. */
    if (g->c > 0 && p->scratch_rows > g->c) p->scratch_rows = g->c;
    p->scratch = pc_malloc_array((uint64_t)p->scratch_rows, row_floats(g) * 8);
    if (p->scratch) return PC_OK;
    pc_ncf_pass_close_(p);
    return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for node_config_feat rows", g->path);
}

void pc_ncf_pass_close_(pc_ncf_pass *p) {
    pc_npz_rows_close(p->cur);
    free(p->scratch);
    memset(p, 0, sizeof *p);
}

/* float64 rows go through the scratch buffer, one bounded piece at a time. */
static pc_status read_f64(pc_ncf_pass *p, int64_t c0, int64_t n, float *out, pc_error *err) {
    uint64_t rf = row_floats(p->g);
    for (int64_t done = 0; done < n;) {
        int64_t take = n - done < p->scratch_rows ? n - done : p->scratch_rows;
        pc_status st = pc_npz_rows_read(p->cur, c0 + done, take, p->scratch, err);
        if (st != PC_OK) return st;
        float *dst = out + (uint64_t)done * rf;
        for (uint64_t k = 0; k < (uint64_t)take * rf; k++) dst[k] = (float)p->scratch[k];
        done += take;
    }
    return PC_OK;
}

pc_status pc_ncf_pass_read_(pc_ncf_pass *p, int64_t c0, int64_t n, float *out, pc_error *err) {
    uint64_t rf = row_floats(p->g);
    if (n <= 0 || rf == 0) return PC_OK;
    if (!p->cur) {
        const float *src = p->g->a[PC_K_NODE_CONFIG_FEAT].data;
        memcpy(out, src + (uint64_t)c0 * rf, (size_t)((uint64_t)n * rf * 4));
        return PC_OK;
    }
    /* float32 and float16 (widened by the cursor) land directly in out. */
    if (p->scratch) return read_f64(p, c0, n, out, err);
    return pc_npz_rows_read(p->cur, c0, n, out, err);
}

/* ---- public row access --------------------------------------------------- */

static pc_status check_layout_call(const pc_graph *g, const float *out, const char *fn,
                                   pc_error *err) {
    if (g->kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "%s: %s: not a layout graph", g->path, fn);
    if (!out) return pc_fail(err, PC_ERR_ARG, "%s: %s: NULL output", g->path, fn);
    return PC_OK;
}

pc_status pc_graph_config_feat_rows(pc_graph *g, int64_t c0, int64_t n, float *out,
                                    pc_error *err) {
    pc_status st = check_layout_call(g, out, "config_feat_rows", err);
    if (st != PC_OK) return st;
    if (c0 < 0 || n < 0 || c0 > g->c || n > g->c - c0)
        return pc_fail(err, PC_ERR_RANGE,
                       "%s: configs [%" PRId64 ", %" PRId64 ") outside [0, %" PRId64 ")",
                       g->path, c0, c0 + n, g->c);
    if (n == 0 || row_floats(g) == 0) return PC_OK;
    pc_ncf_pass p = {NULL, NULL, NULL, 0}; /* closing an unopened pass is a no-op */
    st = pc_ncf_pass_open_(g, &p, err);
    if (st != PC_OK) return st;
    st = pc_ncf_pass_read_(&p, c0, n, out, err);
    pc_ncf_pass_close_(&p);
    return st;
}

/* ---- gather ----------------------------------------------------------- */

typedef struct id_pos {
    int64_t id;
    int64_t pos; /* where the row goes in the output */
} id_pos;

static int cmp_id_pos(const void *a, const void *b) {
    const id_pos *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/*
 * One ascending pass: each window covers at most one chunk of rows starting
 * at the smallest id not yet served, so memory stays bounded whatever the ids.
 */
static pc_status gather_sorted(pc_ncf_pass *p, const id_pos *ip, int64_t n, float *out,
                               float *window, pc_error *err) {
    int64_t step = pc_graph_chunk_rows_(p->g);
    uint64_t rf = row_floats(p->g);
    for (int64_t i = 0; i < n;) {
        int64_t start = ip[i].id, j = i;
        while (j < n && ip[j].id - start < step) j++;
        pc_status st = pc_ncf_pass_read_(p, start, ip[j - 1].id - start + 1, window, err);
        if (st != PC_OK) return st;
        for (int64_t k = i; k < j; k++)
            memcpy(out + (uint64_t)ip[k].pos * rf, window + (uint64_t)(ip[k].id - start) * rf,
                   (size_t)(rf * 4));
        i = j;
    }
    return PC_OK;
}

static pc_status gather_streamed(pc_graph *g, const int64_t *ids, int64_t n, float *out,
                                 pc_error *err) {
    int64_t step = pc_graph_chunk_rows_(g);
    id_pos *ip = pc_malloc_array((uint64_t)n, sizeof *ip);
    float *window = pc_malloc_array((uint64_t)(step < g->c ? step : g->c), row_floats(g) * 4);
    pc_ncf_pass p = {NULL, NULL, NULL, 0}; /* closing an unopened pass is a no-op */
    pc_status st = ip && window ? pc_ncf_pass_open_(g, &p, err)
                                : pc_fail(err, PC_ERR_NOMEM, "%s: out of memory gathering %" PRId64
                                          " configs", g->path, n);
    if (st == PC_OK) {
        for (int64_t i = 0; i < n; i++) ip[i] = (id_pos){ids[i], i};
        qsort(ip, (size_t)n, sizeof *ip, cmp_id_pos);
        st = gather_sorted(&p, ip, n, out, window, err);
        pc_ncf_pass_close_(&p);
    }
    free(window);
    free(ip);
    return st;
}

pc_status pc_graph_config_feat_gather(pc_graph *g, const int64_t *ids, int64_t n,
                                      float *out, pc_error *err) {
    pc_status st = check_layout_call(g, out, "config_feat_gather", err);
    if (st != PC_OK) return st;
    if (n < 0 || (n > 0 && !ids))
        return pc_fail(err, PC_ERR_ARG, "%s: config_feat_gather: bad id list", g->path);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= g->c)
            return pc_fail(err, PC_ERR_RANGE,
                           "%s: config id %" PRId64 " (entry %" PRId64
                           ") outside [0, %" PRId64 ")",
                           g->path, ids[i], i, g->c);
    uint64_t rf = row_floats(g);
    if (n == 0 || rf == 0) return PC_OK;
    if (pc_graph_streamed_(g)) return gather_streamed(g, ids, n, out, err);
    const float *src = g->a[PC_K_NODE_CONFIG_FEAT].data;
    for (int64_t i = 0; i < n; i++)
        memcpy(out + (uint64_t)i * rf, src + (uint64_t)ids[i] * rf, (size_t)(rf * 4));
    return PC_OK;
}
