/* Shared pieces of `perfcast validate` and `perfcast calibrate`: the validate query
 * (perfcast/query.h) run from the command line and its document as text. */
#ifndef PC_CALIB_CLI_H
#define PC_CALIB_CLI_H

#include <cjson/cJSON.h>

#include "cli.h"
#include "perfcast/calib.h"

int pc_ccli_parse_kind(const char *s); /* "train", "serve", "all" -> 1, 2, 3; 0 if unknown */
/* The validate query on req (deleted here): PC_OK and its document in *doc, or the error. */
pc_status pc_ccli_validate(cJSON *req, cJSON **doc, pc_error *err);
/* The request's "runs": the paths given. */
cJSON *pc_ccli_runs_request(int nfiles, char **paths);
/* "perfcast: invalid run: ..." on stderr for each of the document's invalid_runs; their count. */
int pc_ccli_print_problems(const cJSON *doc);
/* The document's runs as a table / its summary under a title. */
void pc_ccli_print_runs(const cJSON *doc);
void pc_ccli_print_summaries(const cJSON *summary, const char *title);

#endif
