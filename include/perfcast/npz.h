/*
 * NPY arrays and NPZ archives (numpy's formats), read and written.
 *
 * Reading: .npy headers v1/v2/v3; dtypes bool, u1/i1/u2/i2/u4/i4/u8/i8,
 * f2 (converted to float32 on read), f4, f8; little- and big-endian; C and
 * Fortran order. Arrays are always handed back native-endian, C order.
 * Archives: ZIP entries stored or deflated, ZIP64 (entries over 4 GiB,
 * archives over 65,535 entries). Container parsing is libzip's; inflate is
 * libdeflate's for whole entries and zlib's (through libzip) when streaming.
 *
 * Every size in a header is checked against the entry's real size before any
 * allocation, so a lying header cannot drive a huge allocation.
 */
#ifndef PERFCAST_NPZ_H
#define PERFCAST_NPZ_H

#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pc_dtype {
    PC_DTYPE_BOOL = 0,
    PC_DTYPE_U8,
    PC_DTYPE_I8,
    PC_DTYPE_U16,
    PC_DTYPE_I16,
    PC_DTYPE_U32,
    PC_DTYPE_I32,
    PC_DTYPE_U64,
    PC_DTYPE_I64,
    PC_DTYPE_F16, /* only as a file dtype: reads convert it to F32 */
    PC_DTYPE_F32,
    PC_DTYPE_F64,
    PC_DTYPE_COUNT
} pc_dtype;

/* Bytes per element; 0 for an invalid dtype. */
PC_API size_t pc_dtype_size(pc_dtype t);
/* numpy's name: "bool", "uint8", ..., "float32". */
PC_API const char *pc_dtype_name(pc_dtype t);
/* 1 for integer dtypes (bool excluded), 0 otherwise. */
PC_API int pc_dtype_is_int(pc_dtype t);

#define PC_MAX_DIMS 8

/* What a .npy header says, before any data is read. */
typedef struct pc_array_info {
    pc_dtype dtype;       /* file dtype (F16 stays F16 here) */
    int big_endian;       /* 1 if the file data is big-endian */
    int fortran_order;    /* 1 if the file data is Fortran order */
    int ndim;
    int64_t shape[PC_MAX_DIMS];
    int64_t count;        /* product of shape (1 for a 0-d array) */
    uint64_t data_bytes;  /* count * file element size */
    uint64_t data_offset; /* header length: data starts here in the .npy */
} pc_array_info;

/*
 * An in-memory array, native-endian, C order. The data is either owned
 * (malloc'd) or a view into a memory map; pc_array_free releases either.
 * The fields after `data` are private.
 */
typedef struct pc_array {
    pc_dtype dtype;
    int ndim;
    int64_t shape[PC_MAX_DIMS];
    void *data;
    void *priv_base_;      /* malloc'd block or mmap base */
    size_t priv_len_;      /* mmap length; 0 for malloc'd */
} pc_array;

/* Zero-initialised array, safe to pass to pc_array_free. */
#define PC_ARRAY_INIT {PC_DTYPE_F32, 0, {0}, NULL, NULL, 0}

PC_API void pc_array_free(pc_array *a); /* frees data and resets *a; NULL ok */
PC_API int64_t pc_array_count(const pc_array *a);
PC_API size_t pc_array_nbytes(const pc_array *a);
/* Allocates an owned zero-filled array. */
PC_API pc_status pc_array_alloc(pc_array *a, pc_dtype t, int ndim, const int64_t *shape,
                                pc_error *err);
/*
 * Converts in place between numeric dtypes (ints <-> ints, ints <-> floats).
 * Integer narrowing that would change a value fails with PC_ERR_RANGE
 * naming `what` (e.g. "file.npz: node_opcode").
 */
PC_API pc_status pc_array_convert(pc_array *a, pc_dtype to, const char *what, pc_error *err);

/* ---- memory budget ----------------------------------------------------- */

/*
 * Every reader checks what a read will hold in memory against a budget
 * before it allocates anything: the inflated size of a member read whole
 * (plus its compressed bytes while it inflates), the sum over members for
 * pc_npz_read_all, the rows pc_npz_read_rows returns, an .npy's data (twice
 * for float16). Over the budget the read fails with PC_ERR_NOMEM, naming the
 * file, the member and both sizes. Row cursors (pc_npz_rows_*) hold only the
 * rows the caller asks for plus 1 MiB of scratch, whatever the member's size;
 * the work they do is bounded by deflate's ratio (about 1032:1), which every
 * member's claimed size is checked against.
 *
 * PC_MEMORY_AUTO, the default everywhere: half the memory the machine has
 * available at the time of the read (MemAvailable in /proc/meminfo, else
 * the free physical pages), but never less than PC_MEMORY_AUTO_MIN; reads of
 * up to PC_MEMORY_AUTO_MIN never consult the machine.
 */
#define PC_MEMORY_AUTO UINT64_MAX
#define PC_MEMORY_AUTO_MIN (UINT64_C(256) << 20)
/* The budget in bytes a max_memory value stands for (PC_MEMORY_AUTO: measured now). */
PC_API uint64_t pc_memory_budget(uint64_t max_memory);

/* ---- .npy headers ---------------------------------------------------- */

/*
 * Parses a .npy header from the first `len` bytes of a file whose total size
 * is `file_size` (UINT64_MAX if unknown). `what` names the source in errors.
 */
PC_API pc_status pc_npy_parse_header(const void *buf, size_t len, uint64_t file_size,
                                     const char *what, pc_array_info *info, pc_error *err);

/*
 * Formats a v1 (or v2 if needed) .npy header for a native-endian C-order
 * array; the header length is a multiple of 64 so the data that follows is
 * aligned. Returns the header length, or 0 if `cap` is too small.
 */
PC_API size_t pc_npy_format_header(pc_dtype t, int ndim, const int64_t *shape, char *out,
                                   size_t cap);

/* ---- single .npy files ----------------------------------------------- */

PC_API pc_status pc_npy_load(const char *path, pc_array *out, pc_error *err);
/* pc_npy_load within a memory budget (bytes, or PC_MEMORY_AUTO as pc_npy_load uses). */
PC_API pc_status pc_npy_load_max(const char *path, uint64_t max_memory, pc_array *out,
                                 pc_error *err);
/* Maps a native-endian, C-order, non-f16 .npy read-only instead of reading it. */
PC_API pc_status pc_npy_map(const char *path, pc_array *out, pc_error *err);
/* Writes to a temporary name in the same directory, then renames. */
PC_API pc_status pc_npy_save(const char *path, const pc_array *a, pc_error *err);

/* ---- .npz archives: reading ------------------------------------------ */

typedef struct pc_npz pc_npz;

/*
 * Opens an archive; `path` must be a regular file (a FIFO, device or
 * directory is refused without blocking). Reads use the budget
 * PC_MEMORY_AUTO until pc_npz_set_max_memory changes it.
 */
PC_API pc_status pc_npz_open(const char *path, pc_npz **out, pc_error *err);
PC_API void pc_npz_close(pc_npz *z);
/* The memory budget of this handle's reads, in bytes or PC_MEMORY_AUTO. */
PC_API void pc_npz_set_max_memory(pc_npz *z, uint64_t max_memory);

PC_API const char *pc_npz_path(const pc_npz *z);
/* Number of .npy members. Non-.npy members are ignored. */
PC_API int pc_npz_count(const pc_npz *z);
/* Key of member i, without the ".npy" suffix (numpy's key). */
PC_API const char *pc_npz_key(const pc_npz *z, int i);
/* Member index for a key, or -1. */
PC_API int pc_npz_find(const pc_npz *z, const char *key);
/* 1 if member i is stored (uncompressed), 0 if deflated. */
PC_API int pc_npz_is_stored(const pc_npz *z, int i);
/* Uncompressed and compressed sizes of member i, in bytes. */
PC_API uint64_t pc_npz_member_size(const pc_npz *z, int i);
PC_API uint64_t pc_npz_member_csize(const pc_npz *z, int i);

/* Reads only the member's header. */
PC_API pc_status pc_npz_info(pc_npz *z, int i, pc_array_info *info, pc_error *err);

/* Reads a whole member (native-endian, C order; F16 becomes F32). */
PC_API pc_status pc_npz_read(pc_npz *z, int i, pc_array *out, pc_error *err);

/*
 * Reads rows [row0, row0+nrows) along axis 0 of a C-order member without
 * inflating more than the data up to row0+nrows, and holding only those rows
 * in memory. Fortran-order members fail with PC_ERR_UNSUPPORTED.
 */
PC_API pc_status pc_npz_read_rows(pc_npz *z, int i, int64_t row0, int64_t nrows, pc_array *out,
                                  pc_error *err);

/*
 * A forward-only row cursor over one C-order member: successive reads at
 * non-decreasing row offsets inflate the member once, start to end, holding
 * only the rows asked for. Use it to scan or sample a huge array
 * (e.g. layout node_config_feat) in bounded memory. Not thread-safe; several
 * cursors may be open on one archive.
 */
typedef struct pc_npz_rows pc_npz_rows;

PC_API pc_status pc_npz_rows_open(pc_npz *z, int i, pc_npz_rows **out, pc_error *err);
/* The member's header (file dtype, full shape). */
PC_API const pc_array_info *pc_npz_rows_info(const pc_npz_rows *r);
/*
 * Copies rows [row0, row0+nrows) into dst (native-endian, in-memory dtype:
 * F16 becomes F32). row0 must not be before the end of the previous read.
 */
PC_API pc_status pc_npz_rows_read(pc_npz_rows *r, int64_t row0, int64_t nrows, void *dst,
                                  pc_error *err);
PC_API void pc_npz_rows_close(pc_npz_rows *r);

/*
 * Reads every member into outs[0..count-1] (indexed like pc_npz_key),
 * inflating members in parallel with up to `threads` threads (0 = default).
 */
PC_API pc_status pc_npz_read_all(pc_npz *z, pc_array *outs, int threads, pc_error *err);

/* ---- .npz archives: writing ------------------------------------------ */

typedef struct pc_npz_writer pc_npz_writer;

typedef enum pc_npz_compress {
    PC_NPZ_STORED = 0,  /* like np.savez */
    PC_NPZ_DEFLATED = 1 /* like np.savez_compressed */
} pc_npz_compress;

/*
 * Starts an archive at `path`. Nothing appears at `path` until commit, which
 * writes a temporary file in the same directory and renames it into place.
 */
PC_API pc_status pc_npz_writer_open(const char *path, pc_npz_compress mode, pc_npz_writer **out,
                                    pc_error *err);
/* Deflate level 1..9 (default 6, numpy's). */
PC_API void pc_npz_writer_set_level(pc_npz_writer *w, int level);
/*
 * Adds `key`.npy holding a native-endian, C-order array. The data is copied,
 * so the caller may free it at once; the copies are held (and compressed)
 * until commit, so an archive needs about its uncompressed size in memory.
 */
PC_API pc_status pc_npz_writer_add(pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                                   const int64_t *shape, const void *data, pc_error *err);
PC_API pc_status pc_npz_writer_add_array(pc_npz_writer *w, const char *key, const pc_array *a,
                                         pc_error *err);
/*
 * Like pc_npz_writer_add, but the data is not copied: it is read while the
 * archive is written, so it must stay valid and unchanged until commit or
 * abort. The archive's bytes are the same as pc_npz_writer_add's.
 */
PC_API pc_status pc_npz_writer_add_borrowed(pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                                            const int64_t *shape, const void *data, pc_error *err);
/*
 * Fills `n` bytes of an array's data, from byte `offset` of its C-order
 * layout, into dst; returns 0 (non-zero fails the commit). Called during
 * commit, in increasing offsets (a member may be read more than once, from
 * offset 0 again).
 */
typedef int (*pc_npz_fill_fn)(void *ctx, uint64_t offset, void *dst, size_t n);
/*
 * Adds `key`.npy whose data `fill` produces while the archive is written: an
 * array that never exists whole in memory. ctx must stay valid until commit
 * or abort. The archive's bytes are the same as pc_npz_writer_add's with the
 * same data.
 */
PC_API pc_status pc_npz_writer_add_stream(pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                                          const int64_t *shape, pc_npz_fill_fn fill, void *ctx,
                                          pc_error *err);
/* Finishes the archive and renames it into place; frees w in all cases. */
PC_API pc_status pc_npz_writer_commit(pc_npz_writer *w, pc_error *err);
/* Drops the archive (removes the temporary file); frees w. NULL ok. */
PC_API void pc_npz_writer_abort(pc_npz_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_NPZ_H */
