/* Special registers and plain-thread helpers (any sm_90+ target). */
#ifndef BC_PTX_SREG_H
#define BC_PTX_SREG_H

#include "../pure.h"

#define BC_KERNEL __attribute__((nvptx_kernel))

BC_DEVICE uint32_t bc_tid_x(void) { return __nvvm_read_ptx_sreg_tid_x(); }
BC_DEVICE uint32_t bc_ntid_x(void) { return __nvvm_read_ptx_sreg_ntid_x(); }
BC_DEVICE uint32_t bc_ctaid_x(void) { return __nvvm_read_ptx_sreg_ctaid_x(); }
BC_DEVICE uint32_t bc_nctaid_x(void) { return __nvvm_read_ptx_sreg_nctaid_x(); }

BC_DEVICE uint64_t bc_globaltimer_ns(void)
{
    uint64_t r;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(r));
    return r;
}

/* x, hidden from the optimiser: values derived from it are computed where
 * they are used instead of being hoisted out of loops and kept live (the
 * epilogue's per-thread offsets would otherwise occupy registers across the
 * whole tile loop). */
BC_DEVICE uint32_t bc_opaque_u32(uint32_t x)
{
    asm volatile("mov.b32 %0, %0;" : "+r"(x));
    return x;
}

/* bar.sync on a named barrier with a thread count (multiple of 32). */
BC_DEVICE void bc_bar_sync(uint32_t id, uint32_t nthreads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

/* The same for threads whose warps may have diverged (barrier.sync without
 * .aligned: each thread counts itself). */
BC_DEVICE void bc_bar_sync_divergent(uint32_t id, uint32_t nthreads)
{
    asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

/* bar.red.or on a named barrier with a thread count: a barrier that also
 * returns 1 to every participant when any of them passed a non-zero v. */
BC_DEVICE uint32_t bc_bar_red_or(uint32_t id, uint32_t nthreads, uint32_t v)
{
    uint32_t r;
    asm volatile("{\n\t.reg .pred p, q;\n\tsetp.ne.u32 q, %1, 0;\n\tbar.red.or.pred p, %2, %3, q;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(r)
                 : "r"(v), "r"(id), "r"(nthreads)
                 : "memory");
    return r;
}

BC_DEVICE void bc_syncthreads(void) { asm volatile("bar.sync 0;" ::: "memory"); }
/* The CTA-wide barrier 0 for threads whose warps may have diverged
 * (barrier.sync without .aligned). */
BC_DEVICE void bc_syncthreads_divergent(void) { asm volatile("barrier.sync 0;" ::: "memory"); }
/* Suspends the thread for about `ns` nanoseconds (0..2*ns; at most 1 ms). */
BC_DEVICE void bc_nanosleep(uint32_t ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }

/* Reconverges the warp (all 32 lanes) before a .sync.aligned instruction. */
BC_DEVICE void bc_syncwarp(void) { asm volatile("bar.warp.sync -1;" ::: "memory"); }

/* 1 in exactly one lane of the (fully active) warp. */
BC_DEVICE uint32_t bc_elect_one(void)
{
    uint32_t pred;
    asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(pred));
    return pred;
}

#endif
