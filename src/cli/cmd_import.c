/* perfcast import: raw TpuGraphs tuning protobufs (XLA HLO + runs) or HLO text -> dataset .npz files. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "perfcast/hlo.h"

static void import_help(FILE *f) {
    fprintf(f,
            "usage: perfcast import FILE.{pb,hlo,txt}|DUMP_DIR --out DIR [--kind tile|layout|auto]\n"
            "                       [--stage after|before] [--compress] [--quiet]\n"
            "                       [--max-memory SIZE]\n\n"
            "Reads a TpuGraphs tuning protobuf (tuning.proto) holding XLA HLO modules and\n"
            "their measured runs, featurizes each module exactly as the dataset's extractor\n"
            "does (140 node features, opcode ids, edges, node_splits) and writes one\n"
            "dataset-layout .npz per module, ready for info, check, train and rank:\n"
            "  - a TuningData (tile: one fused kernel per module, tile-size runs) gives\n"
            "    DIR/FILE_<NNN>_<module>.npz with config_feat, config_runtime and\n"
            "    config_runtime_normalizers;\n"
            "  - a ModuleTuningData (layout: one program, per-node layout runs) gives\n"
            "    DIR/FILE.npz with node_config_feat, node_config_ids, node_splits and\n"
            "    config_runtime.\n"
            "Runs with an error or without a profile are dropped (tile runs of <= 1 ns too);\n"
            "the default run's time is the tile normalizer; modules the dataset would leave\n"
            "out (no default run, a single run) are listed and skipped. A truncated or\n"
            "corrupt file fails naming the broken field and byte offset; nothing is written\n"
            "unless every module parsed.\n\n"
            "HLO text (FILE.hlo / FILE.txt: an XLA dump or test file; other names are told\n"
            "apart by content) has no measured runs: each module becomes a graph-only file\n"
            "(node_feat, node_opcode, edge_index, zero configs), DIR/FILE.npz, or with\n"
            "several '// -----' separated modules DIR/FILE_<NNN>_<module>.npz. As layout\n"
            "(default) it also holds node_splits and node_config_ids = the configurable\n"
            "nodes (every convolution, dot and reshape), node_config_feat (0,nc,18); with\n"
            "--kind tile it holds config_feat (0,24). `perfcast info` reads these files;\n"
            "`perfcast check` reports them as graphs without configs. To rank candidate\n"
            "configs of a program, give the HLO file to `perfcast rank` directly.\n"
            "An XLA dump directory (XLA_FLAGS=--xla_dump_to=DUMP_DIR) gives every module of\n"
            "its *after_optimizations.txt files (--stage before: *before_optimizations.txt),\n"
            "DIR/DUMP_DIR_<NNN>_<module>.npz. StableHLO/MLIR, HloModuleProto text and binary\n"
            "files are named as such, with how to get HLO text.\n"
            "Malformed text fails with FILE:LINE:COLUMN; opcodes outside the TpuGraphs\n"
            "table get id 0 with a warning (count and first one).\n\n"
            "  --out DIR        output folder (created)\n"
            "  --kind K         tile, layout or auto (default: from the runs); a file of the\n"
            "                   other kind is an error\n"
            "  --stage S        with a dump directory: after (default) or before optimizations\n"
            "  --compress       deflate the .npz members (like np.savez_compressed)\n"
            "  --quiet          print only errors\n"
            "  --max-memory SIZE the memory budget of reading and parsing the input (all files\n"
            "                   of a dump directory together): GiB, or with a unit (512MiB);\n"
            "                   default half the available memory\n"
            "  --json           one JSON object with the counts above (docs/json.md)\n");
}

/* The --json object of an import (one shape for every kind of input). */
static int import_json(const char *path, const char *out, const pc_import_report *rep,
                       cJSON *notes, cJSON *skipped) {
    cJSON *j = cJSON_CreateObject(), *runs = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "file", path);
    cJSON_AddStringToObject(j, "out", out);
    cJSON_AddStringToObject(j, "container", rep->container);
    cJSON_AddStringToObject(j, "kind", pc_kind_name(rep->kind));
    cJSON_AddNumberToObject(j, "modules", (double)rep->modules);
    cJSON_AddNumberToObject(j, "written", (double)rep->written);
    cJSON_AddNumberToObject(j, "skipped", (double)rep->skipped);
    cJSON_AddNumberToObject(runs, "in_file", (double)rep->runs);
    cJSON_AddNumberToObject(runs, "kept", (double)rep->runs_kept);
    cJSON_AddNumberToObject(runs, "defaults", (double)rep->defaults);
    cJSON_AddNumberToObject(runs, "with_error", (double)rep->runs_error);
    cJSON_AddNumberToObject(runs, "without_profile", (double)rep->runs_no_profile);
    cJSON_AddNumberToObject(runs, "bad_time", (double)rep->runs_bad_time);
    cJSON_AddItemToObject(j, "runs", runs);
    cJSON_AddNumberToObject(j, "nodes", (double)rep->nodes);
    cJSON_AddNumberToObject(j, "edges", (double)rep->edges);
    cJSON_AddNumberToObject(j, "unknown_opcodes", (double)rep->unknown_opcodes);
    cJSON_AddItemToObject(j, "first_unknown", rep->first_unknown[0]
                                                  ? cJSON_CreateString(rep->first_unknown)
                                                  : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "notes", notes);
    cJSON_AddItemToObject(j, "skipped_modules", skipped);
    return pc_cli_json_print(j);
}

int pc_cmd_import(int argc, char **argv) {
    static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                         {"kind", required_argument, 0, 'k'},
                                         {"compress", no_argument, 0, 'z'},
                                         {"stage", required_argument, 0, 's'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {"max-memory", required_argument, 0, 'M'},
                                         {0, 0, 0, 0}};
    pc_import_opts o = pc_import_opts_default();
    const char *out = NULL, *stage = NULL;
    int quiet = 0, json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "o:k:s:zqjM:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'o': out = optarg; break;
        case 'k':
            if (!strcmp(optarg, "tile")) o.kind = PC_KIND_TILE;
            else if (!strcmp(optarg, "layout")) o.kind = PC_KIND_LAYOUT;
            else if (!strcmp(optarg, "auto")) o.kind = PC_KIND_AUTO;
            else return pc_cli_usage_error("import", "--kind expects tile, layout or auto, got "
                                           "'%s'", optarg);
            break;
        case 'z': o.compress = PC_NPZ_DEFLATED; break;
        case 's': stage = optarg; break;
        case 'q': quiet = 1; break;
        case 'M':
            if (pc_cli_max_memory("import", optarg, &o.max_memory)) return PC_EXIT_USAGE;
            break;
        case 'h': import_help(stdout); return PC_EXIT_OK;
        default:
            if (optopt && strchr("oksM", optopt))
                return pc_cli_usage_error("import", "option '%s' needs a value", argv[optind - 1]);
            return pc_cli_usage_error("import", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!out) return pc_cli_usage_error("import", "--out DIR is required");
    if (optind != argc - 1)
        return pc_cli_usage_error("import", "expected exactly one FILE.pb, FILE.hlo, FILE.txt or dump directory");
    char pat[4096];
    const char *path;
    int rc = pc_cli_hlo_stage_path("import", argv[optind], stage, pat, sizeof pat, &path);
    if (rc < 0) rc = pc_cli_check_out_dir("import", "--out", out, 0);
    if (rc >= 0) return rc;

    pc_import_report rep;
    memset(&rep, 0, sizeof rep);
    rep.struct_size = sizeof rep;
    rep.notes = pc_report_new();
    pc_error e;
    pc_cli_progress *pr = pc_cli_progress_new("import", pc_cli_progress_wanted());
    o.progress = pr ? pc_cli_progress_cb : NULL;
    o.progress_user = pr;
    pc_status st = pc_import_file(path, out, &o, &rep, &e);
    pc_cli_progress_end(pr);
    cJSON *notes = cJSON_CreateArray(), *skips = cJSON_CreateArray();
    for (size_t i = 0; i < pc_report_count(rep.notes); i++) {
        const char *line = pc_report_get(rep.notes, i);
        int skipped = strncmp(line, "skipped", 7) == 0;
        if (json) cJSON_AddItemToArray(skipped ? skips : notes, cJSON_CreateString(line));
        else if (skipped) fprintf(stderr, "perfcast import: %s\n", line);
        else if (!quiet) printf("%s\n", line);
    }
    pc_report_free(rep.notes);
    if (st != PC_OK || json) {
        if (st == PC_OK) return import_json(path, out, &rep, notes, skips);
        cJSON_Delete(notes);
        cJSON_Delete(skips);
        return pc_cli_fail(&e);
    }
    cJSON_Delete(notes);
    cJSON_Delete(skips);
    if (rep.unknown_opcodes)
        fprintf(stderr, "perfcast import: warning: %lld instruction%s with an opcode outside the "
                "TpuGraphs table%s%s%s got opcode id 0\n", (long long)rep.unknown_opcodes,
                rep.unknown_opcodes == 1 ? "" : "s", rep.first_unknown[0] ? " (first: '" : "",
                rep.first_unknown, rep.first_unknown[0] ? "')" : "");
    if (!quiet && !strcmp(rep.container, "HLO text")) {
        printf("%s: HLO text, %lld module%s: %lld graph-only %s file%s written (no configs)\n",
               path, (long long)rep.modules, rep.modules == 1 ? "" : "s", (long long)rep.written,
               pc_kind_name(rep.kind), rep.written == 1 ? "" : "s");
        printf("graphs: %lld nodes, %lld edges, %lld instructions with an unknown opcode\n",
               (long long)rep.nodes, (long long)rep.edges, (long long)rep.unknown_opcodes);
    } else if (!quiet) {
        printf("%s: %s, %lld module%s (%s): %lld written, %lld skipped\n", path, rep.container,
               (long long)rep.modules, rep.modules == 1 ? "" : "s", pc_kind_name(rep.kind),
               (long long)rep.written,
               (long long)rep.skipped);
        printf("runs: %lld in the file, %lld kept (%lld default); dropped: %lld with an error, "
               "%lld without a profile, %lld with a runtime <= %d ns\n",
               (long long)rep.runs, (long long)rep.runs_kept, (long long)rep.defaults,
               (long long)rep.runs_error, (long long)rep.runs_no_profile,
               (long long)rep.runs_bad_time, rep.kind == PC_KIND_TILE ? 1 : 0);
        printf("graphs: %lld nodes, %lld edges, %lld instructions with an unknown opcode\n",
               (long long)rep.nodes, (long long)rep.edges, (long long)rep.unknown_opcodes);
    }
    return PC_EXIT_OK;
}
