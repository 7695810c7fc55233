/* The Blackwell GEMM's synchronisation, checked on the CPU (sm100_model.h):
 * the kernel's own role functions run under many seeded interleavings, over
 * grids with many tiles, ragged edges, k-block counts below, at and above
 * the stage count, and CTAs with several tiles or none.
 *
 * The same model built with a deliberate bug must fail: a missing release
 * of an accumulator buffer, a missing release of a stage (both mutations of
 * the model's operations) and, in the separately built
 * test_unit_sm100_pipeline_flip_mutant (ring.h compiled with
 * BC__RING_FLIP=0), a ring phase that never flips. Each detection test
 * prints the first failure it caught.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gemm_abi.h"
#include "sm100_model.h"

/* Under ASan (ninja test-asan) a quarter of the seeds: that build checks
 * the model's own memory safety; the plain build covers the interleavings. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SEED_DIV 4u
#endif
#endif
#ifndef SEED_DIV
#define SEED_DIV 1u
#endif

typedef struct shape {
    const char *what;
    uint32_t m, n, k, group_m, ctas, seeds;
} shape;

static const shape shapes[] = {
    {"one tile, one k-block", 1, 1, 1, 8, 1, 1000},
    {"one tile, two CTAs (one idle)", 128, 256, 64, 8, 2, 1000},
    {"3x3 ragged tiles, k-blocks = stages, 2 CTAs", 300, 700, 200, 8, 2, 400},
    {"2x2 tiles ragged by one, 2 k-blocks, 1 CTA", 129, 257, 65, 1, 1, 400},
    {"5x5 tiles, 5 k-blocks, N edge of one column, bands of 2, 3 CTAs", 513, 1025, 320, 2, 3, 200},
    {"16x2 tiles, 1 k-block (ring wraps across tiles), 3 CTAs", 2000, 300, 64, 8, 3, 200},
    {"8x4 tiles, 16 k-blocks, 5 CTAs", 1000, 1000, 1000, 8, 5, 40},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* The model's report, line by line (print_message truncates long strings). */
static void print_report(const char *title, const shape *s, uint64_t seed, const char *msg)
{
    print_message("%s, %s, seed %llu:\n", title, s->what, (unsigned long long)seed);
    for (const char *p = msg; *p;) {
        const char *e = strchr(p, '\n');
        const int n = e ? (int)(e - p) : (int)strlen(p);
        print_message("  %.*s\n", n, p);
        p += n + (e != NULL);
    }
}

static sm100_model_cfg cfg_of(const shape *s, int mutant)
{
    sm100_model_cfg c = {s->m, s->n, s->k, s->group_m, s->ctas, mutant};
    return c;
}

/* Tiles of CTA 0, the one with the most work. */
static uint32_t tiles_of_cta0(const shape *s)
{
    const uint32_t tiles = ((s->m + BC_SM100_BM - 1) / BC_SM100_BM) * ((s->n + BC_SM100_BN - 1) / BC_SM100_BN);
    return (tiles + s->ctas - 1) / s->ctas;
}

#ifndef SM100_PIPELINE_FLIP_MUTANT

static void test_kernel_walks_pass(void **state)
{
    (void)state;
    sm100_model_result r;
    uint64_t steps = 0, runs = 0;
    for (size_t i = 0; i < NSHAPES; i++) {
        const sm100_model_cfg c = cfg_of(&shapes[i], SM100_MUT_NONE);
        for (uint64_t seed = 1; seed <= shapes[i].seeds / SEED_DIV; seed++) {
            sm100_model_run(&c, seed, &r);
            if (r.failed)
                fail_msg("%s, seed %llu:\n%s", shapes[i].what, (unsigned long long)seed, r.msg);
            steps += r.steps, runs++;
        }
    }
    print_message("%llu runs over %zu grids, %llu scheduler steps: no failure\n", (unsigned long long)runs,
                  NSHAPES, (unsigned long long)steps);
}

/* Every seed of every grid must catch the mutant; prints its first catch on
 * the first grid whose CTA 0 has three tiles (past the first lap of the
 * accumulator ring). */
static void expect_every_seed_fails(int mutant, const char *name)
{
    sm100_model_result r;
    int shown = 0;
    for (size_t i = 0; i < NSHAPES; i++) {
        const sm100_model_cfg c = cfg_of(&shapes[i], mutant);
        for (uint64_t seed = 1; seed <= shapes[i].seeds / SEED_DIV; seed++) {
            sm100_model_run(&c, seed, &r);
            if (!r.failed)
                fail_msg("%s passed on %s, seed %llu", name, shapes[i].what, (unsigned long long)seed);
            if (!shown && tiles_of_cta0(&shapes[i]) >= 3) {
                print_report(name, &shapes[i], seed, r.msg);
                shown = 1;
            }
        }
    }
}

static void test_detects_missing_accumulator_release(void **state)
{
    (void)state;
    expect_every_seed_fails(SM100_MUT_DROP_ACC_RELEASE, "mutant 'epilogue warp 5 never arrives on tmem_empty'");
}

static void test_detects_missing_stage_release(void **state)
{
    (void)state;
    expect_every_seed_fails(SM100_MUT_DROP_STAGE_RELEASE, "mutant 'the MMA lane's commits to empty[] are lost'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_walks_pass),
        cmocka_unit_test(test_detects_missing_accumulator_release),
        cmocka_unit_test(test_detects_missing_stage_release),
    };
    return cmocka_run_group_tests_name("sm100_pipeline", tests, NULL, NULL);
}

#else /* SM100_PIPELINE_FLIP_MUTANT: the model's ring.h has BC__RING_FLIP = 0 */

/* Every seed of every grid whose first CTA walks the accumulator ring past
 * its first lap (3 tiles or more) must catch the broken flip; the smaller
 * grids must catch it on some seed. */
static void test_detects_broken_phase_flip(void **state)
{
    (void)state;
    sm100_model_result r;
    int shown = 0;
    for (size_t i = 0; i < NSHAPES; i++) {
        const sm100_model_cfg c = cfg_of(&shapes[i], SM100_MUT_NONE);
        uint64_t caught = 0;
        for (uint64_t seed = 1; seed <= shapes[i].seeds / SEED_DIV; seed++) {
            sm100_model_run(&c, seed, &r);
            caught += r.failed != 0;
            if (r.failed && !shown && tiles_of_cta0(&shapes[i]) >= 3) {
                print_report("mutant 'ring phase never flips'", &shapes[i], seed, r.msg);
                shown = 1;
            }
        }
        print_message("%s: caught on %llu of %u seeds\n", shapes[i].what, (unsigned long long)caught,
                      shapes[i].seeds / SEED_DIV);
        if (tiles_of_cta0(&shapes[i]) >= 3)
            assert_int_equal(caught, shapes[i].seeds / SEED_DIV);
        else
            assert_true(caught > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detects_broken_phase_flip),
    };
    return cmocka_run_group_tests_name("sm100_pipeline_flip_mutant", tests, NULL, NULL);
}

#endif
