/* Internal: the concrete objects behind the opaque handles. */
#ifndef BC_RUNTIME_INTERNAL_H
#define BC_RUNTIME_INTERNAL_H

#include <stddef.h>

#include "barecuda/device.h"
#include "barecuda/mem.h"
#include "barecuda/stream.h"
#include "driver.h"
#include "image.h"
#include "ptrcheck.h"
#include "tlsf.h"

/* Intrusive doubly-linked list: every object made from a device is linked
 * into it so that bc_device_close can release what the caller forgot. */
typedef struct bc__link {
    struct bc__link *prev, *next;
} bc__link;

static inline void bc__list_init(bc__link *head) { head->prev = head->next = head; }

static inline void bc__list_push(bc__link *head, bc__link *node)
{
    node->prev = head->prev;
    node->next = head;
    head->prev->next = node;
    head->prev = node;
}

static inline void bc__list_remove(bc__link *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = node;
}

struct bc_device {
    bc_device_config cfg;
    CUdevice cudev;
    CUcontext ctx;
    bc_device_info info;
    bc_open_timings timings;
    CUstream xfer; /* the synchronous copies' stream (see mem.c) */

    CUdeviceptr dev_arena;
    bc__tlsf *dev_pool;
    void *host_arena;
    size_t host_map_bytes; /* the arena's mapping when registered (device.c), 0 when from cuMemHostAlloc */
    bc__tlsf *host_pool;

    bc__image image; /* loaded kernels; image.mod == NULL when skipped */
    bc__ptr_registry registry; /* bc_mem_register'ed ranges */
    int lost; /* a call on this device returned a sticky error (see driver.h: the process is lost too) */

    /* live objects, released in reverse order by bc_device_close */
    bc__link residents, graphs, plans, events, streams;
    bc__link kernel_plans, modules; /* released after graphs and GEMM plans, modules last */
    /* resident kernels that did not stop when asked: close abandons the
     * device (bc_device_close_timeout's path) instead of waiting for them */
    int abandoned_kernels;
};

struct bc_stream {
    bc__link link;
    bc_device *dev;
    CUstream handle;
    int owned;
    bc_sched_policy wait;
};

struct bc_event {
    bc__link link;
    bc_device *dev;
    CUevent handle;
};

/* 1 once dev, or any device of the process, saw a sticky error: new work
 * is refused at once (BC_LOST_FAIL) instead of being handed to a driver
 * that refuses it too. */
static inline int bc__dev_lost(const bc_device *dev) { return dev->lost || bc__lost_result() != 0; }

/* Records a sticky failure of a call made for dev, and passes `st` on. */
static inline bc_status bc__dev_note(bc_device *dev, bc_status st)
{
    if (st == BC_ERR_DEVICE_LOST)
        dev->lost = 1;
    return st;
}

/* device.c, for device_close.c: releases the context (dev->ctx = NULL
 * after) and the arenas with their pools. Cleanup calls only. */
void bc__device_close_context(bc_device *dev);
void bc__device_close_arenas(bc_device *dev);

/* Used by bc_device_close; each frees the object and unlinks it. */
void bc__plan_release(bc__link *node);
void bc__graph_release(bc__link *node);
void bc__resident_release(bc__link *node);
/* bc__resident_release with its stop bounded by min(bound_ns, BC_RESIDENT_STOP_BOUND_NS)
 * (bc_device_close_timeout: what is left of its bound) */
void bc__resident_release_within(bc__link *node, uint64_t bound_ns);
/* The abandoning close: tells a running kernel to stop, frees host memory only. */
void bc__resident_forget(bc__link *node);

/* Monotonic clock, nanoseconds. */
uint64_t bc__now_ns(void);

/* One pause between two polls of a bounded wait under `policy`: nothing
 * (spin), sched_yield (yield), or a sleep of *sleep_ns that doubles up to
 * 100 us (block; start it at BC__WAIT_SLEEP_MIN_NS). */
#define BC__WAIT_SLEEP_MIN_NS 2000u
void bc__wait_pause(bc_sched_policy policy, uint32_t *sleep_ns);

#endif
