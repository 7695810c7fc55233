/* The GEMV kernel (sm_90a, mma.sync): D = act(alpha * A . B^T + beta * C +
 * bias) where the smaller side has at most BC_GEMV_MAX_Q rows (a batch of
 * up to 16 against a wide weight matrix, in either operand; its twin
 * bc_gemm_sm90_gemv32, up to BC_GEMV32_MAX_Q in two halves of 16). A TMA ring
 * moves a narrow tile's k-block in ~240 ns whatever its bytes, so the
 * skinny 64x32 tile streams B's 4 KB a k-block at ~17 GB/s an SM; here B
 * is read by ordinary 16-byte
 * loads from every lane, straight into mma.sync fragments, so the bytes in
 * flight are the warps' registers, not the ring's barrier rounds.
 *
 *   - K's 32-element steps are split over the cluster's split_k CTAs in
 *     contiguous slices, and a CTA's slice over its kw K groups of warps;
 *     its 8 / kw row groups each take 8 * nt rows of the larger side (nt =
 *     1 or 2; the grid tells kw and nt, gemm_abi.h);
 *   - a step: lane (g = l / 4, t = l % 4) loads 16 bytes of larger-side row
 *     8j + g at k + 8t for each of its nt 8-row groups j, and 16 bytes of
 *     smaller-side rows g and (more than 8 rows) g + 8 at the same k; the 8
 *     k values of a chunk are the lane's k slots of two m16n8k16 mma
 *     (words 0-1 the first's slots 2t..2t+1 and 2t+8..2t+9, words 2-3 the
 *     second's), the same permutation of K for both operands, so each sum
 *     is the dot product; the smaller side is the mma's A (16 rows), the
 *     larger its B (8 columns a group);
 *   - the K groups' partial sums are added in group order through shared
 *     memory, then the cluster's CTAs' in rank order by rank 0 through
 *     distributed shared memory, which finishes each output with
 *     epilogue.h's math.
 *
 * The resident executor runs a GEMV plan's CTAs as work items with the same
 * geometry, steps and sums (resident_gemv.c), its loads through L2.
 *
 * Determinism: the grid, the cluster, the warps' K slices and every order
 * of addition are fixed by the plan, never by timing; no atomics. C may
 * alias D: each output's C is read by the thread that then writes it. K is
 * a multiple of 8 (every plan's, BC_ERR_K_ALIGNMENT): a lane's chunk lies
 * wholly inside K or wholly past it.
 */
#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/cluster.h"
#include "ptx/griddep.h"
#include "ptx/ldg.h"
#include "ptx/mma.h"
#include "ptx/smem.h"

typedef __attribute__((address_space(3))) uint8_t gemv_smem_u8;
extern gemv_smem_u8 __attribute__((aligned(16))) bc_gemv_smem[];

/* A CTA's share of a GEMV problem, from the plan's grid (groups row runs x
 * ns K slices): the larger side's rows and the smaller side's q, its K
 * steps and a slice's, the run's shape (nt, rw: module comment), its kw K
 * groups, cols larger-side rows (1 << lcols) and a warp's steps; lrw =
 * log2(rw). */
typedef struct gemv_geom {
    uint32_t a_big, rows, q, steps, slice, nt, rw, kw, cols, wsteps, lrw, lcols;
} gemv_geom;

/* log2 of a power of two. */
BC_DEVICE uint32_t gemv_log2(uint32_t x) { return (uint32_t)__builtin_ctz(x); }

/* Without a division: every divisor here is a power of two (ns is 1, 2, 4
 * or 8: gemm_rule.c's gemv_grid, which the executor's plans keep), and the
 * run's test against groups' share of the rows, ceil(rows / groups) > x,
 * is rows > x * groups. A division's chain of dependent instructions is
 * what a resident GEMV item waits on before its first load. */
BC_DEVICE gemv_geom gemv_geom_of(uint32_t m, uint32_t n, uint32_t k, uint32_t groups, uint32_t ns)
{
    gemv_geom G;
    G.a_big = m >= n;
    G.rows = G.a_big ? m : n;
    G.q = G.a_big ? n : m;
    G.steps = (k + BC_GEMV_STEP - 1u) / BC_GEMV_STEP;
    G.slice = (G.steps + ns - 1u) >> gemv_log2(ns);
    /* the plan's run of rows a CTA (gemm_rule.c, gemv_grid): 8 (one row group of 8), 16 with every warp a K
     * group (two groups of 8 rows), or rw row groups of 8 where the warps have fewer than 8 steps each */
    G.rw = 1u, G.nt = 1u, G.lrw = 0u;
    if ((uint64_t)G.rows > 8u * (uint64_t)groups && BC_GEMV_KGROUPS(G.slice) == BC_GEMV_WARPS)
        G.nt = 2u;
    else
        while ((uint64_t)G.rows > 8u * (uint64_t)G.rw * groups && G.rw < BC_GEMV_WARPS)
            G.rw *= 2u, G.lrw++;
    G.kw = BC_GEMV_WARPS >> G.lrw;
    G.lcols = 3u + (G.nt - 1u) + G.lrw;
    G.cols = 1u << G.lcols;
    G.wsteps = (G.slice + G.kw - 1u) >> (3u - G.lrw);
    return G;
}

/* What a lane of one of a CTA's 8 warps reads, as byte addresses: its
 * larger-side rows (lane's row of each group, clamped to the last row:
 * loaded, never stored) and the smaller side's rows g and g + 8, and with
 * q32 g + 16 and g + 24 (lo2, hi2) (0: past the smaller side, zeros). */
typedef struct gemv_lane {
    uint64_t big[2];
    uint64_t lo, hi, lo2, hi2;
    uint32_t s0, s1;   /* this warp's steps of 32 elements of K */
    uint32_t s_lane;   /* steps in which this lane's chunk lies inside K */
    uint32_t s_full;   /* steps in which every lane's chunk does */
    uint32_t kg, rg;   /* the warp's K group and row group */
} gemv_lane;

/* Warp `warp` of the CTA that takes row run grp and K slice `rank`; q32
 * (compile-time): the twin's smaller-side rows 16-31 as well. */
BC_DEVICE gemv_lane gemv_lane_of(const gemv_geom *G, uint64_t a, uint64_t b, uint32_t lda, uint32_t ldb, uint32_t k,
                                 uint32_t grp, uint32_t rank, uint32_t warp, uint32_t lane, const uint32_t q32)
{
    const uint32_t g = lane / 4u, t = lane % 4u;
    const uint32_t c0 = rank * G->slice < G->steps ? rank * G->slice : G->steps;
    const uint32_t c1 = c0 + G->slice < G->steps ? c0 + G->slice : G->steps;
    const uint64_t big = G->a_big ? a : b, big_ld = (uint64_t)(G->a_big ? lda : ldb) * 2u;
    const uint64_t small = G->a_big ? b : a, small_ld = (uint64_t)(G->a_big ? ldb : lda) * 2u;
    gemv_lane w;
    w.kg = warp >> G->lrw;
    w.rg = warp & (G->rw - 1u);
    const uint32_t r0 = grp * G->cols;
    for (uint32_t j = 0; j < 2u; j++) {
        const uint32_t r = r0 + w.rg * 8u * G->nt + 8u * j + g;
        w.big[j] = big + (uint64_t)(r < G->rows ? r : G->rows - 1u) * big_ld + t * 16u;
    }
    w.lo = g < G->q ? small + (uint64_t)g * small_ld + t * 16u : 0u;
    w.hi = g + 8u < G->q ? small + (uint64_t)(g + 8u) * small_ld + t * 16u : 0u;
    w.lo2 = q32 && g + 16u < G->q ? small + (uint64_t)(g + 16u) * small_ld + t * 16u : 0u;
    w.hi2 = q32 && g + 24u < G->q ? small + (uint64_t)(g + 24u) * small_ld + t * 16u : 0u;
    w.s0 = c0 + w.kg * G->wsteps < c1 ? c0 + w.kg * G->wsteps : c1;
    w.s1 = w.s0 + G->wsteps < c1 ? w.s0 + G->wsteps : c1;
    w.s_lane = 8u * t < k ? (k - 8u * t + BC_GEMV_STEP - 1u) / BC_GEMV_STEP : 0u;
    w.s_full = k / BC_GEMV_STEP;
    return w;
}

/* One load of a lane's 16 bytes: through the read-only path in a launch
 * (no thread of its grid writes A or B), the larger side's not kept in L1;
 * through L2 in the resident executor (coh: earlier operations of a step
 * write its activations, and the host rewrites its weights between steps). */
BC_DEVICE bc_ldg_u32x4 gemv_ld(uint64_t a, const int stream, const int coh)
{
    return coh ? bc_ldg_cg_v4(a) : stream ? bc_ldg_nc_stream_v4(a) : bc_ldg_nc_v4(a);
}

/* acc[j] (smaller-side rows 0-15) and, with q32, acc[2 + j] (rows 16-31)
 * += the un steps from s of this lane's chunks, their loads issued before
 * their mma (bytes in flight); nt groups, hi (the smaller side has rows
 * past 8), q32, tail and f16 compile-time. tail: the steps may reach past
 * the warp's slice (the mma run by the whole warp: s < s1 is the same for
 * all its lanes) and past K (a lane past it supplies zeros); else every
 * lane's chunk of every step lies inside both, and no load is predicated
 * but on the smaller side's rows. */
BC_DEVICE void gemv_group(const gemv_lane *w, float (*acc)[4], uint32_t s, const uint32_t nt, const uint32_t un,
                          const uint32_t hi, const uint32_t q32, const uint32_t tail, const int coh, const int f16)
{
    const bc_ldg_u32x4 zero = {0u, 0u, 0u, 0u};
    bc_ldg_u32x4 b[8][2], lo[8], hv[8], lo2[8], hv2[8];
#pragma unroll
    for (uint32_t u = 0; u < un; u++) {
        const uint32_t in = !tail || s + u < w->s_lane;
        const uint64_t off = (uint64_t)(s + u) * 64u;
#pragma unroll
        for (uint32_t j = 0; j < nt; j++)
            b[u][j] = in ? gemv_ld(w->big[j] + off, 1, coh) : zero;
        lo[u] = in && w->lo ? gemv_ld(w->lo + off, 0, coh) : zero;
        hv[u] = hi && in && w->hi ? gemv_ld(w->hi + off, 0, coh) : zero;
        if (q32) {
            lo2[u] = in && w->lo2 ? gemv_ld(w->lo2 + off, 0, coh) : zero;
            hv2[u] = in && w->hi2 ? gemv_ld(w->hi2 + off, 0, coh) : zero;
        }
    }
#pragma unroll
    for (uint32_t u = 0; u < un; u++) {
        if (tail && s + u >= w->s1)
            break;
#pragma unroll
        for (uint32_t j = 0; j < nt; j++) {
            const uint32_t a0[4] = {lo[u].x, hv[u].x, lo[u].y, hv[u].y}, b0[2] = {b[u][j].x, b[u][j].y};
            const uint32_t a1[4] = {lo[u].z, hv[u].z, lo[u].w, hv[u].w}, b1[2] = {b[u][j].z, b[u][j].w};
            bc_mma_m16n8k16(acc[j], a0, b0, f16);
            bc_mma_m16n8k16(acc[j], a1, b1, f16);
            if (q32) {
                const uint32_t c0[4] = {lo2[u].x, hv2[u].x, lo2[u].y, hv2[u].y};
                const uint32_t c1[4] = {lo2[u].z, hv2[u].z, lo2[u].w, hv2[u].w};
                bc_mma_m16n8k16(acc[2 + j], c0, b0, f16);
                bc_mma_m16n8k16(acc[2 + j], c1, b1, f16);
            }
        }
    }
}

/* acc[j] += the steps [s0, s1) of this lane's chunks: whole groups of un
 * steps while every lane's chunks lie inside K, then the rest a step at a
 * time. coh (compile-time): the resident executor's loads through L2
 * (gemv_ld), and there a group of 2 down the slice's rest where un is 4, so
 * that a warp's few steps still leave together. Every accumulator takes its
 * steps in order, however they are grouped: the launch's sums. (Twice the
 * launch's steps in flight a warp in the executor measured no faster on
 * single layers and ~0.5 us slower on the MLP policy, in one run that ran
 * it first: kernels_ptx/PERF_NOTES.md, change 89.) */
BC_DEVICE void gemv_steps(const gemv_lane *w, float (*acc)[4], const uint32_t nt, const uint32_t un,
                          const uint32_t hi, const uint32_t q32, const int coh, const int f16)
{
    const uint32_t full = w->s1 < w->s_full ? w->s1 : w->s_full;
    uint32_t s = w->s0;
#pragma unroll 1
    for (; s + un <= full; s += un)
        gemv_group(w, acc, s, nt, un, hi, q32, 0u, coh, f16);
    if (coh && un > 2u && s + 2u <= full) {
        gemv_group(w, acc, s, nt, 2u, hi, q32, 0u, coh, f16);
        s += 2u;
    }
#pragma unroll 1
    for (; s < w->s1; s++)
        gemv_group(w, acc, s, nt, 1u, hi, q32, 1u, coh, f16);
}

/* The step loop for this problem: one group and four steps in flight, or,
 * for smaller sides past 8 rows (twice the smaller side's loads a step),
 * two groups of two steps where the grid has them; in the 32-row twin
 * (q32, compile-time), two steps of one or two groups, four smaller-side
 * loads a step. */
BC_DEVICE void gemv_steps_of(const gemv_lane *w, float (*acc)[4], uint32_t nt, uint32_t hi, const uint32_t q32,
                             const int coh, const int f16)
{
    if (q32 && nt == 2u)
        gemv_steps(w, acc, 2u, 2u, 1u, 1u, coh, f16);
    else if (q32)
        gemv_steps(w, acc, 1u, 2u, 1u, 1u, coh, f16);
    else if (nt == 2u)
        gemv_steps(w, acc, 2u, 2u, 1u, 0u, coh, f16);
    else if (hi)
        gemv_steps(w, acc, 1u, 4u, 1u, 0u, coh, f16);
    else
        gemv_steps(w, acc, 1u, 4u, 0u, 0u, coh, f16);
}

/* Shared memory: [K group][column][row 0..rq - 1] f32, the groups'
 * partials (`cols` larger-side rows a CTA; rq = 1 << lrq smaller-side rows:
 * 16, or 32 in the twin), then [output] f32, the CTA's sums. lrq is
 * compile-time. */
#define GEMV_CPART_OFF(lrq) BC_GEMV_PART_BYTES_OF(1u << (lrq))
BC_DEVICE uint32_t gemv_part(uint32_t base, uint32_t kg, uint32_t cols, uint32_t col, uint32_t row, const uint32_t lrq)
{
    return base + (((kg * cols + col) << lrq) + row) * 4u;
}

/* A warp's partials into shared memory. acc[j]: c0, c1 smaller-side row g,
 * columns (larger-side rows) 2t, 2t + 1 of group j; c2, c3 row g + 8;
 * acc[2 + j] the same of rows 16 on (q32, compile-time). */
BC_DEVICE void gemv_store_part(const gemv_geom *G, uint32_t base, const gemv_lane *w, float (*acc)[4], uint32_t lane,
                               const uint32_t q32)
{
    const uint32_t lrq = q32 ? 5u : 4u;
    const uint32_t g = lane / 4u, t = lane % 4u;
#pragma unroll
    for (uint32_t j = 0; j < 2u; j++) {
        if (j >= G->nt)
            break;
        const uint32_t col = w->rg * 8u * G->nt + 8u * j + 2u * t;
#pragma unroll
        for (uint32_t h = 0; h < 1u + q32; h++) {
            const float *v = acc[2u * h + j];
            const uint32_t r = g + 16u * h;
            bc_st_shared_b32(gemv_part(base, w->kg, G->cols, col, r, lrq), __builtin_bit_cast(uint32_t, v[0]));
            bc_st_shared_b32(gemv_part(base, w->kg, G->cols, col + 1u, r, lrq), __builtin_bit_cast(uint32_t, v[1]));
            bc_st_shared_b32(gemv_part(base, w->kg, G->cols, col, r + 8u, lrq), __builtin_bit_cast(uint32_t, v[2]));
            bc_st_shared_b32(gemv_part(base, w->kg, G->cols, col + 1u, r + 8u, lrq),
                             __builtin_bit_cast(uint32_t, v[3]));
        }
    }
}

/* Output o of the CTA's cols x rq (consecutive outputs along D's rows:
 * the smaller side's index where it is N, else the larger side's): its
 * smaller-side row *s and column *col. */
BC_DEVICE void gemv_out_of(const gemv_geom *G, uint32_t o, uint32_t *s, uint32_t *col, const uint32_t lrq)
{
    *s = G->a_big ? o & ((1u << lrq) - 1u) : o >> G->lcols;
    *col = G->a_big ? o >> lrq : o & (G->cols - 1u);
}

/* The CTA's sum of (s, col): its K groups' partials in group order. */
BC_DEVICE float gemv_cta_sum(const gemv_geom *G, uint32_t base, uint32_t s, uint32_t col, const uint32_t lrq)
{
    float v = bc_ld_shared_f32(gemv_part(base, 0u, G->cols, col, s, lrq));
    for (uint32_t x = 1; x < G->kw; x++)
        v += bc_ld_shared_f32(gemv_part(base, x, G->cols, col, s, lrq));
    return v;
}

/* The parameter is read field by field through p (never written). q32
 * (compile-time): the twin, a smaller side of 17-32 rows. */
BC_DEVICE void gemv_gemm(const bc_gemm_params *p, const uint32_t q32)
{
    const uint32_t lrq = q32 ? 5u : 4u;
    const uint32_t tid = bc_tid_x(), lane = tid % 32u, warp = tid / 32u;
    const uint32_t ns = p->split_k, rank = ns > 1u ? bc_cluster_ctarank() : 0u;
    const uint32_t groups = bc_nctaid_x() / ns, grp = bc_ctaid_x() / ns;
    const gemv_geom G = gemv_geom_of(p->m, p->n, p->k, groups, ns);
    const gemv_lane w = gemv_lane_of(&G, p->a, p->b, p->lda, p->ldb, p->k, grp, rank, warp, lane, q32);
    const uint32_t base = (uint32_t)(uintptr_t)bc_gemv_smem;
    float acc[4][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f},
                       {0.0f, 0.0f, 0.0f, 0.0f}}; /* [2..3]: the twin's rows 16-31 */

    /* launched with programmatic serialization: nothing above read global memory */
    bc_griddep_wait();

    if (p->ab_type == 1u)
        gemv_steps_of(&w, acc, G.nt, G.q > 8u, q32, 0, 1);
    else
        gemv_steps_of(&w, acc, G.nt, G.q > 8u, q32, 0, 0);
    /* the next kernel may launch once every CTA is past its loads (here rather than before the loop:
     * measured no worse, kernels_ptx/PERF_NOTES.md change 87) */
    bc_griddep_launch_dependents();
    gemv_store_part(&G, base, &w, acc, lane, q32);
    bc_syncthreads();
    const uint32_t outs = G.cols << lrq, r0 = grp * G.cols;
    if (ns > 1u) {
        for (uint32_t o = tid; o < outs; o += BC_GEMV_THREADS) {
            uint32_t s, col;
            gemv_out_of(&G, o, &s, &col, lrq);
            const float v = gemv_cta_sum(&G, base, s, col, lrq);
            bc_st_shared_b32(base + GEMV_CPART_OFF(lrq) + o * 4u, __builtin_bit_cast(uint32_t, v));
        }
        bc_cluster_sync(); /* every CTA's sums are published */
    }
    if (rank == 0)
        for (uint32_t o = tid; o < outs; o += BC_GEMV_THREADS) {
            uint32_t s, col;
            gemv_out_of(&G, o, &s, &col, lrq);
            const uint32_t r = r0 + col;
            if (s >= G.q || r >= G.rows)
                continue;
            float v;
            if (ns > 1u) {
                v = bc_ld_shared_f32(base + GEMV_CPART_OFF(lrq) + o * 4u);
                for (uint32_t x = 1; x < ns; x++)
                    v += bc_ld_cluster_f32(bc_mapa(base + GEMV_CPART_OFF(lrq) + o * 4u, x));
            } else {
                v = gemv_cta_sum(&G, base, s, col, lrq);
            }
            bc_epi_finish_output(p, v, G.a_big ? r : s, G.a_big ? s : r);
        }
    if (ns > 1u)
        bc_cluster_sync(); /* rank 0 has read them: every CTA may leave */
}

BC_KERNEL void bc_gemm_sm90_gemv(bc_gemm_params p) { gemv_gemm(&p, 0u); }
/* the 32-row twin: its own entry, so that the 16-row kernel's code stays
 * as it is (sharing one cost 16-row shapes 1.3%: PERF_NOTES.md change 98) */
BC_KERNEL void bc_gemm_sm90_gemv32(bc_gemm_params p) { gemv_gemm(&p, 1u); }

_Static_assert(BC_GEMV_MAX_COLS == 8 * BC_GEMV_WARPS, "a CTA's columns: one row group of 8 a warp at most");
_Static_assert(BC_GEMV_WARPS == 8, "gemv_geom_of: kw = 8 >> lrw, so wsteps = ceil(slice / kw) shifts by 3 - lrw");
_Static_assert(BC_GEMV_PART_BYTES_OF(16) >= BC_GEMV_WARPS * 16 * 16 * 4, "partials: 8 K groups of 16 columns");
_Static_assert(BC_GEMV_SMEM_BYTES == GEMV_CPART_OFF(4) + BC_GEMV_MAX_COLS * 16 * 4, "shared memory layout");
_Static_assert(BC_GEMV32_SMEM_BYTES == GEMV_CPART_OFF(5) + BC_GEMV_MAX_COLS * 32 * 4, "the twin's shared memory");
_Static_assert(BC_GEMV32_MAX_Q == 32 && BC_GEMV_MAX_Q == 16, "the smaller side in one or two halves of 16 rows");
