/*
 * The calibrated training step-time model (issue #12 item 2; every term and
 * its source in docs/analytic.md "Calibrated training model").
 *
 * A run pins its whole layout (tp, pp, vp, cp, ep, dp, fsdp, micro-batches),
 * so this is one evaluation, not a search. Per micro-batch and pipeline
 * stage, on one chip:
 *
 *   compute  = sum over matmul groups of max(FLOPs / (peak x eff), weight bytes / HBM)
 *              + attention core FLOPs / (peak16 x eff x attn_ratio)
 *   memory   = element-wise traffic (norms, activations, residuals; the T^2
 *              score matrix without flash attention) / HBM
 *   comm     = TP, CP, FSDP and EP collectives and pipeline send/recv, each
 *              exposed by max((1 - overlap) x t, t - hideable compute)
 *
 * and per step: micro-batches x stage time + pipeline bubble (p-1)/v stage
 * times + exposed gradient reduction (DP within the cluster, DCN across
 * slices) + optimizer update + per-layer overhead. The calibration supplies
 * efficiencies, overlaps and overheads; the ideal calibration gives the
 * roofline lower bound.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analytic/calib_internal.h"

static const char *const part_names[PC_STEP_COUNT] = {
    "compute", "memory", "tp", "cp", "fsdp", "dp", "ep", "pp", "dcn", "bubble", "optimizer",
    "overhead"};
const char *pc_step_part_name(pc_step_part p) {
    return (unsigned)p < PC_STEP_COUNT ? part_names[p] : "?";
}

/* What the model needs of a run, prepared once. */
typedef struct sjob {
    const pc_run *r;
    const pc_chip *c;
    const pc_calib *cal;
    int gpu, maxtext, mcore; /* mcore: NeMo / Megatron-Bridge (Megatron-Core) */
    double moe_frac;          /* fraction of the layers that route to experts */
    double Fe;                /* one routed expert's FFN width */
    double mm_dim;            /* TR_MM_DIM */
    double L, D, N, K, H, V, T;
    double Pa, Pd, Pe, Pemb; /* attention, dense MLP (+ shared, router), routed experts, embeddings */
    double k_over_E;          /* fraction of the routed experts one token uses */
    double attn_fwd_tok;      /* attention core FLOPs per token, forward, all layers (causal) */
    double f_model_tok;       /* model FLOPs per token (6N + attention), for MFU */
    double tp, pp, vp, cp, ep, dp, fsdp, m;
    double mbs, gbs;
    double peak, peak16, eff, hbm_bw;
    double ab, wb_comm, gb_comm; /* activation bytes; weight / gradient bytes as communicated */
    double rf_attnproj, rf_mlp, ra; /* extra forward passes recomputed under the remat policy */
    pc_mesh slice;                  /* TPU: one slice's torus (resolved once) */
    double per_slice;               /* TPU: chips per slice */
} sjob;

static double coef(const sjob *j, int id) { return pc_calib_c(j->cal, id); }

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin3(double a, double b, double c) {
    double m = a < b ? a : b;
    return m < c ? m : c;
}

/* A collective's exposed time: at most (1 - overlap) of it can hide... more
 * precisely at least (1 - overlap) x t shows, and never less than what does
 * not fit under the hideable compute. */
static double exposed(double t, double overlap, double hide) {
    return dmax((1 - overlap) * t, t - hide);
}

/* ---------------- links ---------------- */

/* GPU group bandwidth per GPU, one way: a group of `size` ranks `stride`
 * apart stays in the NVLink domain when stride x size fits; otherwise its
 * traffic leaves the node over InfiniBand, with one NIC per GPU of the group
 * that shares a node (NCCL spreads rings over them). */
static double gpu_group_bw(const sjob *j, double stride, double size) {
    const pc_chip *c = j->c;
    double dom = c->nvlink_domain > 0 ? c->nvlink_domain : 1;
    if (stride * size <= dom || !(c->ib_bw > 0)) return c->nvlink_bw;
    double per_node = stride >= dom ? 1 : floor(dom / stride);
    double bw = c->ib_bw * per_node;
    return bw < c->nvlink_bw ? bw : c->nvlink_bw;
}

/* Ring collective time over a GPU group. V as in pc_collective_cost. */
static double gpu_coll(const sjob *j, pc_coll op, double V, double stride, double size) {
    if (size <= 1 || !(V > 0)) return 0;
    double bw = gpu_group_bw(j, stride, size) * coef(j, PC_COEF_TR_BW_EFF);
    double f = (size - 1) / size;
    double lat = j->c->coll_latency > 0 ? j->c->coll_latency : 0;
    switch (op) {
    case PC_COLL_ALLREDUCE: return 2 * f * V / bw + lat;
    case PC_COLL_ALLTOALL: return f * V / bw + lat;
    default: return f * V / bw + lat;
    }
}

/* TPU: the torus axes a logical group of n chips uses, as a little mesh: one
 * whole axis of the slice when one has n chips (tp = an axis of 16), the whole
 * slice when n is all of it (or take_all), otherwise a 1-D ring. */
static double tpu_coll(const sjob *j, pc_coll op, double V, double n, int take_all) {
    if (n <= 1 || !(V > 0)) return 0;
    const pc_chip *c = j->c;
    pc_mesh m;
    memset(&m, 0, sizeof m);
    const pc_mesh slice = j->slice;
    const double per_slice = j->per_slice;
    if (!take_all) {
        for (int i = 0; i < slice.ndims; i++)
            if ((double)slice.size[i] == n) {
                m.ndims = 1, m.size[0] = slice.size[i], m.wrap[0] = slice.wrap[i];
                break;
            }
    }
    if (m.ndims == 0) {
        if (n == per_slice) {
            m = slice;
        } else { /* a sub-slice: a 1-D ring without wraparound */
            m.ndims = 1, m.size[0] = (int64_t)n, m.wrap[0] = 0;
        }
    }
    pc_coll_cost cc;
    if (pc_collective_cost(c, &m, (1u << m.ndims) - 1, op, V, &cc, NULL) != PC_OK) return INFINITY;
    return cc.bw_time / coef(j, PC_COEF_TR_BW_EFF) + cc.latency_time;
}

/* ---------------- preparation ---------------- */

static void remat_passes(sjob *j) {
    switch (j->r->remat) {
    case PC_RRM_FULL: j->rf_attnproj = j->rf_mlp = j->ra = 1; break;
    case PC_RRM_SELECTIVE: j->ra = 1; break;
    case PC_RRM_CUSTOM: /* MaxText policies save the projections, recompute the rest */
        j->rf_mlp = j->ra = 1;
        break;
    default: break;
    }
}

static const char *prepare(sjob *j, const pc_run *r, const pc_chip *c, const pc_calib *cal,
                           const pc_mesh *slice) {
    memset(j, 0, sizeof *j);
    j->r = r, j->c = c, j->cal = cal;
    j->gpu = c->kind == PC_CHIP_GPU;
    j->maxtext = r->framework == PC_FW_MAXTEXT || (r->framework == PC_FW_OTHER && !j->gpu);
    j->mcore = !strcmp(r->framework_name, "nemo") || !strcmp(r->framework_name, "megatron-bridge");
    j->mm_dim = coef(j, PC_COEF_TR_MM_DIM);
    const pc_tfm_cfg *m = &r->model;
    j->L = (double)m->layers, j->D = (double)m->d_model, j->N = (double)m->heads;
    j->K = (double)(m->kv_heads ? m->kv_heads : m->heads);
    j->H = (double)(m->head_dim ? m->head_dim : m->d_model / (m->heads ? m->heads : 1));
    j->V = (double)m->vocab;
    j->T = r->seq_len;
    /* weights by kind, from the forward matmul FLOPs per token (2 per weight
     * a token passes); routed experts: all of them, of which a token uses k/E */
    pc_flop_counts fl;
    pc_tfm_flops(m, j->T, 1, PC_REMAT_NONE, &fl);
    j->Pa = fl.fwd_attn_proj / 2;
    j->Pd = (fl.fwd_dense_mlp + fl.fwd_shared + fl.fwd_router) / 2;
    j->Pemb = (fl.fwd_unembed + fl.fwd_mtp) / 2; /* last stage: output head (+ MTP modules) */
    double E = (double)m->experts, k = (double)m->experts_per_token;
    if (m->experts > 0 && E >= k && k > 0 && fl.fwd_experts > 0) {
        j->k_over_E = k / E;
        j->Pe = fl.fwd_experts / 2 / j->k_over_E;
        j->moe_frac = m->moe_layers > 0 ? (double)m->moe_layers / j->L : 1;
        j->Fe = (double)(m->d_ff_expert > 0 ? m->d_ff_expert : m->d_ff);
    }
    j->attn_fwd_tok = fl.attention_fwd;
    j->f_model_tok = fl.train;
    j->tp = (double)r->tp, j->pp = (double)r->pp, j->vp = (double)(r->vp > 0 ? r->vp : 1);
    j->cp = (double)r->cp, j->ep = (double)r->ep, j->dp = (double)r->dp;
    j->fsdp = (double)r->fsdp;
    j->gbs = (double)r->global_batch_size;
    j->mbs = (double)r->micro_batch_size;
    j->m = (double)(r->grad_accum > 0 ? r->grad_accum : 1);
    if (!(j->mbs > 0)) return "parallelism.micro_batch_size: not stated and not derivable";
    if (!(j->T > 0)) return "workload.seq_len: not stated";
    j->peak = pc_chip_flops(c, r->prec);
    j->peak16 = pc_chip_flops(c, PC_PREC_BF16);
    if (!(j->peak > 0) || !(j->peak16 > 0)) return "the chip has no FLOP/s at this precision";
    /* one fitted scale on the book's achievable fractions (TPU 0.95, GPU 0.80,
     * scaling_book.md §1): the same software losses on either */
    j->eff = pc_plan_default_efficiency(c) * coef(j, PC_COEF_TR_EFF);
    if (j->eff > 1) j->eff = 1;
    if (r->prec == PC_PREC_FP8 || r->prec == PC_PREC_FP4) j->eff *= coef(j, PC_COEF_TR_EFF_FP8);
    j->hbm_bw = c->hbm_bw;
    j->ab = 2;
    /* weights travel in bf16 (MaxText keeps float32 parameters, but the layer's
     * cast to bf16 is elementwise on the shard, so XLA gathers after it);
     * gradients are reduced in the parameters' dtype: float32 in MaxText, bf16
     * in Megatron */
    j->wb_comm = 2;
    j->gb_comm = j->maxtext ? 4 : 2;
    remat_passes(j);
    if (!j->gpu) {
        double slices = (double)(r->slices > 0 ? r->slices : 1);
        j->per_slice = (double)r->chips / slices;
        if (slice && pc_mesh_devices(slice) == (int64_t)j->per_slice)
            j->slice = *slice; /* the planner's slice: no shape search per plan */
        else if (j->per_slice != floor(j->per_slice) ||
                 pc_plan_slice_for_chips(c, (int64_t)j->per_slice, &j->slice, NULL) != PC_OK)
            return "hardware: the chips per slice do not form a slice of this TPU";
    }
    return NULL;
}

/* ---------------- one micro-batch on the slowest stage ---------------- */

typedef struct stage_t {
    double compute, memory, tp, cp, fsdp, ep, pp; /* exposed, per micro-batch */
    double moe_overhead, offload;                 /* host-side MoE work; PCIe offload */
    double bwd;                                   /* backward compute (hides DP reduction) */
    double layers;
} stage_t;

/* Roofline time of a matmul group: FLOPs at the efficiency (lower for small
 * matmuls: d / (d + mm_dim) with d the smallest dimension) vs weights read. */
static double mm(const sjob *j, double flops, double wbytes, double dmin) {
    /* the fixed per-matmul latencies (tile fill, epilogue, wave tails) do not
     * shrink with the peak, so the size that reaches it grows with the peak */
    double d0 = j->mm_dim * j->peak / 1e15;
    double shape = dmin > 0 ? dmin / (dmin + d0) : 1;
    return dmax(flops / (j->peak * j->eff * shape), wbytes / j->hbm_bw);
}

static void stage_time(const sjob *j, stage_t *s) {
    memset(s, 0, sizeof *s);
    const pc_run *r = j->r;
    /* layers on the slowest stage: uneven splits put ceil() on some stage */
    double chunks = j->pp * j->vp;
    double Lst = ceil(j->L / chunks) * j->vp;
    if (Lst > j->L) Lst = j->L;
    s->layers = Lst;
    double fl = Lst / j->L;                      /* this stage's share of the layers */
    double M = j->mbs * j->T / j->cp;            /* tokens per chip in a matmul */
    double wb = 2;                               /* bf16 / fp8 weights as read by the matmuls */
    if (r->prec == PC_PREC_FP8) wb = 1;
    /* forward matmul FLOPs and weight bytes per chip */
    double fa = 2 * M * j->Pa * fl / j->tp, wa = j->Pa * fl / j->tp * wb;
    double fd = 2 * M * j->Pd * fl / j->tp, wd = j->Pd * fl / j->tp * wb;
    double fe = 2 * M * j->Pe * j->k_over_E * fl / j->tp;
    double we = j->Pe * fl / (j->tp * j->ep) * wb;
    double fu = 2 * M * j->Pemb / j->tp, wu = j->Pemb / j->tp * wb; /* last stage */
    /* smallest matmul dimensions: tokens, width per chip; experts see only
     * the tokens routed to them (M x ep x k / E per local expert) */
    double da = dmin3(M, j->D, j->Pa / (j->L * j->D * j->tp));
    double dd = j->Pd > 0 ? dmin3(M, j->D, j->Pd / (j->L * j->D * j->tp)) : 0;
    double de = fe > 0 ? dmin3(M * j->ep * j->k_over_E, j->D, j->Fe / j->tp) : 0;
    double du = dmin3(M, j->D, j->V / j->tp);
    double t_a = mm(j, fa, wa, da), t_d = fd > 0 ? mm(j, fd, wd, dd) : 0;
    double t_e = fe > 0 ? mm(j, fe, we, de) : 0, t_u = mm(j, fu, wu, du);
    double fwd_mm = t_a + t_d + t_e + t_u;
    double rec_mm = j->rf_attnproj * t_a + j->rf_mlp * (t_d + t_e);
    double attn = j->attn_fwd_tok * fl * j->mbs * j->T / (j->tp * j->cp) /
                  (j->peak16 * j->eff / (r->prec == PC_PREC_FP8 ? coef(j, PC_COEF_TR_EFF_FP8) : 1) *
                   coef(j, PC_COEF_TR_EFF_ATTN));
    /* the backward is two matmuls per forward one (input and weight gradients) */
    s->compute = 3 * fwd_mm + rec_mm + (3 + j->ra) * attn;
    s->bwd = 2 * fwd_mm + 2 * attn;
    /* element-wise traffic: replicated over TP unless sequence parallel (or XLA) */
    double shard = (r->sequence_parallel || j->maxtext) ? j->tp * j->cp : j->cp;
    double elems = coef(j, PC_COEF_TR_MEM_ELEMS) * j->D * Lst * j->mbs * j->T / shard;
    if (r->flash_attention == 0) /* the T x T scores: ~7 passes forward, 14 backward */
        elems += (21 + 7 * j->ra) * Lst * j->mbs * (j->N / j->tp) * j->T * j->T / j->cp;
    /* FP8 (Transformer Engine): every GEMM input is cast from bf16 (read 2 B,
     * write 1 B) forward (x, attention out, x, MLP hidden) and backward (the
     * output gradients), on the chip's share of the tokens */
    if (r->prec == PC_PREC_FP8 || r->prec == PC_PREC_FP4) {
        double ffn = j->Pd > 0 ? j->Pd / (j->L * j->D) : 0;
        if (j->Pe > 0) ffn += j->Fe * (double)r->model.experts_per_token * j->moe_frac;
        double per_tok = 2 * (2 * j->D + j->N * j->H + ffn) * 3.0 / j->ab; /* in ab units */
        elems += per_tok * Lst * j->mbs * j->T / (j->tp * j->cp);
    }
    /* MoE: permuting each routed copy of a token to its expert and back */
    if (j->k_over_E > 0)
        elems += coef(j, PC_COEF_TR_MOE_ELEMS) * j->D * Lst * j->moe_frac * j->mbs * j->T *
                 (double)r->model.experts_per_token / (j->tp * j->cp);
    s->memory = elems * j->ab / j->hbm_bw;
    s->moe_overhead = j->k_over_E > 0 ? coef(j, PC_COEF_TR_MOE_OVERHEAD) * Lst * j->moe_frac : 0;
    /* MaxText host offload of saved activations: out and back over PCIe */
    if (strstr(r->remat_text, "offload") && j->c->pcie_bw > 0) {
        double saved = 2 * j->D + (j->N + 2 * j->K) * j->H; /* layer input, q/k/v, out proj */
        double t = 2 * saved * j->ab * Lst * j->mbs * j->T / (j->tp * j->cp) / j->c->pcie_bw;
        s->offload = exposed(t, coef(j, PC_COEF_TR_OFFLOAD_OVL), s->compute);
    }
    double hide = s->compute; /* what a collective can hide under */

    /* tensor parallel: 2 all-reduces (or AG + RS) of [tokens, D] forward, 2
     * backward, 2 more when the forward is recomputed */
    if (j->tp > 1) {
        double v = j->mbs * j->T / j->cp * j->D * j->ab;
        double t1 = j->gpu ? gpu_coll(j, PC_COLL_ALLREDUCE, v, 1, j->tp)
                           : tpu_coll(j, PC_COLL_ALLREDUCE, v, j->tp, 0);
        double t = Lst * (4 + 2 * j->rf_attnproj) * t1;
        int ov = j->maxtext ? PC_COEF_TR_OVL_TP_MAXTEXT
                 : j->mcore ? PC_COEF_TR_OVL_TP_MCORE
                            : PC_COEF_TR_OVL_TP_MEGATRON;
        s->tp = exposed(t, coef(j, ov), hide);
    }
    /* context parallel (ring attention): K and V chunks go round the ring,
     * forward once, backward twice (K/V and their gradients) */
    if (j->cp > 1) {
        double kvh = j->K >= j->tp ? j->K / j->tp : 1;
        double v = j->mbs * j->T / j->cp * 2 * kvh * j->H * j->ab;
        double hop = j->gpu ? v / (gpu_group_bw(j, j->tp, j->cp) * coef(j, PC_COEF_TR_BW_EFF))
                            : tpu_coll(j, PC_COLL_ALLGATHER, v * j->cp, j->cp, 0) / (j->cp - 1);
        double t = Lst * (3 + j->ra) * (j->cp - 1) * hop;
        s->cp = exposed(t, coef(j, PC_COEF_TR_OVL_CP), (3 + j->ra) * attn);
    }
    /* FSDP / ZeRO-3: gather the weights forward and backward, scatter the
     * gradients, every micro-batch */
    if (j->fsdp > 1) {
        double P = (j->Pa + j->Pd + j->Pe / j->ep) * fl / (j->tp) + j->Pemb / j->tp;
        double ag = j->gpu ? gpu_coll(j, PC_COLL_ALLGATHER, P * j->wb_comm, j->tp * j->cp, j->fsdp)
                           : tpu_coll(j, PC_COLL_ALLGATHER, P * j->wb_comm, j->fsdp, 1);
        double rs = j->gpu
                        ? gpu_coll(j, PC_COLL_REDUCESCATTER, P * j->gb_comm, j->tp * j->cp, j->fsdp)
                        : tpu_coll(j, PC_COLL_REDUCESCATTER, P * j->gb_comm, j->fsdp, 1);
        double t = (2 + j->rf_attnproj) * ag + rs;
        s->fsdp = exposed(
            t, coef(j, j->maxtext ? PC_COEF_TR_OVL_FSDP_MAXTEXT : PC_COEF_TR_OVL_FSDP), hide);
    }
    /* expert parallel: dispatch and combine all-to-alls, forward and backward */
    if (j->ep > 1 && j->Pe > 0) {
        double kk = (double)r->model.experts_per_token;
        double moe_layers = Lst * (r->model.moe_layers > 0 ? (double)r->model.moe_layers / j->L : 1);
        /* each chip dispatches its tokens' k copies and gets them back */
        double v = j->mbs * j->T / (j->cp * j->tp) * kk * j->D * j->ab;
        double t1 = j->gpu ? gpu_coll(j, PC_COLL_ALLTOALL, v, j->tp * j->cp, j->ep)
                           : tpu_coll(j, PC_COLL_ALLTOALL, v * j->ep, j->ep, 0);
        double t = moe_layers * (4 + 2 * j->rf_mlp) * t1;
        s->ep = exposed(t, coef(j, PC_COEF_TR_OVL_EP), hide);
    }
    /* pipeline: activations forward, their gradients backward, per virtual chunk */
    if (j->pp > 1) {
        double v = j->mbs * j->T / j->cp * j->D * j->ab / (r->sequence_parallel ? j->tp : 1);
        double stride = j->tp * j->cp * j->dp * j->fsdp;
        double bw = j->gpu ? gpu_group_bw(j, stride, 2) : j->c->ici_link_bw;
        double t = 2 * j->vp * v / (bw * coef(j, PC_COEF_TR_BW_EFF));
        s->pp = exposed(t, coef(j, PC_COEF_TR_OVL_PP), hide) +
                2 * j->vp * coef(j, PC_COEF_TR_PP_LAT);
    }
}

/* ---------------- per step ---------------- */

static double dp_reduce(const sjob *j, const stage_t *s, double *dcn, double *dcn_lat) {
    const pc_run *r = j->r;
    *dcn = *dcn_lat = 0;
    double fl = s->layers / j->L;
    /* this chip's gradients after TP / PP / EP / FSDP sharding */
    double P = ((j->Pa + j->Pd) * fl + j->Pemb) / j->tp + j->Pe * fl / (j->tp * j->ep);
    double t = 0;
    if (j->gpu && j->dp > 1) {
        /* distributed optimizer or not, RS + AG = one all-reduce of the gradients */
        t = gpu_coll(j, PC_COLL_ALLREDUCE, P * j->gb_comm, j->tp * j->cp, j->dp);
        if (j->ep > 1 && j->Pe > 0) { /* dense grads also over the EP ranks (carved from DP) */
            double Pd = ((j->Pa + j->Pd) * fl + j->Pemb) / j->tp;
            t = gpu_coll(j, PC_COLL_ALLREDUCE, Pd * j->gb_comm, j->tp * j->cp, j->dp) +
                gpu_coll(j, PC_COLL_ALLREDUCE, j->Pe * fl / (j->tp * j->ep) * j->gb_comm,
                         j->tp * j->cp * j->ep, j->dp / j->ep > 1 ? j->dp / j->ep : 1);
        }
    }
    double slices = (double)(r->slices > 0 ? r->slices : 1);
    if (!j->gpu && slices > 1) {
        /* multi-slice: each chip all-reduces its FSDP shard of the gradients
         * with the same shard of every other slice over DCN (a ring) */
        double v = P / (j->fsdp > 0 ? j->fsdp : 1) * j->gb_comm;
        double bw = j->c->dcn_bw * coef(j, PC_COEF_TR_DCN_EFF);
        *dcn = bw > 0 ? 2 * (slices - 1) / slices * v / bw : INFINITY;
        /* ... and every layer's reduction is its own ring of 2 (S - 1) steps
         * whose latency adds up: the measured slow-down keeps growing with
         * the slice count long after the bandwidth term has saturated */
        *dcn_lat = 2 * (slices - 1) * s->layers * coef(j, PC_COEF_TR_DCN_STEP);
    } else if (!j->gpu && j->dp > 1) {
        t = tpu_coll(j, PC_COLL_ALLREDUCE, P / j->fsdp * j->gb_comm, j->dp, 0);
    }
    return t;
}

static double optimizer_time(const sjob *j, const stage_t *s) {
    const pc_run *r = j->r;
    double fl = s->layers / j->L;
    double P = ((j->Pa + j->Pd) * fl + j->Pemb) / j->tp + j->Pe * fl / (j->tp * j->ep);
    /* Adam: fp32 master, two moments, bf16 weight and fp32 gradient: ~36 bytes
     * moved per parameter; sharded over the data ranks under ZeRO >= 1, FSDP or
     * Megatron's distributed optimizer (NeMo / Megatron-Bridge default) */
    double shard = j->fsdp;
    if (r->zero >= 1 || (r->zero < 0 && !j->maxtext)) shard *= j->dp;
    return P / shard * 36 / j->hbm_bw;
}

pc_status pc_train_predict(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                           pc_run_pred *out, pc_error *err) {
    (void)err;
    return pc_train_predict_on_slice(run, chip, cal, NULL, 1, out);
}

pc_status pc_train_predict_on_slice(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                                    const pc_mesh *slice, int want_ideal, pc_run_pred *out) {
    memset(out, 0, sizeof *out);
    out->measured = run->step_time_s;
    sjob j;
    const char *why = prepare(&j, run, chip, cal, slice);
    if (why) {
        snprintf(out->why, sizeof out->why, "%s", why);
        return PC_OK;
    }
    stage_t s;
    stage_time(&j, &s);
    double per_mb =
        s.compute + s.memory + s.tp + s.cp + s.fsdp + s.ep + s.pp + s.moe_overhead + s.offload;
    double dcn = 0, dcn_lat = 0, tdp = dp_reduce(&j, &s, &dcn, &dcn_lat);
    double last_bwd = s.bwd;
    double ovl_dp = coef(&j, PC_COEF_TR_OVL_DP);
    double *part = out->part;
    part[PC_STEP_COMPUTE] = j.m * s.compute;
    part[PC_STEP_MEMORY] = j.m * (s.memory + s.offload);
    part[PC_STEP_TP] = j.m * s.tp;
    part[PC_STEP_CP] = j.m * s.cp;
    part[PC_STEP_FSDP] = j.m * s.fsdp;
    part[PC_STEP_EP] = j.m * s.ep;
    part[PC_STEP_PP] = j.m * s.pp;
    part[PC_STEP_BUBBLE] = (j.pp - 1) / j.vp * per_mb;
    part[PC_STEP_DP] = tdp > 0 ? exposed(tdp, ovl_dp, last_bwd) : 0;
    part[PC_STEP_DCN] = (dcn > 0 ? exposed(dcn, ovl_dp, last_bwd) : 0) + dcn_lat;
    part[PC_STEP_OPT] = optimizer_time(&j, &s);
    part[PC_STEP_OVERHEAD] = (coef(&j, PC_COEF_TR_OVERHEAD) * s.layers + s.moe_overhead) * j.m;
    double step = 0;
    for (int i = 0; i < PC_STEP_COUNT; i++) step += part[i];
    if (!isfinite(step) || !(step > 0)) {
        snprintf(out->why, sizeof out->why,
                 "no finite step time (a link this layout needs has no bandwidth on %s)",
                 chip->name);
        return PC_OK;
    }
    out->expressed = 1;
    out->predicted = step;
    out->error = out->measured > 0 ? (step - out->measured) / out->measured : 0;
    out->mfu = j.gbs * j.T * j.f_model_tok / ((double)run->chips * j.peak * step);
    out->ideal = step;
    if (want_ideal && !pc_calib_is_ideal(cal)) {
        pc_run_pred id;
        pc_train_predict_on_slice(run, chip, NULL, slice, 0, &id);
        out->ideal = id.expressed ? id.predicted : 0;
    }
    return PC_OK;
}
