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

/* ---------------- options ---------------- */

static const struct option coll_opts[] = {
    {"chip", required_argument, 0, 'c'},  {"op", required_argument, 0, 'o'},
    {"bytes", required_argument, 0, 'b'}, {"mesh", required_argument, 0, 'm'},
    {"axes", required_argument, 0, 'a'},  {"dcn-axes", required_argument, 0, 'd'},
    {"wrap", required_argument, 0, 'w'},  {"chips", required_argument, 0, 'n'},
    {"json", no_argument, 0, 'j'},        {"chips-file", required_argument, 0, 'f'},
    {"book", no_argument, 0, 'B'},        {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* What the command line asks perfcast collective for. */
typedef struct coll_args {
    const char *chip, *op, *bytes, *mesh, *axes, *dcn, *wrap, *chips_file;
    long long want_chips; /* --chips: 0 when not given */
    int json;
    pc_coll_conv conv;
} coll_args;

/* Fills a from the command line; -1 to go on, else the exit code. */
static int coll_parse(int argc, char **argv, coll_args *a) {
    memset(a, 0, sizeof *a);
    a->op = "all";
    a->axes = "all";
    a->wrap = "auto";
    a->conv = PC_CONV_EXACT;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = pc_cli_getopt(argc, argv, "c:o:b:m:a:d:w:n:jf:h", coll_opts, NULL)) != -1) {
        switch (c) {
        case 'c': a->chip = optarg; break;
        case 'o': a->op = optarg; break;
        case 'b': a->bytes = optarg; break;
        case 'm': a->mesh = optarg; break;
        case 'a': a->axes = optarg; break;
        case 'd': a->dcn = optarg; break;
        case 'w': a->wrap = optarg; break;
        case 'n':
            if (pc_cli_parse_i64(optarg, 1, 1LL << 40, &a->want_chips))
                return pc_cli_usage_error("collective",
                                          "--chips expects a positive count, got '%s'", optarg);
            break;
        case 'j': a->json = 1; break;
        case 'B': a->conv = PC_CONV_BOOK; break;
        case 'f': a->chips_file = optarg; break;
        case 'h': collective_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("collective", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return pc_cli_usage_error("collective", "unexpected argument '%s'", argv[optind]);
    if (!a->chip) return pc_cli_usage_error("collective", "--chip NAME is required");
    if (!a->bytes) return pc_cli_usage_error("collective", "--bytes SIZE is required (e.g. 1GiB)");
    if (!a->mesh) return pc_cli_usage_error("collective", "--mesh AxB is required (e.g. 16x16)");
    return -1;
}

/* What the collectives are priced on once the flags check out. */
typedef struct coll_job {
    double bytes;
    int op_one; /* one collective, or -1: all four */
    pc_mesh mesh;
    unsigned axes, dcn; /* bit per mesh axis */
    int wrap;           /* --wrap: 1 yes, 0 no, -1 auto */
} coll_job;

/* The mesh, its axes and wraparound from --mesh, --axes, --dcn-axes, --wrap. */
static int coll_mesh(const coll_args *a, coll_job *j) {
    pc_error e;
    pc_error_clear(&e);
    if (pc_mesh_parse(a->mesh, &j->mesh, &e) != PC_OK)
        return pc_cli_usage_error("collective", "--mesh: %s", e.msg);
    int nd = j->mesh.ndims;
    if (parse_axes(a->axes, nd, &j->axes, 1))
        return pc_cli_usage_error("collective",
                                  "--axes '%s': expected axis indices 0..%d of the "
                                  "mesh %s, comma-separated, or 'all'",
                                  a->axes, nd - 1, a->mesh);
    if (a->dcn && parse_axes(a->dcn, nd, &j->dcn, 0))
        return pc_cli_usage_error("collective",
                                  "--dcn-axes '%s': expected axis indices 0..%d of "
                                  "the mesh %s",
                                  a->dcn, nd - 1, a->mesh);
    j->mesh.dcn_mask = j->dcn;
    j->wrap = -1;
    if (!strcmp(a->wrap, "yes"))
        j->wrap = 1;
    else if (!strcmp(a->wrap, "no"))
        j->wrap = 0;
    else if (strcmp(a->wrap, "auto") != 0)
        return pc_cli_usage_error("collective", "--wrap must be auto, yes or no, got '%s'",
                                  a->wrap);
    for (int i = 0; i < nd; i++) j->mesh.wrap[i] = (signed char)j->wrap;
    if (a->want_chips && pc_mesh_devices(&j->mesh) != a->want_chips)
        return pc_cli_usage_error("collective",
                                  "mesh %s has %lld devices but --chips is %lld; "
                                  "change one so they match",
                                  a->mesh, (long long)pc_mesh_devices(&j->mesh), a->want_chips);
    return -1;
}

/* --bytes, --op and the mesh; -1 to go on, else the exit code. */
static int coll_resolve(const coll_args *a, coll_job *j) {
    pc_error e;
    pc_error_clear(&e);
    memset(j, 0, sizeof *j);
    if (pc_parse_bytes(a->bytes, &j->bytes, &e) != PC_OK)
        return pc_cli_usage_error("collective", "--bytes: %s", e.msg);
    j->op_one = -1;
    if (strcmp(a->op, "all") != 0 && (j->op_one = pc_coll_parse(a->op)) < 0)
        return pc_cli_usage_error("collective",
                                  "--op '%s' unknown (allgather, reducescatter, "
                                  "allreduce, alltoall, permute or all)",
                                  a->op);
    return coll_mesh(a, j);
}

/* A TPU slice assumed to have no wraparound: why, and how to assume it. */
static void wrap_note(const pc_chip *chip, const coll_job *j, char *note, size_t cap) {
    note[0] = '\0';
    if (chip->kind != PC_CHIP_TPU || j->wrap >= 0) return;
    int nowrap = 0;
    for (int i = 0; i < j->mesh.ndims; i++)
        if (!((j->dcn >> i) & 1) && j->mesh.size[i] > 2 && !j->mesh.wrap[i]) nowrap = 1;
    if (nowrap && chip->wrap == PC_WRAP_CUBES)
        snprintf(note, cap,
                 "%s slices have wraparound only when made of whole "
                 "%dx%dx%d cubes on all %d axes: this one has none (edge shards need X-1 hops, "
                 "about 2x the time); --wrap yes to assume it",
                 chip->name, chip->wrap_size, chip->wrap_size, chip->wrap_size, chip->torus_dims);
    else if (nowrap && chip->wrap == PC_WRAP_FULL_AXIS)
        snprintf(note, cap,
                 "%s axes wrap around only at size %d; shorter axes are "
                 "lines (about 2x the time); --wrap yes to assume wraparound",
                 chip->name, chip->wrap_size);
}

/* ---------------- output ---------------- */

static cJSON *cost_json(const pc_chip *chip, int k, const pc_coll_cost *r) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "op", pc_coll_name((pc_coll)k));
    cJSON_AddNumberToObject(x, "participants", (double)r->participants);
    cJSON_AddStringToObject(x, "network", r->network);
    cJSON_AddNumberToObject(x, "shard_bytes", r->shard_bytes);
    cJSON_AddNumberToObject(x, "time", r->time);
    cJSON_AddNumberToObject(x, "bw_time", r->bw_time);
    cJSON_AddNumberToObject(x, "latency_time", r->latency_time);
    cJSON_AddBoolToObject(x, "latency_bound", r->latency_bound);
    cJSON_AddNumberToObject(x, "algbw", r->algbw);
    if (chip->kind == PC_CHIP_GPU) cJSON_AddNumberToObject(x, "nodes", (double)r->nodes);
    return x;
}

static void coll_print_json(const coll_args *a, const coll_job *j, const pc_chip *chip,
                            const char *note, const pc_coll_cost *res, int first, int last) {
    const pc_mesh *mesh = &j->mesh;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "chip", chip->name);
    cJSON *ms = cJSON_AddArrayToObject(o, "mesh");
    cJSON *ax = cJSON_AddArrayToObject(o, "axes");
    for (int i = 0; i < mesh->ndims; i++) {
        cJSON_AddItemToArray(ms, cJSON_CreateNumber((double)mesh->size[i]));
        if ((j->axes >> i) & 1) cJSON_AddItemToArray(ax, cJSON_CreateNumber(i));
    }
    cJSON *wr = cJSON_AddArrayToObject(o, "wrap");
    cJSON *dc = cJSON_AddArrayToObject(o, "dcn_axes");
    for (int i = 0; i < mesh->ndims; i++) {
        cJSON_AddItemToArray(wr, cJSON_CreateBool(mesh->wrap[i] > 0));
        if ((j->dcn >> i) & 1) cJSON_AddItemToArray(dc, cJSON_CreateNumber(i));
    }
    cJSON_AddNumberToObject(o, "bytes", j->bytes);
    cJSON_AddStringToObject(o, "convention", pc_coll_conv_name(a->conv));
    if (note[0]) cJSON_AddStringToObject(o, "note", note);
    cJSON *arr = cJSON_AddArrayToObject(o, "collectives");
    for (int k = first; k <= last; k++) cJSON_AddItemToArray(arr, cost_json(chip, k, &res[k]));
    char *s = cJSON_Print(o);
    if (s) puts(s);
    free(s);
    cJSON_Delete(o);
}

static void coll_print_table(const coll_args *a, const coll_job *j, const pc_chip *chip,
                             const char *note, const pc_coll_cost *res, int first, int last) {
    const pc_mesh *mesh = &j->mesh;
    char b[64];
    printf("%s mesh %s (%lld devices):", chip->name, a->mesh, (long long)pc_mesh_devices(mesh));
    for (int i = 0; i < mesh->ndims; i++) {
        const char *kind = chip->kind == PC_CHIP_GPU ? ""
                           : (j->dcn >> i) & 1       ? " DCN"
                           : mesh->wrap[i]           ? " ICI wrap"
                                                     : " ICI no-wrap";
        printf("%s axis %d = %lld%s%s", i ? ";" : "", i, (long long)mesh->size[i], kind,
               (j->axes >> i) & 1 ? " *" : "");
    }
    printf("  (* = collective axes)\n");
    if (note[0]) printf("note: %s\n", note);
    printf("V = %s; convention %s\n", pc_acli_si(j->bytes, "B", b, sizeof b),
           a->conv == PC_CONV_BOOK ? "book (V/W per axis, no (n-1)/n)" : "exact (V (n-1)/n)");
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

int pc_cmd_collective(int argc, char **argv) {
    coll_args a;
    coll_job j;
    int rc;
    if ((rc = coll_parse(argc, argv, &a)) >= 0 || (rc = coll_resolve(&a, &j)) >= 0) return rc;
    pc_chipdb *db;
    const pc_chip *chip;
    if ((rc = pc_acli_open_chip("collective", a.chips_file, a.chip, &db, &chip)) >= 0) return rc;
    pc_error e;
    pc_error_clear(&e);
    if (pc_mesh_check(chip, &j.mesh, &e) != PC_OK) {
        pc_chipdb_free(db);
        return pc_cli_usage_error("collective", "%s", e.msg);
    }
    char note[512];
    wrap_note(chip, &j, note, sizeof note);
    /* "all": the four collectives of the full array V; permute's V is per device */
    int first = j.op_one >= 0 ? j.op_one : 0, last = j.op_one >= 0 ? j.op_one : PC_COLL_ALLTOALL;
    pc_coll_cost res[PC_COLL_COUNT];
    for (int k = first; k <= last; k++)
        if (pc_collective_cost_conv(chip, &j.mesh, j.axes, (pc_coll)k, j.bytes, a.conv, &res[k],
                                    &e) != PC_OK) {
            pc_chipdb_free(db);
            return pc_cli_fail(&e);
        }
    if (a.json)
        coll_print_json(&a, &j, chip, note, res, first, last);
    else
        coll_print_table(&a, &j, chip, note, res, first, last);
    pc_chipdb_free(db);
    return PC_EXIT_OK;
}
