/* Hopper (sm_90a) resident executor: one persistent kernel per whole-tile
 * GEMM configuration that runs a fixed program (resident_abi.h) each time
 * the host rings its doorbell, with no launch per step.
 *
 * Included by image_sm90.c after gemm_sm90.c: the GEMM work is the launched
 * kernel's own per-tile functions (sm90_produce_tile, sm90_consume_tile: the
 * same main loop and epilogue), so each output tile is reduced and rounded
 * exactly as a launch of the plan does it (byte-identical results). The
 * shared-memory map is the configuration's, followed by the operation infos
 * (copied from the program once per launch), a 64-byte control block and
 * the CTA's phase plan (one 16-byte entry per phase, worked out once per
 * launch: res_plan_phases).
 *
 * A step:
 *   1. CTA 0's thread 0 polls the doorbell (ld.acquire.sys on mapped pinned
 *      memory) until it holds a new sequence number or the stop bit, and
 *      releases it to the other CTAs through the sync block's step word
 *      (st.release.gpu); their thread 0 polls that word (ld.acquire.gpu).
 *      Idle polling spins for spin_ns after a step, then sleeps between
 *      polls, doubling up to max_sleep_ns.
 *   2. The operations run in order, in phases: an operation flagged
 *      `barrier` starts a new phase after a grid-wide barrier. Within a
 *      phase, copies run first over every thread of the grid, then the
 *      GEMMs' work items, concatenated into one list that CTA b walks from
 *      b in strides of the grid size. A whole-tile GEMM's item is a tile; a
 *      GEMV plan's is one of its launched CTAs, run by eight warps
 *      (resident_gemv.c); a
 *      split-K GEMM's tile is S items, one per share of K, whose partials
 *      meet in global memory and are added by the tile's last arrival
 *      (res_split_item): no CTA waits for another, so any grid size runs
 *      any item count. When the phase before a barrier does not
 *      write a GEMM's B (weights: prefetch_b), the producer loads the B
 *      halves of its first tile's first stages before the barrier and their
 *      A halves after it (one expect-tx covers both), so the weights' load
 *      overlaps the barrier.
 *   3. Every CTA arrives once more; CTA 0 waits for all and writes the step's
 *      sequence number to the completion word (st.release.sys).
 *
 * The step's hand-over, the grid barrier and the proxy fences around it:
 * resident_sync.c.
 *
 * The grid is launched cooperatively with one CTA per SM, so every CTA is
 * resident and the barrier cannot deadlock.
 */
#include "ptx/scoped.h"
#include "resident_abi.h"

typedef __attribute__((address_space(3))) bc_resident_opinfo res_info_s;
typedef __attribute__((address_space(3))) bc_u32x4 res_v4_s;

/* Loop state of thread 0 (and the word it hands to its CTA), kept in shared
 * memory so that it takes no registers in the consumers' code. */
typedef struct res_ctl {
    uint64_t word;       /* the doorbell value of the step in hand */
    uint64_t seen;       /* the last step run */
    uint64_t syncs;      /* grid barriers and arrivals so far */
    uint64_t step_word;  /* the last step word read (CTAs other than 0) */
    uint64_t idle_since; /* globaltimer when the last step ended */
    uint32_t split_last; /* the consumers' split-K work item in hand arrived last for its tile */
    uint32_t tma;        /* the program has tile GEMMs: TMA loads and stores, hence proxy fences */
} res_ctl;
typedef __attribute__((address_space(3))) res_ctl res_ctl_s;

_Static_assert(sizeof(res_ctl) <= 64, "resident control block");

/* One phase of the program as this CTA walks it, worked out once per
 * launch (res_plan_phases) so that a step reads it instead of scanning the
 * operations and dividing out its tile coordinates: the operations
 * [j0, j1), whether a grid barrier opens the phase (RES_PH_BARRIER) and
 * whether it holds copies (RES_PH_COPY) or tile GEMMs (RES_PH_TMA: TMA loads
 * and maybe stores, the async proxy), the tiles of its GEMMs, and when
 * the CTA has one (RES_PH_FIRST: ctaid < tiles) the operation that owns
 * tile ctaid and that tile's coordinates. */
typedef struct res_phase {
    uint8_t j0, j1, flags, first_j;
    uint32_t tiles;
    uint32_t tm, tn;
} res_phase;
typedef __attribute__((address_space(3))) res_phase res_phase_s;
#define RES_PH_BARRIER 1u
#define RES_PH_COPY 2u
#define RES_PH_FIRST 4u
#define RES_PH_TMA 8u
_Static_assert(sizeof(res_phase) == 16 && BC_RESIDENT_MAX_OPS < 256, "res_phase layout");
_Static_assert(BC_RESIDENT_SMEM_EXTRA == 96 * BC_RESIDENT_MAX_OPS + 64 + 16 * BC_RESIDENT_MAX_OPS,
               "the shared-memory map: infos, control block, phases");
/* the epilogue reads its parameters in place from the shared copy */
_Static_assert(__builtin_offsetof(bc_resident_opinfo, d) == __builtin_offsetof(bc_epi, d) &&
                   __builtin_offsetof(bc_resident_opinfo, c) == __builtin_offsetof(bc_epi, c) &&
                   __builtin_offsetof(bc_resident_opinfo, bias) == __builtin_offsetof(bc_epi, bias) &&
                   __builtin_offsetof(bc_resident_opinfo, m) == __builtin_offsetof(bc_epi, m) &&
                   __builtin_offsetof(bc_resident_opinfo, n) == __builtin_offsetof(bc_epi, n) &&
                   __builtin_offsetof(bc_resident_opinfo, ldd) == __builtin_offsetof(bc_epi, ldd) &&
                   __builtin_offsetof(bc_resident_opinfo, ldc) == __builtin_offsetof(bc_epi, ldc) &&
                   __builtin_offsetof(bc_resident_opinfo, alpha) == __builtin_offsetof(bc_epi, alpha) &&
                   __builtin_offsetof(bc_resident_opinfo, beta) == __builtin_offsetof(bc_epi, beta) &&
                   __builtin_offsetof(bc_resident_opinfo, flags) == __builtin_offsetof(bc_epi, flags),
               "bc_resident_opinfo must begin with bc_epi's fields");

/* Diagnostic builds only (-DBC_RES_TRACE, tools/res_trace.sh; never
 * shipped): the calling thread stamps %globaltimer and %clock64 as event ev of
 * this CTA for one step in eight, after the sync block (resident_abi.h).
 * Events: 0 the step seen, 1 the consumers released, 2 + 6p.. 7 + 6p
 * phase p (barrier entered, stores published, barrier left, first stage
 * landed, first tile done, its loads issued; for a GEMV item: warp 0's
 * loads landed, the item done, the partials in shared memory; phases past
 * the fourth share the fourth's), 26-28 the step's end (published,
 * arrived, all arrived), 29 the step's proxy fence done (programs with
 * tile GEMMs only), 30 a phase's first GEMV item entered and 31 a
 * barrier's proxy fence done (before a phase with tile GEMMs; the step's
 * last such item and barrier: later ones overwrite). BC_RES_TRACE_FINE:
 * resident_gemv.c's events 20-25, in place of phase 3's (programs of at
 * most three phases). */
#if (defined(BC_RES_TRACE_TWICE) || defined(BC_RES_TRACE_FINE)) && !defined(BC_RES_TRACE)
#error "BC_RES_TRACE_TWICE (GEMV work run twice) and BC_RES_TRACE_FINE (more stamps): BC_RES_TRACE builds only"
#endif
#ifdef BC_RES_TRACE
BC_DEVICE void res_trace(uint64_t sync, uint64_t step, uint32_t ev)
{
    uint64_t clk;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(clk));
    const uint64_t t = bc_globaltimer_ns();
    const uint64_t a = sync + 256u + (((step & 7u) * 132u + bc_ctaid_x()) * 32u + ev) * 16u;
    asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(a), "l"(t), "l"(clk) : "memory");
}
#define RES_TRACE(sync, step, ev) res_trace(sync, step, ev)
#else
#define RES_TRACE(sync, step, ev) ((void)0)
#endif

/* Where the resident part of shared memory starts: after the barriers. */
BC_DEVICE uint32_t res_smem(sm90_shape g, uint32_t base) { return sm90_empty(g, base, g.stages); }

BC_DEVICE const res_info_s *res_info(sm90_shape g, uint32_t base, uint32_t j)
{
    return (const res_info_s *)(uintptr_t)(res_smem(g, base) + 96u * j);
}

BC_DEVICE res_ctl_s *res_ctl_of(sm90_shape g, uint32_t base)
{
    return (res_ctl_s *)(uintptr_t)(res_smem(g, base) + 96u * BC_RESIDENT_MAX_OPS);
}

BC_DEVICE res_phase_s *res_phase_of(sm90_shape g, uint32_t base, uint32_t p)
{
    return (res_phase_s *)(uintptr_t)(res_smem(g, base) + 96u * BC_RESIDENT_MAX_OPS + 64u + 16u * p);
}

/* The ring position (producer and consumers) and the count of staging
 * buffers used (consumers): per thread, across tiles, operations and steps. */
typedef struct res_state {
    uint32_t stage, phase, seq;
} res_state;

#include "resident_sync.c"

/* A copy: 16-byte pieces spread over every thread of the grid; strong at
 * system scope since either side may be host memory. */
BC_DEVICE void res_copy(const res_info_s *op, uint32_t tid)
{
    const uint64_t nthr = (uint64_t)bc_nctaid_x() * bc_ntid_x();
    const uint64_t dst = op->d, src = op->c, bytes = op->bias;
    for (uint64_t i = ((uint64_t)bc_ctaid_x() * bc_ntid_x() + tid) * 16u; i < bytes; i += nthr * 16u)
        bc_st_relaxed_sys_v4(dst + i, bc_ld_relaxed_sys_v4(src + i));
}

/* The operation of phase [j0, j1) that owns tile t of the phase's list. */
BC_DEVICE uint32_t res_owner(sm90_shape g, uint32_t base, uint32_t j0, uint32_t j1, uint32_t t)
{
    uint32_t j = j0;
    for (uint32_t i = j0; i < j1; i++) {
        const res_info_s *op = res_info(g, base, i);
        if (op->kind != BC_RESIDENT_OP_COPY && t >= op->tile0)
            j = i;
    }
    return j;
}

/* What the producer loaded early for its first tile of a phase: the B
 * halves of k-blocks [0, kbs) into the ring from stage0. */
typedef struct res_early {
    uint32_t kb0, kbs, stage0;
} res_early;

/* The k-blocks [*kb0, *kb1) of work item `it` (counted from the GEMM's
 * first) of GEMM op: all of them for a whole tile; with split S, item
 * it % S of its tile takes [kb*r/S, kb*(r+1)/S), as the launched split
 * kernel's CTA of rank r does. */
BC_DEVICE void res_k_range(const res_info_s *op, uint32_t it, uint32_t *kb0, uint32_t *kb1)
{
    const uint32_t s = op->split, kb = op->k_blocks;
    if (s <= 1) {
        *kb0 = 0, *kb1 = kb;
        return;
    }
    const uint32_t r = it % s;
    *kb0 = kb * r / s;
    *kb1 = kb * (r + 1u) / s;
}

/* The tile of work item `it` of GEMM op. */
BC_DEVICE bc_tile res_tile_of(const res_info_s *op, uint32_t it)
{
    const uint32_t t = op->split <= 1 ? it : it / op->split;
    return bc_tile_of(t, op->tiles_m, op->tiles_n, op->group_m);
}

/* Producer, before the barrier that opens phase ph: the B halves of its
 * first tile's first stages, if that tile's B may be read early. fence: no
 * proxy fence has followed the last barrier's acquire (the phase it opened
 * had no tile GEMM); B may have been written before that barrier, so one
 * goes before these loads. */
BC_DEVICE res_early res_load_b_early(sm90_shape g, uint64_t program, uint32_t base, const res_phase_s *ph,
                                     res_state *s, uint32_t fence)
{
    res_early early = {0, 0, s->stage};
    if (!(ph->flags & RES_PH_FIRST))
        return early;
    const uint32_t j = ph->first_j;
    const res_info_s *op = res_info(g, base, j);
    if (op->kind != BC_RESIDENT_OP_GEMM || !op->prefetch_b)
        return early;
    if (fence)
        bc_fence_proxy_async_global();
    const bc_tile tile = {ph->tm, ph->tn};
    const uint64_t tmap_b = program + (uint64_t)j * sizeof(bc_resident_op) + 128u;
    uint32_t kb1;
    res_k_range(op, bc_ctaid_x() - op->tile0, &early.kb0, &kb1);
    early.kbs = kb1 - early.kb0 < g.stages ? kb1 - early.kb0 : g.stages;
    for (uint32_t kb = early.kb0; kb < early.kb0 + early.kbs; kb++) {
        bc_mbar_wait(sm90_empty(g, base, s->stage), bc_ring_empty_parity(s->phase));
        const uint32_t full = sm90_full(g, base, s->stage);
        bc_mbar_arrive_expect_tx(full, BC_SM90_STAGE_BYTES(g.ar, g.bn)); /* A's bytes come after the barrier */
        bc_tma_load_2d(sm90_stage(g, base, s->stage) + BC_SM90_A_STAGE_BYTES(g.ar), tmap_b,
                       (int32_t)(kb * BC_SM90_BK), (int32_t)(tile.n * g.bn), full);
        sm90_advance(g, &s->stage, &s->phase);
    }
    return early;
}

/* Producer, after the barrier: the A halves of the stages loaded early. */
BC_DEVICE void res_load_a_late(sm90_shape g, uint64_t tmap_a, bc_tile tile, uint32_t base, res_early early)
{
    uint32_t stage = early.stage0, phase = 0;
    for (uint32_t kb = early.kb0; kb < early.kb0 + early.kbs; kb++) {
        bc_tma_load_2d(sm90_stage(g, base, stage), tmap_a, (int32_t)(kb * BC_SM90_BK),
                       (int32_t)(tile.m * 64u * g.cons), sm90_full(g, base, stage));
        sm90_advance(g, &stage, &phase);
    }
}

#define RES_BAR_SPLIT 4u /* the consumers of a CTA, around a split-K arrival */
#define RES_FIN_MAX 2u /* finish groups a thread has in flight at once (res_split_item; 4 spill in 64x32) */

/* Consumer c's split-K work item `it` of GEMM op (one-warpgroup kernels
 * only: the skinny and narrow tiles): the main loop over its k-blocks, its
 * partial (the stage's A rows) into its slot, then one arrival on the
 * tile's counter for the CTA. The last
 * of the tile's S arrivals adds the slots 0..S-1 in that order from 0.0f,
 * scales by alpha and stores through the generic epilogue: the arithmetic
 * of bc_splitk_finish_rows, so the bits of the launched split plan,
 * whichever item arrived last. That CTA resets the counter for the next
 * step (the step's end orders it before the next step's arrivals). */
BC_DEVICE void res_split_item(sm90_shape g, const res_info_s *op, float *acc, uint32_t it, bc_tile tile, uint32_t base,
                              uint32_t c, uint64_t sync, res_state *st)
{
    const uint32_t s = op->split, ti = it / s, r = it % s, nthr = 128u * g.cons;
    const uint32_t tc = bc_tid_x() - BC_SM90_PRODUCER_THREADS;
    uint32_t kb0, kb1;
    res_k_range(op, it, &kb0, &kb1);
    /* the bias lines the finish reads, into L1 now: if this item arrives last, its epilogue's bias
     * loads then wait for no L2 round trip after the slots' (PERF_NOTES.md, change 74) */
    bc_sm90_prefetch_bias((const bc_epi *)op, g.bn, tile.n * g.bn, tc % 128u, (int)op->d_type);
    if (op->ab_type == 1)
        sm90_mainloop(g, acc, base, c, kb0, kb1, &st->stage, &st->phase, 1);
    else
        sm90_mainloop(g, acc, base, c, kb0, kb1, &st->stage, &st->phase, 0);
    const uint32_t slot_bytes = g.ar * g.bn * 4u;
    const uint64_t slots = sync + op->ws_off + (uint64_t)ti * s * slot_bytes;
#pragma unroll
    for (uint32_t h = 0; h < 2; h++) {
        const uint32_t row = bc_splitk_frag_row(c, tc % 128u, h);
        if (row >= g.ar) /* rows past the stage's A rows: never stored */
            continue;
        const uint64_t dst = slots + r * slot_bytes + (row * g.bn + bc_splitk_frag_col(tc % 128u)) * 4u;
#pragma unroll
        for (uint32_t j = 0; j < g.bn / 8; j++)
            bc_st_global_v2f32(dst + 32u * j, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
    res_ctl_s *ctl = res_ctl_of(g, base);
    bc_bar_sync(RES_BAR_SPLIT, nthr); /* every partial row written */
    if (tc == 0) {
        const uint64_t ctr = sync + BC_RESIDENT_SYNC_CTR + 4u * (op->ctr0 + ti);
        const uint32_t last = bc_atom_add_acq_rel_gpu_u32(ctr, 1u) + 1u == s;
        if (last)
            bc_st_relaxed_gpu_u32(ctr, 0u);
        ctl->split_last = last;
    }
    bc_bar_sync(RES_BAR_SPLIT, nthr);
    if (!ctl->split_last)
        return;
    const uint32_t row0 = tile.m * 64u * g.cons, col0 = tile.n * g.bn, groups = g.ar * (g.bn / 4u);
    /* the groups a thread finishes, `per` at a time (1 in 64x32m16, 2 of 4 in 64x32: constants once
     * inlined), every slot of each loaded before the first is added */
    const uint32_t per = (groups + nthr - 1u) / nthr < RES_FIN_MAX ? (groups + nthr - 1u) / nthr : RES_FIN_MAX;
    for (uint32_t q0 = tc; q0 < groups; q0 += per * nthr) {
        bc_f32x4 p[RES_FIN_MAX][BC_RESIDENT_MAX_SPLIT];
#pragma unroll
        for (uint32_t gi = 0; gi < per; gi++) {
            const uint32_t q = q0 + gi * nthr, row = q / (g.bn / 4u), c4 = 4u * (q % (g.bn / 4u));
            const uint64_t src0 = slots + (row * g.bn + c4) * 4u;
#pragma unroll
            for (uint32_t i = 0; i < BC_RESIDENT_MAX_SPLIT; i++)
                p[gi][i] = bc_ld_cg_v4f32_if(src0 + (uint64_t)i * slot_bytes, q < groups && i < s);
        }
#pragma unroll
        for (uint32_t gi = 0; gi < per; gi++) {
            const uint32_t q = q0 + gi * nthr, row = q / (g.bn / 4u), c4 = 4u * (q % (g.bn / 4u));
            if (q >= groups)
                break;
            float v[4] = {0.0f, 0.0f, 0.0f, 0.0f}; /* the slots in order, from 0.0f */
#pragma unroll
            for (uint32_t i = 0; i < BC_RESIDENT_MAX_SPLIT; i++)
                if (i < s)
                    v[0] += p[gi][i].x, v[1] += p[gi][i].y, v[2] += p[gi][i].z, v[3] += p[gi][i].w;
#pragma unroll
            for (uint32_t k = 0; k < 4; k++)
                v[k] *= op->alpha;
            bc_epi_store4((const bc_epi *)op, row0 + row, col0 + c4, v, (int)op->d_type);
        }
    }
}

#include "resident_gemv.c"

/* This thread's part of the GEMM work items of phase ph: the first from
 * the phase plan, any further ones worked out here. */
BC_DEVICE void res_gemm_tiles(sm90_shape g, uint64_t program, uint32_t base, const res_phase_s *ph, res_state *s,
                              res_early early, uint64_t sync, uint32_t tev, uint32_t tid)
{
    const uint32_t wg = tid / 128u, gt0 = res_gemv_thread0(g);
    if (wg == 0 && tid != 0 && gt0 != 0) /* the producer's other threads: GEMV items only, one-warpgroup kernels */
        return;
    const uint32_t tiles = ph->tiles;
    for (uint32_t t = bc_ctaid_x(); t < tiles; t += bc_nctaid_x()) {
        const int first = t == bc_ctaid_x();
        const uint32_t j = first ? ph->first_j : res_owner(g, base, ph->j0, ph->j1, t);
        const res_info_s *op = res_info(g, base, j);
        const uint32_t it = t - op->tile0;
        if (op->kind == BC_RESIDENT_OP_GEMV) { /* eight warps' (resident_gemv.c) */
#ifdef BC_RES_TRACE_TWICE /* diagnostic builds: a whole first item run twice, the stamps the second run's (not
                            where its second run would read its first's D as C) */
            if (first && op->split == 1 && (op->beta == 0.0f || op->c != op->d) && RES_RUNS_GEMV(g) && tid >= gt0 &&
                tid < gt0 + BC_GEMV_THREADS)
                res_gemv_item(g, op, program + (uint64_t)j * sizeof(bc_resident_op), it, base, sync, tid - gt0, tev);
#endif
            if (RES_RUNS_GEMV(g) && tid >= gt0 && tid < gt0 + BC_GEMV_THREADS)
                res_gemv_item(g, op, program + (uint64_t)j * sizeof(bc_resident_op), it, base, sync, tid - gt0,
                              first ? tev : 0u);
            if (first && tid == gt0)
                RES_TRACE(sync, res_ctl_of(g, base)->word, tev + 4u);
            continue;
        }
        if (wg == 0 && tid >= 32u) /* the producer's other warps (one-warpgroup kernels): GEMV items only */
            continue;
        const bc_tile tile = first ? (bc_tile){ph->tm, ph->tn} : res_tile_of(op, it);
        const uint64_t maps = program + (uint64_t)j * sizeof(bc_resident_op);
        /* the epilogue reads its parameters from shared memory as it goes
         * (the launched kernel reads them from parameter space) */
        const bc_epi *e = (const bc_epi *)op;
        if (wg == 0) {
            if (tid == 0) {
                uint32_t kb0, kb1;
                res_k_range(op, it, &kb0, &kb1);
                res_load_a_late(g, maps, tile, base, early); /* the first item's stages loaded early, if any */
                sm90_produce_tile(g, maps, maps + 128u, maps + 512u, e, tile, kb0 + early.kbs, kb1, base,
                                  op->d_type == BC_OUT_F32 ? 4u : 2u, &s->stage, &s->phase);
                if (first)
                    RES_TRACE(sync, res_ctl_of(g, base)->word, tev + 5u);
                early.kbs = 0;
            }
            if (gt0 == 0) /* warp 0's other lanes wait for the loads' thread: the warp enters a later GEMV item
                             converged (its mma.sync and barriers) */
                bc_syncwarp();
            continue;
        }
        const uint32_t c = wg - 1u;
        float acc[128]; /* per tile: its old values are dead between tiles */
#ifdef BC_RES_TRACE
        if (t == bc_ctaid_x() && tid == 128u) {
            bc_mbar_wait(sm90_full(g, base, s->stage), bc_ring_full_parity(s->phase));
            RES_TRACE(sync, res_ctl_of(g, base)->word, tev + 3u);
        }
#endif
        if (g.cons == 1u && op->split > 1) { /* the host allows split plans on one-warpgroup kernels only */
            res_split_item(g, op, acc, it, tile, base, c, sync, s);
        } else {
            bc_sm90_epi_at at = {0, 0, sm90_epi_buf(g, base, c), SM90_BAR_EPI0 + c, tid % 128u, maps + 256u,
                                 c, sm90_stage(g, base, 0), 0, BC_SM90_STAGE_BYTES(g.ar, g.bn), g.stages};
            sm90_consume_tile(g, e, acc, &at, tile, 0, op->k_blocks, base, c, op->ab_type == 1, (int)op->d_type,
                              &s->stage, &s->phase, &s->seq, (const sm90_skfin *)0);
        }
        if (t == bc_ctaid_x() && tid == 128u)
            RES_TRACE(sync, res_ctl_of(g, base)->word, tev + 4u);
    }
}

/* One step of the program; returns whether its last phase had tile GEMMs
 * (RES_PH_TMA). The proxy fences are only where TMA accesses meet generic
 * ones: a program of GEMV plans and copies has none. */
BC_DEVICE uint32_t res_step(sm90_shape g, uint64_t program, uint32_t base, uint32_t nops, uint64_t sync,
                            res_state *s, res_ctl_s *ctl, uint32_t tid)
{
    if (tid == 0 && ctl->tma) { /* the TMA loads below read what the host copied in, or the last step stored */
        bc_fence_proxy_async_global();
        RES_TRACE(sync, ctl->word, 29u);
    }
    uint32_t tma = 0;             /* the phase before had tile GEMMs */
    uint32_t fenced = ctl->tma;   /* thread 0 has fenced the proxies since its last acquire */
    for (uint32_t p = 0, j0 = 0, tev = 2u; j0 < nops; p++, tev = tev < 20u ? tev + 6u : tev) {
        const res_phase_s *ph = res_phase_of(g, base, p);
        const uint32_t j1 = ph->j1;
        res_early early = {0, 0, 0};
        if (ph->flags & RES_PH_BARRIER) {
            if (tid == 0)
                early = res_load_b_early(g, program, base, ph, s, !fenced);
            if (tid == 0)
                RES_TRACE(sync, ctl->word, tev);
            res_grid_sync(ctl, sync, tev, tma, ph->flags & RES_PH_TMA, tid);
            fenced = ph->flags & RES_PH_TMA;
        }
        tma = ph->flags & RES_PH_TMA;
        if (ph->flags & RES_PH_COPY)
            for (uint32_t j = j0; j < j1; j++)
                if (res_info(g, base, j)->kind == BC_RESIDENT_OP_COPY)
                    res_copy(res_info(g, base, j), tid);
        if (ph->tiles)
            res_gemm_tiles(g, program, base, ph, s, early, sync, tev, tid);
        j0 = j1;
    }
    return tma;
}

/* Thread 0, once per launch: the phase plan (res_phase) of this CTA. */
BC_DEVICE void res_plan_phases(sm90_shape g, uint32_t base, uint32_t nops)
{
    const uint32_t t = bc_ctaid_x();
    for (uint32_t p = 0, j0 = 0, j1; j0 < nops; p++, j0 = j1) {
        for (j1 = j0 + 1; j1 < nops && !res_info(g, base, j1)->barrier; j1++) {
        }
        res_phase_s *ph = res_phase_of(g, base, p);
        uint32_t flags = res_info(g, base, j0)->barrier ? RES_PH_BARRIER : 0u, tiles = 0;
        for (uint32_t j = j0; j < j1; j++) {
            const res_info_s *op = res_info(g, base, j);
            if (op->kind == BC_RESIDENT_OP_COPY)
                flags |= RES_PH_COPY;
            else
                tiles = op->phase_tiles;
            if (op->kind == BC_RESIDENT_OP_GEMM)
                flags |= RES_PH_TMA;
        }
        ph->j0 = (uint8_t)j0;
        ph->j1 = (uint8_t)j1;
        ph->tiles = tiles;
        ph->first_j = (uint8_t)j0;
        ph->tm = ph->tn = 0;
        if (t < tiles) {
            const uint32_t j = res_owner(g, base, j0, j1, t);
            const res_info_s *op = res_info(g, base, j);
            const bc_tile tile = res_tile_of(op, t - op->tile0);
            flags |= RES_PH_FIRST;
            ph->first_j = (uint8_t)j;
            ph->tm = tile.m;
            ph->tn = tile.n;
        }
        ph->flags = (uint8_t)flags;
    }
}

/* Start of a launch: barriers, the operation infos into shared memory, the
 * tensor maps acquired and prefetched by the threads that use them. */
BC_DEVICE void res_setup(sm90_shape g, uint64_t program, uint64_t first_seq, uint32_t base, uint32_t nops,
                         uint32_t tid)
{
    /* one thread initialises every barrier: the one-per-thread form (as the
     * launched kernel does it) compiles to a warp-uniform loop that
     * compute-sanitizer's racecheck reads as writes, by threads that skip
     * it, to the operation infos next to the barriers */
    if (tid == 0) {
        for (uint32_t s = 0; s < g.stages; s++) {
            bc_mbar_init(sm90_full(g, base, s), 1);
            bc_mbar_init(sm90_empty(g, base, s), g.cons);
        }
        bc_mbar_fence_init();
    }
    for (uint32_t i = tid; i < nops * 6u; i += bc_ntid_x()) {
        const uint64_t src = program + (uint64_t)(i / 6u) * sizeof(bc_resident_op) + 384u + 16u * (i % 6u);
        *(res_v4_s *)(uintptr_t)(res_smem(g, base) + 16u * i) = *(const bc_u32x4 *)src;
    }
    if (tid == 0) {
        res_ctl_s *ctl = res_ctl_of(g, base);
        ctl->seen = first_seq;
        ctl->syncs = 0;
        ctl->step_word = 0;
        ctl->idle_since = bc_globaltimer_ns();
    }
    bc_syncthreads();
    if (tid == 0) { /* read by every thread after the step loop's first CTA barrier */
        res_plan_phases(g, base, nops);
        res_ctl_s *ctl = res_ctl_of(g, base);
        ctl->tma = 0;
        for (uint32_t j = 0; j < nops; j++)
            ctl->tma |= res_info(g, base, j)->kind == BC_RESIDENT_OP_GEMM;
    }
    for (uint32_t j = 0; j < nops; j++) {
        const res_info_s *op = res_info(g, base, j);
        const uint64_t maps = program + (uint64_t)j * sizeof(bc_resident_op);
        if (op->kind != BC_RESIDENT_OP_GEMM)
            continue;
        if (tid == 0) {
            bc_fence_tensormap_acquire_sys(maps);
            bc_fence_tensormap_acquire_sys(maps + 128u);
            bc_tma_prefetch_desc(maps);
            bc_tma_prefetch_desc(maps + 128u);
            if (op->flags & BC_GEMM_F_C_SMEM) { /* the producer loads C too */
                bc_fence_tensormap_acquire_sys(maps + 512u);
                bc_tma_prefetch_desc(maps + 512u);
            }
        } else if (tid >= BC_SM90_PRODUCER_THREADS && tid % 128u == 0 && (op->flags & BC_GEMM_F_TMA_STORE)) {
            bc_fence_tensormap_acquire_sys(maps + 256u);
            bc_tma_prefetch_desc(maps + 256u);
        }
    }
}

BC_DEVICE void res_kernel(sm90_shape g, uint64_t program, uint64_t sync, uint64_t doorbell, uint64_t done,
                          uint64_t first_seq, uint32_t nops, uint32_t spin_ns, uint32_t max_sleep_ns,
                          uint32_t sys_release)
{
    const uint32_t base = (bc_smem_u32(bc_sm90_smem) + 1023u) & ~1023u;
    const uint32_t tid = bc_tid_x();
    res_setup(g, program, first_seq, base, nops, tid);
    /* two consumer warpgroups take registers from the producer's; with one, every warp keeps the launch's
     * (its producer warps run GEMV operations too: resident_gemv.c) */
    if (g.cons > 1u && tid < BC_SM90_PRODUCER_THREADS)
        bc_setmaxnreg_dec(SM90_PRODUCER_REGS);
    else if (g.cons > 1u)
        bc_setmaxnreg_inc(SM90_CONSUMER_REGS);
    res_state s = {0, 0, 0};
    res_ctl_s *ctl = res_ctl_of(g, base);
    for (;;) {
        if (tid == 0) {
            res_next_step(ctl, doorbell, sync, spin_ns, max_sleep_ns);
            RES_TRACE(sync, ctl->word, 0u);
        }
        bc_syncthreads_divergent();
        const uint64_t v = ctl->word;
        if (tid == 128u)
            RES_TRACE(sync, v, 1u);
        if ((v & BC_RESIDENT_SEQ_MASK) != ctl->seen) {
            const uint32_t tma = res_step(g, program, base, nops, sync, &s, ctl, tid);
            res_finish_step(ctl, sync, done, sys_release, tma, tid);
        }
        if (v & BC_RESIDENT_STOP)
            break;
        bc_syncthreads_divergent(); /* every thread has read the control block before thread 0 writes it */
    }
    bc_syncthreads_divergent(); /* every wait and arrival is done: retire the barriers */
    if (tid < g.stages) {
        bc_mbar_inval(sm90_full(g, base, tid));
        bc_mbar_inval(sm90_empty(g, base, tid));
    }
}

/* One kernel per whole-tile configuration but 128x256, whose consumers
 * already use every register the launched kernel has: the resident loop's
 * state made it spill. The parameter is read field by field and never
 * leaves parameter space. */
#define BC__RESIDENT_KERNEL(name, cons, bn, stages, ks, ar)                                                 \
    BC_KERNEL void name(bc_resident_params p)                                                               \
    {                                                                                                       \
        const sm90_shape g = {cons, bn, stages, ks, ar, 0, 0, 0};                                               \
        res_kernel(g, p.program, p.sync, p.doorbell, p.done, p.first_seq, p.ops, p.spin_ns, p.max_sleep_ns, \
                   p.sys_release);                                                                          \
    }
#define BC_RESIDENT_KERNEL(name, cfg) BC__APPLY(BC__RESIDENT_KERNEL, name, cfg)

_Static_assert(BC_RESIDENT_SMEM_OF(BC_SM90_CFG_128X128) <= 232448, "resident 128x128: over the opt-in limit");
_Static_assert(BC_RESIDENT_SMEM_OF(BC_SM90_CFG_128X64) <= 232448, "resident 128x64: over the opt-in limit");
_Static_assert(BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32) <= 232448, "resident 64x32: over the opt-in limit");
_Static_assert(BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32M16) <= 232448, "resident 64x32m16: over the opt-in limit");

BC_RESIDENT_KERNEL(bc_resident_sm90_64x32, BC_SM90_CFG_64X32)
BC_RESIDENT_KERNEL(bc_resident_sm90_64x32m16, BC_SM90_CFG_64X32M16)
BC_RESIDENT_KERNEL(bc_resident_sm90_128x64, BC_SM90_CFG_128X64)
BC_RESIDENT_KERNEL(bc_resident_sm90_128x128, BC_SM90_CFG_128X128)
