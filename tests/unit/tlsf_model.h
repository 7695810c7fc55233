/* The TLSF unit tests' model and helpers: a sorted array of the live
 * [addr, addr + size) intervals from which every expectation is computed,
 * pools over a fake address range (never dereferenced), and a seeded size
 * generator. Include once, after cmocka.h and tlsf.h. */
#ifndef BC_TESTS_TLSF_MODEL_H
#define BC_TESTS_TLSF_MODEL_H

#define A BC_MEM_ALIGN
#define MiB (1ull << 20)
#define FAKE_BASE 0x7f1200000000ull /* any A-aligned address; nothing is mapped there */
#define SENTINEL 0xdeadbeefcafef00dull

static uint64_t round_a(uint64_t bytes) { return (bytes + A - 1) / A * A; }

/* ---------------------------------------------------------------- model */

typedef struct model {
    uint64_t base, arena;
    uint32_t count, cap;
    uint64_t *addr, *size; /* sorted by addr */
    uint64_t in_use, peak;
} model;

static void model_init(model *m, uint64_t base, uint64_t arena, uint32_t cap)
{
    *m = (model){.base = base, .arena = arena, .cap = cap};
    m->addr = calloc(cap + 1, sizeof *m->addr);
    m->size = calloc(cap + 1, sizeof *m->size);
    assert_non_null(m->addr);
    assert_non_null(m->size);
}

static void model_fini(model *m)
{
    free(m->addr);
    free(m->size);
}

/* Index of the first interval with addr >= a. */
static uint32_t model_lower(const model *m, uint64_t a)
{
    uint32_t lo = 0, hi = m->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->addr[mid] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int model_is_live(const model *m, uint64_t a)
{
    uint32_t i = model_lower(m, a);
    return i < m->count && m->addr[i] == a;
}

static void model_add(model *m, uint64_t a, uint64_t size)
{
    assert_true(m->count < m->cap);
    uint32_t i = model_lower(m, a);
    memmove(&m->addr[i + 1], &m->addr[i], (m->count - i) * sizeof *m->addr);
    memmove(&m->size[i + 1], &m->size[i], (m->count - i) * sizeof *m->size);
    m->addr[i] = a;
    m->size[i] = size;
    m->count++;
    m->in_use += size;
    if (m->in_use > m->peak)
        m->peak = m->in_use;
}

static void model_remove(model *m, uint64_t a)
{
    uint32_t i = model_lower(m, a);
    assert_true(i < m->count && m->addr[i] == a);
    m->in_use -= m->size[i];
    memmove(&m->addr[i], &m->addr[i + 1], (m->count - i - 1) * sizeof *m->addr);
    memmove(&m->size[i], &m->size[i + 1], (m->count - i - 1) * sizeof *m->size);
    m->count--;
}

/* Largest gap between live intervals: with immediate coalescing, the free
 * blocks are exactly these gaps. */
static uint64_t model_largest_gap(const model *m)
{
    uint64_t at = m->base, largest = 0;
    for (uint32_t i = 0; i < m->count; i++) {
        if (m->addr[i] - at > largest)
            largest = m->addr[i] - at;
        at = m->addr[i] + m->size[i];
    }
    if (m->base + m->arena - at > largest)
        largest = m->base + m->arena - at;
    return largest;
}

/* Every interval aligned, inside the range, no overlap; stats equal to the
 * values the model implies. */
static void model_verify(const model *m, const bc__tlsf *pool)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < m->count; i++) {
        assert_int_equal(m->addr[i] % A, 0);
        assert_true(m->size[i] > 0);
        assert_true(m->addr[i] >= m->base);
        assert_true(m->addr[i] + m->size[i] <= m->base + m->arena);
        if (i + 1 < m->count)
            assert_true(m->addr[i] + m->size[i] <= m->addr[i + 1]);
        sum += m->size[i];
    }
    assert_int_equal(sum, m->in_use);

    bc_pool_stats s;
    memset(&s, 0xa5, sizeof s);
    bc__tlsf_stats(pool, &s);
    uint64_t largest = model_largest_gap(m), total_free = m->arena - sum;
    double frag = total_free ? 1.0 - (double)largest / (double)total_free : 0.0;
    assert_int_equal(s.arena_bytes, m->arena);
    assert_int_equal(s.bytes_in_use, sum);
    assert_int_equal(s.peak_bytes_in_use, m->peak);
    assert_int_equal(s.live_allocations, m->count);
    assert_int_equal(s.total_free_bytes, total_free);
    assert_int_equal(s.largest_free_block, largest);
    assert_true(fabs(s.fragmentation - frag) < 1e-12);
}

static void check_ok(const bc__tlsf *pool) { assert_int_equal(bc__tlsf_check(pool), BC_OK); }

/* The thread's last error must name the status just returned. */
static void assert_last_error(bc_status st)
{
    bc_error_detail d;
    assert_int_equal(bc_last_error(&d), BC_OK);
    assert_int_equal(d.status, st);
    assert_true(d.message[0] != '\0');
}

static bc__tlsf *make_pool(uint64_t base, uint64_t arena, uint32_t max_live)
{
    bc__tlsf *pool = NULL;
    assert_int_equal(bc__tlsf_create(base, arena, max_live, &pool), BC_OK);
    assert_non_null(pool);
    check_ok(pool);
    return pool;
}

/* Allocates through the pool and mirrors success into the model. */
static uint64_t alloc_ok(bc__tlsf *pool, model *m, uint64_t bytes)
{
    uint64_t a = SENTINEL;
    assert_int_equal(bc__tlsf_alloc(pool, bytes, &a), BC_OK);
    assert_true(a != SENTINEL);
    model_add(m, a, round_a(bytes));
    model_verify(m, pool);
    return a;
}

static void free_ok(bc__tlsf *pool, model *m, uint64_t a)
{
    assert_int_equal(bc__tlsf_free(pool, a), BC_OK);
    model_remove(m, a);
    model_verify(m, pool);
}

/* ---------------------------------------------------------------- rng */

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned log2u(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }

/* Sizes from 1 B to `max`: small odd sizes, power-of-two and A-multiple
 * boundaries (2^k - 1, 2^k, 2^k + 1), and log-uniform sizes. */
static uint64_t pick_size(uint64_t *rng, uint64_t max)
{
    uint64_t r = rng_next(rng), v;
    switch (r % 8) {
    case 0:
    case 1:
    case 2:
        v = 1 + rng_next(rng) % 4096;
        break;
    case 3:
        v = (1ull << (rng_next(rng) % (log2u(max) + 1))) + rng_next(rng) % 3 - 1;
        break;
    case 4:
        v = A * (1 + rng_next(rng) % 64) + rng_next(rng) % 3 - 1;
        break;
    default: {
        unsigned k = (unsigned)(rng_next(rng) % log2u(max));
        v = (1ull << k) + rng_next(rng) % (1ull << k);
    }
    }
    if (v == 0)
        v = 1;
    return v > max ? max : v;
}

#endif
