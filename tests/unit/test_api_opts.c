/*
 * The embedder's side of the public API: option enums (_COUNT, _name and
 * _parse round trips), the loss and encoding parsers, pc_train_opts_default
 * and pc_train_run's checks of its options (struct_size, every field named
 * as pc_train_opts.<field>), before any data is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perfcast/gnn.h"
#include "perfcast/train.h"

static void test_enum_names(void **state) {
    (void)state;
    for (int i = 0; i < PC_POOL_COUNT; i++) {
        pc_pool v = PC_POOL_COUNT;
        assert_int_equal(pc_pool_parse(pc_pool_name((pc_pool)i), &v), PC_OK);
        assert_int_equal(v, i);
    }
    for (int i = 0; i < PC_JOIN_COUNT; i++) {
        pc_join v = PC_JOIN_COUNT;
        assert_int_equal(pc_join_parse(pc_join_name((pc_join)i), &v), PC_OK);
        assert_int_equal(v, i);
    }
    for (int i = 0; i < PC_ACT_COUNT; i++) {
        pc_act v = PC_ACT_COUNT;
        assert_int_equal(pc_act_parse(pc_act_name((pc_act)i), &v), PC_OK);
        assert_int_equal(v, i);
    }
    for (int i = 0; i < PC_SEGMENTS_COUNT; i++) {
        pc_segments v = PC_SEGMENTS_COUNT;
        assert_int_equal(pc_segments_parse(pc_segments_name((pc_segments)i), &v), PC_OK);
        assert_int_equal(v, i);
    }
    for (int i = 0; i < PC_SAMPLING_COUNT; i++) {
        pc_sampling v = PC_SAMPLING_COUNT;
        assert_int_equal(pc_sampling_parse(pc_sampling_name((pc_sampling)i), &v), PC_OK);
        assert_int_equal(v, i);
    }
    /* the names checkpoints and flags use */
    assert_string_equal(pc_pool_name(PC_POOL_MEANMAX), "meanmax");
    assert_string_equal(pc_join_name(PC_JOIN_LATE), "late");
    assert_string_equal(pc_act_name(PC_ACT_LEAKY_RELU), "leaky_relu");
    assert_string_equal(pc_segments_name(PC_SEGMENTS_SPLITS), "splits");
    assert_string_equal(pc_sampling_name(PC_SAMPLING_FAST), "fast");
    /* auto is a value of its own, outside 0 .. _COUNT - 1 */
    pc_join j = PC_JOIN_EARLY;
    assert_string_equal(pc_join_name(PC_JOIN_AUTO), "auto");
    assert_int_equal(pc_join_parse("auto", &j), PC_OK);
    assert_int_equal(j, PC_JOIN_AUTO);
    /* unknown names leave the value alone; names outside the enum are NULL */
    pc_pool p = PC_POOL_SUM;
    assert_int_equal(pc_pool_parse("median", &p), PC_ERR_ARG);
    assert_int_equal(pc_pool_parse(NULL, &p), PC_ERR_ARG);
    assert_int_equal(p, PC_POOL_SUM);
    assert_null(pc_pool_name(PC_POOL_COUNT));
    assert_null(pc_act_name((pc_act)-1));
    assert_null(pc_sampling_name(PC_SAMPLING_COUNT));
}

static void test_encode_parse(void **state) {
    (void)state;
    unsigned b = 99;
    assert_int_equal(pc_encode_parse("pad,dims", &b), PC_OK);
    assert_int_equal(b, PC_ENCODE_PAD | PC_ENCODE_DIMS);
    assert_int_equal(pc_encode_parse("all", &b), PC_OK);
    assert_int_equal(b, PC_ENCODE_ALL);
    assert_int_equal(pc_encode_parse("all,none,layout", &b), PC_OK);
    assert_int_equal(b, PC_ENCODE_LAYOUT);
    assert_int_equal(pc_encode_parse("", &b), PC_OK);
    assert_int_equal(b, PC_ENCODE_NONE);
    assert_int_equal(pc_encode_parse("roofline,all,mismatch", &b), PC_OK);
    assert_int_equal(b, PC_ENCODE_ALL | PC_ENCODE_ROOFLINE | PC_ENCODE_MISMATCH);
    assert_int_equal(pc_encode_parse("steps", &b), PC_OK);
    assert_int_equal(b, PC_ENCODE_STEPS);
    b = 5;
    assert_int_equal(pc_encode_parse("pad,bogus", &b), PC_ERR_ARG);
    assert_int_equal(b, 5);
    for (int i = 0; i < PC_ENCODE_COUNT; i++) {
        unsigned one = 0;
        assert_int_equal(pc_encode_parse(pc_encode_name(1u << i), &one), PC_OK);
        assert_int_equal(one, 1u << i);
    }
    assert_null(pc_encode_name(PC_ENCODE_ALL));
    assert_null(pc_encode_name(PC_ENCODE_AUTO));
}

static void test_loss_parse(void **state) {
    (void)state;
    pc_error err;
    pc_loss_weights w;
    assert_int_equal(pc_loss_weights_parse("listmle:1,mse:0.02", &w, &err), PC_OK);
    assert_true(w.listmle == 1.0f && w.hinge == 0.0f && w.mse == 0.02f);
    assert_int_equal(pc_loss_weights_parse("hinge", &w, &err), PC_OK);
    assert_true(w.listmle == 0.0f && w.hinge == 1.0f && w.mse == 0.0f);
    assert_int_equal(pc_loss_weights_parse("listmle:x", &w, &err), PC_ERR_ARG);
    assert_non_null(strstr(err.msg, "loss term 'listmle': weight 'x'"));
    assert_int_equal(pc_loss_weights_parse("l2", &w, &err), PC_ERR_ARG);
    assert_non_null(strstr(err.msg, "expected listmle, hinge, mse or margin"));
    assert_int_equal(pc_loss_weights_parse("listmle,margin:0.5", &w, &err), PC_OK);
    assert_true(w.listmle == 1.0f && w.hinge == 0.0f && w.mse == 0.0f && w.margin == 0.5f);
    assert_int_equal(pc_loss_weights_parse("margin:-1", &w, &err), PC_ERR_ARG);
    assert_int_equal(pc_loss_weights_parse("mse:0", &w, &err), PC_ERR_ARG);
    assert_non_null(strstr(err.msg, "no positive weight"));
}

static void test_train_defaults(void **state) {
    (void)state;
    pc_train_opts o = pc_train_opts_default();
    assert_int_equal(o.struct_size, sizeof o);
    assert_int_equal(o.configs, PC_TRAIN_AUTO);
    assert_int_equal(o.prune_hops, PC_TRAIN_AUTO);
    assert_int_equal(o.join, PC_JOIN_AUTO);
    assert_int_equal(o.encode, PC_ENCODE_AUTO);
    assert_true(o.loss.listmle == PC_TRAIN_AUTO && o.loss.hinge == PC_TRAIN_AUTO &&
                o.loss.mse == PC_TRAIN_AUTO && o.loss.margin == PC_TRAIN_AUTO);
    assert_int_equal(o.pool, PC_POOL_MEAN);
    assert_int_equal(o.act, PC_ACT_LEAKY_RELU);
    assert_int_equal(o.sampling, PC_SAMPLING_UNIFORM);
    assert_int_equal(o.seg_method, PC_SEGMENTS_CONTIGUOUS);
    assert_int_equal(o.emb_dim, 16);
    assert_int_equal(o.layernorm, 1);
    assert_int_equal(o.seg_size, 1000);
    assert_int_equal(o.gst_train_segs, 1);
    assert_true(o.gst_keep == 0.5f);
    assert_int_equal(o.batch_graphs, 1);
    assert_int_equal(o.epochs, PC_TRAIN_AUTO); /* 20, or the time budget's */
    assert_int_equal(o.patience, PC_TRAIN_AUTO);
    assert_int_equal(o.ensemble, 1);
}

/* pc_train_run's refusal of o, with a message holding `want`. */
static void refused(const pc_train_opts *o, const char *want) {
    pc_error err;
    assert_int_equal(pc_train_run(o, NULL, NULL, NULL, NULL, &err), PC_ERR_ARG);
    if (!strstr(err.msg, want)) fail_msg("'%s' lacks '%s'", err.msg, want);
    assert_null(strstr(err.msg, "--")); /* library messages never name CLI flags */
}

static void test_train_checks(void **state) {
    (void)state;
    pc_train_opts base = pc_train_opts_default();
    base.data_dir = "/nonexistent";
    base.collection = "tile:xla";
    base.out_path = "/nonexistent/m.st";
    pc_train_opts o = base;
    o.struct_size = sizeof o - 8;
    refused(&o, "pc_train_opts.struct_size");
    o = base;
    o.data_dir = NULL;
    refused(&o, "pc_train_opts.data_dir");
    o = base;
    o.epochs = 0;
    refused(&o, "pc_train_opts.epochs must be >= 1 or PC_TRAIN_AUTO");
    o = base;
    o.ensemble = 0;
    refused(&o, "pc_train_opts.ensemble must be in 1..64");
    o = base;
    o.ensemble = -3;
    refused(&o, "pc_train_opts.ensemble must be in 1..64");
    o = base;
    o.ensemble = 65;
    refused(&o, "pc_train_opts.ensemble must be in 1..64");
    o = base;
    o.ensemble = 2;
    o.resume = 1;
    refused(&o, "pc_train_opts.resume does not apply to ensembles");
    o = base;
    o.configs = 1;
    refused(&o, "pc_train_opts.configs");
    o = base;
    o.pool = PC_POOL_COUNT;
    refused(&o, "pc_train_opts.pool");
    o = base;
    o.join = PC_JOIN_COUNT;
    refused(&o, "pc_train_opts.join");
    o = base;
    o.encode = 128;
    refused(&o, "pc_train_opts.encode");
    o = base;
    o.gst_keep = 2;
    refused(&o, "pc_train_opts.gst_keep");
    o = base;
    o.loss.listmle = 1; /* the others still AUTO */
    refused(&o, "pc_train_opts.loss");
    o = base;
    o.loss.margin = 1; /* the others still AUTO */
    refused(&o, "pc_train_opts.loss");
    o = base;
    o.loss.listmle = o.loss.hinge = o.loss.mse = 0; /* margin AUTO counts as 0: no weight */
    refused(&o, "pc_train_opts.loss weights must be >= 0 with a positive sum");
    o = base;
    o.gst = 1; /* tile */
    refused(&o, "pc_train_opts.gst applies to layout collections");
    o = base;
    o.prune_hops = 1;
    refused(&o, "pc_train_opts.prune_hops applies to layout collections");
    o = base;
    o.collapse_chains = 1; /* tile: never pruned */
    refused(&o, "pc_train_opts.collapse_chains needs pruning");
    o = base;
    o.collection = "layout:xla:random";
    o.prune_hops = 0;
    o.collapse_chains = 1;
    refused(&o, "pc_train_opts.collapse_chains needs pruning");
    o = base;
    o.gst_finetune = 1;
    refused(&o, "pc_train_opts.gst_finetune needs pc_train_opts.gst");
    o = base;
    o.collection = "layout:xla:random";
    o.attn_heads = 3; /* 2 x hidden 64 */
    refused(&o, "pc_train_opts.attn_heads (3) must divide the width of what the attention "
                "mixes, 128 here");
    o = base;
    o.epochs = -2;
    refused(&o, "pc_train_opts.epochs must be >= 1 or PC_TRAIN_AUTO");
    o = base;
    o.patience = 0;
    refused(&o, "pc_train_opts.patience must be >= 1 or PC_TRAIN_AUTO");
    /* a result struct of another build */
    pc_train_result r;
    r.struct_size = 3;
    pc_error err;
    assert_int_equal(pc_train_run(&base, NULL, NULL, NULL, &r, &err), PC_ERR_ARG);
    assert_non_null(strstr(err.msg, "pc_train_result.struct_size"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enum_names),   cmocka_unit_test(test_encode_parse),
        cmocka_unit_test(test_loss_parse),   cmocka_unit_test(test_train_defaults),
        cmocka_unit_test(test_train_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
