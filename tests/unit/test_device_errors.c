/* Driver loading and errors over the fake driver: no driver, the stub
 * library, a driver too old, failing init calls, the last-error detail,
 * the log callback, status strings, and the fault-injection sweep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>

#include "fake_test.h"

#define SENTINEL ((bc_device *)(uintptr_t)0x5e5e)


static void test_driver_too_old(void **state)
{
    fake_set_driver_version(11080);
    bc_device_config cfg = ft_config();
    bc_device *dev = SENTINEL;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DRIVER_TOO_OLD);
    assert_ptr_equal(dev, SENTINEL);
    ft_assert_last(BC_ERR_DRIVER_TOO_OLD, "cuDriverGetVersion", 0);
    bc_error_detail d;
    bc_last_error(&d);
    assert_non_null(strstr(d.message, "11.8"));
    assert_int_equal(fake_entry_calls(FAKE_E_cuInit), 0);
    int v = 0;
    assert_status(bc_driver_version(&v), BC_ERR_DRIVER_TOO_OLD);
    assert_int_equal(v, 0);

    fake_set_driver_version(12000); /* the floor itself is fine */
    assert_ok(bc_device_open(&cfg, &dev));
    bc_device_close(dev);
}

static void test_init_failures(void **state)
{
    const struct {
        CUresult r;
        bc_status want;
        const char *cu_name;
    } cases[] = {
        {CUDA_ERROR_NO_DEVICE, BC_ERR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
        {CUDA_ERROR_STUB_LIBRARY, BC_ERR_DRIVER_STUB, "CUDA_ERROR_STUB_LIBRARY"},
        {CUDA_ERROR_UNKNOWN, BC_ERR_DRIVER, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_install();
        fake_set_init_result(cases[i].r);
        bc_device_config cfg = ft_config();
        bc_device *dev = SENTINEL;
        assert_status(bc_device_open(&cfg, &dev), cases[i].want);
        assert_ptr_equal(dev, SENTINEL);
        ft_assert_last(cases[i].want, "cuInit", (int)cases[i].r);
        bc_error_detail d;
        bc_last_error(&d);
        assert_string_equal(d.cu_name, cases[i].cu_name);
        int n = -1;
        assert_status(bc_device_count(&n), cases[i].want);
        assert_int_equal(n, -1);
        assert_int_equal(fake_live_objects(), 0);
    }
    /* no device at all: cuInit itself says so */
    fake_install();
    fake_set_devices(NULL, 0);
    bc_device_config cfg = ft_config();
    bc_device *dev = SENTINEL;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_NO_DEVICE);
}

/* The real loading path (no fake): a missing library. */
static void test_no_driver_library(void **state)
{
    bc__driver_set_override(NULL);
    bc__driver_set_library("/nonexistent/libcuda.so.1");
    bc_device_config cfg = ft_config();
    bc_device *dev = SENTINEL;
    bc_status st = bc_device_open(&cfg, &dev);
    int v = 0;
    bc_status st_v = bc_driver_version(&v);
    bc__driver_set_library(NULL);
    bc__driver_set_override(fake_table());

    assert_int_equal(st, BC_ERR_NO_DRIVER);
    assert_int_equal(st_v, BC_ERR_NO_DRIVER);
    assert_ptr_equal(dev, SENTINEL);
    ft_assert_last(BC_ERR_NO_DRIVER, "dlopen", 0);
    bc_error_detail d;
    bc_last_error(&d);
    assert_non_null(strstr(d.message, "/nonexistent/libcuda.so.1"));
    assert_int_equal(fake_calls(), 0);
}

/* The real loading path: the toolkit's link stub is not a driver. */
static void test_stub_library(void **state)
{
    const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (access(stub, R_OK) != 0)
        skip();
    bc__driver_set_override(NULL);
    bc__driver_set_library(stub);
    bc_device_config cfg = ft_config();
    bc_device *dev = SENTINEL;
    bc_status st = bc_device_open(&cfg, &dev);
    int n = 0;
    bc_status st_n = bc_device_count(&n);
    bc__driver_set_library(NULL);
    bc__driver_set_override(fake_table());

    assert_int_equal(st, BC_ERR_DRIVER_STUB);
    assert_int_equal(st_n, BC_ERR_DRIVER_STUB);
    assert_ptr_equal(dev, SENTINEL);
    bc_error_detail d;
    bc_last_error(&d);
    assert_int_equal(d.status, BC_ERR_DRIVER_STUB);
    assert_int_equal(d.cu_result, CUDA_ERROR_STUB_LIBRARY);
    assert_non_null(strstr(d.message, stub));

    /* and the fake still works afterwards: nothing was left loaded */
    assert_ok(bc_device_open(&cfg, &dev));
    bc_device_close(dev);
}

static void test_last_error_detail(void **state)
{
    bc_device_config cfg = ft_config();
    bc_device *dev = SENTINEL;
    fake_fail_entry(FAKE_E_cuMemAlloc, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DRIVER);
    assert_ptr_equal(dev, SENTINEL);
    bc_error_detail d;
    assert_ok(bc_last_error(&d));
    assert_int_equal(d.status, BC_ERR_DRIVER);
    assert_int_equal(d.cu_result, CUDA_ERROR_OUT_OF_MEMORY);
    assert_string_equal(d.cu_name, "CUDA_ERROR_OUT_OF_MEMORY");
    const char *drivers = NULL; /* the driver's own string lives in libcuda, unloaded by the failed open */
    assert_int_equal(fake_table()->cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &drivers), CUDA_SUCCESS);
    assert_ptr_not_equal(d.cu_name, drivers);
    assert_string_equal(d.call, "cuMemAlloc");
    assert_non_null(strstr(d.file, "device.c"));
    assert_true(d.line > 0);
    assert_non_null(strstr(d.message, "cuMemAlloc"));
    assert_int_equal(fake_live_objects(), 0);

    /* a genuine out-of-memory (the fake's limit) reads the same */
    fake_fail_clear();
    fake_set_mem_limit(cfg.device_arena_bytes / 2, 0);
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DRIVER);
    ft_assert_last(BC_ERR_DRIVER, "cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
    fake_set_mem_limit(0, cfg.host_arena_bytes / 2);
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DRIVER);
    ft_assert_last(BC_ERR_DRIVER, "cuMemHostRegister", CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(fake_live_objects(), 0);
    fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 0); /* the cuMemHostAlloc path */
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DRIVER);
    ft_assert_last(BC_ERR_DRIVER, "cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(fake_live_objects(), 0);
    fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1);

    /* a sticky fault maps to BC_ERR_DEVICE_LOST */
    fake_set_mem_limit(0, 0);
    fake_fail_entry(FAKE_E_cuCtxGetStreamPriorityRange, 1, CUDA_ERROR_ILLEGAL_ADDRESS, 0);
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DEVICE_LOST);
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuCtxGetStreamPriorityRange", CUDA_ERROR_ILLEGAL_ADDRESS);

    /* the process is lost: the next open fails at once, asking the driver
     * nothing, and names the call that lost the GPU */
    uint64_t calls = fake_calls();
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DEVICE_LOST);
    assert_int_equal(fake_calls(), calls);
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuCtxGetStreamPriorityRange", CUDA_ERROR_ILLEGAL_ADDRESS);
    bc_error_detail d2;
    bc_last_error(&d2);
    assert_non_null(strstr(d2.message, "restart the process"));
    assert_string_equal(d2.cu_name, "CUDA_ERROR_ILLEGAL_ADDRESS");

    /* (test hook: a healthy process again) success does not clear the detail */
    bc__lost_reset();
    assert_ok(bc_device_open(&cfg, &dev));
    ft_assert_last(BC_ERR_DEVICE_LOST, "cuCtxGetStreamPriorityRange", CUDA_ERROR_ILLEGAL_ADDRESS);
    bc_device_close(dev);
}

typedef struct log_sink {
    int count;
    int errors;
    char last[1024];
} log_sink;

static void log_fn(void *user, bc_log_level level, const char *msg)
{
    log_sink *s = user;
    s->count++;
    s->errors += level == BC_LOG_ERROR;
    snprintf(s->last, sizeof s->last, "%s", msg);
}

static void test_log_callback_and_silence(void **state)
{
    log_sink sink = {0};
    bc_set_log_callback(log_fn, &sink, BC_LOG_DEBUG);
    bc_device_config cfg = ft_config();
    bc_device *dev = SENTINEL;

    ft_capture cap;
    ft_capture_begin(&cap);
    fake_fail_entry(FAKE_E_cuMemHostRegister, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    bc_status st1 = bc_device_open(&cfg, &dev);
    fake_fail_clear();
    bc_status st2 = bc_device_open(&cfg, &dev);
    bc_stream *s = NULL;
    bc_status st3 = bc_stream_create(dev, 0, &s, NULL);
    fake_set_busy(FAKE_BUSY_FOREVER);
    bc_status st4 = bc_stream_wait(s, 1000);
    fake_set_busy(0);
    fake_fail_entry(FAKE_E_cuStreamDestroy, 1, CUDA_ERROR_UNKNOWN, 0);
    bc_device_close(dev); /* a destroy failure on close is logged, not printed */
    long printed = ft_capture_end(&cap);

    assert_int_equal(printed, 0);
    assert_int_equal(st1, BC_ERR_DRIVER);
    assert_int_equal(st2, BC_OK);
    assert_int_equal(st3, BC_OK);
    assert_int_equal(st4, BC_ERR_TIMEOUT);
    assert_true(sink.errors >= 2);
    assert_true(sink.count >= sink.errors);

    /* the message names the status and the call */
    sink.count = 0;
    fake_fail_entry(FAKE_E_cuCtxCreate, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DRIVER);
    assert_int_equal(sink.count, 1);
    assert_non_null(strstr(sink.last, "BC_ERR_DRIVER"));
    assert_non_null(strstr(sink.last, "cuCtxCreate"));
    assert_non_null(strstr(sink.last, "CUDA_ERROR_OUT_OF_MEMORY"));

    /* removed: nothing more arrives */
    bc_set_log_callback(NULL, NULL, BC_LOG_DEBUG);
    sink.count = 0;
    fake_fail_entry(FAKE_E_cuCtxCreate, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DRIVER);
    assert_int_equal(sink.count, 0);

    /* a level filter: errors pass at BC_LOG_ERROR */
    bc_set_log_callback(log_fn, &sink, BC_LOG_ERROR);
    fake_fail_entry(FAKE_E_cuCtxCreate, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_DRIVER);
    assert_int_equal(sink.count, 1);
    bc_set_log_callback(NULL, NULL, BC_LOG_WARN);
}


static void test_status_strings(void **state)
{
    for (int s = 0; s < BC_STATUS_COUNT_; s++) {
        const char *str = bc_status_string((bc_status)s);
        assert_non_null(str);
        if (strncmp(str, "BC_ERR_?", 8) == 0)
            continue; /* a number the enum skips */
        assert_true(strncmp(str, "BC_", 3) == 0);
    }
    assert_string_equal(bc_status_string(BC_ERR_TIMEOUT),
                        "BC_ERR_TIMEOUT: wait timed out; the work is still pending");
    assert_true(strncmp(bc_status_string((bc_status)-1), "BC_ERR_?", 8) == 0);
    assert_true(strncmp(bc_status_string(BC_STATUS_COUNT_), "BC_ERR_?", 8) == 0);
}

/* The fake itself: every entry has a fake, faults fire where asked. */
static void test_fake_fault_injection(void **state)
{
    const bc__driver *t = fake_table();
    int v = 0;
    fake_fail_call(2, CUDA_ERROR_UNKNOWN, 0);
    assert_int_equal(t->cuDriverGetVersion(&v), CUDA_SUCCESS);
    assert_int_equal(t->cuDriverGetVersion(&v), CUDA_ERROR_UNKNOWN);
    assert_int_equal(t->cuDriverGetVersion(&v), CUDA_SUCCESS);
    assert_int_equal(fake_failed_entry(), FAKE_E_cuDriverGetVersion);
    fake_fail_call(1, CUDA_ERROR_UNKNOWN, 1);
    assert_int_equal(t->cuInit(0), CUDA_ERROR_UNKNOWN);
    assert_int_equal(t->cuInit(0), CUDA_ERROR_UNKNOWN);
    fake_fail_clear();
    assert_int_equal(t->cuInit(0), CUDA_SUCCESS);
    assert_int_equal(fake_calls(), 6);
    assert_int_equal(fake_entry_calls(FAKE_E_cuInit), 3);
    assert_int_equal(fake_call_entry(4), FAKE_E_cuInit);
    assert_int_equal(fake_injected(), 3);
    const char *name = NULL;
    assert_int_equal(t->cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name), CUDA_SUCCESS);
    assert_string_equal(name, "CUDA_ERROR_OUT_OF_MEMORY");
    assert_int_equal(t->cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &name), CUDA_SUCCESS);
    assert_string_equal(name, "out of memory");
    assert_int_equal(t->cuGetErrorName((CUresult)12345, &name), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(fake_entry_name(FAKE_E_cuMemAlloc), "cuMemAlloc");

    /* a failing destroy still destroys */
    CUcontext c = NULL;
    assert_int_equal(t->cuCtxCreate(&c, NULL, 0, 0, 0), CUDA_SUCCESS);
    fake_fail_entry(FAKE_E_cuCtxDestroy, 1, CUDA_ERROR_UNKNOWN, 0);
    assert_int_equal(t->cuCtxDestroy(c), CUDA_ERROR_UNKNOWN);
    assert_int_equal(fake_live_objects(), 0);
    /* before cuInit nothing but version/init/error names works */
    fake_reset();
    int n = 0;
    assert_int_equal(t->cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_driver_too_old),
        ft_test(test_init_failures),
        ft_test(test_no_driver_library),
        ft_test(test_stub_library),
        ft_test(test_last_error_detail),
        ft_test(test_log_callback_and_silence),
        ft_test(test_status_strings),
        ft_test(test_fake_fault_injection),
    };
    return cmocka_run_group_tests_name("device_errors", tests, NULL, NULL);
}
