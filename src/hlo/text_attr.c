/*
 * HLO text instruction attributes (text_internal.h): the ones the IR keeps
 * (dimensions, window, dim_labels, slice, padding, dot dimension numbers,
 * called computations, ...) are parsed into the instruction; any other is
 * skipped and counted.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/text_internal.h"
#include "tpugraphs/opcode.h"


/* {1,2,3} */
static int parse_brace_list(parser *p, pc_i64s *out) {
    if (tx_expect_char(p, '{', "'{'")) return -1;
    pc_i64s l = {0};
    size_t cap = 0;
    if (tx_skip_ws(p)) goto fail;
    if (peekc(p) == '}') {
        p->pos++;
    } else {
        for (;;) {
            int64_t v;
            if (tx_skip_ws(p) || tx_parse_i64(p, &v, "an integer") || tx_i64s_push(p, &l, &cap, v) || tx_skip_ws(p))
                goto fail;
            int more = tx_list_sep(p, '}', "',' or '}' in the list");
            if (more < 0) goto fail;
            if (!more) break;
        }
    }
    tx_i64s_set(out, l);
    return 0;
fail:
    free(l.v);
    return -1;
}

/* 3x3 (integers separated by 'x') */
static int parse_x_list(parser *p, pc_i64s *l, size_t *cap, const char *what) {
    for (;;) {
        int64_t v;
        if (tx_parse_i64(p, &v, what) || tx_i64s_push(p, l, cap, v)) return -1;
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
        if (tx_parse_i64(p, &a, "a low padding")) return -1;
        if (peekc(p) != '_') return tx_expected(p, "'_' between low and high padding");
        p->pos++;
        if (tx_parse_i64(p, &b, "a high padding")) return -1;
        if (in && peekc(p) == '_') {
            p->pos++;
            if (tx_parse_i64(p, &c, "an interior padding")) return -1;
        }
        if (tx_i64s_push(p, lo, &caps[0], a) || tx_i64s_push(p, hi, &caps[1], b)) return -1;
        if (in && tx_i64s_push(p, in, &caps[2], c)) return -1;
        if (peekc(p) == 'x' && (is_digit(peekc_at(p, 1)) || peekc_at(p, 1) == '-')) {
            p->pos++;
            continue;
        }
        return 0;
    }
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
    if (tx_skip_ws(p)) return -1;
    size_t open = p->pos;
    if (tx_expect_char(p, '{', "'{' after window=")) return -1;
    for (;;) {
        if (tx_skip_ws(p)) goto fail;
        if (peekc(p) == '}') {
            p->pos++;
            break;
        }
        size_t ks = p->pos;
        while (is_alpha(peekc(p)) || peekc(p) == '_') p->pos++;
        size_t kn = p->pos - ks;
        if (!kn) {
            tx_expected(p, "a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal) or '}'");
            goto fail;
        }
        if (peekc(p) != '=') {
            tx_expected(p, "'=' after the window field");
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
            tx_perr(p, open, PC_ERR_FORMAT, "window has %" PRId32 " dimensions in size but %" PRId32 " in %s", n,
                    l[f].n, field[f]);
            goto fail;
        }
    }
    for (int32_t i = 0; i < l[W_REV].n; i++)
        if (l[W_REV].v[i] != 0 && l[W_REV].v[i] != 1) {
            tx_perr(p, open, PC_ERR_FORMAT, "window rhs_reversal values must be 0 or 1");
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
                tx_nomem(p);
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
            pc_hlo_window_clear(&nw);
            tx_nomem(p);
            goto fail;
        }
        for (int32_t i = 0; i < l[W_REV].n; i++) nw.window_reversal[i] = (uint8_t)l[W_REV].v[i];
    } else {
        for (int f = W_STRIDE; f < W_N; f++)
            if (l[f].n) {
                tx_perr(p, open, PC_ERR_FORMAT, "window has %s but no size", field[f]);
                goto fail;
            }
    }
    for (int f = 0; f < W_N; f++) free(l[f].v);
    pc_hlo_window_clear(w);
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
        } else if (c == '?') { /* a dimension in no role */
            continue;
        } else if (is_digit((unsigned char)c) && pos[c - '0'] < 0) {
            pos[c - '0'] = (int64_t)i;
            nsp++;
        } else {
            return tx_perr(p, at, PC_ERR_FORMAT,
                           "dim_labels %s '%.*s': unexpected or repeated '%c' (expected '%c', '%c' and digits)", side,
                           (int)n, t, c, c0, c1);
        }
    }
    if (!seen0 || !seen1)
        return tx_perr(p, at, PC_ERR_FORMAT, "dim_labels %s '%.*s' needs one '%c' and one '%c'", side, (int)n, t,
                       c0, c1);
    for (int k = 0; k < nsp; k++)
        if (pos[k] < 0)
            return tx_perr(p, at, PC_ERR_FORMAT, "dim_labels %s '%.*s': spatial dimensions must be 0..%d", side,
                           (int)n, t, nsp - 1);
    free(sp->v);
    sp->n = 0;
    sp->v = NULL;
    if (nsp) {
        sp->v = malloc((size_t)nsp * sizeof *sp->v);
        if (!sp->v) return tx_nomem(p);
        memcpy(sp->v, pos, (size_t)nsp * sizeof *sp->v);
        sp->n = nsp;
    }
    return 0;
}

/* dim_labels=b01f_01io->b01f */
static int parse_dim_labels(parser *p, pc_hlo_conv_dims *cd) {
    size_t s = p->pos;
    while (p->pos < p->end &&
           (is_name_char((unsigned char)p->buf[p->pos]) || p->buf[p->pos] == '>' || p->buf[p->pos] == '?'))
        p->pos++;
    const char *t = p->buf + s;
    size_t n = p->pos - s, u = 0, a = 0;
    while (u < n && t[u] != '_') u++;
    for (a = u + 1; a + 1 < n; a++)
        if (t[a] == '-' && t[a + 1] == '>') break;
    if (u >= n || a + 1 >= n) {
        p->pos = s;
        return tx_expected(p, "dim_labels such as b01f_01io->b01f");
    }
    if (parse_labels(p, s, t, u, 'b', 'f', &cd->input_batch, &cd->input_feature, &cd->input_spatial, "input") ||
        parse_labels(p, s, t + u + 1, a - u - 1, 'i', 'o', &cd->kernel_input_feature, &cd->kernel_output_feature,
                     &cd->kernel_spatial, "kernel") ||
        parse_labels(p, s, t + a + 2, n - a - 2, 'b', 'f', &cd->output_batch, &cd->output_feature,
                     &cd->output_spatial, "output"))
        return -1;
    if (cd->input_spatial.n != cd->kernel_spatial.n || cd->input_spatial.n != cd->output_spatial.n)
        return tx_perr(p, s, PC_ERR_FORMAT, "dim_labels '%.*s': input, kernel and output have different spatial ranks",
                       (int)n, t);
    cd->present = 1;
    return 0;
}

/* slice={[0:10:2], [1:5]} */
static int parse_slice(parser *p, pc_hlo_inst_ext *in) {
    pc_i64s st = {0}, li = {0}, sd = {0};
    size_t c0 = 0, c1 = 0, c2 = 0;
    if (tx_expect_char(p, '{', "'{' after slice=") || tx_skip_ws(p)) return -1;
    if (peekc(p) == '}') {
        p->pos++;
    } else {
        for (;;) {
            int64_t a, b, c = 1;
            if (tx_expect_char(p, '[', "'[' to start a slice dimension") || tx_skip_ws(p) ||
                tx_parse_i64(p, &a, "a slice start") || tx_expect_char(p, ':', "':' after the slice start") ||
                tx_skip_ws(p) || tx_parse_i64(p, &b, "a slice limit") || tx_skip_ws(p))
                goto fail;
            if (peekc(p) == ':') {
                p->pos++;
                if (tx_skip_ws(p) || tx_parse_i64(p, &c, "a slice stride")) goto fail;
            }
            if (tx_expect_char(p, ']', "']' to end the slice dimension") || tx_i64s_push(p, &st, &c0, a) ||
                tx_i64s_push(p, &li, &c1, b) || tx_i64s_push(p, &sd, &c2, c) || tx_skip_ws(p))
                goto fail;
            int more = tx_list_sep(p, '}', "',' or '}' in slice");
            if (more < 0) goto fail;
            if (!more) break;
        }
    }
    tx_i64s_set(&in->slice_start, st);
    tx_i64s_set(&in->slice_limit, li);
    tx_i64s_set(&in->slice_stride, sd);
    return 0;
fail:
    free(st.v);
    free(li.v);
    free(sd.v);
    return -1;
}

/* padding=0_0_0x1_1_0 (empty for a rank-0 pad) */
static int parse_padding(parser *p, pc_hlo_inst_ext *in) {
    pc_i64s lo = {0}, hi = {0}, it = {0};
    size_t caps[3] = {0, 0, 0};
    int c = peekc(p);
    if (c >= 0 && !is_digit(c) && c != '-' && !is_space(c) && c != ',' && c != '}') {
        if (p->stats) p->stats->skipped_attrs++; /* not a padding config: skip it */
        return tx_skip_value(p);
    }
    if (is_digit(c) || c == '-') {
        if (parse_pad_list(p, &lo, &hi, &it, caps)) {
            free(lo.v);
            free(hi.v);
            free(it.v);
            return -1;
        }
    }
    tx_i64s_set(&in->pad_low, lo);
    tx_i64s_set(&in->pad_high, hi);
    tx_i64s_set(&in->pad_interior, it);
    return 0;
}

static int parse_bool(parser *p, int32_t *out) {
    size_t off;
    size_t n = tx_read_name(p, &off, NULL);
    if (n && word_is(p, off, n, "true")) *out = 1;
    else if (n && word_is(p, off, n, "false")) *out = 0;
    else {
        p->pos = n ? off : p->pos;
        return tx_expected(p, "true or false");
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

/* 1 if the attribute fills a field of pc_hlo_inst_ext. */
static int is_ext_attr(const parser *p, size_t off, size_t n) {
    static const char *const names[] = {"dynamic_slice_sizes", "window", "dim_labels", "slice",
                                        "padding", "lhs_contracting_dims", "rhs_contracting_dims",
                                        "lhs_batch_dims", "rhs_batch_dims"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (word_is(p, off, n, names[i])) return 1;
    return 0;
}

/* Attributes kept as text for hlo/cost.c (PC_HLO_COST_ATTRS in hlo/text.h); backend_config
 * only where the cost reads it (custom-call GEMM dims, a while's known_trip_count). */
static int keep_for_cost(const parser *p, const pc_hlo_instruction *in, size_t off, size_t n) {
    static const char *const names[] = {"custom_call_target", "replica_groups", "direction",
                                        "fft_type", "fft_length", "source_target_pairs"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (word_is(p, off, n, names[i])) return 1;
    if (word_is(p, off, n, "index")) return in->opcode_id == PC_HLO_GET_TUPLE_ELEMENT;
    return word_is(p, off, n, "backend_config") &&
           (in->opcode_id == PC_HLO_CUSTOM_CALL || in->opcode_id == PC_HLO_WHILE);
}

int tx_keep_attr(parser *p, pc_hlo_instruction *in, const char *name, size_t name_len, size_t off,
                 size_t len) {
    if (in->n_attrs == INT32_MAX) return tx_perr(p, off, PC_ERR_RANGE, "too many attributes");
    pc_hlo_attr *v = realloc(in->attrs, ((size_t)in->n_attrs + 1) * sizeof *v);
    if (!v) return tx_nomem(p);
    in->attrs = v;
    pc_hlo_attr *a = &in->attrs[in->n_attrs];
    a->name = tx_dup_n(name, name_len);
    a->value = tx_dup_n(p->buf + off, len);
    if (!a->name || !a->value) {
        free(a->name);
        free(a->value);
        return tx_nomem(p);
    }
    in->n_attrs++;
    return 0;
}

/* literal=s32[] 1, literal=f32[2]{0} {1, 2}, literal=(s32[], f32[]) (1, 2), and a tuple
 * as XLA prints it, literal=( s32[2]{0} {1, 2}, pred[] 0 ): skipped. */
static int skip_literal(parser *p) {
    if (p->stats) p->stats->skipped_attrs++;
    if (peekc(p) == '(') { /* the tuple group, then its value if a shape list came first */
        if (tx_skip_group(p) || tx_skip_ws(p)) return -1;
        return peekc(p) == '(' || peekc(p) == '{' ? tx_skip_group(p) : 0;
    }
    if (tx_parse_shape(p, NULL, 0) || tx_skip_ws(p)) return -1;
    int c = peekc(p);
    if (c == '{' || c == '(') return tx_skip_group(p);
    size_t s = p->pos;
    while (p->pos < p->end && (is_name_char(peekc(p)) || peekc(p) == '+')) p->pos++;
    if (p->pos == s) return tx_expected(p, "a literal value");
    return 0;
}

int tx_parse_attribute(parser *p, int32_t comp, int32_t idx) {
    pc_hlo_instruction *in = &p->m->comp[comp].inst[idx];
    size_t off;
    int pct = 0;
    size_t n = tx_read_name(p, &off, &pct);
    if (!n || pct) {
        if (n) p->pos = off - 1;
        return tx_expected(p, "an attribute name after ','");
    }
    if (tx_expect_char(p, '=', "'=' after the attribute name") || tx_skip_ws(p)) return -1;
    if (word_is(p, off, n, "dimensions")) return parse_brace_list(p, &in->dimensions);
    if (is_ext_attr(p, off, n)) { /* a field of pc_hlo_inst_ext: made on first use */
        pc_hlo_inst_ext *x = pc_hlo_x_mut(in);
        if (!x) return tx_nomem(p);
        if (word_is(p, off, n, "dynamic_slice_sizes")) return parse_brace_list(p, &x->dynamic_slice_sizes);
        if (word_is(p, off, n, "window")) return parse_window(p, &x->window);
        if (word_is(p, off, n, "dim_labels")) return parse_dim_labels(p, &x->conv);
        if (word_is(p, off, n, "slice")) return parse_slice(p, x);
        if (word_is(p, off, n, "padding")) return parse_padding(p, x);
        x->dot.present = 1;
        return parse_brace_list(p, dot_dims_attr(p, off, n, &x->dot));
    }
    if (word_is(p, off, n, "is_stable")) return parse_bool(p, &in->is_stable);
    if (word_is(p, off, n, "feature_group_count"))
        return tx_parse_i64(p, &in->feature_group_count, "an integer feature_group_count");
    if (word_is(p, off, n, "batch_group_count"))
        return tx_parse_i64(p, &in->batch_group_count, "an integer batch_group_count");
    if (word_is(p, off, n, "iota_dimension")) { /* stored in dimensions, as XLA's proto does */
        int64_t v;
        if (tx_parse_i64(p, &v, "an integer iota_dimension")) return -1;
        int64_t *d = malloc(sizeof *d);
        if (!d) return tx_nomem(p);
        *d = v;
        free(in->dimensions.v);
        in->dimensions.v = d;
        in->dimensions.n = 1;
        return 0;
    }
    if (word_is(p, off, n, "index") && is_digit(peekc(p))) { /* get-tuple-element's */
        size_t vs = p->pos; /* for shape inference, and kept as text for hlo/cost.c */
        if (tx_parse_i64(p, &p->ci[comp].ix[idx].tindex, "an integer index")) return -1;
        if (in->opcode_id != PC_HLO_GET_TUPLE_ELEMENT) return 0;
        return tx_keep_attr(p, in, p->buf + off, n, vs, p->pos - vs);
    }
    if (word_is(p, off, n, "literal") && tx_at_shape(p)) return skip_literal(p);
    size_t vs = p->pos;
    if (tx_skip_value(p)) return -1;
    if (keep_for_cost(p, in, off, n)) return tx_keep_attr(p, in, p->buf + off, n, vs, p->pos - vs);
    if (p->stats) p->stats->skipped_attrs++;
    return 0;
}

