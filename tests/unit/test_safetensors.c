/*
 * Unit tests for the safetensors reader and writer
 * (include/perfcast/safetensors.h): round trips of every dtype (0-d and empty
 * tensors, metadata with quotes and unicode), byte-exact reproducibility,
 * header padding and tensor alignment, files made by hand (unpadded,
 * misaligned), writer argument checks, and must-fail files that have to end
 * in a clean PC_ERR_FORMAT (or PC_ERR_UNSUPPORTED) naming the file, the
 * tensor and what was expected.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "perfcast/safetensors.h"

/* ---- scratch directory ------------------------------------------------ */

static char g_dir[1024];

static int group_setup(void **state) {
    (void)state;
    const char *base = getenv("PC_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    if (pc_mkdirs(base, NULL) != PC_OK) return -1;
    int n = snprintf(g_dir, sizeof g_dir, "%s/test_safetensors_XXXXXX", base);
    if (n < 0 || (size_t)n >= sizeof g_dir) return -1;
    return mkdtemp(g_dir) ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    pc_remove_tree(g_dir);
    return 0;
}

static const char *tpath(char *buf, size_t cap, const char *name) {
    int n = snprintf(buf, cap, "%s/%s", g_dir, name);
    if (n < 0 || (size_t)n >= cap) fail_msg("path too long");
    return buf;
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (len) assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

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

/* ---- fixtures ----------------------------------------------------------- */

static const float k_f32[6] = {1.5f, -2.25f, 3.0f, 0.0f, -0.0f, 1e30f};
static const double k_f64[4] = {3.141592653589793, -1e-300, 2.5, 1e300};
static const int32_t k_i32[4] = {INT32_MIN, -1, 0, INT32_MAX};
static const int64_t k_i64[3] = {INT64_MIN, 42, INT64_MAX};
static const uint8_t k_u8[5] = {0, 1, 127, 128, 255};
static const double k_scalar = -7.75;
static const uint16_t k_f16[3] = {0x3C00, 0xC000, 0x3800}; /* 1, -2, 0.5 */
static const uint8_t k_bool[3] = {1, 0, 1};
static const int8_t k_i8[2] = {-128, 127};
static const uint16_t k_u16[2] = {1, 65535};

static const char *const k_meta_json =
    "{\"arch\": \"mlp\", \"layers\": [64, 64], \"note\": \"quote \\\" backslash \\\\\"}";
static const char *const k_meta_unicode = "na\xC3\xAFve \xE2\x80\x93 \xE6\x97\xA5\xE6\x9C\xAC "
                                          "\xF0\x9F\x9A\x80 tab\tnewline\n";

typedef struct fixture {
    const char *name;
    pc_dtype t;
    int ndim;
    int64_t shape[3];
    const void *data;
    size_t nbytes;
} fixture;

static const fixture k_fix[] = {
    {"w.f32", PC_DTYPE_F32, 2, {2, 3}, k_f32, sizeof k_f32},
    {"b.f64", PC_DTYPE_F64, 1, {4}, k_f64, sizeof k_f64},
    {"ids.i32", PC_DTYPE_I32, 2, {2, 2}, k_i32, sizeof k_i32},
    {"big.i64", PC_DTYPE_I64, 1, {3}, k_i64, sizeof k_i64},
    {"bytes.u8", PC_DTYPE_U8, 1, {5}, k_u8, sizeof k_u8},
    {"scalar", PC_DTYPE_F64, 0, {0}, &k_scalar, sizeof k_scalar},
    {"empty.f32", PC_DTYPE_F32, 2, {0, 3}, NULL, 0},
    {"empty.i64", PC_DTYPE_I64, 1, {0}, NULL, 0},
    {"half", PC_DTYPE_F16, 1, {3}, k_f16, sizeof k_f16},
    {"mask", PC_DTYPE_BOOL, 1, {3}, k_bool, sizeof k_bool},
    {"i8", PC_DTYPE_I8, 1, {2}, k_i8, sizeof k_i8},
    {"u16", PC_DTYPE_U16, 1, {2}, k_u16, sizeof k_u16},
    {"\xC3\xA9t\xC3\xA9 \"q\"", PC_DTYPE_U8, 1, {1}, k_u8, 1},
};
#define N_FIX ((int)(sizeof k_fix / sizeof k_fix[0]))

/* A writer holding k_fix added in order `perm` (or in order if NULL). */
static pc_st_writer *make_writer(const int *perm, int meta_reversed) {
    pc_st_writer *w = pc_st_writer_new();
    assert_non_null(w);
    pc_error err;
    for (int k = 0; k < N_FIX; k++) {
        const fixture *f = &k_fix[perm ? perm[k] : k];
        if (pc_st_writer_add(w, f->name, f->t, f->ndim, f->shape, f->data, &err) != PC_OK)
            fail_msg("add %s: %s", f->name, err.msg);
    }
    const char *keys[3] = {"arch", "unicode", "empty"};
    const char *vals[3] = {k_meta_json, k_meta_unicode, ""};
    for (int k = 0; k < 3; k++) {
        int j = meta_reversed ? 2 - k : k;
        assert_int_equal(pc_st_writer_set_meta(w, keys[j], vals[j], &err), PC_OK);
    }
    return w;
}

static void check_reader(const pc_st *r) {
    assert_int_equal(pc_st_count(r), N_FIX);
    for (int i = 1; i < N_FIX; i++)
        assert_true(strcmp(pc_st_name(r, i - 1), pc_st_name(r, i)) < 0); /* name order */
    for (int k = 0; k < N_FIX; k++) {
        const fixture *f = &k_fix[k];
        int i = pc_st_find(r, f->name);
        assert_true(i >= 0);
        assert_string_equal(pc_st_name(r, i), f->name);
        pc_dtype t;
        int nd;
        int64_t shape[PC_MAX_DIMS];
        assert_int_equal(pc_st_info(r, i, &t, &nd, shape), PC_OK);
        assert_int_equal(t, f->t);
        assert_int_equal(nd, f->ndim);
        for (int d = 0; d < nd; d++) assert_int_equal(shape[d], f->shape[d]);
        assert_int_equal(pc_st_nbytes(r, i), f->nbytes);
        const void *p = pc_st_data(r, i);
        assert_non_null(p);
        if (f->nbytes) {
            assert_memory_equal(p, f->data, f->nbytes);
            assert_int_equal((uintptr_t)p % pc_dtype_size(f->t == PC_DTYPE_F16 ? PC_DTYPE_U16 : f->t), 0);
        }
    }
    assert_int_equal(pc_st_find(r, "missing"), -1);
    assert_null(pc_st_name(r, N_FIX));
    assert_null(pc_st_data(r, -1));
    assert_int_equal(pc_st_info(r, N_FIX, NULL, NULL, NULL), PC_ERR_RANGE);
    assert_string_equal(pc_st_meta(r, "arch"), k_meta_json);
    assert_string_equal(pc_st_meta(r, "unicode"), k_meta_unicode);
    assert_string_equal(pc_st_meta(r, "empty"), "");
    assert_null(pc_st_meta(r, "nope"));
    assert_int_equal(pc_st_meta_count(r), 3);
    assert_string_equal(pc_st_meta_key(r, 0), "arch");
    assert_string_equal(pc_st_meta_key(r, 1), "empty");
    assert_string_equal(pc_st_meta_key(r, 2), "unicode");
    assert_string_equal(pc_st_meta_value(r, 2), k_meta_unicode);
    assert_null(pc_st_meta_key(r, 3));
}

/* ---- round trips --------------------------------------------------------- */

static void test_roundtrip_file(void **state) {
    (void)state;
    char path[1200];
    tpath(path, sizeof path, "rt.safetensors");
    pc_st_writer *w = make_writer(NULL, 0);
    pc_error err;
    assert_int_equal(pc_st_writer_save(w, path, &err), PC_OK);
    pc_st_writer_free(w);
    assert_int_equal(dir_entries(g_dir), 1); /* no temporary left behind */

    pc_st *r = NULL;
    if (pc_st_open(path, &r, &err) != PC_OK) fail_msg("%s", err.msg);
    check_reader(r);

    /* pc_st_read_array: F16 becomes F32; others are copied as they are. */
    pc_array a = PC_ARRAY_INIT;
    assert_int_equal(pc_st_read_array(r, pc_st_find(r, "half"), &a, &err), PC_OK);
    assert_int_equal(a.dtype, PC_DTYPE_F32);
    const float *h = a.data;
    assert_true(h[0] == 1.0f && h[1] == -2.0f && h[2] == 0.5f);
    pc_array_free(&a);
    assert_int_equal(pc_st_read_array(r, pc_st_find(r, "big.i64"), &a, &err), PC_OK);
    assert_int_equal(a.dtype, PC_DTYPE_I64);
    assert_memory_equal(a.data, k_i64, sizeof k_i64);
    pc_array_free(&a);
    assert_int_equal(pc_st_read_array(r, pc_st_find(r, "scalar"), &a, &err), PC_OK);
    assert_int_equal(a.ndim, 0);
    assert_true(*(const double *)a.data == k_scalar);
    pc_array_free(&a);
    assert_int_equal(pc_st_read_array(r, pc_st_find(r, "empty.f32"), &a, &err), PC_OK);
    assert_int_equal(pc_array_count(&a), 0);
    pc_array_free(&a);
    assert_int_equal(pc_st_read_array(r, 99, &a, &err), PC_ERR_RANGE);
    pc_st_close(r);

    /* Header: length a multiple of 8, padded with spaces, valid JSON object. */
    size_t len;
    unsigned char *buf = read_file(path, &len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    assert_int_equal(n % 8, 0);
    assert_true(8 + n <= len);
    assert_int_equal(buf[8], '{');
    size_t k = 8 + (size_t)n;
    while (buf[k - 1] == ' ') k--;
    assert_int_equal(buf[k - 1], '}');
    /* the same bytes from memory */
    assert_int_equal(pc_st_open_memory(buf, len, "mem", &r, &err), PC_OK);
    check_reader(r);
    pc_st_close(r);
    free(buf);
    unlink(path);
}

/* pc_st_open_max: the header's parse (34 bytes per header byte) must fit the budget. */
static void test_open_budget(void **state) {
    (void)state;
    char path[1200];
    tpath(path, sizeof path, "budget.safetensors");
    pc_st_writer *w = make_writer(NULL, 0);
    pc_error err;
    assert_int_equal(pc_st_writer_save(w, path, &err), PC_OK);
    pc_st_writer_free(w);
    size_t len;
    unsigned char *buf = read_file(path, &len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    free(buf);
    pc_st *r = NULL;
    assert_int_equal(pc_st_open_max(path, 34 * n, &r, &err), PC_OK);
    pc_st_close(r);
    r = NULL;
    assert_int_equal(pc_st_open_max(path, 34 * n - 1, &r, &err), PC_ERR_NOMEM);
    assert_null(r);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "to parse its header"));
    assert_non_null(strstr(err.msg, "memory budget of"));
    assert_int_equal(pc_st_open_max(path, PC_MEMORY_AUTO, &r, &err), PC_OK);
    pc_st_close(r);
    unlink(path);
}

static void test_roundtrip_memory(void **state) {
    (void)state;
    pc_st_writer *w = make_writer(NULL, 0);
    pc_error err;
    void *buf;
    size_t len;
    assert_int_equal(pc_st_writer_serialize(w, &buf, &len, &err), PC_OK);
    pc_st *r = NULL;
    assert_int_equal(pc_st_open_memory(buf, len, "mem", &r, &err), PC_OK);
    check_reader(r);
    pc_st_close(r);
    free(buf);
    pc_st_writer_free(w);
}

static void test_empty_file(void **state) {
    (void)state;
    pc_st_writer *w = pc_st_writer_new();
    pc_error err;
    void *buf;
    size_t len;
    assert_int_equal(pc_st_writer_serialize(w, &buf, &len, &err), PC_OK);
    /* only the checksum, padded to 8: {"__metadata__":{"pc_crc32":"xxxxxxxx"}} */
    assert_int_equal(len, 48);
    assert_memory_equal(buf, "\x28\0\0\0\0\0\0\0{\"__metadata__\":{\"pc_crc32\":\"", 37);
    pc_st *r = NULL;
    assert_int_equal(pc_st_open_memory(buf, len, "mem", &r, &err), PC_OK);
    assert_int_equal(pc_st_count(r), 0);
    assert_int_equal(pc_st_meta_count(r), 0);
    pc_st_close(r);
    free(buf);
    pc_st_writer_free(w);
}

/* The same tensors and metadata added in any order give the same bytes. */
static void test_reproducible(void **state) {
    (void)state;
    int perm[N_FIX];
    for (int i = 0; i < N_FIX; i++) perm[i] = N_FIX - 1 - i;
    pc_st_writer *a = make_writer(NULL, 0), *b = make_writer(perm, 1);
    pc_error err;
    char pa[1200], pb[1200];
    tpath(pa, sizeof pa, "a.safetensors");
    tpath(pb, sizeof pb, "b.safetensors");
    assert_int_equal(pc_st_writer_save(a, pa, &err), PC_OK);
    assert_int_equal(pc_st_writer_save(b, pb, &err), PC_OK);
    size_t la, lb;
    unsigned char *ba = read_file(pa, &la), *bb = read_file(pb, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    /* saving again over the file gives the same bytes */
    assert_int_equal(pc_st_writer_save(a, pb, &err), PC_OK);
    free(bb);
    bb = read_file(pb, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    /* serialize gives the bytes save writes */
    void *m;
    size_t lm;
    assert_int_equal(pc_st_writer_serialize(b, &m, &lm, &err), PC_OK);
    assert_int_equal(lm, la);
    assert_memory_equal(m, ba, la);
    free(m);
    /* data order on disk: 8-byte elements, then 4, 2, 1; names in order inside */
    pc_st *r = NULL;
    assert_int_equal(pc_st_open(pa, &r, &err), PC_OK);
    const unsigned char *p64 = pc_st_data(r, pc_st_find(r, "b.f64"));
    const unsigned char *p32 = pc_st_data(r, pc_st_find(r, "w.f32"));
    const unsigned char *pi64 = pc_st_data(r, pc_st_find(r, "big.i64"));
    const unsigned char *pu8 = pc_st_data(r, pc_st_find(r, "bytes.u8"));
    assert_true(p64 < pi64 && pi64 < p32 && p32 < pu8); /* "b.f64" < "big.i64" */
    pc_st_close(r);
    free(ba);
    free(bb);
    pc_st_writer_free(a);
    pc_st_writer_free(b);
    assert_int_equal(dir_entries(g_dir), 2);
    unlink(pa);
    unlink(pb);
}

/* The writer's CRC-32 (zlib's, the digits read as zeros) is verified; one flipped
   byte anywhere is refused; a file without one (other writers) still opens. */
static void test_checksum(void **state) {
    (void)state;
    pc_st_writer *w = pc_st_writer_new();
    pc_error err;
    float v[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    assert_int_equal(pc_st_writer_add(w, "x", PC_DTYPE_F32, 1, shape, v, &err), PC_OK);
    assert_int_equal(pc_st_writer_set_meta(w, "k", "v", &err), PC_OK);
    assert_int_equal(pc_st_writer_set_meta(w, PC_ST_CRC_KEY, "00000000", &err), PC_ERR_ARG);
    unsigned char *buf;
    size_t len;
    assert_int_equal(pc_st_writer_serialize(w, (void **)&buf, &len, &err), PC_OK);
    const char *at = strstr((const char *)buf + 8, "\"pc_crc32\":\"");
    assert_non_null(at);
    size_t off = (size_t)(at - (const char *)buf) + 12;
    char hex[9];
    memcpy(hex, buf + off, 8);
    hex[8] = 0;
    memcpy(buf + off, "00000000", 8);
    char want[9];
    snprintf(want, sizeof want, "%08lx", crc32(0L, buf, (uInt)len));
    assert_string_equal(hex, want);
    memcpy(buf + off, hex, 8);
    pc_st *r = NULL;
    assert_int_equal(pc_st_open_memory(buf, len, "mem", &r, &err), PC_OK);
    assert_null(pc_st_meta(r, PC_ST_CRC_KEY)); /* kept out of the listed metadata */
    assert_int_equal(pc_st_meta_count(r), 1);
    pc_st_close(r);
    /* every byte of the data and of a metadata value is covered */
    size_t flips[2] = {len - 1, (size_t)(strstr((const char *)buf + 8, "\"v\"") - (char *)buf) + 1};
    for (int i = 0; i < 2; i++) {
        buf[flips[i]] ^= 0x01;
        assert_int_equal(pc_st_open_memory(buf, len, "mem", &r, &err), PC_ERR_FORMAT);
        assert_non_null(strstr(err.msg, "checksum mismatch"));
        buf[flips[i]] ^= 0x01;
    }
    /* a bad value is refused; a file without the key opens (the key renamed away) */
    memcpy(buf + off, "zzzzzzzz", 8);
    assert_int_equal(pc_st_open_memory(buf, len, "mem", &r, &err), PC_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "pc_crc32"));
    memcpy(buf + off - 11, "pc_crc33", 8);
    assert_int_equal(pc_st_open_memory(buf, len, "mem", &r, &err), PC_OK);
    assert_int_equal(pc_st_meta_count(r), 2);
    pc_st_close(r);
    free(buf);
    pc_st_writer_free(w);
}

static void test_writer_args(void **state) {
    (void)state;
    pc_st_writer *w = pc_st_writer_new();
    pc_error err;
    int64_t shape[9] = {2, 1, 1, 1, 1, 1, 1, 1, 1};
    float x[2] = {1, 2};
    assert_int_equal(pc_st_writer_add(w, "x", PC_DTYPE_F32, 1, shape, x, &err), PC_OK);
    assert_int_equal(pc_st_writer_add(w, "x", PC_DTYPE_F32, 1, shape, x, &err), PC_ERR_ARG);
    assert_non_null(strstr(err.msg, "duplicate"));
    assert_int_equal(pc_st_writer_add(w, "__metadata__", PC_DTYPE_F32, 1, shape, x, &err),
                     PC_ERR_ARG);
    assert_int_equal(pc_st_writer_add(w, "", PC_DTYPE_F32, 1, shape, x, &err), PC_ERR_ARG);
    assert_int_equal(pc_st_writer_add(w, "bad\xFF", PC_DTYPE_F32, 1, shape, x, &err), PC_ERR_ARG);
    assert_int_equal(pc_st_writer_add(w, "n", PC_DTYPE_F32, 1, shape, NULL, &err), PC_ERR_ARG);
    assert_int_equal(pc_st_writer_add(w, "d", PC_DTYPE_F32, 9, shape, x, &err), PC_ERR_ARG);
    assert_int_equal(pc_st_writer_add(w, "t", PC_DTYPE_COUNT, 1, shape, x, &err), PC_ERR_ARG);
    int64_t neg = -1;
    assert_int_equal(pc_st_writer_add(w, "neg", PC_DTYPE_F32, 1, &neg, x, &err), PC_ERR_ARG);
    int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 1};
    assert_int_equal(pc_st_writer_add(w, "huge", PC_DTYPE_U8, 2, huge, x, &err), PC_ERR_RANGE);
    assert_int_equal(pc_st_writer_set_meta(w, "k", "v1", &err), PC_OK);
    assert_int_equal(pc_st_writer_set_meta(w, "k", "v2", &err), PC_OK); /* replaces */
    assert_int_equal(pc_st_writer_set_meta(w, "k\xC0", "v", &err), PC_ERR_ARG);
    /* the data was copied: changing it now does not change the file */
    x[0] = 99;
    void *buf;
    size_t len;
    assert_int_equal(pc_st_writer_serialize(w, &buf, &len, &err), PC_OK);
    pc_st *r = NULL;
    assert_int_equal(pc_st_open_memory(buf, len, "mem", &r, &err), PC_OK);
    assert_int_equal(pc_st_count(r), 1);
    assert_true(((const float *)pc_st_data(r, 0))[0] == 1.0f);
    assert_string_equal(pc_st_meta(r, "k"), "v2");
    pc_st_close(r);
    free(buf);
    /* saving into a missing directory fails cleanly */
    char path[1200];
    tpath(path, sizeof path, "no/such/dir/x.safetensors");
    assert_int_equal(pc_st_writer_save(w, path, &err), PC_ERR_IO);
    pc_st_writer_free(w);
    pc_st_writer_free(NULL);
    pc_st_close(NULL);
    assert_int_equal(pc_st_open(path, &r, &err), PC_ERR_NOTFOUND);
    assert_null(r);
}

/* ---- hand-made files -------------------------------------------------- */

/* 8-byte length, header (padded with `pad` spaces), then `data`. */
static unsigned char *make_raw(uint64_t hlen_field, const char *json, size_t pad,
                               const void *data, size_t dlen, size_t *len) {
    size_t jl = strlen(json);
    *len = 8 + jl + pad + dlen;
    unsigned char *b = malloc(*len);
    assert_non_null(b);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(hlen_field >> (8 * i));
    memcpy(b + 8, json, jl);
    memset(b + 8 + jl, ' ', pad);
    if (dlen) memcpy(b + 8 + jl + pad, data, dlen);
    return b;
}

static unsigned char *make_file(const char *json, const void *data, size_t dlen, size_t *len) {
    return make_raw(strlen(json), json, 0, data, dlen, len);
}

/* A header that is not padded puts an F32 tensor off alignment: still read. */
static void test_unpadded_misaligned(void **state) {
    (void)state;
    const char *json = "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]},"
                       "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}";
    unsigned char data[9] = {7};
    float v[2] = {0.25f, -8.0f};
    memcpy(data + 1, v, 8);
    size_t len;
    unsigned char *b = make_file(json, data, sizeof data, &len);
    pc_st *r = NULL;
    pc_error err;
    if (pc_st_open_memory(b, len, "mem", &r, &err) != PC_OK) fail_msg("%s", err.msg);
    assert_int_equal(pc_st_count(r), 2);
    assert_string_equal(pc_st_name(r, 0), "a");
    const float *p = pc_st_data(r, 1);
    assert_int_equal((uintptr_t)p % 4, 0);
    assert_true(p[0] == 0.25f && p[1] == -8.0f);
    assert_int_equal(*(const uint8_t *)pc_st_data(r, 0), 7);
    pc_st_close(r);
    free(b);
    /* empty tensors may sit anywhere in the sequence, even at the end */
    json = "{\"e\":{\"dtype\":\"F64\",\"shape\":[0,4],\"data_offsets\":[4,4]},"
           "\"z\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]},"
           "\"f\":{\"dtype\":\"F64\",\"shape\":[3,0],\"data_offsets\":[0,0]}}";
    int32_t z = -5;
    b = make_raw(strlen(json) + 3, json, 3, &z, 4, &len);
    if (pc_st_open_memory(b, len, "mem", &r, &err) != PC_OK) fail_msg("%s", err.msg);
    assert_int_equal(pc_st_count(r), 3);
    assert_int_equal(*(const int32_t *)pc_st_data(r, pc_st_find(r, "z")), -5);
    pc_st_close(r);
    free(b);
}

typedef struct bad_case {
    const char *file;       /* file name, also expected in the message */
    const char *json;       /* NULL: raw bytes below */
    size_t dlen;            /* data buffer length (zeros) */
    pc_status code;
    const char *expect[3];  /* substrings of the message */
} bad_case;

#define T_F32_2(off) "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" off "}"

static const bad_case k_bad[] = {
    {"bad_json.safetensors", "{\"a\": {", 0, PC_ERR_FORMAT, {"not valid JSON", NULL, NULL}},
    {"not_object.safetensors", "[1, 2]", 0, PC_ERR_FORMAT, {"'{'", NULL, NULL}},
    {"trailing.safetensors", "{} x", 0, PC_ERR_FORMAT, {"after the JSON", NULL, NULL}},
    {"bad_utf8.safetensors", "{\"\xC3\x28\": 1}", 0, PC_ERR_FORMAT, {"UTF-8", NULL, NULL}},
    {"out_of_range.safetensors", "{\"w\":" T_F32_2("[0,8]") "}", 4, PC_ERR_FORMAT,
     {"tensor 'w'", "out of range", "<= 4"}},
    {"begin_after_end.safetensors", "{\"w\":" T_F32_2("[8,0]") "}", 8, PC_ERR_FORMAT,
     {"tensor 'w'", "begin <= end", NULL}},
    {"overlap.safetensors", "{\"a\":" T_F32_2("[0,8]") ",\"b\":" T_F32_2("[4,12]") "}", 12,
     PC_ERR_FORMAT, {"tensor 'b'", "overlap tensor 'a'", "expected begin 8"}},
    {"same_offsets.safetensors", "{\"a\":" T_F32_2("[0,8]") ",\"b\":" T_F32_2("[0,8]") "}", 8,
     PC_ERR_FORMAT, {"tensor 'b'", "overlap", NULL}},
    {"hole.safetensors", "{\"a\":" T_F32_2("[0,8]") ",\"b\":" T_F32_2("[12,20]") "}", 20,
     PC_ERR_FORMAT, {"tensor 'b'", "hole of 4 bytes after tensor 'a'", "expected begin 8"}},
    {"hole_start.safetensors", "{\"a\":" T_F32_2("[4,12]") "}", 12, PC_ERR_FORMAT,
     {"tensor 'a'", "hole", "buffer start"}},
    {"trailing_data.safetensors", "{\"a\":" T_F32_2("[0,8]") "}", 9, PC_ERR_FORMAT,
     {"9 bytes", "cover 8", NULL}},
    {"data_no_tensors.safetensors", "{}", 3, PC_ERR_FORMAT, {"3 bytes", "cover 0", NULL}},
    {"shape_mismatch.safetensors",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, PC_ERR_FORMAT,
     {"tensor 'w'", "span 8 bytes", "expected 12 (3 elements of F32)"}},
    {"shape_overflow.safetensors",
     "{\"w\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,4294967296],"
     "\"data_offsets\":[0,0]}}", 0, PC_ERR_FORMAT, {"tensor 'w'", "overflow", NULL}},
    {"bytes_overflow.safetensors",
     "{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,1073741824],\"data_offsets\":[0,0]}}", 0,
     PC_ERR_FORMAT, {"tensor 'w'", "over 2^64", NULL}},
    {"shape_negative.safetensors",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0, PC_ERR_FORMAT,
     {"tensor 'w'", "shape[0]", "non-negative integer"}},
    {"shape_fraction.safetensors",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,0]}}", 0, PC_ERR_FORMAT,
     {"tensor 'w'", "shape[0]", NULL}},
    {"shape_string.safetensors",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8, PC_ERR_FORMAT,
     {"tensor 'w'", "shape[0]", NULL}},
    {"shape_missing.safetensors", "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8,
     PC_ERR_FORMAT, {"tensor 'w'", "\"shape\" array", NULL}},
    {"too_many_dims.safetensors",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
     PC_ERR_UNSUPPORTED, {"tensor 'w'", "9 dimensions", NULL}},
    {"offsets_three.safetensors",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, PC_ERR_FORMAT,
     {"tensor 'w'", "[begin, end]", NULL}},
    {"offsets_huge.safetensors",
     "{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[1e300,1e300]}}", 0,
     PC_ERR_FORMAT, {"tensor 'w'", "[begin, end]", NULL}},
    {"unknown_dtype.safetensors",
     "{\"w\":{\"dtype\":\"F128\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, PC_ERR_FORMAT,
     {"tensor 'w'", "unknown dtype 'F128'", "expected BOOL"}},
    {"dtype_lowercase.safetensors",
     "{\"w\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, PC_ERR_FORMAT,
     {"tensor 'w'", "unknown dtype", NULL}},
    {"bf16.safetensors",
     "{\"w\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, PC_ERR_UNSUPPORTED,
     {"tensor 'w'", "BF16", "not supported"}},
    {"duplicate_name.safetensors", "{\"a\":" T_F32_2("[0,8]") ",\"a\":" T_F32_2("[8,16]") "}",
     16, PC_ERR_FORMAT, {"duplicate tensor name 'a'", NULL, NULL}},
    {"duplicate_meta_key.safetensors", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0,
     PC_ERR_FORMAT, {"duplicate key 'k'", NULL, NULL}},
    {"duplicate_metadata.safetensors", "{\"__metadata__\":{},\"__metadata__\":{}}", 0,
     PC_ERR_FORMAT, {"duplicate \"__metadata__\"", NULL, NULL}},
    {"meta_not_string.safetensors", "{\"__metadata__\":{\"epochs\":10}}", 0, PC_ERR_FORMAT,
     {"'epochs'", "expected a string", NULL}},
    {"meta_not_object.safetensors", "{\"__metadata__\":[]}", 0, PC_ERR_FORMAT,
     {"__metadata__", "object of strings", NULL}},
    {"tensor_not_object.safetensors", "{\"w\":[1,2]}", 0, PC_ERR_FORMAT,
     {"tensor 'w'", "expected an object", NULL}},
    {"dtype_missing.safetensors", "{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
     PC_ERR_FORMAT, {"tensor 'w'", "\"dtype\"", NULL}},
};

static void check_bad(const char *file, const unsigned char *b, size_t len, pc_status code,
                      const char *const *expect) {
    char path[1200];
    tpath(path, sizeof path, file);
    write_file(path, b, len);
    pc_st *r = (pc_st *)1;
    pc_error err;
    pc_error_clear(&err);
    pc_status st = pc_st_open(path, &r, &err);
    if (st != code) fail_msg("%s: got %s (%s), expected %s", file, pc_status_name(st), err.msg,
                             pc_status_name(code));
    assert_null(r);
    assert_int_equal(err.code, code);
    if (!strstr(err.msg, file)) fail_msg("%s: message does not name the file: %s", file, err.msg);
    for (int k = 0; k < 3 && expect && expect[k]; k++)
        if (!strstr(err.msg, expect[k]))
            fail_msg("%s: message lacks '%s': %s", file, expect[k], err.msg);
    /* the memory reader agrees */
    r = (pc_st *)1;
    assert_int_equal(pc_st_open_memory(b, len, file, &r, &err), code);
    assert_null(r);
    assert_non_null(strstr(err.msg, file));
    unlink(path);
}

static void test_bad_headers(void **state) {
    (void)state;
    unsigned char zeros[64] = {0};
    for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; i++) {
        const bad_case *c = &k_bad[i];
        size_t len;
        unsigned char *b = make_file(c->json, zeros, c->dlen, &len);
        check_bad(c->file, b, len, c->code, c->expect);
        free(b);
    }
}

static void test_bad_lengths(void **state) {
    (void)state;
    static const char *const too_short[] = {"too short", "8-byte header length", NULL};
    check_bad("empty.safetensors", (const unsigned char *)"", 0, PC_ERR_FORMAT, too_short);
    check_bad("five.safetensors", (const unsigned char *)"\x02\0\0\0\0", 5, PC_ERR_FORMAT,
              too_short);
    size_t len;
    const char *json = "{\"w\":" T_F32_2("[0,8]") "}";
    unsigned char data[8] = {0};
    /* header length past the end of the file */
    unsigned char *b = make_raw(1000, json, 0, data, 8, &len);
    static const char *const past[] = {"header length 1000", "past the end", NULL};
    check_bad("past_eof.safetensors", b, len, PC_ERR_FORMAT, past);
    free(b);
    /* huge header lengths: refused before any allocation */
    b = make_raw(UINT64_MAX, json, 0, data, 8, &len);
    static const char *const huge[] = {"header length 18446744073709551615", "past the end", NULL};
    check_bad("huge_len.safetensors", b, len, PC_ERR_FORMAT, huge);
    free(b);
    b = make_raw(UINT64_C(1) << 40, json, 0, data, 8, &len);
    check_bad("huge_len2.safetensors", b, len, PC_ERR_FORMAT, past + 1);
    free(b);
    /* truncated: the whole file of a valid checkpoint cut short */
    pc_st_writer *w = make_writer(NULL, 0);
    pc_error err;
    void *full;
    size_t flen;
    assert_int_equal(pc_st_writer_serialize(w, &full, &flen, &err), PC_OK);
    pc_st_writer_free(w);
    static const char *const cut_data[] = {"out of range", "data buffer size", NULL};
    check_bad("cut_data.safetensors", full, flen - 1, PC_ERR_FORMAT, cut_data);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | ((const unsigned char *)full)[i];
    check_bad("cut_header.safetensors", full, 8 + (size_t)hl / 2, PC_ERR_FORMAT, past + 1);
    /* header length shorter than the JSON: the JSON is cut */
    unsigned char *c = malloc(flen);
    memcpy(c, full, flen);
    for (int i = 0; i < 8; i++) c[i] = (unsigned char)((hl - 8) >> (8 * i));
    static const char *const cut_json[] = {"JSON", NULL};
    check_bad("short_len.safetensors", c, flen, PC_ERR_FORMAT, cut_json);
    free(c);
    free(full);
    /* NUL in the header, header of 1 byte */
    b = make_raw(9, "{}       ", 0, NULL, 0, &len);
    b[12] = 0;
    static const char *const nul[] = {"NUL", NULL};
    check_bad("nul.safetensors", b, len, PC_ERR_FORMAT, nul);
    free(b);
    b = make_raw(1, "{", 0, NULL, 0, &len);
    static const char *const tiny[] = {"too short", NULL};
    check_bad("tiny.safetensors", b, len, PC_ERR_FORMAT, tiny);
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_file),   cmocka_unit_test(test_roundtrip_memory),
        cmocka_unit_test(test_open_budget),
        cmocka_unit_test(test_empty_file),       cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_checksum), cmocka_unit_test(test_writer_args),      cmocka_unit_test(test_unpadded_misaligned),
        cmocka_unit_test(test_bad_headers),      cmocka_unit_test(test_bad_lengths),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
