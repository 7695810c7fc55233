/* The image loader and the smoke check over the fake driver: which cubin
 * each compute capability loads, the kernels it resolves and their
 * shared-memory limits, the driver's log on refusal, missing kernels, every
 * driver call failing in turn, and the smoke check's poison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"

#include "digest.h"
#include "fatbin.h"
#include "gemm_abi.h"
#include "image.h"
#include "resident_abi.h"
#include "internal.h"
#include "select.h"
#include "smoke_emu.h"

extern const uint8_t bc__fatbin_bytes[];
extern const uint8_t bc__groups_bytes[];
extern const uint8_t bc__sk_bytes[];
extern const size_t bc__fatbin_size;

static const bc__family family_of[BC__KERNEL_COUNT] = {
#define K(id, sym, fam, smem) [BC_K_##id] = BC__FAM_##fam,
#include "manifest.h"
#undef K
};
static const int smem_of[BC__KERNEL_COUNT] = {
#define K(id, sym, fam, smem) [BC_K_##id] = (smem),
#include "manifest.h"
#undef K
};

static void use_device(int major, int minor)
{
    fake_device d;
    fake_device_defaults(&d);
    d.cc_major = major;
    d.cc_minor = minor;
    fake_set_devices(&d, 1);
}

static bc_device_config load_config(void)
{
    bc_device_config c = ft_config();
    c.skip_kernel_load = 0;
    return c;
}


/* On sm_90a each optional cubin is loaded only for its own groups: the
 * stream-K twins alone load the stream-K cubin and not the other groups',
 * the resident kernels alone the other way round. */
static void test_each_optional_cubin_alone(void **state)
{
    (void)state;
    static const struct {
        uint32_t groups;
        int groups_module, sk_module;
    } cases[] = {{BC_KERNELS_STREAM_K, 0, 1}, {BC_KERNELS_RESIDENT, 1, 0}, {BC_KERNELS_PORTABLE, 1, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_install();
        use_device(9, 0);
        bc_device_config cfg = load_config();
        cfg.kernel_groups = cases[i].groups;
        bc_device *dev = NULL;
        assert_ok(bc_device_open(&cfg, &dev));
        assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), 2);
        assert_ptr_equal(fake_last_module()->image, cases[i].sk_module ? bc__sk_bytes : bc__groups_bytes);
        assert_int_equal(dev->image.groups != NULL, cases[i].groups_module);
        assert_int_equal(dev->image.sk != NULL, cases[i].sk_module);
        assert_int_equal(dev->image.fn[BC_K_GEMM_SM90_128X128K] != NULL, cases[i].sk_module);
        assert_int_equal(dev->image.fn[BC_K_RESIDENT_SM90_64X32] != NULL, cases[i].groups == BC_KERNELS_RESIDENT);
        bc_device_close(dev);
    }
}

/* Offset of the payload of the embedded entry named `arch`. */
static size_t payload_of(const char *arch)
{
    bc__fatbin_entry e[64];
    size_t n = 0;
    assert_int_equal(bc__fatbin_parse(bc__fatbin_bytes, bc__fatbin_size, e, 64, &n), BC_OK);
    for (size_t i = 0; i < n; i++) {
        char name[24];
        if (!strcmp(bc__fatbin_arch_name(&e[i], name, sizeof name), arch))
            return e[i].payload_offset;
    }
    fail_msg("no %s entry in the embedded fatbin", arch);
    return 0;
}

static void test_load_per_capability(void **state)
{
    (void)state;
    static const struct {
        int major, minor;
        const char *arch;
        unsigned fams;     /* besides ALL */
        unsigned optional; /* of fams: resolved only when bc_device_config.kernel_groups asks */
    } table[] = {
        {9, 0, "sm_90a", 1u << BC__FAM_SM90 | 1u << BC__FAM_SM80 | 1u << BC__FAM_RES90 | 1u << BC__FAM_SK90,
         1u << BC__FAM_SM80 | 1u << BC__FAM_RES90 | 1u << BC__FAM_SK90},
        {10, 0, "sm_100a", 1u << BC__FAM_SM100, 0},
        {10, 1, "sm_100f", 1u << BC__FAM_SM100, 0},
        {10, 3, "sm_103a", 1u << BC__FAM_SM100, 0},
        {11, 0, "sm_110a", 1u << BC__FAM_SM100, 0},
        {8, 0, "sm_80", 1u << BC__FAM_SM80, 0},
        {8, 6, "sm_80", 1u << BC__FAM_SM80, 0},
        {8, 7, "sm_80", 1u << BC__FAM_SM80, 0},
        {8, 9, "sm_80", 1u << BC__FAM_SM80, 0},
        {12, 0, "sm_120", 1u << BC__FAM_SM80, 0},
        {12, 1, "sm_120", 1u << BC__FAM_SM80, 0},
    };
    for (size_t run = 0; run < 2 * sizeof table / sizeof table[0]; run++) {
        const size_t t = run / 2;
        const int all = run % 2; /* the default groups, then every group */
        fake_install();
        use_device(table[t].major, table[t].minor);
        bc_device_config cfg = load_config();
        cfg.kernel_groups = all ? BC_KERNELS_ALL : 0u;
        const unsigned fams = all ? table[t].fams : table[t].fams & ~table[t].optional;
        bc_device *dev = NULL;
        assert_ok(bc_device_open(&cfg, &dev));
        bc_device_info info;
        assert_ok(bc_device_query(dev, &info));
        assert_string_equal(info.image_arch, table[t].arch);
        /* loaded in place from the embedded bytes, with the error-log options; on sm_90a the optional
         * groups asked for come after it, as modules of their own cubins (the resident and portable
         * kernels', then the stream-K twins') */
        const int groups_module = all && table[t].optional != 0;
        assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), 1 + 2 * groups_module);
        const fake_module_record *m = fake_last_module();
        assert_ptr_equal(m->image, groups_module ? bc__sk_bytes : bc__fatbin_bytes + payload_of(table[t].arch));
        assert_int_equal(dev->image.groups != NULL, groups_module);
        assert_int_equal(dev->image.sk != NULL, groups_module);
        assert_int_equal(m->num_options, 2);
        assert_int_equal(m->options[0], CU_JIT_ERROR_LOG_BUFFER);
        assert_int_equal(m->options[1], CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
        for (int k = 0; k < BC__KERNEL_COUNT; k++) {
            CUfunction f = dev->image.fn[k];
            int want = family_of[k] == BC__FAM_ALL || (fams & (1u << family_of[k])) != 0;
            if (!want) {
                assert_null(f);
                continue;
            }
            assert_non_null(f);
            int v = -1;
            assert_true(fake_function_attr(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &v));
            if (smem_of[k] > 0)
                assert_int_equal(v, smem_of[k]);
            else
                assert_int_equal(v, 48 << 10); /* left at the driver's default */
        }
        bc_open_timings tm;
        assert_ok(bc_device_open_timings(dev, &tm));
        assert_true(tm.image_check_us > 0 && tm.module_load_us > 0);
        bc_device_close(dev);
        assert_int_equal(fake_live_objects(), 0);
    }
}

static void test_unsupported_device_never_loads(void **state)
{
    (void)state;
    use_device(7, 5);
    bc_device_config cfg = load_config();
    bc_device *dev = NULL;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_UNSUPPORTED_ARCH);
    assert_null(dev);
    assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), 0);
    bc_error_detail d;
    bc_last_error(&d);
    assert_non_null(strstr(d.message, "device sm_75"));
    assert_non_null(strstr(d.message, "sm_80, sm_120, sm_90a")); /* naming what is present */
}

static void test_refusal_carries_the_driver_log(void **state)
{
    (void)state;
    fake_module_fail_next(CUDA_ERROR_INVALID_IMAGE, "ptxas fatal: cubin for the wrong GPU");
    bc_device_config cfg = load_config();
    bc_device *dev = NULL;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_MODULE_LOAD);
    ft_assert_last(BC_ERR_MODULE_LOAD, "cuModuleLoadDataEx", CUDA_ERROR_INVALID_IMAGE);
    bc_error_detail d;
    bc_last_error(&d);
    assert_string_equal(d.cu_name, "CUDA_ERROR_INVALID_IMAGE");
    assert_non_null(strstr(d.message, "CUDA_ERROR_INVALID_IMAGE (200)"));
    assert_non_null(strstr(d.message, "ptxas fatal: cubin for the wrong GPU"));
    assert_non_null(strstr(d.message, "sm_90a"));
}

/* A one-entry fatbin (sm_75a: no manifest family, so only the ALL kernels
 * are needed) whose 192-byte "cubin" is the smallest CUDA ELF the loader
 * reads as whole (64-bit little-endian, machine 190, ELF ABI 7 with sm_75
 * in e_flags, one null section header at 128) and holds the given
 * NUL-separated names at 64; the fake is told its size. */
#define TINY_PAYLOAD 192
static size_t tiny_fatbin(uint8_t *buf, const char *names, size_t names_len)
{
    memset(buf, 0, 16 + 64 + TINY_PAYLOAD);
    uint32_t magic = BC__FATBIN_MAGIC, arch = 75;
    uint16_t one = 1, sixteen = 16, elf = 2, ev = 0x0101;
    uint64_t fat = 64 + TINY_PAYLOAD, ps = TINY_PAYLOAD, flags = 0x100011;
    uint32_t hs = 64;
    memcpy(buf, &magic, 4);
    memcpy(buf + 4, &one, 2);
    memcpy(buf + 6, &sixteen, 2);
    memcpy(buf + 8, &fat, 8);
    uint8_t *e = buf + 16;
    memcpy(e, &elf, 2);
    memcpy(e + 2, &ev, 2);
    memcpy(e + 4, &hs, 4);
    memcpy(e + 8, &ps, 8);
    memcpy(e + 0x1C, &arch, 4);
    memcpy(e + 0x28, &flags, 8);
    uint8_t *elf_h = e + 64;
    memcpy(elf_h, "\177ELF\002\001", 6);
    elf_h[8] = 7; /* ELF ABI 7: the SM in e_flags' low byte */
    const uint16_t machine = 190, shent = 64, shnum = 1;
    const uint32_t eflags = 75;
    const uint64_t shoff = 128;
    memcpy(elf_h + 18, &machine, 2);
    memcpy(elf_h + 0x28, &shoff, 8);
    memcpy(elf_h + 0x30, &eflags, 4);
    memcpy(elf_h + 0x3a, &shent, 2);
    memcpy(elf_h + 0x3c, &shnum, 2);
    assert_true(names_len <= 128 - 64);
    memcpy(e + 64 + 64, names, names_len);
    fake_set_next_image_size(TINY_PAYLOAD);
    return 16 + 64 + TINY_PAYLOAD;
}

static void test_missing_kernel(void **state)
{
    (void)state;
    use_device(7, 5);
    bc_device_config cfg = ft_config(); /* a context, no image */
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    uint8_t buf[16 + 64 + TINY_PAYLOAD];
    static const char only_smoke[] = "\0bc_smoke_checksum";
    size_t len = tiny_fatbin(buf, only_smoke, sizeof only_smoke);
    bc__image img;
    memset(&img, 0xAB, sizeof img);
    /* the one entry: its header and payload; the headers digest: XXH64 of the header's XXH64 */
    uint64_t entry_digest = bc__xxh64(buf + 16, len - 16, 0), hh = bc__xxh64(buf + 16, 64, 0);
    uint64_t headers = bc__xxh64(&hh, sizeof hh, 0);
    assert_status(bc__image_load_from(dev, &img, buf, len, &entry_digest, 1, headers, NULL), BC_ERR_MISSING_KERNEL);
    ft_assert_last(BC_ERR_MISSING_KERNEL, "cuModuleGetFunction", CUDA_ERROR_NOT_FOUND);
    bc_error_detail d;
    bc_last_error(&d);
    assert_string_equal(d.cu_name, "CUDA_ERROR_NOT_FOUND"); /* kept through the re-recording */
    assert_non_null(strstr(d.message, "bc_test_spin"));
    assert_non_null(strstr(d.message, "sm_75a"));
    assert_null(img.mod);
    fake_live_counts lc;
    fake_live(&lc);
    assert_int_equal(lc.modules, 0); /* unloaded on the way out */

    /* every ALL kernel present: loads, and nothing else is asked for */
    static const char both[] = "\0bc_smoke_checksum\0bc_test_spin\0bc_test_fault";
    len = tiny_fatbin(buf, both, sizeof both);
    bc__image_timing t;
    entry_digest = bc__xxh64(buf + 16, len - 16, 0), hh = bc__xxh64(buf + 16, 64, 0);
    headers = bc__xxh64(&hh, sizeof hh, 0);
    assert_ok(bc__image_load_from(dev, &img, buf, len, &entry_digest, 1, headers, &t));
    assert_string_equal(img.arch, "sm_75a");
    assert_non_null(img.fn[BC_K_SMOKE]);
    assert_non_null(img.fn[BC_K_SPIN]);
    assert_non_null(img.fn[BC_K_FAULT]);
    assert_int_equal(fake_entry_calls(FAKE_E_cuFuncSetAttribute), 0);
    bc__image_unload(&img);
    assert_null(img.mod);
    bc_device_close(dev);
}

/* Fails each driver call of bc__image_load in turn (once, then for good):
 * a clean status, *img empty, no module left behind. */
static void test_every_driver_call_fails(void **state)
{
    (void)state;
    for (int persistent = 0; persistent <= 1; persistent++) {
        int done = 0;
        for (uint64_t k = 1; !done && k < 100; k++) {
            fake_install();
            bc_device_config cfg = ft_config();
            bc_device *dev = NULL;
            assert_ok(bc_device_open(&cfg, &dev));
            fake_fail_call(k, CUDA_ERROR_INVALID_VALUE, persistent);
            bc__image img;
            memset(&img, 0xAB, sizeof img);
            bc_status st = bc__image_load(dev, &img, NULL);
            fake_fail_clear();
            if (st == BC_OK) {
                assert_int_equal(fake_injected(), 0);
                done = 1;
                bc__image_unload(&img);
            } else {
                assert_int_equal(fake_injected() > 0, 1);
                if (st != BC_ERR_MODULE_LOAD && st != BC_ERR_DRIVER)
                    fail_msg("call %llu: %s", (unsigned long long)k, bc_status_string(st));
                bc_error_detail d;
                bc_last_error(&d);
                /* the first failure is the one reported, not the unload's */
                assert_string_equal(d.call, fake_entry_name((fake_entry)fake_failed_entry()));
                assert_null(img.mod);
                assert_null(img.fn[BC_K_SMOKE]);
                fake_live_counts lc;
                fake_live(&lc);
                assert_int_equal(lc.modules, 0);
            }
            bc_device_close(dev);
            assert_int_equal(fake_live_objects(), 0);
        }
        assert_true(done);
    }
}

static void test_smoke_poison_is_caught(void **state)
{
    (void)state;
    bc_device_config cfg = load_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    fake_set_param_size(sizeof(bc_smoke_params));
    bc_smoke_report rep = {.elements = 7};
    /* the fake runs no kernel: every element keeps the 0xFF poison */
    assert_status(bc_selftest_smoke(dev, s, &rep), BC_ERR_VERIFY_FAILED);
    assert_int_equal(rep.elements, 7); /* untouched on failure */
    bc_error_detail d;
    bc_last_error(&d);
    assert_non_null(strstr(d.message, "element 0 of 65536 is 0xffffffff"));
    const fake_launch *l = fake_last_launch();
    assert_string_equal(l->kernel, "bc_smoke_checksum");
    assert_int_equal(l->grid[0], BC_SMOKE_ELEMENTS / 256);
    assert_int_equal(l->block[0], 256);
    assert_ptr_equal(l->stream, bc_stream_handle(s));
    bc_smoke_params p;
    memcpy(&p, l->params, sizeof p);
    assert_int_equal(p.n, BC_SMOKE_ELEMENTS);
    assert_int_equal(p.seed, BC_SMOKE_SEED);
    bc_pool_stats ps;
    assert_ok(bc_pool_get_stats(dev, BC_POOL_DEVICE, &ps));
    assert_int_equal(ps.live_allocations, 0);
    assert_ok(bc_pool_get_stats(dev, BC_POOL_HOST, &ps));
    assert_int_equal(ps.live_allocations, 0);
    bc_device_close(dev);
}

/* A device whose smoke and GEMM-check kernels the fake emulates, and a stream. */
static void open_emulated(bc_device **dev, bc_stream **s)
{
    smoke_emu_install(-1);
    bc_device_config cfg = load_config();
    assert_ok(bc_device_open(&cfg, dev));
    assert_ok(bc_stream_create(*dev, 0, s, NULL));
}

static void test_smoke_passes_when_the_kernel_runs(void **state)
{
    (void)state;
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    open_emulated(&dev, &s);
    bc_smoke_report rep;
    memset(&rep, 0, sizeof rep);
    assert_ok(bc_selftest_smoke(dev, s, &rep));
    assert_int_equal(rep.elements, BC_SMOKE_ELEMENTS);
    assert_int_equal(rep.seed, BC_SMOKE_SEED);
    assert_true(rep.first_launch_us > 0 && rep.verify_us > 0);
    assert_int_equal(fake_launches(), 1);
    bc_pool_stats ps;
    assert_ok(bc_pool_get_stats(dev, BC_POOL_DEVICE, &ps));
    assert_int_equal(ps.live_allocations, 0);
    /* without a host pool the result goes through a malloc'ed buffer */
    bc_device_close(dev);
    bc_device_config cfg = load_config();
    cfg.host_arena_bytes = 0;
    assert_ok(bc_device_open(&cfg, &dev));
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    assert_ok(bc_selftest_smoke(dev, s, NULL));
    bc_device_close(dev);
}

static void test_smoke_names_the_first_wrong_element(void **state)
{
    (void)state;
    smoke_emu_install(12345);
    bc_device_config cfg = load_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    assert_status(bc_selftest_smoke(dev, s, NULL), BC_ERR_VERIFY_FAILED);
    bc_error_detail d;
    bc_last_error(&d);
    char want[96];
    snprintf(want, sizeof want, "element 12345 of 65536 is 0x%08x, expected 0x%08x (1 wrong in total",
             bc_smoke_value(12345, BC_SMOKE_SEED) ^ 0x10u, bc_smoke_value(12345, BC_SMOKE_SEED));
    if (strstr(d.message, want) == NULL)
        fail_msg("message: %s", d.message);
    bc_device_close(dev);
}

/* A wait that never ends: BC_ERR_TIMEOUT after BC_SMOKE_TIMEOUT_NS, and the
 * blocks the GPU may still write stay allocated until close. */
static void test_smoke_timeout_keeps_blocks(void **state)
{
    (void)state;
    bc_device_config cfg = load_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    fake_set_busy(FAKE_BUSY_FOREVER);
    assert_status(bc_selftest_smoke(dev, s, NULL), BC_ERR_TIMEOUT);
    bc_pool_stats ps;
    assert_ok(bc_pool_get_stats(dev, BC_POOL_DEVICE, &ps));
    assert_int_equal(ps.live_allocations, 1);
    fake_set_busy(0);
    bc_device_close(dev);
}

/* The known-answer GEMM likewise: after BC_ERR_TIMEOUT its A, B and D,
 * which the kernel may still read or write, stay allocated until close. */
static void test_gemm_check_timeout_keeps_blocks(void **state)
{
    (void)state;
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    open_emulated(&dev, &s);
    fake_set_kernel_duration_ms(60000);
    assert_status(bc_selftest_gemm(dev, s, NULL), BC_ERR_TIMEOUT); /* after BC_SMOKE_TIMEOUT_NS, 2 s */
    fake_finish_kernels();
    fake_set_kernel_duration_ms(0);
    bc_pool_stats ps;
    assert_ok(bc_pool_get_stats(dev, BC_POOL_DEVICE, &ps));
    assert_int_equal(ps.live_allocations, 3);
    bc_device_close(dev);
}

static void test_smoke_needs_kernels(void **state)
{
    (void)state;
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    bc_stream *s = NULL;
    assert_ok(bc_stream_create(dev, 0, &s, NULL));
    assert_status(bc_selftest_smoke(dev, s, NULL), BC_ERR_MISSING_KERNEL);
    assert_status(bc_selftest_smoke(dev, NULL, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(fake_launches(), 0);
    bc_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_load_per_capability),
        ft_test(test_each_optional_cubin_alone),
        ft_test(test_unsupported_device_never_loads),
        ft_test(test_refusal_carries_the_driver_log),
        ft_test(test_missing_kernel),
        ft_test(test_every_driver_call_fails),
        ft_test(test_smoke_poison_is_caught),
        ft_test(test_smoke_passes_when_the_kernel_runs),
        ft_test(test_smoke_names_the_first_wrong_element),
        ft_test(test_smoke_timeout_keeps_blocks),
        ft_test(test_gemm_check_timeout_keeps_blocks),
        ft_test(test_smoke_needs_kernels),
    };
    return cmocka_run_group_tests_name("image", tests, NULL, NULL);
}
