/*
 * Calibrations: the coefficient table, the built-in and ideal calibrations,
 * JSON files (docs/analytic.md "Calibration"). pc_run_predict is in
 * run_predict.c, above the training and serving models that read these.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/calib_internal.h"

typedef struct coef_def {
    const char *name, *doc;
    double ideal, prior, lo, hi, sigma;
} coef_def;

static const coef_def defs[PC_COEF_COUNT] = {
#define X(id, nm, id_v, pr, l, h, sg, dc) {nm, dc, id_v, pr, l, h, sg},
#include "analytic/calib_coefs.h"
#undef X
};

/* The built-in calibration: values fitted by `perfcast calibrate` on the
 * shipped measurements (regenerate: scripts/gen_calib_builtin.sh). */
typedef struct builtin_value {
    const char *name;
    double value;
} builtin_value;
static const builtin_value builtin_values[] = {
#include "analytic/calib_builtin.h"
    {NULL, 0}};

int pc_calib_coef_count(void) { return PC_COEF_COUNT; }
const char *pc_calib_coef_name(int i) {
    return i >= 0 && i < PC_COEF_COUNT ? defs[i].name : NULL;
}
const char *pc_calib_coef_doc(int i) { return i >= 0 && i < PC_COEF_COUNT ? defs[i].doc : NULL; }

double pc_calib_c(const pc_calib *cal, int id) {
    if (id < 0 || id >= PC_COEF_COUNT) return NAN;
    if (!cal || cal->ideal) return defs[id].ideal;
    return cal->c[id];
}

double pc_calib_get(const pc_calib *c, int i) { return pc_calib_c(c, i); }

/* Internal: the fit's prior, bounds and width of coefficient i. */
void pc_calib_coef_prior(int i, double *prior, double *lo, double *hi, double *sigma) {
    *prior = defs[i].prior, *lo = defs[i].lo, *hi = defs[i].hi, *sigma = defs[i].sigma;
}

static int coef_index(const char *name) {
    for (int i = 0; i < PC_COEF_COUNT; i++)
        if (!strcmp(defs[i].name, name)) return i;
    return -1;
}

static pc_calib *calib_alloc(const char *origin) {
    pc_calib *c = calloc(1, sizeof *c);
    if (c) snprintf(c->origin, sizeof c->origin, "%s", origin);
    return c;
}

pc_status pc_calib_set(pc_calib *c, int i, double v, pc_error *err) {
    if (!c || i < 0 || i >= PC_COEF_COUNT)
        return pc_fail(err, PC_ERR_ARG, "pc_calib_set: bad calibration or coefficient index");
    if (!isfinite(v) || v < defs[i].lo || v > defs[i].hi)
        return pc_fail(err, PC_ERR_RANGE, "coefficient %s: %g is outside [%g, %g]", defs[i].name,
                       v, defs[i].lo, defs[i].hi);
    c->c[i] = v;
    c->ideal = 0;
    return PC_OK;
}

pc_status pc_calib_ideal(pc_calib **out, pc_error *err) {
    *out = calib_alloc("none");
    if (!*out) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    (*out)->ideal = 1;
    for (int i = 0; i < PC_COEF_COUNT; i++) (*out)->c[i] = defs[i].ideal;
    return PC_OK;
}

/* A calibration at the priors (where a fit starts). */
pc_status pc_calib_prior(pc_calib **out, pc_error *err) {
    *out = calib_alloc("prior");
    if (!*out) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < PC_COEF_COUNT; i++) (*out)->c[i] = defs[i].prior;
    return PC_OK;
}

pc_status pc_calib_builtin(pc_calib **out, pc_error *err) {
    pc_status st = pc_calib_prior(out, err);
    if (st) return st;
    snprintf((*out)->origin, sizeof (*out)->origin, "builtin");
    /* a coefficient the built-in table does not list keeps its prior */
    for (int k = 0; builtin_values[k].name; k++) {
        int i = coef_index(builtin_values[k].name);
        if (i >= 0) (*out)->c[i] = builtin_values[k].value;
    }
    return PC_OK;
}

pc_calib *pc_calib_clone(const pc_calib *c) {
    if (!c) return NULL;
    pc_calib *d = malloc(sizeof *d);
    if (d) *d = *c;
    return d;
}

void pc_calib_free(pc_calib *c) { free(c); }
int pc_calib_is_ideal(const pc_calib *c) { return !c || c->ideal; }
const char *pc_calib_origin(const pc_calib *c) { return c ? c->origin : "none"; }
void pc_calib_set_origin(pc_calib *c, const char *origin) {
    if (c) snprintf(c->origin, sizeof c->origin, "%s", origin ? origin : "");
}

pc_status pc_calib_parse(const char *text, size_t len, const char *origin, pc_calib **out,
                         pc_error *err) {
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(text ? text : "", len);
    if (!root)
        return pc_fail(err, PC_ERR_FORMAT, "%s: not JSON (near byte %ld)", origin,
                       (long)(cJSON_GetErrorPtr() && text ? cJSON_GetErrorPtr() - text : 0));
    pc_status st = PC_OK;
    pc_calib *c = NULL;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "perfcast_calibration");
    const cJSON *co = cJSON_GetObjectItemCaseSensitive(root, "coefficients");
    if (!cJSON_IsObject(root) || !ver) {
        st = pc_fail(err, PC_ERR_FORMAT,
                     "%s: not a perfcast calibration (no \"perfcast_calibration\" version field; "
                     "write one with 'perfcast calibrate')",
                     origin);
    } else if (!cJSON_IsNumber(ver)) {
        st = pc_fail(err, PC_ERR_FORMAT,
                     "%s: perfcast_calibration: expected the version number %d", origin,
                     PC_CALIB_VERSION);
    } else if (ver->valuedouble != PC_CALIB_VERSION) {
        st = pc_fail(err, PC_ERR_UNSUPPORTED,
                     "%s: perfcast_calibration: version %g is a calibration for another version "
                     "of perfcast (this one reads version %d; refit with 'perfcast calibrate')",
                     origin, ver->valuedouble, PC_CALIB_VERSION);
    } else if (!cJSON_IsObject(co)) {
        st = pc_fail(err, PC_ERR_FORMAT, "%s: \"coefficients\": expected an object", origin);
    } else if (!(c = calib_alloc(origin))) {
        st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    unsigned char seen[PC_COEF_COUNT] = {0};
    const cJSON *it;
    const cJSON *walk = st ? NULL : co;
    cJSON_ArrayForEach(it, walk) {
        int i = coef_index(it->string);
        if (i < 0) {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: coefficients.%s: unknown coefficient", origin,
                         it->string);
            break;
        }
        if (!cJSON_IsNumber(it)) {
            st = pc_fail(err, PC_ERR_FORMAT, "%s: coefficients.%s: expected a number", origin,
                         it->string);
            break;
        }
        pc_error e2;
        if (pc_calib_set(c, i, it->valuedouble, &e2)) {
            st = pc_fail(err, PC_ERR_RANGE, "%s: coefficients.%s: %s", origin, it->string,
                         e2.msg);
            break;
        }
        seen[i] = 1;
    }
    for (int i = 0; !st && i < PC_COEF_COUNT; i++)
        if (!seen[i])
            st = pc_fail(err, PC_ERR_FORMAT,
                         "%s: coefficients.%s missing (a calibration lists all %d coefficients)",
                         origin, defs[i].name, PC_COEF_COUNT);
    cJSON_Delete(root);
    if (st) {
        free(c);
        return st;
    }
    *out = c;
    return PC_OK;
}

pc_status pc_calib_load(const char *path, pc_calib **out, pc_error *err) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    pc_status st = pc_read_file(path, 1u << 20, &text, &len, err);
    if (st) return st;
    st = pc_calib_parse(text, len, path, out, err);
    free(text);
    return st;
}

pc_status pc_calib_from_spec(const char *spec, pc_calib **out, pc_error *err) {
    if (!spec || !strcmp(spec, "builtin") || !strcmp(spec, "default"))
        return pc_calib_builtin(out, err);
    if (!strcmp(spec, "none") || !strcmp(spec, "ideal")) return pc_calib_ideal(out, err);
    return pc_calib_load(spec, out, err);
}

pc_status pc_calib_save(const pc_calib *c, const char *path, pc_error *err) {
    if (!c || !path) return pc_fail(err, PC_ERR_ARG, "pc_calib_save: NULL argument");
    char tmp[4096];
    FILE *f = pc_tmp_open(path, tmp, sizeof tmp, err);
    if (!f) return err ? err->code : PC_ERR_IO;
    fprintf(f, "{\n  \"perfcast_calibration\": %d,\n  \"origin\": \"", PC_CALIB_VERSION);
    for (const unsigned char *p = (const unsigned char *)c->origin; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p < 0x20 ? '?' : *p, f);
    }
    fprintf(f, "\",\n  \"coefficients\": {\n");
    for (int i = 0; i < PC_COEF_COUNT; i++)
        fprintf(f, "    \"%s\": %.9g%s\n", defs[i].name, pc_calib_c(c, i),
                i + 1 < PC_COEF_COUNT ? "," : "");
    fprintf(f, "  }\n}\n");
    return pc_tmp_commit(f, tmp, path, err);
}
