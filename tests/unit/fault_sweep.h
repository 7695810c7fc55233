/* The fault-injection sweep shared by the fault tests: every driver call
 * of a scenario fails in turn, once (transient) and from then on
 * (persistent), with two CUresults.
 *
 * For each scenario: a clean run counts its N driver calls and records which
 * of them happen inside functions that return void (close/destroy, which
 * can only log a failure). Then for n = 1..N, each mode and each CUresult:
 *  - call n is the same entry as in the clean run (the fault hit where aimed);
 *  - a call outside the void functions makes the scenario fail, with a
 *    status the test's `matches` accepts for that entry and CUresult, and
 *    bc_last_error() names exactly that driver call and carries the CUresult;
 *  - a transient failure inside a void function is absorbed (BC_OK);
 *  - whatever happened, once the scenario has cleaned up, the fake holds no
 *    object: every create was matched by its destroy.
 * Include after fake_test.h. */
#ifndef BC_TESTS_FAULT_SWEEP_H
#define BC_TESTS_FAULT_SWEEP_H

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

/* 1 if `st` is what a failing call of `e` returning `r` may produce. */
typedef int (*status_fn)(fake_entry e, CUresult r, bc_status st);

static int is_sticky(CUresult r)
{
    return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED;
}

/* The driver loader's own mapping for its calls, which every scenario that
 * opens a device makes; -1 for any other entry. */
static int loader_status_matches(fake_entry e, bc_status st)
{
    if (e == FAKE_E_cuDriverGetVersion) /* at load: too old; later: a failed call */
        return st == BC_ERR_DRIVER_TOO_OLD || st == BC_ERR_DRIVER || st == BC_ERR_DEVICE_LOST;
    if (e == FAKE_E_cuInit) /* mapped by the driver loader itself */
        return st == BC_ERR_DRIVER;
    return -1;
}

typedef struct sweep_stats {
    unsigned runs, failing, absorbed;
} sweep_stats;

static sweep_stats total;

static void sweep(const char *name, scenario_fn fn, void (*config)(void), status_fn matches)
{
    /* non-sticky results (a sticky one marks the whole process lost: test_fault.c sweeps those), and not
     * INVALID_VALUE, which is how cuFuncGetParamInfo says "no more parameters" */
    static const CUresult codes[] = {CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_UNKNOWN};

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
                if (!matches(e, r, o.st))
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

/* cmocka group teardown: the totals of every sweep run. */
static int sweep_report(void **state)
{
    (void)state;
    print_message("fault-injection sweep: %u runs, %u failed as required, %u absorbed by void "
                  "functions\n",
                  total.runs, total.failing, total.absorbed);
    return 0;
}

#endif
