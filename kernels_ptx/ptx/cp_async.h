/* cp.async (sm_80+): asynchronous 16-byte global -> shared copies, grouped
 * and waited for by the issuing thread. Shared addresses are 32-bit
 * .shared::cta offsets (bc_smem_u32 in mbarrier.h, or computed ones). */
#ifndef BC_PTX_CP_ASYNC_H
#define BC_PTX_CP_ASYNC_H

#include "sreg.h"

/* Copies 16 bytes from global `src` to shared `dst` (both 16-byte aligned),
 * bypassing L1 (.cg). With `valid` 0 nothing is read (src-size 0) and the 16
 * bytes are zero-filled: the edge rows and columns of a tile. `src` must
 * still be a mapped address (callers pass the operand's base). */
BC_DEVICE void bc_cp_async16(uint32_t dst, uint64_t src, uint32_t valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16u : 0u)
                 : "memory");
}

/* Closes the group of this thread's cp.async issued since the last commit
 * (possibly empty: every thread commits the same number of groups). */
BC_DEVICE void bc_cp_async_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }

/* Waits until at most N of this thread's committed groups are pending. */
#define bc_cp_async_wait(N) asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory")

#endif
