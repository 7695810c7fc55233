/* Global loads through the non-coherent (read-only) path, for operands no
 * thread of the grid writes while the kernel runs (A and B of a GEMM: the
 * plan refuses a D that overlaps them). */
#ifndef BC_PTX_LDG_H
#define BC_PTX_LDG_H

#include "sreg.h"

typedef uint32_t bc_ldg_u32x4 __attribute__((ext_vector_type(4)));

/* 16 bytes at global address a (16-byte aligned). Volatile: issued in
 * program order, never hoisted above a griddepcontrol.wait. */
BC_DEVICE bc_ldg_u32x4 bc_ldg_nc_v4(uint64_t a)
{
    bc_ldg_u32x4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(a));
    return v;
}

#endif
