/*
 * What XLA's verifier would refuse in a computation that was read, whichever
 * reader read it (verify.h): unresolved operands, layouts that are not a
 * permutation of their shape's dimensions, parameter numbers out of range or
 * repeated, dot and convolution dimension numbers naming dimensions the
 * operands do not have. So such a module is never featurized or costed as if
 * it made sense.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/verify.h"
#include "tpugraphs/opcode.h"

static int fault(pc_hlo_fault *f, int32_t inst, const char *fmt, ...) PC_PRINTF(3, 4);

static int fault(pc_hlo_fault *f, int32_t inst, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->why, sizeof f->why, fmt, ap);
    va_end(ap);
    f->inst = inst;
    return 1;
}

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

/* A list of dimension numbers and the rank they must lie within. */
typedef struct dim_rule {
    const pc_i64s *l;
    int32_t rank;
    const char *field, *of; /* "lhs_contracting_dims", "operand" */
} dim_rule;

static int check_rules(pc_hlo_fault *f, int32_t i, const dim_rule *r, int n) {
    for (int k = 0; k < n; k++)
        if (!dims_in_range(r[k].l, r[k].rank))
            return fault(f, i, "%s names a dimension its %s of rank %d does not have", r[k].field,
                         r[k].of, (int)r[k].rank);
    return 0;
}

static int check_dot(const pc_hlo_instruction *in, const pc_hlo_instruction *lhs,
                     const pc_hlo_instruction *rhs, int32_t i, pc_hlo_fault *f) {
    if (!pc_hlo_x(in)->dot.present || !lhs || !rhs) return 0;
    const int32_t rl = lhs->shape.dims.n, rr = rhs->shape.dims.n;
    const dim_rule r[4] = {{&pc_hlo_x(in)->dot.lhs_contracting, rl, "lhs_contracting_dims", "operand"},
                           {&pc_hlo_x(in)->dot.lhs_batch, rl, "lhs_batch_dims", "operand"},
                           {&pc_hlo_x(in)->dot.rhs_contracting, rr, "rhs_contracting_dims", "operand"},
                           {&pc_hlo_x(in)->dot.rhs_batch, rr, "rhs_batch_dims", "operand"}};
    if (check_rules(f, i, r, 4)) return 1;
    if (pc_hlo_x(in)->dot.lhs_contracting.n != pc_hlo_x(in)->dot.rhs_contracting.n ||
        pc_hlo_x(in)->dot.lhs_batch.n != pc_hlo_x(in)->dot.rhs_batch.n)
        return fault(f, i,
                     "lhs and rhs list different numbers of contracting or batch "
                     "dimensions");
    return 0;
}

/*
 * One operand's convolution roles (XLA's ShapeInference::InferConvolveShape):
 * its two single dimensions (input: batch and feature; kernel: input and
 * output feature; output: batch and feature) and its spatial ones, each of
 * its `rank` dimensions exactly once. Ranges were checked before.
 */
static int conv_roles(pc_hlo_fault *f, int32_t i, const char *of, int32_t rank,
                      const char *const name[2], const int64_t one[2], const char *sp_name,
                      const pc_i64s *sp) {
    const int32_t n = 2 + sp->n;
    for (int32_t a = 0; a < n; a++)
        for (int32_t b = a + 1; b < n; b++) {
            int64_t x = a < 2 ? one[a] : sp->v[a - 2], y = b < 2 ? one[b] : sp->v[b - 2];
            if (x != y) continue;
            if (a >= 2)
                return fault(f, i, "%s names dimension %lld of the %s twice (expected distinct "
                             "dimensions)", sp_name, (long long)x, of);
            return fault(f, i, "%s and %s both name dimension %lld of the %s (expected "
                         "distinct dimensions)", name[a], b < 2 ? name[b] : sp_name,
                         (long long)x, of);
        }
    if (n != rank)
        return fault(f, i, "its convolution dimension numbers give the %s %d dimensions (%s, %s "
                     "and %d spatial), but it has rank %d (expected each dimension once)", of,
                     (int)n, name[0], name[1], (int)sp->n, (int)rank);
    return 0;
}

static int check_conv(const pc_hlo_instruction *in, const pc_hlo_instruction *x,
                      const pc_hlo_instruction *w, int32_t i, pc_hlo_fault *f) {
    const pc_hlo_conv_dims *d = &pc_hlo_x(in)->conv;
    if (!d->present || !x || !w || in->shape.tuple_count > 0) return 0;
    const int32_t rx = x->shape.dims.n, rw = w->shape.dims.n, ro = in->shape.dims.n;
    int64_t one[6] = {d->input_batch,           d->input_feature, d->kernel_input_feature,
                      d->kernel_output_feature, d->output_batch,  d->output_feature};
    const pc_i64s ib = {&one[0], 1}, ifd = {&one[1], 1}, ki = {&one[2], 1}, ko = {&one[3], 1},
                  ob = {&one[4], 1}, of = {&one[5], 1};
    const dim_rule r[9] = {{&ib, rx, "input_batch_dimension", "input"},
                           {&ifd, rx, "input_feature_dimension", "input"},
                           {&d->input_spatial, rx, "input_spatial_dimensions", "input"},
                           {&ki, rw, "kernel_input_feature_dimension", "kernel"},
                           {&ko, rw, "kernel_output_feature_dimension", "kernel"},
                           {&d->kernel_spatial, rw, "kernel_spatial_dimensions", "kernel"},
                           {&ob, ro, "output_batch_dimension", "output"},
                           {&of, ro, "output_feature_dimension", "output"},
                           {&d->output_spatial, ro, "output_spatial_dimensions", "output"}};
    if (check_rules(f, i, r, 9)) return 1;
    if (d->input_spatial.n != d->kernel_spatial.n || d->input_spatial.n != d->output_spatial.n)
        return fault(f, i,
                     "its convolution dimension numbers list %d input, %d kernel and %d output "
                     "spatial dimensions",
                     (int)d->input_spatial.n, (int)d->kernel_spatial.n, (int)d->output_spatial.n);
    static const char *const nin[2] = {"input_batch_dimension", "input_feature_dimension"};
    static const char *const nk[2] = {"kernel_input_feature_dimension",
                                      "kernel_output_feature_dimension"};
    static const char *const nout[2] = {"output_batch_dimension", "output_feature_dimension"};
    if (conv_roles(f, i, "input", rx, nin, &one[0], "input_spatial_dimensions",
                   &d->input_spatial) ||
        conv_roles(f, i, "kernel", rw, nk, &one[2], "kernel_spatial_dimensions",
                   &d->kernel_spatial) ||
        conv_roles(f, i, "output", ro, nout, &one[4], "output_spatial_dimensions",
                   &d->output_spatial))
        return 1;
    return 0;
}

/* Operand k of `in`, or NULL when it has none or it names nothing. */
static const pc_hlo_instruction *operand_of(const pc_hlo_computation *c,
                                            const pc_hlo_instruction *in, int32_t k,
                                            pc_hlo_operand_fn fn, void *user) {
    return k < in->operand_ids.n ? fn(user, c, in->operand_ids.v[k]) : NULL;
}

static int check_param(const pc_hlo_computation *c, const pc_hlo_instruction *in, int32_t i,
                       int32_t nparam, uint8_t *seen, pc_hlo_fault *f) {
    char nb[PC_HLO_NAME_BUF];
    int64_t k = in->parameter_number;
    if (k < 0 || k >= nparam)
        return fault(f, i,
                     "parameter(%lld) is out of range: computation '%s' has %d parameters, "
                     "numbered 0..%d",
                     (long long)k, pc_hlo_printable(c->name, nb), (int)nparam, (int)nparam - 1);
    if (seen[k]++)
        return fault(f, i, "parameter(%lld) appears twice in computation '%s'", (long long)k,
                     pc_hlo_printable(c->name, nb));
    return 0;
}

int pc_hlo_verify_computation(const pc_hlo_computation *c, pc_hlo_operand_fn operand, void *user,
                              pc_hlo_fault *f) {
    int32_t nparam = 0;
    for (int32_t i = 0; i < c->n_inst; i++) nparam += c->inst[i].opcode_id == PC_HLO_PARAMETER;
    uint8_t *seen = calloc((size_t)nparam + 1, 1);
    if (!seen) return -1;
    int rc = 0;
    for (int32_t i = 0; i < c->n_inst && !rc; i++) {
        const pc_hlo_instruction *in = &c->inst[i];
        for (int32_t k = 0; k < in->operand_ids.n && !rc; k++)
            if (!operand_of(c, in, k, operand, user))
                rc = fault(f, i, "names operand id %lld, which is not an instruction of the module",
                           (long long)in->operand_ids.v[k]);
        if (rc) break;
        const pc_hlo_instruction *a = operand_of(c, in, 0, operand, user),
                                 *b = operand_of(c, in, 1, operand, user);
        const char *why = layout_problem(&in->shape, 0);
        if (why)
            rc = fault(f, i, "%s", why);
        else if (in->opcode_id == PC_HLO_PARAMETER)
            rc = check_param(c, in, i, nparam, seen, f);
        else if (in->opcode_id == PC_HLO_DOT)
            rc = check_dot(in, a, b, i, f);
        else if (in->opcode_id == PC_HLO_CONVOLUTION)
            rc = check_conv(in, a, b, i, f);
    }
    free(seen);
    return rc;
}
