/*
 * What XLA's verifier would refuse in a computation that parsed
 * (text_internal.h): layouts that are not a permutation of their shape's
 * dimensions, parameter numbers out of range or repeated, dot dimension
 * numbers naming dimensions the operands do not have. Each is a
 * FILE:LINE:COLUMN error at the instruction, so such a module is never
 * featurized or costed as if it made sense.
 */
#include <stdlib.h>
#include <string.h>

#include "hlo/text_internal.h"
#include "tpugraphs/opcode.h"

/* minor_to_major of s (and of its tuple elements) a permutation of 0..rank-1, or absent. */
static const char *layout_problem(const pc_hlo_shape *s, int depth) {
    if (depth > 64) return NULL;
    for (int32_t k = 0; k < s->tuple_count && s->tuple_shapes; k++) {
        const char *why = layout_problem(&s->tuple_shapes[k], depth + 1);
        if (why) return why;
    }
    int32_t n = s->minor_to_major.n, r = s->dims.n;
    if (n == 0 || s->tuple_count > 0) return NULL;
    if (n != r) return "its layout lists a different number of dimensions than its shape has";
    for (int32_t i = 0; i < n; i++) {
        int64_t d = s->minor_to_major.v[i];
        if (d < 0 || d >= r) return "its layout names a dimension its shape does not have";
        for (int32_t j = 0; j < i; j++)
            if (s->minor_to_major.v[j] == d) return "its layout names a dimension twice";
    }
    return NULL;
}

/* Every entry of l in [0, rank). */
static int dims_in_range(const pc_i64s *l, int32_t rank) {
    for (int32_t i = 0; i < l->n; i++)
        if (l->v[i] < 0 || l->v[i] >= rank) return 0;
    return 1;
}

static int check_dot(parser *p, const pc_hlo_computation *c, const pc_hlo_instruction *in,
                     size_t pos) {
    if (!in->dot.present || in->operand_ids.n < 2) return 0;
    int32_t rl = c->inst[in->operand_ids.v[0]].shape.dims.n;
    int32_t rr = c->inst[in->operand_ids.v[1]].shape.dims.n;
    const struct {
        const pc_i64s *l;
        int32_t rank;
        const char *what;
    } f[4] = {{&in->dot.lhs_contracting, rl, "lhs_contracting_dims"},
              {&in->dot.lhs_batch, rl, "lhs_batch_dims"},
              {&in->dot.rhs_contracting, rr, "rhs_contracting_dims"},
              {&in->dot.rhs_batch, rr, "rhs_batch_dims"}};
    for (int i = 0; i < 4; i++)
        if (!dims_in_range(f[i].l, f[i].rank))
            return tx_perr(p, pos, PC_ERR_FORMAT,
                           "instruction '%s': %s names a dimension its operand of rank %d does "
                           "not have",
                           in->name, f[i].what, (int)f[i].rank);
    if (in->dot.lhs_contracting.n != in->dot.rhs_contracting.n ||
        in->dot.lhs_batch.n != in->dot.rhs_batch.n)
        return tx_perr(p, pos, PC_ERR_FORMAT,
                       "instruction '%s': lhs and rhs list different numbers of contracting or "
                       "batch dimensions",
                       in->name);
    return 0;
}

int tx_check_semantics(parser *p, int32_t comp) {
    const pc_hlo_computation *c = &p->m->comp[comp];
    const cinfo *ci = &p->ci[comp];
    int32_t nparam = 0;
    for (int32_t i = 0; i < c->n_inst; i++) nparam += c->inst[i].opcode_id == PC_HLO_PARAMETER;
    uint8_t *seen = calloc((size_t)nparam + 1, 1);
    if (!seen) return tx_nomem(p);
    int rc = 0;
    for (int32_t i = 0; i < c->n_inst && !rc; i++) {
        const pc_hlo_instruction *in = &c->inst[i];
        size_t pos = ci->ix[i].pos;
        const char *why = layout_problem(&in->shape, 0);
        if (why) {
            rc = tx_perr(p, pos, PC_ERR_FORMAT, "instruction '%s': %s", in->name, why);
        } else if (in->opcode_id == PC_HLO_PARAMETER) {
            int64_t k = in->parameter_number;
            if (k < 0 || k >= nparam)
                rc = tx_perr(p, pos, PC_ERR_FORMAT,
                             "instruction '%s': parameter(%lld) is out of range: computation "
                             "'%s' has %d parameters, numbered 0..%d",
                             in->name, (long long)k, c->name, (int)nparam, (int)nparam - 1);
            else if (seen[k]++)
                rc = tx_perr(p, pos, PC_ERR_FORMAT,
                             "instruction '%s': parameter(%lld) appears twice in computation '%s'",
                             in->name, (long long)k, c->name);
        } else if (in->opcode_id == PC_HLO_DOT) {
            rc = check_dot(p, c, in, pos);
        }
    }
    free(seen);
    return rc;
}
