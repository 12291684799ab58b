/*
 * Progress of reading and parsing large HLO text (hlo/text.h,
 * pc_hlo_parse_text_progress; common/util.h, pc_read_file_progress):
 * - a text of 4 MiB or more reports "bytes parsed" from 0 to its length,
 *   never backwards, at least every 1 MiB and not much more often, and parses
 *   to the same module as without progress (printed text identical);
 * - a smaller text never calls it;
 * - a file of 4 MiB or more is read in pieces with "bytes read" from 0 to its
 *   size, the same bytes as pc_read_file; a small one never calls it.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "hlo/text.h"

typedef struct calls {
    int n;
    int64_t done[256], total[256];
    char what[32];
} calls;

static void record(void *user, const char *what, int64_t done, int64_t total) {
    calls *c = user;
    snprintf(c->what, sizeof c->what, "%s", what);
    if (c->n < 256) c->done[c->n] = done, c->total[c->n] = total;
    c->n++;
}

/* A chain of n negates, about 70 bytes per instruction. */
static char *chain(int n, size_t *len) {
    size_t cap = (size_t)n * 96 + 256, at = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    at += (size_t)snprintf(s + at, cap - at,
                           "HloModule big\n\nENTRY main {\n  p0 = f32[64,64]{1,0} parameter(0)\n");
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(s + at, cap - at,
                               "  n%d = f32[64,64]{1,0} negate(%s%d), metadata={op_name=\"x\"}\n",
                               i, i ? "n" : "p", i ? i - 1 : 0);
    at += (size_t)snprintf(s + at, cap - at, "  ROOT r = f32[64,64]{1,0} negate(n%d)\n}\n", n - 1);
    *len = at;
    return s;
}

static char *printed(pc_hlo_module *m, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    pc_error e;
    assert_int_equal(pc_hlo_print_text(m, f, &e), PC_OK);
    fclose(f);
    return buf;
}

static void test_parse_progress(void **state) {
    (void)state;
    size_t len;
    char *text = chain(80000, &len);
    assert_true(len >= PC_HLO_PROGRESS_MIN_BYTES);
    calls c;
    memset(&c, 0, sizeof c);
    pc_hlo_module **a = NULL, **b = NULL;
    int na = 0, nb = 0;
    pc_error e;
    assert_int_equal(pc_hlo_parse_text_progress(text, len, "big", record, &c, &a, &na, NULL, &e),
                     PC_OK);
    assert_int_equal(pc_hlo_parse_text(text, len, "big", &b, &nb, NULL, &e), PC_OK);
    assert_string_equal(c.what, "bytes parsed");
    assert_true(c.n >= 3 && c.n < 256);
    assert_int_equal(c.done[0], 0);
    assert_int_equal(c.done[c.n - 1], (int64_t)len);
    int64_t steps = (int64_t)(len / PC_HLO_PROGRESS_STEP_BYTES);
    assert_true(c.n >= steps + 1 && c.n <= steps + 3); /* 0, each MiB, the end */
    for (int i = 0; i < c.n; i++) {
        assert_int_equal(c.total[i], (int64_t)len);
        if (i) assert_true(c.done[i] > c.done[i - 1]);
        if (i) assert_true(c.done[i] - c.done[i - 1] <= PC_HLO_PROGRESS_STEP_BYTES + 200);
    }
    assert_int_equal(na, 1);
    assert_int_equal(nb, 1);
    size_t la, lb;
    char *pa = printed(a[0], &la), *pb = printed(b[0], &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(pa, pb, la);
    free(pa), free(pb);
    pc_hlo_modules_free(a, na);
    pc_hlo_modules_free(b, nb);
    free(text);
}

static void test_parse_small_quiet(void **state) {
    (void)state;
    size_t len;
    char *text = chain(2000, &len);
    assert_true(len < PC_HLO_PROGRESS_MIN_BYTES);
    calls c;
    memset(&c, 0, sizeof c);
    pc_hlo_module **a = NULL;
    int na = 0;
    pc_error e;
    assert_int_equal(pc_hlo_parse_text_progress(text, len, "small", record, &c, &a, &na, NULL, &e),
                     PC_OK);
    assert_int_equal(c.n, 0);
    pc_hlo_modules_free(a, na);
    free(text);
}

static void check_read(size_t size, int expect_calls) {
    char path[] = "/tmp/pc_test_hlo_progress_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char *data = malloc(size + 1);
    assert_non_null(data);
    for (size_t i = 0; i < size; i++) data[i] = (char)('a' + i % 23);
    assert_int_equal(write(fd, data, size), (ssize_t)size);
    close(fd);
    calls c;
    memset(&c, 0, sizeof c);
    char *buf = NULL;
    size_t len = 0;
    pc_error e;
    assert_int_equal(pc_read_file_progress(path, SIZE_MAX - 1, record, &c, &buf, &len, &e), PC_OK);
    unlink(path);
    assert_int_equal(len, size);
    assert_memory_equal(buf, data, size);
    assert_int_equal(buf[size], 0);
    if (!expect_calls) {
        assert_int_equal(c.n, 0);
    } else {
        assert_string_equal(c.what, "bytes read");
        assert_int_equal(c.done[0], 0);
        assert_int_equal(c.done[c.n - 1], (int64_t)size);
        int64_t pieces = (int64_t)((size + PC_PROGRESS_STEP_BYTES - 1) / PC_PROGRESS_STEP_BYTES);
        assert_int_equal(c.n, pieces + 1);
        for (int i = 1; i < c.n; i++) assert_true(c.done[i] > c.done[i - 1]);
    }
    free(buf);
    free(data);
}

static void test_read_progress(void **state) {
    (void)state;
    check_read((size_t)PC_PROGRESS_MIN_BYTES + 12345, 1);
    check_read(100000, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_progress),
        cmocka_unit_test(test_parse_small_quiet),
        cmocka_unit_test(test_read_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
