/* Internal helpers shared by every module: errors, checked arithmetic, growing
 * arrays, files, strings. */
#ifndef PC_UTIL_H
#define PC_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perfcast/perfcast.h"

#if defined(__GNUC__)
#define PC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PC_PRINTF(a, b)
#endif

/* Fills err (if not NULL) and returns code, so callers can `return pc_fail(...)`. */
pc_status pc_fail(pc_error *err, pc_status code, const char *fmt, ...) PC_PRINTF(3, 4);
/*
 * The ABI check of a struct with a struct_size (perfcast/perfcast.h): PC_OK
 * when got == want, else PC_ERR_ARG naming `type` and both sizes. result = 1
 * for a result struct (the caller sets struct_size), 0 for an option struct
 * (its _default() sets it). Use PC_CHECK_SIZE.
 */
pc_status pc_check_struct_size(pc_error *err, const char *type, size_t got, size_t want,
                               int result);
/* PC_CHECK_SIZE(err, pc_train_opts, opts) for an option struct, PC_CHECK_RESULT_SIZE for a result. */
#define PC_CHECK_SIZE(err, type, p) pc_check_struct_size(err, #type, (p)->struct_size, sizeof(type), 0)
#define PC_CHECK_RESULT_SIZE(err, type, p)                                                         \
    pc_check_struct_size(err, #type, (p)->struct_size, sizeof(type), 1)
/* Prefixes an existing message with "<prefix>: ". */
void pc_error_prefix(pc_error *err, const char *fmt, ...) PC_PRINTF(2, 3);

/* Checked arithmetic: return 0 on overflow, 1 otherwise. */
static inline int pc_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline int pc_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

/* Greatest common divisor of two non-negative integers (gcd(a, 0) = a). */
static inline int64_t pc_gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* malloc that fails cleanly on 0 or overflow of n*size. */
void *pc_malloc_array(uint64_t n, uint64_t size);
void *pc_calloc_array(uint64_t n, uint64_t size);

/*
 * Growing arrays (buf.c). Both return the (possibly moved) array holding at least
 * `need` elements of `elem` bytes and update *cap, or NULL on overflow or out
 * of memory, when the old array and *cap are left as they were. Contents are
 * kept (realloc). Never NULL on success, also for need 0.
 *   pc_grow_array:    for arrays appended to: the capacity doubles (from 8).
 *   pc_reserve_array: for scratch sized per call: exactly `need` when it grows.
 * Typical use:
 *     T *p = pc_grow_array(a->v, &a->cap, a->n + 1, sizeof *p);
 *     if (!p) return <out of memory>;
 *     a->v = p;
 */
void *pc_grow_array(void *ptr, size_t *cap, size_t need, size_t elem);
void *pc_reserve_array(void *ptr, size_t *cap, size_t need, size_t elem);

/*
 * Reads the whole file at `path` into a malloc'd buffer with a NUL after the
 * data (*len excludes it). Opened with pc_open_regular, so it never blocks:
 * anything but a regular file (a FIFO, a device, a directory) is refused
 * (PC_ERR_IO, "PATH: is a FIFO, expected a regular file"; a missing file
 * is PC_ERR_IO too). A file over
 * `max_bytes` is refused before anything is read (PC_ERR_RANGE). Messages
 * name the path.
 */
pc_status pc_read_file(const char *path, size_t max_bytes, char **data, size_t *len, pc_error *err);
/* pc_read_file with progress: a file of PC_PROGRESS_MIN_BYTES or more is read in
   PC_PROGRESS_STEP_BYTES pieces, fn(user, "bytes read", done, size) after each (and once
   at 0); smaller files and fn NULL: none. */
#define PC_PROGRESS_MIN_BYTES (4u << 20)
#define PC_PROGRESS_STEP_BYTES (1u << 20)
pc_status pc_read_file_progress(const char *path, size_t max_bytes, pc_progress_fn fn, void *user,
                                char **data, size_t *len, pc_error *err);

/*
 * Opens `path` read-only for a reader of data files without ever blocking (a
 * FIFO with no writer would block a plain open: O_NONBLOCK, then fstat) and
 * fails with PC_ERR_IO unless it is a regular file, naming what it is ("a
 * FIFO", "a directory", "a dangling symbolic link", ...). On success *fd is
 * a blocking descriptor and *size the file's size.
 */
pc_status pc_open_regular(const char *path, int *fd, uint64_t *size, pc_error *err);
/* What the file at path is, for messages: "a regular file", "a FIFO", "a directory",
   "a socket", "a character device", "a block device", "a dangling symbolic link",
   "missing" (lstat/stat, never opening it). */
const char *pc_file_kind(const char *path);
/* 1 if path is a regular file (following symbolic links), without opening it. */
int pc_is_regular(const char *path);

/* "3.00 GiB", "12.5 MiB", "640 KiB", "100 bytes": a byte count for messages. */
void pc_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* mkdir -p; PC_OK if it exists already. */
pc_status pc_mkdirs(const char *path, pc_error *err);

/*
 * Outputs (src/common/output.c) are written to a temporary name beside
 * `path` and renamed into place, so a failed or interrupted run never
 * leaves a half-written file: pc_tmp_open creates "<dir>/.<base>.<pid>.tmpXXXXXX"
 * (O_EXCL, an unpredictable suffix, never following a symlink) after
 * removing the temporaries of `path` that processes no longer alive left
 * behind (kill -9); on success tmp holds its name.
 */
FILE *pc_tmp_open(const char *path, char *tmp, size_t cap, pc_error *err);
/* Close and rename tmp -> path; removes tmp on failure (no fsync). */
pc_status pc_tmp_commit(FILE *f, const char *tmp, const char *path, pc_error *err);
/* pc_tmp_commit made durable: the file fsync'd before the rename and its folder after
   (models, training states, cache markers: what a crash must not lose or tear). */
pc_status pc_tmp_commit_durable(FILE *f, const char *tmp, const char *path, pc_error *err);
/* fsync of the folder holding path (after a rename into it); best effort. */
void pc_fsync_dir_of(const char *path);
/*
 * Replaces the directory `out` by `tmp` in one step (renameat2
 * RENAME_EXCHANGE, then the old tree removed; a plain rename when out does
 * not exist): at every moment `out` is either the old or the new tree.
 */
pc_status pc_replace_dir(const char *tmp, const char *out, pc_error *err);
/*
 * An advisory lock (flock, exclusive, non-blocking) on `path` (a file,
 * created if missing, or a directory): *fd receives it. Held by another
 * process: PC_ERR_BUSY naming `what` and path. pc_lock_release(fd) drops it
 * (fd < 0 is a no-op); with unlink_path the lock file is removed first.
 */
pc_status pc_lock_acquire(const char *path, const char *what, int *fd, pc_error *err);
void pc_lock_release(int fd, const char *unlink_path);
/* pc_same_file: perfcast/perfcast.h. */
/* Removes a file or a whole directory tree (best effort). */
void pc_remove_tree(const char *path);

/* Base name without directories and without `ext` if it ends with it. */
void pc_path_stem(const char *path, const char *ext, char *out, size_t cap);
int pc_str_ends_with(const char *s, const char *suffix);
/* ASCII case-insensitive equality (locale-independent; other bytes compare exactly). */
int pc_ascii_ieq(const char *a, const char *b);

/*
 * splitmix64 (Steele, Lea, Flood 2014): advances *state and returns a well
 * mixed word. The one small PRNG/hash shared by synth seeding, model init,
 * dropout masks and config sampling, so all stay reproducible per seed.
 */
static inline uint64_t pc_splitmix64(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* IEEE half -> float. */
float pc_half_to_float(uint16_t h);

#endif /* PC_UTIL_H */
