/* tcgen05 (Blackwell: sm_100a/100f/103a/110a): tensor memory (TMEM)
 * allocation, the single-thread asynchronous MMA, its commit to an mbarrier,
 * TMEM -> register loads and the tcgen05 thread-sync fences. Every op uses
 * .cta_group::1: a kernel must use one cta_group for all its tcgen05 ops.
 *
 * TMEM is 128 lanes x 512 columns of 32 bits per CTA; an address is
 * lane << 16 | column (sm100_desc.h: bc_sm100_tmem_addr). Warp w may access
 * only lanes 32*(w%4) .. 32*(w%4)+31 with tcgen05.ld/st.
 *
 * Shared-memory operands (allocation slot, mbarriers) are 32-bit
 * .shared::cta addresses (bc_smem_u32). Descriptors come from sm100_desc.h.
 */
#ifndef BC_PTX_TCGEN05_H
#define BC_PTX_TCGEN05_H

#include "sreg.h"

/* Allocates `ncols` TMEM columns (power of 2 in [32, 512]) for all 128 lanes
 * and writes the base address to the u32 at shared address `slot`. Executed
 * by one whole warp, converged; may block until the columns are free. The
 * other threads read the slot after before_thread_sync / CTA barrier /
 * after_thread_sync. */
BC_DEVICE void bc_tcgen05_alloc(uint32_t slot, uint32_t ncols)
{
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(slot),
                 "r"(ncols)
                 : "memory");
}

/* Frees what bc_tcgen05_alloc returned; same whole warp. Every tcgen05 op on
 * those columns must have completed, and all TMEM must be freed before the
 * kernel exits. */
BC_DEVICE void bc_tcgen05_dealloc(uint32_t taddr, uint32_t ncols)
{
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols)
                 : "memory");
}

/* This CTA will not allocate again: lets other CTAs waiting on TMEM go. */
BC_DEVICE void bc_tcgen05_relinquish_alloc_permit(void)
{
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}

/* D[tmem] (+)= A . B^T, kind::f16 (bf16/f16 in, f32 or f16 accumulate), A
 * and B from shared memory through their 64-bit descriptors, shape and
 * types from the 32-bit instruction descriptor. Issued by ONE thread;
 * asynchronous: completion is observed only through bc_tcgen05_commit.
 * accumulate == 0 overwrites D (first k-step of a tile). MMAs on the same
 * accumulator execute in issue order. */
BC_DEVICE void bc_tcgen05_mma_f16(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                  uint32_t accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %4, 0;\n\t"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}" ::"r"(d_tmem),
                 "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
                 : "memory");
}

/* The mbarrier at shared address `bar` receives one arrive once every
 * tcgen05 async op (mma) this thread issued before has completed. Implies
 * tcgen05.fence::before_thread_sync.
 *
 * Operand form: without a state space the operand would be a *generic*
 * address and need a 64-bit generic pointer (ptxas also accepts a 32-bit
 * register there, which would be wrong at run time). We use the explicit
 * .shared::cluster form with the 32-bit shared address, as CUTLASS
 * (umma_arrive) and CCCL (cuda::ptx::tcgen05_commit) do: a CTA's own
 * .shared::cta address is valid in the .shared::cluster window, and no
 * cvta is needed. */
BC_DEVICE void bc_tcgen05_commit(uint32_t bar)
{
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(bar)
                 : "memory");
}

/* 32 lanes x 32 bits, repeated over 32 columns: lane t of the warp gets TMEM
 * lane (taddr.lane + t), register j = column (taddr.col + j). Warp-wide
 * (.sync.aligned: all 32 lanes, same taddr). Asynchronous: the registers may
 * be read only after bc_tcgen05_wait_ld, and bc_tcgen05_pin32 after that
 * wait keeps the compiler from reading them earlier. */
BC_DEVICE void bc_tcgen05_ld_32x32b_x32(uint32_t *v, uint32_t taddr)
{
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                 "}, [%32];"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]), "=r"(v[6]),
                   "=r"(v[7]), "=r"(v[8]), "=r"(v[9]), "=r"(v[10]), "=r"(v[11]), "=r"(v[12]), "=r"(v[13]),
                   "=r"(v[14]), "=r"(v[15]), "=r"(v[16]), "=r"(v[17]), "=r"(v[18]), "=r"(v[19]),
                   "=r"(v[20]), "=r"(v[21]), "=r"(v[22]), "=r"(v[23]), "=r"(v[24]), "=r"(v[25]),
                   "=r"(v[26]), "=r"(v[27]), "=r"(v[28]), "=r"(v[29]), "=r"(v[30]), "=r"(v[31])
                 : "r"(taddr)
                 : "memory");
}

/* Waits until every tcgen05.ld of this thread has completed. */
BC_DEVICE void bc_tcgen05_wait_ld(void) { asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory"); }

/* Redefines the 32 loaded registers after bc_tcgen05_wait_ld, so no use of
 * them can be scheduled above the wait (volatile asm keeps its order with
 * the ld and the wait; this carries that order to the values). No code. */
BC_DEVICE void bc_tcgen05_pin32(uint32_t *v)
{
#pragma unroll
    for (int i = 0; i < 32; i++)
        asm volatile("" : "+r"(v[i])::"memory");
}

/* Orders this thread's earlier tcgen05 ops before its next thread sync
 * (barrier, mbarrier arrive). */
BC_DEVICE void bc_tcgen05_fence_before(void)
{
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}

/* Orders this thread's later tcgen05 ops after its last thread sync
 * (barrier, mbarrier wait). */
BC_DEVICE void bc_tcgen05_fence_after(void)
{
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

#endif
