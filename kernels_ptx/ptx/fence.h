/* Memory fences (sm_70+; the proxy fence sm_90+). */
#ifndef BC_PTX_FENCE_H
#define BC_PTX_FENCE_H

#include "sreg.h"

/* Orders all prior memory accesses of this thread (and, cumulatively, those
 * it observed through a CTA barrier) before later ones, GPU-wide. */
BC_DEVICE void bc_fence_acq_rel_gpu(void) { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

/* Makes this thread's generic-proxy shared-memory writes visible to the
 * async proxy (TMA store, wgmma operand reads) once a barrier follows. */
BC_DEVICE void bc_fence_proxy_async_smem(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

#endif
