/* Stream-K over the last tiles of a persistent grid (kernels_ptx/gemm_sm90.c).
 *
 * Tiles [first, first + tiles) of the grid's walk are not taken whole: their
 * tiles * kb k-blocks ("units", tile by tile, K increasing within a tile) are
 * cut into `ctas` contiguous ranges, CTA g taking [lo(g), lo(g + 1)) with
 * lo(g) = floor(g * units / ctas). A tile that one CTA covers is done whole
 * by it. A tile that P > 1 CTAs cover is done in P pieces, piece p by the
 * p-th of them: each piece writes its f32 partial to its own slot and counts
 * one arrival on the tile's counter, and the piece that arrives last adds
 * the P slots in piece order, starting from 0.0f, and runs the epilogue. The
 * sum's order is fixed by the plan, not by which piece arrives last, so the
 * bits are the same on every launch; no CTA ever waits for another.
 *
 * Slots: a CTA's range has a partial piece at most at its two ends (its
 * first and its last tile), so CTA h owns slots 2h and 2h + 1.
 *
 * Pure integer code: host unit tests walk the same functions.
 */
#ifndef BC_KERNELS_SK_SCHED_H
#define BC_KERNELS_SK_SCHED_H

#include "pure.h"

#define BC_SK_SLOTS(ctas) (2u * (ctas))

typedef struct bc_sk {
    uint32_t first, tiles; /* the stream-K tiles, as indices of the grid's tile walk */
    uint32_t ctas;         /* CTAs 0 .. ctas - 1 share them; 0: no stream-K (ctas <= tiles * kb otherwise) */
    uint32_t kb;           /* k-blocks per tile */
} bc_sk;

typedef struct bc_sk_piece {
    uint32_t tile;         /* 0 .. tiles - 1 (add `first` for the walk's index) */
    uint32_t kb0, kb1;     /* its k-blocks [kb0, kb1) */
    uint32_t piece, pieces; /* piece `piece` of the tile's `pieces` (1: the whole tile) */
} bc_sk_piece;

BC_DEVICE uint64_t bc_sk_units(const bc_sk *s) { return (uint64_t)s->tiles * s->kb; }

/* The first unit of CTA g (g <= ctas: lo(ctas) is the end). */
BC_DEVICE uint64_t bc_sk_lo(const bc_sk *s, uint32_t g) { return bc_sk_units(s) * g / s->ctas; }

/* The CTA whose range holds unit x: the largest g with lo(g) <= x. */
BC_DEVICE uint32_t bc_sk_cta_of(const bc_sk *s, uint64_t x)
{
    return (uint32_t)(((x + 1u) * s->ctas - 1u) / bc_sk_units(s));
}

/* CTA g's piece that starts at unit u (lo(g) <= u < lo(g + 1)); *next is
 * the unit after it. */
BC_DEVICE bc_sk_piece bc_sk_piece_at(const bc_sk *s, uint32_t g, uint64_t u, uint64_t *next)
{
    const uint64_t hi = bc_sk_lo(s, g + 1u);
    const uint32_t j = (uint32_t)(u / s->kb);
    const uint64_t t0 = (uint64_t)j * s->kb, end = hi < t0 + s->kb ? hi : t0 + s->kb;
    const uint32_t g0 = bc_sk_cta_of(s, t0), g1 = bc_sk_cta_of(s, t0 + s->kb - 1u);
    const bc_sk_piece p = {j, (uint32_t)(u - t0), (uint32_t)(end - t0), g - g0, g1 - g0 + 1u};
    *next = end;
    return p;
}

/* The slot of piece p of tile j: 2h where tile j is the first tile of the
 * CTA h that does the piece, 2h + 1 where it is its last. */
BC_DEVICE uint32_t bc_sk_slot(const bc_sk *s, uint32_t j, uint32_t p)
{
    const uint32_t h = bc_sk_cta_of(s, (uint64_t)j * s->kb) + p;
    return 2u * h + (bc_sk_lo(s, h) / s->kb != j ? 1u : 0u);
}

#endif
