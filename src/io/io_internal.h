/* Internal pieces shared by the .npy and .npz readers and writers. */
#ifndef PC_IO_INTERNAL_H
#define PC_IO_INTERNAL_H

#include "common/util.h"
#include "perfcast/npz.h"

/* A .npy header is at most this long; numpy itself refuses 10,000+ by default. */
#define PC_NPY_MAX_HEADER (64u * 1024u)
/* Bytes needed to know a header's full length (magic, version, length). */
#define PC_NPY_PREAMBLE 12u

/* Element size as stored in the file (F16 is 2 here, 4 once read). */
size_t pc_file_elem_size(pc_dtype t);
/* The dtype an array of file dtype t has in memory (F16 -> F32). */
pc_dtype pc_mem_dtype(pc_dtype t);

/*
 * Header length implied by the first PC_NPY_PREAMBLE bytes (magic, version,
 * header length field), or 0 with err set if they are not a .npy preamble.
 */
size_t pc_npy_header_len(const unsigned char *buf, size_t len, const char *what,
                         pc_error *err);

/*
 * Turns raw file-layout data (`count` elements of info->dtype in the file's
 * byte order and memory order) at `data` into a native, C-order array.
 * `block` is the malloc'd block holding `data` (taken over on success and on
 * failure). The result may reuse the block.
 */
pc_status pc_array_from_file_data(const pc_array_info *info, void *block, void *data,
                                  pc_array *out, const char *what, pc_error *err);

/*
 * Checks that a read holding `need` bytes fits the budget `max_memory`
 * (bytes or PC_MEMORY_AUTO): PC_OK, or PC_ERR_NOMEM "<what> needs <need>
 * in memory<how>, more than the memory budget of <budget> (max_memory)".
 */
pc_status pc_io_budget_check(uint64_t need, uint64_t max_memory, const char *what, const char *how,
                             pc_error *err);

/*
 * The one inflater of deflated .npz members (inflate.c): zlib's raw inflate
 * with the same strict rules for a whole read and a row stream, so validity
 * never depends on how a member is read. A member is valid when its stream
 * inflates without error to exactly `size` bytes, ends (the final block's
 * end code) within its `csize` compressed bytes (bytes after the end are
 * ignored) and the bytes' CRC-32 is `crc`. Messages start with `what`.
 *
 * The compressed bytes come from `in` (all csize of them) or, when src is
 * not NULL, from src(ctx, buf, cap, err): up to cap bytes into buf, the
 * count (0 at the end, < 0 on error with err set).
 */
typedef struct pc_inflate pc_inflate;
typedef int64_t (*pc_inflate_src)(void *ctx, void *buf, size_t cap, pc_error *err);
pc_status pc_inflate_open(const void *in, pc_inflate_src src, void *ctx, uint64_t csize,
                          uint64_t size, uint32_t crc, const char *what, pc_inflate **out,
                          pc_error *err);
/* The next n inflated bytes into dst (an error if the stream ends before). */
pc_status pc_inflate_read(pc_inflate *f, void *dst, uint64_t n, pc_error *err);
/* After all `size` bytes were read: the stream must end there and the CRC match. */
pc_status pc_inflate_finish(pc_inflate *f, pc_error *err);
void pc_inflate_close(pc_inflate *f); /* NULL ok */
/* open, read all `size` bytes into dst, finish, close. */
pc_status pc_inflate_whole(const void *raw, uint64_t csize, uint64_t size, uint32_t crc,
                           const char *what, void *dst, pc_error *err);

/* Native-endian check, evaluated at run time (no configure step needed). */
static inline int pc_host_is_le(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* Byte-swaps count elements of size es in place. */
void pc_bswap_inplace(void *data, uint64_t count, size_t es);

#endif
