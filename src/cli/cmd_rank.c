/* perfcast rank: the best configs of one graph by a trained model. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "perfcast/metrics.h"
#include "perfcast/train.h"

static void rank_help(FILE *f) {
    fprintf(f,
            "usage: perfcast rank --model MODEL FILE.npz [--top N] [--json]\n\n"
            "Scores every config of one graph (of the model's kind) and prints the best N\n"
            "config indices, best first, with their scores (lower = predicted faster) and\n"
            "measured runtimes when the file has them, plus where the truly fastest config\n"
            "ranks.\n\n"
            "  --model MODEL   checkpoint written by perfcast train\n"
            "  --top N         how many configs to print (default 10)\n"
            "  --threads N     worker threads (0 = all cores)\n"
            "  --json          machine-readable output\n");
}

int pc_cmd_rank(int argc, char **argv) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"top", required_argument, 0, 'n'},
        {"threads", required_argument, 0, 't'}, {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *model = NULL;
    int json = 0, threads = 0;
    long long top = 10, v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "m:n:t:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'n':
            if (pc_cli_parse_i64(optarg, 1, 1000000000LL, &top))
                return pc_cli_usage_error("rank", "--top expects a positive count, got '%s'",
                                          optarg);
            break;
        case 't':
            if (pc_cli_parse_i64(optarg, 0, 1024, &v))
                return pc_cli_usage_error("rank", "--threads expects 0..1024, got '%s'", optarg);
            threads = (int)v;
            break;
        case 'j': json = 1; break;
        case 'h': rank_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("rank", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!model) return pc_cli_usage_error("rank", "--model MODEL is required");
    if (optind >= argc) return pc_cli_usage_error("rank", "a FILE.npz operand is required");
    if (optind + 1 != argc)
        return pc_cli_usage_error("rank", "unexpected argument '%s'", argv[optind + 1]);
    const char *path = argv[optind];
    pc_error e;
    pc_predictor *p = NULL;
    if (pc_predictor_open(model, threads, &p, &e) != PC_OK) return pc_cli_fail(&e);
    int coll = pc_predictor_collection(p);
    pc_load_opts lo = pc_load_opts_default();
    lo.threads = threads;
    pc_graph *g = NULL;
    if (pc_graph_load(path, &lo, &g, &e) != PC_OK) {
        pc_predictor_free(p);
        return pc_cli_fail(&e);
    }
    int rc = PC_EXIT_OK;
    int64_t n = pc_graph_num_configs(g);
    double *scores = malloc((size_t)(n > 0 ? n : 1) * sizeof *scores);
    size_t *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    size_t got = 0;
    if (!scores || !idx) {
        fprintf(stderr, "perfcast rank: error: out of memory\n");
        rc = PC_EXIT_FAIL;
    } else if (n < 1) {
        fprintf(stderr, "perfcast rank: error: %s has no configs\n", path);
        rc = PC_EXIT_FAIL;
    } else if (pc_predictor_score(p, g, scores, &e) != PC_OK ||
               pc_topk_indices(scores, (size_t)n, (size_t)n, idx, &got, &e) != PC_OK) {
        rc = pc_cli_fail(&e);
    }
    if (rc == PC_EXIT_OK) {
        const int64_t *rt = pc_graph_config_runtime(g);
        int have_rt = 0;
        for (int64_t k = 0; rt && k < n; k++)
            if (rt[k] > 0) have_rt = 1;
        /* the truly fastest config (lowest index among ties) and its predicted rank */
        size_t best = 0, best_rank = 0;
        if (have_rt) {
            for (int64_t k = 1; k < n; k++)
                if (rt[k] < rt[best]) best = (size_t)k;
            for (size_t r = 0; r < got; r++)
                if (idx[r] == best) best_rank = r + 1;
        }
        size_t shown = (size_t)top < got ? (size_t)top : got;
        if (json) {
            printf("{\"file\": \"%s\", \"collection\": \"%s\", \"configs\": %lld, \"top\": [",
                   path, pc_collection_name(coll), (long long)n);
            for (size_t r = 0; r < shown; r++) {
                printf("%s{\"rank\": %zu, \"config\": %zu, \"score\": %.9g", r ? ", " : "",
                       r + 1, idx[r], scores[idx[r]]);
                if (have_rt) printf(", \"runtime\": %lld", (long long)rt[idx[r]]);
                printf("}");
            }
            printf("]");
            if (have_rt)
                printf(", \"true_best\": {\"config\": %zu, \"runtime\": %lld, \"rank\": %zu}",
                       best, (long long)rt[best], best_rank);
            printf("}\n");
        } else {
            for (size_t r = 0; r < shown; r++) {
                printf("%4zu  config %-8zu score %14.6g", r + 1, idx[r], scores[idx[r]]);
                if (have_rt) printf("  runtime %lld", (long long)rt[idx[r]]);
                printf("\n");
            }
            if (have_rt)
                fprintf(stderr, "true best: config %zu (runtime %lld) ranks %zu of %lld\n", best,
                        (long long)rt[best], best_rank, (long long)n);
        }
    }
    free(scores);
    free(idx);
    pc_graph_free(g);
    pc_predictor_free(p);
    return rc;
}
