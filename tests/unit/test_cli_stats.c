/* The host-side pieces of `barecuda bench` and `barecuda latency` that need
 * no GPU: nearest-rank percentiles against hand-computed values, the SVG
 * histogram writer (well-formed, every series, no NaN), shape lists and the
 * rotating-set rule, option helpers; then both commands end to end over the
 * fake driver with a CPU GEMM emulator (tests/unit/gemm_emu.h): a correct
 * GEMM gets timed, a wrong or unwritten one gets FAIL, exit 31 and no time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli_run.h"
#include "fake_test.h"

#include "cli.h"
#include "cli_util.h"
#include "gemm_check.h"
#include "gemm_emu.h"
#include "shapes.h"
#include "stats.h"
#include "svg_hist.h"


/* ---------------------------------------------------------------- stats */

static void test_rank_nearest(void **state)
{
    (void)state;
    /* rank = ceil(p/100 * n), 1-based */
    assert_int_equal(bc_stats_rank(100, 99.0), 99); /* 0.99 * 100 is 99.000000000000014 in doubles */
    assert_int_equal(bc_stats_rank(1000, 99.9), 999);
    assert_int_equal(bc_stats_rank(10000, 99.9), 9990);
    assert_int_equal(bc_stats_rank(10000, 99.99), 9999);
    assert_int_equal(bc_stats_rank(20, 50.0), 10);
    assert_int_equal(bc_stats_rank(5, 50.0), 3);    /* ceil(2.5) */
    assert_int_equal(bc_stats_rank(10, 90.0), 9);
    assert_int_equal(bc_stats_rank(10, 90.1), 10);
    assert_int_equal(bc_stats_rank(7, 99.9), 7);
    assert_int_equal(bc_stats_rank(1, 50.0), 1);
    assert_int_equal(bc_stats_rank(50, 0.0), 1);    /* p <= 0: the minimum */
    assert_int_equal(bc_stats_rank(50, -3.0), 1);
    assert_int_equal(bc_stats_rank(50, 100.0), 50);
    assert_int_equal(bc_stats_rank(50, 250.0), 50);
    assert_int_equal(bc_stats_rank(0, 50.0), 0);
}

static void test_percentile_textbook(void **state)
{
    (void)state;
    /* the classic nearest-rank example: 15, 20, 35, 40, 50 */
    uint64_t v[] = {40, 15, 50, 35, 20};
    bc_stats_sort_u64(v, 5);
    const uint64_t want_sorted[] = {15, 20, 35, 40, 50};
    assert_memory_equal(v, want_sorted, sizeof v);
    assert_int_equal(bc_stats_percentile_u64(v, 5, 5.0), 15);
    assert_int_equal(bc_stats_percentile_u64(v, 5, 30.0), 20);
    assert_int_equal(bc_stats_percentile_u64(v, 5, 40.0), 20);
    assert_int_equal(bc_stats_percentile_u64(v, 5, 50.0), 35);
    assert_int_equal(bc_stats_percentile_u64(v, 5, 100.0), 50);
    assert_int_equal(bc_stats_percentile_u64(v, 0, 50.0), 0);
}

static void test_summary(void **state)
{
    (void)state;
    enum { N = 1000 };
    static uint64_t v[N];
    for (int i = 0; i < N; i++) /* 1..1000 in a scrambled order */
        v[i] = (uint64_t)((i * 7919) % N) + 1;
    bc_stats_sort_u64(v, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(v[i], i + 1);
    bc_stats_summary s;
    bc_stats_summarize_u64(v, N, &s);
    assert_int_equal(s.n, N);
    assert_int_equal(s.min, 1);
    assert_int_equal(s.p50, 500);
    assert_int_equal(s.p90, 900);
    assert_int_equal(s.p99, 990);
    assert_int_equal(s.p999, 999);
    assert_int_equal(s.max, 1000);
    assert_true(s.mean > 500.49 && s.mean < 500.51);
    bc_stats_summarize_u64(v, 0, &s);
    assert_int_equal(s.n, 0);
    assert_int_equal(s.max, 0);

    double d[] = {3.5, -1.0, 2.0, 10.0};
    bc_stats_sort_f64(d, 4);
    assert_true(d[0] == -1.0 && d[1] == 2.0 && d[2] == 3.5 && d[3] == 10.0);
}

/* ---------------------------------------------------------------- svg */

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static char *svg_to_string(const bc_svg_series *s, int count, const char *title, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    *rc = bc_svg_hist_write(f, title, s, count);
    fclose(f);
    return buf;
}

static void assert_well_formed(const char *svg)
{
    assert_int_equal(strncmp(svg, "<svg", 4), 0);
    size_t len = strlen(svg);
    assert_true(len > 7);
    assert_string_equal(svg + len - 7, "</svg>\n");
    assert_int_equal(count_of(svg, "<svg"), 1);
    assert_int_equal(count_of(svg, "<text"), count_of(svg, "</text>"));
    assert_int_equal(count_of(svg, "<g "), count_of(svg, "</g>"));
    assert_int_equal(count_of(svg, "<"), count_of(svg, ">"));
    /* every element other than <svg>, <text> and <g> is self-closed */
    for (const char *p = svg; (p = strstr(p, "<line")) != NULL; p++)
        assert_int_equal(strncmp(strchr(p, '>') - 1, "/>", 2), 0);
    for (const char *p = svg; (p = strstr(p, "<rect")) != NULL; p++)
        assert_int_equal(strncmp(strchr(p, '>') - 1, "/>", 2), 0);
    /* no NaN or infinity anywhere (coordinates are printed with %f/%g) */
    assert_null(strstr(svg, "nan"));
    assert_null(strstr(svg, "NaN"));
    assert_null(strstr(svg, "inf"));
    assert_null(strstr(svg, "-nan"));
}

/* xorshift samples: a body around `mid` ns plus a tail of `tail` outliers */
static void synth(uint64_t *v, size_t n, uint64_t mid, size_t tail, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        v[i] = mid + seed % (mid / 4 + 1) + (i < tail ? 20 * mid : 0);
    }
    bc_stats_sort_u64(v, n);
}

static void test_svg_series(void **state)
{
    (void)state;
    enum { N = 5000 };
    static uint64_t a[N], b[N], c[N];
    synth(a, N, 9000, 3, 1);     /* graph/spin-like: ~9-11 us, 3 outliers at ~190 us */
    synth(b, N, 25000, 40, 2);   /* stream/yield-like */
    synth(c, N, 110000, 5, 3);   /* block-like */
    bc_svg_series s[] = {{"graph / spin wait", a, N}, {"stream / yield <&> wait", b, N}, {"stream / block wait", c, N}};
    int rc = -1;
    char *svg = svg_to_string(s, 3, "barecuda latency 128x2048x2048 bf16->bf16", &rc);
    assert_int_equal(rc, 0);
    assert_well_formed(svg);
    assert_non_null(strstr(svg, "graph / spin wait"));
    assert_non_null(strstr(svg, "stream / yield &lt;&amp;&gt; wait")); /* escaped */
    assert_non_null(strstr(svg, "stream / block wait"));
    assert_non_null(strstr(svg, "barecuda latency 128x2048x2048"));
    assert_int_equal(count_of(svg, ">p50 "), 3); /* one marker label per panel */
    assert_int_equal(count_of(svg, ">p99 "), 3);
    assert_int_equal(count_of(svg, ">p99.9 "), 3);
    assert_true(count_of(svg, "fill-opacity") >= 3 * 5); /* histogram bars in every panel */
    assert_non_null(strstr(svg, "&#181;s"));
    assert_non_null(strstr(svg, "beyond the axis"));
    free(svg);
}

static void test_svg_degenerate(void **state)
{
    (void)state;
    uint64_t same[64], zero[8] = {0}, one[1] = {12345};
    for (int i = 0; i < 64; i++)
        same[i] = 7000;
    bc_svg_series s[] = {{"all equal", same, 64}, {"zeros", zero, 8}, {"single", one, 1}, {"empty", NULL, 0}};
    int rc = -1;
    char *svg = svg_to_string(s, 4, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_well_formed(svg);
    assert_non_null(strstr(svg, "no samples"));
    free(svg);
    /* only empty series */
    svg = svg_to_string(&s[3], 1, "t", &rc);
    assert_int_equal(rc, 0);
    assert_well_formed(svg);
    free(svg);
    /* bad arguments */
    assert_int_equal(bc_svg_hist_write(stdout, "t", s, 0), -1);
    assert_int_equal(bc_svg_hist_write(NULL, "t", s, 1), -1);
    assert_int_equal(bc_svg_hist_write(stdout, "t", NULL, 1), -1);
}

/* ---------------------------------------------------------------- shapes, options */

static void test_shapes(void **state)
{
    (void)state;
    assert_int_equal(bc_shapes_default_count, 13);
    assert_int_equal(bc_shapes_default[0].m, 8192);
    assert_int_equal(bc_shapes_default[12].k, 14336);
    bc_shape s[4];
    assert_int_equal(bc_shapes_parse("8192x8192x8192", s, 4), 1);
    assert_int_equal(s[0].m, 8192);
    assert_int_equal(bc_shapes_parse("16x4096x4096,4096x14336x4096,1x1x8", s, 4), 3);
    assert_int_equal(s[0].m, 16);
    assert_int_equal(s[1].n, 14336);
    assert_int_equal(s[2].k, 8);
    assert_int_equal(bc_shapes_parse("2147483647x1x1", s, 4), 1);
    static const char *const bad[] = {"", "8192", "8192x8192", "0x1x1", "1x0x1", "-1x1x1", "ax1x1", "1x1x1,",
                                      ",1x1x1", "1x1x1x1", "1X1X1", "1x1x1;2x2x2", "2147483648x1x1", " 1x1x1",
                                      "1x1x1,1x1x1,1x1x1,1x1x1,1x1x1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (bc_shapes_parse(bad[i], s, 4) != -1)
            fail_msg("'%s' parsed", bad[i]);
}

static void test_bench_sets(void **state)
{
    (void)state;
    /* the same numbers tools/bench_cublas.py computes: max(2, min(8, (400 << 20) // bytes)) */
    const struct { bc_shape s; unsigned ob; int sets; } cases[] = {
        {{8192, 8192, 8192}, 2, 2},   {{6144, 6144, 6144}, 2, 2}, {{4096, 4096, 4096}, 2, 4},
        {{4096, 4096, 1024}, 2, 8},   {{2048, 2048, 2048}, 2, 8}, {{16, 4096, 4096}, 2, 8},
        {{4096, 14336, 4096}, 2, 2},  {{4096, 4096, 4096}, 4, 3}, {{1, 1, 8}, 2, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t bytes = bc_shape_bytes(&cases[i].s, 2, cases[i].ob);
        int py = (int)((400ull << 20) / bytes);
        py = py > 8 ? 8 : py < 2 ? 2 : py;
        assert_int_equal(bc_bench_sets(bytes), py);
        assert_int_equal(bc_bench_sets(bytes), cases[i].sets);
    }
    bc_shape s = {4096, 4096, 4096};
    assert_int_equal(bc_shape_bytes(&s, 2, 2), 3ull * 4096 * 4096 * 2);
}

static void test_options_and_rows(void **state)
{
    (void)state;
    long long v = 7;
    assert_int_equal(bc_cli_parse_ll("123", 1, 1000, &v), 0);
    assert_int_equal(v, 123);
    assert_int_equal(bc_cli_parse_ll("12x", 1, 1000, &v), -1);
    assert_int_equal(bc_cli_parse_ll("", 1, 1000, &v), -1);
    assert_int_equal(bc_cli_parse_ll("0", 1, 1000, &v), -1);
    assert_int_equal(bc_cli_parse_ll("99999999999999999999", 1, 1000, &v), -1);
    assert_int_equal(v, 123);
    bc_dtype t;
    assert_int_equal(bc_cli_parse_dtype("f16", &t), 0);
    assert_int_equal(t, BC_DTYPE_F16);
    assert_int_equal(bc_cli_parse_dtype("fp32", &t), 0);
    assert_int_equal(t, BC_DTYPE_F32);
    assert_int_equal(bc_cli_parse_dtype("int8", &t), -1);
    /* sampled rows: the last row, then one row in each band */
    bc_rng r = {42};
    for (int rep = 0; rep < 50; rep++) {
        assert_int_equal(bc_check_row_index(1000, 0, 8, &r), 999);
        for (int i = 1; i < 8; i++) {
            int64_t row = bc_check_row_index(1000, i, 8, &r);
            assert_true(row >= (i - 1) * 1000 / 7 && row < i * 1000 / 7);
        }
        int64_t one = bc_check_row_index(3, 2, 8, &r);
        assert_true(one >= 0 && one < 3);
    }
    assert_int_equal(bc_check_row_index(1, 1, 8, &r), 0);
}

/* ---------------------------------------------------------------- the commands over the fake */

typedef cli_capture run_result;

/* Runs `barecuda args...` (NULL-terminated) with stdout and stderr captured. */
static void run_cli(run_result *r, const char *const *args) { cli_run_args(r, args); }

static void run_free(run_result *r) { cli_capture_free(r); }

static void has(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("output lacks \"%s\":\n%s", needle, text);
}

static void lacks(const char *text, const char *needle)
{
    if (strstr(text, needle) != NULL)
        fail_msg("output has \"%s\":\n%s", needle, text);
}

/* Runs args, expects exit 2 and `says` on stderr. */
static void expect_usage(const char *const *args, const char *says)
{
    run_result r;
    run_cli(&r, args);
    assert_int_equal(r.rc, BC_EXIT_USAGE);
    has(r.err, says);
    run_free(&r);
}

static void test_bench_times_a_correct_gemm(void **state)
{
    (void)state;
    gemm_emu_install(-1);
    run_result r;
    const char *json[] = {"bench", "--shapes", "8x256x64,16x72x256", "--replays", "5", "--split", "4", "--json", NULL};
    run_cli(&r, json);
    if (r.rc != BC_EXIT_OK)
        fail_msg("rc %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
    has(r.out, "{\"tool\":\"barecuda bench\",\"device\":\"Fake H100\"");
    has(r.out, "\"dtype\":\"bf16\",\"out\":\"bf16\",\"per_graph\":50,\"warmup\":3,\"replays\":5");
    has(r.out, "{\"m\":8,\"n\":256,\"k\":64,\"config\":\"sm90_");
    has(r.out, "{\"m\":16,\"n\":72,\"k\":256,"); /* 4 k-blocks on one tile: split K as asked */
    has(r.out, "\"split_k\":4,");
    assert_int_equal(count_of(r.out, "\"verified\":true"), 2);
    assert_int_equal(count_of(r.out, "\"sets\":8"), 2);
    /* the fake clock advances 1.5 ms per event record: 1.5 ms / 50 GEMMs */
    assert_int_equal(count_of(r.out, "\"median_us\":30.000,\"min_us\":30.000,\"max_us\":30.000"), 2);
    has(r.out, "\"error\":null}");
    assert_int_equal(r.err[0], '\0');
    /* 8 sets x 2 shapes: direct check + first graph replay + 3 warm-up + 5 timed, 50 GEMMs a replay */
    assert_int_equal(gemm_emu_runs, 2 * (1 + 9 * 50));
    run_free(&r);

    gemm_emu_install(-1);
    const char *text[] = {"bench", "--shapes", "32x256x64", "--replays", "3", "--dtype", "f16", "--out", "f32", NULL};
    run_cli(&r, text);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "f16 -> f32");
    has(r.out, "32x256x64");
    has(r.out, "PASS");
    has(r.out, "30.00");
    run_free(&r);
}

static void test_bench_never_times_a_wrong_gemm(void **state)
{
    (void)state;
    gemm_emu_install(77); /* one element of D wrong */
    run_result r;
    const char *text[] = {"bench", "--shapes", "64x256x64", "--replays", "3", NULL};
    run_cli(&r, text);
    assert_int_equal(r.rc, BC_EXIT_VERIFY);
    has(r.out, "FAIL");
    has(r.out, "direct launch");
    has(r.out, "no time reported");
    lacks(r.out, "PASS");
    run_free(&r);

    /* right when launched directly, wrong inside the graph: the graph check catches it */
    gemm_emu_install(17); /* M = 1: the graph check always samples row 0 */
    gemm_emu_wrong_in_graphs_only = 1;
    const char *tiny[] = {"bench", "--shapes", "1x256x64", "--replays", "3", "--json", NULL};
    run_cli(&r, tiny);
    assert_int_equal(r.rc, BC_EXIT_VERIFY);
    has(r.out, "\"verified\":false,\"failed_check\":\"graph replay\"");
    has(r.out, "\"bad\":");
    lacks(r.out, "\"bad\":0,");
    has(r.out, "\"median_us\":null");
    run_free(&r);

    /* the plain fake computes nothing: the poison stays and is caught */
    fake_install();
    const char *json[] = {"bench", "--shapes", "64x256x64,16x32x64", "--replays", "3", "--json", NULL};
    run_cli(&r, json);
    assert_int_equal(r.rc, BC_EXIT_VERIFY);
    assert_int_equal(count_of(r.out, "\"verified\":false,\"failed_check\":\"direct launch\""), 2);
    assert_int_equal(count_of(r.out, "\"median_us\":null"), 2);
    lacks(r.out, "\"tflops\":0");
    run_free(&r);
}

static void test_bench_reports_the_failing_call(void **state)
{
    (void)state;
    gemm_emu_install(-1);
    fake_fail_entry(FAKE_E_cuGraphInstantiateWithFlags, 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    run_result r;
    const char *json[] = {"bench", "--shapes", "64x256x64,16x32x64", "--replays", "3", "--json", NULL};
    run_cli(&r, json);
    assert_int_not_equal(r.rc, BC_EXIT_OK);
    assert_int_not_equal(r.rc, BC_EXIT_VERIFY);
    has(r.err, "barecuda bench: 64x256x64: bc_graph_create failed: "); /* the call, not its expression */
    lacks(r.err, "bc_graph_create(");
    has(r.err, "cuGraphInstantiateWithFlags");
    assert_int_equal(count_of(r.err, "\n"), 1); /* one line, not one per nesting level */
    has(r.out, "\"rows\":[],\"error\":\"64x256x64: bc_graph_create failed");
    run_free(&r);

    /* a device fault during the timed replays: the launch exit code */
    gemm_emu_install(-1);
    fake_fail_entry(FAKE_E_cuGraphLaunch, 3, CUDA_ERROR_ILLEGAL_ADDRESS, 0);
    const char *text[] = {"bench", "--shapes", "64x256x64", "--replays", "3", NULL};
    run_cli(&r, text);
    assert_int_equal(r.rc, BC_EXIT_DEVICE_LOST);
    has(r.err, "bc_graph_launch failed");
    lacks(r.out, "PASS");
    run_free(&r);
}

/* barecuda gemm failing in its check and in its timing: the failing call
 * reported, the exit code of its status, and (under the ASan build's leak
 * check) nothing of its host buffers left behind. */
static void test_gemm_failures_report_and_free(void **state)
{
    (void)state;
    run_result r;
    const char *args[] = {"gemm", "--m", "64", "--n", "64", "--k", "64", NULL};
    gemm_emu_install(-1);
    fake_fail_entry(FAKE_E_cuLaunchKernelEx, 1, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 0);
    run_cli(&r, args);
    assert_int_not_equal(r.rc, BC_EXIT_OK);
    assert_int_not_equal(r.rc, BC_EXIT_USAGE);
    has(r.err, "cuLaunchKernelEx");
    lacks(r.out, "PASS");
    run_free(&r);
    fake_fail_clear();
    gemm_emu_install(-1);
    fake_fail_entry(FAKE_E_cuEventElapsedTime, 1, CUDA_ERROR_INVALID_VALUE, 0);
    run_cli(&r, args);
    assert_int_not_equal(r.rc, BC_EXIT_OK);
    has(r.err, "cuEventElapsedTime");
    lacks(r.out, "PASS");
    run_free(&r);
    fake_fail_clear();
}

static void test_bench_bad_options(void **state)
{
    (void)state;
    static const char *const cases[][4] = {
        {"bench", "--shapes", "64x64", NULL}, {"bench", "--dtype", "f32", NULL}, {"bench", "--replays", "0", NULL},
        {"bench", "--out", "int8", NULL},     {"bench", "--nope", NULL, NULL},   {"bench", "stray", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_usage(cases[i], "usage: barecuda bench");
    /* an output file that cannot be written is refused before any work */
    const char *csv[] = {"bench", "--shapes", "64x64x64", "--csv", "/nonexistent-dir/x.csv", NULL};
    expect_usage(csv, "cannot write --csv /nonexistent-dir/x.csv");
    const char *svg[] = {"latency", "--svg", "/nonexistent-dir/x.svg", NULL};
    expect_usage(svg, "cannot write --svg /nonexistent-dir/x.svg");
}

/* Bad gemm options: a one-line reason, exit 2, before any device. */
static void test_gemm_bad_options(void **state)
{
    (void)state;
    static const char *const cases[][9] = {
        {"gemm", "--m", "12abc", "--n", "8", "--k", "8", NULL, "bad --m '12abc'"},
        {"gemm", "--m", "8", "--n", "8", "--k", "8", "--split", "bad --split '-1'"},
        {"gemm", "--m", "8", "--n", "8", "--k", "8", "stray", "unexpected argument 'stray'"},
        {"gemm", "--m", "99999999999999999999", "--n", "8", "--k", "8", NULL, "bad --m"},
        {"gemm", "--m", "8", "--n", "8", "--k", "8", "--iters", "bad --iters '5x'"},
        {"gemm", "--m", "8", "--n", "8", "--k", "8", "--alpha", "bad --alpha 'banana'"},
        {"gemm", "--m", "8", "--n", "8", "--k", "8", "--dtype", "bad --dtype 'f32'"},
        {"gemm", "--m", "8", "--n", "8", NULL, NULL, NULL, "--m, --n and --k are required"},
    };
    static const char *const values[] = {NULL, "-1", NULL, NULL, "5x", "banana", "f32", NULL};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[10];
        int n = 0;
        for (int j = 0; j < 8 && cases[i][j] != NULL; j++)
            args[n++] = cases[i][j];
        if (values[i] != NULL)
            args[n++] = values[i];
        args[n] = NULL;
        expect_usage(args, cases[i][8]);
        expect_usage(args, "usage: barecuda gemm");
    }
}

static void test_latency_end_to_end(void **state)
{
    (void)state;
    gemm_emu_install(-1);
    char csv[] = "/tmp/bc_lat_csv_XXXXXX", svg[] = "/tmp/bc_lat_svg_XXXXXX";
    close(mkstemp(csv));
    close(mkstemp(svg));
    run_result r;
    const char *args[] = {"latency", "--shape", "16x32x64", "--runs", "200", "--warmup", "3", "--priority", "-99",
                          "--csv", csv, "--svg", svg, "--json", NULL};
    run_cli(&r, args);
    if (r.rc != BC_EXIT_OK)
        fail_msg("rc %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
    has(r.out, "{\"tool\":\"barecuda latency\",\"device\":\"Fake H100\"");
    has(r.out, "\"m\":16,\"n\":32,\"k\":64,\"dtype\":\"bf16\",\"out\":\"bf16\"");
    has(r.out, "\"priority_asked\":-99,\"priority_effective\":-5"); /* clamped to the fake's greatest */
    has(r.out, "\"checked\":true");
    has(r.out, "\"percentiles\":\"nearest-rank\"");
    /* 2 modes x 3 policies end to end, the floor end to end (spin), launch call x 2 shapes x 2 modes,
     * and the raw empty-kernel launch, call alone and end to end */
    assert_int_equal(count_of(r.out, "\"what\":\"end_to_end\""), 9);
    assert_int_equal(count_of(r.out, "\"what\":\"launch_call\""), 5);
    assert_int_equal(count_of(r.out, "\"shape\":\"1x1x8\""), 4);
    assert_int_equal(count_of(r.out, "\"call\":\"cuLaunchKernelEx_empty\""), 2);
    assert_int_equal(count_of(r.out, "\"n\":200,"), 14);
    has(r.out, "{\"mode\":\"graph\",\"policy\":\"block\",\"what\":\"end_to_end\",\"call\":\"bc_graph_launch\"");
    run_free(&r);

    char *text = cli_slurp(csv);
    assert_int_equal(strncmp(text, "mode,policy,index,ns\n", 21), 0);
    assert_int_equal(count_of(text, "\n"), 1 + 14 * 200);
    assert_int_equal(count_of(text, "\nempty-kernel,launch_call,"), 200);
    assert_int_equal(count_of(text, "\nempty-kernel,spin,"), 200);
    assert_int_equal(count_of(text, "\ngraph,spin,"), 200);
    assert_int_equal(count_of(text, "\nstream,launch_call,"), 200);
    assert_int_equal(count_of(text, "\ngraph-1x1x8,launch_call,"), 200);
    assert_int_equal(count_of(text, "\nstream-1x1x8,spin,"), 200);
    has(text, "\nstream,block,199,");
    free(text);
    text = cli_slurp(svg);
    assert_well_formed(text);
    has(text, "stream / spin wait");
    has(text, "graph / block wait");
    assert_int_equal(count_of(text, ">p99.9 "), 6);
    free(text);

    /* text output, one mode and policy */
    gemm_emu_install(-1);
    const char *one[] = {"latency", "--m", "8", "--n", "16", "--k", "32", "--runs", "50", "--mode", "graph",
                         "--wait", "spin", NULL};
    run_cli(&r, one);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "8x16x32 bf16 -> bf16");
    has(r.out, "graph / spin");
    has(r.out, "bc_graph_launch 8x16x32");
    has(r.out, "bc_graph_launch 1x1x8");
    lacks(r.out, "stream / spin");
    lacks(r.out, "bc_gemm_launch");
    has(r.out, "floor");
    run_free(&r);
}

static void test_latency_checks_first(void **state)
{
    (void)state;
    fake_install(); /* computes nothing: the poisoned output fails the check */
    fake_set_param_size(sizeof(bc_gemm_params)); /* graph capture needs the parameter bytes */
    run_result r;
    const char *args[] = {"latency", "--shape", "16x32x64", "--runs", "20", NULL};
    run_cli(&r, args);
    if (r.rc != BC_EXIT_VERIFY)
        fail_msg("rc %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
    has(r.err, "FAIL: the plan computes wrong results");
    lacks(r.out, "p99.9");
    run_free(&r);
    /* --no-check measures anyway and says so */
    fake_install();
    fake_set_param_size(sizeof(bc_gemm_params));
    const char *nocheck[] = {"latency", "--shape", "16x32x64", "--runs", "20", "--warmup", "0", "--no-check", NULL};
    run_cli(&r, nocheck);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "NOT checked");
    run_free(&r);
}

static void test_latency_reports_the_failing_call(void **state)
{
    (void)state;
    gemm_emu_install(-1);
    fake_fail_entry(FAKE_E_cuGraphLaunch, 20, CUDA_ERROR_ILLEGAL_ADDRESS, 0);
    run_result r;
    const char *args[] = {"latency", "--shape", "16x32x64", "--runs", "50", "--mode", "graph", NULL};
    run_cli(&r, args);
    assert_int_equal(r.rc, BC_EXIT_DEVICE_LOST);
    has(r.err, "barecuda latency: bc_graph_launch failed: BC_ERR_DEVICE_LOST");
    lacks(r.out, "p99.9");
    run_free(&r);
}

static void test_latency_bad_options(void **state)
{
    (void)state;
    static const char *const cases[][4] = {
        {"latency", "--wait", "fast", NULL}, {"latency", "--mode", "both", NULL}, {"latency", "--runs", "0", NULL},
        {"latency", "--cpu", "-1", NULL},    {"latency", "--m", "0", NULL},       {"latency", "--shape", "1x2", NULL},
        {"latency", "--dtype", "f32", NULL}, {"latency", "--priority", "x", NULL}, {"latency", "--zzz", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_usage(cases[i], "usage: barecuda latency");
    /* an MLP is bf16 in and out with its own shapes: a GEMM's shape or types beside it are refused */
    static const char *const mlp_with[][6] = {
        {"latency", "--mlp", "16:256,64", "--shape", "64x64x64", NULL},
        {"latency", "--mlp", "16:256,64", "--dtype", "f16", NULL},
        {"latency", "--m", "64", "--mlp", "16:256,64", NULL},
        {"latency", "--mlp", "16:256,64", "--out", "f32", NULL},
    };
    for (size_t i = 0; i < sizeof mlp_with / sizeof mlp_with[0]; i++)
        expect_usage(mlp_with[i], "--mlp runs its own layers");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_nearest),
        cmocka_unit_test(test_percentile_textbook),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_svg_series),
        cmocka_unit_test(test_svg_degenerate),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_bench_sets),
        cmocka_unit_test(test_options_and_rows),
        ft_test(test_bench_times_a_correct_gemm),
        ft_test(test_bench_never_times_a_wrong_gemm),
        ft_test(test_bench_reports_the_failing_call),
        ft_test(test_bench_bad_options),
        ft_test(test_gemm_bad_options),
        ft_test(test_latency_end_to_end),
        ft_test(test_latency_checks_first),
        ft_test(test_latency_reports_the_failing_call),
        ft_test(test_latency_bad_options), ft_test(test_gemm_failures_report_and_free),
    };
    return cmocka_run_group_tests_name("cli_stats", tests, NULL, NULL);
}
