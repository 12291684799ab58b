/* Thread counts per call (threads.h). */
#include <omp.h>

#include "common/threads.h"

/* 0: no call on this thread has set a count. Thread-local, and restored by
   pc_threads_end, so it never outlives a call nor leaks into another thread. */
static _Thread_local int call_threads;

int pc_threads_begin(int threads) {
    int saved = call_threads;
    if (threads > 0) call_threads = threads;
    return saved;
}

void pc_threads_end(int saved) { call_threads = saved; }

int pc_threads(void) { return call_threads > 0 ? call_threads : omp_get_max_threads(); }
