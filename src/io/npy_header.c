/*
 * The .npy header: "\x93NUMPY", version, little-endian length, then a Python
 * dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline. This parser accepts exactly that grammar
 * (as numpy's own safe parser does) and checks every size against the file.
 */
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "io/io_internal.h"

static const struct {
    char kind;
    int size;
    pc_dtype t;
} dtype_table[] = {
    {'b', 1, PC_DTYPE_BOOL}, {'u', 1, PC_DTYPE_U8},  {'i', 1, PC_DTYPE_I8},
    {'u', 2, PC_DTYPE_U16},  {'i', 2, PC_DTYPE_I16}, {'u', 4, PC_DTYPE_U32},
    {'i', 4, PC_DTYPE_I32},  {'u', 8, PC_DTYPE_U64}, {'i', 8, PC_DTYPE_I64},
    {'f', 2, PC_DTYPE_F16},  {'f', 4, PC_DTYPE_F32}, {'f', 8, PC_DTYPE_F64},
};

static const char *const dtype_names[PC_DTYPE_COUNT] = {
    "bool",   "uint8", "int8",   "uint16",  "int16",   "uint32",
    "int32",  "uint64", "int64", "float16", "float32", "float64",
};

size_t pc_file_elem_size(pc_dtype t) {
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (dtype_table[i].t == t) return (size_t)dtype_table[i].size;
    return 0;
}

size_t pc_dtype_size(pc_dtype t) { return pc_file_elem_size(t); }

pc_dtype pc_mem_dtype(pc_dtype t) { return t == PC_DTYPE_F16 ? PC_DTYPE_F32 : t; }

const char *pc_dtype_name(pc_dtype t) {
    return (unsigned)t < PC_DTYPE_COUNT ? dtype_names[t] : "invalid";
}

int pc_dtype_is_int(pc_dtype t) { return t >= PC_DTYPE_U8 && t <= PC_DTYPE_I64; }

/* ---- a tiny cursor over the dict literal ---- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int accept(cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted string ('...' or "..."), no escapes (numpy never writes them). */
static int parse_string(cursor *c, char *out, size_t cap) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p == '\0' || n + 1 >= cap) return 0;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return 0;
    c->p++;
    out[n] = '\0';
    return 1;
}

static int parse_word(cursor *c, const char *word) {
    skip_ws(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

/* (d0, d1, ...) with non-negative decimal ints, optional trailing comma. */
static int parse_shape(cursor *c, pc_array_info *info, char *why, size_t whycap) {
    if (!accept(c, '(')) return snprintf(why, whycap, "shape is not a tuple"), 0;
    info->ndim = 0;
    for (;;) {
        if (accept(c, ')')) return 1;
        skip_ws(c);
        if (c->p >= c->end || !isdigit((unsigned char)*c->p))
            return snprintf(why, whycap, "shape entry is not a non-negative integer"), 0;
        uint64_t v = 0;
        while (c->p < c->end && isdigit((unsigned char)*c->p)) {
            if (v > (UINT64_C(1) << 62) / 10)
                return snprintf(why, whycap, "shape entry too large"), 0;
            v = v * 10 + (uint64_t)(*c->p++ - '0');
        }
        if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++; /* Python 2 longs */
        if (info->ndim == PC_MAX_DIMS)
            return snprintf(why, whycap, "more than %d dimensions", PC_MAX_DIMS), 0;
        info->shape[info->ndim++] = (int64_t)v;
        if (accept(c, ',')) continue;
        if (accept(c, ')')) return 1;
        return snprintf(why, whycap, "malformed shape tuple"), 0;
    }
}

static int parse_descr(const char *s, pc_array_info *info, char *why, size_t whycap) {
    size_t len = strlen(s);
    char order = '|';
    if (len > 0 && strchr("<>|=", s[0])) order = *s++, len--;
    if (len < 2) return snprintf(why, whycap, "dtype '%s' not understood", s), 0;
    char kind = s[0];
    int size = 0;
    for (size_t i = 1; i < len; i++) {
        if (!isdigit((unsigned char)s[i]) || size > 1000)
            return snprintf(why, whycap, "dtype '%s' not understood", s), 0;
        size = size * 10 + (s[i] - '0');
    }
    if (kind == '?') kind = 'b';
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++) {
        if (dtype_table[i].kind == kind && dtype_table[i].size == size) {
            info->dtype = dtype_table[i].t;
            info->big_endian = size > 1 && (order == '>' || (order == '=' && !pc_host_is_le()));
            return 1;
        }
    }
    return snprintf(why, whycap,
                    "unsupported dtype '%c%c%d' (expected bool, u1..u8, i1..i8, f2, f4 or f8)",
                    order, s[0], size),
           0;
}

static int parse_dict(cursor *c, pc_array_info *info, char *why, size_t whycap) {
    int have_descr = 0, have_order = 0, have_shape = 0;
    if (!accept(c, '{')) return snprintf(why, whycap, "header is not a dict"), 0;
    while (!accept(c, '}')) {
        char key[32], val[64];
        if (!parse_string(c, key, sizeof key) || !accept(c, ':'))
            return snprintf(why, whycap, "malformed header dict"), 0;
        if (strcmp(key, "descr") == 0) {
            if (!parse_string(c, val, sizeof val))
                return snprintf(why, whycap, "'descr' is not a simple dtype string "
                                             "(structured dtypes are unsupported)"), 0;
            if (!parse_descr(val, info, why, whycap)) return 0;
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (parse_word(c, "True")) info->fortran_order = 1;
            else if (parse_word(c, "False")) info->fortran_order = 0;
            else return snprintf(why, whycap, "'fortran_order' is not True or False"), 0;
            have_order = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (!parse_shape(c, info, why, whycap)) return 0;
            have_shape = 1;
        } else {
            return snprintf(why, whycap, "unexpected header key '%s'", key), 0;
        }
        if (!accept(c, ',')) {
            if (accept(c, '}')) break;
            return snprintf(why, whycap, "malformed header dict"), 0;
        }
    }
    if (!have_descr || !have_order || !have_shape)
        return snprintf(why, whycap, "header lacks '%s'",
                        !have_descr ? "descr" : !have_order ? "fortran_order" : "shape"), 0;
    return 1;
}

size_t pc_npy_header_len(const unsigned char *b, size_t len, const char *what, pc_error *err) {
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
        pc_fail(err, PC_ERR_FORMAT, "%s: not a .npy array (expected magic \\x93NUMPY)", what);
        return 0;
    }
    unsigned major = b[6];
    if (major == 1) {
        size_t hl = (size_t)(b[8] | (b[9] << 8));
        if (hl < 2) { /* cannot hold even "{}" */
            pc_fail(err, PC_ERR_FORMAT, "%s: .npy header length %zu is too short", what, hl);
            return 0;
        }
        return 10 + hl;
    }
    if (major == 2 || major == 3) {
        if (len < 12) {
            pc_fail(err, PC_ERR_FORMAT, "%s: truncated .npy header", what);
            return 0;
        }
        uint32_t hl = (uint32_t)b[8] | ((uint32_t)b[9] << 8) | ((uint32_t)b[10] << 16) |
                      ((uint32_t)b[11] << 24);
        if (hl > PC_NPY_MAX_HEADER) {
            pc_fail(err, PC_ERR_FORMAT, "%s: .npy header length %" PRIu32 " exceeds %u bytes", what,
                    hl, PC_NPY_MAX_HEADER);
            return 0;
        }
        if (hl < 2) {
            pc_fail(err, PC_ERR_FORMAT, "%s: .npy header length %u is too short", what,
                    (unsigned)hl);
            return 0;
        }
        return 12 + (size_t)hl;
    }
    pc_fail(err, PC_ERR_UNSUPPORTED, "%s: .npy format version %u.%u (expected 1, 2 or 3)", what,
            major, b[7]);
    return 0;
}

pc_status pc_npy_parse_header(const void *buf, size_t len, uint64_t file_size, const char *what,
                              pc_array_info *info, pc_error *err) {
    const unsigned char *b = buf;
    memset(info, 0, sizeof *info);
    size_t total = pc_npy_header_len(b, len, what, err);
    if (total == 0) return err ? err->code : PC_ERR_FORMAT;
    if (total > len || total > file_size)
        return pc_fail(err, PC_ERR_FORMAT, "%s: .npy header claims %zu bytes but only %" PRIu64
                       " are present", what, total, len < file_size ? (uint64_t)len : file_size);
    cursor c = {(const char *)b + (b[6] == 1 ? 10 : 12), (const char *)b + total};
    char why[160];
    if (!parse_dict(&c, info, why, sizeof why))
        return pc_fail(err, PC_ERR_FORMAT, "%s: bad .npy header: %s", what, why);
    skip_ws(&c); /* numpy pads with spaces and a newline, nothing else */
    if (c.p != c.end)
        return pc_fail(err, PC_ERR_FORMAT, "%s: bad .npy header: unexpected bytes after the dict",
                       what);
    uint64_t count = 1;
    for (int i = 0; i < info->ndim; i++)
        if (!pc_mul_u64(count, (uint64_t)info->shape[i], &count) || count > (UINT64_C(1) << 62))
            return pc_fail(err, PC_ERR_FORMAT, "%s: .npy shape element count overflows", what);
    uint64_t bytes;
    if (!pc_mul_u64(count, pc_file_elem_size(info->dtype), &bytes))
        return pc_fail(err, PC_ERR_FORMAT, "%s: .npy data size overflows", what);
    info->count = (int64_t)count;
    info->data_bytes = bytes;
    info->data_offset = total;
    if (file_size != UINT64_MAX && (file_size - total) != bytes)
        return pc_fail(err, PC_ERR_FORMAT, "%s: .npy header says %" PRIu64 " data bytes (%s, %" PRIu64
                       " elements) but the array holds %" PRIu64, what, bytes,
                       pc_dtype_name(info->dtype), count, file_size - total);
    return PC_OK;
}

size_t pc_npy_format_header(pc_dtype t, int ndim, const int64_t *shape, char *out, size_t cap) {
    static const char *const descr[PC_DTYPE_COUNT] = {
        "|b1", "|u1", "|i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8"};
    if ((unsigned)t >= PC_DTYPE_COUNT || ndim < 0 || ndim > PC_MAX_DIMS) return 0;
    char dict[512];
    char d[8];
    if (descr[t][0] == '|') snprintf(d, sizeof d, "%s", descr[t]);
    else snprintf(d, sizeof d, "%c%s", pc_host_is_le() ? '<' : '>', descr[t]);
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", d);
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%" PRId64 "%s", shape[i],
                      (ndim == 1 || i + 1 < ndim) ? ", " : "");
    if (ndim == 1) n -= 1; /* "(5,)" rather than "(5, )" */
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t pre = 10, total = pre + (size_t)n + 1;
    total = (total + 63) / 64 * 64;
    if (total - pre > 65535) return 0; /* cannot happen with <= 8 dims */
    if (total > cap) return 0;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)((total - pre) & 0xff);
    out[9] = (char)((total - pre) >> 8);
    memcpy(out + pre, dict, (size_t)n);
    memset(out + pre + n, ' ', total - pre - (size_t)n - 1);
    out[total - 1] = '\n';
    return total;
}
