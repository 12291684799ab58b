/*
 * FLOPs and HBM bytes of each instruction of an XLA HLO module: the input of
 * a whole-module roofline (`perfcast roofline --hlo FILE`, docs/analytic.md
 * "Roofline of an HLO module" states every rule).
 *
 * One row per instruction of the entry computation, in program order. A
 * fusion is one unit: its FLOPs are summed over the fused computation (and
 * any computation it calls), its bytes are what crosses the fusion boundary
 * (operands read + result written). A call, conditional or while is one row
 * too, its FLOPs and bytes summed over the instructions of the called
 * computation(s): those run as separate kernels, each through HBM. A while
 * body (and condition) counts its trip count: backend_config's
 * known_trip_count, else the count of a simple counted loop (the condition
 * compares a tuple element against a constant, LT; the body adds a constant
 * to it; the start is a constant), else `while_trips`; nested loops multiply.
 * cuBLAS GEMM and cuDNN convolution custom-calls are costed like dot and
 * convolution. Collectives are communication, not HBM bytes: each one is a
 * pc_hlo_collective (its bytes, group, and how many times it runs) for the
 * caller's collective model (the CLI uses perfcast/analytic.h).
 *
 * This module reads HLO (src/hlo); it does not depend on the analytic module:
 * the CLI turns the rows into the analytic module's ops.
 */
#ifndef PERFCAST_HLO_COST_H
#define PERFCAST_HLO_COST_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/npz.h"
#include "perfcast/perfcast.h"

/* Declared only under PC_STATIC_LINKING_ONLY: see "Structs across versions" in
   perfcast/perfcast.h (this API's structs are not versioned). */
#if defined(PC_STATIC_LINKING_ONLY)

#ifdef __cplusplus
extern "C" {
#endif

/* xla.PrimitiveType numbers used below. */
#define PC_HLO_TYPE_PRED 1
#define PC_HLO_TYPE_F32 11
#define PC_HLO_TYPE_TUPLE 13
#define PC_HLO_TYPE_BF16 16

/* "pred", "s8", "bf16", "f32", "tuple", ...; "?" if unknown. */
PC_API const char *pc_hlo_type_name(int32_t type);
/* Bytes per element: pred/s8/u8/f8* 1, bf16/f16/s16 2, f32/s32 4, f64/s64/c64 8,
 * c128 16, s4/u4/f4 0.5, s2/u2 0.25, s1/u1 0.125; tuple, token, opaque 0. */
PC_API double pc_hlo_type_bytes(int32_t type);

/* What one instruction (or fusion, call, while, conditional) costs. */
typedef struct pc_hlo_op_cost {
    const char *name;     /* instruction name without '%' (owned by the report) */
    const char *opcode;   /* "fusion", "dot", "add", ... (owned by the report) */
    int32_t module;       /* index into pc_hlo_cost.module_names */
    int32_t element_type; /* xla.PrimitiveType of the result (PC_HLO_TYPE_TUPLE for tuples) */
    int32_t compute_type; /* the type whose peak applies: the lhs operand of the first dot or
                             convolution in it, else the result's type, else the first array
                             operand's, else f32 */
    int matrix;           /* it is or contains a dot or convolution (MXU / tensor cores) */
    double flops;         /* including transcendentals */
    double transcendentals; /* exp, log, tanh, rsqrt, ...: 1 flop each, counted here too */
    double bytes_read;    /* operands read from HBM */
    double bytes_written; /* result written to HBM */
    double comm_bytes;    /* sum of its collectives' bytes x count (pc_hlo_collective.bytes) */
    int64_t collectives;  /* pc_hlo_collective entries with op == this row */
    double trips;         /* times the row runs: 1, or the loops' trip counts (loop_ops) */
} pc_hlo_op_cost;

/* Collectives (async -start/-done pairs and async-start wrappers counted once, at the start). */
typedef enum pc_hlo_coll {
    PC_HLO_COLL_ALL_GATHER = 0,
    PC_HLO_COLL_REDUCE_SCATTER,
    PC_HLO_COLL_ALL_REDUCE,
    PC_HLO_COLL_ALL_TO_ALL,
    PC_HLO_COLL_PERMUTE, /* collective-permute */
    PC_HLO_COLL_COUNT
} pc_hlo_coll;
PC_API const char *pc_hlo_coll_name(pc_hlo_coll c); /* the HLO opcode: "all-gather", ... */
PC_API int pc_hlo_coll_parse(const char *s);        /* the names above (and their -start); -1 */

/* One collective instruction, wherever it sits (entry, loop bodies, called computations). */
typedef struct pc_hlo_collective {
    int64_t op;        /* the pc_hlo_cost.ops row it belongs to (its entry instruction) */
    const char *name;  /* instruction name (owned by the report) */
    pc_hlo_coll kind;
    double bytes;      /* the full array V: all-gather the gathered result, reduce-scatter the
                          unreduced input, all-reduce the array, all-to-all the operand x group
                          size, collective-permute what each device sends (operand bytes) */
    double count;      /* times it runs (trip counts of the loops around it) */
    int64_t group_size; /* devices in one replica group; 0 = all devices (replica_groups={} or
                           absent, or a form not understood: see groups_known) */
    int64_t n_groups;
    const int64_t *group; /* the first group's device ids (group_ids of them; owned) */
    int64_t group_ids;
    int groups_known;  /* 0: replica_groups in a form not read (counted as all devices) */
} pc_hlo_collective;

typedef struct pc_hlo_cost_opts {
    size_t struct_size; /* sizeof(pc_hlo_cost_opts), set by pc_hlo_cost_opts_default() */
    int module;         /* -1 (default): every module of the file; else its index */
    double while_trips; /* times each while body and condition count; <= 0 -> 1 */
    int keep_free;      /* 1: keep rows that cost nothing (parameter, constant, tuple,
                           get-tuple-element, bitcast, row-major reshape) */
    int loop_ops;       /* 1: a while in the entry is its body's (and condition's) rows, named
                           "WHILE/INSTRUCTION", each times the trip count (nested loops too);
                           0 (default): one row per while */
    /* The memory budget (bytes, or PC_MEMORY_AUTO: half the available memory,
       perfcast/npz.h; the default) of reading and parsing the program, checked
       before each file is read and parsed: HLO text as pc_rank_opts.max_memory
       says (perfcast/hlo.h; the files of a dump directory all together), a
       .pb its size plus 5 times what its messages unpack to; then, before the
       rows are made, the parsed modules and their rows (one per instruction,
       up to 224 bytes each; checked again as loop_ops repeats a body's rows).
       Over it: PC_ERR_NOMEM naming the file and both sizes. */
    uint64_t max_memory;
    /* Progress of reading and parsing an input of 4 MiB or more: "bytes read"
       then "bytes parsed" (a .pb: "bytes decoded"), done of total bytes, about
       every MiB; default NULL (perfcast/perfcast.h, pc_progress_fn). */
    pc_progress_fn progress;
    void *progress_user; /* its first argument; default NULL */
} pc_hlo_cost_opts;
PC_API pc_hlo_cost_opts pc_hlo_cost_opts_default(void);

typedef struct pc_hlo_cost {
    const char *format; /* "HLO text", "TuningData", "ModuleTuningData", "HloModuleProto" */
    char **module_names;
    int32_t n_modules; /* modules costed */
    pc_hlo_op_cost *ops;
    int64_t n_ops;
    double flops, transcendentals, bytes_read, bytes_written; /* sums over ops */
    int64_t instructions; /* entry instructions seen */
    int64_t free_ops;     /* ... that cost nothing (left out unless keep_free) */
    int64_t while_loops;  /* while instructions met */
    int64_t loops_known;    /* ... with backend_config known_trip_count */
    int64_t loops_counted;  /* ... whose trip count was read from the loop (counter < constant) */
    int64_t loops_fallback; /* ... counted while_trips times */
    int64_t library_calls;  /* cuBLAS/cuDNN custom-calls costed as GEMMs / convolutions */
    pc_hlo_collective *collectives;
    int64_t n_collectives;
    double comm_bytes;      /* sum of collectives' bytes x count */
    int64_t unsized;      /* tuple values whose size is unknown (counted as 0 bytes) */
    int64_t dots_guessed; /* dots without dimension numbers: lhs's last dim contracted */
    int64_t unknown_ops;  /* opcodes without a rule: 0 FLOPs, operands + result bytes */
    char first_unknown[32];
} pc_hlo_cost;

/*
 * Costs every module (or opts->module) of an HLO file: FILE.pb (or .binpb)
 * is read as a TpuGraphs TuningData / ModuleTuningData or a bare
 * HloModuleProto (raw protobuf); anything else as HLO text (.hlo, .txt).
 * Parse errors are PC_ERR_FORMAT with "PATH:LINE:COLUMN: ..." for text.
 * An instruction (or a total) whose FLOPs or bytes overflow a double (absurd
 * shapes, huge --while-trips) is PC_ERR_RANGE naming it: rows are always
 * finite and >= 0. opts may be NULL (defaults).
 */
PC_API pc_status pc_hlo_cost_file(const char *path, const pc_hlo_cost_opts *opts, pc_hlo_cost **out,
                                  pc_error *err);
/* The same for `len` bytes of HLO text; `what` names it in messages. */
PC_API pc_status pc_hlo_cost_text(const char *text, size_t len, const char *what,
                                  const pc_hlo_cost_opts *opts, pc_hlo_cost **out, pc_error *err);
PC_API void pc_hlo_cost_free(pc_hlo_cost *c); /* NULL ok */

#ifdef __cplusplus
}
#endif

#endif /* PC_STATIC_LINKING_ONLY */

#endif /* PERFCAST_HLO_COST_H */
