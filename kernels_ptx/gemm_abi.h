/* The kernel-parameter ABI shared by the host (runtime/) and the device C
 * (kernels_ptx/). Each GEMM kernel takes exactly one parameter, a
 * bc_gemm_params by value; the host packs it at plan time and the launch
 * hands the driver a pointer to it. The tensor maps stay in parameter space
 * (the kernel takes their address with cvta.param), so the launch path never
 * touches global memory for descriptors.
 *
 * Both sides compile this with their own compiler: keep it to fixed-width
 * types and explicit alignment, and keep the static size checks below.
 */
#ifndef BC_KERNELS_GEMM_ABI_H
#define BC_KERNELS_GEMM_ABI_H

#include <stdint.h>

#include "tile_sched.h"

/* ---- sm_90a configurations. Each: one producer warpgroup (one thread
 * issues the TMA loads) and CONS consumer warpgroups; consumer c owns rows
 * 64c..64c+63 of the BM = 64*CONS row CTA tile and issues wgmma m64nBNk16
 * over a ring of STAGES 128-byte-swizzled stages of BK = 64. After the
 * stages: the epilogue's staging buffers (two of 8 KiB per consumer, each
 * 64 rows x 128 B, 128B/64B-swizzled for the TMA store), then the full[] and
 * empty[] mbarriers. Every configuration keeps ~192 KiB of stages. */
#define BC_SM90_BK 64
#define BC_SM90_PRODUCER_THREADS 128
#define BC_SM90_EPI_BUF_BYTES 8192
#define BC_SM90_A_STAGE_BYTES(ar) ((ar) * BC_SM90_BK * 2)
#define BC_SM90_B_STAGE_BYTES(bn) ((bn) * BC_SM90_BK * 2)
#define BC_SM90_STAGE_BYTES(ar, bn) (BC_SM90_A_STAGE_BYTES(ar) + BC_SM90_B_STAGE_BYTES(bn))
#define BC_SM90_THREADS(cons) (BC_SM90_PRODUCER_THREADS + 128 * (cons))
/* stages + staging + barriers (2 per stage) + slack to align the base to 1024 B */
#define BC_SM90_SMEM_BYTES(cons, bn, stages, ar) \
    ((stages) * BC_SM90_STAGE_BYTES(ar, bn) + (cons) * 2 * BC_SM90_EPI_BUF_BYTES + 2 * (stages) * 8 + 1024)

/* The compiled-in sm_90a configurations, "CONS, BN, STAGES, KS, AR" (BM =
 * 64*CONS; KS = 1: split-K over a cluster, the partials added through
 * distributed shared memory; AR: rows of A a stage holds, 64*CONS, or 16
 * for the skinny-M variant of 64x32 (M <= 16): its stages pack 16 rows of A
 * and BN rows of B, and wgmma's reads of A rows 16..63 land in whatever
 * follows (B, the next stage, the staging buffers) -- accumulator rows that
 * lie outside M and are never stored; its split-K variant exchanges only
 * those 16 rows). Use them through BC__APPLY so that
 * they expand to five arguments. */
#define BC_SM90_CFG_128X256 2, 256, 4, 0, 128
#define BC_SM90_CFG_128X256S 2, 256, 4, 1, 128
#define BC_SM90_CFG_128X128 2, 128, 6, 0, 128
#define BC_SM90_CFG_128X128S 2, 128, 6, 1, 128
#define BC_SM90_CFG_128X64 2, 64, 8, 0, 128
#define BC_SM90_CFG_64X32 1, 32, 16, 0, 64
/* The short-K twin of 128x64 that fits two CTAs on an SM: 3 stages, ~105
 * KiB of shared memory (two fit the SM's 228 KiB; a fourth stage would
 * not) and 80 registers a thread at launch (build.ninja's .maxnreg;
 * consumers 96 after setmaxnreg), so twice the epilogue warps hide each
 * other's latency. The third stage keeps a tile's loads in flight while
 * the one before holds its C, and carries three and four k-blocks
 * (kernels_ptx/PERF_NOTES.md, change 86). BC_SM90_SHORT_K_STAGES: the
 * short-K twins have at most this many stages, and no other configuration
 * has so few (gemm_sm90.c tells them apart by it). */
#define BC_SM90_CFG_128X64T 2, 64, 3, 0, 128
#define BC_SM90_SHORT_K_STAGES 3
#define BC_SM90_SHORT_K_LAUNCH_REGS 80
#define BC_SM90_SHORT_K_CONSUMER_REGS 96
/* ... and of the skinny 64x32m16 (one consumer warpgroup): four CTAs on an
 * SM, ~30 KiB each, 64 registers a thread at launch, consumers 88. */
#define BC_SM90_CFG_64X32M16T 1, 32, 2, 0, 16
#define BC_SM90_SKINNY_SHORT_K_LAUNCH_REGS 64
#define BC_SM90_SKINNY_SHORT_K_CONSUMER_REGS 88
/* ... and of the narrow 64x32 (64 A rows): the same warps and registers,
 * four CTAs on an SM, ~41 KiB each. */
#define BC_SM90_CFG_64X32T 1, 32, 2, 0, 64
#define BC_SM90_CFG_64X32S 1, 32, 16, 1, 64
#define BC_SM90_CFG_64X32M16 1, 32, 32, 0, 16
#define BC_SM90_CFG_64X32M16S 1, 32, 32, 1, 16
/* One tile row of 256 columns (M <= 64 in the rule): one consumer warpgroup, so
 * a k-block is half 128x256's wgmma work for the same B bytes, and its split-K twin. */
#define BC_SM90_CFG_64X256 1, 256, 5, 0, 64
#define BC_SM90_CFG_64X256S 1, 256, 5, 1, 64
#define BC__APPLY(f, ...) f(__VA_ARGS__)
#define BC__SM90_SMEM5(cons, bn, stages, ks, ar) BC_SM90_SMEM_BYTES(cons, bn, stages, ar)
#define BC__SM90_THREADS5(cons, bn, stages, ks, ar) BC_SM90_THREADS(cons)
#define BC_SM90_SMEM_OF(cfg) BC__APPLY(BC__SM90_SMEM5, cfg)
#define BC_SM90_THREADS_OF(cfg) BC__APPLY(BC__SM90_THREADS5, cfg)

/* ---- sm_100a configuration (assembled, never run here): tcgen05.mma
 * cta_group::1 kind::f16 128x256x16, 128x256x64 tile, 4-stage TMA ring with
 * 128-byte swizzle (same boxes as sm_90a), warp 0 TMA, warp 1 MMA (and TMEM
 * allocation), warps 2..5 epilogue. The accumulator lives in TMEM: all 512
 * columns = two 256-column f32 buffers, so the epilogue of one tile overlaps
 * the MMAs of the next. */
#define BC_SM100_BM 128
#define BC_SM100_BN 256
#define BC_SM100_BK 64
#define BC_SM100_STAGES 4
#define BC_SM100_THREADS 192 /* warp 0 TMA, warp 1 MMA, warps 2..5 epilogue */
#define BC_SM100_EPI_THREADS 128
#define BC_SM100_ACC_BUFS 2
#define BC_SM100_TMEM_COLS (BC_SM100_ACC_BUFS * BC_SM100_BN) /* 512 */
#define BC_SM100_A_STAGE_BYTES (BC_SM100_BM * BC_SM100_BK * 2)
#define BC_SM100_B_STAGE_BYTES (BC_SM100_BN * BC_SM100_BK * 2)
#define BC_SM100_STAGE_BYTES (BC_SM100_A_STAGE_BYTES + BC_SM100_B_STAGE_BYTES)
/* after the stages, 128 B: full[S], empty[S], tmem_full[2], tmem_empty[2]
 * mbarriers and the u32 TMEM address slot; + slack to align the base to 1024 B */
#define BC_SM100_BAR_BYTES 128
#define BC_SM100_SMEM_BYTES (BC_SM100_STAGES * BC_SM100_STAGE_BYTES + BC_SM100_BAR_BYTES + 1024)

/* ---- portable configurations (mma.sync m16n8k16 + ldmatrix + cp.async;
 * sm_80 and every later GPU, and built into the sm_90a image too). Each:
 * a BM x BN CTA tile, K in blocks of BK through a ring of STAGES
 * XOR-swizzled shared-memory stages filled by cp.async; WM x WN warps, each
 * owning a (BM/WM) x (BN/WN) piece of the tile; with KS = 2 the WM x WN
 * warps are there twice, each set taking half of every k-block's k16 steps
 * (K sliced inside the CTA: a small tile still keeps the SM's four tensor
 * units busy), and the second set's sums are added to the first's through
 * shared memory before the epilogue. The epilogue stages each warp's
 * accumulators through the (then idle) ring, 32 columns at a time.
 * Every configuration stays within 99 KiB of shared memory (the opt-in
 * limit of sm_86, sm_89 and sm_120), so one image serves every part.
 * "BM, BN, BK, WM, WN, KS, STAGES": */
#define BC_SM80_CFG_128X256 128, 256, 32, 2, 4, 1, 3
#define BC_SM80_CFG_128X128 128, 128, 32, 2, 2, 1, 4
#define BC_SM80_CFG_64X64 64, 64, 32, 2, 2, 1, 5
#define BC_SM80_CFG_64X32 64, 32, 64, 4, 1, 1, 8
#define BC_SM80_CFG_32X32 32, 32, 64, 2, 1, 2, 8
#define BC_SM80_SMEM_LIMIT 101376 /* 99 KiB */
#define BC_SM80_STAGE_BYTES(bm, bn, bk) (((bm) + (bn)) * (bk) * 2)
#define BC_SM80_SMEM_BYTES(bm, bn, bk, stages) ((stages) * BC_SM80_STAGE_BYTES(bm, bn, bk))
#define BC_SM80_THREADS(wm, wn, ks) (32 * (wm) * (wn) * (ks))
#define BC__SM80_SMEM7(bm, bn, bk, wm, wn, ks, stages) BC_SM80_SMEM_BYTES(bm, bn, bk, stages)
#define BC__SM80_THREADS7(bm, bn, bk, wm, wn, ks, stages) BC_SM80_THREADS(wm, wn, ks)
#define BC_SM80_SMEM_OF(cfg) BC__APPLY(BC__SM80_SMEM7, cfg)
#define BC_SM80_THREADS_OF(cfg) BC__APPLY(BC__SM80_THREADS7, cfg)

/* ---- sm_90a dot kernel (CUDA cores; kernels_ptx/gemm_dot.c): problems
 * whose smaller side (min(M, N)) has at most BC_DOT_MAX_Q rows, each output
 * one dot product of a row of A and a row of B down K. K is split over a
 * cluster of bc_gemm_params.split_k CTAs (1, 2, 4 or 8), the rows of the
 * larger side over the grid's tiles_m clusters in equal runs, a CTA's
 * outputs (its run x the smaller side) at most BC_DOT_MAX_OUT. Shared
 * memory: each warp's partial of every output of its CTA, then the CTA's. */
#define BC_DOT_THREADS 256
#define BC_DOT_WARPS (BC_DOT_THREADS / 32)
#define BC_DOT_MAX_OUT 64
#define BC_DOT_MAX_Q 8 /* min(M, N) */
#define BC_DOT_SMEM_BYTES ((BC_DOT_WARPS + 1) * BC_DOT_MAX_OUT * 4)

/* ---- sm_90a GEMV kernel (mma.sync; kernels_ptx/gemm_gemv.c): problems
 * whose smaller side has at most BC_GEMV_MAX_Q rows.
 * K is split over a cluster of split_k CTAs (1, 2, 4 or 8) in contiguous
 * slices of its 32-element steps; a CTA's 8 warps are kw K groups x 8 / kw
 * row groups; the larger side's rows go to the grid's tiles_m clusters
 * (tiles_n = 1) in runs of 8 * (8 / kw) * nt rows. The plan's grid tells
 * the run, and the kernel the run's shape from it: 8 rows (kw = 8, nt =
 * 1); 16 with every warp a K group (nt = 2: the smaller side has more than
 * 8 rows and the CTA BC_GEMV_KGROUPS(its steps) = 8); else 8 / kw row
 * groups of 8 (fewer K groups where the warps would have fewer than 8
 * steps each and the CTAs still fill the SMs). Shared memory: each K
 * group's partials of the CTA's outputs (at most 64 larger-side rows x 16),
 * then the CTA's sums. Its twin bc_gemm_sm90_gemv32 takes a smaller side of
 * up to BC_GEMV32_MAX_Q rows as two halves of 16 in each warp's mma, with
 * partials of 32 rows. */
#define BC_GEMV_THREADS 256
#define BC_GEMV_WARPS (BC_GEMV_THREADS / 32)
#define BC_GEMV_MAX_Q 16   /* min(M, N) */
#define BC_GEMV32_MAX_Q 32 /* ... of the twin */
#define BC_GEMV_STEP 32  /* elements of K a step */
/* the most K groups of a CTA's warps that give each at least 8 of its `steps` steps of K (at least 1) */
#define BC_GEMV_KGROUPS(steps) ((steps) >= 64u ? 8u : (steps) >= 32u ? 4u : (steps) >= 16u ? 2u : 1u)
#define BC_GEMV_MAX_COLS 64 /* larger-side rows a CTA: (8 / K groups) row groups x 8 or 16 */
/* K groups x their columns x q f32, at most */
#define BC_GEMV_PART_BYTES_OF(q) (BC_GEMV_WARPS * 8 * (q) * 4 * 2)
#define BC_GEMV_PART_BYTES BC_GEMV_PART_BYTES_OF(BC_GEMV_MAX_Q)
#define BC_GEMV_SMEM_BYTES (BC_GEMV_PART_BYTES + BC_GEMV_MAX_COLS * BC_GEMV_MAX_Q * 4)
#define BC_GEMV32_SMEM_BYTES (BC_GEMV_PART_BYTES_OF(BC_GEMV32_MAX_Q) + BC_GEMV_MAX_COLS * BC_GEMV32_MAX_Q * 4)

/* bc_gemm_params.flags */
#define BC_GEMM_F_C 1u         /* add beta * C */
#define BC_GEMM_F_BIAS 2u      /* add bias[n] */
#define BC_GEMM_F_RELU 4u      /* clamp at 0 */
#define BC_GEMM_F_TMA_STORE 8u /* sm_90a: D leaves through tmap_d (16-B row pitch and N; C via BC_GEMM_F_C_SMEM) */
#define BC_GEMM_F_C_SMEM 16u   /* sm_90a whole-tile: C arrives through the stage ring by TMA (tmap_c) */
/* sm_90a short-K twins' dense-row kernels, K < 64 and a multiple of 8 with A's rows packed (ld = K):
 * each consumer's rows of A arrive by one bulk copy as they lie in memory, and the consumer lays them
 * out as the tensor map would have (kernels_ptx/gemm_sm90.c, sm90_dense_layout) */
#define BC_GEMM_F_DENSE_A 32u

typedef struct bc_gemm_params {
    _Alignas(64) uint64_t tmap_a[16]; /* CUtensorMap of A: dims {K, M}, box {BK, BM} */
    _Alignas(64) uint64_t tmap_b[16]; /* CUtensorMap of B: dims {K, N}, box {BK, BN} */
    _Alignas(64) uint64_t tmap_d[16]; /* sm_90a with BC_GEMM_F_TMA_STORE: D, dims {N, M}, box {128 B, 64} */
    uint64_t d;                       /* D base (device address) */
    uint64_t c;                       /* C base, 0 when unused */
    uint64_t bias;                    /* bias base, 0 when unused */
    uint32_t m, n, k;
    uint32_t ldd, ldc;                /* elements */
    float alpha, beta;
    uint32_t flags;                   /* BC_GEMM_F_* */
    uint32_t ab_type, d_type;         /* bc_dtype: 0 bf16, 1 f16, 2 f32 (D, C, bias) */
    uint32_t tiles_m, tiles_n;        /* ceil(M/BM), ceil(N/BN) */
    uint32_t k_blocks;                /* ceil(K/BK) */
    uint32_t group_m;                 /* raster: bands of group_m tile rows */
    uint32_t split_k;                 /* CTAs per cluster sharing a tile's K (split-K kernels), else 1 */
    uint32_t lda, ldb;                /* elements (kernels that read A and B without tensor maps) */
    uint32_t sk_ctas;                 /* stream-K (sk_sched.h): CTAs sharing the last tiles' k-blocks, 0: none */
    uint64_t a, b;                    /* A and B bases (device addresses) */
    uint32_t sk_first, sk_tiles;      /* stream-K: the first such tile and their count */
    uint64_t sk_ws;                   /* stream-K workspace: BC_SK_SLOTS(sk_ctas) partial slots, then counters */
    _Alignas(64) uint64_t tmap_c[16]; /* sm_90a with BC_GEMM_F_C_SMEM: C, dims {N, M}, box {128 B, 64} */
    bc_raster raster;                 /* sm_90a: the divisors of the tile walk the kernel takes (tile_sched.h) */
} bc_gemm_params;

_Static_assert(sizeof(bc_gemm_params) == 704, "bc_gemm_params layout changed: update both sides");
_Static_assert(__builtin_offsetof(bc_gemm_params, raster) == 640, "raster offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, tmap_b) == 128, "tmap_b offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, tmap_d) == 256, "tmap_d offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, d) == 384, "d offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, tmap_c) == 512, "tmap_c offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, lda) == 468, "lda offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, ldb) == 472, "ldb offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, a) == 480, "a offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, b) == 488, "b offset");
_Static_assert(__builtin_offsetof(bc_gemm_params, sk_ws) == 504, "sk_ws offset");


/* Smoke kernel: out[i] = bc_smoke_value(i, seed) for i < n. */
typedef struct bc_smoke_params {
    uint64_t out; /* uint32_t[n] */
    uint32_t n;
    uint32_t seed;
} bc_smoke_params;

/* The known-answer function, shared so the host check and the kernel agree
 * on the definition (the host computes it on the CPU independently). */
static inline uint32_t bc_smoke_value(uint32_t i, uint32_t seed)
{
    uint32_t x = i * 0x9E3779B1u ^ seed;
    x ^= x >> 16;
    x *= 0x85EBCA6Bu;
    x ^= x >> 13;
    x *= 0xC2B2AE35u;
    x ^= x >> 16;
    return x;
}

/* Test-only kernel that spins until *flag != 0 (flag in mapped pinned host
 * memory) or max_ns of GPU time passed: the bounded-wait test's hung GPU. */
typedef struct bc_spin_params {
    uint64_t flag;   /* device-visible address of a uint32_t */
    uint64_t max_ns; /* safety net so a forgotten kernel ends eventually */
} bc_spin_params;

/* Test-only kernel that stores `value` (uint32_t) at `addr` from one thread:
 * given an address that is no memory of the context it faults the GPU on
 * demand (the sticky-fault tests); given a good one it just stores. */
typedef struct bc_fault_params {
    uint64_t addr;
    uint32_t value;
    uint32_t pad_;
} bc_fault_params;

#endif
