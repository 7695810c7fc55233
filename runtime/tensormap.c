/* TMA tensor maps: every documented cuTensorMapEncodeTiled rule is checked
 * here, on the host, so that a violation names the rule instead of a bare
 * CUDA_ERROR_INVALID_VALUE. Rules: CUDA 13.0 cuda.h (cuTensorMapEncodeTiled)
 * and reference/ptx-facts.md section 2. */
#include <string.h>

#include "error.h"
#include "gemm_internal.h"

#define TMAP_ADDR_ALIGN 16u /* globalAddress (driver API doc) */

static uint64_t esize_of(bc_dtype t) { return t == BC_DTYPE_F32 ? 4u : 2u; }

static void log_params(const bc__tmap_desc *t)
{
    bc__log(BC_LOG_ERROR,
            "tensor map %s: dtype=%d rank=2 globalAddress=0x%llx globalDim={%llu, %llu} "
            "globalStrides={%llu} boxDim={%u, %u} elementStrides={1, 1} interleave=NONE "
            "swizzle=%uB l2Promotion=256B oobFill=NONE",
            t->what, (int)t->type, (unsigned long long)t->base, (unsigned long long)t->cols,
            (unsigned long long)t->rows, (unsigned long long)t->row_bytes, t->box_cols, t->box_rows,
            t->swizzle_bytes);
}

static bc_status check_rules(const bc__tmap_desc *t)
{
    const uint64_t esize = esize_of(t->type);
    const char *what = t->what;
    if (t->swizzle_bytes != 128 && t->swizzle_bytes != 64)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "swizzle", "%s: swizzle span %u bytes: only 64 and 128 are used", what,
                       t->swizzle_bytes);
    if (t->base % TMAP_ADDR_ALIGN)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalAddress",
                       "%s: globalAddress 0x%llx is not %u-byte aligned", what, (unsigned long long)t->base,
                       TMAP_ADDR_ALIGN);
    if (t->cols == 0 || t->rows == 0 || t->cols > (1ull << 32) || t->rows > (1ull << 32))
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalDim",
                       "%s: globalDim {%llu, %llu} must be in [1, 2^32]", what, (unsigned long long)t->cols,
                       (unsigned long long)t->rows);
    if (t->row_bytes % 16 || t->row_bytes >= (1ull << 40))
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalStrides",
                       "%s: globalStrides[0] = %llu bytes must be a multiple of 16 and < 2^40", what,
                       (unsigned long long)t->row_bytes);
    if (t->row_bytes < t->cols * esize)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalStrides",
                       "%s: globalStrides[0] = %llu bytes is less than a row (%llu bytes)", what,
                       (unsigned long long)t->row_bytes, (unsigned long long)(t->cols * esize));
    if (t->box_cols == 0 || t->box_cols > 256 || t->box_rows == 0 || t->box_rows > 256)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "boxDim", "%s: boxDim {%u, %u} must be in [1, 256]", what,
                       t->box_cols, t->box_rows);
    if ((t->box_cols * esize) % 16)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "boxDim",
                       "%s: boxDim[0] * elementSize = %llu bytes must be a multiple of 16", what,
                       (unsigned long long)(t->box_cols * esize));
    if (t->box_cols * esize > t->swizzle_bytes)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "swizzle",
                       "%s: inner box %llu bytes exceeds the %u-byte swizzle span", what,
                       (unsigned long long)(t->box_cols * esize), t->swizzle_bytes);
    return BC_OK;
}

bc_status bc__tmap_encode(uint64_t map[16], const bc__tmap_desc *t)
{
    bc_status st = check_rules(t);
    if (st) {
        log_params(t);
        return st;
    }
    const cuuint64_t dims[2] = {t->cols, t->rows};
    const cuuint64_t strides[1] = {t->row_bytes};
    const cuuint32_t box[2] = {t->box_cols, t->box_rows};
    const cuuint32_t estrides[2] = {1, 1};
    const CUtensorMapDataType dt = t->type == BC_DTYPE_F16   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : t->type == BC_DTYPE_F32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                             : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    const CUtensorMapSwizzle sw = t->swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
    CUtensorMap m;
    st = BC_CU(cuTensorMapEncodeTiled, &m, dt, 2, (void *)(uintptr_t)t->base, dims, strides, box, estrides,
               CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (st) {
        log_params(t);
        return st;
    }
    memcpy(map, &m, sizeof m);
    return BC_OK;
}

bc_status bc__tmap_set_address(uint64_t map[16], const char *what, uint64_t base)
{
    if (base % TMAP_ADDR_ALIGN)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalAddress",
                       "%s: globalAddress 0x%llx is not %u-byte aligned", what, (unsigned long long)base,
                       TMAP_ADDR_ALIGN);
    CUtensorMap m;
    memcpy(&m, map, sizeof m);
    bc_status st = BC_CU(cuTensorMapReplaceAddress, &m, (void *)(uintptr_t)base);
    if (!st)
        memcpy(map, &m, sizeof m);
    return st;
}
