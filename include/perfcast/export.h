/*
 * PC_API marks every function of the public API (the headers in include/perfcast/).
 *
 * The library is compiled with -fvisibility=hidden, so a shared
 * libperfcast.so (cmake -DBUILD_SHARED_LIBS=ON) exports exactly these
 * functions and nothing of its internals. For a static libperfcast.a and for
 * programs that include the headers the attribute changes nothing.
 */
#ifndef PERFCAST_EXPORT_H
#define PERFCAST_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define PC_API __attribute__((visibility("default")))
#else
#define PC_API
#endif

#endif /* PERFCAST_EXPORT_H */
