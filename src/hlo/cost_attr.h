/*
 * What hlo/cost.c reads from the attributes the HLO text reader keeps as
 * text (pc_hlo_instruction.attrs, hlo/text.h PC_HLO_COST_ATTRS): library
 * call targets (cuBLAS / cuDNN / MIOpen custom-calls), GEMM dimension numbers
 * and while trip counts from backend_config JSON, replica groups (explicit
 * and iota forms), FFT lengths and scalar integer literals. Pure functions of
 * one instruction; no file calls back into cost.c.
 */
#ifndef PC_HLO_COST_ATTR_H
#define PC_HLO_COST_ATTR_H

#include <stddef.h>
#include <stdint.h>

#include "hlo/hlo_ir.h"

/* Custom-calls into a library whose arithmetic is known from the operands. */
typedef enum pc_hlo_lib_call {
    PC_HLO_LIB_NONE = 0,
    PC_HLO_LIB_GEMM,            /* __cublas$gemm, __cublas$lt$matmul[$f8...], __rocblas... */
    PC_HLO_LIB_CONV_FWD,        /* __cudnn$convForward, convBiasActivationForward, ...Graph */
    PC_HLO_LIB_CONV_BWD_INPUT,  /* __cudnn$convBackwardInput: result = input gradient */
    PC_HLO_LIB_CONV_BWD_FILTER, /* __cudnn$convBackwardFilter: result = kernel gradient */
} pc_hlo_lib_call;

pc_hlo_lib_call pc_hlo_lib_call_kind(const pc_hlo_instruction *in);

/*
 * A kept attribute's value as a string: quotes removed and escapes (\" \\ \n \t)
 * resolved when it was written quoted, as is otherwise. malloc'd; NULL if the
 * attribute is absent (or out of memory).
 */
char *pc_hlo_attr_string(const pc_hlo_instruction *in, const char *name);

/*
 * The lhs contracting dimensions of a GEMM custom-call, from backend_config
 * {"gemm_backend_config": {"dot_dimension_numbers": {"lhs_contracting_dimensions":
 * ["1"], ...}}} (or dot_dimension_numbers at the top, older XLA). Returns the
 * count written to dims (at most cap), or -1 if the config has none.
 */
int pc_hlo_gemm_lhs_contracting(const pc_hlo_instruction *in, int64_t *dims, int cap);

/* backend_config {"known_trip_count": {"n": "12"}} of a while: 1 and *n, else 0. */
int pc_hlo_known_trip_count(const pc_hlo_instruction *in, double *n);

/* The integer value of a scalar constant's literal ("12", "-3", "true"): 1 and *v, else 0. */
int pc_hlo_literal_int(const pc_hlo_instruction *in, int64_t *v);

/* The comparison direction of a compare ("LT", "GT", ...), "" if absent. */
const char *pc_hlo_compare_direction(const pc_hlo_instruction *in, char buf[8]);

#define PC_HLO_GROUP_MAX 65536 /* device ids kept of the first group */

/* The replica groups of a collective. */
typedef struct pc_hlo_groups {
    int64_t size;   /* devices in each group; 0 = one group of all devices (`{}`, absent) */
    int64_t count;  /* groups (1 when size is 0) */
    int64_t *first; /* min(size, PC_HLO_GROUP_MAX) device ids of the first group, malloc'd */
    int known;      /* 0: the attribute is in a form not understood (size 0) */
} pc_hlo_groups;

/*
 * replica_groups={{0,1},{2,3}} (explicit), replica_groups=[2,4]<=[8] or
 * [2,4]<=[4,2]T(1,0) (iota: [groups, size] of the transposed iota), absent
 * or {} (all devices); source_target_pairs={{0,1},{1,2}} of a
 * collective-permute gives the devices that take part as one group. Returns
 * 0, or -1 when out of memory. Free g->first.
 */
int pc_hlo_replica_groups(const pc_hlo_instruction *in, pc_hlo_groups *g);

/* fft_type (0 FFT, 1 IFFT, 2 RFFT, 3 IRFFT; -1 absent) and the product of fft_length. */
int pc_hlo_fft(const pc_hlo_instruction *in, double *length);

#endif /* PC_HLO_COST_ATTR_H */
