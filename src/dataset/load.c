/*
 * pc_graph_load: a path to a graph, from whichever source it names: a cache
 * directory (cache.c) or an .npz file (graph.c). Above both, so neither calls
 * back into the other.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "dataset/graph_internal.h"

pc_status pc_graph_load(const char *path, const pc_load_opts *opts, pc_graph **out, pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pc_graph_load: NULL output");
    *out = NULL;
    if (!path) return pc_fail(err, PC_ERR_ARG, "pc_graph_load: NULL path");
    if (opts && PC_CHECK_SIZE(err, pc_load_opts, opts)) return PC_ERR_ARG;
    pc_load_opts o = opts ? *opts : pc_load_opts_default();
    if (o.kind != PC_KIND_AUTO && o.kind != PC_KIND_TILE && o.kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "%s: unknown graph kind %d", path, (int)o.kind);
    struct stat st;
    if (stat(path, &st) != 0) {
        const char *kind = pc_file_kind(path);
        if (!strcmp(kind, "a dangling symbolic link"))
            return pc_fail(err, PC_ERR_IO, "%s: cannot open: a dangling symbolic link", path);
        return pc_fail(err, errno == ENOENT ? PC_ERR_NOTFOUND : PC_ERR_IO, "%s: cannot open: %s",
                       path, strerror(errno));
    }
    /* a graph is an .npz file or a cache directory; nothing else is opened (a
       FIFO would block) */
    if (S_ISDIR(st.st_mode) && pc_str_ends_with(path, ".npz"))
        return pc_fail(err, PC_ERR_IO, "%s: is a directory, expected a regular .npz file", path);
    if (S_ISDIR(st.st_mode)) return pc_graph_load_cache_(path, &o, out, err);
    if (!S_ISREG(st.st_mode))
        return pc_fail(err, PC_ERR_IO,
                       "%s: is %s, expected a regular .npz file or a cache "
                       "directory",
                       path, pc_file_kind(path));
    return pc_graph_load_npz_(path, &o, out, err);
}
