/* Global loads with cache hints, and vector stores (any sm_80+ target). */
#ifndef BC_PTX_LDG_H
#define BC_PTX_LDG_H

#include "sreg.h"

typedef struct bc_u32x4 {
    uint32_t x, y, z, w;
} bc_u32x4;

/* 16 bytes through the non-coherent path, not kept in L1 (data read once). */
BC_DEVICE bc_u32x4 bc_ldg_stream_v4(uint64_t addr)
{
    bc_u32x4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(addr));
    return v;
}

/* 16 bytes through the non-coherent path, kept in L1 (data other warps re-read). */
BC_DEVICE bc_u32x4 bc_ldg_v4(uint64_t addr)
{
    bc_u32x4 v;
    asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(addr));
    return v;
}

/* One 16-byte store to global memory (16-byte aligned). */
BC_DEVICE void bc_st_global_v4u32(uint64_t addr, uint32_t x, uint32_t y, uint32_t z, uint32_t w)
{
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(addr), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
}

#endif
