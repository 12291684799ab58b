/*
 * The simulated TPU both cost models run on: one TPU v3-like TensorCore.
 * Numbers are round figures from public descriptions (docs/synth.md):
 * arrays live in HBM as (sublane, lane) = (8, 128) tiles of 32-bit words
 * (16 rows for 16-bit types, 32 for 8-bit), the MXU is a 128x128 systolic
 * array, the vector unit works on (8, 128) registers and kernels stage
 * tiles through a 16 MiB on-chip VMEM.
 */
#ifndef PC_SYNTH_TPU_H
#define PC_SYNTH_TPU_H

#include <stdint.h>

#define TPU_HBM_BYTES_PER_NS 900.0   /* ~900 GB/s */
#define TPU_MXU_FLOPS_PER_NS 60000.0 /* ~60 TFLOP/s bf16 per core */
#define TPU_VPU_OPS_PER_NS 1000.0    /* vector ALU element-ops */
#define TPU_EUP_OPS_PER_NS 250.0     /* transcendentals (exp, tanh, rsqrt) */
#define TPU_LANES 128
#define TPU_VMEM_BYTES (16.0 * 1024 * 1024)
#define TPU_OP_LAUNCH_NS 120.0 /* per unfused HLO op */
#define TPU_STEP_NS 350.0      /* per grid step of a tiled kernel */
#define TPU_KERNEL_LAUNCH_NS 1500.0

static inline int64_t tpu_ceil_to(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static inline int64_t tpu_ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

/* Bytes per element of an xla PrimitiveType (tuples and unknowns: 4). */
static inline int tpu_esize(int etype) {
    switch (etype) {
    case 1: return 1;  /* PRED */
    case 10: return 2; /* F16 */
    case 16: return 2; /* BF16 */
    default: return 4;
    }
}

/* Rows of a (sublane, lane) tile: 16-bit types pack two rows per sublane. */
static inline int64_t tpu_sublanes(int esize) { return esize >= 4 ? 8 : esize == 2 ? 16 : 32; }

#endif /* PC_SYNTH_TPU_H */
