/* The configuration rule's plans for a few rows or columns of outputs, on
 * the fake driver (an H100-like device, 132 SMs): the dot kernel's launch
 * and limits, and the GEMV kernel's (where the dot kernel cedes it the
 * problem, its grid forms, its named limits, desc.resident). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gemm_plan_env.h"

/* The dot kernel's launch: one CTA of BC_DOT_THREADS threads per (cluster
 * rank, group of the larger side's rows), K split over a cluster of S where
 * S > 1, the plain A, B, D and leading dimensions in the parameter, N = 1
 * not transposed; named for any K within the kernel's limits (the smaller
 * side at most 8 rows, a CTA at most 64 outputs), refused beyond; a split_k
 * set (1 or more) leaves the problem to the tile kernels. */
static void test_dot_kernel(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;
    static const struct {
        int64_t m, n, k;
        uint32_t split, groups; /* cluster size, clusters */
    } cases[] = {
        {7, 1, 10528, 4, 7},  /* 1316 chunks: 4 x 329 */
        {1, 64, 512, 1, 64},  /* 64 chunks: one CTA a row of B */
        {8, 8, 16384, 8, 8},  /* 2048 chunks: 8 ways, 8 rows over 8 clusters */
        {64, 1, 16384, 8, 11}, /* clusters of 8 on 75% of 132 SMs: 12, so runs of 6 rows: 11 */
        {40, 1, 8192, 4, 20},  /* clusters of 4: 24, runs of 2 rows */
        {60, 1, 4096, 2, 60},  /* clusters of 2 on every SM: 66 */
        {3, 21, 200, 1, 21},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cases[i].m, cases[i].n, cases[i].k);
        d.lda = d.k + 8, d.ldb = d.k + 16;
        const bc_gemm_params p = launch_and_decode(&e, &d, &l);
        assert_string_equal(l->kernel, "bc_gemm_sm90_dot");
        assert_int_equal(l->grid[0], cases[i].split * cases[i].groups);
        assert_int_equal(l->cluster[0], cases[i].split);
        assert_int_equal(l->block[0], BC_DOT_THREADS);
        assert_int_equal(l->smem, BC_DOT_SMEM_BYTES);
        assert_int_equal(p.split_k, cases[i].split), assert_int_equal(p.tiles_m, cases[i].groups);
        assert_int_equal(p.m, cases[i].m), assert_int_equal(p.n, cases[i].n), assert_int_equal(p.k, cases[i].k);
        assert_int_equal(p.a, e.a), assert_int_equal(p.b, e.b), assert_int_equal(p.d, e.d);
        assert_int_equal(p.lda, d.k + 8), assert_int_equal(p.ldb, d.k + 16), assert_int_equal(p.ldd, d.n);
        assert_int_equal(p.flags & (BC_GEMM_F_TMA_STORE | BC_GEMM_F_C_SMEM), 0);
        const bc_gemm_plan_info info = plan_info(&e, &d);
        assert_string_equal(info.config, "sm90_dot");
        assert_string_equal(info.kernel, "bc_gemm_sm90_dot");
        assert_int_equal(info.cluster_x, cases[i].split), assert_int_equal(info.split_k, cases[i].split);
        assert_int_equal(info.swapped, 0);
    }
    /* named: any K, the smaller side at most 8 rows and at most 64 outputs a CTA (1 x 1000 x 4096: clusters of
     * 2, 66 of them, runs of 16 rows) */
    bc_gemm_desc d = base_desc(&e, 4, 4, 16);
    d.config = "sm90_dot";
    expect_kernel(&e, &d, "bc_gemm_sm90_dot");
    d = base_desc(&e, 1, 1000, 4096);
    d.config = "sm90_dot";
    assert_int_equal(launch_and_decode(&e, &d, &l).tiles_m, 63);
    assert_int_equal(l->grid[0], 126);
    d = base_desc(&e, 9, 9, 4096);
    d.config = "sm90_dot";
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "config");
    d = base_desc(&e, 1, 20000, 64); /* 152 rows a CTA */
    d.config = "sm90_dot";
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "config");
    d = base_desc(&e, 4, 4, 4096);
    d.config = "sm90_dot", d.split_k = 2;
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "split_k");
    /* a split asked for, or whole tiles, without a name: the tile kernels */
    d = base_desc(&e, 7, 1, 10528);
    d.split_k = 2;
    expect_kernel(&e, &d, "bc_gemm_sm90_64x32m16s");
    d.split_k = 1;
    expect_kernel(&e, &d, "bc_gemm_sm90_64x32m16");
    env_close(&e);
}

/* The launch of d (l, its parameter p) is `kernel` split `split` ways over `groups` clusters: the GEMV
 * kernels' grid (gemm_rule.c, gemv_grid), 256 threads, `smem` bytes of shared memory. */
static void expect_gemv_grid(const bc_gemm_desc *d, const fake_launch *l, const bc_gemm_params *p, const char *kernel,
                             uint32_t split, uint32_t groups, uint32_t smem)
{
    if (strcmp(l->kernel, kernel) != 0 || p->split_k != split || p->tiles_m != groups || l->grid[0] != split * groups ||
        l->cluster[0] != split)
        fail_msg("%lldx%lldx%lld: %s split %u, %u clusters, grid %u, cluster %u; want %s split %u, %u clusters",
                 (long long)d->m, (long long)d->n, (long long)d->k, l->kernel, p->split_k, p->tiles_m, l->grid[0],
                 l->cluster[0], kernel, split, groups);
    assert_int_equal(l->block[0], BC_GEMV_THREADS);
    assert_int_equal(l->smem, smem);
}

/* The GEMV kernel's plans: where the dot kernel cedes it the problem (more than 5120 loads a CTA; 5 or more
 * rows on the smaller side with K at most 2048), its grid (K over a cluster while each CTA keeps 64 steps of
 * 32 and the clusters fit a round of two CTAs an SM; rows in runs of 16 for more than 8 smaller-side rows
 * when those runs give every SM a CTA; row groups doubled while the warps would have fewer than 8 steps each
 * and the CTAs still number the SMs), a named plan's limits and desc.resident. */
static void test_gemv_kernel(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;
    static const struct {
        int64_t m, n, k;
        const char *kernel;
    } cede[] = {
        {1, 1320, 2048, "bc_gemm_sm90_dot"},  /* 10 rows a CTA x 256 chunks x 2 = 5120 loads */
        {1, 1321, 2048, "bc_gemm_sm90_gemv"}, /* 11 rows: 5632 */
        {5, 100, 2048, "bc_gemm_sm90_gemv"},  {5, 100, 2056, "bc_gemm_sm90_dot"},
        {4, 100, 2048, "bc_gemm_sm90_dot"},   {100, 5, 2048, "bc_gemm_sm90_gemv"},
    };
    for (size_t i = 0; i < sizeof cede / sizeof cede[0]; i++) {
        bc_gemm_desc d = base_desc(&e, cede[i].m, cede[i].n, cede[i].k);
        launch_and_decode(&e, &d, &l);
        if (strcmp(l->kernel, cede[i].kernel) != 0)
            fail_msg("%lldx%lldx%lld: %s, want %s", (long long)cede[i].m, (long long)cede[i].n, (long long)cede[i].k,
                     l->kernel, cede[i].kernel);
    }
    static const struct {
        int64_t m, n, k;
        uint32_t split, groups;
    } grid[] = {
        {1, 256, 16384, 4, 32},   /* 512 steps: 4 ways keep 128 each, 32 x 4 within 198 (75% of 264); 8 ways: 256 */
        {1, 4096, 4096, 1, 512},  /* 128 steps: 2 ways would be 1024 CTAs */
        {16, 4096, 4096, 1, 256}, /* runs of 16: 256 */
        {16, 2048, 8192, 1, 256}, /* runs of 16 would be 128 CTAs, under the 132 SMs: runs of 8 */
        {8, 4096, 4096, 1, 512},  /* 8 rows: runs of 8 */
        {15473, 2, 152, 1, 242},  /* 5 steps: one K group, 8 row groups of 8 (242 CTAs of 64 rows) */
        {2, 6445, 144, 1, 202},   /* 5 steps: 4 row groups (202 CTAs); 8 would be 101, under the SMs */
        {16, 300, 520, 1, 38},    /* 17 steps, few rows: every warp a K group, runs of 8 */
        {437, 9, 14184, 2, 55},   /* 444 steps: 4 ways would be 220 CTAs, over 198 */
        {16, 128, 16384, 8, 16},  /* 512 steps: 8 ways keep 64 each, 16 x 8 within 198 */
        {3, 9000, 24, 1, 141},    /* one step: one K group, 8 row groups of 8 (141 CTAs of 64 rows) */
    };
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++) {
        bc_gemm_desc d = base_desc(&e, grid[i].m, grid[i].n, grid[i].k);
        d.lda = d.k + 8, d.ldb = d.k + 16;
        const bc_gemm_params p = launch_and_decode(&e, &d, &l);
        expect_gemv_grid(&d, l, &p, "bc_gemm_sm90_gemv", grid[i].split, grid[i].groups, BC_GEMV_SMEM_BYTES);
        assert_int_equal(p.tiles_n, 1);
        assert_int_equal(p.lda, d.k + 8), assert_int_equal(p.ldb, d.k + 16);
        assert_int_equal(p.a, e.a), assert_int_equal(p.b, e.b), assert_int_equal(p.d, e.d);
        assert_int_equal(p.flags & (BC_GEMM_F_TMA_STORE | BC_GEMM_F_C_SMEM), 0);
        const bc_gemm_plan_info info = plan_info(&e, &d);
        assert_string_equal(info.config, "sm90_gemv");
        assert_int_equal(info.split_k, grid[i].split), assert_int_equal(info.swapped, 0);
    }
    /* named: any K, the smaller side at most 16 rows, no split asked for */
    bc_gemm_desc d = base_desc(&e, 4, 100, 16);
    d.config = "sm90_gemv";
    expect_kernel(&e, &d, "bc_gemm_sm90_gemv");
    d = base_desc(&e, 17, 100, 4096);
    d.config = "sm90_gemv";
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "config");
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "sm90_gemv takes min(M, N) <= 16 (M=17 N=100); sm90_gemv32 takes up to 32"));
    d = base_desc(&e, 16, 100, 4096);
    d.config = "sm90_gemv", d.split_k = 2;
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "split_k");
    d.split_k = 1; /* the plan sizes its own split: 1 is refused too */
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "split_k");
    d = base_desc(&e, 16, 100, 8);
    d.config = "sm90_gemv", d.split_k = 2; /* one k-block */
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "split_k");
    /* K of at most 128 too (one step of 32 or less: 16x4096x8), and K = 128 for a resident plan keeps the short-K
     * twin; whole tiles or a split asked for: the tile kernels */
    d = base_desc(&e, 16, 4096, 128);
    expect_kernel(&e, &d, "bc_gemm_sm90_gemv");
    d = base_desc(&e, 16, 4096, 8);
    expect_kernel(&e, &d, "bc_gemm_sm90_gemv");
    d = base_desc(&e, 16, 4096, 128);
    d.resident = 1;
    expect_kernel(&e, &d, "bc_gemm_sm90_64x32m16t");
    d = base_desc(&e, 16, 4096, 4096);
    d.split_k = 1;
    expect_kernel(&e, &d, "bc_gemm_sm90_64x32m16");
    /* a resident plan: the tiles (the rule leaves the dot and GEMV kernels out of resident plans; the executor
     * runs GEMV plans named so); a named one as named; 2 is refused */
    d = base_desc(&e, 16, 4096, 4096);
    d.resident = 1;
    expect_kernel(&e, &d, "bc_gemm_sm90_64x32m16");
    d = base_desc(&e, 1, 1, 200);
    d.resident = 1;
    expect_kernel(&e, &d, "bc_gemm_sm90_64x32m16");
    d = base_desc(&e, 16, 4096, 4096);
    d.resident = 1, d.config = "sm90_gemv";
    expect_kernel(&e, &d, "bc_gemm_sm90_gemv");
    d = base_desc(&e, 16, 4096, 4096);
    d.resident = 2;
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "resident");
    env_close(&e);
}

/* The GEMV kernel's 32-row twin (sm90_gemv32): the rule's for 17-32 rows on the smaller side with a larger side
 * of at most 4096 rows (either operand) and K of at most 3072, with the GEMV kernel's grid, its own entry and
 * shared memory; past any bound, or split_k asked for, or a resident plan, the tiles; named, any smaller side of
 * 1-32 rows, any larger side and K (its own split of K), no split asked for; a resident executor has no kernel
 * for it. */
static void test_gemv32_kernel(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;
    static const struct {
        int64_t m, n, k;
        uint32_t split, groups; /* 0: not the twin */
    } grid[] = {
        {17, 2160, 2808, 1, 135}, /* runs of 16: 135 CTAs, at least the 132 SMs */
        {32, 1000, 2056, 1, 125}, /* runs of 16 would be 63, under the SMs: runs of 8 */
        {4096, 24, 1000, 1, 256}, {24, 4096, 64, 1, 256}, {31, 77, 40, 1, 10}, {32, 4096, 3072, 1, 256},
        {16, 3072, 512, 0, 0}, /* the GEMV kernel's */
        {17, 4097, 512, 0, 0},    {4097, 24, 1000, 0, 0}, {33, 1000, 64, 0, 0}, {32, 4096, 3080, 0, 0},
        {20, 300, 16384, 0, 0},
    };
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++) {
        bc_gemm_desc d = base_desc(&e, grid[i].m, grid[i].n, grid[i].k);
        const bc_gemm_params p = launch_and_decode(&e, &d, &l);
        const bc_gemm_plan_info info = plan_info(&e, &d);
        if (grid[i].split == 0) {
            if (strcmp(l->kernel, "bc_gemm_sm90_gemv32") == 0 || strcmp(info.config, "sm90_gemv32") == 0)
                fail_msg("%lldx%lldx%lld: the twin, want another", (long long)grid[i].m, (long long)grid[i].n,
                         (long long)grid[i].k);
            continue;
        }
        expect_gemv_grid(&d, l, &p, "bc_gemm_sm90_gemv32", grid[i].split, grid[i].groups, BC_GEMV32_SMEM_BYTES);
        assert_string_equal(info.config, "sm90_gemv32");
    }
    /* split_k asked for, a resident plan: the tiles */
    bc_gemm_desc d = base_desc(&e, 24, 2048, 2048);
    d.split_k = 1;
    expect_kernel(&e, &d, "bc_gemm_sm90_64x32");
    d = base_desc(&e, 24, 2048, 2048);
    d.resident = 1;
    launch_and_decode(&e, &d, &l);
    assert_string_not_equal(l->kernel, "bc_gemm_sm90_gemv32");
    /* named: 1-32 rows, any larger side and K; 33 refused, and any split_k */
    static const int64_t named[][3] = {{4, 100, 16}, {32, 100, 4096}, {28, 14166, 600}, {5000, 17, 64}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        d = base_desc(&e, named[i][0], named[i][1], named[i][2]);
        d.config = "sm90_gemv32";
        expect_kernel(&e, &d, "bc_gemm_sm90_gemv32");
    }
    d = base_desc(&e, 20, 300, 16384); /* 512 steps: 4 ways keep 128 each, 38 x 4 within 198 (75% of 264) */
    d.config = "sm90_gemv32";
    const bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_gemv32");
    assert_int_equal(p.split_k, 4), assert_int_equal(p.tiles_m, 38), assert_int_equal(l->cluster[0], 4);
    d = base_desc(&e, 33, 100, 4096);
    d.config = "sm90_gemv32";
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "config");
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "sm90_gemv32 takes min(M, N) <= 32 (M=33 N=100)"));
    assert_null(strstr(det.message, "; sm90_gemv32"));
    d = base_desc(&e, 24, 100, 4096);
    d.config = "sm90_gemv32", d.split_k = 1;
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "split_k");
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_dot_kernel),
        ft_test(test_gemv_kernel),
        ft_test(test_gemv32_kernel),
    };
    return cmocka_run_group_tests_name("gemm_rule_rows", tests, NULL, NULL);
}
