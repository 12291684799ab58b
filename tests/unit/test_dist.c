/*
 * pc_dist as an embedder sees it without MPI initialized: a group of one
 * (the library never initializes MPI itself; under mpirun the caller does,
 * tested by tests/scripts/test_mpi.py), whose collectives are no-ops and
 * whose abort returns, so the caller reports its error as usual.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perfcast/dist.h"

static void test_group_of_one(void **state) {
    (void)state;
    pc_dist *d = NULL;
    pc_error e;
    pc_error_clear(&e);
    assert_int_equal(pc_dist_open(&d, &e), PC_OK);
    assert_non_null(d);
    assert_int_equal(pc_dist_size(d), 1);
    assert_int_equal(pc_dist_rank(d), 0);
    float f[3] = {1, 2, 3};
    double g[2] = {4, 5};
    pc_dist_sum_f32(d, f, 3);
    pc_dist_sum_f64(d, g, 2);
    pc_dist_max_f64(d, g, 2);
    assert_true(f[0] == 1 && f[2] == 3 && g[0] == 4 && g[1] == 5);
    assert_int_equal(pc_dist_any(d, 0), 0);
    assert_int_equal(pc_dist_any(d, 7), 1);
    char *all = NULL;
    assert_int_equal(pc_dist_gather_text(d, "a,1\n", &all, &e), PC_OK);
    assert_string_equal(all, "a,1\n");
    free(all);
    /* a timeout and the barrier and agreement of one rank */
    assert_true(pc_dist_timeout(d) == 0);
    pc_dist_set_timeout(d, 2.5, NULL, NULL);
    assert_true(pc_dist_timeout(d) == 2.5);
    pc_dist_set_timeout(d, -1, NULL, NULL);
    assert_true(pc_dist_timeout(d) == 0);
    pc_dist_barrier(d);
    assert_int_equal(pc_dist_agree(d, "test", "hidden=16|layers=2", &e), PC_OK);
    pc_dist_abort(d); /* a group of one: returns, nothing exits */
    pc_dist_close(d);
    pc_dist_close(NULL);
    /* NULL is one process too */
    assert_int_equal(pc_dist_size(NULL), 1);
    assert_int_equal(pc_dist_rank(NULL), 0);
    pc_dist_abort(NULL);
    pc_dist_barrier(NULL);
    pc_dist_set_timeout(NULL, 1, NULL, NULL);
    assert_true(pc_dist_timeout(NULL) == 0);
    assert_int_equal(pc_dist_agree(NULL, "test", "x=1", &e), PC_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_of_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
