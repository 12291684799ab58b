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
            const pc_hlo_inst_ext *ix = pc_hlo_x(in);
            check(ix->window.n >= 0);
            if (ix->window.n)
                check(ix->window.size && ix->window.stride && ix->window.padding_low && ix->window.padding_high &&
                      ix->window.window_dilation && ix->window.base_dilation && ix->window.window_reversal);
            check(ix->slice_limit.n == ix->slice_start.n && ix->slice_stride.n == ix->slice_start.n);
            check(ix->pad_high.n == ix->pad_low.n && ix->pad_interior.n == ix->pad_low.n);
            if (ix->conv.present)
                check(ix->conv.input_spatial.n == ix->conv.kernel_spatial.n &&
                      ix->conv.input_spatial.n == ix->conv.output_spatial.n && ix->conv.input_spatial.n <= 10);
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
            const pc_hlo_inst_ext *px = pc_hlo_x(p), *qx = pc_hlo_x(q);
            check(px->window.n == qx->window.n);
            int32_t n = px->window.n;
            check(arr_eq(px->window.size, qx->window.size, n) && arr_eq(px->window.stride, qx->window.stride, n) &&
                  arr_eq(px->window.padding_low, qx->window.padding_low, n) &&
                  arr_eq(px->window.padding_high, qx->window.padding_high, n) &&
                  arr_eq(px->window.window_dilation, qx->window.window_dilation, n) &&
                  arr_eq(px->window.base_dilation, qx->window.base_dilation, n));
            check(n == 0 || memcmp(px->window.window_reversal, qx->window.window_reversal, (size_t)n) == 0);
            check(px->conv.present == qx->conv.present);
            if (px->conv.present)
                check(px->conv.input_batch == qx->conv.input_batch && px->conv.input_feature == qx->conv.input_feature &&
                      px->conv.kernel_input_feature == qx->conv.kernel_input_feature &&
                      px->conv.kernel_output_feature == qx->conv.kernel_output_feature &&
                      px->conv.output_batch == qx->conv.output_batch &&
                      px->conv.output_feature == qx->conv.output_feature &&
                      lists_eq(&px->conv.input_spatial, &qx->conv.input_spatial) &&
                      lists_eq(&px->conv.kernel_spatial, &qx->conv.kernel_spatial) &&
                      lists_eq(&px->conv.output_spatial, &qx->conv.output_spatial));
            check(lists_eq(&px->slice_start, &qx->slice_start) && lists_eq(&px->slice_limit, &qx->slice_limit) &&
                  lists_eq(&px->slice_stride, &qx->slice_stride));
            check(lists_eq(&px->dynamic_slice_sizes, &qx->dynamic_slice_sizes));
            check(lists_eq(&px->pad_low, &qx->pad_low) && lists_eq(&px->pad_high, &qx->pad_high) &&
                  lists_eq(&px->pad_interior, &qx->pad_interior));
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
