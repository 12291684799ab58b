/*
 * Training parallelism planner (issue #6 item 5): searches pipeline x data x
 * FSDP/ZeRO x expert x tensor layouts, rematerialization policies and
 * micro-batch counts for a transformer on a TPU slice or a GPU cluster, and
 * ranks the plans that fit in HBM by their roofline step time
 * (scaling_book.md §4-§6; docs/analytic.md "Planning" states every rule).
 *
 * The inner evaluation (eval_plan) is pure arithmetic plus
 * pc_collective_cost calls: no allocation, no I/O. Per layout (one
 * factorization of the chips) the logical axes are mapped onto the slice's
 * torus axes once; per plan only sizes change.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/calib_internal.h"

/* ---------------- small shared pieces ---------------- */

static const char *const attn_names[] = {"causal", "full", "none"};
const char *pc_attn_flops_name(pc_attn_flops a) {
    return (unsigned)a <= PC_ATTN_NONE ? attn_names[a] : "?";
}
int pc_attn_flops_parse(const char *s) {
    for (int i = 0; s && i <= (int)PC_ATTN_NONE; i++)
        if (pc_ascii_ieq(s, attn_names[i])) return i;
    return -1;
}

static const char *const axis_names[PC_PAR_COUNT] = {"stage", "data", "fsdp", "expert", "tensor"};
const char *pc_par_axis_name(pc_par_axis a) {
    return (unsigned)a < PC_PAR_COUNT ? axis_names[a] : "?";
}

static const char *const part_names[PC_PART_COUNT] = {"compute",
                                                      "memory (HBM)",
                                                      "FSDP AllGather/ReduceScatter",
                                                      "TP AllGather/ReduceScatter",
                                                      "sequence-parallel K/V AllGather",
                                                      "EP AllToAll",
                                                      "pipeline send/recv",
                                                      "pipeline bubble",
                                                      "DP AllReduce",
                                                      "optimizer update (HBM)"};
const char *pc_plan_part_name(pc_plan_part p) {
    return (unsigned)p < PC_PART_COUNT ? part_names[p] : "?";
}

/* ---------------- the prepared job ---------------- */

typedef struct tjob {
    const pc_chip *chip;
    const pc_plan_train_opts *o;
    int gpu;
    double peak, C, hbm, hbm_bw;
    double L, D, N, K, H, V, E, k, F; /* F: MLP width of one expert (dense: d_ff) */
    int moe;
    double P_total, P_expert; /* P_expert: routed experts (sharded over ep) */
    double wb, gb, ab, ob;
    double f_model;                 /* training FLOPs per token without remat (MFU) */
    double f_train[PC_REMAT_COUNT]; /* with the policy's recomputation */
    double units[PC_REMAT_COUNT];   /* saved activation elements per token per layer */
    double refwd[PC_REMAT_COUNT];   /* extra forward passes of the layer (TP comms, weights) */
    double B, T, seqs;
    /* physical slice */
    int nphys;
    int64_t phys[PC_MESH_MAX_AXES];
    signed char pwrap[PC_MESH_MAX_AXES];
    int64_t slices; /* DCN factor */
    int64_t chips;
    double price;
} tjob;

/* Per layout: each logical axis's own little mesh (TPU) or cached GPU costs. */
typedef struct tlayout {
    int64_t a[PC_PAR_COUNT];
    pc_mesh am[PC_PAR_COUNT];
    unsigned physmask[PC_PAR_COUNT]; /* bit j: ICI axis j; bit 31: DCN */
    int span[PC_PAR_COUNT], dcn[PC_PAR_COUNT];
    double gbw[PC_PAR_COUNT][PC_COLL_COUNT], glat[PC_PAR_COUNT][PC_COLL_COUNT];
    double p2p_bw, p2p_lat;
} tlayout;

static pc_status prepare_job(const pc_chip *chip, const pc_tfm_cfg *m, const pc_mesh *slice,
                             const pc_plan_train_opts *o, tjob *j, pc_error *err) {
    memset(j, 0, sizeof *j);
    if (!chip || !m || !slice || !o) return pc_fail(err, PC_ERR_ARG, "planner: NULL argument");
    if (PC_CHECK_SIZE(err, pc_plan_train_opts, o)) return PC_ERR_ARG;
    if (!(o->batch_tokens >= 1) || !isfinite(o->batch_tokens) || o->batch_tokens > 1e15)
        return pc_fail(err, PC_ERR_ARG, "batch tokens must be between 1 and 1e15");
    double T = o->seq > 0 ? o->seq : 4096;
    if (!isfinite(T) || T < 1 || T > 1e9)
        return pc_fail(err, PC_ERR_ARG, "sequence length must be between 1 and 1e9");
    if (o->batch_tokens < T)
        return pc_fail(err, PC_ERR_ARG,
                       "batch of %.0f tokens holds no whole %.0f-token sequence: raise the batch "
                       "or lower the sequence length",
                       o->batch_tokens, T);
    if (!(o->total_tokens >= 0) || !isfinite(o->total_tokens))
        return pc_fail(err, PC_ERR_ARG, "token budget must be finite and >= 0");
    if ((unsigned)o->weight_prec >= PC_PREC_COUNT || (unsigned)o->grad_prec >= PC_PREC_COUNT ||
        (unsigned)o->act_prec >= PC_PREC_COUNT || (unsigned)o->optimizer >= PC_OPT_COUNT ||
        (unsigned)o->attention > PC_ATTN_NONE || (unsigned)o->convention > PC_CONV_BOOK)
        return pc_fail(err, PC_ERR_ARG,
                       "bad planner options (precision, optimizer, attention, convention)");
    if (!(o->efficiency >= 0 && o->efficiency <= 1))
        return pc_fail(err, PC_ERR_ARG, "efficiency must be in (0, 1] (0: the default)");
    if ((o->remat_mask & (1u << PC_REMAT_TENSORS)) &&
        !(o->remat_tensors > 0 && isfinite(o->remat_tensors)))
        return pc_fail(err, PC_ERR_ARG, "remat 'tensors' needs K > 0 tensors per layer");
    if (o->remat_mask >> PC_REMAT_COUNT)
        return pc_fail(err, PC_ERR_ARG, "remat mask names an unknown policy");
    if (o->zero_mask & ~0xEu) return pc_fail(err, PC_ERR_ARG, "ZeRO stages are 1, 2 and 3");
    if (o->micro < 0 || o->micro_batch_size < 0 || o->vp < 0 || o->cp < 0 || o->micro > 1 << 20 ||
        o->micro_batch_size > INT64_C(1) << 40 || o->vp > 1 << 20 || o->cp > 1 << 30)
        return pc_fail(err, PC_ERR_ARG,
                       "pinned micro-batches, micro-batch size, virtual stages and context "
                       "parallel must be >= 1 (0: search / none)");
    j->chip = chip;
    j->o = o;
    j->gpu = chip->kind == PC_CHIP_GPU;
    j->peak = pc_chip_flops(chip, o->act_prec);
    if (!(j->peak > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "chip %s has no %s FLOP/s; pick another act_prec or add flops.%s "
                       "in the chip (pc_chip or chips JSON)",
                       chip->name, pc_prec_name(o->act_prec), pc_prec_name(o->act_prec));
    if (!(chip->hbm_bytes > 0) || !(chip->hbm_bw > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "chip %s has no HBM size or bandwidth", chip->name);
    double eff = o->efficiency > 0 ? o->efficiency : pc_plan_default_efficiency(chip);
    j->C = j->peak * eff;
    j->hbm = chip->hbm_bytes;
    j->hbm_bw = chip->hbm_bw;
    j->L = (double)m->layers, j->D = (double)m->d_model, j->N = (double)m->heads;
    j->K = (double)(m->kv_heads ? m->kv_heads : m->heads);
    j->H = (double)(m->head_dim ? m->head_dim : m->d_model / (m->heads ? m->heads : 1));
    j->V = (double)m->vocab;
    j->moe = m->experts > 0;
    j->E = j->moe ? (double)m->experts : 1;
    j->k = j->moe ? (double)m->experts_per_token : 1;
    j->F = (double)(j->moe ? m->d_ff_expert : m->d_ff);
    pc_param_counts p;
    pc_tfm_params(m, &p);
    j->P_total = p.total;
    if (j->moe && j->E > j->k) {
        double one = (p.mlp - p.mlp_active) / (j->E - j->k); /* all layers, one expert */
        j->P_expert = j->E * one;
    }
    j->wb = pc_prec_bytes(o->weight_prec);
    j->gb = pc_prec_bytes(o->grad_prec);
    j->ab = pc_prec_bytes(o->act_prec);
    j->ob = (o->optimizer == PC_OPT_ADAM           ? 8
             : o->optimizer == PC_OPT_SGD_MOMENTUM ? 4
                                                   : 0) +
            (o->master_weights ? 4 : 0);
    j->T = T;
    j->B = o->batch_tokens;
    j->seqs = j->B / T;
    double seq_f = o->attention == PC_ATTN_NONE ? 0 : T;
    int causal = o->attention == PC_ATTN_CAUSAL;
    for (int r = 0; r < PC_REMAT_COUNT; r++) {
        pc_flop_counts fl;
        pc_tfm_flops(m, seq_f, causal, (pc_remat)r, &fl);
        j->f_train[r] = fl.train_remat;
        if (r == 0) j->f_model = fl.train;
        pc_mem_opts mo = pc_mem_opts_default();
        mo.tokens = 1;
        mo.remat = (pc_remat)r;
        mo.remat_tensors = o->remat_tensors > 0 ? o->remat_tensors : 1;
        pc_train_memory tm;
        pc_status st = pc_tfm_memory(m, &mo, &tm, err);
        if (st) return st;
        j->units[r] = tm.act_elems_per_token_layer;
        j->refwd[r] = r == PC_REMAT_FULL || r == PC_REMAT_TENSORS ? 1 : 0;
    }
    /* the slice */
    j->slices = 1;
    j->chips = pc_mesh_devices(slice);
    if (j->gpu) {
        j->nphys = 0;
    } else {
        for (int i = 0; i < slice->ndims; i++) {
            if ((slice->dcn_mask >> i) & 1) {
                j->slices *= slice->size[i];
                continue;
            }
            if (slice->size[i] <= 1) continue;
            if (slice->wrap[i] < 0)
                return pc_fail(err, PC_ERR_ARG, "slice mesh not resolved: call pc_mesh_check");
            j->phys[j->nphys] = slice->size[i];
            j->pwrap[j->nphys++] = slice->wrap[i];
        }
    }
    j->price = o->price_per_hour >= 0 ? o->price_per_hour : chip->price_per_hour;
    return PC_OK;
}

/* Why a layout does not fit the model; NULL if it does. */
static const char *layout_model_problem(const tjob *j, const pc_tfm_cfg *m, const int64_t *a) {
    int64_t tp = a[PC_PAR_TP], pp = a[PC_PAR_PP], ep = a[PC_PAR_EP];
    int64_t K = m->kv_heads ? m->kv_heads : m->heads;
    int64_t F = j->moe ? m->d_ff_expert : m->d_ff;
    if (m->heads % tp) return "tensor must divide the query heads";
    if (K % tp && tp % K) return "tensor must divide the KV heads or be a multiple of them";
    if (F % tp) return "tensor must divide the MLP width (d_ff)";
    if (pp > m->layers) return "more stages than layers";
    if (ep > 1 && (!j->moe || m->experts % ep)) return "expert must divide the experts (MoE only)";
    double shards = (double)(a[PC_PAR_DP] * a[PC_PAR_FSDP] * ep);
    if (j->B / shards < 1) return "more data shards than tokens in the batch";
    int64_t vp = j->o->vp, cp = j->o->cp;
    if (vp > 1 && pp < 2) return "virtual stages need a pipeline (stage > 1)";
    if (vp > 1 && pp * vp > m->layers) return "stage x virtual stages exceeds the layers";
    if (cp > 1 && (int64_t)shards % cp) return "context parallel must divide the data shards";
    if (cp > 1 && j->seqs * (double)cp / shards < 1)
        return "context parallel leaves a data group without a whole sequence";
    return NULL;
}

/* Maps the logical axes onto the slice and caches what the inner loop needs. */
static void build_layout(const tjob *j, const int64_t *a, tlayout *lay) {
    memset(lay, 0, sizeof *lay);
    memcpy(lay->a, a, sizeof lay->a);
    const pc_chip *c = j->chip;
    if (j->gpu) {
        /* one row-major mesh (stage, data, fsdp, expert, tensor): tensor innermost */
        pc_mesh g;
        memset(&g, 0, sizeof g);
        g.ndims = PC_PAR_COUNT;
        for (int i = 0; i < PC_PAR_COUNT; i++) g.size[i] = a[i], g.wrap[i] = 0;
        for (int x = 0; x < PC_PAR_COUNT; x++) {
            if (a[x] <= 1) continue;
            lay->span[x] = 1;
            for (int op = 0; op < PC_COLL_COUNT; op++) {
                if (op == PC_COLL_REDUCESCATTER) { /* same cost as AllGather on GPUs */
                    lay->gbw[x][op] = lay->gbw[x][PC_COLL_ALLGATHER];
                    lay->glat[x][op] = lay->glat[x][PC_COLL_ALLGATHER];
                    continue;
                }
                pc_coll_cost cc;
                if (pc_collective_cost_conv(c, &g, 1u << x, (pc_coll)op, 1.0, j->o->convention,
                                            &cc, NULL) == PC_OK) {
                    lay->gbw[x][op] = cc.bw_time;
                    lay->glat[x][op] = cc.latency_time;
                } else {
                    lay->gbw[x][op] = INFINITY; /* a link without bandwidth: not priced */
                }
            }
        }
        /* pipeline neighbours: a stage is chips/pp consecutive GPUs */
        int64_t per_stage = j->chips / (a[PC_PAR_PP] > 0 ? a[PC_PAR_PP] : 1);
        if (per_stage >= c->nvlink_domain && c->ib_bw > 0) {
            lay->p2p_bw = c->ib_bw;
            lay->p2p_lat = c->dcn_latency;
        } else {
            lay->p2p_bw = c->nvlink_bw;
            lay->p2p_lat = c->coll_latency;
        }
        return;
    }
    /* TPU: DCN slices go to data, then stage, fsdp, expert, tensor */
    static const int dcn_order[PC_PAR_COUNT] = {PC_PAR_DP, PC_PAR_PP, PC_PAR_FSDP, PC_PAR_EP,
                                                PC_PAR_TP};
    static const int ici_order[PC_PAR_COUNT] = {PC_PAR_TP, PC_PAR_EP, PC_PAR_FSDP, PC_PAR_DP,
                                                PC_PAR_PP};
    int64_t rem[PC_PAR_COUNT];
    memcpy(rem, a, sizeof rem);
    int64_t srem = j->slices;
    int64_t dcn_part[PC_PAR_COUNT] = {1, 1, 1, 1, 1};
    for (int i = 0; i < PC_PAR_COUNT && srem > 1; i++) {
        int x = dcn_order[i];
        int64_t g = pc_gcd64(rem[x], srem);
        dcn_part[x] = g;
        rem[x] /= g;
        srem /= g;
    }
    int64_t prem[PC_MESH_MAX_AXES];
    int split[PC_MESH_MAX_AXES] = {0};
    memcpy(prem, j->phys, sizeof prem);
    int64_t piece[PC_PAR_COUNT][PC_MESH_MAX_AXES];
    memset(piece, 0, sizeof piece);
    for (int i = 0; i < PC_PAR_COUNT; i++) {
        int x = ici_order[i];
        /* a whole remaining torus axis of exactly this size keeps its wraparound */
        for (int d = 0; d < j->nphys && rem[x] > 1; d++)
            if (prem[d] == rem[x] && !split[d] && prem[d] == j->phys[d]) {
                piece[x][d] = rem[x];
                prem[d] = 1;
                rem[x] = 1;
            }
        while (rem[x] > 1) {
            int bd = -1;
            int64_t bg = 1;
            for (int d = 0; d < j->nphys; d++) {
                int64_t g = pc_gcd64(rem[x], prem[d]);
                if (g > bg) bg = g, bd = d;
            }
            if (bd < 0) break; /* cannot happen: the sizes multiply to the slice */
            piece[x][bd] = piece[x][bd] ? piece[x][bd] * bg : bg;
            if (bg != j->phys[bd]) split[bd] = 1;
            prem[bd] /= bg;
            rem[x] /= bg;
        }
    }
    for (int x = 0; x < PC_PAR_COUNT; x++) {
        pc_mesh *m = &lay->am[x];
        memset(m, 0, sizeof *m);
        for (int d = 0; d < j->nphys; d++) {
            if (piece[x][d] <= 1) continue;
            m->size[m->ndims] = piece[x][d];
            m->wrap[m->ndims] =
                (signed char)(piece[x][d] == j->phys[d] && !split[d] ? j->pwrap[d] : 0);
            m->ndims++;
            lay->physmask[x] |= 1u << d;
            lay->span[x]++;
        }
        if (dcn_part[x] > 1) {
            m->size[m->ndims] = dcn_part[x];
            m->wrap[m->ndims] = 0;
            m->dcn_mask |= 1u << m->ndims;
            m->ndims++;
            lay->physmask[x] |= 1u << 31;
            lay->dcn[x] = 1;
        }
    }
    if (lay->dcn[PC_PAR_PP] && !lay->span[PC_PAR_PP]) {
        lay->p2p_bw = c->dcn_bw;
        lay->p2p_lat = c->dcn_latency;
    } else {
        lay->p2p_bw = c->ici_link_bw; /* one link, one way, to the next stage */
        lay->p2p_lat = c->ici_hop_latency;
    }
}

/* Why a layout's collectives cannot be priced (a link the chip has no
 * bandwidth for); NULL if they can. */
static const char *layout_unpriced(const tjob *j, const tlayout *lay, char *buf, size_t cap) {
    const pc_chip *c = j->chip;
    for (int x = 0; x < PC_PAR_COUNT && !j->gpu; x++) {
        if (lay->a[x] <= 1) continue;
        const char *field = lay->dcn[x] && !(c->dcn_bw > 0)      ? "dcn_bw"
                            : lay->span[x] && !(c->ici_link_bw > 0) ? "ici_link_bw"
                                                                    : NULL;
        if (!field) continue;
        snprintf(buf, cap,
                 "chip %s has no %s bandwidth (%s), so layouts with the %s axis over %s cannot "
                 "be priced; set %s in the chip (pc_chip or chips JSON)",
                 c->name, lay->dcn[x] ? "DCN" : "ICI", field, axis_names[x],
                 lay->dcn[x] ? "DCN between slices" : "ICI", field);
        return buf;
    }
    if (lay->a[PC_PAR_PP] > 1 && !(lay->p2p_bw > 0)) {
        snprintf(buf, cap,
                 "chip %s has no bandwidth for the pipeline's sends between stages (%s); set "
                 "it in the chip (pc_chip or chips JSON)",
                 c->name, j->gpu ? "nvlink_bw / ib_bw" : "dcn_bw");
        return buf;
    }
    return NULL;
}

/* Time of one collective of V bytes over logical axis x. */
static double ctime(const tjob *j, const tlayout *lay, int x, pc_coll op, double V) {
    if (lay->a[x] <= 1 || !(V > 0)) return 0;
    if (j->gpu) {
        double bw = V * lay->gbw[x][op], lat = lay->glat[x][op];
        return bw > lat ? bw : lat;
    }
    const pc_mesh *m = &lay->am[x];
    pc_coll_cost cc;
    if (pc_collective_cost_conv(j->chip, m, (1u << m->ndims) - 1, op, V, j->o->convention, &cc,
                                NULL) != PC_OK)
        return INFINITY;
    return cc.time;
}

/* The inner evaluation: memory and step time of one plan. Allocation-free. */
static void eval_plan(const tjob *j, const tlayout *lay, int zero, pc_remat r, int64_t micro,
                      pc_train_plan *pl) {
    const int64_t *a = lay->a;
    memset(pl, 0, sizeof *pl);
    memcpy(pl->axis, a, sizeof pl->axis);
    for (int x = 0; x < PC_PAR_COUNT; x++) pl->span[x] = lay->span[x], pl->dcn[x] = lay->dcn[x];
    pl->zero = zero;
    pl->remat = r;
    pl->micro = micro;
    pl->vp = j->o->vp > 1 ? j->o->vp : 1;
    pl->cp = j->o->cp > 1 ? j->o->cp : 1;
    const double vp = (double)pl->vp, cp = (double)pl->cp;
    const double tp = (double)a[PC_PAR_TP], pp = (double)a[PC_PAR_PP], ep = (double)a[PC_PAR_EP];
    const double fsdp = (double)a[PC_PAR_FSDP], dp = (double)a[PC_PAR_DP];
    const double m = (double)micro, nd = dp * fsdp * ep;
    const double n = nd * tp * pp;
    /* batch: tokens per data shard, rounded up (a real run pads) */
    double b = ceil(j->B / nd);
    double bm = b / m;
    /* whole sequences per micro-batch of a data group (cp shards hold one) */
    double mbs = j->seqs * cp / nd / m;
    pl->micro_batch_size = mbs >= 1 && mbs == floor(mbs) ? (int64_t)mbs : 0;
    pl->tokens_per_shard = b;
    pl->tokens_per_chip = j->B / n;
    /* parameters per chip before FSDP sharding: dense weights over tensor x
     * stage, routed experts also over expert */
    double Pl = (j->P_total - j->P_expert) / (tp * pp) + j->P_expert / (ep * tp * pp);
    /* uneven stages (126 layers over 16): the largest stage holds ceil(L/pp)
     * layers (interleaved: vp chunks of ceil(L/(pp vp))) and sets the pace */
    double Lst = ceil(j->L / (pp * vp)) * vp;
    if (Lst > j->L) Lst = j->L;
    double uneven = Lst / (j->L / pp);
    Pl *= uneven;
    double fs_w = zero == 3 ? fsdp : 1, fs_g = zero >= 2 ? fsdp : 1, fs_o = zero >= 1 ? fsdp : 1;
    pl->mem_weights = Pl * j->wb / fs_w;
    pl->mem_grads = Pl * j->gb / fs_g;
    pl->mem_opt = Pl * j->ob / fs_o;
    double inflight = pp > 1 ? (m < pp ? m : pp) : 1; /* 1F1B: up to pp micro-batches */
    /* interleaved 1F1B: the first stage warms up (p-1)/(p v) more of them
     * (Korthikanti et al. 2022, §4.2.3) */
    if (pp > 1 && vp > 1) inflight *= 1 + (pp - 1) / (pp * vp);
    double act_chunk = j->units[r] * j->ab * Lst * bm / tp;
    pl->mem_act = act_chunk * inflight;
    double trans = bm * j->V * 4 / tp; /* fp32 logits of a chunk (last stage) */
    if (zero == 3 && fsdp > 1) trans += 2 * Pl / Lst * j->wb; /* gathered layer + prefetch */
    if (r != PC_REMAT_NONE) trans += j->units[PC_REMAT_NONE] * j->ab * bm / tp; /* one layer */
    pl->mem_transient = trans;
    pl->mem_total = pl->mem_weights + pl->mem_grads + pl->mem_opt + pl->mem_act + trans;
    pl->fits = pl->mem_total <= j->hbm;

    /* per micro-batch chunk on one chip */
    const double rf = j->refwd[r];
    pl->t_math = bm * j->f_train[r] / (tp * pp) * uneven / j->C;
    double hbm_bytes = Pl * j->wb * (2 + rf) + 2 * Pl * j->gb + 2 * act_chunk;
    pl->t_hbm = hbm_bytes / j->hbm_bw;
    if (fsdp > 1 && zero >= 2) {
        double vw = Pl / Lst * j->wb, vg = Pl / Lst * j->gb; /* one layer */
        double t = ctime(j, lay, PC_PAR_FSDP, PC_COLL_REDUCESCATTER, vg);
        if (zero == 3) t += 2 * ctime(j, lay, PC_PAR_FSDP, PC_COLL_ALLGATHER, vw);
        pl->t_fsdp = Lst * t;
    }
    if (tp > 1) {
        double v = bm * j->D * j->ab; /* the gathered [tokens, D] activation */
        pl->t_tp = Lst * 2 * (2 + rf) *
                   (ctime(j, lay, PC_PAR_TP, PC_COLL_ALLGATHER, v) +
                    ctime(j, lay, PC_PAR_TP, PC_COLL_REDUCESCATTER, v));
    }
    if (j->B / nd < j->T || cp > 1) {
        /* a sequence spans several data shards (or cp pinned: ring attention
         * over cp of them): gather the K and V of its whole sequences per
         * layer, priced over the data axis the shards lie on */
        int x = a[PC_PAR_FSDP] > 1 ? PC_PAR_FSDP : a[PC_PAR_DP] > 1 ? PC_PAR_DP : PC_PAR_EP;
        double kvs = tp < j->K ? tp : j->K;
        double toks = bm * cp > j->T ? bm * cp : j->T;
        double v = toks * 2 * j->K * j->H * j->ab / kvs;
        pl->t_sp = Lst * ((1 + rf) * ctime(j, lay, x, PC_COLL_ALLGATHER, v) +
                          ctime(j, lay, x, PC_COLL_REDUCESCATTER, v));
    }
    if (ep > 1 && j->moe) {
        double v = ep * bm * j->k * j->D * j->ab / tp; /* dispatched tokens of the group */
        pl->t_ep = Lst * (4 + 2 * rf) * ctime(j, lay, PC_PAR_EP, PC_COLL_ALLTOALL, v);
    }
    if (pp > 1) {
        double v = bm * j->D * j->ab / tp;
        /* interleaved: a micro-batch enters and leaves each stage vp times */
        pl->t_pp = vp * (2 * (lay->p2p_bw > 0 ? v / lay->p2p_bw : INFINITY) + 2 * lay->p2p_lat);
    }
    double over = pl->t_math;
    pc_plan_part over_part = PC_PART_COMPUTE;
    if (pl->t_hbm > over) over = pl->t_hbm, over_part = PC_PART_HBM;
    if (pl->t_fsdp > over) over = pl->t_fsdp, over_part = PC_PART_FSDP;
    if (pl->t_tp > over) over = pl->t_tp, over_part = PC_PART_TP;
    if (pl->t_sp > over) over = pl->t_sp, over_part = PC_PART_SP;
    double t_chunk = over + pl->t_ep + pl->t_pp;

    /* end of step: gradient reduction and ZeRO-1/2 weight gathers */
    double t_dp = 0;
    if (fsdp > 1) {
        if (zero == 1) t_dp += ctime(j, lay, PC_PAR_FSDP, PC_COLL_REDUCESCATTER, Pl * j->gb);
        if (zero <= 2) t_dp += ctime(j, lay, PC_PAR_FSDP, PC_COLL_ALLGATHER, Pl * j->wb);
    }
    if (dp > 1) t_dp += ctime(j, lay, PC_PAR_DP, PC_COLL_ALLREDUCE, Pl * j->gb / fs_o);
    if (ep > 1 && j->moe)
        t_dp += ctime(j, lay, PC_PAR_EP, PC_COLL_ALLREDUCE,
                      (j->P_total - j->P_expert) / (tp * pp) * j->gb / fs_o);
    pl->t_dp = t_dp;
    double dp_exposed = t_dp > t_chunk ? t_dp - t_chunk : 0;
    double t_opt = Pl / fs_o * (2 * j->wb + j->gb + 2 * j->ob) / j->hbm_bw;

    pl->part[PC_PART_COMPUTE] = pl->t_math * m;
    if (over_part != PC_PART_COMPUTE) pl->part[over_part] = (over - pl->t_math) * m;
    pl->part[PC_PART_EP] = pl->t_ep * m;
    pl->part[PC_PART_PP] = pl->t_pp * m;
    /* bubble: (p-1)/(v m) of the pipelined time t_chunk m (1F1B: v = 1) */
    double bubble = (pp - 1) / vp;
    pl->part[PC_PART_BUBBLE] = t_chunk * bubble;
    pl->part[PC_PART_DP] = dp_exposed;
    pl->part[PC_PART_OPT] = t_opt;
    pl->step_time = t_chunk * (m + bubble) + dp_exposed + t_opt;
    pl->step_time_upper =
        (pl->t_math + pl->t_hbm + pl->t_fsdp + pl->t_tp + pl->t_sp + pl->t_ep + pl->t_pp) *
            (m + bubble) +
        t_dp + t_opt;
    pl->bottleneck = PC_PART_COMPUTE;
    for (int i = 1; i < PC_PART_COUNT; i++)
        if (pl->part[i] > pl->part[pl->bottleneck]) pl->bottleneck = (pc_plan_part)i;
    pl->mfu = j->B * j->f_model / (n * j->peak * pl->step_time);
    pl->tokens_per_s = j->B / pl->step_time;
    if (j->o->total_tokens > 0) {
        pl->days = j->o->total_tokens / pl->tokens_per_s / 86400;
        pl->cost = pl->days * 24 * n * j->price;
    }
}

/* ---------------- thresholds ---------------- */

static void thresholds(const tjob *j, const pc_tfm_cfg *m, const pc_train_plan *pl,
                       const tlayout *lay, pc_train_thresholds *t) {
    memset(t, 0, sizeof *t);
    const pc_chip *c = j->chip;
    double W;
    if (j->gpu) /* §5 GPU: NVLink in a node, node egress (IB) across nodes */
        W = j->chips > c->nvlink_domain ? pc_chip_link_bw(c, PC_LINK_IB) : c->nvlink_bw;
    else
        W = pc_chip_ici_axis_bw(c);
    t->alpha = W > 0 ? j->peak / W : 0;
    unsigned dmask = 0;
    int mx = 0;
    if (lay) {
        dmask = lay->physmask[PC_PAR_DP] | lay->physmask[PC_PAR_FSDP] | lay->physmask[PC_PAR_EP];
        for (int d = 0; d < 31; d++) mx += (dmask >> d) & 1;
        t->m_y = lay->span[PC_PAR_TP] > 0 ? lay->span[PC_PAR_TP] : 1;
    } else {
        t->m_y = 1;
    }
    if (j->gpu) mx = 1;
    t->m_x = mx > 0 ? mx : 1;
    t->slice_axes = j->gpu || j->nphys < 1 ? 1 : j->nphys;
    double F = j->F;
    t->fsdp_per_chip = t->alpha / t->slice_axes;
    t->fsdp_pod_batch = (double)j->chips * t->fsdp_per_chip;
    t->mixed_per_chip = F > 0 ? t->alpha * t->alpha / (t->m_x * t->m_y * F) : 0;
    t->tp_limit = t->alpha > 0 ? t->m_y * F / t->alpha : 0;
    t->fsdp_opt = F > 0 ? sqrt(j->B / F * ((double)t->m_x / t->m_y) * (double)j->chips) : 0;
    if (j->slices > 1 && !j->gpu)
        t->dcn_per_slice = pc_chip_critical_intensity(c, j->o->act_prec, PC_LINK_DCN);
    pc_mem_opts mo = pc_mem_opts_default();
    mo.tokens = j->B;
    mo.weight_prec = j->o->weight_prec;
    mo.grad_prec = j->o->grad_prec;
    mo.act_prec = j->o->act_prec;
    mo.optimizer = j->o->optimizer;
    mo.master_weights = j->o->master_weights;
    mo.remat = pl ? pl->remat : PC_REMAT_FULL;
    mo.remat_tensors = j->o->remat_tensors > 0 ? j->o->remat_tensors : 1;
    pc_train_memory tm;
    if (pc_tfm_memory(m, &mo, &tm, NULL) == PC_OK) {
        t->job_memory = tm.total;
        t->min_chips_memory = tm.total / j->hbm;
    }
}

/* ---------------- search ---------------- */

pc_plan_train_opts pc_plan_train_opts_default(void) {
    pc_plan_train_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.seq = 4096;
    o.price_per_hour = -1;
    o.attention = PC_ATTN_CAUSAL;
    o.weight_prec = o.grad_prec = o.act_prec = PC_PREC_BF16;
    o.optimizer = PC_OPT_ADAM;
    return o;
}

/* Better = faster; step times within 0.5% (padding, rounding) are a tie,
 * broken by the no-overlap upper bound (the plan with more slack), then by
 * memory. */
#define PLAN_TIE 0.005
static int plan_better(const pc_train_plan *x, const pc_train_plan *y) {
    /* calibrated plans rank by their calibrated step time, ahead of plans the
     * calibrated model cannot express */
    if ((x->calibrated_step > 0) != (y->calibrated_step > 0)) return x->calibrated_step > 0;
    if (x->calibrated_step > 0) {
        double lc = x->calibrated_step < y->calibrated_step ? x->calibrated_step
                                                            : y->calibrated_step;
        if (fabs(x->calibrated_step - y->calibrated_step) > PLAN_TIE * lc)
            return x->calibrated_step < y->calibrated_step;
    }
    double lo = x->step_time < y->step_time ? x->step_time : y->step_time;
    if (fabs(x->step_time - y->step_time) > PLAN_TIE * lo) return x->step_time < y->step_time;
    lo = x->step_time_upper < y->step_time_upper ? x->step_time_upper : y->step_time_upper;
    if (fabs(x->step_time_upper - y->step_time_upper) > PLAN_TIE * lo)
        return x->step_time_upper < y->step_time_upper;
    return x->mem_total < y->mem_total;
}

static int plan_finite(const pc_train_plan *p) {
    return isfinite(p->step_time) && p->step_time > 0 && isfinite(p->step_time_upper) &&
           isfinite(p->mfu) && p->mfu > 0;
}

static void keep_best(pc_train_plan *best, int cap, int *nb, const pc_train_plan *p) {
    if (cap <= 0) return;
    if (*nb == cap && !plan_better(p, &best[cap - 1])) return;
    int i = *nb < cap ? (*nb)++ : cap - 1;
    while (i > 0 && plan_better(p, &best[i - 1])) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = *p;
}

/* Micro-batch counts to try for one layout (ascending), nd data shards.
 * Pinned: opts->micro, or the count that makes micro-batches of
 * opts->micro_batch_size sequences (none if it does not divide). Else every
 * power of two and every divisor of the sequences per data group (cp shards
 * hold one group) up to the group's sequences and max_micro. */
#define MAX_MICRO_LIST 1024
static int micro_list(const tjob *j, double nd, int64_t max_micro, int64_t *out) {
    const pc_plan_train_opts *o = j->o;
    double cp = o->cp > 1 ? (double)o->cp : 1;
    double g = j->seqs * cp / nd; /* sequences per data group */
    int whole = g >= 1 && g == floor(g) && g < 9e15;
    if (o->micro_batch_size > 0) {
        if (!whole || fmod(g, (double)o->micro_batch_size)) return 0;
        double m = g / (double)o->micro_batch_size;
        if (m < 1 || (o->micro > 0 && m != (double)o->micro)) return 0;
        out[0] = (int64_t)m;
        return 1;
    }
    if (o->micro > 0) {
        /* more micro-batches than sequences leaves some empty */
        if ((double)o->micro > (g >= 1 ? floor(g) : 1)) return 0;
        out[0] = o->micro;
        return 1;
    }
    int64_t mmax = g >= 1 ? (int64_t)floor(g) : 1;
    if (mmax > max_micro) mmax = max_micro;
    int64_t gi = whole ? (int64_t)g : 0;
    int n = 0;
    for (int64_t mi = 1; mi <= mmax && n < MAX_MICRO_LIST; mi++)
        if (pc_is_pow2(mi) || (gi && gi % mi == 0)) out[n++] = mi;
    return n;
}

static pc_status check_fixed(const pc_plan_train_opts *o, int64_t chips, pc_error *err) {
    int64_t prod = 1;
    for (int x = 0; x < PC_PAR_COUNT; x++) {
        if (o->fixed[x] < 0)
            return pc_fail(err, PC_ERR_ARG, "axis %s: size must be >= 1", axis_names[x]);
        if (o->fixed[x] > 0) {
            if (chips % o->fixed[x] || (chips / o->fixed[x]) % prod)
                return pc_fail(err, PC_ERR_ARG,
                               "fixed axis sizes do not divide the %lld chips (%s = %lld)",
                               (long long)chips, axis_names[x], (long long)o->fixed[x]);
            prod *= o->fixed[x];
        }
    }
    if (chips % prod)
        return pc_fail(err, PC_ERR_ARG, "fixed axis sizes multiply to %lld, not a divisor of %lld",
                       (long long)prod, (long long)chips);
    return PC_OK;
}

pc_status pc_plan_train(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                        const pc_plan_train_opts *opts, pc_train_plan *best, int nbest,
                        pc_train_search *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    tjob j;
    pc_status st = prepare_job(chip, model, slice, opts, &j, err);
    if (st) return st;
    if ((st = check_fixed(opts, j.chips, err))) return st;
    out->chips = j.chips;
    out->efficiency = j.C / j.peak;
    out->price_per_hour = j.price;
    unsigned rmask = opts->remat_mask ? opts->remat_mask
                                      : (1u << PC_REMAT_NONE) | (1u << PC_REMAT_BIG_MATMULS) |
                                            (1u << PC_REMAT_FULL);
    unsigned zmask = opts->zero_mask ? opts->zero_mask : 0xEu;
    int64_t max_micro = opts->max_micro > 0 ? opts->max_micro : 256;
    int64_t div[PC_MAX_DIVISORS];
    int nd = pc_divisors(j.chips, div);
    const int64_t *fx = opts->fixed;
    int have_least = 0;
    /* the run the calibrated model prices: its plan-independent part once */
    pc_run work;
    if (opts->calibration) pc_plan_run_base(chip, model, slice, opts, &work);
    int64_t mlist[MAX_MICRO_LIST];
    tlayout lay, best_lay;
    int have_best_lay = 0;
    memset(&best_lay, 0, sizeof best_lay);
    for (int ip = 0; ip < nd; ip++) {
        int64_t pp = div[ip];
        if (fx[PC_PAR_PP] && pp != fx[PC_PAR_PP]) continue;
        int64_t r1 = j.chips / pp;
        for (int it = 0; it < nd && div[it] <= r1; it++) {
            int64_t tp = div[it];
            if (r1 % tp || (fx[PC_PAR_TP] && tp != fx[PC_PAR_TP])) continue;
            int64_t r2 = r1 / tp;
            for (int ie = 0; ie < nd && div[ie] <= r2; ie++) {
                int64_t ep = div[ie];
                if (r2 % ep || (fx[PC_PAR_EP] && ep != fx[PC_PAR_EP])) continue;
                if (ep > 1 && !j.moe) break;
                int64_t r3 = r2 / ep;
                for (int i_f = 0; i_f < nd && div[i_f] <= r3; i_f++) {
                    int64_t fsdp = div[i_f];
                    if (r3 % fsdp || (fx[PC_PAR_FSDP] && fsdp != fx[PC_PAR_FSDP])) continue;
                    int64_t dp = r3 / fsdp;
                    if (fx[PC_PAR_DP] && dp != fx[PC_PAR_DP]) continue;
                    int64_t a[PC_PAR_COUNT];
                    a[PC_PAR_PP] = pp, a[PC_PAR_DP] = dp, a[PC_PAR_FSDP] = fsdp;
                    a[PC_PAR_EP] = ep, a[PC_PAR_TP] = tp;
                    out->layouts++;
                    if (layout_model_problem(&j, model, a)) {
                        out->unmapped++;
                        continue;
                    }
                    build_layout(&j, a, &lay);
                    if (layout_unpriced(&j, &lay, out->unpriced_reason,
                                        sizeof out->unpriced_reason)) {
                        out->unmapped++;
                        out->unpriced++;
                        continue;
                    }
                    int nm = micro_list(&j, (double)(dp * fsdp * ep), max_micro, mlist);
                    if (!nm) { /* the pinned micro-batches do not split this layout's batch */
                        out->unmapped++;
                        continue;
                    }
                    for (int z = 0; z <= 3; z++) {
                        if (fsdp > 1 ? !((zmask >> z) & 1) : z != 0) continue;
                        for (int r = 0; r < PC_REMAT_COUNT; r++) {
                            if (!((rmask >> r) & 1)) continue;
                            for (int im = 0; im < nm; im++) {
                                pc_train_plan p;
                                eval_plan(&j, &lay, z, (pc_remat)r, mlist[im], &p);
                                if (!plan_finite(&p)) { /* never a plan: say why */
                                    if (!out->unpriced++)
                                        snprintf(out->unpriced_reason,
                                                 sizeof out->unpriced_reason,
                                                 "a plan's step time is not finite (a link "
                                                 "or rate of chip %s is 0)",
                                                 chip->name);
                                    continue;
                                }
                                out->evaluated++;
                                if (!have_least || p.mem_total < out->least_memory.mem_total) {
                                    out->least_memory = p;
                                    have_least = 1;
                                }
                                if (!p.fits) continue;
                                out->fitting++;
                                pc_plan_calibrate(chip, opts, &work, &p);
                                int was_first = out->nbest == 0 || plan_better(&p, &best[0]);
                                keep_best(best, nbest, &out->nbest, &p);
                                if (was_first && nbest > 0) best_lay = lay, have_best_lay = 1;
                            }
                        }
                    }
                }
            }
        }
    }
    if (out->nbest > 0) {
        thresholds(&j, model, &best[0], have_best_lay ? &best_lay : NULL, &out->thr);
    } else if (have_least) {
        build_layout(&j, out->least_memory.axis, &lay);
        thresholds(&j, model, &out->least_memory, &lay, &out->thr);
    } else {
        thresholds(&j, model, NULL, NULL, &out->thr);
    }
    return PC_OK;
}

pc_status pc_plan_train_eval(const pc_chip *chip, const pc_tfm_cfg *model, const pc_mesh *slice,
                             const pc_plan_train_opts *opts, pc_train_plan *plan, pc_error *err) {
    tjob j;
    pc_status st = prepare_job(chip, model, slice, opts, &j, err);
    if (st) return st;
    int64_t prod = 1;
    for (int x = 0; x < PC_PAR_COUNT; x++) {
        if (plan->axis[x] < 1)
            return pc_fail(err, PC_ERR_ARG, "axis %s: size must be >= 1", axis_names[x]);
        prod *= plan->axis[x];
    }
    if (prod != j.chips)
        return pc_fail(err, PC_ERR_ARG, "axis sizes multiply to %lld, the slice has %lld chips",
                       (long long)prod, (long long)j.chips);
    const char *why = layout_model_problem(&j, model, plan->axis);
    if (why) return pc_fail(err, PC_ERR_INVALID, "layout does not fit %s: %s", model->name, why);
    if ((unsigned)plan->remat >= PC_REMAT_COUNT || plan->zero < 0 || plan->zero > 3 ||
        plan->micro < 1)
        return pc_fail(err, PC_ERR_ARG, "bad remat, ZeRO stage or micro-batch count");
    int zero = plan->axis[PC_PAR_FSDP] > 1 ? plan->zero : 0;
    tlayout lay;
    build_layout(&j, plan->axis, &lay);
    char why_bw[200];
    if (layout_unpriced(&j, &lay, why_bw, sizeof why_bw))
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%s", why_bw);
    eval_plan(&j, &lay, zero, plan->remat, plan->micro, plan);
    if (!plan_finite(plan))
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "the plan's step time is not finite (a link or rate of chip %s is 0)",
                       chip->name);
    if (opts->calibration) {
        pc_run work;
        pc_plan_run_base(chip, model, slice, opts, &work);
        pc_plan_calibrate(chip, opts, &work, plan);
    }
    return PC_OK;
}
