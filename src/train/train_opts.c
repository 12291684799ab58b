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
    o.epochs = 20;
    o.patience = 5;
    o.seed = 1;
    o.lr = 1e-3f;
    o.weight_decay = 1e-4f;
    o.clip = 1.0f;
    o.hidden = 64;
    o.layers = 3;
    o.layernorm = -1;
    o.gst_keep = -1;
    o.prune_hops = -1;
    return o;
}

static int name_in(const char *s, const char *const *names, int n, int dflt) {
    if (!s) return dflt;
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Parses "listmle:1,mse:0.02" into weights; NULL keeps the collection default. */
static pc_status parse_loss(const char *spec, pc_kind kind, pc_loss_cfg *lc, char *desc,
                            size_t dn, pc_error *err) {
    *lc = pc_loss_cfg_default();
    lc->hinge_margin = 0.1f;
    lc->hinge_temperature = 1.0f;
    if (kind == PC_KIND_LAYOUT) lc->listmle_temperature = 1.0f;
    if (!spec) spec = kind == PC_KIND_TILE ? "listmle:1,mse:0.02" : "hinge:1";
    lc->w_listmle = lc->w_hinge = lc->w_mse = 0;
    char buf[256];
    if (strlen(spec) >= sizeof buf) return pc_fail(err, PC_ERR_ARG, "train: --loss is too long");
    strcpy(buf, spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':'), *end = NULL;
        double w = 1.0;
        if (colon) {
            *colon = 0;
            w = strtod(colon + 1, &end);
            if (end == colon + 1 || *end || !isfinite(w) || w < 0)
                return pc_fail(err, PC_ERR_ARG, "train: --loss term '%s': weight '%s' is not a "
                               "number >= 0", t, colon + 1);
        }
        if (!strcmp(t, "listmle")) lc->w_listmle = (float)w;
        else if (!strcmp(t, "hinge")) lc->w_hinge = (float)w;
        else if (!strcmp(t, "mse")) lc->w_mse = (float)w;
        else
            return pc_fail(err, PC_ERR_ARG, "train: --loss term '%s': expected listmle, hinge "
                           "or mse", t);
    }
    if (!(lc->w_listmle + lc->w_hinge + lc->w_mse > 0))
        return pc_fail(err, PC_ERR_ARG, "train: --loss '%s' has no positive weight", spec);
    snprintf(desc, dn, "listmle(T=%g):%g,hinge(margin=%g,T=%g):%g,mse:%g",
             (double)lc->listmle_temperature, (double)lc->w_listmle, (double)lc->hinge_margin,
             (double)lc->hinge_temperature, (double)lc->w_hinge, (double)lc->w_mse);
    return PC_OK;
}

pc_status pc_tr_check_opts(trainer *t, pc_error *err) {
    pc_train_opts *o = &t->o;
    if (!o->data_dir || !o->collection || !o->out_path)
        return pc_fail(err, PC_ERR_ARG, "train: data dir, collection and output are required");
    if ((t->coll = pc_collection_find(o->collection)) < 0)
        return pc_fail(err, PC_ERR_ARG, "train: unknown collection '%s'", o->collection);
    t->kind = pc_collection_kind(t->coll);
    if (o->gst && (o->seg_size < 0 || o->gst_train_segs < 0 || o->gst_finetune < 0 ||
                   o->gst_keep > 1 || (o->gst_keep < 0 && o->gst_keep != -1)))
        return pc_fail(err, PC_ERR_ARG, "train: bad GST option value");
    if (o->batch_graphs < 0) return pc_fail(err, PC_ERR_ARG, "train: --batch-graphs must be >= 1");
    if (o->epochs < 1 || o->patience < 1 || o->hidden < 1 || o->layers < 0 || !(o->lr > 0) ||
        o->configs < 0 || o->time_budget < 0 || !(o->clip > 0) || o->weight_decay < 0 ||
        o->emb_dim < 0 || !(o->dropout >= 0 && o->dropout < 1) || o->stop_after_steps < 0)
        return pc_fail(err, PC_ERR_ARG, "train: bad option value");
    if (o->configs == 0) o->configs = t->kind == PC_KIND_TILE ? 32 : 16;
    if (o->configs < 2) return pc_fail(err, PC_ERR_ARG, "train: --configs must be at least 2");
    static const char *const samp[] = {"uniform", "fast"};
    int s = name_in(o->sampling, samp, 2, 0);
    if (s < 0)
        return pc_fail(err, PC_ERR_ARG, "train: --sampling expects uniform or fast, got '%s'",
                       o->sampling);
    t->fast = s == 1;
    if (snprintf(t->state_path, sizeof t->state_path, "%s.state", o->out_path) >=
        (int)sizeof t->state_path)
        return pc_fail(err, PC_ERR_ARG, "train: output path is too long");
    return parse_loss(o->loss, t->kind, &t->lc, t->loss_desc, sizeof t->loss_desc, err);
}

/* Parses --encode ("pad,dims,layout", "all", "none") into the model's encoding bits. */
static pc_status parse_encode(const char *enc, unsigned *bits, pc_error *err) {
    pc_encode_opts eo = pc_encode_opts_none();
    char buf[128];
    snprintf(buf, sizeof buf, "%s", enc);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (!strcmp(w, "all")) eo = pc_encode_opts_all();
        else if (!strcmp(w, "none")) eo = pc_encode_opts_none();
        else if (!strcmp(w, "pad")) eo.pad_minus1 = 1;
        else if (!strcmp(w, "dims")) eo.dim_encodings = 1;
        else if (!strcmp(w, "layout")) eo.layout_categories = 1;
        else return pc_fail(err, PC_ERR_ARG, "train: --encode expects a comma list of pad, "
                            "dims, layout, all, none; got '%s'", w);
    }
    *bits = pc_encode_opts_bits(&eo);
    return PC_OK;
}

/* --gst and its segmentation into mo (layout collections only). */
static pc_status gst_model_opts(const trainer *t, pc_gnn_opts *mo, pc_error *err) {
    const pc_train_opts *o = &t->o;
    int sm = o->seg_method ? pc_gst_method_find(o->seg_method) : PC_SEG_CONTIGUOUS;
    if (sm < 0) return pc_fail(err, PC_ERR_ARG, "train: --segments expects contiguous, "
                               "splits or metis, got '%s'", o->seg_method);
    if (t->kind != PC_KIND_LAYOUT)
        return pc_fail(err, PC_ERR_ARG, "train: --gst applies to layout collections (tile "
                       "graphs are small)");
    mo->gst = 1;
    mo->seg_method = sm;
    mo->seg_size = o->seg_size > 0 ? o->seg_size : 1000;
    return PC_OK;
}

pc_status pc_tr_model_opts(const trainer *t, pc_gnn_opts *mo, pc_error *err) {
    static const char *const pools[] = {"mean", "max", "sum", "meanmax"};
    static const char *const joins[] = {"early", "late"};
    static const char *const acts[] = {"leaky_relu", "relu", "gelu"};
    const pc_train_opts *o = &t->o;
    *mo = pc_gnn_opts_default(t->kind);
    if (t->kind == PC_KIND_LAYOUT) mo->join = PC_TRAIN_DEFAULT_LAYOUT_JOIN;
    int pool = name_in(o->pool, pools, 4, (int)mo->pool);
    int join = name_in(o->join, joins, 2, (int)mo->join);
    int act = name_in(o->act, acts, 3, (int)mo->act);
    if (pool < 0) return pc_fail(err, PC_ERR_ARG, "train: --pool expects mean, max, sum or "
                                 "meanmax, got '%s'", o->pool);
    if (join < 0) return pc_fail(err, PC_ERR_ARG, "train: --join expects early or late, got "
                                 "'%s'", o->join);
    if (act < 0) return pc_fail(err, PC_ERR_ARG, "train: --act expects leaky_relu, relu or "
                                "gelu, got '%s'", o->act);
    mo->hidden = o->hidden;
    mo->layers = o->layers;
    mo->pool = (pc_pool_kind)pool;
    mo->join = (pc_join)join;
    mo->act = (pc_act)act;
    if (o->emb_dim > 0) mo->emb_dim = o->emb_dim;
    /* layout prunes to the 1-hop neighbourhood by default (bench/RESULTS.md, issue #4:
       ~4x cheaper epochs, no quality change measured); 0 = the whole graph */
    int hops = o->prune_hops >= 0 ? o->prune_hops
                                  : t->kind == PC_KIND_LAYOUT ? PC_TRAIN_DEFAULT_PRUNE_HOPS : 0;
    if (hops > 0) {
        if (t->kind != PC_KIND_LAYOUT)
            return pc_fail(err, PC_ERR_ARG, "train: --prune-hops applies to layout collections "
                           "(tile graphs have no configurable nodes)");
        mo->prune_hops = hops;
        mo->collapse_chains = o->collapse_chains ? 1 : 0;
    }
    /* layout encodes all by default (bench/RESULTS.md, issue #4: the best layout variant in
       the ablation, and better than the twin with the same encodings); "none" turns it off */
    const char *enc = o->encode ? o->encode
                                : t->kind == PC_KIND_LAYOUT ? PC_TRAIN_DEFAULT_LAYOUT_ENCODE : NULL;
    if (enc) {
        pc_status st = parse_encode(enc, &mo->encode, err);
        if (st) return st;
    }
    if (o->gst) {
        pc_status st = gst_model_opts(t, mo, err);
        if (st) return st;
    }
    if (o->layernorm >= 0) mo->layernorm = o->layernorm ? 1 : 0;
    mo->dropout = o->dropout;
    if (o->attn_heads > 0) {
        mo->attn_heads = o->attn_heads;
        mo->attn_group = o->configs; /* training groups: the configs of one step */
    }
    return PC_OK;
}
