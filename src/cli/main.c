/* perfcast: the command-line front end. Each subcommand lives in cmd_<name>.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const pc_command commands[] = {
    {"info", "show every array of a .npz/.npy file (dtype, shape, min/max/mean) and a graph summary",
     pc_cmd_info},
    {"stats", "per collection and split: graphs, nodes, edges, configs, runtime spread",
     pc_cmd_stats},
    {"check", "validate a file or a whole dataset tree, listing every problem", pc_cmd_check},
    {"synth", "write a synthetic TpuGraphs-format dataset", pc_cmd_synth},
    {"cache", "convert a dataset tree into a memory-mappable cache", pc_cmd_cache},
    {"train", "train a learned cost model on one collection (safetensors checkpoint)",
     pc_cmd_train},
    {"eval", "score a trained model on a split (tile score / Kendall tau, OPA, slowdown)",
     pc_cmd_eval},
    {"predict", "write a competition-format CSV of predicted config rankings", pc_cmd_predict},
    {"rank", "print the best configs of one graph by a trained model", pc_cmd_rank},
    {"import", "import raw XLA HLO tuning data (.pb) into dataset .npz files", pc_cmd_import},
    {"chips", "accelerator database: FLOP/s, HBM, interconnect, critical intensity", pc_cmd_chips},
    {"roofline", "roofline time of a matmul or a list of ops on a chip (+ SVG plot)",
     pc_cmd_roofline},
    {"collective", "AllGather/ReduceScatter/AllReduce/AllToAll time over mesh axes",
     pc_cmd_collective},
    {"model", "transformer params, FLOPs, training memory, KV cache (HF config.json)",
     pc_cmd_model},
    {"plan", "training parallelism plans and serving tables (plan train | plan serve)",
     pc_cmd_plan},
    {"validate", "predict measured training / serving runs and report the errors",
     pc_cmd_validate},
    {"calibrate", "fit the analytic model's coefficients to measured runs", pc_cmd_calibrate},
};
#define NUM_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f,
            "perfcast %s - learned and analytical performance models for ML programs\n\n"
            "usage: perfcast <command> [options]\n"
            "       perfcast <command> --help\n"
            "       perfcast --version\n\ncommands:\n",
            pc_version());
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int pc_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "perfcast %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'perfcast %s --help')\n", cmd);
    va_end(ap);
    return PC_EXIT_USAGE;
}

int pc_cli_fail(const pc_error *err) {
    fprintf(stderr, "perfcast: error: %s\n", err->msg[0] ? err->msg : pc_status_name(err->code));
    return PC_EXIT_FAIL;
}

int pc_cli_parse_i64(const char *s, long long lo, long long hi, long long *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int pc_cli_json_threads_opts(const char *cmd, int argc, char **argv, int *json,
                             long long *threads, void (*help)(FILE *)) {
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"threads", required_argument, 0, 't'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jt:h", opts, NULL)) != -1) {
        if (c == 'j') *json = 1;
        else if (c == 't') {
            if (pc_cli_parse_i64(optarg, 0, 1024, threads))
                return pc_cli_usage_error(cmd, "--threads expects 0..1024, got '%s'", optarg);
        } else if (c == 'h') {
            help(stdout);
            return PC_EXIT_OK;
        } else return pc_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    }
    return -1;
}

const char *pc_cli_human(double v, char *buf, size_t cap) {
    const char *unit = "";
    if (v >= 1e9) v /= 1e9, unit = "G";
    else if (v >= 1e6) v /= 1e6, unit = "M";
    else if (v >= 1e4) v /= 1e3, unit = "k";
    if (*unit) snprintf(buf, cap, "%.1f%s", v, unit);
    else snprintf(buf, cap, "%.0f", v);
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return PC_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return PC_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("perfcast %s\n", pc_version());
        return PC_EXIT_OK;
    }
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "perfcast: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return PC_EXIT_USAGE;
}
