/*
 * perfcast stats: per collection and split, graph/node/edge/config counts
 * and runtime spread. Reads only .npy headers and config_runtime, so it
 * summarises the full public dataset in seconds.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "perfcast/prune.h"

typedef struct graph_row {
    int ok;
    int64_t nodes, edges, configs, config_nodes;
    double spread; /* max/min runtime, 0 if no runtimes */
    char error[PC_ERROR_MSG_MAX];
} graph_row;

static int64_t dim0(pc_npz *z, const char *key, pc_error *e) {
    int i = pc_npz_find(z, key);
    pc_array_info info;
    if (i < 0 || pc_npz_info(z, i, &info, e) != PC_OK || info.ndim == 0) return -1;
    return info.shape[0];
}

static double spread_of(const int64_t *rt, int64_t c) {
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t k = 0; k < c; k++) {
        if (rt[k] > 0 && rt[k] < lo) lo = rt[k];
        if (rt[k] > hi) hi = rt[k];
    }
    return hi > 0 && lo < INT64_MAX ? (double)hi / (double)lo : 0.0;
}

static void row_from_npz(const char *path, graph_row *r) {
    pc_error e;
    pc_error_clear(&e);
    pc_npz *z;
    if (pc_npz_open(path, &z, &e) != PC_OK) {
        snprintf(r->error, sizeof r->error, "%s", e.msg);
        return;
    }
    r->nodes = dim0(z, "node_opcode", &e);
    r->edges = dim0(z, "edge_index", &e);
    r->config_nodes = pc_npz_find(z, "node_config_ids") >= 0 ? dim0(z, "node_config_ids", &e) : 0;
    int ir = pc_npz_find(z, "config_runtime");
    pc_array rt;
    if (ir >= 0 && pc_npz_read(z, ir, &rt, &e) == PC_OK &&
        pc_array_convert(&rt, PC_DTYPE_I64, path, &e) == PC_OK) {
        r->configs = pc_array_count(&rt);
        r->spread = spread_of(rt.data, r->configs);
        pc_array_free(&rt);
        r->ok = r->nodes >= 0 && r->edges >= 0 && r->config_nodes >= 0;
        if (!r->ok) snprintf(r->error, sizeof r->error, "%s: missing or bad node_opcode/edge_index/"
                             "node_config_ids", path);
    } else {
        snprintf(r->error, sizeof r->error, "%s", e.msg[0] ? e.msg : "missing config_runtime");
    }
    pc_npz_close(z);
}

static void row_from_graph(const char *path, graph_row *r) {
    pc_load_opts o = pc_load_opts_default();
    o.max_resident_config_bytes = 1;
    o.threads = 1;
    pc_graph *g;
    pc_error e;
    if (pc_graph_load(path, &o, &g, &e) != PC_OK) {
        snprintf(r->error, sizeof r->error, "%s", e.msg);
        return;
    }
    r->nodes = pc_graph_num_nodes(g);
    r->edges = pc_graph_num_edges(g);
    r->configs = pc_graph_num_configs(g);
    r->config_nodes = pc_graph_num_config_nodes(g);
    r->spread = spread_of(pc_graph_config_runtime(g), r->configs);
    r->ok = 1;
    pc_graph_free(g);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct summary {
    size_t graphs, failed, no_runtime;
    int64_t nodes, edges, configs, config_nodes, max_nodes, max_configs, max_config_nodes;
    double spread_median, spread_max;
} summary;

static summary summarise(const graph_row *rows, size_t n) {
    summary s = {0};
    double *sp = malloc((n + 1) * sizeof *sp);
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        const graph_row *r = &rows[i];
        if (!r->ok) {
            s.failed++;
            continue;
        }
        s.graphs++;
        s.nodes += r->nodes;
        s.edges += r->edges;
        s.configs += r->configs;
        s.config_nodes += r->config_nodes;
        if (r->nodes > s.max_nodes) s.max_nodes = r->nodes;
        if (r->configs > s.max_configs) s.max_configs = r->configs;
        if (r->config_nodes > s.max_config_nodes) s.max_config_nodes = r->config_nodes;
        if (r->spread > 0 && sp) sp[ns++] = r->spread;
        else s.no_runtime++;
    }
    if (ns) {
        qsort(sp, ns, sizeof *sp, cmp_double);
        s.spread_median = ns % 2 ? sp[ns / 2] : 0.5 * (sp[ns / 2 - 1] + sp[ns / 2]);
        s.spread_max = sp[ns - 1];
    }
    free(sp);
    return s;
}

static cJSON *summary_json(int c, int sp, const summary *s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "collection", pc_collection_name(c));
    cJSON_AddStringToObject(o, "split", pc_split_name(sp));
    cJSON_AddNumberToObject(o, "graphs", (double)s->graphs);
    cJSON_AddNumberToObject(o, "unreadable", (double)s->failed);
    cJSON_AddNumberToObject(o, "nodes", (double)s->nodes);
    cJSON_AddNumberToObject(o, "max_nodes", (double)s->max_nodes);
    cJSON_AddNumberToObject(o, "edges", (double)s->edges);
    cJSON_AddNumberToObject(o, "configs", (double)s->configs);
    cJSON_AddNumberToObject(o, "max_configs", (double)s->max_configs);
    cJSON_AddNumberToObject(o, "configurable_nodes", (double)s->config_nodes);
    cJSON_AddNumberToObject(o, "max_configurable_nodes", (double)s->max_config_nodes);
    cJSON_AddNumberToObject(o, "graphs_without_runtimes", (double)s->no_runtime);
    cJSON_AddNumberToObject(o, "runtime_spread_median", s->spread_median);
    cJSON_AddNumberToObject(o, "runtime_spread_max", s->spread_max);
    return o;
}

static void print_header(void) {
    printf("%-19s %-5s %6s %9s %8s %9s %9s %8s %9s %9s %8s %8s\n", "collection", "split", "graphs",
           "nodes", "mean", "max", "edges", "configs", "mean", "max", "cfgnodes", "spread");
}

static void print_summary(int c, int sp, const summary *s) {
    char a[6][32];
    double g = s->graphs ? (double)s->graphs : 1.0;
    printf("%-19s %-5s %6zu %9s %8s %9lld %9s %8s %9s %9lld %8.0f ", pc_collection_name(c),
           pc_split_name(sp), s->graphs, pc_cli_human((double)s->nodes, a[0], 32),
           pc_cli_human((double)s->nodes / g, a[1], 32), (long long)s->max_nodes,
           pc_cli_human((double)s->edges, a[2], 32), pc_cli_human((double)s->configs, a[3], 32),
           pc_cli_human((double)s->configs / g, a[4], 32), (long long)s->max_configs,
           (double)s->config_nodes / g);
    if (s->spread_median > 0) printf("x%.2f", s->spread_median);
    else printf("%8s", "-");
    if (s->failed) printf("  (%zu unreadable)", s->failed);
    printf("\n");
}

static void stats_help(FILE *f) {
    fprintf(f,
            "usage: perfcast stats [--json] [--threads N] [--prune-hops K [--collapse-chains]] DIR\n\n"
            "DIR holds npz/{tile/xla,layout/{xla,nlp}/{random,default}}/{train,valid,test}/\n"
            "(or those folders directly, or a cache made by 'perfcast cache').\n"
            "Columns: graphs; nodes total/mean/max; edges total; configs total/mean/max;\n"
            "mean configurable nodes per graph; median over graphs of slowest/fastest runtime.\n"
            "--prune-hops K adds, per layout graph, the nodes and edges that pruning to the\n"
            "configurable nodes and their K-hop neighbourhood keeps (as 'train --prune-hops K',\n"
            "K >= 1; train's layout default is 1).\n");
}

/* Per-graph pruning report of the layout collections (text or JSON). */
static int prune_report(const pc_dataset *d, int hops, int collapse, cJSON *out) {
    int rc = PC_EXIT_OK;
    if (!out)
        printf("\npruning to configurable nodes + %d hop%s%s:\n", hops, hops == 1 ? "" : "s",
               collapse ? ", chains collapsed" : "");
    pc_load_opts lo = pc_load_opts_default();
    lo.max_resident_config_bytes = 1; /* configs are not needed: stream (never read) them */
    for (int col = 0; col < PC_NUM_COLLECTIONS; col++) {
        if (pc_collection_kind(col) != PC_KIND_LAYOUT) continue;
        for (int sp = 0; sp < PC_NUM_SPLITS; sp++) {
            size_t n = pc_dataset_num_files(d, col, sp);
            int64_t tn = 0, tm = 0, an = 0, am = 0;
            for (size_t i = 0; i < n; i++) {
                const char *f = pc_dataset_file(d, col, sp, i);
                pc_graph *g = NULL;
                pc_prune_summary s;
                s.struct_size = sizeof s;
                pc_error e;
                lo.kind = PC_KIND_LAYOUT;
                if (pc_graph_load(f, &lo, &g, &e) || pc_graph_prune_summary(g, hops, collapse, &s,
                                                                            &e)) {
                    fprintf(stderr, "perfcast stats: skipped: %s\n", e.msg);
                    pc_graph_free(g);
                    rc = PC_EXIT_FAIL;
                    continue;
                }
                pc_graph_free(g);
                tn += s.nodes, tm += s.edges, an += s.nodes_after, am += s.edges_after;
                if (out) {
                    cJSON *o = cJSON_CreateObject();
                    cJSON_AddStringToObject(o, "collection", pc_collection_name(col));
                    cJSON_AddStringToObject(o, "split", pc_split_name(sp));
                    cJSON_AddStringToObject(o, "file", f);
                    cJSON_AddNumberToObject(o, "nodes", (double)s.nodes);
                    cJSON_AddNumberToObject(o, "edges", (double)s.edges);
                    cJSON_AddNumberToObject(o, "nodes_after", (double)s.nodes_after);
                    cJSON_AddNumberToObject(o, "edges_after", (double)s.edges_after);
                    cJSON_AddNumberToObject(o, "config_nodes", (double)s.config_nodes);
                    cJSON_AddItemToArray(out, o);
                } else {
                    const char *b = strrchr(f, '/');
                    printf("  %-19s %-5s %-36s nodes %7lld -> %7lld (%5.1f%%)  edges %7lld -> "
                           "%7lld (%5.1f%%)\n", pc_collection_name(col), pc_split_name(sp),
                           b ? b + 1 : f, (long long)s.nodes, (long long)s.nodes_after,
                           100.0 * (double)s.nodes_after / (double)(s.nodes ? s.nodes : 1),
                           (long long)s.edges, (long long)s.edges_after,
                           100.0 * (double)s.edges_after / (double)(s.edges ? s.edges : 1));
                }
            }
            if (!out && n)
                printf("  %-19s %-5s %-36s nodes %7lld -> %7lld (%5.1f%%)  edges %7lld -> "
                       "%7lld (%5.1f%%)\n", pc_collection_name(col), pc_split_name(sp), "(all)",
                       (long long)tn, (long long)an, 100.0 * (double)an / (double)(tn ? tn : 1),
                       (long long)tm, (long long)am, 100.0 * (double)am / (double)(tm ? tm : 1));
        }
    }
    return rc;
}

int pc_cmd_stats(int argc, char **argv) {
    int json = 0, hops = -1, collapse = 0;
    long long threads = 0;
    /* --prune-hops / --collapse-chains are taken out before the shared parser */
    int k = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--collapse-chains")) {
            collapse = 1;
            continue;
        }
        if (!strcmp(argv[i], "--prune-hops")) {
            long long v;
            /* as in train, 0 means "no pruning": nothing to report */
            if (i + 1 >= argc || pc_cli_parse_i64(argv[i + 1], 1, 64, &v))
                return pc_cli_usage_error("stats", "--prune-hops expects 1..64 (0 means no "
                                          "pruning, as in 'train --prune-hops 0')");
            hops = (int)v;
            i++;
            continue;
        }
        argv[k++] = argv[i];
    }
    argc = k;
    if (collapse && hops < 0)
        return pc_cli_usage_error("stats", "--collapse-chains needs --prune-hops K");
    int rc0 = pc_cli_json_threads_opts("stats", argc, argv, &json, &threads, stats_help);
    if (rc0 >= 0) return rc0;
    if (optind != argc - 1) return pc_cli_usage_error("stats", "expected exactly one DIR");
    pc_error e;
    pc_dataset *d;
    if (pc_dataset_open(argv[optind], &d, &e) != PC_OK) return pc_cli_fail(&e);
    cJSON *out = json ? cJSON_CreateArray() : NULL;
    if (!json) {
        printf("dataset: %s\n", pc_dataset_root(d));
        print_header();
    }
    int rc = PC_EXIT_OK;
    for (int col = 0; col < PC_NUM_COLLECTIONS; col++) {
        for (int sp = 0; sp < PC_NUM_SPLITS; sp++) {
            size_t n = pc_dataset_num_files(d, col, sp);
            if (n == 0) continue;
            graph_row *rows = calloc(n, sizeof *rows);
            if (!rows) {
                rc = PC_EXIT_FAIL;
                break;
            }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? (int)threads : 2)
            for (size_t i = 0; i < n; i++) {
                const char *f = pc_dataset_file(d, col, sp, i);
                size_t len = strlen(f);
                if (len > 4 && !strcmp(f + len - 4, ".pcc")) row_from_graph(f, &rows[i]);
                else row_from_npz(f, &rows[i]);
            }
            for (size_t i = 0; i < n; i++)
                if (!rows[i].ok) {
                    fprintf(stderr, "perfcast stats: skipped: %s\n", rows[i].error);
                    rc = PC_EXIT_FAIL;
                }
            summary s = summarise(rows, n);
            if (json) cJSON_AddItemToArray(out, summary_json(col, sp, &s));
            else print_summary(col, sp, &s);
            free(rows);
        }
    }
    /* one shape with or without --prune-hops: {"dataset", "splits", "pruning"} */
    cJSON *pruning = NULL;
    if (hops >= 0) {
        cJSON *pr = json ? cJSON_CreateArray() : NULL;
        if (prune_report(d, hops, collapse, pr) != PC_EXIT_OK) rc = PC_EXIT_FAIL;
        if (json) {
            pruning = cJSON_CreateObject();
            cJSON_AddNumberToObject(pruning, "hops", hops);
            cJSON_AddBoolToObject(pruning, "collapse_chains", collapse);
            cJSON_AddItemToObject(pruning, "graphs", pr);
        }
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "dataset", pc_dataset_root(d));
        cJSON_AddItemToObject(o, "splits", out);
        cJSON_AddItemToObject(o, "pruning", pruning ? pruning : cJSON_CreateNull());
        int prc = pc_cli_json_print(o);
        if (rc == PC_EXIT_OK) rc = prc;
    }
    pc_dataset_close(d);
    return rc;
}
