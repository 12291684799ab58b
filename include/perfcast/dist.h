/*
 * Multi-process runs over MPI (Open MPI): `mpirun -np N perfcast train ...`
 * trains data-parallel, `perfcast eval` / `predict` split their graphs over
 * the ranks. A process not started by mpirun (or a build without MPI) is a
 * group of one and behaves exactly as before.
 *
 * pc_dist_open initializes MPI when the process was launched by an MPI
 * launcher (it looks for the launcher's environment: OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, PMIX_RANK) and pc_dist_close finalizes it. Pass the handle in
 * pc_train_opts.dist (and to pc_eval_run_dist); NULL means one process.
 */
#ifndef PERFCAST_DIST_H
#define PERFCAST_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/perfcast.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pc_dist pc_dist;

PC_API pc_status pc_dist_open(int *argc, char ***argv, pc_dist **out, pc_error *err);
PC_API void pc_dist_close(pc_dist *d); /* NULL ok */
PC_API int pc_dist_rank(const pc_dist *d); /* 0 for NULL */
PC_API int pc_dist_size(const pc_dist *d); /* 1 for NULL */
/* 1 when built with MPI support. */
PC_API int pc_dist_available(void);

/* In-place sums over all ranks (no-ops for one process). */
PC_API void pc_dist_sum_f32(const pc_dist *d, float *buf, size_t n);
PC_API void pc_dist_sum_f64(const pc_dist *d, double *buf, size_t n);
/* In-place elementwise maxima over all ranks. */
PC_API void pc_dist_max_f64(const pc_dist *d, double *buf, size_t n);
/* 1 on every rank when any rank passed a non-zero flag. */
PC_API int pc_dist_any(const pc_dist *d, int flag);
/*
 * Rank 0 receives every rank's text (concatenated in rank order) into a
 * malloc'ed string; other ranks get NULL. One process: a copy of its own.
 */
PC_API pc_status pc_dist_gather_text(const pc_dist *d, const char *mine, char **all, pc_error *err);
/* Prints "perfcast (rank R): MSG" to stderr and stops the whole job (exit 1 without MPI). */
PC_API void pc_dist_abort(const pc_dist *d, const char *msg);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_DIST_H */
