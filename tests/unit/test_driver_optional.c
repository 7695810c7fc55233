/* The driver loader's optional entries, through its real dlopen path with a
 * stand-in libcuda (driver_shim.c, built as build/bin/libcuda_shim.so): a
 * CUDA 12.3 driver without cuFuncGetParamInfo still loads (the entry is
 * NULL and a device open gets past the table), a 12.4 one fills it, and a
 * missing required entry is still BC_ERR_MISSING_ENTRY_POINT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"

#define SHIM "build/bin/libcuda_shim.so"

static bc_status acquire_with(const char *version, const char *missing, int *out_has_param_info)
{
    setenv("BC_SHIM_VERSION", version, 1);
    if (missing)
        setenv("BC_SHIM_MISSING", missing, 1);
    else
        unsetenv("BC_SHIM_MISSING");
    bc__driver_set_override(NULL);
    bc__driver_set_library(SHIM);
    bc_status st = bc__driver_acquire(NULL);
    if (st == BC_OK) {
        *out_has_param_info = bc__drv->cuFuncGetParamInfo != NULL;
        bc__driver_release();
    }
    bc__driver_set_library(NULL);
    bc__driver_set_override(fake_table());
    return st;
}

static void test_optional_entry(void **state)
{
    (void)state;
    if (access(SHIM, R_OK) != 0)
        fail_msg("%s missing: run from the repository root after ninja", SHIM);
    int has = -1;
    assert_int_equal(acquire_with("12030", NULL, &has), BC_OK);
    assert_int_equal(has, 0);
    assert_int_equal(acquire_with("12040", NULL, &has), BC_OK);
    assert_int_equal(has, 1);
    assert_int_equal(acquire_with("13000", NULL, &has), BC_OK);
    assert_int_equal(has, 1);
    /* a required entry missing is still fatal, and names itself */
    assert_int_equal(acquire_with("12030", "cuOccupancyMaxActiveClusters", &has), BC_ERR_MISSING_ENTRY_POINT);
    bc_error_detail d;
    bc_last_error(&d);
    assert_string_equal(d.call, "cuOccupancyMaxActiveClusters");
    /* a 12.3 driver: bc_device_open gets past the table to the device count (0 here) */
    setenv("BC_SHIM_VERSION", "12030", 1);
    unsetenv("BC_SHIM_MISSING");
    bc__driver_set_override(NULL);
    bc__driver_set_library(SHIM);
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    bc_status st = bc_device_open(&cfg, &dev);
    int v = 0;
    bc_status sv = bc_driver_version(&v);
    bc__driver_set_library(NULL);
    bc__driver_set_override(fake_table());
    assert_int_equal(st, BC_ERR_NO_DEVICE);
    assert_null(dev);
    assert_int_equal(sv, BC_OK);
    assert_int_equal(v, 12030);
}

int main(void)
{
    const struct CMUnitTest tests[] = {ft_test(test_optional_entry)};
    return cmocka_run_group_tests_name("driver_optional", tests, NULL, NULL);
}
