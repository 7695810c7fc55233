/* The policy example (examples/policy) on the fake driver: its built
 * fatbin loads with the build digest, both kernels resolve with their
 * signatures, six plans become one graph of GEMM and user-kernel nodes in
 * the right order with programmatic serialization, the timed loop runs,
 * and the exit codes are the documented ones. The fake runs no kernel, so
 * the numeric check must fail (exit 31): a pass here would mean the check
 * cannot fail. The numbers themselves are checked on a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"

int example_policy_main(int argc, char **argv);

static void register_signatures(void)
{
    static const size_t ln_off[] = {0, 8, 16, 24, 32, 36}, ln_size[] = {8, 8, 8, 8, 4, 4};
    static const size_t head_off[] = {0, 8, 16, 20}, head_size[] = {8, 8, 4, 4};
    fake_set_kernel_params("policy_layernorm_gelu", 6, ln_off, ln_size);
    fake_set_kernel_params("policy_tanh_head", 4, head_off, head_size);
}

/* Runs the example with argv[0..argc) after a fresh fake (with the
 * kernels' signatures, or no device when `devices` is 0), its stdout and
 * stderr captured into out; returns its exit code. */
static int run(int devices, char **argv, int argc, char *out, size_t out_cap)
{
    fake_install();
    register_signatures();
    if (devices == 0)
        fake_set_devices(NULL, 0);
    char *args[12] = {"example_policy"};
    for (int i = 0; i < argc && i < 10; i++)
        args[i + 1] = argv[i];
    char path[] = "/tmp/bc_example_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout), fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(fd, 1), dup2(fd, 2);
    int rc = example_policy_main(argc + 1, args);
    fflush(stdout), fflush(stderr);
    dup2(so, 1), dup2(se, 2);
    close(so), close(se);
    off_t n = lseek(fd, 0, SEEK_END);
    size_t len = n > 0 ? (size_t)n : 0;
    len = len < out_cap - 1 ? len : out_cap - 1;
    assert_int_equal(pread(fd, out, len, 0), (ssize_t)len);
    out[len] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

static void has(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("output lacks \"%s\":\n%s", needle, text);
}

static void test_graph_of_six_and_a_check_that_fails_without_kernels(void **state)
{
    (void)state;
    static char out[16384];
    char *argv[] = {"--runs", "20", "--warmup", "3"};
    int rc = run(1, argv, 4, out, sizeof out);
    assert_int_equal(rc, 31);
    has(out, "kernels from build/examples/policy_kernels.fatbin");
    has(out, "check (first replay): 256 actions, max |GPU - fp64 reference| = nan");
    has(out, "FAIL");
    has(out, "verdict: FAIL");
    /* the captured graph: GEMM, ours, GEMM, ours, GEMM, ours; ours programmatic */
    /* every layer (16 rows; the first of K = 64) on the GEMV kernel */
    static const char *const kernels[6] = {"bc_gemm_sm90_gemv", "policy_layernorm_gelu", "bc_gemm_sm90_gemv",
                                           "policy_layernorm_gelu", "bc_gemm_sm90_gemv", "policy_tanh_head"};
    for (int i = 0; i < 6; i++) {
        const fake_kernel_node *n = fake_last_capture_node(i);
        assert_non_null(n);
        if (strcmp(n->kernel, kernels[i]) != 0)
            fail_msg("node %d is %s, want %s", i, n->kernel, kernels[i]);
        int prog = 0;
        for (unsigned a = 0; a < n->num_attrs; a++)
            prog |= n->attrs[a].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        assert_int_equal(prog, 1);
    }
    assert_int_equal(fake_graph_launches(), 1); /* stopped at the failed check */
}

static void test_exit_codes(void **state)
{
    (void)state;
    static char out[16384];
    char *wrong[] = {"--module", "tests/fixtures/user_kernels.fatbin"};
    assert_int_equal(run(1, wrong, 2, out, sizeof out), 20);
    has(out, "BC_ERR_DIGEST_MISMATCH");
    char *missing[] = {"--module", "/nonexistent/policy_kernels.fatbin"};
    assert_int_equal(run(1, missing, 2, out, sizeof out), 20);
    has(out, "BC_ERR_FILE_IO");
    char *zero[] = {"--runs", "0"};
    assert_int_equal(run(1, zero, 2, out, sizeof out), 2);
    char *unknown[] = {"--frobnicate"};
    assert_int_equal(run(1, unknown, 1, out, sizeof out), 2);
    char *one[] = {"--runs", "1"};
    assert_int_equal(run(0, one, 2, out, sizeof out), 12); /* a driver, no GPU */
    has(out, "needs an NVIDIA GPU");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_graph_of_six_and_a_check_that_fails_without_kernels),
        ft_test(test_exit_codes),
    };
    return cmocka_run_group_tests_name("example_policy", tests, NULL, NULL);
}
