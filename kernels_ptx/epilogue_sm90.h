/* Hopper epilogue: one consumer warpgroup's wgmma accumulators (64 rows x BN
 * columns, layout in ptx/wgmma.h) to D, chunk by chunk through the
 * warpgroup's two 8 KiB staging buffers (64 rows x up to 128 B, swizzled the
 * way the TMA unit reads them, which also keeps the smem writes free of bank
 * conflicts). Two paths, chosen per plan:
 *
 *   TMA path (BC_GEMM_F_TMA_STORE: no C, D rows 16-byte aligned): alpha,
 *     bias and ReLU applied in registers, values converted to D's type,
 *     staged, and one thread issues a TMA tensor store of the chunk. The TMA
 *     unit clips the box at M and N, so ragged tiles need no masks. Stores
 *     are not waited for: a buffer is reused two chunks later, after
 *     cp.async.bulk.wait_group.read 1, and the next tile's main loop starts
 *     while the last stores drain.
 *   Thread path (otherwise): alpha * acc staged as f32, 32 columns a chunk;
 *     then each thread finishes and stores elements along rows (coalesced C
 *     reads and D writes), masked at M and N.
 *
 * Both paths round once, from the f32 sum, as the reference does.
 */
#ifndef BC_KERNELS_EPILOGUE_SM90_H
#define BC_KERNELS_EPILOGUE_SM90_H

#include "epilogue.h"
#include "gemm_abi.h"
#include "ptx/fence.h"
#include "ptx/tma.h"

/* Byte offset `off` inside a staging buffer whose rows are `inner` bytes
 * (128: SWIZZLE_128B; 64: SWIZZLE_64B): the 16-byte chunk index XORed with
 * the 128-byte line index mod 8 (mod 4). Buffers are 1024-byte aligned. */
BC_DEVICE uint32_t bc_sm90_swz(uint32_t off, const uint32_t inner)
{
    return off ^ (((off >> 7) & (inner == 128 ? 7u : 3u)) << 4);
}

/* Where one consumer's tile piece goes: rows row0..row0+63, columns
 * col0..col0+BN-1 of D; `buf0` its first staging buffer, `seq` the running
 * count of buffers it used (selects the buffer), `bar` its named barrier. */
typedef struct bc_sm90_epi_at {
    uint32_t row0, col0, buf0, bar, t128;
    uint64_t tmap_d;
} bc_sm90_epi_at;

BC_DEVICE uint32_t bc_sm90_next_buf(const bc_sm90_epi_at *at, uint32_t *seq)
{
    return at->buf0 + ((*seq)++ & 1u) * BC_SM90_EPI_BUF_BYTES;
}

BC_DEVICE void bc_st_shared_b32(uint32_t a, uint32_t v) { asm volatile("st.shared.b32 [%0], %1;" ::"r"(a), "r"(v)); }

BC_DEVICE void bc_st_shared_v2f32(uint32_t a, float x, float y)
{
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(a), "f"(x), "f"(y));
}

typedef struct bc_f32x4s {
    float x, y, z, w;
} bc_f32x4s;

BC_DEVICE bc_f32x4s bc_ld_shared_v4f32(uint32_t a)
{
    bc_f32x4s v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a));
    return v;
}

BC_DEVICE float bc_ld_shared_f32(uint32_t a)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}

/* TMA path; esize (2 or 4) and bn are compile-time constants. */
BC_DEVICE void bc_sm90_epi_tma(const bc_epi *e, const float *acc, const uint32_t bn, const uint32_t esize,
                               int out_t, const bc_sm90_epi_at *at, uint32_t *seq)
{
    const uint32_t inner = bn * esize < 128u ? bn * esize : 128u;
    const uint32_t cols = inner / esize; /* D columns per chunk */
    const uint32_t w = at->t128 / 32u, l = at->t128 % 32u;
    const uint32_t r0 = 16u * w + l / 4u;
    const int bias = (e->flags & BC_GEMM_F_BIAS) != 0, relu = (e->flags & BC_GEMM_F_RELU) != 0;
#pragma unroll
    for (uint32_t q = 0; q < bn / cols; q++) {
        const uint32_t buf = bc_sm90_next_buf(at, seq);
        if (at->t128 == 0)
            bc_bulk_wait_read(1); /* the store that last read `buf` is done reading */
        bc_bar_sync(at->bar, 128);
#pragma unroll
        for (uint32_t jj = 0; jj < cols / 8u; jj++) {
            const uint32_t j = q * (cols / 8u) + jj; /* accumulator group: columns 8j .. 8j+7 */
            const uint32_t col = at->col0 + 8u * j + 2u * (l % 4u);
            float b0 = 0.0f, b1 = 0.0f;
            if (bias) {
                b0 = col < e->n ? bc_load_out(e->bias, col, out_t) : 0.0f;
                b1 = col + 1u < e->n ? bc_load_out(e->bias, col + 1u, out_t) : 0.0f;
            }
#pragma unroll
            for (uint32_t h = 0; h < 2; h++) {
                float v0 = e->alpha * acc[4 * j + 2 * h] + b0, v1 = e->alpha * acc[4 * j + 2 * h + 1] + b1;
                if (relu) {
                    v0 = v0 < 0.0f ? 0.0f : v0; /* NaN stays NaN */
                    v1 = v1 < 0.0f ? 0.0f : v1;
                }
                const uint32_t off = (r0 + 8u * h) * inner + (8u * jj + 2u * (l % 4u)) * esize;
                const uint32_t a = buf + bc_sm90_swz(off, inner);
                if (esize == 4)
                    bc_st_shared_v2f32(a, v0, v1);
                else
                    bc_st_shared_b32(a, bc_pack2(v0, v1, out_t));
            }
        }
        bc_fence_proxy_async_smem(); /* our st.shared before the TMA unit reads them */
        bc_bar_sync(at->bar, 128);
        if (at->t128 == 0) {
            bc_tma_store_2d(at->tmap_d, (int32_t)(at->col0 + q * cols), (int32_t)at->row0, buf);
            bc_bulk_commit();
        }
    }
}

/* Thread path; bn is a compile-time constant. */
BC_DEVICE void bc_sm90_epi_threads(const bc_epi *e, const float *acc, const uint32_t bn, int out_t,
                                   const bc_sm90_epi_at *at, uint32_t *seq)
{
    const uint32_t w = at->t128 / 32u, l = at->t128 % 32u;
    const uint32_t r0 = 16u * w + l / 4u;
#pragma unroll
    for (uint32_t q = 0; q < bn / 32u; q++) {
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
            const uint32_t idx = at->t128 + 128u * i, r = idx / 32u, cc = idx % 32u;
            const uint32_t row = at->row0 + r, col = at->col0 + 32u * q + cc;
            if (row < e->m && col < e->n) {
                const float v = bc_ld_shared_f32(buf + bc_sm90_swz(r * 128u + cc * 4u, 128u));
                bc_epi_store_one(e, (uint64_t)row * e->ldd + col, bc_epi_finish(e, v, row, col, out_t), out_t);
            }
        }
    }
}

/* One consumer's piece of a finished tile. */
BC_DEVICE void bc_sm90_epilogue(const bc_epi *e, const float *acc, const uint32_t bn, int out_t,
                                const bc_sm90_epi_at *at, uint32_t *seq)
{
    if (!(e->flags & BC_GEMM_F_TMA_STORE))
        bc_sm90_epi_threads(e, acc, bn, out_t, at, seq);
    else if (out_t == BC_OUT_F32)
        bc_sm90_epi_tma(e, acc, bn, 4, out_t, at, seq);
    else
        bc_sm90_epi_tma(e, acc, bn, 2, out_t, at, seq);
}

#endif
