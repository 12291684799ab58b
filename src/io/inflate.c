/*
 * The one inflater of deflated .npz members (io_internal.h): whole reads and
 * row streams both run zlib's inflate here, with the same strict rules, so a
 * member's verdict never depends on how much of it is read at once.
 */
#define _POSIX_C_SOURCE 200809L
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/io_internal.h"

enum { PC_INFLATE_INBUF = 1 << 16 };

struct pc_inflate {
    z_stream zs;
    pc_inflate_src src; /* NULL: the whole stream was given at open */
    void *ctx;
    unsigned char *inbuf;
    uint64_t csize, cread; /* compressed bytes in all, read from src so far */
    uint64_t size, out;    /* declared inflated size, produced so far */
    uint32_t crc, want_crc;
    int ended; /* Z_STREAM_END seen */
    char what[1100];
};

pc_status pc_inflate_open(const void *in, pc_inflate_src src, void *ctx, uint64_t csize,
                          uint64_t size, uint32_t crc, const char *what, pc_inflate **out,
                          pc_error *err) {
    *out = NULL;
    pc_inflate *f = calloc(1, sizeof *f);
    if (!f) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
    snprintf(f->what, sizeof f->what, "%s", what);
    f->src = src;
    f->ctx = ctx;
    f->csize = csize;
    f->size = size;
    f->want_crc = crc;
    f->crc = (uint32_t)libdeflate_crc32(0, NULL, 0);
    if (src && !(f->inbuf = malloc(PC_INFLATE_INBUF))) {
        free(f);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
    }
    if (inflateInit2(&f->zs, -MAX_WBITS) != Z_OK) {
        free(f->inbuf);
        free(f);
        return pc_fail(err, PC_ERR_NOMEM, "%s: cannot start zlib's inflate", what);
    }
    if (!src) {
        /* zlib's avail_in is 32-bit: the rest is handed over as it is consumed */
        f->zs.next_in = (Bytef *)(uintptr_t)in;
        f->cread = csize;
    }
    *out = f;
    return PC_OK;
}

void pc_inflate_close(pc_inflate *f) {
    if (!f) return;
    inflateEnd(&f->zs);
    free(f->inbuf);
    free(f);
}

/* More input into zs when it has none: from src, or the next part of the given stream.
   0 when there is no more. */
static pc_status refill(pc_inflate *f, int *more, pc_error *err) {
    *more = 0;
    if (f->zs.avail_in) return *more = 1, PC_OK;
    if (!f->src) {
        /* the given stream: cread counts what is left to hand over */
        if (f->cread == 0) return PC_OK;
        uInt n = f->cread > (UINT64_C(1) << 30) ? (1u << 30) : (uInt)f->cread;
        f->zs.avail_in = n;
        f->cread -= n;
        *more = 1;
        return PC_OK;
    }
    if (f->cread >= f->csize) return PC_OK;
    uint64_t want = f->csize - f->cread;
    size_t n = want < PC_INFLATE_INBUF ? (size_t)want : PC_INFLATE_INBUF;
    int64_t got = f->src(f->ctx, f->inbuf, n, err);
    if (got < 0) return err ? err->code : PC_ERR_IO;
    if (got == 0)
        return pc_fail(err, PC_ERR_FORMAT, "%s: compressed data ends early (truncated?)", f->what);
    f->cread += (uint64_t)got;
    f->zs.next_in = f->inbuf;
    f->zs.avail_in = (uInt)got;
    *more = 1;
    return PC_OK;
}

/* One inflate step into [dst, dst + n): *made bytes written. */
static pc_status step(pc_inflate *f, unsigned char *dst, size_t n, size_t *made, pc_error *err) {
    *made = 0;
    int more;
    pc_status st = refill(f, &more, err);
    if (st) return st;
    if (!more)
        return pc_fail(err, PC_ERR_FORMAT, "%s: corrupt deflate data (the stream does not end "
                       "within its %llu compressed bytes)", f->what,
                       (unsigned long long)f->csize);
    f->zs.next_out = dst;
    f->zs.avail_out = (uInt)n;
    int r = inflate(&f->zs, Z_NO_FLUSH);
    *made = n - f->zs.avail_out;
    if (r == Z_STREAM_END) {
        f->ended = 1;
        return PC_OK;
    }
    if (r == Z_OK || (r == Z_BUF_ERROR && *made == 0 && f->zs.avail_in == 0)) return PC_OK;
    return pc_fail(err, PC_ERR_FORMAT, "%s: corrupt deflate data (%s)", f->what,
                   r == Z_MEM_ERROR ? "out of memory"
                   : f->zs.msg      ? f->zs.msg
                                    : "bad stream");
}

pc_status pc_inflate_read(pc_inflate *f, void *dst, uint64_t n, pc_error *err) {
    unsigned char *p = dst;
    if (n > f->size - f->out)
        return pc_fail(err, PC_ERR_FORMAT, "%s: read past its declared size of %llu bytes",
                       f->what, (unsigned long long)f->size);
    while (n > 0) {
        if (f->ended)
            return pc_fail(err, PC_ERR_FORMAT, "%s: corrupt deflate data (inflates short of its "
                           "declared size)", f->what);
        size_t chunk = n > (UINT64_C(1) << 30) ? ((size_t)1 << 30) : (size_t)n;
        size_t made = 0;
        pc_status st = step(f, p, chunk, &made, err);
        if (st) return st;
        f->crc = (uint32_t)libdeflate_crc32(f->crc, p, made);
        f->out += made;
        p += made;
        n -= made;
    }
    return PC_OK;
}

pc_status pc_inflate_finish(pc_inflate *f, pc_error *err) {
    if (f->out != f->size)
        return pc_fail(err, PC_ERR_FORMAT, "%s: %llu of %llu bytes read before the end",
                       f->what, (unsigned long long)f->out, (unsigned long long)f->size);
    while (!f->ended) {
        unsigned char extra;
        size_t made = 0;
        pc_status st = step(f, &extra, 1, &made, err);
        if (st) return st;
        if (made)
            return pc_fail(err, PC_ERR_FORMAT, "%s: corrupt deflate data (inflates past its "
                           "declared size)", f->what);
    }
    if (f->crc != f->want_crc)
        return pc_fail(err, PC_ERR_FORMAT, "%s: CRC mismatch (corrupt data)", f->what);
    return PC_OK;
}

pc_status pc_inflate_whole(const void *raw, uint64_t csize, uint64_t size, uint32_t crc,
                           const char *what, void *dst, pc_error *err) {
    pc_inflate *f = NULL;
    pc_status st = pc_inflate_open(raw, NULL, NULL, csize, size, crc, what, &f, err);
    if (!st) st = pc_inflate_read(f, dst, size, err);
    if (!st) st = pc_inflate_finish(f, err);
    pc_inflate_close(f);
    return st;
}
