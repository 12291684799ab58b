/*
 * Multi-process runs over MPI (Open MPI): `mpirun -np N perfcast train ...`
 * trains data-parallel, `perfcast eval` / `predict` split their graphs over
 * the ranks. Pass the handle in pc_train_opts.dist (and to
 * pc_eval_run_dist); NULL means one process.
 *
 * The caller owns MPI: it calls MPI_Init (or MPI_Init_thread) before
 * pc_dist_open and MPI_Finalize after pc_dist_close; the library never
 * initializes or finalizes MPI, reads no launcher environment and leaves
 * MPI_COMM_WORLD's settings alone (it works on a duplicate). The perfcast
 * command initializes MPI when it was built with MPI and started by an MPI
 * launcher. pc_dist_open gives a group of one, which behaves exactly as a
 * plain single process, when MPI is not initialized, has one rank, or the
 * library was built without MPI (pc_dist_available() == 0); it fails only
 * when MPI was already finalized.
 *
 * Errors: calls that run over the ranks return their error on the rank
 * that hit it, which may leave the other ranks waiting in a collective (a
 * rank cannot tell the others that it failed once they are waiting). On an
 * error in a group of more than one, end the job with pc_dist_abort after
 * reporting the error.
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

/* Collective: every rank calls it (and pc_dist_close) at the same point. */
PC_API pc_status pc_dist_open(pc_dist **out, pc_error *err);
PC_API void pc_dist_close(pc_dist *d);     /* NULL ok; before MPI_Finalize */
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
 * Rank 0 gets PC_ERR_NOMEM / PC_ERR_RANGE when the texts do not fit; the
 * other ranks may then wait in the gather (see Errors above).
 */
PC_API pc_status pc_dist_gather_text(const pc_dist *d, const char *mine, char **all, pc_error *err);
/*
 * Ends every rank of a group of more than one (MPI_Abort, error code 1), so
 * that ranks waiting in a collective do not hang; it does not return there.
 * For a group of one (and NULL) it does nothing and returns: the caller
 * goes on to report its error as usual. Prints nothing.
 */
PC_API void pc_dist_abort(const pc_dist *d);
/*
 * Liveness: a collective of pc_dist_sum_f32/_f64, _max_f64 and _any that has
 * not completed after `seconds` (a rank stopped, hung or lost: the others
 * would wait forever) calls on_timeout(user, what, seconds) on the ranks
 * still waiting, for the caller to report it, then ends the job
 * (MPI_Abort). Default PC_DIST_TIMEOUT_DEFAULT seconds, no callback. Waiting
 * ranks poll with growing sleeps instead of spinning. 0 < seconds <= 1e7.
 */
#define PC_DIST_TIMEOUT_DEFAULT 300.0
typedef void (*pc_dist_timeout_fn)(void *user, const char *what, double seconds);
PC_API pc_status pc_dist_set_timeout(pc_dist *d, double seconds, pc_dist_timeout_fn on_timeout,
                                     void *user, pc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PERFCAST_DIST_H */
