/*
 * The one size / count vocabulary (pc_parse_count, pc_parse_bytes;
 * perfcast/perfcast.h "Units", docs/units.md) on a table of inputs: decimal
 * k/M/G/T/P, binary Ki/Mi/Gi/Ti/Pi, case, the byte unit B, B = 1e9 for
 * counts, and what must fail (junk, signs, hex, inf/nan, blanks, overflow).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perfcast/perfcast.h"

typedef struct row {
    const char *s;
    double count; /* pc_parse_count; NAN: must fail */
    double bytes; /* pc_parse_bytes; NAN: must fail */
} row;

static const row rows[] = {
    {"0", 0, 0},
    {"4096", 4096, 4096},
    {"1.5", 1.5, 1.5},
    {"4e9", 4e9, 4e9},
    {".5k", 500, 500},
    {"8k", 8000, 8000},
    {"8K", 8000, 8000},
    {"8Ki", 8192, 8192},
    {"8ki", 8192, 8192},
    {"8KI", 8192, 8192},
    {"4M", 4e6, 4e6},
    {"4m", 4e6, 4e6},
    {"4Mi", 4194304, 4194304},
    {"2G", 2e9, 2e9},
    {"2Gi", 2147483648.0, 2147483648.0},
    {"15T", 15e12, 15e12},
    {"1Ti", 1099511627776.0, 1099511627776.0},
    {"3P", 3e15, 3e15},
    {"1Pi", 1125899906842624.0, 1125899906842624.0},
    {"1.5e1k", 15000, 15000},
    {"300B", 3e11, 300},
    {"512MB", NAN, 512e6},
    {"1GiB", NAN, 1073741824.0},
    {"64kB", NAN, 64e3},
    {"64KiB", NAN, 65536},
    {"", NAN, NAN},
    {"k", NAN, NAN},
    {"-1", NAN, NAN},
    {"+1", NAN, NAN},
    {" 1", NAN, NAN},
    {"1 ", NAN, NAN},
    {"0x10", NAN, NAN},
    {"inf", NAN, NAN},
    {"nan", NAN, NAN},
    {"1e999", NAN, NAN},
    {"1e308T", NAN, NAN},
    {"4Q", NAN, NAN},
    {"4Mx", NAN, NAN},
    {"4iB", NAN, NAN},
    {"4MiBB", NAN, NAN},
    {"4 M", NAN, NAN},
    {"1e", NAN, NAN},
};

static void check(const char *s, double want, pc_status (*f)(const char *, double *, pc_error *),
                  const char *fn) {
    pc_error e;
    pc_error_clear(&e);
    double got = -7;
    pc_status st = f(s, &got, &e);
    if (isnan(want)) {
        if (st == PC_OK) fail_msg("%s('%s') = %g, want a failure", fn, s, got);
        assert_true(e.msg[0] != 0);
        assert_true(got == -7); /* untouched */
    } else {
        if (st != PC_OK) fail_msg("%s('%s') failed: %s", fn, s, e.msg);
        if (got != want) fail_msg("%s('%s') = %.17g, want %.17g", fn, s, got, want);
    }
}

static void test_table(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        check(rows[i].s, rows[i].count, pc_parse_count, "pc_parse_count");
        check(rows[i].s, rows[i].bytes, pc_parse_bytes, "pc_parse_bytes");
    }
}

static void test_null_and_messages(void **state) {
    (void)state;
    double v = 0;
    pc_error e;
    assert_int_equal(pc_parse_count(NULL, &v, &e), PC_ERR_ARG);
    assert_int_equal(pc_parse_bytes(NULL, &v, NULL), PC_ERR_ARG); /* err may be NULL */
    assert_int_equal(pc_parse_count("4Q", &v, &e), PC_ERR_ARG);
    assert_non_null(strstr(e.msg, "'4Q'"));
    assert_non_null(strstr(e.msg, "Ki"));
    assert_int_equal(pc_parse_count("1e308T", &v, &e), PC_ERR_RANGE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_null_and_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
