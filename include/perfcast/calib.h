/*
 * perfcast/calib.h - measured runs, the calibrated step-time and serving
 * models, and calibration (issue #12).
 *
 * A *run* is one published measurement with the configuration it states:
 * a training step (seconds per optimizer step) or a serving benchmark
 * (output tokens/s). `../shared/calibration/README.md` defines the JSON
 * schema; pc_runs_load reads it (users' own files too).
 *
 * A *calibration* is a handful of named coefficients (efficiencies,
 * overlap fractions, overheads; per chip family and framework, never per
 * run) used by pc_run_predict. pc_calib_builtin() is the default fitted on
 * the shipped measurements; pc_calib_ideal() is the ideal roofline (peak
 * efficiency, every collective hidden where it can be, no overheads): a lower
 * bound. pc_calib_fit fits a calibration to runs by robust least squares on
 * log step time with a prior on every coefficient.
 *
 * Errors are signed fractions: (predicted - measured) / measured.
 */
#ifndef PERFCAST_CALIB_H
#define PERFCAST_CALIB_H

#include <stdint.h>

#include "perfcast/analytic.h"
#include "perfcast/perfcast.h"

/* Declared only under PC_STATIC_LINKING_ONLY: see "Structs across versions" in
   perfcast/perfcast.h (this API's structs are not versioned). */
#if defined(PC_STATIC_LINKING_ONLY)

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Measured runs                                                       */
/* ------------------------------------------------------------------ */

typedef enum pc_run_kind { PC_RUN_TRAIN = 0, PC_RUN_SERVE = 1 } pc_run_kind;

/* Software families whose overlap behaviour differs. */
typedef enum pc_framework {
    PC_FW_MEGATRON = 0, /* megatron-lm, nemo, megatron-bridge (Megatron-Core) */
    PC_FW_MAXTEXT,      /* maxtext (JAX / XLA) */
    PC_FW_TRTLLM,       /* tensorrt-llm (serving) */
    PC_FW_OTHER,        /* anything else: read Megatron-like on GPUs, MaxText-like on TPUs */
    PC_FW_COUNT
} pc_framework;
PC_API const char *pc_framework_name(pc_framework f);
/* "megatron-lm", "nemo", "megatron-bridge", "megatron" -> MEGATRON; "maxtext",
 * "jax" -> MAXTEXT; "tensorrt-llm", "trtllm" -> TRTLLM; anything else OTHER. */
PC_API pc_framework pc_framework_parse(const char *s);

/* Activation recomputation as runs state it. */
typedef enum pc_run_remat {
    PC_RRM_NONE = 0,  /* nothing recomputed */
    PC_RRM_SELECTIVE, /* Megatron selective: the attention core (softmax, dropout) only */
    PC_RRM_FULL,      /* whole layer recomputed in the backward */
    PC_RRM_CUSTOM,    /* MaxText save/offload policy: some of the layer (remat_text says) */
    PC_RRM_COUNT
} pc_run_remat;

#define PC_RUN_ID_MAX 96

typedef struct pc_run {
    char id[PC_RUN_ID_MAX];
    char source[PC_RUN_ID_MAX]; /* the id's prefix up to the first '-': "k22", "mx23", ... */
    pc_run_kind kind;
    char framework_name[32];
    pc_framework framework;
    int flags_ga_inconsistent; /* flags: ["ga_inconsistent"] */

    pc_tfm_cfg model; /* from the "model" object (HF config.json style) */

    /* hardware */
    char chip_name[PC_CHIP_NAME_MAX]; /* as given: "h100-sxm", "tpu-v5e", ... */
    int64_t chips, chips_per_node, slices;

    /* parallelism (absent or null: 1, zero: 0, sequence_parallel: 0) */
    int64_t tp, pp, vp, cp, ep, etp, dp, fsdp;
    int zero; /* -1: not stated */
    int sequence_parallel;
    int attention_dp;             /* serving: TensorRT-LLM attention DP */
    int64_t micro_batch_size;     /* 0: not stated */
    int64_t global_batch_size;    /* sequences per step (training) */
    int64_t grad_accum;           /* 0: not stated (derived from the batch) */
    double per_device_batch_size; /* MaxText; 0: not stated */

    /* workload */
    double seq_len;   /* training */
    pc_prec prec;     /* compute precision of the matmuls (mxfp8 -> fp8, nvfp4 -> fp4) */
    int block_scaled; /* mxfp8 / nvfp4 block scaling */
    pc_run_remat remat;
    char remat_text[96];
    int flash_attention; /* -1: not stated */
    double input_len, output_len; /* serving */
    double batch, concurrency;    /* serving; 0: not stated */
    double num_requests;
    pc_prec weight_prec, kv_prec; /* serving */

    /* measured */
    char metric[32];
    double measured_value;     /* in the metric's units */
    double step_time_s;        /* training: seconds per step; 0 for serving */
    double output_tokens_per_s; /* serving: total output tokens/s of the run */

    /* what the reader derived or assumed ("grad_accum derived: ..."); "" if nothing */
    char note[256];
} pc_run;

/* A loaded runs file. Runs that fail to parse or are inconsistent are kept
 * (with their id and a message naming the field) so that a report can list
 * them; pc_runs_problem() is NULL for a good run. */
typedef struct pc_runs pc_runs;

PC_API pc_status pc_runs_load(const char *path, pc_runs **out, pc_error *err);
PC_API pc_status pc_runs_parse(const char *text, size_t len, const char *origin, pc_runs **out,
                               pc_error *err);
PC_API void pc_runs_free(pc_runs *r);
PC_API int pc_runs_count(const pc_runs *r);
PC_API const pc_run *pc_runs_at(const pc_runs *r, int i);
/* NULL if run i is good, else why not ("run 'x': parallelism.tp: ..."). */
PC_API const char *pc_runs_problem(const pc_runs *r, int i);
/* Number of runs with a problem. */
PC_API int pc_runs_invalid(const pc_runs *r);

/* The built-in chip a run's "chip" names ("a100-80gb" -> a100, "h100-sxm"
 * -> h100, "gb200" -> gb200-nvl72, "tpu-v5e" -> v5e, ...); NULL if unknown. */
PC_API const pc_chip *pc_run_chip(const pc_run *run);

/* ------------------------------------------------------------------ */
/* Calibration                                                         */
/* ------------------------------------------------------------------ */

typedef struct pc_calib pc_calib;

#define PC_CALIB_VERSION 1

/* The built-in calibration (fitted on ../shared/calibration/, see
 * docs/analytic.md "Calibration"); a new handle the caller frees. */
PC_API pc_status pc_calib_builtin(pc_calib **out, pc_error *err);
/* The ideal roofline: no fitted losses (the lower bound). */
PC_API pc_status pc_calib_ideal(pc_calib **out, pc_error *err);
/* Every coefficient at its prior: where a fit starts. */
PC_API pc_status pc_calib_prior(pc_calib **out, pc_error *err);
/* "none" -> ideal, "builtin"/NULL -> built-in, else a JSON file. */
PC_API pc_status pc_calib_from_spec(const char *spec, pc_calib **out, pc_error *err);
PC_API pc_status pc_calib_load(const char *path, pc_calib **out, pc_error *err);
PC_API pc_status pc_calib_parse(const char *text, size_t len, const char *origin, pc_calib **out,
                                pc_error *err);
/* Writes JSON ({"perfcast_calibration": 1, "coefficients": {...}, ...}) by
 * temporary file and rename. */
PC_API pc_status pc_calib_save(const pc_calib *c, const char *path, pc_error *err);
PC_API pc_calib *pc_calib_clone(const pc_calib *c);
PC_API void pc_calib_free(pc_calib *c);
PC_API int pc_calib_is_ideal(const pc_calib *c);
PC_API const char *pc_calib_origin(const pc_calib *c); /* "builtin", "none" or the file */
/* Sets the origin text a saved calibration carries (truncated to 255 bytes). */
PC_API void pc_calib_set_origin(pc_calib *c, const char *origin);

PC_API int pc_calib_coef_count(void);
PC_API const char *pc_calib_coef_name(int i); /* "gpu.megatron.eff_mm", ... */
PC_API const char *pc_calib_coef_doc(int i);
PC_API double pc_calib_get(const pc_calib *c, int i);
/* Sets coefficient i within its documented bounds (PC_ERR_RANGE outside). */
PC_API pc_status pc_calib_set(pc_calib *c, int i, double v, pc_error *err);

/* ------------------------------------------------------------------ */
/* Prediction                                                          */
/* ------------------------------------------------------------------ */

/* Exposed (not hidden) seconds of a training step, by cause. */
typedef enum pc_step_part {
    PC_STEP_COMPUTE = 0, /* matmuls + attention at the calibrated efficiency */
    PC_STEP_MEMORY,      /* memory-bound element-wise work (norms, activations, softmax) */
    PC_STEP_TP,          /* tensor / sequence parallel collectives, exposed */
    PC_STEP_CP,          /* context parallel (ring attention) K/V exchange, exposed */
    PC_STEP_FSDP,        /* FSDP / ZeRO-3 weight gathers and gradient scatters, exposed */
    PC_STEP_DP,          /* data-parallel gradient reduction within a slice, exposed */
    PC_STEP_EP,          /* expert all-to-all, exposed */
    PC_STEP_PP,          /* pipeline send/recv, exposed */
    PC_STEP_DCN,         /* gradient reduction across slices over DCN, exposed */
    PC_STEP_BUBBLE,      /* pipeline bubble */
    PC_STEP_OPT,         /* optimizer update */
    PC_STEP_OVERHEAD,    /* per-layer per-micro-batch launch / framework overhead */
    PC_STEP_COUNT
} pc_step_part;
PC_API const char *pc_step_part_name(pc_step_part p); /* "compute", "tp", ... (JSON keys) */

typedef struct pc_run_pred {
    int expressed;       /* 0: the run cannot be modelled (why says why) */
    char why[256];
    double measured;     /* step_time_s (train) or output tokens/s (serve) */
    double predicted;    /* same unit */
    double error;        /* (predicted - measured) / measured */
    double ideal;        /* the same quantity under pc_calib_ideal (bound) */
    double part[PC_STEP_COUNT]; /* training: exposed seconds per step; sum = predicted */
    double mfu;          /* training: model FLOPs / (chips x peak x predicted) */
    /* serving */
    double batch;        /* concurrent sequences the prediction assumed */
    int batch_stated;    /* 1: the run stated it; 0: throughput-optimal batch chosen */
    double ttft_s, tpot_s;
    double tokens_per_s; /* output tokens/s of the run (all chips) */
    int64_t replicas;    /* data-parallel model replicas (serving) */
} pc_run_pred;

/* Predicts one run under a calibration (ideal if cal is NULL). Fails only on
 * bad arguments; a run that cannot be modelled returns PC_OK with
 * out->expressed = 0 and out->why. */
PC_API pc_status pc_run_predict(const pc_run *run, const pc_calib *cal, pc_run_pred *out,
                                pc_error *err);

/* As pc_run_predict on a given chip (e.g. one from a --chips-file);
 * run->chip_name is not looked up. */
PC_API pc_status pc_run_predict_on(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                                   pc_run_pred *out, pc_error *err);

/* The training run a planner plan stands for (Megatron-style on GPUs with
 * sequence parallelism, MaxText-style on TPUs; flash attention; ZeRO-1/2 on
 * the fsdp axis read as a distributed optimizer over data ranks, ZeRO-3 as
 * FSDP; the plan's vp and cp, cp ranks taken from the data ranks; a sequence
 * split over a whole number of data shards read as cp). Returns 0, or -1 when
 * the plan cannot be expressed as a run (a batch of fractional sequences, a
 * split that is not whole, cp that does not divide the data ranks) or opts's
 * struct_size is not this library's. */
PC_API int pc_run_from_plan(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                            const pc_plan_train_opts *opts, const pc_train_plan *plan, pc_run *out);

/* ------------------------------------------------------------------ */
/* Fitting                                                             */
/* ------------------------------------------------------------------ */

typedef struct pc_calib_fit_opts {
    size_t struct_size;  /* sizeof(pc_calib_fit_opts), set by pc_calib_fit_opts_default() */
    double huber;       /* Huber threshold on log error; 0 -> 0.10 */
    double prior_weight; /* weight of the prior on each coefficient; < 0 -> 1 */
    int max_iter;       /* 0 -> 60 */
    int kinds;          /* bit 0: train runs, bit 1: serve runs; 0 -> both */
} pc_calib_fit_opts;
PC_API pc_calib_fit_opts pc_calib_fit_opts_default(void);

/* Fits the coefficients to the good runs selected by use[i] (NULL = all),
 * starting from `start` (NULL = the priors); returns a new calibration. */
PC_API pc_status pc_calib_fit(const pc_runs *runs, const unsigned char *use, const pc_calib *start,
                              const pc_calib_fit_opts *opts, pc_calib **out, pc_error *err);

/* ------------------------------------------------------------------ */
/* Serving model details (serve_model.c; docs/analytic.md "Serving    */
/* model (calibrated)")                                                */
/* ------------------------------------------------------------------ */

/* Engine limits of the offline benchmarks, per attention rank: trtllm-bench
 * caps the batch at 4096 sequences and the tokens of one engine step at
 * 32768 (TensorRT-LLM tensorrt_llm/bench/build/build.py, finetune_setting). */
#define PC_SERVE_MAX_BATCH 4096
#define PC_SERVE_MAX_TOKENS 32768

/* One engine step of a serving run at one batch, term by term (all per GPU
 * unless said otherwise). */
typedef struct pc_serve_detail {
    int64_t tp, pp, ep, replicas; /* ep: ways the experts are split (MoE; else 1) */
    int attention_dp;             /* 1: attention data-parallel over the tp GPUs */
    pc_prec kv_prec;              /* KV-cache type used (not stated: fp8 for fp8/fp4 weights) */
    double weight_bytes;          /* weights resident on one GPU */
    double workspace_bytes;       /* activation workspace + runtime reserve */
    double kv_budget;             /* bytes of KV cache one GPU holds */
    double kv_bytes_seq;          /* bytes one max_seq_len sequence of a replica needs, whole replica */
    double max_batch_kv;          /* sequences per replica the KV budget holds (0: nothing fits) */
    double max_batch;             /* ... after the engine's batch and token limits */
    double batch;                 /* sequences per replica decoding at once */
    double tokens_step;           /* per replica: batch decode + batch x in/out prefill tokens */
    double prefill_tokens_step;
    double experts_touched;       /* distinct experts one MoE layer reads per step (0: dense) */
    double flops, bytes;          /* compute and HBM traffic of the step */
    /* seconds: matmuls and attention each max(compute, memory), then
     * activations, collectives and the fixed overhead one after another
     * (t_gpu); the host's per-sequence work overlaps it: t_step = max(t_gpu,
     * t_host). t_compute / t_memory sum the compute / HBM parts. */
    double t_mm, t_attn, t_compute, t_weights, t_kv, t_act, t_memory, t_comm, t_overhead;
    double t_gpu, t_host, t_step;
    double ttft_s, tpot_s;
    double tokens_per_s; /* output tokens/s of the whole run (replicas x batch / t_step) */
} pc_serve_detail;

/* A serving run with the defaults of an offline benchmark: kind serve,
 * framework tensorrt-llm, tp = pp = ep = 1, bf16 compute and weights, KV type
 * not stated (PC_PREC_COUNT), batch and concurrency not stated. The caller
 * fills model, chip_name, chips, input_len, output_len. */
PC_API void pc_run_serve_init(pc_run *run);

/* The serving model of a run on `chip` (the run's chip name is not looked
 * up) under a calibration (ideal if NULL). batch > 0: that many sequences per
 * replica; batch <= 0: the run's stated batch/concurrency, else the
 * throughput-optimal batch that fits. Pure and allocation-free. Fails on bad
 * arguments and on runs the model cannot express (PC_ERR_UNSUPPORTED: the
 * message says why, e.g. the weights do not fit at this tp). */
PC_API pc_status pc_serve_explain(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                                  double batch, pc_serve_detail *out, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PC_STATIC_LINKING_ONLY */

#endif /* PERFCAST_CALIB_H */
