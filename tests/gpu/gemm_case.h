/* Shared by the GEMM GPU tests: one case (shape, types, epilogue, layout,
 * configuration), its buffers filled with fresh N(0,1) data, the poisoned
 * launch and the check against the fp64 reference (tools/common/ref.h; the
 * bounds are in test_gpu_gemm.c's header comment). Each test binary has its
 * own `rng` and `quick` (BC_TEST_QUICK=1: shapes up to 2^27 multiply-adds). */
#ifndef BC_TESTS_GPU_GEMM_CASE_H
#define BC_TESTS_GPU_GEMM_CASE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "ref.h"

#define ARENA (3ull << 30)
#define FULL_CHECK_MACS (1ull << 28) /* above this, check a sample of rows */
#define SAMPLE_ROWS 48                /* at least this many rows in a sample */
#define SAMPLE_ROW_BAND 32            /* ... and one row in every band of this many */
#define SAMPLE_ROWS_MAX 256

typedef struct gcase {
    int64_t m, n, k;
    bc_dtype ab, dt;
    float alpha, beta;
    int bias, relu;
    int64_t pad; /* extra elements per row on every leading dimension */
    uint64_t a_offset; /* bytes added to A's address (alignment probe) */
    const char *config; /* NULL: the rule's choice */
    uint32_t split_k;   /* bc_gemm_desc.split_k */
    int64_t cd_pad;     /* extra elements per row of C and D only (odd: D rows not 16-B multiples) */
    int64_t c_pad;      /* extra elements per row of C only */
} gcase;

/* bc_gemm_desc.stream_k of the plans make_buffers describes (0 unless a
 * test sets it around its cases) */
static uint32_t case_stream_k;
/* ... and bc_gemm_desc.resident */
static uint32_t case_resident;

typedef struct gbufs {
    bc_gemm_desc d;
    void *ha, *hb, *hc, *hbias, *hd;
    bc_devptr a, b, c, bias, dd;
    bc_devptr a_block; /* allocation that holds A (a may be offset into it) */
    const void *pad_want; /* what D's padding columns hold before the run: NULL, 0xFF poison */
} gbufs;

static bc_rng rng;
static int quick;

static int too_big_for_quick(int64_t m, int64_t n, int64_t k)
{
    return quick && (uint64_t)m * (uint64_t)n * (uint64_t)k > (1ull << 27);
}

static size_t bytes_of(int64_t rows, int64_t ld, bc_dtype t) { return (size_t)(rows * ld) * bc_dtype_bytes(t); }

/* Allocates and fills A, B, C, bias with fresh N(0,1) data; D is poisoned. */
static void make_buffers(gpu_env *env, const gcase *gc, gbufs *g)
{
    memset(g, 0, sizeof *g);
    bc_gemm_desc *d = &g->d;
    bc_gemm_desc_default(d);
    d->m = gc->m, d->n = gc->n, d->k = gc->k;
    d->ab_type = gc->ab, d->d_type = gc->dt;
    d->alpha = gc->alpha, d->beta = gc->beta, d->relu = gc->relu;
    d->lda = gc->k + gc->pad, d->ldb = gc->k + gc->pad;
    d->ldc = gc->n + gc->pad + gc->cd_pad + gc->c_pad, d->ldd = gc->n + gc->pad + gc->cd_pad;
    d->config = gc->config, d->split_k = gc->split_k, d->stream_k = case_stream_k;
    d->resident = case_resident;
    size_t sa = bytes_of(d->m, d->lda, d->ab_type), sb = bytes_of(d->n, d->ldb, d->ab_type);
    size_t sc = bytes_of(d->m, d->ldc, d->d_type), sd = bytes_of(d->m, d->ldd, d->d_type);
    size_t sbias = (size_t)d->n * bc_dtype_bytes(d->d_type);
    g->ha = malloc(sa), g->hb = malloc(sb), g->hc = malloc(sc), g->hd = malloc(sd), g->hbias = malloc(sbias);
    assert_non_null(g->ha), assert_non_null(g->hb), assert_non_null(g->hc), assert_non_null(g->hd);
    bc_ref_fill_normal(g->ha, d->ab_type, sa / bc_dtype_bytes(d->ab_type), 1.0, &rng);
    bc_ref_fill_normal(g->hb, d->ab_type, sb / bc_dtype_bytes(d->ab_type), 1.0, &rng);
    bc_ref_fill_normal(g->hc, d->d_type, sc / bc_dtype_bytes(d->d_type), 1.0, &rng);
    bc_ref_fill_normal(g->hbias, d->d_type, (size_t)d->n, 1.0, &rng);
    CHECK_BC(bc_mem_alloc(env->dev, sa + gc->a_offset, &g->a_block));
    g->a = g->a_block + gc->a_offset;
    CHECK_BC(bc_mem_alloc(env->dev, sb, &g->b));
    CHECK_BC(bc_mem_alloc(env->dev, sd, &g->dd));
    CHECK_BC(bc_memcpy_htod(env->dev, g->a, g->ha, sa));
    CHECK_BC(bc_memcpy_htod(env->dev, g->b, g->hb, sb));
    d->a = g->a, d->b = g->b, d->d = g->dd;
    if (gc->beta != 0.0f) {
        CHECK_BC(bc_mem_alloc(env->dev, sc, &g->c));
        CHECK_BC(bc_memcpy_htod(env->dev, g->c, g->hc, sc));
        d->c = g->c;
    }
    if (gc->bias) {
        CHECK_BC(bc_mem_alloc(env->dev, sbias, &g->bias));
        CHECK_BC(bc_memcpy_htod(env->dev, g->bias, g->hbias, sbias));
        d->bias = g->bias;
    }
}

static void free_buffers(gpu_env *env, gbufs *g)
{
    bc_mem_free(env->dev, g->a_block);
    bc_mem_free(env->dev, g->b);
    bc_mem_free(env->dev, g->dd);
    if (g->c)
        bc_mem_free(env->dev, g->c);
    if (g->bias)
        bc_mem_free(env->dev, g->bias);
    free(g->ha), free(g->hb), free(g->hc), free(g->hd), free(g->hbias);
}

static void poison_and_run(gpu_env *env, const bc_gemm_plan *plan, gbufs *g)
{
    size_t sd = bytes_of(g->d.m, g->d.ldd, g->d.d_type);
    CHECK_BC(bc_memset_d8_async(env->s, g->dd, 0xFF, sd)); /* NaN in every type */
    CHECK_BC(bc_gemm_launch(plan, env->s));
    CHECK_BC(bc_stream_wait(env->s, 30ull * 1000000000ull));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g->hd, g->dd, sd));
}

/* Row i of a sample of `rows` (> 2, at most m) of an m-row D: the first,
 * the last, then one random row in each of rows - 2 equal bands. */
static int64_t sample_row(int64_t i, int64_t rows, int64_t m)
{
    if (i < 2)
        return i == 0 ? 0 : m - 1;
    const int64_t bands = rows - 2, lo = (i - 2) * m / bands, hi = (i - 1) * m / bands;
    return lo + (int64_t)(bc_rng_next(&rng) % (uint64_t)(hi - lo));
}

/* Checks every row, or for big shapes a sample: the first and last rows and
 * one random row in each of `rows - 2` equal bands (one a SAMPLE_ROW_BAND
 * rows or more, SAMPLE_ROWS to SAMPLE_ROWS_MAX rows in all), so that every
 * 128-row tile row of M up to 8192 is looked at. Then every row's padding
 * columns [n, ldd): a kernel must leave them as they were. */
static void check_result(const gcase *gc, const gbufs *g)
{
    const bc_gemm_desc *d = &g->d;
    double *ref = malloc((size_t)d->n * sizeof *ref);
    bc_ref_error e = {0};
    double pre_sq = 0.0;
    int full = (uint64_t)d->m * (uint64_t)d->n * (uint64_t)d->k <= FULL_CHECK_MACS;
    int64_t rows = d->m / SAMPLE_ROW_BAND + 2;
    rows = rows < SAMPLE_ROWS ? SAMPLE_ROWS : rows > SAMPLE_ROWS_MAX ? SAMPLE_ROWS_MAX : rows;
    if (full || rows > d->m)
        rows = d->m, full = 1;
    for (int64_t i = 0; i < rows; i++) {
        const int64_t row = full ? i : sample_row(i, rows, d->m);
        bc_ref_gemm_row_pre(d, g->ha, g->hb, g->hc, d->bias ? g->hbias : NULL, row, ref, &pre_sq);
        bc_ref_compare_row(d, g->hd, row, ref, &e);
    }
    free(ref);
    const size_t es = bc_dtype_bytes(d->d_type), pad = (size_t)(d->ldd - d->n) * es;
    size_t moved = 0;
    for (int64_t r = 0; r < d->m && pad > 0; r++) {
        const size_t at = ((size_t)r * (size_t)d->ldd + (size_t)d->n) * es;
        const unsigned char *got = (const unsigned char *)g->hd + at;
        for (size_t b = 0; b < pad; b++)
            moved += got[b] != (g->pad_want ? ((const unsigned char *)g->pad_want)[at + b] : 0xFFu);
    }
    if (moved)
        fail_msg("%zu bytes of D's padding columns [%lld, %lld) were written", moved, (long long)d->n,
                 (long long)d->ldd);
    /* with ReLU, relative to the values before it: ReLU adds no error, but a few outputs it clamps almost to
     * zero (13 x 1 x 8) left a norm far below the scale the fp32 sums were rounded at */
    double rel = d->relu && pre_sq > 0.0 ? sqrt(e.err_sq / pre_sq) : bc_ref_rel_frobenius(&e);
    print_message("  %lldx%lldx%lld ab=%d d=%d alpha=%g beta=%g bias=%d relu=%d pad=%lld/%lld %s split=%u: "
                  "rel %.3e max %.3e (%zu checked%s)\n",
                  (long long)d->m, (long long)d->n, (long long)d->k, (int)d->ab_type, (int)d->d_type, d->alpha,
                  d->beta, gc->bias, gc->relu, (long long)gc->pad, (long long)gc->cd_pad,
                  gc->config ? gc->config : "rule", gc->split_k, rel, e.max_abs, e.checked,
                  full ? "" : ", sampled rows");
    assert_int_equal(e.nonfinite, 0);
    assert_int_equal(e.bad, 0);
    assert_true(rel <= bc_ref_bound(d->d_type, d->k));
}

static void run_case(gpu_env *env, const gcase *gc)
{
    if (too_big_for_quick(gc->m, gc->n, gc->k))
        return;
    gbufs g;
    make_buffers(env, gc, &g);
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &plan));
    poison_and_run(env, plan, &g);
    check_result(gc, &g);
    bc_gemm_plan_destroy(plan);
    free_buffers(env, &g);
}

/* In place: D starts as C, and C aliases D exactly. */
static inline void run_aliased(gpu_env *env, const gcase *gc)
{
    gbufs g;
    make_buffers(env, gc, &g);
    size_t sd = bytes_of(g.d.m, g.d.ldd, g.d.d_type);
    CHECK_BC(bc_memcpy_htod(env->dev, g.dd, g.hc, sd));
    g.d.c = g.dd;
    g.pad_want = g.hc; /* D starts as C, padding included */
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &plan));
    CHECK_BC(bc_gemm_launch(plan, env->s));
    CHECK_BC(bc_stream_wait(env->s, 30ull * 1000000000ull));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g.hd, g.dd, sd));
    check_result(gc, &g);
    bc_gemm_plan_destroy(plan);
    free_buffers(env, &g);
}

/* The same plan `runs` times: every output byte-identical to the first,
 * which is checked against the reference. */
static inline void run_repeated(gpu_env *env, const gcase *gc, int runs)
{
    gbufs g;
    make_buffers(env, gc, &g);
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &plan));
    size_t sd = bytes_of(g.d.m, g.d.ldd, g.d.d_type);
    void *first = malloc(sd);
    poison_and_run(env, plan, &g);
    check_result(gc, &g);
    memcpy(first, g.hd, sd);
    for (int i = 1; i < runs; i++) {
        poison_and_run(env, plan, &g);
        if (memcmp(first, g.hd, sd) != 0)
            fail_msg("%s: run %d differs from run 0", gc->config ? gc->config : "rule", i);
    }
    free(first);
    bc_gemm_plan_destroy(plan);
    free_buffers(env, &g);
}

/* The portable family's configurations (runtime/gemm_family_sm80.c). */
static const char *const gemm_sm80_configs[] = {"sm80_128x256", "sm80_128x128", "sm80_64x64", "sm80_64x32",
                                                "sm80_32x32"};
#define GEMM_SM80_CONFIGS (sizeof gemm_sm80_configs / sizeof gemm_sm80_configs[0])

/* Layouts on `config` (NULL: the rule): padded leading dimensions, D rows
 * that are not 16-byte multiples, bias without C, ReLU alone, A at a
 * 16-byte (not 128-byte) aligned address, alpha = 0 with beta (D = beta*C),
 * a 2-row problem with K = 8. */
static inline void run_layouts(gpu_env *env, const char *config)
{
    const gcase cases[] = {
        {300, 200, 136, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 8, 0, config, 0, 0, 0},
        {300, 520, 264, BC_DTYPE_F16, BC_DTYPE_F32, 1.0f, 1.0f, 0, 0, 24, 0, config, 0, 0, 0},
        {257, 129, 200, BC_DTYPE_BF16, BC_DTYPE_F16, 2.0f, 0.0f, 1, 0, 0, 0, config, 0, 0, 0},
        {130, 300, 64, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 1, 0, 0, config, 0, 0, 0},
        {256, 512, 512, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 16, config, 0, 0, 0},
        {100, 100, 32, BC_DTYPE_BF16, BC_DTYPE_F32, 0.0f, 1.5f, 0, 0, 0, 0, config, 0, 0, 0},
        {2, 3000, 8, BC_DTYPE_F16, BC_DTYPE_F16, 1.0f, 0.0f, 1, 1, 0, 0, config, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(env, &cases[i]);
}

/* Group setup: the seed (printed; BC_SEED replays), BC_TEST_QUICK, the device. */
static int gemm_case_setup(void **state, const char *binary)
{
    uint64_t seed = bc_ref_seed();
    rng.s = seed;
    quick = getenv("BC_TEST_QUICK") != NULL && getenv("BC_TEST_QUICK")[0] == '1';
    print_message("%s: seed 0x%llx (BC_SEED to replay)\n", binary, (unsigned long long)seed);
    return gpu_env_setup(state, ARENA);
}

#endif
