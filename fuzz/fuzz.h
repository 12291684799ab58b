/*
 * Fuzz target declaration. Built with -DPC_FUZZ=ON under clang, each
 * fuzz_<name>.c is its own libFuzzer binary; in the normal build all targets
 * link into fuzz_replay, which replays fuzz/corpus/<name>/ (see replay.c).
 */
#ifndef PC_FUZZ_H
#define PC_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A broken promise is a crash, so the fuzzer reports it; say which one. */
#define check(cond) pc_fuzz_check((cond), #cond, __FILE__, __LINE__)
static inline void pc_fuzz_check(int ok, const char *what, const char *file, int line) {
    if (ok) return;
    fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    abort();
}

#ifdef PC_FUZZ_REPLAY
#define PC_FUZZ_TARGET(name)                                   \
    int pc_fuzz_##name(const uint8_t *data, size_t size);      \
    int pc_fuzz_##name(const uint8_t *data, size_t size)
#else
#define PC_FUZZ_TARGET(name)                                              \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);         \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#endif

#endif
