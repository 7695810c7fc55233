/* Hierarchical bitmap (see bitidx.h). */
#include <stdlib.h>
#include <string.h>

#include "bitidx.h"
#include "error.h"

static uint64_t words_for(uint64_t bits) { return (bits + 63) >> 6; }

bc_status bc__bitidx_init(bc__bitidx *b, uint64_t nbits)
{
    if (b == NULL || nbits == 0 || nbits > (1ull << 60))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__bitidx_init", "bitmap of %llu bits",
                       (unsigned long long)nbits);
    memset(b, 0, sizeof *b);
    uint64_t count[BC__BITIDX_MAX_LEVELS], total = 0;
    unsigned levels = 0;
    for (uint64_t bits = nbits;; bits = count[levels - 1]) {
        count[levels] = words_for(bits);
        total += count[levels++];
        if (count[levels - 1] == 1)
            break;
    }
    uint64_t *mem = calloc((size_t)total, sizeof *mem);
    if (mem == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate a %llu-word block index",
                       (unsigned long long)total);
    for (unsigned l = 0; l < levels; l++) {
        b->level[l] = mem;
        mem += count[l];
    }
    b->nbits = nbits;
    b->levels = levels;
    return BC_OK;
}

void bc__bitidx_free(bc__bitidx *b)
{
    if (b == NULL)
        return;
    free(b->level[0]);
    memset(b, 0, sizeof *b);
}

void bc__bitidx_set(bc__bitidx *b, uint64_t i)
{
    for (unsigned l = 0; l < b->levels; l++, i >>= 6)
        b->level[l][i >> 6] |= 1ull << (i & 63);
}

void bc__bitidx_clear(bc__bitidx *b, uint64_t i)
{
    for (unsigned l = 0; l < b->levels; l++, i >>= 6) {
        uint64_t *w = &b->level[l][i >> 6];
        *w &= ~(1ull << (i & 63));
        if (*w != 0)
            return; /* the levels above still see a non-zero word */
    }
}

int bc__bitidx_test(const bc__bitidx *b, uint64_t i)
{
    return (int)((b->level[0][i >> 6] >> (i & 63)) & 1u);
}

uint64_t bc__bitidx_pred(const bc__bitidx *b, uint64_t i)
{
    unsigned l = 0;
    for (;; l++) { /* up: the first level with a set bit at or below i */
        if (l == b->levels)
            return BC__BITIDX_NONE;
        const uint64_t w = i >> 6;
        const uint64_t m = b->level[l][w] & (~0ull >> (63 - (i & 63)));
        if (m != 0) {
            i = (w << 6) | (uint64_t)(63 - __builtin_clzll(m));
            break;
        }
        if (w == 0)
            return BC__BITIDX_NONE;
        i = w - 1; /* the words before w, one level up */
    }
    while (l-- > 0) /* down: the highest set bit of each non-empty word */
        i = (i << 6) | (uint64_t)(63 - __builtin_clzll(b->level[l][i]));
    return i;
}
