/*
 * What a compiler autotuner would configure in an HLO module, for ranking a
 * user's program with a trained model (perfcast rank FILE.hlo) and for
 * graph-only imports of HLO text. Internal API (hlo/configurable.c).
 *
 * Layout: the configurable nodes are every convolution, dot and reshape
 * instruction of the module (any computation), in node order. On the real
 * fixture module_tuning_data_layout.pb this picks exactly the 62 nodes of
 * its config_index_to_node (53 convolutions and 9 reshapes, 3 of them in
 * while bodies; the module has no dot) and no other node.
 *
 * Each configurable node has up to 3 tensors, in node_config_feat's order:
 * the output, operand 0 and operand 1 (convolution / dot: input and kernel;
 * reshape: output and input only). A tensor's config is a minor_to_major
 * prefix: convolution and dot tensors carry their 2 most-minor dimensions,
 * reshape tensors the whole order, as the fixture's runs do.
 */
#ifndef PC_HLO_CANDIDATES_H
#define PC_HLO_CANDIDATES_H

#include "hlo/hlo_ir.h"
#include "perfcast/hlo.h"

/* One configurable node: where it is and what its tensors look like. */
typedef struct pc_hlo_cfg_node {
    int64_t node;                   /* node index (featurize order) */
    const pc_hlo_instruction *inst; /* borrowed from the module */
    int tensors;                    /* 2 (reshape) or 3 */
    int rank[3];                    /* tensor ranks (0: scalar, tuple or unknown operand) */
    int slots;                      /* minor_to_major entries configured per tensor: 2 or 6 */
} pc_hlo_cfg_node;

/* 1 if the layout autotuner configures instructions of this opcode id. */
int pc_hlo_is_layout_configurable(int32_t opcode_id);

/*
 * The configurable nodes of `m` (malloc'd array in *out, count in *n; NULL
 * and 0 when there are none).
 */
pc_status pc_hlo_layout_nodes(const pc_hlo_module *m, pc_hlo_cfg_node **out, int64_t *n,
                              pc_error *err);

/*
 * A fused kernel seen as the tile collection's modules are: the fused
 * computation with everything it calls, plus a wrapper entry computation of
 * one parameter per operand of the fusion and the fusion itself. The view
 * borrows the instructions of `m` (the wrapper's are its own).
 */
typedef struct pc_hlo_kernel {
    pc_hlo_module view;         /* featurize this */
    const pc_hlo_instruction *fusion; /* NULL: the kernel is the whole module */
    const pc_hlo_computation *fused;  /* the fused computation (entry when fusion is NULL) */
    char *name;                 /* the fusion instruction's name, or the module's */
} pc_hlo_kernel;

/*
 * The kernels of `m`: one per fusion instruction outside fused computations
 * (in node order; nested fusions belong to their kernel), or the whole
 * module as one kernel when it has no fusion. On success *out holds
 * *n >= 1 kernels; free with pc_hlo_kernels_free.
 */
pc_status pc_hlo_kernels(const pc_hlo_module *m, pc_hlo_kernel **out, int *n, pc_error *err);
void pc_hlo_kernels_free(pc_hlo_kernel *k, int n);

/*
 * Output dimensions of a kernel (its fused computation's root; of the
 * root's first operand when the root is a tuple); *rank <= cap.
 */
void pc_hlo_kernel_out_dims(const pc_hlo_kernel *k, int64_t *dims, int *rank, int cap);

/*
 * pc_rank_sets_from_hlo (perfcast/hlo.h) on modules already parsed and a
 * candidates file already in memory (hlo/rank.c): `configs` (`len` bytes,
 * any bytes) is read line by line exactly as the --configs file would be,
 * and messages name it `configs_name` where they would name that file
 * ("CONFIGS:LINE: ..."); configs NULL enumerates instead. `path` names the
 * program in labels; opts->configs is ignored and the modules stay the
 * caller's. It lets the candidates parser be fuzzed without files
 * (fuzz/fuzz_rank_candidates.c).
 */
pc_status pc_rank_sets_from_modules(const char *path, pc_hlo_module *const *mods, int nmods,
                                    const pc_rank_opts *opts, const char *configs, size_t len,
                                    const char *configs_name, pc_rank_set ***sets, int *n,
                                    pc_error *err);

#endif /* PC_HLO_CANDIDATES_H */
