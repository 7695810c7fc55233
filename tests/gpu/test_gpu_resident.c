/* The resident executor on the GPU: results against the fp64 CPU reference
 * (a 3-layer MLP with bias and ReLU; ragged chains on the other resident
 * configurations, with the TMA-store and the thread-store epilogues, C and
 * f32 output; a plan whose B is the previous plan's output), byte-identity
 * with the same plans launched normally (a transposed N = 1 head among
 * them) over
 * 10,000 steps (BC_TEST_QUICK=1: 200), a plan launched on a dense-row
 * kernel, the zero-copy mode (the kernel copies
 * the input from and the output to pinned host memory), and, informative,
 * whether TMA reads an A operand in mapped host memory. Without a GPU every
 * test reports SKIPPED. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "gpu_ref_check.h"
#include "mlp.h"
#include "resident_link.h"

#define SEC 1000000000ull

static const int64_t mlp_width[4] = {256, 1024, 1024, 64};
static bc_stream *side; /* a second stream of the shared device */

static int quick(void)
{
    const char *q = getenv("BC_TEST_QUICK");
    return q && q[0] == '1';
}

static bc_resident *start(gpu_env *env, bc_gemm_plan *const *plans, int n, const bc_resident_config *cfg)
{
    bc_resident *res = NULL;
    CHECK_BC(bc_resident_create(env->dev, (const bc_gemm_plan *const *)plans, n, cfg, &res));
    CHECK_BC(bc_resident_start(res, env->s));
    bc_resident_info in;
    CHECK_BC(bc_resident_query(res, &in));
    print_message("  executor: %s, %u plans, %u operations, %u barriers, %u SMs held\n", in.config, in.plans,
                  in.operations, in.barriers, in.sm_count);
    return res;
}

/* NaN (0xFFFF) in every activation the executor writes. */
static void poison(gpu_env *env, const bc_mlp *m)
{
    for (int l = 1; l <= m->layers; l++)
        CHECK_BC(bc_memset_d8_async(side, m->act[l], 0xFF, (size_t)(m->batch * m->width[l]) * 2));
    CHECK_BC(bc_stream_wait(side, 5 * SEC));
}

static void mlp_or_fail(gpu_env *env, bc_mlp *m, const char *config, bc_rng *rng)
{
    CHECK_BC(bc_mlp_create(env->dev, 16, mlp_width, 3, config, 0, 1, rng, m));
}

static void expect_correct(gpu_env *env, const bc_mlp *m, const void *host_out, const char *what)
{
    size_t bad = 0, checked = 0;
    CHECK_BC(bc_mlp_check(env->dev, m, host_out, &bad, &checked));
    if (bad)
        fail_msg("%s: %zu of %zu elements out of tolerance", what, bad, checked);
    assert_true(checked > 0);
}

static void test_mlp_against_reference(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    bc_rng rng = {bc_ref_seed()};
    print_message("  seed 0x%llx\n", (unsigned long long)rng.s);
    /* pinned whole tiles, then the rule's plans (the skinny tiles, split-K for the last layer), then GEMV plans */
    static const char *const configs[3] = {"sm90_64x32", NULL, "sm90_gemv"};
    for (int c = 0; c < 3; c++) {
        bc_mlp m;
        mlp_or_fail(env, &m, configs[c], &rng);
        bc_resident *res = start(env, m.plan, 3, NULL);
        for (int step = 0; step < 5; step++) {
            CHECK_BC(bc_mlp_new_input(env->dev, &m, &rng, NULL));
            poison(env, &m);
            CHECK_BC(bc_resident_step(res, 5 * SEC));
            expect_correct(env, &m, NULL, "resident MLP");
        }
        CHECK_BC(bc_resident_stop(res, SEC));
        bc_resident_destroy(res);
        bc_mlp_destroy(env->dev, &m);
    }
}

/* Ragged chains on 128x64 (TMA-store layer, then beta*C through the thread
 * epilogue into f32) and 128x128 (two independent plans in one phase; then
 * two that launch as its multicast twin, rows off the sectors on enough
 * tile-row pairs, which the resident kernel runs with whole B boxes), and
 * two 128x64 plans that launch as its twin on blocks of 2 x 2 tiles (the
 * resident kernel reads whole A and B boxes): right against the reference
 * and byte-identical to the launched plans. */
static void test_configs_and_epilogues(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    bc_rng rng = {bc_ref_seed()};
    link k[8];
    memset(k, 0, sizeof k);
    const int64_t shape[8][3] = {{50, 200, 72},    {50, 96, 200},      {300, 260, 136}, {129, 72, 136},
                                 {1100, 1200, 1000}, {600, 2000, 1032}, {300, 200, 1912}, {531, 976, 4552}};
    for (int i = 0; i < 8; i++) /* the second reads the first's D */
        make_link(env, &k[i], shape[i], i < 2 || i >= 6 ? "sm90_128x64" : "sm90_128x128", 0, i == 1 ? &k[0] : NULL,
                  &rng);
    for (int i = 2; i < 8; i++) { /* 128x128's pair twin, then 128x64's twin on blocks of 2 x 2 tiles */
        bc_gemm_plan_info in;
        CHECK_BC(bc_gemm_plan_query(k[i].plan, &in));
        assert_int_equal(in.multicast, i >= 6 ? 3 : i >= 4);
    }
    void *launched[8], *resident[8];
    for (int pair = 0; pair < 4; pair++) {
        link *c = &k[2 * pair];
        for (int i = 0; i < 2; i++) /* the launched plans first: their bytes (the second may read the first's D) */
            CHECK_BC(bc_gemm_launch(c[i].plan, env->s));
        CHECK_BC(bc_stream_wait(env->s, 5 * SEC));
        for (int i = 0; i < 2; i++) { /* then every output poisoned */
            const size_t bytes = (size_t)(c[i].d.m * c[i].d.n) * bc_dtype_bytes(c[i].d.d_type);
            launched[2 * pair + i] = malloc(bytes), resident[2 * pair + i] = malloc(bytes);
            CHECK_BC(bc_memcpy_dtoh(env->dev, launched[2 * pair + i], c[i].d.d, bytes));
        }
        for (int i = 0; i < 2; i++)
            CHECK_BC(bc_memset_d8_async(env->s, c[i].d.d, 0xFF,
                                        (size_t)(c[i].d.m * c[i].d.n) * bc_dtype_bytes(c[i].d.d_type)));
        CHECK_BC(bc_stream_wait(env->s, 5 * SEC));
        bc_gemm_plan *const plans[2] = {c[0].plan, c[1].plan};
        bc_resident *res = start(env, plans, 2, NULL);
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        CHECK_BC(bc_resident_stop(res, SEC));
        bc_resident_destroy(res);
        for (int i = 0; i < 2; i++) {
            check_link(env, &c[i], pair == 0 && i == 1);
            const size_t bytes = (size_t)(c[i].d.m * c[i].d.n) * bc_dtype_bytes(c[i].d.d_type);
            CHECK_BC(bc_memcpy_dtoh(env->dev, resident[2 * pair + i], c[i].d.d, bytes));
            assert_memory_equal(resident[2 * pair + i], launched[2 * pair + i], bytes);
        }
    }
    for (int i = 0; i < 8; i++) {
        free(k[i].ha), free(k[i].hb), free(k[i].hc), free(k[i].hbias), free(launched[i]), free(resident[i]);
        bc_gemm_plan_destroy(k[i].plan);
    }
}

/* A plan whose B is the previous plan's D (so its B may not be loaded before
 * the barrier), 64x32 tiles: right against the reference, launched bytes. */
static void test_b_from_previous_plan(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    bc_rng rng = {bc_ref_seed()};
    link k[2];
    links_default(k, 2);
    k[0].d.m = 64, k[0].d.n = 128, k[0].d.k = 64, k[0].d.config = "sm90_64x32";
    k[0].ha = gpu_upload(env, 64 * 64, BC_DTYPE_BF16, &rng, &k[0].d.a);
    k[0].hb = gpu_upload(env, 128 * 64, BC_DTYPE_BF16, &rng, &k[0].d.b);
    CHECK_BC(bc_mem_alloc(env->dev, 64 * 128 * 2, &k[0].d.d));
    k[1].d.m = 40, k[1].d.n = 64, k[1].d.k = 128, k[1].d.config = "sm90_64x32";
    k[1].ha = gpu_upload(env, 40 * 128, BC_DTYPE_BF16, &rng, &k[1].d.a);
    k[1].d.b = k[0].d.d, k[1].hb = malloc(64 * 128 * 2); /* D0 read as 64 rows of 128 */
    CHECK_BC(bc_mem_alloc(env->dev, 40 * 64 * 2, &k[1].d.d));
    bc_gemm_plan *plans[2];
    plan_links(env, k, plans, 2);
    void *want = malloc(40 * 64 * 2), *got = malloc(40 * 64 * 2);
    for (int i = 0; i < 2; i++)
        CHECK_BC(bc_gemm_launch(plans[i], env->s));
    CHECK_BC(bc_stream_wait(env->s, 5 * SEC));
    CHECK_BC(bc_memcpy_dtoh(env->dev, want, k[1].d.d, 40 * 64 * 2));
    CHECK_BC(bc_memset_d8_async(env->s, k[0].d.d, 0xFF, 64 * 128 * 2));
    CHECK_BC(bc_memset_d8_async(env->s, k[1].d.d, 0xFF, 40 * 64 * 2));
    CHECK_BC(bc_stream_wait(env->s, 5 * SEC));
    bc_resident *res = start(env, plans, 2, NULL);
    for (int step = 0; step < 100; step++) {
        /* both Ds poisoned before every step: a step that read B before the barrier, or wrote nothing,
         * would not find last step's bytes waiting */
        CHECK_BC(bc_memset_d8_async(side, k[0].d.d, 0xFF, 64 * 128 * 2));
        CHECK_BC(bc_memset_d8_async(side, k[1].d.d, 0xFF, 40 * 64 * 2));
        CHECK_BC(bc_stream_wait(side, 5 * SEC));
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        CHECK_BC(bc_memcpy_dtoh(env->dev, got, k[1].d.d, 40 * 64 * 2));
        if (memcmp(got, want, 40 * 64 * 2) != 0)
            fail_msg("step %d differs from the launched plans", step);
    }
    CHECK_BC(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    check_link(env, &k[0], 0);
    CHECK_BC(bc_memcpy_dtoh(env->dev, k[1].hb, k[0].d.d, 64 * 128 * 2));
    check_link(env, &k[1], 0);
    free(want), free(got);
    for (int i = 0; i < 2; i++) {
        free(k[i].ha), free(k[i].hb);
        bc_gemm_plan_destroy(k[i].plan);
    }
}

/* An N = 1 head that the plan runs transposed (its kernel reads the caller's
 * A, the previous layer's output, as its B) after a skinny layer: the head
 * must not load that operand before the barrier. The first layer's output
 * is poisoned before every step, so a head that read it early would write
 * NaN: 100 steps byte-identical to the launched plans, right against the
 * reference. */
static void test_transposed_head(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    bc_rng rng = {bc_ref_seed()};
    link k[2];
    links_default(k, 2);
    k[0].d.m = 16, k[0].d.n = 64, k[0].d.k = 256, k[0].d.config = "sm90_64x32m16"; /* a skinny layer */
    k[0].ha = gpu_upload(env, 16 * 256, BC_DTYPE_BF16, &rng, &k[0].d.a);
    k[0].hb = gpu_upload(env, 64 * 256, BC_DTYPE_BF16, &rng, &k[0].d.b);
    CHECK_BC(bc_mem_alloc(env->dev, 16 * 64 * 2, &k[0].d.d));
    k[1].d.m = 16, k[1].d.n = 1, k[1].d.k = 64; /* the head: one column of D */
    k[1].d.a = k[0].d.d, k[1].ha = malloc(16 * 64 * 2);
    k[1].hb = gpu_upload(env, 64, BC_DTYPE_BF16, &rng, &k[1].d.b);
    CHECK_BC(bc_mem_alloc(env->dev, 16 * 2, &k[1].d.d));
    bc_gemm_plan *plans[2];
    plan_links(env, k, plans, 2);
    bc_gemm_plan_info pi;
    CHECK_BC(bc_gemm_plan_query(plans[1], &pi));
    assert_int_equal(pi.swapped, 1);
    size_t bytes[2] = {16 * 64 * 2, 16 * 2};
    void *want[2], *got[2];
    for (int i = 0; i < 2; i++)
        CHECK_BC(bc_gemm_launch(plans[i], env->s));
    CHECK_BC(bc_stream_wait(env->s, 5 * SEC));
    for (int i = 0; i < 2; i++) {
        want[i] = malloc(bytes[i]), got[i] = malloc(bytes[i]);
        CHECK_BC(bc_memcpy_dtoh(env->dev, want[i], k[i].d.d, bytes[i]));
    }
    bc_resident *res = start(env, plans, 2, NULL);
    for (int step = 0; step < 100; step++) {
        for (int i = 0; i < 2; i++)
            CHECK_BC(bc_memset_d8_async(side, k[i].d.d, 0xFF, bytes[i]));
        CHECK_BC(bc_stream_wait(side, 5 * SEC));
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        for (int i = 0; i < 2; i++) {
            CHECK_BC(bc_memcpy_dtoh(env->dev, got[i], k[i].d.d, bytes[i]));
            if (memcmp(got[i], want[i], bytes[i]) != 0)
                fail_msg("step %d: plan %d differs from the launched plan", step, i);
        }
    }
    CHECK_BC(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    check_link(env, &k[0], 0);
    check_link(env, &k[1], 1);
    print_message("  100 steps of a transposed N = 1 head after a skinny layer: launched bytes\n");
    for (int i = 0; i < 2; i++) {
        free(k[i].ha), free(k[i].hb), free(want[i]), free(got[i]);
        bc_gemm_plan_destroy(k[i].plan);
    }
}

#define SETS 8

/* Launches the MLP's plans in order on `s` and keeps every activation's bytes. */
static void launched_outputs(gpu_env *env, bc_stream *s, const bc_mlp *m, void **out)
{
    for (int l = 0; l < m->layers; l++)
        CHECK_BC(bc_gemm_launch(m->plan[l], s));
    CHECK_BC(bc_stream_wait(s, 5 * SEC));
    for (int l = 1; l <= m->layers; l++)
        CHECK_BC(bc_memcpy_dtoh(env->dev, out[l], m->act[l], (size_t)(m->batch * m->width[l]) * 2));
}

/* 10,000 resident steps over 8 input sets: the output of every step and the
 * hidden layers of every 100th are the bytes the launched plans wrote. */
static void identical_steps(gpu_env *env, const char *config)
{
    const int steps = quick() ? 200 : 10000;
    bc_rng rng = {bc_ref_seed()};
    bc_mlp m;
    mlp_or_fail(env, &m, config, &rng);
    for (int l = 0; l < 3; l++) {
        bc_gemm_plan_info pi;
        CHECK_BC(bc_gemm_plan_query(m.plan[l], &pi));
        print_message("  layer %d: %s split %u\n", l, pi.config, pi.split_k);
    }
    void *in[SETS], *want[SETS][4], *got[4];
    for (int l = 1; l <= 3; l++)
        got[l] = malloc((size_t)(16 * mlp_width[l]) * 2);
    for (int s = 0; s < SETS; s++) {
        in[s] = malloc((size_t)(16 * mlp_width[0]) * 2);
        for (int l = 1; l <= 3; l++)
            want[s][l] = malloc((size_t)(16 * mlp_width[l]) * 2);
        CHECK_BC(bc_mlp_new_input(env->dev, &m, &rng, in[s]));
        launched_outputs(env, env->s, &m, want[s]);
    }
    expect_correct(env, &m, NULL, "launched MLP"); /* the last set, as launched */
    bc_resident *res = start(env, m.plan, 3, NULL);
    for (int i = 0; i < steps; i++) {
        const int s = i % SETS;
        CHECK_BC(bc_memcpy_htod(env->dev, m.act[0], in[s], (size_t)(16 * mlp_width[0]) * 2));
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        for (int l = i % 100 == 0 ? 1 : 3; l <= 3; l++) {
            const size_t bytes = (size_t)(16 * mlp_width[l]) * 2;
            CHECK_BC(bc_memcpy_dtoh(env->dev, got[l], m.act[l], bytes));
            if (memcmp(got[l], want[s][l], bytes) != 0)
                fail_msg("step %d (input set %d): layer %d's output differs from the launched plans'", i, s, l);
        }
    }
    print_message("  %d steps: every output byte-identical to the launched plans\n", steps);
    CHECK_BC(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    for (int s = 0; s < SETS; s++) {
        free(in[s]);
        for (int l = 1; l <= 3; l++)
            free(want[s][l]);
    }
    for (int l = 1; l <= 3; l++)
        free(got[l]);
    bc_mlp_destroy(env->dev, &m);
}

/* Pinned whole tiles, then the rule's plans: split-K plans whose partials
 * meet in global memory must give the cluster exchange's bytes; then the
 * short-K twin pinned, which runs in 128x64's resident kernel (its ring,
 * not the launched kernel's two stages); then the short-K twins of the
 * skinny and narrow tiles, and GEMV plans (eight warps an item, the
 * launch's sums). */
static void test_byte_identical_to_launched(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    identical_steps(env, "sm90_64x32");
    identical_steps(env, NULL);
    identical_steps(env, "sm90_128x64t");
    identical_steps(env, "sm90_64x32m16t");
    identical_steps(env, "sm90_64x32t");
    identical_steps(env, "sm90_gemv");
}

/* Split-K plans with ragged M, N and K, a split that does not divide the
 * k-blocks evenly (4 ways of 15), one of 2 k-blocks 2 ways, a whole-tile plan in the same
 * phase, bias + ReLU, beta * C into f32, and fewer CTAs than work items
 * (each CTA walks several, the ring carried across them): right against
 * the reference and byte-identical to the launched plans, 50 steps. On
 * the skinny kernel (M <= 16) and on the narrow one (64x32 and its split
 * twin, M up to 64 a tile). */
static void split_chains(gpu_env *env, const char *whole, const char *split_cfg, int64_t m0)
{
    bc_rng rng = {bc_ref_seed()};
    enum { LINKS = 3 };
    link k[LINKS];
    memset(k, 0, sizeof k);
    const int64_t shape[LINKS][3] = {{m0 - 3, 104, 904}, {m0 - 3, 72, 104}, {m0, 64, 520}};
    const uint32_t split[LINKS] = {4, 2, 1};
    for (int i = 0; i < LINKS; i++) {
        make_link(env, &k[i], shape[i], split[i] > 1 ? split_cfg : whole, split[i], i == 1 ? &k[0] : NULL, &rng);
        bc_gemm_plan_info pi;
        CHECK_BC(bc_gemm_plan_query(k[i].plan, &pi));
        assert_int_equal(pi.split_k, split[i]);
    }
    size_t bytes[LINKS];
    void *want[LINKS], *got[LINKS];
    for (int i = 0; i < LINKS; i++)
        CHECK_BC(bc_gemm_launch(k[i].plan, env->s));
    CHECK_BC(bc_stream_wait(env->s, 5 * SEC));
    for (int i = 0; i < LINKS; i++) {
        bytes[i] = (size_t)(k[i].d.m * k[i].d.n) * bc_dtype_bytes(k[i].d.d_type);
        want[i] = malloc(bytes[i]), got[i] = malloc(bytes[i]);
        CHECK_BC(bc_memcpy_dtoh(env->dev, want[i], k[i].d.d, bytes[i]));
    }
    bc_resident_config cfg;
    bc_resident_config_default(&cfg);
    cfg.sm_count = 5; /* 4 tiles x 4 items, then 3 x 2 + 2: several a CTA */
    bc_gemm_plan *plans[LINKS] = {k[0].plan, k[1].plan, k[2].plan};
    bc_resident *res = start(env, plans, LINKS, &cfg);
    for (int step = 0; step < 50; step++) {
        for (int i = 0; i < LINKS; i++)
            CHECK_BC(bc_memset_d8_async(side, k[i].d.d, 0xFF, bytes[i]));
        CHECK_BC(bc_stream_wait(side, 5 * SEC));
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        for (int i = 0; i < LINKS; i++) {
            CHECK_BC(bc_memcpy_dtoh(env->dev, got[i], k[i].d.d, bytes[i]));
            if (memcmp(got[i], want[i], bytes[i]) != 0)
                fail_msg("step %d: plan %d (split %u) differs from the launched plan", step, i, split[i]);
        }
    }
    CHECK_BC(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    for (int i = 0; i < LINKS; i++)
        check_link(env, &k[i], i == 1);
    print_message("  50 steps of %s plans (4 and 2 ways) beside a whole-tile one, 5 CTAs: launched bytes\n",
                  split_cfg);
    for (int i = 0; i < LINKS; i++) {
        free(k[i].ha), free(k[i].hb), free(k[i].hc), free(k[i].hbias), free(want[i]), free(got[i]);
        bc_gemm_plan_destroy(k[i].plan);
    }
}

static void test_split_chains(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    split_chains(env, "sm90_64x32m16", "sm90_64x32m16s", 16);
    split_chains(env, "sm90_64x32", "sm90_64x32s", 64);
}

/* k's plan (bf16 D, no C) launched, then run resident on sm_count CTAs (0:
 * the default) for `steps` steps, D poisoned on the side stream before
 * each: every step's D byte-identical to the launch's, and right against
 * the reference. Frees the link. */
static void steps_match_launch(gpu_env *env, link *k, uint32_t sm_count, int steps)
{
    const size_t bytes = (size_t)(k->d.m * k->d.n) * 2;
    void *want = malloc(bytes), *got = malloc(bytes);
    CHECK_BC(bc_gemm_launch(k->plan, env->s));
    CHECK_BC(bc_stream_wait(env->s, 5 * SEC));
    CHECK_BC(bc_memcpy_dtoh(env->dev, want, k->d.d, bytes));
    bc_resident_config cfg;
    bc_resident_config_default(&cfg);
    if (sm_count)
        cfg.sm_count = sm_count;
    bc_resident *res = start(env, &k->plan, 1, &cfg);
    for (int i = 0; i < steps; i++) {
        CHECK_BC(bc_memset_d8_async(side, k->d.d, 0xFF, bytes));
        CHECK_BC(bc_stream_wait(side, 5 * SEC));
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        CHECK_BC(bc_memcpy_dtoh(env->dev, got, k->d.d, bytes));
        if (memcmp(got, want, bytes) != 0)
            fail_msg("step %d differs from the launched plan", i);
    }
    CHECK_BC(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    check_link(env, k, 0);
    free(want), free(got), free(k->ha), free(k->hb);
    bc_gemm_plan_destroy(k->plan);
}

/* One 128x2048x2048 plan (sm90_64x32: 128 tiles, 128 CTAs): 1000 steps
 * (quick: 50), each output byte-identical to the launched plan's. */
static void test_big_step_identical(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    const int steps = quick() ? 50 : 1000;
    bc_rng rng = {bc_ref_seed()};
    link k;
    memset(&k, 0, sizeof k);
    bc_gemm_desc_default(&k.d);
    k.d.m = 128, k.d.n = 2048, k.d.k = 2048, k.d.config = "sm90_64x32";
    upload_link(env, &k, &rng);
    CHECK_BC(bc_gemm_plan_create(env->dev, &k.d, &k.plan));
    steps_match_launch(env, &k, 0, steps);
    print_message("  %d steps of 128x2048x2048: byte-identical to the launched plan\n", steps);
}

/* A resident plan that launches on a short-K twin's dense-row kernel
 * (3968x8441x16: 4092 tiles of 128x64t, A's rows of 32 bytes, D's off 16
 * bytes, no C, bias or ReLU): launched without `resident` the rule moves
 * it to 128x128 (D copied out on a large grid); a resident plan keeps
 * 128x64t so that a network of such plans shares one resident kernel. The
 * executor's 128x64 kernel loads A by its tensor map instead, and must
 * write the launch's bytes; right against the reference. */
static void test_dense_rows_resident(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    bc_rng rng = {bc_ref_seed()};
    link k;
    memset(&k, 0, sizeof k);
    bc_gemm_desc_default(&k.d);
    k.d.m = 3968, k.d.n = 8441, k.d.k = 16;
    upload_link(env, &k, &rng);
    bc_gemm_plan_info pi;
    CHECK_BC(bc_gemm_plan_create(env->dev, &k.d, &k.plan)); /* launched: the rule's alternative */
    CHECK_BC(bc_gemm_plan_query(k.plan, &pi));
    assert_string_equal(pi.config, "sm90_128x128");
    bc_gemm_plan_destroy(k.plan);
    k.d.resident = 1;
    CHECK_BC(bc_gemm_plan_create(env->dev, &k.d, &k.plan));
    CHECK_BC(bc_gemm_plan_query(k.plan, &pi));
    assert_string_equal(pi.config, "sm90_128x64t");
    assert_int_equal(pi.dense_a, 1);
    /* 128 CTAs leave SMs for the poisoning memset on the side stream (4092 items: 32 a CTA) */
    steps_match_launch(env, &k, 128, 3);
    print_message("  3 steps of a dense-row 128x64t plan (%u tiles): the launch's bytes, right\n", pi.tiles);
}

/* The kernel copies the input from pinned memory and the output back: the
 * host reads the result in place, the bytes the launched plans write from
 * the same input. The launched plans run after the executor stops (every
 * step's input and output kept until then), so that the test also runs
 * under compute-sanitizer, which runs one kernel at a time: a launch beside
 * the running executor would wait for it for ever there. */
static void test_zero_copy(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    bc_rng rng = {bc_ref_seed()};
    bc_mlp m;
    mlp_or_fail(env, &m, "sm90_64x32", &rng);
    const size_t in_bytes = (size_t)(16 * mlp_width[0]) * 2, out_bytes = (size_t)(16 * mlp_width[3]) * 2;
    const int steps = quick() ? 20 : 200;
    void *hin = NULL, *hout = NULL, *want[4];
    uint8_t *saved_in = malloc(in_bytes * (size_t)steps), *saved_out = malloc(out_bytes * (size_t)steps);
    assert_non_null(saved_in), assert_non_null(saved_out);
    CHECK_BC(bc_host_alloc(env->dev, in_bytes, &hin));
    CHECK_BC(bc_host_alloc(env->dev, out_bytes, &hout));
    for (int l = 1; l <= 3; l++)
        want[l] = malloc((size_t)(16 * mlp_width[l]) * 2);
    bc_resident_copy cin = {hin, m.act[0], in_bytes}, cout = {hout, m.act[3], out_bytes};
    bc_resident_config cfg;
    bc_resident_config_default(&cfg);
    cfg.inputs = &cin, cfg.input_count = 1, cfg.outputs = &cout, cfg.output_count = 1;
    bc_resident *res = start(env, m.plan, 3, &cfg);
    for (int i = 0; i < steps; i++) {
        uint8_t *in_i = saved_in + in_bytes * (size_t)i;
        CHECK_BC(bc_mlp_new_input(env->dev, &m, &rng, in_i)); /* also into act[0], overwritten by the step */
        memcpy(hin, in_i, in_bytes);
        memset(hout, 0xFF, out_bytes);
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        if (i % 10 == 0)
            expect_correct(env, &m, hout, "zero-copy MLP");
        memcpy(saved_out + out_bytes * (size_t)i, hout, out_bytes);
    }
    CHECK_BC(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    /* the launched plans, from each step's input */
    for (int i = 0; i < steps; i++) {
        CHECK_BC(bc_memcpy_htod(env->dev, m.act[0], saved_in + in_bytes * (size_t)i, in_bytes));
        launched_outputs(env, side, &m, want);
        if (memcmp(saved_out + out_bytes * (size_t)i, want[3], out_bytes) != 0)
            fail_msg("step %d: the output in pinned memory differs from the launched plans'", i);
    }
    print_message("  %d zero-copy steps: outputs byte-identical to the launched plans\n", steps);
    for (int l = 1; l <= 3; l++)
        free(want[l]);
    free(saved_in);
    free(saved_out);
    bc_host_free(env->dev, hin);
    bc_host_free(env->dev, hout);
    bc_mlp_destroy(env->dev, &m);
}

/* Informative: does TMA read an A operand in mapped pinned host memory? On
 * its own device (a fault must not poison the others). Either the results
 * are right, or a status says why not: never silently wrong numbers. */
static void test_host_mapped_a(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.device_arena_bytes = 16u << 20;
    cfg.host_arena_bytes = 1u << 20;
    cfg.kernel_groups = BC_KERNELS_RESIDENT;
    gpu_env own = {NULL, NULL, BC_OK};
    CHECK_BC(bc_device_open(&cfg, &own.dev));
    CHECK_BC(bc_stream_create(own.dev, 0, &own.s, NULL));
    bc_rng rng = {bc_ref_seed()};
    link k;
    memset(&k, 0, sizeof k);
    bc_gemm_desc_default(&k.d);
    k.d.m = 16, k.d.n = 256, k.d.k = 256, k.d.config = "sm90_64x32";
    void *ha = NULL;
    CHECK_BC(bc_host_alloc(own.dev, 16 * 256 * 2, &ha));
    k.ha = malloc(16 * 256 * 2);
    bc_ref_fill_normal(k.ha, BC_DTYPE_BF16, 16 * 256, 1.0, &rng);
    memcpy(ha, k.ha, 16 * 256 * 2);
    k.d.a = (bc_devptr)(uintptr_t)ha; /* unified addressing: the mapped address is the host address */
    k.hb = gpu_upload(&own, 256 * 256, BC_DTYPE_BF16, &rng, &k.d.b);
    CHECK_BC(bc_mem_alloc(own.dev, 16 * 256 * 2, &k.d.d));
    bc_status st = bc_gemm_plan_create(own.dev, &k.d, &k.plan);
    const char *what = "plan";
    if (!st) {
        what = "launch";
        st = bc_gemm_launch(k.plan, own.s);
        if (!st)
            st = bc_stream_wait(own.s, 5 * SEC);
    }
    if (!st) {
        what = "resident step";
        bc_resident *res = NULL;
        st = bc_resident_create(own.dev, (const bc_gemm_plan *const *)&k.plan, 1, NULL, &res);
        if (!st)
            st = bc_resident_start(res, own.s);
        if (!st)
            st = bc_resident_step(res, 5 * SEC);
        if (!st)
            st = bc_resident_stop(res, SEC);
    }
    if (st) {
        bc_error_detail d;
        bc_last_error(&d);
        print_message("  INFORMATIVE: TMA with A in mapped host memory: the %s failed: %s (%s)\n", what,
                      bc_status_string(st), d.message);
    } else {
        check_link(&own, &k, 0); /* ran: then it must be right */
        print_message("  INFORMATIVE: TMA with A in mapped host memory: launched and resident results are right\n");
    }
    free(k.ha), free(k.hb);
    bc_device_close(own.dev);
}

static int setup(void **state)
{
    gpu_env_setup(state, 512u << 20);
    gpu_env *env = *state;
    if (env->open_status == BC_OK && bc_stream_create(env->dev, 0, &side, NULL) != BC_OK)
        env->open_status = BC_ERR_DRIVER;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_against_reference),
        cmocka_unit_test(test_configs_and_epilogues),
        cmocka_unit_test(test_b_from_previous_plan),
        cmocka_unit_test(test_transposed_head),
        cmocka_unit_test(test_split_chains),
        cmocka_unit_test(test_byte_identical_to_launched),
        cmocka_unit_test(test_big_step_identical),
        cmocka_unit_test(test_dense_rows_resident),
        cmocka_unit_test(test_zero_copy),
        cmocka_unit_test(test_host_mapped_a),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_resident", tests, setup, gpu_env_teardown);
}
