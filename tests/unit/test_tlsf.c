/* Unit tests of the TLSF allocator (runtime/tlsf.c), driven directly over a
 * fake address range (never dereferenced). Every expectation is computed
 * from a model (tlsf_model.h): a sorted array of the live [addr, addr + size)
 * intervals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlsf.h"

#include "tlsf_model.h"

/* ---------------------------------------------------------------- tests */

static void test_create_rejects_bad_arguments(void **state)
{
    bc__tlsf *pool = (bc__tlsf *)(uintptr_t)SENTINEL;
    assert_int_equal(bc__tlsf_create(FAKE_BASE + 1, MiB, 16, &pool), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__tlsf_create(FAKE_BASE, MiB, 0, &pool), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__tlsf_create(FAKE_BASE, A - 1, 16, &pool), BC_ERR_BAD_SIZE);
    assert_int_equal(bc__tlsf_create(FAKE_BASE, 0, 16, &pool), BC_ERR_BAD_SIZE);
    assert_int_equal(bc__tlsf_create(0ull - MiB, 2 * MiB, 16, &pool),
                     BC_ERR_INVALID_ARGUMENT); /* aligned, but the range wraps */
    assert_last_error(BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__tlsf_create(FAKE_BASE, MiB, 16, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_true(pool == (bc__tlsf *)(uintptr_t)SENTINEL); /* untouched on failure */
    bc__tlsf_destroy(NULL);
}

/* A size that is not a multiple of A is rounded down; contains() follows it. */
static void test_range_and_contains(void **state)
{
    const uint64_t arena = MiB + 3 * A + 17;
    bc__tlsf *pool = make_pool(FAKE_BASE, arena, 8);
    model m;
    model_init(&m, FAKE_BASE, MiB + 3 * A, 8);
    model_verify(&m, pool);
    assert_true(bc__tlsf_contains(pool, FAKE_BASE));
    assert_true(bc__tlsf_contains(pool, FAKE_BASE + MiB + 3 * A - 1));
    assert_false(bc__tlsf_contains(pool, FAKE_BASE + MiB + 3 * A));
    assert_false(bc__tlsf_contains(pool, FAKE_BASE - 1));
    assert_false(bc__tlsf_contains(pool, 0));
    /* The whole (non-class-boundary) range is one allocation when empty. */
    uint64_t a = alloc_ok(pool, &m, MiB + 3 * A);
    assert_int_equal(a, FAKE_BASE);
    free_ok(pool, &m, a);
    check_ok(pool);
    model_fini(&m);
    bc__tlsf_destroy(pool);
}

static void test_alignment_and_rounding(void **state)
{
    const uint32_t n = 600;
    bc__tlsf *pool = make_pool(FAKE_BASE, 256 * MiB, n);
    model m;
    model_init(&m, FAKE_BASE, 256 * MiB, n);
    uint64_t sizes[] = {1, 2, 255, 256, 257, 511, 512, 513, 4095, 4096, 4097, 8191, 8192, 8193,
                        65535, 65536, 65537, 1000000, (1u << 20) - 1, 1u << 20, (1u << 20) + 1};
    for (uint32_t i = 0; i < n; i++) {
        uint64_t bytes = i < sizeof sizes / sizeof *sizes ? sizes[i] : 1 + (i * 7919u) % 100000;
        uint64_t a = alloc_ok(pool, &m, bytes);
        assert_int_equal(a % A, 0);
    }
    check_ok(pool);
    /* free every other block, then the rest: coalesces back to one block */
    uint64_t *live = calloc(n, sizeof *live);
    assert_non_null(live);
    memcpy(live, m.addr, n * sizeof *live);
    for (uint32_t i = 0; i < n; i += 2)
        free_ok(pool, &m, live[i]);
    check_ok(pool);
    for (uint32_t i = 1; i < n; i += 2)
        free_ok(pool, &m, live[i]);
    check_ok(pool);
    bc_pool_stats s;
    bc__tlsf_stats(pool, &s);
    assert_int_equal(s.largest_free_block, 256 * MiB);
    free(live);
    model_fini(&m);
    bc__tlsf_destroy(pool);
}

static void test_exhaustion_and_recovery(void **state)
{
    const uint64_t arena = MiB;
    const uint32_t units = (uint32_t)(arena / A);
    /* one spare live slot, so the limit is space, not the block count */
    bc__tlsf *pool = make_pool(FAKE_BASE, arena, units + 1);
    model m;
    model_init(&m, FAKE_BASE, arena, units + 1);

    for (int round = 0; round < 2; round++) {
        for (uint32_t i = 0; i < units; i++)
            alloc_ok(pool, &m, i % 2 ? A : 1);
        bc_pool_stats s;
        bc__tlsf_stats(pool, &s);
        assert_int_equal(s.total_free_bytes, 0);
        assert_true(s.fragmentation == 0.0);
        uint64_t a = SENTINEL;
        assert_int_equal(bc__tlsf_alloc(pool, 1, &a), BC_ERR_POOL_EXHAUSTED);
        assert_last_error(BC_ERR_POOL_EXHAUSTED);
        assert_int_equal(a, SENTINEL);
        model_verify(&m, pool);
        check_ok(pool);
        /* free from the top down: exercises merge-with-next */
        while (m.count > 0)
            free_ok(pool, &m, m.addr[m.count - 1]);
        check_ok(pool);
    }

    /* whole arena at once, then nothing fits, then it comes back */
    uint64_t all = alloc_ok(pool, &m, arena);
    uint64_t a = SENTINEL;
    assert_int_equal(bc__tlsf_alloc(pool, 1, &a), BC_ERR_POOL_EXHAUSTED);
    assert_int_equal(a, SENTINEL);
    free_ok(pool, &m, all);
    alloc_ok(pool, &m, arena / 2 + 1);
    assert_int_equal(bc__tlsf_alloc(pool, arena / 2, &a), BC_ERR_POOL_EXHAUSTED);
    model_verify(&m, pool);
    alloc_ok(pool, &m, arena / 2 - A); /* exactly what is left */
    check_ok(pool);
    model_fini(&m);
    bc__tlsf_destroy(pool);
}

/* Six blocks of different sizes tile the arena exactly; freeing them in each
 * of the 720 orders must re-form one free block. */
static void test_coalesce_every_order(void **state)
{
    static const uint64_t sizes[6] = {A, 3 * A, 64 * A, 5 * A, 1000 * A, 7 * A};
    uint64_t arena = 0;
    for (int i = 0; i < 6; i++)
        arena += sizes[i];
    int perm[6] = {0, 1, 2, 3, 4, 5};
    int orders = 0;
    for (;;) {
        bc__tlsf *pool = make_pool(FAKE_BASE, arena, 6);
        model m;
        model_init(&m, FAKE_BASE, arena, 6);
        uint64_t addr[6];
        for (int i = 0; i < 6; i++)
            addr[i] = alloc_ok(pool, &m, sizes[i]);
        assert_int_equal(m.in_use, arena); /* tiled exactly */
        for (int i = 0; i < 6; i++) {
            free_ok(pool, &m, addr[perm[i]]);
            check_ok(pool);
        }
        bc_pool_stats s;
        bc__tlsf_stats(pool, &s);
        assert_int_equal(s.largest_free_block, arena);
        assert_true(s.fragmentation == 0.0);
        model_fini(&m);
        bc__tlsf_destroy(pool);
        orders++;
        /* next permutation in lexicographic order */
        int k = 4;
        while (k >= 0 && perm[k] > perm[k + 1])
            k--;
        if (k < 0)
            break;
        int l = 5;
        while (perm[l] < perm[k])
            l--;
        int t = perm[k];
        perm[k] = perm[l];
        perm[l] = t;
        for (int i = k + 1, j = 5; i < j; i++, j--) {
            t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
    assert_int_equal(orders, 720);
}

/* Field by field: the struct has padding. */
static void assert_stats_equal(const bc_pool_stats *x, const bc_pool_stats *y)
{
    assert_int_equal(x->arena_bytes, y->arena_bytes);
    assert_int_equal(x->bytes_in_use, y->bytes_in_use);
    assert_int_equal(x->peak_bytes_in_use, y->peak_bytes_in_use);
    assert_int_equal(x->largest_free_block, y->largest_free_block);
    assert_int_equal(x->total_free_bytes, y->total_free_bytes);
    assert_true(x->fragmentation == y->fragmentation);
    assert_int_equal(x->live_allocations, y->live_allocations);
}

/* Each failing call returns its status, leaves *out untouched and the pool
 * the same in stats and invariants. */
static void expect_alloc_error(bc__tlsf *pool, uint64_t bytes, bc_status want)
{
    bc_pool_stats before, after;
    bc__tlsf_stats(pool, &before);
    uint64_t a = SENTINEL;
    assert_int_equal(bc__tlsf_alloc(pool, bytes, &a), want);
    assert_last_error(want);
    assert_int_equal(a, SENTINEL);
    bc__tlsf_stats(pool, &after);
    assert_stats_equal(&before, &after);
    check_ok(pool);
}

static void expect_free_error(bc__tlsf *pool, uint64_t addr, bc_status want)
{
    bc_pool_stats before, after;
    bc__tlsf_stats(pool, &before);
    assert_int_equal(bc__tlsf_free(pool, addr), want);
    assert_last_error(want);
    bc__tlsf_stats(pool, &after);
    assert_stats_equal(&before, &after);
    check_ok(pool);
}

static void test_errors_change_nothing(void **state)
{
    const uint64_t arena = 4 * MiB;
    bc__tlsf *pool = make_pool(FAKE_BASE, arena, 4);
    model m;
    model_init(&m, FAKE_BASE, arena, 4);
    uint64_t a0 = alloc_ok(pool, &m, MiB);
    uint64_t a1 = alloc_ok(pool, &m, 3 * A);
    uint64_t a2 = alloc_ok(pool, &m, MiB);
    free_ok(pool, &m, a0); /* leaves a hole: fragmentation > 0 */

    expect_alloc_error(pool, 0, BC_ERR_BAD_SIZE);
    expect_alloc_error(pool, arena + 1, BC_ERR_BAD_SIZE);
    expect_alloc_error(pool, UINT64_MAX, BC_ERR_BAD_SIZE);
    expect_alloc_error(pool, 2 * MiB + A, BC_ERR_POOL_EXHAUSTED);
    expect_free_error(pool, a0, BC_ERR_DOUBLE_FREE);          /* double free */
    expect_free_error(pool, a1 + 1, BC_ERR_DOUBLE_FREE);      /* interior */
    expect_free_error(pool, a1 + A, BC_ERR_DOUBLE_FREE);      /* interior, aligned */
    expect_free_error(pool, a2 + MiB, BC_ERR_DOUBLE_FREE);    /* free space */
    expect_free_error(pool, FAKE_BASE - A, BC_ERR_FOREIGN_POINTER);
    expect_free_error(pool, FAKE_BASE + arena, BC_ERR_FOREIGN_POINTER);
    expect_free_error(pool, 0, BC_ERR_FOREIGN_POINTER);
    expect_free_error(pool, UINT64_MAX, BC_ERR_FOREIGN_POINTER);
    model_verify(&m, pool);

    alloc_ok(pool, &m, 1);
    alloc_ok(pool, &m, 1);
    assert_int_equal(m.count, 4);
    expect_alloc_error(pool, 1, BC_ERR_TOO_MANY_BLOCKS);
    free_ok(pool, &m, a1);
    alloc_ok(pool, &m, 1); /* a slot is back */
    expect_alloc_error(pool, 1, BC_ERR_TOO_MANY_BLOCKS);

    uint64_t a = SENTINEL;
    assert_int_equal(bc__tlsf_alloc(pool, 1, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__tlsf_alloc(NULL, 1, &a), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__tlsf_free(NULL, a2), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__tlsf_check(NULL), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(a, SENTINEL);
    model_verify(&m, pool);
    check_ok(pool);
    model_fini(&m);
    bc__tlsf_destroy(pool);
}

/* Hand-computed peak and fragmentation. */
static void test_stats_by_hand(void **state)
{
    bc__tlsf *pool = make_pool(FAKE_BASE, 4 * MiB, 16);
    model m;
    model_init(&m, FAKE_BASE, 4 * MiB, 16);
    uint64_t q[4];
    for (int i = 0; i < 4; i++)
        q[i] = alloc_ok(pool, &m, MiB);
    free_ok(pool, &m, q[0]);
    free_ok(pool, &m, q[2]);
    bc_pool_stats s;
    bc__tlsf_stats(pool, &s);
    assert_int_equal(s.bytes_in_use, 2 * MiB);
    assert_int_equal(s.peak_bytes_in_use, 4 * MiB);
    assert_int_equal(s.total_free_bytes, 2 * MiB);
    assert_int_equal(s.largest_free_block, MiB);
    assert_true(s.fragmentation == 0.5);
    assert_int_equal(s.live_allocations, 2);
    free_ok(pool, &m, q[1]); /* q0..q2 merge: 3 MiB of 3 MiB free */
    bc__tlsf_stats(pool, &s);
    assert_int_equal(s.largest_free_block, 3 * MiB);
    assert_true(s.fragmentation == 0.0);
    assert_int_equal(s.peak_bytes_in_use, 4 * MiB);
    model_fini(&m);
    bc__tlsf_destroy(pool);
}

/* A capacity far above what the range can hold is sized down to it: 64 KiB
 * (256 units) with max_live 2^24 gets the tables of 257 live blocks, not of
 * 2^24 (hundreds of MiB of host memory), and still fills to the last unit
 * and then answers BC_ERR_POOL_EXHAUSTED. */
static void test_capacity_sized_to_the_range(void **state)
{
    bc__tlsf *pool = make_pool(FAKE_BASE, 64 * 1024, 1u << 24);
    assert_true(bc__tlsf_table_slots(pool) <= 1024); /* a power of two >= 2 x 257 */
    uint64_t a = 0;
    for (int i = 0; i < 256; i++)
        assert_int_equal(bc__tlsf_alloc(pool, A, &a), BC_OK);
    assert_int_equal(bc__tlsf_alloc(pool, A, &a), BC_ERR_POOL_EXHAUSTED);
    check_ok(pool);
    bc__tlsf_destroy(pool);
}

/* Tiny and odd table sizes: max_live 1, 3, 5. */
static void test_small_tables(void **state)
{
    for (uint32_t max_live = 1; max_live <= 5; max_live += 2) {
        bc__tlsf *pool = make_pool(FAKE_BASE, MiB, max_live);
        model m;
        model_init(&m, FAKE_BASE, MiB, max_live);
        uint64_t rng = max_live;
        for (int step = 0; step < 20000; step++) {
            if (m.count < max_live && (m.count == 0 || rng_next(&rng) % 2)) {
                alloc_ok(pool, &m, 1 + rng_next(&rng) % (MiB / 8));
            } else if (m.count == max_live && rng_next(&rng) % 4 == 0) {
                expect_alloc_error(pool, 1, BC_ERR_TOO_MANY_BLOCKS);
            } else {
                free_ok(pool, &m, m.addr[rng_next(&rng) % m.count]);
            }
            if (step % 16 == 0)
                check_ok(pool);
        }
        model_fini(&m);
        bc__tlsf_destroy(pool);
    }
}

/* ---------------------------------------------------------------- storms */

typedef struct storm_cfg {
    uint64_t seed, arena;
    uint32_t max_live, steps;
    int expect_exhausted; /* this configuration must run out of space */
    int expect_too_many;  /* this configuration must hit the live-block limit */
} storm_cfg;

/* The allocator's bounded guarantee (tlsf.h): a request of u units succeeds
 * whenever a free block of u + u/32 units exists. */
static uint64_t guaranteed_fit(uint64_t bytes)
{
    uint64_t u = round_a(bytes) / A;
    return (u + u / 32) * A;
}

/* bc__tlsf_find on `probe` agrees with the model: inside a live interval it
 * names that interval, elsewhere in the range it reports free space. */
static void expect_find(const bc__tlsf *pool, const model *m, uint64_t probe)
{
    bc__tlsf_block b = {SENTINEL, SENTINEL, -1};
    if (!(probe >= m->base && probe < m->base + m->arena)) {
        assert_int_equal(bc__tlsf_find(pool, probe, &b), 0);
        return;
    }
    assert_int_equal(bc__tlsf_find(pool, probe, &b), 1);
    uint32_t i = model_lower(m, probe + 1); /* first interval starting after probe */
    if (i > 0 && probe < m->addr[i - 1] + m->size[i - 1]) {
        assert_int_equal(b.live, 1);
        assert_int_equal(b.addr, m->addr[i - 1]);
        assert_int_equal(b.size, m->size[i - 1]);
    } else {
        assert_int_equal(b.live, 0);
        assert_int_equal(b.size, 0);
        assert_true(b.addr <= probe);
        assert_true(i == 0 || b.addr >= m->addr[i - 1] + m->size[i - 1]); /* the gap's start */
    }
}

static void run_storm(void **state)
{
    const storm_cfg *c = *state;
    const uint64_t arena = c->arena / A * A; /* what the pool manages */
    const uint64_t max_req = arena / 8;
    bc__tlsf *pool = make_pool(FAKE_BASE, c->arena, c->max_live);
    model m;
    model_init(&m, FAKE_BASE, arena, c->max_live);
    uint64_t rng = c->seed;
    uint32_t n_alloc = 0, n_free = 0, n_exhausted = 0, n_too_many = 0, n_bad_free = 0, n_find = 0;

    for (uint32_t step = 0; step < c->steps; step++) {
        /* alternate alloc-heavy and free-heavy phases to reach both limits */
        uint64_t r = rng_next(&rng) % 100;
        int alloc_pct = (step / 4096) % 2 ? 75 : 35;
        if (r >= 97) { /* the block holding an address: live starts, interiors, gaps, outside */
            uint64_t probe = FAKE_BASE - A + rng_next(&rng) % (arena + 2 * A);
            if (m.count && rng_next(&rng) % 2) {
                uint32_t k = (uint32_t)(rng_next(&rng) % m.count);
                probe = m.addr[k] + rng_next(&rng) % (m.size[k] + A);
            }
            expect_find(pool, &m, probe);
            n_find++;
            continue;
        }
        if (r < 2) {
            /* free of an arbitrary address: the model decides the outcome */
            uint64_t probe;
            switch (rng_next(&rng) % 4) {
            case 0:
                probe = m.count ? m.addr[rng_next(&rng) % m.count] + 1 + rng_next(&rng) % 512 : 0;
                break;
            case 1:
                probe = FAKE_BASE + rng_next(&rng) % arena / A * A;
                break;
            case 2:
                probe = FAKE_BASE - A + rng_next(&rng) % 2 * (arena + A);
                break;
            default:
                probe = m.count ? m.addr[rng_next(&rng) % m.count] : FAKE_BASE;
            }
            if (!(probe >= FAKE_BASE && probe < FAKE_BASE + arena)) {
                expect_free_error(pool, probe, BC_ERR_FOREIGN_POINTER);
                n_bad_free++;
            } else if (!model_is_live(&m, probe)) {
                expect_free_error(pool, probe, BC_ERR_DOUBLE_FREE);
                n_bad_free++;
            } else {
                free_ok(pool, &m, probe);
                n_free++;
            }
        } else if (m.count == 0 || r < (uint64_t)alloc_pct) {
            uint64_t bytes = pick_size(&rng, max_req), a = SENTINEL;
            bc_status st = bc__tlsf_alloc(pool, bytes, &a);
            if (st == BC_OK) {
                assert_true(m.count < c->max_live);
                model_add(&m, a, round_a(bytes));
                n_alloc++;
            } else if (st == BC_ERR_TOO_MANY_BLOCKS) {
                assert_int_equal(m.count, c->max_live);
                assert_int_equal(a, SENTINEL);
                n_too_many++;
            } else {
                assert_int_equal(st, BC_ERR_POOL_EXHAUSTED);
                assert_true(m.count < c->max_live);
                assert_true(model_largest_gap(&m) < guaranteed_fit(bytes));
                assert_int_equal(a, SENTINEL);
                n_exhausted++;
            }
        } else {
            free_ok(pool, &m, m.addr[rng_next(&rng) % m.count]);
            n_free++;
        }
        model_verify(&m, pool);
        if (step % 64 == 0)
            check_ok(pool);
    }
    check_ok(pool);
    while (m.count > 0)
        free_ok(pool, &m, m.addr[rng_next(&rng) % m.count]);
    check_ok(pool);
    bc_pool_stats s;
    bc__tlsf_stats(pool, &s);
    assert_int_equal(s.largest_free_block, arena);

    print_message("storm seed %llu: %u allocs, %u frees, %u exhausted, %u too-many, %u bad frees, "
                  "peak %llu of %llu bytes\n",
                  (unsigned long long)c->seed, n_alloc, n_free, n_exhausted, n_too_many, n_bad_free,
                  (unsigned long long)m.peak, (unsigned long long)arena);
    /* the storm must actually have exercised every path */
    assert_true(n_alloc > c->steps / 4);
    assert_true(n_bad_free > 0);
    assert_true(n_find > c->steps / 50);
    if (c->expect_exhausted)
        assert_true(n_exhausted > 0);
    if (c->expect_too_many)
        assert_true(n_too_many > 0);
    model_fini(&m);
    bc__tlsf_destroy(pool);
}

/* Any capacity, power of two or not: the address table is at most half
 * full. Filled to a non-power-of-two capacity of 131071 blocks, frees of
 * interior pointers are refused and the block holding every address is
 * found; the pool's invariants hold throughout. */
static void test_any_capacity(void **state)
{
    static const uint32_t caps[] = {1, 2, 3, 5, 63, 64, 65, 1000, 4095, 4096, 4097, 100000, 131071, 131072};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        bc__tlsf *pool = make_pool(FAKE_BASE, 64 * MiB, caps[i]);
        uint32_t slots = bc__tlsf_table_slots(pool);
        assert_true(slots >= 2ull * caps[i]);
        assert_true(slots < 4ull * caps[i] || slots == 2);
        assert_int_equal(slots & (slots - 1), 0);
        bc__tlsf_destroy(pool);
    }
    const uint32_t cap = 131071;
    bc__tlsf *pool = make_pool(FAKE_BASE, (uint64_t)cap * 2 * A, cap);
    model m;
    model_init(&m, FAKE_BASE, (uint64_t)cap * 2 * A, cap);
    uint64_t rng = 7;
    for (uint32_t i = 0; i < cap; i++) { /* one unit each (model_verify once, at the end: O(n)) */
        uint64_t bytes = 1 + rng_next(&rng) % A, a = SENTINEL;
        assert_int_equal(bc__tlsf_alloc(pool, bytes, &a), BC_OK);
        model_add(&m, a, round_a(bytes));
    }
    model_verify(&m, pool);
    expect_alloc_error(pool, 1, BC_ERR_TOO_MANY_BLOCKS);
    uint32_t kept = 0; /* free every third block; compact the model in one pass */
    for (uint32_t i = 0; i < cap; i++) {
        if (i % 3 == 0) {
            assert_int_equal(bc__tlsf_free(pool, m.addr[i]), BC_OK);
            m.in_use -= m.size[i];
            continue;
        }
        m.addr[kept] = m.addr[i], m.size[kept] = m.size[i], kept++;
    }
    m.count = kept;
    check_ok(pool);
    model_verify(&m, pool);
    for (uint32_t i = 0; i < 20000; i++) { /* (expect_free_error's full check is O(n): once below) */
        uint64_t live = m.addr[rng_next(&rng) % m.count];
        assert_int_equal(bc__tlsf_free(pool, live + 1 + rng_next(&rng) % (A - 1)), BC_ERR_DOUBLE_FREE);
        expect_find(pool, &m, FAKE_BASE + rng_next(&rng) % m.arena);
        expect_find(pool, &m, live + rng_next(&rng) % A);
    }
    check_ok(pool);
    model_fini(&m);
    bc__tlsf_destroy(pool);
}

static storm_cfg storm1 = {.seed = 1, .arena = 64 * MiB, .max_live = 256, .steps = 150000,
                           .expect_exhausted = 1, .expect_too_many = 1};
static storm_cfg storm2 = {.seed = 0x5eed, .arena = 64 * MiB + 3 * A + 5, .max_live = 1000,
                           .steps = 150000, .expect_exhausted = 1};
static storm_cfg storm3 = {.seed = 42, .arena = 8 * MiB, .max_live = 64, .steps = 150000,
                           .expect_too_many = 1};
static storm_cfg storm4 = {.seed = 0xdecafbad, .arena = 256 * MiB, .max_live = 4096,
                           .steps = 150000, .expect_exhausted = 1};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rejects_bad_arguments),
        cmocka_unit_test(test_range_and_contains),
        cmocka_unit_test(test_alignment_and_rounding),
        cmocka_unit_test(test_exhaustion_and_recovery),
        cmocka_unit_test(test_capacity_sized_to_the_range),
        cmocka_unit_test(test_coalesce_every_order),
        cmocka_unit_test(test_errors_change_nothing),
        cmocka_unit_test(test_stats_by_hand),
        cmocka_unit_test(test_small_tables),
        cmocka_unit_test(test_any_capacity),
        {"storm_64MiB_256_live", run_storm, NULL, NULL, &storm1},
        {"storm_64MiB_odd_size_1000_live", run_storm, NULL, NULL, &storm2},
        {"storm_8MiB_64_live", run_storm, NULL, NULL, &storm3},
        {"storm_256MiB_4096_live", run_storm, NULL, NULL, &storm4},
    };
    return cmocka_run_group_tests_name("tlsf", tests, NULL, NULL);
}
