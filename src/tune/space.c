/*
 * The search space of a graph (perfcast/tune.h, pc_tune_space): which
 * layout tensors or tile bounds are searched and their choices, learned
 * from the graph's node_feat and edges and cross-checked with its configs,
 * and the mapping between choice vectors and config rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tpugraphs/features.h"
#include "tune/tune_internal.h"

#define LW PC_TPUG_LAYOUT_FEATS
#define MR PC_TPUG_MAX_RANK
#define CHUNK 256 /* configs read at a time */

/* ---- permutations: choice c >= 1 is the (c-1)th ordered pick of `slots`
   distinct dims of `rank`, counted from row-major (rank-1, ..., 0) --------- */

static int64_t perms(int rank, int slots) {
    int64_t p = 1;
    for (int i = 0; i < slots; i++) p *= rank - i;
    return p;
}

static void perm_decode(int rank, int slots, int64_t k, float *out) {
    int avail[MR], digit[MR];
    for (int i = 0; i < rank; i++) avail[i] = rank - 1 - i;
    for (int i = slots - 1; i >= 0; i--) {
        digit[i] = (int)(k % (rank - i));
        k /= rank - i;
    }
    int n = rank;
    for (int i = 0; i < slots; i++) {
        out[i] = (float)avail[digit[i]];
        memmove(avail + digit[i], avail + digit[i] + 1, (size_t)(n - digit[i] - 1) * sizeof *avail);
        n--;
    }
}

/* -1 if the entries are not `slots` distinct dims of `rank`. */
static int64_t perm_encode(int rank, int slots, const float *in) {
    int avail[MR], n = rank;
    for (int i = 0; i < rank; i++) avail[i] = rank - 1 - i;
    int64_t k = 0;
    for (int i = 0; i < slots; i++) {
        int d = -1;
        for (int j = 0; j < n; j++)
            if ((float)avail[j] == in[i]) d = j;
        if (d < 0) return -1;
        memmove(avail + d, avail + d + 1, (size_t)(n - d - 1) * sizeof *avail);
        n--;
        k = k * (rank - i) + d;
    }
    return k;
}

/* ---- rows <-> choices ------------------------------------------------------ */

static void tile_values(const pc_tune_space *s, const int32_t *ch, int64_t *v) {
    for (int k = 0; k < TN_TILE_SLOTS; k++) {
        int x = s->var_of[k];
        v[k] = x >= 0 ? s->vars[x].vals[ch[x]] : s->tie[k] >= 0 ? v[s->tie[k]] : 0;
    }
}

void tn_materialize(const pc_tune_space *s, const int32_t *ch, float *row) {
    if (s->kind == PC_KIND_TILE) {
        int64_t v[TN_TILE_SLOTS];
        tile_values(s, ch, v);
        pc_tpug_tile_feat((pc_tpug_seq){v, s->tile_n[0]}, (pc_tpug_seq){v + 6, s->tile_n[1]},
                          (pc_tpug_seq){v + 12, s->tile_n[2]}, row);
        return;
    }
    for (int64_t i = 0; i < s->width; i++) row[i] = -1.0f;
    for (int64_t x = 0; x < s->nvars; x++) {
        const tn_var *v = &s->vars[x];
        if (ch[x] > 0)
            perm_decode(v->rank, v->slots, ch[x] - 1, row + v->node * LW + v->tensor * MR);
    }
}

int tn_encode(const pc_tune_space *s, const float *row, int32_t *ch) {
    if (s->kind == PC_KIND_TILE) {
        for (int64_t x = 0; x < s->nvars; x++) {
            const tn_var *v = &s->vars[x];
            int list = (int)v->node / 6, pos = (int)v->node % 6;
            float want = row[list * 8 + pos];
            ch[x] = -1;
            for (int64_t c = 0; c < v->nch; c++)
                if ((float)v->vals[c] == want) ch[x] = (int32_t)c;
            if (ch[x] < 0) return -1;
        }
        float back[PC_TPUG_TILE_FEATS];
        tn_materialize(s, ch, back);
        return memcmp(back, row, sizeof back) ? -1 : 0;
    }
    for (int64_t j = 0; j < s->nc; j++)
        for (int t = 0; t < 3; t++) {
            const float *f = row + j * LW + t * MR;
            int64_t x = s->var_at[j * 3 + t];
            if (f[0] < 0) {
                for (int i = 1; i < MR; i++)
                    if (f[i] >= 0) return -1;
                if (x >= 0) ch[x] = 0;
                continue;
            }
            if (x < 0) return -1;
            const tn_var *v = &s->vars[x];
            for (int i = v->slots; i < MR; i++)
                if (f[i] >= 0) return -1;
            int64_t k = perm_encode(v->rank, v->slots, f);
            if (k < 0) return -1;
            ch[x] = (int32_t)(k + 1);
        }
    return 0;
}

/* ---- building the space: layout ----------------------------------------- */

typedef struct tensor_seen {
    int nmax, vmax, full; /* most entries, largest dim, a full permutation seen */
} tensor_seen;

/* The rank of node v's result from its node_feat dims (leading non-zero). */
static int node_rank(const float *feat, int64_t fdim, int64_t v) {
    const float *d = feat + v * fdim + PC_TPUG_COL_DIMS;
    int r = 0;
    while (r < MR && d[r] != 0.0f) r++;
    return r;
}

static pc_status scan_layout_configs(pc_graph *g, int64_t nc, tensor_seen *seen, pc_error *err) {
    int64_t c = pc_graph_num_configs(g);
    float *buf = pc_malloc_array((uint64_t)CHUNK * (uint64_t)nc, LW * sizeof(float));
    if (!buf) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    pc_status st = PC_OK;
    for (int64_t c0 = 0; c0 < c && !st; c0 += CHUNK) {
        int64_t n = c - c0 < CHUNK ? c - c0 : CHUNK;
        st = pc_graph_config_feat_rows(g, c0, n, buf, err);
        for (int64_t i = 0; i < n && !st; i++)
            for (int64_t j = 0; j < nc && !st; j++)
                for (int t = 0; t < 3; t++) {
                    const float *f = buf + (i * nc + j) * LW + t * MR;
                    int k = 0, mask = 0, mx = -1;
                    while (k < MR && f[k] >= 0) {
                        int d = (int)f[k];
                        if ((float)d != f[k] || d >= MR || (mask >> d & 1)) break;
                        mask |= 1 << d, mx = d > mx ? d : mx, k++;
                    }
                    for (int r = k; r < MR && !st; r++)
                        if (f[r] != -1.0f)
                            st = pc_fail(err, PC_ERR_FORMAT,
                                         "%s: node_config_feat config %lld, configurable node "
                                         "%lld, tensor %d: entry %d is %g; expected distinct "
                                         "dims 0..5 then -1",
                                         pc_graph_path(g), (long long)(c0 + i), (long long)j, t, r,
                                         (double)f[r]);
                    tensor_seen *s = &seen[j * 3 + t];
                    if (k > s->nmax) s->nmax = k;
                    if (mx > s->vmax) s->vmax = mx;
                    if (k && mx == k - 1) s->full = s->full > k ? s->full : k;
                }
    }
    free(buf);
    return st;
}

/* An operand tensor's rank: the full permutations seen, else the smallest
   producer rank that holds every dim seen, else the dims seen. */
static int operand_rank(const pc_graph *g, int64_t v, const tensor_seen *s) {
    if (s->full && s->full == s->nmax) return s->full;
    int need = s->vmax + 1 > s->nmax ? s->vmax + 1 : s->nmax, best = MR + 1;
    const int32_t *e = pc_graph_edge_index(g);
    const float *feat = pc_graph_node_feat(g);
    for (int64_t k = 0; k < pc_graph_num_edges(g); k++)
        if (e[2 * k] == v) {
            int r = node_rank(feat, pc_graph_node_feat_dim(g), e[2 * k + 1]);
            if (r >= need && r < best) best = r;
        }
    return best <= MR ? best : need;
}

static pc_status layout_space(pc_tune_space *s, pc_graph *g, pc_error *err) {
    int64_t nc = s->nc = pc_graph_num_config_nodes(g);
    s->width = nc * LW;
    if (nc < 1)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: the graph has no configurable nodes "
                       "(node_config_ids is empty): nothing to tune",
                       pc_graph_path(g));
    tensor_seen *seen = pc_calloc_array((uint64_t)nc * 3, sizeof *seen);
    s->vars = pc_calloc_array((uint64_t)nc * 3, sizeof *s->vars);
    s->var_at = pc_malloc_array((uint64_t)nc * 3, sizeof *s->var_at);
    if (!seen || !s->vars || !s->var_at) {
        free(seen);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    for (int64_t k = 0; k < nc * 3; k++) seen[k].vmax = -1;
    pc_status st = scan_layout_configs(g, nc, seen, err);
    const int32_t *ids = pc_graph_node_config_ids(g);
    const float *feat = pc_graph_node_feat(g);
    for (int64_t j = 0; j < nc && !st; j++)
        for (int t = 0; t < 3 && !st; t++) {
            const tensor_seen *ts = &seen[j * 3 + t];
            s->var_at[j * 3 + t] = -1;
            if (!ts->nmax) continue; /* never configured: left to the compiler */
            int rank = t == 0 ? node_rank(feat, pc_graph_node_feat_dim(g), ids[j])
                              : operand_rank(g, ids[j], ts);
            if (t == 0 && (ts->vmax >= rank || ts->nmax > rank)) {
                st = pc_fail(err, PC_ERR_FORMAT,
                             "%s: node_config_feat gives configurable "
                             "node %lld (node %d) an output layout of %d dims up to dim %d, but "
                             "its node_feat shape has rank %d",
                             pc_graph_path(g), (long long)j, ids[j], ts->nmax, ts->vmax, rank);
                break;
            }
            tn_var *v = &s->vars[s->nvars];
            *v = (tn_var){j, t, rank, ts->nmax, 1 + perms(rank, ts->nmax), NULL};
            s->log10_size += log10((double)v->nch);
            s->var_at[j * 3 + t] = s->nvars++;
        }
    free(seen);
    if (!st && s->nvars == 0)
        st = pc_fail(err, PC_ERR_INVALID,
                     "%s: no config of the graph sets a layout, so no "
                     "tensor is known to be configurable: the space is empty",
                     pc_graph_path(g));
    return st;
}

/* ---- building the space: tile -------------------------------------------- */

static pc_status tile_space(pc_tune_space *s, pc_graph *g, int new_sizes, pc_error *err) {
    s->width = PC_TPUG_TILE_FEATS;
    int64_t c = pc_graph_num_configs(g);
    const float *cf = pc_graph_config_feat(g);
    int64_t mx[TN_TILE_SLOTS] = {0};
    for (int64_t i = 0; i < c; i++)
        for (int l = 0; l < 3; l++)
            for (int p = 0; p < 6; p++) {
                float v = cf[i * PC_TPUG_TILE_FEATS + l * 8 + p];
                if (v == 0.0f) continue;
                if (!(v >= 1.0f && v < 1e12f) || floorf(v) != v)
                    return pc_fail(err, PC_ERR_FORMAT,
                                   "%s: config_feat config %lld column %d "
                                   "is %g; expected a positive integer tile size or 0",
                                   pc_graph_path(g), (long long)i, l * 8 + p, (double)v);
                if (p + 1 > s->tile_n[l]) s->tile_n[l] = p + 1;
                if ((int64_t)v > mx[l * 6 + p]) mx[l * 6 + p] = (int64_t)v;
            }
    s->vars = pc_calloc_array(TN_TILE_SLOTS, sizeof *s->vars);
    if (!s->vars) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int k = 0; k < TN_TILE_SLOTS; k++) {
        s->tie[k] = s->var_of[k] = -1;
        int l = k / 6, p = k % 6;
        if (p >= s->tile_n[l]) continue;
        for (int q = 0; q < k && s->tie[k] < 0; q++) {
            if (s->var_of[q] < 0) continue;
            int same = 1;
            for (int64_t i = 0; i < c && same; i++)
                same = cf[i * PC_TPUG_TILE_FEATS + l * 8 + p] ==
                       cf[i * PC_TPUG_TILE_FEATS + (q / 6) * 8 + q % 6];
            if (same) s->tie[k] = q;
        }
        if (s->tie[k] >= 0) continue;
        /* the sizes: every value seen, and (new_sizes) the rule's for any role below the
           largest seen */
        int64_t e = mx[k] > 0 ? mx[k] : 1, a[PC_TPUG_TILE_MAX_SIZES], b[PC_TPUG_TILE_MAX_SIZES];
        int na = new_sizes ? pc_tpug_tile_sizes(e, 0, a) : 0;
        int nb = new_sizes ? pc_tpug_tile_sizes(e, 2, b) : 0;
        int64_t *vals = pc_malloc_array((uint64_t)(na + nb + c), sizeof *vals);
        if (!vals) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        int64_t n = 0;
        for (int i = 0; i < na; i++) vals[n++] = a[i];
        for (int i = 0; i < nb; i++) vals[n++] = b[i];
        for (int64_t i = 0; i < c; i++) {
            float v = cf[i * PC_TPUG_TILE_FEATS + l * 8 + p];
            if (v > 0) vals[n++] = (int64_t)v;
        }
        for (int64_t i = 1; i < n; i++) /* insertion sort, then unique */
            for (int64_t j = i; j > 0 && vals[j - 1] > vals[j]; j--) {
                int64_t x = vals[j];
                vals[j] = vals[j - 1], vals[j - 1] = x;
            }
        int64_t u = 0;
        for (int64_t i = 0; i < n; i++)
            if (!u || vals[i] != vals[u - 1]) vals[u++] = vals[i];
        s->vars[s->nvars] = (tn_var){k, 0, 0, 0, u, vals};
        s->var_of[k] = (int)s->nvars++;
        s->log10_size += log10((double)u);
    }
    if (s->log10_size <= 0.0)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: the tile space holds one configuration (every "
                       "bound of the file's configs has a single size): nothing to tune",
                       pc_graph_path(g));
    return PC_OK;
}

/* ---- the public face ------------------------------------------------------ */

pc_status pc_tune_space_from_graph(pc_graph *g, const pc_tune_opts *opts, pc_tune_space **out,
                                   pc_error *err) {
    pc_error local;
    if (!err) err = &local;
    pc_error_clear(err);
    if (!g || !out) return pc_fail(err, PC_ERR_ARG, "tune: NULL argument");
    if (opts && PC_CHECK_SIZE(err, pc_tune_opts, opts)) return PC_ERR_ARG;
    int new_sizes = opts && opts->tile_new_sizes > 0; /* PC_TUNE_AUTO unresolved: 0 */
    *out = NULL;
    if (pc_graph_num_configs(g) < 1)
        return pc_fail(err, PC_ERR_INVALID,
                       "%s: the graph has no configs to learn its "
                       "configuration space from",
                       pc_graph_path(g));
    pc_tune_space *s = calloc(1, sizeof *s);
    if (!s) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    s->kind = pc_graph_kind(g);
    pc_status st =
        s->kind == PC_KIND_TILE ? tile_space(s, g, new_sizes, err) : layout_space(s, g, err);
    if (st) {
        pc_tune_space_free(s);
        return st;
    }
    *out = s;
    return PC_OK;
}

void pc_tune_space_free(pc_tune_space *s) {
    if (!s) return;
    for (int64_t x = 0; x < s->nvars && s->vars; x++) free(s->vars[x].vals);
    free(s->vars);
    free(s->var_at);
    free(s);
}

pc_kind pc_tune_space_kind(const pc_tune_space *s) { return s->kind; }
int64_t pc_tune_space_width(const pc_tune_space *s) { return s->width; }
int64_t pc_tune_space_vars(const pc_tune_space *s) { return s->nvars; }
double pc_tune_space_log10_size(const pc_tune_space *s) { return s->log10_size; }

int pc_tune_space_default(const pc_tune_space *s, float *row) {
    if (s->kind == PC_KIND_TILE) return 0;
    for (int64_t i = 0; i < s->width; i++) row[i] = -1.0f;
    return 1;
}

int pc_tune_space_contains(const pc_tune_space *s, const float *row, pc_error *why) {
    int32_t *ch = pc_malloc_array((uint64_t)(s->nvars ? s->nvars : 1), sizeof *ch);
    int ok = ch && tn_encode(s, row, ch) == 0;
    free(ch);
    if (!ok && why)
        pc_fail(why, PC_ERR_INVALID, "not a configuration of the space: %s",
                s->kind == PC_KIND_TILE ? "a tile bound outside its sizes or ties"
                                        : "a tensor's layout is neither -1 nor distinct dims of "
                                          "its rank in the searched count");
    return ok;
}
