/* pc_dist: MPI when built with it and launched by mpirun, else a group of one. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PC_HAVE_MPI
#include <mpi.h>
#endif

#include "common/util.h"
#include "perfcast/dist.h"

struct pc_dist {
    int rank, size;
    int mpi; /* this handle initialized MPI and must finalize it */
};

int pc_dist_available(void) {
#ifdef PC_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

/* Started by an MPI launcher? (Open MPI, MPICH/Hydra, PMIx) */
static int launched_by_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

pc_status pc_dist_open(int *argc, char ***argv, pc_dist **out, pc_error *err) {
    *out = NULL;
    pc_dist *d = calloc(1, sizeof *d);
    if (!d) return pc_fail(err, PC_ERR_NOMEM, "dist: out of memory");
    d->size = 1;
    if (launched_by_mpirun()) {
#ifdef PC_HAVE_MPI
        int inited = 0;
        MPI_Initialized(&inited);
        if (!inited) {
            if (MPI_Init(argc, argv) != MPI_SUCCESS) {
                free(d);
                return pc_fail(err, PC_ERR_IO, "dist: MPI_Init failed");
            }
            d->mpi = 1;
        }
        /* errors in collectives abort the job rather than hang it */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &d->size);
#else
        (void)argc;
        (void)argv;
        const char *n = getenv("OMPI_COMM_WORLD_SIZE");
        if (n && atoi(n) > 1) {
            free(d);
            return pc_fail(err, PC_ERR_UNSUPPORTED, "dist: started by mpirun with %s ranks, but "
                           "this perfcast was built without MPI (install libopenmpi-dev and "
                           "rebuild)", n);
        }
#endif
    }
    *out = d;
    return PC_OK;
}

void pc_dist_close(pc_dist *d) {
    if (!d) return;
#ifdef PC_HAVE_MPI
    if (d->mpi) MPI_Finalize();
#endif
    free(d);
}

int pc_dist_rank(const pc_dist *d) { return d ? d->rank : 0; }
int pc_dist_size(const pc_dist *d) { return d ? d->size : 1; }

/* MPI counts are int: large buffers go in pieces. */
#define PC_DIST_CHUNK (1 << 28)

void pc_dist_sum_f32(const pc_dist *d, float *buf, size_t n) {
    if (!d || d->size <= 1) return;
#ifdef PC_HAVE_MPI
    for (size_t o = 0; o < n; o += PC_DIST_CHUNK) {
        int c = (int)(n - o < PC_DIST_CHUNK ? n - o : PC_DIST_CHUNK);
        MPI_Allreduce(MPI_IN_PLACE, buf + o, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
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
        MPI_Allreduce(MPI_IN_PLACE, buf + o, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
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
        MPI_Allreduce(MPI_IN_PLACE, buf + o, c, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
#else
    (void)buf;
    (void)n;
#endif
}

int pc_dist_any(const pc_dist *d, int flag) {
    if (!d || d->size <= 1) return flag != 0;
#ifdef PC_HAVE_MPI
    int in = flag != 0, outv = 0;
    MPI_Allreduce(&in, &outv, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return outv;
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
    if (len > (size_t)PC_DIST_CHUNK) return pc_fail(err, PC_ERR_RANGE, "dist: text too large");
    int n = (int)len, *lens = NULL, *offs = NULL;
    char *buf = NULL;
    if (d->rank == 0) {
        lens = calloc((size_t)d->size, sizeof *lens);
        offs = calloc((size_t)d->size, sizeof *offs);
        if (!lens || !offs) pc_dist_abort(d, "out of memory gathering results");
    }
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    if (d->rank == 0) {
        for (int r = 0; r < d->size; r++) {
            offs[r] = (int)total;
            total += (size_t)lens[r];
        }
        if (total > (size_t)PC_DIST_CHUNK) pc_dist_abort(d, "gathered results too large");
        buf = malloc(total + 1);
        if (!buf) pc_dist_abort(d, "out of memory gathering results");
    }
    MPI_Gatherv(mine, n, MPI_CHAR, buf, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (buf) buf[total] = 0;
    free(lens);
    free(offs);
    *all = buf;
    return PC_OK;
#else
    (void)err;
    return PC_OK;
#endif
}

void pc_dist_abort(const pc_dist *d, const char *msg) {
    fprintf(stderr, "perfcast (rank %d of %d): %s\n", pc_dist_rank(d), pc_dist_size(d), msg);
    fflush(stderr);
#ifdef PC_HAVE_MPI
    if (d && d->size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    exit(1);
}
