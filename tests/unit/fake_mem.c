/* Fake driver: device and pinned host memory, copies, streams, events.
 *
 * Device memory is host memory (posix_memalign, 512-byte aligned) whose
 * address is the CUdeviceptr, so copies really copy. Every copy or memset
 * must lie inside one live allocation. Stream work completes at once unless
 * fake_set_busy says otherwise; a stream being captured records its work
 * as graph nodes instead of doing it. */
#include <stdlib.h>
#include <string.h>

#include "fake_internal.h"

/* ---------------------------------------------------------------- memory */

static fake_alloc *find_alloc(int kind, uintptr_t start, size_t len)
{
    fake_obj *head = &fake__s.live[kind];
    for (fake_obj *o = head->next; o != head; o = o->next) {
        fake_alloc *a = (fake_alloc *)o;
        uintptr_t base = (uintptr_t)a->mem;
        if (start >= base && start - base <= a->size && len <= a->size - (start - base))
            return a;
    }
    return NULL;
}

static fake_alloc *find_alloc_exact(int kind, uintptr_t p)
{
    fake_obj *head = &fake__s.live[kind];
    for (fake_obj *o = head->next; o != head; o = o->next)
        if ((uintptr_t)((fake_alloc *)o)->mem == p)
            return (fake_alloc *)o;
    return NULL;
}

static size_t device_bytes(void)
{
    size_t n = 0;
    for (int i = 0; i < FAKE_MAX_DEVICES; i++)
        n += fake__s.dev[i].bytes_live;
    return n;
}

static int fits(size_t bytes, size_t limit, size_t used)
{
    return used <= limit && bytes <= limit - used;
}

/* Records [mem, mem + bytes) as a live allocation of `kind` made on the
 * current context; NULL when out of memory. */
static fake_alloc *link_alloc(int kind, void *mem, size_t bytes, int device)
{
    fake_alloc *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->mem = mem;
    a->size = bytes;
    a->device = device;
    a->ctx = fake__current();
    fake__link(kind, &a->o);
    return a;
}

static CUresult new_alloc(int kind, size_t bytes, size_t align, int device, void **out)
{
    void *mem = NULL;
    if (posix_memalign(&mem, align, bytes) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (link_alloc(kind, mem, bytes, device) == NULL) {
        free(mem);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = mem;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytes)
{
    FAKE_ENTER(cuMemAlloc);
    if (dptr == NULL || bytes == 0)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fake_dev_state *ds = &fake__s.dev[c->device];
    if (!fits(bytes, ds->cfg.total_mem, ds->bytes_live) ||
        (fake__s.mem_limit && !fits(bytes, fake__s.mem_limit, device_bytes())))
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    void *p = NULL;
    CUresult r = new_alloc(K_ALLOC, bytes, 512, c->device, &p);
    if (r == CUDA_SUCCESS) {
        ds->bytes_live += bytes;
        *dptr = (CUdeviceptr)(uintptr_t)p;
    }
    FAKE_RETURN(r);
}

static void free_alloc(fake_alloc *a, int kind)
{
    if (kind == K_ALLOC)
        fake__s.dev[a->device].bytes_live -= a->size;
    else
        fake__s.host_bytes_live -= a->size;
    fake__unlink(&a->o);
    if (!a->registered)
        free(a->mem);
    free(a);
}

/* What freeing (or unregistering) does: no resident kernel may still use
 * the range, the context's kernels finish first, then it is gone. */
static void release_alloc(fake_alloc *a, int kind)
{
    fake__resident_check_free((uint64_t)(uintptr_t)a->mem, a->size);
    if (fake__ctx_alive(a->ctx))
        fake__wait_busy(&a->ctx->busy);
    free_alloc(a, kind);
}

static CUresult fake_cuMemFree(CUdeviceptr p)
{
    FAKE_ENTER_RELEASE(cuMemFree);
    fake_alloc *a = find_alloc_exact(K_ALLOC, (uintptr_t)p);
    if (a == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    release_alloc(a, K_ALLOC);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuMemHostAlloc(void **pp, size_t bytes, unsigned flags)
{
    FAKE_ENTER(cuMemHostAlloc);
    if (pp == NULL || bytes == 0 ||
        (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                             CU_MEMHOSTALLOC_WRITECOMBINED)))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (fake__s.host_limit && !fits(bytes, fake__s.host_limit, fake__s.host_bytes_live))
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = new_alloc(K_HOST, bytes, 4096, c->device, pp);
    if (r == CUDA_SUCCESS) {
        fake__s.host_bytes_live += bytes;
        find_alloc_exact(K_HOST, (uintptr_t)*pp)->flags = flags;
    }
    FAKE_RETURN(r);
}

static CUresult fake_cuMemFreeHost(void *p)
{
    FAKE_ENTER_RELEASE(cuMemFreeHost);
    fake_alloc *a = find_alloc_exact(K_HOST, (uintptr_t)p);
    if (a == NULL || a->registered)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    release_alloc(a, K_HOST);
    FAKE_RETURN(CUDA_SUCCESS);
}

/* Page-locks the caller's [p, p + bytes): a host allocation whose memory is
 * the caller's (page-aligned here, as the library registers whole pages;
 * overlapping a live pinned range is refused, as the driver does). */
static CUresult fake_cuMemHostRegister(void *p, size_t bytes, unsigned flags)
{
    FAKE_ENTER(cuMemHostRegister);
    if (p == NULL || bytes == 0 || ((uintptr_t)p | bytes) % 4096 != 0 ||
        (flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP)))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (find_alloc(K_HOST, (uintptr_t)p, 1) || find_alloc(K_HOST, (uintptr_t)p + bytes - 1, 1))
        FAKE_RETURN(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    if (fake__s.host_limit && !fits(bytes, fake__s.host_limit, fake__s.host_bytes_live))
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    fake_alloc *a = link_alloc(K_HOST, p, bytes, c->device);
    if (a == NULL)
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    a->flags = flags;
    a->registered = 1;
    fake__s.host_bytes_live += bytes;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuMemHostUnregister(void *p)
{
    FAKE_ENTER_RELEASE(cuMemHostUnregister);
    fake_alloc *a = find_alloc_exact(K_HOST, (uintptr_t)p);
    if (a == NULL || !a->registered)
        FAKE_RETURN(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    release_alloc(a, K_HOST);
    FAKE_RETURN(CUDA_SUCCESS);
}

/* Under unified addressing the device address of mapped pinned memory is
 * its host address: any pointer inside a live pinned allocation. */
static CUresult fake_cuMemHostGetDevicePointer(CUdeviceptr *out, void *p, unsigned flags)
{
    FAKE_ENTER(cuMemHostGetDevicePointer);
    if (out == NULL || flags != 0)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fake__current() == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (find_alloc(K_HOST, (uintptr_t)p, 1) == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    *out = (CUdeviceptr)(uintptr_t)p;
    FAKE_RETURN(CUDA_SUCCESS);
}

/* Checks a device range [d, d + n) and a host pointer for a copy. */
static CUresult check_copy(CUdeviceptr d, const void *h, size_t n)
{
    if (fake__current() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (n == 0)
        return CUDA_SUCCESS;
    if (h == NULL || find_alloc(K_ALLOC, (uintptr_t)d, n) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* For async work: resolves the stream; *capture is 1 if it must become a
 * graph node instead of being done now. */
static CUresult enqueue(CUstream h, int *capture)
{
    struct CUstream_st *s = NULL;
    CUresult r = fake__stream(h, &s);
    if (r != CUDA_SUCCESS)
        return r;
    *capture = 0;
    if (s != NULL && s->capture != NULL) {
        *capture = 1;
        if (fake__graph_add_node(s->capture, NODE_OTHER) == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
    FAKE_ENTER(cuMemcpyHtoD);
    CUresult r = check_copy(dst, src, n);
    if (r == CUDA_SUCCESS && n)
        memcpy((void *)(uintptr_t)dst, src, n);
    FAKE_RETURN(r);
}

static CUresult fake_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
    FAKE_ENTER(cuMemcpyDtoH);
    CUresult r = check_copy(src, dst, n);
    if (r == CUDA_SUCCESS && n)
        memcpy(dst, (const void *)(uintptr_t)src, n);
    FAKE_RETURN(r);
}

static CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    FAKE_ENTER(cuMemcpyHtoDAsync);
    int capture = 0;
    CUresult r = check_copy(dst, src, n);
    if (r == CUDA_SUCCESS)
        r = enqueue(s, &capture);
    if (r == CUDA_SUCCESS && n && !capture)
        memcpy((void *)(uintptr_t)dst, src, n);
    FAKE_RETURN(r);
}

static CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    FAKE_ENTER(cuMemcpyDtoHAsync);
    int capture = 0;
    CUresult r = check_copy(src, dst, n);
    if (r == CUDA_SUCCESS)
        r = enqueue(s, &capture);
    if (r == CUDA_SUCCESS && n && !capture)
        memcpy(dst, (const void *)(uintptr_t)src, n);
    FAKE_RETURN(r);
}

static CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    FAKE_ENTER(cuMemsetD8Async);
    int capture = 0;
    CUresult r = check_copy(dst, &v, n);
    if (r == CUDA_SUCCESS)
        r = enqueue(s, &capture);
    if (r == CUDA_SUCCESS && n && !capture)
        memset((void *)(uintptr_t)dst, v, n);
    FAKE_RETURN(r);
}

void fake_add_unbacked_range(CUdeviceptr base, size_t bytes)
{
    fake__lock();
    if (fake__s.n_unbacked < (int)(sizeof fake__s.unbacked / sizeof fake__s.unbacked[0])) {
        fake__s.unbacked[fake__s.n_unbacked].base = (uintptr_t)base;
        fake__s.unbacked[fake__s.n_unbacked].size = bytes;
        fake__s.n_unbacked++;
    }
    fake__unlock();
}

/* Pointer attributes, for kernels of the current context: device memory is
 * addressable (at its own address) from any context on its device; pinned
 * host memory only when allocated with CU_MEMHOSTALLOC_DEVICEMAP and
 * without WRITECOMBINED (the fake models no implicit mapping); an address
 * the fake never allocated gets the driver's default values (memory type 0,
 * everything NULL) and CUDA_SUCCESS, as documented for the real call. */
static CUresult fake_cuPointerGetAttributes(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr p)
{
    FAKE_ENTER(cuPointerGetAttributes);
    if (n == 0 || attrs == NULL || data == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUcontext cur = fake__current();
    if (cur == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    int kind = K_ALLOC;
    fake_alloc *a = find_alloc(K_ALLOC, (uintptr_t)p, 1);
    if (a == NULL && (a = find_alloc(K_HOST, (uintptr_t)p, 1)) != NULL)
        kind = K_HOST;
    int reachable = 0;
    fake_alloc unbacked; /* fake_add_unbacked_range: a stand-in for the lookup below */
    for (int u = 0; a == NULL && u < fake__s.n_unbacked; u++)
        if ((uintptr_t)p >= fake__s.unbacked[u].base && (uintptr_t)p - fake__s.unbacked[u].base < fake__s.unbacked[u].size) {
            memset(&unbacked, 0, sizeof unbacked);
            unbacked.mem = (void *)fake__s.unbacked[u].base;
            unbacked.size = fake__s.unbacked[u].size;
            unbacked.device = cur->device;
            unbacked.ctx = cur;
            a = &unbacked;
        }
    if (a != NULL && kind == K_ALLOC)
        reachable = a->device == cur->device;
    if (a != NULL && kind == K_HOST)
        reachable = (a->flags & CU_MEMHOSTALLOC_DEVICEMAP) && !(a->flags & CU_MEMHOSTALLOC_WRITECOMBINED);
    for (unsigned i = 0; i < n; i++) {
        if (data[i] == NULL)
            FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned *)data[i] = a == NULL ? 0u : kind == K_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
            break;
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            *(CUcontext *)data[i] = a ? a->ctx : NULL;
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
            *(CUdeviceptr *)data[i] = reachable ? p : 0;
            break;
        case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            *(void **)data[i] = a != NULL && kind == K_HOST ? (void *)(uintptr_t)p : NULL;
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *)data[i] = a ? a->device : -2;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = a ? (CUdeviceptr)(uintptr_t)a->mem : 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *)data[i] = a ? a->size : 0;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        case CU_POINTER_ATTRIBUTE_MAPPED:
            *(int *)data[i] = attrs[i] == CU_POINTER_ATTRIBUTE_MAPPED && a != NULL;
            break;
        default:
            FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
        }
    }
    FAKE_RETURN(CUDA_SUCCESS);
}

size_t fake_device_bytes_live(void) { return device_bytes(); }
size_t fake_host_bytes_live(void) { return fake__s.host_bytes_live; }

size_t fake_alloc_size(CUdeviceptr p)
{
    fake__lock();
    fake_alloc *a = find_alloc_exact(K_ALLOC, (uintptr_t)p);
    size_t n = a ? a->size : 0;
    fake__unlock();
    return n;
}

/* ---------------------------------------------------------------- streams */

static int is_default_stream(CUstream h)
{
    return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

CUresult fake__stream(CUstream h, struct CUstream_st **out)
{
    CUcontext c = fake__current();
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (is_default_stream(h)) {
        *out = NULL;
        return CUDA_SUCCESS;
    }
    if (!fake__find(K_STREAM, h) || h->ctx != c)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = h;
    return CUDA_SUCCESS;
}

/* The context of a live stream (the current one for a default-stream
 * handle), as the driver answers whatever context is current. */
static CUresult fake_cuStreamGetCtx(CUstream h, CUcontext *pctx)
{
    FAKE_ENTER(cuStreamGetCtx);
    if (pctx == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (is_default_stream(h)) {
        CUcontext c = fake__current();
        if (c == NULL)
            FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
        *pctx = c;
        FAKE_RETURN(CUDA_SUCCESS);
    }
    if (!fake__find(K_STREAM, h))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    *pctx = h->ctx;
    FAKE_RETURN(CUDA_SUCCESS);
}

/* A stream for query/sync/capture: any context, but a live one. */
static CUresult any_stream(CUstream h, struct CUstream_st **out)
{
    if (is_default_stream(h)) {
        *out = NULL;
        return fake__current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    }
    if (!fake__find(K_STREAM, h))
        return CUDA_ERROR_INVALID_HANDLE;
    *out = h;
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamCreateWithPriority(CUstream *ph, unsigned flags, int priority)
{
    FAKE_ENTER(cuStreamCreateWithPriority);
    if (ph == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    const fake_device *d = &fake__s.dev[c->device].cfg;
    /* The real driver clamps silently too. */
    if (priority < d->prio_greatest)
        priority = d->prio_greatest;
    if (priority > d->prio_least)
        priority = d->prio_least;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    s->ctx = c;
    s->flags = flags;
    s->priority = priority;
    fake__link(K_STREAM, &s->o);
    *ph = s;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuStreamDestroy(CUstream h)
{
    FAKE_ENTER_RELEASE(cuStreamDestroy);
    if (!fake__find(K_STREAM, h))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (h->capture != NULL)
        fake__graph_free(h->capture); /* the capture dies with its stream */
    fake__unlink(&h->o);
    free(h);
    FAKE_RETURN(CUDA_SUCCESS);
}

/* Synchronising calls on a capturing stream are illegal and invalidate it. */
static int capture_violation(struct CUstream_st *s)
{
    if (s == NULL || s->capture == NULL)
        return 0;
    s->capture_invalid = 1;
    return 1;
}

static CUresult fake_cuStreamQuery(CUstream h)
{
    FAKE_ENTER(cuStreamQuery);
    struct CUstream_st *s = NULL;
    CUresult r = any_stream(h, &s);
    if (r != CUDA_SUCCESS)
        FAKE_RETURN(r);
    if (capture_violation(s))
        FAKE_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (fake__s.busy == FAKE_BUSY_FOREVER || fake__busy(s ? &s->busy : &fake__current()->busy) ||
        fake__resident_busy(h))
        FAKE_RETURN(CUDA_ERROR_NOT_READY);
    if (fake__s.busy > 0) {
        fake__s.busy--;
        FAKE_RETURN(CUDA_ERROR_NOT_READY);
    }
    FAKE_RETURN(CUDA_SUCCESS);
}

/* Completes pending work at once; with FAKE_BUSY_FOREVER the work never
 * completes, and rather than hang the fake reports CUDA_ERROR_LAUNCH_TIMEOUT. */
static CUresult fake_cuStreamSynchronize(CUstream h)
{
    FAKE_ENTER(cuStreamSynchronize);
    struct CUstream_st *s = NULL;
    CUresult r = any_stream(h, &s);
    if (r != CUDA_SUCCESS)
        FAKE_RETURN(r);
    fake__wait_busy(s ? &s->busy : &fake__current()->busy);
    if (capture_violation(s))
        FAKE_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (fake__s.busy == FAKE_BUSY_FOREVER || fake__resident_busy(h))
        FAKE_RETURN(CUDA_ERROR_LAUNCH_TIMEOUT);
    fake__s.busy = 0;
    FAKE_RETURN(CUDA_SUCCESS);
}

int fake_stream_query(CUstream h, fake_stream_info *out)
{
    fake__lock();
    int alive = fake__find(K_STREAM, h);
    if (alive && out) {
        out->ctx = h->ctx;
        out->flags = h->flags;
        out->priority = h->priority;
        out->capturing = h->capture != NULL;
    }
    fake__unlock();
    return alive;
}

/* ----------------------------------------------------------------- events */

static CUresult fake_cuEventCreate(CUevent *ph, unsigned flags)
{
    FAKE_ENTER(cuEventCreate);
    if (ph == NULL || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                           CU_EVENT_INTERPROCESS)))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (e == NULL)
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    e->ctx = c;
    e->flags = flags;
    fake__link(K_EVENT, &e->o);
    *ph = e;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuEventDestroy(CUevent e)
{
    FAKE_ENTER_RELEASE(cuEventDestroy);
    if (!fake__find(K_EVENT, e))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    fake__unlink(&e->o);
    free(e);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuEventRecord(CUevent e, CUstream h)
{
    FAKE_ENTER(cuEventRecord);
    if (!fake__find(K_EVENT, e))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    int capture = 0;
    CUresult r = enqueue(h, &capture);
    if (r != CUDA_SUCCESS)
        FAKE_RETURN(r);
    if (!capture) {
        fake__s.clock_ms += fake__s.tick_ms;
        e->t_ms = fake__s.clock_ms;
        e->recorded = 1;
    }
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuEventQuery(CUevent e)
{
    FAKE_ENTER(cuEventQuery);
    if (!fake__find(K_EVENT, e))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    FAKE_RETURN(e->recorded && fake__s.busy != 0 ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS);
}

/* As documented for the real driver: an event never recorded, or created
 * with CU_EVENT_DISABLE_TIMING, gives CUDA_ERROR_INVALID_HANDLE; recorded
 * but not complete gives CUDA_ERROR_NOT_READY. */
static CUresult fake_cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    FAKE_ENTER(cuEventElapsedTime);
    if (ms == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fake__find(K_EVENT, a) || !fake__find(K_EVENT, b))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (!a->recorded || !b->recorded || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (fake__s.busy != 0)
        FAKE_RETURN(CUDA_ERROR_NOT_READY);
    *ms = (float)(b->t_ms - a->t_ms);
    FAKE_RETURN(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ reset */

void fake__free_all_mem(void)
{
    static const int kinds[] = {K_EVENT, K_STREAM};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        fake_obj *head = &fake__s.live[kinds[i]];
        while (head->next != head) {
            fake_obj *o = head->next;
            fake__unlink(o);
            free(o);
        }
    }
    static const int mem_kinds[] = {K_ALLOC, K_HOST};
    for (size_t i = 0; i < 2; i++) {
        fake_obj *head = &fake__s.live[mem_kinds[i]];
        while (head->next != head)
            free_alloc((fake_alloc *)head->next, mem_kinds[i]);
    }
}

void fake__fill_mem(bc__driver *t)
{
    t->cuMemAlloc = fake_cuMemAlloc;
    t->cuMemFree = fake_cuMemFree;
    t->cuMemHostAlloc = fake_cuMemHostAlloc;
    t->cuMemHostGetDevicePointer = fake_cuMemHostGetDevicePointer;
    t->cuMemFreeHost = fake_cuMemFreeHost;
    t->cuMemHostRegister = fake_cuMemHostRegister;
    t->cuMemHostUnregister = fake_cuMemHostUnregister;
    t->cuMemcpyHtoD = fake_cuMemcpyHtoD;
    t->cuMemcpyDtoH = fake_cuMemcpyDtoH;
    t->cuMemcpyHtoDAsync = fake_cuMemcpyHtoDAsync;
    t->cuMemcpyDtoHAsync = fake_cuMemcpyDtoHAsync;
    t->cuMemsetD8Async = fake_cuMemsetD8Async;
    t->cuPointerGetAttributes = fake_cuPointerGetAttributes;
    t->cuStreamCreateWithPriority = fake_cuStreamCreateWithPriority;
    t->cuStreamDestroy = fake_cuStreamDestroy;
    t->cuStreamQuery = fake_cuStreamQuery;
    t->cuStreamSynchronize = fake_cuStreamSynchronize;
    t->cuStreamGetCtx = fake_cuStreamGetCtx;
    t->cuEventCreate = fake_cuEventCreate;
    t->cuEventDestroy = fake_cuEventDestroy;
    t->cuEventRecord = fake_cuEventRecord;
    t->cuEventQuery = fake_cuEventQuery;
    t->cuEventElapsedTime = fake_cuEventElapsedTime;
}
