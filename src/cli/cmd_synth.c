/* perfcast synth: writes a synthetic TpuGraphs-format dataset. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void synth_help(FILE *f) {
    fprintf(f,
            "usage: perfcast synth --out DIR [--scale tiny|small|full] [--seed N] [options]\n\n"
            "Writes DIR/npz/{tile/xla,layout/{xla,nlp}/{random,default}}/{train,valid,test}/\n"
            "from HLO-like graphs (convnets, transformer blocks, MLPs) timed by a simulated\n"
            "TPU cost model (docs/synth.md). Same seed, same bytes.\n\n"
            "  --out DIR             output root (created; an existing one must be empty)\n"
            "  --force               write into a non-empty DIR (its files of the same name\n"
            "                        are replaced, the others kept)\n"
            "  --scale S             tiny (tests), small (demo, default), full (benchmarks)\n"
            "  --seed N              random seed (default 1)\n"
            "  --compress            deflate the .npz members (like np.savez_compressed)\n"
            "  --threads N           worker threads (0 = all cores)\n"
            "  --graphs N            graphs per collection in the train split\n"
            "  --layout-nodes N      target nodes per layout graph\n"
            "  --layout-configs N    configurations per layout graph\n"
            "  --tile-configs N      configurations per tile graph\n"
            "  --collections LIST    comma-separated subset, e.g. tile:xla,layout:xla:random\n"
            "  --noise-free          record the simulator's exact runtimes, without measurement\n"
            "                        noise (what perfcast simulate prints)\n"
            "  --json                one JSON object: out, scale, seed, seconds, collections\n"
            "                        (docs/json.md)\n");
}

static int parse_collections(const char *list, unsigned *mask) {
    char buf[256];
    if (strlen(list) >= sizeof buf) return -1;
    strcpy(buf, list);
    *mask = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int c = pc_collection_find(tok);
        if (c < 0) return -1;
        *mask |= 1u << c;
    }
    return *mask ? 0 : -1;
}

int pc_cmd_synth(int argc, char **argv) {
    enum { O_GRAPHS = 256, O_LNODES, O_LCONFIGS, O_TCONFIGS, O_COLL, O_NOISE_FREE, O_FORCE };
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'},         {"scale", required_argument, 0, 's'},
        {"seed", required_argument, 0, 'S'},        {"compress", no_argument, 0, 'z'},
        {"threads", required_argument, 0, 't'},     {"graphs", required_argument, 0, O_GRAPHS},
        {"layout-nodes", required_argument, 0, O_LNODES},
        {"layout-configs", required_argument, 0, O_LCONFIGS},
        {"tile-configs", required_argument, 0, O_TCONFIGS},
        {"collections", required_argument, 0, O_COLL},
        {"noise-free", no_argument, 0, O_NOISE_FREE},
        {"json", no_argument, 0, 'j'},
        {"force", no_argument, 0, O_FORCE},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    pc_synth_opts o = pc_synth_opts_default();
    o.scale = PC_SYNTH_SMALL;
    const char *out = NULL;
    long long v;
    int c, json = 0, force = 0;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "o:s:S:zt:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'o': out = optarg; break;
        case 's': {
            if (pc_synth_scale_parse(optarg, &o.scale) != PC_OK)
                return pc_cli_usage_error("synth", "--scale expects tiny, small or full, "
                                          "got '%s'", optarg);
            break;
        }
        case 'S':
            if (pc_cli_parse_i64(optarg, 0, INT64_MAX, &v))
                return pc_cli_usage_error("synth", "--seed expects a non-negative integer, got "
                                          "'%s'", optarg);
            o.seed = (uint64_t)v;
            break;
        case 'z': o.compress = 1; break;
        case 't':
            if (pc_cli_parse_i64(optarg, 0, 1024, &v))
                return pc_cli_usage_error("synth", "--threads expects 0..1024, got '%s'", optarg);
            o.threads = (int)v;
            break;
        case O_GRAPHS:
        case O_LNODES:
        case O_LCONFIGS:
        case O_TCONFIGS:
            if (pc_cli_parse_i64(optarg, 1, 10000000, &v)) {
                const char *flag = c == O_GRAPHS ? "--graphs" : c == O_LNODES ? "--layout-nodes"
                                   : c == O_LCONFIGS ? "--layout-configs" : "--tile-configs";
                return pc_cli_usage_error("synth", "%s expects 1..10000000, got '%s'", flag,
                                          optarg);
            }
            if (c == O_GRAPHS) o.graphs_per_split = v;
            else if (c == O_LNODES) o.layout_nodes = v;
            else if (c == O_LCONFIGS) o.layout_configs = v;
            else o.tile_configs = v;
            break;
        case O_COLL:
            if (parse_collections(optarg, &o.collections))
                return pc_cli_usage_error("synth", "--collections expects a comma-separated list "
                                          "of tile:xla, layout:{xla,nlp}:{random,default}; got "
                                          "'%s'", optarg);
            break;
        case O_NOISE_FREE: o.noise_free = 1; break;
        case O_FORCE: force = 1; break;
        case 'h': synth_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("synth", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!out) return pc_cli_usage_error("synth", "--out DIR is required");
    if (optind != argc) return pc_cli_usage_error("synth", "unexpected argument '%s'", argv[optind]);
    int rc = pc_cli_check_out_dir("synth", "--out", out, !force);
    if (rc >= 0) return rc;
    pc_report *log = pc_report_new();
    pc_error e;
    struct timespec t0, t1;
    pc_cli_progress *pr = pc_cli_progress_new("synth", pc_cli_progress_wanted());
    o.progress = pr ? pc_cli_progress_cb : NULL;
    o.progress_user = pr;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pc_status st = pc_synth_write(out, &o, log, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pc_cli_progress_end(pr);
    for (size_t i = 0; !json && i < pc_report_count(log); i++)
        printf("%s\n", pc_report_get(log, i));
    pc_report_free(log);
    if (st != PC_OK) return pc_cli_fail(&e);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "out", out);
        cJSON_AddStringToObject(j, "scale", pc_synth_scale_name(o.scale));
        cJSON_AddNumberToObject(j, "seed", (double)o.seed);
        cJSON_AddNumberToObject(j, "seconds", secs);
        cJSON_AddItemToObject(j, "collections", pc_cli_json_dataset(out));
        return pc_cli_json_print(j);
    }
    printf("wrote %s (scale %s, seed %llu) in %.2f s\n", out, pc_synth_scale_name(o.scale),
           (unsigned long long)o.seed, secs);
    return PC_EXIT_OK;
}
