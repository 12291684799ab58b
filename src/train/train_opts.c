/* perfcast train: the options, their checks, the loss and the model options. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnn/encode.h"
#include "train/train_internal.h"

pc_train_opts pc_train_opts_default(void) {
    pc_train_opts o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.epochs = 20;
    o.patience = 5;
    o.seed = 1;
    o.ensemble = 1;
    o.configs = PC_TRAIN_AUTO;
    o.lr = 1e-3f;
    o.weight_decay = 1e-4f;
    o.clip = 1.0f;
    o.hidden = 64;
    o.layers = 3;
    o.pool = PC_POOL_MEAN;
    o.join = PC_JOIN_AUTO;
    o.act = PC_ACT_LEAKY_RELU;
    o.emb_dim = 16;
    o.layernorm = 1;
    o.prune_hops = PC_TRAIN_AUTO;
    o.encode = PC_ENCODE_AUTO;
    o.loss.listmle = o.loss.hinge = o.loss.mse = PC_TRAIN_AUTO;
    o.sampling = PC_SAMPLING_UNIFORM;
    o.seg_method = PC_SEGMENTS_CONTIGUOUS;
    o.seg_size = 1000;
    o.gst_train_segs = 1;
    o.gst_keep = 0.5f;
    o.batch_graphs = 1;
    return o;
}

static const char *const sampling_names[PC_SAMPLING_COUNT] = {"uniform", "fast"};

const char *pc_sampling_name(pc_sampling s) {
    return s >= 0 && s < PC_SAMPLING_COUNT ? sampling_names[s] : NULL;
}

pc_status pc_sampling_parse(const char *name, pc_sampling *out) {
    for (int i = 0; name && i < PC_SAMPLING_COUNT; i++)
        if (!strcmp(name, sampling_names[i])) {
            *out = (pc_sampling)i;
            return PC_OK;
        }
    return PC_ERR_ARG;
}

pc_status pc_loss_weights_parse(const char *spec, pc_loss_weights *out, pc_error *err) {
    pc_loss_weights w = {0, 0, 0};
    char buf[256];
    if (!spec) return pc_fail(err, PC_ERR_ARG, "loss: no terms given");
    if (strlen(spec) >= sizeof buf) return pc_fail(err, PC_ERR_ARG, "loss is too long");
    strcpy(buf, spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':'), *end = NULL;
        double v = 1.0;
        if (colon) {
            *colon = 0;
            v = strtod(colon + 1, &end);
            if (end == colon + 1 || *end || !isfinite(v) || v < 0)
                return pc_fail(err, PC_ERR_ARG, "loss term '%s': weight '%s' is not a number "
                               ">= 0", t, colon + 1);
        }
        if (!strcmp(t, "listmle")) w.listmle = (float)v;
        else if (!strcmp(t, "hinge")) w.hinge = (float)v;
        else if (!strcmp(t, "mse")) w.mse = (float)v;
        else
            return pc_fail(err, PC_ERR_ARG, "loss term '%s': expected listmle, hinge or mse", t);
    }
    if (!(w.listmle + w.hinge + w.mse > 0))
        return pc_fail(err, PC_ERR_ARG, "loss '%s' has no positive weight", spec);
    *out = w;
    return PC_OK;
}

/* The loss of the collection (weights AUTO: its default) and its description. */
static pc_status loss_cfg(const pc_loss_weights *w, pc_kind kind, pc_loss_cfg *lc, char *desc,
                          size_t dn, pc_error *err) {
    *lc = pc_loss_cfg_default();
    lc->hinge_margin = 0.1f;
    lc->hinge_temperature = 1.0f;
    if (kind == PC_KIND_LAYOUT) lc->listmle_temperature = 1.0f;
    int autos = (w->listmle == PC_TRAIN_AUTO) + (w->hinge == PC_TRAIN_AUTO) +
                (w->mse == PC_TRAIN_AUTO);
    if (autos == 3) {
        lc->w_listmle = kind == PC_KIND_TILE ? 1.0f : 0.0f;
        lc->w_hinge = kind == PC_KIND_TILE ? 0.0f : 1.0f;
        lc->w_mse = kind == PC_KIND_TILE ? 0.02f : 0.0f;
    } else if (autos > 0 || !(w->listmle >= 0 && w->hinge >= 0 && w->mse >= 0) ||
               !isfinite(w->listmle + w->hinge + w->mse) || !(w->listmle + w->hinge + w->mse > 0)) {
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.loss weights must be >= 0 with a "
                       "positive sum, or all PC_TRAIN_AUTO (got %g, %g, %g)",
                       (double)w->listmle, (double)w->hinge, (double)w->mse);
    } else {
        lc->w_listmle = w->listmle;
        lc->w_hinge = w->hinge;
        lc->w_mse = w->mse;
    }
    snprintf(desc, dn, "listmle(T=%g):%g,hinge(margin=%g,T=%g):%g,mse:%g",
             (double)lc->listmle_temperature, (double)lc->w_listmle, (double)lc->hinge_margin,
             (double)lc->hinge_temperature, (double)lc->w_hinge, (double)lc->w_mse);
    return PC_OK;
}

/* The first pc_train_opts field out of its range, with what it must be; NULL if none. */
static const char *bad_field(const pc_train_opts *o, const char **must) {
    const struct {
        int bad;
        const char *field, *must;
    } c[] = {
        {o->epochs < 1, "epochs", ">= 1"},
        {o->patience < 1, "patience", ">= 1"},
        {o->ensemble < 1 || o->ensemble > PC_CKPT_MAX_MEMBERS, "ensemble", "in 1..64"},
        {o->threads < 0, "threads", ">= 0"},
        {o->configs != PC_TRAIN_AUTO && o->configs < 2, "configs", ">= 2 or PC_TRAIN_AUTO"},
        {!(o->time_budget >= 0), "time_budget", ">= 0"},
        {!(o->lr > 0), "lr", "> 0"},
        {!(o->weight_decay >= 0), "weight_decay", ">= 0"},
        {!(o->clip > 0), "clip", "> 0"},
        {o->hidden < 1, "hidden", ">= 1"},
        {o->layers < 0, "layers", ">= 0"},
        {o->pool < 0 || o->pool >= PC_POOL_COUNT, "pool", "a pc_pool"},
        {o->join < PC_JOIN_AUTO || o->join >= PC_JOIN_COUNT, "join", "a pc_join"},
        {o->act < 0 || o->act >= PC_ACT_COUNT, "act", "a pc_act"},
        {o->emb_dim < 1, "emb_dim", ">= 1"},
        {o->layernorm != 0 && o->layernorm != 1, "layernorm", "0 or 1"},
        {!(o->dropout >= 0 && o->dropout < 1), "dropout", "in [0, 1)"},
        {o->attn_heads < 0, "attn_heads", ">= 0"},
        {o->prune_hops != PC_TRAIN_AUTO && (o->prune_hops < 0 || o->prune_hops > 64),
         "prune_hops", "in 0..64 or PC_TRAIN_AUTO"},
        {o->encode != PC_ENCODE_AUTO && (o->encode & ~PC_ENCODE_ALL), "encode",
         "PC_ENCODE_* bits or PC_ENCODE_AUTO"},
        {o->sampling < 0 || o->sampling >= PC_SAMPLING_COUNT, "sampling", "a pc_sampling"},
        {o->seg_method < 0 || o->seg_method >= PC_SEGMENTS_COUNT, "seg_method", "a pc_segments"},
        {o->seg_size < 1, "seg_size", ">= 1"},
        {o->gst_train_segs < 1, "gst_train_segs", ">= 1"},
        {!(o->gst_keep >= 0 && o->gst_keep <= 1), "gst_keep", "in [0, 1]"},
        {o->gst_finetune < 0, "gst_finetune", ">= 0"},
        {o->batch_graphs < 1, "batch_graphs", ">= 1"},
        {!(o->max_memory_gib >= 0), "max_memory_gib", ">= 0"},
        {o->stop_after_steps < 0, "stop_after_steps", ">= 0"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (c[i].bad) {
            *must = c[i].must;
            return c[i].field;
        }
    return NULL;
}

pc_status pc_tr_check_opts(trainer *t, pc_error *err) {
    pc_train_opts *o = &t->o;
    if (!o->data_dir || !o->collection || !o->out_path)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.data_dir, collection and out_path "
                       "are required");
    if ((t->coll = pc_collection_find(o->collection)) < 0)
        return pc_fail(err, PC_ERR_ARG, "train: unknown collection '%s'", o->collection);
    t->kind = pc_collection_kind(t->coll);
    const char *must = NULL, *field = bad_field(o, &must);
    if (field) return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.%s must be %s", field, must);
    if (o->gst && t->kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.gst applies to layout collections "
                       "(tile graphs are small)");
    if (o->ensemble > 1 && o->resume)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.resume does not apply to "
                       "ensembles (pc_train_opts.ensemble > 1 keeps no resume state)");
    if (o->prune_hops > 0 && t->kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.prune_hops applies to layout "
                       "collections (tile graphs have no configurable nodes)");
    if (o->configs == PC_TRAIN_AUTO) o->configs = t->kind == PC_KIND_TILE ? 32 : 16;
    t->fast = o->sampling == PC_SAMPLING_FAST;
    if (snprintf(t->state_path, sizeof t->state_path, "%s.state", o->out_path) >=
        (int)sizeof t->state_path)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.out_path is too long");
    return loss_cfg(&o->loss, t->kind, &t->lc, t->loss_desc, sizeof t->loss_desc, err);
}

pc_status pc_tr_model_opts(const trainer *t, pc_gnn_opts *mo, pc_error *err) {
    static const pc_seg_method seg_method[PC_SEGMENTS_COUNT] = {
        PC_SEG_CONTIGUOUS, PC_SEG_NODE_SPLITS, PC_SEG_METIS};
    const pc_train_opts *o = &t->o;
    int layout = t->kind == PC_KIND_LAYOUT;
    (void)err;
    *mo = pc_gnn_opts_default(t->kind);
    mo->hidden = o->hidden;
    mo->layers = o->layers;
    mo->pool = o->pool;
    mo->join = o->join != PC_JOIN_AUTO ? o->join
                                       : layout ? PC_TRAIN_DEFAULT_LAYOUT_JOIN : PC_JOIN_EARLY;
    mo->act = o->act;
    mo->emb_dim = o->emb_dim;
    /* layout prunes to the 1-hop neighbourhood by default (bench/RESULTS.md, issue #4:
       ~4x cheaper epochs, no quality change measured); 0 = the whole graph */
    int hops = o->prune_hops != PC_TRAIN_AUTO ? o->prune_hops
                                              : layout ? PC_TRAIN_DEFAULT_PRUNE_HOPS : 0;
    if (hops > 0) {
        mo->prune_hops = hops;
        mo->collapse_chains = o->collapse_chains ? 1 : 0;
    }
    /* layout encodes all by default (bench/RESULTS.md, issue #4: the best layout variant in
       the ablation, and better than the twin with the same encodings); NONE turns it off */
    mo->encode = o->encode != PC_ENCODE_AUTO ? o->encode
                                             : layout ? PC_TRAIN_DEFAULT_LAYOUT_ENCODE : 0;
    if (o->gst) {
        mo->gst = 1;
        mo->seg_method = seg_method[o->seg_method];
        mo->seg_size = o->seg_size;
    }
    mo->layernorm = o->layernorm;
    mo->dropout = o->dropout;
    if (o->attn_heads > 0) {
        mo->attn_heads = o->attn_heads;
        mo->attn_group = o->configs; /* training groups: the configs of one step */
    }
    return PC_OK;
}
