/* Plan-time operand checks on the fake driver: every GEMM operand's extent
 * must lie in one live pool block, a registered range, or one allocation the
 * driver describes as addressable by this device; D may not share a byte
 * with A, B or bias, nor with C unless C is D exactly. set_pointers checks
 * the same way; registration turns the driver question into a lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"
#include "gemm_abi.h"
#include "gemm_internal.h"

#define MiB (1u << 20)

typedef struct env {
    bc_device *dev;
    bc_stream *s;
} env;

static void env_open(env *e)
{
    memset(e, 0, sizeof *e);
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.device_arena_bytes = 64 * MiB;
    cfg.host_arena_bytes = 8 * MiB;
    assert_ok(bc_device_open(&cfg, &e->dev));
    assert_ok(bc_stream_create(e->dev, 0, &e->s, NULL));
    fake_set_param_size(sizeof(bc_gemm_params));
}

static bc_devptr block(env *e, size_t bytes)
{
    bc_devptr p = 0;
    assert_ok(bc_mem_alloc(e->dev, bytes, &p));
    return p;
}

/* A device allocation outside the arena (a framework's cuMemAlloc). */
static bc_devptr foreign(size_t bytes)
{
    CUdeviceptr p = 0;
    assert_int_equal(fake_table()->cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    return (bc_devptr)p;
}

static void foreign_free(bc_devptr p) { assert_int_equal(fake_table()->cuMemFree((CUdeviceptr)p), CUDA_SUCCESS); }

/* bf16 M x N x K, D bf16, packed leading dimensions. */
static bc_gemm_desc desc(int64_t m, int64_t n, int64_t k, bc_devptr a, bc_devptr b, bc_devptr d)
{
    bc_gemm_desc g;
    bc_gemm_desc_default(&g);
    g.m = m, g.n = n, g.k = k, g.a = a, g.b = b, g.d = d;
    return g;
}

static void plan_ok(env *e, const bc_gemm_desc *d)
{
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e->dev, d, &plan));
    bc_gemm_plan_destroy(plan);
}

/* Refused with `want`, naming `field` and containing each of `words` (NULL-ended). */
static void plan_refused(env *e, const bc_gemm_desc *d, bc_status want, const char *field, ...)
{
    bc_gemm_plan *plan = (bc_gemm_plan *)(uintptr_t)0x5a5a;
    assert_status(bc_gemm_plan_create(e->dev, d, &plan), want);
    assert_ptr_equal(plan, (bc_gemm_plan *)(uintptr_t)0x5a5a);
    bc_error_detail det;
    bc_last_error(&det);
    assert_int_equal(det.status, want);
    if (strcmp(det.call, field) != 0)
        fail_msg("refused for '%s' (%s), expected '%s'", det.call, det.message, field);
    va_list ap;
    va_start(ap, field);
    for (const char *w = va_arg(ap, const char *); w != NULL; w = va_arg(ap, const char *))
        if (strstr(det.message, w) == NULL)
            fail_msg("message '%s' lacks '%s'", det.message, w);
    va_end(ap);
}

/* ---------------------------------------------------------------- arena */

static void test_arena_blocks(void **state)
{
    env e;
    env_open(&e);
    const int64_t M = 100, N = 192, K = 64; /* A 12800 B, B 24576 B, D 38400 B */
    bc_devptr a = block(&e, M * K * 2), b = block(&e, N * K * 2), d = block(&e, M * N * 2);
    bc_gemm_desc g = desc(M, N, K, a, b, d);
    plan_ok(&e, &g);

    /* D in a block smaller than its extent: bytes needed and available named */
    bc_devptr small = block(&e, M * N * 2 - 4096);
    g = desc(M, N, K, a, b, small);
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "d", "needs 38400 bytes", "has 34304 bytes", NULL);
    /* the extent is (M-1)*ldd + N elements: a padded ldd makes a short last row */
    g = desc(M, N, K, a, b, d), g.ldd = N + 8;
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "d", "needs 39984 bytes", NULL);
    /* an interior pointer whose extent still fits is fine; one byte more is not */
    bc_devptr big = block(&e, 64 * 1024);
    g = desc(M, N, K, a, b, big + 64 * 1024 - M * N * 2);
    plan_ok(&e, &g);
    g.d += 16;
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "d", "needs 38400 bytes", "has 38384 bytes", NULL);
    /* one extent over two adjacent live blocks: not ONE block */
    bc_devptr x = block(&e, 4096), y = block(&e, 4096);
    assert_int_equal(y, x + 4096);
    g = desc(1, 2048, 8, a, big, x + 2048); /* 4096 bytes from the middle of x */
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "d", "has 2048 bytes", NULL);
    /* a stale pointer: the block was freed */
    bc_devptr gone = block(&e, M * N * 2);
    assert_ok(bc_mem_free(e.dev, gone));
    g = desc(M, N, K, a, b, gone);
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "d", "free space of the device arena", "0 bytes available", NULL);
    /* bias shorter than N; A and B too */
    g = desc(M, N, K, a, b, d), g.bias = block(&e, 256); /* 128 bf16 < N = 192 */
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "bias", "needs 384 bytes", "has 256 bytes", NULL);
    g = desc(M + 1, N, K, a, b, big);
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "a", NULL);
    g = desc(M, N, K + 8, block(&e, M * (K + 8) * 2), b, d);
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "b", NULL);
    /* C when beta != 0 */
    g = desc(M, N, K, a, b, d), g.beta = 1.0f, g.c = small;
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "c", NULL);
    /* operands in the pinned host arena (mapped for the device) */
    void *ha = NULL;
    assert_ok(bc_host_alloc(e.dev, M * K * 2, &ha));
    g = desc(M, N, K, (bc_devptr)(uintptr_t)ha, b, d);
    if (BC__TMA_ON_HOST_MEMORY)
        plan_ok(&e, &g);
    else
        plan_refused(&e, &g, BC_ERR_WRONG_DEVICE, "a", "through TMA", NULL);
    g = desc(M + 1, N, K, (bc_devptr)(uintptr_t)ha, b, d);
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "a", "pinned host arena", NULL);
    /* no driver call decides any of this */
    assert_int_equal(fake_entry_calls(FAKE_E_cuPointerGetAttributes), 0);
    bc_device_close(e.dev);
}

/* ---------------------------------------------------------------- foreign */

static void test_foreign_allocations(void **state)
{
    fake_device two[2];
    fake_device_defaults(&two[0]);
    fake_device_defaults(&two[1]);
    fake_set_devices(two, 2);
    env e;
    env_open(&e);
    const int64_t M = 64, N = 128, K = 64;
    const size_t sa = M * K * 2, sb = N * K * 2, sd = M * N * 2;
    bc_devptr a = foreign(sa), b = foreign(sb), d = foreign(sd);
    bc_gemm_desc g = desc(M, N, K, a, b, d);
    uint64_t q = fake_entry_calls(FAKE_E_cuPointerGetAttributes);
    plan_ok(&e, &g);
    assert_int_equal(fake_entry_calls(FAKE_E_cuPointerGetAttributes) - q, 3); /* one per allocation */

    /* one allocation carved into A, B and D: asked once */
    bc_devptr all = foreign(sa + sb + sd);
    g = desc(M, N, K, all, all + sa, all + sa + sb);
    q = fake_entry_calls(FAKE_E_cuPointerGetAttributes);
    plan_ok(&e, &g);
    assert_int_equal(fake_entry_calls(FAKE_E_cuPointerGetAttributes) - q, 1);
    /* ... and D's extent past the allocation's end */
    g = desc(M, N, K, all, all + sa, all + sa + sb + 256);
    plan_refused(&e, &g, BC_ERR_OUT_OF_BOUNDS, "d", "needs 16384 bytes", "has 16128 bytes", NULL);

    /* memory the driver does not know: pageable host memory, a made-up address */
    void *pageable = NULL;
    assert_int_equal(posix_memalign(&pageable, 4096, sd), 0);
    g = desc(M, N, K, a, b, (bc_devptr)(uintptr_t)pageable);
    plan_refused(&e, &g, BC_ERR_WRONG_DEVICE, "d", "no memory the driver knows", NULL);
    g = desc(M, N, K, 0x100000000000ull, b, d);
    plan_refused(&e, &g, BC_ERR_WRONG_DEVICE, "a", NULL);
    free(pageable);
    /* memory of another device */
    CUcontext c1 = NULL, c0 = fake_current_context();
    assert_int_equal(fake_table()->cuCtxCreate(&c1, NULL, 0, 0, 1), CUDA_SUCCESS);
    bc_devptr other = foreign(sd);
    assert_int_equal(fake_table()->cuCtxSetCurrent(c0), CUDA_SUCCESS);
    g = desc(M, N, K, a, b, other);
    plan_refused(&e, &g, BC_ERR_WRONG_DEVICE, "d", "device 1", NULL);
    /* pinned host memory: only when mapped for the device */
    void *unmapped = NULL, *mapped = NULL;
    assert_int_equal(fake_table()->cuMemHostAlloc(&unmapped, sa, 0), CUDA_SUCCESS);
    assert_int_equal(fake_table()->cuMemHostAlloc(&mapped, sa, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
    g = desc(M, N, K, (bc_devptr)(uintptr_t)unmapped, b, d);
    plan_refused(&e, &g, BC_ERR_WRONG_DEVICE, "a", "host memory", NULL);
    g = desc(M, N, K, a, b, d), g.beta = 1.0f, g.c = (bc_devptr)(uintptr_t)mapped; /* plain loads: always */
    g.m = M * K * 2 / (N * 2);
    plan_ok(&e, &g);
    g = desc(M, N, K, (bc_devptr)(uintptr_t)mapped, b, d);
    if (BC__TMA_ON_HOST_MEMORY)
        plan_ok(&e, &g);
    else
        plan_refused(&e, &g, BC_ERR_WRONG_DEVICE, "a", "through TMA", NULL);

    /* the driver call itself failing */
    g = desc(M, N, K, a, b, d);
    fake_fail_entry(FAKE_E_cuPointerGetAttributes, 2, CUDA_ERROR_INVALID_VALUE, 0);
    plan_refused(&e, &g, BC_ERR_WRONG_DEVICE, "cuPointerGetAttributes", "cannot describe", NULL);
    fake_fail_entry(FAKE_E_cuPointerGetAttributes, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    plan_refused(&e, &g, BC_ERR_DRIVER, "cuPointerGetAttributes", NULL);
    fake_fail_clear();

    assert_int_equal(fake_table()->cuMemFreeHost(unmapped), CUDA_SUCCESS);
    assert_int_equal(fake_table()->cuMemFreeHost(mapped), CUDA_SUCCESS);
    foreign_free(other), foreign_free(all), foreign_free(a), foreign_free(b), foreign_free(d);
    bc_device_close(e.dev);
    assert_int_equal(fake_table()->cuCtxDestroy(c1), CUDA_SUCCESS);
}

/* ---------------------------------------------------------------- overlaps */

static void test_overlaps(void **state)
{
    env e;
    env_open(&e);
    const int64_t M = 64, N = 128, K = 64;
    bc_devptr buf = block(&e, 4 * MiB), a = block(&e, M * K * 2), b = block(&e, N * K * 2);
    bc_gemm_desc g = desc(M, N, K, buf, b, buf); /* D == A */
    plan_refused(&e, &g, BC_ERR_OVERLAP, "d", "shares bytes with a", NULL);
    g = desc(M, N, K, a, buf + 4096, buf); /* D meets B part way */
    plan_refused(&e, &g, BC_ERR_OVERLAP, "d", "with b", NULL);
    g = desc(M, N, K, a, b, buf), g.bias = buf + 2 * N * 10; /* bias inside D's 10th row */
    plan_refused(&e, &g, BC_ERR_OVERLAP, "d", "with bias", NULL);
    g.bias = buf + M * N * 2; /* right after D's last byte */
    plan_ok(&e, &g);
    /* C: exactly D (in place) is fine; shifted by a row, or at D's base with another pitch, is not */
    g = desc(M, N, K, a, b, buf), g.beta = 0.5f, g.c = buf;
    plan_ok(&e, &g);
    g.c = buf + N * 2;
    plan_refused(&e, &g, BC_ERR_OVERLAP, "d", "with c", NULL);
    g.c = buf, g.ldc = N + 64;
    plan_refused(&e, &g, BC_ERR_OVERLAP, "d", "with c", NULL);
    /* C and D interleaved in one buffer, same pitch, disjoint columns: no byte shared */
    g = desc(M, N, K, a, b, buf), g.beta = 0.5f, g.ldc = g.ldd = 2 * N, g.c = buf + N * 2;
    plan_ok(&e, &g);
    g.c = buf + N * 2 - 16; /* 8 elements of each C row inside D's row */
    plan_refused(&e, &g, BC_ERR_OVERLAP, "d", NULL);
    /* D beside A in one buffer (column halves, same pitch): fine; reads may overlap each other */
    g = desc(M, N, K, buf, buf, buf + K * 2), g.lda = g.ldb = g.ldd = K + N; /* B reads A's rows */
    g.n = M; /* B = first M rows, N = M columns of D */
    plan_ok(&e, &g);
    bc_device_close(e.dev);
}

/* bc__regions_overlap against brute force over small regions. */
static void test_region_overlap_exact(void **state)
{
    uint64_t s = 12345;
    unsigned agree_same = 0, conservative = 0;
    for (int it = 0; it < 200000; it++) {
        bc__region r[2];
        for (int i = 0; i < 2; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t v = s >> 16;
            r[i].rows = 1 + v % 5;
            r[i].row_bytes = 1 + (v >> 4) % 12;
            r[i].pitch = r[i].row_bytes + (v >> 8) % 6;
            r[i].base = 1000 + (v >> 12) % 64;
        }
        if (it % 2)
            r[1].pitch = r[1].rows > 1 && r[0].pitch >= r[1].row_bytes ? r[0].pitch : r[1].pitch;
        unsigned char mark[1200] = {0};
        int brute = 0;
        for (int i = 0; i < 2; i++)
            for (uint64_t row = 0; row < r[i].rows; row++)
                for (uint64_t c = 0; c < r[i].row_bytes; c++) {
                    uint64_t at = r[i].base + row * r[i].pitch + c;
                    if (i == 0)
                        mark[at] = 1;
                    else
                        brute |= mark[at];
                }
        int got = bc__regions_overlap(&r[0], &r[1]);
        assert_int_equal(got, bc__regions_overlap(&r[1], &r[0]));
        const int exact = r[0].rows == 1 || r[1].rows == 1 || r[0].pitch == r[1].pitch;
        if (exact) {
            if (got != brute)
                fail_msg("a={%llu,%llu,%llu,%llu} b={%llu,%llu,%llu,%llu}: %d, brute force %d",
                         (unsigned long long)r[0].base, (unsigned long long)r[0].rows,
                         (unsigned long long)r[0].row_bytes, (unsigned long long)r[0].pitch,
                         (unsigned long long)r[1].base, (unsigned long long)r[1].rows,
                         (unsigned long long)r[1].row_bytes, (unsigned long long)r[1].pitch, got, brute);
            agree_same += r[0].pitch == r[1].pitch && r[0].rows > 1 && r[1].rows > 1;
        } else {
            assert_true(got >= brute); /* never misses a shared byte */
            conservative += got != brute;
        }
    }
    print_message("  exact on %u same-pitch pairs; %u conservative refusals of different pitches\n", agree_same,
                  conservative);
    assert_true(agree_same > 10000);
}

/* ---------------------------------------------------------------- set_pointers */

static void test_set_pointers_checks(void **state)
{
    env e;
    env_open(&e);
    const int64_t M = 64, N = 128, K = 64;
    bc_devptr a = block(&e, M * K * 2), b = block(&e, N * K * 2), d = block(&e, M * N * 2);
    bc_devptr d2 = block(&e, M * N * 2), small = block(&e, 1024), bias = block(&e, N * 2);
    bc_gemm_desc g = desc(M, N, K, a, b, d);
    g.bias = bias;
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &g, &plan));
    const bc_gemm_plan *plans[1] = {plan};
    bc_graph *graph = NULL;
    assert_ok(bc_graph_create(e.s, plans, 1, &graph));
    bc_gemm_params before = plan->params;

    assert_status(bc_gemm_plan_set_pointers(plan, a, b, 0, small, bias), BC_ERR_OUT_OF_BOUNDS);
    assert_status(bc_gemm_plan_set_pointers(plan, d, b, 0, d, bias), BC_ERR_OVERLAP); /* D == A */
    assert_status(bc_gemm_plan_set_pointers(plan, a, b, 0, d, small + 896), BC_ERR_OUT_OF_BOUNDS);
    assert_status(bc_gemm_plan_set_pointers(plan, a, b, 0, d, d + 256), BC_ERR_OVERLAP);
    assert_status(bc_gemm_plan_set_pointers(plan, 0x100000000000ull, b, 0, d, bias), BC_ERR_WRONG_DEVICE);
    assert_memory_equal(&plan->params, &before, sizeof before); /* a refused re-point changes nothing */
    assert_int_equal(plan->desc.d, d);

    assert_ok(bc_gemm_plan_set_pointers(plan, a, b, 0, d2, bias));
    assert_ok(bc_graph_update(graph, 0, plan));
    bc_gemm_params upd;
    memcpy(&upd, fake_last_exec_update()->params, sizeof upd);
    assert_int_equal(upd.d, d2);
    bc_graph_destroy(graph);
    bc_gemm_plan_destroy(plan);
    bc_device_close(e.dev);
}

/* ---------------------------------------------------------------- registration */

static void test_registered_ranges(void **state)
{
    env e;
    env_open(&e);
    const int64_t M = 64, N = 128, K = 64;
    const size_t sa = M * K * 2, sb = N * K * 2, sd = M * N * 2;
    bc_devptr pool = foreign(sa + sb + sd), x = foreign(sd);
    bc_gemm_desc g = desc(M, N, K, pool, pool + sa, pool + sa + sb);
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &g, &plan));

    uint64_t q = fake_entry_calls(FAKE_E_cuPointerGetAttributes);
    assert_ok(bc_mem_register(e.dev, pool, sa + sb + sd));
    assert_int_equal(fake_entry_calls(FAKE_E_cuPointerGetAttributes) - q, 1); /* asked once, here */
    q = fake_entry_calls(FAKE_E_cuPointerGetAttributes);
    for (int i = 0; i < 10; i++)
        assert_ok(bc_gemm_plan_set_pointers(plan, pool, pool + sa, 0, pool + sa + sb, 0));
    assert_int_equal(fake_entry_calls(FAKE_E_cuPointerGetAttributes) - q, 0); /* a lookup, no driver call */
    /* still checked: past the registered range, and overlaps */
    assert_status(bc_gemm_plan_set_pointers(plan, pool, pool + sa, 0, pool + sa + sb + 256, 0), BC_ERR_OUT_OF_BOUNDS);
    assert_status(bc_gemm_plan_set_pointers(plan, pool, pool + sa, 0, pool, 0), BC_ERR_OVERLAP);
    /* registration rules */
    assert_status(bc_mem_register(e.dev, pool + 64, 64), BC_ERR_OVERLAP);
    assert_status(bc_mem_register(e.dev, x + sd - 64, 128), BC_ERR_OUT_OF_BOUNDS); /* past its allocation */
    assert_status(bc_mem_register(e.dev, x, sd + 1), BC_ERR_OUT_OF_BOUNDS);
    bc_devptr arena_block = block(&e, 4096);
    assert_status(bc_mem_register(e.dev, arena_block, 4096), BC_ERR_OVERLAP);
    void *pageable = malloc(4096);
    assert_status(bc_mem_register(e.dev, (bc_devptr)(uintptr_t)pageable, 4096), BC_ERR_WRONG_DEVICE);
    free(pageable);
    assert_status(bc_mem_register(e.dev, x, 0), BC_ERR_INVALID_ARGUMENT);
    assert_ok(bc_mem_register(e.dev, x, sd));
    assert_status(bc_mem_unregister(e.dev, pool + 64), BC_ERR_FOREIGN_POINTER);
    assert_ok(bc_mem_unregister(e.dev, pool));
    assert_status(bc_mem_unregister(e.dev, pool), BC_ERR_FOREIGN_POINTER);
    q = fake_entry_calls(FAKE_E_cuPointerGetAttributes);
    assert_ok(bc_gemm_plan_set_pointers(plan, pool, pool + sa, 0, x, 0)); /* pool asked again, x registered */
    assert_int_equal(fake_entry_calls(FAKE_E_cuPointerGetAttributes) - q, 1);
    bc_gemm_plan_destroy(plan);
    bc_device_close(e.dev); /* forgets the registry */
    foreign_free(pool), foreign_free(x);
}

/* ---------------------------------------------------------------- split_k */

/* gemm.h: S >= 2 splits K into the largest power of two not above
 * min(S, 8, k-blocks). */
static void test_split_k_contract(void **state)
{
    env e;
    env_open(&e);
    const int64_t M = 128, N = 128, K = 64 * 32; /* 32 k-blocks */
    bc_gemm_desc g = desc(M, N, K, block(&e, M * K * 2), block(&e, N * K * 2), block(&e, M * N * 2));
    g.config = "sm90_128x128s";
    static const uint32_t want[][2] = {{2, 2}, {3, 2}, {8, 8}, {9, 8}, {16, 8}, {1000, 8}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        g.split_k = want[i][0];
        bc_gemm_plan *plan = NULL;
        assert_ok(bc_gemm_plan_create(e.dev, &g, &plan));
        bc_gemm_plan_info info;
        assert_ok(bc_gemm_plan_query(plan, &info));
        if (info.split_k != want[i][1] || info.cluster_x != want[i][1])
            fail_msg("split_k=%u gave %u (cluster %u), want %u", want[i][0], info.split_k, info.cluster_x,
                     want[i][1]);
        bc_gemm_plan_destroy(plan);
    }
    bc_device_close(e.dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_arena_blocks),       ft_test(test_foreign_allocations), ft_test(test_overlaps),
        ft_test(test_region_overlap_exact), ft_test(test_set_pointers_checks), ft_test(test_registered_ranges),
        ft_test(test_split_k_contract),
    };
    return cmocka_run_group_tests_name("operands", tests, NULL, NULL);
}
