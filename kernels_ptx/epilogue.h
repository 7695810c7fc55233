/* GEMM epilogue math shared by the Hopper and Blackwell kernels:
 *   D = act(alpha * acc + beta * C + bias), stored as bf16, f16 or f32,
 * masked at the M and N edges. Every function here runs in the Hopper
 * kernel (so on the H100), and the Blackwell epilogue uses only these.
 * C and bias have D's type. out_t is a compile-time constant (bc_dtype).
 */
#ifndef BC_KERNELS_EPILOGUE_H
#define BC_KERNELS_EPILOGUE_H

#include "gemm_abi.h"
#include "ptx/ldg.h"
#include "ptx/sreg.h"

enum { BC_OUT_BF16 = 0, BC_OUT_F16 = 1, BC_OUT_F32 = 2 };

/* The epilogue's view of the parameters (copied out of parameter space so
 * the kernel never takes the parameter's address). */
typedef struct bc_epi {
    uint64_t d, c, bias;
    uint32_t m, n, ldd, ldc;
    float alpha, beta;
    uint32_t flags;
    uint32_t k; /* read only by the sm_90a dense-row kernels with BC_GEMM_F_DENSE_A (the resident
                 * kernels' operation infos, which alias this struct, end at flags) */
} bc_epi;

BC_DEVICE float bc_bf16_to_f32(uint16_t h) { return __builtin_bit_cast(float, (uint32_t)h << 16); }

BC_DEVICE float bc_f16_to_f32(uint16_t h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

/* Packs (lo, hi) into one 32-bit word: lo at the lower address. */
BC_DEVICE uint32_t bc_pack2(float lo, float hi, int out_t)
{
    uint32_t r;
    if (out_t == BC_OUT_BF16)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

BC_DEVICE uint16_t bc_pack1(float v, int out_t)
{
    uint16_t r;
    if (out_t == BC_OUT_BF16)
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
    else
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
    return r;
}

/* Element i of a D-typed array at `base`. */
BC_DEVICE float bc_load_out(uint64_t base, uint64_t i, int out_t)
{
    if (out_t == BC_OUT_F32)
        return ((const float *)base)[i];
    uint16_t h = ((const uint16_t *)base)[i];
    return out_t == BC_OUT_BF16 ? bc_bf16_to_f32(h) : bc_f16_to_f32(h);
}

/* v (already alpha * acc) + beta * C + bias, then ReLU: the rest of the
 * epilogue math for element (row, col). */
BC_DEVICE float bc_epi_finish(const bc_epi *e, float v, uint32_t row, uint32_t col, int out_t)
{
    if (e->flags & BC_GEMM_F_C)
        v += e->beta * bc_load_out(e->c, (uint64_t)row * e->ldc + col, out_t);
    if (e->flags & BC_GEMM_F_BIAS)
        v += bc_load_out(e->bias, col, out_t);
    if ((e->flags & BC_GEMM_F_RELU) && v < 0.0f)
        v = 0.0f; /* NaN propagates, as in torch.relu */
    return v;
}

/* Stores the finished value v at element index i of D. */
BC_DEVICE void bc_epi_store_one(const bc_epi *e, uint64_t i, float v, int out_t)
{
    if (out_t == BC_OUT_F32)
        ((float *)e->d)[i] = v;
    else
        ((uint16_t *)e->d)[i] = bc_pack1(v, out_t);
}

/* For kernels that finish their outputs one at a time (the dot and GEMV
 * kernels, and the resident executor's GEMV operations): element (m, n) of
 * D from its sum of products v, alpha, C, bias and ReLU as bc_epi_finish
 * applies them, stored in D's type. */
BC_DEVICE void bc__epi_one(const bc_epi *e, float v, uint32_t m, uint32_t n, const int out_t)
{
    bc_epi_store_one(e, (uint64_t)m * e->ldd + n, bc_epi_finish(e, e->alpha * v, m, n, out_t), out_t);
}
BC_DEVICE void bc_epi_finish_one(const bc_epi *e, int d_type, float v, uint32_t m, uint32_t n)
{
    if (d_type == BC_OUT_F32)
        bc__epi_one(e, v, m, n, BC_OUT_F32);
    else if (d_type == BC_OUT_F16)
        bc__epi_one(e, v, m, n, BC_OUT_F16);
    else
        bc__epi_one(e, v, m, n, BC_OUT_BF16);
}
BC_DEVICE void bc__epi_one_params(const bc_gemm_params *p, float v, uint32_t m, uint32_t n, const int out_t)
{
    const bc_epi e = {p->d, p->c, p->bias, p->m, p->n, p->ldd, p->ldc, p->alpha, p->beta, p->flags, p->k};
    bc_epi_store_one(&e, (uint64_t)m * p->ldd + n, bc_epi_finish(&e, p->alpha * v, m, n, out_t), out_t);
}
BC_DEVICE void bc_epi_finish_output(const bc_gemm_params *p, float v, uint32_t m, uint32_t n)
{
    if (p->d_type == BC_OUT_F32)
        bc__epi_one_params(p, v, m, n, BC_OUT_F32);
    else if (p->d_type == BC_OUT_F16)
        bc__epi_one_params(p, v, m, n, BC_OUT_F16);
    else
        bc__epi_one_params(p, v, m, n, BC_OUT_BF16);
}

/* Raw bits of a D-typed element as f32 (esize constant; 16-bit: out_t says which). */
BC_DEVICE float bc_epi_raw_f32(uint32_t raw, const uint32_t esize, int out_t)
{
    if (esize == 4)
        return __builtin_bit_cast(float, raw);
    return out_t == BC_OUT_BF16 ? bc_bf16_to_f32((uint16_t)raw) : bc_f16_to_f32((uint16_t)raw);
}

/* bc_epi_store4 for one D type (esize constant): the four elements' C and
 * bias values are loaded first, predicated (no branch around each load),
 * so that all of them are in flight at once; then each element is
 * finished as bc_epi_finish does it, in the same order (same bits; a
 * change to the one belongs in the other). */
BC_DEVICE void bc_epi_store4_t(const bc_epi *e, uint32_t row, uint32_t col, const float *v, int out_t,
                               const uint32_t esize)
{
    const uint64_t i = (uint64_t)row * e->ldd + col;
    const int has_c = (e->flags & BC_GEMM_F_C) != 0, has_b = (e->flags & BC_GEMM_F_BIAS) != 0;
    const uint64_t ca = e->c + ((uint64_t)row * e->ldc + col) * esize, ba = e->bias + (uint64_t)col * esize;
    uint32_t cr[4] = {0, 0, 0, 0}, br[4] = {0, 0, 0, 0};
    if (has_c) /* a uniform branch around all four loads: none issued for a plain GEMM */
#pragma unroll
        for (uint32_t k = 0; k < 4; k++)
            cr[k] = bc_ld_global_if(ca + k * esize, col + k < e->n, esize);
    if (has_b)
#pragma unroll
        for (uint32_t k = 0; k < 4; k++)
            br[k] = bc_ld_global_if(ba + k * esize, col + k < e->n, esize);
    float f[4];
#pragma unroll
    for (uint32_t k = 0; k < 4; k++) {
        float x = v[k];
        if (has_c)
            x += e->beta * bc_epi_raw_f32(cr[k], esize, out_t);
        if (has_b)
            x += bc_epi_raw_f32(br[k], esize, out_t);
        if ((e->flags & BC_GEMM_F_RELU) && x < 0.0f)
            x = 0.0f; /* NaN propagates, as in torch.relu */
        f[k] = col + k < e->n ? x : 0.0f;
    }
    if (col + 4u <= e->n && (i & 3u) == 0) {
        if (esize == 4) {
            typedef float f32x4 __attribute__((ext_vector_type(4)));
            const f32x4 q = {f[0], f[1], f[2], f[3]};
            ((f32x4 *)e->d)[i / 4] = q;
        } else {
            typedef uint32_t u32x2 __attribute__((ext_vector_type(2)));
            const u32x2 q = {bc_pack2(f[0], f[1], out_t), bc_pack2(f[2], f[3], out_t)};
            ((u32x2 *)e->d)[i / 4] = q;
        }
        return;
    }
#pragma unroll
    for (uint32_t k = 0; k < 4; k++)
        if (col + k < e->n)
            bc_epi_store_one(e, i + k, f[k], out_t);
}

/* Finishes v[0..3] (already alpha * acc) for columns col..col+3 of `row`
 * and stores them: one 8- or 16-byte store when all four are inside N and
 * the group is aligned, else element by element; nothing outside M or N. */
BC_DEVICE void bc_epi_store4(const bc_epi *e, uint32_t row, uint32_t col, const float *v, int out_t)
{
    if (row >= e->m)
        return;
    if (out_t == BC_OUT_F32)
        bc_epi_store4_t(e, row, col, v, out_t, 4u);
    else
        bc_epi_store4_t(e, row, col, v, out_t, 2u);
}

#endif
