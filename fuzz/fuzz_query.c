/*
 * Fuzz target: the queries' request reader and the queries (pc_query_json,
 * perfcast/query.h) on a request given as JSON text: the roofline, or the
 * query a "query" key names ({"query": "model", ...}); keys that name files
 * are dropped (the target reads no file). Promises: a failure comes with a
 * message and no result; a result is a JSON object (the roofline's with a
 * finite, non-negative total time and an ops list; the model's with finite,
 * non-negative parameter counts; plan serve's with a context or more, each with
 * finite, positive weight bytes; plan train's with a plans list, each with a finite,
 * positive step time).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "perfcast/query.h"

PC_FUZZ_TARGET(query) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    cJSON *req = cJSON_Parse(text);
    char *q = text;
    int which = PC_QUERY_ROOFLINE;
    if (cJSON_IsObject(req)) {
        static const char *const files[] = {"hlo", "ops", "chips_file", "stage", "calibration"};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
            cJSON_DeleteItemFromObjectCaseSensitive(req, files[i]);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "query");
        if (cJSON_IsString(name) && pc_query_parse(name->valuestring) >= 0)
            which = pc_query_parse(name->valuestring);
        cJSON_DeleteItemFromObjectCaseSensitive(req, "query");
        const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(req, "config");
        if (cJSON_IsString(cfg) && strpbrk(cfg->valuestring, "/.")) /* a path */
            cJSON_DeleteItemFromObjectCaseSensitive(req, "config");
        q = cJSON_PrintUnformatted(req);
    }
    char *res = (char *)1;
    pc_error err;
    pc_status st = pc_query_json((pc_query)which, q ? q : "", &res, &err);
    if (st != PC_OK) {
        check(err.msg[0] != '\0');
        check(res == NULL);
    } else {
        cJSON *doc = cJSON_Parse(res);
        check(cJSON_IsObject(doc));
        if (which == PC_QUERY_ROOFLINE) {
            const cJSON *total = cJSON_GetObjectItemCaseSensitive(doc, "total");
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(total, "time");
            check(cJSON_IsNumber(t) && isfinite(t->valuedouble) && t->valuedouble >= 0);
            check(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "ops")));
        } else if (which == PC_QUERY_MODEL) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "params");
            for (const cJSON *x = p ? p->child : NULL; x; x = x->next)
                check(cJSON_IsNumber(x) && isfinite(x->valuedouble) && x->valuedouble >= 0);
            check(cJSON_IsObject(p));
        } else if (which == PC_QUERY_PLAN_TRAIN) {
            const cJSON *pl = cJSON_GetObjectItemCaseSensitive(doc, "plans");
            check(cJSON_IsArray(pl));
            for (const cJSON *x = pl ? pl->child : NULL; x; x = x->next) {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(x, "step_time");
                check(cJSON_IsNumber(t) && isfinite(t->valuedouble) && t->valuedouble > 0);
            }
        } else if (which == PC_QUERY_PLAN_SERVE) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(doc, "contexts");
            check(cJSON_GetArraySize(c) >= 1);
            for (const cJSON *x = c ? c->child : NULL; x; x = x->next) {
                const cJSON *w = cJSON_GetObjectItemCaseSensitive(x, "weight_bytes");
                check(cJSON_IsNumber(w) && isfinite(w->valuedouble) && w->valuedouble > 0);
            }
        }
        cJSON_Delete(doc);
    }
    pc_query_free(res);
    if (q != text) cJSON_free(q);
    cJSON_Delete(req);
    free(text);
    return 0;
}
