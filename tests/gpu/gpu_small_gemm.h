/* Shared by the GPU fault and operand tests: one GEMM on fresh random
 * inputs, D poisoned, checked against the fp64 CPU reference (ref.h), with
 * operands anywhere the caller put them: device memory or host memory mapped
 * for the device (`*_host` flags: filled and read back with memcpy). */
#ifndef BC_TESTS_GPU_SMALL_GEMM_H
#define BC_TESTS_GPU_SMALL_GEMM_H

#include <stdlib.h>
#include <string.h>

#include "barecuda.h"
#include "ref.h"

typedef struct small_gemm {
    bc_gemm_desc d;                /* shape, types, lds and pointers set by the caller */
    int a_host, b_host, d_host;    /* operand lies in mapped host memory */
} small_gemm;

static inline size_t small_bytes(int64_t rows, int64_t ld, bc_dtype t)
{
    return (size_t)((rows - 1) * ld) * bc_dtype_bytes(t) + (size_t)ld * bc_dtype_bytes(t);
}

static inline bc_status small_put(bc_device *dev, bc_devptr dst, int host, const void *src, size_t n)
{
    if (host) {
        memcpy((void *)(uintptr_t)dst, src, n);
        return BC_OK;
    }
    return bc_memcpy_htod(dev, dst, src, n);
}

/* Plans (unless `plan` is given), fills, runs, compares. BC_OK when every
 * element is within the reference's tolerance; BC_ERR_VERIFY_FAILED when
 * not; else the failing call's status. */
static inline bc_status small_gemm_run(bc_device *dev, bc_stream *s, const small_gemm *g, bc_gemm_plan *plan,
                                       uint64_t seed)
{
    const bc_gemm_desc *d = &g->d;
    const size_t sa = small_bytes(d->m, d->lda ? d->lda : d->k, d->ab_type);
    const size_t sb = small_bytes(d->n, d->ldb ? d->ldb : d->k, d->ab_type);
    const int64_t ldd = d->ldd ? d->ldd : d->n;
    const size_t sd = small_bytes(d->m, ldd, d->d_type);
    void *ha = malloc(sa), *hb = malloc(sb), *hd = malloc(sd);
    double *ref = malloc((size_t)d->n * sizeof *ref);
    bc_status st = ha && hb && hd && ref ? BC_OK : BC_ERR_OUT_OF_HOST_MEMORY;
    bc_gemm_plan *own = NULL;
    bc_rng rng = {seed};
    if (!st) {
        bc_ref_fill_normal(ha, d->ab_type, sa / bc_dtype_bytes(d->ab_type), 1.0, &rng);
        bc_ref_fill_normal(hb, d->ab_type, sb / bc_dtype_bytes(d->ab_type), 1.0, &rng);
        memset(hd, 0xFF, sd); /* NaN in every type */
        st = small_put(dev, d->a, g->a_host, ha, sa);
    }
    if (!st) st = small_put(dev, d->b, g->b_host, hb, sb);
    if (!st) st = small_put(dev, d->d, g->d_host, hd, sd);
    if (!st && plan == NULL)
        st = bc_gemm_plan_create(dev, d, &own);
    if (!st) st = bc_gemm_launch(plan ? plan : own, s);
    if (!st) st = bc_stream_wait(s, 10ull * 1000000000ull);
    if (!st && g->d_host)
        memcpy(hd, (const void *)(uintptr_t)d->d, sd);
    else if (!st)
        st = bc_memcpy_dtoh(dev, hd, d->d, sd);
    if (!st) {
        bc_gemm_desc full = *d;
        full.lda = d->lda ? d->lda : d->k, full.ldb = d->ldb ? d->ldb : d->k, full.ldd = ldd;
        bc_ref_error e;
        memset(&e, 0, sizeof e);
        for (int64_t row = 0; row < d->m; row++) {
            bc_ref_gemm_row(&full, ha, hb, NULL, NULL, row, ref);
            bc_ref_compare_row(&full, hd, row, ref, &e);
        }
        if (e.nonfinite || e.bad || bc_ref_rel_frobenius(&e) > bc_ref_bound(d->d_type, d->k))
            st = BC_ERR_VERIFY_FAILED;
    }
    bc_gemm_plan_destroy(own);
    free(ha), free(hb), free(hd), free(ref);
    return st;
}

#endif
