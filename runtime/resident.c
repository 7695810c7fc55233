/* The resident executor: one persistent kernel per executor, rung through a
 * doorbell in mapped pinned memory (the kernel: kernels_ptx/resident_sm90.c;
 * the program: resident_program.c). The step path (ring, wait) is a host
 * store and a poll: no driver call, no allocation, no lock. */
#ifdef BC_RES_TRACE
#include <stdio.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "resident_internal.h"

#define DEFAULT_SPIN_NS 1000000u     /* a control loop at 1 kHz or faster never sees a sleeping kernel */
#define DEFAULT_MAX_SLEEP_NS 20000u  /* after that, a step waits at most ~20 us longer (x2: CTA 0, then the rest) */
#define MAX_SLEEP_LIMIT_NS 1000000u  /* nanosleep's own limit */
#define WORDS_BYTES 256u             /* doorbell at 0, completion word at 128: separate lines */

bc_status bc_resident_config_default(bc_resident_config *out_cfg)
{
    if (out_cfg == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_config_default", "out_cfg is NULL");
    memset(out_cfg, 0, sizeof *out_cfg);
    out_cfg->spin_ns = DEFAULT_SPIN_NS;
    out_cfg->max_sleep_ns = DEFAULT_MAX_SLEEP_NS;
    return BC_OK;
}

/* The CTAs to hold: the caller's count, or by default as many as the
 * largest phase has tiles (more would only wait at the barriers), at most
 * one per SM; and the device must keep them all resident at once. */
static bc_status choose_grid(bc_device *dev, const bc__resident_prog *p, uint32_t asked, uint32_t *out)
{
    const uint32_t sms = (uint32_t)dev->info.sm_count;
    uint32_t grid = asked ? asked : p->max_tiles < sms ? p->max_tiles : sms;
    if (grid == 0)
        grid = 1;
    if (grid > sms)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "sm_count", "sm_count %u exceeds the device's %u SMs", grid, sms);
    int coop = 0, per_sm = 0;
    bc_status st = BC_CU(cuDeviceGetAttribute, &coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev->cudev);
    if (st)
        return st;
    if (!coop)
        return BC_FAIL(BC_ERR_NOT_SUPPORTED, "cooperative launch",
                       "the device cannot launch cooperatively: nothing guarantees the executor's CTAs run together");
    st = BC_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, p->fn, (int)p->threads, (size_t)p->smem);
    if (st)
        return st;
    if ((uint64_t)per_sm * sms < grid)
        return BC_FAIL(BC_ERR_LAUNCH_CONFIG, "sm_count",
                       "%u CTAs of %u threads and %u bytes of shared memory cannot all be resident: the driver "
                       "reports %d per SM on %u SMs",
                       grid, p->threads, p->smem, per_sm, sms);
    *out = grid;
    return BC_OK;
}

static void fill_launch(bc_resident *r)
{
    bc_resident_params *pa = &r->params;
    pa->program = r->program;
    pa->sync = r->program + (uint64_t)r->prog.count * sizeof(bc_resident_op);
    pa->ops = r->prog.count;
    pa->spin_ns = r->cfg.spin_ns;
    pa->max_sleep_ns = r->cfg.max_sleep_ns;
    pa->sys_release = r->prog.sys_release;
    CUlaunchConfig *lc = &r->launch;
    memset(lc, 0, sizeof *lc);
    lc->gridDimX = r->cfg.sm_count;
    lc->gridDimY = lc->gridDimZ = 1;
    lc->blockDimX = r->prog.threads;
    lc->blockDimY = lc->blockDimZ = 1;
    lc->sharedMemBytes = r->prog.smem;
    r->attrs[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    r->attrs[0].value.cooperative = 1;
    lc->attrs = r->attrs;
    lc->numAttrs = 1;
    r->args[0] = pa;
}

/* The doorbell and completion words, and their device addresses. */
static bc_status map_words(bc_resident *r)
{
    bc_status st = bc_host_alloc(r->dev, WORDS_BYTES, &r->words);
    if (st)
        return st;
    memset(r->words, 0, WORDS_BYTES);
    r->doorbell = (volatile uint64_t *)r->words;
    r->done = (volatile uint64_t *)((char *)r->words + 128);
    CUdeviceptr d = 0;
    st = BC_CU(cuMemHostGetDevicePointer, &d, r->words, 0);
    if (st) {
        bc_host_free(r->dev, r->words);
        return st;
    }
    r->params.doorbell = (uint64_t)d;
    r->params.done = (uint64_t)d + 128;
    return BC_OK;
}

bc_status bc_resident_create(bc_device *dev, const bc_gemm_plan *const *plans, int count,
                             const bc_resident_config *cfg, bc_resident **out_res)
{
    if (dev == NULL || out_res == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_create", "dev or out_res is NULL");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_resident_create");
    bc_resident_config c;
    bc_resident_config_default(&c);
    if (cfg != NULL)
        c = *cfg;
    if (c.max_sleep_ns > MAX_SLEEP_LIMIT_NS)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "max_sleep_ns", "max_sleep_ns %u exceeds %u", c.max_sleep_ns,
                       MAX_SLEEP_LIMIT_NS);
    if (dev->host_pool == NULL) /* the doorbell and completion words live there */
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "host_arena_bytes",
                       "the executor needs the pinned host pool for its doorbell: open the device with "
                       "host_arena_bytes > 0");
    bc_resident *r = calloc(1, sizeof *r);
    if (r == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate a resident executor");
    r->dev = dev;
    bc_status st = bc__resident_build(dev, plans, count, &c, &r->prog);
    if (!st)
        st = choose_grid(dev, &r->prog, c.sm_count, &c.sm_count);
    if (st)
        goto fail_free;
    c.inputs = c.outputs = NULL; /* the program holds them; the caller's arrays may go */
    r->cfg = c;
    const size_t ops_bytes = (size_t)r->prog.count * sizeof(bc_resident_op);
    st = bc_mem_alloc(dev, ops_bytes + r->prog.sync_bytes + r->prog.ws_bytes, &r->program);
    if (st)
        goto fail_free;
    st = bc_memcpy_htod(dev, r->program, r->prog.ops, ops_bytes);
    if (st)
        goto fail_program;
    st = map_words(r);
    if (st)
        goto fail_program;
    fill_launch(r);
    bc__list_push(&dev->residents, &r->link);
    *out_res = r;
    return BC_OK;

fail_program:
    bc_mem_free(dev, r->program);
fail_free:
    free(r);
    return st;
}

bc_status bc_resident_start(bc_resident *res, bc_stream *stream)
{
    if (res == NULL || stream == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_start", "res or stream is NULL");
    if (res->running)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_start", "the executor is already running");
    if (BC_STREAM_ON(stream, res->dev, "the executor"))
        return BC_ERR_INVALID_ARGUMENT;
    if (stream->handle == NULL || stream->handle == CU_STREAM_LEGACY || stream->handle == CU_STREAM_PER_THREAD)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "stream",
                       "a default stream (legacy or per-thread) is shared: the kernel would hold back all other "
                       "work on it until stopped, and two executors could not tell their streams apart; give "
                       "the executor a created stream");
    for (const bc__link *l = res->dev->residents.next; l != &res->dev->residents; l = l->next) {
        const bc_resident *o = (const bc_resident *)l; /* link is the first member */
        if (o != res && o->running && o->stream != NULL && o->stream->handle == stream->handle)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "stream",
                           "another resident executor runs on this stream: its kernel would never let this one "
                           "start, and its stop would wait for this one; give each executor its own stream");
    }
    /* every rung step has completed (stop runs them first): a clean doorbell */
    __atomic_store_n(res->doorbell, res->rung, __ATOMIC_RELEASE);
    res->params.first_seq = res->rung;
    res->launch.hStream = stream->handle;
    bc_status st = bc_memset_d8_async(stream, res->params.sync, 0, res->prog.sync_bytes);
    if (!st)
        st = BC_CU(cuLaunchKernelEx, &res->launch, res->prog.fn, res->args, NULL);
    if (st)
        return st;
    res->stream = stream;
    res->running = 1;
    return BC_OK;
}

bc_status bc_resident_ring(bc_resident *res)
{
    if (res == NULL || !res->running)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_ring", "%s",
                       res == NULL ? "res is NULL" : "the executor is not started");
    if (bc__dev_lost(res->dev)) /* a flag read: no driver call */
        return BC_LOST_FAIL("bc_resident_ring");
    if (res->stopping) /* the kernel leaves once its rung steps are done: a step rung now would never run */
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_ring",
                       "the executor is stopping (bc_resident_stop did not see its kernel end): call "
                       "bc_resident_stop until it returns BC_OK, then bc_resident_start");
    if (__atomic_load_n(res->done, __ATOMIC_ACQUIRE) < res->rung)
        return BC_ERR_NOT_READY;
    __atomic_store_n(res->doorbell, ++res->rung, __ATOMIC_RELEASE);
    return BC_OK;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

bc_status bc_resident_wait(bc_resident *res, uint64_t timeout_ns)
{
    if (res == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_wait", "res is NULL");
    if (__atomic_load_n(res->done, __ATOMIC_ACQUIRE) >= res->rung)
        return BC_OK;
    if (bc__dev_lost(res->dev)) /* the step will never complete; a flag read, no driver call */
        return BC_LOST_FAIL("bc_resident_wait");
    if (!res->running) /* a stop saw the kernel fault or fail: the step will never complete */
        return bc__dev_lost(res->dev)
                   ? BC_LOST_FAIL("bc_resident_wait")
                   : BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_wait",
                             "step %llu will never complete: the executor's kernel is not running",
                             (unsigned long long)res->rung);
    const bc_sched_policy policy = res->stream->wait;
    const uint64_t start = bc__now_ns();
    const uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
    uint32_t sleep_ns = BC__WAIT_SLEEP_MIN_NS;
    while (__atomic_load_n(res->done, __ATOMIC_ACQUIRE) < res->rung) {
        if (bc__now_ns() >= deadline) {
            /* a faulted kernel never completes: tell it from a slow one */
            bc_status st = BC_CU(cuStreamQuery, res->stream->handle); /* running: checked on entry */
            if (st != BC_OK && st != BC_ERR_NOT_READY)
                return st;
            if (__atomic_load_n(res->done, __ATOMIC_ACQUIRE) >= res->rung)
                return BC_OK;
            return BC_FAIL(BC_ERR_TIMEOUT, "bc_resident_wait", "step %llu not complete after %llu ns (%s)",
                           (unsigned long long)res->rung, (unsigned long long)timeout_ns,
                           st == BC_ERR_NOT_READY ? "the kernel is still running" : "the kernel is not running");
        }
        if (policy == BC_SCHED_SPIN)
            cpu_relax();
        else
            bc__wait_pause(policy, &sleep_ns);
    }
    return BC_OK;
}

bc_status bc_resident_step(bc_resident *res, uint64_t timeout_ns)
{
    bc_status st = bc_resident_ring(res);
    return st ? st : bc_resident_wait(res, timeout_ns);
}

/* Rings stop and polls the stream, bounded. `quiet` (the destroy path):
 * failures are logged, not recorded, so bc_last_error keeps the caller's,
 * and a failing query is tried again (a few times) before giving up. */
static bc_status stop_kernel(bc_resident *res, uint64_t timeout_ns, int quiet)
{
    __atomic_store_n(res->doorbell, res->rung | BC_RESIDENT_STOP, __ATOMIC_RELEASE);
    res->stopping = 1;
    const uint64_t start = bc__now_ns();
    const uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
    uint32_t sleep_ns = BC__WAIT_SLEEP_MIN_NS;
    for (int errors = 0;;) {
        bc_status st = quiet ? BC_CU_CLEANUP(cuStreamQuery, res->stream->handle)
                             : BC_CU(cuStreamQuery, res->stream->handle);
        if (st == BC_OK || st == BC_ERR_DEVICE_LOST) { /* ended, or faulted: the context is lost */
#ifdef BC_RES_TRACE /* diagnostic builds only: the stamps appended to $BC_RES_TRACE_FILE */
            if (st == BC_OK && getenv("BC_RES_TRACE_FILE") != NULL) {
                static uint8_t tr[BC_RESIDENT_SYNC_BYTES];
                FILE *f = fopen(getenv("BC_RES_TRACE_FILE"), "ab");
                if (f && bc_memcpy_dtoh(res->dev, tr, res->params.sync, sizeof tr) == BC_OK) {
                    uint32_t hdr[4] = {0x52545243u, res->launch.gridDimX, res->prog.count, 0};
                    fwrite(hdr, sizeof hdr, 1, f);
                    fwrite(tr, sizeof tr, 1, f);
                }
                if (f)
                    fclose(f);
            }
#endif
            res->running = 0;
            res->stopping = 0;
            res->stream = NULL;
            return st;
        }
        if (st != BC_ERR_NOT_READY && (!quiet || ++errors == 3))
            return st; /* the query fails: the kernel may still run */
        if (bc__now_ns() >= deadline)
            break;
        bc__wait_pause(res->stream->wait, &sleep_ns);
    }
    if (quiet) {
        bc__log(BC_LOG_WARN, "resident executor: the kernel still runs %llu ns after being told to stop",
                (unsigned long long)timeout_ns);
        return BC_ERR_TIMEOUT;
    }
    return BC_FAIL(BC_ERR_TIMEOUT, "bc_resident_stop", "the resident kernel still runs after %llu ns",
                   (unsigned long long)timeout_ns);
}

bc_status bc_resident_stop(bc_resident *res, uint64_t timeout_ns)
{
    if (res == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_stop", "res is NULL");
    return res->running ? stop_kernel(res, timeout_ns, 0) : BC_OK;
}

bc_status bc_resident_query(const bc_resident *res, bc_resident_info *out_info)
{
    if (res == NULL || out_info == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_resident_query", "res or out_info is NULL");
    bc_resident_info in;
    memset(&in, 0, sizeof in);
    in.config = res->prog.config;
    in.sm_count = res->cfg.sm_count;
    in.plans = res->prog.plans;
    in.barriers = res->prog.barriers;
    in.partial_bytes = res->prog.ws_bytes;
    in.operations = res->prog.count;
    in.steps_done = __atomic_load_n(res->done, __ATOMIC_ACQUIRE);
    in.running = res->running;
    *out_info = in;
    return BC_OK;
}

static void destroy_within(bc_resident *res, uint64_t bound_ns)
{
    if (res == NULL)
        return;
    const bc_status st = res->running ? stop_kernel(res, bound_ns, 1) : BC_OK;
    if (st != BC_OK && st != BC_ERR_DEVICE_LOST) {
        /* still running, or not known to have ended (a query that kept
         * failing): its program and doorbell stay allocated (the pools go
         * with the device), so no later allocation can hand them out under
         * the kernel, and closing the device leaves the kernel to the
         * context's end */
        res->dev->abandoned_kernels++;
    } else {
        bc_mem_free(res->dev, res->program);
        bc_host_free(res->dev, res->words);
    }
    bc__list_remove(&res->link);
    free(res);
}

void bc_resident_destroy(bc_resident *res) { destroy_within(res, BC_RESIDENT_STOP_BOUND_NS); }

void bc__resident_release(bc__link *node) { bc_resident_destroy((bc_resident *)node); }

void bc__resident_release_within(bc__link *node, uint64_t bound_ns)
{
    destroy_within((bc_resident *)node, bound_ns < BC_RESIDENT_STOP_BOUND_NS ? bound_ns : BC_RESIDENT_STOP_BOUND_NS);
}

void bc__resident_forget(bc__link *node)
{
    bc_resident *res = (bc_resident *)node;
    if (res->running) /* the host arena stays mapped: the kernel may still read the doorbell */
        __atomic_store_n(res->doorbell, res->rung | BC_RESIDENT_STOP, __ATOMIC_RELEASE);
    bc__list_remove(&res->link);
    free(res);
}
