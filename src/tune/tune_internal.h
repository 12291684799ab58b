/*
 * Internal interfaces of the configuration search (src/tune/):
 *   space.c  - the space: what is searched, choices <-> config rows
 *   search.c - the search over a space with any scorer
 *   model.c  - a trained model as the scorer
 *   write.c  - the proposals as a TpuGraphs .npz
 * A configuration is a vector of choices, one per searched variable
 * (a layout tensor, a free tile bound); choice 0 of a layout tensor is -1
 * (the compiler's choice), choice 1 row-major.
 */
#ifndef PC_TUNE_INTERNAL_H
#define PC_TUNE_INTERNAL_H

#include <stdint.h>

#include "perfcast/tune.h"

typedef struct tn_var {
    int64_t node;    /* layout: configurable node j; tile: the bound's slot 0..17 */
    int tensor;      /* layout */
    int rank, slots; /* layout: tensor rank, minor_to_major entries set */
    int64_t nch;     /* choices */
    int64_t *vals;   /* tile: the sizes, ascending */
} tn_var;

#define TN_TILE_SLOTS 18 /* kernel, output, input: 6 each */

struct pc_tune_space {
    pc_kind kind;
    int64_t nc, width, nvars;
    tn_var *vars;
    int tile_n[3];             /* bounds per list */
    int tie[TN_TILE_SLOTS];    /* tile: the earlier slot a bound always equals, or -1 */
    int var_of[TN_TILE_SLOTS]; /* tile: the variable of a free bound, or -1 */
    int64_t *var_at;           /* layout: nc x 3, variable of a tensor or -1 */
    double log10_size;
};

/* Writes the config row of choices ch (nvars). */
void tn_materialize(const pc_tune_space *s, const int32_t *ch, float *row);
/* The choices of a row; 0, or -1 if the row is not in the space. */
int tn_encode(const pc_tune_space *s, const float *row, int32_t *ch);

#endif /* PC_TUNE_INTERNAL_H */
