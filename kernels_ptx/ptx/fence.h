/* Memory fences (sm_90+). */
#ifndef BC_PTX_FENCE_H
#define BC_PTX_FENCE_H

#include "sreg.h"

/* Makes this thread's generic-proxy shared-memory writes visible to the
 * async proxy (TMA store, wgmma operand reads) once a barrier follows. */
BC_DEVICE void bc_fence_proxy_async_smem(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* The same between the generic and async proxies for global memory: after
 * this thread's completed TMA stores (cp.async.bulk.wait_group 0) before it
 * publishes them with a generic release; after it acquired data others
 * published before its TMA loads read it. */
BC_DEVICE void bc_fence_proxy_async_global(void) { asm volatile("fence.proxy.async.global;" ::: "memory"); }
/* Acquires, for the tensormap proxy, the 128-byte tensor map at generic
 * global address `map` that the host wrote (system scope) before this
 * grid's TMA operations use it. */
BC_DEVICE void bc_fence_tensormap_acquire_sys(uint64_t map)
{
    asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(map) : "memory");
}

#endif
