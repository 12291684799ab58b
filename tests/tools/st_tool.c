/*
 * pc_st_tool: drives the public safetensors API from the command line so
 * tests/scripts/test_safetensors_py.py can check it against an independent
 * Python parser and writer (struct + json + numpy).
 *
 *   pc_st_tool dump IN.safetensors       prints one JSON object:
 *       {"meta": {key: value, ...},
 *        "tensors": [{"name", "dtype", "shape", "nbytes", "hex"}, ...]}
 *       tensors in pc_st order (name order); "hex" is the data as stored.
 *   pc_st_tool copy IN OUT               reads IN, writes every tensor and
 *                                        metadata entry to OUT with the writer
 *   pc_st_tool gen OUT                   writes a fixed checkpoint (see gen())
 *
 * Exit status: 0 on success, 1 on any pc_* failure (message on stderr as
 * "pc_st_tool: error (<status name>): <message>"), 2 on usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "perfcast/safetensors.h"

static int fail(const pc_error *err) {
    fprintf(stderr, "pc_st_tool: error (%s): %s\n", pc_status_name(err->code), err->msg);
    return 1;
}

static int usage(void) {
    fputs("usage: pc_st_tool dump IN | copy IN OUT | gen OUT (see tests/tools/st_tool.c)\n",
          stderr);
    return 2;
}

static int dump(const char *path) {
    pc_error err;
    pc_st *r = NULL;
    if (pc_st_open(path, &r, &err) != PC_OK) return fail(&err);
    cJSON *root = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(root, "meta");
    for (int i = 0; i < pc_st_meta_count(r); i++)
        cJSON_AddStringToObject(meta, pc_st_meta_key(r, i), pc_st_meta_value(r, i));
    cJSON *arr = cJSON_AddArrayToObject(root, "tensors");
    for (int i = 0; i < pc_st_count(r); i++) {
        pc_dtype t;
        int nd;
        int64_t shape[PC_MAX_DIMS];
        pc_st_info(r, i, &t, &nd, shape);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", pc_st_name(r, i));
        cJSON_AddStringToObject(o, "dtype", pc_st_dtype_name(t));
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < nd; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[d]));
        uint64_t nb = pc_st_nbytes(r, i);
        cJSON_AddNumberToObject(o, "nbytes", (double)nb);
        char *hex = malloc(2 * (size_t)nb + 1);
        if (!hex) {
            fputs("pc_st_tool: out of memory\n", stderr);
            return 1;
        }
        const unsigned char *p = pc_st_data(r, i);
        for (uint64_t k = 0; k < nb; k++) snprintf(hex + 2 * k, 3, "%02x", p[k]);
        hex[2 * nb] = '\0';
        cJSON_AddStringToObject(o, "hex", hex);
        free(hex);
        cJSON_AddItemToArray(arr, o);
    }
    char *s = cJSON_PrintUnformatted(root);
    int rc = 0;
    if (s)
        puts(s);
    else
        rc = 1;
    cJSON_free(s);
    cJSON_Delete(root);
    pc_st_close(r);
    return rc;
}

static int copy(const char *in, const char *out) {
    pc_error err;
    pc_st *r = NULL;
    if (pc_st_open(in, &r, &err) != PC_OK) return fail(&err);
    pc_st_writer *w = pc_st_writer_new();
    pc_status st = w ? PC_OK : PC_ERR_NOMEM;
    for (int i = 0; st == PC_OK && i < pc_st_count(r); i++) {
        pc_dtype t;
        int nd;
        int64_t shape[PC_MAX_DIMS];
        pc_st_info(r, i, &t, &nd, shape);
        st = pc_st_writer_add(w, pc_st_name(r, i), t, nd, shape, pc_st_data(r, i), &err);
    }
    for (int i = 0; st == PC_OK && i < pc_st_meta_count(r); i++)
        st = pc_st_writer_set_meta(w, pc_st_meta_key(r, i), pc_st_meta_value(r, i), &err);
    if (st == PC_OK) st = pc_st_writer_save(w, out, &err);
    pc_st_writer_free(w);
    pc_st_close(r);
    return st == PC_OK ? 0 : fail(&err);
}

/*
 * Fixed checkpoint: element k of each tensor is given by a formula the Python
 * test repeats:
 *   "layer.0.weight"  F32 (3, 4)   k * 0.5 - 2
 *   "layer.0.bias"    F64 (4,)     k / 3.0
 *   "vocab"           I64 (5,)     k * 1000000007 - 2^40
 *   "ids"             I32 (2, 2)   -k * 7
 *   "mask"            U8  (3,)     k * 100
 *   "step"            I64 ()       12345
 *   "empty"           F32 (0, 4)
 * metadata: "arch" = {"hidden": [64, 32], "act": "relu"}, "format" = "pt",
 *           "note" = "line\nbreak \"quoted\" caf\u00e9"
 */
static int gen(const char *out) {
    pc_error err;
    pc_st_writer *w = pc_st_writer_new();
    if (!w) return 1;
    float wt[12];
    double b[4];
    int64_t v[5], step = 12345;
    int32_t ids[4];
    uint8_t mask[3];
    for (int k = 0; k < 12; k++) wt[k] = (float)k * 0.5f - 2.0f;
    for (int k = 0; k < 4; k++) b[k] = k / 3.0;
    for (int k = 0; k < 5; k++) v[k] = (int64_t)k * 1000000007 - (INT64_C(1) << 40);
    for (int k = 0; k < 4; k++) ids[k] = -k * 7;
    for (int k = 0; k < 3; k++) mask[k] = (uint8_t)(k * 100);
    const int64_t s_w[2] = {3, 4}, s_b[1] = {4}, s_v[1] = {5}, s_ids[2] = {2, 2}, s_m[1] = {3},
                  s_e[2] = {0, 4};
    pc_status st = pc_st_writer_add(w, "layer.0.weight", PC_DTYPE_F32, 2, s_w, wt, &err);
    if (st == PC_OK) st = pc_st_writer_add(w, "layer.0.bias", PC_DTYPE_F64, 1, s_b, b, &err);
    if (st == PC_OK) st = pc_st_writer_add(w, "vocab", PC_DTYPE_I64, 1, s_v, v, &err);
    if (st == PC_OK) st = pc_st_writer_add(w, "ids", PC_DTYPE_I32, 2, s_ids, ids, &err);
    if (st == PC_OK) st = pc_st_writer_add(w, "mask", PC_DTYPE_U8, 1, s_m, mask, &err);
    if (st == PC_OK) st = pc_st_writer_add(w, "step", PC_DTYPE_I64, 0, NULL, &step, &err);
    if (st == PC_OK) st = pc_st_writer_add(w, "empty", PC_DTYPE_F32, 2, s_e, NULL, &err);
    if (st == PC_OK)
        st = pc_st_writer_set_meta(w, "arch", "{\"hidden\": [64, 32], \"act\": \"relu\"}", &err);
    if (st == PC_OK) st = pc_st_writer_set_meta(w, "format", "pt", &err);
    if (st == PC_OK)
        st = pc_st_writer_set_meta(w, "note", "line\nbreak \"quoted\" caf\xC3\xA9", &err);
    if (st == PC_OK) st = pc_st_writer_save(w, out, &err);
    pc_st_writer_free(w);
    return st == PC_OK ? 0 : fail(&err);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "dump") == 0) return dump(argv[2]);
    if (argc == 4 && strcmp(argv[1], "copy") == 0) return copy(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "gen") == 0) return gen(argv[2]);
    return usage();
}
