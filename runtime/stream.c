/* Streams, bounded waits and events. */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "error.h"
#include "internal.h"

#define BLOCK_SLEEP_MAX_NS 100000u

uint64_t bc__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bc__wait_pause(bc_sched_policy policy, uint32_t *sleep_ns)
{
    if (policy == BC_SCHED_YIELD) {
        sched_yield();
    } else if (policy == BC_SCHED_BLOCK) {
        struct timespec ts = {0, (long)*sleep_ns};
        nanosleep(&ts, NULL);
        *sleep_ns = *sleep_ns >= BLOCK_SLEEP_MAX_NS / 2 ? BLOCK_SLEEP_MAX_NS : *sleep_ns * 2;
    }
}

static bc_status stream_new(bc_device *dev, CUstream handle, int owned, bc_stream **out_stream)
{
    bc_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate a stream object");
    s->dev = dev;
    s->handle = handle;
    s->owned = owned;
    s->wait = dev->cfg.sched;
    bc__list_push(&dev->streams, &s->link);
    *out_stream = s;
    return BC_OK;
}

bc_status bc_stream_create(bc_device *dev, int priority, bc_stream **out_stream,
                           int *out_effective_priority)
{
    if (dev == NULL || out_stream == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_stream_create", "dev or out_stream is NULL");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_stream_create");
    /* Priorities run from `greatest` (numerically smallest) to `least`. */
    int p = priority;
    if (p < dev->info.stream_priority_greatest)
        p = dev->info.stream_priority_greatest;
    if (p > dev->info.stream_priority_least)
        p = dev->info.stream_priority_least;
    CUstream h = NULL;
    bc_status st = BC_CU(cuStreamCreateWithPriority, &h, CU_STREAM_NON_BLOCKING, p);
    if (st)
        return st;
    bc_stream *s = NULL;
    st = stream_new(dev, h, 1, &s);
    if (st) {
        BC_CU_CLEANUP(cuStreamDestroy, h);
        return st;
    }
    *out_stream = s;
    if (out_effective_priority)
        *out_effective_priority = p;
    return BC_OK;
}

/* cuStreamGetCtx_v12050 takes a third parameter (a green context): the
 * table must keep asking for the two-parameter v9020 form (driver_list.h). */
_Static_assert(BC_CUDA_ABI_VERSION < 12050, "cuStreamGetCtx's table entry would get the v12050 form");

bc_status bc_stream_wrap(bc_device *dev, CUstream handle, bc_stream **out_stream)
{
    if (dev == NULL || out_stream == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_stream_wrap", "dev or out_stream is NULL");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_stream_wrap");
    if (handle != NULL && handle != CU_STREAM_LEGACY && handle != CU_STREAM_PER_THREAD) {
        /* the calls that take a stream trust its device: a stream of another context is refused here */
        CUcontext ctx = NULL;
        bc_status st = BC_CU(cuStreamGetCtx, handle, &ctx);
        if (st)
            return st;
        if (ctx != dev->ctx)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "s", "the stream belongs to another context than the device's");
    }
    return stream_new(dev, handle, 0, out_stream);
}

void bc_stream_destroy(bc_stream *s)
{
    if (s == NULL)
        return;
    if (s->owned)
        BC_CU_CLEANUP(cuStreamDestroy, s->handle);
    bc__list_remove(&s->link);
    free(s);
}

CUstream bc_stream_handle(const bc_stream *s) { return s ? s->handle : NULL; }

bc_status bc_stream_set_wait_policy(bc_stream *s, bc_sched_policy policy)
{
    if (s == NULL || (unsigned)policy > BC_SCHED_BLOCK)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_stream_set_wait_policy",
                       "stream is NULL or policy %d unknown", (int)policy);
    s->wait = policy;
    return BC_OK;
}

bc_status bc_stream_query(bc_stream *s)
{
    if (s == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_stream_query", "stream is NULL");
    if (bc__dev_lost(s->dev))
        return BC_LOST_FAIL("bc_stream_query");
    return bc__dev_note(s->dev, BC_CU(cuStreamQuery, s->handle));
}

bc_status bc_stream_wait(bc_stream *s, uint64_t timeout_ns)
{
    if (s == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_stream_wait", "stream is NULL");
    if (bc__dev_lost(s->dev))
        return BC_LOST_FAIL("bc_stream_wait");
    const uint64_t start = bc__now_ns();
    const uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
    uint32_t sleep_ns = BC__WAIT_SLEEP_MIN_NS;
    for (;;) {
        bc_status st = BC_CU(cuStreamQuery, s->handle);
        if (st != BC_ERR_NOT_READY)
            return bc__dev_note(s->dev, st);
        if (bc__now_ns() >= deadline)
            return BC_FAIL(BC_ERR_TIMEOUT, "bc_stream_wait", "stream still busy after %llu ns",
                           (unsigned long long)timeout_ns);
        bc__wait_pause(s->wait, &sleep_ns);
    }
}

bc_status bc_event_create(bc_device *dev, bc_event **out_event)
{
    if (dev == NULL || out_event == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_event_create", "dev or out_event is NULL");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_event_create");
    bc_event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate an event object");
    bc_status st = BC_CU(cuEventCreate, &e->handle, CU_EVENT_DEFAULT);
    if (st) {
        free(e);
        return st;
    }
    e->dev = dev;
    bc__list_push(&dev->events, &e->link);
    *out_event = e;
    return BC_OK;
}

void bc_event_destroy(bc_event *e)
{
    if (e == NULL)
        return;
    BC_CU_CLEANUP(cuEventDestroy, e->handle);
    bc__list_remove(&e->link);
    free(e);
}

bc_status bc_event_record(bc_event *e, bc_stream *s)
{
    if (e == NULL || s == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_event_record", "event or stream is NULL");
    if (BC_STREAM_ON(s, e->dev, "the event"))
        return BC_ERR_INVALID_ARGUMENT;
    if (bc__dev_lost(s->dev))
        return BC_LOST_FAIL("bc_event_record");
    return bc__dev_note(s->dev, BC_CU(cuEventRecord, e->handle, s->handle));
}

bc_status bc_event_elapsed_ms(const bc_event *start, const bc_event *end, float *out_ms)
{
    if (start == NULL || end == NULL || out_ms == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_event_elapsed_ms", "NULL argument");
    if (start->dev != end->dev)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "end", "the events belong to two devices");
    if (bc__dev_lost(start->dev))
        return BC_LOST_FAIL("bc_event_elapsed_ms");
    float ms = 0.0f;
    bc_status st = BC_CU(cuEventElapsedTime, &ms, start->handle, end->handle);
    if (!st)
        *out_ms = ms;
    return st;
}
