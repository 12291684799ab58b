/*
 * Reading .npz archives. libzip parses the container (including ZIP64) and
 * hands over a deflated member's raw bytes; one inflater (inflate.c, zlib,
 * strict) inflates them for whole reads (members in parallel) and for row
 * ranges alike (streamed, so only the rows asked for are held in memory), so
 * a member's verdict never depends on how it is read. Stored members are
 * read through libzip, which checks their CRC at the end.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "common/threads.h"
#include "io/io_internal.h"

/* Deflate cannot expand data by more than about 1032:1; larger claims lie. */
#define PC_MAX_DEFLATE_RATIO 1040u

typedef struct member {
    zip_uint64_t index;
    char *key;
    uint64_t size, csize;
    uint16_t method;
    uint32_t crc;
    int info_ok;
    pc_array_info info;
} member;

struct pc_npz {
    char *path;
    zip_t *za;
    uint64_t file_size;
    uint64_t max_memory; /* PC_MEMORY_AUTO until set */
    int n;
    member *m;
};

const char *pc_npz_path(const pc_npz *z) { return z->path; }
int pc_npz_count(const pc_npz *z) { return z->n; }
const char *pc_npz_key(const pc_npz *z, int i) { return (i >= 0 && i < z->n) ? z->m[i].key : NULL; }
int pc_npz_is_stored(const pc_npz *z, int i) { return z->m[i].method == ZIP_CM_STORE; }
uint64_t pc_npz_member_size(const pc_npz *z, int i) { return z->m[i].size; }
uint64_t pc_npz_member_csize(const pc_npz *z, int i) { return z->m[i].csize; }

void pc_npz_set_max_memory(pc_npz *z, uint64_t max_memory) {
    if (z) z->max_memory = max_memory;
}

int pc_npz_find(const pc_npz *z, const char *key) {
    for (int i = 0; i < z->n; i++)
        if (strcmp(z->m[i].key, key) == 0) return i;
    return -1;
}

void pc_npz_close(pc_npz *z) {
    if (!z) return;
    if (z->za) zip_discard(z->za);
    for (int i = 0; i < z->n; i++) free(z->m[i].key);
    free(z->m);
    free(z->path);
    free(z);
}

/* Sanity of the central directory's sizes against the file, before any allocation. */
static pc_status check_member_sizes(const pc_npz *z, const member *m, pc_error *err) {
    if (m->method != ZIP_CM_STORE && m->method != ZIP_CM_DEFLATE)
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%s: member '%s.npy' uses compression method %u "
                       "(expected stored or deflated)", z->path, m->key, m->method);
    if (m->csize > z->file_size)
        return pc_fail(err, PC_ERR_FORMAT, "%s: member '%s.npy' claims %llu compressed bytes, "
                       "more than the whole file", z->path, m->key, (unsigned long long)m->csize);
    if (m->method == ZIP_CM_STORE && m->size != m->csize)
        return pc_fail(err, PC_ERR_FORMAT, "%s: stored member '%s.npy' has size %llu but %llu "
                       "bytes on disk", z->path, m->key, (unsigned long long)m->size,
                       (unsigned long long)m->csize);
    if (m->method == ZIP_CM_DEFLATE && m->size / PC_MAX_DEFLATE_RATIO > m->csize + 64)
        return pc_fail(err, PC_ERR_FORMAT, "%s: member '%s.npy' claims %llu bytes from %llu "
                       "compressed bytes, beyond what deflate can expand to", z->path, m->key,
                       (unsigned long long)m->size, (unsigned long long)m->csize);
    return PC_OK;
}

static pc_status add_members(pc_npz *z, pc_error *err) {
    zip_int64_t n = zip_get_num_entries(z->za, 0);
    if (n < 0) return pc_fail(err, PC_ERR_FORMAT, "%s: cannot list zip entries", z->path);
    z->m = pc_calloc_array((uint64_t)n + 1, sizeof(member));
    if (!z->m) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory listing %lld entries",
                              z->path, (long long)n);
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t st;
        if (zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) != 0)
            return pc_fail(err, PC_ERR_FORMAT, "%s: zip entry %lld: %s", z->path, (long long)i,
                           zip_strerror(z->za));
        const zip_uint64_t need = ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE |
                                  ZIP_STAT_COMP_METHOD | ZIP_STAT_CRC;
        if ((st.valid & need) != need)
            return pc_fail(err, PC_ERR_FORMAT, "%s: zip entry %lld lacks size or name", z->path,
                           (long long)i);
        if (!pc_str_ends_with(st.name, ".npy")) continue; /* numpy keeps others as bytes */
        member *m = &z->m[z->n];
        size_t klen = strlen(st.name) - 4;
        m->key = malloc(klen + 1);
        if (!m->key) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", z->path);
        memcpy(m->key, st.name, klen);
        m->key[klen] = '\0';
        m->index = (zip_uint64_t)i;
        m->size = st.size;
        m->csize = st.comp_size;
        m->method = st.comp_method;
        m->crc = st.crc;
        z->n++;
    }
    return PC_OK;
}

pc_status pc_npz_open(const char *path, pc_npz **out, pc_error *err) {
    *out = NULL;
    int fd = -1;
    uint64_t fsize = 0;
    pc_status ost = pc_open_regular(path, &fd, &fsize, err);
    if (ost) return ost;
    pc_npz *z = calloc(1, sizeof *z);
    if (!z || !(z->path = strdup(path))) {
        free(z);
        close(fd);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    }
    z->file_size = fsize;
    z->max_memory = PC_MEMORY_AUTO;
    int zerr = 0;
    /* the descriptor checked above, so what is parsed is what was checked */
    z->za = zip_fdopen(fd, ZIP_CHECKCONS, &zerr);
    if (!z->za) {
        close(fd);
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        pc_fail(err, zerr == ZIP_ER_NOZIP ? PC_ERR_FORMAT : (zerr == ZIP_ER_OPEN ||
                zerr == ZIP_ER_READ) ? PC_ERR_IO : PC_ERR_FORMAT,
                "%s: not a readable .npz (zip) archive: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        pc_npz_close(z);
        return err ? err->code : PC_ERR_FORMAT;
    }
    pc_status st = add_members(z, err);
    if (st) {
        pc_npz_close(z);
        return st;
    }
    *out = z;
    return PC_OK;
}

/* Reads exactly n bytes from an open member; libzip checks the CRC at the end. */
static pc_status fread_exact(zip_file_t *zf, void *buf, uint64_t n, const pc_npz *z,
                             const member *m, pc_error *err) {
    unsigned char *p = buf;
    while (n > 0) {
        zip_uint64_t chunk = n > (UINT64_C(1) << 30) ? (UINT64_C(1) << 30) : n;
        zip_int64_t got = zip_fread(zf, p, chunk);
        if (got < 0)
            return pc_fail(err, PC_ERR_FORMAT, "%s: member '%s.npy': %s", z->path, m->key,
                           zip_file_strerror(zf));
        if (got == 0)
            return pc_fail(err, PC_ERR_FORMAT, "%s: member '%s.npy' ends early (truncated?)",
                           z->path, m->key);
        p += got;
        n -= (uint64_t)got;
    }
    return PC_OK;
}

static zip_file_t *open_member(pc_npz *z, const member *m, zip_flags_t flags, pc_error *err) {
    zip_file_t *zf = zip_fopen_index(z->za, m->index, flags);
    if (!zf) pc_fail(err, PC_ERR_FORMAT, "%s: member '%s.npy': %s", z->path, m->key,
                     zip_strerror(z->za));
    return zf;
}

/* After the member's last byte: EOF, which makes libzip verify the CRC. */
static pc_status check_end(zip_file_t *zf, const pc_npz *z, const member *m, pc_error *err) {
    unsigned char extra;
    zip_int64_t got = zip_fread(zf, &extra, 1);
    if (got == 0) return PC_OK;
    return pc_fail(err, PC_ERR_FORMAT, "%s: member '%s.npy': %s", z->path, m->key,
                   got < 0 ? zip_file_strerror(zf) : "longer than its directory entry");
}

/* A member read from its start: stored through libzip, deflated as raw bytes
   through the one inflater. */
typedef struct mreader {
    const pc_npz *z;
    const member *m;
    zip_file_t *zf;
    pc_inflate *inf; /* deflated members */
} mreader;

static int64_t zip_src(void *ctx, void *buf, size_t cap, pc_error *err) {
    mreader *r = ctx;
    zip_int64_t got = zip_fread(r->zf, buf, cap);
    if (got < 0)
        pc_fail(err, PC_ERR_FORMAT, "%s: member '%s.npy': %s", r->z->path, r->m->key,
                zip_file_strerror(r->zf));
    return got;
}

static void mreader_close(mreader *r) {
    pc_inflate_close(r->inf);
    if (r->zf) zip_fclose(r->zf);
    memset(r, 0, sizeof *r);
}

static pc_status mreader_open(pc_npz *z, const member *m, mreader *r, pc_error *err) {
    memset(r, 0, sizeof *r);
    r->z = z;
    r->m = m;
    const int deflated = m->method == ZIP_CM_DEFLATE;
    if (!(r->zf = open_member(z, m, deflated ? ZIP_FL_COMPRESSED : 0, err)))
        return err ? err->code : PC_ERR_FORMAT;
    if (!deflated) return PC_OK;
    char what[1200];
    snprintf(what, sizeof what, "%s: member '%s.npy'", z->path, m->key);
    pc_status st = pc_inflate_open(NULL, zip_src, r, m->csize, m->size, m->crc, what, &r->inf, err);
    if (st) mreader_close(r);
    return st;
}

static pc_status mreader_read(mreader *r, void *buf, uint64_t n, pc_error *err) {
    return r->inf ? pc_inflate_read(r->inf, buf, n, err) : fread_exact(r->zf, buf, n, r->z, r->m, err);
}

/* At the member's end: the stream ends there and the CRC matches. */
static pc_status mreader_end(mreader *r, pc_error *err) {
    return r->inf ? pc_inflate_finish(r->inf, err) : check_end(r->zf, r->z, r->m, err);
}

static pc_status check_index(const pc_npz *z, int i, pc_error *err) {
    if (i < 0 || i >= z->n)
        return pc_fail(err, PC_ERR_RANGE, "%s: member index %d out of range (archive has %d "
                       "arrays)", z->path, i, z->n);
    return PC_OK;
}

pc_status pc_npz_info(pc_npz *z, int i, pc_array_info *info, pc_error *err) {
    pc_status st = check_index(z, i, err);
    if (st) return st;
    member *m = &z->m[i];
    if (m->info_ok) {
        *info = m->info;
        return PC_OK;
    }
    if ((st = check_member_sizes(z, m, err))) return st;
    char what[1200];
    snprintf(what, sizeof what, "%s: member '%s.npy'", z->path, m->key);
    mreader rd;
    if ((st = mreader_open(z, m, &rd, err))) return st;
    unsigned char pre[PC_NPY_PREAMBLE], *h = NULL;
    size_t plen = m->size < PC_NPY_PREAMBLE ? (size_t)m->size : PC_NPY_PREAMBLE;
    size_t hlen = 0;
    st = mreader_read(&rd, pre, plen, err);
    if (!st && !(hlen = pc_npy_header_len(pre, plen, what, err))) st = err ? err->code : PC_ERR_FORMAT;
    if (!st && (hlen < plen || hlen > m->size))
        st = pc_fail(err, PC_ERR_FORMAT, "%s: .npy header runs past the end of the member", what);
    if (!st && !(h = malloc(hlen))) st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
    if (!st) {
        memcpy(h, pre, plen);
        st = mreader_read(&rd, h + plen, hlen - plen, err);
    }
    if (!st) st = pc_npy_parse_header(h, hlen, m->size, what, info, err);
    free(h);
    mreader_close(&rd);
    if (!st) {
        m->info = *info;
        m->info_ok = 1;
    }
    return st;
}

/* Reads a member's stored bytes, or its raw deflate stream, into a new buffer. */
static pc_status read_member_bytes(pc_npz *z, const member *m, int raw, void **buf,
                                   pc_error *err) {
    *buf = NULL;
    pc_status st = check_member_sizes(z, m, err);
    if (st) return st;
    uint64_t n = raw ? m->csize : m->size;
    unsigned char *b = pc_malloc_array(n, 1);
    if (!b) return pc_fail(err, PC_ERR_NOMEM, "%s: member '%s.npy': out of memory for %llu "
                           "bytes", z->path, m->key, (unsigned long long)n);
    zip_file_t *zf = open_member(z, m, raw ? ZIP_FL_COMPRESSED : 0, err);
    if (!zf) {
        free(b);
        return err ? err->code : PC_ERR_FORMAT;
    }
    st = fread_exact(zf, b, n, z, m, err);
    if (!st && !raw) st = check_end(zf, z, m, err); /* EOF: libzip verifies the CRC */
    zip_fclose(zf);
    if (st) free(b);
    else *buf = b;
    return st;
}

/* Inflates a raw deflate stream of a member into its full uncompressed bytes
   (the one inflater, as row streams use). */
static pc_status inflate_member(const pc_npz *z, const member *m, void *raw, void **out,
                                pc_error *err) {
    *out = NULL;
    unsigned char *b = pc_malloc_array(m->size, 1);
    if (!b) return pc_fail(err, PC_ERR_NOMEM, "%s: member '%s.npy': out of memory for %llu "
                           "bytes", z->path, m->key, (unsigned long long)m->size);
    char what[1200];
    snprintf(what, sizeof what, "%s: member '%s.npy'", z->path, m->key);
    pc_status st = pc_inflate_whole(raw, m->csize, m->size, m->crc, what, b, err);
    if (st) {
        free(b);
        return st;
    }
    *out = b;
    return PC_OK;
}

/* Whole member bytes (header + data) -> array. Takes ownership of `bytes`. */
static pc_status decode_member(const pc_npz *z, member *m, void *bytes, pc_array *out,
                               pc_error *err) {
    char what[1200];
    snprintf(what, sizeof what, "%s: member '%s.npy'", z->path, m->key);
    pc_array_info info;
    pc_status st = pc_npy_parse_header(bytes, (size_t)m->size, m->size, what, &info, err);
    if (st) {
        free(bytes);
        return st;
    }
    return pc_array_from_file_data(&info, bytes, (unsigned char *)bytes + info.data_offset, out,
                                   what, err);
}

/* Bytes reading member i whole holds at its peak: the inflated member, its
   compressed copy while it inflates, and a converted copy (float16 widened,
   Fortran order reordered). */
static pc_status member_need(pc_npz *z, int i, uint64_t *need, pc_error *err) {
    pc_array_info info;
    pc_status st = pc_npz_info(z, i, &info, err);
    if (st) return st;
    const member *m = &z->m[i];
    uint64_t n = m->size, extra = 0;
    if (m->method == ZIP_CM_DEFLATE && !pc_add_u64(n, m->csize, &n)) n = UINT64_MAX;
    const uint64_t mes = pc_dtype_size(pc_mem_dtype(info.dtype));
    if (info.dtype == PC_DTYPE_F16 || (info.fortran_order && info.ndim > 1))
        if (!pc_mul_u64((uint64_t)info.count, mes, &extra) || !pc_add_u64(n, extra, &n))
            n = UINT64_MAX;
    *need = n;
    return PC_OK;
}

static pc_status check_member_budget(pc_npz *z, int i, uint64_t need, pc_error *err) {
    const member *m = &z->m[i];
    char what[1200], how[96], cs[32];
    snprintf(what, sizeof what, "%s: member '%s.npy'", z->path, m->key);
    pc_fmt_bytes(m->csize, cs, sizeof cs);
    snprintf(how, sizeof how, " (%s inflated from %s)",
             m->method == ZIP_CM_DEFLATE ? "read whole," : "stored,", cs);
    return pc_io_budget_check(need, z->max_memory, what, how, err);
}

pc_status pc_npz_read(pc_npz *z, int i, pc_array *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    pc_status st = check_index(z, i, err);
    if (st) return st;
    member *m = &z->m[i];
    const int raw = m->method == ZIP_CM_DEFLATE;
    void *bytes = NULL;
    uint64_t need = 0;
    if ((st = check_member_sizes(z, m, err)) || (st = member_need(z, i, &need, err)) ||
        (st = check_member_budget(z, i, need, err)))
        return st;
    if ((st = read_member_bytes(z, m, raw, &bytes, err))) return st;
    if (raw) {
        void *full = NULL;
        st = inflate_member(z, m, bytes, &full, err);
        free(bytes);
        if (st) return st;
        bytes = full;
    }
    return decode_member(z, m, bytes, out, err);
}

/* Skips n bytes of an open member: seeks if stored, else inflates and drops. */
static pc_status skip_bytes(mreader *rd, uint64_t pos, uint64_t n, pc_error *err) {
    if (n == 0) return PC_OK;
    enum { SCRATCH = 1 << 20 };
    /* zip_fseek works on stored members only; deflated ones inflate and drop. A
       seek ends libzip's CRC check of the member, so short skips (the header
       before row 0) are read: a full pass by rows is CRC-checked, stored or not. */
    if (!rd->inf && n >= SCRATCH && zip_fseek(rd->zf, (zip_int64_t)(pos + n), SEEK_SET) == 0)
        return PC_OK;
    unsigned char *scratch = malloc(SCRATCH);
    if (!scratch) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", rd->z->path);
    pc_status st = PC_OK;
    while (n > 0 && !st) {
        uint64_t chunk = n < SCRATCH ? n : SCRATCH;
        st = mreader_read(rd, scratch, chunk, err);
        n -= chunk;
    }
    free(scratch);
    return st;
}

struct pc_npz_rows {
    pc_npz *z;
    member *m;
    mreader rd;
    pc_array_info info;
    uint64_t row_bytes; /* in the file */
    uint64_t pos;       /* byte offset in the member of the next unread byte */
    char what[1200];
};

pc_status pc_npz_rows_open(pc_npz *z, int i, pc_npz_rows **out, pc_error *err) {
    *out = NULL;
    pc_array_info info;
    pc_status st = pc_npz_info(z, i, &info, err);
    if (st) return st;
    member *m = &z->m[i];
    if (info.ndim == 0)
        return pc_fail(err, PC_ERR_ARG, "%s: key '%s': a 0-d array has no rows", z->path, m->key);
    if (info.fortran_order && info.ndim > 1)
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%s: key '%s': row ranges of Fortran-order "
                       "arrays are not supported (read the whole array)", z->path, m->key);
    pc_npz_rows *r = calloc(1, sizeof *r);
    if (!r) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", z->path);
    if ((st = mreader_open(z, m, &r->rd, err))) {
        free(r);
        return st;
    }
    r->z = z;
    r->m = m;
    r->info = info;
    r->row_bytes = info.shape[0] ? info.data_bytes / (uint64_t)info.shape[0] : 0;
    snprintf(r->what, sizeof r->what, "%s: member '%s.npy'", z->path, m->key);
    *out = r;
    return PC_OK;
}

const pc_array_info *pc_npz_rows_info(const pc_npz_rows *r) { return &r->info; }

void pc_npz_rows_close(pc_npz_rows *r) {
    if (!r) return;
    mreader_close(&r->rd);
    free(r);
}

/* File-order row bytes already in dst (at `src`) -> native in-memory values at dst. */
static void rows_to_native(const pc_array_info *info, unsigned char *dst, unsigned char *src,
                           uint64_t count) {
    const size_t es = pc_file_elem_size(info->dtype);
    if (info->big_endian == pc_host_is_le() && es > 1) pc_bswap_inplace(src, count, es);
    if (info->dtype != PC_DTYPE_F16) return;
    /* In place, front to back: float i lands at 4i, below half i+1 at 2n+2i+2. */
    for (uint64_t k = 0; k < count; k++) {
        uint16_t h;
        memcpy(&h, src + 2 * k, 2);
        float f = pc_half_to_float(h);
        memcpy(dst + 4 * k, &f, 4);
    }
}

pc_status pc_npz_rows_read(pc_npz_rows *r, int64_t row0, int64_t nrows, void *dst,
                           pc_error *err) {
    const int64_t n0 = r->info.shape[0];
    if (row0 < 0 || nrows < 0 || row0 > n0 || nrows > n0 - row0)
        return pc_fail(err, PC_ERR_RANGE, "%s: rows [%lld, %lld) outside [0, %lld)", r->what,
                       (long long)row0, (long long)row0 + (nrows > 0 && row0 <= INT64_MAX - nrows
                       ? nrows : 0), (long long)n0);
    const uint64_t start = r->info.data_offset + r->row_bytes * (uint64_t)row0;
    if (start < r->pos)
        return pc_fail(err, PC_ERR_ARG, "%s: row cursor cannot go back to row %lld", r->what,
                       (long long)row0);
    pc_status st = skip_bytes(&r->rd, r->pos, start - r->pos, err);
    if (st) return st;
    r->pos = start;
    const uint64_t nbytes = r->row_bytes * (uint64_t)nrows;
    const uint64_t count = r->row_bytes ? nbytes / pc_file_elem_size(r->info.dtype) : 0;
    unsigned char *d = dst;
    unsigned char *src = r->info.dtype == PC_DTYPE_F16 ? d + 2 * count : d;
    st = mreader_read(&r->rd, src, nbytes, err);
    if (st) return st;
    r->pos += nbytes;
    /* At the member's end the stream must end there and the CRC match: a
       member read to its end by rows gets the verdict a whole read gives (the
       same inflater). */
    if (r->pos == r->m->size && (st = mreader_end(&r->rd, err))) return st;
    rows_to_native(&r->info, d, src, count);
    return PC_OK;
}

pc_status pc_npz_read_rows(pc_npz *z, int i, int64_t row0, int64_t nrows, pc_array *out,
                           pc_error *err) {
    memset(out, 0, sizeof *out);
    pc_npz_rows *r;
    pc_status st = pc_npz_rows_open(z, i, &r, err);
    if (st) return st;
    pc_array_info info = r->info;
    if (row0 < 0 || nrows < 0 || row0 > info.shape[0] || nrows > info.shape[0] - row0) {
        st = pc_fail(err, PC_ERR_RANGE, "%s: key '%s': rows [%lld, %lld) outside [0, %lld)",
                     z->path, r->m->key, (long long)row0,
                     (long long)row0 + (nrows > 0 && row0 <= INT64_MAX - nrows ? nrows : 0),
                     (long long)info.shape[0]);
        pc_npz_rows_close(r);
        return st;
    }
    int64_t shape[PC_MAX_DIMS];
    memcpy(shape, info.shape, sizeof shape);
    shape[0] = nrows;
    uint64_t need = 0;
    if (!pc_mul_u64(r->row_bytes / pc_file_elem_size(info.dtype) *
                        pc_dtype_size(pc_mem_dtype(info.dtype)),
                    (uint64_t)nrows, &need))
        need = UINT64_MAX;
    char what[1200];
    snprintf(what, sizeof what, "%s: member '%s.npy': rows [%lld, %lld)", z->path, r->m->key,
             (long long)row0, (long long)(row0 + nrows));
    st = pc_io_budget_check(need, z->max_memory, what, NULL, err);
    if (!st) st = pc_array_alloc(out, pc_mem_dtype(info.dtype), info.ndim, shape, err);
    if (!st) st = pc_npz_rows_read(r, row0, nrows, out->data, err);
    if (st) pc_array_free(out);
    pc_npz_rows_close(r);
    return st;
}

pc_status pc_npz_read_all(pc_npz *z, pc_array *outs, int threads, pc_error *err) {
    const int n = z->n;
    for (int i = 0; i < n; i++) memset(&outs[i], 0, sizeof outs[i]);
    void **bytes = calloc((size_t)n + 1, sizeof *bytes);
    pc_error *errs = calloc((size_t)n + 1, sizeof *errs);
    if (!bytes || !errs) {
        free(bytes);
        free(errs);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", z->path);
    }
    /* libzip handles are not thread-safe: read raw bytes serially, then
       inflate and decode the members in parallel. All of it is held at once:
       the budget covers the sum, checked before anything is read. */
    pc_status st = PC_OK;
    uint64_t total = 0;
    int biggest = -1;
    uint64_t big_need = 0;
    for (int i = 0; i < n && !st; i++) {
        uint64_t need = 0;
        if (!(st = check_member_sizes(z, &z->m[i], err)) && !(st = member_need(z, i, &need, err))) {
            if (!pc_add_u64(total, need, &total)) total = UINT64_MAX;
            if (need > big_need || biggest < 0) big_need = need, biggest = i;
        }
    }
    if (!st && n > 0) {
        char what[1200], how[160], bn[32];
        pc_fmt_bytes(big_need, bn, sizeof bn);
        snprintf(what, sizeof what, "%s: reading all %d members", z->path, n);
        snprintf(how, sizeof how, " (the largest, '%s.npy', %s)", z->m[biggest].key, bn);
        st = pc_io_budget_check(total, z->max_memory, what, how, err);
    }
    for (int i = 0; i < n && !st; i++)
        st = read_member_bytes(z, &z->m[i], z->m[i].method == ZIP_CM_DEFLATE, &bytes[i], err);
    if (!st) {
        /* Threads only pay when several members are big: one 72 MB member
           plus small ones ran 30% slower on 2 threads than on 1 (bench/). */
        int big = 0;
        for (int i = 0; i < n; i++) big += z->m[i].size >= (UINT64_C(4) << 20);
        int nt = threads > 0 ? threads : pc_threads();
        if (nt > big) nt = big > 0 ? big : 1;
#pragma omp parallel num_threads(nt)
        {
#pragma omp for schedule(dynamic, 1)
            for (int i = 0; i < n; i++) {
                member *m = &z->m[i];
                void *b = bytes[i];
                bytes[i] = NULL;
                pc_status s = PC_OK;
                if (m->method == ZIP_CM_DEFLATE) {
                    void *full = NULL;
                    s = inflate_member(z, m, b, &full, &errs[i]);
                    free(b);
                    b = full;
                }
                if (!s) s = decode_member(z, m, b, &outs[i], &errs[i]);
                errs[i].code = s;
            }
        }
        for (int i = 0; i < n && !st; i++)
            if (errs[i].code) {
                st = errs[i].code;
                if (err) *err = errs[i];
            }
    }
    for (int i = 0; i < n; i++) free(bytes[i]);
    free(bytes);
    free(errs);
    if (st)
        for (int i = 0; i < n; i++) pc_array_free(&outs[i]);
    return st;
}
