/* In-memory arrays: ownership, dtype conversion and file-layout fix-ups. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/io_internal.h"

/* Half of MemAvailable (or of the free physical pages), at least PC_MEMORY_AUTO_MIN. */
static uint64_t auto_budget(void) {
    uint64_t avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (uint64_t)kb * 1024;
                break;
            }
        fclose(f);
    }
    if (!avail) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) avail = (uint64_t)pages * (uint64_t)page;
    }
    if (!avail) return UINT64_MAX - 1; /* unknown: no limit but the allocator's */
    return avail / 2 > PC_MEMORY_AUTO_MIN ? avail / 2 : PC_MEMORY_AUTO_MIN;
}

uint64_t pc_memory_budget(uint64_t max_memory) {
    return max_memory == PC_MEMORY_AUTO ? auto_budget() : max_memory;
}

pc_status pc_io_budget_check(uint64_t need, uint64_t max_memory, const char *what, const char *how,
                             pc_error *err) {
    if (max_memory == PC_MEMORY_AUTO && need <= PC_MEMORY_AUTO_MIN) return PC_OK;
    const uint64_t budget = pc_memory_budget(max_memory);
    if (need <= budget) return PC_OK;
    char n[32], b[32];
    pc_fmt_bytes(need, n, sizeof n);
    pc_fmt_bytes(budget, b, sizeof b);
    return pc_fail(err, PC_ERR_NOMEM,
                   "%s needs %s in memory%s, more than the memory budget of "
                   "%s (max_memory)",
                   what, n, how ? how : "", b);
}

void pc_array_free(pc_array *a) {
    if (!a) return;
    if (a->priv_len_) munmap(a->priv_base_, a->priv_len_);
    else free(a->priv_base_);
    memset(a, 0, sizeof *a);
}

/* A zero anywhere makes the count 0 whatever the other dims (a header may
   hold (2^35, 2^28, 0)); otherwise the product, saturated instead of
   overflowing for shapes no loader accepts. */
int64_t pc_array_count(const pc_array *a) {
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] == 0) return 0;
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        if (__builtin_mul_overflow(n, a->shape[i], &n)) return INT64_MAX;
    return n;
}

size_t pc_array_nbytes(const pc_array *a) {
    return (size_t)pc_array_count(a) * pc_dtype_size(a->dtype);
}

pc_status pc_array_alloc(pc_array *a, pc_dtype t, int ndim, const int64_t *shape, pc_error *err) {
    memset(a, 0, sizeof *a);
    if ((unsigned)t >= PC_DTYPE_COUNT || t == PC_DTYPE_F16 || ndim < 0 || ndim > PC_MAX_DIMS)
        return pc_fail(err, PC_ERR_ARG, "pc_array_alloc: bad dtype or ndim");
    uint64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || !pc_mul_u64(count, (uint64_t)shape[i], &count))
            return pc_fail(err, PC_ERR_RANGE, "pc_array_alloc: bad shape");
        a->shape[i] = shape[i];
    }
    void *p = pc_calloc_array(count, pc_dtype_size(t));
    if (!p) return pc_fail(err, PC_ERR_NOMEM, "out of memory allocating %s array of %llu elements",
                           pc_dtype_name(t), (unsigned long long)count);
    a->dtype = t;
    a->ndim = ndim;
    a->data = p;
    a->priv_base_ = p;
    return PC_OK;
}

void pc_bswap_inplace(void *data, uint64_t count, size_t es) {
    unsigned char *p = data;
    switch (es) {
    case 2:
        for (uint64_t i = 0; i < count; i++) {
            uint16_t v;
            memcpy(&v, p + 2 * i, 2);
            v = __builtin_bswap16(v);
            memcpy(p + 2 * i, &v, 2);
        }
        break;
    case 4:
        for (uint64_t i = 0; i < count; i++) {
            uint32_t v;
            memcpy(&v, p + 4 * i, 4);
            v = __builtin_bswap32(v);
            memcpy(p + 4 * i, &v, 4);
        }
        break;
    case 8:
        for (uint64_t i = 0; i < count; i++) {
            uint64_t v;
            memcpy(&v, p + 8 * i, 8);
            v = __builtin_bswap64(v);
            memcpy(p + 8 * i, &v, 8);
        }
        break;
    default:
        break;
    }
}

/* Fortran order -> C order for any rank, element size es. */
static void fortran_to_c(const unsigned char *src, unsigned char *dst, int ndim,
                         const int64_t *shape, size_t es) {
    int64_t fstride[PC_MAX_DIMS] = {0}, idx[PC_MAX_DIMS] = {0};
    int64_t s = 1, count = 1;
    for (int k = 0; k < ndim; k++) {
        fstride[k] = s;
        s *= shape[k];
        count *= shape[k];
    }
    if (count == 0) return;
    const int last = ndim - 1;
    const int64_t inner = shape[last], istride = fstride[last];
    for (int64_t out = 0; out < count; out += inner) {
        int64_t off = 0;
        for (int k = 0; k < last; k++) off += idx[k] * fstride[k];
        for (int64_t j = 0; j < inner; j++)
            memcpy(dst + (size_t)(out + j) * es, src + (size_t)(off + j * istride) * es, es);
        for (int k = last - 1; k >= 0; k--) { /* odometer over the outer dims */
            if (++idx[k] < shape[k]) break;
            idx[k] = 0;
        }
    }
}

pc_status pc_array_from_file_data(const pc_array_info *info, void *block, void *data,
                                  pc_array *out, const char *what, pc_error *err) {
    const size_t es = pc_file_elem_size(info->dtype);
    const uint64_t count = (uint64_t)info->count;
    memset(out, 0, sizeof *out);
    if (info->big_endian == pc_host_is_le() && es > 1) pc_bswap_inplace(data, count, es);
    if (info->dtype == PC_DTYPE_F16) {
        float *f = pc_malloc_array(count, sizeof(float));
        if (!f) {
            free(block);
            return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory converting float16", what);
        }
        const unsigned char *h = data;
        for (uint64_t i = 0; i < count; i++) {
            uint16_t v;
            memcpy(&v, h + 2 * i, 2);
            f[i] = pc_half_to_float(v);
        }
        free(block);
        block = data = f;
    }
    const pc_dtype mt = pc_mem_dtype(info->dtype);
    const size_t mes = pc_dtype_size(mt);
    if (info->fortran_order && info->ndim > 1 && count > 0) {
        unsigned char *c = pc_malloc_array(count, mes);
        if (!c) {
            free(block);
            return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory reordering a Fortran array", what);
        }
        fortran_to_c(data, c, info->ndim, info->shape, mes);
        free(block);
        block = data = c;
    } else if ((uintptr_t)data % mes != 0) {
        /* Keep element access aligned: headers are 64-aligned in numpy's files,
           but not every writer pads them. */
        memmove(block, data, (size_t)count * mes);
        data = block;
    }
    out->dtype = mt;
    out->ndim = info->ndim;
    memcpy(out->shape, info->shape, sizeof out->shape);
    out->data = data;
    out->priv_base_ = block;
    return PC_OK;
}

/* ---- dtype conversion ---- */

typedef struct num {
    int is_float;
    int is_neg; /* for ints: value < 0 (then i holds it), else u holds it */
    int64_t i;
    uint64_t u;
    double f;
} num;

static num get_num(const void *p, pc_dtype t, size_t k) {
    num v = {0};
    switch (t) {
    case PC_DTYPE_BOOL:
    case PC_DTYPE_U8: v.u = ((const uint8_t *)p)[k]; break;
    case PC_DTYPE_U16: v.u = ((const uint16_t *)p)[k]; break;
    case PC_DTYPE_U32: v.u = ((const uint32_t *)p)[k]; break;
    case PC_DTYPE_U64: v.u = ((const uint64_t *)p)[k]; break;
    case PC_DTYPE_I8: v.i = ((const int8_t *)p)[k]; break;
    case PC_DTYPE_I16: v.i = ((const int16_t *)p)[k]; break;
    case PC_DTYPE_I32: v.i = ((const int32_t *)p)[k]; break;
    case PC_DTYPE_I64: v.i = ((const int64_t *)p)[k]; break;
    case PC_DTYPE_F32: v.is_float = 1; v.f = ((const float *)p)[k]; break;
    case PC_DTYPE_F64: v.is_float = 1; v.f = ((const double *)p)[k]; break;
    default: break;
    }
    const int is_signed = t == PC_DTYPE_I8 || t == PC_DTYPE_I16 || t == PC_DTYPE_I32 ||
                          t == PC_DTYPE_I64;
    if (is_signed) {
        if (v.i < 0) v.is_neg = 1;
        else v.u = (uint64_t)v.i;
    }
    return v;
}

static double num_as_double(num v) {
    return v.is_float ? v.f : v.is_neg ? (double)v.i : (double)v.u;
}

/* Integer limits of a dtype as [lo, hi] where lo <= 0. */
static void int_limits(pc_dtype t, int64_t *lo, uint64_t *hi) {
    switch (t) {
    case PC_DTYPE_BOOL: *lo = 0; *hi = 1; break;
    case PC_DTYPE_U8: *lo = 0; *hi = UINT8_MAX; break;
    case PC_DTYPE_U16: *lo = 0; *hi = UINT16_MAX; break;
    case PC_DTYPE_U32: *lo = 0; *hi = UINT32_MAX; break;
    case PC_DTYPE_U64: *lo = 0; *hi = UINT64_MAX; break;
    case PC_DTYPE_I8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case PC_DTYPE_I16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case PC_DTYPE_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

/* Converts a value to an integer of dtype t; 0 if it does not fit exactly. */
static int to_int(num v, pc_dtype t, int64_t *si, uint64_t *ui) {
    int64_t lo;
    uint64_t hi;
    int_limits(t, &lo, &hi);
    if (v.is_float) {
        if (!isfinite(v.f) || v.f != floor(v.f) || v.f < -9.2e18 || v.f > 1.8e19) return 0;
        if (v.f < 0) {
            v.is_neg = 1;
            v.i = (int64_t)v.f;
        } else {
            v.u = (uint64_t)v.f;
        }
    }
    if (v.is_neg) {
        if (v.i < lo) return 0;
        *si = v.i;
        *ui = (uint64_t)v.i;
    } else {
        if (v.u > hi) return 0;
        *si = (int64_t)v.u;
        *ui = v.u;
    }
    return 1;
}

static void put_int(void *p, pc_dtype t, size_t k, int64_t si, uint64_t ui) {
    switch (t) {
    case PC_DTYPE_BOOL:
    case PC_DTYPE_U8: ((uint8_t *)p)[k] = (uint8_t)ui; break;
    case PC_DTYPE_U16: ((uint16_t *)p)[k] = (uint16_t)ui; break;
    case PC_DTYPE_U32: ((uint32_t *)p)[k] = (uint32_t)ui; break;
    case PC_DTYPE_U64: ((uint64_t *)p)[k] = ui; break;
    case PC_DTYPE_I8: ((int8_t *)p)[k] = (int8_t)si; break;
    case PC_DTYPE_I16: ((int16_t *)p)[k] = (int16_t)si; break;
    case PC_DTYPE_I32: ((int32_t *)p)[k] = (int32_t)si; break;
    case PC_DTYPE_I64: ((int64_t *)p)[k] = si; break;
    default: break;
    }
}

pc_status pc_array_convert(pc_array *a, pc_dtype to, const char *what, pc_error *err) {
    if (a->dtype == to) return PC_OK;
    if ((unsigned)to >= PC_DTYPE_COUNT || to == PC_DTYPE_F16 || a->dtype == PC_DTYPE_F16)
        return pc_fail(err, PC_ERR_ARG, "%s: cannot convert %s to %s", what,
                       pc_dtype_name(a->dtype), pc_dtype_name(to));
    const uint64_t n = (uint64_t)pc_array_count(a);
    void *dst = pc_malloc_array(n, pc_dtype_size(to));
    if (!dst) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory converting to %s", what,
                             pc_dtype_name(to));
    const int to_float = (to == PC_DTYPE_F32 || to == PC_DTYPE_F64);
    for (uint64_t k = 0; k < n; k++) {
        num v = get_num(a->data, a->dtype, (size_t)k);
        if (to_float) {
            double d = num_as_double(v);
            if (to == PC_DTYPE_F32) ((float *)dst)[k] = (float)d;
            else ((double *)dst)[k] = d;
            continue;
        }
        int64_t si;
        uint64_t ui;
        if (!to_int(v, to, &si, &ui)) {
            double d = num_as_double(v);
            free(dst);
            return pc_fail(err, PC_ERR_RANGE, "%s: element %llu (%g) does not fit %s", what,
                           (unsigned long long)k, d, pc_dtype_name(to));
        }
        put_int(dst, to, (size_t)k, si, ui);
    }
    int ndim = a->ndim;
    int64_t shape[PC_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    pc_array_free(a);
    a->dtype = to;
    a->ndim = ndim;
    memcpy(a->shape, shape, sizeof shape);
    a->data = dst;
    a->priv_base_ = dst;
    return PC_OK;
}
