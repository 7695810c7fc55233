/* The resident executor's life on the GPU: a process that exits with the
 * kernel running leaves the GPU free (first: it forks before this process
 * touches CUDA); a step that outlives its wait bound times out and a later
 * wait sees it complete, a stop that outlives its bound leaves the executor
 * stopping (no ring) until a later stop ends it, and close_timeout stops a
 * running executor before waiting; stop is bounded and a stopped executor restarts;
 * closing the device with the executor running ends it; and, informative,
 * what sharing the GPU costs (a large GEMM beside an idle executor, the
 * executor's step beside a large GEMM) and how long closing a device takes
 * while a kernel of it still spins. Each
 * test opens its own device; without a GPU every test reports SKIPPED. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gemm_abi.h"
#include "gpu_common.h"
#include "internal.h"
#include "mlp.h"

#define SEC 1000000000ull
#define BIG 4096

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* Opens device 0 (own context) or returns 0; Hopper only. */
static int open_or_skip(bc_device **dev, bc_stream **s)
{
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.device_arena_bytes = 160u << 20;
    cfg.host_arena_bytes = 1u << 20;
    cfg.kernel_groups = BC_KERNELS_RESIDENT;
    if (bc_device_open(&cfg, dev) != BC_OK)
        return 0;
    bc_device_info in;
    if (bc_device_query(*dev, &in) != BC_OK || in.cc_major != 9 || in.cc_minor != 0 ||
        bc_stream_create(*dev, 0, s, NULL) != BC_OK) {
        bc_device_close(*dev);
        return 0;
    }
    return 1;
}

/* A BIG^3 GEMM (128x256 tiles: every SM, ~0.2 ms), timed over `runs`
 * launches; 0 when it did not finish within 10 s. */
static double big_gemm_us(bc_device *dev, bc_stream *s, int runs)
{
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = d.n = d.k = BIG;
    const size_t bytes = (size_t)BIG * BIG * 2;
    if (bc_mem_alloc(dev, bytes, &d.a) || bc_mem_alloc(dev, bytes, &d.b) || bc_mem_alloc(dev, bytes, &d.d))
        return 0;
    if (bc_memset_d8_async(s, d.a, 0x3C, bytes) || bc_memset_d8_async(s, d.b, 0x3C, bytes))
        return 0;
    bc_gemm_plan *plan = NULL;
    if (bc_gemm_plan_create(dev, &d, &plan))
        return 0;
    bc_gemm_launch(plan, s); /* warm-up */
    if (bc_stream_wait(s, 10 * SEC))
        return 0;
    const uint64_t t0 = now_ns();
    for (int i = 0; i < runs; i++)
        bc_gemm_launch(plan, s);
    if (bc_stream_wait(s, 10 * SEC))
        return 0;
    const double us = (double)(now_ns() - t0) / 1e3 / runs;
    bc_gemm_plan_destroy(plan);
    bc_mem_free(dev, d.a), bc_mem_free(dev, d.b), bc_mem_free(dev, d.d);
    return us;
}

/* The child: times the big GEMM, starts an executor on every SM, steps it,
 * and exits without stopping it. Exit 77: no usable GPU. */
static void child(int fd)
{
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    if (!open_or_skip(&dev, &s))
        _exit(77);
    double us = big_gemm_us(dev, s, 20);
    bc_rng rng = {1};
    bc_mlp m;
    const int64_t w[4] = {256, 1024, 1024, 64};
    bc_device_info in;
    bc_resident_config cfg;
    bc_resident_config_default(&cfg);
    bc_resident *res = NULL;
    if (us <= 0 || bc_device_query(dev, &in) || bc_mlp_create(dev, 16, w, 3, "sm90_64x32", 0, 1, &rng, &m))
        _exit(1);
    cfg.sm_count = (uint32_t)in.sm_count; /* every SM: a kernel left behind would starve the parent */
    if (bc_resident_create(dev, (const bc_gemm_plan *const *)m.plan, 3, &cfg, &res) ||
        bc_resident_start(res, s))
        _exit(2);
    for (int i = 0; i < 100; i++)
        if (bc_resident_step(res, 5 * SEC))
            _exit(3);
    if (write(fd, &us, sizeof us) != sizeof us)
        _exit(4);
    _exit(0); /* no stop, no close: the process's end must end the kernel */
}

static void test_exit_leaves_no_kernel(void **state)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child(fds[1]);
    }
    close(fds[1]);
    double before = 0;
    const ssize_t got = read(fds[0], &before, sizeof before);
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        skip();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != sizeof before)
        fail_msg("the child failed (status 0x%x)", status);
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    assert_true(open_or_skip(&dev, &s));
    const double after = big_gemm_us(dev, s, 20);
    print_message("  %dx%dx%d GEMM: %.1f us in the child before its executor, %.1f us here after it exited\n", BIG,
                  BIG, BIG, before, after);
    if (after <= 0)
        fail_msg("the GEMM did not finish within 10 s: a kernel still holds the GPU");
    assert_true(after < 1.5 * before);
    bc_device_close(dev);
}

/* A step longer than its wait bound: BC_ERR_TIMEOUT within the bound, no
 * second ring while it is pending, and a later wait sees it complete. */
static void test_timeout_recovers(void **state)
{
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    if (!open_or_skip(&dev, &s))
        skip();
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = d.n = d.k = BIG;
    d.config = "sm90_128x128";
    const size_t bytes = (size_t)BIG * BIG * 2;
    CHECK_BC(bc_mem_alloc(dev, bytes, &d.a));
    CHECK_BC(bc_mem_alloc(dev, bytes, &d.b));
    CHECK_BC(bc_mem_alloc(dev, bytes, &d.d));
    CHECK_BC(bc_memset_d8_async(s, d.a, 0x3C, bytes)); /* bf16 0x3C3C = 0.0114746...: exact products */
    CHECK_BC(bc_memset_d8_async(s, d.b, 0x3C, bytes));
    CHECK_BC(bc_stream_wait(s, 5 * SEC));
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(dev, &d, &plan));
    bc_resident *res = NULL;
    CHECK_BC(bc_resident_create(dev, (const bc_gemm_plan *const *)&plan, 1, NULL, &res));
    CHECK_BC(bc_resident_start(res, s));
    for (int i = 0; i < 3; i++) {
        CHECK_BC(bc_resident_ring(res));
        assert_int_equal(bc_resident_ring(res), BC_ERR_NOT_READY);
        const uint64_t t0 = now_ns();
        assert_int_equal(bc_resident_wait(res, 10000), BC_ERR_TIMEOUT); /* 10 us: a 4096^3 step takes ~0.3 ms */
        const uint64_t took = now_ns() - t0;
        assert_true(took >= 10000 && took < 2000000);
        CHECK_BC(bc_resident_wait(res, 5 * SEC));
    }
    uint16_t row[8];
    CHECK_BC(bc_memcpy_dtoh(dev, row, d.d + (bc_devptr)(BIG - 1) * BIG * 2, sizeof row));
    const double v = 0.011474609375 * 0.011474609375 * BIG; /* 0.5393..., bf16 0x3F0A */
    for (int i = 0; i < 8; i++)
        assert_true(bc_bf16_to_f32_host(row[i]) > v * 0.99 && bc_bf16_to_f32_host(row[i]) < v * 1.01);
    bc_resident_info in;
    CHECK_BC(bc_resident_query(res, &in));
    assert_int_equal(in.steps_done, 3);
    /* A stop that outlives its bound (a step of 0.16-0.3 ms in progress, 10 us
     * given) leaves the executor stopping: ring is refused until a stop
     * returns BC_OK, the rung step still completes, and it restarts. */
    CHECK_BC(bc_resident_ring(res));
    assert_int_equal(bc_resident_stop(res, 10000), BC_ERR_TIMEOUT);
    assert_int_equal(bc_resident_ring(res), BC_ERR_INVALID_ARGUMENT);
    CHECK_BC(bc_resident_stop(res, SEC));
    CHECK_BC(bc_resident_query(res, &in));
    assert_int_equal(in.steps_done, 4);
    assert_int_equal(in.running, 0);
    CHECK_BC(bc_resident_start(res, s));
    CHECK_BC(bc_resident_step(res, 5 * SEC));
    CHECK_BC(bc_resident_query(res, &in));
    assert_int_equal(in.steps_done, 5);
    /* close_timeout with the executor running and idle: it stops the
     * executor before waiting for the streams, so the close succeeds well
     * within its bound and the GPU is free afterwards. */
    const uint64_t t0 = now_ns();
    assert_int_equal(bc_device_close_timeout(dev, SEC), BC_OK);
    const double ms = (double)(now_ns() - t0) / 1e6;
    print_message("  close_timeout(1 s) with the executor running: %.2f ms\n", ms);
    assert_true(ms < 500.0);
    assert_true(open_or_skip(&dev, &s));
    assert_true(big_gemm_us(dev, s, 2) > 0);
    bc_device_close(dev);
}

/* Stop is bounded and leaves the stream idle; a stopped executor restarts
 * and computes; closing the device with it running ends it promptly. */
static void test_stop_restart_close(void **state)
{
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    if (!open_or_skip(&dev, &s))
        skip();
    bc_rng rng = {bc_ref_seed()};
    bc_mlp m;
    const int64_t w[4] = {256, 1024, 1024, 64};
    CHECK_BC(bc_mlp_create(dev, 16, w, 3, "sm90_64x32", 0, 1, &rng, &m));
    bc_resident *res = NULL;
    CHECK_BC(bc_resident_create(dev, (const bc_gemm_plan *const *)m.plan, 3, NULL, &res));
    for (int round = 0; round < 3; round++) {
        CHECK_BC(bc_resident_start(res, s));
        CHECK_BC(bc_mlp_new_input(dev, &m, &rng, NULL));
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        size_t bad = 0, checked = 0;
        CHECK_BC(bc_mlp_check(dev, &m, NULL, &bad, &checked));
        assert_int_equal(bad, 0);
        const uint64_t t0 = now_ns();
        CHECK_BC(bc_resident_stop(res, SEC));
        print_message("  round %d: stop took %.1f us\n", round, (double)(now_ns() - t0) / 1e3);
        CHECK_BC(bc_stream_query(s));
    }
    bc_resident_info in;
    CHECK_BC(bc_resident_query(res, &in));
    assert_int_equal(in.steps_done, 3);
    assert_int_equal(in.running, 0);
    CHECK_BC(bc_resident_start(res, s));
    CHECK_BC(bc_resident_step(res, 5 * SEC));
    const uint64_t t0 = now_ns();
    bc_device_close(dev); /* running: close stops it */
    const double ms = (double)(now_ns() - t0) / 1e6;
    print_message("  close with the executor running: %.2f ms\n", ms);
    assert_true(ms < 1000.0);
    assert_true(open_or_skip(&dev, &s)); /* the GPU is usable again */
    assert_true(big_gemm_us(dev, s, 2) > 0);
    bc_device_close(dev);
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* p50 and p99 of `n` MLP steps, us. */
static void step_percentiles(bc_resident *res, int n, double *p50, double *p99)
{
    uint64_t *ns = malloc((size_t)n * sizeof *ns);
    for (int i = 0; i < n; i++) {
        const uint64_t t0 = now_ns();
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        ns[i] = now_ns() - t0;
    }
    qsort(ns, (size_t)n, sizeof *ns, cmp_u64);
    *p50 = ns[n / 2] / 1e3, *p99 = ns[n * 99 / 100] / 1e3;
    free(ns);
}

/* Informative: what sharing the GPU within one process costs. A 4096^3
 * GEMM on another stream alone, beside an idle MLP executor (its default
 * grid, then half the SMs); and the MLP step alone and while that GEMM runs
 * over and over on the other stream. */
static void test_sharing_cost(void **state)
{
    bc_device *dev = NULL;
    bc_stream *s = NULL, *other = NULL;
    if (!open_or_skip(&dev, &s))
        skip();
    CHECK_BC(bc_stream_create(dev, 0, &other, NULL));
    bc_device_info di;
    CHECK_BC(bc_device_query(dev, &di));
    bc_rng rng = {bc_ref_seed()};
    bc_mlp m;
    const int64_t w[4] = {256, 1024, 1024, 64};
    CHECK_BC(bc_mlp_create(dev, 16, w, 3, "sm90_64x32", 0, 1, &rng, &m));
    const double alone = big_gemm_us(dev, other, 20);
    print_message("  INFORMATIVE: %dx%dx%d GEMM alone: %.1f us\n", BIG, BIG, BIG, alone);
    const uint32_t grids[2] = {(uint32_t)di.sm_count / 2, 0}; /* half the SMs, then the default grid */
    bc_resident *res = NULL;
    for (int g = 0; g < 2; g++) {
        bc_resident_config cfg;
        bc_resident_config_default(&cfg);
        cfg.sm_count = grids[g];
        CHECK_BC(bc_resident_create(dev, (const bc_gemm_plan *const *)m.plan, 3, &cfg, &res));
        CHECK_BC(bc_resident_start(res, s));
        CHECK_BC(bc_resident_step(res, 5 * SEC));
        bc_resident_info in;
        CHECK_BC(bc_resident_query(res, &in));
        const double beside = big_gemm_us(dev, other, 20);
        print_message("  INFORMATIVE: the same beside an idle executor holding %u of %d SMs: %.1f us (x%.2f)\n",
                      in.sm_count, di.sm_count, beside, beside / alone);
        assert_true(beside > 0);
        if (g == 0) {
            CHECK_BC(bc_resident_stop(res, SEC));
            bc_resident_destroy(res);
        }
    }
    double p50, p99, q50, q99;
    step_percentiles(res, 2000, &p50, &p99);
    /* the GEMM again and again on the other stream while stepping */
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = d.n = d.k = BIG;
    CHECK_BC(bc_mem_alloc(dev, (size_t)BIG * BIG * 2, &d.a));
    CHECK_BC(bc_mem_alloc(dev, (size_t)BIG * BIG * 2, &d.b));
    CHECK_BC(bc_mem_alloc(dev, (size_t)BIG * BIG * 2, &d.d));
    CHECK_BC(bc_memset_d8_async(other, d.a, 0x3C, (size_t)BIG * BIG * 2));
    CHECK_BC(bc_memset_d8_async(other, d.b, 0x3C, (size_t)BIG * BIG * 2));
    bc_gemm_plan *load = NULL;
    CHECK_BC(bc_gemm_plan_create(dev, &d, &load));
    for (int i = 0; i < 200; i++)
        CHECK_BC(bc_gemm_launch(load, other));
    step_percentiles(res, 2000, &q50, &q99);
    const int load_done = bc_stream_query(other) == BC_OK;
    CHECK_BC(bc_stream_wait(other, 30 * SEC));
    print_message("  INFORMATIVE: MLP step alone p50 %.2f / p99 %.2f us; beside the GEMM%s p50 %.2f / p99 %.2f us\n",
                  p50, p99, load_done ? " (which finished before the steps did)" : "", q50, q99);
    CHECK_BC(bc_resident_stop(res, SEC));
    bc_device_close(dev);
}

/* Closing a device while one of its kernels still spins (the test kernel,
 * released after 5 s by its own safety net): as barecuda does for a
 * resident kernel that did not stop (the device abandoned: close returns at
 * once, and another device opens and runs beside the spinning kernel), and
 * the ordinary close (informative: it waits for the kernel). */
static void test_close_with_spinning_kernel(void **state)
{
    for (int abandoned = 1; abandoned >= 0; abandoned--) {
        bc_device *dev = NULL;
        bc_stream *s = NULL;
        if (!open_or_skip(&dev, &s))
            skip();
        volatile uint32_t *flag = NULL;
        CHECK_BC(bc_host_alloc(dev, 256, (void **)&flag));
        *flag = 0;
        bc_spin_params p = {(uint64_t)(uintptr_t)flag, 5 * SEC};
        void *args[1] = {&p};
        CUlaunchConfig lc;
        memset(&lc, 0, sizeof lc);
        lc.gridDimX = lc.gridDimY = lc.gridDimZ = 1;
        lc.blockDimX = 32, lc.blockDimY = lc.blockDimZ = 1;
        lc.hStream = bc_stream_handle(s);
        CHECK_BC(BC_CU(cuLaunchKernelEx, &lc, dev->image.fn[BC_K_SPIN], args, NULL));
        assert_int_equal(bc_stream_wait(s, 1000000), BC_ERR_TIMEOUT); /* it spins */
        dev->abandoned_kernels = abandoned;
        const uint64_t t0 = now_ns();
        bc_device_close(dev);
        const double ms = (double)(now_ns() - t0) / 1e6;
        print_message("  INFORMATIVE: close with a kernel spinning, %s: %.1f ms (the kernel would end after 5000 ms)\n",
                      abandoned ? "a resident kernel that did not stop: abandoned" : "ordinary close", ms);
        if (abandoned)
            assert_true(ms < 100.0); /* nothing waited for the kernel */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_leaves_no_kernel), /* first: it forks before CUDA is initialised here */
        cmocka_unit_test(test_timeout_recovers),
        cmocka_unit_test(test_stop_restart_close),
        cmocka_unit_test(test_sharing_cost),
        cmocka_unit_test(test_close_with_spinning_kernel),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_resident_life", tests, NULL, NULL);
}
