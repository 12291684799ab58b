/*
 * Top-K selection (a bounded max-heap keyed on (score, index)), top-K
 * slowdown, the Kaggle tile score, and per-collection / overall means.
 */
#include <math.h>
#include <stdlib.h>

#include "common/util.h"
#include "perfcast/metrics.h"

/* ---- top-K -------------------------------------------------------------- */

/* 1 if config a ranks after config b: higher score, or equal score and higher index. */
static int ranks_after(const double *pred, size_t a, size_t b) {
    if (pred[a] != pred[b]) return pred[a] > pred[b];
    return a > b;
}

/* Restores the max-heap (root = worst kept config) below position i. */
static void sift_down(const double *pred, size_t *h, size_t len, size_t i) {
    for (;;) {
        size_t worst = i, l = 2 * i + 1, r = l + 1;
        if (l < len && ranks_after(pred, h[l], h[worst])) worst = l;
        if (r < len && ranks_after(pred, h[r], h[worst])) worst = r;
        if (worst == i) return;
        size_t t = h[i];
        h[i] = h[worst], h[worst] = t;
        i = worst;
    }
}

/* Heap sort of the kept configs into best-first order. */
static void heap_to_sorted(const double *pred, size_t *h, size_t len) {
    for (size_t end = len; end > 1; end--) {
        size_t t = h[0];
        h[0] = h[end - 1], h[end - 1] = t;
        sift_down(pred, h, end - 1, 0);
    }
}

/* Unchecked selection: idx gets the k = min(k, n) best, best first. */
static size_t select_topk(const double *pred, size_t n, size_t k, size_t *idx) {
    if (k > n) k = n;
    for (size_t i = 0; i < k; i++) idx[i] = i;
    for (size_t i = k / 2; i-- > 0;) sift_down(pred, idx, k, i);
    for (size_t i = k; i < n; i++) {
        if (!ranks_after(pred, idx[0], i)) continue;
        idx[0] = i;
        sift_down(pred, idx, k, 0);
    }
    heap_to_sorted(pred, idx, k);
    return k;
}

static pc_status check_pred(const char *fn, const double *pred, size_t n, pc_error *err) {
    if (n == 0) return pc_fail(err, PC_ERR_ARG, "%s: no configs (n = 0)", fn);
    if (!pred) return pc_fail(err, PC_ERR_ARG, "%s: pred is NULL", fn);
    for (size_t i = 0; i < n; i++)
        if (isnan(pred[i])) return pc_fail(err, PC_ERR_ARG, "%s: pred[%zu] is NaN", fn, i);
    return PC_OK;
}

pc_status pc_topk_indices(const double *pred, size_t n, size_t k, size_t *idx, size_t *count,
                          pc_error *err) {
    static const char fn[] = "top-k";
    if (count) *count = 0;
    if (k == 0) return pc_fail(err, PC_ERR_ARG, "%s: k must be >= 1", fn);
    if (!idx) return pc_fail(err, PC_ERR_ARG, "%s: idx is NULL", fn);
    pc_status st = check_pred(fn, pred, n, err);
    if (st) return st;
    size_t got = select_topk(pred, n, k, idx);
    if (count) *count = got;
    return PC_OK;
}

/* ---- slowdown and tile score -------------------------------------------- */

static pc_status check_positive(const char *fn, const char *name, const double *v, size_t n,
                                pc_error *err) {
    if (!v) return pc_fail(err, PC_ERR_ARG, "%s: %s is NULL", fn, name);
    for (size_t i = 0; i < n; i++)
        if (!(isfinite(v[i]) && v[i] > 0))
            return pc_fail(err, PC_ERR_ARG, "%s: %s[%zu] = %g, expected finite and > 0", fn,
                           name, i, v[i]);
    return PC_OK;
}

static double y_of(const double *runtime, const double *normalizer, size_t i) {
    return normalizer ? runtime[i] / normalizer[i] : runtime[i];
}

/*
 * Checks the inputs and finds the best y among the predicted top-k
 * (*best_k) and over all configs (*best).
 */
static pc_status best_pair(const char *fn, const double *pred, const double *runtime,
                           const double *normalizer, size_t n, size_t k, double *best_k,
                           double *best, pc_error *err) {
    if (k == 0) return pc_fail(err, PC_ERR_ARG, "%s: k must be >= 1", fn);
    pc_status st = check_pred(fn, pred, n, err);
    if (!st) st = check_positive(fn, "runtime", runtime, n, err);
    if (!st && normalizer) st = check_positive(fn, "normalizer", normalizer, n, err);
    if (st) return st;
    if (k > n) k = n;
    size_t *idx = pc_malloc_array(k, sizeof *idx);
    if (!idx) return pc_fail(err, PC_ERR_NOMEM, "%s: no memory for k = %zu", fn, k);
    select_topk(pred, n, k, idx);
    *best_k = INFINITY;
    for (size_t i = 0; i < k; i++) *best_k = fmin(*best_k, y_of(runtime, normalizer, idx[i]));
    free(idx);
    *best = INFINITY;
    for (size_t i = 0; i < n; i++) *best = fmin(*best, y_of(runtime, normalizer, i));
    return PC_OK;
}

pc_status pc_topk_slowdown(const double *pred, const double *runtime, const double *normalizer,
                           size_t n, size_t k, double *slowdown, pc_error *err) {
    static const char fn[] = "top-k slowdown";
    if (!slowdown) return pc_fail(err, PC_ERR_ARG, "%s: slowdown is NULL", fn);
    *slowdown = NAN;
    double best_k, best;
    pc_status st = best_pair(fn, pred, runtime, normalizer, n, k, &best_k, &best, err);
    if (st) return st;
    *slowdown = (best_k - best) / best;
    return PC_OK;
}

pc_status pc_tile_score(const double *pred, const double *runtime, const double *normalizer,
                        size_t n, double *score, pc_error *err) {
    static const char fn[] = "tile score";
    if (!score) return pc_fail(err, PC_ERR_ARG, "%s: score is NULL", fn);
    *score = NAN;
    double best_k, best;
    pc_status st =
        best_pair(fn, pred, runtime, normalizer, n, PC_TILE_SCORE_K, &best_k, &best, err);
    if (st) return st;
    *score = 2.0 - best_k / best;
    return PC_OK;
}

/* ---- aggregation -------------------------------------------------------- */

void pc_metric_mean_init(pc_metric_mean *m) {
    if (!m) return;
    m->sum = 0.0;
    m->count = 0;
    m->nan_count = 0;
}

void pc_metric_mean_add(pc_metric_mean *m, double v) {
    if (!m) return;
    if (isnan(v)) {
        m->nan_count++;
        return;
    }
    m->sum += v;
    m->count++;
}

double pc_metric_mean_value(const pc_metric_mean *m) {
    if (!m || m->count == 0) return NAN;
    return m->sum / (double)m->count;
}

void pc_scoreboard_init(pc_scoreboard *b) {
    if (!b) return;
    for (int c = 0; c < PC_SCORE_COLLECTIONS; c++) pc_metric_mean_init(&b->coll[c]);
}

static pc_status check_board(const pc_scoreboard *b, int collection, pc_error *err) {
    if (!b) return pc_fail(err, PC_ERR_ARG, "scoreboard: board is NULL");
    if (collection < 0 || collection >= PC_SCORE_COLLECTIONS)
        return pc_fail(err, PC_ERR_ARG, "scoreboard: collection %d, expected 0..%d", collection,
                       PC_SCORE_COLLECTIONS - 1);
    return PC_OK;
}

pc_status pc_scoreboard_add_graph(pc_scoreboard *b, int collection, const double *pred,
                                  const double *runtime, const double *normalizer, size_t n,
                                  double *value, pc_error *err) {
    if (value) *value = NAN;
    pc_status st = check_board(b, collection, err);
    if (st) return st;
    double v;
    if (collection == PC_SCORE_TILE_COLLECTION)
        st = pc_tile_score(pred, runtime, normalizer, n, &v, err);
    else
        st = pc_kendall_tau_b(pred, runtime, n, &v, err);
    if (st) return st;
    pc_metric_mean_add(&b->coll[collection], v);
    if (value) *value = v;
    return PC_OK;
}

pc_status pc_scoreboard_add_value(pc_scoreboard *b, int collection, double value,
                                  pc_error *err) {
    pc_status st = check_board(b, collection, err);
    if (st) return st;
    if (isinf(value)) return pc_fail(err, PC_ERR_ARG, "scoreboard: value is infinite");
    pc_metric_mean_add(&b->coll[collection], value);
    return PC_OK;
}

double pc_scoreboard_collection(const pc_scoreboard *b, int collection) {
    if (!b || collection < 0 || collection >= PC_SCORE_COLLECTIONS) return NAN;
    return pc_metric_mean_value(&b->coll[collection]);
}

double pc_scoreboard_overall(const pc_scoreboard *b) {
    if (!b) return NAN;
    double sum = 0.0;
    for (int c = 0; c < PC_SCORE_COLLECTIONS; c++) {
        double v = pc_metric_mean_value(&b->coll[c]);
        if (!isnan(v)) sum += v;
    }
    return sum / PC_SCORE_COLLECTIONS;
}
