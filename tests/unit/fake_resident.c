/* Fake driver: the resident executor's kernel, modelled by a host thread.
 *
 * A launch of a kernel named bc_resident_* (not captured) must carry the
 * cooperative attribute (the fake refuses it otherwise: the real kernel
 * could deadlock) and fit the occupancy the fake reports; it then starts a
 * thread that does what the kernel does at the doorbell: for each new
 * sequence number it runs the hook (fake_set_resident_hook: e.g. the GEMM
 * emulator), then writes the completion word; after a step with the stop
 * bit, or a stop bit alone, it ends. While it runs, cuStreamQuery on its
 * stream reports CUDA_ERROR_NOT_READY; once the stop bit is rung (and the
 * kernel is not stalled) the query waits for the thread to end, so that a
 * stop takes the same driver calls on every run (the fault sweep relies on
 * it). fake_set_resident_stall(1) freezes every such thread (a step that
 * does not complete; stop cannot finish either) until it is cleared, from
 * when it returns (it waits for each thread to see it). Destroying the
 * thread's context (or the last primary reference), or fake_reset, ends
 * it, as the real driver ends a context's kernels; so does an injected
 * sticky error (the real context would be lost). Freeing memory that
 * holds a running thread's doorbell, completion word or program ends it
 * too and counts a misuse. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_internal.h"
#include "resident_abi.h"

#define FAKE_MAX_RESIDENT 8

typedef struct fake_res {
    int used;
    pthread_t thread;
    CUcontext ctx;
    CUstream stream;
    bc_resident_params p;
    int kill;      /* atomic: end now */
    int running;   /* atomic: cleared by the thread as it ends */
    uint64_t iter; /* atomic: the thread's loop passes completed (fake_set_resident_stall waits on it) */
} fake_res;

static fake_res slots[FAKE_MAX_RESIDENT];
static int stall;                        /* atomic */
static fake_resident_hook hook;          /* atomic */
static uint64_t steps, misuse;           /* atomic */

static void *resident_main(void *arg)
{
    fake_res *r = arg;
    volatile uint64_t *db = (volatile uint64_t *)(uintptr_t)r->p.doorbell;
    volatile uint64_t *done = (volatile uint64_t *)(uintptr_t)r->p.done;
    uint64_t seen = r->p.first_seq;
    while (!__atomic_load_n(&r->kill, __ATOMIC_ACQUIRE)) {
        if (!__atomic_load_n(&stall, __ATOMIC_ACQUIRE)) {
            const uint64_t v = __atomic_load_n(db, __ATOMIC_ACQUIRE);
            if ((v & BC_RESIDENT_SEQ_MASK) != seen) {
                seen = v & BC_RESIDENT_SEQ_MASK;
                fake_resident_hook h = __atomic_load_n(&hook, __ATOMIC_ACQUIRE);
                if (h)
                    h(&r->p, seen);
                __atomic_add_fetch(&steps, 1, __ATOMIC_RELAXED);
                __atomic_store_n(done, seen, __ATOMIC_RELEASE);
            }
            if (v & BC_RESIDENT_STOP)
                break;
        }
        __atomic_add_fetch(&r->iter, 1, __ATOMIC_ACQ_REL);
        struct timespec ts = {0, 5000};
        nanosleep(&ts, NULL);
    }
    __atomic_store_n(&r->running, 0, __ATOMIC_RELEASE);
    return NULL;
}

/* Joins a slot's thread (ending it first when `kill`). Caller holds the lock. */
static void reap(fake_res *r, int kill)
{
    if (!r->used)
        return;
    if (kill)
        __atomic_store_n(&r->kill, 1, __ATOMIC_RELEASE);
    if (!kill && __atomic_load_n(&r->running, __ATOMIC_ACQUIRE))
        return;
    pthread_join(r->thread, NULL);
    memset(r, 0, sizeof *r);
}

static int occupancy(const struct CUfunc_st *f, int threads, size_t smem)
{
    const fake_device *d = &fake__s.dev[f->mod->ctx->device].cfg;
    if (threads <= 0 || threads > f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] ||
        smem > (size_t)f->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES])
        return 0;
    int by_smem = smem ? (int)((size_t)d->smem_optin / smem) : 32;
    int by_threads = 2048 / threads;
    int n = by_smem < by_threads ? by_smem : by_threads;
    return n < 32 ? n : 32;
}

CUresult fake__occupancy(int *out, CUfunction h, int threads, size_t smem)
{
    const struct CUfunc_st *f = fake__find_func(h);
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *out = occupancy(f, threads, smem);
    return CUDA_SUCCESS;
}

CUresult fake__resident_launch(const struct CUfunc_st *f, const CUlaunchConfig *cfg, void **params)
{
    int coop = 0;
    for (unsigned i = 0; i < cfg->numAttrs; i++)
        if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
            coop = cfg->attrs[i].value.cooperative != 0;
    if (!coop || params == NULL || params[0] == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const int sms = fake__s.dev[f->mod->ctx->device].cfg.sm_count;
    const uint64_t fit = (uint64_t)occupancy(f, (int)cfg->blockDimX, cfg->sharedMemBytes) * (uint64_t)sms;
    if ((uint64_t)cfg->gridDimX * cfg->gridDimY * cfg->gridDimZ > fit)
        return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    fake_res *r = NULL;
    for (int i = 0; i < FAKE_MAX_RESIDENT && r == NULL; i++) {
        reap(&slots[i], 0);
        if (!slots[i].used)
            r = &slots[i];
    }
    if (r == NULL)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    memset(r, 0, sizeof *r);
    memcpy(&r->p, params[0], sizeof r->p);
    r->ctx = f->mod->ctx;
    r->stream = cfg->hStream;
    r->running = 1;
    if (pthread_create(&r->thread, NULL, resident_main, r) != 0) {
        memset(r, 0, sizeof *r);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->used = 1;
    return CUDA_SUCCESS;
}

int fake__resident_busy(CUstream s)
{
    for (int i = 0; i < FAKE_MAX_RESIDENT; i++) {
        fake_res *r = &slots[i];
        if (!r->used || r->stream != s)
            continue;
        const volatile uint64_t *db = (const volatile uint64_t *)(uintptr_t)r->p.doorbell;
        for (int spins = 0; spins < 200000 && !__atomic_load_n(&stall, __ATOMIC_ACQUIRE) &&
                            __atomic_load_n(&r->running, __ATOMIC_ACQUIRE) &&
                            (__atomic_load_n(db, __ATOMIC_ACQUIRE) & BC_RESIDENT_STOP);
             spins++) {
            struct timespec ts = {0, 10000};
            nanosleep(&ts, NULL);
        }
        if (__atomic_load_n(&r->running, __ATOMIC_ACQUIRE))
            return 1;
    }
    return 0;
}

void fake__resident_end_context(CUcontext c)
{
    for (int i = 0; i < FAKE_MAX_RESIDENT; i++)
        if (slots[i].used && (c == NULL || slots[i].ctx == c))
            reap(&slots[i], 1);
}

static int inside(uint64_t p, uint64_t lo, size_t n) { return p >= lo && p - lo < n; }

void fake__resident_check_free(uint64_t lo, size_t n)
{
    for (int i = 0; i < FAKE_MAX_RESIDENT; i++) {
        fake_res *r = &slots[i];
        if (!r->used || !__atomic_load_n(&r->running, __ATOMIC_ACQUIRE))
            continue;
        if (inside(r->p.doorbell, lo, n) || inside(r->p.done, lo, n) || inside(r->p.program, lo, n)) {
            __atomic_add_fetch(&misuse, 1, __ATOMIC_RELAXED);
            reap(r, 1);
        }
    }
}

int fake__resident_live_ctx(CUcontext c)
{
    int n = 0;
    for (int i = 0; i < FAKE_MAX_RESIDENT; i++)
        n += slots[i].used && slots[i].ctx == c && __atomic_load_n(&slots[i].running, __ATOMIC_ACQUIRE);
    return n;
}

int fake__resident_live(void)
{
    int n = 0;
    for (int i = 0; i < FAKE_MAX_RESIDENT; i++)
        n += slots[i].used && __atomic_load_n(&slots[i].running, __ATOMIC_ACQUIRE);
    return n;
}

void fake__resident_reset(void)
{
    fake__resident_end_context(NULL);
    __atomic_store_n(&stall, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&hook, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&steps, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&misuse, 0, __ATOMIC_RELAXED);
}

void fake_set_resident_hook(fake_resident_hook fn) { __atomic_store_n(&hook, fn, __ATOMIC_RELEASE); }
/* Stalling waits until every running thread has begun a loop pass after
 * the flag was set (two passes completed since): a pass that read the flag
 * clear just before could otherwise still take a step rung after this
 * returns, and a stalled step's driver calls would vary from run to run. */
void fake_set_resident_stall(int on)
{
    __atomic_store_n(&stall, on, __ATOMIC_RELEASE);
    if (!on)
        return;
    for (int i = 0; i < FAKE_MAX_RESIDENT; i++) {
        fake_res *r = &slots[i];
        if (!r->used)
            continue;
        const uint64_t from = __atomic_load_n(&r->iter, __ATOMIC_ACQUIRE);
        for (int spins = 0; spins < 500000 && __atomic_load_n(&r->running, __ATOMIC_ACQUIRE) &&
                            __atomic_load_n(&r->iter, __ATOMIC_ACQUIRE) < from + 2;
             spins++) {
            struct timespec ts = {0, 10000};
            nanosleep(&ts, NULL);
        }
    }
}
uint64_t fake_resident_steps(void) { return __atomic_load_n(&steps, __ATOMIC_RELAXED); }
uint64_t fake_resident_misuse(void) { return __atomic_load_n(&misuse, __ATOMIC_RELAXED); }
