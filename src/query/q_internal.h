/* The queries of perfcast/query.h, one file each; query.c dispatches. */
#ifndef PC_QUERY_INTERNAL_H
#define PC_QUERY_INTERNAL_H

#include <cjson/cJSON.h>

#include "perfcast/analytic.h"

/* Each runs its query on the request text and sets *out to the document. */
/* roofline with progress: "bytes read", "bytes parsed" of a large HLO file (fn may be NULL) */
pc_status pc_q_roofline_progress(const char *request, pc_progress_fn fn, void *user, cJSON **out,
                                 pc_error *err);
pc_status pc_q_model(const char *request, cJSON **out, pc_error *err);
pc_status pc_q_plan_serve(const char *request, cJSON **out, pc_error *err);
pc_status pc_q_plan_train(const char *request, cJSON **out, pc_error *err);
pc_status pc_q_validate(const char *request, cJSON **out, pc_error *err);
/* tune with progress: "candidates scored" after each scorer call (fn may be NULL); model
 * NULL: loaded from the request's "model" (perfcast/query.h, pc_query_tune_json) */
struct pc_predictor;
pc_status pc_q_tune_progress(const char *request, struct pc_predictor *model, pc_progress_fn fn,
                             void *user, cJSON **out, pc_error *err);

/* request.c: the chip database (built-ins plus chips_file when not NULL) and the chip
 * called name in it; messages name the request keys 'chip' and 'chips_file'. */
pc_status pc_q_open_chip(const char *chips_file, const char *name, pc_chipdb **db,
                         const pc_chip **chip, pc_error *err);

/* request.c: the transformer of 'config' (a config.json path, a preset name or a config
 * object) or 'preset'. */
pc_status pc_q_load_config(const cJSON *config, const char *preset, pc_tfm_cfg *m,
                           pc_error *err);

/* request.c: a query that fails after finding something to warn about (a chip count that is
 * no standard slice) keeps it: "\nwarning: TEXT" appended to err's message (when it fits),
 * for the caller to show beside the error. warning "" or NULL: nothing. */
void pc_q_fail_warning(pc_error *err, const char *warning);

#endif
