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

/* Native-endian check, evaluated at run time (no configure step needed). */
static inline int pc_host_is_le(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* Byte-swaps count elements of size es in place. */
void pc_bswap_inplace(void *data, uint64_t count, size_t es);

#endif
