/*
 * HLO text shapes (text_internal.h): `f32[2,3]{1,0}`, tuples `(s32[], pred[])`,
 * dynamic dimensions `[<=N]` and `[?]`, layouts with tiles (skipped). Tuple
 * shapes recurse at most PC_HLO_TEXT_MAX_DEPTH deep.
 */
#include <stdlib.h>
#include <string.h>

#include "hlo/text_internal.h"


/* Where the '[' after an element type of n bytes at `at` is: XLA's lexer skips blanks
 * between the two (`s32 [4]`). p->end if none. */
static size_t dims_open(const parser *p, size_t at) {
    size_t q = at;
    while (q < p->end && (p->buf[q] == ' ' || p->buf[q] == '\t')) q++;
    return q < p->end && p->buf[q] == '[' ? q : p->end;
}

/* 1 if the cursor is at a shape: '(' or an element type followed by '['. */
int tx_at_shape(const parser *p) {
    if (peekc(p) == '(') return 1;
    if (peekc(p) == 'b' && peekc_at(p, 1) == '(') return 1; /* buffer b(f32[4]) */
    size_t n = 0;
    while (p->pos + n < p->end && is_alnum((unsigned char)p->buf[p->pos + n])) n++;
    if (!n || dims_open(p, p->pos + n) == p->end) return 0;
    return tx_elem_type_find(p->buf + p->pos, n) != 0;
}

/* Layout `{1,0}` or `{1,0:T(8,128)...}`: keeps minor_to_major only. */
static int parse_layout(parser *p, pc_i64s *m2m) {
    size_t cap = 0, open = p->pos;
    p->pos++; /* '{' */
    if (tx_skip_ws(p)) return -1;
    if (peekc(p) != '}' && peekc(p) != ':') {
        for (;;) {
            int64_t v;
            if (tx_skip_ws(p) || tx_parse_i64(p, &v, "a layout dimension") || tx_i64s_push(p, m2m, &cap, v) ||
                tx_skip_ws(p))
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
            if (c < 0) return tx_perr(p, open, PC_ERR_FORMAT, "unterminated layout '{'");
            if (c == '(') {
                if (++depth > PC_HLO_TEXT_MAX_DEPTH)
                    return tx_perr(p, p->pos, PC_ERR_RANGE, "layout nested deeper than %d", PC_HLO_TEXT_MAX_DEPTH);
            } else if (c == ')') {
                if (depth-- == 0) return tx_expected(p, "'}' to close the layout");
            } else if (c == '}' && depth == 0) {
                break;
            } else if (c == '{' || c == '[' || c == ']') {
                return tx_expected(p, "'}' to close the layout");
            }
            p->pos++;
        }
    }
    if (peekc(p) != '}') return tx_expected(p, "',' or '}' in the layout");
    p->pos++;
    return 0;
}

/* A layout follows: a '{' (after blanks or not) whose next token is an integer or
 * ':' (XLA's rule), or '}' right after the dimensions (`f32[]{}`); else the '{'
 * opens a computation body (`-> f32[8]{` then an instruction). */
static int at_layout(parser *p) {
    size_t q = p->pos;
    while (q < p->end && is_space((unsigned char)p->buf[q])) q++;
    if (q >= p->end || p->buf[q] != '{') return 0;
    size_t r = q + 1;
    while (r < p->end && is_space((unsigned char)p->buf[r])) r++;
    if (r < p->end && (is_digit((unsigned char)p->buf[r]) || p->buf[r] == ':' ||
                       (q == p->pos && p->buf[r] == '}'))) {
        p->pos = q;
        return 1;
    }
    return 0;
}

/* A shape; out may be NULL (parsed and dropped). */
int tx_parse_shape(parser *p, pc_hlo_shape *out, int depth) {
    if (tx_skip_ws(p)) return -1;
    if (depth >= PC_HLO_TEXT_MAX_DEPTH)
        return tx_perr(p, p->pos, PC_ERR_RANGE, "tuple shapes nested deeper than %d", PC_HLO_TEXT_MAX_DEPTH);
    if (peekc(p) == 'b' && peekc_at(p, 1) == '(') { /* a buffer: the shape inside */
        p->pos += 2;
        if (tx_parse_shape(p, out, depth + 1)) return -1;
        return tx_expect_char(p, ')', "')' to end the buffer shape b(...)");
    }
    if (peekc(p) == '(') { /* element shapes kept when out is given (hlo/cost.c reads them) */
        p->pos++;
        pc_hlo_shape t = {.element_type = ET_TUPLE};
        size_t cap = 0;
        if (tx_skip_ws(p)) return -1;
        if (peekc(p) == ')') {
            p->pos++;
        } else {
            for (;;) {
                if (t.tuple_count == INT32_MAX) {
                    pc_hlo_shape_clear(&t);
                    return tx_perr(p, p->pos, PC_ERR_RANGE, "more than 2^31-1 tuple elements");
                }
                if (out) {
                    void *v = pc_grow_array(t.tuple_shapes, &cap, (size_t)t.tuple_count + 1,
                                            sizeof *t.tuple_shapes);
                    if (!v) {
                        pc_hlo_shape_clear(&t);
                        return tx_nomem(p);
                    }
                    t.tuple_shapes = v;
                    memset(&t.tuple_shapes[t.tuple_count], 0, sizeof *t.tuple_shapes);
                }
                int rc = tx_parse_shape(p, out ? &t.tuple_shapes[t.tuple_count] : NULL, depth + 1);
                t.tuple_count++;
                if (rc || tx_skip_ws(p)) {
                    pc_hlo_shape_clear(&t);
                    return -1;
                }
                int more = tx_list_sep(p, ')', "',' or ')' in the tuple shape");
                if (more < 0) {
                    pc_hlo_shape_clear(&t);
                    return -1;
                }
                if (!more) break;
            }
        }
        if (out) {
            pc_hlo_shape_clear(out);
            *out = t;
        }
        return 0;
    }
    size_t s = p->pos, n = 0;
    while (p->pos + n < p->end && is_alnum((unsigned char)p->buf[p->pos + n])) n++;
    int32_t et = n ? tx_elem_type_find(p->buf + s, n) : 0;
    if (!et) return tx_expected(p, "a shape such as f32[2,3]{1,0} or (s32[], pred[])");
    p->pos += n;
    if (dims_open(p, p->pos) < p->end) p->pos = dims_open(p, p->pos);
    if (peekc(p) != '[') return tx_expected(p, "'[' after the element type");
    p->pos++;
    pc_i64s dims = {0}, m2m = {0};
    size_t cap = 0;
    if (tx_skip_ws(p)) goto fail;
    if (peekc(p) == ']') {
        p->pos++;
    } else {
        for (;;) {
            int64_t v;
            if (tx_skip_ws(p)) goto fail;
            if (peekc(p) == '?') {
                p->pos++;
                v = INT64_MIN; /* XLA's kUnboundedSize */
            } else {
                if (peekc(p) == '<' && peekc_at(p, 1) == '=') {
                    p->pos += 2;
                    if (tx_skip_ws(p)) goto fail;
                }
                if (!is_digit(peekc(p))) {
                    tx_expected(p, "a dimension size (N, <=N or ?)");
                    goto fail;
                }
                if (tx_parse_i64(p, &v, "a dimension size")) goto fail;
            }
            if (tx_i64s_push(p, &dims, &cap, v) || tx_skip_ws(p)) goto fail;
            int more = tx_list_sep(p, ']', "',' or ']' in the dimensions");
            if (more < 0) goto fail;
            if (!more) break;
        }
    }
    if ((et == ET_TOKEN || et == ET_OPAQUE) && dims.n) {
        tx_perr(p, s, PC_ERR_FORMAT, "%.*s shapes have no dimensions", (int)n, p->buf + s);
        goto fail;
    }
    if (at_layout(p)) {
        if (parse_layout(p, &m2m)) goto fail;
    } else if (dims.n > 0) { /* XLA fills the default layout {rank-1, ..., 0} */
        m2m.v = malloc((size_t)dims.n * sizeof *m2m.v);
        if (!m2m.v) {
            tx_nomem(p);
            goto fail;
        }
        m2m.n = dims.n;
        for (int32_t i = 0; i < dims.n; i++) m2m.v[i] = dims.n - 1 - i;
    }
    if (out) {
        pc_hlo_shape_clear(out);
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

