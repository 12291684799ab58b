/*
 * perfcast train: the data. Loading this rank's graphs of a split, their
 * model inputs, the preprocessing fit, the step's scratch and config
 * features, --dedup's candidates, and batching: the epoch's order of graphs
 * per lane and the configs sampled for a graph of a step.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gnn/encode.h"
#include "train/train_internal.h"

static uint64_t rand_below(uint64_t *s, uint64_t n) { return pc_splitmix64(s) % n; }

/* ---- preprocessing ------------------------------------------------------ */

/* Encoded rows of in (rows, din) into *buf (grown), or in itself without encodings;
   node rows are g's, config rows whole configs of g (the graph-wide encodings read g). */
static const float *encoded(const pc_encode_opts *eo, int node, pc_kind kind, const pc_graph *g,
                            const float *in, int64_t rows, int din, int dout, float **buf,
                            pc_status *st, pc_error *err) {
    if (!pc_encode_opts_bits(eo)) return in;
    free(*buf);
    *buf = pc_malloc_array((uint64_t)(rows > 0 ? rows : 1) * (uint64_t)dout, sizeof(float));
    if (!*buf) {
        *st = pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        return NULL;
    }
    pc_encode_graph eg = pc_encode_graph_of(g);
    pc_encode_mm mm = {0};
    if (node) {
        *st = pc_encode_node_graph(eo, &eg, *buf, err);
    } else if ((eo->mismatch && kind == PC_KIND_LAYOUT) || ((eo->steps || eo->rsteps) && kind == PC_KIND_TILE)) {
        *st = pc_encode_plan_build(eo, kind, &eg, &mm, err);
        if (!*st) *st = pc_encode_configs_mm(eo, kind, &mm, in, rows, din, *buf, err);
        pc_encode_mm_free(&mm);
    } else {
        *st = pc_encode_configs(eo, kind, in, rows, din, *buf, err);
    }
    return *st ? NULL : *buf;
}

/* Statistics of every rank's graphs: sums add, minima and maxima combine. */
static void prep_acc_reduce(const pc_dist *d, pc_prep_acc *a) {
    if (pc_dist_size(d) <= 1) return;
    size_t n = (size_t)a->dim;
    double rows = (double)a->rows;
    pc_dist_sum_f64(d, &rows, 1);
    a->rows = (int64_t)rows;
    pc_dist_sum_f64(d, a->s1, n);
    pc_dist_sum_f64(d, a->s2, n);
    pc_dist_sum_f64(d, a->l1, n);
    pc_dist_sum_f64(d, a->l2, n);
    pc_dist_max_f64(d, a->max, n);
    pc_dist_max_f64(d, a->maxabs, n);
    for (size_t i = 0; i < n; i++) a->min[i] = -a->min[i];
    pc_dist_max_f64(d, a->min, n);
    for (size_t i = 0; i < n; i++) a->min[i] = -a->min[i];
}

pc_status pc_tr_fit_prep(const pc_split_graphs *s, pc_kind kind, unsigned encode,
                         const pc_dist *dist, pc_prep *np, pc_prep *cp, pc_error *err) {
    pc_prep_acc an = {0}, ac = {0};
    pc_encode_opts eo = pc_encode_opts_none();
    int cdim = kind == PC_KIND_TILE ? PC_TILE_CONFIG_DIM : PC_LAYOUT_CONFIG_DIM;
    pc_status st = pc_encode_opts_from_bits(encode, &eo, err);
    int nw = pc_encode_node_width(&eo, PC_NODE_FEAT_DIM);
    int cw = pc_encode_config_width(&eo, kind, cdim);
    if (!st) st = pc_prep_acc_init(&an, nw, PC_PREP_LOG_THRESHOLD, err);
    if (!st) st = pc_prep_acc_init(&ac, cw, PC_PREP_LOG_THRESHOLD, err);
    float *buf = NULL, *ebuf = NULL;
    for (size_t i = 0; i < s->n && !st; i++) {
        const pc_split_graph *t = &s->v[i];
        if (pc_graph_node_feat_dim(t->g) != PC_NODE_FEAT_DIM ||
            pc_graph_config_dim(t->g) != cdim) {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: feature widths differ from %d / %d",
                         pc_graph_path(t->g), PC_NODE_FEAT_DIM, cdim);
            break;
        }
        int64_t n = pc_graph_num_nodes(t->g);
        const float *x = encoded(&eo, 1, kind, t->g, pc_graph_node_feat(t->g), n,
                                 PC_NODE_FEAT_DIM, nw, &ebuf, &st, err);
        if (!x) break;
        pc_prep_acc_add(&an, x, n);
        if (kind == PC_KIND_TILE) {
            x = encoded(&eo, 0, kind, t->g, pc_graph_config_feat(t->g), t->c, cdim, cw, &ebuf,
                        &st, err);
            if (!x) break;
            pc_prep_acc_add(&ac, x, t->c);
        } else {
            int64_t nc = pc_graph_num_config_nodes(t->g);
            int64_t use = t->c < 256 ? t->c : 256; /* the first configs are enough */
            if (nc < 1 || use < 1) continue;
            free(buf);
            buf = malloc((size_t)(use * nc * cdim) * sizeof(float));
            if (!buf) {
                st = pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
                break;
            }
            if ((st = pc_graph_config_feat_rows(t->g, 0, use, buf, err))) break;
            x = encoded(&eo, 0, kind, t->g, buf, use * nc, cdim, cw, &ebuf, &st, err);
            if (!x) break;
            pc_prep_acc_add(&ac, x, use * nc);
        }
    }
    free(buf);
    free(ebuf);
    if (pc_dist_any(dist, st != PC_OK)) {
        if (!st) st = pc_fail(err, PC_ERR_INVALID, "train: another rank failed to read its data");
    } else {
        prep_acc_reduce(dist, &an);
        prep_acc_reduce(dist, &ac);
    }
    if (!st) st = pc_prep_acc_finish(&an, np, err);
    if (!st) st = pc_prep_acc_finish(&ac, cp, err);
    if (!st && (np->out_dim < 1 || cp->out_dim < 1))
        st = pc_fail(err, PC_ERR_INVALID, "train: every node or config feature is constant "
                     "on the train split");
    pc_prep_acc_free(&an);
    pc_prep_acc_free(&ac);
    return st;
}

/* ---- the train split over the lanes ----------------------------------------- */

size_t pc_tr_lane_len(const trainer *t, size_t l) {
    return t->ntrain > l ? (t->ntrain - l + t->topo.G - 1) / t->topo.G : 0;
}

/*
 * The identity of a collection's train and valid files by content, not by
 * path: FNV-1a over each file's name (without its folder) and size, in the
 * dataset's order. Moving the dataset keeps it; adding, removing, renaming
 * or rewriting a file (to another size) changes it.
 */
static pc_status data_identity(const pc_dataset *ds, int coll, uint64_t *id, pc_error *err) {
    uint64_t h = 1469598103934665603ULL;
    for (int sp = 0; sp < 2; sp++) {
        int split = pc_split_find(sp ? "valid" : "train");
        for (size_t i = 0; i < pc_dataset_num_files(ds, coll, split); i++) {
            const char *path = pc_dataset_file(ds, coll, split, i);
            const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
            struct stat sb;
            if (stat(path, &sb) != 0)
                return pc_fail(err, PC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
            char size[32];
            snprintf(size, sizeof size, "|%lld|%d;", (long long)sb.st_size, sp);
            for (const char *p = base; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
            for (const char *p = size; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        }
    }
    *id = h;
    return PC_OK;
}

/* The model or its state written over a file of the dataset: refused before any work. */
static pc_status refuse_aliases(const trainer *t, const pc_dataset *ds, pc_error *err) {
    for (int sp = 0; sp < PC_NUM_SPLITS; sp++)
        for (size_t i = 0; i < pc_dataset_num_files(ds, t->coll, sp); i++) {
            const char *f = pc_dataset_file(ds, t->coll, sp, i);
            const char *out = pc_same_file(f, t->o.out_path) ? t->o.out_path
                              : pc_same_file(f, t->state_path) ? t->state_path
                                                               : NULL;
            if (out)
                return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.out_path: %s is the "
                               "dataset file %s; refusing to overwrite an input", out, f);
        }
    return PC_OK;
}

pc_status pc_tr_load_data(trainer *t, pc_error *err) {
    pc_dataset *ds = NULL;
    pc_status st = pc_dataset_open(t->o.data_dir, &ds, err);
    if (st) return st;
    int s_train = pc_split_find("train"), s_valid = pc_split_find("valid");
    tr_topo *p = &t->topo;
    /* lanes: graph i belongs to lane i % G; this rank trains lanes [R*B, R*B + B)
       and validates graphs i % W == R (multi-process runs; one process: all) */
    t->ntrain = pc_dataset_num_files(ds, t->coll, s_train);
    t->nvalid = pc_dataset_num_files(ds, t->coll, s_valid);
    st = data_identity(ds, t->coll, &t->data_id, err);
    if (!st) st = refuse_aliases(t, ds, err);
    if (!st) st = pc_tr_agree(t, ds, err); /* before the first collective (the loads' own) */
    /* pc_train_opts.max_memory_gib bounds each load too (a zip bomb in the data
       is refused before it inflates); default: the readers' own budget */
    const uint64_t budget =
        t->o.max_memory_gib > 0 ? (uint64_t)(t->o.max_memory_gib * 1073741824.0) : PC_MEMORY_AUTO;
    pc_split_progress ptr = {t->o.load_progress, t->o.load_progress_user, "train graphs loaded"};
    pc_split_progress pva = {t->o.load_progress, t->o.load_progress_user, "valid graphs loaded"};
    if (!st &&
        !(st = pc_split_graphs_load(ds, t->coll, s_train, t->o.threads, p->G, (size_t)p->R * p->B,
                                    (size_t)p->R * p->B + p->B, budget, &t->tr, &ptr, err)))
        st = pc_split_graphs_load(ds, t->coll, s_valid, t->o.threads, (size_t)p->W, (size_t)p->R,
                                  (size_t)p->R + 1, budget, &t->va, &pva, err);
    pc_dataset_close(ds);
    if (st) return st;
    if (t->ntrain == 0 || t->nvalid == 0)
        return pc_fail(err, PC_ERR_NOTFOUND, "train: %s has %zu train and %zu valid graphs "
                       "under %s; both splits are needed", t->o.collection, t->ntrain,
                       t->nvalid, t->o.data_dir);
    p->lane_off = malloc((p->G + 1) * sizeof *p->lane_off);
    p->local_of = malloc(t->ntrain * sizeof *p->local_of);
    if (!p->lane_off || !p->local_of) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    p->lane_off[0] = 0;
    for (size_t l = 0; l < p->G; l++)
        p->lane_off[l + 1] = p->lane_off[l] + pc_tr_lane_len(t, l);
    for (size_t i = 0; i < t->ntrain; i++) p->local_of[i] = -1;
    for (size_t i = 0; i < t->tr.n; i++) p->local_of[t->tr.v[i].gi] = (int64_t)i;
    p->S = pc_tr_lane_len(t, 0);
    return PC_OK;
}

/* ---- training candidates --------------------------------------------------- */

/* Stable merge sort of ids by y (ascending): ids[] holds 0..n-1 on entry. */
static void argsort_rec(int64_t *ids, int64_t *tmp, size_t n, const double *y) {
    if (n < 2) return;
    size_t h = n / 2;
    argsort_rec(ids, tmp, h, y);
    argsort_rec(ids + h, tmp, n - h, y);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = y[ids[j]] < y[ids[i]] ? ids[j++] : ids[i++];
    while (i < h) tmp[k++] = ids[i++];
    while (j < n) tmp[k++] = ids[j++];
    memcpy(ids, tmp, n * sizeof *ids);
}

static pc_status build_by_speed(trainer *t, pc_error *err) {
    for (size_t i = 0; i < t->tr.n; i++) {
        tcand *g = &t->cand[i];
        int64_t c0 = t->tr.v[i].c;
        size_t c = (size_t)(c0 > 0 ? c0 : 1);
        int64_t *tmp = malloc(c * sizeof *tmp);
        g->by_speed = malloc(c * sizeof *g->by_speed);
        if (!tmp || !g->by_speed) {
            free(tmp);
            return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        }
        for (int64_t k = 0; k < g->ncand; k++) g->by_speed[k] = g->cand ? g->cand[k] : k;
        argsort_rec(g->by_speed, tmp, (size_t)g->ncand, g->y);
        free(tmp);
    }
    return PC_OK;
}

/*
 * --dedup: identical configurations of a train graph become one candidate
 * (the group's first index) whose target is the group's fastest measurement
 * (src/dataset/config_pack.h: re-measuring a fixed program only adds noise
 * and time). Validation still scores every config.
 */
static pc_status dedup_train(trainer *t, pc_error *err) {
    int64_t total = 0, kept = 0;
    for (size_t i = 0; i < t->tr.n; i++) {
        const pc_split_graph *s = &t->tr.v[i];
        tcand *g = &t->cand[i];
        total += s->c;
        if (!t->o.dedup || s->c < 2) {
            kept += s->c;
            continue;
        }
        pc_dedup d;
        pc_status st = pc_graph_config_dedup(s->g, PC_DEDUP_MIN, &d, err);
        if (st) return st;
        kept += d.n_out;
        if (d.n_out < s->c) {
            g->cand = malloc((size_t)d.n_out * sizeof *g->cand);
            if (!g->cand) {
                pc_dedup_free(&d);
                return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
            }
            for (int64_t k = 0; k < d.n_out; k++) {
                int64_t f = d.first[k], p = d.pick[k];
                g->cand[k] = f;
                g->y[f] = s->norm && s->norm[p] > 0 ? s->rt[p] / s->norm[p] : s->rt[p];
            }
            g->ncand = d.n_out;
        }
        pc_dedup_free(&d);
    }
    if (t->o.dedup)
        pc_tr_logf(t->log, t->user, "dedup: %lld of %lld train configs are distinct",
              (long long)kept, (long long)total);
    return PC_OK;
}

/* Every train graph's targets: runtimes over the tile normalizers, or runtimes. */
static pc_status targets(trainer *t, pc_error *err) {
    t->cand = calloc(t->tr.n ? t->tr.n : 1, sizeof *t->cand);
    if (!t->cand) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
    for (size_t i = 0; i < t->tr.n; i++) {
        const pc_split_graph *s = &t->tr.v[i];
        tcand *g = &t->cand[i];
        g->y = malloc((size_t)(s->c > 0 ? s->c : 1) * sizeof(double));
        if (!g->y) return pc_fail(err, PC_ERR_NOMEM, "train: out of memory");
        for (int64_t k = 0; k < s->c; k++)
            g->y[k] = s->norm && s->norm[k] > 0 ? s->rt[k] / s->norm[k] : s->rt[k];
        g->ncand = s->c;
    }
    return PC_OK;
}

pc_status pc_tr_prepare_candidates(trainer *t, pc_error *err) {
    pc_status st = targets(t, err);
    if (!st) st = dedup_train(t, err);
    if (!st && t->fast) st = build_by_speed(t, err);
    return st;
}

void pc_tr_candidates_free(trainer *t) {
    for (size_t i = 0; t->cand && i < t->tr.n; i++) {
        free(t->cand[i].y);
        free(t->cand[i].by_speed);
        free(t->cand[i].cand);
    }
    free(t->cand);
    t->cand = NULL;
}

/* ---- batching --------------------------------------------------------------- */

/* A new epoch: every lane's graphs in a fresh order (the same on every rank). */
void pc_tr_shuffle(trainer *t) {
    tr_state *r = &t->state;
    size_t G = t->topo.G;
    for (size_t l = 0; l < G; l++) {
        int64_t *o = r->order + t->topo.lane_off[l];
        size_t n = pc_tr_lane_len(t, l);
        for (size_t i = 0; i < n; i++) o[i] = (int64_t)(l + i * G);
        for (size_t i = n; i > 1; i--) {
            size_t j = (size_t)rand_below(&r->rng, i);
            int64_t tmp = o[i - 1];
            o[i - 1] = o[j];
            o[j] = tmp;
        }
    }
    r->oi = 0;
    r->lsum = 0;
    r->lcount = 0;
}

/* The RNG of one graph of a step: a function of (seed, epoch, lane, step) only,
   so any split of the lanes over ranks samples the same configs. */
uint64_t pc_tr_step_rng(const trainer *t, size_t lane, size_t s) {
    uint64_t r = t->o.seed ^ 0x5a3c0ffeeULL;
    r ^= pc_splitmix64(&r) + (uint64_t)t->state.epoch * 0x9E3779B97F4A7C15ULL;
    r ^= pc_splitmix64(&r) + (uint64_t)lane * 0xBF58476D1CE4E5B9ULL;
    r ^= pc_splitmix64(&r) + (uint64_t)s * 0x94D049BB133111EBULL;
    return r;
}

/* Swaps perm[k] with a uniform pick from perm[k .. hi) and records it as the k-th sample. */
static void pick(trainer *t, const tcand *g, int k, int64_t hi, uint64_t *rng) {
    int64_t j = k + (int64_t)rand_below(rng, (uint64_t)(hi - k));
    int64_t tmp = t->perm[k];
    t->perm[k] = t->perm[j];
    t->perm[j] = tmp;
    t->x.ids[k] = t->perm[k];
    t->x.yk[k] = g->y[t->perm[k]];
}

/* Chooses K distinct configs of g into x.ids / x.yk (see pc_train_opts.sampling). */
int pc_tr_sample_configs(trainer *t, const tcand *g, uint64_t *rng) {
    int64_t n = g->ncand;
    int K = (int)(n < t->o.configs ? n : t->o.configs);
    if (!t->fast || n <= K) {
        for (int64_t k = 0; k < n; k++) t->perm[k] = g->cand ? g->cand[k] : k;
        for (int k = 0; k < K; k++) pick(t, g, k, n, rng);
        return K;
    }
    memcpy(t->perm, g->by_speed, (size_t)n * sizeof *t->perm);
    int64_t nf = n / 10 > K ? n / 10 : K;
    int kf = K / 2;
    for (int k = 0; k < kf; k++) pick(t, g, k, nf, rng);
    for (int k = kf; k < K; k++) pick(t, g, k, n, rng);
    return K;
}
