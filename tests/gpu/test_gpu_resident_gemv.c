/* GEMV plans in the resident executor on the GPU: every grid form of the
 * GEMV kernel (runs of 8 rows, runs of 16, row groups of a short K, K split
 * over a cluster), the larger side in either operand, bf16 and f16, bias +
 * ReLU and beta * C into f32, rows of A and B past K, a plan reading the
 * previous one's output (a GEMV plan's; beside tiles, a tile plan's too), all
 * in one executor alone (64x32m16's kernel) and beside a tile plan of
 * 128x64 (its kernel, the one that runs both), on 5 CTAs (several work items
 * a CTA, the partials' buffer reused) and on the default grid: each step's
 * outputs byte-identical to the launched plans' (poisoned before each
 * step), and right against the fp64 reference. Without a GPU every test
 * reports SKIPPED. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "gpu_ref_check.h"
#include "ref.h"

#define SEC 1000000000ull

static int quick(void)
{
    const char *q = getenv("BC_TEST_QUICK");
    return q && q[0] == '1';
}

/* One plan of a chain with host copies of what it reads and the launched
 * plan's output bytes. */
typedef struct link {
    bc_gemm_desc d;
    void *ha, *hb, *hc, *hbias, *want, *got;
    size_t bytes;
    int a_dev; /* A is the previous link's D */
    bc_gemm_plan *plan;
} link;

/* M x N x K on `config` (a GEMV plan's named: the rule keeps resident plans on the tiles) with inputs of
 * type `in`, A's and B's rows pad_a and pad_b elements past K (multiples of 8); after `prev` (its D read as
 * A, packed) beta * C into f32, else bias + ReLU into `in`'s type. */
static void make_padded(gpu_env *env, link *k, int64_t m, int64_t n, int64_t kk, const char *config, bc_dtype in,
                        const link *prev, int64_t pad_a, int64_t pad_b, bc_rng *rng)
{
    bc_gemm_desc *d = &k->d;
    memset(k, 0, sizeof *k);
    bc_gemm_desc_default(d);
    d->m = m, d->n = n, d->k = kk;
    d->ab_type = in, d->d_type = prev ? BC_DTYPE_F32 : in;
    d->config = config;
    d->resident = 1;
    d->lda = prev ? kk : kk + pad_a, d->ldb = kk + pad_b;
    k->a_dev = prev != NULL;
    if (prev)
        d->a = prev->d.d, k->ha = malloc((size_t)(m * kk) * bc_dtype_bytes(in));
    else
        k->ha = gpu_upload(env, (size_t)(m * d->lda), in, rng, &d->a);
    k->hb = gpu_upload(env, (size_t)(n * d->ldb), in, rng, &d->b);
    if (prev) {
        d->beta = 0.5f;
        k->hc = gpu_upload(env, (size_t)(m * n), BC_DTYPE_F32, rng, &d->c);
    } else {
        d->relu = 1;
        k->hbias = gpu_upload(env, (size_t)n, in, rng, &d->bias);
    }
    k->bytes = (size_t)(m * n) * bc_dtype_bytes(d->d_type);
    k->want = malloc(k->bytes), k->got = malloc(k->bytes);
    CHECK_BC(bc_mem_alloc(env->dev, k->bytes, &d->d));
    CHECK_BC(bc_gemm_plan_create(env->dev, d, &k->plan));
}

static void make(gpu_env *env, link *k, int64_t m, int64_t n, int64_t kk, const char *config, bc_dtype in,
                 const link *prev, bc_rng *rng)
{
    make_padded(env, k, m, n, kk, config, in, prev, 0, 0, rng);
}

static void drop(link *k)
{
    free(k->ha), free(k->hb), free(k->hc), free(k->hbias), free(k->want), free(k->got);
    bc_gemm_plan_destroy(k->plan);
}

/* Every row of the link's D against the fp64 reference (A from the device
 * when it is the previous link's output). */
static void check(gpu_env *env, link *k, int a_from_device)
{
    const bc_gemm_desc *d = &k->d;
    if (a_from_device)
        CHECK_BC(bc_memcpy_dtoh(env->dev, k->ha, d->a, (size_t)(d->m * d->k) * bc_dtype_bytes(d->ab_type)));
    gpu_check_d(env, d, k->ha, k->hb, k->hc, k->hbias);
}

/* The chain's plans launched in order (their bytes kept), then `steps`
 * resident steps on sm_count CTAs (0: the default), every output poisoned
 * before each and compared after it. */
static void run_chain(gpu_env *env, link *k, int n, uint32_t sm_count, int steps)
{
    for (int i = 0; i < n; i++)
        CHECK_BC(bc_gemm_launch(k[i].plan, env->s));
    CHECK_BC(bc_stream_wait(env->s, 5 * SEC));
    for (int i = 0; i < n; i++)
        CHECK_BC(bc_memcpy_dtoh(env->dev, k[i].want, k[i].d.d, k[i].bytes));
    bc_gemm_plan *plans[BC_RESIDENT_MAX_OPERATIONS];
    assert_true(n <= BC_RESIDENT_MAX_OPERATIONS);
    for (int i = 0; i < n; i++)
        plans[i] = k[i].plan;
    bc_resident_config cfg;
    bc_resident_config_default(&cfg);
    cfg.sm_count = sm_count;
    bc_resident *res = NULL;
    CHECK_BC(bc_resident_create(env->dev, (const bc_gemm_plan *const *)plans, n, &cfg, &res));
    bc_resident_info in;
    CHECK_BC(bc_resident_query(res, &in));
    CHECK_BC(bc_resident_start(res, env->s));
    /* poisoned by copies from the host (the copy engines): an executor of 128x64's kernel on every SM leaves
     * no room for a memset kernel */
    size_t most = 0;
    for (int i = 0; i < n; i++)
        most = k[i].bytes > most ? k[i].bytes : most;
    void *nan = malloc(most);
    memset(nan, 0xFF, most);
    for (int step = 0; step < steps; step++) {
        for (int i = 0; i < n; i++)
            CHECK_BC(bc_memcpy_htod(env->dev, k[i].d.d, nan, k[i].bytes));
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        for (int i = 0; i < n; i++) {
            CHECK_BC(bc_memcpy_dtoh(env->dev, k[i].got, k[i].d.d, k[i].bytes));
            if (memcmp(k[i].got, k[i].want, k[i].bytes) != 0)
                fail_msg("step %d on %u CTAs (%s): plan %d (%lldx%lldx%lld) differs from its launch", step,
                         in.sm_count, in.config, i, (long long)k[i].d.m, (long long)k[i].d.n, (long long)k[i].d.k);
        }
    }
    CHECK_BC(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    free(nan);
    print_message("  %d steps on %u CTAs of %s's kernel, %u barriers: launched bytes\n", steps, in.sm_count,
                  in.config, in.barriers);
}

/* The GEMV chain, alone (tile = NULL) or beside a tile plan named `tile`
 * of M x 104 x 904 and a GEMV plan that reads that plan's D (stored by
 * TMA, loaded through L2). */
static void gemv_chain(gpu_env *env, const char *tile, int64_t tile_m)
{
    bc_rng rng = {bc_ref_seed()};
    link k[9];
    int n = 0;
    make(env, &k[n++], 9, 600, 4096, "sm90_gemv", BC_DTYPE_BF16, NULL, &rng);    /* runs of 8, split 2 ways */
    make(env, &k[n++], 9, 72, 600, "sm90_gemv", BC_DTYPE_BF16, &k[0], &rng);     /* reads the first's D */
    make(env, &k[n++], 700, 12, 1000, "sm90_gemv", BC_DTYPE_BF16, NULL, &rng);   /* A the larger side */
    make(env, &k[n++], 8000, 3, 160, "sm90_gemv", BC_DTYPE_F16, NULL, &rng);     /* row groups, f16 */
    make(env, &k[n++], 16, 2200, 2048, "sm90_gemv", BC_DTYPE_BF16, NULL, &rng);  /* runs of 16 */
    make(env, &k[n++], 5, 40, 16384, "sm90_gemv", BC_DTYPE_F16, NULL, &rng);     /* split 8 ways */
    make_padded(env, &k[n++], 12, 300, 520, "sm90_gemv", BC_DTYPE_BF16, NULL, 8, 24, &rng); /* rows past K */
    if (tile) {
        const int t = n++;
        make(env, &k[t], tile_m, 104, 904, tile, BC_DTYPE_BF16, NULL, &rng);
        make(env, &k[n++], tile_m, 12, 104, "sm90_gemv", BC_DTYPE_BF16, &k[t], &rng); /* reads the tile's D */
    }
    static const struct {
        int i;
        uint32_t split, groups;
    } want[] = {{0, 2, 75}, {2, 1, 88}, {3, 1, 250}, {4, 1, 138}, {5, 8, 5}};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) { /* the grid forms named above */
        bc_gemm_plan_info pi;
        CHECK_BC(bc_gemm_plan_query(k[want[w].i].plan, &pi));
        if (strcmp(pi.config, "sm90_gemv") != 0 || pi.split_k != want[w].split ||
            pi.grid_x != want[w].split * want[w].groups)
            fail_msg("plan %d: %s split %u grid %u, expected sm90_gemv split %u grid %u", want[w].i, pi.config,
                     pi.split_k, pi.grid_x, want[w].split, want[w].split * want[w].groups);
    }
    const int steps = quick() ? 10 : 100;
    run_chain(env, k, n, 5, steps);
    run_chain(env, k, n, 0, steps);
    for (int i = 0; i < n; i++)
        check(env, &k[i], k[i].a_dev);
    for (int i = 0; i < n; i++)
        drop(&k[i]);
}

static void test_gemv_alone(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    gemv_chain(env, NULL, 0);
}

static void test_gemv_beside_tiles(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(env))
        skip();
    gemv_chain(env, "sm90_128x64", 200);
}

static int setup(void **state) { return gpu_env_setup(state, 512u << 20); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemv_alone),
        cmocka_unit_test(test_gemv_beside_tiles),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_resident_gemv", tests, setup, gpu_env_teardown);
}
