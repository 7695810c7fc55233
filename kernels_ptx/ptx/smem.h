/* Plain shared-memory loads and stores at 32-bit shared-window addresses
 * (bc_smem_u32), for data the async proxy wrote or will read. */
#ifndef BC_PTX_SMEM_H
#define BC_PTX_SMEM_H

#include "sreg.h"

BC_DEVICE void bc_st_shared_b32(uint32_t a, uint32_t v) { asm volatile("st.shared.b32 [%0], %1;" ::"r"(a), "r"(v)); }

BC_DEVICE void bc_st_shared_b16(uint32_t a, uint16_t v) { asm volatile("st.shared.b16 [%0], %1;" ::"r"(a), "h"(v)); }

BC_DEVICE void bc_st_shared_v2f32(uint32_t a, float x, float y)
{
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(a), "f"(x), "f"(y));
}

typedef struct bc_u32x4s {
    uint32_t x, y, z, w;
} bc_u32x4s;

BC_DEVICE bc_u32x4s bc_ld_shared_v4b32(uint32_t a)
{
    bc_u32x4s v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
    return v;
}

BC_DEVICE void bc_st_shared_v4b32(uint32_t a, bc_u32x4s v)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}

typedef struct bc_f32x4s {
    float x, y, z, w;
} bc_f32x4s;

BC_DEVICE bc_f32x4s bc_ld_shared_v4f32(uint32_t a)
{
    bc_f32x4s v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a));
    return v;
}

BC_DEVICE float bc_ld_shared_f32(uint32_t a)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}

BC_DEVICE uint32_t bc_ld_shared_b32(uint32_t a)
{
    uint32_t v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(a));
    return v;
}

BC_DEVICE uint16_t bc_ld_shared_b16(uint32_t a)
{
    uint16_t v;
    asm volatile("ld.shared.b16 %0, [%1];" : "=h"(v) : "r"(a));
    return v;
}

typedef struct bc_f32x2s {
    float x, y;
} bc_f32x2s;

BC_DEVICE bc_f32x2s bc_ld_shared_v2f32(uint32_t a)
{
    bc_f32x2s v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(a));
    return v;
}

/* Bytes of a and b (b above a) selected by prmt's selector `sel`. */
BC_DEVICE uint32_t bc_prmt(uint32_t a, uint32_t b, uint32_t sel)
{
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
}

#endif
