/* GPU tests of the GEMM: results against an fp64 CPU reference on fresh
 * random inputs with poisoned outputs, every input/output type, epilogue
 * options and ragged shapes; bitwise determinism; graph mode. The twin
 * kernels a plan takes on its own (stream-K, multicast) are in
 * test_gpu_gemm_twins.c, the Hopper epilogue's paths (TMA store, copy-out,
 * plain staging) in test_gpu_gemm_epilogue.c.
 *
 * Error bounds (tools/common/ref.h): relative Frobenius error
 * ||D - ref|| / ||ref|| <= 5e-3 for bf16 output, 1e-3 for f16, 1e-5 for f32,
 * and every element within rtol*|ref| + atol (rtol 2^-8 / 2^-10 / 2^-20,
 * atol 1e-4*sqrt(K)); no element may keep the NaN poison. Inputs are exact in
 * their type, so the bound is the output rounding plus fp32 accumulation.
 * Seed: printed per run; set BC_SEED to replay. BC_TEST_QUICK=1 keeps only
 * shapes up to 2^27 multiply-adds and 10 determinism runs (for the
 * compute-sanitizer passes, which slow kernels down a hundredfold).
 */
#include "gemm_case.h"

static const int64_t shapes[][3] = {
    {1, 1, 8},      {7, 9, 16},     {127, 255, 72},    {128, 256, 64}, {129, 257, 136},
    {1000, 1000, 1000}, {16, 4096, 4096}, {4096, 4096, 4096},
};

/* Every shape x input type x output type, plain and with the full epilogue. */
static void test_gemm_matrix(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ab = BC_DTYPE_BF16; ab <= BC_DTYPE_F16; ab++)
            for (int dt = BC_DTYPE_BF16; dt <= BC_DTYPE_F32; dt++)
                for (int epi = 0; epi < 2; epi++) {
                    gcase gc = {shapes[s][0], shapes[s][1], shapes[s][2], (bc_dtype)ab, (bc_dtype)dt,
                                epi ? 0.75f : 1.0f, epi ? -0.5f : 0.0f, epi, epi, 0, 0, NULL, 0, 0, 0};
                    run_case(env, &gc);
                }
}

/* The layouts of run_layouts, on the rule's choice. */
static void test_gemm_layouts(void **state)
{
    run_layouts(GPU_ENV_OR_SKIP(state), NULL);
}

/* Every configuration of the device's image named explicitly (on Hopper the
 * rule picks only some of them for the shapes above), on ragged shapes, through both epilogue paths
 * (TMA store: no C; threads: C, or D rows that are not 16-byte multiples),
 * the split-K ones split 2, 4 and 8 ways (8 exceeds the 3 k-blocks of the
 * first shape: it runs 2 ways). */
static void test_gemm_every_config(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    static const char *const sm90[] = {"sm90_128x256", "sm90_128x256s", "sm90_128x128", "sm90_128x128s",
                                       "sm90_128x64",  "sm90_64x32",    "sm90_64x32s",   "sm90_128x64t",
                                       "sm90_64x32t",  "sm90_64x256",   "sm90_64x256s"};
    static const char *const sm100[] = {"sm100_128x256x64_ws_s4_tmem2"};
    bc_device_info info;
    CHECK_BC(bc_device_query(env->dev, &info));
    const int hopper = gpu_is_hopper(env), portable = info.cc_major == 8 || info.cc_major == 12;
    const char *const *configs = hopper ? sm90 : portable ? gemm_sm80_configs : sm100;
    const size_t count = hopper ? sizeof sm90 / sizeof sm90[0] : portable ? GEMM_SM80_CONFIGS : 1;
    static const int64_t cshapes[][3] = {{129, 257, 136}, {300, 520, 264}};
    for (size_t c = 0; c < count; c++)
        for (size_t s = 0; s < sizeof cshapes / sizeof cshapes[0]; s++) {
            const int64_t m = cshapes[s][0], n = cshapes[s][1], k = cshapes[s][2];
            /* split-K configurations: 2, 4 and 8 ways (at most the k-blocks) */
            const int sk = configs[c][strlen(configs[c]) - 1] == 's';
            const gcase cases[] = {
                {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, configs[c], sk ? 2 : 1, 0, 0},
                {m, n, k, BC_DTYPE_F16, BC_DTYPE_F32, 0.75f, 0.0f, 1, 1, 0, 0, configs[c], sk ? 8 : 1, 0, 0},
                {m, n, k, BC_DTYPE_BF16, BC_DTYPE_F16, 1.0f, -0.5f, 1, 0, 0, 0, configs[c], sk ? 4 : 1, 0, 0},
                {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 1, 0, 0, configs[c], sk ? 2 : 1, 1, 0},
                {m, n, k, BC_DTYPE_F16, BC_DTYPE_F32, 1.0f, 0.0f, 1, 0, 8, 0, configs[c], sk ? 4 : 0, 0, 0},
            };
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                run_case(env, &cases[i]);
        }
}

/* The skinny-M configurations named explicitly (its short-K twin too) -- 64x32 with 16-row A
 * stages (M <= 16; the rows of A it does not load never reach D), whole and
 * split over clusters of 2 and 8 -- at every M they take, N and K that
 * leave partial warps, tiles and K steps (split: K of at least S k-blocks),
 * every type and epilogue path (C through the ring, D by copy-out), padded
 * leading dimensions. */
static void test_gemm_skinny(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const struct {
        const char *config;
        int64_t max_m;
        uint32_t split; /* 0: whole tiles (the second case pins split_k 1) */
    } cfgs[] = {{"sm90_64x32m16", 16, 0}, {"sm90_64x32m16s", 16, 2}, {"sm90_64x32m16s", 16, 8},
                {"sm90_64x32m16t", 16, 0}};
    static const int64_t ms[] = {1, 2, 3, 5, 8, 9, 13, 16};
    static const int64_t nk[][2] = {{1, 8}, {7, 72}, {257, 2056}, {4096, 4104}};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0] && ms[i] <= cfgs[c].max_m; i++)
            for (size_t j = 0; j < sizeof nk / sizeof nk[0]; j++)
                for (int dt = BC_DTYPE_BF16; dt <= BC_DTYPE_F32; dt++) {
                    const int64_t m = ms[i], n = nk[j][0], k = nk[j][1];
                    const uint32_t s = cfgs[c].split;
                    if ((k + 63) / 64 < s)
                        continue; /* a split needs S k-blocks */
                    const bc_dtype ab = (i + j) % 2 ? BC_DTYPE_F16 : BC_DTYPE_BF16;
                    const char *cf = cfgs[c].config;
                    const gcase cases[] = {
                        {m, n, k, ab, (bc_dtype)dt, 1.0f, 0.0f, 0, 0, 0, 0, cf, s, 0, 0},
                        {m, n, k, ab, (bc_dtype)dt, 0.75f, -0.5f, 1, 1, 8, 0, cf, s ? s : 1u, 1, 0},
                    };
                    for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++)
                        run_case(env, &cases[q]);
                }
}

/* The narrow split-K tile (sm90_64x32s) 2, 4 and 8 ways: M from a few rows
 * past the skinny range to several tiles, N from one column to several
 * tiles, K long (uneven pieces) and short, every output type, plain and
 * with the full epilogue (odd D rows), and the rule's own split. */
static void test_gemm_narrow_split(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const int64_t ms[] = {17, 33, 64, 100, 129};
    static const int64_t nk[][2] = {{1, 520}, {8, 5192}, {100, 4104}, {300, 200}};
    static const uint32_t splits[] = {2, 4, 8, 0};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t j = 0; j < sizeof nk / sizeof nk[0]; j++) {
            const int64_t m = ms[i], n = nk[j][0], k = nk[j][1];
            const uint32_t s = splits[(i + j) % 4];
            const bc_dtype ab = (i + j) % 2 ? BC_DTYPE_F16 : BC_DTYPE_BF16;
            const bc_dtype dt = (bc_dtype)((i + 2 * j) % 3);
            const gcase cases[] = {
                {m, n, k, ab, dt, 1.0f, 0.0f, 0, 0, 0, 0, "sm90_64x32s", s, 0, 0},
                {m, n, k, ab, dt, 0.75f, -0.5f, 1, 1, 8, 0, "sm90_64x32s", s, 1, 0},
            };
            for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++)
                run_case(env, &cases[q]);
        }
}

/* In place: C aliases D exactly, with C through the ring (rows 16-byte
 * multiples) and read by the epilogue (odd rows). */
static void test_gemm_c_aliases_d(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    const gcase cases[] = {
        {333, 444, 128, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 1.0f, 1, 0, 0, 0, NULL, 0, 0, 0},
        {333, 445, 128, BC_DTYPE_BF16, BC_DTYPE_BF16, 0.5f, -1.0f, 1, 1, 0, 0, NULL, 0, 0, 0},
        {200, 512, 64, BC_DTYPE_F16, BC_DTYPE_F16, 1.0f, 0.5f, 0, 0, 0, 0, "sm90_128x256", 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].config == NULL || gpu_is_hopper(env))
            run_aliased(env, &cases[i]);
}

/* Buffers for gc in *g, a plan over them and its info. */
static bc_gemm_plan *plan_with_info(gpu_env *env, const gcase *gc, gbufs *g, bc_gemm_plan_info *info)
{
    make_buffers(env, gc, g);
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g->d, &plan));
    CHECK_BC(bc_gemm_plan_query(plan, info));
    return plan;
}

/* N = 1 with D one contiguous column: on Hopper the rule runs a resident
 * plan (no GEMV kernel there) as the 1 x M product B . A^T where that pays
 * (plan info says so: K of at most 2 k-blocks, or a long K on a grid that
 * leaves SMs idle: the first five cases and cases 9-13, which the GEMV
 * kernel takes as they are when launched, as the last two show), else as
 * it is (a bias, K of 3 to 16 k-blocks, rows the dot kernel takes (up to a
 * few thousand with K past 128: it reads B's row as it lies), or a grid
 * that fills the SMs). Every case against the reference; a transposed plan
 * re-pointed at new buffers; C aliasing D; 10 runs byte-identical. */
static void test_gemm_n1_transposed(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    const int hopper = gpu_is_hopper(env);
    static const struct {
        gcase gc;
        int swapped;
    } cases[] = {
        {{1500, 1, 4640, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0}, 1},
        {{3000, 1, 2584, BC_DTYPE_BF16, BC_DTYPE_F32, 0.75f, -0.5f, 0, 0, 0, 0, NULL, 0, 0, 0}, 1},
        {{1000, 1, 10656, BC_DTYPE_F16, BC_DTYPE_F16, 1.0f, 1.0f, 0, 1, 0, 0, NULL, 0, 0, 0}, 1},
        {{4000, 1, 2048, BC_DTYPE_F16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 1, 0, 0, NULL, 0, 0, 0}, 1},
        {{4000, 1, 3000, BC_DTYPE_BF16, BC_DTYPE_F16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0}, 1},
        {{131, 1, 4640, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0}, 0},
        {{131, 1, 1024, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0}, 0},
        {{16, 1, 4640, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0}, 0},
        {{9000, 1, 1024, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0}, 0},
        /* K of at most 2 k-blocks, resident plans: transposed onto the skinny short-K twin, D one row (16-byte
         * multiple or not); launched, the GEMV kernel as it lies (the last two) */
        {{16, 1, 64, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0}, 1},
        {{5, 1, 104, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 1, 0, 0, NULL, 0, 0, 0}, 1},
        {{335, 1, 8, BC_DTYPE_BF16, BC_DTYPE_F32, 0.75f, -0.5f, 0, 0, 0, 0, NULL, 0, 0, 0}, 1},
        {{4040, 1, 128, BC_DTYPE_F16, BC_DTYPE_F16, 1.0f, 1.0f, 0, 1, 0, 0, NULL, 0, 0, 0}, 1},
        {{16384, 1, 72, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0}, 1},
        {{16, 1, 64, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 0, 0, 0, NULL, 0, 0, 0}, 0},
        {{4040, 1, 128, BC_DTYPE_F16, BC_DTYPE_F16, 1.0f, 1.0f, 0, 1, 0, 0, NULL, 0, 0, 0}, 0},
        {{335, 1, 8, BC_DTYPE_BF16, BC_DTYPE_F32, 0.75f, -0.5f, 0, 0, 0, 0, NULL, 0, 0, 0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gcase *gc = &cases[i].gc;
        gbufs g;
        bc_gemm_plan_info info;
        case_resident = i < 5 || (i >= 9 && i < 14);
        bc_gemm_plan *plan = plan_with_info(env, gc, &g, &info);
        print_message("  %lldx1x%lld: %s split %u%s%s\n", (long long)gc->m, (long long)gc->k, info.config,
                      info.split_k, info.swapped ? ", transposed" : "", case_resident ? " (resident plan)" : "");
        assert_int_equal(info.swapped, hopper ? cases[i].swapped : 0);
        if (hopper && i >= 15) /* launched at K <= 128: the GEMV kernel, as it lies */
            assert_string_equal(info.config, "sm90_gemv");
        poison_and_run(env, plan, &g);
        check_result(gc, &g);
        if (i == 0) { /* re-pointed at fresh buffers and inputs */
            gbufs g2;
            make_buffers(env, gc, &g2);
            CHECK_BC(bc_gemm_plan_set_pointers(plan, g2.a, g2.b, g2.c, g2.dd, g2.bias));
            poison_and_run(env, plan, &g2);
            check_result(gc, &g2);
            free_buffers(env, &g2);
        }
        bc_gemm_plan_destroy(plan);
        free_buffers(env, &g);
    }
    case_resident = 1; /* the long-K cases transposed, and the short-K ones */
    run_aliased(env, &cases[1].gc);
    run_repeated(env, &cases[2].gc, 10);
    run_aliased(env, &cases[11].gc); /* short K, transposed, C aliasing D */
    run_repeated(env, &cases[12].gc, 10);
    case_resident = 0;
    run_aliased(env, &cases[15].gc); /* short K on the GEMV kernel, C aliasing D */
}

/* Rows of A of K < 64 elements, packed (ld = K), shared by enough CTAs at
 * once that a short-K twin's dense-row kernel copies them as they lie and
 * lays them out in shared memory; the same values with rows 8 elements
 * apart go through the tensor map (the twin's own kernel). Both right
 * against the reference and byte-identical to each other: on every twin
 * and the rule, every K of whole 16-byte chunks, ragged N, ragged M over
 * several row tiles (a 128-row tile whose second consumer has no rows),
 * with the epilogues. `dense`: the plan must run a dense-row kernel. */
static void dense_vs_maps(gpu_env *env, const gcase *gc, int dense)
{
    if (too_big_for_quick(gc->m, gc->n, gc->k))
        return;
    gbufs g;
    make_buffers(env, gc, &g); /* packed: gc->pad == 0 */
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &plan));
    bc_gemm_plan_info i1, i2;
    CHECK_BC(bc_gemm_plan_query(plan, &i1));
    const size_t kl = strlen(i1.kernel);
    print_message("  %lldx%lldx%lld: %s\n", (long long)gc->m, (long long)gc->n, (long long)gc->k, i1.kernel);
    if (dense && i1.kernel[kl - 1] != 'd')
        fail_msg("%lldx%lldx%lld on %s: not the dense-row kernel", (long long)gc->m, (long long)gc->n,
                 (long long)gc->k, i1.kernel);
    poison_and_run(env, plan, &g);
    check_result(gc, &g);
    const size_t sd = bytes_of(g.d.m, g.d.ldd, g.d.d_type), es = bc_dtype_bytes(g.d.ab_type);
    void *want = malloc(sd);
    memcpy(want, g.hd, sd);
    bc_gemm_desc d2 = g.d;
    d2.lda = d2.ldb = gc->k + 8;
    const size_t sa = (size_t)(gc->m * d2.lda) * es, sb = (size_t)(gc->n * d2.ldb) * es;
    char *ha2 = malloc(sa), *hb2 = malloc(sb);
    memset(ha2, 0x7F, sa), memset(hb2, 0x7F, sb); /* the gaps: huge values, which must not be read */
    for (int64_t r = 0; r < gc->m; r++)
        memcpy(ha2 + (size_t)(r * d2.lda) * es, (const char *)g.ha + (size_t)(r * gc->k) * es, (size_t)gc->k * es);
    for (int64_t r = 0; r < gc->n; r++)
        memcpy(hb2 + (size_t)(r * d2.ldb) * es, (const char *)g.hb + (size_t)(r * gc->k) * es, (size_t)gc->k * es);
    bc_devptr a2, b2;
    CHECK_BC(bc_mem_alloc(env->dev, sa, &a2));
    CHECK_BC(bc_mem_alloc(env->dev, sb, &b2));
    CHECK_BC(bc_memcpy_htod(env->dev, a2, ha2, sa));
    CHECK_BC(bc_memcpy_htod(env->dev, b2, hb2, sb));
    d2.a = a2, d2.b = b2;
    bc_gemm_plan *plan2 = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &d2, &plan2));
    CHECK_BC(bc_gemm_plan_query(plan2, &i2));
    assert_string_equal(i1.config, i2.config);
    assert_int_equal(i2.kernel[strlen(i2.kernel) - 1] == 'd', 0);
    CHECK_BC(bc_memset_d8_async(env->s, g.dd, 0xFF, sd));
    CHECK_BC(bc_gemm_launch(plan2, env->s));
    CHECK_BC(bc_stream_wait(env->s, 30ull * 1000000000ull));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g.hd, g.dd, sd));
    if (memcmp(want, g.hd, sd) != 0)
        fail_msg("%lldx%lldx%lld on %s: packed rows and rows 8 apart give different bytes", (long long)gc->m,
                 (long long)gc->n, (long long)gc->k, i1.config);
    bc_mem_free(env->dev, a2), bc_mem_free(env->dev, b2);
    free(want), free(ha2), free(hb2);
    bc_gemm_plan_destroy(plan), bc_gemm_plan_destroy(plan2);
    free_buffers(env, &g);
}

static void test_gemm_dense_rows(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const char *const configs[] = {NULL, "sm90_64x32t", "sm90_128x64t", "sm90_64x32m16t"};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (int64_t k = 8; k < 64; k += 8) {
            /* hundreds of CTAs at once on a row of A: the twins take their dense-row kernels */
            const int skinny = configs[c] && strstr(configs[c], "m16");
            /* N ragged at odd K / 8, else D's (and C's) rows 16-byte multiples: the TMA store, C through the ring */
            const int64_t n0 = (k / 8) % 2 ? 25619 : 25600;
            const int64_t dshape[2][2] = {
                {skinny ? 13 : 37, n0}, /* one row of tiles */
                {133, n0 / 2},          /* three (or two) rows of tiles, the last of 5 rows */
            };
            for (int s = 0; s < (skinny ? 1 : 2); s++) {
                const int v = (int)((size_t)(k / 8) + c + (size_t)s) % 4; /* an epilogue for each case */
                const int64_t m = dshape[s][0], n = dshape[s][1];
                const gcase cases[] = {
                    {m, n, k, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, configs[c], 1, 0, 0},
                    {m, n, k, BC_DTYPE_F16, BC_DTYPE_F32, 0.75f, -0.5f, 1, 1, 0, 0, configs[c], 1, 0, 0},
                    {m, n, k, BC_DTYPE_BF16, BC_DTYPE_F16, 1.0f, 1.0f, 0, 1, 0, 0, configs[c], 1, 1, 0},
                    {m, n, k, BC_DTYPE_F16, BC_DTYPE_BF16, 1.5f, 0.0f, 1, 0, 0, 0, configs[c], 1, 0, 0},
                };
                /* 128x64t takes it only where it saves more than half of A's row requests */
                const int half = configs[c] && strstr(configs[c], "128x64t") && (k == 32 || k == 48 || k == 56);
                dense_vs_maps(env, &cases[v], configs[c] != NULL && !half);
            }
        }
}

/* The plan's configuration is `config`. */
static void expect_config(gpu_env *env, const gcase *gc, const char *config)
{
    gbufs g;
    bc_gemm_plan_info info;
    bc_gemm_plan *plan = plan_with_info(env, gc, &g, &info);
    if (strcmp(info.config, config) != 0)
        fail_msg("%lldx%lldx%lld: the rule chose %s, not %s", (long long)gc->m, (long long)gc->n, (long long)gc->k,
                 info.config, config);
    bc_gemm_plan_destroy(plan);
    free_buffers(env, &g);
}

/* The dot kernel (sm90_dot): A the larger side, B the larger, square; K
 * from one 16-byte chunk (named) to a cluster of 8 (the rule's choice,
 * checked; named where the rule cedes the problem to the GEMV kernel: 5 or
 * more smaller-side rows up to K = 2048, more than 5120 loads a CTA); up
 * to 64 outputs in all, and thousands in runs of rows a cluster; every
 * input and output type, plain and with the whole epilogue on padded rows
 * (odd D rows); C aliasing D; 20 runs byte-identical. */
static void test_gemm_dot(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const int64_t mn[][2] = {{1, 1}, {7, 1}, {1, 6}, {64, 1}, {1, 64}, {8, 8}, {3, 21}, {13, 4}, {2, 2}};
    static const int64_t ks[] = {8, 136, 528, 4104, 11136, 16384};
    for (size_t i = 0; i < sizeof mn / sizeof mn[0]; i++)
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
            const int64_t m = mn[i][0], n = mn[i][1], k = ks[j];
            /* the rule leaves K <= 128, and 5 rows or more up to K = 2048, to the GEMV kernel */
            const int64_t small = m < n ? m : n;
            const char *cf = k < 129 || (small >= 5 && k <= 2048) ? "sm90_dot" : NULL;
            const bc_dtype ab = (i + j) % 2 ? BC_DTYPE_F16 : BC_DTYPE_BF16;
            const bc_dtype dt = (bc_dtype)((i + 2 * j) % 3);
            const gcase cases[] = {
                {m, n, k, ab, dt, 1.0f, 0.0f, 0, 0, 0, 0, cf, 0, 0, 0},
                {m, n, k, ab, dt, 0.75f, -0.5f, 1, 1, 8, 0, cf, 0, 1, 0},
            };
            for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
                if (cf == NULL)
                    expect_config(env, &cases[q], "sm90_dot");
                run_case(env, &cases[q]);
            }
        }
    /* the larger side in runs of rows a cluster (up to 64 outputs a CTA, several tasks a warp); the last four
     * named (the rule's GEMV kernel: 6000, 10240 and 11264 loads a CTA, 8 rows at K = 600) */
    static const int64_t wide[][3] = {{1, 3488, 552}, {231, 1, 520},  {3000, 1, 200}, {1, 8000, 136},
                                      {2, 2000, 1000}, {4, 1000, 2048}, {1, 256, 16384}, {8, 300, 600}};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
        const bc_dtype dt = (bc_dtype)(i % 3);
        const char *cf = i >= 4 ? "sm90_dot" : NULL;
        const gcase cases[] = {
            {wide[i][0], wide[i][1], wide[i][2], BC_DTYPE_BF16, dt, 1.0f, 0.0f, 0, 0, 0, 0, cf, 0, 0, 0},
            {wide[i][0], wide[i][1], wide[i][2], BC_DTYPE_F16, dt, 0.75f, -0.5f, 1, 1, 8, 0, cf, 0, 1, 0},
        };
        for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
            gcase rule = cases[q];
            rule.config = NULL;
            expect_config(env, &rule, cf ? "sm90_gemv" : "sm90_dot");
            run_case(env, &cases[q]);
        }
    }
    const gcase alias = {7, 1, 11136, BC_DTYPE_BF16, BC_DTYPE_BF16, 0.5f, -1.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    run_aliased(env, &alias);
    const gcase rep = {15, 1, 10800, BC_DTYPE_F16, BC_DTYPE_F32, 1.0f, 0.5f, 1, 0, 0, 0, NULL, 0, 0, 0};
    run_repeated(env, &rep, quick ? 5 : 20);
}

/* The same plan 100 times: every output byte-identical to the first. */
static void test_gemm_deterministic_100(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    gcase gc = {1000, 1000, 1000, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0};
    if (quick)
        gc.m = gc.n = gc.k = 264;
    run_repeated(env, &gc, quick ? 10 : 100);
}

/* Graph mode: two plans captured in sequence; replay matches stream mode
 * bit for bit; re-pointing a plan and updating the graph in place works. */
static void test_graph_mode(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    gcase gc = {256, 768, 512, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    gbufs g1, g2;
    make_buffers(env, &gc, &g1);
    make_buffers(env, &gc, &g2);
    bc_gemm_plan *p1 = NULL, *p2 = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g1.d, &p1));
    CHECK_BC(bc_gemm_plan_create(env->dev, &g2.d, &p2));
    size_t sd = bytes_of(g1.d.m, g1.d.ldd, g1.d.d_type);
    void *stream_out = malloc(sd);
    poison_and_run(env, p2, &g2);
    memcpy(stream_out, g2.hd, sd);

    const bc_gemm_plan *plans[2] = {p1, p2};
    bc_graph *graph = NULL;
    CHECK_BC(bc_graph_create(env->s, plans, 2, &graph));
    CHECK_BC(bc_memset_d8_async(env->s, g1.dd, 0xFF, sd));
    CHECK_BC(bc_memset_d8_async(env->s, g2.dd, 0xFF, sd));
    CHECK_BC(bc_graph_launch(graph, env->s));
    CHECK_BC(bc_stream_wait(env->s, 10ull * 1000000000ull));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g1.hd, g1.dd, sd));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g2.hd, g2.dd, sd));
    check_result(&gc, &g1);
    assert_memory_equal(stream_out, g2.hd, sd);

    /* re-point plan 1 at fresh inputs and a third output, patch the graph in place: node 0 now writes
     * only g3 (right against the reference), node 1 still g2, and g1 stays poisoned */
    gbufs g3;
    make_buffers(env, &gc, &g3);
    CHECK_BC(bc_gemm_plan_set_pointers(p1, g3.a, g3.b, 0, g3.dd, g3.bias));
    CHECK_BC(bc_graph_update(graph, 0, p1));
    CHECK_BC(bc_memset_d8_async(env->s, g1.dd, 0xFF, sd));
    CHECK_BC(bc_memset_d8_async(env->s, g2.dd, 0xFF, sd));
    CHECK_BC(bc_memset_d8_async(env->s, g3.dd, 0xFF, sd));
    CHECK_BC(bc_graph_launch(graph, env->s));
    CHECK_BC(bc_stream_wait(env->s, 10ull * 1000000000ull));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g1.hd, g1.dd, sd));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g2.hd, g2.dd, sd));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g3.hd, g3.dd, sd));
    check_result(&gc, &g3);
    assert_memory_equal(stream_out, g2.hd, sd);
    for (size_t i = 0; i < sd; i++)
        if (((const unsigned char *)g1.hd)[i] != 0xFF)
            fail_msg("the updated graph still wrote the old output (byte %zu)", i);
    free_buffers(env, &g3);

    bc_graph_destroy(graph);
    free(stream_out);
    bc_gemm_plan_destroy(p1);
    bc_gemm_plan_destroy(p2);
    free_buffers(env, &g1);
    free_buffers(env, &g2);
}

/* Plan 2 reads plan 1's D as its A (one stream: the second launch's
 * programmatic serialization must still see the first one's output),
 * `rounds` times with fresh values of plan 1's A, each round launched
 * plan by plan and as one graph: both against the reference of the D1 the
 * GPU wrote, and the graph's bytes the stream's. Plan 2 must run `want2`
 * (NULL: any configuration). */
static void run_chain(gpu_env *env, const gcase *c1, const gcase *c2, int rounds, const char *want2)
{
    gbufs g1, g2;
    make_buffers(env, c1, &g1);
    make_buffers(env, c2, &g2);
    g2.d.a = g1.dd; /* A2 = D1 */
    bc_gemm_plan *p1 = NULL, *p2 = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g1.d, &p1));
    CHECK_BC(bc_gemm_plan_create(env->dev, &g2.d, &p2));
    bc_gemm_plan_info info;
    CHECK_BC(bc_gemm_plan_query(p2, &info));
    if (want2 != NULL && strcmp(info.config, want2) != 0)
        fail_msg("plan 2 runs %s, not %s", info.config, want2);
    const size_t s1 = bytes_of(g1.d.m, g1.d.ldd, g1.d.d_type), s2 = bytes_of(g2.d.m, g2.d.ldd, g2.d.d_type);
    const size_t sa = bytes_of(g1.d.m, g1.d.lda, g1.d.ab_type);
    void *first = malloc(s2);
    const bc_gemm_plan *plans[2] = {p1, p2};
    bc_graph *graph = NULL;
    CHECK_BC(bc_graph_create(env->s, plans, 2, &graph));
    for (int round = 0; round < rounds; round++) {
        if (round > 0) { /* fresh A1: a plan 2 that read a stale D1 would miss the reference */
            bc_ref_fill_normal(g1.ha, g1.d.ab_type, sa / bc_dtype_bytes(g1.d.ab_type), 1.0, &rng);
            CHECK_BC(bc_memcpy_htod(env->dev, g1.a, g1.ha, sa));
        }
        for (int mode = 0; mode < 2; mode++) {
            CHECK_BC(bc_memset_d8_async(env->s, g1.dd, 0xFF, s1));
            CHECK_BC(bc_memset_d8_async(env->s, g2.dd, 0xFF, s2));
            if (mode == 0) {
                CHECK_BC(bc_gemm_launch(p1, env->s));
                CHECK_BC(bc_gemm_launch(p2, env->s));
            } else {
                CHECK_BC(bc_graph_launch(graph, env->s));
            }
            CHECK_BC(bc_stream_wait(env->s, 10ull * 1000000000ull));
            CHECK_BC(bc_memcpy_dtoh(env->dev, g1.hd, g1.dd, s1));
            CHECK_BC(bc_memcpy_dtoh(env->dev, g2.hd, g2.dd, s2));
            check_result(c1, &g1);
            memcpy(g2.ha, g1.hd, s1); /* the reference reads the D1 the GPU wrote */
            check_result(c2, &g2);
            if (mode == 0)
                memcpy(first, g2.hd, s2);
            else
                assert_memory_equal(first, g2.hd, s2);
        }
    }
    free(first);
    bc_graph_destroy(graph);
    bc_gemm_plan_destroy(p1);
    bc_gemm_plan_destroy(p2);
    free_buffers(env, &g1);
    free_buffers(env, &g2);
}

/* A GEMM that reads the previous GEMM's output (the tile kernels). */
static void test_dependent_chain(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    const gcase c1 = {300, 512, 264, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0};
    const gcase c2 = {300, 200, 512, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.0f, 1, 0, 0, 0, NULL, 0, 0, 0};
    run_chain(env, &c1, &c2, 1, NULL);
}

/* Each shape where the rule takes `config` (checked), with alternating input and output types: plain, and
 * with C, a bias, ReLU and padded rows (odd D rows); shapes past 2^27 multiply-adds skipped in the quick set. */
static void run_rule_shapes(gpu_env *env, const int64_t (*list)[3], size_t count, const char *config)
{
    for (size_t i = 0; i < count; i++) {
        const int64_t m = list[i][0], n = list[i][1], k = list[i][2];
        if (quick && m * n * k > (1ll << 27))
            continue;
        const bc_dtype ab = i % 2 ? BC_DTYPE_F16 : BC_DTYPE_BF16;
        const bc_dtype dt = (bc_dtype)(i % 3);
        const gcase cases[] = {
            {m, n, k, ab, dt, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0},
            {m, n, k, ab, dt, 0.75f, -0.5f, 1, 1, 8, 0, NULL, 0, 1, 0},
        };
        for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
            expect_config(env, &cases[q], config);
            run_case(env, &cases[q]);
        }
    }
}

/* Each shape with `config` named: C, alternating bias and output types (same skip). */
static void run_named_shapes(gpu_env *env, const int64_t (*list)[3], size_t count, const char *config)
{
    for (size_t i = 0; i < count; i++) {
        if (quick && list[i][0] * list[i][1] * list[i][2] > (1ll << 27))
            continue;
        const gcase gc = {list[i][0], list[i][1], list[i][2], BC_DTYPE_BF16, (bc_dtype)(i % 3), 0.5f, 1.0f, 1,
                          (int)(i % 2), 0, 0, config, 0, 1, 0};
        run_case(env, &gc);
    }
}

/* The GEMV kernel (sm90_gemv): the smaller side 1 to 16 rows, as A (M) and as B (N); K from 144 to 16384 on
 * every grid shape the rule makes (K split over clusters of 2, 4 and 8, runs of 16 rows, row groups of 8 for
 * a short K, a K ending mid-step); every input and output type, plain and with the whole epilogue on padded rows
 * (odd D rows); each rule-chosen case checked to be the GEMV kernel's; named at K of 8 to 128; C aliasing D;
 * 20 runs byte-identical (split and whole). */
static void test_gemm_gemv(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const int64_t gshapes[][3] = {
        {1, 4096, 4096},  {16, 4096, 4096}, {9, 1000, 200},   {12, 2113, 256},  {16, 2048, 8192},
        {437, 9, 14184},  {3, 198, 14944},  {15473, 2, 152},  {2, 6445, 144},   {16, 300, 520},
        {4096, 16, 4096}, {13, 110, 6448},  {1, 1321, 2048},  {5, 100, 2048},   {11, 4099, 1000},
        {7, 3001, 4104},  {16, 128, 16384},
    };
    run_rule_shapes(env, gshapes, sizeof gshapes / sizeof gshapes[0], "sm90_gemv");
    /* named at a K of at most 128 (the rule's choice there too since the GEMV kernel took K <= 128) */
    static const int64_t named[][3] = {{16, 4096, 128}, {1, 1, 8}, {9, 77, 40}, {3000, 12, 64}};
    run_named_shapes(env, named, sizeof named / sizeof named[0], "sm90_gemv");
    const gcase alias = {16, 3000, 2056, BC_DTYPE_BF16, BC_DTYPE_BF16, 0.5f, -1.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    run_aliased(env, &alias);
    const gcase split = {437, 9, 14184, BC_DTYPE_F16, BC_DTYPE_F32, 1.0f, 0.5f, 1, 0, 0, 0, NULL, 0, 0, 0};
    run_repeated(env, &split, quick ? 5 : 20);
    const gcase rows = {16, 4096, 4096, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    run_repeated(env, &rows, quick ? 5 : 20);
}

/* The GEMV kernel's 32-row twin (sm90_gemv32: the smaller side as two halves of 16 rows): 17 to 32 rows as A
 * (M) and as B (N), where the rule takes it (a larger side up to 4096, K up to 3072; each case checked to be the
 * twin's) on its grid forms (runs of 16 and of 8, row groups of 8 for a short K, a K ending mid-step), and named
 * past that (K split 4 ways) and below 17 rows; every input and output type, plain and with the whole epilogue
 * on padded rows (odd D rows); C aliasing D; 20 runs byte-identical, whole and split. */
static void test_gemm_gemv32(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const int64_t gshapes[][3] = {
        {17, 2160, 2808}, {24, 2113, 256}, {32, 1000, 2056}, {3001, 29, 1000}, {4096, 20, 1016},
        {31, 77, 40},     {19, 318, 968},  {2999, 18, 24},   {32, 4096, 3072}, {25, 1208, 688},
    };
    run_rule_shapes(env, gshapes, sizeof gshapes / sizeof gshapes[0], "sm90_gemv32");
    /* named: past the rule's larger side, below 17 rows, K of one step */
    static const int64_t named[][3] = {{9000, 21, 24}, {17, 4096, 4104}, {5, 1000, 512}, {28, 6000, 8},
                                       {20, 300, 16384}};
    run_named_shapes(env, named, sizeof named / sizeof named[0], "sm90_gemv32");
    const gcase alias = {32, 3000, 2056, BC_DTYPE_BF16, BC_DTYPE_BF16, 0.5f, -1.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    run_aliased(env, &alias);
    const gcase split = {20, 300, 16384, BC_DTYPE_F16, BC_DTYPE_F32, 1.0f, 0.5f, 1, 0, 0, 0, "sm90_gemv32", 0, 0, 0};
    run_repeated(env, &split, quick ? 5 : 20);
    const gcase rows = {24, 2048, 2048, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0};
    run_repeated(env, &rows, quick ? 5 : 20);
}

/* The dot kernel reads its operands through the non-coherent path after
 * griddepcontrol.wait: each round's fresh output of the GEMM before it, a
 * tile kernel's (64 x 1024) and its own (2 x 1024 from the dot kernel),
 * never an earlier round's. */
static void test_dot_reads_previous_output(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    const gcase t1 = {64, 1024, 256, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0};
    const gcase t2 = {64, 2, 1024, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 1, 0, 0, 0, NULL, 0, 0, 0};
    run_chain(env, &t1, &t2, quick ? 5 : 20, "sm90_dot");
    const gcase d1 = {2, 1024, 512, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0};
    const gcase d2 = {2, 3, 1024, BC_DTYPE_BF16, BC_DTYPE_F32, 0.5f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0};
    run_chain(env, &d1, &d2, quick ? 5 : 20, "sm90_dot");
}

static int setup(void **state) { return gemm_case_setup(state, "test_gpu_gemm"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_matrix),
        cmocka_unit_test(test_gemm_layouts),
        cmocka_unit_test(test_gemm_every_config),
        cmocka_unit_test(test_gemm_skinny),
        cmocka_unit_test(test_gemm_narrow_split),
        cmocka_unit_test(test_gemm_c_aliases_d),
        cmocka_unit_test(test_gemm_n1_transposed),
        cmocka_unit_test(test_gemm_dense_rows),
        cmocka_unit_test(test_gemm_dot),
        cmocka_unit_test(test_gemm_gemv),
        cmocka_unit_test(test_gemm_gemv32),
        cmocka_unit_test(test_gemm_deterministic_100),
        cmocka_unit_test(test_graph_mode),
        cmocka_unit_test(test_dependent_chain),
        cmocka_unit_test(test_dot_reads_previous_output),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_gemm", tests, setup, gpu_env_teardown);
}
