/*
 * Writing .npz archives with libzip. libzip writes the archive to a
 * temporary file beside the target and renames it into place on close, so a
 * failed or interrupted write never leaves a half-written archive; it also
 * switches to ZIP64 by itself when a member or the archive needs it.
 */
#define _POSIX_C_SOURCE 200809L
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

pc_status pc_npz_writer_open(const char *path, pc_npz_compress mode, pc_npz_writer **out,
                             pc_error *err) {
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

pc_status pc_npz_writer_add(pc_npz_writer *w, const char *key, pc_dtype t, int ndim,
                            const int64_t *shape, const void *data, pc_error *err) {
    char header[1024];
    size_t hlen = pc_npy_format_header(t, ndim, shape, header, sizeof header);
    if (!hlen || t == PC_DTYPE_F16)
        return pc_fail(err, PC_ERR_ARG, "%s: key '%s': bad dtype or shape", w->path, key);
    uint64_t count = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || !pc_mul_u64(count, (uint64_t)shape[i], &count))
            return pc_fail(err, PC_ERR_ARG, "%s: key '%s': bad shape", w->path, key);
    uint64_t nbytes, total;
    if (!pc_mul_u64(count, pc_dtype_size(t), &nbytes) || !pc_add_u64(nbytes, hlen, &total))
        return pc_fail(err, PC_ERR_RANGE, "%s: key '%s': array too large", w->path, key);
    unsigned char *buf = pc_malloc_array(total, 1);
    if (!buf) return pc_fail(err, PC_ERR_NOMEM, "%s: key '%s': out of memory", w->path, key);
    memcpy(buf, header, hlen);
    if (nbytes) memcpy(buf + hlen, data, (size_t)nbytes);

    char name[1024];
    if (snprintf(name, sizeof name, "%s.npy", key) >= (int)sizeof name) {
        free(buf);
        return pc_fail(err, PC_ERR_ARG, "%s: key too long", w->path);
    }
    zip_source_t *src = zip_source_buffer(w->za, buf, total, 1 /* libzip frees buf */);
    if (!src) {
        free(buf);
        return pc_fail(err, PC_ERR_NOMEM, "%s: key '%s': %s", w->path, key, zip_strerror(w->za));
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
