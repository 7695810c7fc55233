/* The resident executor's end on the fake driver: closing the device with
 * it running, the bounded close, a kernel that will not stop or whose end
 * the driver will not confirm (its memory kept, the device abandoned), and
 * a process that lost its GPU (waits, rings and creation refused at once).
 * The fake runs the kernel as a thread (fake_resident.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "resident_env.h"

#include "driver.h" /* bc__driver_release */

/* A wait for a step the lost process will never finish: BC_ERR_DEVICE_LOST
 * at once, not at the end of its 300 ms bound. */
static void wait_lost_at_once(bc_resident *res)
{
    const double t0 = ft_now_ms();
    assert_status(bc_resident_wait(res, 300000000ull), BC_ERR_DEVICE_LOST);
    assert_true(ft_now_ms() - t0 < 100.0);
}

/* Test cleanup after a lost process: the kernel let go, everything closed,
 * the driver reference the lost device kept dropped, the fake reset. */
static void end_lost(env *e, bc_resident *res)
{
    fake_set_resident_stall(0);
    bc_resident_destroy(res);
    bc_device_close(e->dev);
    bc__driver_release();
    fake_reset();
}

/* Closing the device with the executor running stops it first. */
static void test_close_stops_it(void **state)
{
    env e;
    bc_resident *res = started_mlp(&e);
    assert_ok(bc_resident_step(res, 5 * SEC));
    fake_live_counts c;
    fake_live(&c);
    assert_int_equal(c.residents, 1);
    bc_device_close(e.dev);
    assert_int_equal(fake_resident_misuse(), 0);
    assert_int_equal(fake_live_objects(), 0);
}

/* bc_device_close_timeout stops a running executor first, within its
 * bound, and closes everything: the executor's kernel, which ends only when
 * told to, must not spend the bound (the fake's cuCtxSynchronize waits for
 * resident kernels, as the driver does). */
static void test_close_timeout_stops_it(void **state)
{
    env e;
    bc_resident *res = started_mlp(&e);
    assert_ok(bc_resident_step(res, 5 * SEC));
    const double t0 = ft_now_ms();
    assert_ok(bc_device_close_timeout(e.dev, 2 * SEC));
    assert_true(ft_now_ms() - t0 < 1000.0);
    assert_int_equal(fake_resident_misuse(), 0);
    assert_int_equal(fake_live_objects(), 0);
}

/* An executor destroyed earlier whose stop timed out (its kernel has since
 * ended) does not make the bounded close give up: the streams are idle. */
static void test_close_timeout_after_abandoned_destroy(void **state)
{
    env e;
    bc_resident *res = started_mlp(&e);
    fake_set_resident_stall(1);
    bc_resident_destroy(res); /* its stop bound (1 s) passes: left running, its memory kept */
    fake_set_resident_stall(0); /* ... and it now sees the stop */
    fake_live_counts c;
    for (int i = 0; i < 1000; i++) {
        fake_live(&c);
        if (c.residents == 0)
            break;
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    assert_int_equal(c.residents, 0);
    const double t0 = ft_now_ms();
    assert_ok(bc_device_close_timeout(e.dev, 2 * SEC));
    assert_true(ft_now_ms() - t0 < 1000.0);
    assert_int_equal(fake_live_objects(), 0);
}

/* ... and abandons the device when the kernel does not stop within it. */
static void test_close_timeout_hung_kernel(void **state)
{
    env e;
    assert_non_null(started_mlp(&e));
    fake_set_resident_stall(1);
    const double t0 = ft_now_ms();
    assert_status(bc_device_close_timeout(e.dev, 100000000), BC_ERR_TIMEOUT);
    const double took = ft_now_ms() - t0;
    assert_true(took >= 100.0 && took < 900.0);
    fake_live_counts c;
    fake_live(&c);
    assert_int_equal(c.residents, 1);
    assert_int_equal(c.contexts, 1);
    fake_set_resident_stall(0);
    bc__driver_release(); /* test cleanup: the abandoned device kept its driver reference */
    fake_reset();
}

/* A kernel that never answers: close gives it the stop bound, then
 * abandons the device (context, module, arenas and the kernel left to the
 * driver: each of those frees would wait for the kernel). */
static void test_close_with_hung_kernel(void **state)
{
    env e;
    assert_non_null(started_mlp(&e)); /* left to bc_device_close */
    fake_set_resident_stall(1);
    const double t0 = ft_now_ms();
    bc_device_close(e.dev);
    const double took = ft_now_ms() - t0;
    assert_true(took >= 1000.0 && took < 3000.0);
    assert_int_equal(fake_resident_misuse(), 0);
    fake_live_counts c;
    fake_live(&c);
    /* abandoned: nothing that would wait for the kernel was called */
    assert_int_equal(c.residents, 1);
    assert_int_equal(c.contexts, 1);
    assert_int_equal(c.modules, 3); /* the image and both optional cubins (opened with every group) */
    assert_int_equal(c.allocations, 1);
    assert_int_equal(c.host_allocations, 1);
    fake_set_resident_stall(0); /* the kernel now sees the stop it was rung */
    bc__driver_release();       /* test cleanup: the abandoned device kept its driver reference */
    fake_reset();
}

/* A destroy whose stream queries keep failing cannot know that the kernel
 * ended: the executor's program and doorbell stay allocated (no later
 * allocation is handed them under the kernel), and closing the device
 * leaves it to the process, as for a kernel that does not stop. */
static void test_destroy_unanswered_query(void **state)
{
    env e;
    bc_resident *res = started_mlp(&e);
    assert_ok(bc_resident_step(res, 5 * SEC));
    fake_set_resident_stall(1);
    fake_fail_entry(FAKE_E_cuStreamQuery, 1, CUDA_ERROR_INVALID_HANDLE, 1);
    bc_resident_destroy(res);
    fake_fail_clear();
    assert_int_equal(e.dev->abandoned_kernels, 1);
    assert_int_equal(fake_resident_misuse(), 0);
    fake_live_counts c;
    fake_live(&c);
    assert_int_equal(c.residents, 1); /* still running */
    bc_device_close(e.dev);           /* abandoned: nothing freed under the kernel */
    assert_int_equal(fake_resident_misuse(), 0);
    fake_set_resident_stall(0);
    bc__driver_release(); /* test cleanup: the abandoned device kept its driver reference */
    fake_reset();
}

/* After a stop saw the kernel fault, a wait for the step it never finished
 * says so at once instead of spending its bound. */
static void test_wait_after_fault(void **state)
{
    env e;
    bc_resident *res = pending_step(&e);
    fake_poison(CUDA_ERROR_ILLEGAL_ADDRESS); /* the kernel faulted */
    assert_status(bc_resident_stop(res, SEC), BC_ERR_DEVICE_LOST);
    wait_lost_at_once(res);
    /* the process is lost: a new executor is refused at once, asking no driver */
    const uint64_t calls = fake_calls();
    bc_resident *other = NULL;
    assert_status(bc_resident_create(e.dev, plans_of(&e), LAYERS, NULL, &other), BC_ERR_DEVICE_LOST);
    assert_null(other);
    assert_int_equal(fake_calls(), calls);
    end_lost(&e, res);
}

/* A running executor on a process that lost its GPU elsewhere (another
 * stream's wait saw the sticky fault): its pending step's wait and the
 * next ring say so at once, still without a driver call. */
static void test_lost_while_running(void **state)
{
    env e;
    bc_resident *res = pending_step(&e);
    bc_stream *other = NULL;
    assert_ok(bc_stream_create(e.dev, 0, &other, NULL));
    fake_poison(CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_status(bc_stream_wait(other, SEC), BC_ERR_DEVICE_LOST);
    const uint64_t calls = fake_calls();
    wait_lost_at_once(res);
    assert_status(bc_resident_ring(res), BC_ERR_DEVICE_LOST);
    assert_int_equal(fake_calls(), calls);
    end_lost(&e, res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_close_stops_it),         ft_test(test_close_with_hung_kernel),
        ft_test(test_close_timeout_stops_it), ft_test(test_close_timeout_after_abandoned_destroy),
        ft_test(test_close_timeout_hung_kernel), ft_test(test_destroy_unanswered_query),
        ft_test(test_wait_after_fault),       ft_test(test_lost_while_running),
    };
    return cmocka_run_group_tests_name("resident_end", tests, NULL, NULL);
}
