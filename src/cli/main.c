/* perfcast: the command-line front end. Each subcommand lives in cmd_<name>.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
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
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
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

int pc_cli_write_text(const char *path, const char *text, pc_error *err) {
    if (strcmp(path, "-") == 0) {
        fputs(text, stdout);
        return 0;
    }
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(err->msg, sizeof err->msg, "%s: path too long", path);
        return -1;
    }
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot write: %s", path, strerror(errno));
        if (fd >= 0) close(fd), unlink(tmp);
        return -1;
    }
    int bad = fputs(text, f) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
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
