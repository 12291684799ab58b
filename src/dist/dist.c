/* pc_dist: the ranks of an MPI job the caller initialized, else a group of one. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#ifdef PC_HAVE_MPI
#include <mpi.h>
#endif

#include "common/util.h"
#include "perfcast/dist.h"

struct pc_dist {
    int rank, size;
    double timeout_s; /* a collective waiting longer ends the job (pc_dist_set_timeout) */
    pc_dist_timeout_fn on_timeout;
    void *user;
#ifdef PC_HAVE_MPI
    MPI_Comm comm; /* a duplicate of MPI_COMM_WORLD when size > 1 */
#endif
};

int pc_dist_available(void) {
#ifdef PC_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

pc_status pc_dist_open(pc_dist **out, pc_error *err) {
    *out = NULL;
    pc_dist *d = calloc(1, sizeof *d);
    if (!d) return pc_fail(err, PC_ERR_NOMEM, "dist: out of memory");
    d->size = 1;
    d->timeout_s = PC_DIST_TIMEOUT_DEFAULT;
#ifdef PC_HAVE_MPI
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized) {
        free(d);
        return pc_fail(err, PC_ERR_ARG, "dist: MPI was already finalized");
    }
    int size = 1;
    if (inited) MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) {
        /* our own communicator: the caller's MPI_COMM_WORLD keeps its error
           handler, and our collectives never match the caller's messages */
        if (MPI_Comm_dup(MPI_COMM_WORLD, &d->comm) != MPI_SUCCESS) {
            free(d);
            return pc_fail(err, PC_ERR_IO, "dist: MPI_Comm_dup failed");
        }
        /* errors in collectives abort the job rather than hang it */
        MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_ARE_FATAL);
        MPI_Comm_rank(d->comm, &d->rank);
        MPI_Comm_size(d->comm, &d->size);
    }
#endif
    *out = d;
    return PC_OK;
}

void pc_dist_close(pc_dist *d) {
    if (!d) return;
#ifdef PC_HAVE_MPI
    if (d->size > 1) MPI_Comm_free(&d->comm);
#endif
    free(d);
}

int pc_dist_rank(const pc_dist *d) { return d ? d->rank : 0; }
int pc_dist_size(const pc_dist *d) { return d ? d->size : 1; }

/* MPI counts are int: large buffers go in pieces. */
#define PC_DIST_CHUNK (1 << 28)

pc_status pc_dist_set_timeout(pc_dist *d, double seconds, pc_dist_timeout_fn on_timeout,
                              void *user, pc_error *err) {
    if (!d) return pc_fail(err, PC_ERR_ARG, "dist: NULL group");
    if (!(seconds > 0) || seconds > 1e7)
        return pc_fail(err, PC_ERR_ARG, "dist: timeout %g s, expected 0 < seconds <= 1e7",
                       seconds);
    d->timeout_s = seconds;
    d->on_timeout = on_timeout;
    d->user = user;
    return PC_OK;
}

#ifdef PC_HAVE_MPI
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/*
 * An in-place allreduce that cannot wait forever: started non-blocking and
 * polled, spinning for the first 10 ms (a training step's exchange, and the
 * wait for a slightly slower rank, take about that), then sleeping 1 ms
 * between polls, so a rank waiting long does not burn a core and a step pays
 * at most ~1 ms more. After d->timeout_s without completion (a rank stopped, hung or
 * lost) the job ends: the caller's on_timeout reports it, then MPI_Abort.
 */
static void allreduce(const pc_dist *d, void *buf, int count, MPI_Datatype t, MPI_Op op,
                      const char *what) {
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, buf, count, t, op, d->comm, &req);
    double t0 = now_s();
    for (;;) {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        double el = now_s() - t0;
        if (el > d->timeout_s) {
            if (d->on_timeout) d->on_timeout(d->user, what, d->timeout_s);
            MPI_Abort(d->comm, 1);
            return;
        }
        if (el > 0.010) {
            struct timespec z = {0, 1000000};
            nanosleep(&z, NULL);
        }
    }
}
#endif

void pc_dist_sum_f32(const pc_dist *d, float *buf, size_t n) {
    if (!d || d->size <= 1) return;
#ifdef PC_HAVE_MPI
    for (size_t o = 0; o < n; o += PC_DIST_CHUNK) {
        int c = (int)(n - o < PC_DIST_CHUNK ? n - o : PC_DIST_CHUNK);
        allreduce(d, buf + o, c, MPI_FLOAT, MPI_SUM, "a sum of gradients or metrics");
    }
#else
    (void)buf;
    (void)n;
#endif
}

void pc_dist_sum_f64(const pc_dist *d, double *buf, size_t n) {
    if (!d || d->size <= 1) return;
#ifdef PC_HAVE_MPI
    for (size_t o = 0; o < n; o += PC_DIST_CHUNK) {
        int c = (int)(n - o < PC_DIST_CHUNK ? n - o : PC_DIST_CHUNK);
        allreduce(d, buf + o, c, MPI_DOUBLE, MPI_SUM, "a sum");
    }
#else
    (void)buf;
    (void)n;
#endif
}

void pc_dist_max_f64(const pc_dist *d, double *buf, size_t n) {
    if (!d || d->size <= 1) return;
#ifdef PC_HAVE_MPI
    for (size_t o = 0; o < n; o += PC_DIST_CHUNK) {
        int c = (int)(n - o < PC_DIST_CHUNK ? n - o : PC_DIST_CHUNK);
        allreduce(d, buf + o, c, MPI_DOUBLE, MPI_MAX, "a maximum");
    }
#else
    (void)buf;
    (void)n;
#endif
}

int pc_dist_any(const pc_dist *d, int flag) {
    if (!d || d->size <= 1) return flag != 0;
#ifdef PC_HAVE_MPI
    int v = flag != 0;
    allreduce(d, &v, 1, MPI_INT, MPI_MAX, "an agreement on a flag");
    return v;
#else
    return flag != 0;
#endif
}

pc_status pc_dist_gather_text(const pc_dist *d, const char *mine, char **all, pc_error *err) {
    *all = NULL;
    size_t len = strlen(mine);
    if (!d || d->size <= 1) {
        *all = malloc(len + 1);
        if (!*all) return pc_fail(err, PC_ERR_NOMEM, "dist: out of memory");
        memcpy(*all, mine, len + 1);
        return PC_OK;
    }
#ifdef PC_HAVE_MPI
    /* a failure here on some ranks leaves the others in the gather: the
       caller ends the job (pc_dist_abort) as after any one-rank failure */
    if (len > (size_t)PC_DIST_CHUNK) return pc_fail(err, PC_ERR_RANGE, "dist: text too large");
    int n = (int)len, *lens = NULL, *offs = NULL;
    char *buf = NULL;
    if (d->rank == 0) {
        lens = calloc((size_t)d->size, sizeof *lens);
        offs = calloc((size_t)d->size, sizeof *offs);
        if (!lens || !offs) {
            free(lens);
            free(offs);
            return pc_fail(err, PC_ERR_NOMEM, "dist: out of memory gathering results");
        }
    }
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, d->comm);
    size_t total = 0;
    pc_status st = PC_OK;
    if (d->rank == 0) {
        for (int r = 0; r < d->size; r++) {
            offs[r] = (int)total;
            total += (size_t)lens[r];
        }
        if (total > (size_t)PC_DIST_CHUNK)
            st = pc_fail(err, PC_ERR_RANGE, "dist: gathered results too large (%zu bytes)", total);
        else if (!(buf = malloc(total + 1)))
            st = pc_fail(err, PC_ERR_NOMEM, "dist: out of memory gathering results");
    }
    if (!st) MPI_Gatherv(mine, n, MPI_CHAR, buf, lens, offs, MPI_CHAR, 0, d->comm);
    if (buf) buf[total] = 0;
    free(lens);
    free(offs);
    *all = buf;
    return st;
#else
    (void)err;
    return PC_OK;
#endif
}

void pc_dist_abort(const pc_dist *d) {
#ifdef PC_HAVE_MPI
    if (d && d->size > 1) MPI_Abort(d->comm, 1);
#else
    (void)d;
#endif
}
