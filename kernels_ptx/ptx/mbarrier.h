/* mbarrier (sm_90+): init, arrive, expect-tx, parity wait.
 * Addresses are 32-bit .shared::cta offsets (bc_smem_u32). */
#ifndef BC_PTX_MBARRIER_H
#define BC_PTX_MBARRIER_H

#include "sreg.h"

/* 32-bit shared-window address of a shared-memory object. */
#define bc_smem_u32(p) ((uint32_t)(uintptr_t)(p))

BC_DEVICE void bc_mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

/* Ends the barrier object's life (before its shared memory is released or
 * reused); no thread may use it afterwards. */
BC_DEVICE void bc_mbar_inval(uint32_t bar)
{
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

/* Makes mbarrier.init visible to the other threads and the async proxy;
 * follow with a CTA (or cluster) barrier. */
BC_DEVICE void bc_mbar_fence_init(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

BC_DEVICE void bc_mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

/* Arrives on the barrier at the same offset in CTA `cta` of the cluster
 * (mapa), with the default .release.cta semantics as CUTLASS's
 * ClusterBarrier: it orders this thread's finished wgmma reads of the stage
 * before the remote producer's next TMA write into it. */
BC_DEVICE void bc_mbar_arrive_cluster(uint32_t bar, uint32_t cta)
{
    asm volatile("{\n\t.reg .b32 remote;\n\t"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}"
                 ::"r"(bar), "r"(cta) : "memory");
}

/* expect-tx(bytes) then arrive(1). */
BC_DEVICE void bc_mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;"
                 ::"r"(bar), "r"(bytes) : "memory");
}

/* 1 once the phase with the given parity has completed (may suspend briefly). */
BC_DEVICE uint32_t bc_mbar_try_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}

BC_DEVICE void bc_mbar_wait(uint32_t bar, uint32_t parity)
{
    while (!bc_mbar_try_wait(bar, parity)) {
    }
}

#endif
