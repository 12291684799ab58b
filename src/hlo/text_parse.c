/*
 * The HLO text parser (text.h): modules, computations and instructions, a
 * hand-written recursive descent over the raw bytes (the cursor is in
 * text_lex.c, shapes in text_shape.c, attributes in text_attr.c). Names are
 * resolved at the end of each computation and module through hash tables,
 * so parsing is linear in the input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/text_internal.h"
#include "tpugraphs/opcode.h"

/* ---- instructions and computations ---------------------------------------------------- */

/* The module's copy of an opcode (pc_hlo_module.opcodes): one per known opcode, one per
 * instruction of an unknown one. NULL when out of memory. */
static char *intern_opcode(parser *p, int id, const char *s, size_t n) {
    pc_hlo_module *m = p->m;
    int known = id > PC_HLO_UNKNOWN && id < PC_HLO_OPCODE_COUNT;
    if (known && p->opcode_of_id[id]) return m->opcodes[p->opcode_of_id[id] - 1];
    if (m->n_opcodes == INT32_MAX) return NULL;
    char **v = pc_grow_array(m->opcodes, &p->opcode_cap, (size_t)m->n_opcodes + 1, sizeof *v);
    if (!v) return NULL;
    m->opcodes = v;
    if (!(v[m->n_opcodes] = tx_dup_n(s, n))) return NULL;
    if (known) p->opcode_of_id[id] = m->n_opcodes + 1;
    return v[m->n_opcodes++];
}

/* The opcode after the shape: its TpuGraphs id (unknown ones counted) and the
 * group counts XLA always sets for it. */
static int parse_opcode(parser *p, pc_hlo_instruction *in) {
    size_t off;
    int pct = 0;
    size_t opos = p->pos;
    size_t n = tx_read_name(p, &off, &pct);
    if (!n || pct) {
        p->pos = opos;
        return tx_expected(p, "an opcode after the shape");
    }
    in->opcode_id = tx_opcode_lookup(p, p->buf + off, n);
    if (!(in->opcode = intern_opcode(p, in->opcode_id, p->buf + off, n))) return tx_nomem(p);
    if (in->opcode_id == PC_HLO_UNKNOWN && p->stats) {
        if (!p->stats->unknown_opcodes)
            snprintf(p->stats->first_unknown, sizeof p->stats->first_unknown, "%s", in->opcode);
        p->stats->unknown_opcodes++;
    }
    if (in->opcode_id == PC_HLO_CONVOLUTION || in->opcode_id == PC_HLO_CUSTOM_CALL)
        in->feature_group_count = in->batch_group_count = 1; /* always set in XLA's proto */
    return 0;
}

/* A new, zeroed instruction in computation comp; its local index in *idx. */
static int new_instruction(parser *p, int32_t comp, size_t pos, int32_t *idx) {
    pc_hlo_computation *c = &p->m->comp[comp];
    cinfo *ci = &p->ci[comp];
    if (c->n_inst == INT32_MAX)
        return tx_perr(p, pos, PC_ERR_RANGE, "more than 2^31-1 instructions in a computation");
    size_t icap = ci->icap;
    RESERVE(p, c->inst, icap, (size_t)c->n_inst + 1);
    RESERVE(p, ci->ix, ci->icap, (size_t)c->n_inst + 1);
    int32_t i = c->n_inst++;
    memset(&c->inst[i], 0, sizeof c->inst[i]);
    c->inst[i].parameter_number = -1;
    ixinfo *x = &ci->ix[i];
    memset(x, 0, sizeof *x);
    x->pos = pos;
    x->tindex = -1;
    x->same = -1;
    *idx = i;
    return 0;
}

static int add_oref(parser *p, int32_t inst, int32_t slot, int32_t direct, size_t off, size_t n, size_t pos) {
    RESERVE(p, p->orefs, p->oref_cap, p->noref + 1);
    oref *r = &p->orefs[p->noref++];
    r->inst = inst;
    r->slot = slot;
    r->direct = direct;
    r->off = off;
    r->len = n;
    r->pos = pos;
    return 0;
}

static int parse_rhs(parser *p, int32_t comp, int32_t idx, int with_attrs);

/* One operand: `[shape] name` (a `#N` after the name is read and ignored)
 * followed by ',' or ')', else a nested instruction `[shape] opcode(...)`
 * without attributes, as XLA reads them. */
static int parse_operand(parser *p, int32_t comp, int32_t idx, int32_t slot) {
    size_t start = p->pos, off = 0;
    if (tx_at_shape(p)) {
        if (tx_parse_shape(p, NULL, 0) || tx_skip_ws(p)) return -1;
    }
    size_t rpos = p->pos;
    size_t n = tx_read_name(p, &off, NULL);
    if (!n) return tx_expected(p, "an operand name");
    if (peekc(p) == '#' && is_digit(peekc_at(p, 1))) {
        p->pos++;
        while (is_digit(peekc(p))) p->pos++;
    }
    if (tx_skip_ws(p)) return -1;
    if (peekc(p) == ',' || peekc(p) == ')') return add_oref(p, idx, slot, -1, off, n, rpos);
    if (peekc(p) != '(') return tx_expected(p, "',' or ')' after the operand");
    int32_t k; /* a nested instruction: named when the computation ends */
    p->pos = start;
    if (new_instruction(p, comp, start, &k) || parse_rhs(p, comp, k, 0)) return -1;
    return add_oref(p, idx, slot, k, 0, 0, start);
}

/* `(a, b, ...)` after the opcode; the names wait in p->orefs until the
 * computation ends. */
static int parse_operands(parser *p, int32_t comp, int32_t idx) {
    p->pos++;
    int32_t slot = 0;
    if (tx_skip_ws(p)) return -1;
    if (peekc(p) == ')') {
        p->pos++;
    } else {
        for (;;) {
            if (tx_skip_ws(p)) return -1;
            if (slot == INT32_MAX) return tx_perr(p, p->pos, PC_ERR_RANGE, "more than 2^31-1 operands");
            if (parse_operand(p, comp, idx, slot++) || tx_skip_ws(p)) return -1;
            int more = tx_list_sep(p, ')', "',' or ')' after the operand");
            if (more < 0) return -1;
            if (!more) break;
        }
    }
    if (slot) {
        pc_hlo_instruction *in = &p->m->comp[comp].inst[idx];
        in->operand_ids.v = pc_malloc_array((uint64_t)slot, sizeof(int64_t));
        if (!in->operand_ids.v) return tx_nomem(p);
        in->operand_ids.n = slot;
        for (int32_t i = 0; i < slot; i++) in->operand_ids.v[i] = -1;
    }
    return 0;
}

/* The called computations of instruction idx (its p->crefs from cref0 on;
 * inline computations' own calls may sit between them): slots by role, in
 * order of appearance within a role; ids at the end. */
static int order_calls(parser *p, int32_t comp, int32_t idx, size_t cref0, size_t start) {
    size_t cnt[3] = {0, 0, 0}, k = 0;
    for (size_t i = cref0; i < p->ncref; i++)
        if (p->crefs[i].comp == comp && p->crefs[i].inst == idx) cnt[p->crefs[i].prio]++;
    k = cnt[0] + cnt[1] + cnt[2];
    if (!k) return 0;
    if (k > INT32_MAX) return tx_perr(p, start, PC_ERR_RANGE, "too many called computations");
    size_t next[3] = {0, cnt[0], cnt[0] + cnt[1]};
    for (size_t i = cref0; i < p->ncref; i++)
        if (p->crefs[i].comp == comp && p->crefs[i].inst == idx)
            p->crefs[i].slot = (int32_t)next[p->crefs[i].prio]++;
    pc_hlo_instruction *in = &p->m->comp[comp].inst[idx];
    in->called_computation_ids.v = pc_calloc_array(k, sizeof(int64_t));
    if (!in->called_computation_ids.v) return tx_nomem(p);
    in->called_computation_ids.n = (int32_t)k;
    return 0;
}

/* ---- called computations ------------------------------------------------------------- */

static int add_cref(parser *p, int32_t comp, int32_t inst, int prio, int32_t direct, size_t off, size_t n,
                    size_t pos) {
    RESERVE(p, p->crefs, p->cref_cap, p->ncref + 1);
    cref *r = &p->crefs[p->ncref++];
    r->comp = comp;
    r->inst = inst;
    r->slot = 0;
    r->prio = prio;
    r->direct = direct;
    r->off = off;
    r->len = n;
    r->pos = pos;
    return 0;
}

/* 1 if the '{' at the cursor opens an inline computation (`{ x = ...` or
 * `{ ROOT ...`) rather than a list of names. */
static int at_inline_body(parser *p) {
    size_t save = p->pos, off;
    p->pos++;
    int inl = 0;
    if (!tx_skip_ws(p)) {
        int pct = 0;
        size_t n = tx_read_name(p, &off, &pct);
        if (n && !pct && word_is(p, off, n, "ROOT")) inl = 1;
        else if (n && !tx_skip_ws(p)) inl = peekc(p) == '=';
    }
    p->pos = save;
    return inl;
}

static int parse_call_item(parser *p, int32_t comp, int32_t inst, int prio) {
    size_t pos = p->pos;
    if (peekc(p) == '{' && at_inline_body(p)) {
        int32_t k;
        if (tx_parse_inline_computation(p, &k)) return -1;
        return add_cref(p, comp, inst, prio, k, 0, 0, pos);
    }
    size_t off, n = tx_read_name(p, &off, NULL);
    if (!n) return tx_expected(p, "a computation name");
    return add_cref(p, comp, inst, prio, -1, off, n, pos);
}

/* to_apply=%f, to_apply={ inline body }, or branch_computations={%a, %b} */
static int parse_calls(parser *p, int32_t comp, int32_t inst, int prio) {
    if (peekc(p) != '{' || at_inline_body(p)) return parse_call_item(p, comp, inst, prio);
    p->pos++;
    if (tx_skip_ws(p)) return -1;
    if (peekc(p) == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (tx_skip_ws(p) || parse_call_item(p, comp, inst, prio) || tx_skip_ws(p)) return -1;
        int more = tx_list_sep(p, '}', "',' or '}' in the computation list");
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

/* One `name=value` after ','; called computations here, the rest in text_attr.c. */
static int parse_attr(parser *p, int32_t comp, int32_t idx) {
    size_t save = p->pos, off;
    int pct = 0;
    size_t n = tx_read_name(p, &off, &pct);
    int prio = n && !pct ? call_attr_prio(p, off, n) : -1;
    if (prio < 0) {
        p->pos = save;
        return tx_parse_attribute(p, comp, idx);
    }
    if (tx_expect_char(p, '=', "'=' after the attribute name") || tx_skip_ws(p)) return -1;
    return parse_calls(p, comp, idx, prio);
}

/* ---- instructions ------------------------------------------------------------------ */

/* `[shape] opcode(operands)[, attr=value ...]` into instruction idx. */
static int parse_rhs_body(parser *p, int32_t comp, int32_t idx, int with_attrs) {
    if (tx_skip_ws(p)) return -1;
    size_t start = p->pos;
    pc_hlo_instruction *in = &p->m->comp[comp].inst[idx];
    ixinfo *x = &p->ci[comp].ix[idx];
    if (tx_at_shape(p)) {
        if (tx_parse_shape(p, &in->shape, 0)) return -1;
        x->shape.off = start;
        x->shape.len = p->pos - start;
        if (tx_skip_ws(p)) return -1;
    } else {
        x->pend = 1;
    }
    if (parse_opcode(p, in)) return -1;
    if (x->pend && !tx_can_infer(in->opcode)) {
        p->pos = start;
        if (in->opcode_id == PC_HLO_UNKNOWN)
            return tx_expected(p, "a shape such as f32[2,3]{1,0} or (s32[], pred[])");
        return tx_perr(p, start, PC_ERR_FORMAT,
                       "expected a shape such as f32[2,3]{1,0} before '%s' (XLA does not infer the shape of %s)",
                       in->opcode, in->opcode);
    }
    if (tx_skip_ws(p)) return -1;
    if (peekc(p) != '(') return tx_expected(p, "'(' after the opcode");
    if (in->opcode_id == PC_HLO_CONSTANT) { /* the literal: kept for scalars (loop bounds) */
        size_t lit = p->pos;
        if (tx_skip_group(p)) return -1;
        if (in->shape.element_type != ET_TUPLE && in->shape.dims.n == 0 &&
            tx_keep_attr(p, in, "literal", 7, lit + 1, p->pos - lit - 2))
            return -1;
    } else if (in->opcode_id == PC_HLO_PARAMETER) {
        p->pos++;
        if (tx_skip_ws(p)) return -1;
        size_t ppos = p->pos;
        if (tx_parse_i64(p, &in->parameter_number, "a parameter number")) return -1;
        if (in->parameter_number < 0) return tx_perr(p, ppos, PC_ERR_FORMAT, "negative parameter number");
        if (tx_expect_char(p, ')', "')' after the parameter number")) return -1;
    } else if (parse_operands(p, comp, idx)) {
        return -1;
    }
    if (!with_attrs) return 0;
    size_t cref0 = p->ncref;
    for (;;) {
        if (tx_skip_ws(p)) return -1;
        if (peekc(p) != ',') break;
        p->pos++;
        if (tx_skip_ws(p) || parse_attr(p, comp, idx)) return -1;
    }
    return order_calls(p, comp, idx, cref0, start);
}

static int parse_rhs(parser *p, int32_t comp, int32_t idx, int with_attrs) {
    if (p->depth >= PC_HLO_TEXT_MAX_DEPTH)
        return tx_perr(p, p->pos, PC_ERR_RANGE, "instructions and computations nested deeper than %d",
                       PC_HLO_TEXT_MAX_DEPTH);
    p->depth++;
    int rc = parse_rhs_body(p, comp, idx, with_attrs);
    p->depth--;
    return rc;
}

/* `[ROOT] name = [shape] opcode(operands), attr=value, ...` */
static int parse_instruction(parser *p, int32_t comp) {
    size_t start = p->pos, off = 0, n;
    int pct = 0, is_root = 0;
    n = tx_read_name(p, &off, &pct);
    if (n && !pct && word_is(p, off, n, "ROOT")) {
        if (tx_skip_ws(p)) return -1;
        if (peekc(p) != '=') { /* "ROOT = ..." names an instruction ROOT */
            is_root = 1;
            n = tx_read_name(p, &off, &pct);
        }
    }
    if (!n) return tx_expected(p, is_root ? "an instruction name after ROOT" : "an instruction name or '}'");
    if (peekc(p) == ':') p->pos++; /* `name: shape ...` */
    if (tx_expect_char(p, '=', "'=' after the instruction name")) return -1;
    int32_t idx;
    if (new_instruction(p, comp, start, &idx)) return -1;
    p->ci[comp].ix[idx].name.off = off;
    p->ci[comp].ix[idx].name.len = n;
    p->ci[comp].ix[idx].pos = off;
    pc_hlo_instruction *in = &p->m->comp[comp].inst[idx];
    if (!(in->name = tx_dup_n(p->buf + off, n))) return tx_nomem(p);
    if (is_root) {
        cinfo *ci = &p->ci[comp];
        if (ci->root >= 0)
            return tx_perr(p, start, PC_ERR_FORMAT, "second ROOT in computation '%s' (the first is '%s')",
                           p->m->comp[comp].name, p->m->comp[comp].inst[ci->root].name);
        ci->root = idx;
    }
    return parse_rhs(p, comp, idx, 1);
}

typedef struct inst_keys {
    const char *buf;
    const ixinfo *ix;
    const pc_hlo_instruction *inst;
} inst_keys;
static const char *inst_key(const void *ctx, int32_t i, size_t *len) {
    const inst_keys *k = ctx;
    if (k->ix[i].name.len) {
        *len = k->ix[i].name.len;
        return k->buf + k->ix[i].name.off;
    }
    *len = strlen(k->inst[i].name);
    return k->inst[i].name;
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
        rc = tx_nomem(p);
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
                        rc = tx_perr(p, p->ci[comp].ix[v].pos, PC_ERR_FORMAT,
                                     "instruction '%s' uses itself as an operand", c->inst[v].name);
                    else
                        rc = tx_perr(p, p->ci[comp].ix[v].pos, PC_ERR_FORMAT,
                                     "operand cycle: instruction '%s' uses '%s', which depends on '%s'",
                                     c->inst[v].name, c->inst[w].name, c->inst[v].name);
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

static const char *opcode_key(const void *ctx, int32_t i, size_t *len) {
    const char *s = ((const pc_hlo_instruction *)ctx)[i].opcode;
    *len = strlen(s);
    return s;
}

/* Names of nested instructions: "<opcode>.anon", made unique with ".N" as
 * XLA's name uniquer does; added to the name table. Each is the first free
 * name in "<opcode>.anon", "<opcode>.anon.1", ...: as names are only added,
 * the search for an opcode resumes where its last one stopped (next[], by the
 * opcode's first nested instruction), so n nested instructions of one opcode
 * take O(n) probes, not O(n^2) (issue #18). */
static int name_nested(parser *p, int32_t comp, name_map *nm) {
    pc_hlo_computation *c = &p->m->comp[comp];
    int32_t nnest = 0;
    for (int32_t i = 0; i < c->n_inst; i++) nnest += !p->ci[comp].ix[i].name.len;
    if (!nnest) return 0;
    name_map ops;
    int64_t *next = pc_calloc_array((uint64_t)c->n_inst, sizeof *next);
    if (!next || tx_name_map_init(&ops, (size_t)nnest, opcode_key, c->inst)) {
        free(next);
        return tx_nomem(p);
    }
    int rc = 0;
    for (int32_t i = 0; i < c->n_inst; i++) {
        if (p->ci[comp].ix[i].name.len) continue;
        pc_hlo_instruction *in = &c->inst[i];
        int32_t first = tx_name_map_add(&ops, i);
        int64_t *k = &next[first >= 0 ? first : i];
        size_t n = strlen(in->opcode) + 32;
        char *nm0 = malloc(n);
        if (!nm0) {
            rc = tx_nomem(p);
            break;
        }
        for (;; ++*k) {
            if (*k == 0)
                snprintf(nm0, n, "%s.anon", in->opcode);
            else
                snprintf(nm0, n, "%s.anon.%lld", in->opcode, (long long)*k);
            if (tx_name_map_find(nm, nm0, strlen(nm0)) < 0) break;
        }
        ++*k;
        free(in->name);
        in->name = nm0;
        tx_name_map_add(nm, i);
    }
    tx_name_map_free(&ops);
    free(next);
    return rc;
}

/* End of a computation: names, operands from oref0 on (to local indices),
 * root, cycles, inferred shapes. */
static int finish_computation(parser *p, int32_t comp, size_t oref0) {
    pc_hlo_computation *c = &p->m->comp[comp];
    cinfo *ci = &p->ci[comp];
    if (c->n_inst == 0) return tx_perr(p, ci->pos, PC_ERR_FORMAT, "computation '%s' has no instructions", c->name);
    name_map nm;
    inst_keys keys = {p->buf, ci->ix, c->inst};
    if (tx_name_map_init(&nm, (size_t)c->n_inst, inst_key, &keys)) return tx_nomem(p);
    int rc = 0, forward = 0, pend = 0;
    for (int32_t i = 0; i < c->n_inst && !rc; i++) {
        pend |= ci->ix[i].pend;
        if (!ci->ix[i].name.len) continue;
        int32_t prev = tx_name_map_add(&nm, i);
        if (prev >= 0)
            rc = tx_perr(p, ci->ix[i].pos, PC_ERR_FORMAT, "duplicate instruction name '%s' in computation '%s'",
                         c->inst[i].name, c->name);
    }
    if (!rc) rc = name_nested(p, comp, &nm);
    for (size_t k = oref0; k < p->noref && !rc; k++) {
        const oref *r = &p->orefs[k];
        int32_t w = r->direct >= 0 ? r->direct : tx_name_map_find(&nm, p->buf + r->off, r->len);
        if (w < 0) {
            rc = tx_perr(p, r->pos, PC_ERR_FORMAT, "unknown operand '%.*s' in computation '%s'",
                         (int)(r->len > 200 ? 200 : r->len), p->buf + r->off, c->name);
            break;
        }
        c->inst[r->inst].operand_ids.v[r->slot] = w;
        if (w >= r->inst) forward = 1;
    }
    tx_name_map_free(&nm);
    p->noref = oref0;
    if (rc) return rc;
    if (ci->root < 0) { /* XLA: the last instruction (nested ones come before their user there) */
        ci->root = c->n_inst - 1;
        while (ci->root > 0 && !ci->ix[ci->root].name.len) ci->root--;
    }
    if (forward && check_cycles(p, comp)) return -1;
    if (pend && tx_infer_shapes(p, comp)) return -1;
    if (tx_check_semantics(p, comp)) return -1;
    /* The instruction array was grown by doubling or reserved at the body's line count:
     * trimmed to its instructions (176 bytes each), as nothing is added any more. */
    if ((size_t)c->n_inst < ci->icap) {
        void *t = realloc(c->inst, (size_t)c->n_inst * sizeof *c->inst);
        if (t) c->inst = t;
    }
    return 0;
}

/* `}, execution_thread="x"` after a computation: skipped. */
static int skip_trailing_attrs(parser *p) {
    for (;;) {
        if (tx_skip_ws(p)) return -1;
        if (peekc(p) != ',') return 0;
        p->pos++;
        size_t off;
        if (tx_skip_ws(p)) return -1;
        if (!tx_read_name(p, &off, NULL)) return tx_expected(p, "an attribute name after ','");
        if (tx_expect_char(p, '=', "'=' after the attribute name") || tx_skip_ws(p) || tx_skip_value(p)) return -1;
        if (p->stats) p->stats->skipped_attrs++;
    }
}

/* The line of pos, counted on from the previous computation's (computations start in text
 * order, so the whole text is scanned once); INT32_MAX beyond. */
static int32_t line_of(parser *p, size_t pos) {
    if (pos > p->len) pos = p->len;
    if (p->line_no == 0 || pos < p->line_pos) {
        p->line_no = 1;
        p->line_pos = 0;
    }
    for (const char *q = p->buf + p->line_pos, *e = p->buf + pos; q < e && p->line_no < INT32_MAX;) {
        q = memchr(q, '\n', (size_t)(e - q));
        if (!q) break;
        p->line_no++;
        q++;
    }
    p->line_pos = pos;
    return p->line_no;
}

/* A new computation named `name` (n bytes); its index in *out. */
static int new_computation(parser *p, const char *name, size_t n, size_t pos, int entry, int32_t *out) {
    pc_hlo_module *m = p->m;
    if (m->n_comp == INT32_MAX) return tx_perr(p, pos, PC_ERR_RANGE, "too many computations");
    size_t cap = p->comp_cap;
    RESERVE(p, m->comp, cap, (size_t)m->n_comp + 1);
    RESERVE(p, p->ci, p->comp_cap, (size_t)m->n_comp + 1);
    int32_t comp = m->n_comp++;
    memset(&m->comp[comp], 0, sizeof m->comp[comp]);
    memset(&p->ci[comp], 0, sizeof p->ci[comp]);
    p->ci[comp].root = -1;
    p->ci[comp].entry = entry;
    p->ci[comp].pos = pos;
    if (!(m->comp[comp].name = tx_dup_n(name, n))) return tx_nomem(p);
    m->comp[comp].line = line_of(p, pos);
    *out = comp;
    return 0;
}

/* Room for the instructions of the body starting at the cursor: one per line
 * up to the first line starting (after blanks) with '}', as dumps close
 * computations, so a large computation is allocated once, at its size,
 * instead of grown by doubling. Scans never overlap: each stops at the close
 * (the next body starts after it), and one that finds none is remembered. */
static int reserve_body(parser *p, int32_t comp) {
    if (p->noclose_end == p->end && p->pos >= p->noclose_from) return 0;
    size_t lines = 1;
    const char *q = p->buf + p->pos, *e = p->buf + p->end;
    for (;;) {
        const char *nl = memchr(q, '\n', (size_t)(e - q));
        if (!nl) {
            p->noclose_from = p->pos;
            p->noclose_end = p->end;
            return 0;
        }
        q = nl + 1;
        while (q < e && (*q == ' ' || *q == '\t')) q++;
        if (q < e && *q == '}') break;
        lines++;
    }
    if (lines < 64 || lines > INT32_MAX) return 0;
    pc_hlo_computation *c = &p->m->comp[comp];
    cinfo *ci = &p->ci[comp];
    void *a = pc_reserve_array(c->inst, &(size_t){ci->icap}, lines, sizeof *c->inst);
    if (!a) return tx_nomem(p);
    c->inst = a;
    void *b = pc_reserve_array(ci->ix, &ci->icap, lines, sizeof *ci->ix);
    if (!b) return tx_nomem(p);
    ci->ix = b;
    return 0;
}

/* `{ instructions }` at the cursor into computation comp. */
static int parse_body(parser *p, int32_t comp, int top) {
    if (peekc(p) != '{') return tx_expected(p, "'{' to start the computation body");
    if (top && reserve_body(p, comp)) return -1;
    size_t open = p->pos++, oref0 = p->noref;
    for (;;) {
        if (tx_skip_ws(p)) return -1;
        if (peekc(p) == '}') {
            p->pos++;
            break;
        }
        if (peekc(p) < 0) {
            long l, col;
            tx_line_col(p, open, &l, &col);
            return tx_perr(p, p->pos, PC_ERR_FORMAT,
                           "expected '}' to close computation '%s' (opened at %ld:%ld), found end of input",
                           p->m->comp[comp].name, l, col);
        }
        if (parse_instruction(p, comp)) return -1;
        if (p->progress && p->pos >= p->progress_next) {
            p->progress(p->progress_user, "bytes parsed", (int64_t)p->pos, (int64_t)p->len);
            p->progress_next = p->pos + PC_HLO_PROGRESS_STEP_BYTES;
        }
    }
    return finish_computation(p, comp, oref0);
}

int tx_parse_inline_computation(parser *p, int32_t *out) {
    char name[32];
    snprintf(name, sizeof name, "_inline.%d", (int)p->m->n_comp);
    if (p->depth >= PC_HLO_TEXT_MAX_DEPTH)
        return tx_perr(p, p->pos, PC_ERR_RANGE, "instructions and computations nested deeper than %d",
                       PC_HLO_TEXT_MAX_DEPTH);
    if (new_computation(p, name, strlen(name), p->pos, 0, out)) return -1;
    p->depth++;
    int rc = parse_body(p, *out, 0);
    p->depth--;
    return rc;
}

static int parse_computation(parser *p, size_t off, size_t n, int pct, size_t start) {
    int entry = 0;
    if (!pct && word_is(p, off, n, "ENTRY")) {
        entry = 1;
        if (tx_skip_ws(p)) return -1;
        n = tx_read_name(p, &off, &pct);
        if (!n) return tx_expected(p, "a computation name after ENTRY");
    }
    int32_t comp;
    (void)start;
    if (new_computation(p, p->buf + off, n, off - (size_t)pct, entry, &comp)) return -1;
    if (tx_skip_ws(p)) return -1;
    if (peekc(p) == '(') { /* signature (p0: f32[2], ...) -> shape */
        if (tx_skip_group(p) || tx_skip_ws(p)) return -1;
        if (peekc(p) == '-' && peekc_at(p, 1) == '>') {
            p->pos += 2;
            if (tx_parse_shape(p, NULL, 0) || tx_skip_ws(p)) return -1;
        }
    }
    if (parse_body(p, comp, 1)) return -1;
    return skip_trailing_attrs(p);
}

/* FileNames / FunctionNames / FileLocations / StackFrames tables after the
 * computations of newer dumps: `N "text"` or `N {...}` lines, skipped. */
static int skip_stack_table(parser *p) {
    for (;;) {
        if (tx_skip_ws(p)) return -1;
        if (!is_digit(peekc(p))) return 0;
        int64_t v;
        if (tx_parse_i64(p, &v, "an index") || tx_skip_ws(p) || tx_skip_value(p)) return -1;
    }
}

/* Computation names (unique) and calls resolved to computation indices; the
 * ENTRY computation's index in *entry (-1 if none is marked). */
static int resolve_calls(parser *p, int32_t *entry) {
    pc_hlo_module *m = p->m;
    int32_t nc = m->n_comp;
    name_map nm;
    if (tx_name_map_init(&nm, (size_t)nc, comp_key, m)) return tx_nomem(p);
    int rc = 0;
    *entry = -1;
    for (int32_t i = 0; i < nc && !rc; i++) {
        if (tx_name_map_add(&nm, i) >= 0)
            rc = tx_perr(p, p->ci[i].pos, PC_ERR_FORMAT, "duplicate computation name '%s'", m->comp[i].name);
        else if (p->ci[i].entry) {
            if (*entry >= 0)
                rc = tx_perr(p, p->ci[i].pos, PC_ERR_FORMAT, "second ENTRY computation '%s' (the first is '%s')",
                             m->comp[i].name, m->comp[*entry].name);
            *entry = i;
        }
    }
    for (size_t k = 0; k < p->ncref && !rc; k++) {
        const cref *r = &p->crefs[k];
        int32_t w = r->direct >= 0 ? r->direct : tx_name_map_find(&nm, p->buf + r->off, r->len);
        if (w < 0)
            rc = tx_perr(p, r->pos, PC_ERR_FORMAT, "unknown computation '%.*s'", (int)(r->len > 200 ? 200 : r->len),
                         p->buf + r->off);
        else
            m->comp[r->comp].inst[r->inst].called_computation_ids.v[r->slot] = w;
    }
    tx_name_map_free(&nm);
    return rc;
}

/* The entry is called by nobody. Without ENTRY (test-style files) it is the
 * last computation that nothing calls (XLA takes the last one). */
static int find_entry(parser *p, int32_t *entry) {
    pc_hlo_module *m = p->m;
    int32_t nc = m->n_comp;
    uint8_t *called = pc_calloc_array((uint64_t)nc, 1);
    if (!called) return tx_nomem(p);
    int rc = 0;
    for (size_t k = 0; k < p->ncref; k++) {
        const cref *r = &p->crefs[k];
        int32_t w = (int32_t)m->comp[r->comp].inst[r->inst].called_computation_ids.v[r->slot];
        if (w == *entry && r->comp != *entry && !rc)
            rc = tx_perr(p, r->pos, PC_ERR_FORMAT, "computation '%s' calls the ENTRY computation '%s'",
                         m->comp[r->comp].name, m->comp[w].name);
        called[w] = 1;
    }
    if (*entry < 0) {
        *entry = nc - 1;
        for (int32_t i = nc - 1; i >= 0; i--)
            if (!called[i]) {
                *entry = i;
                break;
            }
    }
    free(called);
    return rc;
}

/* Where the call from instruction `inst` of `comp` in slot `slot` is written. */
static size_t call_pos(const parser *p, int32_t comp, int32_t inst, int32_t slot) {
    size_t at = p->ci[comp].pos;
    for (size_t k = 0; k < p->ncref; k++)
        if (p->crefs[k].comp == comp && p->crefs[k].inst == inst && p->crefs[k].slot == slot) at = p->crefs[k].pos;
    return at;
}

/* order = the computations in depth-first post-order over the calls, starting
 * from each in text order, the entry last; call cycles are errors. */
static int order_computations(parser *p, int32_t entry, int32_t *order) {
    const pc_hlo_module *m = p->m;
    int32_t nc = m->n_comp;
    uint8_t *color = pc_calloc_array((uint64_t)nc, 1);
    struct frame {
        int32_t c, i, j;
    } *st = pc_malloc_array((uint64_t)nc, sizeof *st);
    int rc = 0;
    int32_t no = 0;
    if (!color || !st) {
        rc = tx_nomem(p);
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
                    size_t at = call_pos(p, f->c, f->i, f->j - 1);
                    if (w == f->c)
                        rc = tx_perr(p, at, PC_ERR_FORMAT, "computation '%s' calls itself", c->name);
                    else
                        rc = tx_perr(p, at, PC_ERR_FORMAT, "call cycle: computation '%s' calls '%s', which calls back",
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
    if (!rc) order[no++] = entry;
done:
    free(color);
    free(st);
    return rc;
}

/* Puts the computations in `order`, numbers computations 1..n and
 * instructions 1..N in that order, and rewrites operands, calls and roots to
 * those ids. */
static int renumber(parser *p, const int32_t *order) {
    pc_hlo_module *m = p->m;
    int32_t nc = m->n_comp;
    int32_t *newidx = pc_malloc_array((uint64_t)nc, sizeof *newidx);
    int64_t *base = pc_malloc_array((uint64_t)nc, sizeof *base);
    pc_hlo_computation *sorted = pc_calloc_array((uint64_t)nc, sizeof *sorted);
    if (!newidx || !base || !sorted) {
        free(newidx);
        free(base);
        free(sorted);
        return tx_nomem(p);
    }
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
    p->comp_cap = (size_t)nc;
    m->entry_computation_id = nc;
    for (int32_t k = 0; k < nc; k++) { /* side info follows the new order (only sizes matter now) */
        free(p->ci[k].ix);
        p->ci[k].ix = NULL;
    }
    free(newidx);
    free(base);
    return 0;
}

/* Resolves calls, orders computations (callees first, entry last), assigns ids. */
static int finish_module(parser *p, const char *header_name, size_t header_n) {
    pc_hlo_module *m = p->m;
    int32_t nc = m->n_comp, entry = -1;
    if (resolve_calls(p, &entry) || find_entry(p, &entry)) return -1;
    int32_t *order = pc_malloc_array((uint64_t)nc, sizeof *order);
    if (!order) return tx_nomem(p);
    int rc = order_computations(p, entry, order);
    if (!rc) rc = renumber(p, order);
    free(order);
    if (rc) return rc;
    const char *nm_src = header_name ? header_name : m->comp[nc - 1].name;
    size_t nm_len = header_name ? header_n : strlen(m->comp[nc - 1].name);
    if (!(m->name = tx_dup_n(nm_src, nm_len))) return tx_nomem(p);
    return 0;
}

static void parser_reset_module(parser *p) {
    if (p->m) {
        for (int32_t i = 0; i < p->m->n_comp; i++) free(p->ci[i].ix);
        pc_hlo_module_free(p->m);
    }
    p->m = NULL;
    free(p->ci);
    p->ci = NULL;
    p->comp_cap = 0;
    p->ncref = 0;
    p->noref = 0;
}

/* One module from the cursor up to p->end or a second `HloModule` line.
 * Returns 1 if nothing but comments and whitespace is left. */
static int parse_module(parser *p, pc_hlo_module **out) {
    *out = NULL;
    if (tx_skip_ws(p)) return -1;
    if (p->pos >= p->end) return 1;
    p->m = calloc(1, sizeof *p->m);
    if (!p->m) return tx_nomem(p);
    memset(p->opcode_of_id, 0, sizeof p->opcode_of_id);
    p->opcode_cap = 0;
    const char *hname = NULL;
    size_t hn = 0, off, n;
    int pct = 0;
    size_t at = p->pos;
    p->first_token = at;
    n = tx_read_name(p, &off, &pct);
    if (n && !pct && word_is(p, off, n, "HloModule")) {
        if (tx_skip_ws(p)) return -1;
        hn = tx_read_name(p, &off, NULL);
        if (!hn) return tx_expected(p, "a module name after HloModule");
        hname = p->buf + off;
        if (peekc(p) == ':') p->pos++; /* `HloModule m:` */
        if (skip_trailing_attrs(p)) return -1;
        at = p->pos;
        n = tx_read_name(p, &off, &pct);
    }
    for (;;) {
        if (!n) {
            if (p->pos >= p->end) break;
            return tx_expected(p, hname || p->m->n_comp ? "a computation or end of input"
                                                    : "'HloModule' or a computation");
        }
        if (!pct && word_is(p, off, n, "HloModule")) { /* the next module */
            p->pos = at;
            break;
        }
        if (!pct && (word_is(p, off, n, "FileNames") || word_is(p, off, n, "FunctionNames") ||
                     word_is(p, off, n, "FileLocations") || word_is(p, off, n, "StackFrames"))) {
            if (skip_stack_table(p)) return -1;
        } else if (parse_computation(p, off, n, pct, at)) {
            return -1;
        }
        if (tx_skip_ws(p)) return -1;
        at = p->pos;
        n = tx_read_name(p, &off, &pct);
    }
    if (p->m->n_comp == 0) return tx_perr(p, p->pos, PC_ERR_FORMAT, "expected a computation after the HloModule line");
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

/* A line that is exactly "// -----" (XLA's module separator; surrounding
 * blanks allowed). Other comments, "// ----------" banners included, are comments. */
static int is_split_line(const char *buf, size_t len, size_t i) {
    while (i < len && (buf[i] == ' ' || buf[i] == '\t')) i++;
    if (len - i < 8 || memcmp(buf + i, "// -----", 8) != 0) return 0;
    i += 8;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r')) i++;
    return i == len || buf[i] == '\n';
}

void pc_hlo_modules_free(pc_hlo_module **mods, int nmods) {
    if (!mods) return;
    for (int i = 0; i < nmods; i++) pc_hlo_module_free(mods[i]);
    free(mods);
}

static int push_module(parser *p, pc_hlo_module ***out, size_t *nout, size_t *cap, pc_hlo_module *m) {
    if (*nout == INT32_MAX) {
        pc_hlo_module_free(m);
        return tx_perr(p, p->pos, PC_ERR_RANGE, "too many modules");
    }
    void *np = pc_grow_array(*out, cap, *nout + 1, sizeof **out);
    if (!np) {
        pc_hlo_module_free(m);
        return tx_nomem(p);
    }
    *out = np;
    (*out)[(*nout)++] = m;
    return 0;
}

/* The modules of [start, end): one per HloModule line, or one without. */
static int parse_segment(parser *p, size_t start, size_t end, pc_hlo_module ***out, size_t *nout, size_t *cap) {
    p->pos = start;
    p->end = end;
    for (;;) {
        pc_hlo_module *m = NULL;
        int r = parse_module(p, &m);
        if (r < 0) return -1;
        if (r > 0) return 0;
        if (push_module(p, out, nout, cap, m)) return -1;
    }
}

pc_status pc_hlo_parse_text(const char *buf, size_t len, const char *path, pc_hlo_module ***mods, int *nmods,
                            pc_hlo_text_stats *stats, pc_error *err) {
    return pc_hlo_parse_text_progress(buf, len, path, NULL, NULL, mods, nmods, stats, err);
}

pc_status pc_hlo_parse_text_progress(const char *buf, size_t len, const char *path,
                                     pc_progress_fn progress, void *user, pc_hlo_module ***mods,
                                     int *nmods, pc_hlo_text_stats *stats, pc_error *err) {
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
    if (progress && len >= PC_HLO_PROGRESS_MIN_BYTES) {
        p.progress = progress, p.progress_user = user;
        p.progress_next = PC_HLO_PROGRESS_STEP_BYTES;
        progress(user, "bytes parsed", 0, (int64_t)len);
    }
    tx_opcode_table_init(&p);
    pc_hlo_module **out = NULL;
    size_t nout = 0, cap = 0, seg = 0;
    if (len >= 3 && memcmp(p.buf, "\xEF\xBB\xBF", 3) == 0) seg = 3; /* UTF-8 byte order mark */
    p.first_token = seg;
    int rc = 0;
    for (size_t i = seg; i <= len && !rc;) {
        int split = i < len && is_split_line(p.buf, len, i);
        if (split || i == len) {
            rc = parse_segment(&p, seg, i, &out, &nout, &cap);
            if (rc || i == len) break;
            seg = next_line(p.buf, len, i);
            i = seg;
            continue;
        }
        i = next_line(p.buf, len, i);
    }
    if (rc && nout == 0) tx_sniff_format(&p, p.first_token); /* MLIR, proto text, binary: say so */
    if (!rc && nout == 0) {
        p.pos = p.end = len;
        rc = tx_perr(&p, len, PC_ERR_FORMAT, "no HLO module or computation found");
    }
    parser_reset_module(&p);
    free(p.crefs);
    free(p.orefs);
    if (rc) {
        pc_hlo_modules_free(out, (int)nout);
        return p.code ? p.code : PC_ERR_FORMAT;
    }
    if (p.progress) progress(user, "bytes parsed", (int64_t)len, (int64_t)len);
    *mods = out;
    *nmods = (int)nout;
    return PC_OK;
}
