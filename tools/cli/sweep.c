/* The shape sweep generator (see sweep.h; tools/sweep.py is its Python twin). */
#include "sweep.h"

#include "ref.h"

const bc_epi_desc bc_epi_table[BC_EPI_COUNT] = {
    [BC_EPI_PLAIN] = {"plain", BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 0, 0},
    [BC_EPI_C] = {"c", BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 1.0f, 0, 0, 0},
    [BC_EPI_C_ALIAS] = {"c_alias", BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 1.0f, 1, 0, 0},
    [BC_EPI_BIAS] = {"bias", BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 1, 0},
    [BC_EPI_BIAS_RELU] = {"bias_relu", BC_DTYPE_BF16, BC_DTYPE_BF16, 1.0f, 0.0f, 0, 1, 1},
    [BC_EPI_F16_IN] = {"f16_in", BC_DTYPE_F16, BC_DTYPE_F16, 1.0f, 0.0f, 0, 0, 0},
    [BC_EPI_F16_OUT] = {"f16_out", BC_DTYPE_BF16, BC_DTYPE_F16, 1.0f, 0.0f, 0, 0, 0},
    [BC_EPI_F32_OUT] = {"f32_out", BC_DTYPE_BF16, BC_DTYPE_F32, 1.0f, 0.0f, 0, 0, 0},
};

/* floor(2^(2^-i) * 2^62) for i = 1..32 (computed to 80 digits). */
static const uint64_t root2_q62[32] = {
    0x5a827999fcef3242ull, 0x4c1bf828c6dc54b7ull, 0x45cae0f1f545eb73ull, 0x42d561b3e6243d8aull,
    0x4166c34c5615d0ebull, 0x40b268f9de0183b9ull, 0x4058f6a7ecccd5b6ull, 0x402c6be96af2fb58ull,
    0x4016321b687027a8ull, 0x400b18178ba33b14ull, 0x40058bce410147e8ull, 0x4002c5d7bff71daeull,
    0x400162e807ee7e5bull, 0x4000b1730df6a524ull, 0x400058b9497b8151ull, 0x40002c5c955dd701ull,
    0x4000162e46d6f26bull, 0x40000b1722757b1bull, 0x4000058b90fd3e0cull, 0x400002c5c86f3f26ull,
    0x40000162e433c79bull, 0x400000b17218edcfull, 0x40000058b90c3968ull, 0x4000002c5c860d54ull,
    0x400000162e4302d2ull, 0x4000000b17218073ull, 0x400000058b90bffcull, 0x40000002c5c85feeull,
    0x4000000162e42ff3ull, 0x40000000b17217f8ull, 0x4000000058b90bfcull, 0x400000002c5c85feull,
};

static uint64_t next(uint64_t *state)
{
    bc_rng r = {*state};
    uint64_t v = bc_rng_next(&r);
    *state = r.s;
    return v;
}

int64_t bc_sweep_logu(uint64_t *state, int64_t lo, int64_t hi)
{
    unsigned e = 0;
    while ((lo << e) <= hi)
        e++;
    for (;;) {
        const uint64_t t = (next(state) >> 32) * e;
        const unsigned q = (unsigned)(t >> 32);
        const uint32_t f = (uint32_t)t;
        unsigned __int128 F = (unsigned __int128)1 << 62;
        for (int i = 1; i <= 32; i++)
            if ((f >> (32 - i)) & 1u)
                F = (F * root2_q62[i - 1]) >> 62;
        const int64_t v = (int64_t)((((unsigned __int128)lo << q) * F) >> 62);
        if (v <= hi)
            return v;
    }
}

static uint64_t esize(bc_dtype t) { return t == BC_DTYPE_F32 ? 4u : 2u; }

uint64_t bc_sweep_set_bytes(const bc_shape *s, const bc_epi_desc *d)
{
    const uint64_t m = (uint64_t)s->m, n = (uint64_t)s->n, k = (uint64_t)s->k, ob = esize(d->out);
    uint64_t b = (m * k + n * k) * esize(d->ab) + m * n * ob;
    if (d->beta != 0.0f && !d->c_alias)
        b += m * n * ob;
    if (d->bias)
        b += n * ob;
    return b;
}

uint64_t bc_sweep_traffic_bytes(const bc_shape *s, const bc_epi_desc *d)
{
    const uint64_t m = (uint64_t)s->m, n = (uint64_t)s->n, k = (uint64_t)s->k, ob = esize(d->out);
    uint64_t b = (m * k + n * k) * esize(d->ab) + m * n * ob;
    if (d->beta != 0.0f)
        b += m * n * ob;
    if (d->bias)
        b += n * ob;
    return b;
}

double bc_sweep_floor_us(const bc_shape *s, const bc_epi_desc *e, double peak_flops, double peak_bw)
{
    const double flop_s = 2.0 * (double)s->m * (double)s->n * (double)s->k / peak_flops;
    const double byte_s = (double)bc_sweep_traffic_bytes(s, e) / peak_bw;
    return (flop_s > byte_s ? flop_s : byte_s) * 1e6;
}

int bc_sweep_draw(const bc_sweep_params *p, bc_sweep_item *out)
{
    uint64_t st = p->seed;
    const double threshold = p->epi_fraction * 9007199254740992.0; /* F * 2^53, exact */
    for (int i = 0; i < p->count; i++) {
        int kept = 0;
        for (int attempt = 0; attempt < BC_SWEEP_MAX_ATTEMPTS && !kept; attempt++) {
            bc_sweep_item it;
            it.s.m = bc_sweep_logu(&st, 1, 16384);
            it.s.n = bc_sweep_logu(&st, 1, 16384);
            it.s.k = 8 * ((bc_sweep_logu(&st, 8, 16384) + 4) / 8);
            it.epi = BC_EPI_PLAIN;
            if ((double)(next(&st) >> 11) < threshold)
                it.epi = (bc_epi)(1 + next(&st) % (BC_EPI_COUNT - 1));
            const uint64_t set = bc_sweep_set_bytes(&it.s, &bc_epi_table[it.epi]);
            if (set * (uint64_t)bc_bench_sets(set) <= p->mem_cap) {
                out[i] = it;
                kept = 1;
            }
        }
        if (!kept)
            return -1;
    }
    return 0;
}
