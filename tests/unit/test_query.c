/*
 * The queries (pc_query_json, perfcast/query.h): the roofline of a matmul
 * against the book's formulas with the chip's published numbers, HLO text in
 * a request, and requests that must fail naming the key.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "perfcast/query.h"

static cJSON *run_query(pc_query q, const char *request) {
    char *res = NULL;
    pc_error e;
    pc_status st = pc_query_json(q, request, &res, &e);
    if (st != PC_OK) fprintf(stderr, "%s\n", e.msg);
    assert_int_equal(st, PC_OK);
    assert_non_null(res);
    cJSON *doc = cJSON_Parse(res);
    pc_query_free(res);
    assert_non_null(doc);
    return doc;
}

static cJSON *roofline(const char *request) { return run_query(PC_QUERY_ROOFLINE, request); }

static double num(const cJSON *o, const char *path) {
    char key[64];
    const char *dot = strchr(path, '.');
    if (!dot) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, path);
        assert_true(cJSON_IsNumber(v));
        return v->valuedouble;
    }
    snprintf(key, sizeof key, "%.*s", (int)(dot - path), path);
    return num(cJSON_GetObjectItemCaseSensitive(o, key), dot + 1);
}

static void test_matmul(void **state) {
    (void)state;
    /* [256,4096] @ [4096,4096] in bf16 on a TPU v5e: 197 TFLOP/s, 820 GB/s */
    cJSON *d = roofline("{\"chip\": \"v5e\", \"matmul\": [256, 4096, 4096]}");
    double flops = 2.0 * 256 * 4096 * 4096, bytes = 2.0 * (256 * 4096 + 4096 * 4096 + 256 * 4096);
    const cJSON *op = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d, "ops"), 0);
    assert_true(num(op, "flops") == flops);
    assert_true(num(op, "bytes") == bytes);
    double t = fmax(flops / 197e12, bytes / 820e9);
    assert_true(fabs(num(d, "total.time") - t) <= 1e-12 * t);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(op, "bound")->valuestring, "memory");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(d, "hlo")));
    cJSON_Delete(d);
    /* the same as a string, a size in the units vocabulary and a count of 4Ki */
    d = roofline("{\"chip\": \"v5e\", \"matmul\": \"256,4Ki,4096\", \"comm_bw\": \"45G\"}");
    assert_true(num(d, "total.flops") == flops);
    cJSON_Delete(d);
}

static void test_hlo_text(void **state) {
    (void)state;
    cJSON *d = roofline("{\"chip\": \"h100\", \"top\": 0, \"hlo_text\": \"HloModule m\\n"
                        "ENTRY e {\\n  p0 = f32[8,16] parameter(0)\\n"
                        "  p1 = f32[16,32] parameter(1)\\n"
                        "  ROOT d = f32[8,32] dot(p0, p1), lhs_contracting_dims={1}, "
                        "rhs_contracting_dims={0}\\n}\\n\"}");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(d, "hlo");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(h, "file")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "ops")), 1);
    assert_true(num(d, "total.flops") == 2.0 * 8 * 16 * 32);
    assert_true(num(d, "total.bytes") == 4.0 * (8 * 16 + 16 * 32 + 8 * 32));
    cJSON_Delete(d);
}

static void fails_q(pc_query q, const char *request, const char *needle) {
    char *res = (char *)"x";
    pc_error e;
    assert_int_not_equal(pc_query_json(q, request, &res, &e), PC_OK);
    assert_null(res);
    if (!strstr(e.msg, needle)) fprintf(stderr, "'%s' not in: %s\n", needle, e.msg);
    assert_non_null(strstr(e.msg, needle));
}

static void fails(const char *request, const char *needle) {
    fails_q(PC_QUERY_ROOFLINE, request, needle);
}

static void test_errors(void **state) {
    (void)state;
    fails("{\"chip\": \"v5e\", \"matmul\": \"1,2,3\", \"tpo\": 1}", "unknown key 'tpo'");
    /* a transposition is one edit: the suggestion is 'top', not 'op' */
    fails("{\"chip\": \"v5e\", \"matmul\": \"1,2,3\", \"tpo\": 1}", "did you mean 'top'");
    fails("{\"matmul\": \"1,2,3\"}", "'chip' is required");
    fails("{\"chip\": \"v5x\", \"matmul\": \"1,2,3\"}", "unknown chip 'v5x'");
    fails("{\"chip\": \"v5e\"}", "give ops");
    fails("{\"chip\": \"v5e\", \"matmul\": \"1,2,3\", \"top\": \"many\"}", "'top'");
    fails("{\"chip\": \"v5e\", \"matmul\": \"1,2,3\", \"top\": 1.5}", "'top'");
    fails("{\"chip\": \"v5e\", \"matmul\": \"1,x,3\"}", "matmul '1,x,3'");
    fails("{\"chip\": \"v5e\", \"matmul\": \"1,2,3\", \"mesh\": \"2x2\"}", "go with 'hlo'");
    fails("{\"chip\": \"v5e\", \"hlo\": \"/nonexistent/x.hlo\"}", "/nonexistent/x.hlo");
    fails("{\"chip\": \"v5e\", \"hlo_text\": \"HloModule m\\nENTRY e { oops }\"}", "hlo_text");
    fails("[1, 2]", "expected a JSON object");
    fails("{\"chip\": ", "not JSON");
    pc_error e;
    assert_int_equal(pc_query_json(PC_QUERY_COUNT, "{}", NULL, &e), PC_ERR_ARG);
    /* tune with no loaded model (NULL) is the plain query: it needs 'model' (tune --data's
     * path with a loaded one is tests/scripts/test_tune.py's) */
    char *res = (char *)1;
    assert_int_equal(pc_query_tune_json("{\"file\": \"x.npz\"}", NULL, NULL, NULL, &res, &e),
                     PC_ERR_ARG);
    assert_null(res);
    assert_non_null(strstr(e.msg, "'model' (a checkpoint) is required"));
    assert_int_equal(pc_query_tune_json("{}", NULL, NULL, NULL, NULL, &e), PC_ERR_ARG);
    assert_int_equal(pc_query_parse("roofline"), PC_QUERY_ROOFLINE);
    assert_int_equal(pc_query_parse("nope"), -1);
    assert_string_equal(pc_query_name(PC_QUERY_ROOFLINE), "roofline");
    pc_query_free(NULL);
    const char *names[] = {"train", NULL, "roofline", "rank"};
    assert_string_equal(pc_closest_name("trian", names, 4), "train");
    assert_string_equal(pc_closest_name("rooflin", names, 4), "roofline");
    assert_null(pc_closest_name("xyzzy", names, 4));
    assert_null(pc_closest_name("x", NULL, 0));
}

/* LLaMA-3 8B (its config.json: L 32, D 4096, F 14336, 32 heads, 8 KV heads of 128, vocab
 * 128256, untied): the parameter count from the shapes, 6N, KV bytes, Adam memory. */
static void test_model(void **state) {
    (void)state;
    const double L = 32, D = 4096, F = 14336, N = 32, K = 8, H = 128, V = 128256;
    const double attn = D * N * H + 2 * D * K * H + N * H * D, mlp = 3 * D * F;
    const double total = 2 * V * D + L * (attn + mlp + 2 * D) + D;
    const char *reqs[] = {
        "{\"config\": \"llama3-8b\"}",
        "{\"preset\": \"llama3-8b\", \"seq\": \"4Ki\"}",
        ("{\"config\": {\"model_type\": \"llama\", \"hidden_size\": 4096, "
         "\"intermediate_size\": 14336, \"num_attention_heads\": 32, "
         "\"num_key_value_heads\": 8, \"num_hidden_layers\": 32, \"vocab_size\": 128256}}"),
        ("{\"layers\": 32, \"d_model\": 4096, \"d_ff\": 14336, \"heads\": 32, "
         "\"kv_heads\": 8, \"vocab\": 128256, \"batch_tokens\": 4096}")};
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        cJSON *d = run_query(PC_QUERY_MODEL, reqs[i]);
        assert_true(num(d, "params.total") == total);
        assert_true(num(d, "flops_per_token.six_n") == 6 * num(d, "params.active"));
        assert_true(num(d, "flops_per_token.seq") == 4096);
        assert_true(num(d, "kv_cache.bytes_per_token") == 2 * L * K * H * 2); /* K and V, bf16 */
        assert_true(num(d, "kv_cache.bytes_per_sequence") == 2 * L * K * H * 2 * 4096);
        /* bf16 weights and grads, Adam's two fp32 moments */
        assert_true(num(d, "train_memory.weights") == 2 * total);
        assert_true(num(d, "train_memory.optimizer_state") == 8 * total);
        assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(d, "mfu")));
        cJSON_Delete(d);
    }
    /* MFU of 0.3 s steps of 4M tokens on 64 v5p (459 TFLOP/s bf16): 6 x the matmul
     * parameters (no attention) per token over 64 x 0.3 chip-seconds */
    cJSON *d = run_query(PC_QUERY_MODEL, "{\"config\": \"llama3-8b\", \"chip\": \"v5p\", "
                                         "\"mfu_step_time\": 0.3, \"chips\": 64, "
                                         "\"batch_tokens\": \"4M\", \"attention\": \"none\"}");
    double want = 6 * num(d, "params.matmul_active") * 4e6 / (64 * 0.3) / 459e12;
    assert_true(fabs(num(d, "mfu.mfu") - want) <= 1e-12 * want);
    cJSON_Delete(d);
    fails_q(PC_QUERY_MODEL, "{\"config\": \"llama9\"}", "unknown preset 'llama9'");
    fails_q(PC_QUERY_MODEL, "{\"config\": \"gpt2\", \"sq\": 1}", "did you mean 'seq'");
    fails_q(PC_QUERY_MODEL, "{\"config\": \"gpt2\", \"remat\": \"most\"}", "'remat'");
    fails_q(PC_QUERY_MODEL, "{\"config\": \"gpt2\", \"seq\": 0}", "'seq'");
    fails_q(PC_QUERY_MODEL, "{\"config\": \"gpt2\", \"kv_heads\": 5}", "kv_heads");
    fails_q(PC_QUERY_MODEL, "{\"config\": \"gpt2\", \"chip\": \"v5x\"}", "unknown chip");
    fails_q(PC_QUERY_MODEL, "{\"config\": \"gpt2\", \"gpu_hours\": 1}", "'tokens'");
    fails_q(PC_QUERY_MODEL, "{\"config\": 3}", "'config'");
    fails_q(PC_QUERY_MODEL, "{\"layers\": 2}", "'layers'");
    fails_q(PC_QUERY_MODEL, "{\"config\": \"/nonexistent/c.json\"}", "/nonexistent/c.json");
    assert_int_equal(pc_query_parse("model"), PC_QUERY_MODEL);
}

/* LLaMA-3 8B on 8 TPU v5e (16 GB, 820 GB/s each) at context 8192, bf16: the weights (2 bytes x
 * 8,030,261,248 parameters) and the KV cache (K and V, 32 layers, 8 KV heads of 128) by hand;
 * the largest batch is what HBM holds beside the weights, and a decode step at batch 1 loads
 * the weights and the KV cache per chip at the HBM bandwidth (scaling_book.md §7). */
static void test_plan_serve(void **state) {
    (void)state;
    cJSON *d = run_query(PC_QUERY_PLAN_SERVE, "{\"config\": \"llama3-8b\", \"chip\": \"v5e\", "
                                              "\"chips\": 8, \"context\": \"8Ki\"}");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d, "contexts"), 0);
    double w = 2.0 * 8030261248.0, kvt = 2.0 * 32 * 8 * 128 * 2, kvs = kvt * 8192;
    assert_true(num(c, "weight_bytes") == w);
    assert_true(num(c, "kv_bytes_per_token") == kvt);
    assert_true(num(c, "kv_bytes_per_seq") == kvs);
    assert_true(num(c, "max_batch") == floor((8 * 16e9 - w) / kvs));
    const cJSON *b1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "batches"), 0);
    assert_true(num(b1, "batch") == 1);
    double wl = w / 8 / 820e9, kl = kvs / 8 / 820e9;
    assert_true(fabs(num(b1, "decode.weight_load") - wl) <= 1e-12 * wl);
    assert_true(fabs(num(b1, "decode.kv_load") - kl) <= 1e-12 * kl);
    double step = kl + fmax(fmax(num(b1, "decode.math"), wl), num(b1, "decode.comm"));
    assert_true(fabs(num(b1, "decode.step") - step) <= 1e-12 * step);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "fits")));
    assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(c, "calibrated")));
    cJSON_Delete(d);
    /* 405B in bf16 on 8 v5e: no batch fits; a document with no table, 'fits' false */
    d = run_query(PC_QUERY_PLAN_SERVE, "{\"config\": \"llama3-405b\", \"chip\": \"v5e\", "
                                       "\"chips\": 8, \"context\": [2048, 8192], "
                                       "\"calibration\": \"none\"}");
    c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d, "contexts"), 1);
    assert_true(num(c, "context") == 8192 && num(c, "max_batch") == 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(c, "batches"));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "calibrated")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(d, "fits")));
    cJSON_Delete(d);
    fails_q(PC_QUERY_PLAN_SERVE, "{\"config\": \"gpt2\", \"chip\": \"v5e\", \"chips\": 8}",
            "'context'");
    fails_q(PC_QUERY_PLAN_SERVE, "{\"config\": \"gpt2\", \"chip\": \"v5e\", \"context\": 1}",
            "'chips' or 'slice'");
    fails_q(PC_QUERY_PLAN_SERVE, "{\"config\": \"gpt2\", \"chips\": 1, \"context\": 1}", "'chip'");
    fails_q(PC_QUERY_PLAN_SERVE,
            "{\"config\": \"gpt2\", \"chip\": \"v5e\", \"chips\": 8, \"context\": 1, \"tp\": 5}",
            "'tp' 5 does not divide");
    fails_q(PC_QUERY_PLAN_SERVE, "{\"config\": \"gpt2\", \"contxt\": 1}", "did you mean 'context'");
    fails_q(PC_QUERY_PLAN_SERVE, "{\"chip\": \"v5e\", \"chips\": 8, \"context\": 1}", "no model");
    fails_q(PC_QUERY_PLAN_SERVE,
            "{\"config\": \"gpt2\", \"chip\": \"v5e\", \"chips\": 8, \"context\": [1, 0]}",
            "'context'");
    assert_int_equal(pc_query_parse("plan_serve"), PC_QUERY_PLAN_SERVE);
}

/* LLaMA-3 8B on 256 TPU v5e (16 GB, 197 TFLOP/s bf16), 4M tokens a step, ideal roofline only:
 * every plan splits the 256 chips, fits in 16 GB, is ranked by its step time, and takes at
 * least the matmuls' 6 N B FLOPs (N = 7.50e9 parameters in matmuls) at 0.95 x peak over the
 * chips (scaling_book.md §4). */
static void test_plan_train(void **state) {
    (void)state;
    cJSON *d = run_query(PC_QUERY_PLAN_TRAIN, "{\"config\": \"llama3-8b\", \"chip\": \"v5e\", "
                                              "\"chips\": 256, \"batch_tokens\": \"4M\", "
                                              "\"calibration\": \"none\", \"top\": 5}");
    assert_true(num(d, "params") == 8030261248.0);
    assert_true(num(d, "chips") == 256);
    const cJSON *plans = cJSON_GetObjectItemCaseSensitive(d, "plans");
    assert_int_equal(cJSON_GetArraySize(plans), 5);
    double prev = 0, lower = 6 * 7504658432.0 * 4e6 / (256 * 197e12 * 0.95);
    for (const cJSON *p = plans->child; p; p = p->next) {
        double prod = 1;
        for (const cJSON *a = cJSON_GetObjectItemCaseSensitive(p, "axes")->child; a; a = a->next)
            prod *= a->valuedouble;
        assert_true(prod == 256);
        assert_true(num(p, "memory_per_chip.total") <= 16e9);
        assert_true(num(p, "tokens_per_chip") == 4e6 / 256);
        assert_true(num(p, "step_time") >= prev && num(p, "step_time") >= lower);
        prev = num(p, "step_time");
    }
    assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(plans->child, "jax")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(d, "least_memory_plan")));
    cJSON_Delete(d);
    /* 70B on one 16 GB chip: no plan, the least-memory one instead */
    d = run_query(PC_QUERY_PLAN_TRAIN, "{\"config\": \"llama3-70b\", \"chip\": \"v5e\", "
                                       "\"chips\": 1, \"batch_tokens\": 4096}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "plans")), 0);
    assert_true(num(d, "least_memory_plan.memory_per_chip.total") > 16e9);
    cJSON_Delete(d);
    fails_q(PC_QUERY_PLAN_TRAIN, "{\"config\": \"gpt2\", \"chip\": \"v5e\", \"chips\": 4}",
            "'batch_tokens'");
    fails_q(PC_QUERY_PLAN_TRAIN,
            "{\"config\": \"gpt2\", \"chip\": \"v5e\", \"chips\": 4, \"batch_tokens\": 1e6, "
            "\"pp\": 1, \"vp\": 2}",
            "'vp' 2");
    fails_q(PC_QUERY_PLAN_TRAIN,
            "{\"config\": \"gpt2\", \"chip\": \"v5e\", \"chips\": 4, \"batch_tokens\": 1e6, "
            "\"remat\": [\"none\", \"most\"]}",
            "'remat'");
    fails_q(PC_QUERY_PLAN_TRAIN, "{\"config\": \"gpt2\", \"batch_tokns\": 1}",
            "did you mean 'batch_tokens'");
    fails_q(PC_QUERY_PLAN_TRAIN,
            "{\"config\": \"gpt2\", \"chip\": \"v5e\", \"chips\": 4, \"batch_tokens\": 1e6, "
            "\"top\": 101}",
            "'top'");
    assert_int_equal(pc_query_parse("plan_train"), PC_QUERY_PLAN_TRAIN);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul),     cmocka_unit_test(test_hlo_text),
        cmocka_unit_test(test_errors),     cmocka_unit_test(test_model),
        cmocka_unit_test(test_plan_serve), cmocka_unit_test(test_plan_train),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
