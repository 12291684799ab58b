/*
 * Candidate configurations of a user's HLO program, for ranking with a
 * trained model (include/perfcast/hlo.h, "ranking a program's candidate
 * configurations"): the graph is featurized in memory, candidates come from
 * a file or are enumerated, and a pc_graph is assembled with
 * pc_graph_from_arrays, so scoring goes through the same code as a dataset
 * file's.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "hlo/candidates.h"
#include "hlo/import.h"
#include "hlo/text.h"
#include "io/io_internal.h"
#include "tpugraphs/features.h"
#include "tpugraphs/opcode.h"

#define TILE_MAX 16       /* sizes per tile-bounds list */
#define LSLOTS PC_LAYOUT_CONFIG_DIM
#define MAX_CANDIDATES 1000000

typedef struct lnode {
    int64_t node;
    char *name;
    int32_t opcode_id;
    int tensors, slots;
    int rank[3];
} lnode;

typedef struct tcfg {
    int n[3]; /* kernel, output, input */
    int64_t v[3][TILE_MAX];
} tcfg;

static const char *const tile_keys[3] = {"kernel", "output", "input"};
static const char *const tensor_keys[3] = {"output", "input", "kernel"};

struct pc_rank_set {
    char *name;
    pc_kind kind;
    pc_graph *g;
    int64_t c;
    lnode *nodes; /* layout */
    int64_t nc;
    int8_t *layout; /* (c, nc, 18) */
    tcfg *tiles;    /* (c) */
};

pc_rank_opts pc_rank_opts_default(void) {
    pc_rank_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.kind = PC_KIND_LAYOUT;
    o.candidates = 64;
    o.seed = 1;
    o.max_memory = PC_MEMORY_AUTO;
    return o;
}

/* ---- small growable string ---------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) PC_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int need = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (need < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)need < b->cap) {
            b->len += (size_t)need;
            return;
        }
        char *ns = pc_grow_array(b->s, &b->cap, b->len + (size_t)need + 1, 1);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
    }
}

static char *sb_take(sbuf *b) {
    if (b->oom) {
        free(b->s);
        return NULL;
    }
    if (!b->s) return strdup("");
    return b->s;
}

/* JSON string body: names are printable already; quote and backslash escaped. */
static void sb_json_str(sbuf *b, const char *s) {
    char nb[PC_HLO_NAME_BUF];
    sb_printf(b, "\"");
    for (const char *p = pc_hlo_printable(s, nb); *p; p++)
        sb_printf(b, (*p == '"' || *p == '\\') ? "\\%c" : "%c", *p);
    sb_printf(b, "\"");
}

/* ---- the candidates file ---------------------------------------------- */

typedef struct cfg_line {
    int64_t lineno;
    char *text; /* comment stripped */
} cfg_line;

typedef struct cfg_file {
    const char *path;
    cfg_line *lines;
    int64_t n;
    size_t cap;
} cfg_file;

static void cfg_file_free(cfg_file *f) {
    for (int64_t i = 0; i < f->n; i++) free(f->lines[i].text);
    free(f->lines);
    memset(f, 0, sizeof *f);
}

static int blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 0;
    return 1;
}

static pc_status cfg_add(cfg_file *f, int64_t lineno, const char *text, pc_error *err) {
    if (f->n == MAX_CANDIDATES)
        return pc_fail(err, PC_ERR_RANGE, "%s:%lld: more than %d configurations", f->path,
                       (long long)lineno, MAX_CANDIDATES);
    if ((size_t)f->n == f->cap) {
        cfg_line *nl = pc_grow_array(f->lines, &f->cap, f->cap + 1, sizeof *nl);
        if (!nl) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", f->path);
        f->lines = nl;
    }
    f->lines[f->n].lineno = lineno;
    if (!(f->lines[f->n].text = strdup(text)))
        return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", f->path);
    f->n++;
    return PC_OK;
}

/* One line as getline gives it (newline kept): a NUL ends its text, '#' a comment. */
static pc_status cfg_line_in(cfg_file *f, int64_t lineno, char *line, pc_error *err) {
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    return blank(line) ? PC_OK : cfg_add(f, lineno, line, err);
}

/* A file without a configuration is an error; on error nothing is kept. */
static pc_status cfg_done(cfg_file *f, pc_status st, pc_error *err) {
    if (!st && f->n == 0)
        st = pc_fail(err, PC_ERR_FORMAT, "%s: no configurations (expected one per line)", f->path);
    if (st) cfg_file_free(f);
    return st;
}

static pc_status cfg_file_read(const char *path, cfg_file *f, pc_error *err) {
    memset(f, 0, sizeof *f);
    f->path = path;
    int fd = -1;
    uint64_t size = 0;
    pc_status ost = pc_open_regular(path, &fd, &size, err); /* a FIFO is refused, not waited on */
    if (ost) {
        pc_error_prefix(err, "the candidates file: ");
        return ost;
    }
    FILE *in = fdopen(fd, "r");
    if (!in) {
        close(fd);
        return pc_fail(err, PC_ERR_IO, "%s: cannot open the candidates file: %s", path,
                       strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    int64_t lineno = 0;
    pc_status st = PC_OK;
    while (!st && getline(&line, &cap, in) >= 0) st = cfg_line_in(f, ++lineno, line, err);
    free(line);
    fclose(in);
    return cfg_done(f, st, err);
}

/* The same for `len` bytes in memory, split into lines as getline would split the file. */
static pc_status cfg_text_read(const char *text, size_t len, const char *name, cfg_file *f,
                               pc_error *err) {
    memset(f, 0, sizeof *f);
    f->path = name;
    pc_status st = PC_OK;
    int64_t lineno = 0;
    for (size_t at = 0; at < len && !st;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) + 1 : len - at;
        char *line = malloc(n + 1);
        if (!line) {
            st = pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", name);
            break;
        }
        memcpy(line, text + at, n);
        line[n] = '\0';
        st = cfg_line_in(f, ++lineno, line, err);
        free(line);
        at += n;
    }
    return cfg_done(f, st, err);
}

/* Splits off the next whitespace-separated token: [*tok, *tok_end). */
static int next_token(const char **p, const char **tok, const char **tok_end) {
    const char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    if (!*s) return 0;
    *tok = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') s++;
    *tok_end = s;
    *p = s;
    return 1;
}

/*
 * A comma-separated integer list in [s, e) into v (at most cap values).
 * Returns NULL, or a static description of what is wrong.
 */
static const char *parse_list(const char *s, const char *e, int64_t lo, int64_t hi, int64_t *v,
                              int cap, int *n) {
    *n = 0;
    if (s == e) return NULL;
    for (;;) {
        if (*n == cap) return "too many values";
        char *end;
        errno = 0;
        long long x = strtoll(s, &end, 10);
        if (end == s || end > e || errno) return "expected an integer";
        if (x < lo || x > hi) return "value out of range";
        v[(*n)++] = x;
        s = end;
        if (s == e) return NULL;
        if (*s != ',') return "expected ',' between values";
        s++;
    }
}

/* ---- layout candidates -------------------------------------------------- */

static int64_t find_node(const pc_rank_set *s, const char *name, size_t len) {
    if (len > 1 && name[0] == '@') {
        char *end;
        long long j = strtoll(name + 1, &end, 10);
        if (end == name + len && j >= 0 && j < s->nc) return j;
        return -1;
    }
    for (int64_t j = 0; j < s->nc; j++)
        if (strlen(s->nodes[j].name) == len && !memcmp(s->nodes[j].name, name, len)) return j;
    return -1;
}

static const char *check_perm(const int64_t *v, int n, int rank) {
    if (n > rank) return "more dimensions than the tensor's rank";
    for (int i = 0; i < n; i++) {
        if (v[i] >= rank) return "not a dimension of the tensor";
        for (int j = 0; j < i; j++)
            if (v[j] == v[i]) return "a dimension listed twice";
    }
    return NULL;
}

/* One NODE=T0/T1/T2 item into row (nc x 18). */
static pc_status layout_item(const pc_rank_set *s, const cfg_file *f, int64_t lineno,
                             const char *tok, const char *e, int8_t *row, pc_error *err) {
    const char *eq = memchr(tok, '=', (size_t)(e - tok));
    if (!eq)
        return pc_fail(err, PC_ERR_FORMAT, "%s:%lld: '%.*s': expected NODE=T0/T1/T2 (or "
                       "'default')", f->path, (long long)lineno, (int)(e - tok), tok);
    int64_t j = find_node(s, tok, (size_t)(eq - tok));
    if (j < 0)
        return pc_fail(err, PC_ERR_FORMAT, "%s:%lld: '%.*s' is not a configurable node of "
                       "module '%s' (expected the name of one of its %lld convolution, dot or "
                       "reshape instructions, e.g. '%s', or @0..@%lld)", f->path,
                       (long long)lineno, (int)(eq - tok), tok, s->name, (long long)s->nc,
                       s->nodes[0].name, (long long)s->nc - 1);
    const lnode *nd = &s->nodes[j];
    /* a node named again on the line: the last item wins whole, as a repeated tile list does
     * (merging would leave mixed tensors, e.g. "r=1,0 r=0" an output layout of 0,0) */
    memset(row + j * LSLOTS, 0xff, LSLOTS);
    const char *p = eq + 1;
    for (int t = 0; p <= e; t++) {
        const char *slash = memchr(p, '/', (size_t)(e - p));
        const char *te = slash ? slash : e;
        if (t >= nd->tensors)
            return pc_fail(err, PC_ERR_FORMAT, "%s:%lld: node '%s' (%s) has %d tensors, more "
                           "are given", f->path, (long long)lineno, nd->name,
                           pc_hlo_opcode_name(nd->opcode_id), nd->tensors);
        int64_t v[6];
        int n = 0;
        const char *why = NULL;
        if (!(te - p == 1 && *p == '-')) why = parse_list(p, te, 0, 5, v, 6, &n);
        if (!why) why = check_perm(v, n, nd->rank[t]);
        if (why)
            return pc_fail(err, PC_ERR_FORMAT, "%s:%lld: node '%s' %s layout '%.*s': %s "
                           "(expected '-' or distinct dimensions of its rank-%d shape, "
                           "most minor first)", f->path, (long long)lineno, nd->name,
                           tensor_keys[t], (int)(te - p), p, why, nd->rank[t]);
        for (int i = 0; i < n; i++) row[j * LSLOTS + t * 6 + i] = (int8_t)v[i];
        if (!slash) break;
        p = slash + 1;
    }
    return PC_OK;
}

static pc_status layout_line(const pc_rank_set *s, const cfg_file *f, const cfg_line *ln,
                             int8_t *row, pc_error *err) {
    memset(row, 0xff, (size_t)s->nc * LSLOTS); /* -1: the compiler's default */
    const char *p = ln->text, *tok, *e;
    while (next_token(&p, &tok, &e)) {
        if (e - tok == 7 && !memcmp(tok, "default", 7)) continue;
        pc_status st = layout_item(s, f, ln->lineno, tok, e, row, err);
        if (st) return st;
    }
    return PC_OK;
}

static uint64_t row_hash(const int8_t *r, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)r[i]) * 1099511628211ull;
    return h;
}

/* A random layout: every node default or, with probability 1/2, random orders. */
static void random_layout(const pc_rank_set *s, uint64_t *rng, int8_t *row) {
    memset(row, 0xff, (size_t)s->nc * LSLOTS);
    for (int64_t j = 0; j < s->nc; j++) {
        const lnode *nd = &s->nodes[j];
        if (pc_splitmix64(rng) & 1) continue;
        for (int t = 0; t < nd->tensors; t++) {
            int r = nd->rank[t], perm[6];
            if (r <= 0 || r > 6) continue; /* node_config_feat holds dims 0..5 only */
            for (int i = 0; i < r; i++) perm[i] = r - 1 - i; /* default order, then shuffled */
            for (int i = r - 1; i > 0; i--) {
                int k = (int)(pc_splitmix64(rng) % (uint64_t)(i + 1)), x = perm[i];
                perm[i] = perm[k];
                perm[k] = x;
            }
            int keep = r < nd->slots ? r : nd->slots;
            for (int i = 0; i < keep && i < 6; i++)
                row[j * LSLOTS + t * 6 + i] = (int8_t)perm[i];
        }
    }
}

static pc_status enumerate_layouts(pc_rank_set *s, const pc_rank_opts *o, pc_error *err) {
    size_t row = (size_t)s->nc * LSLOTS;
    uint64_t *hash = pc_malloc_array((uint64_t)o->candidates, sizeof *hash);
    s->layout = pc_malloc_array((uint64_t)o->candidates, row);
    if (!hash || !s->layout) {
        free(hash);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory for %lld candidates",
                       (long long)o->candidates);
    }
    memset(s->layout, 0xff, row);
    hash[0] = row_hash(s->layout, row);
    s->c = 1;
    uint64_t rng = o->seed;
    for (int64_t tries = 0; s->c < o->candidates && tries < 50 * o->candidates; tries++) {
        int8_t *r = s->layout + (size_t)s->c * row;
        random_layout(s, &rng, r);
        uint64_t h = row_hash(r, row);
        int dup = 0;
        for (int64_t k = 0; k < s->c && !dup; k++)
            dup = hash[k] == h && !memcmp(s->layout + (size_t)k * row, r, row);
        if (!dup) hash[s->c++] = h;
    }
    free(hash);
    return PC_OK;
}

static pc_status layouts_from_file(pc_rank_set *s, const cfg_file *f, pc_error *err) {
    size_t row = (size_t)s->nc * LSLOTS;
    s->layout = pc_malloc_array((uint64_t)f->n, row);
    if (!s->layout) return pc_fail(err, PC_ERR_NOMEM, "out of memory for %lld candidates",
                                   (long long)f->n);
    for (int64_t k = 0; k < f->n; k++) {
        pc_status st = layout_line(s, f, &f->lines[k], s->layout + (size_t)k * row, err);
        if (st) return st;
    }
    s->c = f->n;
    return PC_OK;
}

/* ---- tile candidates ------------------------------------------------------ */

static pc_status tile_line(const cfg_file *f, const cfg_line *ln, tcfg *t, pc_error *err) {
    memset(t, 0, sizeof *t);
    const char *p = ln->text, *tok, *e;
    while (next_token(&p, &tok, &e)) {
        const char *eq = memchr(tok, '=', (size_t)(e - tok));
        int which = 1; /* a bare list: output bounds */
        if (eq) {
            which = -1;
            for (int i = 0; i < 3; i++)
                if ((size_t)(eq - tok) == strlen(tile_keys[i]) &&
                    !memcmp(tok, tile_keys[i], strlen(tile_keys[i])))
                    which = i;
            if (which < 0)
                return pc_fail(err, PC_ERR_FORMAT, "%s:%lld: '%.*s': unknown field (expected "
                               "kernel=, output= or input=)", f->path, (long long)ln->lineno,
                               (int)(eq - tok), tok);
            tok = eq + 1;
        }
        const char *why = parse_list(tok, e, 1, INT64_C(1) << 40, t->v[which], TILE_MAX,
                                     &t->n[which]);
        if (why)
            return pc_fail(err, PC_ERR_FORMAT, "%s:%lld: %s bounds '%.*s': %s (expected up to "
                           "%d positive sizes separated by ',')", f->path,
                           (long long)ln->lineno, tile_keys[which], (int)(e - tok), tok, why,
                           TILE_MAX);
    }
    return PC_OK;
}

/* Per output dimension: d, then the powers of two below d, descending. */
static int tile_choices(int64_t d, int64_t *out, int cap) {
    int n = 0;
    if (d < 1) d = 1;
    out[n++] = d;
    int64_t p = 1;
    while (p * 2 < d) p *= 2;
    for (; p >= 1 && n < cap; p /= 2)
        if (p != d) out[n++] = p;
    return n;
}

typedef struct tile_space {
    int rank;
    int nch[TILE_MAX];
    int64_t ch[TILE_MAX][64];
} tile_space;

static void tile_at(const tile_space *sp, const int *digit, tcfg *t) {
    memset(t, 0, sizeof *t);
    t->n[1] = sp->rank;
    for (int d = 0; d < sp->rank; d++) t->v[1][d] = sp->ch[d][digit[d]];
}

static int tile_same(const tcfg *a, const tcfg *b) {
    return a->n[1] == b->n[1] && !memcmp(a->v[1], b->v[1], (size_t)a->n[1] * sizeof a->v[1][0]);
}

static void tile_enum_all(pc_rank_set *s, const tile_space *sp, int64_t total) {
    int digit[TILE_MAX] = {0};
    for (int64_t k = 0; k < total; k++) {
        tile_at(sp, digit, &s->tiles[s->c++]);
        for (int d = sp->rank - 1; d >= 0; d--) { /* mixed-radix increment, last dim fastest */
            if (++digit[d] < sp->nch[d]) break;
            digit[d] = 0;
        }
    }
}

static void tile_enum_sample(pc_rank_set *s, const tile_space *sp, const pc_rank_opts *o) {
    int digit[TILE_MAX] = {0};
    tile_at(sp, digit, &s->tiles[s->c++]);
    uint64_t rng = o->seed;
    for (int64_t tries = 0; s->c < o->candidates && tries < 50 * o->candidates; tries++) {
        for (int d = 0; d < sp->rank; d++)
            digit[d] = (int)(pc_splitmix64(&rng) % (uint64_t)sp->nch[d]);
        tcfg *t = &s->tiles[s->c];
        tile_at(sp, digit, t);
        int dup = 0;
        for (int64_t k = 0; k < s->c && !dup; k++) dup = tile_same(&s->tiles[k], t);
        if (!dup) s->c++;
    }
}

static pc_status enumerate_tiles(pc_rank_set *s, const pc_hlo_kernel *k, const pc_rank_opts *o,
                                 pc_error *err) {
    int64_t dims[TILE_MAX];
    tile_space sp;
    pc_hlo_kernel_out_dims(k, dims, &sp.rank, TILE_MAX);
    int64_t total = 1;
    for (int d = 0; d < sp.rank; d++) {
        sp.nch[d] = tile_choices(dims[d], sp.ch[d], 64);
        total = total > o->candidates ? total : total * sp.nch[d];
    }
    int64_t want = total < o->candidates ? total : o->candidates;
    s->tiles = pc_calloc_array((uint64_t)want, sizeof *s->tiles);
    if (!s->tiles) return pc_fail(err, PC_ERR_NOMEM, "out of memory for %lld candidates",
                                  (long long)want);
    if (total <= o->candidates) tile_enum_all(s, &sp, total);
    else tile_enum_sample(s, &sp, o);
    return PC_OK;
}

static pc_status tiles_from_file(pc_rank_set *s, const cfg_file *f, pc_error *err) {
    s->tiles = pc_calloc_array((uint64_t)f->n, sizeof *s->tiles);
    if (!s->tiles) return pc_fail(err, PC_ERR_NOMEM, "out of memory for %lld candidates",
                                  (long long)f->n);
    for (int64_t k = 0; k < f->n; k++) {
        pc_status st = tile_line(f, &f->lines[k], &s->tiles[k], err);
        if (st) return st;
    }
    s->c = f->n;
    return PC_OK;
}

/* ---- the graph ---------------------------------------------------------------- */

static pc_array view(pc_dtype t, int ndim, int64_t d0, int64_t d1, int64_t d2, void *data) {
    pc_array a = PC_ARRAY_INIT;
    a.dtype = t;
    a.ndim = ndim;
    a.shape[0] = d0;
    a.shape[1] = d1;
    a.shape[2] = d2;
    a.data = data;
    return a;
}

/* Layout node_config_feat (c, nc, 18) and node_config_ids from the candidates. */
static pc_status layout_arrays(const pc_rank_set *s, float **feat, int64_t **ids, pc_error *err) {
    uint64_t count = (uint64_t)s->c * (uint64_t)s->nc * LSLOTS;
    *feat = pc_malloc_array(count ? count : 1, sizeof **feat);
    *ids = pc_malloc_array((uint64_t)s->nc, sizeof **ids);
    if (!*feat || !*ids) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < count; i++) (*feat)[i] = (float)s->layout[i];
    for (int64_t j = 0; j < s->nc; j++) (*ids)[j] = s->nodes[j].node;
    return PC_OK;
}

static pc_status tile_arrays(const pc_rank_set *s, float **feat, pc_error *err) {
    *feat = pc_malloc_array((uint64_t)s->c * PC_TILE_CONFIG_DIM, sizeof **feat);
    if (!*feat) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < s->c; k++) {
        const tcfg *t = &s->tiles[k];
        pc_tpug_tile_feat((pc_tpug_seq){t->v[0], t->n[0]}, (pc_tpug_seq){t->v[1], t->n[1]},
                          (pc_tpug_seq){t->v[2], t->n[2]}, *feat + k * PC_TILE_CONFIG_DIM);
    }
    return PC_OK;
}

/* Assembles s->g: the featurized graph, the candidates, zero runtimes (none measured). */
static pc_status make_graph(pc_rank_set *s, const pc_hlo_graph *hg, const char *label,
                            pc_error *err) {
    float *feat = NULL;
    int64_t *ids = NULL, *zeros = pc_calloc_array((uint64_t)s->c, sizeof *zeros);
    pc_status st = zeros ? PC_OK : pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (!st) st = s->kind == PC_KIND_LAYOUT ? layout_arrays(s, &feat, &ids, err)
                                            : tile_arrays(s, &feat, err);
    if (!st) {
        const char *keys[7] = {"node_feat", "node_opcode", "edge_index", "config_runtime",
                               NULL, NULL, NULL};
        pc_array a[7];
        a[0] = view(PC_DTYPE_F32, 2, hg->n, PC_TPUG_NODE_FEATS, 0, hg->node_feat);
        a[1] = view(PC_DTYPE_U8, 1, hg->n, 0, 0, hg->node_opcode);
        a[2] = view(PC_DTYPE_I64, 2, hg->m, 2, 0, hg->edges);
        a[3] = view(PC_DTYPE_I64, 1, s->c, 0, 0, zeros);
        if (s->kind == PC_KIND_LAYOUT) {
            keys[4] = "node_config_feat";
            keys[5] = "node_config_ids";
            keys[6] = "node_splits";
            a[4] = view(PC_DTYPE_F32, 3, s->c, s->nc, LSLOTS, feat);
            a[5] = view(PC_DTYPE_I64, 1, s->nc, 0, 0, ids);
            a[6] = view(PC_DTYPE_I64, 2, 1, hg->k, 0, hg->node_splits);
        } else {
            keys[4] = "config_feat";
            keys[5] = "config_runtime_normalizers";
            a[4] = view(PC_DTYPE_F32, 2, s->c, PC_TILE_CONFIG_DIM, 0, feat);
            a[5] = view(PC_DTYPE_I64, 1, s->c, 0, 0, zeros);
        }
        st = pc_graph_from_arrays(label, s->kind, keys, a, s->kind == PC_KIND_LAYOUT ? 7 : 6,
                                  &s->g, err);
    }
    free(feat);
    free(ids);
    free(zeros);
    return st;
}

/* ---- describing a configuration ------------------------------------------------ */

static void sb_list(sbuf *b, const int64_t *v, int n, int json) {
    if (json) sb_printf(b, "[");
    for (int i = 0; i < n; i++) sb_printf(b, "%s%lld", i ? (json ? ", " : ",") : "", (long long)v[i]);
    if (json) sb_printf(b, "]");
}

/* The tensor's minor_to_major prefix in a row (values until the first -1). */
static int tensor_dims(const int8_t *row, int t, int64_t *v) {
    int n = 0;
    while (n < 6 && row[t * 6 + n] >= 0) {
        v[n] = row[t * 6 + n];
        n++;
    }
    return n;
}

/* A name safe to use in the candidates notation, else @J. */
static int plain_name(const char *s) {
    if (!*s || *s == '@') return 0;
    for (; *s; s++)
        if (*s <= ' ' || *s > '~' || *s == '=' || *s == '#' || *s == '/') return 0;
    return 1;
}

static void describe_node(sbuf *b, const pc_rank_set *s, int64_t j, const int8_t *row,
                          int json, int *first) {
    const lnode *nd = &s->nodes[j];
    int64_t v[3][6];
    int n[3], last = -1;
    for (int t = 0; t < nd->tensors; t++)
        if ((n[t] = tensor_dims(row, t, v[t])) > 0) last = t;
    if (last < 0) return;
    sb_printf(b, "%s", *first ? "" : json ? ", " : " ");
    *first = 0;
    if (json) {
        sb_printf(b, "{\"node\": %lld, \"name\": ", (long long)nd->node);
        sb_json_str(b, nd->name);
        sb_printf(b, ", \"opcode\": \"%s\"", pc_hlo_opcode_name(nd->opcode_id));
        for (int t = 0; t < nd->tensors; t++) {
            if (!n[t]) continue;
            sb_printf(b, ", \"%s\": ", tensor_keys[t]);
            sb_list(b, v[t], n[t], 1);
        }
        sb_printf(b, "}");
        return;
    }
    if (plain_name(nd->name)) sb_printf(b, "%s=", nd->name);
    else sb_printf(b, "@%lld=", (long long)j);
    for (int t = 0; t <= last; t++) {
        if (t) sb_printf(b, "/");
        if (n[t]) sb_list(b, v[t], n[t], 0);
        else sb_printf(b, "-");
    }
}

static char *describe_layout_row(const pc_rank_set *s, const int8_t *row, int json) {
    sbuf b = {0};
    int first = 1;
    if (json) sb_printf(&b, "[");
    for (int64_t j = 0; j < s->nc; j++)
        describe_node(&b, s, j, row + j * LSLOTS, json, &first);
    if (json) sb_printf(&b, "]");
    else if (first) sb_printf(&b, "default");
    return sb_take(&b);
}

static char *describe_layout(const pc_rank_set *s, int64_t k, int json) {
    return describe_layout_row(s, s->layout + (size_t)k * (size_t)s->nc * LSLOTS, json);
}

static char *describe_tile_cfg(const tcfg *t, int json) {
    sbuf b = {0};
    static const int order[3] = {1, 0, 2}; /* output first: what a reader looks for */
    int first = 1;
    if (json) sb_printf(&b, "{");
    for (int i = 0; i < 3; i++) {
        int w = order[i];
        if (!json && !t->n[w] && w != 1) continue;
        sb_printf(&b, "%s", first ? "" : json ? ", " : " ");
        first = 0;
        sb_printf(&b, json ? "\"%s\": " : "%s=", tile_keys[w]);
        sb_list(&b, t->v[w], t->n[w], json);
    }
    if (json) sb_printf(&b, "}");
    return sb_take(&b);
}

char *pc_rank_set_describe(const pc_rank_set *s, int64_t k, int json) {
    if (!s || k < 0 || k >= s->c) return NULL;
    return s->kind == PC_KIND_LAYOUT ? describe_layout(s, k, json)
                                     : describe_tile_cfg(&s->tiles[k], json);
}

char *pc_rank_set_describe_config(const pc_rank_set *s, const float *config, int json) {
    if (!s || !config) return NULL;
    if (s->kind == PC_KIND_TILE) {
        tcfg t;
        memset(&t, 0, sizeof t);
        for (int l = 0; l < 3; l++)
            while (t.n[l] < 6 && config[l * 8 + t.n[l]] > 0) {
                t.v[l][t.n[l]] = (int64_t)config[l * 8 + t.n[l]];
                t.n[l]++;
            }
        return describe_tile_cfg(&t, json);
    }
    size_t n = (size_t)s->nc * LSLOTS;
    int8_t *row = malloc(n ? n : 1);
    if (!row) return NULL;
    for (size_t i = 0; i < n; i++)
        row[i] = config[i] >= 0 && config[i] < 6 ? (int8_t)config[i] : (int8_t)-1;
    char *d = describe_layout_row(s, row, json);
    free(row);
    return d;
}

const char *pc_rank_set_name(const pc_rank_set *s) { return s->name; }
pc_graph *pc_rank_set_graph(pc_rank_set *s) { return s->g; }
int64_t pc_rank_set_count(const pc_rank_set *s) { return s->c; }
int64_t pc_rank_set_config_nodes(const pc_rank_set *s) { return s->nc; }

/* ---- building the sets ------------------------------------------------------------ */

static void set_free(pc_rank_set *s) {
    if (!s) return;
    for (int64_t j = 0; j < s->nc && s->nodes; j++) free(s->nodes[j].name);
    free(s->nodes);
    free(s->layout);
    free(s->tiles);
    pc_graph_free(s->g);
    free(s->name);
    free(s);
}

void pc_rank_sets_free(pc_rank_set **sets, int n) {
    if (!sets) return;
    for (int i = 0; i < n; i++) set_free(sets[i]);
    free(sets);
}

static pc_status copy_nodes(pc_rank_set *s, const pc_hlo_cfg_node *cn, int64_t nc,
                            pc_error *err) {
    s->nodes = pc_calloc_array((uint64_t)nc, sizeof *s->nodes);
    if (!s->nodes) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    s->nc = nc;
    for (int64_t j = 0; j < nc; j++) {
        lnode *d = &s->nodes[j];
        d->node = cn[j].node;
        d->opcode_id = cn[j].inst->opcode_id;
        d->tensors = cn[j].tensors;
        d->slots = cn[j].slots;
        memcpy(d->rank, cn[j].rank, sizeof d->rank);
        if (!(d->name = strdup(cn[j].inst->name ? cn[j].inst->name : "")))
            return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    return PC_OK;
}

typedef struct build_ctx {
    const char *path;
    const pc_rank_opts *o;
    const cfg_file *cfg; /* NULL: enumerate */
    pc_rank_set **sets;
    int n;
    size_t cap;
    pc_import_report *rep;
    uint64_t held; /* what the modules and the sets built so far hold (pc_rank_opts.max_memory) */
} build_ctx;

/* ---- the memory budget (pc_rank_opts.max_memory) ---------------------------------- */

#define BYTES_PER_NODE 1130 /* node_feat and node_opcode, featurized then copied */
#define BYTES_PER_EDGE 32
#define BYTES_PER_LAYOUT_SLOT 9 /* int8 candidate, its float row, the graph's copy */
#define BYTES_PER_TILE (sizeof(tcfg) + 2 * PC_TILE_CONFIG_DIM * sizeof(float) + 16)

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* What the parsed modules hold: their instructions, lists and names (pc_hlo_module_bytes). */
static uint64_t modules_bytes(pc_hlo_module *const *mods, int nmods) {
    uint64_t t = 0;
    for (int i = 0; i < nmods; i++) t = sat_add(t, pc_hlo_module_bytes(mods[i], NULL, NULL));
    return t;
}

/* The featurized graph of m: its nodes and (at most) edges. */
static uint64_t graph_bytes(const pc_hlo_module *m) {
    int64_t nodes = 0, edges = 0;
    pc_hlo_module_bytes(m, &nodes, &edges);
    return sat_add(sat_mul((uint64_t)nodes, BYTES_PER_NODE),
                   sat_mul((uint64_t)edges, BYTES_PER_EDGE));
}

/*
 * A set of `c` candidates of `per` bytes each with the graph of m, on top of
 * what b holds, within pc_rank_opts.max_memory; on success b->held counts it.
 */
static pc_status set_budget(build_ctx *b, const char *label, const pc_hlo_module *m, int64_t c,
                            uint64_t per, int64_t nc, pc_error *err) {
    const uint64_t own = sat_add(graph_bytes(m), sat_mul((uint64_t)c, per));
    const uint64_t need = sat_add(b->held, own);
    char how[300];
    if (nc >= 0)
        snprintf(how, sizeof how, " for its graph and %lld candidates of %lld configurable nodes "
                 "(pc_rank_opts.candidates)%s", (long long)c, (long long)nc,
                 b->n ? ", with the sets before it" : "");
    else
        snprintf(how, sizeof how, " for its graph and %lld candidates (pc_rank_opts.candidates)%s",
                 (long long)c, b->n ? ", with the sets before it" : "");
    pc_status st = pc_io_budget_check(need, b->o->max_memory, label, how, err);
    if (!st) b->held = need;
    return st;
}

static pc_status push_set(build_ctx *b, pc_rank_set *s, pc_error *err) {
    if ((size_t)b->n == b->cap) {
        pc_rank_set **ns = pc_grow_array(b->sets, &b->cap, b->cap + 1, sizeof *ns);
        if (!ns) {
            set_free(s);
            return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        }
        b->sets = ns;
    }
    b->sets[b->n++] = s;
    return PC_OK;
}

static pc_rank_set *new_set(const char *name, pc_kind kind) {
    pc_rank_set *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->kind = kind;
    if (!(s->name = strdup(name ? name : ""))) {
        free(s);
        return NULL;
    }
    return s;
}

static pc_status featurized(const pc_hlo_module *m, pc_rank_set *s, const char *label,
                            build_ctx *b, pc_error *err) {
    pc_hlo_graph hg;
    memset(&hg, 0, sizeof hg);
    pc_status st = pc_hlo_featurize(m, &hg, err);
    if (st) pc_error_prefix(err, "%s", label);
    if (!st) st = make_graph(s, &hg, label, err);
    if (!st && b->rep) {
        b->rep->nodes += hg.n;
        b->rep->edges += hg.m;
    }
    pc_hlo_graph_free(&hg);
    return st;
}

static pc_status layout_set(build_ctx *b, const pc_hlo_module *m, pc_error *err) {
    char nb[PC_HLO_NAME_BUF], label[600];
    snprintf(label, sizeof label, "%s: module '%s'", b->path, pc_hlo_printable(m->name, nb));
    pc_hlo_cfg_node *cn = NULL;
    int64_t nc = 0;
    pc_status st = pc_hlo_layout_nodes(m, &cn, &nc, err);
    if (st) return st;
    if (nc == 0)
        return pc_fail(err, PC_ERR_INVALID, "%s has no configurable nodes (no convolution, dot "
                       "or reshape instruction): nothing for a layout model to rank", label);
    const int64_t c = b->cfg ? b->cfg->n : b->o->candidates;
    st = set_budget(b, label, m, c, (uint64_t)nc * LSLOTS * BYTES_PER_LAYOUT_SLOT + 24, nc, err);
    if (st) {
        free(cn);
        return st;
    }
    pc_rank_set *s = new_set(m->name, PC_KIND_LAYOUT);
    st = s ? copy_nodes(s, cn, nc, err) : pc_fail(err, PC_ERR_NOMEM, "out of memory");
    free(cn);
    if (!st) st = b->cfg ? layouts_from_file(s, b->cfg, err) : enumerate_layouts(s, b->o, err);
    if (!st) st = featurized(m, s, label, b, err);
    if (st) {
        set_free(s);
        return st;
    }
    return push_set(b, s, err);
}

static int kernel_matches(const pc_hlo_kernel *k, const char *want) {
    if (!want) return 1;
    return !strcmp(k->name, want) || (k->fused && k->fused->name && !strcmp(k->fused->name, want));
}

static pc_status tile_set(build_ctx *b, const pc_hlo_module *m, const pc_hlo_kernel *k,
                          int nmods, pc_error *err) {
    char nb[PC_HLO_NAME_BUF], nk[PC_HLO_NAME_BUF], label[600], name[300];
    pc_hlo_printable(m->name, nb);
    pc_hlo_printable(k->name, nk);
    snprintf(label, sizeof label, "%s: module '%s', kernel '%s'", b->path, nb, nk);
    if (nmods > 1) snprintf(name, sizeof name, "%s/%s", m->name ? m->name : "", k->name);
    else snprintf(name, sizeof name, "%s", k->name);
    pc_status st = set_budget(b, label, &k->view, b->cfg ? b->cfg->n : b->o->candidates,
                              BYTES_PER_TILE, -1, err);
    if (st) return st;
    pc_rank_set *s = new_set(name, PC_KIND_TILE);
    st = s ? PC_OK : pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (!st) st = b->cfg ? tiles_from_file(s, b->cfg, err) : enumerate_tiles(s, k, b->o, err);
    if (!st) st = featurized(&k->view, s, label, b, err);
    if (st) {
        set_free(s);
        return st;
    }
    return push_set(b, s, err);
}

/* Every kernel of every module, or the one --kernel names (the error lists them). */
static pc_status tile_sets(build_ctx *b, pc_hlo_module *const *mods, int nmods, pc_error *err) {
    sbuf names = {0};
    int matched = 0;
    pc_status st = PC_OK;
    for (int i = 0; i < nmods && !st; i++) {
        pc_hlo_kernel *ks = NULL;
        int nk = 0;
        st = pc_hlo_kernels(mods[i], &ks, &nk, err);
        for (int j = 0; j < nk && !st; j++) {
            sb_printf(&names, "%s'%s'", names.len ? ", " : "", ks[j].name);
            if (!kernel_matches(&ks[j], b->o->kernel)) continue;
            matched++;
            st = tile_set(b, mods[i], &ks[j], nmods, err);
        }
        pc_hlo_kernels_free(ks, nk);
    }
    if (!st && !matched) {
        char nb[PC_HLO_NAME_BUF];
        st = pc_fail(err, PC_ERR_INVALID, "%s: no kernel named '%s' (kernels: %.300s)", b->path,
                     pc_hlo_printable(b->o->kernel, nb), names.s ? names.s : "none");
    }
    free(names.s);
    return st;
}

static pc_status check_opts(const pc_rank_opts *o, pc_error *err) {
    if (o->kind != PC_KIND_TILE && o->kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "rank: kind must be tile or layout");
    if (o->candidates < 1 || o->candidates > MAX_CANDIDATES)
        return pc_fail(err, PC_ERR_ARG, "rank: candidates must be 1..%d, got %lld",
                       MAX_CANDIDATES, (long long)o->candidates);
    return PC_OK;
}

static void note_text(pc_import_report *rep, int nmods, const pc_hlo_text_stats *ts) {
    if (!rep) return;
    rep->container = "HLO text";
    rep->modules = nmods;
    rep->unknown_opcodes = ts->unknown_opcodes;
    snprintf(rep->first_unknown, sizeof rep->first_unknown, "%s", ts->first_unknown);
}

/* The sets of parsed modules, candidates from `cfg` (NULL: enumerated); on error none. */
static pc_status build_sets(const char *path, const pc_rank_opts *o, const cfg_file *cfg,
                            pc_hlo_module *const *mods, int nmods, pc_import_report *rep,
                            pc_rank_set ***sets, int *n, pc_error *err) {
    build_ctx b = {path, o, cfg, NULL, 0, 0, rep, modules_bytes(mods, nmods)};
    pc_status st = PC_OK;
    if (o->kind == PC_KIND_TILE) st = tile_sets(&b, mods, nmods, err);
    for (int i = 0; i < nmods && !st && o->kind == PC_KIND_LAYOUT; i++)
        st = layout_set(&b, mods[i], err);
    if (st) {
        pc_rank_sets_free(b.sets, b.n);
        return st;
    }
    *sets = b.sets;
    *n = b.n;
    return PC_OK;
}

pc_status pc_rank_sets_from_hlo(const char *path, const pc_rank_opts *opts, pc_rank_set ***sets,
                                int *n, pc_import_report *rep, pc_error *err) {
    if (!sets || !n || !path) return pc_fail(err, PC_ERR_ARG, "rank: NULL argument");
    *sets = NULL;
    *n = 0;
    if (opts && PC_CHECK_SIZE(err, pc_rank_opts, opts)) return PC_ERR_ARG;
    if (rep && PC_CHECK_RESULT_SIZE(err, pc_import_report, rep)) return PC_ERR_ARG;
    pc_rank_opts o = opts ? *opts : pc_rank_opts_default();
    pc_status st = check_opts(&o, err);
    if (st) return st;
    if (rep) {
        pc_report *notes = rep->notes;
        memset(rep, 0, sizeof *rep);
        rep->struct_size = sizeof *rep;
        rep->notes = notes;
        rep->kind = o.kind;
    }
    pc_hlo_module **mods = NULL;
    int nmods = 0;
    pc_hlo_text_stats ts;
    memset(&ts, 0, sizeof ts);
    cfg_file cfg;
    memset(&cfg, 0, sizeof cfg);
    pc_hlo_read_opts rdo = {o.max_memory, o.progress, o.progress_user};
    st = pc_hlo_read_text_file_opts(path, &rdo, &mods, &nmods, &ts, err);
    if (!st) note_text(rep, nmods, &ts);
    if (!st && o.configs) st = cfg_file_read(o.configs, &cfg, err);
    if (!st) st = build_sets(path, &o, o.configs ? &cfg : NULL, mods, nmods, rep, sets, n, err);
    cfg_file_free(&cfg);
    pc_hlo_modules_free(mods, nmods);
    return st;
}

pc_status pc_rank_sets_from_modules(const char *path, pc_hlo_module *const *mods, int nmods,
                                    const pc_rank_opts *opts, const char *configs, size_t len,
                                    const char *configs_name, pc_rank_set ***sets, int *n,
                                    pc_error *err) {
    if (!sets || !n || !path || (nmods && !mods) || (configs && !configs_name))
        return pc_fail(err, PC_ERR_ARG, "rank: NULL argument");
    *sets = NULL;
    *n = 0;
    pc_rank_opts o = opts ? *opts : pc_rank_opts_default();
    pc_status st = check_opts(&o, err);
    if (st) return st;
    cfg_file cfg;
    memset(&cfg, 0, sizeof cfg);
    if (configs) st = cfg_text_read(configs, len, configs_name, &cfg, err);
    if (!st) st = build_sets(path, &o, configs ? &cfg : NULL, mods, nmods, NULL, sets, n, err);
    cfg_file_free(&cfg);
    return st;
}
