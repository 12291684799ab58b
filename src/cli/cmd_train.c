/* perfcast train: fits a learned cost model on one collection. */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "perfcast/train.h"

static void train_help(FILE *f) {
    fprintf(f,
            "usage: perfcast train --data DIR --collection C --out MODEL [options]\n\n"
            "Trains the GNN cost model of one collection (tile:xla, layout:xla:random, ...)\n"
            "on DIR's train split, keeps the parameters that score best on the valid split\n"
            "(tile: mean tile score; layout: mean Kendall tau) and writes them with the\n"
            "feature preprocessing to MODEL (safetensors). Same seed, same bytes.\n\n"
            "  --data DIR          dataset root\n"
            "  --collection C      collection to train on\n"
            "  --out MODEL         checkpoint to write\n"
            "  --time-budget SEC   stop in time (default: none)\n"
            "  --epochs N          at most N epochs (default 20)\n"
            "  --patience N        early stop after N epochs without gain (default 5)\n"
            "  --seed N            random seed (default 1)\n"
            "  --threads N         worker threads (0 = all cores)\n"
            "  --configs K         configs sampled per graph and step (default 32 tile, 16 layout)\n"
            "  --lr X              peak learning rate (default 0.001)\n"
            "  --hidden N          hidden width (default 64)\n"
            "  --layers N          GNN layers (default 3)\n");
}

static void log_line(void *user, const char *line) {
    (void)user;
    printf("%s\n", line);
    fflush(stdout);
}

static int parse_double(const char *s, double lo, double hi, double *out) {
    if (!s || !*s) return -1;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int pc_cmd_train(int argc, char **argv) {
    enum { O_BUDGET = 256, O_EPOCHS, O_PATIENCE, O_CONFIGS, O_LR, O_HIDDEN, O_LAYERS };
    static const struct option opts[] = {
        {"data", required_argument, 0, 'd'},         {"collection", required_argument, 0, 'c'},
        {"out", required_argument, 0, 'o'},          {"time-budget", required_argument, 0, O_BUDGET},
        {"epochs", required_argument, 0, O_EPOCHS},  {"patience", required_argument, 0, O_PATIENCE},
        {"seed", required_argument, 0, 'S'},         {"threads", required_argument, 0, 't'},
        {"configs", required_argument, 0, O_CONFIGS}, {"lr", required_argument, 0, O_LR},
        {"hidden", required_argument, 0, O_HIDDEN},  {"layers", required_argument, 0, O_LAYERS},
        {"help", no_argument, 0, 'h'},               {0, 0, 0, 0}};
    pc_train_opts o = pc_train_opts_default();
    long long v;
    double d;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "d:c:o:S:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': o.data_dir = optarg; break;
        case 'c':
            if (pc_collection_find(optarg) < 0)
                return pc_cli_usage_error("train", "--collection expects tile:xla or "
                                          "layout:{xla,nlp}:{random,default}, got '%s'", optarg);
            o.collection = optarg;
            break;
        case 'o': o.out_path = optarg; break;
        case O_BUDGET:
            if (parse_double(optarg, 0, 1e9, &d))
                return pc_cli_usage_error("train", "--time-budget expects seconds >= 0, got '%s'",
                                          optarg);
            o.time_budget = d;
            break;
        case O_LR:
            if (parse_double(optarg, 1e-9, 10, &d))
                return pc_cli_usage_error("train", "--lr expects a number in (0, 10], got '%s'",
                                          optarg);
            o.lr = (float)d;
            break;
        case 'S':
            if (pc_cli_parse_i64(optarg, 0, INT64_MAX, &v))
                return pc_cli_usage_error("train", "--seed expects a non-negative integer, got "
                                          "'%s'", optarg);
            o.seed = (uint64_t)v;
            break;
        case 't':
            if (pc_cli_parse_i64(optarg, 0, 1024, &v))
                return pc_cli_usage_error("train", "--threads expects 0..1024, got '%s'", optarg);
            o.threads = (int)v;
            break;
        case O_EPOCHS:
        case O_PATIENCE:
        case O_CONFIGS:
        case O_HIDDEN:
        case O_LAYERS: {
            const char *flag = c == O_EPOCHS ? "--epochs" : c == O_PATIENCE ? "--patience"
                               : c == O_CONFIGS ? "--configs" : c == O_HIDDEN ? "--hidden"
                               : "--layers";
            long long lo = c == O_LAYERS ? 0 : c == O_CONFIGS ? 2 : 1;
            long long hi = c == O_HIDDEN ? 4096 : c == O_LAYERS ? 64 : 1000000;
            if (pc_cli_parse_i64(optarg, lo, hi, &v))
                return pc_cli_usage_error("train", "%s expects %lld..%lld, got '%s'", flag, lo,
                                          hi, optarg);
            if (c == O_EPOCHS) o.epochs = (int)v;
            else if (c == O_PATIENCE) o.patience = (int)v;
            else if (c == O_CONFIGS) o.configs = (int)v;
            else if (c == O_HIDDEN) o.hidden = (int)v;
            else o.layers = (int)v;
            break;
        }
        case 'h': train_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("train", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!o.data_dir) return pc_cli_usage_error("train", "--data DIR is required");
    if (!o.collection) return pc_cli_usage_error("train", "--collection C is required");
    if (!o.out_path) return pc_cli_usage_error("train", "--out MODEL is required");
    if (optind != argc) return pc_cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
    pc_error e;
    pc_train_result r;
    if (pc_train_run(&o, log_line, NULL, &r, &e) != PC_OK) return pc_cli_fail(&e);
    return PC_EXIT_OK;
}
