/*
 * perfcast simulate: the simulated TPU's noise-free runtime of every config
 * of a graph perfcast synth wrote (or of a tune output named after one);
 * with --out, the file labelled with them (with --merge, added to another
 * file of the same graph): training data from tune's proposals.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void simulate_help(FILE *f) {
    fprintf(f,
            "usage: perfcast simulate FILE.npz [--seed N] [--scale S] [--graphs N]\n"
            "                         [--layout-nodes N] [--tile-configs N] [--top N] [--json]\n\n"
            "Rebuilds the graph perfcast synth wrote as FILE (named by its stem,\n"
            "<model>_s<N>[_fusion_<K>].npz, in any directory: a tune output named after\n"
            "it works too) and prints the true, noise-free runtime of every config in\n"
            "FILE on synth's simulated TPU, next to the runtime the file records, and the\n"
            "runtime of the compiler's default (layout: all -1; tile: the tiling synth's\n"
            "simulated compiler picks). The options must be those synth ran with (the\n"
            "scale is tried first, then the others); a file synth did not write is\n"
            "refused.\n\n"
            "  --seed N            synth's seed (default 1)\n"
            "  --scale S           synth's scale (default small)\n"
            "  --graphs N, --layout-nodes N, --tile-configs N\n"
            "                      synth's overrides, when it was run with them\n"
            "  --top N             print only the N fastest configs (default: all)\n"
            "  --out LABELED.npz   also write FILE with config_runtime replaced by the\n"
            "                      simulated runtimes (tile: config_runtime_normalizers\n"
            "                      the default's where FILE has none, as in a tune output)\n"
            "  --merge BASE.npz    with --out: write BASE (a file of the same graph, e.g.\n"
            "                      the synth file FILE's proposals were tuned from) with\n"
            "                      FILE's configs that BASE lacks appended, labelled by\n"
            "                      the simulator; BASE's configs keep their recorded\n"
            "                      runtimes (simulated where 0). LABELED may be BASE.\n"
            "  --json              machine-readable output\n\n"
            "The labelling loop (README, \"Labelling tune's proposals\"): tune a graph,\n"
            "simulate the proposals --merge into its training file, train again, so\n"
            "that the data covers where the search goes. On real hardware, measure the\n"
            "proposals instead and write their runtimes into config_runtime.\n");
}

typedef struct sim_out {
    const char *path;
    pc_synth_sim *sim;
    pc_graph *g;
    double *ns;
    size_t *order;
    float *rows; /* FILE's configs, n x width */
    size_t width;
    int64_t n;
    const char *out, *merge; /* --out, --merge */
    int64_t out_configs, out_added;
} sim_out;

static const double *sort_key;
static int by_ns(const void *a, const void *b) {
    double x = sort_key[*(const size_t *)a], y = sort_key[*(const size_t *)b];
    return (x > y) - (x < y);
}

static void print_result(const sim_out *s, long long top, int json) {
    const int64_t *rt = pc_graph_config_runtime(s->g);
    double def = pc_synth_sim_default_ns(s->sim);
    int64_t shown = top > 0 && top < s->n ? top : s->n;
    if (json) {
        printf("{\"file\": \"%s\", \"graph\": \"%s\", \"kind\": \"%s\", \"configs\": %lld, "
               "\"default_ns\": %.6f, ",
               s->path, pc_synth_sim_describe(s->sim),
               pc_synth_sim_is_tile(s->sim) ? "tile" : "layout", (long long)s->n, def);
        if (s->out)
            printf("\"out\": {\"path\": \"%s\", \"configs\": %lld, \"added\": %lld}, ", s->out,
                   (long long)s->out_configs, (long long)s->out_added);
        if (s->n > 0)
            printf("\"best\": {\"config\": %zu, \"ns\": %.6f, \"vs_default\": %.6f}, ", s->order[0],
                   s->ns[s->order[0]], s->ns[s->order[0]] / def);
        printf("\"runtimes\": [");
        for (int64_t r = 0; r < shown; r++) {
            size_t c = s->order[r];
            printf("%s{\"config\": %zu, \"ns\": %.6f, \"file_runtime\": %lld}", r ? ", " : "", c,
                   s->ns[c], (long long)(rt ? rt[c] : 0));
        }
        printf("]}\n");
        return;
    }
    printf("%s: %s, %lld configs; compiler default %.1f ns\n", s->path,
           pc_synth_sim_describe(s->sim), (long long)s->n, def);
    printf("%6s  %8s  %14s  %12s  %s\n", "rank", "config", "simulated_ns", "file_runtime",
           "vs_default");
    for (int64_t r = 0; r < shown; r++) {
        size_t c = s->order[r];
        printf("%6lld  %8zu  %14.1f  %12lld  %10.4f\n", (long long)r + 1, c, s->ns[c],
               (long long)(rt ? rt[c] : 0), s->ns[c] / def);
    }
    if (s->out)
        printf("wrote %s: %lld configs, %lld of them new from FILE (simulated)\n", s->out,
               (long long)s->out_configs, (long long)s->out_added);
}

/* ---- --out / --merge: the file labelled --------------------------------------------- */

/* A simulated runtime as synth records it: whole ns, at least 1. */
static int64_t ns_label(double ns) {
    double r = floor(ns + 0.5);
    return r < 1 ? 1 : (int64_t)r;
}

static int label_fail(pc_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int label_fail(pc_status code, const char *fmt, ...) {
    pc_error e;
    pc_error_clear(&e);
    e.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    return pc_cli_fail(&e);
}

static int differ(const void *a, const void *b, size_t bytes) {
    return bytes && (!a || !b || memcmp(a, b, bytes));
}

/* The first of b's graph arrays that is not a's, or NULL when b holds a's graph. */
static const char *graph_differs(const pc_graph *a, const pc_graph *b) {
    if (pc_graph_kind(a) != pc_graph_kind(b)) return "the kind (tile or layout)";
    size_t n = (size_t)pc_graph_num_nodes(a), m = (size_t)pc_graph_num_edges(a);
    size_t d = (size_t)pc_graph_node_feat_dim(a), nc = (size_t)pc_graph_num_config_nodes(a);
    if ((size_t)pc_graph_num_nodes(b) != n || (size_t)pc_graph_node_feat_dim(b) != d ||
        differ(pc_graph_node_feat(a), pc_graph_node_feat(b), n * d * sizeof(float)))
        return "node_feat";
    if (differ(pc_graph_node_opcode(a), pc_graph_node_opcode(b), n * sizeof(int32_t)))
        return "node_opcode";
    if ((size_t)pc_graph_num_edges(b) != m ||
        differ(pc_graph_edge_index(a), pc_graph_edge_index(b), 2 * m * sizeof(int32_t)))
        return "edge_index";
    if ((size_t)pc_graph_num_config_nodes(b) != nc ||
        differ(pc_graph_node_config_ids(a), pc_graph_node_config_ids(b), nc * sizeof(int32_t)))
        return "node_config_ids";
    return NULL;
}

/* Every config of g, n x w floats (malloc'd). */
static pc_status all_rows(pc_graph *g, size_t w, float **out, pc_error *e) {
    int64_t n = pc_graph_num_configs(g);
    *out = malloc((size_t)(n > 0 ? n : 1) * (w ? w : 1) * sizeof **out);
    if (!*out) {
        e->code = PC_ERR_NOMEM;
        snprintf(e->msg, sizeof e->msg, "out of memory reading %s's configs", pc_graph_path(g));
        return PC_ERR_NOMEM;
    }
    if (pc_graph_kind(g) == PC_KIND_TILE) {
        if (n) memcpy(*out, pc_graph_config_feat(g), (size_t)n * w * sizeof **out);
        return PC_OK;
    }
    return n ? pc_graph_config_feat_rows(g, 0, n, *out, e) : PC_OK;
}

/* The configs written, their runtimes and (tile) normalizers. */
typedef struct labelled {
    float *feat;
    int64_t *rt, *norm;
    int64_t n, added;
} labelled;

/* Writes `out`: base's members, with the configs, runtimes and normalizers of l. */
static pc_status write_labelled(const char *out, const char *base, int tile, int64_t nc,
                                const labelled *l, pc_error *e) {
    pc_npz *z = NULL;
    pc_npz_writer *w = NULL;
    pc_status st = pc_npz_open(base, &z, e);
    if (!st) st = pc_npz_writer_open(out, PC_NPZ_STORED, &w, e);
    const char *fkey = tile ? "config_feat" : "node_config_feat";
    for (int i = 0; !st && i < pc_npz_count(z); i++) {
        const char *key = pc_npz_key(z, i);
        if (!strcmp(key, fkey) || !strcmp(key, "config_runtime") ||
            !strcmp(key, "config_runtime_normalizers"))
            continue;
        pc_array a = PC_ARRAY_INIT;
        st = pc_npz_read(z, i, &a, e);
        if (!st) st = pc_npz_writer_add_array(w, key, &a, e);
        pc_array_free(&a);
    }
    int64_t sf[3] = {l->n, tile ? 24 : nc, 18}, sn[1] = {l->n};
    if (!st) st = pc_npz_writer_add(w, fkey, PC_DTYPE_F32, tile ? 2 : 3, sf, l->feat, e);
    if (!st) st = pc_npz_writer_add(w, "config_runtime", PC_DTYPE_I64, 1, sn, l->rt, e);
    if (!st && tile)
        st = pc_npz_writer_add(w, "config_runtime_normalizers", PC_DTYPE_I64, 1, sn, l->norm, e);
    if (!st)
        st = pc_npz_writer_commit(w, e);
    else
        pc_npz_writer_abort(w);
    pc_npz_close(z);
    return st;
}

/* 1 when row r (w floats) is one of rows[0..n) or of rows[pick[0..k)]. */
static int seen(const float *r, const float *rows, int64_t n, const float *frows,
                const int64_t *pick, int64_t k, size_t w) {
    for (int64_t i = 0; i < n; i++)
        if (!memcmp(r, rows + (size_t)i * w, w * sizeof *r)) return 1;
    for (int64_t i = 0; i < k; i++)
        if (!memcmp(r, frows + (size_t)pick[i] * w, w * sizeof *r)) return 1;
    return 0;
}

/* Fills l: base's configs (nb rows brows, recorded runtimes brt/bnorm kept where > 0,
   else bns), then FILE's configs (pick[0..k) of rows) labelled with ns. */
static int fill_labelled(labelled *l, size_t w, const float *brows, int64_t nb,
                         const int64_t *brt, const int64_t *bnorm, const double *bns,
                         const float *rows, const int64_t *pick, int64_t k, const double *ns,
                         const int64_t *fnorm, int64_t def) {
    size_t n = (size_t)(nb + k);
    l->n = nb + k;
    l->added = k;
    l->feat = malloc((n ? n : 1) * (w ? w : 1) * sizeof *l->feat);
    l->rt = malloc((n ? n : 1) * sizeof *l->rt);
    l->norm = malloc((n ? n : 1) * sizeof *l->norm);
    if (!l->feat || !l->rt || !l->norm) return label_fail(PC_ERR_NOMEM, "out of memory");
    if (nb) memcpy(l->feat, brows, (size_t)nb * w * sizeof *l->feat);
    for (int64_t i = 0; i < nb; i++) {
        l->rt[i] = brt && brt[i] > 0 ? brt[i] : ns_label(bns[i]);
        l->norm[i] = bnorm && bnorm[i] > 0 ? bnorm[i] : def;
    }
    for (int64_t i = 0; i < k; i++) {
        int64_t c = pick[i];
        memcpy(l->feat + (size_t)(nb + i) * w, rows + (size_t)c * w, w * sizeof *l->feat);
        l->rt[nb + i] = ns_label(ns[c]);
        l->norm[nb + i] = fnorm && fnorm[c] > 0 ? fnorm[c] : def;
    }
    return PC_EXIT_OK;
}

/*
 * --out (and --merge): FILE (g, its configs rows and their simulated ns) labelled, or
 * merge's configs plus FILE's new ones; nothing is written on any failure.
 */
static int label_write(const char *out, const char *merge, const char *path, pc_synth_sim *sim,
                       pc_graph *g, const float *rows, const double *ns, int64_t *n_out,
                       int64_t *n_added) {
    pc_error e;
    pc_error_clear(&e);
    int tile = pc_synth_sim_is_tile(sim);
    int64_t nc = pc_graph_num_config_nodes(g), n = pc_graph_num_configs(g), nb = 0, k = 0;
    size_t w = tile ? 24 : (size_t)nc * 18;
    pc_graph *bg = NULL;
    float *brows = NULL;
    double *bns = NULL;
    int64_t *pick = malloc((size_t)(n > 0 ? n : 1) * sizeof *pick);
    labelled l = {0};
    int rc = pick ? PC_EXIT_OK : label_fail(PC_ERR_NOMEM, "out of memory");
    if (!rc && merge) {
        const char *why = NULL;
        if (pc_graph_load(merge, NULL, &bg, &e))
            rc = pc_cli_fail(&e);
        else if ((why = graph_differs(g, bg)) != NULL)
            rc = label_fail(PC_ERR_INVALID,
                            "%s: %s differs from %s's: --merge takes a file of the same graph",
                            merge, why, path);
        else if (all_rows(bg, w, &brows, &e))
            rc = pc_cli_fail(&e);
        nb = rc ? 0 : pc_graph_num_configs(bg);
        bns = rc ? NULL : malloc((size_t)(nb > 0 ? nb : 1) * sizeof *bns);
        if (!rc && !bns) rc = label_fail(PC_ERR_NOMEM, "out of memory");
        if (!rc && nb && pc_synth_sim_run(sim, brows, nb, bns, &e)) rc = pc_cli_fail(&e);
    }
    for (int64_t i = 0; !rc && i < n; i++)
        if (!merge || !seen(rows + (size_t)i * w, brows, nb, rows, pick, k, w)) pick[k++] = i;
    if (!rc)
        rc = fill_labelled(&l, w, brows, nb, bg ? pc_graph_config_runtime(bg) : NULL,
                           bg ? pc_graph_runtime_normalizers(bg) : NULL, bns, rows, pick, k, ns,
                           merge ? NULL : pc_graph_runtime_normalizers(g),
                           ns_label(pc_synth_sim_default_ns(sim)));
    if (!rc && write_labelled(out, merge ? merge : path, tile, nc, &l, &e)) rc = pc_cli_fail(&e);
    *n_out = l.n;
    *n_added = l.added;
    free(l.feat), free(l.rt), free(l.norm), free(pick), free(brows), free(bns);
    pc_graph_free(bg);
    return rc;
}

static int run(sim_out *s, const pc_synth_opts *o, long long top, int json) {
    pc_error e;
    if (pc_synth_sim_load(s->path, o, &s->sim, &e) != PC_OK) {
        int rc = pc_cli_fail(&e);
        if (e.code == PC_ERR_FORMAT)
            fprintf(stderr, "perfcast simulate: pass the --seed (and --graphs, --layout-nodes, "
                            "--tile-configs) perfcast synth was run with\n");
        return rc;
    }
    if (pc_graph_load(s->path, NULL, &s->g, &e) != PC_OK) return pc_cli_fail(&e);
    s->n = pc_graph_num_configs(s->g);
    size_t w = pc_synth_sim_is_tile(s->sim) ? 24 : (size_t)pc_graph_num_config_nodes(s->g) * 18;
    size_t n = (size_t)(s->n > 0 ? s->n : 1);
    float *rows = s->rows = malloc(n * (w ? w : 1) * sizeof *rows);
    s->width = w;
    s->ns = malloc(n * sizeof *s->ns);
    s->order = malloc(n * sizeof *s->order);
    if (!rows || !s->ns || !s->order) {
        fprintf(stderr, "perfcast simulate: error: out of memory\n");
        return PC_EXIT_FAIL;
    }
    pc_status st = PC_OK;
    if (pc_synth_sim_is_tile(s->sim))
        memcpy(rows, pc_graph_config_feat(s->g), (size_t)s->n * w * sizeof *rows);
    else
        st = pc_graph_config_feat_rows(s->g, 0, s->n, rows, &e);
    if (!st) st = pc_synth_sim_run(s->sim, rows, s->n, s->ns, &e);
    if (st) return pc_cli_fail(&e);
    if (s->out) {
        int rc = label_write(s->out, s->merge, s->path, s->sim, s->g, rows, s->ns,
                                  &s->out_configs, &s->out_added);
        if (rc != PC_EXIT_OK) return rc;
    }
    for (int64_t i = 0; i < s->n; i++) s->order[i] = (size_t)i;
    sort_key = s->ns;
    qsort(s->order, (size_t)s->n, sizeof *s->order, by_ns);
    print_result(s, top, json);
    return PC_EXIT_OK;
}

int pc_cmd_simulate(int argc, char **argv) {
    enum { O_GRAPHS = 256, O_LNODES, O_TCONFIGS, O_TOP, O_OUT, O_MERGE };
    static const struct option opts[] = {{"seed", required_argument, 0, 'S'},
                                         {"scale", required_argument, 0, 's'},
                                         {"graphs", required_argument, 0, O_GRAPHS},
                                         {"layout-nodes", required_argument, 0, O_LNODES},
                                         {"tile-configs", required_argument, 0, O_TCONFIGS},
                                         {"top", required_argument, 0, O_TOP},
                                         {"out", required_argument, 0, O_OUT},
                                         {"merge", required_argument, 0, O_MERGE},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    pc_synth_opts o = pc_synth_opts_default();
    long long v, top = 0;
    const char *out = NULL, *merge = NULL;
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "S:s:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'S':
            if (pc_cli_parse_i64(optarg, 0, INT64_MAX, &v))
                return pc_cli_usage_error("simulate",
                                          "--seed expects a non-negative integer, "
                                          "got '%s'",
                                          optarg);
            o.seed = (uint64_t)v;
            break;
        case 's':
            if (pc_synth_scale_parse(optarg, &o.scale) != PC_OK)
                return pc_cli_usage_error("simulate",
                                          "--scale expects tiny, small or full, "
                                          "got '%s'",
                                          optarg);
            break;
        case O_GRAPHS:
        case O_LNODES:
        case O_TCONFIGS:
        case O_TOP:
            if (pc_cli_parse_i64(optarg, 1, 10000000, &v))
                return pc_cli_usage_error("simulate", "%s expects 1..10000000, got '%s'",
                                          argv[optind - 1], optarg);
            if (c == O_GRAPHS)
                o.graphs_per_split = v;
            else if (c == O_LNODES)
                o.layout_nodes = v;
            else if (c == O_TCONFIGS)
                o.tile_configs = v;
            else
                top = v;
            break;
        case O_OUT: out = optarg; break;
        case O_MERGE: merge = optarg; break;
        case 'j': json = 1; break;
        case 'h': simulate_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("simulate", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return pc_cli_usage_error("simulate", optind == argc ? "FILE.npz is required"
                                                             : "one FILE.npz at a time");
    if (merge && !out) return pc_cli_usage_error("simulate", "--merge needs --out");
    if (out) {
        int rc = pc_cli_check_out_file("simulate", "--out", out);
        if (rc >= 0) return rc;
    }
    sim_out s;
    memset(&s, 0, sizeof s);
    s.path = argv[optind];
    s.out = out;
    s.merge = merge;
    int rc = run(&s, &o, top, json);
    free(s.rows);
    free(s.ns);
    free(s.order);
    pc_graph_free(s.g);
    pc_synth_sim_free(s.sim);
    return rc;
}
