/*
 * HLO text parser and printer (text.h). A hand-written recursive-descent
 * parser over the raw bytes with one cursor: no tokenizer pass, no copies of
 * the input. Everything that nests (tuple shapes, skipped attribute values)
 * is bounded by PC_HLO_TEXT_MAX_DEPTH; skipped values are walked with an
 * explicit stack, tuple shapes recurse at most that deep. Names are looked up
 * in open-addressing hash tables, so parsing is linear in the input.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hlo_opcode.h"
#include "common/util.h"
#include "hlo/text.h"

/* ---- element types (xla.PrimitiveType) ------------------------------------ */

#define ET_TUPLE 13
#define ET_OPAQUE 14
#define ET_TOKEN 17

static const struct {
    const char *name;
    int32_t type;
} elem_types[] = {
    {"pred", 1},        {"s8", 2},          {"s16", 3},         {"s32", 4},
    {"s64", 5},         {"u8", 6},          {"u16", 7},         {"u32", 8},
    {"u64", 9},         {"f16", 10},        {"f32", 11},        {"f64", 12},
    {"opaque", 14},     {"c64", 15},        {"bf16", 16},       {"token", 17},
    {"c128", 18},       {"f8e5m2", 19},     {"f8e4m3fn", 20},   {"s4", 21},
    {"u4", 22},         {"f8e4m3b11fnuz", 23}, {"f8e5m2fnuz", 24}, {"f8e4m3fnuz", 25},
    {"s2", 26},         {"u2", 27},         {"f8e4m3", 28},     {"f8e3m4", 29},
    {"s1", 30},         {"u1", 31},         {"f4e2m1fn", 32},   {"f8e8m0fnu", 33},
};
#define N_ELEM_TYPES (sizeof elem_types / sizeof elem_types[0])

static int32_t elem_type_find(const char *s, size_t n) {
    for (size_t i = 0; i < N_ELEM_TYPES; i++)
        if (strlen(elem_types[i].name) == n && memcmp(elem_types[i].name, s, n) == 0)
            return elem_types[i].type;
    return 0;
}

static const char *elem_type_name(int32_t t) {
    for (size_t i = 0; i < N_ELEM_TYPES; i++)
        if (elem_types[i].type == t) return elem_types[i].name;
    return NULL;
}

/* ---- small helpers ---------------------------------------------------------- */

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static int is_name_char(int c) { return is_alnum(c) || c == '_' || c == '.' || c == '-'; }
static int is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static uint64_t hash_i64(int64_t v) {
    uint64_t s = (uint64_t)v;
    return pc_splitmix64(&s);
}

/* Grows an array to hold `need` elements; NULL on overflow or OOM (old kept). */
static void *grow_buf(void *ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return ptr;
    size_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / elem) return NULL;
        nc *= 2;
    }
    void *np = realloc(ptr, nc * elem);
    if (!np) return NULL;
    *cap = nc;
    return np;
}

/*
 * String -> index table (open addressing, linear probing). Keys are not
 * stored: `key_of(ctx, i, &len)` gives the key of entry i and its length.
 */
typedef const char *(*key_fn)(const void *ctx, int32_t i, size_t *len);
typedef struct name_map {
    int32_t *slot;  /* index + 1; 0 = empty */
    uint32_t *hash; /* low bits of the key's hash, checked before the key */
    size_t mask;
    key_fn key_of;
    const void *ctx;
} name_map;

static int name_map_init(name_map *m, size_t n, key_fn key_of, const void *ctx) {
    size_t cap = 16;
    while (cap < 2 * n + 2) {
        if (cap > SIZE_MAX / 8) return -1;
        cap *= 2;
    }
    m->slot = calloc(cap, sizeof *m->slot);
    m->hash = malloc(cap * sizeof *m->hash);
    m->mask = cap - 1;
    m->key_of = key_of;
    m->ctx = ctx;
    return m->slot && m->hash ? 0 : -1;
}

static void name_map_free(name_map *m) {
    free(m->slot);
    free(m->hash);
    m->slot = NULL;
    m->hash = NULL;
}

static int key_eq(const name_map *m, int32_t i, const char *s, size_t n) {
    size_t kn;
    const char *k = m->key_of(m->ctx, i, &kn);
    return kn == n && memcmp(k, s, n) == 0;
}

/* Index of the name, or -1. */
static int32_t name_map_find(const name_map *m, const char *s, size_t n) {
    uint64_t hv = hash_bytes(s, n);
    for (size_t h = hv & m->mask;; h = (h + 1) & m->mask) {
        int32_t v = m->slot[h];
        if (!v) return -1;
        if (m->hash[h] == (uint32_t)(hv >> 32) && key_eq(m, v - 1, s, n)) return v - 1;
    }
}

/* Inserts entry i; returns the index already holding its key, or -1 if new. */
static int32_t name_map_add(name_map *m, int32_t i) {
    size_t n;
    const char *k = m->key_of(m->ctx, i, &n);
    uint64_t hv = hash_bytes(k, n);
    for (size_t h = hv & m->mask;; h = (h + 1) & m->mask) {
        int32_t v = m->slot[h];
        if (!v) {
            m->slot[h] = i + 1;
            m->hash[h] = (uint32_t)(hv >> 32);
            return -1;
        }
        if (m->hash[h] == (uint32_t)(hv >> 32) && key_eq(m, v - 1, k, n)) return v - 1;
    }
}

/* int64 id -> index table. */
typedef struct id_map {
    int64_t *key;
    int32_t *val; /* index + 1; 0 = empty */
    size_t mask;
} id_map;

static int id_map_init(id_map *m, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 2) {
        if (cap > SIZE_MAX / 4) return -1;
        cap *= 2;
    }
    m->key = calloc(cap, sizeof *m->key);
    m->val = calloc(cap, sizeof *m->val);
    m->mask = cap - 1;
    return m->key && m->val ? 0 : -1;
}

static void id_map_free(id_map *m) {
    free(m->key);
    free(m->val);
    m->key = NULL;
    m->val = NULL;
}

/* 0 if added, 1 if the key was already there. */
static int id_map_add(id_map *m, int64_t k, int32_t i) {
    for (size_t h = hash_i64(k) & m->mask;; h = (h + 1) & m->mask) {
        if (!m->val[h]) {
            m->key[h] = k;
            m->val[h] = i + 1;
            return 0;
        }
        if (m->key[h] == k) return 1;
    }
}

static int32_t id_map_find(const id_map *m, int64_t k) {
    for (size_t h = hash_i64(k) & m->mask;; h = (h + 1) & m->mask) {
        if (!m->val[h]) return -1;
        if (m->key[h] == k) return m->val[h] - 1;
    }
}

/* ---- parser state ------------------------------------------------------------- */

typedef struct oref { /* an operand name waiting to be resolved */
    int32_t inst, slot;
    size_t off, len, pos;
} oref;

typedef struct cref { /* a called computation name waiting to be resolved */
    int32_t comp, inst, slot, prio;
    size_t off, len, pos;
} cref;

typedef struct cinfo { /* what the parser keeps beside each computation */
    struct span {
        size_t off, len;
    } *iname;    /* each instruction's name in the text (after any '%') */
    size_t icap; /* capacity of iname and of the computation's inst array */
    int32_t root; /* local index, -1 until ROOT */
    int entry;
    size_t pos;
} cinfo;

typedef struct parser {
    const char *buf;
    size_t len, pos, end;
    const char *path;
    pc_error *err;
    int failed;
    pc_status code; /* of the first error */
    pc_hlo_text_stats *stats;
    /* the module being parsed */
    pc_hlo_module *m;
    cinfo *ci;
    size_t comp_cap;
    cref *crefs;
    size_t ncref, cref_cap;
    oref *orefs; /* of the computation being parsed */
    size_t noref, oref_cap;
    int16_t opcode_slot[256]; /* opcode name -> TpuGraphs id (hashed; 0 empty) */
} parser;

_Static_assert(PC_HLO_OPCODE_COUNT < 200, "opcode hash table needs free slots");

static void opcode_table_init(parser *p) {
    memset(p->opcode_slot, 0, sizeof p->opcode_slot);
    for (int id = 1; id < PC_HLO_OPCODE_COUNT; id++) {
        const char *nm = pc_hlo_opcode_name(id);
        if (!nm) continue;
        size_t h = hash_bytes(nm, strlen(nm)) & 255;
        while (p->opcode_slot[h]) h = (h + 1) & 255;
        p->opcode_slot[h] = (int16_t)id;
    }
}

static int opcode_lookup(const parser *p, const char *s, size_t n) {
    for (size_t h = hash_bytes(s, n) & 255;; h = (h + 1) & 255) {
        int id = p->opcode_slot[h];
        if (!id) return PC_HLO_UNKNOWN;
        const char *nm = pc_hlo_opcode_name(id);
        if (strlen(nm) == n && memcmp(nm, s, n) == 0) return id;
    }
}

static void line_col(const parser *p, size_t at, long *line, long *col) {
    long l = 1;
    size_t ls = 0;
    if (at > p->len) at = p->len;
    for (size_t i = 0; i < at; i++)
        if (p->buf[i] == '\n') {
            l++;
            ls = i + 1;
        }
    *line = l;
    *col = (long)(at - ls) + 1;
}

static int perr(parser *p, size_t at, pc_status code, const char *fmt, ...) PC_PRINTF(4, 5);
static int perr(parser *p, size_t at, pc_status code, const char *fmt, ...) {
    if (p->failed) return -1;
    p->failed = 1;
    p->code = code;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    long line, col;
    line_col(p, at, &line, &col);
    pc_fail(p->err, code, "%s:%ld:%ld: %s", p->path, line, col, msg);
    return -1;
}

static int nomem(parser *p) { return perr(p, p->pos, PC_ERR_NOMEM, "out of memory"); }

#define RESERVE(p, arr, cap, need)                                              \
    do {                                                                        \
        void *np_ = grow_buf((arr), &(cap), (need), sizeof *(arr));             \
        if (!np_) return nomem(p);                                              \
        (arr) = np_;                                                            \
    } while (0)

static int peekc(const parser *p) {
    return p->pos < p->end ? (unsigned char)p->buf[p->pos] : -1;
}
static int peekc_at(const parser *p, size_t k) {
    return p->pos + k < p->end ? (unsigned char)p->buf[p->pos + k] : -1;
}

/* The text at the cursor, for "found ..." in messages. */
static void describe(const parser *p, char *out, size_t cap) {
    if (p->pos >= p->end) {
        snprintf(out, cap, "end of input");
        return;
    }
    int c = (unsigned char)p->buf[p->pos];
    if (is_name_char(c) || c == '%') {
        size_t n = 1;
        while (n < 24 && p->pos + n < p->end && is_name_char((unsigned char)p->buf[p->pos + n])) n++;
        snprintf(out, cap, "'%.*s'", (int)n, p->buf + p->pos);
    } else if (c >= 0x20 && c < 0x7f) {
        snprintf(out, cap, "'%c'", c);
    } else {
        snprintf(out, cap, "byte 0x%02x", (unsigned)c);
    }
}

static int expected(parser *p, const char *what) {
    char f[48];
    describe(p, f, sizeof f);
    return perr(p, p->pos, PC_ERR_FORMAT, "expected %s, found %s", what, f);
}

/* After a list item: ',' (consumed; returns 1, another item follows), the
 * closing bracket (consumed; returns 0) or an error naming what was expected. */
static int list_sep(parser *p, char close, const char *what) {
    int c = peekc(p);
    if (c != ',' && c != close) return expected(p, what);
    p->pos++;
    return c == ',';
}

/* Whitespace, // line comments and block comments. */
static int skip_ws(parser *p) {
    for (;;) {
        while (p->pos < p->end && is_space((unsigned char)p->buf[p->pos])) p->pos++;
        if (peekc(p) == '/' && peekc_at(p, 1) == '/') {
            while (p->pos < p->end && p->buf[p->pos] != '\n') p->pos++;
            continue;
        }
        if (peekc(p) == '/' && peekc_at(p, 1) == '*') {
            size_t start = p->pos;
            p->pos += 2;
            for (;;) {
                if (p->pos + 1 >= p->end) {
                    p->pos = p->end;
                    return perr(p, start, PC_ERR_FORMAT, "unterminated /* comment");
                }
                if (p->buf[p->pos] == '*' && p->buf[p->pos + 1] == '/') {
                    p->pos += 2;
                    break;
                }
                p->pos++;
            }
            continue;
        }
        return 0;
    }
}

static int expect_char(parser *p, int c, const char *what) {
    if (skip_ws(p)) return -1;
    if (peekc(p) != c) return expected(p, what);
    p->pos++;
    return 0;
}

/* A name: optional '%', then [A-Za-z0-9_.-]+. Returns its length (0: none). */
static size_t read_name(parser *p, size_t *off, int *pct) {
    size_t s = p->pos;
    int has = 0;
    if (peekc(p) == '%') {
        has = 1;
        p->pos++;
    }
    size_t b = p->pos;
    while (p->pos < p->end && is_name_char((unsigned char)p->buf[p->pos])) p->pos++;
    if (p->pos == b) {
        p->pos = s;
        return 0;
    }
    *off = b;
    if (pct) *pct = has;
    return p->pos - b;
}

static int word_is(const parser *p, size_t off, size_t n, const char *kw) {
    return strlen(kw) == n && memcmp(p->buf + off, kw, n) == 0;
}

static int parse_i64(parser *p, int64_t *out, const char *what) {
    size_t s = p->pos;
    int neg = 0;
    if (peekc(p) == '-' || peekc(p) == '+') {
        neg = peekc(p) == '-';
        p->pos++;
    }
    if (!is_digit(peekc(p))) {
        p->pos = s;
        return expected(p, what);
    }
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    while (is_digit(peekc(p))) {
        unsigned d = (unsigned)(p->buf[p->pos] - '0');
        if (v > (lim - d) / 10) return perr(p, s, PC_ERR_FORMAT, "integer out of range for int64");
        v = v * 10 + d;
        p->pos++;
    }
    if (!neg)
        *out = (int64_t)v;
    else if (v == (uint64_t)INT64_MAX + 1)
        *out = INT64_MIN;
    else
        *out = -(int64_t)v;
    return 0;
}

static int i64s_push(parser *p, pc_i64s *l, size_t *cap, int64_t v) {
    if (l->n == INT32_MAX) return perr(p, p->pos, PC_ERR_RANGE, "list longer than 2^31-1 entries");
    RESERVE(p, l->v, *cap, (size_t)l->n + 1);
    l->v[l->n++] = v;
    return 0;
}

static void i64s_set(pc_i64s *dst, pc_i64s src) {
    free(dst->v);
    *dst = src;
}

/* ---- skipping values ------------------------------------------------------------ */

static int skip_string(parser *p) {
    size_t start = p->pos;
    p->pos++; /* opening quote */
    for (;;) {
        int c = peekc(p);
        if (c < 0) return perr(p, start, PC_ERR_FORMAT, "unterminated string");
        p->pos++;
        if (c == '\\') {
            if (p->pos >= p->end) return perr(p, start, PC_ERR_FORMAT, "unterminated string");
            p->pos++;
        } else if (c == '"') {
            return 0;
        }
    }
}

/* One balanced (...), [...] or {...} group starting at the cursor. */
static int skip_group(parser *p) {
    char want[PC_HLO_TEXT_MAX_DEPTH];
    size_t where[PC_HLO_TEXT_MAX_DEPTH];
    int depth = 0;
    for (;;) {
        int c = peekc(p);
        if (c < 0) {
            long l, col;
            line_col(p, where[depth - 1], &l, &col);
            return perr(p, p->pos, PC_ERR_FORMAT, "expected '%c' to close the '%c' at %ld:%ld, found end of input",
                        want[depth - 1], p->buf[where[depth - 1]], l, col);
        }
        if (c == '"') {
            if (skip_string(p)) return -1;
            continue;
        }
        if (c == '/' && (peekc_at(p, 1) == '/' || peekc_at(p, 1) == '*')) {
            if (skip_ws(p)) return -1;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') {
            if (depth == PC_HLO_TEXT_MAX_DEPTH)
                return perr(p, p->pos, PC_ERR_RANGE, "brackets nested deeper than %d", PC_HLO_TEXT_MAX_DEPTH);
            want[depth] = c == '(' ? ')' : c == '[' ? ']' : '}';
            where[depth] = p->pos;
            depth++;
            p->pos++;
            continue;
        }
        if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) return expected(p, "'(', '[' or '{'");
            if (c != want[depth - 1]) {
                long l, col;
                line_col(p, where[depth - 1], &l, &col);
                return perr(p, p->pos, PC_ERR_FORMAT, "expected '%c' to close the '%c' at %ld:%ld, found '%c'",
                            want[depth - 1], p->buf[where[depth - 1]], l, col, c);
            }
            depth--;
            p->pos++;
            if (depth == 0) return 0;
            continue;
        }
        p->pos++;
    }
}

/* An attribute value we do not store: words, strings and balanced groups up
 * to the next top-level ',', whitespace or closing bracket. */
static int skip_value(parser *p) {
    size_t s = p->pos;
    for (;;) {
        int c = peekc(p);
        if (c < 0 || is_space(c) || c == ',' || c == '}' || c == ')' || c == ']') break;
        if (c == '/' && (peekc_at(p, 1) == '/' || peekc_at(p, 1) == '*')) break;
        if (c == '"') {
            if (skip_string(p)) return -1;
        } else if (c == '(' || c == '[' || c == '{') {
            if (skip_group(p)) return -1;
        } else {
            p->pos++;
        }
    }
    if (p->pos == s) return expected(p, "an attribute value");
    return 0;
}

/* ---- shapes ------------------------------------------------------------------------ */

/* 1 if the cursor is at a shape: '(' or an element type directly followed by '['. */
static int at_shape(const parser *p) {
    if (peekc(p) == '(') return 1;
    size_t n = 0;
    while (p->pos + n < p->end && is_alnum((unsigned char)p->buf[p->pos + n])) n++;
    if (!n || p->pos + n >= p->end || p->buf[p->pos + n] != '[') return 0;
    return elem_type_find(p->buf + p->pos, n) != 0;
}

/* Layout `{1,0}` or `{1,0:T(8,128)...}`: keeps minor_to_major only. */
static int parse_layout(parser *p, pc_i64s *m2m) {
    size_t cap = 0, open = p->pos;
    p->pos++; /* '{' */
    if (skip_ws(p)) return -1;
    if (peekc(p) != '}' && peekc(p) != ':') {
        for (;;) {
            int64_t v;
            if (skip_ws(p) || parse_i64(p, &v, "a layout dimension") || i64s_push(p, m2m, &cap, v) ||
                skip_ws(p))
                return -1;
            if (peekc(p) == ',') {
                p->pos++;
                continue;
            }
            break;
        }
    }
    if (peekc(p) == ':') { /* tiles, element size, memory space: skipped */
        int depth = 0;
        for (;;) {
            int c = peekc(p);
            if (c < 0) return perr(p, open, PC_ERR_FORMAT, "unterminated layout '{'");
            if (c == '(') {
                if (++depth > PC_HLO_TEXT_MAX_DEPTH)
                    return perr(p, p->pos, PC_ERR_RANGE, "layout nested deeper than %d", PC_HLO_TEXT_MAX_DEPTH);
            } else if (c == ')') {
                if (depth-- == 0) return expected(p, "'}' to close the layout");
            } else if (c == '}' && depth == 0) {
                break;
            } else if (c == '{' || c == '[' || c == ']') {
                return expected(p, "'}' to close the layout");
            }
            p->pos++;
        }
    }
    if (peekc(p) != '}') return expected(p, "',' or '}' in the layout");
    p->pos++;
    return 0;
}

static void shape_clear(pc_hlo_shape *s) {
    free(s->dims.v);
    free(s->minor_to_major.v);
    memset(s, 0, sizeof *s);
}

/* A shape; out may be NULL (parsed and dropped). */
static int parse_shape(parser *p, pc_hlo_shape *out, int depth) {
    if (skip_ws(p)) return -1;
    if (depth >= PC_HLO_TEXT_MAX_DEPTH)
        return perr(p, p->pos, PC_ERR_RANGE, "tuple shapes nested deeper than %d", PC_HLO_TEXT_MAX_DEPTH);
    if (peekc(p) == '(') {
        p->pos++;
        int32_t count = 0;
        if (skip_ws(p)) return -1;
        if (peekc(p) == ')') {
            p->pos++;
        } else {
            for (;;) {
                if (parse_shape(p, NULL, depth + 1)) return -1;
                if (count < INT32_MAX) count++;
                if (skip_ws(p)) return -1;
                int more = list_sep(p, ')', "',' or ')' in the tuple shape");
                if (more < 0) return -1;
                if (!more) break;
            }
        }
        if (out) {
            shape_clear(out);
            out->element_type = ET_TUPLE;
            out->tuple_count = count;
        }
        return 0;
    }
    size_t s = p->pos, n = 0;
    while (p->pos + n < p->end && is_alnum((unsigned char)p->buf[p->pos + n])) n++;
    int32_t et = n ? elem_type_find(p->buf + s, n) : 0;
    if (!et) return expected(p, "a shape such as f32[2,3]{1,0} or (s32[], pred[])");
    p->pos += n;
    if (peekc(p) != '[') return expected(p, "'[' after the element type");
    p->pos++;
    pc_i64s dims = {0}, m2m = {0};
    size_t cap = 0;
    if (skip_ws(p)) goto fail;
    if (peekc(p) == ']') {
        p->pos++;
    } else {
        for (;;) {
            int64_t v;
            if (skip_ws(p)) goto fail;
            if (peekc(p) == '?') {
                p->pos++;
                v = INT64_MIN; /* XLA's kUnboundedSize */
            } else {
                if (peekc(p) == '<' && peekc_at(p, 1) == '=') {
                    p->pos += 2;
                    if (skip_ws(p)) goto fail;
                }
                if (!is_digit(peekc(p))) {
                    expected(p, "a dimension size (N, <=N or ?)");
                    goto fail;
                }
                if (parse_i64(p, &v, "a dimension size")) goto fail;
            }
            if (i64s_push(p, &dims, &cap, v) || skip_ws(p)) goto fail;
            int more = list_sep(p, ']', "',' or ']' in the dimensions");
            if (more < 0) goto fail;
            if (!more) break;
        }
    }
    if ((et == ET_TOKEN || et == ET_OPAQUE) && dims.n) {
        perr(p, s, PC_ERR_FORMAT, "%.*s shapes have no dimensions", (int)n, p->buf + s);
        goto fail;
    }
    if (peekc(p) == '{') {
        if (parse_layout(p, &m2m)) goto fail;
    } else if (dims.n > 0) { /* XLA fills the default layout {rank-1, ..., 0} */
        m2m.v = malloc((size_t)dims.n * sizeof *m2m.v);
        if (!m2m.v) {
            nomem(p);
            goto fail;
        }
        m2m.n = dims.n;
        for (int32_t i = 0; i < dims.n; i++) m2m.v[i] = dims.n - 1 - i;
    }
    if (out) {
        shape_clear(out);
        out->element_type = et;
        out->dims = dims;
        out->minor_to_major = m2m;
    } else {
        free(dims.v);
        free(m2m.v);
    }
    return 0;
fail:
    free(dims.v);
    free(m2m.v);
    return -1;
}

/* ---- attributes ---------------------------------------------------------------------- */

/* {1,2,3} */
static int parse_brace_list(parser *p, pc_i64s *out) {
    if (expect_char(p, '{', "'{'")) return -1;
    pc_i64s l = {0};
    size_t cap = 0;
    if (skip_ws(p)) goto fail;
    if (peekc(p) == '}') {
        p->pos++;
    } else {
        for (;;) {
            int64_t v;
            if (skip_ws(p) || parse_i64(p, &v, "an integer") || i64s_push(p, &l, &cap, v) || skip_ws(p))
                goto fail;
            int more = list_sep(p, '}', "',' or '}' in the list");
            if (more < 0) goto fail;
            if (!more) break;
        }
    }
    i64s_set(out, l);
    return 0;
fail:
    free(l.v);
    return -1;
}

/* 3x3 (integers separated by 'x') */
static int parse_x_list(parser *p, pc_i64s *l, size_t *cap, const char *what) {
    for (;;) {
        int64_t v;
        if (parse_i64(p, &v, what) || i64s_push(p, l, cap, v)) return -1;
        if (peekc(p) == 'x' && (is_digit(peekc_at(p, 1)) || peekc_at(p, 1) == '-')) {
            p->pos++;
            continue;
        }
        return 0;
    }
}

/* lo_hi[_interior]x... ; `interior` NULL: pairs only (window pad). */
static int parse_pad_list(parser *p, pc_i64s *lo, pc_i64s *hi, pc_i64s *in, size_t *caps) {
    for (;;) {
        int64_t a, b, c = 0;
        if (parse_i64(p, &a, "a low padding")) return -1;
        if (peekc(p) != '_') return expected(p, "'_' between low and high padding");
        p->pos++;
        if (parse_i64(p, &b, "a high padding")) return -1;
        if (in && peekc(p) == '_') {
            p->pos++;
            if (parse_i64(p, &c, "an interior padding")) return -1;
        }
        if (i64s_push(p, lo, &caps[0], a) || i64s_push(p, hi, &caps[1], b)) return -1;
        if (in && i64s_push(p, in, &caps[2], c)) return -1;
        if (peekc(p) == 'x' && (is_digit(peekc_at(p, 1)) || peekc_at(p, 1) == '-')) {
            p->pos++;
            continue;
        }
        return 0;
    }
}

static void window_clear(pc_hlo_window *w) {
    free(w->size);
    free(w->stride);
    free(w->padding_low);
    free(w->padding_high);
    free(w->window_dilation);
    free(w->base_dilation);
    free(w->window_reversal);
    memset(w, 0, sizeof *w);
}

/* window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0} */
static int parse_window(parser *p, pc_hlo_window *w) {
    enum { W_SIZE, W_STRIDE, W_LO, W_HI, W_LHS, W_RHS, W_REV, W_N };
    static const char *const field[W_N] = {"size", "stride", "pad", "pad", "lhs_dilate", "rhs_dilate",
                                           "rhs_reversal"};
    pc_i64s l[W_N];
    size_t cap[W_N];
    memset(l, 0, sizeof l);
    memset(cap, 0, sizeof cap);
    pc_hlo_window nw;
    memset(&nw, 0, sizeof nw);
    if (skip_ws(p)) return -1;
    size_t open = p->pos;
    if (expect_char(p, '{', "'{' after window=")) return -1;
    for (;;) {
        if (skip_ws(p)) goto fail;
        if (peekc(p) == '}') {
            p->pos++;
            break;
        }
        size_t ks = p->pos;
        while (is_alpha(peekc(p)) || peekc(p) == '_') p->pos++;
        size_t kn = p->pos - ks;
        if (!kn) {
            expected(p, "a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal) or '}'");
            goto fail;
        }
        if (peekc(p) != '=') {
            expected(p, "'=' after the window field");
            goto fail;
        }
        p->pos++;
        const char *k = p->buf + ks;
        int f = -1;
        if (kn == 4 && !memcmp(k, "size", 4)) f = W_SIZE;
        else if (kn == 6 && !memcmp(k, "stride", 6)) f = W_STRIDE;
        else if (kn == 3 && !memcmp(k, "pad", 3)) f = W_LO;
        else if (kn == 10 && !memcmp(k, "lhs_dilate", 10)) f = W_LHS;
        else if (kn == 10 && !memcmp(k, "rhs_dilate", 10)) f = W_RHS;
        else if (kn == 12 && !memcmp(k, "rhs_reversal", 12)) f = W_REV;
        if (f < 0) { /* unknown field: skip its value */
            while (peekc(p) >= 0 && !is_space(peekc(p)) && peekc(p) != '}') p->pos++;
            if (p->stats) p->stats->skipped_attrs++;
            continue;
        }
        if (f == W_LO) {
            l[W_LO].n = l[W_HI].n = 0;
            if (parse_pad_list(p, &l[W_LO], &l[W_HI], NULL, &cap[W_LO])) goto fail;
        } else {
            l[f].n = 0;
            if (parse_x_list(p, &l[f], &cap[f], "an integer")) goto fail;
        }
    }
    int32_t n = l[W_SIZE].n;
    for (int f = W_STRIDE; f < W_N; f++) {
        if (l[f].n && l[f].n != n) {
            perr(p, open, PC_ERR_FORMAT, "window has %" PRId32 " dimensions in size but %" PRId32 " in %s", n,
                 l[f].n, field[f]);
            goto fail;
        }
    }
    for (int32_t i = 0; i < l[W_REV].n; i++)
        if (l[W_REV].v[i] != 0 && l[W_REV].v[i] != 1) {
            perr(p, open, PC_ERR_FORMAT, "window rhs_reversal values must be 0 or 1");
            goto fail;
        }
    if (n > 0) {
        nw.n = n;
        nw.size = l[W_SIZE].v;
        l[W_SIZE].v = NULL;
        int64_t *arr[5];
        const int src[5] = {W_STRIDE, W_LO, W_HI, W_RHS, W_LHS};
        const int64_t dflt[5] = {1, 0, 0, 1, 1};
        for (int j = 0; j < 5; j++) {
            arr[j] = pc_malloc_array((uint64_t)n, sizeof(int64_t));
            if (!arr[j]) {
                for (int q = 0; q < j; q++) free(arr[q]);
                free(nw.size);
                nomem(p);
                goto fail;
            }
            for (int32_t i = 0; i < n; i++) arr[j][i] = l[src[j]].n ? l[src[j]].v[i] : dflt[j];
        }
        nw.stride = arr[0];
        nw.padding_low = arr[1];
        nw.padding_high = arr[2];
        nw.window_dilation = arr[3];
        nw.base_dilation = arr[4];
        nw.window_reversal = pc_calloc_array((uint64_t)n, 1);
        if (!nw.window_reversal) {
            window_clear(&nw);
            nomem(p);
            goto fail;
        }
        for (int32_t i = 0; i < l[W_REV].n; i++) nw.window_reversal[i] = (uint8_t)l[W_REV].v[i];
    } else {
        for (int f = W_STRIDE; f < W_N; f++)
            if (l[f].n) {
                perr(p, open, PC_ERR_FORMAT, "window has %s but no size", field[f]);
                goto fail;
            }
    }
    for (int f = 0; f < W_N; f++) free(l[f].v);
    window_clear(w);
    *w = nw;
    return 0;
fail:
    for (int f = 0; f < W_N; f++) free(l[f].v);
    return -1;
}

/* One side of dim_labels: two letters and the spatial digits 0..k-1. */
static int parse_labels(parser *p, size_t at, const char *t, size_t n, char c0, char c1, int64_t *d0,
                        int64_t *d1, pc_i64s *sp, const char *side) {
    int64_t pos[10];
    int seen0 = 0, seen1 = 0, nsp = 0;
    for (int k = 0; k < 10; k++) pos[k] = -1;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (c == c0 && !seen0) {
            *d0 = (int64_t)i;
            seen0 = 1;
        } else if (c == c1 && !seen1) {
            *d1 = (int64_t)i;
            seen1 = 1;
        } else if (is_digit((unsigned char)c) && pos[c - '0'] < 0) {
            pos[c - '0'] = (int64_t)i;
            nsp++;
        } else {
            return perr(p, at, PC_ERR_FORMAT,
                        "dim_labels %s '%.*s': unexpected or repeated '%c' (expected '%c', '%c' and digits)", side,
                        (int)n, t, c, c0, c1);
        }
    }
    if (!seen0 || !seen1)
        return perr(p, at, PC_ERR_FORMAT, "dim_labels %s '%.*s' needs one '%c' and one '%c'", side, (int)n, t, c0, c1);
    for (int k = 0; k < nsp; k++)
        if (pos[k] < 0)
            return perr(p, at, PC_ERR_FORMAT, "dim_labels %s '%.*s': spatial dimensions must be 0..%d", side,
                        (int)n, t, nsp - 1);
    free(sp->v);
    sp->n = 0;
    sp->v = NULL;
    if (nsp) {
        sp->v = malloc((size_t)nsp * sizeof *sp->v);
        if (!sp->v) return nomem(p);
        memcpy(sp->v, pos, (size_t)nsp * sizeof *sp->v);
        sp->n = nsp;
    }
    return 0;
}

/* dim_labels=b01f_01io->b01f */
static int parse_dim_labels(parser *p, pc_hlo_conv_dims *cd) {
    size_t s = p->pos;
    while (p->pos < p->end && (is_name_char((unsigned char)p->buf[p->pos]) || p->buf[p->pos] == '>')) p->pos++;
    const char *t = p->buf + s;
    size_t n = p->pos - s, u = 0, a = 0;
    while (u < n && t[u] != '_') u++;
    for (a = u + 1; a + 1 < n; a++)
        if (t[a] == '-' && t[a + 1] == '>') break;
    if (u >= n || a + 1 >= n) {
        p->pos = s;
        return expected(p, "dim_labels such as b01f_01io->b01f");
    }
    if (parse_labels(p, s, t, u, 'b', 'f', &cd->input_batch, &cd->input_feature, &cd->input_spatial, "input") ||
        parse_labels(p, s, t + u + 1, a - u - 1, 'i', 'o', &cd->kernel_input_feature, &cd->kernel_output_feature,
                     &cd->kernel_spatial, "kernel") ||
        parse_labels(p, s, t + a + 2, n - a - 2, 'b', 'f', &cd->output_batch, &cd->output_feature,
                     &cd->output_spatial, "output"))
        return -1;
    if (cd->input_spatial.n != cd->kernel_spatial.n || cd->input_spatial.n != cd->output_spatial.n)
        return perr(p, s, PC_ERR_FORMAT, "dim_labels '%.*s': input, kernel and output have different spatial ranks",
                    (int)n, t);
    cd->present = 1;
    return 0;
}

/* slice={[0:10:2], [1:5]} */
static int parse_slice(parser *p, pc_hlo_instruction *in) {
    pc_i64s st = {0}, li = {0}, sd = {0};
    size_t c0 = 0, c1 = 0, c2 = 0;
    if (expect_char(p, '{', "'{' after slice=") || skip_ws(p)) return -1;
    if (peekc(p) == '}') {
        p->pos++;
    } else {
        for (;;) {
            int64_t a, b, c = 1;
            if (expect_char(p, '[', "'[' to start a slice dimension") || skip_ws(p) ||
                parse_i64(p, &a, "a slice start") || expect_char(p, ':', "':' after the slice start") ||
                skip_ws(p) || parse_i64(p, &b, "a slice limit") || skip_ws(p))
                goto fail;
            if (peekc(p) == ':') {
                p->pos++;
                if (skip_ws(p) || parse_i64(p, &c, "a slice stride")) goto fail;
            }
            if (expect_char(p, ']', "']' to end the slice dimension") || i64s_push(p, &st, &c0, a) ||
                i64s_push(p, &li, &c1, b) || i64s_push(p, &sd, &c2, c) || skip_ws(p))
                goto fail;
            int more = list_sep(p, '}', "',' or '}' in slice");
            if (more < 0) goto fail;
            if (!more) break;
        }
    }
    i64s_set(&in->slice_start, st);
    i64s_set(&in->slice_limit, li);
    i64s_set(&in->slice_stride, sd);
    return 0;
fail:
    free(st.v);
    free(li.v);
    free(sd.v);
    return -1;
}

/* padding=0_0_0x1_1_0 (empty for a rank-0 pad) */
static int parse_padding(parser *p, pc_hlo_instruction *in) {
    pc_i64s lo = {0}, hi = {0}, it = {0};
    size_t caps[3] = {0, 0, 0};
    int c = peekc(p);
    if (c >= 0 && !is_digit(c) && c != '-' && !is_space(c) && c != ',' && c != '}') {
        if (p->stats) p->stats->skipped_attrs++; /* not a padding config: skip it */
        return skip_value(p);
    }
    if (is_digit(c) || c == '-') {
        if (parse_pad_list(p, &lo, &hi, &it, caps)) {
            free(lo.v);
            free(hi.v);
            free(it.v);
            return -1;
        }
    }
    i64s_set(&in->pad_low, lo);
    i64s_set(&in->pad_high, hi);
    i64s_set(&in->pad_interior, it);
    return 0;
}

static int parse_comp_ref(parser *p, int32_t comp, int32_t inst, int prio) {
    size_t off, pos = p->pos;
    size_t n = read_name(p, &off, NULL);
    if (!n) return expected(p, "a computation name");
    RESERVE(p, p->crefs, p->cref_cap, p->ncref + 1);
    cref *r = &p->crefs[p->ncref++];
    r->comp = comp;
    r->inst = inst;
    r->slot = 0;
    r->prio = prio;
    r->off = off;
    r->len = n;
    r->pos = pos;
    return 0;
}

/* to_apply=%f, or branch_computations={%a, %b} */
static int parse_calls(parser *p, int32_t comp, int32_t inst, int prio) {
    if (peekc(p) != '{') return parse_comp_ref(p, comp, inst, prio);
    p->pos++;
    if (skip_ws(p)) return -1;
    if (peekc(p) == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (skip_ws(p) || parse_comp_ref(p, comp, inst, prio) || skip_ws(p)) return -1;
        int more = list_sep(p, '}', "',' or '}' in the computation list");
        if (more <= 0) return more;
    }
}

/* Attributes naming computations, and their order in called_computation_ids
 * (XLA: while = {condition, body}, select-and-scatter = {select, scatter},
 * predicated conditional = {true, false}; otherwise in order of appearance). */
static int call_attr_prio(const parser *p, size_t off, size_t n) {
    static const struct {
        const char *name;
        int prio;
    } t[] = {{"condition", 0},          {"select", 0},        {"true_computation", 0},
             {"body", 1},               {"scatter", 1},       {"false_computation", 1},
             {"to_apply", 2},           {"calls", 2},         {"branch_computations", 2},
             {"called_computations", 2}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (word_is(p, off, n, t[i].name)) return t[i].prio;
    return -1;
}

static int parse_bool(parser *p, int32_t *out) {
    size_t off;
    size_t n = read_name(p, &off, NULL);
    if (n && word_is(p, off, n, "true")) *out = 1;
    else if (n && word_is(p, off, n, "false")) *out = 0;
    else {
        p->pos = n ? off : p->pos;
        return expected(p, "true or false");
    }
    return 0;
}

/* The list of dot_dimension_numbers an attribute name fills, NULL if none. */
static pc_i64s *dot_dims_attr(const parser *p, size_t off, size_t n, pc_hlo_dot_dims *d) {
    if (word_is(p, off, n, "lhs_contracting_dims")) return &d->lhs_contracting;
    if (word_is(p, off, n, "rhs_contracting_dims")) return &d->rhs_contracting;
    if (word_is(p, off, n, "lhs_batch_dims")) return &d->lhs_batch;
    if (word_is(p, off, n, "rhs_batch_dims")) return &d->rhs_batch;
    return NULL;
}

static int parse_attribute(parser *p, int32_t comp, int32_t idx) {
    pc_hlo_instruction *in = &p->m->comp[comp].inst[idx];
    size_t off;
    int pct = 0;
    size_t n = read_name(p, &off, &pct);
    if (!n || pct) {
        if (n) p->pos = off - 1;
        return expected(p, "an attribute name after ','");
    }
    if (expect_char(p, '=', "'=' after the attribute name") || skip_ws(p)) return -1;
    int prio = call_attr_prio(p, off, n);
    if (prio >= 0) return parse_calls(p, comp, idx, prio);
    if (word_is(p, off, n, "dimensions")) return parse_brace_list(p, &in->dimensions);
    if (word_is(p, off, n, "dynamic_slice_sizes")) return parse_brace_list(p, &in->dynamic_slice_sizes);
    if (word_is(p, off, n, "window")) return parse_window(p, &in->window);
    pc_i64s *dd = dot_dims_attr(p, off, n, &in->dot);
    if (dd) {
        in->dot.present = 1;
        return parse_brace_list(p, dd);
    }
    if (word_is(p, off, n, "dim_labels")) return parse_dim_labels(p, &in->conv);
    if (word_is(p, off, n, "slice")) return parse_slice(p, in);
    if (word_is(p, off, n, "padding")) return parse_padding(p, in);
    if (word_is(p, off, n, "is_stable")) return parse_bool(p, &in->is_stable);
    if (word_is(p, off, n, "feature_group_count"))
        return parse_i64(p, &in->feature_group_count, "an integer feature_group_count");
    if (word_is(p, off, n, "batch_group_count"))
        return parse_i64(p, &in->batch_group_count, "an integer batch_group_count");
    if (word_is(p, off, n, "iota_dimension")) { /* stored in dimensions, as XLA's proto does */
        int64_t v;
        if (parse_i64(p, &v, "an integer iota_dimension")) return -1;
        int64_t *d = malloc(sizeof *d);
        if (!d) return nomem(p);
        *d = v;
        free(in->dimensions.v);
        in->dimensions.v = d;
        in->dimensions.n = 1;
        return 0;
    }
    if (p->stats) p->stats->skipped_attrs++;
    return skip_value(p);
}

/* ---- instructions and computations ---------------------------------------------------- */

static int parse_instruction(parser *p, int32_t comp) {
    pc_hlo_computation *c = &p->m->comp[comp];
    cinfo *ci = &p->ci[comp];
    size_t start = p->pos, off = 0, n;
    int pct = 0, is_root = 0;
    n = read_name(p, &off, &pct);
    if (n && !pct && word_is(p, off, n, "ROOT")) {
        if (skip_ws(p)) return -1;
        if (peekc(p) != '=') { /* "ROOT = ..." names an instruction ROOT */
            is_root = 1;
            n = read_name(p, &off, &pct);
        }
    }
    if (!n) return expected(p, is_root ? "an instruction name after ROOT" : "an instruction name or '}'");
    if (expect_char(p, '=', "'=' after the instruction name")) return -1;
    if (c->n_inst == INT32_MAX) return perr(p, start, PC_ERR_RANGE, "more than 2^31-1 instructions in a computation");
    size_t icap = ci->icap;
    RESERVE(p, c->inst, icap, (size_t)c->n_inst + 1);
    RESERVE(p, ci->iname, ci->icap, (size_t)c->n_inst + 1);
    int32_t idx = c->n_inst++;
    pc_hlo_instruction *in = &c->inst[idx];
    memset(in, 0, sizeof *in);
    ci->iname[idx].off = off;
    ci->iname[idx].len = n;
    in->parameter_number = -1;
    if (!(in->name = dup_n(p->buf + off, n))) return nomem(p);
    if (is_root) {
        if (ci->root >= 0)
            return perr(p, start, PC_ERR_FORMAT, "second ROOT in computation '%s' (the first is '%s')", c->name,
                        c->inst[ci->root].name);
        ci->root = idx;
    }
    if (parse_shape(p, &in->shape, 0) || skip_ws(p)) return -1;
    size_t opos = p->pos;
    n = read_name(p, &off, &pct);
    if (!n || pct) {
        p->pos = opos;
        return expected(p, "an opcode after the shape");
    }
    if (!(in->opcode = dup_n(p->buf + off, n))) return nomem(p);
    in->opcode_id = opcode_lookup(p, p->buf + off, n);
    if (in->opcode_id == PC_HLO_UNKNOWN && p->stats) {
        if (!p->stats->unknown_opcodes)
            snprintf(p->stats->first_unknown, sizeof p->stats->first_unknown, "%s", in->opcode);
        p->stats->unknown_opcodes++;
    }
    if (in->opcode_id == PC_HLO_CONVOLUTION || in->opcode_id == PC_HLO_CUSTOM_CALL)
        in->feature_group_count = in->batch_group_count = 1; /* always set in XLA's proto */
    if (skip_ws(p)) return -1;
    if (peekc(p) != '(') return expected(p, "'(' after the opcode");
    if (in->opcode_id == PC_HLO_CONSTANT) {
        if (skip_group(p)) return -1; /* the literal */
    } else if (in->opcode_id == PC_HLO_PARAMETER) {
        p->pos++;
        if (skip_ws(p)) return -1;
        size_t ppos = p->pos;
        if (parse_i64(p, &in->parameter_number, "a parameter number")) return -1;
        if (in->parameter_number < 0) return perr(p, ppos, PC_ERR_FORMAT, "negative parameter number");
        if (expect_char(p, ')', "')' after the parameter number")) return -1;
    } else {
        p->pos++;
        int32_t slot = 0;
        if (skip_ws(p)) return -1;
        if (peekc(p) == ')') {
            p->pos++;
        } else {
            for (;;) {
                if (skip_ws(p)) return -1;
                if (at_shape(p)) {
                    if (parse_shape(p, NULL, 0) || skip_ws(p)) return -1;
                }
                size_t rpos = p->pos;
                n = read_name(p, &off, NULL);
                if (!n) return expected(p, "an operand name");
                if (slot == INT32_MAX) return perr(p, rpos, PC_ERR_RANGE, "more than 2^31-1 operands");
                RESERVE(p, p->orefs, p->oref_cap, p->noref + 1);
                oref *r = &p->orefs[p->noref++];
                r->inst = idx;
                r->slot = slot++;
                r->off = off;
                r->len = n;
                r->pos = rpos;
                if (skip_ws(p)) return -1;
                int more = list_sep(p, ')', "',' or ')' after the operand");
                if (more < 0) return -1;
                if (!more) break;
            }
        }
        if (slot) {
            in->operand_ids.v = pc_malloc_array((uint64_t)slot, sizeof(int64_t));
            if (!in->operand_ids.v) return nomem(p);
            in->operand_ids.n = slot;
            for (int32_t i = 0; i < slot; i++) in->operand_ids.v[i] = -1;
        }
    }
    size_t cref0 = p->ncref;
    for (;;) {
        if (skip_ws(p)) return -1;
        if (peekc(p) != ',') break;
        p->pos++;
        if (skip_ws(p) || parse_attribute(p, comp, idx)) return -1;
        in = &p->m->comp[comp].inst[idx];
    }
    /* called computations: stable order by role, slots assigned now, ids at the end */
    size_t k = p->ncref - cref0;
    if (k) {
        if (k > INT32_MAX) return perr(p, start, PC_ERR_RANGE, "too many called computations");
        cref *r = p->crefs + cref0;
        for (size_t i = 1; i < k; i++) {
            cref t = r[i];
            size_t j = i;
            for (; j > 0 && r[j - 1].prio > t.prio; j--) r[j] = r[j - 1];
            r[j] = t;
        }
        for (size_t i = 0; i < k; i++) r[i].slot = (int32_t)i;
        in->called_computation_ids.v = pc_calloc_array(k, sizeof(int64_t));
        if (!in->called_computation_ids.v) return nomem(p);
        in->called_computation_ids.n = (int32_t)k;
    }
    return 0;
}

typedef struct inst_keys {
    const char *buf;
    const struct span *name;
} inst_keys;
static const char *inst_key(const void *ctx, int32_t i, size_t *len) {
    const inst_keys *k = ctx;
    *len = k->name[i].len;
    return k->buf + k->name[i].off;
}
static const char *comp_key(const void *ctx, int32_t i, size_t *len) {
    const char *s = ((const pc_hlo_module *)ctx)->comp[i].name;
    *len = strlen(s);
    return s;
}

/* Operand cycles (possible only with forward references). */
static int check_cycles(parser *p, int32_t comp) {
    const pc_hlo_computation *c = &p->m->comp[comp];
    int32_t n = c->n_inst;
    uint8_t *color = calloc((size_t)n, 1);
    int32_t *stack = pc_malloc_array((uint64_t)n, sizeof *stack);
    int32_t *next = pc_calloc_array((uint64_t)n, sizeof *next);
    int rc = 0;
    if (!color || !stack || !next) {
        rc = nomem(p);
        goto done;
    }
    for (int32_t s = 0; s < n && !rc; s++) {
        if (color[s]) continue;
        int32_t top = 0;
        stack[top++] = s;
        color[s] = 1;
        while (top && !rc) {
            int32_t v = stack[top - 1];
            const pc_i64s *ops = &c->inst[v].operand_ids;
            if (next[v] < ops->n) {
                int32_t w = (int32_t)ops->v[next[v]++];
                if (color[w] == 1) {
                    if (w == v)
                        rc = perr(p, p->ci[comp].iname[v].off, PC_ERR_FORMAT, "instruction '%s' uses itself as an operand",
                                  c->inst[v].name);
                    else
                        rc = perr(p, p->ci[comp].iname[v].off, PC_ERR_FORMAT,
                                  "operand cycle: instruction '%s' uses '%s', which depends on '%s'", c->inst[v].name,
                                  c->inst[w].name, c->inst[v].name);
                } else if (!color[w]) {
                    color[w] = 1;
                    stack[top++] = w;
                }
            } else {
                color[v] = 2;
                top--;
            }
        }
    }
done:
    free(color);
    free(stack);
    free(next);
    return rc;
}

/* End of a computation: names, operands (to local indices), root, cycles. */
static int finish_computation(parser *p, int32_t comp) {
    pc_hlo_computation *c = &p->m->comp[comp];
    cinfo *ci = &p->ci[comp];
    if (c->n_inst == 0) return perr(p, ci->pos, PC_ERR_FORMAT, "computation '%s' has no instructions", c->name);
    name_map nm;
    inst_keys keys = {p->buf, ci->iname};
    if (name_map_init(&nm, (size_t)c->n_inst, inst_key, &keys)) return nomem(p);
    int rc = 0, forward = 0;
    for (int32_t i = 0; i < c->n_inst && !rc; i++) {
        int32_t prev = name_map_add(&nm, i);
        if (prev >= 0)
            rc = perr(p, ci->iname[i].off, PC_ERR_FORMAT, "duplicate instruction name '%s' in computation '%s'",
                      c->inst[i].name, c->name);
    }
    for (size_t k = 0; k < p->noref && !rc; k++) {
        const oref *r = &p->orefs[k];
        int32_t w = name_map_find(&nm, p->buf + r->off, r->len);
        if (w < 0) {
            rc = perr(p, r->pos, PC_ERR_FORMAT, "unknown operand '%.*s' in computation '%s'",
                      (int)(r->len > 200 ? 200 : r->len), p->buf + r->off, c->name);
            break;
        }
        c->inst[r->inst].operand_ids.v[r->slot] = w;
        if (w >= r->inst) forward = 1;
    }
    name_map_free(&nm);
    p->noref = 0;
    if (rc) return rc;
    if (ci->root < 0) ci->root = c->n_inst - 1; /* XLA: the last instruction */
    return forward ? check_cycles(p, comp) : 0;
}

/* `}, execution_thread="x"` after a computation: skipped. */
static int skip_trailing_attrs(parser *p) {
    for (;;) {
        if (skip_ws(p)) return -1;
        if (peekc(p) != ',') return 0;
        p->pos++;
        size_t off;
        if (skip_ws(p)) return -1;
        if (!read_name(p, &off, NULL)) return expected(p, "an attribute name after ','");
        if (expect_char(p, '=', "'=' after the attribute name") || skip_ws(p) || skip_value(p)) return -1;
        if (p->stats) p->stats->skipped_attrs++;
    }
}

static int parse_computation(parser *p, size_t off, size_t n, int pct, size_t start) {
    int entry = 0;
    if (!pct && word_is(p, off, n, "ENTRY")) {
        entry = 1;
        if (skip_ws(p)) return -1;
        n = read_name(p, &off, &pct);
        if (!n) return expected(p, "a computation name after ENTRY");
    }
    pc_hlo_module *m = p->m;
    if (m->n_comp == INT32_MAX) return perr(p, start, PC_ERR_RANGE, "too many computations");
    size_t cap = p->comp_cap;
    RESERVE(p, m->comp, cap, (size_t)m->n_comp + 1);
    RESERVE(p, p->ci, p->comp_cap, (size_t)m->n_comp + 1);
    int32_t comp = m->n_comp++;
    memset(&m->comp[comp], 0, sizeof m->comp[comp]);
    memset(&p->ci[comp], 0, sizeof p->ci[comp]);
    p->ci[comp].root = -1;
    p->ci[comp].entry = entry;
    p->ci[comp].pos = off - (size_t)pct;
    if (!(m->comp[comp].name = dup_n(p->buf + off, n))) return nomem(p);
    if (skip_ws(p)) return -1;
    if (peekc(p) == '(') { /* signature (p0: f32[2], ...) -> shape */
        if (skip_group(p) || skip_ws(p)) return -1;
        if (peekc(p) == '-' && peekc_at(p, 1) == '>') {
            p->pos += 2;
            if (parse_shape(p, NULL, 0) || skip_ws(p)) return -1;
        }
    }
    if (peekc(p) != '{') return expected(p, "'{' to start the computation body");
    size_t open = p->pos++;
    for (;;) {
        if (skip_ws(p)) return -1;
        if (peekc(p) == '}') {
            p->pos++;
            break;
        }
        if (peekc(p) < 0) {
            long l, col;
            line_col(p, open, &l, &col);
            return perr(p, p->pos, PC_ERR_FORMAT,
                        "expected '}' to close computation '%s' (opened at %ld:%ld), found end of input",
                        m->comp[comp].name, l, col);
        }
        if (parse_instruction(p, comp)) return -1;
    }
    if (finish_computation(p, comp)) return -1;
    return skip_trailing_attrs(p);
}

/* FileNames / FunctionNames / FileLocations / StackFrames tables after the
 * computations of newer dumps: `N "text"` or `N {...}` lines, skipped. */
static int skip_stack_table(parser *p) {
    for (;;) {
        if (skip_ws(p)) return -1;
        if (!is_digit(peekc(p))) return 0;
        int64_t v;
        if (parse_i64(p, &v, "an index") || skip_ws(p) || skip_value(p)) return -1;
    }
}

/* Resolves calls, orders computations (callees first, entry last), assigns ids. */
static int finish_module(parser *p, const char *header_name, size_t header_n) {
    pc_hlo_module *m = p->m;
    int32_t nc = m->n_comp;
    name_map nm;
    if (name_map_init(&nm, (size_t)nc, comp_key, m)) return nomem(p);
    int rc = 0;
    int32_t entry = -1;
    for (int32_t i = 0; i < nc && !rc; i++) {
        if (name_map_add(&nm, i) >= 0)
            rc = perr(p, p->ci[i].pos, PC_ERR_FORMAT, "duplicate computation name '%s'", m->comp[i].name);
        else if (p->ci[i].entry) {
            if (entry >= 0)
                rc = perr(p, p->ci[i].pos, PC_ERR_FORMAT, "second ENTRY computation '%s' (the first is '%s')",
                          m->comp[i].name, m->comp[entry].name);
            entry = i;
        }
    }
    for (size_t k = 0; k < p->ncref && !rc; k++) {
        const cref *r = &p->crefs[k];
        int32_t w = name_map_find(&nm, p->buf + r->off, r->len);
        if (w < 0)
            rc = perr(p, r->pos, PC_ERR_FORMAT, "unknown computation '%.*s'", (int)(r->len > 200 ? 200 : r->len),
                      p->buf + r->off);
        else
            m->comp[r->comp].inst[r->inst].called_computation_ids.v[r->slot] = w;
    }
    name_map_free(&nm);
    if (rc) return rc;
    /* The entry is called by nobody. Without ENTRY (test-style files) it is the
     * last computation that nothing calls (XLA takes the last one). */
    uint8_t *called = pc_calloc_array((uint64_t)nc, 1);
    if (!called) return nomem(p);
    for (size_t k = 0; k < p->ncref; k++) {
        const cref *r = &p->crefs[k];
        int32_t w = (int32_t)m->comp[r->comp].inst[r->inst].called_computation_ids.v[r->slot];
        if (w == entry && r->comp != entry && !rc)
            rc = perr(p, r->pos, PC_ERR_FORMAT, "computation '%s' calls the ENTRY computation '%s'",
                      m->comp[r->comp].name, m->comp[w].name);
        called[w] = 1;
    }
    if (entry < 0) {
        entry = nc - 1;
        for (int32_t i = nc - 1; i >= 0; i--)
            if (!called[i]) {
                entry = i;
                break;
            }
    }
    free(called);
    if (rc) return rc;

    /* depth-first post-order over the calls, computations in text order */
    int32_t *order = pc_malloc_array((uint64_t)nc, sizeof *order);
    int32_t *newidx = pc_malloc_array((uint64_t)nc, sizeof *newidx);
    uint8_t *color = pc_calloc_array((uint64_t)nc, 1);
    struct frame {
        int32_t c, i, j;
    } *st = pc_malloc_array((uint64_t)nc, sizeof *st);
    int64_t *base = pc_malloc_array((uint64_t)nc, sizeof *base);
    pc_hlo_computation *sorted = pc_calloc_array((uint64_t)nc, sizeof *sorted);
    int32_t no = 0;
    if (!order || !newidx || !color || !st || !base || !sorted) {
        rc = nomem(p);
        goto done;
    }
    for (int32_t s = 0; s < nc && !rc; s++) {
        if (color[s]) continue;
        int32_t top = 0;
        st[top++] = (struct frame){s, 0, 0};
        color[s] = 1;
        while (top && !rc) {
            struct frame *f = &st[top - 1];
            const pc_hlo_computation *c = &m->comp[f->c];
            if (f->i < c->n_inst) {
                const pc_i64s *calls = &c->inst[f->i].called_computation_ids;
                if (f->j >= calls->n) {
                    f->i++;
                    f->j = 0;
                    continue;
                }
                int32_t w = (int32_t)calls->v[f->j++];
                if (color[w] == 1) {
                    size_t at = p->ci[f->c].pos;
                    for (size_t k = 0; k < p->ncref; k++)
                        if (p->crefs[k].comp == f->c && p->crefs[k].inst == f->i && p->crefs[k].slot == f->j - 1)
                            at = p->crefs[k].pos;
                    if (w == f->c)
                        rc = perr(p, at, PC_ERR_FORMAT, "computation '%s' calls itself", c->name);
                    else
                        rc = perr(p, at, PC_ERR_FORMAT, "call cycle: computation '%s' calls '%s', which calls back",
                                  c->name, m->comp[w].name);
                } else if (!color[w]) {
                    color[w] = 1;
                    st[top++] = (struct frame){w, 0, 0};
                }
            } else {
                color[f->c] = 2;
                if (f->c != entry) order[no++] = f->c;
                top--;
            }
        }
    }
    if (rc) goto done;
    order[no++] = entry;
    int64_t total = 0;
    for (int32_t k = 0; k < nc; k++) {
        newidx[order[k]] = k;
        base[order[k]] = total;
        total += m->comp[order[k]].n_inst;
    }
    for (int32_t k = 0; k < nc; k++) {
        int32_t old = order[k];
        pc_hlo_computation *c = &m->comp[old];
        int64_t b = base[old];
        for (int32_t i = 0; i < c->n_inst; i++) {
            pc_hlo_instruction *in = &c->inst[i];
            in->id = b + i + 1;
            for (int32_t j = 0; j < in->operand_ids.n; j++) in->operand_ids.v[j] += b + 1;
            for (int32_t j = 0; j < in->called_computation_ids.n; j++)
                in->called_computation_ids.v[j] = newidx[in->called_computation_ids.v[j]] + 1;
        }
        c->id = k + 1;
        c->root_id = b + p->ci[old].root + 1;
        sorted[k] = *c;
    }
    free(m->comp);
    m->comp = sorted;
    sorted = NULL;
    p->comp_cap = (size_t)nc;
    m->entry_computation_id = nc;
    for (int32_t k = 0; k < nc; k++) { /* side info follows the new order (only sizes matter now) */
        free(p->ci[k].iname);
        p->ci[k].iname = NULL;
    }
    const char *nm_src = header_name ? header_name : m->comp[nc - 1].name;
    size_t nm_len = header_name ? header_n : strlen(m->comp[nc - 1].name);
    if (!(m->name = dup_n(nm_src, nm_len))) rc = nomem(p);
done:
    free(order);
    free(newidx);
    free(color);
    free(st);
    free(base);
    free(sorted);
    return rc;
}

static void parser_reset_module(parser *p) {
    if (p->m) {
        for (int32_t i = 0; i < p->m->n_comp; i++) free(p->ci[i].iname);
        pc_hlo_module_free(p->m);
    }
    p->m = NULL;
    free(p->ci);
    p->ci = NULL;
    p->comp_cap = 0;
    p->ncref = 0;
    p->noref = 0;
}

/* One module in [start, end). Returns 1 if the segment holds no module. */
static int parse_module(parser *p, size_t start, size_t end, pc_hlo_module **out) {
    p->pos = start;
    p->end = end;
    *out = NULL;
    if (skip_ws(p)) return -1;
    if (p->pos >= p->end) return 1;
    p->m = calloc(1, sizeof *p->m);
    if (!p->m) return nomem(p);
    const char *hname = NULL;
    size_t hn = 0, off, n;
    int pct = 0;
    size_t at = p->pos;
    n = read_name(p, &off, &pct);
    if (n && !pct && word_is(p, off, n, "HloModule")) {
        if (skip_ws(p)) return -1;
        hn = read_name(p, &off, NULL);
        if (!hn) return expected(p, "a module name after HloModule");
        hname = p->buf + off;
        if (skip_trailing_attrs(p)) return -1;
        at = p->pos;
        n = read_name(p, &off, &pct);
    }
    for (;;) {
        if (!n) {
            if (p->pos >= p->end) break;
            return expected(p, hname || p->m->n_comp ? "a computation or end of input"
                                                    : "'HloModule' or a computation");
        }
        if (!pct && (word_is(p, off, n, "FileNames") || word_is(p, off, n, "FunctionNames") ||
                     word_is(p, off, n, "FileLocations") || word_is(p, off, n, "StackFrames"))) {
            if (skip_stack_table(p)) return -1;
        } else if (parse_computation(p, off, n, pct, at)) {
            return -1;
        }
        if (skip_ws(p)) return -1;
        at = p->pos;
        n = read_name(p, &off, &pct);
    }
    if (p->m->n_comp == 0) return perr(p, p->pos, PC_ERR_FORMAT, "expected a computation after the HloModule line");
    if (finish_module(p, hname, hn)) return -1;
    *out = p->m;
    p->m = NULL;
    parser_reset_module(p);
    return 0;
}

/* Start of the next line after `i`. */
static size_t next_line(const char *buf, size_t len, size_t i) {
    const char *nl = memchr(buf + i, '\n', len - i);
    return nl ? (size_t)(nl - buf) + 1 : len;
}

static int is_split_line(const char *buf, size_t len, size_t i) {
    while (i < len && (buf[i] == ' ' || buf[i] == '\t')) i++;
    return len - i >= 8 && memcmp(buf + i, "// -----", 8) == 0;
}

void pc_hlo_modules_free(pc_hlo_module **mods, int nmods) {
    if (!mods) return;
    for (int i = 0; i < nmods; i++) pc_hlo_module_free(mods[i]);
    free(mods);
}

pc_status pc_hlo_parse_text(const char *buf, size_t len, const char *path, pc_hlo_module ***mods, int *nmods,
                            pc_hlo_text_stats *stats, pc_error *err) {
    if (mods) *mods = NULL;
    if (nmods) *nmods = 0;
    if (!mods || !nmods || (!buf && len))
        return pc_fail(err, PC_ERR_ARG, "pc_hlo_parse_text: NULL argument");
    if (stats) memset(stats, 0, sizeof *stats);
    parser p;
    memset(&p, 0, sizeof p);
    p.buf = buf ? buf : "";
    p.len = len;
    p.path = path ? path : "<hlo>";
    p.err = err;
    p.stats = stats;
    opcode_table_init(&p);
    pc_hlo_module **out = NULL;
    size_t nout = 0, cap = 0;
    size_t seg = 0;
    int rc = 0;
    for (size_t i = 0; i <= len && !rc;) {
        int split = i < len && is_split_line(p.buf, len, i);
        if (split || i == len) {
            pc_hlo_module *m = NULL;
            int r = parse_module(&p, seg, i, &m);
            if (r < 0) {
                rc = -1;
                break;
            }
            if (r == 0) {
                if (nout == INT32_MAX) {
                    pc_hlo_module_free(m);
                    rc = perr(&p, i, PC_ERR_RANGE, "too many modules");
                    break;
                }
                void *np = grow_buf(out, &cap, nout + 1, sizeof *out);
                if (!np) {
                    pc_hlo_module_free(m);
                    rc = nomem(&p);
                    break;
                }
                out = np;
                out[nout++] = m;
            }
            if (i == len) break;
            seg = next_line(p.buf, len, i);
            i = seg;
            continue;
        }
        i = next_line(p.buf, len, i);
    }
    if (!rc && nout == 0) {
        p.pos = p.end = len;
        rc = perr(&p, len, PC_ERR_FORMAT, "no HLO module or computation found");
    }
    parser_reset_module(&p);
    free(p.crefs);
    free(p.orefs);
    if (rc) {
        pc_hlo_modules_free(out, (int)nout);
        return p.code ? p.code : PC_ERR_FORMAT;
    }
    *mods = out;
    *nmods = (int)nout;
    return PC_OK;
}

pc_status pc_hlo_read_text_file(const char *path, pc_hlo_module ***mods, int *nmods, pc_hlo_text_stats *stats,
                                pc_error *err) {
    if (mods) *mods = NULL;
    if (nmods) *nmods = 0;
    if (!path) return pc_fail(err, PC_ERR_ARG, "pc_hlo_read_text_file: NULL path");
    FILE *f = fopen(path, "rb");
    if (!f) return pc_fail(err, PC_ERR_IO, "%s: cannot open", path);
    /* the size when the file can tell it (one allocation), else doubling */
    size_t cap = 1 << 16, len = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz >= 0 && (unsigned long)sz < SIZE_MAX - 1) cap = (size_t)sz + 1;
        rewind(f);
    }
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory reading the file", path);
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return pc_fail(err, PC_ERR_IO, "%s: read error", path);
    }
    pc_status st = pc_hlo_parse_text(buf, len, path, mods, nmods, stats, err);
    free(buf);
    return st;
}

/* ---- printer ------------------------------------------------------------------------------ */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (n + 1 > b->cap - b->n || !b->p) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc - b->n < n + 1) {
            if (nc > SIZE_MAX / 2) {
                b->oom = 1;
                return;
            }
            nc *= 2;
        }
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

static void sb_i64(sbuf *b, int64_t v) {
    char t[32];
    int n = snprintf(t, sizeof t, "%" PRId64, v);
    sb_putn(b, t, (size_t)n);
}

static void sb_list(sbuf *b, const int64_t *v, int32_t n, const char *sep) {
    for (int32_t i = 0; i < n; i++) {
        if (i) sb_puts(b, sep);
        sb_i64(b, v[i]);
    }
}

/* Printed names: valid identifiers, unique within their scope. */
static const char *strv_key(const void *ctx, int32_t i, size_t *len) {
    const char *s = ((char *const *)ctx)[i];
    *len = strlen(s);
    return s;
}

static int make_names(char **out, const char *const *raw, int32_t n) {
    for (int32_t i = 0; i < n; i++) out[i] = NULL;
    name_map nm;
    if (name_map_init(&nm, (size_t)n, strv_key, out)) return -1;
    int rc = 0;
    for (int32_t i = 0; i < n && !rc; i++) {
        const char *s = raw[i] ? raw[i] : "";
        size_t len = strlen(s);
        char *t = malloc(len + 32);
        if (!t) {
            rc = -1;
            break;
        }
        for (size_t k = 0; k < len; k++) t[k] = is_name_char((unsigned char)s[k]) ? s[k] : '_';
        if (!len) t[len++] = '_';
        t[len] = '\0';
        out[i] = t;
        for (int64_t k = 1; name_map_add(&nm, i) >= 0; k++) /* taken: add a suffix */
            snprintf(t + len, 32, ".u%" PRId64, k);
    }
    name_map_free(&nm);
    return rc;
}

static void free_names(char **v, int32_t n) {
    if (!v) return;
    for (int32_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static int print_shape(sbuf *b, const pc_hlo_shape *s) {
    if (s->element_type == ET_TUPLE) {
        sb_puts(b, "(");
        for (int32_t i = 0; i < s->tuple_count; i++) sb_puts(b, i ? ", ()" : "()");
        sb_puts(b, ")");
        return 0;
    }
    const char *et = elem_type_name(s->element_type);
    if (!et) return -1;
    sb_puts(b, et);
    sb_puts(b, "[");
    for (int32_t i = 0; i < s->dims.n; i++) {
        if (i) sb_puts(b, ",");
        if (s->dims.v[i] == INT64_MIN) sb_puts(b, "?");
        else sb_i64(b, s->dims.v[i]);
    }
    sb_puts(b, "]");
    if (s->minor_to_major.n > 0 || (s->dims.n > 0 && s->element_type != ET_TOKEN && s->element_type != ET_OPAQUE)) {
        sb_puts(b, "{"); /* `{}` keeps "no layout" through a round trip */
        sb_list(b, s->minor_to_major.v, s->minor_to_major.n, ",");
        sb_puts(b, "}");
    }
    return 0;
}

/* One side of dim_labels into t; 0 if the numbers cannot be written that way. */
static int labels_str(char *t, int64_t d0, int64_t d1, const pc_i64s *sp, char c0, char c1) {
    int32_t rank = sp->n + 2;
    if (sp->n > 10) return 0;
    memset(t, 0, 13);
    int64_t pos[12];
    int32_t np = 0;
    pos[np++] = d0;
    pos[np++] = d1;
    for (int32_t k = 0; k < sp->n; k++) pos[np++] = sp->v[k];
    for (int32_t k = 0; k < np; k++) {
        if (pos[k] < 0 || pos[k] >= rank || t[pos[k]]) return 0;
        t[pos[k]] = k == 0 ? c0 : k == 1 ? c1 : (char)('0' + (k - 2));
    }
    return 1;
}

static const char *opcode_text(const pc_hlo_instruction *in) {
    if (in->opcode && in->opcode[0]) {
        const char *s = in->opcode;
        for (; *s; s++)
            if (!is_name_char((unsigned char)*s)) break;
        if (!*s) return in->opcode;
    }
    const char *n = pc_hlo_opcode_name(in->opcode_id);
    return n ? n : "unknown-opcode";
}

static void print_calls(sbuf *b, const char *attr, const int64_t *ids, int32_t n, char *const *cnames,
                        const id_map *cmap, int list) {
    sb_puts(b, ", ");
    sb_puts(b, attr);
    sb_puts(b, list ? "={" : "=");
    for (int32_t i = 0; i < n; i++) {
        if (i) sb_puts(b, ", ");
        sb_puts(b, "%");
        sb_puts(b, cnames[id_map_find(cmap, ids[i])]);
    }
    if (list) sb_puts(b, "}");
}

static void print_dot_dims(sbuf *b, const pc_hlo_dot_dims *d) {
    const pc_i64s *l[4] = {&d->lhs_batch, &d->lhs_contracting, &d->rhs_batch, &d->rhs_contracting};
    static const char *const name[4] = {", lhs_batch_dims={", ", lhs_contracting_dims={",
                                        ", rhs_batch_dims={", ", rhs_contracting_dims={"};
    for (int i = 0; i < 4 && d->present; i++) {
        if (l[i]->n == 0) continue;
        sb_puts(b, name[i]);
        sb_list(b, l[i]->v, l[i]->n, ",");
        sb_puts(b, "}");
    }
}

static pc_status print_instruction(sbuf *b, const pc_hlo_module *m, const pc_hlo_computation *c,
                                   const pc_hlo_instruction *in, char *const *inames, const id_map *imap,
                                   char *const *cnames, const id_map *cmap, int32_t idx, pc_error *err) {
    int op = in->opcode_id;
    const char *opname = opcode_text(in);
    sb_puts(b, "  ");
    if (in->id == c->root_id) sb_puts(b, "ROOT ");
    sb_puts(b, "%");
    sb_puts(b, inames[idx]);
    sb_puts(b, " = ");
    if (print_shape(b, &in->shape))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%s: instruction '%s': element type %" PRId32 " has no HLO text name",
                       c->name, in->name ? in->name : "", in->shape.element_type);
    sb_puts(b, " ");
    sb_puts(b, opname);
    sb_puts(b, "(");
    if (op == PC_HLO_PARAMETER || (op == PC_HLO_UNKNOWN && strcmp(opname, "parameter") == 0)) {
        sb_i64(b, in->parameter_number < 0 ? 0 : in->parameter_number);
    } else if (op == PC_HLO_CONSTANT) {
        sb_puts(b, "{...}");
    } else {
        for (int32_t j = 0; j < in->operand_ids.n; j++) {
            int32_t w = id_map_find(imap, in->operand_ids.v[j]);
            if (w < 0)
                return pc_fail(err, PC_ERR_INVALID,
                               "%s: instruction '%s': operand id %" PRId64 " is not an instruction of the computation",
                               c->name, in->name ? in->name : "", in->operand_ids.v[j]);
            if (j) sb_puts(b, ", ");
            sb_puts(b, "%");
            sb_puts(b, inames[w]);
        }
    }
    sb_puts(b, ")");
    /* dimensions */
    if (op == PC_HLO_IOTA && in->dimensions.n == 1) {
        sb_puts(b, ", iota_dimension=");
        sb_i64(b, in->dimensions.v[0]);
    } else if (in->dimensions.n > 0 || op == PC_HLO_BROADCAST) {
        sb_puts(b, ", dimensions={");
        sb_list(b, in->dimensions.v, in->dimensions.n, ",");
        sb_puts(b, "}");
    }
    /* window */
    const pc_hlo_window *w = &in->window;
    if (w->n > 0) {
        const int64_t *f[6] = {w->size, w->stride, w->padding_low, w->padding_high, w->base_dilation,
                               w->window_dilation};
        const char *names[6] = {"size", "stride", "pad", "pad", "lhs_dilate", "rhs_dilate"};
        const int64_t dflt[6] = {0, 1, 0, 0, 1, 1};
        sb_puts(b, ", window={");
        for (int k = 0; k < 6; k++) {
            if (k == 3) continue;
            if (k) sb_puts(b, " ");
            sb_puts(b, names[k]);
            sb_puts(b, "=");
            for (int32_t i = 0; i < w->n; i++) {
                if (i) sb_puts(b, "x");
                sb_i64(b, f[k] ? f[k][i] : dflt[k]);
                if (k == 2) {
                    sb_puts(b, "_");
                    sb_i64(b, f[3] ? f[3][i] : 0);
                }
            }
        }
        sb_puts(b, " rhs_reversal=");
        for (int32_t i = 0; i < w->n; i++) {
            if (i) sb_puts(b, "x");
            sb_puts(b, w->window_reversal && w->window_reversal[i] ? "1" : "0");
        }
        sb_puts(b, "}");
    }
    /* dim_labels */
    if (in->conv.present) {
        const pc_hlo_conv_dims *d = &in->conv;
        char li[13], lk[13], lo[13];
        if (d->kernel_spatial.n != d->input_spatial.n || d->output_spatial.n != d->input_spatial.n ||
            !labels_str(li, d->input_batch, d->input_feature, &d->input_spatial, 'b', 'f') ||
            !labels_str(lk, d->kernel_input_feature, d->kernel_output_feature, &d->kernel_spatial, 'i', 'o') ||
            !labels_str(lo, d->output_batch, d->output_feature, &d->output_spatial, 'b', 'f'))
            return pc_fail(err, PC_ERR_UNSUPPORTED,
                           "%s: instruction '%s': convolution dimension numbers cannot be written as dim_labels",
                           c->name, in->name ? in->name : "");
        sb_puts(b, ", dim_labels=");
        sb_puts(b, li);
        sb_puts(b, "_");
        sb_puts(b, lk);
        sb_puts(b, "->");
        sb_puts(b, lo);
    }
    /* slice */
    if (in->slice_start.n > 0 || in->slice_limit.n > 0 || in->slice_stride.n > 0) {
        if (in->slice_limit.n != in->slice_start.n || in->slice_stride.n != in->slice_start.n)
            return pc_fail(err, PC_ERR_INVALID, "%s: instruction '%s': slice start/limit/stride lengths differ",
                           c->name, in->name ? in->name : "");
        sb_puts(b, ", slice={");
        for (int32_t i = 0; i < in->slice_start.n; i++) {
            sb_puts(b, i ? ", [" : "[");
            sb_i64(b, in->slice_start.v[i]);
            sb_puts(b, ":");
            sb_i64(b, in->slice_limit.v[i]);
            sb_puts(b, ":");
            sb_i64(b, in->slice_stride.v[i]);
            sb_puts(b, "]");
        }
        sb_puts(b, "}");
    }
    if (in->dynamic_slice_sizes.n > 0) {
        sb_puts(b, ", dynamic_slice_sizes={");
        sb_list(b, in->dynamic_slice_sizes.v, in->dynamic_slice_sizes.n, ",");
        sb_puts(b, "}");
    }
    /* padding */
    if (in->pad_low.n > 0 || in->pad_high.n > 0 || in->pad_interior.n > 0) {
        if (in->pad_high.n != in->pad_low.n || in->pad_interior.n != in->pad_low.n)
            return pc_fail(err, PC_ERR_INVALID, "%s: instruction '%s': padding low/high/interior lengths differ",
                           c->name, in->name ? in->name : "");
        sb_puts(b, ", padding=");
        for (int32_t i = 0; i < in->pad_low.n; i++) {
            if (i) sb_puts(b, "x");
            sb_i64(b, in->pad_low.v[i]);
            sb_puts(b, "_");
            sb_i64(b, in->pad_high.v[i]);
            sb_puts(b, "_");
            sb_i64(b, in->pad_interior.v[i]);
        }
    }
    print_dot_dims(b, &in->dot);
    int64_t dgroup = (op == PC_HLO_CONVOLUTION || op == PC_HLO_CUSTOM_CALL) ? 1 : 0;
    if (in->feature_group_count != dgroup) {
        sb_puts(b, ", feature_group_count=");
        sb_i64(b, in->feature_group_count);
    }
    if (in->batch_group_count != dgroup) {
        sb_puts(b, ", batch_group_count=");
        sb_i64(b, in->batch_group_count);
    }
    if (in->is_stable) sb_puts(b, ", is_stable=true");
    /* called computations */
    const pc_i64s *cc = &in->called_computation_ids;
    for (int32_t j = 0; j < cc->n; j++)
        if (id_map_find(cmap, cc->v[j]) < 0)
            return pc_fail(err, PC_ERR_INVALID, "%s: instruction '%s': called computation id %" PRId64 " not in module",
                           c->name, in->name ? in->name : "", cc->v[j]);
    if (cc->n == 2 && op == PC_HLO_WHILE) {
        print_calls(b, "condition", cc->v, 1, cnames, cmap, 0);
        print_calls(b, "body", cc->v + 1, 1, cnames, cmap, 0);
    } else if (cc->n == 2 && op == PC_HLO_SELECT_AND_SCATTER) {
        print_calls(b, "select", cc->v, 1, cnames, cmap, 0);
        print_calls(b, "scatter", cc->v + 1, 1, cnames, cmap, 0);
    } else if (cc->n > 0 && op == PC_HLO_CONDITIONAL) {
        print_calls(b, "branch_computations", cc->v, cc->n, cnames, cmap, 1);
    } else if (cc->n == 1 && (op == PC_HLO_FUSION || op == PC_HLO_ASYNC_START || op == PC_HLO_ASYNC_UPDATE ||
                              op == PC_HLO_ASYNC_DONE)) {
        print_calls(b, "calls", cc->v, 1, cnames, cmap, 0);
    } else if (cc->n == 1) {
        print_calls(b, "to_apply", cc->v, 1, cnames, cmap, 0);
    } else if (cc->n > 1) {
        print_calls(b, "called_computations", cc->v, cc->n, cnames, cmap, 1);
    }
    sb_puts(b, "\n");
    (void)m;
    return PC_OK;
}

static pc_status print_module(sbuf *b, const pc_hlo_module *m, pc_error *err) {
    if (!m) return pc_fail(err, PC_ERR_ARG, "pc_hlo_print_text: NULL module");
    pc_status st = PC_OK;
    char **cnames = NULL, **inames = NULL;
    const char **raw = NULL;
    int32_t nin = 0;
    id_map cmap = {0}, imap = {0};
    char *mname = NULL;
    {
        const char *mr = m->name ? m->name : "module";
        if (make_names(&mname, &mr, 1)) goto oom;
    }
    sb_puts(b, "HloModule ");
    sb_puts(b, mname);
    sb_puts(b, "\n");
    cnames = pc_calloc_array((uint64_t)(m->n_comp > 0 ? m->n_comp : 1), sizeof *cnames);
    raw = pc_calloc_array((uint64_t)(m->n_comp > 0 ? m->n_comp : 1), sizeof *raw);
    if (!cnames || !raw || id_map_init(&cmap, (size_t)m->n_comp)) goto oom;
    for (int32_t k = 0; k < m->n_comp; k++) {
        raw[k] = m->comp[k].name;
        if (id_map_add(&cmap, m->comp[k].id, k)) {
            st = pc_fail(err, PC_ERR_INVALID, "module '%s': computation id %" PRId64 " appears twice", mname,
                         m->comp[k].id);
            goto done;
        }
    }
    if (make_names(cnames, raw, m->n_comp)) goto oom;
    for (int32_t k = 0; k < m->n_comp && st == PC_OK; k++) {
        const pc_hlo_computation *c = &m->comp[k];
        free(raw);
        raw = pc_calloc_array((uint64_t)(c->n_inst > 0 ? c->n_inst : 1), sizeof *raw);
        free_names(inames, nin);
        nin = 0;
        inames = pc_calloc_array((uint64_t)(c->n_inst > 0 ? c->n_inst : 1), sizeof *inames);
        id_map_free(&imap);
        if (!raw || !inames || id_map_init(&imap, (size_t)c->n_inst)) goto oom;
        nin = c->n_inst;
        for (int32_t i = 0; i < c->n_inst; i++) {
            raw[i] = c->inst[i].name;
            if (id_map_add(&imap, c->inst[i].id, i)) {
                st = pc_fail(err, PC_ERR_INVALID, "computation '%s': instruction id %" PRId64 " appears twice",
                             cnames[k], c->inst[i].id);
                goto done;
            }
        }
        if (make_names(inames, raw, c->n_inst)) goto oom;
        sb_puts(b, "\n");
        if (c->id == m->entry_computation_id) sb_puts(b, "ENTRY ");
        sb_puts(b, "%");
        sb_puts(b, cnames[k]);
        sb_puts(b, " {\n");
        for (int32_t i = 0; i < c->n_inst && st == PC_OK; i++)
            st = print_instruction(b, m, c, &c->inst[i], inames, &imap, cnames, &cmap, i, err);
        sb_puts(b, "}\n");
    }
    if (st == PC_OK && b->oom) goto oom;
    goto done;
oom:
    st = pc_fail(err, PC_ERR_NOMEM, "pc_hlo_print_text: out of memory");
done:
    free(mname);
    free(raw);
    free_names(cnames, m->n_comp);
    free_names(inames, nin);
    id_map_free(&cmap);
    id_map_free(&imap);
    return st;
}

pc_status pc_hlo_print_text_buf(const pc_hlo_module *m, char **text, size_t *len, pc_error *err) {
    if (!text) return pc_fail(err, PC_ERR_ARG, "pc_hlo_print_text_buf: NULL output");
    *text = NULL;
    if (len) *len = 0;
    sbuf b = {0};
    pc_status st = print_module(&b, m, err);
    if (st != PC_OK) {
        free(b.p);
        return st;
    }
    *text = b.p;
    if (len) *len = b.n;
    return PC_OK;
}

pc_status pc_hlo_print_text(const pc_hlo_module *m, FILE *out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pc_hlo_print_text: NULL stream");
    char *t;
    size_t n;
    pc_status st = pc_hlo_print_text_buf(m, &t, &n, err);
    if (st != PC_OK) return st;
    size_t wr = fwrite(t, 1, n, out);
    free(t);
    if (wr != n) return pc_fail(err, PC_ERR_IO, "pc_hlo_print_text: write failed");
    return PC_OK;
}
