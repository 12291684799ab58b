/* perfcast train: fits a learned cost model on one collection. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <signal.h>
#include <unistd.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "perfcast/dist.h"
#include "perfcast/metrics.h"
#include "perfcast/train.h"

static void train_help(FILE *f) {
    fprintf(f,
            "usage: perfcast train --data DIR --collection C --out MODEL [options]\n\n"
            "Trains the GNN cost model of one collection (tile:xla, layout:xla:random, ...)\n"
            "on DIR's train split, keeps the parameters that score best on the valid split\n"
            "(tile: mean tile score; layout: mean Kendall tau) and writes them with the\n"
            "feature preprocessing to MODEL (safetensors) whenever they improve. Same seed\n"
            "and threads, same bytes (not when --time-budget stops the run or, without\n"
            "--epochs, sets its length: that depends on speed). The training state goes to\n"
            "MODEL.state after every epoch and on Ctrl-C; --resume continues from it.\n\n"
            "  --data DIR          dataset root\n"
            "  --collection C      collection to train on\n"
            "  --out MODEL         checkpoint to write\n"
            "  --time-budget SEC   stop in time (default: none); without --epochs it sets\n"
            "                      the length: epochs run until the budget or patience, the\n"
            "                      learning rate anneals over the epochs estimated to fit\n"
            "  --epochs N          at most N epochs (default 20; with --time-budget: no limit)\n"
            "  --patience N        early stop after N epochs without gain (default 5; when the\n"
            "                      budget sets the length: half the epochs that fit, >= 5)\n"
            "  --seed N            random seed (default 1)\n"
            "  --seeds N           N runs, seeds --seed .. --seed+N-1, one after another\n"
            "                      (default 1); run S writes MODEL with .seedS before its\n"
            "                      extension (model.seed2.safetensors), MODEL is a copy of\n"
            "                      the run best on valid, and the best valid metric is\n"
            "                      summarized as mean ± std (min, max) over the runs.\n"
            "                      --time-budget is the whole: each run gets budget / N.\n"
            "                      'perfcast eval --seeds N --model MODEL' scores them all\n"
            "  --ensemble N        a seed ensemble of N models (default 1), seeds S, S+1, ...\n"
            "                      of --seed S, trained one after the other on the data loaded\n"
            "                      once, each with an equal share of the time budget left;\n"
            "                      one checkpoint (written at the end; no --resume) that\n"
            "                      eval, rank and predict average\n"
            "  --threads N         worker threads (0 = all cores)\n"
            "  --configs K         configs sampled per graph and step (default 32 tile, 16 layout)\n"
            "  --sampling P        uniform (default) or fast: half of K from the fastest\n"
            "                      max(K, 10%%) configs of the graph\n"
            "  --loss SPEC         terms name:weight from listmle, hinge (all pairs), mse,\n"
            "                      margin (close pairs: configs at most 2 distinct runtimes\n"
            "                      apart; margin 0.1) (default tile listmle:1,mse:0.02;\n"
            "                      layout hinge:1); e.g. listmle:1,margin:0.5\n"
            "  --lr X              peak learning rate (default 0.001)\n"
            "  --weight-decay X    AdamW decoupled weight decay (default 0.0001)\n"
            "  --clip X            gradient-norm clip (default 1)\n"
            "  --hidden N          hidden width (default 64)\n"
            "  --layers N          GNN layers (default 3)\n"
            "  --emb-dim N         opcode embedding width (default 16)\n"
            "  --pool P            mean (default), max, sum or meanmax\n"
            "  --join J            early (tile default: configs enter the GNN's input; one GNN\n"
            "                      pass per config) or late (layout default: one GNN pass per\n"
            "                      graph; configs meet the pooled graph (tile) or configurable\n"
            "                      nodes' embeddings (layout): much faster ranking of many\n"
            "                      configs)\n"
            "  --act A             leaky_relu (default), relu or gelu\n"
            "  --dropout P         dropout on each layer's update (default 0)\n"
            "  --no-layernorm      no LayerNorm before each layer\n"
            "  --cfg-attention N   cross-configuration attention with N heads before the head\n"
            "                      (default 0 = off); inference scores groups of --configs\n"
            "  --dedup             train on distinct configs (fastest runtime of duplicates)\n"
            "  --prune-hops K      layout: keep configurable nodes and their K-hop\n"
            "                      neighbourhood only (default 1; 0 = the whole graph;\n"
            "                      tile graphs are never pruned)\n"
            "  --collapse-chains   with --prune-hops: also collapse linear chains\n"
            "  --encode LIST       feature encodings: pad (-1 for absent dims), dims (log2,\n"
            "                      mod 128, div 128 of sizes), layout (layout indicators),\n"
            "                      roofline (per-node FLOPs, bytes, intensity), mismatch\n"
            "                      (layout configs: layout copies forced), steps (tile\n"
            "                      configs: grid steps of the output tile over the kernel's\n"
            "                      output), rsteps (tile configs: reduction steps of the\n"
            "                      kernel_bounds tile over the last dot/convolution's\n"
            "                      contraction), all (pad, dims, layout) or none (default: all\n"
            "                      for layout, steps for tile)\n"
            "  --gst               Graph Segment Training (layout): segments, a historical\n"
            "                      embedding table and stale-embedding dropout\n"
            "  --segments M        contiguous (default), splits (node_splits) or metis\n"
            "  --seg-size N        target nodes per segment (default 1000)\n"
            "  --gst-train-segs N  segments back-propagated per step (default 1)\n"
            "  --gst-keep P        keep probability of a stale embedding (default 0.5)\n"
            "  --gst-finetune N    epochs training only the head on fresh embeddings (default 0)\n"
            "  --max-memory SIZE   refuse to train when the estimated peak memory (logged:\n"
            "                      data, model inputs, activations) is above this: GiB, or\n"
            "                      with a unit (512MiB) (default: the available RAM)\n"
            "  --batch-graphs N    graphs per optimizer step on each rank (default 1); under\n"
            "                      mpirun -np R the step averages R x N graphs\n"
            PC_CLI_MPI_TIMEOUT_HELP
            "  --resume            continue the run saved in MODEL.state (same options)\n"
            "  --stop-after-steps N  stop after N steps of this run, keeping the state\n"
            "  --progress WHEN     auto (default: a live line on a terminal), always, never\n"
            "  --log FILE.jsonl    one JSON object per validation round (seed, epoch, step,\n"
            "                      loss, valid, metric, lr, elapsed_s), written as training\n"
            "                      goes (appended with --resume); 'perfcast plot train FILE'\n"
            "                      draws it\n"

            "  --json              one JSON object at the end: out, collection, metric, runs,\n"
            "                      summary, log (docs/json.md) instead of the log lines\n");
}

typedef struct cli_train {
    int live;     /* a live progress line is showing on stderr */
    int progress; /* show progress */
    pc_cli_progress *load;     /* the data loading's line (while it loads) */
    const char *loss, *encode; /* --loss, --encode: parsed once every flag is read */
    long long seeds;           /* --seeds */
    const char *log_path;      /* --log FILE.jsonl */
    FILE *log;                 /* opened at the first record */
    int log_failed, resume, rank;
    unsigned long long seed; /* the run under way */
    const char *metric;      /* "tile_score" or "kendall_tau" */
    double mpi_timeout;      /* --mpi-timeout; < 0: not given */
    int json;                /* --json: log lines and results collected here */
    cJSON *jlog, *jruns, *jsummary;
} cli_train;

/* One run's result in the --json "runs" array. */
static void run_json(cli_train *ct, uint64_t seed, const char *path, const pc_train_result *r) {
    if (!ct->json) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seed", (double)seed);
    cJSON_AddStringToObject(o, "checkpoint", path);
    cJSON_AddNumberToObject(o, "epochs_run", r->epochs_run);
    cJSON_AddNumberToObject(o, "best_epoch", r->best_epoch);
    cJSON_AddItemToObject(o, "best_valid", isfinite(r->best_metric) && r->best_epoch > 0
                                               ? cJSON_CreateNumber(r->best_metric)
                                               : cJSON_CreateNull());
    cJSON_AddNumberToObject(o, "first_loss", isfinite(r->first_loss) ? r->first_loss : 0);
    cJSON_AddNumberToObject(o, "last_loss", isfinite(r->last_loss) ? r->last_loss : 0);
    cJSON_AddBoolToObject(o, "interrupted", r->interrupted);
    cJSON_AddItemToArray(ct->jruns, o);
}

/* The --json object of a finished training; the exit code. */
static int train_json(const pc_train_opts *o, cli_train *ct) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "out", o->out_path);
    cJSON_AddStringToObject(j, "collection", o->collection);
    cJSON_AddStringToObject(j, "metric", pc_collection_find(o->collection) ==
                                                 PC_SCORE_TILE_COLLECTION
                                             ? "tile score"
                                             : "Kendall tau");
    cJSON_AddItemToObject(j, "runs", ct->jruns);
    cJSON_AddItemToObject(j, "summary", ct->jsummary ? ct->jsummary : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "log", ct->jlog);
    ct->jruns = ct->jlog = ct->jsummary = NULL;
    return pc_cli_json_print(j);
}

static void clear_live(cli_train *c) {
    pc_cli_progress_end(c->load); /* the loading is over: its last line stays */
    c->load = NULL;
    if (c->live) {
        fputs("\r\033[K", stderr);
        c->live = 0;
    }
}

/* pc_train_opts.load_progress: the data loading's line, until training logs or draws. */
static void load_progress(void *user, const char *what, int64_t done, int64_t total) {
    cli_train *c = user;
    if (!c->progress) return;
    if (!c->load) c->load = pc_cli_progress_new("train", 1);
    pc_cli_progress_update(c->load, what, done, total);
}

/* pc_train_opts fields whose flag is not "--" and the field with '-' for '_'. */
static const struct {
    const char *field, *flag;
} field_flags[] = {
    {"data_dir", "--data"},           {"out_path", "--out"},
    {"layernorm", "--no-layernorm"},  {"attn_heads", "--cfg-attention"},
    {"seg_method", "--segments"},     {"max_memory_gib", "--max-memory"},
};

/*
 * The library's messages name options as "pc_train_opts.<field>"; the
 * command's user knows them as flags. Copies msg into out (cap bytes) with
 * each such name spelled as its flag.
 */
static void fields_as_flags(const char *msg, char *out, size_t cap) {
    static const char key[] = "pc_train_opts.";
    size_t o = 0;
    while (*msg && o + 1 < cap) {
        if (strncmp(msg, key, sizeof key - 1)) {
            out[o++] = *msg++;
            continue;
        }
        msg += sizeof key - 1;
        size_t n = strspn(msg, "abcdefghijklmnopqrstuvwxyz_0123456789");
        char flag[64] = "--";
        snprintf(flag + 2, sizeof flag - 2, "%.*s", (int)n, msg);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_') *p = '-';
        for (size_t k = 0; k < sizeof field_flags / sizeof field_flags[0]; k++)
            if (strlen(field_flags[k].field) == n && !strncmp(msg, field_flags[k].field, n))
                snprintf(flag, sizeof flag, "%s", field_flags[k].flag);
        for (const char *p = flag; *p && o + 1 < cap; p++) out[o++] = *p;
        msg += n;
    }
    out[o] = '\0';
}

static void log_line(void *user, const char *line) {
    char buf[2 * PC_ERROR_MSG_MAX];
    fields_as_flags(line, buf, sizeof buf);
    cli_train *ct = user;
    if (ct->json) {
        cJSON_AddItemToArray(ct->jlog, cJSON_CreateString(buf));
        return;
    }
    clear_live(user);
    printf("%s\n", buf);
    fflush(stdout);
}

/* JSON number or null. */
static void log_num(FILE *f, const char *key, double v) {
    if (isfinite(v)) fprintf(f, ", \"%s\": %.9g", key, v);
    else fprintf(f, ", \"%s\": null", key);
}

/* --log: one JSON object per validation round (rank 0), flushed so it can be followed. */
static void log_record(cli_train *c, const pc_train_progress *p) {
    if (!c->log_path || c->log_failed || c->rank != 0 ||
        p->struct_size < offsetof(pc_train_progress, validated) + sizeof p->validated ||
        !p->validated)
        return;
    if (!c->log && !(c->log = fopen(c->log_path, c->resume ? "a" : "w"))) {
        c->log_failed = 1;
        clear_live(c);
        fprintf(stderr, "perfcast train: warning: cannot write --log %s; training goes on\n",
                c->log_path);
        return;
    }
    fprintf(c->log, "{\"seed\": %llu, \"epoch\": %d, \"step\": %ld, \"steps_per_epoch\": %zu",
            c->seed, p->epoch, p->total_steps, p->steps_per_epoch);
    log_num(c->log, "loss", p->loss);
    log_num(c->log, "valid", p->valid);
    fprintf(c->log, ", \"metric\": \"%s\"", c->metric);
    log_num(c->log, "lr", p->lr);
    log_num(c->log, "elapsed_s", p->elapsed_s);
    fprintf(c->log, "}\n");
    fflush(c->log);
}

static void progress_line(void *user, const pc_train_progress *p) {
    cli_train *c = user;
    log_record(c, p);
    if (!c->progress) return;
    if (c->load) clear_live(c);
    char eta[32], el[32], valid[32];
    pc_cli_duration(p->eta_s, eta, sizeof eta);
    pc_cli_duration(p->elapsed_s, el, sizeof el);
    if (isfinite(p->valid)) snprintf(valid, sizeof valid, "%.4f", p->valid);
    else snprintf(valid, sizeof valid, "-");
    int pct = p->steps_per_epoch ? (int)(100.0 * (double)p->step / (double)p->steps_per_epoch) : 0;
    char planned[16] = "?"; /* 0: the budget's estimate is not made yet */
    if (p->epochs > 0) snprintf(planned, sizeof planned, "%d", p->epochs);
    fprintf(stderr, "\r\033[Kepoch %d/%s %3d%% | %.0f samples/s | loss %.4f | valid %s | %s, "
            "ETA %s", p->epoch, planned, pct, p->samples_per_s, p->loss, valid, el, eta);
    fflush(stderr);
    c->live = 1;
}

/*
 * Ctrl-C / SIGTERM ask training to stop after the current step and save its
 * state. A signal handler can only reach a flag with static storage: the one
 * piece of global mutable state, and it lives in the CLI, not the library.
 */
static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
    if (!s || !*s) return -1;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* ---------------- options ---------------- */

enum { O_BUDGET = 256, O_EPOCHS, O_PATIENCE, O_CONFIGS, O_LR, O_HIDDEN, O_LAYERS, O_SAMPLING,
       O_LOSS, O_WD, O_CLIP, O_EMB, O_POOL, O_JOIN, O_ACT, O_DROPOUT, O_NOLN, O_RESUME,
       O_STOPAFTER, O_PROGRESS, O_GST, O_SEGMENTS, O_SEGSIZE, O_GSTSEGS, O_GSTKEEP,
       O_GSTFT, O_MAXMEM, O_PRUNE, O_COLLAPSE, O_ENCODE, O_ATTN, O_DEDUP, O_BATCH, O_SEEDS,
       O_ENSEMBLE, O_LOG, O_MPITIMEOUT, O_JSON };

static const struct option train_opts[] = {
    {"data", required_argument, 0, 'd'},         {"collection", required_argument, 0, 'c'},
    {"out", required_argument, 0, 'o'},          {"time-budget", required_argument, 0, O_BUDGET},
    {"epochs", required_argument, 0, O_EPOCHS},  {"patience", required_argument, 0, O_PATIENCE},
    {"seed", required_argument, 0, 'S'},         {"threads", required_argument, 0, 't'},
    {"configs", required_argument, 0, O_CONFIGS}, {"lr", required_argument, 0, O_LR},
    {"hidden", required_argument, 0, O_HIDDEN},  {"layers", required_argument, 0, O_LAYERS},
    {"sampling", required_argument, 0, O_SAMPLING}, {"loss", required_argument, 0, O_LOSS},
    {"weight-decay", required_argument, 0, O_WD}, {"clip", required_argument, 0, O_CLIP},
    {"emb-dim", required_argument, 0, O_EMB},    {"pool", required_argument, 0, O_POOL},
    {"join", required_argument, 0, O_JOIN},      {"act", required_argument, 0, O_ACT},
    {"dropout", required_argument, 0, O_DROPOUT}, {"no-layernorm", no_argument, 0, O_NOLN},
    {"resume", no_argument, 0, O_RESUME},
    {"stop-after-steps", required_argument, 0, O_STOPAFTER},
    {"progress", required_argument, 0, O_PROGRESS},
    {"gst", no_argument, 0, O_GST},              {"segments", required_argument, 0, O_SEGMENTS},
    {"seg-size", required_argument, 0, O_SEGSIZE},
    {"gst-train-segs", required_argument, 0, O_GSTSEGS},
    {"gst-keep", required_argument, 0, O_GSTKEEP},
    {"gst-finetune", required_argument, 0, O_GSTFT},
    {"max-memory", required_argument, 0, O_MAXMEM},
    {"mpi-timeout", required_argument, 0, O_MPITIMEOUT},
    {"prune-hops", required_argument, 0, O_PRUNE},
    {"collapse-chains", no_argument, 0, O_COLLAPSE},
    {"encode", required_argument, 0, O_ENCODE},
    {"cfg-attention", required_argument, 0, O_ATTN},
    {"dedup", no_argument, 0, O_DEDUP},
    {"batch-graphs", required_argument, 0, O_BATCH},
    {"seeds", required_argument, 0, O_SEEDS},
    {"ensemble", required_argument, 0, O_ENSEMBLE},
    {"log", required_argument, 0, O_LOG},
    {"json", no_argument, 0, O_JSON},
    {"help", no_argument, 0, 'h'},               {0, 0, 0, 0}};

/* The integer flags: "<flag> expects <lo>..<hi>, got '<v>'". */
static int int_opt(pc_train_opts *o, int c, const char *v) {
    const struct {
        int code;
        const char *flag;
        long long lo, hi;
        int *i;  /* the field, */
        long *l; /* or this one */
    } t[] = {
        {O_EPOCHS, "--epochs", 1, 1000000000, &o->epochs, NULL},
        {O_PATIENCE, "--patience", 1, 1000000000, &o->patience, NULL},
        {O_CONFIGS, "--configs", 2, 1000000000, &o->configs, NULL},
        {O_HIDDEN, "--hidden", 1, 4096, &o->hidden, NULL},
        {O_LAYERS, "--layers", 0, 64, &o->layers, NULL},
        {O_EMB, "--emb-dim", 1, 4096, &o->emb_dim, NULL},
        {O_STOPAFTER, "--stop-after-steps", 1, 1000000000, NULL, &o->stop_after_steps},
        {O_SEGSIZE, "--seg-size", 1, 1000000000, &o->seg_size, NULL},
        {O_GSTSEGS, "--gst-train-segs", 1, 1000000000, &o->gst_train_segs, NULL},
        {O_GSTFT, "--gst-finetune", 0, 1000000000, &o->gst_finetune, NULL},
        {O_BATCH, "--batch-graphs", 1, 1 << 20, &o->batch_graphs, NULL},
        {O_PRUNE, "--prune-hops", 0, 64, &o->prune_hops, NULL},
        {O_ENSEMBLE, "--ensemble", 1, 64, &o->ensemble, NULL},
        {'t', "--threads", 0, 1024, &o->threads, NULL},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        if (t[k].code != c) continue;
        long long n;
        if (pc_cli_parse_i64(v, t[k].lo, t[k].hi, &n))
            return pc_cli_usage_error("train", "%s expects %lld..%lld, got '%s'", t[k].flag,
                                      t[k].lo, t[k].hi, v);
        if (t[k].i)
            *t[k].i = (int)n;
        else
            *t[k].l = (long)n;
        return -1;
    }
    return -1;
}

/* The real-valued flags: "<flag> expects a number in [<lo>, <hi>], got '<v>'". */
static int real_opt(pc_train_opts *o, int c, const char *v) {
    const struct {
        int code;
        const char *flag;
        double lo, hi;
        float *f;  /* the field, */
        double *d; /* or this one */
    } t[] = {
        {O_BUDGET, "--time-budget", 0, 1e9, NULL, &o->time_budget},
        {O_LR, "--lr", 1e-9, 10, &o->lr, NULL},
        {O_WD, "--weight-decay", 0, 10, &o->weight_decay, NULL},
        {O_CLIP, "--clip", 1e-9, 1e6, &o->clip, NULL},
        {O_GSTKEEP, "--gst-keep", 0, 1, &o->gst_keep, NULL},
        {O_DROPOUT, "--dropout", 0, 0.95, &o->dropout, NULL},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        if (t[k].code != c) continue;
        double d;
        if (parse_double(v, t[k].lo, t[k].hi, &d))
            return pc_cli_usage_error("train", "%s expects a number in [%g, %g], got '%s'",
                                      t[k].flag, t[k].lo, t[k].hi, v);
        if (t[k].f)
            *t[k].f = (float)d;
        else
            *t[k].d = d;
        return -1;
    }
    return -1;
}

/* "<flag> expects one of <the n names>, got '<v>'" (a usage error). */
static int choice_error(const char *flag, const char *const *names, int n, const char *v) {
    char list[96] = "";
    for (int j = 0; j < n; j++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", names[j]);
    return pc_cli_usage_error("train", "%s expects one of %s, got '%s'", flag, list, v);
}

/* The flags that name one of a few choices: an enum's concrete values, parsed by the library. */
static int choice_opt(pc_train_opts *o, int c, const char *v) {
    const char *names[8];
    switch (c) {
    case O_SAMPLING:
        if (pc_sampling_parse(v, &o->sampling) == PC_OK) return -1;
        for (int i = 0; i < PC_SAMPLING_COUNT; i++) names[i] = pc_sampling_name((pc_sampling)i);
        return choice_error("--sampling", names, PC_SAMPLING_COUNT, v);
    case O_POOL:
        if (pc_pool_parse(v, &o->pool) == PC_OK) return -1;
        for (int i = 0; i < PC_POOL_COUNT; i++) names[i] = pc_pool_name((pc_pool)i);
        return choice_error("--pool", names, PC_POOL_COUNT, v);
    case O_JOIN: {
        pc_join j;
        if (pc_join_parse(v, &j) == PC_OK && j != PC_JOIN_AUTO) {
            o->join = j;
            return -1;
        }
        for (int i = 0; i < PC_JOIN_COUNT; i++) names[i] = pc_join_name((pc_join)i);
        return choice_error("--join", names, PC_JOIN_COUNT, v);
    }
    case O_ACT:
        if (pc_act_parse(v, &o->act) == PC_OK) return -1;
        for (int i = 0; i < PC_ACT_COUNT; i++) names[i] = pc_act_name((pc_act)i);
        return choice_error("--act", names, PC_ACT_COUNT, v);
    case O_SEGMENTS:
        if (pc_segments_parse(v, &o->seg_method) == PC_OK) return -1;
        for (int i = 0; i < PC_SEGMENTS_COUNT; i++) names[i] = pc_segments_name((pc_segments)i);
        return choice_error("--segments", names, PC_SEGMENTS_COUNT, v);
    default: return -1;
    }
}

/* --progress auto|always|never */
static int parse_progress(const char *v, cli_train *ct) {
    if (!strcmp(v, "always"))
        ct->progress = 1;
    else if (!strcmp(v, "never"))
        ct->progress = 0;
    else if (strcmp(v, "auto"))
        return pc_cli_usage_error("train", "--progress expects auto, always or never, "
                                  "got '%s'", v);
    return -1;
}

/* One option; -1 to go on, else the exit code (0 after --help). */
static int train_opt(pc_train_opts *o, cli_train *ct, int c, const char *v, char **argv) {
    long long n;
    switch (c) {
    case 'd': o->data_dir = v; return -1;
    case 'c':
        if (pc_collection_find(v) < 0)
            return pc_cli_usage_error("train", "--collection expects tile:xla or "
                                      "layout:{xla,nlp}:{random,default}, got '%s'", v);
        o->collection = v;
        return -1;
    case 'o': o->out_path = v; return -1;
    case O_GST: o->gst = 1; return -1;
    case O_COLLAPSE: o->collapse_chains = 1; return -1;
    case O_DEDUP: o->dedup = 1; return -1;
    case O_ENCODE: ct->encode = v; return -1;
    case O_LOSS: ct->loss = v; return -1;
    case O_NOLN: o->layernorm = 0; return -1;
    case O_RESUME: o->resume = 1; return -1;
    case O_PROGRESS: return parse_progress(v, ct);
    case O_LOG: ct->log_path = v; return -1;
    case O_MPITIMEOUT: return pc_cli_mpi_timeout("train", v, &ct->mpi_timeout);
    case O_SEEDS:
        if (pc_cli_parse_i64(v, 1, 1000, &ct->seeds))
            return pc_cli_usage_error("train", "--seeds expects 1..1000, got '%s'", v);
        return -1;
    case O_ATTN:
        if (pc_cli_parse_i64(v, 0, 16, &n))
            return pc_cli_usage_error("train", "--cfg-attention expects 0..16 heads, got '%s'", v);
        o->attn_heads = (int)n;
        return -1;
    case 'S':
        if (pc_cli_parse_i64(v, 0, INT64_MAX, &n))
            return pc_cli_usage_error("train", "--seed expects a non-negative integer, got "
                                      "'%s'", v);
        o->seed = (uint64_t)n;
        return -1;
    case 't':
    case O_EPOCHS:
    case O_PATIENCE:
    case O_CONFIGS:
    case O_HIDDEN:
    case O_LAYERS:
    case O_EMB:
    case O_STOPAFTER:
    case O_SEGSIZE:
    case O_GSTSEGS:
    case O_GSTFT:
    case O_BATCH:
    case O_ENSEMBLE:
    case O_PRUNE: return int_opt(o, c, v);
    case O_BUDGET:
    case O_LR:
    case O_WD:
    case O_CLIP:
    case O_GSTKEEP:
    case O_DROPOUT: return real_opt(o, c, v);
    case O_MAXMEM: {
        uint64_t b = 0;
        int rc = pc_cli_max_memory("train", v, &b);
        if (rc) return rc;
        o->max_memory_gib = (double)b / 1073741824.0;
        return -1;
    }
    case O_SAMPLING:
    case O_SEGMENTS:
    case O_POOL:
    case O_JOIN:
    case O_ACT: return choice_opt(o, c, v);
    case O_JSON: ct->json = 1; return -1;
    case 'h': train_help(stdout); return PC_EXIT_OK;
    default: return pc_cli_usage_error("train", "unknown option '%s'", argv[optind - 1]);
    }
}

/*
 * --loss and --encode into o; -1 to go on, else the exit code. Their errors
 * are failures (exit 1) rather than usage errors, as they always were.
 */
static int parse_loss_encode(pc_train_opts *o, const cli_train *ct) {
    pc_error e, f = {PC_ERR_ARG, ""};
    if (ct->loss && pc_loss_weights_parse(ct->loss, &o->loss, &e) != PC_OK) {
        /* the library's "loss term 'x': ..." as "train: --loss term 'x': ..." */
        snprintf(f.msg, sizeof f.msg, "train: --%.1000s", e.msg);
        return pc_cli_fail(&f);
    }
    if (ct->encode && pc_encode_parse(ct->encode, &o->encode) != PC_OK) {
        /* name the first word that is not an encoding */
        char buf[128];
        snprintf(buf, sizeof buf, "%s", ct->encode);
        char *save = NULL, *w = strtok_r(buf, ",", &save);
        unsigned b;
        while (w && pc_encode_parse(w, &b) == PC_OK) w = strtok_r(NULL, ",", &save);
        snprintf(f.msg, sizeof f.msg, "train: --encode expects a comma list of pad, dims, "
                 "layout, roofline, mismatch, steps, rsteps, all, none; got '%.900s'", w ? w : ct->encode);
        return pc_cli_fail(&f);
    }
    return -1;
}

/*
 * Where the run writes, before any work: MODEL's folder (not after the first
 * epoch), --log's, neither the same file as the other or the data.
 */
static int check_outputs(const pc_train_opts *o, const cli_train *ct) {
    int rc = pc_cli_check_out_file("train", "--out", o->out_path);
    if (rc < 0 && ct->log_path) {
        const char *in[2] = {o->out_path, o->data_dir};
        rc = pc_cli_check_not_input("train", "--log", ct->log_path, in, 2);
        if (rc < 0) rc = pc_cli_check_out_file("train", "--log", ct->log_path);
    }
    return rc;
}

/* A fresh run beside MODEL.state of an earlier one: say that it is replaced. */
static void note_state(const char *model, int resume) {
    char st[4200];
    struct stat sb;
    if (resume || snprintf(st, sizeof st, "%s.state", model) >= (int)sizeof st ||
        stat(st, &sb) != 0)
        return;
    fprintf(stderr, "perfcast train: note: found %s from an earlier run: continue it with "
            "--resume, or it will be replaced\n", st);
}

/* Fills o and ct from the command line; -1 to go on, else the exit code. */
static int train_parse(int argc, char **argv, pc_train_opts *o, cli_train *ct) {
    *o = pc_train_opts_default();
    ct->live = 0;
    ct->load = NULL;
    ct->progress = isatty(fileno(stderr));
    ct->loss = ct->encode = NULL;
    ct->seeds = 1;
    ct->log_path = NULL;
    ct->log = NULL;
    ct->log_failed = ct->rank = 0;
    ct->mpi_timeout = -1;
    ct->json = 0;
    ct->jlog = ct->jruns = ct->jsummary = NULL;
    optind = 1;
    opterr = 0;
    int c, rc;
    while ((c = pc_cli_getopt(argc, argv, "d:c:o:S:t:h", train_opts, NULL)) != -1)
        if ((rc = train_opt(o, ct, c, optarg, argv)) >= 0) return rc;
    if (!o->data_dir) return pc_cli_usage_error("train", "--data DIR is required");
    if (!o->collection) return pc_cli_usage_error("train", "--collection C is required");
    if (!o->out_path) return pc_cli_usage_error("train", "--out MODEL is required");
    if (optind != argc)
        return pc_cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
    if (ct->seeds > 1 && o->resume)
        return pc_cli_usage_error("train", "--resume continues one run: resume a --seeds run "
                                  "seed by seed (--seed S --out its MODEL.seedS file)");
    if (ct->seeds > 1 && (unsigned long long)o->seed + (unsigned long long)ct->seeds - 1 >
                             (unsigned long long)INT64_MAX)
        return pc_cli_usage_error("train", "--seed + --seeds - 1 is above %lld",
                                  (long long)INT64_MAX);
    ct->resume = o->resume;
    ct->seed = (unsigned long long)o->seed;
    ct->metric = pc_collection_find(o->collection) == PC_SCORE_TILE_COLLECTION ? "tile_score"
                                                                               : "kendall_tau";
    rc = parse_loss_encode(o, ct);
    if (rc >= 0) return rc;
    return check_outputs(o, ct);
}

/* ---------------- the run ---------------- */

/* ---------------- --seeds N ---------------- */

/* Copies src to dst through a temporary name: 0, or -1 with the message in e. */
static int copy_file(const char *src, const char *dst, pc_error *e) {
    char tmp[4200];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    FILE *in = fopen(src, "rb"),
         *out = in && len > 0 && (size_t)len < sizeof tmp ? fopen(tmp, "wb") : NULL;
    char buf[1 << 16];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    if (in) fclose(in);
    if (out && fclose(out)) ok = 0;
    if (ok && rename(tmp, dst)) ok = 0;
    if (!ok) {
        if (out) remove(tmp);
        e->code = PC_ERR_IO;
        snprintf(e->msg, sizeof e->msg, "train: cannot copy %.450s to %.450s", src, dst);
    }
    return ok ? 0 : -1;
}

/*
 * After the runs of --seeds: each run's best valid metric and their spread,
 * and MODEL as a copy of the run best on valid. The exit code.
 */
static int seeds_summary(const pc_train_opts *o, cli_train *ct, char (*paths)[4096],
                         const double *best, int runs) {
    const char *name = pc_collection_find(o->collection) == PC_SCORE_TILE_COLLECTION
                           ? "tile score"
                           : "Kendall tau";
    int b = -1;
    for (int i = 0; i < runs; i++) {
        if (!ct->json)
            printf("seed %llu: best valid %s %.6f (%s)\n",
                   (unsigned long long)o->seed + (unsigned)i, name, best[i], paths[i]);
        if (isfinite(best[i]) && (b < 0 || best[i] > best[b])) b = i;
    }
    pc_spread sp;
    pc_error e;
    if (pc_spread_compute(best, (size_t)runs, &sp, &e)) return pc_cli_fail(&e);
    if (ct->json && b >= 0) {
        ct->jsummary = cJSON_CreateObject();
        cJSON_AddNumberToObject(ct->jsummary, "mean", sp.mean);
        cJSON_AddNumberToObject(ct->jsummary, "std", sp.std);
        cJSON_AddNumberToObject(ct->jsummary, "min", sp.min);
        cJSON_AddNumberToObject(ct->jsummary, "max", sp.max);
        cJSON_AddNumberToObject(ct->jsummary, "best_seed", (double)(o->seed + (unsigned)b));
    } else if (!ct->json)
        printf("seeds %llu..%llu: best valid %s mean %.6f ± %.6f (std over %llu runs), min %.6f, "
           "max %.6f\n",
           (unsigned long long)o->seed, (unsigned long long)o->seed + (unsigned)runs - 1, name,
           sp.mean, sp.std, (unsigned long long)sp.count, sp.min, sp.max);
    if (b < 0) {
        fprintf(stderr,
                "perfcast: error: no run of --seeds %lld completed an epoch: %s not "
                "written\n",
                ct->seeds, o->out_path);
        return PC_EXIT_FAIL;
    }
    if (copy_file(paths[b], o->out_path, &e)) return pc_cli_fail(&e);
    if (!ct->json)
        printf("wrote %s (a copy of %s, seed %llu: best on valid)\n", o->out_path, paths[b],
           (unsigned long long)o->seed + (unsigned)b);
    return PC_EXIT_OK;
}

/*
 * --seeds N: the runs one after another, each with its seed, its own MODEL.seedS
 * and budget / N; then the summary (rank 0). The exit code.
 */
static int train_seeds(pc_train_opts *o, cli_train *ct, const pc_dist *dist, pc_error *e) {
    int runs = (int)ct->seeds, rc = PC_EXIT_OK;
    char(*paths)[4096] = calloc((size_t)runs, sizeof *paths);
    double *best = calloc((size_t)runs, sizeof *best);
    if (!paths || !best) {
        free(paths), free(best);
        return fputs("perfcast: error: out of memory\n", stderr), PC_EXIT_FAIL;
    }
    pc_train_opts run = *o;
    if (o->time_budget > 0) run.time_budget = o->time_budget / runs;
    pc_status st = PC_OK;
    for (int i = 0; i < runs && !st && !stop_flag; i++) {
        run.seed = o->seed + (uint64_t)i;
        if (pc_cli_seed_path(o->out_path, run.seed, paths[i], sizeof paths[i])) {
            e->code = st = PC_ERR_ARG;
            snprintf(e->msg, sizeof e->msg, "train: --out is too long for --seeds");
            break;
        }
        run.out_path = paths[i];
        ct->seed = (unsigned long long)run.seed;
        if (pc_dist_rank(dist) == 0) note_state(paths[i], o->resume);
        if (pc_dist_rank(dist) == 0 && !ct->json)
            printf("seed %llu (run %d of %d): writing %s\n", (unsigned long long)run.seed, i + 1,
                   runs, paths[i]);
        pc_train_result r;
        r.struct_size = sizeof r;
        st = pc_train_run(&run, log_line, progress_line, ct, &r, e);
        clear_live(ct);
        if (!st) run_json(ct, run.seed, paths[i], &r);
        /* a run stopped by its budget (or --stop-after-steps) counts, as a single run would */
        best[i] = st || r.best_epoch < 1 ? NAN : r.best_metric;
    }
    if (st != PC_OK && pc_dist_size(dist) > 1) pc_cli_dist_abort(dist, e->msg);
    if (st != PC_OK) {
        pc_error f = *e;
        fields_as_flags(e->msg, f.msg, sizeof f.msg);
        rc = pc_cli_fail(&f);
    } else if (stop_flag) {
        rc = 130; /* interrupted: the run's state is saved; no summary of a partial set */
    } else if (pc_dist_rank(dist) == 0) {
        rc = seeds_summary(o, ct, paths, best, runs);
    }
    free(paths), free(best);
    return rc;
}

/* Trains under MPI when launched by mpirun, with Ctrl-C saving the state;
 * returns the exit code (130 when interrupted). */
static int train_run(int *argc, char ***argv, pc_train_opts *o, cli_train *ct) {
    pc_error e;
    pc_dist *dist = NULL;
    if (pc_cli_dist_open(argc, argv, ct->mpi_timeout, &dist, &e) != PC_OK)
        return pc_cli_fail(&e);
    o->dist = dist;
    ct->rank = pc_dist_rank(dist);
    if (pc_dist_rank(dist) != 0) ct->progress = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    o->stop_flag = &stop_flag;
    o->load_progress = load_progress;
    o->load_progress_user = ct;
    if (ct->seeds > 1) {
        int rc = train_seeds(o, ct, dist, &e);
        pc_cli_dist_close(dist);
        return rc;
    }
    pc_train_result r;
    r.struct_size = sizeof r;
    if (ct->rank == 0) note_state(o->out_path, o->resume);
    pc_status st = pc_train_run(o, log_line, progress_line, ct, &r, &e);
    clear_live(ct);
    if (st == PC_OK) run_json(ct, o->seed, o->out_path, &r);
    if (st != PC_OK && pc_dist_size(dist) > 1)
        pc_cli_dist_abort(dist, e.msg); /* the other ranks must not wait */
    pc_cli_dist_close(dist);
    if (st != PC_OK) {
        pc_error f = e;
        fields_as_flags(e.msg, f.msg, sizeof f.msg);
        return pc_cli_fail(&f);
    }
    if (stop_flag) return 130; /* interrupted: the state is saved */
    return PC_EXIT_OK;
}

int pc_cmd_train(int argc, char **argv) {
    pc_train_opts o;
    cli_train ct;
    int rc = train_parse(argc, argv, &o, &ct);
    if (rc >= 0) return rc;
    if (ct.json) {
        ct.jlog = cJSON_CreateArray();
        ct.jruns = cJSON_CreateArray();
        ct.progress = 0;
    }
    rc = train_run(&argc, &argv, &o, &ct);
    if (ct.log && fclose(ct.log) != 0)
        fprintf(stderr, "perfcast train: warning: writing --log %s failed\n", ct.log_path);
    /* every rank trains; rank 0 writes (its log is the one with the results) */
    if (ct.json && rc == PC_EXIT_OK && cJSON_GetArraySize(ct.jruns) > 0) rc = train_json(&o, &ct);
    cJSON_Delete(ct.jlog);
    cJSON_Delete(ct.jruns);
    cJSON_Delete(ct.jsummary);
    return rc;
}
