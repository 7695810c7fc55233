/* User modules on the fake driver: loading from memory and from a file
 * (the nvcc fixture), the driver getting barecuda's own copy of the chosen
 * image, digests, eager kernels, JIT only when asked, the driver's log on
 * refusal, kernel attributes and signatures, use counts, older drivers
 * without cuFuncGetParamInfo, and release by bc_device_close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "file.h"
#include "module_test.h"

static void read_fixture(const char *path, uint8_t **out, size_t *len)
{
    assert_int_equal(bc__read_file(path, 1u << 20, out, len), BC_OK);
}

static void open_plain(bc_device **dev)
{
    mt_register_signatures();
    bc_device_config cfg = ft_config();
    assert_ok(bc_device_open(&cfg, dev));
}

static void test_load_from_memory(void **state)
{
    (void)state;
    bc_device *dev = NULL;
    open_plain(&dev);
    uint8_t *bytes = NULL;
    size_t len = 0;
    read_fixture(MT_FATBIN, &bytes, &len);
    bc_module_options o;
    assert_ok(bc_module_options_default(&o));
    assert_int_equal(o.max_file_bytes, BC_MODULE_DEFAULT_MAX_FILE_BYTES);
    assert_int_equal(o.allow_ptx_jit, 0);
    const char *names[] = {"fixture_saxpy", "fixture_tma_box"};
    o.kernels = names;
    o.kernel_count = 2;
    o.check_digest = 1;
    o.expected_digest = MT_DIGEST_FATBIN;
    bc_module *m = NULL;
    assert_ok(bc_module_load(dev, bytes, len, &o, &m));
    /* the driver got barecuda's copy of the sm_90a cubin, with the error-log options */
    const fake_module_record *r = fake_last_module();
    assert_true((const uint8_t *)r->image < bytes || (const uint8_t *)r->image >= bytes + len);
    assert_int_equal(memcmp(r->image, "\177ELF", 4), 0);
    assert_int_equal(r->num_options, 2);
    assert_int_equal(r->options[0], CU_JIT_ERROR_LOG_BUFFER);
    memset(bytes, 0xEE, len); /* the caller may reuse or free its bytes */
    free(bytes);
    bc_module_info info;
    assert_ok(bc_module_query(m, &info));
    assert_string_equal(info.arch, "sm_90a");
    assert_int_equal(info.jit, 0);
    assert_int_equal(info.digest, MT_DIGEST_FATBIN);
    assert_int_equal(info.image_bytes, r->size);
    assert_int_equal(info.entries, 3);
    assert_int_equal(info.kernels_resolved, 2);
    /* a resolved kernel comes back without a driver call */
    uint64_t calls = fake_entry_calls(FAKE_E_cuModuleGetFunction);
    bc_kernel *k1 = NULL, *k2 = NULL;
    assert_ok(bc_kernel_get(m, "fixture_saxpy", &k1));
    assert_ok(bc_kernel_get(m, "fixture_saxpy", &k2));
    assert_ptr_equal(k1, k2);
    assert_int_equal(fake_entry_calls(FAKE_E_cuModuleGetFunction), calls);
    assert_ok(bc_module_unload(m));
    assert_int_equal(fake_live_objects() > 0, 1); /* the context and arenas */
    fake_live_counts lc;
    fake_live(&lc);
    assert_int_equal(lc.modules, 0);
    assert_ok(bc_module_unload(NULL));
    bc_device_close(dev);
}

static void test_load_file_and_plain_cubin(void **state)
{
    (void)state;
    bc_device *dev = NULL;
    open_plain(&dev);
    bc_module *m = NULL;
    bc_module_options o;
    bc_module_options_default(&o);
    o.check_digest = 1;
    o.expected_digest = MT_DIGEST_FATBIN ^ 0x10;
    bc_module *untouched = (bc_module *)(uintptr_t)0x77;
    m = untouched;
    assert_status(bc_module_load_file(dev, MT_FATBIN, &o, &m), BC_ERR_DIGEST_MISMATCH);
    assert_ptr_equal(m, untouched);
    assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), 0);
    o.check_digest = 0;
    o.max_file_bytes = 1000;
    assert_status(bc_module_load_file(dev, MT_FATBIN, &o, &m), BC_ERR_FILE_TOO_LARGE);
    assert_status(bc_module_load_file(dev, "tests/fixtures", NULL, &m), BC_ERR_NOT_REGULAR_FILE);
    assert_status(bc_module_load_file(dev, "tests/fixtures/no-such-file", NULL, &m), BC_ERR_FILE_IO);
    assert_status(bc_module_load_file(dev, "tests/fixtures/README.md", NULL, &m), BC_ERR_FATBIN_CORRUPT);
    assert_ptr_equal(m, untouched);
    assert_status(bc_module_load_file(NULL, MT_FATBIN, NULL, &m), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_module_load_file(dev, MT_FATBIN, NULL, NULL), BC_ERR_INVALID_ARGUMENT);
    /* a plain cubin, not in a container */
    assert_ok(bc_module_load_file(dev, MT_FIX "user_kernels_sm90a.cubin", NULL, &m));
    bc_module_info info;
    assert_ok(bc_module_query(m, &info));
    assert_string_equal(info.arch, "sm_90");
    assert_int_equal(info.entries, 1);
    bc_kernel *k = NULL;
    assert_ok(bc_kernel_get(m, "fixture_tma_box", &k));
    bc_device_close(dev); /* releases the module */
}

static void test_missing_kernels(void **state)
{
    (void)state;
    bc_device *dev = NULL;
    open_plain(&dev);
    bc_module_options o;
    bc_module_options_default(&o);
    const char *names[] = {"fixture_saxpy", "no_such_kernel", "fixture_tma_box"};
    o.kernels = names;
    o.kernel_count = 3;
    bc_module *m = NULL;
    assert_status(bc_module_load_file(dev, MT_FATBIN, &o, &m), BC_ERR_MISSING_KERNEL);
    mt_assert_failed(BC_ERR_MISSING_KERNEL, "cuModuleGetFunction", "no_such_kernel");
    assert_null(m);
    fake_live_counts lc;
    fake_live(&lc);
    assert_int_equal(lc.modules, 0); /* unloaded on the way out */
    o.kernel_count = 1;
    assert_ok(bc_module_load_file(dev, MT_FATBIN, &o, &m));
    bc_kernel *k = (bc_kernel *)(uintptr_t)0x55;
    assert_status(bc_kernel_get(m, "fixture_nope", &k), BC_ERR_MISSING_KERNEL);
    mt_assert_failed(BC_ERR_MISSING_KERNEL, "cuModuleGetFunction", "fixture_nope");
    assert_ptr_equal(k, (bc_kernel *)(uintptr_t)0x55);
    assert_status(bc_kernel_get(m, "", &k), BC_ERR_INVALID_ARGUMENT);
    names[1] = NULL;
    o.kernel_count = 2;
    bc_module *m2 = NULL;
    assert_status(bc_module_load_file(dev, MT_FATBIN, &o, &m2), BC_ERR_INVALID_ARGUMENT);
    o.kernel_count = -1;
    assert_status(bc_module_load_file(dev, MT_FATBIN, &o, &m2), BC_ERR_INVALID_ARGUMENT);
    bc_module_info info;
    assert_ok(bc_module_query(m, &info));
    assert_int_equal(info.kernels_resolved, 1);
    bc_device_close(dev);
}

static void test_kernel_query(void **state)
{
    (void)state;
    bc_device *dev = NULL;
    open_plain(&dev);
    fake_set_kernel_attr("fixture_tma_box", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 520);
    fake_set_kernel_attr("fixture_tma_box", CU_FUNC_ATTRIBUTE_NUM_REGS, 40);
    fake_set_kernel_attr("fixture_tma_box", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 128);
    fake_set_kernel_attr("fixture_tma_box", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 16);
    bc_module *m = NULL;
    assert_ok(bc_module_load_file(dev, MT_FATBIN, NULL, &m));
    bc_kernel *k = NULL;
    assert_ok(bc_kernel_get(m, "fixture_tma_box", &k));
    bc_kernel_info in;
    assert_ok(bc_kernel_query(k, &in));
    assert_string_equal(in.name, "fixture_tma_box");
    assert_int_equal(in.registers, 40);
    assert_int_equal(in.static_smem_bytes, 520);
    assert_int_equal(in.max_dynamic_smem_bytes, 232448 - 520);
    assert_int_equal(in.max_threads_per_block, 128);
    assert_int_equal(in.local_bytes, 16);
    assert_int_equal(in.param_count, 4);
    static const uint32_t off[] = {0, 128, 136, 140}, size[] = {128, 8, 4, 4};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(in.param_offset[i], off[i]);
        assert_int_equal(in.param_size[i], size[i]);
    }
    assert_status(bc_kernel_query(NULL, &in), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_kernel_query(k, NULL), BC_ERR_INVALID_ARGUMENT);
    bc_device_close(dev);
}

/* A driver without cuFuncGetParamInfo (before CUDA 12.4): the open works,
 * the signature is unknown (-1) and a plan needs unchecked_params. */
static void test_driver_without_param_info(void **state)
{
    (void)state;
    mt_register_signatures();
    fake_drop_entry(FAKE_E_cuFuncGetParamInfo);
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    mt_env e = {.dev = dev};
    assert_ok(bc_stream_create(dev, 0, &e.s, NULL));
    assert_ok(bc_mem_alloc(dev, 4096, &e.x));
    assert_ok(bc_mem_alloc(dev, 4096, &e.y));
    assert_ok(bc_module_load_file(dev, MT_FATBIN, NULL, &e.mod));
    assert_ok(bc_kernel_get(e.mod, "fixture_saxpy", &e.saxpy));
    bc_kernel_info in;
    assert_ok(bc_kernel_query(e.saxpy, &in));
    assert_int_equal(in.param_count, -1);
    mt_saxpy v;
    mt_saxpy_desc(&v, &e, 100);
    bc_kernel_plan *p = NULL;
    assert_status(bc_kernel_plan_create(e.saxpy, &v.d, &p), BC_ERR_NOT_SUPPORTED);
    mt_assert_failed(BC_ERR_NOT_SUPPORTED, "cuFuncGetParamInfo", "unchecked_params");
    v.d.unchecked_params = 1;
    assert_ok(bc_kernel_plan_create(e.saxpy, &v.d, &p));
    /* packed at 8-byte boundaries, unchecked: the launch hands over each value */
    assert_ok(bc_kernel_launch(p, e.s));
    const fake_launch *l = fake_last_launch();
    assert_int_equal(l->param_bytes, 28);
    assert_int_equal(memcmp(l->params + 8, &e.x, 8), 0);
    assert_int_equal(memcmp(l->params + 24, &v.n, 4), 0);
    bc_device_close(dev);
}

static void test_jit_only_when_asked(void **state)
{
    (void)state;
    fake_device d;
    fake_device_defaults(&d);
    d.cc_major = 12;
    d.cc_minor = 0;
    fake_set_devices(&d, 1);
    bc_device *dev = NULL;
    open_plain(&dev);
    bc_module *m = NULL;
    assert_status(bc_module_load_file(dev, MT_FATBIN, NULL, &m), BC_ERR_UNSUPPORTED_ARCH);
    assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), 0);
    bc_module_options o;
    bc_module_options_default(&o);
    o.allow_ptx_jit = 1;
    assert_status(bc_module_load_file(dev, MT_FIX "user_kernels_zstd.fatbin", &o, &m), BC_ERR_FATBIN_COMPRESSED);
    assert_ok(bc_module_load_file(dev, MT_FATBIN, &o, &m));
    bc_module_info info;
    assert_ok(bc_module_query(m, &info));
    assert_int_equal(info.jit, 1);
    assert_string_equal(info.arch, "compute_80");
    /* the driver got NUL-terminated PTX text (the fake measured it by its NUL) */
    const fake_module_record *r = fake_last_module();
    assert_int_equal(r->size, strlen(r->image) + 1);
    assert_non_null(strstr(r->image, ".entry fixture_saxpy"));
    bc_kernel *k = NULL;
    assert_ok(bc_kernel_get(m, "fixture_saxpy", &k));
    bc_device_close(dev);
}

static void test_driver_refusal_and_corrupt_bytes(void **state)
{
    (void)state;
    bc_device *dev = NULL;
    open_plain(&dev);
    bc_module *m = NULL;
    fake_module_fail_next(CUDA_ERROR_NO_BINARY_FOR_GPU, "ptxas: no binary for this GPU");
    assert_status(bc_module_load_file(dev, MT_FATBIN, NULL, &m), BC_ERR_MODULE_LOAD);
    mt_assert_failed(BC_ERR_MODULE_LOAD, "cuModuleLoadDataEx", "ptxas: no binary for this GPU");
    assert_null(m);
    uint8_t *bytes = NULL;
    size_t len = 0;
    read_fixture(MT_FATBIN, &bytes, &len);
    uint64_t before = fake_entry_calls(FAKE_E_cuModuleLoadDataEx);
    assert_status(bc_module_load(dev, bytes, len / 2, NULL, &m), BC_ERR_FATBIN_CORRUPT);
    bytes[0] ^= 1;
    assert_status(bc_module_load(dev, bytes, len, NULL, &m), BC_ERR_FATBIN_CORRUPT);
    assert_status(bc_module_load(dev, NULL, 10, NULL, &m), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_module_load(dev, bytes, len, NULL, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), before);
    free(bytes);
    assert_null(m);
    /* the device is still usable */
    assert_ok(bc_module_load_file(dev, MT_FATBIN, NULL, &m));
    bc_device_close(dev);
}

/* A user cubin that needs a newer driver than the one loaded is refused
 * before the driver sees it: the fixture is CUDA 13.0 nvcc's, and a CUDA
 * 12.8 driver is told so by name. */
static void test_driver_too_old_for_the_module(void **state)
{
    (void)state;
    fake_set_driver_version(12080); /* the embedded image loads on 12.0 and later */
    bc_device *dev = NULL;
    open_plain(&dev);
    bc_module *m = NULL;
    const uint64_t before = fake_entry_calls(FAKE_E_cuModuleLoadDataEx);
    assert_status(bc_module_load_file(dev, MT_FATBIN, NULL, &m), BC_ERR_DRIVER_TOO_OLD);
    mt_assert_failed(BC_ERR_DRIVER_TOO_OLD, "image driver", "this driver is CUDA 12.8");
    assert_null(m);
    assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), before);
    bc_device_close(dev);
    fake_set_driver_version(13000);
}

/* A module cannot go while a plan made from its kernels lives; close
 * releases plans, then modules, and leaves bc_last_error() alone even when
 * the driver's unload fails. */
static void test_unload_in_use_and_close(void **state)
{
    (void)state;
    mt_env e;
    mt_open(&e, 0);
    mt_saxpy v;
    bc_kernel_plan *p = mt_saxpy_plan(&e, &v, 1000);
    assert_status(bc_module_unload(e.mod), BC_ERR_IN_USE);
    mt_assert_failed(BC_ERR_IN_USE, "bc_module_unload", "1 kernel plan");
    assert_ok(bc_kernel_launch(p, e.s)); /* nothing changed */
    bc_kernel_plan_destroy(p);
    bc_kernel_plan_destroy(NULL);
    assert_ok(bc_module_unload(e.mod));
    /* close with a module and a plan alive, every unload failing */
    assert_ok(bc_module_load_file(e.dev, MT_FATBIN, NULL, &e.mod));
    assert_ok(bc_kernel_get(e.mod, "fixture_saxpy", &e.saxpy));
    assert_ok(bc_kernel_plan_create(e.saxpy, &v.d, &p));
    bc_module *b = NULL;
    assert_status(bc_module_load(e.dev, "junk", 4, NULL, &b), BC_ERR_FATBIN_CORRUPT);
    bc_error_detail before, after;
    bc_last_error(&before);
    fake_fail_entry(FAKE_E_cuModuleUnload, 1, CUDA_ERROR_UNKNOWN, 1);
    bc_device_close(e.dev);
    fake_fail_clear();
    bc_last_error(&after);
    assert_int_equal(after.status, before.status);
    assert_string_equal(after.message, before.message);
    assert_int_equal(fake_injected(), 1); /* the user module's unload failed, and was only logged */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_load_from_memory),
        ft_test(test_load_file_and_plain_cubin),
        ft_test(test_missing_kernels),
        ft_test(test_kernel_query),
        ft_test(test_driver_without_param_info),
        ft_test(test_jit_only_when_asked),
        ft_test(test_driver_refusal_and_corrupt_bytes),
        ft_test(test_driver_too_old_for_the_module),
        ft_test(test_unload_in_use_and_close),
    };
    return cmocka_run_group_tests_name("module", tests, NULL, NULL);
}
