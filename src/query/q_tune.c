/* The tune query (perfcast tune): one graph (.npz, cache folder or HLO program) searched for
 * the configurations a trained model (or synth's simulator) rates fastest. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "perfcast/dataset.h"
#include "perfcast/hlo.h"
#include "perfcast/predict.h"
#include "perfcast/synth.h"
#include "perfcast/tune.h"
#include "query/q_internal.h"
#include "query/request.h"

static const char *const TUNE_KEYS[] = {
    "model",      "file",         "out",          "top",          "budget_s",
    "seed",       "batch",        "patience",     "max_scored",   "candidates",
    "kernel",     "threads",      "risk",         "max_changes",  "tile_max_changes",
    "tile_risk",  "tile_new_sizes", "oracle",     "synth_seed",   "synth_scale",
    "synth_graphs", "synth_layout_nodes", "synth_tile_configs", "configs", "spelled", "max_memory",
    NULL};

typedef struct tune_req {
    const char *model, *file, *out, *kernel;
    int oracle, configs, spelled, threads;
    long long candidates;
    pc_tune_opts o;
    pc_synth_opts so;
    pc_predictor *p;
    pc_progress_fn progress;
    void *progress_user;
} tune_req;

static pc_status read_ints(const cJSON *root, tune_req *r, pc_error *err) {
    long long top = r->o.top_k, pat = r->o.patience, th = 0, seed = (long long)r->o.seed;
    long long sseed = (long long)r->so.seed, sg = 0, sn = 0, st_ = 0;
    long long maxch = -2, tmaxch = -2, batch = r->o.batch, maxs = r->o.max_scored, mm = 0;
    pc_status st;
    if ((st = pc_qreq_int(root, "top", 1, 100000, &top, err)) ||
        (st = pc_qreq_int(root, "seed", 0, INT64_MAX, &seed, err)) ||
        (st = pc_qreq_int(root, "batch", 1, 100000000, &batch, err)) ||
        (st = pc_qreq_int(root, "patience", 1, 100000000, &pat, err)) ||
        (st = pc_qreq_int(root, "max_scored", 0, 100000000, &maxs, err)) ||
        (st = pc_qreq_int(root, "candidates", 1, 100000000, &r->candidates, err)) ||
        (st = pc_qreq_int(root, "threads", 0, 1024, &th, err)) ||
        (st = pc_qreq_int(root, "max_changes", 0, 100000000, &maxch, err)) ||
        (st = pc_qreq_int(root, "tile_max_changes", -1, 100000000, &tmaxch, err)) ||
        (st = pc_qreq_int(root, "synth_seed", 0, INT64_MAX, &sseed, err)) ||
        (st = pc_qreq_int(root, "synth_graphs", 1, 100000000, &sg, err)) ||
        (st = pc_qreq_int(root, "synth_layout_nodes", 1, 100000000, &sn, err)) ||
        (st = pc_qreq_int(root, "synth_tile_configs", 1, 100000000, &st_, err)) ||
        (st = pc_qreq_int(root, "max_memory", 1, INT64_MAX, &mm, err)))
        return st;
    if (mm) r->o.max_memory = (uint64_t)mm; /* else PC_MEMORY_AUTO */
    r->o.batch = batch, r->o.max_scored = maxs;
    r->o.top_k = (int)top, r->o.patience = (int)pat, r->threads = (int)th;
    r->o.seed = (uint64_t)seed, r->so.seed = (uint64_t)sseed;
    if (sg) r->so.graphs_per_split = sg;
    if (sn) r->so.layout_nodes = sn;
    if (st_) r->so.tile_configs = st_;
    /* the simulator needs no trust region: the oracle is the unrestricted ceiling */
    if (r->oracle && maxch == -2 && tmaxch == -2) r->o.max_changes = 0, r->o.tile_max_changes = -1;
    if (maxch != -2) r->o.max_changes = maxch;
    if (tmaxch != -2) r->o.tile_max_changes = tmaxch;
    return PC_OK;
}

static pc_status read_request(const cJSON *root, tune_req *r, pc_error *err) {
    const char *scale = NULL;
    pc_status st;
    r->o = pc_tune_opts_default();
    r->so = pc_synth_opts_default();
    r->candidates = 256;
    if ((st = pc_qreq_string(root, "model", &r->model, err)) ||
        (st = pc_qreq_string(root, "file", &r->file, err)) ||
        (st = pc_qreq_string(root, "out", &r->out, err)) ||
        (st = pc_qreq_string(root, "kernel", &r->kernel, err)) ||
        (st = pc_qreq_string(root, "synth_scale", &scale, err)) ||
        (st = pc_qreq_bool(root, "oracle", &r->oracle, err)) ||
        (st = pc_qreq_bool(root, "configs", &r->configs, err)) ||
        (st = pc_qreq_bool(root, "spelled", &r->spelled, err)) ||
        (st = pc_qreq_bool(root, "tile_new_sizes", &r->o.tile_new_sizes, err)) ||
        (st = pc_qreq_count(root, "budget_s", 1, &r->o.budget_s, err)) ||
        (st = pc_qreq_count(root, "risk", 0, &r->o.risk, err)) ||
        (st = pc_qreq_count(root, "tile_risk", 0, &r->o.tile_risk, err)) ||
        (st = read_ints(root, r, err)))
        return st;
    if (!(r->o.budget_s <= 1e6))
        return pc_fail(err, PC_ERR_ARG, "'budget_s' expects seconds in (0, 1e6], got %g",
                       r->o.budget_s);
    if (!(r->o.risk >= 0 && r->o.risk <= 1e6) || !(r->o.tile_risk >= 0 && r->o.tile_risk <= 1e6))
        return pc_fail(err, PC_ERR_ARG, "'%s' expects a number in [0, 1e6]",
                       r->o.risk >= 0 && r->o.risk <= 1e6 ? "tile_risk" : "risk");
    if (scale && pc_synth_scale_parse(scale, &r->so.scale) != PC_OK)
        return pc_fail(err, PC_ERR_ARG, "'synth_scale' expects tiny, small or full, got '%s'",
                       scale);
    if (!r->model && !r->p && !r->oracle)
        return pc_fail(err, PC_ERR_ARG, "tune: 'model' (a checkpoint) is required");
    if ((r->model || r->p) && r->oracle)
        return pc_fail(err, PC_ERR_ARG, "tune: 'oracle' replaces 'model'");
    if (!r->file) return pc_fail(err, PC_ERR_ARG, "tune: 'file' (a .npz or HLO program) is required");
    return PC_OK;
}

/* ---- scoring ---------------------------------------------------------------- */

static pc_status sim_score(void *ctx, const float *configs, int64_t n, double *scores,
                           pc_error *err) {
    return pc_synth_sim_run(ctx, configs, n, scores, err);
}

/* The scorer with progress: "candidates scored; best so far ..." after each scored batch
 * (pc_tune_opts.best), the best proposal the search holds as the predicted gain over the
 * compiler default (layout: the search scores the default alone, first) or as the score
 * (tile): at the end, the summary's gain and scores[0]. */
typedef struct counted {
    pc_tune_score_fn fn;
    void *ctx;
    const tune_req *r;
    int64_t calls;
    int layout;
    double base; /* the default's score (layout); NAN: none yet */
    char what[128];
} counted;

static pc_status counted_score(void *ctx, const float *configs, int64_t n, double *scores,
                               pc_error *err) {
    counted *c = ctx;
    pc_status st = c->fn(c->ctx, configs, n, scores, err);
    if (!st && c->layout && c->calls++ == 0 && n == 1) /* NAN ranks last: as the search */
        c->base = isnan(scores[0]) ? INFINITY : scores[0];
    return st;
}

static void counted_best(void *user, double best, int64_t scored) {
    counted *c = user;
    if (!isfinite(best))
        snprintf(c->what, sizeof c->what, "candidates scored");
    else if (!isnan(c->base))
        snprintf(c->what, sizeof c->what, "candidates scored; best so far: predicted gain %.6g",
                 c->base - best);
    else
        snprintf(c->what, sizeof c->what, "candidates scored; best so far: score %.6g", best);
    c->r->progress(c->r->progress_user, c->what, scored, c->r->o.max_scored);
}

typedef struct tuned {
    pc_tune_space *space;
    pc_tune_result res;
} tuned;

static void tuned_free(tuned *t) {
    pc_tune_space_free(t->space);
    pc_tune_result_clear(&t->res);
}

/* Space, scorer and search for one graph. */
static pc_status tune_graph(const tune_req *r, pc_graph *g, tuned *t, pc_error *e) {
    memset(t, 0, sizeof *t);
    t->res.struct_size = sizeof t->res;
    pc_tune_model *m = NULL;
    pc_synth_sim *sim = NULL;
    pc_status st = PC_OK;
    if (r->oracle) {
        st = pc_synth_sim_load(r->file, &r->so, &sim, e);
        if (!st && pc_synth_sim_is_tile(sim) != (pc_graph_kind(g) == PC_KIND_TILE))
            st = pc_fail(e, PC_ERR_ARG, "%s: the simulator's graph is not of its kind", r->file);
    } else
        st = pc_tune_model_new(r->p, g, &r->o, &m, e);
    if (!st) st = pc_tune_space_from_graph(g, &r->o, &t->space, e);
    counted c = {r->oracle ? sim_score : pc_tune_model_score,
                 r->oracle ? (void *)sim : (void *)m,
                 r,
                 0,
                 pc_graph_kind(g) == PC_KIND_LAYOUT,
                 NAN,
                 ""};
    pc_tune_opts o = r->o;
    if (r->progress) o.best = counted_best, o.best_user = &c;
    if (!st) st = pc_tune_search(t->space, g, &o, counted_score, &c, &t->res, e);
    pc_tune_model_free(m);
    pc_synth_sim_free(sim);
    return st;
}

/* ---- the document ----------------------------------------------------------- */

static double round3(double x) { return isfinite(x) ? round(x * 1000) / 1000 : x; }

static cJSON *summary_json(const tune_req *r, const char *name, const tuned *t) {
    const pc_tune_result *res = &t->res;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "graph", name);
    cJSON_AddStringToObject(o, "kind", pc_kind_name(pc_tune_space_kind(t->space)));
    cJSON_AddNumberToObject(o, "vars", (double)pc_tune_space_vars(t->space));
    cJSON_AddNumberToObject(o, "log10_space", round3(pc_tune_space_log10_size(t->space)));
    cJSON_AddNumberToObject(o, "scored", (double)res->scored);
    cJSON_AddNumberToObject(o, "rounds", (double)res->rounds);
    cJSON_AddNumberToObject(o, "seconds", round3(res->seconds));
    cJSON_AddStringToObject(o, "stop", pc_tune_stop_name(res->stop));
    if (!r->oracle) {
        cJSON_AddNumberToObject(o, "risk", r->o.risk);
        cJSON_AddNumberToObject(o, "max_changes", (double)r->o.max_changes);
        cJSON_AddNumberToObject(o, "tile_max_changes", (double)r->o.tile_max_changes);
        cJSON_AddBoolToObject(o, "tile_new_sizes", r->o.tile_new_sizes > 0);
        cJSON_AddNumberToObject(o, "tile_risk", r->o.tile_risk);
    }
    if (res->has_default) cJSON_AddNumberToObject(o, "default_score", res->default_score);
    if (res->input_best >= 0) {
        cJSON_AddNumberToObject(o, "input_best", (double)res->input_best);
        cJSON_AddNumberToObject(o, "input_best_score", res->input_best_score);
    }
    cJSON *sc = cJSON_AddArrayToObject(o, "scores");
    for (int64_t i = 0; i < res->k; i++) cJSON_AddItemToArray(sc, cJSON_CreateNumber(res->scores[i]));
    if (r->configs) { /* request "configs": the proposals themselves, k rows of width floats */
        cJSON *rows = cJSON_AddArrayToObject(o, "configs");
        for (int64_t i = 0; i < res->k; i++) {
            cJSON *row = cJSON_CreateArray();
            for (int64_t j = 0; j < res->width; j++)
                cJSON_AddItemToArray(row, cJSON_CreateNumber(res->configs[i * res->width + j]));
            cJSON_AddItemToArray(rows, row);
        }
    }
    return o;
}

/* OUT for one set, OUT.<i>.npz (before .npz) for several. */
static void set_out(const char *out, int i, int n, char *buf, size_t cap) {
    if (n == 1) {
        snprintf(buf, cap, "%s", out);
        return;
    }
    size_t len = strlen(out);
    int ext = len > 4 && !strcmp(out + len - 4, ".npz");
    snprintf(buf, cap, "%.*s.%d.npz", (int)(ext ? len - 4 : len), out, i);
}

static pc_status tune_npz(const tune_req *r, cJSON **out, pc_error *e) {
    pc_load_opts lo = pc_load_opts_default();
    lo.threads = r->threads;
    lo.max_memory = r->o.max_memory;
    pc_graph *g = NULL;
    pc_status st = pc_graph_load(r->file, &lo, &g, e);
    tuned t;
    memset(&t, 0, sizeof t);
    if (!st) st = tune_graph(r, g, &t, e);
    if (!st && r->out) st = pc_tune_write(r->out, g, t.res.configs, t.res.k, e);
    if (!st) {
        *out = summary_json(r, r->file, &t);
        if (r->out) cJSON_AddStringToObject(*out, "out", r->out);
        else cJSON_AddNullToObject(*out, "out");
    }
    tuned_free(&t);
    pc_graph_free(g);
    return st;
}

/* The proposals of set s in rank's notation: JSON objects ("proposals"), and with request
 * "spelled" also as text ("spelled"). */
static void add_proposals(const tune_req *r, const pc_rank_set *s, const tuned *t, cJSON *o) {
    for (int json = 1; json >= (r->spelled ? 0 : 1); json--) {
        cJSON *arr = cJSON_AddArrayToObject(o, json ? "proposals" : "spelled");
        for (int64_t k = 0; k < t->res.k; k++) {
            char *d = pc_rank_set_describe_config(s, t->res.configs + k * t->res.width, json);
            cJSON *it = !d ? cJSON_CreateNull() : json ? cJSON_Parse(d) : cJSON_CreateString(d);
            cJSON_AddItemToArray(arr, it ? it : cJSON_CreateNull());
            free(d);
        }
    }
}

static pc_status tune_hlo(const tune_req *r, cJSON **out, pc_error *e) {
    pc_rank_opts ro = pc_rank_opts_default();
    ro.kind = pc_collection_kind(pc_predictor_collection(r->p));
    ro.kernel = r->kernel;
    ro.candidates = r->candidates;
    ro.seed = r->o.seed;
    ro.max_memory = r->o.max_memory;
    ro.progress = r->progress, ro.progress_user = r->progress_user; /* bytes of a large file */
    pc_rank_set **sets = NULL;
    int n = 0;
    pc_status st = pc_rank_sets_from_hlo(r->file, &ro, &sets, &n, NULL, e);
    cJSON *arr = st ? NULL : cJSON_CreateArray();
    for (int i = 0; i < n && !st; i++) {
        pc_graph *g = pc_rank_set_graph(sets[i]);
        tuned t;
        st = tune_graph(r, g, &t, e);
        if (!st) {
            cJSON *o = summary_json(r, pc_rank_set_name(sets[i]), &t);
            add_proposals(r, sets[i], &t, o);
            cJSON_AddItemToArray(arr, o);
        }
        if (!st && r->out) {
            char path[4096];
            set_out(r->out, i, n, path, sizeof path);
            st = pc_tune_write(path, g, t.res.configs, t.res.k, e);
            if (!st) cJSON_AddStringToObject(cJSON_GetArrayItem(arr, i), "out", path);
        }
        tuned_free(&t);
    }
    pc_rank_sets_free(sets, n);
    if (st) cJSON_Delete(arr);
    else *out = arr;
    return st;
}

pc_status pc_q_tune_progress(const char *request, pc_predictor *model, pc_progress_fn fn,
                             void *user, cJSON **out, pc_error *err) {
    cJSON *root = NULL;
    tune_req r;
    memset(&r, 0, sizeof r);
    r.progress = fn, r.progress_user = user;
    r.p = model;
    pc_status st = pc_qreq_parse(request, "tune", TUNE_KEYS, &root, err);
    if (!st) st = read_request(root, &r, err);
    if (!st && !r.p && r.model) /* else loaded by the caller: not freed here */
        st = pc_predictor_load_max(r.model, r.threads, r.o.max_memory, &r.p, err);
    if (!st) pc_tune_opts_for_model(&r.o, r.p); /* the tile region the model is trusted with */
    if (!st) {
        struct stat sb;
        size_t len = strlen(r.file);
        int npz = (len > 4 && !strcmp(r.file + len - 4, ".npz")) ||
                  (stat(r.file, &sb) == 0 && S_ISDIR(sb.st_mode));
        st = npz || r.oracle ? tune_npz(&r, out, err) : tune_hlo(&r, out, err);
    }
    if (r.p != model) pc_predictor_free(r.p);
    cJSON_Delete(root);
    return st;
}
