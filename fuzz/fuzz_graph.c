/*
 * Fuzz target: TpuGraphs graph loading from .npz (key table, shape checks,
 * integer widening, resident and streamed node_config_feat, validation).
 *
 * The input is written to a scratch .npz (under $PC_FUZZ_TMP, else /dev/shm,
 * else /tmp) and loaded twice: with the default options, and with a resident
 * limit of 1 byte so a layout graph's node_config_feat is streamed from the
 * archive. Each loaded graph is validated and its accessors must agree with
 * its kind and sizes. For layout graphs, config rows read through
 * pc_graph_config_feat_rows and _gather must agree with each other and, when
 * both loads succeeded, between the resident and streamed graphs; so must
 * the validation reports. pc_graph_check_file (every array streamed through
 * zlib, in chunks) must give the default load's verdict (libdeflate, whole
 * members): it fails to load exactly when the load fails, and otherwise
 * reports the same problems, line for line.
 *
 * Every member's data is covered by a CRC-32, so nearly every mutation of an
 * array would only meet the CRC check; to reach the graph code, the CRCs of
 * both zip headers are first recomputed from the (mutated) member data,
 * except for inputs whose size is 7 mod 8, which are loaded as they are.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "fuzz.h"
#include "perfcast/dataset.h"

/* Rows buffers larger than this many floats are not requested (harness bound). */
#define MAX_ROW_FLOATS (INT64_C(1) << 22)

/* Deflated members inflating past this are left with their CRC (harness bound). */
#define MAX_INFLATE ((size_t)64 << 20)

/* Scratch file name, made once per process (fuzz harness state only). */
static char g_in[512];

static void cleanup(void) {
    if (g_in[0]) unlink(g_in);
}

static void setup(void) {
    if (g_in[0]) return;
    const char *dir = getenv("PC_FUZZ_TMP");
    if (!dir || !*dir) dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_in, sizeof g_in, "%s/pc_fuzz_graph_%ld_XXXXXX.npz", dir, (long)getpid());
    int fd = mkstemps(g_in, 4);
    if (fd < 0) {
        perror(g_in);
        abort();
    }
    close(fd);
    atexit(cleanup);
}

/* ---- CRC repair --------------------------------------------------------- */

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* CRC-32 of a raw deflate stream's output (at most `cap` bytes); 0 if it is corrupt. */
static int inflate_crc(const uint8_t *src, size_t len, size_t cap, uint32_t *crc) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) return 0;
    static uint8_t out[1 << 16];
    uLong c = crc32(0, Z_NULL, 0);
    size_t total = 0;
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = (uInt)len;
    int r = Z_OK;
    while (r == Z_OK && total < cap) {
        zs.next_out = out;
        zs.avail_out = sizeof out;
        r = inflate(&zs, Z_NO_FLUSH);
        size_t got = sizeof out - zs.avail_out;
        c = crc32(c, out, (uInt)got);
        total += got;
        if (r == Z_BUF_ERROR && got == 0) break;
    }
    inflateEnd(&zs);
    *crc = (uint32_t)c;
    return r == Z_STREAM_END;
}

/*
 * For each central directory entry whose local header is where it says,
 * writes the CRC of the member's stored (or inflated) bytes into both headers.
 */
static void fix_crcs(uint8_t *d, size_t size) {
    for (size_t at = 0; at + 46 <= size; at++) {
        if (memcmp(d + at, "PK\x01\x02", 4) != 0) continue;
        uint32_t method = rd16(d + at + 10);
        uint64_t csize = rd32(d + at + 20), usize = rd32(d + at + 24);
        uint64_t off = rd32(d + at + 42);
        size_t nlen = rd16(d + at + 28), xlen = rd16(d + at + 30);
        /* ZIP64 extra field: the 8-byte values of the 32-bit fields set to all ones. */
        size_t x = at + 46 + nlen, xend = x + xlen;
        while (xend <= size && x + 4 <= xend) {
            size_t id = rd16(d + x), len = rd16(d + x + 2), p = x + 4;
            if (id == 1) {
                if (usize == 0xFFFFFFFFu && p + 8 <= xend) {
                    usize = rd64(d + p);
                    p += 8;
                }
                if (csize == 0xFFFFFFFFu && p + 8 <= xend) {
                    csize = rd64(d + p);
                    p += 8;
                }
                if (off == 0xFFFFFFFFu && p + 8 <= xend) off = rd64(d + p);
                break;
            }
            x = p + len;
        }
        if (off > size || size - off < 30 || memcmp(d + off, "PK\x03\x04", 4) != 0) continue;
        uint64_t data = off + 30 + rd16(d + off + 26) + rd16(d + off + 28);
        if (data > size || csize > size - data) continue;
        uint32_t crc;
        size_t cap = usize < MAX_INFLATE ? (size_t)usize : MAX_INFLATE;
        if (method == 0) {
            crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), d + data, (uInt)csize);
        } else if (method != 8 || !inflate_crc(d + data, (size_t)csize, cap, &crc)) {
            continue;
        }
        wr32(d + at + 16, crc);
        wr32(d + off + 14, crc);
    }
}

/* ---- checks ------------------------------------------------------------- */

/* Floats in one config row (nc * d), or -1 if that overflows. */
static int64_t row_floats(const pc_graph *g) {
    int64_t rf;
    if (__builtin_mul_overflow(pc_graph_num_config_nodes(g), pc_graph_config_dim(g), &rf))
        return -1;
    return rf;
}

/* What the accessors promise for a loaded graph of either kind. */
static void check_accessors(const pc_graph *g, const char *path, int streamed) {
    pc_kind kind = pc_graph_kind(g);
    check(kind == PC_KIND_TILE || kind == PC_KIND_LAYOUT);
    check(strcmp(pc_graph_path(g), path) == 0);
    int64_t n = pc_graph_num_nodes(g), m = pc_graph_num_edges(g), c = pc_graph_num_configs(g);
    int64_t nc = pc_graph_num_config_nodes(g), fd = pc_graph_node_feat_dim(g);
    int64_t cd = pc_graph_config_dim(g);
    check(n >= 0 && m >= 0 && c >= 0 && nc >= 0 && fd >= 0 && cd >= 0);
    check(n == 0 || pc_graph_node_opcode(g) != NULL);
    check(n == 0 || fd == 0 || pc_graph_node_feat(g) != NULL);
    check(m == 0 || pc_graph_edge_index(g) != NULL);
    check(c == 0 || pc_graph_config_runtime(g) != NULL);
    int64_t k = -1;
    const int64_t *splits = pc_graph_node_splits(g, &k);
    check(k >= 0);
    check(k == 0 || splits != NULL);
    check(pc_graph_node_splits(g, NULL) == splits);
    if (kind == PC_KIND_TILE) {
        check(nc == 0);
        check(c == 0 || cd == 0 || pc_graph_config_feat(g) != NULL);
        check(c == 0 || pc_graph_runtime_normalizers(g) != NULL);
        check(pc_graph_node_config_ids(g) == NULL);
        check(pc_graph_node_config_feat(g) == NULL);
        check(splits == NULL && k == 0);
    } else {
        check(pc_graph_config_feat(g) == NULL);
        check(pc_graph_runtime_normalizers(g) == NULL);
        check(nc == 0 || pc_graph_node_config_ids(g) != NULL);
        int64_t rf = row_floats(g);
        /* Resident unless streamed; an empty array may be either. */
        if (!streamed && c > 0 && rf != 0) check(pc_graph_node_config_feat(g) != NULL);
    }
}

/* Validates with a report; the status and the report must agree. */
static pc_report *validate(const pc_graph *g, int allow_zero) {
    pc_report *r = pc_report_new();
    check(r != NULL);
    pc_status st = pc_graph_validate(g, allow_zero, r);
    check(st == PC_OK || st == PC_ERR_INVALID);
    check((st == PC_OK) == (pc_report_count(r) == 0));
    size_t plen = strlen(pc_graph_path(g));
    for (size_t i = 0; i < pc_report_count(r); i++) {
        const char *line = pc_report_get(r, i);
        check(line != NULL && strncmp(line, pc_graph_path(g), plen) == 0);
    }
    /* Without a report the status is the same. */
    check(pc_graph_validate(g, allow_zero, NULL) == st);
    return r;
}

static int same_report(const pc_report *a, const pc_report *b) {
    if (pc_report_count(a) != pc_report_count(b)) return 0;
    for (size_t i = 0; i < pc_report_count(a); i++)
        if (strcmp(pc_report_get(a, i), pc_report_get(b, i)) != 0) return 0;
    return 1;
}

/*
 * Config rows of a layout graph: a few in-range reads by range and by gather
 * must agree; out-of-range requests fail with PC_ERR_RANGE. Returns the first
 * min(c, 3) rows (malloc'd, NULL if not read) for comparison across loads.
 */
static float *check_rows(pc_graph *g, int64_t *nrows_out) {
    pc_error err;
    *nrows_out = 0;
    float one;
    int64_t c = pc_graph_num_configs(g);
    if (pc_graph_kind(g) != PC_KIND_LAYOUT) {
        check(pc_graph_config_feat_rows(g, 0, 0, &one, &err) == PC_ERR_ARG);
        check(pc_graph_config_feat_gather(g, NULL, 0, &one, &err) == PC_ERR_ARG);
        return NULL;
    }
    /* Out of range: nothing is written, so a one-float buffer will do. */
    const int64_t bad[4][2] = {{c, 1}, {-1, 1}, {0, -1}, {0, c + 1}};
    for (int i = 0; i < 4; i++)
        check(pc_graph_config_feat_rows(g, bad[i][0], bad[i][1], &one, &err) == PC_ERR_RANGE);
    const int64_t bad_ids[2] = {c, -1};
    for (int i = 0; i < 2; i++)
        check(pc_graph_config_feat_gather(g, &bad_ids[i], 1, &one, &err) == PC_ERR_RANGE);
    check(pc_graph_config_feat_rows(g, c, 0, &one, &err) == PC_OK);
    check(pc_graph_config_feat_gather(g, NULL, 0, &one, &err) == PC_OK);
    int64_t rf = row_floats(g);
    if (c == 0 || rf <= 0 || rf > MAX_ROW_FLOATS / 8) return NULL;

    int64_t head = c < 3 ? c : 3;
    float *first = malloc((size_t)(head * rf) * sizeof *first);
    float *row = malloc((size_t)rf * sizeof *row);
    float *gat = malloc((size_t)(4 * rf) * sizeof *gat);
    check(first && row && gat);
    if (pc_graph_config_feat_rows(g, 0, head, first, &err) != PC_OK) {
        /* Only a streamed array can fail here (its data was not read at load). */
        check(pc_graph_node_config_feat(g) == NULL && err.msg[0] != '\0');
        free(first);
        free(row);
        free(gat);
        return NULL;
    }
    /* Any order, repeats allowed: the rows land where their ids were listed. */
    const int64_t ids[4] = {c - 1, 0, c / 2, 0};
    pc_status gs = pc_graph_config_feat_gather(g, ids, 4, gat, &err);
    if (pc_graph_node_config_feat(g) != NULL) check(gs == PC_OK);
    for (int i = 0; i < 4; i++) {
        pc_status rs = pc_graph_config_feat_rows(g, ids[i], 1, row, &err);
        if (pc_graph_node_config_feat(g) != NULL) check(rs == PC_OK);
        if (rs != PC_OK) continue;
        if (ids[i] < head)
            check(memcmp(row, first + ids[i] * rf, (size_t)rf * sizeof *row) == 0);
        if (gs == PC_OK) check(memcmp(row, gat + i * rf, (size_t)rf * sizeof *row) == 0);
    }
    const float *res = pc_graph_node_config_feat(g);
    if (res) check(memcmp(first, res, (size_t)(head * rf) * sizeof *first) == 0);
    free(row);
    free(gat);
    *nrows_out = head;
    return first;
}

/*
 * One load with the default options, or (streamed) with a 1-byte resident
 * limit and one thread; on success the graph is checked and validated.
 */
static pc_graph *load(const char *path, int streamed, pc_status *st, pc_report **r0,
                      pc_report **r1) {
    pc_error err;
    pc_load_opts o = pc_load_opts_default();
    if (streamed) {
        o.max_resident_config_bytes = 1;
        o.threads = 1;
    }
    pc_graph *g = NULL;
    *st = pc_graph_load(path, &o, &g, &err);
    if (*st != PC_OK) {
        check(g == NULL && err.code == *st && err.msg[0] != '\0');
        return NULL;
    }
    check(g != NULL);
    check_accessors(g, path, streamed);
    *r0 = validate(g, 0);
    *r1 = validate(g, 1);
    return g;
}

PC_FUZZ_TARGET(graph) {
    setup();
    uint8_t *copy = malloc(size ? size : 1);
    check(copy != NULL);
    if (size) memcpy(copy, data, size);
    if (size % 8 != 7) fix_crcs(copy, size);
    FILE *f = fopen(g_in, "wb");
    check(f != NULL);
    check(size == 0 || fwrite(copy, 1, size, f) == size);
    check(fclose(f) == 0);
    free(copy);

    pc_report *ra0 = NULL, *ra1 = NULL, *rb0 = NULL, *rb1 = NULL;
    /* (a) default options: node_config_feat resident. */
    pc_status sa, sb;
    pc_graph *a = load(g_in, 0, &sa, &ra0, &ra1);
    int64_t na = 0, nb = 0;
    float *rows_a = a ? check_rows(a, &na) : NULL;
    /* (b) 1-byte resident limit: a non-empty node_config_feat is streamed. */
    pc_graph *b = load(g_in, 1, &sb, &rb0, &rb1);
    float *rows_b = b ? check_rows(b, &nb) : NULL;

    check((a != NULL) == (sa == PC_OK) && (b != NULL) == (sb == PC_OK));
    /* Streaming only skips reading node_config_feat; it cannot stream Fortran order. */
    if (a && !b) check(sb == PC_ERR_UNSUPPORTED);
    if (a && b) {
        check(pc_graph_kind(a) == pc_graph_kind(b));
        check(pc_graph_num_nodes(a) == pc_graph_num_nodes(b));
        check(pc_graph_num_edges(a) == pc_graph_num_edges(b));
        check(pc_graph_num_configs(a) == pc_graph_num_configs(b));
        check(pc_graph_num_config_nodes(a) == pc_graph_num_config_nodes(b));
        check(pc_graph_config_dim(a) == pc_graph_config_dim(b));
        /* a's node_config_feat read cleanly, so streaming the same bytes must too. */
        check(same_report(ra0, rb0));
        check(same_report(ra1, rb1));
        check((rows_a == NULL) == (rows_b == NULL));
        if (rows_a) {
            check(na == nb);
            check(memcmp(rows_a, rows_b, (size_t)(na * row_floats(a)) * sizeof *rows_a) == 0);
        }
    }
    /* (c) the streamed check: one verdict with the resident load. */
    pc_report *rc = pc_report_new();
    pc_error cerr;
    check(rc != NULL);
    pc_status sc = pc_graph_check_file(g_in, NULL, 0, rc, &cerr);
    const int c_loaded = sc == PC_OK || sc == PC_ERR_INVALID;
    check(c_loaded == (sa == PC_OK));
    if (!c_loaded) check(cerr.code == sc && cerr.msg[0] != '\0');
    if (a && c_loaded) {
        check(same_report(ra0, rc));
        check((sc == PC_OK) == (pc_report_count(rc) == 0));
    }
    pc_report_free(rc);
    free(rows_a);
    free(rows_b);
    pc_report_free(ra0);
    pc_report_free(ra1);
    pc_report_free(rb0);
    pc_report_free(rb1);
    pc_graph_free(a);
    pc_graph_free(b);
    unlink(g_in); /* recreated by the next input; a crash leaves only this one */
    return 0;
}
