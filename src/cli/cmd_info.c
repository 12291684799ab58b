/* perfcast info: every array of a .npz (or .npy) file, and a graph summary. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Arrays are scanned in row chunks of about this size, never read whole
   (a small file may inflate to gigabytes). */
#define INFO_CHUNK_BYTES (UINT64_C(8) << 20)

typedef struct acc {
    double min, max, sum, minpos;
    int64_t n, nan;
} acc;

static void acc_init(acc *a) {
    a->min = a->minpos = INFINITY;
    a->max = -INFINITY;
    a->sum = 0;
    a->n = a->nan = 0;
}

static double elem(const void *p, pc_dtype t, int64_t k) {
    switch (t) {
    case PC_DTYPE_BOOL:
    case PC_DTYPE_U8: return ((const uint8_t *)p)[k];
    case PC_DTYPE_I8: return ((const int8_t *)p)[k];
    case PC_DTYPE_U16: return ((const uint16_t *)p)[k];
    case PC_DTYPE_I16: return ((const int16_t *)p)[k];
    case PC_DTYPE_U32: return ((const uint32_t *)p)[k];
    case PC_DTYPE_I32: return ((const int32_t *)p)[k];
    case PC_DTYPE_U64: return (double)((const uint64_t *)p)[k];
    case PC_DTYPE_I64: return (double)((const int64_t *)p)[k];
    case PC_DTYPE_F32: return ((const float *)p)[k];
    case PC_DTYPE_F64: return ((const double *)p)[k];
    default: return NAN;
    }
}

static void acc_add(acc *a, const void *data, pc_dtype t, int64_t count) {
    for (int64_t k = 0; k < count; k++) {
        double v = elem(data, t, k);
        if (isnan(v)) {
            a->nan++;
            continue;
        }
        if (v < a->min) a->min = v;
        if (v > 0 && v < a->minpos) a->minpos = v;
        if (v > a->max) a->max = v;
        a->sum += v;
        a->n++;
    }
}

/* Scans member i in bounded memory: by rows, or whole (within the budget) when
   it has no rows to stream (0-d, Fortran order). */
static pc_status scan_member(pc_npz *z, int i, const pc_array_info *info, acc *a, pc_error *err) {
    acc_init(a);
    if (info->ndim == 0 || (info->fortran_order && info->ndim > 1)) {
        pc_array arr;
        pc_status st = pc_npz_read(z, i, &arr, err);
        if (st) return st;
        acc_add(a, arr.data, arr.dtype, pc_array_count(&arr));
        pc_array_free(&arr);
        return PC_OK;
    }
    pc_npz_rows *r;
    pc_status st = pc_npz_rows_open(z, i, &r, err);
    if (st) return st;
    const int64_t rows = info->shape[0];
    const int64_t per_row = rows ? info->count / rows : 0;
    const pc_dtype mt = info->dtype == PC_DTYPE_F16 ? PC_DTYPE_F32 : info->dtype;
    const size_t row_bytes = (size_t)per_row * pc_dtype_size(mt);
    int64_t chunk = row_bytes ? (int64_t)(INFO_CHUNK_BYTES / row_bytes) : rows;
    if (chunk < 1) chunk = 1;
    void *buf = malloc((size_t)chunk * row_bytes + 1);
    if (!buf) st = PC_ERR_NOMEM;
    for (int64_t r0 = 0; r0 < rows && !st; r0 += chunk) {
        int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
        st = pc_npz_rows_read(r, r0, n, buf, err);
        if (!st) acc_add(a, buf, mt, n * per_row);
    }
    free(buf);
    pc_npz_rows_close(r);
    return st;
}

static cJSON *shape_json(int ndim, const int64_t *shape) {
    cJSON *s = cJSON_CreateArray();
    for (int k = 0; k < ndim; k++) cJSON_AddItemToArray(s, cJSON_CreateNumber((double)shape[k]));
    return s;
}

static void shape_str(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int k = 0; k < ndim && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%lld%s", (long long)shape[k],
                              (ndim == 1 || k + 1 < ndim) ? "," : "");
    if (n < cap) snprintf(buf + n, cap - n, ")");
}

static void print_array_line(const char *key, const pc_array_info *info, const acc *a) {
    char shape[128];
    shape_str(info->ndim, info->shape, shape, sizeof shape);
    char dt[48];
    snprintf(dt, sizeof dt, "%s%s%s", pc_dtype_name(info->dtype),
             info->big_endian ? " (big-endian)" : "", info->fortran_order ? " (F order)" : "");
    printf("  %-28s %-22s %-18s", key, dt, shape);
    if (a->n) printf(" min %-12.6g max %-12.6g mean %-12.6g", a->min, a->max, a->sum / (double)a->n);
    else printf(" (empty)");
    if (a->nan) printf(" NaN x%lld", (long long)a->nan);
    printf("\n");
}

static cJSON *array_json(const char *key, const pc_array_info *info, const acc *a) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddStringToObject(o, "dtype", pc_dtype_name(info->dtype));
    cJSON_AddStringToObject(o, "byte_order", info->big_endian ? "big" : "little");
    cJSON_AddBoolToObject(o, "fortran_order", info->fortran_order);
    cJSON_AddItemToObject(o, "shape", shape_json(info->ndim, info->shape));
    if (a->n) {
        cJSON_AddNumberToObject(o, "min", a->min);
        cJSON_AddNumberToObject(o, "max", a->max);
        cJSON_AddNumberToObject(o, "mean", a->sum / (double)a->n);
    }
    cJSON_AddNumberToObject(o, "nan_count", (double)a->nan);
    return o;
}

typedef struct runtimes {
    int have;
    double lo, hi;
} runtimes;

static void summary_print(const pc_graph_shape *g, const runtimes *rt, cJSON *json) {
    const double lo = rt->lo, hi = rt->hi;
    if (json) {
        cJSON *gj = cJSON_AddObjectToObject(json, "graph");
        cJSON_AddStringToObject(gj, "kind", pc_kind_name(g->kind));
        cJSON_AddNumberToObject(gj, "nodes", (double)g->nodes);
        cJSON_AddNumberToObject(gj, "edges", (double)g->edges);
        cJSON_AddNumberToObject(gj, "configs", (double)g->configs);
        cJSON_AddNumberToObject(gj, "configurable_nodes", (double)g->config_nodes);
        cJSON_AddNumberToObject(gj, "node_splits", (double)g->node_splits);
        cJSON_AddNumberToObject(gj, "load_bytes", (double)g->load_bytes);
        if (hi > 0) {
            cJSON_AddNumberToObject(gj, "runtime_min_ns", lo);
            cJSON_AddNumberToObject(gj, "runtime_max_ns", hi);
        }
        return;
    }
    printf("graph: %s, %lld nodes, %lld edges, %lld configs", pc_kind_name(g->kind),
           (long long)g->nodes, (long long)g->edges, (long long)g->configs);
    if (g->kind == PC_KIND_LAYOUT)
        printf(", %lld configurable nodes, %lld node_splits", (long long)g->config_nodes,
               (long long)g->node_splits);
    if (hi > 0)
        printf(", runtime %.4g..%.4g ms (x%.2f)", lo / 1e6, hi / 1e6, hi / lo);
    else if (g->configs > 0)
        printf(", no runtimes (test split)");
    printf("\n");
}

/* The graph's shape from its headers (a cache directory: mapped); nothing inflated. */
static pc_status probe(const char *path, uint64_t max_memory, pc_graph_shape *g, pc_error *e) {
    pc_load_opts o = pc_load_opts_default();
    o.max_memory = max_memory;
    memset(g, 0, sizeof *g);
    g->struct_size = sizeof *g;
    pc_error_clear(e);
    pc_status st = pc_graph_probe(path, &o, g, e);
    if (st != PC_OK) pc_cli_flags(e->msg, sizeof e->msg);
    return st;
}

/* A graph that would not load within the budget, or a broken cache, fails info. */
static int probe_fatal(pc_status st, int is_cache) {
    return st != PC_OK && (is_cache || st == PC_ERR_NOMEM || st == PC_ERR_IO);
}

/*
 * Graph summary through the dataset layer, from pc_graph_probe's verdict. A
 * non-graph archive is not an error; a graph that would not load within the
 * memory budget, or a broken cache directory, is (exit 1).
 */
static int graph_summary(const char *path, pc_status st, const pc_graph_shape *g, const pc_error *e,
                         const runtimes *known, int is_cache, cJSON *json) {
    if (st != PC_OK) {
        const int fatal = probe_fatal(st, is_cache);
        if (json)
            cJSON_AddStringToObject(json, "graph_error", e->msg);
        else if (fatal)
            printf("graph: cannot load: %s\n", e->msg);
        else
            printf("graph: not a TpuGraphs tile/layout graph (%s)\n", e->msg);
        if (fatal) pc_cli_fail(e);
        return fatal ? PC_EXIT_FAIL : PC_EXIT_OK;
    }
    runtimes rt = known ? *known : (runtimes){0, 0, 0};
    if (!known) { /* a cache directory: its runtimes are mapped, cheap to read */
        pc_load_opts o = pc_load_opts_default();
        pc_graph *gg = NULL;
        pc_error le;
        if (pc_graph_load(path, &o, &gg, &le) == PC_OK) {
            const int64_t *r = pc_graph_config_runtime(gg);
            rt.lo = INFINITY;
            for (int64_t k = 0; k < pc_graph_num_configs(gg); k++) {
                if (r[k] > 0 && (double)r[k] < rt.lo) rt.lo = (double)r[k];
                if ((double)r[k] > rt.hi) rt.hi = (double)r[k];
            }
            pc_graph_free(gg);
        }
    }
    summary_print(g, &rt, json);
    return PC_EXIT_OK;
}

static int info_npy(const char *path, uint64_t max_memory, cJSON *json) {
    pc_error e;
    pc_array a;
    /* mapped when it can be (nothing held), else read within the budget */
    if (pc_npy_map(path, &a, &e) != PC_OK &&
        (e.code != PC_ERR_UNSUPPORTED || pc_npy_load_max(path, max_memory, &a, &e) != PC_OK))
        return pc_cli_fail(&e);
    pc_array_info info = {.dtype = a.dtype, .ndim = a.ndim, .count = pc_array_count(&a)};
    memcpy(info.shape, a.shape, sizeof info.shape);
    acc s;
    acc_init(&s);
    acc_add(&s, a.data, a.dtype, info.count);
    if (json) cJSON_AddItemToArray(cJSON_AddArrayToObject(json, "arrays"), array_json("(npy)", &info, &s));
    else {
        printf("%s: .npy array\n", path);
        print_array_line("(npy)", &info, &s);
    }
    pc_array_free(&a);
    return PC_EXIT_OK;
}

static int info_npz(const char *path, uint64_t max_memory, cJSON *json) {
    pc_error e;
    pc_npz *z;
    if (pc_npz_open(path, &z, &e) != PC_OK) return pc_cli_fail(&e);
    pc_npz_set_max_memory(z, max_memory);
    runtimes rt = {1, 0, 0};
    /* the graph's verdict first: one that would not load within the budget fails
       before anything is inflated */
    pc_graph_shape g;
    pc_error ge;
    const pc_status gst = probe(path, max_memory, &g, &ge);
    if (probe_fatal(gst, 0)) {
        pc_npz_close(z);
        return graph_summary(path, gst, &g, &ge, &rt, 0, json);
    }
    cJSON *arrays = json ? cJSON_AddArrayToObject(json, "arrays") : NULL;
    if (!json) printf("%s: %d arrays\n", path, pc_npz_count(z));
    int rc = PC_EXIT_OK;
    for (int i = 0; i < pc_npz_count(z) && rc == PC_EXIT_OK; i++) {
        pc_array_info info;
        acc a;
        if (pc_npz_info(z, i, &info, &e) != PC_OK || scan_member(z, i, &info, &a, &e) != PC_OK) {
            rc = pc_cli_fail(&e);
            break;
        }
        if (!strcmp(pc_npz_key(z, i), "config_runtime") && a.n) rt = (runtimes){1, a.minpos, a.max};
        if (json) cJSON_AddItemToArray(arrays, array_json(pc_npz_key(z, i), &info, &a));
        else print_array_line(pc_npz_key(z, i), &info, &a);
    }
    pc_npz_close(z);
    if (rc == PC_EXIT_OK) rc = graph_summary(path, gst, &g, &ge, &rt, 0, json);
    return rc;
}

static void info_help(FILE *f) {
    fprintf(f, "usage: perfcast info [--json] [--threads N] [--max-memory SIZE]\n"
               "                     FILE.npz|FILE.npy|DIR.pcc ...\n\n"
               "Lists every array (dtype, shape, min/max/mean, NaN count) and, for TpuGraphs\n"
               "files, a graph summary (kind, nodes, edges, configs, runtime spread).\n"
               "Arrays are scanned in chunks of a few MiB, never inflated whole, so memory\n"
               "stays small whatever a file inflates to. Exit 1 when a file cannot be read,\n"
               "a graph would not load within the memory budget, or a cache directory is\n"
               "broken.\n"
               "  --max-memory SIZE  the memory budget of reads and of the graph's load: GiB,\n"
               "                     or with a unit (512MiB) (default: half the available memory)\n"
               "  --threads N        accepted for compatibility (scans are sequential)\n");
}

/* --json, --threads N, --max-memory SIZE, --help; -1 to go on, else an exit code. */
static int info_opts(int argc, char **argv, int *json, uint64_t *max_memory) {
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"threads", required_argument, 0, 't'},
                                         {"max-memory", required_argument, 0, 'm'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    long long threads = 0;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "jt:m:h", opts, NULL)) != -1) {
        if (c == 'j')
            *json = 1;
        else if (c == 't') {
            if (pc_cli_parse_i64(optarg, 0, 1024, &threads))
                return pc_cli_usage_error("info", "--threads expects 0..1024, got '%s'", optarg);
        } else if (c == 'm') {
            int rc = pc_cli_max_memory("info", optarg, max_memory);
            if (rc) return rc;
        } else if (c == 'h') {
            info_help(stdout);
            return PC_EXIT_OK;
        } else
            return pc_cli_usage_error("info", "unknown option '%s'", argv[optind - 1]);
    }
    return -1;
}

/*
 * The --json entry of one file: what was read and "error": null, or, when it
 * failed (exit code r), only {"file", "error": {"message", "file", "field"}}:
 * no half-read arrays.
 */
static cJSON *entry_of(const char *path, cJSON *one, int r) {
    if (r == PC_EXIT_OK) {
        cJSON_AddNullToObject(one, "error");
        return one;
    }
    cJSON_Delete(one);
    cJSON *e = pc_cli_json_error_take(), *o = cJSON_CreateObject();
    if (!e) { /* no message kept: say what is known */
        e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "message", "cannot be read");
        cJSON_AddStringToObject(e, "file", path);
        cJSON_AddNullToObject(e, "field");
    }
    cJSON_AddStringToObject(o, "file", path);
    cJSON_AddItemToObject(o, "error", e);
    return o;
}

int pc_cmd_info(int argc, char **argv) {
    int json = 0;
    uint64_t max_memory = PC_MEMORY_AUTO;
    int rc0 = info_opts(argc, argv, &json, &max_memory);
    if (rc0 >= 0) return rc0;
    if (optind >= argc) return pc_cli_usage_error("info", "expected at least one FILE");
    int rc = PC_EXIT_OK;
    cJSON *all = json ? cJSON_CreateArray() : NULL;
    for (int i = optind; i < argc; i++) {
        cJSON *one = json ? cJSON_CreateObject() : NULL;
        if (one) cJSON_AddStringToObject(one, "file", argv[i]);
        int r;
        size_t len = strlen(argv[i]);
        if (pc_cli_is_model(argv[i])) r = pc_cli_info_model(argv[i], json, one);
        else if (len >= 4 && !strcmp(argv[i] + len - 4, ".npy"))
            r = info_npy(argv[i], max_memory, one);
        else if (len >= 4 && !strcmp(argv[i] + len - 4, ".pcc")) {
            if (!json) printf("%s: cache directory\n", argv[i]);
            pc_graph_shape g;
            pc_error ge;
            const pc_status gst = probe(argv[i], max_memory, &g, &ge);
            r = graph_summary(argv[i], gst, &g, &ge, NULL, 1, one);
        } else
            r = info_npz(argv[i], max_memory, one);
        if (r != PC_EXIT_OK) rc = r;
        if (json) cJSON_AddItemToArray(all, entry_of(argv[i], one, r));
    }
    if (json) {
        char *s = cJSON_Print(all);
        if (s) puts(s);
        else
            rc = PC_EXIT_FAIL;
        free(s);
        cJSON_Delete(all);
        if (s) pc_cli_json_printed(); /* the errors are in the entries, not on stderr */
    }
    return rc;
}
