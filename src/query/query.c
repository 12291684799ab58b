/* perfcast/query.h: the analytic commands as one call each, a JSON request in and the
 * command's --json document out. */
#include "perfcast/query.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "query/q_internal.h"
#include "query/request.h"

static const char *const NAMES[PC_QUERY_COUNT] = {"roofline", "model", "plan_serve", "plan_train", "validate",
                                                          "tune"};

const char *pc_query_name(pc_query q) { return (unsigned)q < PC_QUERY_COUNT ? NAMES[q] : "?"; }

int pc_query_parse(const char *s) {
    for (int i = 0; s && i < PC_QUERY_COUNT; i++)
        if (!strcmp(s, NAMES[i])) return i;
    return -1;
}

pc_status pc_query_json(pc_query q, const char *request, char **result, pc_error *err) {
    return pc_query_json_progress(q, request, NULL, NULL, result, err);
}

static pc_status query_with(pc_query q, const char *request, struct pc_predictor *model,
                            pc_progress_fn fn, void *user, char **result, pc_error *err) {
    cJSON *doc = NULL;
    pc_status st;
    pc_error_clear(err);
    if (!result) return pc_fail(err, PC_ERR_ARG, "pc_query_json: result is NULL");
    *result = NULL;
    switch (q) {
    case PC_QUERY_ROOFLINE: st = pc_q_roofline_progress(request, fn, user, &doc, err); break;
    case PC_QUERY_MODEL: st = pc_q_model(request, &doc, err); break;
    case PC_QUERY_PLAN_SERVE: st = pc_q_plan_serve(request, &doc, err); break;
    case PC_QUERY_PLAN_TRAIN: st = pc_q_plan_train(request, &doc, err); break;
    case PC_QUERY_VALIDATE: st = pc_q_validate(request, &doc, err); break;
    case PC_QUERY_TUNE: st = pc_q_tune_progress(request, model, fn, user, &doc, err); break;
    default: return pc_fail(err, PC_ERR_ARG, "pc_query_json: unknown query %d", (int)q);
    }
    if (st != PC_OK) {
        cJSON_Delete(doc);
        return st;
    }
    return pc_qreq_print(doc, result, err);
}

pc_status pc_query_json_progress(pc_query q, const char *request, pc_progress_fn fn, void *user,
                                 char **result, pc_error *err) {
    return query_with(q, request, NULL, fn, user, result, err);
}

pc_status pc_query_tune_json(const char *request, struct pc_predictor *model, pc_progress_fn fn,
                             void *user, char **result, pc_error *err) {
    return query_with(PC_QUERY_TUNE, request, model, fn, user, result, err);
}

void pc_query_free(char *result) { cJSON_free(result); }
