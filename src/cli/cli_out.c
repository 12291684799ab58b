/*
 * Where the commands write: checked before any work (a missing folder fails
 * at once, not after the first epoch), an output never an input, and a
 * dataset folder not merged into by accident (synth --force).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* The folder part of path ("." when none) into buf. */
static void parent_of(const char *path, char *buf, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, cap, ".");
    else if (slash == path)
        snprintf(buf, cap, "/");
    else
        snprintf(buf, cap, "%.*s", (int)(slash - path), path);
}

static int out_error(const char *cmd, const char *flag, const char *path, const char *why) {
    fprintf(stderr, "perfcast %s: error: %s %s: %s\n", cmd, flag, path, why);
    return PC_EXIT_FAIL;
}

int pc_cli_check_out_file(const char *cmd, const char *flag, const char *path) {
    struct stat st;
    char dir[4096];
    if (!*path) return out_error(cmd, flag, "''", "empty path");
    size_t n = strlen(path);
    if (path[n - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return out_error(cmd, flag, path, "is a folder; give a file name");
    parent_of(path, dir, sizeof dir);
    if (stat(dir, &st) != 0) {
        char why[4200];
        snprintf(why, sizeof why, "folder '%s' does not exist (create it first)", dir);
        return out_error(cmd, flag, path, why);
    }
    if (!S_ISDIR(st.st_mode)) {
        char why[4200];
        snprintf(why, sizeof why, "'%s' is not a folder", dir);
        return out_error(cmd, flag, path, why);
    }
    if (access(dir, W_OK | X_OK) != 0) {
        char why[4200];
        snprintf(why, sizeof why, "folder '%s' is not writable", dir);
        return out_error(cmd, flag, path, why);
    }
    return -1;
}

/* 1 when dir has an entry other than . and .. */
static int dir_nonempty(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int any = 0;
    while (!any && (e = readdir(d))) any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return any;
}

int pc_cli_check_out_dir(const char *cmd, const char *flag, const char *path, int refuse_nonempty) {
    struct stat st;
    if (!*path) return out_error(cmd, flag, "''", "empty path");
    if (stat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return out_error(cmd, flag, path, "exists and is not a folder");
        if (access(path, W_OK | X_OK) != 0) return out_error(cmd, flag, path, "is not writable");
        if (refuse_nonempty && dir_nonempty(path))
            return out_error(cmd, flag, path,
                             "is not empty; give a new folder, or --force to write into it "
                             "(files of the same name are replaced, others kept)");
        return -1;
    }
    /* created with its parents: the nearest existing ancestor must be a writable folder */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (;;) {
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
        char up[4096];
        parent_of(dir, up, sizeof up);
        snprintf(dir, sizeof dir, "%s", up);
        if (stat(dir, &st) == 0) break;
        if (!strcmp(dir, ".") || !strcmp(dir, "/")) return -1; /* let the library say */
    }
    char why[4200];
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, sizeof why, "cannot be created: '%s' is not a folder", dir);
        return out_error(cmd, flag, path, why);
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, sizeof why, "cannot be created: folder '%s' is not writable", dir);
        return out_error(cmd, flag, path, why);
    }
    return -1;
}

int pc_cli_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return pc_same_file(a, b);
    /* one does not exist yet: compare the resolved folders and the names */
    char pa[PATH_MAX], pb[PATH_MAX], da[4096], db[4096];
    parent_of(a, da, sizeof da);
    parent_of(b, db, sizeof db);
    const char *na = strrchr(a, '/'), *nb = strrchr(b, '/');
    na = na ? na + 1 : a;
    nb = nb ? nb + 1 : b;
    if (strcmp(na, nb)) return 0;
    if (!realpath(da, pa) || !realpath(db, pb)) return !strcmp(a, b);
    return !strcmp(pa, pb);
}

int pc_cli_check_not_input(const char *cmd, const char *flag, const char *out,
                           const char *const *inputs, int n) {
    for (int i = 0; i < n; i++)
        if (inputs[i] && pc_cli_same_file(out, inputs[i]))
            return pc_cli_usage_error(cmd, "%s %s is also an input (%s); refusing to overwrite "
                                      "it: give another file", flag, out, inputs[i]);
    return -1;
}
