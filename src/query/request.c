/* Reading a query's request: typed getters that name the key at fault. */
#include "query/request.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "query/q_internal.h"

static pc_status unknown_key(const char *query, const char *key, const char *const *keys,
                             pc_error *err) {
    size_t len = 0, nkeys = 0;
    char list[1024] = "";
    for (const char *const *k = keys; *k; k++, nkeys++)
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", *k);
    const char *best = pc_closest_name(key, keys, nkeys);
    if (best)
        return pc_fail(err, PC_ERR_ARG, "%s request: unknown key '%s' (did you mean '%s'?)", query,
                       key, best);
    return pc_fail(err, PC_ERR_ARG, "%s request: unknown key '%s'; known: %s", query, key, list);
}

pc_status pc_qreq_parse(const char *text, const char *query, const char *const *keys, cJSON **root,
                        pc_error *err) {
    *root = NULL;
    if (!text || !*text) text = "{}";
    cJSON *o = cJSON_Parse(text);
    if (!o)
        return pc_fail(err, PC_ERR_ARG, "%s request: not JSON (near byte %ld)", query,
                       (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - text : 0));
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return pc_fail(err, PC_ERR_ARG, "%s request: expected a JSON object", query);
    }
    for (const cJSON *it = o->child; it; it = it->next) {
        const char *const *k = keys;
        while (*k && strcmp(*k, it->string)) k++;
        if (!*k) {
            pc_status st = unknown_key(query, it->string, keys, err);
            cJSON_Delete(o);
            return st;
        }
    }
    *root = o;
    return PC_OK;
}

static const cJSON *get(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

pc_status pc_qreq_string(const cJSON *o, const char *key, const char **out, pc_error *err) {
    const cJSON *v = get(o, key);
    if (!v) return PC_OK;
    if (!cJSON_IsString(v)) return pc_fail(err, PC_ERR_ARG, "'%s' expects a string", key);
    *out = v->valuestring;
    return PC_OK;
}

static pc_status number(const cJSON *o, const char *key, int bytes, double *out, pc_error *err) {
    const cJSON *v = get(o, key);
    if (!v) return PC_OK;
    if (cJSON_IsNumber(v)) {
        if (!isfinite(v->valuedouble))
            return pc_fail(err, PC_ERR_ARG, "'%s' expects a finite number", key);
        *out = v->valuedouble;
        return PC_OK;
    }
    if (!cJSON_IsString(v))
        return pc_fail(err, PC_ERR_ARG, "'%s' expects a number or a string like \"4M\"", key);
    pc_error e;
    if ((bytes ? pc_parse_bytes : pc_parse_count)(v->valuestring, out, &e) != PC_OK)
        return pc_fail(err, PC_ERR_ARG, "'%s': %s", key, e.msg);
    return PC_OK;
}

pc_status pc_qreq_count(const cJSON *o, const char *key, int positive, double *out, pc_error *err) {
    double v = *out;
    pc_status st = number(o, key, 0, &v, err);
    if (st != PC_OK) return st;
    if (positive && get(o, key) && !(v > 0))
        return pc_fail(err, PC_ERR_ARG, "'%s' expects a number > 0, got %g", key, v);
    *out = v;
    return PC_OK;
}

pc_status pc_qreq_bytes(const cJSON *o, const char *key, double *out, pc_error *err) {
    return number(o, key, 1, out, err);
}

pc_status pc_qreq_int(const cJSON *o, const char *key, long long lo, long long hi, long long *out,
                      pc_error *err) {
    double v = (double)*out;
    pc_status st = number(o, key, 0, &v, err);
    if (st != PC_OK) return st;
    if (!get(o, key)) return PC_OK;
    if (v != floor(v) || v < (double)lo || v > (double)hi)
        return pc_fail(err, PC_ERR_ARG, "'%s' expects an integer in [%lld, %lld], got %g", key, lo,
                       hi, v);
    *out = (long long)v;
    return PC_OK;
}

pc_status pc_qreq_bool(const cJSON *o, const char *key, int *out, pc_error *err) {
    const cJSON *v = get(o, key);
    if (!v) return PC_OK;
    if (cJSON_IsBool(v))
        *out = cJSON_IsTrue(v);
    else if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1))
        *out = v->valuedouble != 0;
    else
        return pc_fail(err, PC_ERR_ARG, "'%s' expects true or false", key);
    return PC_OK;
}

pc_status pc_qreq_list(const cJSON *o, const char *key, const cJSON **out, int *n, pc_error *err) {
    const cJSON *v = get(o, key);
    (void)err;
    *out = v;
    *n = !v ? 0 : cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
    return PC_OK;
}

const cJSON *pc_qreq_item(const cJSON *list, int n, int i) {
    if (i < 0 || i >= n) return NULL;
    return cJSON_IsArray(list) ? cJSON_GetArrayItem(list, i) : list;
}

pc_status pc_qreq_print(cJSON *doc, char **out, pc_error *err) {
    *out = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (!*out) return pc_fail(err, PC_ERR_NOMEM, "out of memory writing the result");
    return PC_OK;
}

void pc_q_fail_warning(pc_error *err, const char *warning) {
    if (!err || !warning || !warning[0]) return;
    size_t l = strlen(err->msg), n = strlen(warning);
    if (l + n + 11 < sizeof err->msg)
        snprintf(err->msg + l, sizeof err->msg - l, "\nwarning: %s", warning);
}

pc_status pc_q_open_chip(const char *chips_file, const char *name, pc_chipdb **db,
                         const pc_chip **chip, pc_error *err) {
    *db = NULL;
    *chip = NULL;
    pc_status st = pc_chipdb_new(db, err);
    if (st == PC_OK && chips_file) st = pc_chipdb_load_file(*db, chips_file, err);
    if (st == PC_OK && name && !(*chip = pc_chipdb_find(*db, name))) {
        char names[1024];
        pc_chipdb_names(*db, names, sizeof names);
        st = pc_fail(err, PC_ERR_ARG,
                     "unknown chip '%s'; use one of: %s (or define it in a chips_file)", name,
                     names);
    }
    if (st != PC_OK) {
        pc_chipdb_free(*db);
        *db = NULL;
    }
    return st;
}

/* A config.json path (it exists, or has a '/' or ".json"), a preset name, or a config object. */
static int q_is_path(const char *s) {
    struct stat sb;
    return stat(s, &sb) == 0 || strchr(s, '/') || strstr(s, ".json");
}

pc_status pc_q_load_config(const cJSON *config, const char *preset, pc_tfm_cfg *m,
                           pc_error *err) {
    memset(m, 0, sizeof *m);
    if (cJSON_IsNull(config)) config = NULL;
    if (config && preset) return pc_fail(err, PC_ERR_ARG, "give 'config' or 'preset', not both");
    if (!config && !preset)
        return pc_fail(err, PC_ERR_ARG,
                       "no model: give 'config' (a config.json path, a preset name or a config "
                       "object) or 'preset'");
    if (cJSON_IsObject(config)) {
        char *text = cJSON_PrintUnformatted(config);
        if (!text) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        pc_status st = pc_tfm_from_hf_json(text, strlen(text), "config", m, err);
        cJSON_free(text);
        return st;
    }
    if (config && !cJSON_IsString(config))
        return pc_fail(err, PC_ERR_ARG,
                       "'config' expects a config.json path, a preset name or a config object");
    const char *c = config ? config->valuestring : NULL;
    if (c && q_is_path(c)) return pc_tfm_load_hf(c, m, err);
    return pc_tfm_preset(c ? c : preset, m, err);
}
