/* The GEMM plans' multicast twins on the fake driver (an H100-like
 * device, 132 SMs): when a plan takes the pair twins of 128x256 and
 * 128x128 and the 2 x 2 twins of 128x64 and 64x32, their grids, clusters
 * and half boxes, and where they give way (rows on the sectors, few
 * pairs, extra rounds, stream-K, a failing occupancy query), and the tile
 * walk's divisors each kernel finds in its parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gemm_plan_env.h"

/* The multicast twin of 128x256: taken with rows off the 32-byte sectors
 * (K an odd multiple of 8) on grids of at least a quarter of the SMs' worth
 * of tile-row pairs; launched in clusters of two, an even grid of at most
 * the SMs, each CTA loading half of B's rows (the B map's box). Not on
 * rows on the sectors, nor with padded rows, nor on few pairs. */
static void test_multicast_twin(void **state)
{
    env e;
    env_open(&e, 1);
    static const struct {
        int64_t m, n, k, ld;
        const char *kernel;
        unsigned grid, cluster, b_box_rows;
    } cases[] = {
        /* 16 x 8 tiles: 64 pairs, 128 CTAs */
        {2048, 2048, 2040, 0, "bc_gemm_sm90_128x256m", 128, 2, 128},
        /* 66 x 12 tiles: 396 pairs, 66 clusters fill the 132 SMs */
        {8339, 2936, 7704, 0, "bc_gemm_sm90_128x256m", 132, 2, 128},
        /* 6 x 16 tiles: 48 pairs, 36% of 132 */
        {728, 4008, 14024, 0, "bc_gemm_sm90_128x256m", 96, 2, 128},
        {2048, 2048, 2048, 0, "bc_gemm_sm90_128x256", 128, 1, 256},   /* on the grid */
        {2048, 2048, 2032, 0, "bc_gemm_sm90_128x256", 128, 1, 256},   /* on the sectors, off the lines */
        {728, 4008, 14000, 0, "bc_gemm_sm90_128x256", 96, 1, 256},    /* ... down 219 k-blocks (128x128's rule) */
        {2048, 2048, 2040, 2048, "bc_gemm_sm90_128x256", 128, 1, 256}, /* the same K, rows padded */
    };
    const fake_launch *l = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cases[i].m, cases[i].n, cases[i].k);
        if (cases[i].ld)
            d.lda = d.ldb = cases[i].ld;
        const bc_gemm_params p = launch_and_decode(&e, &d, &l);
        if (strcmp(l->kernel, cases[i].kernel) != 0 || l->grid[0] != cases[i].grid || l->cluster[0] != cases[i].cluster ||
            ((p.tmap_b[12] >> 16) & 0xffff) != cases[i].b_box_rows)
            fail_msg("%lldx%lldx%lld ld %lld: %s grid %u cluster %u B box %u rows; want %s %u %u %u", (long long)cases[i].m,
                     (long long)cases[i].n, (long long)cases[i].k, (long long)cases[i].ld, l->kernel, l->grid[0],
                     l->cluster[0], (unsigned)((p.tmap_b[12] >> 16) & 0xffff), cases[i].kernel, cases[i].grid,
                     cases[i].cluster, cases[i].b_box_rows);
        const bc_gemm_plan_info info = plan_info(&e, &d);
        assert_string_equal(info.kernel, cases[i].kernel);
        assert_string_equal(info.config, "sm90_128x256");
        assert_int_equal(info.cluster_x, cases[i].cluster);
        assert_int_equal(info.multicast, cases[i].cluster == 2);
    }
    /* few pairs: 512x2048 off the sectors is 4 x 8 tiles, 16 pairs (12% of the SMs), when named 128x256 */
    bc_gemm_desc d = base_desc(&e, 512, 2048, 2040);
    d.config = "sm90_128x256";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x256");
    assert_int_equal(l->cluster[0], 1);
    /* one tile row: 100x10000 is 1 x 40 tiles; every pair's second CTA would only load half of B */
    d = base_desc(&e, 100, 10000, 3000);
    d.config = "sm90_128x256";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x256");
    /* an odd number of tile rows: 3 x 20 tiles of 300x5000, 2 x 20 = 40 pairs, 80 CTAs (the last row's pair
     * partner lies past M) */
    d = base_desc(&e, 300, 5000, 3000);
    d.config = "sm90_128x256";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x256m");
    assert_int_equal(l->grid[0], 80);
    env_close(&e);
}

/* 128x128's multicast twin, on the same conditions and two more: the
 * rule's own choice 2597x2165x3624 (21 x 17 tiles: 187 pairs, three rounds
 * of 66 clusters as the tiles take three of 132 SMs) and a named 128x128
 * with K = 1000 (9 x 10 tiles: 50 pairs), B's box 64 rows; the same grid
 * not on the sectors (K = 1008), not below 15 k-blocks (K = 888, 14; K =
 * 904 is 15 and takes it; K = 40); on the sectors only off the 128-byte
 * lines from 64 k-blocks, on an even number of tile rows or at least 7
 * (K = 4080; the rule's own 797x1435x4176, 7 x 12 tiles, and
 * 3528x328x4784, 28 x 3; not K = 4016, 63 k-blocks, nor K = 4096 and 8192,
 * on the lines, nor 589x1435x4176, 5 tile rows); not where the pairs take
 * a round more than the tiles (1584x1161x1192: 13 x 10 tiles, 70 pairs).
 * A plan that takes stream-K takes it rather than the twin (its kernel has
 * whole boxes); one whose last round stream-K declines takes the twin. The
 * lines are judged by the pitches (padded rows, after the table). */
static void test_multicast_twin_128x128(void **state)
{
    env e;
    env_open(&e, 1);
    static const struct {
        int64_t m, n, k;
        const char *config, *kernel;
        unsigned grid, cluster, b_box_rows;
    } cases[] = {
        {2597, 2165, 3624, NULL, "bc_gemm_sm90_128x128m", 132, 2, 64},
        {1100, 1200, 1000, "sm90_128x128", "bc_gemm_sm90_128x128m", 100, 2, 64},
        {1100, 1200, 1008, "sm90_128x128", "bc_gemm_sm90_128x128", 90, 1, 128},
        {1100, 1200, 888, "sm90_128x128", "bc_gemm_sm90_128x128", 90, 1, 128},
        {1100, 1200, 904, "sm90_128x128", "bc_gemm_sm90_128x128m", 100, 2, 64},
        {1100, 1200, 40, "sm90_128x128", "bc_gemm_sm90_128x128", 90, 1, 128},
        /* rows on the sectors: off the 128-byte lines from 64 k-blocks (K = 4080; not 4016, 63), on an even
         * number of tile rows or at least 7 (9 here; 7 and 28 below, not 5); never on the lines (K = 4096) */
        {1100, 1200, 4080, "sm90_128x128", "bc_gemm_sm90_128x128m", 100, 2, 64},
        {1100, 1200, 4016, "sm90_128x128", "bc_gemm_sm90_128x128", 90, 1, 128},
        {1100, 1200, 4096, "sm90_128x128", "bc_gemm_sm90_128x128", 90, 1, 128},
        {1100, 1200, 8192, "sm90_128x128", "bc_gemm_sm90_128x128", 90, 1, 128},
        {797, 1435, 4176, NULL, "bc_gemm_sm90_128x128m", 96, 2, 64},
        {589, 1435, 4176, "sm90_128x128", "bc_gemm_sm90_128x128", 60, 1, 128},
        {3528, 328, 4784, NULL, "bc_gemm_sm90_128x128m", 84, 2, 64},
        {1584, 1161, 1192, NULL, "bc_gemm_sm90_128x128", 130, 1, 128},
    };
    const fake_launch *l = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cases[i].m, cases[i].n, cases[i].k);
        d.config = cases[i].config;
        const bc_gemm_params p = launch_and_decode(&e, &d, &l);
        if (strcmp(l->kernel, cases[i].kernel) != 0 || l->grid[0] != cases[i].grid || l->cluster[0] != cases[i].cluster ||
            ((p.tmap_b[12] >> 16) & 0xffff) != cases[i].b_box_rows)
            fail_msg("%lldx%lldx%lld: %s grid %u cluster %u B box %u rows; want %s %u %u %u", (long long)cases[i].m,
                     (long long)cases[i].n, (long long)cases[i].k, l->kernel, l->grid[0], l->cluster[0],
                     (unsigned)((p.tmap_b[12] >> 16) & 0xffff), cases[i].kernel, cases[i].grid, cases[i].cluster,
                     cases[i].b_box_rows);
        const bc_gemm_plan_info info = plan_info(&e, &d);
        assert_string_equal(info.config, "sm90_128x128");
        assert_int_equal(info.multicast, cases[i].cluster == 2);
    }
    /* the lines are the pitches' (lda, ldb), not K's: K = 4080 with both rows padded to 4096 elements is on the
     * lines (no twin); with only A's padded, B's rows are still off them (the twin) */
    bc_gemm_desc pad = base_desc(&e, 1100, 1200, 4080);
    pad.config = "sm90_128x128";
    pad.lda = pad.ldb = 4096;
    launch_and_decode(&e, &pad, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128");
    pad.ldb = 4080;
    launch_and_decode(&e, &pad, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128m");
    env_close(&e);
    /* stream-K and the twin both possible: 1100x1200x8200, 9 x 10 tiles (50 pairs) in one partial round of
     * 129 k-blocks (stream-K: 88 a CTA, plus 28) */
    env_groups = BC_KERNELS_STREAM_K;
    env_open(&e, 1);
    env_groups = 0;
    bc_gemm_desc d = base_desc(&e, 1100, 1200, 8200);
    d.config = "sm90_128x128";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128m");
    d.stream_k = 1;
    const bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128k");
    assert_true(p.sk_ctas > 0);
    assert_int_equal((p.tmap_b[12] >> 16) & 0xffff, 128);
    const bc_gemm_plan_info info = plan_info(&e, &d);
    assert_int_equal(info.multicast, 0);
    /* 15 k-blocks: stream-K's share plus its cost (11 + 28) is no gain, so the twin */
    d.k = 904;
    const bc_gemm_params q = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128m");
    assert_int_equal(q.sk_ctas, 0);
    env_close(&e);
}

/* The narrow tiles' multicast twins (128x64m, 64x32m): clusters of four
 * on blocks of 2 x 2 tiles, each CTA loading half of its tile's A and B
 * rows for the block (boxes of 64 and 32, or 32 and 16 rows), where A's or
 * B's rows are off the 32-byte sectors, from 30 k-blocks, where the tiles
 * have two rows and two columns and the clusters the device holds at once
 * (the fake reports the H100's 30) need no more rounds than the tiles. */
static void test_multicast_twin_2x2(void **state)
{
    env e;
    env_open(&e, 1);
    fake_set_max_active_clusters(30);
    static const struct {
        int64_t m, n, k;
        const char *config, *kernel;
        unsigned grid, cluster, a_box_rows, b_box_rows;
    } cases[] = {
        /* 5 x 16 tiles: 3 x 8 blocks (the third row's CTAs past M), 96 CTAs; rows of 9104 bytes */
        {531, 976, 4552, NULL, "bc_gemm_sm90_128x64m", 96, 4, 64, 32},
        /* 2 x 47 tiles of 64x32: 24 blocks */
        {123, 1478, 6200, NULL, "bc_gemm_sm90_64x32m", 96, 4, 32, 16},
        /* rows on the sectors (9088 and 9120 bytes: on and off the 128-byte lines): no twin (named: off the
         * lines, the rule takes 128x128 for this crowded round, test_gemm_rule.c) */
        {531, 976, 4544, NULL, "bc_gemm_sm90_128x64", 80, 1, 128, 64},
        {531, 976, 4560, "sm90_128x64", "bc_gemm_sm90_128x64", 80, 1, 128, 64},
        /* 30 k-blocks: the least; 29 not */
        {531, 976, 1912, "sm90_128x64", "bc_gemm_sm90_128x64m", 96, 4, 64, 32},
        {531, 976, 1848, "sm90_128x64", "bc_gemm_sm90_128x64", 80, 1, 128, 64},
        /* one tile row: no block to share B (named: the rule takes 128x128 for this crowded round) */
        {96, 4792, 6024, "sm90_128x64", "bc_gemm_sm90_128x64", 75, 1, 128, 64},
        /* 2 x 64 tiles in one round, 32 blocks in two rounds of 30 */
        {128, 2048, 2040, "sm90_64x32", "bc_gemm_sm90_64x32", 128, 1, 64, 32},
        /* 253 tiles in two rounds, 72 blocks in three */
        {2917, 656, 10744, "sm90_128x64", "bc_gemm_sm90_128x64", 132, 1, 128, 64},
        /* 2 x 58 tiles in one round of 132, 29 blocks in one of 30; 2 x 62 tiles, 31 blocks in two */
        {256, 3712, 4088, "sm90_128x64", "bc_gemm_sm90_128x64m", 116, 4, 64, 32},
        {256, 3968, 4088, "sm90_128x64", "bc_gemm_sm90_128x64", 124, 1, 128, 64},
    };
    const fake_launch *l = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cases[i].m, cases[i].n, cases[i].k);
        d.config = cases[i].config;
        const bc_gemm_params p = launch_and_decode(&e, &d, &l);
        const unsigned ar = (unsigned)((p.tmap_a[12] >> 16) & 0xffff), br = (unsigned)((p.tmap_b[12] >> 16) & 0xffff);
        if (strcmp(l->kernel, cases[i].kernel) != 0 || l->grid[0] != cases[i].grid ||
            l->cluster[0] != cases[i].cluster || ar != cases[i].a_box_rows || br != cases[i].b_box_rows)
            fail_msg("%lldx%lldx%lld: %s grid %u cluster %u boxes %u/%u rows; want %s %u %u %u/%u",
                     (long long)cases[i].m, (long long)cases[i].n, (long long)cases[i].k, l->kernel, l->grid[0],
                     l->cluster[0], ar, br, cases[i].kernel, cases[i].grid, cases[i].cluster, cases[i].a_box_rows,
                     cases[i].b_box_rows);
        const bc_gemm_plan_info info = plan_info(&e, &d);
        assert_int_equal(info.multicast, cases[i].cluster == 4 ? 3 : 0);
        assert_int_equal(info.cluster_x, cases[i].cluster);
    }
    /* a device that holds 33 clusters of four (the fake's own count, 132 SMs / 4) takes 128x2048x2040's
     * 32 blocks in one round; one that holds none never takes the twin (531x976x4552's 80 tiles of 128x64
     * then crowd the round, and the rule takes 128x128: test_gemm_rule.c) */
    fake_set_max_active_clusters(-1);
    bc_gemm_desc d = base_desc(&e, 128, 2048, 2040);
    d.config = "sm90_64x32";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32m");
    assert_int_equal(l->grid[0], 128);
    fake_set_max_active_clusters(0);
    d = base_desc(&e, 531, 976, 4552);
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128");
    d.config = "sm90_128x64";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64");
    d.config = NULL;
    /* the occupancy query fails: so does the plan, saying which call */
    fake_set_max_active_clusters(30);
    fake_fail_entry(FAKE_E_cuOccupancyMaxActiveClusters, 1, CUDA_ERROR_UNKNOWN, 0);
    bc_gemm_plan *pl = (bc_gemm_plan *)(uintptr_t)0x1234;
    assert_status(bc_gemm_plan_create(e.dev, &d, &pl), BC_ERR_DRIVER);
    assert_ptr_equal(pl, (bc_gemm_plan *)(uintptr_t)0x1234);
    bc_error_detail det;
    bc_last_error(&det);
    assert_string_equal(det.call, "cuOccupancyMaxActiveClusters");
    env_close(&e);
}

/* The divisor a bc_udiv stands for: the least n with quotient 1. */
static uint32_t divisor_of(bc_udiv v)
{
    uint32_t lo = 1, hi = 0x7fffffffu;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2u;
        if (bc_udiv_q(mid, v) >= 1u)
            hi = mid;
        else
            lo = mid + 1u;
    }
    return lo;
}

/* The walk's divisors in the parameters (tile_sched.h, bc_tile_at): a
 * band's tiles, a band's rows and the last band's rows, over the tiles of
 * the whole-tile and stream-K kernels and over the blocks of the multicast
 * twins (bands of 8 tile rows: 4 block rows of a twin). */
static void test_raster_divisors(void **state)
{
    env e;
    env_groups = BC_KERNELS_STREAM_K;
    env_open(&e, 1);
    env_groups = 0;
    fake_set_max_active_clusters(30);
    static const struct {
        int64_t m, n, k;
        const char *config, *kernel;
        int stream_k;
        uint32_t band, rows, last_rows;
    } cases[] = {
        /* 16 x 8 tiles */
        {2048, 2048, 2048, NULL, "bc_gemm_sm90_128x256", 0, 64, 8, 8},
        /* 16 x 8 tiles in 8 x 8 pairs */
        {2048, 2048, 2040, NULL, "bc_gemm_sm90_128x256m", 0, 32, 4, 4},
        /* 5 x 16 tiles in 3 x 8 blocks */
        {531, 976, 4552, NULL, "bc_gemm_sm90_128x64m", 0, 32, 4, 3},
        /* 21 x 32 tiles */
        {1300, 1000, 1024, "sm90_64x32", "bc_gemm_sm90_64x32", 0, 256, 8, 5},
        /* 9 x 10 tiles, the last by stream-K */
        {1100, 1200, 8200, "sm90_128x128", "bc_gemm_sm90_128x128k", 1, 80, 8, 1},
    };
    const fake_launch *l = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cases[i].m, cases[i].n, cases[i].k);
        d.config = cases[i].config;
        d.stream_k = (uint32_t)cases[i].stream_k;
        const bc_gemm_params p = launch_and_decode(&e, &d, &l);
        assert_string_equal(l->kernel, cases[i].kernel);
        const uint32_t band = divisor_of(p.raster.band), rows = divisor_of(p.raster.rows);
        const uint32_t last = divisor_of(p.raster.last_rows);
        if (band != cases[i].band || rows != cases[i].rows || last != cases[i].last_rows)
            fail_msg("%lldx%lldx%lld: divisors %u %u %u; want %u %u %u", (long long)cases[i].m, (long long)cases[i].n,
                     (long long)cases[i].k, band, rows, last, cases[i].band, cases[i].rows, cases[i].last_rows);
    }
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_multicast_twin),
        ft_test(test_multicast_twin_128x128),
        ft_test(test_multicast_twin_2x2),
        ft_test(test_raster_divisors),
    };
    return cmocka_run_group_tests_name("gemm_multicast", tests, NULL, NULL);
}
