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

#endif
