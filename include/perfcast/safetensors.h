/*
 * safetensors files (Hugging Face's tensor container), read and written.
 * perfcast's model checkpoints are safetensors weights plus string metadata
 * (architecture, preprocessing statistics, training options as JSON text).
 *
 * Layout: an 8-byte little-endian u64 N, N bytes of UTF-8 JSON
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
 * then the byte buffer. Offsets are relative to the buffer start; the tensors
 * must cover the buffer exactly (no overlaps, no holes, nothing after the
 * last one). Data is little-endian, C order.
 *
 * Dtypes: BOOL U8 I8 U16 I16 U32 I32 U64 I64 F16 F32 F64 map to pc_dtype.
 * Other dtypes of the format (BF16, F8_E4M3, F8_E5M2, C64, ...) are valid
 * files that perfcast does not handle: PC_ERR_UNSUPPORTED. Anything else is
 * PC_ERR_FORMAT. F16 tensors are handed back as F16 bytes by pc_st_data
 * (pc_st_read_array converts them to F32, like the npz reader).
 *
 * Reading validates everything before handing out a tensor: the header
 * length against the file size (before allocating anything), header JSON
 * and UTF-8, dtype names, shapes (non-negative integers, at most
 * PC_MAX_DIMS dims, products and byte sizes checked for overflow) against
 * data_offsets, offsets in range, contiguous and non-overlapping, duplicate
 * names and metadata keys. Failures are PC_ERR_FORMAT (PC_ERR_UNSUPPORTED
 * for a known dtype perfcast lacks or more than PC_MAX_DIMS dims) with a
 * message naming the file, the tensor and what was expected.
 * Numbers in the header are exact non-negative integers up to 2^53.
 */
#ifndef PERFCAST_SAFETENSORS_H
#define PERFCAST_SAFETENSORS_H

#include "perfcast/npz.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest header accepted (the reference implementation's limit). */
#define PC_ST_MAX_HEADER (100u * 1000u * 1000u)

/* The format's name for a dtype ("F32"), or NULL for an invalid one. */
PC_API const char *pc_st_dtype_name(pc_dtype t);

/* ---- writing ---------------------------------------------------------- */

typedef struct pc_st_writer pc_st_writer;

/* A new empty writer, or NULL if out of memory. */
PC_API pc_st_writer *pc_st_writer_new(void);
PC_API void pc_st_writer_free(pc_st_writer *w); /* NULL ok */

/*
 * Adds a tensor of native-endian (little-endian) C-order data. The data is
 * COPIED, so the caller may free or change it at once; the writer holds the
 * copies until freed. shape may be NULL when ndim == 0 (a scalar); data may
 * be NULL only when the tensor has no elements. Names must be non-empty
 * UTF-8, unique, and not "__metadata__" (PC_ERR_ARG otherwise).
 */
PC_API pc_status pc_st_writer_add(pc_st_writer *w, const char *name, pc_dtype t, int ndim,
                                  const int64_t *shape, const void *data, pc_error *err);
PC_API pc_status pc_st_writer_add_array(pc_st_writer *w, const char *name, const pc_array *a,
                                        pc_error *err);
/*
 * Integrity: every file the writer makes carries in its metadata
 * PC_ST_CRC_KEY, the CRC-32 (zlib's polynomial, 8 lowercase hex digits) of
 * all of the file's bytes with those 8 digits read as "00000000". The
 * readers (pc_st_open, pc_st_open_memory) verify it when present and refuse
 * a mismatch (PC_ERR_FORMAT, "checksum mismatch"); files without it (other
 * writers, older perfcast) are read as before. The key is reserved:
 * pc_st_writer_set_meta refuses it, and the readers keep it out of the
 * metadata they list (pc_st_meta and friends never show it).
 */
#define PC_ST_CRC_KEY "pc_crc32"
/* Sets (or replaces) a metadata entry; key and value are copied UTF-8. */
PC_API pc_status pc_st_writer_set_meta(pc_st_writer *w, const char *key, const char *value,
                                       pc_error *err);

/*
 * Writes the file: to a temporary name beside `path`, then renamed into
 * place, so `path` is never half-written. The writer stays usable.
 * Output is byte-for-byte reproducible: the checksum entry comes first, then
 * the metadata keys sorted; tensors are
 * stored by decreasing element size, then by name (strcmp order), which keeps
 * every tensor aligned to its element size (as the reference implementation
 * does); the header is padded with spaces to a multiple of 8 bytes.
 */
PC_API pc_status pc_st_writer_save(const pc_st_writer *w, const char *path, pc_error *err);
/* The same bytes in a malloc'd buffer (caller frees *out). */
PC_API pc_status pc_st_writer_serialize(const pc_st_writer *w, void **out, size_t *len,
                                        pc_error *err);

/* ---- reading ---------------------------------------------------------- */

typedef struct pc_st pc_st;

/* Opens and validates a file; its data is memory-mapped read-only. */
PC_API pc_status pc_st_open(const char *path, pc_st **out, pc_error *err);
/*
 * pc_st_open within a memory budget (bytes, or PC_MEMORY_AUTO as pc_st_open
 * uses; perfcast/npz.h): parsing the header may take up to about 34 times
 * its length (a JSON node per value), checked against the budget before it
 * is read (PC_ERR_NOMEM naming the file and the budget). The data stays
 * mapped, not copied.
 */
PC_API pc_status pc_st_open_max(const char *path, uint64_t max_memory, pc_st **out,
                                pc_error *err);
/* The same from memory: `buf` is copied; `what` names it in errors. */
PC_API pc_status pc_st_open_memory(const void *buf, size_t len, const char *what, pc_st **out,
                                   pc_error *err);
PC_API void pc_st_close(pc_st *r); /* NULL ok */

/* Tensors are indexed 0..count-1 in name order (strcmp). */
PC_API int pc_st_count(const pc_st *r);
/* Name of tensor i, or NULL if i is out of range. */
PC_API const char *pc_st_name(const pc_st *r, int i);
/* Index of a tensor, or -1. */
PC_API int pc_st_find(const pc_st *r, const char *name);
/*
 * Dtype, rank and shape of tensor i; any output may be NULL; shape needs room
 * for PC_MAX_DIMS values. PC_ERR_RANGE if i is out of range.
 */
PC_API pc_status pc_st_info(const pc_st *r, int i, pc_dtype *dtype, int *ndim, int64_t *shape);
/* Bytes of tensor i's data (0 if out of range). */
PC_API uint64_t pc_st_nbytes(const pc_st *r, int i);
/*
 * Tensor i's data, as stored (F16 stays F16), aligned to its element size,
 * valid until pc_st_close; NULL if i is out of range. An empty tensor gets a
 * valid non-NULL pointer to zero bytes.
 */
PC_API const void *pc_st_data(const pc_st *r, int i);
/* Copies tensor i into an owned pc_array (F16 becomes F32). */
PC_API pc_status pc_st_read_array(const pc_st *r, int i, pc_array *out, pc_error *err);

/* A metadata value, or NULL if the key is absent. */
PC_API const char *pc_st_meta(const pc_st *r, const char *key);
/* Metadata entries, in key order (strcmp). */
PC_API int pc_st_meta_count(const pc_st *r);
PC_API const char *pc_st_meta_key(const pc_st *r, int i);   /* NULL if out of range */
PC_API const char *pc_st_meta_value(const pc_st *r, int i); /* NULL if out of range */

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_SAFETENSORS_H */
