/*
 * The one size / count vocabulary of perfcast (docs/units.md): a number
 * ("4096", "1.5", "4e9") and an optional unit, case-insensitive:
 *   k M G T P        decimal: 1e3 1e6 1e9 1e12 1e15
 *   Ki Mi Gi Ti Pi   binary:  2^10 2^20 2^30 2^40 2^50
 * Byte sizes may end in B ("GB", "GiB"; "B" alone is bytes); a count may
 * use B alone for billions ("300B" tokens = 3e11).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* The multiplier of a unit (already lower-cased), 0 when unknown. is_bytes:
 * a trailing 'b' is the byte unit; else 'b' alone is a billion. */
static double unit_mul(const char *u, int is_bytes) {
    static const char prefixes[] = "kmgtp";
    size_t n = strlen(u);
    if (n == 0) return 1;
    if (is_bytes && u[n - 1] == 'b') n--; /* "kb", "gib", "b" */
    else if (!is_bytes && n == 1 && u[0] == 'b') return 1e9;
    if (n == 0) return 1;
    const char *p = strchr(prefixes, u[0]);
    if (!u[0] || !p) return 0;
    int e = (int)(p - prefixes) + 1;
    if (n == 1) return pow(1000.0, e);
    if (n == 2 && u[1] == 'i') return ldexp(1.0, 10 * e);
    return 0;
}

/* The value of s in the vocabulary; what: "byte size" / "count" for messages. */
static pc_status parse_unit(const char *s, int is_bytes, double *out, pc_error *err) {
    const char *what = is_bytes ? "a byte size like 1GiB, 512MB, 64k or 4e9"
                                : "a count like 4096, 8k (8000), 8Ki (8192), 4M or 1.5e13";
    if (!s || !*s) return pc_fail(err, PC_ERR_ARG, "expected %s, got an empty value", what);
    /* strtod also reads hex, inf, nan and leading blanks or signs: a plain
       decimal number only */
    if (!isdigit((unsigned char)s[0]) && s[0] != '.')
        return pc_fail(err, PC_ERR_ARG, "'%s' is not %s", s, what);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v) || memchr(s, 'x', (size_t)(end - s)) ||
        memchr(s, 'X', (size_t)(end - s)))
        return pc_fail(err, PC_ERR_ARG, "'%s' is not %s", s, what);
    char unit[8];
    size_t n = 0;
    while (*end && n + 1 < sizeof unit) unit[n++] = (char)tolower((unsigned char)*end++);
    unit[n] = '\0';
    double mul = *end ? 0 : unit_mul(unit, is_bytes);
    if (mul == 0)
        return pc_fail(err, PC_ERR_ARG,
                       is_bytes ? "'%s': unknown size unit (decimal kB MB GB TB PB or k M G T P, "
                                  "binary KiB MiB GiB TiB PiB or Ki Mi Gi Ti Pi, B)"
                                : "'%s': unknown count unit (decimal k M G T P, binary Ki Mi Gi "
                                  "Ti Pi, B = 1e9)",
                       s);
    double r = v * mul;
    if (!isfinite(r)) return pc_fail(err, PC_ERR_RANGE, "'%s' is too large", s);
    *out = r;
    return PC_OK;
}

pc_status pc_parse_bytes(const char *s, double *out, pc_error *err) {
    return parse_unit(s, 1, out, err);
}

pc_status pc_parse_count(const char *s, double *out, pc_error *err) {
    return parse_unit(s, 0, out, err);
}
