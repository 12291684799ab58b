/*
 * Model checkpoints (safetensors): tensors "param.<name>" (F32, the model
 * parameters) and "prep.{node,cfg}.{keep,logt,mean,std}" (the preprocessing),
 * metadata key "perfcast" holding a JSON object with the format and version,
 * the collection, the architecture and (written by the trainer) the training
 * options and best validation metric.
 *
 * The reader is here, with the model, because inference (predict, rank, eval)
 * needs it and must not depend on the trainer; the writer records training
 * options and the resume state and is src/train/checkpoint.c (pc_ckpt_save).
 */
#ifndef PC_MODEL_CHECKPOINT_H
#define PC_MODEL_CHECKPOINT_H

#include "gnn/gnn.h"
#include "perfcast/safetensors.h"

#define PC_CKPT_FORMAT "perfcast-model"
#define PC_CKPT_VERSION 1

/*
 * A seed ensemble of N >= 2 members (pc_train_opts.ensemble) is one file:
 * member 0 as a plain model ("param.<name>"), members k = 1 .. N-1 as
 * "member<k>.param.<name>", one preprocessing for all (it is fitted on the
 * data, the same for every seed), and metadata "ensemble": N. A plain model
 * has no "ensemble" key, so its bytes are as before; a reader that predates
 * ensembles scores an ensemble with member 0 alone.
 */
#define PC_CKPT_MAX_MEMBERS 64

/* The metadata names of pc_gnn_opts.pool, .join and .act are pc_pool_name,
   pc_join_name and pc_act_name (perfcast/gnn.h). */

/*
 * Loads a model (an ensemble: its members into (*out)->members); *collection receives
 * the collection index. max_memory (bytes or PC_MEMORY_AUTO, perfcast/npz.h) bounds
 * the header's parse (pc_st_open_max) and the model's parameters (four floats each:
 * value, gradient, two Adam moments, times the members), checked before allocating.
 */
pc_status pc_ckpt_load(const char *path, uint64_t max_memory, pc_gnn **out, int *collection,
                       pc_error *err);
/* pc_ckpt_load of an opened file r (path names it in messages): the fuzz target's way in. */
pc_status pc_ckpt_load_st(const pc_st *r, const char *path, uint64_t max_memory, pc_gnn **out,
                          int *collection, pc_error *err);

#endif /* PC_MODEL_CHECKPOINT_H */
