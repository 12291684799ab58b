/*
 * Content checks of a loaded graph. Every problem is reported, but each kind
 * of problem is capped at a few lines plus a count, so a broken file with a
 * million bad edges yields a readable report.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dataset/graph_internal.h"

#define PC_REPORT_CAP 10
#define PC_OPCODE_MAX 255

typedef struct vctx {
    const pc_graph *g;
    pc_report *r;
    int64_t problems;
} vctx;

/* One kind of problem: lines past the cap are only counted. */
typedef struct vkind {
    vctx *v;
    const char *what; /* for the "... and N more <what>" line */
    int64_t count;
} vkind;

static void emit(vctx *v, const char *fmt, va_list ap) PC_PRINTF(2, 0);

static void emit(vctx *v, const char *fmt, va_list ap) {
    char line[768];
    vsnprintf(line, sizeof line, fmt, ap);
    if (v->r) pc_report_add(v->r, "%s: %s", v->g->path, line);
}

static void problem(vctx *v, const char *fmt, ...) PC_PRINTF(2, 3);

static void problem(vctx *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit(v, fmt, ap);
    va_end(ap);
    v->problems++;
}

static void kind_add(vkind *k, const char *fmt, ...) PC_PRINTF(2, 3);

static void kind_add(vkind *k, const char *fmt, ...) {
    k->v->problems++;
    if (k->count++ >= PC_REPORT_CAP) return;
    va_list ap;
    va_start(ap, fmt);
    emit(k->v, fmt, ap);
    va_end(ap);
}

static void kind_end(vkind *k) {
    if (k->count > PC_REPORT_CAP && k->v->r)
        pc_report_add(k->v->r, "%s: ... and %" PRId64 " more %s", k->v->g->path,
                      k->count - PC_REPORT_CAP, k->what);
}

/* ---- structure --------------------------------------------------------- */

static void check_sizes(vctx *v) {
    const pc_graph *g = v->g;
    if (g->n == 0) problem(v, "graph has no nodes (node_feat has 0 rows)");
    if (g->c == 0) problem(v, "graph has no configs (config_runtime is empty)");
    if (g->kind == PC_KIND_LAYOUT && g->nc == 0)
        problem(v, "layout graph has no configurable nodes (node_config_ids is empty)");
}

static void check_opcodes(vctx *v) {
    const int32_t *op = v->g->a[PC_K_NODE_OPCODE].data;
    vkind k = {v, "opcodes out of range", 0};
    for (int64_t i = 0; i < v->g->n; i++)
        if (op[i] < 0 || op[i] > PC_OPCODE_MAX)
            kind_add(&k, "node_opcode[%" PRId64 "] = %" PRId32 " is outside [0, %d]", i, op[i],
                     PC_OPCODE_MAX);
    kind_end(&k);
}

static void check_edges(vctx *v) {
    const int32_t *e = v->g->a[PC_K_EDGE_INDEX].data;
    int64_t n = v->g->n;
    vkind k = {v, "edges with endpoints out of range", 0};
    for (int64_t i = 0; i < v->g->m; i++) {
        int32_t a = e[2 * i], b = e[2 * i + 1];
        if (a < 0 || a >= n || b < 0 || b >= n)
            kind_add(&k,
                     "edge_index[%" PRId64 "] = [%" PRId32 ", %" PRId32
                     "]: endpoint outside [0, %" PRId64 ")",
                     i, a, b, n);
    }
    kind_end(&k);
}

static void check_config_ids(vctx *v) {
    const pc_graph *g = v->g;
    const int32_t *ids = g->a[PC_K_NODE_CONFIG_IDS].data;
    /* n is backed by node_feat's real data, so this allocation is bounded. */
    unsigned char *seen = g->n > 0 ? calloc((size_t)g->n, 1) : NULL;
    if (g->n > 0 && !seen) problem(v, "node_config_ids: out of memory checking uniqueness");
    vkind range = {v, "config ids out of range", 0};
    vkind dup = {v, "repeated config ids", 0};
    for (int64_t i = 0; i < g->nc; i++) {
        if (ids[i] < 0 || ids[i] >= g->n) {
            kind_add(&range, "node_config_ids[%" PRId64 "] = %" PRId32 " is outside [0, %" PRId64 ")",
                     i, ids[i], g->n);
        } else if (seen && seen[ids[i]]) {
            kind_add(&dup, "node_config_ids[%" PRId64 "] = %" PRId32 " repeats an earlier id", i,
                     ids[i]);
        } else if (seen) {
            seen[ids[i]] = 1;
        }
    }
    kind_end(&range);
    kind_end(&dup);
    free(seen);
}

static void check_splits(vctx *v) {
    const pc_graph *g = v->g;
    int64_t k = 0;
    const int64_t *s = pc_graph_node_splits(g, &k);
    vkind range = {v, "splits out of range", 0};
    vkind order = {v, "splits out of order", 0};
    for (int64_t i = 0; i < k; i++) {
        if (s[i] < 0 || s[i] > g->n)
            kind_add(&range, "node_splits[%" PRId64 "] = %" PRId64 " is outside [0, %" PRId64 "]",
                     i, s[i], g->n);
        if (i > 0 && s[i] < s[i - 1])
            kind_add(&order,
                     "node_splits[%" PRId64 "] = %" PRId64 " is smaller than node_splits[%" PRId64
                     "] = %" PRId64 " (splits must be non-decreasing)",
                     i, s[i], i - 1, s[i - 1]);
    }
    kind_end(&range);
    kind_end(&order);
}

/* ---- runtimes ---------------------------------------------------------- */

static void check_runtimes(vctx *v, int key, int allow_zero) {
    const int64_t *t = v->g->a[key].data;
    const char *name = pc_key_name_(key);
    int64_t c = v->g->c, zeros = 0;
    for (int64_t i = 0; i < c; i++) zeros += t[i] == 0;
    /* Test splits carry all-zero runtimes; a mix of zeros and values is a bug. */
    if (allow_zero && zeros == c) return;
    if (zeros == c && c > 0) {
        problem(v, "%s: all %" PRId64 " values are zero (as in a test split; allow zero "
                "runtimes for test data)", name, c);
        return;
    }
    const char *why = allow_zero && zeros ? " (zeros are accepted only when all are zero)" : "";
    char what[96];
    snprintf(what, sizeof what, "non-positive values in %s", name);
    vkind k = {v, what, 0};
    for (int64_t i = 0; i < c; i++)
        if (t[i] <= 0)
            kind_add(&k, "%s[%" PRId64 "] = %" PRId64 " is not positive%s", name, i, t[i], why);
    kind_end(&k);
}

/* ---- features ---------------------------------------------------------- */

/* "[i][j][k]" for a flat index into a C-order array. */
static void index_str(int64_t flat, int ndim, const int64_t *shape, char *buf, size_t cap) {
    int64_t idx[PC_MAX_DIMS];
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t dim = shape[d] > 0 ? shape[d] : 1;
        idx[d] = flat % dim;
        flat /= dim;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "[%" PRId64 "]", idx[d]);
}

/* Scans count floats that start at flat index `base` of the array `key`. */
static void scan_finite(vkind *k, int key, const float *x, int64_t base, int64_t count) {
    const pc_array *a = &k->v->g->a[key];
    for (int64_t i = 0; i < count; i++) {
        if (isfinite(x[i])) continue;
        char where[128];
        index_str(base + i, a->ndim, a->shape, where, sizeof where);
        kind_add(k, "%s%s = %g is not finite", pc_key_name_(key), where, (double)x[i]);
    }
}

static void check_finite(vctx *v, int key) {
    const pc_array *a = &v->g->a[key];
    char what[96];
    snprintf(what, sizeof what, "non-finite values in %s", pc_key_name_(key));
    vkind k = {v, what, 0};
    if (a->data) scan_finite(&k, key, a->data, 0, pc_array_count(a));
    kind_end(&k);
}

/* A streamed node_config_feat is scanned in one chunked pass (bounded memory). */
static void check_finite_streamed(vctx *v) {
    const pc_graph *g = v->g;
    int64_t step = pc_graph_chunk_rows_(g), row = g->nc * g->cfg_dim;
    if (g->c == 0 || row == 0) return;
    if (step > g->c) step = g->c;
    vkind k = {v, "non-finite values in node_config_feat", 0};
    pc_error e;
    pc_ncf_pass p = {NULL, NULL, NULL, 0}; /* closing an unopened pass is a no-op */
    float *buf = pc_malloc_array((uint64_t)step, (uint64_t)row * 4);
    pc_status st = buf ? pc_ncf_pass_open_(g, &p, &e)
                       : pc_fail(&e, PC_ERR_NOMEM, "out of memory for a chunk of rows");
    for (int64_t c0 = 0; st == PC_OK && c0 < g->c; c0 += step) {
        int64_t take = g->c - c0 < step ? g->c - c0 : step;
        st = pc_ncf_pass_read_(&p, c0, take, buf, &e);
        if (st == PC_OK) scan_finite(&k, PC_K_NODE_CONFIG_FEAT, buf, c0 * row, take * row);
    }
    pc_ncf_pass_close_(&p);
    if (st != PC_OK) problem(v, "node_config_feat: cannot scan the streamed rows: %s", e.msg);
    free(buf);
    kind_end(&k);
}

static void check_features(vctx *v) {
    check_finite(v, PC_K_NODE_FEAT);
    if (v->g->kind == PC_KIND_TILE) {
        check_finite(v, PC_K_CONFIG_FEAT);
    } else if (pc_graph_streamed_(v->g)) {
        check_finite_streamed(v);
    } else {
        check_finite(v, PC_K_NODE_CONFIG_FEAT);
    }
}

pc_status pc_graph_validate(const pc_graph *g, int allow_zero_runtimes, pc_report *r) {
    if (!g) return PC_ERR_ARG;
    vctx v = {g, r, 0};
    check_sizes(&v);
    check_opcodes(&v);
    check_edges(&v);
    if (g->kind == PC_KIND_LAYOUT) {
        check_config_ids(&v);
        check_splits(&v);
    }
    check_runtimes(&v, PC_K_CONFIG_RUNTIME, allow_zero_runtimes);
    if (g->kind == PC_KIND_TILE) check_runtimes(&v, PC_K_NORMALIZERS, allow_zero_runtimes);
    check_features(&v);
    return v.problems ? PC_ERR_INVALID : PC_OK;
}
