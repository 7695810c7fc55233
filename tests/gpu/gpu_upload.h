/* Shared by the resident GPU tests: fresh N(0, 1) data of a type on the
 * host and a device copy of it. */
#ifndef BC_TESTS_GPU_UPLOAD_H
#define BC_TESTS_GPU_UPLOAD_H

#include <stdlib.h>

#include "gpu_common.h"
#include "ref.h"

/* `elems` values of type t in a new host buffer (returned; the caller
 * frees it) and in a new device allocation (*out). */
static inline void *gpu_upload(gpu_env *env, size_t elems, bc_dtype t, bc_rng *rng, bc_devptr *out)
{
    void *h = malloc(elems * bc_dtype_bytes(t));
    bc_ref_fill_normal(h, t, elems, 1.0, rng);
    CHECK_BC(bc_mem_alloc(env->dev, elems * bc_dtype_bytes(t), out));
    CHECK_BC(bc_memcpy_htod(env->dev, *out, h, elems * bc_dtype_bytes(t)));
    return h;
}

#endif
