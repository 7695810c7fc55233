/* `barecuda boot` and `barecuda fatbin` over the fake driver: output, JSON
 * and the documented exit code of each failure class. tools/cli/main.c is
 * linked with main renamed bc_cli_main. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli_run.h"
#include "fake_test.h"

#include "cli.h"
#include "smoke_emu.h"

extern const uint8_t bc__fatbin_bytes[];
extern const size_t bc__fatbin_size;

typedef struct run_result {
    int rc;
    char out[16384];
    char err[4096];
} run_result;

/* Runs `barecuda a0 a1 a2` (NULL-terminated, at most 3) capturing both streams. */
static void run_cli(run_result *r, const char *a0, const char *a1, const char *a2)
{
    char *argv[] = {"barecuda", (char *)a0, (char *)a1, (char *)a2, NULL};
    const int argc = 2 + (a1 != NULL) + (a1 != NULL && a2 != NULL);
    cli_capture c;
    cli_capture_run(&c, argc, argv);
    r->rc = c.rc;
    cli_capture_copy(&c, r->out, sizeof r->out, r->err, sizeof r->err);
}

/* Runs `barecuda args...` (NULL-terminated, at most 10). */
static void run_args(run_result *r, const char *const *args)
{
    char *argv[12] = {"barecuda"};
    int argc = 1;
    while (args[argc - 1] != NULL && argc < 11) {
        argv[argc] = (char *)args[argc - 1];
        argc++;
    }
    cli_capture c;
    cli_capture_run(&c, argc, argv);
    r->rc = c.rc;
    cli_capture_copy(&c, r->out, sizeof r->out, r->err, sizeof r->err);
}

static void has(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("output lacks \"%s\":\n%s", needle, text);
}

static void use_device(int major, int minor)
{
    fake_device d;
    fake_device_defaults(&d);
    d.cc_major = major;
    d.cc_minor = minor;
    fake_set_devices(&d, 1);
}

/* ---------------------------------------------------------------- boot */

static void test_boot_passes(void **state)
{
    (void)state;
    smoke_emu_install(-1);
    run_result r;
    run_cli(&r, "boot", NULL, NULL);
    assert_int_equal(r.rc, BC_EXIT_OK);
    static const char *lines[] = {"dlopen", "cuInit", "context", "arenas", "image check", "module load",
                                  "stream", "first launch", "verify", "after context", "since main",
                                  "image sm_90a", "verdict: PASS"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        has(r.out, lines[i]);
    assert_int_equal(r.err[0], '\0');

    smoke_emu_install(-1);
    run_cli(&r, "boot", "--json", NULL);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "{\"verdict\":\"pass\",\"exit_code\":0,\"status\":\"BC_OK\",\"failed_phase\":null");
    has(r.out, "\"image\":\"sm_90a\"");
    has(r.out, "\"first_launch\":");
    has(r.out, "\"after_context_us\":");
}

/* --kernel-groups: the optional groups resolved at open too; a name it
 * does not know is a usage error. */
static void test_boot_kernel_groups(void **state)
{
    (void)state;
    run_result r;
    smoke_emu_install(-1);
    run_cli(&r, "boot", "--kernel-groups", "resident,portable");
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "verdict: PASS");
    smoke_emu_install(-1);
    run_cli(&r, "boot", "--kernel-groups", "all");
    assert_int_equal(r.rc, BC_EXIT_OK);
    smoke_emu_install(-1);
    run_cli(&r, "boot", "--kernel-groups", "stream-k");
    assert_int_equal(r.rc, BC_EXIT_OK);
    run_cli(&r, "boot", "--kernel-groups", "resident,tensor");
    assert_int_equal(r.rc, BC_EXIT_USAGE);
    has(r.err, "bad kernel group list");
    static const char *const empty[] = {"", "resident,", ",resident", "resident,,portable"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        run_cli(&r, "boot", "--kernel-groups", empty[i]);
        assert_int_equal(r.rc, BC_EXIT_USAGE);
    }
}

/* Jetson Orin (8.7) and consumer Blackwell (12.0): the portable image, and
 * the known-answer GEMM through the portable kernel (A and B by pointer). */
static void test_boot_portable_images(void **state)
{
    (void)state;
    static const struct {
        int major, minor;
        const char *image;
    } devs[] = {{8, 7, "image sm_80"}, {12, 0, "image sm_120"}};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        fake_install();
        use_device(devs[i].major, devs[i].minor);
        smoke_emu_install(-1);
        run_result r;
        run_cli(&r, "boot", NULL, NULL);
        if (r.rc != BC_EXIT_OK)
            fail_msg("cc %d.%d: boot exit %d\n%s%s", devs[i].major, devs[i].minor, r.rc, r.out, r.err);
        has(r.out, devs[i].image);
        has(r.out, "verdict: PASS");
    }
}

static void test_boot_wrong_answer_exits_verify(void **state)
{
    (void)state;
    smoke_emu_install(7);
    run_result r;
    run_cli(&r, "boot", NULL, NULL);
    assert_int_equal(r.rc, BC_EXIT_VERIFY);
    has(r.out, "FAILED at verify: BC_ERR_VERIFY_FAILED");
    has(r.out, "element 7 of 65536");
    has(r.out, "verdict: FAIL (exit 31)");
    /* the fake alone runs nothing: the poison is caught too */
    fake_install();
    run_cli(&r, "boot", "--json", NULL);
    assert_int_equal(r.rc, BC_EXIT_VERIFY);
    has(r.out, "\"failed_phase\":\"verify\"");
    has(r.out, "0xffffffff");
    has(r.err, "barecuda boot: BC_ERR_VERIFY_FAILED");
}

/* Bad boot options: one line saying which, exit 2, before any device. */
static void test_boot_bad_options(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b, *says;
    } cases[] = {
        {"--device", "", "bad device ordinal ''"},     {"--device", "+0", "bad device ordinal '+0'"},
        {"--device", " 1", "bad device ordinal ' 1'"}, {"--device", "1025", "bad device ordinal"},
        {"--digest", " -1", "bad digest"},             {"--digest", "-1", "bad digest"},
        {"--module", NULL, "--module needs a value"},  {"--kernel-groups", NULL, "--kernel-groups needs a value"},
        {"--nope", NULL, "unknown argument '--nope'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result r;
        run_cli(&r, "boot", cases[i].a, cases[i].b);
        assert_int_equal(r.rc, BC_EXIT_USAGE);
        has(r.err, cases[i].says);
    }
}

static void test_boot_exit_codes(void **state)
{
    (void)state;
    run_result r;
    use_device(7, 5);
    run_cli(&r, "boot", NULL, NULL);
    assert_int_equal(r.rc, BC_EXIT_ARCH);
    has(r.out, "FAILED at open: BC_ERR_UNSUPPORTED_ARCH");

    fake_install();
    fake_module_fail_next(CUDA_ERROR_INVALID_IMAGE, "bad image, says the driver");
    run_cli(&r, "boot", "--json", NULL);
    assert_int_equal(r.rc, BC_EXIT_LOAD);
    has(r.out, "\"status\":\"BC_ERR_MODULE_LOAD\"");
    has(r.out, "bad image, says the driver");

    fake_install();
    fake_fail_entry(FAKE_E_cuLaunchKernelEx, 1, CUDA_ERROR_INVALID_VALUE, 0);
    run_cli(&r, "boot", NULL, NULL);
    assert_int_equal(r.rc, BC_EXIT_LAUNCH);
    has(r.out, "FAILED at first_launch");

    /* the GPU faults during the first check: lost to the process, exit 33,
     * and the advice to restart it under a supervisor */
    fake_install();
    fake_fault_next_launch(CUDA_ERROR_ILLEGAL_ADDRESS);
    run_cli(&r, "boot", NULL, NULL);
    assert_int_equal(r.rc, BC_EXIT_DEVICE_LOST);
    has(r.out, "FAILED at first_launch: BC_ERR_DEVICE_LOST");
    has(r.out, "recovery: the GPU is lost to this process");
    has(r.out, "supervisor");
    has(r.out, "verdict: FAIL (exit 33)");
    assert_int_equal(fake_live_objects(), 0); /* closing a lost device still releases everything */
    fake_install();
    fake_fault_next_launch(CUDA_ERROR_ILLEGAL_ADDRESS);
    run_cli(&r, "boot", "--json", NULL);
    has(r.out, "\"status\":\"BC_ERR_DEVICE_LOST\"");
    has(r.out, "\"recovery\":\"the GPU is lost to this process");
    has(r.err, "supervisor");

    /* a kernel that does not finish within the bound: exit 32, and closing
     * does not wait for it (bounded close) */
    fake_install();
    fake_set_kernel_duration_ms(30000);
    double t0 = ft_now_ms();
    run_cli(&r, "boot", NULL, NULL);
    const double took = ft_now_ms() - t0;
    assert_int_equal(r.rc, BC_EXIT_TIMEOUT);
    has(r.out, "recovery: the GPU did not finish");
    has(r.out, "verdict: FAIL (exit 32)");
    assert_true(took < 10000); /* the smoke wait (2 s) plus the close bound (1 s), not 30 s */
    fake_set_kernel_duration_ms(0);
    fake_finish_kernels();
    bc__driver_release(); /* the abandoned device's driver reference */

    fake_install();
    fake_set_devices(NULL, 0);
    run_cli(&r, "boot", NULL, NULL);
    assert_int_equal(r.rc, BC_EXIT_NO_DEVICE);

    fake_install();
    run_cli(&r, "boot", "--device", "3");
    assert_int_equal(r.rc, BC_EXIT_NO_DEVICE);
    run_cli(&r, "boot", "--frobnicate", NULL);
    assert_int_equal(r.rc, BC_EXIT_USAGE);

    bc__driver_set_override(NULL);
    bc__driver_set_library("/nonexistent/libcuda.so.1");
    run_cli(&r, "boot", NULL, NULL);
    bc__driver_set_library(NULL);
    assert_int_equal(r.rc, BC_EXIT_NO_DRIVER);
    has(r.out, "FAILED at open: BC_ERR_NO_DRIVER");
}

/* boot --module: the user's module in the boot check, with its own line and
 * the image exit codes (a file that cannot be read is 20 too). */
#define FIX "tests/fixtures/"
static void boot_module(run_result *r, const char *const *args)
{
    fake_install();
    smoke_emu_install(-1);
    run_args(r, args);
}

static void test_boot_user_module(void **state)
{
    (void)state;
    run_result r;
    boot_module(&r, (const char *const[]){"boot", "--module", FIX "user_kernels.fatbin", "--kernels",
                                          "fixture_saxpy,fixture_tma_box", "--digest", "aa1322c8a27341fa", NULL});
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "user module tests/fixtures/user_kernels.fatbin: image sm_90a, 3 entries, 2 kernels resolved, "
               "XXH64 0xaa1322c8a27341fa (checked)");
    has(r.out, "  user module   ");
    has(r.out, "verdict: PASS");
    boot_module(&r, (const char *const[]){"boot", "--json", "--module", FIX "user_kernels_sm90a.cubin", NULL});
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "\"module\":{\"file\":\"tests/fixtures/user_kernels_sm90a.cubin\",\"image\":\"sm_90\",\"jit\":false,"
               "\"entries\":1,\"kernels\":0,\"xxh64\":\"0xe35945ce73a52270\",\"digest_checked\":false}");
    has(r.out, "\"user_module\":");
    /* each failure class, with its exit code */
    static const struct {
        const char *file, *kernels, *digest;
        int rc;
        const char *needle;
    } bad[] = {
        {FIX "user_kernels.fatbin", NULL, "0xaa1322c8a27341fb", BC_EXIT_IMAGE, "BC_ERR_DIGEST_MISMATCH"},
        {FIX "no_such.fatbin", NULL, NULL, BC_EXIT_IMAGE, "BC_ERR_FILE_IO"},
        {FIX, NULL, NULL, BC_EXIT_IMAGE, "BC_ERR_NOT_REGULAR_FILE"},
        {FIX "README.md", NULL, NULL, BC_EXIT_IMAGE, "BC_ERR_FATBIN_CORRUPT"},
        {FIX "user_kernels_ptx.fatbin", NULL, NULL, BC_EXIT_ARCH, "BC_ERR_UNSUPPORTED_ARCH"},
        {FIX "user_kernels.fatbin", "fixture_saxpy,fixture_gone", NULL, BC_EXIT_LOAD, "fixture_gone"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[8] = {"boot", "--module", bad[i].file};
        int n = 3;
        if (bad[i].kernels)
            args[n++] = "--kernels", args[n++] = bad[i].kernels;
        if (bad[i].digest)
            args[n++] = "--digest", args[n++] = bad[i].digest;
        args[n] = NULL;
        boot_module(&r, args);
        if (r.rc != bad[i].rc)
            fail_msg("%s: exit %d, want %d:\n%s", bad[i].file, r.rc, bad[i].rc, r.out);
        has(r.out, "FAILED at user_module: ");
        has(r.out, bad[i].needle);
    }
    /* the driver refusing the user's image (its second load; the first is barecuda's) */
    fake_install();
    smoke_emu_install(-1);
    fake_fail_entry(FAKE_E_cuModuleLoadDataEx, 2, CUDA_ERROR_INVALID_IMAGE, 0);
    run_args(&r, (const char *const[]){"boot", "--module", FIX "user_kernels.fatbin", NULL});
    assert_int_equal(r.rc, BC_EXIT_LOAD);
    has(r.out, "BC_ERR_MODULE_LOAD");
    /* the command line */
    run_args(&r, (const char *const[]){"boot", "--module", FIX "user_kernels.fatbin", "--digest", "xyz", NULL});
    assert_int_equal(r.rc, BC_EXIT_USAGE);
    run_args(&r, (const char *const[]){"boot", "--kernels", "a", NULL});
    assert_int_equal(r.rc, BC_EXIT_USAGE);
    run_args(&r, (const char *const[]){"boot", "--module", FIX "user_kernels.fatbin", "--kernels", ",", NULL});
    assert_int_equal(r.rc, BC_EXIT_USAGE);
}

static void test_fatbin_plain_cubin(void **state)
{
    (void)state;
    run_result r;
    run_cli(&r, "fatbin", FIX "user_kernels_sm90a.cubin", NULL);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "7384 bytes, a plain cubin (no container; ELF ABI 8, e_flags 0x06005a04), XXH64 0xe35945ce73a52270");
    has(r.out, "elf   sm_90");
    run_cli(&r, "fatbin", FIX "user_kernels_sm90a.cubin", "--json");
    has(r.out, "\"plain_cubin\":true,\"containers\":0");
    run_cli(&r, "fatbin", FIX "user_kernels.fatbin", NULL);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "ptx   compute_80");
}

/* -------------------------------------------------------------- fatbin */

static void test_fatbin_lists_the_embedded_image(void **state)
{
    (void)state;
    run_result r;
    run_cli(&r, "fatbin", "--embedded", NULL);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "(embedded): ");
    has(r.out, "elf   sm_90a ");
    has(r.out, "elf   sm_100a ");
    has(r.out, "elf   sm_100f ");
    has(r.out, "(embedded optional groups, sm_90a): ");
    run_cli(&r, "fatbin", "--embedded", "--json");
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "\"kind\":\"elf\",\"arch\":\"sm_90a\"");
    has(r.out, "\"kind\":\"elf\",\"arch\":\"sm_100a\"");
    has(r.out, "\"compressed\":false");
}

static void test_fatbin_file_errors(void **state)
{
    (void)state;
    char path[] = "/tmp/bc_fatbin_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bc__fatbin_bytes, 1000), 1000); /* truncated */
    close(fd);
    run_result r;
    run_cli(&r, "fatbin", path, NULL);
    assert_int_equal(r.rc, BC_EXIT_IMAGE);
    has(r.err, "BC_ERR_FATBIN_CORRUPT");
    has(r.err, "runs past the buffer end at 1000");
    run_cli(&r, "fatbin", path, "--json");
    assert_int_equal(r.rc, BC_EXIT_IMAGE);
    has(r.out, "\"error\":{\"status\":\"BC_ERR_FATBIN_CORRUPT\",\"message\":\"container 0 at 0:");
    /* the whole image, from a file */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_true(write(fd, bc__fatbin_bytes, bc__fatbin_size) == (ssize_t)bc__fatbin_size);
    close(fd);
    run_cli(&r, "fatbin", path, NULL);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "1 container, ");
    unlink(path);
    run_cli(&r, "fatbin", path, NULL);
    assert_int_equal(r.rc, BC_EXIT_ERROR);
    has(r.err, "cannot open");
    run_cli(&r, "fatbin", NULL, NULL);
    assert_int_equal(r.rc, BC_EXIT_USAGE);
    run_cli(&r, "fatbin", "--embedded", path);
    assert_int_equal(r.rc, BC_EXIT_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_boot_passes),
        ft_test(test_boot_portable_images),
        ft_test(test_boot_wrong_answer_exits_verify),
        ft_test(test_boot_exit_codes),
        ft_test(test_boot_bad_options),
        ft_test(test_boot_kernel_groups),
        ft_test(test_fatbin_lists_the_embedded_image),
        ft_test(test_fatbin_file_errors),
        ft_test(test_boot_user_module),
        ft_test(test_fatbin_plain_cubin),
    };
    return cmocka_run_group_tests_name("cli_loader", tests, NULL, NULL);
}
