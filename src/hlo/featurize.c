/*
 * The TpuGraphs featurizer (tpugraphs.md 6.3 / 6.4): an HLO module in the IR
 * becomes node_feat (n, 140), node_opcode (n), edge_index (m, 2) and
 * node_splits (k), exactly as the dataset's extractor fills them. The
 * feature row of each node is the schema's (tpugraphs/features.c, which
 * synth/ calls too); this file maps the IR onto it and builds the graph.
 *
 * Linear time: instruction ids and computation ids are looked up in
 * open-addressing hash tables, edges come out sorted because nodes are
 * visited in order and each node's few targets are sorted locally, and the
 * call graph is checked for cycles with one iterative depth-first search.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/hlo_ir.h"
#include "hlo/import.h"
#include "perfcast/dataset.h"
#include "tpugraphs/features.h"
#include "tpugraphs/opcode.h"

_Static_assert(PC_TPUG_NODE_FEATS == PC_NODE_FEAT_DIM && PC_TPUG_TILE_FEATS == PC_TILE_CONFIG_DIM &&
                   PC_TPUG_LAYOUT_FEATS == PC_LAYOUT_CONFIG_DIM,
               "the public widths (perfcast/dataset.h) are the schema's");

/* ---- id -> index hash table -------------------------------------------- */

typedef struct id_map {
    int64_t *keys;
    int64_t *vals; /* -1 = empty slot */
    uint64_t mask;
} id_map;

static uint64_t hash_id(int64_t id) {
    uint64_t s = (uint64_t)id;
    return pc_splitmix64(&s);
}

static int map_init(id_map *m, int64_t n) {
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2) cap <<= 1;
    m->mask = cap - 1;
    m->keys = pc_malloc_array(cap, sizeof *m->keys);
    m->vals = pc_malloc_array(cap, sizeof *m->vals);
    if (!m->keys || !m->vals) return 0;
    memset(m->vals, 0xff, cap * sizeof *m->vals); /* all -1 */
    return 1;
}

static void map_free(id_map *m) {
    free(m->keys);
    free(m->vals);
}

/* Inserts id -> v; returns the value already there (a duplicate) or -1. */
static int64_t map_put(id_map *m, int64_t id, int64_t v) {
    for (uint64_t h = hash_id(id) & m->mask;; h = (h + 1) & m->mask) {
        if (m->vals[h] < 0) {
            m->keys[h] = id;
            m->vals[h] = v;
            return -1;
        }
        if (m->keys[h] == id) return m->vals[h];
    }
}

static int64_t map_get(const id_map *m, int64_t id) {
    for (uint64_t h = hash_id(id) & m->mask;; h = (h + 1) & m->mask) {
        if (m->vals[h] < 0) return -1;
        if (m->keys[h] == id) return m->vals[h];
    }
}

/* ---- features ------------------------------------------------------------ */

static pc_tpug_seq seq_of(const pc_i64s *l) {
    pc_tpug_seq s = {l->v, l->n};
    return s;
}

/*
 * The dims as features: an unbounded dimension (`?`, INT64_MIN in the IR,
 * XLA's kUnboundedSize) is -1, so the dims columns, their sum and product
 * stay bounded (the product is minus the product of the known dims); a
 * bounded dynamic one (`<=N`) is already N. Ranks above 64 keep the IR's
 * values (no HLO has them).
 */
static pc_tpug_seq dims_of(const pc_i64s *d, int64_t *buf) {
    pc_tpug_seq s = {d->v, d->n};
    if (d->n > 64) return s;
    int unbounded = 0;
    for (int32_t i = 0; i < d->n; i++) unbounded |= d->v[i] == INT64_MIN;
    if (!unbounded) return s;
    for (int32_t i = 0; i < d->n; i++) buf[i] = d->v[i] == INT64_MIN ? -1 : d->v[i];
    s.v = buf;
    return s;
}

/* The instruction as the schema's featurizer reads it (tpugraphs/features.h). */
static void featurize_inst(const pc_hlo_instruction *in, const pc_hlo_computation *comp,
                           float *f) {
    pc_tpug_node nd;
    int64_t dbuf[64];
    memset(&nd, 0, sizeof nd);
    nd.is_root = in->id == comp->root_id;
    nd.element_type = in->shape.element_type;
    nd.dims = dims_of(&in->shape.dims, dbuf);
    nd.tuple_count = in->shape.tuple_count;
    nd.parameter_number = in->parameter_number;
    nd.dimensions = seq_of(&in->dimensions);
    const pc_hlo_window *w = &pc_hlo_x(in)->window;
    nd.window_n = w->n;
    nd.win_size = w->size;
    nd.win_stride = w->stride;
    nd.win_pad_low = w->padding_low;
    nd.win_pad_high = w->padding_high;
    nd.win_dilation = w->window_dilation;
    nd.win_base_dilation = w->base_dilation;
    nd.win_reversal = w->window_reversal;
    const pc_hlo_conv_dims *c = &pc_hlo_x(in)->conv;
    nd.conv_input_batch = c->input_batch;
    nd.conv_input_feature = c->input_feature;
    nd.conv_input_spatial = seq_of(&c->input_spatial);
    nd.conv_kernel_input_feature = c->kernel_input_feature;
    nd.conv_kernel_output_feature = c->kernel_output_feature;
    nd.conv_kernel_spatial = seq_of(&c->kernel_spatial);
    nd.conv_output_batch = c->output_batch;
    nd.conv_output_feature = c->output_feature;
    nd.feature_group_count = in->feature_group_count;
    nd.batch_group_count = in->batch_group_count;
    nd.slice_start = seq_of(&pc_hlo_x(in)->slice_start);
    nd.slice_stride = seq_of(&pc_hlo_x(in)->slice_stride);
    nd.slice_limit = seq_of(&pc_hlo_x(in)->slice_limit);
    nd.dynamic_slice_sizes = seq_of(&pc_hlo_x(in)->dynamic_slice_sizes);
    nd.pad_low = seq_of(&pc_hlo_x(in)->pad_low);
    nd.pad_high = seq_of(&pc_hlo_x(in)->pad_high);
    nd.is_stable = in->is_stable;
    nd.minor_to_major = seq_of(&in->shape.minor_to_major);
    pc_tpug_node_feat(&nd, f);
}

/* ---- opcode lookup with a small memo (names repeat a lot) ---------------- */

typedef struct opcode_memo {
    const char *name[256];
    int id[256];
} opcode_memo;

static int opcode_of(opcode_memo *memo, const pc_hlo_instruction *in) {
    if (!in->opcode)
        return in->opcode_id > 0 && in->opcode_id < PC_HLO_OPCODE_COUNT ? in->opcode_id : 0;
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)in->opcode; *p; p++)
        h = (h ^ *p) * 16777619u;
    h = (h ^ (h >> 16)) & 255u;
    if (memo->name[h] && strcmp(memo->name[h], in->opcode) == 0) return memo->id[h];
    int id = pc_hlo_opcode_find(in->opcode);
    memo->name[h] = in->opcode;
    memo->id[h] = id;
    return id;
}

/* ---- graph ---------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void sort_small(int64_t *v, int64_t n) {
    if (n > 24) {
        qsort(v, (size_t)n, sizeof *v, cmp_i64);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        int64_t x = v[i], j = i;
        for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
        v[j] = x;
    }
}


static int contains_split_word(const char *name) {
    return name && (strstr(name, "cluster") || strstr(name, "while") || strstr(name, "cond"));
}

/*
 * Cycle check of the call graph (computation -> computations its
 * instructions call): iterative DFS, colours 0 new, 1 on the stack, 2 done.
 * `callee` lists, per computation, its callees' indices (CSR: off/idx).
 */
static pc_status check_call_cycles(const pc_hlo_module *mod, const int64_t *off,
                                   const int64_t *idx, pc_error *err) {
    char nb1[PC_HLO_NAME_BUF];
    int32_t nc = mod->n_comp;
    uint8_t *colour = calloc((size_t)nc + 1, 1);
    int64_t *stack = pc_malloc_array((uint64_t)nc + 1, sizeof *stack);
    int64_t *pos = pc_malloc_array((uint64_t)nc + 1, sizeof *pos);
    if (!colour || !stack || !pos) {
        free(colour);
        free(stack);
        free(pos);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory checking the call graph");
    }
    pc_status st = PC_OK;
    for (int32_t s = 0; s < nc && st == PC_OK; s++) {
        if (colour[s]) continue;
        int64_t top = 0;
        stack[0] = s;
        pos[0] = off[s];
        colour[s] = 1;
        while (top >= 0) {
            int64_t c = stack[top];
            if (pos[top] == off[c + 1]) {
                colour[c] = 2;
                top--;
                continue;
            }
            int64_t d = idx[pos[top]++];
            if (colour[d] == 1) {
                st = pc_fail(err, PC_ERR_FORMAT,
                             "computation '%s' (id %lld) calls itself through the computations "
                             "it calls (a cycle in called_computation_ids)",
                             pc_hlo_printable(mod->comp[d].name, nb1), (long long)mod->comp[d].id);
                break;
            }
            if (colour[d] == 0) {
                colour[d] = 1;
                top++;
                stack[top] = d;
                pos[top] = off[d];
            }
        }
    }
    free(colour);
    free(stack);
    free(pos);
    return st;
}

void pc_hlo_graph_free(pc_hlo_graph *g) {
    if (!g) return;
    free(g->node_feat);
    free(g->node_opcode);
    free(g->edges);
    free(g->node_splits);
    memset(g, 0, sizeof *g);
}

/* What pc_hlo_featurize builds on the way, freed in one place. */
typedef struct featurizer {
    const pc_hlo_module *mod;
    pc_error *err;
    int64_t n, mmax;      /* nodes; an upper bound on edges */
    id_map ids, comps;    /* instruction id -> node; computation id -> computation index */
    int64_t *root_node;   /* per computation: the node of its root, -1 if not one of its own */
    int64_t *start;       /* per computation: its first node; start[n_comp] = n */
    int64_t *coff, *cidx; /* call graph (CSR): c calls cidx[coff[c]..coff[c+1]) */
    int64_t *tmp;         /* one node's edge targets */
    pc_hlo_graph g;
    int lazy; /* node_feat left out (pc_hlo_featurize_lazy) */
} featurizer;

static pc_status fz_nomem(const featurizer *fz) {
    char nb[PC_HLO_NAME_BUF];
    return pc_fail(fz->err, PC_ERR_NOMEM,
                   "module '%s': out of memory featurizing %lld instructions",
                   pc_hlo_printable(fz->mod->name, nb), (long long)fz->n);
}

static void fz_free(featurizer *fz) {
    pc_hlo_graph_free(&fz->g);
    map_free(&fz->ids);
    map_free(&fz->comps);
    free(fz->root_node);
    free(fz->start);
    free(fz->coff);
    free(fz->cidx);
    free(fz->tmp);
}

/* Sizes: nodes, and an upper bound on edges (each operand and call one). */
static pc_status count_nodes(featurizer *fz) {
    char nb[PC_HLO_NAME_BUF];
    const pc_hlo_module *mod = fz->mod;
    int64_t n = 0, mmax = 0;
    for (int32_t c = 0; c < mod->n_comp; c++) {
        const pc_hlo_computation *comp = &mod->comp[c];
        if (comp->n_inst < 0 || (comp->n_inst > 0 && !comp->inst))
            return pc_fail(fz->err, PC_ERR_FORMAT, "computation '%s': bad instruction list",
                           pc_hlo_printable(comp->name, nb));
        n += comp->n_inst;
        for (int32_t i = 0; i < comp->n_inst; i++)
            mmax += (int64_t)comp->inst[i].operand_ids.n + comp->inst[i].called_computation_ids.n;
    }
    if (n > INT32_MAX || mmax > INT32_MAX)
        return pc_fail(fz->err, PC_ERR_RANGE,
                       "module '%s': %lld instructions and %lld edges exceed the dataset's int32 "
                       "ids", pc_hlo_printable(mod->name, nb), (long long)n, (long long)mmax);
    fz->n = n;
    fz->mmax = mmax;
    return PC_OK;
}

static pc_status fz_alloc(featurizer *fz) {
    uint64_t nc = (uint64_t)fz->mod->n_comp, n = (uint64_t)fz->n, mmax = (uint64_t)fz->mmax;
    pc_hlo_graph *g = &fz->g;
    g->n = fz->n;
    if (!map_init(&fz->ids, fz->n) || !map_init(&fz->comps, fz->mod->n_comp)) return fz_nomem(fz);
    fz->root_node = pc_malloc_array(nc + 1, sizeof *fz->root_node);
    fz->start = pc_malloc_array(nc + 1, sizeof *fz->start);
    fz->coff = pc_calloc_array(nc + 2, sizeof *fz->coff);
    if (!fz->lazy) g->node_feat = pc_calloc_array((n ? n : 1) * PC_TPUG_NODE_FEATS, sizeof *g->node_feat);
    g->node_opcode = pc_calloc_array(n ? n : 1, 1);
    g->edges = pc_malloc_array((mmax ? mmax : 1) * 2, sizeof *g->edges);
    g->node_splits = pc_malloc_array(nc + 2, sizeof *g->node_splits);
    if (!fz->root_node || !fz->start || !fz->coff || (!fz->lazy && !g->node_feat) || !g->node_opcode ||
        !g->edges || !g->node_splits)
        return fz_nomem(fz);
    return PC_OK;
}

/* Instruction ids -> node index, computation ids -> computation index (both
 * unique), and each computation's root node. */
static pc_status map_ids(featurizer *fz) {
    char nb1[PC_HLO_NAME_BUF], nb2[PC_HLO_NAME_BUF];
    const pc_hlo_module *mod = fz->mod;
    int64_t node = 0;
    for (int32_t c = 0; c < mod->n_comp; c++) {
        const pc_hlo_computation *comp = &mod->comp[c];
        fz->start[c] = node;
        if (map_put(&fz->comps, comp->id, c) >= 0)
            return pc_fail(fz->err, PC_ERR_FORMAT, "computation '%s': id %lld is used twice",
                           pc_hlo_printable(comp->name, nb1), (long long)comp->id);
        for (int32_t i = 0; i < comp->n_inst; i++, node++) {
            int64_t prev = map_put(&fz->ids, comp->inst[i].id, node);
            if (prev >= 0)
                return pc_fail(fz->err, PC_ERR_FORMAT,
                               "computation '%s': instruction '%s' has id %lld, already used by "
                               "another instruction", pc_hlo_printable(comp->name, nb1),
                               pc_hlo_printable(comp->inst[i].name, nb2),
                               (long long)comp->inst[i].id);
        }
    }
    fz->start[mod->n_comp] = node;
    /* Roots: the node of each computation's root_id, if it is one of its own. */
    for (int32_t c = 0; c < mod->n_comp; c++) {
        int64_t r = map_get(&fz->ids, mod->comp[c].root_id);
        fz->root_node[c] = (r >= fz->start[c] && r < fz->start[c + 1]) ? r : -1;
    }
    return PC_OK;
}

/* Checks every call of computation c (a computation of the module, with a
 * root) and counts them into coff[c + 1]. */
static pc_status count_calls(featurizer *fz, int32_t c) {
    char nb1[PC_HLO_NAME_BUF], nb2[PC_HLO_NAME_BUF];
    const pc_hlo_module *mod = fz->mod;
    const pc_hlo_computation *comp = &mod->comp[c];
    for (int32_t i = 0; i < comp->n_inst; i++) {
        const pc_hlo_instruction *in = &comp->inst[i];
        for (int32_t j = 0; j < in->called_computation_ids.n; j++) {
            int64_t d = map_get(&fz->comps, in->called_computation_ids.v[j]);
            if (d < 0)
                return pc_fail(fz->err, PC_ERR_FORMAT,
                               "computation '%s': instruction '%s' (id %lld) calls computation "
                               "id %lld, which is not in the module",
                               pc_hlo_printable(comp->name, nb1), pc_hlo_printable(in->name, nb2),
                               (long long)in->id, (long long)in->called_computation_ids.v[j]);
            if (fz->root_node[d] < 0)
                return pc_fail(fz->err, PC_ERR_FORMAT,
                               "computation '%s' (id %lld), called by instruction '%s', has no "
                               "root instruction (root_id %lld is not one of its instructions)",
                               pc_hlo_printable(mod->comp[d].name, nb1), (long long)mod->comp[d].id,
                               pc_hlo_printable(in->name, nb2), (long long)mod->comp[d].root_id);
            fz->coff[c + 1]++;
        }
    }
    return PC_OK;
}

/* The call graph (CSR), with every called id resolved, and no cycles in it. */
static pc_status build_call_graph(featurizer *fz) {
    const pc_hlo_module *mod = fz->mod;
    pc_status st;
    for (int32_t c = 0; c < mod->n_comp; c++)
        if ((st = count_calls(fz, c)) != PC_OK) return st;
    int64_t *coff = fz->coff;
    for (int32_t c = 0; c < mod->n_comp; c++) coff[c + 1] += coff[c];
    int64_t ncalls = coff[mod->n_comp];
    fz->cidx = pc_malloc_array((uint64_t)(ncalls ? ncalls : 1), sizeof *fz->cidx);
    if (!fz->cidx) return fz_nomem(fz);
    for (int32_t c = 0; c < mod->n_comp; c++) {
        int64_t at = coff[c];
        const pc_hlo_computation *comp = &mod->comp[c];
        for (int32_t i = 0; i < comp->n_inst; i++)
            for (int32_t j = 0; j < comp->inst[i].called_computation_ids.n; j++)
                fz->cidx[at++] = map_get(&fz->comps, comp->inst[i].called_computation_ids.v[j]);
    }
    return check_call_cycles(mod, coff, fz->cidx, fz->err);
}

/* The edges of `node` (instruction `in` of `comp`): its operands and the roots
 * of the computations it calls, sorted and unique, appended at g.edges[*m]. */
static pc_status node_edges(featurizer *fz, const pc_hlo_computation *comp,
                            const pc_hlo_instruction *in, int64_t node, int64_t *m) {
    char nb1[PC_HLO_NAME_BUF], nb2[PC_HLO_NAME_BUF];
    int64_t t = 0, *tmp = fz->tmp;
    for (int32_t j = 0; j < in->operand_ids.n; j++) {
        int64_t v = map_get(&fz->ids, in->operand_ids.v[j]);
        if (v < 0)
            return pc_fail(fz->err, PC_ERR_FORMAT,
                           "computation '%s': instruction '%s' (id %lld) has operand id "
                           "%lld, which is not an instruction of the module",
                           pc_hlo_printable(comp->name, nb1), pc_hlo_printable(in->name, nb2),
                           (long long)in->id, (long long)in->operand_ids.v[j]);
        if (v == node)
            return pc_fail(fz->err, PC_ERR_FORMAT,
                           "computation '%s': instruction '%s' (id %lld) is its own operand",
                           pc_hlo_printable(comp->name, nb1), pc_hlo_printable(in->name, nb2),
                           (long long)in->id);
        tmp[t++] = v;
    }
    for (int32_t j = 0; j < in->called_computation_ids.n; j++)
        tmp[t++] = fz->root_node[map_get(&fz->comps, in->called_computation_ids.v[j])];
    sort_small(tmp, t);
    for (int64_t j = 0; j < t; j++) {
        if (j > 0 && tmp[j] == tmp[j - 1]) continue;
        fz->g.edges[2 * *m] = node;
        fz->g.edges[2 * *m + 1] = tmp[j];
        (*m)++;
    }
    return PC_OK;
}

/* Nodes in order: opcode, features and edges; node_splits after each
 * computation whose name marks a split. */
static pc_status featurize_nodes(featurizer *fz) {
    const pc_hlo_module *mod = fz->mod;
    pc_hlo_graph *g = &fz->g;
    int64_t maxdeg = 0;
    for (int32_t c = 0; c < mod->n_comp; c++)
        for (int32_t i = 0; i < mod->comp[c].n_inst; i++) {
            int64_t d = (int64_t)mod->comp[c].inst[i].operand_ids.n +
                        mod->comp[c].inst[i].called_computation_ids.n;
            if (d > maxdeg) maxdeg = d;
        }
    fz->tmp = pc_malloc_array((uint64_t)(maxdeg ? maxdeg : 1), sizeof *fz->tmp);
    if (!fz->tmp) return fz_nomem(fz);
    opcode_memo memo;
    memset(&memo, 0, sizeof memo);
    int64_t m = 0, k = 0, node = 0;
    g->node_splits[k++] = 0;
    for (int32_t c = 0; c < mod->n_comp; c++) {
        const pc_hlo_computation *comp = &mod->comp[c];
        for (int32_t i = 0; i < comp->n_inst; i++, node++) {
            const pc_hlo_instruction *in = &comp->inst[i];
            int op = opcode_of(&memo, in);
            if (op <= 0 || op > 255) {
                op = 0;
                g->unknown++;
            }
            g->node_opcode[node] = (uint8_t)op;
            if (!fz->lazy) featurize_inst(in, comp, g->node_feat + node * PC_TPUG_NODE_FEATS);
            pc_status st = node_edges(fz, comp, in, node, &m);
            if (st != PC_OK) return st;
        }
        if (contains_split_word(comp->name)) g->node_splits[k++] = fz->start[c + 1];
    }
    if (g->node_splits[k - 1] < fz->n) g->node_splits[k++] = fz->n;
    g->m = m;
    g->k = k;
    return PC_OK;
}

void pc_hlo_feat_rows(const pc_hlo_module *mod, pc_hlo_row_cursor *cur, int64_t first, int64_t count,
                      float *dst) {
    if (first < cur->node) memset(cur, 0, sizeof *cur); /* read again from the start */
    while (cur->comp < mod->n_comp && cur->node + (mod->comp[cur->comp].n_inst - cur->inst) <= first) {
        cur->node += mod->comp[cur->comp].n_inst - cur->inst; /* skip whole computations */
        cur->comp++;
        cur->inst = 0;
    }
    cur->inst += (int32_t)(first - cur->node);
    cur->node = first;
    for (int64_t r = 0; r < count && cur->comp < mod->n_comp; r++) {
        const pc_hlo_computation *comp = &mod->comp[cur->comp];
        featurize_inst(&comp->inst[cur->inst], comp, dst + r * PC_TPUG_NODE_FEATS);
        cur->node++;
        if (++cur->inst >= comp->n_inst) {
            cur->inst = 0;
            cur->comp++;
            while (cur->comp < mod->n_comp && mod->comp[cur->comp].n_inst == 0) cur->comp++;
        }
    }
}

static pc_status featurize(const pc_hlo_module *mod, pc_hlo_graph *out, int lazy, pc_error *err) {
    char nb[PC_HLO_NAME_BUF];
    if (!mod || !out) return pc_fail(err, PC_ERR_ARG, "pc_hlo_featurize: NULL argument");
    memset(out, 0, sizeof *out);
    if (mod->n_comp < 0 || (mod->n_comp > 0 && !mod->comp))
        return pc_fail(err, PC_ERR_FORMAT, "module '%s': bad computation list",
                       pc_hlo_printable(mod->name, nb));
    featurizer fz;
    memset(&fz, 0, sizeof fz);
    fz.mod = mod;
    fz.err = err;
    fz.lazy = lazy;
    pc_status st = count_nodes(&fz);
    if (st == PC_OK) st = fz_alloc(&fz);
    if (st == PC_OK) st = map_ids(&fz);
    if (st == PC_OK) st = build_call_graph(&fz);
    if (st == PC_OK) st = featurize_nodes(&fz);
    if (st == PC_OK) {
        *out = fz.g;
        memset(&fz.g, 0, sizeof fz.g);
    }
    fz_free(&fz);
    return st;
}

pc_status pc_hlo_featurize(const pc_hlo_module *mod, pc_hlo_graph *out, pc_error *err) {
    return featurize(mod, out, 0, err);
}

pc_status pc_hlo_featurize_lazy(const pc_hlo_module *mod, pc_hlo_graph *out, pc_error *err) {
    return featurize(mod, out, 1, err);
}
