/* Streams, bounded waits, events and copies, over the fake driver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"
#include "internal.h"

static bc_device *open_dev(bc_sched_policy sched)
{
    bc_device_config cfg = ft_config();
    cfg.sched = sched;
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    return dev;
}

static void test_create_priority_clamped(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_SPIN);
    uint64_t destroyed = fake_entry_calls(FAKE_E_cuStreamDestroy);
    const int asked[] = {-100, -5, -3, 0, 7, 100};
    const int want[] = {-5, -5, -3, 0, 0, 0};
    bc_stream *s[6];
    for (int i = 0; i < 6; i++) {
        int eff = 12345;
        assert_ok(bc_stream_create(dev, asked[i], &s[i], &eff));
        assert_int_equal(eff, want[i]);
        fake_stream_info si;
        assert_true(fake_stream_query(bc_stream_handle(s[i]), &si));
        assert_int_equal(si.priority, want[i]);
        assert_int_equal(si.flags, CU_STREAM_NON_BLOCKING);
        assert_ptr_equal(si.ctx, fake_current_context());
    }
    bc_stream *t = NULL;
    assert_ok(bc_stream_create(dev, 0, &t, NULL)); /* effective priority not wanted */
    bc_stream_destroy(t);
    for (int i = 0; i < 6; i++)
        bc_stream_destroy(s[i]);
    assert_int_equal(fake_entry_calls(FAKE_E_cuStreamDestroy) - destroyed, 7);
    bc_stream_destroy(NULL);
    bc_device_close(dev);
}

static void test_stream_bad_arguments(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_SPIN);
    uint64_t created = fake_entry_calls(FAKE_E_cuStreamCreateWithPriority);
    bc_stream *s = (bc_stream *)(uintptr_t)0x5e5e;
    int eff = 77;
    assert_status(bc_stream_create(NULL, 0, &s, &eff), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_stream_create(dev, 0, NULL, &eff), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_stream_wrap(NULL, NULL, &s), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_stream_wrap(dev, NULL, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(s, (bc_stream *)(uintptr_t)0x5e5e);
    assert_int_equal(eff, 77);
    assert_status(bc_stream_wait(NULL, 0), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_stream_query(NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_stream_set_wait_policy(NULL, BC_SCHED_SPIN), BC_ERR_INVALID_ARGUMENT);
    assert_null(bc_stream_handle(NULL));

    bc_stream *ok = NULL;
    assert_ok(bc_stream_create(dev, 0, &ok, NULL));
    assert_status(bc_stream_set_wait_policy(ok, (bc_sched_policy)3), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_stream_set_wait_policy(ok, (bc_sched_policy)-1), BC_ERR_INVALID_ARGUMENT);

    bc_event *e = NULL;
    float ms = -1;
    assert_status(bc_event_create(NULL, &e), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_event_create(dev, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_ok(bc_event_create(dev, &e));
    assert_status(bc_event_record(NULL, ok), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_event_record(e, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_event_elapsed_ms(NULL, e, &ms), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_event_elapsed_ms(e, NULL, &ms), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_event_elapsed_ms(e, e, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_true(ms == -1);
    bc_event_destroy(NULL);
    assert_int_equal(fake_entry_calls(FAKE_E_cuStreamCreateWithPriority) - created, 1);
    bc_device_close(dev);
}

/* A wrapped stream is used but never destroyed by barecuda. */
static void test_wrap(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_SPIN);
    const bc__driver *t = fake_table();
    CUstream ext = NULL;
    assert_int_equal(t->cuStreamCreateWithPriority(&ext, 0, -1), CUDA_SUCCESS);

    bc_stream *w = NULL;
    assert_ok(bc_stream_wrap(dev, ext, &w));
    assert_ptr_equal(bc_stream_handle(w), ext);
    fake_set_busy(2);
    assert_status(bc_stream_query(w), BC_ERR_NOT_READY);
    assert_ok(bc_stream_wait(w, 1000000000u));
    uint64_t destroyed = fake_entry_calls(FAKE_E_cuStreamDestroy);
    bc_stream_destroy(w);
    assert_true(fake_stream_query(ext, NULL));
    assert_int_equal(fake_entry_calls(FAKE_E_cuStreamDestroy), destroyed);

    /* forgotten wrappers are forgotten on close, the handle still lives */
    bc_stream *w2 = NULL;
    assert_ok(bc_stream_wrap(dev, ext, &w2));
    assert_ok(bc_stream_wrap(dev, NULL, &w)); /* the legacy default stream */
    assert_ok(bc_stream_wait(w, 0));
    bc_device_close(dev);
    assert_true(fake_stream_query(ext, NULL));
    /* every stream barecuda created was destroyed, and only those */
    assert_int_equal(fake_entry_calls(FAKE_E_cuStreamDestroy),
                     fake_entry_calls(FAKE_E_cuStreamCreateWithPriority) - 1);
    assert_int_equal(t->cuStreamDestroy(ext), CUDA_SUCCESS);
}

/* A stream of another context is refused at wrap time (the calls that
 * take a stream trust its device), and so is a handle the driver does not
 * know; the default-stream handles are taken as they are. */
static void test_wrap_checks_the_context(void **state)
{
    fake_device d[2];
    fake_device_defaults(&d[0]);
    fake_device_defaults(&d[1]);
    fake_set_devices(d, 2);
    bc_device_config cfg = ft_config();
    bc_device *a = NULL, *b = NULL;
    assert_ok(bc_device_open(&cfg, &a));
    cfg.ordinal = 1;
    assert_ok(bc_device_open(&cfg, &b)); /* b's context is current now */
    const bc__driver *t = fake_table();
    CUstream on_b = NULL;
    assert_int_equal(t->cuStreamCreateWithPriority(&on_b, 0, 0), CUDA_SUCCESS);
    bc_stream *w = (bc_stream *)(uintptr_t)0x77;
    assert_status(bc_stream_wrap(a, on_b, &w), BC_ERR_INVALID_ARGUMENT);
    ft_assert_last(BC_ERR_INVALID_ARGUMENT, "s", 0);
    assert_ptr_equal(w, (bc_stream *)(uintptr_t)0x77);
    assert_ok(bc_device_bind_thread(a)); /* a's context current: b's stream is still b's */
    assert_ok(bc_stream_wrap(b, on_b, &w));
    bc_stream_destroy(w);
    assert_ok(bc_stream_wrap(a, CU_STREAM_LEGACY, &w));
    bc_stream_destroy(w);
    assert_int_equal(t->cuStreamDestroy(on_b), CUDA_SUCCESS);
    w = (bc_stream *)(uintptr_t)0x77;
    assert_status(bc_stream_wrap(b, on_b, &w), BC_ERR_DRIVER); /* destroyed: the driver does not know it */
    ft_assert_last(BC_ERR_DRIVER, "cuStreamGetCtx", CUDA_ERROR_INVALID_HANDLE);
    assert_ptr_equal(w, (bc_stream *)(uintptr_t)0x77);
    bc_device_close(a);
    bc_device_close(b);
}

static void test_wait_completes(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_SPIN);
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    for (int p = BC_SCHED_SPIN; p <= BC_SCHED_BLOCK; p++) {
        assert_ok(bc_stream_set_wait_policy(s, (bc_sched_policy)p));
        uint64_t before = fake_entry_calls(FAKE_E_cuStreamQuery);
        fake_set_busy(3);
        assert_ok(bc_stream_wait(s, 1000000000u));
        assert_int_equal(fake_entry_calls(FAKE_E_cuStreamQuery) - before, 4);
        fake_set_busy(100);
        assert_ok(bc_stream_wait(s, BC_WAIT_FOREVER));
    }
    /* already complete: one poll, even with a zero timeout */
    uint64_t before = fake_entry_calls(FAKE_E_cuStreamQuery);
    assert_ok(bc_stream_wait(s, 0));
    assert_int_equal(fake_entry_calls(FAKE_E_cuStreamQuery) - before, 1);
    bc_device_close(dev);
}

/* The fake stream never completes: each policy gives up within bounds. */
static void test_wait_timeout_each_policy(void **state)
{
    uint64_t polls[3];
    for (int p = BC_SCHED_SPIN; p <= BC_SCHED_BLOCK; p++) {
        bc_device *dev = open_dev((bc_sched_policy)p); /* the stream inherits the policy */
        bc_stream *s = NULL;
        assert_ok(bc_stream_create(dev, 0, &s, NULL));
        fake_set_busy(FAKE_BUSY_FOREVER);
        uint64_t q0 = fake_entry_calls(FAKE_E_cuStreamQuery);
        double t0 = ft_now_ms();
        bc_status st = bc_stream_wait(s, 5000000u); /* 5 ms */
        double dt = ft_now_ms() - t0;
        polls[p] = fake_entry_calls(FAKE_E_cuStreamQuery) - q0;
        assert_int_equal(st, BC_ERR_TIMEOUT);
        if (dt < 5.0 || dt > 50.0)
            fail_msg("policy %d: a 5 ms timeout returned after %.3f ms", p, dt);
        ft_assert_last(BC_ERR_TIMEOUT, "bc_stream_wait", 0);
        /* the work is still pending: waiting again times out again */
        assert_status(bc_stream_wait(s, 0), BC_ERR_TIMEOUT);
        fake_set_busy(0);
        assert_ok(bc_stream_wait(s, 0));
        bc_device_close(dev);
    }
    /* BLOCK sleeps between polls (2 us doubling to 100 us): few polls */
    if (polls[BC_SCHED_BLOCK] > 200)
        fail_msg("BLOCK polled %llu times in 5 ms", (unsigned long long)polls[BC_SCHED_BLOCK]);
    assert_true(polls[BC_SCHED_SPIN] >= polls[BC_SCHED_BLOCK]);
}

/* BLOCK's sleep doubles from BC__WAIT_SLEEP_MIN_NS and stops at 100 us,
 * the bound the contracts state (stream.h, device.h, README). */
static void test_block_sleep_capped(void **state)
{
    uint32_t ns = BC__WAIT_SLEEP_MIN_NS, longest = 0;
    for (int i = 0; i < 12; i++) {
        bc__wait_pause(BC_SCHED_BLOCK, &ns);
        longest = ns > longest ? ns : longest;
    }
    assert_int_equal(longest, 100000);
    assert_int_equal(ns, 100000);
}

/* The launch calls refuse NULL handles without a driver call. */
static void test_launch_null_handles(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_SPIN);
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    const uint64_t g0 = fake_entry_calls(FAKE_E_cuGraphLaunch), k0 = fake_entry_calls(FAKE_E_cuLaunchKernelEx);
    assert_status(bc_graph_launch(NULL, s), BC_ERR_INVALID_ARGUMENT);
    ft_assert_last(BC_ERR_INVALID_ARGUMENT, "bc_graph_launch", 0);
    assert_status(bc_graph_launch(NULL, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_gemm_launch(NULL, s), BC_ERR_INVALID_ARGUMENT);
    ft_assert_last(BC_ERR_INVALID_ARGUMENT, "bc_gemm_launch", 0);
    assert_status(bc_kernel_launch(NULL, s), BC_ERR_INVALID_ARGUMENT);
    ft_assert_last(BC_ERR_INVALID_ARGUMENT, "bc_kernel_launch", 0);
    assert_int_equal(fake_entry_calls(FAKE_E_cuGraphLaunch), g0);
    assert_int_equal(fake_entry_calls(FAKE_E_cuLaunchKernelEx), k0);
    bc_device_close(dev);
}

static void test_wait_errors(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_YIELD);
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    fake_fail_entry(FAKE_E_cuStreamQuery, 1, CUDA_ERROR_ILLEGAL_ADDRESS, 0);
    assert_status(bc_stream_wait(s, 1000000u), BC_ERR_DEVICE_LOST);
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuStreamQuery", CUDA_ERROR_ILLEGAL_ADDRESS);
    /* lost: every later call that would start or wait for work fails at
     * once, without the driver, even with nothing armed */
    fake_fail_clear();
    uint64_t calls = fake_calls();
    assert_status(bc_stream_wait(s, BC_WAIT_FOREVER), BC_ERR_DEVICE_LOST);
    assert_status(bc_stream_query(s), BC_ERR_DEVICE_LOST);
    bc_stream *s2 = NULL;
    bc_devptr p = 0;
    unsigned char buf[16] = {0};
    assert_status(bc_stream_create(dev, 0, &s2, NULL), BC_ERR_DEVICE_LOST);
    assert_status(bc_mem_alloc(dev, 256, &p), BC_ERR_DEVICE_LOST);
    assert_status(bc_memcpy_htod_async(s, 0x1000, buf, sizeof buf), BC_ERR_DEVICE_LOST);
    assert_int_equal(fake_calls(), calls);
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuStreamQuery", CUDA_ERROR_ILLEGAL_ADDRESS);
    bc__lost_reset(); /* test hook */
    dev->lost = 0;
    fake_set_busy(5);
    fake_fail_entry(FAKE_E_cuStreamQuery, 3, CUDA_ERROR_LAUNCH_FAILED, 0);
    assert_status(bc_stream_wait(s, BC_WAIT_FOREVER), BC_ERR_DEVICE_LOST);
    assert_int_equal(dev->lost, 1);
    bc__lost_reset();
    dev->lost = 0;
    fake_fail_entry(FAKE_E_cuStreamQuery, 1, CUDA_ERROR_INVALID_HANDLE, 0);
    assert_status(bc_stream_query(s), BC_ERR_DRIVER);
    ft_assert_last(BC_ERR_DRIVER, "cuStreamQuery", CUDA_ERROR_INVALID_HANDLE);
    fake_fail_clear();
    fake_set_busy(1);
    assert_status(bc_stream_query(s), BC_ERR_NOT_READY);
    assert_ok(bc_stream_query(s));
    bc_device_close(dev);
}

static void test_events(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_SPIN);
    bc_stream *s = NULL;
    bc_event *a = NULL, *b = NULL, *c = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    assert_ok(bc_event_create(dev, &a));
    assert_ok(bc_event_create(dev, &b));
    assert_ok(bc_event_create(dev, &c));

    float ms = -1;
    /* never recorded: the driver's CUDA_ERROR_INVALID_HANDLE */
    assert_status(bc_event_elapsed_ms(a, b, &ms), BC_ERR_DRIVER);
    ft_assert_last(BC_ERR_DRIVER, "cuEventElapsedTime", CUDA_ERROR_INVALID_HANDLE);
    assert_true(ms == -1);

    fake_set_event_tick_ms(0.25f);
    assert_ok(bc_event_record(a, s));
    assert_ok(bc_event_record(b, s));
    assert_ok(bc_event_elapsed_ms(a, b, &ms));
    assert_true(ms == 0.25f);
    fake_set_event_tick_ms(2.0f);
    assert_ok(bc_event_record(c, s));
    assert_ok(bc_event_elapsed_ms(a, c, &ms));
    assert_true(ms == 2.25f);

    /* recorded but not complete */
    fake_set_busy(FAKE_BUSY_FOREVER);
    ms = -1;
    assert_status(bc_event_elapsed_ms(a, c, &ms), BC_ERR_NOT_READY);
    assert_true(ms == -1);
    fake_set_busy(0);

    bc_event_destroy(b);
    assert_int_equal(fake_entry_calls(FAKE_E_cuEventDestroy), 1);
    fake_live_counts lc;
    fake_live(&lc);
    assert_int_equal(lc.events, 2);

    /* event creation failure leaks nothing */
    fake_fail_entry(FAKE_E_cuEventCreate, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    bc_event *d = (bc_event *)(uintptr_t)0x5e5e;
    assert_status(bc_event_create(dev, &d), BC_ERR_DRIVER);
    assert_ptr_equal(d, (bc_event *)(uintptr_t)0x5e5e);
    bc_device_close(dev);
}

/* bc_device_close releases streams and events the caller forgot. */
static void test_close_releases_forgotten(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_SPIN);
    fake_live_counts base; /* whatever the device keeps for itself */
    fake_live(&base);
    bc_stream *s[3];
    bc_event *e[2];
    for (int i = 0; i < 3; i++)
        assert_ok(bc_stream_create(dev, -i, &s[i], NULL));
    for (int i = 0; i < 2; i++)
        assert_ok(bc_event_create(dev, &e[i]));
    bc_stream_destroy(s[1]); /* one released by hand, from the middle */
    fake_live_counts lc;
    fake_live(&lc);
    assert_int_equal(lc.streams - base.streams, 2);
    assert_int_equal(lc.events - base.events, 2);
    bc_device_close(dev);
    assert_int_equal(fake_entry_calls(FAKE_E_cuStreamDestroy),
                     fake_entry_calls(FAKE_E_cuStreamCreateWithPriority));
    assert_int_equal(fake_entry_calls(FAKE_E_cuEventDestroy), fake_entry_calls(FAKE_E_cuEventCreate));
    assert_int_equal(fake_live_objects(), 0);
}

/* Copies through the pools reach the fake's memory byte for byte. */
static void test_copies(void **state)
{
    bc_device *dev = open_dev(BC_SCHED_SPIN);
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    bc_devptr d = 0;
    void *h = NULL;
    assert_ok(bc_mem_alloc(dev, 1000, &d));
    assert_ok(bc_host_alloc(dev, 1000, &h));
    assert_int_equal(d % BC_MEM_ALIGN, 0);
    assert_int_equal((uintptr_t)h % BC_MEM_ALIGN, 0);

    unsigned char src[1000], back[1000];
    for (int i = 0; i < 1000; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    assert_ok(bc_memcpy_htod(dev, d, src, sizeof src));
    assert_memory_equal((const void *)(uintptr_t)d, src, sizeof src);
    memset(back, 0, sizeof back);
    assert_ok(bc_memcpy_dtoh(dev, back, d, sizeof back));
    assert_memory_equal(back, src, sizeof src);

    assert_ok(bc_memset_d8_async(s, d, 0x5a, 500));
    assert_ok(bc_memcpy_dtoh_async(s, h, d, 1000));
    assert_ok(bc_stream_wait(s, 1000000000u));
    assert_int_equal(((unsigned char *)h)[0], 0x5a);
    assert_int_equal(((unsigned char *)h)[499], 0x5a);
    assert_int_equal(((unsigned char *)h)[500], src[500]);
    memcpy(h, src, 1000);
    assert_ok(bc_memcpy_htod_async(s, d + 256, h, 744));
    assert_memory_equal((const void *)(uintptr_t)(d + 256), src, 744);

    /* outside any allocation: the driver refuses */
    assert_status(bc_memcpy_htod(dev, 16, src, 4), BC_ERR_DRIVER);
    bc_error_detail ed;
    bc_last_error(&ed);
    assert_int_equal(ed.cu_result, CUDA_ERROR_INVALID_VALUE);
    assert_true(strncmp(ed.call, "cuMemcpyHtoD", 12) == 0); /* sync or async form */
    assert_status(bc_memcpy_htod(NULL, d, src, 4), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_memcpy_htod(dev, d, NULL, 4), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_memcpy_dtoh(dev, NULL, d, 4), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_memcpy_htod_async(NULL, d, src, 4), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_memcpy_dtoh_async(s, NULL, d, 4), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_memset_d8_async(NULL, d, 0, 4), BC_ERR_INVALID_ARGUMENT);

    /* no driver call for pool allocation */
    uint64_t calls = fake_calls();
    bc_devptr d2 = 0;
    assert_ok(bc_mem_alloc(dev, 4096, &d2));
    assert_ok(bc_mem_free(dev, d2));
    assert_int_equal(fake_calls(), calls);

    assert_ok(bc_mem_free(dev, d));
    assert_ok(bc_host_free(dev, h));
    bc_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_create_priority_clamped),
        ft_test(test_stream_bad_arguments),
        ft_test(test_wrap),
        ft_test(test_wait_completes),
        ft_test(test_wait_timeout_each_policy),
        ft_test(test_block_sleep_capped),
        ft_test(test_launch_null_handles),
        ft_test(test_wait_errors),
        ft_test(test_events),
        ft_test(test_close_releases_forgotten),
        ft_test(test_copies), ft_test(test_wrap_checks_the_context),
    };
    return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
