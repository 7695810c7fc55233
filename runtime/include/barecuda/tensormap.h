/* barecuda — TMA tensor maps for the caller's own kernels.
 *
 * The same tiled tensor-map encoder the GEMM uses: every rule of
 * cuTensorMapEncodeTiled (alignment, strides, box sizes, swizzle against
 * the inner box, element types, rank, interleave) is checked on the host
 * before the driver is called, and a broken rule is reported by name
 * (BC_ERR_TENSOR_MAP; bc_last_error().call names the cuTensorMapEncodeTiled
 * parameter, e.g. "boxDim", and the message the descriptor field and value,
 * e.g. "box[0] = 4"). Tensor maps need compute capability 9.0 or newer
 * (BC_ERR_NOT_SUPPORTED before). The result is
 * an opaque 128-byte, 64-byte-aligned descriptor that a kernel takes by
 * value as a parameter (CUDA C++: `const __grid_constant__ CUtensorMap`).
 */
#ifndef BARECUDA_TENSORMAP_H
#define BARECUDA_TENSORMAP_H

#include <stdint.h>

#include "device.h"
#include "mem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A CUtensorMap, bit for bit. */
typedef struct bc_tensor_map {
    _Alignas(64) uint64_t opaque[16];
} bc_tensor_map;

typedef enum bc_tmap_dtype {
    BC_TMAP_U8 = 0,
    BC_TMAP_U16,
    BC_TMAP_U32,
    BC_TMAP_S32,
    BC_TMAP_U64,
    BC_TMAP_S64,
    BC_TMAP_F16,
    BC_TMAP_F32,
    BC_TMAP_F64,
    BC_TMAP_BF16,
    BC_TMAP_F32_FTZ,
    BC_TMAP_TF32,
    BC_TMAP_TF32_FTZ,
} bc_tmap_dtype;

typedef enum bc_tmap_swizzle {
    BC_TMAP_SWIZZLE_NONE = 0,
    BC_TMAP_SWIZZLE_32B,
    BC_TMAP_SWIZZLE_64B,
    BC_TMAP_SWIZZLE_128B,
} bc_tmap_swizzle;

typedef enum bc_tmap_interleave {
    BC_TMAP_INTERLEAVE_NONE = 0,
    BC_TMAP_INTERLEAVE_16B,
    BC_TMAP_INTERLEAVE_32B,
} bc_tmap_interleave;

typedef enum bc_tmap_l2_promotion {
    BC_TMAP_L2_NONE = 0,
    BC_TMAP_L2_64B,
    BC_TMAP_L2_128B,
    BC_TMAP_L2_256B,
} bc_tmap_l2_promotion;

#define BC_TMAP_MAX_RANK 5

typedef struct bc_tensor_map_desc {
    bc_tmap_dtype dtype;
    uint32_t rank;                          /* 1..5 (3..5 with interleave) */
    bc_devptr base;                         /* 16-byte aligned (32 with interleave) */
    uint64_t dims[BC_TMAP_MAX_RANK];        /* elements per dimension, innermost first */
    uint64_t strides_bytes[BC_TMAP_MAX_RANK - 1]; /* bytes between consecutive indices of dims 1..rank-1 */
    uint32_t box[BC_TMAP_MAX_RANK];         /* elements the box spans in each dimension */
    uint32_t element_strides[BC_TMAP_MAX_RANK]; /* 0 counts as 1 */
    bc_tmap_interleave interleave;
    bc_tmap_swizzle swizzle;
    bc_tmap_l2_promotion l2_promotion;
    int oob_nan;                            /* 1: out-of-bounds elements read as NaN (float types only) */
} bc_tensor_map_desc;

/* Contract: fills *out_desc with zeros, element strides 1, no interleave,
 * no swizzle, 256-byte L2 promotion, zero fill; the caller sets the rest. */
bc_status bc_tensor_map_desc_default(bc_tensor_map_desc *out_desc);

/* Contract: checks every rule, then encodes the map with
 * cuTensorMapEncodeTiled. The rules: rank 1..5 (3..5 with interleave);
 * base non-zero and 16-byte aligned (32 with the 32-byte interleave); each
 * dims[i] in [1, 2^32]; each strides_bytes[i] a multiple of 16 (32 with the
 * 32-byte interleave), below 2^40, and covering the dimension below it
 * (strides_bytes[0] >= dims[0] * element size, strides_bytes[i] >=
 * strides_bytes[i-1] * dims[i]); each box[i] in [1, 256]; each element
 * stride in [1, 8]; without interleave, box[0] * element size a multiple of
 * 16 bytes and, when swizzled, at most the swizzle span (32, 64, 128); the
 * 32-byte interleave only with the 32-byte swizzle; NaN fill only for
 * floating-point types; every enum in range. On failure *out_map is
 * untouched; a broken rule is BC_ERR_TENSOR_MAP naming it, a driver refusal
 * BC_ERR_TENSOR_MAP with the CUresult. */
bc_status bc_tensor_map_encode(bc_device *dev, const bc_tensor_map_desc *desc, bc_tensor_map *out_map);

/* Contract: points an encoded map at a new base (non-zero, 16-byte aligned;
 * the 32-byte rule of a 32-byte-interleaved map is the driver's, reported as
 * BC_ERR_TENSOR_MAP with its CUresult); cuTensorMapReplaceAddress. On
 * failure the map is unchanged. */
bc_status bc_tensor_map_set_address(bc_device *dev, bc_tensor_map *map, bc_devptr base);

#ifdef __cplusplus
}
#endif
#endif
