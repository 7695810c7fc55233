/* Thread-block clusters (sm_90+): the CTA's place in its cluster, reads of
 * another CTA's shared memory (DSMEM) and the cluster-wide barrier. */
#ifndef BC_PTX_CLUSTER_H
#define BC_PTX_CLUSTER_H

#include "sreg.h"

BC_DEVICE uint32_t bc_cluster_ctarank(void)
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

BC_DEVICE uint32_t bc_clusterid_x(void)
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}

BC_DEVICE uint32_t bc_cluster_nctarank(void)
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}

/* The shared::cluster address of shared address `a` in CTA `rank`. */
BC_DEVICE uint32_t bc_mapa(uint32_t a, uint32_t rank)
{
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}

/* Stores two floats at shared::cluster address `a` (another CTA's shared
 * memory through bc_mapa); 8-byte aligned. Ordered for that CTA by a
 * following cluster barrier (release/acquire). */
BC_DEVICE void bc_st_cluster_v2(uint32_t a, float x, float y)
{
    asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(a), "f"(x), "f"(y) : "memory");
}

/* The float at shared::cluster address `a` (another CTA's shared memory
 * through bc_mapa), after a cluster barrier that ordered its store. */
BC_DEVICE float bc_ld_cluster_f32(uint32_t a)
{
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
    return v;
}

/* Every thread of every CTA of the cluster arrives (release) and waits
 * (acquire). Converged warps only (.aligned). */
BC_DEVICE void bc_cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* The same for threads that may have diverged (no .aligned). */
BC_DEVICE void bc_cluster_sync_divergent(void)
{
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

#endif
