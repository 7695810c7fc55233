/* TMA tensor maps (tensormap.h): every documented cuTensorMapEncodeTiled
 * rule is checked here, on the host, so that a violation names the rule
 * (bc_last_error().call is the driver parameter it concerns) instead of a
 * bare CUDA_ERROR_INVALID_VALUE. One encoder serves the user's maps and the
 * GEMM's. Rules: CUDA 13.0 cuda.h (cuTensorMapEncodeTiled) and
 * reference/ptx-facts.md section 2. */
#include <string.h>

#include "barecuda/tensormap.h"
#include "error.h"
#include "gemm_internal.h"
#include "module_internal.h"

#define MAX_DIM (1ull << 32)
#define MAX_STRIDE (1ull << 40)
#define MAX_BOX 256u
#define MAX_ELEMENT_STRIDE 8u

static const struct {
    CUtensorMapDataType cu;
    uint32_t bytes;
    int is_float;
    const char *name;
} types[] = {
    [BC_TMAP_U8] = {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, 0, "u8"},
    [BC_TMAP_U16] = {CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, 0, "u16"},
    [BC_TMAP_U32] = {CU_TENSOR_MAP_DATA_TYPE_UINT32, 4, 0, "u32"},
    [BC_TMAP_S32] = {CU_TENSOR_MAP_DATA_TYPE_INT32, 4, 0, "s32"},
    [BC_TMAP_U64] = {CU_TENSOR_MAP_DATA_TYPE_UINT64, 8, 0, "u64"},
    [BC_TMAP_S64] = {CU_TENSOR_MAP_DATA_TYPE_INT64, 8, 0, "s64"},
    [BC_TMAP_F16] = {CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, 1, "f16"},
    [BC_TMAP_F32] = {CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, 1, "f32"},
    [BC_TMAP_F64] = {CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 8, 1, "f64"},
    [BC_TMAP_BF16] = {CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, 1, "bf16"},
    [BC_TMAP_F32_FTZ] = {CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ, 4, 1, "f32_ftz"},
    [BC_TMAP_TF32] = {CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 4, 1, "tf32"},
    [BC_TMAP_TF32_FTZ] = {CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ, 4, 1, "tf32_ftz"},
};
#define TYPE_COUNT (sizeof types / sizeof types[0])

static const uint32_t swizzle_span[] = {0, 32, 64, 128}; /* by bc_tmap_swizzle; 0 = none */

#define RULE(rule, ...) BC_FAIL(BC_ERR_TENSOR_MAP, (rule), __VA_ARGS__)

static uint32_t es_of(const bc_tensor_map_desc *d, unsigned i)
{
    return d->element_strides[i] ? d->element_strides[i] : 1u;
}

static void log_desc(const bc_tensor_map_desc *d, const char *what)
{
    if (!bc__log_enabled(BC_LOG_ERROR))
        return;
    const unsigned r = d->rank <= BC_TMAP_MAX_RANK ? d->rank : BC_TMAP_MAX_RANK;
    unsigned long long v[4][BC_TMAP_MAX_RANK] = {{0}};
    for (unsigned i = 0; i < r; i++) {
        v[0][i] = d->dims[i];
        v[1][i] = i + 1 < r ? d->strides_bytes[i] : 0;
        v[2][i] = d->box[i];
        v[3][i] = es_of(d, i);
    }
    bc__log(BC_LOG_ERROR,
            "tensor map %s: dtype=%d rank=%u globalAddress=0x%llx globalDim={%llu, %llu, %llu, %llu, %llu} "
            "globalStrides={%llu, %llu, %llu, %llu} boxDim={%llu, %llu, %llu, %llu, %llu} "
            "elementStrides={%llu, %llu, %llu, %llu, %llu} interleave=%d swizzle=%d l2Promotion=%d oobNaN=%d "
            "(entries past the rank unused)",
            what, (int)d->dtype, d->rank, (unsigned long long)d->base, v[0][0], v[0][1], v[0][2], v[0][3], v[0][4],
            v[1][0], v[1][1], v[1][2], v[1][3], v[2][0], v[2][1], v[2][2], v[2][3], v[2][4], v[3][0], v[3][1],
            v[3][2], v[3][3], v[3][4], (int)d->interleave, (int)d->swizzle, (int)d->l2_promotion, d->oob_nan);
}

static bc_status check_enums(const bc_tensor_map_desc *d, const char *w)
{
    if ((unsigned)d->dtype >= TYPE_COUNT)
        return RULE("tensorDataType", "%s: dtype %d is not a bc_tmap_dtype", w, (int)d->dtype);
    if (d->rank < 1 || d->rank > BC_TMAP_MAX_RANK)
        return RULE("tensorRank", "%s: rank %u must be in [1, 5]", w, d->rank);
    if ((unsigned)d->interleave > BC_TMAP_INTERLEAVE_32B)
        return RULE("interleave", "%s: interleave %d is not a bc_tmap_interleave", w, (int)d->interleave);
    if (d->interleave != BC_TMAP_INTERLEAVE_NONE && d->rank < 3)
        return RULE("tensorRank", "%s: rank %u: an interleaved layout needs rank 3 or more", w, d->rank);
    if ((unsigned)d->swizzle > BC_TMAP_SWIZZLE_128B)
        return RULE("swizzle", "%s: swizzle %d is not a bc_tmap_swizzle", w, (int)d->swizzle);
    if ((unsigned)d->l2_promotion > BC_TMAP_L2_256B)
        return RULE("l2Promotion", "%s: l2_promotion %d is not a bc_tmap_l2_promotion", w, (int)d->l2_promotion);
    if (d->oob_nan != 0 && d->oob_nan != 1)
        return RULE("oobFill", "%s: oob_nan %d must be 0 or 1", w, d->oob_nan);
    if (d->oob_nan && !types[d->dtype].is_float)
        return RULE("oobFill", "%s: NaN fill of out-of-bounds elements needs a floating-point type, not %s", w,
                    types[d->dtype].name);
    return BC_OK;
}

static bc_status check_address(uint64_t base, bc_tmap_interleave il, const char *w)
{
    const unsigned align = il == BC_TMAP_INTERLEAVE_32B ? 32u : 16u;
    if (base == 0 || base % align)
        return RULE("globalAddress", "%s: base 0x%llx must be a non-zero device address aligned to %u bytes%s", w,
                    (unsigned long long)base, align, align == 32 ? " (32-byte interleave)" : "");
    return BC_OK;
}

/* globalDim and globalStrides: each stride includes the previous dimension
 * (stride[0] >= dims[0] * element size, stride[i] >= stride[i-1] * dims[i]). */
static bc_status check_extents(const bc_tensor_map_desc *d, const char *w)
{
    const uint64_t esize = types[d->dtype].bytes;
    const unsigned align = d->interleave == BC_TMAP_INTERLEAVE_32B ? 32u : 16u;
    for (unsigned i = 0; i < d->rank; i++)
        if (d->dims[i] == 0 || d->dims[i] > MAX_DIM)
            return RULE("globalDim", "%s: dims[%u] = %llu must be in [1, 2^32]", w, i,
                        (unsigned long long)d->dims[i]);
    uint64_t need = d->dims[0] * esize; /* <= 2^35 */
    for (unsigned i = 0; i + 1 < d->rank; i++) {
        const uint64_t s = d->strides_bytes[i];
        if (s % align || s >= MAX_STRIDE)
            return RULE("globalStrides", "%s: strides_bytes[%u] = %llu must be a multiple of %u and < 2^40", w, i,
                        (unsigned long long)s, align);
        if (s < need)
            return RULE("globalStrides",
                        "%s: strides_bytes[%u] = %llu is less than the %llu bytes that dimension %u spans", w, i,
                        (unsigned long long)s, (unsigned long long)need, i);
        if (__builtin_mul_overflow(s, d->dims[i + 1], &need))
            need = UINT64_MAX;
    }
    return BC_OK;
}

static bc_status check_box(const bc_tensor_map_desc *d, const char *w)
{
    const uint64_t inner = (uint64_t)d->box[0] * types[d->dtype].bytes;
    for (unsigned i = 0; i < d->rank; i++) {
        if (d->box[i] == 0 || d->box[i] > MAX_BOX)
            return RULE("boxDim", "%s: box[%u] = %u must be in [1, 256]", w, i, d->box[i]);
        if (es_of(d, i) > MAX_ELEMENT_STRIDE)
            return RULE("elementStrides", "%s: element_strides[%u] = %u must be in [1, 8]", w, i, es_of(d, i));
    }
    if (d->interleave == BC_TMAP_INTERLEAVE_32B && d->swizzle != BC_TMAP_SWIZZLE_32B)
        return RULE("swizzle", "%s: the 32-byte interleave needs the 32-byte swizzle", w);
    if (d->interleave != BC_TMAP_INTERLEAVE_NONE)
        return BC_OK;
    if (inner % 16)
        return RULE("boxDim", "%s: box[0] * element size = %llu bytes must be a multiple of 16", w,
                    (unsigned long long)inner);
    const uint32_t span = swizzle_span[d->swizzle];
    if (span && inner > span)
        return RULE("swizzle", "%s: the inner box (%llu bytes) exceeds the %u-byte swizzle span", w,
                    (unsigned long long)inner, span);
    return BC_OK;
}

/* Checks every rule, then encodes; a rule or driver failure logs the whole
 * descriptor. The driver's status is returned as BC_CU mapped it. */
static bc_status encode(const bc_tensor_map_desc *d, const char *w, uint64_t out[16])
{
    bc_status st = check_enums(d, w);
    if (!st) st = check_address(d->base, d->interleave, w);
    if (!st) st = check_extents(d, w);
    if (!st) st = check_box(d, w);
    if (st) {
        log_desc(d, w);
        return st;
    }
    cuuint64_t dims[BC_TMAP_MAX_RANK], strides[BC_TMAP_MAX_RANK - 1];
    cuuint32_t box[BC_TMAP_MAX_RANK], es[BC_TMAP_MAX_RANK];
    for (unsigned i = 0; i < d->rank; i++) {
        dims[i] = d->dims[i];
        box[i] = d->box[i];
        es[i] = es_of(d, i);
        if (i + 1 < d->rank)
            strides[i] = d->strides_bytes[i];
    }
    CUtensorMap m;
    st = BC_CU(cuTensorMapEncodeTiled, &m, types[d->dtype].cu, d->rank, (void *)(uintptr_t)d->base, dims, strides,
               box, es, (CUtensorMapInterleave)d->interleave, (CUtensorMapSwizzle)d->swizzle,
               (CUtensorMapL2promotion)d->l2_promotion,
               d->oob_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (st) {
        log_desc(d, w);
        return st;
    }
    memcpy(out, &m, sizeof m);
    return BC_OK;
}

static bc_status replace_address(uint64_t map[16], const char *w, uint64_t base)
{
    bc_status st = check_address(base, BC_TMAP_INTERLEAVE_NONE, w);
    if (st)
        return st;
    CUtensorMap m;
    memcpy(&m, map, sizeof m);
    st = BC_CU(cuTensorMapReplaceAddress, &m, (void *)(uintptr_t)base);
    if (!st)
        memcpy(map, &m, sizeof m);
    return st;
}

/* ------------------------------------------------------------ public */

bc_status bc_tensor_map_desc_default(bc_tensor_map_desc *out_desc)
{
    if (out_desc == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_tensor_map_desc_default", "out_desc is NULL");
    memset(out_desc, 0, sizeof *out_desc);
    for (unsigned i = 0; i < BC_TMAP_MAX_RANK; i++)
        out_desc->element_strides[i] = 1;
    out_desc->l2_promotion = BC_TMAP_L2_256B;
    return BC_OK;
}

/* Tensor maps exist from compute capability 9.0 on. */
static bc_status check_device(const bc_device *dev)
{
    if (dev->info.cc_major < 9)
        return BC_FAIL(BC_ERR_NOT_SUPPORTED, "tensor map",
                       "the device (compute capability %d.%d) has no TMA: tensor maps need 9.0 or newer",
                       dev->info.cc_major, dev->info.cc_minor);
    return BC_OK;
}

bc_status bc_tensor_map_encode(bc_device *dev, const bc_tensor_map_desc *desc, bc_tensor_map *out_map)
{
    if (dev == NULL || desc == NULL || out_map == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_tensor_map_encode", "dev, desc or out_map is NULL");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_tensor_map_encode");
    bc_status st = check_device(dev);
    if (st)
        return st;
    uint64_t m[16];
    st = encode(desc, "tensor map", m);
    if (st == BC_ERR_DRIVER)
        return bc__refail(st, BC_ERR_TENSOR_MAP, "cuTensorMapEncodeTiled", "the driver refused the tensor map");
    if (!st)
        memcpy(out_map->opaque, m, sizeof m);
    return st;
}

bc_status bc_tensor_map_set_address(bc_device *dev, bc_tensor_map *map, bc_devptr base)
{
    if (dev == NULL || map == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_tensor_map_set_address", "dev or map is NULL");
    bc_status st = check_device(dev);
    if (!st) st = replace_address(map->opaque, "tensor map", base);
    if (st == BC_ERR_DRIVER)
        return bc__refail(st, BC_ERR_TENSOR_MAP, "cuTensorMapReplaceAddress", "the driver refused the address");
    return st;
}

/* ------------------------------------------------------- the GEMM's maps */

bc_status bc__tmap_encode(uint64_t map[16], const bc__tmap_desc *t)
{
    if (t->swizzle_bytes != 128 && t->swizzle_bytes != 64)
        return RULE("swizzle", "%s: swizzle span %u bytes: the GEMM uses only 64 and 128", t->what,
                    t->swizzle_bytes);
    bc_tensor_map_desc d;
    bc_tensor_map_desc_default(&d);
    d.dtype = t->type == BC_DTYPE_F16 ? BC_TMAP_F16 : t->type == BC_DTYPE_F32 ? BC_TMAP_F32 : BC_TMAP_BF16;
    d.rank = 2;
    d.base = t->base;
    d.dims[0] = t->cols;
    d.dims[1] = t->rows;
    d.strides_bytes[0] = t->row_bytes;
    d.box[0] = t->box_cols;
    d.box[1] = t->box_rows;
    d.swizzle = t->swizzle_bytes == 64 ? BC_TMAP_SWIZZLE_64B : BC_TMAP_SWIZZLE_128B;
    /* 128-byte L2 promotion, not the default 256: a box row is 128 bytes,
     * and where the row pitch is not a multiple of 128 bytes (K not a
     * multiple of 64 in 16-bit types: most K) each row straddles two
     * 128-byte lines, which 256-byte promotion turned into up to 512 bytes
     * fetched per 128 used. Measured on the H100: 8339x2936x7704 964 ->
     * 800 us, 2048x2048x2040 45.4 -> 39.1, aligned shapes unchanged
     * (kernels_ptx/PERF_NOTES.md, change 41). */
    d.l2_promotion = BC_TMAP_L2_128B;
    return encode(&d, t->what, map);
}

bc_status bc__tmap_set_address(uint64_t map[16], const char *what, uint64_t base)
{
    return replace_address(map, what, base);
}
