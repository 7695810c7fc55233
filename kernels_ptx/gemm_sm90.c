/* Hopper (sm_90a) GEMM: D = act(alpha * A . B^T + beta * C + bias).
 *
 * Fixed configuration (gemm_abi.h): 128x256x64 CTA tile, 384 threads in three
 * warpgroups. Warpgroup 0 is the producer: one thread issues the TMA loads of
 * A (128x64) and B (256x64), 128-byte swizzled, into a ring of
 * BC_SM90_STAGES stages, each stage completing on a `full` mbarrier.
 * Warpgroups 1 and 2 are consumers: each owns 64 rows of the tile and runs
 * wgmma m64n256k16 over the stage, keeping one wgmma group in flight, and
 * hands the stage back on its `empty` mbarrier (one arrival per consumer
 * warpgroup). The grid is persistent (tile_sched.h). Each output tile is
 * reduced by one CTA in increasing K order: results are bitwise reproducible.

 *
 * Split-K (split_k = S > 1, a cooperative launch): a work unit is a (tile,
 * split) pair covering k-blocks [s * kb_per_split, (s + 1) * kb_per_split);
 * consumers store fp32 partials, then every CTA joins the fixed-order
 * reduction of splitk.h.
 *
 * Edges: TMA zero-fills rows/columns of A and B outside the tensor, so the
 * partial tile's accumulators are exact; the epilogue masks stores at M and N.
 */
#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/fence.h"
#include "ptx/mbarrier.h"
#include "ptx/sreg.h"
#include "ptx/tma.h"
#include "ptx/wgmma.h"
#include "splitk.h"
#include "tile_sched.h"

extern __attribute__((address_space(3))) __attribute__((aligned(1024))) uint8_t bc_sm90_smem[];

#define SM90_CONSUMER_REGS 232
#define SM90_PRODUCER_REGS 40

typedef struct sm90_sched {
    uint32_t tiles_m, tiles_n, k_blocks, group_m;
    uint32_t split_k, kb_per_split;
} sm90_sched;

/* The k-blocks of split s: [*kb0, *kb1). */
BC_DEVICE void sm90_k_range(const sm90_sched *sc, uint32_t s, uint32_t *kb0, uint32_t *kb1)
{
    *kb0 = s * sc->kb_per_split;
    *kb1 = *kb0 + sc->kb_per_split < sc->k_blocks ? *kb0 + sc->kb_per_split : sc->k_blocks;
}

/* Shared-memory map, from the 1024-byte aligned base: the stages, then the
 * full[] and empty[] barriers. */
BC_DEVICE uint32_t sm90_full(uint32_t bars, uint32_t s) { return bars + 8u * s; }
BC_DEVICE uint32_t sm90_empty(uint32_t bars, uint32_t s) { return bars + 8u * (BC_SM90_STAGES + s); }

/* Work units: (tile, split) pairs, the split index running fastest. */
BC_DEVICE uint32_t sm90_units(const sm90_sched *sc) { return sc->tiles_m * sc->tiles_n * sc->split_k; }

BC_DEVICE bc_tile sm90_tile(const sm90_sched *sc, uint32_t unit)
{
    return bc_tile_of(unit / sc->split_k, sc->tiles_m, sc->tiles_n, sc->group_m);
}

BC_DEVICE void sm90_producer(uint64_t tmap_a, uint64_t tmap_b, const sm90_sched *sc, uint32_t base,
                             uint32_t bars)
{
    const uint32_t units = sm90_units(sc);
    uint32_t stage = 0, phase = 0;
    for (uint32_t u = bc_ctaid_x(); u < units; u += bc_nctaid_x()) {
        bc_tile tile = sm90_tile(sc, u);
        uint32_t kb0, kb1;
        sm90_k_range(sc, u % sc->split_k, &kb0, &kb1);
        for (uint32_t kb = kb0; kb < kb1; kb++) {
            bc_mbar_wait(sm90_empty(bars, stage), phase ^ 1u);
            uint32_t full = sm90_full(bars, stage);
            uint32_t sa = base + stage * BC_SM90_STAGE_BYTES;
            int32_t k0 = (int32_t)(kb * BC_SM90_BK);
            bc_mbar_arrive_expect_tx(full, BC_SM90_STAGE_BYTES);
            bc_tma_load_2d(sa, tmap_a, k0, (int32_t)(tile.m * BC_SM90_BM), full);
            bc_tma_load_2d(sa + BC_SM90_A_STAGE_BYTES, tmap_b, k0, (int32_t)(tile.n * BC_SM90_BN), full);
            if (++stage == BC_SM90_STAGES) {
                stage = 0;
                phase ^= 1u;
            }
        }
    }
}

/* Epilogue of consumer warpgroup `c` for one tile, straight from registers. */
BC_DEVICE void sm90_epilogue(const bc_epi *e, const float *acc, bc_tile tile, uint32_t c,
                             uint32_t t128, int out_t)
{
    const uint32_t w = t128 / 32u, l = t128 % 32u;
    const uint32_t row0 = tile.m * BC_SM90_BM + c * 64u + 16u * w + l / 4u;
    const uint32_t col0 = tile.n * BC_SM90_BN + 2u * (l % 4u);
    /* register group j (acc[4j..4j+3]) holds columns 8j + {0,1} of rows r and r+8 */
#pragma unroll
    for (uint32_t j = 0; j < BC_SM90_BN / 8; j++) {
#pragma unroll
        for (uint32_t h = 0; h < 2; h++)
            bc_epi_store_pair(e, row0 + 8u * h, col0 + 8u * j, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1],
                              out_t);
    }
}

/* Split-K: consumer warpgroup `c` stores its rows of the tile's partial. */
BC_DEVICE void sm90_store_partial(const bc_epi *e, uint64_t part, const float *acc, bc_tile tile, uint32_t c,
                                  uint32_t t128)
{
    const uint32_t w = t128 / 32u, l = t128 % 32u;
    const uint32_t row0 = tile.m * BC_SM90_BM + c * 64u + 16u * w + l / 4u;
    const uint32_t col0 = tile.n * BC_SM90_BN + 2u * (l % 4u);
#pragma unroll
    for (uint32_t j = 0; j < BC_SM90_BN / 8; j++) {
#pragma unroll
        for (uint32_t h = 0; h < 2; h++)
            bc_splitk_store_pair(part, e->m, e->n, row0 + 8u * h, col0 + 8u * j, acc[4 * j + 2 * h],
                                 acc[4 * j + 2 * h + 1]);
    }
}

BC_DEVICE void sm90_consumer(const sm90_sched *sc, const bc_epi *e, uint64_t ws, uint32_t base, uint32_t bars,
                             uint32_t c, int f16, int out_t)
{
    const uint32_t units = sm90_units(sc);
    const uint32_t t128 = bc_tid_x() % 128u;
    float acc[128];
    uint32_t stage = 0, phase = 0;
    for (uint32_t u = bc_ctaid_x(); u < units; u += bc_nctaid_x()) {
        const uint32_t split = u % sc->split_k;
        bc_tile tile = sm90_tile(sc, u);
        uint32_t kb0, kb1;
        sm90_k_range(sc, split, &kb0, &kb1);
        uint32_t prev = 0;
        for (uint32_t kb = kb0; kb < kb1; kb++) {
            bc_mbar_wait(sm90_full(bars, stage), phase);
            uint32_t sa = base + stage * BC_SM90_STAGE_BYTES + c * (64u * 128u);
            uint32_t sb = base + stage * BC_SM90_STAGE_BYTES + BC_SM90_A_STAGE_BYTES;
            bc_wgmma_fence();
#pragma unroll
            for (uint32_t ks = 0; ks < BC_SM90_BK / 16; ks++)
                bc_wgmma_m64n256k16(acc, bc_wgmma_desc_sw128(sa + 32u * ks), bc_wgmma_desc_sw128(sb + 32u * ks),
                                    kb != kb0 || ks != 0, f16);
            bc_wgmma_commit();
            /* keep this k-block's group in flight; the previous one is done */
            bc_wgmma_wait(1);
            if (kb > kb0 && t128 == 0)
                bc_mbar_arrive(sm90_empty(bars, prev));
            prev = stage;
            if (++stage == BC_SM90_STAGES) {
                stage = 0;
                phase ^= 1u;
            }
        }
        bc_wgmma_wait(0);
        if (t128 == 0)
            bc_mbar_arrive(sm90_empty(bars, prev));
#pragma unroll
        for (int i = 0; i < 128; i++)
            asm volatile("" : "+f"(acc[i])::"memory"); /* no accumulator read above the wait */
        if (sc->split_k == 1)
            sm90_epilogue(e, acc, tile, c, t128, out_t);
        else
            sm90_store_partial(e, bc_splitk_partial(ws, split, e->m, e->n), acc, tile, c, t128);
    }
    if (sc->split_k == 1)
        return;
    /* every partial is stored: wait for all CTAs, then reduce a slice of D */
    const uint32_t t256 = bc_tid_x() - 128u;
    bc_bar_sync(1, 256);
    if (t256 == 0)
        bc_grid_barrier(ws, bc_nctaid_x());
    bc_bar_sync(1, 256);
    bc_splitk_reduce(e, ws, sc->split_k, bc_ctaid_x() * 256u + t256, bc_nctaid_x() * 256u, out_t);
}

BC_DEVICE void sm90_gemm(uint64_t tmap_a, uint64_t tmap_b, const sm90_sched *sc, const bc_epi *e, uint64_t ws,
                         int f16, int out_t)
{
    uint32_t base = (bc_smem_u32(bc_sm90_smem) + 1023u) & ~1023u;
    uint32_t bars = base + BC_SM90_STAGES * BC_SM90_STAGE_BYTES;
    const uint32_t tid = bc_tid_x();
    if (tid == 0) {
        for (uint32_t s = 0; s < BC_SM90_STAGES; s++) {
            bc_mbar_init(sm90_full(bars, s), 1);
            bc_mbar_init(sm90_empty(bars, s), 2);
        }
        bc_mbar_fence_init();
        bc_tma_prefetch_desc(tmap_a);
        bc_tma_prefetch_desc(tmap_b);
    }
    bc_syncthreads();
    const uint32_t wg = tid / 128u;
    if (wg == 0) {
        bc_setmaxnreg_dec(SM90_PRODUCER_REGS);
        if (tid == 0)
            sm90_producer(tmap_a, tmap_b, sc, base, bars);
    } else {
        bc_setmaxnreg_inc(SM90_CONSUMER_REGS);
        sm90_consumer(sc, e, ws, base, bars, wg - 1u, f16, out_t);
    }
}

/* One kernel per (input type, output type). The parameter is
 * only ever read field by field, and the tensor maps by their
 * parameter-space address, so it never leaves parameter space. */
#define BC_SM90_KERNEL(name, f16, out_t)                                                       \
    BC_KERNEL void name(bc_gemm_params p)                                                          \
    {                                                                                              \
        sm90_sched sc = {p.tiles_m, p.tiles_n, p.k_blocks, p.group_m, p.split_k, p.kb_per_split};  \
        bc_epi e = {p.d, p.c, p.bias, p.m, p.n, p.ldd, p.ldc, p.alpha, p.beta, p.flags};           \
        sm90_gemm(bc_param_addr(#name "_param_0", 0), bc_param_addr(#name "_param_0", 128), &sc, &e, \
                  p.ws, f16, out_t);                                                               \
    }

BC_SM90_KERNEL(bc_gemm_sm90_bf16_bf16, 0, BC_OUT_BF16)
BC_SM90_KERNEL(bc_gemm_sm90_bf16_f16, 0, BC_OUT_F16)
BC_SM90_KERNEL(bc_gemm_sm90_bf16_f32, 0, BC_OUT_F32)
BC_SM90_KERNEL(bc_gemm_sm90_f16_bf16, 1, BC_OUT_BF16)
BC_SM90_KERNEL(bc_gemm_sm90_f16_f16, 1, BC_OUT_F16)
BC_SM90_KERNEL(bc_gemm_sm90_f16_f32, 1, BC_OUT_F32)
