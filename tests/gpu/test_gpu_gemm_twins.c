/* GPU tests of the twin kernels a GEMM plan takes on its own: stream-K
 * (desc.stream_k = 1), the multicast twins of 128x256 and 128x128 (pairs), and
 * those of 128x64 and 64x32 (blocks of 2 x 2 tiles). Each case is
 * checked against the fp64 CPU reference on fresh random inputs with
 * poisoned outputs, with the bounds of test_gpu_gemm.c, and each plan's
 * info must say it took the twin. Seed: printed per run; BC_SEED replays.
 * BC_TEST_QUICK=1 keeps the small shapes (the compute-sanitizer passes).
 */
#include "gemm_case.h"

/* The plan of one case, its info asserted by `check` (the twin was
 * taken), run on poisoned outputs and checked against the reference. */
typedef void (*twin_check_fn)(const gcase *gc, const bc_gemm_plan_info *info);
static void run_twin_case(gpu_env *env, const gcase *gc, twin_check_fn check)
{
    gbufs g;
    make_buffers(env, gc, &g);
    bc_gemm_plan *plan = NULL;
    bc_gemm_plan_info info;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &plan));
    CHECK_BC(bc_gemm_plan_query(plan, &info));
    check(gc, &info);
    poison_and_run(env, plan, &g);
    check_result(gc, &g);
    bc_gemm_plan_destroy(plan);
    free_buffers(env, &g);
}

static void check_stream_k(const gcase *gc, const bc_gemm_plan_info *info)
{
    (void)gc;
    print_message("  %s: %u tiles by stream-K over %u CTAs (of %u tiles), workspace %llu B\n", info->config,
                  info->stream_k_tiles, info->stream_k_ctas, info->tiles, (unsigned long long)info->workspace_bytes);
    assert_true(info->stream_k_tiles > 0 && info->stream_k_ctas > info->stream_k_tiles);
}

/* the configuration the case expects (the rule's choice is checked too), and
 * its twin's shape (bc_gemm_plan_info.multicast: 1 pairs, 3 blocks of 2 x 2) */
static const char *mc_config;
static uint32_t mc_kind;

/* the configuration's multicast twin: bc_gemm_<config>m, in clusters of two
 * (pairs) or four (blocks of 2 x 2) */
static void check_multicast(const gcase *gc, const bc_gemm_plan_info *info)
{
    assert_string_equal(info->config, mc_config);
    print_message("  %lldx%lldx%lld: %s, grid %u, cluster %u\n", (long long)gc->m, (long long)gc->n, (long long)gc->k,
                  info->kernel, info->grid_x, info->cluster_x);
    char want[64];
    snprintf(want, sizeof want, "bc_gemm_%sm", info->config);
    assert_string_equal(info->kernel, want);
    assert_int_equal(info->multicast, mc_kind);
    assert_int_equal(info->cluster_x, mc_kind == 3 ? 4 : 2);
}

/* Stream-K plans (desc.stream_k = 1) on every configuration that has it
 * and on the rule's choice: ragged shapes whose last round leaves SMs idle,
 * every output type, with bias, ReLU, C (aliasing D too) and D rows that
 * are not 16-byte multiples; each plan must really take stream-K (checked
 * in its info), and two plans' outputs must be byte-identical over
 * repeated launches (the last piece's sum is in piece order whichever
 * piece arrives last). Quick mode (the sanitizers' runs) keeps the small
 * shapes, and one case each of a grid whose stream-K follows a full round
 * and of one whose tiles are done in up to three pieces. */
static void test_gemm_stream_k(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const struct {
        const char *config;
        int64_t m, n, k;
        int quick; /* 1: every case in quick mode too; 2: one case (the third) */
    } sk[] = {
        /* a few tiles down a long K, two pieces a tile */
        {"sm90_128x128", 130, 130, 4096, 1}, {"sm90_128x64", 130, 130, 4104, 1}, {"sm90_64x32", 130, 130, 4096, 1},
        /* a full round first (144 tiles), then 12 over 24 CTAs; 80 tiles over 132 CTAs, up to three pieces */
        {"sm90_64x32", 768, 384, 5632, 2},   {"sm90_128x64", 256, 2560, 4736, 2},
        /* the rule's own stream-K plans; a full round first, then stream-K */
        {NULL, 205, 4640, 10272, 0},         {NULL, 2036, 610, 7496, 0},      {"sm90_128x128", 1722, 1400, 5120, 0},
        {"sm90_128x64", 300, 3000, 5120, 0}, {"sm90_64x32", 150, 1500, 5120, 0},
    };
    case_stream_k = 1;
    for (size_t i = 0; i < sizeof sk / sizeof sk[0]; i++) {
        const int64_t m = sk[i].m, n = sk[i].n, k = sk[i].k;
        const gcase cases[] = {
            {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, sk[i].config, 0, 0, 0},
            {m, n, k, BC_DTYPE_F16, BC_DTYPE_F32, 0.75f, 0.0f, 1, 1, 0, 0, sk[i].config, 0, 0, 0},
            {m, n, k, BC_DTYPE_BF16, BC_DTYPE_F16, 1.0f, -0.5f, 1, 0, 0, 0, sk[i].config, 0, 1, 0},
            {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.5f, 2.0f, 0, 1, 8, 0, sk[i].config, 0, 0, 3},
        };
        for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++)
            if (!quick || sk[i].quick == 1 || (sk[i].quick == 2 && j == 2))
                run_twin_case(env, &cases[j], check_stream_k);
        const gcase alias = {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 1.0f, 1, 0, 0, 0, sk[i].config, 0, 0, 0};
        if (!quick || sk[i].quick == 1)
            run_aliased(env, &alias);
    }
    const gcase rep = {130, 130, 4096, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.5f, 1, 0, 0, 0, "sm90_128x128", 0, 0, 0};
    run_repeated(env, &rep, quick ? 5 : 50);
    const gcase rep3 = {256, 2560, 4736, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 1.0f, 1, 1, 0, 0, "sm90_128x64", 0, 0, 0};
    run_repeated(env, &rep3, quick ? 3 : 50);
    case_stream_k = 0;
}

/* One multicast twin's shape: named (NULL: the rule's choice), the
 * configuration expected, the shape, and whether quick mode runs it. */
typedef struct mc_shape {
    const char *config, *want;
    int64_t m, n, k;
    int quick;
} mc_shape;

/* Every shape of the table (quick mode: those marked) with four output
 * types and epilogues, then C aliasing D, each plan on the twin of shape
 * `kind` (check_multicast). */
static void run_multicast_shapes(gpu_env *env, const mc_shape *mc, size_t count, uint32_t kind)
{
    mc_kind = kind;
    for (size_t i = 0; i < count; i++) {
        if (quick && !mc[i].quick)
            continue;
        mc_config = mc[i].want;
        const int64_t m = mc[i].m, n = mc[i].n, k = mc[i].k;
        const gcase cases[] = {
            {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, mc[i].config, 0, 0, 0},
            {m, n, k, BC_DTYPE_F16, BC_DTYPE_F32, 0.75f, 0.0f, 1, 1, 0, 0, mc[i].config, 0, 0, 0},
            {m, n, k, BC_DTYPE_BF16, BC_DTYPE_F16, 1.0f, -0.5f, 1, 0, 0, 0, mc[i].config, 0, 0, 0},
            {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.5f, 2.0f, 0, 1, 0, 0, mc[i].config, 0, 3, 0},
        };
        for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++)
            run_twin_case(env, &cases[j], check_multicast);
        const gcase alias = {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 1.0f, 1, 0, 0, 0, mc[i].config, 0, 0, 0};
        run_aliased(env, &alias);
    }
}

/* The multicast twins of 128x256 and 128x128 (clusters of two CTAs sharing
 * B's loads), which plans take where A's or B's rows are off the 32-byte
 * sectors on grids of enough tile-row pairs: each plan must really run one
 * (its info), on odd tile-row counts (the last pair's second row lies past
 * M), every output type, bias, ReLU, C (aliasing D too), D rows that are
 * not 16-byte multiples, and the rule's own choice (128x128's with rows on
 * the sectors too, down a long K); outputs byte-identical over repeated
 * launches. Quick mode (the sanitizers' runs): the two smallest shapes and
 * the one on the sectors. */
static void test_gemm_multicast(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const mc_shape mc[] = {
        {"sm90_128x256", "sm90_128x256", 1100, 2304, 40, 1}, /* 9 x 9 tiles: 45 pairs, the last row's partner past M */
        {"sm90_128x256", "sm90_128x256", 1300, 4000, 3000, 0}, /* 11 x 16 tiles */
        {NULL, "sm90_128x256", 2048, 2048, 2040, 0},           /* the rule's choice */
        {NULL, "sm90_128x256", 728, 4008, 14024, 0},
        {"sm90_128x128", "sm90_128x128", 1100, 1200, 1000, 1}, /* 9 x 10 tiles: 50 pairs, the last row's partner past M */
        {"sm90_128x128", "sm90_128x128", 1300, 2000, 3000, 0}, /* 11 x 16 tiles */
        {NULL, "sm90_128x128", 447, 3838, 3128, 0},            /* the rule's choice: 4 x 30 tiles */
        /* the rule's choice with rows on the sectors but off the 128-byte lines, 66 k-blocks: 7 x 12 tiles,
         * the last row's partner past M */
        {NULL, "sm90_128x128", 797, 1435, 4176, 1},
    };
    run_multicast_shapes(env, mc, sizeof mc / sizeof mc[0], 1);
    const gcase rep = {1100, 2304, 40, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.5f, 1, 0, 0, 0, "sm90_128x256", 0, 0, 0};
    run_repeated(env, &rep, quick ? 5 : 50);
    const gcase rep2 = {2048, 2048, 2040, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    if (!quick)
        run_repeated(env, &rep2, 50);
    const gcase rep3 = {1100, 1200, 1000, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.5f, 1, 0, 0, 0, "sm90_128x128", 0, 0, 0};
    run_repeated(env, &rep3, quick ? 5 : 50);
    const gcase rep4 = {447, 3838, 3128, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    if (!quick)
        run_repeated(env, &rep4, 50);
    const gcase rep5 = {797, 1435, 4176, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    run_repeated(env, &rep5, quick ? 5 : 50);
}

/* The multicast twins of 128x64 and 64x32 (clusters of four CTAs on
 * blocks of 2 x 2 tiles, sharing A's and B's loads), which plans take where
 * A's or B's rows are off the 32-byte sectors (every K here is an odd
 * multiple of 8), from 30 k-blocks, where the blocks need no more rounds
 * than the tiles: each plan must really run one (its info), on blocks
 * whose second row or column lies past M or N, grids of more blocks than
 * the device holds clusters (each cluster walks several blocks), every
 * output type, bias, ReLU, C (through the stage ring, and aliasing D), D
 * rows that are not 16-byte multiples, and the rule's own choice; outputs
 * byte-identical over repeated launches. Quick mode (the sanitizers'
 * runs): the three smallest shapes. */
static void test_gemm_multicast_2x2(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const mc_shape mc[] = {
        {"sm90_128x64", "sm90_128x64", 300, 200, 1912, 1}, /* 3 x 4 tiles: the second block row's second past M */
        {"sm90_64x32", "sm90_64x32", 100, 90, 1992, 1},    /* 2 x 3 tiles: the second block's second column past N */
        {"sm90_64x32", "sm90_64x32", 600, 620, 1912, 1},   /* 10 x 20 tiles: 50 blocks, two rounds of clusters */
        {"sm90_128x64", "sm90_128x64", 1250, 1250, 1912, 0}, /* 10 x 20 tiles: 50 blocks */
        {NULL, "sm90_128x64", 505, 1380, 4424, 0},          /* the rule's choice: 4 x 22 tiles */
        {NULL, "sm90_64x32", 123, 1478, 6200, 0},           /* the rule's choice: 2 x 47 tiles */
    };
    run_multicast_shapes(env, mc, sizeof mc / sizeof mc[0], 3);
    const gcase rep = {600, 620, 1912, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.5f, 1, 0, 0, 0, "sm90_64x32", 0, 0, 0};
    run_repeated(env, &rep, quick ? 5 : 50);
    const gcase rep2 = {505, 1380, 4424, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    if (!quick)
        run_repeated(env, &rep2, 50);
}

static int setup(void **state) { return gemm_case_setup(state, "test_gpu_gemm_twins"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_stream_k),
        cmocka_unit_test(test_gemm_multicast),
        cmocka_unit_test(test_gemm_multicast_2x2),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_gemm_twins", tests, setup, gpu_env_teardown);
}
