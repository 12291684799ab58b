/*
 * Fuzz target: whole .npz and .npy files (zip directory, local headers,
 * stored and deflated members, npy headers inside members, row ranges).
 *
 * The input is written to a scratch file (under $PC_FUZZ_TMP, else /dev/shm,
 * else /tmp) and opened as an archive: every member is read whole, by row
 * ranges and through pc_npz_read_all, and the results must agree. Arrays that
 * read cleanly are written back with the writer and must read back equal. The
 * same file is also loaded and mapped as a single .npy.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "perfcast/npz.h"

/* Scratch file names, made once per process (fuzz harness state only). */
static char g_in[512];
static char g_out[600];

static void cleanup(void) {
    if (g_in[0]) unlink(g_in);
    if (g_out[0]) unlink(g_out);
}

static void setup(void) {
    if (g_in[0]) return;
    const char *dir = getenv("PC_FUZZ_TMP");
    if (!dir || !*dir) dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_in, sizeof g_in, "%s/pc_fuzz_npz_%ld_XXXXXX.npz", dir, (long)getpid());
    int fd = mkstemps(g_in, 4);
    if (fd < 0) {
        perror(g_in);
        abort();
    }
    close(fd);
    snprintf(g_out, sizeof g_out, "%s.out.npz", g_in);
    atexit(cleanup);
}

static int same_array(const pc_array *a, const pc_array *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    size_t n = pc_array_nbytes(a);
    return n == pc_array_nbytes(b) && (n == 0 || memcmp(a->data, b->data, n) == 0);
}

static void check_array(const pc_array *a, const pc_array_info *info) {
    pc_dtype want = info->dtype == PC_DTYPE_F16 ? PC_DTYPE_F32 : info->dtype;
    check(a->dtype == want && a->ndim == info->ndim);
    for (int d = 0; d < a->ndim; d++) check(a->shape[d] == info->shape[d]);
    check(pc_array_count(a) == info->count);
    check(pc_array_nbytes(a) == (size_t)info->count * pc_dtype_size(want));
    check(info->count == 0 || a->data != NULL);
}

/* Rows [row0, row0+n) must equal the same slice of the whole array. */
static void check_rows(pc_npz *z, int i, const pc_array *whole, int64_t row0, int64_t n) {
    pc_error err;
    pc_array r = PC_ARRAY_INIT;
    if (pc_npz_read_rows(z, i, row0, n, &r, &err) != PC_OK) {
        check(err.msg[0] != '\0');
        return;
    }
    if (whole && whole->ndim >= 1) {
        check(r.dtype == whole->dtype && r.ndim == whole->ndim && r.shape[0] == n);
        for (int d = 1; d < r.ndim; d++) check(r.shape[d] == whole->shape[d]);
        size_t row_bytes = whole->shape[0] ? pc_array_nbytes(whole) / (size_t)whole->shape[0] : 0;
        size_t len = row_bytes * (size_t)n;
        check(pc_array_nbytes(&r) == len);
        if (len) check(memcmp(r.data, (const char *)whole->data + row_bytes * (size_t)row0, len) == 0);
    }
    pc_array_free(&r);
}

static void roundtrip(pc_npz *z, pc_array *arrays, const int *ok, int n, pc_npz_compress mode) {
    pc_error err;
    pc_npz_writer *w = NULL;
    if (pc_npz_writer_open(g_out, mode, &w, &err) != PC_OK) return;
    int added[64];
    int nadded = 0;
    for (int i = 0; i < n && nadded < 64; i++) {
        if (!ok[i] || pc_npz_find(z, pc_npz_key(z, i)) != i) continue;
        if (pc_npz_writer_add_array(w, pc_npz_key(z, i), &arrays[i], &err) != PC_OK) {
            pc_npz_writer_abort(w);
            return;
        }
        added[nadded++] = i;
    }
    if (pc_npz_writer_commit(w, &err) != PC_OK) return;
    pc_npz *back = NULL;
    check(pc_npz_open(g_out, &back, &err) == PC_OK);
    check(pc_npz_count(back) == nadded);
    for (int k = 0; k < nadded; k++) {
        check(strcmp(pc_npz_key(back, k), pc_npz_key(z, added[k])) == 0);
        pc_array a = PC_ARRAY_INIT;
        check(pc_npz_read(back, k, &a, &err) == PC_OK);
        check(same_array(&a, &arrays[added[k]]));
        pc_array_free(&a);
    }
    pc_npz_close(back);
    unlink(g_out);
}

static void fuzz_archive(const char *path, size_t size) {
    pc_error err;
    pc_npz *z = NULL;
    if (pc_npz_open(path, &z, &err) != PC_OK) {
        check(err.msg[0] != '\0');
        return;
    }
    int n = pc_npz_count(z);
    check(n >= 0);
    if (n > 256) n = 256; /* bound the work per input */
    pc_array *arrays = calloc((size_t)n + 1, sizeof *arrays);
    int *ok = calloc((size_t)n + 1, sizeof *ok);
    check(arrays && ok);
    int all_ok = 1, total_bytes = 0;
    for (int i = 0; i < n; i++) {
        const char *key = pc_npz_key(z, i);
        check(key != NULL);
        check(pc_npz_find(z, key) >= 0);
        (void)pc_npz_is_stored(z, i);
        (void)pc_npz_member_size(z, i);
        (void)pc_npz_member_csize(z, i);
        pc_array_info info;
        if (pc_npz_info(z, i, &info, &err) != PC_OK) {
            all_ok = 0;
            continue;
        }
        pc_array *a = &arrays[i];
        ok[i] = pc_npz_read(z, i, a, &err) == PC_OK;
        if (ok[i]) {
            check_array(a, &info);
            total_bytes += (int)(pc_array_nbytes(a) > 1000000 ? 1000000 : pc_array_nbytes(a));
        } else {
            all_ok = 0;
            check(err.msg[0] != '\0');
        }
        if (info.ndim >= 1 && !info.fortran_order) {
            int64_t rows = info.shape[0];
            const pc_array *whole = ok[i] ? a : NULL;
            check_rows(z, i, whole, 0, rows < 3 ? rows : 3);
            if (rows > 0) {
                check_rows(z, i, whole, rows / 2, 1);
                check_rows(z, i, whole, rows - 1, 1);
            }
            check_rows(z, i, whole, rows, 0);
            /* Out-of-range requests fail with PC_ERR_RANGE. */
            const int64_t bad[4][2] = {{rows, 1}, {-1, 1}, {0, -1}, {0, rows + 1}};
            for (int k = 0; k < 4; k++) {
                pc_array r = PC_ARRAY_INIT;
                check(pc_npz_read_rows(z, i, bad[k][0], bad[k][1], &r, &err) == PC_ERR_RANGE);
                pc_array_free(&r);
            }
        }
    }
    if (n == pc_npz_count(z)) {
        pc_array *outs = calloc((size_t)n + 1, sizeof *outs);
        check(outs != NULL);
        if (pc_npz_read_all(z, outs, 1, &err) == PC_OK) {
            for (int i = 0; i < n; i++) {
                check(ok[i]);
                check(same_array(&outs[i], &arrays[i]));
            }
        } else {
            check(!all_ok && err.msg[0] != '\0');
        }
        for (int i = 0; i < n; i++) pc_array_free(&outs[i]);
        free(outs);
    }
    if (total_bytes <= (1 << 20)) roundtrip(z, arrays, ok, n, size & 1 ? PC_NPZ_DEFLATED : PC_NPZ_STORED);
    for (int i = 0; i < n; i++) pc_array_free(&arrays[i]);
    free(arrays);
    free(ok);
    pc_npz_close(z);
}

static void fuzz_npy(const char *path) {
    pc_error err;
    pc_array a = PC_ARRAY_INIT, m = PC_ARRAY_INIT;
    int la = pc_npy_load(path, &a, &err) == PC_OK;
    if (!la) check(err.msg[0] != '\0');
    int lm = pc_npy_map(path, &m, &err) == PC_OK;
    if (la && lm) check(same_array(&a, &m));
    pc_array_free(&a);
    pc_array_free(&m);
}

PC_FUZZ_TARGET(npz) {
    setup();
    FILE *f = fopen(g_in, "wb");
    check(f != NULL);
    check(size == 0 || fwrite(data, 1, size, f) == size);
    check(fclose(f) == 0);
    fuzz_archive(g_in, size);
    if (size >= 6 && memcmp(data, "\x93NUMPY", 6) == 0) fuzz_npy(g_in);
    unlink(g_in); /* recreated by the next input; a crash leaves only this one */
    return 0;
}
