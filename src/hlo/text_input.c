/*
 * Where HLO text is read from (text.h, pc_hlo_read_text_file): one file, an
 * XLA dump directory (--xla_dump_to=DIR: its *after_optimizations.txt
 * modules, name order), or a pattern in the last path component
 * ("DIR/" "*before_optimizations.txt": the files matching it, name order). The
 * modules of all files come back in one array; errors name the file.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "hlo/text.h"
#include "io/io_internal.h"

uint64_t pc_hlo_text_parse_bound(const char *buf, size_t len) {
    uint64_t parens = 0;
    for (const char *p = buf, *e = buf + len; p < e;) {
        const char *q = memchr(p, '(', (size_t)(e - p));
        if (!q) break;
        parens++;
        p = q + 1;
    }
    return (uint64_t)len * (1 + PC_HLO_TEXT_BYTES_PER_BYTE) + parens * PC_HLO_TEXT_BYTES_PER_PAREN;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* "PATH needs N in memory to read and parse it (...), more than the memory budget of B";
   held: what the files read before it hold (a dump directory's modules are kept together). */
static pc_status text_budget(const char *path, uint64_t need, uint64_t held, uint64_t max_memory,
                             int read, pc_error *err) {
    char how[220];
    const char *with = held ? ", with the modules of the files before it" : "";
    if (read)
        snprintf(how, sizeof how, " to read and parse it (up to %d bytes per '(' and %d per byte "
                 "of HLO text%s)", PC_HLO_TEXT_BYTES_PER_PAREN, 1 + PC_HLO_TEXT_BYTES_PER_BYTE,
                 with);
    else
        snprintf(how, sizeof how, " to read and parse it (%d bytes per byte of HLO text at "
                 "least%s)", 1 + PC_HLO_TEXT_BYTES_PER_BYTE, with);
    return pc_io_budget_check(sat_add(held, need), max_memory, path, how, err);
}

/* *held (may be NULL): grows by what the file's modules may hold once its text is freed. */
static pc_status read_one(const char *path, const pc_hlo_read_opts *o, uint64_t *held,
                          pc_hlo_module ***mods, int *nmods, pc_hlo_text_stats *stats,
                          pc_error *err) {
    const uint64_t max_memory = o->max_memory;
    const uint64_t before = held ? *held : 0;
    char *buf;
    size_t len;
    struct stat sb; /* a file too large to parse is refused before it is read */
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
        uint64_t size = (uint64_t)sb.st_size;
        uint64_t least = size > UINT64_MAX / (1 + PC_HLO_TEXT_BYTES_PER_BYTE)
                             ? UINT64_MAX
                             : size * (1 + PC_HLO_TEXT_BYTES_PER_BYTE);
        pc_status bst = text_budget(path, least, before, max_memory, 0, err);
        if (bst) return bst;
    }
    pc_status rd =
        pc_read_file_progress(path, SIZE_MAX - 1, o->progress, o->progress_user, &buf, &len, err);
    if (rd) return rd;
    const uint64_t bound = pc_hlo_text_parse_bound(buf, len);
    pc_status st = text_budget(path, bound, before, max_memory, 1, err);
    if (!st)
        st = pc_hlo_parse_text_progress(buf, len, path, o->progress, o->progress_user, mods, nmods,
                                        stats, err);
    free(buf);
    if (!st && held) *held = sat_add(before, bound > len ? bound - len : 0);
    return st;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* The regular files of dir whose names match pat, sorted; counts of other HLO-looking files in *other. */
static pc_status list_matching(const char *dir, const char *pat, char ***out, size_t *n, size_t other[3],
                               pc_error *err) {
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return pc_fail(err, PC_ERR_IO, "%s: cannot open the directory", dir);
    size_t cap = 0;
    pc_status st = PC_OK;
    struct dirent *e;
    while (st == PC_OK && (e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (nm[0] == '.') continue;
        if (fnmatch(pat, nm, 0) != 0) {
            if (pc_str_ends_with(nm, "before_optimizations.txt")) other[0]++;
            else if (pc_str_ends_with(nm, "after_optimizations.txt")) other[1]++;
            else if (pc_str_ends_with(nm, ".hlo") || pc_str_ends_with(nm, ".txt")) other[2]++;
            continue;
        }
        size_t len = strlen(dir) + strlen(nm) + 2;
        char *full = malloc(len);
        if (!full) {
            st = pc_fail(err, PC_ERR_NOMEM, "out of memory listing %s", dir);
            break;
        }
        snprintf(full, len, "%s/%s", dir, nm);
        struct stat sb;
        if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            free(full);
            continue;
        }
        char **np = pc_grow_array(*out, &cap, *n + 1, sizeof **out);
        if (!np) {
            free(full);
            st = pc_fail(err, PC_ERR_NOMEM, "out of memory listing %s", dir);
            break;
        }
        *out = np;
        (*out)[(*n)++] = full;
    }
    closedir(d);
    if (st != PC_OK) {
        free_names(*out, *n);
        *out = NULL;
        *n = 0;
        return st;
    }
    if (*n > 1) qsort(*out, *n, sizeof **out, cmp_str);
    return PC_OK;
}

static pc_status read_matching(const char *dir, const char *pat, const pc_hlo_read_opts *o,
                               pc_hlo_module ***mods, int *nmods, pc_hlo_text_stats *stats,
                               pc_error *err) {
    char **files = NULL;
    size_t nf = 0, other[3] = {0, 0, 0};
    pc_status st = list_matching(dir, pat, &files, &nf, other, err);
    if (st) return st;
    if (nf == 0) {
        st = pc_fail(err, PC_ERR_INVALID,
                     "%s: no HLO text file matching '%s' in the directory (it holds %zu *before_optimizations.txt, "
                     "%zu *after_optimizations.txt and %zu other .txt/.hlo files)%s",
                     dir, pat, other[0], other[1], other[2],
                     other[0] && !other[1] ? "; the modules before optimization are read with the pattern "
                                             "DIR/*before_optimizations.txt"
                                           : "");
        return st;
    }
    pc_hlo_module **all = NULL;
    size_t n = 0, cap = 0;
    uint64_t held = 0; /* every file's modules are kept: the budget covers them all */
    for (size_t i = 0; i < nf && st == PC_OK; i++) {
        pc_hlo_module **m = NULL;
        int k = 0;
        pc_hlo_text_stats ts;
        memset(&ts, 0, sizeof ts);
        st = read_one(files[i], o, &held, &m, &k, &ts, err);
        if (st) break;
        if (n + (size_t)k > INT32_MAX) {
            pc_hlo_modules_free(m, k);
            st = pc_fail(err, PC_ERR_RANGE, "%s: more than 2^31-1 modules", dir);
            break;
        }
        pc_hlo_module **np = pc_grow_array(all, &cap, n + (size_t)k + 1, sizeof *all);
        if (!np) {
            pc_hlo_modules_free(m, k);
            st = pc_fail(err, PC_ERR_NOMEM, "out of memory reading %s", dir);
            break;
        }
        all = np;
        memcpy(all + n, m, (size_t)k * sizeof *m);
        n += (size_t)k;
        free(m);
        if (stats) {
            if (!stats->unknown_opcodes && ts.unknown_opcodes)
                memcpy(stats->first_unknown, ts.first_unknown, sizeof ts.first_unknown);
            stats->unknown_opcodes += ts.unknown_opcodes;
            stats->skipped_attrs += ts.skipped_attrs;
        }
    }
    free_names(files, nf);
    if (st) {
        pc_hlo_modules_free(all, (int)n);
        return st;
    }
    *mods = all;
    *nmods = (int)n;
    return PC_OK;
}

int pc_hlo_text_path_kind(const char *path) {
    struct stat sb;
    if (stat(path, &sb) == 0) return S_ISDIR(sb.st_mode) ? PC_HLO_PATH_DIR : PC_HLO_PATH_FILE;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    return strpbrk(base, "*?[") ? PC_HLO_PATH_PATTERN : PC_HLO_PATH_FILE;
}

pc_status pc_hlo_read_text_file(const char *path, pc_hlo_module ***mods, int *nmods, pc_hlo_text_stats *stats,
                                pc_error *err) {
    return pc_hlo_read_text_file_max(path, PC_MEMORY_AUTO, mods, nmods, stats, err);
}

pc_status pc_hlo_read_text_file_max(const char *path, uint64_t max_memory, pc_hlo_module ***mods,
                                    int *nmods, pc_hlo_text_stats *stats, pc_error *err) {
    pc_hlo_read_opts o = {max_memory, NULL, NULL};
    return pc_hlo_read_text_file_opts(path, &o, mods, nmods, stats, err);
}

pc_status pc_hlo_read_text_file_opts(const char *path, const pc_hlo_read_opts *opts,
                                     pc_hlo_module ***mods, int *nmods, pc_hlo_text_stats *stats,
                                     pc_error *err) {
    pc_hlo_read_opts dflt = {PC_MEMORY_AUTO, NULL, NULL};
    const pc_hlo_read_opts *o = opts ? opts : &dflt;
    if (mods) *mods = NULL;
    if (nmods) *nmods = 0;
    if (!path || !mods || !nmods) return pc_fail(err, PC_ERR_ARG, "pc_hlo_read_text_file: NULL argument");
    if (stats) memset(stats, 0, sizeof *stats);
    int kind = pc_hlo_text_path_kind(path);
    if (kind == PC_HLO_PATH_FILE) return read_one(path, o, NULL, mods, nmods, stats, err);
    if (kind == PC_HLO_PATH_DIR)
        return read_matching(path, "*after_optimizations.txt", o, mods, nmods, stats, err);
    const char *slash = strrchr(path, '/');
    char *dir = NULL;
    if (slash) {
        size_t dn = slash == path ? 1 : (size_t)(slash - path);
        if (!(dir = malloc(dn + 1))) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        memcpy(dir, path, dn);
        dir[dn] = '\0';
    }
    pc_status st = read_matching(dir ? dir : ".", slash ? slash + 1 : path, o, mods, nmods, stats,
                                 err);
    free(dir);
    return st;
}
