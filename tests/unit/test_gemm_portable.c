/* The portable family on the fake driver: every compute capability from
 * Ampere up selects its image (sm_80 for 8.x, sm_120 for 12.x) and a
 * portable configuration, and the launch is packed the way
 * kernels_ptx/gemm_sm80.c reads it (grid, block, shared memory, no launch
 * attributes, A and B by pointer); the H100 runs the same kernels when a plan
 * names one; 7.5 is refused naming the images present; a driver older than
 * the selected image needs is refused at open, before any module load. The
 * expected choices below are worked out by hand from the README's rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"
#include "gemm_abi.h"
#include "gemm_internal.h"

/* A device of compute capability major.minor with `sms` SMs and `smem`
 * bytes of opt-in shared memory. */
static void use_device(int major, int minor, int sms, int smem)
{
    fake_device d;
    fake_device_defaults(&d);
    d.cc_major = major, d.cc_minor = minor, d.sm_count = sms, d.smem_optin = smem;
    snprintf(d.name, sizeof d.name, "Fake sm_%d%d", major, minor);
    fake_set_devices(&d, 1);
}

typedef struct env {
    bc_device *dev;
    bc_stream *s;
    bc_devptr a, b, d;
    int cc_major;
} env;

static void env_open(env *e)
{
    memset(e, 0, sizeof *e);
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    /* every operand block holds the largest shape planned here: plan creation checks each extent
     * against its block (the fake's memory is host memory that is never touched) */
    cfg.device_arena_bytes = 800u << 20;
    assert_ok(bc_device_open(&cfg, &e->dev));
    assert_ok(bc_stream_create(e->dev, 0, &e->s, NULL));
    assert_ok(bc_mem_alloc(e->dev, 256u << 20, &e->a));
    assert_ok(bc_mem_alloc(e->dev, 256u << 20, &e->b));
    assert_ok(bc_mem_alloc(e->dev, 256u << 20, &e->d));
    fake_set_param_size(sizeof(bc_gemm_params));
    bc_device_info info;
    assert_ok(bc_device_query(e->dev, &info));
    e->cc_major = info.cc_major;
}

/* Plans and launches M x N x K; returns the packed parameter. */
static bc_gemm_params launch(env *e, int64_t m, int64_t n, int64_t k, const char *config, const fake_launch **out)
{
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = m, d.n = n, d.k = k, d.a = e->a, d.b = e->b, d.d = e->d, d.config = config;
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e->dev, &d, &plan));
    assert_ok(bc_gemm_launch(plan, e->s));
    const fake_launch *l = fake_last_launch();
    assert_int_equal(l->param_bytes, sizeof(bc_gemm_params));
    bc_gemm_params p;
    memcpy(&p, l->params, sizeof p);
    bc_gemm_plan_destroy(plan);
    *out = l;
    return p;
}

static int all_zero(const uint64_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i])
            return 0;
    return 1;
}

/* What a portable launch of M x N x K on tile bm x bn (bk) must carry. */
static void check_portable(const env *e, const fake_launch *l, const bc_gemm_params *p, int64_t m, int64_t n,
                           int64_t k, unsigned bm, unsigned bn, unsigned bk, unsigned threads, unsigned smem)
{
    const unsigned tm = (unsigned)((m + bm - 1) / bm), tn = (unsigned)((n + bn - 1) / bn);
    assert_int_equal(l->grid[0], tm * tn); /* one CTA per tile */
    assert_int_equal(l->grid[1], 1);
    assert_int_equal(l->block[0], threads);
    assert_int_equal(l->smem, smem);
    /* no cluster; programmatic serialization only from the sm_90a image (griddepcontrol is sm_90+) */
    if (e->cc_major == 9) {
        assert_int_equal(l->num_attrs, 1);
        assert_int_equal(l->attrs[0].id, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
        assert_int_equal(l->attrs[0].value.programmaticStreamSerializationAllowed, 1);
    } else {
        assert_int_equal(l->num_attrs, 0);
    }
    assert_int_equal(l->cluster[0], 1);
    assert_int_equal(p->tiles_m, tm), assert_int_equal(p->tiles_n, tn);
    assert_int_equal(p->k_blocks, (unsigned)((k + bk - 1) / bk));
    assert_int_equal(p->group_m, 8);
    assert_int_equal(p->m, m), assert_int_equal(p->n, n), assert_int_equal(p->k, k);
    assert_true(p->a == e->a && p->b == e->b && p->d == e->d);
    assert_int_equal(p->lda, k), assert_int_equal(p->ldb, k), assert_int_equal(p->ldd, n);
    assert_true(all_zero(p->tmap_a, 16) && all_zero(p->tmap_b, 16)); /* no tensor maps */
    assert_int_equal(p->flags, 0);
    assert_int_equal(p->split_k, 1);
}

#define SMEM_128X256 (3 * (128 + 256) * 32 * 2)
#define SMEM_128X128 (4 * (128 + 128) * 32 * 2)
#define SMEM_64X64 (5 * (64 + 64) * 32 * 2)
#define SMEM_64X32 (8 * (64 + 32) * 64 * 2)
#define SMEM_32X32 (8 * (32 + 32) * 64 * 2)

/* Every compute capability the portable images serve: the image, the
 * rule's choice for 4096^3 and its packed launch. 128x256 (512 CTAs) wins
 * on every SM count here but 170, where its 4 waves (3.01 rounded up) cost
 * 4 x 32768 x 128 = 16777216 and 128x128's 7 waves 7 x 16384 x 128 / 0.9 =
 * 16311182. */
static void test_every_capability(void **state)
{
    (void)state;
    static const struct {
        int major, minor, sms, smem;
        const char *image;
        int wide; /* 1: 128x256, 0: 128x128 */
    } devs[] = {
        {8, 0, 108, 166912, "sm_80", 1},   /* A100 */
        {8, 6, 82, 101376, "sm_80", 1},    /* RTX 3090 */
        {8, 7, 16, 166912, "sm_80", 1},    /* Jetson AGX Orin */
        {8, 9, 58, 101376, "sm_80", 1},    /* L4 */
        {12, 0, 170, 101376, "sm_120", 0}, /* RTX 5090 */
        {12, 1, 48, 101376, "sm_120", 1},  /* GB10 */
    };
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        fake_install();
        use_device(devs[i].major, devs[i].minor, devs[i].sms, devs[i].smem);
        env e;
        env_open(&e);
        bc_device_info info;
        assert_ok(bc_device_query(e.dev, &info));
        if (strcmp(info.image_arch, devs[i].image) != 0)
            fail_msg("cc %d.%d loaded %s, want %s", devs[i].major, devs[i].minor, info.image_arch, devs[i].image);
        const fake_launch *l = NULL;
        bc_gemm_params p = launch(&e, 4096, 4096, 4096, NULL, &l);
        if (devs[i].wide) {
            assert_string_equal(l->kernel, "bc_gemm_sm80_128x256");
            check_portable(&e, l, &p, 4096, 4096, 4096, 128, 256, 32, 256, SMEM_128X256);
        } else {
            assert_string_equal(l->kernel, "bc_gemm_sm80_128x128");
            check_portable(&e, l, &p, 4096, 4096, 4096, 128, 128, 32, 128, SMEM_128X128);
        }
        assert_int_equal(p.ab_type, 0), assert_int_equal(p.d_type, 0);
        bc_device_close(e.dev);
        assert_int_equal(fake_live_objects(), 0);
    }
}

/* The rule on Orin (16 SMs) and the A100 (108): small M goes to 32x32 or
 * 64x32, mid shapes to what fills the SMs (costs in the comments: waves x
 * tile area x k-blocks x 100 / weight). */
static void test_rule_small_shapes(void **state)
{
    (void)state;
    static const struct {
        int sms;
        int64_t m, n, k;
        const char *kernel;
        unsigned bm, bn, bk, threads, smem;
    } cases[] = {
        /* 16 SMs, 16x4096x4096: 128x256 1x32768x128 = 4194304; 128x128 2x16384x128/0.9 = 4660337;
         * 64x64 4x4096x128/0.55 = 3813003; 64x32 8x2048x64/0.3 = 3495253; 32x32 8x1024x64/0.17 = 3084047 */
        {16, 16, 4096, 4096, "bc_gemm_sm80_32x32", 32, 32, 64, 128, SMEM_32X32},
        /* 108 SMs, 128x2048x2048: 2097152 / 1165084 / 476625 / 436906 / 32x32 3x1024x32/0.17 = 578258 */
        {108, 128, 2048, 2048, "bc_gemm_sm80_64x32", 64, 32, 64, 128, SMEM_64X32},
        /* 108 SMs, 192x2048x2048: 64x32 (192 CTAs) 2x2048x32/0.3 = 436906; 32x32 (384 CTAs)
         * 4x1024x32/0.17 = 771011; 64x64 (96 CTAs) 1x4096x64/0.55 = 476625 */
        {108, 192, 2048, 2048, "bc_gemm_sm80_64x32", 64, 32, 64, 128, SMEM_64X32},
        /* 108 SMs, 64x2048x2048 (64x32: 64 CTAs, 1 wave, 2048x32/0.3 = 218453; 32x32: 128 CTAs, 2 waves,
         * 2x1024x32/0.17 = 385505) */
        {108, 64, 2048, 2048, "bc_gemm_sm80_64x32", 64, 32, 64, 128, SMEM_64X32},
        /* 108 SMs, 512x4096x1024: 128x256 1x32768x32 = 1048576; 128x128 2x16384x32/0.9 = 1165084;
         * 64x64 5x4096x32/0.55 = 1191563; 64x32 10x2048x16/0.3 = 1092266 */
        {108, 512, 4096, 1024, "bc_gemm_sm80_128x256", 128, 256, 32, 256, SMEM_128X256},
        /* 108 SMs, 256x1024x4096 (8 / 16 / 64 / 128 / 256 CTAs: 1, 1, 1, 2, 3 waves): 4194304 / 2330168 /
         * 953250 / 873813 / 32x32 3x1024x64/0.17 = 1156517 */
        {108, 256, 1024, 4096, "bc_gemm_sm80_64x32", 64, 32, 64, 128, SMEM_64X32},
        /* 132 SMs (the H100's count, where the portable kernels run when named): 32x32 where its CTAs fit
         * one wave, 64x32 where 32x32 would need two. 128x2048x2048: 64x32 2048x32/0.3 = 218453, 32x32
         * 2x1024x32/0.17 = 385505; 64x1024x1024: 32x32 1024x16/0.17 = 96376, 64x32 2048x16/0.3 = 109226;
         * 16x4096x4096: 32x32 1024x64/0.17 = 385505, 64x32 2048x64/0.3 = 436906; 256x1024x4096: 64x32
         * 2048x64/0.3 = 436906, 32x32 2x1024x64/0.17 = 771011 */
        {132, 128, 2048, 2048, "bc_gemm_sm80_64x32", 64, 32, 64, 128, SMEM_64X32},
        {132, 64, 1024, 1024, "bc_gemm_sm80_32x32", 32, 32, 64, 128, SMEM_32X32},
        {132, 16, 4096, 4096, "bc_gemm_sm80_32x32", 32, 32, 64, 128, SMEM_32X32},
        {132, 256, 1024, 4096, "bc_gemm_sm80_64x32", 64, 32, 64, 128, SMEM_64X32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_install();
        use_device(8, 7, cases[i].sms, 166912);
        env e;
        env_open(&e);
        const fake_launch *l = NULL;
        bc_gemm_params p = launch(&e, cases[i].m, cases[i].n, cases[i].k, NULL, &l);
        if (strcmp(l->kernel, cases[i].kernel) != 0)
            fail_msg("%d SMs, %lldx%lldx%lld: chose %s, the rule says %s", cases[i].sms, (long long)cases[i].m,
                     (long long)cases[i].n, (long long)cases[i].k, l->kernel, cases[i].kernel);
        check_portable(&e, l, &p, cases[i].m, cases[i].n, cases[i].k, cases[i].bm, cases[i].bn, cases[i].bk,
                       cases[i].threads, cases[i].smem);
        bc_device_close(e.dev);
    }
}

/* bc_gemm_desc.resident changes nothing where no resident executor runs
 * (the rule's portable choice, as without it). */
static void test_resident_flag_elsewhere(void **state)
{
    (void)state;
    fake_install();
    use_device(8, 7, 16, 166912);
    env e;
    env_open(&e);
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = 16, d.n = 4096, d.k = 4096, d.a = e.a, d.b = e.b, d.d = e.d, d.resident = 1;
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &plan));
    bc_gemm_plan_info info;
    assert_ok(bc_gemm_plan_query(plan, &info));
    assert_string_equal(info.config, "sm80_32x32"); /* test_rule_small_shapes' choice on 16 SMs */
    bc_gemm_plan_destroy(plan);
    bc_device_close(e.dev);
}

/* Named configurations: each portable one on an Orin-like device; on the
 * H100 (the sm_90a image) only when named, the rule keeping to wgmma; a
 * split is refused; sm_90 names are refused on 8.7. */
static void test_named_configs(void **state)
{
    (void)state;
    static const struct {
        const char *name, *kernel;
        unsigned bm, bn, bk, threads, smem;
    } cfg[] = {
        {"sm80_128x256", "bc_gemm_sm80_128x256", 128, 256, 32, 256, SMEM_128X256},
        {"sm80_128x128", "bc_gemm_sm80_128x128", 128, 128, 32, 128, SMEM_128X128},
        {"sm80_64x64", "bc_gemm_sm80_64x64", 64, 64, 32, 128, SMEM_64X64},
        {"sm80_64x32", "bc_gemm_sm80_64x32", 64, 32, 64, 128, SMEM_64X32},
        {"sm80_32x32", "bc_gemm_sm80_32x32", 32, 32, 64, 128, SMEM_32X32},
    };
    for (int h100 = 0; h100 <= 1; h100++) {
        fake_install();
        if (!h100)
            use_device(8, 7, 16, 166912);
        env e;
        env_open(&e);
        for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
            const fake_launch *l = NULL;
            bc_gemm_params p = launch(&e, 1000, 700, 264, cfg[i].name, &l);
            assert_string_equal(l->kernel, cfg[i].kernel);
            check_portable(&e, l, &p, 1000, 700, 264, cfg[i].bm, cfg[i].bn, cfg[i].bk, cfg[i].threads, cfg[i].smem);
        }
        const fake_launch *l = NULL;
        launch(&e, 4096, 4096, 4096, NULL, &l);
        assert_string_equal(l->kernel, h100 ? "bc_gemm_sm90_128x256" : "bc_gemm_sm80_128x256");
        bc_gemm_desc d;
        bc_gemm_desc_default(&d);
        d.m = 256, d.n = 256, d.k = 4096, d.a = e.a, d.b = e.b, d.d = e.d, d.config = "sm80_128x128", d.split_k = 2;
        bc_gemm_plan *plan = NULL;
        assert_status(bc_gemm_plan_create(e.dev, &d, &plan), BC_ERR_INVALID_ARGUMENT);
        ft_assert_last(BC_ERR_INVALID_ARGUMENT, "split_k", 0);
        d.split_k = 0, d.config = "sm90_128x128";
        if (!h100) {
            assert_status(bc_gemm_plan_create(e.dev, &d, &plan), BC_ERR_INVALID_ARGUMENT);
            ft_assert_last(BC_ERR_INVALID_ARGUMENT, "config", 0);
        }
        bc_device_close(e.dev);
    }
}

/* On the H100 the portable family is an optional group: a plan naming one
 * of its configurations needs BC_KERNELS_PORTABLE at open, and says so;
 * where it is the native family (CC 8.7) it is always there. */
static void test_portable_group(void **state)
{
    (void)state;
    for (int h100 = 1; h100 >= 0; h100--) {
        fake_install();
        if (!h100)
            use_device(8, 7, 16, 166912);
        bc_device_config cfg = ft_config();
        cfg.skip_kernel_load = 0; /* and kernel_groups 0, the default */
        cfg.device_arena_bytes = 8u << 20;
        bc_device *dev = NULL;
        assert_ok(bc_device_open(&cfg, &dev));
        bc_devptr a = 0, b = 0, d = 0;
        assert_ok(bc_mem_alloc(dev, 1u << 20, &a));
        assert_ok(bc_mem_alloc(dev, 1u << 20, &b));
        assert_ok(bc_mem_alloc(dev, 1u << 20, &d));
        bc_gemm_desc desc;
        bc_gemm_desc_default(&desc);
        desc.m = 100, desc.n = 100, desc.k = 64, desc.a = a, desc.b = b, desc.d = d, desc.config = "sm80_64x64";
        bc_gemm_plan *plan = NULL;
        if (h100) {
            assert_status(bc_gemm_plan_create(dev, &desc, &plan), BC_ERR_NO_KERNEL_FOR_DEVICE);
            ft_assert_last(BC_ERR_NO_KERNEL_FOR_DEVICE, "config", 0);
            bc_error_detail det;
            bc_last_error(&det);
            assert_non_null(strstr(det.message, "BC_KERNELS_PORTABLE"));
            assert_null(plan);
            desc.config = NULL; /* the native family is there */
        }
        assert_ok(bc_gemm_plan_create(dev, &desc, &plan));
        bc_gemm_plan_destroy(plan);
        bc_device_close(dev);
        assert_int_equal(fake_live_objects(), 0);
    }
    /* a group bit nobody defined */
    fake_install();
    bc_device_config cfg = ft_config();
    cfg.kernel_groups = 0x80u;
    bc_device *dev = (bc_device *)(uintptr_t)0x1234;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_INVALID_ARGUMENT);
    ft_assert_last(BC_ERR_INVALID_ARGUMENT, "kernel_groups", 0);
    assert_ptr_equal(dev, (bc_device *)(uintptr_t)0x1234);
}

/* Below Ampere nothing runs: refused at open, naming the device and every
 * image present. */
static void test_turing_refused(void **state)
{
    (void)state;
    use_device(7, 5, 40, 65536);
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    bc_device *dev = NULL;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_UNSUPPORTED_ARCH);
    assert_null(dev);
    assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), 0);
    bc_error_detail det;
    bc_last_error(&det);
    static const char *const want[] = {"device sm_75", "sm_80", "sm_90a", "sm_100a", "sm_100f",
                                       "sm_103a", "sm_110a", "sm_120"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (strstr(det.message, want[i]) == NULL)
            fail_msg("message lacks '%s': %s", want[i], det.message);
}

/* Each image against the drivers around its minimum: the sm_80, sm_90a and
 * sm_120 images are written by the CUDA 12.9 ptxas (CUDA 12.0 drivers load
 * them; sm_120 needs 12.8 to know the architecture); the Blackwell images
 * by CUDA 13.0's (a CUDA 13 driver). Too old: BC_ERR_DRIVER_TOO_OLD naming
 * both versions, and the driver never sees the image. */
static void test_driver_too_old(void **state)
{
    (void)state;
    static const struct {
        int major, minor;
        const char *image;
        int ok_driver, old_driver; /* old_driver 0: nothing barecuda accepts is too old */
        const char *need;
    } cases[] = {
        {8, 7, "sm_80", 12000, 0, NULL},
        {9, 0, "sm_90a", 12000, 0, NULL},
        {12, 0, "sm_120", 12080, 12060, "CUDA 12.8"},
        {12, 1, "sm_120", 12080, 12060, "CUDA 12.8"},
        {10, 0, "sm_100a", 13000, 12090, "CUDA 13.0"},
        {10, 1, "sm_100f", 13000, 12090, "CUDA 13.0"},
        {10, 3, "sm_103a", 13000, 12090, "CUDA 13.0"},
        {11, 0, "sm_110a", 13000, 12090, "CUDA 13.0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int old = 0; old <= 1; old++) {
            if (old && cases[i].old_driver == 0)
                continue;
            fake_install();
            use_device(cases[i].major, cases[i].minor, 20, 232448);
            fake_set_driver_version(old ? cases[i].old_driver : cases[i].ok_driver);
            bc_device_config cfg = ft_config();
            cfg.skip_kernel_load = 0;
            cfg.kernel_groups = BC_KERNELS_ALL;
            bc_device *dev = NULL;
            bc_status st = bc_device_open(&cfg, &dev);
            if (!old) {
                assert_ok(st);
                bc_device_info info;
                assert_ok(bc_device_query(dev, &info));
                assert_string_equal(info.image_arch, cases[i].image);
                bc_device_close(dev);
                continue;
            }
            assert_int_equal(st, BC_ERR_DRIVER_TOO_OLD);
            assert_null(dev);
            assert_int_equal(fake_entry_calls(FAKE_E_cuModuleLoadDataEx), 0);
            bc_error_detail det;
            bc_last_error(&det);
            char have[32];
            snprintf(have, sizeof have, "this driver is CUDA %d.%d", cases[i].old_driver / 1000,
                     cases[i].old_driver % 1000 / 10);
            if (!strstr(det.message, cases[i].image) || !strstr(det.message, cases[i].need) ||
                !strstr(det.message, have))
                fail_msg("cc %d.%d: %s", cases[i].major, cases[i].minor, det.message);
            assert_int_equal(fake_live_objects(), 0);
        }
    }
}

/* Integrated GPUs report it. */
static void test_integrated(void **state)
{
    (void)state;
    use_device(8, 7, 16, 166912);
    fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_INTEGRATED, 1);
    bc_device *dev = NULL;
    bc_device_config cfg = ft_config();
    assert_ok(bc_device_open(&cfg, &dev));
    bc_device_info info;
    assert_ok(bc_device_query(dev, &info));
    assert_int_equal(info.integrated, 1);
    bc_device_close(dev);
    fake_install();
    assert_ok(bc_device_open(&cfg, &dev));
    assert_ok(bc_device_query(dev, &info));
    assert_int_equal(info.integrated, 0); /* the default fake: a discrete H100 */
    bc_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_every_capability), ft_test(test_rule_small_shapes), ft_test(test_named_configs),
        ft_test(test_turing_refused),   ft_test(test_driver_too_old),    ft_test(test_integrated),
        ft_test(test_portable_group),   ft_test(test_resident_flag_elsewhere),
    };
    return cmocka_run_group_tests_name("gemm_portable", tests, NULL, NULL);
}
