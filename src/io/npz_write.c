/*
 * Writing .npz archives with libzip. libzip writes the archive to a
 * temporary file beside the target and renames it into place on close, so a
 * failed or interrupted write never leaves a half-written archive; it also
 * switches to ZIP64 by itself when a member or the archive needs it.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zip.h>

#include "io/io_internal.h"

/* A fixed timestamp (1980-01-02) keeps archives byte-identical across runs. */
#define PC_ZIP_MTIME ((time_t)315619200)

struct pc_npz_writer {
    char *path;
    zip_t *za;
    pc_npz_compress mode;
    int level;
    int64_t count; /* members added */
};

/* libzip 1.7 (Debian 12) fills two function-local statics lazily on the first
   zip_open_from_source() of a process, unsynchronized: a thread that sees the first set and
   the second still -1 takes a writable file for read-only and fails with "Read-only archive"
   (seen about once in 1,200 `synth` runs, whose jobs open archives in parallel). Opening one
   empty in-memory archive once, before any concurrent open, fills them. The only
   process-wide state here, and it is libzip's, not ours. */
static pthread_once_t zip_statics_once = PTHREAD_ONCE_INIT;

static void zip_statics_init(void) {
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, NULL);
    if (!src) return;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_t *za = zip_open_from_source(src, ZIP_CREATE, &ze);
    if (za)
        zip_discard(za); /* frees src too */
    else
        zip_source_free(src);
    zip_error_fini(&ze);
}

pc_status pc_npz_writer_open(const char *path, pc_npz_compress mode, pc_npz_writer **out,
                             pc_error *err) {
    pthread_once(&zip_statics_once, zip_statics_init);
    *out = NULL;
    pc_npz_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    }
    int zerr = 0;
    w->za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    if (!w->za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        pc_fail(err, PC_ERR_IO, "%s: cannot create archive: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        free(w->path);
        free(w);
        return PC_ERR_IO;
    }
    w->mode = mode;
    w->level = 6;
    *out = w;
    return PC_OK;
}

void pc_npz_writer_set_level(pc_npz_writer *w, int level) {
    if (level >= 1 && level <= 9) w->level = level;
}

/* A member's .npy header and data size, checked. */
static pc_status member_header(const pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                               const int64_t *shape, char *header, size_t cap, size_t *hlen,
                               uint64_t *nbytes, pc_error *err) {
    *hlen = pc_npy_format_header(t, ndim, shape, header, cap);
    if (!*hlen || t == PC_DTYPE_F16)
        return pc_fail(err, PC_ERR_ARG, "%s: key '%s': bad dtype or shape", w->path, key);
    uint64_t count = 1, total;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || !pc_mul_u64(count, (uint64_t)shape[i], &count))
            return pc_fail(err, PC_ERR_ARG, "%s: key '%s': bad shape", w->path, key);
    if (!pc_mul_u64(count, pc_dtype_size(t), nbytes) || !pc_add_u64(*nbytes, *hlen, &total))
        return pc_fail(err, PC_ERR_RANGE, "%s: key '%s': array too large", w->path, key);
    return PC_OK;
}

/* Adds the source as `key`.npy with the writer's compression and the fixed time. */
static pc_status add_source(pc_npz_writer *w, const char *key, zip_source_t *src, pc_error *err) {
    char name[1024];
    if (snprintf(name, sizeof name, "%s.npy", key) >= (int)sizeof name) {
        zip_source_free(src);
        return pc_fail(err, PC_ERR_ARG, "%s: key too long", w->path);
    }
    zip_int64_t idx = zip_file_add(w->za, name, src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
        zip_source_free(src);
        return pc_fail(err, PC_ERR_ARG, "%s: cannot add '%s': %s", w->path, name,
                       zip_strerror(w->za));
    }
    zip_int32_t method = w->mode == PC_NPZ_DEFLATED ? ZIP_CM_DEFLATE : ZIP_CM_STORE;
    if (zip_set_file_compression(w->za, (zip_uint64_t)idx, method, (zip_uint32_t)w->level) != 0 ||
        zip_file_set_mtime(w->za, (zip_uint64_t)idx, PC_ZIP_MTIME, 0) != 0)
        return pc_fail(err, PC_ERR_IO, "%s: '%s': %s", w->path, name, zip_strerror(w->za));
    w->count++;
    return PC_OK;
}

pc_status pc_npz_writer_add(pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                            const int64_t *shape, const void *data, pc_error *err) {
    char header[1024];
    size_t hlen;
    uint64_t nbytes;
    pc_status st = member_header(w, key, t, ndim, shape, header, sizeof header, &hlen, &nbytes, err);
    if (st) return st;
    unsigned char *buf = pc_malloc_array(nbytes + hlen, 1);
    if (!buf) return pc_fail(err, PC_ERR_NOMEM, "%s: key '%s': out of memory", w->path, key);
    memcpy(buf, header, hlen);
    if (nbytes) memcpy(buf + hlen, data, (size_t)nbytes);
    zip_source_t *src = zip_source_buffer(w->za, buf, nbytes + hlen, 1 /* libzip frees buf */);
    if (!src) {
        free(buf);
        return pc_fail(err, PC_ERR_NOMEM, "%s: key '%s': %s", w->path, key, zip_strerror(w->za));
    }
    return add_source(w, key, src, err);
}

/* ---- members read from the caller's memory while the archive is written ---------------- */

typedef struct stream_src {
    unsigned char header[1024];
    size_t hlen;
    uint64_t nbytes, pos;
    const unsigned char *data; /* borrowed data, or NULL: fill */
    pc_npz_fill_fn fill;
    void *ctx;
    zip_error_t error;
} stream_src;

static zip_int64_t stream_read(stream_src *s, unsigned char *dst, zip_uint64_t len) {
    uint64_t total = s->hlen + s->nbytes, n = total - s->pos < len ? total - s->pos : len, done = 0;
    if (s->pos < s->hlen) { /* the header first */
        done = s->hlen - s->pos < n ? s->hlen - s->pos : n;
        memcpy(dst, s->header + s->pos, (size_t)done);
    }
    if (done < n) {
        uint64_t off = s->pos + done - s->hlen;
        if (s->data) {
            memcpy(dst + done, s->data + off, (size_t)(n - done));
        } else if (s->fill(s->ctx, off, dst + done, (size_t)(n - done)) != 0) {
            zip_error_set(&s->error, ZIP_ER_INTERNAL, 0);
            return -1;
        }
    }
    s->pos += n;
    return (zip_int64_t)n;
}

static zip_int64_t stream_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd) {
    stream_src *s = ud;
    switch (cmd) {
    case ZIP_SOURCE_OPEN: s->pos = 0; return 0;
    case ZIP_SOURCE_READ: return stream_read(s, data, len);
    case ZIP_SOURCE_CLOSE: return 0;
    case ZIP_SOURCE_STAT: {
        if (len < sizeof(zip_stat_t)) return -1;
        zip_stat_t *st = data;
        zip_stat_init(st);
        st->size = s->hlen + s->nbytes;
        st->mtime = PC_ZIP_MTIME;
        st->valid |= ZIP_STAT_SIZE | ZIP_STAT_MTIME;
        return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_ERROR: return zip_error_to_data(&s->error, data, len);
    case ZIP_SOURCE_FREE:
        zip_error_fini(&s->error);
        free(s);
        return 0;
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                              ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
    default: zip_error_set(&s->error, ZIP_ER_OPNOTSUPP, 0); return -1;
    }
}

static pc_status add_stream_src(pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                                const int64_t *shape, const void *data, pc_npz_fill_fn fill, void *ctx,
                                pc_error *err) {
    stream_src *s = calloc(1, sizeof *s);
    if (!s) return pc_fail(err, PC_ERR_NOMEM, "%s: key '%s': out of memory", w->path, key);
    pc_status st = member_header(w, key, t, ndim, shape, (char *)s->header, sizeof s->header, &s->hlen,
                                 &s->nbytes, err);
    if (st) {
        free(s);
        return st;
    }
    if (!data && !fill && s->nbytes) {
        free(s);
        return pc_fail(err, PC_ERR_ARG, "%s: key '%s': no data", w->path, key);
    }
    s->data = data;
    s->fill = fill;
    s->ctx = ctx;
    zip_error_init(&s->error);
    zip_source_t *src = zip_source_function(w->za, stream_cb, s);
    if (!src) {
        zip_error_fini(&s->error);
        free(s);
        return pc_fail(err, PC_ERR_NOMEM, "%s: key '%s': %s", w->path, key, zip_strerror(w->za));
    }
    return add_source(w, key, src, err); /* the source owns s from here */
}

pc_status pc_npz_writer_add_borrowed(pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                                     const int64_t *shape, const void *data, pc_error *err) {
    return add_stream_src(w, key, t, ndim, shape, data, NULL, NULL, err);
}

pc_status pc_npz_writer_add_stream(pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                                   const int64_t *shape, pc_npz_fill_fn fill, void *ctx,
                                   pc_error *err) {
    if (!fill) return pc_fail(err, PC_ERR_ARG, "%s: key '%s': no fill function", w->path, key);
    return add_stream_src(w, key, t, ndim, shape, NULL, fill, ctx, err);
}

pc_status pc_npz_writer_add_array(pc_npz_writer *w, const char *key, const pc_array *a,
                                  pc_error *err) {
    return pc_npz_writer_add(w, key, a->dtype, a->ndim, a->shape, a->data, err);
}

/*
 * libzip never writes an archive without entries (it removes the file), but
 * np.savez() with no arrays does: an empty archive is just the 22-byte end of
 * central directory record.
 */
static pc_status write_empty_zip(const char *path, pc_error *err) {
    static const unsigned char eocd[22] = {0x50, 0x4b, 0x05, 0x06};
    char tmp[4096];
    FILE *f = pc_tmp_open(path, tmp, sizeof tmp, err);
    if (!f) return err ? err->code : PC_ERR_IO;
    if (fwrite(eocd, 1, sizeof eocd, f) != sizeof eocd) {
        fclose(f);
        remove(tmp);
        return pc_fail(err, PC_ERR_IO, "%s: write failed", path);
    }
    return pc_tmp_commit(f, tmp, path, err);
}

pc_status pc_npz_writer_commit(pc_npz_writer *w, pc_error *err) {
    pc_status st = PC_OK;
    if (w->count == 0) {
        zip_discard(w->za);
        st = write_empty_zip(w->path, err);
    } else if (zip_close(w->za) != 0) {
        st = pc_fail(err, PC_ERR_IO, "%s: cannot write archive: %s", w->path, zip_strerror(w->za));
        zip_discard(w->za);
    }
    free(w->path);
    free(w);
    return st;
}

void pc_npz_writer_abort(pc_npz_writer *w) {
    if (!w) return;
    zip_discard(w->za);
    free(w->path);
    free(w);
}
