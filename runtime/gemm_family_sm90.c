/* The sm_90a family (wgmma, TMA, mbarrier; kernels_ptx/gemm_sm90.c): one
 * kernel per configuration, types are launch parameters. The weights are
 * each configuration's throughput on a full wave relative to 128x256
 * (README, "GEMM configurations"; measured, kernels_ptx/PERF_NOTES.md). */
#include "gemm_family.h"

/* The skinny split-K tile in the rule (kernels_ptx/PERF_NOTES.md, changes
 * 22 and 48): its exchange, cluster launch and finish cost 8 of its
 * k-blocks (fitted to the whole tile and 2-, 4- and 8-way splits forced on
 * 108 shapes of 1 to 256 tiles and K = 256-4096 on the H100: a split's
 * time was ~1.25 us over the whole tile's plus its share of the k-blocks
 * at ~0.15 us each; 4, fitted earlier on long K alone, split 1x2048x1024
 * and 16x256x512 into 30-40% slower plans), and a wave of its clusters
 * holds 75% of the SMs' worth of CTAs (clusters of 4 or 8 one-CTA-per-SM
 * CTAs must fit in one GPC each: 32 clusters of 4 ran as two waves).
 * Clusters of 8 past 43% of the SMs (7 of them, 56 CTAs, on 132) cost 5
 * k-blocks more: 8 and 10 of them each took ~0.8 us longer than 6 or 7
 * did, short of a second round (applied to the narrow split twin too,
 * whose clusters are also one CTA an SM). */
#define BC_SM90_SKINNY_SPLIT_COST_KB 8u
#define BC_SM90_SKINNY_WAVE_PCT 75u
#define BC_SM90_CLUSTER8_PCT 43u
#define BC_SM90_CLUSTER8_COST_KB 5u
/* The narrow tile's split-K twin (64x32s, one consumer warpgroup, 64 rows
 * exchanged): its exchange cost in k-blocks (fitted to forced-split timings
 * on the H100, PERF_NOTES.md change 40); its clusters are one-CTA-per-SM
 * like the skinny ones, so the same 75% wave. */
#define BC_SM90_NARROW_SPLIT_COST_KB 12u
/* The other split-K tiles' exchange (128x256s, 128x128s; their clusters
 * fill every SM), in k-blocks (measured). */
#define BC_SPLIT_COST_KB 24u

/* Rows of A or B off the 128-byte grid (a row pitch that is not a multiple
 * of 128 bytes: K not a multiple of 64 in packed 16-bit operands, most K)
 * slow every tile's TMA loads, and the 256-wide tile's least. Measured on
 * the H100 (each tile forced, K against the aligned K next to it per
 * k-block, 8 shapes of 512..12000 rows; kernels_ptx/PERF_NOTES.md,
 * change 59): pitches on 32-byte sectors but off the lines cost 128x256
 * 1.01-1.03x, 128x128 1.05x at 8 k-blocks and 1.22x at 32, 128x64
 * 1.16-1.20x, 64x32 1.01-1.15x; pitches off the sectors (K an odd multiple
 * of 8) 1.23-1.42x, 1.42-1.69x, 1.55-1.68x, 1.39-1.71x. So the rule credits
 * the 256-wide tiles (whole and split) with the difference against
 * 128x128, the tile it weighs them against: 17% off the sectors, and off
 * the lines 13% at 32 k-blocks and more, less in proportion below. */
#define BC_SM90_OFF_MIN_BN 256u
#define BC_SM90_OFF_LINE_PCT 13u
#define BC_SM90_OFF_SECTOR_PCT 17u
#define BC_SM90_OFF_FULL_KB 32u

/* What every entry shares: the tile, threads, shared memory, TMA, PDL, one
 * kernel for every type pair, the skinny-M range (stages of fewer A rows
 * than the tile's: M <= those rows), and the off-grid credit. */
#define SM90_COMMON(nm, id, w, cons, bn_, stages, ar)                                              \
    .name = "sm90_" nm, .bm = 64u * (cons), .bn = (bn_), .bk = BC_SM90_BK,                         \
    .threads = BC_SM90_THREADS(cons), .smem_bytes = BC_SM90_SMEM_BYTES(cons, bn_, stages, ar),     \
    .a_rows = (ar), .max_m = (ar) < 64u * (cons) ? (ar) : 0u, .weight_pct = (w), .tma = 1, .pdl = 1, \
    .off_line_pct = (bn_) >= BC_SM90_OFF_MIN_BN ? BC_SM90_OFF_LINE_PCT : 0u,                       \
    .off_sector_pct = (bn_) >= BC_SM90_OFF_MIN_BN ? BC_SM90_OFF_SECTOR_PCT : 0u,                   \
    .off_full_kb = BC_SM90_OFF_FULL_KB, .kernel = {{id, id, id}, {id, id, id}}
/* A whole tile (ks 0, persistent, TMA store) or its cluster split (ks 1). */
#define SM90_TILE(nm, id, w, cons, bn_, stages, ks, ar)                                            \
    SM90_COMMON(nm, id, w, cons, bn_, stages, ar), .tma_store = !(ks), .split = (ks),              \
        .persistent = !(ks), .split_cost_kb = BC_SPLIT_COST_KB
#define SM90_CONFIG(nm, id, w, cons, bn_, stages, ks, ar) {SM90_TILE(nm, id, w, cons, bn_, stages, ks, ar)}
/* What a whole-tile configuration with twins shares with SM90_CONFIG's
 * whole tiles; each twin macro below adds its kernels. */
#define SM90_WHOLE(nm, id, w, cons, bn_, stages, ar)                                               \
    SM90_COMMON(nm, id, w, cons, bn_, stages, ar), .tma_store = 1, .persistent = 1,                \
        .split_cost_kb = BC_SPLIT_COST_KB
/* The 256-wide whole tile down a short K: its weight is its main loop's
 * speed, and at a few k-blocks a tile is mostly its epilogue, which it runs
 * no faster per output than 128x128. Forced on the H100 against 128x128
 * (kernels_ptx/PERF_NOTES.md, change 78), on grids with rows on the
 * sectors where the rule took 128x256: at 3 and 4 k-blocks 128x128 took
 * 0.88-1.00 of its time on 13 of 13 (3544x6196x192 55.3 -> 49.1 us), at
 * 5-8 k-blocks 0.91-1.07, as often slower as faster. So up to
 * BC_SM90_WIDE_SHORT_KB k-blocks the rule adds BC_SM90_WIDE_SHORT_PCT % to
 * its cost, which puts it below 128x128's throughput (100 / 1.20 = 83
 * against 90) and leaves it rows off the sectors, whose credit (17%)
 * nearly cancels the surcharge. 20 grids drawn afterwards where the choice
 * moved took 0.932 of the time, all 20 faster. */
#define BC_SM90_WIDE_SHORT_KB 4u
#define BC_SM90_WIDE_SHORT_PCT 20u
/* Off the sectors, from the k-blocks where 128x128 runs its own pair twin
 * (BC_SM90_MC_MIN_KB), the two twins weigh differently from the plain
 * tiles the 17% credit was measured on. Forced on the H100 against each
 * other (kernels_ptx/PERF_NOTES.md, change 82), where the rule took
 * 128x128's twin by the cost model's 1.20 against 1.17: on the 15 grids
 * of at most 16 tile rows 128x256's twin took 0.77-1.02 of the time, 14
 * faster (314x15261x8136 286.3 -> 220.2 us; 351x11576x5416 152.8 -> 132.7
 * among 14 more of 3-7 rows, 12 faster), and on tall narrow grids (45
 * tile rows and more, N of 400-1,053) 0.94-1.21, losing on 5 of 8. So
 * there the wide whole tile's credit is BC_SM90_OFF_TWIN_PCT. 22 grids
 * drawn afterwards that it moves took 0.926 of the time, 3 slower (up to
 * 1.07x). */
#define BC_SM90_OFF_TWIN_PCT 25u
#define BC_SM90_OFF_TWIN_ROWS 16u
/* A whole-tile configuration with a multicast twin (kernels_ptx/gemm_sm90.c,
 * SM90_MC), which a plan takes where A's or B's rows are off the 32-byte
 * sectors (gemm_plan.c, takes_mc): the 256-wide tile, with its short-K
 * surcharge and its credit against 128x128's twin. */
#define SM90_CONFIG_MC(nm, id, mc_id, w, cons, bn_, stages, ks, ar)                                \
    {SM90_WHOLE(nm, id, w, cons, bn_, stages, ar), .kernel_mc = (mc_id), .mc_shape = 1u,           \
     .short_max_kb = BC_SM90_WIDE_SHORT_KB, .short_pct = BC_SM90_WIDE_SHORT_PCT,                   \
     .off_twin_pct = BC_SM90_OFF_TWIN_PCT, .off_twin_min_kb = BC_SM90_MC_MIN_KB,                   \
     .off_twin_rows = BC_SM90_OFF_TWIN_ROWS}
/* A whole-tile configuration with a stream-K twin (kernels_ptx/sk_sched.h):
 * the rule may take its last partial round by stream-K where the caller
 * allows it (bc_gemm_desc.stream_k; gemm_rule.c, bc__gemm_stream_k). */
#define SM90_CONFIG_SK(nm, id, sk_id, w, cons, bn_, stages, ks, ar)                                \
    {SM90_WHOLE(nm, id, w, cons, bn_, stages, ar), .kernel_sk = (sk_id)}
/* Both twins: stream-K where the caller allows it and the last round pays,
 * else the multicast twin where the rows are off the sectors (gemm_plan.c),
 * for K of at least BC_SM90_MC_MIN_KB k-blocks (on the sectors, from
 * BC_SM90_MC_ON_MIN_KB, below): 128x128's twin, on 24
 * shapes the rule gives 128x128 (H100, kernels_ptx/PERF_NOTES.md change
 * 63), ran at 0.71-0.92 of the time from 15 k-blocks up in one round or
 * more (0.99 at one), and lost 2-9% at 3-7 k-blocks in one round. */
#define BC_SM90_MC_MIN_KB 15u
/* 128x128's twin with A's and B's rows on the sectors, down a long K: forced
 * on the H100 against the whole tiles (PERF_NOTES.md, change 83), on 26
 * grids the rule gives 128x128 with rows on the sectors, it ran at
 * 0.83-1.01 of the time on all 15 of at least 64 k-blocks (3394x398x7904
 * 78.6 -> 65.0 us; rows off the 128-byte lines 0.83-1.00, on them
 * 0.85-1.01), and at 17-54 k-blocks as often slower as faster
 * (525x1314x3184 1.20x). A first check on 24 grids drawn afterwards and
 * 512x4096x4096: 0.943 of the time, but four slower, three with rows on
 * the lines (589x13816x6528 1.33x; 1.02-1.03x at 64 k-blocks,
 * 512x4096x4096 among them) and one on 3 tile rows (1.03x). So rows on
 * the sectors take it only off the lines (gemm_plan.c, takes_mc), from
 * BC_SM90_MC_ON_MIN_KB k-blocks, on an even number of tile rows or at
 * least 7. A second check, 22 grids drawn after that: 0.898 of the time,
 * 21 faster, one 1.015x slower. */
#define BC_SM90_MC_ON_MIN_KB 64u
#define SM90_CONFIG_SK_MC(nm, id, sk_id, mc_id, w, cons, bn_, stages, ks, ar)                      \
    {SM90_WHOLE(nm, id, w, cons, bn_, stages, ar), .kernel_sk = (sk_id), .kernel_mc = (mc_id),     \
     .mc_shape = 1u, .mc_min_kb = BC_SM90_MC_MIN_KB, .mc_on_min_kb = BC_SM90_MC_ON_MIN_KB}
/* Both twins, the multicast one in blocks of 2 x 2 tiles sharing A and B
 * (mc_shape 3; gemm_plan.c, takes_mc), where A's or B's rows are off the
 * 32-byte sectors, for K of at least BC_SM90_MC4_MIN_KB k-blocks: forced on
 * 26 shapes the rule gives 128x64 or 64x32 with at least two tile rows and
 * columns (H100, PERF_NOTES.md change 68), it ran at 0.70-0.86 of the time
 * from 30 k-blocks up (7 of 7; 832x837x3416 32.8 -> 23.0 us, 123x1478x6200
 * 29.0 -> 21.3), and at 3-20 k-blocks lost up to 27% (a cluster of four
 * starts later and walks its k-blocks in lockstep: 524x560x1248 6.76 ->
 * 7.77 us), off the sectors as well (135x489x840 4.91 -> 6.21). On rows
 * on the sectors it lost on 8 of 19 shapes (up to 1.31x), hence the
 * sectors' test. */
#define BC_SM90_MC4_MIN_KB 30u
#define SM90_CONFIG_SK_MC4(nm, id, sk_id, mc_id, w, cons, bn_, stages, ks, ar)                     \
    {SM90_WHOLE(nm, id, w, cons, bn_, stages, ar), .kernel_sk = (sk_id), .kernel_mc = (mc_id),     \
     .mc_shape = 3u, .mc_min_kb = BC_SM90_MC4_MIN_KB, .crowd_alt = BC_SM90_CROWD_ALT(cons, bn_),   \
     .crowd_min_kb = BC_SM90_CROWD_MIN_KB}
/* A single round of 128x64 tiles on more than half the SMs, where
 * 128x128's round would fill less than half, down at least
 * BC_SM90_CROWD_MIN_KB k-blocks with A's or B's rows off the 128-byte
 * lines, runs on 128x128 (gemm_rule.c, bc__gemm_crowded_alt), unless
 * 128x64's 2 x 2 twin takes it. The cost model prices a single round by its
 * tile's area whatever the SMs it leaves idle, which favours 128x64 by 4:3
 * there. Forced on the H100 (PERF_NOTES.md change 72): on 45 grids drawn
 * from a seed, 128x128 took 0.65-0.97 of 128x64's time on 20 of the 22 in
 * the class, and 128x64 won below half the SMs (1.19-1.69x on 17 grids of
 * 36-63 CTAs), at 16-21 k-blocks (up to 1.32x) and where 128x128 also
 * filled half the SMs or more (1.16-1.22x). A first check draw (40 grids)
 * took 0.914 of the time, but its seven grids with rows on the 128-byte
 * grid took 1.11 as a group (up to 1.40x; 256x4096x4096 1.20x), hence the
 * lines' test; a second draw after it (40 grids): 0.838, 38 faster, one
 * 1.039x slower. */
#define BC_SM90_CROWD_MIN_KB 24u
#define BC_SM90_CROWD_ALT(cons, bn_) ((cons) == 2u && (bn_) == 64u ? "sm90_128x128" : (const char *)0)
/* The short-K twin of 128x64 (two CTAs an SM, a 3-stage ring): the rule
 * takes it outright for K of at most 2 k-blocks (128) and M above the
 * skinny range, where the epilogue is most of a tile's time and twice its
 * warps per SM hide each other's latency (PERF_NOTES.md change 42: 1.2-1.4x
 * on K = 16..128; at 4 k-blocks, with 2 stages, it lost 5% to 128x256), when its tiles
 * number at least a quarter of the SMs (a few tiles run at a launch's
 * latency whatever the tile, and smaller tiles spread them wider:
 * 100x100x64, 2 tiles, 3.47 us against 2.70 on 64x32's 8). Left to the
 * skinny configurations below M = 17, so that an M <= 16 network keeps to
 * the kernels one resident executor runs. */
#define BC_SM90_SHORT_K_MAX_KB 2u
/* With its third stage (change 86) it also takes 3 and 4 k-blocks where
 * its tiles outnumber half the SMs and A's and B's rows lie on the 32-byte
 * sectors. Forced on 16 grids of M and N 1,000-16,384 at K 136-256 (H200),
 * it took 0.76-0.93 of the rule's time on all 9 with rows on the sectors
 * (the rule's 128x128; 4108x2152x192 15.6 -> 11.9 us); off the sectors it
 * lost 5 of 7 (up to 1.26x against 128x256's multicast twin). */
#define BC_SM90_SHORT_K_SECTOR_KB 4u
#define BC_SM90_SHORT_K_MIN_M 17u
#define BC_SM90_SHORT_K_SM_SHARE 4u
/* The skinny one's twin (64x32m16t, four CTAs an SM) takes the same K
 * range for M <= 16, ahead of the other skinny configurations, whatever
 * its tile count: its tile is 64x32m16's, so a few tiles gain nothing from
 * the whole-tile kernel, and its short ring starts and ends sooner
 * (PERF_NOTES.md change 47: 0.35-0.45 us less on every M <= 16, K <= 128
 * shape of 1 to 64 tiles measured). It runs resident in 64x32m16's kernel,
 * so a small-batch network keeps to one resident kernel. The narrow tile's
 * twin (64x32t, four CTAs an SM) likewise takes any number of tiles (no
 * tile is smaller), from M = 17, and meets 128x64t by the cost, ties going
 * to it (change 49: 4-20% under 64x32 and 128x64t on 108 shapes of M
 * 17-4000, K 8-128, except grids of more than a round of it). */
#define BC_SM90_SKINNY_SHORT_K_MIN_M 1u
/* The skinny twin also takes 3 and 4 k-blocks when its tiles outnumber
 * half the SMs: forced against 64x32m16 on 72 shapes of M 9-16 (H100,
 * PERF_NOTES.md change 57), at more than 66 tiles it ran 0.63-0.88 of the
 * time (C aliasing D 0.53-0.88), at 5-65 tiles 0.96-1.13; at 5-8
 * k-blocks it lost as often as it won (0.81-1.25), so no further. */
#define BC_SM90_SKINNY_SHORT_K_WIDE_KB 4u
/* D rows off 16 bytes (an odd N in bf16, say), which the epilogue copies
 * out with the threads' stores instead of TMA (kernels_ptx/epilogue_sm90.h):
 * a 128-byte row piece of 128x64t is two lines and two partial windows a
 * row, a 256-byte piece of 128x128 three lines and two windows, so the
 * wider tile asks the L2 for fewer writes a byte. Forced on 27 grids at
 * K = 8..112 (H100, PERF_NOTES.md change 77), 128x128 took 0.80-0.95 of
 * 128x64t's time on all 13 of 4,095 tiles of 128x64 or more (12112x14098x16
 * 391 -> 315 us, 14024x10633x16 356 -> 286), and lost on all 14 of
 * 3,605 or fewer (1.03-1.50x: the two CTAs an SM hide each other's latency
 * where the stores do not yet queue). So where the rule chooses 128x64t
 * for a 16-bit D off 16 bytes with a plain epilogue, on at least
 * BC_SM90_UD_MIN_ROUNDS rounds of its tiles, the plan runs 128x128
 * (gemm_rule.c, bc__gemm_unaligned_alt). A check draw after it (16 such
 * grids) took 0.917 of the time, 13 faster, 3 slower (up to 1.15x); the
 * same grids with a bias took 1.10 (128x128 loads its bias a chunk at a
 * time, 128x64t before its main loop), hence plain only. An f32 D (a
 * 256-byte row piece of 128x64t, 512 of 128x128) turns earlier: forced on
 * 29 grids at K = 8..120 (change 79), 128x128 took 0.91-1.01 of 128x64t's
 * time on all 20 of 1,372 tiles or more (15445x2453x40 129.2 -> 117.2 us),
 * and 0.92-1.27 on the 9 below (1014x2550x16 10.4 -> 13.2), so from
 * BC_SM90_UD_MIN_ROUNDS_F32 rounds; 14 grids drawn afterwards took 0.927
 * of the time, one 3% slower. Measured on packed rows (ldd = N); a padded
 * D whose pitch is on 16 bytes but whose N is not also copies out (a TMA
 * store would write past N) and takes these bounds, its rows' starts
 * aligned (one partial window a row, not two): not measured. */
#define BC_SM90_UD_MIN_ROUNDS 31u
#define BC_SM90_UD_MIN_ROUNDS_F32 10u
/* Since 128x128 and 128x256 stage a plain epilogue without its flag tests
 * (PERF_NOTES.md change 90), 128x128 also wins with D rows on 16 bytes
 * (the TMA store) on large grids of one or two k-blocks. Forced on the
 * H200 against 128x64t (35 grids drawn, seeds 20261129 and 20261130: M
 * and N 1,000-16,384, K 8-128, plain, D on 16 bytes: 27 bf16, 8 f32): where
 * 128x64t runs its whole-tile kernel, 128x128 took 0.75-0.95 of its time
 * on all 9 16-bit grids of 14 rounds of 128x64t's tiles or more
 * (5733x11768x72 105.4 -> 79.0 us, 10530x7824x56 79.4 -> 64.4,
 * 2605x5808x104 26.6 -> 21.9) and 0.88-1.02 on the 6 f32 ones (geometric
 * mean 0.947); it lost on 3 of the 4 16-bit grids at 6-10 rounds
 * (1318x8000x64, 10.4 rounds, 1.155x) and went both ways at 2-5
 * (0.77-1.08). Where the dense-row kernel runs, 128x128 lost at 5-22
 * rounds (up to 1.34x, 2098x9664x8) and won only at 29 and 40 (0.998,
 * 0.936), so those keep it (no f32 grid ran it). Hence from
 * BC_SM90_AD_MIN_ROUNDS rounds (1,848 tiles on 132 SMs), plain epilogue,
 * K within 2 k-blocks (3 and 4 were not measured) and from
 * BC_SM90_AD_MIN_K (the fit's 16-bit whole-tile grids from 14 rounds had
 * K of 48-104, its one f32 grid below, K = 16, won by 2%; a grid that
 * misses the dense-row kernel's test below 48, 12548x1184x16, lost 1.155x
 * in the first check draw), not where the plan takes the dense-row kernel (gemm_rule.c,
 * bc__gemm_aligned_alt), and with more than one tile column of 128x64t.
 * Checked on 16 grids drawn after the last of these (seed 20261132): 0.874
 * of the time, 15 faster, 7282x9520x64 1.179x slower. */
#define BC_SM90_AD_MIN_ROUNDS 14u
#define BC_SM90_AD_MIN_K 48u
#define BC_SM90_UD_ALT(cons, bn_) ((cons) == 2u && (bn_) == 64u ? "sm90_128x128" : (const char *)0)
#define SM90_SHORT_K_CONFIG(nm, id, dense, w, per_sm, min_m_, cons, bn_, stages, ks, ar)           \
    {                                                                                              \
        SM90_COMMON(nm, id, w, cons, bn_, stages, ar), .max_kb = BC_SM90_SHORT_K_MAX_KB,           \
        .wide_max_kb = (min_m_) <= 1u ? BC_SM90_SKINNY_SHORT_K_WIDE_KB                               \
                       : (cons) > 1u  ? BC_SM90_SHORT_K_SECTOR_KB                                    \
                                      : 0u,                                                          \
        .wide_on_sectors = (min_m_) > 1u && (cons) > 1u,                                           \
        .min_m = (min_m_), .sm_share = 64u * (cons) * (bn_) > 2048u ? BC_SM90_SHORT_K_SM_SHARE : 0u,  \
        .tma_store = 1, .persistent = 1, .ctas_per_sm = (per_sm), .kernel_dense = (dense),         \
        .dense_min_pct = (cons) > 1 ? BC_SM90_DENSE_MIN_PCT_2CONS : 0u,                            \
        .ud_alt = BC_SM90_UD_ALT(cons, bn_), .ud_min_rounds = BC_SM90_UD_MIN_ROUNDS,                \
        .ud_min_rounds_f32 = BC_SM90_UD_MIN_ROUNDS_F32, .ad_min_rounds = BC_SM90_AD_MIN_ROUNDS,    \
        .ad_min_k = BC_SM90_AD_MIN_K,                                                              \
    }
/* The two-consumer twin's dense-row kernel (128x64td) lost 2-14% where it
 * saves half of A's row requests or less (K = 32, 48, 56: rows of 64 B, or
 * rows of 96 and 112 B that cross a line half the time or more), won
 * 5-43% at K = 8, 16, 24 and 40 (PERF_NOTES.md change 50) */
#define BC_SM90_DENSE_MIN_PCT_2CONS 55u
/* A split-K tile of one consumer warpgroup (64x32s, 64x32m16s): its own
 * exchange cost and the share of the SMs a round of its clusters fills. */
#define SM90_SPLIT_CONFIG(nm, id, w, cost, wave, cons, bn_, stages, ks, ar)                        \
    {                                                                                              \
        SM90_COMMON(nm, id, w, cons, bn_, stages, ar), .split = 1, .split_cost_kb = (cost),        \
        .cluster_wave_pct = (wave), .cluster8_pct = BC_SM90_CLUSTER8_PCT,                          \
        .cluster8_cost_kb = BC_SM90_CLUSTER8_COST_KB,                                              \
    }
/* One tile row of 256 columns (64x256, one consumer warpgroup; 64x256s, K
 * split S ways over a cluster), walked by the rule only for M <= 64 from
 * BC_SM90_ROW_MIN_KB k-blocks, split at most BC_SM90_ROW_MAX_SPLIT ways,
 * with 128x256's weight and the wide split's exchange. With one tile row
 * down a long K the work is streaming B: 128x128 ran such grids at
 * 0.52-0.90 us a k-block, and 128x256 spends two consumers' wgmma on a
 * tile whose second 64 rows hold no output; 64x256 moves the same B bytes
 * a k-block with half 128x256's wgmma. Forced on the H200 (PERF_NOTES.md
 * change 85; 50 grids of M 17-64, N 1,037-16,384, K 560-15,840, 44 of them
 * drawn from seed 20261129): the 19 grids this rule moves ran in 0.61-0.94
 * of the rule's time before (56x10928x3088 37.2 -> 25.8 us, 22x8080x5560
 * 51.4 -> 32.8), none slower.
 * Its clusters of 4 hold one CTA an SM each and must fit in one GPC, as
 * the narrow and skinny splits' do: a round of them holds
 * BC_SM90_SKINNY_WAVE_PCT of the SMs (32 clusters of 4, 128 CTAs, took
 * 42.7 us against 32.8 split 2 ways on 64), and a split past one round is
 * not weighed. A check on 32 grids drawn afterwards where the rule moved
 * the plan (then from 8 k-blocks): 0.779 of the time, 28 faster, and the
 * four slower (1.04-1.16x) all at 8-14 k-blocks, where a tile is mostly
 * its epilogue and one consumer warpgroup writes 64 x 256 outputs; hence
 * 16. Splits of 8 were not measured. */
#define BC_SM90_ROW_MAX_M 64u
#define BC_SM90_ROW_MIN_KB 16u
#define BC_SM90_ROW_MAX_SPLIT 4u
#define SM90_ROW_CONFIG(nm, id, w, cons, bn_, stages, ks, ar)                                      \
    {                                                                                              \
        SM90_TILE(nm, id, w, cons, bn_, stages, ks, ar),                                           \
        .cluster_wave_pct = (ks) ? BC_SM90_SKINNY_WAVE_PCT : 0u, .rule_max_split = BC_SM90_ROW_MAX_SPLIT, \
        .rule_min_kb = BC_SM90_ROW_MIN_KB, .rule_max_m = BC_SM90_ROW_MAX_M,                         \
    }
/* The dot kernel (kernels_ptx/gemm_dot.c: CUDA cores, every output one dot
 * product down K, K split over a cluster, the larger side's rows over the
 * clusters): the rule takes it outright where the smaller side has at most
 * 8 rows, a CTA at most BC_DOT_MAX_OUT outputs and at most
 * BC_SM90_DOT_MAX_LOADS 16-byte loads, and K is beyond the short-K twins'
 * k-blocks (at K <= 128 the GEMV kernel was the faster on the one shape
 * measured for both, 15x7x24: PERF_NOTES.md change 93), except with
 * BC_SM90_DOT_CEDE_MIN_Q smaller-side rows or more and K up to
 * BC_SM90_DOT_CEDE_MAX_K; beyond those the GEMV kernel takes it. There a
 * tensor-core tile walks its k-loop for a few useful rows or columns at
 * ~240 ns a k-block. Against the tiles (PERF_NOTES.md change 52, 20 shapes
 * of 100-4096 outputs forced) the dot kernel won up to 11,264 loads a CTA
 * and lost from 16,128; against the GEMV kernel (change 87, the 32 of 154
 * skinny shapes, seed 20261129, that the dot kernel took, both forced on
 * the H200) it kept 18 and lost 17 of them (the GEMV kernel 1.05-1.70x
 * slower: few rows, few outputs, a long K; it won 3x616x800, 0.79), and
 * the GEMV kernel won all 14 past 5,120 loads or with 5+ rows up to K =
 * 2048 (0.70-0.91 of the time): each lane of the dot kernel loads every
 * smaller-side row's chunk, the GEMV kernel's mma takes 16 rows at once. */
#define BC_SM90_DOT_MIN_K (BC_SM90_SHORT_K_MAX_KB * BC_SM90_BK + 1u)
#define BC_SM90_DOT_MAX_LOADS 5120u
#define BC_SM90_DOT_CEDE_MIN_Q 5u
#define BC_SM90_DOT_CEDE_MAX_K 2048u
#define BC_K_DOT_ALL {BC_K_GEMM_SM90_DOT, BC_K_GEMM_SM90_DOT, BC_K_GEMM_SM90_DOT}
/* The GEMV kernel (kernels_ptx/gemm_gemv.c: mma.sync, the smaller side as
 * the mma's 16 rows, the larger side's rows read by 16-byte loads from
 * every lane): where the smaller side has at most 16 rows and the dot
 * kernel does not take the problem. The skinny 64x32 tile's TMA ring moves
 * a k-block in ~240 ns whatever its bytes (B's 4 KB at ~17 GB/s an SM);
 * plain loads keep more bytes in flight (PERF_NOTES.md change 87). */
#define BC_K_GEMV_ALL {BC_K_GEMM_SM90_GEMV, BC_K_GEMM_SM90_GEMV, BC_K_GEMM_SM90_GEMV}
/* Its 32-row twin (bc_gemm_sm90_gemv32: the smaller side as two halves of
 * 16 rows in each warp's mma, its own entry so that the 16-row kernel's
 * code stays as it was): the rule takes it for 17-32 rows where the larger
 * side has at most BC_GEMV32_RULE_MAX_ROWS rows and K is at most
 * BC_GEMV32_RULE_MAX_K. Fitted on 101 shapes of 17-32 rows on the H200,
 * the twin forced beside the tiles the rule took (PERF_NOTES.md change 99):
 * forced everywhere 0.845 of the tiles' time (geometric mean) but up to
 * 1.64x on a large operand (26x13176x2784) and 25 shapes slower by more
 * than 2%; within these bounds 0.822, the slowest 1.012x. Past them the
 * tiles' TMA ring streams the large operand as fast, and the twin's two
 * steps in flight a warp (four ran slower: change 99) fall behind on a
 * long K. */
#define BC_GEMV32_RULE_MAX_ROWS 4096u
#define BC_GEMV32_RULE_MAX_K 3072u
#define BC_K_GEMV32_ALL {BC_K_GEMM_SM90_GEMV32, BC_K_GEMM_SM90_GEMV32, BC_K_GEMM_SM90_GEMV32}
static const bc__gemm_config configs[] = {
    BC__APPLY(SM90_CONFIG_MC, "128x256", BC_K_GEMM_SM90_128X256, BC_K_GEMM_SM90_128X256M, 100, BC_SM90_CFG_128X256),
    BC__APPLY(SM90_CONFIG, "128x256s", BC_K_GEMM_SM90_128X256S, 100, BC_SM90_CFG_128X256S),
    BC__APPLY(SM90_CONFIG_SK_MC, "128x128", BC_K_GEMM_SM90_128X128, BC_K_GEMM_SM90_128X128K, BC_K_GEMM_SM90_128X128M,
              90, BC_SM90_CFG_128X128),
    BC__APPLY(SM90_CONFIG, "128x128s", BC_K_GEMM_SM90_128X128S, 90, BC_SM90_CFG_128X128S),
    BC__APPLY(SM90_CONFIG_SK_MC4, "128x64", BC_K_GEMM_SM90_128X64, BC_K_GEMM_SM90_128X64K, BC_K_GEMM_SM90_128X64M,
              60, BC_SM90_CFG_128X64),
    BC__APPLY(SM90_CONFIG_SK_MC4, "64x32", BC_K_GEMM_SM90_64X32, BC_K_GEMM_SM90_64X32K, BC_K_GEMM_SM90_64X32M, 30,
              BC_SM90_CFG_64X32),
    /* its split-K twin: M 17..64 (and beyond) with a few tiles down a long K */
    BC__APPLY(SM90_SPLIT_CONFIG, "64x32s", BC_K_GEMM_SM90_64X32S, 30, BC_SM90_NARROW_SPLIT_COST_KB,
              BC_SM90_SKINNY_WAVE_PCT, BC_SM90_CFG_64X32S),
    /* the narrow tile's short-K twin (four CTAs an SM), ahead of 128x64t so that it takes their ties */
    BC__APPLY(SM90_SHORT_K_CONFIG, "64x32t", BC_K_GEMM_SM90_64X32T, BC_K_GEMM_SM90_64X32TD, 30, 4,
              BC_SM90_SHORT_K_MIN_M, BC_SM90_CFG_64X32T),
    BC__APPLY(SM90_SHORT_K_CONFIG, "128x64t", BC_K_GEMM_SM90_128X64T, BC_K_GEMM_SM90_128X64TD, 60, 2,
              BC_SM90_SHORT_K_MIN_M, BC_SM90_CFG_128X64T),
    /* skinny M: the 64x32 tile with stages of 16 A rows (twice the B bytes in flight); within
     * M <= 16 the rule takes a skinny configuration outright and weighs this one against its
     * split-K twin below by the cost model (gemm_rule.c, rule_pick; PERF_NOTES.md) */
    BC__APPLY(SM90_CONFIG, "64x32m16", BC_K_GEMM_SM90_64X32M16, 30, BC_SM90_CFG_64X32M16),
    /* its split-K variant: a few CTAs down K for grids of a few tiles (a skinny tile's k-block is
     * latency-bound; its 16-row exchange is cheap, hence its own split cost) */
    BC__APPLY(SM90_SPLIT_CONFIG, "64x32m16s", BC_K_GEMM_SM90_64X32M16S, 30, BC_SM90_SKINNY_SPLIT_COST_KB,
              BC_SM90_SKINNY_WAVE_PCT, BC_SM90_CFG_64X32M16S),
    /* its short-K twin: four CTAs an SM for K of one or two k-blocks */
    BC__APPLY(SM90_SHORT_K_CONFIG, "64x32m16t", BC_K_GEMM_SM90_64X32M16T, BC_K_GEMM_SM90_64X32M16TD, 30, 4,
              BC_SM90_SKINNY_SHORT_K_MIN_M, BC_SM90_CFG_64X32M16T),
    /* one tile row of 256 columns (M <= 64), and its split-K twin */
    BC__APPLY(SM90_ROW_CONFIG, "64x256", BC_K_GEMM_SM90_64X256, 100, BC_SM90_CFG_64X256),
    BC__APPLY(SM90_ROW_CONFIG, "64x256s", BC_K_GEMM_SM90_64X256S, 100, BC_SM90_CFG_64X256S),
    /* a few rows or columns of outputs down K: one dot product an output (tile 1 x 1, K in 16-byte chunks) */
    {.name = "sm90_dot", .bm = 1, .bn = 1, .bk = 8, .threads = BC_DOT_THREADS, .smem_bytes = BC_DOT_SMEM_BYTES,
     .weight_pct = 30, .pdl = 1, .dot_max_out = BC_DOT_MAX_OUT, .dot_min_k = BC_SM90_DOT_MIN_K,
     .dot_max_loads = BC_SM90_DOT_MAX_LOADS, .dot_cede_min_q = BC_SM90_DOT_CEDE_MIN_Q,
     .dot_cede_max_k = BC_SM90_DOT_CEDE_MAX_K,
     .kernel = {BC_K_DOT_ALL, BC_K_DOT_ALL}},
    /* a batch of up to 16 rows against a wide operand: mma.sync fed by plain 16-byte loads (tile 1 x 1) */
    {.name = "sm90_gemv", .bm = 1, .bn = 1, .bk = 8, .threads = BC_GEMV_THREADS, .smem_bytes = BC_GEMV_SMEM_BYTES,
     .weight_pct = 30, .pdl = 1, .gemv_max_q = BC_GEMV_MAX_Q,
     .kernel = {BC_K_GEMV_ALL, BC_K_GEMV_ALL}},
    /* a batch of 17-32 rows: the same, two halves of 16 rows */
    {.name = "sm90_gemv32", .bm = 1, .bn = 1, .bk = 8, .threads = BC_GEMV_THREADS, .smem_bytes = BC_GEMV32_SMEM_BYTES,
     .weight_pct = 30, .pdl = 1, .gemv_max_q = BC_GEMV32_MAX_Q, .gemv_rule_min_q = BC_GEMV_MAX_Q + 1,
     .gemv_rule_max_rows = BC_GEMV32_RULE_MAX_ROWS, .gemv_rule_max_k = BC_GEMV32_RULE_MAX_K, .kernel = {BC_K_GEMV32_ALL, BC_K_GEMV32_ALL}},
};

static const bc__gemm_arch archs[] = {{9, 0, BC__ROLE_RULE}};

const bc__gemm_family bc__gemm_family_sm90 = {
    .name = "sm_90a wgmma",
    .configs = configs,
    .count = sizeof configs / sizeof configs[0],
    .archs = archs,
    .arch_count = sizeof archs / sizeof archs[0],
};
