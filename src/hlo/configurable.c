/*
 * Configurable nodes and fused kernels of an HLO module (hlo/candidates.h):
 * what perfcast rank attaches candidate configurations to.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hlo/candidates.h"
#include "tpugraphs/opcode.h"

int pc_hlo_is_layout_configurable(int32_t opcode_id) {
    return opcode_id == PC_HLO_CONVOLUTION || opcode_id == PC_HLO_DOT ||
           opcode_id == PC_HLO_RESHAPE;
}

/* ---- id lookup: instructions sorted by id, binary search ------------------ */

typedef struct id_ref {
    int64_t id;
    const pc_hlo_instruction *in;
} id_ref;

static int cmp_ref(const void *a, const void *b) {
    int64_t x = ((const id_ref *)a)->id, y = ((const id_ref *)b)->id;
    return (x > y) - (x < y);
}

static id_ref *id_index(const pc_hlo_module *m, int64_t *count) {
    int64_t n = 0, k = 0;
    for (int32_t c = 0; c < m->n_comp; c++) n += m->comp[c].n_inst;
    id_ref *r = pc_malloc_array((uint64_t)(n ? n : 1), sizeof *r);
    if (!r) return NULL;
    for (int32_t c = 0; c < m->n_comp; c++)
        for (int32_t i = 0; i < m->comp[c].n_inst; i++, k++) {
            r[k].id = m->comp[c].inst[i].id;
            r[k].in = &m->comp[c].inst[i];
        }
    qsort(r, (size_t)n, sizeof *r, cmp_ref);
    *count = n;
    return r;
}

static const pc_hlo_instruction *find_id(const id_ref *r, int64_t n, int64_t id) {
    id_ref key = {id, NULL};
    const id_ref *hit = bsearch(&key, r, (size_t)n, sizeof *r, cmp_ref);
    return hit ? hit->in : NULL;
}

/* Rank of an array shape; tuples and tokens have no layout to choose (0). */
static int array_rank(const pc_hlo_shape *s) {
    if (s->tuple_count > 0 || s->element_type == 13 || s->element_type == 17) return 0;
    return s->dims.n;
}

/* ---- layout ------------------------------------------------------------------ */

static void describe_node(pc_hlo_cfg_node *c, const pc_hlo_instruction *in, const id_ref *r,
                          int64_t nr) {
    c->inst = in;
    c->tensors = in->opcode_id == PC_HLO_RESHAPE ? 2 : 3;
    /* The fixture's runs: reshapes get whole orders, convolutions the 2 most-minor dims. */
    c->slots = in->opcode_id == PC_HLO_RESHAPE ? 6 : 2;
    c->rank[0] = array_rank(&in->shape);
    for (int t = 1; t < 3; t++) {
        c->rank[t] = 0;
        if (t >= c->tensors || t > in->operand_ids.n) continue;
        const pc_hlo_instruction *op = find_id(r, nr, in->operand_ids.v[t - 1]);
        if (op) c->rank[t] = array_rank(&op->shape);
    }
}

pc_status pc_hlo_layout_nodes(const pc_hlo_module *m, pc_hlo_cfg_node **out, int64_t *n,
                              pc_error *err) {
    *out = NULL;
    *n = 0;
    int64_t count = 0, node = 0, nr = 0;
    for (int32_t c = 0; c < m->n_comp; c++)
        for (int32_t i = 0; i < m->comp[c].n_inst; i++)
            count += pc_hlo_is_layout_configurable(m->comp[c].inst[i].opcode_id);
    if (!count) return PC_OK;
    pc_hlo_cfg_node *v = pc_calloc_array((uint64_t)count, sizeof *v);
    id_ref *r = id_index(m, &nr);
    if (!v || !r) {
        free(v);
        free(r);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory for %lld configurable nodes",
                       (long long)count);
    }
    int64_t k = 0;
    for (int32_t c = 0; c < m->n_comp; c++)
        for (int32_t i = 0; i < m->comp[c].n_inst; i++, node++) {
            const pc_hlo_instruction *in = &m->comp[c].inst[i];
            if (!pc_hlo_is_layout_configurable(in->opcode_id)) continue;
            v[k].node = node;
            describe_node(&v[k++], in, r, nr);
        }
    free(r);
    *out = v;
    *n = count;
    return PC_OK;
}

/* ---- kernels ------------------------------------------------------------------ */

static const pc_hlo_computation *comp_of_id(const pc_hlo_module *m, int64_t id, int32_t *at) {
    for (int32_t c = 0; c < m->n_comp; c++)
        if (m->comp[c].id == id) {
            if (at) *at = c;
            return &m->comp[c];
        }
    return NULL;
}

/* Marks computation `at` and everything it calls (callees come first in the module). */
static void mark_callees(const pc_hlo_module *m, int32_t at, uint8_t *keep) {
    keep[at] = 1;
    for (int32_t c = at; c >= 0; c--) {
        if (!keep[c]) continue;
        for (int32_t i = 0; i < m->comp[c].n_inst; i++) {
            const pc_i64s *cc = &m->comp[c].inst[i].called_computation_ids;
            for (int32_t j = 0; j < cc->n; j++) {
                int32_t callee;
                if (comp_of_id(m, cc->v[j], &callee)) keep[callee] = 1;
            }
        }
    }
}

static int64_t max_ids(const pc_hlo_module *m, int64_t *max_comp) {
    int64_t mi = 0, mc = 0;
    for (int32_t c = 0; c < m->n_comp; c++) {
        if (m->comp[c].id > mc) mc = m->comp[c].id;
        for (int32_t i = 0; i < m->comp[c].n_inst; i++)
            if (m->comp[c].inst[i].id > mi) mi = m->comp[c].inst[i].id;
    }
    *max_comp = mc;
    return mi;
}

/* The wrapper entry: one parameter per fusion operand, then the fusion. */
static pc_status build_wrapper(const pc_hlo_module *m, const pc_hlo_instruction *f,
                               pc_hlo_computation *w, int64_t *ids, pc_error *err) {
    int64_t max_comp, next = max_ids(m, &max_comp) + 1;
    int32_t nop = f->operand_ids.n;
    memset(w, 0, sizeof *w);
    w->inst = pc_calloc_array((uint64_t)nop + 1, sizeof *w->inst);
    w->name = strdup(f->name ? f->name : "fusion");
    if (!w->inst || !w->name) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    w->n_inst = nop + 1;
    w->id = max_comp + 1;
    int64_t nr = 0;
    id_ref *r = id_index(m, &nr);
    if (!r) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int32_t p = 0; p < nop; p++) {
        pc_hlo_instruction *in = &w->inst[p];
        const pc_hlo_instruction *op = find_id(r, nr, f->operand_ids.v[p]);
        if (op) in->shape = op->shape; /* borrowed: the view never frees it */
        in->opcode_id = PC_HLO_PARAMETER;
        in->parameter_number = p;
        in->id = ids[p] = next++;
    }
    free(r);
    pc_hlo_instruction *fc = &w->inst[nop];
    *fc = *f; /* borrowed fields, but its own operand list */
    fc->operand_ids.v = ids;
    fc->operand_ids.n = nop;
    fc->id = next;
    w->root_id = next;
    return PC_OK;
}

static pc_status kernel_of_fusion(const pc_hlo_module *m, const pc_hlo_instruction *f,
                                  pc_hlo_kernel *k, pc_error *err) {
    int32_t at = -1;
    k->fusion = f;
    k->name = strdup(f->name ? f->name : "fusion");
    if (!k->name) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    if (f->called_computation_ids.n < 1 ||
        !(k->fused = comp_of_id(m, f->called_computation_ids.v[0], &at)))
        return pc_fail(err, PC_ERR_FORMAT, "fusion '%s' calls no computation", k->name);
    uint8_t *keep = pc_calloc_array((uint64_t)m->n_comp, 1);
    k->view.comp = pc_calloc_array((uint64_t)m->n_comp + 1, sizeof *k->view.comp);
    int64_t *ids = pc_malloc_array((uint64_t)f->operand_ids.n + 1, sizeof *ids);
    if (!keep || !k->view.comp || !ids) {
        free(keep);
        free(ids);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    mark_callees(m, at, keep);
    for (int32_t c = 0; c < m->n_comp; c++)
        if (keep[c]) k->view.comp[k->view.n_comp++] = m->comp[c];
    free(keep);
    pc_hlo_computation *w = &k->view.comp[k->view.n_comp++];
    pc_status st = build_wrapper(m, f, w, ids, err);
    if (st) {
        free(ids); /* not handed to the fusion copy yet; kernel_free frees the rest */
        return st;
    }
    k->view.name = k->name;
    k->view.entry_computation_id = w->id;
    return PC_OK;
}

static void kernel_free(pc_hlo_kernel *k) {
    if (k->fusion && k->view.comp && k->view.n_comp > 0) {
        pc_hlo_computation *w = &k->view.comp[k->view.n_comp - 1];
        if (w->inst && w->n_inst > 0) free(w->inst[w->n_inst - 1].operand_ids.v);
        free(w->inst);
        free(w->name);
    }
    if (k->fusion) free(k->view.comp);
    free(k->name);
}

void pc_hlo_kernels_free(pc_hlo_kernel *k, int n) {
    if (!k) return;
    for (int i = 0; i < n; i++) kernel_free(&k[i]);
    free(k);
}

/*
 * fused[c] = 1 for computations a fusion calls. Kernels are the fusions
 * outside them: a fusion nested in a fused computation (XLA's bitcast
 * fusions) is part of its kernel, as in the tile collection's modules.
 */
static uint8_t *fused_comps(const pc_hlo_module *m) {
    uint8_t *fused = pc_calloc_array((uint64_t)m->n_comp + 1, 1);
    if (!fused) return NULL;
    for (int32_t c = 0; c < m->n_comp; c++)
        for (int32_t i = 0; i < m->comp[c].n_inst; i++) {
            const pc_hlo_instruction *in = &m->comp[c].inst[i];
            int32_t at;
            if (in->opcode_id == PC_HLO_FUSION && in->called_computation_ids.n > 0 &&
                comp_of_id(m, in->called_computation_ids.v[0], &at))
                fused[at] = 1;
        }
    return fused;
}

static int count_kernels(const pc_hlo_module *m, const uint8_t *fused) {
    int n = 0;
    for (int32_t c = 0; c < m->n_comp; c++)
        for (int32_t i = 0; i < m->comp[c].n_inst && !fused[c]; i++)
            n += m->comp[c].inst[i].opcode_id == PC_HLO_FUSION;
    return n;
}

pc_status pc_hlo_kernels(const pc_hlo_module *m, pc_hlo_kernel **out, int *n, pc_error *err) {
    *out = NULL;
    *n = 0;
    uint8_t *fused = fused_comps(m);
    int nf = fused ? count_kernels(m, fused) : 0;
    pc_hlo_kernel *k = fused ? pc_calloc_array((uint64_t)(nf ? nf : 1), sizeof *k) : NULL;
    if (!k) {
        free(fused);
        return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    if (!nf) { /* no fusion: the whole module is the kernel */
        k->view = *m;
        k->fused = comp_of_id(m, m->entry_computation_id, NULL);
        if (!k->fused && m->n_comp) k->fused = &m->comp[m->n_comp - 1];
        k->name = strdup(m->name ? m->name : "module");
        free(fused);
        if (!k->name) {
            free(k);
            return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        }
        *out = k;
        *n = 1;
        return PC_OK;
    }
    int got = 0;
    pc_status st = PC_OK;
    for (int32_t c = 0; c < m->n_comp && !st; c++)
        for (int32_t i = 0; i < m->comp[c].n_inst && !st && !fused[c]; i++)
            if (m->comp[c].inst[i].opcode_id == PC_HLO_FUSION)
                st = kernel_of_fusion(m, &m->comp[c].inst[i], &k[got++], err);
    free(fused);
    if (st) {
        pc_hlo_kernels_free(k, got);
        return st;
    }
    *out = k;
    *n = got;
    return PC_OK;
}

void pc_hlo_kernel_out_dims(const pc_hlo_kernel *k, int64_t *dims, int *rank, int cap) {
    *rank = 0;
    const pc_hlo_computation *c = k->fused;
    if (!c) return;
    const pc_hlo_instruction *root = NULL;
    for (int32_t i = 0; i < c->n_inst; i++)
        if (c->inst[i].id == c->root_id) root = &c->inst[i];
    /* A multi-output kernel: tile its first output (tuple element shapes are not in the IR). */
    for (int hop = 0; root && hop < 4 && array_rank(&root->shape) == 0 &&
                      root->shape.dims.n == 0 && root->operand_ids.n > 0 &&
                      (root->shape.tuple_count > 0 || root->shape.element_type == 13);
         hop++) {
        const pc_hlo_instruction *next = NULL;
        for (int32_t i = 0; i < c->n_inst; i++)
            if (c->inst[i].id == root->operand_ids.v[0]) next = &c->inst[i];
        root = next;
    }
    if (!root) return;
    int r = array_rank(&root->shape);
    for (int d = 0; d < r && d < cap; d++) dims[(*rank)++] = root->shape.dims.v[d];
}
