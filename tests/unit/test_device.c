/* Device open/close over the fake driver: every scheduling policy and
 * context mode, arenas, several devices and threads. Driver loading and
 * errors: test_device_errors.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>

#include "fake_test.h"

#define SENTINEL ((bc_device *)(uintptr_t)0x5e5e)

static const unsigned sched_flag[] = {CU_CTX_SCHED_SPIN, CU_CTX_SCHED_YIELD,
                                      CU_CTX_SCHED_BLOCKING_SYNC};

static void check_default_info(const bc_device_info *in)
{
    assert_string_equal(in->name, "Fake H100");
    assert_int_equal(in->ordinal, 0);
    assert_int_equal(in->cc_major, 9);
    assert_int_equal(in->cc_minor, 0);
    assert_int_equal(in->sm_count, 132);
    assert_int_equal(in->smem_per_block_optin, 232448);
    assert_int_equal(in->l2_bytes, 50 << 20);
    assert_true(in->total_mem_bytes == (size_t)80 << 30);
    assert_int_equal(in->driver_version, 13000);
    assert_int_equal(in->stream_priority_least, 0);
    assert_int_equal(in->stream_priority_greatest, -5);
    assert_string_equal(in->image_arch, "");
}

static void test_open_own_context_each_policy(void **state)
{
    for (int p = BC_SCHED_SPIN; p <= BC_SCHED_BLOCK; p++) {
        bc_device_config cfg = ft_config();
        cfg.sched = (bc_sched_policy)p;
        bc_device *dev = NULL;
        assert_ok(bc_device_open(&cfg, &dev));
        assert_non_null(dev);

        CUcontext ctx = fake_current_context();
        fake_ctx_info ci;
        assert_true(fake_ctx_query(ctx, &ci));
        assert_false(ci.primary);
        assert_int_equal(ci.device, 0);
        assert_int_equal(ci.flags & CU_CTX_SCHED_MASK, sched_flag[p]);

        bc_device_info in;
        assert_ok(bc_device_query(dev, &in));
        check_default_info(&in);
        assert_int_equal(in.sched, p);
        assert_int_equal(in.primary_context, 0);

        fake_live_counts lc;
        fake_live(&lc);
        assert_int_equal(lc.contexts, 1);
        assert_int_equal(lc.primary_contexts, 0);
        assert_int_equal(lc.allocations, 1);
        assert_int_equal(lc.host_allocations, 1);
        assert_true(fake_device_bytes_live() == cfg.device_arena_bytes);
        assert_true(fake_host_bytes_live() == cfg.host_arena_bytes);

        bc_device_close(dev);
        assert_int_equal(fake_live_objects(), 0);
        assert_null(fake_current_context());
    }
}

static void test_open_primary_context_each_policy(void **state)
{
    for (int p = BC_SCHED_SPIN; p <= BC_SCHED_BLOCK; p++) {
        bc_device_config cfg = ft_config();
        cfg.sched = (bc_sched_policy)p;
        cfg.use_primary_context = 1;
        bc_device *dev = NULL;
        assert_ok(bc_device_open(&cfg, &dev));
        assert_int_equal(fake_primary_refcount(0), 1);
        fake_ctx_info ci;
        assert_true(fake_ctx_query(fake_current_context(), &ci));
        assert_true(ci.primary);
        assert_int_equal(fake_entry_calls(FAKE_E_cuCtxCreate), 0);

        bc_device_info in;
        assert_ok(bc_device_query(dev, &in));
        check_default_info(&in);
        assert_int_equal(in.sched, p);
        assert_int_equal(in.primary_context, 1);

        bc_device_close(dev);
        assert_int_equal(fake_primary_refcount(0), 0);
        assert_int_equal(fake_live_objects(), 0);
    }
}

/* A process that also uses the CUDA runtime already holds the primary
 * context: barecuda takes and drops its own reference only. */
static void test_primary_context_shared(void **state)
{
    const bc__driver *t = fake_table();
    CUcontext rt = NULL;
    assert_int_equal(t->cuInit(0), CUDA_SUCCESS);
    assert_int_equal(t->cuDevicePrimaryCtxRetain(&rt, 0), CUDA_SUCCESS);

    bc_device_config cfg = ft_config();
    cfg.use_primary_context = 1;
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    assert_int_equal(fake_primary_refcount(0), 2);
    assert_ptr_equal(fake_current_context(), rt);
    bc_device_close(dev);
    assert_int_equal(fake_primary_refcount(0), 1);

    unsigned flags = 0;
    int active = 0;
    assert_int_equal(t->cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    assert_int_equal(active, 1);
    assert_int_equal(t->cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    assert_int_equal(fake_live_objects(), 0);
}

static void test_arenas_zero(void **state)
{
    bc_device_config cfg = ft_config();
    cfg.device_arena_bytes = 0;
    cfg.host_arena_bytes = 0;
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemAlloc), 0);
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemHostAlloc), 0);
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemHostRegister), 0);
    bc_pool_stats ps;
    assert_status(bc_pool_get_stats(dev, BC_POOL_DEVICE, &ps), BC_ERR_BAD_SIZE);
    assert_status(bc_pool_get_stats(dev, BC_POOL_HOST, &ps), BC_ERR_BAD_SIZE);
    bc_devptr p = 0;
    assert_true(bc_mem_alloc(dev, 256, &p) != BC_OK);
    /* nothing can be freed to a pool that does not exist: not ours */
    assert_status(bc_mem_free(dev, 0x100000), BC_ERR_FOREIGN_POINTER);
    assert_status(bc_host_free(dev, (void *)&ps), BC_ERR_FOREIGN_POINTER);
    bc_device_close(dev);
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemFree), 0);
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemFreeHost), 0);
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemHostUnregister), 0);
}

/* The pinned host arena: anonymous memory registered with the driver where
 * the device takes registered memory at its host address, 2 MiB aligned
 * from 2 MiB up; cuMemHostAlloc where either attribute says no. Each open
 * makes its one host object and close releases it. */
static void test_host_arena_source(void **state)
{
    const struct {
        int can_register, same_address;
        size_t bytes;
        int registers;
        size_t pinned; /* bytes the driver holds pinned */
    } cases[] = {
        {1, 1, 64u << 10, 1, 64u << 10},       {1, 1, (1u << 20) + 100, 1, (1u << 20) + 4096},
        {1, 1, 3u << 20, 1, 4u << 20},         {0, 1, 1u << 20, 0, 1u << 20},
        {1, 0, 1u << 20, 0, 1u << 20},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_reset();
        fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, cases[i].can_register);
        fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, cases[i].same_address);
        bc_device_config cfg = ft_config();
        cfg.device_arena_bytes = 0;
        cfg.host_arena_bytes = cases[i].bytes;
        bc_device *dev = NULL;
        assert_ok(bc_device_open(&cfg, &dev));
        assert_int_equal(fake_entry_calls(FAKE_E_cuMemHostRegister), cases[i].registers);
        assert_int_equal(fake_entry_calls(FAKE_E_cuMemHostAlloc), !cases[i].registers);
        assert_true(fake_host_bytes_live() == cases[i].pinned);
        void *p = NULL;
        assert_ok(bc_host_alloc(dev, 256, &p));
        assert_int_equal((uintptr_t)p % 4096, 0);
        if (cases[i].bytes >= (2u << 20))
            assert_int_equal((uintptr_t)p % (2u << 20), 0);
        bc_pool_stats ps;
        assert_ok(bc_pool_get_stats(dev, BC_POOL_HOST, &ps));
        assert_true(ps.arena_bytes <= cases[i].bytes && ps.arena_bytes + 4096 > cases[i].bytes);
        memset(p, 0x5a, 256); /* the caller's memory: writable */
        bc_device_close(dev);
        assert_int_equal(fake_entry_calls(FAKE_E_cuMemHostUnregister), cases[i].registers);
        assert_int_equal(fake_entry_calls(FAKE_E_cuMemFreeHost), !cases[i].registers);
        assert_int_equal(fake_live_objects(), 0);
    }
    /* a size no host pins (its roundings would wrap): refused, nothing left behind */
    fake_reset();
    bc_device_config big = ft_config();
    big.host_arena_bytes = SIZE_MAX - 4095;
    bc_device *none = SENTINEL;
    assert_status(bc_device_open(&big, &none), BC_ERR_BAD_SIZE);
    assert_ptr_equal(none, SENTINEL);
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemHostRegister), 0);
    assert_int_equal(fake_live_objects(), 0);
}

static void test_arenas_sizes(void **state)
{
    /* device arena only, then host arena only, then both */
    const size_t sizes[3][2] = {{2u << 20, 0}, {0, 128u << 10}, {4u << 20, 1u << 20}};
    for (int i = 0; i < 3; i++) {
        bc_device_config cfg = ft_config();
        cfg.device_arena_bytes = sizes[i][0];
        cfg.host_arena_bytes = sizes[i][1];
        bc_device *dev = NULL;
        assert_ok(bc_device_open(&cfg, &dev));
        assert_true(fake_device_bytes_live() == sizes[i][0]);
        assert_true(fake_host_bytes_live() == sizes[i][1]);
        bc_pool_stats ps;
        if (sizes[i][0]) {
            assert_ok(bc_pool_get_stats(dev, BC_POOL_DEVICE, &ps));
            assert_true(ps.arena_bytes == sizes[i][0]);
        }
        if (sizes[i][1]) {
            assert_ok(bc_pool_get_stats(dev, BC_POOL_HOST, &ps));
            assert_true(ps.arena_bytes == sizes[i][1]);
        }
        bc_device_close(dev);
        assert_int_equal(fake_live_objects(), 0);
    }
}

/* Every configuration: own/primary context x policy x arenas (none, device
 * only, host only, both); each open makes exactly its objects and close
 * releases them all. */
static void test_open_matrix(void **state)
{
    const size_t arenas[4][2] = {{0, 0}, {1u << 20, 0}, {0, 64u << 10}, {2u << 20, 128u << 10}};
    for (int primary = 0; primary <= 1; primary++)
        for (int p = BC_SCHED_SPIN; p <= BC_SCHED_BLOCK; p++)
            for (int a = 0; a < 4; a++) {
                bc_device_config cfg = ft_config();
                cfg.use_primary_context = primary;
                cfg.sched = (bc_sched_policy)p;
                cfg.device_arena_bytes = arenas[a][0];
                cfg.host_arena_bytes = arenas[a][1];
                bc_device *dev = NULL;
                assert_ok(bc_device_open(&cfg, &dev));
                fake_live_counts lc;
                fake_live(&lc);
                assert_int_equal(lc.contexts, !primary);
                assert_int_equal(lc.primary_contexts, primary);
                assert_int_equal(lc.allocations, arenas[a][0] != 0);
                assert_int_equal(lc.host_allocations, arenas[a][1] != 0);
                assert_int_equal(lc.modules, 0);
                bc_device_info in;
                assert_ok(bc_device_query(dev, &in));
                assert_int_equal(in.sched, p);
                assert_int_equal(in.primary_context, primary);
                bc_stream *s = NULL;
                assert_ok(bc_stream_create(dev, 0, &s, NULL));
                assert_ok(bc_stream_wait(s, 1000000u));
                bc_device_close(dev);
                if (fake_live_objects() != 0)
                    fail_msg("primary=%d sched=%d arenas=%d leaks %s", primary, p, a,
                             fake_live_string());
            }
}

/* Open with the embedded kernels loaded (cfg == NULL means the defaults,
 * which load them), check image_arch and the module/function records. */
static void test_open_with_kernels(void **state)
{
    bc_device *dev = NULL;
    assert_ok(bc_device_open(NULL, &dev));
    bc_device_info in;
    assert_ok(bc_device_query(dev, &in));
    assert_string_equal(in.image_arch, "sm_90a");
    fake_live_counts lc;
    fake_live(&lc);
    assert_int_equal(lc.modules, 1);
    assert_true(fake_last_module()->size > 0);
    bc_device_close(dev);
    assert_int_equal(fake_live_objects(), 0);
}

static void test_open_bad_arguments(void **state)
{
    bc_device_config cfg = ft_config();
    assert_status(bc_device_open(&cfg, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_device_config_default(NULL), BC_ERR_INVALID_ARGUMENT);

    bc_device *dev = SENTINEL;
    cfg.ordinal = -1;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_INVALID_ARGUMENT);
    cfg = ft_config();
    cfg.sched = (bc_sched_policy)3;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_INVALID_ARGUMENT);
    cfg = ft_config();
    cfg.max_allocations = (1u << 24) + 1;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(dev, SENTINEL);
    assert_int_equal(fake_calls(), 0); /* refused before the driver */

    bc_device_info in;
    bc_open_timings tm;
    assert_status(bc_device_query(NULL, &in), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_device_open_timings(NULL, &tm), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_device_bind_thread(NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_driver_version(NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_device_count(NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_last_error(NULL), BC_ERR_INVALID_ARGUMENT);

    cfg = ft_config();
    assert_ok(bc_device_open(&cfg, &dev));
    assert_status(bc_device_query(dev, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_device_open_timings(dev, NULL), BC_ERR_INVALID_ARGUMENT);
    bc_device_close(dev);
    bc_device_close(NULL); /* no-op */
}

static void test_ordinal_out_of_range(void **state)
{
    bc_device_config cfg = ft_config();
    cfg.ordinal = 1;
    bc_device *dev = SENTINEL;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_NO_DEVICE);
    assert_ptr_equal(dev, SENTINEL);
    ft_assert_last(BC_ERR_NO_DEVICE, "ordinal", 0);
    cfg.use_primary_context = 1;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_NO_DEVICE);
    assert_int_equal(fake_live_objects(), 0);
}

static void two_fake_devices(void)
{
    fake_device d[2];
    fake_device_defaults(&d[0]);
    fake_device_defaults(&d[1]);
    snprintf(d[1].name, sizeof d[1].name, "Fake B200");
    d[1].cc_major = 10;
    d[1].sm_count = 148;
    d[1].total_mem = (size_t)180 << 30;
    d[1].prio_greatest = -3;
    fake_set_devices(d, 2);
}

static void test_two_devices(void **state)
{
    two_fake_devices();
    int n = 0;
    assert_ok(bc_device_count(&n));
    assert_int_equal(n, 2);

    bc_device_config c0 = ft_config(), c1 = ft_config();
    c1.ordinal = 1;
    c1.sched = BC_SCHED_BLOCK;
    bc_device *d0 = NULL, *d1 = NULL;
    assert_ok(bc_device_open(&c0, &d0));
    CUcontext ctx0 = fake_current_context();
    assert_ok(bc_device_open(&c1, &d1));
    CUcontext ctx1 = fake_current_context();
    assert_ptr_not_equal(ctx0, ctx1);
    fake_ctx_info ci;
    assert_true(fake_ctx_query(ctx1, &ci));
    assert_int_equal(ci.device, 1);
    assert_int_equal(ci.flags & CU_CTX_SCHED_MASK, CU_CTX_SCHED_BLOCKING_SYNC);

    bc_device_info i0, i1;
    assert_ok(bc_device_query(d0, &i0));
    assert_ok(bc_device_query(d1, &i1));
    assert_string_equal(i0.name, "Fake H100");
    assert_string_equal(i1.name, "Fake B200");
    assert_int_equal(i1.ordinal, 1);
    assert_int_equal(i1.cc_major, 10);
    assert_int_equal(i1.sm_count, 148);
    assert_int_equal(i1.stream_priority_greatest, -3);
    assert_int_equal(i0.stream_priority_greatest, -5);
    fake_live_counts both, lc;
    fake_live(&both);
    assert_int_equal(both.contexts, 2);
    assert_int_equal(both.allocations, 2);

    /* objects are made in the bound device's context */
    bc_stream *s0 = NULL;
    assert_ok(bc_device_bind_thread(d0));
    assert_ok(bc_stream_create(d0, -100, &s0, NULL));
    fake_stream_info si;
    assert_true(fake_stream_query(bc_stream_handle(s0), &si));
    assert_ptr_equal(si.ctx, ctx0);
    assert_int_equal(si.priority, -5);

    /* closing one leaves the other working */
    bc_device_close(d0);
    fake_live(&lc);
    assert_int_equal(lc.contexts, 1);
    assert_int_equal(lc.allocations, 1);
    assert_int_equal(lc.streams, both.streams / 2); /* d1's own, if it keeps any */
    assert_ok(bc_device_bind_thread(d1));
    bc_stream *s1 = NULL;
    int eff = 0;
    assert_ok(bc_stream_create(d1, -100, &s1, &eff));
    assert_int_equal(eff, -3);
    assert_ok(bc_stream_wait(s1, 1000000));
    bc_devptr p = 0;
    assert_ok(bc_mem_alloc(d1, 4096, &p));
    assert_ok(bc_memset_d8_async(s1, p, 0xab, 4096));
    assert_int_equal(((unsigned char *)(uintptr_t)p)[4095], 0xab);
    bc_device_close(d1);
    assert_int_equal(fake_live_objects(), 0);
}

static pthread_barrier_t both_open;

typedef struct thread_job {
    int ordinal;
    bc_status st;
    CUcontext ctx;
} thread_job;

static void *open_use_close(void *arg)
{
    thread_job *j = arg;
    bc_device_config cfg = ft_config();
    cfg.ordinal = j->ordinal;
    bc_device *dev = NULL;
    j->st = bc_device_open(&cfg, &dev);
    pthread_barrier_wait(&both_open);
    if (j->st)
        return NULL;
    j->ctx = fake_current_context();
    for (int i = 0; i < 50 && !j->st; i++) {
        bc_stream *s = NULL;
        bc_devptr p = 0;
        j->st = bc_stream_create(dev, 0, &s, NULL);
        if (!j->st)
            j->st = bc_mem_alloc(dev, 1024, &p);
        if (!j->st)
            j->st = bc_memset_d8_async(s, p, (uint8_t)i, 1024);
        if (!j->st)
            j->st = bc_stream_wait(s, 1000000000u);
        if (!j->st)
            j->st = bc_mem_free(dev, p);
        bc_stream_destroy(s);
    }
    bc_device_close(dev);
    return NULL;
}

/* Two devices opened, used and closed concurrently from two threads. */
static void test_two_devices_two_threads(void **state)
{
    two_fake_devices();
    pthread_t th[2];
    thread_job job[2] = {{0, BC_OK, NULL}, {1, BC_OK, NULL}};
    pthread_barrier_init(&both_open, NULL, 2);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, open_use_close, &job[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&both_open);
    assert_int_equal(job[0].st, BC_OK);
    assert_int_equal(job[1].st, BC_OK);
    assert_ptr_not_equal(job[0].ctx, job[1].ctx);
    assert_int_equal(fake_live_objects(), 0);
}

/* A failed open of a second device leaves the first one's context current
 * (the driver's context stack: the failed open's context was pushed, then
 * destroyed and popped). */
static void test_failed_open_keeps_current(void **state)
{
    two_fake_devices();
    bc_device_config c0 = ft_config(), c1 = ft_config();
    c1.ordinal = 1;
    bc_device *d0 = NULL, *d1 = SENTINEL;
    assert_ok(bc_device_open(&c0, &d0));
    CUcontext ctx0 = fake_current_context();
    fake_fail_entry(FAKE_E_cuMemHostRegister, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    assert_status(bc_device_open(&c1, &d1), BC_ERR_DRIVER);
    assert_ptr_equal(d1, SENTINEL);
    assert_ptr_equal(fake_current_context(), ctx0);
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(d0, 0, &s, NULL)); /* no bind needed */
    bc_device_close(d0);
}

typedef struct bind_job {
    bc_device *dev;
    CUcontext before, after;
    bc_status st;
} bind_job;

static void *bind_other_thread(void *arg)
{
    bind_job *j = arg;
    j->before = fake_current_context();
    j->st = bc_device_bind_thread(j->dev);
    j->after = fake_current_context();
    return NULL;
}

static void test_bind_thread(void **state)
{
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    bind_job j = {dev, NULL, NULL, BC_ERR_INTERNAL};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, bind_other_thread, &j), 0);
    pthread_join(th, NULL);
    assert_int_equal(j.st, BC_OK);
    assert_null(j.before);
    assert_ptr_equal(j.after, fake_current_context());
    bc_device_close(dev);
}

/* Close leaves the thread as it found it unless it was on the closed context. */
static void test_close_restores_current_context(void **state)
{
    const bc__driver *t = fake_table();
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    CUcontext other = NULL;
    assert_int_equal(t->cuCtxCreate(&other, NULL, 0, 0, 0), CUDA_SUCCESS); /* now current */
    bc_device_close(dev);
    assert_ptr_equal(fake_current_context(), other);
    assert_int_equal(t->cuCtxDestroy(other), CUDA_SUCCESS);
    assert_null(fake_current_context());
}

static void test_timings_and_versions(void **state)
{
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    bc_open_timings tm;
    assert_ok(bc_device_open_timings(dev, &tm));
    assert_true(tm.total_us > 0);
    assert_true(tm.total_us >= tm.context_us + tm.arenas_us);
    assert_true(tm.image_check_us == 0 && tm.module_load_us == 0);
    int v = 0, n = 0;
    assert_ok(bc_driver_version(&v));
    assert_int_equal(v, 13000);
    assert_ok(bc_device_count(&n));
    assert_int_equal(n, 1);
    /* the device holds the driver: no second cuInit */
    assert_int_equal(fake_entry_calls(FAKE_E_cuInit), 1);
    bc_device_close(dev);

    fake_set_driver_version(12080);
    assert_ok(bc_driver_version(&v));
    assert_int_equal(v, 12080);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_open_own_context_each_policy),
        ft_test(test_open_primary_context_each_policy),
        ft_test(test_primary_context_shared),
        ft_test(test_arenas_zero),
        ft_test(test_host_arena_source),
        ft_test(test_arenas_sizes),
        ft_test(test_open_matrix),
        ft_test(test_open_with_kernels),
        ft_test(test_open_bad_arguments),
        ft_test(test_ordinal_out_of_range),
        ft_test(test_two_devices),
        ft_test(test_two_devices_two_threads),
        ft_test(test_failed_open_keeps_current),
        ft_test(test_bind_thread),
        ft_test(test_close_restores_current_context),
        ft_test(test_timings_and_versions),
    };
    return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
