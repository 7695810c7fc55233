/* Hopper epilogue: one consumer warpgroup's wgmma accumulators (64 rows x BN
 * columns, layout in ptx/wgmma.h) to D, chunk by chunk through the
 * warpgroup's two 8 KiB staging buffers (64 rows x up to 128 B, swizzled the
 * way the TMA unit reads them, which also keeps the smem accesses free of
 * bank conflicts). A chunk is `cols` = inner / esize columns of D, where
 * inner = min(BN * esize, 128) bytes.
 *
 * C, when the plan reads one, normally arrives the same way A and B do: the
 * producer TMA-loads the tile's C as extra stages of the ring right after
 * the tile's last k-block (BC_GEMM_F_C_SMEM), in boxes with exactly the
 * staging geometry, so the read of C overlaps the main loop and each thread
 * finds its C values at the swizzled offsets where it writes D.
 *
 * Three paths, chosen per plan:
 *   TMA path (BC_GEMM_F_TMA_STORE: D's pitch and N 16-byte multiples; no
 *     C or C in smem): alpha, beta*C, bias and ReLU applied in registers,
 *     values converted to D's type, staged, and one thread issues a TMA
 *     tensor store of the chunk. The TMA unit clips the box at M, and at N
 *     only to 16 bytes (why N must be a 16-byte multiple). Stores are
 *     not waited for: a buffer is reused two chunks later, after
 *     cp.async.bulk.wait_group.read 1, and the next tile's main loop starts
 *     while the last stores drain.
 *   Copy-out path (D's pitch or N not a 16-byte multiple, e.g. an odd N in
 *     bf16; no C or C in smem): the same finished, converted values are
 *     staged and copied to D by the threads, exactly N columns a row.
 *     16-bit D: each row is staged rotated
 *     within its line by its start's offset in a 16-byte window, so the
 *     copy is 16-byte shared loads and 16-byte aligned global stores, and
 *     only the partial windows at a row piece's ends go element by element
 *     (one element per lane). f32 D: one element per lane.
 *   Thread path (C in global memory: its rows are not 16-byte aligned):
 *     the tile's C lines are prefetched into L2 (before a short main loop,
 *     after a long one); per 32-column chunk alpha * acc is staged as f32,
 *     and each thread finishes and stores its 16 elements of a column
 *     (coalesced C reads and D writes along rows), its C loads in flight a
 *     group ahead of its stores, masked at M and N.
 *
 * Every path rounds once, from the same f32 expression
 * ((alpha * acc + beta * C) + bias, then ReLU), so they write the same bytes.
 * Every tile also carries a copy of the staged paths for plans without C,
 * bias or ReLU, the expression's flag tests compiled out (bc_sm90_epilogue).
 *
 * The bias: tiles up to 64 columns wide load every bias word a thread
 * needs into registers before their main loop (bc_sm90_load_bias: at most
 * 16, a 16-bit pair packed in one), so the loads' latency passes during the
 * main loop. Wider tiles, and the short-K twins' dense-row kernels (no
 * registers to spare), prefetch their slice into L1 before the main loop
 * (bc_sm90_prefetch_bias), and each staged chunk loads its bias words
 * before its first shared store. Either way the loads are predicated and
 * all in flight at once (kernels_ptx/PERF_NOTES.md, change 54). The thread
 * path (C read by the threads) loads its one bias value a chunk itself.
 */
#ifndef BC_KERNELS_EPILOGUE_SM90_H
#define BC_KERNELS_EPILOGUE_SM90_H

#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/fence.h"
#include "ptx/ldg.h"
#include "ptx/prefetch.h"
#include "ptx/smem.h"
#include "ptx/tma.h"

/* Byte offset `off` inside a staging buffer whose rows are `inner` bytes
 * (128: SWIZZLE_128B; 64: SWIZZLE_64B): the 16-byte chunk index XORed with
 * the 128-byte line index mod 8 (mod 4). Buffers are 1024-byte aligned. */
BC_DEVICE uint32_t bc_sm90_swz(uint32_t off, const uint32_t inner)
{
    return off ^ (((off >> 7) & (inner == 128 ? 7u : 3u)) << 4);
}

/* Bytes of one staged row of a chunk: min(BN * esize, 128). */
BC_DEVICE uint32_t bc_sm90_inner(const uint32_t bn, const uint32_t esize)
{
    return bn * esize < 128u ? bn * esize : 128u;
}

/* Where one consumer's tile piece goes: rows row0..row0+63, columns
 * col0..col0+BN-1 of D; `buf0` its first staging buffer, `seq` the running
 * count of buffers it used (selects the buffer), `bar` its named barrier.
 * With BC_GEMM_F_C_SMEM, C box b = cons * (chunks) + chunk lies in ring
 * stage (cfirst + b / per) mod stages, at (b mod per) boxes from its start,
 * where per = stage_bytes / box bytes (gemm_sm90.c's producer puts it there). */
typedef struct bc_sm90_epi_at {
    uint32_t row0, col0, buf0, bar, t128;
    uint64_t tmap_d;
    uint32_t cons;        /* this consumer's index in the CTA */
    uint32_t ring;        /* shared address of ring stage 0 */
    uint32_t cfirst;      /* ring index of the tile's first C stage */
    uint32_t stage_bytes; /* compile-time constant of the configuration */
    uint32_t stages;      /* compile-time constant of the configuration */
} bc_sm90_epi_at;

BC_DEVICE uint32_t bc_sm90_next_buf(const bc_sm90_epi_at *at, uint32_t *seq)
{
    return at->buf0 + ((*seq)++ & 1u) * BC_SM90_EPI_BUF_BYTES;
}

/* Shared address of this consumer's C box for chunk q (esize, bn constants). */
BC_DEVICE uint32_t bc_sm90_cbox(const bc_sm90_epi_at *at, const uint32_t bn, const uint32_t esize, uint32_t q)
{
    const uint32_t inner = bc_sm90_inner(bn, esize), box = 64u * inner, per = at->stage_bytes / box;
    const uint32_t b = at->cons * (bn * esize / inner) + q;
    uint32_t s = at->cfirst + b / per;
    if (s >= at->stages)
        s -= at->stages;
    return at->ring + s * at->stage_bytes + (b % per) * box;
}

/* Two adjacent D-typed values of C at shared address a (esize constant). */
BC_DEVICE bc_f32x2s bc_sm90_load_c2(uint32_t a, const uint32_t esize, int out_t)
{
    bc_f32x2s r;
    if (esize == 4) {
        const bc_f32x2s v = bc_ld_shared_v2f32(a);
        r.x = v.x, r.y = v.y;
    } else {
        const uint32_t w = bc_ld_shared_b32(a);
        r.x = out_t == BC_OUT_BF16 ? bc_bf16_to_f32((uint16_t)w) : bc_f16_to_f32((uint16_t)w);
        r.y = out_t == BC_OUT_BF16 ? bc_bf16_to_f32((uint16_t)(w >> 16)) : bc_f16_to_f32((uint16_t)(w >> 16));
    }
    return r;
}

/* Global-space views (ld.global / st.global instead of generic accesses). */
typedef const __attribute__((address_space(1))) uint16_t bc_gu16;
typedef const __attribute__((address_space(1))) uint32_t bc_gu32;
typedef __attribute__((address_space(1))) uint16_t bc_gmut_u16;
typedef __attribute__((address_space(1))) uint32_t bc_gmut_u32;

/* The raw bits of one D-typed element at global address a (esize constant). */
BC_DEVICE uint32_t bc_sm90_ld_raw(uint64_t a, const uint32_t esize)
{
    return esize == 4 ? *(bc_gu32 *)(uintptr_t)a : *(bc_gu16 *)(uintptr_t)a;
}

/* v as the raw bits of a D-typed element (esize constant), without a
 * branch on the type, for a predicated store. */
BC_DEVICE uint32_t bc_sm90_out_raw(float v, const uint32_t esize, int out_t)
{
    if (esize == 4)
        return __builtin_bit_cast(uint32_t, v);
    const uint16_t h = bc_pack1(v, BC_OUT_F16), b = bc_pack1(v, BC_OUT_BF16);
    return out_t == BC_OUT_F16 ? h : b;
}

/* Raw bits of a D-typed element as f32, without a branch on the type. */
BC_DEVICE float bc_sm90_raw_f32(uint32_t raw, const uint32_t esize, int out_t)
{
    if (esize == 4)
        return __builtin_bit_cast(float, raw);
    const float h = bc_f16_to_f32((uint16_t)raw), b = bc_bf16_to_f32((uint16_t)raw);
    return out_t == BC_OUT_F16 ? h : b;
}

/* Before a tile's main loop: the lines of the bias that the tile's columns
 * col0 .. col0 + BN - 1 (clipped at N) read, into L1, one line per thread
 * of the consumer warpgroup (out_t: the bias's type, D's). */
BC_DEVICE void bc_sm90_prefetch_bias(const bc_epi *e, uint32_t bn, uint32_t col0, uint32_t t128, int out_t)
{
    if (!(e->flags & BC_GEMM_F_BIAS) || col0 >= e->n)
        return;
    const uint64_t esize = out_t == BC_OUT_F32 ? 4u : 2u, cols = e->n - col0 < bn ? e->n - col0 : bn;
    const uint64_t first = (e->bias + col0 * esize) & ~(uint64_t)127, end = e->bias + (col0 + cols) * esize;
    if (first + 128u * t128 < end)
        bc_prefetch_l1(first + 128u * t128);
}

/* The bias of this thread's fragments in the `bn` columns from col0 (bn a
 * compile-time constant, at most 64), as raw words: accumulator group j
 * takes columns c = col0 + 8j + 2 (lane mod 4) and c + 1; a 16-bit bias
 * keeps the pair packed in raw[j] (c in the low half; bn / 8 words), an
 * f32 one in raw[2j] and raw[2j + 1] (bn / 4 words). A column past N, or
 * no bias, reads as 0 (+0.0 in every type). A tile at most 64 columns wide
 * loads its whole slice before its main loop and holds it packed through
 * it; a staged chunk of a wider one loads its own columns
 * (bc_sm90_stage_chunk). The loads are predicated (no branch around each)
 * and all issued before the first use: a load under its own branch, its
 * value converted inside that branch, waited for its round trip before the
 * next one was issued (kernels_ptx/PERF_NOTES.md, change 54). A pair is one
 * 4-byte load (c is even, and the plan requires a 4-byte aligned bias;
 * two 2-byte loads would serve a 2-byte aligned one). esize: the
 * bias's bytes (D's), a compile-time constant. */
BC_DEVICE void bc_sm90_load_bias(const bc_epi *e, const uint32_t bn, uint32_t col0, uint32_t t128,
                                 const uint32_t esize, uint32_t *raw)
{
    const uint32_t c0 = col0 + 2u * (t128 % 4u);
    const uint32_t ok = c0 < e->n ? e->n - c0 : 0u; /* columns left */
    const uint64_t a0 = e->bias + (uint64_t)c0 * esize;
    const uint32_t al = (e->bias & 3u) == 0;
#pragma unroll
    for (uint32_t j = 0; j < bn / 8u; j++)
        raw[esize == 4 ? 2 * j : j] = raw[esize == 4 ? 2 * j + 1 : j] = 0u;
    if (!(e->flags & BC_GEMM_F_BIAS)) /* uniform: no load issued without a bias */
        return;
#pragma unroll
    for (uint32_t j = 0; j < bn / 8u; j++) {
        const uint64_t a = a0 + 8u * j * esize;
        const uint32_t first = 8u * j < ok, both = 8u * j + 1u < ok;
        if (esize == 4) {
            raw[2 * j] = bc_ld_global_if(a, first, 4u);
            raw[2 * j + 1] = bc_ld_global_if(a + 4u, both, 4u);
        } else {
            raw[j] = bc_ld_global_if(a, al & both, 4u) | bc_ld_global_if(a, first & !(al & both), 2u) |
                     bc_ld_global_if(a + 2u, both & !al, 2u) << 16;
        }
    }
}

/* Group j's two bias values from bc_sm90_load_bias's words. */
BC_DEVICE void bc_sm90_bias_pair(const uint32_t *raw, uint32_t j, const uint32_t esize, int out_t, float *b0,
                                 float *b1)
{
    if (esize == 4) {
        *b0 = __builtin_bit_cast(float, raw[2 * j]);
        *b1 = __builtin_bit_cast(float, raw[2 * j + 1]);
    } else {
        *b0 = bc_sm90_raw_f32(raw[j] & 0xffffu, 2u, out_t);
        *b1 = bc_sm90_raw_f32(raw[j] >> 16, 2u, out_t);
    }
}

/* Finishes chunk q's fragments (cacc: its accumulators, columns 8jj..
 * 8jj + 7 of the chunk at 4jj) and stages them, converted to D's type, in
 * `buf` (esize and bn compile-time constants): the part the TMA and the
 * copy-out paths share. pre: the tile's bias words from bc_sm90_load_bias,
 * or NULL to load the chunk's here. rotated (16-bit D only): each line
 * staged rotated by its row's start in D mod 16 (rot0 for this thread's row
 * r0, rot1 for r0 + 8; bc_sm90_copyout_rotated), after the whole chunk is
 * finished, so the TMA path's stores stay where its math is; 0: staged as
 * the TMA unit reads them. */
BC_DEVICE void bc_sm90_stage_chunk(const bc_epi *e, const float *cacc, const uint32_t bn, const uint32_t esize,
                                   int out_t, const bc_sm90_epi_at *at, uint32_t q, uint32_t buf, const uint32_t *pre,
                                   int rotated, uint32_t rot0, uint32_t rot1, const int plain)
{
    const uint32_t inner = bc_sm90_inner(bn, esize), cols = inner / esize;
    const uint32_t t128 = bc_opaque_u32(at->t128), w = t128 / 32u, l = t128 % 32u;
    const uint32_t r0 = 16u * w + l / 4u;
    const int relu = !plain && (e->flags & BC_GEMM_F_RELU) != 0;
    const int has_c = !plain && (e->flags & BC_GEMM_F_C_SMEM) != 0;
    const uint32_t cb = has_c ? bc_sm90_cbox(at, bn, esize, q) : 0u;
    /* the chunk's bias words: from the tile's, or loaded now, before any shared store can order them */
    uint32_t bw[16];
    if (!pre && !plain)
        bc_sm90_load_bias(e, cols, at->col0 + q * cols, t128, esize, bw);
    const uint32_t *b = pre ? pre + (esize == 4 ? 2u : 1u) * q * (cols / 8u) : bw;
    uint32_t pk[16]; /* 16-bit D: the packed pairs, group jj's row half h at 2jj + h */
#pragma unroll
    for (uint32_t jj = 0; jj < cols / 8u; jj++) {
        float b0 = 0.0f, b1 = 0.0f; /* plain: +0.0 is still added, so -0.0 leaves as +0.0 on every path */
        if (!plain)
            bc_sm90_bias_pair(b, jj, esize, out_t, &b0, &b1);
#pragma unroll
        for (uint32_t h = 0; h < 2; h++) {
            const uint32_t off = bc_sm90_swz((r0 + 8u * h) * inner + (8u * jj + 2u * (l % 4u)) * esize, inner);
            float v0 = e->alpha * cacc[4 * jj + 2 * h], v1 = e->alpha * cacc[4 * jj + 2 * h + 1];
            if (has_c) {
                const bc_f32x2s c = bc_sm90_load_c2(cb + off, esize, out_t);
                v0 += e->beta * c.x;
                v1 += e->beta * c.y;
            }
            v0 += b0;
            v1 += b1;
            if (relu) {
                v0 = v0 < 0.0f ? 0.0f : v0; /* NaN stays NaN */
                v1 = v1 < 0.0f ? 0.0f : v1;
            }
            if (esize == 4) {
                bc_st_shared_v2f32(buf + off, v0, v1);
            } else {
                pk[2 * jj + h] = bc_pack2(v0, v1, out_t);
                if (!rotated)
                    bc_st_shared_b32(buf + off, pk[2 * jj + h]);
            }
        }
    }
    if (esize == 4 || __builtin_expect(!rotated, 1))
        return;
    /* rotated: the pair's elements at line bytes (rot + x) mod inner and the next slot, one 2-byte store
     * each (a branch per pair on the rotation's alignment measured slower, and lengthened the TMA path's
     * code); a line's swizzle XOR is the same for all its bytes */
#pragma unroll
    for (uint32_t h = 0; h < 2; h++) {
        const uint32_t line = (r0 + 8u * h) * inner, rh = h ? rot1 : rot0, m = inner - 1u;
        const uint32_t lb = buf + line, sw = bc_sm90_swz(line, inner) ^ line, x0 = rh + 4u * (l % 4u);
#pragma unroll
        for (uint32_t jj = 0; jj < cols / 8u; jj++) {
            const uint32_t xa = (x0 + 16u * jj) & m, w2 = pk[2 * jj + h];
            bc_st_shared_b16(lb + (xa ^ sw), (uint16_t)w2);
            bc_st_shared_b16(lb + (((xa + 2u) & m) ^ sw), (uint16_t)(w2 >> 16));
        }
    }
}

/* Copy-out of one staged chunk of f32 D (columns cbase.., `cols` of them):
 * rows one warp at a time (warp w takes rows w, w + 4, ...), each lane
 * storing one element; a warp's stores of a row are adjacent words and
 * coalesce into whole sectors but at the row's ends. */
BC_DEVICE void bc_sm90_copyout_words(const bc_epi *e, const uint32_t cols, const bc_sm90_epi_at *at,
                                     uint32_t cbase, uint32_t buf)
{
    const uint32_t inner = cols * 4u;
    const uint32_t t128 = bc_opaque_u32(at->t128), w = t128 / 32u, l = t128 % 32u;
    if (cbase >= e->n)
        return;
    const uint32_t ne = e->n - cbase < cols ? e->n - cbase : cols; /* elements of each row's piece */
#pragma unroll 4
    for (uint32_t i = 0; i < 16u; i++) {
        const uint32_t r = w + 4u * i, row = at->row0 + r;
        if (row < e->m && l < ne)
            *(uint32_t *)(uintptr_t)(e->d + ((uint64_t)row * e->ldd + cbase + l) * 4u) =
                bc_ld_shared_b32(buf + bc_sm90_swz(r * inner + 4u * l, inner));
    }
}

/* Copy-out of one staged chunk of 16-bit D (columns cbase.., `cols` a
 * chunk, line = 2 cols bytes). Row r's piece starts at global byte g, a = g
 * mod 16 bytes past a 16-byte boundary, and bc_sm90_stage_chunk staged it
 * rotated by a within its line: global byte g - a + i (i in [a, a + line))
 * is line byte i mod line. So staged 16-byte chunk j is global window j of
 * the piece, and chunk 0 holds both the head (window 0's bytes a..15) and
 * the tail (bytes 0..a-1 of window line / 16). Per step a warp covers
 * 32 / (line / 16) rows: first each lane stores its chunk as one 16-byte
 * store when the whole window lies in the piece; then the elements of the
 * partial windows, one per lane: those of chunk 0 (head and tail) and, in a
 * chunk cut by N, those of the window where the piece ends. */
BC_DEVICE void bc_sm90_copyout_rotated(const bc_epi *e, const uint32_t cols, const bc_sm90_epi_at *at,
                                       uint32_t cbase, uint32_t buf)
{
    const uint32_t esize = 2u;
    typedef float f32x4 __attribute__((ext_vector_type(4)));
    const uint32_t line = cols * esize, lpr = line / 16u, rps = 32u / lpr, epw = 16u / esize;
    const uint32_t t128 = bc_opaque_u32(at->t128), w = t128 / 32u, l = t128 % 32u;
    if (cbase >= e->n)
        return;
    const uint32_t nb = (e->n - cbase < cols ? e->n - cbase : cols) * esize; /* bytes of each row's piece */
#pragma unroll 1
    for (uint32_t s = 0; s < 16u / rps; s++) {
        { /* whole windows */
            const uint32_t r = 16u * w + s * rps + l / lpr, row = at->row0 + r, j = l % lpr;
            const uint64_t g = e->d + ((uint64_t)row * e->ldd + cbase) * esize;
            const uint32_t a = (uint32_t)g & 15u, line0 = r * line, sw = bc_sm90_swz(line0, line) ^ line0;
            if (row < e->m && (j == 0 ? a == 0 : 1) && 16u * j + 16u <= a + nb) {
                const bc_f32x4s v = bc_ld_shared_v4f32(buf + line0 + ((16u * j) ^ sw));
                const f32x4 qv = {v.x, v.y, v.z, v.w}; /* 16 bytes of D, moved as they are */
                *(f32x4 *)(uintptr_t)(g - a + 16u * j) = qv;
            }
        }
        /* element by element: lane l takes element l mod epw of the windows of row l / epw (+ 32 / epw) */
#pragma unroll
        for (uint32_t p = 0; p < rps * epw / 32u; p++) { /* rps * epw = 4096 / line >= 32 */
            const uint32_t r = 16u * w + s * rps + p * (32u / epw) + l / epw, row = at->row0 + r, i = esize * (l % epw);
            const uint64_t g = e->d + ((uint64_t)row * e->ldd + cbase) * esize;
            const uint32_t a = (uint32_t)g & 15u, end = a + nb, line0 = r * line, sw = bc_sm90_swz(line0, line) ^ line0;
            if (row >= e->m)
                continue;
            /* chunk 0: line byte i is window byte i (head, i >= a) or tail byte i (window line / 16) */
            const uint32_t gi = i >= a ? i : line + i;
            if ((a != 0 || end < 16u) && gi < end) {
                const uint32_t ad = buf + line0 + (i ^ sw);
                *(uint16_t *)(uintptr_t)(g - a + gi) = bc_ld_shared_b16(ad);
            }
            /* a chunk cut by N: the partial window where the piece ends, past window 0 */
            if (nb < line && end > 16u && (end & 15u) != 0 && 16u * (end / 16u) + i < end && end / 16u < lpr) {
                const uint32_t x = 16u * (end / 16u) + i, ad = buf + line0 + (x ^ sw);
                *(uint16_t *)(uintptr_t)(g - a + x) = bc_ld_shared_b16(ad);
            }
        }
    }
}

/* One chunk q of the staged paths (below); cacc: its accumulators. */
BC_DEVICE void bc_sm90_epi_chunk(const bc_epi *e, const float *cacc, const uint32_t bn, const uint32_t esize,
                                 int out_t, const bc_sm90_epi_at *at, uint32_t *seq, int tma, const uint32_t *pre,
                                 int rotated, uint32_t q, uint32_t rot0, uint32_t rot1, const int plain)
{
    const uint32_t cols = bc_sm90_inner(bn, esize) / esize;
    const uint32_t buf = bc_sm90_next_buf(at, seq);
    if (tma && at->t128 == 0)
        bc_bulk_wait_read(1); /* the store that last read `buf` is done reading */
    bc_bar_sync(at->bar, 128);
    bc_sm90_stage_chunk(e, cacc, bn, esize, out_t, at, q, buf, pre, rotated, rot0, rot1, plain);
    if (tma)
        bc_fence_proxy_async_smem(); /* our st.shared before the TMA unit reads them */
    bc_bar_sync(at->bar, 128);
    if (__builtin_expect(rotated, 0)) {
        bc_sm90_copyout_rotated(e, cols, at, at->col0 + q * cols, buf);
    } else if (!tma) {
        bc_sm90_copyout_words(e, cols, at, at->col0 + q * cols, buf);
    } else if (at->t128 == 0) {
        bc_tma_store_2d(at->tmap_d, (int32_t)(at->col0 + q * cols), (int32_t)at->row0, buf);
        bc_bulk_commit();
    }
}

/* The staged paths (TMA store, or copy-out when `tma` is 0); esize (2 or
 * 4) and bn are compile-time constants. TMA: stores are not waited for; a
 * buffer is reused two chunks later, once the store that read it is done
 * reading. Copy-out: the barrier before staging also says every thread
 * finished copying the chunk that last used the buffer. One copy of the
 * staging code per element size serves both paths (it keeps the kernels
 * small, and a third copy made ptxas spill in the 128x256 kernel): f32 D
 * is copied out one element per lane from the TMA layout; 16-bit D is
 * staged rotated (bc_sm90_stage_chunk) and copied out in 16-byte windows. */
BC_DEVICE void bc_sm90_epi_staged(const bc_epi *e, const float *acc, const uint32_t bn, const uint32_t esize,
                                  int out_t, const bc_sm90_epi_at *at, uint32_t *seq, int tma, const uint32_t *pre,
                                  const int plain)
{
    const uint32_t cols = bc_sm90_inner(bn, esize) / esize, nq = bn / cols;
    const int rotated = esize == 2 && !tma;
    uint32_t rot0 = 0, rot1 = 0;
    if (__builtin_expect(rotated, 0)) { /* this thread's two rows: their starts' offsets in a 16-byte window */
        const uint32_t t128 = bc_opaque_u32(at->t128), r0 = 16u * (t128 / 32u) + (t128 % 32u) / 4u;
        rot0 = ((uint32_t)e->d + ((at->row0 + r0) * e->ldd + at->col0) * esize) & 15u;
        rot1 = ((uint32_t)e->d + ((at->row0 + r0 + 8u) * e->ldd + at->col0) * esize) & 15u;
    }
#pragma unroll
    for (uint32_t q = 0; q < nq; q++)
        bc_sm90_epi_chunk(e, acc + q * (cols / 2u), bn, esize, out_t, at, seq, tma, pre, rotated, q, rot0, rot1,
                          plain);
}

/* Thread path, around a tile's main loop (gemm_sm90.c: before a short
 * one, after a long one): the lines of C that this
 * consumer's rows row0.. (clipped at M) read in columns col0 .. col0 + BN - 1
 * (clipped at N), into L2; warp w takes rows w, w + 4, ..., lane l the
 * row piece's line l (a piece of at most BN * esize = 512 bytes spans at
 * most 5 lines). Only lines that hold an element of C are named. */
BC_DEVICE void bc_sm90_prefetch_c(const bc_epi *e, const uint32_t bn, uint32_t row0, uint32_t col0, uint32_t t128,
                                  int out_t)
{
    const uint32_t w = t128 / 32u, l = t128 % 32u;
    if (col0 >= e->n)
        return;
    const uint64_t esize = out_t == BC_OUT_F32 ? 4u : 2u, cols = e->n - col0 < bn ? e->n - col0 : bn;
#pragma unroll 4
    for (uint32_t i = 0; i < 16u; i++) {
        const uint32_t row = row0 + w + 4u * i;
        const uint64_t s = e->c + ((uint64_t)row * e->ldc + col0) * esize, first = s & ~(uint64_t)127;
        if (row < e->m && first + 128u * l < s + cols * esize)
            bc_prefetch_l2(first + 128u * l);
    }
}

/* Rows per group of the thread path's C loads (bc_sm90_epi_threads). */
#define BC_SM90_CGRP 4u
/* The raw C values of rows i0 .. i0 + BC_SM90_CGRP - 1 of a thread's
 * column (row i0 + i at p + i * cs; 0 from row nr on, nothing loaded). */
BC_DEVICE void bc_sm90_c_group(uint64_t p, uint64_t cs, uint32_t i0, uint32_t nr, const uint32_t esize,
                               uint32_t *cr)
{
#pragma unroll
    for (uint32_t i = 0; i < BC_SM90_CGRP; i++)
        cr[i] = i0 + i < nr ? bc_sm90_ld_raw(p + i * cs, esize) : 0u;
}

/* Thread path; bn and esize are compile-time constants (types branch by
 * selects, not around each access). Per 32-column chunk, thread (w, l)
 * owns column l of rows w, w + 4, ..., w + 60: it stages alpha * acc as
 * f32, then finishes its 16 elements in groups of BC_SM90_CGRP rows, each
 * group's C loads issued together and one group ahead of the stores
 * (coalesced C reads and D writes along rows), masked at M and N. The
 * loads are explicit because the compiler must assume that a D store
 * aliases the next C load, which kept one load in flight per thread. C may
 * be D: each element is read, then written, by the same thread. Every
 * element's value is worked out unmasked and only its store is predicated
 * (no branch around each element), and its staged word is read at one of
 * two addresses fixed for the thread plus a constant: row w + 4k lies at
 * 512 k + 128 w in the buffer, its 16-byte groups swizzled by (w + 4 (k
 * mod 2)) mod 8, and a group starts on an even k (kernels_ptx/PERF_NOTES.md,
 * change 92). */
BC_DEVICE void bc_sm90_epi_threads(const bc_epi *e, const float *acc, const uint32_t bn, const uint32_t esize,
                                   int out_t, const bc_sm90_epi_at *at, uint32_t *seq)
{
    const int bias = (e->flags & BC_GEMM_F_BIAS) != 0, relu = (e->flags & BC_GEMM_F_RELU) != 0;
    _Static_assert(BC_SM90_CGRP % 2 == 0, "a row group starts on an even row of the thread's");
#pragma unroll
    for (uint32_t q = 0; q < bn / 32u; q++) {
        const uint32_t t128 = bc_opaque_u32(at->t128), w = t128 / 32u, l = t128 % 32u;
        const uint32_t r0 = 16u * w + l / 4u, col = at->col0 + 32u * q + l;
        const uint32_t buf = bc_sm90_next_buf(at, seq);
        bc_bar_sync(at->bar, 128); /* every thread finished reading the previous chunk */
#pragma unroll
        for (uint32_t jj = 0; jj < 4; jj++) {
#pragma unroll
            for (uint32_t h = 0; h < 2; h++) {
                const uint32_t j = 4u * q + jj;
                const uint32_t off = (r0 + 8u * h) * 128u + (8u * jj + 2u * (l % 4u)) * 4u;
                bc_st_shared_v2f32(buf + bc_sm90_swz(off, 128u), e->alpha * acc[4 * j + 2 * h],
                                   e->alpha * acc[4 * j + 2 * h + 1]);
            }
        }
        /* this thread's rows w + 4i of the chunk for i < nr are inside M (none past N) */
        const uint32_t rw = at->row0 + w, left = rw >= e->m || col >= e->n ? 0u : (e->m - rw + 3u) / 4u;
        const uint32_t nr = left < 16u ? left : 16u;
        const uint64_t cs = 4u * (uint64_t)e->ldc * esize, ds = 4u * (uint64_t)e->ldd * esize;
        /* C and D walk down column col, one group of rows at a time */
        uint64_t pc = e->c + ((uint64_t)rw * e->ldc + col) * esize, pd = e->d + ((uint64_t)rw * e->ldd + col) * esize;
        const float bv = bias && nr ? bc_sm90_raw_f32(bc_sm90_ld_raw(e->bias + col * esize, esize), esize, out_t)
                                    : 0.0f;
        /* the staged words of rows w + 4k: even k at s_even + 512 k, odd k at s_odd + 512 (k - 1) */
        const uint32_t s_even = buf + 128u * w + ((4u * l) ^ (w << 4)),
                       s_odd = buf + 128u * (w + 4u) + ((4u * l) ^ ((w + 4u) << 4));
        bc_bar_sync(at->bar, 128);
        /* row groups of BC_SM90_CGRP: group g + 1's C loads are issued before group g's stores */
        uint32_t cr[BC_SM90_CGRP];
        bc_sm90_c_group(pc, cs, 0, nr, esize, cr);
#pragma unroll 1
        for (uint32_t i0 = 0; i0 < 16u; i0 += BC_SM90_CGRP) {
            uint32_t nx[BC_SM90_CGRP];
            pc += BC_SM90_CGRP * cs;
            bc_sm90_c_group(pc, cs, i0 + BC_SM90_CGRP, nr, esize, nx);
            const uint32_t se = s_even + 512u * i0, so = s_odd + 512u * i0;
#pragma unroll
            for (uint32_t i = 0; i < BC_SM90_CGRP; i++) {
                float v = bc_ld_shared_f32((i % 2u ? so : se) + 512u * (i - i % 2u)) +
                          e->beta * bc_sm90_raw_f32(cr[i], esize, out_t);
                if (bias)
                    v += bv;
                if (relu && v < 0.0f)
                    v = 0.0f; /* NaN propagates */
                bc_st_global_if(pd + i * ds, bc_sm90_out_raw(v, esize, out_t), i0 + i < nr, esize);
                cr[i] = nx[i];
            }
            pd += BC_SM90_CGRP * ds;
        }
    }
}

/* One consumer's piece of a finished tile; pre: its bias words loaded
 * before the main loop (bc_sm90_load_bias), or NULL. Plans without C, bias
 * or ReLU ("plain") take a second copy of the staged paths with the flag
 * tests, the bias words and the C loads compiled out: about 8 instructions
 * a pair of outputs instead of about 26 (kernels_ptx/PERF_NOTES.md, changes
 * 69 and 90). Every tile has it; no kernel spills with it. */
BC_DEVICE void bc_sm90_epilogue(const bc_epi *e, const float *acc, const uint32_t bn, int out_t,
                                const bc_sm90_epi_at *at, uint32_t *seq, const uint32_t *pre)
{
    const int tma = (e->flags & BC_GEMM_F_TMA_STORE) != 0;
    if ((e->flags & BC_GEMM_F_C) && !(e->flags & BC_GEMM_F_C_SMEM)) {
        if (out_t == BC_OUT_F32)
            bc_sm90_epi_threads(e, acc, bn, 4, out_t, at, seq);
        else
            bc_sm90_epi_threads(e, acc, bn, 2, out_t, at, seq);
    } else if (!(e->flags & (BC_GEMM_F_C_SMEM | BC_GEMM_F_BIAS | BC_GEMM_F_RELU))) {
        if (out_t == BC_OUT_F32)
            bc_sm90_epi_staged(e, acc, bn, 4, out_t, at, seq, tma, pre, 1);
        else
            bc_sm90_epi_staged(e, acc, bn, 2, out_t, at, seq, tma, pre, 1);
    } else if (out_t == BC_OUT_F32) {
        bc_sm90_epi_staged(e, acc, bn, 4, out_t, at, seq, tma, pre, 0);
    } else {
        bc_sm90_epi_staged(e, acc, bn, 2, out_t, at, seq, tma, pre, 0);
    }
}

#endif
