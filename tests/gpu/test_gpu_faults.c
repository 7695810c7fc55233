/* GPU: what a fault or a hang costs, and what recovers. Every scenario runs
 * in a child process (gpu_child.h) so the runner survives it, and reports
 * rows (step, status, milliseconds) that this runner prints as a table and
 * checks against what README.md ("After a fault or a hang") states:
 *
 *   own         kernel fault on an owned context; later calls; close; reopen
 *   primary     the same on the primary context, then cuDevicePrimaryCtxReset
 *   second      devices opened before the fault, used after it
 *   hang_bound  a kernel that does not end: bc_device_close_timeout, reopen
 *   hang_close  the same with bc_device_close: how long it waits
 *   host_mapped TMA loads from and stores to host-mapped memory (the rule
 *               BC__TMA_ON_HOST_MEMORY in runtime/ptrcheck.h)
 *   foreign     operands in another device's arena: same context (primary)
 *               and another context on the same GPU
 *
 * The fault is the test-only kernel bc_test_fault storing to address 0x10;
 * the hang is bc_test_spin with its max_ns safety net (4 s). Where the
 * library would refuse a call because the process is lost, the scenarios
 * also ask the driver itself (bc__lost_reset, a test hook), to measure what
 * the driver does. Without a GPU every test is SKIPPED. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gemm_abi.h"
#include "gpu_child.h"
#include "gemm_internal.h"
#include "gpu_dryrun.h"
#include "gpu_small_gemm.h"

#define SPIN_MAX_NS 4000000000ull
#define FAULT_ADDR 0x10ull
#define CHILD_LIMIT_S 60

/* ------------------------------------------------------------ child side */

static bc_device *child_open(int primary, size_t host_arena)
{
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.use_primary_context = primary;
    cfg.device_arena_bytes = 64u << 20;
    cfg.host_arena_bytes = host_arena;
    bc_device *dev = NULL;
    bc_status st = bc_device_open(&cfg, &dev);
    if (st) {
        char why[256];
        bc_error_detail d;
        bc_last_error(&d);
        snprintf(why, sizeof why, "%s: %s", bc_status_string(st), d.message);
        child_skip(why);
        _exit(0);
    }
    return dev;
}

static bc_status launch_test_kernel(bc_device *dev, bc_stream *s, int which, const void *params)
{
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = 32, lc.blockDimY = lc.blockDimZ = 1;
    lc.hStream = bc_stream_handle(s);
    void *args[1] = {(void *)params};
    return BC_CU(cuLaunchKernelEx, &lc, dev->image.fn[which], args, NULL);
}

/* Faults the GPU: the store kernel at an address no context maps; the wait
 * that follows reports it. */
static void fault(bc_device *dev, bc_stream *s)
{
    bc_fault_params p = {FAULT_ADDR, 0xDEADu, 0};
    double t0 = child_now_ms();
    bc_status st = launch_test_kernel(dev, s, BC_K_FAULT, &p);
    child_status("fault_launch", st, child_now_ms() - t0);
    t0 = child_now_ms();
    st = bc_stream_wait(s, 10ull * 1000000000ull);
    child_status("wait_after_fault", st, child_now_ms() - t0);
}

/* A 64 x 128 x 64 bf16 -> f32 GEMM in dev's arena (for runs and launches). */
static void small_in_arena(bc_device *dev, small_gemm *g)
{
    memset(g, 0, sizeof *g);
    bc_gemm_desc_default(&g->d);
    g->d.m = 64, g->d.n = 128, g->d.k = 64, g->d.d_type = BC_DTYPE_F32;
    bc_mem_alloc(dev, 64 * 64 * 2, &g->d.a);
    bc_mem_alloc(dev, 128 * 64 * 2, &g->d.b);
    bc_mem_alloc(dev, 64 * 128 * 4, &g->d.d);
}

#define TIMED(step, expr)                                                                          \
    do {                                                                                           \
        double t_ = child_now_ms();                                                                \
        bc_status s_ = (expr);                                                                     \
        child_status(step, s_, child_now_ms() - t_);                                              \
    } while (0)

/* After a fault: what barecuda refuses at once, and what the launch does. */
static void calls_after_fault(bc_device *dev, bc_stream *s, bc_gemm_plan *plan, const small_gemm *g)
{
    bc_gemm_plan *p2 = NULL;
    bc_stream *s2 = NULL;
    bc_devptr x = 0;
    uint32_t buf[16];
    TIMED("lib_plan_create", bc_gemm_plan_create(dev, &g->d, &p2));
    TIMED("lib_stream_create", bc_stream_create(dev, 0, &s2, NULL));
    TIMED("lib_mem_alloc", bc_mem_alloc(dev, 256, &x));
    TIMED("lib_memcpy_dtoh", bc_memcpy_dtoh(dev, buf, g->d.d, sizeof buf));
    TIMED("lib_stream_wait", bc_stream_wait(s, BC_WAIT_FOREVER));
    TIMED("drv_gemm_launch", bc_gemm_launch(plan, s)); /* one driver call, no check */
}

/* Reopens twice: as barecuda refuses it, then asking the driver. */
static void reopen(int primary)
{
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.use_primary_context = primary;
    cfg.device_arena_bytes = 64u << 20;
    bc_device *dev = NULL;
    TIMED("lib_reopen", bc_device_open(&cfg, &dev));
    bc__lost_reset(); /* test hook: ask the driver */
    double t0 = child_now_ms();
    bc_status st = bc_device_open(&cfg, &dev);
    child_status("drv_reopen", st, child_now_ms() - t0);
    if (st == BC_OK) {
        bc_stream *s = NULL;
        bc_stream_create(dev, 0, &s, NULL);
        TIMED("drv_reopen_smoke", bc_selftest_smoke(dev, s, NULL));
        bc_device_close(dev);
    }
}

static void sc_own(void)
{
    void *keep = dlopen("libcuda.so.1", RTLD_NOW); /* stays loaded across close/reopen */
    bc_device *dev = child_open(0, 1u << 20);
    bc_stream *s = NULL;
    bc_stream_create(dev, 0, &s, NULL);
    small_gemm g;
    small_in_arena(dev, &g);
    bc_gemm_plan *plan = NULL;
    TIMED("plan_before_fault", bc_gemm_plan_create(dev, &g.d, &plan));
    TIMED("gemm_before_fault", small_gemm_run(dev, s, &g, plan, 1));
    fault(dev, s);
    calls_after_fault(dev, s, plan, &g);
    double t0 = child_now_ms();
    bc_device_close(dev);
    child_row_out("close", "-", child_now_ms() - t0, "bc_device_close");
    reopen(0);
    (void)keep;
}

static void sc_primary(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    bc_device *dev = child_open(1, 1u << 20);
    const CUdevice cudev = dev->cudev;
    bc_stream *s = NULL;
    bc_stream_create(dev, 0, &s, NULL);
    fault(dev, s);
    double t0 = child_now_ms();
    bc_device_close(dev);
    child_row_out("close", "-", child_now_ms() - t0, "primary released");
    typedef CUresult (*reset_fn)(CUdevice);
    reset_fn reset = lib ? (reset_fn)dlsym(lib, "cuDevicePrimaryCtxReset_v2") : NULL;
    if (reset != NULL) {
        t0 = child_now_ms();
        CUresult r = reset(cudev);
        char code[16];
        snprintf(code, sizeof code, "CU%d", (int)r);
        child_row_out("raw_primary_reset", code, child_now_ms() - t0, "cuDevicePrimaryCtxReset_v2");
    }
    reopen(1);
}

static void sc_second(void)
{
    void *keep = dlopen("libcuda.so.1", RTLD_NOW);
    bc_device *d1 = child_open(0, 1u << 20), *d2 = child_open(0, 1u << 20), *d3 = child_open(1, 1u << 20);
    bc_stream *s1 = NULL, *s2 = NULL, *s3 = NULL;
    bc_device_bind_thread(d2);
    bc_stream_create(d2, 0, &s2, NULL);
    bc_device_bind_thread(d3);
    bc_stream_create(d3, 0, &s3, NULL);
    TIMED("d2_smoke_before", (bc_device_bind_thread(d2), bc_selftest_smoke(d2, s2, NULL)));
    bc_device_bind_thread(d1);
    bc_stream_create(d1, 0, &s1, NULL);
    fault(d1, s1);
    bc_device_bind_thread(d2);
    TIMED("lib_d2_smoke", bc_selftest_smoke(d2, s2, NULL));
    bc__lost_reset(), d2->lost = 0; /* test hook: ask the driver */
    TIMED("drv_d2_own_smoke", bc_selftest_smoke(d2, s2, NULL));
    bc__lost_reset(), d3->lost = 0;
    bc_device_bind_thread(d3);
    TIMED("drv_d3_primary_smoke", bc_selftest_smoke(d3, s3, NULL));
    double t0 = child_now_ms();
    bc_device_close(d3), bc_device_close(d2), bc_device_close(d1);
    child_row_out("close_all", "-", child_now_ms() - t0, "three devices");
    (void)keep;
}

/* A kernel that does not end within the wait: bounded or plain close. */
static void hang(int bounded)
{
    void *keep = dlopen("libcuda.so.1", RTLD_NOW);
    bc_device *dev = child_open(0, 1u << 20);
    bc_stream *s = NULL;
    bc_stream_create(dev, 0, &s, NULL);
    volatile uint32_t *flag = NULL;
    bc_host_alloc(dev, 256, (void **)&flag);
    *flag = 0;
    bc_spin_params p = {(uint64_t)(uintptr_t)flag, SPIN_MAX_NS};
    TIMED("spin_launch", launch_test_kernel(dev, s, BC_K_SPIN, &p));
    TIMED("wait_100ms", bc_stream_wait(s, 100000000ull));
    if (bounded) {
        TIMED("close_timeout_250ms", bc_device_close_timeout(dev, 250000000ull));
    } else {
        double t0 = child_now_ms();
        bc_device_close(dev);
        child_row_out("close", "-", child_now_ms() - t0, "bc_device_close with the kernel running");
    }
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.device_arena_bytes = 64u << 20;
    bc_device *again = NULL;
    TIMED("reopen", bc_device_open(&cfg, &again));
    if (again != NULL) {
        bc_stream *s2 = NULL;
        bc_stream_create(again, 0, &s2, NULL);
        TIMED("reopen_smoke", bc_selftest_smoke(again, s2, NULL));
        small_gemm g;
        small_in_arena(again, &g);
        TIMED("reopen_gemm", small_gemm_run(again, s2, &g, NULL, 2));
        double t0 = child_now_ms();
        bc_device_close(again);
        child_row_out("reopen_close", "-", child_now_ms() - t0, "");
    }
    (void)keep;
}

static void sc_hang_bound(void) { hang(1); }
static void sc_hang_close(void) { hang(0); }

/* GEMMs whose TMA loads (A, B) or TMA store (D) touch the pinned host arena. */
static void sc_host_mapped(void)
{
    bc_device *dev = child_open(0, 64u << 20);
    bc_stream *s = NULL;
    bc_stream_create(dev, 0, &s, NULL);
    small_gemm g;
    memset(&g, 0, sizeof g);
    bc_gemm_desc_default(&g.d);
    g.d.m = g.d.n = g.d.k = 256, g.d.d_type = BC_DTYPE_F32;
    g.d.config = "sm90_128x128"; /* whole tiles: TMA store when beta == 0 */
    void *ha = NULL, *hb = NULL, *hd = NULL;
    bc_host_alloc(dev, 256 * 256 * 2, &ha);
    bc_host_alloc(dev, 256 * 256 * 2, &hb);
    bc_host_alloc(dev, 256 * 256 * 4, &hd);
    g.d.a = (bc_devptr)(uintptr_t)ha, g.d.b = (bc_devptr)(uintptr_t)hb, g.a_host = g.b_host = 1;
    bc_mem_alloc(dev, 256 * 256 * 4, &g.d.d);
    TIMED("tma_load_from_host", small_gemm_run(dev, s, &g, NULL, 3));
    if (bc__lost_result())
        return;
    bc_mem_alloc(dev, 256 * 256 * 2, &g.d.a);
    bc_mem_alloc(dev, 256 * 256 * 2, &g.d.b);
    g.a_host = g.b_host = 0;
    g.d.d = (bc_devptr)(uintptr_t)hd, g.d_host = 1;
    bc_gemm_plan *plan = NULL;
    bc_status st = bc_gemm_plan_create(dev, &g.d, &plan);
    bc_gemm_plan_info info;
    memset(&info, 0, sizeof info);
    if (!st)
        bc_gemm_plan_query(plan, &info);
    child_row_out("store_plan", st ? "refused" : "BC_OK", 0, "%s %s", info.config ? info.config : "",
                  plan && (plan->params.flags & BC_GEMM_F_TMA_STORE) ? "tma-store" : "no-tma-store");
    if (!st)
        TIMED("tma_store_to_host", small_gemm_run(dev, s, &g, plan, 4));
    bc_gemm_plan_destroy(plan);
    bc_device_close(dev);
}

/* D in another device's arena: same (primary) context, then another context. */
static void sc_foreign(void)
{
    bc_device *p1 = child_open(1, 1u << 20), *p2 = child_open(1, 1u << 20);
    bc_stream *s = NULL;
    bc_stream_create(p1, 0, &s, NULL);
    small_gemm g;
    small_in_arena(p1, &g);
    bc_mem_alloc(p2, 64 * 128 * 4, &g.d.d);
    bc_gemm_plan *plan = NULL;
    TIMED("same_ctx_plan", bc_gemm_plan_create(p1, &g.d, &plan));
    if (plan)
        TIMED("same_ctx_gemm", small_gemm_run(p1, s, &g, plan, 5));
    bc_gemm_plan_destroy(plan), plan = NULL;
    bc_device *o1 = child_open(0, 1u << 20), *o2 = child_open(0, 1u << 20);
    bc_device_bind_thread(o1);
    bc_stream *so = NULL;
    bc_stream_create(o1, 0, &so, NULL);
    small_in_arena(o1, &g);
    bc_mem_alloc(o2, 64 * 128 * 4, &g.d.d);
    bc_device_bind_thread(o1);
    TIMED("other_ctx_plan", bc_gemm_plan_create(o1, &g.d, &plan));
    if (plan)
        TIMED("other_ctx_gemm", small_gemm_run(o1, so, &g, plan, 6));
    bc_gemm_plan_destroy(plan);
    bc_device_close(o2), bc_device_close(o1), bc_device_close(p2), bc_device_close(p1);
}

/* ------------------------------------------------------------ parent side */

static child_result res;

static void run_scenario(const char *name, void (*fn)(void))
{
    child_run(fn, CHILD_LIMIT_S, &res);
    if (res.skipped) {
        printf("  %s: no usable GPU (%s)\n", name, res.skip_reason);
        skip();
    }
    child_print(name, &res);
    if (res.timed_out || res.signal || res.exit_code != 0)
        fail_msg("%s: the child %s", name, res.timed_out ? "hung" : "crashed or exited with an error");
}

static const child_row *must(const char *step)
{
    const child_row *r = child_find(&res, step);
    if (r == NULL)
        fail_msg("no row for step %s", step);
    return r;
}

static void expect(const char *step, const char *status)
{
    const child_row *r = must(step);
    if (strcmp(r->status, status) != 0)
        fail_msg("%s: %s (%s), README states %s", step, r->status, r->note, status);
}

static void expect_fast(const char *step, const char *status, double max_ms)
{
    expect(step, status);
    if (must(step)->ms > max_ms)
        fail_msg("%s took %.3f ms; it must fail fast (< %.1f ms)", step, must(step)->ms, max_ms);
}

static void test_fault_own_context(void **state)
{
    run_scenario("own", sc_own);
    expect("gemm_before_fault", "BC_OK");
    expect("wait_after_fault", "BC_ERR_DEVICE_LOST");
    static const char *fast[] = {"lib_plan_create", "lib_stream_create", "lib_mem_alloc", "lib_memcpy_dtoh",
                                 "lib_stream_wait", "lib_reopen"};
    for (size_t i = 0; i < sizeof fast / sizeof *fast; i++)
        expect_fast(fast[i], "BC_ERR_DEVICE_LOST", 1.0);
    expect_fast("drv_gemm_launch", "BC_ERR_DEVICE_LOST", 50.0);
    if (must("close")->ms > 2000)
        fail_msg("closing a lost device took %.1f ms", must("close")->ms);
    expect("drv_reopen", "BC_ERR_DEVICE_LOST"); /* only a process restart recovers */
}

static void test_fault_primary_reset(void **state)
{
    run_scenario("primary", sc_primary);
    expect("wait_after_fault", "BC_ERR_DEVICE_LOST");
    expect_fast("lib_reopen", "BC_ERR_DEVICE_LOST", 1.0);
    expect("drv_reopen", "BC_ERR_DEVICE_LOST"); /* reset does not help */
}

static void test_fault_second_handle(void **state)
{
    run_scenario("second", sc_second);
    expect("d2_smoke_before", "BC_OK");
    expect("wait_after_fault", "BC_ERR_DEVICE_LOST");
    expect_fast("lib_d2_smoke", "BC_ERR_DEVICE_LOST", 1.0);
    expect("drv_d2_own_smoke", "BC_ERR_DEVICE_LOST");     /* process-wide */
    expect("drv_d3_primary_smoke", "BC_ERR_DEVICE_LOST");
}

static void test_hang_bounded_close(void **state)
{
    run_scenario("hang_bound", sc_hang_bound);
    expect("wait_100ms", "BC_ERR_TIMEOUT");
    expect("close_timeout_250ms", "BC_ERR_TIMEOUT");
    if (must("close_timeout_250ms")->ms > 400)
        fail_msg("bc_device_close_timeout(250 ms) took %.1f ms", must("close_timeout_250ms")->ms);
    expect("reopen", "BC_OK");
    expect("reopen_smoke", "BC_OK");
    expect("reopen_gemm", "BC_OK");
}

static void test_hang_plain_close(void **state)
{
    run_scenario("hang_close", sc_hang_close);
    expect("wait_100ms", "BC_ERR_TIMEOUT");
    if (must("close")->ms < 2000) /* README: close waits for the running kernel */
        fail_msg("bc_device_close returned after %.1f ms with a 4 s kernel running", must("close")->ms);
    expect("reopen", "BC_OK");
    expect("reopen_smoke", "BC_OK");
    expect("reopen_gemm", "BC_OK");
}

static void test_host_mapped_operands(void **state)
{
    run_scenario("host_mapped", sc_host_mapped);
    /* BC__TMA_ON_HOST_MEMORY allows TMA on host-mapped memory: it must then work */
    if (BC__TMA_ON_HOST_MEMORY) {
        expect("tma_load_from_host", "BC_OK");
        expect("tma_store_to_host", "BC_OK");
    } else {
        expect("tma_load_from_host", "BC_ERR_WRONG_DEVICE");
    }
}

static void test_foreign_operands(void **state)
{
    run_scenario("foreign", sc_foreign);
    expect("same_ctx_plan", "BC_OK");
    expect("same_ctx_gemm", "BC_OK");
    const child_row *r = must("other_ctx_plan");
    if (strcmp(r->status, "BC_OK") == 0) /* accepted: then it must work */
        expect("other_ctx_gemm", "BC_OK");
    else
        expect("other_ctx_plan", "BC_ERR_WRONG_DEVICE");
}

int main(void)
{
    GPU_TEST_PROLOGUE();
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_own_context),  cmocka_unit_test(test_fault_primary_reset),
        cmocka_unit_test(test_fault_second_handle), cmocka_unit_test(test_hang_bounded_close),
        cmocka_unit_test(test_hang_plain_close),    cmocka_unit_test(test_host_mapped_operands),
        cmocka_unit_test(test_foreign_operands),
    };
    return cmocka_run_group_tests_name("gpu_faults", tests, NULL, NULL);
}
