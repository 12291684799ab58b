/* pc_dist: the ranks of an MPI job the caller initialized, else a group of one. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PC_HAVE_MPI
#include <mpi.h>
#endif

#include "common/util.h"
#include "perfcast/dist.h"

struct pc_dist {
    int rank, size;
    double timeout; /* seconds a collective may wait; 0: no limit */
    void (*on_timeout)(const char *msg, void *user);
    void *on_timeout_user;
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
    pc_dist_barrier(d); /* a stalled rank ends the job here, not in MPI_Finalize */
#ifdef PC_HAVE_MPI
    if (d->size > 1) MPI_Comm_free(&d->comm);
#endif
    free(d);
}

int pc_dist_rank(const pc_dist *d) { return d ? d->rank : 0; }
int pc_dist_size(const pc_dist *d) { return d ? d->size : 1; }

/* MPI counts are int: large buffers go in pieces. */
#define PC_DIST_CHUNK (1 << 28)
#define PC_DIST_SPIN_S 2e-2

#ifdef PC_HAVE_MPI
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The collective `op` waited longer than pc_dist.timeout: the job ends. */
static void timed_out(const pc_dist *d, const char *op, double waited) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "dist: rank %d of %d waited %.1f s in %s for the other ranks, longer than the "
             "collective timeout of %g s (pc_dist_set_timeout); another rank stalled, was "
             "stopped or runs far behind: ending the job",
             d->rank, d->size, waited, op, d->timeout);
    if (d->on_timeout) d->on_timeout(msg, d->on_timeout_user);
    MPI_Abort(d->comm, 1);
}

/*
 * Completes a non-blocking collective. The first PC_DIST_SPIN_S (20 ms) polls
 * without a pause, as the blocking collectives did (a training step's
 * allreduce usually completes in it; napping sooner cost ~5% of a small
 * 2-rank run, since Open MPI advances a non-blocking collective only inside
 * MPI_Test); then naps of
 * growing length, up to 1 ms, between polls, so a rank waiting for a slow or
 * stalled one uses little CPU; past pc_dist.timeout (if set) the job ends.
 */
static void wait_req(const pc_dist *d, MPI_Request *req, const char *op) {
    int done = 0;
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    const double t0 = now_s();
    long nap_ns = 0;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        const double waited = now_s() - t0;
        if (d->timeout > 0 && waited > d->timeout) timed_out(d, op, waited);
        if (waited < PC_DIST_SPIN_S) continue;
        nap_ns = nap_ns ? (nap_ns * 2 < 1000000 ? nap_ns * 2 : 1000000) : 10000;
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
    }
}

static void allreduce(const pc_dist *d, void *buf, size_t n, size_t elsize, MPI_Datatype type,
                      MPI_Op op, const char *what) {
    for (size_t o = 0; o < n; o += PC_DIST_CHUNK) {
        int c = (int)(n - o < PC_DIST_CHUNK ? n - o : PC_DIST_CHUNK);
        MPI_Request req;
        MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + o * elsize, c, type, op, d->comm, &req);
        wait_req(d, &req, what);
    }
}
#endif

void pc_dist_set_timeout(pc_dist *d, double seconds, void (*on_timeout)(const char *, void *),
                         void *user) {
    if (!d) return;
    d->timeout = seconds > 0 && seconds == seconds ? seconds : 0;
    d->on_timeout = on_timeout;
    d->on_timeout_user = user;
}

double pc_dist_timeout(const pc_dist *d) { return d ? d->timeout : 0; }

void pc_dist_sum_f32(const pc_dist *d, float *buf, size_t n) {
    if (!d || d->size <= 1) return;
#ifdef PC_HAVE_MPI
    allreduce(d, buf, n, sizeof *buf, MPI_FLOAT, MPI_SUM, "a sum (MPI_Iallreduce)");
#else
    (void)buf;
    (void)n;
#endif
}

void pc_dist_sum_f64(const pc_dist *d, double *buf, size_t n) {
    if (!d || d->size <= 1) return;
#ifdef PC_HAVE_MPI
    allreduce(d, buf, n, sizeof *buf, MPI_DOUBLE, MPI_SUM, "a sum (MPI_Iallreduce)");
#else
    (void)buf;
    (void)n;
#endif
}

void pc_dist_max_f64(const pc_dist *d, double *buf, size_t n) {
    if (!d || d->size <= 1) return;
#ifdef PC_HAVE_MPI
    allreduce(d, buf, n, sizeof *buf, MPI_DOUBLE, MPI_MAX, "a maximum (MPI_Iallreduce)");
#else
    (void)buf;
    (void)n;
#endif
}

int pc_dist_any(const pc_dist *d, int flag) {
    if (!d || d->size <= 1) return flag != 0;
#ifdef PC_HAVE_MPI
    int v = flag != 0;
    allreduce(d, &v, 1, sizeof v, MPI_INT, MPI_MAX, "a flag of any rank (MPI_Iallreduce)");
    return v;
#else
    return flag != 0;
#endif
}

void pc_dist_barrier(const pc_dist *d) {
    if (!d || d->size <= 1) return;
#ifdef PC_HAVE_MPI
    MPI_Request req;
    MPI_Ibarrier(d->comm, &req);
    wait_req(d, &req, "a barrier (MPI_Ibarrier)");
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
    MPI_Request req;
    MPI_Igather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, d->comm, &req);
    wait_req(d, &req, "a gather of text lengths (MPI_Igather)");
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
    if (!st) {
        MPI_Igatherv(mine, n, MPI_CHAR, buf, lens, offs, MPI_CHAR, 0, d->comm, &req);
        wait_req(d, &req, "a gather of text (MPI_Igatherv)");
    }
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

#ifdef PC_HAVE_MPI
static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* Does the "k=v|k=v" text hold a field with key (klen bytes)? */
static int has_key(const char *text, const char *key, size_t klen) {
    for (const char *f = text; *f;) {
        size_t l = strcspn(f, "|"), kl = strcspn(f, "=|");
        if (kl == klen && !memcmp(f, key, klen)) return 1;
        f += l + (f[l] == '|');
    }
    return 0;
}

/* The first differing fields a (rank 0's) and b (rank r's), as a message. */
static void name_field(const char *what, int r, const char *a, size_t la, const char *b,
                       size_t lb, const char *line0, const char *line, pc_error *err) {
    size_t ka = strcspn(a, "=|"), kb = strcspn(b, "=|");
    int la3 = (int)(la < 300 ? la : 300), lb3 = (int)(lb < 300 ? lb : 300);
    if (la && (ka != kb || memcmp(a, b, ka)) && !has_key(line, a, ka))
        pc_fail(err, PC_ERR_ARG, "%s: the ranks disagree: rank 0 has %.*s, rank %d has none",
                what, la3, a, r);
    else if (lb && (ka != kb || memcmp(a, b, ka)) && !has_key(line0, b, kb))
        pc_fail(err, PC_ERR_ARG, "%s: the ranks disagree: rank %d has %.*s, rank 0 has none",
                what, r, lb3, b);
    else
        pc_fail(err, PC_ERR_ARG, "%s: the ranks disagree: rank %d has %.*s, rank 0 has %.*s",
                what, r, lb3, b, la3, a);
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n,
             " (every rank needs the same options, model and data files)");
}

/* Rank 0: the first rank whose line differs from rank 0's, and its first differing field. */
static void describe(const char *what, char *all, int W, pc_error *err) {
    char *nl = strchr(all, '\n');
    if (!nl) return;
    *nl = 0;
    const char *line0 = all;
    char *other = nl + 1;
    for (int r = 1; r < W && other && *other; r++) {
        nl = strchr(other, '\n');
        if (nl) *nl = 0;
        const char *line = other;
        other = nl ? nl + 1 : NULL;
        if (!strcmp(line0, line)) continue;
        const char *a = line0, *b = line;
        while (*a || *b) {
            size_t la = strcspn(a, "|"), lb = strcspn(b, "|");
            if (la != lb || memcmp(a, b, la)) {
                name_field(what, r, a, la, b, lb, line0, line, err);
                return;
            }
            a += la + (a[la] == '|');
            b += lb + (b[lb] == '|');
        }
    }
}
#endif

pc_status pc_dist_agree(const pc_dist *d, const char *what, const char *text, pc_error *err) {
    if (!d || d->size <= 1) return PC_OK;
    if (!what) what = "dist";
#ifdef PC_HAVE_MPI
    /* equal everywhere iff the max and the min of each 32-bit half of the hash agree */
    uint64_t h = fnv1a(text);
    double v[4] = {(double)(h >> 32), (double)(h & 0xffffffffu), -(double)(h >> 32),
                   -(double)(h & 0xffffffffu)};
    pc_dist_max_f64(d, v, 4);
    if (v[0] == -v[2] && v[1] == -v[3]) return PC_OK;
    /* rank 0 gathers the texts (one line each) and names the first difference */
    size_t len = strlen(text);
    char *mine = malloc(len + 2), *all = NULL;
    char msg[PC_ERROR_MSG_MAX];
    pc_error local;
    pc_error_clear(&local);
    if (mine) {
        for (size_t i = 0; i < len; i++) mine[i] = text[i] == '\n' ? ' ' : text[i];
        mine[len] = '\n', mine[len + 1] = 0;
    }
    /* every rank joins the gather, a rank out of memory with an empty text */
    pc_status st = pc_dist_gather_text(d, mine ? mine : "\n", &all, &local);
    free(mine);
    pc_fail(&local, PC_ERR_ARG, "%s: the ranks disagree on their options, model or data "
            "(every rank needs the same)", what);
    if (d->rank == 0 && !st && all) describe(what, all, d->size, &local);
    free(all);
    /* every rank returns rank 0's message, whichever one ends the job first */
    memcpy(msg, local.msg, sizeof msg);
    msg[sizeof msg - 1] = 0;
    MPI_Request req;
    MPI_Ibcast(msg, (int)sizeof msg, MPI_CHAR, 0, d->comm, &req);
    wait_req(d, &req, "the broadcast of the ranks' difference (MPI_Ibcast)");
    msg[sizeof msg - 1] = 0;
    return pc_fail(err, PC_ERR_ARG, "%s", msg);
#else
    (void)text;
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
