/*
 * Whole programs as HLO modules: ResNets, MobileNets, MLPs, vision
 * transformers (the "xla" mix) and BERT/GPT/ALBERT-like language models (the
 * "nlp" mix), written the way XLA lowers them: weights as parameters, scalar
 * constants broadcast at each use, bias adds and activations as separate
 * elementwise ops, softmax and layer norm from reduce/exp/divide/rsqrt in
 * f32, attention heads via reshape + transpose. Some stages are "scanned":
 * one block in a while body whose weights are stacked and sliced per
 * iteration, which gives node_splits real computations.
 */
#include <stdio.h>
#include <string.h>

#include "synth/synth_internal.h"

#define MAX_WEIGHTS 48
#define MAX_LOOPS 12 /* real programs hold a handful of while loops */
#define MAX_TRIPS 24

typedef struct builder {
    sy_module *m;
    sy_rng *r;
    int32_t entry, add_red, max_red;
    uint8_t act;        /* activation element type: bf16 or f32 */
    int32_t next_param; /* next entry parameter number */
    int nloops;
    /* set while a block is built inside a while body */
    int in_scan;
    int64_t trips;
    int32_t body_param, counter, zero;
    int nweights;
    sy_shape wshape[MAX_WEIGHTS];
    int32_t wgte[MAX_WEIGHTS];
} builder;

typedef int32_t (*block_fn)(builder *b, int32_t x, const void *arg);

static int64_t module_nodes(const sy_module *m) {
    int64_t n = 0;
    for (int32_t c = 0; c < m->ncomp; c++) n += m->comps[c].n;
    return n;
}

static sy_shape shp(builder *b, int32_t x) { return sy_shape_of(b->m, x); }

/* A scalar reducer computation (p0, p1, op) named without cluster/while/cond. */
static int32_t make_reducer(sy_module *m, const char *name, uint8_t op) {
    int32_t c = sy_comp_begin(m, name, 0.0); /* its cost is the reduce's */
    int32_t p0 = sy_param(m, sy_scalar(SY_F32), 0);
    int32_t p1 = sy_param(m, sy_scalar(SY_F32), 1);
    sy_comp_set_root(m, sy_binary(m, op, p0, p1));
    return c;
}

/* ---- weights -------------------------------------------------------------- */

/*
 * A weight of shape s: an entry parameter, or inside a scanned block a slice
 * of a stacked [trips, s...] loop-state array picked by the loop counter and
 * reshaped back to s (that reshape is a layout candidate, as in real scans).
 */
static int32_t weight(builder *b, sy_shape s) {
    sy_module *m = b->m;
    if (!b->in_scan) return sy_param(m, s, b->next_param++);
    if (b->nweights >= MAX_WEIGHTS || s.rank >= SY_MAX_RANK) return sy_const(m, s);
    sy_shape st = s;
    st.rank = (uint8_t)(s.rank + 1);
    st.d[0] = b->trips;
    for (int i = 0; i < s.rank; i++) st.d[i + 1] = s.d[i];
    int32_t g = sy_gte(m, b->body_param, st, 2 + b->nweights);
    int32_t idx[SY_MAX_RANK];
    int64_t sizes[SY_MAX_RANK];
    idx[0] = b->counter;
    sizes[0] = 1;
    for (int i = 0; i < s.rank; i++) idx[i + 1] = b->zero, sizes[i + 1] = s.d[i];
    int32_t ds = sy_dynamic_slice(m, g, idx, sizes);
    b->wshape[b->nweights] = st;
    b->wgte[b->nweights++] = g;
    return sy_reshape(m, ds, s);
}

static int32_t weight1(builder *b, uint8_t et, int64_t n) { return weight(b, sy_shp(et, 1, &n)); }

/* ---- scans ------------------------------------------------------------------ */

/*
 * Runs `fn` `trips` times as a while loop: cond (counter < trips), body
 * (fn on the carried activation, counter + 1, weights passed through).
 */
static int32_t scan(builder *b, int32_t x, int64_t trips, block_fn fn, const void *arg) {
    sy_module *m = b->m;
    sy_shape xs = shp(b, x);
    char name[48];
    int loop = b->nloops++;
    snprintf(name, sizeof name, "while_cond.%d", loop);
    int32_t cond = sy_comp_begin(m, name, (double)(trips + 1));
    int32_t cp = sy_tuple_param(m, 2, 0);
    int32_t cc = sy_gte(m, cp, sy_scalar(SY_S32), 0);
    int32_t lim = sy_const(m, sy_scalar(SY_S32));
    sy_comp_set_root(m, sy_compare(m, cc, lim));

    snprintf(name, sizeof name, "while_body.%d", loop);
    int32_t body = sy_comp_begin(m, name, (double)trips);
    b->in_scan = 1;
    b->trips = trips;
    b->nweights = 0;
    b->body_param = sy_tuple_param(m, 2, 0);
    b->counter = sy_gte(m, b->body_param, sy_scalar(SY_S32), 0);
    b->zero = sy_const(m, sy_scalar(SY_S32));
    int32_t xi = sy_gte(m, b->body_param, xs, 1);
    int32_t y = fn(b, xi, arg);
    int32_t next = sy_binary(m, PC_HLO_ADD, b->counter, sy_const(m, sy_scalar(SY_S32)));
    int32_t ops[2 + MAX_WEIGHTS];
    ops[0] = next;
    ops[1] = y;
    for (int i = 0; i < b->nweights; i++) ops[2 + i] = b->wgte[i];
    int nstate = 2 + b->nweights;
    sy_comp_set_root(m, sy_tuple(m, nstate, ops));
    sy_set_ntuple(m, b->body_param, nstate);
    sy_comp_switch(m, cond);
    sy_set_ntuple(m, cp, nstate);
    b->in_scan = 0;

    sy_comp_switch(m, b->entry);
    ops[0] = sy_const(m, sy_scalar(SY_S32));
    ops[1] = x;
    for (int i = 0; i < b->nweights; i++) ops[2 + i] = sy_param(m, b->wshape[i], b->next_param++);
    int32_t init = sy_tuple(m, nstate, ops);
    int32_t w = sy_while(m, init, cond, body);
    return sy_gte(m, w, xs, 1);
}

/* ---- layers ----------------------------------------------------------------- */

static int8_t last_dim(builder *b, int32_t x) { return (int8_t)(shp(b, x).rank - 1); }

/* x + broadcast(bias) along the last dim. */
static int32_t bias_add(builder *b, int32_t x) {
    sy_shape xs = shp(b, x);
    int8_t d = last_dim(b, x);
    int32_t w = weight1(b, xs.etype, xs.d[d]);
    return sy_binary(b->m, PC_HLO_ADD, x, sy_bcast(b->m, w, xs, &d));
}

static int32_t relu(builder *b, int32_t x) {
    return sy_binary(b->m, PC_HLO_MAXIMUM, x, sy_splat(b->m, x));
}

static int32_t relu6(builder *b, int32_t x) {
    return sy_clamp(b->m, sy_splat(b->m, x), x, sy_splat(b->m, x));
}

/* tanh-approximated GELU: 0.5 x (1 + tanh(c (x + 0.044715 x^3))). */
static int32_t gelu(builder *b, int32_t x) {
    sy_module *m = b->m;
    int32_t x3 = sy_binary(m, PC_HLO_MULTIPLY, sy_binary(m, PC_HLO_MULTIPLY, x, x), x);
    int32_t in = sy_binary(m, PC_HLO_ADD, x, sy_binary(m, PC_HLO_MULTIPLY, x3, sy_splat(m, x)));
    int32_t t = sy_unary(m, PC_HLO_TANH, sy_binary(m, PC_HLO_MULTIPLY, in, sy_splat(m, x)));
    int32_t one = sy_binary(m, PC_HLO_ADD, t, sy_splat(m, x));
    return sy_binary(m, PC_HLO_MULTIPLY, sy_binary(m, PC_HLO_MULTIPLY, x, sy_splat(m, x)), one);
}

static int32_t activation(builder *b, int32_t x, int kind) {
    switch (kind) {
    case 0: return relu(b, x);
    case 1: return gelu(b, x);
    default: return sy_unary(b->m, PC_HLO_TANH, x);
    }
}

/* x @ W over the last dim of x. */
static int32_t dense(builder *b, int32_t x, int64_t n) {
    sy_shape s = shp(b, x);
    int32_t w = weight(b, sy_shp2(s.etype, s.d[s.rank - 1], n));
    return sy_dot(b->m, x, w, 0, s.rank - 1, 0);
}

static int32_t proj(builder *b, int32_t x, int64_t n) { return bias_add(b, dense(b, x, n)); }

/* Broadcast y (x's shape with the last dim dropped) back to x's shape. */
static int32_t bcast_rows(builder *b, int32_t y, int32_t like) {
    sy_shape s = shp(b, like);
    s.etype = shp(b, y).etype;
    int8_t dims[SY_MAX_RANK];
    for (int i = 0; i + 1 < s.rank; i++) dims[i] = (int8_t)i;
    return sy_bcast(b->m, y, s, dims);
}

static int32_t reduce_last(builder *b, int32_t x, int32_t reducer) {
    int8_t d = last_dim(b, x);
    return sy_reduce(b->m, x, sy_const(b->m, sy_scalar(SY_F32)), 1, &d, reducer);
}

/* Layer norm over the last dim, computed in f32. */
static int32_t layernorm(builder *b, int32_t x) {
    sy_module *m = b->m;
    uint8_t et = shp(b, x).etype;
    int32_t xf = sy_convert(m, x, SY_F32);
    int32_t mean = reduce_last(b, xf, b->add_red);
    mean = sy_binary(m, PC_HLO_MULTIPLY, mean, sy_splat(m, mean));
    int32_t d = sy_binary(m, PC_HLO_SUBTRACT, xf, bcast_rows(b, mean, xf));
    int32_t var = reduce_last(b, sy_binary(m, PC_HLO_MULTIPLY, d, d), b->add_red);
    var = sy_binary(m, PC_HLO_MULTIPLY, var, sy_splat(m, var));
    int32_t rs = sy_unary(m, PC_HLO_RSQRT, sy_binary(m, PC_HLO_ADD, var, sy_splat(m, var)));
    int32_t y = sy_binary(m, PC_HLO_MULTIPLY, d, bcast_rows(b, rs, d));
    int8_t ld = last_dim(b, y);
    sy_shape ys = shp(b, y);
    y = sy_binary(m, PC_HLO_MULTIPLY, y, sy_bcast(m, weight1(b, SY_F32, ys.d[ld]), ys, &ld));
    y = sy_binary(m, PC_HLO_ADD, y, sy_bcast(m, weight1(b, SY_F32, ys.d[ld]), ys, &ld));
    return sy_convert(m, y, et);
}

/* Softmax over the last dim, computed in f32. */
static int32_t softmax(builder *b, int32_t x) {
    sy_module *m = b->m;
    uint8_t et = shp(b, x).etype;
    int32_t xf = sy_convert(m, x, SY_F32);
    int32_t mx = reduce_last(b, xf, b->max_red);
    int32_t e =
        sy_unary(m, PC_HLO_EXPONENTIAL, sy_binary(m, PC_HLO_SUBTRACT, xf, bcast_rows(b, mx, xf)));
    int32_t sum = reduce_last(b, e, b->add_red);
    int32_t p = sy_binary(m, PC_HLO_DIVIDE, e, bcast_rows(b, sum, e));
    return sy_convert(m, p, et);
}

/* Inference batch norm folded to scale and offset per channel. */
static int32_t batchnorm(builder *b, int32_t x) {
    sy_module *m = b->m;
    sy_shape s = shp(b, x);
    int8_t c = (int8_t)(s.rank - 1);
    int32_t y = sy_binary(m, PC_HLO_MULTIPLY, x, sy_bcast(m, weight1(b, s.etype, s.d[c]), s, &c));
    return sy_binary(m, PC_HLO_ADD, y, sy_bcast(m, weight1(b, s.etype, s.d[c]), s, &c));
}

static int32_t conv_bn(builder *b, int32_t x, int64_t k, int64_t cout, int64_t stride) {
    sy_shape s = shp(b, x);
    int32_t w = weight(b, sy_shp4(s.etype, k, k, s.d[3], cout));
    return batchnorm(b, sy_conv(b->m, x, w, stride, 1));
}

/* Global average pool over H, W in f32: [B,H,W,C] -> [B,C]. */
static int32_t global_pool(builder *b, int32_t x) {
    sy_module *m = b->m;
    uint8_t et = shp(b, x).etype;
    int8_t red[2] = {1, 2};
    int32_t s =
        sy_reduce(m, sy_convert(m, x, SY_F32), sy_const(m, sy_scalar(SY_F32)), 2, red, b->add_red);
    return sy_convert(m, sy_binary(m, PC_HLO_MULTIPLY, s, sy_splat(m, s)), et);
}

/* Classifier head: logits, softmax and a cross-entropy-like loss. */
static int32_t classifier(builder *b, int32_t x, int64_t classes) {
    sy_module *m = b->m;
    int32_t logits = proj(b, x, classes);
    int32_t p = softmax(b, logits);
    sy_shape ls = shp(b, p);
    int32_t labels = sy_param(m, ls, b->next_param++);
    int32_t ce = sy_binary(m, PC_HLO_MULTIPLY, sy_unary(m, PC_HLO_LOG, p), labels);
    int8_t red[2] = {0, 1};
    int32_t loss =
        sy_reduce(m, sy_convert(m, ce, SY_F32), sy_const(m, sy_scalar(SY_F32)), 2, red, b->add_red);
    int32_t outs[2] = {sy_unary(m, PC_HLO_NEGATE, loss), logits};
    return sy_tuple(m, 2, outs);
}

/* ---- convnets ----------------------------------------------------------------- */

typedef struct res_arg {
    int64_t cout, stride;
    int bottleneck;
} res_arg;

static int32_t res_block(builder *b, int32_t x, const void *argp) {
    const res_arg *a = argp;
    int64_t cin = shp(b, x).d[3];
    int32_t y;
    if (a->bottleneck) {
        y = relu(b, conv_bn(b, x, 1, a->cout / 4, 1));
        y = relu(b, conv_bn(b, y, 3, a->cout / 4, a->stride));
        y = conv_bn(b, y, 1, a->cout, 1);
    } else {
        y = relu(b, conv_bn(b, x, 3, a->cout, a->stride));
        y = conv_bn(b, y, 3, a->cout, 1);
    }
    int32_t sc = (a->stride != 1 || cin != a->cout) ? conv_bn(b, x, 1, a->cout, a->stride) : x;
    return relu(b, sy_binary(b->m, PC_HLO_ADD, y, sc));
}

typedef struct dw_arg {
    int64_t cout, stride;
} dw_arg;

/* Depthwise-separable block: 3x3 depthwise, BN, ReLU6, 1x1 pointwise, BN, ReLU6. */
static int32_t dw_block(builder *b, int32_t x, const void *argp) {
    const dw_arg *a = argp;
    sy_shape s = shp(b, x);
    int64_t c = s.d[3];
    int32_t w = weight(b, sy_shp4(s.etype, 3, 3, 1, c));
    int32_t y = relu6(b, batchnorm(b, sy_conv(b->m, x, w, a->stride, c)));
    return relu6(b, conv_bn(b, y, 1, a->cout, 1));
}

/* Adds `count` blocks; repeats after the first may run as a scan of at most
   MAX_TRIPS iterations, the remainder unrolled. */
static int32_t add_blocks(builder *b, int32_t x, int64_t count, block_fn fn, const void *first,
                          const void *rest) {
    if (count <= 0) return x;
    x = fn(b, x, first);
    int64_t left = count - 1;
    if (left >= 2 && b->nloops < MAX_LOOPS && sy_chance(b->r, 0.35)) {
        int64_t trips = left < MAX_TRIPS ? left : MAX_TRIPS;
        x = scan(b, x, trips, fn, rest);
        left -= trips;
    }
    for (int64_t i = 0; i < left; i++) x = fn(b, x, rest);
    return x;
}

static int64_t resolution(builder *b) {
    static const int64_t res[] = {32, 64, 96, 128, 160, 224};
    return sy_pick(b->r, res, 6);
}

static int32_t conv_stem(builder *b, int64_t batch, int64_t res, int64_t ch) {
    sy_module *m = b->m;
    int32_t img = sy_param(m, sy_shp4(b->act, batch, res, res, 3), b->next_param++);
    int big = res >= 96;
    int32_t x = relu(b, conv_bn(b, img, big ? 7 : 3, ch, big ? 2 : 1));
    if (!big) return x;
    int32_t init = sy_const(m, sy_scalar(b->act));
    return sy_reduce_window(m, x, init, 3, 2, b->max_red);
}

static int32_t build_resnet(builder *b, int64_t target, char *name, size_t cap) {
    static const int64_t batches[] = {1, 2, 4, 8, 16, 32, 64}, bases[] = {16, 32, 64};
    int64_t batch = sy_pick(b->r, batches, 7), res = resolution(b);
    int64_t base = sy_pick(b->r, bases, 3);
    int bottleneck = sy_chance(b->r, 0.4);
    int64_t per_block = bottleneck ? 36 : 27;
    int64_t blocks = (target - 70) / per_block;
    if (blocks < 4) blocks = 4;
    int32_t x = conv_stem(b, batch, res, base);
    int64_t done = 0;
    for (int st = 0; st < 4; st++) {
        int64_t cout = base * (bottleneck ? 4 : 1) << st;
        int64_t n = blocks / 4 + (st < blocks % 4);
        res_arg first = {cout, st ? 2 : 1, bottleneck}, rest = {cout, 1, bottleneck};
        x = add_blocks(b, x, n, res_block, &first, &rest);
        done += n;
    }
    res_arg more = {shp(b, x).d[3], 1, bottleneck};
    while (module_nodes(b->m) + 50 < target && !b->m->failed) x = res_block(b, x, &more), done++;
    int32_t root = classifier(b, global_pool(b, x), sy_chance(b->r, 0.5) ? 1000 : 10);
    snprintf(name, cap, "resnet_v1_%lld_b%lld", (long long)(2 + done * (bottleneck ? 3 : 2)),
             (long long)batch);
    return root;
}

static int32_t build_mobilenet(builder *b, int64_t target, char *name, size_t cap) {
    static const int64_t batches[] = {1, 4, 8, 16, 32}, alphas[] = {25, 50, 75, 100};
    static const int64_t chans[] = {64, 128, 128, 256, 256, 512, 512, 1024};
    static const int64_t strides[] = {1, 2, 1, 2, 1, 2, 1, 2};
    int64_t batch = sy_pick(b->r, batches, 5), alpha = sy_pick(b->r, alphas, 4);
    int64_t res = resolution(b);
    int32_t x = conv_stem(b, batch, res, 32 * alpha / 100);
    int64_t repeats = (target - 60) / 20 - 8;
    if (repeats < 0) repeats = 0;
    for (int i = 0; i < 8; i++) {
        dw_arg a = {chans[i] * alpha / 100, strides[i]};
        x = dw_block(b, x, &a);
        if (i == 6 && repeats > 0) { /* the 512-channel repeats, scanned or not */
            dw_arg same = {chans[i] * alpha / 100, 1};
            x = add_blocks(b, x, repeats, dw_block, &same, &same);
            while (module_nodes(b->m) + 90 < target && !b->m->failed) x = dw_block(b, x, &same);
        }
    }
    int32_t root = classifier(b, global_pool(b, x), 1000);
    snprintf(name, cap, "mobilenet_v1_%03lld_b%lld", (long long)alpha, (long long)batch);
    return root;
}

/* ---- MLPs ----------------------------------------------------------------------- */

typedef struct mlp_arg {
    int act;
    int norm;
} mlp_arg;

/* Residual MLP layer of constant width. */
static int32_t mlp_layer(builder *b, int32_t x, const void *argp) {
    const mlp_arg *a = argp;
    int64_t w = shp(b, x).d[1];
    int32_t y = activation(b, proj(b, x, w), a->act);
    y = sy_binary(b->m, PC_HLO_ADD, x, y);
    return a->norm ? layernorm(b, y) : y;
}

static int32_t build_mlp(builder *b, int64_t target, char *name, size_t cap) {
    static const int64_t batches[] = {8, 16, 32, 64, 128, 256, 1024};
    static const int64_t widths[] = {100, 128, 256, 300, 384, 512, 784, 1000, 1024, 2048, 4096};
    int64_t batch = sy_pick(b->r, batches, 7), width = sy_pick(b->r, widths, 11);
    int64_t in = sy_pick(b->r, widths, 11);
    mlp_arg a = {(int)sy_range(b->r, 0, 2), sy_chance(b->r, 0.5)};
    int32_t x = sy_param(b->m, sy_shp2(b->act, batch, in), b->next_param++);
    x = activation(b, proj(b, x, width), a.act);
    int64_t layers = 1;
    while (module_nodes(b->m) + 40 < target && !b->m->failed) {
        int64_t n = sy_range(b->r, 1, 6);
        if (n >= 3 && b->nloops < MAX_LOOPS && sy_chance(b->r, 0.3))
            x = scan(b, x, n, mlp_layer, &a);
        else
            for (int64_t i = 0; i < n; i++) x = mlp_layer(b, x, &a);
        layers += n;
    }
    int32_t root = classifier(b, x, sy_chance(b->r, 0.5) ? 10 : 1000);
    snprintf(name, cap, "mlp_%lldx%lld_b%lld", (long long)layers, (long long)width,
             (long long)batch);
    return root;
}

/* ---- transformers ---------------------------------------------------------------- */

typedef struct tf_arg {
    int64_t heads;
    int64_t ffn;
    int causal;
    int pre_norm;
    int qkv_bias; /* BERT-style biases on q/k/v; T5/LLaMA-style models have none */
} tf_arg;

/* [B,S,H] -> [B,A,S,D] */
static int32_t split_heads(builder *b, int32_t t, int64_t heads) {
    sy_shape s = shp(b, t);
    sy_shape r = sy_shp4(s.etype, s.d[0], s.d[1], heads, s.d[2] / heads);
    static const int8_t perm[4] = {0, 2, 1, 3};
    return sy_transpose(b->m, sy_reshape(b->m, t, r), perm);
}

/* [B,A,S,D] -> [B,S,H] */
static int32_t merge_heads(builder *b, int32_t t) {
    static const int8_t perm[4] = {0, 2, 1, 3};
    int32_t tr = sy_transpose(b->m, t, perm);
    sy_shape s = shp(b, tr);
    return sy_reshape(b->m, tr, sy_shp3(s.etype, s.d[0], s.d[1], s.d[2] * s.d[3]));
}

static int32_t causal_mask(builder *b, int32_t scores) {
    sy_module *m = b->m;
    sy_shape s = shp(b, scores);
    sy_shape ss = sy_shp2(SY_S32, s.d[2], s.d[3]);
    int32_t keep = sy_compare(m, sy_iota(m, ss, 0), sy_iota(m, ss, 1));
    sy_shape ps = s;
    ps.etype = SY_PRED;
    static const int8_t dims[2] = {2, 3};
    return sy_select(m, sy_bcast(m, keep, ps, dims), scores, sy_splat(m, scores));
}

static int32_t attention(builder *b, int32_t x, const tf_arg *a) {
    sy_module *m = b->m;
    int64_t h = shp(b, x).d[2];
    int32_t q = split_heads(b, a->qkv_bias ? proj(b, x, h) : dense(b, x, h), a->heads);
    int32_t k = split_heads(b, a->qkv_bias ? proj(b, x, h) : dense(b, x, h), a->heads);
    int32_t v = split_heads(b, a->qkv_bias ? proj(b, x, h) : dense(b, x, h), a->heads);
    int32_t s = sy_dot(m, q, k, 2, 3, 3); /* [B,A,S,S] */
    s = sy_binary(m, PC_HLO_MULTIPLY, s, sy_splat(m, s));
    if (a->causal) s = causal_mask(b, s);
    int32_t p = softmax(b, s);
    int32_t ctx = sy_dot(m, p, v, 2, 3, 2); /* [B,A,S,D] */
    return proj(b, merge_heads(b, ctx), h);
}

static int32_t tf_block(builder *b, int32_t x, const void *argp) {
    const tf_arg *a = argp;
    sy_module *m = b->m;
    int64_t h = shp(b, x).d[2];
    if (a->pre_norm) {
        x = sy_binary(m, PC_HLO_ADD, x, attention(b, layernorm(b, x), a));
        int32_t f = proj(b, gelu(b, proj(b, layernorm(b, x), a->ffn)), h);
        return sy_binary(m, PC_HLO_ADD, x, f);
    }
    x = layernorm(b, sy_binary(m, PC_HLO_ADD, x, attention(b, x, a)));
    int32_t f = proj(b, gelu(b, proj(b, x, a->ffn)), h);
    return layernorm(b, sy_binary(m, PC_HLO_ADD, x, f));
}

/* Adds transformer blocks until the module nears `target` nodes. */
static int32_t tf_stack(builder *b, int32_t x, const tf_arg *a, int64_t target, int scan_bias,
                        int64_t *layers) {
    *layers = 0;
    do {
        int64_t n = sy_range(b->r, 1, 6);
        if (n >= 2 && b->nloops < MAX_LOOPS && sy_chance(b->r, scan_bias ? 0.8 : 0.25)) {
            n = sy_range(b->r, 2, MAX_TRIPS);
            x = scan(b, x, n, tf_block, a);
        } else {
            int64_t i = 0;
            for (; i < n && (i == 0 || module_nodes(b->m) + 60 < target); i++)
                x = tf_block(b, x, a);
            n = i;
        }
        *layers += n;
    } while (module_nodes(b->m) + 60 < target && !b->m->failed);
    return x;
}

static void tf_shape(builder *b, int64_t *batch, int64_t *seq, int64_t *hidden, tf_arg *a) {
    static const int64_t batches[] = {1, 2, 4, 8, 16, 32}, seqs[] = {64, 128, 197, 256, 384, 512};
    static const int64_t hiddens[] = {128, 256, 384, 512, 768, 1024}, hdims[] = {32, 64, 64, 128};
    *batch = sy_pick(b->r, batches, 6);
    *seq = sy_pick(b->r, seqs, 6);
    *hidden = sy_pick(b->r, hiddens, 6);
    int64_t hd = sy_pick(b->r, hdims, 4);
    if (hd > *hidden) hd = *hidden;
    a->heads = *hidden / hd;
    a->ffn = *hidden * (sy_chance(b->r, 0.8) ? 4 : 2);
    a->causal = 0;
    a->pre_norm = sy_chance(b->r, 0.5);
    a->qkv_bias = sy_chance(b->r, 0.5);
}

/* Token + position embeddings: [B,S] ids -> [B,S,H]. */
static int32_t embed(builder *b, int64_t batch, int64_t seq, int64_t hidden, int64_t vocab) {
    sy_module *m = b->m;
    int32_t table = sy_param(m, sy_shp2(b->act, vocab, hidden), b->next_param++);
    int32_t ids = sy_param(m, sy_shp2(SY_S32, batch, seq), b->next_param++);
    int32_t e = sy_gather(m, table, ids);
    int32_t pos = sy_param(m, sy_shp2(b->act, seq, hidden), b->next_param++);
    static const int8_t dims[2] = {1, 2};
    e = sy_binary(m, PC_HLO_ADD, e, sy_bcast(m, pos, shp(b, e), dims));
    return layernorm(b, e);
}

static int32_t build_language_model(builder *b, int64_t target, char *name, size_t cap) {
    static const int64_t vocabs[] = {30522, 32000, 50257};
    int64_t batch, seq, hidden, layers;
    tf_arg a;
    tf_shape(b, &batch, &seq, &hidden, &a);
    int kind = (int)sy_range(b->r, 0, 2); /* bert, gpt, albert */
    a.causal = kind == 1;
    int64_t vocab = sy_pick(b->r, vocabs, 3);
    int32_t x = embed(b, batch, seq, hidden, vocab);
    x = tf_stack(b, x, &a, target, kind == 2, &layers);
    sy_module *m = b->m;
    int32_t root;
    if (kind == 1) { /* language-model head over the vocabulary */
        int32_t logits = dense(b, layernorm(b, x), vocab);
        int8_t red = 2;
        int32_t lse = sy_reduce(m, sy_convert(m, logits, SY_F32), sy_const(m, sy_scalar(SY_F32)), 1,
                                &red, b->max_red);
        int32_t outs[2] = {lse, logits};
        root = sy_tuple(m, 2, outs);
    } else { /* pooler on the first token and a classifier */
        int64_t start[3] = {0, 0, 0}, limit[3] = {batch, 1, hidden};
        int32_t cls = sy_slice(m, x, start, limit);
        cls = sy_reshape(m, cls, sy_shp2(b->act, batch, hidden));
        cls = sy_unary(m, PC_HLO_TANH, proj(b, cls, hidden));
        root = classifier(b, cls, sy_chance(b->r, 0.5) ? 2 : 3);
    }
    static const char *const kinds[3] = {"bert", "gpt2", "albert"};
    snprintf(name, cap, "%s_l%lld_h%lld_s%lld_b%lld", kinds[kind], (long long)layers,
             (long long)hidden, (long long)seq, (long long)batch);
    return root;
}

/* Vision transformer: patch convolution, flatten to tokens, blocks, mean-pool head. */
static int32_t build_vit(builder *b, int64_t target, char *name, size_t cap) {
    static const int64_t patches[] = {8, 14, 16, 32};
    int64_t batch, seq, hidden, layers;
    tf_arg a;
    tf_shape(b, &batch, &seq, &hidden, &a);
    int64_t patch = sy_pick(b->r, patches, 4), grid = sy_range(b->r, 4, 14);
    sy_module *m = b->m;
    int32_t img =
        sy_param(m, sy_shp4(b->act, batch, grid * patch, grid * patch, 3), b->next_param++);
    int32_t w = weight(b, sy_shp4(b->act, patch, patch, 3, hidden));
    int32_t x = sy_conv(m, img, w, patch, 1);
    x = sy_reshape(m, x, sy_shp3(b->act, batch, grid * grid, hidden));
    int32_t pos = sy_param(m, sy_shp2(b->act, grid * grid, hidden), b->next_param++);
    static const int8_t dims[2] = {1, 2};
    x = sy_binary(m, PC_HLO_ADD, x, sy_bcast(m, pos, shp(b, x), dims));
    x = tf_stack(b, x, &a, target, 0, &layers);
    int8_t red = 1;
    int32_t pooled =
        sy_reduce(m, sy_convert(m, x, SY_F32), sy_const(m, sy_scalar(SY_F32)), 1, &red, b->add_red);
    pooled = sy_convert(m, sy_binary(m, PC_HLO_MULTIPLY, pooled, sy_splat(m, pooled)), b->act);
    int32_t root = classifier(b, pooled, 1000);
    snprintf(name, cap, "vit_p%lld_l%lld_h%lld_b%lld", (long long)patch, (long long)layers,
             (long long)hidden, (long long)batch);
    return root;
}

/* ---- entry point ------------------------------------------------------------------ */

int sy_build_program(sy_module *m, sy_rng *r, int nlp, int64_t target_nodes, char *name,
                     size_t cap) {
    builder b;
    memset(&b, 0, sizeof b);
    b.m = m;
    b.r = r;
    b.act = sy_chance(r, 0.7) ? SY_BF16 : SY_F32;
    /* computation names decide node_splits: TF-style clusters or JAX-style main */
    int tf = sy_chance(r, 0.5);
    b.entry = sy_comp_begin(m, tf ? "cluster_0__XlaCompiledKernel_true" : "main", 1.0);
    b.add_red = make_reducer(m, "add_f32", PC_HLO_ADD);
    b.max_red = make_reducer(m, "max_f32", PC_HLO_MAXIMUM);
    sy_comp_switch(m, b.entry);
    int32_t root;
    int kind = nlp ? 4 : (int)sy_range(r, 0, 3);
    switch (kind) {
    case 0: root = build_resnet(&b, target_nodes, name, cap); break;
    case 1: root = build_mobilenet(&b, target_nodes, name, cap); break;
    case 2: root = build_mlp(&b, target_nodes, name, cap); break;
    case 3: root = build_vit(&b, target_nodes, name, cap); break;
    default: root = build_language_model(&b, target_nodes, name, cap); break;
    }
    sy_comp_switch(m, b.entry);
    sy_comp_set_root(m, root);
    return sy_module_finish(m, b.entry);
}
