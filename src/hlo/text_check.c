/*
 * The verifier's rules (verify.c) on a computation the text parser just read
 * (text_internal.h): its operands are indices into the computation's
 * instructions. A broken rule is a FILE:LINE:COLUMN error at the instruction,
 * so such a module is never featurized or costed as if it made sense.
 */
#include "hlo/text_internal.h"
#include "hlo/verify.h"

/* Operands of a parsed computation are indices into its instructions. */
static const pc_hlo_instruction *local_operand(void *user, const pc_hlo_computation *c,
                                               int64_t operand) {
    (void)user;
    return operand >= 0 && operand < c->n_inst ? &c->inst[operand] : NULL;
}

int tx_check_semantics(parser *p, int32_t comp) {
    const pc_hlo_computation *c = &p->m->comp[comp];
    pc_hlo_fault f;
    int rc = pc_hlo_verify_computation(c, local_operand, NULL, &f);
    if (rc < 0) return tx_nomem(p);
    if (rc == 0) return 0;
    return tx_perr(p, p->ci[comp].ix[f.inst].pos, PC_ERR_FORMAT, "instruction '%s': %s",
                   c->inst[f.inst].name, f.why);
}
