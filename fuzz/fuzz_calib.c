/*
 * Fuzz target: calibration files (pc_calib_parse), the input being a
 * calibration JSON. Promises checked:
 *  - a refused file fails with PC_ERR_FORMAT, UNSUPPORTED, RANGE (or NOMEM),
 *    a message naming the file, and no handle;
 *  - an accepted file: not the ideal calibration, its origin is the file, and
 *    every coefficient is finite and inside its bounds (pc_calib_set takes it
 *    back unchanged);
 *  - saved (temporary file and rename, under $PC_FUZZ_TMP, else /dev/shm,
 *    else /tmp) and loaded again, it gives the same coefficients (to the
 *    printed precision), and saving that copy gives the same bytes;
 *  - predictions of a fixed training run and serving run under it either are
 *    not expressed (with a reason) or are finite and positive; a training
 *    prediction's parts are finite, non-negative and add up to it, and the
 *    ideal roofline is a lower bound on it unless the calibration puts the
 *    matmul efficiency above the ideal's (train.eff_scale > 1).
 */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "perfcast/calib.h"

/* Scratch files and the fixed runs, made once per process (harness state only). */
static char g_a[512], g_b[600];
static pc_runs *g_runs;

static void cleanup(void) {
    if (g_a[0]) unlink(g_a);
    if (g_b[0]) unlink(g_b);
    pc_runs_free(g_runs);
    g_runs = NULL;
}

#define FUZZ_MODEL                                                                          \
    "{\"model_type\": \"llama\", \"name\": \"fz\", \"hidden_size\": 2048,"                  \
    " \"num_hidden_layers\": 16, \"num_attention_heads\": 16, \"num_key_value_heads\": 8," \
    " \"head_dim\": 128, \"intermediate_size\": 8192, \"vocab_size\": 32000,"               \
    " \"mlp_gated\": true}"

static const char *const RUNS =
    "[{\"id\": \"fz-train\", \"kind\": \"train\", \"framework\": \"nemo\", \"model\": " FUZZ_MODEL
    ", \"hardware\": {\"chip\": \"h100-sxm\", \"chips\": 32, \"chips_per_node\": 8, \"slices\": 1},"
    " \"parallelism\": {\"tp\": 2, \"pp\": 2, \"vp\": 2, \"cp\": 1, \"ep\": 1, \"dp\": 4,"
    "   \"fsdp\": 2, \"zero\": 3, \"sequence_parallel\": true, \"micro_batch_size\": 1,"
    "   \"global_batch_size\": 64, \"grad_accum\": 8},"
    " \"workload\": {\"seq_len\": 4096, \"precision\": \"fp8\", \"remat\": \"selective\","
    "   \"flash_attention\": true},"
    " \"measured\": {\"metric\": \"step_time_s\", \"value\": 2.5}, \"step_time_s\": 2.5},"
    " {\"id\": \"fz-maxtext\", \"kind\": \"train\", \"framework\": \"maxtext\", \"model\": "
    FUZZ_MODEL ", \"hardware\": {\"chip\": \"tpu-v5e\", \"chips\": 512, \"slices\": 2},"
    " \"parallelism\": {\"tp\": 2, \"pp\": 1, \"dp\": 2, \"fsdp\": 128, \"micro_batch_size\": 2,"
    "   \"global_batch_size\": 512, \"grad_accum\": 1},"
    " \"workload\": {\"seq_len\": 2048, \"precision\": \"bf16\", \"remat\": \"full\"},"
    " \"measured\": {\"metric\": \"step_time_s\", \"value\": 3}, \"step_time_s\": 3},"
    " {\"id\": \"fz-serve\", \"kind\": \"serve\", \"framework\": \"tensorrt-llm\", \"model\": "
    FUZZ_MODEL ", \"hardware\": {\"chip\": \"h100-sxm\", \"chips\": 2, \"slices\": 1},"
    " \"parallelism\": {\"tp\": 2, \"pp\": 1, \"dp\": 1},"
    " \"workload\": {\"input_len\": 1024, \"output_len\": 512, \"num_requests\": 1000,"
    "   \"precision\": \"fp8\", \"weight_dtype\": \"fp8\"},"
    " \"measured\": {\"metric\": \"output_tokens_per_s\", \"value\": 9000},"
    " \"step_time_s\": null}]";

static void setup(void) {
    if (g_a[0]) return;
    const char *dir = getenv("PC_FUZZ_TMP");
    if (!dir || !*dir) dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_a, sizeof g_a, "%s/pc_fuzz_calib_%ld_XXXXXX", dir, (long)getpid());
    int fd = mkstemp(g_a);
    if (fd < 0) {
        perror(g_a);
        abort();
    }
    close(fd);
    snprintf(g_b, sizeof g_b, "%s.b", g_a);
    pc_error err;
    check(pc_runs_parse(RUNS, strlen(RUNS), "fuzz_runs.json", &g_runs, &err) == PC_OK);
    for (int i = 0; i < pc_runs_count(g_runs); i++) check(pc_runs_problem(g_runs, i) == NULL);
    atexit(cleanup);
}

/* The file's text from "coefficients" on (the origin line names the file). */
static char *coef_text(const char *path) {
    FILE *f = fopen(path, "rb");
    check(f != NULL);
    char *buf = calloc(1, 1 << 16);
    check(buf != NULL);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    check(n > 0 && n < (1 << 16) - 1);
    char *p = strstr(buf, "\"coefficients\"");
    check(p != NULL);
    memmove(buf, p, strlen(p) + 1);
    return buf;
}

static void check_predictions(const pc_calib *c) {
    int eff = -1;
    for (int i = 0; i < pc_calib_coef_count(); i++)
        if (!strcmp(pc_calib_coef_name(i), "train.eff_scale")) eff = i;
    check(eff >= 0);
    for (int r = 0; r < pc_runs_count(g_runs); r++) {
        const pc_run *run = pc_runs_at(g_runs, r);
        pc_run_pred p;
        pc_error err;
        check(pc_run_predict(run, c, &p, &err) == PC_OK);
        if (!p.expressed) {
            check(p.why[0] != '\0');
            continue;
        }
        check(isfinite(p.predicted) && p.predicted > 0);
        check(isfinite(p.error) && isfinite(p.ideal));
        if (run->kind != PC_RUN_TRAIN) continue;
        double sum = 0;
        for (int q = 0; q < PC_STEP_COUNT; q++) {
            check(isfinite(p.part[q]) && p.part[q] >= 0);
            sum += p.part[q];
        }
        check(fabs(sum - p.predicted) <= 1e-9 * p.predicted);
        check(isfinite(p.mfu) && p.mfu > 0);
        if (pc_calib_get(c, eff) <= 1) check(p.ideal <= p.predicted * (1 + 1e-12));
    }
}

PC_FUZZ_TARGET(calib) {
    setup();
    pc_calib *c = (pc_calib *)(uintptr_t)1; /* must be reset to NULL on failure */
    pc_error err;
    memset(&err, 0, sizeof err);
    pc_status st = pc_calib_parse((const char *)data, size, "fuzz.json", &c, &err);
    if (st != PC_OK) {
        check(c == NULL && err.msg[0] != '\0' && strstr(err.msg, "fuzz.json") != NULL);
        check(st == PC_ERR_FORMAT || st == PC_ERR_UNSUPPORTED || st == PC_ERR_RANGE ||
              st == PC_ERR_NOMEM);
        return 0;
    }
    check(c != NULL);
    check(!pc_calib_is_ideal(c));
    check(strcmp(pc_calib_origin(c), "fuzz.json") == 0);
    pc_calib *probe = pc_calib_clone(c);
    check(probe != NULL);
    for (int i = 0; i < pc_calib_coef_count(); i++) {
        double v = pc_calib_get(c, i);
        check(isfinite(v));
        check(pc_calib_set(probe, i, v, &err) == PC_OK && pc_calib_get(probe, i) == v);
    }
    pc_calib_free(probe);
    /* save, load, save again */
    pc_calib *back = NULL, *back2 = NULL;
    check(pc_calib_save(c, g_a, &err) == PC_OK);
    check(pc_calib_load(g_a, &back, &err) == PC_OK);
    for (int i = 0; i < pc_calib_coef_count(); i++) {
        double a = pc_calib_get(c, i), b = pc_calib_get(back, i);
        check(fabs(a - b) <= 1e-8 * fabs(a) || a == b);
    }
    check(pc_calib_save(back, g_b, &err) == PC_OK);
    check(pc_calib_load(g_b, &back2, &err) == PC_OK);
    char *ta = coef_text(g_a), *tb = coef_text(g_b);
    check(strcmp(ta, tb) == 0);
    free(ta), free(tb);
    check_predictions(c);
    pc_calib_free(back2);
    pc_calib_free(back);
    pc_calib_free(c);
    return 0;
}
