/* barecuda latency: end-to-end latency distribution of one GEMM plan, or of
 * a multilayer perceptron's plans in sequence (--mlp).
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
 * wait and clock_gettime. --resident adds the resident executor's step
 * beside them (latency_resident.c), --io its input and output moved by
 * copy calls or by the kernel itself. */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "gemm_check.h"
#include "latency.h"
#include "mlp.h"
#include "ref.h"
#include "shapes.h"

#define MAX_SERIES 32


static void usage(FILE *f)
{
    fprintf(f,
            "usage: barecuda latency [--m M --n N --k K | --shape MxNxK] [--dtype bf16|f16] [--out bf16|f16|f32]\n"
            "                        [--runs R] [--warmup W] [--mode M[,M...]|all] [--wait P[,P...]|all]\n"
            "                        [--cpu C] [--priority P] [--csv FILE] [--svg FILE] [--json] [--config NAME]\n"
            "                        [--split S|S1,S2,...] [--timeout-ms T] [--no-check] [--mlp B:W0,W1,...]\n"
            "                        [--resident] [--io]\n"
            "                        [--sm-count N] [--spin-ns NS] [--max-sleep-ns NS]\n"
            "End-to-end latency of one GEMM plan (default 128x2048x2048 bf16), host call -> completion seen by the\n"
            "host, R runs (default 10000; --n is the GEMM's N) after W warm-up runs (default 200), per mode and\n"
            "wait policy; then the host cost of the launch call alone, for the plan and for a 1x1x8 plan (the\n"
            "floor). --mode takes stream, graph or resident (all: stream and graph), --wait spin, yield or block.\n"
            "Prints p50/p90/p99/p99.9/max (nearest rank, us). --csv writes every sample as\n"
            "mode,policy,index,ns; --svg a histogram. --cpu pins the measuring thread; --priority sets the stream\n"
            "priority (clamped; the effective one is printed). Results are checked against the CPU reference\n"
            "first (exit %d when wrong) unless --no-check. Each wait is bounded by --timeout-ms (default 10000).\n"
            "--mlp B:W0,...,WL measures a multilayer perceptron instead (bf16 in and out, so not with --shape, --m,\n"
            "--n, --k, --dtype or --out; batch B, layer widths W, bias, ReLU but\n"
            "after the last layer; the mlp of a control-loop policy: 16:256,1024,1024,64): stream mode launches\n"
            "its plans in order, graph mode replays one graph of them. --split S pins every plan's split (0 = the\n"
            "rule, 1 = whole tiles, 2..16); with --mlp, S1,S2,... pins each layer's. --resident adds mode \"resident\": one step\n"
            "of a resident executor of the same plans (ring the doorbell, wait for the completion word); --io\n"
            "adds it with the step's input and output in pinned host memory, moved by bc_memcpy calls\n"
            "(resident-memcpy) or by the kernel itself (resident-zerocopy). --sm-count, --spin-ns and\n"
            "--max-sleep-ns configure the executor (README, \"Resident executor\"). Every mode measures the same\n"
            "plans; the executor runs them when they share one resident kernel (whole-tile plans of one\n"
            "configuration but sm90_128x256 and sm90_64x256, each with its split-K and short-K twins: sm90_64x32 with sm90_64x32s\n"
            "and sm90_64x32t, sm90_64x32m16 with sm90_64x32m16s and sm90_64x32m16t, sm90_128x64 with sm90_128x64t;\n"
            "sm90_gemv plans alone or beside sm90_128x64 and sm90_128x64t): else pin --config or --split 1.\n"
            "With --resident every mode's plans are made with\n"
            "bc_gemm_desc.resident = 1: the rule's choice among the configurations a resident kernel runs.\n",
            BC_EXIT_VERIFY);
}

static const char *const mode_names[] = {"stream", "graph", "resident"};
static const char *const policy_names[] = {"spin", "yield", "block"}; /* bc_sched_policy order */

#define BAD(...) return fprintf(stderr, "barecuda latency: " __VA_ARGS__), -1

/* --split: "S" or "S1,S2,..." (at most BC_MLP_MAX_LAYERS values, each 0..16) into o->split_k, their
 * count into o->splits; 0, or -1 on a bad list (an empty value, junk, a value out of range). */
static int parse_splits(const char *arg, lat_opts *o)
{
    long long v[BC_MLP_MAX_LAYERS];
    const int n = bc_mlp_parse_list(arg, 0, 16, BC_MLP_MAX_LAYERS, v);
    if (n < 1)
        return -1;
    for (int i = 0; i < n; i++)
        o->split_k[i] = (uint32_t)v[i];
    o->splits = n;
    return 0;
}

static int parse(int argc, char **argv, lat_opts *o)
{
    static const struct option longs[] = {
        {"m", 1, 0, 'm'},       {"n", 1, 0, 'n'},        {"k", 1, 0, 'k'},      {"shape", 1, 0, 'S'},
        {"dtype", 1, 0, 't'},   {"out", 1, 0, 'o'},      {"runs", 1, 0, 'r'},   {"iters", 1, 0, 'r'},
        {"warmup", 1, 0, 'w'},  {"mode", 1, 0, 'M'},     {"wait", 1, 0, 'W'},   {"cpu", 1, 0, 'c'},
        {"priority", 1, 0, 'p'}, {"csv", 1, 0, 'v'},     {"svg", 1, 0, 'g'},    {"json", 0, 0, 'j'},
        {"config", 1, 0, 'C'},  {"timeout-ms", 1, 0, 'T'}, {"no-check", 0, 0, 'x'}, {"help", 0, 0, 'h'},
        {"split", 1, 0, 'K'},   {"mlp", 1, 0, 'L'},      {"resident", 0, 0, 'R'}, {"io", 0, 0, 'I'},
        {"sm-count", 1, 0, 'G'}, {"spin-ns", 1, 0, 'P'},  {"max-sleep-ns", 1, 0, 'Z'},
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
    bc_resident_config_default(&o->res);
    int c, out_set = 0, resident = 0, gemm_set = 0;
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
            gemm_set = 1;
            break;
        case 'S':
            if (bc_shapes_parse(optarg, &sh, 1) != 1)
                BAD("bad --shape '%s' (want MxNxK)\n", optarg);
            o->m = sh.m, o->n = sh.n, o->k = sh.k;
            gemm_set = 1;
            break;
        case 't':
            if (bc_cli_parse_dtype(optarg, &o->ab) || o->ab == BC_DTYPE_F32)
                BAD("bad --dtype '%s' (bf16 or f16)\n", optarg);
            gemm_set = 1;
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
            if (bc_cli_parse_set(optarg, mode_names, 3, &o->modes))
                BAD("bad --mode '%s' (stream, graph, resident or all)\n", optarg);
            if (!strcmp(optarg, "all"))
                o->modes = 3; /* stream and graph; --resident adds resident */
            break;
        case 'R': resident = 1; break;
        case 'I': o->io = 1; break;
        case 'L':
            if (bc_mlp_parse(optarg, &o->batch, o->width, &o->layers))
                BAD("bad --mlp '%s' (B:W0,W1,...: batch, then 2..%d widths, multiples of 8)\n", optarg,
                    BC_MLP_MAX_LAYERS + 1);
            o->mlp = optarg;
            break;
        case 'G': case 'P': case 'Z':
            if (bc_cli_parse_ll(optarg, 0, c == 'G' ? 1024 : c == 'Z' ? 1000000 : 4000000000LL, &v))
                BAD("bad --%s '%s'\n", c == 'G' ? "sm-count" : c == 'P' ? "spin-ns" : "max-sleep-ns", optarg);
            *(c == 'G' ? &o->res.sm_count : c == 'P' ? &o->res.spin_ns : &o->res.max_sleep_ns) = (uint32_t)v;
            break;
        case 'W':
            if (bc_cli_parse_set(optarg, policy_names, 3, &o->policies))
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
            if (parse_splits(optarg, o))
                BAD("bad --split '%s' (S or S1,S2,... one a layer; each 0 = the rule, 1 = none, 2..16)\n", optarg);
            break;
        case 'x': o->check = 0; break;
        case 'h': usage(stdout); exit(BC_EXIT_OK);
        default: BAD("unknown option or missing value: '%s'\n", argv[optind - 1]);
        }
    }
    if (optind < argc)
        BAD("unexpected argument '%s'\n", argv[optind]);
    if ((o->csv != NULL && bc_cli_check_writable("latency", "csv", o->csv)) ||
        (o->svg != NULL && bc_cli_check_writable("latency", "svg", o->svg)))
        return -1;
    if (o->mlp != NULL && (gemm_set || out_set))
        BAD("--mlp runs its own layers, bf16 in and out: not with --shape, --m, --n, --k, --dtype or --out\n");
    if (o->splits > 1 && (o->mlp == NULL || o->splits != o->layers))
        BAD("--split with %d values needs --mlp with as many layers\n", o->splits);
    if (o->splits == 1) /* one value: every layer's */
        for (int l = 1; l < BC_MLP_MAX_LAYERS; l++)
            o->split_k[l] = o->split_k[0];
    if (resident)
        o->modes |= 4;
    if (o->io && !(o->modes & 4))
        BAD("--io measures the resident step: add --resident\n");
    if (!out_set)
        o->out = o->ab;
    return 0;
}

static void add(lat_series *s, int *n, const char *mode, const char *policy, int graph, int floor, lat_kind kind,
                bc_sched_policy wait, int resident)
{
    lat_series *x = &s[(*n)++];
    snprintf(x->mode, sizeof x->mode, "%s", mode);
    snprintf(x->policy, sizeof x->policy, "%s", policy);
    x->graph = graph, x->floor = floor, x->kind = kind, x->wait = wait, x->resident = resident;
}

/* The series to measure, in order (their sample storage is run's). */
static int plan_series(const lat_opts *o, lat_series *s)
{
    static const char *const io_modes[] = {"resident-memcpy", "resident-zerocopy"};
    char mode[24];
    int n = 0;
    for (int m = 0; m < 3; m++)
        for (int p = 0; p < 3; p++)
            if ((o->modes >> m & 1) && (o->policies >> p & 1))
                add(s, &n, mode_names[m], policy_names[p], m == 1, 0, LAT_E2E, (bc_sched_policy)p,
                    m == 2 ? LAT_RES_DEVICE : LAT_RES_NONE);
    for (int io = 0; io < 2 && o->io; io++)
        for (int p = 0; p < 3; p++)
            if (o->policies >> p & 1)
                add(s, &n, io_modes[io], policy_names[p], 0, 0, LAT_E2E, (bc_sched_policy)p,
                    io ? LAT_RES_ZEROCOPY : LAT_RES_MEMCPY);
    for (int fl = 0; fl < 2; fl++) {
        for (int m = 0; m < 3; m++)
            if ((o->modes >> m & 1) && !(fl && m == 2)) {
                snprintf(mode, sizeof mode, "%s%s", mode_names[m], fl ? "-1x1x8" : "");
                add(s, &n, mode, "launch_call", m == 1, fl, LAT_LAUNCH, BC_SCHED_SPIN,
                    m == 2 ? LAT_RES_DEVICE : LAT_RES_NONE);
            }
        for (int m = 0; m < 2 && fl == 0; m++) /* the floor end to end, spin wait, beside the launch-call floor */
            if (o->modes >> m & 1) {
                snprintf(mode, sizeof mode, "%s-1x1x8", mode_names[m]);
                add(s, &n, mode, "spin", m == 1, 1, LAT_E2E, BC_SCHED_SPIN, LAT_RES_NONE);
            }
    }
    /* the raw floor: one cuLaunchKernelEx of a kernel that does nothing, the call alone and end to end */
    add(s, &n, "empty-kernel", "launch_call", 0, 2, LAT_LAUNCH, BC_SCHED_SPIN, LAT_RES_NONE);
    add(s, &n, "empty-kernel", "spin", 0, 2, LAT_E2E, BC_SCHED_SPIN, LAT_RES_NONE);
    return n;
}

/* One launch of series s: the empty kernel, the graph, or the plans in order. */
static bc_status launch(lat_ctx *c, const lat_series *s)
{
    if (s->floor == 2)
        return bc_selftest_empty_launch(c->s);
    if (s->graph)
        return bc_graph_launch(s->floor ? c->fgraph : c->graph, c->s);
    if (s->floor)
        return bc_gemm_launch(c->fplan, c->s);
    bc_status st = BC_OK;
    for (int i = 0; i < c->nseq && !st; i++)
        st = bc_gemm_launch(c->seq[i], c->s);
    return st;
}

/* The timed loop: warm-up runs first (not recorded), then o->runs samples. */
static bc_status measure(lat_ctx *c, lat_series *s)
{
    const uint64_t timeout = c->o->timeout_ns;
    bc_stream *st = c->s;
    if (s->resident) {
        bc_status r = lat_resident_measure(&c->rs, st, s, c->o->warmup, c->o->runs, timeout);
        if (r)
            return r;
    }
    LAT_TRY(bc_stream_set_wait_policy(st, s->wait));
    LAT_TRY(bc_stream_wait(st, timeout));
    const int call_only = s->kind == LAT_LAUNCH;
    for (int i = -c->o->warmup; i < c->o->runs && !s->resident; i++) {
        const uint64_t t0 = bc_cli_now_ns();
        bc_status r = launch(c, s);
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
    const int count = plan_series(o, series);
    const size_t store_bytes = 2 * (size_t)count * (size_t)o->runs * sizeof(uint64_t); /* the series run only */
    uint64_t *store = malloc(store_bytes);
    if (store == NULL) {
        fprintf(stderr, "barecuda latency: cannot allocate %zu bytes for the samples\n", store_bytes);
        return BC_EXIT_ERROR;
    }
    memset(store, 0, store_bytes); /* touch every page before timing */
    for (int i = 0; i < count; i++) {
        series[i].ns = store + (size_t)(2 * i) * (size_t)o->runs;
        series[i].sorted = store + (size_t)(2 * i + 1) * (size_t)o->runs;
    }
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
    char network[96], layers[BC_MLP_MAX_LAYERS * 24] = "";
    if (o->mlp) {
        snprintf(network, sizeof network, "mlp %s", o->mlp);
        r.network = network;
        for (int l = 0, at = 0; l < c->mlp.layers && at < (int)sizeof layers; l++) {
            bc_gemm_plan_info pi;
            bc_gemm_plan_query(c->mlp.plan[l], &pi);
            char split[16] = "";
            if (pi.split_k > 1)
                snprintf(split, sizeof split, "/%u", pi.split_k);
            at += snprintf(layers + at, sizeof layers - (size_t)at, "%s%s%s", l ? ", " : "", pi.config, split);
        }
        r.layer_plans = layers;
    }
    if (c->rs.exec)
        r.resident = &c->rs.info;
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
    /* A, B, D (or the mlp's weights and activations), the floor plan's and slack; the pinned inputs
     * and outputs of the zero-copy mode */
    cfg.device_arena_bytes = (size_t)((o.m + o.n) * o.k) * ab + (size_t)(o.m * o.n) * ob + (128u << 20);
    for (int l = 0; o.mlp && l < o.layers; l++)
        cfg.device_arena_bytes += (size_t)((o.width[l] + 1 + o.batch) * o.width[l + 1] + o.batch * o.width[l]) * 2;
    const size_t io_bytes = (size_t)(o.m * o.k) * ab + (size_t)(o.m * o.n) * ob + (4u << 20);
    cfg.host_arena_bytes = io_bytes > cfg.host_arena_bytes ? io_bytes : cfg.host_arena_bytes;
    cfg.kernel_groups = BC_KERNELS_PORTABLE | (o.modes & 4 ? BC_KERNELS_RESIDENT : 0u); /* mode 2: resident */
    bc_status st = bc_device_open(&cfg, &c.dev);
    if (st) { /* the one-line message every command prints for a missing driver or device */
        bc_cli_report("latency", st);
        return bc_cli_exit_code(st);
    }
    bc_device_info di;
    int prio_eff = 0, rc;
    st = lat_setup(&c, &di, &prio_eff);
    if (st)
        rc = bc_cli_exit_code(st);
    else if (c.verify_failed)
        rc = BC_EXIT_VERIFY;
    else
        rc = run(&c, &di, prio_eff);
    bc_mlp_destroy(c.dev, &c.mlp); /* its host copies; the device's close takes the rest */
    bc_device_close(c.dev);
    free(c.host_a), free(c.host_b), free(c.row_buf), free(c.ref_buf);
    return rc;
}
