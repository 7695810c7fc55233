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
 *   TMA path (BC_GEMM_F_TMA_STORE: D rows 16-byte aligned; no C or C in
 *     smem): alpha, beta*C, bias and ReLU applied in registers, values
 *     converted to D's type, staged, and one thread issues a TMA tensor
 *     store of the chunk. The TMA unit clips the box at M and N. Stores are
 *     not waited for: a buffer is reused two chunks later, after
 *     cp.async.bulk.wait_group.read 1, and the next tile's main loop starts
 *     while the last stores drain.
 *   Copy-out path (D rows not 16-byte aligned, e.g. an odd N in bf16; no C
 *     or C in smem): the same finished, converted values are staged, then
 *     each warp copies rows of the chunk to D, one 4-byte word per lane (a
 *     2-byte store at an end of a 16-bit row that starts or ends mid-word).
 *   Thread path (C in global memory: its rows are not 16-byte aligned):
 *     alpha * acc staged as f32, 32 columns a chunk; then each thread
 *     finishes and stores elements along rows (coalesced C reads and D
 *     writes), masked at M and N.
 *
 * Every path rounds once, from the same f32 expression
 * ((alpha * acc + beta * C) + bias, then ReLU), so they write the same bytes.
 *
 * The bias: tiles up to 64 columns wide load every bias value a thread
 * needs into registers before their main loop (bc_sm90_load_bias: at most
 * 16), so the loads' latency passes during the main loop; an L1 prefetch
 * there did not help, and the loads cost a skinny tile's epilogue about
 * 0.65 us (kernels_ptx/PERF_NOTES.md). Wider tiles prefetch their slice into
 * L1 before the main loop (bc_sm90_prefetch_bias), and each staged chunk
 * loads its bias values before its first shared store, so a chunk waits for
 * L1 once instead of for L2 at every column group.
 */
#ifndef BC_KERNELS_EPILOGUE_SM90_H
#define BC_KERNELS_EPILOGUE_SM90_H

#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/fence.h"
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

/* The bias values this thread's fragments take in the `bn` columns from
 * col0 (bn a compile-time constant, at most 64): bv[2j] and bv[2j + 1] for
 * accumulator group j (columns col0 + 8j + 2 (lane mod 4) and the next), 0
 * past N or without a bias. A tile at most 64 columns wide loads its
 * whole slice before its main loop; a staged chunk of a wider one, its
 * own columns (bc_sm90_stage_chunk). */
BC_DEVICE void bc_sm90_load_bias(const bc_epi *e, const uint32_t bn, uint32_t col0, uint32_t t128, int out_t,
                                 float *bv)
{
    const int bias = (e->flags & BC_GEMM_F_BIAS) != 0;
    const uint32_t l = t128 % 32u;
#pragma unroll
    for (uint32_t j = 0; j < bn / 8u; j++) {
        const uint32_t col = col0 + 8u * j + 2u * (l % 4u);
        bv[2 * j] = bias && col < e->n ? bc_load_out(e->bias, col, out_t) : 0.0f;
        bv[2 * j + 1] = bias && col + 1u < e->n ? bc_load_out(e->bias, col + 1u, out_t) : 0.0f;
    }
}

/* Finishes the chunk's fragments and stages them, converted to D's type, in
 * `buf` (esize and bn compile-time constants): the part the TMA and the
 * copy-out paths share. pre: the tile's bias values from bc_sm90_load_bias,
 * or NULL to load the chunk's here. */
BC_DEVICE void bc_sm90_stage_chunk(const bc_epi *e, const float *acc, const uint32_t bn, const uint32_t esize,
                                   int out_t, const bc_sm90_epi_at *at, uint32_t q, uint32_t buf, const float *pre)
{
    const uint32_t inner = bc_sm90_inner(bn, esize), cols = inner / esize;
    const uint32_t t128 = bc_opaque_u32(at->t128), w = t128 / 32u, l = t128 % 32u;
    const uint32_t r0 = 16u * w + l / 4u;
    const int relu = (e->flags & BC_GEMM_F_RELU) != 0;
    const int has_c = (e->flags & BC_GEMM_F_C_SMEM) != 0;
    const uint32_t cb = has_c ? bc_sm90_cbox(at, bn, esize, q) : 0u;
    /* the chunk's bias values: from the tile's, or loaded now, before any shared store can order them */
    float bv[16];
    if (!pre)
        bc_sm90_load_bias(e, cols, at->col0 + q * cols, t128, out_t, bv);
    const float *b = pre ? pre + 2u * q * (cols / 8u) : bv;
#pragma unroll
    for (uint32_t jj = 0; jj < cols / 8u; jj++) {
        const uint32_t j = q * (cols / 8u) + jj; /* accumulator group: columns 8j .. 8j+7 */
        const float b0 = b[2 * jj], b1 = b[2 * jj + 1];
#pragma unroll
        for (uint32_t h = 0; h < 2; h++) {
            const uint32_t off = bc_sm90_swz((r0 + 8u * h) * inner + (8u * jj + 2u * (l % 4u)) * esize, inner);
            float v0 = e->alpha * acc[4 * j + 2 * h], v1 = e->alpha * acc[4 * j + 2 * h + 1];
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
            if (esize == 4)
                bc_st_shared_v2f32(buf + off, v0, v1);
            else
                bc_st_shared_b32(buf + off, bc_pack2(v0, v1, out_t));
        }
    }
}

/* Copy-out of one staged chunk (columns cbase.. of D, `cols` a chunk):
 * rows one warp at a time (warp w takes rows w, w + 4, ...), each lane
 * writing one 4-byte aligned word of the row's bytes. A row of D starts at
 * an even byte, so for 16-bit D every word is two adjacent elements (one
 * shared load, or two and a byte permute when the row starts at the upper
 * half of a word) and at most two elements are left over, stored alone by
 * lane 31: the first when the row starts mid-word, the last when the rest
 * is odd. For f32 D a lane stores one element. A warp's stores of a row are
 * adjacent words: they coalesce into whole sectors but at the row's ends.
 * (A previous version wrote 16-byte windows, the ends element by element:
 * 2.4x the time of the aligned shape next to it at 9797x197x16.) */
BC_DEVICE void bc_sm90_copyout_chunk(const bc_epi *e, const uint32_t cols, const uint32_t esize,
                                     const bc_sm90_epi_at *at, uint32_t cbase, uint32_t buf)
{
    const uint32_t inner = cols * esize;
    const uint32_t t128 = bc_opaque_u32(at->t128), w = t128 / 32u, l = t128 % 32u;
    if (cbase >= e->n)
        return;
    const uint32_t ne = e->n - cbase < cols ? e->n - cbase : cols; /* elements of each row's piece */
#pragma unroll 4
    for (uint32_t i = 0; i < 16u; i++) {
        const uint32_t r = w + 4u * i, row = at->row0 + r, roff = r * inner;
        if (row >= e->m)
            continue;
        const uint64_t gbyte = e->d + ((uint64_t)row * e->ldd + cbase) * esize;
        if (esize == 4) {
            if (l < ne)
                *(uint32_t *)(uintptr_t)(gbyte + 4u * l) = bc_ld_shared_b32(buf + bc_sm90_swz(roff + 4u * l, inner));
            continue;
        }
        const uint32_t lead = (uint32_t)(gbyte >> 1) & 1u; /* 1: the piece starts at a word's upper half */
        const uint32_t nw = (ne - lead) / 2u;               /* whole words: at most 32, 31 when lead */
        if (l < nw) {
            const uint32_t b = 2u * lead + 4u * l; /* staged byte of the word's first element */
            uint32_t v;
            if (lead)
                v = bc_prmt(bc_ld_shared_b32(buf + bc_sm90_swz(roff + b - 2u, inner)),
                            bc_ld_shared_b32(buf + bc_sm90_swz(roff + b + 2u, inner)), 0x5432u);
            else
                v = bc_ld_shared_b32(buf + bc_sm90_swz(roff + b, inner));
            *(uint32_t *)(uintptr_t)(gbyte + b) = v;
        }
        if (l == 31u) {
            if (lead)
                *(uint16_t *)(uintptr_t)gbyte = bc_ld_shared_b16(buf + bc_sm90_swz(roff, inner));
            if ((ne - lead) & 1u)
                *(uint16_t *)(uintptr_t)(gbyte + 2u * (ne - 1u)) =
                    bc_ld_shared_b16(buf + bc_sm90_swz(roff + 2u * (ne - 1u), inner));
        }
    }
}

/* The staged paths (TMA store, or copy-out when `tma` is 0); esize (2 or
 * 4) and bn are compile-time constants. Both stage each chunk with the same
 * code (one copy per element size keeps the kernels small). TMA: stores
 * are not waited for; a buffer is reused two chunks later, once the store
 * that read it is done reading. Copy-out: the barrier before staging also
 * says every thread finished copying the chunk that last used the buffer. */
BC_DEVICE void bc_sm90_epi_staged(const bc_epi *e, const float *acc, const uint32_t bn, const uint32_t esize,
                                  int out_t, const bc_sm90_epi_at *at, uint32_t *seq, int tma, const float *pre)
{
    const uint32_t cols = bc_sm90_inner(bn, esize) / esize;
#pragma unroll
    for (uint32_t q = 0; q < bn / cols; q++) {
        const uint32_t buf = bc_sm90_next_buf(at, seq);
        if (tma && at->t128 == 0)
            bc_bulk_wait_read(1); /* the store that last read `buf` is done reading */
        bc_bar_sync(at->bar, 128);
        bc_sm90_stage_chunk(e, acc, bn, esize, out_t, at, q, buf, pre);
        if (tma)
            bc_fence_proxy_async_smem(); /* our st.shared before the TMA unit reads them */
        bc_bar_sync(at->bar, 128);
        if (!tma) {
            bc_sm90_copyout_chunk(e, cols, esize, at, at->col0 + q * cols, buf);
        } else if (at->t128 == 0) {
            bc_tma_store_2d(at->tmap_d, (int32_t)(at->col0 + q * cols), (int32_t)at->row0, buf);
            bc_bulk_commit();
        }
    }
}

/* Thread path; bn is a compile-time constant. */
BC_DEVICE void bc_sm90_epi_threads(const bc_epi *e, const float *acc, const uint32_t bn, int out_t,
                                   const bc_sm90_epi_at *at, uint32_t *seq)
{
#pragma unroll
    for (uint32_t q = 0; q < bn / 32u; q++) {
        const uint32_t t128 = bc_opaque_u32(at->t128), w = t128 / 32u, l = t128 % 32u;
        const uint32_t r0 = 16u * w + l / 4u;
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
        bc_bar_sync(at->bar, 128);
        /* 64 rows x 32 columns: a warp covers one row's 32 columns per step */
#pragma unroll 4
        for (uint32_t i = 0; i < 16; i++) {
            const uint32_t idx = t128 + 128u * i, r = idx / 32u, cc = idx % 32u;
            const uint32_t row = at->row0 + r, col = at->col0 + 32u * q + cc;
            if (row < e->m && col < e->n) {
                const float v = bc_ld_shared_f32(buf + bc_sm90_swz(r * 128u + cc * 4u, 128u));
                bc_epi_store_one(e, (uint64_t)row * e->ldd + col, bc_epi_finish(e, v, row, col, out_t), out_t);
            }
        }
    }
}

/* One consumer's piece of a finished tile; pre: its bias values loaded
 * before the main loop (bc_sm90_load_bias), or NULL. */
BC_DEVICE void bc_sm90_epilogue(const bc_epi *e, const float *acc, const uint32_t bn, int out_t,
                                const bc_sm90_epi_at *at, uint32_t *seq, const float *pre)
{
    if ((e->flags & BC_GEMM_F_C) && !(e->flags & BC_GEMM_F_C_SMEM))
        bc_sm90_epi_threads(e, acc, bn, out_t, at, seq);
    else if (out_t == BC_OUT_F32)
        bc_sm90_epi_staged(e, acc, bn, 4, out_t, at, seq, (e->flags & BC_GEMM_F_TMA_STORE) != 0, pre);
    else
        bc_sm90_epi_staged(e, acc, bn, 2, out_t, at, seq, (e->flags & BC_GEMM_F_TMA_STORE) != 0, pre);
}

#endif
