/*
 * The calibration's coefficients (X-macro; included by calib_internal.h).
 *
 *   X(ID, "name", ideal, prior, lo, hi, sigma, "doc")
 *
 * ideal: the value under pc_calib_ideal (the roofline lower bound): always
 * the most optimistic end of lo..hi, so no calibration predicts faster than
 * the ideal. prior: where a fit starts and what it is pulled towards; sigma:
 * the prior's width in the fit's unbounded coordinate (logit of the position
 * in lo..hi), so a coefficient no run constrains stays at its prior. lo..hi:
 * hard bounds. docs/analytic.md "Calibration" gives the source of every prior.
 */
/* ---- training (src/analytic/step_model.c) ---- */
X(TR_EFF, "train.eff_scale", 1.0, 0.85, 0.05, 1.0, 0.5,
  "large-matmul efficiency as a multiple of the book's achievable fraction (TPU 0.95, GPU 0.80)")
X(TR_EFF_FP8, "train.fp8_ratio", 1.0, 0.70, 0.05, 1.0, 0.5,
  "8-bit matmuls: achieved fraction of the fp8 peak relative to the 16-bit efficiency")
X(TR_EFF_ATTN, "train.attn_ratio", 1.0, 0.60, 0.05, 1.0, 0.5,
  "attention core (QK^T, softmax, AV): efficiency relative to the matmul efficiency")
X(TR_MEM_ELEMS, "train.mem_elems", 0.0, 40.0, 0.0, 400.0, 1.0,
  "element-wise HBM traffic per token per layer (fwd + bwd), in units of d_model elements")
X(TR_OVL_TP_MEGATRON, "train.megatron-lm.overlap_tp", 1.0, 0.0, 0.0, 1.0, 1.0,
  "Megatron-LM (2022): fraction of the TP/SP collectives hidden under compute")
X(TR_OVL_TP_MCORE, "train.mcore.overlap_tp", 1.0, 0.5, 0.0, 1.0, 1.0,
  "NeMo / Megatron-Bridge (Megatron-Core, TP comm overlap): fraction of TP/SP collectives hidden")
X(TR_OVL_TP_MAXTEXT, "train.maxtext.overlap_tp", 1.0, 0.8, 0.0, 1.0, 1.0,
  "MaxText (XLA): fraction of the TP collectives hidden under compute")
X(TR_OVL_FSDP, "train.megatron.overlap_fsdp", 1.0, 0.8, 0.0, 1.0, 1.0,
  "Megatron FSDP / ZeRO-3: fraction of weight gathers / gradient scatters hidden under compute")
X(TR_OVL_FSDP_MAXTEXT, "train.maxtext.overlap_fsdp", 1.0, 0.8, 0.0, 1.0, 1.0,
  "MaxText (XLA) FSDP: fraction of weight gathers / gradient scatters hidden under compute")
X(TR_OVL_DP, "train.overlap_dp", 1.0, 0.8, 0.0, 1.0, 1.0,
  "fraction of the data-parallel gradient reduction hidden under the last backward")
X(TR_OVL_EP, "train.overlap_ep", 1.0, 0.2, 0.0, 1.0, 1.0,
  "fraction of the expert all-to-all hidden under compute")
X(TR_OVL_CP, "train.overlap_cp", 1.0, 0.5, 0.0, 1.0, 1.0,
  "fraction of the ring-attention K/V exchange hidden under attention")
X(TR_OVL_PP, "train.overlap_pp", 1.0, 0.5, 0.0, 1.0, 1.0,
  "fraction of the pipeline send/recv hidden under compute")
X(TR_BW_EFF, "train.bw_eff", 1.0, 0.7, 0.05, 1.0, 0.5,
  "achieved fraction of NVLink / ICI / InfiniBand bandwidth in collectives")
X(TR_DCN_STEP, "train.dcn_step_s", 1e-5, 1e-4, 1e-5, 0.01, 2.0,
  "seconds per step of a cross-slice ring (2 (S-1) steps per layer's gradient reduction)")
X(TR_DCN_EFF, "train.dcn_eff", 1.0, 0.5, 0.01, 1.0, 1.0,
  "achieved fraction of the DCN bandwidth per chip across TPU slices")
X(TR_MM_DIM, "train.mm_dim", 0.0, 256.0, 0.0, 8192.0, 1.0,
  "matmul size at which efficiency halves on a 1 PFLOP/s unit: eff x d / (d + mm_dim x peak/1e15)")
X(TR_PP_LAT, "train.pp_latency_s", 0.0, 1e-4, 0.0, 0.05, 1.5,
  "seconds of exposed synchronisation per pipeline stage boundary per micro-batch (fwd + bwd)")
X(TR_MOE_ELEMS, "train.moe_elems", 0.0, 8.0, 0.0, 400.0, 1.0,
  "MoE token permutation traffic per routed token copy per MoE layer (fwd + bwd), in d_model elements")
X(TR_MOE_OVERHEAD, "train.moe_overhead_s", 0.0, 1e-3, 0.0, 0.05, 1.5,
  "seconds of host-side work per MoE layer per micro-batch (router sync, dispatch), not hidden")
X(TR_OFFLOAD_OVL, "train.overlap_offload", 1.0, 0.5, 0.0, 1.0, 1.0,
  "fraction of host-offloaded activation traffic (PCIe) hidden under compute")
X(TR_OVERHEAD, "train.overhead_s", 0.0, 20e-6, 0.0, 5e-3, 1.5,
  "seconds of launch / framework overhead per layer per micro-batch")
/* ---- serving (src/analytic/serve_model.c) ---- */
X(SERVE_HBM_EFF, "serve.hbm_eff", 1.0, 0.80, 0.05, 1.0, 0.3,
  "serving: achieved fraction of the HBM bandwidth in an engine step (weights, KV cache, activations)")
X(SERVE_EFF_16, "serve.eff_bf16", 0.80, 0.60, 0.05, 0.80, 0.5,
  "serving: achieved fraction of the bf16/fp16 tensor-core peak (matmuls and attention)")
X(SERVE_EFF_FP8, "serve.eff_fp8", 0.80, 0.50, 0.05, 0.80, 0.5,
  "serving: achieved fraction of the fp8/int8 tensor-core peak (fp8 checkpoints)")
X(SERVE_EFF_FP4, "serve.eff_fp4", 0.80, 0.40, 0.05, 0.80, 0.5,
  "serving: achieved fraction of the fp4 tensor-core peak (nvfp4 checkpoints)")
X(SERVE_KV_FRAC, "serve.kv_mem_frac", 1.0, 0.90, 0.30, 1.0, 0.2,
  "serving: fraction of the HBM left after weights and workspace that the engine gives the KV cache")
X(SERVE_OVERHEAD, "serve.step_overhead_s", 0.0, 1e-3, 0.0, 0.05, 1.0,
  "serving: seconds of scheduler / launch / sampling overhead per engine step")
X(SERVE_MOE_EFF, "serve.moe_eff", 1.0, 0.50, 0.02, 1.0, 0.7,
  "serving: efficiency of the routed-expert (grouped) matmuls relative to dense matmuls")
X(SERVE_SEQ_OVERHEAD, "serve.seq_overhead_s", 0.0, 10e-6, 0.0, 1e-3, 1.0,
  "serving: host seconds per active sequence per engine step and attention rank (scheduling, "
  "sampling, detokenization), overlapped with the GPU's step")
X(SERVE_BW_EFF, "serve.bw_eff", 1.0, 0.70, 0.05, 1.0, 0.5,
  "serving: achieved fraction of the NVLink bandwidth in TP all-reduces and expert all-to-alls")
