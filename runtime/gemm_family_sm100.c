/* The Blackwell family (sm_100a/100f/103a/110a; tcgen05, accumulator in
 * TMEM; kernels_ptx/gemm_sm100.c): one kernel per (input, output) type.
 * Assembled and statically checked only: no Blackwell GPU has run it. */
#include "gemm_family.h"

static const bc__gemm_config configs[] = {{
    .name = "sm100_128x256x64_ws_s4_tmem2",
    .bm = BC_SM100_BM,
    .bn = BC_SM100_BN,
    .bk = BC_SM100_BK,
    .threads = BC_SM100_THREADS,
    .smem_bytes = BC_SM100_SMEM_BYTES,
    .tmem_cols = BC_SM100_TMEM_COLS,
    .a_rows = BC_SM100_BM,
    .weight_pct = 100,
    .tma = 1,
    .persistent = 1,
    .kernel = {{BC_K_GEMM_SM100_BF16_BF16, BC_K_GEMM_SM100_BF16_F16, BC_K_GEMM_SM100_BF16_F32},
               {BC_K_GEMM_SM100_F16_BF16, BC_K_GEMM_SM100_F16_F16, BC_K_GEMM_SM100_F16_F32}},
}};

static const bc__gemm_arch archs[] = {{10, -1, BC__ROLE_RULE}, {11, -1, BC__ROLE_RULE}};

const bc__gemm_family bc__gemm_family_sm100 = {
    .name = "Blackwell tcgen05",
    .configs = configs,
    .count = 1,
    .archs = archs,
    .arch_count = sizeof archs / sizeof archs[0],
};
