/* GPU smoke tests of the runtime: open in every scheduling mode and with the
 * primary context, pool allocation, host -> device -> host round trip, the
 * boot known-answer kernel, bounded waits on a kernel that does not finish,
 * and recovery afterwards. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm_abi.h"
#include "gpu_common.h"
#include "internal.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Opens with `cfg`, round-trips 4 MiB of pattern through a pool block on a
 * stream with a bounded wait, closes. */
static void roundtrip(const bc_device_config *cfg)
{
    bc_device *dev = NULL;
    CHECK_BC(bc_device_open(cfg, &dev));
    bc_stream *s = NULL;
    CHECK_BC(bc_stream_create(dev, 0, &s, NULL));
    const size_t n = 4u << 20;
    uint8_t *src = NULL, *dst = NULL;
    CHECK_BC(bc_host_alloc(dev, n, (void **)&src));
    CHECK_BC(bc_host_alloc(dev, n, (void **)&dst));
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)(i * 131u + 7u);
    memset(dst, 0, n);
    bc_devptr p = 0;
    CHECK_BC(bc_mem_alloc(dev, n, &p));
    CHECK_BC(bc_memcpy_htod_async(s, p, src, n));
    CHECK_BC(bc_memcpy_dtoh_async(s, dst, p, n));
    CHECK_BC(bc_stream_wait(s, 5ull * 1000000000ull));
    assert_memory_equal(src, dst, n);
    CHECK_BC(bc_mem_free(dev, p));
    CHECK_BC(bc_host_free(dev, src));
    CHECK_BC(bc_host_free(dev, dst));
    bc_device_close(dev);
}

static void test_open_every_mode(void **state)
{
    GPU_ENV_OR_SKIP(state);
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    for (int sched = BC_SCHED_SPIN; sched <= BC_SCHED_BLOCK; sched++) {
        cfg.sched = (bc_sched_policy)sched;
        cfg.use_primary_context = 0;
        roundtrip(&cfg);
        cfg.use_primary_context = 1;
        roundtrip(&cfg);
    }
    /* closing a device whose context was current leaves none current */
    CHECK_BC(bc_device_bind_thread(((gpu_env *)*state)->dev));
}

static void test_device_info(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    bc_device_info info;
    CHECK_BC(bc_device_query(env->dev, &info));
    print_message("  %s sm_%d%d, %d SMs, image %s\n", info.name, info.cc_major, info.cc_minor, info.sm_count,
                  info.image_arch);
    assert_true(info.sm_count > 0);
    assert_true(info.cc_major >= 9);
    assert_true(strlen(info.image_arch) > 0);
}

/* Launches the test-only kernel that spins until *flag != 0. */
static void launch_spin(gpu_env *env, volatile uint32_t *flag, uint64_t max_ns)
{
    bc_spin_params p = {(uint64_t)(uintptr_t)flag, max_ns};
    void *args[1] = {&p};
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = 32, lc.blockDimY = lc.blockDimZ = 1;
    lc.hStream = bc_stream_handle(env->s);
    CHECK_BC(BC_CU(cuLaunchKernelEx, &lc, env->dev->image.fn[BC_K_SPIN], args, NULL));
}

/* A kernel that does not finish: each wait policy times out within its
 * bound; releasing the kernel completes the stream and the device works. */
static void test_bounded_wait(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    volatile uint32_t *flag = NULL;
    CHECK_BC(bc_host_alloc(env->dev, 256, (void **)&flag));
    *flag = 0;
    launch_spin(env, flag, 20ull * 1000000000ull);
    const uint64_t timeout = 20ull * 1000000ull; /* 20 ms */
    for (int pol = BC_SCHED_SPIN; pol <= BC_SCHED_BLOCK; pol++) {
        CHECK_BC(bc_stream_set_wait_policy(env->s, (bc_sched_policy)pol));
        uint64_t t0 = now_ns();
        bc_status st = bc_stream_wait(env->s, timeout);
        uint64_t took = now_ns() - t0;
        print_message("  policy %d: %s after %.3f ms\n", pol, bc_status_string(st), took / 1e6);
        assert_int_equal(st, BC_ERR_TIMEOUT);
        assert_true(took >= timeout);
        assert_true(took < timeout + 5000000ull); /* fires within 5 ms of the bound */
    }
    *flag = 1;
    __sync_synchronize();
    CHECK_BC(bc_stream_set_wait_policy(env->s, BC_SCHED_SPIN));
    CHECK_BC(bc_stream_wait(env->s, 5ull * 1000000000ull));
    CHECK_BC(bc_host_free(env->dev, (void *)flag));
    /* the device is healthy afterwards: a round trip on the same stream */
    bc_devptr p = 0;
    uint32_t in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = 0xC0DE0000u + (uint32_t)i;
    CHECK_BC(bc_mem_alloc(env->dev, sizeof in, &p));
    CHECK_BC(bc_memcpy_htod(env->dev, p, in, sizeof in));
    CHECK_BC(bc_memcpy_dtoh(env->dev, out, p, sizeof out));
    assert_memory_equal(in, out, sizeof in);
    CHECK_BC(bc_mem_free(env->dev, p));
}

static void test_events_time_a_copy(void **state)
{
    gpu_env *env = GPU_ENV_OR_SKIP(state);
    bc_event *e0 = NULL, *e1 = NULL;
    CHECK_BC(bc_event_create(env->dev, &e0));
    CHECK_BC(bc_event_create(env->dev, &e1));
    bc_devptr p = 0;
    CHECK_BC(bc_mem_alloc(env->dev, 64u << 20, &p));
    CHECK_BC(bc_event_record(e0, env->s));
    CHECK_BC(bc_memset_d8_async(env->s, p, 0x5A, 64u << 20));
    CHECK_BC(bc_event_record(e1, env->s));
    CHECK_BC(bc_stream_wait(env->s, 5ull * 1000000000ull));
    float ms = -1.0f;
    CHECK_BC(bc_event_elapsed_ms(e0, e1, &ms));
    print_message("  64 MiB memset: %.3f ms\n", ms);
    assert_true(ms > 0.0f && ms < 100.0f);
    CHECK_BC(bc_mem_free(env->dev, p));
    bc_event_destroy(e0);
    bc_event_destroy(e1);
}

static int setup(void **state) { return gpu_env_setup(state, 256u << 20); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_info),
        cmocka_unit_test(test_open_every_mode),
        cmocka_unit_test(test_events_time_a_copy),
        cmocka_unit_test(test_bounded_wait),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_runtime", tests, setup, gpu_env_teardown);
}
