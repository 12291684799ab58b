/* perfcast roofline: compute / memory / communication time of ops on a chip. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"
#include "perfcast/query.h"
#include "plots.h"

static void roofline_help(FILE *f) {
    fprintf(f,
            "usage: perfcast roofline --chip NAME (--matmul B,D,F | --op SPEC | --ops FILE |\n"
            "                         --hlo FILE)... [--dtype bf16] [--weight-dtype int8]\n"
            "                         [--comm-bw B/s] [--top N] [--module N] [--while-trips N]\n"
            "                         [--loop-ops] [--mesh AxB] [--svg FILE] [--json]\n"
            "                         [--chips-file FILE] [--max-memory SIZE]\n\n"
            "Roofline time of each op on one chip (scaling_book.md §2): T_math = FLOPs / peak,\n"
            "T_hbm = bytes / HBM bandwidth, T_comm = comm bytes / link bandwidth; the op takes\n"
            "the largest (perfect overlap) and is bound by it. Prints arithmetic intensity\n"
            "(FLOPs/byte) against the chip's critical intensity (peak / HBM bandwidth).\n\n"
            "  --chip NAME       a chip of 'perfcast chips' (v5e, v5p, h100, ...)\n"
            "  --matmul B,D,F    [B,D] @ [D,F] (B = tokens); repeatable\n"
            "  --op SPEC         one op, e.g. 'elementwise shape=8192x4096 inputs=2'; repeatable\n"
            "  --ops FILE        ops, one per line, or JSON (docs/analytic.md):\n"
            "                      matmul m=8192 k=4096 n=14336 [batch=N] [wdtype=int8]\n"
            "                      elementwise shape=AxB [inputs=2] [flops=1]\n"
            "                      reduce shape=AxB [axis=1]   transpose shape=AxB\n"
            "                      gather table=ROWSxWIDTH indices=N\n"
            "                      conv input=NxHxWxC kernel=3x3 out=C [stride=1]\n"
            "                      raw flops=1e12 bytes=4e9\n"
            "                    any op: name= dtype= wdtype= count= comm=BYTES\n"
            "  --hlo FILE        every instruction of an XLA HLO module's entry computation\n"
            "                    (fusions, calls and loops as one op each): HLO text (.hlo,\n"
            "                    .txt) or a raw TpuGraphs tuning proto / HloModuleProto (.pb),\n"
            "                    or an XLA dump directory (its *after_optimizations.txt)\n"
            "  --stage S         with --hlo DUMP_DIR: after (default) or before optimizations\n"
            "  --module N        with --hlo: only the N-th module of the file (default: all)\n"
            "  --while-trips N   with --hlo: times a while body runs when the loop does not\n"
            "                    say (known_trip_count in backend_config, or a counter\n"
            "                    compared LT with a constant); default 1\n"
            "  --loop-ops        with --hlo: a while's body ops as rows (LOOP/op, times the\n"
            "                    trip count) instead of one row per loop\n"
            "  --mesh AxB[xC]    with --hlo: the devices of the collectives, numbered row-major;\n"
            "                    a replica group's devices pick the mesh axes it runs over (TPU:\n"
            "                    torus axes; GPU: NVLink within a domain of the chip's\n"
            "                    nvlink_domain GPUs, InfiniBand beyond). Default: each group\n"
            "                    as a 1-D mesh of its own devices\n"
            "  --top N           print the N slowest ops, the rest as one line (default 10;\n"
            "                    0: every op, in program order; --svg: number and list them)\n"
            "  --dtype P         compute/activation precision of --matmul/--op (default bf16;\n"
            "                    fp32 tf32 bf16 fp16 fp8 int8 int4 fp4); given with --hlo, the\n"
            "                    rate of every dot/convolution (default: their operand type)\n"
            "  --weight-dtype P  weight precision of --matmul/--op (default: --dtype;\n"
            "                    --wdtype is the deprecated spelling)\n"
            "  --comm-bw B/s     link bandwidth for comm bytes (default: one ICI axis\n"
            "                    bidirectional on TPUs, NVLink on GPUs)\n"
            "  --svg FILE        write a log-log roofline plot: one marker per op, its area the\n"
            "                    op's share of the time, its colour the bound\n"
            "  --json            machine-readable output\n"
            "  --chips-file F    extra or overridden chips (see 'perfcast chips --help')\n"
            "  --max-memory SIZE the memory budget of reading and parsing --hlo (all files of\n"
            "                    a dump directory together): GiB, or with a unit (512MiB);\n"
            "                    default half the available memory\n");
}

#define MAX_SPECS 256

typedef struct roof_args {
    const char *chip_name, *ops_file, *svg, *chips_file, *hlo, *stage;
    const char *dtype, *wdtype;
    int dtype_set, json;
    const char *specs[MAX_SPECS];
    int spec_is_matmul[MAX_SPECS];
    int nspecs;
    long long top, module;
    double comm_bw, while_trips;
    int loop_ops;
    const char *mesh;
    uint64_t max_memory; /* --max-memory (0: not given, the default budget) */
} roof_args;

/* ---- arguments ------------------------------------------------------------------ */

static int parse_num_opt(int c, const char *arg, roof_args *a) {
    long long v;
    pc_error e;
    switch (c) {
    case 'b':
        if (pc_parse_bytes(arg, &a->comm_bw, &e) || !(a->comm_bw > 0))
            return pc_cli_usage_error("roofline",
                                      "--comm-bw expects bytes/s > 0 like 4.5e10, got '%s'", arg);
        return -1;
    case 't':
        if (pc_cli_parse_i64(arg, 0, 1000000000, &v))
            return pc_cli_usage_error("roofline", "--top expects an integer >= 0 (0: all), got '%s'",
                                      arg);
        a->top = v;
        return -1;
    case 'M':
        if (pc_cli_parse_i64(arg, 0, 1000000000, &v))
            return pc_cli_usage_error("roofline", "--module expects an index >= 0, got '%s'", arg);
        a->module = v;
        return -1;
    default: {
        char *end;
        a->while_trips = strtod(arg, &end);
        if (end == arg || *end || !(a->while_trips >= 1) || !isfinite(a->while_trips))
            return pc_cli_usage_error("roofline", "--while-trips expects a number >= 1, got '%s'",
                                      arg);
        return -1;
    }
    }
}

static int parse_args(int argc, char **argv, roof_args *a) {
    static const struct option opts[] = {
        {"chip", required_argument, 0, 'c'},    {"matmul", required_argument, 0, 'm'},
        {"op", required_argument, 0, 'o'},      {"ops", required_argument, 0, 'O'},
        {"dtype", required_argument, 0, 'd'},   {"wdtype", required_argument, 0, 'X'},
        {"comm-bw", required_argument, 0, 'b'}, {"svg", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},          {"chips-file", required_argument, 0, 'f'},
        {"hlo", required_argument, 0, 'H'},     {"top", required_argument, 0, 't'},
        {"module", required_argument, 0, 'M'},  {"while-trips", required_argument, 0, 'W'},
        {"loop-ops", no_argument, 0, 'L'},      {"mesh", required_argument, 0, 'G'},
        {"stage", required_argument, 0, 'S'},   {"weight-dtype", required_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'},          {"max-memory", required_argument, 0, 'B'},
        {0, 0, 0, 0}};
    int c, rc;
    a->dtype = "bf16";
    a->module = -1;
    a->while_trips = 1;
    a->top = 10;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "c:m:o:O:d:w:b:s:jf:H:t:M:W:LS:B:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': a->chip_name = optarg; break;
        case 'm':
        case 'o':
            if (a->nspecs == MAX_SPECS)
                return pc_cli_usage_error("roofline", "more than %d --matmul/--op; use --ops FILE",
                                          MAX_SPECS);
            a->spec_is_matmul[a->nspecs] = c == 'm';
            a->specs[a->nspecs++] = optarg;
            break;
        case 'O': a->ops_file = optarg; break;
        case 'd': a->dtype = optarg, a->dtype_set = 1; break;
        case 'X':
            pc_cli_deprecated("roofline", "--wdtype", "--weight-dtype");
            a->wdtype = optarg;
            break;
        case 'w': a->wdtype = optarg; break;
        case 'b':
        case 't':
        case 'M':
        case 'W':
            if ((rc = parse_num_opt(c, optarg, a)) >= 0) return rc;
            break;
        case 's': a->svg = optarg; break;
        case 'j': a->json = 1; break;
        case 'f': a->chips_file = optarg; break;
        case 'H': a->hlo = optarg; break;
        case 'L': a->loop_ops = 1; break;
        case 'G': a->mesh = optarg; break;
        case 'S': a->stage = optarg; break;
        case 'B':
            if (pc_cli_max_memory("roofline", optarg, &a->max_memory)) return PC_EXIT_USAGE;
            break;
        case 'h': roofline_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("roofline", "unknown option '%s'", argv[optind - 1]);
        }
    }
    return -1;
}

static int check_args(int argc, char **argv, const roof_args *a) {
    static const char precs[] = "(fp32 tf32 bf16 fp16 fp8 int8 int4 fp4)";
    if (optind < argc)
        return pc_cli_usage_error("roofline", "unexpected argument '%s'", argv[optind]);
    if (!a->chip_name)
        return pc_cli_usage_error("roofline", "--chip NAME is required (see 'perfcast chips')");
    if (!a->nspecs && !a->ops_file && !a->hlo)
        return pc_cli_usage_error("roofline",
                                  "give ops: --matmul B,D,F, --op SPEC, --ops FILE or --hlo FILE");
    if (!a->hlo && (a->module >= 0 || a->while_trips != 1 || a->loop_ops || a->mesh))
        return pc_cli_usage_error("roofline",
                                  "--module, --while-trips, --loop-ops and --mesh go with --hlo FILE");
    if (pc_prec_parse(a->dtype) < 0)
        return pc_cli_usage_error("roofline", "--dtype '%s' unknown %s", a->dtype, precs);
    if (a->wdtype && pc_prec_parse(a->wdtype) < 0)
        return pc_cli_usage_error("roofline", "--weight-dtype '%s' unknown %s", a->wdtype, precs);
    if (a->svg) {
        const char *in[3] = {a->hlo, a->ops_file, a->chips_file};
        int rc = pc_cli_check_not_input("roofline", "--svg", a->svg, in, 3);
        if (rc < 0) rc = pc_cli_check_out_file("roofline", "--svg", a->svg);
        if (rc >= 0) return rc;
    }
    return -1;
}


/* ---- the request -------------------------------------------------------------------- */

/* The flags as a roofline query (perfcast/query.h): the library computes, this prints. The
 * document's "plot" is the text's header (its chip) and the --svg picture (every op). */
static cJSON *request(const roof_args *a) {
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "chip", a->chip_name);
    if (a->chips_file) cJSON_AddStringToObject(q, "chips_file", a->chips_file);
    if (a->nspecs) {
        cJSON *ops = cJSON_AddArrayToObject(q, "op"); /* {"matmul": ...} keeps the flags' order */
        for (int i = 0; i < a->nspecs; i++) {
            cJSON *x = cJSON_CreateString(a->specs[i]);
            if (a->spec_is_matmul[i]) {
                cJSON *m = cJSON_CreateObject();
                cJSON_AddItemToObject(m, "matmul", x);
                x = m;
            }
            cJSON_AddItemToArray(ops, x);
        }
    }
    if (a->ops_file) cJSON_AddStringToObject(q, "ops", a->ops_file);
    if (a->hlo) cJSON_AddStringToObject(q, "hlo", a->hlo);
    if (a->stage) cJSON_AddStringToObject(q, "stage", a->stage);
    if (a->module >= 0) cJSON_AddNumberToObject(q, "module", (double)a->module);
    if (a->hlo) cJSON_AddNumberToObject(q, "while_trips", a->while_trips);
    if (a->loop_ops) cJSON_AddTrueToObject(q, "loop_ops");
    if (a->mesh) cJSON_AddStringToObject(q, "mesh", a->mesh);
    cJSON_AddNumberToObject(q, "top", (double)a->top);
    if (a->dtype_set) cJSON_AddStringToObject(q, "dtype", a->dtype);
    if (a->wdtype) cJSON_AddStringToObject(q, "weight_dtype", a->wdtype);
    if (a->comm_bw > 0) cJSON_AddNumberToObject(q, "comm_bw", a->comm_bw);
    if (a->svg) /* every op: the picture; else the chip only (the text's header) */
        cJSON_AddTrueToObject(q, "plot");
    else
        cJSON_AddStringToObject(q, "plot", "chip");
    if (a->max_memory) cJSON_AddNumberToObject(q, "max_memory", (double)a->max_memory);
    return q;
}

/* A failure of the query: one about a flag's value (or the chip's name) is a usage error
 * naming the flag; a file's (--chips-file, --ops, --hlo) names the file. */
static int query_error(const pc_error *e) {
    static const char *const keys[][2] = {
        {"matmul '", "--matmul '"}, {"op '", "--op '"}, {"'mesh' '", "--mesh '"}};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t l = strlen(keys[k][0]);
        if (e->code == PC_ERR_ARG && !strncmp(e->msg, keys[k][0], l))
            return pc_cli_usage_error("roofline", "%s%s", keys[k][1], e->msg + l);
    }
    if (e->code == PC_ERR_ARG && !strncmp(e->msg, "unknown chip '", 14)) {
        char m[PC_CLI_MSG_MAX];
        const char *p = strstr(e->msg, "a chips_file");
        snprintf(m, sizeof m, "%.*s%s%s", (int)(p ? p - e->msg : (ptrdiff_t)strlen(e->msg)),
                 e->msg, p ? "a --chips-file" : "", p ? p + 12 : "");
        return pc_cli_usage_error("roofline", "%s", m);
    }
    return pc_cli_fail(e);
}

/* Runs the query once; the document in *doc, or the exit code. */
static int run_query(const roof_args *a, cJSON **doc) {
    pc_error e;
    if (pc_acli_query(PC_QUERY_ROOFLINE, request(a), doc, &e) != PC_OK) return query_error(&e);
    return -1;
}

/* ---- output ----------------------------------------------------------------------------- */

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsTrue(v) ? 1 : 0;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static pc_bound bound_of(const char *name) {
    for (int b = PC_BOUND_COMPUTE; b <= PC_BOUND_COMM; b++)
        if (!strcmp(name, pc_bound_name((pc_bound)b))) return (pc_bound)b;
    return PC_BOUND_COMPUTE;
}

/* --svg: every op of the document's "plot", the --top slowest (default 10) numbered and listed. */
static int write_svg(const roof_args *a, const cJSON *doc) {
    const cJSON *plot = cJSON_GetObjectItemCaseSensitive(doc, "plot");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(plot, "chip");
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(plot, "ops");
    size_t n = (size_t)cJSON_GetArraySize(ops), i = 0;
    pc_plot_roof_op *pts = calloc(n + 1, sizeof *pts);
    if (!pts) {
        fprintf(stderr, "perfcast roofline: error: out of memory\n");
        return PC_EXIT_FAIL;
    }
    for (const cJSON *x = ops ? ops->child : NULL; x; x = x->next, i++) {
        double f = num(x, "flops"), t = num(x, "time");
        pts[i].label = str(x, "name");
        pts[i].kind = str(x, "kind");
        pts[i].intensity = f > 0 ? num(x, "intensity") : 0;
        pts[i].rate = t > 0 ? f / t : 0;
        pts[i].time = t;
        pts[i].bound = bound_of(str(x, "bound"));
    }
    pc_plot_roof_chip chip = {str(c, "name"),      str(c, "full_name"), str(doc, "dtype"),
                              num(c, "peak_flops"), num(c, "hbm_bw"),   num(c, "vector_flops")};
    int rc = pc_plot_roofline(a->svg, &chip, pts, n, a->top > 0 ? (size_t)a->top : 10);
    free(pts);
    return rc;
}

static void print_hlo_notes(const cJSON *h, const char *chip, int fallbacks) {
    char b[32], t[32];
    const char *nets = str(h, "networks");
    if (num(h, "ops") == 0)
        printf("note: nothing to cost in the entry computation (no FLOPs, HBM bytes or "
               "collectives): the roofline is zero\n");
    if (num(h, "while_loops") > 0)
        printf("note: %.0f while loop(s): %.0f with known_trip_count, %.0f counted from the loop "
               "(counter < constant), %.0f at --while-trips %g\n",
               num(h, "while_loops"), num(h, "loops_known_trip_count"), num(h, "loops_counted"),
               num(h, "loops_fallback"), num(h, "while_trips"));
    if (num(h, "library_calls") > 0)
        printf("note: %.0f cuBLAS/cuDNN custom-call(s) costed as GEMMs/convolutions\n",
               num(h, "library_calls"));
    int ncoll = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(h, "collectives"));
    if (ncoll)
        printf("note: %d collective(s), %s moved, T_comm %s%s%s (communication, not HBM "
               "bytes)\n",
               ncoll, pc_acli_si(num(h, "comm_bytes"), "B", b, sizeof b),
               pc_acli_time(num(h, "collective_time"), t, sizeof t), nets[0] ? " over " : "",
               nets);
    if (num(h, "collectives_over_all_devices") > 0)
        printf("note: %.0f collective(s) over all devices (replica_groups={}) not priced: give "
               "--mesh\n", num(h, "collectives_over_all_devices"));
    if (num(h, "collectives_unpriced") > 0) {
        char m[PC_CLI_MSG_MAX];
        snprintf(m, sizeof m, "%s", str(h, "collective_error"));
        pc_cli_flags(m, sizeof m);
        printf("note: %.0f collective(s) not priced, their group does not fit %s's network "
               "(first: %s)\n", num(h, "collectives_unpriced"), chip, m);
    }
    if (num(h, "collectives_unaligned") > 0)
        printf("note: %.0f collective(s) whose group is not whole --mesh axes: priced over the "
               "group as a 1-D mesh\n", num(h, "collectives_unaligned"));
    if (num(h, "unsized_tuples") > 0)
        printf("note: %.0f tuple value(s) of unknown size counted as 0 bytes\n",
               num(h, "unsized_tuples"));
    if (num(h, "dots_without_dims") > 0)
        printf("note: %.0f dot(s) without dimension numbers: lhs's last dim contracted\n",
               num(h, "dots_without_dims"));
    if (num(h, "unknown_ops") > 0)
        printf("note: %.0f op(s) without a FLOP rule (first: %s): bytes only\n",
               num(h, "unknown_ops"), str(h, "first_unknown_op"));
    if (fallbacks)
        printf("note: %d dot/convolution op(s) in a precision %s has no rate for (e.g. f32): "
               "counted at the bf16 rate (--dtype to choose)\n",
               fallbacks, chip);
}

static void print_hlo_header(const roof_args *a, const char *chip, const cJSON *doc) {
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(doc, "hlo");
    int nmod = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(h, "modules"));
    printf("%s (%s, %d module%s): %.0f instructions in the entry, %.0f ops costed, %.0f free "
           "(parameter, constant, tuple, bitcast, ...)\n",
           a->hlo, str(h, "format"), nmod, nmod == 1 ? "" : "s", num(h, "instructions"),
           num(h, "ops"), num(h, "free_instructions"));
    print_hlo_notes(h, chip, (int)num(doc, "bf16_rate_fallbacks"));
}

static void print_row(const cJSON *x, double total) {
    char t[32], name[21];
    const char *label = str(x, "name");
    snprintf(name, sizeof name, "%s", label);
    if (strlen(label) > 20) memcpy(name + 17, "...", 4);
    printf("%-20s %-11.11s %-5s %10.3g %10.3g %10.4g %10s %-8s %5.1f%%\n", name, str(x, "kind"),
           str(x, "dtype"), num(x, "flops"), num(x, "bytes"), num(x, "intensity"),
           pc_acli_time(num(x, "time"), t, sizeof t), str(x, "bound"),
           total > 0 ? 100 * num(x, "time") / total : 0);
}

static void print_text(const roof_args *a, const cJSON *doc) {
    char x[64], y[64], tt[32];
    const cJSON *chip = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "plot"), "chip");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(doc, "total");
    const cJSON *others = cJSON_GetObjectItemCaseSensitive(doc, "others");
    double total = num(t, "time");
    printf("chip %s (%s): %s %s, HBM %s -> critical intensity %.0f FLOPs/byte\n",
           str(doc, "chip"), str(chip, "full_name"), str(doc, "dtype"),
           pc_acli_si(num(doc, "peak_flops"), "FLOP/s", x, sizeof x),
           pc_acli_si(num(doc, "hbm_bw"), "B/s", y, sizeof y), num(doc, "critical_intensity"));
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "hlo")))
        print_hlo_header(a, str(doc, "chip"), doc);
    printf("%-20s %-11s %-5s %10s %10s %10s %10s %-8s %6s\n", "op", "kind", "dtype", "FLOPs",
           "bytes", "intensity", "time", "bound", "share");
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(doc, "ops");
    for (const cJSON *o = ops ? ops->child : NULL; o; o = o->next) print_row(o, total);
    if (cJSON_IsObject(others)) {
        double f = num(others, "flops"), b = num(others, "bytes"), tm = num(others, "time");
        char name[32];
        snprintf(name, sizeof name, "(%.0f others)", num(others, "ops"));
        printf("%-20s %-11s %-5s %10.3g %10.3g %10.4g %10s %-8s %5.1f%%\n", name, "", "", f, b,
               b > 0 ? f / b : 0, pc_acli_time(tm, tt, sizeof tt), "",
               total > 0 ? 100 * tm / total : 0);
    }
    double tf = num(t, "flops"), tb = num(t, "bytes");
    printf("%-20s %-11s %-5s %10.3g %10.3g %10.4g %10s (compute %.0f%%, memory %.0f%%, comm "
           "%.0f%%)\n",
           "total", "", "", tf, tb, tb > 0 ? tf / tb : 0, pc_acli_time(total, tt, sizeof tt),
           total > 0 ? 100 * num(t, "compute_bound_time") / total : 0,
           total > 0 ? 100 * num(t, "memory_bound_time") / total : 0,
           total > 0 ? 100 * num(t, "comm_bound_time") / total : 0);
    char m1[32], m2[32];
    printf("overall: %s-bound (sum of T_math %s, of T_hbm %s", str(t, "bound"),
           pc_acli_time(num(t, "t_compute"), m1, sizeof m1),
           pc_acli_time(num(t, "t_memory"), m2, sizeof m2));
    if (num(t, "t_comm") > 0) printf(", of T_comm %s", pc_acli_time(num(t, "t_comm"), tt, sizeof tt));
    printf(")\n");
    if (a->svg) printf("wrote %s\n", a->svg);
}

/* ---- the command ---------------------------------------------------------------------- */

int pc_cmd_roofline(int argc, char **argv) {
    roof_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    if ((rc = check_args(argc, argv, &a)) >= 0) return rc;
    char pat[4096];
    const char *stage_path;
    if (a.hlo && (rc = pc_cli_hlo_stage_path("roofline", a.hlo, a.stage, pat, sizeof pat,
                                             &stage_path)) >= 0)
        return rc; /* the query reads the dump directory itself: checked here for the flags */
    cJSON *doc = NULL; /* one query: the chips file read once, the text/JSON and the SVG */
    rc = run_query(&a, &doc);
    if (rc < 0 && a.svg) rc = write_svg(&a, doc);
    if (rc < 0) {
        rc = PC_EXIT_OK;
        if (a.json) {
            cJSON_DeleteItemFromObjectCaseSensitive(doc, "plot"); /* the command's, not --json's */
            if (a.svg) cJSON_ReplaceItemInObjectCaseSensitive(doc, "svg", cJSON_CreateString(a.svg));
            char *s = cJSON_Print(doc);
            if (s) puts(s);
            free(s);
        } else {
            print_text(&a, doc);
        }
    }
    cJSON_Delete(doc);
    return rc;
}
