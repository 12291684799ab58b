/* Shared pieces of the perfcast command-line tool (public API only). */
#ifndef PC_CLI_H
#define PC_CLI_H

#include <stdio.h>

#include "perfcast/dataset.h"
#include "perfcast/dist.h"
#include "perfcast/npz.h"
#include "perfcast/perfcast.h"
#include "perfcast/synth.h"

/* Exit codes: 0 ok, 1 failure or problems found, 2 usage error. */
enum { PC_EXIT_OK = 0, PC_EXIT_FAIL = 1, PC_EXIT_USAGE = 2 };

typedef struct pc_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} pc_command;

int pc_cmd_info(int argc, char **argv);
int pc_cmd_stats(int argc, char **argv);
int pc_cmd_check(int argc, char **argv);
int pc_cmd_synth(int argc, char **argv);
int pc_cmd_cache(int argc, char **argv);
int pc_cmd_train(int argc, char **argv);
int pc_cmd_eval(int argc, char **argv);
int pc_cmd_predict(int argc, char **argv);
int pc_cmd_rank(int argc, char **argv);
int pc_cmd_tune(int argc, char **argv);
int pc_cmd_simulate(int argc, char **argv);
int pc_cmd_import(int argc, char **argv);
int pc_cmd_chips(int argc, char **argv);
int pc_cmd_roofline(int argc, char **argv);
int pc_cmd_collective(int argc, char **argv);
int pc_cmd_model(int argc, char **argv);
int pc_cmd_plan(int argc, char **argv);
int pc_cmd_validate(int argc, char **argv);
int pc_cmd_calibrate(int argc, char **argv);
int pc_cmd_plot(int argc, char **argv);

/*
 * getopt_long that also remembers the command's long options, so that
 * pc_cli_usage_error("unknown option '--colection'") can add "did you mean
 * '--collection'?". Every command parses its flags through it.
 */
struct option;
int pc_cli_getopt(int argc, char *const argv[], const char *shortopts, const struct option *opts,
                  int *longindex);

/* Prints "perfcast <cmd>: error: <msg>" (and a "did you mean" for an unknown flag) to
 * stderr and returns PC_EXIT_USAGE. */
int pc_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* "perfcast <cmd>: note: <old> is deprecated, use <new> (<old> goes in the next
 * release)" on stderr: an old spelling still accepted for one release. */
void pc_cli_deprecated(const char *cmd, const char *old, const char *new_);
/* perfcast info of a checkpoint (src/cli/info_model.c): 1 when path is a safetensors
 * file with perfcast's metadata; its description as text, or into `one` with json. */
int pc_cli_is_model(const char *path);
struct cJSON;
int pc_cli_info_model(const char *path, int json, struct cJSON *one);
/* Prints "perfcast <cmd>: error: <message>" and returns PC_EXIT_FAIL. */
int pc_cli_fail(const pc_error *err);
/*
 * 1 when --json is on the command line: the standard error then ends as one
 * JSON object ({"error": {"message", "file", "field", "exit"}} on failure,
 * {"warnings": [...]} otherwise, main.c), so a command prints no text meant
 * for a reader beside its JSON.
 */
int pc_cli_json_mode(void);
/* The command printed its JSON result (pc_cli_json_print calls it). */
void pc_cli_json_printed(void);
/* Under --json: the standard error's JSON object now, as for a failure (exit
 * 1), for a command about to end the MPI job (MPI_Abort runs no atexit). */
void pc_cli_json_end_now(void);
/*
 * Under --json, the error kept by pc_cli_fail / pc_cli_usage_error so far as
 * {"message", "file", "field"}, taken: it then goes in the command's result
 * (info: the entry of the file that failed) rather than on stderr. NULL when
 * there is none.
 */
struct cJSON *pc_cli_json_error_take(void);

/* cli_json.c: prints o unformatted on one line of stdout and deletes it
 * (PC_EXIT_OK, or PC_EXIT_FAIL when it could not be printed). */
struct cJSON;
int pc_cli_json_print(struct cJSON *o);
/* [{"collection", "train", "valid", "test"}] file counts of the dataset at
 * root, collections without files left out ([] when it cannot be opened). */
struct cJSON *pc_cli_json_dataset(const char *root);

/*
 * Rewrites, in place, the phrases by which library messages name API fields
 * into the flags that set them ("in the mesh's dcn_mask" -> "with
 * --dcn-axes"); pc_cli_fail and pc_cli_usage_error do it. Use it on library
 * text the command prints otherwise (plan notes, per-op errors).
 */
#define PC_CLI_MSG_MAX 4096
void pc_cli_flags(char *msg, size_t cap);

/*
 * The ranks for train, eval and predict: initializes MPI first when built
 * with it and started by an MPI launcher (the library leaves MPI to its
 * caller), then pc_dist_open. Under mpirun with several ranks and a build
 * without MPI: PC_ERR_UNSUPPORTED. pc_cli_dist_close closes the group and
 * finalizes MPI if this command initialized it (after a barrier under the
 * timeout). timeout: --mpi-timeout, the seconds a collective may wait for
 * the other ranks before the job ends with a message (0: no limit); < 0 (the
 * flag not given): PERFCAST_MPI_TIMEOUT if set (a bad value: PC_ERR_ARG),
 * else PC_CLI_MPI_TIMEOUT.
 */
#define PC_CLI_MPI_TIMEOUT 300.0
#define PC_CLI_MPI_TIMEOUT_HELP                                                                \
    "  --mpi-timeout S     under mpirun: end the job when a rank waits more than S\n"            \
    "                      seconds for the others (a stalled rank; default\n"                  \
    "                      $PERFCAST_MPI_TIMEOUT, else 300; 0: never)\n"
/* Parses --mpi-timeout's value: -1 when fine, else the usage exit code. */
int pc_cli_mpi_timeout(const char *cmd, const char *arg, double *out);
pc_status pc_cli_dist_open(int *argc, char ***argv, double timeout, pc_dist **out,
                           pc_error *err);
/*
 * eval and predict under MPI, before anything else over the ranks: every
 * rank must have the same opts ("key=value|..."), the same model files (size
 * and content hash) and the same files of the split (names and sizes); a
 * difference fails on every rank naming it (pc_dist_agree).
 */
pc_status pc_cli_dist_agree(const pc_dist *d, const char *cmd, const char *opts,
                            const char *const *models, int nmodels, const pc_dataset *ds,
                            int split, pc_error *err);
void pc_cli_dist_close(pc_dist *d);
/* Prints "perfcast (rank R of N): msg", ends every rank (pc_dist_abort) and exits 1. */
void pc_cli_dist_abort(const pc_dist *d, const char *msg);

/*
 * --max-memory SIZE, one meaning in every command: the most memory the
 * command may use for what it reads or trains (train: its estimated peak;
 * check, info, eval, ...: the readers' budget, perfcast/npz.h). A plain
 * number is GiB (train's original spelling, "--max-memory 8"); a size with a
 * unit is read in the units vocabulary ("512MiB", "2GB"). 0 on success with
 * *bytes set, else the usage error's exit code (printed).
 */
int pc_cli_max_memory(const char *cmd, const char *v, uint64_t *bytes);

/* Strict integer parsing of a flag value; 0 on success. */
int pc_cli_parse_i64(const char *s, long long lo, long long hi, long long *out);

/*
 * --tta M (1..PC_CLI_TTA_MAX orderings, into *tta) or --tta-seed S (into
 * *seed) of rank, predict and eval, as `flag` names; 0 on success, else the
 * usage error's exit code (printed).
 */
#define PC_CLI_TTA_MAX 1000
int pc_cli_tta_opt(const char *cmd, const char *flag, const char *v, int *tta, uint64_t *seed);

/*
 * Parses the options shared by info and stats (--json, --threads N, --help).
 * Returns -1 to go on (optind at the first operand), else an exit code.
 */
int pc_cli_json_threads_opts(const char *cmd, int argc, char **argv, int *json,
                             long long *threads, void (*help)(FILE *));

/*
 * The checkpoint of seed `seed` in `perfcast train --seeds N --out OUT` (and
 * `eval --seeds N --model OUT`): ".seed<seed>" before OUT's extension
 * (model.safetensors -> model.seed3.safetensors; model -> model.seed3).
 * 0 on success, -1 when it does not fit in cap bytes.
 */
int pc_cli_seed_path(const char *out, unsigned long long seed, char *buf, size_t cap);

/* "12.3k", "4.5M" style counts for tables. */
const char *pc_cli_human(double v, char *buf, size_t cap);

/* --stage after|before with an XLA dump directory: the pattern of its modules
 * ("DIR/" "*before_optimizations.txt") in buf, *out = buf; without --stage *out =
 * path. Returns -1 when fine, else the exit code (a usage error). hlo_stage.c. */
int pc_cli_hlo_stage_path(const char *cmd, const char *path, const char *stage, char *buf, size_t cap,
                          const char **out);
/*
 * Output paths, checked before any work (cli_out.c). Each returns -1 when the
 * path will do, else an exit code after printing "perfcast CMD: error: FLAG
 * PATH: why". A file: its folder exists and is writable, the path is not a
 * folder. A folder (created with its parents): an existing one is a writable
 * folder (and empty, with refuse_nonempty), else its nearest existing
 * ancestor is a writable folder.
 */
int pc_cli_check_out_file(const char *cmd, const char *flag, const char *path);
int pc_cli_check_out_dir(const char *cmd, const char *flag, const char *path, int refuse_nonempty);
/* 1 when a and b name the same file (the same inode, or the same resolved path). */
int pc_cli_same_file(const char *a, const char *b);
/* A usage error when out is one of inputs[0..n) (NULL entries skipped); else -1. */
int pc_cli_check_not_input(const char *cmd, const char *flag, const char *out,
                           const char *const *inputs, int n);

/*
 * The progress line of long commands (progress.c): one self-overwriting line
 * on stderr, "perfcast CMD: 120/400 graphs scored, 3.1/s, ETA 1m30s", drawn
 * at most 4 times a second and ended with a newline ("... in 2m10s") when
 * its stage changes or the command ends. pc_cli_progress_wanted(): stderr is
 * a terminal and --json is off (scripts and tests never see it).
 * pc_cli_progress_new returns NULL when !enabled; every function accepts
 * NULL. pc_cli_progress_cb is the library's pc_progress_fn (user: the
 * progress). _clear wipes the line (before printing other text); _end
 * finishes it and frees.
 */
typedef struct pc_cli_progress pc_cli_progress;
int pc_cli_progress_wanted(void);
pc_cli_progress *pc_cli_progress_new(const char *cmd, int enabled);
void pc_cli_progress_update(pc_cli_progress *p, const char *what, int64_t done, int64_t total);
void pc_cli_progress_cb(void *user, const char *what, int64_t done, int64_t total);
void pc_cli_progress_clear(pc_cli_progress *p);
void pc_cli_progress_end(pc_cli_progress *p);
/* Wipes whatever progress line is showing (pc_cli_fail calls it before its message). */
void pc_cli_progress_break(void);
/* "4.2s", "1m30s", "2h05m" ("?" when not finite or negative). */
void pc_cli_duration(double s, char *buf, size_t n);

#endif
