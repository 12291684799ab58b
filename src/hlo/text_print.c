/*
 * The HLO text printer (text.h): a module in the IR back to text that
 * text_parse.c reads to the same IR fields. Names are made valid and unique
 * first (the IR may hold any bytes); ids are looked up through hash tables.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/text_internal.h"
#include "tpugraphs/opcode.h"

/* ---- printer ------------------------------------------------------------------------------ */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (n + 1 > b->cap - b->n || !b->p) {
        char *np = n < SIZE_MAX - b->n ? pc_grow_array(b->p, &b->cap, b->n + n + 1, 1) : NULL;
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
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
    if (tx_name_map_init(&nm, (size_t)n, strv_key, out)) return -1;
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
        for (int64_t k = 1; tx_name_map_add(&nm, i) >= 0; k++) /* taken: add a suffix */
            snprintf(t + len, 32, ".u%" PRId64, k);
    }
    tx_name_map_free(&nm);
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
    const char *et = tx_elem_type_name(s->element_type);
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
        sb_puts(b, cnames[tx_id_map_find(cmap, ids[i])]);
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

static const char *inst_name(const pc_hlo_instruction *in) { return in->name ? in->name : ""; }

/* `%name = shape opcode(operands)`, or the parameter number, or `{...}` for a
 * constant's literal (not in the IR). */
static pc_status print_head(sbuf *b, const pc_hlo_computation *c, const pc_hlo_instruction *in,
                            char *const *inames, const id_map *imap, int32_t idx, pc_error *err) {
    int op = in->opcode_id;
    const char *opname = opcode_text(in);
    sb_puts(b, "  ");
    if (in->id == c->root_id) sb_puts(b, "ROOT ");
    sb_puts(b, "%");
    sb_puts(b, inames[idx]);
    sb_puts(b, " = ");
    if (print_shape(b, &in->shape))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%s: instruction '%s': element type %" PRId32 " has no HLO text name",
                       c->name, inst_name(in), in->shape.element_type);
    sb_puts(b, " ");
    sb_puts(b, opname);
    sb_puts(b, "(");
    if (op == PC_HLO_PARAMETER || (op == PC_HLO_UNKNOWN && strcmp(opname, "parameter") == 0)) {
        sb_i64(b, in->parameter_number < 0 ? 0 : in->parameter_number);
    } else if (op == PC_HLO_CONSTANT) {
        sb_puts(b, "{...}");
    } else {
        for (int32_t j = 0; j < in->operand_ids.n; j++) {
            int32_t w = tx_id_map_find(imap, in->operand_ids.v[j]);
            if (w < 0)
                return pc_fail(err, PC_ERR_INVALID,
                               "%s: instruction '%s': operand id %" PRId64 " is not an instruction of the computation",
                               c->name, inst_name(in), in->operand_ids.v[j]);
            if (j) sb_puts(b, ", ");
            sb_puts(b, "%");
            sb_puts(b, inames[w]);
        }
    }
    sb_puts(b, ")");
    return PC_OK;
}

/* iota_dimension for an iota (as XLA writes it), else dimensions; a broadcast
 * always has them (`{}` for a scalar operand). */
static void print_dimensions(sbuf *b, const pc_hlo_instruction *in) {
    if (in->opcode_id == PC_HLO_IOTA && in->dimensions.n == 1) {
        sb_puts(b, ", iota_dimension=");
        sb_i64(b, in->dimensions.v[0]);
    } else if (in->dimensions.n > 0 || in->opcode_id == PC_HLO_BROADCAST) {
        sb_puts(b, ", dimensions={");
        sb_list(b, in->dimensions.v, in->dimensions.n, ",");
        sb_puts(b, "}");
    }
}

/* window={size=.. stride=.. pad=lo_hi.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..},
 * every field written, missing arrays as XLA's defaults. */
static void print_window(sbuf *b, const pc_hlo_window *w) {
    if (w->n <= 0) return;
    const int64_t *f[6] = {w->size, w->stride, w->padding_low, w->padding_high, w->base_dilation,
                           w->window_dilation};
    const char *names[6] = {"size", "stride", "pad", "pad", "lhs_dilate", "rhs_dilate"};
    const int64_t dflt[6] = {0, 1, 0, 0, 1, 1};
    sb_puts(b, ", window={");
    for (int k = 0; k < 6; k++) {
        if (k == 3) continue; /* padding_high goes with padding_low */
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

static pc_status print_dim_labels(sbuf *b, const pc_hlo_computation *c, const pc_hlo_instruction *in,
                                  pc_error *err) {
    if (!pc_hlo_x(in)->conv.present) return PC_OK;
    const pc_hlo_conv_dims *d = &pc_hlo_x(in)->conv;
    char li[13], lk[13], lo[13];
    if (d->kernel_spatial.n != d->input_spatial.n || d->output_spatial.n != d->input_spatial.n ||
        !labels_str(li, d->input_batch, d->input_feature, &d->input_spatial, 'b', 'f') ||
        !labels_str(lk, d->kernel_input_feature, d->kernel_output_feature, &d->kernel_spatial, 'i', 'o') ||
        !labels_str(lo, d->output_batch, d->output_feature, &d->output_spatial, 'b', 'f'))
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "%s: instruction '%s': convolution dimension numbers cannot be written as dim_labels",
                       c->name, inst_name(in));
    sb_puts(b, ", dim_labels=");
    sb_puts(b, li);
    sb_puts(b, "_");
    sb_puts(b, lk);
    sb_puts(b, "->");
    sb_puts(b, lo);
    return PC_OK;
}

/* slice={[start:limit:stride], ...} */
static pc_status print_slice(sbuf *b, const pc_hlo_computation *c, const pc_hlo_instruction *in, pc_error *err) {
    if (pc_hlo_x(in)->slice_start.n <= 0 && pc_hlo_x(in)->slice_limit.n <= 0 && pc_hlo_x(in)->slice_stride.n <= 0) return PC_OK;
    if (pc_hlo_x(in)->slice_limit.n != pc_hlo_x(in)->slice_start.n || pc_hlo_x(in)->slice_stride.n != pc_hlo_x(in)->slice_start.n)
        return pc_fail(err, PC_ERR_INVALID, "%s: instruction '%s': slice start/limit/stride lengths differ",
                       c->name, inst_name(in));
    sb_puts(b, ", slice={");
    for (int32_t i = 0; i < pc_hlo_x(in)->slice_start.n; i++) {
        sb_puts(b, i ? ", [" : "[");
        sb_i64(b, pc_hlo_x(in)->slice_start.v[i]);
        sb_puts(b, ":");
        sb_i64(b, pc_hlo_x(in)->slice_limit.v[i]);
        sb_puts(b, ":");
        sb_i64(b, pc_hlo_x(in)->slice_stride.v[i]);
        sb_puts(b, "]");
    }
    sb_puts(b, "}");
    return PC_OK;
}

/* padding=lo_hi_interiorx... */
static pc_status print_padding(sbuf *b, const pc_hlo_computation *c, const pc_hlo_instruction *in, pc_error *err) {
    if (pc_hlo_x(in)->pad_low.n <= 0 && pc_hlo_x(in)->pad_high.n <= 0 && pc_hlo_x(in)->pad_interior.n <= 0) return PC_OK;
    if (pc_hlo_x(in)->pad_high.n != pc_hlo_x(in)->pad_low.n || pc_hlo_x(in)->pad_interior.n != pc_hlo_x(in)->pad_low.n)
        return pc_fail(err, PC_ERR_INVALID, "%s: instruction '%s': padding low/high/interior lengths differ",
                       c->name, inst_name(in));
    sb_puts(b, ", padding=");
    for (int32_t i = 0; i < pc_hlo_x(in)->pad_low.n; i++) {
        if (i) sb_puts(b, "x");
        sb_i64(b, pc_hlo_x(in)->pad_low.v[i]);
        sb_puts(b, "_");
        sb_i64(b, pc_hlo_x(in)->pad_high.v[i]);
        sb_puts(b, "_");
        sb_i64(b, pc_hlo_x(in)->pad_interior.v[i]);
    }
    return PC_OK;
}

/* Group counts that differ from what the parser fills when they are absent. */
static void print_group_counts(sbuf *b, const pc_hlo_instruction *in) {
    int op = in->opcode_id;
    int64_t dgroup = (op == PC_HLO_CONVOLUTION || op == PC_HLO_CUSTOM_CALL) ? 1 : 0;
    if (in->feature_group_count != dgroup) {
        sb_puts(b, ", feature_group_count=");
        sb_i64(b, in->feature_group_count);
    }
    if (in->batch_group_count != dgroup) {
        sb_puts(b, ", batch_group_count=");
        sb_i64(b, in->batch_group_count);
    }
}

/* Called computations under the attribute names that give them back in the
 * same order (the parser orders while, select-and-scatter and conditional
 * calls by role). */
static pc_status print_called(sbuf *b, const pc_hlo_computation *c, const pc_hlo_instruction *in,
                              char *const *cnames, const id_map *cmap, pc_error *err) {
    int op = in->opcode_id;
    const pc_i64s *cc = &in->called_computation_ids;
    for (int32_t j = 0; j < cc->n; j++)
        if (tx_id_map_find(cmap, cc->v[j]) < 0)
            return pc_fail(err, PC_ERR_INVALID, "%s: instruction '%s': called computation id %" PRId64 " not in module",
                           c->name, inst_name(in), cc->v[j]);
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
    return PC_OK;
}

/* One instruction line: the head, then the attributes in a fixed order. */
static pc_status print_instruction(sbuf *b, const pc_hlo_computation *c, const pc_hlo_instruction *in,
                                   char *const *inames, const id_map *imap, char *const *cnames,
                                   const id_map *cmap, int32_t idx, pc_error *err) {
    pc_status st = print_head(b, c, in, inames, imap, idx, err);
    if (st != PC_OK) return st;
    print_dimensions(b, in);
    print_window(b, &pc_hlo_x(in)->window);
    if ((st = print_dim_labels(b, c, in, err)) != PC_OK || (st = print_slice(b, c, in, err)) != PC_OK)
        return st;
    if (pc_hlo_x(in)->dynamic_slice_sizes.n > 0) {
        sb_puts(b, ", dynamic_slice_sizes={");
        sb_list(b, pc_hlo_x(in)->dynamic_slice_sizes.v, pc_hlo_x(in)->dynamic_slice_sizes.n, ",");
        sb_puts(b, "}");
    }
    if ((st = print_padding(b, c, in, err)) != PC_OK) return st;
    print_dot_dims(b, &pc_hlo_x(in)->dot);
    print_group_counts(b, in);
    if (in->is_stable) sb_puts(b, ", is_stable=true");
    if ((st = print_called(b, c, in, cnames, cmap, err)) != PC_OK) return st;
    sb_puts(b, "\n");
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
    if (!cnames || !raw || tx_id_map_init(&cmap, (size_t)m->n_comp)) goto oom;
    for (int32_t k = 0; k < m->n_comp; k++) {
        raw[k] = m->comp[k].name;
        if (tx_id_map_add(&cmap, m->comp[k].id, k)) {
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
        tx_id_map_free(&imap);
        if (!raw || !inames || tx_id_map_init(&imap, (size_t)c->n_inst)) goto oom;
        nin = c->n_inst;
        for (int32_t i = 0; i < c->n_inst; i++) {
            raw[i] = c->inst[i].name;
            if (tx_id_map_add(&imap, c->inst[i].id, i)) {
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
            st = print_instruction(b, c, &c->inst[i], inames, &imap, cnames, &cmap, i, err);
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
    tx_id_map_free(&cmap);
    tx_id_map_free(&imap);
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
