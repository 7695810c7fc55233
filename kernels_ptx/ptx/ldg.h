/* Global loads: through the non-coherent (read-only) path, for operands no
 * thread of the grid writes while the kernel runs (A and B of a launched
 * GEMM: the plan refuses a D that overlaps them); 16 bytes through L2 for
 * operands that change while a kernel runs (the resident executor's); and
 * predicated coherent loads and stores of single elements. */
#ifndef BC_PTX_LDG_H
#define BC_PTX_LDG_H

#include "sreg.h"

typedef uint32_t bc_ldg_u32x4 __attribute__((ext_vector_type(4)));

#define BC__LDG_V4(qual, a)                                                                         \
    ({                                                                                               \
        bc_ldg_u32x4 v_;                                                                             \
        asm volatile("ld.global.nc" qual ".v4.u32 {%0, %1, %2, %3}, [%4];"                           \
                     : "=r"(v_.x), "=r"(v_.y), "=r"(v_.z), "=r"(v_.w)                                \
                     : "l"(a));                                                                      \
        v_;                                                                                          \
    })

/* 16 bytes at global address a (16-byte aligned). Volatile: issued in
 * program order, never hoisted above a griddepcontrol.wait. */
BC_DEVICE bc_ldg_u32x4 bc_ldg_nc_v4(uint64_t a) { return BC__LDG_V4("", a); }

/* The same, for data read once: not kept in L1 (a stream of a large
 * operand would only evict what is read again). */
BC_DEVICE bc_ldg_u32x4 bc_ldg_nc_stream_v4(uint64_t a) { return BC__LDG_V4(".L1::no_allocate", a); }

/* 16 bytes at global address a (16-byte aligned) from L2, never from a
 * copy L1 kept: for a persistent kernel whose operands other CTAs, or the
 * host between steps, rewrite (weak: ordered by the acquire before it).
 * Volatile, as above. */
BC_DEVICE bc_ldg_u32x4 bc_ldg_cg_v4(uint64_t a)
{
    bc_ldg_u32x4 v;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a));
    return v;
}

/* The 16-bit (bytes 2) or 32-bit (bytes 4, a compile-time constant) word
 * at global address a when p is non-zero, else 0, zero-extended: a
 * predicated load, not a branch around one, so that a thread has several in
 * flight before it uses the first. Coherent (ld.global: what an earlier
 * kernel wrote). Volatile: issued in program order, never hoisted above a
 * griddepcontrol.wait. */
#define BC__LD_GLOBAL_IF(type) \
    "{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\tmov.u32 %0, 0;\n\t@q ld.global." type " %0, [%1];\n\t}"
BC_DEVICE uint32_t bc_ld_global_if(uint64_t a, uint32_t p, const uint32_t bytes)
{
    uint32_t v;
    if (bytes == 4)
        asm volatile(BC__LD_GLOBAL_IF("u32") : "=r"(v) : "l"(a), "r"(p));
    else
        asm volatile(BC__LD_GLOBAL_IF("u16") : "=r"(v) : "l"(a), "r"(p));
    return v;
}

/* Stores the low `bytes` (2 or 4, a compile-time constant) of v at global
 * address a when p is non-zero: a predicated store, not a branch around
 * one, so that the value is worked out on every lane and no element needs
 * a branch of its own. Volatile with a memory clobber: stays in program
 * order with the loads around it (C may be the D it stores to). */
#define BC__ST_GLOBAL_IF(type) "{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\t@q st.global." type " [%0], %1;\n\t}"
BC_DEVICE void bc_st_global_if(uint64_t a, uint32_t v, uint32_t p, const uint32_t bytes)
{
    if (bytes == 4)
        asm volatile(BC__ST_GLOBAL_IF("b32")::"l"(a), "r"(v), "r"(p) : "memory");
    else
        asm volatile(BC__ST_GLOBAL_IF("b16")::"l"(a), "h"((uint16_t)v), "r"(p) : "memory");
}

#endif
