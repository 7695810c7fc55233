/* Warp shuffles (all 32 lanes take part). */
#ifndef BC_PTX_SHFL_H
#define BC_PTX_SHFL_H

#include "sreg.h"

/* v of lane (this lane XOR mask). */
BC_DEVICE float bc_shfl_xor(float v, uint32_t mask)
{
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(mask));
    return r;
}

/* v of lane `src`. */
BC_DEVICE float bc_shfl_idx(float v, uint32_t src)
{
    float r;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(src));
    return r;
}

#endif
