/*
 * pc_encode_tool: runs the internal feature encodings (src/gnn/encode.h)
 * on one array so tests/scripts/test_encode_numpy.py can compare them with
 * the independent numpy implementation in bench/encode_np.py.
 *
 *   pc_encode_tool BITS IN.npz OUT.npz KIND
 *
 * BITS: the pc_encode_opts bits, 0..127 (bit 0 pad_minus1, bit 1
 * dim_encodings, bit 2 layout_categories, bit 3 roofline, bit 4 mismatch,
 * bit 5 steps; decimal or 0x hex). IN.npz holds a float32 2-D array `x` (rows, in_dim);
 * KIND is node, tile or layout. Writes `y` (rows, width) float32 to OUT.npz
 * (stored). The graph-wide encodings read the graph from IN.npz too: int32
 * `op` (n,) and `edges` (m, 2) (node x is then the graph's node_feat); for
 * layout, float32 `feat` (n, 140), int32 `edges` and `cfg_ids` (nc,), x
 * holding whole configs (c * nc rows); for tile with steps, float32 `feat`
 * (the kernel's node_feat).
 *
 * Exit status: 0 on success, 1 on any error (message on stderr as
 * "pc_encode_tool: ...").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnn/encode.h"
#include "perfcast/npz.h"

static int fail(const pc_error *err) {
    fprintf(stderr, "pc_encode_tool: error (%s): %s\n", pc_status_name(err->code), err->msg);
    return 1;
}

static int usage(const char *why) {
    fprintf(stderr,
            "pc_encode_tool: %s\n"
            "usage: pc_encode_tool BITS IN.npz OUT.npz KIND  (BITS 0..127, KIND node|tile|layout)\n",
            why);
    return 1;
}

static int parse_bits(const char *s, uint32_t *out) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 0);
    if (!*s || *end || errno || s[0] == '-' || v > 0xffffffffUL) return 0;
    *out = (uint32_t)v;
    return 1;
}

/* Member `name` of z into a (dtype and ndim checked); 0 when absent, -1 on error. */
static int member(pc_npz *z, const char *name, pc_dtype dt, int ndim, pc_array *a) {
    int idx = pc_npz_find(z, name);
    if (idx < 0) return 0;
    pc_error err;
    if (pc_npz_read(z, idx, a, &err) != PC_OK) {
        fail(&err);
        return -1;
    }
    if (a->dtype != dt || a->ndim != ndim) {
        fprintf(stderr, "pc_encode_tool: '%s' is %s with %d dimensions, need %s %d-D\n", name,
                pc_dtype_name(a->dtype), a->ndim, pc_dtype_name(dt), ndim);
        return -1;
    }
    return 1;
}

/* The graph of IN.npz (members op, edges, feat, cfg_ids); -1 on a bad member. */
static int read_graph(pc_npz *z, const pc_array *x, int is_node, pc_array *arr,
                      pc_encode_graph *g) {
    static const char *const names[4] = {"op", "edges", "feat", "cfg_ids"};
    static const int ndims[4] = {1, 2, 2, 1};
    int have[4];
    for (int i = 0; i < 4; i++) {
        have[i] = member(z, names[i], i == 2 ? PC_DTYPE_F32 : PC_DTYPE_I32, ndims[i], &arr[i]);
        if (have[i] < 0) return -1;
    }
    const pc_array *feat = is_node ? x : &arr[2];
    memset(g, 0, sizeof *g);
    if (is_node || have[2]) {
        g->n = feat->shape[0];
        g->feat = feat->data;
        g->dim = (int)feat->shape[1];
    }
    if (have[0] && arr[0].shape[0] == g->n) g->opcode = arr[0].data;
    if (have[1] && arr[1].shape[1] == 2) {
        g->edges = arr[1].data;
        g->m = arr[1].shape[0];
    }
    if (have[3]) {
        g->cfg_ids = arr[3].data;
        g->nc = arr[3].shape[0];
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) return usage("expected 4 arguments");
    const char *in_path = argv[2], *out_path = argv[3], *kind_name = argv[4];
    uint32_t bits;
    if (!parse_bits(argv[1], &bits)) {
        fprintf(stderr, "pc_encode_tool: BITS is not a non-negative integer: '%s'\n", argv[1]);
        return 1;
    }
    int is_node = strcmp(kind_name, "node") == 0;
    pc_kind kind = PC_KIND_AUTO;
    if (strcmp(kind_name, "tile") == 0)
        kind = PC_KIND_TILE;
    else if (strcmp(kind_name, "layout") == 0)
        kind = PC_KIND_LAYOUT;
    else if (!is_node) {
        fprintf(stderr, "pc_encode_tool: unknown KIND '%s' (node, tile or layout)\n", kind_name);
        return 1;
    }

    pc_error err;
    pc_error_clear(&err);
    pc_encode_opts opts;
    if (pc_encode_opts_from_bits(bits, &opts, &err) != PC_OK) return fail(&err);

    pc_npz *z = NULL;
    if (pc_npz_open(in_path, &z, &err) != PC_OK) return fail(&err);
    int idx = pc_npz_find(z, "x");
    if (idx < 0) {
        fprintf(stderr, "pc_encode_tool: %s: no member 'x'\n", in_path);
        pc_npz_close(z);
        return 1;
    }
    pc_array x = PC_ARRAY_INIT, y = PC_ARRAY_INIT;
    pc_array garr[4] = {PC_ARRAY_INIT, PC_ARRAY_INIT, PC_ARRAY_INIT, PC_ARRAY_INIT};
    int rc = 0;
    if (pc_npz_read(z, idx, &x, &err) != PC_OK) {
        rc = fail(&err);
        goto done;
    }
    if (x.dtype != PC_DTYPE_F32 || x.ndim != 2) {
        fprintf(stderr, "pc_encode_tool: %s: 'x' is %s with %d dimensions, need float32 2-D\n",
                in_path, pc_dtype_name(x.dtype), x.ndim);
        rc = 1;
        goto done;
    }
    int64_t rows = x.shape[0], cols = x.shape[1];
    if (cols <= 0 || cols > 1000000) {
        fprintf(stderr, "pc_encode_tool: %s: 'x' has %" PRId64 " columns\n", in_path, cols);
        rc = 1;
        goto done;
    }
    int in_dim = (int)cols;
    int width = is_node ? pc_encode_node_width(&opts, in_dim)
                        : pc_encode_config_width(&opts, kind, in_dim);
    if (width < 0) {
        fprintf(stderr,
                "pc_encode_tool: %s: 'x' has %d columns, too few for %s features with bits %" PRIu32
                "\n",
                in_path, in_dim, kind_name, bits);
        rc = 1;
        goto done;
    }
    int64_t shape[2] = {rows, width};
    if (pc_array_alloc(&y, PC_DTYPE_F32, 2, shape, &err) != PC_OK) {
        rc = fail(&err);
        goto done;
    }
    pc_encode_graph g;
    if (read_graph(z, &x, is_node, garr, &g) < 0) {
        rc = 1;
        goto done;
    }
    pc_status st;
    if (is_node && opts.roofline) {
        if (!g.opcode || !g.edges) {
            fprintf(stderr, "pc_encode_tool: %s: roofline needs int32 'op' (rows,) and "
                    "'edges' (m, 2)\n", in_path);
            rc = 1;
            goto done;
        }
        st = pc_encode_node_graph(&opts, &g, y.data, &err);
    } else if (is_node) {
        st = pc_encode_node(&opts, x.data, rows, in_dim, y.data, &err);
    } else if ((opts.mismatch && kind == PC_KIND_LAYOUT) || ((opts.steps || opts.rsteps) && kind == PC_KIND_TILE)) {
        if (kind == PC_KIND_LAYOUT && (!g.feat || !g.cfg_ids)) {
            fprintf(stderr, "pc_encode_tool: %s: mismatch needs float32 'feat', int32 'edges' "
                    "and 'cfg_ids'\n", in_path);
            rc = 1;
            goto done;
        }
        if (kind == PC_KIND_TILE && !g.feat) {
            fprintf(stderr, "pc_encode_tool: %s: steps needs float32 'feat' (n, 140)\n", in_path);
            rc = 1;
            goto done;
        }
        pc_encode_mm mm;
        st = pc_encode_plan_build(&opts, kind, &g, &mm, &err);
        if (!st) st = pc_encode_configs_mm(&opts, kind, &mm, x.data, rows, in_dim, y.data, &err);
        pc_encode_mm_free(&mm);
    } else {
        st = pc_encode_configs(&opts, kind, x.data, rows, in_dim, y.data, &err);
    }
    if (st != PC_OK) {
        rc = fail(&err);
        goto done;
    }
    pc_npz_writer *w = NULL;
    if (pc_npz_writer_open(out_path, PC_NPZ_STORED, &w, &err) != PC_OK) {
        rc = fail(&err);
        goto done;
    }
    if (pc_npz_writer_add_array(w, "y", &y, &err) != PC_OK) {
        pc_npz_writer_abort(w);
        rc = fail(&err);
        goto done;
    }
    if (pc_npz_writer_commit(w, &err) != PC_OK) rc = fail(&err);
done:
    for (int i = 0; i < 4; i++) pc_array_free(&garr[i]);
    pc_array_free(&x);
    pc_array_free(&y);
    pc_npz_close(z);
    return rc;
}
