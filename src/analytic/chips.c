/*
 * The chip database: built-in TPUs and GPUs with their sources, lookup with
 * aliases, and user-defined or overridden chips from JSON (cJSON).
 *
 * Numbers come from /work/shared/reference/scaling_book.md (the jax-ml
 * "How to Scale Your Model" book) unless the source string says otherwise;
 * where the book's table rounds a vendor number and its text gives the
 * precise one (H100 9.89e14 FLOP/s, 3.35e12 B/s; B200 2.25e15), the precise
 * one is used. Values not in the book are from vendor data sheets (named in
 * the source string) or left 0 (unknown).
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/analytic_internal.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

/* Latencies the book does not give: documented assumptions (docs/analytic.md). */
#define ICI_HOP_LATENCY 1e-6 /* scaling_book.md §1/§3: ~1 us per ICI hop */
#define DCN_LATENCY 1e-5     /* assumption: 10 us per DCN / InfiniBand collective step */
#define NCCL_LATENCY 5e-6    /* peers.md: XLA's GPU model charges 5 us per NCCL launch */

#define TPU_COMMON                                                                                 \
    .kind = PC_CHIP_TPU, .ici_hop_latency = ICI_HOP_LATENCY, .dcn_latency = DCN_LATENCY
#define GPU_COMMON .kind = PC_CHIP_GPU, .coll_latency = NCCL_LATENCY, .dcn_latency = DCN_LATENCY

static const pc_chip builtin[] = {
    {.name = "v3",
     .full_name = "TPU v3",
     TPU_COMMON,
     .flops = {[PC_PREC_BF16] = 1.4e14, [PC_PREC_INT8] = 1.4e14},
     .hbm_bytes = 32e9,
     .hbm_bw = 9.0e11,
     .cores = 2,
     .torus_dims = 2,
     .pod_shape = {32, 32, 1},
     .wrap = PC_WRAP_FULL_AXIS,
     .wrap_size = 32,
     .ici_link_bw = 1.0e11,
     .pcie_bw = 1.6e10,
     .source = "scaling_book.md §1 TPU table (tpus.md): FLOP/s, HBM, ICI 1.0e11/link one-way, "
               "2D torus 32x32, 2 cores as separate devices; PCIe ~1.6e10; VMEM and DCN not "
               "given; wraparound assumed only on full 32-chip axes (by analogy with v5e)"},
    {.name = "v4",
     .full_name = "TPU v4 (v4p)",
     TPU_COMMON,
     .flops = {[PC_PREC_BF16] = 2.75e14, [PC_PREC_INT8] = 2.75e14},
     .hbm_bytes = 32e9,
     .hbm_bw = 1.2e12,
     .cores = 2,
     .torus_dims = 3,
     .pod_shape = {16, 16, 16},
     .wrap = PC_WRAP_CUBES,
     .wrap_size = 4,
     .ici_link_bw = 4.5e10,
     .dcn_bw = 6.25e9,
     .pcie_bw = 1.6e10,
     .source = "scaling_book.md §1 TPU table (v4p row): FLOP/s, HBM 1.2e12 (a tpus.md answer "
               "uses 1.23e12), ICI 4.5e10/link one-way, 3D torus 16x16x16 of 4x4x4 cubes "
               "(wraparound only for whole cubes), megacore; PCIe 16 GB/s; DCN 6.25e9/chip "
               "derived: the book's ~2.5e10 B/s per host (tpus.md) over the 4 chips of a v4p "
               "host (2x2x1), as for v5p; VMEM not given"},
    {.name = "v5p",
     .full_name = "TPU v5p",
     TPU_COMMON,
     .flops = {[PC_PREC_BF16] = 4.59e14, [PC_PREC_INT8] = 9.18e14},
     .vector_flops = 1.4e13,
     .hbm_bytes = 96e9,
     .hbm_bw = 2.8e12,
     .onchip_bytes = 128 * MIB,
     .cores = 2,
     .torus_dims = 3,
     .pod_shape = {16, 20, 28},
     .wrap = PC_WRAP_CUBES,
     .wrap_size = 4,
     .ici_link_bw = 9.0e10,
     .dcn_bw = 6.25e9,
     .pcie_bw = 1.6e10,
     .price_per_hour = 4.2,
     .source = "scaling_book.md §1 TPU table: FLOP/s, HBM, ICI 9.0e10/link one-way (90 GB/s per "
               "axis, 6 links), pod 16x20x28 (8960 chips), 4x4x4 cubes; VPU 7e12/core x 2 "
               "cores; VMEM 128MB (gpus.md); DCN 6.25e9/chip; price $4.2/h (applied-inference, "
               "Feb 2025 GCP)"},
    {.name = "v5e",
     .full_name = "TPU v5e (v5litepod)",
     TPU_COMMON,
     .flops = {[PC_PREC_BF16] = 1.97e14, [PC_PREC_INT8] = 3.94e14},
     .vector_flops = 6.144e12,
     .hbm_bytes = 16e9,
     .hbm_bw = 8.2e11,
     .onchip_bytes = 128 * MIB,
     .cores = 1,
     .torus_dims = 2,
     .pod_shape = {16, 16, 1},
     .wrap = PC_WRAP_FULL_AXIS,
     .wrap_size = 16,
     .ici_link_bw = 4.5e10,
     .dcn_bw = 3.125e9,
     .pcie_bw = 1.6e10,
     .price_per_hour = 1.2,
     .source = "scaling_book.md §1 TPU table: FLOP/s, HBM 8.2e11 (Feb-2025 text 8.1e11), ICI "
               "4.5e10/link one-way, 2D torus 16x16, wraparound only on axes of 16; VMEM 128 "
               "MiB; VPU 8x128x4 ALUs at 1.5 GHz (derived); DCN 3.125e9/chip; price $1.2/h "
               "(applied-inference, Feb 2025 GCP)"},
    {.name = "v6e",
     .full_name = "TPU v6e (Trillium)",
     TPU_COMMON,
     .flops = {[PC_PREC_BF16] = 9.2e14, [PC_PREC_INT8] = 1.84e15},
     .hbm_bytes = 32e9,
     .hbm_bw = 1.6e12,
     .torus_dims = 2,
     .pod_shape = {16, 16, 1},
     .wrap = PC_WRAP_FULL_AXIS,
     .wrap_size = 16,
     .ici_link_bw = 9.0e10,
     .dcn_bw = 12.5e9,
     .pcie_bw = 3.2e10,
     .source = "scaling_book.md §1 TPU table: FLOP/s (roofline.md text rounds to 9.1e14), HBM, "
               "ICI 9.0e10/link one-way, 2D torus 16x16 wrapping on axes of 16; DCN 12.5e9; "
               "PCIe 3.2e10; MXU 256x256; VMEM not given"},
    {.name = "tpu7x",
     .full_name = "TPU7x (Ironwood)",
     TPU_COMMON,
     .flops = {[PC_PREC_BF16] = 2.30e15, [PC_PREC_INT8] = 4.61e15},
     .hbm_bytes = 192e9,
     .hbm_bw = 7.4e12,
     .cores = 2,
     .torus_dims = 3,
     .pod_shape = {4, 4, 576},
     .wrap = PC_WRAP_CUBES,
     .wrap_size = 4,
     .ici_link_bw = 9.0e10,
     .dcn_bw = 12.5e9,
     .source = "scaling_book.md §1 TPU table (TPU7x row): FLOP/s (int8 column), HBM, ICI "
               "9.0e10/link one-way, pod 4x4x576; DCN 12.5e9; two cores joined by a fast link; "
               "wraparound assumed as v4/v5p (whole 4x4x4 cubes)"},
    {.name = "v100",
     .full_name = "NVIDIA V100 SXM2 32GB",
     GPU_COMMON,
     .flops = {[PC_PREC_FP16] = 1.25e14, [PC_PREC_FP32] = 1.57e13},
     .vector_flops = 7.07e12,
     .hbm_bytes = 32e9,
     .hbm_bw = 9.0e11,
     .onchip_bytes = 6 * MIB,
     .smem_per_sm = 96 * KIB,
     .sms = 80,
     .nvlink_bw = 1.5e11,
     .nvlink_domain = 8,
     .ib_bw = 6.25e9,
     .source = "scaling_book.md §1 GPU table: SMs, SMEM, L2, HBM; no bf16 (fp16 tensor 125 TF, "
               "fp32 15.7 TF: NVIDIA V100 data sheet); NVLink2 300 GB/s total = 150 GB/s each "
               "way (data sheet; DGX-1 hybrid cube-mesh treated as a switch); IB 4x100 Gb/s "
               "per 8 GPUs (DGX-1); vector = 80 SMs x 64 cores x 1.38 GHz"},
    {.name = "a100",
     .full_name = "NVIDIA A100 SXM4 80GB",
     GPU_COMMON,
     .flops = {[PC_PREC_BF16] = 3.12e14,
               [PC_PREC_FP16] = 3.12e14,
               [PC_PREC_INT8] = 6.24e14,
               [PC_PREC_TF32] = 1.56e14,
               [PC_PREC_FP32] = 1.95e13},
     .vector_flops = 9.75e12,
     .hbm_bytes = 80e9,
     .hbm_bw = 2.0e12,
     .onchip_bytes = 40 * MIB,
     .smem_per_sm = 192 * KIB,
     .sms = 108,
     .nvlink_bw = 3.0e11,
     .nvlink_domain = 8,
     .ib_bw = 2.5e10,
     .source = "scaling_book.md §1 GPU table: SMs, SMEM, L2 40MB, HBM 80GB at 2.0e12, bf16 "
               "3.1e14 / int8 6.2e14 (data sheet 312/624 TF); NVLink3 12 x 25 GB/s = 300 GB/s "
               "each way, 8-GPU node; tf32/fp32 from the A100 data sheet; IB 200 Gb/s HDR per "
               "GPU (DGX A100); vector = 108 SMs x 64 cores x 1.41 GHz"},
    {.name = "h100",
     .full_name = "NVIDIA H100 SXM 80GB",
     GPU_COMMON,
     .flops = {[PC_PREC_BF16] = 9.89e14,
               [PC_PREC_FP16] = 9.89e14,
               [PC_PREC_FP8] = 1.979e15,
               [PC_PREC_INT8] = 1.979e15,
               [PC_PREC_TF32] = 4.945e14,
               [PC_PREC_FP32] = 6.7e13},
     .vector_flops = 3.35e13,
     .hbm_bytes = 80e9,
     .hbm_bw = 3.35e12,
     .onchip_bytes = 50 * MIB,
     .smem_per_sm = 256 * KIB,
     .sms = 132,
     .nvlink_bw = 4.5e11,
     .nvlink_domain = 8,
     .ib_bw = 5.0e10,
     .price_per_hour = 10.8,
     .source = "scaling_book.md §1 GPU table and roofline.md text: bf16 9.89e14 (990 TF), fp8 "
               "2.0e15, HBM 3.35e12, L2 50MB; vector fp32 33.5 TF (boost, no FMA); NVLink4 18 x "
               "25 GB/s = 450 GB/s each way, 8-GPU node; NDR IB 400 Gb/s per GPU (DGX "
               "SuperPod); tf32/fp32 from the H100 data sheet; price $10.8/h (applied-inference, "
               "Feb 2025 GCP)"},
    {.name = "h200",
     .full_name = "NVIDIA H200 SXM 141GB",
     GPU_COMMON,
     .flops = {[PC_PREC_BF16] = 9.89e14,
               [PC_PREC_FP16] = 9.89e14,
               [PC_PREC_FP8] = 1.979e15,
               [PC_PREC_INT8] = 1.979e15,
               [PC_PREC_TF32] = 4.945e14,
               [PC_PREC_FP32] = 6.7e13},
     .vector_flops = 3.35e13,
     .hbm_bytes = 141e9,
     .hbm_bw = 4.8e12,
     .onchip_bytes = 50 * MIB,
     .smem_per_sm = 256 * KIB,
     .sms = 132,
     .nvlink_bw = 4.5e11,
     .nvlink_domain = 8,
     .ib_bw = 5.0e10,
     .source = "scaling_book.md §1 GPU table: H100 compute (9.9e14 bf16, 2.0e15 fp8), HBM 141GB "
               "at 4.8e12; NVLink4 450 GB/s each way, 8-GPU node; IB as DGX H100 (400 Gb/s per "
               "GPU); tf32/fp32 from the H200 data sheet"},
    {.name = "b200",
     .full_name = "NVIDIA B200 (HGX, 8 GPUs)",
     GPU_COMMON,
     .flops = {[PC_PREC_BF16] = 2.25e15,
               [PC_PREC_FP16] = 2.25e15,
               [PC_PREC_FP8] = 4.5e15,
               [PC_PREC_INT8] = 4.5e15,
               [PC_PREC_FP4] = 9.0e15},
     .hbm_bytes = 192e9,
     .hbm_bw = 8.0e12,
     .onchip_bytes = 126 * MIB,
     .smem_per_sm = 256 * KIB,
     .sms = 148,
     .nvlink_bw = 9.0e11,
     .nvlink_domain = 8,
     .ib_bw = 5.0e10,
     .source = "scaling_book.md §1 GPU table: bf16 2.25e15 (text), fp8/int8 4.5e15, fp4 9.0e15, "
               "HBM 192GB at 8.0e12, L2 126MB; NVLink5 18 x 50 GB/s = 900 GB/s each way; node "
               "egress 400e9 (8 x 400 Gb/s); fp32 not given"},
    {.name = "gb200-nvl72",
     .full_name = "NVIDIA GB200 NVL72 (B200 GPUs, 72 per NVLink domain)",
     GPU_COMMON,
     .flops = {[PC_PREC_BF16] = 2.5e15,
               [PC_PREC_FP16] = 2.5e15,
               [PC_PREC_FP8] = 5.0e15,
               [PC_PREC_INT8] = 5.0e15,
               [PC_PREC_FP4] = 1.0e16},
     .hbm_bytes = 186e9,
     .hbm_bw = 8.0e12,
     .onchip_bytes = 126 * MIB,
     .smem_per_sm = 256 * KIB,
     .sms = 148,
     .nvlink_bw = 9.0e11,
     .nvlink_domain = 72,
     .ib_bw = 5.0e10,
     .source = "scaling_book.md §1 node types: GB200 NVL72 = 72 GPUs, 900e9 GPU egress, 3600e9 "
               "node egress = 50e9/GPU; GPU: NVIDIA GB200 NVL72 datasheet (rack, sparse: "
               "360 PF bf16, 720 PF fp8, 1440 PF fp4, 13.4 TB HBM at 576 TB/s) halved and / 72"},
};
#define NUM_BUILTIN ((int)(sizeof builtin / sizeof builtin[0]))

int pc_chip_builtin_count(void) { return NUM_BUILTIN; }
const pc_chip *pc_chip_builtin(int i) { return i >= 0 && i < NUM_BUILTIN ? &builtin[i] : NULL; }

/* ---------------- precisions ---------------- */

static const char *const prec_names[PC_PREC_COUNT] = {"fp32", "tf32", "bf16", "fp16",
                                                      "fp8",  "int8", "int4", "fp4"};
static const double prec_bytes[PC_PREC_COUNT] = {4, 4, 2, 2, 1, 1, 0.5, 0.5};

const char *pc_prec_name(pc_prec p) { return (unsigned)p < PC_PREC_COUNT ? prec_names[p] : "?"; }
double pc_prec_bytes(pc_prec p) { return (unsigned)p < PC_PREC_COUNT ? prec_bytes[p] : 0; }

int pc_prec_parse(const char *s) {
    static const struct {
        const char *name;
        pc_prec p;
    } alias[] = {{"fp32", PC_PREC_FP32},     {"float32", PC_PREC_FP32}, {"f32", PC_PREC_FP32},
                 {"float", PC_PREC_FP32},    {"tf32", PC_PREC_TF32},    {"bf16", PC_PREC_BF16},
                 {"bfloat16", PC_PREC_BF16}, {"fp16", PC_PREC_FP16},    {"float16", PC_PREC_FP16},
                 {"f16", PC_PREC_FP16},      {"half", PC_PREC_FP16},    {"fp8", PC_PREC_FP8},
                 {"float8", PC_PREC_FP8},    {"e4m3", PC_PREC_FP8},     {"e5m2", PC_PREC_FP8},
                 {"f8", PC_PREC_FP8},        {"int8", PC_PREC_INT8},    {"i8", PC_PREC_INT8},
                 {"s8", PC_PREC_INT8},       {"int4", PC_PREC_INT4},    {"i4", PC_PREC_INT4},
                 {"s4", PC_PREC_INT4},       {"fp4", PC_PREC_FP4},      {"f4", PC_PREC_FP4}};
    if (!s) return -1;
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (pc_ascii_ieq(s, alias[i].name)) return (int)alias[i].p;
    return -1;
}

/* ---------------- derived numbers ---------------- */

double pc_chip_flops(const pc_chip *c, pc_prec p) {
    if (!c || (unsigned)p >= PC_PREC_COUNT) return 0;
    double v = c->flops[p];
    if (v > 0) return v;
    if (p == PC_PREC_FP16) return c->flops[PC_PREC_BF16];
    if (p == PC_PREC_BF16) return c->flops[PC_PREC_FP16];
    if (p == PC_PREC_TF32) return c->flops[PC_PREC_FP32];
    return 0;
}

double pc_chip_ici_axis_bw(const pc_chip *c) { return c ? 2.0 * c->ici_link_bw : 0; }

const char *pc_link_name(pc_link l) {
    static const char *const names[PC_LINK_COUNT] = {"HBM", "ICI", "DCN", "NVLink", "IB", "PCIe"};
    return (unsigned)l < PC_LINK_COUNT ? names[l] : "?";
}

double pc_chip_link_bw(const pc_chip *c, pc_link l) {
    if (!c) return 0;
    switch (l) {
    case PC_LINK_HBM: return c->hbm_bw;
    case PC_LINK_ICI: return c->kind == PC_CHIP_TPU ? pc_chip_ici_axis_bw(c) : 0;
    case PC_LINK_DCN: return c->kind == PC_CHIP_TPU ? c->dcn_bw : 0;
    case PC_LINK_NVLINK: return c->kind == PC_CHIP_GPU ? c->nvlink_bw : 0;
    case PC_LINK_IB:
        return c->kind == PC_CHIP_GPU ? c->ib_bw * (c->nvlink_domain > 0 ? c->nvlink_domain : 1)
                                      : 0;
    case PC_LINK_PCIE: return c->pcie_bw;
    default: return 0;
    }
}

double pc_chip_critical_intensity(const pc_chip *c, pc_prec p, pc_link l) {
    double f = pc_chip_flops(c, p), w = pc_chip_link_bw(c, l);
    return f > 0 && w > 0 ? f / w : 0;
}

/* ---------------- validation ---------------- */

/* Rates, sizes and bandwidths: 0 (unknown) or within [1e-9, 1e30]; nonsense
 * such as 1e300 B/s or 1e-300 FLOP/s is refused so every derived time and
 * ratio stays finite. */
static int bad_num(double v) { return !isfinite(v) || v < 0 || v > 1e30 || (v > 0 && v < 1e-9); }

pc_status pc_chip_validate(const pc_chip *c, pc_error *err) {
    if (!c) return pc_fail(err, PC_ERR_ARG, "chip is NULL");
    if (!c->name[0]) return pc_fail(err, PC_ERR_INVALID, "chip: \"name\" is empty");
    const char *n = c->name;
    if (c->kind != PC_CHIP_TPU && c->kind != PC_CHIP_GPU)
        return pc_fail(err, PC_ERR_INVALID, "chip %s: \"kind\" must be \"tpu\" or \"gpu\"", n);
    int any = 0;
    for (int p = 0; p < PC_PREC_COUNT; p++) {
        if (bad_num(c->flops[p]))
            return pc_fail(err, PC_ERR_INVALID,
                           "chip %s: flops.%s must be 0 or a number in [1e-9, 1e30] (FLOP/s)", n,
                           prec_names[p]);
        if (c->flops[p] > 0) any = 1;
    }
    if (!any)
        return pc_fail(err, PC_ERR_INVALID,
                       "chip %s: no FLOP/s given; set e.g. \"flops\": {\"bf16\": 1e15}", n);
    const struct {
        const char *field;
        double v;
    } nums[] = {{"vector_flops", c->vector_flops},
                {"hbm_bytes", c->hbm_bytes},
                {"hbm_bw", c->hbm_bw},
                {"onchip_bytes", c->onchip_bytes},
                {"smem_per_sm", c->smem_per_sm},
                {"ici_link_bw", c->ici_link_bw},
                {"ici_hop_latency", c->ici_hop_latency},
                {"dcn_bw", c->dcn_bw},
                {"dcn_latency", c->dcn_latency},
                {"pcie_bw", c->pcie_bw},
                {"nvlink_bw", c->nvlink_bw},
                {"ib_bw", c->ib_bw},
                {"coll_latency", c->coll_latency},
                {"price_per_hour", c->price_per_hour}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        if (bad_num(nums[i].v))
            return pc_fail(err, PC_ERR_INVALID,
                           "chip %s: \"%s\" must be 0 (unknown) or a number in [1e-9, 1e30]", n,
                           nums[i].field);
    if (!(c->hbm_bw > 0))
        return pc_fail(err, PC_ERR_INVALID, "chip %s: \"hbm_bw\" (HBM bytes/s) must be > 0", n);
    if (c->sms < 0 || c->cores < 0)
        return pc_fail(err, PC_ERR_INVALID, "chip %s: \"sms\"/\"cores\" must be >= 0", n);
    if (c->kind == PC_CHIP_TPU) {
        if (c->torus_dims < 1 || c->torus_dims > 3)
            return pc_fail(err, PC_ERR_INVALID, "chip %s: \"torus_dims\" must be 1, 2 or 3", n);
        for (int d = 0; d < 3; d++)
            if (c->pod_shape[d] < 1 || c->pod_shape[d] > 1 << 20)
                return pc_fail(err, PC_ERR_INVALID,
                               "chip %s: \"pod_shape\" needs 1..3 sizes >= 1 (e.g. [16, 16])", n);
        for (int d = c->torus_dims; d < 3; d++)
            if (c->pod_shape[d] != 1)
                return pc_fail(err, PC_ERR_INVALID,
                               "chip %s: \"pod_shape\" has more axes than \"torus_dims\" %d", n,
                               c->torus_dims);
        if ((unsigned)c->wrap > PC_WRAP_CUBES)
            return pc_fail(err, PC_ERR_INVALID, "chip %s: bad \"wrap\" rule", n);
        if ((c->wrap == PC_WRAP_FULL_AXIS || c->wrap == PC_WRAP_CUBES) && c->wrap_size < 1)
            return pc_fail(err, PC_ERR_INVALID,
                           "chip %s: wrap rule \"%s\" needs \"wrap_size\" >= 1", n,
                           c->wrap == PC_WRAP_CUBES ? "cubes" : "full_axis");
    } else {
        if (c->nvlink_domain < 1)
            return pc_fail(err, PC_ERR_INVALID,
                           "chip %s: \"nvlink_domain\" (GPUs per NVLink domain) must be >= 1", n);
    }
    return PC_OK;
}

/* ---------------- the database ---------------- */

struct pc_chipdb {
    pc_chip *chips;
    int n;
    size_t cap;
};

pc_status pc_chipdb_new(pc_chipdb **out, pc_error *err) {
    *out = NULL;
    pc_chipdb *db = calloc(1, sizeof *db);
    if (!db) return pc_fail(err, PC_ERR_NOMEM, "chip database: out of memory");
    db->cap = NUM_BUILTIN + 8;
    db->chips = malloc(db->cap * sizeof *db->chips);
    if (!db->chips) {
        free(db);
        return pc_fail(err, PC_ERR_NOMEM, "chip database: out of memory");
    }
    memcpy(db->chips, builtin, sizeof builtin);
    db->n = NUM_BUILTIN;
    *out = db;
    return PC_OK;
}

void pc_chipdb_free(pc_chipdb *db) {
    if (!db) return;
    free(db->chips);
    free(db);
}

int pc_chipdb_count(const pc_chipdb *db) { return db ? db->n : 0; }
const pc_chip *pc_chipdb_at(const pc_chipdb *db, int i) {
    return db && i >= 0 && i < db->n ? &db->chips[i] : NULL;
}

/* Lower case, separators dropped, "nvidia"/"tpu" prefixes and "sxm<digits>"
 * suffix dropped: "TPU-v5e" -> "v5e", "tpu7x" -> "7x", "H100-SXM5" -> "h100". */
static void normalize(const char *in, char *out, size_t cap) {
    size_t n = 0;
    for (; *in && n + 1 < cap; in++) {
        unsigned char ch = (unsigned char)*in;
        if (ch == '-' || ch == '_' || ch == ' ' || ch == '.') continue;
        out[n++] = (char)tolower(ch);
    }
    out[n] = '\0';
    const char *prefixes[] = {"nvidia", "tpu", "google"};
    for (size_t i = 0; i < 3; i++) {
        size_t l = strlen(prefixes[i]);
        if (strncmp(out, prefixes[i], l) == 0 && out[l]) memmove(out, out + l, strlen(out + l) + 1);
    }
    char *sxm = strstr(out, "sxm");
    if (sxm && sxm != out) {
        const char *q = sxm + 3;
        while (isdigit((unsigned char)*q)) q++;
        if (!*q) *sxm = '\0';
    }
}

static const struct {
    const char *alias, *name;
} aliases[] = {{"v5litepod", "v5e"},    {"v5lite", "v5e"}, {"v4p", "v4"},
               {"trillium", "v6e"},     {"v6", "v6e"},     {"ironwood", "tpu7x"},
               {"v7", "tpu7x"},         {"v7x", "tpu7x"},  {"gb200", "gb200-nvl72"},
               {"nvl72", "gb200-nvl72"}};

static int find_index(const pc_chipdb *db, const char *name) {
    char want[64], have[64];
    normalize(name, want, sizeof want);
    if (!want[0]) return -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < db->n; i++) {
            normalize(db->chips[i].name, have, sizeof have);
            if (strcmp(want, have) == 0) return i;
        }
        /* second pass: an alias of a built-in name */
        int hit = 0;
        for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++) {
            normalize(aliases[a].alias, have, sizeof have);
            if (strcmp(want, have) == 0) {
                normalize(aliases[a].name, want, sizeof want);
                hit = 1;
                break;
            }
        }
        if (!hit) break;
    }
    return -1;
}

const pc_chip *pc_chipdb_find(const pc_chipdb *db, const char *name) {
    if (!db || !name) return NULL;
    int i = find_index(db, name);
    return i >= 0 ? &db->chips[i] : NULL;
}

void pc_chipdb_names(const pc_chipdb *db, char *buf, size_t cap) {
    size_t used = 0;
    if (cap) buf[0] = '\0';
    for (int i = 0; db && i < db->n && cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", db->chips[i].name);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
}

/* ---------------- JSON ---------------- */

typedef struct num_field {
    const char *key;
    size_t off;
    int is_int;
} num_field;

static const num_field num_fields[] = {
    {"vector_flops", offsetof(pc_chip, vector_flops), 0},
    {"hbm_bytes", offsetof(pc_chip, hbm_bytes), 0},
    {"hbm_bw", offsetof(pc_chip, hbm_bw), 0},
    {"onchip_bytes", offsetof(pc_chip, onchip_bytes), 0},
    {"smem_per_sm", offsetof(pc_chip, smem_per_sm), 0},
    {"sms", offsetof(pc_chip, sms), 1},
    {"cores", offsetof(pc_chip, cores), 1},
    {"torus_dims", offsetof(pc_chip, torus_dims), 1},
    {"wrap_size", offsetof(pc_chip, wrap_size), 1},
    {"ici_link_bw", offsetof(pc_chip, ici_link_bw), 0},
    {"ici_hop_latency", offsetof(pc_chip, ici_hop_latency), 0},
    {"dcn_bw", offsetof(pc_chip, dcn_bw), 0},
    {"dcn_latency", offsetof(pc_chip, dcn_latency), 0},
    {"pcie_bw", offsetof(pc_chip, pcie_bw), 0},
    {"nvlink_bw", offsetof(pc_chip, nvlink_bw), 0},
    {"nvlink_domain", offsetof(pc_chip, nvlink_domain), 1},
    {"ib_bw", offsetof(pc_chip, ib_bw), 0},
    {"coll_latency", offsetof(pc_chip, coll_latency), 0},
    {"price_per_hour", offsetof(pc_chip, price_per_hour), 0},
};

static const char *const wrap_names[] = {"never", "always", "full_axis", "cubes"};

static pc_status json_number(const cJSON *it, const char *what, const char *origin,
                             const char *chip, double *out, pc_error *err) {
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0)
        return pc_fail(err, PC_ERR_INVALID, "%s: chip %s: \"%s\" must be a number >= 0", origin,
                       chip, what);
    *out = it->valuedouble;
    return PC_OK;
}

static pc_status chip_from_json(pc_chipdb *db, const cJSON *o, const char *origin, int idx,
                                pc_error *err) {
    if (!cJSON_IsObject(o))
        return pc_fail(err, PC_ERR_FORMAT, "%s: chips[%d] must be an object", origin, idx);
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsString(jn) || !jn->valuestring[0])
        return pc_fail(err, PC_ERR_INVALID, "%s: chips[%d] needs a \"name\" string", origin, idx);
    const char *name = jn->valuestring;
    if (strlen(name) >= PC_CHIP_NAME_MAX)
        return pc_fail(err, PC_ERR_INVALID, "%s: chip name \"%.40s...\" is longer than %d bytes",
                       origin, name, PC_CHIP_NAME_MAX - 1);
    int name_ok = isalnum((unsigned char)name[0]);
    for (const char *q = name; *q && name_ok; q++)
        name_ok = isalnum((unsigned char)*q) || *q == '-' || *q == '_' || *q == '.';
    if (!name_ok)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: chip name \"%.40s\": use letters, digits, '-', '_' and '.', starting "
                       "with a letter or digit",
                       origin, name);
    pc_chip c;
    int existing = find_index(db, name);
    const cJSON *jb = cJSON_GetObjectItemCaseSensitive(o, "base");
    if (jb) {
        if (!cJSON_IsString(jb))
            return pc_fail(err, PC_ERR_INVALID, "%s: chip %s: \"base\" must be a chip name", origin,
                           name);
        int b = find_index(db, jb->valuestring);
        if (b < 0) {
            char names[512];
            pc_chipdb_names(db, names, sizeof names);
            return pc_fail(err, PC_ERR_NOTFOUND,
                           "%s: chip %s: unknown \"base\" chip \"%s\" (known: %s)", origin, name,
                           jb->valuestring, names);
        }
        c = db->chips[b];
        snprintf(c.source, sizeof c.source, "%s (from %s), based on %s", name, origin,
                 db->chips[b].name);
        c.full_name[0] = '\0';
    } else if (existing >= 0) {
        c = db->chips[existing];
        size_t l = strlen(c.source);
        snprintf(c.source + l, sizeof c.source - l, "; overridden by %s", origin);
    } else {
        memset(&c, 0, sizeof c);
        c.wrap = PC_WRAP_NEVER;
        c.ici_hop_latency = ICI_HOP_LATENCY;
        c.dcn_latency = DCN_LATENCY;
        c.coll_latency = NCCL_LATENCY;
        c.nvlink_domain = 1;
        c.pod_shape[0] = c.pod_shape[1] = c.pod_shape[2] = 1;
        c.torus_dims = 1;
        snprintf(c.source, sizeof c.source, "user-defined (%s)", origin);
    }
    snprintf(c.name, sizeof c.name, "%s", name);
    if (!c.full_name[0]) snprintf(c.full_name, sizeof c.full_name, "%s", name);

    const cJSON *axis_bw = NULL;
    for (const cJSON *it = o->child; it; it = it->next) {
        const char *k = it->string ? it->string : "";
        if (!strcmp(k, "name") || !strcmp(k, "base")) continue;
        /* derived values a chip's JSON may carry (perfcast chips --json writes
         * them): critical_intensity is recomputed; ici_axis_bw must agree */
        if (!strcmp(k, "critical_intensity")) continue;
        if (!strcmp(k, "ici_axis_bw")) {
            axis_bw = it;
            continue;
        }
        if (!strcmp(k, "full_name") || !strcmp(k, "source")) {
            if (!cJSON_IsString(it))
                return pc_fail(err, PC_ERR_INVALID, "%s: chip %s: \"%s\" must be a string", origin,
                               name, k);
            if (!strcmp(k, "full_name"))
                snprintf(c.full_name, sizeof c.full_name, "%s", it->valuestring);
            else
                snprintf(c.source, sizeof c.source, "%s", it->valuestring);
            continue;
        }
        if (!strcmp(k, "kind")) {
            if (cJSON_IsString(it) && pc_ascii_ieq(it->valuestring, "tpu"))
                c.kind = PC_CHIP_TPU;
            else if (cJSON_IsString(it) && pc_ascii_ieq(it->valuestring, "gpu"))
                c.kind = PC_CHIP_GPU;
            else
                return pc_fail(err, PC_ERR_INVALID,
                               "%s: chip %s: \"kind\" must be \"tpu\" or \"gpu\"", origin, name);
            continue;
        }
        if (!strcmp(k, "wrap")) {
            int w = -1;
            for (int i = 0; i < 4 && cJSON_IsString(it); i++)
                if (pc_ascii_ieq(it->valuestring, wrap_names[i])) w = i;
            if (w < 0)
                return pc_fail(
                    err, PC_ERR_INVALID,
                    "%s: chip %s: \"wrap\" must be one of never, always, full_axis, cubes", origin,
                    name);
            c.wrap = (pc_wrap_rule)w;
            continue;
        }
        if (!strcmp(k, "flops")) {
            if (!cJSON_IsObject(it))
                return pc_fail(err, PC_ERR_INVALID,
                               "%s: chip %s: \"flops\" must be an object like {\"bf16\": 1.97e14}",
                               origin, name);
            for (const cJSON *f = it->child; f; f = f->next) {
                int p = pc_prec_parse(f->string);
                if (p < 0)
                    return pc_fail(err, PC_ERR_INVALID,
                                   "%s: chip %s: flops.\"%s\": unknown precision (use fp32, tf32, "
                                   "bf16, fp16, fp8, int8, int4, fp4)",
                                   origin, name, f->string ? f->string : "");
                char what[48];
                snprintf(what, sizeof what, "flops.%s", prec_names[p]);
                pc_status st = json_number(f, what, origin, name, &c.flops[p], err);
                if (st) return st;
            }
            continue;
        }
        if (!strcmp(k, "pod_shape")) {
            int nd = cJSON_GetArraySize(it);
            if (!cJSON_IsArray(it) || nd < 1 || nd > 3)
                return pc_fail(err, PC_ERR_INVALID,
                               "%s: chip %s: \"pod_shape\" must be an array of 1 to 3 sizes",
                               origin, name);
            int shape[3] = {1, 1, 1};
            for (int d = 0; d < nd; d++) {
                const cJSON *v = cJSON_GetArrayItem(it, d);
                if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1 << 20 ||
                    v->valuedouble != floor(v->valuedouble))
                    return pc_fail(err, PC_ERR_INVALID,
                                   "%s: chip %s: \"pod_shape\" sizes must be integers >= 1", origin,
                                   name);
                shape[d] = (int)v->valuedouble;
            }
            memcpy(c.pod_shape, shape, sizeof shape);
            if (!cJSON_GetObjectItemCaseSensitive(o, "torus_dims")) c.torus_dims = nd;
            continue;
        }
        const num_field *nf = NULL;
        for (size_t i = 0; i < sizeof num_fields / sizeof num_fields[0]; i++)
            if (!strcmp(k, num_fields[i].key)) nf = &num_fields[i];
        if (!nf)
            return pc_fail(err, PC_ERR_INVALID,
                           "%s: chip %s: unknown field \"%s\" (see docs/analytic.md for the "
                           "fields)",
                           origin, name, k);
        double v = 0;
        pc_status st = json_number(it, k, origin, name, &v, err);
        if (st) return st;
        if (nf->is_int) {
            if (v != floor(v) || v > 1 << 30)
                return pc_fail(err, PC_ERR_INVALID, "%s: chip %s: \"%s\" must be an integer",
                               origin, name, k);
            int iv = (int)v; /* memcpy: the field is reached by byte offset */
            memcpy((char *)&c + nf->off, &iv, sizeof iv);
        } else {
            memcpy((char *)&c + nf->off, &v, sizeof v);
        }
    }
    if (axis_bw && (!cJSON_IsNumber(axis_bw) ||
                    fabs(axis_bw->valuedouble - 2.0 * c.ici_link_bw) >
                        1e-9 * fmax(1.0, fabs(axis_bw->valuedouble))))
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: chip %s: \"ici_axis_bw\" is derived (2 x ici_link_bw = %g); set "
                       "\"ici_link_bw\" instead",
                       origin, name, 2.0 * c.ici_link_bw);
    pc_status st = pc_chip_validate(&c, err);
    if (st) {
        pc_error_prefix(err, "%s", origin);
        return st;
    }
    if (existing >= 0 && !jb) {
        db->chips[existing] = c;
        return PC_OK;
    }
    if (existing >= 0)
        return pc_fail(
            err, PC_ERR_INVALID,
            "%s: chip %s already exists; drop \"base\" to override it or pick another name", origin,
            name);
    if ((size_t)db->n == db->cap) {
        if (db->cap > 1 << 16) return pc_fail(err, PC_ERR_RANGE, "%s: too many chips", origin);
        pc_chip *grown = pc_grow_array(db->chips, &db->cap, db->cap + 1, sizeof *grown);
        if (!grown) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", origin);
        db->chips = grown;
    }
    db->chips[db->n++] = c;
    return PC_OK;
}

pc_status pc_chipdb_load_json(pc_chipdb *db, const char *text, size_t len, const char *origin,
                              pc_error *err) {
    if (!db || (!text && len)) return pc_fail(err, PC_ERR_ARG, "pc_chipdb_load_json: NULL");
    if (!origin) origin = "chips JSON";
    cJSON *root = cJSON_ParseWithLength(text ? text : "", len);
    if (!root)
        return pc_fail(err, PC_ERR_FORMAT,
                       "%s: not valid JSON (expected {\"chips\": [{\"name\": ..., ...}]})", origin);
    const cJSON *list = root;
    if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "chips"))
        list = cJSON_GetObjectItemCaseSensitive(root, "chips");
    pc_status st = PC_OK;
    /* all-or-nothing: work on a copy */
    pc_chipdb tmp = {NULL, db->n, db->cap};
    tmp.chips = malloc(db->cap * sizeof *tmp.chips);
    if (!tmp.chips) {
        cJSON_Delete(root);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", origin);
    }
    memcpy(tmp.chips, db->chips, (size_t)db->n * sizeof *tmp.chips);
    if (cJSON_IsArray(list)) {
        int i = 0;
        for (const cJSON *it = list->child; it && st == PC_OK; it = it->next, i++)
            st = chip_from_json(&tmp, it, origin, i, err);
    } else if (cJSON_IsObject(list) && list == root) {
        st = chip_from_json(&tmp, list, origin, 0, err);
    } else {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: \"chips\" must be an array of chip objects", origin);
    }
    cJSON_Delete(root);
    if (st) {
        free(tmp.chips);
        return st;
    }
    free(db->chips);
    *db = tmp;
    return PC_OK;
}

pc_status pc_chipdb_load_file(pc_chipdb *db, const char *path, pc_error *err) {
    char *text = NULL;
    size_t len = 0;
    pc_status st = pc_read_file(path, 16u << 20, &text, &len, err);
    if (st) return st;
    st = pc_chipdb_load_json(db, text, len, path, err);
    free(text);
    return st;
}
