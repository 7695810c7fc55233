/* The dot kernel (sm_90a, CUDA cores): D = act(alpha * A . B^T + beta * C +
 * bias) for problems whose smaller side has at most BC_DOT_MAX_Q rows and
 * whose CTAs get at most BC_DOT_MAX_OUT outputs each (gemm_abi.h), such as
 * M and N of a few elements down a K in the thousands, or a few rows of a
 * wide N. A tensor-core tile spends a few useful rows or columns of a 64x32
 * tile's k-loop there, ~240 ns a k-block on one SM; here every output is a
 * dot product of a row of A and a row of B, read in 16-byte chunks by every
 * lane of a cluster at once.
 *
 *   - the larger side's rows ("tasks") are dealt to the grid's clusters in
 *     runs of ceil(rows / clusters); the smaller side's q <= 8 rows are read
 *     by every task;
 *   - K's chunks are split over the cluster's CTAs in contiguous slices; in
 *     a CTA the 8 warps are tw task slots x kw K groups (tw the power of two
 *     at or above the CTA's task count, at most 8), and lane l of K group g
 *     reads chunks g * 32 + l, then every 32 * kw further;
 *   - each lane keeps q fp32 sums (fma in increasing K); a warp adds its
 *     lanes by an xor butterfly; the K groups' sums are added in group
 *     order through shared memory, then the cluster's CTAs' in rank order
 *     by rank 0 through distributed shared memory, which finishes the
 *     output with epilogue.h's math.
 *
 * Determinism: every step's order is fixed by the plan (its cluster size
 * and cluster count), never by timing; no atomics. C may alias D: each
 * output's C is read by the thread that then writes it.
 */
#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/cluster.h"
#include "ptx/griddep.h"
#include "ptx/ldg.h"
#include "ptx/shfl.h"
#include "ptx/smem.h"

typedef __attribute__((address_space(3))) uint8_t dot_smem_u8;
extern dot_smem_u8 __attribute__((aligned(16))) bc_dot_smem[];

#define DOT_WPART_OFF 0u                                  /* [warp K group][output] f32 */
#define DOT_CPART_OFF (BC_DOT_WARPS * BC_DOT_MAX_OUT * 4u) /* [output] f32, the CTA's sum */

/* What a CTA reads: the larger side's rows (big) and the smaller side's
 * (small), each as a byte address of row 0 and bytes between rows. */
typedef struct dot_geom {
    uint64_t big, small, big_ld, small_ld;
    uint32_t q;          /* rows of the smaller side */
    uint32_t c_lo, c_hi; /* this CTA's 16-byte chunks of K */
} dot_geom;

/* acc + x . y over the two 16-bit elements of each word, low half first. */
BC_DEVICE float dot_pair(uint32_t x, uint32_t y, float acc, const int f16)
{
    if (f16) {
        acc = __builtin_fmaf(bc_f16_to_f32((uint16_t)x), bc_f16_to_f32((uint16_t)y), acc);
        return __builtin_fmaf(bc_f16_to_f32((uint16_t)(x >> 16)), bc_f16_to_f32((uint16_t)(y >> 16)), acc);
    }
    acc = __builtin_fmaf(__builtin_bit_cast(float, x << 16), __builtin_bit_cast(float, y << 16), acc);
    return __builtin_fmaf(__builtin_bit_cast(float, x & 0xFFFF0000u), __builtin_bit_cast(float, y & 0xFFFF0000u),
                          acc);
}

BC_DEVICE float dot_chunk(bc_ldg_u32x4 x, bc_ldg_u32x4 y, float acc, const int f16)
{
    acc = dot_pair(x.x, y.x, acc, f16);
    acc = dot_pair(x.y, y.y, acc, f16);
    acc = dot_pair(x.z, y.z, acc, f16);
    return dot_pair(x.w, y.w, acc, f16);
}

/* One lane's sums of one task (its big row at `row`) against the q small
 * rows over the chunks c_lo + first, then every `stride`: `un` chunks' loads
 * issued before their arithmetic (bytes in flight), for at most `qm` small
 * rows (compile-time, so the load arrays stay in registers). */
BC_DEVICE void dot_lane(const dot_geom *g, uint64_t row, uint32_t first, uint32_t stride, float *acc,
                        const uint32_t qm, const uint32_t un, const int f16)
{
#pragma unroll 1
    for (uint32_t c = g->c_lo + first; c < g->c_hi; c += un * stride) {
        bc_ldg_u32x4 xb[8], xs[8][BC_DOT_MAX_Q];
#pragma unroll
        for (uint32_t u = 0; u < un; u++) {
            const uint32_t cc = c + u * stride;
            if (cc < g->c_hi) {
                xb[u] = bc_ldg_nc_v4(row + (uint64_t)cc * 16u);
#pragma unroll
                for (uint32_t s = 0; s < qm; s++)
                    if (s < g->q)
                        xs[u][s] = bc_ldg_nc_v4(g->small + s * g->small_ld + (uint64_t)cc * 16u);
            }
        }
#pragma unroll
        for (uint32_t u = 0; u < un; u++)
            if (c + u * stride < g->c_hi) {
#pragma unroll
                for (uint32_t s = 0; s < qm; s++)
                    if (s < g->q)
                        acc[s] = dot_chunk(xb[u], xs[u][s], acc[s], f16);
            }
    }
}

/* The lane loop for this problem's q: fewer small rows, more chunks in flight. */
BC_DEVICE void dot_lane_q(const dot_geom *g, uint64_t row, uint32_t first, uint32_t stride, float *acc, const int f16)
{
    if (g->q == 1u)
        dot_lane(g, row, first, stride, acc, 1u, 4u, f16);
    else if (g->q == 2u)
        dot_lane(g, row, first, stride, acc, 2u, 2u, f16);
    else if (g->q <= 4u)
        dot_lane(g, row, first, stride, acc, 4u, 1u, f16);
    else
        dot_lane(g, row, first, stride, acc, BC_DOT_MAX_Q, 1u, f16);
}

/* The parameter is read field by field through p (never written). */
BC_DEVICE void dot_gemm(const bc_gemm_params *p)
{
    const uint32_t tid = bc_tid_x(), lane = tid % 32u, warp = tid / 32u;
    const uint32_t ns = p->split_k, rank = ns > 1u ? bc_cluster_ctarank() : 0u;
    const uint32_t groups = bc_nctaid_x() / ns, grp = bc_ctaid_x() / ns;
    const int a_big = p->m >= p->n;
    const uint32_t rows = a_big ? p->m : p->n, q = a_big ? p->n : p->m;
    const uint32_t per = (rows + groups - 1u) / groups, r0 = grp * per;
    const uint32_t nt = rows - r0 < per ? rows - r0 : per; /* the plan leaves no cluster without rows */
    const uint32_t chunks = p->k / 8u, cps = (chunks + ns - 1u) / ns;
    const uint32_t c_lo = rank * cps < chunks ? rank * cps : chunks;
    uint32_t tw = 1u;
    while (tw < nt && tw < BC_DOT_WARPS)
        tw *= 2u;
    const uint32_t kw = BC_DOT_WARPS / tw, slot = warp % tw, kg = warp / tw;
    const uint64_t lda = (uint64_t)p->lda * 2u, ldb = (uint64_t)p->ldb * 2u;
    const dot_geom g = {a_big ? p->a : p->b, a_big ? p->b : p->a, a_big ? lda : ldb, a_big ? ldb : lda, q, c_lo,
                        c_lo + cps < chunks ? c_lo + cps : chunks};
    const uint32_t base = (uint32_t)(uintptr_t)bc_dot_smem;
    const int f16 = p->ab_type == 1u;

    /* launched with programmatic serialization: nothing above read global memory */
    bc_griddep_wait();
    bc_griddep_launch_dependents();

#pragma unroll 1
    for (uint32_t r = slot; r < nt; r += tw) {
        float acc[BC_DOT_MAX_Q];
#pragma unroll
        for (uint32_t s = 0; s < BC_DOT_MAX_Q; s++)
            acc[s] = 0.0f;
        const uint64_t row = g.big + (uint64_t)(r0 + r) * g.big_ld;
        if (f16)
            dot_lane_q(&g, row, kg * 32u + lane, 32u * kw, acc, 1);
        else
            dot_lane_q(&g, row, kg * 32u + lane, 32u * kw, acc, 0);
#pragma unroll
        for (uint32_t s = 0; s < BC_DOT_MAX_Q; s++) {
            if (s >= q)
                break;
            float v = acc[s];
#pragma unroll
            for (uint32_t o = 16u; o >= 1u; o /= 2u)
                v += bc_shfl_xor_f32(v, o);
            if (lane == 0)
                bc_st_shared_b32(base + DOT_WPART_OFF + (kg * BC_DOT_MAX_OUT + r * q + s) * 4u,
                                 __builtin_bit_cast(uint32_t, v));
        }
    }
    bc_syncthreads();
    const uint32_t outs = nt * q;
    float v = 0.0f;
    if (tid < outs) {
        v = bc_ld_shared_f32(base + DOT_WPART_OFF + tid * 4u);
        for (uint32_t k = 1; k < kw; k++)
            v += bc_ld_shared_f32(base + DOT_WPART_OFF + (k * BC_DOT_MAX_OUT + tid) * 4u);
    }
    if (ns > 1u) {
        if (tid < outs)
            bc_st_shared_b32(base + DOT_CPART_OFF + tid * 4u, __builtin_bit_cast(uint32_t, v));
        bc_cluster_sync(); /* every CTA's sums are published */
        if (rank == 0 && tid < outs)
            for (uint32_t r = 1; r < ns; r++)
                v += bc_ld_cluster_f32(bc_mapa(base + DOT_CPART_OFF + tid * 4u, r));
        bc_cluster_sync(); /* rank 0 has read them: every CTA may leave */
    }
    if (rank != 0 || tid >= outs)
        return;
    const uint32_t t = r0 + tid / q, s = tid % q;
    const uint32_t m = a_big ? t : s, n = a_big ? s : t;
    bc_epi_finish_output(p, v, m, n);
}

BC_KERNEL void bc_gemm_sm90_dot(bc_gemm_params p) { dot_gemm(&p); }

_Static_assert(BC_DOT_MAX_OUT <= BC_DOT_THREADS, "one thread per output finishes it");
_Static_assert(BC_DOT_SMEM_BYTES == DOT_CPART_OFF + BC_DOT_MAX_OUT * 4u, "shared memory layout");
