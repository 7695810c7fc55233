/* The resident executor's GEMV operations (included by resident_sm90.c,
 * after gemm_gemv.c; every resident kernel but 128x128's, whose consumers
 * have no registers to spare: RES_RUNS_GEMV): a GEMV plan's CTAs become work items of its phase,
 * each run by eight warps of whichever CTA takes it with the launched
 * kernel's geometry, step order and sums (gemm_gemv.c), so its results are the
 * launch's, bit for bit:
 *
 *   - the eight warps are the producer and consumer warpgroups in the
 *     kernels of one consumer warpgroup (which leave every warp the launch's
 *     registers: no setmaxnreg), the two consumer warpgroups in the others;
 *     warp w does the launched CTA's warp w's work;
 *   - their partials meet in shared memory and are added in K-group order,
 *     as in the launch: in the first consumer warpgroup's first epilogue
 *     staging buffer (8 KiB), once the TMA stores that read it are done
 *     reading, and every thread of the eight warps has read them before
 *     any leaves the item (a tile's epilogue after it writes the buffer
 *     past a barrier of its own warpgroup only); the ring, which the
 *     producer may refill for the next phase meanwhile, is not touched;
 *   - a plan split over a cluster of S CTAs is S work items whose sums meet
 *     in global memory: each stores its slot and arrives on its run's
 *     counter, and the last arrival adds slots 0..S-1 in that order, the
 *     launched rank 0's order, then finishes each output with the
 *     epilogue's math; no CTA waits for another.
 *
 * The loads go through L2 (gemv_ld, coh): the activations are written by
 * earlier operations of the step, the weights by the host between steps.
 */

#define RES_BAR_GEMV 5u /* the eight warps that run a GEMV work item (barrier.sync: warp 0 may diverge) */

/* Whether the resident kernel of shape g can run GEMV operations. The host
 * (runtime/resident_program.c) places them in 64x32m16's and 128x64's
 * kernels only; 64x32's carries the code unused. */
#define RES_RUNS_GEMV(g) ((g).bn < 128u)

/* The first of the 256 threads that run a GEMV work item in the resident
 * kernel of shape g. */
BC_DEVICE uint32_t res_gemv_thread0(sm90_shape g) { return g.cons == 1u ? 0u : BC_SM90_PRODUCER_THREADS; }

/* Thread gt (0..255) of the eight warps: work item `it` of GEMV operation
 * op, whose operands are at `opaddr` (the program's bc_resident_op). tev:
 * the phase's first trace event, or 0 where the item is not the CTA's
 * first of the phase (diagnostic builds only: RES_TRACE). */
BC_DEVICE void res_gemv_item(sm90_shape g, const res_info_s *op, uint64_t opaddr, uint32_t it, uint32_t base,
                             uint64_t sync, uint32_t gt, uint32_t tev)
{
    /* in the kernels of one consumer warpgroup, warp 0 holds the producer thread, which may come from its
     * tile loads while its lanes come from skipping them: the warp reconverges for the mma.sync below, and
     * the item's barriers count threads, not warps */
    bc_syncwarp();
    if (tev && gt == 0)
        RES_TRACE(sync, res_ctl_of(g, base)->word, 30u);
    const bc_resident_gemv *gv = (const bc_resident_gemv *)opaddr;
    const uint64_t a = gv->a, b = gv->b;
    const uint32_t lda = gv->lda, ldb = gv->ldb, k = gv->k;
    const uint32_t ns = op->split, grp = it >> gemv_log2(ns), rank = it & (ns - 1u); /* ns: 1, 2, 4 or 8 */
    const gemv_geom G = gemv_geom_of(op->m, op->n, k, op->tiles_m, ns);
#ifdef BC_RES_TRACE_FINE /* diagnostic builds: the geometry worked out (events 20 + 2p, phases 0-2 only) */
    if (tev && tev < 20u && gt == 0)
        RES_TRACE(sync, res_ctl_of(g, base)->word, 20u + (tev - 2u) / 3u);
#endif
    const gemv_lane w = gemv_lane_of(&G, a, b, lda, ldb, k, grp, rank, gt / 32u, gt % 32u, 0u);
#ifdef BC_RES_TRACE_FINE /* ... and the lane's addresses: its first loads issue next (events 21 + 2p) */
    if (tev && tev < 20u && gt == 0)
        RES_TRACE(sync, res_ctl_of(g, base)->word, 21u + (tev - 2u) / 3u);
#endif
    const uint32_t part = sm90_epi_buf(g, base, 0);
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    if (op->ab_type == 1u)
        gemv_steps_of(&w, acc, G.nt, G.q > 8u, 0u, 1, 1);
    else
        gemv_steps_of(&w, acc, G.nt, G.q > 8u, 0u, 1, 0);
    if (tev && gt == 0) /* warp 0's loads landed (its mma need them) */
        RES_TRACE(sync, res_ctl_of(g, base)->word, tev + 3u);
    if (bc_tid_x() == BC_SM90_PRODUCER_THREADS)
        bc_bulk_wait_read_all(); /* the last tile's TMA stores are done reading the staging buffers */
    bc_bar_sync_divergent(RES_BAR_GEMV, BC_GEMV_THREADS); /* ... and every thread has read the item before's partials */
    gemv_store_part(&G, part, &w, acc, gt % 32u, 0u);
    bc_bar_sync_divergent(RES_BAR_GEMV, BC_GEMV_THREADS);
    if (tev && gt == 0) /* every warp's partials in shared memory */
        RES_TRACE(sync, res_ctl_of(g, base)->word, tev + 5u);
    const bc_epi *e = (const bc_epi *)op;
    const uint32_t outs = G.cols * 16u, r0 = grp * G.cols;
    if (ns == 1u) {
        for (uint32_t o = gt; o < outs; o += BC_GEMV_THREADS) {
            uint32_t s, col;
            gemv_out_of(&G, o, &s, &col, 4u);
            const uint32_t r = r0 + col;
            if (s < G.q && r < G.rows)
                bc_epi_finish_one(e, (int)op->d_type, gemv_cta_sum(&G, part, s, col, 4u), G.a_big ? r : s,
                                  G.a_big ? s : r);
        }
        /* every thread has read the partials before any goes on to a tile, whose epilogue's barrier holds only
         * its own warpgroup (the producer's warps, or the second consumer warpgroup, may still be reading) */
        bc_bar_sync_divergent(RES_BAR_GEMV, BC_GEMV_THREADS);
        return;
    }
    /* the run's slots: 4 consecutive outputs a thread (outs is a multiple of 128) */
    const uint64_t slots = sync + op->ws_off + (uint64_t)grp * ns * BC_RESIDENT_GEMV_SLOT_BYTES;
    for (uint32_t o = 4u * gt; o < outs; o += 4u * BC_GEMV_THREADS) {
        float v[4];
#pragma unroll
        for (uint32_t i = 0; i < 4u; i++) {
            uint32_t s, col;
            gemv_out_of(&G, o + i, &s, &col, 4u);
            v[i] = gemv_cta_sum(&G, part, s, col, 4u);
        }
        bc_st_global_v4f32(slots + (uint64_t)rank * BC_RESIDENT_GEMV_SLOT_BYTES + o * 4u, v[0], v[1], v[2], v[3]);
    }
    res_ctl_s *ctl = res_ctl_of(g, base);
    bc_bar_sync_divergent(RES_BAR_GEMV, BC_GEMV_THREADS); /* every sum of the slot stored */
    if (gt == 0) {
        const uint64_t ctr = sync + BC_RESIDENT_SYNC_CTR + 4u * (op->ctr0 + grp);
        const uint32_t last = bc_atom_add_acq_rel_gpu_u32(ctr, 1u) + 1u == ns;
        if (last) /* reset for the next step (the step's end orders it before that step's arrivals) */
            bc_st_relaxed_gpu_u32(ctr, 0u);
        ctl->split_last = last;
    }
    bc_bar_sync_divergent(RES_BAR_GEMV, BC_GEMV_THREADS);
    if (!ctl->split_last)
        return;
    for (uint32_t o = 4u * gt; o < outs; o += 4u * BC_GEMV_THREADS) {
        bc_f32x4 p[BC_RESIDENT_MAX_SPLIT];
#pragma unroll
        for (uint32_t x = 0; x < BC_RESIDENT_MAX_SPLIT; x++)
            p[x] = bc_ld_cg_v4f32_if(slots + (uint64_t)x * BC_RESIDENT_GEMV_SLOT_BYTES + o * 4u, x < ns);
        float v[4] = {p[0].x, p[0].y, p[0].z, p[0].w}; /* rank 0's sums, then the others' in rank order */
#pragma unroll
        for (uint32_t x = 1; x < BC_RESIDENT_MAX_SPLIT; x++)
            if (x < ns)
                v[0] += p[x].x, v[1] += p[x].y, v[2] += p[x].z, v[3] += p[x].w;
#pragma unroll
        for (uint32_t i = 0; i < 4u; i++) {
            uint32_t s, col;
            gemv_out_of(&G, o + i, &s, &col, 4u);
            const uint32_t r = r0 + col;
            if (s < G.q && r < G.rows)
                bc_epi_finish_one(e, (int)op->d_type, v[i], G.a_big ? r : s, G.a_big ? s : r);
        }
    }
}

_Static_assert(BC_GEMV_PART_BYTES <= BC_SM90_EPI_BUF_BYTES, "the GEMV partials fit one staging buffer");
_Static_assert(BC_RESIDENT_GEMV_SLOT_BYTES % 16 == 0 && BC_GEMV_THREADS == 2 * 128 && BC_GEMV_WARPS == 8,
               "slots of 16-byte groups; two warpgroups run an item");
