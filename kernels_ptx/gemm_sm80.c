/* Portable GEMM (sm_80 and later): D = act(alpha * A . B^T + beta * C + bias)
 * from mma.sync m16n8k16, ldmatrix and cp.async: the instructions every GPU
 * from Ampere up has, so one source serves sm_80/86/87/89, sm_120/121 and,
 * built into the sm_90a image, the H100 (where it is tested).
 *
 * One kernel per configuration (gemm_abi.h, BC_SM80_CFG_*); input type
 * (bf16/f16) and output type (bf16/f16/f32) are launch parameters, as in the
 * Hopper kernel. One CTA per BM x BN tile (a plain grid in the banded order
 * of tile_sched.h), every thread both loads and computes:
 *
 *   - a ring of STAGES shared-memory stages, each the tile's A (BM x BK) and
 *     B (BN x BK) rows, filled by 16-byte cp.async with zero-fill at the M, N
 *     and K edges (K is a multiple of 8, so a 16-byte chunk is all in or all
 *     out); STAGES - 1 k-blocks are in flight while one is consumed;
 *   - rows are XOR-swizzled in 16-byte chunks (sm80_swz) so that the eight
 *     rows one ldmatrix phase reads, and the rows cp.async writes, fall in
 *     distinct banks;
 *   - each warp owns a (BM/WM) x (BN/WN) piece: ldmatrix.x4 brings A and B
 *     fragments for one k16 step into registers while the mma.sync of the
 *     previous step run (two fragment buffers);
 *   - with KS = 2 (K sliced in the CTA) there are two such sets of warps:
 *     the first takes the first half of every k-block's k16 steps, the
 *     second the other half, and before the epilogue the second set's
 *     accumulators are added to the first's through shared memory;
 *   - the epilogue (epilogue.h's math, shared with the Hopper and Blackwell
 *     kernels) stages each warp's alpha * acc through the idle ring, 32
 *     columns at a time, then stores four adjacent columns per thread: one
 *     8- or 16-byte store where D's alignment allows, masked at M and N.
 *
 * Determinism: each output element is reduced by one thread of one CTA (two
 * with KS = 2, whose sums are then added in a fixed order), the k16 steps
 * in increasing K; no atomics. C may alias D: every element's C is
 * read by the thread that then writes that element of D.
 */
#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/cp_async.h"
#include "ptx/ldmatrix.h"
#include "ptx/mma.h"
#include "ptx/sreg.h"
#include "tile_sched.h"

#ifndef BC_SM80_PDL
#define BC_SM80_PDL 0 /* 1 in the sm_90a image only */
#endif
#if BC_SM80_PDL
#include "ptx/griddep.h"
#endif

typedef __attribute__((address_space(3))) uint8_t bc_smem_u8;
extern bc_smem_u8 __attribute__((aligned(128))) bc_sm80_smem[];

/* The compile-time shape of a configuration. */
typedef struct sm80_shape {
    uint32_t bm, bn, bk, wm, wn, ks, stages;
} sm80_shape;

/* Per-warp fragment counts, and the largest any configuration uses (the
 * register arrays are sized by these and indexed only by unrolled loops). */
#define SM80_MT(g) ((g).bm / (g).wm / 16u) /* m16 tiles per warp */
#define SM80_NT(g) ((g).bn / (g).wn / 8u)  /* n8 tiles per warp */
#define SM80_MAX_MT 4
#define SM80_MAX_NT 8

/* Byte offset of 16-byte chunk c of row r in a tile whose rows are bk
 * elements (64 or 128 bytes). The chunk index is XORed with (r / 2) % 4 or
 * r % 8: the eight rows of an ldmatrix phase at one logical chunk then cover
 * the eight 16-byte bank groups of a 128-byte line exactly once. */
BC_DEVICE uint32_t sm80_swz(uint32_t r, uint32_t c, const uint32_t bk)
{
    if (bk == 64)
        return r * 128u + ((c ^ (r % 8u)) << 4);
    return r * 64u + ((c ^ ((r / 2u) % 4u)) << 4);
}

BC_DEVICE uint32_t sm80_stage(sm80_shape g, uint32_t base, uint32_t s)
{
    return base + s * BC_SM80_STAGE_BYTES(g.bm, g.bn, g.bk);
}

/* What the main loop reads of the parameters (copied out of parameter
 * space field by field, like bc_epi). */
typedef struct sm80_args {
    uint64_t a, b;
    uint32_t lda, ldb, m, n, k;
    uint32_t tiles_m, tiles_n, k_blocks, group_m;
} sm80_args;

/* Where this thread's 16-byte chunks of a stage come from and go to: chunk
 * i of A is tile row (tid + i*T) / (BK/8), k-chunk (tid + i*T) % (BK/8);
 * likewise for B. Rows past M (N) read nothing and are zero-filled. */
typedef struct sm80_loader {
    uint64_t a_src[4], b_src[4]; /* global byte address of the chunk at k = 0 */
    uint32_t a_dst[4], b_dst[4]; /* byte offset in the stage */
    uint32_t a_ok, b_ok;         /* bit i: the row of chunk i is inside M (N) */
    uint32_t a_kc[4], b_kc[4];   /* k-chunk of chunk i */
} sm80_loader;

#define SM80_WARPS(g) ((g).wm * (g).wn * (g).ks)
#define SM80_A_CHUNKS(g) ((g).bm * (g).bk / 8u / (32u * SM80_WARPS(g)))
#define SM80_B_CHUNKS(g) ((g).bn * (g).bk / 8u / (32u * SM80_WARPS(g)))

BC_DEVICE void sm80_loader_init(sm80_shape g, sm80_loader *ld, const sm80_args *p, uint32_t m0, uint32_t n0)
{
    const uint32_t tid = bc_tid_x(), nthr = 32u * SM80_WARPS(g), cpr = g.bk / 8u;
    const uint32_t a_bytes = g.bm * g.bk * 2u;
    ld->a_ok = ld->b_ok = 0;
#pragma unroll
    for (uint32_t i = 0; i < SM80_A_CHUNKS(g); i++) {
        const uint32_t c = tid + i * nthr, r = c / cpr, kc = c % cpr;
        const int ok = m0 + r < p->m;
        ld->a_src[i] = ok ? p->a + ((uint64_t)(m0 + r) * p->lda + kc * 8u) * 2u : p->a;
        ld->a_dst[i] = sm80_swz(r, kc, g.bk);
        ld->a_kc[i] = kc;
        ld->a_ok |= (uint32_t)ok << i;
    }
#pragma unroll
    for (uint32_t i = 0; i < SM80_B_CHUNKS(g); i++) {
        const uint32_t c = tid + i * nthr, r = c / cpr, kc = c % cpr;
        const int ok = n0 + r < p->n;
        ld->b_src[i] = ok ? p->b + ((uint64_t)(n0 + r) * p->ldb + kc * 8u) * 2u : p->b;
        ld->b_dst[i] = a_bytes + sm80_swz(r, kc, g.bk);
        ld->b_kc[i] = kc;
        ld->b_ok |= (uint32_t)ok << i;
    }
}

/* Issues k-block kb's copies into stage `st` (nothing when kb >= kblocks);
 * the caller commits the group either way, so group counts stay uniform. */
BC_DEVICE void sm80_load(sm80_shape g, const sm80_loader *ld, const sm80_args *p, uint32_t st, uint32_t kb,
                         uint32_t kblocks)
{
    if (kb >= kblocks)
        return;
    const uint32_t k0 = kb * g.bk;
    const uint64_t koff = (uint64_t)k0 * 2u;
#pragma unroll
    for (uint32_t i = 0; i < SM80_A_CHUNKS(g); i++) {
        const uint32_t ok = ((ld->a_ok >> i) & 1u) && k0 + ld->a_kc[i] * 8u < p->k;
        bc_cp_async16(st + ld->a_dst[i], ok ? ld->a_src[i] + koff : p->a, ok);
    }
#pragma unroll
    for (uint32_t i = 0; i < SM80_B_CHUNKS(g); i++) {
        const uint32_t ok = ((ld->b_ok >> i) & 1u) && k0 + ld->b_kc[i] * 8u < p->k;
        bc_cp_async16(st + ld->b_dst[i], ok ? ld->b_src[i] + koff : p->b, ok);
    }
}

/* The fragments of one k16 step. */
typedef struct sm80_frag {
    uint32_t a[SM80_MAX_MT][4];
    uint32_t b[SM80_MAX_NT][2];
} sm80_frag;

/* This lane's ldmatrix rows: A rows wm_off + lane % 16 (+ 16 per m tile),
 * k-chunk lane / 16; B rows wn_off + 8 * (q / 2) + lane % 8 (+ 16 per n
 * tile pair), k-chunk q % 2, with q = lane / 8. */
typedef struct sm80_lanes {
    uint32_t a_row, a_half, b_row, b_half;
} sm80_lanes;

BC_DEVICE void sm80_load_frag(sm80_shape g, sm80_frag *f, const sm80_lanes *ln, uint32_t st, uint32_t ks)
{
    const uint32_t a_bytes = g.bm * g.bk * 2u;
#pragma unroll
    for (uint32_t mt = 0; mt < SM80_MT(g); mt++)
        bc_ldmatrix_x4(st + sm80_swz(ln->a_row + 16u * mt, 2u * ks + ln->a_half, g.bk), &f->a[mt][0], &f->a[mt][1],
                       &f->a[mt][2], &f->a[mt][3]);
#pragma unroll
    for (uint32_t np = 0; np < SM80_NT(g) / 2u; np++)
        bc_ldmatrix_x4(st + a_bytes + sm80_swz(ln->b_row + 16u * np, 2u * ks + ln->b_half, g.bk),
                       &f->b[2 * np][0], &f->b[2 * np][1], &f->b[2 * np + 1][0], &f->b[2 * np + 1][1]);
}

BC_DEVICE void sm80_mma_step(sm80_shape g, float *acc, const sm80_frag *f, const int f16)
{
#pragma unroll
    for (uint32_t mt = 0; mt < SM80_MT(g); mt++)
#pragma unroll
        for (uint32_t nt = 0; nt < SM80_NT(g); nt++)
            bc_mma_m16n8k16(&acc[(mt * SM80_NT(g) + nt) * 4u], f->a[mt], f->b[nt], f16);
}

/* The main loop over every k-block of the tile; f16 a compile-time
 * constant. cp.async groups: one per k-block, committed in order, so
 * "at most STAGES - 2 pending" means the next stage has landed. This warp
 * runs k16 steps slice * per .. slice * per + per - 1 of each k-block. */
BC_DEVICE void sm80_mainloop(sm80_shape g, float *acc, const sm80_loader *ld, const sm80_lanes *ln,
                             const sm80_args *p, uint32_t base, uint32_t slice, const int f16)
{
    const uint32_t kblocks = p->k_blocks, per = g.bk / 16u / g.ks, ks0 = slice * per;
#pragma unroll
    for (uint32_t s = 0; s + 1u < g.stages; s++) {
        sm80_load(g, ld, p, sm80_stage(g, base, s), s, kblocks);
        bc_cp_async_commit();
    }
    bc_cp_async_wait(g.stages - 2u);
    bc_syncthreads();
    sm80_frag frag[2];
    uint32_t rd = 0, wr = g.stages - 1u; /* stage read now, stage written next */
    sm80_load_frag(g, &frag[0], ln, sm80_stage(g, base, rd), ks0);
    for (uint32_t kb = 0; kb < kblocks; kb++) {
#pragma unroll
        for (uint32_t j = 0; j < per; j++) {
            if (j == per - 1u) { /* the next k-block's stage: landed, and every warp is past its reuse */
                bc_cp_async_wait(g.stages - 2u);
                bc_syncthreads();
                rd = rd + 1u == g.stages ? 0u : rd + 1u;
            }
            sm80_load_frag(g, &frag[(j + 1u) % 2u], ln, sm80_stage(g, base, rd), ks0 + (j + 1u) % per);
            if (j == 0) { /* refill the stage every warp finished reading before the last barrier */
                sm80_load(g, ld, p, sm80_stage(g, base, wr), kb + g.stages - 1u, kblocks);
                bc_cp_async_commit();
                wr = wr + 1u == g.stages ? 0u : wr + 1u;
            }
            sm80_mma_step(g, acc, &frag[j % 2u], f16);
        }
    }
    bc_cp_async_wait(0);
    bc_syncthreads(); /* the ring is idle: the epilogue may reuse it */
}

typedef float bc_f32x2v __attribute__((ext_vector_type(2)));
typedef float bc_f32x4v __attribute__((ext_vector_type(4)));

/* The epilogue of one warp: its (BM/WM) x (BN/WN) accumulators, 32 columns
 * at a time, through a private buffer of (BM/WM) rows x 128 bytes in the
 * ring (chunk-swizzled by row % 8, so the fragment writes and the row reads
 * are both free of bank conflicts). */
BC_DEVICE void sm80_epilogue(sm80_shape g, const float *acc, const bc_epi *e, uint32_t row0, uint32_t col0,
                             uint32_t buf, int out_t)
{
    const uint32_t lane = bc_tid_x() % 32u, gi = lane / 4u, ti = lane % 4u;
    const uint32_t wrows = g.bm / g.wm;
#pragma unroll
    for (uint32_t q = 0; q < g.bn / g.wn / 32u; q++) {
        bc_syncwarp(); /* the previous chunk's reads are done */
#pragma unroll
        for (uint32_t mt = 0; mt < SM80_MT(g); mt++)
#pragma unroll
            for (uint32_t jj = 0; jj < 4u; jj++)
#pragma unroll
                for (uint32_t h = 0; h < 2u; h++) {
                    const uint32_t r = 16u * mt + gi + 8u * h;
                    const uint32_t chunk = 2u * jj + ti / 2u;
                    const uint32_t off = r * 128u + ((chunk ^ (r % 8u)) << 4) + (ti % 2u) * 8u;
                    const float *c4 = &acc[(mt * SM80_NT(g) + 4u * q + jj) * 4u + 2u * h];
                    const bc_f32x2v v = {e->alpha * c4[0], e->alpha * c4[1]};
                    *(bc_f32x2v __attribute__((address_space(3))) *)(bc_sm80_smem + buf + off) = v;
                }
        bc_syncwarp();
#pragma unroll 4
        for (uint32_t it = 0; it < wrows / 4u; it++) {
            const uint32_t r = 4u * it + lane / 8u, c = lane % 8u;
            const bc_f32x4v v =
                *(const bc_f32x4v __attribute__((address_space(3))) *)(bc_sm80_smem + buf + r * 128u +
                                                                       ((c ^ (r % 8u)) << 4));
            const float f[4] = {v.x, v.y, v.z, v.w};
            bc_epi_store4(e, row0 + r, col0 + 32u * q + 4u * c, f, out_t);
        }
    }
}

/* K sliced in the CTA: the second set of warps hands its accumulators to
 * the first through shared memory (after the main loop, so the ring is
 * idle), behind the epilogue buffers; one word per lane per accumulator,
 * consecutive lanes in consecutive words. The first set adds them to its
 * own (its sum first), and only it runs the epilogue. */
#define SM80_RED_OFF(g) ((g).bm * (g).wn * 128u)
BC_DEVICE void sm80_slice_reduce(sm80_shape g, float *acc, uint32_t warp_in, uint32_t slice)
{
    const uint32_t lane = bc_tid_x() % 32u, nacc = SM80_MT(g) * SM80_NT(g) * 4u;
    typedef __attribute__((address_space(3))) float smem_f32;
    smem_f32 *red = (smem_f32 *)(bc_sm80_smem + SM80_RED_OFF(g)) + warp_in * nacc * 32u + lane;
    if (slice == 1u)
#pragma unroll
        for (uint32_t i = 0; i < nacc; i++)
            red[i * 32u] = acc[i];
    bc_syncthreads();
    if (slice == 0)
#pragma unroll
        for (uint32_t i = 0; i < nacc; i++)
            acc[i] = acc[i] + red[i * 32u];
}

BC_DEVICE void sm80_gemm(sm80_shape g, const sm80_args *p, const bc_epi *e, int f16, int out_t)
{
    const uint32_t base = (uint32_t)(uintptr_t)bc_sm80_smem;
    const bc_tile tile = bc_tile_of(bc_ctaid_x(), p->tiles_m, p->tiles_n, p->group_m);
    const uint32_t m0 = tile.m * g.bm, n0 = tile.n * g.bn;
    const uint32_t lane = bc_tid_x() % 32u;
    const uint32_t warp = bc_tid_x() / 32u % (g.wm * g.wn), slice = bc_tid_x() / 32u / (g.wm * g.wn);
    const uint32_t wm_i = warp / g.wn, wn_i = warp % g.wn;
    const uint32_t wm_off = wm_i * (g.bm / g.wm), wn_off = wn_i * (g.bn / g.wn);
    const sm80_lanes ln = {wm_off + lane % 16u, lane / 16u, wn_off + 8u * (lane / 16u) + lane % 8u,
                           (lane / 8u) % 2u};
    sm80_loader ld;
    sm80_loader_init(g, &ld, p, m0, n0);
    float acc[SM80_MAX_MT * SM80_MAX_NT * 4];
#pragma unroll
    for (uint32_t i = 0; i < SM80_MT(g) * SM80_NT(g) * 4u; i++)
        acc[i] = 0.0f;
#if BC_SM80_PDL
    /* the sm_90a build is launched with programmatic serialization: the
     * set-up above overlapped the previous kernel's tail; no global memory
     * is touched before this */
    bc_griddep_wait();
    bc_griddep_launch_dependents();
#endif
    if (f16)
        sm80_mainloop(g, acc, &ld, &ln, p, base, slice, 1);
    else
        sm80_mainloop(g, acc, &ld, &ln, p, base, slice, 0);
    if (g.ks == 2u) {
        sm80_slice_reduce(g, acc, warp, slice);
        if (slice != 0)
            return;
    }
    sm80_epilogue(g, acc, e, m0 + wm_off, n0 + wn_off, warp * (g.bm / g.wm) * 128u, out_t);
}

/* One kernel per configuration. The parameter is only read field by field
 * (its address is never taken), so it stays in parameter space. */
#define BC__SM80_KERNEL(name, bm, bn, bk, wm, wn, ks, stages)                                       \
    BC_KERNEL void name(bc_gemm_params p)                                                           \
    {                                                                                               \
        const sm80_shape g = {bm, bn, bk, wm, wn, ks, stages};                                      \
        const sm80_args q = {p.a, p.b, p.lda, p.ldb, p.m, p.n, p.k,                                 \
                             p.tiles_m, p.tiles_n, p.k_blocks, p.group_m};                          \
        bc_epi e = {p.d, p.c, p.bias, p.m, p.n, p.ldd, p.ldc, p.alpha, p.beta, p.flags, p.k};            \
        sm80_gemm(g, &q, &e, p.ab_type == 1, (int)p.d_type);                                        \
    }
#define BC_SM80_KERNEL(name, cfg) BC__APPLY(BC__SM80_KERNEL, name, cfg)

/* Each configuration: whole chunks per thread, even n8 tile counts (one
 * ldmatrix.x4 loads two), 32-column epilogue chunks, the epilogue's
 * per-warp buffers (BM x WN x 128 bytes in all) and, with K sliced, the
 * hand-over buffer behind them inside the ring, an even number of k16
 * steps per slice (the two fragment buffers alternate), and shared memory
 * within the smallest opt-in limit. */
#define BC__SM80_CHECKS(bm, bn, bk, wm, wn, ks, stages)                                                     \
    _Static_assert((bm) * (bk) / 8 % BC_SM80_THREADS(wm, wn, ks) == 0 &&                                     \
                       (bn) * (bk) / 8 % BC_SM80_THREADS(wm, wn, ks) == 0 &&                                 \
                       (bm) * (bk) / 8 / BC_SM80_THREADS(wm, wn, ks) <= 4 &&                                 \
                       (bn) * (bk) / 8 / BC_SM80_THREADS(wm, wn, ks) <= 4,                                   \
                   "cp.async chunks per thread");                                                            \
    _Static_assert((bm) / (wm) % 16 == 0 && (bm) / (wm) / 16 <= SM80_MAX_MT && (bn) / (wn) % 32 == 0 &&      \
                       (bn) / (wn) / 8 <= SM80_MAX_NT,                                                       \
                   "warp tile");                                                                             \
    _Static_assert(((bk) == 32 || (bk) == 64) && (stages) >= 2, "BK and stages");                            \
    _Static_assert(((ks) == 1 || (ks) == 2) && (bk) / 16 / (ks) % 2 == 0, "K slices");                       \
    _Static_assert((bm) * (wn) * 128 + ((ks) - 1) * (bm) * (bn) * 4 <= BC_SM80_SMEM_BYTES(bm, bn, bk, stages), \
                   "epilogue and hand-over buffers");                                                        \
    _Static_assert(BC_SM80_SMEM_BYTES(bm, bn, bk, stages) <= BC_SM80_SMEM_LIMIT, "over 99 KiB");
#define BC_SM80_CHECKS(cfg) BC__APPLY(BC__SM80_CHECKS, cfg)

BC_SM80_CHECKS(BC_SM80_CFG_128X256)
BC_SM80_CHECKS(BC_SM80_CFG_128X128)
BC_SM80_CHECKS(BC_SM80_CFG_64X64)
BC_SM80_CHECKS(BC_SM80_CFG_64X32)
BC_SM80_CHECKS(BC_SM80_CFG_32X32)

BC_SM80_KERNEL(bc_gemm_sm80_128x256, BC_SM80_CFG_128X256)
BC_SM80_KERNEL(bc_gemm_sm80_128x128, BC_SM80_CFG_128X128)
BC_SM80_KERNEL(bc_gemm_sm80_64x64, BC_SM80_CFG_64X64)
BC_SM80_KERNEL(bc_gemm_sm80_64x32, BC_SM80_CFG_64X32)
BC_SM80_KERNEL(bc_gemm_sm80_32x32, BC_SM80_CFG_32X32)
