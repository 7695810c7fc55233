/* Ring arithmetic shared by the Hopper and Blackwell kernels (and by the
 * host model of the Blackwell pipeline, tests/unit/sm100_model.c).
 *
 * A ring of n slots (the TMA stages, the TMEM accumulator buffers) guarded
 * by a "full" and an "empty" mbarrier per slot is walked by each of its
 * users with its own (slot, phase) pair, advanced once per use, or derived
 * from a use counter: use u of the ring is slot u % n with phase
 * (u / n) & 1. mbarrier.try_wait.parity(p) succeeds once the
 * phase of parity p has completed, so
 *   - a waiter on "full" (data ready) waits for parity `phase`;
 *   - a waiter on "empty" (slot free) waits for parity `phase ^ 1`, which on
 *     the first lap is the phase before phase 0 and counts as complete: the
 *     filler starts without a handshake.
 */
#ifndef BC_KERNELS_RING_H
#define BC_KERNELS_RING_H

#include "pure.h"

/* Test hook: the pipeline model builds one mutant with a broken phase flip
 * (-DBC__RING_FLIP=0u) to show that its checker catches it. No kernel
 * build defines it. */
#ifndef BC__RING_FLIP
#define BC__RING_FLIP 1u
#endif

/* The next use of the ring: slot + 1, wrapping to 0 with the phase flipped. */
BC_DEVICE void bc_ring_advance(uint32_t *slot, uint32_t *phase, uint32_t n)
{
    if (++*slot == n) {
        *slot = 0;
        *phase ^= BC__RING_FLIP;
    }
}

/* The same walk from a use counter u: slot u % n, phase (u / n) & 1. */
BC_DEVICE uint32_t bc_ring_slot(uint32_t u, uint32_t n) { return u % n; }
BC_DEVICE uint32_t bc_ring_phase(uint32_t u, uint32_t n) { return (u / n) & BC__RING_FLIP; }

/* The parity a waiter on a slot's "full" barrier waits for. */
BC_DEVICE uint32_t bc_ring_full_parity(uint32_t phase) { return phase; }

/* The parity a waiter on a slot's "empty" barrier waits for. */
BC_DEVICE uint32_t bc_ring_empty_parity(uint32_t phase) { return phase ^ 1u; }

/* Shared-memory address of slot `slot` of a ring of `bytes`-byte slots at `base`. */
BC_DEVICE uint32_t bc_ring_addr(uint32_t base, uint32_t slot, uint32_t bytes) { return base + slot * bytes; }

#endif
