/* The HLO IR's owner: freeing a module, and id lookups (hlo_ir.h). */
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_ir.h"

void pc_hlo_shape_clear(pc_hlo_shape *s) {
    if (s->tuple_shapes)
        for (int32_t i = 0; i < s->tuple_count; i++) pc_hlo_shape_clear(&s->tuple_shapes[i]);
    free(s->tuple_shapes);
    free(s->dims.v);
    free(s->minor_to_major.v);
    memset(s, 0, sizeof *s);
}

const char *pc_hlo_attr_get(const pc_hlo_instruction *in, const char *name) {
    for (int32_t i = 0; i < in->n_attrs; i++)
        if (strcmp(in->attrs[i].name, name) == 0) return in->attrs[i].value;
    return NULL;
}

const pc_hlo_inst_ext pc_hlo_ext_none;

pc_hlo_inst_ext *pc_hlo_x_mut(pc_hlo_instruction *in) {
    if (!in->ext) in->ext = calloc(1, sizeof *in->ext);
    return in->ext;
}

void pc_hlo_window_clear(pc_hlo_window *w) {
    free(w->size);
    free(w->stride);
    free(w->padding_low);
    free(w->padding_high);
    free(w->window_dilation);
    free(w->base_dilation);
    free(w->window_reversal);
    memset(w, 0, sizeof *w);
}

static void free_ext(pc_hlo_inst_ext *x) {
    if (!x) return;
    pc_hlo_window_clear(&x->window);
    free(x->conv.input_spatial.v);
    free(x->conv.kernel_spatial.v);
    free(x->conv.output_spatial.v);
    free(x->slice_start.v);
    free(x->slice_limit.v);
    free(x->slice_stride.v);
    free(x->dynamic_slice_sizes.v);
    free(x->pad_low.v);
    free(x->pad_high.v);
    free(x->pad_interior.v);
    free(x->dot.lhs_contracting.v);
    free(x->dot.rhs_contracting.v);
    free(x->dot.lhs_batch.v);
    free(x->dot.rhs_batch.v);
    free(x);
}

static void free_inst(pc_hlo_instruction *in, int shared_opcodes) {
    free(in->name);
    if (!shared_opcodes) free(in->opcode);
    pc_hlo_shape_clear(&in->shape);
    for (int32_t i = 0; i < in->n_attrs; i++) {
        free(in->attrs[i].name);
        free(in->attrs[i].value);
    }
    free(in->attrs);
    free(in->dimensions.v);
    free(in->operand_ids.v);
    free(in->called_computation_ids.v);
    free_ext(in->ext);
}

void pc_hlo_module_free(pc_hlo_module *m) {
    if (!m) return;
    for (int32_t c = 0; c < m->n_comp && m->comp; c++) {
        pc_hlo_computation *comp = &m->comp[c];
        for (int32_t i = 0; i < comp->n_inst && comp->inst; i++) free_inst(&comp->inst[i], m->n_opcodes > 0);
        free(comp->inst);
        free(comp->name);
    }
    free(m->comp);
    for (int32_t i = 0; i < m->n_opcodes; i++) free(m->opcodes[i]);
    free(m->opcodes);
    free(m->name);
    free(m);
}

const char *pc_hlo_printable(const char *s, char *buf) {
    size_t j = 0;
    for (; s && s[j] && j < 64; j++) buf[j] = (s[j] >= 0x20 && s[j] < 0x7f) ? s[j] : '?';
    if (s && s[j]) buf[61] = buf[62] = buf[63] = '.';
    buf[j] = '\0';
    return buf;
}

int64_t pc_hlo_node_of_id(const pc_hlo_module *mod, int64_t id) {
    if (!mod) return -1;
    int64_t node = 0;
    for (int32_t c = 0; c < mod->n_comp; c++) {
        const pc_hlo_computation *comp = &mod->comp[c];
        for (int32_t i = 0; i < comp->n_inst; i++, node++)
            if (comp->inst[i].id == id) return node;
    }
    return -1;
}

uint64_t pc_hlo_module_bytes(const pc_hlo_module *m, int64_t *nodes, int64_t *edges) {
    uint64_t t = 0;
    int64_t n = 0, e = 0;
    for (int32_t c = 0; c < m->n_comp; c++)
        for (int32_t k = 0; k < m->comp[c].n_inst; k++) {
            const pc_hlo_instruction *in = &m->comp[c].inst[k];
            uint64_t lists = (uint64_t)in->shape.dims.n + (uint64_t)in->shape.minor_to_major.n +
                             (uint64_t)in->operand_ids.n + (uint64_t)in->dimensions.n +
                             7 * (uint64_t)pc_hlo_x(in)->window.n;
            t += sizeof *in + 8 * lists + 64 + (in->name ? strlen(in->name) : 0);
            n++;
            e += in->operand_ids.n + in->called_computation_ids.n;
        }
    if (nodes) *nodes += n;
    if (edges) *edges += e;
    return t;
}
