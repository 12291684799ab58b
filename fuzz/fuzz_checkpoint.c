/*
 * Fuzz target: model checkpoints (the "perfcast" metadata: architecture,
 * encodings, GST, ensemble; the parameter and preprocessing tensors), read
 * from memory with pc_st_open_memory and built by pc_ckpt_load_st.
 *
 * A checkpoint that loads must not hold more parameters than its file's
 * bytes (the metadata cannot make the reader allocate beyond the file), and
 * its members share its architecture. One that fails must fail with a message.
 */
#include <string.h>

#include "fuzz.h"
#include "gnn/checkpoint.h"

PC_FUZZ_TARGET(checkpoint) {
    pc_error err;
    memset(&err, 0, sizeof err);
    pc_st *r = NULL;
    if (pc_st_open_memory(data, size, "fuzz.safetensors", &r, &err) != PC_OK) {
        check(err.msg[0] != 0);
        return 0;
    }
    pc_gnn *m = NULL;
    int coll = -1;
    pc_status st = pc_ckpt_load_st(r, "fuzz.safetensors", PC_MEMORY_AUTO, &m, &coll, &err);
    if (st != PC_OK) {
        check(m == NULL && err.msg[0] != 0);
    } else {
        check(m != NULL && coll >= 0);
        size_t floats = m->params.numel * (size_t)(1 + m->n_members);
        check(floats * sizeof(float) <= size);
        for (int k = 0; k < m->n_members; k++)
            check(m->members[k]->params.numel == m->params.numel);
    }
    pc_gnn_free(m);
    pc_st_close(r);
    return 0;
}
