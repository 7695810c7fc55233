/* Internal: plan-time checks that an operand's bytes are memory this device
 * may read or write, so that a wrong size or a stale pointer is refused
 * before anything is launched instead of faulting the GPU (which loses it
 * for the whole process).
 *
 * bc__ptr_check(dev, "d", ptr, bytes, access, cache) decides where
 * [ptr, ptr + bytes) lives, in this order:
 *  1. the device arena or the pinned host arena: the whole range must lie in
 *     ONE live pool block (the pool knows every block, tlsf.h);
 *  2. a range the caller registered (bc_mem_register): inside it;
 *  3. anything else is asked of the driver, once per allocation per check
 *     (cuPointerGetAttributes: memory type, the device pointer kernels of
 *     the current context use, the allocation's range): it must be memory
 *     kernels of this device's context can address at this very address,
 *     with the whole range inside the allocation.
 * Host memory counts only when it is mapped for the device (pinned with
 * CU_MEMHOSTALLOC_DEVICEMAP or registered and mapped); whether TMA may read
 * or write it is the one rule below (BC__TMA_ON_HOST_MEMORY).
 *
 * Failures, each with a message naming the operand, the bytes needed and
 * the bytes available: BC_ERR_NULL_POINTER, BC_ERR_OUT_OF_BOUNDS (past its
 * pool block, registered range or allocation; or in free pool space),
 * BC_ERR_WRONG_DEVICE (not memory this device's kernels can address).
 * No allocation; one driver call per allocation not yet seen in `cache`.
 */
#ifndef BC_RUNTIME_PTRCHECK_H
#define BC_RUNTIME_PTRCHECK_H

#include <stdint.h>

#include "barecuda/device.h"

/* THE RULE ON HOST MEMORY AND TMA (the one place it is decided).
 * 1: an operand that a kernel reads or writes through TMA (a tensor map)
 *    may lie in host memory mapped for the device (the pinned host arena,
 *    or memory the driver reports as host memory with a device mapping).
 * 0: such operands must be device memory; host-mapped memory is refused
 *    with BC_ERR_WRONG_DEVICE. Operands read or written with plain loads
 *    and stores (C without the C-through-TMA path, bias, a D without TMA
 *    store, kernel-plan buffers) may always be host-mapped.
 * Measured by tests/gpu/test_gpu_faults.c ("host-mapped operands") on the
 * H100; set from that result. */
#ifndef BC__TMA_ON_HOST_MEMORY
#define BC__TMA_ON_HOST_MEMORY 1
#endif

/* What the kernel does with an operand. */
enum {
    BC__ACC_READ = 1u,
    BC__ACC_WRITE = 2u,
    BC__ACC_TMA = 4u, /* through a tensor map (see the rule above) */
};

/* Allocations the driver described during one check of a plan's operands,
 * so that operands carved from one allocation cost one driver call. */
#define BC__PTR_CACHE_SLOTS 8
typedef struct bc__ptr_cache {
    int count;
    struct {
        uint64_t start, size; /* the allocation's range */
        unsigned memtype;     /* CUmemorytype */
    } slot[BC__PTR_CACHE_SLOTS];
    unsigned driver_calls; /* cuPointerGetAttributes calls made through this cache */
} bc__ptr_cache;

/* Checks [ptr, ptr + bytes) for `access` by dev's kernels (see above).
 * bytes >= 1 and ptr + bytes must not wrap (the caller computed the extent
 * with overflow checks). `cache` may be NULL (no sharing between calls). */
bc_status bc__ptr_check(bc_device *dev, const char *operand, uint64_t ptr, uint64_t bytes, unsigned access,
                        bc__ptr_cache *cache);

/* A strided byte region: `rows` rows of `row_bytes` bytes, row r starting at
 * base + r * pitch (pitch >= row_bytes when rows > 1). */
typedef struct bc__region {
    uint64_t base, rows, row_bytes, pitch;
} bc__region;

/* Bytes from the region's first byte to one past its last. */
static inline uint64_t bc__region_extent(const bc__region *r)
{
    return (r->rows - 1) * r->pitch + r->row_bytes;
}

/* 1 if the two regions share a byte. Exact when one of them is a single row
 * or both have the same pitch; otherwise conservative (1 whenever their
 * extents intersect). */
int bc__regions_overlap(const bc__region *a, const bc__region *b);

/* BC_ERR_OVERLAP naming both operands when `written` shares a byte with
 * `other`; BC_OK otherwise. */
bc_status bc__check_disjoint(const char *written_name, const bc__region *written, const char *other_name,
                             const bc__region *other);

/* Registered ranges (bc_mem_register), sorted by start; released by
 * bc_device_close. */
typedef struct bc__ptr_range {
    uint64_t start, size;
    int host; /* the driver called it host memory (the TMA rule applies) */
} bc__ptr_range;

typedef struct bc__ptr_registry {
    bc__ptr_range *range;
    uint32_t count, cap;
} bc__ptr_registry;

void bc__registry_free(bc__ptr_registry *r);

#endif
