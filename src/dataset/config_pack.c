/* Config hygiene: dedup of identical configs and base-7 layout codes (see config_pack.h). */
#include "dataset/config_pack.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"

/* Layout rows read per chunk by pc_graph_config_dedup: at most this many bytes. */
#define DEDUP_CHUNK_BYTES ((uint64_t)64 << 20)

/* ---- layout codes ---------------------------------------------------------------- */

static int slot_ok(float v) { return v >= -1.0f && v <= 5.0f && v == floorf(v); }

int32_t pc_layout_code(const float *s) {
    int32_t code = 0;
    for (int i = 0; i < PC_LAYOUT_SLOTS; i++) {
        if (!slot_ok(s[i])) return -1;
        code = code * 7 + (int32_t)s[i] + 1;
    }
    return code;
}

void pc_layout_decode(int32_t code, float *s) {
    for (int i = PC_LAYOUT_SLOTS - 1; i >= 0; i--) {
        s[i] = (float)(code % 7 - 1);
        code /= 7;
    }
}

/* Packs configs [0, n) of feat; their global indices start at c0 (for messages). */
static pc_status pack_rows(const float *feat, int64_t c0, int64_t n, int64_t nc,
                           int32_t *codes, pc_error *err) {
    size_t nv = (size_t)n * (size_t)nc * PC_LAYOUT_TENSORS;
    for (size_t v = 0; v < nv; v++) {
        const float *s = feat + v * PC_LAYOUT_SLOTS;
        codes[v] = pc_layout_code(s);
        if (codes[v] >= 0) continue;
        int i = 0;
        while (slot_ok(s[i])) i++;
        int64_t node = (int64_t)(v / PC_LAYOUT_TENSORS);
        int t = (int)(v % PC_LAYOUT_TENSORS);
        return pc_fail(err, PC_ERR_RANGE,
                       "node_config_feat: config %" PRId64 ", node %" PRId64
                       " (position in node_config_ids), slot %d (tensor %d, slot %d):"
                       " value %g is not an integer in [-1, 5]",
                       c0 + node / nc, node % nc, t * PC_LAYOUT_SLOTS + i, t, i, (double)s[i]);
    }
    return PC_OK;
}

pc_status pc_layout_pack(const float *feat, int64_t c, int64_t nc, int32_t *codes,
                         pc_error *err) {
    if (c < 0 || nc < 0) return pc_fail(err, PC_ERR_ARG, "layout pack: bad sizes c %" PRId64
                                        " nc %" PRId64, c, nc);
    return pack_rows(feat, 0, c, nc, codes, err);
}

pc_status pc_layout_unpack(const int32_t *codes, int64_t c, int64_t nc, float *feat,
                           pc_error *err) {
    if (c < 0 || nc < 0) return pc_fail(err, PC_ERR_ARG, "layout unpack: bad sizes c %" PRId64
                                        " nc %" PRId64, c, nc);
    size_t nv = (size_t)c * (size_t)nc * PC_LAYOUT_TENSORS;
    for (size_t v = 0; v < nv; v++) {
        if (codes[v] < 0 || codes[v] >= PC_LAYOUT_CODE_COUNT) {
            int64_t node = (int64_t)(v / PC_LAYOUT_TENSORS);
            return pc_fail(err, PC_ERR_RANGE,
                           "layout codes: config %" PRId64 ", node %" PRId64 ", tensor %d:"
                           " code %" PRId32 " not in [0, %d)",
                           node / nc, node % nc, (int)(v % PC_LAYOUT_TENSORS), codes[v],
                           PC_LAYOUT_CODE_COUNT);
        }
        pc_layout_decode(codes[v], feat + v * PC_LAYOUT_SLOTS);
    }
    return PC_OK;
}

/* ---- dedup ---------------------------------------------------------------------- */

static uint64_t row_hash(const unsigned char *p, size_t n) {
    uint64_t h = UINT64_C(0x243F6A8885A308D3) ^ (uint64_t)n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * UINT64_C(0x100000001B3);
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    memcpy(&tail, p + i, n - i);
    h ^= tail;
    return pc_splitmix64(&h);
}

void pc_dedup_free(pc_dedup *d) {
    if (!d) return;
    free(d->map);
    free(d->first);
    free(d->pick);
    free(d->count);
    free(d->runtime);
    memset(d, 0, sizeof *d);
}

static pc_status dedup_alloc(pc_dedup *d, int64_t c, pc_error *err) {
    memset(d, 0, sizeof *d);
    uint64_t n = c > 0 ? (uint64_t)c : 1;
    d->map = pc_malloc_array(n, sizeof(int64_t));
    d->first = pc_malloc_array(n, sizeof(int64_t));
    d->pick = pc_malloc_array(n, sizeof(int64_t));
    d->count = pc_calloc_array(n, sizeof(int64_t));
    d->runtime = pc_calloc_array(n, sizeof(int64_t));
    if (d->map && d->first && d->pick && d->count && d->runtime) {
        d->n_in = c;
        return PC_OK;
    }
    pc_dedup_free(d);
    return pc_fail(err, PC_ERR_NOMEM, "config dedup: out of memory for %" PRId64 " configs", c);
}

/* Fills map, first, count and n_out by hashing; table has cap (power of 2) slots. */
static void group_rows(const unsigned char *rows, size_t rb, pc_dedup *d, const uint64_t *hash,
                       int64_t *table, uint64_t cap) {
    int64_t groups = 0;
    for (int64_t i = 0; i < d->n_in; i++) {
        uint64_t s = hash[i] & (cap - 1);
        for (;; s = (s + 1) & (cap - 1)) {
            int64_t g = table[s];
            if (g < 0) {
                table[s] = g = groups++;
                d->first[g] = i;
            } else if (hash[d->first[g]] != hash[i] ||
                       memcmp(rows + (size_t)d->first[g] * rb, rows + (size_t)i * rb, rb) != 0) {
                continue;
            }
            d->map[i] = g;
            d->count[g]++;
            break;
        }
    }
    d->n_out = groups;
}

typedef struct member {
    double key;
    int64_t idx;
} member;

static int member_cmp(const void *a, const void *b) {
    const member *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Members of every group, sorted by (key, index) within the group. */
static void sort_members(const pc_dedup *d, const double *key, int64_t *off, member *mem) {
    off[0] = 0;
    for (int64_t g = 0; g < d->n_out; g++) off[g + 1] = off[g] + d->count[g];
    for (int64_t g = 0; g < d->n_out; g++) off[g] = off[g + 1] - d->count[g];
    for (int64_t i = 0; i < d->n_in; i++) {
        int64_t g = d->map[i];
        mem[off[g]].key = key[i];
        mem[off[g]++].idx = i;
    }
    for (int64_t g = 0; g < d->n_out; g++) {
        off[g] -= d->count[g];
        qsort(mem + off[g], (size_t)d->count[g], sizeof *mem, member_cmp);
    }
}

static pc_status choose(pc_dedup *d, const int64_t *runtime, const int64_t *normalizers,
                        pc_dedup_rule rule, pc_error *err) {
    uint64_t n = d->n_in > 0 ? (uint64_t)d->n_in : 1;
    double *key = pc_malloc_array(n, sizeof *key);
    int64_t *off = pc_malloc_array(n + 1, sizeof *off);
    member *mem = pc_malloc_array(n, sizeof *mem);
    pc_status st = PC_OK;
    if (!key || !off || !mem) {
        st = pc_fail(err, PC_ERR_NOMEM, "config dedup: out of memory");
        goto done;
    }
    for (int64_t i = 0; i < d->n_in; i++) {
        if (normalizers && normalizers[i] <= 0) {
            st = pc_fail(err, PC_ERR_ARG, "config dedup: normalizer of config %" PRId64
                         " is %" PRId64 ", must be > 0", i, normalizers[i]);
            goto done;
        }
        key[i] = normalizers ? (double)runtime[i] / (double)normalizers[i] : (double)runtime[i];
    }
    sort_members(d, key, off, mem);
    for (int64_t g = 0; g < d->n_out; g++) {
        int64_t at = rule == PC_DEDUP_MEDIAN ? (d->count[g] - 1) / 2 : 0;
        d->pick[g] = mem[off[g] + at].idx;
        d->runtime[g] = runtime[d->pick[g]];
    }
done:
    free(key);
    free(off);
    free(mem);
    return st;
}

pc_status pc_config_dedup(const void *rows, int64_t c, size_t row_bytes, const int64_t *runtime,
                          const int64_t *normalizers, pc_dedup_rule rule, pc_dedup *out,
                          pc_error *err) {
    memset(out, 0, sizeof *out);
    if (c < 0 || (c > 0 && !rows && row_bytes > 0))
        return pc_fail(err, PC_ERR_ARG, "config dedup: bad arguments (c %" PRId64 ")", c);
    if (rule != PC_DEDUP_MIN && rule != PC_DEDUP_MEDIAN)
        return pc_fail(err, PC_ERR_ARG, "config dedup: unknown rule %d", (int)rule);
    pc_status st = dedup_alloc(out, c, err);
    if (st) return st;
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)c) cap *= 2;
    uint64_t *hash = pc_malloc_array(c > 0 ? (uint64_t)c : 1, sizeof *hash);
    int64_t *table = pc_malloc_array(cap, sizeof *table);
    if (!hash || !table) {
        free(hash);
        free(table);
        pc_dedup_free(out);
        return pc_fail(err, PC_ERR_NOMEM, "config dedup: out of memory for %" PRId64 " configs", c);
    }
    memset(table, 0xff, cap * sizeof *table); /* all -1 */
    static const unsigned char no_bytes[1];
    const unsigned char *bytes = row_bytes > 0 ? rows : no_bytes; /* all rows empty: one group */
#pragma omp parallel for schedule(static) if((uint64_t)c * row_bytes >= ((uint64_t)1 << 20)) \
    num_threads(pc_threads())
    for (int64_t i = 0; i < c; i++) hash[i] = row_hash(bytes + (size_t)i * row_bytes, row_bytes);
    group_rows(bytes, row_bytes, out, hash, table, cap);
    free(hash);
    free(table);
    if (runtime) {
        st = choose(out, runtime, normalizers, rule, err);
        if (st) pc_dedup_free(out);
    } else {
        memcpy(out->pick, out->first, (size_t)out->n_out * sizeof *out->pick);
    }
    return st;
}

void pc_dedup_expand(const pc_dedup *d, const float *kept, float *all) {
    for (int64_t i = 0; i < d->n_in; i++) all[i] = kept[d->map[i]];
}

/* ---- graphs -------------------------------------------------------------------- */

/* Reads and packs a layout graph's configs in bounded chunks into codes (c, nc, 3). */
static pc_status pack_graph(pc_graph *g, uint64_t chunk_bytes, int32_t *codes, pc_error *err) {
    int64_t c = pc_graph_num_configs(g), nc = pc_graph_num_config_nodes(g);
    uint64_t row_floats = (uint64_t)nc * PC_LAYOUT_CONFIG_DIM;
    const float *all = pc_graph_node_config_feat(g);
    if (all) { /* resident or mapped: no copy (a fresh 64 MiB buffer costs its page faults) */
        pc_status st = pack_rows(all, 0, c, nc, codes, err);
        if (st != PC_OK) pc_error_prefix(err, "%s", pc_graph_path(g));
        return st;
    }
    int64_t chunk = (int64_t)(chunk_bytes / (row_floats * sizeof(float)));
    if (chunk < 1) chunk = 1;
    if (chunk > c) chunk = c;
    float *buf = pc_malloc_array((uint64_t)chunk, row_floats * sizeof(float));
    if (!buf) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for config rows",
                             pc_graph_path(g));
    pc_status st = PC_OK;
    for (int64_t c0 = 0; c0 < c && st == PC_OK; c0 += chunk) {
        int64_t n = c - c0 < chunk ? c - c0 : chunk;
        st = pc_graph_config_feat_rows(g, c0, n, buf, err);
        if (st == PC_OK)
            st = pack_rows(buf, c0, n, nc, codes + (size_t)c0 * (size_t)nc * PC_LAYOUT_TENSORS,
                           err);
        if (st != PC_OK) pc_error_prefix(err, "%s", pc_graph_path(g));
    }
    free(buf);
    return st;
}

static int all_zero(const int64_t *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (x[i] != 0) return 0;
    return 1;
}

pc_status pc_graph_config_dedup(pc_graph *g, pc_dedup_rule rule, pc_dedup *out, pc_error *err) {
    return pc_graph_config_dedup_ex(g, rule, 0, out, err);
}

pc_status pc_graph_config_dedup_ex(pc_graph *g, pc_dedup_rule rule, uint64_t chunk_bytes,
                                   pc_dedup *out, pc_error *err) {
    if (chunk_bytes == 0) chunk_bytes = DEDUP_CHUNK_BYTES;
    memset(out, 0, sizeof *out);
    int64_t c = pc_graph_num_configs(g);
    const int64_t *rt = pc_graph_config_runtime(g);
    if (rt && all_zero(rt, c)) rt = NULL; /* test split: nothing to choose between */
    if (pc_graph_kind(g) == PC_KIND_TILE) {
        const int64_t *norm = rt ? pc_graph_runtime_normalizers(g) : NULL;
        return pc_config_dedup(pc_graph_config_feat(g), c, PC_TILE_CONFIG_DIM * sizeof(float), rt,
                               norm, rule, out, err);
    }
    int64_t nc = pc_graph_num_config_nodes(g);
    if (c == 0 || nc == 0) return pc_config_dedup(NULL, c, 0, rt, NULL, rule, out, err);
    int32_t *codes =
        pc_malloc_array((uint64_t)c * (uint64_t)nc, PC_LAYOUT_TENSORS * sizeof(int32_t));
    if (!codes) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for layout codes",
                               pc_graph_path(g));
    pc_status st = pack_graph(g, chunk_bytes, codes, err);
    if (st == PC_OK)
        st = pc_config_dedup(codes, c, (size_t)nc * PC_LAYOUT_TENSORS * sizeof(int32_t), rt, NULL,
                             rule, out, err);
    free(codes);
    return st;
}
