/* The plan train query (perfcast plan train): the search over parallelism plans for
 * training, ranked by the calibrated step time beside the ideal roofline (docs/json.md). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "perfcast/analytic.h"
#include "perfcast/calib.h"
#include "query/q_internal.h"
#include "query/request.h"

static const char *const TRAIN_KEYS[] = {"config",
                                         "preset",
                                         "chip",
                                         "chips_file",
                                         "chips",
                                         "slice",
                                         "batch_tokens",
                                         "seq",
                                         "tokens",
                                         "price_per_chip_hour",
                                         "efficiency",
                                         "attention",
                                         "remat",
                                         "zero",
                                         "dp",
                                         "fsdp",
                                         "tp",
                                         "pp",
                                         "ep",
                                         "max_micro",
                                         "micro",
                                         "micro_batch_size",
                                         "vp",
                                         "cp",
                                         "optimizer",
                                         "master_weights",
                                         "weight_dtype",
                                         "grad_dtype",
                                         "act_dtype",
                                         "top",
                                         "book",
                                         "calibration",
                                         NULL};

/* What the request asks for. */
typedef struct train_req {
    const cJSON *config;
    const char *preset, *chip, *chips_file, *slice, *calibration;
    long long chips, top;
    int have_batch;
    pc_plan_train_opts o;
} train_req;

/* What the query works on, and the search's answer. */
typedef struct train_job {
    pc_tfm_cfg m;
    pc_calib *cal;
    pc_chipdb *db;
    const pc_chip *chip;
    pc_mesh slice;
    char warning[sizeof(((pc_slice_note *)0)->text)];
    pc_train_plan best[100];
    pc_train_search s;
    double secs; /* the search's wall time */
} train_job;

static const char *wrap_str(const pc_chip *c, const pc_mesh *m) {
    if (c->kind == PC_CHIP_GPU) return "NVLink + InfiniBand";
    int any = 0, all = 1;
    for (int i = 0; i < m->ndims; i++) {
        if ((m->dcn_mask >> i) & 1 || m->size[i] <= 1) continue;
        any |= m->wrap[i] == 1;
        all &= m->wrap[i] == 1;
    }
    return all && any ? "wraparound" : any ? "wraparound on some axes" : "no wraparound";
}

static const char *remat_str(pc_remat r, double k, char *buf, size_t cap) {
    if (r == PC_REMAT_TENSORS)
        snprintf(buf, cap, "tensors:%g", k);
    else
        snprintf(buf, cap, "%s", pc_remat_name(r));
    return buf;
}

/* The chosen mesh as a JAX snippet. */
static void jax_snippet(const pc_train_plan *p, const pc_tfm_cfg *m, double seqs, double rk,
                        char *buf, size_t cap) {
    size_t u = 0;
#define OUT(...)                                                                                   \
    do {                                                                                           \
        if (u < cap) u += (size_t)snprintf(buf + u, cap - u, __VA_ARGS__);                         \
    } while (0)
    char shape[128] = "", names[128] = "";
    size_t a = 0, b = 0;
    int n = 0;
    for (int x = 0; x < PC_PAR_COUNT; x++) {
        if (p->axis[x] <= 1) continue;
        a += (size_t)snprintf(shape + a, sizeof shape - a, "%s%lld", n ? ", " : "",
                              (long long)p->axis[x]);
        b += (size_t)snprintf(names + b, sizeof names - b, "%s'%s'", n ? ", " : "",
                              pc_par_axis_name((pc_par_axis)x));
        n++;
    }
    if (!n) snprintf(shape, sizeof shape, "1"), snprintf(names, sizeof names, "'data'");
    const char *S = p->axis[PC_PAR_PP] > 1 ? "'stage'" : "None";
    const char *Fw = p->axis[PC_PAR_FSDP] > 1 && p->zero == 3 ? "'fsdp'" : "None";
    const char *Fo = p->axis[PC_PAR_FSDP] > 1 ? "'fsdp'" : "None";
    const char *T = p->axis[PC_PAR_TP] > 1 ? "'tensor'" : "None";
    const char *E = p->axis[PC_PAR_EP] > 1 ? "'expert'" : "None";
    int64_t K = m->kv_heads ? m->kv_heads : m->heads;
    const char *Tk = p->axis[PC_PAR_TP] > 1 && K % p->axis[PC_PAR_TP] == 0 ? T : "None";
    /* batch axes while they fit the sequences, the rest shard the sequence */
    char bax[96] = "", sax[96] = "";
    size_t ba = 0, sa = 0;
    int nb = 0, ns = 0;
    double prod = 1;
    static const int data_axes[3] = {PC_PAR_DP, PC_PAR_FSDP, PC_PAR_EP};
    for (int i = 0; i < 3; i++) {
        int x = data_axes[i];
        if (p->axis[x] <= 1) continue;
        const char *nm = pc_par_axis_name((pc_par_axis)x);
        if (prod * (double)p->axis[x] <= seqs + 1e-9 && !ns) {
            prod *= (double)p->axis[x];
            ba += (size_t)snprintf(bax + ba, sizeof bax - ba, "%s'%s'", nb++ ? ", " : "", nm);
        } else {
            sa += (size_t)snprintf(sax + sa, sizeof sax - sa, "%s'%s'", ns++ ? ", " : "", nm);
        }
    }
    double shards = (double)(p->axis[PC_PAR_DP] * p->axis[PC_PAR_FSDP] * p->axis[PC_PAR_EP]);
    int chunked = shards > seqs + 1e-9 && ns && nb == 0;
    char bspec[100], sspec[100];
    snprintf(bspec, sizeof bspec, "%s%s%s", nb > 1 ? "(" : "", nb ? bax : "None",
             nb > 1 ? ")" : "");
    snprintf(sspec, sizeof sspec, "%s%s%s", ns > 1 ? "(" : "", ns ? sax : "None",
             ns > 1 ? ")" : "");
    OUT("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n");
    OUT("mesh = jax.make_mesh((%s%s), (%s%s))\n", shape, n == 1 || !n ? "," : "", names,
        n == 1 || !n ? "," : "");
    OUT("# weights, layers stacked on a leading [L] axis%s\n",
        p->axis[PC_PAR_PP] > 1 ? " split over 'stage'" : "");
    OUT("w_q   = P(%s, %s, %s, None)   # [L, D, N, H]\n", S, Fw, T);
    OUT("w_kv  = P(%s, %s, %s, None)   # [L, D, K, H]%s\n", S, Fw, Tk,
        strcmp(Tk, T) ? "  (K < tensor: KV heads replicated)" : "");
    OUT("w_o   = P(%s, %s, None, %s)   # [L, N, H, D]\n", S, T, Fw);
    if (m->experts > 0) {
        OUT("w_in  = P(%s, %s, %s, %s)   # [L, E, D, F] experts\n", S, E, Fw, T);
        OUT("w_out = P(%s, %s, %s, %s)   # [L, E, F, D]\n", S, E, T, Fw);
    } else {
        OUT("w_in  = P(%s, %s, %s)   # [L, D, F]%s\n", S, Fw, T, m->gated ? " (gate and up)" : "");
        OUT("w_out = P(%s, %s, %s)   # [L, F, D]\n", S, T, Fw);
    }
    OUT("embed = P(%s, %s)   # [V, D]\n", T, Fw);
    if (p->axis[PC_PAR_FSDP] > 1 && p->zero < 3)
        OUT("# ZeRO-%d: Adam moments%s use the same specs with %s in place of None on D\n", p->zero,
            p->zero == 2 ? " and gradients" : "", Fo);
    if (chunked) /* one data axis larger than the batch's sequences */
        OUT("x     = P(%s, None, %s)   # activations [%.0f chunks of %.0f tokens, D]: each "
            "sequence split over %.3g shards (ring attention)\n",
            sspec, T, shards, p->tokens_per_shard, shards / seqs);
    else
        OUT("x     = P(%s, %s, %s)   # activations [batch, seq, D]\n", bspec, sspec, T);
    switch (p->remat) {
    case PC_REMAT_NONE: OUT("# remat: none (save every activation)\n"); break;
    case PC_REMAT_BIG_MATMULS:
        OUT("layer = jax.checkpoint(layer, policy=jax.checkpoint_policies."
            "dots_with_no_batch_dims_saveable)\n");
        break;
    case PC_REMAT_FULL:
        OUT("layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)\n");
        break;
    default:
        OUT("layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.save_only_these_names("
            "...))  # %g [tokens, D] tensors per layer\n",
            rk);
    }
    if (p->axis[PC_PAR_PP] > 1)
        OUT("# pipeline: %lld stages, %lld micro-batches per step\n", (long long)p->axis[PC_PAR_PP],
            (long long)p->micro);
    else if (p->micro > 1)
        OUT("# gradient accumulation over %lld micro-batches\n", (long long)p->micro);
#undef OUT
}

static cJSON *plan_json(const pc_train_plan *p, double rk) {
    cJSON *o = cJSON_CreateObject();
    cJSON *ax = cJSON_AddObjectToObject(o, "axes");
    for (int x = 0; x < PC_PAR_COUNT; x++)
        cJSON_AddNumberToObject(ax, pc_par_axis_name((pc_par_axis)x), (double)p->axis[x]);
    cJSON *sp = cJSON_AddObjectToObject(o, "physical_axes");
    for (int x = 0; x < PC_PAR_COUNT; x++)
        cJSON_AddNumberToObject(sp, pc_par_axis_name((pc_par_axis)x), p->span[x]);
    cJSON *dc = cJSON_AddArrayToObject(o, "dcn_axes");
    for (int x = 0; x < PC_PAR_COUNT; x++)
        if (p->dcn[x])
            cJSON_AddItemToArray(dc, cJSON_CreateString(pc_par_axis_name((pc_par_axis)x)));
    cJSON_AddNumberToObject(o, "zero", p->zero);
    char r[32];
    cJSON_AddStringToObject(o, "remat", remat_str(p->remat, rk, r, sizeof r));
    cJSON_AddNumberToObject(o, "micro_batches", (double)p->micro);
    cJSON_AddNumberToObject(o, "micro_batch_size", (double)p->micro_batch_size);
    cJSON_AddNumberToObject(o, "virtual_stages", (double)p->vp);
    cJSON_AddNumberToObject(o, "context_parallel", (double)p->cp);
    cJSON_AddNumberToObject(o, "tokens_per_chip", p->tokens_per_chip);
    cJSON_AddNumberToObject(o, "tokens_per_data_shard", p->tokens_per_shard);
    cJSON *m = cJSON_AddObjectToObject(o, "memory_per_chip");
    cJSON_AddNumberToObject(m, "weights", p->mem_weights);
    cJSON_AddNumberToObject(m, "grads", p->mem_grads);
    cJSON_AddNumberToObject(m, "optimizer", p->mem_opt);
    cJSON_AddNumberToObject(m, "activations", p->mem_act);
    cJSON_AddNumberToObject(m, "transient", p->mem_transient);
    cJSON_AddNumberToObject(m, "total", p->mem_total);
    cJSON_AddBoolToObject(o, "fits", p->fits);
    cJSON *c = cJSON_AddObjectToObject(o, "per_micro_batch");
    cJSON_AddNumberToObject(c, "math", p->t_math);
    cJSON_AddNumberToObject(c, "hbm", p->t_hbm);
    cJSON_AddNumberToObject(c, "fsdp", p->t_fsdp);
    cJSON_AddNumberToObject(c, "tp", p->t_tp);
    cJSON_AddNumberToObject(c, "sp", p->t_sp);
    cJSON_AddNumberToObject(c, "ep", p->t_ep);
    cJSON_AddNumberToObject(c, "pp", p->t_pp);
    cJSON_AddNumberToObject(o, "end_of_step_collectives", p->t_dp);
    static const char *const keys[PC_PART_COUNT] = {
        "compute", "hbm", "fsdp", "tp", "sp", "ep", "pp_p2p", "bubble", "dp", "optimizer"};
    cJSON *pt = cJSON_AddObjectToObject(o, "step_parts");
    for (int i = 0; i < PC_PART_COUNT; i++) cJSON_AddNumberToObject(pt, keys[i], p->part[i]);
    cJSON_AddNumberToObject(o, "step_time", p->step_time);
    cJSON_AddNumberToObject(o, "step_time_no_overlap", p->step_time_upper);
    cJSON_AddNumberToObject(o, "mfu", p->mfu);
    cJSON_AddNumberToObject(o, "tokens_per_s", p->tokens_per_s);
    cJSON_AddNumberToObject(o, "days", p->days);
    cJSON_AddNumberToObject(o, "cost_usd", p->cost);
    cJSON_AddStringToObject(o, "bottleneck", pc_plan_part_name(p->bottleneck));
    return o;
}

static void calibrated_json(cJSON *o, const pc_train_plan *p) {
    if (p->calibrated_step > 0) {
        cJSON_AddNumberToObject(o, "calibrated_step_time", p->calibrated_step);
        cJSON_AddNumberToObject(o, "calibrated_mfu", p->calibrated_mfu);
        /* tokens/s, days and cost follow the step time */
        double r = p->step_time / p->calibrated_step;
        cJSON_AddNumberToObject(o, "calibrated_tokens_per_s", p->tokens_per_s * r);
        cJSON_AddNumberToObject(o, "calibrated_days", p->days / r);
        cJSON_AddNumberToObject(o, "calibrated_cost_usd", p->cost / r);
        cJSON_AddStringToObject(o, "calibrated_bottleneck",
                                pc_step_part_name((pc_step_part)p->calibrated_bottleneck));
    } else {
        cJSON_AddNullToObject(o, "calibrated_step_time");
    }
}

static cJSON *search_json(const pc_train_search *s, double secs) {
    cJSON *js = cJSON_CreateObject();
    cJSON_AddNumberToObject(js, "layouts", (double)s->layouts);
    cJSON_AddNumberToObject(js, "layouts_not_fitting_model", (double)s->unmapped);
    cJSON_AddNumberToObject(js, "plans_evaluated", (double)s->evaluated);
    cJSON_AddNumberToObject(js, "plans_fitting", (double)s->fitting);
    cJSON_AddNumberToObject(js, "not_priced", (double)s->unpriced);
    if (s->unpriced) cJSON_AddStringToObject(js, "not_priced_reason", s->unpriced_reason);
    cJSON_AddNumberToObject(js, "seconds", secs);
    return js;
}

static cJSON *thresholds_json(const pc_train_thresholds *th) {
    cJSON *jt = cJSON_CreateObject();
    cJSON_AddNumberToObject(jt, "alpha", th->alpha);
    cJSON_AddNumberToObject(jt, "slice_axes", th->slice_axes);
    cJSON_AddNumberToObject(jt, "m_x", th->m_x);
    cJSON_AddNumberToObject(jt, "m_y", th->m_y);
    cJSON_AddNumberToObject(jt, "fsdp_critical_tokens_per_chip", th->fsdp_per_chip);
    cJSON_AddNumberToObject(jt, "fsdp_critical_batch", th->fsdp_pod_batch);
    cJSON_AddNumberToObject(jt, "fsdp_tp_critical_tokens_per_chip", th->mixed_per_chip);
    cJSON_AddNumberToObject(jt, "tp_limit", th->tp_limit);
    cJSON_AddNumberToObject(jt, "fsdp_optimal", th->fsdp_opt);
    cJSON_AddNumberToObject(jt, "dcn_critical_tokens_per_slice", th->dcn_per_slice);
    cJSON_AddNumberToObject(jt, "job_memory", th->job_memory);
    cJSON_AddNumberToObject(jt, "min_chips_by_memory", th->min_chips_memory);
    return jt;
}

/* ---- the request ---------------------------------------------------------------------- */

static pc_status read_prec(const cJSON *o, const char *key, pc_prec *out, pc_error *err) {
    const char *s = NULL;
    pc_status st = pc_qreq_string(o, key, &s, err);
    if (st != PC_OK || !s) return st;
    int p = pc_prec_parse(s);
    if (p < 0)
        return pc_fail(err, PC_ERR_ARG, "'%s' '%s' unknown (fp32 bf16 fp16 fp8 int8 int4 fp4)", key,
                       s);
    *out = (pc_prec)p;
    return PC_OK;
}

/* 'remat' ("none,full", "all" or a list of names) and 'zero' ("1,2,3" or a list of stages):
 * a list is read as its items joined by commas. */
static pc_status read_list_str(const cJSON *o, const char *key, char *buf, size_t cap,
                               pc_error *err) {
    const cJSON *l;
    int n;
    buf[0] = 0;
    pc_qreq_list(o, key, &l, &n, err);
    size_t u = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *it = pc_qreq_item(l, n, i);
        if (cJSON_IsString(it))
            u += (size_t)snprintf(buf + u, u < cap ? cap - u : 0, "%s%s", i ? "," : "",
                                  it->valuestring);
        else if (cJSON_IsNumber(it))
            u += (size_t)snprintf(buf + u, u < cap ? cap - u : 0, "%s%g", i ? "," : "",
                                  it->valuedouble);
        else
            return pc_fail(err, PC_ERR_ARG, "'%s' expects a string or a list of them", key);
        if (u >= cap) return pc_fail(err, PC_ERR_ARG, "'%s' is too long", key);
    }
    return PC_OK;
}

static pc_status read_masks(const cJSON *o, pc_plan_train_opts *to, pc_error *err) {
    char buf[256];
    pc_status st = read_list_str(o, "remat", buf, sizeof buf, err);
    if (st != PC_OK) return st;
    if (buf[0] && pc_remat_parse_list(buf, &to->remat_mask, &to->remat_tensors))
        return pc_fail(err, PC_ERR_ARG,
                       "'remat' '%s': give a list of none, big_matmuls, full, tensors:K, or all",
                       buf);
    if ((st = read_list_str(o, "zero", buf, sizeof buf, err)) != PC_OK) return st;
    if (buf[0]) {
        to->zero_mask = 0;
        for (const char *p = buf; *p; p++) {
            if (*p >= '1' && *p <= '3')
                to->zero_mask |= 1u << (*p - '0');
            else if (*p != ',')
                return pc_fail(err, PC_ERR_ARG, "'zero' expects stages like 1,2,3, got '%s'", buf);
        }
        if (!to->zero_mask) return pc_fail(err, PC_ERR_ARG, "'zero' expects stages like 1,2,3");
    }
    return PC_OK;
}

/* The integer keys: fixed axis sizes, max_micro, the pins, top. */
static pc_status read_ints(const cJSON *o, train_req *r, pc_error *err) {
    pc_plan_train_opts *to = &r->o;
    const struct {
        const char *key;
        long long hi;
        int64_t *dst;
    } t[] = {
        {"dp", 1LL << 30, &to->fixed[PC_PAR_DP]},
        {"fsdp", 1LL << 30, &to->fixed[PC_PAR_FSDP]},
        {"tp", 1LL << 30, &to->fixed[PC_PAR_TP]},
        {"pp", 1LL << 30, &to->fixed[PC_PAR_PP]},
        {"ep", 1LL << 30, &to->fixed[PC_PAR_EP]},
        {"max_micro", 1 << 20, &to->max_micro},
        {"micro", 1 << 20, &to->micro},
        {"micro_batch_size", 1 << 20, &to->micro_batch_size},
        {"vp", 1 << 20, &to->vp},
        {"cp", 1LL << 30, &to->cp},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        long long v = (long long)*t[i].dst;
        pc_status st = pc_qreq_int(o, t[i].key, 1, t[i].hi, &v, err);
        if (st != PC_OK) return st;
        *t[i].dst = (int64_t)v;
    }
    pc_status st = pc_qreq_int(o, "chips", 1, 1LL << 30, &r->chips, err);
    if (st == PC_OK) st = pc_qreq_int(o, "top", 1, 100, &r->top, err);
    return st;
}

/* batch_tokens, seq, tokens: numbers or counts ("4Mi", "8Ki", "15T"). */
static pc_status read_counts(const cJSON *o, train_req *r, pc_error *err) {
    pc_plan_train_opts *to = &r->o;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "batch_tokens");
    r->have_batch = b && !cJSON_IsNull(b);
    pc_status st;
    if ((st = pc_qreq_count(o, "batch_tokens", 1, &to->batch_tokens, err)) ||
        (st = pc_qreq_count(o, "seq", 1, &to->seq, err)) ||
        (st = pc_qreq_count(o, "tokens", 0, &to->total_tokens, err)))
        return st;
    if (r->have_batch && (to->batch_tokens < 1 || to->batch_tokens > 1e15))
        return pc_fail(err, PC_ERR_ARG, "'batch_tokens' expects tokens in [1, 1e15], got %g",
                       to->batch_tokens);
    if (to->seq > 1e9 || to->seq != floor(to->seq))
        return pc_fail(err, PC_ERR_ARG, "'seq' expects a whole length <= 1e9, got %g", to->seq);
    if (!(to->total_tokens >= 0) || to->total_tokens > 1e18)
        return pc_fail(err, PC_ERR_ARG, "'tokens' expects a count in [0, 1e18], got %g",
                       to->total_tokens);
    return PC_OK;
}

static pc_status read_choices(const cJSON *o, pc_plan_train_opts *to, pc_error *err) {
    const char *attn = NULL, *opt = NULL;
    int book = 0;
    const cJSON *price = cJSON_GetObjectItemCaseSensitive(o, "price_per_chip_hour");
    pc_status st;
    if ((st = pc_qreq_count(o, "efficiency", 1, &to->efficiency, err)) ||
        (st = pc_qreq_count(o, "price_per_chip_hour", 0, &to->price_per_hour, err)) ||
        (st = pc_qreq_string(o, "attention", &attn, err)) ||
        (st = pc_qreq_string(o, "optimizer", &opt, err)) ||
        (st = pc_qreq_bool(o, "master_weights", &to->master_weights, err)) ||
        (st = pc_qreq_bool(o, "book", &book, err)) ||
        (st = read_prec(o, "weight_dtype", &to->weight_prec, err)) ||
        (st = read_prec(o, "grad_dtype", &to->grad_prec, err)) ||
        (st = read_prec(o, "act_dtype", &to->act_prec, err)))
        return st;
    if (to->efficiency > 1)
        return pc_fail(err, PC_ERR_ARG, "'efficiency' expects a fraction in (0, 1], got %g",
                       to->efficiency);
    if (price && !cJSON_IsNull(price) && (!(to->price_per_hour >= 0) || to->price_per_hour > 1e6))
        return pc_fail(err, PC_ERR_ARG, "'price_per_chip_hour' expects USD in [0, 1e6], got %g",
                       to->price_per_hour);
    if (attn) {
        int a = pc_attn_flops_parse(attn);
        if (a < 0)
            return pc_fail(err, PC_ERR_ARG, "'attention' '%s' unknown (causal, full, none)", attn);
        to->attention = (pc_attn_flops)a;
    }
    if (opt) {
        if (!strcmp(opt, "adam") || !strcmp(opt, "adamw"))
            to->optimizer = PC_OPT_ADAM;
        else if (!strcmp(opt, "momentum"))
            to->optimizer = PC_OPT_SGD_MOMENTUM;
        else if (!strcmp(opt, "sgd"))
            to->optimizer = PC_OPT_SGD;
        else
            return pc_fail(err, PC_ERR_ARG, "'optimizer' '%s' unknown (adam, momentum, sgd)", opt);
    }
    if (book) to->convention = PC_CONV_BOOK;
    return PC_OK;
}

static pc_status read_req(const cJSON *o, train_req *r, pc_error *err) {
    memset(r, 0, sizeof *r);
    r->o = pc_plan_train_opts_default();
    r->calibration = "builtin";
    r->top = 10;
    r->config = cJSON_GetObjectItemCaseSensitive(o, "config");
    pc_status st;
    if ((st = pc_qreq_string(o, "preset", &r->preset, err)) ||
        (st = pc_qreq_string(o, "chip", &r->chip, err)) ||
        (st = pc_qreq_string(o, "chips_file", &r->chips_file, err)) ||
        (st = pc_qreq_string(o, "slice", &r->slice, err)) ||
        (st = pc_qreq_string(o, "calibration", &r->calibration, err)) ||
        (st = read_ints(o, r, err)) || (st = read_counts(o, r, err)) ||
        (st = read_choices(o, &r->o, err)) || (st = read_masks(o, &r->o, err)))
        return st;
    return PC_OK;
}

/* ---- setup and search ------------------------------------------------------------------- */

/* 'chips' / 'slice' into a checked mesh. */
static pc_status resolve_slice(const train_req *r, train_job *j, pc_error *err) {
    char m[sizeof err->msg];
    if (r->slice) {
        pc_status st = pc_mesh_parse(r->slice, &j->slice, err);
        if (st == PC_OK) st = pc_mesh_check(j->chip, &j->slice, err);
        if (st != PC_OK) {
            snprintf(m, sizeof m, "%s", err->msg);
            return pc_fail(err, PC_ERR_ARG, "'slice' %s: %s", r->slice, m);
        }
        long long n = (long long)pc_mesh_devices(&j->slice);
        if (r->chips > 0 && r->chips != n)
            return pc_fail(err, PC_ERR_ARG,
                           "'slice' %s has %lld chips but 'chips' says %lld; give one of them, "
                           "or make them agree",
                           r->slice, n, r->chips);
        return PC_OK;
    }
    if (r->chips <= 0)
        return pc_fail(err, PC_ERR_ARG, "give 'chips' or 'slice' (e.g. 'chips': 8960)");
    pc_slice_note note;
    if (pc_plan_slice_for_chips_note(j->chip, r->chips, &j->slice, &note, err) != PC_OK) {
        snprintf(m, sizeof m, "%s", err->msg);
        return pc_fail(err, PC_ERR_ARG, "'chips' %lld: %s", r->chips, m);
    }
    if (note.warn) snprintf(j->warning, sizeof j->warning, "%s", note.text);
    return PC_OK;
}

/* The batch must split into the pinned micro-batches and hold a sequence. */
static pc_status check_batch(const pc_plan_train_opts *o, pc_error *err) {
    if (o->micro > 0 && o->micro_batch_size > 0) {
        double seqs = o->batch_tokens / o->seq;
        double per = (double)o->micro * (double)o->micro_batch_size;
        if (seqs != floor(seqs) || fmod(seqs, per) != 0)
            return pc_fail(err, PC_ERR_ARG,
                           "'micro' %lld x 'micro_batch_size' %lld = %.0f sequences per data "
                           "shard does not divide the batch's %.6g sequences",
                           (long long)o->micro, (long long)o->micro_batch_size, per, seqs);
    }
    if (o->batch_tokens < o->seq)
        return pc_fail(err, PC_ERR_ARG,
                       "'batch_tokens' %.0f is less than one %.0f-token sequence; raise it or "
                       "lower 'seq'",
                       o->batch_tokens, o->seq);
    return PC_OK;
}

static pc_status train_setup(train_req *r, train_job *j, pc_error *err) {
    pc_plan_train_opts *o = &r->o;
    if (o->vp > 1 && o->fixed[PC_PAR_PP] == 1)
        return pc_fail(err, PC_ERR_ARG,
                       "'vp' %lld needs a pipeline: 'pp' 1 has no stages to interleave",
                       (long long)o->vp);
    pc_status st = pc_q_load_config(r->config, r->preset, &j->m, err);
    if (st != PC_OK) return st;
    if (!r->chip) return pc_fail(err, PC_ERR_ARG, "give 'chip' (e.g. \"v5p\")");
    if (!r->have_batch)
        return pc_fail(err, PC_ERR_ARG, "give 'batch_tokens' (e.g. \"4Mi\" = 1024 x 4096 tokens)");
    if ((st = pc_calib_from_spec(r->calibration, &j->cal, err)) != PC_OK) return st;
    o->calibration = pc_calib_is_ideal(j->cal) ? NULL : j->cal;
    if ((st = pc_q_open_chip(r->chips_file, r->chip, &j->db, &j->chip, err)) ||
        (st = resolve_slice(r, j, err)) || (st = check_batch(o, err)))
        return st;
    return PC_OK;
}

static pc_status train_search(const train_req *r, train_job *j, pc_error *err) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pc_status st =
        pc_plan_train(j->chip, &j->m, &j->slice, &r->o, j->best, (int)r->top, &j->s, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    j->secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return st;
}

/* ---- the document ------------------------------------------------------------------------ */

static cJSON *train_doc(const train_req *r, const train_job *j) {
    const pc_plan_train_opts *o = &r->o;
    const pc_train_search *s = &j->s;
    char sl[96] = "";
    size_t u = 0;
    for (int i = 0; i < j->slice.ndims && u + 24 < sizeof sl; i++)
        u += (size_t)snprintf(sl + u, sizeof sl - u, "%s%lld%s", i ? "x" : "",
                              (long long)j->slice.size[i],
                              (j->slice.dcn_mask >> i) & 1 ? "(DCN)" : "");
    pc_param_counts pcnt;
    pc_tfm_params(&j->m, &pcnt);
    double seqs = o->batch_tokens / o->seq;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "model", j->m.name);
    cJSON_AddNumberToObject(d, "params", pcnt.total);
    cJSON_AddStringToObject(d, "chip", j->chip->name);
    cJSON_AddNumberToObject(d, "chips", (double)s->chips);
    cJSON_AddStringToObject(d, "slice", sl);
    cJSON_AddNumberToObject(d, "batch_tokens", o->batch_tokens);
    cJSON_AddNumberToObject(d, "seq", o->seq);
    cJSON_AddNumberToObject(d, "total_tokens", o->total_tokens);
    cJSON_AddNumberToObject(d, "efficiency", s->efficiency);
    cJSON_AddStringToObject(d, "calibration", pc_calib_origin(j->cal));
    cJSON_AddNumberToObject(d, "price_per_chip_hour", s->price_per_hour);
    cJSON_AddStringToObject(d, "attention", pc_attn_flops_name(o->attention));
    cJSON_AddStringToObject(d, "convention", pc_coll_conv_name(o->convention));
    cJSON_AddItemToObject(d, "search", search_json(s, j->secs));
    cJSON_AddItemToObject(d, "thresholds", thresholds_json(&s->thr));
    cJSON *jp = cJSON_AddArrayToObject(d, "plans");
    for (int i = 0; i < s->nbest; i++) {
        cJSON *pj = plan_json(&j->best[i], o->remat_tensors);
        calibrated_json(pj, &j->best[i]);
        if (i == 0) {
            char snip[4096];
            jax_snippet(&j->best[0], &j->m, seqs, o->remat_tensors, snip, sizeof snip);
            cJSON_AddStringToObject(pj, "jax", snip);
        }
        cJSON_AddItemToArray(jp, pj);
    }
    if (!s->nbest && s->evaluated)
        cJSON_AddItemToObject(d, "least_memory_plan",
                              plan_json(&s->least_memory, o->remat_tensors));
    else
        cJSON_AddNullToObject(d, "least_memory_plan"); /* one shape (docs/json.md) */
    /* what the text needs beside the numbers above (docs/json.md) */
    cJSON_AddStringToObject(d, "chip_kind", j->chip->kind == PC_CHIP_GPU ? "gpu" : "tpu");
    cJSON_AddNumberToObject(d, "chip_hbm_bytes", j->chip->hbm_bytes);
    cJSON_AddNumberToObject(d, "nvlink_domain", (double)j->chip->nvlink_domain);
    cJSON_AddNumberToObject(d, "peak_flops", pc_chip_flops(j->chip, o->act_prec));
    cJSON_AddStringToObject(d, "act_dtype", pc_prec_name(o->act_prec));
    cJSON_AddStringToObject(d, "links", wrap_str(j->chip, &j->slice));
    cJSON_AddBoolToObject(d, "calibrated", o->calibration != NULL);
    cJSON_AddBoolToObject(d, "pinned",
                          o->micro > 0 || o->micro_batch_size > 0 || o->vp > 1 || o->cp > 1);
    cJSON *w = cJSON_AddArrayToObject(d, "warnings");
    if (j->warning[0]) cJSON_AddItemToArray(w, cJSON_CreateString(j->warning));
    return d;
}

/* ---- the query -------------------------------------------------------------------------- */

pc_status pc_q_plan_train(const char *request, cJSON **out, pc_error *err) {
    cJSON *root;
    train_req *r = calloc(1, sizeof *r);
    train_job *j = calloc(1, sizeof *j);
    pc_status st = r && j ? PC_OK : pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (st == PC_OK) st = pc_qreq_parse(request, "plan_train", TRAIN_KEYS, &root, err);
    if (st != PC_OK) {
        free(r);
        free(j);
        return st;
    }
    if ((st = read_req(root, r, err)) == PC_OK && (st = train_setup(r, j, err)) == PC_OK &&
        (st = train_search(r, j, err)) == PC_OK) {
        *out = train_doc(r, j);
        if (!*out) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    if (st != PC_OK) pc_q_fail_warning(err, j->warning); /* the document's "warnings", kept */
    pc_chipdb_free(j->db);
    pc_calib_free(j->cal);
    cJSON_Delete(root);
    free(r);
    free(j);
    return st;
}
