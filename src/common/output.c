/*
 * Outputs (src/common/util.h): temporary files renamed into place, made
 * durable where a crash must not lose them, directories replaced in one
 * step, advisory locks, and whether two paths are one file.
 */
#define _GNU_SOURCE /* renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* The folder of path ("." when it has none) into dir. */
static void dir_of(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, cap, ".");
    else if (slash == path)
        snprintf(dir, cap, "/");
    else
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/*
 * Removes ".<base>.<pid>.tmpXXXXXX" files of dir whose pid is no longer a
 * live process: what a killed run left behind. Best effort, never fails.
 */
static void clean_stale(const char *dir, const char *base) {
    DIR *d = opendir(dir);
    if (!d) return;
    size_t bl = strlen(base);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (n[0] != '.' || strncmp(n + 1, base, bl) || n[1 + bl] != '.') continue;
        char *end = NULL;
        long pid = strtol(n + 2 + bl, &end, 10);
        if (pid <= 0 || !end || strncmp(end, ".tmp", 4) || strlen(end) != 10) continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char p[4096];
        if (snprintf(p, sizeof p, "%s/%s", dir, n) < (int)sizeof p) unlink(p);
    }
    closedir(d);
}

FILE *pc_tmp_open(const char *path, char *tmp, size_t cap, pc_error *err) {
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    const char *base = slash ? slash + 1 : path;
    int n = snprintf(tmp, cap, "%.*s.%s.%ld.tmpXXXXXX", dirlen, path, base, (long)getpid());
    if (n < 0 || (size_t)n >= cap || !*base) {
        pc_fail(err, PC_ERR_ARG, "%s: path too long or not a file name", path);
        return NULL;
    }
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    clean_stale(dir, base);
    int fd = mkostemp(tmp, O_CLOEXEC); /* O_CREAT | O_EXCL: never an existing name or link */
    if (fd < 0) {
        pc_fail(err, PC_ERR_IO, "%s: cannot create temporary file: %s", path, strerror(errno));
        return NULL;
    }
    fchmod(fd, 0644);
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        pc_fail(err, PC_ERR_IO, "%s: cannot open temporary file: %s", path, strerror(errno));
    }
    return f;
}

void pc_fsync_dir_of(const char *path) {
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

static pc_status commit(FILE *f, const char *tmp, const char *path, int durable,
                        pc_error *err) {
    int bad = fflush(f) != 0 || ferror(f);
    int e = errno;
    if (!bad && durable && fsync(fileno(f)) != 0) bad = 1, e = errno;
    if (fclose(f) != 0 && !bad) bad = 1, e = errno;
    if (bad) {
        unlink(tmp);
        return pc_fail(err, PC_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        return pc_fail(err, PC_ERR_IO, "%s: cannot rename temporary file into place: %s", path,
                       strerror(e));
    }
    if (durable) pc_fsync_dir_of(path);
    return PC_OK;
}

pc_status pc_tmp_commit(FILE *f, const char *tmp, const char *path, pc_error *err) {
    return commit(f, tmp, path, 0, err);
}

pc_status pc_tmp_commit_durable(FILE *f, const char *tmp, const char *path, pc_error *err) {
    return commit(f, tmp, path, 1, err);
}

pc_status pc_replace_dir(const char *tmp, const char *out, pc_error *err) {
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_EXCHANGE) == 0) {
        pc_remove_tree(tmp); /* the old tree, now under the temporary name */
        pc_fsync_dir_of(out);
        return PC_OK;
    }
    if (errno == ENOENT && rename(tmp, out) == 0) { /* nothing to replace */
        pc_fsync_dir_of(out);
        return PC_OK;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOENT)
        return pc_fail(err, PC_ERR_IO, "%s: cannot move the new directory into place: %s", out,
                       strerror(errno));
    /* no RENAME_EXCHANGE on this file system: the old tree aside first, then the new in */
    char aside[4096];
    if (snprintf(aside, sizeof aside, "%s.old.%ld", out, (long)getpid()) >= (int)sizeof aside)
        return pc_fail(err, PC_ERR_ARG, "%s: path too long", out);
    if (rename(out, aside) != 0)
        return pc_fail(err, PC_ERR_IO, "%s: cannot move the old directory aside: %s", out,
                       strerror(errno));
    if (rename(tmp, out) != 0) {
        int e = errno;
        (void)rename(aside, out);
        return pc_fail(err, PC_ERR_IO, "%s: cannot move the new directory into place: %s", out,
                       strerror(e));
    }
    pc_remove_tree(aside);
    pc_fsync_dir_of(out);
    return PC_OK;
}

pc_status pc_lock_acquire(const char *path, const char *what, int *fd, pc_error *err) {
    *fd = -1;
    struct stat sb;
    int dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    int f = dir ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                : open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (f < 0 && errno == ENOENT)
        return pc_fail(err, PC_ERR_NOTFOUND, "%s: the folder of %s does not exist", path, what);
    if (f < 0)
        return pc_fail(err, PC_ERR_IO, "%s: cannot open the lock of %s: %s", path, what,
                       strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(f);
        if (e == EWOULDBLOCK)
            return pc_fail(err, PC_ERR_BUSY, "%s is in use by another perfcast (lock %s held); "
                           "wait for it to finish or use another output", what, path);
        return pc_fail(err, PC_ERR_IO, "%s: cannot lock %s: %s", path, what, strerror(e));
    }
    *fd = f;
    return PC_OK;
}

void pc_lock_release(int fd, const char *unlink_path) {
    if (fd < 0) return;
    if (unlink_path) unlink(unlink_path);
    close(fd);
}

int pc_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

struct pc_output {
    FILE *f;
    char *path;
    char tmp[4096];
};

pc_status pc_output_open(const char *path, pc_output **out, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!out || !path) return pc_fail(err, PC_ERR_ARG, "pc_output_open: NULL argument");
    *out = NULL;
    pc_output *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path))) {
        free(o);
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    }
    if (!(o->f = pc_tmp_open(path, o->tmp, sizeof o->tmp, err))) {
        free(o->path);
        free(o);
        return err->code;
    }
    *out = o;
    return PC_OK;
}

FILE *pc_output_file(pc_output *o) { return o ? o->f : NULL; }

pc_status pc_output_close(pc_output *o, int commit, int durable, pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!o) return PC_OK;
    pc_status st = PC_OK;
    if (commit) {
        st = durable ? pc_tmp_commit_durable(o->f, o->tmp, o->path, err)
                     : pc_tmp_commit(o->f, o->tmp, o->path, err);
    } else {
        fclose(o->f);
        unlink(o->tmp);
    }
    free(o->path);
    free(o);
    return st;
}
