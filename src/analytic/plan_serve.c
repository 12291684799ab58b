/*
 * Serving planner (issue #6 item 6): prefill and decode latency and
 * throughput of a transformer sharded over the chips of a slice by tensor
 * (model) parallelism, its KV cache, the largest batch that fits, the
 * model-parallel limits and the cost per million tokens (scaling_book.md §7;
 * docs/analytic.md "Planning").
 *
 * Decode step (the book's formula plus the TP collectives):
 *   T = T_kv + max(T_math, T_weights, T_comm)
 * with T_kv = KV bytes per chip / HBM BW, T_weights = weight bytes per chip /
 * HBM BW, T_math = FLOPs per chip / (peak x efficiency), T_comm = 2
 * AllReduces of the [batch, D] activations per layer over the slice.
 * Prefill of `batch` prompts of P tokens: max(T_math, T_hbm, T_comm).
 */
#include <math.h>
#include <string.h>

#include "analytic/analytic_internal.h"

pc_serve_opts pc_serve_opts_default(void) {
    pc_serve_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.weight_prec = PC_PREC_BF16;
    o.kv_prec = PC_PREC_COUNT; /* = weight_prec */
    o.act_prec = PC_PREC_BF16;
    o.price_per_hour = -1;
    return o;
}

typedef struct sjob {
    double tp, K, kvh; /* chips, KV heads, ways the KV heads are split */
    double wbytes, kv_tok, S, P, G;
    double kv_seq, kv_seq_p; /* KV bytes of one sequence of S (P) tokens: windows cap it */
    double C, peak, hbm, hbm_bw, price;
    int m_y;
    unsigned mask;
} sjob;

static pc_status serve_prepare(const pc_chip *chip, const pc_tfm_cfg *m, const pc_mesh *slice,
                               const pc_serve_opts *o, sjob *j, pc_error *err) {
    memset(j, 0, sizeof *j);
    if (!chip || !m || !slice || !o) return pc_fail(err, PC_ERR_ARG, "planner: NULL argument");
    if (PC_CHECK_SIZE(err, pc_serve_opts, o)) return PC_ERR_ARG;
    if (!(o->context >= 1) || !isfinite(o->context) || o->context > 1e9)
        return pc_fail(err, PC_ERR_ARG, "context must be between 1 and 1e9 tokens");
    if (!(o->prefill_tokens >= 0) || !isfinite(o->prefill_tokens) || o->prefill_tokens > 1e9 ||
        !(o->decode_tokens >= 0) || !isfinite(o->decode_tokens) || o->decode_tokens > 1e9)
        return pc_fail(err, PC_ERR_ARG, "prefill and decode tokens must be between 0 and 1e9");
    if ((unsigned)o->attention > PC_ATTN_NONE)
        return pc_fail(err, PC_ERR_ARG, "bad attention FLOPs option");
    if ((unsigned)o->convention > PC_CONV_BOOK)
        return pc_fail(err, PC_ERR_ARG, "bad collective convention (exact or book)");
    if (!(o->efficiency >= 0 && o->efficiency <= 1))
        return pc_fail(err, PC_ERR_ARG, "efficiency must be in (0, 1] (0: the default)");
    pc_prec kvp = o->kv_prec == PC_PREC_COUNT ? o->weight_prec : o->kv_prec;
    if ((unsigned)o->weight_prec >= PC_PREC_COUNT || (unsigned)kvp >= PC_PREC_COUNT ||
        (unsigned)o->act_prec >= PC_PREC_COUNT)
        return pc_fail(err, PC_ERR_ARG, "bad precision");
    int64_t tp = pc_mesh_devices(slice);
    int64_t N = m->heads, K = m->kv_heads ? m->kv_heads : m->heads;
    int64_t F = m->experts > 0 ? m->d_ff_expert : m->d_ff;
    if (tp < 1) return pc_fail(err, PC_ERR_ARG, "empty slice");
    if (N % tp || F % tp) {
        char list[160];
        size_t used = 0;
        list[0] = '\0';
        for (int64_t d = 1; d <= N && used + 16 < sizeof list; d++)
            if (N % d == 0 && F % d == 0 && (K % d == 0 || d % K == 0))
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%lld",
                                         used ? ", " : "", (long long)d);
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: %lld-way model parallelism must divide the %lld query heads and the "
                       "MLP width %lld; use one of %s chips",
                       m->name, (long long)tp, (long long)N, (long long)F, list);
    }
    if (K % tp && tp % K)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: %lld chips must divide the %lld KV heads or be a multiple of them "
                       "(each chip holds whole KV heads, or the heads are split then the batch)",
                       m->name, (long long)tp, (long long)K);
    j->tp = (double)tp;
    j->K = (double)K;
    j->kvh = (double)(tp < K ? tp : K);
    pc_param_counts p;
    pc_tfm_params(m, &p);
    j->wbytes = p.total * pc_prec_bytes(o->weight_prec);
    j->kv_tok = pc_tfm_kv_bytes_per_token(m, kvp);
    j->S = o->context;
    j->P = o->prefill_tokens > 0 ? o->prefill_tokens : o->context;
    j->G = o->decode_tokens > 0 ? o->decode_tokens : 512;
    j->kv_seq = pc_tfm_kv_bytes_per_seq(m, kvp, j->S);
    j->kv_seq_p = pc_tfm_kv_bytes_per_seq(m, kvp, j->P);
    /* compute at the weights' precision when the chip has it (int8 x int8), else bf16 */
    j->peak = pc_chip_flops(chip, o->act_prec);
    if (!(j->peak > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "chip %s has no %s FLOP/s", chip->name,
                       pc_prec_name(o->act_prec));
    if (!(chip->hbm_bytes > 0) || !(chip->hbm_bw > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "chip %s has no HBM size or bandwidth", chip->name);
    j->C = j->peak * (o->efficiency > 0 ? o->efficiency : pc_plan_default_efficiency(chip));
    j->hbm = chip->hbm_bytes;
    j->hbm_bw = chip->hbm_bw;
    j->price = o->price_per_hour >= 0 ? o->price_per_hour : chip->price_per_hour;
    for (int i = 0; i < slice->ndims; i++)
        if (slice->size[i] > 1) {
            j->mask |= 1u << i;
            if (!((slice->dcn_mask >> i) & 1)) j->m_y++;
        }
    if (j->m_y < 1) j->m_y = 1;
    return PC_OK;
}

/* The book's decode TP limit M_Y F / (B beta), beta = W_hbm / W_ici (§7). */
static double decode_tp_limit(const pc_chip *chip, const pc_tfm_cfg *model, const sjob *j,
                              double batch) {
    double W = pc_chip_link_bw(chip, chip->kind == PC_CHIP_GPU ? PC_LINK_NVLINK : PC_LINK_ICI);
    double F = (double)(model->experts > 0 ? model->d_ff_expert : model->d_ff);
    if (!(W > 0) || !(batch > 0)) return 0;
    return j->m_y * F / (batch * (j->hbm_bw / W));
}

/* KV bytes on one chip for a batch: split over KV heads, then over the batch. */
static double kv_per_chip(const sjob *j, double batch) {
    double rest = j->tp / j->kvh; /* chips sharing one KV-head group */
    double bsh = batch < rest ? (batch >= 1 ? floor(batch) : 1) : rest;
    return batch * j->kv_seq / (j->kvh * bsh);
}

pc_status pc_plan_serve_setup(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                              const pc_serve_opts *opts, pc_serve_summary *sum, pc_error *err) {
    memset(sum, 0, sizeof *sum);
    sjob j;
    pc_status st = serve_prepare(chip, model, slice, opts, &j, err);
    if (st) return st;
    sum->chips = (int64_t)j.tp;
    sum->kv_head_shards = (int64_t)j.kvh;
    sum->weight_bytes = j.wbytes;
    sum->kv_bytes_per_token = j.kv_tok;
    sum->kv_bytes_per_seq = j.kv_seq;
    sum->hbm_total = j.hbm * j.tp;
    sum->min_chips_weights = (int64_t)ceil(j.wbytes / j.hbm);
    {
        int64_t N = model->heads, K = model->kv_heads ? model->kv_heads : model->heads;
        int64_t F = model->experts > 0 ? model->d_ff_expert : model->d_ff;
        for (int64_t d = sum->min_chips_weights > 0 ? sum->min_chips_weights : 1; d <= N; d++)
            if (N % d == 0 && F % d == 0 && (K % d == 0 || d % K == 0)) {
                sum->min_chips_valid = d;
                break;
            }
    }
    double wchip = j.wbytes / j.tp;
    if (wchip < j.hbm) {
        double lo = 0, hi = 1;
        while (hi < 1e12 && wchip + kv_per_chip(&j, hi) <= j.hbm) lo = hi, hi *= 2;
        while (hi - lo > 1) {
            double mid = floor((lo + hi) / 2);
            if (wchip + kv_per_chip(&j, mid) <= j.hbm)
                lo = mid;
            else
                hi = mid;
        }
        sum->max_batch = (int64_t)lo;
    }
    double W = pc_chip_link_bw(chip, chip->kind == PC_CHIP_GPU ? PC_LINK_NVLINK : PC_LINK_ICI);
    double F = (double)(model->experts > 0 ? model->d_ff_expert : model->d_ff);
    if (W > 0) sum->tp_limit_prefill = j.m_y * F * W / j.peak;
    sum->tp_limit_decode =
        decode_tp_limit(chip, model, &j, sum->max_batch > 0 ? (double)sum->max_batch : 1);
    sum->moe_batch = pc_tfm_moe_critical_batch(model, chip, opts->weight_prec, opts->act_prec);
    sum->efficiency = j.C / j.peak;
    sum->price_per_hour = j.price;
    return PC_OK;
}

static pc_bound argmax3(double a, double b, double c) {
    return a >= b && a >= c ? PC_BOUND_COMPUTE : b >= c ? PC_BOUND_MEMORY : PC_BOUND_COMM;
}

pc_status pc_plan_serve_eval(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                             const pc_serve_opts *opts, double batch, pc_serve_point *o,
                             pc_error *err) {
    memset(o, 0, sizeof *o);
    sjob j;
    pc_status st = serve_prepare(chip, model, slice, opts, &j, err);
    if (st) return st;
    if (!(batch >= 1) || !isfinite(batch) || batch > 1e12 || batch != floor(batch))
        return pc_fail(err, PC_ERR_ARG, "batch must be a whole number between 1 and 1e12");
    o->batch = batch;
    o->mem_weights = j.wbytes / j.tp;
    o->mem_kv = kv_per_chip(&j, batch);
    o->mem_total = o->mem_weights + o->mem_kv;
    o->kv_bytes = batch * j.kv_seq;
    o->fits = o->mem_total <= j.hbm;
    o->tp_limit_decode = decode_tp_limit(chip, model, &j, batch);
    const double L = (double)model->layers, D = (double)model->d_model;
    const double ab = pc_prec_bytes(opts->act_prec);
    pc_coll_cost cc;
    /* decode: one token per sequence against a context of S */
    pc_flop_counts fd, fp;
    int no_attn = opts->attention == PC_ATTN_NONE;
    pc_tfm_flops(model, no_attn ? 0 : j.S, 0, PC_REMAT_NONE, &fd);
    o->dec_kv = o->mem_kv / j.hbm_bw;
    o->dec_weights = o->mem_weights / j.hbm_bw;
    o->dec_math = batch * fd.decode / j.tp / j.C;
    if (j.mask && opts->convention != PC_CONV_BOOK) { /* the book's §7 decode leaves it out */
        st = pc_collective_cost(chip, slice, j.mask, PC_COLL_ALLREDUCE, batch * D * ab, &cc, err);
        if (st) return st;
        o->dec_comm = 2 * L * cc.time;
    }
    double mx = o->dec_math;
    if (o->dec_weights > mx) mx = o->dec_weights;
    if (o->dec_comm > mx) mx = o->dec_comm;
    o->dec_step = o->dec_kv + mx;
    o->dec_kv_bound = o->dec_kv >= mx;
    o->dec_bound =
        o->dec_kv_bound ? PC_BOUND_MEMORY : argmax3(o->dec_math, o->dec_weights, o->dec_comm);
    o->dec_tok_s = batch / o->dec_step;
    o->dec_tok_s_chip = o->dec_tok_s / j.tp;
    o->qps_per_chip = o->dec_tok_s / j.G / j.tp;
    /* prefill: batch prompts of P tokens, causal attention */
    pc_tfm_flops(model, no_attn ? 0 : j.P, opts->attention == PC_ATTN_CAUSAL, PC_REMAT_NONE, &fp);
    double ptok = batch * j.P;
    o->pre_math = ptok * fp.prefill / j.tp / j.C;
    o->pre_hbm = (o->mem_weights + batch * j.kv_seq_p / (j.kvh * (j.tp / j.kvh))) / j.hbm_bw;
    if (j.mask) {
        st = pc_collective_cost_conv(chip, slice, j.mask, PC_COLL_ALLREDUCE, ptok * D * ab,
                                     opts->convention, &cc, err);
        if (st) return st;
        o->pre_comm = 2 * L * cc.time;
    }
    o->pre_time = o->pre_math;
    if (o->pre_hbm > o->pre_time) o->pre_time = o->pre_hbm;
    if (o->pre_comm > o->pre_time) o->pre_time = o->pre_comm;
    o->pre_bound = argmax3(o->pre_math, o->pre_hbm, o->pre_comm);
    o->pre_tok_s = ptok / o->pre_time;
    if (j.price > 0) {
        double usd_s = j.price * j.tp / 3600;
        o->cost_per_mtok_decode = usd_s / o->dec_tok_s * 1e6;
        o->cost_per_mtok_prefill = usd_s / o->pre_tok_s * 1e6;
    }
    return PC_OK;
}
