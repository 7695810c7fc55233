/* `barecuda info` over the fake driver and over the real loading path
 * without a driver. tools/cli/main.c is linked with main renamed
 * bc_cli_main, so the exit codes are the CLI's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli_run.h"
#include "fake_test.h"

typedef struct run_result {
    int rc;
    char out[8192];
    char err[4096];
} run_result;

/* Runs `barecuda info [arg]` with stdout and stderr captured. */
static void run_info(const char *arg, run_result *r)
{
    char *argv[] = {"barecuda", "info", (char *)arg, NULL};
    cli_capture c;
    cli_capture_run(&c, arg ? 3 : 2, argv);
    r->rc = c.rc;
    cli_capture_copy(&c, r->out, sizeof r->out, r->err, sizeof r->err);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void two_devices(const char *second_name)
{
    fake_device d[2];
    fake_device_defaults(&d[0]);
    fake_device_defaults(&d[1]);
    snprintf(d[1].name, sizeof d[1].name, "%s", second_name);
    d[1].cc_major = 10;
    d[1].sm_count = 148;
    d[1].total_mem = (size_t)180 << 30;
    d[1].prio_greatest = -3;
    fake_set_devices(d, 2);
}

static void test_info_text(void **state)
{
    two_devices("Fake B200");
    run_result r;
    run_info(NULL, &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.out, "driver: CUDA 13.0 (13000)\n"));
    assert_non_null(strstr(r.out, "devices: 2\n"));
    assert_non_null(strstr(r.out, "device 0: Fake H100\n"));
    assert_non_null(strstr(r.out, "device 1: Fake B200\n"));
    assert_non_null(strstr(r.out, "compute capability   9.0\n"));
    assert_non_null(strstr(r.out, "compute capability   10.0\n"));
    assert_non_null(strstr(r.out, "SMs                  132\n"));
    assert_non_null(strstr(r.out, "memory               80.0 GiB (85899345920 bytes)\n"));
    assert_non_null(strstr(r.out, "smem/block opt-in    227.0 KiB (232448 bytes)\n"));
    assert_non_null(strstr(r.out, "L2 cache             50.0 MiB (52428800 bytes)\n"));
    assert_non_null(strstr(r.out, "stream priorities    -5 (greatest) .. 0 (least)\n"));
    assert_non_null(strstr(r.out, "stream priorities    -3 (greatest) .. 0 (least)\n"));
    /* info-only opens: no arena, no kernel image, nothing left behind */
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemAlloc), 0);
    assert_int_equal(fake_entry_calls(FAKE_E_cuMemHostAlloc), 0);
    assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), 0);
    assert_int_equal(fake_live_objects(), 0);
}

static void test_info_json(void **state)
{
    two_devices("Fake \"B200\" \\ x");
    run_result r;
    run_info("--json", &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_int_equal(count_lines(r.out), 1);
    const char *want = "{\"barecuda\":\"" BARECUDA_VERSION "\",\"driver_version\":13000,"
                       "\"driver\":\"13.0\",\"devices\":[{\"ordinal\":0,\"name\":\"Fake H100\","
                       "\"cc\":\"9.0\",\"cc_major\":9,\"cc_minor\":0,\"sm_count\":132,"
                       "\"total_mem_bytes\":85899345920,\"smem_per_block_optin\":232448,"
                       "\"l2_bytes\":52428800,\"stream_priority_greatest\":-5,"
                       "\"stream_priority_least\":0},{\"ordinal\":1,";
    if (strncmp(r.out, want, strlen(want)) != 0)
        fail_msg("got:  %s\nwant: %s...", r.out, want);
    assert_non_null(strstr(r.out, "\"name\":\"Fake \\\"B200\\\" \\\\ x\""));
    assert_non_null(strstr(r.out, "\"cc\":\"10.0\""));
    assert_non_null(strstr(r.out, "}]}\n"));
}

/* The real loading path: no libcuda at all. */
static void test_info_no_driver(void **state)
{
    bc__driver_set_override(NULL);
    bc__driver_set_library("/nonexistent/libcuda.so.1");
    run_result r, j;
    run_info(NULL, &r);
    run_info("--json", &j);
    bc__driver_set_library(NULL);
    bc__driver_set_override(fake_table());

    assert_int_equal(r.rc, 10);
    assert_string_equal(r.out, "");
    assert_int_equal(count_lines(r.err), 1);
    assert_true(strncmp(r.err, "barecuda info: no NVIDIA driver: ", 33) == 0);
    assert_non_null(strstr(r.err, "/nonexistent/libcuda.so.1"));

    assert_int_equal(j.rc, 10);
    assert_int_equal(count_lines(j.err), 1);
    const char *want = "{\"barecuda\":\"" BARECUDA_VERSION "\",\"error\":{\"status\":"
                       "\"BC_ERR_NO_DRIVER\",\"exit_code\":10,\"message\":";
    assert_true(strncmp(j.out, want, strlen(want)) == 0);
    assert_int_equal(count_lines(j.out), 1);
}

static void test_info_stub_driver(void **state)
{
    const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (access(stub, R_OK) != 0)
        skip();
    bc__driver_set_override(NULL);
    bc__driver_set_library(stub);
    run_result r;
    run_info(NULL, &r);
    bc__driver_set_library(NULL);
    bc__driver_set_override(fake_table());
    assert_int_equal(r.rc, 10);
    assert_string_equal(r.out, "");
    assert_int_equal(count_lines(r.err), 1);
    assert_non_null(strstr(r.err, "stub"));
}

static void test_info_driver_classes(void **state)
{
    run_result r;
    fake_set_driver_version(11080);
    run_info(NULL, &r);
    assert_int_equal(r.rc, 11);
    assert_int_equal(count_lines(r.err), 1);
    assert_non_null(strstr(r.err, "too old"));
    assert_non_null(strstr(r.err, "11.8"));

    fake_install();
    fake_set_init_result(CUDA_ERROR_NO_DEVICE);
    run_info(NULL, &r);
    assert_int_equal(r.rc, 12);
    assert_int_equal(count_lines(r.err), 1);
    assert_true(strncmp(r.err, "barecuda info: no CUDA device", 29) == 0);

    fake_install();
    fake_set_init_result(CUDA_ERROR_UNKNOWN);
    run_info("--json", &r);
    assert_int_equal(r.rc, 1);
    assert_int_equal(count_lines(r.err), 1);
    assert_non_null(strstr(r.out, "\"status\":\"BC_ERR_DRIVER\""));
}

/* One device failing to open: the others are still listed. */
static void test_info_one_device_fails(void **state)
{
    two_devices("Fake B200");
    fake_fail_entry(FAKE_E_cuDevicePrimaryCtxRetain, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    run_result r;
    run_info(NULL, &r);
    assert_int_equal(r.rc, 1);
    assert_null(strstr(r.out, "device 0:"));
    assert_non_null(strstr(r.out, "device 1: Fake B200\n"));
    assert_int_equal(count_lines(r.err), 1);
    assert_true(strncmp(r.err, "barecuda info: device 0: BC_ERR_DRIVER", 38) == 0);
    assert_non_null(strstr(r.err, "cuDevicePrimaryCtxRetain"));
    assert_int_equal(fake_live_objects(), 0);
}

static void test_info_usage(void **state)
{
    run_result r;
    run_info("--help", &r);
    assert_int_equal(r.rc, 0);
    assert_true(strncmp(r.out, "usage: barecuda info", 20) == 0);
    assert_string_equal(r.err, "");
    run_info("--bogus", &r);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "unknown argument '--bogus'"));
    assert_int_equal(fake_calls(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_info_text),          ft_test(test_info_json),
        ft_test(test_info_no_driver),     ft_test(test_info_stub_driver),
        ft_test(test_info_driver_classes), ft_test(test_info_one_device_fails),
        ft_test(test_info_usage),
    };
    return cmocka_run_group_tests_name("cli_info", tests, NULL, NULL);
}
