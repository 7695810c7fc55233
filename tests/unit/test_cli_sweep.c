/* The shape sweep of `barecuda bench --sweep` and the tools built on it:
 * the generator (splitmix64 test vectors, the log-uniform law, ranges, the
 * memory cap, the epilogue mix), agreement with its Python twin
 * (tools/sweep.py) on several seeds, the floor against PERF_NOTES.md's
 * table, the sweep end to end over the fake driver with the CPU GEMM
 * emulator (rows, CSV, JSON, epilogues checked, forced configurations
 * skipped), bad options (exit 2), and the Python copy of the configuration
 * rule (tools/fit_rule.py) against the plans the C rule makes. The Python
 * parts skip when python3 or tools/ is not at hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli_run.h"
#include "fake_test.h"

#include "cli.h"
#include "gemm_emu.h"
#include "shapes.h"
#include "sweep.h"

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void has(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("output lacks \"%s\":\n%s", needle, text);
}

static void run_cli(cli_capture *r, const char *const *args)
{
    char *argv[40] = {"barecuda"};
    int argc = 1;
    for (; args[argc - 1] != NULL && argc < 39; argc++)
        argv[argc] = (char *)args[argc - 1];
    argv[argc] = NULL;
    cli_capture_run(r, argc, argv);
}

/* python3 and `tool` under tools/ (the tests run from the repository root). */
static int have_python(const char *tool)
{
    char path[128];
    snprintf(path, sizeof path, "tools/%s", tool);
    return access(path, R_OK) == 0 && system("python3 -c 'import argparse, csv' >/dev/null 2>&1") == 0;
}

/* Runs a shell command, returns its stdout (malloc'd); fails the test on a non-zero exit. */
static char *shell(const char *cmd)
{
    char out_path[] = "/tmp/bc_sweep_py_XXXXXX";
    close(mkstemp(out_path));
    char full[4096];
    snprintf(full, sizeof full, "( %s ) > %s", cmd, out_path);
    int rc = system(full);
    char *text = cli_slurp(out_path);
    if (rc != 0)
        fail_msg("'%s' exited %d:\n%s", cmd, rc, text);
    return text;
}

/* ---------------------------------------------------------------- generator */

static void test_splitmix_vectors(void **state)
{
    (void)state;
    /* the published splitmix64 outputs for seed 0 and seed 1234567 */
    bc_rng r = {0};
    assert_true(bc_rng_next(&r) == 0xE220A8397B1DCDAFull);
    assert_true(bc_rng_next(&r) == 0x6E789E6AA1B965F4ull);
    assert_true(bc_rng_next(&r) == 0x06C45D188009454Full);
    r.s = 1234567;
    assert_true(bc_rng_next(&r) == 6457827717110365317ull);
    assert_true(bc_rng_next(&r) == 3203168211198807973ull);
    assert_true(bc_rng_next(&r) == 9817491932198370423ull);
}

static void test_logu_law(void **state)
{
    (void)state;
    enum { DRAWS = 140000 };
    uint64_t st = 99;
    int octave[16] = {0};
    for (int i = 0; i < DRAWS; i++) {
        int64_t v = bc_sweep_logu(&st, 1, 16384);
        assert_true(v >= 1 && v <= 16384);
        int o = 0;
        while ((2ll << o) <= v)
            o++;
        octave[o]++;
    }
    /* log-uniform on [1, 16385): each octave [2^j, 2^(j+1)) for j < 14 holds log(2)/log(16385) ~ 1/14;
     * 10000 expected, binomial sd ~ 96: allow 5 sd */
    for (int j = 0; j < 14; j++)
        if (octave[j] < 9520 || octave[j] > 10480)
            fail_msg("octave %d holds %d of %d draws", j, octave[j], DRAWS);
    assert_true(octave[14] < 10); /* 16384 alone: probability ~6e-6 */
    /* the value 1 = [1, 2): as likely as any octave; within an octave the density falls as 1/x */
    st = 7;
    int low = 0, high = 0;
    for (int i = 0; i < DRAWS; i++) {
        int64_t v = bc_sweep_logu(&st, 1024, 2047);
        assert_true(v >= 1024 && v <= 2047);
        low += v < 1448;  /* below 1024 * sqrt(2): half the mass of a log-uniform law */
        high += v >= 1448;
    }
    assert_true(abs(low - high) < 2000);
    /* degenerate ranges */
    assert_int_equal(bc_sweep_logu(&st, 8, 8), 8);
    for (int i = 0; i < 100; i++) {
        int64_t v = bc_sweep_logu(&st, 8, 9);
        assert_true(v == 8 || v == 9);
    }
}

static void test_draw_properties(void **state)
{
    (void)state;
    enum { COUNT = 600 };
    static bc_sweep_item a[COUNT], b[COUNT];
    bc_sweep_params p = {.seed = 3, .count = COUNT, .mem_cap = BC_SWEEP_DEFAULT_MEM_CAP, .epi_fraction = 0.5};
    assert_int_equal(bc_sweep_draw(&p, a), 0);
    assert_int_equal(bc_sweep_draw(&p, b), 0);
    assert_memory_equal(a, b, sizeof a); /* deterministic */
    int tags[BC_EPI_COUNT] = {0};
    int small_k = 0, big = 0;
    for (int i = 0; i < COUNT; i++) {
        const bc_shape *s = &a[i].s;
        assert_true(s->m >= 1 && s->m <= 16384 && s->n >= 1 && s->n <= 16384);
        assert_true(s->k >= 8 && s->k <= 16384 && s->k % 8 == 0);
        const uint64_t set = bc_sweep_set_bytes(s, &bc_epi_table[a[i].epi]);
        assert_true(set * (uint64_t)bc_bench_sets(set) <= p.mem_cap);
        tags[a[i].epi]++;
        small_k += s->k <= 64;
        big += s->m >= 4096 && s->n >= 4096;
    }
    /* half plain (binomial sd ~12), the rest spread over the 7 variants (~43 each) */
    assert_true(tags[BC_EPI_PLAIN] > 240 && tags[BC_EPI_PLAIN] < 360);
    for (int e = 1; e < BC_EPI_COUNT; e++)
        assert_true(tags[e] > 15);
    assert_true(small_k > 60); /* P(K <= 64) ~ 0.28 */
    assert_true(big > 5);      /* P(M, N >= 4096) ~ (2/14)^2 */
    /* another seed, another list */
    p.seed = 4;
    assert_int_equal(bc_sweep_draw(&p, b), 0);
    assert_true(memcmp(a, b, sizeof a) != 0);
    /* fraction 0: all plain; 1: none */
    p.epi_fraction = 0.0;
    assert_int_equal(bc_sweep_draw(&p, b), 0);
    for (int i = 0; i < COUNT; i++)
        assert_int_equal(b[i].epi, BC_EPI_PLAIN);
    p.epi_fraction = 1.0;
    assert_int_equal(bc_sweep_draw(&p, b), 0);
    for (int i = 0; i < COUNT; i++)
        assert_int_not_equal(b[i].epi, BC_EPI_PLAIN);
    /* a small cap keeps every shape under it */
    p.mem_cap = 1 << 20;
    assert_int_equal(bc_sweep_draw(&p, b), 0);
    for (int i = 0; i < COUNT; i++) {
        const uint64_t set = bc_sweep_set_bytes(&b[i].s, &bc_epi_table[b[i].epi]);
        assert_true(set * (uint64_t)bc_bench_sets(set) <= (1u << 20));
    }
}

static void test_bytes_and_floor(void **state)
{
    (void)state;
    /* kernels_ptx/PERF_NOTES.md, "Floors": 4096^3 171.80 us compute; 16x4096x4096 11.20 us memory;
     * 256x4096x4096 12.50 us memory */
    const bc_shape cube = {4096, 4096, 4096}, skinny = {16, 4096, 4096}, s256 = {256, 4096, 4096};
    const bc_epi_desc *plain = &bc_epi_table[BC_EPI_PLAIN];
    assert_true(fabs(bc_sweep_floor_us(&cube, plain, BC_PEAK_FLOPS, BC_PEAK_BW) - 171.80) < 0.01);
    assert_true(fabs(bc_sweep_floor_us(&skinny, plain, BC_PEAK_FLOPS, BC_PEAK_BW) - 11.20) < 0.01);
    assert_true(fabs(bc_sweep_floor_us(&s256, plain, BC_PEAK_FLOPS, BC_PEAK_BW) - 12.50) < 0.01);
    /* C read: + M N bf16 = 131072 B: (131072 + 33554432 + 131072 + 131072) / 3.02e12 = 11.2409 us */
    assert_true(fabs(bc_sweep_floor_us(&skinny, &bc_epi_table[BC_EPI_C], BC_PEAK_FLOPS, BC_PEAK_BW) - 11.2409) < 1e-3);
    assert_true(fabs(bc_sweep_floor_us(&skinny, &bc_epi_table[BC_EPI_C_ALIAS], BC_PEAK_FLOPS, BC_PEAK_BW) - 11.2409) <
                1e-3);
    /* set bytes: C separate occupies memory, C = D does not; bias N values; f32 D 4 bytes */
    assert_int_equal(bc_sweep_set_bytes(&skinny, &bc_epi_table[BC_EPI_C]), 131072 + 33554432 + 2 * 131072);
    assert_int_equal(bc_sweep_set_bytes(&skinny, &bc_epi_table[BC_EPI_C_ALIAS]), 131072 + 33554432 + 131072);
    assert_int_equal(bc_sweep_set_bytes(&skinny, &bc_epi_table[BC_EPI_BIAS]), 131072 + 33554432 + 131072 + 8192);
    assert_int_equal(bc_sweep_traffic_bytes(&skinny, &bc_epi_table[BC_EPI_F32_OUT]), 131072 + 33554432 + 262144);
}

static void test_python_draws_the_same(void **state)
{
    (void)state;
    if (!have_python("sweep.py"))
        skip();
    static const char *const cases[][4] = {
        /* seed, count, mem cap, fraction */
        {"0", "300", "4294967296", "0.5"},         {"1", "300", "4294967296", "0.5"},
        {"42", "200", "1048576", "0.25"},          {"9223372036854775807", "100", "65536", "1"},
        {"123456789", "250", "17179869184", "0.1"}, {"7", "50", "4294967296", "0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"bench", "--sweep", cases[i][1], "--seed", cases[i][0], "--mem-cap", cases[i][2],
                              "--epilogue-fraction", cases[i][3], "--list", NULL};
        cli_capture r;
        run_cli(&r, args);
        assert_int_equal(r.rc, BC_EXIT_OK);
        char cmd[512];
        snprintf(cmd, sizeof cmd, "python3 tools/sweep.py --count %s --seed %s --mem-cap %s --epilogue-fraction %s",
                 cases[i][1], cases[i][0], cases[i][2], cases[i][3]);
        char *py = shell(cmd);
        if (strcmp(py, r.out) != 0)
            fail_msg("seed %s: C and Python draw different lists\nC:\n%.400s\nPython:\n%.400s", cases[i][0], r.out, py);
        assert_int_equal(count_of(r.out, "\n"), atoi(cases[i][1]));
        free(py);
        cli_capture_free(&r);
    }
}

/* ---------------------------------------------------------------- the sweep over the fake */

/* The i-th line of `text` that starts with a digit after optional spaces (a row), or NULL. */
static const char *row_line(const char *text, int i)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        const char *q = p;
        while (*q == ' ')
            q++;
        if (*q >= '0' && *q <= '9' && i-- == 0)
            return q;
    }
    return NULL;
}

static void test_sweep_rows_csv_json(void **state)
{
    (void)state;
    enum { COUNT = 14 };
    static bc_sweep_item items[COUNT];
    bc_sweep_params p = {.seed = 1, .count = COUNT, .mem_cap = 262144, .epi_fraction = 1.0};
    assert_int_equal(bc_sweep_draw(&p, items), 0);
    int seen[BC_EPI_COUNT] = {0};
    for (int i = 0; i < COUNT; i++)
        seen[items[i].epi] = 1;
    for (int e = 1; e < BC_EPI_COUNT; e++)
        assert_true(seen[e]); /* seed 1 covers every variant: each is checked below */

    gemm_emu_install(-1);
    fake_set_event_tick_ms(0.0005f); /* 0.5 us per replay: 0.01 us per GEMM, near these shapes' floors */
    char csv[] = "/tmp/bc_sweep_csv_XXXXXX";
    close(mkstemp(csv));
    cli_capture r;
    const char *args[] = {"bench", "--sweep", "14", "--seed", "1", "--mem-cap", "262144", "--epilogue-fraction",
                          "1", "--replays", "2", "--warmup", "0", "--csv", csv, NULL};
    run_cli(&r, args);
    if (r.rc != BC_EXIT_OK)
        fail_msg("rc %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
    has(r.out, "barecuda bench --sweep 14 --seed 1 (mem cap 262144 B, epilogue fraction 1");
    has(r.out, "idx shape");
    has(r.out, "%floor");
    for (int i = 0; i < COUNT; i++) {
        const char *line = row_line(r.out, i);
        assert_non_null(line);
        char want[96], shape[64], tag[32], cfg[64], check[16];
        int idx = -1, sets = 0;
        unsigned split = 0;
        double us = 0, tf = 0, floor_us = 0, pct = 0;
        assert_int_equal(sscanf(line, "%d %63s %31s %63s %u %d %15s %lf %lf %lf %lf", &idx, shape, tag, cfg, &split,
                                &sets, check, &us, &tf, &floor_us, &pct),
                         11);
        snprintf(want, sizeof want, "%lldx%lldx%lld", (long long)items[i].s.m, (long long)items[i].s.n,
                 (long long)items[i].s.k);
        assert_int_equal(idx, i);
        assert_string_equal(shape, want);
        assert_string_equal(tag, bc_epi_table[items[i].epi].tag);
        assert_int_equal(strncmp(cfg, "sm90_", 5), 0);
        assert_string_equal(check, "PASS");
        assert_true(sets == 8);
        assert_true(fabs(us - 0.01) < 1e-6);
    }
    cli_capture_free(&r);

    /* the CSV: one line per shape, every column; floor and % of floor recomputed here */
    char *text = cli_slurp(csv);
    has(text, "seed,index,m,n,k,epilogue,ab,out,alpha,beta,c_alias,bias,relu,config,split,grid,cluster,sets,status,"
              "median_us,min_us,max_us,tflops,floor_us,pct_floor,forced_config,forced_split,sm_count,swapped,dense_a,"
              "stream_k_tiles,multicast\n");
    assert_int_equal(count_of(text, "\n"), 1 + COUNT);
    const char *line = strchr(text, '\n') + 1;
    for (int i = 0; i < COUNT; i++, line = strchr(line, '\n') + 1) {
        long long seed, m, n, k;
        int index, c_alias, bias, relu, sms;
        char tag[32], ab[8], out[8], rest[512];
        double alpha, beta;
        assert_int_equal(sscanf(line, "%lld,%d,%lld,%lld,%lld,%31[^,],%7[^,],%7[^,],%lf,%lf,%d,%d,%d,%511s", &seed,
                                &index, &m, &n, &k, tag, ab, out, &alpha, &beta, &c_alias, &bias, &relu, rest),
                         14);
        const bc_epi_desc *e = &bc_epi_table[items[i].epi];
        assert_int_equal(seed, 1);
        assert_int_equal(index, i);
        assert_true(m == items[i].s.m && n == items[i].s.n && k == items[i].s.k);
        assert_string_equal(tag, e->tag);
        assert_string_equal(ab, e->ab == BC_DTYPE_F16 ? "f16" : "bf16");
        assert_string_equal(out, e->out == BC_DTYPE_F32 ? "f32" : e->out == BC_DTYPE_F16 ? "f16" : "bf16");
        assert_true(alpha == 1.0 && beta == (e->beta != 0.0f ? 1.0 : 0.0));
        assert_true(c_alias == e->c_alias && bias == e->bias && relu == e->relu);
        /* rest: config,split,grid,cluster,sets,status,median,min,max,tflops,floor,pct,forced_config,forced_split,sms */
        char cfg[64], status[8];
        unsigned split, grid, cluster;
        int sets;
        double med, mn, mx, tf, floor_us, pct;
        assert_int_equal(sscanf(rest, "%63[^,],%u,%u,%u,%d,%7[^,],%lf,%lf,%lf,%lf,%lf,%lf,,0,%d", cfg, &split, &grid,
                                &cluster, &sets, status, &med, &mn, &mx, &tf, &floor_us, &pct, &sms),
                         13);
        assert_string_equal(status, "PASS");
        assert_int_equal(sms, 132);
        /* the floor from the shape alone: bytes = A + B + D (+ C read) (+ bias) */
        const double ib = e->ab == BC_DTYPE_F32 ? 4 : 2, ob = e->out == BC_DTYPE_F32 ? 4 : 2;
        double bytes = (double)(m * k + n * k) * ib + (double)(m * n) * ob;
        if (e->beta != 0.0f)
            bytes += (double)(m * n) * ob;
        if (e->bias)
            bytes += (double)n * ob;
        const double flop_us = 2.0 * (double)(m * n * k) / 800e12 * 1e6, byte_us = bytes / 3.02e12 * 1e6;
        const double want_floor = flop_us > byte_us ? flop_us : byte_us;
        if (fabs(floor_us - want_floor) > 1e-5 * want_floor)
            fail_msg("row %d: floor %.6g us, want %.6g", i, floor_us, want_floor);
        if (fabs(pct - 100.0 * want_floor / med) > 1e-4 * pct)
            fail_msg("row %d: %% of floor %.6g, want %.6g", i, pct, 100.0 * want_floor / med);
    }
    free(text);

    /* JSON: the sweep's parameters and per-row epilogue fields */
    gemm_emu_install(-1);
    const char *json[] = {"bench", "--sweep", "3", "--seed", "1", "--mem-cap", "262144", "--epilogue-fraction", "1",
                          "--replays", "1", "--warmup", "0", "--json", NULL};
    run_cli(&r, json);
    assert_int_equal(r.rc, BC_EXIT_OK);
    has(r.out, "\"sweep\":{\"generator\":1,\"count\":3,\"seed\":1,\"mem_cap\":262144,\"epilogue_fraction\":1}");
    has(r.out, "{\"m\":2,\"n\":173,\"k\":24,");
    has(r.out, "\"index\":0,\"epilogue\":\"c\",\"ab\":\"bf16\",\"out\":\"bf16\",\"alpha\":1,\"beta\":1,"
               "\"c_alias\":false,\"bias\":false,\"relu\":false,\"status\":\"PASS\"");
    has(r.out, "\"index\":1,\"epilogue\":\"c_alias\"");
    has(r.out, "\"c_alias\":true");
    assert_int_equal(count_of(r.out, "\"verified\":true"), 3);
    cli_capture_free(&r);
}

static void test_sweep_checks_the_epilogue(void **state)
{
    (void)state;
    enum { COUNT = 14 };
    static bc_sweep_item items[COUNT];
    bc_sweep_params p = {.seed = 1, .count = COUNT, .mem_cap = 262144, .epi_fraction = 1.0};
    assert_int_equal(bc_sweep_draw(&p, items), 0);
    gemm_emu_install(-1);
    gemm_emu_skip_epilogue = 1; /* C, bias and ReLU ignored: wrong wherever the epilogue reads them */
    cli_capture r;
    const char *args[] = {"bench", "--sweep", "14", "--seed", "1", "--mem-cap", "262144", "--epilogue-fraction",
                          "1", "--replays", "1", "--warmup", "0", NULL};
    run_cli(&r, args);
    assert_int_equal(r.rc, BC_EXIT_VERIFY);
    for (int i = 0; i < COUNT; i++) {
        const char *line = row_line(r.out, i);
        assert_non_null(line);
        const bc_epi_desc *e = &bc_epi_table[items[i].epi];
        const int uses_epilogue = e->beta != 0.0f || e->bias || e->relu;
        const char *verdict = strstr(line, uses_epilogue ? " FAIL " : " PASS ");
        const char *eol = strchr(line, '\n');
        if (verdict == NULL || verdict > eol)
            fail_msg("row %d (%s) should %s:\n%s", i, e->tag, uses_epilogue ? "FAIL" : "PASS", r.out);
    }
    cli_capture_free(&r);
}

/* --epilogue on listed shapes: the header names it, and the check covers it
 * (an emulator that ignores C fails every shape, one that applies it passes). */
static void test_listed_epilogue(void **state)
{
    (void)state;
    const char *args[] = {"bench", "--shapes", "40x24x64,17x33x128", "--epilogue", "c", "--replays", "1",
                          "--warmup", "0", NULL};
    for (int skip = 0; skip < 2; skip++) {
        gemm_emu_install(-1);
        gemm_emu_skip_epilogue = skip;
        cli_capture r;
        run_cli(&r, args);
        assert_int_equal(r.rc, skip ? BC_EXIT_VERIFY : BC_EXIT_OK);
        assert_non_null(strstr(r.out, "bf16 -> bf16, epilogue c;"));
        for (int i = 0; i < 2; i++) {
            const char *line = strstr(r.out, i ? "17x33x128" : "40x24x64");
            assert_non_null(line);
            const char *verdict = strstr(line, skip ? " FAIL " : " PASS "), *eol = strchr(line, '\n');
            if (verdict == NULL || verdict > eol)
                fail_msg("shape %d should %s:\n%s", i, skip ? "FAIL" : "PASS", r.out);
        }
        cli_capture_free(&r);
    }
    gemm_emu_skip_epilogue = 0;
}

static void test_sweep_forced_config(void **state)
{
    (void)state;
    /* seed 1, cap 256 KiB, fraction 0.5: 3x19x8, 62x95x64, 368x3x32 (one k-block each: nothing to split)
     * and 6x2x232 c (four k-blocks) */
    gemm_emu_install(-1);
    char csv[] = "/tmp/bc_sweep_csv_XXXXXX";
    close(mkstemp(csv));
    cli_capture r;
    const char *args[] = {"bench", "--sweep", "4", "--seed", "1", "--mem-cap", "262144", "--config",
                          "sm90_128x256s", "--split", "8", "--replays", "1", "--warmup", "0", "--csv", csv, NULL};
    run_cli(&r, args);
    if (r.rc != BC_EXIT_OK)
        fail_msg("rc %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
    assert_int_equal(count_of(r.out, "SKIP  ("), 3);
    has(r.out, "    3 6x2x232            c         sm90_128x256s        4    8 PASS"); /* 8 asked, 4 k-blocks */
    cli_capture_free(&r);
    char *text = cli_slurp(csv);
    assert_int_equal(count_of(text, ",SKIP,"), 3);
    has(text, "\n1,0,3,19,8,plain,bf16,bf16,1,0,0,0,0,sm90_128x256s,8,0,0,8,SKIP,,,,,");
    has(text, "\n1,3,6,2,232,c,bf16,bf16,1,1,0,0,0,sm90_128x256s,4,");
    has(text, ",sm90_128x256s,8,132,0,0,0,0\n");
    free(text);

    /* a configuration that takes no shape: every row SKIP, exit 1 */
    gemm_emu_install(-1);
    const char *none[] = {"bench", "--sweep", "2", "--seed", "1", "--mem-cap", "262144", "--config", "sm90_nope",
                          "--replays", "1", NULL};
    run_cli(&r, none);
    assert_int_equal(r.rc, BC_EXIT_ERROR);
    assert_int_equal(count_of(r.out, "SKIP  (configuration 'sm90_nope' is unknown"), 2);
    has(r.err, "took none of the 2 shapes");
    cli_capture_free(&r);

    /* without --sweep a refused configuration stays an error, as before */
    gemm_emu_install(-1);
    const char *listed[] = {"bench", "--shapes", "16x16x64", "--config", "sm90_128x256s", "--split", "2", NULL};
    run_cli(&r, listed);
    assert_int_not_equal(r.rc, BC_EXIT_OK);
    has(r.err, "bc_gemm_plan_create");
    cli_capture_free(&r);
}

static void test_sweep_bad_options(void **state)
{
    (void)state;
    static const char *const cases[][9] = {
        {"bench", "--sweep", "0", "--seed", "1", NULL},
        {"bench", "--sweep", "100001", "--seed", "1", NULL},
        {"bench", "--sweep", "x", "--seed", "1", NULL},
        {"bench", "--sweep", "5", NULL},
        {"bench", "--sweep", "5", "--seed", "-1", NULL},
        {"bench", "--sweep", "5", "--seed", "9223372036854775808", NULL},
        {"bench", "--seed", "3", NULL},
        {"bench", "--mem-cap", "1000000", NULL},
        {"bench", "--epilogue-fraction", "0.5", NULL},
        {"bench", "--list", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--shapes", "1x1x8", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--dtype", "f16", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--out", "f32", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--mem-cap", "65535", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--mem-cap", "1e9", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--epilogue-fraction", "1.5", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--epilogue-fraction", "-0.1", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--epilogue-fraction", "nan", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--epilogue-fraction", "", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--epilogue-fraction", "0.5x", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--csv", NULL},
        {"bench", "--epilogue", "cc", NULL},
        {"bench", "--epilogue", "c", "--dtype", "f16", NULL},
        {"bench", "--epilogue", "bias", "--out", "f32", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--epilogue", "c", NULL},
        /* --list prints the drawn shapes: a timed run's options with it are refused, not ignored */
        {"bench", "--sweep", "5", "--seed", "1", "--list", "--json", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--csv", "/tmp/x.csv", "--list", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--list", "--replays", "3", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--list", "--warmup", "1", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--list", "--config", "sm90_128x128", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--list", "--split", "2", NULL},
        {"bench", "--sweep", "5", "--seed", "1", "--list", "--stream-k", NULL},
    };
    const size_t first_list_case = sizeof cases / sizeof cases[0] - 7; /* the last seven: --list and a run option */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_capture r;
        run_cli(&r, cases[i]);
        if (r.rc != BC_EXIT_USAGE)
            fail_msg("case %zu: rc %d\n%s", i, r.rc, r.err);
        has(r.err, "usage: barecuda bench");
        if (i >= first_list_case)
            has(r.err, "--list only prints the drawn shapes");
        cli_capture_free(&r);
    }
    /* one shape past the limit: refused, and the message says what the limit is */
    static char many[(BC_SHAPES_MAX + 1) * 8];
    size_t at = 0;
    for (int i = 0; i <= BC_SHAPES_MAX; i++)
        at += (size_t)snprintf(many + at, sizeof many - at, "%s8x8x8", i ? "," : "");
    const char *too_many[] = {"bench", "--shapes", many, NULL};
    cli_capture r;
    run_cli(&r, too_many);
    assert_int_equal(r.rc, BC_EXIT_USAGE);
    has(r.err, "at most 64 shapes");
    cli_capture_free(&r);
    _Static_assert(BC_SHAPES_MAX == 64, "the --shapes message names the limit");
}

/* ---------------------------------------------------------------- the rule's Python copy */

static void test_python_rule_matches_plans(void **state)
{
    (void)state;
    if (!have_python("fit_rule.py"))
        skip();
    enum { SWEPT = 400 };
    static bc_sweep_item items[SWEPT];
    bc_sweep_params p = {.seed = 2024, .count = SWEPT, .mem_cap = 1ull << 40, .epi_fraction = 0.0};
    assert_int_equal(bc_sweep_draw(&p, items), 0);
    static const bc_shape edges[] = {
        {1, 1, 8},      {1, 4096, 4096},  {16, 4096, 4096}, {64, 1024, 1024}, {128, 2048, 2048}, {256, 4096, 4096},
        {512, 4096, 4096}, {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 1024}, {4096, 4096, 4096},
        {6144, 6144, 6144}, {8192, 8192, 8192}, {4096, 14336, 4096}, {4096, 4096, 14336}, {128, 128, 64},
        {128, 128, 72}, {129, 257, 128}, {16384, 16384, 16384}, {1, 16384, 8}, {16, 1, 64}, {335, 1, 8},
        {131, 1, 192}, {131, 1, 4640}, {3, 600, 16}, {16, 1, 4640}, {1, 1, 64}, {2, 1, 72}, {16, 1, 200},
        /* D rows off 16 bytes on 31 rounds of 128x64t's tiles on 132 SMs, and on 4061 tiles */
        {3968, 8441, 16}, {3968, 8379, 16}, {3968, 8448, 16},
        /* D rows on 16 bytes: 14 rounds of 128x64t's tiles on 132 SMs and 1834 tiles, 2 and 3 k-blocks, the
         * dense-row kernel */
        {1792, 8448, 64}, {1792, 8384, 64}, {1792, 8448, 128}, {1792, 8448, 192}, {1792, 8448, 16},
        /* ... the dense-row test refused (K = 56; 31 CTAs on a row) at K 48 and 16, one tile column */
        {1792, 8448, 56}, {7680, 1984, 48}, {7680, 1984, 16}, {240000, 64, 64}, {240000, 65, 64},
        /* 128x256's short-K surcharge: 4 k-blocks, 5, and rows off the sectors (the credit) */
        {2642, 2648, 256}, {2642, 2648, 320}, {3638, 4136, 248}, {3544, 6196, 192},
        /* the twins' credit off the sectors: 16 and 17 tile rows, 15 and 14 k-blocks */
        {2048, 2100, 5416}, {2049, 2100, 5416}, {2048, 2100, 904}, {2048, 2100, 888},
        /* one tile row of 256 columns: M 64 and 65, 16 and 15 k-blocks, split 4 (not 8) and 2 (not 4) */
        {64, 10928, 3088}, {65, 10928, 3088}, {56, 10928, 1024}, {56, 10928, 960}, {32, 2560, 16384}, {22, 8080, 5560},
        /* 128x64t at 3 and 4 k-blocks: 67 and 66 tiles (57 and 58 on 114 SMs), 5 k-blocks, rows off the sectors */
        {128, 4288, 192}, {128, 4224, 192}, {128, 3712, 192}, {128, 3648, 192}, {128, 4288, 256}, {128, 4288, 264},
        {2048, 2048, 136}, {2048, 2048, 144},
        /* the GEMV kernel's 32-row twin: 16 and 17 rows, 32 and 33, a larger side of 4096 and 4097, K of 3072
         * and 3080, either side */
        {16, 4096, 512}, {17, 4096, 512}, {17, 4097, 512}, {32, 4096, 3072}, {32, 4096, 3080}, {33, 1000, 64},
        {4096, 24, 3072}, {4097, 24, 1000}, {4096, 32, 3080},
    };
    const int n_edges = (int)(sizeof edges / sizeof edges[0]);
    char in_path[] = "/tmp/bc_rule_in_XXXXXX";
    int fd = mkstemp(in_path);
    FILE *in = fdopen(fd, "w");
    assert_non_null(in);
    char *want = calloc(1, 64 * 2 * (SWEPT + n_edges) + 1);
    size_t want_len = 0;
    static const int sm_counts[] = {132, 114};
    for (int v = 0; v < 2; v++) {
        fake_device dv;
        fake_device_defaults(&dv);
        dv.sm_count = sm_counts[v];
        fake_set_devices(&dv, 1);
        bc_device_config cfg;
        bc_device_config_default(&cfg);
        cfg.device_arena_bytes = 1u << 20;
        bc_device *dev = NULL;
        assert_ok(bc_device_open(&cfg, &dev));
        /* three allocations as large as the largest operand (plan creation checks every extent) */
        for (uint64_t r = 1; r <= 3; r++)
            fake_add_unbacked_range(r << 40, 1ull << 36);
        for (int i = 0; i < SWEPT + n_edges; i++) {
            const bc_shape *s = i < SWEPT ? &items[i].s : &edges[i - SWEPT];
            bc_gemm_desc d;
            bc_gemm_desc_default(&d);
            d.m = s->m, d.n = s->n, d.k = s->k;
            d.a = 0x10000000000ull, d.b = 0x20000000000ull, d.d = 0x30000000000ull; /* never dereferenced */
            bc_gemm_plan *plan = NULL;
            assert_ok(bc_gemm_plan_create(dev, &d, &plan));
            bc_gemm_plan_info info;
            assert_ok(bc_gemm_plan_query(plan, &info));
            fprintf(in, "%lld %lld %lld %d\n", (long long)s->m, (long long)s->n, (long long)s->k, sm_counts[v]);
            want_len += (size_t)sprintf(want + want_len, "%lld %lld %lld %d %s %u %u\n", (long long)s->m,
                                        (long long)s->n, (long long)s->k, sm_counts[v], info.config, info.split_k,
                                        info.swapped);
            bc_gemm_plan_destroy(plan);
        }
        bc_device_close(dev);
    }
    fclose(in);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "python3 tools/fit_rule.py --choose < %s", in_path);
    char *got = shell(cmd);
    unlink(in_path);
    if (strcmp(got, want) != 0) {
        const char *g = got, *w = want;
        while (*g && *g == *w)
            g++, w++;
        while (g > got && g[-1] != '\n')
            g--, w--;
        fail_msg("tools/fit_rule.py chooses differently from the C rule; first difference:\nC:      %.80s\nPython: %.80s",
                 w, g);
    }
    free(got);
    free(want);
}

static void test_python_tools_unit_tests(void **state)
{
    (void)state;
    if (!have_python("test_sweep_tools.py"))
        skip();
    char *out = shell("python3 tools/test_sweep_tools.py 2>&1");
    has(out, "OK");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splitmix_vectors),
        cmocka_unit_test(test_logu_law),
        cmocka_unit_test(test_draw_properties),
        cmocka_unit_test(test_bytes_and_floor),
        ft_test(test_python_draws_the_same),
        ft_test(test_sweep_rows_csv_json),
        ft_test(test_sweep_checks_the_epilogue),
        ft_test(test_listed_epilogue),
        ft_test(test_sweep_forced_config),
        ft_test(test_sweep_bad_options),
        ft_test(test_python_rule_matches_plans),
        cmocka_unit_test(test_python_tools_unit_tests),
    };
    return cmocka_run_group_tests_name("cli_sweep", tests, NULL, NULL);
}
