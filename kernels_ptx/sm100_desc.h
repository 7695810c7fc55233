/* Blackwell (tcgen05) descriptor encoders: pure integer functions, no asm,
 * so the same header compiles into the device C (gemm_sm100.c) and into the
 * host unit tests (tests/unit/test_sm100_desc.c), which check them against
 * the words CUTLASS's and DeepGEMM's sm100 code produce for the same inputs
 * (cited there by file and line), the layouts of PTX ISA 9.1 Tables 40/42.
 *
 * Nothing here has been run on Blackwell hardware by us; CUTLASS's and
 * DeepGEMM's kernels, which build the same words, have.
 */
#ifndef BC_KERNELS_SM100_DESC_H
#define BC_KERNELS_SM100_DESC_H

#include <stdint.h>

/* Operand formats of kind::f16 (instruction descriptor bits 7-9 / 10-12). */
enum { BC_SM100_FMT_F16 = 0, BC_SM100_FMT_BF16 = 1 };
/* Operand majorness (bits 15 / 16): K-major is the "not transposed" case. */
enum { BC_SM100_K_MAJOR = 0, BC_SM100_MN_MAJOR = 1 };

/* 32-bit instruction descriptor for tcgen05.mma kind::f16, dense, no
 * negation, no saturation:
 *   bits  0-1  sparsity selector  0     bit  2  sparse          0
 *   bit   3    saturate           0     bits 4-5 D format (0 F16, 1 F32)
 *   bits  7-9  A format (0 F16, 1 BF16) bits 10-12 B format
 *   bits 13/14 negate A/B         0     bit 15 A major, bit 16 B major
 *   bits 17-22 N >> 3                   bits 24-28 M >> 4
 *   bits 30-31 max shift (.ws)    0     bits 6, 23, 29 reserved 0
 * a_fmt/b_fmt: BC_SM100_FMT_*; d_f32: 1 = f32 accumulator; m: 64 or 128
 * (cta_group::1); n: a multiple of 8 in [8, 256] (PTX ISA 9.1 Table 39;
 * CUTLASS's smem-smem atom SM100_MMA_F16BF16_SS asserts the same,
 * cute/arch/mma_sm100_umma.hpp:88-90). For m = 128, CUTLASS's TMEM-A atoms
 * (SM100_MMA_*_TS, same file :129-133, :173-177) and DeepGEMM
 * (impls/sm100_bf16_gemm.cuh:274-277) ask n % 16; the GEMM's n = 256 meets
 * every rule. a_major/b_major: BC_SM100_*_MAJOR. */
static inline uint32_t bc_sm100_idesc_f16(uint32_t a_fmt, uint32_t b_fmt, uint32_t d_f32, uint32_t m,
                                          uint32_t n, uint32_t a_major, uint32_t b_major)
{
    return (d_f32 & 3u) << 4 | (a_fmt & 7u) << 7 | (b_fmt & 7u) << 10 | (a_major & 1u) << 15 |
           (b_major & 1u) << 16 | ((n >> 3) & 0x3Fu) << 17 | ((m >> 4) & 0x1Fu) << 24;
}

/* Layout codes of the sm100 shared-memory descriptor, bits 61-63. */
enum {
    BC_SM100_LAYOUT_NONE = 0,
    BC_SM100_LAYOUT_128B_BASE32B = 1,
    BC_SM100_LAYOUT_128B = 2,
    BC_SM100_LAYOUT_64B = 4,
    BC_SM100_LAYOUT_32B = 6,
};

/* 64-bit shared-memory matrix descriptor, 128-byte swizzle:
 *   bits  0-13 start address >> 4   (the 32-bit .shared::cta address)
 *   bits 16-29 LBO >> 4              bits 32-45 SBO >> 4
 *   bits 46-48 fixed 0b001 (bit 46 = 1: required on sm_100, absent on sm_90)
 *   bits 49-51 base offset 0: the swizzle atoms start on 1024-B boundaries
 *   bit  52    LBO mode 0 (relative)  bits 61-63 layout 2 = SWIZZLE_128B
 * For a K-major tile written by TMA with a {64 x 16-bit, rows} box and
 * 128-byte swizzle: LBO is unused for swizzled K-major (encode 16 -> 1, as
 * CUTLASS does), SBO = 1024 (8 rows x 128 B). The K step inside the 64-wide
 * atom is a plain +32 B (k16 x 2 B) on `addr`: the hardware applies the XOR
 * swizzle to the logical address, so the base offset stays 0. */
static inline uint64_t bc_sm100_smem_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | (uint64_t)((lbo & 0x3FFFFu) >> 4) << 16 |
           (uint64_t)((sbo & 0x3FFFFu) >> 4) << 32 | 1ull << 46 | (uint64_t)BC_SM100_LAYOUT_128B << 61;
}

/* TMEM address: lane in bits 16-31, column in bits 0-15. */
static inline uint32_t bc_sm100_tmem_addr(uint32_t lane, uint32_t col) { return lane << 16 | col; }

/* First TMEM lane that warp `warp` (CTA warp index) may access with
 * tcgen05.ld/st: 32 * (warp % 4). */
static inline uint32_t bc_sm100_tmem_lane_base(uint32_t warp) { return 32u * (warp % 4u); }

#endif
