/*
 * XLA verifier rules on the module IR (hlo_ir.h), one computation at a time,
 * for both readers, so a module means the same whichever way it came: the
 * text parser (text_check.c: a FILE:LINE:COLUMN error at the instruction) and
 * the proto reader (proto.c: the file, module, computation and instruction
 * name and id). The rules:
 *  - every operand names an instruction;
 *  - a layout (minor_to_major) is a permutation of its shape's dimensions
 *    (tuple elements' too, where the reader kept them);
 *  - parameter numbers lie in [0, the computation's parameter count) and
 *    none repeats;
 *  - dot dimension numbers name dimensions the operands have, with as many
 *    lhs as rhs contracting (and batch) dimensions;
 *  - convolution dimension numbers name dimensions the input, the kernel and
 *    the output have, with as many spatial dimensions in each.
 */
#ifndef PC_HLO_VERIFY_H
#define PC_HLO_VERIFY_H

#include "hlo/hlo_ir.h"

/* The instruction an operand entry names, or NULL if none: the text reader's
 * operands are indices into c->inst, the proto reader's module-wide ids. */
typedef const pc_hlo_instruction *(*pc_hlo_operand_fn)(void *user, const pc_hlo_computation *c,
                                                       int64_t operand);

/* The first instruction that breaks a rule. */
typedef struct pc_hlo_fault {
    int32_t inst;  /* its index in c->inst */
    char why[400]; /* what is wrong, without the instruction's name:
                      "parameter(7) is out of range: computation 'e' has 2 parameters, ..." */
} pc_hlo_fault;

/* 0 when every rule holds; 1 with *f filled at the first instruction that
 * breaks one; -1 when out of memory. */
int pc_hlo_verify_computation(const pc_hlo_computation *c, pc_hlo_operand_fn operand, void *user,
                              pc_hlo_fault *f);

#endif /* PC_HLO_VERIFY_H */
