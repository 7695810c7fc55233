/* GPU tests of the Hopper GEMM's epilogue paths: every path of every
 * whole-tile configuration (C through the ring or read by the threads, the
 * TMA store and the copy-out), the copy-out at every alignment a D row can
 * start at, and the plain staging's bytes against the general path's.
 * Against an fp64 CPU reference on fresh random inputs with poisoned
 * outputs, with the bounds of test_gpu_gemm.c. Seed: printed per run;
 * BC_SEED replays. BC_TEST_QUICK=1 keeps the small shapes (the
 * compute-sanitizer passes). */
#include "gemm_case.h"

/* Every epilogue path of every whole-tile configuration, on ragged shapes
 * that leave whole C boxes outside M (the second consumer's rows) and
 * outside N (a last tile with a few columns), for each output type:
 *   C through the ring + TMA store (C and D pitches 16-byte multiples; on
 *     129 x 520 N too, while 258 and 33 columns end inside a 16-byte piece,
 *     which the plan copies out, leaving the pitch's last columns alone),
 *   C through the ring + copy-out (D rows not: cd_pad 1, C padded back),
 *   C read by the epilogue + thread stores (C rows not 16-byte multiples),
 *   copy-out without C (D rows not 16-byte multiples),
 *   TMA store without C, bias or ReLU (every tile's plain staging),
 *   C that is D, through the ring, pitches on 16 bytes: on 258 and 33
 *     columns copied out (each tile reads its C before its threads write
 *     it), the padding columns left as C had them. */
static void test_gemm_epilogue_paths(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const char *const configs[] = {"sm90_128x256", "sm90_128x128", "sm90_128x64", "sm90_64x32",
                                          "sm90_128x64t", "sm90_64x32t",  "sm90_64x256"};
    static const int64_t eshapes[][3] = {{129, 520, 136}, {200, 258, 72}, {1, 33, 8}};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (size_t s = 0; s < sizeof eshapes / sizeof eshapes[0]; s++)
            for (int dt = BC_DTYPE_BF16; dt <= BC_DTYPE_F32; dt++) {
                const int64_t m = eshapes[s][0], n = eshapes[s][1], k = eshapes[s][2];
                /* pads that make a row of n + pad elements a 16-byte multiple, or not */
                const int64_t per16 = dt == BC_DTYPE_F32 ? 4 : 8, align = (per16 - n % per16) % per16;
                const bc_dtype t = (bc_dtype)dt;
                const gcase cases[] = {
                    {m, n, k, BC_DTYPE_BF16, t, 0.75f, -0.5f, 1, 1, 0, 0, configs[c], 1, align, 0},
                    {m, n, k, BC_DTYPE_F16, t, 1.0f, 2.0f, 1, 0, 0, 0, configs[c], 1, align + 1, per16 - 1},
                    {m, n, k, BC_DTYPE_BF16, t, 1.0f, 1.0f, 0, 1, 0, 0, configs[c], 1, align, 1},
                    {m, n, k, BC_DTYPE_F16, t, 1.5f, 0.0f, 1, 1, 0, 0, configs[c], 1, align + 1, 0},
                    /* no C, bias or ReLU: every tile takes its plain staging */
                    {m, n, k, BC_DTYPE_F16, t, 1.25f, 0.0f, 0, 0, 0, 0, configs[c], 1, align, 0},
                };
                for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                    run_case(env, &cases[i]);
                const gcase in_place = {m, n, k, BC_DTYPE_BF16, t, 1.0f, 0.5f, 1, 0, 0, 0, configs[c], 1, align, 0};
                run_aliased(env, &in_place);
            }
}

/* The copy-out paths for D rows that are not 16-byte multiples, at every
 * alignment a row's start can have: 16-bit D (rotated 16-byte windows) with
 * a pitch of 2, 4, 8 and 12 bytes past a 16-byte multiple, f32 D (one
 * element a lane) with 4, 8 and 12, for every whole-tile configuration the rule
 * can take (and the skinny ones at M <= 16), on N that ends a row 6 or 2
 * bytes into an 8-byte word (N % 4 == 3 or 1), each output type, without C
 * and with C through the ring (C rows padded to 16 bytes), and without C,
 * bias or ReLU (every tile's plain staging). */
static void test_gemm_copyout_pitches(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const char *const configs[] = {"sm90_128x256", "sm90_128x128", "sm90_128x64",   "sm90_64x32",
                                          "sm90_128x64t", "sm90_64x32m16", "sm90_64x32m16t", "sm90_64x32t",
                                          "sm90_64x256"};
    static const int64_t wide[][3] = {{129, 259, 72}, {200, 521, 136}}, skinny[][3] = {{13, 259, 72}, {5, 129, 8}};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (size_t s = 0; s < 2; s++)
            for (int dt = BC_DTYPE_BF16; dt <= BC_DTYPE_F32; dt++) {
                const int64_t(*sh)[3] = strstr(configs[c], "m16") ? skinny : wide;
                const int64_t m = sh[s][0], n = sh[s][1], k = sh[s][2];
                const int64_t per16 = dt == BC_DTYPE_F32 ? 4 : 8; /* elements per 16 bytes */
                /* pitch residues in elements past a 16-byte multiple: 16-bit 1, 2, 4, 6; f32 1, 2, 3 */
                static const int64_t r16[] = {1, 2, 4, 6}, r32[] = {1, 2, 3};
                const int64_t *res = dt == BC_DTYPE_F32 ? r32 : r16;
                const size_t nres = dt == BC_DTYPE_F32 ? 3 : 4;
                for (size_t i = 0; i < nres; i++) {
                    const int64_t cd = ((res[i] - n % per16) % per16 + per16) % per16; /* (n + cd) % per16 == res */
                    const int64_t cp = (per16 - res[i]) % per16;                       /* C rows back to 16 bytes */
                    const bc_dtype ab = i % 2 ? BC_DTYPE_F16 : BC_DTYPE_BF16, t = (bc_dtype)dt;
                    const gcase cases[] = {
                        {m, n, k, ab, t, 0.75f, 0.0f, 1, 1, 0, 0, configs[c], 1, cd, 0},
                        {m, n, k, ab, t, 1.0f, -0.5f, 1, 0, 0, 0, configs[c], 1, cd, cp},
                        {m, n, k, ab, t, -1.25f, 0.0f, 0, 0, 0, 0, configs[c], 1, cd, 0}, /* plain staging */
                    };
                    for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++)
                        run_case(env, &cases[q]);
                }
            }
}

/* The plain staging writes the bytes of the general one: a plan without C,
 * bias or ReLU against the same plan with a bias of +0.0 in every column
 * (the general path; the same f32 expression, rounded once), on seven
 * whole-tile configurations (the wide and narrow tiles, their short-K
 * twins, the one-row tile; the skinny tiles, the pair twins and 128x128's
 * stream-K twin are left to their own tests), D rows on and off 16 bytes,
 * each output type.
 * The plan with the bias is also checked against the reference. */
static void test_gemm_plain_same_bytes(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const char *const configs[] = {"sm90_128x256", "sm90_128x128", "sm90_128x64", "sm90_64x32",
                                          "sm90_128x64t", "sm90_64x32t",  "sm90_64x256"};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (int dt = BC_DTYPE_BF16; dt <= BC_DTYPE_F32; dt++)
            for (int64_t cd = 0; cd < 2; cd++) {
                const int64_t per16 = dt == BC_DTYPE_F32 ? 4 : 8, n = 2 * per16 * 33; /* rows on 16 bytes */
                const gcase gc = {200, n, 136, BC_DTYPE_BF16, (bc_dtype)dt, 0.75f, 0.0f, 1, 0, 0, 0, configs[c],
                                  1, cd, 0};
                gbufs g;
                make_buffers(env, &gc, &g);
                const size_t sbias = (size_t)n * bc_dtype_bytes(g.d.d_type);
                memset(g.hbias, 0, sbias); /* +0.0 in every type */
                CHECK_BC(bc_memcpy_htod(env->dev, g.bias, g.hbias, sbias));
                bc_gemm_plan *general = NULL, *plain = NULL;
                CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &general));
                g.d.bias = 0;
                CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &plain));
                g.d.bias = g.bias;
                const size_t sd = bytes_of(g.d.m, g.d.ldd, g.d.d_type);
                void *want = malloc(sd);
                assert_non_null(want);
                poison_and_run(env, general, &g);
                check_result(&gc, &g);
                memcpy(want, g.hd, sd);
                poison_and_run(env, plain, &g);
                if (memcmp(want, g.hd, sd) != 0)
                    fail_msg("%s d_type %d cd_pad %lld: plain staging differs from a +0.0 bias", configs[c], dt,
                             (long long)cd);
                free(want);
                bc_gemm_plan_destroy(plain);
                bc_gemm_plan_destroy(general);
                free_buffers(env, &g);
            }
}

static int setup(void **state) { return gemm_case_setup(state, "test_gpu_gemm_epilogue"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_epilogue_paths),
        cmocka_unit_test(test_gemm_copyout_pitches),
        cmocka_unit_test(test_gemm_plain_same_bytes),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_gemm_epilogue", tests, setup, gpu_env_teardown);
}
