/* Fault-injection sweep over the device, stream, event and memory calls
 * (the engine and what it checks: fault_sweep.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"
#include "fault_sweep.h"

/* ------------------------------------------------------------ scenarios */

static void open_close(outcome *o, bc_device_config cfg)
{
    bc_device *dev = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st == BC_OK)
        VOID_CALL(bc_device_close(dev));
}

static void sc_open_own_arenas(outcome *o) { open_close(o, ft_config()); }

static void sc_open_own_no_arenas(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.device_arena_bytes = cfg.host_arena_bytes = 0;
    cfg.sched = BC_SCHED_BLOCK;
    open_close(o, cfg);
}

static void sc_open_primary_arenas(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.use_primary_context = 1;
    open_close(o, cfg);
}

/* Open with the embedded kernels loaded. */
static void sc_open_kernels(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    open_close(o, cfg);
}

static void sc_driver_queries(outcome *o)
{
    int v = 0, n = 0;
    STEP(o, bc_driver_version(&v));
    STEP(o, bc_device_count(&n));
}

/* Streams, events, memory and copies, released by hand, then close. */
static void sc_stream_event_mem(outcome *o)
{
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    bc_stream *s = NULL, *s2 = NULL;
    bc_event *e0 = NULL, *e1 = NULL;
    bc_devptr d = 0;
    unsigned char buf[256] = {1, 2, 3};
    float ms = 0;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st)
        return;
    STEP(o, bc_stream_create(dev, -1, &s, NULL));
    STEP(o, bc_stream_create(dev, 0, &s2, NULL));
    STEP(o, bc_event_create(dev, &e0));
    STEP(o, bc_event_create(dev, &e1));
    STEP(o, bc_mem_alloc(dev, sizeof buf, &d));
    STEP(o, bc_event_record(e0, s));
    STEP(o, bc_memcpy_htod(dev, d, buf, sizeof buf));
    STEP(o, bc_memset_d8_async(s, d, 9, 16));
    STEP(o, bc_memcpy_dtoh_async(s, buf, d, sizeof buf));
    STEP(o, bc_memcpy_htod_async(s2, d, buf, sizeof buf));
    STEP(o, bc_event_record(e1, s));
    STEP(o, bc_stream_wait(s, 1000000000u));
    STEP(o, bc_stream_query(s2));
    STEP(o, bc_event_elapsed_ms(e0, e1, &ms));
    STEP(o, bc_memcpy_dtoh(dev, buf, d, sizeof buf));
    if (d)
        STEP(o, bc_mem_free(dev, d));
    VOID_CALL(bc_event_destroy(e1));
    VOID_CALL(bc_stream_destroy(s2));
    VOID_CALL(bc_device_close(dev)); /* s and e0 are left for close */
}

/* Two devices, one stream on each, closed in open order. */
static void sc_two_devices(outcome *o)
{
    bc_device_config c0 = ft_config(), c1 = ft_config();
    c1.ordinal = 1;
    c1.use_primary_context = 1;
    bc_device *d0 = NULL, *d1 = NULL;
    bc_stream *s0 = NULL, *s1 = NULL;
    STEP(o, bc_device_open(&c0, &d0));
    STEP(o, bc_device_open(&c1, &d1));
    if (d0)
        STEP(o, bc_device_bind_thread(d0));
    if (d0)
        STEP(o, bc_stream_create(d0, 0, &s0, NULL));
    if (d1)
        STEP(o, bc_device_bind_thread(d1));
    if (d1)
        STEP(o, bc_stream_create(d1, 0, &s1, NULL));
    if (s1)
        STEP(o, bc_stream_wait(s1, 1000000u));
    if (d0)
        VOID_CALL(bc_device_close(d0));
    if (d1)
        VOID_CALL(bc_device_close(d1));
}

static void two_devices_config(void)
{
    fake_device d[2];
    fake_device_defaults(&d[0]);
    fake_device_defaults(&d[1]);
    snprintf(d[1].name, sizeof d[1].name, "Fake GH200");
    fake_set_devices(d, 2);
}

/* ------------------------------------------------------------ the sweep */

/* The status a failing call of `e` returning `r` must produce. */
static int status_matches(fake_entry e, CUresult r, bc_status st)
{
    int loader = loader_status_matches(e, st);
    if (loader >= 0)
        return loader;
    if (!is_sticky(r) && (e == FAKE_E_cuModuleLoadDataEx || e == FAKE_E_cuModuleGetFunction ||
                          e == FAKE_E_cuFuncSetAttribute || e == FAKE_E_cuFuncGetAttribute))
        return st == BC_ERR_MODULE_LOAD || st == BC_ERR_MISSING_KERNEL || st == BC_ERR_DRIVER;
    return st == (is_sticky(r) ? BC_ERR_DEVICE_LOST : BC_ERR_DRIVER);
}

static void test_sweep_open_own_arenas(void **state)
{
    sweep("open own+arenas", sc_open_own_arenas, NULL, status_matches);
}

static void test_sweep_open_own_no_arenas(void **state)
{
    sweep("open own, no arenas", sc_open_own_no_arenas, NULL, status_matches);
}

static void test_sweep_open_primary(void **state)
{
    sweep("open primary+arenas", sc_open_primary_arenas, NULL, status_matches);
}

static void test_sweep_kernels(void **state)
{
    sweep("open with kernels", sc_open_kernels, NULL, status_matches);
}

static void test_sweep_driver_queries(void **state)
{
    sweep("driver queries", sc_driver_queries, NULL, status_matches);
}

static void test_sweep_stream_event_mem(void **state)
{
    sweep("stream/event/mem", sc_stream_event_mem, NULL, status_matches);
}

static void test_sweep_two_devices(void **state)
{
    sweep("two devices", sc_two_devices, two_devices_config, status_matches);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_sweep_open_own_arenas),   ft_test(test_sweep_open_own_no_arenas),
        ft_test(test_sweep_open_primary),      ft_test(test_sweep_driver_queries),
        ft_test(test_sweep_kernels),
        ft_test(test_sweep_stream_event_mem),  ft_test(test_sweep_two_devices),
    };
    return cmocka_run_group_tests_name("fault", tests, NULL, sweep_report);
}
