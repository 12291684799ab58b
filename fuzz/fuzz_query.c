/*
 * Fuzz target: the queries' request reader and the roofline query
 * (pc_query_json, perfcast/query.h) on a request given as JSON text (keys that
 * name files are dropped: the target reads no file). Promises: a failure
 * comes with a message and no result; a result is a JSON object with finite,
 * non-negative total time and as many ops as asked for.
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
    if (cJSON_IsObject(req)) {
        static const char *const files[] = {"hlo", "ops", "chips_file", "stage"};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
            cJSON_DeleteItemFromObjectCaseSensitive(req, files[i]);
        q = cJSON_PrintUnformatted(req);
    }
    char *res = (char *)1;
    pc_error err;
    pc_status st = pc_query_json(PC_QUERY_ROOFLINE, q ? q : "", &res, &err);
    if (st != PC_OK) {
        check(err.msg[0] != '\0');
        check(res == NULL);
    } else {
        cJSON *doc = cJSON_Parse(res);
        check(cJSON_IsObject(doc));
        const cJSON *total = cJSON_GetObjectItemCaseSensitive(doc, "total");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(total, "time");
        check(cJSON_IsNumber(t) && isfinite(t->valuedouble) && t->valuedouble >= 0);
        check(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "ops")));
        cJSON_Delete(doc);
    }
    pc_query_free(res);
    if (q != text) cJSON_free(q);
    cJSON_Delete(req);
    free(text);
    return 0;
}
