/* Kernel plans on the fake driver: each launch rule has its own status and
 * names itself, with nothing created and the device usable after; the
 * attributes a plan needs are set at plan time; parameters are packed at the
 * kernel's offsets and changed in place; a launch is exactly one driver call
 * and no heap allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "module_internal.h"
#include "module_test.h"

#include "heap_count.h" /* the binary links with --wrap=malloc,calloc,realloc,aligned_alloc */

/* Plan creation fails with `want` naming `call`; nothing is created, *out
 * is untouched, and a valid plan still works afterwards. */
static void expect_reject(mt_env *e, bc_kernel *k, const bc_kernel_plan_desc *d, bc_status want, const char *call,
                          const char *needle)
{
    bc_kernel_plan *p = (bc_kernel_plan *)(uintptr_t)0x4321;
    int live = fake_live_objects();
    assert_status(bc_kernel_plan_create(k, d, &p), want);
    mt_assert_failed(want, call, needle);
    assert_ptr_equal(p, (bc_kernel_plan *)(uintptr_t)0x4321);
    assert_int_equal(fake_live_objects(), live);
    mt_saxpy ok;
    mt_saxpy_desc(&ok, e, 64);
    bc_kernel_plan *good = NULL;
    assert_ok(bc_kernel_plan_create(e->saxpy, &ok.d, &good));
    assert_ok(bc_kernel_launch(good, e->s));
    bc_kernel_plan_destroy(good);
}

static void test_launch_limits(void **state)
{
    (void)state;
    fake_set_kernel_attr("fixture_saxpy", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 512);
    fake_set_kernel_attr("fixture_saxpy", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 2048);
    mt_env e;
    mt_open(&e, 0);
    mt_saxpy v;
    mt_saxpy_desc(&v, &e, 1000);
    bc_kernel_plan *p = NULL;
    assert_status(bc_kernel_plan_create(NULL, &v.d, &p), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_kernel_plan_create(e.saxpy, NULL, &p), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_kernel_plan_create(e.saxpy, &v.d, NULL), BC_ERR_INVALID_ARGUMENT);
    bc_kernel_plan_desc d = v.d;
    d.grid[1] = 65536;
    expect_reject(&e, e.saxpy, &d, BC_ERR_LAUNCH_CONFIG, "grid", "65536");
    d = v.d, d.grid[0] = 0x80000000u;
    expect_reject(&e, e.saxpy, &d, BC_ERR_LAUNCH_CONFIG, "grid", NULL);
    d = v.d, d.block[0] = 1025;
    expect_reject(&e, e.saxpy, &d, BC_ERR_LAUNCH_CONFIG, "block", "at most 1024");
    d = v.d, d.block[0] = 1, d.block[2] = 65;
    expect_reject(&e, e.saxpy, &d, BC_ERR_LAUNCH_CONFIG, "block", "z at most 64");
    d = v.d, d.block[0] = 32, d.block[1] = 32; /* 1024 threads > the kernel's 512 */
    expect_reject(&e, e.saxpy, &d, BC_ERR_LAUNCH_CONFIG, "block", "limit of 512 per block");
    d = v.d, d.dynamic_smem_bytes = 232448 - 2048 + 1;
    expect_reject(&e, e.saxpy, &d, BC_ERR_LAUNCH_CONFIG, "dynamic_smem_bytes", "2048 static");
    /* at the limit: planned, and the kernel's attribute raised at plan time */
    d = v.d, d.dynamic_smem_bytes = 232448 - 2048, d.block[0] = 512;
    assert_ok(bc_kernel_plan_create(e.saxpy, &d, &p));
    int attr = 0;
    assert_true(fake_function_attr(e.saxpy->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &attr));
    assert_int_equal(attr, 232448 - 2048);
    bc_kernel_plan *small = NULL;
    d.dynamic_smem_bytes = 1024; /* a smaller plan leaves the limit where it is */
    uint64_t sets = fake_entry_calls(FAKE_E_cuFuncSetAttribute);
    assert_ok(bc_kernel_plan_create(e.saxpy, &d, &small));
    assert_int_equal(fake_entry_calls(FAKE_E_cuFuncSetAttribute), sets);
    assert_ok(bc_kernel_launch(p, e.s));
    assert_ok(bc_kernel_launch(small, e.s));
    /* the driver refusing the attribute: a launch-config error with its CUresult */
    bc_kernel *box = NULL;
    assert_ok(bc_kernel_get(e.mod, "fixture_tma_box", &box));
    fake_fail_entry(FAKE_E_cuFuncSetAttribute, 1, CUDA_ERROR_INVALID_VALUE, 0);
    bc_kernel_param bp[4];
    uint8_t map[128] = {0};
    int32_t cols = 16, rows = 4;
    bp[0] = (bc_kernel_param){map, 128, 0};
    bp[1] = (bc_kernel_param){&e.x, 8, 0};
    bp[2] = (bc_kernel_param){&cols, 4, 0};
    bp[3] = (bc_kernel_param){&rows, 4, 0};
    bc_kernel_plan_desc bd = {.grid = {1, 1, 1}, .block = {128, 1, 1}, .dynamic_smem_bytes = 60000, .params = bp,
                              .param_count = 4};
    assert_status(bc_kernel_plan_create(box, &bd, &p), BC_ERR_LAUNCH_CONFIG);
    mt_assert_failed(BC_ERR_LAUNCH_CONFIG, "cuFuncSetAttribute", "60000 bytes");
    bc_error_detail ed;
    bc_last_error(&ed);
    assert_string_equal(ed.cu_name, "CUDA_ERROR_INVALID_VALUE"); /* kept through the re-recording */
    assert_non_null(strstr(ed.message, "CUDA_ERROR_INVALID_VALUE (1)"));
    fake_fail_clear();
    bc_device_close(e.dev);
}

static void test_clusters(void **state)
{
    (void)state;
    mt_env e;
    mt_open(&e, 0);
    mt_saxpy v;
    mt_saxpy_desc(&v, &e, 4096); /* grid 16 */
    bc_kernel_plan_desc d = v.d;
    d.cluster[0] = 3;
    expect_reject(&e, e.saxpy, &d, BC_ERR_CLUSTER, "cluster", "dimension x");
    d = v.d, d.grid[0] = 32, d.cluster[0] = 32;
    expect_reject(&e, e.saxpy, &d, BC_ERR_CLUSTER, "cluster", "over 16");
    /* sides whose 64-bit product wraps to 1 are still a cluster over 16 (not silently none) */
    d = v.d, d.cluster[0] = 998724481u, d.cluster[1] = 3358236963u, d.cluster[2] = 11u;
    expect_reject(&e, e.saxpy, &d, BC_ERR_CLUSTER, "cluster", "over 16 CTAs in dimension x");
    /* the device cannot place even one cluster */
    fake_set_max_active_clusters(0);
    d = v.d, d.cluster[0] = 4;
    expect_reject(&e, e.saxpy, &d, BC_ERR_CLUSTER, "cuOccupancyMaxActiveClusters", "cannot be scheduled");
    fake_set_max_active_clusters(-1);
    /* an answer BC_CU records nothing for (not ready), after an unrelated earlier failure on this thread:
     * the plan fails as a driver failure of the query, not with the earlier status, and is not made */
    bc_module *none = NULL;
    assert_status(bc_module_load_file(e.dev, "/nonexistent", NULL, &none), BC_ERR_FILE_IO);
    fake_fail_entry(FAKE_E_cuOccupancyMaxActiveClusters, 1, CUDA_ERROR_NOT_READY, 0);
    d = v.d, d.cluster[0] = 4;
    bc_kernel_plan *unmade = (bc_kernel_plan *)&d;
    assert_status(bc_kernel_plan_create(e.saxpy, &d, &unmade), BC_ERR_DRIVER);
    fake_fail_clear();
    assert_ptr_equal(unmade, (bc_kernel_plan *)&d);
    mt_assert_failed(BC_ERR_DRIVER, "cuOccupancyMaxActiveClusters", "did not answer");
    /* 8 CTAs: portable, no attribute; 16: the non-portable attribute is set at plan time */
    bc_kernel_plan *p8 = NULL, *p16 = NULL;
    d = v.d, d.cluster[0] = 8;
    assert_ok(bc_kernel_plan_create(e.saxpy, &d, &p8));
    int np = -1;
    assert_true(fake_function_attr(e.saxpy->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, &np));
    assert_int_equal(np, 0);
    d.cluster[0] = 16, d.programmatic = 1;
    assert_ok(bc_kernel_plan_create(e.saxpy, &d, &p16));
    assert_true(fake_function_attr(e.saxpy->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, &np));
    assert_int_equal(np, 1);
    assert_ok(bc_kernel_launch(p16, e.s));
    const fake_launch *l = fake_last_launch();
    assert_int_equal(l->cluster[0], 16);
    assert_int_equal(l->num_attrs, 2);
    assert_int_equal(l->attrs[0].id, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    assert_int_equal(l->attrs[0].value.programmaticStreamSerializationAllowed, 1);
    /* {0,0,0} and {1,1,1} are no cluster */
    bc_kernel_plan *p1 = NULL;
    d = v.d, d.cluster[0] = d.cluster[1] = d.cluster[2] = 1;
    assert_ok(bc_kernel_plan_create(e.saxpy, &d, &p1));
    assert_ok(bc_kernel_launch(p1, e.s));
    assert_int_equal(fake_last_launch()->num_attrs, 0);
    bc_device_close(e.dev);
    /* no clusters before compute capability 9.0 */
    fake_device dv;
    fake_device_defaults(&dv);
    dv.cc_major = 8;
    dv.cc_minor = 6;
    fake_set_devices(&dv, 1);
    bc_device_config cfg = ft_config();
    assert_ok(bc_device_open(&cfg, &e.dev));
    assert_ok(bc_module_load_file(e.dev, MT_FATBIN, NULL, &e.mod));
    assert_ok(bc_kernel_get(e.mod, "fixture_saxpy", &e.saxpy));
    d = v.d, d.cluster[0] = 2;
    bc_kernel_plan *p = NULL;
    assert_status(bc_kernel_plan_create(e.saxpy, &d, &p), BC_ERR_CLUSTER);
    mt_assert_failed(BC_ERR_CLUSTER, "cluster", "compute capability 8.6");
    bc_device_close(e.dev);
}

static void test_parameters(void **state)
{
    (void)state;
    mt_env e;
    mt_open(&e, 0);
    mt_saxpy v;
    mt_saxpy_desc(&v, &e, 1000);
    bc_kernel_plan_desc d = v.d;
    d.param_count = 3;
    expect_reject(&e, e.saxpy, &d, BC_ERR_PARAM_MISMATCH, "params", "takes 4 parameters; 3 given");
    bc_kernel_param p[5];
    memcpy(p, v.p, sizeof v.p);
    p[4] = p[3];
    d = v.d, d.params = p, d.param_count = 5;
    expect_reject(&e, e.saxpy, &d, BC_ERR_PARAM_MISMATCH, "params", "5 given");
    memcpy(p, v.p, sizeof v.p);
    double a64 = 2.5;
    p[0] = (bc_kernel_param){&a64, 8, 0}; /* a double where the kernel takes a float */
    d = v.d, d.params = p;
    expect_reject(&e, e.saxpy, &d, BC_ERR_PARAM_MISMATCH, "params", "parameter 0 is 4 bytes; 8 given");
    memcpy(p, v.p, sizeof v.p);
    p[2].value = NULL;
    expect_reject(&e, e.saxpy, &d, BC_ERR_INVALID_ARGUMENT, "params", "parameter 2");
    memcpy(p, v.p, sizeof v.p);
    bc_devptr null_ptr = 0;
    p[1].value = &null_ptr; /* a checked buffer that is NULL */
    expect_reject(&e, e.saxpy, &d, BC_ERR_NULL_POINTER, "params", "parameter 1 is a NULL device pointer");
    memcpy(p, v.p, sizeof v.p);
    p[3].extent_bytes = 4; /* an extent on a 4-byte value: not a pointer */
    expect_reject(&e, e.saxpy, &d, BC_ERR_INVALID_ARGUMENT, "params", "not a device pointer");
    d = v.d, d.param_count = -1;
    expect_reject(&e, e.saxpy, &d, BC_ERR_INVALID_ARGUMENT, "params", NULL);
    d = v.d, d.params = NULL;
    expect_reject(&e, e.saxpy, &d, BC_ERR_INVALID_ARGUMENT, "params", NULL);
    bc_device_close(e.dev);
}

/* A buffer parameter's whole extent is checked as a GEMM operand is:
 * inside one live pool block, or inside a driver allocation this context
 * can address; at creation and at set_param, each failure with its status,
 * the plan unchanged. */
static void test_buffer_extents(void **state)
{
    (void)state;
    mt_env e;
    mt_open(&e, 0);
    mt_saxpy v;
    mt_saxpy_desc(&v, &e, 1000);
    bc_kernel_param p[4];
    memcpy(p, v.p, sizeof v.p);
    bc_kernel_plan_desc d = v.d;
    d.params = p;
    p[1].extent_bytes = (2u << 20); /* x is a 1 MiB block */
    expect_reject(&e, e.saxpy, &d, BC_ERR_OUT_OF_BOUNDS, "parameter 1", "parameter 1");
    memcpy(p, v.p, sizeof v.p);
    bc_devptr tail = e.y + (1u << 20) - 16u; /* 16 bytes before y's end, 4000 needed */
    p[2].value = &tail;
    expect_reject(&e, e.saxpy, &d, BC_ERR_OUT_OF_BOUNDS, "parameter 2", "parameter 2");
    memcpy(p, v.p, sizeof v.p);
    bc_devptr stray = 0xdead0000ull; /* no pool block, no allocation the driver knows */
    p[1].value = &stray;
    bc_kernel_plan *plan = NULL;
    bc_status st = bc_kernel_plan_create(e.saxpy, &d, &plan);
    assert_true(st == BC_ERR_WRONG_DEVICE || st == BC_ERR_OUT_OF_BOUNDS);
    assert_null(plan);
    /* memory of the device from outside the pools: the driver describes it */
    CUdeviceptr raw = 0;
    assert_int_equal(fake_table()->cuMemAlloc_v2(&raw, 8192), CUDA_SUCCESS);
    bc_devptr own = (bc_devptr)raw;
    memcpy(p, v.p, sizeof v.p);
    p[2].value = &own;
    assert_ok(bc_kernel_plan_create(e.saxpy, &d, &plan));
    own = (bc_devptr)raw + 8192u - 100u; /* the last 100 bytes: too few */
    assert_status(bc_kernel_plan_set_param(plan, 2, &own, 8), BC_ERR_OUT_OF_BOUNDS);
    assert_status(bc_kernel_plan_set_param(plan, 1, &stray, 8), BC_ERR_WRONG_DEVICE);
    assert_ok(bc_kernel_launch(plan, e.s));
    bc_devptr x, y;
    memcpy(&x, fake_last_launch()->params + 8, 8), memcpy(&y, fake_last_launch()->params + 16, 8);
    assert_int_equal(x, e.x);
    assert_int_equal(y, (bc_devptr)raw); /* the plan kept its last good values */
    bc_kernel_plan_destroy(plan);
    assert_int_equal(fake_table()->cuMemFree_v2(raw), CUDA_SUCCESS);
    bc_device_close(e.dev);
}

/* Over the parameter space (unchecked: the signature check would catch it
 * first on a driver that reports one). */
static void test_parameter_space(void **state)
{
    (void)state;
    mt_env e;
    mt_open(&e, 0);
    fake_drop_entry(FAKE_E_cuFuncGetParamInfo); /* the next open sees an older driver */
    bc_device_close(e.dev);
    bc_device_config cfg = ft_config();
    assert_ok(bc_device_open(&cfg, &e.dev));
    assert_ok(bc_module_load_file(e.dev, MT_FATBIN, NULL, &e.mod));
    assert_ok(bc_kernel_get(e.mod, "fixture_saxpy", &e.saxpy));
    static uint8_t big[20000];
    bc_kernel_param p[2] = {{big, 20000, 0}, {big, 20000, 0}};
    bc_kernel_plan_desc d = {.params = p, .param_count = 2, .unchecked_params = 1};
    bc_kernel_plan *pl = NULL;
    assert_status(bc_kernel_plan_create(e.saxpy, &d, &pl), BC_ERR_PARAM_MISMATCH);
    mt_assert_failed(BC_ERR_PARAM_MISMATCH, "params", "32764-byte parameter space");
    d.param_count = 1;
    assert_ok(bc_kernel_plan_create(e.saxpy, &d, &pl));
    bc_device_close(e.dev);
}

/* Packed at the kernel's offsets; one value changed in place; a launch is
 * one driver call and no allocation. */
static void test_pack_set_param_and_launch(void **state)
{
    (void)state;
    mt_env e;
    mt_open(&e, 0);
    mt_saxpy v;
    bc_kernel_plan *p = mt_saxpy_plan(&e, &v, 1000);
    memset(&v, 0x5A, sizeof v); /* the plan holds its own copy */
    uint64_t calls = fake_calls();
    counting = 1;
    heap_calls = 0;
    bc_status st = bc_kernel_launch(p, e.s);
    counting = 0;
    assert_ok(st);
    assert_int_equal(fake_calls() - calls, 1);
    assert_int_equal(fake_entry_calls(FAKE_E_cuLaunchKernelEx), 1);
    assert_int_equal(heap_calls, 0);
    const fake_launch *l = fake_last_launch();
    assert_string_equal(l->kernel, "fixture_saxpy");
    assert_int_equal(l->grid[0], 4);
    assert_int_equal(l->block[0], 256);
    assert_ptr_equal(l->stream, bc_stream_handle(e.s));
    assert_int_equal(l->param_bytes, 28);
    float a;
    bc_devptr x, y;
    int32_t n;
    memcpy(&a, l->params + 0, 4), memcpy(&x, l->params + 8, 8), memcpy(&y, l->params + 16, 8),
        memcpy(&n, l->params + 24, 4);
    assert_true(a == 2.5f);
    assert_int_equal(x, e.x);
    assert_int_equal(y, e.y);
    assert_int_equal(n, 1000);
    /* set_param: one value, no allocation, no driver call */
    float a2 = -1.0f;
    calls = fake_calls();
    counting = 1;
    heap_calls = 0;
    st = bc_kernel_plan_set_param(p, 0, &a2, 4);
    counting = 0;
    assert_ok(st);
    assert_int_equal(heap_calls, 0);
    assert_int_equal(fake_calls(), calls);
    assert_ok(bc_kernel_launch(p, e.s));
    memcpy(&a, fake_last_launch()->params, 4);
    assert_true(a == -1.0f);
    /* refused: wrong size, bad index, NULL pointer for a checked buffer; the plan unchanged */
    double d64 = 3.0;
    assert_status(bc_kernel_plan_set_param(p, 0, &d64, 8), BC_ERR_PARAM_MISMATCH);
    mt_assert_failed(BC_ERR_PARAM_MISMATCH, "params", "parameter 0 is 4 bytes; 8 given");
    assert_status(bc_kernel_plan_set_param(p, 4, &a2, 4), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_kernel_plan_set_param(p, -1, &a2, 4), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_kernel_plan_set_param(p, 0, NULL, 4), BC_ERR_INVALID_ARGUMENT);
    bc_devptr zero = 0;
    assert_status(bc_kernel_plan_set_param(p, 2, &zero, 8), BC_ERR_NULL_POINTER);
    assert_ok(bc_kernel_launch(p, e.s));
    memcpy(&y, fake_last_launch()->params + 16, 8);
    assert_int_equal(y, e.y);
    assert_ok(bc_kernel_plan_set_param(p, 2, &e.x, 8)); /* y = x: allowed (the kernel reads before it writes) */
    bc_device_close(e.dev); /* releases the plan */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_launch_limits),     ft_test(test_clusters),
        ft_test(test_parameters),        ft_test(test_parameter_space), ft_test(test_buffer_extents),
        ft_test(test_pack_set_param_and_launch),
    };
    return cmocka_run_group_tests_name("kernel_plan", tests, NULL, NULL);
}
