/*
 * The attributes hlo/cost.c reads, from their kept text (hlo/cost_attr.h).
 * backend_config is JSON (cJSON): printed bare by current XLA
 * (`backend_config={"known_trip_count":{"n":"12"}}`), as a quoted string by
 * older XLA (`backend_config="{\"known_trip_count\":...}"`); both are read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "hlo/cost_attr.h"
#include "tpugraphs/opcode.h"

char *pc_hlo_attr_string(const pc_hlo_instruction *in, const char *name) {
    const char *v = pc_hlo_attr_get(in, name);
    if (!v) return NULL;
    size_t n = strlen(v);
    char *r = malloc(n + 1);
    if (!r) return NULL;
    if (n < 2 || v[0] != '"' || v[n - 1] != '"') {
        memcpy(r, v, n + 1);
        return r;
    }
    size_t j = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = v[i];
        if (c == '\\' && i + 2 < n) {
            c = v[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        r[j++] = c;
    }
    r[j] = '\0';
    return r;
}

pc_hlo_lib_call pc_hlo_lib_call_kind(const pc_hlo_instruction *in) {
    if (in->opcode_id != PC_HLO_CUSTOM_CALL) return PC_HLO_LIB_NONE;
    char *t = pc_hlo_attr_string(in, "custom_call_target");
    pc_hlo_lib_call k = PC_HLO_LIB_NONE;
    if (!t) return k;
    int dnn = !strncmp(t, "__cudnn$conv", 12) || !strncmp(t, "__miopen$conv", 13);
    if (!strcmp(t, "__cublas$gemm") || !strncmp(t, "__cublas$lt$matmul", 18) ||
        !strcmp(t, "__rocblas$gemm") || !strncmp(t, "__hipblas$lt$matmul", 19))
        k = PC_HLO_LIB_GEMM;
    else if (dnn && strstr(t, "BackwardInput"))
        k = PC_HLO_LIB_CONV_BWD_INPUT;
    else if (dnn && strstr(t, "BackwardFilter"))
        k = PC_HLO_LIB_CONV_BWD_FILTER;
    else if (dnn && strstr(t, "Forward"))
        k = PC_HLO_LIB_CONV_FWD;
    free(t);
    return k;
}

static cJSON *backend_config(const pc_hlo_instruction *in) {
    char *s = pc_hlo_attr_string(in, "backend_config");
    if (!s) return NULL;
    cJSON *j = cJSON_Parse(s);
    free(s);
    return j;
}

/* A JSON integer written as a number or (proto JSON's int64) a string. */
static int json_int(const cJSON *x, int64_t *v) {
    if (cJSON_IsNumber(x)) {
        *v = (int64_t)x->valuedouble;
        return 1;
    }
    if (cJSON_IsString(x) && x->valuestring && x->valuestring[0]) {
        char *end;
        long long r = strtoll(x->valuestring, &end, 10);
        if (*end) return 0;
        *v = r;
        return 1;
    }
    return 0;
}

int pc_hlo_gemm_lhs_contracting(const pc_hlo_instruction *in, int64_t *dims, int cap) {
    cJSON *j = backend_config(in);
    if (!j) return -1;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "gemm_backend_config");
    const cJSON *dd = cJSON_GetObjectItemCaseSensitive(g ? g : j, "dot_dimension_numbers");
    const cJSON *lc = cJSON_GetObjectItemCaseSensitive(dd, "lhs_contracting_dimensions");
    int n = -1;
    if (cJSON_IsArray(lc)) {
        n = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, lc) {
            int64_t v;
            if (!json_int(x, &v)) {
                n = -1;
                break;
            }
            if (n < cap) dims[n++] = v;
        }
    }
    cJSON_Delete(j);
    return n;
}

int pc_hlo_known_trip_count(const pc_hlo_instruction *in, double *n) {
    cJSON *j = backend_config(in);
    if (!j) return 0;
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "known_trip_count");
    int64_t v = 0;
    int ok = json_int(cJSON_GetObjectItemCaseSensitive(k, "n"), &v) && v >= 0;
    if (ok) *n = (double)v;
    cJSON_Delete(j);
    return ok;
}

int pc_hlo_literal_int(const pc_hlo_instruction *in, int64_t *v) {
    const char *s = pc_hlo_attr_get(in, "literal");
    if (!s) return 0;
    while (*s == ' ') s++;
    if (!strcmp(s, "true") || !strcmp(s, "false")) {
        *v = s[0] == 't';
        return 1;
    }
    char *end;
    long long r = strtoll(s, &end, 10);
    if (end == s) return 0;
    while (*end == ' ') end++;
    if (*end) return 0;
    *v = r;
    return 1;
}

const char *pc_hlo_compare_direction(const pc_hlo_instruction *in, char buf[8]) {
    const char *d = pc_hlo_attr_get(in, "direction");
    snprintf(buf, 8, "%s", d && strlen(d) < 8 ? d : "");
    return buf;
}

/* ---- replica groups --------------------------------------------------------------- */

static const char *skip_sp(const char *s) {
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') s++;
    return s;
}

/* "[a,b,...]" into v (at most 8); returns the end or NULL. */
static const char *int_list(const char *s, char open, char close, int64_t *v, int *n) {
    s = skip_sp(s);
    if (*s != open) return NULL;
    s++;
    *n = 0;
    for (;;) {
        s = skip_sp(s);
        if (*s == close) return s + 1;
        char *end;
        long long x = strtoll(s, &end, 10);
        if (end == s || *n == 8) return NULL;
        v[(*n)++] = x;
        s = skip_sp(end);
        if (*s == ',') s++;
    }
}

/* [G,S]<=[d0,d1,...]T(p0,p1,...): group g is row g of the transposed iota, reshaped [G,S]. */
static int iota_groups(const char *s, pc_hlo_groups *g) {
    int64_t gs[8], d[8], perm[8];
    int ngs, nd, np = 0;
    s = int_list(s, '[', ']', gs, &ngs);
    if (!s || ngs != 2 || strncmp(skip_sp(s), "<=", 2)) return 0;
    s = int_list(skip_sp(s) + 2, '[', ']', d, &nd);
    if (!s || nd < 1) return 0;
    s = skip_sp(s);
    if (*s == 'T' && !(s = int_list(s + 1, '(', ')', perm, &np))) return 0;
    if (np && np != nd) return 0;
    for (int i = 0; i < nd; i++) {
        if (!np) perm[i] = i;
        if (perm[i] < 0 || perm[i] >= nd || d[i] <= 0) return 0;
    }
    if (gs[0] <= 0 || gs[1] <= 0) return 0;
    g->count = gs[0];
    g->size = gs[1];
    int64_t keep = g->size < PC_HLO_GROUP_MAX ? g->size : PC_HLO_GROUP_MAX;
    g->first = pc_malloc_array((uint64_t)keep + 1, sizeof *g->first);
    if (!g->first) return -1;
    int64_t stride[8], idx[8] = {0};
    stride[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) stride[i] = stride[i + 1] * d[i + 1];
    for (int64_t k = 0; k < keep; k++) { /* idx walks the transposed shape row-major */
        int64_t lin = 0;
        for (int i = 0; i < nd; i++) lin += idx[i] * stride[perm[i]];
        g->first[k] = lin;
        for (int i = nd - 1; i >= 0; i--) {
            if (++idx[i] < d[perm[i]]) break;
            idx[i] = 0;
        }
    }
    g->known = 1;
    return 1;
}

/* {{0,1},{2,3}}: the first group's ids, and the number of groups. Pairs (source_target_pairs)
 * give the sorted distinct ids taking part, as one group. */
static int explicit_groups(const char *s, pc_hlo_groups *g, int pairs) {
    s = skip_sp(s);
    if (*s != '{') return 0;
    size_t cap = 0;
    int64_t n = 0, groups = 0;
    s = skip_sp(s + 1);
    while (*s == '{') {
        s++;
        groups++;
        for (;;) {
            s = skip_sp(s);
            if (*s == '}') break;
            char *end;
            long long x = strtoll(s, &end, 10);
            if (end == s) return 0;
            s = skip_sp(end);
            if (*s == ',') s++;
            if (groups > 1 && !pairs) continue;
            int dup = 0;
            for (int64_t k = 0; pairs && k < n; k++) dup |= g->first[k] == x;
            if (dup || n >= PC_HLO_GROUP_MAX) continue;
            int64_t *v = pc_grow_array(g->first, &cap, (size_t)n + 1, sizeof *v);
            if (!v) return -1;
            g->first = v;
            g->first[n++] = x;
        }
        s = skip_sp(s + 1);
        if (*s == ',') s = skip_sp(s + 1);
    }
    if (*s != '}') return 0;
    g->size = n;
    g->count = pairs || !groups ? 1 : groups;
    g->known = 1;
    return 1;
}

int pc_hlo_replica_groups(const pc_hlo_instruction *in, pc_hlo_groups *g) {
    memset(g, 0, sizeof *g);
    g->count = 1;
    int pairs = in->opcode_id == PC_HLO_COLLECTIVE_PERMUTE ||
                in->opcode_id == PC_HLO_COLLECTIVE_PERMUTE_START;
    const char *s = pc_hlo_attr_get(in, pairs ? "source_target_pairs" : "replica_groups");
    if (!s) {
        g->known = !pairs;
        return 0;
    }
    int rc = *skip_sp(s) == '[' ? iota_groups(s, g) : explicit_groups(s, g, pairs);
    if (rc <= 0) {
        free(g->first);
        memset(g, 0, sizeof *g);
        g->count = 1;
    }
    return rc < 0 ? -1 : 0;
}

/* ---- FFT ---------------------------------------------------------------------------- */

int pc_hlo_fft(const pc_hlo_instruction *in, double *length) {
    static const char *const types[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
    const char *t = pc_hlo_attr_get(in, "fft_type");
    const char *l = pc_hlo_attr_get(in, "fft_length");
    int type = -1;
    for (int i = 0; t && i < 4; i++)
        if (!strcmp(t, types[i])) type = i;
    *length = 1;
    int64_t v[8];
    int n = 0;
    if (l && int_list(l, '{', '}', v, &n))
        for (int i = 0; i < n; i++) *length *= v[i] > 0 ? (double)v[i] : 0;
    return type;
}
