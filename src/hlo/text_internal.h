/*
 * What the HLO text files share (text.h is the API they implement):
 *   text_tables.c  element type names, name -> index and id -> index tables
 *   text_lex.c     the cursor: positions, messages, whitespace, names, integers,
 *                  skipped values
 *   text_shape.c   shapes and layouts
 *   text_attr.c    instruction attributes
 *   text_infer.c   shapes XLA infers when an instruction omits its shape
 *   text_sniff.c   what a file that is not HLO text is (MLIR, proto text, binary)
 *   text_parse.c   instructions, computations, modules; pc_hlo_parse_text
 *   text_input.c   files, dump directories and patterns; pc_hlo_read_text_file
 *   text_print.c   pc_hlo_print_text
 * Internal to src/hlo/text_*.c; the tx_ prefix keeps these names apart from
 * the rest of the library, as sy_ does for synth/.
 *
 * Parser functions return 0 on success and -1 on an error, which is
 * reported once (the first) through tx_perr into the parser's pc_error.
 */
#ifndef PC_HLO_TEXT_INTERNAL_H
#define PC_HLO_TEXT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/util.h"
#include "hlo/text.h"
#include "tpugraphs/opcode.h"

/* ---- element types (xla.PrimitiveType), text_tables.c ----------------------- */

#define ET_TUPLE 13
#define ET_OPAQUE 14
#define ET_TOKEN 17

int32_t tx_elem_type_find(const char *s, size_t n); /* 0 if not an element type */
const char *tx_elem_type_name(int32_t t);          /* NULL if it has no name */

/* ---- characters ------------------------------------------------------------------ */

static inline int is_digit(int c) { return c >= '0' && c <= '9'; }
static inline int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline int is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static inline int is_name_char(int c) { return is_alnum(c) || c == '_' || c == '.' || c == '-'; }
static inline int is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* ---- small helpers and hash tables, text_tables.c -------------------------------- */

char *tx_dup_n(const char *s, size_t n); /* NUL-terminated copy; NULL on OOM */
uint64_t tx_hash_bytes(const char *s, size_t n);

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

int tx_name_map_init(name_map *m, size_t n, key_fn key_of, const void *ctx); /* 0 or -1 (OOM) */
void tx_name_map_free(name_map *m);
int32_t tx_name_map_find(const name_map *m, const char *s, size_t n); /* index, or -1 */
/* Inserts entry i; returns the index already holding its key, or -1 if new. */
int32_t tx_name_map_add(name_map *m, int32_t i);

/* int64 id -> index table. */
typedef struct id_map {
    int64_t *key;
    int32_t *val; /* index + 1; 0 = empty */
    size_t mask;
} id_map;

int tx_id_map_init(id_map *m, size_t n); /* 0 or -1 (OOM) */
void tx_id_map_free(id_map *m);
int tx_id_map_add(id_map *m, int64_t k, int32_t i); /* 0 if added, 1 if the key was already there */
int32_t tx_id_map_find(const id_map *m, int64_t k); /* index, or -1 */

/* ---- parser state ------------------------------------------------------------- */

typedef struct oref { /* an operand name waiting to be resolved */
    int32_t inst, slot;
    int32_t direct; /* >= 0: a nested instruction's local index (no name) */
    size_t off, len, pos;
} oref;

typedef struct cref { /* a called computation name waiting to be resolved */
    int32_t comp, inst, slot, prio;
    int32_t direct; /* >= 0: an inline computation's index (no name) */
    size_t off, len, pos;
} cref;

struct span {
    size_t off, len;
};

typedef struct ixinfo { /* what the parser keeps beside each instruction */
    struct span name;   /* its name in the text (after any '%'); len 0: nested, named by the parser */
    struct span shape;  /* its shape's text; len 0: none written (inferred) */
    size_t pos;         /* where it starts (messages) */
    int64_t tindex;     /* get-tuple-element's index= (-1 if none) */
    int32_t same;       /* inferred: has the shape of this local instruction (-1 none) */
    uint8_t pend;       /* 1: its shape is still to be inferred */
    uint8_t tup;        /* inferred tuple whose elements are its operands' shapes */
} ixinfo;

typedef struct cinfo { /* what the parser keeps beside each computation */
    ixinfo *ix;   /* per instruction */
    size_t icap;  /* capacity of ix and of the computation's inst array */
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
    int depth;                /* nested instructions and inline computations */
    size_t first_token;       /* of the first module (format sniffing) */
    size_t noclose_from, noclose_end; /* no line starts with '}' after this (text_parse.c) */
    int32_t opcode_of_id[PC_HLO_OPCODE_COUNT]; /* module's m->opcodes index + 1 by TpuGraphs id */
    size_t opcode_cap;                         /* of m->opcodes */
    size_t line_pos; /* computation lines: newlines before line_pos counted in line_no */
    int32_t line_no; /* 0: none counted yet */
    pc_progress_fn progress; /* "bytes parsed" (text.h, PC_HLO_PROGRESS_MIN_BYTES); NULL: none */
    void *progress_user;
    size_t progress_next; /* report when pos reaches it */
} parser;

/* ---- the cursor, text_lex.c ------------------------------------------------------- */

void tx_opcode_table_init(parser *p);
int tx_opcode_lookup(const parser *p, const char *s, size_t n); /* PC_HLO_UNKNOWN if not in the table */

void tx_line_col(const parser *p, size_t at, long *line, long *col);
/* Records the first error as "PATH:LINE:COLUMN: message"; returns -1. */
int tx_perr(parser *p, size_t at, pc_status code, const char *fmt, ...) PC_PRINTF(4, 5);
int tx_nomem(parser *p);
/* "expected WHAT, found <the text at the cursor>"; returns -1. */
int tx_expected(parser *p, const char *what);

#define RESERVE(p, arr, cap, need)                                              \
    do {                                                                        \
        void *np_ = pc_grow_array((arr), &(cap), (need), sizeof *(arr));          \
        if (!np_) return tx_nomem(p);                                           \
        (arr) = np_;                                                            \
    } while (0)

static inline int peekc(const parser *p) {
    return p->pos < p->end ? (unsigned char)p->buf[p->pos] : -1;
}
static inline int peekc_at(const parser *p, size_t k) {
    return p->pos + k < p->end ? (unsigned char)p->buf[p->pos + k] : -1;
}
static inline int word_is(const parser *p, size_t off, size_t n, const char *kw) {
    return strlen(kw) == n && memcmp(p->buf + off, kw, n) == 0;
}

/* After a list item: ',' (consumed; returns 1, another item follows), the
 * closing bracket (consumed; returns 0) or an error naming what was expected. */
int tx_list_sep(parser *p, char close, const char *what);
int tx_skip_ws(parser *p); /* whitespace, // line comments and block comments */
int tx_expect_char(parser *p, int c, const char *what);
/* A name: optional '%', then [A-Za-z0-9_.-]+. Returns its length (0: none). */
size_t tx_read_name(parser *p, size_t *off, int *pct);
int tx_parse_i64(parser *p, int64_t *out, const char *what);
int tx_i64s_push(parser *p, pc_i64s *l, size_t *cap, int64_t v);
void tx_i64s_set(pc_i64s *dst, pc_i64s src); /* frees dst's list, then takes src */
/* One balanced (...), [...] or {...} group starting at the cursor. */
int tx_skip_group(parser *p);
/* An attribute value we do not store: words, strings and balanced groups up
 * to the next top-level ',', whitespace or closing bracket. */
int tx_skip_value(parser *p);

/* ---- shapes, text_shape.c; attributes, text_attr.c ------------------------------- */

/* 1 if the cursor is at a shape: '(', `b(` (a buffer) or an element type directly followed by '['. */
int tx_at_shape(const parser *p);
/* A shape; out may be NULL (parsed and dropped). */
int tx_parse_shape(parser *p, pc_hlo_shape *out, int depth);
/* `name=value` after an instruction's ',' into instruction idx of computation comp. */
int tx_parse_attribute(parser *p, int32_t comp, int32_t idx);
/* Keeps `name` = the len bytes of the text at off as an attribute of `in` (hlo_ir.h). */
int tx_keep_attr(parser *p, pc_hlo_instruction *in, const char *name, size_t name_len, size_t off,
                 size_t len);

/* Parses the body `{ instructions }` of an inline computation (to_apply={...})
 * at the cursor as a new computation; its index in *out. text_parse.c. */
int tx_parse_inline_computation(parser *p, int32_t *out);

/* ---- semantic checks, text_check.c ----------------------------------------------- */

/* XLA verifier rules on a parsed computation (layouts, parameter numbers, dot dimension
 * numbers); a FILE:LINE:COLUMN error at the first instruction that breaks one. */
int tx_check_semantics(parser *p, int32_t comp);

/* ---- shape inference, text_infer.c ----------------------------------------------- */

/* 1 if XLA infers this opcode's shape when the text omits it. */
int tx_can_infer(const char *opcode);
/* Fills the shapes of computation comp's instructions marked pend (operands
 * resolved to local indices). Errors name the instruction. */
int tx_infer_shapes(parser *p, int32_t comp);

/* ---- what the text is when it is not HLO, text_sniff.c ---------------------------- */

/* At the first token of a file that did not parse: if it is MLIR, HloModuleProto
 * text or binary data, reports that with advice (returns -1); else 0. */
int tx_sniff_format(parser *p, size_t at);

#endif /* PC_HLO_TEXT_INTERNAL_H */
