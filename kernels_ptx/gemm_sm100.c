/* Blackwell (sm_100a/100f/103a/110a) GEMM: D = act(alpha * A . B^T + beta * C + bias).
 * ASSEMBLED AND STATICALLY CHECKED ONLY: no Blackwell GPU has run this code.
 *
 * Fixed configuration (gemm_abi.h, seed 000): tcgen05.mma cta_group::1
 * kind::f16 with instruction shape 128x256x16, CTA tile 128x256x64, a ring of
 * BC_SM100_STAGES A/B stages filled by TMA with 128-byte swizzle (the same
 * tensor maps and boxes as the Hopper kernel), the f32 accumulator in tensor
 * memory. 192 threads, one role per warp (seed 003):
 *
 *   warp 0     TMA producer: one elected lane loads A (128x64) and B (256x64)
 *              into stage s and completes full[s] with the bytes.
 *   warp 1     allocates TMEM (all 512 columns: two 256-column accumulator
 *              buffers), then one elected lane issues the MMAs: 4 x k16 per
 *              stage, tcgen05.commit -> empty[s] frees the stage once those
 *              MMAs have read it, and after the tile's last stage
 *              tcgen05.commit -> tmem_full[b] hands buffer b to the epilogue.
 *              Frees TMEM at the end.
 *   warps 2-5  epilogue: tcgen05.ld 32x32b.x32 sub-tiles of buffer b, the
 *              shared epilogue math (epilogue.h), 16-byte stores; then
 *              arrive on tmem_empty[b] so the MMA warp may overwrite it.
 *
 * With two accumulator buffers the epilogue of tile i runs while the MMAs of
 * tile i+1 fill the other buffer. The grid is persistent (tile_sched.h, the
 * same order as Hopper); each output tile is reduced by one CTA in
 * increasing K order, so results are bitwise reproducible.
 *
 * Synchronisation. The barrier map and counts and the three roles' walks
 * over tiles, stages and accumulator buffers live in sm100_pipe.h, written
 * against a few operations that this file implements with PTX; the host
 * model (tests/unit/sm100_model.c) runs the same walks with simulated
 * barriers, TMA and tcgen05 and checks every hand-off under random
 * interleavings. Every ring is walked as in ring.h (shared with Hopper):
 * slot = use % N, "full" waiters wait for the phase parity, "empty" waiters
 * for its complement, so the producer starts without a handshake.
 *
 * TMEM lane ownership. With M = 128 and cta_group::1, row r of the tile's
 * accumulator is TMEM lane r and column n is column buf*256 + n (ptx-facts
 * U6, CUTLASS tmem_frg). A warp may touch only lanes 32*(warp%4)..+31, so
 * warps 2,3,4,5 own lane quarters 2,3,0,1: warp w's lane l holds tile row
 * 32*(w%4) + l. The lane quarter is also written into the tcgen05.ld
 * address (CUTLASS form; ptx-facts U5 says the hardware may ignore it).
 *
 * Edges: TMA zero-fills A and B outside the tensor (and counts the full box
 * toward complete_tx, U7), so partial tiles accumulate exactly; the
 * epilogue masks rows >= M and columns >= N, as on Hopper.
 */
#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/fence.h"
#include "ptx/mbarrier.h"
#include "ptx/sreg.h"
#include "ptx/tcgen05.h"
#include "ptx/tma.h"
#include "ring.h"
#include "sm100_desc.h"
#include "sm100_pipe.h"
#include "tile_sched.h"

extern __attribute__((address_space(3))) __attribute__((aligned(1024))) uint8_t bc_sm100_smem[];

_Static_assert(BC_SM100_A_STAGE_BYTES % 1024 == 0 && BC_SM100_STAGE_BYTES % 1024 == 0,
               "every A and B stage must start on a 1024-B swizzle-atom boundary");
_Static_assert(BC_SM100_TMEM_COLS == 512, "TMEM allocation must be a power of 2 in [32, 512]");
_Static_assert(8 * (2 * BC_SM100_STAGES + 2 * BC_SM100_ACC_BUFS) + 4 <= BC_SM100_BAR_BYTES, "barrier area too small");
_Static_assert(BC_SM100_BN % 16 == 0 && BC_SM100_BN <= 256, "kind::f16 M=128: N % 16 (the strictest rule, sm100_desc.h)");

#define SM100_UMMA_K 16u /* K of one kind::f16 MMA: 32 bytes of bf16/f16 */

/* What the operations need: one per thread, built once (constants fold). */
struct sm100_env {
    uint64_t tmap_a, tmap_b;
    const bc_epi *e;
    uint32_t base;        /* the stages, 1024-byte aligned */
    uint32_t tmem;        /* TMEM base address of the allocation */
    uint32_t idesc;       /* instruction descriptor of the MMAs */
    uint32_t lane0;       /* epilogue warps: first TMEM lane of the warp */
    uint32_t row_in_tile; /* epilogue threads: the tile row this thread stores */
    int out_t;
};

/* Shared-memory descriptor of a K-major, 128B-swizzled tile at `addr`. */
BC_DEVICE uint64_t sm100_desc(uint32_t addr) { return bc_sm100_smem_desc_sw128(addr, 16u, 1024u); }

/* ---------------------------------------------------------------- operations of sm100_pipe.h */

BC_DEVICE void sm100_op_init(sm100_env *v, uint32_t bar, uint32_t count) { bc_mbar_init(bar, count); }
BC_DEVICE void sm100_op_wait(sm100_env *v, uint32_t bar, uint32_t parity) { bc_mbar_wait(bar, parity); }
BC_DEVICE void sm100_op_expect_arrive(sm100_env *v, uint32_t bar, uint32_t bytes)
{
    bc_mbar_arrive_expect_tx(bar, bytes);
}
BC_DEVICE void sm100_op_load_a(sm100_env *v, uint32_t stage, bc_tile tile, uint32_t kb, uint32_t bar)
{
    bc_tma_load_2d(bc_ring_addr(v->base, stage, BC_SM100_STAGE_BYTES), v->tmap_a, (int32_t)(kb * BC_SM100_BK),
                   (int32_t)(tile.m * BC_SM100_BM), bar);
}
BC_DEVICE void sm100_op_load_b(sm100_env *v, uint32_t stage, bc_tile tile, uint32_t kb, uint32_t bar)
{
    bc_tma_load_2d(bc_ring_addr(v->base, stage, BC_SM100_STAGE_BYTES) + BC_SM100_A_STAGE_BYTES, v->tmap_b,
                   (int32_t)(kb * BC_SM100_BK), (int32_t)(tile.n * BC_SM100_BN), bar);
}
BC_DEVICE void sm100_op_tc_after(sm100_env *v) { bc_tcgen05_fence_after(); }
BC_DEVICE void sm100_op_tc_before(sm100_env *v) { bc_tcgen05_fence_before(); }
BC_DEVICE void sm100_op_commit(sm100_env *v, uint32_t bar) { bc_tcgen05_commit(bar); }
BC_DEVICE void sm100_op_converge(sm100_env *v) { bc_syncwarp(); }
BC_DEVICE void sm100_op_arrive(sm100_env *v, uint32_t bar) { bc_mbar_arrive(bar); }

/* The BK/16 k16 MMAs of one stage into accumulator buffer `buf` (its 256
 * columns). The k16 step is +32 B inside the 128-B swizzled row (base
 * offset stays 0). */
BC_DEVICE void sm100_op_mma(sm100_env *v, uint32_t stage, uint32_t buf, uint32_t kb, uint32_t t)
{
    const uint32_t d = v->tmem + bc_sm100_tmem_addr(0, buf * BC_SM100_BN);
    const uint32_t sa = bc_ring_addr(v->base, stage, BC_SM100_STAGE_BYTES);
    const uint32_t sb = sa + BC_SM100_A_STAGE_BYTES;
#pragma unroll
    for (uint32_t ks = 0; ks < BC_SM100_BK / SM100_UMMA_K; ks++) {
        const uint32_t koff = ks * SM100_UMMA_K * 2u;
        bc_tcgen05_mma_f16(d, sm100_desc(sa + koff), sm100_desc(sb + koff), v->idesc, (kb | ks) != 0);
    }
}

/* ---------------------------------------------------------------- warps 2-5 */

typedef uint32_t sm100_u32x4 __attribute__((ext_vector_type(4)));

BC_DEVICE float sm100_f(uint32_t bits) { return __builtin_bit_cast(float, bits); }

/* 16 bytes of D: columns col .. col+W-1 of `row` (W = 8 for 16-bit output,
 * 4 for f32) from accumulator bits v[0..W-1]. One 16-byte store when the
 * whole group is inside N and 16-byte aligned (always, given the plan's
 * 16-B rule on d and ldd, except at the N edge); else bc_epi_store4, the
 * masked store of Hopper's split-K epilogue. The math is Hopper's either
 * way: alpha * acc, then C, bias and ReLU in bc_epi_finish's order (which
 * bc_epi_store4 repeats with its loads predicated) and bc_pack2. */
BC_DEVICE void sm100_store16(const bc_epi *e, uint32_t row, uint32_t col, const uint32_t *v, int out_t)
{
    const uint32_t w = out_t == BC_OUT_F32 ? 4u : 8u;
    const uint64_t addr = e->d + ((uint64_t)row * e->ldd + col) * (out_t == BC_OUT_F32 ? 4u : 2u);
    float a[8];
#pragma unroll
    for (uint32_t k = 0; k < 8; k++)
        a[k] = k < w ? e->alpha * sm100_f(v[k]) : 0.0f;
    if (col + w <= e->n && (addr & 15u) == 0) {
        sm100_u32x4 q;
        if (out_t == BC_OUT_F32) {
#pragma unroll
            for (uint32_t k = 0; k < 4; k++)
                q[k] = __builtin_bit_cast(uint32_t, bc_epi_finish(e, a[k], row, col + k, out_t));
        } else {
#pragma unroll
            for (uint32_t k = 0; k < 4; k++)
                q[k] = bc_pack2(bc_epi_finish(e, a[2 * k], row, col + 2 * k, out_t),
                                bc_epi_finish(e, a[2 * k + 1], row, col + 2 * k + 1, out_t), out_t);
        }
        *(sm100_u32x4 *)addr = q;
    } else {
#pragma unroll
        for (uint32_t g = 0; g < w; g += 4)
            bc_epi_store4(e, row, col + g, &a[g], out_t);
    }
}

/* Chunk j (32 columns) of this thread's row, when the row is inside M. */
BC_DEVICE void sm100_store_chunk(const bc_epi *e, uint32_t row, uint32_t col, const uint32_t *v, int out_t)
{
    const uint32_t w = out_t == BC_OUT_F32 ? 4u : 8u;
    if (row < e->m) {
#pragma unroll
        for (uint32_t g = 0; g < 32u / w; g++)
            sm100_store16(e, row, col + g * w, &v[g * w], out_t);
    }
}

/* One tile from TMEM: this thread's row, 32 columns per tcgen05.ld into two
 * register buffers (va, vb) in turn, the load of chunk j+1 in flight while
 * chunk j is converted and stored. The loop body handles two chunks so each
 * buffer keeps fixed registers without unrolling all 8 chunks (code size).
 * tcgen05.ld / wait::ld are warp-wide: every branch around them depends only
 * on the tile (the same in all lanes); the per-row mask is on the stores. */
BC_DEVICE void sm100_epilogue_tile(const bc_epi *e, uint32_t taddr, bc_tile tile, uint32_t row_in_tile,
                                   int out_t)
{
    const uint32_t row = tile.m * BC_SM100_BM + row_in_tile;
    const uint32_t col0 = tile.n * BC_SM100_BN;
    const uint32_t chunks = sm100_epi_chunks(e->n, col0); /* 1..8 */
    uint32_t va[32], vb[32];
    bc_tcgen05_ld_32x32b_x32(va, taddr);
#pragma unroll 1
    for (uint32_t j = 0; j < chunks; j += 2) {
        bc_tcgen05_wait_ld();
        bc_tcgen05_pin32(va);
        if (j + 1 < chunks)
            bc_tcgen05_ld_32x32b_x32(vb, taddr + 32u * (j + 1));
        sm100_store_chunk(e, row, col0 + 32u * j, va, out_t);
        if (j + 1 >= chunks)
            break;
        bc_tcgen05_wait_ld();
        bc_tcgen05_pin32(vb);
        if (j + 2 < chunks)
            bc_tcgen05_ld_32x32b_x32(va, taddr + 32u * (j + 2));
        sm100_store_chunk(e, row, col0 + 32u * (j + 1), vb, out_t);
    }
}

/* The epilogue warp's part of the tile in accumulator buffer `buf`. */
BC_DEVICE void sm100_op_drain(sm100_env *v, uint32_t buf, bc_tile tile)
{
    sm100_epilogue_tile(v->e, v->tmem + bc_sm100_tmem_addr(v->lane0, buf * BC_SM100_BN), tile, v->row_in_tile,
                        v->out_t);
}

/* ---------------------------------------------------------------- kernel */

BC_DEVICE void sm100_gemm(uint64_t tmap_a, uint64_t tmap_b, const sm100_sched *sc, const bc_epi *e,
                          uint32_t ab_fmt, int out_t)
{
    const uint32_t pad = ((bc_smem_u32(bc_sm100_smem) + 1023u) & ~1023u) - bc_smem_u32(bc_sm100_smem);
    const uint32_t base = bc_smem_u32(bc_sm100_smem) + pad;
    const uint32_t bars = base + BC_SM100_STAGES * BC_SM100_STAGE_BYTES;
    const uint32_t slot = sm100_tmem_slot(bars);
    const uint32_t warp = bc_tid_x() / 32u;

    sm100_env env = {tmap_a, tmap_b, e, base, 0, 0, 0, 0, out_t};

    if (warp == 0) {
        if (bc_elect_one()) {
            sm100_init_barriers(&env, bars);
            bc_mbar_fence_init();
            bc_tma_prefetch_desc(tmap_a);
            bc_tma_prefetch_desc(tmap_b);
        }
    } else if (warp == 1) {
        /* whole warp, converged. 512 columns: this kernel's ~193 KiB of
         * shared memory already keeps a second CTA off the SM, so taking
         * all of TMEM blocks nobody of ours. */
        bc_tcgen05_alloc(slot, BC_SM100_TMEM_COLS);
        bc_tcgen05_relinquish_alloc_permit();
        bc_tcgen05_fence_before();
    }
    bc_syncthreads();
    bc_tcgen05_fence_after();
    env.tmem = *(volatile __attribute__((address_space(3))) uint32_t *)(bc_sm100_smem + pad + (slot - base));

    if (warp == 0) {
        if (bc_elect_one())
            sm100_producer_role(&env, sc, bars, bc_ctaid_x(), bc_nctaid_x());
    } else if (warp == 1) {
        env.idesc = bc_sm100_idesc_f16(ab_fmt, ab_fmt, 1, BC_SM100_BM, BC_SM100_BN, BC_SM100_K_MAJOR,
                                       BC_SM100_K_MAJOR);
        if (bc_elect_one())
            sm100_mma_role(&env, sc, bars, bc_ctaid_x(), bc_nctaid_x());
    } else {
        env.lane0 = bc_sm100_tmem_lane_base(warp); /* warps 2,3,4,5 -> lanes 64,96,0,32 */
        env.row_in_tile = env.lane0 + bc_tid_x() % 32u;
        sm100_epilogue_role(&env, sc, bars, bc_ctaid_x(), bc_nctaid_x());
    }

    /* Teardown: the epilogue's last wait::ld and tmem_full waits imply every
     * MMA and TMEM load has completed; order them before the barrier, then
     * the allocating warp frees TMEM (converged again). */
    bc_tcgen05_fence_before();
    bc_syncthreads();
    if (warp == 1) {
        bc_tcgen05_fence_after();
        bc_syncwarp();
        bc_tcgen05_dealloc(env.tmem, BC_SM100_TMEM_COLS);
    }
}

/* One kernel per (input type, output type), as on Hopper. The parameter is
 * only read field by field, and the tensor maps by their parameter-space
 * address, so it never leaves parameter space. */
#define BC_SM100_KERNEL(name, ab_fmt, out_t)                                                       \
    BC_KERNEL void name(bc_gemm_params p)                                                          \
    {                                                                                              \
        sm100_sched sc = {p.tiles_m, p.tiles_n, p.k_blocks, p.group_m};                            \
        bc_epi e = {p.d, p.c, p.bias, p.m, p.n, p.ldd, p.ldc, p.alpha, p.beta, p.flags, p.k};            \
        sm100_gemm(bc_param_addr(#name "_param_0", 0), bc_param_addr(#name "_param_0", 128), &sc, &e, \
                   ab_fmt, out_t);                                                                 \
    }

BC_SM100_KERNEL(bc_gemm_sm100_bf16_bf16, BC_SM100_FMT_BF16, BC_OUT_BF16)
BC_SM100_KERNEL(bc_gemm_sm100_bf16_f16, BC_SM100_FMT_BF16, BC_OUT_F16)
BC_SM100_KERNEL(bc_gemm_sm100_bf16_f32, BC_SM100_FMT_BF16, BC_OUT_F32)
BC_SM100_KERNEL(bc_gemm_sm100_f16_bf16, BC_SM100_FMT_F16, BC_OUT_BF16)
BC_SM100_KERNEL(bc_gemm_sm100_f16_f16, BC_SM100_FMT_F16, BC_OUT_F16)
BC_SM100_KERNEL(bc_gemm_sm100_f16_f32, BC_SM100_FMT_F16, BC_OUT_F32)
