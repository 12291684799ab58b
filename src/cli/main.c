/* perfcast: the command-line front end. Each subcommand lives in cmd_<name>.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sys/stat.h>

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
    {"tune", "search for faster configs of a graph with a trained model", pc_cmd_tune},
    {"simulate", "true runtimes of a synth graph's configs on its simulated TPU", pc_cmd_simulate},
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
    {"plot", "pictures of what other commands wrote (plot train: train --log)", pc_cmd_plot},
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

/*
 * The library's messages name its API (struct fields, parameters); where
 * one tells what to change, the command names its flag instead. Each pair:
 * a phrase the library writes (src/analytic/, src/gnn/predict.c) and what the
 * command says.
 */
static const char *const flag_phrases[][2] = {
    {"in the chip (pc_chip or chips JSON)", "in a --chips-file"},
    {"so set the mesh's dcn_mask to 0", "so drop --dcn-axes"},
    {"in the mesh's dcn_mask", "with --dcn-axes"},
    {"pick another act_prec", "pick another --act-dtype"},
    {"test-time augmentation (orderings", "test-time augmentation (--tta"},
    {"(pc_train_opts.attn_heads > 0)", "(perfcast train --cfg-attention N)"},
    {"memory budget of", "--max-memory budget of"},
    {" (max_memory)", ""},
    {"(pc_tune_opts.batch)", "(--batch)"},
    {"(pc_rank_opts.candidates)", "(--candidates)"},
};

#define NUM_FLAG_PHRASES (sizeof flag_phrases / sizeof flag_phrases[0])

/* The flag_phrases pair whose library phrase starts at p, or -1. */
static int flag_phrase_at(const char *p) {
    for (size_t i = 0; i < NUM_FLAG_PHRASES; i++)
        if (!strncmp(p, flag_phrases[i][0], strlen(flag_phrases[i][0]))) return (int)i;
    return -1;
}

void pc_cli_flags(char *msg, size_t cap) {
    char out[PC_CLI_MSG_MAX];
    size_t w = 0, lim = cap < sizeof out ? cap : sizeof out;
    if (lim == 0) return;
    for (const char *p = msg; *p && w + 1 < lim;) {
        int i = flag_phrase_at(p);
        if (i >= 0) { /* already said as the flag ("--max-memory budget of"): as it is */
            const char *in = strstr(flag_phrases[i][1], flag_phrases[i][0]);
            size_t k = in ? (size_t)(in - flag_phrases[i][1]) : 0;
            if (in && w >= k && !memcmp(out + w - k, flag_phrases[i][1], k)) i = -1;
        }
        if (i < 0) {
            out[w++] = *p++;
            continue;
        }
        size_t m = strlen(flag_phrases[i][1]);
        if (m > lim - 1 - w) m = lim - 1 - w;
        memcpy(out + w, flag_phrases[i][1], m);
        w += m;
        p += strlen(flag_phrases[i][0]);
    }
    out[w] = 0;
    memcpy(msg, out, w + 1);
}

/*
 * --json anywhere on the command line (before "--"): the standard error
 * holds one JSON object at the end, {"error": {"message", "file", "field"}}
 * on failure or {"warnings": [...]} when the command said something, and
 * nothing else. What a command writes to stderr meanwhile goes to a
 * temporary file (json_begin) that json_end turns into that object. The
 * first pc_cli_fail / pc_cli_usage_error message is the error's; a command
 * that printed its JSON result (pc_cli_json_print) and exits 1 without one
 * found problems (check) and gets no error object.
 */
static struct {
    int on, saved_fd, done, printed;
    FILE *cap;
    char msg[PC_CLI_MSG_MAX];
} json_err = {0, -1, 0, 0, NULL, {0}};

int pc_cli_json_mode(void) { return json_err.on; }

void pc_cli_json_printed(void) { json_err.printed = 1; }

/* Keeps the first error message under --json; 1 if --json is on. */
static int json_keep(const char *msg) {
    if (!json_err.on) return 0;
    if (!json_err.msg[0]) snprintf(json_err.msg, sizeof json_err.msg, "%s", msg);
    return 1;
}

/* The command being run ("perfcast CMD: error: ..."), and its long options for
 * "did you mean" (pc_cli_getopt): the CLI's own state, one command per process. */
static const char *g_cmd;
static const struct option *g_opts;

int pc_cli_getopt(int argc, char *const argv[], const char *shortopts, const struct option *opts,
                  int *longindex) {
    g_opts = opts;
    return getopt_long(argc, argv, shortopts, opts, longindex);
}

/* " (did you mean '--flag'?)" for "unknown option '--flg'" from the last option table. */
static void suggest_flag(const char *msg, char *out, size_t cap) {
    out[0] = 0;
    const char *q = strstr(msg, "option '--");
    if (!q || !strstr(msg, "unknown") || !g_opts) return;
    char word[64];
    size_t k = 0;
    for (q += strlen("option '--"); *q && *q != '\'' && *q != '=' && k + 1 < sizeof word;)
        word[k++] = *q++;
    word[k] = 0;
    const char *names[256];
    size_t n = 0;
    for (const struct option *o = g_opts; o->name && n < 256; o++) names[n++] = o->name;
    const char *best = pc_closest_name(word, names, n);
    if (best && strcmp(best, word)) snprintf(out, cap, " (did you mean '--%s'?)", best);
}

int pc_cli_usage_error(const char *cmd, const char *fmt, ...) {
    char msg[PC_CLI_MSG_MAX], hint[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pc_cli_flags(msg, sizeof msg);
    suggest_flag(msg, hint, sizeof hint);
    if (json_err.on) {
        size_t l = strlen(msg);
        snprintf(msg + l, sizeof msg - l, "%s", hint);
        json_keep(msg);
        return PC_EXIT_USAGE;
    }
    fprintf(stderr, "perfcast %s: error: %s%s\n(see 'perfcast %s --help')\n", cmd, msg, hint,
            cmd);
    return PC_EXIT_USAGE;
}

void pc_cli_deprecated(const char *cmd, const char *old, const char *new_) {
    fprintf(stderr, "perfcast %s: note: %s is deprecated, use %s (%s goes in the next release)\n",
            cmd, old, new_, old);
}

int pc_cli_fail(const pc_error *err) {
    char msg[PC_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : pc_status_name(err->code));
    pc_cli_flags(msg, sizeof msg);
    if (json_keep(msg)) return PC_EXIT_FAIL;
    pc_cli_progress_break();
    if (g_cmd)
        fprintf(stderr, "perfcast %s: error: %s\n", g_cmd, msg);
    else
        fprintf(stderr, "perfcast: error: %s\n", msg);
    return PC_EXIT_FAIL;
}

int pc_cli_max_memory(const char *cmd, const char *v, uint64_t *bytes) {
    double d = 0;
    pc_error e;
    char *end = NULL;
    const int plain = v && *v && (strtod(v, &end), end && *end == '\0');
    if (pc_parse_bytes(v, &d, &e) != PC_OK || !(d > 0) || d > 9.0e18)
        return pc_cli_usage_error(cmd,
                                  "--max-memory expects a size: GiB as a plain number "
                                  "(8, 0.5) or with a unit (512MiB, 2GB), got '%s'",
                                  v);
    if (plain) d *= 1073741824.0;
    if (d < 1) d = 1;
    *bytes = (uint64_t)d;
    return 0;
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

int pc_cli_tta_opt(const char *cmd, const char *flag, const char *v, int *tta, uint64_t *seed) {
    long long n;
    if (!strcmp(flag, "--tta")) {
        if (pc_cli_parse_i64(v, 1, PC_CLI_TTA_MAX, &n))
            return pc_cli_usage_error(cmd, "--tta expects 1..%d orderings, got '%s'",
                                      PC_CLI_TTA_MAX, v);
        *tta = (int)n;
        return 0;
    }
    if (pc_cli_parse_i64(v, 0, 0x7fffffffffffffffLL, &n))
        return pc_cli_usage_error(cmd, "--tta-seed expects a non-negative integer, got '%s'", v);
    *seed = (uint64_t)n;
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
    while ((c = pc_cli_getopt(argc, argv, "jt:h", opts, NULL)) != -1) {
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

int pc_cli_seed_path(const char *out, unsigned long long seed, char *buf, size_t cap) {
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base) dot = base + strlen(base); /* no extension: append */
    int n = snprintf(buf, cap, "%.*s.seed%llu%s", (int)(dot - out), out, seed, dot);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/*
 * A command's output that did not reach its destination (a full disk, a
 * closed pipe, > /dev/full) is an error: exit non-zero with a message, never 0.
 */
static void json_end(int rc);

static int finish(const char *cmd, int rc) {
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "perfcast %s: error: writing the standard output failed: %s\n", cmd,
                strerror(errno));
        rc = rc ? rc : PC_EXIT_FAIL;
    }
    json_end(rc);
    return rc;
}

/* The token at p (up to a space) without quotes and trailing punctuation, in buf. */
static const char *json_token(const char *p, char *buf, size_t cap) {
    while (*p == '\'' || *p == '"' || *p == '(' || *p == '`') p++;
    size_t n = strcspn(p, " \t\n");
    if (n >= cap) n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    while (n && strchr(":,;)'\"`", buf[n - 1])) buf[--n] = 0;
    return buf;
}

static int json_pathlike(const char *t) {
    static const char *const ext[] = {".npz", ".npy", ".json", ".pb", ".txt", ".hlo",
                                      ".safetensors", ".csv", ".jsonl", ".svg", ".pcc", ".state"};
    struct stat st;
    size_t n = strlen(t);
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    if (!n || t[0] == '-' || !strpbrk(t, alnum)) return 0; /* "chips / R" names no file */
    int exists = stat(t, &st) == 0;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t m = strlen(ext[i]);
        if (n > m && !strcmp(t + n - m, ext[i])) return exists || strchr(t, '/');
    }
    return (strchr(t, '/') || strchr(t, '.')) && exists;
}

/*
 * The file and the field an error message names, as far as its words tell:
 * the file is what a "FILE: ..." message starts with, else the first word
 * that is a path (an existing one, or a known extension with a '/'); the field a flag (--name) of a usage
 * error, else the first 'quoted' name or the word after field/key/array.
 */
static void json_file_field(const char *msg, char *file, char *field, size_t cap) {
    char t[PC_CLI_MSG_MAX];
    file[0] = field[0] = 0;
    size_t head = strcspn(msg, " :");
    if (head && head < cap && msg[head] == ':' && msg[head + 1] == ' ' && msg[0] != '-') {
        /* "FILE: what went wrong"; a bare word that is no file ("llama3-8b: ...", a preset
         * or chip name) is not one, unless the message says it could not be opened */
        snprintf(t, sizeof t, "%.*s", (int)head, msg);
        struct stat st;
        if (strchr(t, '/') || strchr(t, '.') || stat(t, &st) == 0 || strstr(msg, "cannot open") ||
            strstr(msg, "No such file"))
            snprintf(file, cap, "%s", t);
    }
    const char *prev = "";
    char prevbuf[64] = "";
    for (const char *p = msg; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        int quoted = *p == '\'';
        json_token(p, t, sizeof t);
        if (!file[0] && json_pathlike(t)) snprintf(file, cap, "%s", t);
        else if (!field[0] && t[0] == '-' && t[1] == '-' && t[2]) {
            t[strcspn(t, "= ")] = 0;
            snprintf(field, cap, "%s", t);
        } else if (!field[0] && t[0] &&
                   (quoted || !strcmp(prev, "field") || !strcmp(prev, "key") ||
                    !strcmp(prev, "array")))
            snprintf(field, cap, "%s", t);
        snprintf(prevbuf, sizeof prevbuf, "%.63s", t); /* only field/key/array matter */
        prev = prevbuf;
        p += strcspn(p, " \t\n");
    }
}

static void json_begin(int argc, char **argv) {
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--json")) json_err.on = 1;
    if (!json_err.on) return;
    fflush(stderr);
    json_err.cap = tmpfile();
    json_err.saved_fd = json_err.cap ? dup(2) : -1;
    if (json_err.saved_fd < 0 || dup2(fileno(json_err.cap), 2) < 0) {
        if (json_err.saved_fd >= 0) close(json_err.saved_fd);
        json_err.saved_fd = -1;
    }
}

/* The lines a command wrote to stderr under --json, as a cJSON array. */
static cJSON *json_captured(void) {
    cJSON *lines = cJSON_CreateArray();
    if (!json_err.cap) return lines;
    char line[PC_CLI_MSG_MAX];
    rewind(json_err.cap);
    while (fgets(line, sizeof line, json_err.cap)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0]) cJSON_AddItemToArray(lines, cJSON_CreateString(line));
    }
    return lines;
}

cJSON *pc_cli_json_error_take(void) {
    if (!json_err.on || !json_err.msg[0]) return NULL;
    char file[PC_CLI_MSG_MAX], field[PC_CLI_MSG_MAX];
    json_file_field(json_err.msg, file, field, sizeof file);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "message", json_err.msg);
    cJSON_AddItemToObject(e, "file", file[0] ? cJSON_CreateString(file) : cJSON_CreateNull());
    cJSON_AddItemToObject(e, "field", field[0] ? cJSON_CreateString(field) : cJSON_CreateNull());
    json_err.msg[0] = 0;
    return e;
}

static void json_end(int rc) {
    if (!json_err.on || json_err.done) return;
    json_err.done = 1;
    fflush(stderr);
    if (json_err.saved_fd >= 0) {
        dup2(json_err.saved_fd, 2);
        close(json_err.saved_fd);
    }
    cJSON *lines = json_captured(), *o = cJSON_CreateObject();
    if (json_err.cap) fclose(json_err.cap);
    int n = cJSON_GetArraySize(lines);
    /* a result on stdout with a non-zero exit (check: problems found) is no error */
    if (json_err.printed && !json_err.msg[0]) rc = PC_EXIT_OK;
    if (rc != PC_EXIT_OK) {
        char msg[PC_CLI_MSG_MAX], file[PC_CLI_MSG_MAX], field[PC_CLI_MSG_MAX];
        if (json_err.msg[0]) {
            snprintf(msg, sizeof msg, "%s", json_err.msg);
        } else if (n) { /* the last line, without its "perfcast CMD: error: " */
            const char *m = cJSON_GetArrayItem(lines, n - 1)->valuestring, *c = strstr(m, ": ");
            if (!strncmp(m, "perfcast", 8) && c) m = c + 2;
            if (!strncmp(m, "error: ", 7)) m += 7;
            snprintf(msg, sizeof msg, "%s", m);
            cJSON_DeleteItemFromArray(lines, --n);
        } else {
            snprintf(msg, sizeof msg, "failed (exit %d)", rc);
        }
        json_file_field(msg, file, field, sizeof file);
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddItemToObject(e, "file", file[0] ? cJSON_CreateString(file) : cJSON_CreateNull());
        cJSON_AddItemToObject(e, "field", field[0] ? cJSON_CreateString(field) : cJSON_CreateNull());
        cJSON_AddNumberToObject(e, "exit", rc);
        if (n) cJSON_AddItemToObject(e, "details", lines), lines = NULL;
    } else if (n) {
        cJSON_AddItemToObject(o, "warnings", lines), lines = NULL;
    }
    if (rc != PC_EXIT_OK || n) {
        char *s = cJSON_PrintUnformatted(o);
        if (s) fprintf(stderr, "%s\n", s);
        free(s);
    }
    cJSON_Delete(lines);
    cJSON_Delete(o);
    fflush(stderr);
}

/* A command that exits on its own (pc_cli_dist_abort) still ends the JSON. */
static void json_atexit(void) { json_end(PC_EXIT_FAIL); }

void pc_cli_json_end_now(void) { json_end(PC_EXIT_FAIL); }

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
        if (!strcmp(cmd, commands[i].name)) {
            g_cmd = cmd;
            json_begin(argc, argv);
            if (json_err.on) atexit(json_atexit);
            return finish(cmd, commands[i].run(argc - 1, argv + 1));
        }
    const char *names[NUM_COMMANDS];
    for (size_t i = 0; i < NUM_COMMANDS; i++) names[i] = commands[i].name;
    const char *best = pc_closest_name(cmd, names, NUM_COMMANDS);
    if (best) {
        fprintf(stderr, "perfcast: error: unknown command '%s' (did you mean '%s'?)\n", cmd, best);
        return PC_EXIT_USAGE;
    }
    fprintf(stderr, "perfcast: error: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return PC_EXIT_USAGE;
}
