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

static void test_boot_exit_codes(void **state)
{
    (void)state;
    run_result r;
    use_device(8, 6);
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
        ft_test(test_boot_wrong_answer_exits_verify),
        ft_test(test_boot_exit_codes),
        ft_test(test_fatbin_lists_the_embedded_image),
        ft_test(test_fatbin_file_errors),
    };
    return cmocka_run_group_tests_name("cli_loader", tests, NULL, NULL);
}
