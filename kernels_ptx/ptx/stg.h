/* Global stores the epilogues issue themselves (any sm_80+ target). */
#ifndef BC_PTX_STG_H
#define BC_PTX_STG_H

#include "sreg.h"

/* One 16-byte store to global memory (16-byte aligned). */
BC_DEVICE void bc_st_global_v4u32(uint64_t addr, uint32_t x, uint32_t y, uint32_t z, uint32_t w)
{
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(addr), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
}

#endif
