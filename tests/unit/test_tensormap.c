/* Tensor maps for user kernels on the fake driver: every rule of
 * cuTensorMapEncodeTiled is checked before the driver, each broken one is
 * BC_ERR_TENSOR_MAP naming the driver parameter it concerns, nothing is
 * written on failure; a valid map reaches the driver with exactly the
 * caller's values (ranks 1 to 5, every element type, interleave). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"

#define BASE 0x100000ull

static bc_device *open_dev(int major, int minor)
{
    fake_device d;
    fake_device_defaults(&d);
    d.cc_major = major;
    d.cc_minor = minor;
    fake_set_devices(&d, 1);
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    return dev;
}

/* A valid rank-3 f32 map: 100 x 30 x 7, rows padded to 128 floats. */
static bc_tensor_map_desc good(void)
{
    bc_tensor_map_desc d;
    assert_ok(bc_tensor_map_desc_default(&d));
    d.dtype = BC_TMAP_F32;
    d.rank = 3;
    d.base = BASE;
    d.dims[0] = 100, d.dims[1] = 30, d.dims[2] = 7;
    d.strides_bytes[0] = 512, d.strides_bytes[1] = 512 * 30;
    d.box[0] = 16, d.box[1] = 4, d.box[2] = 2;
    return d;
}

static void expect_rule(bc_device *dev, const bc_tensor_map_desc *d, const char *rule, const char *needle)
{
    bc_tensor_map m;
    memset(&m, 0x3C, sizeof m);
    uint64_t calls = fake_entry_calls(FAKE_E_cuTensorMapEncodeTiled);
    assert_status(bc_tensor_map_encode(dev, d, &m), BC_ERR_TENSOR_MAP);
    bc_error_detail e;
    bc_last_error(&e);
    if (strcmp(e.call, rule) != 0 || (needle && strstr(e.message, needle) == NULL))
        fail_msg("refused for '%s' (%s); expected '%s' with '%s'", e.call, e.message, rule, needle ? needle : "");
    assert_int_equal(fake_entry_calls(FAKE_E_cuTensorMapEncodeTiled), calls); /* never reached the driver */
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(m.opaque[i], 0x3C3C3C3C3C3C3C3Cull);
}

static void test_every_rule(void **state)
{
    (void)state;
    bc_device *dev = open_dev(9, 0);
    bc_tensor_map_desc d;
    d = good(), d.dtype = (bc_tmap_dtype)13;
    expect_rule(dev, &d, "tensorDataType", "dtype 13");
    d = good(), d.rank = 0;
    expect_rule(dev, &d, "tensorRank", "[1, 5]");
    d = good(), d.rank = 6;
    expect_rule(dev, &d, "tensorRank", NULL);
    d = good(), d.rank = 2, d.interleave = BC_TMAP_INTERLEAVE_16B;
    expect_rule(dev, &d, "tensorRank", "rank 3 or more");
    d = good(), d.interleave = (bc_tmap_interleave)3;
    expect_rule(dev, &d, "interleave", NULL);
    d = good(), d.swizzle = (bc_tmap_swizzle)4;
    expect_rule(dev, &d, "swizzle", NULL);
    d = good(), d.l2_promotion = (bc_tmap_l2_promotion)4;
    expect_rule(dev, &d, "l2Promotion", NULL);
    d = good(), d.oob_nan = 2;
    expect_rule(dev, &d, "oobFill", "0 or 1");
    d = good(), d.dtype = BC_TMAP_S32, d.oob_nan = 1;
    expect_rule(dev, &d, "oobFill", "floating-point type, not s32");
    d = good(), d.base = 0;
    expect_rule(dev, &d, "globalAddress", NULL);
    d = good(), d.base = BASE + 8;
    expect_rule(dev, &d, "globalAddress", "16 bytes");
    d = good(), d.base = BASE + 16, d.interleave = BC_TMAP_INTERLEAVE_32B, d.swizzle = BC_TMAP_SWIZZLE_32B;
    expect_rule(dev, &d, "globalAddress", "32 bytes");
    d = good(), d.dims[1] = 0;
    expect_rule(dev, &d, "globalDim", "dims[1] = 0");
    d = good(), d.dims[2] = (1ull << 32) + 1;
    expect_rule(dev, &d, "globalDim", "[1, 2^32]");
    d = good(), d.strides_bytes[0] = 520;
    expect_rule(dev, &d, "globalStrides", "multiple of 16");
    d = good(), d.strides_bytes[1] = 1ull << 40;
    expect_rule(dev, &d, "globalStrides", "< 2^40");
    d = good(), d.strides_bytes[0] = 384; /* 100 floats need 400 bytes */
    expect_rule(dev, &d, "globalStrides", "strides_bytes[0] = 384 is less than the 400 bytes");
    d = good(), d.strides_bytes[1] = 512 * 29;
    expect_rule(dev, &d, "globalStrides", "strides_bytes[1]");
    d = good(), d.interleave = BC_TMAP_INTERLEAVE_32B, d.swizzle = BC_TMAP_SWIZZLE_32B, d.strides_bytes[0] = 528;
    expect_rule(dev, &d, "globalStrides", "multiple of 32");
    d = good(), d.box[2] = 0;
    expect_rule(dev, &d, "boxDim", "box[2] = 0");
    d = good(), d.box[1] = 257;
    expect_rule(dev, &d, "boxDim", "[1, 256]");
    d = good(), d.box[0] = 2; /* 8 inner bytes */
    expect_rule(dev, &d, "boxDim", "multiple of 16");
    d = good(), d.element_strides[1] = 9;
    expect_rule(dev, &d, "elementStrides", "[1, 8]");
    d = good(), d.interleave = BC_TMAP_INTERLEAVE_32B, d.swizzle = BC_TMAP_SWIZZLE_64B;
    expect_rule(dev, &d, "swizzle", "32-byte interleave needs the 32-byte swizzle");
    static const struct {
        bc_tmap_swizzle sw;
        uint32_t box0;
    } spans[] = {{BC_TMAP_SWIZZLE_32B, 12}, {BC_TMAP_SWIZZLE_64B, 20}, {BC_TMAP_SWIZZLE_128B, 36}};
    for (size_t i = 0; i < 3; i++) {
        d = good(), d.swizzle = spans[i].sw, d.box[0] = spans[i].box0; /* one 16-byte chunk too many */
        d.strides_bytes[0] = 1024, d.strides_bytes[1] = 1024 * 30;
        expect_rule(dev, &d, "swizzle", "exceeds the");
        d.box[0] -= 4;
        bc_tensor_map m;
        assert_ok(bc_tensor_map_encode(dev, &d, &m));
    }
    bc_tensor_map m;
    assert_status(bc_tensor_map_encode(NULL, &d, &m), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_tensor_map_encode(dev, NULL, &m), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_tensor_map_encode(dev, &d, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_tensor_map_desc_default(NULL), BC_ERR_INVALID_ARGUMENT);
    bc_device_close(dev);
}

/* What the driver receives, for every type and each rank. */
static void test_driver_gets_the_values(void **state)
{
    (void)state;
    bc_device *dev = open_dev(9, 0);
    static const struct {
        bc_tmap_dtype t;
        CUtensorMapDataType cu;
        uint32_t bytes;
    } types[] = {
        {BC_TMAP_U8, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1},      {BC_TMAP_U16, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2},
        {BC_TMAP_U32, CU_TENSOR_MAP_DATA_TYPE_UINT32, 4},    {BC_TMAP_S32, CU_TENSOR_MAP_DATA_TYPE_INT32, 4},
        {BC_TMAP_U64, CU_TENSOR_MAP_DATA_TYPE_UINT64, 8},    {BC_TMAP_S64, CU_TENSOR_MAP_DATA_TYPE_INT64, 8},
        {BC_TMAP_F16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2},   {BC_TMAP_F32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4},
        {BC_TMAP_F64, CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 8},   {BC_TMAP_BF16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2},
        {BC_TMAP_F32_FTZ, CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ, 4}, {BC_TMAP_TF32, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 4},
        {BC_TMAP_TF32_FTZ, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ, 4},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (uint32_t rank = 1; rank <= 5; rank++) {
            bc_tensor_map_desc d;
            bc_tensor_map_desc_default(&d);
            d.dtype = types[t].t;
            d.rank = rank;
            d.base = BASE;
            uint64_t stride = 0;
            for (uint32_t i = 0; i < rank; i++) {
                d.dims[i] = 3 + i;
                d.box[i] = i == 0 ? 32 / types[t].bytes : 2;
                d.element_strides[i] = i == 0 ? 0 : 1 + i % 2; /* 0 counts as 1 */
                stride = i == 0 ? 64 : stride * d.dims[i];
                if (i + 1 < rank)
                    d.strides_bytes[i] = stride;
            }
            d.swizzle = BC_TMAP_SWIZZLE_32B;
            d.l2_promotion = BC_TMAP_L2_128B;
            d.oob_nan = types[t].t >= BC_TMAP_F16 && types[t].t != BC_TMAP_S32 && types[t].t != BC_TMAP_U64 &&
                        types[t].t != BC_TMAP_S64;
            bc_tensor_map m;
            assert_ok(bc_tensor_map_encode(dev, &d, &m));
            const fake_tensor_map_args *a = fake_last_tensor_map();
            assert_int_equal(a->dtype, types[t].cu);
            assert_int_equal(a->rank, rank);
            assert_int_equal((uintptr_t)a->global_address, BASE);
            for (uint32_t i = 0; i < rank; i++) {
                assert_int_equal(a->global_dim[i], d.dims[i]);
                assert_int_equal(a->box_dim[i], d.box[i]);
                assert_int_equal(a->element_strides[i], i == 0 ? 1 : d.element_strides[i]);
                if (i + 1 < rank)
                    assert_int_equal(a->global_strides[i], d.strides_bytes[i]);
            }
            assert_int_equal(a->swizzle, CU_TENSOR_MAP_SWIZZLE_32B);
            assert_int_equal(a->l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
            assert_int_equal(a->oob_fill, d.oob_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                                     : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            assert_int_equal(m.opaque[0], BASE); /* the fake's encoding: the address first */
            assert_int_equal(m.opaque[1], FAKE_TMAP_MAGIC);
        }
    }
    /* interleaved: rank 3, 32-byte swizzle with the 32-byte interleave, no inner-box rule */
    bc_tensor_map_desc d;
    bc_tensor_map_desc_default(&d);
    d.dtype = BC_TMAP_F16;
    d.rank = 3;
    d.base = BASE;
    d.dims[0] = 16, d.dims[1] = 10, d.dims[2] = 4;
    d.strides_bytes[0] = 32, d.strides_bytes[1] = 320;
    d.box[0] = 16, d.box[1] = 5, d.box[2] = 1;
    d.interleave = BC_TMAP_INTERLEAVE_32B;
    d.swizzle = BC_TMAP_SWIZZLE_32B;
    bc_tensor_map m;
    assert_ok(bc_tensor_map_encode(dev, &d, &m));
    assert_int_equal(fake_last_tensor_map()->interleave, CU_TENSOR_MAP_INTERLEAVE_32B);
    d.interleave = BC_TMAP_INTERLEAVE_16B, d.swizzle = BC_TMAP_SWIZZLE_NONE, d.box[0] = 3;
    assert_ok(bc_tensor_map_encode(dev, &d, &m));
    bc_device_close(dev);
}

static void test_set_address_and_refusals(void **state)
{
    (void)state;
    bc_device *dev = open_dev(9, 0);
    bc_tensor_map_desc d = good();
    bc_tensor_map m;
    assert_ok(bc_tensor_map_encode(dev, &d, &m));
    bc_tensor_map before = m;
    assert_status(bc_tensor_map_set_address(dev, &m, BASE + 8), BC_ERR_TENSOR_MAP);
    assert_status(bc_tensor_map_set_address(dev, &m, 0), BC_ERR_TENSOR_MAP);
    assert_int_equal(memcmp(&m, &before, sizeof m), 0);
    assert_ok(bc_tensor_map_set_address(dev, &m, BASE + 4096));
    assert_int_equal(m.opaque[0], BASE + 4096);
    assert_status(bc_tensor_map_set_address(dev, NULL, BASE), BC_ERR_INVALID_ARGUMENT);
    /* a driver refusal: BC_ERR_TENSOR_MAP with the CUresult, nothing written */
    fake_fail_entry(FAKE_E_cuTensorMapEncodeTiled, 1, CUDA_ERROR_INVALID_VALUE, 0);
    bc_tensor_map m2;
    memset(&m2, 0x11, sizeof m2);
    assert_status(bc_tensor_map_encode(dev, &d, &m2), BC_ERR_TENSOR_MAP);
    ft_assert_last(BC_ERR_TENSOR_MAP, "cuTensorMapEncodeTiled", CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(m2.opaque[0], 0x1111111111111111ull);
    fake_fail_entry(FAKE_E_cuTensorMapReplaceAddress, 1, CUDA_ERROR_INVALID_VALUE, 0);
    assert_status(bc_tensor_map_set_address(dev, &m, BASE), BC_ERR_TENSOR_MAP);
    ft_assert_last(BC_ERR_TENSOR_MAP, "cuTensorMapReplaceAddress", CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(m.opaque[0], BASE + 4096);
    fake_fail_clear();
    bc_device_close(dev);
    /* no TMA before compute capability 9.0 */
    dev = open_dev(8, 9);
    assert_status(bc_tensor_map_encode(dev, &d, &m), BC_ERR_NOT_SUPPORTED);
    assert_status(bc_tensor_map_set_address(dev, &m, BASE), BC_ERR_NOT_SUPPORTED);
    bc_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_every_rule),
        ft_test(test_driver_gets_the_values),
        ft_test(test_set_address_and_refusals),
    };
    return cmocka_run_group_tests_name("tensormap", tests, NULL, NULL);
}
