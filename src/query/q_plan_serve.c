/* The plan serve query (perfcast plan serve): the ideal serving tables after the book, per
 * context, and the calibrated continuous-batching model beside them (docs/json.md). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "perfcast/analytic.h"
#include "perfcast/calib.h"
#include "query/q_internal.h"
#include "query/request.h"

static const char *const SERVE_KEYS[] = {"config",
                                         "preset",
                                         "chip",
                                         "chips_file",
                                         "chips",
                                         "slice",
                                         "context",
                                         "batch",
                                         "prefill_tokens",
                                         "decode_tokens",
                                         "weight_dtype",
                                         "kv_dtype",
                                         "efficiency",
                                         "price_per_chip_hour",
                                         "attention",
                                         "book",
                                         "calibration",
                                         "concurrency",
                                         "replicas",
                                         "tp",
                                         "ep",
                                         "attention_dp",
                                         NULL};

#define MAX_CTX 16

/* What the request asks for. */
typedef struct serve_req {
    const cJSON *config;
    const char *preset, *chip, *chips_file, *slice, *calibration;
    long long chips, tp, replicas, ep; /* 0: not given */
    double ctxs[MAX_CTX];
    int nctx, attention_dp;
    double batch;       /* sequences per replica; 0: the doubling table */
    double concurrency; /* requests in flight over all replicas; 0: not pinned */
    pc_serve_opts o;
} serve_req;

/* What the query works on once the request checks out. */
typedef struct serve_job {
    pc_tfm_cfg m;
    pc_chipdb *db;
    const pc_chip *chip;
    pc_mesh slice, rslice; /* all the chips; one replica's */
    pc_calib *cal;
    const pc_calib *calq; /* NULL: no calibrated block */
    int64_t chips, tp, replicas;
    char warning[sizeof(((pc_slice_note *)0)->text)];
} serve_job;

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

/* A whole count in [1, 1e9] (a number or "8Ki"); *out unchanged when absent or null. */
static pc_status read_whole(const cJSON *o, const char *key, double *out, pc_error *err) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it || cJSON_IsNull(it)) return PC_OK;
    double v = 0;
    pc_status st = pc_qreq_count(o, key, 0, &v, err);
    if (st != PC_OK) return st;
    if (!(v >= 1) || v > 1e9 || v != floor(v))
        return pc_fail(err, PC_ERR_ARG, "'%s' expects a whole number in [1, 1e9], got %g", key, v);
    *out = v;
    return PC_OK;
}

/* 'context': a length or a list of up to 16. */
static pc_status read_contexts(const cJSON *o, serve_req *r, pc_error *err) {
    const cJSON *l;
    int n;
    pc_qreq_list(o, "context", &l, &n, err);
    if (n == 0) return pc_fail(err, PC_ERR_ARG, "give 'context' (e.g. 8192, or [2048, 8192])");
    if (n > MAX_CTX)
        return pc_fail(err, PC_ERR_ARG, "'context' takes up to %d lengths, got %d", MAX_CTX, n);
    for (int i = 0; i < n; i++) {
        cJSON *w = cJSON_CreateObject();
        if (!w) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        cJSON_AddItemReferenceToObject(w, "context", (cJSON *)pc_qreq_item(l, n, i));
        double v = 0;
        pc_status st = read_whole(w, "context", &v, err);
        cJSON_Delete(w);
        if (st != PC_OK) return st;
        if (!(v >= 1)) return pc_fail(err, PC_ERR_ARG, "'context' expects lengths >= 1");
        r->ctxs[i] = v;
    }
    r->nctx = n;
    return PC_OK;
}

/* 'batch': a whole number, or "sweep" (the doubling table). */
static pc_status read_batch(const cJSON *o, serve_req *r, pc_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "batch");
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "sweep")) return PC_OK;
    return read_whole(o, "batch", &r->batch, err);
}

static pc_status read_ways(const cJSON *o, serve_req *r, pc_error *err) {
    static const char *const keys[] = {"chips", "tp", "replicas", "ep"};
    long long *dst[] = {&r->chips, &r->tp, &r->replicas, &r->ep};
    for (int i = 0; i < 4; i++) {
        pc_status st = pc_qreq_int(o, keys[i], 1, 1LL << 30, dst[i], err);
        if (st != PC_OK) return st;
    }
    return PC_OK;
}

static pc_status read_opts(const cJSON *o, serve_req *r, pc_error *err) {
    pc_serve_opts *so = &r->o;
    const char *attn = NULL;
    int book = 0;
    pc_status st;
    if ((st = read_prec(o, "weight_dtype", &so->weight_prec, err)) ||
        (st = read_prec(o, "kv_dtype", &so->kv_prec, err)) ||
        (st = read_whole(o, "prefill_tokens", &so->prefill_tokens, err)) ||
        (st = read_whole(o, "decode_tokens", &so->decode_tokens, err)) ||
        (st = pc_qreq_count(o, "efficiency", 1, &so->efficiency, err)) ||
        (st = pc_qreq_count(o, "price_per_chip_hour", 0, &so->price_per_hour, err)) ||
        (st = pc_qreq_string(o, "attention", &attn, err)) ||
        (st = pc_qreq_bool(o, "book", &book, err)))
        return st;
    if (so->efficiency > 1)
        return pc_fail(err, PC_ERR_ARG, "'efficiency' expects a fraction in (0, 1], got %g",
                       so->efficiency);
    if (cJSON_GetObjectItemCaseSensitive(o, "price_per_chip_hour") &&
        !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "price_per_chip_hour")) &&
        (!(so->price_per_hour >= 0) || so->price_per_hour > 1e6))
        return pc_fail(err, PC_ERR_ARG, "'price_per_chip_hour' expects USD in [0, 1e6], got %g",
                       so->price_per_hour);
    if (attn) {
        int a = pc_attn_flops_parse(attn);
        if (a < 0)
            return pc_fail(err, PC_ERR_ARG, "'attention' '%s' unknown (causal, full, none)", attn);
        so->attention = (pc_attn_flops)a;
    }
    if (book) so->convention = PC_CONV_BOOK;
    return PC_OK;
}

static pc_status read_req(const cJSON *o, serve_req *r, pc_error *err) {
    memset(r, 0, sizeof *r);
    r->o = pc_serve_opts_default();
    r->calibration = "builtin";
    r->config = cJSON_GetObjectItemCaseSensitive(o, "config");
    pc_status st;
    if ((st = pc_qreq_string(o, "preset", &r->preset, err)) ||
        (st = pc_qreq_string(o, "chip", &r->chip, err)) ||
        (st = pc_qreq_string(o, "chips_file", &r->chips_file, err)) ||
        (st = pc_qreq_string(o, "slice", &r->slice, err)) ||
        (st = pc_qreq_string(o, "calibration", &r->calibration, err)) ||
        (st = read_ways(o, r, err)) || (st = read_batch(o, r, err)) ||
        (st = read_whole(o, "concurrency", &r->concurrency, err)) ||
        (st = pc_qreq_bool(o, "attention_dp", &r->attention_dp, err)) ||
        (st = read_opts(o, r, err)))
        return st;
    return PC_OK;
}

/* ---- setup ---------------------------------------------------------------------------- */

/* 'chips' / 'slice' into a checked mesh. */
static pc_status resolve_slice(const serve_req *r, serve_job *j, pc_error *err) {
    if (r->slice) {
        pc_status st = pc_mesh_parse(r->slice, &j->slice, err);
        if (st == PC_OK) st = pc_mesh_check(j->chip, &j->slice, err);
        if (st != PC_OK) {
            char m[sizeof err->msg];
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
    if (r->chips <= 0) return pc_fail(err, PC_ERR_ARG, "give 'chips' or 'slice' (e.g. 'chips': 8)");
    pc_slice_note note;
    if (pc_plan_slice_for_chips_note(j->chip, r->chips, &j->slice, &note, err) != PC_OK) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        return pc_fail(err, PC_ERR_ARG, "'chips' %lld: %s", r->chips, m);
    }
    if (note.warn) snprintf(j->warning, sizeof j->warning, "%s", note.text);
    return PC_OK;
}

/* tp x replicas = chips: 'tp' and 'replicas', either or both; default tp = all chips. */
static pc_status resolve_tp(const serve_req *r, serve_job *j, pc_error *err) {
    int64_t chips = j->chips = pc_mesh_devices(&j->slice);
    if (r->tp > 0 && r->replicas > 0 && r->tp * r->replicas != chips)
        return pc_fail(err, PC_ERR_ARG,
                       "'tp' %lld x 'replicas' %lld = %lld, but there are %lld chips", r->tp,
                       r->replicas, r->tp * r->replicas, (long long)chips);
    long long given = r->tp > 0 ? r->tp : r->replicas;
    if (given > 0 && chips % given)
        return pc_fail(err, PC_ERR_ARG, "'%s' %lld does not divide the %lld chips",
                       r->tp > 0 ? "tp" : "replicas", given, (long long)chips);
    j->tp = r->tp > 0 ? r->tp : r->replicas > 0 ? chips / r->replicas : chips;
    j->replicas = chips / j->tp;
    if ((r->tp > 0 || r->replicas > 0) && j->m.heads % j->tp)
        return pc_fail(err, PC_ERR_ARG,
                       "tensor parallel %lld must divide the %lld query heads of %s; use "
                       "'replicas' R with chips / R dividing them",
                       (long long)j->tp, (long long)j->m.heads, j->m.name);
    if (r->ep > 1 && (j->m.experts <= 0 || j->m.experts % r->ep))
        return pc_fail(err, PC_ERR_ARG,
                       "'ep' %lld: expert parallelism needs a MoE model whose experts it divides "
                       "(%s has %lld)",
                       r->ep, j->m.name, (long long)j->m.experts);
    if (j->replicas <= 1) {
        j->rslice = j->slice;
        return PC_OK;
    }
    if (pc_plan_slice_for_chips(j->chip, j->tp, &j->rslice, err) != PC_OK) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        return pc_fail(err, PC_ERR_ARG, "a replica of %lld chips: %s", (long long)j->tp, m);
    }
    return PC_OK;
}

static pc_status serve_setup(const serve_req *r, serve_job *j, pc_error *err) {
    pc_status st = pc_q_load_config(r->config, r->preset, &j->m, err);
    if (st != PC_OK) return st;
    if (!r->chip) return pc_fail(err, PC_ERR_ARG, "give 'chip' (e.g. \"v5e\")");
    if ((st = pc_q_open_chip(r->chips_file, r->chip, &j->db, &j->chip, err)) ||
        (st = resolve_slice(r, j, err)) || (st = resolve_tp(r, j, err)) ||
        (st = pc_calib_from_spec(r->calibration, &j->cal, err)))
        return st;
    j->calq = pc_calib_is_ideal(j->cal) ? NULL : j->cal;
    return PC_OK;
}

/* ---- the calibrated block ------------------------------------------------------------- */

/* The serving run the request stands for: model parallel over tp chips, chips / tp
 * replicas, P prompt and G generated tokens per request. */
static void cal_run(const serve_req *q, const serve_job *j, const pc_serve_opts *o, double P,
                    double G, pc_run *r) {
    pc_run_serve_init(r);
    snprintf(r->id, sizeof r->id, "plan-serve");
    r->model = j->m;
    snprintf(r->chip_name, sizeof r->chip_name, "%s", j->chip->name);
    r->chips = j->chips;
    r->tp = j->tp;
    r->ep = q->ep > 1 ? q->ep : 1;
    r->attention_dp = q->attention_dp;
    r->input_len = P;
    r->output_len = G;
    r->weight_prec = o->weight_prec;
    r->kv_prec = o->kv_prec; /* not given: the engine's own KV type (docs/analytic.md) */
    /* matmuls run in the weights' type when the chip has fp8 / fp4 units */
    r->prec = o->weight_prec == PC_PREC_FP8 || o->weight_prec == PC_PREC_FP4 ? o->weight_prec
                                                                             : PC_PREC_BF16;
    r->concurrency = q->concurrency;
}

static cJSON *detail_json(const pc_serve_detail *d, int64_t chips) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "batch", d->batch);
    cJSON_AddNumberToObject(o, "max_batch", d->max_batch);
    cJSON_AddNumberToObject(o, "output_tokens_per_s", d->tokens_per_s);
    cJSON_AddNumberToObject(o, "output_tokens_per_s_per_chip", d->tokens_per_s / (double)chips);
    cJSON_AddNumberToObject(o, "ttft_s", d->ttft_s);
    cJSON_AddNumberToObject(o, "tpot_s", d->tpot_s);
    return o;
}

/* The "calibrated" object of one context (null without a calibration). */
static void cal_context(const serve_req *q, const serve_job *j, const pc_serve_opts *so, double P,
                        double G, cJSON *jc) {
    if (!j->calq) {
        cJSON_AddNullToObject(jc, "calibrated");
        return;
    }
    pc_run r;
    pc_serve_detail d, ideal;
    pc_error e;
    pc_error_clear(&e);
    cal_run(q, j, so, P, G, &r);
    double pinned = q->batch > 0         ? q->batch
                    : q->concurrency > 0 ? q->concurrency / (double)j->replicas
                                         : 0;
    cJSON *o = cJSON_AddObjectToObject(jc, "calibrated");
    cJSON_AddStringToObject(o, "calibration", pc_calib_origin(j->cal));
    cJSON_AddNumberToObject(o, "tp", (double)j->tp);
    cJSON_AddNumberToObject(o, "replicas", (double)j->replicas);
    cJSON_AddNumberToObject(o, "ep", (double)(q->ep > 1 ? q->ep : 1));
    cJSON_AddBoolToObject(o, "attention_dp", q->attention_dp);
    int ok = pc_serve_explain(&r, j->chip, j->calq, q->batch, &d, &e) == PC_OK;
    if (!ok) {
        cJSON_AddStringToObject(o, "error", e.msg);
        return;
    }
    if (!(isfinite(d.tokens_per_s) && d.tokens_per_s > 0 && isfinite(d.ttft_s) &&
          isfinite(d.tpot_s))) {
        cJSON_AddStringToObject(o, "error", "no finite throughput for this run");
        return;
    }
    cJSON_AddNumberToObject(o, "batch", d.batch);
    cJSON_AddBoolToObject(o, "batch_chosen", !(pinned > 0));
    if (pinned > 0)
        cJSON_AddNumberToObject(o, "batch_pinned", pinned);
    else
        cJSON_AddNullToObject(o, "batch_pinned");
    cJSON_AddNumberToObject(o, "max_batch", d.max_batch);
    cJSON_AddStringToObject(o, "kv_dtype", pc_prec_name(d.kv_prec));
    cJSON_AddNumberToObject(o, "output_tokens_per_s", d.tokens_per_s);
    cJSON_AddNumberToObject(o, "output_tokens_per_s_per_chip", d.tokens_per_s / (double)j->chips);
    cJSON_AddNumberToObject(o, "ttft_s", d.ttft_s);
    cJSON_AddNumberToObject(o, "tpot_s", d.tpot_s);
    cJSON_AddNumberToObject(o, "step_s", d.t_step);
    /* the ideal bound: the same run with no fitted losses */
    if (pc_serve_explain(&r, j->chip, NULL, q->batch, &ideal, &e) == PC_OK &&
        isfinite(ideal.tokens_per_s))
        cJSON_AddItemToObject(o, "ideal", detail_json(&ideal, j->chips));
    else
        cJSON_AddNullToObject(o, "ideal");
}

/* ---- the ideal tables ------------------------------------------------------------------ */

static const char *bound_str(const pc_serve_point *p, int decode) {
    if (decode && p->dec_kv_bound) return "KV load";
    pc_bound b = decode ? p->dec_bound : p->pre_bound;
    if (b == PC_BOUND_MEMORY) return decode ? "weights" : "HBM";
    return b == PC_BOUND_COMPUTE ? "compute" : "comm";
}

static cJSON *point_json(const pc_serve_point *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "batch", p->batch);
    cJSON_AddBoolToObject(o, "fits", p->fits);
    cJSON_AddNumberToObject(o, "mem_per_chip", p->mem_total);
    cJSON_AddNumberToObject(o, "kv_per_chip", p->mem_kv);
    cJSON_AddNumberToObject(o, "kv_bytes", p->kv_bytes);
    cJSON_AddNumberToObject(o, "tp_limit_decode", p->tp_limit_decode);
    cJSON *d = cJSON_AddObjectToObject(o, "decode");
    cJSON_AddNumberToObject(d, "step", p->dec_step);
    cJSON_AddNumberToObject(d, "kv_load", p->dec_kv);
    cJSON_AddNumberToObject(d, "weight_load", p->dec_weights);
    cJSON_AddNumberToObject(d, "math", p->dec_math);
    cJSON_AddNumberToObject(d, "comm", p->dec_comm);
    cJSON_AddStringToObject(d, "bound", bound_str(p, 1));
    cJSON_AddNumberToObject(d, "tokens_per_s", p->dec_tok_s);
    cJSON_AddNumberToObject(d, "tokens_per_s_per_chip", p->dec_tok_s_chip);
    cJSON_AddNumberToObject(d, "qps_per_chip", p->qps_per_chip);
    cJSON_AddNumberToObject(d, "usd_per_mtok", p->cost_per_mtok_decode);
    cJSON *f = cJSON_AddObjectToObject(o, "prefill");
    cJSON_AddNumberToObject(f, "time", p->pre_time);
    cJSON_AddNumberToObject(f, "math", p->pre_math);
    cJSON_AddNumberToObject(f, "hbm", p->pre_hbm);
    cJSON_AddNumberToObject(f, "comm", p->pre_comm);
    cJSON_AddStringToObject(f, "bound", bound_str(p, 0));
    cJSON_AddNumberToObject(f, "tokens_per_s", p->pre_tok_s);
    cJSON_AddNumberToObject(f, "usd_per_mtok", p->cost_per_mtok_prefill);
    return o;
}

static cJSON *summary_json(const pc_serve_opts *o, const pc_serve_summary *s, double P, double G) {
    cJSON *jc = cJSON_CreateObject();
    cJSON_AddNumberToObject(jc, "context", o->context);
    cJSON_AddNumberToObject(jc, "prefill_tokens", P);
    cJSON_AddNumberToObject(jc, "decode_tokens", G);
    cJSON_AddNumberToObject(jc, "chips", (double)s->chips);
    cJSON_AddNumberToObject(jc, "kv_head_shards", (double)s->kv_head_shards);
    cJSON_AddNumberToObject(jc, "weight_bytes", s->weight_bytes);
    cJSON_AddNumberToObject(jc, "kv_bytes_per_token", s->kv_bytes_per_token);
    cJSON_AddNumberToObject(jc, "kv_bytes_per_seq", s->kv_bytes_per_seq);
    cJSON_AddNumberToObject(jc, "hbm_total", s->hbm_total);
    cJSON_AddNumberToObject(jc, "max_batch", (double)s->max_batch);
    cJSON_AddNumberToObject(jc, "min_chips_for_weights", (double)s->min_chips_weights);
    cJSON_AddNumberToObject(jc, "min_chips_valid", (double)s->min_chips_valid);
    cJSON_AddNumberToObject(jc, "tp_limit_prefill", s->tp_limit_prefill);
    cJSON_AddNumberToObject(jc, "tp_limit_decode", s->tp_limit_decode);
    cJSON_AddNumberToObject(jc, "moe_critical_batch", s->moe_batch);
    cJSON_AddNumberToObject(jc, "efficiency", s->efficiency);
    cJSON_AddNumberToObject(jc, "price_per_chip_hour", s->price_per_hour);
    return jc;
}

/* Where the KV cache per chip grows as large as the weights (linear in the batch): null, or
 * the batch and, when that batch fits, its decode step and tokens/s per chip. */
static void crossover_json(const serve_job *j, const pc_serve_opts *o, int64_t max_batch,
                           cJSON *jc) {
    pc_serve_point p;
    pc_error e;
    if (pc_plan_serve_eval(j->chip, &j->m, &j->rslice, o, 1, &p, &e) != PC_OK || !(p.mem_kv > 0)) {
        cJSON_AddNullToObject(jc, "kv_weights_crossover");
        return;
    }
    double b = ceil(p.mem_weights / p.mem_kv);
    cJSON *x = cJSON_AddObjectToObject(jc, "kv_weights_crossover");
    cJSON_AddNumberToObject(x, "batch", b);
    if (b > (double)max_batch ||
        pc_plan_serve_eval(j->chip, &j->m, &j->rslice, o, b, &p, &e) != PC_OK) {
        cJSON_AddNullToObject(x, "decode_step");
        cJSON_AddNullToObject(x, "tokens_per_s_per_chip");
        return;
    }
    cJSON_AddNumberToObject(x, "decode_step", p.dec_step);
    cJSON_AddNumberToObject(x, "tokens_per_s_per_chip", p.dec_tok_s_chip);
}

/* One context: its summary, table (when the weights fit) and calibrated block; *fits
 * becomes 0 when something does not fit. */
static pc_status serve_context(const serve_req *q, const serve_job *j, const pc_serve_opts *o,
                               cJSON *jctx, int *fits, pc_error *err) {
    pc_serve_summary s;
    pc_status st = pc_plan_serve_setup(j->chip, &j->m, &j->rslice, o, &s, err);
    if (st != PC_OK) return st;
    double P = o->prefill_tokens > 0 ? o->prefill_tokens : o->context;
    double G = o->decode_tokens > 0 ? o->decode_tokens : 512;
    cJSON *jc = summary_json(o, &s, P, G);
    cJSON_AddItemToArray(jctx, jc);
    if (s.max_batch < 1) {
        *fits = 0;
        cal_context(q, j, o, P, G, jc);
        return PC_OK;
    }
    double bl[64];
    int nb = 0;
    if (q->batch > 0) {
        bl[nb++] = q->batch;
    } else {
        for (double b = 1; b < (double)s.max_batch && nb < 62; b *= 2) bl[nb++] = b;
        bl[nb++] = (double)s.max_batch;
    }
    cJSON *rows = cJSON_AddArrayToObject(jc, "batches");
    for (int i = 0; i < nb; i++) {
        pc_serve_point p;
        if ((st = pc_plan_serve_eval(j->chip, &j->m, &j->rslice, o, bl[i], &p, err)) != PC_OK)
            return st;
        cJSON_AddItemToArray(rows, point_json(&p));
        if (!p.fits) *fits = 0;
    }
    cal_context(q, j, o, P, G, jc);
    crossover_json(j, o, s.max_batch, jc);
    return PC_OK;
}

/* The document's top level; the contexts go into *jctx. */
static cJSON *root_json(const serve_req *q, const serve_job *j, cJSON **jctx) {
    const pc_serve_opts *o = &q->o;
    char sl[96] = "", fsl[96] = "";
    size_t u = 0, v = 0;
    for (int i = 0; i < j->rslice.ndims && u + 24 < sizeof sl; i++)
        u += (size_t)snprintf(sl + u, sizeof sl - u, "%s%lld%s", i ? "x" : "",
                              (long long)j->rslice.size[i],
                              (j->rslice.dcn_mask >> i) & 1 ? "(DCN)" : "");
    for (int i = 0; i < j->slice.ndims && v + 24 < sizeof fsl; i++)
        v += (size_t)snprintf(fsl + v, sizeof fsl - v, "%s%lld%s", i ? "x" : "",
                              (long long)j->slice.size[i],
                              (j->slice.dcn_mask >> i) & 1 ? "(DCN)" : "");
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", j->m.name);
    cJSON_AddStringToObject(root, "chip", j->chip->name);
    cJSON_AddStringToObject(root, "slice", fsl);
    cJSON_AddStringToObject(root, "replica_slice", sl);
    cJSON_AddNumberToObject(root, "tp", (double)j->tp);
    cJSON_AddNumberToObject(root, "replicas", (double)j->replicas);
    cJSON_AddStringToObject(root, "calibration", pc_calib_origin(j->cal));
    cJSON_AddStringToObject(root, "weight_dtype", pc_prec_name(o->weight_prec));
    cJSON_AddStringToObject(
        root, "kv_dtype", pc_prec_name(o->kv_prec == PC_PREC_COUNT ? o->weight_prec : o->kv_prec));
    cJSON_AddStringToObject(root, "attention", pc_attn_flops_name(o->attention));
    cJSON_AddStringToObject(root, "convention", pc_coll_conv_name(o->convention));
    *jctx = cJSON_AddArrayToObject(root, "contexts");
    /* what the text needs beside the numbers above (docs/json.md) */
    cJSON_AddNumberToObject(root, "chips", (double)j->chips);
    cJSON_AddNumberToObject(root, "chip_hbm_bytes", j->chip->hbm_bytes);
    cJSON_AddNumberToObject(root, "heads", (double)j->m.heads);
    cJSON_AddNumberToObject(root, "experts", (double)j->m.experts);
    cJSON_AddNumberToObject(root, "experts_per_token", (double)j->m.experts_per_token);
    if (q->batch > 0)
        cJSON_AddNumberToObject(root, "batch", q->batch);
    else
        cJSON_AddNullToObject(root, "batch");
    cJSON *w = cJSON_AddArrayToObject(root, "warnings");
    if (j->warning[0]) cJSON_AddItemToArray(w, cJSON_CreateString(j->warning));
    return root;
}

/* ---- the query -------------------------------------------------------------------------- */

pc_status pc_q_plan_serve(const char *request, cJSON **out, pc_error *err) {
    cJSON *root, *jctx = NULL, *doc = NULL;
    serve_req *q = calloc(1, sizeof *q);
    serve_job *j = calloc(1, sizeof *j);
    pc_status st = q && j ? PC_OK : pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (st == PC_OK) st = pc_qreq_parse(request, "plan_serve", SERVE_KEYS, &root, err);
    if (st != PC_OK) {
        free(q);
        free(j);
        return st;
    }
    int fits = 1;
    if ((st = read_req(root, q, err)) == PC_OK && (st = read_contexts(root, q, err)) == PC_OK &&
        (st = serve_setup(q, j, err)) == PC_OK) {
        doc = root_json(q, j, &jctx);
        pc_serve_opts o = q->o;
        for (int i = 0; i < q->nctx && st == PC_OK; i++) {
            o.context = q->ctxs[i];
            st = serve_context(q, j, &o, jctx, &fits, err);
        }
        cJSON_AddBoolToObject(doc, "fits", fits);
    }
    if (st == PC_OK) {
        *out = doc;
    } else {
        cJSON_Delete(doc);
        pc_q_fail_warning(err, j->warning); /* the document's "warnings", kept */
    }
    pc_calib_free(j->cal);
    pc_chipdb_free(j->db);
    cJSON_Delete(root);
    free(q);
    free(j);
    return st;
}
