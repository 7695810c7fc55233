/* Closing a device: everything made from it released in reverse order of
 * creation, or, with a bound, abandoned when its work does not finish. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "error.h"
#include "internal.h"
#include "module_internal.h"

/* CLOCK_MONOTONIC, as the condition variable of wait_idle. */
static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void release_list(bc__link *head, void (*release)(bc__link *))
{
    while (head->prev != head)
        release(head->prev); /* newest first; release unlinks */
}

static void stream_release(bc__link *node) { bc_stream_destroy((bc_stream *)node); }
static void event_release(bc__link *node) { bc_event_destroy((bc_event *)node); }

/* The thread's current context, and dev's made current. */
static CUcontext enter(const bc_device *dev)
{
    CUcontext previous = NULL;
    if (BC_CU_CLEANUP(cuCtxGetCurrent, &previous) != BC_OK)
        previous = NULL;
    BC_CU_CLEANUP(cuCtxSetCurrent, dev->ctx);
    return previous;
}

/* Leave the thread as we found it, unless it was on the context closed. */
static void leave(CUcontext previous, CUcontext closing)
{
    BC_CU_CLEANUP(cuCtxSetCurrent, previous == closing ? NULL : previous);
}

static void close_all(bc_device *dev, CUcontext previous)
{
    release_list(&dev->residents, bc__resident_release); /* first: stopping needs their streams */
    release_list(&dev->graphs, bc__graph_release);
    release_list(&dev->plans, bc__plan_release);
    release_list(&dev->kernel_plans, bc__kernel_plan_release);
    release_list(&dev->events, event_release);
    release_list(&dev->streams, stream_release);
    release_list(&dev->modules, bc__module_release);
    bc__image_unload(&dev->image);
    bc__device_close_arenas(dev);
    bc__registry_free(&dev->registry);
    BC_CU_CLEANUP(cuStreamDestroy, dev->xfer);
    CUcontext closing = dev->ctx;
    bc__device_close_context(dev);
    leave(previous, closing);
    bc__driver_release();
    free(dev);
}

static void abandon(bc_device *dev, CUcontext previous);

void bc_device_close(bc_device *dev)
{
    if (dev == NULL)
        return;
    CUcontext previous = enter(dev);
    release_list(&dev->residents, bc__resident_release); /* each stopped within its bound, or abandoned */
    if (dev->abandoned_kernels) {
        /* a resident kernel did not stop: freeing memory, unloading the
         * module or destroying the context would each wait for it (for
         * ever, if it never ends) */
        bc__log(BC_LOG_WARN,
                "bc_device_close: %d resident kernel(s) did not stop; the device's context, memory and kernels "
                "are left to the driver until the process ends",
                dev->abandoned_kernels);
        abandon(dev, previous);
        return;
    }
    close_all(dev, previous);
}

/* Fallback of wait_idle: polls every stream barecuda knows on dev. */
static bc_status poll_streams(bc_device *dev, double deadline_us)
{
    for (;;) {
        int busy = 0;
        bc_status st = BC_CU_CLEANUP(cuStreamQuery, dev->xfer);
        for (bc__link *l = dev->streams.next; l != &dev->streams && st != BC_ERR_DEVICE_LOST; l = l->next) {
            bc_status q = BC_CU_CLEANUP(cuStreamQuery, ((bc_stream *)l)->handle);
            busy |= q == BC_ERR_NOT_READY;
            if (q == BC_ERR_DEVICE_LOST)
                st = q;
        }
        busy |= st == BC_ERR_NOT_READY;
        if (st == BC_ERR_DEVICE_LOST)
            return st;
        if (!busy)
            return BC_OK;
        if (now_us() >= deadline_us)
            return BC_ERR_TIMEOUT;
        sched_yield();
    }
}

/* cuCtxSynchronize on a helper thread, so that the wait covers every stream
 * of the context (destroyed ones, the legacy stream, the caller's) and still
 * has a bound. A helper that outlives its bound stays blocked in the driver
 * until the work ends (or the process does) and frees the probe itself. */
typedef struct sync_probe {
    CUcontext ctx;
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    int done, abandoned;
    CUresult result;
} sync_probe;

static void *sync_thread(void *arg)
{
    sync_probe *p = arg;
    CUresult r = bc__drv->cuCtxSetCurrent(p->ctx);
    if (r == CUDA_SUCCESS)
        r = bc__drv->cuCtxSynchronize();
    pthread_mutex_lock(&p->lock);
    p->done = 1;
    p->result = r;
    const int abandoned = p->abandoned;
    pthread_cond_signal(&p->done_cv);
    pthread_mutex_unlock(&p->lock);
    if (abandoned) {
        pthread_cond_destroy(&p->done_cv);
        pthread_mutex_destroy(&p->lock);
        free(p);
    }
    return NULL;
}

/* Waits until all work of dev's context has finished, it turned out lost,
 * or the time ran out (BC_OK, BC_ERR_DEVICE_LOST, BC_ERR_TIMEOUT). */
static bc_status wait_idle(bc_device *dev, uint64_t timeout_ns)
{
    const double deadline_us = now_us() + (double)timeout_ns * 1e-3;
    sync_probe *p = calloc(1, sizeof *p);
    pthread_t t;
    pthread_attr_t attr;
    int started = 0;
    if (p != NULL && pthread_attr_init(&attr) == 0) {
        pthread_condattr_t ca;
        p->ctx = dev->ctx;
        pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->done_cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &attr, sync_thread, p) == 0;
        pthread_attr_destroy(&attr);
        if (!started) {
            pthread_cond_destroy(&p->done_cv);
            pthread_mutex_destroy(&p->lock);
        }
    }
    if (!started) { /* no thread: what barecuda knows of, polled */
        free(p);
        return poll_streams(dev, deadline_us);
    }
    const double d = deadline_us * 1e-6;
    struct timespec until = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    pthread_mutex_lock(&p->lock);
    while (!p->done) {
        int rc = pthread_cond_timedwait(&p->done_cv, &p->lock, &until);
        if (rc == ETIMEDOUT)
            break;
    }
    const int done = p->done;
    const CUresult r = p->result;
    p->abandoned = !done;
    pthread_mutex_unlock(&p->lock);
    if (!done)
        return BC_ERR_TIMEOUT;
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->lock);
    free(p);
    bc_status st = BC_CU_CLEANUP_RESULT(r, "cuCtxSynchronize");
    return st == BC_ERR_DEVICE_LOST ? st : BC_OK;
}

/* Work still runs: free what is barecuda's own host memory and leave every
 * driver object (context, arenas, module, streams, events, graphs) to the
 * driver, which reclaims them when the process ends. No call that could
 * block: freeing device memory or destroying the context waits for the
 * running kernels. The driver reference is kept: libcuda must stay loaded
 * under a live context. */
static void abandon(bc_device *dev, CUcontext previous)
{
    release_list(&dev->residents, bc__resident_forget); /* told to stop; memory stays with the context */
    release_list(&dev->plans, bc__plan_release); /* host memory only */
    release_list(&dev->kernel_plans, bc__kernel_plan_release); /* host memory only */
    while (dev->modules.prev != &dev->modules) /* the modules stay loaded in the abandoned context */
        bc__module_forget((bc_module *)dev->modules.prev);
    bc__module_forget(dev->image.sk);
    bc__module_forget(dev->image.groups);
    bc__module_forget(dev->image.mod);
    while (dev->events.prev != &dev->events) {
        bc__link *l = dev->events.prev;
        bc__list_remove(l);
        free(l);
    }
    while (dev->streams.prev != &dev->streams) {
        bc__link *l = dev->streams.prev;
        bc__list_remove(l);
        free(l);
    }
    /* graphs keep their host memory (a few hundred bytes each): releasing
     * one destroys driver objects */
    while (dev->graphs.prev != &dev->graphs)
        bc__list_remove(dev->graphs.prev);
    bc__tlsf_destroy(dev->host_pool);
    bc__tlsf_destroy(dev->dev_pool);
    bc__registry_free(&dev->registry);
    leave(previous, dev->ctx);
    free(dev);
}

bc_status bc_device_close_timeout(bc_device *dev, uint64_t timeout_ns)
{
    if (dev == NULL)
        return BC_OK;
    CUcontext previous = enter(dev);
    bc_status st = BC_ERR_DEVICE_LOST;
    if (!dev->lost && !bc__lost_result()) {
        /* resident executors first: their kernels end only when told to, so waiting for the streams would
         * spend the whole bound on an idle executor */
        const uint64_t start = bc__now_ns();
        const int abandoned = dev->abandoned_kernels; /* by earlier destroys: the stream wait below covers them */
        uint64_t left = timeout_ns;
        while (dev->residents.prev != &dev->residents && dev->abandoned_kernels == abandoned) {
            bc__resident_release_within(dev->residents.prev, left);
            const uint64_t spent = bc__now_ns() - start;
            left = spent < timeout_ns ? timeout_ns - spent : 0;
        }
        st = dev->abandoned_kernels != abandoned ? BC_ERR_TIMEOUT
             : left > 0                          ? wait_idle(dev, left)
                                                 : poll_streams(dev, now_us()); /* the bound spent: one look */
    }
    if (st == BC_ERR_TIMEOUT) {
        abandon(dev, previous);
        return BC_FAIL(BC_ERR_TIMEOUT, "bc_device_close_timeout",
                       "work was still running after %llu ns, or a resident kernel's end could not be confirmed "
                       "(the log says which): the device's context, memory and kernels were left to the driver "
                       "(reclaimed when the process ends); restart the process to get the GPU back in a known "
                       "state",
                       (unsigned long long)timeout_ns);
    }
    close_all(dev, previous);
    return st == BC_ERR_DEVICE_LOST ? BC_LOST_FAIL("bc_device_close_timeout") : BC_OK;
}
