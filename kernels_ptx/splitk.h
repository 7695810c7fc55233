/* Deterministic split-K over a thread-block cluster (sm_90a). The S CTAs of
 * a cluster share one output tile: CTA r reduces k-blocks
 * [kb*r/S, kb*(r+1)/S) into its f32 accumulators. CTA j owns rows
 * [j*BM/S, (j+1)*BM/S) of the tile and keeps S slots for them in its shared
 * memory (the stage ring, free once every main loop of the cluster is done):
 * each CTA stores its accumulators for those rows into slot r of CTA j with
 * remote shared-memory stores (no round trip). After a cluster barrier, CTA
 * j adds its slots in the order 0, 1, ..., S-1 and applies the epilogue.
 * Which CTA finished first cannot change a bit; nothing goes through global
 * memory but D, so a split plan needs no workspace and may run on several
 * streams at once.
 */
#ifndef BC_KERNELS_SPLITK_H
#define BC_KERNELS_SPLITK_H

#include "epilogue.h"
#include "epilogue_sm90.h"
#include "ptx/cluster.h"

/* Floats of padding per slot row: 8 (32 bytes) spreads the 8 rows a warp
 * writes at once over all 32 banks in two wavefronts, the minimum for 256 B. */
#define BC_SPLITK_PAD 8u

BC_DEVICE uint32_t bc_splitk_pitch(const uint32_t bn) { return bn + BC_SPLITK_PAD; }

/* Byte offset of (row r of the owner's slice, column col) in slot `slot`. */
BC_DEVICE uint32_t bc_splitk_off(const uint32_t bn, uint32_t rows, uint32_t slot, uint32_t r, uint32_t col)
{
    return ((slot * rows + r) * bc_splitk_pitch(bn) + col) * 4u;
}

/* Where thread t128 of consumer warpgroup c holds wgmma accumulators:
 * half h (0, 1) is tile row bc_splitk_frag_row, and acc[4j + 2h],
 * acc[4j + 2h + 1] are columns bc_splitk_frag_col + 8j and the next. */
BC_DEVICE uint32_t bc_splitk_frag_row(uint32_t c, uint32_t t128, uint32_t h)
{
    return c * 64u + 16u * (t128 / 32u) + (t128 % 32u) / 4u + 8u * h;
}
BC_DEVICE uint32_t bc_splitk_frag_col(uint32_t t128) { return 2u * (t128 % 4u); }

/* Consumer warpgroup c of CTA `rank` sends its 64 rows of accumulators
 * (those below bm) to their owners: row R of the tile goes to CTA R / (bm/S),
 * slot `rank`. bm (the tile's rows, or the rows a skinny tile holds) and bn
 * are compile-time constants; `slots` is the slot area's shared
 * address (the same in every CTA of the cluster). */
BC_DEVICE void bc_splitk_send(const float *acc, const uint32_t bm, const uint32_t bn, uint32_t slots, uint32_t rank,
                              uint32_t s, uint32_t c, uint32_t t128)
{
    const uint32_t rows = bm / s;
#pragma unroll
    for (uint32_t h = 0; h < 2; h++) {
        const uint32_t row = bc_splitk_frag_row(c, t128, h), owner = row / rows;
        if (row >= bm) /* a skinny tile's rows past its stage's A rows: never stored */
            continue;
        const uint32_t dst = bc_mapa(slots + bc_splitk_off(bn, rows, rank, row % rows, bc_splitk_frag_col(t128)), owner);
#pragma unroll
        for (uint32_t j = 0; j < bn / 8; j++)
            bc_st_cluster_v2(dst + 32u * j, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
}

/* CTA `rank` of `s` finishes its rows of the tile whose first element is D
 * (row0, col0): thread i of `nthr` takes groups of 4 columns i, i + nthr, ...
 * of its slice, adds its slots 0..s-1 in that order, and stores alpha * sum
 * through the epilogue. bm and bn are compile-time constants. */
BC_DEVICE void bc_splitk_finish_rows(const bc_epi *e, const uint32_t bm, const uint32_t bn, uint32_t slots,
                                     uint32_t rank, uint32_t s, uint32_t row0, uint32_t col0, uint32_t i,
                                     uint32_t nthr, int out_t)
{
    const uint32_t rows = bm / s, groups = rows * (bn / 4u);
    for (uint32_t q = i; q < groups; q += nthr) {
        const uint32_t r = q / (bn / 4u), c4 = 4u * (q % (bn / 4u));
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (uint32_t src = 0; src < s; src++) {
            const bc_f32x4s p = bc_ld_shared_v4f32(slots + bc_splitk_off(bn, rows, src, r, c4));
            v[0] += p.x, v[1] += p.y, v[2] += p.z, v[3] += p.w;
        }
#pragma unroll
        for (uint32_t k = 0; k < 4; k++)
            v[k] *= e->alpha;
        bc_epi_store4(e, row0 + rank * rows + r, col0 + c4, v, out_t);
    }
}

#endif
