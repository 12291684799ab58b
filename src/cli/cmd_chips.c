/* perfcast chips: the accelerator database (built-in + --chips-file). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"

static void chips_help(FILE *f) {
    fprintf(f,
            "usage: perfcast chips [NAME] [--json] [--chips-file FILE]\n\n"
            "Lists the accelerators the analytic model knows (TPU v3, v4, v5p, v5e, v6e, TPU7x;\n"
            "V100, A100, H100, H200, B200, GB200 NVL72) with peak FLOP/s, HBM, critical\n"
            "intensity (FLOP/s over HBM bytes/s) and interconnect; with NAME, every number of\n"
            "that chip and where it comes from (docs/analytic.md).\n\n"
            "  --chips-file FILE  JSON adding or overriding chips, e.g.\n"
            "                     {\"chips\": [{\"name\": \"v5e\", \"price_per_hour\": 1.0},\n"
            "                      {\"name\": \"my-tpu\", \"base\": \"v5p\", \"hbm_bw\": 3e12}]}\n"
            "  --json             {\"chips\": [...]}, every field of each chip: a file that\n"
            "                     --chips-file reads back (docs/json.md)\n");
}

static const char *wrap_name(pc_wrap_rule w) {
    switch (w) {
    case PC_WRAP_ALWAYS: return "always";
    case PC_WRAP_FULL_AXIS: return "full_axis";
    case PC_WRAP_CUBES: return "cubes";
    default: return "never";
    }
}

static cJSON *chip_json(const pc_chip *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "full_name", c->full_name);
    cJSON_AddStringToObject(o, "kind", c->kind == PC_CHIP_TPU ? "tpu" : "gpu");
    cJSON *fl = cJSON_AddObjectToObject(o, "flops");
    for (int p = 0; p < PC_PREC_COUNT; p++)
        if (c->flops[p] > 0) cJSON_AddNumberToObject(fl, pc_prec_name((pc_prec)p), c->flops[p]);
    cJSON_AddNumberToObject(o, "vector_flops", c->vector_flops);
    cJSON_AddNumberToObject(o, "hbm_bytes", c->hbm_bytes);
    cJSON_AddNumberToObject(o, "hbm_bw", c->hbm_bw);
    cJSON_AddNumberToObject(o, "onchip_bytes", c->onchip_bytes);
    if (c->kind == PC_CHIP_TPU) {
        cJSON_AddNumberToObject(o, "cores", c->cores);
        cJSON_AddNumberToObject(o, "torus_dims", c->torus_dims);
        cJSON *ps = cJSON_AddArrayToObject(o, "pod_shape");
        for (int d = 0; d < c->torus_dims; d++)
            cJSON_AddItemToArray(ps, cJSON_CreateNumber(c->pod_shape[d]));
        cJSON_AddStringToObject(o, "wrap", wrap_name(c->wrap));
        cJSON_AddNumberToObject(o, "wrap_size", c->wrap_size);
        cJSON_AddNumberToObject(o, "ici_link_bw", c->ici_link_bw);
        cJSON_AddNumberToObject(o, "ici_axis_bw", pc_chip_ici_axis_bw(c));
        cJSON_AddNumberToObject(o, "ici_hop_latency", c->ici_hop_latency);
        cJSON_AddNumberToObject(o, "dcn_bw", c->dcn_bw);
    } else {
        cJSON_AddNumberToObject(o, "sms", c->sms);
        cJSON_AddNumberToObject(o, "smem_per_sm", c->smem_per_sm);
        cJSON_AddNumberToObject(o, "nvlink_bw", c->nvlink_bw);
        cJSON_AddNumberToObject(o, "nvlink_domain", c->nvlink_domain);
        cJSON_AddNumberToObject(o, "ib_bw", c->ib_bw);
        cJSON_AddNumberToObject(o, "coll_latency", c->coll_latency);
    }
    cJSON_AddNumberToObject(o, "dcn_latency", c->dcn_latency);
    cJSON_AddNumberToObject(o, "pcie_bw", c->pcie_bw);
    cJSON_AddNumberToObject(o, "price_per_hour", c->price_per_hour);
    cJSON *ci = cJSON_AddObjectToObject(o, "critical_intensity");
    for (int l = 0; l < PC_LINK_COUNT; l++) {
        double v = pc_chip_critical_intensity(c, PC_PREC_BF16, (pc_link)l);
        if (v > 0) cJSON_AddNumberToObject(ci, pc_link_name((pc_link)l), v);
    }
    cJSON_AddStringToObject(o, "source", c->source);
    return o;
}

/* {"chips": [...]}: the format --chips-file reads, so the output loads back. */
static int print_json(cJSON *arr) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "chips", arr);
    return pc_cli_json_print(o);
}

static void print_detail(const pc_chip *c) {
    char a[64], b[64];
    printf("%s: %s (%s)\n", c->name, c->full_name, c->kind == PC_CHIP_TPU ? "TPU" : "GPU");
    for (int p = 0; p < PC_PREC_COUNT; p++)
        if (c->flops[p] > 0)
            printf("  %-22s %s\n", pc_prec_name((pc_prec)p),
                   pc_acli_si(c->flops[p],
                              p >= PC_PREC_INT8 && p <= PC_PREC_INT4 ? "OP/s" : "FLOP/s", a,
                              sizeof a));
    if (c->vector_flops > 0)
        printf("  %-22s %s\n", "vector (fp32)", pc_acli_si(c->vector_flops, "FLOP/s", a, sizeof a));
    printf("  %-22s %s at %s\n", "HBM", pc_acli_si(c->hbm_bytes, "B", a, sizeof a),
           pc_acli_si(c->hbm_bw, "B/s", b, sizeof b));
    if (c->onchip_bytes > 0)
        printf("  %-22s %s\n", c->kind == PC_CHIP_TPU ? "VMEM" : "L2",
               pc_acli_si(c->onchip_bytes, "B", a, sizeof a));
    if (c->kind == PC_CHIP_GPU && c->sms)
        printf("  %-22s %d SMs, %s shared memory each\n", "SMs", c->sms,
               pc_acli_si(c->smem_per_sm, "B", a, sizeof a));
    if (c->kind == PC_CHIP_TPU) {
        if (c->cores) printf("  %-22s %d\n", "TensorCores", c->cores);
        printf("  %-22s %d-D torus, pod ", "ICI topology", c->torus_dims);
        for (int d = 0; d < c->torus_dims; d++) printf("%s%d", d ? "x" : "", c->pod_shape[d]);
        printf(", %d links per chip, wraparound: ", 2 * c->torus_dims);
        if (c->wrap == PC_WRAP_FULL_AXIS)
            printf("axes of size %d\n", c->wrap_size);
        else if (c->wrap == PC_WRAP_CUBES)
            printf("slices of whole %dx%dx%d cubes\n", c->wrap_size, c->wrap_size, c->wrap_size);
        else
            printf("%s\n", wrap_name(c->wrap));
        printf("  %-22s %s per link one-way, %s bidirectional per axis; %.3g us per hop\n",
               "ICI bandwidth", pc_acli_si(c->ici_link_bw, "B/s", a, sizeof a),
               pc_acli_si(pc_chip_ici_axis_bw(c), "B/s", b, sizeof b), c->ici_hop_latency * 1e6);
        if (c->dcn_bw > 0)
            printf("  %-22s %s per chip\n", "DCN egress",
                   pc_acli_si(c->dcn_bw, "B/s", a, sizeof a));
    } else {
        printf("  %-22s %s per GPU each way, %d GPUs per NVLink domain\n", "NVLink",
               pc_acli_si(c->nvlink_bw, "B/s", a, sizeof a), c->nvlink_domain);
        if (c->ib_bw > 0)
            printf("  %-22s %s per GPU, %s per node\n", "InfiniBand",
                   pc_acli_si(c->ib_bw, "B/s", a, sizeof a),
                   pc_acli_si(pc_chip_link_bw(c, PC_LINK_IB), "B/s", b, sizeof b));
    }
    if (c->pcie_bw > 0) printf("  %-22s %s\n", "PCIe", pc_acli_si(c->pcie_bw, "B/s", a, sizeof a));
    printf("  %-22s", "critical intensity");
    int first = 1;
    for (int l = 0; l < PC_LINK_COUNT; l++) {
        double v = pc_chip_critical_intensity(c, PC_PREC_BF16, (pc_link)l);
        if (v > 0) printf("%s %s %.0f", first ? "" : ",", pc_link_name((pc_link)l), v), first = 0;
    }
    printf(" (bf16 FLOPs per byte)\n");
    if (c->price_per_hour > 0)
        printf("  %-22s $%.2f per chip-hour\n", "price", c->price_per_hour);
    else
        printf("  %-22s unknown (pass a price where a command asks for one)\n", "price");
    printf("  %-22s %s\n", "source", c->source);
}

int pc_cmd_chips(int argc, char **argv) {
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"chips-file", required_argument, 0, 'f'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int json = 0, c;
    const char *file = NULL;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "jf:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'f': file = optarg; break;
        case 'h': chips_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("chips", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind + 1 < argc)
        return pc_cli_usage_error("chips", "unexpected argument '%s' (one chip NAME at most)",
                                  argv[optind + 1]);
    const char *name = optind < argc ? argv[optind] : NULL;
    pc_chipdb *db;
    const pc_chip *chip = NULL;
    int rc = pc_acli_open_chip("chips", file, name, &db, name ? &chip : NULL);
    if (rc >= 0) return rc;
    if (chip) {
        if (json) {
            cJSON *arr = cJSON_CreateArray();
            cJSON_AddItemToArray(arr, chip_json(chip));
            rc = print_json(arr);
        } else {
            print_detail(chip);
            rc = PC_EXIT_OK;
        }
        pc_chipdb_free(db);
        return rc;
    }
    if (json) {
        cJSON *arr = cJSON_CreateArray();
        for (int i = 0; i < pc_chipdb_count(db); i++)
            cJSON_AddItemToArray(arr, chip_json(pc_chipdb_at(db, i)));
        rc = print_json(arr);
        pc_chipdb_free(db);
        return rc;
    }
    printf("%-12s %-4s %10s %10s %7s %9s %6s %14s %-10s %7s\n", "chip", "kind", "bf16 TF/s",
           "int8 TOP/s", "HBM GB", "HBM TB/s", "crit", "link GB/s", "topology", "$/hour");
    for (int i = 0; i < pc_chipdb_count(db); i++) {
        const pc_chip *ch = pc_chipdb_at(db, i);
        char topo[32], link[32], price[16], i8[16];
        double bf = pc_chip_flops(ch, PC_PREC_BF16);
        if (ch->kind == PC_CHIP_TPU) {
            int n = snprintf(topo, sizeof topo, "%dD ", ch->torus_dims);
            for (int d = 0; d < ch->torus_dims && n < (int)sizeof topo; d++)
                n += snprintf(topo + n, sizeof topo - (size_t)n, "%s%d", d ? "x" : "",
                              ch->pod_shape[d]);
            snprintf(link, sizeof link, "ICI %.0f", pc_chip_ici_axis_bw(ch) / 1e9);
        } else {
            snprintf(topo, sizeof topo, "NVL%d", ch->nvlink_domain);
            snprintf(link, sizeof link, "NVLink %.0f", ch->nvlink_bw / 1e9);
        }
        if (ch->price_per_hour > 0)
            snprintf(price, sizeof price, "%.2f", ch->price_per_hour);
        else
            snprintf(price, sizeof price, "-");
        double i8v = ch->flops[PC_PREC_INT8] > 0 ? ch->flops[PC_PREC_INT8] : ch->flops[PC_PREC_FP8];
        if (i8v > 0)
            snprintf(i8, sizeof i8, "%.0f", i8v / 1e12);
        else
            snprintf(i8, sizeof i8, "-");
        printf("%-12s %-4s %10.0f %10s %7.0f %9.2f %6.0f %14s %-10s %7s\n", ch->name,
               ch->kind == PC_CHIP_TPU ? "tpu" : "gpu", bf / 1e12, i8, ch->hbm_bytes / 1e9,
               ch->hbm_bw / 1e12, pc_chip_critical_intensity(ch, PC_PREC_BF16, PC_LINK_HBM), link,
               topo, price);
    }
    printf("crit = bf16 FLOP/s / HBM B/s; link = ICI bidirectional per axis or NVLink per GPU "
           "each way; 'perfcast chips NAME' for sources\n");
    pc_chipdb_free(db);
    return PC_EXIT_OK;
}
