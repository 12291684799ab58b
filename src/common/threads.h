/*
 * Thread counts per call. The library never changes the process's OpenMP
 * settings (no omp_set_num_threads): a public call that takes `threads`
 * brackets its work with pc_threads_begin / pc_threads_end, and every
 * parallel region inside it says num_threads(pc_threads()).
 *
 * The count is kept for the calling thread only (thread-local) and restored
 * when the call returns, so two calls on two threads of the caller, with
 * different counts, do not see each other, and nothing outlives the call.
 * Calls nest: an inner call with threads = 0 keeps the outer call's count.
 * Outside any call pc_threads() is OpenMP's default (omp_get_max_threads).
 *
 * Results never depend on the count (nn.h, "Determinism").
 */
#ifndef PC_THREADS_H
#define PC_THREADS_H

/* Sets this thread's count to `threads` when > 0 (0 keeps the current one);
   returns the previous state for pc_threads_end. */
int pc_threads_begin(int threads);
/* Restores the state pc_threads_begin returned. */
void pc_threads_end(int saved);
/* The count for num_threads(): this call's, else omp_get_max_threads(). */
int pc_threads(void);

#endif /* PC_THREADS_H */
