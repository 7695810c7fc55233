/* Micro-benchmark (not a test) of the plan-time operand checks, on the fake
 * driver (tests/unit/fake_*.c): what the checks add to bc_gemm_plan_create
 * and bc_gemm_plan_set_pointers on this CPU, and how many driver calls they
 * make. The fake's cuPointerGetAttributes is a list walk, not the real
 * driver's round trip: its own cost is measured and printed, so that the
 * check's share can be told apart (tests/gpu/test_gpu_operands.c prints the
 * same figures on a GPU, real driver included).
 *
 *   build/bin/bench_checks [reps]      (default 200000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fake_driver.h"
#include "gemm_internal.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, bc_status st)
{
    bc_error_detail d;
    bc_last_error(&d);
    fprintf(stderr, "bench_checks: %s: %s (%s)\n", what, bc_status_string(st), d.message);
    exit(1);
}

#define OK(what, expr)                                                                             \
    do {                                                                                           \
        bc_status st_ = (expr);                                                                    \
        if (st_)                                                                                   \
            die(what, st_);                                                                        \
    } while (0)

typedef struct operands {
    const char *name;
    bc_devptr a, b, c, d, bias;
} operands;

int main(int argc, char **argv)
{
    const long reps = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
    fake_install();
    fake_set_param_size(sizeof(bc_gemm_params));
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.device_arena_bytes = 64u << 20;
    cfg.host_arena_bytes = 1u << 20;
    bc_device *dev = NULL, *other = NULL;
    cfg.use_primary_context = 1;
    OK("open", bc_device_open(&cfg, &dev));
    cfg.skip_kernel_load = 1;
    OK("open (foreign memory)", bc_device_open(&cfg, &other));

    const int64_t M = 512, N = 1024, K = 512;
    const size_t sa = M * K * 2, sb = N * K * 2, sd = M * N * 2, sbias = N * 2;
    enum { NSETS = 4 };
    operands sets[NSETS] = {{.name = "arena"}, {.name = "driver, 1 alloc"}, {.name = "driver, 5 allocs"},
                            {.name = "registered"}};
    bc_devptr *arena[5] = {&sets[0].a, &sets[0].b, &sets[0].c, &sets[0].d, &sets[0].bias};
    bc_devptr *one[5] = {&sets[1].a, &sets[1].b, &sets[1].c, &sets[1].d, &sets[1].bias};
    bc_devptr *f[5] = {&sets[2].a, &sets[2].b, &sets[2].c, &sets[2].d, &sets[2].bias};
    const size_t fs[5] = {sa, sb, sd, sd, sbias};
    for (int i = 0; i < 5; i++) {
        OK("alloc", bc_mem_alloc(dev, fs[i], arena[i]));
        OK("alloc (another device's arena: one driver allocation)", bc_mem_alloc(other, fs[i], one[i]));
        CUdeviceptr p = 0; /* a framework's own cuMemAlloc each */
        if (fake_table()->cuMemAlloc(&p, fs[i]) != CUDA_SUCCESS)
            die("cuMemAlloc", BC_ERR_DRIVER);
        *f[i] = (bc_devptr)p;
    }
    sets[3] = sets[2];
    sets[3].name = "registered";

    bc_gemm_desc g;
    bc_gemm_desc_default(&g);
    g.m = M, g.n = N, g.k = K, g.beta = 0.5f, g.a = sets[0].a, g.b = sets[0].b, g.c = sets[0].c, g.d = sets[0].d,
    g.bias = sets[0].bias;
    bc_gemm_plan *plan = NULL;
    OK("plan", bc_gemm_plan_create(dev, &g, &plan));

    /* the fake's own cuPointerGetAttributes, to subtract */
    unsigned mt = 0;
    CUpointer_attribute at[1] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
    void *data[1] = {&mt};
    double t0 = now_ns();
    for (long r = 0; r < reps; r++)
        fake_table()->cuPointerGetAttributes(1, at, data, (CUdeviceptr)sets[1].d);
    const double fake_call = (now_ns() - t0) / (double)reps;

    bc_gemm_desc lay = g;
    t0 = now_ns();
    for (long r = 0; r < reps; r++) {
        lay = g;
        OK("layout", bc__gemm_check_layout(&lay));
    }
    const double layout = (now_ns() - t0) / (double)reps;

    printf("Operand checks on this CPU over the fake driver, %ld reps each; %lldx%lldx%lld bf16 GEMM with\n"
           "A, B, C (beta != 0), D and bias (5 operands). Times in ns per call. The fake's\n"
           "cuPointerGetAttributes costs %.0f ns here; the real driver's is measured on the GPU.\n"
           "Layout rules alone (before any memory check): %.0f ns.\n\n",
           reps, (long long)M, (long long)N, (long long)K, fake_call, layout);
    printf("%-18s | %12s %12s | %14s %18s | %16s\n", "operands", "memory check", "driver calls", "set_pointers",
           "plan create+destroy", "check - fake calls");
    for (int i = 0; i < NSETS; i++) {
        const operands *o = &sets[i];
        if (i == 3)
            for (int k = 0; k < 5; k++)
                OK("register", bc_mem_register(dev, *f[k], fs[k]));
        bc_gemm_desc d = g;
        d.a = o->a, d.b = o->b, d.c = o->c, d.d = o->d, d.bias = o->bias;
        bc__ptr_cache cache = {0};
        OK("check", bc__gemm_check_memory(dev, &d, 1, 1, &cache));
        const unsigned calls = cache.driver_calls;
        t0 = now_ns();
        for (long r = 0; r < reps; r++)
            OK("check", bc__gemm_check_memory(dev, &d, 1, 1, NULL));
        const double check = (now_ns() - t0) / (double)reps;
        t0 = now_ns();
        for (long r = 0; r < reps; r++)
            OK("set_pointers", bc_gemm_plan_set_pointers(plan, o->a, o->b, o->c, o->d, o->bias));
        const double setp = (now_ns() - t0) / (double)reps;
        for (long r = 0; r < reps / 100; r++) { /* warm-up */
            bc_gemm_plan *p = NULL;
            OK("plan", bc_gemm_plan_create(dev, &d, &p));
            bc_gemm_plan_destroy(p);
        }
        t0 = now_ns();
        for (long r = 0; r < reps / 10; r++) {
            bc_gemm_plan *p = NULL;
            OK("plan", bc_gemm_plan_create(dev, &d, &p));
            bc_gemm_plan_destroy(p);
        }
        const double create = (now_ns() - t0) / (double)(reps / 10);
        printf("%-18s | %12.0f %12u | %14.0f %18.0f | %16.0f\n", o->name, check, calls, setp, create,
               check - calls * fake_call);
    }
    printf("\nmemory check = every operand against its pool block / registered range / allocation, plus\n"
           "the overlap rules; set_pointers includes it and the fake's tensor-map address replacement.\n");
    bc_gemm_plan_destroy(plan);
    for (int i = 0; i < 5; i++)
        fake_table()->cuMemFree((CUdeviceptr)*f[i]);
    bc_device_close(other);
    bc_device_close(dev);
    return 0;
}
