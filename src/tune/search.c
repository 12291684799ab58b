/*
 * pc_tune_search: a batched local and evolutionary search over a space's
 * choice vectors with any scorer (perfcast/tune.h). Each round fills one
 * batch: single-choice moves of the best (a cursor walks the variables),
 * mutations and crossovers of the elites, and the best with every improving
 * move of the last round applied. Seen vectors are skipped by hash.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "io/io_internal.h"
#include "tune/tune_internal.h"

#define ELITES_MIN 16
#define EXHAUSTIVE_MAX 200000 /* tile spaces up to this size are enumerated */

static const char *const stop_names[PC_TUNE_STOP_COUNT] = {"budget", "converged", "exhausted",
                                                           "max_scored"};

const char *pc_tune_stop_name(pc_tune_stop s) {
    return (unsigned)s < PC_TUNE_STOP_COUNT ? stop_names[s] : NULL;
}

pc_status pc_tune_stop_parse(const char *name, pc_tune_stop *out) {
    for (int i = 0; i < PC_TUNE_STOP_COUNT; i++)
        if (name && !strcmp(name, stop_names[i])) {
            *out = (pc_tune_stop)i;
            return PC_OK;
        }
    return PC_ERR_ARG;
}

pc_tune_opts pc_tune_opts_default(void) {
    pc_tune_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.top_k = 5;
    o.budget_s = 10.0;
    o.seed = 1;
    o.batch = 256;
    o.max_scored = 0;
    o.patience = 40;
    o.max_inputs = 4096;
    o.risk = PC_TUNE_DEFAULT_RISK;
    o.max_changes = PC_TUNE_DEFAULT_MAX_CHANGES;
    o.tile_max_changes = PC_TUNE_AUTO;
    o.tile_new_sizes = PC_TUNE_AUTO;
    o.tile_risk = PC_TUNE_DEFAULT_TILE_RISK;
    o.max_memory = PC_MEMORY_AUTO;
    return o;
}

void pc_tune_result_clear(pc_tune_result *r) {
    if (!r) return;
    free(r->configs);
    free(r->scores);
    r->configs = NULL;
    r->scores = NULL;
    r->k = 0;
}

/* ---- state ---------------------------------------------------------------- */

typedef struct hset {
    uint64_t *slot;
    size_t cap, n;
} hset;

static uint64_t hash_ch(const int32_t *ch, int64_t n) {
    uint64_t h = UINT64_C(14695981039346656037);
    const unsigned char *b = (const unsigned char *)ch;
    for (size_t i = 0; i < (size_t)n * sizeof *ch; i++) h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h ? h : 1;
}

/* 1 if h was new (added), 0 if present, -1 out of memory. */
static int hset_add(hset *s, uint64_t h) {
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        uint64_t *slot = calloc(cap, sizeof *slot);
        if (!slot) return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                for (size_t k = s->slot[i] & (cap - 1);; k = (k + 1) & (cap - 1))
                    if (!slot[k]) {
                        slot[k] = s->slot[i];
                        break;
                    }
        free(s->slot);
        s->slot = slot, s->cap = cap;
    }
    for (size_t k = h & (s->cap - 1);; k = (k + 1) & (s->cap - 1)) {
        if (s->slot[k] == h) return 0;
        if (!s->slot[k]) {
            s->slot[k] = h;
            s->n++;
            return 1;
        }
    }
}

typedef struct search {
    const pc_tune_space *sp;
    const pc_tune_opts *o;
    pc_tune_score_fn score;
    void *ctx;
    int64_t nv, B;
    hset seen;
    uint64_t rng;
    /* the batch */
    int32_t *cand; /* B x nv */
    float *rows;   /* B x width */
    double *sc;
    int64_t nb;
    int64_t *move_var; /* per candidate: the variable of a single move of the best, or -1 */
    int32_t *move_ch;
    /* elites, best first */
    int64_t ne, ecap;
    int32_t *elite; /* ecap x nv */
    double *esc;
    /* improving single moves of the last round */
    int64_t *imp_var;
    int32_t *imp_ch;
    int64_t nimp;
    int64_t cursor, scored;
    int64_t *idx; /* nv: scratch of the trust region */
    int32_t *in;  /* tile: the graph's valid configs' choices (n_in x nv), the region's anchors */
    int64_t n_in;
    size_t in_cap; /* int32 entries */
    struct timespec t0;
} search;

static double elapsed(const search *s) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - s->t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - s->t0.tv_nsec);
}

static uint64_t rnd(search *s, uint64_t n) { return n ? pc_splitmix64(&s->rng) % n : 0; }

/*
 * The trust region. Layout: at most max_changes (> 0) variables away from the
 * default (choice 0). Tile (tile_max_changes >= 0): at most that many bounds
 * away from the nearest of the graph's configs (s->in, n_in rows; none: no
 * region). radius() is -1 without a region.
 */
static int64_t radius(const search *s) {
    if (s->sp->kind == PC_KIND_LAYOUT) return s->o->max_changes > 0 ? s->o->max_changes : -1;
    if (s->n_in < 1) return -1;
    return s->o->tile_max_changes == PC_TUNE_AUTO ? 0 : s->o->tile_max_changes;
}

/* The anchor of ch: NULL for the default (all choice 0), or the nearest input. */
static const int32_t *anchor(const search *s, const int32_t *ch) {
    if (s->sp->kind == PC_KIND_LAYOUT) return NULL;
    const int32_t *best = s->in;
    int64_t bd = INT64_MAX;
    for (int64_t i = 0; i < s->n_in; i++) {
        const int32_t *a = s->in + i * s->nv;
        int64_t d = 0;
        for (int64_t x = 0; x < s->nv && d < bd; x++) d += ch[x] != a[x];
        if (d < bd) bd = d, best = a;
    }
    return best;
}

/* Variables of ch away from the anchor a (NULL: the default). */
static int64_t changes(const search *s, const int32_t *ch, const int32_t *a) {
    int64_t d = 0;
    for (int64_t x = 0; x < s->nv; x++) d += ch[x] != (a ? a[x] : 0);
    return d;
}

static int inside(const search *s, const int32_t *ch) {
    int64_t R = radius(s);
    return R < 0 || changes(s, ch, anchor(s, ch)) <= R;
}

/* Into the trust region: while more than the radius's variables are away
   from the anchor, a random one of them (never `keep`, the variable just
   moved) goes back to the anchor's choice. */
static void clamp(search *s, int32_t *ch, int64_t keep) {
    int64_t R = radius(s), d = 0;
    if (R < 0) return;
    const int32_t *a = anchor(s, ch);
    int64_t left = changes(s, ch, a);
    if (left <= R) return;
    for (int64_t x = 0; x < s->nv; x++)
        if (ch[x] != (a ? a[x] : 0) && x != keep) s->idx[d++] = x;
    for (; left > R && d > 0; left--) {
        int64_t i = (int64_t)rnd(s, (uint64_t)d);
        ch[s->idx[i]] = a ? a[s->idx[i]] : 0;
        s->idx[i] = s->idx[--d];
    }
}

/* Adds ch (moved into the trust region) to the batch if unseen; 1 added, 0 seen,
   -1 out of memory. */
static int push(search *s, const int32_t *ch, int64_t mvar, int32_t mch) {
    int32_t *slot = s->cand + s->nb * s->nv;
    memcpy(slot, ch, (size_t)s->nv * sizeof *ch);
    clamp(s, slot, mvar);
    if (mvar >= 0 && slot[mvar] != mch) mvar = -1;
    int r = hset_add(&s->seen, hash_ch(slot, s->nv));
    if (r <= 0) return r;
    s->move_var[s->nb] = mvar;
    s->move_ch[s->nb] = mch;
    s->nb++;
    return 1;
}

static void elite_insert(search *s, const int32_t *ch, double score) {
    if (s->ne == s->ecap && !(score < s->esc[s->ne - 1])) return;
    int64_t at = s->ne < s->ecap ? s->ne++ : s->ne - 1;
    while (at > 0 && score < s->esc[at - 1]) { /* ties keep the earlier one first */
        s->esc[at] = s->esc[at - 1];
        memcpy(s->elite + at * s->nv, s->elite + (at - 1) * s->nv, (size_t)s->nv * sizeof *ch);
        at--;
    }
    s->esc[at] = score;
    memcpy(s->elite + at * s->nv, ch, (size_t)s->nv * sizeof *ch);
}

/* pc_tune_opts.best: the best proposal held after a scored batch. */
static void report_best(const search *s) {
    if (s->o->best) s->o->best(s->o->best_user, s->ne ? s->esc[0] : INFINITY, s->scored);
}

/* Scores the batch and keeps the best; *improved when the best got better. */
static pc_status flush(search *s, int *improved, pc_error *err) {
    if (!s->nb) return PC_OK;
    int64_t w = s->sp->width;
    for (int64_t i = 0; i < s->nb; i++) tn_materialize(s->sp, s->cand + i * s->nv, s->rows + i * w);
    pc_status st = s->score(s->ctx, s->rows, s->nb, s->sc, err);
    if (st) return st;
    double before = s->ne ? s->esc[0] : INFINITY;
    s->nimp = 0;
    for (int64_t i = 0; i < s->nb; i++) {
        double v = s->sc[i];
        if (isnan(v)) v = INFINITY;
        if (s->move_var[i] >= 0 && v < before) {
            s->imp_var[s->nimp] = s->move_var[i];
            s->imp_ch[s->nimp++] = s->move_ch[i];
        }
        elite_insert(s, s->cand + i * s->nv, v);
    }
    s->scored += s->nb;
    s->nb = 0;
    report_best(s);
    if (improved) *improved = s->esc[0] < before;
    return PC_OK;
}

/* ---- moves ------------------------------------------------------------------ */

/* A different choice for variable x: layout favours -1 and row-major. */
static int32_t other_choice(search *s, int64_t x, int32_t cur) {
    const tn_var *v = &s->sp->vars[x];
    for (int tries = 0; tries < 8; tries++) {
        int32_t c;
        uint64_t u = rnd(s, 4);
        if (s->sp->kind == PC_KIND_LAYOUT && u == 0)
            c = 0;
        else if (s->sp->kind == PC_KIND_LAYOUT && u == 1)
            c = 1;
        else if (s->sp->kind == PC_KIND_TILE && u < 2 && v->nch > 1) /* a neighbouring size */
            c = cur + (u == 0 ? -1 : 1) < 0 || cur + (u == 0 ? -1 : 1) >= v->nch
                    ? (int32_t)rnd(s, (uint64_t)v->nch)
                    : cur + (u == 0 ? -1 : 1);
        else
            c = (int32_t)rnd(s, (uint64_t)v->nch);
        if (c != cur) return c;
    }
    return (int32_t)((cur + 1) % v->nch);
}

static int64_t pick_elite(search *s) {
    int64_t a = (int64_t)rnd(s, (uint64_t)s->ne), b = (int64_t)rnd(s, (uint64_t)s->ne);
    return a < b ? a : b; /* a tournament of two (elites are sorted) */
}

static pc_status fill_round(search *s, int32_t *tmp, pc_error *err) {
    int64_t nv = s->nv, tries = 0;
    const int32_t *best = s->elite;
    if (s->nimp >= 2) { /* every improving move of the last round at once */
        memcpy(tmp, best, (size_t)nv * sizeof *tmp);
        for (int64_t i = 0; i < s->nimp; i++) tmp[s->imp_var[i]] = s->imp_ch[i];
        if (push(s, tmp, -1, 0) < 0) goto oom;
    }
    while (s->nb < s->B / 2 && tries++ < 4 * s->B) { /* single moves of the best */
        int64_t x = s->cursor++ % nv;
        memcpy(tmp, best, (size_t)nv * sizeof *tmp);
        tmp[x] = other_choice(s, x, best[x]);
        if (push(s, tmp, x, tmp[x]) < 0) goto oom;
    }
    while (s->nb < s->B && tries++ < 8 * s->B) { /* mutations and crossovers of elites */
        memcpy(tmp, s->elite + pick_elite(s) * nv, (size_t)nv * sizeof *tmp);
        if (s->ne > 1 && rnd(s, 4) == 0) {
            const int32_t *o = s->elite + pick_elite(s) * nv;
            for (int64_t x = 0; x < nv; x++)
                if (rnd(s, 2)) tmp[x] = o[x];
        }
        int m = 1;
        while (m < 8 && rnd(s, 2)) m++;
        for (int k = 0; k < m; k++) {
            int64_t x = (int64_t)rnd(s, (uint64_t)nv);
            tmp[x] = other_choice(s, x, tmp[x]);
        }
        if (push(s, tmp, -1, 0) < 0) goto oom;
    }
    return PC_OK;
oom:
    return pc_fail(err, PC_ERR_NOMEM, "tune: out of memory for seen configurations");
}

/* ---- starting points ------------------------------------------------------------- */

static pc_status seed_inputs(search *s, pc_graph *g, pc_tune_result *res, int32_t *tmp,
                             pc_error *err) {
    int64_t w = s->sp->width, c = pc_graph_num_configs(g),
            n = c < s->o->max_inputs ? c : s->o->max_inputs;
    float *row = s->rows;
    if (s->sp->kind == PC_KIND_LAYOUT) { /* the compiler's default first */
        memset(tmp, 0, (size_t)s->nv * sizeof *tmp);
        if (push(s, tmp, -1, 0) < 0) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        pc_status st = flush(s, NULL, err);
        if (st) return st;
        res->has_default = 1;
        res->default_score = s->esc[0];
    }
    /* the graph's configs in batches; their scores find the input's best */
    float *buf = pc_malloc_array((uint64_t)s->B, (uint64_t)w * sizeof(float));
    int32_t *chs = pc_malloc_array((uint64_t)s->B, (uint64_t)s->nv * sizeof(int32_t));
    if (!buf || !chs) {
        free(buf), free(chs);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    pc_status st = PC_OK;
    for (int64_t c0 = 0; c0 < n && !st; c0 += s->B) {
        int64_t m = n - c0 < s->B ? n - c0 : s->B;
        if (s->sp->kind == PC_KIND_TILE)
            memcpy(buf, pc_graph_config_feat(g) + c0 * w, (size_t)(m * w) * sizeof *buf);
        else
            st = pc_graph_config_feat_rows(g, c0, m, buf, err);
        int64_t valid = 0;
        for (int64_t i = 0; i < m && !st; i++)
            if (tn_encode(s->sp, buf + i * w, chs + valid * s->nv) == 0) {
                memcpy(row + valid * w, buf + i * w, (size_t)w * sizeof *row);
                s->move_var[valid++] = c0 + i; /* which input config */
            }
        if (st || !valid) continue;
        st = s->score(s->ctx, row, valid, s->sc, err);
        for (int64_t k = 0; k < valid && !st; k++) {
            double v = isnan(s->sc[k]) ? INFINITY : s->sc[k];
            if (res->input_best < 0 || v < res->input_best_score)
                res->input_best = s->move_var[k], res->input_best_score = v;
            int fresh = hset_add(&s->seen, hash_ch(chs + k * s->nv, s->nv));
            if (fresh < 0) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
            if (fresh > 0 && s->sp->kind == PC_KIND_TILE && !st) { /* an anchor of the region */
                size_t cap = s->in_cap / (size_t)s->nv;
                int32_t *in = pc_grow_array(s->in, &cap, (size_t)s->n_in + 1,
                                            (size_t)s->nv * sizeof *in);
                if (!in) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
                if (in) {
                    s->in = in, s->in_cap = cap * (size_t)s->nv;
                    memcpy(in + s->n_in++ * s->nv, chs + k * s->nv, (size_t)s->nv * sizeof *in);
                }
            }
            /* a start only inside the trust region */
            if (fresh > 0 && inside(s, chs + k * s->nv)) elite_insert(s, chs + k * s->nv, v);
        }
        s->scored += valid;
        if (!st) report_best(s);
    }
    free(buf);
    free(chs);
    return st;
}

/* A tile space small enough: every configuration, in order, until the budget. */
static pc_status enumerate(search *s, pc_tune_result *res, int32_t *tmp, pc_error *err) {
    memset(tmp, 0, (size_t)s->nv * sizeof *tmp);
    for (;;) {
        if (push(s, tmp, -1, 0) < 0) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        int64_t x = s->nv - 1;
        while (x >= 0 && ++tmp[x] == s->sp->vars[x].nch) tmp[x--] = 0;
        int last = x < 0;
        if (s->nb == s->B || last) {
            if (elapsed(s) >= s->o->budget_s) return res->stop = PC_TUNE_STOP_BUDGET, PC_OK;
            if (s->o->max_scored && s->scored >= s->o->max_scored)
                return res->stop = PC_TUNE_STOP_MAX_SCORED, PC_OK;
            pc_status st = flush(s, NULL, err);
            if (st) return st;
            res->rounds++;
        }
        if (last) return res->stop = PC_TUNE_STOP_EXHAUSTED, PC_OK;
    }
}

static pc_status rounds(search *s, pc_tune_result *res, int32_t *tmp, pc_error *err) {
    int quiet = 0;
    for (;;) {
        if (elapsed(s) >= s->o->budget_s) return res->stop = PC_TUNE_STOP_BUDGET, PC_OK;
        if (s->o->max_scored && s->scored >= s->o->max_scored)
            return res->stop = PC_TUNE_STOP_MAX_SCORED, PC_OK;
        if (quiet >= s->o->patience) return res->stop = PC_TUNE_STOP_CONVERGED, PC_OK;
        pc_status st = fill_round(s, tmp, err);
        if (st) return st;
        if (!s->nb) return res->stop = PC_TUNE_STOP_EXHAUSTED, PC_OK;
        int improved = 0;
        st = flush(s, &improved, err);
        if (st) return st;
        res->rounds++;
        quiet = improved ? 0 : quiet + 1;
    }
}

/* ---- the entry point ----------------------------------------------------------- */

static pc_status check_opts(const pc_tune_opts *o, pc_error *err) {
    if (PC_CHECK_SIZE(err, pc_tune_opts, o)) return PC_ERR_ARG;
    if (o->top_k < 1 || o->top_k > 100000)
        return pc_fail(err, PC_ERR_ARG, "tune: pc_tune_opts.top_k must lie in [1, 100000], got %d",
                       o->top_k);
    if (!(o->budget_s > 0) || o->budget_s > 1e7)
        return pc_fail(err, PC_ERR_ARG, "tune: pc_tune_opts.budget_s must be > 0 (seconds), got %g",
                       o->budget_s);
    if (o->batch < 1 || o->batch > 1000000)
        return pc_fail(err, PC_ERR_ARG, "tune: pc_tune_opts.batch must lie in [1, 1000000]");
    if (o->max_scored < 0 || o->patience < 1 || o->max_inputs < 0 || o->max_changes < 0)
        return pc_fail(err, PC_ERR_ARG,
                       "tune: pc_tune_opts.max_scored, max_inputs and max_changes must be "
                       ">= 0 and patience >= 1");
    if (o->tile_max_changes < -1 && o->tile_max_changes != PC_TUNE_AUTO)
        return pc_fail(err, PC_ERR_ARG,
                       "tune: pc_tune_opts.tile_max_changes must be >= -1 (-1: no limit) or "
                       "PC_TUNE_AUTO, got %lld",
                       (long long)o->tile_max_changes);
    if (!(o->risk >= 0) || o->risk > 1e6)
        return pc_fail(err, PC_ERR_ARG, "tune: pc_tune_opts.risk must lie in [0, 1e6], got %g",
                       o->risk);
    if (!(o->tile_risk >= 0) || o->tile_risk > 1e6)
        return pc_fail(err, PC_ERR_ARG,
                       "tune: pc_tune_opts.tile_risk must lie in [0, 1e6], got %g", o->tile_risk);
    return PC_OK;
}

/* The batches within pc_tune_opts.max_memory: per candidate its variables
 * twice (the batch, the inputs' encodings), its row three times (the batch,
 * the inputs' rows, the model's preprocessed copy) and five scalars. */
static pc_status check_batch_memory(const search *s, pc_graph *g, pc_error *err) {
    const uint64_t per = 8 * (uint64_t)s->nv + 12 * (uint64_t)s->sp->width + 40;
    const uint64_t B = (uint64_t)s->B;
    const uint64_t need = per > UINT64_MAX / B ? UINT64_MAX : per * B;
    char what[600], how[160];
    snprintf(what, sizeof what, "%s: the search", pc_graph_path(g));
    snprintf(how, sizeof how, " for batches of %llu candidates of %llu variables and %llu "
             "features (pc_tune_opts.batch)", (unsigned long long)B,
             (unsigned long long)s->nv, (unsigned long long)s->sp->width);
    return pc_io_budget_check(need, s->o->max_memory, what, how, err);
}

static pc_status run(search *s, pc_graph *g, pc_tune_result *res, pc_error *err) {
    int64_t B = s->B, nv = s->nv, w = s->sp->width;
    pc_status bst = check_batch_memory(s, g, err);
    if (bst) return bst;
    s->ecap = s->o->top_k > ELITES_MIN ? s->o->top_k : ELITES_MIN;
    s->cand = pc_malloc_array((uint64_t)B, (uint64_t)nv * sizeof(int32_t));
    s->rows = pc_malloc_array((uint64_t)B, (uint64_t)w * sizeof(float));
    s->sc = pc_malloc_array((uint64_t)B, sizeof *s->sc);
    s->move_var = pc_malloc_array((uint64_t)B, sizeof *s->move_var);
    s->move_ch = pc_malloc_array((uint64_t)B, sizeof *s->move_ch);
    s->imp_var = pc_malloc_array((uint64_t)B, sizeof *s->imp_var);
    s->imp_ch = pc_malloc_array((uint64_t)B, sizeof *s->imp_ch);
    s->elite = pc_malloc_array((uint64_t)s->ecap, (uint64_t)nv * sizeof(int32_t));
    s->esc = pc_malloc_array((uint64_t)s->ecap, sizeof *s->esc);
    int32_t *tmp = pc_malloc_array((uint64_t)nv, sizeof *tmp);
    s->idx = pc_malloc_array((uint64_t)nv, sizeof *s->idx);
    pc_status st = PC_OK;
    if (!s->cand || !s->rows || !s->sc || !s->move_var || !s->move_ch || !s->imp_var ||
        !s->imp_ch || !s->elite || !s->esc || !tmp || !s->idx)
        st = pc_fail(err, PC_ERR_NOMEM, "tune: out of memory for batches of %lld", (long long)B);
    if (!st) st = seed_inputs(s, g, res, tmp, err);
    if (!st && s->ne == 0) { /* no usable start (tile without valid inputs): the smallest sizes */
        memset(tmp, 0, (size_t)nv * sizeof *tmp);
        if (push(s, tmp, -1, 0) < 0) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
        if (!st) st = flush(s, NULL, err);
    }
    if (!st && s->sp->kind == PC_KIND_TILE && s->sp->log10_size <= log10(EXHAUSTIVE_MAX))
        st = enumerate(s, res, tmp, err);
    else if (!st)
        st = rounds(s, res, tmp, err);
    if (!st) {
        res->k = s->ne < s->o->top_k ? s->ne : s->o->top_k;
        res->width = w;
        res->configs =
            pc_malloc_array((uint64_t)(res->k ? res->k : 1), (uint64_t)w * sizeof(float));
        res->scores = pc_malloc_array((uint64_t)(res->k ? res->k : 1), sizeof(double));
        if (!res->configs || !res->scores) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; !st && i < res->k; i++) {
            tn_materialize(s->sp, s->elite + i * nv, res->configs + i * w);
            res->scores[i] = s->esc[i];
        }
    }
    free(tmp);
    free(s->idx);
    free(s->in);
    free(s->cand), free(s->rows), free(s->sc), free(s->move_var), free(s->move_ch);
    free(s->imp_var), free(s->imp_ch), free(s->elite), free(s->esc), free(s->seen.slot);
    return st;
}

pc_status pc_tune_search(const pc_tune_space *sp, pc_graph *g, const pc_tune_opts *opts,
                         pc_tune_score_fn score, void *ctx, pc_tune_result *res, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!sp || !g || !opts || !score || !res)
        return pc_fail(err, PC_ERR_ARG, "tune: NULL argument");
    if (PC_CHECK_RESULT_SIZE(err, pc_tune_result, res)) return PC_ERR_ARG;
    pc_status st = check_opts(opts, err);
    if (st) return st;
    if (pc_graph_kind(g) != sp->kind ||
        (sp->kind == PC_KIND_LAYOUT && pc_graph_num_config_nodes(g) != sp->nc))
        return pc_fail(err, PC_ERR_ARG, "tune: %s is not the graph the space was made from",
                       pc_graph_path(g));
    size_t ss = res->struct_size;
    memset(res, 0, sizeof *res);
    res->struct_size = ss;
    res->default_score = res->input_best_score = NAN;
    res->input_best = -1;
    search s;
    memset(&s, 0, sizeof s);
    s.sp = sp, s.o = opts, s.score = score, s.ctx = ctx, s.nv = sp->nvars, s.B = opts->batch;
    s.rng = opts->seed ^ UINT64_C(0x74756e65);
    clock_gettime(CLOCK_MONOTONIC, &s.t0);
    st = run(&s, g, res, err);
    res->scored = s.scored;
    res->seconds = elapsed(&s);
    if (st) pc_tune_result_clear(res);
    return st;
}
