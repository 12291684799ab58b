/*
 * pc_synth_write: scales, the output tree, per-graph seeding, parallel
 * generation and .npz writing. Every graph is a task seeded only from
 * (seed, collection family, split, index), so files are byte-identical for a
 * seed whatever the thread count. A layout program is built once and written
 * to both its "random" and its "default" collection, as the public data
 * shares programs between the two searches.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "perfcast/npz.h"
#include "perfcast/synth.h"
#include "synth/synth_internal.h"

enum { COL_TILE = SY_COL_TILE, COL_XLA_RANDOM = SY_COL_XLA_RANDOM, COL_NLP_RANDOM = SY_COL_NLP_RANDOM,
       NCOL = SY_NCOL };
static const char *const col_dir[NCOL] = {"tile/xla", "layout/xla/random", "layout/xla/default",
                                          "layout/nlp/random", "layout/nlp/default"};
static const char *const split_name[3] = {"train", "valid", "test"};

#define NOISE_SIGMA 0.015     /* run-to-run noise of a layout or tile measurement */
#define MACHINE_SIGMA 0.008   /* machine-to-machine spread of tile normalizers */
#define MAX_NODES 20000000
#define MAX_CONFIGS 10000000

static const char *const scale_names[PC_SYNTH_SCALE_COUNT] = {"tiny", "small", "full"};

pc_status pc_synth_scale_parse(const char *name, pc_synth_scale *out) {
    for (int i = 0; i < PC_SYNTH_SCALE_COUNT; i++)
        if (name && strcmp(name, scale_names[i]) == 0) {
            *out = (pc_synth_scale)i;
            return PC_OK;
        }
    return PC_ERR_ARG;
}

const char *pc_synth_scale_name(pc_synth_scale s) {
    return (unsigned)s < PC_SYNTH_SCALE_COUNT ? scale_names[s] : NULL;
}

pc_synth_opts pc_synth_opts_default(void) {
    pc_synth_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.scale = PC_SYNTH_SMALL;
    o.seed = 1;
    o.compress = 0; /* like np.savez; the CLI's --compress turns deflate on */
    return o;
}

/* ---- planning -------------------------------------------------------------- */

typedef sy_plan plan;

static pc_status check_opts(const char *out_dir, const pc_synth_opts *o, pc_error *err) {
    if (!out_dir || !*out_dir) return pc_fail(err, PC_ERR_ARG, "synth: no output directory");
    if (!o) return pc_fail(err, PC_ERR_ARG, "synth: no options");
    if (PC_CHECK_SIZE(err, pc_synth_opts, o)) return PC_ERR_ARG;
    if ((unsigned)o->scale > PC_SYNTH_FULL) return pc_fail(err, PC_ERR_ARG, "synth: unknown scale");
    if (o->graphs_per_split < 0 || o->graphs_per_split > 1000000)
        return pc_fail(err, PC_ERR_ARG, "synth: graphs_per_split %lld out of range [0, 1000000]",
                       (long long)o->graphs_per_split);
    if (o->layout_nodes < 0 || o->layout_nodes > MAX_NODES)
        return pc_fail(err, PC_ERR_ARG, "synth: layout_nodes %lld out of range [0, %d]",
                       (long long)o->layout_nodes, MAX_NODES);
    if (o->layout_configs < 0 || o->layout_configs > MAX_CONFIGS || o->tile_configs < 0 ||
        o->tile_configs > MAX_CONFIGS)
        return pc_fail(err, PC_ERR_ARG, "synth: config counts must lie in [0, %d]", MAX_CONFIGS);
    if (o->collections >= (1u << NCOL))
        return pc_fail(err, PC_ERR_ARG, "synth: collections mask 0x%x names no known collection",
                       o->collections);
    if (o->threads < 0) return pc_fail(err, PC_ERR_ARG, "synth: threads must be >= 0");
    return PC_OK;
}

/* The spread of a measurement: 0 with pc_synth_opts.noise_free (the draws
   still happen, so everything else stays the same). */
static double noise(const plan *p, double sigma) { return p->o->noise_free ? 0.0 : sigma; }

static int64_t measured(double ns, sy_rng *r, double sigma) {
    double v = ns * exp(sigma * sy_normal(r));
    return v < 1.0 ? 1 : (int64_t)llround(v);
}

/* ---- writing ---------------------------------------------------------------- */

typedef struct graph_arrays {
    float *feat;
    uint8_t *opcode;
    int64_t *edges;
    int64_t nedges;
} graph_arrays;

static void graph_arrays_free(graph_arrays *a) {
    free(a->feat);
    free(a->opcode);
    free(a->edges);
    memset(a, 0, sizeof *a);
}

static pc_status graph_arrays_make(const sy_module *m, graph_arrays *a, pc_error *err) {
    memset(a, 0, sizeof *a);
    a->feat = pc_malloc_array((uint64_t)m->n, PC_TPUG_NODE_FEATS * sizeof(float));
    a->opcode = pc_malloc_array((uint64_t)m->n, 1);
    int64_t ne = sy_edges(m, NULL);
    a->edges = ne >= 0 ? pc_malloc_array((uint64_t)(ne ? ne : 1), 2 * sizeof(int64_t)) : NULL;
    if (!a->feat || !a->opcode || !a->edges) {
        graph_arrays_free(a);
        return pc_fail(err, PC_ERR_NOMEM, "synth: out of memory for a graph of %lld nodes",
                       (long long)m->n);
    }
    for (int64_t i = 0; i < m->n; i++) {
        sy_featurize(m, i, a->feat + i * PC_TPUG_NODE_FEATS);
        a->opcode[i] = m->inst[i].op;
    }
    a->nedges = sy_edges(m, a->edges);
    if (a->nedges < 0) {
        graph_arrays_free(a);
        return pc_fail(err, PC_ERR_NOMEM, "synth: out of memory for edges");
    }
    return PC_OK;
}

static pc_status add_graph_arrays(pc_npz_writer *w, const sy_module *m, const graph_arrays *a,
                                  pc_error *err) {
    int64_t se[2] = {a->nedges, 2}, sf[2] = {m->n, PC_TPUG_NODE_FEATS}, so[1] = {m->n};
    pc_status st = pc_npz_writer_add(w, "edge_index", PC_DTYPE_I64, 2, se, a->edges, err);
    if (!st) st = pc_npz_writer_add(w, "node_feat", PC_DTYPE_F32, 2, sf, a->feat, err);
    if (!st) st = pc_npz_writer_add(w, "node_opcode", PC_DTYPE_U8, 1, so, a->opcode, err);
    return st;
}

static pc_status out_path(char *buf, size_t cap, const char *out_dir, int col, int split,
                          const char *stem, pc_error *err) {
    int n =
        snprintf(buf, cap, "%s/npz/%s/%s/%s.npz", out_dir, col_dir[col], split_name[split], stem);
    if (n < 0 || (size_t)n >= cap) return pc_fail(err, PC_ERR_ARG, "synth: output path too long");
    return PC_OK;
}

static pc_npz_compress compress_mode(const plan *p) {
    return p->o->compress ? PC_NPZ_DEFLATED : PC_NPZ_STORED;
}

/* ---- tile graphs ---------------------------------------------------------------- */

static pc_status write_tile(const plan *p, const char *out_dir, int split, int64_t index,
                            pc_error *err) {
    sy_rng r;
    sy_tile_graph g;
    if (sy_tile_prog_build(p, split, index, &g, &r) != 0) {
        sy_tile_graph_free(&g);
        return pc_fail(err, PC_ERR_NOMEM, "synth: out of memory building a tile graph");
    }
    int64_t c = g.nconfigs;
    int64_t *rt = pc_calloc_array((uint64_t)c, sizeof *rt),
            *nm = pc_calloc_array((uint64_t)c, sizeof *nm);
    graph_arrays a;
    pc_status st = rt && nm ? graph_arrays_make(&g.mod, &a, err)
                            : pc_fail(err, PC_ERR_NOMEM, "synth: out of memory");
    if (st) goto done;
    if (split != 2) { /* test splits carry no measurements */
        for (int64_t i = 0; i < c; i++) {
            rt[i] = measured(g.cost_ns[i], &r, noise(p, NOISE_SIGMA));
            nm[i] = measured(g.cost_ns[g.default_config], &r, noise(p, MACHINE_SIGMA));
        }
    }
    char stem[192], path[4096];
    snprintf(stem, sizeof stem, "%s_s%lld_fusion_%lld", g.model,
             (long long)sy_stem_index(p, 0, split, index), (long long)sy_range(&r, 1, 400));
    pc_npz_writer *w = NULL;
    st = out_path(path, sizeof path, out_dir, COL_TILE, split, stem, err);
    if (!st) st = pc_npz_writer_open(path, compress_mode(p), &w, err);
    if (!st) st = add_graph_arrays(w, &g.mod, &a, err);
    int64_t sc[2] = {c, PC_TPUG_TILE_FEATS}, s1[1] = {c};
    if (!st) st = pc_npz_writer_add(w, "config_feat", PC_DTYPE_F32, 2, sc, g.config_feat, err);
    if (!st) st = pc_npz_writer_add(w, "config_runtime", PC_DTYPE_I64, 1, s1, rt, err);
    if (!st) st = pc_npz_writer_add(w, "config_runtime_normalizers", PC_DTYPE_I64, 1, s1, nm, err);
    if (!st)
        st = pc_npz_writer_commit(w, err);
    else
        pc_npz_writer_abort(w);
    graph_arrays_free(&a);
done:
    free(rt);
    free(nm);
    sy_tile_graph_free(&g);
    return st;
}

/* ---- layout graphs ------------------------------------------------------------- */

typedef struct layout_job {
    const plan *p;
    const char *out_dir;
    int nlp, split;
    int64_t index;
    sy_layout_prog lp;
    graph_arrays a;
    int64_t *splits; /* node_splits, at most ncomp + 2 entries */
    int nsplits;
} layout_job;

/* "random" search: c independent configs, distinct where the space allows. */
static pc_status random_configs(layout_job *j, sy_layout_model *lm, sy_rng *r, int64_t c,
                                float *rows, double *meas, pc_error *err) {
    size_t row = (size_t)j->lp.nc * PC_TPUG_LAYOUT_FEATS;
    sy_hset seen;
    if (sy_hset_init(&seen, (size_t)c)) return pc_fail(err, PC_ERR_NOMEM, "synth: out of memory");
    for (int64_t i = 0; i < c; i++) {
        float *f = rows + (size_t)i * row;
        for (int tries = 0; tries < 10; tries++) {
            sy_layout_config_random(&j->lp.m, j->lp.ids, j->lp.nc, r, f);
            if (sy_hset_add(&seen, sy_hash_bytes(f, row * sizeof *f))) break;
        }
        meas[i] = sy_layout_cost(lm, f) * exp(noise(j->p, NOISE_SIGMA) * sy_normal(r));
    }
    sy_hset_free(&seen);
    return PC_OK;
}

/* The search log's order says which config came first (the default); the
   files list configs in no particular order. */
static pc_status shuffle_configs(float *rows, double *meas, int64_t c, size_t row, sy_rng *r,
                                 pc_error *err) {
    float *tmp = pc_malloc_array(row ? row : 1, sizeof *tmp);
    if (!tmp) return pc_fail(err, PC_ERR_NOMEM, "synth: out of memory");
    for (int64_t i = c - 1; i > 0; i--) {
        int64_t k = sy_range(r, 0, i);
        double t = meas[i];
        meas[i] = meas[k];
        meas[k] = t;
        memcpy(tmp, rows + (size_t)i * row, row * sizeof *tmp);
        memcpy(rows + (size_t)i * row, rows + (size_t)k * row, row * sizeof *tmp);
        memcpy(rows + (size_t)k * row, tmp, row * sizeof *tmp);
    }
    free(tmp);
    return PC_OK;
}

static pc_status write_search(layout_job *j, int search, pc_error *err) {
    const plan *p = j->p;
    int col = (j->nlp ? COL_NLP_RANDOM : COL_XLA_RANDOM) + search;
    if (!(p->cols & (1u << col))) return PC_OK;
    sy_rng r;
    sy_rng_seed(
        &r, sy_mix(sy_graph_seed(p->o->seed, 1 + j->nlp, j->split, j->index), 77 + (uint64_t)search));
    int64_t c =
        p->o->layout_configs ? p->o->layout_configs : sy_range(&r, p->sc.cfg_lo, p->sc.cfg_hi);
    uint64_t nfeat;
    if (!pc_mul_u64((uint64_t)c, (uint64_t)j->lp.nc * PC_TPUG_LAYOUT_FEATS, &nfeat) ||
        nfeat > (UINT64_C(1) << 34))
        return pc_fail(err, PC_ERR_RANGE,
                       "synth: %lld configs x %lld configurable nodes is too large", (long long)c,
                       (long long)j->lp.nc);
    float *rows = pc_malloc_array(nfeat ? nfeat : 1, sizeof(float));
    double *meas = pc_malloc_array((uint64_t)c, sizeof *meas);
    int64_t *rt = pc_calloc_array((uint64_t)c, sizeof *rt);
    sy_layout_model *lm = sy_layout_model_new(&j->lp.m, j->lp.ids, j->lp.nc);
    pc_status st = PC_OK;
    if (!rows || !meas || !rt || !lm)
        st = pc_fail(err, PC_ERR_NOMEM, "synth: out of memory for configs");
    else if (search) {
        sy_layout_search_default(&j->lp.m, j->lp.ids, j->lp.nc, lm, &r, c, noise(p, NOISE_SIGMA), rows,
                                 meas);
        st = shuffle_configs(rows, meas, c, (size_t)j->lp.nc * PC_TPUG_LAYOUT_FEATS, &r, err);
    } else
        st = random_configs(j, lm, &r, c, rows, meas, err);
    for (int64_t i = 0; !st && j->split != 2 && i < c; i++) /* test: no runtimes */
        rt[i] = meas[i] < 1.0 ? 1 : (int64_t)llround(meas[i]);
    sy_layout_model_free(lm);
    free(meas);
    char stem[192], path[4096];
    snprintf(stem, sizeof stem, "%s_s%lld", j->lp.name,
             (long long)sy_stem_index(p, 1, j->split, j->index));
    pc_npz_writer *w = NULL;
    if (!st) st = out_path(path, sizeof path, j->out_dir, col, j->split, stem, err);
    if (!st) st = pc_npz_writer_open(path, compress_mode(p), &w, err);
    if (!st) st = add_graph_arrays(w, &j->lp.m, &j->a, err);
    int64_t sf[3] = {c, j->lp.nc, PC_TPUG_LAYOUT_FEATS}, si[1] = {j->lp.nc}, ss[2] = {1, j->nsplits},
            sr[1] = {c};
    if (!st) st = pc_npz_writer_add(w, "node_config_feat", PC_DTYPE_F32, 3, sf, rows, err);
    free(rows);
    rows = NULL;
    if (!st) st = pc_npz_writer_add(w, "node_config_ids", PC_DTYPE_I64, 1, si, j->lp.ids, err);
    if (!st) st = pc_npz_writer_add(w, "node_splits", PC_DTYPE_I64, 2, ss, j->splits, err);
    if (!st) st = pc_npz_writer_add(w, "config_runtime", PC_DTYPE_I64, 1, sr, rt, err);
    if (!st)
        st = pc_npz_writer_commit(w, err);
    else
        pc_npz_writer_abort(w);
    free(rt);
    return st;
}

static pc_status write_layout(const plan *p, const char *out_dir, int nlp, int split, int64_t index,
                              pc_error *err) {
    layout_job j;
    memset(&j, 0, sizeof j);
    j.p = p, j.out_dir = out_dir, j.nlp = nlp, j.split = split, j.index = index;
    pc_status st = PC_OK;
    if (sy_layout_prog_build(p, nlp, split, index, &j.lp) != 0)
        st = pc_fail(err, PC_ERR_NOMEM, "synth: out of memory building layout program %lld",
                     (long long)index);
    if (!st && !(j.splits = pc_malloc_array((uint64_t)j.lp.m.ncomp + 2, sizeof *j.splits)))
        st = pc_fail(err, PC_ERR_NOMEM, "synth: out of memory");
    if (!st) j.nsplits = sy_node_splits(&j.lp.m, j.splits);
    if (!st) st = graph_arrays_make(&j.lp.m, &j.a, err);
    for (int search = 0; search < 2 && !st; search++) st = write_search(&j, search, err);
    graph_arrays_free(&j.a);
    free(j.splits);
    sy_layout_prog_free(&j.lp);
    return st;
}

/* ---- driver ------------------------------------------------------------------- */

typedef struct task {
    int kind; /* 0 tile, 1 layout xla, 2 layout nlp */
    int split;
    int64_t index;
} task;

static int kind_wanted(const plan *p, int kind) {
    if (kind == 0) return (p->cols >> COL_TILE) & 1;
    int base = kind == 1 ? COL_XLA_RANDOM : COL_NLP_RANDOM;
    return ((p->cols >> base) & 3) != 0;
}

static pc_status make_dirs(const plan *p, const char *out_dir, pc_error *err) {
    char path[4096];
    for (int c = 0; c < NCOL; c++) {
        if (!(p->cols & (1u << c))) continue;
        for (int s = 0; s < 3; s++) {
            int n = snprintf(path, sizeof path, "%s/npz/%s/%s", out_dir, col_dir[c], split_name[s]);
            if (n < 0 || (size_t)n >= sizeof path)
                return pc_fail(err, PC_ERR_ARG, "synth: output path too long");
            pc_status st = pc_mkdirs(path, err);
            if (st) return st;
        }
    }
    return PC_OK;
}

/* Layout programs first: they are the long tasks, so dynamic scheduling
   finishes them alongside the many short tile tasks. */
static int64_t list_tasks(const plan *p, task *t) {
    int64_t n = 0;
    static const int order[3] = {2, 1, 0};
    for (int k = 0; k < 3; k++) {
        int kind = order[k];
        if (!kind_wanted(p, kind)) continue;
        for (int s = 0; s < 3; s++)
            for (int64_t i = 0; i < p->count[kind ? 1 : 0][s]; i++) {
                if (t) t[n] = (task){kind, s, i};
                n++;
            }
    }
    return n;
}

static pc_status run_task(const plan *p, const char *out_dir, const task *t, pc_error *err) {
    if (t->kind == 0) return write_tile(p, out_dir, t->split, t->index, err);
    return write_layout(p, out_dir, t->kind == 2, t->split, t->index, err);
}

static void log_plan(const plan *p, pc_report *log) {
    if (!log) return;
    for (int c = 0; c < NCOL; c++) {
        if (!(p->cols & (1u << c))) continue;
        int kind = c == COL_TILE ? 0 : 1;
        pc_report_add(log, "%s: %lld train, %lld valid, %lld test graphs", col_dir[c],
                      (long long)p->count[kind][0], (long long)p->count[kind][1],
                      (long long)p->count[kind][2]);
    }
}

pc_status pc_synth_write(const char *out_dir, const pc_synth_opts *opts, pc_report *log,
                         pc_error *err) {
    pc_status st = check_opts(out_dir, opts, err);
    if (st) return st;
    plan p;
    sy_plan_make(&p, opts);
    st = make_dirs(&p, out_dir, err);
    if (st) return st;
    int64_t n = list_tasks(&p, NULL);
    task *tasks = pc_malloc_array((uint64_t)(n ? n : 1), sizeof *tasks);
    pc_status *res = pc_calloc_array((uint64_t)(n ? n : 1), sizeof *res);
    pc_error *errs = pc_calloc_array((uint64_t)(n ? n : 1), sizeof *errs);
    if (!tasks || !res || !errs) {
        free(tasks), free(res), free(errs);
        return pc_fail(err, PC_ERR_NOMEM, "synth: out of memory");
    }
    list_tasks(&p, tasks);
    int threads = opts->threads > 0 ? opts->threads : pc_threads();
    int failed = 0;
    int64_t written = 0;
    /* this call's lock for its progress calls: a named critical would be process-wide
       (and exported from the shared library), an unnamed one shared with every other */
    omp_lock_t plock;
    omp_init_lock(&plock);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
        int stop;
#pragma omp atomic read
        stop = failed;
        if (stop) continue; /* the lowest failing task is reported below */
        res[i] = run_task(&p, out_dir, &tasks[i], &errs[i]);
        if (res[i]) {
#pragma omp atomic write
            failed = 1;
        } else if (opts->progress) {
            omp_set_lock(&plock);
            opts->progress(opts->progress_user, "graphs written", ++written, n);
            omp_unset_lock(&plock);
        }
    }
    omp_destroy_lock(&plock);
    for (int64_t i = 0; i < n && !st; i++)
        if (res[i]) {
            st = res[i];
            if (err) *err = errs[i];
        }
    if (!st) log_plan(&p, log);
    free(tasks);
    free(res);
    free(errs);
    return st;
}
