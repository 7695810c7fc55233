/* TMA tensor maps: every documented cuTensorMapEncodeTiled rule is checked
 * here, on the host, so that a violation names the rule instead of a bare
 * CUDA_ERROR_INVALID_VALUE. Rules: CUDA 13.0 cuda.h (cuTensorMapEncodeTiled)
 * and reference/ptx-facts.md section 2. */
#include <string.h>

#include "error.h"
#include "gemm_internal.h"

#define TMAP_ADDR_ALIGN 16u /* globalAddress (driver API doc) */

static void log_params(const char *what, bc_dtype type, uint64_t base, uint64_t cols, uint64_t rows,
                       uint64_t row_bytes, uint32_t box_cols, uint32_t box_rows)
{
    bc__log(BC_LOG_ERROR,
            "tensor map %s: dtype=%d rank=2 globalAddress=0x%llx globalDim={%llu, %llu} "
            "globalStrides={%llu} boxDim={%u, %u} elementStrides={1, 1} interleave=NONE "
            "swizzle=128B l2Promotion=256B oobFill=NONE",
            what, (int)type, (unsigned long long)base, (unsigned long long)cols,
            (unsigned long long)rows, (unsigned long long)row_bytes, box_cols, box_rows);
}

static bc_status check_rules(const char *what, uint64_t base, uint64_t cols, uint64_t rows,
                             uint64_t row_bytes, uint32_t box_cols, uint32_t box_rows)
{
    const uint64_t esize = 2;
    if (base % TMAP_ADDR_ALIGN)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalAddress",
                       "%s: globalAddress 0x%llx is not %u-byte aligned", what, (unsigned long long)base,
                       TMAP_ADDR_ALIGN);
    if (cols == 0 || rows == 0 || cols > (1ull << 32) || rows > (1ull << 32))
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalDim",
                       "%s: globalDim {%llu, %llu} must be in [1, 2^32]", what, (unsigned long long)cols,
                       (unsigned long long)rows);
    if (row_bytes % 16 || row_bytes >= (1ull << 40))
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalStrides",
                       "%s: globalStrides[0] = %llu bytes must be a multiple of 16 and < 2^40", what,
                       (unsigned long long)row_bytes);
    if (row_bytes < cols * esize)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "globalStrides",
                       "%s: globalStrides[0] = %llu bytes is less than a row (%llu bytes)", what,
                       (unsigned long long)row_bytes, (unsigned long long)(cols * esize));
    if (box_cols == 0 || box_cols > 256 || box_rows == 0 || box_rows > 256)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "boxDim", "%s: boxDim {%u, %u} must be in [1, 256]", what,
                       box_cols, box_rows);
    if ((box_cols * esize) % 16)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "boxDim",
                       "%s: boxDim[0] * elementSize = %llu bytes must be a multiple of 16", what,
                       (unsigned long long)(box_cols * esize));
    if (box_cols * esize > 128)
        return BC_FAIL(BC_ERR_TENSOR_MAP, "swizzle",
                       "%s: inner box %llu bytes exceeds the 128-byte swizzle span", what,
                       (unsigned long long)(box_cols * esize));
    return BC_OK;
}

bc_status bc__tmap_encode_sw128(uint64_t map[16], const char *what, bc_dtype type, uint64_t base,
                                uint64_t cols, uint64_t rows, uint64_t row_bytes, uint32_t box_cols,
                                uint32_t box_rows)
{
    bc_status st = check_rules(what, base, cols, rows, row_bytes, box_cols, box_rows);
    if (st) {
        log_params(what, type, base, cols, rows, row_bytes, box_cols, box_rows);
        return st;
    }
    const cuuint64_t dims[2] = {cols, rows};
    const cuuint64_t strides[1] = {row_bytes};
    const cuuint32_t box[2] = {box_cols, box_rows};
    const cuuint32_t estrides[2] = {1, 1};
    CUtensorMapDataType dt =
        type == BC_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    CUtensorMap m;
    st = BC_CU(cuTensorMapEncodeTiled, &m, dt, 2, (void *)(uintptr_t)base, dims, strides, box, estrides,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (st) {
        log_params(what, type, base, cols, rows, row_bytes, box_cols, box_rows);
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
