/* TLSF over an untouched address range; all metadata in host tables.
 *
 * Sizes are handled in units of BC_MEM_ALIGN bytes. A block of u units is in
 * size class (fl, sl): u < SL_COUNT maps linearly to fl 0, sl u; otherwise
 * fl = msb(u) - SL_BITS + 1 and sl = the SL_BITS bits below the msb. An
 * allocation rounds u up to the next class boundary ("good fit"), so the head
 * of any list at or above that class fits without looking further.
 */
#include <stdlib.h>
#include <string.h>

#include "bitidx.h"
#include "error.h"
#include "tlsf.h"

#define ALIGN_SHIFT 8u /* log2(BC_MEM_ALIGN) */
#define SL_BITS 5u
#define SL_COUNT (1u << SL_BITS)
#define FL_COUNT 52u /* u < 2^56, so msb(u) <= 55 and fl <= 51 */
#define NIL UINT32_MAX
#define MAX_LIVE_LIMIT (1u << 30) /* keeps 2 * max_live + 1 node indices below NIL */

_Static_assert((1u << ALIGN_SHIFT) == BC_MEM_ALIGN, "ALIGN_SHIFT must match BC_MEM_ALIGN");

typedef struct node {
    uint64_t addr, size;          /* the block [addr, addr + size) */
    uint32_t prev_phys, next_phys; /* address-order neighbours, NIL at the ends */
    uint32_t prev_free, next_free; /* free-list links; next_free also links unused nodes */
    uint8_t is_free;
} node;

struct bc__tlsf {
    uint64_t base, size;
    uint32_t max_live, node_count;
    node *nodes;
    uint32_t spare;     /* stack of unused nodes, linked through next_free */
    uint32_t spare_count;
    uint32_t first;     /* node of the block at base */
    uint32_t *table;    /* open addressing: live block addr -> node, NIL = empty */
    uint32_t table_mask, table_shift;
    bc__bitidx starts;  /* one bit per unit: a block (live or free) starts there */
    uint64_t fl_map;
    uint32_t sl_map[FL_COUNT];
    uint32_t heads[FL_COUNT][SL_COUNT];
    uint64_t in_use, peak;
    uint32_t live;
};

static unsigned msb64(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }

static void mapping(uint64_t units, uint32_t *fl, uint32_t *sl)
{
    if (units < SL_COUNT) {
        *fl = 0;
        *sl = (uint32_t)units;
        return;
    }
    unsigned m = msb64(units);
    *fl = m - SL_BITS + 1;
    *sl = (uint32_t)(units >> (m - SL_BITS)) - SL_COUNT;
}

/* ---------------------------------------------------------------- free lists */

static void list_insert(bc__tlsf *p, uint32_t i)
{
    node *n = &p->nodes[i];
    uint32_t fl, sl;
    mapping(n->size >> ALIGN_SHIFT, &fl, &sl);
    uint32_t head = p->heads[fl][sl];
    n->is_free = 1;
    n->prev_free = NIL;
    n->next_free = head;
    if (head != NIL)
        p->nodes[head].prev_free = i;
    p->heads[fl][sl] = i;
    p->sl_map[fl] |= 1u << sl;
    p->fl_map |= 1ull << fl;
}

static void list_remove(bc__tlsf *p, uint32_t i)
{
    node *n = &p->nodes[i];
    uint32_t fl, sl;
    mapping(n->size >> ALIGN_SHIFT, &fl, &sl);
    if (n->prev_free != NIL)
        p->nodes[n->prev_free].next_free = n->next_free;
    else
        p->heads[fl][sl] = n->next_free;
    if (n->next_free != NIL)
        p->nodes[n->next_free].prev_free = n->prev_free;
    if (p->heads[fl][sl] == NIL) {
        p->sl_map[fl] &= ~(1u << sl);
        if (p->sl_map[fl] == 0)
            p->fl_map &= ~(1ull << fl);
    }
    n->is_free = 0;
    n->prev_free = n->next_free = NIL;
}

/* First non-empty list at class (fl, sl) or above; NIL if none. */
static uint32_t find_at_or_above(const bc__tlsf *p, uint32_t fl, uint32_t sl)
{
    if (fl >= FL_COUNT)
        return NIL;
    uint32_t sl_bits = p->sl_map[fl] & (~0u << sl);
    if (sl_bits == 0) {
        uint64_t fl_bits = fl + 1 < 64 ? p->fl_map & (~0ull << (fl + 1)) : 0;
        if (fl_bits == 0)
            return NIL;
        fl = (uint32_t)__builtin_ctzll(fl_bits);
        sl_bits = p->sl_map[fl];
    }
    return p->heads[fl][__builtin_ctz(sl_bits)];
}

/* ---------------------------------------------------------------- node stack */

static uint32_t node_take(bc__tlsf *p)
{
    uint32_t i = p->spare;
    p->spare = p->nodes[i].next_free;
    p->spare_count--;
    return i;
}

static void node_give(bc__tlsf *p, uint32_t i)
{
    memset(&p->nodes[i], 0, sizeof p->nodes[i]);
    p->nodes[i].prev_phys = p->nodes[i].next_phys = p->nodes[i].prev_free = NIL;
    p->nodes[i].next_free = p->spare;
    p->spare = i;
    p->spare_count++;
}

/* ---------------------------------------------------------------- address table */

static uint32_t home_slot(const bc__tlsf *p, uint64_t addr)
{
    uint64_t k = (addr - p->base) >> ALIGN_SHIFT;
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> p->table_shift);
}

/* Slot holding addr, or NIL. Terminates: the table is at most half full. */
static uint32_t table_find(const bc__tlsf *p, uint64_t addr)
{
    for (uint32_t s = home_slot(p, addr);; s = (s + 1) & p->table_mask) {
        uint32_t i = p->table[s];
        if (i == NIL)
            return NIL;
        if (p->nodes[i].addr == addr)
            return s;
    }
}

static void table_insert(bc__tlsf *p, uint32_t i)
{
    uint32_t s = home_slot(p, p->nodes[i].addr);
    while (p->table[s] != NIL)
        s = (s + 1) & p->table_mask;
    p->table[s] = i;
}

/* Backward-shift deletion: pull later entries of the probe run into the hole
 * unless their home slot lies cyclically in (hole, j]. */
static void table_remove(bc__tlsf *p, uint32_t hole)
{
    for (uint32_t j = hole;;) {
        j = (j + 1) & p->table_mask;
        if (p->table[j] == NIL)
            break;
        uint32_t h = home_slot(p, p->nodes[p->table[j]].addr);
        int stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
        if (stays)
            continue;
        p->table[hole] = p->table[j];
        hole = j;
    }
    p->table[hole] = NIL;
}

/* ---------------------------------------------------------------- create/destroy */

bc_status bc__tlsf_create(uint64_t base, uint64_t size, uint32_t max_live, bc__tlsf **out_pool)
{
    bc_status st;
    size &= ~(uint64_t)(BC_MEM_ALIGN - 1);
    if (out_pool == NULL || base % BC_MEM_ALIGN != 0 || base + size < base)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__tlsf_create",
                       "out_pool is NULL, base 0x%llx is not %u-aligned, or the range wraps",
                       (unsigned long long)base, BC_MEM_ALIGN);
    if (size == 0)
        return BC_FAIL(BC_ERR_BAD_SIZE, "bc__tlsf_create", "range holds no %u-byte unit",
                       BC_MEM_ALIGN);
    if (max_live == 0 || max_live > MAX_LIVE_LIMIT)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__tlsf_create",
                       "max_live %u is not in [1, 2^30]", max_live);

    bc__tlsf *p = calloc(1, sizeof *p);
    if (p == NULL) {
        st = BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate the pool header");
        goto fail;
    }
    p->base = base;
    p->size = size;
    /* no more than one block a unit can ever be live: no tables for more (one spare, so that a full
     * arena still answers BC_ERR_POOL_EXHAUSTED rather than BC_ERR_TOO_MANY_BLOCKS) */
    if ((uint64_t)max_live > size / BC_MEM_ALIGN + 1)
        max_live = (uint32_t)(size / BC_MEM_ALIGN + 1);
    p->max_live = max_live;
    p->node_count = 2 * max_live + 1;
    p->nodes = malloc((size_t)p->node_count * sizeof *p->nodes);
    if (p->nodes == NULL) {
        st = BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "malloc", "cannot allocate %u block nodes",
                     p->node_count);
        goto fail_pool;
    }
    /* 2^bits >= 2 * max_live for every max_live, so the table is at most half
     * full and a lookup (a miss too) probes ~2.5 slots on average. */
    unsigned bits = msb64(2 * (uint64_t)max_live - 1) + 1;
    p->table_mask = (1u << bits) - 1;
    p->table_shift = 64 - bits;
    p->table = malloc(((size_t)p->table_mask + 1) * sizeof *p->table);
    if (p->table == NULL) {
        st = BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "malloc", "cannot allocate a %u-slot table",
                     p->table_mask + 1);
        goto fail_nodes;
    }
    memset(p->table, 0xff, ((size_t)p->table_mask + 1) * sizeof *p->table); /* all NIL */
    st = bc__bitidx_init(&p->starts, size >> ALIGN_SHIFT);
    if (st)
        goto fail_table;
    bc__bitidx_set(&p->starts, 0);
    memset(p->heads, 0xff, sizeof p->heads);

    p->spare = NIL;
    for (uint32_t i = p->node_count; i-- > 0;)
        node_give(p, i);
    p->first = node_take(p);
    node *n = &p->nodes[p->first];
    n->addr = base;
    n->size = size;
    list_insert(p, p->first);
    *out_pool = p;
    return BC_OK;

fail_table:
    free(p->table);
fail_nodes:
    free(p->nodes);
fail_pool:
    free(p);
fail:
    return st;
}

void bc__tlsf_destroy(bc__tlsf *pool)
{
    if (pool == NULL)
        return;
    bc__bitidx_free(&pool->starts);
    free(pool->table);
    free(pool->nodes);
    free(pool);
}

/* ---------------------------------------------------------------- alloc/free */

bc_status bc__tlsf_alloc(bc__tlsf *p, uint64_t bytes, uint64_t *out_addr)
{
    if (p == NULL || out_addr == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__tlsf_alloc", "pool or out_addr is NULL");
    if (bytes == 0 || bytes > p->size)
        return BC_FAIL(BC_ERR_BAD_SIZE, "bc__tlsf_alloc",
                       "request of %llu bytes; the pool manages %llu",
                       (unsigned long long)bytes, (unsigned long long)p->size);
    if (p->live == p->max_live)
        return BC_FAIL(BC_ERR_TOO_MANY_BLOCKS, "bc__tlsf_alloc",
                       "%u allocations are live, the configured maximum", p->live);

    uint64_t units = (bytes + BC_MEM_ALIGN - 1) >> ALIGN_SHIFT;
    uint64_t want = units;
    if (want >= SL_COUNT)
        want += (1ull << (msb64(want) - SL_BITS)) - 1; /* up to the next class boundary */
    uint32_t fl, sl;
    mapping(want, &fl, &sl);
    uint32_t i = find_at_or_above(p, fl, sl);
    if (i == NIL) {
        /* No good fit: the head of the request's own class may still be big
         * enough (e.g. the whole empty pool for a request of its size). */
        mapping(units, &fl, &sl);
        i = p->heads[fl][sl];
        if (i == NIL || p->nodes[i].size < units << ALIGN_SHIFT)
            return BC_FAIL(BC_ERR_POOL_EXHAUSTED, "bc__tlsf_alloc",
                           "no free block for %llu bytes (%llu of %llu bytes in use)",
                           (unsigned long long)bytes, (unsigned long long)p->in_use,
                           (unsigned long long)p->size);
    }

    list_remove(p, i);
    uint64_t need = units << ALIGN_SHIFT;
    node *n = &p->nodes[i];
    if (n->size > need) { /* split; the tail is free and its next neighbour is not */
        uint32_t t = node_take(p);
        node *tail = &p->nodes[t];
        tail->addr = n->addr + need;
        tail->size = n->size - need;
        tail->prev_phys = i;
        tail->next_phys = n->next_phys;
        if (n->next_phys != NIL)
            p->nodes[n->next_phys].prev_phys = t;
        n->next_phys = t;
        n->size = need;
        list_insert(p, t);
        bc__bitidx_set(&p->starts, (tail->addr - p->base) >> ALIGN_SHIFT);
    }
    table_insert(p, i);
    p->live++;
    p->in_use += n->size;
    if (p->in_use > p->peak)
        p->peak = p->in_use;
    *out_addr = n->addr;
    return BC_OK;
}

/* Merges the free block b (b = a's next neighbour) into a and recycles b's node. */
static void absorb_next(bc__tlsf *p, uint32_t a, uint32_t b)
{
    node *na = &p->nodes[a], *nb = &p->nodes[b];
    na->size += nb->size;
    na->next_phys = nb->next_phys;
    if (nb->next_phys != NIL)
        p->nodes[nb->next_phys].prev_phys = a;
    bc__bitidx_clear(&p->starts, (nb->addr - p->base) >> ALIGN_SHIFT);
    node_give(p, b);
}

bc_status bc__tlsf_free(bc__tlsf *p, uint64_t addr)
{
    if (p == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__tlsf_free", "pool is NULL");
    if (!bc__tlsf_contains(p, addr))
        return BC_FAIL(BC_ERR_FOREIGN_POINTER, "bc__tlsf_free",
                       "0x%llx is outside the pool [0x%llx, 0x%llx)", (unsigned long long)addr,
                       (unsigned long long)p->base, (unsigned long long)(p->base + p->size));
    uint32_t s = table_find(p, addr);
    if (s == NIL)
        return BC_FAIL(BC_ERR_DOUBLE_FREE, "bc__tlsf_free",
                       "0x%llx is not the start of a live block (double free or interior pointer)",
                       (unsigned long long)addr);
    uint32_t i = p->table[s];
    table_remove(p, s);
    p->live--;
    p->in_use -= p->nodes[i].size;

    uint32_t next = p->nodes[i].next_phys;
    if (next != NIL && p->nodes[next].is_free) {
        list_remove(p, next);
        absorb_next(p, i, next);
    }
    uint32_t prev = p->nodes[i].prev_phys;
    if (prev != NIL && p->nodes[prev].is_free) {
        list_remove(p, prev); /* its size changes, so it changes lists */
        absorb_next(p, prev, i);
        i = prev;
    }
    list_insert(p, i);
    return BC_OK;
}

int bc__tlsf_contains(const bc__tlsf *p, uint64_t addr)
{
    return p != NULL && addr >= p->base && addr - p->base < p->size;
}

void bc__tlsf_range(const bc__tlsf *p, uint64_t *out_base, uint64_t *out_size)
{
    *out_base = p->base;
    *out_size = p->size;
}

int bc__tlsf_find(const bc__tlsf *p, uint64_t addr, bc__tlsf_block *out)
{
    if (!bc__tlsf_contains(p, addr))
        return 0;
    const uint64_t unit = bc__bitidx_pred(&p->starts, (addr - p->base) >> ALIGN_SHIFT);
    const uint64_t start = p->base + (unit << ALIGN_SHIFT); /* unit 0 always starts a block */
    const uint32_t s = table_find(p, start);
    out->addr = start;
    out->size = s == NIL ? 0 : p->nodes[p->table[s]].size;
    out->live = s != NIL;
    return 1;
}

/* ---------------------------------------------------------------- stats/check */

void bc__tlsf_stats(const bc__tlsf *p, bc_pool_stats *out)
{
    if (p == NULL || out == NULL)
        return;
    uint64_t largest = 0;
    if (p->fl_map != 0) {
        /* The top non-empty list holds the largest blocks, in no order: walk it. */
        uint32_t fl = msb64(p->fl_map);
        uint32_t sl = 31u - (uint32_t)__builtin_clz(p->sl_map[fl]);
        for (uint32_t i = p->heads[fl][sl]; i != NIL; i = p->nodes[i].next_free)
            if (p->nodes[i].size > largest)
                largest = p->nodes[i].size;
    }
    uint64_t total_free = p->size - p->in_use;
    *out = (bc_pool_stats){
        .arena_bytes = p->size,
        .bytes_in_use = p->in_use,
        .peak_bytes_in_use = p->peak,
        .largest_free_block = largest,
        .total_free_bytes = total_free,
        .fragmentation = total_free ? 1.0 - (double)largest / (double)total_free : 0.0,
        .live_allocations = p->live,
    };
}

uint32_t bc__tlsf_table_slots(const bc__tlsf *p) { return p ? p->table_mask + 1 : 0; }

#define BROKEN(...) BC_FAIL(BC_ERR_INTERNAL, "bc__tlsf_check", __VA_ARGS__)

static bc_status check_chain(const bc__tlsf *p, uint32_t *out_blocks, uint32_t *out_free,
                             uint32_t *out_live, uint64_t *out_live_bytes)
{
    uint32_t blocks = 0, nfree = 0, live = 0, prev = NIL;
    uint64_t at = p->base, live_bytes = 0;
    for (uint32_t i = p->first; i != NIL; prev = i, i = p->nodes[i].next_phys) {
        if (i >= p->node_count || ++blocks > p->node_count)
            return BROKEN("physical chain: bad index %u or a cycle", i);
        const node *n = &p->nodes[i];
        if (n->prev_phys != prev)
            return BROKEN("physical chain: block %u's prev link is %u, expected %u", i,
                          n->prev_phys, prev);
        if (n->addr != at)
            return BROKEN("physical chain: block %u starts at 0x%llx, expected 0x%llx", i,
                          (unsigned long long)n->addr, (unsigned long long)at);
        if (n->size == 0 || n->size % BC_MEM_ALIGN != 0 || n->size > p->base + p->size - at)
            return BROKEN("physical chain: block %u has bad size %llu", i,
                          (unsigned long long)n->size);
        if (!bc__bitidx_test(&p->starts, (n->addr - p->base) >> ALIGN_SHIFT))
            return BROKEN("block index: block %u at 0x%llx has no start bit", i, (unsigned long long)n->addr);
        if (n->is_free && prev != NIL && p->nodes[prev].is_free)
            return BROKEN("coalescing: free blocks %u and %u are adjacent", prev, i);
        if (n->is_free) {
            nfree++;
        } else {
            live++;
            live_bytes += n->size;
        }
        at += n->size;
    }
    if (at != p->base + p->size)
        return BROKEN("physical chain ends at 0x%llx, not at the range end 0x%llx",
                      (unsigned long long)at, (unsigned long long)(p->base + p->size));
    *out_blocks = blocks;
    *out_free = nfree;
    *out_live = live;
    *out_live_bytes = live_bytes;
    return BC_OK;
}

static bc_status check_lists(const bc__tlsf *p, uint32_t *out_listed)
{
    uint32_t listed = 0;
    for (uint32_t fl = 0; fl < FL_COUNT; fl++) {
        if (!!(p->fl_map & (1ull << fl)) != (p->sl_map[fl] != 0))
            return BROKEN("bitmaps: first-level bit %u disagrees with its second-level map", fl);
        for (uint32_t sl = 0; sl < SL_COUNT; sl++) {
            uint32_t head = p->heads[fl][sl];
            if (!!(p->sl_map[fl] & (1u << sl)) != (head != NIL))
                return BROKEN("bitmaps: bit (%u,%u) disagrees with its list", fl, sl);
            for (uint32_t i = head, prev = NIL; i != NIL; prev = i, i = p->nodes[i].next_free) {
                if (i >= p->node_count || ++listed > p->node_count)
                    return BROKEN("free list (%u,%u): bad index %u or a cycle", fl, sl, i);
                const node *n = &p->nodes[i];
                uint32_t f, s;
                mapping(n->size >> ALIGN_SHIFT, &f, &s);
                if (!n->is_free || n->prev_free != prev || f != fl || s != sl)
                    return BROKEN("free list (%u,%u): block %u is not free, has a bad prev "
                                  "link or belongs to class (%u,%u)", fl, sl, i, f, s);
            }
        }
    }
    for (uint32_t fl = FL_COUNT; fl < 64; fl++)
        if (p->fl_map & (1ull << fl))
            return BROKEN("bitmaps: first-level bit %u is beyond the last class", fl);
    *out_listed = listed;
    return BC_OK;
}

static bc_status check_table(const bc__tlsf *p, uint32_t *out_entries)
{
    uint32_t entries = 0;
    for (uint32_t s = 0; s <= p->table_mask; s++) {
        uint32_t i = p->table[s];
        if (i == NIL)
            continue;
        entries++;
        if (i >= p->node_count || p->nodes[i].is_free || p->nodes[i].size == 0)
            return BROKEN("address table: slot %u names node %u, not a live block", s, i);
        if (table_find(p, p->nodes[i].addr) != s)
            return BROKEN("address table: 0x%llx in slot %u is unreachable from its home slot",
                          (unsigned long long)p->nodes[i].addr, s);
    }
    *out_entries = entries;
    return BC_OK;
}

bc_status bc__tlsf_check(const bc__tlsf *p)
{
    if (p == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__tlsf_check", "pool is NULL");
    uint32_t blocks, nfree, live, listed, entries;
    uint64_t live_bytes;
    bc_status st = check_chain(p, &blocks, &nfree, &live, &live_bytes);
    if (st == BC_OK)
        st = check_lists(p, &listed);
    if (st == BC_OK)
        st = check_table(p, &entries);
    if (st)
        return st;
    if (listed != nfree)
        return BROKEN("free lists hold %u blocks; the chain has %u free", listed, nfree);
    if (entries != live || live != p->live || live > p->max_live)
        return BROKEN("live count: table %u, chain %u, counter %u, max %u", entries, live,
                      p->live, p->max_live);
    if (live_bytes != p->in_use || p->in_use > p->peak)
        return BROKEN("bytes: chain %llu, counter %llu, peak %llu",
                      (unsigned long long)live_bytes, (unsigned long long)p->in_use,
                      (unsigned long long)p->peak);
    uint64_t bits = 0;
    for (uint64_t w = 0; w < (p->starts.nbits + 63) / 64; w++)
        bits += (uint64_t)__builtin_popcountll(p->starts.level[0][w]);
    if (bits != blocks)
        return BROKEN("block index: %llu start bits for %u blocks", (unsigned long long)bits, blocks);
    if (blocks + p->spare_count != p->node_count)
        return BROKEN("nodes: %u in blocks + %u spare != %u", blocks, p->spare_count,
                      p->node_count);
    uint32_t spare = 0;
    for (uint32_t i = p->spare; i != NIL; i = p->nodes[i].next_free)
        if (i >= p->node_count || ++spare > p->spare_count)
            return BROKEN("spare node stack: bad index %u or longer than %u", i, p->spare_count);
    if (spare != p->spare_count)
        return BROKEN("spare node stack holds %u nodes, counter says %u", spare, p->spare_count);
    return BC_OK;
}
