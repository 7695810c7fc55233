/* Persistent tile scheduler shared by the Hopper and Blackwell kernels.
 *
 * CTA b of a grid of G walks tiles b, b+G, b+2G, ... Tile t maps to a
 * (tile_m, tile_n) pair in bands of `group_m` tile rows: within a band the
 * index runs down the rows first, so the CTAs resident at one time share a
 * few B column tiles and a few A row tiles in L2. The order is a pure
 * function of t: every launch visits the same tiles in the same CTAs.
 * Pure integer code: the host model of the Blackwell pipeline
 * (tests/unit/sm100_model.c) walks tiles with it too.
 */
#ifndef BC_KERNELS_TILE_SCHED_H
#define BC_KERNELS_TILE_SCHED_H

#include "pure.h"

typedef struct bc_tile {
    uint32_t m, n; /* tile coordinates (in tiles) */
} bc_tile;

BC_DEVICE bc_tile bc_tile_of(uint32_t t, uint32_t tiles_m, uint32_t tiles_n, uint32_t group_m)
{
    uint32_t per_band = group_m * tiles_n;
    uint32_t band = t / per_band;
    uint32_t first_m = band * group_m;
    uint32_t rows = tiles_m - first_m < group_m ? tiles_m - first_m : group_m;
    uint32_t r = t - band * per_band;
    bc_tile tile = {first_m + r % rows, r / rows};
    return tile;
}

/* A divisor d (1 <= d < 2^31) as a multiply and a shift, so that
 * n / d == (n * mul) >> shift for every n < 2^31: with s = ceil(log2 d),
 * mul = ceil(2^(31+s) / d) < 2^32 and shift = 31 + s. The error
 * mul * d - 2^(31+s) is below d <= 2^s, so n * mul / 2^(31+s) exceeds n / d
 * by less than 1 / d, which never reaches the next integer (Granlund and
 * Montgomery, "Division by invariant integers using multiplication", 1994,
 * with N = 31). Two instructions where a division by a value known only at
 * run time takes about twenty. */
typedef struct bc_udiv {
    uint32_t mul, shift;
} bc_udiv;

BC_DEVICE bc_udiv bc_udiv_of(uint32_t d)
{
    uint32_t s = 0;
    while (s < 31u && (1u << s) < d)
        s++;
    const uint64_t p = (uint64_t)1 << (31u + s);
    const bc_udiv v = {(uint32_t)((p + d - 1u) / d), 31u + s};
    return v;
}

BC_DEVICE uint32_t bc_udiv_q(uint32_t n, bc_udiv v) { return (uint32_t)(((uint64_t)n * v.mul) >> v.shift); }

/* The band height, in blocks, of a walk over blocks of mm tile rows (a
 * multicast twin's): group_m / mm block rows, at least one. The kernel
 * walks with it and the host works out the walk's divisors from it. */
BC_DEVICE uint32_t bc_block_group(uint32_t group_m, uint32_t mm) { return group_m / mm ? group_m / mm : 1u; }

/* bc_tile_of's three divisors for one launch, worked out by the host
 * (bc_raster_of) and read by the kernel from its parameters: a band's
 * tiles (group_m * tiles_n), a full band's rows (group_m) and the last
 * band's rows (tiles_m mod group_m, or group_m). */
typedef struct bc_raster {
    bc_udiv band, rows, last_rows;
} bc_raster;

BC_DEVICE bc_raster bc_raster_of(uint32_t tiles_m, uint32_t tiles_n, uint32_t group_m)
{
    const uint32_t tail = tiles_m % group_m;
    const bc_raster r = {bc_udiv_of(group_m * tiles_n), bc_udiv_of(group_m), bc_udiv_of(tail ? tail : group_m)};
    return r;
}

/* bc_tile_of with rs = bc_raster_of(tiles_m, tiles_n, group_m): the same
 * tile for every t < tiles_m * tiles_n < 2^31, by multiplies. */
BC_DEVICE bc_tile bc_tile_at(uint32_t t, uint32_t tiles_m, uint32_t tiles_n, uint32_t group_m, const bc_raster *rs)
{
    const uint32_t band = bc_udiv_q(t, rs->band), first_m = band * group_m;
    const int last = tiles_m - first_m < group_m;
    const uint32_t rows = last ? tiles_m - first_m : group_m;
    const uint32_t r = t - band * group_m * tiles_n, n = bc_udiv_q(r, last ? rs->last_rows : rs->rows);
    bc_tile tile = {first_m + r - n * rows, n};
    return tile;
}

#endif
