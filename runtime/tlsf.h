/* Internal: a TLSF (two-level segregated fit) allocator over an address range
 * it never touches. Block metadata lives in host tables allocated once at
 * creation, so the same code manages device memory and pinned host memory.
 * alloc and free are O(1): two bitmap scans and constant list surgery; a
 * live block is found from its start through a fixed-size open-addressing
 * table (at most half full for every max_live), and the block holding any
 * address through a bitmap of block starts (bitidx.h: one bit per 256-byte
 * unit, arena/2048 bytes of host memory). Not thread-safe: the caller
 * serialises.
 */
#ifndef BC_RUNTIME_TLSF_H
#define BC_RUNTIME_TLSF_H

#include <stdint.h>

#include "barecuda/mem.h"
#include "barecuda/status.h"

typedef struct bc__tlsf bc__tlsf;

/* Manages [base, base + size). base must be BC_MEM_ALIGN-aligned; size is
 * rounded down to a multiple of BC_MEM_ALIGN. max_live bounds the number of
 * live allocations (the block table holds 2 * max_live + 1 blocks); more
 * than the range's units + 1 is taken as that, since no more blocks fit.
 * All metadata is malloc'ed here, once. */
bc_status bc__tlsf_create(uint64_t base, uint64_t size, uint32_t max_live, bc__tlsf **out_pool);

/* Frees the metadata. NULL is a no-op. */
void bc__tlsf_destroy(bc__tlsf *pool);

/* O(1). BC_ERR_BAD_SIZE (0 or > managed size), BC_ERR_POOL_EXHAUSTED,
 * BC_ERR_TOO_MANY_BLOCKS. The block is BC_MEM_ALIGN-aligned and exactly
 * `bytes` rounded up to BC_MEM_ALIGN (u units of it). Good fit: succeeds
 * whenever a free block of at least u + u/32 units exists. */
bc_status bc__tlsf_alloc(bc__tlsf *pool, uint64_t bytes, uint64_t *out_addr);

/* O(1). BC_ERR_FOREIGN_POINTER outside the range, BC_ERR_DOUBLE_FREE inside
 * but not a live block's start; nothing changes on error. */
bc_status bc__tlsf_free(bc__tlsf *pool, uint64_t addr);

/* The managed range [*out_base, *out_base + *out_size). */
void bc__tlsf_range(const bc__tlsf *pool, uint64_t *out_base, uint64_t *out_size);

/* 1 if addr lies in the managed range. */
int bc__tlsf_contains(const bc__tlsf *pool, uint64_t addr);

typedef struct bc__tlsf_block {
    uint64_t addr; /* start of the block holding the address */
    uint64_t size; /* its size when live (the request rounded up), else 0 */
    int live;      /* 1: an allocation; 0: free space */
} bc__tlsf_block;

/* The block holding `addr` (any address inside it, not only its start):
 * 1 and *out filled, or 0 when addr is outside the range. O(log64 units):
 * a predecessor query on the block-start index plus one table lookup. */
int bc__tlsf_find(const bc__tlsf *pool, uint64_t addr, bc__tlsf_block *out);

void bc__tlsf_stats(const bc__tlsf *pool, bc_pool_stats *out_stats);

/* Test aid: slots in the address table (a power of two >= 2 * max_live). */
uint32_t bc__tlsf_table_slots(const bc__tlsf *pool);

/* Test aid: walks every structure and checks every invariant (physical chain
 * covers the range exactly, no two adjacent free blocks, free lists and
 * bitmaps agree, address table agrees, byte counts add up). BC_OK or
 * BC_ERR_INTERNAL with the broken invariant in bc_last_error(). O(blocks). */
bc_status bc__tlsf_check(const bc__tlsf *pool);

#endif
