/* Reading a query's request (perfcast/query.h): a JSON object of known keys. */
#ifndef PC_QUERY_REQUEST_H
#define PC_QUERY_REQUEST_H

#include <cjson/cJSON.h>

#include "perfcast/perfcast.h"

/*
 * Parses `text` (NULL or "" is {}) into *root and checks that it is an object
 * whose keys are all in `keys` (NULL-terminated), naming the unknown one and
 * the closest known key. The getters below leave *out as it is when the key
 * is absent or null, and fail with PC_ERR_ARG naming the key otherwise.
 */
pc_status pc_qreq_parse(const char *text, const char *query, const char *const *keys, cJSON **root,
                        pc_error *err);
pc_status pc_qreq_string(const cJSON *o, const char *key, const char **out, pc_error *err);
/* a number, or a string in the units vocabulary ("4M", "8Ki"); > 0 when positive */
pc_status pc_qreq_count(const cJSON *o, const char *key, int positive, double *out, pc_error *err);
/* a number, or a size string ("1GiB", "4.5e10") */
pc_status pc_qreq_bytes(const cJSON *o, const char *key, double *out, pc_error *err);
/* an integer in [lo, hi] */
pc_status pc_qreq_int(const cJSON *o, const char *key, long long lo, long long hi, long long *out,
                      pc_error *err);
/* true/false (or 0/1) */
pc_status pc_qreq_bool(const cJSON *o, const char *key, int *out, pc_error *err);
/* a list (a single value counts as a list of one): *out is the array or the
 * value itself, *n its length (0 when absent) */
pc_status pc_qreq_list(const cJSON *o, const char *key, const cJSON **out, int *n, pc_error *err);
/* item i of what pc_qreq_list gave */
const cJSON *pc_qreq_item(const cJSON *list, int n, int i);

/* The document as compact JSON in *out (malloc'd), deleting it. */
pc_status pc_qreq_print(cJSON *doc, char **out, pc_error *err);

#endif
