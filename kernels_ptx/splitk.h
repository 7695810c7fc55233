/* Deterministic split-K (gemm_abi.h, BC_SPLITK_*): each split of a tile
 * stores its fp32 partial; a grid barrier (the launch is cooperative, so
 * every CTA is resident); then all CTAs' consumer threads reduce disjoint
 * element ranges, adding splits 0..S-1 in that order and applying the
 * epilogue. Which CTA ran which split, or finished first, cannot change a bit.
 */
#ifndef BC_KERNELS_SPLITK_H
#define BC_KERNELS_SPLITK_H

#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/atomic.h"
#include "ptx/fence.h"

/* Partial of split s: fp32 [M][N], densely packed. */
BC_DEVICE uint64_t bc_splitk_partial(uint64_t ws, uint32_t s, uint32_t m, uint32_t n)
{
    return ws + BC_SPLITK_PARTIALS_OFF + (uint64_t)s * m * n * 4u;
}

/* Stores accumulator columns (col, col+1) of `row` into a partial. */
BC_DEVICE void bc_splitk_store_pair(uint64_t part, uint32_t m, uint32_t n, uint32_t row, uint32_t col, float a0,
                                    float a1)
{
    if (row >= m || col >= n)
        return;
    uint64_t i = (uint64_t)row * n + col;
    float *p = (float *)part;
    if (col + 1 < n && (i & 1u) == 0) {
        bc_f32x2 v = {a0, a1};
        ((bc_f32x2 *)p)[i / 2] = v;
        return;
    }
    p[i] = a0;
    if (col + 1 < n)
        p[i + 1] = a1;
}

/* One thread per CTA, after a barrier over the CTA's writers: returns once
 * all `nctas` CTAs have arrived. Self-resetting (count back to 0, generation
 * bumped), so the next launch of the plan finds it ready. */
BC_DEVICE void bc_grid_barrier(uint64_t ws, uint32_t nctas)
{
    const uint64_t count = ws + BC_SPLITK_COUNT_OFF, gen = ws + BC_SPLITK_GEN_OFF;
    bc_fence_acq_rel_gpu(); /* publish the CTA's partials (cumulative over the CTA barrier) */
    const uint32_t g = bc_ld_acquire_gpu(gen);
    if (bc_atom_add_acq_rel_gpu(count, 1u) == nctas - 1u) {
        bc_st_relaxed_gpu(count, 0u);
        bc_atom_add_acq_rel_gpu(gen, 1u);
    } else {
        while (bc_ld_acquire_gpu(gen) == g)
            bc_nanosleep(64);
    }
}

typedef struct bc_f32x4 {
    float x, y, z, w;
} __attribute__((aligned(16))) bc_f32x4;

/* Finishes element idx of D (row-major index into M x N) from its sum. */
BC_DEVICE void bc_splitk_finish(const bc_epi *e, uint64_t idx, float acc, int out_t)
{
    const uint32_t row = (uint32_t)(idx / e->n), col = (uint32_t)(idx % e->n);
    bc_epi_store_one(e, (uint64_t)row * e->ldd + col, bc_epi_apply(e, acc, row, col, out_t), out_t);
}

/* Worker w of `nworkers` reduces groups of 4 consecutive elements of D
 * (partials are written before the grid barrier, whose acquire orders these
 * plain loads after them; no SM read these lines earlier in the launch). The
 * split loop is unrolled so several 16-byte loads are in flight. */
BC_DEVICE void bc_splitk_reduce(const bc_epi *e, uint64_t ws, uint32_t splits, uint32_t w, uint32_t nworkers,
                                int out_t)
{
    const uint64_t mn = (uint64_t)e->m * e->n;
    const uint64_t quads = mn / 4; /* partials are 16-byte aligned when mn % 4 == 0 */
    const float *part = (const float *)(ws + BC_SPLITK_PARTIALS_OFF);
    if (mn % 4 == 0) {
        const bc_f32x4 *p4 = (const bc_f32x4 *)part;
        for (uint64_t q = w; q < quads; q += nworkers) {
            bc_f32x4 acc = p4[q];
#pragma unroll 4
            for (uint32_t s = 1; s < splits; s++) {
                bc_f32x4 v = p4[s * quads + q];
                acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
            }
            bc_splitk_finish(e, 4 * q, acc.x, out_t);
            bc_splitk_finish(e, 4 * q + 1, acc.y, out_t);
            bc_splitk_finish(e, 4 * q + 2, acc.z, out_t);
            bc_splitk_finish(e, 4 * q + 3, acc.w, out_t);
        }
        return;
    }
    for (uint64_t idx = w; idx < mn; idx += nworkers) {
        float acc = part[idx];
#pragma unroll 4
        for (uint32_t s = 1; s < splits; s++)
            acc += part[s * mn + idx];
        bc_splitk_finish(e, idx, acc, out_t);
    }
}

#endif
