/* Shared pieces of the analytic commands (public API only). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analytic_cli.h"

int pc_acli_open_chip(const char *cmd, const char *chips_file, const char *name, pc_chipdb **db,
                      const pc_chip **chip) {
    pc_error e;
    pc_error_clear(&e);
    *db = NULL;
    if (chip) *chip = NULL;
    if (pc_chipdb_new(db, &e) != PC_OK) return pc_cli_fail(&e);
    if (chips_file && pc_chipdb_load_file(*db, chips_file, &e) != PC_OK) {
        pc_chipdb_free(*db);
        *db = NULL;
        return pc_cli_fail(&e);
    }
    if (!name) return -1;
    const pc_chip *c = pc_chipdb_find(*db, name);
    if (!c) {
        char names[1024];
        pc_chipdb_names(*db, names, sizeof names);
        pc_chipdb_free(*db);
        *db = NULL;
        return pc_cli_usage_error(cmd,
                                  "unknown chip '%s'; use one of: %s (or define it in a "
                                  "--chips-file)",
                                  name, names);
    }
    *chip = c;
    return -1;
}

const char *pc_acli_time(double s, char *buf, size_t cap) {
    if (!isfinite(s))
        snprintf(buf, cap, "n/a"); /* never print inf / nan */
    else if (s == 0)
        snprintf(buf, cap, "0");
    else if (s < 1e-6)
        snprintf(buf, cap, "%.3g ns", s * 1e9);
    else if (s < 1e-3)
        snprintf(buf, cap, "%.3g us", s * 1e6);
    else if (s < 1)
        snprintf(buf, cap, "%.3g ms", s * 1e3);
    else if (s < 3600)
        snprintf(buf, cap, "%.3g s", s);
    else if (s < 86400 * 2)
        snprintf(buf, cap, "%.3g h", s / 3600);
    else
        snprintf(buf, cap, "%.3g days", s / 86400);
    return buf;
}

const char *pc_acli_si(double v, const char *unit, char *buf, size_t cap) {
    static const char *const pre[] = {"", "k", "M", "G", "T", "P", "E"};
    int i = 0;
    double a = fabs(v);
    if (!isfinite(v)) {
        snprintf(buf, cap, "n/a %s", unit);
        return buf;
    }
    while (a >= 1000 && i < 6) a /= 1000, v /= 1000, i++;
    snprintf(buf, cap, "%.3g %s%s", v, pre[i], unit);
    return buf;
}

const char *pc_acli_count(double v, char *buf, size_t cap) {
    if (!isfinite(v))
        snprintf(buf, cap, "n/a");
    else if (fabs(v) >= 1e12)
        snprintf(buf, cap, "%.2fe12", v / 1e12);
    else if (fabs(v) >= 1e9)
        snprintf(buf, cap, "%.2fe9", v / 1e9);
    else if (fabs(v) >= 1e6)
        snprintf(buf, cap, "%.2fe6", v / 1e6);
    else
        snprintf(buf, cap, "%.0f", v);
    return buf;
}

int pc_acli_parse_optimizer(const char *cmd, const char *v, pc_optimizer *out) {
    if (!strcmp(v, "adam") || !strcmp(v, "adamw"))
        *out = PC_OPT_ADAM;
    else if (!strcmp(v, "momentum"))
        *out = PC_OPT_SGD_MOMENTUM;
    else if (!strcmp(v, "sgd"))
        *out = PC_OPT_SGD;
    else
        return pc_cli_usage_error(cmd, "--optimizer '%s' unknown (adam, momentum, sgd)", v);
    return -1;
}

double pc_acli_jnum(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsTrue(v) ? 1 : cJSON_IsNull(v) ? NAN : 0;
}

long long pc_acli_jint(const cJSON *o, const char *key) {
    double v = pc_acli_jnum(o, key);
    return isfinite(v) && fabs(v) < 9e18 ? (long long)v : 0;
}

const char *pc_acli_jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static pc_status nomem(pc_error *err) {
    err->code = PC_ERR_NOMEM;
    snprintf(err->msg, sizeof err->msg, "out of memory");
    return PC_ERR_NOMEM;
}

pc_status pc_acli_query(pc_query q, cJSON *req, cJSON **doc, pc_error *err) {
    *doc = NULL;
    char *text = req ? cJSON_PrintUnformatted(req) : NULL, *res = NULL;
    cJSON_Delete(req);
    if (!text) return nomem(err);
    /* a query that reports progress (roofline reading a large HLO file) gets a line */
    pc_cli_progress *pr = pc_cli_progress_new(pc_query_name(q), pc_cli_progress_wanted());
    pc_status st = pc_query_json_progress(q, text, pr ? pc_cli_progress_cb : NULL, pr, &res, err);
    pc_cli_progress_end(pr);
    cJSON_free(text);
    if (st != PC_OK) return st;
    *doc = cJSON_Parse(res);
    pc_query_free(res);
    return *doc ? PC_OK : nomem(err);
}

/* The long option of opts spelled like key with '-' for '_', or NULL. */
static const char *key_flag(const struct option *opts, const char *key, size_t n) {
    char dashed[64];
    if (!opts || n == 0 || n >= sizeof dashed) return NULL;
    for (size_t i = 0; i < n; i++) dashed[i] = key[i] == '_' ? '-' : key[i];
    dashed[n] = 0;
    for (const struct option *o = opts; o->name; o++)
        if (!strcmp(o->name, dashed)) return o->name;
    return NULL;
}

/* msg with each 'key' that is a flag of opts as --flag ("'chips': 8" as "--chips 8"), and
 * the library's "chips_file" phrase as the flag. */
static void keys_as_flags(const struct option *opts, const char *msg, char *out, size_t cap) {
    size_t w = 0;
    for (const char *p = msg; *p && w + 1 < cap;) {
        if (!strncmp(p, "a chips_file", 12) && key_flag(opts, "chips_file", 10)) {
            w += (size_t)snprintf(out + w, cap - w, "a --chips-file");
            p += 12;
        } else {
            size_t n = *p == '\'' ? strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_0123456789") : 0;
            const char *flag = n && p[n + 1] == '\'' ? key_flag(opts, p + 1, n) : NULL;
            if (!flag) {
                out[w++] = *p++;
                continue;
            }
            w += (size_t)snprintf(out + w, cap - w, "--%s", flag);
            p += n + 2;
            if (p[0] == ':' && p[1] == ' ') p++; /* "'chips': 8" as "--chips 8" */
        }
        if (w >= cap) w = cap - 1;
    }
    out[w] = 0;
}

/* The warnings a failed query kept ("\nwarning: ..." lines after its error, perfcast/query.h),
 * printed as the command's warnings (under --json: the error object's "details"); the
 * message without them in *out. */
static void print_kept_warnings(const char *cmd, const struct option *opts, const pc_error *e,
                                pc_error *out) {
    static const char tag[] = "\nwarning: ";
    *out = *e;
    char *w = strstr(out->msg, tag);
    if (!w) return;
    *w = 0;
    for (char *p = w + sizeof tag - 1; p;) {
        char *next = strstr(p, tag), line[PC_ERROR_MSG_MAX];
        if (next) *next = 0;
        keys_as_flags(opts, p, line, sizeof line);
        pc_cli_flags(line, sizeof line);
        fprintf(stderr, "perfcast %s: warning: %s\n", cmd, line);
        p = next ? next + sizeof tag - 1 : NULL;
    }
}

int pc_acli_query_fail(const char *cmd, const struct option *opts, const char *const *files,
                       size_t nfiles, int invalid_is_usage, const char *hint, const pc_error *e) {
    pc_error f, bare;
    print_kept_warnings(cmd, opts, e, &bare);
    f = bare;
    keys_as_flags(opts, bare.msg, f.msg, sizeof f.msg);
    for (size_t i = 0; i < nfiles; i++) {
        size_t l = files[i] ? strlen(files[i]) : 0;
        if (l && !strncmp(f.msg, files[i], l) && f.msg[l] == ':') return pc_cli_fail(&f);
    }
    if (f.code == PC_ERR_NOTFOUND && !strncmp(f.msg, "unknown preset", 14))
        return pc_cli_usage_error(cmd, "%s (or give a config.json path)", f.msg);
    if (f.code == PC_ERR_ARG || (invalid_is_usage && f.code == PC_ERR_INVALID))
        return pc_cli_usage_error(cmd, "%s%s", f.msg, hint ? hint : "");
    return pc_cli_fail(&f);
}

void pc_acli_request_hw(cJSON *q, const char *config, const char *preset, const char *chip,
                        const char *chips_file, long long chips, const char *slice) {
    if (config) cJSON_AddStringToObject(q, "config", config);
    if (preset) cJSON_AddStringToObject(q, "preset", preset);
    if (chip) cJSON_AddStringToObject(q, "chip", chip);
    if (chips_file) cJSON_AddStringToObject(q, "chips_file", chips_file);
    if (chips > 0) cJSON_AddNumberToObject(q, "chips", (double)chips);
    if (slice) cJSON_AddStringToObject(q, "slice", slice);
}
