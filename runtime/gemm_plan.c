/* GEMM plans: all validation, configuration choice, tensor-map encoding and
 * launch packing happen here, so that the launch is one driver call. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gemm_family.h"
#include "gemm_internal.h"
#include "resident_abi.h"

#define MAX_DIM 0x7FFFFFFFll
#define GROUP_M 8u /* tile raster band height (tile_sched.h); 4 and 16 measured no better */
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
    return BC_OK;
}

static uint32_t ceil_div(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

/* The split counts the rule considers for configuration c: 1 for a
 * whole-tile kernel; 2, 4, 8 (at most the k-blocks) for a split-K kernel.
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
    return (uint64_t)ceil_div((uint64_t)d->m, c->bm) * ceil_div((uint64_t)d->n, c->bn) * s;
}

/* The rule's cost of configuration c with K split S ways for
 * an M x N x K problem on `sms` SMs: its waves (rounds, round_ctas) times
 * the time of one CTA, modelled as the tile's area times its k-blocks
 * (plus the configuration's split-K exchange cost, and the extra of
 * clusters of 8 on more than cluster8_pct of the SMs) over the
 * configuration's relative throughput (weight). Integer arithmetic, so
 * the choice is the same on every host. */
static uint64_t rule_cost(const bc__gemm_config *c, uint32_t s, const bc_gemm_desc *d, uint32_t sms)
{
    const uint64_t wave = round_ctas(c, s, sms);
    const uint64_t ctas = ctas_of(c, s, d), waves = (ctas + wave - 1) / wave;
    const uint64_t kb = ceil_div((uint64_t)d->k, c->bk);
    const int crowded = s >= 8 && c->cluster8_pct && ctas * 100u > (uint64_t)sms * c->cluster8_pct;
    const uint64_t work = (kb + s - 1) / s + (s > 1 ? c->split_cost_kb : 0) + (crowded ? c->cluster8_cost_kb : 0);
    return waves * c->bm * c->bn * work * 100u / c->weight_pct;
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
    const uint64_t most = round / s ? round / s : 1u;
    const uint64_t per = (rows + (rows < most ? rows : most) - 1) / (rows < most ? rows : most);
    const bc__dot_grid g = {s, (uint32_t)((rows + per - 1) / per), per > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)per};
    return g;
}

/* Whether the dot configuration c takes the problem on `sms` SMs: the
 * smaller side at most BC_DOT_MAX_Q rows and a CTA's outputs (its run of
 * rows x the smaller side) at most dot_max_out, the kernel's limit; unless
 * it was named, also K of at least dot_min_k, split_k left to the rule (it
 * splits K over its cluster itself; split_k = 1 asks for a whole-tile
 * plan) and at most dot_max_loads 16-byte loads a CTA (its rows' chunks of
 * its slice of K, for the row and the smaller side's rows). */
static int dot_takes(const bc__gemm_config *c, const bc_gemm_desc *d, int named, uint32_t sms)
{
    const uint64_t q = d->m < d->n ? (uint64_t)d->m : (uint64_t)d->n;
    const bc__dot_grid g = dot_grid((uint64_t)d->m, (uint64_t)d->n, (uint64_t)d->k, sms);
    if (q > BC_DOT_MAX_Q || (uint64_t)g.per * q > c->dot_max_out)
        return 0;
    const uint64_t slice = ((uint64_t)d->k / 8u + g.split - 1) / g.split; /* chunks of K a CTA */
    const uint64_t loads = (uint64_t)g.per * slice * (q + 1);
    return named || ((uint64_t)d->k >= c->dot_min_k && d->split_k == 0 && loads <= c->dot_max_loads);
}

/* The rule's order of candidates: the dot configuration before every other
 * where it takes the problem (the cost model's tiles do not describe it),
 * then within its M range a skinny-M
 * configuration comes before every other (it streams B with twice the bytes
 * in flight; the cost model does not compare its tile with the others'),
 * then, within its K range, a short-K one (two or four CTAs an SM: the
 * cost model counts one), then the lesser cost; the incumbent keeps a tie. */
static int rule_better(const bc__gemm_config *c, uint64_t cost, const bc__gemm_config *best_c, uint64_t best)
{
    if (best_c == NULL)
        return 1;
    if ((c->dot_max_out != 0) != (best_c->dot_max_out != 0))
        return c->dot_max_out != 0;
    const int skinny = c->max_m != 0, best_skinny = best_c->max_m != 0;
    const int short_k = c->max_kb != 0, best_short_k = best_c->max_kb != 0;
    return skinny != best_skinny ? skinny : short_k != best_short_k ? short_k : cost < best;
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
        if (c->dot_max_out != 0 && !dot_takes(c, d, named != NULL, (uint32_t)dev->info.sm_count))
            continue;
        if (named == NULL && c->max_kb != 0 && /* a short-K configuration out of its range, or too few tiles */
            (ceil_div((uint64_t)d->k, c->bk) > c->max_kb || (uint64_t)d->m < c->min_m ||
             (c->sm_share && c->sm_share * ctas_of(c, 1, d) < (uint64_t)dev->info.sm_count)))
            continue;
        uint32_t opts[3];
        const uint32_t n = split_options(c, d->split_k, ceil_div((uint64_t)d->k, c->bk), opts);
        for (uint32_t j = 0; j < n; j++) {
            if (named == NULL && split_past_one_round(c, opts[j], d, (uint32_t)dev->info.sm_count))
                continue;
            const uint64_t cost = rule_cost(c, opts[j], d, (uint32_t)dev->info.sm_count);
            if (rule_better(c, cost, *best_c, *best))
                *best_c = c, *best_s = opts[j], *best = cost;
        }
    }
}

/* The documented configuration rule (README, "GEMM configurations"), or the
 * caller's explicit choice of configuration and/or split: the families
 * whose role on this device is RULE (or, for a named configuration, any
 * family the device's image carries), walked in table order. */
static bc_status choose_config(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config **out,
                               uint32_t *out_split, CUfunction *out_fn)
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
        !dot_takes(named, d, 1, (uint32_t)dev->info.sm_count))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "config",
                       "%s takes min(M, N) <= %u and at most %u outputs a CTA (M=%lld N=%lld: %llu a CTA on %d SMs)",
                       named->name, BC_DOT_MAX_Q, named->dot_max_out, (long long)d->m, (long long)d->n,
                       (unsigned long long)dot_grid((uint64_t)d->m, (uint64_t)d->n, (uint64_t)d->k,
                                                    (uint32_t)dev->info.sm_count).per *
                           (unsigned long long)(d->m < d->n ? d->m : d->n),
                       dev->info.sm_count);
    if (c == NULL && named != NULL && named->max_m && (uint64_t)d->m > named->max_m)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "config", "%s takes M <= %u (M=%lld)", named->name, named->max_m,
                       (long long)d->m);
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
                       kernel_names[c->kernel[d->ab_type][d->d_type]],
                       dev->cfg.skip_kernel_load ? "the device was opened with skip_kernel_load"
                       : named_family != NULL && family_role(named_family, dev) == BC__ROLE_NAMED
                           ? "the device was opened without BC_KERNELS_PORTABLE in bc_device_config.kernel_groups"
                           : "the image lacks it");
    *out = c;
    *out_split = split;
    *out_fn = fn;
    return BC_OK;
}

/* D^T = B . A^T for an N = 1 problem: M' = 1, N' = M, A' = B, B' = A. D
 * (M x 1, ldd 1) is the bytes of a 1 x M row, and so is C when ldc is 1;
 * a single row's leading dimension is its length. */
static bc_gemm_desc transposed(const bc_gemm_desc *d)
{
    bc_gemm_desc t = *d;
    t.m = d->n, t.n = d->m;
    t.a = d->b, t.b = d->a;
    t.lda = d->ldb, t.ldb = d->lda;
    t.ldc = t.ldd = d->m;
    return t;
}

/* Whether the rule of this device takes d to its dot configuration
 * (loaded, within its range). */
static int rule_has_dot(const bc_device *dev, const bc_gemm_desc *d)
{
    for (size_t i = 0; i < FAMILY_COUNT; i++) {
        if (family_role(families[i], dev) != BC__ROLE_RULE)
            continue;
        for (size_t j = 0; j < families[i]->count; j++) {
            const bc__gemm_config *c = &families[i]->configs[j];
            if (c->dot_max_out != 0 && dot_takes(c, d, 0, (uint32_t)dev->info.sm_count) &&
                dev->image.fn[c->kernel[d->ab_type][d->d_type]] != NULL)
                return 1;
        }
    }
    return 0;
}

/* Whether the rule of this device has a skinny configuration it can run
 * for d's types (loaded, within the device's shared memory); with short_k,
 * a skinny short-K one whose k-blocks d's K is within. */
static int rule_has_skinny(const bc_device *dev, const bc_gemm_desc *d, int short_k)
{
    for (size_t i = 0; i < FAMILY_COUNT; i++) {
        if (family_role(families[i], dev) != BC__ROLE_RULE)
            continue;
        for (size_t j = 0; j < families[i]->count; j++) {
            const bc__gemm_config *c = &families[i]->configs[j];
            const int k_fits = c->max_kb != 0 && ceil_div((uint64_t)d->k, c->bk) <= c->max_kb && c->min_m <= 1u;
            if (c->max_m != 0 && (!short_k || k_fits) &&
                (uint32_t)dev->info.smem_per_block_optin >= c->smem_bytes &&
                dev->image.fn[c->kernel[d->ab_type][d->d_type]] != NULL)
                return 1;
        }
    }
    return 0;
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
 * Not where the dot kernel takes the problem (it reads either side's rows
 * as they lie), not with a named configuration, a bias (one value for every row of D,
 * which a per-column bias of the transpose cannot say), a C or D that is
 * not one contiguous column, or a device whose rule has no skinny
 * configuration to run it (loaded, within its shared memory), so that the
 * rule's choice for the transpose cannot fail. */
static int swap_pays(const bc_device *dev, const bc_gemm_desc *d)
{
    if (d->n != 1 || d->config != NULL || d->bias != 0 || d->ldd != 1 || rule_has_dot(dev, d))
        return 0;
    if (d->beta != 0.0f && d->ldc != 1)
        return 0;
    if (d->m > 1 && rule_has_skinny(dev, d, 1))
        return 1;
    return d->m > 16 && ceil_div((uint64_t)d->k, BC_SWAP_MIN_KB_BK) > BC_SWAP_MIN_KB &&
           2u * (uint64_t)ceil_div((uint64_t)d->m, 64) <= (uint64_t)dev->info.sm_count && rule_has_skinny(dev, d, 0);
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
    const uint64_t band = p->tiles_m < p->group_m ? p->tiles_m : p->group_m, row_ctas = ceil_div(grid, band);
    const uint64_t ctas = row_ctas < p->tiles_n ? row_ctas : p->tiles_n;
    const uint64_t rows = (uint64_t)d->m < c->a_rows ? (uint64_t)d->m : c->a_rows, rb = (uint64_t)d->k * 2u;
    uint64_t g = rb, h = 128; /* gcd(rb, 128): rows starting g bytes apart cross a line (rb - g) / 128 of the time */
    while (h) {
        const uint64_t t = g % h;
        g = h, h = t;
    }
    const double requests = (double)rows * (1.0 + (double)(rb - g) / 128.0);
    const double lines = (double)ceil_div(rows * rb, 128);
    return ctas >= BC_DENSE_MIN_CTAS && (double)ctas * (requests - lines) >= BC_DENSE_MIN_SAVED &&
                   100.0 * (requests - lines) >= (double)c->dense_min_pct * requests
               ? BC_GEMM_F_DENSE_A
               : 0u;
}

/* D may leave through a TMA store when the configuration can, C (if read)
 * arrives through shared memory, and D's rows are 16-byte multiples. */
static int use_tma_store(const bc_gemm_desc *d, const bc__gemm_config *c)
{
    return c->tma_store && (d->beta == 0.0f || use_c_smem(d, c)) &&
           ((uint64_t)d->ldd * bc__dtype_bytes(d->d_type)) % 16 == 0;
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

static bc_status encode_maps(bc_gemm_params *p, const bc_gemm_desc *d, const bc__gemm_config *c)
{
    if (!c->tma)
        return BC_OK; /* the kernel reads A and B through params.a/b */
    const bc__tmap_desc ta = {"A", d->ab_type, d->a, (uint64_t)d->k, (uint64_t)d->m, (uint64_t)d->lda * 2,
                              c->bk, c->a_rows, 128};
    const bc__tmap_desc tb = {"B", d->ab_type, d->b, (uint64_t)d->k, (uint64_t)d->n, (uint64_t)d->ldb * 2,
                              c->bk, c->bn, 128};
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
    p->tiles_m = ceil_div((uint64_t)d->m, c->bm);
    p->tiles_n = ceil_div((uint64_t)d->n, c->bn);
    p->k_blocks = ceil_div((uint64_t)d->k, c->bk);
    p->group_m = GROUP_M;
    p->split_k = 1;
}

/* The dot kernel's launch (dot_grid): tiles_m = G, tiles_n = 1, split_k = S. */
static void dot_shape(bc_gemm_params *p, uint32_t sm_count)
{
    const bc__dot_grid g = dot_grid(p->m, p->n, p->k, sm_count);
    p->tiles_m = g.groups;
    p->tiles_n = 1;
    p->k_blocks = p->k / 8u;
    p->split_k = g.split;
}

/* Persistent whole-tile kernels: a grid of one CTA per tile, at most one
 * per SM (the kernels' shared memory allows one CTA per SM). Split-K
 * kernels: one cluster of S CTAs per tile. The others (portable): one CTA
 * per tile, as many resident per SM as fit. */
static uint32_t launch_grid(const bc__gemm_config *c, const bc_gemm_params *p, uint32_t sm_count)
{
    const uint32_t tiles = p->tiles_m * p->tiles_n;
    const uint32_t per_sm = c->ctas_per_sm ? c->ctas_per_sm : 1u;
    const uint32_t slots = sm_count * per_sm;
    return c->split || c->dot_max_out ? tiles * p->split_k : !c->persistent ? tiles : tiles < slots ? tiles : slots;
}

static void fill_launch(bc_gemm_plan *pl, uint32_t sm_count)
{
    const bc__gemm_config *c = pl->config;
    const bc_gemm_params *p = &pl->params;
    const uint32_t tiles = p->tiles_m * p->tiles_n, grid = launch_grid(c, p, sm_count);
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
    if (c->split || (c->dot_max_out && p->split_k > 1)) {
        CUlaunchAttribute *a = &pl->attrs[lc->numAttrs++];
        a->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a->value.clusterDim.x = p->split_k;
        a->value.clusterDim.y = a->value.clusterDim.z = 1;
    }
    pl->args[0] = &pl->params;

    bc_gemm_plan_info *in = &pl->info;
    in->config = c->name;
    in->kernel = kernel_names[dense ? c->kernel_dense : c->kernel[pl->desc.ab_type][pl->desc.d_type]];
    in->tile_m = c->bm;
    in->tile_n = c->bn;
    in->tile_k = c->bk;
    in->grid_x = grid;
    in->block_x = c->threads;
    in->cluster_x = c->split || c->dot_max_out ? p->split_k : 1;
    in->smem_bytes = c->smem_bytes;
    in->tiles = tiles;
    in->split_k = p->split_k;
    in->swapped = (uint32_t)pl->swapped;
    in->dense_a = (uint32_t)dense;
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
    const int swapped = swap_pays(dev, &d);
    const bc_gemm_desc k = swapped ? transposed(&d) : d;
    const bc__gemm_config *c = NULL;
    CUfunction fn = NULL;
    uint32_t split = 1;
    st = choose_config(dev, &k, &c, &split, &fn);
    if (st)
        return st;
    /* the caller's orientation, so that messages name the caller's operands */
    st = bc__gemm_check_memory(dev, &d, use_tma_store(&k, c), NULL);
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
    st = encode_maps(&pl->params, &k, c);
    if (st)
        goto fail_free;
    fill_params(pl, &k);
    pl->params.split_k = split;
    const uint32_t sms = (uint32_t)dev->info.sm_count;
    if (c->dot_max_out)
        dot_shape(&pl->params, sms);
    if (dense_flags(&k, c, &pl->params, launch_grid(c, &pl->params, sms)) && dev->image.fn[c->kernel_dense] != NULL) {
        pl->params.flags |= BC_GEMM_F_DENSE_A; /* the twin's dense-row kernel (loaded with it) */
        pl->fn = dev->image.fn[c->kernel_dense];
    }
    fill_launch(pl, sms);
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
        st = bc__gemm_check_memory(plan->dev, &nd, (plan->params.flags & BC_GEMM_F_TMA_STORE) != 0, NULL);
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
    free(plan);
}

void bc__plan_release(bc__link *node) { bc_gemm_plan_destroy((bc_gemm_plan *)node); }
