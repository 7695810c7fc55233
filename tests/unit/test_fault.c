/* Fault-injection sweep, counted: every driver call of every scenario fails
 * in turn, once (transient) and from then on (persistent), with four
 * CUresults; then every heap allocation barecuda makes fails in turn.
 *
 * The scenarios (fault_scenarios.h: one table row each, `scenarios[]`; a
 * new path is one row)
 * walk the paths a user takes: open (owned, primary, no arenas, with the
 * kernel image), driver queries, streams/events/copies/waits, two devices,
 * GEMM plans over arena, foreign and registered operands with set_pointers
 * and launches, graphs (capture, launch, update, destroy), the boot checks,
 * the bounded close, the resident executor, and modules with kernels,
 * kernel plans, mixed graphs and user tensor maps. tools/fault_coverage.sh builds this test with gcov
 * and reports how many of the library's driver call sites it reached.
 *
 * Driver faults, for each scenario: a clean run counts its N driver calls
 * and records which of them happen inside release functions (close/destroy,
 * which can only log a failure). Then for n = 1..N, each mode and result:
 *  - call n is the same entry as in the clean run (the fault hit where aimed);
 *  - a call outside the release functions makes the scenario fail, with the
 *    status the CUresult maps to, and bc_last_error() names exactly that
 *    driver call and carries the CUresult;
 *  - a transient failure inside a release function is absorbed (BC_OK);
 *  - whatever happened, once the scenario has cleaned up, the fake holds no
 *    object: every create was matched by its destroy; but where the driver
 *    fails from then on while a resident kernel runs, the executor cannot
 *    learn from its stream that the kernel ended, and the device is left to
 *    the process (bc_device_close's warning; counted, then cleaned up here).
 * Heap faults (the binary links with --wrap=malloc,calloc,realloc,
 * aligned_alloc; allocations made inside the fake driver are not failed):
 * the n-th allocation fails, once and from then on; the scenario ends in
 * BC_OK (a fallback absorbed it) or BC_ERR_OUT_OF_HOST_MEMORY naming the
 * allocator, and nothing leaks (the fake's objects here, the heap under the
 * ASan build's leak check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "module_test.h"
#include "smoke_emu.h"

#define MAX_CALLS 1024

/* ------------------------------------------------------------ heap faults */

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t al, size_t n);

static int heap_armed;          /* counting barecuda's allocations */
static uint64_t heap_count;     /* allocations counted since armed */
static uint64_t heap_fail_at;   /* 0: none; else the allocation to fail */
static int heap_persistent;
static uint64_t heap_failed;    /* allocations failed */
static uint64_t heap_fail_call; /* driver calls made before the first failed allocation */

static int heap_should_fail(void)
{
    if (!heap_armed || fake_in_driver())
        return 0;
    heap_count++;
    int hit = heap_fail_at && (heap_count == heap_fail_at || (heap_persistent && heap_count > heap_fail_at));
    if (hit && heap_failed++ == 0)
        heap_fail_call = fake_calls();
    return hit;
}

void *__wrap_malloc(size_t n) { return heap_should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { return heap_should_fail() ? NULL : __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { return heap_should_fail() ? NULL : __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t al, size_t n) { return heap_should_fail() ? NULL : __real_aligned_alloc(al, n); }

/* ------------------------------------------------------------ recording */

/* Marks the calls made inside release functions during the clean run. */
static unsigned char in_release[MAX_CALLS + 2];
static int recording;

#define RELEASE_CALL(stmt)                                                                       \
    do {                                                                                         \
        uint64_t a_ = fake_calls();                                                              \
        stmt;                                                                                    \
        if (recording)                                                                           \
            for (uint64_t k_ = a_ + 1; k_ <= fake_calls() && k_ <= MAX_CALLS; k_++)              \
                in_release[k_] = 1;                                                              \
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

/* ------------------------------------------------------------ scenarios */

#include "fault_scenarios.h"

/* ------------------------------------------------------------ the sweep */

static const CUresult codes[] = {CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_INVALID_VALUE,
                                 CUDA_ERROR_UNKNOWN};
#define CODES (sizeof codes / sizeof codes[0])

/* The status a failing call of `e` returning `r` must produce. */
static int status_matches(fake_entry e, CUresult r, bc_status st)
{
    if (e == FAKE_E_cuDriverGetVersion) /* at load: too old; later: a failed call */
        return st == BC_ERR_DRIVER_TOO_OLD || st == BC_ERR_DRIVER || st == BC_ERR_DEVICE_LOST;
    if (e == FAKE_E_cuInit) /* mapped by the driver loader itself */
        return st == BC_ERR_DRIVER;
    if (bc__cu_is_sticky(r))
        return st == BC_ERR_DEVICE_LOST;
    if (e == FAKE_E_cuModuleLoadDataEx || e == FAKE_E_cuModuleGetFunction || e == FAKE_E_cuFuncGetAttribute)
        return st == BC_ERR_MODULE_LOAD || st == BC_ERR_MISSING_KERNEL || st == BC_ERR_DRIVER;
    if (e == FAKE_E_cuFuncSetAttribute) /* the image's limits; a kernel plan's shared memory or cluster size */
        return st == BC_ERR_MODULE_LOAD || st == BC_ERR_LAUNCH_CONFIG || st == BC_ERR_CLUSTER || st == BC_ERR_DRIVER;
    if (e == FAKE_E_cuTensorMapEncodeTiled || e == FAKE_E_cuTensorMapReplaceAddress)
        return st == BC_ERR_TENSOR_MAP || st == BC_ERR_DRIVER; /* a user map's refusal; the GEMM's maps: the driver */
    if (e == FAKE_E_cuPointerGetAttributes && r == CUDA_ERROR_INVALID_VALUE)
        return st == BC_ERR_WRONG_DEVICE; /* the driver cannot describe the operand */
    return st == BC_ERR_DRIVER;
}

typedef struct sweep_stats {
    unsigned runs, failing, absorbed, abandoned, heap_runs, heap_failing, heap_absorbed, unwinding;
    uint64_t calls;
} sweep_stats;

static sweep_stats total;

/* Set by the log callback: bc_device_close left a device whose resident
 * kernel it could not see end. */
static int device_abandoned;

static void sweep_log(void *user, bc_log_level level, const char *message)
{
    (void)user, (void)level;
    if (strstr(message, "did not stop") != NULL)
        device_abandoned = 1;
}

static void run_once(const scenario *sc, outcome *o)
{
    fake_install();
    if (sc->config)
        sc->config();
    memset(o, 0, sizeof *o);
    sc->fn(o);
}

static void sweep_driver(const scenario *sc)
{
    /* clean run */
    memset(in_release, 0, sizeof in_release);
    recording = 1;
    outcome clean;
    run_once(sc, &clean);
    recording = 0;
    if (clean.st != BC_OK)
        fail_msg("%s: clean run failed: %s [%s] %s", sc->name, bc_status_string(clean.st), clean.d.call,
                 clean.d.message);
    uint64_t n_calls = fake_calls();
    assert_true(n_calls > 0 && n_calls <= MAX_CALLS);
    static int entry_at[MAX_CALLS + 1];
    for (uint64_t k = 1; k <= n_calls; k++)
        entry_at[k] = fake_call_entry(k);
    if (fake_live_objects() != 0)
        fail_msg("%s: clean run leaks %s", sc->name, fake_live_string());
    total.calls += n_calls;

    for (uint64_t n = 1; n <= n_calls; n++) {
        fake_entry e = (fake_entry)entry_at[n];
        for (int persistent = 0; persistent <= 1; persistent++) {
            for (size_t c = 0; c < CODES; c++) {
                CUresult r = codes[c];
                if (e == FAKE_E_cuFuncGetParamInfo && r == CUDA_ERROR_INVALID_VALUE)
                    continue; /* its documented answer past the last parameter: not a failure */
                outcome o;
                fake_install();
                if (sc->config)
                    sc->config();
                fake_fail_call(n, r, persistent);
                memset(&o, 0, sizeof o);
                device_abandoned = 0;
                bc_set_log_callback(sweep_log, NULL, BC_LOG_WARN);
                sc->fn(&o);
                bc_set_log_callback(NULL, NULL, BC_LOG_WARN);
                fake_fail_clear();
                total.runs++;
                const char *mode = persistent ? "persistent" : "transient";
                if (fake_failed_entry() != (int)e)
                    fail_msg("%s: call %llu should be %s, the fault hit %s", sc->name, (unsigned long long)n,
                             fake_entry_name(e),
                             fake_failed_entry() < 0 ? "nothing" : fake_entry_name((fake_entry)fake_failed_entry()));
                if (device_abandoned) {
                    /* only a driver that keeps failing may leave a resident kernel's end unknown (a transient
                     * failure of the stream query is asked again); what is left is the device's own objects
                     * (its kernel may have ended, unseen), and nothing was freed under it */
                    if (!persistent)
                        fail_msg("%s: %s failure of %s at call %llu left the device to the process", sc->name, mode,
                                 fake_entry_name(e), (unsigned long long)n);
                    fake_live_counts lc;
                    fake_live(&lc);
                    if (lc.contexts != 1 || lc.graphs || lc.graph_execs || lc.events || fake_resident_misuse())
                        fail_msg("%s: persistent failure of %s at call %llu: abandoned with %s (misuse %llu)",
                                 sc->name, fake_entry_name(e), (unsigned long long)n, fake_live_string(),
                                 (unsigned long long)fake_resident_misuse());
                    total.abandoned++;
                    bc__driver_release(); /* the abandoned device's driver reference */
                    fake_reset();         /* and its context, memory, modules and streams */
                    continue;
                }
                if (fake_live_objects() != 0)
                    fail_msg("%s: %s failure of %s at call %llu leaks %s", sc->name, mode, fake_entry_name(e),
                             (unsigned long long)n, fake_live_string());
                /* nothing freed under a running resident kernel, whatever the driver does (an executor that
                 * cannot learn whether its kernel still runs keeps its memory) */
                if (fake_resident_misuse() != 0)
                    fail_msg("%s: %s failure of %s at call %llu freed memory under a running kernel", sc->name,
                             mode, fake_entry_name(e), (unsigned long long)n);
                if (in_release[n]) {
                    /* a failure only a release function saw: absorbed when transient */
                    if (!persistent && o.st != BC_OK)
                        fail_msg("%s: transient %s at call %llu inside a release function gave %s", sc->name,
                                 fake_entry_name(e), (unsigned long long)n, bc_status_string(o.st));
                    if (o.st == BC_OK) {
                        total.absorbed++;
                        continue;
                    }
                    /* persistent: a later call failed; it must still be a driver call */
                    total.failing++;
                    if (strncmp(o.d.call, "cu", 2) != 0 || o.d.cu_result != (int)r)
                        fail_msg("%s: persistent from call %llu: detail names '%s' (CUresult %d)", sc->name,
                                 (unsigned long long)n, o.d.call, o.d.cu_result);
                    continue;
                }
                total.failing++;
                if (o.st == BC_OK)
                    fail_msg("%s: %s %s failing at call %llu went unnoticed", sc->name, mode, fake_entry_name(e),
                             (unsigned long long)n);
                if (!status_matches(e, r, o.st))
                    fail_msg("%s: %s %s -> %d at call %llu gave %s", sc->name, mode, fake_entry_name(e), (int)r,
                             (unsigned long long)n, bc_status_string(o.st));
                if (o.d.status != o.st || strcmp(o.d.call, fake_entry_name(e)) != 0 || o.d.cu_result != (int)r)
                    fail_msg("%s: %s %s -> %d at call %llu: detail says %s [%s] CUresult %d (%s)", sc->name, mode,
                             fake_entry_name(e), (int)r, (unsigned long long)n, bc_status_string(o.d.status),
                             o.d.call, o.d.cu_result, o.d.message);
            }
        }
    }
    print_message("%-22s %-6s %3llu driver calls x 2 modes x %zu results\n", sc->name, sc->path,
                  (unsigned long long)n_calls, CODES);
}

static int is_allocator(const char *call)
{
    return !strcmp(call, "malloc") || !strcmp(call, "calloc") || !strcmp(call, "realloc") ||
           !strcmp(call, "aligned_alloc");
}

/* Runs the scenario with allocation n failing (once or from then on) and,
 * when cu_at > 0, driver call cu_at failing with r as well. */
static void run_heap_fault(const scenario *sc, uint64_t n, int persistent, uint64_t cu_at, CUresult r,
                           int cu_persistent, outcome *o)
{
    fake_install();
    if (sc->config)
        sc->config();
    if (cu_at)
        fake_fail_call(cu_at, r, cu_persistent);
    heap_armed = 1, heap_count = 0, heap_fail_at = n, heap_persistent = persistent, heap_failed = 0;
    memset(o, 0, sizeof *o);
    sc->fn(o);
    heap_armed = 0;
    fake_fail_clear();
}

static void expect_heap_outcome(const scenario *sc, uint64_t n, const outcome *o, const char *also)
{
    if (fake_live_objects() != 0)
        fail_msg("%s: failing allocation %llu%s leaks %s", sc->name, (unsigned long long)n, also, fake_live_string());
    if (o->st != BC_OK && (o->st != BC_ERR_OUT_OF_HOST_MEMORY || o->d.status != o->st || !is_allocator(o->d.call)))
        fail_msg("%s: failing allocation %llu%s gave %s [%s] %s", sc->name, (unsigned long long)n, also,
                 bc_status_string(o->st), o->d.call, o->d.message);
}

/* Every allocation fails in turn; the driver calls that unwind after it
 * (cleanup only) then fail in turn too, and must leave the status and
 * bc_last_error() naming the allocation. */
static void sweep_heap(const scenario *sc)
{
    outcome o;
    heap_armed = 1, heap_count = 0, heap_fail_at = 0;
    run_once(sc, &o);
    heap_armed = 0;
    const uint64_t n_allocs = heap_count;
    assert_int_equal(o.st, BC_OK);
    unsigned unwinding = 0;
    for (uint64_t n = 1; n <= n_allocs; n++)
        for (int persistent = 0; persistent <= 1; persistent++) {
            run_heap_fault(sc, n, persistent, 0, CUDA_SUCCESS, 0, &o);
            total.heap_runs++;
            if (heap_failed == 0)
                fail_msg("%s: allocation %llu was not made", sc->name, (unsigned long long)n);
            expect_heap_outcome(sc, n, &o, persistent ? " (persistent)" : "");
            if (o.st == BC_OK) {
                total.heap_absorbed++;
                continue;
            }
            total.heap_failing++;
            const uint64_t first = heap_fail_call, calls = fake_calls();
            for (uint64_t k = first + 1; k <= calls; k++) /* the unwinding's driver calls */
                for (int cp = 0; cp <= 1; cp++)
                    for (size_t c = 0; c < CODES; c++) {
                        run_heap_fault(sc, n, persistent, k, codes[c], cp, &o);
                        total.unwinding++, unwinding++;
                        expect_heap_outcome(sc, n, &o, " and a driver fault while unwinding");
                        if (o.st == BC_OK)
                            fail_msg("%s: failing allocation %llu went unnoticed", sc->name, (unsigned long long)n);
                    }
        }
    print_message("%-22s %-6s %3llu allocations x 2 modes, %u unwinding driver faults\n", sc->name, sc->path,
                  (unsigned long long)n_allocs, unwinding);
}

/* Every driver call this makes fails in some run: the calls of a clean run
 * in sweep_driver (transient and from then on, so the unwinding after a
 * driver failure fails too), the calls made while unwinding after a failed
 * allocation in sweep_heap. So a call site tools/fault_coverage.sh counts as
 * reached is a site whose failure was injected. */
static void run_scenario(void **state)
{
    const scenario *sc = *state;
    sweep_driver(sc);
    sweep_heap(sc);
}

/* The module scenario reaches every driver entry those objects use (so
 * its sweep fails each of them). */
static void test_module_scenario_reach(void **state)
{
    (void)state;
    static const fake_entry used[] = {
        FAKE_E_cuModuleLoadDataEx,  FAKE_E_cuModuleGetFunction,        FAKE_E_cuModuleUnload,
        FAKE_E_cuFuncGetAttribute,  FAKE_E_cuFuncGetParamInfo,         FAKE_E_cuFuncSetAttribute,
        FAKE_E_cuOccupancyMaxActiveClusters, FAKE_E_cuLaunchKernelEx,  FAKE_E_cuStreamBeginCapture,
        FAKE_E_cuStreamGetCaptureInfo, FAKE_E_cuStreamEndCapture,      FAKE_E_cuGraphInstantiateWithFlags,
        FAKE_E_cuGraphLaunch,       FAKE_E_cuGraphExecKernelNodeSetParams, FAKE_E_cuGraphExecDestroy,
        FAKE_E_cuGraphDestroy,      FAKE_E_cuTensorMapEncodeTiled,     FAKE_E_cuTensorMapReplaceAddress,
    };
    fake_install();
    mt_register_signatures();
    outcome clean;
    memset(&clean, 0, sizeof clean);
    sc_modules_plans_graphs(&clean);
    assert_int_equal(clean.st, BC_OK);
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        if (fake_entry_calls(used[i]) == 0)
            fail_msg("the scenario never calls %s", fake_entry_name(used[i]));
}

static int report(void **state)
{
    print_message("fault-injection sweep: %llu driver calls in %zu scenarios, %zu results; %u runs, %u failed as "
                  "required, %u absorbed by release functions, %u left a resident kernel's device to the process; "
                  "heap: %u runs, %u failed as required, %u absorbed by fallbacks, %u more with a driver fault "
                  "while unwinding\n",
                  (unsigned long long)total.calls, SCENARIOS, CODES, total.runs, total.failing, total.absorbed,
                  total.abandoned,
                  total.heap_runs, total.heap_failing, total.heap_absorbed, total.unwinding);
    return 0;
}

int main(void)
{
    struct CMUnitTest tests[SCENARIOS + 1];
    for (size_t i = 0; i < SCENARIOS; i++)
        tests[i] = (struct CMUnitTest){scenarios[i].name, run_scenario, ft_setup, ft_teardown, (void *)&scenarios[i]};
    tests[SCENARIOS] = (struct CMUnitTest)ft_test(test_module_scenario_reach);
    return _cmocka_run_group_tests("fault", tests, SCENARIOS + 1, NULL, report);
}
