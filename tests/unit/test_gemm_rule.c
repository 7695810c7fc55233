/* The configuration rule on the fake driver (an H100-like device, 132 SMs):
 * the documented choices on the benchmark list's shapes, the credit of the
 * wide tiles for rows off the 128-byte grid, 128x128 for D rows off 16
 * bytes on large short-K grids, 128x64t at 3 and 4 k-blocks with rows on
 * the sectors, the skinny split within one round of clusters, one tile row
 * of 256 columns for M <= 64, and N = 1 run transposed (the dot and GEMV
 * kernels' plans: test_gemm_rule_rows.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gemm_plan_env.h"

static void test_config_rule(void **state)
{
    env e;
    env_open(&e, 1);
    fake_set_max_active_clusters(30); /* clusters of four the H100 holds at once (the fake's own count: 33) */
    typedef struct {
        int64_t m, n, k;
        const char *kernel;
        uint32_t split; /* 0: not checked */
    } rule_case;
    static const rule_case cases[] = {
        {8192, 8192, 8192, "bc_gemm_sm90_128x256", 0}, {2048, 2048, 2048, "bc_gemm_sm90_128x256", 0},
        {4096, 4096, 1024, "bc_gemm_sm90_128x256", 0}, {512, 4096, 4096, "bc_gemm_sm90_128x128", 0},
        {1024, 1024, 1024, "bc_gemm_sm90_128x64", 0},  {256, 4096, 4096, "bc_gemm_sm90_128x64", 0},
        {128, 2048, 2048, "bc_gemm_sm90_64x32", 0},    {64, 1024, 1024, "bc_gemm_sm90_64x32", 0},
        {17, 4096, 4096, "bc_gemm_sm90_64x32", 0},
        /* min(M, N) <= 16, K past 128 and a multiple of 8, where the dot kernel does not take it: the GEMV
         * kernel, K split over a cluster while each CTA keeps 64 steps of 32 and the clusters fit a round of
         * two CTAs an SM (1x256x16384: 32 runs of 8 rows, 4 ways, 128 CTAs of the 198 clusters of 4 may
         * fill; 8 ways would be 256); 1x4096x4096 512 runs, whole */
        {9, 80, 200, "bc_gemm_sm90_gemv", 1},          {1, 4096, 4096, "bc_gemm_sm90_gemv", 1},
        {16, 4096, 4096, "bc_gemm_sm90_gemv", 1},      {9, 1000, 200, "bc_gemm_sm90_gemv", 1},
        {9, 1000, 2000, "bc_gemm_sm90_gemv", 1},       {9, 10, 10528, "bc_gemm_sm90_gemv", 4},
        {4096, 16, 4096, "bc_gemm_sm90_gemv", 1},      {1, 256, 16384, "bc_gemm_sm90_gemv", 4},
        {27, 9, 5192, "bc_gemm_sm90_gemv", 2},         {16, 4096, 264, "bc_gemm_sm90_gemv", 1},
        /* ... and at K <= 128 too (the short-K twins took those before; gemm_rule.c, takes_gemv) */
        {16, 4096, 128, "bc_gemm_sm90_gemv", 1},       {1, 10746, 16, "bc_gemm_sm90_gemv", 1},
        {3, 600, 16, "bc_gemm_sm90_gemv", 1},          {1, 1, 8, "bc_gemm_sm90_gemv", 1},
        {16, 32, 128, "bc_gemm_sm90_gemv", 1},         {16, 4096, 64, "bc_gemm_sm90_gemv", 1},
        {1, 1, 128, "bc_gemm_sm90_gemv", 1},           {4096, 16, 8, "bc_gemm_sm90_gemv", 1},
        {12, 1, 56, "bc_gemm_sm90_gemv", 1},
        /* few tiles, long K: split over a cluster pays for its reduction; the narrow tile's split where
         * its CTAs fit a round (128x128x65536: 64x32s 8 ways, 64 CTAs, 2048 x (128 + 12) / 0.30 = 955733
         * against 128x128s 8 ways 16384 x (128 + 24) / 0.90 = 2767075; 256x512x32768: 128x128s 8 ways 16384
         * x (64 + 24) / 0.90 = 1601991 against 64x32s 2 ways 2048 x (256 + 12) / 0.30 = 1829546) */
        {128, 128, 65536, "bc_gemm_sm90_64x32s", 0},   {256, 512, 32768, "bc_gemm_sm90_128x128s", 0},
        /* M past the skinny range, few 64-row tiles: 64x1024x2048 32 tiles 2 ways (16 + 12 against 32);
         * 64x1024x1024 and 60x768x768 whole (8 + 12 against 16; 3 + 12 against 12) */
        {64, 1024, 2048, "bc_gemm_sm90_64x32s", 0},
        {60, 768, 768, "bc_gemm_sm90_64x32", 0},
        /* K of at most 2 k-blocks and M above 16: a short-K twin outright, 128x64t or 64x32t by the cost
         * (ties to 64x32t), however many outputs; 3 and 4 k-blocks: 128x64t where its tiles outnumber half
         * the SMs and the rows lie on the 32-byte sectors (test_short_k_sectors), else the cost model; M <= 16:
         * the GEMV kernel (above; for resident plans the skinny short-K twin, below); 17-32 rows up to 4096
         * columns: its 32-row twin */
        {4132, 3275, 16, "bc_gemm_sm90_128x64t", 0},   {2048, 2048, 128, "bc_gemm_sm90_128x64t", 0},
        {33, 4096, 64, "bc_gemm_sm90_64x32t", 0},      {2048, 2048, 192, "bc_gemm_sm90_128x64t", 0},
        {17, 4096, 64, "bc_gemm_sm90_gemv32", 1},      {17, 4097, 64, "bc_gemm_sm90_64x32t", 0},
        {256, 2890, 64, "bc_gemm_sm90_128x64t", 0},    {1000, 300, 64, "bc_gemm_sm90_64x32t", 0},
        {4000, 51, 128, "bc_gemm_sm90_64x32t", 0},     {4000, 300, 128, "bc_gemm_sm90_128x64t", 0},
        {7000, 7168, 64, "bc_gemm_sm90_128x128", 0}, /* 128x64t's alternative (test_d_alt) */
        {16, 4096, 192, "bc_gemm_sm90_gemv", 1},       {12, 2113, 256, "bc_gemm_sm90_gemv", 1},
        /* ... the 128-row one with tiles for at least a quarter of the SMs (33 of 132): 100x100x64 has 2,
         * and takes the 64 x 32 twin (no tile is smaller, so any number of tiles) */
        {100, 100, 64, "bc_gemm_sm90_64x32t", 0},
        /* a few outputs with K past the short-K twins' 128: the dot kernel outright, K over a cluster of up to
         * 8 CTAs with at least 256 16-byte chunks each */
        {1, 1, 200, "bc_gemm_sm90_dot", 1},            {1, 64, 512, "bc_gemm_sm90_dot", 1},
        {7, 1, 10528, "bc_gemm_sm90_dot", 4},          {8, 8, 16384, "bc_gemm_sm90_dot", 8},
        {2, 3, 4096, "bc_gemm_sm90_dot", 2},
        {65, 1, 200, "bc_gemm_sm90_dot", 1},           {9, 8, 1000, "bc_gemm_sm90_gemv", 1},
        /* ... up to 8 rows on the smaller side, 64 outputs and 5120 16-byte loads a CTA and, with 5 or more rows
         * on the smaller side, K past 2048: else the GEMV kernel (9x8x1000 above;
         * 1x256x16384: 22 rows a cluster of 8, 22 x 256 x 2 = 11264 loads; 2x1024x4096: 16 x 256 x 3 = 12288;
         * 1x1536x4096: 24 x 256 x 2 = 12288; the edges in test_gemv_kernel; for resident plans the skinny tiles,
         * below) */
        {2, 1024, 4096, "bc_gemm_sm90_gemv", 2},       {1, 1536, 4096, "bc_gemm_sm90_gemv", 1},
        /* up to 4 k-blocks 128x256 costs 20% more (its epilogue is most of a tile there), and 128x256 again
         * from 5 k-blocks (2642x2648x320: 231 tiles of 128x256, 2 rounds x 2 x 5 / 100 = 0.200 against
         * 128x128's 4 x 5 / 90 = 0.222); rows off the sectors keep 128x256's credit (17%), which nearly
         * cancels the surcharge (3638x4136x248: 493 tiles, 4 x 2 x 4 / 100 x 1.20 / 1.17 = 0.328 against 8 x 4
         * / 90 = 0.356). On the sectors 128x64t now takes 3 and 4 k-blocks on such grids (2642x2648x256 and
         * 3544x6196x192 went to 128x128 by the surcharge before). */
        {2642, 2648, 256, "bc_gemm_sm90_128x64t", 1},  {2642, 2648, 320, "bc_gemm_sm90_128x256", 1},
        {3638, 4136, 248, "bc_gemm_sm90_128x256", 1},  {3544, 6196, 192, "bc_gemm_sm90_128x64t", 1},
        /* a single round of 128x64 on more than half the SMs (67..132 tiles) where 128x128's is on less than
         * half (at most 65), from 24 k-blocks, A's and B's rows off the 128-byte lines: 128x128; 138x2361x4240
         * 74 tiles against 38; 181x3849x2200 122 against 62 (rows off the sectors, but its 31 blocks of 2 x 2
         * exceed the 30 clusters of four a round holds) */
        {138, 2361, 4240, "bc_gemm_sm90_128x128", 1},  {131, 2554, 3312, "bc_gemm_sm90_128x128", 1},
        {181, 3849, 2200, "bc_gemm_sm90_128x128", 1},  {138, 2361, 1480, "bc_gemm_sm90_128x128", 1},
        /* ... not on the lines (256x4096x4096, above; 138x2361x4224), nor below 24 k-blocks (1480 above is 24,
         * 1464 is 23), nor at 66 tiles of 128x64 (130x2112x3024) or 66 of 128x128 (348x2775x2088: 132 against
         * 66), nor where the 2 x 2 twin takes the plan (500x1150x2200: 4 x 18 tiles, 18 blocks) */
        {138, 2361, 4224, "bc_gemm_sm90_128x64", 1},   {138, 2361, 1464, "bc_gemm_sm90_128x64", 1},
        {130, 2112, 3024, "bc_gemm_sm90_128x64", 1},   {348, 2775, 2088, "bc_gemm_sm90_128x64", 1},
        {500, 1150, 2200, "bc_gemm_sm90_128x64m", 1},
    };
    /* Resident plans (bc_gemm_desc.resident = 1: the rule leaves the dot and GEMV kernels out). M <= 16: 64x32 with 16-row A
     * stages ... */
    static const rule_case resident_cases[] = {
        {9, 80, 200, "bc_gemm_sm90_64x32m16", 0},      {1, 4096, 4096, "bc_gemm_sm90_64x32m16", 0},
        {16, 4096, 4096, "bc_gemm_sm90_64x32m16", 0},  {9, 1000, 200, "bc_gemm_sm90_64x32m16", 0},
        /* ... the skinny short-K twin at 3 or 4 k-blocks with more tiles than half the SMs (67 of 132: N =
         * 2113; 66 tiles, N = 2112, keep the whole-tile kernel; 5 k-blocks never) */
        {16, 4096, 192, "bc_gemm_sm90_64x32m16t", 0},  {12, 2113, 256, "bc_gemm_sm90_64x32m16t", 0},
        {12, 2112, 256, "bc_gemm_sm90_64x32m16", 0},   {16, 4096, 264, "bc_gemm_sm90_64x32m16", 0},
        /* ... and split over a cluster when few tiles walk a long K */
        {9, 1000, 2000, "bc_gemm_sm90_64x32m16s", 0},  {9, 10, 10528, "bc_gemm_sm90_64x32m16s", 0},
        /* M past the skinny range, few 64-row tiles: 27x9x5192 one tile 8 ways (11 + 12 k-blocks against 82) */
        {27, 9, 5192, "bc_gemm_sm90_64x32s", 0},
        /* the skinny split's exchange costs 8 k-blocks, and clusters of 8 on more than 56 SMs 5 more (the
         * split checked too) */
        {16, 256, 512, "bc_gemm_sm90_64x32m16", 1},   /* 8 k-blocks: 1 + 8 + 5 on 8 ways (64 CTAs), 2 + 8 > 8 */
        {9, 65, 512, "bc_gemm_sm90_64x32m16", 1},     /* 1 + 8 on 8 ways > 8 */
        {9, 320, 1024, "bc_gemm_sm90_64x32m16s", 4},  /* 10 tiles: 8 ways (80 CTAs) 2 + 8 + 5 > 4 ways' 4 + 8 */
        {9, 192, 1024, "bc_gemm_sm90_64x32m16s", 8},  /* 6 tiles: 48 CTAs of clusters of 8, 2 + 8 */
        {9, 224, 1024, "bc_gemm_sm90_64x32m16s", 8},  /* 7 tiles: 56 CTAs, 2 + 8 */
        {16, 256, 4096, "bc_gemm_sm90_64x32m16s", 8}, /* 8 tiles, 64 k-blocks: 8 + 8 + 5 < 16 + 8 */
        {16, 1024, 1024, "bc_gemm_sm90_64x32m16", 1}, /* 32 tiles: 8 + 8 ties 16, the whole tile */
        {9, 2048, 1024, "bc_gemm_sm90_64x32m16", 1},  /* 64 tiles: the same */
        {16, 1024, 2048, "bc_gemm_sm90_64x32m16s", 2}, /* 16 + 8 < 32; 4 ways is 128 CTAs, over 99 */
        /* shapes the dot kernel would have run as a launched plan but for its loads (2x500x8192: 21 rows a
         * cluster of 4, 16128; 1x1650x4096: 25 x 256 x 2 = 12800), and 9 rows */
        {9, 9, 1000, "bc_gemm_sm90_64x32m16s", 0},     {2, 500, 8192, "bc_gemm_sm90_64x32m16s", 0},
        {1, 1650, 4096, "bc_gemm_sm90_64x32m16s", 0},
        /* the dot kernel has no resident kernel either */
        {1, 1, 200, "bc_gemm_sm90_64x32m16", 0},
    };
    const fake_launch *l = NULL;
    const size_t nc = sizeof cases / sizeof cases[0], nr = sizeof resident_cases / sizeof resident_cases[0];
    for (size_t j = 0; j < nc + nr; j++) {
        const int r = j >= nc;
        const size_t i = r ? j - nc : j;
        /* the fake never touches the buffers: the shapes may exceed them */
        const rule_case *c = r ? &resident_cases[i] : &cases[i];
        bc_gemm_desc d = base_desc(&e, c->m, c->n, c->k);
        d.resident = (uint32_t)r;
        const char *want = c->kernel;
        const uint32_t want_split = c->split;
        const uint32_t split = launch_and_decode(&e, &d, &l).split_k;
        /* the configuration's kernel, or its dense-row one, or its multicast twin (tested below) */
        const size_t kl = strlen(want);
        if (strncmp(l->kernel, want, kl) != 0 ||
            (l->kernel[kl] != 0 && strcmp(l->kernel + kl, "d") != 0 && strcmp(l->kernel + kl, "m") != 0) ||
            (want_split && split != want_split))
            fail_msg("%lldx%lldx%lld%s: chose %s split %u, the rule says %s split %u", (long long)d.m, (long long)d.n,
                     (long long)d.k, r ? " (resident)" : "", l->kernel, split, want, want_split);
    }
    bc_gemm_desc d;
    /* a resident plan keeps the rule's 128x64 in a crowded round (the executor runs a network's tile plans in
     * one kernel); the launched plan of the same shape takes 128x128 (above) */
    d = base_desc(&e, 138, 2361, 4240);
    d.resident = 1;
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64");
    /* the skinny split: 32 tiles x 32 k-blocks take 2 ways (64 CTAs), not 4 (128 CTAs of clusters of 4 are
     * over the 75% of the 132 SMs a round of its clusters holds); one tile of 165 k-blocks takes 8 */
    d = base_desc(&e, 16, 1024, 2048);
    d.resident = 1;
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 2);
    d = base_desc(&e, 9, 10, 10528);
    d.resident = 1;
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 8);
    d = base_desc(&e, 27, 9, 5192);
    d.resident = 1;
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 8);
    d = base_desc(&e, 64, 1024, 2048);
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 2);
    d = base_desc(&e, 64, 512, 4096); /* 16 tiles: 8 ways (128 CTAs) is over the 99 a round of clusters of 8 holds */
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 4);
    d = base_desc(&e, 4096, 4096, 4096);
    d.config = "sm90_64x32";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32");
    const bc_gemm_plan_info info = plan_info(&e, &d);
    assert_string_equal(info.config, "sm90_64x32");
    assert_int_equal(info.tile_m, 64), assert_int_equal(info.tile_n, 32), assert_int_equal(info.tile_k, 64);
    assert_int_equal(info.tiles, 64 * 128);
    /* the short-K twin: a persistent grid of two CTAs an SM (264 on 132), its 2-stage ring; named, any K */
    d = base_desc(&e, 4132, 3275, 16);
    launch_and_decode(&e, &d, &l);
    assert_int_equal(l->grid[0], 264);
    assert_int_equal(l->smem, BC_SM90_SMEM_OF(BC_SM90_CFG_128X64T));
    assert_true(BC_SM90_SMEM_OF(BC_SM90_CFG_128X64T) * 2 <= 232448);
    d = base_desc(&e, 1, 40000, 16); /* the skinny twin, named: 1250 tiles on four CTAs an SM */
    d.config = "sm90_64x32m16t";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32m16t");
    assert_int_equal(l->grid[0], 528);
    d = base_desc(&e, 1000, 1000, 64); /* 8 x 16 tiles: one CTA each */
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64t");
    assert_int_equal(l->grid[0], 128);
    d = base_desc(&e, 2048, 2048, 2048);
    d.config = "sm90_128x64t";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64t");
    /* the operand maps promote 128-byte lines into L2 (word 2 of the fake's encoding, bits 32..39) */
    d = base_desc(&e, 2048, 2048, 2040);
    const bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_int_equal((p.tmap_a[2] >> 32) & 0xFF, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
    assert_int_equal((p.tmap_b[2] >> 32) & 0xFF, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
    assert_int_equal((p.tmap_d[2] >> 32) & 0xFF, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
    env_close(&e);
}

/* 128x64t at 3 and 4 k-blocks (gemm_family_sm90.c, BC_SM90_SHORT_K_SECTOR_KB): only with A's and B's rows
 * on the 32-byte sectors and more of its tiles than half the 132 SMs; each bound at its edge. */
static void test_short_k_sectors(void **state)
{
    (void)state;
    env e;
    env_open(&e, 1);
    static const struct {
        int64_t m, n, k, lda;
        const char *kernel; /* the launched kernel's name starts with it; NULL: not 128x64t */
    } cases[] = {
        {128, 4288, 192, 192, "bc_gemm_sm90_128x64t"}, /* 67 tiles, 3 k-blocks, rows of 384 bytes */
        {128, 4224, 192, 192, NULL},                   /* 66 tiles: not more than half the SMs */
        {128, 4288, 256, 256, "bc_gemm_sm90_128x64t"}, /* 4 k-blocks */
        {128, 4288, 264, 264, NULL},                   /* 5 k-blocks */
        {128, 4288, 192, 200, NULL},                   /* A's rows of 400 bytes: off the sectors */
        {128, 4288, 200, 200, NULL},                   /* both operands' rows of 400 bytes */
        {2048, 2048, 136, 136, NULL},                  /* rows of 272 bytes */
        {2048, 2048, 144, 144, "bc_gemm_sm90_128x64t"}, /* rows of 288 bytes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cases[i].m, cases[i].n, cases[i].k);
        d.lda = cases[i].lda;
        const fake_launch *l = NULL;
        launch_and_decode(&e, &d, &l);
        const int twin = strncmp(l->kernel, "bc_gemm_sm90_128x64t", 20) == 0;
        if (cases[i].kernel != NULL ? !twin : twin)
            fail_msg("%lldx%lldx%lld lda %lld: chose %s", (long long)cases[i].m, (long long)cases[i].n,
                     (long long)cases[i].k, (long long)cases[i].lda, l->kernel);
    }
    env_close(&e);
}

/* Rows of A or B off the 128-byte grid: the 256-wide tiles lose least
 * there, and the rule credits them (gemm_family_sm90.c,
 * BC_SM90_OFF_LINE_PCT). 3000x3000 and 700x12000 take 128x128 with their
 * rows on the grid and 128x256 with them off it (measured on the H100:
 * 3000x3000x2056 113.4 us on 128x128, 98.9 on 128x256). The pitch decides,
 * not K: the same K with rows padded onto the grid keeps 128x128. Off the
 * lines (pitch a multiple of 32 bytes) the credit grows with K: at 9
 * k-blocks it is 3%, too little to move 3000x3000x544 (128x128 27.1 us,
 * 128x256 30.2). */
static void test_off_grid_credit(void **state)
{
    env e;
    env_open(&e, 1);
    static const struct {
        int64_t m, n, k, ld; /* ld: A's and B's leading dimension, 0 = K */
        const char *config;
    } cases[] = {
        {3000, 3000, 2048, 0, "sm90_128x128"},    /* on the grid */
        {3000, 3000, 2056, 0, "sm90_128x256"},    /* off the 32-byte sectors */
        {3000, 3000, 2072, 0, "sm90_128x256"},
        {3000, 3000, 2080, 0, "sm90_128x256"},    /* off the lines, 33 k-blocks: the full 13% */
        {3000, 3000, 2056, 2112, "sm90_128x128"}, /* the same K, rows padded onto the grid */
        {3000, 3000, 544, 0, "sm90_128x128"},     /* off the lines, 9 k-blocks: 3% */
        {700, 12000, 2064, 0, "sm90_128x256"},    {700, 12000, 2048, 0, "sm90_128x128"},
        {700, 12000, 520, 0, "sm90_128x256"},
        /* off the sectors from 15 k-blocks on at most 16 tile rows, where the twins can meet: 25%
         * (2048x2100: 144 tiles of 128x256, 2 rounds x 2, against 272 of 128x128, 3 rounds x 100 / 90:
         * 1.20, between 1.17 and 1.25); 17 tile rows, 14 k-blocks and rows on the sectors keep 17% or
         * less */
        {2048, 2100, 5416, 0, "sm90_128x256"},    {2049, 2100, 5416, 0, "sm90_128x128"},
        {2048, 2100, 904, 0, "sm90_128x256"},     {2048, 2100, 888, 0, "sm90_128x128"},
        {2048, 2100, 5424, 0, "sm90_128x128"},    {351, 11576, 5416, 0, "sm90_128x256"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cases[i].m, cases[i].n, cases[i].k);
        if (cases[i].ld)
            d.lda = d.ldb = cases[i].ld;
        const bc_gemm_plan_info info = plan_info(&e, &d);
        if (strcmp(info.config, cases[i].config) != 0)
            fail_msg("%lldx%lldx%lld ld %lld: chose %s, the rule says %s", (long long)cases[i].m, (long long)cases[i].n,
                     (long long)cases[i].k, (long long)cases[i].ld, info.config, cases[i].config);
    }
    env_close(&e);
}

/* Where the rule chooses 128x64t with a plain epilogue on more than one
 * tile column, the plan runs 128x128 (gemm_family_sm90.c): for a D whose
 * rows are off 16 bytes (the copy-out epilogue) on at least 31 rounds of
 * its tiles for a 16-bit D (31 x 132 = 4092) or 10 for an f32 one (1320;
 * BC_SM90_UD_MIN_ROUNDS, BC_SM90_UD_MIN_ROUNDS_F32); for one whose rows are
 * on 16 bytes (the TMA store) on at least 14 rounds (1848;
 * BC_SM90_AD_MIN_ROUNDS), K from 48 (BC_SM90_AD_MIN_K) within 2 k-blocks,
 * unless the plan takes the dense-row kernel; neither for a resident plan,
 * nor for a stream-K plan whose alternative's stream-K twin is not
 * loaded. At the edge, on each side of each condition. */
static void test_d_alt(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;
    static const struct {
        int64_t m, n, k;
        int d_type, epi; /* 0 plain, 1 a C, 2 a bias, 3 ReLU, 4 resident, 5 stream-K (its group not loaded) */
        const char *config; /* the one named, or NULL */
        const char *kernel;
    } cases[] = {
        {7000, 7191, 64, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x128"},      /* 55 x 113 = 6215 tiles */
        {3968, 8441, 16, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x128"},      /* 31 x 132 = 4092 */
        {3968, 8441, 16, BC_DTYPE_F16, 0, NULL, "bc_gemm_sm90_128x128"},
        {3968, 8379, 16, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x64td"},     /* 31 x 131 = 4061 */
        {3968, 8448, 16, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x64td"},     /* rows on 16 bytes */
        {3968, 8444, 16, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x128"},      /* 8 bytes off */
        {1280, 8441, 16, BC_DTYPE_F32, 0, NULL, "bc_gemm_sm90_128x128"},       /* f32 D: 10 x 132 = 1320 */
        {1280, 8379, 16, BC_DTYPE_F32, 0, NULL, "bc_gemm_sm90_128x64td"},      /* 10 x 131 = 1310 */
        {1280, 8444, 16, BC_DTYPE_F32, 0, NULL, "bc_gemm_sm90_128x64td"},      /* f32 rows on 16 bytes */
        {1280, 8442, 16, BC_DTYPE_F32, 0, NULL, "bc_gemm_sm90_128x128"},       /* 8 bytes off */
        {1280, 8441, 16, BC_DTYPE_F32, 2, NULL, "bc_gemm_sm90_128x64td"},      /* f32 with a bias */
        {3968, 8441, 16, BC_DTYPE_F32, 0, NULL, "bc_gemm_sm90_128x128"},
        {3968, 8441, 16, BC_DTYPE_BF16, 1, NULL, "bc_gemm_sm90_128x64td"},     /* C: the thread epilogue */
        {3968, 8441, 16, BC_DTYPE_BF16, 2, NULL, "bc_gemm_sm90_128x64td"},     /* a bias: 128x128 lost */
        {3968, 8441, 16, BC_DTYPE_BF16, 3, NULL, "bc_gemm_sm90_128x64td"},     /* ReLU: not measured */
        {3968, 8441, 16, BC_DTYPE_BF16, 0, "sm90_128x64t", "bc_gemm_sm90_128x64td"}, /* named */
        {7000, 7191, 320, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x256"},     /* K past the twin's */
        /* D rows on 16 bytes: 14 rounds, K of 1 or 2 k-blocks, not on the dense-row kernel (K = 64: a whole
         * k-block; K = 16 takes it) */
        {7000, 7168, 64, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x128"},      /* 55 x 112 = 6160 tiles */
        {1792, 8448, 64, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x128"},      /* 14 x 132 = 1848 */
        {1792, 8448, 128, BC_DTYPE_F16, 0, NULL, "bc_gemm_sm90_128x128"},      /* 2 k-blocks */
        {1792, 8448, 64, BC_DTYPE_F32, 0, NULL, "bc_gemm_sm90_128x128"},       /* f32 D */
        {1792, 8384, 64, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x64t"},      /* 14 x 131 = 1834 */
        {1792, 8448, 192, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x64t"},     /* 3 k-blocks */
        {1792, 8448, 16, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x64td"},     /* the dense-row kernel */
        {1792, 8448, 64, BC_DTYPE_BF16, 1, NULL, "bc_gemm_sm90_128x64t"},      /* C */
        {1792, 8448, 64, BC_DTYPE_BF16, 2, NULL, "bc_gemm_sm90_128x64t"},      /* a bias */
        {1792, 8448, 64, BC_DTYPE_BF16, 3, NULL, "bc_gemm_sm90_128x64t"},      /* ReLU */
        {1792, 8448, 64, BC_DTYPE_BF16, 0, "sm90_128x64t", "bc_gemm_sm90_128x64t"}, /* named */
        /* K = 56 saves 50% of A's row requests, under the dense-row kernel's 55%; 60 x 31 = 1860 tiles, the
         * dense-row kernel refused (31 CTAs on a row, under 32): K = 48 moves, K = 16 (under 48) does not */
        {1792, 8448, 56, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x128"},
        {7680, 1984, 48, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x128"},
        {7680, 1984, 16, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x64t"},
        {7680, 1984, 40, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x64t"},
        /* one tile column of 128x64t: 128x128 would run as many tiles on fewer CTAs (either D) */
        {240000, 64, 64, BC_DTYPE_BF16, 0, NULL, "bc_gemm_sm90_128x64t"},
        {240000, 63, 64, BC_DTYPE_F32, 0, NULL, "bc_gemm_sm90_128x64t"},
        {240000, 65, 64, BC_DTYPE_F32, 0, NULL, "bc_gemm_sm90_128x128"},
        /* a resident plan keeps the rule's choice (the executor runs a network's tile plans in one kernel), D
         * rows on 16 bytes or off them (its launch keeps the dense-row kernel; the executor's 128x64 kernel loads
         * A by its tensor map) */
        {1792, 8448, 64, BC_DTYPE_BF16, 4, NULL, "bc_gemm_sm90_128x64t"},
        {3968, 8441, 16, BC_DTYPE_BF16, 4, NULL, "bc_gemm_sm90_128x64td"},
        {1280, 8441, 16, BC_DTYPE_F32, 4, NULL, "bc_gemm_sm90_128x64td"},
        /* a plan that allows stream-K, on a device without the stream-K twins: the choice, not an error (D
         * rows on 16 bytes and off) */
        {1792, 8448, 64, BC_DTYPE_BF16, 5, NULL, "bc_gemm_sm90_128x64t"},
        {3968, 8441, 16, BC_DTYPE_BF16, 5, NULL, "bc_gemm_sm90_128x64td"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cases[i].m, cases[i].n, cases[i].k);
        d.d_type = (bc_dtype)cases[i].d_type;
        d.config = cases[i].config;
        if (cases[i].epi == 1) {
            d.beta = 1.0f;
            d.c = d.d;
        }
        if (cases[i].epi == 2)
            d.bias = d.a;
        d.relu = cases[i].epi == 3;
        d.resident = cases[i].epi == 4;
        d.stream_k = cases[i].epi == 5;
        launch_and_decode(&e, &d, &l);
        if (strcmp(l->kernel, cases[i].kernel) != 0)
            fail_msg("%lldx%lldx%lld (D type %d, epilogue %d, %s): %s, expected %s", (long long)cases[i].m,
                     (long long)cases[i].n, (long long)cases[i].k, cases[i].d_type, cases[i].epi,
                     cases[i].config ? cases[i].config : "the rule", l->kernel, cases[i].kernel);
    }
    /* a padded D, its pitch on 16 bytes but not its N: it copies out (a TMA store would write past N), so
     * the copy-out's bounds apply, not the TMA store's: 14 rounds keep 128x64t, 31 move */
    bc_gemm_desc d = base_desc(&e, 1792, 8447, 64);
    d.ldd = 8448;
    bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64t");
    assert_int_equal(p.flags & BC_GEMM_F_TMA_STORE, 0);
    d = base_desc(&e, 1792, 8448, 64); /* N on 16 bytes as well: the TMA store's 14 rounds */
    d.ldd = 8456;
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128");
    assert_int_equal(p.flags & BC_GEMM_F_TMA_STORE, BC_GEMM_F_TMA_STORE);
    d = base_desc(&e, 3968, 8441, 16);
    d.ldd = 8448;
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128");
    assert_int_equal(p.flags & BC_GEMM_F_TMA_STORE, 0);
    env_close(&e);
}

/* Skinny splits stay within one round of clusters: 64 tiles split 2 ways
 * (128 CTAs in clusters of 2 fill the 132 SMs at once), not 4 ways (256
 * CTAs: three rounds of the 99 CTAs that clusters of 4 hold); 128 tiles
 * run whole. A split the caller asks for is kept. */
static void test_skinny_split_one_round(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;
    /* resident plans: the rule leaves the GEMV kernel out of them */
    bc_gemm_desc d = base_desc(&e, 1, 2048, 4640);
    d.resident = 1;
    bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32m16s");
    assert_int_equal(p.split_k, 2);
    assert_int_equal(l->grid[0], 128);
    d = base_desc(&e, 1, 1000, 10656); /* 32 tiles: 8 ways (256 CTAs) and 4 ways (128) exceed a round */
    d.resident = 1;
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 2);
    d = base_desc(&e, 16, 4096, 4096);
    d.resident = 1;
    expect_kernel(&e, &d, "bc_gemm_sm90_64x32m16");
    d = base_desc(&e, 1, 2048, 4640); /* a split asked for leaves the problem to the tile kernels */
    d.split_k = 8;
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 8);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32m16s");
    env_close(&e);
}

/* One tile row of 256 columns (gemm_family_sm90.c, SM90_ROW_CONFIG): for M
 * <= 64 from 16 k-blocks, whole or split at most 4 ways within one round of
 * its clusters. Each bound at its edge: M 64 against 65 (128x128 above),
 * 16 k-blocks against 15, a split of 4 where 8 would cost less (10 tiles), 2
 * where 4 ways' 128 CTAs in clusters of 4 are past the 99 a round holds
 * (32 tiles), also where the plan names the split twin without a split.
 * A split the caller asks for is kept. */
static void test_row_tile(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;
    bc_gemm_desc d = base_desc(&e, 56, 10928, 3088); /* 43 tiles down 49 k-blocks */
    bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x256");
    assert_int_equal(p.split_k, 1);
    assert_int_equal(l->grid[0], 43);
    d = base_desc(&e, 64, 10928, 3088);
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x256");
    d = base_desc(&e, 65, 10928, 3088);
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128");
    d = base_desc(&e, 56, 10928, 1024); /* 16 k-blocks */
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x256");
    d = base_desc(&e, 56, 10928, 960); /* 15 */
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x128");
    d = base_desc(&e, 32, 2560, 16384); /* 10 tiles down 256 k-blocks */
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x256s");
    assert_int_equal(p.split_k, 4);
    assert_int_equal(l->grid[0], 40);
    d = base_desc(&e, 22, 8080, 5560); /* 32 tiles down 87 k-blocks */
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x256s");
    assert_int_equal(p.split_k, 2);
    d = base_desc(&e, 32, 2560, 16384);
    d.config = "sm90_64x256s"; /* named without a split: still at most 4 ways */
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 4);
    d.split_k = 8;
    assert_int_equal(launch_and_decode(&e, &d, &l).split_k, 8);
    d = base_desc(&e, 300, 2560, 64); /* named, any M and K */
    d.config = "sm90_64x256";
    launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x256");
    assert_int_equal(l->grid[0], 50);
    env_close(&e);
}

/* N = 1 with D one contiguous column, a plan the dot and GEMV kernels do
 * not take (a resident one), runs transposed (1 x M x K on the skinny
 * configurations) where the 64-row grid would leave most SMs idle and K is
 * long, and wherever K is within the skinny short-K twin's k-blocks: the
 * kernel sees M' = 1, N' = M, A' = B, B' = A; the caller's view (errors,
 * set_pointers) keeps its own operands. */
static void test_n1_transposed(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;
    /* 1500 rows, a long K: the GEMV kernel reads A's rows as they lie */
    bc_gemm_desc d = base_desc(&e, 1500, 1, 4640);
    bc_gemm_plan_info info = plan_info(&e, &d);
    assert_int_equal(info.swapped, 0);
    assert_string_equal(info.config, "sm90_gemv");
    /* ... but a resident plan (the rule leaves the GEMV kernel out), past the dot kernel's loads a CTA (23 rows x 290 chunks
     * x 2), runs transposed */
    d.resident = 1;
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &plan));
    assert_ok(bc_gemm_plan_query(plan, &info));
    assert_int_equal(info.swapped, 1);
    assert_string_equal(info.config, "sm90_64x32m16s");
    assert_int_equal(info.tiles, 47); /* ceil(1500 / 32) tiles of one row */
    assert_int_equal(info.split_k, 2);
    assert_ok(bc_gemm_launch(plan, e.s));
    bc_gemm_params p;
    memcpy(&p, fake_last_launch()->params, sizeof p);
    assert_int_equal(p.m, 1), assert_int_equal(p.n, 1500), assert_int_equal(p.k, 4640);
    assert_int_equal(p.ldd, 1500);
    assert_int_equal(p.d, e.d);
    check_map(p.tmap_a, e.b, 4640, 1, 4640 * 2, 64, 16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    check_map(p.tmap_b, e.a, 4640, 1500, 4640 * 2, 64, 32, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);

    /* set_pointers takes the caller's a and b; a misaligned one is named as the caller's */
    assert_status(bc_gemm_plan_set_pointers(plan, e.c + 8, e.a, 0, e.b, 0), BC_ERR_MISALIGNED);
    bc_error_detail det;
    bc_last_error(&det);
    assert_string_equal(det.call, "a");
    assert_ok(bc_gemm_plan_set_pointers(plan, e.c, e.a, 0, e.b, 0));
    assert_ok(bc_gemm_launch(plan, e.s));
    memcpy(&p, fake_last_launch()->params, sizeof p);
    assert_int_equal(word(p.tmap_a, 0), e.a);
    assert_int_equal(word(p.tmap_b, 0), e.c);
    assert_int_equal(p.a, e.a), assert_int_equal(p.b, e.c), assert_int_equal(p.d, e.b);
    bc_gemm_plan_destroy(plan);

    /* C aliasing D, one contiguous column: transposed with it */
    d = base_desc(&e, 1500, 1, 4640);
    d.resident = 1;
    d.beta = 0.5f, d.c = d.d;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.m, 1), assert_int_equal(p.ldc, 1500), assert_int_equal(p.c, e.d);

    /* K of at most 2 k-blocks, any M from 2: a launched plan on the GEMV kernel as it lies; a resident one (no GEMV
     * kernel) transposed onto the skinny short-K twin, its D one row */
    static const struct {
        int64_t m, k;
        uint32_t tiles;
    } short_k[] = {{2, 8, 1}, {16, 64, 1}, {335, 8, 11}, {4040, 128, 127}, {16384, 72, 512}};
    for (size_t i = 0; i < sizeof short_k / sizeof short_k[0]; i++) {
        d = base_desc(&e, short_k[i].m, 1, short_k[i].k);
        info = plan_info(&e, &d);
        if (info.swapped || strcmp(info.config, "sm90_gemv") != 0)
            fail_msg("%lldx1x%lld: %s%s; want sm90_gemv as it lies", (long long)short_k[i].m, (long long)short_k[i].k,
                     info.config, info.swapped ? " transposed" : "");
        d.resident = 1;
        info = plan_info(&e, &d);
        if (!info.swapped || strcmp(info.config, "sm90_64x32m16t") != 0 || info.tiles != short_k[i].tiles)
            fail_msg("%lldx1x%lld: %s%s, %u tiles; want sm90_64x32m16t transposed, %u tiles",
                     (long long)short_k[i].m, (long long)short_k[i].k, info.config,
                     info.swapped ? " transposed" : "", info.tiles, short_k[i].tiles);
        p = launch_and_decode(&e, &d, &l);
        assert_int_equal(p.m, 1), assert_int_equal(p.n, short_k[i].m), assert_int_equal(p.ldd, short_k[i].m);
    }

    /* what stays as it is */
    static const struct {
        int64_t m, k, ldd;
        int bias;
        const char *config;
    } keep[] = {
        {1500, 4640, 0, 1, NULL},        /* a bias: one value for every row */
        {1500, 4640, 8, 0, NULL},        /* D not one contiguous column */
        {8000, 1024, 0, 0, NULL},        /* 16 k-blocks */
        {16, 4640, 0, 0, NULL},          /* the dot kernel (it reads B's row as it lies) */
        {16384, 4640, 0, 0, NULL},       /* 256 tiles of 64 rows fill the SMs */
        {131, 4640, 0, 0, "sm90_64x32"}, /* a named configuration */
        {9000, 192, 0, 0, NULL},         /* 3 k-blocks: past the short-K twin, short of the long-K case */
        {16, 64, 0, 1, NULL},            /* short K with a bias */
        {1, 8, 0, 0, NULL},              /* M = 1: nothing to transpose */
    };
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        d = base_desc(&e, keep[i].m, 1, keep[i].k);
        d.ldd = keep[i].ldd;
        d.bias = keep[i].bias ? e.bias : 0;
        d.config = keep[i].config;
        if (plan_info(&e, &d).swapped)
            fail_msg("case %zu (%lldx1x%lld) ran transposed", i, (long long)keep[i].m, (long long)keep[i].k);
        p = launch_and_decode(&e, &d, &l);
        assert_int_equal(p.m, keep[i].m), assert_int_equal(p.n, 1);
    }
    /* a C that is not one contiguous column keeps the plan as it is */
    d = base_desc(&e, 1500, 1, 4640);
    d.resident = 1;
    d.beta = 1.0f, d.c = e.c, d.ldc = 8;
    assert_int_equal(launch_and_decode(&e, &d, &l).m, 1500);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_config_rule),
        ft_test(test_short_k_sectors),
        ft_test(test_off_grid_credit),
        ft_test(test_d_alt),
        ft_test(test_skinny_split_one_round),
        ft_test(test_row_tile),
        ft_test(test_n1_transposed),
    };
    return cmocka_run_group_tests_name("gemm_rule", tests, NULL, NULL);
}
