/*
 * Fused kernels and their tile-size configurations.
 *
 * A kernel is one fused computation (matmul or convolution with an
 * epilogue, softmax/layer-norm rows, reductions, pooling, elementwise
 * chains) together with a description of its loop nest: iteration dims with
 * extents (reduction dims innermost) and, for every input and the output,
 * which iteration dim each of its memory dims follows. A config tiles each
 * iteration dim; the cost model walks the grid of tiles and charges HBM
 * traffic (with the reuse the loop order allows), MXU and vector work on the
 * padded tiles, VMEM capacity (double buffering, spills), and a fixed cost
 * per grid step. See docs/synth.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"
#include "synth/tpu.h"

#define TK_MAX_IN 8
#define TK_MAX_CAND PC_TPUG_TILE_MAX_SIZES

typedef struct tk_tensor {
    int rank;
    int8_t it[SY_MAX_RANK];     /* iteration dim of each memory dim, -1 = whole */
    int64_t whole[SY_MAX_RANK]; /* extent of a -1 dim */
    int64_t scale[SY_MAX_RANK]; /* tile extent = t * scale + halo (strided windows) */
    int64_t halo[SY_MAX_RANK];
    int esize;
} tk_tensor;

typedef struct tk_spec {
    int niter;
    int64_t ext[SY_MAX_RANK];
    uint8_t red[SY_MAX_RANK];
    int mxu_m, mxu_n, mxu_k; /* iteration dims on the MXU; -1 without a matmul */
    double mxu_flops;        /* per iteration point */
    double vpu_point, eup_point;
    double vpu_out, eup_out; /* epilogue, per output element */
    int row_dim;             /* iteration dim a normalization needs whole, or -1 */
    int nin;
    tk_tensor in[TK_MAX_IN];
    tk_tensor out;
} tk_spec;

/* ---- the spec ------------------------------------------------------------ */

static tk_tensor *add_tensor(tk_spec *k, int esize) {
    tk_tensor *t = k->nin < TK_MAX_IN ? &k->in[k->nin++] : &k->in[TK_MAX_IN - 1];
    memset(t, 0, sizeof *t);
    t->esize = esize;
    return t;
}

static void tensor_dim(tk_tensor *t, int it, int64_t whole, int64_t scale, int64_t halo) {
    if (t->rank >= SY_MAX_RANK) return;
    t->it[t->rank] = (int8_t)it;
    t->whole[t->rank] = whole;
    t->scale[t->rank] = scale;
    t->halo[t->rank] = halo;
    t->rank++;
}

/* A tensor that follows iteration dims its[0..n) one to one. */
static void plain_tensor(tk_tensor *t, int n, const int *its) {
    for (int i = 0; i < n; i++) tensor_dim(t, its[i], 0, 1, 0);
}

/* ---- the cost model ------------------------------------------------------ */

static double tile_bytes(const tk_tensor *x, const int64_t *t) {
    if (x->rank == 0) return x->esize;
    int64_t size[SY_MAX_RANK] = {0};
    for (int d = 0; d < x->rank; d++)
        size[d] = x->it[d] < 0 ? x->whole[d] : t[x->it[d]] * x->scale[d] + x->halo[d];
    double b = (double)tpu_ceil_to(size[x->rank - 1], TPU_LANES);
    if (x->rank >= 2) b *= (double)tpu_ceil_to(size[x->rank - 2], tpu_sublanes(x->esize));
    for (int d = 0; d + 2 < x->rank; d++) b *= (double)size[d];
    return b * x->esize;
}

/* How often a tensor's tile is (re)loaded: once per change of any loop at or
   outside the innermost loop it depends on. */
static double loads(const tk_tensor *x, const int64_t *steps) {
    int jmax = -1;
    for (int d = 0; d < x->rank; d++)
        if (x->it[d] > jmax) jmax = x->it[d];
    double n = 1;
    for (int i = 0; i <= jmax; i++) n *= (double)steps[i];
    return n;
}

static double tile_cost(const tk_spec *k, const int64_t *t) {
    int64_t steps[SY_MAX_RANK];
    double total_steps = 1, out_tiles = 1, points = 1, mxu_points = 1;
    int has_red = 0;
    for (int i = 0; i < k->niter; i++) {
        steps[i] = tpu_ceil_div(k->ext[i], t[i]);
        total_steps *= (double)steps[i];
        if (k->red[i])
            has_red = 1;
        else
            out_tiles *= (double)steps[i];
        points *= (double)t[i];
        /* the MXU pads its contraction and output columns to 128 lanes and
           streams rows in sublane groups of 8 */
        int64_t pad = i == k->mxu_n || i == k->mxu_k ? TPU_LANES : i == k->mxu_m ? 8 : 1;
        mxu_points *= (double)tpu_ceil_to(t[i], pad);
    }
    double in_tile = 0, traffic = 0;
    for (int j = 0; j < k->nin; j++) {
        double b = tile_bytes(&k->in[j], t);
        in_tile += b;
        traffic += b * loads(&k->in[j], steps);
    }
    double out_tile = tile_bytes(&k->out, t);
    traffic += out_tile * out_tiles;
    double acc = has_red ? out_tile / k->out.esize * 4.0 : 0.0; /* f32 accumulator */
    double out_elems = out_tile / k->out.esize;

    double compute =
        total_steps * (k->mxu_m >= 0 ? mxu_points * k->mxu_flops / TPU_MXU_FLOPS_PER_NS : 0.0);
    compute += total_steps * points *
               (k->vpu_point / TPU_VPU_OPS_PER_NS + k->eup_point / TPU_EUP_OPS_PER_NS);
    compute +=
        out_tiles * out_elems * (k->vpu_out / TPU_VPU_OPS_PER_NS + k->eup_out / TPU_EUP_OPS_PER_NS);
    if (k->row_dim >= 0 && t[k->row_dim] < k->ext[k->row_dim]) {
        traffic *= 2.0; /* rows split across tiles need a second pass */
        compute *= 1.3;
    }
    double mem = traffic / TPU_HBM_BYTES_PER_NS;
    double single = in_tile + out_tile + acc, dbl = 2.0 * (in_tile + out_tile) + acc;
    double time;
    if (dbl <= TPU_VMEM_BYTES) /* double-buffered: loads overlap compute */
        time = fmax(compute, mem) + in_tile / TPU_HBM_BYTES_PER_NS;
    else if (single <= TPU_VMEM_BYTES) /* fits only single-buffered: no overlap */
        time = compute + mem;
    else /* spills: the excess goes to HBM and back every step, and the
            kernel stalls on it in proportion to how far it overflows */
        time = (compute + mem) * (1.0 + 0.5 * (single / TPU_VMEM_BYTES - 1.0)) +
               (single - TPU_VMEM_BYTES) * 2.0 * total_steps / TPU_HBM_BYTES_PER_NS;
    return time + total_steps * TPU_STEP_NS + TPU_KERNEL_LAUNCH_NS;
}

double sy_tile_matmul_cost(int64_t m, int64_t n, int64_t k, const int64_t tile[3], int esize) {
    tk_spec s;
    memset(&s, 0, sizeof s);
    s.niter = 3; /* M, N, K */
    s.ext[0] = m, s.ext[1] = n, s.ext[2] = k;
    s.red[2] = 1;
    s.mxu_m = 0, s.mxu_n = 1, s.mxu_k = 2;
    s.mxu_flops = 2.0;
    s.row_dim = -1;
    plain_tensor(add_tensor(&s, esize), 2, (int[]){0, 2});
    plain_tensor(add_tensor(&s, esize), 2, (int[]){2, 1});
    s.out.esize = esize;
    plain_tensor(&s.out, 2, (int[]){0, 1});
    return tile_cost(&s, tile);
}

/* ---- candidate tiles and configs ----------------------------------------- */

/* 2 if iteration dim i is the minor (lane) dim of some tensor, 1 if it is a
   second-minor (sublane) dim, else 0. */
static int dim_role(const tk_spec *k, int i) {
    int role = 0;
    for (int j = -1; j < k->nin; j++) {
        const tk_tensor *x = j < 0 ? &k->out : &k->in[j];
        if (x->rank && x->it[x->rank - 1] == i) return 2;
        if (x->rank >= 2 && x->it[x->rank - 2] == i) role = 1;
    }
    return role;
}

static double footprint(const tk_spec *k, const int64_t *t) {
    double b = 2.0 * tile_bytes(&k->out, t);
    for (int j = 0; j < k->nin; j++) b += 2.0 * tile_bytes(&k->in[j], t);
    return b;
}

/* The compiler's pick: lane dims up to 512, the output's second-minor up to
   256, reductions up to 512, then outer dims doubled while the double-
   buffered footprint stays within half of VMEM. Good, rarely the best. */
static void default_tiles(const tk_spec *k, int64_t *t) {
    int sub = k->out.rank >= 2 ? k->out.it[k->out.rank - 2] : -1;
    for (int i = 0; i < k->niter; i++) {
        int64_t e = k->ext[i], cap = dim_role(k, i) == 2 || k->red[i] ? 512 : i == sub ? 256 : 1;
        t[i] = e < cap ? e : cap;
        if (cap > 1 && e > 128 && t[i] % 128) t[i] = t[i] / 128 * 128;
    }
    for (int i = k->niter - 1; i >= 0; i--)
        while (t[i] * 2 <= k->ext[i]) {
            t[i] *= 2;
            if (footprint(k, t) > TPU_VMEM_BYTES / 2) {
                t[i] /= 2;
                break;
            }
        }
}

static double grid_steps(const tk_spec *k, const int64_t *t) {
    double n = 1;
    for (int i = 0; i < k->niter; i++) n *= (double)tpu_ceil_div(k->ext[i], t[i]);
    return n;
}

/* A random tiling; grids of absurdly many steps or tiles far beyond VMEM
   are redrawn, as a tuner would not spend runs on them. */
static void random_tiles(const tk_spec *k, sy_rng *r, int64_t *t) {
    int64_t c[TK_MAX_CAND];
    for (int tries = 0; tries < 32; tries++) {
        for (int i = 0; i < k->niter; i++) {
            int n = pc_tpug_tile_sizes(k->ext[i], dim_role(k, i), c);
            t[i] = c[sy_range(r, 0, n - 1)];
        }
        if (grid_steps(k, t) <= 4096 && footprint(k, t) <= 4.0 * TPU_VMEM_BYTES) return;
    }
}

/* kernel_bounds: the tile of every iteration dim; output_bounds: the tile of
   the output's dims in memory order; input_bounds: left to the compiler. */
static void config_feat(const tk_spec *k, const int64_t *t, float *o) {
    int64_t ob[SY_MAX_RANK];
    for (int d = 0; d < k->out.rank; d++) ob[d] = t[k->out.it[d]];
    pc_tpug_tile_feat((pc_tpug_seq){t, k->niter}, (pc_tpug_seq){ob, k->out.rank},
                      (pc_tpug_seq){NULL, 0}, o);
}

/* ---- kernels ----------------------------------------------------------------- */

typedef struct kb {
    sy_module *m;
    sy_rng *r;
    tk_spec *k;
    int32_t nparam;
    uint8_t et;
} kb;

static int32_t kparam(kb *b, sy_shape s) { return sy_param(b->m, s, b->nparam++); }

/* An epilogue activation; returns its vector and transcendental op counts. */
static int32_t k_activation(kb *b, int32_t x, double *vpu, double *eup) {
    sy_module *m = b->m;
    switch (sy_range(b->r, 0, 3)) {
    case 0: return x;
    case 1: *vpu += 1; return sy_binary(m, PC_HLO_MAXIMUM, x, sy_splat(m, x));
    case 2: *vpu += 2; return sy_clamp(m, sy_splat(m, x), x, sy_splat(m, x));
    default: {
        *vpu += 7;
        *eup += 1;
        int32_t x3 = sy_binary(m, PC_HLO_MULTIPLY, sy_binary(m, PC_HLO_MULTIPLY, x, x), x);
        int32_t in = sy_binary(m, PC_HLO_ADD, x, sy_binary(m, PC_HLO_MULTIPLY, x3, sy_splat(m, x)));
        int32_t t = sy_unary(m, PC_HLO_TANH, sy_binary(m, PC_HLO_MULTIPLY, in, sy_splat(m, x)));
        int32_t h = sy_binary(m, PC_HLO_MULTIPLY, x, sy_splat(m, x));
        return sy_binary(m, PC_HLO_MULTIPLY, h, sy_binary(m, PC_HLO_ADD, t, sy_splat(m, x)));
    }
    }
}

/* Per-channel vector [C] broadcast along the last dim and combined with x. */
static int32_t k_channel_op(kb *b, int32_t x, uint8_t op, int it_c) {
    sy_shape s = sy_shape_of(b->m, x);
    int8_t d = (int8_t)(s.rank - 1);
    int64_t c = s.d[d];
    int32_t v = kparam(b, sy_shp(s.etype, 1, &c));
    plain_tensor(add_tensor(b->k, tpu_esize(s.etype)), 1, &it_c);
    return sy_binary(b->m, op, x, sy_bcast(b->m, v, s, &d));
}

/* Shrinks leading dims until the tensor holds at most `cap` elements: fused
   kernels work on activation-sized tensors, not arbitrary products. */
static void cap_elems(int64_t *d, int n, int64_t cap) {
    for (;;) {
        int64_t e = 1;
        int big = 0;
        for (int i = 0; i < n; i++) {
            e *= d[i];
            if (i + 1 < n && d[i] > d[big]) big = i;
        }
        if (e <= cap || n < 2 || d[big] <= 1) return;
        d[big] = (d[big] + 3) / 4;
    }
}

#define TK_MAX_ELEMS (INT64_C(1) << 24)

static const int64_t rows_pool[] = {8,   16,  32,   64,   128,  196,  256,
                                    384, 512, 1000, 1024, 2048, 4096, 8192};
static const int64_t cols_pool[] = {64,  96,  128,  192,  256,  320,  384,
                                    512, 768, 1000, 1024, 2048, 3072, 4096};

/* Matmul with bias, activation, optional residual and down-cast. */
static void kernel_dot(kb *b, char *model, size_t cap) {
    tk_spec *k = b->k;
    sy_module *m = b->m;
    int batched = sy_chance(b->r, 0.3);
    int64_t bt = batched ? sy_range(b->r, 2, 16) : 1;
    int64_t mm = sy_pick(b->r, rows_pool, 14), kk = sy_pick(b->r, cols_pool, 14),
            nn = sy_pick(b->r, cols_pool, 14);
    int o = batched; /* iteration dims: [bt], M, N, K */
    k->niter = 3 + o;
    if (batched) k->ext[0] = bt;
    k->ext[o] = mm, k->ext[o + 1] = nn, k->ext[o + 2] = kk;
    k->red[o + 2] = 1;
    k->mxu_m = o, k->mxu_n = o + 1, k->mxu_k = o + 2;
    k->mxu_flops = 2.0;
    int es = tpu_esize(b->et);
    int32_t lhs, rhs, x;
    if (batched) {
        lhs = kparam(b, sy_shp3(b->et, bt, mm, kk));
        rhs = kparam(b, sy_shp3(b->et, bt, kk, nn));
        plain_tensor(add_tensor(k, es), 3, (int[]){0, 1, 3});
        plain_tensor(add_tensor(k, es), 3, (int[]){0, 3, 2});
        x = sy_dot(m, lhs, rhs, 1, 2, 1);
    } else {
        lhs = kparam(b, sy_shp2(b->et, mm, kk));
        rhs = kparam(b, sy_shp2(b->et, kk, nn));
        plain_tensor(add_tensor(k, es), 2, (int[]){0, 2});
        plain_tensor(add_tensor(k, es), 2, (int[]){2, 1});
        x = sy_dot(m, lhs, rhs, 0, 1, 0);
    }
    if (sy_chance(b->r, 0.7)) x = k_channel_op(b, x, PC_HLO_ADD, o + 1), k->vpu_out += 1;
    x = k_activation(b, x, &k->vpu_out, &k->eup_out);
    if (sy_chance(b->r, 0.3)) {
        int32_t res = kparam(b, sy_shape_of(m, x));
        plain_tensor(add_tensor(k, es), 2 + o, batched ? (int[]){0, 1, 2} : (int[]){0, 1});
        x = sy_binary(m, PC_HLO_ADD, x, res);
        k->vpu_out += 1;
    }
    int down = b->et == SY_F32 && sy_chance(b->r, 0.3);
    if (down) x = sy_convert(m, x, SY_BF16), k->vpu_out += 1;
    k->out.esize = down ? 2 : es;
    plain_tensor(&k->out, 2 + o, batched ? (int[]){0, 1, 2} : (int[]){0, 1});
    snprintf(model, cap, "%s_l%lld_h%lld_b%lld", sy_chance(b->r, 0.5) ? "bert" : "mlp",
             (long long)sy_range(b->r, 2, 24), (long long)kk, (long long)(mm / 8 ? mm / 8 : 1));
}

/* Loop nest of an NHWC x HWIO convolution with output shape `os`: iteration
   [B, Ho, Wo, Co, Ci] (depthwise: [B, Ho, Wo, C] on the vector unit); input
   tiles grow by the stride and a halo of kernel size - 1. */
static void conv_spec(tk_spec *k, const sy_shape *os, int64_t ci, int64_t kk, int64_t st, int dw,
                      int es) {
    k->niter = dw ? 4 : 5;
    k->ext[0] = os->d[0], k->ext[1] = os->d[1], k->ext[2] = os->d[2], k->ext[3] = os->d[3];
    tk_tensor *ti = add_tensor(k, es), *tw = add_tensor(k, es);
    tensor_dim(ti, 0, 0, 1, 0);
    tensor_dim(ti, 1, 0, st, kk - 1);
    tensor_dim(ti, 2, 0, st, kk - 1);
    tensor_dim(ti, dw ? 3 : 4, 0, 1, 0);
    tensor_dim(tw, -1, kk, 1, 0);
    tensor_dim(tw, -1, kk, 1, 0);
    tensor_dim(tw, dw ? -1 : 4, 1, 1, 0);
    tensor_dim(tw, 3, 0, 1, 0);
    if (dw) {
        k->vpu_point = 2.0 * (double)(kk * kk);
        return;
    }
    k->ext[4] = ci;
    k->red[4] = 1;
    k->mxu_m = 2, k->mxu_n = 3, k->mxu_k = 4;
    k->mxu_flops = 2.0 * (double)(kk * kk);
}

/* Convolution (or depthwise) with batch norm, ReLU/ReLU6 and optional residual. */
static void kernel_conv(kb *b, char *model, size_t cap) {
    static const int64_t batches[] = {1, 2, 4, 8, 16, 32}, sp[] = {7, 14, 28, 56, 112};
    static const int64_t ch[] = {3, 16, 32, 64, 96, 128, 256, 512}, ks[] = {1, 3, 3, 5, 7};
    tk_spec *k = b->k;
    sy_module *m = b->m;
    int64_t bb = sy_pick(b->r, batches, 6), hw = sy_pick(b->r, sp, 5);
    int64_t ci = sy_pick(b->r, ch, 8), co = sy_pick(b->r, ch + 1, 7), kk = sy_pick(b->r, ks, 5);
    /* wide channels only at small resolutions, as in real networks */
    while (ci > 16 && ci * hw * hw > (INT64_C(1) << 20)) ci /= 2;
    while (co > 16 && co * hw * hw > (INT64_C(1) << 20)) co /= 2;
    int64_t st = hw >= 14 && sy_chance(b->r, 0.3) ? 2 : 1;
    int dw = ci > 3 && sy_chance(b->r, 0.25);
    if (dw) co = ci;
    int es = tpu_esize(b->et);
    int32_t in = kparam(b, sy_shp4(b->et, bb, hw, hw, ci));
    int32_t w = kparam(b, sy_shp4(b->et, kk, kk, dw ? 1 : ci, co));
    int32_t x = sy_conv(m, in, w, st, dw ? ci : 1);
    sy_shape os = sy_shape_of(m, x);
    conv_spec(k, &os, ci, kk, st, dw, es);
    x = k_channel_op(b, x, PC_HLO_MULTIPLY, 3);
    x = k_channel_op(b, x, PC_HLO_ADD, 3);
    k->vpu_out += 2;
    x = k_activation(b, x, &k->vpu_out, &k->eup_out);
    if (!dw && st == 1 && ci == co && sy_chance(b->r, 0.4)) {
        x = sy_binary(m, PC_HLO_ADD, x, kparam(b, sy_shape_of(m, x)));
        plain_tensor(add_tensor(k, es), 4, (int[]){0, 1, 2, 3});
        k->vpu_out += 1;
    }
    k->out.esize = es;
    plain_tensor(&k->out, 4, (int[]){0, 1, 2, 3});
    if (dw)
        snprintf(model, cap, "mobilenet_v1_%03lld_b%lld", (long long)(ci >= 64 ? 100 : 50),
                 (long long)bb);
    else
        snprintf(model, cap, "resnet_v1_%d_b%lld", kk == 1 ? 50 : 18 + 16 * (int)(co / 128),
                 (long long)bb);
}

/* Row normalization: softmax or layer norm over the last dim. */
static void kernel_rows(kb *b, char *model, size_t cap) {
    tk_spec *k = b->k;
    sy_module *m = b->m;
    int three = sy_chance(b->r, 0.5);
    static const int64_t heads[] = {4, 8, 12, 16};
    int64_t r0 = three ? sy_pick(b->r, heads, 4) * sy_range(b->r, 1, 8) : 1;
    int64_t dd[3] = {r0, sy_pick(b->r, rows_pool, 14), sy_pick(b->r, cols_pool, 14)};
    cap_elems(dd, 3, TK_MAX_ELEMS);
    r0 = dd[0];
    int64_t rr = dd[1], cc = dd[2];
    int es = tpu_esize(b->et);
    int32_t x = three ? kparam(b, sy_shp3(b->et, r0, rr, cc)) : kparam(b, sy_shp2(b->et, rr, cc));
    int o = three;
    k->niter = 2 + o;
    if (three) k->ext[0] = r0;
    k->ext[o] = rr, k->ext[o + 1] = cc;
    k->mxu_m = k->mxu_n = k->mxu_k = -1;
    k->row_dim = o + 1;
    int its[3] = {0, 1, 2};
    plain_tensor(add_tensor(k, es), 2 + o, its);
    int softmax = sy_chance(b->r, 0.5);
    int32_t xf = sy_convert(m, x, SY_F32);
    int8_t ld = (int8_t)(1 + o);
    sy_shape fs = sy_shape_of(m, xf);
    int8_t keep[2] = {0, 1};
    if (softmax) {
        int32_t mx = sy_reduce(m, xf, sy_const(m, sy_scalar(SY_F32)), 1, &ld, -1);
        int32_t e = sy_unary(m, PC_HLO_EXPONENTIAL,
                             sy_binary(m, PC_HLO_SUBTRACT, xf, sy_bcast(m, mx, fs, keep)));
        int32_t s = sy_reduce(m, e, sy_const(m, sy_scalar(SY_F32)), 1, &ld, -1);
        x = sy_binary(m, PC_HLO_DIVIDE, e, sy_bcast(m, s, fs, keep));
        k->vpu_point = 6, k->eup_point = 1;
    } else {
        int32_t s = sy_reduce(m, xf, sy_const(m, sy_scalar(SY_F32)), 1, &ld, -1);
        s = sy_binary(m, PC_HLO_MULTIPLY, s, sy_splat(m, s));
        int32_t d = sy_binary(m, PC_HLO_SUBTRACT, xf, sy_bcast(m, s, fs, keep));
        int32_t v = sy_reduce(m, sy_binary(m, PC_HLO_MULTIPLY, d, d),
                              sy_const(m, sy_scalar(SY_F32)), 1, &ld, -1);
        v = sy_unary(m, PC_HLO_RSQRT, sy_binary(m, PC_HLO_ADD, v, sy_splat(m, v)));
        x = sy_binary(m, PC_HLO_MULTIPLY, d, sy_bcast(m, v, fs, keep));
        x = k_channel_op(b, x, PC_HLO_MULTIPLY, o + 1);
        x = k_channel_op(b, x, PC_HLO_ADD, o + 1);
        k->vpu_point = 9;
    }
    x = sy_convert(m, x, b->et);
    k->out.esize = es;
    plain_tensor(&k->out, 2 + o, its);
    snprintf(model, cap, "%s_l%lld_h%lld_s%lld", softmax ? "gpt2" : "bert",
             (long long)sy_range(b->r, 2, 24), (long long)cc, (long long)rr);
}

/* Reduction over the middle dim of [A, R, C] (or the last of [A, C]). */
static void kernel_reduce(kb *b, char *model, size_t cap) {
    tk_spec *k = b->k;
    sy_module *m = b->m;
    int64_t aa = sy_pick(b->r, rows_pool, 14), cc = sy_pick(b->r, cols_pool, 14);
    int mid = sy_chance(b->r, 0.5);
    int64_t rr = mid ? sy_pick(b->r, rows_pool, 14) : 1;
    int64_t dd[3] = {aa, rr, cc};
    cap_elems(dd, 3, TK_MAX_ELEMS);
    aa = dd[0], rr = dd[1];
    int es = tpu_esize(b->et);
    int32_t x = mid ? kparam(b, sy_shp3(b->et, aa, rr, cc)) : kparam(b, sy_shp2(b->et, aa, cc));
    k->mxu_m = k->mxu_n = k->mxu_k = -1;
    k->vpu_point = 1;
    int8_t red = 1; /* R of [A, R, C], or C of [A, C] */
    int32_t xf = sy_convert(m, x, SY_F32);
    if (sy_chance(b->r, 0.5)) xf = sy_binary(m, PC_HLO_MULTIPLY, xf, xf), k->vpu_point += 1;
    sy_reduce(m, xf, sy_const(m, sy_scalar(SY_F32)), 1, &red, -1);
    if (mid) { /* iteration [A, C, R]: output [A, C], reduce R innermost */
        k->niter = 3;
        k->ext[0] = aa, k->ext[1] = cc, k->ext[2] = rr;
        k->red[2] = 1;
        plain_tensor(add_tensor(k, es), 3, (int[]){0, 2, 1});
        plain_tensor(&k->out, 2, (int[]){0, 1});
    } else { /* iteration [A, C]: output [A] */
        k->niter = 2;
        k->ext[0] = aa, k->ext[1] = cc;
        k->red[1] = 1;
        plain_tensor(add_tensor(k, es), 2, (int[]){0, 1});
        plain_tensor(&k->out, 1, (int[]){0});
    }
    k->out.esize = 4;
    snprintf(model, cap, "mlp_%lldx%lld_b%lld", (long long)sy_range(b->r, 2, 8), (long long)cc,
             (long long)aa);
}

/* Max pooling 3x3 stride 2 over NHWC. */
static void kernel_pool(kb *b, char *model, size_t cap) {
    static const int64_t batches[] = {1, 4, 8, 16, 32}, sp[] = {28, 56, 112};
    static const int64_t ch[] = {32, 64, 96, 128, 256};
    tk_spec *k = b->k;
    sy_module *m = b->m;
    int64_t bb = sy_pick(b->r, batches, 5), hw = sy_pick(b->r, sp, 3), c = sy_pick(b->r, ch, 5);
    int es = tpu_esize(b->et);
    int32_t x = kparam(b, sy_shp4(b->et, bb, hw, hw, c));
    int32_t y = sy_reduce_window(m, x, sy_const(m, sy_scalar(b->et)), 3, 2, -1);
    sy_shape os = sy_shape_of(m, y);
    k->niter = 4;
    k->ext[0] = bb, k->ext[1] = os.d[1], k->ext[2] = os.d[2], k->ext[3] = c;
    k->mxu_m = k->mxu_n = k->mxu_k = -1;
    k->vpu_point = 9;
    tk_tensor *ti = add_tensor(k, es);
    tensor_dim(ti, 0, 0, 1, 0);
    tensor_dim(ti, 1, 0, 2, 2);
    tensor_dim(ti, 2, 0, 2, 2);
    tensor_dim(ti, 3, 0, 1, 0);
    k->out.esize = es;
    plain_tensor(&k->out, 4, (int[]){0, 1, 2, 3});
    snprintf(model, cap, "resnet_v1_%d_b%lld", sy_chance(b->r, 0.5) ? 50 : 101, (long long)bb);
}

/* Appends one random elementwise op over recent values; returns the new count. */
static int eltwise_op(kb *b, int32_t *vals, uint8_t *used, int nv, int rank) {
    static const uint8_t unary[] = {PC_HLO_EXPONENTIAL, PC_HLO_TANH, PC_HLO_NEGATE,  PC_HLO_RSQRT,
                                    PC_HLO_LOG,         PC_HLO_ABS,  PC_HLO_LOGISTIC};
    static const uint8_t binary[] = {PC_HLO_ADD,     PC_HLO_MULTIPLY, PC_HLO_SUBTRACT,
                                     PC_HLO_MAXIMUM, PC_HLO_DIVIDE,   PC_HLO_MINIMUM};
    tk_spec *k = b->k;
    sy_module *m = b->m;
    int ia = (int)sy_range(b->r, nv > 4 ? nv - 4 : 0, nv - 1);
    int32_t a = vals[ia];
    used[ia] = 1;
    int kind = (int)sy_range(b->r, 0, 9);
    if (kind < 3) {
        uint8_t op = unary[sy_range(b->r, 0, 6)];
        vals[nv] = sy_unary(m, op, a);
        if (op == PC_HLO_NEGATE || op == PC_HLO_ABS)
            k->vpu_point += 1;
        else
            k->eup_point += 1;
    } else if (kind < 5 && k->nin < TK_MAX_IN - 1) {
        vals[nv] = k_channel_op(b, a, PC_HLO_MULTIPLY, rank - 1);
        k->vpu_point += 1;
    } else if (kind < 6) {
        vals[nv] = sy_binary(m, binary[sy_range(b->r, 0, 5)], a, sy_splat(m, a));
        k->vpu_point += 1;
    } else {
        int ic = (int)sy_range(b->r, 0, nv - 1);
        used[ic] = 1;
        uint8_t op = binary[sy_range(b->r, 0, 5)];
        vals[nv] = sy_binary(m, op, a, vals[ic]);
        k->vpu_point += op == PC_HLO_DIVIDE ? 2 : 1;
    }
    return nv + 1;
}

/* A random elementwise DAG over same-shaped inputs and per-channel vectors. */
static void kernel_eltwise(kb *b, char *model, size_t cap) {
    tk_spec *k = b->k;
    sy_module *m = b->m;
    int rank = (int)sy_range(b->r, 1, 4);
    int64_t d[4];
    for (int i = 0; i < rank; i++)
        d[i] = i + 1 < rank ? sy_pick(b->r, rows_pool, 10) : sy_pick(b->r, cols_pool, 14);
    cap_elems(d, rank, TK_MAX_ELEMS);
    sy_shape s = sy_shp(b->et, rank, d);
    int es = tpu_esize(b->et);
    int its[4] = {0, 1, 2, 3};
    k->niter = rank;
    for (int i = 0; i < rank; i++) k->ext[i] = d[i];
    k->mxu_m = k->mxu_n = k->mxu_k = -1;
    int32_t vals[64];
    uint8_t used[64] = {0};
    int nv = 0, nin = (int)sy_range(b->r, 1, 4);
    for (int i = 0; i < nin; i++) {
        vals[nv++] = kparam(b, s);
        plain_tensor(add_tensor(k, es), rank, its);
    }
    int nops = (int)sy_range(b->r, 3, 24);
    for (int i = 0; i < nops && nv < 48; i++) nv = eltwise_op(b, vals, used, nv, rank);
    /* every value feeds the root, as in a real fusion */
    int32_t root = vals[nv - 1];
    for (int i = 0; i + 1 < nv; i++)
        if (!used[i]) root = sy_binary(m, PC_HLO_ADD, root, vals[i]), k->vpu_point += 1;
    k->out.esize = es;
    plain_tensor(&k->out, rank, its);
    snprintf(model, cap, "%s_b%lld", sy_chance(b->r, 0.5) ? "efficientnet_b0" : "t5_small",
             (long long)d[0]);
}

/* ---- graph building --------------------------------------------------------- */

static int build_kernel(sy_tile_graph *g, sy_rng *r, tk_spec *k) {
    memset(k, 0, sizeof *k);
    k->row_dim = -1;
    k->mxu_m = k->mxu_n = k->mxu_k = -1;
    sy_module *m = &g->mod;
    sy_module_init(m);
    int32_t c = sy_comp_begin(m, "fused_computation", 1.0);
    kb b = {m, r, k, 0, sy_chance(r, 0.6) ? SY_BF16 : SY_F32};
    double u = sy_unif(r);
    if (u < 0.30)
        kernel_dot(&b, g->model, sizeof g->model);
    else if (u < 0.55)
        kernel_conv(&b, g->model, sizeof g->model);
    else if (u < 0.67)
        kernel_rows(&b, g->model, sizeof g->model);
    else if (u < 0.77)
        kernel_reduce(&b, g->model, sizeof g->model);
    else if (u < 0.85)
        kernel_pool(&b, g->model, sizeof g->model);
    else
        kernel_eltwise(&b, g->model, sizeof g->model);
    return sy_module_finish(m, c);
}

static void add_config(sy_tile_graph *g, const tk_spec *k, const int64_t *t) {
    config_feat(k, t, g->config_feat + g->nconfigs * PC_TPUG_TILE_FEATS);
    g->cost_ns[g->nconfigs++] = tile_cost(k, t);
}

int sy_tile_graph_dims(const sy_tile_graph *g, int64_t *ext) {
    for (int i = 0; i < SY_MAX_RANK; i++) ext[i] = i < g->spec->niter ? g->spec->ext[i] : 0;
    return g->spec->niter;
}

double sy_tile_graph_cost(const sy_tile_graph *g, const int64_t *t) { return tile_cost(g->spec, t); }

int sy_tile_graph_build(sy_tile_graph *g, sy_rng *r, int64_t nconfigs) {
    memset(g, 0, sizeof *g);
    tk_spec *kp = g->spec = malloc(sizeof *g->spec);
    if (!kp) return -1;
    tk_spec k;
    if (build_kernel(g, r, &k) != 0) return -1;
    *kp = k;
    if (nconfigs < 1) nconfigs = 1;
    g->config_feat = malloc((size_t)nconfigs * PC_TPUG_TILE_FEATS * sizeof(float));
    g->cost_ns = malloc((size_t)nconfigs * sizeof(double));
    sy_hset seen;
    if (!g->config_feat || !g->cost_ns || sy_hset_init(&seen, (size_t)nconfigs)) return -1;
    int64_t t[SY_MAX_RANK] = {0};
    default_tiles(&k, t);
    int64_t at = sy_range(r, 0, nconfigs - 1); /* where the default run sits */
    sy_hset_add(&seen, sy_hash_bytes(t, sizeof t));
    /* draw until enough distinct configs; small tile spaces give fewer */
    for (int64_t tries = 0; g->nconfigs < nconfigs && tries < nconfigs * 20; tries++) {
        if (g->nconfigs == at) {
            default_tiles(&k, t);
            g->default_config = g->nconfigs;
            add_config(g, &k, t);
            continue;
        }
        int64_t u[SY_MAX_RANK] = {0};
        random_tiles(&k, r, u);
        if (sy_hset_add(&seen, sy_hash_bytes(u, sizeof u))) add_config(g, &k, u);
    }
    if (g->nconfigs <= at) { /* the space ran out before the default's turn */
        default_tiles(&k, t);
        g->default_config = g->nconfigs;
        add_config(g, &k, t);
    }
    sy_hset_free(&seen);
    return 0;
}

void sy_tile_graph_free(sy_tile_graph *g) {
    if (!g) return;
    sy_module_free(&g->mod);
    free(g->spec);
    free(g->config_feat);
    free(g->cost_ns);
    memset(g, 0, sizeof *g);
}
