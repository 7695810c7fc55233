/* The Blackwell GEMM's synchronisation, written once: the barrier map and
 * counts, and the walks of the three roles over tiles, TMA stages and TMEM
 * accumulator buffers, expressed against a small set of operations.
 *
 * gemm_sm100.c implements the operations with PTX (mbarrier, TMA, tcgen05)
 * and runs these functions on the GPU; tests/unit/sm100_model.c implements
 * them as a simulation that runs the same functions on the host under
 * random interleavings and checks every hand-off. A change here changes
 * both, so the model keeps describing the kernel.
 *
 * Operations the includer defines (sm100_env is its own struct; every
 * address is a 32-bit shared-memory address):
 *   sm100_op_init(v, bar, count)        mbarrier.init with `count` arrivals
 *   sm100_op_wait(v, bar, parity)       mbarrier.try_wait.parity until it succeeds
 *   sm100_op_expect_arrive(v, bar, n)   mbarrier.arrive.expect_tx(n bytes)
 *   sm100_op_load_a(v, stage, tile, kb, bar)
 *   sm100_op_load_b(v, stage, tile, kb, bar)
 *                                       TMA load of A's (B's) box of k-block kb
 *                                       of `tile` into `stage`, complete_tx on bar
 *   sm100_op_tc_after(v)                tcgen05.fence::after_thread_sync
 *   sm100_op_mma(v, stage, buf, kb, t)  the k16 MMAs of one stage into TMEM
 *                                       accumulator buffer `buf` (kb == 0:
 *                                       overwrite, else accumulate); t is the
 *                                       linear tile index (for the model)
 *   sm100_op_commit(v, bar)             tcgen05.commit: one arrive on bar once
 *                                       every MMA issued so far has completed
 *   sm100_op_converge(v)                reconverge the warp (bar.warp.sync)
 *   sm100_op_drain(v, buf, tile)        tcgen05.ld of this warp's lanes of
 *                                       buffer `buf`, wait::ld, the epilogue
 *                                       math and stores of `tile`
 *   sm100_op_tc_before(v)               tcgen05.fence::before_thread_sync
 *   sm100_op_arrive(v, bar)             mbarrier.arrive (one per thread)
 */
#ifndef BC_KERNELS_SM100_PIPE_H
#define BC_KERNELS_SM100_PIPE_H

#include "gemm_abi.h"
#include "pure.h"
#include "ring.h"
#include "tile_sched.h"

typedef struct sm100_env sm100_env;

BC_DEVICE void sm100_op_init(sm100_env *v, uint32_t bar, uint32_t count);
BC_DEVICE void sm100_op_wait(sm100_env *v, uint32_t bar, uint32_t parity);
BC_DEVICE void sm100_op_expect_arrive(sm100_env *v, uint32_t bar, uint32_t bytes);
BC_DEVICE void sm100_op_load_a(sm100_env *v, uint32_t stage, bc_tile tile, uint32_t kb, uint32_t bar);
BC_DEVICE void sm100_op_load_b(sm100_env *v, uint32_t stage, bc_tile tile, uint32_t kb, uint32_t bar);
BC_DEVICE void sm100_op_tc_after(sm100_env *v);
BC_DEVICE void sm100_op_mma(sm100_env *v, uint32_t stage, uint32_t buf, uint32_t kb, uint32_t t);
BC_DEVICE void sm100_op_commit(sm100_env *v, uint32_t bar);
BC_DEVICE void sm100_op_converge(sm100_env *v);
BC_DEVICE void sm100_op_drain(sm100_env *v, uint32_t buf, bc_tile tile);
BC_DEVICE void sm100_op_tc_before(sm100_env *v);
BC_DEVICE void sm100_op_arrive(sm100_env *v, uint32_t bar);

typedef struct sm100_sched {
    uint32_t tiles_m, tiles_n, k_blocks, group_m;
} sm100_sched;

/* The barriers, 8 bytes each from `bars` (after the stages): full[S],
 * empty[S], tmem_full[2], tmem_empty[2], then the u32 TMEM address slot.
 *   full[s]        1 arrival: the producer's arrive.expect_tx, + the bytes
 *                  of both TMA boxes (complete_tx)
 *   empty[s]       1 arrival: tcgen05.commit after the stage's MMAs
 *   tmem_full[b]   1 arrival: tcgen05.commit after the tile's last MMAs
 *   tmem_empty[b]  BC_SM100_EPI_THREADS arrivals: every epilogue thread, after
 *                  its last tcgen05.ld of the buffer */
BC_DEVICE uint32_t sm100_full(uint32_t bars, uint32_t s) { return bars + 8u * s; }
BC_DEVICE uint32_t sm100_empty(uint32_t bars, uint32_t s) { return bars + 8u * (BC_SM100_STAGES + s); }
BC_DEVICE uint32_t sm100_tmem_full(uint32_t bars, uint32_t b) { return bars + 8u * (2 * BC_SM100_STAGES + b); }
BC_DEVICE uint32_t sm100_tmem_empty(uint32_t bars, uint32_t b)
{
    return bars + 8u * (2 * BC_SM100_STAGES + BC_SM100_ACC_BUFS + b);
}
BC_DEVICE uint32_t sm100_tmem_slot(uint32_t bars) { return bars + 8u * (2 * BC_SM100_STAGES + 2 * BC_SM100_ACC_BUFS); }

BC_DEVICE void sm100_init_barriers(sm100_env *v, uint32_t bars)
{
    for (uint32_t s = 0; s < BC_SM100_STAGES; s++) {
        sm100_op_init(v, sm100_full(bars, s), 1);
        sm100_op_init(v, sm100_empty(bars, s), 1);
    }
    for (uint32_t b = 0; b < BC_SM100_ACC_BUFS; b++) {
        sm100_op_init(v, sm100_tmem_full(bars, b), 1);
        sm100_op_init(v, sm100_tmem_empty(bars, b), BC_SM100_EPI_THREADS);
    }
}

/* 32-column chunks of a tile's row the epilogue loads: the whole 256-column
 * tile, or up to the N edge (1..8; the tile exists, so col0 < n). */
BC_DEVICE uint32_t sm100_epi_chunks(uint32_t n, uint32_t col0)
{
    const uint32_t left = n - col0;
    return left >= BC_SM100_BN ? BC_SM100_BN / 32u : (left + 31u) / 32u;
}

/* Warp 0, one lane: fills stage after stage with A and B of each tile's
 * k-blocks. CTA `cta` of `nctas` takes tiles cta, cta + nctas, ... */
BC_DEVICE void sm100_producer_role(sm100_env *v, const sm100_sched *sc, uint32_t bars, uint32_t cta,
                                   uint32_t nctas)
{
    const uint32_t tiles = sc->tiles_m * sc->tiles_n;
    uint32_t stage = 0, phase = 0;
    for (uint32_t t = cta; t < tiles; t += nctas) {
        const bc_tile tile = bc_tile_of(t, sc->tiles_m, sc->tiles_n, sc->group_m);
        for (uint32_t kb = 0; kb < sc->k_blocks; kb++) {
            sm100_op_wait(v, sm100_empty(bars, stage), bc_ring_empty_parity(phase));
            const uint32_t full = sm100_full(bars, stage);
            sm100_op_expect_arrive(v, full, BC_SM100_STAGE_BYTES);
            sm100_op_load_a(v, stage, tile, kb, full);
            sm100_op_load_b(v, stage, tile, kb, full);
            bc_ring_advance(&stage, &phase, BC_SM100_STAGES);
        }
    }
    /* Tail: wait until the MMA lane's last commit to each empty[] barrier
     * has landed, so no tcgen05.commit arrive reaches this CTA's shared
     * memory after it exits. A stage never filled passes at once. */
    for (uint32_t i = 0; i < BC_SM100_STAGES; i++) {
        sm100_op_wait(v, sm100_empty(bars, stage), bc_ring_empty_parity(phase));
        bc_ring_advance(&stage, &phase, BC_SM100_STAGES);
    }
}

/* Warp 1, one lane: for its u-th tile, takes accumulator buffer u % 2 once
 * the epilogue has freed it, runs the MMAs of every stage into it (commit
 * -> empty[s] frees the stage once they have read it), then commits the
 * buffer to the epilogue. The stage ring advances per use; the accumulator
 * ring is derived from the tile count (the same walk, in the form that
 * compiles to the code this kernel had before it was factored out). */
BC_DEVICE void sm100_mma_role(sm100_env *v, const sm100_sched *sc, uint32_t bars, uint32_t cta, uint32_t nctas)
{
    const uint32_t tiles = sc->tiles_m * sc->tiles_n;
    uint32_t stage = 0, phase = 0, u = 0;
    for (uint32_t t = cta; t < tiles; t += nctas, u++) {
        const uint32_t buf = bc_ring_slot(u, BC_SM100_ACC_BUFS), acc_phase = bc_ring_phase(u, BC_SM100_ACC_BUFS);
        /* the epilogue drained this buffer's previous tile (first use: passes) */
        sm100_op_wait(v, sm100_tmem_empty(bars, buf), bc_ring_empty_parity(acc_phase));
        sm100_op_tc_after(v);
        for (uint32_t kb = 0; kb < sc->k_blocks; kb++) {
            sm100_op_wait(v, sm100_full(bars, stage), bc_ring_full_parity(phase));
            sm100_op_tc_after(v);
            sm100_op_mma(v, stage, buf, kb, t);
            /* empty[stage] fires when these MMAs (and all earlier ones) are done reading it */
            sm100_op_commit(v, sm100_empty(bars, stage));
            bc_ring_advance(&stage, &phase, BC_SM100_STAGES);
        }
        /* every MMA of the tile complete -> the accumulator is readable */
        sm100_op_commit(v, sm100_tmem_full(bars, buf));
    }
}

/* Warps 2-5, every thread: for each tile, waits for its buffer, loads and
 * stores its rows, and hands the buffer back to the MMA lane. */
BC_DEVICE void sm100_epilogue_role(sm100_env *v, const sm100_sched *sc, uint32_t bars, uint32_t cta,
                                   uint32_t nctas)
{
    const uint32_t tiles = sc->tiles_m * sc->tiles_n;
    uint32_t u = 0;
    for (uint32_t t = cta; t < tiles; t += nctas, u++) {
        const bc_tile tile = bc_tile_of(t, sc->tiles_m, sc->tiles_n, sc->group_m);
        const uint32_t buf = bc_ring_slot(u, BC_SM100_ACC_BUFS), acc_phase = bc_ring_phase(u, BC_SM100_ACC_BUFS);
        sm100_op_wait(v, sm100_tmem_full(bars, buf), bc_ring_full_parity(acc_phase));
        sm100_op_converge(v); /* lanes leave the wait loop independently; tcgen05.ld is warp-wide */
        sm100_op_tc_after(v);
        sm100_op_drain(v, buf, tile);
        /* all of this thread's loads of the buffer completed (last wait::ld) */
        sm100_op_tc_before(v);
        sm100_op_arrive(v, sm100_tmem_empty(bars, buf));
    }
}

#endif
