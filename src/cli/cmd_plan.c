/* perfcast plan train | serve: parallelism plans for training, serving tables (issue #6). */
#define _GNU_SOURCE
#include <string.h>

#include "plan_cli.h"

static void plan_help(FILE *f) {
    fprintf(f, "usage: perfcast plan train ...   (perfcast plan train --help)\n"
               "       perfcast plan serve ...   (perfcast plan serve --help)\n\n"
               "Analytical planning after the scaling book (docs/analytic.md, \"Planning\"):\n"
               "  train  search data x FSDP/ZeRO x tensor x pipeline x expert parallelism, remat\n"
               "         and micro-batches for a model on a TPU slice or GPU cluster; rank the\n"
               "         plans that fit by roofline step time; days, cost, thresholds, JAX mesh\n"
               "  serve  prefill/decode latency and throughput against batch and context, KV\n"
               "         cache, largest batch, model-parallel limits, cost per million tokens\n");
}

/* `perfcast plan SUB ...`: the subcommands live in cmd_plan_train.c and
 * cmd_plan_serve.c. */
int pc_cmd_plan(int argc, char **argv) {
    if (argc < 2) {
        plan_help(stderr);
        return PC_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        plan_help(stdout);
        return PC_EXIT_OK;
    }
    if (!strcmp(sub, "train")) return pc_pcli_train(argc - 1, argv + 1);
    if (!strcmp(sub, "serve")) return pc_pcli_serve(argc - 1, argv + 1);
    return pc_cli_usage_error("plan", "unknown subcommand '%s' (train, serve)", sub);
}
