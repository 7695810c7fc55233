/* barecuda — O(1) memory pools over one device arena and one pinned host arena.
 *
 * Both arenas are allocated once by bc_device_open; allocation and free are
 * TLSF (two-level segregated fit): constant time, no driver call, no malloc.
 * Every block is aligned to BC_MEM_ALIGN bytes and its size is rounded up to a
 * multiple of it. Thread safety: as for the device (one thread at a time).
 */
#ifndef BARECUDA_MEM_H
#define BARECUDA_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BC_MEM_ALIGN 256u

typedef uint64_t bc_devptr; /* a CUdeviceptr */

/* Contract: allocates `bytes` from the device arena. BC_ERR_BAD_SIZE for 0,
 * more than the arena, or a device opened without one; BC_ERR_POOL_EXHAUSTED
 * when no free block is found; BC_ERR_TOO_MANY_BLOCKS when max_allocations
 * are live. O(1): the search is good-fit, so a request succeeds whenever a
 * free block of its size (rounded to 256 bytes) plus 1/32 exists, and may
 * fail where only a block between the two does (bc_pool_stats's
 * largest_free_block can then be larger than a refused request). */
bc_status bc_mem_alloc(bc_device *dev, size_t bytes, bc_devptr *out_ptr);

/* Contract: returns a block to the device arena. BC_ERR_FOREIGN_POINTER when
 * `ptr` is outside the arena (or the device has none), BC_ERR_DOUBLE_FREE
 * when it is inside but not the start of a live block; in both cases nothing
 * changes. */
bc_status bc_mem_free(bc_device *dev, bc_devptr ptr);

/* Contract: the same over the pinned host arena (memory the GPU can DMA). */
bc_status bc_host_alloc(bc_device *dev, size_t bytes, void **out_ptr);
bc_status bc_host_free(bc_device *dev, void *ptr);

/* Operand memory outside the arenas. Plan creation and
 * bc_gemm_plan_set_pointers check every operand: inside an arena it must lie,
 * with its whole extent, in one live block; elsewhere the driver is asked
 * (cuPointerGetAttributes, one call per allocation per check; see README,
 * "Operand checks"). Registering a buffer replaces that driver call by a
 * table lookup, for callers that re-point plans every frame.
 *
 * Contract: asks the driver once whether [ptr, ptr + bytes) is memory the
 * kernels of `dev` can address at these addresses (device memory of its
 * context, or host memory mapped for it) lying inside one allocation, and
 * records the range. From then on an operand inside the range is checked
 * against the range alone. Errors: BC_ERR_WRONG_DEVICE / BC_ERR_OUT_OF_BOUNDS
 * as for an operand; BC_ERR_OVERLAP when the range meets an arena or an
 * already registered range; BC_ERR_INVALID_ARGUMENT for 0 bytes, a null
 * pointer or a wrapping range; BC_ERR_OUT_OF_HOST_MEMORY when the table
 * cannot grow (it grows by doubling; this call may allocate). The caller
 * promises the memory stays allocated until bc_mem_unregister or
 * bc_device_close: a registered range is trusted, never asked again. */
bc_status bc_mem_register(bc_device *dev, bc_devptr ptr, size_t bytes);

/* Contract: forgets the range registered at `ptr` (its start).
 * BC_ERR_FOREIGN_POINTER when no registered range starts there. Plans
 * already pointing into it keep their pointers (they were checked). */
bc_status bc_mem_unregister(bc_device *dev, bc_devptr ptr);

typedef struct bc_pool_stats {
    size_t arena_bytes;        /* total managed bytes */
    size_t bytes_in_use;       /* sum of live block sizes (after rounding) */
    size_t peak_bytes_in_use;  /* high-water mark of bytes_in_use */
    size_t largest_free_block; /* bytes */
    size_t total_free_bytes;
    double fragmentation;      /* 1 - largest_free / total_free; 0 when nothing is free */
    uint32_t live_allocations;
} bc_pool_stats;

typedef enum bc_pool_kind { BC_POOL_DEVICE = 0, BC_POOL_HOST = 1 } bc_pool_kind;

/* Contract: statistics of one pool; O(1) except largest_free_block, which
 * walks the highest non-empty size class (O(classes + that list)). */
bc_status bc_pool_get_stats(const bc_device *dev, bc_pool_kind kind, bc_pool_stats *out_stats);

/* Copies and fills, so callers never need the driver themselves; sizes in
 * bytes. The synchronous copies return once the bytes are in place; they are
 * not ordered with work on the caller's streams (wait for those first). The
 * _async ones are ordered on their stream; from pinned memory (bc_host_alloc)
 * they overlap with the caller. */
bc_status bc_memcpy_htod(bc_device *dev, bc_devptr dst, const void *src, size_t bytes);
bc_status bc_memcpy_dtoh(bc_device *dev, void *dst, bc_devptr src, size_t bytes);
bc_status bc_memcpy_htod_async(bc_stream *s, bc_devptr dst, const void *src, size_t bytes);
bc_status bc_memcpy_dtoh_async(bc_stream *s, void *dst, bc_devptr src, size_t bytes);
bc_status bc_memset_d8_async(bc_stream *s, bc_devptr dst, uint8_t value, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
