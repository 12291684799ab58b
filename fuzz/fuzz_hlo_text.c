/*
 * Fuzz target: the HLO text parser and printer (src/hlo/text.h).
 *
 * Besides "no crash, no hang", it checks what a successful parse promises:
 * ids 1..n in computation order then instruction order, every operand an
 * instruction of the same computation, callees before callers, the entry
 * last, roots inside their computation, opcode ids matching the table,
 * parameter numbers only on parameters, consistent list lengths. Then the
 * printed text must parse back to the same IR and print the same text again.
 * A failed parse must say where: "fuzz.hlo:LINE:COLUMN: ...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hlo/text.h"
#include "tpugraphs/opcode.h"

static void check_module(const pc_hlo_module *m) {
    check(m->name && m->n_comp >= 1 && m->comp);
    check(m->entry_computation_id == m->n_comp);
    int64_t id = 1;
    for (int32_t c = 0; c < m->n_comp; c++) {
        const pc_hlo_computation *comp = &m->comp[c];
        check(comp->name && comp->id == c + 1 && comp->n_inst >= 1);
        int64_t first = id;
        for (int32_t i = 0; i < comp->n_inst; i++, id++) {
            const pc_hlo_instruction *in = &comp->inst[i];
            check(in->name && in->opcode && in->id == id);
            check(in->opcode_id == pc_hlo_opcode_find(in->opcode));
            check((in->opcode_id == PC_HLO_PARAMETER) == (in->parameter_number >= 0));
            check(in->parameter_number >= -1);
            check(in->shape.dims.n >= 0 && (in->shape.dims.n == 0 || in->shape.dims.v));
            check(in->shape.tuple_count == 0 || in->shape.element_type == 13);
            for (int32_t j = 0; j < in->operand_ids.n; j++)
                check(in->operand_ids.v[j] >= first && in->operand_ids.v[j] < first + comp->n_inst);
            for (int32_t j = 0; j < in->called_computation_ids.n; j++)
                check(in->called_computation_ids.v[j] >= 1 && in->called_computation_ids.v[j] <= c);
            check(pc_hlo_x(in)->window.n >= 0);
            if (pc_hlo_x(in)->window.n)
                check(pc_hlo_x(in)->window.size && pc_hlo_x(in)->window.stride && pc_hlo_x(in)->window.padding_low && pc_hlo_x(in)->window.padding_high &&
                      pc_hlo_x(in)->window.window_dilation && pc_hlo_x(in)->window.base_dilation && pc_hlo_x(in)->window.window_reversal);
            check(pc_hlo_x(in)->slice_limit.n == pc_hlo_x(in)->slice_start.n && pc_hlo_x(in)->slice_stride.n == pc_hlo_x(in)->slice_start.n);
            check(pc_hlo_x(in)->pad_high.n == pc_hlo_x(in)->pad_low.n && pc_hlo_x(in)->pad_interior.n == pc_hlo_x(in)->pad_low.n);
            if (pc_hlo_x(in)->conv.present)
                check(pc_hlo_x(in)->conv.input_spatial.n == pc_hlo_x(in)->conv.kernel_spatial.n &&
                      pc_hlo_x(in)->conv.input_spatial.n == pc_hlo_x(in)->conv.output_spatial.n && pc_hlo_x(in)->conv.input_spatial.n <= 10);
        }
        check(comp->root_id >= first && comp->root_id < id);
    }
}

static int lists_eq(const pc_i64s *a, const pc_i64s *b) {
    return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, (size_t)a->n * sizeof *a->v) == 0);
}

static int arr_eq(const int64_t *a, const int64_t *b, int32_t n) {
    return n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* Both sides come from the parser, so ids are comparable as they are. */
static void check_equal(const pc_hlo_module *a, const pc_hlo_module *b) {
    check(strcmp(a->name, b->name) == 0 && a->n_comp == b->n_comp);
    check(a->entry_computation_id == b->entry_computation_id);
    for (int32_t c = 0; c < a->n_comp; c++) {
        const pc_hlo_computation *x = &a->comp[c], *y = &b->comp[c];
        check(strcmp(x->name, y->name) == 0 && x->id == y->id && x->root_id == y->root_id);
        check(x->n_inst == y->n_inst);
        for (int32_t i = 0; i < x->n_inst; i++) {
            const pc_hlo_instruction *p = &x->inst[i], *q = &y->inst[i];
            check(strcmp(p->name, q->name) == 0 && strcmp(p->opcode, q->opcode) == 0);
            check(p->opcode_id == q->opcode_id && p->id == q->id);
            check(p->shape.element_type == q->shape.element_type && p->shape.tuple_count == q->shape.tuple_count);
            check(lists_eq(&p->shape.dims, &q->shape.dims));
            check(lists_eq(&p->shape.minor_to_major, &q->shape.minor_to_major));
            check(p->parameter_number == q->parameter_number);
            check(lists_eq(&p->dimensions, &q->dimensions));
            check(pc_hlo_x(p)->window.n == pc_hlo_x(q)->window.n);
            int32_t n = pc_hlo_x(p)->window.n;
            check(arr_eq(pc_hlo_x(p)->window.size, pc_hlo_x(q)->window.size, n) && arr_eq(pc_hlo_x(p)->window.stride, pc_hlo_x(q)->window.stride, n) &&
                  arr_eq(pc_hlo_x(p)->window.padding_low, pc_hlo_x(q)->window.padding_low, n) &&
                  arr_eq(pc_hlo_x(p)->window.padding_high, pc_hlo_x(q)->window.padding_high, n) &&
                  arr_eq(pc_hlo_x(p)->window.window_dilation, pc_hlo_x(q)->window.window_dilation, n) &&
                  arr_eq(pc_hlo_x(p)->window.base_dilation, pc_hlo_x(q)->window.base_dilation, n));
            check(n == 0 || memcmp(pc_hlo_x(p)->window.window_reversal, pc_hlo_x(q)->window.window_reversal, (size_t)n) == 0);
            check(pc_hlo_x(p)->conv.present == pc_hlo_x(q)->conv.present);
            if (pc_hlo_x(p)->conv.present)
                check(pc_hlo_x(p)->conv.input_batch == pc_hlo_x(q)->conv.input_batch && pc_hlo_x(p)->conv.input_feature == pc_hlo_x(q)->conv.input_feature &&
                      pc_hlo_x(p)->conv.kernel_input_feature == pc_hlo_x(q)->conv.kernel_input_feature &&
                      pc_hlo_x(p)->conv.kernel_output_feature == pc_hlo_x(q)->conv.kernel_output_feature &&
                      pc_hlo_x(p)->conv.output_batch == pc_hlo_x(q)->conv.output_batch &&
                      pc_hlo_x(p)->conv.output_feature == pc_hlo_x(q)->conv.output_feature &&
                      lists_eq(&pc_hlo_x(p)->conv.input_spatial, &pc_hlo_x(q)->conv.input_spatial) &&
                      lists_eq(&pc_hlo_x(p)->conv.kernel_spatial, &pc_hlo_x(q)->conv.kernel_spatial) &&
                      lists_eq(&pc_hlo_x(p)->conv.output_spatial, &pc_hlo_x(q)->conv.output_spatial));
            check(lists_eq(&pc_hlo_x(p)->slice_start, &pc_hlo_x(q)->slice_start) && lists_eq(&pc_hlo_x(p)->slice_limit, &pc_hlo_x(q)->slice_limit) &&
                  lists_eq(&pc_hlo_x(p)->slice_stride, &pc_hlo_x(q)->slice_stride));
            check(lists_eq(&pc_hlo_x(p)->dynamic_slice_sizes, &pc_hlo_x(q)->dynamic_slice_sizes));
            check(lists_eq(&pc_hlo_x(p)->pad_low, &pc_hlo_x(q)->pad_low) && lists_eq(&pc_hlo_x(p)->pad_high, &pc_hlo_x(q)->pad_high) &&
                  lists_eq(&pc_hlo_x(p)->pad_interior, &pc_hlo_x(q)->pad_interior));
            check(p->feature_group_count == q->feature_group_count && p->batch_group_count == q->batch_group_count);
            check(p->is_stable == q->is_stable);
            check(lists_eq(&p->operand_ids, &q->operand_ids));
            check(lists_eq(&p->called_computation_ids, &q->called_computation_ids));
        }
    }
}

PC_FUZZ_TARGET(hlo_text) {
    pc_hlo_module **mods = NULL;
    int n = 0;
    pc_error err;
    pc_hlo_text_stats st;
    pc_error_clear(&err);
    pc_status s = pc_hlo_parse_text((const char *)data, size, "fuzz.hlo", &mods, &n, &st, &err);
    if (s != PC_OK) {
        check(err.code == s && mods == NULL && n == 0);
        int line = 0, col = 0;
        check(sscanf(err.msg, "fuzz.hlo:%d:%d: ", &line, &col) == 2 && line >= 1 && col >= 1);
        return 0;
    }
    check(n >= 1 && mods != NULL);
    for (int k = 0; k < n; k++) {
        check_module(mods[k]);
        char *text = NULL, *text2 = NULL;
        size_t len = 0;
        check(pc_hlo_print_text_buf(mods[k], &text, &len, &err) == PC_OK);
        pc_hlo_module **back = NULL;
        int nb = 0;
        s = pc_hlo_parse_text(text, len, "printed.hlo", &back, &nb, NULL, &err);
        if (s != PC_OK) fprintf(stderr, "printed text does not parse: %s\n%s\n", err.msg, text);
        check(s == PC_OK && nb == 1);
        check_module(back[0]);
        check_equal(mods[k], back[0]);
        check(pc_hlo_print_text_buf(back[0], &text2, NULL, &err) == PC_OK);
        check(strcmp(text, text2) == 0);
        free(text);
        free(text2);
        pc_hlo_modules_free(back, nb);
    }
    pc_hlo_modules_free(mods, n);
    return 0;
}
