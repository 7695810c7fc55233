/* Device open: driver reference, context, arenas, kernel image (closing:
 * device_close.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "error.h"
#include "internal.h"
#include "module_internal.h"

#define DEFAULT_DEVICE_ARENA (256u << 20)
#define DEFAULT_HOST_ARENA (16u << 20)
#define DEFAULT_MAX_ALLOCATIONS 4096u

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

bc_status bc_device_config_default(bc_device_config *out_cfg)
{
    if (out_cfg == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_device_config_default", "out_cfg is NULL");
    memset(out_cfg, 0, sizeof *out_cfg);
    out_cfg->sched = BC_SCHED_SPIN;
    out_cfg->device_arena_bytes = DEFAULT_DEVICE_ARENA;
    out_cfg->host_arena_bytes = DEFAULT_HOST_ARENA;
    out_cfg->max_allocations = DEFAULT_MAX_ALLOCATIONS;
    return BC_OK;
}

static unsigned ctx_sched_flag(bc_sched_policy p)
{
    switch (p) {
    case BC_SCHED_YIELD:
        return CU_CTX_SCHED_YIELD;
    case BC_SCHED_BLOCK:
        return CU_CTX_SCHED_BLOCKING_SYNC;
    default:
        return CU_CTX_SCHED_SPIN;
    }
}

static bc_status query_attr(CUdevice d, CUdevice_attribute a, int *out)
{
    return BC_CU(cuDeviceGetAttribute, out, a, d);
}

/* Fills dev->info from the driver (once, at open). */
static bc_status query_info(bc_device *dev)
{
    bc_device_info *in = &dev->info;
    bc_status st = BC_CU(cuDeviceGetName, in->name, (int)sizeof in->name, dev->cudev);
    if (!st) st = query_attr(dev->cudev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &in->cc_major);
    if (!st) st = query_attr(dev->cudev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &in->cc_minor);
    if (!st) st = query_attr(dev->cudev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &in->sm_count);
    if (!st)
        st = query_attr(dev->cudev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                        &in->smem_per_block_optin);
    if (!st) st = query_attr(dev->cudev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &in->l2_bytes);
    if (!st) st = query_attr(dev->cudev, CU_DEVICE_ATTRIBUTE_INTEGRATED, &in->integrated);
    if (!st) st = BC_CU(cuDeviceTotalMem, &in->total_mem_bytes, dev->cudev);
    if (!st) st = BC_CU(cuDriverGetVersion, &in->driver_version);
    if (!st)
        st = BC_CU(cuCtxGetStreamPriorityRange, &in->stream_priority_least,
                   &in->stream_priority_greatest);
    in->name[sizeof in->name - 1] = '\0';
    in->ordinal = dev->cfg.ordinal;
    in->sched = dev->cfg.sched;
    in->primary_context = dev->cfg.use_primary_context != 0;
    return st;
}

static bc_status validate_config(const bc_device_config *c)
{
    if (c->ordinal < 0)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "ordinal", "device ordinal %d is negative", c->ordinal);
    if ((unsigned)c->sched > BC_SCHED_BLOCK)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "sched", "unknown scheduling policy %d", (int)c->sched);
    if (c->max_allocations > (1u << 24))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "max_allocations",
                       "max_allocations %u exceeds 2^24", c->max_allocations);
    if (c->kernel_groups & ~BC_KERNELS_ALL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "kernel_groups", "unknown kernel group bits 0x%x (known: 0x%x)",
                       c->kernel_groups & ~BC_KERNELS_ALL, BC_KERNELS_ALL);
    return BC_OK;
}

/* Creates or retains the context and makes it current; *out_previous is the
 * context that was current before, to restore should the open fail later. */
static bc_status open_context(bc_device *dev, CUcontext *out_previous)
{
    int count = 0;
    bc_status st = BC_CU(cuCtxGetCurrent, out_previous);
    if (st)
        return st;
    st = BC_CU(cuDeviceGetCount, &count);
    if (st)
        return st;
    if (dev->cfg.ordinal >= count)
        return BC_FAIL(BC_ERR_NO_DEVICE, "ordinal", "device ordinal %d requested, %d device(s) present",
                       dev->cfg.ordinal, count);
    st = BC_CU(cuDeviceGet, &dev->cudev, dev->cfg.ordinal);
    if (st)
        return st;
    if (dev->cfg.use_primary_context) {
        st = BC_CU(cuDevicePrimaryCtxRetain, &dev->ctx, dev->cudev);
        if (st)
            return st;
        st = BC_CU(cuCtxSetCurrent, dev->ctx);
        if (st) {
            BC_CU_CLEANUP(cuDevicePrimaryCtxRelease, dev->cudev);
            dev->ctx = NULL;
        }
        return st;
    }
    return BC_CU(cuCtxCreate, &dev->ctx, NULL, 0, ctx_sched_flag(dev->cfg.sched), dev->cudev);
}

void bc__device_close_context(bc_device *dev)
{
    if (dev->ctx == NULL)
        return;
    if (dev->cfg.use_primary_context)
        BC_CU_CLEANUP(cuDevicePrimaryCtxRelease, dev->cudev);
    else
        BC_CU_CLEANUP(cuCtxDestroy, dev->ctx);
    dev->ctx = NULL;
}

#define PAGE_BYTES ((size_t)4096)
#define HUGE_BYTES ((size_t)2 << 20)

/* Anonymous memory for the pinned host arena, registered with the driver.
 * The driver's first cuMemHostAlloc in a process costs ~1 ms whatever the
 * size (a second one ~6 us), registering an anonymous mapping ~0.2 ms for
 * 64 KiB and ~0.55 ms for 1 MiB; at 2 MiB and up the mapping is 2 MiB
 * aligned, advised to huge pages and touched before registration (16 MiB:
 * ~3.8 ms against ~8 ms for either cuMemHostAlloc or 4 KiB pages; H100,
 * tools/device/open_probe.c). Writes the mapping's address and length. */
static bc_status register_host_arena(size_t bytes, void **out_p, size_t *out_len)
{
    if (bytes > SIZE_MAX / 2) /* the roundings and the alignment slack below must not wrap */
        return BC_FAIL(BC_ERR_BAD_SIZE, "bc_device_open", "host_arena_bytes %zu is larger than any host can pin",
                       bytes);
    size_t len = (bytes + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1);
    int huge = len >= HUGE_BYTES;
    if (huge)
        len = (len + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
    size_t span = huge ? len + HUGE_BYTES : len;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "mmap", "cannot map %zu bytes for the pinned host arena", span);
    char *p = raw;
    if (huge) { /* keep the 2 MiB aligned part, give back the rest */
        p = (char *)(((uintptr_t)raw + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
        if (p > raw)
            munmap(raw, (size_t)(p - raw));
        if (raw + span > p + len)
            munmap(p + len, (size_t)(raw + span - (p + len)));
        (void)madvise(p, len, MADV_HUGEPAGE); /* advice: without huge pages it stays 4 KiB pages */
        for (size_t i = 0; i < len; i += PAGE_BYTES)
            p[i] = 0;
    }
    bc_status st = BC_CU(cuMemHostRegister, p, len, CU_MEMHOSTREGISTER_DEVICEMAP);
    if (st) {
        munmap(p, len);
        return st;
    }
    *out_p = p;
    *out_len = len;
    return BC_OK;
}

/* The pinned host arena: registered anonymous memory where the device
 * takes registered memory at its host address (both attributes), else
 * cuMemHostAlloc; either way device-mapped, its device address its host
 * address. */
static bc_status open_host_arena(bc_device *dev, size_t bytes)
{
    int can_register = 0, same_address = 0;
    bc_status st = query_attr(dev->cudev, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, &can_register);
    if (!st)
        st = query_attr(dev->cudev, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, &same_address);
    if (st)
        return st;
    if (can_register && same_address)
        return register_host_arena(bytes, &dev->host_arena, &dev->host_map_bytes);
    return BC_CU(cuMemHostAlloc, &dev->host_arena, bytes, CU_MEMHOSTALLOC_DEVICEMAP);
}

static void close_host_arena(bc_device *dev)
{
    if (dev->host_arena == NULL)
        return;
    if (dev->host_map_bytes) {
        /* a failed unregistration (a lost device) leaves the pages with the
         * driver, as a failed cuMemFreeHost leaves its memory: unmapped, the
         * range could be handed out again while the driver still holds it */
        if (BC_CU_CLEANUP(cuMemHostUnregister, dev->host_arena) == BC_OK)
            munmap(dev->host_arena, dev->host_map_bytes);
    } else {
        BC_CU_CLEANUP(cuMemFreeHost, dev->host_arena);
    }
    dev->host_arena = NULL;
    dev->host_map_bytes = 0;
}

static bc_status open_arenas(bc_device *dev)
{
    const bc_device_config *c = &dev->cfg;
    bc_status st = BC_OK;
    if (c->device_arena_bytes > 0) {
        st = BC_CU(cuMemAlloc, &dev->dev_arena, c->device_arena_bytes);
        if (st)
            goto fail;
        st = bc__tlsf_create(dev->dev_arena, c->device_arena_bytes, c->max_allocations, &dev->dev_pool);
        if (st)
            goto fail_dev_arena;
    }
    if (c->host_arena_bytes > 0) {
        st = open_host_arena(dev, c->host_arena_bytes);
        if (st)
            goto fail_dev_pool;
        st = bc__tlsf_create((uint64_t)(uintptr_t)dev->host_arena, c->host_arena_bytes,
                             c->max_allocations, &dev->host_pool);
        if (st)
            goto fail_host_arena;
    }
    return BC_OK;

fail_host_arena:
    close_host_arena(dev);
fail_dev_pool:
    bc__tlsf_destroy(dev->dev_pool);
    dev->dev_pool = NULL;
fail_dev_arena:
    if (dev->dev_arena)
        BC_CU_CLEANUP(cuMemFree, dev->dev_arena);
    dev->dev_arena = 0;
fail:
    return st;
}

void bc__device_close_arenas(bc_device *dev)
{
    bc__tlsf_destroy(dev->host_pool);
    dev->host_pool = NULL;
    close_host_arena(dev);
    bc__tlsf_destroy(dev->dev_pool);
    dev->dev_pool = NULL;
    if (dev->dev_arena)
        BC_CU_CLEANUP(cuMemFree, dev->dev_arena);
    dev->dev_arena = 0;
}

bc_status bc_device_open(const bc_device_config *cfg, bc_device **out_dev)
{
    if (out_dev == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_device_open", "out_dev is NULL");
    bc_device_config defaults;
    bc_device_config_default(&defaults);
    if (cfg == NULL)
        cfg = &defaults;
    bc_status st = validate_config(cfg);
    if (st)
        return st;

    if (bc__lost_result())
        return BC_LOST_FAIL("bc_device_open");

    double t_start = now_us();
    bc_device *dev = calloc(1, sizeof *dev);
    if (dev == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate the device object");
    dev->cfg = *cfg;
    if (dev->cfg.max_allocations == 0)
        dev->cfg.max_allocations = DEFAULT_MAX_ALLOCATIONS;
    bc__list_init(&dev->residents);
    bc__list_init(&dev->graphs);
    bc__list_init(&dev->plans);
    bc__list_init(&dev->events);
    bc__list_init(&dev->streams);
    bc__list_init(&dev->kernel_plans);
    bc__list_init(&dev->modules);

    bc__driver_timing dt;
    st = bc__driver_acquire(&dt);
    if (st)
        goto fail_free;
    dev->timings.dlopen_us = dt.dlopen_us;
    dev->timings.cuinit_us = dt.cuinit_us;

    double t0 = now_us();
    CUcontext previous = NULL;
    st = open_context(dev, &previous);
    if (st)
        goto fail_driver;
    st = query_info(dev);
    if (st)
        goto fail_context;
    st = BC_CU(cuStreamCreateWithPriority, &dev->xfer, CU_STREAM_NON_BLOCKING, 0);
    if (st)
        goto fail_context;
    dev->timings.context_us = now_us() - t0;

    t0 = now_us();
    st = open_arenas(dev);
    if (st)
        goto fail_xfer;
    dev->timings.arenas_us = now_us() - t0;

    dev->info.image_arch = "";
    if (!dev->cfg.skip_kernel_load) {
        bc__image_timing it;
        st = bc__image_load(dev, &dev->image, &it);
        if (st)
            goto fail_arenas;
        dev->timings.image_check_us = it.check_us;
        dev->timings.module_load_us = it.load_us;
        dev->info.image_arch = dev->image.arch;
    }
    dev->timings.total_us = now_us() - t_start;
    *out_dev = dev;
    return BC_OK;

fail_arenas:
    bc__device_close_arenas(dev);
fail_xfer:
    BC_CU_CLEANUP(cuStreamDestroy, dev->xfer);
fail_context:
    bc__device_close_context(dev);
    /* A retained primary context was made current by replacing the thread's
     * current one, and releasing it does not undo that: restore it. (A
     * created context was pushed, and destroying it popped it already.) */
    BC_CU_CLEANUP(cuCtxSetCurrent, previous);
fail_driver:
    bc__driver_release();
fail_free:
    free(dev);
    return st;
}

bc_status bc_device_bind_thread(bc_device *dev)
{
    if (dev == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_device_bind_thread", "dev is NULL");
    return BC_CU(cuCtxSetCurrent, dev->ctx);
}

bc_status bc_device_query(const bc_device *dev, bc_device_info *out_info)
{
    if (dev == NULL || out_info == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_device_query", "dev or out_info is NULL");
    *out_info = dev->info;
    return BC_OK;
}

bc_status bc_device_open_timings(const bc_device *dev, bc_open_timings *out_timings)
{
    if (dev == NULL || out_timings == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_device_open_timings", "dev or out_timings is NULL");
    *out_timings = dev->timings;
    return BC_OK;
}

bc_status bc_driver_version(int *out_version)
{
    if (out_version == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_driver_version", "out_version is NULL");
    bc_status st = bc__driver_acquire(NULL);
    if (st)
        return st;
    int v = 0;
    st = BC_CU(cuDriverGetVersion, &v);
    bc__driver_release();
    if (!st)
        *out_version = v;
    return st;
}

bc_status bc_device_count(int *out_count)
{
    if (out_count == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_device_count", "out_count is NULL");
    bc_status st = bc__driver_acquire(NULL);
    if (st)
        return st;
    int n = 0;
    st = BC_CU(cuDeviceGetCount, &n);
    bc__driver_release();
    if (!st)
        *out_count = n;
    return st;
}
