/* Internal: a hierarchical bitmap with a predecessor query.
 *
 * Bit i of level 0 is the caller's; bit w of level l + 1 is set iff word w of
 * level l is non-zero. set/clear/test and "largest set bit <= i" each touch
 * at most one word per level: O(log64 n), at most 10 levels for 2^56 bits.
 * Memory: n/8 bytes plus 1/63 of that for the upper levels, one allocation.
 * The TLSF pool keeps one bit per 256-byte unit (a block starts there), so
 * finding the block that holds any address is a predecessor query.
 */
#ifndef BC_RUNTIME_BITIDX_H
#define BC_RUNTIME_BITIDX_H

#include <stdint.h>

#include "barecuda/status.h"

#define BC__BITIDX_MAX_LEVELS 11
#define BC__BITIDX_NONE UINT64_MAX

typedef struct bc__bitidx {
    uint64_t nbits;
    unsigned levels;
    uint64_t *level[BC__BITIDX_MAX_LEVELS]; /* level[0] owns the one allocation */
} bc__bitidx;

/* All bits clear. BC_ERR_INVALID_ARGUMENT for 0 or more than 2^60 bits,
 * BC_ERR_OUT_OF_HOST_MEMORY when the allocation fails. */
bc_status bc__bitidx_init(bc__bitidx *b, uint64_t nbits);
void bc__bitidx_free(bc__bitidx *b);

/* i < nbits (not checked). */
void bc__bitidx_set(bc__bitidx *b, uint64_t i);
void bc__bitidx_clear(bc__bitidx *b, uint64_t i);
int bc__bitidx_test(const bc__bitidx *b, uint64_t i);

/* The largest set bit <= i (i < nbits), or BC__BITIDX_NONE. */
uint64_t bc__bitidx_pred(const bc__bitidx *b, uint64_t i);

#endif
