/* Skinny-M GEMM (M <= BC_SKINNY_MAX_M): D = act(alpha * A . B^T + beta * C + bias)
 * on CUDA cores, for the shapes where the whole cost is reading B once (a
 * GEMV-like layer of a control loop: one or a few rows of activations
 * against a weight matrix).
 *
 * A warp owns BC_SKINNY_COLS consecutive columns of D (rows of B) and all M
 * rows of A. Lane l reads elements [8l, 8l + 8) of each 256-element K step
 * of those B rows with one 16-byte load each, BC_SKINNY_UNROLL steps in
 * flight, B bypassing L1 (read once) and A through L1 (every warp of the
 * SM re-reads it). Each lane sums its products in increasing K; the 32 lane
 * sums are then added by a fixed butterfly and lane 0's total is used, so
 * every output element is reduced in one fixed order: deterministic. The
 * epilogue is the shared one (epilogue.h): same semantics as every other
 * kernel, one element per lane.
 *
 * Needs K a multiple of 8 and 16-byte aligned rows of A and B (the API's
 * rules). Launched with programmatic serialization like the tile kernels.
 */
#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/griddep.h"
#include "ptx/ldg.h"
#include "ptx/shfl.h"
#include "ptx/sreg.h"

/* The eight 16-bit inputs of one 16-byte chunk, as floats. */
BC_DEVICE void skinny_unpack(bc_u32x4 v, float *f, const int f16)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        if (f16) {
            f[2 * i] = bc_f16_to_f32((uint16_t)w[i]);
            f[2 * i + 1] = bc_f16_to_f32((uint16_t)(w[i] >> 16));
        } else {
            f[2 * i] = __builtin_bit_cast(float, w[i] << 16);
            f[2 * i + 1] = __builtin_bit_cast(float, w[i] & 0xFFFF0000u);
        }
    }
}

/* What the main loop reads of the parameter (copied field by field: the
 * parameter itself never leaves parameter space). */
typedef struct skinny_args {
    uint64_t a, b;
    uint32_t m, n, k, lda, ldb, d_type;
} skinny_args;

/* f16 a compile-time constant. */
BC_DEVICE void skinny_gemm(const skinny_args *p, const bc_epi *e, const int f16)
{
    const uint32_t lane = bc_tid_x() % 32u, warp = bc_tid_x() / 32u;
    const uint32_t n0 = (bc_ctaid_x() * BC_SKINNY_WARPS + warp) * BC_SKINNY_COLS;
    if (n0 >= p->n)
        return; /* a whole warp */
    float acc[BC_SKINNY_MAX_M][BC_SKINNY_COLS];
#pragma unroll
    for (uint32_t m = 0; m < BC_SKINNY_MAX_M; m++)
#pragma unroll
        for (uint32_t j = 0; j < BC_SKINNY_COLS; j++)
            acc[m][j] = 0.0f;
    for (uint32_t k0 = 8u * lane; k0 < p->k; k0 += 256u * BC_SKINNY_UNROLL) {
        bc_u32x4 bv[BC_SKINNY_UNROLL][BC_SKINNY_COLS];
#pragma unroll
        for (uint32_t u = 0; u < BC_SKINNY_UNROLL; u++)
#pragma unroll
            for (uint32_t j = 0; j < BC_SKINNY_COLS; j++) {
                const uint32_t kk = k0 + 256u * u;
                const bc_u32x4 zero = {0, 0, 0, 0};
                bv[u][j] = kk < p->k && n0 + j < p->n
                               ? bc_ldg_stream_v4(p->b + ((uint64_t)(n0 + j) * p->ldb + kk) * 2u)
                               : zero;
            }
#pragma unroll
        for (uint32_t u = 0; u < BC_SKINNY_UNROLL; u++) {
            const uint32_t kk = k0 + 256u * u;
            if (kk >= p->k)
                break;
            float bf[BC_SKINNY_COLS][8];
#pragma unroll
            for (uint32_t j = 0; j < BC_SKINNY_COLS; j++)
                skinny_unpack(bv[u][j], bf[j], f16);
#pragma unroll
            for (uint32_t m = 0; m < BC_SKINNY_MAX_M; m++) {
                if (m >= p->m)
                    break;
                float af[8];
                skinny_unpack(bc_ldg_v4(p->a + ((uint64_t)m * p->lda + kk) * 2u), af, f16);
#pragma unroll
                for (uint32_t j = 0; j < BC_SKINNY_COLS; j++)
#pragma unroll
                    for (uint32_t i = 0; i < 8; i++)
                        acc[m][j] += af[i] * bf[j][i];
            }
        }
    }
    /* fixed-order reduction across the lanes, then lane (m * COLS + j) finishes element (m, n0 + j) */
    float mine = 0.0f;
#pragma unroll
    for (uint32_t m = 0; m < BC_SKINNY_MAX_M; m++)
#pragma unroll
        for (uint32_t j = 0; j < BC_SKINNY_COLS; j++) {
            float v = acc[m][j];
#pragma unroll
            for (uint32_t x = 16; x >= 1; x /= 2)
                v += bc_shfl_xor(v, x);
            v = bc_shfl_idx(v, 0);
            if (lane == m * BC_SKINNY_COLS + j)
                mine = v;
        }
    const uint32_t m = lane / BC_SKINNY_COLS, n = n0 + lane % BC_SKINNY_COLS;
    if (m < p->m && n < p->n) {
        const int out_t = (int)p->d_type;
        bc_epi_store_one(e, (uint64_t)m * e->ldd + n, bc_epi_apply(e, mine, m, n, out_t), out_t);
    }
}

_Static_assert(BC_SKINNY_MAX_M * BC_SKINNY_COLS <= 32, "one output element per lane");

BC_KERNEL void bc_gemm_skinny(bc_gemm_params p)
{
    const bc_epi e = {p.d, p.c, p.bias, p.m, p.n, p.ldd, p.ldc, p.alpha, p.beta, p.flags};
    const skinny_args s = {p.a, p.b, p.m, p.n, p.k, p.lda, p.ldb, p.d_type};
    bc_griddep_wait(); /* programmatic serialization: nothing read before the previous grid is done */
    bc_griddep_launch_dependents();
    if (p.ab_type == 1)
        skinny_gemm(&s, &e, 1);
    else
        skinny_gemm(&s, &e, 0);
}
