/* Shared by the resident GPU tests: fresh N(0, 1) data of a type on the
 * host and a device copy of it, and every row of a GEMM's D checked
 * against the fp64 reference. */
#ifndef BC_TESTS_GPU_REF_CHECK_H
#define BC_TESTS_GPU_REF_CHECK_H

#include <stdlib.h>
#include <string.h>

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

/* Every row of d's D, read back from the device, against the fp64
 * reference from the host copies of what it reads (c and bias may be NULL
 * when unused); fails the test on any element out of tolerance or not
 * written. */
static inline void gpu_check_d(gpu_env *env, const bc_gemm_desc *d, const void *ha, const void *hb, const void *hc,
                               const void *hbias)
{
    const size_t bytes = (size_t)(d->m * d->n) * bc_dtype_bytes(d->d_type);
    void *got = malloc(bytes);
    double *ref = malloc((size_t)d->n * sizeof *ref);
    CHECK_BC(bc_memcpy_dtoh(env->dev, got, d->d, bytes));
    bc_ref_error e;
    memset(&e, 0, sizeof e);
    for (int64_t r = 0; r < d->m; r++) {
        bc_ref_gemm_row(d, ha, hb, hc, hbias, r, ref);
        bc_ref_compare_row(d, got, r, ref, &e);
    }
    free(got), free(ref);
    if (e.bad + e.nonfinite)
        fail_msg("%lldx%lldx%lld: %zu bad, %zu unwritten of %zu", (long long)d->m, (long long)d->n, (long long)d->k,
                 e.bad, e.nonfinite, e.checked);
}

#endif
