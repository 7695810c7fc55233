/* Proxy fences and cluster barriers (sm_90+). */
#ifndef BC_PTX_FENCE_H
#define BC_PTX_FENCE_H

#include "sreg.h"

/* Orders this thread's generic-proxy shared-memory writes before later
 * async-proxy (TMA store, wgmma, tcgen05) reads, and vice versa. */
BC_DEVICE void bc_fence_proxy_async_smem(void)
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* Acquire a tensor map that lives in global or param memory and was written
 * by the host, before its first use by TMA. `tmap` is a generic address. */
BC_DEVICE void bc_fence_tensormap_acquire(uint64_t tmap)
{
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(tmap) : "memory");
}

BC_DEVICE void bc_cluster_arrive(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

BC_DEVICE void bc_cluster_wait(void)
{
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

BC_DEVICE void bc_cluster_sync(void)
{
    bc_cluster_arrive();
    bc_cluster_wait();
}

/* The same barrier for threads that may have diverged (no .aligned). */
BC_DEVICE void bc_cluster_sync_divergent(void)
{
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

#endif
