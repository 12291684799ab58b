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

static cJSON *roofline(const char *request) {
    char *res = NULL;
    pc_error e;
    pc_status st = pc_query_json(PC_QUERY_ROOFLINE, request, &res, &e);
    if (st != PC_OK) fprintf(stderr, "%s\n", e.msg);
    assert_int_equal(st, PC_OK);
    assert_non_null(res);
    cJSON *doc = cJSON_Parse(res);
    pc_query_free(res);
    assert_non_null(doc);
    return doc;
}

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

static void fails(const char *request, const char *needle) {
    char *res = (char *)"x";
    pc_error e;
    assert_int_not_equal(pc_query_json(PC_QUERY_ROOFLINE, request, &res, &e), PC_OK);
    assert_null(res);
    if (!strstr(e.msg, needle)) fprintf(stderr, "'%s' not in: %s\n", needle, e.msg);
    assert_non_null(strstr(e.msg, needle));
}

static void test_errors(void **state) {
    (void)state;
    fails("{\"chip\": \"v5e\", \"matmul\": \"1,2,3\", \"tpo\": 1}", "unknown key 'tpo'");
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
    assert_int_equal(pc_query_parse("roofline"), PC_QUERY_ROOFLINE);
    assert_int_equal(pc_query_parse("nope"), -1);
    assert_string_equal(pc_query_name(PC_QUERY_ROOFLINE), "roofline");
    pc_query_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_hlo_text),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
