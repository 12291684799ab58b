/*
 * The measured-runs reader (issue #12): a JSON list of published training
 * steps and serving benchmarks (../shared/calibration/README.md "Fields")
 * into pc_run records.
 *
 * A bad run does not fail the file: it is kept with a message naming its id
 * and the field ("run 'k22-x': parallelism.tp: expected a positive integer,
 * got -2"), so a report can list it while the good runs stay usable. Only a
 * file that is not JSON, not a list of runs, or over the size cap fails as a
 * whole (PC_ERR_FORMAT). docs/analytic.md "Measured runs" lists every default
 * and every check made here.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "analytic/calib_internal.h"

/* Runs files are lists of small objects; 64 MiB is far beyond any real one
 * and keeps a stray multi-gigabyte file from being parsed into memory. */
#define RUNS_MAX_BYTES ((size_t)64 << 20)
/* Integers must be exact in a double (cJSON keeps numbers as doubles). */
#define RUNS_MAX_INT 9007199254740992.0 /* 2^53 */
#define PROBLEM_MAX 1024

struct pc_runs {
    int n;
    pc_run *runs;
    char **problem; /* NULL for a good run */
    int invalid;
};

/* ---------------- names ---------------- */

static const char *const fw_names[PC_FW_COUNT] = {"megatron", "maxtext", "tensorrt-llm", "other"};

const char *pc_framework_name(pc_framework f) {
    return (unsigned)f < PC_FW_COUNT ? fw_names[f] : "other";
}

pc_framework pc_framework_parse(const char *s) {
    static const struct {
        const char *name;
        pc_framework fw;
    } alias[] = {
        {"megatron-lm", PC_FW_MEGATRON},     {"nemo", PC_FW_MEGATRON},
        {"megatron-bridge", PC_FW_MEGATRON}, {"megatron", PC_FW_MEGATRON},
        {"maxtext", PC_FW_MAXTEXT},          {"jax", PC_FW_MAXTEXT},
        {"tensorrt-llm", PC_FW_TRTLLM},      {"trtllm", PC_FW_TRTLLM},
    };
    if (!s) return PC_FW_OTHER;
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (pc_ascii_ieq(s, alias[i].name)) return alias[i].fw;
    return PC_FW_OTHER;
}

/* The schema's chip names and the built-in chip each stands for; plain
 * built-in names ("h100", "v5e") are accepted too. */
static const struct {
    const char *name, *builtin;
} chip_alias[] = {
    {"a100-80gb", "a100"}, {"h100-sxm", "h100"}, {"b200", "b200"},   {"gb200", "gb200-nvl72"},
    {"tpu-v5e", "v5e"},    {"tpu-v6e", "v6e"},   {"tpu-v5p", "v5p"}, {"tpu-v4", "v4"},
};

static const pc_chip *builtin_named(const char *name) {
    for (int i = 0; i < pc_chip_builtin_count(); i++)
        if (pc_ascii_ieq(pc_chip_builtin(i)->name, name)) return pc_chip_builtin(i);
    return NULL;
}

static const pc_chip *chip_for_name(const char *name) {
    for (size_t i = 0; i < sizeof chip_alias / sizeof chip_alias[0]; i++)
        if (pc_ascii_ieq(name, chip_alias[i].name)) return builtin_named(chip_alias[i].builtin);
    return builtin_named(name);
}

const pc_chip *pc_run_chip(const pc_run *run) { return run ? chip_for_name(run->chip_name) : NULL; }

/* Model types perfcast knows how to read. The HF reader accepts any type as
 * llama-like with a note; a runs file is calibration data, where a silently
 * misread architecture would bias the fit, so unknown types are refused. */
static const char *const known_model_types[] = {
    "gpt2",        "maxtext-decoder-2023", "llama",   "mistral",     "mixtral",     "qwen2",
    "qwen2_moe",   "qwen3",                "qwen3_moe", "gemma",     "gemma2",      "gemma3",
    "gemma3_text", "phi3",                 "nemotron", "deepseek_v3", "deepseek_v2", "kimi_k2",
    "gpt_oss",     "llama4",               "llama4_text", NULL};

static const char *const known_metrics[] = {
    "step_time_s", "tokens_per_s_per_chip", "tflops_per_chip", "mfu", "output_tokens_per_s", NULL};

static int in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(s, *list)) return 1;
    return 0;
}

/* ---------------- one run ---------------- */

typedef struct run_ctx {
    pc_run *run;
    int index;
    char msg[PROBLEM_MAX]; /* problems so far, "; "-separated after "run 'id': " */
} run_ctx;

/* Records one problem of the run; the first one starts the message with the
 * run's id, later ones are appended so a user sees every bad field at once.
 * `field` may be "" when the message names the field itself. */
static void problem(run_ctx *c, const char *field, const char *fmt, ...) PC_PRINTF(3, 4);
static void problem(run_ctx *c, const char *field, const char *fmt, ...) {
    size_t l = strlen(c->msg);
    if (l + 8 >= sizeof c->msg) return;
    if (l)
        snprintf(c->msg + l, sizeof c->msg - l, "; %s%s", field, *field ? ": " : "");
    else
        snprintf(c->msg, sizeof c->msg, "run '%s': %s%s", c->run->id, field, *field ? ": " : "");
    l = strlen(c->msg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + l, sizeof c->msg - l, fmt, ap);
    va_end(ap);
}

static void add_note(pc_run *r, const char *fmt, ...) PC_PRINTF(2, 3);
static void add_note(pc_run *r, const char *fmt, ...) {
    size_t l = strlen(r->note);
    if (l + 3 >= sizeof r->note) return;
    if (l) {
        memcpy(r->note + l, "; ", 3);
        l += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note + l, sizeof r->note - l, fmt, ap);
    va_end(ap);
}

/* A short description of a JSON value for "got ..." in messages. */
static const char *describe(const cJSON *it, char *buf, size_t cap) {
    if (!it) return "nothing";
    if (cJSON_IsNull(it)) return "null";
    if (cJSON_IsBool(it)) return cJSON_IsTrue(it) ? "true" : "false";
    if (cJSON_IsNumber(it)) {
        snprintf(buf, cap, "%.15g", it->valuedouble);
        return buf;
    }
    if (cJSON_IsString(it)) {
        size_t n = strlen(it->valuestring);
        snprintf(buf, cap, "\"%.40s%s\"", it->valuestring, n > 40 ? "..." : "");
        return buf;
    }
    return cJSON_IsArray(it) ? "a list" : "an object";
}

static const cJSON *field(const cJSON *sec, const char *name) {
    return cJSON_IsObject(sec) ? cJSON_GetObjectItemCaseSensitive(sec, name) : NULL;
}

static int absent(const cJSON *it) { return !it || cJSON_IsNull(it); }

/* An integer field: absent or null gives `dflt` (returns 0); otherwise a
 * whole number >= min (1: positive, 0: non-negative). Returns 1 when stated. */
static int get_int(run_ctx *c, const cJSON *sec, const char *secname, const char *name, int64_t min,
                   int64_t dflt, int64_t *out) {
    const cJSON *it = field(sec, name);
    *out = dflt;
    if (absent(it)) return 0;
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!isfinite(v) || v != floor(v) || v < (double)min || v > RUNS_MAX_INT) {
        char buf[64];
        problem(c, "", "%s%s%s: expected a %s integer, got %s", secname, *secname ? "." : "", name,
                min > 0 ? "positive" : "non-negative", describe(it, buf, sizeof buf));
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

/* A positive number (lengths, batches, measured values); absent gives 0. */
static int get_pos(run_ctx *c, const cJSON *sec, const char *secname, const char *name, int integer,
                   double *out) {
    const cJSON *it = field(sec, name);
    *out = 0;
    if (absent(it)) return 0;
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!isfinite(v) || v <= 0 || (integer && (v != floor(v) || v > RUNS_MAX_INT))) {
        char buf[64];
        problem(c, "", "%s%s%s: expected a positive %s, got %s", secname, *secname ? "." : "", name,
                integer ? "integer" : "number", describe(it, buf, sizeof buf));
        return 0;
    }
    *out = v;
    return 1;
}

/* true/false; absent or null gives `dflt`. */
static void get_bool(run_ctx *c, const cJSON *sec, const char *secname, const char *name, int dflt,
                     int *out) {
    const cJSON *it = field(sec, name);
    *out = dflt;
    if (absent(it)) return;
    if (!cJSON_IsBool(it)) {
        char buf[64];
        problem(c, "", "%s.%s: expected true, false or null, got %s", secname, name,
                describe(it, buf, sizeof buf));
        return;
    }
    *out = cJSON_IsTrue(it);
}

/* A string field or NULL when absent / null; a non-string is a problem. */
static const char *get_str(run_ctx *c, const cJSON *sec, const char *secname, const char *name) {
    const cJSON *it = field(sec, name);
    if (absent(it)) return NULL;
    if (!cJSON_IsString(it)) {
        char buf[64];
        problem(c, "", "%s%s%s: expected a string, got %s", secname, *secname ? "." : "", name,
                describe(it, buf, sizeof buf));
        return NULL;
    }
    return it->valuestring;
}

/* A section ("model", "hardware", ...): an object, or absent. */
static const cJSON *get_section(run_ctx *c, const cJSON *obj, const char *name) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (absent(it)) return NULL;
    if (!cJSON_IsObject(it)) {
        char buf[64];
        problem(c, "", "%s: expected an object, got %s", name, describe(it, buf, sizeof buf));
        return NULL;
    }
    return it;
}

/* ---- id, kind, framework, flags ---- */

static void read_id(run_ctx *c, const cJSON *obj) {
    pc_run *r = c->run;
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "id");
    int ok = cJSON_IsString(it) && it->valuestring[0];
    if (ok)
        snprintf(r->id, sizeof r->id, "%.*s", PC_RUN_ID_MAX - 1, it->valuestring);
    else
        snprintf(r->id, sizeof r->id, "#%d", c->index);
    size_t dash = strcspn(r->id, "-");
    snprintf(r->source, sizeof r->source, "%.*s", (int)dash, r->id);
    if (!ok) {
        char buf[64];
        problem(c, "id", "expected a non-empty string, got %s", describe(it, buf, sizeof buf));
    } else if (r->id[0] == '#') {
        problem(c, "id", "must not start with '#' (kept for runs without an id)");
    } else if (strlen(it->valuestring) >= PC_RUN_ID_MAX) {
        problem(c, "id", "longer than %d characters", PC_RUN_ID_MAX - 1);
    }
}

static void read_header(run_ctx *c, const cJSON *obj) {
    pc_run *r = c->run;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "train")) {
        r->kind = PC_RUN_TRAIN;
    } else if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "serve")) {
        r->kind = PC_RUN_SERVE;
    } else {
        char buf[64];
        problem(c, "kind", "expected \"train\" or \"serve\", got %s",
                describe(kind, buf, sizeof buf));
        r->kind = PC_RUN_TRAIN;
    }
    const char *fw = get_str(c, obj, "", "framework");
    snprintf(r->framework_name, sizeof r->framework_name, "%.31s", fw ? fw : "");
    r->framework = pc_framework_parse(fw);

    const cJSON *flags = cJSON_GetObjectItemCaseSensitive(obj, "flags");
    if (absent(flags)) return;
    if (!cJSON_IsArray(flags)) {
        char buf[64];
        problem(c, "flags", "expected a list of strings, got %s", describe(flags, buf, sizeof buf));
        return;
    }
    const cJSON *f;
    cJSON_ArrayForEach(f, flags) {
        if (!cJSON_IsString(f)) {
            char buf[64];
            problem(c, "flags", "expected strings, got %s", describe(f, buf, sizeof buf));
        } else if (!strcmp(f->valuestring, "ga_inconsistent")) {
            r->flags_ga_inconsistent = 1;
        }
        /* other flags describe the published row and change nothing here */
    }
}

/* ---- model ---- */

static void read_model(run_ctx *c, const cJSON *obj, const char *origin) {
    pc_run *r = c->run;
    const cJSON *m = get_section(c, obj, "model");
    if (!m) {
        if (absent(cJSON_GetObjectItemCaseSensitive(obj, "model"))) problem(c, "model", "missing");
        return;
    }
    const char *type = get_str(c, m, "model", "model_type");
    if (!type) {
        if (absent(field(m, "model_type"))) problem(c, "model.model_type", "missing");
        return;
    }
    if (!in_list(type, known_model_types)) {
        char list[512] = "";
        for (const char *const *t = known_model_types; *t; t++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", *t);
        }
        problem(c, "model.model_type", "unknown model type \"%.40s\" (known: %s)", type, list);
        return;
    }
    char *text = cJSON_PrintUnformatted(m);
    if (!text) {
        problem(c, "model", "out of memory");
        return;
    }
    char where[512];
    snprintf(where, sizeof where, "%.300s: run '%s': model", origin, r->id);
    pc_error err;
    pc_error_clear(&err);
    pc_status st = pc_tfm_from_hf_json(text, strlen(text), where, &r->model, &err);
    free(text);
    if (st != PC_OK) {
        /* the reader names `where` (and pc_tfm_check the model, named
         * after `where` too): keep the message in this file's form */
        char tag[PC_RUN_ID_MAX + 24];
        snprintf(tag, sizeof tag, "run '%s': model: ", r->id);
        const char *why = err.msg;
        for (const char *t = strstr(why, tag); t; t = strstr(why, tag))
            why = t + strlen(tag);
        problem(c, "model", "%s", why);
        return;
    }
    /* the HF reader names a model after its file; a run names it itself */
    const char *name = get_str(c, m, "model", "name");
    snprintf(r->model.name, sizeof r->model.name, "%.63s", name ? name : r->id);
}

/* ---- hardware ---- */

static void read_hardware(run_ctx *c, const cJSON *obj) {
    pc_run *r = c->run;
    const cJSON *h = get_section(c, obj, "hardware");
    const char *chip = get_str(c, h, "hardware", "chip");
    snprintf(r->chip_name, sizeof r->chip_name, "%.31s", chip ? chip : "");
    if (!chip) {
        if (absent(field(h, "chip"))) problem(c, "hardware.chip", "missing");
    } else if (!chip_for_name(chip)) {
        char list[768] = "";
        size_t l = 0;
        for (size_t i = 0; i < sizeof chip_alias / sizeof chip_alias[0]; i++, l = strlen(list))
            snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", chip_alias[i].name);
        for (int i = 0; i < pc_chip_builtin_count(); i++, l = strlen(list)) {
            const char *b = pc_chip_builtin(i)->name;
            int dup = 0;
            for (size_t k = 0; k < sizeof chip_alias / sizeof chip_alias[0]; k++)
                dup |= !strcmp(b, chip_alias[k].name);
            if (!dup) snprintf(list + l, sizeof list - l, ", %s", b);
        }
        problem(c, "hardware.chip", "unknown chip \"%.40s\" (known: %s)", chip, list);
    }
    if (!get_int(c, h, "hardware", "chips", 1, 0, &r->chips) && absent(field(h, "chips")))
        problem(c, "hardware.chips", "missing");
    get_int(c, h, "hardware", "chips_per_node", 1, 0, &r->chips_per_node);
    get_int(c, h, "hardware", "slices", 1, 1, &r->slices);
}

/* ---- parallelism ---- */

static void read_parallelism(run_ctx *c, const cJSON *obj) {
    pc_run *r = c->run;
    const cJSON *p = get_section(c, obj, "parallelism");
    static const char *const deg_names[] = {"tp", "pp", "vp", "cp", "ep", "etp", "dp", "fsdp"};
    int64_t *deg[] = {&r->tp, &r->pp, &r->vp, &r->cp, &r->ep, &r->etp, &r->dp, &r->fsdp};
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++)
        get_int(c, p, "parallelism", deg_names[i], 1, 1, deg[i]); /* absent: 1 */
    int64_t zero;
    get_int(c, p, "parallelism", "zero", 0, -1, &zero);
    if (zero > 3) {
        problem(c, "parallelism.zero", "expected a ZeRO stage 0 to 3, got %lld", (long long)zero);
        zero = -1;
    }
    r->zero = (int)zero;
    get_bool(c, p, "parallelism", "sequence_parallel", 0, &r->sequence_parallel);
    get_bool(c, p, "parallelism", "attention_dp", 0, &r->attention_dp);
    get_int(c, p, "parallelism", "micro_batch_size", 1, 0, &r->micro_batch_size);
    get_int(c, p, "parallelism", "global_batch_size", 1, 0, &r->global_batch_size);
    get_int(c, p, "parallelism", "grad_accum", 1, 0, &r->grad_accum);
    get_pos(c, p, "parallelism", "per_device_batch_size", 0, &r->per_device_batch_size);
}

/* ---- workload ---- */

/* Precision names of the schema: the matmul precision and whether it is
 * block-scaled (mxfp8, nvfp4). Other names go to pc_prec_parse. -1 if unknown. */
static int parse_prec(const char *s, int *block) {
    *block = 0;
    if (pc_ascii_ieq(s, "mxfp8")) {
        *block = 1;
        return PC_PREC_FP8;
    }
    if (pc_ascii_ieq(s, "nvfp4") || pc_ascii_ieq(s, "mxfp4")) {
        *block = 1;
        return PC_PREC_FP4;
    }
    return pc_prec_parse(s);
}

static int get_prec(run_ctx *c, const cJSON *w, const char *name, int *block) {
    const char *s = get_str(c, w, "workload", name);
    *block = 0;
    if (!s) return -1;
    int p = parse_prec(s, block);
    if (p < 0)
        problem(c, "",
                "workload.%s: unknown precision \"%.40s\" (expected bf16, fp16, fp8, "
                "mxfp8, nvfp4, fp4, fp32)",
                name, s);
    return p;
}

static void read_remat(run_ctx *c, const cJSON *w) {
    pc_run *r = c->run;
    const char *s = get_str(c, w, "workload", "remat");
    r->remat = PC_RRM_NONE;
    if (!s) {
        /* training without a stated policy is modelled as none, but says so */
        if (r->kind == PC_RUN_TRAIN) snprintf(r->remat_text, sizeof r->remat_text, "not stated");
        return;
    }
    snprintf(r->remat_text, sizeof r->remat_text, "%.95s", s);
    if (!strcmp(s, "none"))
        r->remat = PC_RRM_NONE;
    else if (!strcmp(s, "selective"))
        r->remat = PC_RRM_SELECTIVE;
    else if (!strcmp(s, "full"))
        r->remat = PC_RRM_FULL;
    else if (!strncmp(s, "custom", 6) && (s[6] == ':' || s[6] == '\0'))
        r->remat = PC_RRM_CUSTOM;
    else
        problem(c, "workload.remat",
                "expected none, selective, full or \"custom: ...\", got \"%.40s\"", s);
}

static void read_workload(run_ctx *c, const cJSON *obj) {
    pc_run *r = c->run;
    const cJSON *w = get_section(c, obj, "workload");
    int block = 0, wblock = 0, kblock = 0;
    int p = get_prec(c, w, "precision", &block);
    if (p < 0 && absent(field(w, "precision"))) problem(c, "workload.precision", "missing");
    r->prec = p >= 0 ? (pc_prec)p : PC_PREC_BF16;
    r->block_scaled = p >= 0 && block;
    int wp = get_prec(c, w, "weight_dtype", &wblock);
    r->weight_prec = wp >= 0 ? (pc_prec)wp : r->prec;
    int kp = get_prec(c, w, "kv_dtype", &kblock);
    /* kv_dtype null: TensorRT-LLM's quantized (fp8 / nvfp4) checkpoints
     * default to an FP8 KV cache, so fp8- and fp4-precision runs get FP8;
     * every other run keeps its KV cache in bf16. */
    if (kp >= 0)
        r->kv_prec = (pc_prec)kp;
    else if (r->prec == PC_PREC_FP8 || r->prec == PC_PREC_FP4)
        r->kv_prec = PC_PREC_FP8;
    else
        r->kv_prec = PC_PREC_BF16;
    read_remat(c, w);
    int fa = -1;
    get_bool(c, w, "workload", "flash_attention", -1, &fa);
    r->flash_attention = fa;
    get_pos(c, w, "workload", "seq_len", 1, &r->seq_len);
    get_pos(c, w, "workload", "input_len", 1, &r->input_len);
    get_pos(c, w, "workload", "output_len", 1, &r->output_len);
    get_pos(c, w, "workload", "batch", 0, &r->batch);
    get_pos(c, w, "workload", "concurrency", 0, &r->concurrency);
    get_pos(c, w, "workload", "num_requests", 1, &r->num_requests);
}

/* ---- measured ---- */

static void read_measured(run_ctx *c, const cJSON *obj) {
    pc_run *r = c->run;
    const cJSON *m = get_section(c, obj, "measured");
    const char *metric = get_str(c, m, "measured", "metric");
    snprintf(r->metric, sizeof r->metric, "%.31s", metric ? metric : "");
    if (!metric) {
        if (absent(field(m, "metric"))) problem(c, "measured.metric", "missing");
    } else if (!in_list(metric, known_metrics)) {
        problem(c, "measured.metric",
                "unknown metric \"%.40s\" (known: step_time_s, tokens_per_s_per_chip, "
                "tflops_per_chip, mfu, output_tokens_per_s)",
                metric);
    }
    if (!get_pos(c, m, "measured", "value", 0, &r->measured_value) && absent(field(m, "value")))
        problem(c, "measured.value", "missing");
    if (r->kind == PC_RUN_TRAIN) {
        if (!get_pos(c, obj, "", "step_time_s", 0, &r->step_time_s) &&
            absent(cJSON_GetObjectItemCaseSensitive(obj, "step_time_s")))
            problem(c, "step_time_s", "missing (a training run needs seconds per step)");
        if (metric && !strcmp(metric, "step_time_s") && r->step_time_s > 0 &&
            r->measured_value > 0 &&
            fabs(r->measured_value - r->step_time_s) > 1e-9 * r->step_time_s)
            problem(c, "measured.value", "%.15g s differs from step_time_s %.15g s",
                    r->measured_value, r->step_time_s);
    } else if (metric && strcmp(metric, "output_tokens_per_s") != 0 &&
               in_list(metric, known_metrics)) {
        problem(c, "measured.metric",
                "a serving run is measured in output_tokens_per_s, got \"%s\"", metric);
    } else {
        r->output_tokens_per_s = r->measured_value;
    }
}

/* ---- consistency ---- */

/* chips = tp x pp x cp x dp x fsdp (README "parallelism"); ep and etp are
 * carved out of those ranks, so they do not enter the product. */
static void check_chips(run_ctx *c) {
    const pc_run *r = c->run;
    if (r->chips <= 0) return;
    uint64_t prod = 1;
    const int64_t f[] = {r->tp, r->pp, r->cp, r->dp, r->fsdp};
    int ok = 1;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        ok = ok && pc_mul_u64(prod, (uint64_t)f[i], &prod);
    if (ok && prod == (uint64_t)r->chips) return;
    char p[32];
    if (ok)
        snprintf(p, sizeof p, "%llu", (unsigned long long)prod);
    else
        snprintf(p, sizeof p, "more than 2^64");
    problem(c, "parallelism",
            "hardware.chips %lld != tp %lld x pp %lld x cp %lld x dp %lld x fsdp %lld = %s "
            "(ep does not enter the product)",
            (long long)r->chips, (long long)r->tp, (long long)r->pp, (long long)r->cp,
            (long long)r->dp, (long long)r->fsdp, p);
}

/* Global batch, micro-batch and gradient accumulation of a training run:
 * checks what is stated and derives what is not (README "parallelism":
 * global_batch_size = micro_batch_size x dp x fsdp x grad_accum). */
static void derive_batch(run_ctx *c) {
    pc_run *r = c->run;
    uint64_t shards64;
    if (!pc_mul_u64((uint64_t)r->dp, (uint64_t)r->fsdp, &shards64) || shards64 > (1ull << 53))
        return; /* degrees this large fail the chips check already */
    const int64_t shards = (int64_t)shards64;
    if (r->per_device_batch_size > 0 && r->chips > 0) {
        double want = r->per_device_batch_size * (double)r->chips;
        if (r->global_batch_size == 0 && want == floor(want) && want <= RUNS_MAX_INT) {
            r->global_batch_size = (int64_t)want;
            add_note(r, "global_batch_size = per_device_batch_size x chips");
        } else if (fabs(want - (double)r->global_batch_size) > 1e-9 * want) {
            problem(c, "parallelism.per_device_batch_size",
                    "%.15g x chips %lld = %.15g, but global_batch_size is %lld",
                    r->per_device_batch_size, (long long)r->chips, want,
                    (long long)r->global_batch_size);
        }
    }
    if (r->global_batch_size == 0 && r->micro_batch_size > 0 && r->grad_accum > 0) {
        uint64_t g;
        if (pc_mul_u64(shards64, (uint64_t)r->micro_batch_size, &g) &&
            pc_mul_u64(g, (uint64_t)r->grad_accum, &g) && g <= (1ull << 53)) {
            r->global_batch_size = (int64_t)g;
            add_note(r, "global_batch_size = micro_batch_size x dp x fsdp x grad_accum");
        }
    }
    if (r->global_batch_size == 0) {
        problem(c, "parallelism.global_batch_size", "missing (a training run needs it)");
        return;
    }
    const int64_t gbs = r->global_batch_size;
    if (gbs % shards) {
        problem(c, "parallelism.global_batch_size",
                "%lld sequences do not split over dp %lld x fsdp %lld = %lld data shards",
                (long long)gbs, (long long)r->dp, (long long)r->fsdp, (long long)shards);
        return;
    }
    const int64_t per_shard = gbs / shards;
    const int64_t mbs = r->micro_batch_size, ga = r->grad_accum;
    if (mbs > 0 && ga > 0 && !r->flags_ga_inconsistent) {
        if (mbs <= per_shard && per_shard % mbs == 0 && per_shard / mbs == ga) return;
        problem(c, "parallelism.global_batch_size",
                "%lld != micro_batch_size %lld x dp %lld x fsdp %lld x grad_accum %lld",
                (long long)gbs, (long long)mbs, (long long)r->dp, (long long)r->fsdp,
                (long long)ga);
    } else if (mbs > 0) {
        /* ga_inconsistent: the published global batch is what the step time
         * was derived from, so it wins over the misprinted grad_accum */
        if (per_shard % mbs) {
            problem(c, "parallelism.micro_batch_size",
                    "%lld does not divide the %lld sequences per data shard", (long long)mbs,
                    (long long)per_shard);
            return;
        }
        r->grad_accum = per_shard / mbs;
        if (ga > 0)
            add_note(r,
                     "ga_inconsistent: grad_accum %lld as published; %lld = global_batch_size / "
                     "(micro_batch_size x dp x fsdp) used",
                     (long long)ga, (long long)r->grad_accum);
        else
            add_note(r, "grad_accum = global_batch_size / (micro_batch_size x dp x fsdp) = %lld",
                     (long long)r->grad_accum);
    } else {
        /* no micro-batch stated (MaxText: per_device_batch_size, no
         * micro-batching): one micro-batch of all the shard's sequences per
         * accumulation step, grad_accum 1 unless stated */
        int64_t g = ga > 0 ? ga : 1;
        if (per_shard % g) {
            problem(c, "parallelism.grad_accum",
                    "%lld does not divide the %lld sequences per data shard", (long long)g,
                    (long long)per_shard);
            return;
        }
        r->grad_accum = g;
        r->micro_batch_size = per_shard / g;
        add_note(r, "micro_batch_size = global_batch_size / (dp x fsdp%s) = %lld",
                 ga > 0 ? " x grad_accum" : "", (long long)r->micro_batch_size);
    }
}

static void check_training(run_ctx *c, const cJSON *obj) {
    pc_run *r = c->run;
    if (r->seq_len <= 0 && absent(field(field(obj, "workload"), "seq_len")))
        problem(c, "workload.seq_len", "missing (a training run needs it)");
    derive_batch(c);
    double tokens;
    if (r->seq_len > 0 && r->global_batch_size > 0 &&
        get_pos(c, field(obj, "workload"), "workload", "global_batch_tokens", 1, &tokens) &&
        tokens != (double)r->global_batch_size * r->seq_len)
        problem(c, "workload.global_batch_tokens",
                "%.15g != global_batch_size %lld x seq_len %.15g", tokens,
                (long long)r->global_batch_size, r->seq_len);
}

static void check_serving(run_ctx *c, const cJSON *obj) {
    pc_run *r = c->run;
    const cJSON *w = field(obj, "workload");
    if (r->input_len <= 0 && absent(field(w, "input_len")))
        problem(c, "workload.input_len", "missing (a serving run needs it)");
    if (r->output_len <= 0 && absent(field(w, "output_len")))
        problem(c, "workload.output_len", "missing (a serving run needs it)");
    double msl;
    if (r->input_len > 0 && r->output_len > 0 &&
        get_pos(c, w, "workload", "max_seq_len", 1, &msl) && msl < r->input_len + r->output_len)
        problem(c, "workload.max_seq_len", "%.15g < input_len %.15g + output_len %.15g", msl,
                r->input_len, r->output_len);
    r->step_time_s = 0;
}

/* Reads run `index` into *r; returns its problem (heap) or NULL. A run that
 * is not an object keeps only its "#index" id. */
static char *read_run(const cJSON *obj, int index, const char *origin, pc_run *r, int *nomem) {
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.run = r;
    c.index = index;
    if (!cJSON_IsObject(obj)) {
        char buf[64];
        snprintf(r->id, sizeof r->id, "#%d", index);
        snprintf(r->source, sizeof r->source, "#%d", index);
        problem(&c, "", "expected a run object, got %s", describe(obj, buf, sizeof buf));
    } else {
        read_id(&c, obj);
        read_header(&c, obj);
        read_model(&c, obj, origin);
        read_hardware(&c, obj);
        read_parallelism(&c, obj);
        read_workload(&c, obj);
        read_measured(&c, obj);
        check_chips(&c);
        if (r->kind == PC_RUN_TRAIN)
            check_training(&c, obj);
        else
            check_serving(&c, obj);
    }
    if (!c.msg[0]) return NULL;
    char *p = malloc(strlen(c.msg) + 1);
    if (!p)
        *nomem = 1;
    else
        memcpy(p, c.msg, strlen(c.msg) + 1);
    return p;
}

/* ---------------- the file ---------------- */

typedef struct id_ref {
    const char *id;
    int index;
} id_ref;

static int cmp_id(const void *a, const void *b) {
    const id_ref *x = a, *y = b;
    int s = strcmp(x->id, y->id);
    return s ? s : (x->index > y->index) - (x->index < y->index);
}

/* Marks every later run that repeats an earlier run's id (sorting keeps
 * this O(n log n) on large files). */
static pc_status mark_duplicates(pc_runs *rs, pc_error *err) {
    if (rs->n < 2) return PC_OK;
    id_ref *ref = pc_malloc_array((uint64_t)rs->n, sizeof *ref);
    if (!ref) return pc_fail(err, PC_ERR_NOMEM, "runs: out of memory");
    for (int i = 0; i < rs->n; i++)
        ref[i] = (id_ref){rs->runs[i].id, i};
    qsort(ref, (size_t)rs->n, sizeof *ref, cmp_id);
    pc_status st = PC_OK;
    for (int k = 1; k < rs->n && !st; k++) {
        if (strcmp(ref[k].id, ref[k - 1].id) != 0 || ref[k].id[0] == '#') continue;
        int i = ref[k].index, first = k - 1;
        while (first > 0 && !strcmp(ref[first - 1].id, ref[k].id))
            first--;
        char msg[PROBLEM_MAX];
        int n = snprintf(msg, sizeof msg, "run '%s': id: duplicate of run #%d", rs->runs[i].id,
                         ref[first].index);
        const char *old = rs->problem[i];
        size_t ol = old ? strlen(old) : 0;
        char *p = malloc(ol + (size_t)(n > 0 ? n : 0) + 3);
        if (!p) {
            st = pc_fail(err, PC_ERR_NOMEM, "runs: out of memory");
            break;
        }
        /* the duplicate note goes first: it explains the run's other messages */
        const size_t skip = strlen("run '") + strlen(rs->runs[i].id) + strlen("': ");
        sprintf(p, "%s%s%s", msg, old ? "; " : "", old && ol >= skip ? old + skip : "");
        free(rs->problem[i]);
        rs->problem[i] = p;
    }
    free(ref);
    return st;
}

/* The run list of a parsed file: the top-level list, or {"runs": [...]}. */
static const cJSON *run_list(const cJSON *root) {
    if (cJSON_IsArray(root)) return root;
    const cJSON *l = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "runs") : NULL;
    return cJSON_IsArray(l) ? l : NULL;
}

/* 1-based line and column of byte `pos` of text, for parse errors. */
static void line_col(const char *text, size_t pos, size_t *line, size_t *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

void pc_runs_free(pc_runs *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++)
        free(r->problem[i]);
    free(r->problem);
    free(r->runs);
    free(r);
}

static pc_status parse_root(const cJSON *root, const char *origin, pc_runs **out, pc_error *err) {
    const cJSON *list = run_list(root);
    if (!list) {
        char buf[64];
        return pc_fail(err, PC_ERR_FORMAT,
                       "%s: expected a JSON list of runs (or an object with a \"runs\" list), "
                       "got %s",
                       origin, describe(root, buf, sizeof buf));
    }
    int n = cJSON_GetArraySize(list);
    pc_runs *rs = calloc(1, sizeof *rs);
    if (rs) {
        rs->runs = pc_calloc_array((uint64_t)(n ? n : 1), sizeof *rs->runs);
        rs->problem = pc_calloc_array((uint64_t)(n ? n : 1), sizeof *rs->problem);
    }
    if (!rs || !rs->runs || !rs->problem) {
        pc_runs_free(rs);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory for %d runs", origin, n);
    }
    int nomem = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        int i = rs->n++;
        rs->problem[i] = read_run(it, i, origin, &rs->runs[i], &nomem);
        if (nomem) break;
    }
    pc_status st =
        nomem ? pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", origin) : mark_duplicates(rs, err);
    if (st) {
        pc_runs_free(rs);
        return st;
    }
    for (int i = 0; i < rs->n; i++)
        rs->invalid += rs->problem[i] != NULL;
    *out = rs;
    return PC_OK;
}

pc_status pc_runs_parse(const char *text, size_t len, const char *origin, pc_runs **out,
                        pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pc_runs_parse: out is NULL");
    *out = NULL;
    if (!origin) origin = "runs";
    if (!text && len) return pc_fail(err, PC_ERR_ARG, "%s: text is NULL", origin);
    if (len > RUNS_MAX_BYTES)
        return pc_fail(err, PC_ERR_FORMAT,
                       "%s: %zu bytes is over the %zu-byte limit of a runs file", origin, len,
                       RUNS_MAX_BYTES);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text ? text : "", len, &end, 0);
    if (!root) {
        size_t pos =
            end && text && end >= text && (size_t)(end - text) <= len ? (size_t)(end - text) : len;
        size_t line, col;
        line_col(text ? text : "", pos, &line, &col);
        return pc_fail(err, PC_ERR_FORMAT,
                       "%s: not JSON: parse error at byte %zu (line %zu, column %zu)", origin, pos,
                       line, col);
    }
    pc_status st = parse_root(root, origin, out, err);
    cJSON_Delete(root);
    return st;
}

pc_status pc_runs_load(const char *path, pc_runs **out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pc_runs_load: out is NULL");
    *out = NULL;
    if (!path) return pc_fail(err, PC_ERR_ARG, "pc_runs_load: path is NULL");
    char *text = NULL;
    size_t len = 0;
    pc_status st = pc_read_file(path, RUNS_MAX_BYTES, &text, &len, err);
    if (st == PC_ERR_RANGE) { /* over the size cap: not a runs file */
        st = PC_ERR_FORMAT;
        if (err) err->code = st;
    }
    if (st) return st;
    st = pc_runs_parse(text, len, path, out, err);
    free(text);
    return st;
}

int pc_runs_count(const pc_runs *r) { return r ? r->n : 0; }

const pc_run *pc_runs_at(const pc_runs *r, int i) {
    return r && i >= 0 && i < r->n ? &r->runs[i] : NULL;
}

const char *pc_runs_problem(const pc_runs *r, int i) {
    return r && i >= 0 && i < r->n ? r->problem[i] : NULL;
}

int pc_runs_invalid(const pc_runs *r) { return r ? r->invalid : 0; }
