/* Memory fences (sm_90+). */
#ifndef BC_PTX_FENCE_H
#define BC_PTX_FENCE_H

#include "sreg.h"

/* Makes this thread's generic-proxy shared-memory writes visible to the
 * async proxy (TMA store, wgmma operand reads) once a barrier follows. */
BC_DEVICE void bc_fence_proxy_async_smem(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

#endif
