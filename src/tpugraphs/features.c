/*
 * The node and tile-config featurizers of the TpuGraphs schema. See
 * features.h.
 *
 * Arithmetic of the seq fields' sum and product: wrapping 64-bit integers,
 * as the extractor's int64 does (and as hlo/ always computed them). synth/
 * used to compute them in signed int64; the two agree bit for bit on every
 * input whose signed result does not overflow, and synth's inputs never
 * overflow: they are the dims, windows, slices and pads of tensors it also
 * sizes in int64 elsewhere, and tile bounds below 2^24 elements
 * (TK_MAX_ELEMS), so the wrapping rule keeps synth's output bytes (checked:
 * `perfcast synth --scale small --seed 7` writes identical files). Where a
 * signed product would overflow, synth had undefined behaviour; the wrapping
 * rule gives what the dataset's extractor gives.
 */
#include <stdlib.h>
#include <string.h>

#include "tpugraphs/features.h"

/* k values (0-padded, the row is zeroed first), then the wrapping sum and
   product of all n; the product of none is 1, or 0 if zero_empty_product. */
static void put_seq(float *f, pc_tpug_seq s, int k, int zero_empty_product) {
    uint64_t sum = 0, prod = 1;
    for (int64_t i = 0; i < s.n; i++) {
        sum += (uint64_t)s.v[i];
        prod *= (uint64_t)s.v[i];
        if (i < k) f[i] = (float)s.v[i];
    }
    f[k] = (float)(int64_t)sum;
    f[k + 1] = (s.n == 0 && zero_empty_product) ? 0.0f : (float)(int64_t)prod;
}

/* The first k values, 0-padded, no aggregates. */
static void put_first(float *f, pc_tpug_seq s, int k) {
    for (int64_t i = 0; i < s.n && i < k; i++) f[i] = (float)s.v[i];
}

static pc_tpug_seq seq(const int64_t *v, int64_t n) {
    pc_tpug_seq s = {v, n};
    return s;
}

int pc_tpug_type_column(int32_t t) {
    /* INVALID PRED S8 S16 S32 S64 U8 U16 U32 U64 F16 F32 F64 BF16 C64 C128 TUPLE OPAQUE TOKEN */
    static const int8_t col[19] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                   /* TUPLE 13 */ 16, /* OPAQUE 14 */ 17, /* C64 15 */ 14,
                                   /* BF16 16 */ 13, /* TOKEN 17 */ 18, /* C128 18 */ 15};
    return (t >= 0 && t < 19) ? col[t] : -1;
}

void pc_tpug_tile_feat(pc_tpug_seq kernel, pc_tpug_seq output, pc_tpug_seq input, float *out) {
    memset(out, 0, PC_TPUG_TILE_FEATS * sizeof *out);
    put_seq(out + PC_TPUG_TILE_COL_KERNEL, kernel, 6, 1);
    put_seq(out + PC_TPUG_TILE_COL_OUTPUT, output, 6, 1);
    put_seq(out + PC_TPUG_TILE_COL_INPUT, input, 6, 1);
}

static void put_window(const pc_tpug_node *nd, float *f) {
    int64_t wn = nd->window_n > 0 ? nd->window_n : 0;
    put_seq(f + PC_TPUG_COL_WIN_SIZE, seq(nd->win_size, wn), 6, 0);
    put_seq(f + PC_TPUG_COL_WIN_STRIDE, seq(nd->win_stride, wn), 6, 0);
    put_seq(f + PC_TPUG_COL_WIN_PAD_LOW, seq(nd->win_pad_low, wn), 6, 0);
    put_seq(f + PC_TPUG_COL_WIN_PAD_HIGH, seq(nd->win_pad_high, wn), 6, 0);
    put_seq(f + PC_TPUG_COL_WIN_DILATION, seq(nd->win_dilation, wn), 6, 0);
    put_seq(f + PC_TPUG_COL_WIN_BASE_DILATION, seq(nd->win_base_dilation, wn), 6, 0);
    int64_t yes = 0;
    for (int64_t i = 0; i < wn; i++) {
        int r = nd->win_reversal && nd->win_reversal[i];
        if (i < 6) f[PC_TPUG_COL_WIN_REVERSAL + i] = r ? 1.0f : 0.0f;
        yes += r;
    }
    f[PC_TPUG_COL_WIN_REVERSAL + 6] = (float)yes;
    f[PC_TPUG_COL_WIN_REVERSAL + 7] = (float)(wn - yes);
}

static void put_conv(const pc_tpug_node *nd, float *f) {
    f[PC_TPUG_COL_CONV_INPUT_BATCH] = (float)nd->conv_input_batch;
    f[PC_TPUG_COL_CONV_INPUT_FEATURE] = (float)nd->conv_input_feature;
    put_first(f + PC_TPUG_COL_CONV_INPUT_SPATIAL, nd->conv_input_spatial, 4);
    f[PC_TPUG_COL_CONV_KERNEL_INPUT_FEATURE] = (float)nd->conv_kernel_input_feature;
    f[PC_TPUG_COL_CONV_KERNEL_OUTPUT_FEATURE] = (float)nd->conv_kernel_output_feature;
    put_first(f + PC_TPUG_COL_CONV_KERNEL_SPATIAL, nd->conv_kernel_spatial, 4);
    f[PC_TPUG_COL_CONV_OUTPUT_BATCH] = (float)nd->conv_output_batch;
    f[PC_TPUG_COL_CONV_OUTPUT_FEATURE] = (float)nd->conv_output_feature;
    f[PC_TPUG_COL_FEATURE_GROUP_COUNT] = (float)nd->feature_group_count;
    f[PC_TPUG_COL_BATCH_GROUP_COUNT] = (float)nd->batch_group_count;
}

void pc_tpug_node_feat(const pc_tpug_node *nd, float *f) {
    memset(f, 0, PC_TPUG_NODE_FEATS * sizeof *f);
    f[PC_TPUG_COL_IS_ROOT] = nd->is_root ? 1.0f : 0.0f;
    int col = pc_tpug_type_column(nd->element_type);
    if (col >= 0) f[PC_TPUG_COL_ETYPE + col] = 1.0f;
    put_seq(f + PC_TPUG_COL_DIMS, nd->dims, 6, 0);
    f[PC_TPUG_COL_TUPLE_COUNT] = (float)nd->tuple_count;
    f[PC_TPUG_COL_PARAMETER_NUMBER] = nd->parameter_number > 0 ? (float)nd->parameter_number : 0.0f;
    put_first(f + PC_TPUG_COL_DIMENSIONS, nd->dimensions, 6);
    put_window(nd, f);
    put_conv(nd, f);
    put_seq(f + PC_TPUG_COL_SLICE_START, nd->slice_start, 2, 0);
    put_seq(f + PC_TPUG_COL_SLICE_STRIDE, nd->slice_stride, 2, 0);
    put_seq(f + PC_TPUG_COL_SLICE_LIMIT, nd->slice_limit, 2, 0);
    put_seq(f + PC_TPUG_COL_DYNAMIC_SLICE_SIZES, nd->dynamic_slice_sizes, 2, 0);
    put_seq(f + PC_TPUG_COL_PAD_LOW, nd->pad_low, 2, 0);
    put_seq(f + PC_TPUG_COL_PAD_HIGH, nd->pad_high, 2, 0);
    f[PC_TPUG_COL_IS_STABLE] = nd->is_stable ? 1.0f : 0.0f;
    put_first(f + PC_TPUG_COL_LAYOUT, nd->minor_to_major, PC_TPUG_NODE_FEATS - PC_TPUG_COL_LAYOUT);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int pc_tpug_tile_sizes(int64_t e, int role, int64_t *out) {
    static const int64_t lane[] = {128, 256, 384, 512, 768, 1024, 1536, 2048};
    int n = 0;
    if (role == 2 && e > 128) {
        for (int i = 0; i < 8 && lane[i] < e; i++) out[n++] = lane[i];
    } else {
        int64_t lo = role == 2 ? 8 : role == 1 ? 8 : 1;
        for (int64_t p = lo; p < e && n < PC_TPUG_TILE_MAX_SIZES - 1; p *= 2) out[n++] = p;
    }
    out[n++] = e;
    qsort(out, (size_t)n, sizeof *out, cmp_i64);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || out[i] != out[u - 1]) out[u++] = out[i];
    return u;
}
