/* GEMM plans: all validation, tensor-map encoding and launch packing happen
 * here (the configuration choice in gemm_rule.c), so that the launch is one
 * driver call. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gemm_internal.h"
#include "gemm_rule.h"

#define MAX_DIM 0x7FFFFFFFll
#define GROUP_M 8u /* tile raster band height (tile_sched.h); 4 and 16 measured no better */

bc_status bc_gemm_desc_default(bc_gemm_desc *out_desc)
{
    if (out_desc == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_gemm_desc_default", "out_desc is NULL");
    memset(out_desc, 0, sizeof *out_desc);
    out_desc->ab_type = BC_DTYPE_BF16;
    out_desc->d_type = BC_DTYPE_BF16;
    out_desc->alpha = 1.0f;
    return BC_OK;
}

/* Shape and types. */
static bc_status check_shape_types(const bc_gemm_desc *d)
{
    if (d->m < 1 || d->n < 1 || d->k < 1 || d->m > MAX_DIM || d->n > MAX_DIM || d->k > MAX_DIM)
        return BC_FAIL(BC_ERR_BAD_SHAPE, "shape", "M=%lld N=%lld K=%lld: each must be in [1, 2^31-1]",
                       (long long)d->m, (long long)d->n, (long long)d->k);
    if (d->ab_type != BC_DTYPE_BF16 && d->ab_type != BC_DTYPE_F16)
        return BC_FAIL(BC_ERR_UNSUPPORTED_TYPES, "ab_type",
                       "input type %d: A and B must be BC_DTYPE_BF16 or BC_DTYPE_F16", (int)d->ab_type);
    if (d->d_type != BC_DTYPE_BF16 && d->d_type != BC_DTYPE_F16 && d->d_type != BC_DTYPE_F32)
        return BC_FAIL(BC_ERR_UNSUPPORTED_TYPES, "d_type", "output type %d is not BF16, F16 or F32",
                       (int)d->d_type);
    if ((d->k * 2) % 16)
        return BC_FAIL(BC_ERR_K_ALIGNMENT, "K", "K=%lld: rows of A and B are %lld bytes, not a multiple of 16",
                       (long long)d->k, (long long)(d->k * 2));
    if (d->resident > 1)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "resident",
                       "resident=%u: 0 (any configuration) or 1 (those a resident executor runs)", d->resident);
    if (d->stream_k > 1)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "stream_k", "stream_k=%u: 0 (never) or 1 (where the rule finds it pays)",
                       d->stream_k);
    return BC_OK;
}


/* C arrives through the stage ring by TMA when the configuration can
 * (whole-tile kernels), the plan reads C, and C's rows are 16-byte
 * multiples (TMA's stride rule); otherwise the epilogue reads C itself. */
static int use_c_smem(const bc_gemm_desc *d, const bc__gemm_config *c)
{
    const uint64_t es = bc__dtype_bytes(d->d_type), inner = c->bn * es < 128 ? c->bn * es : 128;
    const uint64_t stage = (uint64_t)(c->a_rows + c->bn) * c->bk * 2; /* a C box (64 rows) must fit a stage */
    return c->tma_store && d->beta != 0.0f && ((uint64_t)d->ldc * es) % 16 == 0 && 64 * inner <= stage;
}

/* Short packed rows of A. When K is one partial k-block of whole 16-byte
 * chunks and A's rows are packed (ld = K), a tensor map asks the L2 for
 * each row of a box on its own (twice for a row that crosses a 128-byte
 * line), while the rows lie several to a line; the CTAs running at once on
 * the tiles of one row all ask for the same rows, and the requests queue
 * at those lines' L2 slices. A short-K twin's dense-row kernel copies A as
 * it lies (one bulk copy a consumer's rows: one request a line) and lays
 * it out in shared memory itself (kernels_ptx/gemm_sm90.c), which
 * lengthens every tile's chain by ~0.3 us; so a plan takes it when at least
 * BC_DENSE_MIN_CTAS CTAs share A's rows at once and the requests they save
 * together, CTAs x (requests a box - lines a box), are at least
 * BC_DENSE_MIN_SAVED and, per configuration, at least dense_min_pct % of
 * the box's requests (fitted on 58 shapes, PERF_NOTES.md change 50). CTAs
 * at once on a row: the grid's, over the rows of a raster band (GROUP_M
 * tile rows, walked down each band's rows first). B's rows are shared by
 * no more than a band's rows of CTAs at once: always its tensor map. */
#define BC_DENSE_MIN_CTAS 32u
#define BC_DENSE_MIN_SAVED 1500.0
static uint32_t dense_flags(const bc_gemm_desc *d, const bc__gemm_config *c, const bc_gemm_params *p,
                            uint32_t grid)
{
    if (c->kernel_dense == 0 || d->k >= c->bk || d->k % 8 != 0 || d->lda != d->k)
        return 0;
    const uint64_t band = p->tiles_m < p->group_m ? p->tiles_m : p->group_m, row_ctas = bc__ceil_div(grid, band);
    const uint64_t ctas = row_ctas < p->tiles_n ? row_ctas : p->tiles_n;
    const uint64_t rows = (uint64_t)d->m < c->a_rows ? (uint64_t)d->m : c->a_rows, rb = (uint64_t)d->k * 2u;
    uint64_t g = rb, h = 128; /* gcd(rb, 128): rows starting g bytes apart cross a line (rb - g) / 128 of the time */
    while (h) {
        const uint64_t t = g % h;
        g = h, h = t;
    }
    const double requests = (double)rows * (1.0 + (double)(rb - g) / 128.0);
    const double lines = (double)bc__ceil_div(rows * rb, 128);
    return ctas >= BC_DENSE_MIN_CTAS && (double)ctas * (requests - lines) >= BC_DENSE_MIN_SAVED &&
                   100.0 * (requests - lines) >= (double)c->dense_min_pct * requests
               ? BC_GEMM_F_DENSE_A
               : 0u;
}

/* The pair twins (kernels_ptx/gemm_sm90.c, SM90_MC; mc_shape 1, those of
 * 128x256 and 128x128): a cluster of two CTAs on tile rows 2p and 2p + 1
 * of a column, each loading half of their
 * shared B for both, so B's rows are asked of the L2 once a pair. Rows of A
 * or B off the 32-byte sectors (a pitch that is an odd multiple of 16
 * bytes: K an odd multiple of 8) are fetched in many small requests, and
 * there halving B's requests paid: on the H100 2048x2048x2040 38.6 -> 28.9
 * us, 4096x4096x4088 281 -> 206, 996x2586x16152 270 -> 185; 28 such
 * shapes at 0.84-0.87 of the time (geometric means). On rows on the
 * sectors it did not at 32 k-blocks (2048^3 26.3 -> 27.4, 2048x2048x2032
 * 26.3 -> 27.4; down a long K, off the 128-byte lines, 128x128's did:
 * BC_SM90_MC_ON_MIN_KB, change 83),
 * nor on a grid of 16 pairs (1000^3: 15.4 -> 16.3), where the pair's
 * lockstep costs more than the L2 saves: a plan takes it with at least
 * BC_MC_MIN_PAIRS_PCT % of the SMs' worth of pairs, and at least two tile
 * rows (with one, every pair's second CTA would only load its half of B:
 * no request saved). At 33 pairs it was
 * even (768x2816x3000), and one grid of 40 lost (300x5000x3000, 35.0 ->
 * 43.7 us; measured, not explained: 1024x2560x1000, also 40, gained 15%)
 * (kernels_ptx/PERF_NOTES.md, change 60). Nor where the pairs need more
 * rounds of the SMs than the tiles do (an odd number of tile rows: each
 * pair's second CTA on the last row computes nothing), which cost 128x128's
 * twin 1.05-1.59x (1584x1161x1192: 70 pairs on 66 clusters against 130
 * tiles on 132 SMs), nor for fewer k-blocks than the configuration's
 * mc_min_kb (change 63): takes_mc and mc_fits_rounds below. */
#define BC_MC_MIN_PAIRS_PCT 25u

/* With rows on the sectors, an odd number of tile rows leaves the last
 * pair's second CTA without a tile; below this many rows that idle share
 * (a quarter of the CTAs on 3 rows, a sixth on 5) cost more than the
 * pairs saved (change 83: 294x12190x4576 on 3 rows 1.03x; 525x1314x3184 on
 * 5 rows 1.20x, at 50 k-blocks; 797x1435x4176 on 7 rows 0.90). */
#define BC_MC_ON_MIN_ODD_ROWS 7u

/* A multicast twin's block of tiles (mc_shape: bit 0, two tile rows; bit
 * 1, two tile columns), its CTAs, and the blocks of a tiles_m x tiles_n
 * grid. */
static uint32_t mc_rows(uint32_t shape) { return (shape & 1u) ? 2u : 1u; }
static uint32_t mc_cols(uint32_t shape) { return (shape & 2u) ? 2u : 1u; }
static uint32_t mc_ctas(uint32_t shape) { return mc_rows(shape) * mc_cols(shape); }
static uint64_t mc_blocks(uint32_t shape, uint64_t tiles_m, uint64_t tiles_n)
{
    return bc__ceil_div(tiles_m, mc_rows(shape)) * bc__ceil_div(tiles_n, mc_cols(shape));
}

/* The twins that share A (mc_shape bit 1; those of 128x64 and 64x32 share
 * A and B in blocks of 2 x 2 tiles): for the narrow tiles down a long K
 * with rows off the sectors, whose rounds are held to the requests each SM
 * makes of the L2 (kernels_ptx/PERF_NOTES.md changes 61, 63, 64; a block
 * asks for half of each tile's A and B, and the cluster's multicast
 * delivers the rest). Forced on 56 shapes (change 68), from 30 k-blocks
 * (mc_min_kb) the twin ran at 0.60-0.98 of the time on 17 of 18 with rows
 * off the sectors (1.06 on the other), 0.70-0.94 on 9 of 12 off the
 * 128-byte lines but on the sectors (1.10-1.15 on 3), and lost on 5 of 7
 * on the lines (up to 1.31x: where the old kernel's requests are whole
 * lines, the cluster's lockstep costs more than the requests it saves).
 *
 * Whether a plan can take its configuration's multicast twin, the rounds
 * aside (mc_fits_rounds): rows off the sectors (or on them but off the
 * 128-byte lines, from the configuration's mc_on_min_kb k-blocks, on an
 * even number of tile rows or at least BC_MC_ON_MIN_ODD_ROWS: 128x128's
 * twin down a long K, gemm_family_sm90.c), the configuration's k-blocks,
 * and every shared operand with two tiles to share it; the pair twins also
 * want BC_MC_MIN_PAIRS_PCT % of the SMs' worth of pairs. */
static int takes_mc(const bc_gemm_desc *d, const bc__gemm_config *c, uint32_t sms)
{
    /* the twin's maps have half boxes: a configuration with a dense-row twin as well would need them
     * told apart first (a stream-K plan never takes it: bc_gemm_plan_create); and a cluster needs its SMs */
    const uint64_t kb = bc__ceil_div((uint64_t)d->k, c->bk);
    const int on_sectors = bc__gemm_rows_on(d, 32u);
    if (c->kernel_mc == 0 || c->kernel_dense != 0 || sms < mc_ctas(c->mc_shape) || d->split_k > 1 ||
        kb < c->mc_min_kb ||
        (on_sectors && (bc__gemm_rows_on(d, 128u) || c->mc_on_min_kb == 0 || kb < c->mc_on_min_kb)))
        return 0;
    const uint64_t rows = bc__ceil_div((uint64_t)d->m, c->bm), cols = bc__ceil_div((uint64_t)d->n, c->bn);
    if (rows < mc_rows(c->mc_shape) || cols < mc_cols(c->mc_shape) ||
        (on_sectors && rows % 2u == 1u && rows < BC_MC_ON_MIN_ODD_ROWS))
        return 0;
    return (c->mc_shape & 2u) || mc_blocks(c->mc_shape, rows, cols) * 100u >= (uint64_t)sms * BC_MC_MIN_PAIRS_PCT;
}

/* The twin's clusters need no more rounds of the device (round: the
 * clusters it holds at once) than the tiles do of its SMs: a block's
 * second row or column past M or N still takes its SM. */
static int mc_fits_rounds(const bc_gemm_desc *d, const bc__gemm_config *c, uint32_t sms, uint32_t round)
{
    const uint64_t rows = bc__ceil_div((uint64_t)d->m, c->bm), cols = bc__ceil_div((uint64_t)d->n, c->bn);
    return round > 0 && bc__ceil_div(mc_blocks(c->mc_shape, rows, cols), round) <= bc__ceil_div(rows * cols, sms);
}

/* The twin's clusters the device holds at once: pairs fill every SM (66 on
 * the H100); clusters of four must each fit in one GPC, which the driver
 * counts (cuOccupancyMaxActiveClusters: 30 on the H100's 132 SMs). */
static bc_status mc_round(bc_device *dev, const bc__gemm_config *c, uint32_t sms, uint32_t *out_round)
{
    const uint32_t cs = mc_ctas(c->mc_shape);
    if (cs <= 2u) {
        *out_round = sms / cs;
        return BC_OK;
    }
    CUlaunchAttribute a;
    memset(&a, 0, sizeof a);
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = cs;
    a.value.clusterDim.y = a.value.clusterDim.z = 1;
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = cs;
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = c->threads;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = c->smem_bytes;
    lc.attrs = &a;
    lc.numAttrs = 1;
    int n = 0;
    bc_status st = BC_CU(cuOccupancyMaxActiveClusters, &n, dev->image.fn[c->kernel_mc], &lc);
    if (st)
        return st;
    *out_round = n > 0 ? (uint32_t)n : 0u;
    return BC_OK;
}

/* D may leave through a TMA store when the configuration can, C (if read)
 * arrives through shared memory, and both D's pitch and its N columns are
 * 16-byte multiples. The TMA unit clips a store at N only to 16 bytes: on
 * the H200 a map of N = 7 bf16 columns wrote column 7 too, and one of 258
 * columns wrote up to column 263 (tools/device/tma_clip_probe.cu). A row
 * pitch past N (D a column slice of a wider matrix) must keep those bytes,
 * so such plans copy D out with the threads, which store exactly N. */
static int use_tma_store(const bc_gemm_desc *d, const bc__gemm_config *c)
{
    const uint64_t es = bc__dtype_bytes(d->d_type);
    return c->tma_store && (d->beta == 0.0f || use_c_smem(d, c)) && ((uint64_t)d->ldd * es) % 16 == 0 &&
           ((uint64_t)d->n * es) % 16 == 0;
}

/* D's (and C's) box: 64 rows (one consumer) by at most 128 bytes of a tile
 * row, the epilogue's staging geometry. */
static bc__tmap_desc out_map_desc(const char *what, bc_devptr base, int64_t ld, const bc_gemm_desc *d,
                                  const bc__gemm_config *c)
{
    const uint32_t es = (uint32_t)bc__dtype_bytes(d->d_type);
    const uint32_t inner = c->bn * es < 128 ? c->bn * es : 128;
    bc__tmap_desc t = {what, d->d_type, base, (uint64_t)d->n, (uint64_t)d->m, (uint64_t)ld * es, inner / es, 64, inner};
    return t;
}

/* A's and B's maps: boxes of the tile's a_rows and bn rows, or with a
 * multicast twin's shape (mc; each CTA of a cluster loading half of a
 * shared operand's rows) half that for the shared operand. */
static bc__tmap_desc a_map_desc(const bc_gemm_desc *d, const bc__gemm_config *c, uint32_t mc)
{
    const bc__tmap_desc ta = {"A", d->ab_type, d->a, (uint64_t)d->k, (uint64_t)d->m, (uint64_t)d->lda * 2,
                              c->bk, (mc & 2u) ? c->a_rows / 2u : c->a_rows, 128};
    return ta;
}
static bc__tmap_desc b_map_desc(const bc_gemm_desc *d, const bc__gemm_config *c, uint32_t mc)
{
    const bc__tmap_desc tb = {"B", d->ab_type, d->b, (uint64_t)d->k, (uint64_t)d->n, (uint64_t)d->ldb * 2,
                              c->bk, (mc & 1u) ? c->bn / 2u : c->bn, 128};
    return tb;
}

static bc_status encode_maps(bc_gemm_params *p, const bc_gemm_desc *d, const bc__gemm_config *c, uint32_t mc)
{
    if (!c->tma)
        return BC_OK; /* the kernel reads A and B through params.a/b */
    const bc__tmap_desc ta = a_map_desc(d, c, mc);
    const bc__tmap_desc tb = b_map_desc(d, c, mc);
    bc_status st = bc__tmap_encode(p->tmap_a, &ta);
    if (!st)
        st = bc__tmap_encode(p->tmap_b, &tb);
    if (!st && use_tma_store(d, c)) {
        const bc__tmap_desc td = out_map_desc("D", d->d, d->ldd, d, c);
        st = bc__tmap_encode(p->tmap_d, &td);
    }
    if (!st && use_c_smem(d, c)) {
        const bc__tmap_desc tc = out_map_desc("C", d->c, d->ldc, d, c);
        st = bc__tmap_encode(p->tmap_c, &tc);
    }
    return st;
}

/* The shape-dependent kernel parameters (everything but the tensor maps)
 * of `d`, the problem the kernel runs (the caller's, or its transpose). */
static void fill_params(bc_gemm_plan *pl, const bc_gemm_desc *d)
{
    const bc__gemm_config *c = pl->config;
    bc_gemm_params *p = &pl->params;
    p->d = d->d;
    p->c = d->beta != 0.0f ? d->c : 0;
    p->bias = d->bias;
    p->m = (uint32_t)d->m;
    p->n = (uint32_t)d->n;
    p->k = (uint32_t)d->k;
    p->ldd = (uint32_t)d->ldd;
    p->ldc = (uint32_t)d->ldc;
    p->alpha = d->alpha;
    p->beta = d->beta;
    p->flags = (d->beta != 0.0f ? BC_GEMM_F_C : 0) | (d->bias ? BC_GEMM_F_BIAS : 0) |
               (d->relu ? BC_GEMM_F_RELU : 0) | (use_tma_store(d, c) ? BC_GEMM_F_TMA_STORE : 0) |
               (use_c_smem(d, c) ? BC_GEMM_F_C_SMEM : 0);
    p->a = d->a;
    p->b = d->b;
    p->lda = (uint32_t)d->lda;
    p->ldb = (uint32_t)d->ldb;
    p->ab_type = (uint32_t)d->ab_type;
    p->d_type = (uint32_t)d->d_type;
    p->tiles_m = bc__ceil_div((uint64_t)d->m, c->bm);
    p->tiles_n = bc__ceil_div((uint64_t)d->n, c->bn);
    p->k_blocks = bc__ceil_div((uint64_t)d->k, c->bk);
    p->group_m = GROUP_M;
    p->split_k = 1;
}


/* Persistent whole-tile kernels: a grid of one CTA per tile, at most one
 * per SM (the kernels' shared memory allows one CTA per SM). The others:
 * one cluster of split_k CTAs per tile (split-K kernels, and the dot
 * kernel, whose tiles are its clusters), a cluster of 1 being one CTA
 * (portable kernels), as many resident per SM as fit. */
static uint32_t launch_grid(const bc__gemm_config *c, const bc_gemm_params *p, uint32_t sm_count, uint32_t mc,
                            uint32_t round)
{
    const uint32_t tiles = p->tiles_m * p->tiles_n;
    const uint32_t slots = sm_count * (c->ctas_per_sm ? c->ctas_per_sm : 1u);
    if (p->sk_ctas) /* stream-K: every slot, the first sk_ctas sharing the last tiles */
        return slots;
    if (mc) { /* a multicast twin: clusters walking blocks of tiles, at most a round of them */
        const uint64_t blocks = mc_blocks(mc, p->tiles_m, p->tiles_n);
        return mc_ctas(mc) * (uint32_t)(blocks < round ? blocks : round);
    }
    return !c->persistent ? tiles * p->split_k : tiles < slots ? tiles : slots;
}

/* Stream-K (sk_sched.h): the workspace, its slots and then one counter per
 * tile and consumer warpgroup (zeroed here: each launch leaves them zero),
 * from the device arena; the parameters; C read by the epilogue's threads
 * (the ring's C stages belong to whole tiles). */
static bc_status take_stream_k(bc_gemm_plan *pl, const bc_sk *sk)
{
    const bc__gemm_config *c = pl->config;
    const uint64_t slots = (uint64_t)BC_SK_SLOTS(sk->ctas) * c->bm * c->bn * 4u;
    const size_t ctr_bytes = (size_t)sk->tiles * (c->bm / 64u) * 4u;
    uint32_t *zero = calloc(ctr_bytes, 1);
    if (zero == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate %zu bytes of stream-K counters", ctr_bytes);
    bc_devptr ws = 0;
    bc_status st = bc_mem_alloc(pl->dev, (size_t)slots + ctr_bytes, &ws);
    if (st == BC_ERR_POOL_EXHAUSTED || st == BC_ERR_BAD_SIZE) {
        st = BC_FAIL(st, "stream_k",
                     "the stream-K workspace (%llu bytes) does not fit the device arena; stream_k = 0 needs none",
                     (unsigned long long)(slots + ctr_bytes));
        goto out;
    }
    if (st) /* bc_mem_alloc's own error (a full block table, a lost device) stands */
        goto out;
    st = bc_memcpy_htod(pl->dev, ws + slots, zero, ctr_bytes);
    if (st) {
        bc_mem_free(pl->dev, ws);
        goto out;
    }
    pl->sk_ws = ws;
    pl->params.sk_first = sk->first;
    pl->params.sk_tiles = sk->tiles;
    pl->params.sk_ctas = sk->ctas;
    pl->params.sk_ws = ws;
    pl->params.flags &= ~BC_GEMM_F_C_SMEM;
    pl->info.workspace_bytes = slots + ctr_bytes;
out:
    free(zero);
    return st;
}

/* Whether a plan of d on configuration c runs c's multicast twin: the
 * twin's conditions (takes_mc), its kernel loaded, and its blocks within
 * the rounds of the clusters the device holds, which the driver is asked
 * for only when the rest holds (*out_round; 0 when not asked). */
static bc_status mc_takes_plan(bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c, uint32_t sms,
                               int *out_takes, uint32_t *out_round)
{
    uint32_t round = 0;
    if (takes_mc(d, c, sms) && dev->image.fn[c->kernel_mc] != NULL) {
        const bc_status st = mc_round(dev, c, sms, &round);
        if (st)
            return st;
    }
    *out_takes = mc_fits_rounds(d, c, sms, round);
    *out_round = round;
    return BC_OK;
}

/* Whether the plan of d on c with params p runs c's dense-row kernel: its
 * test passes on p's grid and the kernel is loaded. */
static int dense_runs(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c, const bc_gemm_params *p)
{
    return dense_flags(d, c, p, launch_grid(c, p, (uint32_t)dev->info.sm_count, 0, 0)) != 0 &&
           dev->image.fn[c->kernel_dense] != NULL;
}

/* Whether the plan of d on c (whole tiles, the rule's raster) takes c's
 * dense-row kernel, before the plan is made. */
static int dense_takes(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c)
{
    bc_gemm_params p;
    memset(&p, 0, sizeof p);
    p.tiles_m = bc__ceil_div((uint64_t)d->m, c->bm);
    p.tiles_n = bc__ceil_div((uint64_t)d->n, c->bn);
    p.group_m = GROUP_M;
    p.split_k = 1;
    return dense_runs(dev, d, c, &p);
}

/* The rule's choice gives way to an alternative (the caller named no
 * configuration, left the split to the rule and did not make the plan for
 * a resident executor, which runs every tile plan of a network in one
 * kernel: the rule's choice keeps them together): its ud_alt where
 * bc__gemm_unaligned_alt (the plan would copy D out: D's pitch or N off
 * 16 bytes) or bc__gemm_aligned_alt (a TMA store, not on the dense-row
 * kernel) says so, else its crowd_alt where bc__gemm_crowded_alt says so,
 * unless the choice's multicast twin takes the plan (the twin shares the
 * rows that crowd the round). A plan that allows stream-K takes no
 * alternative whose stream-K twin is not loaded (the choice would have
 * planned without it). */
static bc_status take_alt(bc_device *dev, const bc_gemm_desc *k, uint32_t split, const bc__gemm_config **c,
                          CUfunction *fn)
{
    const bc__gemm_config *alt = NULL;
    CUfunction alt_fn = NULL;
    if (k->config != NULL || split != 1 || k->resident)
        return BC_OK;
    const int tma = use_tma_store(k, *c);
    const int ud = tma ? bc__gemm_aligned_alt(dev, k, *c, dense_takes(dev, k, *c), &alt, &alt_fn)
                       : bc__gemm_unaligned_alt(dev, k, *c, &alt, &alt_fn);
    if (!ud) {
        if (!bc__gemm_crowded_alt(dev, k, *c, &alt, &alt_fn))
            return BC_OK;
        int twin = 0;
        uint32_t round = 0;
        const bc_status st = mc_takes_plan(dev, k, *c, (uint32_t)dev->info.sm_count, &twin, &round);
        if (st || twin)
            return st;
    }
    if (k->stream_k && alt->kernel_sk && dev->image.fn[alt->kernel_sk] == NULL)
        return BC_OK;
    *c = alt;
    *fn = alt_fn;
    return BC_OK;
}

/* The divisors of the tile walk the Hopper kernel takes (tile_sched.h,
 * bc_tile_at): over the tiles, or a multicast twin's over its blocks, in
 * bands of group_m tile rows (group_m / MCM block rows; the kernel's
 * sm90_tile_at). Other kernels ignore them. The divisions are exact for
 * walk indices below 2^31: a grid of that many tiles would be a D of
 * terabytes. */
static void set_raster(bc_gemm_params *p, uint32_t mc)
{
    p->raster = bc_raster_of(bc__ceil_div(p->tiles_m, mc_rows(mc)), bc__ceil_div(p->tiles_n, mc_cols(mc)),
                             bc_block_group(p->group_m, mc_rows(mc)));
}

/* mc_round: a multicast twin's clusters the device holds at once (mc_round()) */
static void fill_launch(bc_gemm_plan *pl, uint32_t sm_count, uint32_t mc_round)
{
    const bc__gemm_config *c = pl->config;
    const bc_gemm_params *p = &pl->params;
    const uint32_t tiles = p->tiles_m * p->tiles_n, grid = launch_grid(c, p, sm_count, pl->mc, mc_round);
    const uint32_t cluster = pl->mc ? mc_ctas(pl->mc) : p->split_k;
    const int dense = (p->flags & BC_GEMM_F_DENSE_A) != 0;
    CUlaunchConfig *lc = &pl->launch;
    memset(lc, 0, sizeof *lc);
    lc->gridDimX = grid;
    lc->gridDimY = lc->gridDimZ = 1;
    lc->blockDimX = c->threads;
    lc->blockDimY = lc->blockDimZ = 1;
    lc->sharedMemBytes = c->smem_bytes;
    lc->attrs = pl->attrs;
    if (c->pdl) { /* the kernel's set-up may overlap the previous kernel's tail */
        CUlaunchAttribute *a = &pl->attrs[lc->numAttrs++];
        a->id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        a->value.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster > 1) { /* clusters of split_k CTAs, or a multicast twin's blocks */
        CUlaunchAttribute *a = &pl->attrs[lc->numAttrs++];
        a->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a->value.clusterDim.x = cluster;
        a->value.clusterDim.y = a->value.clusterDim.z = 1;
    }
    pl->args[0] = &pl->params;

    bc_gemm_plan_info *in = &pl->info;
    in->config = c->name;
    in->kernel = bc__gemm_kernel_name(dense         ? c->kernel_dense
                                      : p->sk_ctas ? c->kernel_sk
                                      : pl->mc     ? c->kernel_mc
                                                   : c->kernel[pl->desc.ab_type][pl->desc.d_type]);
    in->tile_m = c->bm;
    in->tile_n = c->bn;
    in->tile_k = c->bk;
    in->grid_x = grid;
    in->block_x = c->threads;
    in->cluster_x = cluster;
    in->multicast = (uint32_t)pl->mc;
    in->smem_bytes = c->smem_bytes;
    in->tiles = tiles;
    in->split_k = p->split_k;
    in->swapped = (uint32_t)pl->swapped;
    in->dense_a = (uint32_t)dense;
    in->stream_k_tiles = p->sk_tiles;
    in->stream_k_ctas = p->sk_ctas;
}

bc_status bc_gemm_plan_create(bc_device *dev, const bc_gemm_desc *desc, bc_gemm_plan **out_plan)
{
    if (dev == NULL || desc == NULL || out_plan == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_gemm_plan_create", "dev, desc or out_plan is NULL");
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_gemm_plan_create");
    bc_gemm_desc d = *desc;
    bc_status st = check_shape_types(&d);
    if (st)
        return st;
    st = bc__gemm_check_layout(&d);
    if (st)
        return st;
    /* the problem the kernel runs: for N = 1, the transpose where it pays */
    const int swapped = bc__gemm_swap_pays(dev, &d);
    const bc_gemm_desc k = swapped ? bc__gemm_transposed(&d) : d;
    const bc__gemm_config *c = NULL;
    CUfunction fn = NULL;
    uint32_t split = 1;
    st = bc__gemm_choose(dev, &k, &c, &split, &fn);
    if (st)
        return st;
    st = take_alt(dev, &k, split, &c, &fn);
    if (st)
        return st;
    /* the caller's orientation, so that messages name the caller's operands */
    st = bc__gemm_check_memory(dev, &d, use_tma_store(&k, c), use_c_smem(&k, c), NULL);
    if (st)
        return st;
    d.config = c->name; /* the plan keeps no pointer into the caller's memory */
    bc_gemm_plan *pl = aligned_alloc(64, (sizeof *pl + 63) & ~(size_t)63);
    if (pl == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "aligned_alloc", "cannot allocate a GEMM plan");
    memset(pl, 0, sizeof *pl);
    pl->dev = dev;
    pl->desc = d;
    pl->swapped = swapped;
    pl->config = c;
    pl->fn = fn;
    fill_params(pl, &k);
    pl->params.split_k = split;
    const uint32_t sms = (uint32_t)dev->info.sm_count;
    if (c->dot_max_out)
        bc__gemm_dot_shape(&pl->params, sms);
    if (c->gemv_max_q)
        bc__gemm_gemv_shape(&pl->params, sms);
    if (dense_runs(dev, &k, c, &pl->params)) {
        pl->params.flags |= BC_GEMM_F_DENSE_A; /* the twin's dense-row kernel (loaded with it) */
        pl->fn = dev->image.fn[c->kernel_dense];
    }
    if (k.stream_k && c->kernel_sk && dev->image.fn[c->kernel_sk] == NULL) {
        st = BC_FAIL(BC_ERR_NO_KERNEL_FOR_DEVICE, "stream_k", "the stream-K kernel %s is not loaded: %s",
                     bc__gemm_kernel_name(c->kernel_sk), bc__image_group_missing(dev, BC_KERNELS_STREAM_K));
        goto fail_free;
    }
    /* stream-K first (the caller asked for it, and it changes the last round); else, where the rows are
     * off the sectors, the multicast twin */
    bc_sk sk;
    const int sk_taken = k.stream_k && bc__gemm_stream_k(c, &pl->params, sms, &sk);
    uint32_t round = 0;
    int twin = 0;
    if (!sk_taken) {
        st = mc_takes_plan(dev, &k, c, sms, &twin, &round);
        if (st)
            goto fail_free;
    }
    if (twin) {
        pl->mc = c->mc_shape;
        pl->fn = dev->image.fn[c->kernel_mc];
    }
    st = encode_maps(&pl->params, &k, c, pl->mc);
    if (st)
        goto fail_free;
    set_raster(&pl->params, pl->mc);
    if (sk_taken) {
        st = take_stream_k(pl, &sk);
        if (st)
            goto fail_free;
        pl->fn = dev->image.fn[c->kernel_sk];
    }
    fill_launch(pl, sms, round);
    bc__list_push(&dev->plans, &pl->link);
    *out_plan = pl;
    return BC_OK;

fail_free:
    free(pl);
    return st;
}

bc_status bc_gemm_plan_set_pointers(bc_gemm_plan *plan, bc_devptr a, bc_devptr b, bc_devptr c, bc_devptr d,
                                    bc_devptr bias)
{
    if (plan == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_gemm_plan_set_pointers", "plan is NULL");
    bc_gemm_desc nd = plan->desc; /* checked as the caller sees it: messages name the caller's operands */
    nd.a = a;
    nd.b = b;
    nd.c = c;
    nd.d = d;
    if ((bias != 0) != (plan->desc.bias != 0))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bias",
                       "a plan created %s bias cannot be re-pointed %s one", plan->desc.bias ? "with" : "without",
                       plan->desc.bias ? "without" : "with");
    nd.bias = bias;
    if (bc__dev_lost(plan->dev))
        return BC_LOST_FAIL("bc_gemm_plan_set_pointers");
    bc_status st = bc__gemm_check_layout(&nd);
    if (!st)
        st = bc__gemm_check_memory(plan->dev, &nd, (plan->params.flags & BC_GEMM_F_TMA_STORE) != 0,
                                   (plan->params.flags & BC_GEMM_F_C_SMEM) != 0, NULL);
    if (st)
        return st;
    if (plan->swapped) /* the kernel's A is the caller's B (transposed) */
        a = nd.b, b = nd.a;
    bc_gemm_params p = plan->params;
    if (plan->config->tma) {
        st = bc__tmap_set_address(p.tmap_a, plan->swapped ? "B" : "A", a);
        if (!st)
            st = bc__tmap_set_address(p.tmap_b, plan->swapped ? "A" : "B", b);
    }
    if (!st && (p.flags & BC_GEMM_F_TMA_STORE))
        st = bc__tmap_set_address(p.tmap_d, "D", d);
    if (!st && (p.flags & BC_GEMM_F_C_SMEM))
        st = bc__tmap_set_address(p.tmap_c, "C", c);
    if (st)
        return st;
    p.a = a;
    p.b = b;
    p.d = d;
    p.c = nd.beta != 0.0f ? c : 0;
    p.bias = bias;
    plan->params = p;
    plan->desc = nd;
    return BC_OK;
}

bc_status bc__gemm_plan_whole_maps(const bc_gemm_plan *pl, uint64_t out_a[16], uint64_t out_b[16])
{
    if (!pl->mc) {
        memcpy(out_a, pl->params.tmap_a, sizeof pl->params.tmap_a);
        memcpy(out_b, pl->params.tmap_b, sizeof pl->params.tmap_b);
        return BC_OK;
    }
    const bc_gemm_desc k = pl->swapped ? bc__gemm_transposed(&pl->desc) : pl->desc;
    const bc__tmap_desc ta = a_map_desc(&k, pl->config, 0), tb = b_map_desc(&k, pl->config, 0);
    bc_status st = BC_OK;
    if (pl->mc & 2u) /* the shared operands' maps again, with whole boxes; the others as they are */
        st = bc__tmap_encode(out_a, &ta);
    else
        memcpy(out_a, pl->params.tmap_a, sizeof pl->params.tmap_a);
    if (st)
        return st;
    if (pl->mc & 1u)
        return bc__tmap_encode(out_b, &tb);
    memcpy(out_b, pl->params.tmap_b, sizeof pl->params.tmap_b);
    return BC_OK;
}

bc_status bc_gemm_plan_query(const bc_gemm_plan *plan, bc_gemm_plan_info *out_info)
{
    if (plan == NULL || out_info == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_gemm_plan_query", "plan or out_info is NULL");
    *out_info = plan->info;
    return BC_OK;
}

void bc_gemm_plan_destroy(bc_gemm_plan *plan)
{
    if (plan == NULL)
        return;
    bc__list_remove(&plan->link);
    if (plan->sk_ws)
        bc_mem_free(plan->dev, plan->sk_ws);
    free(plan);
}

void bc__plan_release(bc__link *node) { bc_gemm_plan_destroy((bc_gemm_plan *)node); }
