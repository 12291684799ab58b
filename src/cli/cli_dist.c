/*
 * MPI for the commands that run over ranks (train, eval, predict). The
 * library never initializes MPI (perfcast/dist.h): the command does, when it
 * was built with MPI and started by an MPI launcher, and ends the job when a
 * rank fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#ifdef PC_HAVE_MPI
#include <mpi.h>
#endif

#include "cli.h"

#ifdef PC_HAVE_MPI
static int mpi_ours; /* this command initialized MPI and finalizes it */
#endif

/* Started by an MPI launcher? (Open MPI, MPICH/Hydra, PMIx) */
static int launched_by_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* A collective waited too long: said once, before the library ends the job. */
static void on_timeout(void *user, const char *what, double seconds) {
    const pc_dist *d = user;
    fprintf(stderr, "perfcast (rank %d of %d): error: %s across the ranks did not complete in "
                    "%g s: another rank is stopped, hung or gone; ending the job "
                    "(PERFCAST_MPI_TIMEOUT sets the limit)\n",
            pc_dist_rank(d), pc_dist_size(d), what, seconds);
    fflush(stderr);
}

pc_status pc_cli_dist_open(int *argc, char ***argv, pc_dist **out, pc_error *err) {
    *out = NULL;
    if (launched_by_mpirun()) {
#ifdef PC_HAVE_MPI
        int inited = 0;
        MPI_Initialized(&inited);
        if (!inited) {
            if (MPI_Init(argc, argv) != MPI_SUCCESS) {
                snprintf(err->msg, sizeof err->msg, "dist: MPI_Init failed");
                return err->code = PC_ERR_IO;
            }
            mpi_ours = 1;
        }
#else
        (void)argc;
        (void)argv;
        const char *n = getenv("OMPI_COMM_WORLD_SIZE");
        if (n && atoi(n) > 1) {
            snprintf(err->msg, sizeof err->msg,
                     "dist: started by mpirun with %s ranks, but this perfcast was built without "
                     "MPI (install libopenmpi-dev and rebuild)",
                     n);
            return err->code = PC_ERR_UNSUPPORTED;
        }
#endif
    }
    pc_status st = pc_dist_open(out, err);
    /* PERFCAST_MPI_TIMEOUT (seconds, default the library's 300): a collective that
       waits longer (a stopped rank) ends the job with this message */
    const char *t = getenv("PERFCAST_MPI_TIMEOUT");
    if (st == PC_OK && t && *t) {
        char *end = NULL;
        double v = strtod(t, &end);
        if (end && !*end) {
            st = pc_dist_set_timeout(*out, v, on_timeout, *out, err);
        } else {
            snprintf(err->msg, sizeof err->msg, "PERFCAST_MPI_TIMEOUT='%s': expected seconds", t);
            st = err->code = PC_ERR_ARG;
        }
    } else if (st == PC_OK) {
        st = pc_dist_set_timeout(*out, PC_DIST_TIMEOUT_DEFAULT, on_timeout, *out, err);
    }
    if (st != PC_OK) {
        pc_dist_close(*out);
        *out = NULL;
        pc_cli_dist_close(NULL);
    }
    return st;
}

void pc_cli_dist_close(pc_dist *d) {
    pc_dist_close(d);
#ifdef PC_HAVE_MPI
    if (mpi_ours) MPI_Finalize();
    mpi_ours = 0;
#endif
}

void pc_cli_dist_abort(const pc_dist *d, const char *msg) {
    fprintf(stderr, "perfcast (rank %d of %d): %s\n", pc_dist_rank(d), pc_dist_size(d), msg);
    fflush(stderr);
    pc_dist_abort(d); /* does not return for more than one rank */
    exit(PC_EXIT_FAIL);
}
