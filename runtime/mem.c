/* Memory pools (TLSF over the arenas made at open) and copy/fill wrappers. */
#include <stdint.h>

#include "error.h"
#include "internal.h"

/* The device's pool of `kind`, or a failure naming why there is none
 * (status `none` when the device has no such arena). */
static bc_status get_pool_or(const bc_device *dev, bc_pool_kind kind, const char *fn, bc_status none,
                             bc__tlsf **out_pool)
{
    if (dev == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, fn, "dev is NULL");
    if (kind != BC_POOL_DEVICE && kind != BC_POOL_HOST)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, fn, "unknown pool kind %d", (int)kind);
    bc__tlsf *pool = kind == BC_POOL_DEVICE ? dev->dev_pool : dev->host_pool;
    if (pool == NULL)
        return BC_FAIL(none, fn,
                       "the device was opened with %s_arena_bytes = 0: no %s pool",
                       kind == BC_POOL_DEVICE ? "device" : "host",
                       kind == BC_POOL_DEVICE ? "device" : "pinned host");
    *out_pool = pool;
    return BC_OK;
}

/* The pool for an allocation or the stats: none is BC_ERR_BAD_SIZE (no
 * size fits an arena of 0 bytes). */
static bc_status get_pool(const bc_device *dev, bc_pool_kind kind, const char *fn, bc__tlsf **out_pool)
{
    return get_pool_or(dev, kind, fn, BC_ERR_BAD_SIZE, out_pool);
}

bc_status bc_mem_alloc(bc_device *dev, size_t bytes, bc_devptr *out_ptr)
{
    bc__tlsf *pool;
    uint64_t addr;
    if (out_ptr == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_mem_alloc", "out_ptr is NULL");
    bc_status st = get_pool(dev, BC_POOL_DEVICE, "bc_mem_alloc", &pool);
    if (st == BC_OK && bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_mem_alloc");
    if (st == BC_OK)
        st = bc__tlsf_alloc(pool, bytes, &addr);
    if (st == BC_OK)
        *out_ptr = addr;
    return st;
}

bc_status bc_mem_free(bc_device *dev, bc_devptr ptr)
{
    bc__tlsf *pool;
    bc_status st = get_pool_or(dev, BC_POOL_DEVICE, "bc_mem_free", BC_ERR_FOREIGN_POINTER, &pool); /* not ours */
    return st ? st : bc__tlsf_free(pool, ptr);
}

bc_status bc_host_alloc(bc_device *dev, size_t bytes, void **out_ptr)
{
    bc__tlsf *pool;
    uint64_t addr;
    if (out_ptr == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_host_alloc", "out_ptr is NULL");
    bc_status st = get_pool(dev, BC_POOL_HOST, "bc_host_alloc", &pool);
    if (st == BC_OK && bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_host_alloc");
    if (st == BC_OK)
        st = bc__tlsf_alloc(pool, bytes, &addr);
    if (st == BC_OK)
        *out_ptr = (void *)(uintptr_t)addr;
    return st;
}

bc_status bc_host_free(bc_device *dev, void *ptr)
{
    bc__tlsf *pool;
    bc_status st = get_pool_or(dev, BC_POOL_HOST, "bc_host_free", BC_ERR_FOREIGN_POINTER, &pool); /* not ours */
    return st ? st : bc__tlsf_free(pool, (uint64_t)(uintptr_t)ptr);
}

bc_status bc_pool_get_stats(const bc_device *dev, bc_pool_kind kind, bc_pool_stats *out_stats)
{
    bc__tlsf *pool;
    if (out_stats == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_pool_get_stats", "out_stats is NULL");
    bc_status st = get_pool(dev, kind, "bc_pool_get_stats", &pool);
    if (st == BC_OK)
        bc__tlsf_stats(pool, out_stats);
    return st;
}

/* The copies pass every size, 0 included, to the driver unchanged. */

/* The synchronous copies run on the device's own transfer stream and wait
 * for it: cuMemcpyHtoD from pageable memory may return before its DMA lands,
 * and nothing would order that DMA with barecuda's non-blocking streams. */
bc_status bc_memcpy_htod(bc_device *dev, bc_devptr dst, const void *src, size_t bytes)
{
    if (dev == NULL || src == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_memcpy_htod", "dev or src is NULL");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_memcpy_htod");
    bc_status st = BC_CU(cuMemcpyHtoDAsync, dst, src, bytes, dev->xfer);
    return bc__dev_note(dev, st ? st : BC_CU(cuStreamSynchronize, dev->xfer));
}

bc_status bc_memcpy_dtoh(bc_device *dev, void *dst, bc_devptr src, size_t bytes)
{
    if (dev == NULL || dst == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_memcpy_dtoh", "dev or dst is NULL");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_memcpy_dtoh");
    bc_status st = BC_CU(cuMemcpyDtoHAsync, dst, src, bytes, dev->xfer);
    return bc__dev_note(dev, st ? st : BC_CU(cuStreamSynchronize, dev->xfer));
}

bc_status bc_memcpy_htod_async(bc_stream *s, bc_devptr dst, const void *src, size_t bytes)
{
    if (s == NULL || src == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_memcpy_htod_async", "stream or src is NULL");
    if (bc__dev_lost(s->dev))
        return BC_LOST_FAIL("bc_memcpy_htod_async");
    return bc__dev_note(s->dev, BC_CU(cuMemcpyHtoDAsync, dst, src, bytes, s->handle));
}

bc_status bc_memcpy_dtoh_async(bc_stream *s, void *dst, bc_devptr src, size_t bytes)
{
    if (s == NULL || dst == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_memcpy_dtoh_async", "stream or dst is NULL");
    if (bc__dev_lost(s->dev))
        return BC_LOST_FAIL("bc_memcpy_dtoh_async");
    return bc__dev_note(s->dev, BC_CU(cuMemcpyDtoHAsync, dst, src, bytes, s->handle));
}

bc_status bc_memset_d8_async(bc_stream *s, bc_devptr dst, uint8_t value, size_t bytes)
{
    if (s == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_memset_d8_async", "stream is NULL");
    if (bc__dev_lost(s->dev))
        return BC_LOST_FAIL("bc_memset_d8_async");
    return bc__dev_note(s->dev, BC_CU(cuMemsetD8Async, dst, value, bytes, s->handle));
}
