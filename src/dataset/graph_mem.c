/*
 * Graphs built from arrays in memory (pc_graph_from_arrays): the same shape,
 * dtype and kind checks as a file's, so a graph made from an HLO program
 * (perfcast rank FILE.hlo) is exactly what loading its .npz would give,
 * without writing one.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dataset/graph_internal.h"

static int key_index(const char *key) {
    for (int k = 0; k < PC_K_COUNT; k++)
        if (key && !strcmp(key, pc_key_name_(k))) return k;
    return -1;
}

static void slot_of(const pc_array *a, pc_slot *s) {
    memset(s, 0, sizeof *s);
    s->present = 1;
    s->dtype = a->dtype;
    s->ndim = a->ndim;
    memcpy(s->shape, a->shape, sizeof s->shape);
    s->data_bytes = pc_array_nbytes(a);
}

/* Copies one caller array into the graph, widened to the loaded dtype. */
static pc_status take_copy(pc_graph *g, int k, const pc_array *src, pc_error *err) {
    pc_array *a = &g->a[k];
    pc_status st = pc_array_alloc(a, src->dtype, src->ndim, src->shape, err);
    if (st != PC_OK) return st;
    size_t bytes = pc_array_nbytes(src);
    if (bytes) memcpy(a->data, src->data, bytes);
    if (a->dtype != pc_key_dtype_(k)) {
        char what[600];
        snprintf(what, sizeof what, "%s: key '%s'", g->path, pc_key_name_(k));
        st = pc_array_convert(a, pc_key_dtype_(k), what, err);
        if (st != PC_OK) return st;
    }
    pc_graph_canon_shape_(g, k);
    return PC_OK;
}

pc_status pc_graph_from_arrays(const char *label, pc_kind kind, const char *const *keys,
                               const pc_array *arrays, int count, pc_graph **out,
                               pc_error *err) {
    if (!out) return pc_fail(err, PC_ERR_ARG, "pc_graph_from_arrays: NULL output");
    *out = NULL;
    if (!label) label = "<memory>";
    if (count < 0 || (count && (!keys || !arrays)))
        return pc_fail(err, PC_ERR_ARG, "%s: pc_graph_from_arrays: bad array list", label);
    pc_slot slots[PC_K_COUNT];
    int src[PC_K_COUNT];
    memset(slots, 0, sizeof slots);
    for (int k = 0; k < PC_K_COUNT; k++) src[k] = -1;
    for (int i = 0; i < count; i++) {
        int k = key_index(keys[i]);
        if (k < 0) continue; /* like extra members of an .npz: not part of the graph */
        if (src[k] >= 0)
            return pc_fail(err, PC_ERR_ARG, "%s: key '%s' given twice", label, keys[i]);
        src[k] = i;
        slot_of(&arrays[i], &slots[k]);
    }
    pc_graph *g = pc_graph_new_(label);
    if (!g) return pc_fail(err, PC_ERR_NOMEM, "%s: out of memory", label);
    pc_status st = pc_graph_check_shapes_(g, slots, kind, err);
    for (int k = 0; k < PC_K_COUNT && st == PC_OK; k++)
        if (g->has[k]) st = take_copy(g, k, &arrays[src[k]], err);
    if (st != PC_OK) {
        pc_graph_free(g);
        return st;
    }
    *out = g;
    return PC_OK;
}
