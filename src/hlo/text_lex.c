/*
 * The HLO text cursor (text_internal.h): positions and messages, whitespace
 * and comments, names, integers, list separators and the values the parser
 * skips. There is no tokenizer pass: the parser calls these on the raw bytes
 * with one cursor, no copies of the input. Skipped values that nest are
 * walked with an explicit stack bounded by PC_HLO_TEXT_MAX_DEPTH.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/text_internal.h"
#include "tpugraphs/opcode.h"

/* ---- opcodes -------------------------------------------------------------------- */

_Static_assert(PC_HLO_OPCODE_COUNT < 200, "opcode hash table needs free slots");

void tx_opcode_table_init(parser *p) {
    memset(p->opcode_slot, 0, sizeof p->opcode_slot);
    for (int id = 1; id < PC_HLO_OPCODE_COUNT; id++) {
        const char *nm = pc_hlo_opcode_name(id);
        if (!nm) continue;
        size_t h = tx_hash_bytes(nm, strlen(nm)) & 255;
        while (p->opcode_slot[h]) h = (h + 1) & 255;
        p->opcode_slot[h] = (int16_t)id;
    }
}

int tx_opcode_lookup(const parser *p, const char *s, size_t n) {
    for (size_t h = tx_hash_bytes(s, n) & 255;; h = (h + 1) & 255) {
        int id = p->opcode_slot[h];
        if (!id) return PC_HLO_UNKNOWN;
        const char *nm = pc_hlo_opcode_name(id);
        if (strlen(nm) == n && memcmp(nm, s, n) == 0) return id;
    }
}

/* ---- positions and messages ------------------------------------------------------ */

void tx_line_col(const parser *p, size_t at, long *line, long *col) {
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

int tx_perr(parser *p, size_t at, pc_status code, const char *fmt, ...) {
    if (p->failed) return -1;
    p->failed = 1;
    p->code = code;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    long line, col;
    tx_line_col(p, at, &line, &col);
    pc_fail(p->err, code, "%s:%ld:%ld: %s", p->path, line, col, msg);
    return -1;
}

int tx_nomem(parser *p) { return tx_perr(p, p->pos, PC_ERR_NOMEM, "out of memory"); }

/* ---- the cursor ---------------------------------------------------------------------- */

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

int tx_expected(parser *p, const char *what) {
    char f[48];
    describe(p, f, sizeof f);
    return tx_perr(p, p->pos, PC_ERR_FORMAT, "expected %s, found %s", what, f);
}

/* After a list item: ',' (consumed; returns 1, another item follows), the
 * closing bracket (consumed; returns 0) or an error naming what was expected. */
int tx_list_sep(parser *p, char close, const char *what) {
    int c = peekc(p);
    if (c != ',' && c != close) return tx_expected(p, what);
    p->pos++;
    return c == ',';
}

/* Whitespace, // line comments and block comments. */
int tx_skip_ws(parser *p) {
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
                    return tx_perr(p, start, PC_ERR_FORMAT, "unterminated /* comment");
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

int tx_expect_char(parser *p, int c, const char *what) {
    if (tx_skip_ws(p)) return -1;
    if (peekc(p) != c) return tx_expected(p, what);
    p->pos++;
    return 0;
}

/* A name: optional '%', then [A-Za-z0-9_.-]+. Returns its length (0: none). */
size_t tx_read_name(parser *p, size_t *off, int *pct) {
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

int tx_parse_i64(parser *p, int64_t *out, const char *what) {
    size_t s = p->pos;
    int neg = 0;
    if (peekc(p) == '-' || peekc(p) == '+') {
        neg = peekc(p) == '-';
        p->pos++;
    }
    if (!is_digit(peekc(p))) {
        p->pos = s;
        return tx_expected(p, what);
    }
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    while (is_digit(peekc(p))) {
        unsigned d = (unsigned)(p->buf[p->pos] - '0');
        if (v > (lim - d) / 10) return tx_perr(p, s, PC_ERR_FORMAT, "integer out of range for int64");
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

int tx_i64s_push(parser *p, pc_i64s *l, size_t *cap, int64_t v) {
    if (l->n == INT32_MAX) return tx_perr(p, p->pos, PC_ERR_RANGE, "list longer than 2^31-1 entries");
    RESERVE(p, l->v, *cap, (size_t)l->n + 1);
    l->v[l->n++] = v;
    return 0;
}

void tx_i64s_set(pc_i64s *dst, pc_i64s src) {
    free(dst->v);
    *dst = src;
}

/* ---- skipping values ------------------------------------------------------------ */

static int skip_string(parser *p) {
    size_t start = p->pos;
    p->pos++; /* opening quote */
    for (;;) {
        int c = peekc(p);
        if (c < 0) return tx_perr(p, start, PC_ERR_FORMAT, "unterminated string");
        p->pos++;
        if (c == '\\') {
            if (p->pos >= p->end) return tx_perr(p, start, PC_ERR_FORMAT, "unterminated string");
            p->pos++;
        } else if (c == '"') {
            return 0;
        }
    }
}

/* One balanced (...), [...] or {...} group starting at the cursor. */
int tx_skip_group(parser *p) {
    char want[PC_HLO_TEXT_MAX_DEPTH];
    size_t where[PC_HLO_TEXT_MAX_DEPTH];
    int depth = 0;
    for (;;) {
        int c = peekc(p);
        if (c < 0) {
            long l, col;
            tx_line_col(p, where[depth - 1], &l, &col);
            return tx_perr(p, p->pos, PC_ERR_FORMAT, "expected '%c' to close the '%c' at %ld:%ld, found end of input",
                           want[depth - 1], p->buf[where[depth - 1]], l, col);
        }
        if (c == '"') {
            if (skip_string(p)) return -1;
            continue;
        }
        if (c == '/' && (peekc_at(p, 1) == '/' || peekc_at(p, 1) == '*')) {
            if (tx_skip_ws(p)) return -1;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') {
            if (depth == PC_HLO_TEXT_MAX_DEPTH)
                return tx_perr(p, p->pos, PC_ERR_RANGE, "brackets nested deeper than %d", PC_HLO_TEXT_MAX_DEPTH);
            want[depth] = c == '(' ? ')' : c == '[' ? ']' : '}';
            where[depth] = p->pos;
            depth++;
            p->pos++;
            continue;
        }
        if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) return tx_expected(p, "'(', '[' or '{'");
            if (c != want[depth - 1]) {
                long l, col;
                tx_line_col(p, where[depth - 1], &l, &col);
                return tx_perr(p, p->pos, PC_ERR_FORMAT, "expected '%c' to close the '%c' at %ld:%ld, found '%c'",
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
int tx_skip_value(parser *p) {
    size_t s = p->pos;
    for (;;) {
        int c = peekc(p);
        if (c < 0 || is_space(c) || c == ',' || c == '}' || c == ')' || c == ']') break;
        if (c == '/' && (peekc_at(p, 1) == '/' || peekc_at(p, 1) == '*')) break;
        if (c == '"') {
            if (skip_string(p)) return -1;
        } else if (c == '(' || c == '[' || c == '{') {
            if (tx_skip_group(p)) return -1;
        } else {
            p->pos++;
        }
    }
    if (p->pos == s) return tx_expected(p, "an attribute value");
    /* `mesh['x'=2,'y'=4] {'y'}`: a group after blanks on the same line continues the value */
    size_t q = p->pos;
    while (q < p->end && (p->buf[q] == ' ' || p->buf[q] == '\t')) q++;
    if (q > p->pos && q < p->end && p->buf[q] == '{' && p->buf[p->pos - 1] == ']') {
        p->pos = q;
        return tx_skip_group(p);
    }
    return 0;
}

