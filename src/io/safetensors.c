/* safetensors reader and writer (see include/perfcast/safetensors.h). */
#define _DEFAULT_SOURCE
#include "perfcast/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <libdeflate.h>

#include "common/util.h"
#include "io/io_internal.h"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this host is not"
#endif
#endif

/* Longest name quoted in an error message (messages are PC_ERROR_MSG_MAX). */
#define NAME_Q "%.160s"
#define MAX_SAFE_INT 9007199254740992.0 /* 2^53: exact in a double */

/* ---- dtypes ------------------------------------------------------------ */

static const struct {
    const char *name;
    pc_dtype t;
    size_t size; /* bytes per element in the file */
} k_dtypes[] = {
    {"BOOL", PC_DTYPE_BOOL, 1}, {"U8", PC_DTYPE_U8, 1},   {"I8", PC_DTYPE_I8, 1},
    {"U16", PC_DTYPE_U16, 2},   {"I16", PC_DTYPE_I16, 2}, {"U32", PC_DTYPE_U32, 4},
    {"I32", PC_DTYPE_I32, 4},   {"U64", PC_DTYPE_U64, 8}, {"I64", PC_DTYPE_I64, 8},
    {"F16", PC_DTYPE_F16, 2},   {"F32", PC_DTYPE_F32, 4}, {"F64", PC_DTYPE_F64, 8},
};
#define N_DTYPES (sizeof k_dtypes / sizeof k_dtypes[0])

/* Dtypes of the format that perfcast does not handle. */
static const char *const k_unsupported[] = {"BF16", "F8_E4M3", "F8_E5M2", "F8_E8M0",
                                            "F4",   "F6_E2M3", "F6_E3M2", "C64"};

const char *pc_st_dtype_name(pc_dtype t) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (k_dtypes[i].t == t) return k_dtypes[i].name;
    return NULL;
}

static size_t elem_size(pc_dtype t) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (k_dtypes[i].t == t) return k_dtypes[i].size;
    return 0;
}

/* ---- small helpers ------------------------------------------------------ */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* 1 if s[0..n) is valid UTF-8 without NUL bytes. */
static int utf8_ok(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0) return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned cp, min;
        if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

static uint64_t get_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

typedef struct st_meta {
    char *key;
    char *value;
} st_meta;

static int cmp_meta(const void *a, const void *b) {
    return strcmp(((const st_meta *)a)->key, ((const st_meta *)b)->key);
}

/* ---- reader ------------------------------------------------------------- */

typedef struct st_tensor {
    char *name;
    pc_dtype dtype;
    int ndim;
    int64_t shape[PC_MAX_DIMS];
    uint64_t begin, end;
    const unsigned char *data;
    void *copy; /* aligned copy when the file's data is misaligned */
} st_tensor;

struct pc_st {
    char *what;
    unsigned char *base;
    size_t len;
    int mapped;
    st_tensor *t;
    int n;
    st_meta *meta;
    int nmeta;
    char crc[9]; /* PC_ST_CRC_KEY's value, "" when absent (not among meta) */
    uint64_t max_memory; /* the budget of parsing the header (PC_MEMORY_AUTO) */
};

void pc_st_close(pc_st *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        free(r->t[i].name);
        free(r->t[i].copy);
    }
    free(r->t);
    for (int i = 0; i < r->nmeta; i++) {
        free(r->meta[i].key);
        free(r->meta[i].value);
    }
    free(r->meta);
    if (r->base) {
        if (r->mapped)
            munmap(r->base, r->len);
        else
            free(r->base);
    }
    free(r->what);
    free(r);
}

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int cmp_tensor_offsets(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* An exact integer in [0, 2^53]; 0 if the item is anything else. */
static int get_uint(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return 0;
    double d = item->valuedouble;
    if (!(d >= 0.0 && d <= MAX_SAFE_INT)) return 0;
    uint64_t u = (uint64_t)d;
    if ((double)u != d) return 0;
    *out = u;
    return 1;
}

static pc_status parse_metadata(pc_st *r, const cJSON *obj, pc_error *err) {
    const char *what = r->what;
    if (!cJSON_IsObject(obj))
        return pc_fail(err, PC_ERR_FORMAT, "%s: \"__metadata__\": expected an object of strings",
                       what);
    int n = cJSON_GetArraySize(obj);
    r->meta = calloc((size_t)n + 1, sizeof *r->meta);
    if (!r->meta) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (!cJSON_IsString(c) || !c->valuestring)
            return pc_fail(err, PC_ERR_FORMAT,
                           "%s: \"__metadata__\": value of '" NAME_Q "': expected a string", what,
                           c->string ? c->string : "");
        if (c->string && strcmp(c->string, PC_ST_CRC_KEY) == 0) { /* the checksum: kept apart */
            if (r->crc[0])
                return pc_fail(err, PC_ERR_FORMAT, "%s: \"__metadata__\": duplicate key '%s'; "
                               "expected unique keys", what, PC_ST_CRC_KEY);
            if (strlen(c->valuestring) != 8 || strspn(c->valuestring, "0123456789abcdef") != 8)
                return pc_fail(err, PC_ERR_FORMAT, "%s: metadata '%s' is '%s', expected 8 "
                               "lowercase hex digits written by perfcast", what, PC_ST_CRC_KEY,
                               c->valuestring);
            memcpy(r->crc, c->valuestring, 9);
            continue;
        }
        st_meta *m = &r->meta[r->nmeta];
        m->key = dup_str(c->string ? c->string : "");
        m->value = dup_str(c->valuestring);
        if (!m->key || !m->value) {
            free(m->key);
            free(m->value);
            return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
        }
        r->nmeta++;
    }
    qsort(r->meta, (size_t)r->nmeta, sizeof *r->meta, cmp_meta);
    for (int i = 1; i < r->nmeta; i++)
        if (strcmp(r->meta[i - 1].key, r->meta[i].key) == 0)
            return pc_fail(err, PC_ERR_FORMAT, "%s: \"__metadata__\": duplicate key '" NAME_Q
                           "'; expected unique keys", what, r->meta[i].key);
    return PC_OK;
}

static pc_status parse_tensor(pc_st *r, const cJSON *obj, st_tensor *t, uint64_t buf_len,
                              pc_error *err) {
    const char *what = r->what, *name = t->name;
    if (!cJSON_IsObject(obj))
        return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': expected an object with "
                       "dtype, shape and data_offsets", what, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(obj, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(obj, "data_offsets");
    if (!cJSON_IsString(dt) || !dt->valuestring)
        return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': expected a string \"dtype\"",
                       what, name);
    size_t k = 0;
    while (k < N_DTYPES && strcmp(k_dtypes[k].name, dt->valuestring) != 0) k++;
    if (k == N_DTYPES) {
        for (size_t u = 0; u < sizeof k_unsupported / sizeof k_unsupported[0]; u++)
            if (strcmp(k_unsupported[u], dt->valuestring) == 0)
                return pc_fail(err, PC_ERR_UNSUPPORTED, "%s: tensor '" NAME_Q "': dtype %s is "
                               "not supported (expected BOOL, U8..U64, I8..I64, F16, F32 or F64)",
                               what, name, dt->valuestring);
        return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': unknown dtype '%.40s' "
                       "(expected BOOL, U8..U64, I8..I64, F16, F32 or F64)", what, name,
                       dt->valuestring);
    }
    t->dtype = k_dtypes[k].t;
    if (!cJSON_IsArray(sh))
        return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': expected a \"shape\" array",
                       what, name);
    int nd = cJSON_GetArraySize(sh);
    if (nd > PC_MAX_DIMS)
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%s: tensor '" NAME_Q "': %d dimensions; at most "
                       "%d are supported", what, name, nd, PC_MAX_DIMS);
    uint64_t count = 1;
    int d = 0;
    for (const cJSON *c = sh->child; c; c = c->next, d++) {
        uint64_t v;
        if (!get_uint(c, &v))
            return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': shape[%d]: expected a "
                           "non-negative integer", what, name, d);
        if (!pc_mul_u64(count, v, &count))
            return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': shape product "
                           "overflows 64 bits", what, name);
        t->shape[d] = (int64_t)v;
    }
    t->ndim = nd;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !get_uint(off->child, &t->begin) ||
        !get_uint(off->child->next, &t->end))
        return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': expected \"data_offsets\": "
                       "[begin, end] of non-negative integers", what, name);
    if (t->begin > t->end || t->end > buf_len)
        return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': data_offsets [%llu, %llu] "
                       "out of range; expected begin <= end <= %llu (the data buffer size)",
                       what, name, (unsigned long long)t->begin, (unsigned long long)t->end,
                       (unsigned long long)buf_len);
    uint64_t nbytes;
    if (!pc_mul_u64(count, k_dtypes[k].size, &nbytes))
        return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': shape needs %llu elements "
                       "of %s, over 2^64 bytes", what, name, (unsigned long long)count,
                       k_dtypes[k].name);
    if (nbytes != t->end - t->begin)
        return pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': data_offsets [%llu, %llu] "
                       "span %llu bytes; expected %llu (%llu elements of %s)", what, name,
                       (unsigned long long)t->begin, (unsigned long long)t->end,
                       (unsigned long long)(t->end - t->begin), (unsigned long long)nbytes,
                       (unsigned long long)count, k_dtypes[k].name);
    return PC_OK;
}

/* Checks that the tensors tile [0, buf_len) exactly. */
static pc_status check_layout(pc_st *r, uint64_t buf_len, pc_error *err) {
    const char *what = r->what;
    const st_tensor **by_off = malloc(((size_t)r->n + 1) * sizeof *by_off);
    if (!by_off) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
    for (int i = 0; i < r->n; i++) by_off[i] = &r->t[i];
    qsort(by_off, (size_t)r->n, sizeof *by_off, cmp_tensor_offsets);
    uint64_t pos = 0;
    const st_tensor *prev = NULL;
    pc_status st = PC_OK;
    for (int i = 0; i < r->n && st == PC_OK; i++) {
        const st_tensor *t = by_off[i];
        if (t->begin < pos)
            st = pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': data_offsets [%llu, %llu] "
                         "overlap tensor '" NAME_Q "' (ends at %llu); expected begin %llu",
                         what, t->name, (unsigned long long)t->begin,
                         (unsigned long long)t->end, prev ? prev->name : "",
                         (unsigned long long)pos, (unsigned long long)pos);
        else if (t->begin > pos)
            st = pc_fail(err, PC_ERR_FORMAT, "%s: tensor '" NAME_Q "': data_offsets [%llu, %llu] "
                         "leave a hole of %llu bytes after %s%s%s; expected begin %llu",
                         what, t->name, (unsigned long long)t->begin,
                         (unsigned long long)t->end, (unsigned long long)(t->begin - pos),
                         prev ? "tensor '" : "the buffer start", prev ? prev->name : "",
                         prev ? "'" : "", (unsigned long long)pos);
        pos = t->end;
        prev = t;
    }
    if (st == PC_OK && pos != buf_len)
        st = pc_fail(err, PC_ERR_FORMAT, "%s: data buffer has %llu bytes but the tensors cover "
                     "%llu; expected no bytes after the last tensor", what,
                     (unsigned long long)buf_len, (unsigned long long)pos);
    free(by_off);
    return st;
}

/* Parses and validates r->base[0..r->len). */
/* ---- the checksum perfcast's writer records (PC_ST_CRC_KEY) ---------------- */

#define CRC_FIELD "\"" PC_ST_CRC_KEY "\":\""
#define CRC_ZEROS "00000000"

/* Offset of the checksum's 8 hex digits in the header h[0 .. hl), or -1. A raw
   quote cannot occur inside a JSON string, so the first match is the key. */
static long crc_offset(const unsigned char *h, size_t hl) {
    size_t fl = sizeof CRC_FIELD - 1;
    for (size_t i = 0; i + fl + 8 <= hl; i++)
        if (h[i] == '"' && memcmp(h + i, CRC_FIELD, fl) == 0) return (long)(i + fl);
    return -1;
}

/* CRC-32 of buf[0 .. len) with the 8 bytes at off read as "00000000". */
static uint32_t crc_with_zeros(const unsigned char *buf, size_t len, size_t off) {
    uint32_t c = libdeflate_crc32(0, buf, off);
    c = libdeflate_crc32(c, CRC_ZEROS, 8);
    return libdeflate_crc32(c, buf + off + 8, len - off - 8);
}

/*
 * A file whose metadata carries PC_ST_CRC_KEY: the CRC-32 of every byte of
 * the file, its 8 hex digits read as zeros, must be the recorded value.
 */
static pc_status check_crc(const pc_st *r, pc_error *err) {
    const char *v = r->crc;
    if (!v[0]) return PC_OK;
    uint64_t hlen = get_le64(r->base);
    long off = crc_offset(r->base + 8, (size_t)hlen);
    unsigned long want = strtoul(v, NULL, 16);
    if (off < 0)
        return pc_fail(err, PC_ERR_FORMAT, "%s: metadata '%s' is not written the way perfcast "
                       "writes it (\"%s\":\"<8 hex digits>\")", r->what, PC_ST_CRC_KEY,
                       PC_ST_CRC_KEY);
    uint32_t got = crc_with_zeros(r->base, r->len, (size_t)off + 8);
    if (got != (uint32_t)want)
        return pc_fail(err, PC_ERR_FORMAT, "%s: checksum mismatch: metadata '%s' records %s but "
                       "the contents give %08x: the file was corrupted or edited after perfcast "
                       "wrote it", r->what, PC_ST_CRC_KEY, v, (unsigned)got);
    return PC_OK;
}

static pc_status parse(pc_st *r, pc_error *err) {
    const char *what = r->what;
    if (r->len < 8)
        return pc_fail(err, PC_ERR_FORMAT, "%s: file of %zu bytes is too short; expected an "
                       "8-byte header length", what, r->len);
    uint64_t hlen = get_le64(r->base);
    uint64_t avail = r->len - 8;
    if (hlen > avail)
        return pc_fail(err, PC_ERR_FORMAT, "%s: header length %llu runs past the end of the file "
                       "(%llu bytes after the length field)", what, (unsigned long long)hlen,
                       (unsigned long long)avail);
    if (hlen > PC_ST_MAX_HEADER)
        return pc_fail(err, PC_ERR_FORMAT, "%s: header length %llu is over the limit of %u bytes",
                       what, (unsigned long long)hlen, PC_ST_MAX_HEADER);
    if (hlen < 2)
        return pc_fail(err, PC_ERR_FORMAT, "%s: header of %llu bytes is too short; expected a "
                       "JSON object", what, (unsigned long long)hlen);
    const unsigned char *h = r->base + 8;
    if (!utf8_ok(h, (size_t)hlen))
        return pc_fail(err, PC_ERR_FORMAT, "%s: header is not valid UTF-8 (or holds a NUL byte)",
                       what);
    if (h[0] != '{')
        return pc_fail(err, PC_ERR_FORMAT, "%s: header does not start with '{'; expected a JSON "
                       "object", what);
    /* Parsing holds the text twice (a copy, the strings) and a cJSON node per
       value, at most one per 2 bytes ("0,"): bounded before anything is read. */
    const uint64_t parse_need = 2 * hlen + hlen / 2 * (uint64_t)sizeof(cJSON);
    pc_status bst = pc_io_budget_check(parse_need, r->max_memory, what, " to parse its header",
                                       err);
    if (bst) return bst;
    /* cJSON gets its own NUL-terminated copy: hlen is bounded by the file. */
    char *text = malloc((size_t)hlen + 1);
    if (!text) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
    memcpy(text, h, (size_t)hlen);
    text[hlen] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)hlen, &end, 0);
    pc_status st = PC_OK;
    if (!root) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        st = pc_fail(err, PC_ERR_FORMAT, "%s: header is not valid JSON (near byte %zu of %llu)",
                     what, at, (unsigned long long)hlen);
        goto done;
    }
    for (const char *p = end; p && p < text + hlen; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: header has bytes after the JSON object (at "
                         "byte %zu); expected only space padding", what, (size_t)(p - text));
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: header is not a JSON object", what);
        goto done;
    }
    int nent = cJSON_GetArraySize(root);
    r->t = calloc((size_t)nent + 1, sizeof *r->t);
    if (!r->t) {
        st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
        goto done;
    }
    uint64_t buf_len = avail - hlen;
    int seen_meta = 0;
    for (const cJSON *c = root->child; c && st == PC_OK; c = c->next) {
        const char *key = c->string ? c->string : "";
        if (strcmp(key, "__metadata__") == 0) {
            if (seen_meta++)
                st = pc_fail(err, PC_ERR_FORMAT, "%s: duplicate \"__metadata__\"; expected one",
                             what);
            else
                st = parse_metadata(r, c, err);
            continue;
        }
        st_tensor *t = &r->t[r->n];
        t->name = dup_str(key);
        if (!t->name) {
            st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
            break;
        }
        r->n++;
        st = parse_tensor(r, c, t, buf_len, err);
    }
    if (st != PC_OK) goto done;
    qsort(r->t, (size_t)r->n, sizeof *r->t, cmp_tensor_name);
    for (int i = 1; i < r->n; i++)
        if (strcmp(r->t[i - 1].name, r->t[i].name) == 0) {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: duplicate tensor name '" NAME_Q "'; expected "
                         "unique names", what, r->t[i].name);
            goto done;
        }
    st = check_layout(r, buf_len, err);
    if (st == PC_OK) st = check_crc(r, err);
    if (st != PC_OK) goto done;
    const unsigned char *data0 = r->base + 8 + hlen;
    for (int i = 0; i < r->n; i++) {
        st_tensor *t = &r->t[i];
        t->data = data0 + t->begin;
        size_t es = elem_size(t->dtype);
        size_t nb = (size_t)(t->end - t->begin);
        if (nb && (uintptr_t)t->data % es != 0) {
            t->copy = malloc(nb);
            if (!t->copy) {
                st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what);
                goto done;
            }
            memcpy(t->copy, t->data, nb);
            t->data = t->copy;
        }
    }
done:
    cJSON_Delete(root);
    free(text);
    return st;
}

static pc_st *new_reader(const char *what, pc_error *err) {
    pc_st *r = calloc(1, sizeof *r);
    if (r) r->max_memory = PC_MEMORY_AUTO;
    if (r) r->what = dup_str(what ? what : "safetensors");
    if (!r || !r->what) {
        free(r);
        pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", what ? what : "safetensors");
        return NULL;
    }
    return r;
}

pc_status pc_st_open_memory(const void *buf, size_t len, const char *what, pc_st **out,
                            pc_error *err) {
    if (!out || (!buf && len)) return pc_fail(err, PC_ERR_ARG, "pc_st_open_memory: NULL argument");
    *out = NULL;
    pc_st *r = new_reader(what, err);
    if (!r) return PC_ERR_NOMEM;
    r->base = malloc(len ? len : 1);
    if (!r->base) {
        pc_st_close(r);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for %zu bytes",
                       what ? what : "safetensors", len);
    }
    if (len) memcpy(r->base, buf, len);
    r->len = len;
    pc_status st = parse(r, err);
    if (st != PC_OK) {
        pc_st_close(r);
        return st;
    }
    *out = r;
    return PC_OK;
}

pc_status pc_st_open(const char *path, pc_st **out, pc_error *err) {
    return pc_st_open_max(path, PC_MEMORY_AUTO, out, err);
}

pc_status pc_st_open_max(const char *path, uint64_t max_memory, pc_st **out, pc_error *err) {
    if (!path || !out) return pc_fail(err, PC_ERR_ARG, "pc_st_open: NULL argument");
    *out = NULL;
    int fd = -1; /* never blocks: a FIFO or device is refused before it is read */
    uint64_t fsize = 0;
    pc_status ost = pc_open_regular(path, &fd, &fsize, err);
    if (ost) return ost;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return pc_fail(err, PC_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (sb.st_size < 8) {
        close(fd);
        return pc_fail(err, PC_ERR_FORMAT, "%s: file of %lld bytes is too short; expected an "
                       "8-byte header length", path, (long long)sb.st_size);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return pc_fail(err, PC_ERR_RANGE, "%s: file too large to map", path);
    }
    pc_st *r = new_reader(path, err);
    if (!r) {
        close(fd);
        return PC_ERR_NOMEM;
    }
    void *base = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (base == MAP_FAILED) {
        pc_st_close(r);
        return pc_fail(err, PC_ERR_IO, "%s: mmap failed: %s", path, strerror(e));
    }
    r->base = base;
    r->len = (size_t)sb.st_size;
    r->mapped = 1;
    r->max_memory = max_memory;
    pc_status st = parse(r, err);
    if (st != PC_OK) {
        pc_st_close(r);
        return st;
    }
    *out = r;
    return PC_OK;
}

int pc_st_count(const pc_st *r) { return r ? r->n : 0; }

const char *pc_st_name(const pc_st *r, int i) {
    return r && i >= 0 && i < r->n ? r->t[i].name : NULL;
}

int pc_st_find(const pc_st *r, const char *name) {
    if (!r || !name) return -1;
    int lo = 0, hi = r->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(r->t[mid].name, name);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

pc_status pc_st_info(const pc_st *r, int i, pc_dtype *dtype, int *ndim, int64_t *shape) {
    if (!r || i < 0 || i >= r->n) return PC_ERR_RANGE;
    const st_tensor *t = &r->t[i];
    if (dtype) *dtype = t->dtype;
    if (ndim) *ndim = t->ndim;
    if (shape)
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
    return PC_OK;
}

uint64_t pc_st_nbytes(const pc_st *r, int i) {
    return r && i >= 0 && i < r->n ? r->t[i].end - r->t[i].begin : 0;
}

const void *pc_st_data(const pc_st *r, int i) {
    return r && i >= 0 && i < r->n ? r->t[i].data : NULL;
}

pc_status pc_st_read_array(const pc_st *r, int i, pc_array *out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pc_st_read_array: NULL output");
    if (!r || i < 0 || i >= r->n)
        return pc_fail(err, PC_ERR_RANGE, "%s: tensor index %d out of range (%d tensors)",
                       r ? r->what : "safetensors", i, r ? r->n : 0);
    const st_tensor *t = &r->t[i];
    pc_dtype mt = t->dtype == PC_DTYPE_F16 ? PC_DTYPE_F32 : t->dtype;
    pc_status st = pc_array_alloc(out, mt, t->ndim, t->shape, err);
    if (st != PC_OK) {
        pc_error_prefix(err, "%s: tensor '" NAME_Q "'", r->what, t->name);
        return st;
    }
    uint64_t nb = t->end - t->begin;
    if (t->dtype == PC_DTYPE_F16) {
        float *dst = out->data;
        for (uint64_t k = 0; k < nb / 2; k++) {
            uint16_t hv;
            memcpy(&hv, t->data + 2 * k, 2);
            dst[k] = pc_half_to_float(hv);
        }
    } else if (nb) {
        memcpy(out->data, t->data, (size_t)nb);
    }
    return PC_OK;
}

const char *pc_st_meta(const pc_st *r, const char *key) {
    if (!r || !key) return NULL;
    int lo = 0, hi = r->nmeta - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(r->meta[mid].key, key);
        if (c == 0) return r->meta[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

int pc_st_meta_count(const pc_st *r) { return r ? r->nmeta : 0; }

const char *pc_st_meta_key(const pc_st *r, int i) {
    return r && i >= 0 && i < r->nmeta ? r->meta[i].key : NULL;
}

const char *pc_st_meta_value(const pc_st *r, int i) {
    return r && i >= 0 && i < r->nmeta ? r->meta[i].value : NULL;
}

/* ---- writer ------------------------------------------------------------- */

typedef struct w_tensor {
    char *name;
    pc_dtype dtype;
    int ndim;
    int64_t shape[PC_MAX_DIMS];
    uint64_t nbytes;
    void *data;
} w_tensor;

struct pc_st_writer {
    w_tensor *t;
    size_t n, cap;
    st_meta *meta;
    size_t nmeta, mcap;
};

pc_st_writer *pc_st_writer_new(void) { return calloc(1, sizeof(pc_st_writer)); }

void pc_st_writer_free(pc_st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) {
        free(w->t[i].name);
        free(w->t[i].data);
    }
    free(w->t);
    for (size_t i = 0; i < w->nmeta; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->meta);
    free(w);
}

pc_status pc_st_writer_add(pc_st_writer *w, const char *name, pc_dtype t, int ndim,
                           const int64_t *shape, const void *data, pc_error *err) {
    if (!w || !name) return pc_fail(err, PC_ERR_ARG, "pc_st_writer_add: NULL argument");
    if (!*name || !utf8_ok((const unsigned char *)name, strlen(name)))
        return pc_fail(err, PC_ERR_ARG, "safetensors writer: tensor name '" NAME_Q "': expected "
                       "non-empty UTF-8", name);
    if (strcmp(name, "__metadata__") == 0)
        return pc_fail(err, PC_ERR_ARG, "safetensors writer: tensor name \"__metadata__\" is "
                       "reserved");
    size_t es = elem_size(t);
    if (!es)
        return pc_fail(err, PC_ERR_ARG, "safetensors writer: tensor '" NAME_Q "': invalid dtype "
                       "%d", name, (int)t);
    if (ndim < 0 || ndim > PC_MAX_DIMS || (ndim > 0 && !shape))
        return pc_fail(err, PC_ERR_ARG, "safetensors writer: tensor '" NAME_Q "': ndim %d; "
                       "expected 0..%d with a shape", name, ndim, PC_MAX_DIMS);
    uint64_t count = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (double)shape[d] > MAX_SAFE_INT)
            return pc_fail(err, PC_ERR_ARG, "safetensors writer: tensor '" NAME_Q "': shape[%d] "
                           "= %lld; expected 0..2^53", name, d, (long long)shape[d]);
        if (!pc_mul_u64(count, (uint64_t)shape[d], &count))
            return pc_fail(err, PC_ERR_RANGE, "safetensors writer: tensor '" NAME_Q "': shape "
                           "product overflows", name);
    }
    uint64_t nbytes;
    if (!pc_mul_u64(count, es, &nbytes) || nbytes > SIZE_MAX || (double)nbytes > MAX_SAFE_INT)
        return pc_fail(err, PC_ERR_RANGE, "safetensors writer: tensor '" NAME_Q "': too large",
                       name);
    if (nbytes && !data)
        return pc_fail(err, PC_ERR_ARG, "safetensors writer: tensor '" NAME_Q "': NULL data",
                       name);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return pc_fail(err, PC_ERR_ARG, "safetensors writer: duplicate tensor name '" NAME_Q
                           "'", name);
    if (w->n == w->cap) {
        w_tensor *nt = pc_grow_array(w->t, &w->cap, w->n + 1, sizeof *nt);
        if (!nt) return pc_fail(err, PC_ERR_NOMEM, "safetensors writer: out of memory");
        w->t = nt;
    }
    w_tensor *e = &w->t[w->n];
    memset(e, 0, sizeof *e);
    e->name = dup_str(name);
    e->data = malloc(nbytes ? (size_t)nbytes : 1);
    if (!e->name || !e->data) {
        free(e->name);
        free(e->data);
        return pc_fail(err, PC_ERR_NOMEM, "safetensors writer: tensor '" NAME_Q "': out of "
                       "memory for %llu bytes", name, (unsigned long long)nbytes);
    }
    if (nbytes) memcpy(e->data, data, (size_t)nbytes);
    e->dtype = t;
    e->ndim = ndim;
    for (int d = 0; d < ndim; d++) e->shape[d] = shape[d];
    e->nbytes = nbytes;
    w->n++;
    return PC_OK;
}

pc_status pc_st_writer_add_array(pc_st_writer *w, const char *name, const pc_array *a,
                                 pc_error *err) {
    if (!a) return pc_fail(err, PC_ERR_ARG, "pc_st_writer_add_array: NULL array");
    return pc_st_writer_add(w, name, a->dtype, a->ndim, a->shape, a->data, err);
}

pc_status pc_st_writer_set_meta(pc_st_writer *w, const char *key, const char *value,
                                pc_error *err) {
    if (!w || !key || !value) return pc_fail(err, PC_ERR_ARG, "pc_st_writer_set_meta: NULL argument");
    if (!utf8_ok((const unsigned char *)key, strlen(key)) ||
        !utf8_ok((const unsigned char *)value, strlen(value)))
        return pc_fail(err, PC_ERR_ARG, "safetensors writer: metadata '" NAME_Q "': expected "
                       "UTF-8 key and value", key);
    if (strcmp(key, PC_ST_CRC_KEY) == 0)
        return pc_fail(err, PC_ERR_ARG, "safetensors writer: metadata key '%s' is the writer's "
                       "own checksum", key);
    char *v = dup_str(value);
    if (!v) return pc_fail(err, PC_ERR_NOMEM, "safetensors writer: out of memory");
    for (size_t i = 0; i < w->nmeta; i++)
        if (strcmp(w->meta[i].key, key) == 0) {
            free(w->meta[i].value);
            w->meta[i].value = v;
            return PC_OK;
        }
    if (w->nmeta == w->mcap) {
        st_meta *nm = pc_grow_array(w->meta, &w->mcap, w->nmeta + 1, sizeof *nm);
        if (!nm) {
            free(v);
            return pc_fail(err, PC_ERR_NOMEM, "safetensors writer: out of memory");
        }
        w->meta = nm;
    }
    char *k = dup_str(key);
    if (!k) {
        free(v);
        return pc_fail(err, PC_ERR_NOMEM, "safetensors writer: out of memory");
    }
    w->meta[w->nmeta].key = k;
    w->meta[w->nmeta].value = v;
    w->nmeta++;
    return PC_OK;
}

/* On-disk order: larger elements first (keeps alignment), then by name. */
static int cmp_w_disk(const void *a, const void *b) {
    const w_tensor *x = *(const w_tensor *const *)a, *y = *(const w_tensor *const *)b;
    size_t ex = elem_size(x->dtype), ey = elem_size(y->dtype);
    if (ex != ey) return ex > ey ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_meta_ptr(const void *a, const void *b) {
    return cmp_meta(*(const st_meta *const *)a, *(const st_meta *const *)b);
}

/* Adds an integer printed exactly (cJSON would print doubles, e.g. 1e+15). */
static int add_uint(cJSON *arr, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    cJSON *item = cJSON_CreateRaw(buf);
    return item && cJSON_AddItemToArray(arr, item);
}

/*
 * The padded header (8-byte length, JSON, spaces) in *out, and the tensors in
 * on-disk order in *order (both malloc'd).
 */
static pc_status build_header(const pc_st_writer *w, unsigned char **out, size_t *out_len,
                              const w_tensor ***order, uint64_t *data_len, pc_error *err) {
    *out = NULL;
    *order = NULL;
    const w_tensor **ord = malloc((w->n + 1) * sizeof *ord);
    const st_meta **mord = malloc((w->nmeta + 1) * sizeof *mord);
    cJSON *root = cJSON_CreateObject();
    char *json = NULL;
    pc_status st = PC_OK;
    if (!ord || !mord || !root) goto nomem;
    for (size_t i = 0; i < w->n; i++) ord[i] = &w->t[i];
    qsort(ord, w->n, sizeof *ord, cmp_w_disk);
    for (size_t i = 0; i < w->nmeta; i++) mord[i] = &w->meta[i];
    qsort(mord, w->nmeta, sizeof *mord, cmp_meta_ptr);
    cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
    if (!m) goto nomem;
    /* the checksum's place first (filled in by the caller, crc_fill) */
    if (!cJSON_AddStringToObject(m, PC_ST_CRC_KEY, CRC_ZEROS)) goto nomem;
    for (size_t i = 0; i < w->nmeta; i++)
        if (!cJSON_AddStringToObject(m, mord[i]->key, mord[i]->value)) goto nomem;
    uint64_t pos = 0;
    for (size_t i = 0; i < w->n; i++) {
        const w_tensor *t = ord[i];
        cJSON *o = cJSON_AddObjectToObject(root, t->name);
        if (!o || !cJSON_AddStringToObject(o, "dtype", pc_st_dtype_name(t->dtype))) goto nomem;
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        if (!sh) goto nomem;
        for (int d = 0; d < t->ndim; d++)
            if (!add_uint(sh, (uint64_t)t->shape[d])) goto nomem;
        cJSON *off = cJSON_AddArrayToObject(o, "data_offsets");
        uint64_t end;
        if (!pc_add_u64(pos, t->nbytes, &end) || (double)end > MAX_SAFE_INT) {
            st = pc_fail(err, PC_ERR_RANGE, "safetensors writer: data over 2^53 bytes");
            goto fail;
        }
        if (!off || !add_uint(off, pos) || !add_uint(off, end)) goto nomem;
        pos = end;
    }
    json = cJSON_PrintUnformatted(root);
    if (!json) goto nomem;
    size_t jlen = strlen(json);
    size_t padded = (jlen + 7) & ~(size_t)7;
    if (padded > PC_ST_MAX_HEADER) {
        st = pc_fail(err, PC_ERR_RANGE, "safetensors writer: header of %zu bytes is over the "
                     "limit of %u", padded, PC_ST_MAX_HEADER);
        goto fail;
    }
    unsigned char *h = malloc(8 + padded);
    if (!h) goto nomem;
    put_le64(h, padded);
    memcpy(h + 8, json, jlen);
    memset(h + 8 + jlen, ' ', padded - jlen);
    *out = h;
    *out_len = 8 + padded;
    *order = ord;
    *data_len = pos;
    ord = NULL;
    goto cleanup;
nomem:
    st = pc_fail(err, PC_ERR_NOMEM, "safetensors writer: out of memory building the header");
fail:
cleanup:
    if (json) cJSON_free(json);
    cJSON_Delete(root);
    free(mord);
    free(ord);
    return st;
}

pc_status pc_st_writer_serialize(const pc_st_writer *w, void **out, size_t *len, pc_error *err) {
    if (!w || !out || !len) return pc_fail(err, PC_ERR_ARG, "pc_st_writer_serialize: NULL argument");
    *out = NULL;
    *len = 0;
    unsigned char *h;
    size_t hl;
    const w_tensor **ord;
    uint64_t dl;
    pc_status st = build_header(w, &h, &hl, &ord, &dl, err);
    if (st != PC_OK) return st;
    uint64_t total;
    unsigned char *buf = NULL;
    if (pc_add_u64(hl, dl, &total) && total <= SIZE_MAX) buf = malloc((size_t)total);
    if (!buf) {
        free(h);
        free(ord);
        return pc_fail(err, PC_ERR_NOMEM, "safetensors writer: out of memory for %llu bytes",
                       (unsigned long long)hl + (unsigned long long)dl);
    }
    memcpy(buf, h, hl);
    size_t pos = hl;
    for (size_t i = 0; i < w->n; i++) {
        if (ord[i]->nbytes) memcpy(buf + pos, ord[i]->data, (size_t)ord[i]->nbytes);
        pos += (size_t)ord[i]->nbytes;
    }
    long off = crc_offset(buf + 8, hl - 8) + 8;
    char hex[9];
    snprintf(hex, sizeof hex, "%08x", (unsigned)crc_with_zeros(buf, (size_t)total, (size_t)off));
    memcpy(buf + off, hex, 8);
    free(h);
    free(ord);
    *out = buf;
    *len = (size_t)total;
    return PC_OK;
}

pc_status pc_st_writer_save(const pc_st_writer *w, const char *path, pc_error *err) {
    if (!w || !path) return pc_fail(err, PC_ERR_ARG, "pc_st_writer_save: NULL argument");
    unsigned char *h;
    size_t hl;
    const w_tensor **ord;
    uint64_t dl;
    pc_status st = build_header(w, &h, &hl, &ord, &dl, err);
    if (st != PC_OK) {
        pc_error_prefix(err, "%s", path);
        return st;
    }
    /* the checksum over the header (its digits as zeros) and the data, then written */
    long off = crc_offset(h + 8, hl - 8) + 8;
    uint32_t c = libdeflate_crc32(0, h, hl);
    for (size_t i = 0; i < w->n; i++)
        if (ord[i]->nbytes) c = libdeflate_crc32(c, ord[i]->data, (size_t)ord[i]->nbytes);
    char hex[9];
    snprintf(hex, sizeof hex, "%08x", (unsigned)c);
    memcpy(h + off, hex, 8);
    char tmp[4096];
    FILE *f = pc_tmp_open(path, tmp, sizeof tmp, err);
    if (!f) {
        free(h);
        free(ord);
        return err ? err->code : PC_ERR_IO;
    }
    int ok = fwrite(h, 1, hl, f) == hl;
    for (size_t i = 0; ok && i < w->n; i++)
        if (ord[i]->nbytes) ok = fwrite(ord[i]->data, 1, (size_t)ord[i]->nbytes, f) == ord[i]->nbytes;
    free(h);
    free(ord);
    if (!ok) {
        int e = errno;
        fclose(f);
        unlink(tmp);
        return pc_fail(err, PC_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    return pc_tmp_commit_durable(f, tmp, path, err); /* checkpoints and training states */
}
