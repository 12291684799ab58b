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
    o.epochs = PC_TRAIN_AUTO;
    o.patience = PC_TRAIN_AUTO;
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
    o.loss.listmle = o.loss.hinge = o.loss.mse = o.loss.margin = PC_TRAIN_AUTO;
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
    pc_loss_weights w = {0, 0, 0, 0};
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
        else if (!strcmp(t, "margin")) w.margin = (float)v;
        else
            return pc_fail(err, PC_ERR_ARG, "loss term '%s': expected listmle, hinge, mse or "
                           "margin", t);
    }
    if (!(w.listmle + w.hinge + w.mse + w.margin > 0))
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
    /* margin came later: left AUTO beside three set weights, it weighs 0 */
    float margin = w->margin == PC_TRAIN_AUTO && autos == 0 ? 0.0f : w->margin;
    autos += margin == PC_TRAIN_AUTO;
    float sum = w->listmle + w->hinge + w->mse + margin;
    if (autos == 4) {
        lc->w_listmle = kind == PC_KIND_TILE ? 1.0f : 0.0f;
        lc->w_hinge = kind == PC_KIND_TILE ? 0.0f : 1.0f;
        lc->w_mse = kind == PC_KIND_TILE ? 0.02f : 0.0f;
    } else if (autos > 0 || !(w->listmle >= 0 && w->hinge >= 0 && w->mse >= 0 && margin >= 0) ||
               !isfinite(sum) || !(sum > 0)) {
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.loss weights must be >= 0 with a "
                       "positive sum, or all PC_TRAIN_AUTO (got listmle %g, hinge %g, mse %g, "
                       "margin %g)", (double)w->listmle, (double)w->hinge, (double)w->mse,
                       (double)margin);
    } else {
        lc->w_listmle = w->listmle;
        lc->w_hinge = w->hinge;
        lc->w_mse = w->mse;
        lc->w_margin = margin;
    }
    int n = snprintf(desc, dn, "listmle(T=%g):%g,hinge(margin=%g,T=%g):%g,mse:%g",
                     (double)lc->listmle_temperature, (double)lc->w_listmle,
                     (double)lc->hinge_margin, (double)lc->hinge_temperature,
                     (double)lc->w_hinge, (double)lc->w_mse);
    /* only a weighted margin term is described: the checkpoints of the other losses keep
       their bytes */
    if (lc->w_margin > 0 && n > 0 && (size_t)n < dn)
        snprintf(desc + n, dn - (size_t)n, ",margin(margin=%g,T=%g,window=%d):%g",
                 (double)lc->margin_value, (double)lc->margin_temperature, lc->margin_window,
                 (double)lc->w_margin);
    return PC_OK;
}

/*
 * The run's length. Without a time budget (or with epochs set) AUTO is today's 20 epochs and
 * patience 5, written back into o so the checkpoint records the same options as before.
 * With a budget and epochs AUTO the budget sets the length: epochs are unbounded and an AUTO
 * patience is re-estimated after each epoch (train_loop.c), both recorded as AUTO (-1).
 */
static void resolve_length(trainer *t) {
    pc_train_opts *o = &t->o;
    t->budget_len = o->time_budget > 0 && o->epochs == PC_TRAIN_AUTO;
    if (!t->budget_len && o->epochs == PC_TRAIN_AUTO) o->epochs = PC_TRAIN_DEFAULT_EPOCHS;
    if (!t->budget_len && o->patience == PC_TRAIN_AUTO) o->patience = PC_TRAIN_DEFAULT_PATIENCE;
    t->epochs_max = t->budget_len ? PC_TRAIN_MAX_EPOCHS : o->epochs;
    t->patience = o->patience != PC_TRAIN_AUTO ? o->patience : PC_TRAIN_DEFAULT_PATIENCE;
}

/* The first pc_train_opts field out of its range, with what it must be; NULL if none. */
static const char *bad_field(const pc_train_opts *o, const char **must) {
    const struct {
        int bad;
        const char *field, *must;
    } c[] = {
        {o->epochs != PC_TRAIN_AUTO && o->epochs < 1, "epochs", ">= 1 or PC_TRAIN_AUTO"},
        {o->patience != PC_TRAIN_AUTO && o->patience < 1, "patience", ">= 1 or PC_TRAIN_AUTO"},
        {o->ensemble < 1 || o->ensemble > PC_CKPT_MAX_MEMBERS, "ensemble", "in 1..64"},
        {o->threads < 0, "threads", ">= 0"},
        {o->configs != PC_TRAIN_AUTO && o->configs < 2, "configs", ">= 2 or PC_TRAIN_AUTO"},
        {!(o->time_budget >= 0), "time_budget", ">= 0"},
        {!(o->lr > 0), "lr", "> 0"},
        {!(o->weight_decay >= 0), "weight_decay", ">= 0"},
        {!(o->clip > 0), "clip", "> 0"},
        {o->hidden < 1 || o->hidden > PC_GNN_MAX_HIDDEN, "hidden", "in 1..8192"},
        {o->layers < 0 || o->layers > PC_GNN_MAX_LAYERS, "layers", "in 0..256"},
        {o->pool < 0 || o->pool >= PC_POOL_COUNT, "pool", "a pc_pool"},
        {o->join < PC_JOIN_AUTO || o->join >= PC_JOIN_COUNT, "join", "a pc_join"},
        {o->act < 0 || o->act >= PC_ACT_COUNT, "act", "a pc_act"},
        {o->emb_dim < 1 || o->emb_dim > PC_GNN_MAX_EMB, "emb_dim", "in 1..1024"},
        {o->layernorm != 0 && o->layernorm != 1, "layernorm", "0 or 1"},
        {!(o->dropout >= 0 && o->dropout < 1), "dropout", "in [0, 1)"},
        {o->attn_heads < 0, "attn_heads", ">= 0"},
        {o->prune_hops != PC_TRAIN_AUTO && (o->prune_hops < 0 || o->prune_hops > 64),
         "prune_hops", "in 0..64 or PC_TRAIN_AUTO"},
        {o->encode != PC_ENCODE_AUTO && (o->encode & ~((1u << PC_ENCODE_COUNT) - 1)), "encode",
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
    /* options that would be silently ignored in this combination */
    int hops = o->prune_hops;
    if (hops == PC_TRAIN_AUTO) hops = t->kind == PC_KIND_LAYOUT ? PC_TRAIN_DEFAULT_PRUNE_HOPS : 0;
    if (o->collapse_chains && hops < 1)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.collapse_chains needs pruning "
                       "(pc_train_opts.prune_hops >= 1, layout collections)");
    if (o->gst_finetune > 0 && !o->gst)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.gst_finetune needs "
                       "pc_train_opts.gst (it fine-tunes GST's head)");
    if (o->configs == PC_TRAIN_AUTO) o->configs = t->kind == PC_KIND_TILE ? 32 : 16;
    resolve_length(t);
    if (o->attn_heads > 0 && !o->resume) { /* before loading when the width is known already */
        pc_gnn_opts mo;
        pc_status st = pc_tr_model_opts(t, &mo, err);
        if (!st) st = pc_tr_check_attention(&mo, -1, err);
        if (st) return st;
    }
    t->fast = o->sampling == PC_SAMPLING_FAST;
    if (snprintf(t->state_path, sizeof t->state_path, "%s.state", o->out_path) >=
        (int)sizeof t->state_path)
        return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.out_path is too long");
    return loss_cfg(&o->loss, t->kind, &t->lc, t->loss_desc, sizeof t->loss_desc, err);
}

pc_status pc_tr_check_attention(const pc_gnn_opts *mo, int cfg_dim, pc_error *err) {
    int late_tile = mo->kind == PC_KIND_TILE && mo->join == PC_JOIN_LATE;
    if (mo->attn_heads <= 0 || (late_tile && cfg_dim < 0)) return PC_OK;
    pc_gnn shape; /* the model's readout width from these options alone */
    memset(&shape, 0, sizeof shape);
    shape.opts = *mo;
    shape.cfg_dim = cfg_dim > 0 ? cfg_dim : 0;
    int R = pc_gnn_readout_width(&shape);
    int P = mo->pool == PC_POOL_MEANMAX ? 2 * mo->hidden : mo->hidden;
    if (R % mo->attn_heads == 0) return PC_OK;
    char what[160], fits[64] = "";
    if (mo->kind == PC_KIND_LAYOUT)
        snprintf(what, sizeof what, "layout: the pooled graph and configurable nodes, 2 x %d", P);
    else if (late_tile)
        snprintf(what, sizeof what, "tile with join late: the pooled graph, %d, and the %d "
                 "config features left after preprocessing; join early makes it %d", P,
                 cfg_dim, P);
    else
        snprintf(what, sizeof what, "the pooled graph, %d", P);
    size_t n = 0;
    for (int h = 1; h <= 16 && n < sizeof fits; h++)
        if (R % h == 0) {
            int k = snprintf(fits + n, sizeof fits - n, "%s%d", n ? ", " : "", h);
            n += k > 0 ? (size_t)k : 0;
        }
    return pc_fail(err, PC_ERR_ARG, "train: pc_train_opts.attn_heads (%d) must divide the width "
                   "of what the attention mixes, %d here (%s); heads up to 16 that fit: %s",
                   mo->attn_heads, R, what, fits);
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
                 : layout ? PC_TRAIN_DEFAULT_LAYOUT_ENCODE : PC_TRAIN_DEFAULT_TILE_ENCODE;
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
