/* Shared pieces of the analytic commands (chips, roofline, collective, model). */
#ifndef PC_ANALYTIC_CLI_H
#define PC_ANALYTIC_CLI_H

#include <stddef.h>

#include "cli.h"
#include "perfcast/analytic.h"
#include "perfcast/query.h"

/*
 * Opens the chip database (built-ins plus --chips-file when given) and, when
 * name is not NULL, finds the chip. Returns -1 on success, else an exit code
 * after printing what to change.
 */
int pc_acli_open_chip(const char *cmd, const char *chips_file, const char *name, pc_chipdb **db,
                      const pc_chip **chip);

/* "1.23 ms", "45.0 us", "2.10 s", "3.2 days" */
const char *pc_acli_time(double s, char *buf, size_t cap);
/* SI: "197 T", "8.20e11" style "820 G"; unit appended ("FLOP/s", "B/s", "B") */
const char *pc_acli_si(double v, const char *unit, char *buf, size_t cap);
/* Parameter-like counts: "70.55e9", "124.4e6", "4096" */
const char *pc_acli_count(double v, char *buf, size_t cap);

/* --optimizer adam|adamw|momentum|sgd; -1 on success, else the usage exit code
 * after naming the flag. */
int pc_acli_parse_optimizer(const char *cmd, const char *v, pc_optimizer *out);

/* Fields of a query's document (perfcast/query.h) for the text renderings: a number
 * (true is 1; null, which JSON prints for inf/nan, is NAN; absent 0), the same as an
 * integer (0 unless finite), a string ("" unless one). */
struct cJSON;
double pc_acli_jnum(const struct cJSON *o, const char *key);
long long pc_acli_jint(const struct cJSON *o, const char *key);
const char *pc_acli_jstr(const struct cJSON *o, const char *key);

/* Runs query q on req (deleted here) and parses its document into *doc. PC_OK, or
 * the query's error in *err (PC_ERR_NOMEM with "out of memory" when the request
 * could not be printed or the document parsed). */
pc_status pc_acli_query(pc_query q, struct cJSON *req, struct cJSON **doc, pc_error *err);

/* The plan requests' model and hardware keys (config, preset, chip, chips_file, chips,
 * slice) from their flags; NULL / chips <= 0 leave a key out. */
void pc_acli_request_hw(struct cJSON *q, const char *config, const char *preset,
                        const char *chip, const char *chips_file, long long chips,
                        const char *slice);

/*
 * A query's failure as the command reports it, from the query's one validation (the
 * command never re-checks its flags nor re-opens its files to word it): the request
 * keys the message names ('batch_tokens', 'chips': 8) are spelled as the command's
 * flags (--batch-tokens, --chips 8), each key whose dashed name is a long option of
 * opts. A message that starts with one of files ("PATH: ...", the --config,
 * --chips-file, --calibration ... the command passed; NULL entries skipped) is a
 * problem with that file: exit 1. Else a bad request (PC_ERR_ARG; PC_ERR_INVALID when
 * invalid_is_usage; an unknown preset, with "(or give a config.json path)") is a usage
 * error (exit 2); anything else exit 1. hint (or NULL) is appended to a usage error.
 */
struct option;
int pc_acli_query_fail(const char *cmd, const struct option *opts, const char *const *files,
                       size_t nfiles, int invalid_is_usage, const char *hint, const pc_error *e);

#endif
