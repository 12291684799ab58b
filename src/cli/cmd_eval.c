/* perfcast eval: scores a trained model on a split. */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <string.h>

#include "cli.h"
#include "perfcast/dist.h"
#include "perfcast/predict.h"

static void eval_help(FILE *f) {
    fprintf(f,
            "usage: perfcast eval --model MODEL --data DIR [--split valid] [--json]\n\n"
            "Scores every graph of the split with the model's collection metric: tile prints\n"
            "the mean tile score, ordered-pair accuracy and top-1/5/10 slowdown; layout the\n"
            "mean Kendall tau-b and ordered-pair accuracy.\n\n"
            "  --model MODEL   checkpoint written by perfcast train\n"
            "  --data DIR      dataset root\n"
            "  --split S       train, valid (default) or test (needs runtimes)\n"
            "  --threads N     worker threads (0 = all cores)\n"
            "  --tta M         models with --cfg-attention: average each config's score over\n"
            "                  M orderings of the configs (default 1 = off)\n"
            "  --tta-seed S    seed of those orderings (default 1)\n"
            "  --json          machine-readable output\n\n"
            "An ensemble model (perfcast train --ensemble N) is scored as one: each config\n"
            "gets the mean of its members' scores, each centered over the graph's configs.\n");
}

static void jnum(const char *key, double v, int last) {
    if (isfinite(v)) printf("\"%s\": %.10g%s", key, v, last ? "" : ", ");
    else printf("\"%s\": null%s", key, last ? "" : ", ");
}

/* pc_eval_run_dist with test-time augmentation: the model loaded as a predictor. */
static pc_status eval_tta(const char *model, const char *data, const char *split, int threads,
                          int tta, uint64_t tta_seed, const pc_dist *dist, pc_eval_result *r,
                          pc_error *e) {
    pc_predictor *p = NULL;
    pc_status st = pc_predictor_load(model, threads, &p, e);
    if (!st) st = pc_predictor_set_tta(p, tta, tta_seed, e);
    if (!st) st = pc_predictor_eval(p, data, split, dist, r, e);
    pc_predictor_free(p);
    return st;
}

int pc_cmd_eval(int argc, char **argv) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"data", required_argument, 0, 'd'},
        {"split", required_argument, 0, 's'}, {"threads", required_argument, 0, 't'},
        {"json", no_argument, 0, 'j'},        {"help", no_argument, 0, 'h'},
        {"tta", required_argument, 0, 'A'},   {"tta-seed", required_argument, 0, 'B'},
        {0, 0, 0, 0}};
    const char *model = NULL, *data = NULL, *split = "valid";
    int json = 0, threads = 0, tta = 1;
    uint64_t tta_seed = 1;
    long long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "m:d:s:t:jA:B:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'd': data = optarg; break;
        case 's':
            if (pc_split_find(optarg) < 0)
                return pc_cli_usage_error("eval", "--split expects train, valid or test, got "
                                          "'%s'", optarg);
            split = optarg;
            break;
        case 't':
            if (pc_cli_parse_i64(optarg, 0, 1024, &v))
                return pc_cli_usage_error("eval", "--threads expects 0..1024, got '%s'", optarg);
            threads = (int)v;
            break;
        case 'j': json = 1; break;
        case 'A':
        case 'B':
            if (pc_cli_tta_opt("eval", c == 'A' ? "--tta" : "--tta-seed", optarg, &tta, &tta_seed))
                return PC_EXIT_USAGE;
            break;
        case 'h': eval_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("eval", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!model) return pc_cli_usage_error("eval", "--model MODEL is required");
    if (!data) return pc_cli_usage_error("eval", "--data DIR is required");
    if (optind != argc) return pc_cli_usage_error("eval", "unexpected argument '%s'", argv[optind]);
    pc_error e;
    pc_eval_result r;
    r.struct_size = sizeof r;
    pc_dist *dist = NULL;
    if (pc_cli_dist_open(&argc, &argv, &dist, &e) != PC_OK) return pc_cli_fail(&e);
    pc_status st = tta > 1 ? eval_tta(model, data, split, threads, tta, tta_seed, dist, &r, &e)
                           : pc_eval_run_dist(model, data, split, threads, dist, &r, &e);
    if (st != PC_OK && pc_dist_size(dist) > 1)
        pc_cli_dist_abort(dist, e.msg); /* the other ranks must not wait */
    int rank = pc_dist_rank(dist);
    pc_cli_dist_close(dist);
    if (st != PC_OK) return pc_cli_fail(&e);
    if (rank != 0) return PC_EXIT_OK; /* rank 0 prints */
    const char *name = r.tile ? "tile_score" : "kendall_tau";
    if (json) {
        printf("{\"collection\": \"%s\", \"split\": \"%s\", \"graphs\": %d, \"metric_name\": "
               "\"%s\", ", pc_collection_name(r.collection), split, r.graphs, name);
        jnum("metric", r.metric, 0);
        jnum("kendall_tau", r.tau, 0);
        if (r.tile) {
            jnum("top1_slowdown", r.slowdown[0], 0);
            jnum("top5_slowdown", r.slowdown[1], 0);
            jnum("top10_slowdown", r.slowdown[2], 0);
        }
        jnum("opa", r.opa, 1);
        printf("}\n");
        return PC_EXIT_OK;
    }
    printf("%s %s: %d graphs\n", pc_collection_name(r.collection), split, r.graphs);
    printf("%-15s %.6f\n", name, r.metric);
    if (r.tile) printf("%-15s %.6f\n", "kendall_tau", r.tau);
    printf("%-15s %.6f\n", "opa", r.opa);
    if (r.tile) {
        printf("%-15s %.6f\n", "top1_slowdown", r.slowdown[0]);
        printf("%-15s %.6f\n", "top5_slowdown", r.slowdown[1]);
        printf("%-15s %.6f\n", "top10_slowdown", r.slowdown[2]);
    }
    return PC_EXIT_OK;
}
