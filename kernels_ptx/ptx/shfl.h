/* Warp shuffles (all 32 lanes converged). */
#ifndef BC_PTX_SHFL_H
#define BC_PTX_SHFL_H

#include "sreg.h"

/* The value of v in lane (this lane XOR mask). */
BC_DEVICE float bc_shfl_xor_f32(float v, uint32_t mask)
{
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(mask));
    return r;
}

#endif
