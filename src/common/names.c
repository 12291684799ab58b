/*
 * "Did you mean": the closest known name to a mistyped one, shared by the
 * CLI's commands and flags and the query requests' keys.
 */
#include <string.h>

#include "perfcast/perfcast.h"

/* Edit distance of a and b (insert, delete, substitute; an adjacent
 * transposition counts 1), capped at 9; longer than 40 characters counts 9. */
static int distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 40 || m > 40) return 9;
    int d[41][41];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;
            d[i][j] = c;
        }
    return d[n][m] < 9 ? d[n][m] : 9;
}

const char *pc_closest_name(const char *word, const char *const *names, size_t n) {
    if (!word || !names) return NULL;
    const char *best = NULL;
    int bd = 9, lim = (int)strlen(word) / 3;
    if (lim < 1) lim = 1;
    if (lim > 3) lim = 3;
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) continue;
        int d = distance(word, names[i]);
        if (d < bd) bd = d, best = names[i];
    }
    return bd <= lim ? best : NULL;
}
