/* `barecuda latency --resident [--io] [--mlp ...]` over the fake driver:
 * the resident series sit beside stream and graph mode with the same
 * percentiles, CSV and SVG; the MLP workload; every way of running the
 * workload is checked before anything is timed (a resident step that
 * computes wrong results stops the run); bad options. The GEMM emulator
 * computes launches, graphs and resident steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli_run.h"
#include "fake_test.h"

#include "cli.h"
#include "gemm_emu.h"
#include "mlp.h"

/* Runs `barecuda args...` into r; the test fails unless it exits 0. */
static void run_ok(cli_capture *r, const char *const *args)
{
    cli_run_args(r, args);
    if (r->rc != BC_EXIT_OK)
        fail_msg("rc %d\nstdout: %s\nstderr: %s", r->rc, r->out, r->err);
}

static void has(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("output lacks \"%s\":\n%s", needle, text);
}

static void test_resident_beside_launches(void **state)
{
    gemm_emu_install(-1);
    char csv[] = "/tmp/bc_res_csv_XXXXXX", svg[] = "/tmp/bc_res_svg_XXXXXX";
    close(mkstemp(csv));
    close(mkstemp(svg));
    cli_capture r;
    const char *args[] = {"latency", "--shape", "16x32x64", "--runs", "100", "--warmup", "2", "--resident", "--io",
                          "--wait", "spin", "--sm-count", "3", "--spin-ns", "5000", "--csv", csv, "--svg", svg,
                          "--json", NULL};
    run_ok(&r, args);
    has(r.out, "\"resident_sm_count\":3,\"resident_operations\":1,\"resident_barriers\":0");
    has(r.out, "{\"mode\":\"resident\",\"policy\":\"spin\",\"what\":\"end_to_end\",\"call\":\"bc_resident_step\"");
    has(r.out, "{\"mode\":\"resident-memcpy\",\"policy\":\"spin\",\"what\":\"end_to_end\"");
    has(r.out, "{\"mode\":\"resident-zerocopy\",\"policy\":\"spin\",\"what\":\"end_to_end\"");
    has(r.out, "{\"mode\":\"resident\",\"policy\":\"launch_call\",\"what\":\"launch_call\",\"call\":\"bc_resident_ring\"");
    has(r.out, "{\"mode\":\"graph\",\"policy\":\"spin\",\"what\":\"end_to_end\"");
    /* stream, graph, resident and its two I/O modes end to end; 3 launch calls; the floors */
    assert_int_equal(cli_count(r.out, "\"what\":\"end_to_end\""), 5 + 2 + 1);
    assert_int_equal(cli_count(r.out, "\"what\":\"launch_call\""), 3 + 2 + 1);
    cli_capture_free(&r);
    char *text = cli_slurp(csv);
    assert_int_equal(cli_count(text, "\nresident,spin,"), 100);
    assert_int_equal(cli_count(text, "\nresident-zerocopy,spin,"), 100);
    assert_int_equal(cli_count(text, "\nresident,launch_call,"), 100);
    free(text);
    text = cli_slurp(svg);
    has(text, "resident / spin wait");
    has(text, "resident-memcpy / spin wait");
    free(text);
    /* each resident sample completed a step: warm-up + runs for the step, its ring, and the two I/O modes */
    assert_true(fake_resident_steps() >= 4 * 102);
    assert_int_equal(fake_resident_misuse(), 0);
}

static void test_mlp(void **state)
{
    gemm_emu_install(-1);
    cli_capture r;
    const char *args[] = {"latency", "--mlp", "16:64,128,32", "--runs", "50", "--warmup", "1", "--resident",
                          "--wait", "spin", NULL};
    run_ok(&r, args);
    has(r.out, "mlp 16:64,128,32 bf16 -> bf16");
    has(r.out, "resident executor: sm90_64x32m16, 4 CTAs (one per SM) held, 2 operations, 1 grid barriers per step");
    has(r.out, "resident / spin");
    has(r.out, "stream / spin");
    has(r.out, "bc_resident_ring mlp 16:64,128,32");
    has(r.out, "bc_gemm_launch mlp 16:64,128,32");
    has(r.out, "checked against the CPU reference");
    cli_capture_free(&r);

    /* the rule's split-K plans run resident too: the control-loop policy's last layer */
    const char *split_args[] = {"latency", "--mlp", "16:256,1024,1024,64", "--runs", "20", "--warmup", "1",
                                "--resident", "--mode", "graph", "--wait", "spin", "--json", NULL};
    run_ok(&r, split_args);
    has(r.out, "\"layer_plans\":\"sm90_64x32m16, sm90_64x32m16, sm90_64x32m16s/8\"");
    if (strstr(r.out, "\"m\":") != NULL) /* a network reports its layers, not the unused GEMM's shape */
        fail_msg("an --mlp report carries a GEMM shape:\n%s", r.out);
    has(r.out, "\"dtype\":\"bf16\",\"out\":\"bf16\"");
    /* the last layer's 2 tiles x 8 partials of 16 x 32 f32; 32 work items a phase at most */
    has(r.out, "\"resident_sm_count\":32,\"resident_operations\":3,\"resident_barriers\":2,"
               "\"resident_partial_bytes\":32768");
    has(r.out, "{\"mode\":\"resident\",\"policy\":\"spin\",\"what\":\"end_to_end\"");
    cli_capture_free(&r);

    /* GEMV plans, named: every layer's launched grid as the executor's work items (128 runs of 8 rows the
     * widest), no partials */
    const char *gemv_args[] = {"latency", "--mlp", "16:256,1024,1024,64", "--config", "sm90_gemv", "--runs", "20",
                               "--warmup", "1", "--resident", "--mode", "graph", "--wait", "spin", "--json", NULL};
    run_ok(&r, gemv_args);
    has(r.out, "\"layer_plans\":\"sm90_gemv, sm90_gemv, sm90_gemv\"");
    has(r.out, "\"resident_sm_count\":128,\"resident_operations\":3,\"resident_barriers\":2,"
               "\"resident_partial_bytes\":0");
    cli_capture_free(&r);

    /* one split a layer: each plan takes its own, and the executor holds a CTA a work item of the largest phase */
    const char *layer_args[] = {"latency", "--mlp", "16:256,1024,1024,64", "--split", "4,4,2", "--runs", "20",
                                "--warmup", "1", "--resident", "--mode", "graph", "--wait", "spin", "--json", NULL};
    run_ok(&r, layer_args);
    has(r.out, "\"layer_plans\":\"sm90_64x32m16s/4, sm90_64x32m16s/4, sm90_64x32m16s/2\"");
    has(r.out, "\"resident_sm_count\":128,");
    cli_capture_free(&r);

    /* a plan no resident kernel runs: a clear refusal */
    const char *wide_args[] = {"latency", "--shape", "16x32x4096", "--split", "4", "--config", "sm90_128x128s",
                               "--runs", "5", "--resident", NULL};
    cli_run_args(&r, wide_args);
    assert_int_not_equal(r.rc, BC_EXIT_OK);
    has(r.err, "sm90_128x128s, which has no resident kernel");
    cli_capture_free(&r);
}

/* bc_mlp_create with no split list (the GPU tests' call): every layer
 * takes the rule's split, the plans an all-zero list makes. */
static void test_mlp_without_splits(void **state)
{
    gemm_emu_install(-1);
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.device_arena_bytes = 32u << 20;
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    const int64_t w[4] = {256, 1024, 1024, 64};
    const uint32_t rule[3] = {0, 0, 0};
    bc_rng rng = {7};
    bc_mlp a, b;
    assert_ok(bc_mlp_create(dev, 16, w, 3, NULL, NULL, 1, &rng, &a));
    assert_ok(bc_mlp_create(dev, 16, w, 3, NULL, rule, 1, &rng, &b));
    for (int l = 0; l < 3; l++) {
        bc_gemm_plan_info ia, ib;
        assert_ok(bc_gemm_plan_query(a.plan[l], &ia));
        assert_ok(bc_gemm_plan_query(b.plan[l], &ib));
        assert_string_equal(ia.config, ib.config);
        assert_int_equal(ia.split_k, ib.split_k);
    }
    bc_gemm_plan_info last;
    assert_ok(bc_gemm_plan_query(a.plan[2], &last));
    assert_int_equal(last.split_k, 8); /* the policy's last layer, as the CLI test above reports it */
    bc_mlp_destroy(dev, &a);
    bc_mlp_destroy(dev, &b);
    bc_device_close(dev);
}

/* A resident step that computes one wrong element: the run stops before
 * timing, exit 31, naming the resident way. */
static void test_wrong_resident_results(void **state)
{
    gemm_emu_install(5);
    gemm_emu_wrong_in_resident_only = 1;
    cli_capture r;
    const char *args[] = {"latency", "--shape", "8x16x32", "--runs", "20", "--resident", NULL};
    cli_run_args(&r, args);
    assert_int_equal(r.rc, BC_EXIT_VERIFY);
    has(r.err, "FAIL: the plan computes wrong results resident");
    assert_null(strstr(r.out, "p99.9"));
    cli_capture_free(&r);
}

static void test_bad_options(void **state)
{
    static const char *const cases[][6] = {
        {"latency", "--io", NULL},
        {"latency", "--mlp", "16", NULL},
        {"latency", "--mlp", "16:64,7", NULL},
        {"latency", "--mlp", "0:64,64", NULL},
        {"latency", "--sm-count", "x", NULL},
        {"latency", "--max-sleep-ns", "2000000", NULL},
        {"latency", "--mode", "fast", NULL},
        {"latency", "--split", "4,4", NULL},                          /* a list without --mlp */
        {"latency", "--mlp", "16:64,128,32", "--split", "1,2,2", NULL}, /* 3 values, 2 layers */
        {"latency", "--split", "2,", NULL},
        {"latency", "--mlp", "16:64,128,32", "--split", "1,,2", NULL}, /* an empty value */
        {"latency", "--split", "17", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_capture r;
        cli_run_args(&r, cases[i]);
        if (r.rc != BC_EXIT_USAGE)
            fail_msg("case %zu: rc %d\nstderr: %s", i, r.rc, r.err);
        has(r.err, "usage: barecuda latency");
        cli_capture_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_resident_beside_launches),
        ft_test(test_mlp),
        ft_test(test_mlp_without_splits),
        ft_test(test_wrong_resident_results),
        ft_test(test_bad_options),
    };
    return cmocka_run_group_tests_name("cli_resident", tests, NULL, NULL);
}
