/* A control-loop policy on the resident executor: a 3-layer MLP (batch 16,
 * 256 -> 1024 -> 1024 -> 64, bias and ReLU but after the last layer) whose
 * weights stay on the GPU and whose observation and action live in pinned
 * host memory. Each control step writes the observation, runs one resident
 * step (a doorbell store and a poll: no launch, no driver call) and reads the
 * action. It checks the actions against an fp64 CPU reference, then reports
 * the step latency.
 *
 *   build/bin/resident_policy [--steps N] [--cpu C] [--io direct|zerocopy|memcpy]
 *                             [--config NAME] [--spin-ns NS] [--hold S]
 *
 * --config names the one GEMM configuration of every layer (default
 * sm90_gemv: the GEMV kernel, the fastest resident step for a batch of 16;
 * sm90_64x32 runs whole narrow tiles on fewer SMs).
 * --io direct (default): the executor's kernel copies the observation in
 * itself, and the last layer writes the action straight into pinned host
 * memory (its D is there: no copy out, no barrier before it). --io
 * zerocopy: the kernel copies the observation in and the action out
 * itself. --io memcpy: the plans' device buffers, filled
 * and read with bc_memcpy_htod / bc_memcpy_dtoh around each step. The
 * latency reported runs from the observation's write into the pinned
 * buffer to the action's read out of it.
 * --spin-ns sets how long the idle kernel polls without sleeping after a
 * step (default 1 ms); --hold S keeps the executor running idle S seconds
 * after the last step (for power measurements), then stops it.
 * Exit 0 when the actions are right, 1 otherwise (a failing call too, such as
 * a --config the executor cannot run), 2 on a bad command line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <barecuda.h>

enum { BATCH = 16, LAYERS = 3 };
static const int width[LAYERS + 1] = {256, 1024, 1024, 64};

#define CHECK(expr)                                                                         \
    do {                                                                                    \
        bc_status st_ = (expr);                                                             \
        if (st_ != BC_OK) {                                                                 \
            bc_error_detail d_;                                                             \
            bc_last_error(&d_);                                                             \
            fprintf(stderr, "resident_policy: %s: %s\n  %s\n", #expr, bc_status_string(st_), \
                    d_.message);                                                            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* bf16 <-> float, round to nearest even (finite values only here). */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(void) /* [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

/* The network's parameters, on the host (bf16) and on the device. */
typedef struct policy {
    uint16_t *w[LAYERS], *b[LAYERS];
    bc_devptr dw[LAYERS], db[LAYERS], act[LAYERS + 1];
    bc_gemm_plan *plan[LAYERS];
} policy;

/* out: where the last layer writes its action (device memory, or pinned host memory that the
 * kernel's stores reach directly) */
static void build(bc_device *dev, policy *p, const char *config, bc_devptr out)
{
    for (int l = 0; l < LAYERS; l++)
        CHECK(bc_mem_alloc(dev, (size_t)BATCH * width[l] * 2, &p->act[l]));
    if (out)
        p->act[LAYERS] = out;
    else
        CHECK(bc_mem_alloc(dev, (size_t)BATCH * width[LAYERS] * 2, &p->act[LAYERS]));
    for (int l = 0; l < LAYERS; l++) {
        const size_t nw = (size_t)width[l + 1] * width[l];
        p->w[l] = malloc(nw * 2), p->b[l] = malloc((size_t)width[l + 1] * 2);
        const double scale = sqrt(3.0 / width[l]); /* unit-variance outputs */
        for (size_t i = 0; i < nw; i++)
            p->w[l][i] = to_bf16((float)(scale * uniform()));
        for (int i = 0; i < width[l + 1]; i++)
            p->b[l][i] = to_bf16((float)(0.1 * uniform()));
        CHECK(bc_mem_alloc(dev, nw * 2, &p->dw[l]));
        CHECK(bc_mem_alloc(dev, (size_t)width[l + 1] * 2, &p->db[l]));
        CHECK(bc_memcpy_htod(dev, p->dw[l], p->w[l], nw * 2));
        CHECK(bc_memcpy_htod(dev, p->db[l], p->b[l], (size_t)width[l + 1] * 2));
        bc_gemm_desc d; /* D = act(X . W^T + b): X the previous layer's output */
        bc_gemm_desc_default(&d);
        d.m = BATCH, d.n = width[l + 1], d.k = width[l];
        d.a = p->act[l], d.b = p->dw[l], d.d = p->act[l + 1], d.bias = p->db[l];
        d.relu = l + 1 < LAYERS;
        d.config = config; /* one configuration for every plan of an executor */
        CHECK(bc_gemm_plan_create(dev, &d, &p->plan[l]));
    }
}

/* The fp64 reference of the whole network for one observation batch; each
 * hidden layer is rounded to bf16 as the GPU stores it. Returns the largest
 * error relative to the action's scale. */
static double check(const policy *p, const uint16_t *obs, const uint16_t *action)
{
    static double x[BATCH][1024], y[BATCH][1024];
    for (int r = 0; r < BATCH; r++)
        for (int i = 0; i < width[0]; i++)
            x[r][i] = from_bf16(obs[r * width[0] + i]);
    double worst = 0.0, scale = 1e-30;
    for (int l = 0; l < LAYERS; l++) {
        const int k = width[l], n = width[l + 1];
        for (int r = 0; r < BATCH; r++)
            for (int j = 0; j < n; j++) {
                double s = from_bf16(p->b[l][j]);
                for (int i = 0; i < k; i++)
                    s += x[r][i] * from_bf16(p->w[l][(size_t)j * k + i]);
                y[r][j] = l + 1 < LAYERS ? from_bf16(to_bf16((float)(s > 0 ? s : 0))) : s;
            }
        memcpy(x, y, sizeof x);
    }
    for (int r = 0; r < BATCH; r++)
        for (int j = 0; j < width[LAYERS]; j++)
            scale = fmax(scale, fabs(x[r][j]));
    for (int r = 0; r < BATCH; r++)
        for (int j = 0; j < width[LAYERS]; j++)
            worst = fmax(worst, fabs(from_bf16(action[r * width[LAYERS] + j]) - x[r][j]) / scale);
    return worst;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(const uint64_t *sorted, int n, double p) /* nearest rank, us */
{
    int rank = (int)ceil(p / 100.0 * n);
    return sorted[(rank < 1 ? 1 : rank > n ? n : rank) - 1] / 1e3;
}

int main(int argc, char **argv)
{
    int steps = 10000, cpu = -1, zerocopy = 1, direct = 1, hold = 0;
    long long spin_ns = -1;
    const char *config = "sm90_gemv";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
            cpu = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--io") && i + 1 < argc && !strcmp(argv[i + 1], "memcpy"))
            zerocopy = 0, direct = 0, i++;
        else if (!strcmp(argv[i], "--io") && i + 1 < argc && !strcmp(argv[i + 1], "zerocopy"))
            zerocopy = 1, direct = 0, i++;
        else if (!strcmp(argv[i], "--io") && i + 1 < argc && !strcmp(argv[i + 1], "direct"))
            zerocopy = 1, direct = 1, i++;
        else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (!strcmp(argv[i], "--spin-ns") && i + 1 < argc)
            spin_ns = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--hold") && i + 1 < argc)
            hold = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: resident_policy [--steps N] [--cpu C] [--io direct|zerocopy|memcpy] [--config NAME] "
                            "[--spin-ns NS] [--hold S]\n");
            return 2;
        }
    }
    if (steps < 1)
        steps = 1;
    if (cpu >= 0) { /* a control loop owns its core */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            perror("resident_policy: sched_setaffinity");
    }
    bc_device_config dcfg;
    CHECK(bc_device_config_default(&dcfg)); /* spin waits, own context */
    dcfg.kernel_groups = BC_KERNELS_RESIDENT; /* the executor's kernels, resolved at open */
    bc_device *dev;
    CHECK(bc_device_open(&dcfg, &dev));
    bc_stream *s;
    CHECK(bc_stream_create(dev, 0, &s, NULL));
    const size_t obs_bytes = (size_t)BATCH * width[0] * 2, act_bytes = (size_t)BATCH * width[LAYERS] * 2;
    uint16_t *obs, *action; /* pinned, mapped: the kernel reads and writes them in the zero-copy modes */
    CHECK(bc_host_alloc(dev, obs_bytes, (void **)&obs));
    CHECK(bc_host_alloc(dev, act_bytes, (void **)&action));
    policy p;
    memset(&p, 0, sizeof p);
    build(dev, &p, config, direct ? (bc_devptr)(uintptr_t)action : 0);

    bc_resident_config cfg;
    bc_resident_config_default(&cfg);
    if (spin_ns >= 0)
        cfg.spin_ns = spin_ns > 4000000000ll ? 4000000000u : (uint32_t)spin_ns;
    const bc_resident_copy in = {obs, p.act[0], obs_bytes}, out = {action, p.act[LAYERS], act_bytes};
    if (zerocopy) {
        cfg.inputs = &in, cfg.input_count = 1;
        if (!direct)
            cfg.outputs = &out, cfg.output_count = 1;
    }
    bc_resident *res;
    CHECK(bc_resident_create(dev, (const bc_gemm_plan *const *)p.plan, LAYERS, &cfg, &res));
    CHECK(bc_resident_start(res, s));
    bc_resident_info info;
    CHECK(bc_resident_query(res, &info));

    uint64_t *ns = malloc((size_t)steps * sizeof *ns);
    double worst = 0.0;
    uint16_t *next = malloc(obs_bytes), *seen = malloc(act_bytes); /* the sensor's batch, the actuator's copy */
    if (ns == NULL || next == NULL || seen == NULL) {
        fprintf(stderr, "resident_policy: out of host memory\n");
        return 1;
    }
    for (int i = -100; i < steps; i++) { /* 100 warm-up steps */
        for (int j = 0; j < BATCH * width[0]; j++) /* the next observation, as a sensor would deliver it */
            next[j] = to_bf16((float)uniform());
        const uint64_t t0 = now_ns(); /* timed: the observation's write to the action's read */
        memcpy(obs, next, obs_bytes);
        if (!zerocopy)
            CHECK(bc_memcpy_htod(dev, p.act[0], obs, obs_bytes));
        CHECK(bc_resident_step(res, 1000000000ull)); /* bounded: 1 s */
        if (!zerocopy)
            CHECK(bc_memcpy_dtoh(dev, action, p.act[LAYERS], act_bytes));
        memcpy(seen, action, act_bytes);
        const uint64_t t1 = now_ns();
        if (i >= 0)
            ns[i] = t1 - t0;
        if (i < 0 || i % 1000 == 0) /* checking is slow: a sample of the steps */
            worst = fmax(worst, check(&p, obs, seen));
    }
    free(next), free(seen);
    if (hold > 0) { /* idle, the kernel resident: it backs off after spin_ns */
        printf("holding the executor idle for %d s\n", hold);
        fflush(stdout);
        struct timespec ts = {hold, 0};
        nanosleep(&ts, NULL);
    }
    CHECK(bc_resident_stop(res, 1000000000ull));
    qsort(ns, (size_t)steps, sizeof *ns, cmp_u64);
    printf("resident policy %dx%d-%d-%d-%d, %s I/O, %u SMs held (plans %s, resident kernel %s): %d steps, thread "
           "%s\n",
           BATCH, width[0], width[1], width[2], width[3],
           direct ? "zero-copy (action written by the last layer)" : zerocopy ? "zero-copy" : "bc_memcpy", info.sm_count,
           config,
           info.config, steps, cpu >= 0 ? "pinned" : "not pinned");
    printf("  step latency, observation written -> action read: p50 %.2f us, p99 %.2f us, p99.9 %.2f us, max %.2f us\n",
           pct(ns, steps, 50), pct(ns, steps, 99), pct(ns, steps, 99.9), ns[steps - 1] / 1e3);
    const int ok = worst < 2e-2; /* bf16 hidden layers and outputs: a few ulps of the action's scale */
    printf("  actions against the fp64 reference: largest error %.2e of the action scale: %s\n", worst,
           ok ? "ok" : "WRONG");
    free(ns);
    bc_device_close(dev); /* releases the executor, plans, streams, pools */
    for (int l = 0; l < LAYERS; l++)
        free(p.w[l]), free(p.b[l]);
    return ok ? 0 : 1;
}
