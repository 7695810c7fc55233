/* Hopper (sm_90a) GEMM: D = act(alpha * A . B^T + beta * C + bias).
 *
 * One kernel per configuration (gemm_abi.h, BC_SM90_CFG_*): CONS consumer
 * warpgroups of 64 rows each (BM = 64 * CONS), BN columns, BK = 64, a ring of
 * STAGES stages. Input type (bf16/f16) and output type (bf16/f16/f32) are
 * launch parameters: the main loop is compiled once per input type and the
 * branch between them is taken once per tile, the epilogue branches on the
 * output type once per chunk.
 *
 * Warpgroup 0 is the producer: one thread issues the TMA loads of A
 * (BM x 64) and B (BN x 64), 128-byte swizzled, into stage s, completing on
 * full[s]. Warpgroups 1..CONS are consumers: each runs wgmma m64nBNk16 over
 * its 64 rows of the stage, keeps one wgmma group in flight, and hands the
 * stage back on empty[s] (one arrival per consumer). The grid is persistent
 * (tile_sched.h). Each output tile is reduced by one CTA in increasing K
 * order: results are bitwise reproducible. The epilogue (epilogue_sm90.h)
 * stages through shared memory and leaves by TMA store when it can.
 *
 * Split-K (split_k = S > 1, a cooperative launch): a work unit is a (tile,
 * split) pair covering k-blocks [s * kb_per_split, (s + 1) * kb_per_split);
 * consumers store fp32 partials, then every CTA joins the fixed-order
 * reduction of splitk.h.
 *
 * Edges: TMA zero-fills rows/columns of A and B outside the tensor, so a
 * partial tile's accumulators are exact; the epilogue clips at M and N.
 */
#include "epilogue_sm90.h"
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
#define SM90_BAR_SPLITK 1u   /* named barrier of all consumers (split-K) */
#define SM90_BAR_EPI0 2u     /* + c: consumer c's epilogue barrier */

typedef struct sm90_sched {
    uint32_t tiles_m, tiles_n, k_blocks, group_m;
    uint32_t split_k, kb_per_split;
} sm90_sched;

/* The compile-time shape of a configuration. */
typedef struct sm90_shape {
    uint32_t cons, bn, stages;
} sm90_shape;

/* The k-blocks of split s: [*kb0, *kb1). */
BC_DEVICE void sm90_k_range(const sm90_sched *sc, uint32_t s, uint32_t *kb0, uint32_t *kb1)
{
    *kb0 = s * sc->kb_per_split;
    *kb1 = *kb0 + sc->kb_per_split < sc->k_blocks ? *kb0 + sc->kb_per_split : sc->k_blocks;
}

/* Shared-memory map, from the 1024-byte aligned base: the stages, the
 * staging buffers (2 per consumer), then the full[] and empty[] barriers. */
BC_DEVICE uint32_t sm90_stage(sm90_shape g, uint32_t base, uint32_t s)
{
    return base + s * BC_SM90_STAGE_BYTES(g.cons, g.bn);
}
BC_DEVICE uint32_t sm90_epi_buf(sm90_shape g, uint32_t base, uint32_t c)
{
    return sm90_stage(g, base, g.stages) + c * 2u * BC_SM90_EPI_BUF_BYTES;
}
BC_DEVICE uint32_t sm90_full(sm90_shape g, uint32_t base, uint32_t s)
{
    return sm90_epi_buf(g, base, g.cons) + 8u * s;
}
BC_DEVICE uint32_t sm90_empty(sm90_shape g, uint32_t base, uint32_t s)
{
    return sm90_epi_buf(g, base, g.cons) + 8u * (g.stages + s);
}

/* Work units: (tile, split) pairs, the split index running fastest. */
BC_DEVICE uint32_t sm90_units(const sm90_sched *sc) { return sc->tiles_m * sc->tiles_n * sc->split_k; }

BC_DEVICE bc_tile sm90_tile(const sm90_sched *sc, uint32_t unit)
{
    return bc_tile_of(unit / sc->split_k, sc->tiles_m, sc->tiles_n, sc->group_m);
}

BC_DEVICE void sm90_advance(sm90_shape g, uint32_t *stage, uint32_t *phase)
{
    if (++*stage == g.stages) {
        *stage = 0;
        *phase ^= 1u;
    }
}

BC_DEVICE void sm90_producer(sm90_shape g, uint64_t tmap_a, uint64_t tmap_b, const sm90_sched *sc, uint32_t base)
{
    const uint32_t units = sm90_units(sc);
    uint32_t stage = 0, phase = 0;
    for (uint32_t u = bc_ctaid_x(); u < units; u += bc_nctaid_x()) {
        bc_tile tile = sm90_tile(sc, u);
        uint32_t kb0, kb1;
        sm90_k_range(sc, u % sc->split_k, &kb0, &kb1);
        for (uint32_t kb = kb0; kb < kb1; kb++) {
            bc_mbar_wait(sm90_empty(g, base, stage), phase ^ 1u);
            const uint32_t full = sm90_full(g, base, stage), sa = sm90_stage(g, base, stage);
            const int32_t k0 = (int32_t)(kb * BC_SM90_BK);
            bc_mbar_arrive_expect_tx(full, BC_SM90_STAGE_BYTES(g.cons, g.bn));
            bc_tma_load_2d(sa, tmap_a, k0, (int32_t)(tile.m * 64u * g.cons), full);
            bc_tma_load_2d(sa + BC_SM90_A_STAGE_BYTES(g.cons), tmap_b, k0, (int32_t)(tile.n * g.bn), full);
            sm90_advance(g, &stage, &phase);
        }
    }
}

/* The k-blocks [kb0, kb1) of one unit into acc; f16 a compile-time constant. */
BC_DEVICE void sm90_mainloop(sm90_shape g, float *acc, uint32_t base, uint32_t c, uint32_t kb0, uint32_t kb1,
                             uint32_t *stage, uint32_t *phase, const int f16)
{
    const uint32_t t128 = bc_tid_x() % 128u;
    uint32_t prev = 0;
    for (uint32_t kb = kb0; kb < kb1; kb++) {
        bc_mbar_wait(sm90_full(g, base, *stage), *phase);
        const uint32_t sa = sm90_stage(g, base, *stage) + c * (64u * 128u);
        const uint32_t sb = sm90_stage(g, base, *stage) + BC_SM90_A_STAGE_BYTES(g.cons);
        bc_wgmma_fence();
#pragma unroll
        for (uint32_t ks = 0; ks < BC_SM90_BK / 16; ks++)
            bc_wgmma_m64k16(g.bn, acc, bc_wgmma_desc_sw128(sa + 32u * ks), bc_wgmma_desc_sw128(sb + 32u * ks),
                            kb != kb0 || ks != 0, f16);
        bc_wgmma_commit();
        /* keep this k-block's group in flight; the previous one is done */
        bc_wgmma_wait(1);
        if (kb > kb0 && t128 == 0)
            bc_mbar_arrive(sm90_empty(g, base, prev));
        prev = *stage;
        sm90_advance(g, stage, phase);
    }
    bc_wgmma_wait(0);
    if (t128 == 0)
        bc_mbar_arrive(sm90_empty(g, base, prev));
#pragma unroll
    for (uint32_t i = 0; i < g.bn / 2; i++)
        asm volatile("" : "+f"(acc[i])::"memory"); /* no accumulator read above the wait */
}

/* Split-K: consumer warpgroup `c` stores its rows of the tile's partial. */
BC_DEVICE void sm90_store_partial(sm90_shape g, const bc_epi *e, uint64_t part, const float *acc, bc_tile tile,
                                  uint32_t c, uint32_t t128)
{
    const uint32_t w = t128 / 32u, l = t128 % 32u;
    const uint32_t row0 = tile.m * 64u * g.cons + c * 64u + 16u * w + l / 4u;
    const uint32_t col0 = tile.n * g.bn + 2u * (l % 4u);
#pragma unroll
    for (uint32_t j = 0; j < g.bn / 8; j++) {
#pragma unroll
        for (uint32_t h = 0; h < 2; h++)
            bc_splitk_store_pair(part, e->m, e->n, row0 + 8u * h, col0 + 8u * j, acc[4 * j + 2 * h],
                                 acc[4 * j + 2 * h + 1]);
    }
}

BC_DEVICE void sm90_consumer(sm90_shape g, const sm90_sched *sc, const bc_epi *e, uint64_t ws, uint64_t tmap_d,
                             uint32_t base, uint32_t c, int f16, int out_t)
{
    const uint32_t units = sm90_units(sc);
    const uint32_t t128 = bc_tid_x() % 128u;
    float acc[128];
    uint32_t stage = 0, phase = 0, seq = 0;
    bc_sm90_epi_at at = {0, 0, sm90_epi_buf(g, base, c), SM90_BAR_EPI0 + c, t128, tmap_d};
    for (uint32_t u = bc_ctaid_x(); u < units; u += bc_nctaid_x()) {
        const uint32_t split = u % sc->split_k;
        bc_tile tile = sm90_tile(sc, u);
        uint32_t kb0, kb1;
        sm90_k_range(sc, split, &kb0, &kb1);
        if (f16)
            sm90_mainloop(g, acc, base, c, kb0, kb1, &stage, &phase, 1);
        else
            sm90_mainloop(g, acc, base, c, kb0, kb1, &stage, &phase, 0);
        if (sc->split_k == 1) {
            at.row0 = tile.m * 64u * g.cons + c * 64u;
            at.col0 = tile.n * g.bn;
            bc_sm90_epilogue(e, acc, g.bn, out_t, &at, &seq);
        } else {
            sm90_store_partial(g, e, bc_splitk_partial(ws, split, e->m, e->n), acc, tile, c, t128);
        }
    }
    if (t128 == 0)
        bc_bulk_wait_all(); /* the last TMA stores have read their staging buffers */
    if (sc->split_k == 1)
        return;
    /* every partial is stored: wait for all CTAs, then reduce a slice of D */
    const uint32_t nthr = 128u * g.cons, tc = bc_tid_x() - BC_SM90_PRODUCER_THREADS;
    bc_bar_sync(SM90_BAR_SPLITK, nthr);
    if (tc == 0)
        bc_grid_barrier(ws, bc_nctaid_x());
    bc_bar_sync(SM90_BAR_SPLITK, nthr);
    bc_splitk_reduce(e, ws, sc->split_k, bc_ctaid_x() * nthr + tc, bc_nctaid_x() * nthr, out_t);
}

BC_DEVICE void sm90_gemm(sm90_shape g, uint64_t tmap_a, uint64_t tmap_b, uint64_t tmap_d, const sm90_sched *sc,
                         const bc_epi *e, uint64_t ws, int f16, int out_t)
{
    const uint32_t base = (bc_smem_u32(bc_sm90_smem) + 1023u) & ~1023u;
    const uint32_t tid = bc_tid_x();
    if (tid == 0) {
        for (uint32_t s = 0; s < g.stages; s++) {
            bc_mbar_init(sm90_full(g, base, s), 1);
            bc_mbar_init(sm90_empty(g, base, s), g.cons);
        }
        bc_mbar_fence_init();
        bc_tma_prefetch_desc(tmap_a);
        bc_tma_prefetch_desc(tmap_b);
        if (e->flags & BC_GEMM_F_TMA_STORE)
            bc_tma_prefetch_desc(tmap_d);
    }
    bc_syncthreads();
    const uint32_t wg = tid / 128u;
    if (wg == 0) {
        bc_setmaxnreg_dec(SM90_PRODUCER_REGS);
        if (tid == 0)
            sm90_producer(g, tmap_a, tmap_b, sc, base);
    } else {
        bc_setmaxnreg_inc(SM90_CONSUMER_REGS);
        sm90_consumer(g, sc, e, ws, tmap_d, base, wg - 1u, f16, out_t);
    }
}

/* One kernel per configuration. The parameter is only ever read field by
 * field, and the tensor maps by their parameter-space address, so it never
 * leaves parameter space. */
#define BC__SM90_KERNEL(name, cons, bn, stages)                                                    \
    BC_KERNEL void name(bc_gemm_params p)                                                          \
    {                                                                                              \
        const sm90_shape g = {cons, bn, stages};                                                   \
        sm90_sched sc = {p.tiles_m, p.tiles_n, p.k_blocks, p.group_m, p.split_k, p.kb_per_split};  \
        bc_epi e = {p.d, p.c, p.bias, p.m, p.n, p.ldd, p.ldc, p.alpha, p.beta, p.flags};           \
        sm90_gemm(g, bc_param_addr(#name "_param_0", 0), bc_param_addr(#name "_param_0", 128),     \
                  bc_param_addr(#name "_param_0", 256), &sc, &e, p.ws, p.ab_type == 1, (int)p.d_type); \
    }
#define BC_SM90_KERNEL(name, cfg) BC__APPLY(BC__SM90_KERNEL, name, cfg)

_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_128X256) <= 232448, "128x256: over the 227 KiB opt-in limit");
_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_128X128) <= 232448, "128x128: over the 227 KiB opt-in limit");
_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_128X64) <= 232448, "128x64: over the 227 KiB opt-in limit");
_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_64X32) <= 232448, "64x32: over the 227 KiB opt-in limit");

BC_SM90_KERNEL(bc_gemm_sm90_128x256, BC_SM90_CFG_128X256)
BC_SM90_KERNEL(bc_gemm_sm90_128x128, BC_SM90_CFG_128X128)
BC_SM90_KERNEL(bc_gemm_sm90_128x64, BC_SM90_CFG_128X64)
BC_SM90_KERNEL(bc_gemm_sm90_64x32, BC_SM90_CFG_64X32)
