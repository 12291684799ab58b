/*
 * Calibrated serving model (issue #12 item 4): output tokens/s, TTFT and
 * TPOT of a continuous-batching engine (TensorRT-LLM-like) for fixed input
 * and output lengths, per GPU and engine step (docs/analytic.md "Serving
 * model (calibrated)" gives every term and its source).
 *
 * Steady state: each engine step decodes one token of every active sequence
 * (batch B per replica) and interleaves prefill chunks of new requests; a
 * request lives `out` steps and needs `in` prompt tokens, so a step carries
 * B decode tokens and B x in/out prefill tokens. Per GPU:
 *   t_step = max(t_compute, t_memory) + t_comm + overhead
 * t_memory: weights read once per step (MoE: only the experts the step's
 * tokens route to), the KV cache of every active sequence at its average
 * context in + out/2, the prefill's KV writes, activations. t_compute:
 * 2 x matmul weights x tokens + attention. t_comm: two TP all-reduces of the
 * step's activations per layer, or with attention data parallelism the
 * expert all-to-all (dispatch + combine) per MoE layer.
 *
 * Pure and allocation-free: the batch search evaluates the closed form.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analytic/calib_internal.h"

/* Runtime reserve per GPU besides weights, KV and activations (CUDA context,
 * cuBLAS / NCCL workspaces, CUDA graphs): an assumption, docs/analytic.md. */
#define SERVE_RESERVE_BYTES 2e9
/* Activations (bf16) one token writes and reads per layer in a step, each
 * tensor written once and read once: on every TP rank the residual stream
 * and two norms (8 D); split over the ranks q/k/v and the attention output
 * (4 (N + K) H) and the MLP hidden tensors (6 F: gate/up out, activation
 * out); MoE also copies each routed token out to its experts and back
 * (4 D per routed copy). */
#define SERVE_ACT_BYTES 2.0
/* Elements of d_model per token of the activation workspace the engine
 * reserves for its largest step (PC_SERVE_MAX_TOKENS tokens). */
#define SERVE_WS_ELEMS 12.0
#define SERVE_WS_TOKENS 8192.0

typedef struct scoef {
    double hbm, mm, attn, kv_frac, overhead, bw, moe, seq;
} scoef;

/* Everything about a run that does not depend on the batch. */
typedef struct sjob {
    double in, out, ctx, seq; /* prompt, generated, average and maximum context */
    double tp, pp, ep, replicas, ranks; /* ranks: attention ranks sharing a replica's batch */
    int adp, moe;
    double L, L_moe, D, E, k;
    double mm_flops_tok;   /* replica: 2 x matmul weights a token passes, minus the logits */
    double exp_flops_tok;  /* ... of which in routed experts */
    double head_flops_tok; /* replica: 2 V D, the logits of one sampled token */
    double att_dec;        /* attention FLOPs of a decode token at the average context */
    double att_pre;        /* ... of a prompt token of a causal prompt of `in` tokens */
    double w_fixed;        /* per GPU: non-expert weight bytes, read every step */
    double w_experts;      /* per GPU: routed-expert weight bytes it holds */
    double kv_tok;         /* KV bytes per token of a sequence, whole model (prefill writes) */
    double kv_avg, kv_max; /* KV bytes of a sequence at the average / maximum context */
    double kv_split;       /* ways one sequence's KV is split over the replica's GPUs */
    double ws;             /* per GPU: workspace + reserve */
    double act_rep, act_split; /* activation elements per token per layer: on every TP rank, split */
    double act_moe;            /* ... of act_split in the routed experts (run at moe_eff) */
    double peak_mm, peak_attn, hbm, hbm_bw, link_bw, link_lat;
    pc_prec kvp, mmp, attp;
} sjob;

void pc_run_serve_init(pc_run *run) {
    memset(run, 0, sizeof *run);
    run->kind = PC_RUN_SERVE;
    snprintf(run->framework_name, sizeof run->framework_name, "tensorrt-llm");
    run->framework = PC_FW_TRTLLM;
    run->chips = 1;
    run->slices = 1;
    run->tp = run->pp = run->vp = run->cp = run->ep = run->etp = run->dp = 1;
    run->zero = -1;
    run->flash_attention = -1;
    run->prec = PC_PREC_BF16;
    run->weight_prec = PC_PREC_BF16;
    run->kv_prec = PC_PREC_COUNT; /* not stated */
    snprintf(run->metric, sizeof run->metric, "output_tokens_per_s");
}

static scoef serve_coefs(const pc_calib *cal, pc_prec mm, pc_prec att) {
    scoef c;
    int ids[2], i;
    pc_prec p[2] = {mm, att};
    for (i = 0; i < 2; i++)
        ids[i] = p[i] == PC_PREC_FP4 || p[i] == PC_PREC_INT4                        ? PC_COEF_SERVE_EFF_FP4
                 : p[i] == PC_PREC_FP8 || p[i] == PC_PREC_INT8                      ? PC_COEF_SERVE_EFF_FP8
                                                                                    : PC_COEF_SERVE_EFF_16;
    c.hbm = pc_calib_c(cal, PC_COEF_SERVE_HBM_EFF);
    c.mm = pc_calib_c(cal, ids[0]);
    c.attn = pc_calib_c(cal, ids[1]);
    c.kv_frac = pc_calib_c(cal, PC_COEF_SERVE_KV_FRAC);
    c.overhead = pc_calib_c(cal, PC_COEF_SERVE_OVERHEAD);
    c.bw = pc_calib_c(cal, PC_COEF_SERVE_BW_EFF);
    c.moe = pc_calib_c(cal, PC_COEF_SERVE_MOE_EFF);
    c.seq = pc_calib_c(cal, PC_COEF_SERVE_SEQ_OVERHEAD);
    return c;
}

/* KV-cache type: as stated, else fp8 for 8-bit checkpoints (ModelOpt FP8
 * checkpoints carry FP8 KV scales) and 16-bit otherwise (the engine's "auto"
 * cache type; trtllm-bench sizes an unquantized cache at 2 bytes). The
 * shipped runs do not state it: docs/analytic.md gives the fit behind this. */
static pc_prec serve_kv_prec(const pc_run *r) {
    if ((unsigned)r->kv_prec < PC_PREC_COUNT) return r->kv_prec;
    switch (r->weight_prec) {
    case PC_PREC_FP8:
    case PC_PREC_INT8: return PC_PREC_FP8;
    case PC_PREC_FP32:
    case PC_PREC_FP16: return r->weight_prec;
    default: return PC_PREC_BF16;
    }
}

/* Bytes per matmul weight: fp4 carries one fp8 scale per 16 elements (nvfp4),
 * block-scaled fp8 (mxfp8) one per 32. */
static double serve_weight_bytes(const pc_run *r) {
    double b = pc_prec_bytes(r->weight_prec);
    if (r->weight_prec == PC_PREC_FP4) b += 1.0 / 16;
    else if (r->weight_prec == PC_PREC_FP8 && r->block_scaled) b += 1.0 / 32;
    return b;
}

static pc_status serve_check(const pc_run *r, const pc_chip *chip, pc_error *err) {
    if (!r || !chip) return pc_fail(err, PC_ERR_ARG, "serving model: NULL argument");
    if (r->kind != PC_RUN_SERVE)
        return pc_fail(err, PC_ERR_ARG, "run '%s' is not a serving run", r->id);
    if (!(r->input_len >= 1 && r->input_len <= 1e8) || !(r->output_len >= 1 && r->output_len <= 1e8))
        return pc_fail(err, PC_ERR_ARG,
                       "run '%s': input_len and output_len must be between 1 and 1e8 tokens", r->id);
    if (r->tp < 1 || r->pp < 1 || r->ep < 0 || r->chips < 1 || r->tp > 1 << 20 || r->pp > 1 << 20)
        return pc_fail(err, PC_ERR_ARG, "run '%s': chips, tp and pp must be >= 1", r->id);
    if ((unsigned)r->prec >= PC_PREC_COUNT || (unsigned)r->weight_prec >= PC_PREC_COUNT)
        return pc_fail(err, PC_ERR_ARG, "run '%s': bad precision", r->id);
    if (!(r->batch >= 0) || !(r->concurrency >= 0) || !isfinite(r->batch) ||
        !isfinite(r->concurrency))
        return pc_fail(err, PC_ERR_ARG, "run '%s': batch and concurrency must be >= 0", r->id);
    if (r->model.layers < 1 || r->model.d_model < 1 || r->model.heads < 1 || r->model.vocab < 1)
        return pc_fail(err, PC_ERR_ARG, "run '%s': the model has no shape", r->id);
    return PC_OK;
}

/* Weights per GPU. Attention, dense MLP and shared experts are split over tp
 * (replicated over the attention ranks under attention DP); routed experts
 * are always split over all tp GPUs of a stage (TensorRT-LLM: moe_tp x moe_ep
 * = tp); embeddings / unembedding stay bf16 (ModelOpt keeps them unquantized)
 * and are vocab-split over tp (replicated under attention DP). */
static void serve_weights(const pc_run *r, const pc_param_counts *p, sjob *j) {
    const pc_tfm_cfg *m = &r->model;
    double wb = serve_weight_bytes(r);
    double D = (double)m->d_model;
    double Fe = (double)(m->d_ff_expert ? m->d_ff_expert : m->d_ff);
    double one = (m->gated ? 3.0 : 2.0) * D * Fe + (m->mlp_bias ? (m->gated ? 2.0 : 1.0) * Fe + D : 0);
    double routed = j->moe ? j->L_moe * j->E * one : 0; /* routed experts of all MoE layers */
    double blocks = p->attention + p->mlp - routed; /* quantized matmul weights */
    double bf16 = p->embedding + p->unembedding + p->position + p->router + p->norms;
    double rep = j->adp ? 1 : j->tp; /* ways the non-expert weights are split */
    j->w_fixed = (blocks * wb + bf16 * 2) / (rep * j->pp);
    j->w_experts = routed * wb / (j->tp * j->pp);
    /* MLP hidden width a token passes, averaged over dense and MoE layers */
    double f_moe = j->k * Fe + (double)m->shared_experts * (double)m->d_ff_shared;
    double f_act = j->moe ? (j->L_moe * f_moe + (j->L - j->L_moe) * (double)m->d_ff) / j->L
                          : (double)m->d_ff;
    double N = (double)m->heads, K = (double)(m->kv_heads ? m->kv_heads : m->heads);
    double H = (double)(m->head_dim ? m->head_dim : m->d_model / m->heads);
    j->act_rep = 8 * D;
    j->act_moe = j->moe ? (4 * D + 6 * Fe) * j->k * j->L_moe / j->L : 0;
    j->act_split = 4 * (N + K) * H + 6 * (f_act - (j->moe ? j->k * Fe * j->L_moe / j->L : 0)) + j->act_moe;
}

static void serve_comm(const pc_chip *chip, sjob *j) {
    if (chip->kind == PC_CHIP_GPU) {
        int in_domain = chip->nvlink_domain <= 0 || j->tp <= chip->nvlink_domain;
        j->link_bw = in_domain ? chip->nvlink_bw : chip->ib_bw;
        j->link_lat = chip->coll_latency + (in_domain ? 0 : chip->dcn_latency);
    } else {
        j->link_bw = pc_chip_ici_axis_bw(chip);
        j->link_lat = chip->ici_hop_latency * (j->tp > 1 ? j->tp - 1 : 0);
    }
}

static pc_status serve_prepare(const pc_run *r, const pc_chip *chip, sjob *j, pc_error *err) {
    memset(j, 0, sizeof *j);
    pc_status st = serve_check(r, chip, err);
    if (st) return st;
    const pc_tfm_cfg *m = &r->model;
    j->in = r->input_len;
    j->out = r->output_len;
    j->ctx = r->input_len + r->output_len / 2;
    j->seq = r->input_len + r->output_len;
    j->tp = (double)r->tp;
    j->pp = (double)r->pp;
    j->moe = m->experts > 0;
    j->adp = r->attention_dp && j->moe; /* attention DP only matters with experts to share */
    j->ep = j->moe ? (r->ep > 1 ? (double)r->ep : j->tp) : 1;
    j->ranks = j->adp ? j->tp : 1;
    j->replicas = floor((double)r->chips / (j->tp * j->pp));
    if (j->replicas < 1)
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%lld chips < tp %lld x pp %lld",
                       (long long)r->chips, (long long)r->tp, (long long)r->pp);
    j->L = (double)m->layers;
    j->D = (double)m->d_model;
    j->L_moe = j->moe ? (double)(m->moe_layers > 0 ? m->moe_layers : m->layers) : 0;
    j->E = (double)m->experts;
    j->k = (double)m->experts_per_token;
    const double K = (double)(m->kv_heads ? m->kv_heads : m->heads);
    pc_param_counts p;
    pc_tfm_params(m, &p);
    pc_flop_counts fd, fp;
    /* windows (sliding / chunked local layers) cap the keys and the cache */
    pc_tfm_flops(m, j->ctx, 0, PC_REMAT_NONE, &fd);
    pc_tfm_flops(m, j->in, 1, PC_REMAT_NONE, &fp);
    j->head_flops_tok = fd.fwd_unembed;
    j->mm_flops_tok = fd.matmul - fd.fwd_unembed;
    j->exp_flops_tok = fd.fwd_experts;
    j->att_dec = fd.attention_fwd;
    j->att_pre = fp.attention_fwd;
    j->kvp = serve_kv_prec(r);
    j->kv_tok = pc_tfm_kv_bytes_per_token(m, j->kvp);
    j->kv_avg = pc_tfm_kv_bytes_per_seq(m, j->kvp, j->ctx);
    j->kv_max = pc_tfm_kv_bytes_per_seq(m, j->kvp, j->seq);
    /* TP: KV heads split up to K ways (replicated beyond; an MLA latent is
     * replicated on every rank); attention DP: each rank holds whole
     * sequences; pp splits the layers. */
    double kv_tp = m->kv_lora_rank > 0 ? 1 : j->tp < K ? j->tp : K;
    j->kv_split = (j->adp ? j->tp : kv_tp) * j->pp;
    serve_weights(r, &p, j);
    j->ws = SERVE_RESERVE_BYTES +
            SERVE_WS_TOKENS * SERVE_WS_ELEMS * j->D * SERVE_ACT_BYTES;
    j->mmp = r->prec;
    j->attp = j->kvp == PC_PREC_FP8 ? PC_PREC_FP8 : PC_PREC_BF16;
    j->peak_mm = pc_chip_flops(chip, j->mmp);
    j->peak_attn = pc_chip_flops(chip, j->attp);
    if (!(j->peak_attn > 0)) j->peak_attn = pc_chip_flops(chip, PC_PREC_BF16);
    if (!(j->peak_mm > 0) || !(j->peak_attn > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "chip %s has no %s FLOP/s", chip->name,
                       pc_prec_name(j->mmp));
    j->hbm = chip->hbm_bytes;
    j->hbm_bw = chip->hbm_bw;
    if (!(j->hbm > 0) || !(j->hbm_bw > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "chip %s has no HBM size or bandwidth", chip->name);
    serve_comm(chip, j);
    if ((j->tp > 1 || j->pp > 1) && !(j->link_bw > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "chip %s has no interconnect bandwidth for tp %g",
                       chip->name, j->tp);
    return PC_OK;
}

/* Expected distinct experts among E that `tokens` tokens route to, each
 * picking k: E (1 - (1 - k/E)^tokens) (tokens' choices independent). */
static double serve_experts_touched(double E, double k, double tokens) {
    if (!(E > 0)) return 0;
    return E * (1 - pow(1 - k / E, tokens));
}

/* KV budget per GPU and the sequences per replica it holds. */
static void serve_capacity(const sjob *j, const scoef *c, pc_serve_detail *d) {
    d->weight_bytes = j->w_fixed + j->w_experts;
    d->workspace_bytes = j->ws;
    double free_b = j->hbm - d->weight_bytes - j->ws;
    d->kv_budget = free_b > 0 ? c->kv_frac * free_b : 0;
    d->kv_bytes_seq = j->kv_max;
    /* every GPU holds its share (1 / kv_split) of each of the replica's sequences */
    d->max_batch_kv = floor(d->kv_budget / (d->kv_bytes_seq / j->kv_split));
    double lim_b = PC_SERVE_MAX_BATCH * j->ranks;
    double lim_t = floor(PC_SERVE_MAX_TOKENS * j->ranks / (1 + j->in / j->out));
    if (lim_t < 1) lim_t = 1; /* long prompts: prefill spreads over several steps */
    double mb = d->max_batch_kv;
    if (lim_b < mb) mb = lim_b;
    if (lim_t < mb) mb = lim_t;
    d->max_batch = mb;
}

/* One engine step at batch B (sequences per replica). */
static void serve_step(const sjob *j, const scoef *c, double B, pc_serve_detail *d) {
    const double G = j->tp * j->pp;
    d->batch = B;
    d->prefill_tokens_step = B * j->in / j->out;
    d->tokens_step = B + d->prefill_tokens_step;
    const double T = d->tokens_step;
    /* compute: matmuls of every token, logits of the sampled ones, attention
     * of the decode tokens over the average context and of the prompts
     * (causal: in^2 / 2 per prompt, B / out prompts per step) */
    double f_mm = (T * j->mm_flops_tok + B * j->head_flops_tok) / G; /* all matmuls */
    double f_att = (B * j->att_dec + B / j->out * j->in * j->att_pre) / G;
    double f_exp = T * j->exp_flops_tok / G;
    d->flops = f_mm + f_att;
    /* memory: weights once (experts the step routes to), KV, activations */
    d->experts_touched = j->moe ? serve_experts_touched(j->E, j->k, T) : 0;
    double w_exp = j->moe ? j->w_experts * d->experts_touched / j->E : 0;
    double w = j->w_fixed + w_exp;
    double kv = (B * j->kv_avg + d->prefill_tokens_step * j->kv_tok) / j->kv_split;
    /* TP: every rank holds the whole residual stream of all T tokens and
     * 1/tp of the rest; attention DP: T/tp tokens whole */
    double act_tok = j->adp ? (j->act_rep + j->act_split) / j->tp : j->act_rep + j->act_split / j->tp;
    double act = T * act_tok * (j->L / j->pp) * SERVE_ACT_BYTES;
    d->bytes = w + kv + act;
    double bw = j->hbm_bw * c->hbm;
    d->t_weights = w / bw;
    d->t_kv = kv / bw;
    double act_moe = act * (j->act_moe / (j->act_rep * (j->adp ? 1 : j->tp) + j->act_split));
    d->t_act = (act - act_moe) / bw + act_moe / (bw * c->moe);
    d->t_memory = d->bytes / bw;
    /* each kernel class is its own roofline and they run one after another:
     * dense matmuls, routed-expert (grouped) matmuls at moe_eff of the dense
     * rate in both FLOPs and bytes, attention */
    double c_dense = (f_mm - f_exp) / (j->peak_mm * c->mm);
    double c_exp = f_exp / (j->peak_mm * c->mm * c->moe);
    double m_dense = j->w_fixed / bw, m_exp = w_exp / (bw * c->moe);
    double c_att = f_att / (j->peak_attn * c->attn);
    d->t_compute = c_dense + c_exp + c_att;
    d->t_mm = (c_dense > m_dense ? c_dense : m_dense) + (c_exp > m_exp ? c_exp : m_exp);
    d->t_attn = c_att > d->t_kv ? c_att : d->t_kv;
    /* communication, not overlapped (TensorRT-LLM runs its collectives in
     * the layer's stream) */
    double link = j->link_bw * c->bw, tc = 0;
    if (j->adp) {
        if (j->ep > 1) { /* dispatch + combine of every routed token copy leaving the GPU */
            double v = T / j->tp * j->k * j->D * SERVE_ACT_BYTES * (j->ep - 1) / j->ep;
            tc += (j->L_moe / j->pp) * 2 * (v / link + j->link_lat);
        }
    } else if (j->tp > 1) { /* ring all-reduce after attention and after the MLP */
        double v = T * j->D * SERVE_ACT_BYTES;
        tc += (j->L / j->pp) * 2 * (2 * (j->tp - 1) / j->tp * v / link + j->link_lat);
    }
    if (j->pp > 1) tc += T * j->D * SERVE_ACT_BYTES / link + j->link_lat; /* stage hand-off */
    d->t_comm = tc;
    d->t_overhead = c->overhead;
    d->t_gpu = d->t_mm + d->t_attn + d->t_act + tc + d->t_overhead;
    /* the host prepares the next step while the GPU runs this one */
    d->t_host = c->seq * B / j->ranks;
    d->t_step = d->t_gpu > d->t_host ? d->t_gpu : d->t_host;
    d->tpot_s = d->t_step;
    /* a prompt gets B in/out prefill tokens a step: out/B steps when B < out */
    d->ttft_s = d->t_step * (j->out > B ? j->out / B : 1);
    d->tokens_per_s = j->replicas * B / d->t_step;
}

/* Candidate batches: every integer up to 64, then steps of 4 %, then bmax;
 * returns > bmax after the last. */
static double serve_next_batch(double b, double bmax) {
    double n = b < 64 ? b + 1 : floor(b * 1.04);
    return n > bmax && b < bmax ? bmax : n;
}

/* Best tokens/s among the integers lo..hi, and the smallest batch there
 * reaching `goal` (0 if none). */
static double serve_scan(const sjob *j, const scoef *c, double lo, double hi, double goal,
                         double *first, pc_serve_detail *d) {
    double top = -1;
    *first = 0;
    for (double b = lo; b <= hi; b++) {
        serve_step(j, c, b, d);
        if (d->tokens_per_s > top) top = d->tokens_per_s;
        if (*first == 0 && d->tokens_per_s >= goal) *first = b;
    }
    return top;
}

/* Throughput-optimal batch in [1, bmax]: the smallest batch within 1e-9 of
 * the best tokens/s (a host-bound plateau is taken at its start). Coarse
 * candidates, every integer between the best one's neighbours, then the
 * first candidate reaching the best and the integers just before it
 * (tokens/s is not monotone once the expert reads saturate). */
static double serve_best_batch(const sjob *j, const scoef *c, double bmax, pc_serve_detail *d) {
    double best_v = -1, lo = 1, hi = 1, prev = 1, first;
    int after_best = 0;
    for (double b = 1; b <= bmax; prev = b, b = serve_next_batch(b, bmax)) {
        serve_step(j, c, b, d);
        if (after_best) hi = b, after_best = 0;
        if (d->tokens_per_s > best_v) best_v = d->tokens_per_s, lo = prev, hi = b, after_best = 1;
    }
    double top = serve_scan(j, c, lo, hi, INFINITY, &first, d);
    if (top > best_v) best_v = top;
    double goal = best_v * (1 - 1e-9);
    prev = 0;
    for (double b = 1; b <= bmax; prev = b, b = serve_next_batch(b, bmax)) {
        serve_step(j, c, b, d);
        if (d->tokens_per_s >= goal) {
            serve_scan(j, c, prev + 1, b, goal, &first, d);
            return first > 0 ? first : b;
        }
    }
    serve_scan(j, c, lo, hi, goal, &first, d);
    return first > 0 ? first : hi;
}

pc_status pc_serve_explain(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                           double batch, pc_serve_detail *out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "serving model: NULL output");
    memset(out, 0, sizeof *out);
    if (!isfinite(batch)) return pc_fail(err, PC_ERR_ARG, "batch must be finite");
    sjob j;
    pc_status st = serve_prepare(run, chip, &j, err);
    if (st) return st;
    scoef c = serve_coefs(cal, j.mmp, j.attp);
    out->tp = run->tp;
    out->pp = run->pp;
    out->ep = (int64_t)j.ep;
    out->replicas = (int64_t)j.replicas;
    out->attention_dp = j.adp;
    out->kv_prec = j.kvp;
    serve_capacity(&j, &c, out);
    if (out->weight_bytes + out->workspace_bytes >= j.hbm)
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "%.1f GB of weights + %.1f GB workspace per GPU do not fit the %.0f GB of "
                       "%s at tp %lld pp %lld",
                       out->weight_bytes / 1e9, out->workspace_bytes / 1e9, j.hbm / 1e9,
                       chip->name, (long long)run->tp, (long long)run->pp);
    if (out->max_batch < 1)
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "the KV cache (%.1f GB per GPU) holds no %g-token sequence", out->kv_budget / 1e9,
                       j.seq);
    double B = batch;
    if (!(B > 0)) {
        if (run->batch > 0) B = run->batch;
        else if (run->concurrency > 0) B = run->concurrency / j.replicas;
    }
    pc_serve_detail cap = *out;
    if (B > 0) {
        /* a stated load beyond what fits queues: the engine runs what fits */
        if (B > cap.max_batch) B = cap.max_batch;
    } else {
        B = serve_best_batch(&j, &c, cap.max_batch, out);
        *out = cap;
    }
    serve_step(&j, &c, B, out);
    return PC_OK;
}

pc_status pc_serve_predict(const pc_run *run, const pc_chip *chip, const pc_calib *cal,
                           pc_run_pred *out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "serving model: NULL output");
    memset(out, 0, sizeof *out);
    pc_status st = serve_check(run, chip, err);
    if (st) return st;
    out->measured = run->output_tokens_per_s;
    out->batch_stated = run->batch > 0 || run->concurrency > 0;
    pc_serve_detail d, di;
    pc_error e2;
    st = pc_serve_explain(run, chip, cal, 0, &d, &e2);
    if (st == PC_ERR_UNSUPPORTED) {
        size_t n = strlen(e2.msg);
        if (n >= sizeof out->why) n = sizeof out->why - 1;
        memcpy(out->why, e2.msg, n); /* the reason, cut to fit */
        out->why[n] = '\0';
        return PC_OK;
    }
    if (st) return pc_fail(err, st, "%s", e2.msg);
    out->expressed = 1;
    out->predicted = d.tokens_per_s;
    out->tokens_per_s = d.tokens_per_s;
    out->ttft_s = d.ttft_s;
    out->tpot_s = d.tpot_s;
    out->batch = d.batch;
    out->replicas = d.replicas;
    out->error = out->measured > 0 ? (out->predicted - out->measured) / out->measured : 0;
    if (pc_serve_explain(run, chip, NULL, 0, &di, &e2) == PC_OK) out->ideal = di.tokens_per_s;
    return PC_OK;
}
