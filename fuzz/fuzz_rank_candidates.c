/*
 * Fuzz target: the candidates file of `perfcast rank --model M PROG.hlo
 * --configs FILE` (src/hlo/rank.c, read through pc_rank_sets_from_modules of
 * src/hlo/candidates.h, which reads text in memory as it reads the file).
 * The first byte picks the model kind (odd, e.g. 'K': tile; even, e.g. 'L':
 * layout), the rest is the candidates file, against a fixed program with one
 * convolution, one dot (in a fusion) and one reshape.
 *
 * Accepted: one set (the module, or its one kernel) with one configuration per
 * line that is not blank or a comment, the graph holding as many, layout
 * values that are dimensions 0..5 or -1, tile features finite and >= 0; each
 * configuration spelled by pc_rank_set_describe reads back to the same
 * features. Rejected: a format error naming the file and a candidate line
 * ("fuzz.cfg:LINE: ..."), or saying it has no configurations when none is.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hlo/candidates.h"
#include "hlo/text.h"
#include "perfcast/dataset.h"

/* Configurable nodes: the dot (fused computation first), the convolution, the reshape. */
static const char k_program[] =
    "HloModule fz\n"
    "fused {\n"
    "  p = f32[8,16] parameter(0)\n"
    "  q = f32[16,4] parameter(1)\n"
    "  ROOT d = f32[8,4] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[1,8,8,4] parameter(0)\n"
    "  w = f32[3,3,4,16] parameter(1)\n"
    "  c = f32[1,8,8,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
    "dim_labels=b01f_01io->b01f\n"
    "  r = f32[8,128] reshape(c)\n"
    "  s = f32[8,16] slice(r), slice={[0:8], [0:16]}\n"
    "  k = f32[16,4] parameter(2)\n"
    "  ROOT f = f32[8,4] fusion(s, k), kind=kOutput, calls=fused\n"
    "}\n";
#define CONFIG_NODES 3

/* What the reader keeps of line [s, e): up to a NUL (it reads C strings) or a '#'. */
static int is_candidate(const char *s, const char *e) {
    for (; s < e && *s && *s != '#'; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 1;
    return 0;
}

/* Line numbers of the candidate lines, counted independently of the reader. */
static int64_t count_lines(const char *text, size_t len, int64_t want_line, int *is_cand) {
    int64_t cands = 0, lineno = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) + 1 : len - at;
        int c = is_candidate(text + at, text + at + n);
        cands += c;
        if (++lineno == want_line) *is_cand = c;
        at += n;
    }
    return cands;
}

static pc_status sets_of(pc_hlo_module *m, pc_kind kind, const char *cfg, size_t len,
                         pc_rank_set ***sets, int *n, pc_error *err) {
    pc_rank_opts o = pc_rank_opts_default();
    o.kind = kind;
    pc_hlo_module *const mods[1] = {m};
    return pc_rank_sets_from_modules("fz.hlo", mods, 1, &o, cfg, len, "fuzz.cfg", sets, n, err);
}

/* The configurations' features: layout (c, 3, 18), tile (c, 24). */
static const float *features(pc_graph *g, pc_kind kind, size_t *count) {
    int64_t c = pc_graph_num_configs(g);
    *count = (size_t)c * (kind == PC_KIND_LAYOUT ? CONFIG_NODES * 18 : 24);
    return kind == PC_KIND_LAYOUT ? pc_graph_node_config_feat(g) : pc_graph_config_feat(g);
}

/* Layout: dims 0..5 or -1 (default). Tile: per list 6 sizes (0 = none), then a sum and a
 * product that wrap as the extractor's int64 does, so only those may be negative. */
static void check_values(const float *f, size_t count, pc_kind kind) {
    for (size_t i = 0; i < count; i++) {
        if (kind == PC_KIND_LAYOUT) check(f[i] >= -1 && f[i] <= 5 && f[i] == floorf(f[i]));
        else check(isfinite(f[i]) && (i % 8 >= 6 || f[i] >= 0));
    }
}

/* Every configuration spelled out and read back gives the same features. */
static void check_round_trip(pc_hlo_module *m, pc_rank_set *s, pc_kind kind) {
    int64_t c = pc_rank_set_count(s);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    check(out != NULL);
    for (int64_t k = 0; k < c; k++) {
        char *d = pc_rank_set_describe(s, k, 0), *j = pc_rank_set_describe(s, k, 1);
        check(d && j && !strchr(d, '\n') && !strchr(d, '#'));
        fprintf(out, "%s\n", d);
        free(d);
        free(j);
    }
    check(pc_rank_set_describe(s, c, 0) == NULL && pc_rank_set_describe(s, -1, 0) == NULL);
    check(fclose(out) == 0);
    pc_rank_set **back = NULL;
    int nb = 0;
    pc_error err;
    pc_status st = sets_of(m, kind, text, len, &back, &nb, &err);
    if (st) fprintf(stderr, "described candidates do not read back: %s\n%s", err.msg, text);
    check(st == PC_OK && nb == 1 && pc_rank_set_count(back[0]) == c);
    size_t na, nbk;
    const float *a = features(pc_rank_set_graph(s), kind, &na);
    const float *b = features(pc_rank_set_graph(back[0]), kind, &nbk);
    check(na == nbk && memcmp(a, b, na * sizeof *a) == 0);
    pc_rank_sets_free(back, nb);
    free(text);
}

static void check_accepted(pc_hlo_module *m, pc_rank_set **sets, int n, pc_kind kind,
                           int64_t lines) {
    check(n == 1 && sets && sets[0]);
    pc_rank_set *s = sets[0];
    check(pc_rank_set_count(s) == lines);
    check(pc_rank_set_config_nodes(s) == (kind == PC_KIND_LAYOUT ? CONFIG_NODES : 0));
    pc_graph *g = pc_rank_set_graph(s);
    check(g && pc_graph_kind(g) == kind && pc_graph_num_configs(g) == lines);
    size_t count;
    const float *f = features(g, kind, &count);
    check(f != NULL);
    check_values(f, count, kind);
    check_round_trip(m, s, kind);
}

static void check_rejected(const pc_error *err, pc_status st, const char *cfg, size_t len,
                           int64_t lines) {
    check(err->code == st && (st == PC_ERR_FORMAT || st == PC_ERR_RANGE));
    if (lines == 0) {
        check(strncmp(err->msg, "fuzz.cfg: no configurations", 27) == 0);
        return;
    }
    long long line = 0;
    int is_cand = 0;
    check(sscanf(err->msg, "fuzz.cfg:%lld: ", &line) == 1 && line >= 1);
    count_lines(cfg, len, line, &is_cand);
    check(is_cand); /* the line named is a candidate line of the file */
}

PC_FUZZ_TARGET(rank_candidates) {
    if (size == 0) return 0;
    pc_kind kind = (data[0] & 1) ? PC_KIND_TILE : PC_KIND_LAYOUT;
    const char *cfg = (const char *)data + 1;
    size_t len = size - 1;
    pc_hlo_module **mods = NULL;
    int nm = 0;
    pc_error err;
    pc_error_clear(&err);
    check(pc_hlo_parse_text(k_program, sizeof k_program - 1, "fz.hlo", &mods, &nm, NULL, &err) ==
              PC_OK &&
          nm == 1);
    int dummy = 0;
    int64_t lines = count_lines(cfg, len, -1, &dummy);
    pc_rank_set **sets = NULL;
    int n = 0;
    pc_status st = sets_of(mods[0], kind, cfg, len, &sets, &n, &err);
    if (st == PC_OK) {
        check_accepted(mods[0], sets, n, kind, lines);
        pc_rank_sets_free(sets, n);
    } else {
        check(sets == NULL && n == 0);
        check_rejected(&err, st, cfg, len, lines);
    }
    pc_hlo_modules_free(mods, nm);
    return 0;
}
