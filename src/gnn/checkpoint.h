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

#define PC_CKPT_FORMAT "perfcast-model"
#define PC_CKPT_VERSION 1

/* The metadata names of pc_gnn_opts.pool, .join and .act are pc_pool_name,
   pc_join_name and pc_act_name (perfcast/gnn.h). */

/* Loads a model; *collection receives the collection index. */
pc_status pc_ckpt_load(const char *path, pc_gnn **out, int *collection, pc_error *err);

#endif /* PC_MODEL_CHECKPOINT_H */
