/*
 * Fuzz target: the .npy header parser (pc_npy_parse_header).
 *
 * Besides "no crash", it checks what a successful parse promises: the shape
 * product and byte count are consistent, the data offset lies inside the
 * buffer, the data fits in the file when its size is known, and a header
 * formatted from the result parses back to the same shape.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "perfcast/npz.h"

static void check_info(const pc_array_info *info, size_t len, uint64_t file_size) {
    check(info->dtype >= 0 && info->dtype < PC_DTYPE_COUNT);
    check(info->ndim >= 0 && info->ndim <= PC_MAX_DIMS);
    int64_t count = 1;
    for (int d = 0; d < info->ndim; d++) {
        check(info->shape[d] >= 0);
        check(!__builtin_mul_overflow(count, info->shape[d], &count));
    }
    check(count == info->count);
    uint64_t bytes;
    check(!__builtin_mul_overflow((uint64_t)count, (uint64_t)pc_dtype_size(info->dtype), &bytes));
    check(bytes == info->data_bytes);
    check(info->data_offset <= len);
    if (file_size != UINT64_MAX) {
        check(info->data_offset <= file_size);
        check(info->data_bytes <= file_size - info->data_offset);
    }
}

PC_FUZZ_TARGET(npy_header) {
    pc_error err;
    pc_array_info info;
    const uint64_t sizes[2] = {UINT64_MAX, size};
    for (int k = 0; k < 2; k++) {
        pc_error_clear(&err);
        memset(&info, 0xa5, sizeof info);
        if (pc_npy_parse_header(data, size, sizes[k], "fuzz.npy", &info, &err) != PC_OK) {
            check(err.code != PC_OK && err.msg[0] != '\0');
            continue;
        }
        check_info(&info, size, sizes[k]);
        /* Re-format as native C order and parse again: same shape. */
        pc_dtype t = info.dtype == PC_DTYPE_F16 ? PC_DTYPE_F32 : info.dtype;
        char hdr[4096];
        size_t hlen = pc_npy_format_header(t, info.ndim, info.shape, hdr, sizeof hdr);
        check(hlen > 0 && hlen % 64 == 0);
        pc_array_info back;
        check(pc_npy_parse_header(hdr, hlen, UINT64_MAX, "formatted", &back, &err) == PC_OK);
        check(back.dtype == t && back.ndim == info.ndim && !back.fortran_order && !back.big_endian &&
              back.data_offset == hlen && back.count == info.count);
        for (int d = 0; d < info.ndim; d++) check(back.shape[d] == info.shape[d]);
    }
    return 0;
}
