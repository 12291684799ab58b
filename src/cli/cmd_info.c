/* perfcast info: every array of a .npz (or .npy) file, and a graph summary. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Arrays bigger than this are scanned in row chunks instead of read whole. */
#define INFO_WHOLE_LIMIT (UINT64_C(256) << 20)
#define INFO_CHUNK_BYTES (UINT64_C(64) << 20)

typedef struct acc {
    double min, max, sum;
    int64_t n, nan;
} acc;

static void acc_init(acc *a) {
    a->min = INFINITY;
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
        if (v > a->max) a->max = v;
        a->sum += v;
        a->n++;
    }
}

/* Scans member i in bounded memory. */
static pc_status scan_member(pc_npz *z, int i, const pc_array_info *info, acc *a, pc_error *err) {
    acc_init(a);
    if (info->data_bytes <= INFO_WHOLE_LIMIT || info->ndim == 0 ||
        (info->fortran_order && info->ndim > 1)) {
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

/* Graph summary through the dataset layer; a non-graph archive is not an error. */
static void graph_summary(const char *path, int threads, cJSON *json) {
    pc_load_opts o = pc_load_opts_default();
    o.max_resident_config_bytes = 1; /* never pull node_config_feat in whole here */
    o.threads = threads;
    pc_graph *g = NULL;
    pc_error e;
    pc_error_clear(&e);
    if (pc_graph_load(path, &o, &g, &e) != PC_OK) {
        if (json) cJSON_AddStringToObject(json, "graph_error", e.msg);
        else printf("graph: not a TpuGraphs tile/layout graph (%s)\n", e.msg);
        return;
    }
    const int64_t c = pc_graph_num_configs(g);
    const int64_t *rt = pc_graph_config_runtime(g);
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t k = 0; k < c; k++) {
        if (rt[k] > 0 && rt[k] < lo) lo = rt[k];
        if (rt[k] > hi) hi = rt[k];
    }
    int64_t nsplits = 0;
    pc_graph_node_splits(g, &nsplits);
    if (json) {
        cJSON *gj = cJSON_AddObjectToObject(json, "graph");
        cJSON_AddStringToObject(gj, "kind", pc_kind_name(pc_graph_kind(g)));
        cJSON_AddNumberToObject(gj, "nodes", (double)pc_graph_num_nodes(g));
        cJSON_AddNumberToObject(gj, "edges", (double)pc_graph_num_edges(g));
        cJSON_AddNumberToObject(gj, "configs", (double)c);
        cJSON_AddNumberToObject(gj, "configurable_nodes", (double)pc_graph_num_config_nodes(g));
        cJSON_AddNumberToObject(gj, "node_splits", (double)nsplits);
        if (hi > 0) {
            cJSON_AddNumberToObject(gj, "runtime_min_ns", (double)lo);
            cJSON_AddNumberToObject(gj, "runtime_max_ns", (double)hi);
        }
    } else {
        printf("graph: %s, %lld nodes, %lld edges, %lld configs", pc_kind_name(pc_graph_kind(g)),
               (long long)pc_graph_num_nodes(g), (long long)pc_graph_num_edges(g), (long long)c);
        if (pc_graph_kind(g) == PC_KIND_LAYOUT)
            printf(", %lld configurable nodes, %lld node_splits",
                   (long long)pc_graph_num_config_nodes(g), (long long)nsplits);
        if (hi > 0) printf(", runtime %.4g..%.4g ms (x%.2f)", (double)lo / 1e6, (double)hi / 1e6,
                           (double)hi / (double)lo);
        else if (c > 0) printf(", no runtimes (test split)");
        printf("\n");
    }
    pc_graph_free(g);
}

static int info_npy(const char *path, cJSON *json) {
    pc_error e;
    pc_array a;
    if (pc_npy_load(path, &a, &e) != PC_OK) return pc_cli_fail(&e);
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

static int info_npz(const char *path, int threads, cJSON *json) {
    pc_error e;
    pc_npz *z;
    if (pc_npz_open(path, &z, &e) != PC_OK) return pc_cli_fail(&e);
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
        if (json) cJSON_AddItemToArray(arrays, array_json(pc_npz_key(z, i), &info, &a));
        else print_array_line(pc_npz_key(z, i), &info, &a);
    }
    pc_npz_close(z);
    if (rc == PC_EXIT_OK) graph_summary(path, threads, json);
    return rc;
}

static void info_help(FILE *f) {
    fprintf(f, "usage: perfcast info [--json] [--threads N] FILE.npz|FILE.npy|DIR.pcc ...\n\n"
               "Lists every array (dtype, shape, min/max/mean, NaN count) and, for TpuGraphs\n"
               "files, a graph summary (kind, nodes, edges, configs, runtime spread).\n"
               "Huge arrays are scanned in chunks, never loaded whole.\n");
}

int pc_cmd_info(int argc, char **argv) {
    int json = 0;
    long long threads = 0;
    int rc0 = pc_cli_json_threads_opts("info", argc, argv, &json, &threads, info_help);
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
        else if (len >= 4 && !strcmp(argv[i] + len - 4, ".npy")) r = info_npy(argv[i], one);
        else if (len >= 4 && !strcmp(argv[i] + len - 4, ".pcc")) {
            if (!json) printf("%s: cache directory\n", argv[i]);
            graph_summary(argv[i], (int)threads, one);
            r = PC_EXIT_OK;
        } else r = info_npz(argv[i], (int)threads, one);
        if (r != PC_EXIT_OK) rc = r;
        if (json) cJSON_AddItemToArray(all, one);
    }
    if (json) {
        char *s = cJSON_Print(all);
        if (s) puts(s);
        free(s);
        cJSON_Delete(all);
    }
    return rc;
}
