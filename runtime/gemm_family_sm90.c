/* The sm_90a family (wgmma, TMA, mbarrier; kernels_ptx/gemm_sm90.c): one
 * kernel per configuration, types are launch parameters. The weights are
 * each configuration's throughput on a full wave relative to 128x256
 * (README, "GEMM configurations"; measured, kernels_ptx/PERF_NOTES.md). */
#include "gemm_family.h"

#define SM90_CONFIG(nm, id, w, cons, bn_, stages, ks, ar)                                          \
    {                                                                                              \
        .name = "sm90_" nm, .bm = 64u * (cons), .bn = (bn_), .bk = BC_SM90_BK,                     \
        .threads = BC_SM90_THREADS(cons), .smem_bytes = BC_SM90_SMEM_BYTES(cons, bn_, stages, ar), \
        .a_rows = (ar), .max_m = (ar) < 64u * (cons) ? (ar) : 0u,                                  \
        .weight_pct = (w), .tma = 1, .tma_store = !(ks), .split = (ks), .persistent = !(ks),       \
        .pdl = 1,                                                                                  \
        .kernel = {{id, id, id}, {id, id, id}},                                                   \
    }
static const bc__gemm_config configs[] = {
    BC__APPLY(SM90_CONFIG, "128x256", BC_K_GEMM_SM90_128X256, 100, BC_SM90_CFG_128X256),
    BC__APPLY(SM90_CONFIG, "128x256s", BC_K_GEMM_SM90_128X256S, 100, BC_SM90_CFG_128X256S),
    BC__APPLY(SM90_CONFIG, "128x128", BC_K_GEMM_SM90_128X128, 90, BC_SM90_CFG_128X128),
    BC__APPLY(SM90_CONFIG, "128x128s", BC_K_GEMM_SM90_128X128S, 90, BC_SM90_CFG_128X128S),
    BC__APPLY(SM90_CONFIG, "128x64", BC_K_GEMM_SM90_128X64, 60, BC_SM90_CFG_128X64),
    BC__APPLY(SM90_CONFIG, "64x32", BC_K_GEMM_SM90_64X32, 30, BC_SM90_CFG_64X32),
    /* skinny M: the 64x32 tile with stages of 16 A rows (twice the B bytes in flight); within
     * M <= 16 the rule takes it outright, before any tile cost (PERF_NOTES.md) */
    BC__APPLY(SM90_CONFIG, "64x32m16", BC_K_GEMM_SM90_64X32M16, 30, BC_SM90_CFG_64X32M16),
};

static const bc__gemm_arch archs[] = {{9, 0, BC__ROLE_RULE}};

const bc__gemm_family bc__gemm_family_sm90 = {
    .name = "sm_90a wgmma",
    .configs = configs,
    .count = sizeof configs / sizeof configs[0],
    .split_cost_kb = 24, /* measured */
    .archs = archs,
    .arch_count = sizeof archs / sizeof archs[0],
};
