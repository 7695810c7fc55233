/* Micro-benchmark (not a test) of the TLSF pool: the cost of each alloc and
 * free call over a random storm on a 1 GiB fake range (never touched), and
 * the fragmentation the storm leaves behind.
 *
 *   build/bin/bench_tlsf [timed_ops]      (default 1000000 per configuration)
 *
 * Each call is timed on its own with rdtsc (calibrated against
 * CLOCK_MONOTONIC) on x86-64, clock_gettime elsewhere; the timer's own cost is
 * measured and printed, and is included in every figure. Sizes are
 * log-uniform from 1 B to below max_size = k * arena / max_live: k = 16 runs
 * the range close to full, k = 4 at moderate load. The storm keeps about 3/4
 * of max_live blocks live.
 *
 * A second table fills the pool to its capacity (100k+ live blocks, power of
 * two or not) and times, per call: a refused free of an interior pointer
 * (a miss in the address table, the slowest lookup), finding the block that
 * holds a random address (bc__tlsf_find, what plan-time operand checks use),
 * and a free + alloc pair of live blocks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlsf.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define ARENA (1ull << 30)
#define FAKE_BASE 0x7f0000000000ull
#define WARMUP_OPS 200000u

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static inline uint64_t ticks(void)
{
    _mm_lfence(); /* keep the read from drifting across the timed call */
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}
#define TIMER_NAME "rdtsc"
#else
static inline uint64_t ticks(void) { return mono_ns(); }
#define TIMER_NAME "clock_gettime"
#endif

static double ns_per_tick = 1.0;

static void calibrate(void)
{
    uint64_t n0 = mono_ns(), t0 = ticks();
    while (mono_ns() - n0 < 200000000u) /* 200 ms */
        ;
    uint64_t n1 = mono_ns(), t1 = ticks();
    ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
}

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* log-uniform in [1, 2^max_log2) */
static uint64_t pick_size(uint64_t *rng, unsigned max_log2)
{
    unsigned k = (unsigned)(rng_next(rng) % max_log2);
    return (1ull << k) + rng_next(rng) % (1ull << k);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

typedef struct lat {
    uint32_t *ns;
    size_t n;
} lat;

static void sort_lat(lat *l) { qsort(l->ns, l->n, sizeof(uint32_t), cmp_u32); }

static double pct(const lat *l, double p)
{
    if (l->n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(l->n - 1) + 0.5);
    return l->ns[i];
}

typedef struct result {
    uint32_t max_live, size_factor;
    lat alloc, free;
    uint64_t failed;
    bc_pool_stats stats;
} result;

/* One alloc or free of the storm; records its latency when `rec` is set. */
static int storm_step(bc__tlsf *pool, uint64_t *live, uint32_t *nlive, uint32_t max_live,
                      unsigned max_log2, uint64_t *rng, result *r, int rec)
{
    uint32_t target = max_live / 4 * 3;
    int do_alloc = *nlive == 0 || (rng_next(rng) % 100 < (*nlive < target ? 60u : 40u));
    if (do_alloc && *nlive < max_live) {
        uint64_t bytes = pick_size(rng, max_log2), addr;
        uint64_t t0 = ticks();
        bc_status st = bc__tlsf_alloc(pool, bytes, &addr);
        uint64_t t1 = ticks();
        if (st == BC_OK)
            live[(*nlive)++] = addr;
        else if (st != BC_ERR_POOL_EXHAUSTED)
            return -1;
        if (rec) {
            if (st == BC_OK)
                r->alloc.ns[r->alloc.n++] = (uint32_t)((double)(t1 - t0) * ns_per_tick);
            else
                r->failed++;
        }
        return 1;
    }
    if (*nlive == 0)
        return 0;
    uint32_t i = (uint32_t)(rng_next(rng) % *nlive);
    uint64_t addr = live[i];
    live[i] = live[--*nlive];
    uint64_t t0 = ticks();
    bc_status st = bc__tlsf_free(pool, addr);
    uint64_t t1 = ticks();
    if (st != BC_OK)
        return -1;
    if (rec)
        r->free.ns[r->free.n++] = (uint32_t)((double)(t1 - t0) * ns_per_tick);
    return 1;
}

static int run(uint32_t max_live, uint32_t size_factor, uint32_t ops, uint64_t seed, result *r)
{
    int rc = 1;
    bc__tlsf *pool = NULL;
    uint64_t *live = malloc(max_live * sizeof *live);
    r->alloc.ns = malloc(ops * sizeof(uint32_t));
    r->free.ns = malloc(ops * sizeof(uint32_t));
    if (!live || !r->alloc.ns || !r->free.ns || bc__tlsf_create(FAKE_BASE, ARENA, max_live, &pool))
        goto out;
    unsigned max_log2 = 0;
    while ((1ull << (max_log2 + 1)) <= size_factor * ARENA / max_live)
        max_log2++;
    uint32_t nlive = 0;
    for (uint32_t i = 0; i < WARMUP_OPS; i++)
        if (storm_step(pool, live, &nlive, max_live, max_log2, &seed, r, 0) < 0)
            goto out;
    for (uint32_t i = 0; i < ops; i++)
        if (storm_step(pool, live, &nlive, max_live, max_log2, &seed, r, 1) < 0)
            goto out;
    bc__tlsf_stats(pool, &r->stats);
    if (bc__tlsf_check(pool) != BC_OK)
        goto out;
    sort_lat(&r->alloc);
    sort_lat(&r->free);
    rc = 0;
out:
    bc__tlsf_destroy(pool);
    free(live);
    return rc;
}

/* Cost of an empty timed region, p50 over many samples. */
static double timer_overhead_ns(void)
{
    enum { N = 100001 };
    static uint32_t s[N];
    for (int i = 0; i < N; i++) {
        uint64_t t0 = ticks(), t1 = ticks();
        s[i] = (uint32_t)((double)(t1 - t0) * ns_per_tick);
    }
    qsort(s, N, sizeof *s, cmp_u32);
    return s[N / 2];
}

/* ---- full pool: lookups at capacity */

typedef struct full_result {
    uint32_t max_live, slots;
    lat miss, find, cycle;
    double miss_mean, find_mean;
} full_result;

static double mean_of(const lat *l)
{
    double sum = 0;
    for (size_t i = 0; i < l->n; i++)
        sum += l->ns[i];
    return l->n ? sum / (double)l->n : 0;
}

static int run_full(uint32_t max_live, uint32_t ops, uint64_t seed, full_result *r)
{
    int rc = 1;
    bc__tlsf *pool = NULL;
    uint64_t *live = malloc(max_live * sizeof *live);
    r->max_live = max_live;
    r->miss.ns = malloc(ops * sizeof(uint32_t));
    r->find.ns = malloc(ops * sizeof(uint32_t));
    r->cycle.ns = malloc(ops * sizeof(uint32_t));
    if (!live || !r->miss.ns || !r->find.ns || !r->cycle.ns || bc__tlsf_create(FAKE_BASE, ARENA, max_live, &pool))
        goto out;
    r->slots = bc__tlsf_table_slots(pool);
    for (uint32_t i = 0; i < max_live; i++) /* 256 B .. 4 KiB each: at most half the range */
        if (bc__tlsf_alloc(pool, 1 + rng_next(&seed) % 4096, &live[i]) != BC_OK)
            goto out;
    volatile int sink = 0;
    for (uint32_t i = 0; i < ops; i++) {
        const uint64_t interior = live[rng_next(&seed) % max_live] + 1 + rng_next(&seed) % 255;
        uint64_t t0 = ticks();
        bc_status st = bc__tlsf_free(pool, interior);
        uint64_t t1 = ticks();
        if (st != BC_ERR_DOUBLE_FREE)
            goto out;
        r->miss.ns[r->miss.n++] = (uint32_t)((double)(t1 - t0) * ns_per_tick);

        bc__tlsf_block b;
        const uint64_t any = FAKE_BASE + rng_next(&seed) % ARENA;
        t0 = ticks();
        sink += bc__tlsf_find(pool, any, &b);
        t1 = ticks();
        r->find.ns[r->find.n++] = (uint32_t)((double)(t1 - t0) * ns_per_tick);

        const uint32_t k = (uint32_t)(rng_next(&seed) % max_live);
        const uint64_t bytes = 1 + rng_next(&seed) % 4096;
        t0 = ticks();
        st = bc__tlsf_free(pool, live[k]);
        if (st == BC_OK)
            st = bc__tlsf_alloc(pool, bytes, &live[k]);
        t1 = ticks();
        if (st != BC_OK)
            goto out;
        r->cycle.ns[r->cycle.n++] = (uint32_t)((double)(t1 - t0) * ns_per_tick);
    }
    if (sink != (int)ops || bc__tlsf_check(pool) != BC_OK)
        goto out;
    r->miss_mean = mean_of(&r->miss);
    r->find_mean = mean_of(&r->find);
    sort_lat(&r->miss);
    sort_lat(&r->find);
    sort_lat(&r->cycle);
    rc = 0;
out:
    bc__tlsf_destroy(pool);
    free(live);
    return rc;
}

static void print_full(uint32_t ops)
{
    static const uint32_t caps[] = {100000, 131071, 131072, 250000};
    enum { NCAP = sizeof caps / sizeof *caps };
    printf("\nFull pool: max_live blocks live (256 B .. 4 KiB each) in the 1 GiB range, %u timed calls of\n"
           "each kind. miss = refused free of an interior pointer; find = block holding a random\n"
           "address; cycle = free + alloc of a random live block. Latencies in ns.\n\n",
           ops);
    printf("%8s %8s | %5s %5s %6s %6s %6s | %5s %5s %6s %6s %6s | %5s %5s %6s %6s\n", "max_live", "slots",
           "miss", "p50", "p99", "max", "mean", "find", "p50", "p99", "max", "mean", "cycle", "p50", "p99",
           "max");
    for (int c = 0; c < NCAP; c++) {
        full_result r;
        memset(&r, 0, sizeof r);
        if (run_full(caps[c], ops, 0xf011ull + (uint64_t)c, &r)) {
            fprintf(stderr, "bench_tlsf: full-pool run failed for max_live %u\n", caps[c]);
            exit(1);
        }
        printf("%8u %8u | %5s %5.0f %6.0f %6.0f %6.1f | %5s %5.0f %6.0f %6.0f %6.1f | %5s %5.0f %6.0f %6.0f\n",
               r.max_live, r.slots, "", pct(&r.miss, 0.5), pct(&r.miss, 0.99), pct(&r.miss, 1.0), r.miss_mean, "",
               pct(&r.find, 0.5), pct(&r.find, 0.99), pct(&r.find, 1.0), r.find_mean, "", pct(&r.cycle, 0.5),
               pct(&r.cycle, 0.99), pct(&r.cycle, 1.0));
        free(r.miss.ns);
        free(r.find.ns);
        free(r.cycle.ns);
    }
}

int main(int argc, char **argv)
{
    uint32_t ops = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000000u;
    static const uint32_t configs[][2] = {/* {max_live, k} */
                                          {4096, 16}, {16384, 16}, {65536, 16},
                                          {4096, 4},  {65536, 4}};
    enum { NCFG = sizeof configs / sizeof *configs };
    result res[NCFG];
    memset(res, 0, sizeof res);

    calibrate();
    double overhead = timer_overhead_ns();
    for (int c = 0; c < NCFG; c++) {
        res[c].max_live = configs[c][0];
        res[c].size_factor = configs[c][1];
        if (run(configs[c][0], configs[c][1], ops, 0x5eed0000u + (uint64_t)c, &res[c])) {
            fprintf(stderr, "bench_tlsf: storm failed for max_live %u\n", configs[c][0]);
            return 1;
        }
    }

    printf("TLSF alloc/free latency: 1 GiB fake range, %u warm-up + %u timed ops per row,\n"
           "sizes log-uniform 1 B .. max_size = k*arena/max_live, ~3/4 of max_live kept live.\n"
           "Timer %s (%.3f ns/tick), its own cost ~%.0f ns is included. Latencies in ns.\n\n",
           WARMUP_OPS, ops, TIMER_NAME, ns_per_tick, overhead);
    printf("%8s %2s | %7s %5s %5s %6s %6s | %7s %5s %5s %6s %6s | %6s %5s | %9s %9s %9s %6s\n",
           "max_live", "k", "allocs", "p50", "p99", "p99.9", "max", "frees", "p50", "p99", "p99.9",
           "max", "failed", "live", "in_use_MB", "free_MB", "lfree_MB", "frag");
    for (int c = 0; c < NCFG; c++) {
        const result *r = &res[c];
        const bc_pool_stats *s = &r->stats;
        printf("%8u %2u | %7zu %5.0f %5.0f %6.0f %6.0f | %7zu %5.0f %5.0f %6.0f %6.0f | %6llu %5u | "
               "%9.1f %9.1f %9.1f %6.3f\n",
               r->max_live, r->size_factor, r->alloc.n, pct(&r->alloc, 0.50), pct(&r->alloc, 0.99),
               pct(&r->alloc, 0.999), pct(&r->alloc, 1.0), r->free.n, pct(&r->free, 0.50),
               pct(&r->free, 0.99), pct(&r->free, 0.999), pct(&r->free, 1.0),
               (unsigned long long)r->failed, s->live_allocations, s->bytes_in_use / 1048576.0,
               s->total_free_bytes / 1048576.0, s->largest_free_block / 1048576.0,
               s->fragmentation);
        free(r->alloc.ns);
        free(r->free.ns);
    }
    printf("\nfailed = allocs refused with BC_ERR_POOL_EXHAUSTED (not in the latency columns);\n"
           "frag = 1 - largest free / total free after the storm (lfree = largest free block).\n");
    print_full(ops < 200000u ? ops : 200000u);
    return 0;
}
