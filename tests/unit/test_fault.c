/* Fault-injection sweep: every driver call of every scenario fails in turn,
 * once (transient) and from then on (persistent), with two CUresults.
 *
 * For each scenario: a clean run counts its N driver calls and records which
 * of them happen inside functions that return void (close/destroy, which
 * can only log a failure). Then for n = 1..N, each mode and each CUresult:
 *  - call n is the same entry as in the clean run (the fault hit where aimed);
 *  - a call outside the void functions makes the scenario fail, with the
 *    status the CUresult maps to, and bc_last_error() names exactly that
 *    driver call and carries the CUresult;
 *  - a transient failure inside a void function is absorbed (BC_OK);
 *  - whatever happened, once the scenario has cleaned up, the fake holds no
 *    object: every create was matched by its destroy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"

#define MAX_CALLS 512

/* Marks the calls made inside void functions during the clean run. */
static unsigned char in_void[MAX_CALLS + 2];
static int recording;

#define VOID_CALL(stmt)                                                                          \
    do {                                                                                         \
        uint64_t a_ = fake_calls();                                                              \
        stmt;                                                                                    \
        if (recording)                                                                           \
            for (uint64_t k_ = a_ + 1; k_ <= fake_calls() && k_ <= MAX_CALLS; k_++)              \
                in_void[k_] = 1;                                                                 \
    } while (0)

/* The first failure of a scenario and its detail, taken when it happened. */
typedef struct outcome {
    bc_status st;
    bc_error_detail d;
} outcome;

#define STEP(o, expr)                                                                            \
    do {                                                                                         \
        if ((o)->st == BC_OK) {                                                                  \
            bc_status s_ = (expr);                                                               \
            if (s_ != BC_OK) {                                                                   \
                (o)->st = s_;                                                                    \
                bc_last_error(&(o)->d);                                                          \
            }                                                                                    \
        }                                                                                        \
    } while (0)

typedef void (*scenario_fn)(outcome *o);

/* ------------------------------------------------------------ scenarios */

static void open_close(outcome *o, bc_device_config cfg)
{
    bc_device *dev = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st == BC_OK)
        VOID_CALL(bc_device_close(dev));
}

static void sc_open_own_arenas(outcome *o) { open_close(o, ft_config()); }

static void sc_open_own_no_arenas(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.device_arena_bytes = cfg.host_arena_bytes = 0;
    cfg.sched = BC_SCHED_BLOCK;
    open_close(o, cfg);
}

static void sc_open_primary_arenas(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.use_primary_context = 1;
    open_close(o, cfg);
}

/* Open with the embedded kernels loaded. */
static void sc_open_kernels(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    open_close(o, cfg);
}

static void sc_driver_queries(outcome *o)
{
    int v = 0, n = 0;
    STEP(o, bc_driver_version(&v));
    STEP(o, bc_device_count(&n));
}

/* Streams, events, memory and copies, released by hand, then close. */
static void sc_stream_event_mem(outcome *o)
{
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    bc_stream *s = NULL, *s2 = NULL;
    bc_event *e0 = NULL, *e1 = NULL;
    bc_devptr d = 0;
    unsigned char buf[256] = {1, 2, 3};
    float ms = 0;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st)
        return;
    STEP(o, bc_stream_create(dev, -1, &s, NULL));
    STEP(o, bc_stream_create(dev, 0, &s2, NULL));
    STEP(o, bc_event_create(dev, &e0));
    STEP(o, bc_event_create(dev, &e1));
    STEP(o, bc_mem_alloc(dev, sizeof buf, &d));
    STEP(o, bc_event_record(e0, s));
    STEP(o, bc_memcpy_htod(dev, d, buf, sizeof buf));
    STEP(o, bc_memset_d8_async(s, d, 9, 16));
    STEP(o, bc_memcpy_dtoh_async(s, buf, d, sizeof buf));
    STEP(o, bc_memcpy_htod_async(s2, d, buf, sizeof buf));
    STEP(o, bc_event_record(e1, s));
    STEP(o, bc_stream_wait(s, 1000000000u));
    STEP(o, bc_stream_query(s2));
    STEP(o, bc_event_elapsed_ms(e0, e1, &ms));
    STEP(o, bc_memcpy_dtoh(dev, buf, d, sizeof buf));
    if (d)
        STEP(o, bc_mem_free(dev, d));
    VOID_CALL(bc_event_destroy(e1));
    VOID_CALL(bc_stream_destroy(s2));
    VOID_CALL(bc_device_close(dev)); /* s and e0 are left for close */
}

/* Two devices, one stream on each, closed in open order. */
static void sc_two_devices(outcome *o)
{
    bc_device_config c0 = ft_config(), c1 = ft_config();
    c1.ordinal = 1;
    c1.use_primary_context = 1;
    bc_device *d0 = NULL, *d1 = NULL;
    bc_stream *s0 = NULL, *s1 = NULL;
    STEP(o, bc_device_open(&c0, &d0));
    STEP(o, bc_device_open(&c1, &d1));
    if (d0)
        STEP(o, bc_device_bind_thread(d0));
    if (d0)
        STEP(o, bc_stream_create(d0, 0, &s0, NULL));
    if (d1)
        STEP(o, bc_device_bind_thread(d1));
    if (d1)
        STEP(o, bc_stream_create(d1, 0, &s1, NULL));
    if (s1)
        STEP(o, bc_stream_wait(s1, 1000000u));
    if (d0)
        VOID_CALL(bc_device_close(d0));
    if (d1)
        VOID_CALL(bc_device_close(d1));
}

/* A resident executor over two chained plans with an input and an output
 * copy: created, started, stepped, stopped and destroyed by hand, or left
 * running for bc_device_close (`close_running`). */
static void resident(outcome *o, int close_running)
{
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.device_arena_bytes = 4u << 20;
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    bc_devptr buf = 0;
    void *host = NULL;
    bc_gemm_plan *p[2] = {NULL, NULL};
    bc_resident *res = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st)
        return;
    STEP(o, bc_stream_create(dev, 0, &s, NULL));
    STEP(o, bc_mem_alloc(dev, 1u << 20, &buf));
    STEP(o, bc_host_alloc(dev, 16384, &host));
    for (int i = 0; i < 2; i++) {
        bc_gemm_desc d;
        bc_gemm_desc_default(&d);
        d.m = d.n = d.k = 64;
        d.a = buf + (i ? 0x20000u : 0), d.b = buf + 0x10000u, d.d = buf + (i ? 0x30000u : 0x20000u);
        d.config = "sm90_64x32";
        STEP(o, bc_gemm_plan_create(dev, &d, &p[i]));
    }
    bc_resident_copy in = {host, buf, 8192}, out = {host ? (char *)host + 8192 : NULL, buf + 0x30000u, 8192};
    bc_resident_config rc;
    bc_resident_config_default(&rc);
    rc.inputs = &in, rc.input_count = 1, rc.outputs = &out, rc.output_count = 1;
    STEP(o, bc_resident_create(dev, (const bc_gemm_plan *const *)p, 2, &rc, &res));
    STEP(o, bc_resident_start(res, s));
    STEP(o, bc_resident_step(res, 5000000000u));
    STEP(o, bc_resident_step(res, 5000000000u));
    if (!close_running) {
        STEP(o, bc_resident_stop(res, 5000000000u));
        if (res)
            VOID_CALL(bc_resident_destroy(res));
    }
    VOID_CALL(bc_device_close(dev)); /* the plans (and a running executor) go with it */
}

static void sc_resident(outcome *o) { resident(o, 0); }
static void sc_resident_close_running(outcome *o) { resident(o, 1); }

static void two_devices_config(void)
{
    fake_device d[2];
    fake_device_defaults(&d[0]);
    fake_device_defaults(&d[1]);
    snprintf(d[1].name, sizeof d[1].name, "Fake GH200");
    fake_set_devices(d, 2);
}

/* ------------------------------------------------------------ the sweep */

static int is_sticky(CUresult r)
{
    return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED;
}

/* The status a failing call of `e` returning `r` must produce. */
static int status_matches(fake_entry e, CUresult r, bc_status st)
{
    if (e == FAKE_E_cuDriverGetVersion) /* at load: too old; later: a failed call */
        return st == BC_ERR_DRIVER_TOO_OLD || st == BC_ERR_DRIVER || st == BC_ERR_DEVICE_LOST;
    if (e == FAKE_E_cuInit) /* mapped by the driver loader itself */
        return st == BC_ERR_DRIVER;
    if (!is_sticky(r) && (e == FAKE_E_cuModuleLoadDataEx || e == FAKE_E_cuModuleGetFunction ||
                          e == FAKE_E_cuFuncSetAttribute || e == FAKE_E_cuFuncGetAttribute))
        return st == BC_ERR_MODULE_LOAD || st == BC_ERR_MISSING_KERNEL || st == BC_ERR_DRIVER;
    return st == (is_sticky(r) ? BC_ERR_DEVICE_LOST : BC_ERR_DRIVER);
}

typedef struct sweep_stats {
    unsigned runs, failing, absorbed;
} sweep_stats;

static sweep_stats total;

static void sweep(const char *name, scenario_fn fn, void (*config)(void))
{
    static const CUresult codes[] = {CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_ILLEGAL_ADDRESS};

    /* clean run */
    fake_install();
    if (config)
        config();
    memset(in_void, 0, sizeof in_void);
    recording = 1;
    outcome clean = {BC_OK, {0}};
    fn(&clean);
    recording = 0;
    if (clean.st != BC_OK)
        fail_msg("%s: clean run failed: %s [%s] %s", name, bc_status_string(clean.st),
                 clean.d.call, clean.d.message);
    uint64_t n_calls = fake_calls();
    assert_true(n_calls > 0 && n_calls <= MAX_CALLS);
    int entry_at[MAX_CALLS + 1];
    for (uint64_t k = 1; k <= n_calls; k++)
        entry_at[k] = fake_call_entry(k);
    if (fake_live_objects() != 0)
        fail_msg("%s: clean run leaks %s", name, fake_live_string());

    for (uint64_t n = 1; n <= n_calls; n++) {
        fake_entry e = (fake_entry)entry_at[n];
        for (int persistent = 0; persistent <= 1; persistent++) {
            for (size_t c = 0; c < sizeof codes / sizeof codes[0]; c++) {
                CUresult r = codes[c];
                fake_install();
                if (config)
                    config();
                fake_fail_call(n, r, persistent);
                outcome o = {BC_OK, {0}};
                fn(&o);
                fake_fail_clear();
                total.runs++;
                const char *mode = persistent ? "persistent" : "transient";
                if (fake_failed_entry() != (int)e)
                    fail_msg("%s: call %llu should be %s, the fault hit %s", name,
                             (unsigned long long)n, fake_entry_name(e),
                             fake_failed_entry() < 0 ? "nothing"
                                                     : fake_entry_name((fake_entry)fake_failed_entry()));
                if (fake_live_objects() != 0)
                    fail_msg("%s: %s failure of %s at call %llu leaks %s", name, mode,
                             fake_entry_name(e), (unsigned long long)n, fake_live_string());
                /* nothing freed under a running resident kernel (a persistently failing
                 * driver can leave the executor unable to know whether it still runs) */
                if (!persistent && fake_resident_misuse() != 0)
                    fail_msg("%s: %s failure of %s at call %llu freed memory under a running kernel", name,
                             mode, fake_entry_name(e), (unsigned long long)n);
                if (in_void[n]) {
                    /* a failure only a void function saw: absorbed when transient */
                    if (!persistent && o.st != BC_OK)
                        fail_msg("%s: transient %s at call %llu inside a void function gave %s",
                                 name, fake_entry_name(e), (unsigned long long)n,
                                 bc_status_string(o.st));
                    if (o.st == BC_OK) {
                        total.absorbed++;
                        continue;
                    }
                    /* persistent: a later call failed; it must still be a driver call */
                    total.failing++;
                    if (strncmp(o.d.call, "cu", 2) != 0 || o.d.cu_result != (int)r)
                        fail_msg("%s: persistent from call %llu: detail names '%s' (CUresult %d)",
                                 name, (unsigned long long)n, o.d.call, o.d.cu_result);
                    continue;
                }
                total.failing++;
                if (o.st == BC_OK)
                    fail_msg("%s: %s %s failing at call %llu went unnoticed", name, mode,
                             fake_entry_name(e), (unsigned long long)n);
                if (!status_matches(e, r, o.st))
                    fail_msg("%s: %s %s -> %d at call %llu gave %s", name, mode, fake_entry_name(e),
                             (int)r, (unsigned long long)n, bc_status_string(o.st));
                if (o.d.status != o.st || strcmp(o.d.call, fake_entry_name(e)) != 0 ||
                    o.d.cu_result != (int)r)
                    fail_msg("%s: %s %s -> %d at call %llu: detail says %s [%s] CUresult %d (%s)",
                             name, mode, fake_entry_name(e), (int)r, (unsigned long long)n,
                             bc_status_string(o.d.status), o.d.call, o.d.cu_result, o.d.message);
            }
        }
    }
    print_message("%-22s %3llu calls x 2 modes x 2 results = %llu runs\n", name,
                  (unsigned long long)n_calls, (unsigned long long)n_calls * 4);
}

static void test_sweep_open_own_arenas(void **state)
{
    sweep("open own+arenas", sc_open_own_arenas, NULL);
}

static void test_sweep_open_own_no_arenas(void **state)
{
    sweep("open own, no arenas", sc_open_own_no_arenas, NULL);
}

static void test_sweep_open_primary(void **state)
{
    sweep("open primary+arenas", sc_open_primary_arenas, NULL);
}

static void test_sweep_kernels(void **state)
{
    sweep("open with kernels", sc_open_kernels, NULL);
}

static void test_sweep_driver_queries(void **state)
{
    sweep("driver queries", sc_driver_queries, NULL);
}

static void test_sweep_stream_event_mem(void **state)
{
    sweep("stream/event/mem", sc_stream_event_mem, NULL);
}

static void test_sweep_resident(void **state)
{
    sweep("resident executor", sc_resident, NULL);
}

static void test_sweep_resident_close_running(void **state)
{
    sweep("resident, close running", sc_resident_close_running, NULL);
}

static void test_sweep_two_devices(void **state)
{
    sweep("two devices", sc_two_devices, two_devices_config);
}

static int report(void **state)
{
    print_message("fault-injection sweep: %u runs, %u failed as required, %u absorbed by void "
                  "functions\n",
                  total.runs, total.failing, total.absorbed);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_sweep_open_own_arenas),   ft_test(test_sweep_open_own_no_arenas),
        ft_test(test_sweep_open_primary),      ft_test(test_sweep_driver_queries),
        ft_test(test_sweep_kernels),
        ft_test(test_sweep_stream_event_mem),  ft_test(test_sweep_two_devices),
        ft_test(test_sweep_resident),          ft_test(test_sweep_resident_close_running),
    };
    return cmocka_run_group_tests_name("fault", tests, NULL, report);
}
