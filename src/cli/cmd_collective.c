/* perfcast collective: AllGather / ReduceScatter / AllReduce / AllToAll / permute times. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"

static void collective_help(FILE *f) {
    fprintf(
        f,
        "usage: perfcast collective --chip NAME --bytes SIZE --mesh AxB[xC]\n"
        "                           [--op allgather|reducescatter|allreduce|alltoall|permute|all]\n"
        "                           [--axes 0,1|all] [--dcn-axes LIST] [--wrap auto|yes|no]\n"
        "                           [--book] [--chips N] [--json] [--chips-file FILE]\n\n"
        "Time of a collective over mesh axes (scaling_book.md §3, GPU section §5):\n"
        "TPU: ICI torus axes (bidirectional rings with wraparound, lines without; latency\n"
        "~1 us per hop, T = max(latency, bandwidth)); DCN between slices. GPU: NVLink inside\n"
        "a domain (8 GPUs, 72 on NVL72), InfiniBand between domains; devices are numbered\n"
        "row-major (last axis fastest).\n\n"
        "  --bytes SIZE   V, the full array (1GiB, 512MB, 4e9): AllGather output, ReduceScatter\n"
        "                 input, AllReduce array (each device); AllToAll: the whole array,\n"
        "                 each device holding V / participants; permute: the bytes each\n"
        "                 device sends to its neighbour\n"
        "  --mesh AxB     device mesh; on TPUs the non-DCN axes are the physical torus axes\n"
        "                 of one slice (16x16 on v5p means a 16x16x1 slice)\n"
        "  --axes LIST    mesh axes the collective runs over (default all)\n"
        "  --dcn-axes L   TPU: axes that join slices over the data-center network\n"
        "  --wrap MODE    wraparound links: auto (the chip's rule), yes, no\n"
        "  --op OP        one collective, or all four of the full array V (default all);\n"
        "                 permute (collective-permute, p2p, sendrecv): each device sends V\n"
        "                 to a neighbour over one link one way (ICI; DCN across slices;\n"
        "                 NVLink; InfiniBand across nodes): V / link bandwidth + latency\n"
        "  --book         the book's convention: AllGather = ReduceScatter = V / W_ici per axis,\n"
        "                 AllReduce 2 V / W_ici (no (n-1)/n ring factor; X/2 hops), V / W_dcn\n"
        "                 per chip over DCN, V / W on GPUs (default: exact, V (n-1)/n)\n"
        "  --chips N      check that the mesh has N devices\n"
        "  --json         machine-readable output\n");
}

static int parse_axes(const char *s, int ndims, unsigned *mask, int allow_all) {
    if (allow_all && !strcmp(s, "all")) {
        *mask = ndims >= 32 ? ~0u : (1u << ndims) - 1;
        return 0;
    }
    unsigned m = 0;
    const char *p = s;
    if (!*p) return -1;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= ndims) return -1;
        m |= 1u << v;
        p = end;
        if (*p == ',') {
            p++;
            if (!*p) return -1;
        } else if (*p) {
            return -1;
        }
    }
    *mask = m;
    return 0;
}

int pc_cmd_collective(int argc, char **argv) {
    static const struct option opts[] = {
        {"chip", required_argument, 0, 'c'},  {"op", required_argument, 0, 'o'},
        {"bytes", required_argument, 0, 'b'}, {"mesh", required_argument, 0, 'm'},
        {"axes", required_argument, 0, 'a'},  {"dcn-axes", required_argument, 0, 'd'},
        {"wrap", required_argument, 0, 'w'},  {"chips", required_argument, 0, 'n'},
        {"json", no_argument, 0, 'j'},        {"chips-file", required_argument, 0, 'f'},
        {"book", no_argument, 0, 'B'},        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *chip_name = NULL, *op_s = "all", *bytes_s = NULL, *mesh_s = NULL, *axes_s = "all";
    const char *dcn_s = NULL, *wrap_s = "auto", *chips_file = NULL;
    long long want_chips = 0;
    int json = 0, c;
    pc_coll_conv conv = PC_CONV_EXACT;
    pc_error e;
    pc_error_clear(&e);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "c:o:b:m:a:d:w:n:jf:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': chip_name = optarg; break;
        case 'o': op_s = optarg; break;
        case 'b': bytes_s = optarg; break;
        case 'm': mesh_s = optarg; break;
        case 'a': axes_s = optarg; break;
        case 'd': dcn_s = optarg; break;
        case 'w': wrap_s = optarg; break;
        case 'n':
            if (pc_cli_parse_i64(optarg, 1, 1LL << 40, &want_chips))
                return pc_cli_usage_error("collective",
                                          "--chips expects a positive count, got '%s'", optarg);
            break;
        case 'j': json = 1; break;
        case 'B': conv = PC_CONV_BOOK; break;
        case 'f': chips_file = optarg; break;
        case 'h': collective_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("collective", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return pc_cli_usage_error("collective", "unexpected argument '%s'", argv[optind]);
    if (!chip_name) return pc_cli_usage_error("collective", "--chip NAME is required");
    if (!bytes_s) return pc_cli_usage_error("collective", "--bytes SIZE is required (e.g. 1GiB)");
    if (!mesh_s) return pc_cli_usage_error("collective", "--mesh AxB is required (e.g. 16x16)");
    double bytes;
    if (pc_parse_bytes(bytes_s, &bytes, &e) != PC_OK)
        return pc_cli_usage_error("collective", "--bytes: %s", e.msg);
    int op_one = -1;
    if (strcmp(op_s, "all") != 0 && (op_one = pc_coll_parse(op_s)) < 0)
        return pc_cli_usage_error("collective",
                                  "--op '%s' unknown (allgather, reducescatter, "
                                  "allreduce, alltoall, permute or all)",
                                  op_s);
    pc_mesh mesh;
    if (pc_mesh_parse(mesh_s, &mesh, &e) != PC_OK)
        return pc_cli_usage_error("collective", "--mesh: %s", e.msg);
    unsigned axes = 0, dcn = 0;
    if (parse_axes(axes_s, mesh.ndims, &axes, 1))
        return pc_cli_usage_error("collective",
                                  "--axes '%s': expected axis indices 0..%d of the "
                                  "mesh %s, comma-separated, or 'all'",
                                  axes_s, mesh.ndims - 1, mesh_s);
    if (dcn_s && parse_axes(dcn_s, mesh.ndims, &dcn, 0))
        return pc_cli_usage_error("collective",
                                  "--dcn-axes '%s': expected axis indices 0..%d of "
                                  "the mesh %s",
                                  dcn_s, mesh.ndims - 1, mesh_s);
    mesh.dcn_mask = dcn;
    int wrap = -1;
    if (!strcmp(wrap_s, "yes"))
        wrap = 1;
    else if (!strcmp(wrap_s, "no"))
        wrap = 0;
    else if (strcmp(wrap_s, "auto") != 0)
        return pc_cli_usage_error("collective", "--wrap must be auto, yes or no, got '%s'", wrap_s);
    for (int i = 0; i < mesh.ndims; i++) mesh.wrap[i] = (signed char)wrap;
    if (want_chips && pc_mesh_devices(&mesh) != want_chips)
        return pc_cli_usage_error("collective",
                                  "mesh %s has %lld devices but --chips is %lld; "
                                  "change one so they match",
                                  mesh_s, (long long)pc_mesh_devices(&mesh), want_chips);
    pc_chipdb *db;
    const pc_chip *chip;
    int rc = pc_acli_open_chip("collective", chips_file, chip_name, &db, &chip);
    if (rc >= 0) return rc;
    if (pc_mesh_check(chip, &mesh, &e) != PC_OK) {
        pc_chipdb_free(db);
        return pc_cli_usage_error("collective", "%s", e.msg);
    }
    char note[512] = "";
    if (chip->kind == PC_CHIP_TPU && wrap < 0) {
        int nowrap = 0;
        for (int i = 0; i < mesh.ndims; i++)
            if (!((dcn >> i) & 1) && mesh.size[i] > 2 && !mesh.wrap[i]) nowrap = 1;
        if (nowrap && chip->wrap == PC_WRAP_CUBES)
            snprintf(note, sizeof note,
                     "%s slices have wraparound only when made of whole "
                     "%dx%dx%d cubes on all %d axes: this one has none (edge shards need X-1 hops, "
                     "about 2x the time); --wrap yes to assume it",
                     chip->name, chip->wrap_size, chip->wrap_size, chip->wrap_size,
                     chip->torus_dims);
        else if (nowrap && chip->wrap == PC_WRAP_FULL_AXIS)
            snprintf(note, sizeof note,
                     "%s axes wrap around only at size %d; shorter axes are "
                     "lines (about 2x the time); --wrap yes to assume wraparound",
                     chip->name, chip->wrap_size);
    }
    /* "all": the four collectives of the full array V; permute's V is per device */
    int first = op_one >= 0 ? op_one : 0, last = op_one >= 0 ? op_one : PC_COLL_ALLTOALL;
    pc_coll_cost res[PC_COLL_COUNT];
    for (int k = first; k <= last; k++)
        if (pc_collective_cost_conv(chip, &mesh, axes, (pc_coll)k, bytes, conv, &res[k], &e) !=
            PC_OK) {
            pc_chipdb_free(db);
            return pc_cli_fail(&e);
        }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "chip", chip->name);
        cJSON *ms = cJSON_AddArrayToObject(o, "mesh");
        cJSON *ax = cJSON_AddArrayToObject(o, "axes");
        for (int i = 0; i < mesh.ndims; i++) {
            cJSON_AddItemToArray(ms, cJSON_CreateNumber((double)mesh.size[i]));
            if ((axes >> i) & 1) cJSON_AddItemToArray(ax, cJSON_CreateNumber(i));
        }
        cJSON *wr = cJSON_AddArrayToObject(o, "wrap");
        cJSON *dc = cJSON_AddArrayToObject(o, "dcn_axes");
        for (int i = 0; i < mesh.ndims; i++) {
            cJSON_AddItemToArray(wr, cJSON_CreateBool(mesh.wrap[i] > 0));
            if ((dcn >> i) & 1) cJSON_AddItemToArray(dc, cJSON_CreateNumber(i));
        }
        cJSON_AddNumberToObject(o, "bytes", bytes);
        cJSON_AddStringToObject(o, "convention", pc_coll_conv_name(conv));
        if (note[0]) cJSON_AddStringToObject(o, "note", note);
        cJSON *arr = cJSON_AddArrayToObject(o, "collectives");
        for (int k = first; k <= last; k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "op", pc_coll_name((pc_coll)k));
            cJSON_AddNumberToObject(x, "participants", (double)res[k].participants);
            cJSON_AddStringToObject(x, "network", res[k].network);
            cJSON_AddNumberToObject(x, "shard_bytes", res[k].shard_bytes);
            cJSON_AddNumberToObject(x, "time", res[k].time);
            cJSON_AddNumberToObject(x, "bw_time", res[k].bw_time);
            cJSON_AddNumberToObject(x, "latency_time", res[k].latency_time);
            cJSON_AddBoolToObject(x, "latency_bound", res[k].latency_bound);
            cJSON_AddNumberToObject(x, "algbw", res[k].algbw);
            if (chip->kind == PC_CHIP_GPU)
                cJSON_AddNumberToObject(x, "nodes", (double)res[k].nodes);
            cJSON_AddItemToArray(arr, x);
        }
        char *s = cJSON_Print(o);
        if (s) puts(s);
        free(s);
        cJSON_Delete(o);
    } else {
        char a[64];
        printf("%s mesh %s (%lld devices):", chip->name, mesh_s, (long long)pc_mesh_devices(&mesh));
        for (int i = 0; i < mesh.ndims; i++) {
            const char *kind = chip->kind == PC_CHIP_GPU ? ""
                               : (dcn >> i) & 1          ? " DCN"
                               : mesh.wrap[i]            ? " ICI wrap"
                                                         : " ICI no-wrap";
            printf("%s axis %d = %lld%s%s", i ? ";" : "", i, (long long)mesh.size[i], kind,
                   (axes >> i) & 1 ? " *" : "");
        }
        printf("  (* = collective axes)\n");
        if (note[0]) printf("note: %s\n", note);
        printf("V = %s; convention %s\n", pc_acli_si(bytes, "B", a, sizeof a),
               conv == PC_CONV_BOOK ? "book (V/W per axis, no (n-1)/n)" : "exact (V (n-1)/n)");
        printf("%-14s %6s %-10s %10s %10s %10s %10s %-9s\n", "collective", "group", "network",
               "shard", "time", "bandwidth", "latency", "bound");
        for (int k = first; k <= last; k++) {
            char t1[32], t2[32], t3[32], sh[32];
            printf("%-14s %6lld %-10s %10s %10s %10s %10s %-9s\n", pc_coll_name((pc_coll)k),
                   (long long)res[k].participants, res[k].network,
                   pc_acli_si(res[k].shard_bytes, "B", sh, sizeof sh),
                   pc_acli_time(res[k].time, t1, sizeof t1),
                   pc_acli_time(res[k].bw_time, t2, sizeof t2),
                   pc_acli_time(res[k].latency_time, t3, sizeof t3),
                   res[k].participants <= 1 ? "-"
                   : res[k].latency_bound   ? "latency"
                                            : "bandwidth");
        }
    }
    pc_chipdb_free(db);
    return PC_EXIT_OK;
}
