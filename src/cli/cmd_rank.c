/*
 * perfcast rank: the best configs of one graph by a trained model: the
 * measured configs of a dataset .npz, or candidate configs of a user's HLO
 * program (built in memory from the text; see include/perfcast/hlo.h).
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "perfcast/hlo.h"
#include "perfcast/metrics.h"
#include "perfcast/predict.h"
#include "plots.h"

static void rank_help(FILE *f) {
    fprintf(f,
            "usage: perfcast rank --model MODEL FILE.npz [--top N] [--json] [--svg OUT.svg]\n"
            "       perfcast rank --model MODEL PROGRAM.hlo [--configs FILE] [--kernel NAME]\n"
            "                     [--candidates N] [--seed S] [--top N] [--max-memory SIZE]\n"
            "                     [--json]\n\n"
            "FILE.npz (or a .pcc cache): scores every config of one graph (of the model's\n"
            "kind) and prints the best N config indices, best first, with their scores\n"
            "(lower = predicted faster) and measured runtimes when the file has them, plus\n"
            "where the truly fastest config ranks.\n\n"
            "Any other FILE is read as XLA HLO text (a dump or an .hlo file; several\n"
            "'// -----' separated modules are ranked one by one). Its graph is built in\n"
            "memory and candidate configs are attached, then scored and printed spelled\n"
            "out, best first:\n"
            "  - layout model: the configurable nodes are every convolution, dot and\n"
            "    reshape; a candidate gives some of them minor_to_major layouts for\n"
            "    their output/input/kernel tensors, printed as NODE=OUT/IN/KERNEL\n"
            "    (e.g. convolution.3=3,0/3,0/2,3; '-' = the compiler's default; nodes\n"
            "    not listed keep their default; 'default' = all defaults);\n"
            "  - tile model: each fusion is a kernel (the whole module if none) and a\n"
            "    candidate is a tile size, printed as output=8,128 [kernel=..] [input=..].\n"
            "Without --configs, candidates are enumerated: layout, config 0 = all defaults\n"
            "plus random layouts; tile, per output dim the whole dim and the powers of\n"
            "two below it (config 0 = the whole output), all of them or a sample.\n\n"
            "  --model MODEL     checkpoint written by perfcast train\n"
            "  --top N           how many configs to print (default 10; 0: all)\n"
            "  --configs FILE    candidates, one per line in the printed notation ('#'\n"
            "                    comments); the output of a run can be fed back\n"
            "  --kernel NAME     tile: only this kernel (fusion or fused computation name)\n"
            "  --candidates N    enumerated candidates, config 0 included (default 64)\n"
            "  --seed S          seed of the enumeration (default 1)\n"
            "  --threads N       worker threads (0 = all cores)\n"
            "  --max-memory SIZE the memory budget of the model's and the .npz's load, of\n"
            "                    reading PROGRAM.hlo and building its candidates, and of\n"
            "                    scoring (configs in smaller chunks when needed): GiB,\n"
            "                    or with a unit (512MiB); default half the available memory\n"
            "  --tta M           models with --cfg-attention: average each config's score\n"
            "                    over M orderings of the configs (the given one and M-1\n"
            "                    random ones; default 1 = off)\n"
            "  --tta-seed S      seed of those orderings (default 1)\n"
            "  --json            machine-readable output\n"
            "  --svg OUT.svg     FILE.npz with runtimes: every config's predicted score against\n"
            "                    its measured runtime, the true and the predicted best marked\n\n"
            "An ensemble model (perfcast train --ensemble N) scores each config with the\n"
            "mean of its members' scores (each centered over the graph's configs) and\n"
            "adds a \"spread\" column (JSON field): their standard deviation, the ensemble's\n"
            "uncertainty about that config on the scale of the score.\n");
}

typedef struct rank_args {
    const char *model, *path, *svg;
    int json, threads;
    int tta;           /* --tta orderings */
    uint64_t tta_seed; /* --tta-seed */
    uint64_t max_memory; /* --max-memory (PC_MEMORY_AUTO) */
    int spread;        /* an ensemble: print each config's spread */
    long long top;
    pc_rank_opts ro;
    int hlo_only; /* an option that applies only to HLO input was given */
} rank_args;

/* A graph's scores (and spreads: ensembles) with its configs best first (malloc'd). */
typedef struct scored {
    double *scores, *spread; /* spread NULL unless rank_args.spread */
    size_t *idx, got;
} scored;

static void scored_free(scored *s) {
    free(s->scores);
    free(s->spread);
    free(s->idx);
}

/* " spread X" (text) or ", \"spread\": X" (JSON) of config i, when an ensemble scored. */
static void print_spread(const scored *s, size_t i, int json) {
    if (!s->spread) return;
    if (json) printf(", \"spread\": %.9g", s->spread[i]);
    else printf("  spread %12.6g", s->spread[i]);
}

/*
 * One row of "top" in rank --json, the same keys for every input (null where
 * it does not apply): rank, config, score, spread, runtime, spelled, value.
 */
static cJSON *row_json(size_t r, size_t cfg, const scored *s, const int64_t *runtime,
                       const char *spelled, const char *value_json) {
    cJSON *it = cJSON_CreateObject();
    cJSON_AddNumberToObject(it, "rank", (double)(r + 1));
    cJSON_AddNumberToObject(it, "config", (double)cfg);
    cJSON_AddNumberToObject(it, "score", s->scores[cfg]);
    cJSON_AddItemToObject(it, "spread",
                          s->spread ? cJSON_CreateNumber(s->spread[cfg]) : cJSON_CreateNull());
    cJSON_AddItemToObject(it, "runtime",
                          runtime ? cJSON_CreateNumber((double)*runtime) : cJSON_CreateNull());
    cJSON_AddItemToObject(it, "spelled", spelled ? cJSON_CreateString(spelled) : cJSON_CreateNull());
    cJSON *parsed = value_json ? cJSON_Parse(value_json) : NULL;
    cJSON_AddItemToObject(it, "value", parsed ? parsed : cJSON_CreateNull());
    return it;
}

/* rank --json: {"file", "collection", "input", "graphs"} for .npz and HLO alike. */
static cJSON *rank_json(const rank_args *a, int coll, const char *input, cJSON *graphs) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", a->path);
    cJSON_AddStringToObject(o, "collection", pc_collection_name(coll));
    cJSON_AddStringToObject(o, "input", input);
    cJSON_AddItemToObject(o, "graphs", graphs);
    return o;
}

/* Scores all configs of g and orders them best first into s->idx. */
static int score_and_order(const rank_args *a, pc_predictor *p, pc_graph *g, scored *s) {
    int64_t n = pc_graph_num_configs(g);
    pc_error e;
    size_t cap = (size_t)(n > 0 ? n : 1);
    memset(s, 0, sizeof *s);
    s->scores = malloc(cap * sizeof *s->scores);
    s->idx = malloc(cap * sizeof *s->idx);
    s->spread = a->spread ? malloc(cap * sizeof *s->spread) : NULL;
    if (!s->scores || !s->idx || (a->spread && !s->spread)) {
        fprintf(stderr, "perfcast rank: error: out of memory\n");
        return PC_EXIT_FAIL;
    }
    if (n < 1) {
        fprintf(stderr, "perfcast rank: error: %s has no configs (rank the HLO program itself to "
                "get candidates)\n", pc_graph_path(g));
        return PC_EXIT_FAIL;
    }
    if (pc_predictor_score_spread(p, g, s->scores, s->spread, &e) != PC_OK ||
        pc_topk_indices(s->scores, (size_t)n, (size_t)n, s->idx, &s->got, &e) != PC_OK)
        return pc_cli_fail(&e);
    return PC_EXIT_OK;
}

/* score_and_order with "configs scored" on a terminal, after each chunk of configs
   the model scores (one graph: a dataset file, or an HLO program of one graph). */
static int score_with_progress(const rank_args *a, pc_predictor *p, pc_graph *g, scored *s) {
    pc_cli_progress *pr = pc_cli_progress_new("rank", pc_cli_progress_wanted());
    pc_predictor_set_progress(p, pr ? pc_cli_progress_cb : NULL, pr);
    int rc = score_and_order(a, p, g, s);
    pc_predictor_set_progress(p, NULL, NULL);
    pc_cli_progress_end(pr); /* before the ranking: stdout may be the same terminal */
    return rc;
}

/* ---- a dataset file -------------------------------------------------------- */

static void print_npz(const rank_args *a, pc_graph *g, int coll, const scored *s) {
    const double *scores = s->scores;
    const size_t *idx = s->idx;
    size_t got = s->got;
    int64_t n = pc_graph_num_configs(g);
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
    size_t shown = a->top > 0 && (size_t)a->top < got ? (size_t)a->top : got;
    if (a->json) {
        cJSON *gr = cJSON_CreateObject(), *top = cJSON_CreateArray();
        const char *base = strrchr(a->path, '/');
        cJSON_AddStringToObject(gr, "name", base ? base + 1 : a->path);
        cJSON_AddStringToObject(gr, "kind", pc_collection_kind(coll) == PC_KIND_LAYOUT
                                                ? "module"
                                                : "kernel");
        cJSON_AddNumberToObject(gr, "configs", (double)n);
        cJSON_AddItemToObject(gr, "configurable_nodes", cJSON_CreateNull());
        for (size_t r = 0; r < shown; r++)
            cJSON_AddItemToArray(top, row_json(r, idx[r], s, have_rt ? &rt[idx[r]] : NULL,
                                               NULL, NULL));
        cJSON_AddItemToObject(gr, "top", top);
        cJSON *tb = cJSON_CreateNull();
        if (have_rt) {
            cJSON_Delete(tb);
            tb = cJSON_CreateObject();
            cJSON_AddNumberToObject(tb, "config", (double)best);
            cJSON_AddNumberToObject(tb, "runtime", (double)rt[best]);
            cJSON_AddNumberToObject(tb, "rank", (double)best_rank);
        }
        cJSON_AddItemToObject(gr, "true_best", tb);
        cJSON *graphs = cJSON_CreateArray();
        cJSON_AddItemToArray(graphs, gr);
        pc_cli_json_print(rank_json(a, coll, "npz", graphs));
        return;
    }
    for (size_t r = 0; r < shown; r++) {
        printf("%4zu  config %-8zu score %14.6g", r + 1, idx[r], scores[idx[r]]);
        print_spread(s, idx[r], 0);
        if (have_rt) printf("  runtime %lld", (long long)rt[idx[r]]);
        printf("\n");
    }
    if (have_rt)
        fprintf(stderr, "true best: config %zu (runtime %lld) ranks %zu of %lld\n", best,
                (long long)rt[best], best_rank, (long long)n);
}

/* --svg: the graph's configs, score against runtime. */
static int rank_svg(const rank_args *a, pc_graph *g, int coll, const scored *s) {
    const int64_t *rt = pc_graph_config_runtime(g);
    int64_t n = pc_graph_num_configs(g);
    int have_rt = 0;
    for (int64_t k = 0; rt && k < n; k++)
        if (rt[k] > 0) have_rt = 1;
    if (!have_rt) {
        fprintf(stderr, "perfcast rank: error: --svg: %s has no measured runtimes to draw\n",
                a->path);
        return PC_EXIT_FAIL;
    }
    const char *base = strrchr(a->path, '/');
    pc_plot_graph pg = {base ? base + 1 : a->path, (size_t)n, s->scores, rt};
    char title[300];
    snprintf(title, sizeof title, "%s model on one graph: predicted score vs measured runtime",
             pc_collection_name(coll));
    int rc = pc_plot_rank("rank", a->svg, title, &pg, 1, 1);
    if (rc < 0 && !a->json) fprintf(stderr, "wrote %s\n", a->svg);
    return rc < 0 ? PC_EXIT_OK : rc;
}

static int rank_npz(const rank_args *a, pc_predictor *p, int coll) {
    pc_error e;
    pc_load_opts lo = pc_load_opts_default();
    lo.threads = a->threads;
    lo.max_memory = a->max_memory;
    pc_graph *g = NULL;
    if (pc_graph_load(a->path, &lo, &g, &e) != PC_OK) return pc_cli_fail(&e);
    /* what check refuses is not ranked either (zero runtimes allowed: test files) */
    pc_report *r = pc_report_new();
    if (!r || pc_graph_validate(g, 1, r) != PC_OK || pc_report_count(r) > 0) {
        fprintf(stderr, "perfcast rank: error: %s: not a valid graph (%zu problem(s)%s%s); see "
                        "'perfcast check %s'\n",
                a->path, r ? pc_report_count(r) : 0, r && pc_report_count(r) ? ", first: " : "",
                r && pc_report_count(r) ? pc_report_get(r, 0) : "", a->path);
        pc_report_free(r);
        pc_graph_free(g);
        return PC_EXIT_FAIL;
    }
    pc_report_free(r);
    scored s;
    int rc = score_with_progress(a, p, g, &s);
    if (rc == PC_EXIT_OK) print_npz(a, g, coll, &s);
    if (rc == PC_EXIT_OK && a->svg) rc = rank_svg(a, g, coll, &s);
    scored_free(&s);
    pc_graph_free(g);
    return rc;
}

/* ---- an HLO program ----------------------------------------------------------- */

static void print_set_text(const rank_args *a, pc_rank_set *s, const scored *sc) {
    const double *scores = sc->scores;
    const size_t *idx = sc->idx;
    size_t got = sc->got;
    int64_t nc = pc_rank_set_config_nodes(s);
    printf("%s '%s': %lld candidates", a->ro.kind == PC_KIND_LAYOUT ? "module" : "kernel",
           pc_rank_set_name(s), (long long)pc_rank_set_count(s));
    if (a->ro.kind == PC_KIND_LAYOUT) printf(", %lld configurable nodes", (long long)nc);
    printf(", best first (lower score = predicted faster)\n");
    size_t shown = a->top > 0 && (size_t)a->top < got ? (size_t)a->top : got;
    for (size_t r = 0; r < shown; r++) {
        char *d = pc_rank_set_describe(s, (int64_t)idx[r], 0);
        printf("%4zu  config %-6zu score %12.6g", r + 1, idx[r], scores[idx[r]]);
        print_spread(sc, idx[r], 0);
        printf("  %s\n", d ? d : "?");
        free(d);
    }
}

static cJSON *set_json(const rank_args *a, pc_rank_set *s, const scored *sc) {
    cJSON *o = cJSON_CreateObject(), *top = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "name", pc_rank_set_name(s));
    cJSON_AddStringToObject(o, "kind", a->ro.kind == PC_KIND_LAYOUT ? "module" : "kernel");
    cJSON_AddNumberToObject(o, "configs", (double)pc_rank_set_count(s));
    cJSON_AddItemToObject(o, "configurable_nodes",
                          a->ro.kind == PC_KIND_LAYOUT
                              ? cJSON_CreateNumber((double)pc_rank_set_config_nodes(s))
                              : cJSON_CreateNull());
    size_t shown = a->top > 0 && (size_t)a->top < sc->got ? (size_t)a->top : sc->got;
    for (size_t r = 0; r < shown; r++) {
        char *text = pc_rank_set_describe(s, (int64_t)sc->idx[r], 0);
        char *js = pc_rank_set_describe(s, (int64_t)sc->idx[r], 1);
        cJSON_AddItemToArray(top, row_json(r, sc->idx[r], sc, NULL, text ? text : "", js));
        free(text);
        free(js);
    }
    cJSON_AddItemToObject(o, "top", top);
    cJSON_AddItemToObject(o, "true_best", cJSON_CreateNull());
    return o;
}

static void warn_unknown(const pc_import_report *rep) {
    if (rep->unknown_opcodes)
        fprintf(stderr, "perfcast: warning: %lld instruction%s with an opcode outside the "
                "TpuGraphs table (first: '%s') got opcode id 0\n",
                (long long)rep->unknown_opcodes, rep->unknown_opcodes == 1 ? "" : "s",
                rep->first_unknown);
}

static int rank_hlo(const rank_args *a, pc_predictor *p, int coll) {
    pc_error e;
    pc_import_report rep;
    memset(&rep, 0, sizeof rep);
    rep.struct_size = sizeof rep;
    pc_rank_set **sets = NULL;
    int n = 0;
    pc_rank_opts ro = a->ro; /* a large file: "bytes read", "bytes parsed" on a terminal */
    pc_cli_progress *lp = pc_cli_progress_new("rank", pc_cli_progress_wanted());
    ro.progress = lp ? pc_cli_progress_cb : NULL, ro.progress_user = lp;
    pc_status lst = pc_rank_sets_from_hlo(a->path, &ro, &sets, &n, &rep, &e);
    pc_cli_progress_end(lp);
    if (lst != PC_OK) return pc_cli_fail(&e);
    warn_unknown(&rep);
    cJSON *graphs = cJSON_CreateArray();
    int rc = PC_EXIT_OK;
    /* many graphs (a module's fusions or programs): "graphs scored" on a terminal */
    pc_cli_progress *pr = pc_cli_progress_new("rank", n > 1 && pc_cli_progress_wanted());
    for (int i = 0; i < n && rc == PC_EXIT_OK; i++) {
        scored sc;
        rc = n == 1 ? score_with_progress(a, p, pc_rank_set_graph(sets[i]), &sc)
                    : score_and_order(a, p, pc_rank_set_graph(sets[i]), &sc);
        if (rc == PC_EXIT_OK && a->json) {
            cJSON_AddItemToArray(graphs, set_json(a, sets[i], &sc));
        } else if (rc == PC_EXIT_OK) {
            pc_cli_progress_clear(pr); /* stdout may be the same terminal */
            print_set_text(a, sets[i], &sc);
            fflush(stdout);
        }
        if (rc == PC_EXIT_OK) pc_cli_progress_update(pr, "graphs scored", i + 1, n);
        scored_free(&sc);
    }
    pc_cli_progress_end(pr);
    if (rc == PC_EXIT_OK && a->json) {
        rc = pc_cli_json_print(rank_json(a, coll, "hlo", graphs));
        graphs = NULL;
    }
    cJSON_Delete(graphs);
    pc_rank_sets_free(sets, n);
    return rc;
}

/* ---- options ----------------------------------------------------------------- */

static int parse_args(int argc, char **argv, rank_args *a) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},   {"top", required_argument, 0, 'n'},
        {"threads", required_argument, 0, 't'}, {"json", no_argument, 0, 'j'},
        {"configs", required_argument, 0, 'c'}, {"kernel", required_argument, 0, 'k'},
        {"candidates", required_argument, 0, 'N'}, {"seed", required_argument, 0, 's'},
        {"tta", required_argument, 0, 'A'},     {"tta-seed", required_argument, 0, 'B'},
        {"svg", required_argument, 0, 'V'},     {"max-memory", required_argument, 0, 'M'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    long long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "m:n:t:jc:k:N:s:A:B:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': a->model = optarg; break;
        case 'n':
            if (pc_cli_parse_i64(optarg, 0, 1000000000LL, &a->top))
                return pc_cli_usage_error("rank", "--top expects a count >= 0 (0: all), got '%s'",
                                          optarg);
            break;
        case 't':
            if (pc_cli_parse_i64(optarg, 0, 1024, &v))
                return pc_cli_usage_error("rank", "--threads expects 0..1024, got '%s'", optarg);
            a->threads = (int)v;
            break;
        case 'j': a->json = 1; break;
        case 'V': a->svg = optarg; break;
        case 'M':
            if (pc_cli_max_memory("rank", optarg, &a->max_memory)) return PC_EXIT_USAGE;
            break;
        case 'c': a->ro.configs = optarg; a->hlo_only = 1; break;
        case 'k': a->ro.kernel = optarg; a->hlo_only = 1; break;
        case 'N':
            if (pc_cli_parse_i64(optarg, 1, 1000000, &v))
                return pc_cli_usage_error("rank", "--candidates expects 1..1000000, got '%s'",
                                          optarg);
            a->ro.candidates = v;
            a->hlo_only = 1;
            break;
        case 's':
            if (pc_cli_parse_i64(optarg, 0, 0x7fffffffffffffffLL, &v))
                return pc_cli_usage_error("rank", "--seed expects a non-negative integer, got "
                                          "'%s'", optarg);
            a->ro.seed = (uint64_t)v;
            a->hlo_only = 1;
            break;
        case 'A':
        case 'B':
            if (pc_cli_tta_opt("rank", c == 'A' ? "--tta" : "--tta-seed", optarg, &a->tta,
                               &a->tta_seed))
                return PC_EXIT_USAGE;
            break;
        case 'h': rank_help(stdout); return -1;
        default:
            if (optopt && strchr("mntckNsABVM", optopt))
                return pc_cli_usage_error("rank", "option '%s' needs a value", argv[optind - 1]);
            return pc_cli_usage_error("rank", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!a->model) return pc_cli_usage_error("rank", "--model MODEL is required");
    if (optind >= argc) return pc_cli_usage_error("rank", "a FILE.npz or PROGRAM.hlo operand is "
                                                  "required");
    if (optind + 1 != argc)
        return pc_cli_usage_error("rank", "unexpected argument '%s'", argv[optind + 1]);
    a->path = argv[optind];
    a->ro.max_memory = a->max_memory;
    return PC_EXIT_OK;
}

/* Dataset input: an .npz or a cache directory; anything else is HLO text. */
static int is_dataset_file(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    if (n >= 4 && !strcmp(path + n - 4, ".npz")) return 1;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int pc_cmd_rank(int argc, char **argv) {
    rank_args a;
    memset(&a, 0, sizeof a);
    a.top = 10;
    a.tta = 1;
    a.tta_seed = 1;
    a.max_memory = PC_MEMORY_AUTO;
    a.ro = pc_rank_opts_default();
    int rc = parse_args(argc, argv, &a);
    if (rc < 0) return PC_EXIT_OK; /* --help */
    if (rc != PC_EXIT_OK) return rc;
    int npz = is_dataset_file(a.path);
    if (a.svg && !npz)
        return pc_cli_usage_error("rank", "--svg draws measured runtimes: give a dataset .npz, "
                                  "not the HLO program '%s'", a.path);
    if (a.svg) {
        const char *in[2] = {a.model, a.path};
        rc = pc_cli_check_not_input("rank", "--svg", a.svg, in, 2);
        if (rc < 0) rc = pc_cli_check_out_file("rank", "--svg", a.svg);
        if (rc >= 0) return rc;
    }
    if (npz && a.hlo_only)
        return pc_cli_usage_error("rank", "--configs, --kernel, --candidates and --seed apply to "
                                  "HLO programs, not to '%s'", a.path);
    pc_error e;
    pc_predictor *p = NULL;
    if (pc_predictor_load_max(a.model, a.threads, a.max_memory, &p, &e) != PC_OK)
        return pc_cli_fail(&e);
    if (pc_predictor_set_tta(p, a.tta, a.tta_seed, &e) != PC_OK) {
        pc_predictor_free(p);
        return pc_cli_fail(&e);
    }
    a.spread = pc_predictor_members(p) > 1;
    int coll = pc_predictor_collection(p);
    a.ro.kind = pc_collection_kind(coll);
    if (!npz && a.ro.kernel && a.ro.kind != PC_KIND_TILE) {
        pc_predictor_free(p);
        return pc_cli_usage_error("rank", "--kernel applies to tile models; %s is a %s model "
                                  "(%s)", a.model, pc_kind_name(a.ro.kind),
                                  pc_collection_name(coll));
    }
    rc = npz ? rank_npz(&a, p, coll) : rank_hlo(&a, p, coll);
    pc_predictor_free(p);
    return rc;
}
