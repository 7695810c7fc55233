/* The tile walk's division by multiplies (kernels_ptx/tile_sched.h):
 * bc_udiv against the hardware's division, and bc_tile_at against
 * bc_tile_of, the raster's definition, on every walk of small grids and on
 * samples of large ones. A mutant raster (one divisor off by one) must be
 * caught, so the comparison can fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tile_sched.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 32);
}

/* n / d against bc_udiv_q for n at the edges (0, around multiples of d, the
 * largest n < 2^31) and at random; returns the first wrong n + 1, 0 if none. */
static uint64_t udiv_wrong(uint32_t d)
{
    const bc_udiv v = bc_udiv_of(d);
    const uint32_t top = 0x7fffffffu;
    uint32_t ns[16] = {0, 1, d - 1u, d, d + 1u, top, top - 1u, top - top % d, top - top % d - 1u};
    for (int i = 9; i < 16; i++)
        ns[i] = next_u32() & top;
    for (int i = 0; i < 16; i++) {
        const uint32_t n = ns[i] & top;
        if (bc_udiv_q(n, v) != n / d)
            return (uint64_t)n + 1u;
    }
    for (int i = 0; i < 64; i++) { /* around random multiples of d */
        const uint32_t q = (next_u32() & top) / d, n = q * d;
        if (bc_udiv_q(n, v) != q || (n > 0 && bc_udiv_q(n - 1u, v) != q - 1u))
            return (uint64_t)n + 1u;
    }
    return 0;
}

static void test_udiv_exact(void **state)
{
    (void)state;
    for (uint32_t d = 1; d <= 70000; d++)
        if (udiv_wrong(d))
            fail_msg("d=%u: n=%llu", d, (unsigned long long)(udiv_wrong(d) - 1u));
    for (uint32_t s = 0; s < 31; s++) /* powers of two and their neighbours */
        for (int64_t o = -2; o <= 2; o++) {
            const int64_t d = ((int64_t)1 << s) + o;
            if (d >= 1 && d <= 0x7fffffff && udiv_wrong((uint32_t)d))
                fail_msg("d=%lld", (long long)d);
        }
    for (int i = 0; i < 20000; i++) {
        const uint32_t d = (next_u32() & 0x7fffffffu) | 1u;
        if (udiv_wrong(d))
            fail_msg("d=%u", d);
    }
    /* every n for a few divisors the walk meets (a band of 8 rows of 1 .. 5 tiles, the last band's rows) */
    static const uint32_t ds[] = {1, 3, 5, 6, 7, 8, 24, 40};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        const bc_udiv v = bc_udiv_of(ds[i]);
        for (uint32_t n = 0; n < (1u << 22); n++)
            if (bc_udiv_q(n, v) != n / ds[i])
                fail_msg("d=%u n=%u", ds[i], n);
    }
}

/* Walk indices of the grid where bc_tile_at (with rs) and bc_tile_of differ. */
static uint64_t walk_diffs(uint32_t tm, uint32_t tn, uint32_t gm, const bc_raster *rs, uint64_t t0, uint64_t t1)
{
    uint64_t bad = 0;
    for (uint64_t t = t0; t < t1; t++) {
        const bc_tile a = bc_tile_at((uint32_t)t, tm, tn, gm, rs), b = bc_tile_of((uint32_t)t, tm, tn, gm);
        bad += a.m != b.m || a.n != b.n;
    }
    return bad;
}

static void test_walk_matches_raster(void **state)
{
    (void)state;
    static const uint32_t groups[] = {1, 2, 3, 4, 8, 16};
    uint64_t walks = 0;
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
        for (uint32_t tm = 1; tm <= 40; tm++)
            for (uint32_t tn = 1; tn <= 40; tn++) {
                const bc_raster rs = bc_raster_of(tm, tn, groups[g]);
                if (walk_diffs(tm, tn, groups[g], &rs, 0, (uint64_t)tm * tn))
                    fail_msg("%u x %u tiles, bands of %u", tm, tn, groups[g]);
                walks += (uint64_t)tm * tn;
            }
    assert_true(walks > 1000000u);
    /* large grids (a 2 x 2 twin's blocks: bands of 4): the first and last bands (up to 2^20 tiles of
     * each), samples between */
    static const uint32_t big[][3] = {{8193, 16385, 8}, {46341, 46340, 8}, {3, 700000, 8}, {700001, 3, 4},
                                      {257, 4099, 4}, {1, 67108863, 8}, {33554431, 1, 8}};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        const uint32_t tm = big[i][0], tn = big[i][1], gm = big[i][2];
        const uint64_t tiles = (uint64_t)tm * tn, band = (uint64_t)gm * tn;
        assert_true(tiles < 0x80000000u);
        const bc_raster rs = bc_raster_of(tm, tn, gm);
        const uint64_t last = tiles - (tiles % band ? tiles % band : band); /* the last band's first tile */
        const uint64_t cap = 1u << 20, head = band < cap ? band : cap, tail = tiles - last < cap ? last : tiles - cap;
        if (walk_diffs(tm, tn, gm, &rs, 0, head) || walk_diffs(tm, tn, gm, &rs, tail, tiles))
            fail_msg("%u x %u tiles, bands of %u: first or last band", tm, tn, gm);
        for (int j = 0; j < 200000; j++) {
            const uint64_t t = next_u32() % tiles;
            if (walk_diffs(tm, tn, gm, &rs, t, t + 1u))
                fail_msg("%u x %u tiles, bands of %u: t=%llu", tm, tn, gm, (unsigned long long)t);
        }
    }
}

/* The comparison catches a raster whose band divisor is one tile off, and
 * one whose last band is divided as a full one. */
static void test_mutant_raster_caught(void **state)
{
    (void)state;
    uint64_t off_band = 0, full_last = 0;
    for (uint32_t tm = 1; tm <= 20; tm++)
        for (uint32_t tn = 1; tn <= 20; tn++) {
            bc_raster rs = bc_raster_of(tm, tn, 8);
            rs.band = bc_udiv_of(8u * tn + 1u);
            off_band += walk_diffs(tm, tn, 8, &rs, 0, (uint64_t)tm * tn);
            rs = bc_raster_of(tm, tn, 8);
            rs.last_rows = rs.rows;
            full_last += walk_diffs(tm, tn, 8, &rs, 0, (uint64_t)tm * tn);
        }
    assert_true(off_band > 0);
    assert_true(full_last > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_udiv_exact),
        cmocka_unit_test(test_walk_matches_raster),
        cmocka_unit_test(test_mutant_raster_caught),
    };
    return cmocka_run_group_tests_name("tile_sched", tests, NULL, NULL);
}
