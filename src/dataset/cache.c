/*
 * The memory-mappable cache: one directory per graph ("<stem>.pcc/") holding
 * one uncompressed, native-endian, C-order .npy per array (already widened)
 * and a marker file recording the format version and the source's size and
 * mtime. Loading maps the arrays instead of inflating them, so repeated
 * epochs over huge node_config_feat arrays cost page-cache reads only.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/threads.h"
#include "common/util.h"
#include "dataset/graph_internal.h"

#define CACHE_MARKER "perfcast_cache.json"
#define CACHE_FORMAT "perfcast-cache"
#define CACHE_VERSION 1
#define CACHE_MARKER_MAX 65536
/* Conversion keeps node_config_feat resident only up to this size. */
#define CACHE_BUILD_RESIDENT (UINT64_C(256) << 20)
#define PATH_CAP 4096

/* What identifies a source file's version: size and modification time. */
typedef struct src_stamp {
    int64_t size, mtime_sec, mtime_nsec;
} src_stamp;

typedef struct marker {
    pc_kind kind;
    src_stamp stamp;
} marker;

/* "<dir>/<name><ext>" into out[PATH_CAP]; fails cleanly when too long. */
static pc_status entry_path(char *out, const char *dir, const char *name, const char *ext,
                            pc_error *err) {
    int n = snprintf(out, PATH_CAP, "%s/%s%s", dir, name, ext);
    if (n < 0 || n >= PATH_CAP) return pc_fail(err, PC_ERR_ARG, "%s: path too long", dir);
    return PC_OK;
}

static pc_status stamp_of(const char *path, src_stamp *s, pc_error *err) {
    struct stat st;
    if (stat(path, &st) != 0)
        return pc_fail(err, errno == ENOENT ? PC_ERR_NOTFOUND : PC_ERR_IO, "%s: cannot open: %s",
                       path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return pc_fail(err, PC_ERR_ARG, "%s: not a regular file", path);
    s->size = (int64_t)st.st_size;
    s->mtime_sec = (int64_t)st.st_mtim.tv_sec;
    s->mtime_nsec = (int64_t)st.st_mtim.tv_nsec;
    return PC_OK;
}

/* ---- marker file --------------------------------------------------------- */

static pc_status slurp_marker(const char *dir, char **text, pc_error *err) {
    char path[PATH_CAP];
    if (entry_path(path, dir, CACHE_MARKER, "", err) != PC_OK) return PC_ERR_ARG;
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return pc_fail(err, PC_ERR_NOTFOUND, "%s: not a perfcast cache (missing %s)", dir,
                       CACHE_MARKER);
    int fd = -1;
    uint64_t fsize = 0;
    pc_status ost = pc_open_regular(path, &fd, &fsize, err); /* a FIFO would block fopen */
    if (ost != PC_OK) return ost;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return pc_fail(err, PC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    char *buf = malloc(CACHE_MARKER_MAX + 1);
    size_t len = buf ? fread(buf, 1, CACHE_MARKER_MAX + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    if (bad || len > CACHE_MARKER_MAX) {
        free(buf);
        return pc_fail(err, PC_ERR_FORMAT, "%s: unreadable or larger than %d bytes", path,
                       CACHE_MARKER_MAX);
    }
    buf[len] = '\0';
    *text = buf;
    return PC_OK;
}

static double json_num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* A stamp field; -1 (never equal to a real stamp) when missing or absurd. */
static int64_t json_i64(const cJSON *o, const char *key) {
    double v = json_num(o, key);
    return v >= 0 && v < 9.0e18 ? (int64_t)v : -1;
}

static pc_status parse_marker(const char *dir, const cJSON *j, marker *m, pc_error *err) {
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CACHE_FORMAT) != 0)
        return pc_fail(err, PC_ERR_FORMAT, "%s/%s: 'format' is not \"%s\"", dir, CACHE_MARKER,
                       CACHE_FORMAT);
    if (json_num(j, "version") != CACHE_VERSION)
        return pc_fail(err, PC_ERR_FORMAT,
                       "%s/%s: cache format version %g, expected %d (rebuild the cache)", dir,
                       CACHE_MARKER, json_num(j, "version"), CACHE_VERSION);
    if (!cJSON_IsString(kind) ||
        (strcmp(kind->valuestring, "tile") != 0 && strcmp(kind->valuestring, "layout") != 0))
        return pc_fail(err, PC_ERR_FORMAT, "%s/%s: 'kind' must be \"tile\" or \"layout\"", dir,
                       CACHE_MARKER);
    m->kind = kind->valuestring[0] == 't' ? PC_KIND_TILE : PC_KIND_LAYOUT;
    m->stamp.size = json_i64(j, "source_size");
    m->stamp.mtime_sec = json_i64(j, "source_mtime_sec");
    m->stamp.mtime_nsec = json_i64(j, "source_mtime_nsec");
    return PC_OK;
}

static pc_status read_marker(const char *dir, marker *m, pc_error *err) {
    char *text = NULL;
    pc_status st = slurp_marker(dir, &text, err);
    if (st != PC_OK) return st;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) return pc_fail(err, PC_ERR_FORMAT, "%s/%s: not valid JSON", dir, CACHE_MARKER);
    st = parse_marker(dir, j, m, err);
    cJSON_Delete(j);
    return st;
}

static cJSON *marker_json(const pc_graph *g, const char *src, const src_stamp *s) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    int ok = cJSON_AddStringToObject(j, "format", CACHE_FORMAT) &&
             cJSON_AddNumberToObject(j, "version", CACHE_VERSION) &&
             cJSON_AddStringToObject(j, "kind", pc_kind_name(g->kind)) &&
             cJSON_AddStringToObject(j, "source", src) &&
             /* doubles hold sizes below 2^53 and seconds/nanoseconds exactly */
             cJSON_AddNumberToObject(j, "source_size", (double)s->size) &&
             cJSON_AddNumberToObject(j, "source_mtime_sec", (double)s->mtime_sec) &&
             cJSON_AddNumberToObject(j, "source_mtime_nsec", (double)s->mtime_nsec);
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static pc_status write_marker(const char *dir, const pc_graph *g, const char *src,
                              const src_stamp *s, pc_error *err) {
    char path[PATH_CAP];
    if (entry_path(path, dir, CACHE_MARKER, "", err) != PC_OK) return PC_ERR_ARG;
    cJSON *j = marker_json(g, src, s);
    char *text = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    if (!text) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    FILE *f = fopen(path, "wb");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    /* the marker says the entry is complete: on disk before the entry is renamed in */
    if (f && (fflush(f) != 0 || fsync(fileno(f)) != 0)) ok = 0;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    if (!ok) return pc_fail(err, PC_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    return PC_OK;
}

/* ---- loading a cache ----------------------------------------------------- */

static pc_status map_key(pc_graph *g, int k, pc_slot *s, pc_error *err) {
    char path[PATH_CAP];
    memset(s, 0, sizeof *s);
    if (entry_path(path, g->path, pc_key_name_(k), ".npy", err) != PC_OK) return PC_ERR_ARG;
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) return PC_OK; /* key absent */
    pc_array *a = &g->a[k];
    pc_status rc = pc_npy_map(path, a, err);
    if (rc != PC_OK) return rc;
    s->present = 1;
    s->dtype = a->dtype;
    s->ndim = a->ndim;
    memcpy(s->shape, a->shape, sizeof s->shape);
    s->data_bytes = pc_array_nbytes(a);
    return PC_OK;
}

/* The cache holds widened arrays; anything else means it was tampered with. */
static pc_status check_cached_dtypes(pc_graph *g, pc_error *err) {
    for (int k = 0; k < PC_K_COUNT; k++) {
        if (!g->has[k]) {
            pc_array_free(&g->a[k]);
            continue;
        }
        if (g->a[k].dtype != pc_key_dtype_(k))
            return pc_fail(err, PC_ERR_FORMAT,
                           "%s: key '%s': cache holds %s, expected %s (rebuild the cache)",
                           g->path, pc_key_name_(k), pc_dtype_name(g->a[k].dtype),
                           pc_dtype_name(pc_key_dtype_(k)));
        pc_graph_canon_shape_(g, k);
    }
    return PC_OK;
}

pc_status pc_graph_load_cache_(const char *dir, const pc_load_opts *opts, pc_graph **out,
                               pc_error *err) {
    marker m;
    pc_status st = read_marker(dir, &m, err);
    if (st != PC_OK) return st;
    pc_graph *g = pc_graph_new_(dir);
    if (!g) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", dir);
    pc_slot slots[PC_K_COUNT];
    for (int k = 0; k < PC_K_COUNT && st == PC_OK; k++) st = map_key(g, k, &slots[k], err);
    pc_kind want = opts->kind == PC_KIND_AUTO ? m.kind : opts->kind;
    if (st == PC_OK) st = pc_graph_check_shapes_(g, slots, want, err);
    if (st == PC_OK) st = check_cached_dtypes(g, err);
    if (st != PC_OK) {
        pc_graph_free(g);
        return st;
    }
    *out = g;
    return PC_OK;
}

/* ---- building one cache entry -------------------------------------------- */

static pc_status write_failed(pc_error *err, const char *path) {
    return pc_fail(err, PC_ERR_IO, "%s: write failed: %s", path, strerror(errno));
}

static pc_status write_ncf_rows(pc_graph *g, FILE *f, const char *path, pc_error *err) {
    int64_t rf = g->nc * g->cfg_dim, step = pc_graph_chunk_rows_(g);
    if (rf == 0 || g->c == 0) return PC_OK;
    if (step > g->c) step = g->c;
    float *buf = pc_malloc_array((uint64_t)step, (uint64_t)rf * 4);
    if (!buf) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", path);
    pc_ncf_pass p = {NULL, NULL, NULL, 0}; /* closing an unopened pass is a no-op */
    pc_status st = pc_ncf_pass_open_(g, &p, err);
    for (int64_t c0 = 0; st == PC_OK && c0 < g->c; c0 += step) {
        int64_t take = g->c - c0 < step ? g->c - c0 : step;
        size_t count = (size_t)(take * rf);
        st = pc_ncf_pass_read_(&p, c0, take, buf, err);
        if (st == PC_OK && fwrite(buf, 4, count, f) != count) st = write_failed(err, path);
    }
    pc_ncf_pass_close_(&p);
    free(buf);
    return st;
}

/* Streams node_config_feat into a .npy in bounded chunks (it may not be resident). */
static pc_status write_ncf(pc_graph *g, const char *path, pc_error *err) {
    char header[4096];
    const pc_array *a = &g->a[PC_K_NODE_CONFIG_FEAT];
    size_t hlen = pc_npy_format_header(PC_DTYPE_F32, 3, a->shape, header, sizeof header);
    if (hlen == 0) return pc_fail(err, PC_ERR_FORMAT, "%s: cannot format .npy header", path);
    FILE *f = fopen(path, "wb");
    if (!f) return pc_fail(err, PC_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    pc_status st = fwrite(header, 1, hlen, f) == hlen ? PC_OK : write_failed(err, path);
    if (st == PC_OK) st = write_ncf_rows(g, f, path, err);
    if (fclose(f) != 0 && st == PC_OK) st = write_failed(err, path);
    return st;
}

static pc_status write_arrays(pc_graph *g, const char *dir, pc_error *err) {
    for (int k = 0; k < PC_K_COUNT; k++) {
        if (!g->has[k]) continue;
        char path[PATH_CAP];
        if (entry_path(path, dir, pc_key_name_(k), ".npy", err) != PC_OK) return PC_ERR_ARG;
        pc_status st = k == PC_K_NODE_CONFIG_FEAT ? write_ncf(g, path, err)
                                                  : pc_npy_save(path, &g->a[k], err);
        if (st != PC_OK) return st;
    }
    return PC_OK;
}

/*
 * A directory of .npy files and nothing else: an entry whose marker is
 * missing (left half-written or half-deleted by an older perfcast killed
 * mid-way), safe to rebuild.
 */
static int only_arrays(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int ok = 1;
    struct dirent *e;
    while (ok && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            ok = e->d_type == DT_REG && pc_str_ends_with(e->d_name, ".npy");
    closedir(d);
    return ok;
}

/*
 * An existing out_dir is replaced only if it is a cache (or empty), so a
 * mistyped path never wipes an unrelated folder.
 */
static pc_status check_replaceable(const char *out, pc_error *err) {
    struct stat st;
    if (stat(out, &st) != 0) return PC_OK;
    if (!S_ISDIR(st.st_mode))
        return pc_fail(err, PC_ERR_IO, "%s: exists and is not a directory; not replacing it", out);
    char path[PATH_CAP];
    if (entry_path(path, out, CACHE_MARKER, "", err) != PC_OK) return PC_ERR_ARG;
    if (stat(path, &st) == 0 || rmdir(out) == 0 || only_arrays(out)) return PC_OK;
    return pc_fail(err, PC_ERR_IO, "%s: exists and is not a perfcast cache; not replacing it",
                   out);
}

static pc_status make_tmp_dir(const char *out, char *tmp, size_t cap, pc_error *err) {
    char parent[PATH_CAP];
    snprintf(parent, sizeof parent, "%s", out);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        pc_status st = pc_mkdirs(parent, err);
        if (st != PC_OK) return st;
    }
    if (snprintf(tmp, cap, "%s.tmpXXXXXX", out) >= (int)cap)
        return pc_fail(err, PC_ERR_ARG, "%s: path too long", out);
    if (!mkdtemp(tmp))
        return pc_fail(err, PC_ERR_IO, "%s: cannot create temporary directory: %s", out,
                       strerror(errno));
    chmod(tmp, 0755); /* mkdtemp makes it private; caches are meant to be shared */
    return PC_OK;
}

/* The new entry in place of the old in one step: never a half-deleted entry under out. */
static pc_status commit_dir(const char *tmp, const char *out, pc_error *err) {
    return pc_replace_dir(tmp, out, err);
}

static pc_status convert(const char *src, const char *out, const src_stamp *stamp,
                         const pc_load_opts *o, uint64_t chunk_bytes, pc_error *err) {
    pc_graph *g = NULL;
    char tmp[PATH_CAP];
    pc_status st = pc_graph_load_npz_(src, o, &g, err);
    if (st != PC_OK) return st;
    pc_graph_set_chunk_bytes_(g, chunk_bytes);
    st = make_tmp_dir(out, tmp, sizeof tmp, err);
    if (st != PC_OK) {
        pc_graph_free(g);
        return st;
    }
    st = write_arrays(g, tmp, err);
    if (st == PC_OK) st = write_marker(tmp, g, src, stamp, err);
    if (st == PC_OK) st = commit_dir(tmp, out, err);
    if (st != PC_OK) pc_remove_tree(tmp);
    pc_graph_free(g);
    return st;
}

/* pc_cache_build_ex_ without the lock (the tree holds its root's). */
static pc_status build_entry(const char *npz_path, const char *out_dir, uint64_t resident,
                             uint64_t chunk_bytes, pc_error *err) {
    if (!npz_path || !out_dir) return pc_fail(err, PC_ERR_ARG, "pc_cache_build: NULL path");
    char out[PATH_CAP];
    size_t len = strlen(out_dir);
    while (len > 1 && out_dir[len - 1] == '/') len--;
    if (len == 0 || len >= sizeof out - 16)
        return pc_fail(err, PC_ERR_ARG, "%s: bad output path", out_dir);
    memcpy(out, out_dir, len);
    out[len] = '\0';
    src_stamp stamp = {0, 0, 0};
    pc_status st = stamp_of(npz_path, &stamp, err);
    if (st == PC_OK) st = check_replaceable(out, err);
    if (st != PC_OK) return st;
    pc_load_opts o = pc_load_opts_default();
    o.max_resident_config_bytes = resident;
    o.threads = 1;
    return convert(npz_path, out, &stamp, &o, chunk_bytes, err);
}

/* The folder an entry lives in (created), locked while the entry is replaced. */
static pc_status lock_parent(const char *out_dir, int *fd, pc_error *err) {
    char parent[PATH_CAP];
    snprintf(parent, sizeof parent, "%s", out_dir);
    size_t len = strlen(parent);
    while (len > 1 && parent[len - 1] == '/') parent[--len] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash) snprintf(parent, sizeof parent, ".");
    else if (slash == parent) parent[1] = '\0';
    else *slash = '\0';
    pc_status st = pc_mkdirs(parent, err);
    return st ? st : pc_lock_acquire(parent, "this cache folder", fd, err);
}

pc_status pc_cache_build_ex_(const char *npz_path, const char *out_dir, uint64_t resident,
                             uint64_t chunk_bytes, pc_error *err) {
    if (!npz_path || !out_dir) return pc_fail(err, PC_ERR_ARG, "pc_cache_build: NULL path");
    int fd = -1;
    pc_status st = lock_parent(out_dir, &fd, err);
    if (!st) st = build_entry(npz_path, out_dir, resident, chunk_bytes, err);
    pc_lock_release(fd, NULL);
    return st;
}

pc_status pc_cache_build(const char *npz_path, const char *out_dir, pc_error *err) {
    return pc_cache_build_ex_(npz_path, out_dir, CACHE_BUILD_RESIDENT, 0, err);
}

/* ---- building a whole tree ------------------------------------------------ */

typedef struct tree_job {
    const char *src;
    char out[PATH_CAP];
    pc_status st;
    int kept; /* the entry was up to date */
    pc_error err;
} tree_job;

static int up_to_date(const char *src, const char *out) {
    src_stamp now = {0, 0, 0};
    marker m;
    if (stamp_of(src, &now, NULL) != PC_OK || read_marker(out, &m, NULL) != PC_OK) return 0;
    return m.stamp.size == now.size && m.stamp.mtime_sec == now.mtime_sec &&
           m.stamp.mtime_nsec == now.mtime_nsec;
}

static void run_job(tree_job *j) {
    if (j->st != PC_OK) return; /* failed while planning */
    j->kept = up_to_date(j->src, j->out);
    j->st = j->kept ? PC_OK : build_entry(j->src, j->out, CACHE_BUILD_RESIDENT, 0, &j->err);
}

pc_cache_opts pc_cache_opts_default(void) {
    pc_cache_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    return o;
}

/* One job per .npz source; cache entries already in the tree are not sources. */
static pc_status plan_jobs(const pc_dataset *d, const char *root, tree_job **jobs, size_t *n,
                           pc_error *err) {
    size_t total = 0, k = 0;
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++)
        for (int s = 0; s < PC_NUM_SPLITS; s++) total += pc_dataset_num_files(d, c, s);
    *jobs = total ? calloc(total, sizeof **jobs) : NULL;
    if (total && !*jobs) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", root);
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++) {
        for (int s = 0; s < PC_NUM_SPLITS; s++) {
            for (size_t i = 0; i < pc_dataset_num_files(d, c, s); i++) {
                const char *src = pc_dataset_file(d, c, s, i);
                if (!pc_str_ends_with(src, ".npz")) continue;
                char stem[1024];
                pc_path_stem(src, ".npz", stem, sizeof stem);
                tree_job *j = &(*jobs)[k++];
                j->src = src;
                int len = snprintf(j->out, sizeof j->out, "%s/%s/%s/%s.pcc", root,
                                   pc_collection_dir(c), pc_split_name(s), stem);
                if (len < 0 || (size_t)len >= sizeof j->out - 16)
                    j->st = pc_fail(&j->err, PC_ERR_ARG, "%s: cache path too long", src);
            }
        }
    }
    *n = k;
    return PC_OK;
}

static pc_status collect_failures(const tree_job *jobs, size_t n, pc_report *r,
                                  pc_cache_result *res, pc_error *err) {
    size_t failed = 0;
    const tree_job *first = NULL;
    for (size_t i = 0; i < n; i++) {
        if (res && jobs[i].st == PC_OK) {
            res->up_to_date += jobs[i].kept;
            res->built += !jobs[i].kept;
        }
        if (res) res->failed += jobs[i].st != PC_OK;
        if (jobs[i].st == PC_OK) continue;
        if (!first) first = &jobs[i];
        failed++;
        if (r) pc_report_add(r, "%s", jobs[i].err.msg);
    }
    if (!first) return PC_OK;
    return pc_fail(err, first->st, "%zu of %zu files could not be cached; first: %s", failed, n,
                   first->err.msg);
}

pc_status pc_cache_build_tree(const pc_dataset *d, const char *cache_root,
                              const pc_cache_opts *opts, pc_report *r, pc_cache_result *res,
                              pc_error *err) {
    if (!d || !cache_root) return pc_fail(err, PC_ERR_ARG, "pc_cache_build_tree: NULL argument");
    if (opts && PC_CHECK_SIZE(err, pc_cache_opts, opts)) return PC_ERR_ARG;
    if (res && PC_CHECK_RESULT_SIZE(err, pc_cache_result, res)) return PC_ERR_ARG;
    pc_cache_opts o = opts ? *opts : pc_cache_opts_default();
    if (res) memset(res, 0, sizeof *res), res->struct_size = sizeof *res;
    pc_status st = pc_mkdirs(cache_root, err);
    tree_job *jobs = NULL;
    size_t n = 0;
    int lock = -1; /* one tree build at a time: entries are replaced, not shared */
    if (st == PC_OK) st = pc_lock_acquire(cache_root, "this cache", &lock, err);
    if (st == PC_OK) st = plan_jobs(d, cache_root, &jobs, &n, err);
    if (st != PC_OK) {
        pc_lock_release(lock, NULL);
        return st;
    }
    int nt = o.threads > 0 ? o.threads : pc_threads();
    int64_t done = 0;
    omp_lock_t plock; /* this call's lock for its progress calls (see synth.c) */
    omp_init_lock(&plock);
    if (res) res->files = (int64_t)n;
        /* Files differ wildly in size, so hand them out one at a time. */
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t i = 0; i < (int64_t)n; i++) {
        run_job(&jobs[i]);
        if (o.progress) {
            omp_set_lock(&plock);
            o.progress(o.progress_user, "files cached", ++done, (int64_t)n);
            omp_unset_lock(&plock);
        }
    }
    omp_destroy_lock(&plock);
    st = collect_failures(jobs, n, r, res, err);
    free(jobs);
    pc_lock_release(lock, NULL);
    return st;
}
