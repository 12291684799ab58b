/*
 * Fuzz target: cache entries (src/dataset/cache.c), the folders of .npy
 * arrays plus a JSON marker that `perfcast cache` writes and every command
 * maps instead of inflating an .npz.
 *
 * Input: a sequence of files, each a little-endian u32 length then its bytes,
 * in this order: the marker (perfcast_cache.json), then node_feat,
 * node_opcode, edge_index, config_feat, config_runtime,
 * config_runtime_normalizers, node_config_ids, node_config_feat, node_splits
 * (.npy); a length of 0xFFFFFFFF leaves the file out. They are written into a
 * scratch entry (under $PC_FUZZ_TMP, else /dev/shm, else /tmp) and loaded with
 * pc_graph_load. A graph that loads must validate without crashing and its
 * accessors must agree with its sizes; one that fails must fail with a message.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "perfcast/dataset.h"

static const char *const k_files[] = {
    "perfcast_cache.json", "node_feat.npy",      "node_opcode.npy",
    "edge_index.npy",      "config_feat.npy",    "config_runtime.npy",
    "config_runtime_normalizers.npy", "node_config_ids.npy", "node_config_feat.npy",
    "node_splits.npy"};
#define N_FILES (sizeof k_files / sizeof k_files[0])

static char g_dir[512]; /* scratch entry, made once per process (harness state only) */

static void cleanup(void) {
    for (size_t i = 0; i < N_FILES && g_dir[0]; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s", g_dir, k_files[i]);
        unlink(path);
    }
    if (g_dir[0]) rmdir(g_dir);
}

static const char *scratch_dir(void) {
    if (g_dir[0]) return g_dir;
    atexit(cleanup);
    const char *base = getenv("PC_FUZZ_TMP");
    struct stat sb;
    if (!base || !*base) base = stat("/dev/shm", &sb) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/pc_fuzz_cache_%ld.pcc", base, (long)getpid());
    mkdir(g_dir, 0700);
    return g_dir;
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The input's files into the scratch entry (absent ones removed). */
static void write_entry(const char *dir, const uint8_t *data, size_t size) {
    size_t pos = 0;
    for (size_t i = 0; i < N_FILES; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s", dir, k_files[i]);
        unlink(path);
        if (pos + 4 > size) continue;
        uint32_t n = le32(data + pos);
        pos += 4;
        if (n == 0xFFFFFFFFu) continue;
        if (n > size - pos) n = (uint32_t)(size - pos);
        FILE *f = fopen(path, "wb");
        check(f != NULL);
        check(fwrite(data + pos, 1, n, f) == n);
        check(fclose(f) == 0);
        pos += n;
    }
}

PC_FUZZ_TARGET(cache) {
    const char *dir = scratch_dir();
    write_entry(dir, data, size);
    pc_error err;
    memset(&err, 0, sizeof err);
    pc_graph *g = NULL;
    pc_load_opts o = pc_load_opts_default();
    o.threads = 1;
    if (pc_graph_load(dir, &o, &g, &err) != PC_OK) {
        check(g == NULL && err.msg[0] != 0);
        return 0;
    }
    int64_t n = pc_graph_num_nodes(g), e = pc_graph_num_edges(g), c = pc_graph_num_configs(g);
    check(n >= 0 && e >= 0 && c >= 0);
    const int32_t *ops = pc_graph_node_opcode(g);
    for (int64_t i = 0; i < n; i++) (void)ops[i];
    const int32_t *ei = pc_graph_edge_index(g);
    for (int64_t i = 0; i < 2 * e; i++) (void)ei[i];
    pc_report *r = pc_report_new();
    check(r != NULL);
    pc_status st = pc_graph_validate(g, 1, r);
    check(st == PC_OK || pc_report_count(r) > 0 || st == PC_ERR_NOMEM);
    pc_report_free(r);
    pc_graph_free(g);
    return 0;
}
