/* GPU tests of the GEMM: results against an fp64 CPU reference on fresh
 * random inputs with poisoned outputs, every input/output type, epilogue
 * options and ragged shapes; bitwise determinism; graph mode.
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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "ref.h"

#define ARENA (3ull << 30)
#define FULL_CHECK_MACS (1ull << 28) /* above this, check a sample of rows */
#define SAMPLE_ROWS 48

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

typedef struct gbufs {
    bc_gemm_desc d;
    void *ha, *hb, *hc, *hbias, *hd;
    bc_devptr a, b, c, bias, dd;
    bc_devptr a_block; /* allocation that holds A (a may be offset into it) */
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
    d->config = gc->config, d->split_k = gc->split_k;
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

/* Checks every row, or a sample (always the first and last) for big shapes. */
static void check_result(const gcase *gc, const gbufs *g)
{
    const bc_gemm_desc *d = &g->d;
    double *ref = malloc((size_t)d->n * sizeof *ref);
    bc_ref_error e = {0};
    int full = (uint64_t)d->m * (uint64_t)d->n * (uint64_t)d->k <= FULL_CHECK_MACS;
    int64_t rows = full ? d->m : SAMPLE_ROWS;
    for (int64_t i = 0; i < rows; i++) {
        int64_t row = full ? i : i == 0 ? 0 : i == 1 ? d->m - 1 : (int64_t)(bc_rng_next(&rng) % (uint64_t)d->m);
        bc_ref_gemm_row(d, g->ha, g->hb, g->hc, d->bias ? g->hbias : NULL, row, ref);
        bc_ref_compare_row(d, g->hd, row, ref, &e);
    }
    free(ref);
    double rel = bc_ref_rel_frobenius(&e);
    print_message("  %lldx%lldx%lld ab=%d d=%d alpha=%g beta=%g bias=%d relu=%d pad=%lld/%lld %s split=%u: "
                  "rel %.3e max %.3e (%zu checked%s)\n",
                  (long long)d->m, (long long)d->n, (long long)d->k, (int)d->ab_type, (int)d->d_type, d->alpha,
                  d->beta, gc->bias, gc->relu, (long long)gc->pad, (long long)gc->cd_pad,
                  gc->config ? gc->config : "rule", gc->split_k, rel, e.max_abs, e.checked,
                  full ? "" : ", sampled rows");
    assert_int_equal(e.nonfinite, 0);
    assert_int_equal(e.bad, 0);
    assert_true(rel <= bc_ref_bound(d->d_type));
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

/* Padded leading dimensions, bias without C, ReLU alone, A at a 16-byte
 * (not 128-byte) aligned address, alpha = 0 with beta (D = beta*C). */
static void test_gemm_layouts(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    const gcase cases[] = {
        {300, 200, 136, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 8, 0, NULL, 0, 0, 0},
        {300, 520, 264, BC_DTYPE_F16, BC_DTYPE_F32, 1.0f, 1.0f, 0, 0, 24, 0, NULL, 0, 0, 0},
        {257, 129, 200, BC_DTYPE_BF16, BC_DTYPE_F16, 2.0f, 0.0f, 1, 0, 0, 0, NULL, 0, 0, 0},
        {130, 300, 64, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 1, 0, 0, NULL, 0, 0, 0},
        {256, 512, 512, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 16, NULL, 0, 0, 0},
        {100, 100, 32, BC_DTYPE_BF16, BC_DTYPE_F32, 0.0f, 1.5f, 0, 0, 0, 0, NULL, 0, 0, 0},
        {2, 3000, 8, BC_DTYPE_F16, BC_DTYPE_F16, 1.0f, 0.0f, 1, 1, 0, 0, NULL, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(env, &cases[i]);
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
                                       "sm90_128x64",  "sm90_64x32"};
    static const char *const sm100[] = {"sm100_128x256x64_ws_s4_tmem2"};
    const int hopper = gpu_is_hopper(env);
    const char *const *configs = hopper ? sm90 : sm100;
    const size_t count = hopper ? sizeof sm90 / sizeof sm90[0] : 1;
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

/* Every epilogue path of every whole-tile configuration, on ragged shapes
 * that leave whole C boxes outside M (the second consumer's rows) and
 * outside N (a last tile with a few columns), for each output type:
 *   C through the ring + TMA store (C and D rows 16-byte multiples),
 *   C through the ring + copy-out (D rows not: cd_pad 1, C padded back),
 *   C read by the epilogue + thread stores (C rows not 16-byte multiples),
 *   copy-out without C (D rows not 16-byte multiples). */
static void test_gemm_epilogue_paths(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const char *const configs[] = {"sm90_128x256", "sm90_128x128", "sm90_128x64", "sm90_64x32"};
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
                };
                for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                    run_case(env, &cases[i]);
            }
}

/* The skinny-M configuration named explicitly -- 64x32 with 16-row A
 * stages (M <= 16; the rows of A it does not load never reach D) -- at
 * every M it takes, N and K that leave
 * partial warps, tiles and K steps, every type and epilogue path (C through
 * the ring, D by copy-out), padded leading dimensions. */
static void test_gemm_skinny(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    static const struct {
        const char *config;
        int64_t max_m;
    } cfgs[] = {{"sm90_64x32m16", 16}};
    static const int64_t ms[] = {1, 2, 3, 5, 8, 9, 13, 16};
    static const int64_t nk[][2] = {{1, 8}, {7, 72}, {257, 2056}, {4096, 4104}};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0] && ms[i] <= cfgs[c].max_m; i++)
            for (size_t j = 0; j < sizeof nk / sizeof nk[0]; j++)
                for (int dt = BC_DTYPE_BF16; dt <= BC_DTYPE_F32; dt++) {
                    const int64_t m = ms[i], n = nk[j][0], k = nk[j][1];
                    const bc_dtype ab = (i + j) % 2 ? BC_DTYPE_F16 : BC_DTYPE_BF16;
                    const char *cf = cfgs[c].config;
                    const gcase cases[] = {
                        {m, n, k, ab, (bc_dtype)dt, 1.0f, 0.0f, 0, 0, 0, 0, cf, 0, 0, 0},
                        {m, n, k, ab, (bc_dtype)dt, 0.75f, -0.5f, 1, 1, 8, 0, cf, 1, 1, 0},
                    };
                    for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++)
                        run_case(env, &cases[q]);
                }
}

/* C aliases D exactly: D starts as C and the GEMM updates it in place. */
static void run_alias_case(gpu_env *env, const gcase *pgc)
{
    const gcase gc = *pgc;
    if (gc.config != NULL && !gpu_is_hopper(env))
        return;
    gbufs g;
    make_buffers(env, &gc, &g);
    size_t sd = bytes_of(g.d.m, g.d.ldd, g.d.d_type);
    CHECK_BC(bc_memcpy_htod(env->dev, g.dd, g.hc, sd)); /* D starts as C */
    g.d.c = g.dd;
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &plan));
    CHECK_BC(bc_gemm_launch(plan, env->s));
    CHECK_BC(bc_stream_wait(env->s, 30ull * 1000000000ull));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g.hd, g.dd, sd));
    check_result(&gc, &g);
    bc_gemm_plan_destroy(plan);
    free_buffers(env, &g);
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
        run_alias_case(env, &cases[i]);
}

/* The same plan 100 times: every output byte-identical to the first. */
static void test_gemm_deterministic_100(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    gcase gc = {1000, 1000, 1000, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0};
    if (quick)
        gc.m = gc.n = gc.k = 264;
    gbufs g;
    make_buffers(env, &gc, &g);
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g.d, &plan));
    size_t sd = bytes_of(g.d.m, g.d.ldd, g.d.d_type);
    void *first = malloc(sd);
    poison_and_run(env, plan, &g);
    check_result(&gc, &g);
    memcpy(first, g.hd, sd);
    for (int i = 1; i < (quick ? 10 : 100); i++) {
        poison_and_run(env, plan, &g);
        if (memcmp(first, g.hd, sd) != 0)
            fail_msg("run %d differs from run 0", i);
    }
    free(first);
    bc_gemm_plan_destroy(plan);
    free_buffers(env, &g);
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

    /* re-point plan 1 at g2's inputs and output, patch the graph in place */
    CHECK_BC(bc_gemm_plan_set_pointers(p1, g2.a, g2.b, 0, g2.dd, g2.bias));
    CHECK_BC(bc_graph_update(graph, 0, p1));
    CHECK_BC(bc_memset_d8_async(env->s, g2.dd, 0xFF, sd));
    CHECK_BC(bc_graph_launch(graph, env->s));
    CHECK_BC(bc_stream_wait(env->s, 10ull * 1000000000ull));
    CHECK_BC(bc_memcpy_dtoh(env->dev, g2.hd, g2.dd, sd));
    assert_memory_equal(stream_out, g2.hd, sd);

    bc_graph_destroy(graph);
    free(stream_out);
    bc_gemm_plan_destroy(p1);
    bc_gemm_plan_destroy(p2);
    free_buffers(env, &g1);
    free_buffers(env, &g2);
}

/* A GEMM that reads the previous GEMM's output, launched right after it on
 * the same stream and in one graph: the launches are programmatically
 * serialized, so the second kernel's set-up overlaps the first one's tail;
 * its griddepcontrol.wait must still order every read of D1 after D1 is
 * written. D2 is checked against the reference over the D1 the GPU wrote. */
static void test_dependent_chain(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    const gcase c1 = {300, 512, 264, BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0, 0, NULL, 0, 0, 0};
    const gcase c2 = {300, 200, 512, BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.0f, 1, 0, 0, 0, NULL, 0, 0, 0};
    gbufs g1, g2;
    make_buffers(env, &c1, &g1);
    make_buffers(env, &c2, &g2);
    g2.d.a = g1.dd; /* A2 = D1: 300 x 512 bf16, rows 1024 bytes */
    bc_gemm_plan *p1 = NULL, *p2 = NULL;
    CHECK_BC(bc_gemm_plan_create(env->dev, &g1.d, &p1));
    CHECK_BC(bc_gemm_plan_create(env->dev, &g2.d, &p2));
    const size_t s1 = bytes_of(g1.d.m, g1.d.ldd, g1.d.d_type), s2 = bytes_of(g2.d.m, g2.d.ldd, g2.d.d_type);
    void *first = malloc(s2);
    const bc_gemm_plan *plans[2] = {p1, p2};
    bc_graph *graph = NULL;
    CHECK_BC(bc_graph_create(env->s, plans, 2, &graph));
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
        check_result(&c1, &g1);
        memcpy(g2.ha, g1.hd, s1); /* the reference reads the D1 the GPU wrote */
        check_result(&c2, &g2);
        if (mode == 0)
            memcpy(first, g2.hd, s2);
        else
            assert_memory_equal(first, g2.hd, s2);
    }
    free(first);
    bc_graph_destroy(graph);
    bc_gemm_plan_destroy(p1);
    bc_gemm_plan_destroy(p2);
    free_buffers(env, &g1);
    free_buffers(env, &g2);
}

static int setup(void **state)
{
    uint64_t seed = bc_ref_seed();
    rng.s = seed;
    quick = getenv("BC_TEST_QUICK") != NULL && getenv("BC_TEST_QUICK")[0] == '1';
    print_message("test_gpu_gemm: seed 0x%llx (BC_SEED to replay)\n", (unsigned long long)seed);
    return gpu_env_setup(state, ARENA);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_matrix),
        cmocka_unit_test(test_gemm_layouts),
        cmocka_unit_test(test_gemm_every_config),
        cmocka_unit_test(test_gemm_epilogue_paths),
        cmocka_unit_test(test_gemm_skinny),
        cmocka_unit_test(test_gemm_c_aliases_d),
        cmocka_unit_test(test_gemm_deterministic_100),
        cmocka_unit_test(test_graph_mode),
        cmocka_unit_test(test_dependent_chain),
    };
    return cmocka_run_group_tests_name("gpu_gemm", tests, setup, gpu_env_teardown);
}
