/*
 * Queries: the analytic commands (`perfcast roofline`, `model`, `plan train`,
 * `plan serve`) as one call each, a request in and a JSON document out. The
 * document is the one the command prints with --json (docs/json.md): the
 * command and the Python package (python/perfcast) both get it from here,
 * so the two cannot drift apart.
 *
 * The request is a JSON object whose keys are the command's flags with '_'
 * for '-' ({"chip": "v5e", "hlo_text": "...", "weight_dtype": "int8",
 * "top": 5}); docs/json.md lists each query's keys. Sizes and counts are
 * numbers or strings in the units vocabulary ("4M", "8Ki", "1GiB";
 * perfcast.h). A key the query does not know, a value of the wrong type or
 * out of range fails with PC_ERR_ARG naming the key. A plan query that fails
 * after finding something its document would warn about (a chip count that is
 * no standard slice) keeps it in the message: a line "\nwarning: ..." after
 * the error. Unlike the analytic
 * structs (perfcast/analytic.h), this interface is stable across versions:
 * keys are added, never changed, so it needs no PC_STATIC_LINKING_ONLY.
 */
#ifndef PERFCAST_QUERY_H
#define PERFCAST_QUERY_H

#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pc_query {
    PC_QUERY_ROOFLINE = 0, /* perfcast roofline: ops, an op file or HLO on one chip */
    PC_QUERY_MODEL,        /* perfcast model: a transformer's parameters, FLOPs, memory */
    PC_QUERY_PLAN_SERVE,   /* perfcast plan serve: serving tables and the calibrated model */
    PC_QUERY_PLAN_TRAIN,   /* perfcast plan train: the search over parallelism plans */
    PC_QUERY_VALIDATE,     /* perfcast validate: measured runs against their predictions */
    PC_QUERY_TUNE,         /* perfcast tune: a graph's config space searched with a model */
    PC_QUERY_COUNT
} pc_query;
/* "roofline", "model", "plan_serve", "plan_train", "validate", "tune"; pc_query_parse: -1 when unknown */
PC_API const char *pc_query_name(pc_query q);
PC_API int pc_query_parse(const char *s);

/*
 * Runs query q on `request` (NUL-terminated JSON text; NULL or "" is {}) and
 * sets *result to the result document (compact JSON, NUL-terminated),
 * released with pc_query_free. On failure *result is NULL and err names the
 * request key, file or field at fault.
 */
PC_API pc_status pc_query_json(pc_query q, const char *request, char **result, pc_error *err);
PC_API void pc_query_free(char *result); /* NULL ok */
/*
 * pc_query_json with progress (perfcast/perfcast.h, pc_progress_fn): tune calls
 * fn with "candidates scored" after each batch the scorer rates (total: its
 * max_scored, 0 when none), followed once a score is known by "; best so far:
 * predicted gain G" (layout: the compiler default's score minus the score of
 * the best proposal the search holds, pc_tune_opts.best) or "; best so far:
 * score S" (tile: that proposal's score), both "%.6g": at the end, the
 * result's gain and scores[0]; that `what` is valid during the call only. tune and roofline
 * reading an HLO file of 4 MiB or more call it with "bytes read" then "bytes
 * parsed" (done of total bytes, about every MiB). The other queries are quick
 * and never call it.
 * fn NULL: pc_query_json.
 */
PC_API pc_status pc_query_json_progress(pc_query q, const char *request, pc_progress_fn fn,
                                        void *user, char **result, pc_error *err);

struct pc_predictor; /* perfcast/predict.h */
/*
 * The tune query (PC_QUERY_TUNE, as pc_query_json_progress) with its model
 * already loaded (pc_predictor_load_max), so that many graphs are tuned with
 * one load (`perfcast tune --data`): `model` scores the candidates instead of
 * a checkpoint read from the request's "model" key, which is then optional
 * (when given, only checked as the other keys are). The request's "threads"
 * and "max_memory" still apply to loading the graph; the model scores on the
 * threads it was loaded with. The documents equal pc_query_json_progress's
 * with "model" loaded by pc_predictor_load_max(model, threads, max_memory).
 * model NULL: exactly pc_query_json_progress(PC_QUERY_TUNE, ...). The call
 * does not free `model`; it must not be used by another thread meanwhile.
 */
PC_API pc_status pc_query_tune_json(const char *request, struct pc_predictor *model,
                                    pc_progress_fn fn, void *user, char **result, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_QUERY_H */
