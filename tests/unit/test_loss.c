/* Losing the GPU, on the fake driver's model of a poisoned process and of a
 * close that waits for running kernels:
 * - the sticky-error set (cuda.h's "the process must be terminated");
 * - after a kernel fault every later call fails fast with
 *   BC_ERR_DEVICE_LOST, on this device and any other, without the driver;
 *   closing still releases everything; reopening is refused, and the driver
 *   itself refuses new contexts (what the H100 showed);
 * - bc_device_close waits for a running kernel; bc_device_close_timeout
 *   does not, abandons the device and leaves the thread usable;
 * - a failed open leaves the thread's current context as it found it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"
#include "gemm_abi.h"
#include "internal.h"

static bc_device *open_dev(int primary, int kernels)
{
    bc_device_config cfg = ft_config();
    cfg.use_primary_context = primary;
    cfg.skip_kernel_load = !kernels;
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    return dev;
}

static void test_sticky_set(void **state)
{
    static const CUresult sticky[] = {CUDA_ERROR_ILLEGAL_ADDRESS,     CUDA_ERROR_LAUNCH_TIMEOUT,
                                      CUDA_ERROR_LAUNCH_FAILED,       CUDA_ERROR_ILLEGAL_INSTRUCTION,
                                      CUDA_ERROR_MISALIGNED_ADDRESS,  CUDA_ERROR_INVALID_ADDRESS_SPACE,
                                      CUDA_ERROR_INVALID_PC,          CUDA_ERROR_HARDWARE_STACK_ERROR,
                                      CUDA_ERROR_TENSOR_MEMORY_LEAK,  CUDA_ERROR_ASSERT,
                                      CUDA_ERROR_ECC_UNCORRECTABLE,   CUDA_ERROR_CONTAINED,
                                      CUDA_ERROR_MPS_CLIENT_TERMINATED, CUDA_ERROR_EXTERNAL_DEVICE};
    static const CUresult not_sticky[] = {CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_INVALID_VALUE,
                                          CUDA_ERROR_OUT_OF_MEMORY,        CUDA_ERROR_NOT_READY,
                                          CUDA_ERROR_INVALID_CONTEXT,      CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                                          CUDA_ERROR_UNKNOWN};
    for (size_t i = 0; i < sizeof sticky / sizeof *sticky; i++)
        assert_true(bc__cu_is_sticky(sticky[i]));
    for (size_t i = 0; i < sizeof not_sticky / sizeof *not_sticky; i++)
        assert_false(bc__cu_is_sticky(not_sticky[i]));

    /* 709 is a usage error: reported as a driver failure, the process stays healthy */
    bc_device *dev = open_dev(0, 0);
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    fake_fail_entry(FAKE_E_cuStreamQuery, 1, CUDA_ERROR_CONTEXT_IS_DESTROYED, 0);
    assert_status(bc_stream_query(s), BC_ERR_DRIVER);
    assert_int_equal(bc__lost_result(), 0);
    assert_ok(bc_stream_query(s));
    /* 702 and 721 lose the process */
    fake_fail_entry(FAKE_E_cuStreamQuery, 1, CUDA_ERROR_LAUNCH_TIMEOUT, 0);
    assert_status(bc_stream_wait(s, 1000000), BC_ERR_DEVICE_LOST);
    assert_int_equal(bc__lost_result(), CUDA_ERROR_LAUNCH_TIMEOUT);
    bc__lost_reset();
    dev->lost = 0;
    fake_fail_entry(FAKE_E_cuStreamQuery, 1, CUDA_ERROR_TENSOR_MEMORY_LEAK, 0);
    assert_status(bc_stream_query(s), BC_ERR_DEVICE_LOST);
    assert_int_equal(bc__lost_result(), CUDA_ERROR_TENSOR_MEMORY_LEAK);
    bc_device_close(dev);
}

/* A kernel stores to a bad address: the wait reports the loss; from then on
 * everything fails fast, on both devices, closing still cleans up, and a
 * reopen is refused both by barecuda and, behind it, by the driver. */
static void test_kernel_fault_loses_the_process(void **state)
{
    bc_device *dev = open_dev(0, 1), *other = open_dev(0, 1); /* other: opened before the fault */
    assert_ok(bc_device_bind_thread(dev));
    bc_stream *s = NULL, *so = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    assert_ok(bc_stream_create(other, 0, &so, NULL));
    bc_devptr a = 0, b = 0, d = 0;
    assert_ok(bc_mem_alloc(dev, 64 * 64 * 2, &a));
    assert_ok(bc_mem_alloc(dev, 64 * 64 * 2, &b));
    assert_ok(bc_mem_alloc(dev, 64 * 64 * 2, &d));
    bc_gemm_desc g;
    bc_gemm_desc_default(&g);
    g.m = g.n = g.k = 64, g.a = a, g.b = b, g.d = d;
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(dev, &g, &plan));

    fake_fault_next_launch(CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_ok(bc_gemm_launch(plan, s)); /* queued: the fault comes later */
    assert_status(bc_stream_wait(s, 1000000000u), BC_ERR_DEVICE_LOST);
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuStreamQuery", CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(dev->lost, 1);

    uint64_t calls = fake_calls();
    bc_gemm_plan *p2 = NULL;
    bc_stream *s2 = NULL;
    bc_event *ev = NULL;
    bc_devptr x = 0;
    unsigned char buf[64];
    assert_status(bc_gemm_plan_create(dev, &g, &p2), BC_ERR_DEVICE_LOST);
    assert_status(bc_gemm_plan_set_pointers(plan, a, b, 0, d, 0), BC_ERR_DEVICE_LOST);
    assert_status(bc_stream_wait(s, BC_WAIT_FOREVER), BC_ERR_DEVICE_LOST);
    assert_status(bc_stream_create(dev, 0, &s2, NULL), BC_ERR_DEVICE_LOST);
    assert_status(bc_event_create(dev, &ev), BC_ERR_DEVICE_LOST);
    assert_status(bc_mem_alloc(dev, 256, &x), BC_ERR_DEVICE_LOST);
    assert_status(bc_memcpy_dtoh(dev, buf, d, sizeof buf), BC_ERR_DEVICE_LOST);
    assert_status(bc_mem_register(dev, 0x1000, 256), BC_ERR_DEVICE_LOST);
    assert_status(bc_stream_create(other, 0, &s2, NULL), BC_ERR_DEVICE_LOST); /* process-wide */
    assert_status(bc_selftest_smoke(other, so, NULL), BC_ERR_DEVICE_LOST);
    assert_int_equal(fake_calls(), calls); /* none of these asked the driver */
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "restart the process"));
    assert_string_equal(det.call, "cuStreamQuery"); /* the call that lost it */
    /* the launch is one driver call and checks nothing: the driver refuses it */
    assert_status(bc_gemm_launch(plan, s), BC_ERR_DEVICE_LOST);
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuLaunchKernelEx", CUDA_ERROR_ILLEGAL_ADDRESS);

    double t0 = ft_now_ms();
    assert_status(bc_device_close_timeout(other, 5000000000ull), BC_ERR_DEVICE_LOST);
    bc_device_close(dev); /* releases everything; nothing waits */
    assert_true(ft_now_ms() - t0 < 500);
    assert_int_equal(fake_live_objects(), 0);

    /* reopening: refused by barecuda at once ... */
    calls = fake_calls();
    bc_device_config cfg = ft_config();
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DEVICE_LOST);
    assert_int_equal(fake_calls(), calls);
    /* ... and by the driver behind it (the H100: new contexts and primary
     * retains return the sticky error) */
    bc__lost_reset();
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DEVICE_LOST);
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuCtxCreate", CUDA_ERROR_ILLEGAL_ADDRESS);
    bc__lost_reset();
    cfg.use_primary_context = 1;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DEVICE_LOST);
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuDevicePrimaryCtxRetain", CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(fake_live_objects(), 0);
}

/* An injected sticky result poisons the fake as a real fault does. */
static void test_poison_on_sticky_injection(void **state)
{
    fake_set_poison_on_sticky(1);
    bc_device *dev = open_dev(1, 0);
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    fake_fail_entry(FAKE_E_cuStreamQuery, 1, CUDA_ERROR_MISALIGNED_ADDRESS, 0);
    assert_status(bc_stream_wait(s, 1000000u), BC_ERR_DEVICE_LOST);
    fake_fail_clear();
    assert_int_equal(fake_poisoned(), CUDA_ERROR_MISALIGNED_ADDRESS);
    bc_device_close(dev);
    assert_int_equal(fake_live_objects(), 0);
}

/* A kernel that runs on: bc_device_close waits for it, as the driver makes
 * it; bc_device_close_timeout returns in time and abandons the device. */
static void test_close_and_running_kernels(void **state)
{
    /* close blocks for the kernel's remaining time */
    bc_device *dev = open_dev(0, 1);
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    fake_set_kernel_duration_ms(150);
    assert_ok(bc_selftest_empty_launch(s));
    assert_status(bc_stream_wait(s, 5000000u), BC_ERR_TIMEOUT);
    double t0 = ft_now_ms();
    bc_device_close(dev);
    double took = ft_now_ms() - t0;
    print_message("  close with a 150 ms kernel running: %.1f ms\n", took);
    assert_true(took >= 100);
    assert_int_equal(fake_live_objects(), 0);

    /* an idle device: close_timeout closes and returns BC_OK */
    dev = open_dev(0, 1);
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    assert_ok(bc_selftest_empty_launch(s));
    assert_ok(bc_device_close_timeout(dev, 1000000000u)); /* waits the kernel out (<= 150 ms) */
    assert_int_equal(fake_live_objects(), 0);

    /* a kernel that outlives the bound: BC_ERR_TIMEOUT in time, device abandoned */
    CUcontext mine = NULL;
    assert_int_equal(fake_table()->cuCtxCreate(&mine, NULL, 0, 0, 0), CUDA_SUCCESS);
    dev = open_dev(0, 1);
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    bc_gemm_plan *plan = NULL;
    bc_event *ev = NULL;
    assert_ok(bc_event_create(dev, &ev));
    bc_devptr a = 0;
    assert_ok(bc_mem_alloc(dev, 64 * 64 * 2 * 3, &a));
    bc_gemm_desc g;
    bc_gemm_desc_default(&g);
    g.m = g.n = g.k = 64, g.a = a, g.b = a + 8192, g.d = a + 16384;
    assert_ok(bc_gemm_plan_create(dev, &g, &plan));
    fake_set_kernel_duration_ms(2000);
    assert_ok(bc_gemm_launch(plan, s));
    const CUcontext abandoned = dev->ctx;
    assert_true(fake_current_context() == abandoned);
    t0 = ft_now_ms();
    assert_status(bc_device_close_timeout(dev, 30000000u), BC_ERR_TIMEOUT);
    took = ft_now_ms() - t0;
    print_message("  close_timeout(30 ms) with a 2 s kernel running: %.1f ms\n", took);
    assert_true(took >= 30 && took < 500);
    bc_error_detail det;
    bc_last_error(&det);
    assert_string_equal(det.call, "bc_device_close_timeout");
    assert_non_null(strstr(det.message, "restart the process"));
    fake_live_counts live;
    fake_live(&live);
    assert_int_equal(live.contexts, 2); /* the abandoned one and ours */
    assert_int_equal(live.allocations, 1);
    assert_int_equal(live.modules, 1);
    assert_true(fake_current_context() != abandoned); /* the thread left the abandoned context */
    assert_int_equal(fake_table()->cuCtxSetCurrent(mine), CUDA_SUCCESS);
    /* the process goes on: another device opens and works beside the kernel */
    fake_set_kernel_duration_ms(0);
    fake_finish_kernels();
    bc_device *again = open_dev(0, 1);
    assert_ok(bc_stream_create(again, 0, &s, NULL));
    assert_ok(bc_selftest_empty_launch(s));
    assert_ok(bc_stream_wait(s, 1000000000u));
    unsigned char in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = (unsigned char)(i * 7 + 1);
    assert_ok(bc_mem_alloc(again, sizeof in, &a));
    assert_ok(bc_memcpy_htod(again, a, in, sizeof in));
    assert_ok(bc_memcpy_dtoh(again, out, a, sizeof out));
    assert_memory_equal(in, out, sizeof in);
    bc_device_close(again); /* was current: the thread is left with none (device.h) */
    assert_null(fake_current_context());

    /* test cleanup: the abandoned device kept its driver reference */
    assert_int_equal(fake_table()->cuCtxDestroy(mine), CUDA_SUCCESS);
    bc__driver_release();
    fake_reset();
}

/* close_timeout's bound covers all work of the context, also on a stream
 * barecuda does not know (the caller's own): with a bound, such work that
 * outlives it abandons the device at the bound; with a bound of 0, only the
 * streams barecuda knows are looked at, and the close then waits for the
 * other work as bc_device_close does (device.h). */
static void test_close_timeout_covers_the_context(void **state)
{
    for (int zero = 0; zero < 2; zero++) {
        bc_device *dev = open_dev(0, 1);
        bc_stream *known = NULL;
        assert_ok(bc_stream_create(dev, 0, &known, NULL)); /* idle */
        CUstream ext = NULL; /* the caller's stream: launched on through a wrapper, then forgotten */
        assert_int_equal(fake_table()->cuStreamCreateWithPriority(&ext, 0, 0), CUDA_SUCCESS);
        bc_stream *w = NULL;
        assert_ok(bc_stream_wrap(dev, ext, &w));
        fake_set_kernel_duration_ms(300);
        assert_ok(bc_selftest_empty_launch(w));
        bc_stream_destroy(w);
        const double t0 = ft_now_ms();
        const bc_status st = bc_device_close_timeout(dev, zero ? 0 : 20000000u);
        const double took = ft_now_ms() - t0;
        print_message("  close_timeout(%s) with 300 ms of work on the caller's stream: %s after %.1f ms\n",
                      zero ? "0" : "20 ms", bc_status_string(st), took);
        if (zero) {
            assert_ok(st); /* the known streams were idle; the close waited in the driver */
            assert_true(took >= 200);
        } else {
            assert_status(st, BC_ERR_TIMEOUT);
            assert_true(took >= 20 && took < 200);
        }
        fake_set_kernel_duration_ms(0);
        fake_finish_kernels();
        if (!zero)
            bc__driver_release(); /* the abandoned device kept its driver reference */
        fake_reset(); /* the caller's stream, and the abandoned context */
    }
}

/* A failed open leaves the thread's current context as it found it. */
static void test_failed_open_restores_current(void **state)
{
    static const fake_entry late[] = {FAKE_E_cuDeviceGetName, FAKE_E_cuStreamCreateWithPriority,
                                      FAKE_E_cuMemAlloc, FAKE_E_cuModuleLoadDataEx};
    CUcontext mine = NULL;
    assert_int_equal(fake_table()->cuInit(0), CUDA_SUCCESS);
    assert_int_equal(fake_table()->cuCtxCreate(&mine, NULL, 0, 0, 0), CUDA_SUCCESS);
    for (int with_own = 0; with_own <= 1; with_own++) {
        if (!with_own)
            assert_int_equal(fake_table()->cuCtxSetCurrent(NULL), CUDA_SUCCESS);
        for (int primary = 0; primary <= 1; primary++)
            for (size_t i = 0; i < sizeof late / sizeof *late; i++) {
                if (with_own)
                    assert_int_equal(fake_table()->cuCtxSetCurrent(mine), CUDA_SUCCESS);
                bc_device_config cfg = ft_config();
                cfg.use_primary_context = primary;
                cfg.skip_kernel_load = 0;
                bc_device *dev = NULL;
                fake_fail_entry(late[i], 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
                assert_true(bc_device_open(&cfg, &dev) != BC_OK);
                fake_fail_clear();
                if (fake_current_context() != (with_own ? mine : NULL))
                    fail_msg("failed %s open at %s left context %p current, expected %p",
                             primary ? "primary" : "own", fake_entry_name(late[i]), (void *)fake_current_context(),
                             with_own ? (void *)mine : NULL);
                assert_int_equal(fake_primary_refcount(0), 0);
            }
    }
    assert_int_equal(fake_table()->cuCtxDestroy(mine), CUDA_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_sticky_set),
        ft_test(test_kernel_fault_loses_the_process),
        ft_test(test_poison_on_sticky_injection),
        ft_test(test_close_and_running_kernels),
        ft_test(test_close_timeout_covers_the_context),
        ft_test(test_failed_open_restores_current),
    };
    return cmocka_run_group_tests_name("loss", tests, NULL, NULL);
}
