/*
 * perfcast simulate: the simulated TPU's noise-free runtime of every config
 * of a graph perfcast synth wrote (or of a tune output named after one).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
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
            "  --json              machine-readable output\n");
}

typedef struct sim_out {
    const char *path;
    pc_synth_sim *sim;
    pc_graph *g;
    double *ns;
    size_t *order;
    int64_t n;
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
    float *rows = malloc(n * (w ? w : 1) * sizeof *rows);
    s->ns = malloc(n * sizeof *s->ns);
    s->order = malloc(n * sizeof *s->order);
    if (!rows || !s->ns || !s->order) {
        free(rows);
        fprintf(stderr, "perfcast simulate: error: out of memory\n");
        return PC_EXIT_FAIL;
    }
    pc_status st = PC_OK;
    if (pc_synth_sim_is_tile(s->sim))
        memcpy(rows, pc_graph_config_feat(s->g), (size_t)s->n * w * sizeof *rows);
    else
        st = pc_graph_config_feat_rows(s->g, 0, s->n, rows, &e);
    if (!st) st = pc_synth_sim_run(s->sim, rows, s->n, s->ns, &e);
    free(rows);
    if (st) return pc_cli_fail(&e);
    for (int64_t i = 0; i < s->n; i++) s->order[i] = (size_t)i;
    sort_key = s->ns;
    qsort(s->order, (size_t)s->n, sizeof *s->order, by_ns);
    print_result(s, top, json);
    return PC_EXIT_OK;
}

int pc_cmd_simulate(int argc, char **argv) {
    enum { O_GRAPHS = 256, O_LNODES, O_TCONFIGS, O_TOP };
    static const struct option opts[] = {{"seed", required_argument, 0, 'S'},
                                         {"scale", required_argument, 0, 's'},
                                         {"graphs", required_argument, 0, O_GRAPHS},
                                         {"layout-nodes", required_argument, 0, O_LNODES},
                                         {"tile-configs", required_argument, 0, O_TCONFIGS},
                                         {"top", required_argument, 0, O_TOP},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    pc_synth_opts o = pc_synth_opts_default();
    long long v, top = 0;
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
        case 'j': json = 1; break;
        case 'h': simulate_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("simulate", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return pc_cli_usage_error("simulate", optind == argc ? "FILE.npz is required"
                                                             : "one FILE.npz at a time");
    sim_out s;
    memset(&s, 0, sizeof s);
    s.path = argv[optind];
    int rc = run(&s, &o, top, json);
    free(s.ns);
    free(s.order);
    pc_graph_free(s.g);
    pc_synth_sim_free(s.sim);
    return rc;
}
