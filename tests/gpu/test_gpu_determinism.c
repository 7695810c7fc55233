/* The determinism guarantee under load: one plan launched 1000 times while a
 * third stream keeps the GPU busy with large GEMMs must write the same bytes
 * every time (compared with the first run, which is itself checked against
 * the fp64 CPU reference). The plan alternates between two streams, launches
 * overlapping: a whole-tile plan, a split-K plan (its partials meet in
 * distributed shared memory, so it needs no workspace and may overlap
 * itself; the one-row tile of 256 columns whole and split too), a plan with beta*C (C through the stage ring), one whose D rows
 * are not 16-byte multiples (the copy-out store path), a skinny-M plan, the
 * dense-row kernels (short packed rows of A copied as they lie), the
 * multicast twins (pairs of CTAs sharing B's loads, and blocks of 2 x 2
 * sharing A's and B's), the tiles' plain staging (no C, bias or
 * ReLU) and the portable mma.sync family, named. BC_TEST_QUICK=1 runs 100
 * launches. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "ref.h"

#define RING 8          /* outputs in flight before a comparison round */
#define LOAD_DIM 4096   /* the background GEMM on the third stream */

typedef struct operand {
    bc_devptr dev;
    void *host;
    size_t bytes;
} operand;

static void make_operand(gpu_env *env, operand *o, size_t elems, bc_dtype t, bc_rng *r)
{
    o->bytes = elems * bc_dtype_bytes(t);
    o->host = malloc(o->bytes);
    assert_non_null(o->host);
    bc_ref_fill_normal(o->host, t, elems, 1.0, r);
    CHECK_BC(bc_mem_alloc(env->dev, o->bytes, &o->dev));
    CHECK_BC(bc_memcpy_htod(env->dev, o->dev, o->host, o->bytes));
}

/* The kernel the next plan must run (NULL: any; same_bytes_on sets it). */
static const char *expect_kernel;
/* Set around plans without bias and ReLU (the others carry both). */
static int plain_epilogue;

static void same_bytes_under_load(gpu_env *env, int64_t m, int64_t n, int64_t k, const char *config,
                                  uint32_t split_k, float beta)
{
    const char *q = getenv("BC_TEST_QUICK");
    const int runs = q && q[0] == '1' ? 100 : 1000;
    const uint64_t seed = bc_ref_seed(); /* printed below: BC_SEED=it replays these inputs */
    bc_rng rng = {seed};
    operand a, b, c, bias, load_a, load_b;
    make_operand(env, &a, (size_t)(m * k), BC_DTYPE_BF16, &rng);
    make_operand(env, &b, (size_t)(n * k), BC_DTYPE_BF16, &rng);
    make_operand(env, &c, (size_t)(m * n), BC_DTYPE_BF16, &rng);
    make_operand(env, &bias, (size_t)n, BC_DTYPE_BF16, &rng);
    const size_t d_bytes = (size_t)(m * n) * 2;
    bc_devptr d[RING];
    for (int i = 0; i < RING; i++)
        CHECK_BC(bc_mem_alloc(env->dev, d_bytes, &d[i]));
    bc_gemm_desc desc;
    bc_gemm_desc_default(&desc);
    desc.m = m, desc.n = n, desc.k = k;
    desc.a = a.dev, desc.b = b.dev, desc.d = d[0], desc.bias = plain_epilogue ? 0 : bias.dev;
    desc.relu = !plain_epilogue;
    desc.beta = beta, desc.c = beta != 0.0f ? c.dev : 0;
    desc.config = config, desc.split_k = split_k;
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &desc, &plan));
    bc_gemm_plan_info info;
    CHECK_BC(bc_gemm_plan_query(plan, &info));
    /* the dot and GEMV kernels size their own cluster down K (plan info reports it) */
    if (info.split_k != (split_k ? split_k : 1) && strcmp(info.config, "sm90_dot") != 0 &&
        strncmp(info.config, "sm90_gemv", 9) != 0) /* sm90_gemv and sm90_gemv32 */
        fail_msg("%lldx%lldx%lld: split_k %u, asked for %u", (long long)m, (long long)n, (long long)k, info.split_k,
                 split_k);
    if (expect_kernel != NULL)
        assert_string_equal(info.kernel, expect_kernel);
    print_message("  %lldx%lldx%lld %s (%s) split_k %u beta %g%s: seed 0x%llx, %d runs, two streams overlapping\n",
                  (long long)m, (long long)n, (long long)k, info.config, info.kernel, info.split_k, beta,
                  plain_epilogue ? ", no bias or ReLU" : "",
                  (unsigned long long)seed, runs);

    /* the background load: a 4096^3 GEMM relaunched on its own stream */
    make_operand(env, &load_a, (size_t)LOAD_DIM * LOAD_DIM, BC_DTYPE_BF16, &rng);
    make_operand(env, &load_b, (size_t)LOAD_DIM * LOAD_DIM, BC_DTYPE_BF16, &rng);
    bc_devptr load_d = 0;
    CHECK_BC(bc_mem_alloc(env->dev, (size_t)LOAD_DIM * LOAD_DIM * 2, &load_d));
    bc_gemm_desc ld;
    bc_gemm_desc_default(&ld);
    ld.m = ld.n = ld.k = LOAD_DIM;
    ld.a = load_a.dev, ld.b = load_b.dev, ld.d = load_d;
    bc_gemm_plan *load = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &ld, &load));

    bc_stream *s[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        CHECK_BC(bc_stream_create(env->dev, 0, &s[i], NULL));
    uint8_t *ring_host = NULL;
    CHECK_BC(bc_host_alloc(env->dev, RING * d_bytes, (void **)&ring_host));
    void *first = malloc(d_bytes);

    int done = 0, compared = 0;
    while (done < runs) {
        int batch = runs - done < RING ? runs - done : RING;
        CHECK_BC(bc_gemm_launch(load, s[2]));
        for (int i = 0; i < batch; i++) {
            bc_stream *si = s[(done + i) % 2];
            CHECK_BC(bc_memset_d8_async(si, d[i], 0xFF, d_bytes)); /* poison */
            CHECK_BC(bc_gemm_plan_set_pointers(plan, a.dev, b.dev, desc.c, d[i], desc.bias));
            CHECK_BC(bc_gemm_launch(plan, si));
            CHECK_BC(bc_memcpy_dtoh_async(si, ring_host + (size_t)i * d_bytes, d[i], d_bytes));
        }
        CHECK_BC(bc_gemm_launch(load, s[2]));
        for (int i = 0; i < 3; i++)
            CHECK_BC(bc_stream_wait(s[i], 60ull * 1000000000ull));
        for (int i = 0; i < batch; i++) {
            const uint8_t *out = ring_host + (size_t)i * d_bytes;
            if (done + i == 0) {
                /* the first result must also be right */
                bc_gemm_desc chk = desc;
                double *ref = malloc((size_t)n * sizeof *ref);
                bc_ref_error e = {0};
                for (int64_t row = 0; row < m; row += m > 37 ? 37 : 1) {
                    bc_ref_gemm_row(&chk, a.host, b.host, beta != 0.0f ? c.host : NULL,
                                    plain_epilogue ? NULL : bias.host, row, ref);
                    bc_ref_compare_row(&chk, out, row, ref, &e);
                }
                free(ref);
                assert_int_equal(e.nonfinite, 0);
                assert_int_equal(e.bad, 0);
                assert_true(bc_ref_rel_frobenius(&e) <= bc_ref_bound(BC_DTYPE_BF16, 0));
                memcpy(first, out, d_bytes);
            } else if (memcmp(first, out, d_bytes) != 0) {
                fail_msg("run %d (stream %d) differs from run 0", done + i, (done + i) % 2);
            }
            compared++;
        }
        done += batch;
    }
    print_message("  %d runs byte-identical (%zu bytes each), load on a third stream\n", compared, d_bytes);
    free(first);
    CHECK_BC(bc_host_free(env->dev, ring_host));
    for (int i = 0; i < 3; i++)
        bc_stream_destroy(s[i]);
    bc_gemm_plan_destroy(load);
    bc_gemm_plan_destroy(plan);
    for (int i = 0; i < RING; i++)
        bc_mem_free(env->dev, d[i]);
    operand *ops[] = {&a, &b, &c, &bias, &load_a, &load_b};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        bc_mem_free(env->dev, ops[i]->dev);
        free(ops[i]->host);
    }
    bc_mem_free(env->dev, load_d);
}

/* same_bytes_under_load, the plan checked to run `kernel`. */
static void same_bytes_on(gpu_env *env, const char *kernel, int64_t m, int64_t n, int64_t k, const char *config,
                          uint32_t split_k, float beta)
{
    expect_kernel = kernel;
    same_bytes_under_load(env, m, n, k, config, split_k, beta);
    expect_kernel = NULL;
}

static void test_same_bytes_two_streams_under_load(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    /* 16 x 8 tiles, whole (Hopper: pinned; elsewhere the rule's choice) */
    same_bytes_under_load(env, 2000, 2048, 1000, gpu_is_hopper(env) ? "sm90_128x256" : NULL, 0, 0.0f);
    if (gpu_is_hopper(env)) { /* the multicast twins: pairs of CTAs sharing B's loads (rows off the sectors), */
        same_bytes_on(env, "bc_gemm_sm90_128x256m", 2048, 2048, 2040, "sm90_128x256", 0, 0.0f);
        same_bytes_on(env, "bc_gemm_sm90_128x128m", 1100, 1200, 1000, "sm90_128x128", 0, 0.5f);
        /* and the narrow tiles' twin: clusters of four on blocks of 2 x 2 tiles sharing A's and B's loads
         * (rows off the sectors, long K) */
        same_bytes_on(env, "bc_gemm_sm90_128x64m", 505, 1380, 4424, "sm90_128x64", 0, 0.5f);
    }
}

static void test_same_bytes_beta_c_under_load(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    /* the short-K twin on Hopper (256 tiles on two CTAs an SM, K of one k-block), C through its 3-stage ring */
    same_bytes_under_load(env, 1000, 2048, 64, gpu_is_hopper(env) ? "sm90_128x64t" : NULL, 0, 0.5f);
    if (gpu_is_hopper(env)) {
        /* the twin at 4 k-blocks (the rule's plan: rows on the sectors, 512 tiles), its C stage after them */
        same_bytes_under_load(env, 1000, 2048, 256, "sm90_128x64t", 0, 0.5f);
        /* the narrow short-K twin (4 x 64 tiles of one k-block on four CTAs an SM), C through its ring */
        same_bytes_under_load(env, 200, 2048, 64, "sm90_64x32t", 0, 0.5f);
        /* short packed rows of A, copied as they lie (the dense-row kernels), with C */
        same_bytes_under_load(env, 40, 8958, 8, "sm90_64x32t", 0, 0.5f);
        same_bytes_under_load(env, 82, 15662, 24, "sm90_128x64t", 0, 0.5f);
    }
    /* C through the stage ring (rows 2000 B) and, with 1001 columns, the copy-out store path */
    same_bytes_under_load(env, 1000, 1000, 1000, gpu_is_hopper(env) ? "sm90_128x128" : NULL, 0, 0.5f);
    same_bytes_under_load(env, 1000, 1001, 1000, gpu_is_hopper(env) ? "sm90_128x128" : NULL, 0, 0.0f);
}

static void test_same_bytes_skinny_under_load(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    same_bytes_under_load(env, 4, 4096, 4096, "sm90_64x32m16", 0, 0.5f);
    /* its short-K twin: 256 tiles of one k-block on four CTAs an SM, with C */
    same_bytes_under_load(env, 9, 8192, 40, "sm90_64x32m16t", 0, 0.5f);
    /* its split-K twin: one tile of a long K over a cluster of 8, with C */
    same_bytes_under_load(env, 7, 24, 10528, "sm90_64x32m16s", 8, 0.5f);
    /* the narrow split twin: two 64-row tiles of a long K over clusters of 8, with C */
    same_bytes_under_load(env, 100, 24, 8200, "sm90_64x32s", 8, 0.5f);
    /* the dot kernel (the rule's choice there): 7 rows of A over clusters of 4 down K, with C; 8 x 8 over
     * clusters of 8 */
    same_bytes_under_load(env, 7, 1, 11136, "sm90_dot", 0, 0.5f);
    same_bytes_under_load(env, 8, 8, 16384, "sm90_dot", 0, 0.0f);
    /* ... and 2 x 2000 in runs of 16 columns over 125 CTAs, with C */
    same_bytes_under_load(env, 2, 2000, 1000, "sm90_dot", 0, 0.5f);
    /* the GEMV kernel (the rule's choice for each): 16 rows in runs of 16 columns, K over clusters of 2 and
     * of 8, and row groups of 8 for a short K, with C */
    same_bytes_under_load(env, 16, 4096, 4096, "sm90_gemv", 0, 0.5f);
    same_bytes_under_load(env, 437, 9, 14184, "sm90_gemv", 0, 0.5f);
    same_bytes_under_load(env, 16, 128, 16384, "sm90_gemv", 0, 0.5f);
    same_bytes_under_load(env, 15473, 2, 152, "sm90_gemv", 0, 0.5f);
    /* ... and K of one step (K <= 128), the rule's own choice: 3 x 9000, row groups of 8, with C */
    same_bytes_on(env, "bc_gemm_sm90_gemv", 3, 9000, 24, NULL, 0, 0.5f);
    /* its 32-row twin: 17 rows in runs of 16 columns, 20 rows with K over clusters of 4 (named: past the
     * rule's K), and 18 rows in row groups of 8 for K of one step (the rule's own choice), with C */
    same_bytes_under_load(env, 17, 2160, 2808, "sm90_gemv32", 0, 0.5f);
    same_bytes_under_load(env, 20, 300, 16384, "sm90_gemv32", 0, 0.5f);
    same_bytes_on(env, "bc_gemm_sm90_gemv32", 2999, 18, 24, NULL, 0, 0.5f);
}

/* Plans without C, bias or ReLU: the epilogue's plain staging, through the
 * TMA store and the rotated copy-out (D rows of 2048 and 2047 elements;
 * 1001 on the narrow tile; 2047 on 128x128), the dense-row kernel, the
 * 2 x 2 multicast twin, the wide tiles and 128x128's pair twin. */
static void test_same_bytes_plain_under_load(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    plain_epilogue = 1;
    same_bytes_under_load(env, 1000, 2048, 64, "sm90_128x64t", 0, 0.0f);
    same_bytes_under_load(env, 1000, 2047, 64, "sm90_128x64t", 0, 0.0f);
    same_bytes_under_load(env, 40, 8958, 8, "sm90_64x32t", 0, 0.0f);
    same_bytes_under_load(env, 300, 1001, 512, "sm90_64x32", 0, 0.0f);
    same_bytes_on(env, "bc_gemm_sm90_128x64m", 505, 1380, 4424, "sm90_128x64", 0, 0.0f);
    same_bytes_under_load(env, 1000, 2047, 64, "sm90_128x128", 0, 0.0f);
    same_bytes_under_load(env, 1000, 2048, 320, "sm90_128x256", 0, 0.0f);
    same_bytes_under_load(env, 56, 10928, 3088, "sm90_64x256", 0, 0.0f);
    same_bytes_on(env, "bc_gemm_sm90_128x128m", 1100, 1200, 1000, "sm90_128x128", 0, 0.0f);
    plain_epilogue = 0;
}

static void test_same_bytes_split_k_under_load(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip(); /* split-K exists on sm_90a only */
    same_bytes_under_load(env, 200, 1000, 4096, "sm90_128x128s", 4, 0.0f); /* 2 x 8 tiles, K in 4 over clusters */
    /* one tile row of 256 columns: the rule's choice (43 tiles, with C), and its split twin 2 ways (32 tiles) */
    same_bytes_on(env, "bc_gemm_sm90_64x256", 56, 10928, 3088, NULL, 0, 0.5f);
    same_bytes_under_load(env, 22, 8080, 5560, "sm90_64x256s", 2, 0.0f);
}

/* The portable family (the H100 runs it through the sm_90a image): a
 * large-tile and the two small-M configurations (one with K sliced in the
 * CTA), each named. */
static void test_same_bytes_portable_under_load(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    bc_device_info info;
    CHECK_BC(bc_device_query(env->dev, &info));
    if (!gpu_is_hopper(env) && info.cc_major != 8 && info.cc_major != 12)
        skip(); /* the Blackwell images carry no portable kernels */
    same_bytes_under_load(env, 2000, 2048, 1000, "sm80_128x256", 0, 0.0f);
    same_bytes_under_load(env, 16, 4096, 4096, "sm80_64x32", 0, 0.0f);
    same_bytes_under_load(env, 64, 1024, 1024, "sm80_32x32", 0, 0.0f);
}

static int setup(void **state) { return gpu_env_setup(state, 1ull << 30); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_two_streams_under_load),
        cmocka_unit_test(test_same_bytes_split_k_under_load),
        cmocka_unit_test(test_same_bytes_beta_c_under_load),
        cmocka_unit_test(test_same_bytes_skinny_under_load),
        cmocka_unit_test(test_same_bytes_plain_under_load),
        cmocka_unit_test(test_same_bytes_portable_under_load),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_determinism", tests, setup, gpu_env_teardown);
}
