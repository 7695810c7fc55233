/* The resident executor's creation on the fake driver: the configuration's
 * defaults, the optional kernel group it needs, and validation (each rule
 * its status, nothing created or leaked on failure). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "resident_env.h"

static void test_config_default(void **state)
{
    bc_resident_config c;
    memset(&c, 0xAB, sizeof c);
    assert_ok(bc_resident_config_default(&c));
    assert_int_equal(c.sm_count, 0);
    assert_int_equal(c.spin_ns, 1000000);
    assert_int_equal(c.max_sleep_ns, 20000);
    assert_null(c.inputs);
    assert_int_equal(c.input_count + c.output_count, 0);
    assert_status(bc_resident_config_default(NULL), BC_ERR_INVALID_ARGUMENT);
}

/* The resident kernels are an optional group: without BC_KERNELS_RESIDENT
 * at open, creation fails and names the flag. */
static void test_needs_its_group(void **state)
{
    (void)state;
    open_groups = BC_KERNELS_PORTABLE;
    env e;
    env_open(&e);
    open_groups = BC_KERNELS_ALL;
    make_plans(&e);
    expect_reject(&e, plans_of(&e), LAYERS, NULL, BC_ERR_NO_KERNEL_FOR_DEVICE, "config");
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "BC_KERNELS_RESIDENT"));
    bc_device_close(e.dev); /* the plans go with it */
    assert_int_equal(fake_live_objects(), 0);
}

static void test_create_rejects(void **state)
{
    env e;
    env_open(&e);
    make_plans(&e);
    bc_resident *res = NULL;
    assert_status(bc_resident_create(NULL, plans_of(&e), 1, NULL, &res), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_resident_create(e.dev, plans_of(&e), 1, NULL, NULL), BC_ERR_INVALID_ARGUMENT);
    expect_reject(&e, plans_of(&e), 0, NULL, BC_ERR_INVALID_ARGUMENT, "count");
    expect_reject(&e, NULL, 1, NULL, BC_ERR_INVALID_ARGUMENT, "count");
    const bc_gemm_plan *seventeen[17];
    for (int i = 0; i < 17; i++)
        seventeen[i] = e.plan[0];
    expect_reject(&e, seventeen, 17, NULL, BC_ERR_INVALID_ARGUMENT, "count");
    const bc_gemm_plan *with_null[2] = {e.plan[0], NULL};
    expect_reject(&e, with_null, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");

    /* another configuration, a split-K plan, the configuration without a resident kernel */
    bc_gemm_plan *other = NULL, *split = NULL, *big = NULL;
    bc_gemm_desc d = layer_desc(&e, 1, "sm90_128x64");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &other));
    const bc_gemm_plan *mixed[2] = {e.plan[0], other};
    expect_reject(&e, mixed, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    d = layer_desc(&e, 1, "sm90_128x128s");
    d.split_k = 2;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &split));
    expect_reject(&e, (const bc_gemm_plan *const *)&split, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    d = layer_desc(&e, 1, "sm90_128x256");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &big));
    expect_reject(&e, (const bc_gemm_plan *const *)&big, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    /* a stream-K plan (its 32 tiles of 64x32 down K = 8192 over 64 CTAs): its bits are not the whole tiles' */
    bc_gemm_plan *sk = NULL;
    bc_devptr ka = 0, kb = 0;
    assert_ok(bc_mem_alloc(e.dev, (size_t)BATCH * 8192 * 2, &ka));
    assert_ok(bc_mem_alloc(e.dev, (size_t)1024 * 8192 * 2, &kb));
    bc_gemm_desc skd = layer_desc(&e, 1, "sm90_64x32");
    skd.k = 8192, skd.n = 1024, skd.a = ka, skd.b = kb, skd.stream_k = 1;
    assert_ok(bc_gemm_plan_create(e.dev, &skd, &sk));
    bc_gemm_plan_info ski;
    assert_ok(bc_gemm_plan_query(sk, &ski));
    assert_true(ski.stream_k_tiles > 0);
    expect_reject(&e, (const bc_gemm_plan *const *)&sk, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_gemm_plan_destroy(sk);
    assert_ok(bc_mem_free(e.dev, kb));
    assert_ok(bc_mem_free(e.dev, ka));
    /* the narrow split twin runs in 64x32's kernel, beside whole 64x32 plans; not beside a skinny one */
    bc_gemm_plan *narrow = NULL, *skinny = NULL;
    d = layer_desc(&e, 1, "sm90_64x32s");
    d.split_k = 4;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &narrow));
    const bc_gemm_plan *with_narrow[2] = {e.plan[0], narrow};
    bc_resident *r = NULL;
    assert_ok(bc_resident_create(e.dev, with_narrow, 2, NULL, &r));
    bc_resident_info ri;
    assert_ok(bc_resident_query(r, &ri));
    assert_true(ri.partial_bytes >= 64u * 32u * 4u * 4u); /* its 4 partials of a 64 x 32 f32 tile, at least */
    bc_resident_destroy(r);
    d = layer_desc(&e, 1, "sm90_64x32m16");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &skinny));
    const bc_gemm_plan *narrow_skinny[2] = {narrow, skinny};
    expect_reject(&e, narrow_skinny, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    /* the narrow short-K twin too: beside whole 64x32 plans, not beside a skinny one */
    bc_gemm_plan *twin = NULL;
    d = layer_desc(&e, 1, "sm90_64x32t");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &twin));
    const bc_gemm_plan *with_twin[2] = {e.plan[0], twin};
    assert_ok(bc_resident_create(e.dev, with_twin, 2, NULL, &r));
    assert_ok(bc_resident_query(r, &ri));
    assert_string_equal(ri.config, "sm90_64x32");
    bc_resident_destroy(r);
    const bc_gemm_plan *twin_skinny[2] = {twin, skinny};
    expect_reject(&e, twin_skinny, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_gemm_plan_destroy(twin);
    bc_gemm_plan_destroy(skinny);
    bc_gemm_plan_destroy(narrow);
    /* a value head of one column after the 1024-wide layer: the rule's dot kernel has no resident kernel (the
     * refusal says what to pin); pinned to the network's configuration it runs beside its layers */
    bc_gemm_plan *head = NULL;
    d = layer_desc(&e, 2, NULL);
    d.n = 1, d.bias = 0, d.relu = 0, d.resident = 0;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &head));
    bc_gemm_plan_info hi;
    assert_ok(bc_gemm_plan_query(head, &hi));
    assert_string_equal(hi.config, "sm90_dot");
    const bc_gemm_plan *with_head[2] = {e.plan[0], head};
    expect_reject(&e, with_head, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "pin bc_gemm_desc.config"));
    assert_non_null(strstr(det.message, "bc_gemm_desc.resident = 1"));
    bc_gemm_plan_destroy(head);
    /* for a resident plan the rule takes a skinny tile instead, which a resident kernel runs */
    d.resident = 1;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &head));
    assert_ok(bc_gemm_plan_query(head, &hi));
    assert_non_null(strstr(hi.config, "sm90_64x32m16"));
    const bc_gemm_plan *alone[1] = {head};
    assert_ok(bc_resident_create(e.dev, alone, 1, NULL, &r));
    bc_resident_destroy(r);
    bc_gemm_plan_destroy(head);
    /* named, the GEMV kernel: alone it runs, beside the network's 64x32 tiles it is refused (test_resident_gemv.c) */
    d.config = "sm90_gemv";
    assert_ok(bc_gemm_plan_create(e.dev, &d, &head));
    alone[0] = head;
    assert_ok(bc_resident_create(e.dev, alone, 1, NULL, &r));
    bc_resident_destroy(r);
    with_head[1] = head;
    expect_reject(&e, with_head, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_gemm_plan_destroy(head);
    d.config = "sm90_64x32";
    assert_ok(bc_gemm_plan_create(e.dev, &d, &head));
    with_head[1] = head;
    assert_ok(bc_resident_create(e.dev, with_head, 2, NULL, &r));
    bc_resident_destroy(r);
    bc_gemm_plan_destroy(head);

    /* a plan of another device object */
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    cfg.device_arena_bytes = 8u << 20;
    bc_device *dev2 = NULL;
    bc_gemm_plan *foreign = NULL;
    assert_ok(bc_device_open(&cfg, &dev2));
    bc_devptr p2 = 0;
    assert_ok(bc_mem_alloc(dev2, 1u << 20, &p2));
    bc_gemm_desc d2 = layer_desc(&e, 0, "sm90_64x32");
    d2.a = d2.b = p2, d2.d = p2 + (512u << 10), d2.bias = 0; /* A and B only read: they may share */
    assert_ok(bc_gemm_plan_create(dev2, &d2, &foreign));
    expect_reject(&e, (const bc_gemm_plan *const *)&foreign, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_device_close(dev2);
    assert_ok(bc_device_bind_thread(e.dev));

    /* copies: alignment and size, a host side outside the pinned pool, NULL arrays */
    bc_resident_copy in, out;
    bc_resident_config c = io_config(&e, &in, &out);
    in.bytes = 24;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_MISALIGNED, "inputs");
    in = (bc_resident_copy){(char *)e.host_in + 8, e.act[0], 16};
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_MISALIGNED, "inputs");
    static _Alignas(16) unsigned char not_pinned[64];
    in = (bc_resident_copy){not_pinned, e.act[0], 64};
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_WRONG_DEVICE, "inputs");
    c = io_config(&e, &in, &out);
    out.dev = 0;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_NULL_POINTER, "outputs");
    c = io_config(&e, &in, &out);
    in.host = NULL;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_NULL_POINTER, "inputs");
    c = io_config(&e, &in, &out);
    in.bytes = 0;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_BAD_SIZE, "inputs");
    /* the two sides of a copy apart: a device side inside the host side (pinned memory is addressable),
     * or the same bytes */
    c = io_config(&e, &in, &out);
    in = (bc_resident_copy){e.host_in, (bc_devptr)(uintptr_t)e.host_in + 16, 64};
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_OVERLAP, "inputs");
    in = (bc_resident_copy){e.host_in, (bc_devptr)(uintptr_t)e.host_in, 64};
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_OVERLAP, "inputs");
    /* each side within one live block or allocation, as a plan's operands: past the host block, past the
     * device block, a device address that is no memory */
    c = io_config(&e, &in, &out);
    in.host = (char *)e.host_in + 64; /* the device side fits; the host block ends 64 bytes short */
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_OUT_OF_BOUNDS, "inputs");
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "pinned host arena"));
    c = io_config(&e, &in, &out);
    in = (bc_resident_copy){e.host_in, e.act[0] + (size_t)(BATCH * width[0]) * 2 - 16, 64};
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_OUT_OF_BOUNDS, "inputs");
    c = io_config(&e, &in, &out);
    out.dev = 0x1000;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_WRONG_DEVICE, "outputs");
    c.outputs = NULL;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_INVALID_ARGUMENT, "cfg");

    /* the grid: more CTAs than SMs; the device cannot keep them resident; no cooperative launch */
    bc_resident_config_default(&c);
    c.sm_count = 133;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_INVALID_ARGUMENT, "sm_count");
    c.max_sleep_ns = 2000000;
    c.sm_count = 0;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_INVALID_ARGUMENT, "max_sleep_ns");
    fake_set_kernel_attr("bc_resident_sm90_64x32", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 128);
    bc_device_close(e.dev);
    env_open(&e);
    make_plans(&e);
    expect_reject(&e, plans_of(&e), LAYERS, NULL, BC_ERR_LAUNCH_CONFIG, "sm_count");
    fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0);
    expect_reject(&e, plans_of(&e), LAYERS, NULL, BC_ERR_NOT_SUPPORTED, "cooperative launch");
    bc_device_close(e.dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_config_default),
        ft_test(test_needs_its_group),
        ft_test(test_create_rejects),
    };
    return cmocka_run_group_tests_name("resident_create", tests, NULL, NULL);
}
