/* Fake driver: version, cuInit, error names, devices and contexts.
 *
 * Each thread has a context stack, as in the real driver: cuCtxCreate pushes
 * the new context; cuCtxSetCurrent replaces the top (pushes onto an empty
 * stack; NULL pops); destroying the context on top pops it, so the one below
 * becomes current again. A primary context is a stable handle per device,
 * alive while its retain count is above zero; a dead context on top of the
 * stack reads as no current context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_internal.h"

#define STACK_DEPTH 16

static _Thread_local CUcontext stack[STACK_DEPTH];
static _Thread_local int depth;

void fake__clear_current(void) { depth = 0; }

static CUcontext top(void) { return depth ? stack[depth - 1] : NULL; }

/* ---------------------------------------------------- version, init, errors */

static CUresult fake_cuDriverGetVersion(int *v)
{
    FAKE_ENTER_ANYTIME(cuDriverGetVersion);
    if (v == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    *v = fake__s.driver_version;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuInit(unsigned flags)
{
    FAKE_ENTER_ANYTIME(cuInit);
    if (flags != 0)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult r = fake__s.init_result;
    if (r == CUDA_SUCCESS && fake__s.ndev == 0)
        r = CUDA_ERROR_NO_DEVICE;
    if (r == CUDA_SUCCESS)
        fake__s.initialized = 1;
    FAKE_RETURN(r);
}

#define ERRORS(E)                                                                               \
    E(CUDA_SUCCESS, "no error")                                                                 \
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                             \
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                                \
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                       \
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                         \
    E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                                 \
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                               \
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                      \
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                               \
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                     \
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device") \
    E(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered")                      \
    E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed")                                   \
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain.") \
    E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid")                              \
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                     \
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state")       \
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                           \
    E(CUDA_ERROR_NOT_READY, "device not ready")                                                 \
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                   \
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch")            \
    E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated")                     \
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                                  \
    E(CUDA_ERROR_ASSERT, "device-side assert triggered")                                        \
    E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error")                                  \
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered")                 \
    E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address")                                      \
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space") \
    E(CUDA_ERROR_INVALID_PC, "invalid program counter")                                         \
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                   \
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                                      \
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                      \
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture") \
    E(CUDA_ERROR_INVALID_CLUSTER_SIZE, "invalid cluster size")                                  \
    E(CUDA_ERROR_UNKNOWN, "unknown error")

static CUresult fake_cuGetErrorName(CUresult error, const char **str)
{
    FAKE_ENTER_ANYTIME(cuGetErrorName);
    if (str == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    switch (error) {
#define E(code, text)                                                                           \
    case code:                                                                                  \
        *str = #code;                                                                           \
        FAKE_RETURN(CUDA_SUCCESS);
        ERRORS(E)
#undef E
    default:
        *str = NULL;
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    }
}

static CUresult fake_cuGetErrorString(CUresult error, const char **str)
{
    FAKE_ENTER_ANYTIME(cuGetErrorString);
    if (str == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    switch (error) {
#define E(code, text)                                                                           \
    case code:                                                                                  \
        *str = text;                                                                            \
        FAKE_RETURN(CUDA_SUCCESS);
        ERRORS(E)
#undef E
    default:
        *str = NULL;
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    }
}

/* ---------------------------------------------------------------- devices */

static int valid_device(CUdevice d) { return d >= 0 && d < fake__s.ndev; }

static CUresult fake_cuDeviceGetCount(int *count)
{
    FAKE_ENTER(cuDeviceGetCount);
    if (count == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    *count = fake__s.ndev;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuDeviceGet(CUdevice *d, int ordinal)
{
    FAKE_ENTER(cuDeviceGet);
    if (d == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(ordinal))
        FAKE_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *d = ordinal;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice d)
{
    FAKE_ENTER(cuDeviceGetName);
    if (name == NULL || len <= 0)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(d))
        FAKE_RETURN(CUDA_ERROR_INVALID_DEVICE);
    snprintf(name, (size_t)len, "%s", fake__s.dev[d].cfg.name);
    FAKE_RETURN(CUDA_SUCCESS);
}

static int device_attr(const fake_dev_state *ds, CUdevice_attribute a)
{
    const fake_device *c = &ds->cfg;
    if (ds->attr_set[a])
        return ds->attr_val[a];
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return c->cc_major;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return c->cc_minor;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return c->sm_count;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return c->smem_optin;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return c->smem_optin + 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return c->l2_bytes;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return c->cc_major >= 9;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return (int)(ds - fake__s.dev);
    default: return 0;
    }
}

static CUresult fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute a, CUdevice d)
{
    FAKE_ENTER(cuDeviceGetAttribute);
    if (pi == NULL || (unsigned)a >= CU_DEVICE_ATTRIBUTE_MAX)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(d))
        FAKE_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *pi = device_attr(&fake__s.dev[d], a);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    FAKE_ENTER(cuDeviceTotalMem);
    if (bytes == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(d))
        FAKE_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *bytes = fake__s.dev[d].cfg.total_mem;
    FAKE_RETURN(CUDA_SUCCESS);
}

/* --------------------------------------------------------------- contexts */

int fake__ctx_alive(CUcontext c)
{
    if (c == NULL)
        return 0;
    for (int i = 0; i < fake__s.ndev; i++)
        if (c == &fake__s.dev[i].primary)
            return fake__s.dev[i].primary_refs > 0;
    return fake__find(K_CTX, c);
}

CUcontext fake__current(void) { return fake__ctx_alive(top()) ? top() : NULL; }

static CUresult fake_cuCtxCreate(CUcontext *pctx, CUexecAffinityParam *params, int nparams,
                                 unsigned flags, CUdevice d)
{
    FAKE_ENTER(cuCtxCreate);
    if (pctx == NULL || (nparams > 0 && params == NULL) || nparams < 0)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    if (sched != CU_CTX_SCHED_AUTO && sched != CU_CTX_SCHED_SPIN && sched != CU_CTX_SCHED_YIELD &&
        sched != CU_CTX_SCHED_BLOCKING_SYNC)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(d))
        FAKE_RETURN(CUDA_ERROR_INVALID_DEVICE);
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (c == NULL || depth == STACK_DEPTH) {
        free(c);
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    }
    c->device = d;
    c->flags = flags;
    fake__link(K_CTX, &c->o);
    stack[depth++] = c;
    *pctx = c;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuCtxDestroy(CUcontext ctx)
{
    FAKE_ENTER_RELEASE(cuCtxDestroy);
    if (!fake__find(K_CTX, ctx))
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fake__wait_busy(&ctx->busy);
    if (depth && top() == ctx)
        depth--;
    fake__resident_end_context(ctx); /* the context's kernels end with it */
    fake__unlink(&ctx->o);
    free(ctx);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx)
{
    FAKE_ENTER(cuCtxSetCurrent);
    if (ctx != NULL && !fake__ctx_alive(ctx))
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (ctx == NULL) {
        if (depth)
            depth--;
    } else if (depth) {
        stack[depth - 1] = ctx;
    } else {
        stack[depth++] = ctx;
    }
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuCtxGetCurrent(CUcontext *pctx)
{
    FAKE_ENTER(cuCtxGetCurrent);
    if (pctx == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    *pctx = fake__current();
    FAKE_RETURN(CUDA_SUCCESS);
}

/* Waits for every kernel of the current context (fake_set_kernel_duration_ms),
 * without holding the fake's lock meanwhile; with fake_set_busy(FAKE_BUSY_FOREVER)
 * it waits until that is lifted; and, as the driver does, for the context's
 * resident kernels to end (at most 3 s here, so that a test that forgets
 * to stop one fails rather than hangs). */
static CUresult fake_cuCtxSynchronize(void)
{
    FAKE_ENTER(cuCtxSynchronize);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fake_busy b = c->busy;
    fake__unlock();
    fake__wait_busy(&b);
    while (__atomic_load_n(&fake__s.busy, __ATOMIC_ACQUIRE) == FAKE_BUSY_FOREVER) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    for (int ms = 0; ms < 3000 && fake__resident_live_ctx(c); ms++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fake__lock();
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    FAKE_ENTER(cuCtxGetStreamPriorityRange);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (least)
        *least = fake__s.dev[c->device].cfg.prio_least;
    if (greatest)
        *greatest = fake__s.dev[c->device].cfg.prio_greatest;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d)
{
    FAKE_ENTER(cuDevicePrimaryCtxRetain);
    if (pctx == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(d))
        FAKE_RETURN(CUDA_ERROR_INVALID_DEVICE);
    fake__s.dev[d].primary_refs++;
    *pctx = &fake__s.dev[d].primary;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice d)
{
    FAKE_ENTER_RELEASE(cuDevicePrimaryCtxRelease);
    if (!valid_device(d))
        FAKE_RETURN(CUDA_ERROR_INVALID_DEVICE);
    if (fake__s.dev[d].primary_refs == 1)
        fake__wait_busy(&fake__s.dev[d].primary.busy);
    if (fake__s.dev[d].primary_refs == 0)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (--fake__s.dev[d].primary_refs == 0)
        fake__resident_end_context(&fake__s.dev[d].primary);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
    FAKE_ENTER(cuDevicePrimaryCtxGetState);
    if (flags == NULL || active == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(d))
        FAKE_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *flags = fake__s.dev[d].primary.flags;
    *active = fake__s.dev[d].primary_refs > 0;
    FAKE_RETURN(CUDA_SUCCESS);
}

CUcontext fake_current_context(void)
{
    fake__lock();
    CUcontext c = fake__current();
    fake__unlock();
    return c;
}

int fake_ctx_query(CUcontext c, fake_ctx_info *out)
{
    fake__lock();
    int alive = fake__ctx_alive(c);
    if (alive && out) {
        out->device = c->device;
        out->flags = c->flags;
        out->primary = c->primary;
    }
    fake__unlock();
    return alive;
}

int fake_primary_refcount(int ordinal)
{
    if (ordinal < 0 || ordinal >= FAKE_MAX_DEVICES)
        return 0;
    return fake__s.dev[ordinal].primary_refs;
}

void fake__fill_core(bc__driver *t)
{
    t->cuDriverGetVersion = fake_cuDriverGetVersion;
    t->cuInit = fake_cuInit;
    t->cuGetErrorName = fake_cuGetErrorName;
    t->cuGetErrorString = fake_cuGetErrorString;
    t->cuDeviceGetCount = fake_cuDeviceGetCount;
    t->cuDeviceGet = fake_cuDeviceGet;
    t->cuDeviceGetName = fake_cuDeviceGetName;
    t->cuDeviceGetAttribute = fake_cuDeviceGetAttribute;
    t->cuDeviceTotalMem = fake_cuDeviceTotalMem;
    t->cuCtxCreate = fake_cuCtxCreate;
    t->cuCtxDestroy = fake_cuCtxDestroy;
    t->cuCtxSetCurrent = fake_cuCtxSetCurrent;
    t->cuCtxGetCurrent = fake_cuCtxGetCurrent;
    t->cuCtxGetStreamPriorityRange = fake_cuCtxGetStreamPriorityRange;
    t->cuCtxSynchronize = fake_cuCtxSynchronize;
    t->cuDevicePrimaryCtxRetain = fake_cuDevicePrimaryCtxRetain;
    t->cuDevicePrimaryCtxRelease = fake_cuDevicePrimaryCtxRelease;
    t->cuDevicePrimaryCtxGetState = fake_cuDevicePrimaryCtxGetState;
}
