/* The portable family (mma.sync + ldmatrix + cp.async;
 * kernels_ptx/gemm_sm80.c): the sm_80 image serves compute capability 8.x,
 * the sm_120 image 12.x, and the sm_90a image carries the same kernels so
 * that an H100 runs them when a plan names one. One kernel per
 * configuration, types are launch parameters; no TMA, no split-K. The
 * sm_90a image's copies wait for the previous grid (griddepcontrol, sm_90
 * and up) and are launched with programmatic serialization; the sm_80 and
 * sm_120 images' are not.
 *
 * Weights: each configuration's relative throughput on a full wave,
 * predicted from its mma.sync : ldmatrix : cp.async ratio (PERF_NOTES.md,
 * "Portable family") until measurements replace them. */
#include "gemm_family.h"

#define SM80_CONFIG(nm, id, w, pdl_, bm_, bn_, bk_, wm, wn, ks, stages)                               \
    {                                                                                                  \
        .name = "sm80_" nm, .bm = (bm_), .bn = (bn_), .bk = (bk_), .threads = BC_SM80_THREADS(wm, wn, ks), \
        .smem_bytes = BC_SM80_SMEM_BYTES(bm_, bn_, bk_, stages), .weight_pct = (w), .pdl = (pdl_),    \
        .kernel = {{id, id, id}, {id, id, id}},                                                       \
    }
#define SM80_CONFIGS(pdl)                                                                     \
    {                                                                                         \
        BC__APPLY(SM80_CONFIG, "128x256", BC_K_GEMM_SM80_128X256, 100, pdl, BC_SM80_CFG_128X256), \
        BC__APPLY(SM80_CONFIG, "128x128", BC_K_GEMM_SM80_128X128, 90, pdl, BC_SM80_CFG_128X128),  \
        BC__APPLY(SM80_CONFIG, "64x64", BC_K_GEMM_SM80_64X64, 55, pdl, BC_SM80_CFG_64X64),        \
        BC__APPLY(SM80_CONFIG, "64x32", BC_K_GEMM_SM80_64X32, 30, pdl, BC_SM80_CFG_64X32),        \
        BC__APPLY(SM80_CONFIG, "32x32", BC_K_GEMM_SM80_32X32, 17, pdl, BC_SM80_CFG_32X32),        \
    }
static const bc__gemm_config configs[] = SM80_CONFIGS(0);
static const bc__gemm_config configs_sm90a[] = SM80_CONFIGS(1);

static const bc__gemm_arch archs[] = {{8, -1, BC__ROLE_RULE}, {12, -1, BC__ROLE_RULE}};
static const bc__gemm_arch archs_sm90a[] = {{9, 0, BC__ROLE_NAMED}};

const bc__gemm_family bc__gemm_family_sm80 = {
    .name = "portable mma.sync",
    .configs = configs,
    .count = sizeof configs / sizeof configs[0],
    .archs = archs,
    .arch_count = sizeof archs / sizeof archs[0],
};

const bc__gemm_family bc__gemm_family_sm80_sm90a = {
    .name = "portable mma.sync (sm_90a image)",
    .configs = configs_sm90a,
    .count = sizeof configs_sm90a / sizeof configs_sm90a[0],
    .archs = archs_sm90a,
    .arch_count = sizeof archs_sm90a / sizeof archs_sm90a[0],
};
