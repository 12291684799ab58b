/*
 * Fuzz target: the FLOP and byte rules of HLO instructions (src/hlo/cost.c,
 * perfcast/hlo_cost.h) on HLO text. The first byte picks the options, the
 * rest is the text:
 *   bit 0: keep_free;  bits 1-2: module -1, -1, 0 or 1;
 *   bits 3-7: while_trips t (0..28 as is, 0 meaning the default; 29: 1e300,
 *             so nested loops overflow; 30: -1, read as 1; 31: 0.5).
 * What pc_hlo_cost_text promises, checked against the parser's own modules:
 * one row per entry-computation instruction in program order (the ones that
 * cost nothing left out unless keep_free), named and typed as the
 * instruction, every number finite and >= 0, the totals the rows' sums. A
 * failure is a clean code with a message (the parser's "fuzz.hlo:LINE:COL:"
 * when the text does not parse) and no report. Collectives point at their
 * rows with finite sizes and counts; the same text with loop_ops gives rows
 * that are finite too, with the same FLOPs in total (up to rounding).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hlo/text.h"
#include "perfcast/hlo_cost.h"

static int finite_nonneg(double v) { return isfinite(v) && v >= 0; }

static pc_hlo_cost_opts opts_from(uint8_t b) {
    static const int modules[4] = {-1, -1, 0, 1};
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    o.keep_free = b & 1;
    o.module = modules[(b >> 1) & 3];
    int t = b >> 3;
    o.while_trips = t <= 28 ? t : t == 29 ? 1e300 : t == 30 ? -1 : 0.5;
    return o;
}

/* The entry computation's instructions (the parser puts the entry last). */
static const pc_hlo_computation *entry_of(const pc_hlo_module *m) {
    check(m->n_comp >= 1 && m->entry_computation_id == m->n_comp);
    return &m->comp[m->n_comp - 1];
}

/* Rows of module `idx` (report index `ri`) from *row on, against its entry's instructions. */
static void check_module_rows(const pc_hlo_cost *c, const pc_hlo_module *m, int32_t ri, int keep,
                              int64_t *row, int64_t *seen) {
    check(strcmp(c->module_names[ri], m->name ? m->name : "") == 0);
    const pc_hlo_computation *e = entry_of(m);
    *seen += e->n_inst;
    for (int32_t i = 0; i < e->n_inst && *row < c->n_ops; i++) {
        const pc_hlo_instruction *in = &e->inst[i];
        const pc_hlo_op_cost *r = &c->ops[*row];
        if (r->module != ri || strcmp(r->name, in->name) != 0) {
            check(!keep); /* only a free instruction may be skipped */
            continue;
        }
        check(strcmp(r->opcode, in->opcode) == 0 && r->element_type == in->shape.element_type);
        (*row)++;
    }
}

static void check_rows(const pc_hlo_cost *c, const pc_hlo_cost_opts *o) {
    double f = 0, t = 0, rd = 0, wr = 0;
    for (int64_t i = 0; i < c->n_ops; i++) {
        const pc_hlo_op_cost *r = &c->ops[i];
        check(r->name && r->opcode && r->module >= 0 && r->module < c->n_modules);
        check(finite_nonneg(r->flops) && finite_nonneg(r->transcendentals));
        check(finite_nonneg(r->bytes_read) && finite_nonneg(r->bytes_written));
        check(r->transcendentals <= r->flops);
        check(finite_nonneg(r->comm_bytes) && r->collectives >= 0);
        if (!o->keep_free)
            check(r->flops > 0 || r->bytes_read > 0 || r->bytes_written > 0 || r->collectives > 0);
        f += r->flops;
        t += r->transcendentals;
        rd += r->bytes_read;
        wr += r->bytes_written;
    }
    /* the report sums in row order too, so the totals are equal, not just close */
    check(c->flops == f && c->transcendentals == t && c->bytes_read == rd && c->bytes_written == wr);
    for (int64_t k = 0; k < c->n_collectives; k++) {
        const pc_hlo_collective *x = &c->collectives[k];
        check(x->op >= 0 && x->op < c->n_ops && c->ops[x->op].collectives > 0 && x->name);
        check(finite_nonneg(x->bytes) && finite_nonneg(x->count) && x->group_size >= 0);
        check((unsigned)x->kind < PC_HLO_COLL_COUNT && x->group_ids <= x->group_size);
        check(x->group_ids == 0 || x->group != NULL);
    }
}

/* The same text with loop_ops: when it costs, every row is finite and the FLOPs agree. */
static void check_loop_ops(const char *text, size_t len, pc_hlo_cost_opts o, const pc_hlo_cost *c) {
    pc_hlo_cost *l = NULL;
    pc_error err;
    o.loop_ops = 1;
    if (pc_hlo_cost_text(text, len, "fuzz.hlo", &o, &l, &err) != PC_OK) return;
    for (int64_t i = 0; i < l->n_ops; i++)
        check(finite_nonneg(l->ops[i].flops) && finite_nonneg(l->ops[i].bytes_read) &&
              finite_nonneg(l->ops[i].bytes_written) && l->ops[i].trips >= 0);
    check(fabs(l->flops - c->flops) <= 1e-9 * (l->flops > c->flops ? l->flops : c->flops) + 1e-9);
    pc_hlo_cost_free(l);
}

static void check_report(const pc_hlo_cost *c, pc_hlo_module **mods, int n,
                         const pc_hlo_cost_opts *o) {
    check(c->format && strcmp(c->format, "HLO text") == 0);
    check(c->n_modules == (o->module < 0 ? n : 1));
    check(c->n_ops >= 0 && c->free_ops >= 0 && c->free_ops <= c->instructions);
    check(c->n_ops == (o->keep_free ? c->instructions : c->instructions - c->free_ops));
    check(c->unsized >= 0 && c->dots_guessed >= 0 && c->unknown_ops >= 0 && c->while_loops >= 0);
    check(memchr(c->first_unknown, '\0', sizeof c->first_unknown) != NULL);
    check_rows(c, o);
    int64_t row = 0, seen = 0;
    for (int32_t ri = 0; ri < c->n_modules; ri++) {
        const pc_hlo_module *m = mods[o->module < 0 ? ri : o->module];
        check_module_rows(c, m, ri, o->keep_free, &row, &seen);
    }
    check(row == c->n_ops && seen == c->instructions);
}

PC_FUZZ_TARGET(hlo_cost) {
    if (size == 0) return 0;
    pc_hlo_cost_opts o = opts_from(data[0]);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    pc_hlo_module **mods = NULL;
    int n = 0;
    pc_error perr, err;
    pc_error_clear(&perr);
    pc_error_clear(&err);
    pc_status ps = pc_hlo_parse_text(text, len, "fuzz.hlo", &mods, &n, NULL, &perr);
    static pc_hlo_cost poison;
    pc_hlo_cost *c = &poison; /* must be reset to NULL on failure */
    pc_status s = pc_hlo_cost_text(text, len, "fuzz.hlo", &o, &c, &err);
    if (s != PC_OK) {
        check(c == NULL && err.code == s && err.msg[0] != '\0');
        if (ps != PC_OK) check(s == ps && strcmp(err.msg, perr.msg) == 0);
        else if (o.module >= n) check(s == PC_ERR_ARG);
        else check(s == PC_ERR_FORMAT || s == PC_ERR_RANGE);
    } else {
        check(ps == PC_OK && o.module < n && c != NULL);
        check_report(c, mods, n, &o);
        check_loop_ops(text, len, o, c);
        pc_hlo_cost_free(c);
    }
    pc_hlo_modules_free(mods, n);
    return 0;
}
