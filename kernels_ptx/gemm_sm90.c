/* Hopper (sm_90a) GEMM: D = act(alpha * A . B^T + beta * C + bias).
 *
 * One kernel per configuration (gemm_abi.h, BC_SM90_CFG_*): CONS consumer
 * warpgroups of 64 rows each (BM = 64 * CONS), BN columns, BK = 64, a ring of
 * STAGES stages. Input type (bf16/f16) and output type (bf16/f16/f32) are
 * launch parameters: the main loop is compiled once per input type and the
 * branch between them is taken once per tile; the epilogue branches on the
 * output type once per chunk.
 *
 * Warpgroup 0 is the producer: one thread issues the TMA loads of A
 * (BM x 64) and B (BN x 64), 128-byte swizzled, into stage s, completing on
 * full[s]. Warpgroups 1..CONS are consumers: each runs wgmma m64nBNk16 over
 * its 64 rows of the stage, keeps one wgmma group in flight, and hands the
 * stage back on empty[s] (one arrival per consumer). Each output element is
 * reduced in a fixed order: results are bitwise reproducible.
 *
 * Whole-tile configurations (KS = 0): a persistent grid (tile_sched.h), one
 * CTA per tile in increasing K; the epilogue (epilogue_sm90.h) stages through
 * shared memory and leaves by TMA store when it can.
 *
 * Whole-tile plans may take their last tiles by stream-K (sk_sched.h): the
 * k-blocks of those tiles are shared out evenly over the grid's first
 * sk.ctas CTAs, and a tile done in pieces is finished by the last piece to
 * arrive, which adds the pieces' f32 partials (a workspace slot each) in
 * piece order before the epilogue.
 *
 * Split-K configurations (KS = 1): a cluster of S CTAs (the launch's cluster
 * size, 2..8) per tile, one cluster per tile (no persistence); CTA r reduces
 * its share of the k-blocks, and the cluster adds the S partials through
 * distributed shared memory in the order 0..S-1 (splitk.h).
 *
 * Launches are programmatically serialized: barrier set-up and descriptor
 * prefetch run while the previous kernel of the stream finishes, and every
 * thread waits for it (griddepcontrol.wait) before touching global memory.
 *
 * Edges: TMA zero-fills rows/columns of A and B outside the tensor, so a
 * partial tile's accumulators are exact; the epilogue clips at M and N.
 */
#include "epilogue_sm90.h"
#include "gemm_abi.h"
#include "ptx/cluster.h"
#include "ptx/fence.h"
#include "ptx/griddep.h"
#include "ptx/mbarrier.h"
#include "ptx/scoped.h"
#include "ptx/sreg.h"
#include "ptx/tma.h"
#include "ptx/wgmma.h"
#include "ring.h"
#include "sk_sched.h"
#include "splitk.h"
#include "tile_sched.h"

extern __attribute__((address_space(3))) __attribute__((aligned(1024))) uint8_t bc_sm90_smem[];

#define SM90_CONSUMER_REGS 232
#define SM90_PRODUCER_REGS 40
#define SM90_BAR_EPI0 2u      /* + c: consumer c's epilogue barrier */
/* A plan's dense A (BC_GEMM_F_DENSE_A) takes the bulk-copy path only
 * in the twins' dense-row kernels (compiled out of every other kernel, so
 * that their code and registers are what they were) */
#define SM90_DENSE(g, e) ((g).dn && ((e)->flags & BC_GEMM_F_DENSE_A))
/* The multicast twins (sm90_shape.mc): a cluster walks blocks of
 * SM90_MCM(g) x SM90_MCN(g) tiles, the CTA of rank rm + MCM * rn taking the
 * block's tile (rm, rn). Tiles of one block row share their A rows and
 * tiles of one block column their B rows: with MCM = 2 each CTA loads its
 * half of the shared B (bn / 2 rows) and multicasts it to its column's
 * CTAs; with MCN = 2 its half of the shared A (ar / 2 rows) to its row's.
 * So each shared row is asked of the L2 once a block. A stage is refilled
 * only when every CTA that its loads write has freed it: each consumer
 * arrives on its own CTA's empty barrier and on those of the CTAs that
 * share its row or column (sm90_free_stage). mc bit 0: MCM = 2 (pairs of
 * tile rows sharing B: the twins of 128x256 and 128x128); bit 1: MCN = 2
 * (tile columns sharing A); both: blocks of 2 x 2 tiles in clusters of
 * four (the twins of 128x64 and 64x32). */
#define SM90_MC(g) ((g).mc != 0)
#define SM90_MCM(g) (((g).mc & 1u) ? 2u : 1u)
#define SM90_MCN(g) (((g).mc & 2u) ? 2u : 1u)
/* Arrivals that free a stage: one per consumer; in the dense-row kernels one
 * per consumer thread, so that each thread that wrote the stage (its layout
 * of A) releases its own writes to the producer's next copy into it (the
 * ordering then holds thread by thread, as compute-sanitizer's racecheck
 * tracks it, not only through the consumer's barrier); in the multicast
 * twins those of the CTAs sharing a row or column too (sm90_free_stage) */
#define SM90_EMPTY_ARRIVALS(g)                                                                     \
    ((g).dn ? 128u * (g).cons : (SM90_MCM(g) + SM90_MCN(g) - 1u) * (g).cons)

typedef struct sm90_sched {
    uint32_t tiles_m, tiles_n, k_blocks, group_m;
    bc_sk sk;       /* stream-K over the last tiles (sk_sched.h); sk.ctas 0: none */
    uint64_t sk_ws; /* its workspace: the slots, then a counter per tile and consumer */
    bc_raster rs;   /* the walk's divisors (the host's bc_raster_of, for the tiles or a twin's blocks) */
} sm90_sched;

/* The compile-time shape of a configuration. */
typedef struct sm90_shape {
    uint32_t cons, bn, stages, ks, ar;
    uint32_t dn; /* the short-K twins' dense-row kernels (BC_GEMM_F_DENSE_A; see sm90_dense_layout) */
    uint32_t sk; /* the stream-K kernels (a whole-tile configuration's twin in the optional group) */
    uint32_t mc; /* the multicast twin of a whole-tile configuration (SM90_MC) */
} sm90_shape;

/* Shared-memory map, from the 1024-byte aligned base: the stages, the
 * staging buffers (2 per consumer), then the full[] and empty[] barriers. A
 * split-K CTA reuses the stages for its partial once its loads are done. */
BC_DEVICE uint32_t sm90_stage(sm90_shape g, uint32_t base, uint32_t s)
{
    return bc_ring_addr(base, s, BC_SM90_STAGE_BYTES(g.ar, g.bn));
}
BC_DEVICE uint32_t sm90_epi_buf(sm90_shape g, uint32_t base, uint32_t c)
{
    return sm90_stage(g, base, g.stages) + c * 2u * BC_SM90_EPI_BUF_BYTES;
}
BC_DEVICE uint32_t sm90_full(sm90_shape g, uint32_t base, uint32_t s)
{
    return sm90_epi_buf(g, base, g.cons) + 8u * s;
}
BC_DEVICE uint32_t sm90_empty(sm90_shape g, uint32_t base, uint32_t s)
{
    return sm90_epi_buf(g, base, g.cons) + 8u * (g.stages + s);
}

/* One of the SM90_EMPTY_ARRIVALS that free stage s: on this CTA's barrier,
 * and in a multicast twin on those of the CTAs whose loads write this
 * CTA's copy of the stage (its block column's peer, which multicasts B
 * here, and its block row's, which multicasts A). */
BC_DEVICE void sm90_free_stage(sm90_shape g, uint32_t base, uint32_t s)
{
    bc_mbar_arrive(sm90_empty(g, base, s));
    if (SM90_MCM(g) > 1u)
        bc_mbar_arrive_cluster(sm90_empty(g, base, s), bc_cluster_ctarank() ^ 1u);
    if (SM90_MCN(g) > 1u)
        bc_mbar_arrive_cluster(sm90_empty(g, base, s), bc_cluster_ctarank() ^ SM90_MCM(g));
}

/* A multicast twin's blocks of tiles down M and across N (a block's second
 * row or column may lie past the grid). */
BC_DEVICE uint32_t sm90_blocks_m(sm90_shape g, const sm90_sched *sc)
{
    return (sc->tiles_m + SM90_MCM(g) - 1u) / SM90_MCM(g);
}
BC_DEVICE uint32_t sm90_blocks_n(sm90_shape g, const sm90_sched *sc)
{
    return (sc->tiles_n + SM90_MCN(g) - 1u) / SM90_MCN(g);
}

/* The CTA's walk over work: whole-tile kernels take tiles b, b + G, ...;
 * a split-K cluster takes the one tile of its cluster index; a multicast
 * cluster walks blocks from its cluster index (sm90_tile_at). */
BC_DEVICE uint32_t sm90_first(sm90_shape g) { return g.ks || SM90_MC(g) ? bc_clusterid_x() : bc_ctaid_x(); }
BC_DEVICE uint32_t sm90_stride(sm90_shape g, const sm90_sched *sc)
{
    if (SM90_MC(g))
        return bc_nctaid_x() / (SM90_MCM(g) * SM90_MCN(g));
    return g.ks ? sc->tiles_m * sc->tiles_n : bc_nctaid_x();
}
/* Walk index t's tile: the raster of tile_sched.h, or for a multicast twin
 * that raster over blocks of MCM x MCN tiles, the CTA's rank picking its
 * tile of the block; divided by multiplies (bc_tile_at, with the host's
 * divisors for the walk this kernel takes). */
BC_DEVICE bc_tile sm90_tile_at(sm90_shape g, const sm90_sched *sc, uint32_t t)
{
    if (!SM90_MC(g))
        return bc_tile_at(t, sc->tiles_m, sc->tiles_n, sc->group_m, &sc->rs);
    const uint32_t mm = SM90_MCM(g), mn = SM90_MCN(g);
    bc_tile p = bc_tile_at(t, sm90_blocks_m(g, sc), sm90_blocks_n(g, sc), bc_block_group(sc->group_m, mm), &sc->rs);
    if (mn == 1u) { /* pairs of tile rows: the rank is the row */
        p.m = 2u * p.m + bc_cluster_ctarank();
        return p;
    }
    const uint32_t r = bc_cluster_ctarank();
    p.m = mm * p.m + r % mm;
    p.n = 2u * p.n + r / mm;
    return p;
}

/* The k-blocks this CTA reduces for a tile: all of them, or its share
 * [kb*r/S, kb*(r+1)/S), never empty (the plan keeps S <= k-blocks). */
BC_DEVICE void sm90_k_range(sm90_shape g, const sm90_sched *sc, uint32_t *kb0, uint32_t *kb1)
{
    if (!g.ks) {
        *kb0 = 0, *kb1 = sc->k_blocks;
        return;
    }
    const uint32_t s = bc_cluster_nctarank(), r = bc_cluster_ctarank();
    *kb0 = sc->k_blocks * r / s;
    *kb1 = sc->k_blocks * (r + 1u) / s;
}

BC_DEVICE void sm90_advance(sm90_shape g, uint32_t *stage, uint32_t *phase)
{
    bc_ring_advance(stage, phase, g.stages);
}

/* The tile's C (BC_GEMM_F_C_SMEM), as the stages that follow its last
 * k-block: boxes of the D staging geometry (64 rows x `inner` bytes; box
 * b = consumer * chunks + chunk), `per` to a stage (epilogue_sm90.h,
 * bc_sm90_cbox). Boxes wholly outside M x N are not loaded (nobody reads
 * them); each stage expects exactly the bytes of the boxes it gets. The
 * consumers release these stages after their epilogue. esize: D's bytes. */
BC_DEVICE void sm90_produce_c(sm90_shape g, uint64_t tmap_c, const bc_epi *e, bc_tile tile, uint32_t esize,
                              uint32_t base, uint32_t *stage, uint32_t *phase)
{
    const uint32_t inner = bc_sm90_inner(g.bn, esize), cols = inner / esize, nq = g.bn / cols;
    const uint32_t box = 64u * inner, per = BC_SM90_STAGE_BYTES(g.ar, g.bn) / box, nbox = g.cons * nq;
    const uint32_t row0 = tile.m * 64u * g.cons, col0 = tile.n * g.bn;
    for (uint32_t b0 = 0; b0 < nbox; b0 += per) {
        bc_mbar_wait(sm90_empty(g, base, *stage), bc_ring_empty_parity(*phase));
        const uint32_t full = sm90_full(g, base, *stage), sa = sm90_stage(g, base, *stage);
        uint32_t bytes = 0;
        for (uint32_t b = b0; b < b0 + per && b < nbox; b++)
            if (row0 + 64u * (b / nq) < e->m && col0 + cols * (b % nq) < e->n)
                bytes += box;
        bc_mbar_arrive_expect_tx(full, bytes);
        for (uint32_t b = b0; b < b0 + per && b < nbox; b++) {
            const uint32_t r = row0 + 64u * (b / nq), c = col0 + cols * (b % nq);
            if (r < e->m && c < e->n)
                bc_tma_load_2d(sa + (b - b0) * box, tmap_c, (int32_t)c, (int32_t)r, full);
        }
        sm90_advance(g, stage, phase);
    }
}

/* The C stages a tile takes (see sm90_produce_c). */
BC_DEVICE uint32_t sm90_c_stages(sm90_shape g, uint32_t esize)
{
    const uint32_t inner = bc_sm90_inner(g.bn, esize), box = 64u * inner;
    const uint32_t per = BC_SM90_STAGE_BYTES(g.ar, g.bn) / box, nbox = g.cons * (g.bn * esize / inner);
    return (nbox + per - 1u) / per;
}

/* Short packed rows of A (BC_GEMM_F_DENSE_A, the short-K twins' dense-row
 * kernels only: K < 64 a multiple of 8, A's ld = K). Rows of K * 2 < 128
 * bytes lie several to a 128-byte line, and a tensor-map box asks the L2
 * for each row on its own: when the CTAs on one row of tiles ask for the
 * same few lines of A at once, those requests queue at the lines' L2
 * slices (measured: 132 CTAs loading the same 64 rows of K = 8 took 5x as
 * long as rows of 64, tools/device/tma_shortk_probe.cu). So the producer
 * copies each consumer's rows as they lie in memory (whole lines, one bulk
 * copy), and each consumer lays its rows out in place as the tensor map
 * would have: row r at r * 128 bytes, 16-byte chunk j at j ^ (r % 8), zero
 * past K and past M. The stage's bytes are the tensor map's, so the results
 * are bit for bit those of the tensor-map path. (B's rows are shared by
 * the few CTAs of a raster band at once, which the copy does not pay for:
 * B always comes through its tensor map.) */
BC_DEVICE uint32_t sm90_dense_rows(uint32_t first, uint32_t rows, uint32_t extent)
{
    return first >= extent ? 0u : extent - first < rows ? extent - first : rows;
}

/* The producer's copies of A's rows of one stage (from row ra0; one copy
 * per consumer's share): returns their bytes, and issues them when
 * `issue`. A's base is read from the kernel parameter where it is needed
 * (`params`: its generic address, tmap_a's), so that the producer's
 * registers need not hold it. */
BC_DEVICE uint32_t sm90_dense_copies(sm90_shape g, const bc_epi *e, uint64_t params, uint32_t sa, uint32_t ra0,
                                     uint32_t full, int issue)
{
    const uint32_t pa = g.ar / g.cons, row = e->k * 2u;
    uint32_t bytes = 0;
    for (uint32_t c = 0; c < g.cons; c++) {
        const uint32_t va = sm90_dense_rows(ra0 + c * 64u, pa, e->m);
        if (issue && va)
            bc_bulk_load(sa + c * pa * 128u,
                         bc_ld_u64(params + __builtin_offsetof(bc_gemm_params, a)) + (uint64_t)(ra0 + c * 64u) * row,
                         va * row, full);
        bytes += va * row;
    }
    return bytes;
}

/* Thread t128 of a consumer lays out `rows` packed rows (`valid` of them
 * read, K * 2 bytes each at `at`) in place, as 128-byte swizzled rows, zero
 * past K and past `valid`, 32 rows (two chunks a thread; 16 for 16 rows) at
 * a time from the last: a block's packed bytes are all read (the
 * consumer's barrier) before any of its rows is written, and the blocks
 * below it lie wholly below its rows (K * 2 <= 112 < 128), so its writes
 * never meet bytes still to be read. */
BC_DEVICE void sm90_dense_rows_layout(uint32_t at, uint32_t rows, uint32_t valid, uint32_t k, uint32_t t128,
                                      uint32_t bar)
{
    const uint32_t kc = k / 8u, j = t128 % 8u, blk = rows < 32u ? rows : 32u, per = blk / 16u;
    for (uint32_t r0 = rows; r0 >= blk; r0 -= blk) {
        bc_u32x4s v[2];
#pragma unroll
        for (uint32_t i = 0; i < 2; i++) {
            const uint32_t r = r0 - blk + 16u * i + t128 / 8u;
            v[i] = (bc_u32x4s){0, 0, 0, 0};
            if (i < per && r < valid && j < kc)
                v[i] = bc_ld_shared_v4b32(at + r * k * 2u + j * 16u);
        }
        bc_bar_sync(bar, 128);
#pragma unroll
        for (uint32_t i = 0; i < 2; i++) {
            const uint32_t r = r0 - blk + 16u * i + t128 / 8u;
            if (i < per)
                bc_st_shared_v4b32(at + r * 128u + ((j ^ (r % 8u)) << 4), v[i]);
        }
    }
}

/* Consumer c lays out its rows of the stage's A and makes the writes
 * visible to wgmma (the async proxy) before any of its threads issues one. */
BC_DEVICE void sm90_dense_layout(sm90_shape g, const bc_epi *e, uint32_t st, uint32_t ra0, uint32_t c, uint32_t t128,
                                 uint32_t bar)
{
    const uint32_t pa = g.ar / g.cons;
    sm90_dense_rows_layout(st + c * pa * 128u, pa, sm90_dense_rows(ra0 + c * 64u, pa, e->m), e->k, t128, bar);
    bc_fence_proxy_async_smem();
    bc_bar_sync(bar, 128);
}

/* The TMA loads of one tile into the ring from the ring position *stage /
 * *phase (advanced past them): its k-blocks [kb0, kb1), then its C when C
 * comes through the ring. The launched kernel's tile loop and the resident
 * kernel (resident_sm90.c) both call it. */
BC_DEVICE void sm90_produce_tile(sm90_shape g, uint64_t tmap_a, uint64_t tmap_b, uint64_t tmap_c, const bc_epi *e,
                                 bc_tile tile, uint32_t kb0, uint32_t kb1, uint32_t base, uint32_t esize,
                                 uint32_t *stage, uint32_t *phase)
{
    for (uint32_t kb = kb0; kb < kb1; kb++) {
        bc_mbar_wait(sm90_empty(g, base, *stage), bc_ring_empty_parity(*phase));
        const uint32_t full = sm90_full(g, base, *stage), sa = sm90_stage(g, base, *stage);
        const int32_t k0 = (int32_t)(kb * BC_SM90_BK);
        const uint32_t ra0 = tile.m * 64u * g.cons, rb0 = tile.n * g.bn;
        if (SM90_DENSE(g, e)) { /* one k-block: A by bulk copies, B by TMA */
            /* the consumers wrote this stage (their layout) before they freed it: order those writes
             * before the copies' (async-proxy) writes here as well */
            bc_fence_proxy_async_smem();
            bc_mbar_arrive_expect_tx(full, sm90_dense_copies(g, e, tmap_a, sa, ra0, full, 0) +
                                               BC_SM90_B_STAGE_BYTES(g.bn));
            sm90_dense_copies(g, e, tmap_a, sa, ra0, full, 1);
            bc_tma_load_2d(sa + BC_SM90_A_STAGE_BYTES(g.ar), tmap_b, k0, (int32_t)rb0, full);
            sm90_advance(g, stage, phase);
            continue;
        }
        bc_mbar_arrive_expect_tx(full, BC_SM90_STAGE_BYTES(g.ar, g.bn));
        if (SM90_MCN(g) > 1u) { /* this CTA's half of A, to both CTAs of its block row (ranks rm, rm + MCM) */
            const uint32_t mm = SM90_MCM(g), r = bc_cluster_ctarank(), rn = r / mm;
            bc_tma_load_2d_multicast(sa + rn * (g.ar / 2u) * 128u, tmap_a, k0, (int32_t)(ra0 + rn * (g.ar / 2u)),
                                     full, (1u | 1u << mm) << (r % mm));
        } else {
            bc_tma_load_2d(sa, tmap_a, k0, (int32_t)ra0, full);
        }
        if (SM90_MCM(g) > 1u) { /* this CTA's half of B, to both CTAs of its block column (ranks 2 rn, 2 rn + 1) */
            const uint32_t r = bc_cluster_ctarank(), rm = SM90_MCN(g) > 1u ? r % 2u : r;
            bc_tma_load_2d_multicast(sa + BC_SM90_A_STAGE_BYTES(g.ar) + rm * (g.bn / 2u) * 128u, tmap_b, k0,
                                     (int32_t)(rb0 + rm * (g.bn / 2u)), full, 3u << (r - rm));
        } else {
            bc_tma_load_2d(sa + BC_SM90_A_STAGE_BYTES(g.ar), tmap_b, k0, (int32_t)rb0, full);
        }
        sm90_advance(g, stage, phase);
    }
    if (e->flags & BC_GEMM_F_C_SMEM)
        sm90_produce_c(g, tmap_c, e, tile, esize, base, stage, phase);
}

/* Whether the kernel has the stream-K code: the stream-K twins of the
 * whole-tile kernels that walk long K (not 128x256: its consumers'
 * registers hold no more, ptxas spilled; nor the short-K twins, nor the
 * skinny tile). The twins are kernels of their own, in the optional group,
 * so that the whole-tile kernels' code stays what it was. */
BC_DEVICE int sm90_has_sk(sm90_shape g) { return g.sk != 0; }

/* The end of the walk over whole tiles: all of them, or those before
 * stream-K's; for a multicast twin, over blocks of tiles (a block's second
 * row or column may lie past M or N: its CTA still loads and multicasts its
 * halves, and its stores, all outside D, write nothing). */
BC_DEVICE uint32_t sm90_whole_end(sm90_shape g, const sm90_sched *sc)
{
    if (SM90_MC(g))
        return sm90_blocks_m(g, sc) * sm90_blocks_n(g, sc);
    return sm90_has_sk(g) && sc->sk.ctas ? sc->sk.first : sc->tiles_m * sc->tiles_n;
}

BC_DEVICE void sm90_producer(sm90_shape g, uint64_t tmap_a, uint64_t tmap_b, uint64_t tmap_c, const bc_epi *e,
                             const sm90_sched *sc, uint32_t base, uint32_t esize)
{
    const uint32_t tiles = sm90_whole_end(g, sc);
    uint32_t stage = 0, phase = 0, kb0, kb1;
    sm90_k_range(g, sc, &kb0, &kb1);
    for (uint32_t t = sm90_first(g); t < tiles; t += sm90_stride(g, sc))
        sm90_produce_tile(g, tmap_a, tmap_b, tmap_c, e, sm90_tile_at(g, sc, t), kb0,
                          kb1, base, esize, &stage, &phase);
    const uint32_t cta = bc_ctaid_x();
    if (!sm90_has_sk(g) || cta >= sc->sk.ctas)
        return;
    for (uint64_t u = bc_sk_lo(&sc->sk, cta), end = bc_sk_lo(&sc->sk, cta + 1u); u < end;) {
        const bc_sk_piece pc = bc_sk_piece_at(&sc->sk, cta, u, &u);
        sm90_produce_tile(g, tmap_a, tmap_b, tmap_c, e, sm90_tile_at(g, sc, sc->sk.first + pc.tile), pc.kb0,
                          pc.kb1, base, esize, &stage, &phase);
    }
}

/* The k-blocks [kb0, kb1) (kb0 < kb1) of one tile into acc; f16 a
 * compile-time constant. */
BC_DEVICE void sm90_mainloop(sm90_shape g, float *acc, uint32_t base, uint32_t c, uint32_t kb0, uint32_t kb1,
                             uint32_t *stage, uint32_t *phase, const int f16)
{
    const uint32_t t128 = bc_tid_x() % 128u;
    uint32_t prev = 0;
    for (uint32_t kb = kb0; kb < kb1; kb++) {
        bc_mbar_wait(sm90_full(g, base, *stage), bc_ring_full_parity(*phase));
        const uint32_t sa = sm90_stage(g, base, *stage) + c * (64u * 128u);
        const uint32_t sb = sm90_stage(g, base, *stage) + BC_SM90_A_STAGE_BYTES(g.ar);
        bc_wgmma_fence();
#pragma unroll
        for (uint32_t ks = 0; ks < BC_SM90_BK / 16; ks++)
            bc_wgmma_m64k16(g.bn, acc, bc_wgmma_desc_sw128(sa + 32u * ks), bc_wgmma_desc_sw128(sb + 32u * ks),
                            kb != kb0 || ks != 0, f16);
        bc_wgmma_commit();
        /* keep this k-block's group in flight; the previous one is done */
        bc_wgmma_wait(1);
        if (kb > kb0 && (g.dn || t128 == 0))
            sm90_free_stage(g, base, prev);
        prev = *stage;
        sm90_advance(g, stage, phase);
    }
    bc_wgmma_wait(0);
    if (g.dn || t128 == 0) /* SM90_EMPTY_ARRIVALS */
        sm90_free_stage(g, base, prev);
#pragma unroll
    for (uint32_t i = 0; i < g.bn / 2; i++)
        asm volatile("" : "+f"(acc[i])::"memory"); /* no accumulator read above the wait */
}

/* Split-K: once every main loop of the cluster is done (first barrier: the
 * stage rings are free), each consumer sends its accumulator rows to their
 * owners' slots; after the second barrier every slot is written and each CTA
 * finishes its own rows from its own shared memory. */
BC_DEVICE void sm90_split_finish(sm90_shape g, const bc_epi *e, const float *acc, uint32_t base, bc_tile tile,
                                 uint32_t c, int out_t)
{
    const uint32_t nthr = 128u * g.cons, tc = bc_tid_x() - BC_SM90_PRODUCER_THREADS;
    const uint32_t rank = bc_cluster_ctarank(), s = bc_cluster_nctarank();
    /* exchanged: the rows a stage holds (g.ar: the tile's, or the skinny tile's 16); the others are never
     * stored */
    bc_cluster_sync_divergent();
    bc_splitk_send(acc, g.ar, g.bn, base, rank, s, c, tc % 128u);
    bc_cluster_sync_divergent();
    bc_splitk_finish_rows(e, g.ar, g.bn, base, rank, s, tile.m * 64u * g.cons, tile.n * g.bn, tc, nthr, out_t);
}

/* A stream-K piece of a tile (sk_sched.h), for its finish. */
typedef struct sm90_skfin {
    const bc_sk *sk;
    uint64_t ws;
    uint32_t tile, piece, pieces;
} sm90_skfin;

/* Consumer c's finish of a stream-K piece (pieces > 1): its accumulators
 * into its slot as they lie (16 bytes a thread at a time, so that a warp's
 * stores and loads are contiguous; a slot holds the tile's consumers one
 * after the other), one arrival on the tile's counter for the consumer.
 * The last of the pieces to arrive resets the counter for the next launch,
 * adds the pieces in piece order from 0.0f into sum (its own from acc, the
 * others from their slots, all of a slot's loads in flight at once) and
 * returns 1: the epilogue then runs on sum. The others return 0. acc is
 * only read: wgmma keeps its registers to itself. */
BC_DEVICE uint32_t sm90_sk_finish(sm90_shape g, const sm90_skfin *f, const float *acc, float *sum, uint32_t c,
                                  uint32_t t128, uint32_t bar)
{
    const uint64_t slot_bytes = 64u * g.cons * g.bn * 4u, mine = 64u * g.bn * 4u * c + 16u * t128;
    const uint64_t ctr = f->ws + (uint64_t)BC_SK_SLOTS(f->sk->ctas) * slot_bytes + 4u * ((uint64_t)f->tile * g.cons + c);
    const uint64_t own = f->ws + (uint64_t)bc_sk_slot(f->sk, f->tile, f->piece) * slot_bytes + mine;
#pragma unroll
    for (uint32_t i = 0; i < g.bn / 8u; i++)
        bc_st_global_v4f32(own + 2048u * i, acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]);
    bc_bar_sync(bar, 128); /* every row of the partial written */
    uint32_t last = 0;
    if (t128 == 0) {
        last = bc_atom_add_acq_rel_gpu_u32(ctr, 1u) + 1u == f->pieces;
        if (last)
            bc_st_relaxed_gpu_u32(ctr, 0u);
    }
    if (!bc_bar_red_or(bar, 128, last))
        return 0;
#pragma unroll
    for (uint32_t i = 0; i < g.bn / 2u; i++)
        sum[i] = 0.0f;
    for (uint32_t p = 0; p < f->pieces; p++) {
        if (p == f->piece) {
#pragma unroll
            for (uint32_t i = 0; i < g.bn / 2u; i++)
                sum[i] += acc[i];
            continue;
        }
        const uint64_t src = f->ws + (uint64_t)bc_sk_slot(f->sk, f->tile, p) * slot_bytes + mine;
        bc_f32x4 x[16]; /* bn / 8 of them: bn <= 128 (BC__SM90_SK_OK) */
#pragma unroll
        for (uint32_t i = 0; i < g.bn / 8u; i++)
            x[i] = bc_ld_cg_v4f32(src + 2048u * i);
#pragma unroll
        for (uint32_t i = 0; i < g.bn / 8u; i++) {
            sum[4 * i] += x[i].x;
            sum[4 * i + 1] += x[i].y;
            sum[4 * i + 2] += x[i].z;
            sum[4 * i + 3] += x[i].w;
        }
    }
    return 1;
}

/* Waits for the tile's C stages (BC_GEMM_F_C_SMEM) and returns the ring
 * index of the first; the ring state then points past them. */
BC_DEVICE uint32_t sm90_acquire_c(sm90_shape g, uint32_t base, uint32_t esize, uint32_t *stage, uint32_t *phase)
{
    const uint32_t first = *stage, n = sm90_c_stages(g, esize);
    for (uint32_t i = 0; i < n; i++) {
        bc_mbar_wait(sm90_full(g, base, *stage), bc_ring_full_parity(*phase));
        sm90_advance(g, stage, phase);
    }
    return first;
}

/* After the epilogue: every thread of the consumer is done reading C, and
 * one arrives on each C stage's empty barrier. */
BC_DEVICE void sm90_release_c(sm90_shape g, uint32_t base, uint32_t esize, uint32_t first, const bc_sm90_epi_at *at)
{
    const uint32_t n = sm90_c_stages(g, esize);
    bc_bar_sync(at->bar, 128);
    if (g.dn || at->t128 == 0) /* SM90_EMPTY_ARRIVALS */
        for (uint32_t i = 0, s = first; i < n; i++, s = s + 1u == g.stages ? 0u : s + 1u)
            sm90_free_stage(g, base, s);
}

/* One tile for consumer c: its main loop over k-blocks [kb0, kb1) from the
 * ring position *stage / *phase, then its epilogue (whole tiles: through
 * `at`, whose staging-buffer count is *seq, with the tile's C stages taken
 * from the ring and given back around it; split-K: the cluster exchange; a
 * stream-K piece, `fin` non-null: its finish, and the epilogue if it was
 * the last). The launched kernel's tile loop and the resident kernel (fin
 * null) both call it. */
/* A C that the threads read (the thread path) is prefetched into L2 before
 * the main loop of a tile with at most this many k-blocks, after it
 * otherwise: a long main loop would evict the lines again (kernels_ptx/
 * PERF_NOTES.md, change 34). */
#define BC_SM90_CPF_KB 8u
BC_DEVICE void sm90_consume_tile(sm90_shape g, const bc_epi *e, float *acc, bc_sm90_epi_at *at, bc_tile tile,
                                 uint32_t kb0, uint32_t kb1, uint32_t base, uint32_t c, int f16, int out_t,
                                 uint32_t *stage, uint32_t *phase, uint32_t *seq, const sm90_skfin *fin)
{
    /* narrow tiles: the bias into registers now, its latency spent during the main loop; wider ones
     * (and the dense-row kernels, whose registers hold no more): into L1, loaded chunk by chunk in the
     * epilogue; a C that the threads read, into L2 (before or after the main loop: BC_SM90_CPF_KB).
     * The split-K finish reads the bias through the generic epilogue. */
    at->row0 = tile.m * 64u * g.cons + c * 64u;
    at->col0 = tile.n * g.bn;
    uint32_t bias_pre[16];
    const int pre = !g.ks && g.bn <= 64u && !g.dn;
    if (pre && out_t == BC_OUT_F32)
        bc_sm90_load_bias(e, g.bn, at->col0, at->t128, 4u, bias_pre);
    else if (pre)
        bc_sm90_load_bias(e, g.bn, at->col0, at->t128, 2u, bias_pre);
    else if (!g.ks)
        bc_sm90_prefetch_bias(e, g.bn, at->col0, at->t128, out_t);
    const int c_thr = !g.ks && (e->flags & (BC_GEMM_F_C | BC_GEMM_F_C_SMEM)) == BC_GEMM_F_C;
    if (c_thr && kb1 - kb0 <= BC_SM90_CPF_KB)
        bc_sm90_prefetch_c(e, g.bn, at->row0, at->col0, at->t128, out_t);
    if (SM90_DENSE(g, e)) { /* one k-block (dense A: K < 64) */
        bc_mbar_wait(sm90_full(g, base, *stage), bc_ring_full_parity(*phase));
        sm90_dense_layout(g, e, sm90_stage(g, base, *stage), tile.m * 64u * g.cons, c, at->t128, at->bar);
    }
    if (f16)
        sm90_mainloop(g, acc, base, c, kb0, kb1, stage, phase, 1);
    else
        sm90_mainloop(g, acc, base, c, kb0, kb1, stage, phase, 0);
    if (g.ks) {
        sm90_split_finish(g, e, acc, base, tile, c, out_t);
        return;
    }
    if (sm90_has_sk(g) && fin && fin->pieces > 1u) { /* a stream-K piece: C never comes through the ring */
        float sum[64]; /* the tile's sums, added by its last piece (has_sk: bn <= 128) */
        if (sm90_sk_finish(g, fin, acc, sum, c, at->t128, at->bar))
            bc_sm90_epilogue(e, sum, g.bn, out_t, at, seq, pre ? bias_pre : (const uint32_t *)0);
        return;
    }
    if (c_thr && kb1 - kb0 > BC_SM90_CPF_KB)
        bc_sm90_prefetch_c(e, g.bn, at->row0, at->col0, at->t128, out_t);
    const uint32_t esize = out_t == BC_OUT_F32 ? 4u : 2u;
    const int c_smem = (e->flags & BC_GEMM_F_C_SMEM) != 0;
    if (c_smem)
        at->cfirst = sm90_acquire_c(g, base, esize, stage, phase);
    bc_sm90_epilogue(e, acc, g.bn, out_t, at, seq, pre ? bias_pre : (const uint32_t *)0);
    if (c_smem)
        sm90_release_c(g, base, esize, at->cfirst, at);
}

BC_DEVICE void sm90_consumer(sm90_shape g, const sm90_sched *sc, const bc_epi *e, uint64_t tmap_d, uint32_t base,
                             uint32_t c, int f16, int out_t)
{
    const uint32_t tiles = sm90_whole_end(g, sc);
    const uint32_t t128 = bc_tid_x() % 128u;
    float acc[128];
    uint32_t stage = 0, phase = 0, seq = 0, kb0, kb1;
    sm90_k_range(g, sc, &kb0, &kb1);
    bc_sm90_epi_at at = {0, 0, sm90_epi_buf(g, base, c), SM90_BAR_EPI0 + c, t128, tmap_d,
                         c, sm90_stage(g, base, 0), 0, BC_SM90_STAGE_BYTES(g.ar, g.bn), g.stages};
    for (uint32_t t = sm90_first(g); t < tiles; t += sm90_stride(g, sc))
        sm90_consume_tile(g, e, acc, &at, sm90_tile_at(g, sc, t), kb0, kb1, base, c,
                          f16, out_t, &stage, &phase, &seq, (const sm90_skfin *)0);
    const uint32_t cta = bc_ctaid_x();
    if (sm90_has_sk(g) && cta < sc->sk.ctas)
        for (uint64_t u = bc_sk_lo(&sc->sk, cta), end = bc_sk_lo(&sc->sk, cta + 1u); u < end;) {
            const bc_sk_piece pc = bc_sk_piece_at(&sc->sk, cta, u, &u);
            const sm90_skfin fin = {&sc->sk, sc->sk_ws, pc.tile, pc.piece, pc.pieces};
            sm90_consume_tile(g, e, acc, &at, sm90_tile_at(g, sc, sc->sk.first + pc.tile), pc.kb0, pc.kb1, base,
                              c, f16, out_t, &stage, &phase, &seq, &fin);
        }
    if (t128 == 0)
        bc_bulk_wait_read_all(); /* the last TMA stores have read their staging buffers */
}

BC_DEVICE void sm90_gemm(sm90_shape g, uint64_t tmap_a, uint64_t tmap_b, uint64_t tmap_d, uint64_t tmap_c,
                         const sm90_sched *sc, const bc_epi *e, int f16, int out_t)
{
    const uint32_t base = (bc_smem_u32(bc_sm90_smem) + 1023u) & ~1023u;
    const uint32_t tid = bc_tid_x();
    if (tid < g.stages) { /* one thread per stage: the inits overlap */
        bc_mbar_init(sm90_full(g, base, tid), 1);
        bc_mbar_init(sm90_empty(g, base, tid), SM90_EMPTY_ARRIVALS(g));
        bc_mbar_fence_init();
    }
    if (tid == BC_SM90_PRODUCER_THREADS - 32u) { /* another warp: the prefetches overlap the inits */
        bc_tma_prefetch_desc(tmap_a);
        bc_tma_prefetch_desc(tmap_b);
        if (e->flags & BC_GEMM_F_TMA_STORE)
            bc_tma_prefetch_desc(tmap_d);
        if (e->flags & BC_GEMM_F_C_SMEM)
            bc_tma_prefetch_desc(tmap_c);
    }
    bc_syncthreads();
    if (SM90_MC(g)) /* the peers' barriers are initialised before anything arrives on them */
        bc_cluster_sync();
    /* launched with programmatic serialization: the set-up above overlapped
     * the previous kernel's tail; no global memory is touched before this */
    bc_griddep_wait();
    bc_griddep_launch_dependents();
    const uint32_t wg = tid / 128u;
    if (wg == 0) {
        bc_setmaxnreg_dec(SM90_PRODUCER_REGS);
        if (tid == 0)
            sm90_producer(g, tmap_a, tmap_b, tmap_c, e, sc, base, out_t == BC_OUT_F32 ? 4u : 2u);
        if (g.ks && sm90_first(g) < sc->tiles_m * sc->tiles_n) {
            /* the producer warpgroup takes part in the consumers' two cluster
             * barriers; its first warp reconverges first, so that the lanes
             * waiting there do not hold back the one issuing the loads */
            bc_syncwarp();
            bc_cluster_sync();
            bc_cluster_sync();
        }
    } else {
        if (g.stages <= BC_SM90_SHORT_K_STAGES && g.cons == 1u) /* the short-K twins launch with fewer registers */
            bc_setmaxnreg_inc(BC_SM90_SKINNY_SHORT_K_CONSUMER_REGS);
        else if (g.stages <= BC_SM90_SHORT_K_STAGES)
            bc_setmaxnreg_inc(BC_SM90_SHORT_K_CONSUMER_REGS);
        else
            bc_setmaxnreg_inc(SM90_CONSUMER_REGS);
        sm90_consumer(g, sc, e, tmap_d, base, wg - 1u, f16, out_t);
    }
    /* every wait and arrival is done: retire the barriers */
    bc_syncthreads();
    if (SM90_MC(g)) /* and the peers': their last multicasts and arrivals here are done */
        bc_cluster_sync();
    if (tid < g.stages) {
        bc_mbar_inval(sm90_full(g, base, tid));
        bc_mbar_inval(sm90_empty(g, base, tid));
    }
}
