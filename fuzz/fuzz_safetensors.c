/*
 * Fuzz target: whole safetensors files (header length, JSON header, dtypes,
 * shapes, data offsets, metadata), read from memory with pc_st_open_memory.
 *
 * A file that opens must keep every promise of the reader: names in order and
 * found again, shapes matching byte counts, data pointers non-NULL, aligned
 * and readable to their end, pc_st_read_array agreeing with pc_st_data,
 * metadata found by key. It is then written back with the writer; the copy
 * must read back equal, and serializing twice must give the same bytes.
 * A file that fails must fail with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "perfcast/safetensors.h"

static size_t file_elem_size(pc_dtype t) { return t == PC_DTYPE_F16 ? 2 : pc_dtype_size(t); }

static void check_reader(const pc_st *r) {
    int n = pc_st_count(r);
    check(n >= 0);
    for (int i = 0; i < n; i++) {
        const char *name = pc_st_name(r, i);
        check(name != NULL);
        if (i > 0) check(strcmp(pc_st_name(r, i - 1), name) < 0);
        check(pc_st_find(r, name) == i);
        pc_dtype t;
        int nd;
        int64_t shape[PC_MAX_DIMS];
        check(pc_st_info(r, i, &t, &nd, shape) == PC_OK);
        check(pc_st_dtype_name(t) != NULL && nd >= 0 && nd <= PC_MAX_DIMS);
        uint64_t count = 1;
        for (int d = 0; d < nd; d++) {
            check(shape[d] >= 0);
            check(!__builtin_mul_overflow(count, (uint64_t)shape[d], &count));
        }
        uint64_t nb = pc_st_nbytes(r, i);
        check(nb == count * file_elem_size(t));
        const unsigned char *p = pc_st_data(r, i);
        check(p != NULL);
        check(nb == 0 || (uintptr_t)p % file_elem_size(t) == 0);
        unsigned sum = 0;
        for (uint64_t k = 0; k < nb; k++) sum += p[k]; /* readable to the end */
        (void)sum;
        if (nb <= (1u << 20)) {
            pc_array a = PC_ARRAY_INIT;
            pc_error err;
            check(pc_st_read_array(r, i, &a, &err) == PC_OK);
            check(a.ndim == nd && pc_array_count(&a) == (int64_t)count);
            if (t != PC_DTYPE_F16) check(nb == 0 || memcmp(a.data, p, (size_t)nb) == 0);
            pc_array_free(&a);
        }
    }
    check(pc_st_name(r, n) == NULL && pc_st_data(r, n) == NULL);
    check(pc_st_info(r, -1, NULL, NULL, NULL) == PC_ERR_RANGE);
    for (int i = 0; i < pc_st_meta_count(r); i++) {
        const char *k = pc_st_meta_key(r, i), *v = pc_st_meta_value(r, i);
        check(k != NULL && v != NULL);
        if (i > 0) check(strcmp(pc_st_meta_key(r, i - 1), k) < 0);
        check(pc_st_meta(r, k) == v);
    }
}

static void check_same(const pc_st *a, const pc_st *b) {
    check(pc_st_count(a) == pc_st_count(b));
    check(pc_st_meta_count(a) == pc_st_meta_count(b));
    for (int i = 0; i < pc_st_count(a); i++) {
        check(strcmp(pc_st_name(a, i), pc_st_name(b, i)) == 0);
        pc_dtype ta, tb;
        int na, nb;
        int64_t sa[PC_MAX_DIMS], sb[PC_MAX_DIMS];
        pc_st_info(a, i, &ta, &na, sa);
        pc_st_info(b, i, &tb, &nb, sb);
        check(ta == tb && na == nb);
        for (int d = 0; d < na; d++) check(sa[d] == sb[d]);
        uint64_t len = pc_st_nbytes(a, i);
        check(len == pc_st_nbytes(b, i));
        check(len == 0 || memcmp(pc_st_data(a, i), pc_st_data(b, i), (size_t)len) == 0);
    }
    for (int i = 0; i < pc_st_meta_count(a); i++) {
        check(strcmp(pc_st_meta_key(a, i), pc_st_meta_key(b, i)) == 0);
        check(strcmp(pc_st_meta_value(a, i), pc_st_meta_value(b, i)) == 0);
    }
}

static void roundtrip(const pc_st *r) {
    pc_error err;
    pc_st_writer *w = pc_st_writer_new();
    check(w != NULL);
    uint64_t total = 0;
    for (int i = 0; i < pc_st_count(r); i++) {
        pc_dtype t;
        int nd;
        int64_t shape[PC_MAX_DIMS];
        pc_st_info(r, i, &t, &nd, shape);
        total += pc_st_nbytes(r, i);
        if (pc_st_writer_add(w, pc_st_name(r, i), t, nd, shape, pc_st_data(r, i), &err) != PC_OK) {
            /* only names the writer refuses (empty) may fail */
            check(err.code == PC_ERR_ARG && pc_st_name(r, i)[0] == '\0');
            pc_st_writer_free(w);
            return;
        }
    }
    for (int i = 0; i < pc_st_meta_count(r); i++)
        check(pc_st_writer_set_meta(w, pc_st_meta_key(r, i), pc_st_meta_value(r, i), &err) ==
              PC_OK);
    void *b1 = NULL, *b2 = NULL;
    size_t l1, l2;
    if (pc_st_writer_serialize(w, &b1, &l1, &err) != PC_OK) {
        check(err.msg[0] != '\0'); /* e.g. a header over the limit */
        pc_st_writer_free(w);
        return;
    }
    check(pc_st_writer_serialize(w, &b2, &l2, &err) == PC_OK);
    check(l1 == l2 && memcmp(b1, b2, l1) == 0);
    uint64_t hlen = 0;
    for (int k = 7; k >= 0; k--) hlen = (hlen << 8) | ((const unsigned char *)b1)[k];
    check(hlen % 8 == 0 && 8 + hlen + total == l1); /* padded header, then the data */
    pc_st *back = NULL;
    check(pc_st_open_memory(b1, l1, "copy", &back, &err) == PC_OK);
    check_same(r, back);
    pc_st_close(back);
    free(b1);
    free(b2);
    pc_st_writer_free(w);
}

PC_FUZZ_TARGET(safetensors) {
    pc_error err;
    pc_st *r = NULL;
    pc_status st = pc_st_open_memory(data, size, "fuzz", &r, &err);
    if (st != PC_OK) {
        check(r == NULL && err.code == st && err.msg[0] != '\0');
        return 0;
    }
    check_reader(r);
    if (pc_st_count(r) <= 4096) roundtrip(r);
    pc_st_close(r);
    return 0;
}
