/*
 * The five collections and three splits, and discovery of a dataset tree:
 * <base>/<collection dir>/<split>/ holding *.npz files (or *.pcc cache
 * directories when the tree is a cache root).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "dataset/graph_internal.h"

static const struct {
    const char *name, *dir;
    pc_kind kind;
} collections[PC_NUM_COLLECTIONS] = {
    {"tile:xla", "tile/xla", PC_KIND_TILE},
    {"layout:xla:random", "layout/xla/random", PC_KIND_LAYOUT},
    {"layout:xla:default", "layout/xla/default", PC_KIND_LAYOUT},
    {"layout:nlp:random", "layout/nlp/random", PC_KIND_LAYOUT},
    {"layout:nlp:default", "layout/nlp/default", PC_KIND_LAYOUT},
};

static const char *const splits[PC_NUM_SPLITS] = {"train", "valid", "test"};

static int valid_collection(int c) { return c >= 0 && c < PC_NUM_COLLECTIONS; }
static int valid_split(int s) { return s >= 0 && s < PC_NUM_SPLITS; }

const char *pc_collection_name(int c) { return valid_collection(c) ? collections[c].name : NULL; }
const char *pc_collection_dir(int c) { return valid_collection(c) ? collections[c].dir : NULL; }

pc_kind pc_collection_kind(int c) {
    return valid_collection(c) ? collections[c].kind : PC_KIND_AUTO;
}

/* Accepts the name ("layout:xla:random") or the folder ("layout/xla/random"). */
int pc_collection_find(const char *name) {
    if (!name) return -1;
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++)
        if (!strcmp(name, collections[c].name) || !strcmp(name, collections[c].dir)) return c;
    return -1;
}

const char *pc_split_name(int s) { return valid_split(s) ? splits[s] : NULL; }

int pc_split_find(const char *name) {
    if (!name) return -1;
    for (int s = 0; s < PC_NUM_SPLITS; s++)
        if (!strcmp(name, splits[s])) return s;
    return -1;
}

/* ---- dataset trees ------------------------------------------------------ */

typedef struct file_list {
    char **names;
    size_t n, cap;
} file_list;

struct pc_dataset {
    char *root;
    file_list files[PC_NUM_COLLECTIONS][PC_NUM_SPLITS];
};

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int join(char *out, size_t cap, const char *a, const char *b) {
    int n = snprintf(out, cap, "%s/%s", a, b);
    return n >= 0 && (size_t)n < cap;
}

static int list_push(file_list *l, const char *name) {
    if (l->n == l->cap) {
        char **names = pc_grow_array(l->names, &l->cap, l->n + 1, sizeof *names);
        if (!names) return 0;
        l->names = names;
    }
    l->names[l->n] = strdup(name);
    return l->names[l->n] ? (l->n++, 1) : 0;
}

static void list_free(file_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 if the folder holds `<stem>.npz` as a regular file. */
static int has_npz(const char *dir, const char *name) {
    char path[4096];
    size_t len = strlen(name);
    if (snprintf(path, sizeof path, "%s/%.*s.npz", dir, (int)(len - 4), name) >= (int)sizeof path)
        return 0;
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * An entry is a graph if it is named *.npz, or is a *.pcc cache directory
 * with no .npz of the same stem beside it (the source wins where both
 * exist). An entry named so that is not what it claims (a directory, FIFO,
 * device or dangling symbolic link named *.npz, a *.pcc that is no
 * directory) is listed all the same, so loading it fails with what it is:
 * `check` reports it and training refuses the data instead of silently
 * training on the rest. Hidden names (temporaries) are skipped.
 */
static int is_graph_entry(const char *dir, const char *name) {
    char path[4096];
    struct stat st;
    if (name[0] == '.' || !join(path, sizeof path, dir, name) || lstat(path, &st) != 0) return 0;
    if (pc_str_ends_with(name, ".npz")) return 1;
    if (!pc_str_ends_with(name, ".pcc")) return 0;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 1;
    return !has_npz(dir, name);
}

static pc_status scan_split(const char *dir, file_list *l, pc_error *err) {
    DIR *d = opendir(dir);
    if (!d) return PC_OK; /* a missing split is simply empty */
    pc_status st = PC_OK;
    struct dirent *e;
    while (st == PC_OK && (e = readdir(d)) != NULL) {
        char path[4096];
        if (!is_graph_entry(dir, e->d_name)) continue;
        if (!join(path, sizeof path, dir, e->d_name))
            st = pc_fail(err, PC_ERR_ARG, "%s/%s: path too long", dir, e->d_name);
        else if (!list_push(l, path))
            st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory listing files", dir);
    }
    closedir(d);
    if (l->n > 1) qsort(l->names, l->n, sizeof *l->names, cmp_str);
    return st;
}

/* Picks the folder that holds tile/ or layout/: root/npz if present, else root. */
static char *find_base(const char *root) {
    char base[4096], path[4096], probe[4096];
    size_t len = strlen(root);
    while (len > 1 && root[len - 1] == '/') len--; /* "root/" -> "root" */
    if (len >= sizeof base) return NULL;
    memcpy(base, root, len);
    base[len] = '\0';
    if (join(path, sizeof path, base, "npz") && is_dir(path) &&
        ((join(probe, sizeof probe, path, "tile") && is_dir(probe)) ||
         (join(probe, sizeof probe, path, "layout") && is_dir(probe))))
        return strdup(path);
    return strdup(base);
}

static pc_status scan_all(pc_dataset *d, size_t *total, pc_error *err) {
    *total = 0;
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++) {
        for (int s = 0; s < PC_NUM_SPLITS; s++) {
            char dir[4096];
            if (snprintf(dir, sizeof dir, "%s/%s/%s", d->root, collections[c].dir, splits[s]) >=
                (int)sizeof dir)
                return pc_fail(err, PC_ERR_ARG, "%s: path too long", d->root);
            pc_status st = scan_split(dir, &d->files[c][s], err);
            if (st != PC_OK) return st;
            *total += d->files[c][s].n;
        }
    }
    return PC_OK;
}

pc_status pc_dataset_open(const char *root, pc_dataset **out, pc_error *err) {
    if (!out || !root) return pc_fail(err, PC_ERR_ARG, "pc_dataset_open: NULL argument");
    *out = NULL;
    struct stat sb;
    if (stat(root, &sb) != 0)
        return pc_fail(err, PC_ERR_NOTFOUND, "%s: cannot open dataset root: %s", root,
                       strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return pc_fail(err, PC_ERR_NOTFOUND, "%s: dataset root is not a directory", root);
    pc_dataset *d = calloc(1, sizeof *d);
    if (d) d->root = find_base(root);
    if (!d || !d->root) {
        pc_dataset_close(d);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory or path too long", root);
    }
    size_t total = 0;
    pc_status st = scan_all(d, &total, err);
    if (st == PC_OK && total == 0)
        st = pc_fail(err, PC_ERR_NOTFOUND,
                     "%s: no TpuGraphs files found (expected npz/{tile/xla,layout/{xla,nlp}/"
                     "{random,default}}/{train,valid,test}/*.npz, or those folders directly)",
                     root);
    if (st != PC_OK) {
        pc_dataset_close(d);
        return st;
    }
    *out = d;
    return PC_OK;
}

void pc_dataset_close(pc_dataset *d) {
    if (!d) return;
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++)
        for (int s = 0; s < PC_NUM_SPLITS; s++) list_free(&d->files[c][s]);
    free(d->root);
    free(d);
}

const char *pc_dataset_root(const pc_dataset *d) { return d->root; }

size_t pc_dataset_num_files(const pc_dataset *d, int collection, int split) {
    if (!d || !valid_collection(collection) || !valid_split(split)) return 0;
    return d->files[collection][split].n;
}

const char *pc_dataset_file(const pc_dataset *d, int collection, int split, size_t i) {
    if (!d || !valid_collection(collection) || !valid_split(split)) return NULL;
    const file_list *l = &d->files[collection][split];
    return i < l->n ? l->names[i] : NULL;
}
