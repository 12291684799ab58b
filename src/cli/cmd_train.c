/* perfcast train: fits a learned cost model on one collection. */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "perfcast/dist.h"
#include "perfcast/train.h"

static void train_help(FILE *f) {
    fprintf(f,
            "usage: perfcast train --data DIR --collection C --out MODEL [options]\n\n"
            "Trains the GNN cost model of one collection (tile:xla, layout:xla:random, ...)\n"
            "on DIR's train split, keeps the parameters that score best on the valid split\n"
            "(tile: mean tile score; layout: mean Kendall tau) and writes them with the\n"
            "feature preprocessing to MODEL (safetensors) whenever they improve. Same seed\n"
            "and threads, same bytes. The training state goes to MODEL.state after every\n"
            "epoch and on Ctrl-C; --resume continues from it.\n\n"
            "  --data DIR          dataset root\n"
            "  --collection C      collection to train on\n"
            "  --out MODEL         checkpoint to write\n"
            "  --time-budget SEC   stop in time (default: none)\n"
            "  --epochs N          at most N epochs (default 20)\n"
            "  --patience N        early stop after N epochs without gain (default 5)\n"
            "  --seed N            random seed (default 1)\n"
            "  --threads N         worker threads (0 = all cores)\n"
            "  --configs K         configs sampled per graph and step (default 32 tile, 16 layout)\n"
            "  --sampling P        uniform (default) or fast: half of K from the fastest\n"
            "                      max(K, 10%%) configs of the graph\n"
            "  --loss SPEC         terms name:weight from listmle, hinge, mse (default tile\n"
            "                      listmle:1,mse:0.02; layout hinge:1)\n"
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
            "                      all or none (default: all for layout, none for tile)\n"
            "  --gst               Graph Segment Training (layout): segments, a historical\n"
            "                      embedding table and stale-embedding dropout\n"
            "  --segments M        contiguous (default), splits (node_splits) or metis\n"
            "  --seg-size N        target nodes per segment (default 1000)\n"
            "  --gst-train-segs N  segments back-propagated per step (default 1)\n"
            "  --gst-keep P        keep probability of a stale embedding (default 0.5)\n"
            "  --gst-finetune N    epochs training only the head on fresh embeddings (default 0)\n"
            "  --max-memory GIB    refuse to train when the estimated peak memory (logged:\n"
            "                      data, model inputs, activations) is above this (default:\n"
            "                      the available RAM)\n"
            "  --batch-graphs N    graphs per optimizer step on each rank (default 1); under\n"
            "                      mpirun -np R the step averages R x N graphs\n"
            "  --resume            continue the run saved in MODEL.state (same options)\n"
            "  --stop-after-steps N  stop after N steps of this run, keeping the state\n"
            "  --progress WHEN     auto (default: a live line on a terminal), always, never\n");
}

typedef struct cli_train {
    int live;     /* a live progress line is showing on stderr */
    int progress; /* show progress */
} cli_train;

static void clear_live(cli_train *c) {
    if (c->live) {
        fputs("\r\033[K", stderr);
        c->live = 0;
    }
}

static void log_line(void *user, const char *line) {
    clear_live(user);
    printf("%s\n", line);
    fflush(stdout);
}

static void fmt_dur(double s, char *buf, size_t n) {
    if (!isfinite(s) || s < 0) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

static void progress_line(void *user, const pc_train_progress *p) {
    cli_train *c = user;
    if (!c->progress) return;
    char eta[32], el[32], valid[32];
    fmt_dur(p->eta_s, eta, sizeof eta);
    fmt_dur(p->elapsed_s, el, sizeof el);
    if (isfinite(p->valid)) snprintf(valid, sizeof valid, "%.4f", p->valid);
    else snprintf(valid, sizeof valid, "-");
    int pct = p->steps_per_epoch ? (int)(100.0 * (double)p->step / (double)p->steps_per_epoch) : 0;
    fprintf(stderr, "\r\033[Kepoch %d/%d %3d%% | %.0f samples/s | loss %.4f | valid %s | %s, "
            "ETA %s", p->epoch, p->epochs, pct, p->samples_per_s, p->loss, valid, el, eta);
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

int pc_cmd_train(int argc, char **argv) {
    enum { O_BUDGET = 256, O_EPOCHS, O_PATIENCE, O_CONFIGS, O_LR, O_HIDDEN, O_LAYERS, O_SAMPLING,
           O_LOSS, O_WD, O_CLIP, O_EMB, O_POOL, O_JOIN, O_ACT, O_DROPOUT, O_NOLN, O_RESUME,
           O_STOPAFTER, O_PROGRESS, O_GST, O_SEGMENTS, O_SEGSIZE, O_GSTSEGS, O_GSTKEEP,
           O_GSTFT, O_MAXMEM, O_PRUNE, O_COLLAPSE, O_ENCODE, O_ATTN, O_DEDUP, O_BATCH };
    static const struct option opts[] = {
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
        {"prune-hops", required_argument, 0, O_PRUNE},
        {"collapse-chains", no_argument, 0, O_COLLAPSE},
        {"encode", required_argument, 0, O_ENCODE},
        {"cfg-attention", required_argument, 0, O_ATTN},
        {"dedup", no_argument, 0, O_DEDUP},
        {"batch-graphs", required_argument, 0, O_BATCH},
        {"help", no_argument, 0, 'h'},               {0, 0, 0, 0}};
    pc_train_opts o = pc_train_opts_default();
    cli_train ct = {0, isatty(fileno(stderr))};
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
        case O_GST: o.gst = 1; break;
        case O_COLLAPSE: o.collapse_chains = 1; break;
        case O_DEDUP: o.dedup = 1; break;
        case O_ENCODE: o.encode = optarg; break;
        case O_BATCH:
            if (pc_cli_parse_i64(optarg, 1, 1 << 20, &v))
                return pc_cli_usage_error("train", "--batch-graphs expects 1..1048576, got '%s'",
                                          optarg);
            o.batch_graphs = (int)v;
            break;
        case O_ATTN:
            if (pc_cli_parse_i64(optarg, 0, 16, &v))
                return pc_cli_usage_error("train", "--cfg-attention expects 0..16 heads, got '%s'",
                                          optarg);
            o.attn_heads = (int)v;
            break;
        case O_PRUNE:
            if (pc_cli_parse_i64(optarg, 0, 64, &v))
                return pc_cli_usage_error("train", "--prune-hops expects 0..64, got '%s'", optarg);
            o.prune_hops = (int)v;
            break;
        case O_SAMPLING:
        case O_SEGMENTS:
        case O_POOL:
        case O_JOIN:
        case O_ACT: {
            static const char *const samp[] = {"uniform", "fast", NULL};
            static const char *const pools[] = {"mean", "max", "sum", "meanmax", NULL};
            static const char *const joins[] = {"early", "late", NULL};
            static const char *const acts[] = {"leaky_relu", "relu", "gelu", NULL};
            static const char *const segs[] = {"contiguous", "splits", "metis", NULL};
            const char *const *names = c == O_SAMPLING ? samp : c == O_POOL ? pools
                                       : c == O_JOIN ? joins : c == O_SEGMENTS ? segs : acts;
            const char *flag = c == O_SAMPLING ? "--sampling" : c == O_POOL ? "--pool"
                               : c == O_JOIN ? "--join" : c == O_SEGMENTS ? "--segments"
                               : "--act";
            int i = 0;
            while (names[i] && strcmp(names[i], optarg)) i++;
            if (!names[i]) {
                char list[96] = "";
                for (int j = 0; names[j]; j++)
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                             j ? ", " : "", names[j]);
                return pc_cli_usage_error("train", "%s expects one of %s, got '%s'", flag, list,
                                          optarg);
            }
            if (c == O_SAMPLING) o.sampling = optarg;
            else if (c == O_POOL) o.pool = optarg;
            else if (c == O_JOIN) o.join = optarg;
            else if (c == O_SEGMENTS) o.seg_method = optarg;
            else o.act = optarg;
            break;
        }
        case O_LOSS: o.loss = optarg; break;
        case O_NOLN: o.layernorm = 0; break;
        case O_RESUME: o.resume = 1; break;
        case O_PROGRESS:
            if (!strcmp(optarg, "always")) ct.progress = 1;
            else if (!strcmp(optarg, "never")) ct.progress = 0;
            else if (strcmp(optarg, "auto"))
                return pc_cli_usage_error("train", "--progress expects auto, always or never, "
                                          "got '%s'", optarg);
            break;
        case O_BUDGET:
        case O_LR:
        case O_WD:
        case O_CLIP:
        case O_GSTKEEP:
        case O_MAXMEM:
        case O_DROPOUT: {
            const char *flag = c == O_BUDGET ? "--time-budget" : c == O_LR ? "--lr"
                               : c == O_WD ? "--weight-decay" : c == O_CLIP ? "--clip"
                               : c == O_GSTKEEP ? "--gst-keep" : c == O_MAXMEM ? "--max-memory"
                               : "--dropout";
            double lo = c == O_LR || c == O_CLIP || c == O_MAXMEM ? 1e-9 : 0;
            double hi = c == O_BUDGET ? 1e9 : c == O_DROPOUT ? 0.95 : c == O_CLIP ? 1e6
                        : c == O_GSTKEEP ? 1 : c == O_MAXMEM ? 1e6 : 10;
            if (parse_double(optarg, lo, hi, &d))
                return pc_cli_usage_error("train", "%s expects a number in [%g, %g], got '%s'",
                                          flag, lo, hi, optarg);
            if (c == O_BUDGET) o.time_budget = d;
            else if (c == O_LR) o.lr = (float)d;
            else if (c == O_WD) o.weight_decay = (float)d;
            else if (c == O_CLIP) o.clip = (float)d;
            else if (c == O_GSTKEEP) o.gst_keep = (float)d;
            else if (c == O_MAXMEM) o.max_memory_gib = d;
            else o.dropout = (float)d;
            break;
        }
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
        case O_LAYERS:
        case O_EMB:
        case O_SEGSIZE:
        case O_GSTSEGS:
        case O_GSTFT:
        case O_STOPAFTER: {
            const char *flag = c == O_EPOCHS ? "--epochs" : c == O_PATIENCE ? "--patience"
                               : c == O_CONFIGS ? "--configs" : c == O_HIDDEN ? "--hidden"
                               : c == O_EMB ? "--emb-dim" : c == O_STOPAFTER ? "--stop-after-steps"
                               : c == O_SEGSIZE ? "--seg-size" : c == O_GSTSEGS ? "--gst-train-segs"
                               : c == O_GSTFT ? "--gst-finetune" : "--layers";
            long long lo = c == O_LAYERS || c == O_GSTFT ? 0 : c == O_CONFIGS ? 2 : 1;
            long long hi = c == O_HIDDEN || c == O_EMB ? 4096 : c == O_LAYERS ? 64 : 1000000000;
            if (pc_cli_parse_i64(optarg, lo, hi, &v))
                return pc_cli_usage_error("train", "%s expects %lld..%lld, got '%s'", flag, lo,
                                          hi, optarg);
            if (c == O_EPOCHS) o.epochs = (int)v;
            else if (c == O_PATIENCE) o.patience = (int)v;
            else if (c == O_CONFIGS) o.configs = (int)v;
            else if (c == O_HIDDEN) o.hidden = (int)v;
            else if (c == O_EMB) o.emb_dim = (int)v;
            else if (c == O_STOPAFTER) o.stop_after_steps = (long)v;
            else if (c == O_SEGSIZE) o.seg_size = (int)v;
            else if (c == O_GSTSEGS) o.gst_train_segs = (int)v;
            else if (c == O_GSTFT) o.gst_finetune = (int)v;
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
    pc_dist *dist = NULL;
    if (pc_dist_open(&argc, &argv, &dist, &e) != PC_OK) return pc_cli_fail(&e);
    o.dist = dist;
    if (pc_dist_rank(dist) != 0) ct.progress = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    o.stop_flag = &stop_flag;
    pc_train_result r;
    pc_status st = pc_train_run(&o, log_line, progress_line, &ct, &r, &e);
    clear_live(&ct);
    pc_dist_close(dist);
    if (st != PC_OK) return pc_cli_fail(&e);
    if (stop_flag) return 130; /* interrupted: the state is saved */
    return PC_EXIT_OK;
}
