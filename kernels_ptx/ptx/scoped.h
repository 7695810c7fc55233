/* Loads, stores and reductions with explicit memory-model semantics and
 * scope (PTX ISA, "Memory Consistency Model"): the grid barrier and the
 * host doorbell of the resident kernel. Addresses are generic (global
 * memory, or mapped pinned host memory whose device address the driver
 * gave). .gpu scope orders against other CTAs of this GPU; .sys also
 * against the host. */
#ifndef BC_PTX_SCOPED_H
#define BC_PTX_SCOPED_H
#include "sreg.h"
BC_DEVICE uint64_t bc_ld_acquire_gpu_u64(uint64_t a)
{
    uint64_t v;
    asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
    return v;
}
BC_DEVICE uint64_t bc_ld_acquire_sys_u64(uint64_t a)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
    return v;
}
BC_DEVICE void bc_st_release_gpu_u64(uint64_t a, uint64_t v)
{
    asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
BC_DEVICE void bc_st_release_sys_u64(uint64_t a, uint64_t v)
{
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
/* *a += v, no result; release: this thread's earlier writes (and those it
 * observed, cumulatively) are visible before the addition is. */
BC_DEVICE void bc_red_release_gpu_add_u64(uint64_t a, uint64_t v)
{
    asm volatile("red.release.gpu.add.u64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
BC_DEVICE void bc_red_release_sys_add_u64(uint64_t a, uint64_t v)
{
    asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
/* 16 bytes, strong at system scope: data the host writes or reads between
 * steps (a step's host-memory inputs and outputs) never comes from, or
 * stays in, a cache the host does not see. 16-byte aligned. */
typedef uint32_t bc_u32x4 __attribute__((ext_vector_type(4)));
BC_DEVICE bc_u32x4 bc_ld_relaxed_sys_v4(uint64_t a)
{
    bc_u32x4 v;
    asm volatile("ld.relaxed.sys.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a) : "memory");
    return v;
}
BC_DEVICE void bc_st_relaxed_sys_v4(uint64_t a, bc_u32x4 v)
{
    asm volatile("st.relaxed.sys.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
/* The resident kernel's split-K exchange (resident_sm90.c): an arrival
 * counter, and the partials it publishes. *a += v, returning the old value;
 * release (this thread's earlier writes, and those it observed, before the
 * addition) and acquire (the writes released by earlier additions are
 * visible after it). */
BC_DEVICE uint32_t bc_atom_add_acq_rel_gpu_u32(uint64_t a, uint32_t v)
{
    uint32_t old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(a), "r"(v) : "memory");
    return old;
}
BC_DEVICE void bc_st_relaxed_gpu_u32(uint64_t a, uint32_t v)
{
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
/* Two floats to global memory (weak: published by a later release). */
BC_DEVICE void bc_st_global_v2f32(uint64_t a, float x, float y)
{
    asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(a), "f"(x), "f"(y) : "memory");
}
/* Four floats to global memory (weak: published by a later release). */
BC_DEVICE void bc_st_global_v4f32(uint64_t a, float x, float y, float z, float w)
{
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(a), "f"(x), "f"(y), "f"(z), "f"(w) : "memory");
}
/* Four floats from L2 (.cg: never an earlier step's copy from L1), weak:
 * ordered by the acquire before them. */
typedef float bc_f32x4 __attribute__((ext_vector_type(4)));
BC_DEVICE bc_f32x4 bc_ld_cg_v4f32(uint64_t a)
{
    bc_f32x4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(a) : "memory");
    return v;
}
/* bc_ld_cg_v4f32 when p is non-zero, else 0.0f x 4: a predicated load, not
 * a branch around one, so that a thread has several in flight before it
 * uses the first. */
BC_DEVICE bc_f32x4 bc_ld_cg_v4f32_if(uint64_t a, uint32_t p)
{
    bc_f32x4 v;
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %5, 0;\n\tmov.f32 %0, 0f00000000;\n\tmov.f32 %1, "
                 "0f00000000;\n\tmov.f32 %2, 0f00000000;\n\tmov.f32 %3, 0f00000000;\n\t@q ld.global.cg.v4.f32 {%0, "
                 "%1, %2, %3}, [%4];\n\t}"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(a), "r"(p)
                 : "memory");
    return v;
}
#endif
