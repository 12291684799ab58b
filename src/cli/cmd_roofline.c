/* perfcast roofline: compute / memory / communication time of ops on a chip. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"

static void roofline_help(FILE *f) {
    fprintf(f,
            "usage: perfcast roofline --chip NAME (--matmul B,D,F | --op SPEC | --ops FILE)...\n"
            "                         [--dtype bf16] [--wdtype int8] [--comm-bw B/s]\n"
            "                         [--svg FILE] [--json] [--chips-file FILE]\n\n"
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
            "  --dtype P         compute/activation precision of --matmul/--op (default bf16;\n"
            "                    fp32 tf32 bf16 fp16 fp8 int8 int4 fp4)\n"
            "  --wdtype P        weight precision of --matmul/--op (default: --dtype)\n"
            "  --comm-bw B/s     link bandwidth for comm bytes (default: one ICI axis\n"
            "                    bidirectional on TPUs, NVLink on GPUs)\n"
            "  --svg FILE        write a log-log roofline plot with one point per op\n"
            "  --json            machine-readable output\n"
            "  --chips-file F    extra or overridden chips (see 'perfcast chips --help')\n");
}

#define MAX_SPECS 256

int pc_cmd_roofline(int argc, char **argv) {
    static const struct option opts[] = {
        {"chip", required_argument, 0, 'c'},    {"matmul", required_argument, 0, 'm'},
        {"op", required_argument, 0, 'o'},      {"ops", required_argument, 0, 'O'},
        {"dtype", required_argument, 0, 'd'},   {"wdtype", required_argument, 0, 'w'},
        {"comm-bw", required_argument, 0, 'b'}, {"svg", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},          {"chips-file", required_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *chip_name = NULL, *ops_file = NULL, *svg = NULL, *chips_file = NULL;
    const char *dtype = "bf16", *wdtype = NULL;
    const char *specs[MAX_SPECS];
    int spec_is_matmul[MAX_SPECS];
    int nspecs = 0, json = 0, c;
    double comm_bw = 0;
    pc_error e;
    pc_error_clear(&e);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "c:m:o:O:d:w:b:s:jf:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': chip_name = optarg; break;
        case 'm':
        case 'o':
            if (nspecs == MAX_SPECS)
                return pc_cli_usage_error("roofline", "more than %d --matmul/--op; use --ops FILE",
                                          MAX_SPECS);
            spec_is_matmul[nspecs] = c == 'm';
            specs[nspecs++] = optarg;
            break;
        case 'O': ops_file = optarg; break;
        case 'd': dtype = optarg; break;
        case 'w': wdtype = optarg; break;
        case 'b':
            if (pc_parse_bytes(optarg, &comm_bw, &e) || !(comm_bw > 0))
                return pc_cli_usage_error("roofline",
                                          "--comm-bw expects bytes/s > 0 like 4.5e10, "
                                          "got '%s'",
                                          optarg);
            break;
        case 's': svg = optarg; break;
        case 'j': json = 1; break;
        case 'f': chips_file = optarg; break;
        case 'h': roofline_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("roofline", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return pc_cli_usage_error("roofline", "unexpected argument '%s'", argv[optind]);
    if (!chip_name)
        return pc_cli_usage_error("roofline", "--chip NAME is required (see 'perfcast chips')");
    if (!nspecs && !ops_file)
        return pc_cli_usage_error("roofline", "give ops: --matmul B,D,F, --op SPEC or --ops FILE");
    int dp = pc_prec_parse(dtype);
    if (dp < 0)
        return pc_cli_usage_error("roofline",
                                  "--dtype '%s' unknown (fp32 tf32 bf16 fp16 fp8 int8 "
                                  "int4 fp4)",
                                  dtype);
    if (wdtype && pc_prec_parse(wdtype) < 0)
        return pc_cli_usage_error("roofline",
                                  "--wdtype '%s' unknown (fp32 tf32 bf16 fp16 fp8 int8 "
                                  "int4 fp4)",
                                  wdtype);
    pc_chipdb *db;
    const pc_chip *chip;
    int rc = pc_acli_open_chip("roofline", chips_file, chip_name, &db, &chip);
    if (rc >= 0) return rc;
    rc = PC_EXIT_OK;

    /* gather ops: command-line specs first, then the file */
    pc_op *file_ops = NULL;
    size_t nfile = 0;
    if (ops_file && pc_ops_load(ops_file, &file_ops, &nfile, &e) != PC_OK) {
        pc_chipdb_free(db);
        return pc_cli_fail(&e);
    }
    size_t nops = (size_t)nspecs + nfile;
    pc_op *ops = calloc(nops, sizeof *ops);
    pc_cost *costs = calloc(nops, sizeof *costs);
    pc_roofline *rl = calloc(nops, sizeof *rl);
    if (!ops || !costs || !rl) {
        fprintf(stderr, "perfcast roofline: error: out of memory\n");
        rc = PC_EXIT_FAIL;
        goto done;
    }
    for (int i = 0; i < nspecs; i++) {
        char line[1100];
        if (spec_is_matmul[i]) {
            char dims[256];
            snprintf(dims, sizeof dims, "%s", specs[i]);
            for (char *p = dims; *p; p++)
                if (*p == ',') *p = 'x';
            snprintf(line, sizeof line, "matmul dtype=%s%s%s shape=%s name=matmul%d", dtype,
                     wdtype ? " wdtype=" : "", wdtype ? wdtype : "", dims, i);
        } else {
            snprintf(line, sizeof line, "%.*s", (int)strcspn(specs[i], " \t"), specs[i]);
            size_t l = strlen(line);
            snprintf(line + l, sizeof line - l, " dtype=%s%s%s name=op%d %s", dtype,
                     wdtype ? " wdtype=" : "", wdtype ? wdtype : "", i,
                     specs[i] + strcspn(specs[i], " \t"));
        }
        if (pc_op_parse_line(line, &ops[i], &e) != PC_OK) {
            rc = pc_cli_usage_error("roofline", "%s '%s': %s",
                                    spec_is_matmul[i] ? "--matmul" : "--op", specs[i], e.msg);
            goto done;
        }
    }
    if (nfile) memcpy(ops + nspecs, file_ops, nfile * sizeof *ops);
    double total = 0, tc = 0, tm = 0, tx = 0, tflops = 0, tbytes = 0, tcomm = 0;
    for (size_t i = 0; i < nops; i++) {
        if (pc_op_cost(&ops[i], &costs[i], &e) != PC_OK ||
            pc_roofline_eval(chip, &costs[i], comm_bw, &rl[i], &e) != PC_OK) {
            fprintf(stderr, "perfcast roofline: error: %s: %s\n", ops[i].name, e.msg);
            rc = PC_EXIT_FAIL;
            goto done;
        }
        total += rl[i].time;
        tflops += costs[i].flops;
        tbytes += costs[i].bytes;
        tcomm += costs[i].comm_bytes;
        if (rl[i].bound == PC_BOUND_COMPUTE)
            tc += rl[i].time;
        else if (rl[i].bound == PC_BOUND_MEMORY)
            tm += rl[i].time;
        else
            tx += rl[i].time;
    }
    pc_prec head = ops[0].prec;
    double peak = pc_chip_flops(chip, head);
    if (svg) {
        pc_roof_point *pts = calloc(nops, sizeof *pts);
        if (!pts) {
            fprintf(stderr, "perfcast roofline: error: out of memory\n");
            rc = PC_EXIT_FAIL;
            goto done;
        }
        for (size_t i = 0; i < nops; i++) {
            pts[i].label = ops[i].name;
            pts[i].intensity = rl[i].intensity;
            pts[i].flops_rate = rl[i].time > 0 ? costs[i].flops / rl[i].time : 0;
        }
        pc_status st = pc_roofline_write_svg(svg, chip, head, pts, nops, &e);
        free(pts);
        if (st != PC_OK) {
            rc = pc_cli_fail(&e);
            goto done;
        }
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "chip", chip->name);
        cJSON_AddStringToObject(o, "dtype", pc_prec_name(head));
        cJSON_AddNumberToObject(o, "peak_flops", peak);
        cJSON_AddNumberToObject(o, "hbm_bw", chip->hbm_bw);
        cJSON_AddNumberToObject(o, "critical_intensity",
                                pc_chip_critical_intensity(chip, head, PC_LINK_HBM));
        cJSON *arr = cJSON_AddArrayToObject(o, "ops");
        for (size_t i = 0; i < nops; i++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "name", ops[i].name);
            cJSON_AddStringToObject(x, "kind", pc_op_kind_name(ops[i].kind));
            cJSON_AddStringToObject(x, "dtype", pc_prec_name(ops[i].prec));
            cJSON_AddNumberToObject(x, "flops", costs[i].flops);
            cJSON_AddNumberToObject(x, "bytes", costs[i].bytes);
            cJSON_AddNumberToObject(x, "comm_bytes", costs[i].comm_bytes);
            cJSON_AddNumberToObject(x, "intensity", rl[i].intensity);
            cJSON_AddNumberToObject(x, "critical_intensity", rl[i].critical_intensity);
            cJSON_AddNumberToObject(x, "t_compute", rl[i].t_compute);
            cJSON_AddNumberToObject(x, "t_memory", rl[i].t_memory);
            cJSON_AddNumberToObject(x, "t_comm", rl[i].t_comm);
            cJSON_AddNumberToObject(x, "time", rl[i].time);
            cJSON_AddNumberToObject(x, "time_upper", rl[i].time_upper);
            cJSON_AddStringToObject(x, "bound", pc_bound_name(rl[i].bound));
            cJSON_AddNumberToObject(x, "share", total > 0 ? rl[i].time / total : 0);
            cJSON_AddItemToArray(arr, x);
        }
        cJSON *t = cJSON_AddObjectToObject(o, "total");
        cJSON_AddNumberToObject(t, "flops", tflops);
        cJSON_AddNumberToObject(t, "bytes", tbytes);
        cJSON_AddNumberToObject(t, "comm_bytes", tcomm);
        cJSON_AddNumberToObject(t, "time", total);
        cJSON_AddNumberToObject(t, "compute_bound_time", tc);
        cJSON_AddNumberToObject(t, "memory_bound_time", tm);
        cJSON_AddNumberToObject(t, "comm_bound_time", tx);
        if (svg) cJSON_AddStringToObject(o, "svg", svg);
        char *s = cJSON_Print(o);
        if (s) puts(s);
        free(s);
        cJSON_Delete(o);
    } else {
        char a[64], b[64];
        printf("chip %s (%s): %s %s, HBM %s -> critical intensity %.0f FLOPs/byte\n", chip->name,
               chip->full_name, pc_prec_name(head), pc_acli_si(peak, "FLOP/s", a, sizeof a),
               pc_acli_si(chip->hbm_bw, "B/s", b, sizeof b),
               pc_chip_critical_intensity(chip, head, PC_LINK_HBM));
        printf("%-20s %-11s %-5s %10s %10s %10s %10s %-8s %6s\n", "op", "kind", "dtype", "FLOPs",
               "bytes", "intensity", "time", "bound", "share");
        for (size_t i = 0; i < nops; i++) {
            char t[32];
            printf("%-20s %-11s %-5s %10.3g %10.3g %10.4g %10s %-8s %5.1f%%\n", ops[i].name,
                   pc_op_kind_name(ops[i].kind), pc_prec_name(ops[i].prec), costs[i].flops,
                   costs[i].bytes, rl[i].intensity, pc_acli_time(rl[i].time, t, sizeof t),
                   pc_bound_name(rl[i].bound), total > 0 ? 100 * rl[i].time / total : 0);
        }
        char t[32];
        printf("%-20s %-11s %-5s %10.3g %10.3g %10.4g %10s (compute %.0f%%, memory %.0f%%, comm "
               "%.0f%%)\n",
               "total", "", "", tflops, tbytes, tbytes > 0 ? tflops / tbytes : 0,
               pc_acli_time(total, t, sizeof t), total > 0 ? 100 * tc / total : 0,
               total > 0 ? 100 * tm / total : 0, total > 0 ? 100 * tx / total : 0);
        if (svg) printf("wrote %s\n", svg);
    }
done:
    free(ops);
    free(costs);
    free(rl);
    pc_ops_free(file_ops);
    pc_chipdb_free(db);
    return rc;
}
