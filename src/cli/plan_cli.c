/* Shared pieces of `perfcast plan train` and `perfcast plan serve` (plan_cli.h). */
#define _GNU_SOURCE
#include "plan_cli.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "4M" (4e6), "4Mi" (2^22), "15T", "1.5e13", "1024x4096": pc_parse_count, or a product. */
int pc_pcli_parse_count(const char *s, double *out) {
    if (!s || !*s) return -1;
    const char *x = strchr(s, 'x');
    if (x) {
        char a[64];
        size_t n = (size_t)(x - s);
        if (n == 0 || n >= sizeof a) return -1;
        memcpy(a, s, n);
        a[n] = '\0';
        double u, v;
        if (pc_pcli_parse_count(a, &u) || pc_pcli_parse_count(x + 1, &v)) return -1;
        *out = u * v;
        return isfinite(*out) ? 0 : -1;
    }
    return pc_parse_count(s, out, NULL) == PC_OK ? 0 : -1;
}

int pc_pcli_parse_prec(const char *cmd, const char *flag, const char *v, pc_prec *out) {
    int p = pc_prec_parse(v);
    if (p < 0)
        return pc_cli_usage_error(cmd, "%s '%s' unknown (fp32 bf16 fp16 fp8 int8 int4 fp4)", flag,
                                  v);
    *out = (pc_prec)p;
    return -1;
}

int pc_pcli_parse_chips(const char *cmd, const char *v, const char *example, long long *out) {
    double d;
    if (pc_pcli_parse_count(v, &d) || d < 1 || d > 1073741824.0 || d != floor(d))
        return pc_cli_usage_error(cmd, "--chips expects a chip count like %s, got '%s'", example,
                                  v);
    *out = (long long)d;
    return -1;
}

int pc_pcli_parse_efficiency(const char *cmd, const char *v, double *out) {
    char *end;
    *out = strtod(v, &end);
    if (*end || !(*out > 0 && *out <= 1))
        return pc_cli_usage_error(cmd, "--efficiency expects a fraction in (0, 1], got '%s'", v);
    return -1;
}

int pc_pcli_parse_price(const char *cmd, const char *v, double *out) {
    char *end;
    *out = strtod(v, &end);
    if (*end || !(*out >= 0) || *out > 1e6)
        return pc_cli_usage_error(cmd, "--price-per-chip-hour expects USD >= 0, got '%s'", v);
    return -1;
}

int pc_pcli_parse_attention(const char *cmd, const char *v, pc_attn_flops *out) {
    int a = pc_attn_flops_parse(v);
    if (a < 0) return pc_cli_usage_error(cmd, "--attention '%s' unknown (causal, full, none)", v);
    *out = (pc_attn_flops)a;
    return -1;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* --config X: a config.json path or a preset name. Returns -1 or an exit code. */
int pc_pcli_load_model(const char *cmd, const char *model, const char *preset, pc_tfm_cfg *m) {
    pc_error e;
    pc_error_clear(&e);
    if (model && preset) return pc_cli_usage_error(cmd, "give --config or --preset, not both");
    if (!model && !preset)
        return pc_cli_usage_error(cmd, "no model: give --config CONFIG.json or --preset NAME "
                                       "(e.g. --preset llama3-70b)");
    const char *name = preset ? preset : model;
    if (model && (file_exists(model) || strchr(model, '/') || strstr(model, ".json"))) {
        if (pc_tfm_load_hf(model, m, &e) != PC_OK) return pc_cli_fail(&e);
        return -1;
    }
    if (pc_tfm_preset(name, m, &e) != PC_OK)
        return pc_cli_usage_error(cmd, "%s (or give a config.json path)", e.msg);
    return -1;
}

/* Resolves --chips / --slice into a checked mesh. Returns -1 or an exit code. */
int pc_pcli_resolve_slice(const char *cmd, const pc_chip *chip, long long chips,
                          const char *slice_s,
                         pc_mesh *mesh) {
    pc_error e;
    pc_error_clear(&e);
    if (slice_s) {
        if (pc_mesh_parse(slice_s, mesh, &e) != PC_OK)
            return pc_cli_usage_error(cmd, "--slice: %s", e.msg);
        if (pc_mesh_check(chip, mesh, &e) != PC_OK)
            return pc_cli_usage_error(cmd, "--slice %s: %s", slice_s, e.msg);
        long long n = (long long)pc_mesh_devices(mesh);
        if (chips > 0 && chips != n)
            return pc_cli_usage_error(cmd,
                                      "--slice %s has %lld chips but --chips says %lld; give one "
                                      "of them, or make them agree",
                                      slice_s, n, chips);
        return -1;
    }
    if (chips <= 0)
        return pc_cli_usage_error(cmd, "give --chips N or --slice AxBxC (e.g. --chips 8960)");
    pc_slice_note note;
    if (pc_plan_slice_for_chips_note(chip, chips, mesh, &note, &e) != PC_OK)
        return pc_cli_usage_error(cmd, "--chips %lld: %s", chips, e.msg);
    if (note.warn) fprintf(stderr, "perfcast %s: warning: %s\n", cmd, note.text);
    return -1;
}

void pc_pcli_mesh_str(const pc_mesh *m, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->ndims && used + 24 < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld%s", i ? "x" : "",
                                 (long long)m->size[i], (m->dcn_mask >> i) & 1 ? "(DCN)" : "");
}

const char *pc_pcli_commas(double v, char *buf, size_t cap) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.0f", v);
    size_t n = strlen(tmp), o = 0;
    for (size_t i = 0; i < n && o + 2 < cap; i++) {
        buf[o++] = tmp[i];
        size_t left = n - i - 1;
        if (left && left % 3 == 0 && tmp[i] != '-') buf[o++] = ',';
    }
    buf[o] = '\0';
    return buf;
}

const char *pc_pcli_gb(double bytes, char *buf, size_t cap) {
    if (bytes >= 1e12)
        snprintf(buf, cap, "%.3g TB", bytes / 1e12);
    else if (bytes >= 1e8)
        snprintf(buf, cap, "%.3g GB", bytes / 1e9);
    else
        snprintf(buf, cap, "%.3g MB", bytes / 1e6);
    return buf;
}
