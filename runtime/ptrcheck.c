/* Operand memory checks (ptrcheck.h), operand overlaps, and the ranges the
 * caller registers so that a check is a table lookup (bc_mem_register). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "internal.h"

#define MSG_ARGS(p, n) (unsigned long long)(p), (unsigned long long)(n)

/* ---------------------------------------------------------------- pools */

/* [ptr, ptr + bytes) against the pool block holding ptr. */
static bc_status check_pool(const bc__tlsf *pool, const char *arena, const char *operand, uint64_t ptr,
                            uint64_t bytes)
{
    bc__tlsf_block b;
    bc__tlsf_find(pool, ptr, &b); /* ptr is inside: the caller asked bc__tlsf_contains */
    if (!b.live)
        return BC_FAIL(BC_ERR_OUT_OF_BOUNDS, operand,
                       "%s=0x%llx needs %llu bytes but lies in free space of the %s (a freed or never "
                       "allocated block): 0 bytes available",
                       operand, MSG_ARGS(ptr, bytes), arena);
    const uint64_t avail = b.addr + b.size - ptr;
    if (bytes > avail)
        return BC_FAIL(BC_ERR_OUT_OF_BOUNDS, operand,
                       "%s=0x%llx needs %llu bytes; its %s block [0x%llx, +%llu) has %llu bytes from there",
                       operand, MSG_ARGS(ptr, bytes), arena, MSG_ARGS(b.addr, b.size), (unsigned long long)avail);
    return BC_OK;
}

/* The host-mapped rule of ptrcheck.h for an operand in host memory. */
static bc_status check_host_rule(const char *operand, uint64_t ptr, unsigned access)
{
    if ((access & BC__ACC_TMA) && !BC__TMA_ON_HOST_MEMORY)
        return BC_FAIL(BC_ERR_WRONG_DEVICE, operand,
                       "%s=0x%llx is host memory; this operand is read or written through TMA, which barecuda "
                       "allows on device memory only",
                       operand, (unsigned long long)ptr);
    return BC_OK;
}

/* ---------------------------------------------------------------- registry */

/* Index of the last registered range starting at or below p, or -1. */
static long registry_floor(const bc__ptr_registry *r, uint64_t p)
{
    long lo = 0, hi = (long)r->count; /* first index with start > p */
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (r->range[mid].start <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

void bc__registry_free(bc__ptr_registry *r)
{
    free(r->range);
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------- driver */

static const char *memtype_name(unsigned t)
{
    switch (t) {
    case CU_MEMORYTYPE_HOST: return "host";
    case CU_MEMORYTYPE_DEVICE: return "device";
    case CU_MEMORYTYPE_ARRAY: return "array";
    case CU_MEMORYTYPE_UNIFIED: return "unified";
    default: return "unknown";
    }
}

/* What the driver says of ptr, for kernels of the current context. */
typedef struct ptr_attrs {
    unsigned memtype;
    int ordinal;
    CUdeviceptr devptr; /* the address kernels of the current context use, 0: none */
    CUdeviceptr start;
    size_t size;
} ptr_attrs;

static bc_status query_driver(const char *operand, uint64_t ptr, ptr_attrs *a)
{
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[] = {&a->memtype, &a->ordinal, &a->devptr, &a->start, &a->size};
    memset(a, 0, sizeof *a);
    a->ordinal = -1;
    CUresult r = bc__drv->cuPointerGetAttributes(5, which, data, (CUdeviceptr)ptr);
    if (r == CUDA_ERROR_INVALID_VALUE) /* e.g. memory no context of this process describes */
        return bc__fail(BC_ERR_WRONG_DEVICE, (int)r, "CUDA_ERROR_INVALID_VALUE", "cuPointerGetAttributes",
                        __FILE__, __LINE__, "%s=0x%llx: the driver cannot describe this address (%s)", operand,
                        (unsigned long long)ptr, "CUDA_ERROR_INVALID_VALUE");
    return bc__cu_result(r, "cuPointerGetAttributes", __FILE__, __LINE__);
}

/* [ptr, ptr + bytes) as the driver describes it. */
static bc_status check_driver(bc_device *dev, const char *operand, uint64_t ptr, uint64_t bytes, unsigned access,
                              bc__ptr_cache *cache)
{
    if (cache != NULL)
        for (int i = 0; i < cache->count; i++) {
            const uint64_t s = cache->slot[i].start, n = cache->slot[i].size;
            if (ptr >= s && ptr - s < n) { /* seen in this check: same allocation, same verdict */
                if (bytes > n - (ptr - s))
                    return BC_FAIL(BC_ERR_OUT_OF_BOUNDS, operand,
                                   "%s=0x%llx needs %llu bytes; its allocation [0x%llx, +%llu) has %llu bytes "
                                   "from there",
                                   operand, MSG_ARGS(ptr, bytes), MSG_ARGS(s, n), (unsigned long long)(n - (ptr - s)));
                return cache->slot[i].memtype == CU_MEMORYTYPE_HOST ? check_host_rule(operand, ptr, access) : BC_OK;
            }
        }
    ptr_attrs a;
    bc_status st = query_driver(operand, ptr, &a);
    if (cache != NULL)
        cache->driver_calls++;
    if (st)
        return st;
    if (a.memtype == 0)
        return BC_FAIL(BC_ERR_WRONG_DEVICE, operand,
                       "%s=0x%llx (%llu bytes) is no memory the driver knows: pageable host memory, a freed "
                       "buffer or a made-up address",
                       operand, MSG_ARGS(ptr, bytes));
    if (a.devptr != (CUdeviceptr)ptr)
        return BC_FAIL(BC_ERR_WRONG_DEVICE, operand,
                       "%s=0x%llx is %s memory (device %d) that kernels of device %d's context cannot address "
                       "there (their address for it: 0x%llx)",
                       operand, (unsigned long long)ptr, memtype_name(a.memtype), a.ordinal, dev->cfg.ordinal,
                       (unsigned long long)a.devptr);
    if (a.size == 0 || ptr < a.start || ptr - a.start >= a.size)
        return BC_FAIL(BC_ERR_WRONG_DEVICE, operand,
                       "%s=0x%llx: the driver reports no allocation range around it (start 0x%llx, %llu bytes), "
                       "so its %llu bytes cannot be proven to fit",
                       operand, (unsigned long long)ptr, MSG_ARGS(a.start, a.size), (unsigned long long)bytes);
    const uint64_t avail = a.start + a.size - ptr;
    if (cache != NULL && cache->count < BC__PTR_CACHE_SLOTS) {
        int i = cache->count++;
        cache->slot[i].start = a.start, cache->slot[i].size = a.size, cache->slot[i].memtype = a.memtype;
    }
    if (bytes > avail)
        return BC_FAIL(BC_ERR_OUT_OF_BOUNDS, operand,
                       "%s=0x%llx needs %llu bytes; its %s allocation [0x%llx, +%llu) has %llu bytes from there",
                       operand, MSG_ARGS(ptr, bytes), memtype_name(a.memtype), MSG_ARGS(a.start, a.size),
                       (unsigned long long)avail);
    return a.memtype == CU_MEMORYTYPE_HOST ? check_host_rule(operand, ptr, access) : BC_OK;
}

/* ---------------------------------------------------------------- the check */

bc_status bc__ptr_check(bc_device *dev, const char *operand, uint64_t ptr, uint64_t bytes, unsigned access,
                        bc__ptr_cache *cache)
{
    if (ptr == 0)
        return BC_FAIL(BC_ERR_NULL_POINTER, operand, "%s is a null device pointer", operand);
    if (bc__tlsf_contains(dev->dev_pool, ptr))
        return check_pool(dev->dev_pool, "device arena", operand, ptr, bytes);
    if (bc__tlsf_contains(dev->host_pool, ptr)) {
        bc_status st = check_pool(dev->host_pool, "pinned host arena", operand, ptr, bytes);
        return st ? st : check_host_rule(operand, ptr, access);
    }
    const bc__ptr_registry *r = &dev->registry;
    const long i = registry_floor(r, ptr);
    if (i >= 0 && ptr - r->range[i].start < r->range[i].size) {
        const bc__ptr_range *g = &r->range[i];
        const uint64_t avail = g->size - (ptr - g->start);
        if (bytes > avail)
            return BC_FAIL(BC_ERR_OUT_OF_BOUNDS, operand,
                           "%s=0x%llx needs %llu bytes; its registered range [0x%llx, +%llu) has %llu bytes from "
                           "there",
                           operand, MSG_ARGS(ptr, bytes), MSG_ARGS(g->start, g->size), (unsigned long long)avail);
        return g->host ? check_host_rule(operand, ptr, access) : BC_OK;
    }
    return check_driver(dev, operand, ptr, bytes, access, cache);
}

/* ---------------------------------------------------------------- overlaps */

typedef __int128 i128;

static i128 floor_div(i128 a, i128 b) /* b > 0 */
{
    i128 q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* A single row [s, e) against region r: exact. The first row of r that ends
 * after s is the only candidate; it overlaps iff it starts before e. */
static int row_meets_region(uint64_t s, uint64_t e, const bc__region *r)
{
    uint64_t i = 0;
    if (r->base + r->row_bytes <= s)
        i = (s - (r->base + r->row_bytes)) / r->pitch + 1;
    return i < r->rows && r->base + i * r->pitch < e;
}

int bc__regions_overlap(const bc__region *a, const bc__region *b)
{
    const uint64_t ae = a->base + bc__region_extent(a), be = b->base + bc__region_extent(b);
    if (ae <= b->base || be <= a->base)
        return 0; /* extents apart */
    if (a->rows == 1)
        return row_meets_region(a->base, a->base + a->row_bytes, b);
    if (b->rows == 1)
        return row_meets_region(b->base, b->base + b->row_bytes, a);
    if (a->pitch != b->pitch)
        return 1; /* conservative */
    /* same pitch p: rows i of a and j of b meet iff, with k = j - i and
     * d = b.base - a.base, -d - b.w < k p < a.w - d; take the smallest k
     * allowed by both the left bound and the row ranges. */
    const i128 p = (i128)a->pitch, d = (i128)b->base - (i128)a->base;
    const i128 kmin = -((i128)a->rows - 1), kmax = (i128)b->rows - 1;
    i128 k = floor_div(-d - (i128)b->row_bytes, p) + 1;
    if (k < kmin)
        k = kmin;
    return k <= kmax && k * p < (i128)a->row_bytes - d;
}

bc_status bc__check_disjoint(const char *written_name, const bc__region *written, const char *other_name,
                             const bc__region *other)
{
    if (!bc__regions_overlap(written, other))
        return BC_OK;
    return BC_FAIL(BC_ERR_OVERLAP, written_name,
                   "%s [0x%llx, +%llu bytes, %llu rows of %llu every %llu) shares bytes with %s [0x%llx, +%llu "
                   "bytes, %llu rows of %llu every %llu): the result would depend on the order the GPU runs in",
                   written_name, MSG_ARGS(written->base, bc__region_extent(written)),
                   (unsigned long long)written->rows, MSG_ARGS(written->row_bytes, written->pitch), other_name,
                   MSG_ARGS(other->base, bc__region_extent(other)), (unsigned long long)other->rows,
                   MSG_ARGS(other->row_bytes, other->pitch));
}

/* ---------------------------------------------------------------- registration */

static int meets_pool(const bc__tlsf *pool, uint64_t start, uint64_t end)
{
    uint64_t base, size;
    if (pool == NULL)
        return 0;
    bc__tlsf_range(pool, &base, &size);
    return start < base + size && base < end;
}

bc_status bc_mem_register(bc_device *dev, bc_devptr ptr, size_t bytes)
{
    if (dev == NULL || ptr == 0 || bytes == 0 || ptr + bytes < ptr)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_mem_register",
                       "dev is NULL, ptr is 0, bytes is 0 or the range wraps");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_mem_register");
    const uint64_t end = ptr + bytes;
    if (meets_pool(dev->dev_pool, ptr, end) || meets_pool(dev->host_pool, ptr, end))
        return BC_FAIL(BC_ERR_OVERLAP, "bc_mem_register",
                       "[0x%llx, 0x%llx) overlaps one of barecuda's arenas (checked by their pools already)",
                       MSG_ARGS(ptr, end));
    bc__ptr_registry *r = &dev->registry;
    const long i = registry_floor(r, ptr);
    if ((i >= 0 && ptr - r->range[i].start < r->range[i].size) ||
        ((uint32_t)(i + 1) < r->count && r->range[i + 1].start < end))
        return BC_FAIL(BC_ERR_OVERLAP, "bc_mem_register", "[0x%llx, 0x%llx) overlaps a range already registered",
                       MSG_ARGS(ptr, end));
    bc__ptr_cache one = {0};
    bc_status st = check_driver(dev, "bc_mem_register", ptr, bytes, BC__ACC_READ | BC__ACC_WRITE, &one);
    if (st)
        return st;
    if (r->count == r->cap) {
        const uint32_t cap = r->cap ? r->cap * 2 : 16;
        bc__ptr_range *g = realloc(r->range, cap * sizeof *g);
        if (g == NULL)
            return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "realloc", "cannot grow the registered-range table to %u",
                           cap);
        r->range = g;
        r->cap = cap;
    }
    const uint32_t at = (uint32_t)(i + 1);
    memmove(&r->range[at + 1], &r->range[at], (r->count - at) * sizeof *r->range);
    r->range[at] = (bc__ptr_range){ptr, bytes, one.slot[0].memtype == CU_MEMORYTYPE_HOST};
    r->count++;
    return BC_OK;
}

bc_status bc_mem_unregister(bc_device *dev, bc_devptr ptr)
{
    if (dev == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_mem_unregister", "dev is NULL");
    bc__ptr_registry *r = &dev->registry;
    const long i = registry_floor(r, ptr);
    if (i < 0 || r->range[i].start != ptr)
        return BC_FAIL(BC_ERR_FOREIGN_POINTER, "bc_mem_unregister", "0x%llx starts no registered range",
                       (unsigned long long)ptr);
    memmove(&r->range[i], &r->range[i + 1], (r->count - (uint32_t)i - 1) * sizeof *r->range);
    r->count--;
    return BC_OK;
}
