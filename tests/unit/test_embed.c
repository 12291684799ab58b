/*
 * The library leaves an embedder's process alone (issue #13): training,
 * evaluation and prediction with their own `threads` do not change the
 * caller's OpenMP thread count, and print nothing to stdout or stderr (the
 * caller's log callback gets the lines).
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "perfcast/dataset.h"
#include "perfcast/synth.h"
#include "perfcast/train.h"

static void count_line(void *user, const char *line) {
    (void)line;
    (*(int *)user)++;
}

/* What the library calls report; checked after stdout/stderr are back. */
typedef struct run {
    pc_status train, eval, open, load, score;
    int lines, threads_after[3];
    pc_error e;
} run;

static void run_all(const char *data, const char *model, run *r) {
    pc_train_opts o = pc_train_opts_default();
    o.data_dir = data;
    o.collection = "tile:xla";
    o.out_path = model;
    o.epochs = 1;
    o.threads = 1;
    o.hidden = 8;
    pc_train_result tr = {.struct_size = sizeof tr};
    r->train = pc_train_run(&o, count_line, NULL, &r->lines, &tr, &r->e);
    r->threads_after[0] = omp_get_max_threads();
    if (r->train) return;
    pc_eval_result ev = {.struct_size = sizeof ev};
    r->eval = pc_eval_run(model, data, "valid", 2, &ev, &r->e);
    r->threads_after[1] = omp_get_max_threads();
    pc_predictor *p = NULL;
    pc_dataset *ds = NULL;
    pc_graph *g = NULL;
    double *scores = NULL;
    r->open = pc_predictor_load(model, 1, &p, &r->e);
    if (!r->open) r->open = pc_dataset_open(data, &ds, &r->e);
    if (!r->open) {
        int coll = pc_predictor_collection(p), sp = pc_split_find("valid");
        pc_load_opts lo = pc_load_opts_default();
        r->load = pc_dataset_num_files(ds, coll, sp) == 0
                      ? PC_ERR_NOTFOUND
                      : pc_graph_load(pc_dataset_file(ds, coll, sp, 0), &lo, &g, &r->e);
    }
    if (!r->open && !r->load) {
        scores = calloc((size_t)pc_graph_num_configs(g), sizeof *scores);
        r->score = scores ? pc_predictor_score(p, g, scores, &r->e) : PC_ERR_NOMEM;
    }
    r->threads_after[2] = omp_get_max_threads();
    free(scores);
    pc_graph_free(g);
    pc_dataset_close(ds);
    pc_predictor_free(p);
}

static void test_process_left_alone(void **state) {
    (void)state;
    const char *tmp = getenv("PC_TEST_TMP");
    char data[512], model[600], out[600];
    snprintf(data, sizeof data, "%s/embed_data", tmp ? tmp : "/tmp");
    snprintf(model, sizeof model, "%s/embed_tile.st", tmp ? tmp : "/tmp");
    snprintf(out, sizeof out, "%s/embed_output.txt", tmp ? tmp : "/tmp");
    pc_error e;
    pc_error_clear(&e);
    pc_synth_opts so = pc_synth_opts_default();
    so.scale = PC_SYNTH_TINY;
    so.seed = 5;
    so.threads = 2;
    assert_int_equal(pc_synth_write(data, &so, NULL, &e), PC_OK);

    omp_set_num_threads(3); /* the caller's own setting */
    run r;
    memset(&r, 0, sizeof r);
    /* stdout and stderr go to a file while the library runs */
    fflush(stdout);
    fflush(stderr);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), o1 = dup(1), o2 = dup(2);
    assert_true(fd >= 0 && o1 >= 0 && o2 >= 0);
    dup2(fd, 1);
    dup2(fd, 2);
    run_all(data, model, &r);
    fflush(stdout);
    fflush(stderr);
    dup2(o1, 1);
    dup2(o2, 2);
    close(o1);
    close(o2);
    close(fd);

    if (r.train || r.eval || r.open || r.load || r.score) print_error("%s\n", r.e.msg);
    assert_int_equal(r.train, PC_OK);
    assert_int_equal(r.eval, PC_OK);
    assert_int_equal(r.open, PC_OK);
    assert_int_equal(r.load, PC_OK);
    assert_int_equal(r.score, PC_OK);
    assert_true(r.lines > 0); /* the log went to the callback */
    for (int i = 0; i < 3; i++) assert_int_equal(r.threads_after[i], 3);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_size, 0); /* printed nothing */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_process_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
