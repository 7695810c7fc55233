/* barecuda latency: end-to-end latency distribution of one GEMM plan (issue 6).
 *
 * One sample = t0 (clock_gettime CLOCK_MONOTONIC) right before
 * bc_gemm_launch (stream mode) or bc_graph_launch (graph mode: a graph of
 * that one plan), then bc_stream_wait with the stream's wait policy, t1 when
 * it returns: the time from the host's call to the host seeing the GEMM
 * finished. Series: each selected mode x wait policy; the launch call alone
 * (t1 when the call returns, a spin wait after each so the queue stays
 * empty); and the same for a 1x1x8 plan, the floor of the launch path (the
 * public API cannot launch a raw empty kernel). The data is random and
 * uploaded once, the plans and graphs made once, the sample arrays allocated
 * before the first timed run: the timed loop calls only the launch, the
 * wait and clock_gettime. */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "gemm_check.h"
#include "latency.h"
#include "ref.h"
#include "shapes.h"

#define MAX_SERIES 16
#define CHECK_ROWS 8

typedef struct lat_opts {
    int64_t m, n, k;
    bc_dtype ab, out;
    int runs, warmup;
    int modes;    /* bit 0 stream, bit 1 graph */
    int policies; /* bit p: bc_sched_policy p */
    int cpu, priority, json, check;
    uint64_t timeout_ns;
    const char *csv, *svg, *config;
    uint32_t split_k;
} lat_opts;

typedef struct lat_ctx {
    const lat_opts *o;
    bc_device *dev;
    bc_stream *s;
    bc_gemm_desc d, fd;         /* the plan's and the 1x1x8 floor plan's descriptors */
    bc_gemm_plan *plan, *fplan;
    bc_graph *graph, *fgraph;
    void *host_a, *host_b, *row_buf;
    double *ref_buf;
    bc_rng rng;
    int64_t rows_checked;
    int verify_failed;
} lat_ctx;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: barecuda latency [--m M --n N --k K | --shape MxNxK] [--dtype bf16|f16] [--out bf16|f16|f32]\n"
            "                        [--runs R] [--warmup W] [--mode stream|graph|all] [--wait spin|yield|block|all]\n"
            "                        [--cpu C] [--priority P] [--csv FILE] [--svg FILE] [--json] [--config NAME] [--split S]\n"
            "                        [--timeout-ms T] [--no-check]\n"
            "End-to-end latency of one GEMM plan (default 128x2048x2048 bf16), host call -> completion seen by the\n"
            "host, R runs (default 10000; --n is the GEMM's N) after W warm-up runs (default 200), per mode and\n"
            "wait policy; then the host cost of the launch call alone, for the plan and for a 1x1x8 plan (the\n"
            "floor). Prints p50/p90/p99/p99.9/max (nearest rank, us). --csv writes every sample as\n"
            "mode,policy,index,ns; --svg a histogram. --cpu pins the measuring thread; --priority sets the stream\n"
            "priority (clamped; the effective one is printed). Results are checked against the CPU reference\n"
            "first (exit %d when wrong) unless --no-check. Each wait is bounded by --timeout-ms (default 10000).\n",
            BC_EXIT_VERIFY);
}

static int parse_set(const char *s, const char *const *names, int count, int *out)
{
    if (!strcmp(s, "all")) {
        *out = (1 << count) - 1;
        return 0;
    }
    for (int i = 0; i < count; i++)
        if (!strcmp(s, names[i])) {
            *out = 1 << i;
            return 0;
        }
    return -1;
}

static const char *const mode_names[] = {"stream", "graph"};
static const char *const policy_names[] = {"spin", "yield", "block"}; /* bc_sched_policy order */

#define BAD(...) return fprintf(stderr, "barecuda latency: " __VA_ARGS__), -1

static int parse(int argc, char **argv, lat_opts *o)
{
    static const struct option longs[] = {
        {"m", 1, 0, 'm'},       {"n", 1, 0, 'n'},        {"k", 1, 0, 'k'},      {"shape", 1, 0, 'S'},
        {"dtype", 1, 0, 't'},   {"out", 1, 0, 'o'},      {"runs", 1, 0, 'r'},   {"iters", 1, 0, 'r'},
        {"warmup", 1, 0, 'w'},  {"mode", 1, 0, 'M'},     {"wait", 1, 0, 'W'},   {"cpu", 1, 0, 'c'},
        {"priority", 1, 0, 'p'}, {"csv", 1, 0, 'v'},     {"svg", 1, 0, 'g'},    {"json", 0, 0, 'j'},
        {"config", 1, 0, 'C'},  {"timeout-ms", 1, 0, 'T'}, {"no-check", 0, 0, 'x'}, {"help", 0, 0, 'h'},
        {"split", 1, 0, 'K'},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->m = 128, o->n = 2048, o->k = 2048;
    o->ab = BC_DTYPE_BF16;
    o->runs = 10000;
    o->warmup = 200;
    o->modes = 3;
    o->policies = 7;
    o->cpu = -1;
    o->check = 1;
    o->timeout_ns = 10000ull * 1000000ull;
    int c, out_set = 0;
    long long v = 0;
    bc_shape sh;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'm': case 'n': case 'k':
            if (bc_cli_parse_ll(optarg, 1, 2147483647LL, &v))
                BAD("bad --%c '%s' (1..2^31-1)\n", c, optarg);
            *(c == 'm' ? &o->m : c == 'n' ? &o->n : &o->k) = v;
            break;
        case 'S':
            if (bc_shapes_parse(optarg, &sh, 1) != 1)
                BAD("bad --shape '%s' (want MxNxK)\n", optarg);
            o->m = sh.m, o->n = sh.n, o->k = sh.k;
            break;
        case 't':
            if (bc_cli_parse_dtype(optarg, &o->ab) || o->ab == BC_DTYPE_F32)
                BAD("bad --dtype '%s' (bf16 or f16)\n", optarg);
            break;
        case 'o':
            if (bc_cli_parse_dtype(optarg, &o->out))
                BAD("bad --out '%s' (bf16, f16 or f32)\n", optarg);
            out_set = 1;
            break;
        case 'r':
            if (bc_cli_parse_ll(optarg, 1, 100000000, &v))
                BAD("bad --runs '%s' (1..1e8)\n", optarg);
            o->runs = (int)v;
            break;
        case 'w':
            if (bc_cli_parse_ll(optarg, 0, 100000000, &v))
                BAD("bad --warmup '%s' (0..1e8)\n", optarg);
            o->warmup = (int)v;
            break;
        case 'M':
            if (parse_set(optarg, mode_names, 2, &o->modes))
                BAD("bad --mode '%s' (stream, graph or all)\n", optarg);
            break;
        case 'W':
            if (parse_set(optarg, policy_names, 3, &o->policies))
                BAD("bad --wait '%s' (spin, yield, block or all)\n", optarg);
            break;
        case 'c':
            if (bc_cli_parse_ll(optarg, 0, CPU_SETSIZE - 1, &v))
                BAD("bad --cpu '%s' (0..%d)\n", optarg, CPU_SETSIZE - 1);
            o->cpu = (int)v;
            break;
        case 'p':
            if (bc_cli_parse_ll(optarg, -1000, 1000, &v))
                BAD("bad --priority '%s' (an integer; clamped to the device's range)\n", optarg);
            o->priority = (int)v;
            break;
        case 'T':
            if (bc_cli_parse_ll(optarg, 1, 3600000, &v))
                BAD("bad --timeout-ms '%s' (1..3600000)\n", optarg);
            o->timeout_ns = (uint64_t)v * 1000000ull;
            break;
        case 'v': o->csv = optarg; break;
        case 'g': o->svg = optarg; break;
        case 'j': o->json = 1; break;
        case 'C': o->config = optarg; break;
        case 'K':
            if (bc_cli_parse_ll(optarg, 0, 16, &v))
                BAD("bad --split '%s' (0 = the rule, 1 = none, 2..16)\n", optarg);
            o->split_k = (uint32_t)v;
            break;
        case 'x': o->check = 0; break;
        case 'h': usage(stdout); exit(BC_EXIT_OK);
        default: BAD("unknown option or missing value: '%s'\n", argv[optind - 1]);
        }
    }
    if (optind < argc)
        BAD("unexpected argument '%s'\n", argv[optind]);
    if (!out_set)
        o->out = o->ab;
    return 0;
}

#define TRY(expr)                                         \
    do {                                                  \
        bc_status st_ = (expr);                           \
        if (st_) {                                        \
            bc_cli_report_call("latency", #expr, st_);    \
            return st_;                                   \
        }                                                 \
    } while (0)

/* Random N(0,1) inputs of one descriptor, uploaded into fresh arena blocks. */
static bc_status upload(lat_ctx *c, bc_gemm_desc *d, void *ha, void *hb)
{
    const size_t ab = bc_dtype_bytes(d->ab_type);
    const size_t sa = (size_t)(d->m * d->k) * ab, sb = (size_t)(d->n * d->k) * ab;
    const size_t sd = (size_t)(d->m * d->n) * bc_dtype_bytes(d->d_type);
    bc_ref_fill_normal(ha, d->ab_type, sa / ab, 1.0, &c->rng);
    bc_ref_fill_normal(hb, d->ab_type, sb / ab, 1.0, &c->rng);
    TRY(bc_mem_alloc(c->dev, sa, &d->a));
    TRY(bc_mem_alloc(c->dev, sb, &d->b));
    TRY(bc_mem_alloc(c->dev, sd, &d->d));
    TRY(bc_memcpy_htod(c->dev, d->a, ha, sa));
    TRY(bc_memcpy_htod(c->dev, d->b, hb, sb));
    return BC_OK;
}

/* Poisons D, runs the plan once directly and once through its graph, and
 * checks every row (small shapes) or `rows` sampled rows after each. */
static bc_status check(lat_ctx *c, const bc_gemm_desc *d, const bc_gemm_plan *p, const bc_graph *g, const void *ha,
                       const void *hb, int rows, const char *what)
{
    const size_t sd = (size_t)(d->m * d->n) * bc_dtype_bytes(d->d_type);
    bc_ref_error e;
    memset(&e, 0, sizeof e);
    const int64_t count = bc_check_row_count(d, rows);
    for (int pass = 0; pass < 2; pass++) {
        TRY(bc_memset_d8_async(c->s, d->d, 0xFF, sd));
        TRY(pass == 0 ? bc_gemm_launch(p, c->s) : bc_graph_launch(g, c->s));
        TRY(bc_stream_wait(c->s, c->o->timeout_ns));
        for (int64_t i = 0; i < count; i++) {
            int64_t r = count == d->m ? i : bc_check_row_index(d->m, (int)i, (int)count, &c->rng);
            TRY(bc_check_row(c->dev, d, ha, hb, r, c->row_buf, c->ref_buf, &e));
            c->rows_checked++;
        }
    }
    if (!bc_check_passed(d, &e)) {
        fprintf(stderr,
                "barecuda latency: FAIL: %s computes wrong results (%zu of %zu checked elements out of tolerance, %zu "
                "unwritten, rel frobenius %.3e): no latency reported\n",
                what, e.bad, e.checked, e.nonfinite, bc_ref_rel_frobenius(&e));
        bc_check_print_mismatches(stderr, "  ", &e);
        c->verify_failed = 1;
    }
    return BC_OK;
}

static bc_status setup(lat_ctx *c, bc_device_info *di, int *prio_eff)
{
    const lat_opts *o = c->o;
    TRY(bc_stream_create(c->dev, o->priority, &c->s, prio_eff));
    TRY(bc_device_query(c->dev, di));
    bc_gemm_desc_default(&c->d);
    c->d.m = o->m, c->d.n = o->n, c->d.k = o->k;
    c->d.ab_type = o->ab, c->d.d_type = o->out;
    c->d.config = o->config;
    c->d.split_k = o->split_k;
    c->fd = c->d;
    c->fd.m = 1, c->fd.n = 1, c->fd.k = 8;
    c->fd.config = NULL, c->fd.split_k = 0; /* the floor plan takes the rule's choice */
    const size_t ab = bc_dtype_bytes(o->ab), big = (size_t)((o->m > o->n ? o->m : o->n) * o->k);
    c->host_a = malloc((size_t)(o->m * o->k) * ab);
    c->host_b = malloc((size_t)(o->n * o->k) * ab);
    c->row_buf = malloc((size_t)o->n * 4 + 64);
    c->ref_buf = malloc(((size_t)o->n + 8) * sizeof *c->ref_buf);
    uint16_t fa[8], fb[8];
    if (!c->host_a || !c->host_b || !c->row_buf || !c->ref_buf) {
        fprintf(stderr, "barecuda latency: cannot allocate %zu bytes of host inputs\n", 2 * big * ab);
        return BC_ERR_OUT_OF_HOST_MEMORY;
    }
    bc_status st = upload(c, &c->d, c->host_a, c->host_b);
    if (!st) st = upload(c, &c->fd, fa, fb);
    if (st)
        return st;
    TRY(bc_gemm_plan_create(c->dev, &c->d, &c->plan));
    TRY(bc_gemm_plan_create(c->dev, &c->fd, &c->fplan));
    const bc_gemm_plan *one = c->plan, *floor_one = c->fplan;
    TRY(bc_graph_create(c->s, &one, 1, &c->graph));
    TRY(bc_graph_create(c->s, &floor_one, 1, &c->fgraph));
    if (o->check) {
        st = check(c, &c->d, c->plan, c->graph, c->host_a, c->host_b, CHECK_ROWS, "the plan");
        if (!st) st = check(c, &c->fd, c->fplan, c->fgraph, fa, fb, 1, "the 1x1x8 floor plan");
    }
    return st;
}

/* The series to measure, in order; sample storage from one block. */
static int plan_series(const lat_opts *o, lat_series *s, uint64_t *store)
{
    int n = 0;
    for (int m = 0; m < 2; m++)
        for (int p = 0; p < 3; p++)
            if ((o->modes >> m & 1) && (o->policies >> p & 1)) {
                snprintf(s[n].mode, sizeof s[n].mode, "%s", mode_names[m]);
                snprintf(s[n].policy, sizeof s[n].policy, "%s", policy_names[p]);
                s[n].graph = m, s[n].kind = LAT_E2E, s[n].wait = (bc_sched_policy)p;
                n++;
            }
    for (int fl = 0; fl < 2; fl++) {
        for (int m = 0; m < 2; m++)
            if (o->modes >> m & 1) {
                snprintf(s[n].mode, sizeof s[n].mode, "%s%s", mode_names[m], fl ? "-1x1x8" : "");
                snprintf(s[n].policy, sizeof s[n].policy, "launch_call");
                s[n].graph = m, s[n].floor = fl, s[n].kind = LAT_LAUNCH, s[n].wait = BC_SCHED_SPIN;
                n++;
            }
        if (fl == 0) /* the floor end to end, spin wait, beside the launch-call floor */
            for (int m = 0; m < 2; m++)
                if (o->modes >> m & 1) {
                    snprintf(s[n].mode, sizeof s[n].mode, "%s-1x1x8", mode_names[m]);
                    snprintf(s[n].policy, sizeof s[n].policy, "spin");
                    s[n].graph = m, s[n].floor = 1, s[n].kind = LAT_E2E, s[n].wait = BC_SCHED_SPIN;
                    n++;
                }
    }
    /* the raw floor: one cuLaunchKernelEx of a kernel that does nothing */
    snprintf(s[n].mode, sizeof s[n].mode, "empty-kernel");
    snprintf(s[n].policy, sizeof s[n].policy, "launch_call");
    s[n].graph = 0, s[n].floor = 2, s[n].kind = LAT_LAUNCH, s[n].wait = BC_SCHED_SPIN;
    n++;
    /* and end to end: the launch-and-wait floor of this machine and driver */
    snprintf(s[n].mode, sizeof s[n].mode, "empty-kernel");
    snprintf(s[n].policy, sizeof s[n].policy, "spin");
    s[n].graph = 0, s[n].floor = 2, s[n].kind = LAT_E2E, s[n].wait = BC_SCHED_SPIN;
    n++;
    for (int i = 0; i < n; i++) {
        s[i].ns = store + (size_t)(2 * i) * (size_t)o->runs;
        s[i].sorted = store + (size_t)(2 * i + 1) * (size_t)o->runs;
    }
    return n;
}

/* The timed loop: warm-up runs first (not recorded), then o->runs samples. */
static bc_status measure(lat_ctx *c, lat_series *s)
{
    const bc_gemm_plan *p = s->floor ? c->fplan : c->plan;
    const bc_graph *g = s->floor ? c->fgraph : c->graph;
    const uint64_t timeout = c->o->timeout_ns;
    bc_stream *st = c->s;
    TRY(bc_stream_set_wait_policy(st, s->wait));
    TRY(bc_stream_wait(st, timeout));
    const int call_only = s->kind == LAT_LAUNCH;
    for (int i = -c->o->warmup; i < c->o->runs; i++) {
        bc_status r;
        const uint64_t t0 = bc_cli_now_ns();
        if (s->floor == 2)
            r = bc_selftest_empty_launch(st);
        else
            r = s->graph ? bc_graph_launch(g, st) : bc_gemm_launch(p, st);
        const uint64_t t1 = call_only ? bc_cli_now_ns() : 0;
        if (r) {
            bc_cli_report_call("latency", s->floor == 2 ? "bc_selftest_empty_launch"
                                          : s->graph ? "bc_graph_launch" : "bc_gemm_launch", r);
            return r;
        }
        r = bc_stream_wait(st, timeout);
        const uint64_t t2 = bc_cli_now_ns();
        if (r) {
            bc_cli_report_call("latency", "bc_stream_wait", r);
            return r;
        }
        if (i >= 0)
            s->ns[i] = call_only ? t1 - t0 : t2 - t0;
    }
    s->n = (size_t)c->o->runs;
    memcpy(s->sorted, s->ns, s->n * sizeof *s->ns);
    bc_stats_sort_u64(s->sorted, s->n);
    bc_stats_summarize_u64(s->sorted, s->n, &s->sum);
    return BC_OK;
}

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("barecuda latency: sched_setaffinity");
        return -1;
    }
    return 0;
}

static int run(lat_ctx *c, bc_device_info *di, int prio_eff)
{
    const lat_opts *o = c->o;
    static lat_series series[MAX_SERIES];
    memset(series, 0, sizeof series);
    const size_t store_bytes = 2 * (size_t)MAX_SERIES * (size_t)o->runs * sizeof(uint64_t);
    uint64_t *store = malloc(store_bytes);
    if (store == NULL) {
        fprintf(stderr, "barecuda latency: cannot allocate %zu bytes for the samples\n", store_bytes);
        return BC_EXIT_ERROR;
    }
    memset(store, 0, store_bytes); /* touch every page before timing */
    const int count = plan_series(o, series, store);
    if (o->cpu >= 0 && pin(o->cpu)) {
        free(store);
        return BC_EXIT_ERROR;
    }
    for (int i = 0; i < count; i++) {
        bc_status st = measure(c, &series[i]);
        if (st) {
            free(store);
            return bc_cli_exit_code(st);
        }
    }
    lat_report r = {
        .device = di->name, .sm_count = di->sm_count, .image = di->image_arch ? di->image_arch : "",
        .m = o->m, .n = o->n, .k = o->k, .ab = o->ab, .out = o->out,
        .runs = o->runs, .warmup = o->warmup, .cpu = o->cpu,
        .prio_asked = o->priority, .prio_effective = prio_eff,
        .prio_greatest = di->stream_priority_greatest, .prio_least = di->stream_priority_least,
        .checked = o->check, .rows_checked = c->rows_checked, .series = series, .count = count,
    };
    bc_gemm_plan_query(c->plan, &r.plan);
    bc_gemm_plan_query(c->fplan, &r.floor_plan);
    if (o->json)
        lat_print_json(&r);
    else
        lat_print_text(&r);
    int rc = BC_EXIT_OK;
    if (o->csv && lat_write_csv(&r, o->csv))
        rc = BC_EXIT_ERROR;
    if (o->svg && lat_write_svg(&r, o->svg))
        rc = BC_EXIT_ERROR;
    free(store);
    return rc;
}

int bc_cmd_latency(int argc, char **argv)
{
    lat_opts o;
    if (parse(argc, argv, &o)) {
        usage(stderr);
        return BC_EXIT_USAGE;
    }
    lat_ctx c;
    memset(&c, 0, sizeof c);
    c.o = &o;
    c.rng.s = bc_ref_seed();
    const size_t ab = bc_dtype_bytes(o.ab), ob = bc_dtype_bytes(o.out);
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    /* A, B, D, the floor plan's and slack */
    cfg.device_arena_bytes = (size_t)((o.m + o.n) * o.k) * ab + (size_t)(o.m * o.n) * ob + (128u << 20);
    bc_status st = bc_device_open(&cfg, &c.dev);
    if (st) { /* the one-line message every command prints for a missing driver or device */
        bc_cli_report("latency", st);
        return bc_cli_exit_code(st);
    }
    bc_device_info di;
    int prio_eff = 0, rc;
    st = setup(&c, &di, &prio_eff);
    if (st)
        rc = bc_cli_exit_code(st);
    else if (c.verify_failed)
        rc = BC_EXIT_VERIFY;
    else
        rc = run(&c, &di, prio_eff);
    bc_device_close(c.dev);
    free(c.host_a), free(c.host_b), free(c.row_buf), free(c.ref_buf);
    return rc;
}
