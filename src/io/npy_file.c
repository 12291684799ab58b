/* Single .npy files: load, map read-only, save (temporary name, then rename). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"

static pc_status read_exact(int fd, void *buf, uint64_t n, uint64_t off, const char *path,
                            pc_error *err) {
    unsigned char *p = buf;
    while (n > 0) {
        size_t chunk = n > (UINT64_C(1) << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t got = pread(fd, p, chunk, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            return pc_fail(err, PC_ERR_IO, "%s: read failed: %s", path,
                           got < 0 ? strerror(errno) : "unexpected end of file");
        p += got;
        off += (uint64_t)got;
        n -= (uint64_t)got;
    }
    return PC_OK;
}

static pc_status open_regular(const char *path, int *fd, uint64_t *size, pc_error *err) {
    return pc_open_regular(path, fd, size, err);
}

static pc_status read_info(int fd, uint64_t size, const char *path, pc_array_info *info,
                           pc_error *err) {
    unsigned char pre[PC_NPY_PREAMBLE];
    if (size < 10) return pc_fail(err, PC_ERR_FORMAT, "%s: file of %llu bytes is too short for "
                                  ".npy", path, (unsigned long long)size);
    size_t plen = size < PC_NPY_PREAMBLE ? (size_t)size : PC_NPY_PREAMBLE;
    pc_status st = read_exact(fd, pre, plen, 0, path, err);
    if (st) return st;
    size_t hlen = pc_npy_header_len(pre, plen, path, err);
    if (!hlen) return err ? err->code : PC_ERR_FORMAT;
    if (hlen > size) return pc_fail(err, PC_ERR_FORMAT, "%s: .npy header runs past end of file",
                                    path);
    unsigned char *h = malloc(hlen);
    if (!h) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    st = read_exact(fd, h, hlen, 0, path, err);
    if (!st) st = pc_npy_parse_header(h, hlen, size, path, info, err);
    free(h);
    return st;
}

pc_status pc_npy_load(const char *path, pc_array *out, pc_error *err) {
    return pc_npy_load_max(path, PC_MEMORY_AUTO, out, err);
}

pc_status pc_npy_load_max(const char *path, uint64_t max_memory, pc_array *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    int fd = -1;
    uint64_t size = 0;
    pc_array_info info;
    pc_status st = open_regular(path, &fd, &size, err);
    if (st) return st;
    st = read_info(fd, size, path, &info, err);
    uint64_t need = info.data_bytes, extra = 0;
    if (!st && (info.dtype == PC_DTYPE_F16 || (info.fortran_order && info.ndim > 1)) &&
        (!pc_mul_u64((uint64_t)info.count, 4, &extra) || !pc_add_u64(need, extra, &need)))
        need = UINT64_MAX;
    if (!st) st = pc_io_budget_check(need, max_memory, path, NULL, err);
    if (!st) {
        void *block = pc_malloc_array(info.data_bytes, 1);
        if (!block) st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for %llu bytes", path,
                                 (unsigned long long)info.data_bytes);
        else if ((st = read_exact(fd, block, info.data_bytes, info.data_offset, path, err)))
            free(block);
        else st = pc_array_from_file_data(&info, block, block, out, path, err);
    }
    close(fd);
    return st;
}

pc_status pc_npy_map(const char *path, pc_array *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    int fd = -1;
    uint64_t size = 0;
    pc_array_info info;
    pc_status st = open_regular(path, &fd, &size, err);
    if (st) return st;
    st = read_info(fd, size, path, &info, err);
    if (st) {
        close(fd);
        return st;
    }
    size_t es = pc_file_elem_size(info.dtype);
    if (info.dtype == PC_DTYPE_F16 || (info.big_endian == pc_host_is_le() && es > 1) ||
        (info.fortran_order && info.ndim > 1) || info.data_offset % es != 0) {
        close(fd);
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%s: cannot map: needs conversion (float16, "
                       "foreign byte order, Fortran order or unaligned data)", path);
    }
    void *base = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED) return pc_fail(err, PC_ERR_IO, "%s: mmap failed: %s", path,
                                           strerror(errno));
    out->dtype = info.dtype;
    out->ndim = info.ndim;
    memcpy(out->shape, info.shape, sizeof out->shape);
    out->data = (unsigned char *)base + info.data_offset;
    out->priv_base_ = base;
    out->priv_len_ = (size_t)size;
    return PC_OK;
}

pc_status pc_npy_save(const char *path, const pc_array *a, pc_error *err) {
    char header[1024];
    size_t hlen = pc_npy_format_header(a->dtype, a->ndim, a->shape, header, sizeof header);
    if (!hlen) return pc_fail(err, PC_ERR_ARG, "%s: cannot format a .npy header for this array",
                              path);
    char tmp[4096];
    FILE *f = pc_tmp_open(path, tmp, sizeof tmp, err);
    if (!f) return err ? err->code : PC_ERR_IO;
    size_t nbytes = pc_array_nbytes(a);
    if (fwrite(header, 1, hlen, f) != hlen || (nbytes && fwrite(a->data, 1, nbytes, f) != nbytes)) {
        fclose(f);
        unlink(tmp);
        return pc_fail(err, PC_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    }
    return pc_tmp_commit(f, tmp, path, err);
}
