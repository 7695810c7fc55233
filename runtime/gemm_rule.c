/* The configuration rule (README, "GEMM configurations"): each family's
 * table (gemm_family.h) walked for the device, the cost model, the dot
 * kernel's grid and reach, and when an N = 1 problem runs transposed. Plan
 * time only; integer arithmetic, so the choice is the same on every host. */
#include <string.h>

#include "error.h"
#include "gemm_family.h"
#include "gemm_rule.h"
#include "resident_abi.h"

#define BC_MAX_SPLIT_K 8u      /* CTAs per cluster: the portable maximum */
#define BC_SWAP_MIN_KB 16u     /* swap_pays: K longer than this many k-blocks ... */
#define BC_SWAP_MIN_KB_BK 64u  /* ... of 64 elements */
_Static_assert(BC_MAX_SPLIT_K <= BC_RESIDENT_MAX_SPLIT, "the resident kernel adds at most BC_RESIDENT_MAX_SPLIT slots");

/* Every family's table (gemm_family.h); the rule knows them only through these. */
static const bc__gemm_family *const families[] = {&bc__gemm_family_sm90, &bc__gemm_family_sm100,
                                                  &bc__gemm_family_sm80, &bc__gemm_family_sm80_sm90a};
#define FAMILY_COUNT (sizeof families / sizeof families[0])

static const char *const kernel_names[BC__KERNEL_COUNT] = {
#define K(id, sym, fam, smem) [BC_K_##id] = #sym,
#include "manifest.h"
#undef K
};

const char *bc__gemm_kernel_name(bc__kernel_id id) { return kernel_names[id]; }

/* The split counts the rule considers for configuration c: 1 for a
 * whole-tile kernel; 2, 4, 8 (at most the k-blocks, and at most the
 * configuration's rule_max_split) for a split-K kernel.
 * desc.split_k = 1 keeps only whole-tile kernels; S >= 2 only split-K
 * kernels with the largest power of two <= min(S, 8, k-blocks), or the
 * whole-tile ones when K has a single k-block (nothing to split). */
static uint32_t split_options(const bc__gemm_config *c, uint32_t want, uint32_t k_blocks, uint32_t out[3])
{
    if (!c->split) { /* whole tiles: unless a split was asked for that K allows */
        out[0] = 1;
        return want <= 1 || k_blocks < 2 ? 1u : 0u;
    }
    if (want == 1)
        return 0;
    uint32_t n = 0;
    for (uint32_t s = 2; s <= BC_MAX_SPLIT_K && s <= k_blocks; s *= 2)
        if (want >= 2 || !c->rule_max_split || s <= c->rule_max_split)
            out[n++] = s;
    if (want >= 2 && n > 0) { /* the largest power of two not above want */
        while (n > 1 && out[n - 1] > want)
            n--;
        out[0] = out[n - 1];
        n = 1;
    }
    return n;
}

/* CTAs of configuration c split S ways that the SMs hold at once (one
 * round). Whole tiles and the wide split tiles: one CTA per SM. The skinny
 * split tiles' clusters of 4 and 8 one-CTA-per-SM CTAs must each fit in
 * one GPC, so a round holds only cluster_wave_pct of the SMs (32 clusters
 * of 4 ran as two rounds on the H100); clusters of 2 fill every SM (64 of
 * them ran as one round). */
static uint64_t round_ctas(const bc__gemm_config *c, uint32_t s, uint32_t sms)
{
    const uint64_t r = s > 2 && c->cluster_wave_pct ? (uint64_t)sms * c->cluster_wave_pct / 100u : sms;
    return r ? r : 1;
}

static uint64_t ctas_of(const bc__gemm_config *c, uint32_t s, const bc_gemm_desc *d)
{
    return (uint64_t)bc__ceil_div((uint64_t)d->m, c->bm) * bc__ceil_div((uint64_t)d->n, c->bn) * s;
}

/* Stream-K (kernels_ptx/sk_sched.h; desc.stream_k = 1), for the
 * configuration the rule chose: the last partial round's tiles of a
 * whole-tile configuration with a stream-K twin, their k-blocks shared out
 * over at most BC_SK_MAX_PIECES CTAs per tile in all (the last piece adds
 * the others' partials a slot at a time: more pieces, a longer finish; a
 * CTA's range may start and end inside one tile, so a tile is done in two
 * or three pieces) and at least BC_SK_MIN_KB k-blocks a CTA. A piece's partial, its arrival and the
 * last piece's sum and epilogue are charged BC_SK_COST_KB k-blocks of the
 * tile, and stream-K is taken where the last round's share plus that cost
 * is below a whole tile's k-blocks, or at most BC_SK_ROUNDS_PCT % of them
 * after full rounds of whole tiles (there, 2431x4003x4864 at 74 against
 * 76 k-blocks ran 1.13x slower). Fitted on the H100 (kernels_ptx/
 * PERF_NOTES.md, change 58). It never changes the configuration: weighed
 * in the rule's cost, it moved large grids from 128x256 to 128x128,
 * 1.06-1.29x slower. */
#define BC_SK_MIN_KB 4u
#define BC_SK_MAX_PIECES 2u
#define BC_SK_COST_KB 28u
#define BC_SK_ROUNDS_PCT 85u
static int sk_schedule(const bc__gemm_config *c, uint32_t tiles, uint32_t kb, uint32_t sms, bc_sk *out)
{
    if (!c->kernel_sk || !c->persistent)
        return 0;
    const uint32_t grid = sms * (c->ctas_per_sm ? c->ctas_per_sm : 1u), rest = tiles % grid;
    if (rest == 0 || kb < 2u)
        return 0;
    const uint64_t units = (uint64_t)rest * kb;
    uint64_t ctas = units / BC_SK_MIN_KB < grid ? units / BC_SK_MIN_KB : grid;
    if (ctas > (uint64_t)rest * BC_SK_MAX_PIECES)
        ctas = (uint64_t)rest * BC_SK_MAX_PIECES;
    if (ctas <= rest) /* no more CTAs than tiles (0 when the units are fewer than BC_SK_MIN_KB) */
        return 0;
    const uint64_t kbs = (units + ctas - 1u) / ctas + BC_SK_COST_KB; /* the last round's, with stream-K */
    if (tiles < grid ? kbs >= kb : 100u * kbs > (uint64_t)BC_SK_ROUNDS_PCT * kb)
        return 0;
    const bc_sk sk = {tiles - rest, rest, (uint32_t)ctas, kb};
    *out = sk;
    return 1;
}

/* The configuration's credit, in % of its cost, for A's or B's rows off
 * the 128-byte grid (gemm_family_sm90.c, BC_SM90_OFF_LINE_PCT): full off
 * the 32-byte sectors (off_twin_pct instead from off_twin_min_kb k-blocks
 * on at most off_twin_rows tile rows, where the twins can meet), and off the
 * lines scaled by the k-blocks up to off_full_kb (the loss grows with K
 * there). */
static uint64_t off_grid_credit(const bc__gemm_config *c, const bc_gemm_desc *d, uint64_t kb)
{
    if (!bc__gemm_rows_on(d, 32u)) {
        const int twins = kb >= c->off_twin_min_kb && bc__ceil_div((uint64_t)d->m, c->bm) <= c->off_twin_rows;
        return c->off_twin_pct && twins ? c->off_twin_pct : c->off_sector_pct;
    }
    if (!bc__gemm_rows_on(d, 128u) && c->off_full_kb)
        return c->off_line_pct * (kb < c->off_full_kb ? kb : c->off_full_kb) / c->off_full_kb;
    return 0;
}

/* The rule's cost of configuration c with K split S ways for
 * an M x N x K problem on `sms` SMs: its waves (rounds, round_ctas) times
 * the time of one CTA, modelled as the tile's area times its k-blocks
 * (plus the configuration's split-K exchange cost, and the extra of
 * clusters of 8 on more than cluster8_pct of the SMs) over the
 * configuration's relative throughput (weight), raised by its short-K
 * surcharge (short_pct up to short_max_kb k-blocks) and lowered by its
 * off-grid credit (above). Integer arithmetic, so the choice is the same
 * on every host. */
static uint64_t rule_cost(const bc__gemm_config *c, uint32_t s, const bc_gemm_desc *d, uint32_t sms)
{
    const uint64_t wave = round_ctas(c, s, sms);
    const uint64_t ctas = ctas_of(c, s, d), waves = (ctas + wave - 1) / wave;
    const uint64_t kb = bc__ceil_div((uint64_t)d->k, c->bk);
    const int crowded = s >= 8 && c->cluster8_pct && ctas * 100u > (uint64_t)sms * c->cluster8_pct;
    const uint64_t work = (kb + s - 1) / s + (s > 1 ? c->split_cost_kb : 0) + (crowded ? c->cluster8_cost_kb : 0);
    const uint64_t cost = waves * c->bm * c->bn * work * 100u / c->weight_pct;
    const uint64_t surcharge = kb <= c->short_max_kb ? c->short_pct : 0u;
    return cost * (100u + surcharge) / (100u + off_grid_credit(c, d, kb));
}

/* A skinny split the rule does not consider: more CTAs than one round
 * holds. Each further round of such a grid cost ~5 us whatever its
 * k-blocks on the H100 (1x2048x4640: 23.1 us split 4 ways in three rounds
 * against 11.9 split 2 ways in one; kernels_ptx/PERF_NOTES.md), which the
 * waves of the cost model do not see; the persistent whole-tile twin has no
 * such rounds. A split the caller asked for (split_k >= 2, or a named
 * split configuration) is kept. */
static int split_past_one_round(const bc__gemm_config *c, uint32_t s, const bc_gemm_desc *d, uint32_t sms)
{
    return s > 1 && d->split_k == 0 && c->cluster_wave_pct && ctas_of(c, s, d) > round_ctas(c, s, sms);
}

/* Tensor-memory columns per CTA (of 128 lanes x 32 bits) that public
 * sources document for a compute capability; 0 where none does. No driver
 * attribute reports it. The PTX ISA gives every tcgen05 target one TMEM of
 * 128 lanes x 512 columns per CTA (9.1 §9.7.16.1; tcgen05.alloc takes at
 * most 512 columns), and CUTLASS builds its 512-column sm100 kernels for
 * sm_110f too (CMakeLists.txt: 110f enables the SM100 family). 10.1 is
 * Jetson Thor as CUDA 12.x reports it; CUDA 13 calls it 11.0 (CUTLASS
 * CHANGELOG, 4.2). README, "Blackwell", lists the sources. */
static uint32_t documented_tmem_cols(int cc_major, int cc_minor)
{
    const int cc = cc_major * 10 + cc_minor;
    return cc == 100 || cc == 101 || cc == 103 || cc == 110 ? 512u : 0u;
}

/* Family f's role on this device (gemm_family.h). */
static bc__gemm_role family_role(const bc__gemm_family *f, const bc_device *dev)
{
    for (size_t i = 0; i < f->arch_count; i++)
        if (f->archs[i].major == dev->info.cc_major &&
            (f->archs[i].minor < 0 || f->archs[i].minor == dev->info.cc_minor))
            return f->archs[i].role;
    return BC__ROLE_NONE;
}

/* The configuration called `name`, and its family: the family that serves
 * this device when one does (the same kernels can sit in several images),
 * else the first that has the name. */
static const bc__gemm_config *find_config(const char *name, const bc_device *dev, const bc__gemm_family **out_family)
{
    const bc__gemm_config *found = NULL;
    for (size_t i = 0; i < FAMILY_COUNT; i++)
        for (size_t j = 0; j < families[i]->count; j++) {
            if (strcmp(families[i]->configs[j].name, name) != 0)
                continue;
            const int serves = family_role(families[i], dev) != BC__ROLE_NONE;
            if (found == NULL || serves)
                *out_family = families[i], found = &families[i]->configs[j];
            if (serves)
                return found;
        }
    return found;
}

/* The dot kernel's grid (kernels_ptx/gemm_dot.c): K split over a cluster
 * of S CTAs (the largest power of two up to 8 that leaves each CTA at
 * least BC_DOT_MIN_CHUNKS 16-byte chunks of K, a chunk a thread), the
 * larger side's rows over G clusters, one each while the clusters fit one
 * round, else in equal runs of `per` rows. A round: every SM for clusters
 * of 1 and 2, BC_DOT_WAVE_PCT of them for clusters of 4 and 8 (one CTA an
 * SM, a cluster within one GPC: 16 clusters of 8 ran in two rounds,
 * 64x1x16384 6.2 us; PERF_NOTES.md change 51). */
#define BC_DOT_MIN_CHUNKS 256u
#define BC_DOT_WAVE_PCT 75u
typedef struct bc__dot_grid {
    uint32_t split, groups, per;
} bc__dot_grid;
static bc__dot_grid dot_grid(uint64_t m, uint64_t n, uint64_t k, uint32_t sm_count)
{
    const uint64_t chunks = k / 8u, rows = m > n ? m : n;
    uint32_t s = 1;
    while (s < BC_MAX_SPLIT_K && 2u * s * BC_DOT_MIN_CHUNKS <= chunks)
        s *= 2u;
    const uint32_t round = s > 2u ? sm_count * BC_DOT_WAVE_PCT / 100u : sm_count;
    const uint64_t most = round / s ? round / s : 1u, clusters = rows < most ? rows : most;
    const uint32_t per = bc__ceil_div(rows, clusters); /* rows fit 32 bits (the plan's MAX_DIM) */
    const bc__dot_grid g = {s, bc__ceil_div(rows, per), per};
    return g;
}

/* Whether c is the dot configuration and takes the problem on `sms` SMs:
 * the smaller side at most BC_DOT_MAX_Q rows and a CTA's outputs (its run
 * of rows x the smaller side) at most dot_max_out, the kernel's limit;
 * unless it was named, also K of at least dot_min_k, split_k left to the
 * rule (it splits K over its cluster itself; split_k = 1 asks for a
 * whole-tile plan) and at most dot_max_loads 16-byte loads a CTA (its
 * rows' chunks of its slice of K, for the row and the smaller side's
 * rows), and, for dot_cede_min_q smaller-side rows or more, K past
 * dot_cede_max_k (else the GEMV kernel). Also rule_has's predicate (named
 * 0). */
static int takes_dot(const bc__gemm_config *c, const bc_gemm_desc *d, uint32_t sms, int named)
{
    if (c->dot_max_out == 0)
        return 0;
    const uint64_t q = d->m < d->n ? (uint64_t)d->m : (uint64_t)d->n;
    const bc__dot_grid g = dot_grid((uint64_t)d->m, (uint64_t)d->n, (uint64_t)d->k, sms);
    if (q > BC_DOT_MAX_Q || (uint64_t)g.per * q > c->dot_max_out)
        return 0;
    const uint64_t slice = ((uint64_t)d->k / 8u + g.split - 1) / g.split; /* chunks of K a CTA */
    const uint64_t loads = (uint64_t)g.per * slice * (q + 1);
    if (named)
        return 1;
    if (c->dot_cede_min_q && q >= c->dot_cede_min_q && (uint64_t)d->k <= c->dot_cede_max_k)
        return 0; /* the GEMV kernel's (gemm_family_sm90.c) */
    return (uint64_t)d->k >= c->dot_min_k && d->split_k == 0 && loads <= c->dot_max_loads;
}

/* The GEMV kernel's grid (kernels_ptx/gemm_gemv.c; gemm_abi.h): K split
 * over a cluster of S CTAs, the largest power of two up to 8 that leaves
 * each CTA at least BC_GEMV_SPLIT_MIN_STEPS steps while the clusters fit
 * one round (BC_GEMV_CTAS_PER_SM an SM; for clusters of 4 and 8,
 * BC_DOT_WAVE_PCT of that); then the rows in runs of 16 where the smaller
 * side has more than 8 rows, the CTA's steps give every warp 8
 * (BC_GEMV_KGROUPS) and the runs of 16 give every SM a CTA; else in runs of
 * 8 rows a row group, with row groups doubled (K groups halved) while the
 * warps would have fewer than 8 steps each and the CTAs still number at
 * least the SMs: a short K then costs fewer CTAs' set-up and finish, and a
 * few rows keep their CTAs. */
#define BC_GEMV_SPLIT_MIN_STEPS 64u
#define BC_GEMV_CTAS_PER_SM 2u
typedef struct bc__gemv_grid {
    uint32_t split, groups;
} bc__gemv_grid;
static bc__gemv_grid gemv_grid(uint64_t m, uint64_t n, uint64_t k, uint32_t sm_count)
{
    const uint64_t rows = m > n ? m : n, q = m < n ? m : n, steps = bc__ceil_div(k, BC_GEMV_STEP);
    uint32_t s = 1;
    for (;;) {
        const uint32_t t = 2u * s;
        const uint64_t round = (uint64_t)sm_count * BC_GEMV_CTAS_PER_SM * (t > 2u ? BC_DOT_WAVE_PCT : 100u) / 100u;
        if (t > BC_MAX_SPLIT_K || steps / t < BC_GEMV_SPLIT_MIN_STEPS || bc__ceil_div(rows, 8u) * t > round)
            break;
        s = t;
    }
    const uint32_t kmost = BC_GEMV_KGROUPS((uint32_t)bc__ceil_div(steps, s));
    uint32_t run = 8u;
    if (q > 8u && kmost == BC_GEMV_WARPS && bc__ceil_div(rows, 16u) >= sm_count)
        run = 16u;
    else
        for (uint32_t kw = BC_GEMV_WARPS; kw > kmost && bc__ceil_div(rows, 2u * run) >= sm_count; kw /= 2u)
            run *= 2u;
    const bc__gemv_grid g = {s, bc__ceil_div(rows, run)}; /* rows fit 32 bits (the plan's MAX_DIM) */
    return g;
}

/* Whether c is the GEMV configuration and takes the problem: the smaller
 * side at most gemv_max_q rows (the kernel's limit), at any K (every
 * plan's is a multiple of 8, BC_ERR_K_ALIGNMENT: on 40 drawn shapes of
 * K 8-128, which the short-K twins took until then, the GEMV kernel ran in
 * 0.69 of their time plain, 0.66 with C aliasing D and 0.69 into f32,
 * never slower, on the H200: a small problem is a kernel's set-up and one
 * round trip of its loads, and this kernel has no barriers to set up nor a
 * TMA ring to fill; PERF_NOTES.md change 93); unless it was named, also
 * split_k left to the rule and not a resident plan: the executor runs GEMV plans alone or beside 128x64's tiles only
 * (runtime/resident_program.c), and a plan cannot know its network's other
 * plans, so a resident plan keeps to the tiles, which always share a kernel
 * (GEMV plans run resident when named). The rule takes it after the dot
 * kernel (which cedes it the problems takes_dot says) and before every tile
 * configuration; the 32-row twin only within its rule range (17-32 rows, a
 * larger side of at most gemv_rule_max_rows, K of at most gemv_rule_max_k).
 * Also rule_has's predicate (named 0). */
static int takes_gemv(const bc__gemm_config *c, const bc_gemm_desc *d, uint32_t sms, int named)
{
    (void)sms;
    if (c->gemv_max_q == 0)
        return 0;
    const uint64_t q = d->m < d->n ? (uint64_t)d->m : (uint64_t)d->n;
    const uint64_t rows = d->m < d->n ? (uint64_t)d->n : (uint64_t)d->m;
    if (q > c->gemv_max_q)
        return 0;
    if (named)
        return 1;
    if (q < c->gemv_rule_min_q || (c->gemv_rule_max_rows && rows > c->gemv_rule_max_rows) ||
        (c->gemv_rule_max_k && (uint64_t)d->k > c->gemv_rule_max_k))
        return 0; /* the 32-row twin: the rule's range for it (gemm_family_sm90.c) */
    return d->split_k == 0 && !d->resident;
}

/* Whether the rule weighs short-K configuration c for d: K within its
 * k-blocks, or within its wide k-blocks when its tiles outnumber half the
 * SMs (and, for wide_on_sectors, A's and B's rows lie on the 32-byte
 * sectors); M from its least; tiles for its share of the SMs
 * (gemm_family_sm90.c says why each). */
static int short_k_takes(const bc__gemm_config *c, const bc_gemm_desc *d, uint32_t sms)
{
    const uint64_t kb = bc__ceil_div((uint64_t)d->k, c->bk), tiles = ctas_of(c, 1, d);
    const int wide = kb <= c->wide_max_kb && 2u * tiles > sms && (!c->wide_on_sectors || bc__gemm_rows_on(d, 32u));
    if (kb > c->max_kb && !wide)
        return 0;
    return (uint64_t)d->m >= c->min_m && !(c->sm_share && c->sm_share * tiles < sms);
}

/* The kernels the rule takes outright where they take the problem, in
 * order: the dot kernel (2), the GEMV kernel (1); every tile configuration 0. */
static int outright_rank(const bc__gemm_config *c) { return c->dot_max_out ? 2 : c->gemv_max_q ? 1 : 0; }

/* The rule's order of candidates: the dot configuration before every other
 * where it takes the problem (the cost model's tiles do not describe it),
 * then the GEMV configuration where it takes it (the same), then within
 * its M range a skinny-M
 * configuration comes before every other (it streams B with twice the bytes
 * in flight; the cost model does not compare its tile with the others'),
 * then, within its K range, a short-K one (two or four CTAs an SM: the
 * cost model counts one), then the lesser cost; the incumbent keeps a tie. */
static int rule_better(const bc__gemm_config *c, uint64_t cost, const bc__gemm_config *best_c, uint64_t best)
{
    if (best_c == NULL)
        return 1;
    if (outright_rank(c) != outright_rank(best_c))
        return outright_rank(c) > outright_rank(best_c);
    const int skinny = c->max_m != 0, best_skinny = best_c->max_m != 0;
    const int short_k = c->max_kb != 0, best_short_k = best_c->max_kb != 0;
    return skinny != best_skinny ? skinny : short_k != best_short_k ? short_k : cost < best;
}

/* Whether a plan made for a resident executor (desc.resident) leaves c out:
 * c has no resident kernel, on a device the executor runs on (sm_90a; on
 * others the flag changes nothing: bc_resident_create refuses their plans). */
static int resident_skips(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c)
{
    return d->resident && dev->info.cc_major == 9 && !bc__resident_runs(c->name);
}

/* The least-cost (configuration, split) of family f for the problem, among
 * `named` alone when it is set; *best_c stays NULL when none qualifies. A
 * configuration whose shared memory the device cannot give is skipped by
 * the rule (a named one is refused later, by name). */
static void rule_pick(const bc__gemm_family *f, const bc__gemm_config *named, const bc_device *dev,
                      const bc_gemm_desc *d, const bc__gemm_config **best_c, uint32_t *best_s, uint64_t *best)
{
    for (size_t i = 0; i < f->count; i++) {
        const bc__gemm_config *c = &f->configs[i];
        if (named != NULL ? named != c : (uint32_t)dev->info.smem_per_block_optin < c->smem_bytes)
            continue;
        if (c->max_m != 0 && (uint64_t)d->m > c->max_m) /* a skinny-M configuration out of its range */
            continue;
        if (named == NULL && resident_skips(dev, d, c))
            continue;
        if (named == NULL && ((c->rule_max_m != 0 && (uint64_t)d->m > c->rule_max_m) ||
                              bc__ceil_div((uint64_t)d->k, c->bk) < c->rule_min_kb))
            continue;
        if (c->dot_max_out != 0 && !takes_dot(c, d, (uint32_t)dev->info.sm_count, named != NULL))
            continue;
        if (c->gemv_max_q != 0 && !takes_gemv(c, d, (uint32_t)dev->info.sm_count, named != NULL))
            continue;
        if (named == NULL && c->max_kb != 0 && !short_k_takes(c, d, (uint32_t)dev->info.sm_count))
            continue;
        uint32_t opts[3];
        const uint32_t n = split_options(c, d->split_k, bc__ceil_div((uint64_t)d->k, c->bk), opts);
        for (uint32_t j = 0; j < n; j++) {
            if (named == NULL && split_past_one_round(c, opts[j], d, (uint32_t)dev->info.sm_count))
                continue;
            const uint64_t cost = rule_cost(c, opts[j], d, (uint32_t)dev->info.sm_count);
            if (rule_better(c, cost, *best_c, *best))
                *best_c = c, *best_s = opts[j], *best = cost;
        }
    }
}

/* A GEMV configuration of family f that takes d's smaller side when named
 * (a hint for a refusal), or NULL. */
static const bc__gemm_config *gemv_taking(const bc__gemm_family *f, const bc_gemm_desc *d)
{
    const uint64_t q = d->m < d->n ? (uint64_t)d->m : (uint64_t)d->n;
    for (size_t i = 0; i < f->count; i++)
        if (f->configs[i].gemv_max_q >= q)
            return &f->configs[i];
    return NULL;
}

/* The documented configuration rule (README, "GEMM configurations"), or the
 * caller's explicit choice of configuration and/or split: the families
 * whose role on this device is RULE (or, for a named configuration, any
 * family the device's image carries), walked in table order. */
bc_status bc__gemm_choose(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config **out, uint32_t *out_split,
                          CUfunction *out_fn)
{
    const bc__gemm_config *c = NULL, *named = NULL;
    const bc__gemm_family *named_family = NULL;
    uint32_t split = 1;
    uint64_t best = 0;
    int any_family = 0;
    if (d->config != NULL) {
        named = find_config(d->config, dev, &named_family);
        if (named == NULL || family_role(named_family, dev) == BC__ROLE_NONE)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "config", "configuration '%s' is %s for sm_%d%d", d->config,
                           named == NULL ? "unknown" : "not built", dev->info.cc_major, dev->info.cc_minor);
        if ((named->dot_max_out || named->gemv_max_q) && d->split_k != 0)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "split_k",
                           "split_k=%u with %s: the plan sizes its own split of K (leave split_k 0)", d->split_k,
                           named->name);
        any_family = 1;
        rule_pick(named_family, named, dev, d, &c, &split, &best);
    } else {
        for (size_t i = 0; i < FAMILY_COUNT; i++)
            if (family_role(families[i], dev) == BC__ROLE_RULE) {
                any_family = 1;
                rule_pick(families[i], NULL, dev, d, &c, &split, &best);
            }
    }
    if (!any_family)
        return BC_FAIL(BC_ERR_NO_KERNEL_FOR_DEVICE, "config", "no GEMM configuration for sm_%d%d",
                       dev->info.cc_major, dev->info.cc_minor);
    if (c == NULL && named == NULL && d->split_k <= 1)
        return BC_FAIL(BC_ERR_NO_KERNEL_FOR_DEVICE, "config",
                       "no GEMM configuration fits the %d bytes of shared memory sm_%d%d offers",
                       dev->info.smem_per_block_optin, dev->info.cc_major, dev->info.cc_minor);
    if (c == NULL && named != NULL && named->dot_max_out &&
        !takes_dot(named, d, (uint32_t)dev->info.sm_count, 1))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "config",
                       "%s takes min(M, N) <= %u and at most %u outputs a CTA (M=%lld N=%lld: %llu a CTA on %d SMs)",
                       named->name, BC_DOT_MAX_Q, named->dot_max_out, (long long)d->m, (long long)d->n,
                       (unsigned long long)dot_grid((uint64_t)d->m, (uint64_t)d->n, (uint64_t)d->k,
                                                    (uint32_t)dev->info.sm_count).per *
                           (unsigned long long)(d->m < d->n ? d->m : d->n),
                       dev->info.sm_count);
    if (c == NULL && named != NULL && named->gemv_max_q &&
        !takes_gemv(named, d, (uint32_t)dev->info.sm_count, 1)) {
        const bc__gemm_config *wider = gemv_taking(named_family, d);
        if (wider != NULL)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "config",
                           "%s takes min(M, N) <= %u (M=%lld N=%lld); %s takes up to %u", named->name,
                           named->gemv_max_q, (long long)d->m, (long long)d->n, wider->name, wider->gemv_max_q);
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "config", "%s takes min(M, N) <= %u (M=%lld N=%lld)", named->name,
                       named->gemv_max_q, (long long)d->m, (long long)d->n);
    }
    if (c == NULL && named != NULL && named->max_m && (uint64_t)d->m > named->max_m)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "config", "%s takes M <= %u (M=%lld)", named->name, named->max_m,
                       (long long)d->m);
    if (c == NULL && named != NULL && named->split && d->split_k != 1 &&
        bc__ceil_div((uint64_t)d->k, named->bk) < 2)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "config",
                       "%s splits K into pieces of %u-element k-blocks; K=%lld is one: nothing to split", named->name,
                       named->bk, (long long)d->k);
    if (c == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "split_k",
                       "split_k=%u is not possible with %s (K=%lld; whole-tile configurations take split_k 0 or 1, "
                       "split-K ones 0 or 2.., up to the k-blocks)",
                       d->split_k, named ? named->name : "any configuration", (long long)d->k);
    if ((uint32_t)dev->info.smem_per_block_optin < c->smem_bytes) /* a named configuration */
        return BC_FAIL(BC_ERR_NO_KERNEL_FOR_DEVICE, "config", "%s needs %u bytes of shared memory, device offers %d",
                       c->name, c->smem_bytes, dev->info.smem_per_block_optin);
    const uint32_t tmem = documented_tmem_cols(dev->info.cc_major, dev->info.cc_minor);
    if (c->tmem_cols > tmem)
        return BC_FAIL(BC_ERR_NO_KERNEL_FOR_DEVICE, "config",
                       "%s needs %u tensor-memory columns per CTA; sm_%d%d has %u documented (documented: "
                       "sm_100, sm_101, sm_103, sm_110)", c->name, c->tmem_cols, dev->info.cc_major,
                       dev->info.cc_minor, tmem);
    CUfunction fn = dev->image.fn[c->kernel[d->ab_type][d->d_type]];
    if (fn == NULL) /* only a named family's (the optional portable group on sm_90a) or no kernel at all */
        return BC_FAIL(BC_ERR_NO_KERNEL_FOR_DEVICE, "config", "kernel %s is not loaded: %s",
                       bc__gemm_kernel_name(c->kernel[d->ab_type][d->d_type]),
                       !dev->cfg.skip_kernel_load && (named_family == NULL ||
                                                      family_role(named_family, dev) != BC__ROLE_NAMED)
                           ? "the image lacks it"
                           : bc__image_group_missing(dev, BC_KERNELS_PORTABLE));
    *out = c;
    *out_split = split;
    *out_fn = fn;
    return BC_OK;
}

/* D^T = B . A^T for an N = 1 problem: M' = 1, N' = M, A' = B, B' = A. D
 * (M x 1, ldd 1) is the bytes of a 1 x M row, and so is C when ldc is 1;
 * a single row's leading dimension is its length. */
bc_gemm_desc bc__gemm_transposed(const bc_gemm_desc *d)
{
    bc_gemm_desc t = *d;
    t.m = d->n, t.n = d->m;
    t.a = d->b, t.b = d->a;
    t.lda = d->ldb, t.ldb = d->lda;
    t.ldc = t.ldd = d->m;
    return t;
}

/* Whether some configuration of a family this device's rule walks, loaded
 * for d's types and within the device's shared memory (and, for a resident
 * plan, run by a resident kernel), `takes` d (arg: what the predicate needs
 * besides). */
typedef int (*rule_takes_fn)(const bc__gemm_config *c, const bc_gemm_desc *d, uint32_t sms, int arg);
static int rule_has(const bc_device *dev, const bc_gemm_desc *d, rule_takes_fn takes, int arg)
{
    for (size_t i = 0; i < FAMILY_COUNT; i++) {
        if (family_role(families[i], dev) != BC__ROLE_RULE)
            continue;
        for (size_t j = 0; j < families[i]->count; j++) {
            const bc__gemm_config *c = &families[i]->configs[j];
            if (resident_skips(dev, d, c))
                continue;
            if (takes(c, d, (uint32_t)dev->info.sm_count, arg) &&
                (uint32_t)dev->info.smem_per_block_optin >= c->smem_bytes &&
                dev->image.fn[c->kernel[d->ab_type][d->d_type]] != NULL)
                return 1;
        }
    }
    return 0;
}

/* A skinny configuration (rule_has); with short_k, a skinny short-K one
 * whose k-blocks d's K is within. */
static int takes_skinny(const bc__gemm_config *c, const bc_gemm_desc *d, uint32_t sms, int short_k)
{
    (void)sms;
    const int k_fits = c->max_kb != 0 && bc__ceil_div((uint64_t)d->k, c->bk) <= c->max_kb && c->min_m <= 1u;
    return c->max_m != 0 && (!short_k || k_fits);
}

/* Whether the rule runs an N = 1 problem transposed (above). Two cases,
 * measured on the H100 (kernels_ptx/PERF_NOTES.md):
 * - K longer than 16 k-blocks, M > 16 and a 64-row grid that fills at most
 *   half the SMs (change 37): with one useful column, 64-row tiles walk all
 *   of K on ceil(M / 64) SMs; transposed, M' = 1 takes the skinny
 *   configurations, which split K over clusters when the tiles are few
 *   (131x1x4640 13.2 -> 5.3 us, 21x1x15008 16.6 -> 8.4). Beyond those the
 *   two ran even, or the plan as it is won (16384x1x512 9.1 against 10.9
 *   us, 1225x1x976 4.9 against 5.6).
 * - K within the skinny short-K kernel's k-blocks, any M (change 47): the
 *   transpose runs there, four CTAs an SM with 16-row stages, and its D is
 *   one row, stored by TMA when its M elements are 16-byte multiples,
 *   where the plan as it is copies out one element per row (16x1x64 2.93
 *   -> 2.17 us, 335x1x64 2.71 -> 2.51, 4040x1x64 2.92 -> 2.35, 16384x1x64
 *   3.69 -> 2.88). At 8 k-blocks the transpose lost at every M measured.
 * Not where the dot or the GEMV kernel takes the problem (both read either
 * side's rows as they lie: both cases are then a resident plan's, or one
 * with split_k set),
 * not with a named configuration, a bias (one value for every row of D,
 * which a per-column bias of the transpose cannot say), a C or D that is
 * not one contiguous column, or a device whose rule has no skinny
 * configuration to run it (loaded, within its shared memory), so that the
 * rule's choice for the transpose cannot fail. */
int bc__gemm_swap_pays(const bc_device *dev, const bc_gemm_desc *d)
{
    if (d->n != 1 || d->config != NULL || d->bias != 0 || d->ldd != 1 || rule_has(dev, d, takes_dot, 0) ||
        rule_has(dev, d, takes_gemv, 0))
        return 0;
    if (d->beta != 0.0f && d->ldc != 1)
        return 0;
    if (d->m > 1 && rule_has(dev, d, takes_skinny, 1))
        return 1;
    return d->m > 16 && bc__ceil_div((uint64_t)d->k, BC_SWAP_MIN_KB_BK) > BC_SWAP_MIN_KB &&
           2u * (uint64_t)bc__ceil_div((uint64_t)d->m, 64) <= (uint64_t)dev->info.sm_count &&
           rule_has(dev, d, takes_skinny, 0);
}

/* The configuration called `name` as the rule's alternative to its choice
 * for d: of a family the rule uses on this device, within its shared
 * memory, its kernel for d's types loaded. */
static const bc__gemm_config *rule_alt(const bc_device *dev, const bc_gemm_desc *d, const char *name, CUfunction *out_fn)
{
    const bc__gemm_family *f = NULL;
    const bc__gemm_config *a = find_config(name, dev, &f);
    if (a == NULL || family_role(f, dev) != BC__ROLE_RULE || (uint32_t)dev->info.smem_per_block_optin < a->smem_bytes)
        return NULL;
    *out_fn = dev->image.fn[a->kernel[d->ab_type][d->d_type]];
    return *out_fn != NULL ? a : NULL;
}

int bc__gemm_crowded_alt(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c,
                         const bc__gemm_config **out, CUfunction *out_fn)
{
    const uint32_t sms = (uint32_t)dev->info.sm_count;
    if (c->crowd_alt == NULL || !c->persistent || c->ctas_per_sm > 1u)
        return 0;
    const uint64_t ctas = ctas_of(c, 1, d), kb = bc__ceil_div((uint64_t)d->k, c->bk);
    if (kb < c->crowd_min_kb || ctas > sms || 2u * ctas <= sms || bc__gemm_rows_on(d, 128u))
        return 0;
    CUfunction fn = NULL;
    const bc__gemm_config *a = rule_alt(dev, d, c->crowd_alt, &fn);
    if (a == NULL || 2u * ctas_of(a, 1, d) >= sms)
        return 0;
    *out = a;
    *out_fn = fn;
    return 1;
}

/* c's ud_alt for d, which has a plain epilogue (no C, bias or ReLU), on at
 * least min_rounds (> 0) rounds of c's tiles, where the alternative has
 * fewer tile columns (on one column of c's it only runs fewer CTAs): the
 * common part of bc__gemm_unaligned_alt and bc__gemm_aligned_alt. */
static int plain_alt(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c, uint32_t min_rounds,
                     const bc__gemm_config **out, CUfunction *out_fn)
{
    if (c->ud_alt == NULL || min_rounds == 0 || d->beta != 0.0f || d->bias != 0 || d->relu ||
        ctas_of(c, 1, d) < (uint64_t)min_rounds * (uint32_t)dev->info.sm_count)
        return 0;
    CUfunction fn = NULL;
    const bc__gemm_config *a = rule_alt(dev, d, c->ud_alt, &fn);
    if (a == NULL || bc__ceil_div((uint64_t)d->n, a->bn) >= bc__ceil_div((uint64_t)d->n, c->bn))
        return 0;
    *out = a;
    *out_fn = fn;
    return 1;
}

int bc__gemm_unaligned_alt(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c,
                           const bc__gemm_config **out, CUfunction *out_fn)
{
    return plain_alt(dev, d, c, d->d_type == BC_DTYPE_F32 ? c->ud_min_rounds_f32 : c->ud_min_rounds, out, out_fn);
}

int bc__gemm_aligned_alt(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c, int dense,
                         const bc__gemm_config **out, CUfunction *out_fn)
{
    return !dense && (uint64_t)d->k >= c->ad_min_k && bc__ceil_div((uint64_t)d->k, c->bk) <= c->max_kb &&
           plain_alt(dev, d, c, c->ad_min_rounds, out, out_fn);
}

int bc__gemm_stream_k(const bc__gemm_config *c, const bc_gemm_params *p, uint32_t sms, bc_sk *out)
{
    return sk_schedule(c, p->tiles_m * p->tiles_n, p->k_blocks, sms, out);
}

void bc__gemm_gemv_shape(bc_gemm_params *p, uint32_t sm_count)
{
    const bc__gemv_grid g = gemv_grid(p->m, p->n, p->k, sm_count);
    p->tiles_m = g.groups;
    p->tiles_n = 1;
    p->split_k = g.split;
}

void bc__gemm_dot_shape(bc_gemm_params *p, uint32_t sm_count)
{
    const bc__dot_grid g = dot_grid(p->m, p->n, p->k, sm_count);
    p->tiles_m = g.groups;
    p->tiles_n = 1;
    p->split_k = g.split;
}
