/* prefetch: bring a global line into a cache level ahead of its use, with
 * nothing to wait for. */
#ifndef BC_PTX_PREFETCH_H
#define BC_PTX_PREFETCH_H

#include "sreg.h"

/* The line holding global address `a` into this SM's L1. */
BC_DEVICE void bc_prefetch_l1(uint64_t a) { asm volatile("prefetch.global.L1 [%0];" ::"l"(a)); }

/* The line holding global address `a` into L2. */
BC_DEVICE void bc_prefetch_l2(uint64_t a) { asm volatile("prefetch.global.L2 [%0];" ::"l"(a)); }

#endif
