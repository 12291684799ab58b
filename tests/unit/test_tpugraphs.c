/*
 * Unit tests for the TpuGraphs schema (src/tpugraphs/): the node featurizer
 * on an empty node and on a filled one (columns, the wrapping int64 product,
 * parameter numbers, window reversal counts), the tile-config featurizer
 * (empty product 0, more than 6 values) and the element-type one-hot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tpugraphs/features.h"

static void test_empty_node(void **state) {
    (void)state;
    pc_tpug_node nd;
    memset(&nd, 0, sizeof nd);
    float f[PC_TPUG_NODE_FEATS];
    pc_tpug_node_feat(&nd, f);
    /* INVALID type -> column 0; every seq field: sum 0, product 1 */
    assert_true(f[PC_TPUG_COL_ETYPE] == 1.0f);
    assert_true(f[PC_TPUG_COL_DIMS + 6] == 0.0f && f[PC_TPUG_COL_DIMS + 7] == 1.0f);
    assert_true(f[PC_TPUG_COL_WIN_BASE_DILATION + 7] == 1.0f);
    assert_true(f[PC_TPUG_COL_PAD_HIGH + 3] == 1.0f);
    assert_true(f[PC_TPUG_COL_WIN_REVERSAL + 7] == 0.0f);
    float sum = 0;
    for (int i = 0; i < PC_TPUG_NODE_FEATS; i++) sum += f[i];
    assert_true(sum == 1.0f + 1 + 6 + 6); /* one-hot; products of dims, 6 window, 6 slice/pad */
}

static void test_filled_node(void **state) {
    (void)state;
    int64_t dims[2] = {INT64_C(1) << 40, INT64_C(1) << 40}; /* product wraps to 0 */
    int64_t m2m[2] = {1, 0}, win[2] = {3, 3};
    uint8_t rev[2] = {1, 0};
    pc_tpug_node nd;
    memset(&nd, 0, sizeof nd);
    nd.is_root = 1;
    nd.element_type = 16; /* BF16 */
    nd.dims = (pc_tpug_seq){dims, 2};
    nd.parameter_number = -1;
    nd.window_n = 2;
    nd.win_size = nd.win_stride = nd.win_pad_low = nd.win_pad_high = win;
    nd.win_dilation = nd.win_base_dilation = win;
    nd.win_reversal = rev;
    nd.minor_to_major = (pc_tpug_seq){m2m, 2};
    float f[PC_TPUG_NODE_FEATS];
    pc_tpug_node_feat(&nd, f);
    assert_true(f[PC_TPUG_COL_IS_ROOT] == 1.0f);
    assert_true(f[PC_TPUG_COL_ETYPE + 13] == 1.0f);
    assert_true(f[PC_TPUG_COL_DIMS + 6] == (float)(INT64_C(1) << 41));
    assert_true(f[PC_TPUG_COL_DIMS + 7] == 0.0f);
    assert_true(f[PC_TPUG_COL_PARAMETER_NUMBER] == 0.0f);
    assert_true(f[PC_TPUG_COL_WIN_SIZE + 7] == 9.0f);
    assert_true(f[PC_TPUG_COL_WIN_REVERSAL] == 1.0f && f[PC_TPUG_COL_WIN_REVERSAL + 1] == 0.0f);
    assert_true(f[PC_TPUG_COL_WIN_REVERSAL + 6] == 1.0f && f[PC_TPUG_COL_WIN_REVERSAL + 7] == 1.0f);
    assert_true(f[PC_TPUG_COL_LAYOUT] == 1.0f && f[PC_TPUG_NODE_FEATS - 1] == 0.0f);
}

static void test_tile(void **state) {
    (void)state;
    int64_t k[7] = {1, 2, 3, 4, 5, 6, 7}, o[2] = {8, 128};
    float f[PC_TPUG_TILE_FEATS];
    pc_tpug_tile_feat((pc_tpug_seq){k, 7}, (pc_tpug_seq){o, 2}, (pc_tpug_seq){NULL, 0}, f);
    assert_true(f[PC_TPUG_TILE_COL_KERNEL + 5] == 6.0f);
    assert_true(f[PC_TPUG_TILE_COL_KERNEL + 6] == 28.0f &&
                f[PC_TPUG_TILE_COL_KERNEL + 7] == 5040.0f);
    assert_true(f[PC_TPUG_TILE_COL_OUTPUT + 2] == 0.0f &&
                f[PC_TPUG_TILE_COL_OUTPUT + 7] == 1024.0f);
    for (int i = 0; i < 8; i++) assert_true(f[PC_TPUG_TILE_COL_INPUT + i] == 0.0f);
}

static void test_type_column(void **state) {
    (void)state;
    assert_int_equal(pc_tpug_type_column(11), 11); /* F32 */
    assert_int_equal(pc_tpug_type_column(13), 16); /* TUPLE */
    assert_int_equal(pc_tpug_type_column(17), 18); /* TOKEN */
    assert_int_equal(pc_tpug_type_column(19), -1);
    assert_int_equal(pc_tpug_type_column(-1), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_node),
        cmocka_unit_test(test_filled_node),
        cmocka_unit_test(test_tile),
        cmocka_unit_test(test_type_column),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
