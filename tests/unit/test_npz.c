/*
 * Unit tests for the NPY/NPZ reader and writer (include/perfcast/npz.h):
 * header parsing and formatting, writer/reader round trips (stored and
 * deflated), row ranges and the row cursor, read_all, dtype conversion,
 * single .npy files, writer commit/abort hygiene, and error messages.
 * Archives with hand-made members (big-endian, Fortran order, float16,
 * non-.npy members) are built with libzip directly.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <cmocka.h>

#include "common/util.h"
#include "perfcast/npz.h"

/* ---- scratch directory ------------------------------------------------ */

static char g_dir[1024];

static int group_setup(void **state) {
    (void)state;
    const char *base = getenv("PC_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    if (pc_mkdirs(base, NULL) != PC_OK) return -1;
    int n = snprintf(g_dir, sizeof g_dir, "%s/test_npz_XXXXXX", base);
    if (n < 0 || (size_t)n >= sizeof g_dir) return -1;
    return mkdtemp(g_dir) ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    pc_remove_tree(g_dir);
    return 0;
}

/* snprintf that fails the test instead of truncating. */
static void fmt(char *buf, size_t cap, const char *f, ...) PC_PRINTF(3, 4);
static void fmt(char *buf, size_t cap, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, cap, f, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap) fail_msg("path or string too long: %s", buf);
}

static const char *tpath(char *buf, size_t cap, const char *name) {
    fmt(buf, cap, "%s/%s", g_dir, name);
    return buf;
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (len) assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Number of entries in a directory, hidden ones included. */
static int dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* ---- hand-made .npy bytes --------------------------------------------- */

/* A .npy header of the given version around `dict`, padded to 64 bytes. */
static size_t make_header(unsigned char *out, int version, const char *dict) {
    size_t pre = version == 1 ? 10 : 12;
    size_t dlen = strlen(dict);
    size_t total = (pre + dlen + 1 + 63) / 64 * 64;
    size_t hl = total - pre;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)version;
    out[7] = 0;
    if (version == 1) {
        out[8] = (unsigned char)(hl & 0xff);
        out[9] = (unsigned char)(hl >> 8);
    } else {
        for (int i = 0; i < 4; i++) out[8 + i] = (unsigned char)(hl >> (8 * i));
    }
    memcpy(out + pre, dict, dlen);
    memset(out + pre + dlen, ' ', total - pre - dlen - 1);
    out[total - 1] = '\n';
    return total;
}

/* Header for dict "{'descr': D, 'fortran_order': F, 'shape': S, }". */
static size_t make_header3(unsigned char *out, int version, const char *descr, int fortran,
                           const char *shape) {
    char dict[512];
    fmt(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr,
             fortran ? "True" : "False", shape);
    return make_header(out, version, dict);
}

/* A whole .npy file in a malloc'd buffer. */
static unsigned char *make_npy(const char *descr, int fortran, const char *shape,
                               const void *data, size_t dlen, size_t *len) {
    unsigned char *b = malloc(1024 + dlen);
    assert_non_null(b);
    size_t h = make_header3(b, 1, descr, fortran, shape);
    if (dlen) memcpy(b + h, data, dlen);
    *len = h + dlen;
    return b;
}

/* ---- hand-made archives (libzip) -------------------------------------- */

typedef struct zmember {
    const char *name;
    const void *data;
    size_t len;
    int deflate;
} zmember;

static void make_zip(const char *path, const zmember *m, int n) {
    int zerr = 0;
    unlink(path);
    zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    assert_non_null(za);
    for (int i = 0; i < n; i++) {
        zip_source_t *src = zip_source_buffer(za, m[i].data, m[i].len, 0);
        assert_non_null(src);
        zip_int64_t idx = zip_file_add(za, m[i].name, src, 0);
        assert_true(idx >= 0);
        assert_int_equal(zip_set_file_compression(za, (zip_uint64_t)idx,
                                                  m[i].deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0),
                         0);
    }
    assert_int_equal(zip_close(za), 0);
}

/* ---- test arrays -------------------------------------------------------- */

static const pc_dtype k_write_dtypes[] = {
    PC_DTYPE_BOOL, PC_DTYPE_U8,  PC_DTYPE_I8,  PC_DTYPE_U16, PC_DTYPE_I16, PC_DTYPE_U32,
    PC_DTYPE_I32,  PC_DTYPE_U64, PC_DTYPE_I64, PC_DTYPE_F32, PC_DTYPE_F64,
};
#define N_WRITE_DTYPES ((int)(sizeof k_write_dtypes / sizeof k_write_dtypes[0]))

/* Fills an array with a dtype-appropriate pattern that includes extremes. */
static void fill_pattern(pc_array *a, unsigned seed) {
    const int64_t n = pc_array_count(a);
    const size_t es = pc_dtype_size(a->dtype);
    unsigned char *p = a->data;
    for (int64_t k = 0; k < n; k++) {
        uint64_t v = (uint64_t)k * 0x9E3779B97F4A7C15ull + seed;
        v ^= v >> 29;
        if (k == 0) v = UINT64_MAX; /* all ones: max unsigned, -1 signed */
        if (k == 1) v = 0;
        if (a->dtype == PC_DTYPE_BOOL) {
            p[k] = (unsigned char)(v & 1);
        } else if (a->dtype == PC_DTYPE_F32) {
            float f = k == 0 ? -0.0f : k == 2 ? INFINITY : (float)((double)(int64_t)v / 1e12);
            memcpy(p + (size_t)k * 4, &f, 4);
        } else if (a->dtype == PC_DTYPE_F64) {
            double d = k == 0 ? NAN : k == 2 ? -INFINITY : (double)(int64_t)v * 1e-7;
            memcpy(p + (size_t)k * 8, &d, 8);
        } else {
            memcpy(p + (size_t)k * es, &v, es); /* little-endian low bytes */
        }
    }
}

static void make_array(pc_array *a, pc_dtype t, int ndim, const int64_t *shape, unsigned seed) {
    assert_int_equal(pc_array_alloc(a, t, ndim, shape, NULL), PC_OK);
    fill_pattern(a, seed);
}

static void assert_same_array(const pc_array *got, const pc_array *want) {
    assert_int_equal(got->dtype, want->dtype);
    assert_int_equal(got->ndim, want->ndim);
    for (int d = 0; d < want->ndim; d++) assert_int_equal(got->shape[d], want->shape[d]);
    size_t n = pc_array_nbytes(want);
    assert_int_equal(pc_array_nbytes(got), n);
    if (n) {
        assert_non_null(got->data);
        assert_memory_equal(got->data, want->data, n);
    }
}

static void assert_msg_has(const pc_error *err, const char *needle) {
    if (!strstr(err->msg, needle))
        fail_msg("error message \"%s\" does not mention \"%s\"", err->msg, needle);
}

/* ---- dtypes and arrays -------------------------------------------------- */

static void test_dtype_basics(void **state) {
    (void)state;
    static const size_t sizes[PC_DTYPE_COUNT] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 4, 8};
    static const char *const names[PC_DTYPE_COUNT] = {
        "bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
        "float16", "float32", "float64"};
    for (int t = 0; t < PC_DTYPE_COUNT; t++) {
        assert_int_equal(pc_dtype_size((pc_dtype)t), sizes[t]);
        assert_string_equal(pc_dtype_name((pc_dtype)t), names[t]);
        assert_int_equal(pc_dtype_is_int((pc_dtype)t), t >= PC_DTYPE_U8 && t <= PC_DTYPE_I64);
    }
    assert_int_equal(pc_dtype_size(PC_DTYPE_COUNT), 0);
    assert_non_null(pc_dtype_name(PC_DTYPE_COUNT));
}

static void test_array_alloc(void **state) {
    (void)state;
    pc_array a = PC_ARRAY_INIT;
    const int64_t shape[3] = {2, 3, 4};
    assert_int_equal(pc_array_alloc(&a, PC_DTYPE_I16, 3, shape, NULL), PC_OK);
    assert_int_equal(pc_array_count(&a), 24);
    assert_int_equal(pc_array_nbytes(&a), 48);
    for (int i = 0; i < 48; i++) assert_int_equal(((unsigned char *)a.data)[i], 0);
    pc_array_free(&a);
    assert_null(a.data);
    pc_array_free(&a); /* twice is fine */
    pc_array_free(NULL);

    const int64_t empty[2] = {0, 5};
    assert_int_equal(pc_array_alloc(&a, PC_DTYPE_F32, 2, empty, NULL), PC_OK);
    assert_int_equal(pc_array_count(&a), 0);
    assert_int_equal(pc_array_nbytes(&a), 0);
    pc_array_free(&a);

    assert_int_equal(pc_array_alloc(&a, PC_DTYPE_F64, 0, NULL, NULL), PC_OK); /* 0-d */
    assert_int_equal(pc_array_count(&a), 1);
    pc_array_free(&a);

    pc_error err;
    const int64_t neg[1] = {-1};
    assert_int_not_equal(pc_array_alloc(&a, PC_DTYPE_F32, 1, neg, &err), PC_OK);
    const int64_t huge[2] = {INT64_MAX, 4};
    assert_int_not_equal(pc_array_alloc(&a, PC_DTYPE_F32, 2, huge, &err), PC_OK);
    assert_int_not_equal(pc_array_alloc(&a, PC_DTYPE_F32, PC_MAX_DIMS + 1, shape, &err), PC_OK);
}

/* ---- header parsing ----------------------------------------------------- */

static void test_parse_header_versions(void **state) {
    (void)state;
    unsigned char b[256];
    for (int v = 1; v <= 3; v++) {
        size_t h = make_header3(b, v, "<f8", 0, "(2, 3)");
        assert_int_equal(h % 64, 0);
        pc_array_info info;
        pc_error err;
        assert_int_equal(pc_npy_parse_header(b, h, h + 48, "v.npy", &info, &err), PC_OK);
        assert_int_equal(info.dtype, PC_DTYPE_F64);
        assert_int_equal(info.big_endian, 0);
        assert_int_equal(info.fortran_order, 0);
        assert_int_equal(info.ndim, 2);
        assert_int_equal(info.shape[0], 2);
        assert_int_equal(info.shape[1], 3);
        assert_int_equal(info.count, 6);
        assert_int_equal(info.data_bytes, 48);
        assert_int_equal(info.data_offset, h);
        /* file size unknown */
        assert_int_equal(pc_npy_parse_header(b, h, UINT64_MAX, "v.npy", &info, &err), PC_OK);
        assert_int_equal(info.data_bytes, 48);
    }
}

static void test_parse_header_dtypes(void **state) {
    (void)state;
    static const struct {
        const char *descr;
        pc_dtype t;
        int be;
    } cases[] = {
        {"|b1", PC_DTYPE_BOOL, 0}, {"|u1", PC_DTYPE_U8, 0},   {"|i1", PC_DTYPE_I8, 0},
        {"<u2", PC_DTYPE_U16, 0},  {">u2", PC_DTYPE_U16, 1},  {"<i2", PC_DTYPE_I16, 0},
        {"<u4", PC_DTYPE_U32, 0},  {"<i4", PC_DTYPE_I32, 0},  {">i4", PC_DTYPE_I32, 1},
        {"<u8", PC_DTYPE_U64, 0},  {"<i8", PC_DTYPE_I64, 0},  {">i8", PC_DTYPE_I64, 1},
        {"<f2", PC_DTYPE_F16, 0},  {">f2", PC_DTYPE_F16, 1},  {"<f4", PC_DTYPE_F32, 0},
        {">f4", PC_DTYPE_F32, 1},  {"<f8", PC_DTYPE_F64, 0},  {">f8", PC_DTYPE_F64, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char b[256];
        size_t h = make_header3(b, 1, cases[i].descr, 0, "(3,)");
        size_t es = pc_dtype_size(cases[i].t);
        pc_array_info info;
        pc_error err;
        pc_status st = pc_npy_parse_header(b, h, h + 3 * es, "d.npy", &info, &err);
        if (st != PC_OK) fail_msg("descr %s: %s", cases[i].descr, err.msg);
        assert_int_equal(info.dtype, cases[i].t);
        assert_int_equal(info.big_endian, cases[i].be);
        assert_int_equal(info.ndim, 1);
        assert_int_equal(info.shape[0], 3);
        assert_int_equal(info.count, 3);
        assert_int_equal(info.data_bytes, 3 * es); /* file element size: f2 stays 2 */
    }
}

static void test_parse_header_order_and_shapes(void **state) {
    (void)state;
    unsigned char b[256];
    pc_array_info info;
    pc_error err;
    size_t h = make_header3(b, 1, "<i4", 1, "(2, 3)");
    assert_int_equal(pc_npy_parse_header(b, h, h + 24, "F.npy", &info, &err), PC_OK);
    assert_int_equal(info.fortran_order, 1);

    h = make_header3(b, 1, "<f4", 0, "()");
    assert_int_equal(pc_npy_parse_header(b, h, h + 4, "0d.npy", &info, &err), PC_OK);
    assert_int_equal(info.ndim, 0);
    assert_int_equal(info.count, 1);
    assert_int_equal(info.data_bytes, 4);

    h = make_header3(b, 1, "<f4", 0, "(2,3,)");
    assert_int_equal(pc_npy_parse_header(b, h, h + 24, "tc.npy", &info, &err), PC_OK);
    assert_int_equal(info.ndim, 2);
    assert_int_equal(info.shape[1], 3);

    h = make_header3(b, 1, "<f4", 0, "(0, 5)");
    assert_int_equal(pc_npy_parse_header(b, h, h, "empty.npy", &info, &err), PC_OK);
    assert_int_equal(info.count, 0);
    assert_int_equal(info.data_bytes, 0);

    h = make_header3(b, 1, "|u1", 0, "(1, 2, 1, 2, 1, 2, 1, 2)");
    assert_int_equal(pc_npy_parse_header(b, h, h + 16, "8d.npy", &info, &err), PC_OK);
    assert_int_equal(info.ndim, PC_MAX_DIMS);
    assert_int_equal(info.count, 16);

    /* key order and quoting as other writers produce them */
    h = make_header(b, 1, "{'shape': (4,), 'fortran_order': False, 'descr': '<u2'}");
    assert_int_equal(pc_npy_parse_header(b, h, h + 8, "order.npy", &info, &err), PC_OK);
    assert_int_equal(info.dtype, PC_DTYPE_U16);
    assert_int_equal(info.shape[0], 4);
}

typedef struct bad_header {
    const char *name;
    int version;
    const char *dict;  /* NULL: raw bytes in `raw` */
    const char *raw; /* with raw_len = sizeof(literal) - 1, via RAW() */
    size_t raw_len;
    int64_t cut;       /* if > 0: pass only this many bytes */
    int64_t data;      /* data bytes present after the header (file size) */
} bad_header;

#define RAW(s) s, sizeof(s) - 1

static void test_parse_header_rejects(void **state) {
    (void)state;
    static const bad_header cases[] = {
        {"bad magic", 0, NULL, RAW("\x93NUMPZ\x01\x00\x10\x00{}              \n"), 0, 0},
        {"png magic", 0, NULL, RAW("\x89PNG\r\n\x1a\n\x00\x00\x00\x00"), 0, 0},
        {"too short", 0, NULL, RAW("\x93NUM"), 0, 0},
        {"empty", 0, NULL, RAW(""), 0, 0},
        {"version 9", 9, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", NULL, 0, 0, 8},
        {"complex", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", NULL, 0, 0, 8},
        {"object", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", NULL, 0, 0, 8},
        {"unicode", 1, "{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", NULL, 0, 0, 12},
        {"float128", 1, "{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", NULL, 0, 0, 16},
        {"datetime", 1, "{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (1,), }", NULL, 0, 0, 8},
        {"struct", 1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", NULL, 0, 0, 4},
        {"empty descr", 1, "{'descr': '', 'fortran_order': False, 'shape': (1,), }", NULL, 0, 0, 8},
        {"overflow", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", NULL, 0, 0, 8},
        {"bytes overflow", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }", NULL, 0, 0, 8},
        {"int64 overflow", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", NULL, 0, 0, 8},
        {"negative dim", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (-1, 3), }", NULL, 0, 0, 24},
        {"9 dims", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", NULL, 0, 0, 1},
        {"float dim", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2.0,), }", NULL, 0, 0, 16},
        {"shape not tuple", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': 2, }", NULL, 0, 0, 16},
        {"fortran not bool", 1, "{'descr': '<f8', 'fortran_order': 1, 'shape': (2,), }", NULL, 0, 0, 16},
        {"missing descr", 1, "{'fortran_order': False, 'shape': (2,), }", NULL, 0, 0, 16},
        {"missing shape", 1, "{'descr': '<f8', 'fortran_order': False, }", NULL, 0, 0, 16},
        {"missing order", 1, "{'descr': '<f8', 'shape': (2,), }", NULL, 0, 0, 16},
        {"extra key", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1, }", NULL, 0, 0, 16},
        {"garbage", 1, "this is not a dict", NULL, 0, 0, 16},
        {"unterminated", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,", NULL, 0, 0, 16},
        {"unterminated string", 1, "{'descr': '<f8, 'fortran_order': False, 'shape': (2,), }", NULL, 0, 0, 16},
        {"header past buffer", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", NULL, 0, 40, 16},
        {"data past file", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", NULL, 0, 0, 16},
        {"data short", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", NULL, 0, 0, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_header *c = &cases[i];
        unsigned char b[512];
        size_t h;
        if (c->dict) {
            h = make_header(b, c->version == 9 ? 1 : c->version, c->dict);
            if (c->version == 9) b[6] = 9;
        } else {
            memcpy(b, c->raw, c->raw_len);
            h = c->raw_len;
        }
        size_t len = c->cut > 0 ? (size_t)c->cut : h;
        pc_array_info info;
        pc_error err;
        pc_error_clear(&err);
        pc_status st = pc_npy_parse_header(b, len, (uint64_t)h + (uint64_t)c->data, "bad.npy",
                                           &info, &err);
        if (st == PC_OK) fail_msg("case '%s' was accepted", c->name);
        assert_int_equal(err.code, st);
        assert_msg_has(&err, "bad.npy");
    }
}

static void test_format_header(void **state) {
    (void)state;
    static const struct {
        pc_dtype t;
        int ndim;
        int64_t shape[PC_MAX_DIMS];
    } cases[] = {
        {PC_DTYPE_F32, 0, {0}},
        {PC_DTYPE_BOOL, 1, {7}},
        {PC_DTYPE_U8, 2, {0, 5}},
        {PC_DTYPE_I64, 3, {2, 3, 4}},
        {PC_DTYPE_F64, 8, {1, 2, 3, 4, 5, 6, 7, 8}},
        {PC_DTYPE_U16, 2, {INT64_MAX / 4, 2}},
        {PC_DTYPE_I32, 1, {1000000000000}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int t = 0; t < N_WRITE_DTYPES; t++) {
            pc_dtype dt = i == 0 ? k_write_dtypes[t] : cases[i].t;
            char b[1024];
            size_t h = pc_npy_format_header(dt, cases[i].ndim, cases[i].shape, b, sizeof b);
            assert_true(h > 0);
            assert_int_equal(h % 64, 0);
            assert_memory_equal(b, "\x93NUMPY", 6);
            assert_int_equal(b[h - 1], '\n');
            pc_array_info info;
            pc_error err;
            assert_int_equal(pc_npy_parse_header(b, h, UINT64_MAX, "fmt", &info, &err), PC_OK);
            assert_int_equal(info.dtype, dt);
            assert_int_equal(info.big_endian, 0);
            assert_int_equal(info.fortran_order, 0);
            assert_int_equal(info.ndim, cases[i].ndim);
            for (int d = 0; d < cases[i].ndim; d++) assert_int_equal(info.shape[d], cases[i].shape[d]);
            assert_int_equal(info.data_offset, h);
            /* too small a buffer: 0, no overrun */
            char small[32];
            assert_int_equal(pc_npy_format_header(dt, cases[i].ndim, cases[i].shape, small,
                                                  sizeof small), 0);
            if (i != 0) break;
        }
    }
}

/* ---- writer + reader round trips --------------------------------------- */

typedef struct roundtrip_set {
    pc_array a[N_WRITE_DTYPES + 4];
    char keys[N_WRITE_DTYPES + 4][32];
    int n;
} roundtrip_set;

static void make_roundtrip_set(roundtrip_set *s) {
    memset(s, 0, sizeof *s);
    const int64_t shape[2] = {5, 3};
    for (int t = 0; t < N_WRITE_DTYPES; t++) {
        make_array(&s->a[s->n], k_write_dtypes[t], 2, shape, (unsigned)t);
        fmt(s->keys[s->n], sizeof s->keys[0], "arr_%s", pc_dtype_name(k_write_dtypes[t]));
        s->n++;
    }
    make_array(&s->a[s->n], PC_DTYPE_F64, 0, NULL, 99);
    fmt(s->keys[s->n++], 32, "scalar");
    const int64_t empty[2] = {0, 5};
    make_array(&s->a[s->n], PC_DTYPE_F32, 2, empty, 0);
    fmt(s->keys[s->n++], 32, "empty");
    const int64_t s3[3] = {4, 3, 2};
    make_array(&s->a[s->n], PC_DTYPE_I32, 3, s3, 7);
    fmt(s->keys[s->n++], 32, "three_d");
    const int64_t big[2] = {3000, 17};
    make_array(&s->a[s->n], PC_DTYPE_U16, 2, big, 3);
    for (int64_t k = 0; k < 3000 * 17; k++) ((uint16_t *)s->a[s->n].data)[k] = (uint16_t)(k % 7);
    fmt(s->keys[s->n++], 32, "nested/big");
}

static void free_roundtrip_set(roundtrip_set *s) {
    for (int i = 0; i < s->n; i++) pc_array_free(&s->a[i]);
}

static void write_set(const char *path, const roundtrip_set *s, pc_npz_compress mode) {
    pc_npz_writer *w = NULL;
    pc_error err;
    assert_int_equal(pc_npz_writer_open(path, mode, &w, &err), PC_OK);
    for (int i = 0; i < s->n; i++) {
        pc_status st = i % 2 ? pc_npz_writer_add_array(w, s->keys[i], &s->a[i], &err)
                             : pc_npz_writer_add(w, s->keys[i], s->a[i].dtype, s->a[i].ndim,
                                                 s->a[i].shape, s->a[i].data, &err);
        if (st != PC_OK) fail_msg("add %s: %s", s->keys[i], err.msg);
    }
    if (pc_npz_writer_commit(w, &err) != PC_OK) fail_msg("commit: %s", err.msg);
}

static void test_roundtrip(void **state) {
    (void)state;
    roundtrip_set s;
    make_roundtrip_set(&s);
    for (int mode = 0; mode < 2; mode++) {
        char path[1200];
        tpath(path, sizeof path, mode ? "rt_deflated.npz" : "rt_stored.npz");
        write_set(path, &s, (pc_npz_compress)mode);
        pc_npz *z = NULL;
        pc_error err;
        assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
        assert_string_equal(pc_npz_path(z), path);
        assert_int_equal(pc_npz_count(z), s.n);
        for (int i = 0; i < s.n; i++) {
            int k = pc_npz_find(z, s.keys[i]);
            assert_true(k >= 0);
            assert_string_equal(pc_npz_key(z, k), s.keys[i]);
            assert_int_equal(pc_npz_is_stored(z, k), mode == 0);
            pc_array_info info;
            assert_int_equal(pc_npz_info(z, k, &info, &err), PC_OK);
            assert_int_equal(info.dtype, s.a[i].dtype);
            assert_int_equal(info.ndim, s.a[i].ndim);
            assert_int_equal(info.fortran_order, 0);
            assert_int_equal(info.data_offset % 64, 0);
            assert_int_equal(pc_npz_member_size(z, k), info.data_offset + info.data_bytes);
            if (mode == 0) assert_int_equal(pc_npz_member_csize(z, k), pc_npz_member_size(z, k));
            pc_array got = PC_ARRAY_INIT;
            if (pc_npz_read(z, k, &got, &err) != PC_OK) fail_msg("read %s: %s", s.keys[i], err.msg);
            assert_same_array(&got, &s.a[i]);
            pc_array_free(&got);
        }
        /* the repetitive big member does compress */
        int big = pc_npz_find(z, "nested/big");
        if (mode == 1) assert_true(pc_npz_member_csize(z, big) < pc_npz_member_size(z, big));
        assert_int_equal(pc_npz_find(z, "no such key"), -1);
        assert_int_equal(pc_npz_find(z, "nested/big.npy"), -1);
        assert_int_equal(pc_npz_find(z, ""), -1);
        assert_null(pc_npz_key(z, s.n));
        pc_array junk = PC_ARRAY_INIT;
        assert_int_equal(pc_npz_read(z, s.n, &junk, &err), PC_ERR_RANGE);
        assert_int_equal(pc_npz_read(z, -1, &junk, &err), PC_ERR_RANGE);
        pc_npz_close(z);
    }
    free_roundtrip_set(&s);
    pc_npz_close(NULL);
}

static void test_writer_levels_and_errors(void **state) {
    (void)state;
    char path[1200];
    tpath(path, sizeof path, "levels.npz");
    const int64_t shape[1] = {10000};
    pc_array a = PC_ARRAY_INIT;
    make_array(&a, PC_DTYPE_I32, 1, shape, 5);
    for (int level = 1; level <= 9; level += 4) {
        pc_npz_writer *w = NULL;
        pc_error err;
        assert_int_equal(pc_npz_writer_open(path, PC_NPZ_DEFLATED, &w, &err), PC_OK);
        pc_npz_writer_set_level(w, level);
        assert_int_equal(pc_npz_writer_add_array(w, "a", &a, &err), PC_OK);
        /* the same key twice would make an archive no reader can index */
        assert_int_not_equal(pc_npz_writer_add_array(w, "a", &a, &err), PC_OK);
        const int64_t neg[1] = {-3};
        assert_int_not_equal(pc_npz_writer_add(w, "neg", PC_DTYPE_I32, 1, neg, a.data, &err), PC_OK);
        assert_int_not_equal(pc_npz_writer_add(w, "bad", PC_DTYPE_COUNT, 1, shape, a.data, &err),
                             PC_OK);
        assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
        pc_npz *z = NULL;
        pc_array got = PC_ARRAY_INIT;
        assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
        assert_int_equal(pc_npz_count(z), 1);
        assert_int_equal(pc_npz_read(z, 0, &got, &err), PC_OK);
        assert_same_array(&got, &a);
        pc_array_free(&got);
        pc_npz_close(z);
    }
    pc_array_free(&a);
}

static void test_writer_commit_and_abort(void **state) {
    (void)state;
    char dir[1200], path[1300];
    tpath(dir, sizeof dir, "commit");
    assert_int_equal(pc_mkdirs(dir, NULL), PC_OK);
    fmt(path, sizeof path, "%s/out.npz", dir);
    const int64_t shape[1] = {4};
    pc_array a = PC_ARRAY_INIT;
    make_array(&a, PC_DTYPE_F32, 1, shape, 1);
    pc_error err;

    /* abort: nothing is left behind */
    pc_npz_writer *w = NULL;
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &err), PC_OK);
    assert_int_equal(pc_npz_writer_add_array(w, "a", &a, &err), PC_OK);
    assert_false(file_exists(path));
    pc_npz_writer_abort(w);
    assert_false(file_exists(path));
    assert_int_equal(dir_entries(dir), 0);
    pc_npz_writer_abort(NULL);

    /* commit: exactly the archive, no temporary files */
    for (int mode = 0; mode < 2; mode++) {
        assert_int_equal(pc_npz_writer_open(path, (pc_npz_compress)mode, &w, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add_array(w, "a", &a, &err), PC_OK);
        assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
        assert_true(file_exists(path));
        assert_int_equal(dir_entries(dir), 1);
    }

    /* aborting a rewrite keeps the old archive intact */
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &err), PC_OK);
    const int64_t shape2[1] = {9};
    pc_array b = PC_ARRAY_INIT;
    make_array(&b, PC_DTYPE_I8, 1, shape2, 2);
    assert_int_equal(pc_npz_writer_add_array(w, "b", &b, &err), PC_OK);
    pc_npz_writer_abort(w);
    assert_int_equal(dir_entries(dir), 1);
    pc_npz *z = NULL;
    assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
    assert_int_equal(pc_npz_count(z), 1);
    assert_string_equal(pc_npz_key(z, 0), "a");
    pc_npz_close(z);

    /* committing a rewrite replaces it */
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &err), PC_OK);
    assert_int_equal(pc_npz_writer_add_array(w, "b", &b, &err), PC_OK);
    assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
    assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
    assert_int_equal(pc_npz_count(z), 1);
    assert_string_equal(pc_npz_key(z, 0), "b");
    pc_npz_close(z);
    assert_int_equal(dir_entries(dir), 1);

    /* into a missing directory: fails, names the path, leaves nothing */
    char bad[1400];
    fmt(bad, sizeof bad, "%s/no/such/dir/out.npz", dir);
    pc_status st = pc_npz_writer_open(bad, PC_NPZ_STORED, &w, &err);
    if (st == PC_OK) {
        assert_int_equal(pc_npz_writer_add_array(w, "a", &a, &err), PC_OK);
        st = pc_npz_writer_commit(w, &err);
    }
    assert_int_not_equal(st, PC_OK);
    assert_msg_has(&err, bad);
    assert_false(file_exists(bad));
    pc_array_free(&a);
    pc_array_free(&b);
}

/* ---- borrowed and streamed members: the same bytes as copied ones ---------------- */

typedef struct fill_src {
    const unsigned char *data;
    int calls, fail;
} fill_src;

static int fill_from(void *ctx, uint64_t offset, void *dst, size_t n) {
    fill_src *f = ctx;
    f->calls++;
    if (f->fail) return 1;
    memcpy(dst, f->data + offset, n);
    return 0;
}

static unsigned char *slurp(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    *len = ftell(f);
    rewind(f);
    unsigned char *b = malloc((size_t)*len + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)*len, f), (size_t)*len);
    fclose(f);
    return b;
}

static void test_writer_borrowed_and_stream(void **state) {
    (void)state;
    char p0[1200], p1[1200], p2[1200];
    const int64_t shape[2] = {1000, 37}, eshape[2] = {0, 3};
    pc_array a = PC_ARRAY_INIT;
    make_array(&a, PC_DTYPE_F32, 2, shape, 3);
    pc_error err;
    for (int mode = 0; mode < 2; mode++) {
        tpath(p0, sizeof p0, "copied.npz");
        tpath(p1, sizeof p1, "borrowed.npz");
        tpath(p2, sizeof p2, "streamed.npz");
        pc_npz_writer *w = NULL;
        assert_int_equal(pc_npz_writer_open(p0, (pc_npz_compress)mode, &w, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add(w, "x", PC_DTYPE_F32, 2, shape, a.data, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add(w, "e", PC_DTYPE_I64, 2, eshape, a.data, &err), PC_OK);
        assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
        assert_int_equal(pc_npz_writer_open(p1, (pc_npz_compress)mode, &w, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add_borrowed(w, "x", PC_DTYPE_F32, 2, shape, a.data, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add_borrowed(w, "e", PC_DTYPE_I64, 2, eshape, NULL, &err), PC_OK);
        assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
        fill_src fs = {a.data, 0, 0};
        assert_int_equal(pc_npz_writer_open(p2, (pc_npz_compress)mode, &w, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add_stream(w, "x", PC_DTYPE_F32, 2, shape, fill_from, &fs, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add_borrowed(w, "e", PC_DTYPE_I64, 2, eshape, NULL, &err), PC_OK);
        assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
        assert_true(fs.calls > 0);
        long n0, n1, n2;
        unsigned char *b0 = slurp(p0, &n0), *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
        assert_int_equal(n0, n1);
        assert_int_equal(n0, n2);
        assert_memory_equal(b0, b1, (size_t)n0);
        assert_memory_equal(b0, b2, (size_t)n0);
        free(b0);
        free(b1);
        free(b2);
    }
    /* a fill that fails fails the commit and leaves nothing */
    char dir[1200], path[1300];
    tpath(dir, sizeof dir, "streamfail");
    assert_int_equal(pc_mkdirs(dir, NULL), PC_OK);
    fmt(path, sizeof path, "%s/out.npz", dir);
    fill_src bad = {a.data, 0, 1};
    pc_npz_writer *w = NULL;
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &err), PC_OK);
    assert_int_equal(pc_npz_writer_add_stream(w, "x", PC_DTYPE_F32, 2, shape, fill_from, &bad, &err), PC_OK);
    assert_int_not_equal(pc_npz_writer_commit(w, &err), PC_OK);
    assert_msg_has(&err, path);
    assert_false(file_exists(path));
    assert_int_equal(dir_entries(dir), 0);
    /* borrowed data missing where the shape has elements: an error naming the key */
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &err), PC_OK);
    assert_int_not_equal(pc_npz_writer_add_borrowed(w, "x", PC_DTYPE_F32, 2, shape, NULL, &err), PC_OK);
    assert_msg_has(&err, "'x'");
    pc_npz_writer_abort(w);
    pc_array_free(&a);
}

static void test_writer_empty_archive(void **state) {
    (void)state;
    /* np.savez with no arrays writes a valid empty zip; so must we */
    char path[1200];
    tpath(path, sizeof path, "empty_archive.npz");
    pc_npz_writer *w = NULL;
    pc_error err;
    assert_int_equal(pc_npz_writer_open(path, PC_NPZ_STORED, &w, &err), PC_OK);
    assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
    if (!file_exists(path)) fail_msg("commit of an empty archive returned PC_OK but wrote no file");
    pc_npz *z = NULL;
    assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
    assert_int_equal(pc_npz_count(z), 0);
    pc_array none[1];
    assert_int_equal(pc_npz_read_all(z, none, 0, &err), PC_OK);
    pc_npz_close(z);
}

/* ---- row ranges ---------------------------------------------------------- */

static void check_rows(pc_npz *z, int k, const pc_array *whole, int64_t row0, int64_t n) {
    pc_array r = PC_ARRAY_INIT;
    pc_error err;
    if (pc_npz_read_rows(z, k, row0, n, &r, &err) != PC_OK)
        fail_msg("rows [%lld, +%lld): %s", (long long)row0, (long long)n, err.msg);
    assert_int_equal(r.dtype, whole->dtype);
    assert_int_equal(r.ndim, whole->ndim);
    assert_int_equal(r.shape[0], n);
    for (int d = 1; d < whole->ndim; d++) assert_int_equal(r.shape[d], whole->shape[d]);
    size_t row_bytes = pc_array_nbytes(whole) / (size_t)whole->shape[0];
    assert_int_equal(pc_array_nbytes(&r), row_bytes * (size_t)n);
    if (n) assert_memory_equal(r.data, (const char *)whole->data + row_bytes * (size_t)row0,
                               row_bytes * (size_t)n);
    pc_array_free(&r);
}

static void test_read_rows(void **state) {
    (void)state;
    const int64_t shape[2] = {1000, 7};
    pc_array a = PC_ARRAY_INIT;
    make_array(&a, PC_DTYPE_I32, 2, shape, 11);
    const int64_t shape1[1] = {5};
    pc_array b = PC_ARRAY_INIT;
    make_array(&b, PC_DTYPE_F64, 1, shape1, 12);
    for (int mode = 0; mode < 2; mode++) {
        char path[1200];
        tpath(path, sizeof path, mode ? "rows_d.npz" : "rows_s.npz");
        pc_npz_writer *w = NULL;
        pc_error err;
        assert_int_equal(pc_npz_writer_open(path, (pc_npz_compress)mode, &w, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add_array(w, "b", &b, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add_array(w, "a", &a, &err), PC_OK);
        assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
        pc_npz *z = NULL;
        assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
        int k = pc_npz_find(z, "a");
        check_rows(z, k, &a, 0, 10);      /* first */
        check_rows(z, k, &a, 500, 3);     /* middle */
        check_rows(z, k, &a, 997, 3);     /* last */
        check_rows(z, k, &a, 999, 1);
        check_rows(z, k, &a, 0, 1000);    /* all */
        check_rows(z, k, &a, 1000, 0);    /* empty at the end */
        check_rows(z, k, &a, 0, 0);       /* empty at the start */
        check_rows(z, k, &a, 123, 0);
        check_rows(z, pc_npz_find(z, "b"), &b, 2, 3);
        static const int64_t bad[][2] = {{1000, 1}, {999, 2}, {1001, 0}, {-1, 1}, {0, -1},
                                         {0, 1001}, {INT64_MAX, 1}, {1, INT64_MAX}};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            pc_array r = PC_ARRAY_INIT;
            pc_error_clear(&err);
            pc_status st = pc_npz_read_rows(z, k, bad[i][0], bad[i][1], &r, &err);
            if (st != PC_ERR_RANGE)
                fail_msg("rows [%lld, +%lld) of 1000: status %d (%s), expected PC_ERR_RANGE",
                         (long long)bad[i][0], (long long)bad[i][1], st, err.msg);
            assert_null(r.data);
            assert_msg_has(&err, path);
        }
        pc_array r = PC_ARRAY_INIT;
        assert_int_equal(pc_npz_read_rows(z, 99, 0, 1, &r, &err), PC_ERR_RANGE);
        pc_npz_close(z);
    }
    pc_array_free(&a);
    pc_array_free(&b);
}

static void test_rows_cursor(void **state) {
    (void)state;
    const int64_t shape[2] = {300, 5};
    pc_array a = PC_ARRAY_INIT;
    make_array(&a, PC_DTYPE_I64, 2, shape, 21);
    const size_t row_bytes = 5 * 8;
    for (int mode = 0; mode < 2; mode++) {
        char path[1200];
        tpath(path, sizeof path, mode ? "cursor_d.npz" : "cursor_s.npz");
        pc_npz_writer *w = NULL;
        pc_error err;
        assert_int_equal(pc_npz_writer_open(path, (pc_npz_compress)mode, &w, &err), PC_OK);
        assert_int_equal(pc_npz_writer_add_array(w, "a", &a, &err), PC_OK);
        const int64_t s0 = 0;
        double scalar = 1.0;
        assert_int_equal(pc_npz_writer_add(w, "scalar", PC_DTYPE_F64, 0, &s0, &scalar, &err), PC_OK);
        assert_int_equal(pc_npz_writer_commit(w, &err), PC_OK);
        pc_npz *z = NULL;
        assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
        pc_npz_rows *r = NULL;
        assert_int_equal(pc_npz_rows_open(z, pc_npz_find(z, "a"), &r, &err), PC_OK);
        const pc_array_info *info = pc_npz_rows_info(r);
        assert_int_equal(info->dtype, PC_DTYPE_I64);
        assert_int_equal(info->shape[0], 300);
        int64_t buf[40 * 5];
        static const int64_t reads[][2] = {{0, 3}, {3, 2}, {10, 40}, {50, 0}, {50, 1}, {299, 1},
                                           {300, 0}};
        for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
            memset(buf, 0x5a, sizeof buf);
            if (pc_npz_rows_read(r, reads[i][0], reads[i][1], buf, &err) != PC_OK)
                fail_msg("cursor read [%lld, +%lld): %s", (long long)reads[i][0],
                         (long long)reads[i][1], err.msg);
            if (reads[i][1])
                assert_memory_equal(buf, (const char *)a.data + row_bytes * (size_t)reads[i][0],
                                    row_bytes * (size_t)reads[i][1]);
        }
        assert_int_not_equal(pc_npz_rows_read(r, 5, 1, buf, &err), PC_OK); /* backwards */
        pc_npz_rows_close(r);

        /* out of range on a fresh cursor */
        assert_int_equal(pc_npz_rows_open(z, pc_npz_find(z, "a"), &r, &err), PC_OK);
        assert_int_equal(pc_npz_rows_read(r, 299, 2, buf, &err), PC_ERR_RANGE);
        assert_int_equal(pc_npz_rows_read(r, -1, 1, buf, &err), PC_ERR_RANGE);
        assert_int_equal(pc_npz_rows_read(r, 298, 2, buf, &err), PC_OK);
        assert_memory_equal(buf, (const char *)a.data + row_bytes * 298, row_bytes * 2);
        /* two cursors on one archive */
        pc_npz_rows *r2 = NULL;
        assert_int_equal(pc_npz_rows_open(z, pc_npz_find(z, "a"), &r2, &err), PC_OK);
        assert_int_equal(pc_npz_rows_read(r2, 100, 1, buf, &err), PC_OK);
        assert_memory_equal(buf, (const char *)a.data + row_bytes * 100, row_bytes);
        pc_npz_rows_close(r2);
        pc_npz_rows_close(r);
        pc_npz_rows_close(NULL);

        /* a 0-d member has no rows */
        r = NULL;
        assert_int_not_equal(pc_npz_rows_open(z, pc_npz_find(z, "scalar"), &r, &err), PC_OK);
        assert_null(r);
        assert_msg_has(&err, "scalar");
        pc_npz_close(z);
    }
    pc_array_free(&a);
}

/* ---- hand-made members: byte order, Fortran order, float16 --------------- */

static void test_handmade_members(void **state) {
    (void)state;
    /* >i4 (2,3): 0..5 */
    unsigned char be_i4[24];
    for (int i = 0; i < 6; i++) {
        be_i4[4 * i] = 0;
        be_i4[4 * i + 1] = 0;
        be_i4[4 * i + 2] = (unsigned char)(i == 5 ? 0x80 : 0);
        be_i4[4 * i + 3] = (unsigned char)i;
    }
    /* >f8 (2,): 1.5, -2.0 */
    static const unsigned char be_f8[16] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0,
                                            0xc0, 0x00, 0, 0, 0, 0, 0, 0};
    /* <i4 Fortran (2,3) holding C-order [[0,1,2],[3,4,5]]: column-major 0,3,1,4,2,5 */
    static const int32_t f_i4[6] = {0, 3, 1, 4, 2, 5};
    /* <i2 Fortran (2,3,2) of C-order 0..11 */
    int16_t f_i2[12];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++) f_i2[i + 2 * j + 6 * k] = (int16_t)(i * 6 + j * 2 + k);
    /* <f2: 1, -2, 0.5, 65504, inf, smallest subnormal */
    static const uint16_t f2[6] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x7c00, 0x0001};
    /* >f2 of the same */
    unsigned char be_f2[12];
    for (int i = 0; i < 6; i++) {
        be_f2[2 * i] = (unsigned char)(f2[i] >> 8);
        be_f2[2 * i + 1] = (unsigned char)(f2[i] & 0xff);
    }
    /* |b1 */
    static const unsigned char b1[4] = {1, 0, 0, 1};
    /* >u2 Fortran (3,2): C-order [[1,2],[3,4],[5,6]] -> column-major 1,3,5,2,4,6 */
    static const unsigned char be_u2_f[12] = {0, 1, 0, 3, 0, 5, 0, 2, 0, 4, 0, 6};

    size_t l[9];
    unsigned char *npy[9];
    npy[0] = make_npy(">i4", 0, "(2, 3)", be_i4, sizeof be_i4, &l[0]);
    npy[1] = make_npy(">f8", 0, "(2,)", be_f8, sizeof be_f8, &l[1]);
    npy[2] = make_npy("<i4", 1, "(2, 3)", f_i4, sizeof f_i4, &l[2]);
    npy[3] = make_npy("<i2", 1, "(2, 3, 2)", f_i2, sizeof f_i2, &l[3]);
    npy[4] = make_npy("<f2", 0, "(2, 3)", f2, sizeof f2, &l[4]);
    npy[5] = make_npy(">f2", 0, "(6,)", be_f2, sizeof be_f2, &l[5]);
    npy[6] = make_npy("|b1", 0, "(4,)", b1, sizeof b1, &l[6]);
    npy[7] = make_npy(">u2", 1, "(3, 2)", be_u2_f, sizeof be_u2_f, &l[7]);
    npy[8] = make_npy("<i4", 1, "(6,)", f_i4, sizeof f_i4, &l[8]); /* 1-d "Fortran" */

    for (int mode = 0; mode < 2; mode++) {
        const zmember m[] = {
            {"be_i4.npy", npy[0], l[0], mode},  {"be_f8.npy", npy[1], l[1], mode},
            {"f_i4.npy", npy[2], l[2], mode},   {"f_i2.npy", npy[3], l[3], mode},
            {"f2.npy", npy[4], l[4], mode},     {"be_f2.npy", npy[5], l[5], mode},
            {"b1.npy", npy[6], l[6], mode},     {"README.txt", "not an array", 12, mode},
            {"sub/", "", 0, 0},                 {"be_u2_f.npy", npy[7], l[7], mode},
            {"f1d.npy", npy[8], l[8], mode},
        };
        char path[1200];
        tpath(path, sizeof path, mode ? "hand_d.npz" : "hand_s.npz");
        make_zip(path, m, (int)(sizeof m / sizeof m[0]));
        pc_npz *z = NULL;
        pc_error err;
        assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
        assert_int_equal(pc_npz_count(z), 9); /* README.txt and sub/ are not arrays */
        pc_array a = PC_ARRAY_INIT;
        pc_array_info info;

        assert_int_equal(pc_npz_info(z, pc_npz_find(z, "be_i4"), &info, &err), PC_OK);
        assert_int_equal(info.big_endian, 1);
        assert_int_equal(pc_npz_read(z, pc_npz_find(z, "be_i4"), &a, &err), PC_OK);
        assert_int_equal(a.dtype, PC_DTYPE_I32);
        for (int i = 0; i < 6; i++)
            assert_int_equal(((int32_t *)a.data)[i], i == 5 ? 0x8005 : i);
        pc_array_free(&a);

        assert_int_equal(pc_npz_read(z, pc_npz_find(z, "be_f8"), &a, &err), PC_OK);
        assert_true(((double *)a.data)[0] == 1.5 && ((double *)a.data)[1] == -2.0);
        pc_array_free(&a);

        assert_int_equal(pc_npz_info(z, pc_npz_find(z, "f_i4"), &info, &err), PC_OK);
        assert_int_equal(info.fortran_order, 1);
        assert_int_equal(pc_npz_read(z, pc_npz_find(z, "f_i4"), &a, &err), PC_OK);
        assert_int_equal(a.ndim, 2);
        assert_int_equal(a.shape[0], 2);
        assert_int_equal(a.shape[1], 3);
        for (int i = 0; i < 6; i++) assert_int_equal(((int32_t *)a.data)[i], i);
        pc_array_free(&a);

        assert_int_equal(pc_npz_read(z, pc_npz_find(z, "f_i2"), &a, &err), PC_OK);
        for (int i = 0; i < 12; i++) assert_int_equal(((int16_t *)a.data)[i], i);
        pc_array_free(&a);

        assert_int_equal(pc_npz_read(z, pc_npz_find(z, "be_u2_f"), &a, &err), PC_OK);
        for (int i = 0; i < 6; i++) assert_int_equal(((uint16_t *)a.data)[i], i + 1);
        pc_array_free(&a);

        static const float want_f2[6] = {1.0f, -2.0f, 0.5f, 65504.0f, INFINITY,
                                         5.9604644775390625e-8f};
        for (int which = 0; which < 2; which++) {
            int k = pc_npz_find(z, which ? "be_f2" : "f2");
            assert_int_equal(pc_npz_info(z, k, &info, &err), PC_OK);
            assert_int_equal(info.dtype, PC_DTYPE_F16); /* file dtype stays F16 */
            assert_int_equal(info.data_bytes, 12);
            assert_int_equal(pc_npz_read(z, k, &a, &err), PC_OK);
            assert_int_equal(a.dtype, PC_DTYPE_F32);
            assert_int_equal(pc_array_nbytes(&a), 24);
            for (int i = 0; i < 6; i++)
                if (((float *)a.data)[i] != want_f2[i])
                    fail_msg("%s[%d] = %g, expected %g", which ? "be_f2" : "f2", i,
                             (double)((float *)a.data)[i], (double)want_f2[i]);
            pc_array_free(&a);
            /* rows of a float16 member are converted too */
            pc_array r = PC_ARRAY_INIT;
            assert_int_equal(pc_npz_read_rows(z, k, 1, 1, &r, &err), PC_OK);
            assert_int_equal(r.dtype, PC_DTYPE_F32);
            if (which) { /* (6,): row 1 is one element */
                assert_true(((float *)r.data)[0] == -2.0f);
            } else {
                for (int i = 0; i < 3; i++) assert_true(((float *)r.data)[i] == want_f2[3 + i]);
            }
            pc_array_free(&r);
        }

        assert_int_equal(pc_npz_read(z, pc_npz_find(z, "b1"), &a, &err), PC_OK);
        assert_int_equal(a.dtype, PC_DTYPE_BOOL);
        assert_memory_equal(a.data, b1, 4);
        pc_array_free(&a);

        /* rows of big-endian members come back native */
        assert_int_equal(pc_npz_read_rows(z, pc_npz_find(z, "be_i4"), 1, 1, &a, &err), PC_OK);
        assert_int_equal(((int32_t *)a.data)[0], 3);
        assert_int_equal(((int32_t *)a.data)[2], 0x8005);
        pc_array_free(&a);
        /* a 1-d Fortran-flagged member is laid out like C: rows work */
        assert_int_equal(pc_npz_read_rows(z, pc_npz_find(z, "f1d"), 2, 2, &a, &err), PC_OK);
        assert_int_equal(((int32_t *)a.data)[0], 1);
        pc_array_free(&a);
        /* Fortran-order 2-d members: whole reads only */
        pc_error_clear(&err);
        assert_int_equal(pc_npz_read_rows(z, pc_npz_find(z, "f_i4"), 0, 1, &a, &err),
                         PC_ERR_UNSUPPORTED);
        assert_msg_has(&err, path);
        assert_msg_has(&err, "f_i4");

        /* read_all matches per-member reads, for several thread counts */
        for (int threads = 0; threads <= 4; threads += 2) {
            pc_array all[9];
            assert_int_equal(pc_npz_read_all(z, all, threads, &err), PC_OK);
            for (int i = 0; i < 9; i++) {
                pc_array one = PC_ARRAY_INIT;
                assert_int_equal(pc_npz_read(z, i, &one, &err), PC_OK);
                assert_same_array(&all[i], &one);
                pc_array_free(&one);
                pc_array_free(&all[i]);
            }
        }
        pc_npz_close(z);
    }
    for (int i = 0; i < 9; i++) free(npy[i]);
}

static void test_read_all(void **state) {
    (void)state;
    roundtrip_set s;
    make_roundtrip_set(&s);
    for (int mode = 0; mode < 2; mode++) {
        char path[1200];
        tpath(path, sizeof path, mode ? "all_d.npz" : "all_s.npz");
        write_set(path, &s, (pc_npz_compress)mode);
        pc_npz *z = NULL;
        pc_error err;
        assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
        for (int threads = 0; threads <= 8; threads = threads ? threads * 2 : 1) {
            pc_array all[N_WRITE_DTYPES + 4];
            assert_int_equal(pc_npz_read_all(z, all, threads, &err), PC_OK);
            for (int i = 0; i < s.n; i++) {
                assert_string_equal(pc_npz_key(z, i), s.keys[i]); /* writer keeps order */
                pc_array one = PC_ARRAY_INIT;
                assert_int_equal(pc_npz_read(z, i, &one, &err), PC_OK);
                assert_same_array(&all[i], &one);
                assert_same_array(&all[i], &s.a[i]);
                pc_array_free(&one);
                pc_array_free(&all[i]);
            }
        }
        pc_npz_close(z);
    }
    free_roundtrip_set(&s);
}

static void test_member_errors_name_file_and_key(void **state) {
    (void)state;
    size_t l1, l2, l3;
    static const double d[2] = {1, 2};
    unsigned char *bad_dtype = make_npy("<c8", 0, "(2,)", d, sizeof d, &l1);
    unsigned char *short_data = make_npy("<f8", 0, "(100,)", d, sizeof d, &l2);
    unsigned char *good = make_npy("<f8", 0, "(2,)", d, sizeof d, &l3);
    for (int mode = 0; mode < 2; mode++) {
        const zmember m[] = {{"good.npy", good, l3, mode},
                             {"weird_dtype.npy", bad_dtype, l1, mode},
                             {"too_short.npy", short_data, l2, mode}};
        char path[1200];
        tpath(path, sizeof path, mode ? "errs_d.npz" : "errs_s.npz");
        make_zip(path, m, 3);
        pc_npz *z = NULL;
        pc_error err;
        assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
        assert_int_equal(pc_npz_count(z), 3);
        static const char *const keys[2] = {"weird_dtype", "too_short"};
        for (int i = 0; i < 2; i++) {
            int k = pc_npz_find(z, keys[i]);
            pc_array a = PC_ARRAY_INIT;
            pc_array_info info;
            pc_error_clear(&err);
            assert_int_not_equal(pc_npz_read(z, k, &a, &err), PC_OK);
            assert_null(a.data);
            assert_msg_has(&err, path);
            assert_msg_has(&err, keys[i]);
            pc_error_clear(&err);
            assert_int_not_equal(pc_npz_info(z, k, &info, &err), PC_OK);
            assert_msg_has(&err, keys[i]);
            pc_error_clear(&err);
            assert_int_not_equal(pc_npz_read_rows(z, k, 0, 1, &a, &err), PC_OK);
            assert_msg_has(&err, keys[i]);
        }
        /* read_all fails as a whole and leaves nothing allocated */
        pc_array all[3];
        pc_error_clear(&err);
        assert_int_not_equal(pc_npz_read_all(z, all, 2, &err), PC_OK);
        assert_msg_has(&err, path);
        for (int i = 0; i < 3; i++) assert_null(all[i].data);
        /* the good member still reads */
        pc_array a = PC_ARRAY_INIT;
        assert_int_equal(pc_npz_read(z, pc_npz_find(z, "good"), &a, &err), PC_OK);
        pc_array_free(&a);
        pc_npz_close(z);
    }
    free(bad_dtype);
    free(short_data);
    free(good);
}

/* ---- dtype conversion ------------------------------------------------------ */

static void test_convert(void **state) {
    (void)state;
    pc_error err;
    const int64_t shape[1] = {4};
    pc_array a = PC_ARRAY_INIT;

    /* widening and int -> float */
    assert_int_equal(pc_array_alloc(&a, PC_DTYPE_I32, 1, shape, NULL), PC_OK);
    static const int32_t v[4] = {-5, 0, 7, 2147483647};
    memcpy(a.data, v, sizeof v);
    assert_int_equal(pc_array_convert(&a, PC_DTYPE_I64, "t", &err), PC_OK);
    assert_int_equal(a.dtype, PC_DTYPE_I64);
    assert_int_equal(((int64_t *)a.data)[0], -5);
    assert_int_equal(((int64_t *)a.data)[3], 2147483647);
    assert_int_equal(pc_array_convert(&a, PC_DTYPE_F64, "t", &err), PC_OK);
    assert_true(((double *)a.data)[0] == -5.0 && ((double *)a.data)[3] == 2147483647.0);
    /* float -> int when exact */
    assert_int_equal(pc_array_convert(&a, PC_DTYPE_I32, "t", &err), PC_OK);
    assert_int_equal(((int32_t *)a.data)[2], 7);
    /* same dtype: no-op */
    void *before = a.data;
    assert_int_equal(pc_array_convert(&a, PC_DTYPE_I32, "t", &err), PC_OK);
    assert_ptr_equal(a.data, before);
    pc_array_free(&a);

    /* narrowing in range */
    assert_int_equal(pc_array_alloc(&a, PC_DTYPE_I64, 1, shape, NULL), PC_OK);
    static const int64_t small[4] = {-128, 127, 0, 5};
    memcpy(a.data, small, sizeof small);
    assert_int_equal(pc_array_convert(&a, PC_DTYPE_I8, "t", &err), PC_OK);
    assert_int_equal(((int8_t *)a.data)[0], -128);
    assert_int_equal(((int8_t *)a.data)[1], 127);
    pc_array_free(&a);

    /* narrowing out of range: PC_ERR_RANGE naming `what`, array untouched */
    static const struct {
        pc_dtype from, to;
        int64_t value;
    } bad[] = {
        {PC_DTYPE_I64, PC_DTYPE_I32, INT64_C(1) << 40},
        {PC_DTYPE_I64, PC_DTYPE_I32, -(INT64_C(1) << 40)},
        {PC_DTYPE_I32, PC_DTYPE_U32, -1},
        {PC_DTYPE_I16, PC_DTYPE_U8, 256},
        {PC_DTYPE_I16, PC_DTYPE_I8, -129},
        {PC_DTYPE_U64, PC_DTYPE_I64, -1 /* as u64: 2^64-1 */},
        {PC_DTYPE_I64, PC_DTYPE_U16, 65536},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(pc_array_alloc(&a, bad[i].from, 1, shape, NULL), PC_OK);
        size_t es = pc_dtype_size(bad[i].from);
        memcpy((char *)a.data + 2 * es, &bad[i].value, es); /* element 2, little-endian */
        pc_error_clear(&err);
        pc_status st = pc_array_convert(&a, bad[i].to, "file.npz: node_opcode", &err);
        if (st != PC_ERR_RANGE)
            fail_msg("case %zu: %s -> %s: status %d, expected PC_ERR_RANGE", i,
                     pc_dtype_name(bad[i].from), pc_dtype_name(bad[i].to), st);
        assert_msg_has(&err, "file.npz: node_opcode");
        assert_int_equal(a.dtype, bad[i].from);
        assert_int_equal(pc_array_count(&a), 4);
        assert_memory_equal((char *)a.data + 2 * es, &bad[i].value, es);
        pc_array_free(&a);
    }

    /* fractional floats do not silently truncate into ints */
    assert_int_equal(pc_array_alloc(&a, PC_DTYPE_F64, 1, shape, NULL), PC_OK);
    ((double *)a.data)[1] = 2.5;
    assert_int_not_equal(pc_array_convert(&a, PC_DTYPE_I32, "frac", &err), PC_OK);
    ((double *)a.data)[1] = NAN;
    assert_int_not_equal(pc_array_convert(&a, PC_DTYPE_I64, "nan", &err), PC_OK);
    pc_array_free(&a);

    /* empty arrays convert */
    const int64_t empty[2] = {0, 3};
    assert_int_equal(pc_array_alloc(&a, PC_DTYPE_I64, 2, empty, NULL), PC_OK);
    assert_int_equal(pc_array_convert(&a, PC_DTYPE_I32, "empty", &err), PC_OK);
    assert_int_equal(a.dtype, PC_DTYPE_I32);
    assert_int_equal(a.shape[1], 3);
    pc_array_free(&a);
}

/* ---- single .npy files -------------------------------------------------------- */

static void test_npy_save_load_map(void **state) {
    (void)state;
    const int64_t shape[3] = {3, 4, 5};
    for (int t = 0; t < N_WRITE_DTYPES; t++) {
        for (int ndim = 0; ndim <= 3; ndim++) {
            pc_array a = PC_ARRAY_INIT, b = PC_ARRAY_INIT, m = PC_ARRAY_INIT;
            make_array(&a, k_write_dtypes[t], ndim, shape, (unsigned)(t * 7 + ndim));
            char path[1200];
            tpath(path, sizeof path, "single.npy");
            pc_error err;
            if (pc_npy_save(path, &a, &err) != PC_OK) fail_msg("save: %s", err.msg);
            if (pc_npy_load(path, &b, &err) != PC_OK) fail_msg("load: %s", err.msg);
            assert_same_array(&b, &a);
            if (pc_npy_map(path, &m, &err) != PC_OK) fail_msg("map: %s", err.msg);
            assert_same_array(&m, &a);
            pc_array_free(&m);
            assert_null(m.data);
            pc_array_free(&a);
            pc_array_free(&b);
        }
    }
    /* empty array */
    const int64_t empty[2] = {0, 5};
    pc_array a = PC_ARRAY_INIT, b = PC_ARRAY_INIT;
    make_array(&a, PC_DTYPE_F32, 2, empty, 0);
    char path[1200];
    tpath(path, sizeof path, "empty.npy");
    pc_error err;
    assert_int_equal(pc_npy_save(path, &a, &err), PC_OK);
    assert_int_equal(pc_npy_load(path, &b, &err), PC_OK);
    assert_same_array(&b, &a);
    pc_array_free(&b);
    assert_int_equal(pc_npy_map(path, &b, &err), PC_OK);
    assert_same_array(&b, &a);
    pc_array_free(&b);
    pc_array_free(&a);
    /* saving leaves no temporary file */
    char dir[1000];
    tpath(dir, sizeof dir, "npydir");
    assert_int_equal(pc_mkdirs(dir, NULL), PC_OK);
    fmt(path, sizeof path, "%s/x.npy", dir);
    const int64_t s1[1] = {3};
    make_array(&a, PC_DTYPE_U8, 1, s1, 1);
    assert_int_equal(pc_npy_save(path, &a, &err), PC_OK);
    assert_int_equal(pc_npy_save(path, &a, &err), PC_OK); /* overwrite */
    assert_int_equal(dir_entries(dir), 1);
    pc_array_free(&a);
}

static void test_npy_handmade(void **state) {
    (void)state;
    char path[1200];
    tpath(path, sizeof path, "hand.npy");
    pc_error err;
    pc_array a = PC_ARRAY_INIT;
    size_t len;

    /* big-endian: load converts, map refuses */
    static const unsigned char be[8] = {0, 0, 1, 0, 0xff, 0xff, 0xff, 0xfe};
    unsigned char *f = make_npy(">i4", 0, "(2,)", be, sizeof be, &len);
    write_file(path, f, len);
    free(f);
    assert_int_equal(pc_npy_load(path, &a, &err), PC_OK);
    assert_int_equal(((int32_t *)a.data)[0], 256);
    assert_int_equal(((int32_t *)a.data)[1], -2);
    pc_array_free(&a);
    assert_int_not_equal(pc_npy_map(path, &a, &err), PC_OK);
    assert_msg_has(&err, path);
    assert_null(a.data);

    /* float16: load converts to float32, map refuses */
    static const uint16_t h[3] = {0x3c00, 0xbc00, 0x7e00 /* NaN */};
    f = make_npy("<f2", 0, "(3,)", h, sizeof h, &len);
    write_file(path, f, len);
    free(f);
    assert_int_equal(pc_npy_load(path, &a, &err), PC_OK);
    assert_int_equal(a.dtype, PC_DTYPE_F32);
    assert_true(((float *)a.data)[0] == 1.0f && ((float *)a.data)[1] == -1.0f);
    assert_true(isnan(((float *)a.data)[2]));
    pc_array_free(&a);
    assert_int_not_equal(pc_npy_map(path, &a, &err), PC_OK);

    /* Fortran order: load reorders */
    static const uint8_t fo[6] = {0, 3, 1, 4, 2, 5};
    f = make_npy("|u1", 1, "(2, 3)", fo, sizeof fo, &len);
    write_file(path, f, len);
    free(f);
    assert_int_equal(pc_npy_load(path, &a, &err), PC_OK);
    for (int i = 0; i < 6; i++) assert_int_equal(((uint8_t *)a.data)[i], i);
    pc_array_free(&a);

    /* versions 2 and 3 */
    for (int v = 2; v <= 3; v++) {
        unsigned char b[256];
        size_t hl = make_header3(b, v, "<f8", 0, "(2,)");
        static const double d[2] = {0.25, -8};
        memcpy(b + hl, d, sizeof d);
        write_file(path, b, hl + sizeof d);
        assert_int_equal(pc_npy_load(path, &a, &err), PC_OK);
        assert_true(((double *)a.data)[0] == 0.25 && ((double *)a.data)[1] == -8);
        pc_array_free(&a);
    }

    /* data shorter than the header says */
    static const double d3[3] = {1, 2, 3};
    f = make_npy("<f8", 0, "(4,)", d3, sizeof d3, &len);
    write_file(path, f, len);
    free(f);
    assert_int_not_equal(pc_npy_load(path, &a, &err), PC_OK);
    assert_msg_has(&err, path);
    assert_null(a.data);
}

static void test_open_errors(void **state) {
    (void)state;
    pc_error err;
    pc_npz *z = (pc_npz *)(uintptr_t)1; /* must be reset to NULL on failure */
    pc_array a = PC_ARRAY_INIT;
    char missing[1200];
    tpath(missing, sizeof missing, "does_not_exist.npz");

    pc_error_clear(&err);
    assert_int_not_equal(pc_npz_open(missing, &z, &err), PC_OK);
    assert_null(z);
    assert_msg_has(&err, missing);
    assert_true(err.code == PC_ERR_IO || err.code == PC_ERR_NOTFOUND);

    pc_error_clear(&err);
    assert_int_not_equal(pc_npz_open(g_dir, &z, &err), PC_OK); /* a directory */
    assert_msg_has(&err, g_dir);

    pc_error_clear(&err);
    assert_int_not_equal(pc_npy_load(missing, &a, &err), PC_OK);
    assert_msg_has(&err, missing);
    pc_error_clear(&err);
    assert_int_not_equal(pc_npy_load(g_dir, &a, &err), PC_OK);
    assert_msg_has(&err, g_dir);
    pc_error_clear(&err);
    assert_int_not_equal(pc_npy_map(missing, &a, &err), PC_OK);
    assert_msg_has(&err, missing);
    pc_error_clear(&err);
    assert_int_not_equal(pc_npy_map(g_dir, &a, &err), PC_OK);
    assert_msg_has(&err, g_dir);

    /* errors with a NULL error record do not crash */
    assert_int_not_equal(pc_npz_open(missing, &z, NULL), PC_OK);
    assert_int_not_equal(pc_npy_load(missing, &a, NULL), PC_OK);

    /* not a zip */
    char path[1200];
    tpath(path, sizeof path, "text.npz");
    write_file(path, "hello, world\n", 13);
    pc_error_clear(&err);
    assert_int_not_equal(pc_npz_open(path, &z, &err), PC_OK);
    assert_msg_has(&err, path);
    /* an empty file */
    write_file(path, "", 0);
    pc_error_clear(&err);
    assert_int_not_equal(pc_npz_open(path, &z, &err), PC_OK);
    assert_msg_has(&err, path);
    tpath(path, sizeof path, "text.npy");
    write_file(path, "", 0);
    assert_int_not_equal(pc_npy_load(path, &a, &err), PC_OK);
    assert_msg_has(&err, path);
    /* the must-fail folder, when the test runs from ctest */
    const char *data = getenv("PC_TEST_DATA");
    if (data) {
        fmt(path, sizeof path, "%s/bad/member_huge_shape.npz", data);
        if (file_exists(path)) {
            assert_int_equal(pc_npz_open(path, &z, &err), PC_OK);
            assert_int_not_equal(pc_npz_read(z, pc_npz_find(z, "x"), &a, &err), PC_OK);
            assert_msg_has(&err, path);
            assert_msg_has(&err, "x.npy");
            pc_npz_close(z);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_basics),
        cmocka_unit_test(test_array_alloc),
        cmocka_unit_test(test_parse_header_versions),
        cmocka_unit_test(test_parse_header_dtypes),
        cmocka_unit_test(test_parse_header_order_and_shapes),
        cmocka_unit_test(test_parse_header_rejects),
        cmocka_unit_test(test_format_header),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_writer_levels_and_errors),
        cmocka_unit_test(test_writer_commit_and_abort),
        cmocka_unit_test(test_writer_borrowed_and_stream),
        cmocka_unit_test(test_writer_empty_archive),
        cmocka_unit_test(test_read_rows),
        cmocka_unit_test(test_rows_cursor),
        cmocka_unit_test(test_handmade_members),
        cmocka_unit_test(test_read_all),
        cmocka_unit_test(test_member_errors_name_file_and_key),
        cmocka_unit_test(test_convert),
        cmocka_unit_test(test_npy_save_load_map),
        cmocka_unit_test(test_npy_handmade),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
