/* Global-memory atomics and ordered loads/stores at GPU scope (sm_70+),
 * for the split-K grid barrier. Addresses are generic. */
#ifndef BC_PTX_ATOMIC_H
#define BC_PTX_ATOMIC_H

#include "sreg.h"

BC_DEVICE uint32_t bc_atom_add_acq_rel_gpu(uint64_t addr, uint32_t v)
{
    uint32_t old;
    asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], %2;" : "=r"(old) : "l"(addr), "r"(v) : "memory");
    return old;
}

BC_DEVICE uint32_t bc_ld_acquire_gpu(uint64_t addr)
{
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
    return v;
}

BC_DEVICE void bc_st_relaxed_gpu(uint64_t addr, uint32_t v)
{
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(addr), "r"(v) : "memory");
}

BC_DEVICE void bc_nanosleep(uint32_t ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }

#endif
