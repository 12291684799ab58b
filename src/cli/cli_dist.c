/*
 * MPI for the commands that run over ranks (train, eval, predict). The
 * library never initializes MPI (perfcast/dist.h): the command does, when it
 * was built with MPI and started by an MPI launcher, and ends the job when a
 * rank fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

int pc_cli_mpi_timeout(const char *cmd, const char *arg, double *out) {
    char *end = NULL;
    double v = strtod(arg, &end);
    if (!*arg || !end || *end || !(v >= 0) || v > 1e9)
        return pc_cli_usage_error(cmd, "--mpi-timeout expects seconds >= 0 (0: no limit), got '%s'",
                                  arg);
    *out = v;
    return -1;
}

/* pc_dist_set_timeout's handler: the message, then the library ends the job. */
static void on_timeout(const char *msg, void *user) {
    (void)user;
    fprintf(stderr, "perfcast: error: %s (--mpi-timeout or PERFCAST_MPI_TIMEOUT)\n", msg);
    fflush(stderr);
    pc_cli_json_end_now(); /* under --json: the message as its JSON */
}

pc_status pc_cli_dist_open(int *argc, char ***argv, double timeout, pc_dist **out,
                           pc_error *err) {
    *out = NULL;
    if (timeout < 0) { /* no --mpi-timeout: PERFCAST_MPI_TIMEOUT, else the default */
        const char *t = getenv("PERFCAST_MPI_TIMEOUT");
        timeout = PC_CLI_MPI_TIMEOUT;
        if (t && *t) {
            char *end = NULL;
            double v = strtod(t, &end);
            if (!end || *end || !(v >= 0) || v > 1e9) {
                snprintf(err->msg, sizeof err->msg,
                         "PERFCAST_MPI_TIMEOUT='%.64s': expected seconds >= 0 (0: no limit)", t);
                return err->code = PC_ERR_ARG;
            }
            timeout = v;
        }
    }
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
    if (st != PC_OK) pc_cli_dist_close(NULL);
    else pc_dist_set_timeout(*out, timeout, on_timeout, NULL);
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
    pc_cli_json_end_now();
    pc_dist_abort(d); /* does not return for more than one rank */
    exit(PC_EXIT_FAIL);
}

/* FNV-1a over bytes, continued from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* "name=SIZE:HASH" of a file's content; "name=unreadable" when it cannot be read. */
static void file_id(const char *name, const char *path, char *s, size_t cap) {
    /* non-blocking open: a FIFO named as a model must not hang the agreement */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    FILE *f = NULL;
    if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode) || !(f = fdopen(fd, "rb"))) {
        if (fd >= 0) close(fd);
        snprintf(s, cap, "%s=unreadable", name);
        return;
    }
    uint64_t h = 1469598103934665603ULL;
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) h = fnv(h, buf, n);
    fclose(f);
    snprintf(s, cap, "%s=%lld:%016llx", name, (long long)sb.st_size, (unsigned long long)h);
}

pc_status pc_cli_dist_agree(const pc_dist *d, const char *cmd, const char *opts,
                            const char *const *models, int nmodels, const pc_dataset *ds,
                            int split, pc_error *err) {
    if (pc_dist_size(d) <= 1) return PC_OK;
    size_t cap = 4096 + (size_t)nmodels * 1100, len;
    char *s = malloc(cap);
    if (!s) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", cmd);
        return err->code = PC_ERR_NOMEM;
    }
    len = (size_t)snprintf(s, cap, "%s", opts);
    for (int i = 0; i < nmodels && len < cap; i++) {
        char name[32], id[1100];
        snprintf(name, sizeof name, "|model %d", i + 1);
        file_id(name + 1, models[i], id, sizeof id);
        len += (size_t)snprintf(s + len, cap - len, "|%s", id);
    }
    /* the split's files of every collection, by name and size (the dataset's sorted order) */
    for (int c = 0; ds && c < PC_NUM_COLLECTIONS; c++) {
        size_t n = pc_dataset_num_files(ds, c, split);
        for (size_t i = 0; i <= n; i++) {
            const char *p = i < n ? pc_dataset_file(ds, c, split, i) : "", *b = strrchr(p, '/');
            b = b ? b + 1 : p;
            if (len + strlen(b) + 128 >= cap) {
                char *ns = realloc(s, 2 * cap + strlen(b) + 128);
                if (!ns) break;
                s = ns, cap = 2 * cap + strlen(b) + 128;
            }
            struct stat sb;
            if (i < n)
                len += (size_t)snprintf(s + len, cap - len, "|%s/%s=%lld bytes",
                                        pc_collection_name(c), b,
                                        stat(p, &sb) ? -1LL : (long long)sb.st_size);
            else
                len += (size_t)snprintf(s + len, cap - len, "|%s %s files=%zu",
                                        pc_collection_name(c), pc_split_name(split), n);
        }
    }
    pc_status st = pc_dist_agree(d, cmd, s, err);
    free(s);
    return st;
}
