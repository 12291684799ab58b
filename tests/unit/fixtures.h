/*
 * The shared fixtures of the unit tests: $PC_SHARED_DIR/fixtures/<sub>
 * (tests/CMakeLists.txt sets PC_SHARED_DIR). Tests that need them skip when
 * they are absent, and the program then exits 77 so CTest reports it as
 * skipped, never as passed.
 */
#ifndef PC_TEST_FIXTURES_H
#define PC_TEST_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>

/* Writes $PC_SHARED_DIR/fixtures/<sub>/<name> into buf (name may be "" for
   the folder itself) and returns 1 if that path can be opened, else 0. */
static inline int pc_test_fixture(char *buf, size_t cap, const char *sub, const char *name) {
    const char *shared = getenv("PC_SHARED_DIR");
    if (!shared || !*shared) return 0;
    int n = snprintf(buf, cap, "%s/fixtures/%s%s%s", shared, sub, *name ? "/" : "", name);
    if (n < 0 || (size_t)n >= cap) return 0;
    FILE *f = fopen(buf, "rb"); /* a folder opens read-only on Linux too */
    if (!f) return 0;
    fclose(f);
    return 1;
}

#endif /* PC_TEST_FIXTURES_H */
