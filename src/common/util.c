/* Files, paths, checked allocation, growing arrays, strings and half floats. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/*
 * Large blocks are 2 MiB-aligned and advised as huge pages: filling a fresh
 * 100 MB array otherwise costs ~25k page faults, which on virtual machines
 * took longer than inflating the data (numpy does the same for its arrays).
 * The block is still released with free().
 */
#define PC_HUGE_MIN (UINT64_C(4) << 20)
#define PC_HUGE_ALIGN ((size_t)2 << 20)

static void *big_alloc(uint64_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, PC_HUGE_ALIGN, (size_t)bytes) != 0) return NULL;
    size_t len = ((size_t)bytes + PC_HUGE_ALIGN - 1) & ~(PC_HUGE_ALIGN - 1);
    (void)madvise(p, len, MADV_HUGEPAGE); /* advisory: ignore failure */
    return p;
}

void *pc_malloc_array(uint64_t n, uint64_t size) {
    uint64_t bytes;
    if (!pc_mul_u64(n, size, &bytes) || bytes > SIZE_MAX) return NULL;
    if (bytes >= PC_HUGE_MIN) return big_alloc(bytes);
    return malloc(bytes ? (size_t)bytes : 1);
}

void *pc_calloc_array(uint64_t n, uint64_t size) {
    uint64_t bytes;
    if (!pc_mul_u64(n, size, &bytes) || bytes > SIZE_MAX) return NULL;
    if (bytes >= PC_HUGE_MIN) {
        void *p = big_alloc(bytes);
        if (p) memset(p, 0, (size_t)bytes);
        return p;
    }
    return calloc(bytes ? (size_t)n : 1, bytes ? (size_t)size : 1);
}

/* ---- files ---------------------------------------------------------------- */

void pc_fmt_bytes(uint64_t b, char *buf, size_t cap) {
    const double v = (double)b;
    if (b >= (UINT64_C(1) << 30))
        snprintf(buf, cap, "%.2f GiB", v / 1073741824.0);
    else if (b >= (UINT64_C(1) << 20))
        snprintf(buf, cap, "%.1f MiB", v / 1048576.0);
    else if (b >= (UINT64_C(1) << 10))
        snprintf(buf, cap, "%.0f KiB", v / 1024.0);
    else
        snprintf(buf, cap, "%llu bytes", (unsigned long long)b);
}

static const char *mode_kind(mode_t m) {
    if (S_ISREG(m)) return "a regular file";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

const char *pc_file_kind(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0) return mode_kind(st.st_mode);
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) return "a dangling symbolic link";
    return "missing";
}

int pc_is_regular(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

pc_status pc_open_regular(const char *path, int *fd, uint64_t *size, pc_error *err) {
    *fd = -1;
    *size = 0;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0) {
        int e = errno;
        if (e == ENOENT && strcmp(pc_file_kind(path), "a dangling symbolic link") == 0)
            return pc_fail(err, PC_ERR_IO, "%s: cannot open: a dangling symbolic link", path);
        return pc_fail(err, e == ENOENT ? PC_ERR_NOTFOUND : PC_ERR_IO, "%s: cannot open: %s", path,
                       strerror(e));
    }
    struct stat st;
    memset(&st, 0, sizeof st);
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(f);
        return pc_fail(err, PC_ERR_IO, "%s: is %s, expected a regular file", path,
                       mode_kind(st.st_mode));
    }
    int fl = fcntl(f, F_GETFL);
    if (fl >= 0) (void)fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    *fd = f;
    *size = (uint64_t)st.st_size;
    return PC_OK;
}

pc_status pc_read_file(const char *path, size_t max_bytes, char **data, size_t *len,
                       pc_error *err) {
    return pc_read_file_progress(path, max_bytes, NULL, NULL, data, len, err);
}

/* Reads n bytes; in pieces with "bytes read" after each when fn is set. */
static size_t read_pieces(FILE *f, char *buf, size_t n, pc_progress_fn fn, void *user) {
    if (!fn || n < PC_PROGRESS_MIN_BYTES) return n ? fread(buf, 1, n, f) : 0;
    size_t got = 0;
    fn(user, "bytes read", 0, (int64_t)n);
    while (got < n) {
        size_t want = n - got < PC_PROGRESS_STEP_BYTES ? n - got : PC_PROGRESS_STEP_BYTES;
        size_t k = fread(buf + got, 1, want, f);
        got += k;
        if (k < want) break;
        fn(user, "bytes read", (int64_t)got, (int64_t)n);
    }
    return got;
}

pc_status pc_read_file_progress(const char *path, size_t max_bytes, pc_progress_fn fn, void *user,
                                char **data, size_t *len, pc_error *err) {
    *data = NULL;
    *len = 0;
    int fd = -1;
    uint64_t size = 0;
    pc_status ost = pc_open_regular(path, &fd, &size, err); /* never blocks on a FIFO */
    if (ost == PC_ERR_NOTFOUND && err) err->code = PC_ERR_IO; /* this reader's contract */
    if (ost) return PC_ERR_IO;
    if (size > max_bytes) {
        close(fd);
        return pc_fail(err, PC_ERR_RANGE, "%s: %llu bytes is over the %zu-byte limit for this file",
                       path, (unsigned long long)size, max_bytes);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return pc_fail(err, PC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    size_t n = (size_t)size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    }
    size_t got = read_pieces(f, buf, n, fn, user);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != n) {
        free(buf);
        return pc_fail(err, PC_ERR_IO, "%s: read failed", path);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return PC_OK;
}

pc_status pc_mkdirs(const char *path, pc_error *err) {
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf) return pc_fail(err, PC_ERR_ARG, "%s: bad directory path", path);
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return pc_fail(err, PC_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return pc_fail(err, PC_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return pc_fail(err, PC_ERR_IO, "%s: exists and is not a directory", buf);
    return PC_OK;
}

static int remove_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

void pc_remove_tree(const char *path) { nftw(path, remove_cb, 16, FTW_DEPTH | FTW_PHYS); }

int pc_str_ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

int pc_ascii_ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b)) return 0;
    return *a == *b;
}

void pc_path_stem(const char *path, const char *ext, char *out, size_t cap) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t len = strlen(base);
    if (ext && pc_str_ends_with(base, ext)) len -= strlen(ext);
    if (cap == 0) return;
    if (len >= cap) len = cap - 1;
    memcpy(out, base, len);
    out[len] = '\0';
}

float pc_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400u)) {
                mant <<= 1;
                exp--;
            }
            mant &= 0x3ffu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
