/* GPU tests of the portable (mma.sync) GEMM family, every configuration
 * named explicitly: on the H100 these run the sm_90a image's copy of the
 * kernels, elsewhere (8.x, 12.x) the sm_80 / sm_120 image. Against the fp64
 * reference with poisoned outputs (gemm_case.h): every input and output
 * type, the full epilogue (alpha, beta*C, bias, ReLU), ragged M, N and K at
 * every tile edge, padded and odd leading dimensions, A at a 16-byte (not
 * 128-byte) aligned address, K = 8 (one partial k-block), C aliasing D, and
 * the same plan 100 times byte-identical. BC_TEST_QUICK=1 keeps shapes up
 * to 2^27 multiply-adds and 10 repeats (compute-sanitizer). */
#include "gemm_case.h"


static gpu_env *portable_env_or_skip(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    bc_device_info info;
    CHECK_BC(bc_device_query(env->dev, &info));
    if (!gpu_is_hopper(env) && info.cc_major != 8 && info.cc_major != 12)
        skip(); /* the Blackwell images carry no portable kernels */
    return env;
}

/* Shapes at and around every configuration's tile edges (BM 64/128, BN
 * 32..256, BK 32/64, stages of 3..6 k-blocks), K from one partial k-block
 * to many. */
static const int64_t shapes[][3] = {
    {1, 1, 8},       {7, 9, 16},      {64, 32, 64},     {65, 33, 72},      {127, 255, 72},
    {128, 256, 32},  {129, 257, 136}, {300, 520, 264},  {1000, 1000, 1000}, {16, 4096, 4096},
    {2048, 2048, 2048},
};

/* Each configuration x shape x input type x output type, plain and with
 * the full epilogue. */
static void test_portable_matrix(void **state)
{
    gpu_env *env = portable_env_or_skip(state);
    for (size_t c = 0; c < GEMM_SM80_CONFIGS; c++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int ab = BC_DTYPE_BF16; ab <= BC_DTYPE_F16; ab++)
                for (int dt = BC_DTYPE_BF16; dt <= BC_DTYPE_F32; dt++)
                    for (int epi = 0; epi < 2; epi++) {
                        gcase gc = {shapes[s][0], shapes[s][1], shapes[s][2], (bc_dtype)ab, (bc_dtype)dt,
                                    epi ? 0.75f : 1.0f, epi ? -0.5f : 0.0f, epi, epi, 0, 0, gemm_sm80_configs[c],
                                    0, 0, 0};
                        run_case(env, &gc);
                    }
}

/* Layouts per configuration (run_layouts), then the full epilogue with A at
 * a 16-byte offset. */
static void test_portable_layouts(void **state)
{
    gpu_env *env = portable_env_or_skip(state);
    for (size_t c = 0; c < GEMM_SM80_CONFIGS; c++) {
        const char *cf = gemm_sm80_configs[c];
        run_layouts(env, cf);
        const gcase cases[] = {
            {129, 257, 136, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, -1.0f, 1, 1, 0, 0, cf, 0, 1, 0},
            {129, 257, 136, BC_DTYPE_F16, BC_DTYPE_F32, 0.5f, 0.25f, 1, 0, 0, 0, cf, 0, 3, 0},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case(env, &cases[i]);
    }
}

/* In place: C aliases D exactly, every configuration and output type. */
static void test_portable_c_aliases_d(void **state)
{
    gpu_env *env = portable_env_or_skip(state);
    for (size_t c = 0; c < GEMM_SM80_CONFIGS; c++)
        for (int dt = BC_DTYPE_BF16; dt <= BC_DTYPE_F32; dt++) {
            gcase gc = {333, 444, 128, BC_DTYPE_BF16, (bc_dtype)dt, 1.0f, 1.0f, 1, 0, 0, 0, gemm_sm80_configs[c],
                        0, 0, 0};
            run_aliased(env, &gc);
        }
}

/* The same plan 100 times per configuration: every output byte-identical
 * to the first (which is checked against the reference). */
static void test_portable_deterministic_100(void **state)
{
    gpu_env *env = portable_env_or_skip(state);
    for (size_t c = 0; c < GEMM_SM80_CONFIGS; c++) {
        gcase gc = {1000, 1000, 1000, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.0f, 1, 0,
                    0, 0, gemm_sm80_configs[c], 0, 0, 0};
        if (quick)
            gc.m = gc.n = gc.k = 264;
        run_repeated(env, &gc, quick ? 10 : 100);
    }
}

static int setup(void **state) { return gemm_case_setup(state, "test_gpu_gemm_portable"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portable_matrix),
        cmocka_unit_test(test_portable_layouts),
        cmocka_unit_test(test_portable_c_aliases_d),
        cmocka_unit_test(test_portable_deterministic_100),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_gemm_portable", tests, setup, gpu_env_teardown);
}
