/* A robotics-style policy network on barecuda: three GEMMs of barecuda's and
 * three kernels of our own, loaded at run time from a separate fatbin with
 * its build-time digest, run as ONE graph, checked against an fp64 CPU
 * reference, timed end to end (host call -> completion seen by the host).
 *
 *   example_policy [--module FILE] [--runs N] [--warmup W] [--cpu C] [--seed S]
 *
 * Exit codes (the barecuda command's table): 0 pass; 1 other error; 2 bad
 * command line; 10 no NVIDIA driver; 11 driver too old; 12 no usable GPU;
 * 20 the kernels' fatbin is unreadable, corrupt or not the one built;
 * 21 no image for this GPU; 22 the driver refused it or a kernel is
 * missing; 30 a launch failed; 31 the result is wrong; 32 the GPU did not
 * finish in time. See examples/policy/README.md. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "barecuda.h"
#include "policy_net.h"
#include "stats.h"

extern const uint64_t policy_kernels_digest; /* build/gen/policy_digest.c, by bc_digest */

#define WAIT_NS 1000000000ull
#define TOLERANCE 2e-2 /* |action - reference|: bf16 activations, tanh.approx */

static int exit_code(bc_status st)
{
    switch (st) {
    case BC_ERR_NO_DRIVER:
    case BC_ERR_DRIVER_STUB:
        return 10;
    case BC_ERR_DRIVER_TOO_OLD:
    case BC_ERR_MISSING_ENTRY_POINT:
        return 11;
    case BC_ERR_NO_DEVICE:
        return 12;
    case BC_ERR_FILE_IO:
    case BC_ERR_NOT_REGULAR_FILE:
    case BC_ERR_FILE_TOO_LARGE:
    case BC_ERR_FATBIN_CORRUPT:
    case BC_ERR_DIGEST_MISMATCH:
    case BC_ERR_FATBIN_COMPRESSED:
        return 20;
    case BC_ERR_UNSUPPORTED_ARCH:
    case BC_ERR_NO_KERNEL_FOR_DEVICE:
        return 21;
    case BC_ERR_MODULE_LOAD:
    case BC_ERR_MISSING_KERNEL:
        return 22;
    case BC_ERR_DRIVER:
    case BC_ERR_DEVICE_LOST:
        return 30;
    case BC_ERR_TIMEOUT:
        return 32;
    default:
        return 1;
    }
}

/* Prints the failure of `what` and returns its exit code. */
static int fail(const char *what, bc_status st)
{
    bc_error_detail d;
    bc_last_error(&d);
    fprintf(stderr, "example_policy: %s: %s\n  %s\n", what, bc_status_string(st), d.status == st ? d.message : "");
    if (st == BC_ERR_NO_DRIVER || st == BC_ERR_NO_DEVICE || st == BC_ERR_DRIVER_STUB)
        fprintf(stderr, "example_policy: this example needs an NVIDIA GPU and its driver\n");
    return exit_code(st);
}

#define TRY(what, expr)                                                                           \
    do {                                                                                          \
        bc_status st_ = (expr);                                                                   \
        if (st_ != BC_OK)                                                                         \
            return fail(what, st_);                                                               \
    } while (0)

typedef struct net {
    bc_device *dev;
    bc_stream *s;
    bc_module *mod;
    bc_devptr obs, w1, w2, w3, b1, b2, b3, g1, be1, g2, be2;
    bc_devptr h1, a1, h2, a2, h3, act; /* f32 GEMM outputs, bf16 activations, f32 actions */
    bc_gemm_plan *gemm[3];
    bc_kernel_plan *ln1, *ln2, *head;
    bc_graph *graph;
} net;

static bc_status upload(net *n, bc_devptr *dst, const void *src, size_t bytes)
{
    bc_status st = bc_mem_alloc(n->dev, bytes, dst);
    return st ? st : bc_memcpy_htod(n->dev, *dst, src, bytes);
}

static bc_status gemm(net *n, int i, int64_t k, int64_t out, bc_devptr a, bc_devptr w, bc_devptr bias, bc_devptr d)
{
    bc_gemm_desc g;
    bc_gemm_desc_default(&g);
    g.m = BATCH, g.n = out, g.k = k, g.d_type = BC_DTYPE_F32;
    g.a = a, g.b = w, g.bias = bias, g.d = d;
    return bc_gemm_plan_create(n->dev, &g, &n->gemm[i]);
}

/* LayerNorm + GELU over one [BATCH x HIDDEN] f32 tensor into bf16. */
static bc_status ln_plan(net *n, bc_kernel *k, bc_devptr in, bc_devptr out, bc_devptr gamma, bc_devptr beta,
                         bc_kernel_plan **plan)
{
    const uint32_t cols = HIDDEN;
    const float eps = LN_EPS;
    const bc_kernel_param p[6] = {{&in, 8, BATCH * HIDDEN * 4}, {&out, 8, BATCH * HIDDEN * 2},
                                  {&gamma, 8, HIDDEN * 4},      {&beta, 8, HIDDEN * 4},
                                  {&cols, 4, 0},                {&eps, 4, 0}};
    const bc_kernel_plan_desc d = {.grid = {BATCH, 1, 1}, .block = {256, 1, 1}, .programmatic = 1, .params = p,
                                   .param_count = 6};
    return bc_kernel_plan_create(k, &d, plan);
}

static bc_status head_plan(net *n, bc_kernel *k)
{
    const uint32_t count = BATCH * ACT;
    const float scale = ACTION_SCALE;
    const bc_kernel_param p[4] = {{&n->h3, 8, count * 4}, {&n->act, 8, count * 4}, {&count, 4, 0}, {&scale, 4, 0}};
    const bc_kernel_plan_desc d = {.grid = {(count + 127) / 128, 1, 1}, .block = {128, 1, 1}, .programmatic = 1,
                                   .params = p, .param_count = 4};
    return bc_kernel_plan_create(k, &d, &n->head);
}

/* The module (with its digest and both kernels), the buffers, six plans, one graph. */
static int build(net *n, const policy_params *pp, const char *module_path)
{
    bc_module_options o;
    bc_module_options_default(&o);
    const char *names[] = {"policy_layernorm_gelu", "policy_tanh_head"};
    o.kernels = names, o.kernel_count = 2;
    o.check_digest = 1, o.expected_digest = policy_kernels_digest;
    TRY("loading the policy kernels", bc_module_load_file(n->dev, module_path, &o, &n->mod));
    bc_kernel *ln = NULL, *head = NULL;
    TRY("kernel", bc_kernel_get(n->mod, names[0], &ln));
    TRY("kernel", bc_kernel_get(n->mod, names[1], &head));
    TRY("upload", upload(n, &n->obs, pp->obs, sizeof pp->obs));
    TRY("upload", upload(n, &n->w1, pp->w1, sizeof pp->w1));
    TRY("upload", upload(n, &n->w2, pp->w2, sizeof pp->w2));
    TRY("upload", upload(n, &n->w3, pp->w3, sizeof pp->w3));
    TRY("upload", upload(n, &n->b1, pp->b1, sizeof pp->b1));
    TRY("upload", upload(n, &n->b2, pp->b2, sizeof pp->b2));
    TRY("upload", upload(n, &n->b3, pp->b3, sizeof pp->b3));
    TRY("upload", upload(n, &n->g1, pp->g1, sizeof pp->g1));
    TRY("upload", upload(n, &n->be1, pp->be1, sizeof pp->be1));
    TRY("upload", upload(n, &n->g2, pp->g2, sizeof pp->g2));
    TRY("upload", upload(n, &n->be2, pp->be2, sizeof pp->be2));
    TRY("alloc", bc_mem_alloc(n->dev, BATCH * HIDDEN * 4, &n->h1));
    TRY("alloc", bc_mem_alloc(n->dev, BATCH * HIDDEN * 2, &n->a1));
    TRY("alloc", bc_mem_alloc(n->dev, BATCH * HIDDEN * 4, &n->h2));
    TRY("alloc", bc_mem_alloc(n->dev, BATCH * HIDDEN * 2, &n->a2));
    TRY("alloc", bc_mem_alloc(n->dev, BATCH * ACT * 4, &n->h3));
    TRY("alloc", bc_mem_alloc(n->dev, BATCH * ACT * 4, &n->act));
    TRY("GEMM plan 1", gemm(n, 0, OBS, HIDDEN, n->obs, n->w1, n->b1, n->h1));
    TRY("GEMM plan 2", gemm(n, 1, HIDDEN, HIDDEN, n->a1, n->w2, n->b2, n->h2));
    TRY("GEMM plan 3", gemm(n, 2, HIDDEN, ACT, n->a2, n->w3, n->b3, n->h3));
    TRY("LayerNorm plan 1", ln_plan(n, ln, n->h1, n->a1, n->g1, n->be1, &n->ln1));
    TRY("LayerNorm plan 2", ln_plan(n, ln, n->h2, n->a2, n->g2, n->be2, &n->ln2));
    TRY("head plan", head_plan(n, head));
    const bc_graph_node nodes[6] = {
        {BC_NODE_GEMM, n->gemm[0], NULL}, {BC_NODE_KERNEL, NULL, n->ln1}, {BC_NODE_GEMM, n->gemm[1], NULL},
        {BC_NODE_KERNEL, NULL, n->ln2},   {BC_NODE_GEMM, n->gemm[2], NULL}, {BC_NODE_KERNEL, NULL, n->head},
    };
    TRY("graph", bc_graph_create_nodes(n->s, nodes, 6, &n->graph));
    return 0;
}

/* One replay on poisoned outputs, checked against the reference. */
static int check(net *n, const double *ref, float *out, const char *when)
{
    TRY("poison", bc_memset_d8_async(n->s, n->act, 0xFF, BATCH * ACT * 4));
    TRY("graph launch", bc_graph_launch(n->graph, n->s));
    TRY("wait", bc_stream_wait(n->s, WAIT_NS));
    TRY("download", bc_memcpy_dtoh(n->dev, out, n->act, BATCH * ACT * 4));
    double max_err = 0;
    int bad = 0;
    for (int i = 0; i < BATCH * ACT; i++) {
        double e = fabs((double)out[i] - ref[i]);
        if (!(e <= TOLERANCE)) { /* NaN (the poison) fails too */
            if (bad++ < 4)
                fprintf(stderr, "example_policy: action[%d][%d] = %.6f, reference %.6f\n", i / ACT, i % ACT, out[i],
                        ref[i]);
        }
        max_err = e > max_err || e != e ? e : max_err;
    }
    printf("check (%s): %d actions, max |GPU - fp64 reference| = %.2e (tolerance %.0e): %s\n", when, BATCH * ACT,
           max_err, TOLERANCE, bad ? "FAIL" : "pass");
    return bad ? 31 : 0;
}

static double mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* End to end: t0, graph launch, spin wait until the host sees completion, t1. */
static int time_graph(net *n, int runs, int warmup, uint64_t *ns)
{
    for (int i = -warmup; i < runs; i++) {
        double t0 = mono_ns();
        bc_status st = bc_graph_launch(n->graph, n->s);
        if (!st)
            st = bc_stream_wait(n->s, WAIT_NS);
        double t1 = mono_ns();
        if (st)
            return fail("timed replay", st);
        if (i >= 0)
            ns[i] = (uint64_t)(t1 - t0);
    }
    bc_stats_sort_u64(ns, (size_t)runs);
    bc_stats_summary s;
    bc_stats_summarize_u64(ns, (size_t)runs, &s);
    printf("latency, one graph of 6 kernels (3 GEMMs + 3 of ours), host call -> completion seen by the host,\n"
           "  %d runs after %d warm-up, spin wait, thread pinned; nearest-rank percentiles, us:\n"
           "  p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f  mean %.2f\n",
           runs, warmup, s.p50 / 1e3, s.p90 / 1e3, s.p99 / 1e3, s.p999 / 1e3, s.max / 1e3, s.mean / 1e3);
    return 0;
}

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: example_policy [--module FILE] [--runs N] [--warmup W] [--cpu C] [--seed S]\n"
               "Runs a %d x %d -> %d -> %d -> %d policy MLP as one barecuda graph of GEMMs and the kernels of\n"
               "FILE (default build/examples/policy_kernels.fatbin, checked against its build digest), checks it\n"
               "against an fp64 CPU reference and reports end-to-end latency percentiles (default 10000 runs\n"
               "after 200 warm-up, pinned to CPU C, default the one it starts on). Exit codes: README.md.\n",
            BATCH, OBS, HIDDEN, HIDDEN, ACT);
    return rc;
}

static int parse(int argc, char **argv, const char **module, long *runs, long *warmup, long *cpu, long *seed)
{
    for (int i = 1; i < argc; i++) {
        long *v = !strcmp(argv[i], "--runs") ? runs : !strcmp(argv[i], "--warmup") ? warmup
                  : !strcmp(argv[i], "--cpu") ? cpu : !strcmp(argv[i], "--seed") ? seed : NULL;
        if (!strcmp(argv[i], "--module") && i + 1 < argc) {
            *module = argv[++i];
        } else if (v != NULL && i + 1 < argc) {
            char *end;
            errno = 0;
            *v = strtol(argv[++i], &end, 10);
            if (errno || *end || *v < 0 || *v > 100000000)
                return usage(stderr, 2);
        } else {
            return usage(!strcmp(argv[i], "--help") ? stdout : stderr, !strcmp(argv[i], "--help") ? -1 : 2);
        }
    }
    return *runs < 1 ? usage(stderr, 2) : 0;
}

int main(int argc, char **argv)
{
    const char *module = "build/examples/policy_kernels.fatbin";
    long runs = 10000, warmup = 200, cpu = sched_getcpu(), seed = 1;
    int rc = parse(argc, argv, &module, &runs, &warmup, &cpu, &seed);
    if (rc)
        return rc < 0 ? 0 : rc;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("example_policy: sched_setaffinity");
        return 2;
    }
    static policy_params pp;
    static double ref[BATCH * ACT];
    static float out[BATCH * ACT];
    policy_init(&pp, (uint64_t)seed);
    policy_reference(&pp, ref);
    uint64_t *ns = malloc((size_t)runs * sizeof *ns);
    if (ns == NULL) { /* exit 0 means checked and timed: without room for the timings, fail before any work */
        fprintf(stderr, "example_policy: cannot allocate %ld timings\n", (long)runs);
        return 1;
    }
    net n;
    memset(&n, 0, sizeof n);
    bc_device_config cfg;
    bc_device_config_default(&cfg); /* spin waits */
    cfg.device_arena_bytes = 16u << 20;
    cfg.host_arena_bytes = 1u << 20;
    bc_status st = bc_device_open(&cfg, &n.dev);
    if (st) {
        free(ns);
        return fail("opening the GPU", st);
    }
    st = bc_stream_create(n.dev, 0, &n.s, NULL);
    rc = st ? fail("stream", st) : 0;
    bc_device_info info;
    bc_device_query(n.dev, &info);
    printf("example_policy: %s (sm_%d%d), batch %d, %d -> %d -> %d -> %d, kernels from %s\n", info.name,
           info.cc_major, info.cc_minor, BATCH, OBS, HIDDEN, HIDDEN, ACT, module);
    if (!rc)
        rc = build(&n, &pp, module);
    if (!rc)
        rc = check(&n, ref, out, "first replay");
    if (!rc)
        rc = time_graph(&n, (int)runs, (int)warmup, ns);
    if (!rc)
        rc = check(&n, ref, out, "after the timed replays");
    bc_device_close(n.dev); /* releases the graph, the plans, the module and the buffers */
    free(ns);
    printf("verdict: %s\n", rc ? "FAIL" : "PASS");
    return rc;
}
