/*
 * The calibration's coefficients (X-macro; included by calib_internal.h).
 *
 *   X(ID, "name", ideal, prior, lo, hi, sigma, "doc")
 *
 * ideal: the value under pc_calib_ideal (the roofline lower bound).
 * prior: where a fit starts and what it is pulled towards; sigma: the prior's
 * width in log space (ln units), so a coefficient no run constrains stays at
 * its prior. lo..hi: hard bounds. docs/analytic.md "Calibration" gives the
 * source of every prior.
 */
/* ---- training (src/analytic/step_model.c) ---- */
X(TR_EFF_GPU, "train.gpu.eff_mm", 0.80, 0.60, 0.05, 1.0, 0.5,
  "GPU: achieved fraction of the 16-bit tensor-core peak on large matmuls")
X(TR_EFF_TPU, "train.tpu.eff_mm", 0.95, 0.75, 0.05, 1.0, 0.5,
  "TPU: achieved fraction of the MXU peak on large matmuls")
X(TR_EFF_FP8, "train.fp8_ratio", 1.0, 0.70, 0.05, 1.0, 0.5,
  "8-bit matmuls: achieved fraction of the fp8 peak relative to the 16-bit efficiency")
X(TR_EFF_ATTN, "train.attn_ratio", 1.0, 0.60, 0.05, 1.0, 0.5,
  "attention core (QK^T, softmax, AV): efficiency relative to the matmul efficiency")
X(TR_MEM_ELEMS, "train.mem_elems", 0.0, 40.0, 0.0, 400.0, 1.0,
  "element-wise HBM traffic per token per layer (fwd + bwd), in units of d_model elements")
X(TR_OVL_TP_MEGATRON, "train.megatron.overlap_tp", 1.0, 0.0, 0.0, 1.0, 1.0,
  "Megatron: fraction of the TP/SP collectives hidden under compute")
X(TR_OVL_TP_MAXTEXT, "train.maxtext.overlap_tp", 1.0, 0.5, 0.0, 1.0, 1.0,
  "MaxText (XLA): fraction of the TP collectives hidden under compute")
X(TR_OVL_FSDP, "train.overlap_fsdp", 1.0, 0.8, 0.0, 1.0, 1.0,
  "fraction of FSDP weight gathers / gradient scatters hidden under compute")
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
X(TR_DCN_EFF, "train.dcn_eff", 1.0, 0.5, 0.01, 1.0, 1.0,
  "achieved fraction of the DCN bandwidth per chip across TPU slices")
X(TR_OVERHEAD, "train.overhead_s", 0.0, 20e-6, 0.0, 5e-3, 1.5,
  "seconds of launch / framework overhead per layer per micro-batch")
/* ---- serving (src/analytic/serve_model.c) ---- */
