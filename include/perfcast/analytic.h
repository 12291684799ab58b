/*
 * perfcast analytic: a closed-form performance model of accelerators and
 * transformers, after "How to Scale Your Model" (the jax-ml scaling book; see
 * docs/analytic.md for every formula, constant and assumption).
 *
 *  - chips:       a built-in database of TPUs and GPUs (FLOP/s per precision,
 *                 HBM, on-chip memory, ICI / NVLink / InfiniBand / DCN), with
 *                 user-defined or overridden chips from JSON;
 *  - roofline:    compute / memory / communication time of one op, from its
 *                 (FLOPs, bytes, comm bytes) — the plug-in point for HLO —
 *                 or from a simple op description (matmul, elementwise, ...);
 *  - collectives: AllGather, ReduceScatter, AllReduce, AllToAll over mesh axes
 *                 of a TPU torus (wraparound or not, latency-bound regime),
 *                 NVLink domains, InfiniBand and DCN;
 *  - transformer: parameters, FLOPs, training memory (rematerialization
 *                 policies) and KV cache of a model read from a Hugging Face
 *                 config.json, a preset, or given field by field.
 *
 * Every evaluation function (pc_roofline_eval, pc_op_cost, pc_collective_cost,
 * pc_tfm_params, pc_tfm_flops, pc_tfm_memory, ...) is pure: no
 * allocation, no I/O, no global state, safe to call from many threads and
 * millions of times in a planner's search loop. Only loaders (chip JSON, op
 * files, HF configs) allocate.
 *
 * Units: seconds, bytes, FLOP/s (OP/s for integer types), bytes/s. Sizes that
 * come from the book's tables are decimal (GB = 1e9).
 */
#ifndef PERFCAST_ANALYTIC_H
#define PERFCAST_ANALYTIC_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/perfcast.h"

/* Declared only under PC_STATIC_LINKING_ONLY: see "Structs across versions" in
   perfcast/perfcast.h (this API's structs are not versioned). */
#if defined(PC_STATIC_LINKING_ONLY)

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Numeric precisions                                                  */
/* ------------------------------------------------------------------ */

typedef enum pc_prec {
    PC_PREC_FP32 = 0,
    PC_PREC_TF32, /* NVIDIA tensor-core fp32 input; stored as 4 bytes */
    PC_PREC_BF16,
    PC_PREC_FP16,
    PC_PREC_FP8,
    PC_PREC_INT8,
    PC_PREC_INT4,
    PC_PREC_FP4,
    PC_PREC_COUNT
} pc_prec;

/* "fp32", "bf16", ...; parse accepts also float32/f32, bfloat16, float16/half,
 * e4m3/e5m2/float8 (-> fp8), int8/i8, int4, fp4. -1 if unknown. */
PC_API const char *pc_prec_name(pc_prec p);
PC_API int pc_prec_parse(const char *s);
/* Bytes per element (int4/fp4: 0.5). */
PC_API double pc_prec_bytes(pc_prec p);

/* ------------------------------------------------------------------ */
/* Chips                                                               */
/* ------------------------------------------------------------------ */

typedef enum pc_chip_kind { PC_CHIP_TPU = 0, PC_CHIP_GPU = 1 } pc_chip_kind;

/* Which ICI torus axes have wraparound links (scaling_book.md §1). */
typedef enum pc_wrap_rule {
    PC_WRAP_NEVER = 0, /* no wraparound links */
    PC_WRAP_ALWAYS,    /* every axis wraps */
    PC_WRAP_FULL_AXIS, /* an axis wraps only if its size is wrap_size (v5e/v6e: 16) */
    PC_WRAP_CUBES      /* all axes wrap iff every axis is a multiple of wrap_size
                          (v4/v5p: whole 4x4x4 cubes; 2x2x1, 2x2x4 have none) */
} pc_wrap_rule;

#define PC_CHIP_NAME_MAX 32

typedef struct pc_chip {
    char name[PC_CHIP_NAME_MAX]; /* lookup key, lower case: "v5e", "h100" */
    char full_name[64];          /* "TPU v5e", "NVIDIA H100 SXM" */
    pc_chip_kind kind;
    /* Dense peak per precision (no structured sparsity), FLOP/s or OP/s;
     * 0 = not supported or not known. Use pc_chip_flops() for fallbacks. */
    double flops[PC_PREC_COUNT];
    double vector_flops; /* TPU VPU / GPU CUDA cores, fp32 ops/s (no FMA); 0 = unknown */
    double hbm_bytes;    /* HBM capacity */
    double hbm_bw;       /* HBM bandwidth, B/s */
    double onchip_bytes; /* TPU: VMEM; GPU: L2 */
    double smem_per_sm;  /* GPU shared memory per SM, bytes */
    int sms;             /* GPU streaming multiprocessors */
    int cores;           /* TPU TensorCores per chip */
    /* TPU inter-chip interconnect */
    int torus_dims;   /* 2 or 3 (0 for GPUs) */
    int pod_shape[3]; /* largest slice, e.g. 16x20x28 */
    pc_wrap_rule wrap;
    int wrap_size;
    double ici_link_bw;     /* per link, one way, B/s (bidirectional = 2x) */
    double ici_hop_latency; /* per hop, s */
    double dcn_bw;          /* TPU: egress per chip between slices, B/s */
    double dcn_latency;     /* TPU: DCN; GPU: InfiniBand; per collective, s */
    double pcie_bw;         /* host <-> chip, B/s */
    /* GPU interconnect */
    double nvlink_bw;      /* per GPU, each way, B/s */
    int nvlink_domain;     /* GPUs per NVLink domain (node or NVL72 rack) */
    double ib_bw;          /* scale-out (InfiniBand) per GPU, each way, B/s */
    double coll_latency;   /* GPU: per collective within the NVLink domain, s */
    double price_per_hour; /* USD per chip-hour; 0 = unknown */
    char source[400];      /* where each number comes from */
} pc_chip;

/* Peak FLOP/s for a precision, with documented fallbacks: fp16 <-> bf16 when
 * only one is given; tf32 -> fp32 when tf32 unknown. 0 if still unknown. */
PC_API double pc_chip_flops(const pc_chip *c, pc_prec p);
/* The book's W_ici: bidirectional bandwidth of one torus axis = 2 * ici_link_bw. */
PC_API double pc_chip_ici_axis_bw(const pc_chip *c);

typedef enum pc_link {
    PC_LINK_HBM = 0, /* HBM bandwidth */
    PC_LINK_ICI,     /* TPU: one torus axis, bidirectional (the book's W_ici) */
    PC_LINK_DCN,     /* TPU: per-chip DCN egress */
    PC_LINK_NVLINK,  /* GPU: per-GPU NVLink egress */
    PC_LINK_IB,      /* GPU: node egress = nvlink_domain * ib_bw (book: 400e9 per H100 node) */
    PC_LINK_PCIE,
    PC_LINK_COUNT
} pc_link;
PC_API const char *pc_link_name(pc_link l);
/* Bandwidth of a link class on this chip, B/s (0 if the chip has none). */
PC_API double pc_chip_link_bw(const pc_chip *c, pc_link l);
/* Peak FLOP/s over the link's bandwidth (FLOPs per byte): the arithmetic
 * intensity above which an op is compute-bound (scaling_book.md §2, §5).
 * 0 if either number is unknown. */
PC_API double pc_chip_critical_intensity(const pc_chip *c, pc_prec p, pc_link l);

/* Checks the numbers of a chip (finite, non-negative, required fields set). */
PC_API pc_status pc_chip_validate(const pc_chip *c, pc_error *err);

/* Number of built-in chips and the i-th (static storage). */
PC_API int pc_chip_builtin_count(void);
PC_API const pc_chip *pc_chip_builtin(int i);

/* A chip database: the built-ins plus chips from JSON files. */
typedef struct pc_chipdb pc_chipdb;

PC_API pc_status pc_chipdb_new(pc_chipdb **out, pc_error *err);
PC_API void pc_chipdb_free(pc_chipdb *db);
/*
 * Adds or overrides chips from JSON: {"chips": [ {...}, ... ]}, a bare array,
 * or one object. Each object has "name" and any pc_chip field by its C name
 * ("hbm_bw", "ici_link_bw", "price_per_hour", ...); "flops" is an object by
 * precision name ({"bf16": 1.97e14}); "pod_shape" an array; "wrap" one of
 * "never", "always", "full_axis", "cubes"; "kind" "tpu" or "gpu". A name that
 * exists already overrides that chip (its other fields kept); "base": "v5e"
 * starts a new chip as a copy. Unknown fields are errors. `origin` names the
 * source in messages.
 */
PC_API pc_status pc_chipdb_load_json(pc_chipdb *db, const char *text, size_t len,
                                     const char *origin, pc_error *err);
PC_API pc_status pc_chipdb_load_file(pc_chipdb *db, const char *path, pc_error *err);
PC_API int pc_chipdb_count(const pc_chipdb *db);
PC_API const pc_chip *pc_chipdb_at(const pc_chipdb *db, int i);
/* Case-insensitive; accepts aliases ("tpu-v5e", "v5litepod", "v4p", "trillium",
 * "ironwood", "h100-sxm", "nvidia-a100"...). NULL if unknown. */
PC_API const pc_chip *pc_chipdb_find(const pc_chipdb *db, const char *name);
/* Comma-separated list of the database's names, for "unknown chip" messages. */
PC_API void pc_chipdb_names(const pc_chipdb *db, char *buf, size_t cap);

/* ------------------------------------------------------------------ */
/* Roofline                                                            */
/* ------------------------------------------------------------------ */

/* What one op costs; fill it from any source (an HLO instruction, a fusion,
 * pc_op_cost). This is the plug-in point for HLO import. */
typedef struct pc_cost {
    double flops;      /* floating-point (or integer) operations */
    double bytes;      /* HBM bytes read + written */
    double comm_bytes; /* bytes this chip sends over the interconnect (0: none) */
    pc_prec prec;      /* compute precision: selects the peak rate */
    int vector;        /* 1: runs on vector units (TPU VPU / CUDA cores), not the MXU */
} pc_cost;

typedef enum pc_bound { PC_BOUND_COMPUTE = 0, PC_BOUND_MEMORY, PC_BOUND_COMM } pc_bound;
PC_API const char *pc_bound_name(pc_bound b);

typedef struct pc_roofline {
    double peak_flops;         /* rate used for this op */
    double hbm_bw, comm_bw;    /* bandwidths used */
    double intensity;          /* flops / bytes (0 if bytes == 0) */
    double critical_intensity; /* peak_flops / hbm_bw */
    double t_compute, t_memory, t_comm;
    double time;       /* max of the three: perfect overlap (the book's lower bound) */
    double time_upper; /* sum of the three: no overlap (upper bound) */
    pc_bound bound;    /* which term is the max */
} pc_roofline;

/*
 * Roofline time of one op on one chip (scaling_book.md §2): T_math =
 * flops/peak, T_hbm = bytes/hbm_bw, T_comm = comm_bytes/comm_bw. comm_bw <= 0
 * means the chip's default link (TPU: one ICI axis bidirectional; GPU:
 * NVLink). Vector ops use vector_flops when known, else the precision's rate.
 * Fails (PC_ERR_UNSUPPORTED) when the chip has no rate for the precision.
 */
PC_API pc_status pc_roofline_eval(const pc_chip *chip, const pc_cost *cost, double comm_bw,
                                  pc_roofline *out, pc_error *err);

/* Simple op descriptions. */
typedef enum pc_op_kind {
    PC_OP_MATMUL = 0,  /* [batch x] [m,k] @ [k,n] */
    PC_OP_ELEMENTWISE, /* `inputs` tensors of `elems` -> one output */
    PC_OP_REDUCE,      /* elems -> elems / reduce_size */
    PC_OP_TRANSPOSE,   /* read + write elems */
    PC_OP_GATHER,      /* `indices` rows of width `width` from a [rows, width] table */
    PC_OP_CONV,        /* NHWC 2-D convolution, 'same' padding */
    PC_OP_RAW,         /* flops / bytes given (e.g. from HLO) */
    PC_OP_KIND_COUNT
} pc_op_kind;
PC_API const char *pc_op_kind_name(pc_op_kind k);

typedef struct pc_op {
    char name[48];
    pc_op_kind kind;
    pc_prec prec;  /* activations and compute */
    pc_prec wprec; /* matmul/conv second operand, gather table (weights) */
    double count;  /* the op repeats this many times (e.g. layers); default 1 */
    /* matmul */
    double batch, m, k, n;
    /* elementwise / reduce / transpose */
    double elems, inputs, flops_per_elem, reduce_size;
    /* gather */
    double rows, width, indices;
    /* conv: input [batch, h, w, cin], kernel [kh, kw, cin, cout], stride */
    double h, w, cin, cout, kh, kw, stride;
    /* raw */
    double flops, bytes;
    double comm_bytes; /* any kind: bytes sent over the interconnect */
} pc_op;

/* A zeroed op of a kind with defaults (bf16, count 1, inputs 2, ...). */
PC_API pc_op pc_op_init(pc_op_kind kind);
/* FLOPs and bytes of one op, times its count (docs/analytic.md lists the
 * formulas). Fails on missing or non-positive sizes. */
PC_API pc_status pc_op_cost(const pc_op *op, pc_cost *out, pc_error *err);

/*
 * Op descriptions, one per line: a kind then key=value fields, '#' comments:
 *   matmul m=8192 k=4096 n=14336 dtype=bf16 name=ffn_in     (also B= D= F=,
 *          shape=MxKxN or BATCHxMxKxN, batch=, wdtype=int8)
 *   elementwise shape=8192x4096 inputs=2 flops=1
 *   reduce shape=8192x4096 axis=1        (or reduce=4096)
 *   transpose shape=4096x4096
 *   gather table=128256x4096 indices=8192
 *   conv input=32x56x56x64 kernel=3x3 out=64 stride=1
 *   raw flops=1e12 bytes=4e9
 * Common keys: name, dtype, wdtype, count, comm (bytes). Or JSON: an array of
 * objects (or {"ops": [...]}) with the same keys, "kind" naming the kind and
 * shapes as arrays of numbers.
 */
PC_API pc_status pc_op_parse_line(const char *line, pc_op *out, pc_error *err);
PC_API pc_status pc_ops_parse(const char *text, size_t len, const char *origin, pc_op **ops,
                              size_t *n, pc_error *err);
PC_API pc_status pc_ops_load(const char *path, pc_op **ops, size_t *n, pc_error *err);
PC_API void pc_ops_free(pc_op *ops);

/* ------------------------------------------------------------------ */
/* Collectives                                                         */
/* ------------------------------------------------------------------ */

typedef enum pc_coll {
    PC_COLL_ALLGATHER = 0,
    PC_COLL_REDUCESCATTER,
    PC_COLL_ALLREDUCE,
    PC_COLL_ALLTOALL,
    PC_COLL_PERMUTE, /* collective-permute / send-recv: each device sends V to a neighbour */
    PC_COLL_COUNT
} pc_coll;
PC_API const char *pc_coll_name(pc_coll c);
/* "allgather", "all-gather", "ag", ...; "permute", "collective-permute",
 * "p2p", "sendrecv"/"send-recv"; -1 if unknown */
PC_API int pc_coll_parse(const char *s);

/* How AllGather / ReduceScatter / AllReduce (and AllToAll on GPUs, DCN
 * levels) are priced (docs/analytic.md "Collectives"):
 *  - PC_CONV_EXACT (default): the ring's exact bytes, V (n-1)/n per level;
 *  - PC_CONV_BOOK: the book's answers (scaling_book.md §3, §5): V / W_ici per
 *    axis (V / (W_ici N_axes) over several), X/2 hops, V / W_dcn per chip
 *    over DCN, V / W on GPUs; the serving planner also leaves out the decode
 *    TP AllReduces as the book's §7 formula does. 25% apart at n = 4. */
typedef enum pc_coll_conv { PC_CONV_EXACT = 0, PC_CONV_BOOK = 1 } pc_coll_conv;
PC_API const char *pc_coll_conv_name(pc_coll_conv c); /* "exact", "book" */

#define PC_MESH_MAX_AXES 8

/*
 * A device mesh. TPU: the axes not in dcn_mask are the physical torus axes of
 * one slice, in order (a 2-axis mesh on a 3-D torus is AxBx1); axes in
 * dcn_mask join slices over the data-center network. GPU: devices are
 * numbered row-major (last axis fastest) and consecutive blocks of
 * nvlink_domain devices share an NVLink domain; the rest is InfiniBand.
 */
typedef struct pc_mesh {
    int ndims;
    int64_t size[PC_MESH_MAX_AXES];
    unsigned dcn_mask;                  /* bit i: axis i crosses slices (TPU) */
    signed char wrap[PC_MESH_MAX_AXES]; /* -1 auto (chip rule), 0 no, 1 yes */
} pc_mesh;

/* "16x16", "4x4x8", "8" -> mesh with wrap auto and no DCN axes. */
PC_API pc_status pc_mesh_parse(const char *text, pc_mesh *out, pc_error *err);
PC_API int64_t pc_mesh_devices(const pc_mesh *m);
/*
 * Checks a mesh against a chip (TPU: ICI axes <= torus dims, slice fits the
 * pod, DCN only on TPUs) and resolves wrap[] of every axis (-1 -> 0/1 by the
 * chip's rule; DCN axes 0). Call once per mesh before pc_collective_cost.
 */
PC_API pc_status pc_mesh_check(const pc_chip *chip, pc_mesh *mesh, pc_error *err);

typedef struct pc_coll_cost {
    double time;            /* max(bandwidth, latency) per level, summed over levels */
    double bw_time;         /* bandwidth term */
    double latency_time;    /* latency term (hops x per-hop latency, or per-call) */
    int latency_bound;      /* latency term is the larger */
    int64_t participants;   /* devices in one group */
    double shard_bytes;     /* bytes / participants: each device's shard */
    double algbw;           /* bytes / time */
    int ici_axes, dcn_axes; /* TPU: axes used */
    int64_t nodes;          /* GPU: NVLink domains a group spans */
    const char *network;    /* "ICI", "ICI+DCN", "DCN", "NVLink", "NVLink+IB", "IB", "none" */
} pc_coll_cost;

/*
 * Time of one collective over the mesh axes in axes_mask (bit i = axis i), on
 * `bytes` = V, the full array in the book's sense (scaling_book.md §3):
 * AllGather: the gathered output on each device; ReduceScatter: the unreduced
 * input on each device; AllReduce: the array on each device; AllToAll: the
 * whole array, each device holding bytes/participants; Permute: the bytes
 * each device sends to its neighbour (one link one way: ICI, or DCN when the
 * group spans slices; NVLink, or InfiniBand when it spans NVLink domains;
 * time = V / link + latency). The mesh must have passed pc_mesh_check.
 * Formulas in docs/analytic.md. pc_collective_cost is the exact convention.
 */
PC_API pc_status pc_collective_cost(const pc_chip *chip, const pc_mesh *mesh, unsigned axes_mask,
                                    pc_coll op, double bytes, pc_coll_cost *out, pc_error *err);
PC_API pc_status pc_collective_cost_conv(const pc_chip *chip, const pc_mesh *mesh,
                                         unsigned axes_mask, pc_coll op, double bytes,
                                         pc_coll_conv conv, pc_coll_cost *out, pc_error *err);

/* pc_parse_bytes, pc_parse_count: perfcast/perfcast.h ("Units"). */

/* ------------------------------------------------------------------ */
/* Transformer math                                                    */
/* ------------------------------------------------------------------ */

typedef struct pc_tfm_cfg {
    char name[64];
    char arch[32];       /* HF model_type: llama, mistral, mixtral, qwen2, gemma, gpt2, ... */
    int64_t layers;      /* L */
    int64_t d_model;     /* D */
    int64_t d_ff;        /* F: dense MLP width */
    int64_t heads;       /* N: query heads */
    int64_t kv_heads;    /* K: 0 -> heads (MHA); 1 = MQA */
    int64_t head_dim;    /* H: 0 -> d_model / heads */
    int64_t vocab;       /* V */
    int64_t positions;   /* learned absolute position embeddings (gpt2), else 0 */
    int tied;            /* unembedding shares the embedding matrix */
    int gated;           /* gated MLP (SwiGLU/GeGLU): 3 matrices, else 2 */
    int layernorm;       /* LayerNorm with bias (2 vectors) instead of RMSNorm (1) */
    int norms_per_layer; /* 0 -> 2 (pre-attention, pre-MLP); gemma2/3: 4 */
    int qkv_bias, o_bias, mlp_bias;
    int qk_norm; /* per-head RMSNorm on q and k (qwen3, gemma3): 2*H per layer */
    /* Mixture of experts (experts == 0: dense) */
    int64_t experts;           /* E routed experts */
    int64_t experts_per_token; /* k */
    int64_t d_ff_expert;       /* 0 -> d_ff */
    int64_t shared_experts;    /* always-active experts */
    int64_t d_ff_shared;       /* width of one shared expert; 0 -> d_ff_expert */
    int shared_expert_gate;    /* qwen2-moe: a [D,1] sigmoid gate on the shared expert */
    int router_bias;           /* a bias per expert on the router (gpt_oss; deepseek_v3's
                                  e_score_correction_bias) */
    /* Which layers are MoE (experts > 0). Layer i (0-based) is MoE iff
     * i >= dense_layers and (i + 1) % moe_every == 0; the others are dense
     * with width d_ff (llama4: intermediate_size_mlp). */
    int64_t dense_layers; /* first_k_dense_replace: leading dense layers (deepseek) */
    int64_t moe_every;    /* interleave_moe_layer_step (llama4) / decoder_sparse_step
                             (qwen*_moe); 0 -> 1 (every layer) */
    int64_t moe_layers;   /* layers with experts; 0 -> counted from the two above by
                             pc_tfm_check (a config's mlp_only_layers sets it directly) */
    int64_t mtp_layers;   /* num_nextn_predict_layers (deepseek_v3): multi-token-prediction
                             modules, each one block (an MoE layer) + eh_proj [2D, D] + 3
                             norms, sharing the embedding and output head; in total params,
                             not in active/matmul_active (see pc_param_counts.mtp) */
    /* Multi-head latent attention (deepseek_v2/v3, kimi_k2): on when kv_lora_rank > 0.
     * Per layer: q = [D, q_lora_rank] -> norm -> [q_lora_rank, N (nope + rope)]
     * (or [D, N (nope + rope)] when q_lora_rank = 0); kv_a = [D, kv_lora_rank +
     * rope] -> norm -> kv_b = [kv_lora_rank, N (nope + v)]; o = [N v, D]. The KV
     * cache holds kv_lora_rank + rope values per token per layer. head_dim is
     * set to nope + rope (the score width). */
    int64_t q_lora_rank;
    int64_t kv_lora_rank;
    int64_t qk_nope_head_dim;
    int64_t qk_rope_head_dim;
    int64_t v_head_dim;
    /* Local attention. Local layers attend the last sliding_window tokens
     * (sliding window) or, with attn_chunk, the tokens of their own chunk of
     * attn_chunk tokens (llama4 chunked attention); the rest attend globally.
     * Layer i is global iff global_every > 1 and (i + 1) % global_every == 0
     * (gemma2/gpt_oss 2, gemma3 6, llama4 4 = no_rope_layer_interval). */
    int64_t sliding_window; /* W; 0: no window */
    int64_t attn_chunk;     /* C; 0: no chunking (at most one of the two) */
    int64_t global_every;   /* 0 or 1: every layer local */
    int64_t local_layers;   /* layers with the window/chunk; 0 -> counted from global_every
                               by pc_tfm_check (a config's layer_types sets it directly) */
    int attn_sink;          /* gpt_oss: a learned sink logit per query head and layer */
    int v_norm;             /* RMSNorm on v over head_dim (MaxText 2023 decoder): H per layer */
    int64_t stated_params;  /* a parameter count stated in the config (MaxText's
                               num_parameters, as it counts them for its FLOPs); 0: none */
    char act[24];           /* hidden_act as read ("silu", "relu2", ...); "" if not given */
    pc_prec weight_prec;    /* torch_dtype, default bf16 */
    char note[512];         /* assumptions made while reading a config */
} pc_tfm_cfg;

/* Fills defaults (kv_heads, head_dim, norms, d_ff_expert, moe_layers,
 * local_layers, MLA head_dim) and checks the shape: positive sizes, heads
 * dividing d_model when head_dim is not given, kv_heads dividing heads,
 * experts_per_token <= experts, layer counts <= layers, MLA widths given,
 * not both sliding_window and attn_chunk. The message says which field to
 * change. */
PC_API pc_status pc_tfm_check(pc_tfm_cfg *cfg, pc_error *err);

/* Hugging Face config.json (llama, mistral, mixtral, qwen2, qwen2_moe, qwen3,
 * qwen3_moe, gemma, gemma2, gemma3 (text_config), llama4 / llama4_text,
 * deepseek_v2/v3 and kimi_k2 (MLA, MTP), gpt_oss, nemotron, gpt2 (also
 * Megatron GPT), phi3, maxtext-decoder-2023, ...); fields that are null or
 * absent take the family's default, said in `note`; unknown model types are
 * read as llama-like, with a note. An unknown hidden_act or a bad size fails
 * naming the field. Result is checked. */
PC_API pc_status pc_tfm_from_hf_json(const char *text, size_t len, const char *origin,
                                       pc_tfm_cfg *out, pc_error *err);
PC_API pc_status pc_tfm_load_hf(const char *path, pc_tfm_cfg *out, pc_error *err);

/* Presets from the models' published config.json files: llama3-8b,
 * llama3-70b, llama3-405b, llama2-13b, mistral-7b, mixtral-8x7b, gemma-7b,
 * gpt2, gpt2-xl. */
PC_API int pc_tfm_preset_count(void);
PC_API const char *pc_tfm_preset_name(int i);
PC_API pc_status pc_tfm_preset(const char *name, pc_tfm_cfg *out, pc_error *err);

typedef struct pc_param_counts {
    double embedding;     /* V*D input embedding */
    double unembedding;   /* V*D output projection (0 if tied) */
    double position;      /* learned position embeddings */
    double attention;     /* all layers: q,k,v,o (+ biases) */
    double mlp;           /* all layers: dense MLP or all experts (+ shared) */
    double mlp_active;    /* per token: dense MLP, or k routed + shared experts */
    double router;        /* all layers: D*E */
    double norms;         /* all layers + final norm */
    double total;         /* everything stored */
    double active;        /* what one token uses (MoE: k of E experts) */
    double non_embedding; /* total minus embedding, unembedding, position */
    double matmul_active; /* weights in the matmuls one token passes, incl. the
                             unembedding (tied or not): the N of 6N */
    double mtp;           /* multi-token-prediction modules (in total and non_embedding;
                             not in active or matmul_active); 0 without */
} pc_param_counts;
PC_API void pc_tfm_params(const pc_tfm_cfg *cfg, pc_param_counts *out);

typedef enum pc_remat {
    PC_REMAT_NONE = 0,    /* save every activation the backward needs */
    PC_REMAT_BIG_MATMULS, /* save only the outputs of the big matmuls (q, k, v, o,
                             MLP in/out): ~7 tensors a layer; attention recomputed */
    PC_REMAT_FULL,        /* save only each layer's input (block remat) */
    PC_REMAT_TENSORS,     /* save `remat_tensors` tensors of [tokens, D] per layer
                             (the book's "k checkpoints per layer") */
    PC_REMAT_COUNT
} pc_remat;
PC_API const char *pc_remat_name(pc_remat r);
/* "none", "big_matmuls"/"dots", "full"/"block", "tensors" */
PC_API int pc_remat_parse(const char *s);
/* A comma-separated list of policies ("none,full", "tensors:K" or
 * "tensors=K" with 0 < K <= 1e6, or "all" = none, big_matmuls and full)
 * OR-ed into *mask as 1u << pc_remat; *tensors gets K. -1 on anything else
 * or an empty list. */
PC_API int pc_remat_parse_list(const char *list, unsigned *mask, double *tensors);

typedef struct pc_flop_counts {
    double matmul;        /* 2 * matmul_active: forward matmul FLOPs per token */
    double attention_fwd; /* attention core (QK^T and AV), forward, per token, all layers:
                             2 * N * (Hqk + Hv) * keys summed over layers; without windows
                             or MLA 4 * L * N * H * T (causal: T/2) */
    double train;         /* 6 * matmul_active + 3 * attention_fwd per token */
    double remat_extra;   /* recomputation per token under the policy */
    double train_remat;   /* train + remat_extra */
    double six_n;         /* 6 * active params (the book's 6N rule) */
    double prefill;       /* forward per prompt token with context T: matmul + attention_fwd */
    double decode;        /* forward per generated token at context T (same formula) */
    /* matmul split by kind (forward, per token, all layers); they sum to matmul */
    double fwd_attn_proj;  /* q, k, v, o (MLA: the LoRA down/up projections) */
    double fwd_dense_mlp;  /* MLP of the dense layers (all layers of a dense model) */
    double fwd_experts;    /* the k active routed experts of the MoE layers */
    double fwd_shared;     /* shared experts (+ qwen2_moe's shared-expert gate) */
    double fwd_router;     /* routers, 2 * D * E per MoE layer */
    double fwd_unembed;    /* output projection, 2 * V * D */
    double fwd_mtp;        /* MTP modules' matmuls incl. their use of the output head
                              (training with MTP only; not in matmul/train) */
    /* attention core per layer kind: keys one token attends on average at T */
    double keys_global;   /* T (causal: T/2) */
    double keys_local;    /* window W: min(T, W) (causal: T/2 if T <= W, else W - W^2/(2T));
                             chunk C: decode ((T-1) mod C) + 1, causal (q C^2/2 + r^2/2) / T
                             with T = q C + r; 0 when no layer is local */
    double attn_core_layer_global; /* forward attention-core FLOPs per token of one global
                                      layer: 2 N (Hqk + Hv) keys_global */
    double attn_core_layer_local;  /* ... of one local layer (0 when none) */
} pc_flop_counts;
/* Per-token FLOPs at sequence/context length `seq` (T), full (non-causal)
 * attention as in the book (every token attends T keys, i.e. decode at
 * context T); `causal` = 1 averages over the positions 1..T (T/2 keys
 * without a window). Windows and chunks cap the keys of local layers. */
PC_API void pc_tfm_flops(const pc_tfm_cfg *cfg, double seq, int causal, pc_remat remat,
                           pc_flop_counts *out);

typedef enum pc_optimizer {
    PC_OPT_ADAM = 0,     /* two fp32 moments: 8 bytes/param */
    PC_OPT_SGD_MOMENTUM, /* one fp32 moment: 4 bytes/param */
    PC_OPT_SGD,          /* no state */
    PC_OPT_COUNT
} pc_optimizer;

typedef struct pc_mem_opts {
    size_t struct_size;  /* sizeof(pc_mem_opts), set by pc_mem_opts_default() */
    double tokens;       /* tokens in the batch (B * T) held at once */
    pc_prec weight_prec; /* default bf16 */
    pc_prec grad_prec;   /* default bf16 */
    pc_prec act_prec;    /* default bf16 */
    pc_optimizer optimizer;
    int master_weights; /* + an fp32 copy of the weights (4 bytes/param) */
    pc_remat remat;
    double remat_tensors; /* PC_REMAT_TENSORS: tensors of [tokens, D] per layer */
} pc_mem_opts;
PC_API pc_mem_opts pc_mem_opts_default(void);

typedef struct pc_train_memory {
    double weights, grads, optimizer, activations, total; /* bytes, whole job */
    double act_elems_per_token_layer;                     /* saved elements per token per layer */
} pc_train_memory;
PC_API pc_status pc_tfm_memory(const pc_tfm_cfg *cfg, const pc_mem_opts *opts,
                                 pc_train_memory *out, pc_error *err);

/* KV cache bytes per token while the sequence is shorter than any window:
 * 2 * L * K * H * bytes(prec); MLA: L * (kv_lora_rank + qk_rope_head_dim) *
 * bytes. With windows the cache stops growing on local layers: use
 * pc_tfm_kv_bytes_per_seq. */
PC_API double pc_tfm_kv_bytes_per_token(const pc_tfm_cfg *cfg, pc_prec prec);
/* KV cache bytes of one sequence of S tokens: per layer bytes x S on global
 * layers, x min(S, W) on sliding-window layers, x min(S, C) on chunked
 * layers (the most a chunk holds). Without windows: per token x S. */
PC_API double pc_tfm_kv_bytes_per_seq(const pc_tfm_cfg *cfg, pc_prec prec, double S);

/* The dense critical batch (scaling_book.md §2, §7): a matmul with weights of
 * `weight_prec` computed at `act_prec` is compute-bound above
 * B_crit = C(act_prec) x bytes(weight_prec) / (2 W_hbm) tokens (v5e: bf16 240,
 * int8 weights 120, int8 x int8 240). 0 if the chip lacks a number. */
PC_API double pc_chip_critical_batch(const pc_chip *chip, pc_prec weight_prec, pc_prec act_prec);
/* MoE (scaling_book.md §4, §7): each expert sees k/E of the batch's tokens, so
 * a MoE layer is compute-bound when the total batch exceeds B_crit x E / k
 * (the invented model E=16, k=2 on v5e: 1920; int8 DeepSeek E=256, k=8: 3840).
 * 0 for dense models. */
PC_API double pc_tfm_moe_critical_batch(const pc_tfm_cfg *cfg, const pc_chip *chip,
                                          pc_prec weight_prec, pc_prec act_prec);

/* ------------------------------------------------------------------ */
/* Planning: training parallelism and serving (issue #6)              */
/* ------------------------------------------------------------------ */
/*
 * Searches and evaluators built on the functions above (docs/analytic.md,
 * "Planning", states every rule). Evaluation is pure and allocation-free;
 * the search keeps its best plans in the caller's array.
 */

/* Attention FLOPs charged per token: causal (flash-attention kernels skip
 * the masked half; default), full (the book's 12 L N H T), none (the book's
 * 6N rule, for comparing with its worked examples). */
typedef enum pc_attn_flops { PC_ATTN_CAUSAL = 0, PC_ATTN_FULL, PC_ATTN_NONE } pc_attn_flops;
PC_API const char *pc_attn_flops_name(pc_attn_flops a);
PC_API int pc_attn_flops_parse(const char *s); /* -1 if unknown */

/* MFU of a measured run (docs/analytic.md "MFU"): model FLOPs = tokens x
 * (6 N + 12 L N H T; causal halves the attention, none drops it: the book's
 * 6N), without rematerialization (recomputation counts toward HFU, not MFU);
 * achieved = FLOPs / chip-seconds; MFU = achieved / peak(prec). chip_seconds
 * = step time x chips, or GPU-hours x 3600. */
typedef struct pc_mfu {
    double flops_per_token; /* model FLOPs (no remat) */
    double flops;           /* x tokens */
    double achieved;        /* FLOP/s per chip */
    double peak;            /* chip peak at prec */
    double mfu;             /* achieved / peak */
    double hfu;             /* with the remat policy's recomputation */
} pc_mfu;
PC_API pc_status pc_tfm_mfu(const pc_tfm_cfg *cfg, const pc_chip *chip, pc_prec prec,
                              double seq, pc_attn_flops attention, pc_remat remat, double tokens,
                              double chip_seconds, pc_mfu *out, pc_error *err);

/* Default achievable fraction of peak FLOP/s for the big matmuls: the
 * book's "TPUs ~95%, H100/B200 ~80-85%" (scaling_book.md §1): TPU 0.95,
 * GPU 0.80. */
PC_API double pc_plan_default_efficiency(const pc_chip *chip);

/* A physical slice for a chip count: one slice shape that fits the pod
 * (wraparound preferred, then the fewest hops), or S equal slices joined
 * over DCN (the last axis, in dcn_mask) when none fits. GPUs: one axis of
 * `chips`. The mesh is checked (pc_mesh_check). */
PC_API pc_status pc_plan_slice_for_chips(const pc_chip *chip, int64_t chips, pc_mesh *out,
                                         pc_error *err);

/* What pc_plan_slice_for_chips_note chose, for a warning (docs/analytic.md
 * "Slices"). A standard slice: v4/v5p/TPU7x (cube rule) whole 4x4x4 cubes
 * on every axis or powers of two within one cube (2x2x1 ... 4x4x4);
 * v3/v5e/v6e powers of two on every axis (2x4, 4x8, 16x16, ...). */
typedef struct pc_slice_note {
    int64_t slices;      /* S slices joined over DCN (1: one slice) */
    int64_t slice_chips; /* chips per slice */
    int standard;        /* each slice has a standard shape */
    int warn;            /* 1: split over DCN or a shape that is not standard: see text */
    int64_t below, above; /* nearest counts forming one standard slice, or standard slices of
                             >= 64 chips over DCN (0: none within 4096) */
    char text[400];       /* "18823 chips do not form one v5p slice; using 2689 slices of 7
                             chips (7x1x1) joined over DCN; ...", "" when nothing to say */
} pc_slice_note;
/* pc_plan_slice_for_chips plus what it had to do (note may be NULL). Both
 * refuse (PC_ERR_ARG, naming the nearest valid counts) a split into slices
 * of fewer than 4 chips (a prime count above the pod's largest axis). */
PC_API pc_status pc_plan_slice_for_chips_note(const pc_chip *chip, int64_t chips, pc_mesh *out,
                                              pc_slice_note *note, pc_error *err);

/* Logical parallelism axes of a training plan, outermost first. */
typedef enum pc_par_axis {
    PC_PAR_PP = 0, /* pipeline stages (layers) */
    PC_PAR_DP,     /* data parallel, weights replicated */
    PC_PAR_FSDP,   /* data parallel with ZeRO stage 1/2/3 sharding */
    PC_PAR_EP,     /* expert parallel (MoE; also shards tokens) */
    PC_PAR_TP,     /* tensor (Megatron) parallel */
    PC_PAR_COUNT
} pc_par_axis;
/* "stage", "data", "fsdp", "expert", "tensor" */
PC_API const char *pc_par_axis_name(pc_par_axis a);

/* What a step's time is spent on (exposed, i.e. not hidden under compute). */
typedef enum pc_plan_part {
    PC_PART_COMPUTE = 0, /* matmul FLOPs at peak x efficiency */
    PC_PART_HBM,         /* weights / activations / gradients through HBM above compute */
    PC_PART_FSDP,        /* ZeRO weight AllGathers / gradient ReduceScatters above compute */
    PC_PART_TP,          /* tensor-parallel AllGather / ReduceScatter above compute */
    PC_PART_SP,          /* sequence-sharded attention: K/V AllGather above compute */
    PC_PART_EP,          /* expert AllToAll (critical path) */
    PC_PART_PP,          /* pipeline send/recv */
    PC_PART_BUBBLE,      /* pipeline bubble (p-1)/(m+p-1) */
    PC_PART_DP,          /* end-of-step gradient AllReduce / ZeRO collectives not overlapped */
    PC_PART_OPT,         /* optimizer update (HBM) */
    PC_PART_COUNT
} pc_plan_part;
PC_API const char *pc_plan_part_name(pc_plan_part p);

typedef struct pc_plan_train_opts {
    size_t struct_size;    /* sizeof(pc_plan_train_opts), set by pc_plan_train_opts_default() */
    double batch_tokens;   /* B: tokens per optimizer step (required) */
    double seq;            /* T: sequence length; 0 -> 4096 */
    double total_tokens;   /* token budget for days and cost; 0 -> none */
    double price_per_hour; /* USD per chip-hour; < 0 -> the chip's (0 = unknown) */
    double efficiency;     /* fraction of peak for compute; 0 -> pc_plan_default_efficiency */
    pc_attn_flops attention;
    pc_prec weight_prec, grad_prec, act_prec; /* default bf16 */
    pc_optimizer optimizer;                   /* default Adam */
    int master_weights;                       /* + fp32 weight copy (4 B/param) */
    unsigned remat_mask;         /* bit per pc_remat to search; 0 -> none, big_matmuls, full */
    double remat_tensors;        /* K for PC_REMAT_TENSORS */
    unsigned zero_mask;          /* bit per ZeRO stage 1..3 for the fsdp axis; 0 -> all three */
    int64_t fixed[PC_PAR_COUNT]; /* > 0: force that axis size; 0: search */
    int64_t max_micro;           /* most micro-batches per step; 0 -> 256 */
    pc_coll_conv convention;     /* collective pricing (default exact; book: the book's V/W) */
    /* Calibration (perfcast/calib.h) that ranks the plans by their calibrated
     * step time; NULL: rank by the ideal roofline (the book's lower bound). */
    const struct pc_calib *calibration;
    /* Pinned configuration (0: search / none; docs/analytic.md "Pinned
     * configurations"). micro: micro-batches per step (else powers of two and
     * the divisors of the sequences per data shard, up to max_micro);
     * micro_batch_size: sequences per micro-batch (a layout must split the
     * batch into whole micro-batches of it); vp: interleaved virtual pipeline
     * stages per stage (bubble (pp-1)/(vp m) of the pipelined time; needs
     * stage > 1 and stage x vp <= layers); cp: context parallel, each sequence
     * split over cp chips of the data axes (cp must divide the data shards). */
    int64_t micro, micro_batch_size, vp, cp;
} pc_plan_train_opts;
PC_API pc_plan_train_opts pc_plan_train_opts_default(void);

/* One evaluated training plan (all memory per chip, times per step). */
typedef struct pc_train_plan {
    int64_t axis[PC_PAR_COUNT]; /* sizes; product = chips */
    int zero;                   /* ZeRO stage of the fsdp axis (0 when fsdp == 1) */
    pc_remat remat;
    int64_t micro;           /* m: micro-batches (gradient accumulation; pipeline micro-batches) */
    int span[PC_PAR_COUNT];  /* physical torus axes each logical axis spans (the book's M_X) */
    int dcn[PC_PAR_COUNT];   /* 1: the axis crosses slices over DCN */
    double tokens_per_shard; /* tokens per data shard per step, rounded up (padding counted) */
    double tokens_per_chip;  /* batch / chips (the book's per-chip batch) */
    /* memory per chip, bytes */
    double mem_weights, mem_grads, mem_opt, mem_act, mem_transient, mem_total;
    int fits;
    /* per micro-batch chunk on one chip, seconds (before overlap) */
    double t_math, t_hbm, t_fsdp, t_tp, t_sp, t_ep, t_pp;
    double t_dp; /* end-of-step gradient reduction / ZeRO collectives, before overlap */
    double part[PC_PART_COUNT]; /* exposed seconds per step; they sum to step_time */
    double step_time;       /* the overlapped roofline (the book's lower bound): plans rank by it */
    double step_time_upper; /* nothing overlapped (the book's upper bound): breaks ties */
    double mfu, tokens_per_s, days, cost;
    pc_plan_part bottleneck; /* largest part */
    /* Under opts->calibration (0 when none or not expressible): the calibrated
     * step time, its MFU and its largest exposed part (pc_step_part). The
     * fields above stay the ideal roofline. */
    double calibrated_step, calibrated_mfu;
    int calibrated_bottleneck;
    /* Virtual stages per pipeline stage and context-parallel ways (1: none),
     * and sequences per micro-batch of a data group (0: not a whole number,
     * e.g. a sequence split over shards or a batch padded to the shards). */
    int64_t vp, cp, micro_batch_size;
} pc_train_plan;

/* The book's thresholds for the job (scaling_book.md §5, §6), per the best
 * plan's axis spans where they depend on the layout. */
typedef struct pc_train_thresholds {
    double alpha;            /* C / W of one ICI axis (GPU: NVLink; across nodes: IB) */
    int slice_axes;          /* torus axes of the slice (pure FSDP over all chips spans them) */
    double fsdp_per_chip;    /* alpha / slice_axes: per-chip batch for compute-bound pure FSDP */
    double fsdp_pod_batch;   /* chips x fsdp_per_chip: the batch pure FSDP needs */
    double mixed_per_chip;   /* alpha^2 / (M_X M_Y F): per-chip batch under FSDP + TP */
    double tp_limit;         /* M_Y F / alpha: TP degree beyond which its comms exceed compute */
    double fsdp_opt;         /* X_opt = sqrt((B/F) (M_X/M_Y) N) */
    double dcn_per_slice;    /* C / W_dcn: per-slice batch for DP over DCN (0: single slice) */
    double min_chips_memory; /* whole-job memory (the best plan's remat) / HBM per chip */
    double job_memory;       /* bytes: weights + grads + optimizer + activations of the batch */
    int m_x, m_y;            /* the best plan's data / tensor axis spans (mixed, TP, X_opt) */
} pc_train_thresholds;

typedef struct pc_train_search {
    uint64_t layouts;           /* axis factorizations tried */
    uint64_t unmapped;          /* ... not mappable onto the slice or the model (heads, layers) */
    uint64_t evaluated;         /* candidate plans evaluated (memory and step time) */
    uint64_t fitting;           /* ... that fit in HBM */
    int nbest;                  /* plans written to best[] */
    pc_train_plan least_memory; /* the candidate with the smallest footprint (for "nothing fits") */
    pc_train_thresholds thr;
    int64_t chips;
    double efficiency, price_per_hour;
    uint64_t unpriced;        /* layouts (counted in unmapped) and plans whose step time is not
                                 finite (a link without bandwidth): never kept as plans */
    char unpriced_reason[200]; /* why, naming the chip field to set ("" if none) */
} pc_train_search;

/*
 * Searches every factorization of the slice's chips into pipeline x data x
 * fsdp (ZeRO 1/2/3) x expert x tensor axes that maps onto the slice's torus
 * (and DCN) axes and the model (tensor | heads, kv heads | tensor or tensor |
 * kv heads, tensor | d_ff, stage <= layers, expert | experts), every remat
 * policy in the mask and micro-batch count (powers of two up to the
 * sequences per data shard, and its divisors; or the pinned opts->micro /
 * opts->micro_batch_size). Keeps the `nbest` fastest plans that fit in
 * HBM in best[] (fastest first). Fails only on bad arguments; no plan
 * fitting is reported by out->nbest == 0 (see out->least_memory).
 */
PC_API pc_status pc_plan_train(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                               const pc_plan_train_opts *opts, pc_train_plan *best, int nbest,
                               pc_train_search *out, pc_error *err);

/* Evaluates one layout (axis[], zero, remat, micro of *plan) on the slice;
 * fills the rest of *plan. Fails if the layout does not map. */
PC_API pc_status pc_plan_train_eval(const pc_chip *chip, const pc_tfm_cfg *model,
                                    const pc_mesh *slice, const pc_plan_train_opts *opts,
                                    pc_train_plan *plan, pc_error *err);

/* Serving: the model sharded over all chips of the slice by tensor (model)
 * parallelism (scaling_book.md §7). */
typedef struct pc_serve_opts {
    size_t struct_size;      /* sizeof(pc_serve_opts), set by pc_serve_opts_default() */
    double context;          /* S: tokens in each sequence's KV cache (required) */
    double prefill_tokens;   /* P: prompt tokens per request; 0 -> context */
    double decode_tokens;    /* G: generated tokens per request (QPS); 0 -> 512 */
    pc_prec weight_prec;     /* default bf16 */
    pc_prec kv_prec;         /* default: weight_prec */
    pc_prec act_prec;        /* default bf16 */
    double efficiency;       /* 0 -> pc_plan_default_efficiency */
    double price_per_hour;   /* < 0 -> the chip's */
    pc_attn_flops attention; /* causal (default): prefill causal, decode over the whole
                                context; full: prefill unmasked; none: the book's 2N rule */
    pc_coll_conv convention; /* exact (default); book: the book's V/W collectives, and no
                                decode TP AllReduces (the book's §7 decode formula) */
} pc_serve_opts;
PC_API pc_serve_opts pc_serve_opts_default(void);

typedef struct pc_serve_point {
    double batch;
    int fits;
    double mem_weights, mem_kv, mem_total; /* per chip */
    double kv_bytes;                       /* whole batch */
    /* decode step: T_kv + max(T_math, T_weights, T_comm) (the book's formula + TP comms) */
    double dec_kv, dec_weights, dec_math, dec_comm, dec_step;
    double dec_tok_s, dec_tok_s_chip, qps_per_chip;
    pc_bound dec_bound; /* memory (weights or KV), compute, or comm */
    int dec_kv_bound;   /* the KV term is the largest */
    /* prefill of `batch` prompts of P tokens: max(T_math, T_hbm, T_comm) */
    double pre_math, pre_hbm, pre_comm, pre_time, pre_tok_s;
    pc_bound pre_bound;
    double cost_per_mtok_decode, cost_per_mtok_prefill; /* USD; 0 if no price */
    double tp_limit_decode; /* M_Y F / (B beta) at this batch (scaling_book.md §7) */
} pc_serve_point;

typedef struct pc_serve_summary {
    int64_t chips;          /* = model-parallel degree */
    int64_t kv_head_shards; /* ways the KV cache is split over KV heads (<= K) */
    double weight_bytes;    /* whole model */
    double kv_bytes_per_token, kv_bytes_per_seq;
    double hbm_total;
    int64_t max_batch;         /* largest batch whose weights + KV fit (0: weights alone don't) */
    int64_t min_chips_weights; /* ceil(weights / HBM per chip) */
    int64_t min_chips_valid;   /* the smallest valid model-parallel degree >= that (0: none) */
    double tp_limit_prefill;   /* M_Y F W_ici / C: TP comms exceed compute beyond this */
    double tp_limit_decode;    /* M_Y F / (B beta), beta = W_hbm/W_ici, at batch max_batch */
    double efficiency, price_per_hour;
    double moe_batch; /* MoE: total decode batch above which the experts are compute-bound,
                         pc_tfm_moe_critical_batch (0: dense) */
} pc_serve_summary;

/* Checks the sharding (tensor degree = chips must divide query heads and
 * d_ff; KV heads must divide it or be a multiple of it) and fills *sum.
 * Fails with PC_ERR_INVALID naming the divisor to use. */
PC_API pc_status pc_plan_serve_setup(const pc_chip *chip, const pc_tfm_cfg *model,
                                     const pc_mesh *slice, const pc_serve_opts *opts,
                                     pc_serve_summary *sum, pc_error *err);
/* Prefill and decode at one batch size (after pc_plan_serve_setup). Pure. */
PC_API pc_status pc_plan_serve_eval(const pc_chip *chip, const pc_tfm_cfg *model,
                                    const pc_mesh *slice, const pc_serve_opts *opts, double batch,
                                    pc_serve_point *out, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PC_STATIC_LINKING_ONLY */

#endif /* PERFCAST_ANALYTIC_H */
