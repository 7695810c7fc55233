/* The Blackwell descriptor encoders (kernels_ptx/sm100_desc.h) against
 * words that public, hardware-tested code produces for the same inputs.
 *
 * No expected value here comes from our encoders or from our own reading of
 * the PTX tables alone. Each is either a literal worked out by hand, in the
 * comment beside it, from the bit fields and constructors of CUTLASS (whose
 * sm100 GEMMs run on B200) and DeepGEMM (whose sm100 kernels run in
 * production), or a decode of our word by those fields. Sources:
 *
 *   CUTLASS  github.com/NVIDIA/cutlass, commit 7107b05535f8977f5ecb9d01ee203205b1fd9bc4
 *     desc.hpp    = include/cute/arch/mma_sm100_desc.hpp
 *     traits.hpp  = include/cute/atom/mma_traits_sm100.hpp
 *     umma.hpp    = include/cute/arch/mma_sm100_umma.hpp
 *     tmem.hpp    = include/cute/arch/tmem_allocator_sm100.hpp
 *     arch.h      = include/cutlass/arch/arch.h
 *   DeepGEMM github.com/deepseek-ai/DeepGEMM, commit 54e22612409371d6364144b69086735beb54e98b
 *     dg_mma.cuh  = deep_gemm/include/deep_gemm/mma/sm100.cuh
 *     dg_gemm.cuh = deep_gemm/include/deep_gemm/impls/sm100_bf16_gemm.cuh
 *   PTX ISA 9.1: §9.7.16.4.2 Table 42 (instruction descriptor), §9.7.16.4.1
 *     Table 40 (shared-memory descriptor), §9.7.16.8.1 (TMEM lanes per warp).
 *
 * Cross-check: every literal word below was also produced by CUTLASS's own
 * code, compiled for the host (nvcc 13.0) at that commit: make_instr_desc
 * for each instruction descriptor; an UMMA::SmemDescriptor filled the way
 * make_umma_desc fills it for each shared-memory word; and, for the k-steps,
 * TiledMma::make_fragment_A/B (as the sm100 collective calls them,
 * include/cutlass/gemm/collective/sm100_mma_warpspecialized.hpp:561-562) on
 * tile_to_shape(Layout_K_SW128_Atom<T>, 128x64 and 256x64) smem tensors,
 * bf16 and f16, which gave four k16 descriptors laid out (_1,_1,_4):(_0,_0,_2)
 * = 0x4000404000010000 + 2k (start address 0 there because host code cannot
 * take a shared-memory address). Nothing of CUTLASS is kept in this tree.
 *
 * The built kernels are checked in test_sm100_built.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gemm_abi.h"
#include "sm100_desc.h"

/* ---------------------------------------------------------------- instruction descriptor */

/* CUTLASS UMMA::InstrDescriptor (desc.hpp:416-443), the fields our words use:
 *   c_format_ bits [4,6)   desc.hpp:425   CFormat F16 = 0, F32 = 1 (desc.hpp:239-243)
 *   a_format_ bits [7,10)  desc.hpp:427   F16F32Format F16 = 0, BF16 = 1 (desc.hpp:128-132)
 *   b_format_ bits [10,13) desc.hpp:428
 *   a_major_  bit 15       desc.hpp:431   Major K = 0, MN = 1 (desc.hpp:62-65)
 *   b_major_  bit 16       desc.hpp:432
 *   n_dim_    bits [17,23) desc.hpp:433   = N >> 3 (make_instr_desc, desc.hpp:491)
 *   m_dim_    bits [24,29) desc.hpp:435   = M >> 4 (desc.hpp:490)
 * and make_instr_desc (desc.hpp:474-506) leaves negate, saturate, sparse and
 * max_shift 0 for a dense MMA (desc.hpp:496-503). The same layout is PTX ISA
 * 9.1 Table 42. traits.hpp:247-248 builds the SS atom's descriptor with it. */
typedef struct idesc_case {
    uint32_t a_fmt, b_fmt, d_f32, m, n, a_major, b_major;
    uint32_t want;
} idesc_case;

static const idesc_case idesc_cases[] = {
    /* bf16 x bf16 -> f32, K-major A and B, M=128, N=256 (the kernel's bf16 MMA):
     * c_format 1<<4 = 0x10; a_format 1<<7 = 0x80; b_format 1<<10 = 0x400;
     * n_dim 256>>3 = 32, 32<<17 = 0x400000; m_dim 128>>4 = 8, 8<<24 = 0x08000000 */
    {BC_SM100_FMT_BF16, BC_SM100_FMT_BF16, 1, 128, 256, BC_SM100_K_MAJOR, BC_SM100_K_MAJOR, 0x08400490u},
    /* f16 x f16 -> f32, M=128, N=256 (the kernel's f16 MMA): formats 0:
     * 0x10 + 0x400000 + 0x08000000 */
    {BC_SM100_FMT_F16, BC_SM100_FMT_F16, 1, 128, 256, BC_SM100_K_MAJOR, BC_SM100_K_MAJOR, 0x08400010u},
    /* bf16 -> f32, M=128, N=128: n_dim 16, 16<<17 = 0x200000 */
    {BC_SM100_FMT_BF16, BC_SM100_FMT_BF16, 1, 128, 128, BC_SM100_K_MAJOR, BC_SM100_K_MAJOR, 0x08200490u},
    /* bf16 -> f32, M=128, N=16: n_dim 2, 2<<17 = 0x40000 */
    {BC_SM100_FMT_BF16, BC_SM100_FMT_BF16, 1, 128, 16, BC_SM100_K_MAJOR, BC_SM100_K_MAJOR, 0x08040490u},
    /* bf16 -> f32, M=64, N=256: m_dim 4, 4<<24 = 0x04000000 */
    {BC_SM100_FMT_BF16, BC_SM100_FMT_BF16, 1, 64, 256, BC_SM100_K_MAJOR, BC_SM100_K_MAJOR, 0x04400490u},
    /* f16 -> f32, M=64, N=8: 0x10 + (1<<17 = 0x20000) + 0x04000000 */
    {BC_SM100_FMT_F16, BC_SM100_FMT_F16, 1, 64, 8, BC_SM100_K_MAJOR, BC_SM100_K_MAJOR, 0x04020010u},
    /* bf16, B MN-major: b_major 1<<16 = 0x10000 on 0x08400490 */
    {BC_SM100_FMT_BF16, BC_SM100_FMT_BF16, 1, 128, 256, BC_SM100_K_MAJOR, BC_SM100_MN_MAJOR, 0x08410490u},
    /* bf16, A MN-major: a_major 1<<15 = 0x8000 on 0x08400490 */
    {BC_SM100_FMT_BF16, BC_SM100_FMT_BF16, 1, 128, 256, BC_SM100_MN_MAJOR, BC_SM100_K_MAJOR, 0x08408490u},
    /* f16 x f16 -> f16 accumulator (c_format 0), M=128, N=16: 0x40000 + 0x08000000 */
    {BC_SM100_FMT_F16, BC_SM100_FMT_F16, 0, 128, 16, BC_SM100_K_MAJOR, BC_SM100_K_MAJOR, 0x08040000u},
};

static void test_idesc_words_from_cutlass(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof idesc_cases / sizeof idesc_cases[0]; i++) {
        const idesc_case *c = &idesc_cases[i];
        assert_int_equal(bc_sm100_idesc_f16(c->a_fmt, c->b_fmt, c->d_f32, c->m, c->n, c->a_major, c->b_major),
                         c->want);
    }
}

/* Every shape CUTLASS's smem-smem atom accepts (umma.hpp:88-90: M 64 or
 * 128, N a multiple of 8 in [8, 256]), both input types, both accumulators,
 * all majors: our word, decoded by CUTLASS's field positions (above), holds
 * CUTLASS's value of each field and nothing else. */
static void test_idesc_decoded_by_cutlass_fields(void **state)
{
    (void)state;
    int checked = 0;
    for (uint32_t m = 64; m <= 128; m += 64)
        for (uint32_t n = 8; n <= 256; n += 8)
            for (uint32_t fmt = 0; fmt < 2; fmt++)
                for (uint32_t d = 0; d < 2; d++)
                    for (uint32_t maj = 0; maj < 4; maj++) {
                        const uint32_t w = bc_sm100_idesc_f16(fmt, fmt, d, m, n, maj & 1, maj >> 1);
                        assert_int_equal((w >> 4) & 3, d);          /* c_format_ */
                        assert_int_equal((w >> 7) & 7, fmt);        /* a_format_ */
                        assert_int_equal((w >> 10) & 7, fmt);       /* b_format_ */
                        assert_int_equal((w >> 15) & 1, maj & 1);   /* a_major_ */
                        assert_int_equal((w >> 16) & 1, maj >> 1);  /* b_major_ */
                        assert_int_equal((w >> 17) & 0x3F, n >> 3); /* n_dim_ */
                        assert_int_equal((w >> 24) & 0x1F, m >> 4); /* m_dim_ */
                        /* sparse_id2_, sparse_flag_, saturate_ [0,4); reserved 6;
                         * a/b_negate_ 13-14; reserved 23 and 29; max_shift_ [30,32) */
                        assert_int_equal(w & (0xFu | 1u << 6 | 3u << 13 | 1u << 23 | 7u << 29), 0);
                        checked++;
                    }
    assert_int_equal(checked, 2 * 32 * 2 * 2 * 4);
}

/* ---------------------------------------------------------------- shared-memory descriptor */

/* CUTLASS UMMA::SmemDescriptor (desc.hpp:101-126):
 *   start_address_      bits [0,14)  desc.hpp:107  = address >> 4 (make_umma_desc, desc.hpp:754-755)
 *   leading_byte_offset_ bits [16,30) desc.hpp:109
 *   stride_byte_offset_ bits [32,46) desc.hpp:111
 *   version_            bits [46,48) desc.hpp:111  = 1 (desc.hpp:746)
 *   base_offset_        bits [49,52) desc.hpp:113  = 0 (desc.hpp:757-758)
 *   lbo_mode_           bit 52       desc.hpp:113  = 0 (desc.hpp:747)
 *   layout_type_        bits [61,64) desc.hpp:115  SWIZZLE_128B = 2 (desc.hpp:85)
 * For a K-major, 128B-swizzled operand make_umma_desc takes the canonical
 * layout ((8,n),2):((8,SBO),1) in 16-byte units (desc.hpp:807) and sets
 * SBO = its stride between 8-row groups, 8 rows x 128 B = 1024 B = 64 units
 * (desc.hpp:831), and LBO = 1 (desc.hpp:832). DeepGEMM builds the same
 * word (dg_mma.cuh:14-39) with SBO = (128 / 16) * BLOCK_K(64) * 2 B = 1024
 * (dg_mma.cuh:99, 108) and LBO = 0 (dg_mma.cuh:107-109: unused for a
 * K-major operand one swizzle atom wide); we follow CUTLASS's 1.
 * So every word of our operands is
 *   1<<46 (version)                        0x0000_4000_0000_0000
 *   64<<32 (SBO)                           0x0000_0040_0000_0000
 *   1<<16 (LBO)                            0x0000_0000_0001_0000
 *   2<<61 (layout)                         0x4000_0000_0000_0000
 *                                      sum 0x4000_4040_0001_0000
 * plus the start address >> 4 in the low 14 bits. Same layout: PTX ISA 9.1
 * Table 40. */
#define SDESC_HI 0x4000404000010000ull

/* The kernel's operands: stage s of the ring at base + s * 48 KiB, A (16 KiB)
 * then B; k16 step ks of a 64-wide k-block at +32*ks bytes. CUTLASS moves a
 * descriptor by adding to its low word in 16-byte units (DescriptorIterator,
 * desc.hpp:863-873), and its fragment for this layout steps the k16 blocks
 * by 2 units (cross-check above); DeepGEMM adds (k * 2 B) >> 4 for element
 * k = 16*ks (advance_umma_desc_lo, dg_mma.cuh:88-92, used at
 * dg_gemm.cuh:326-331) and a stage's bytes / 16 per stage
 * (dg_gemm.cuh:269-270). Both keep base_offset_ 0 for these steps. */
typedef struct sdesc_case {
    uint32_t addr;
    uint64_t want;
} sdesc_case;

static const sdesc_case sdesc_cases[] = {
    {0x400, 0x4000404000010040ull},   /* base 0x400, stage 0, A, ks 0: 0x400 >> 4 = 0x40 */
    {0x420, 0x4000404000010042ull},   /* ks 1: +32 B = +2 */
    {0x440, 0x4000404000010044ull},   /* ks 2 */
    {0x460, 0x4000404000010046ull},   /* ks 3 */
    {0x4400, 0x4000404000010440ull},  /* stage 0, B: 0x400 + 0x4000 */
    {0x4460, 0x4000404000010446ull},  /* stage 0, B, ks 3 */
    {0xC400, 0x4000404000010C40ull},  /* stage 1, A: 0x400 + 0xC000 */
    {0x10420, 0x4000404000011042ull}, /* stage 1, B, ks 1: 0x400 + 0xC000 + 0x4000 + 0x20 */
    {0x18440, 0x4000404000011844ull}, /* stage 2, A, ks 2: 0x400 + 0x18000 + 0x40 */
    {0x28460, 0x4000404000012846ull}, /* stage 3, B, ks 3: 0x400 + 0x24000 + 0x4000 + 0x60 */
    {0x800, 0x4000404000010080ull},   /* base 0x800, stage 0, A */
    {0x34860, 0x4000404000013486ull}, /* base 0x10000, stage 3, B, ks 3: 0x10000 + 0x24000 + 0x4000 + 0x60 */
};

static void test_sdesc_words_from_cutlass(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof sdesc_cases / sizeof sdesc_cases[0]; i++)
        assert_true(bc_sm100_smem_desc_sw128(sdesc_cases[i].addr, 16, 1024) == sdesc_cases[i].want);
}

/* Every descriptor the kernel's ring makes, for 1024-byte aligned bases from
 * the start of dynamic shared memory (0x400: sm_90+ reserve the first
 * 1 KiB) to the highest whose last byte stays below 2^18 (the 14-bit start
 * field holds address bits 4-17): the fixed high part above plus the start
 * address >> 4. */
static void test_sdesc_every_stage_and_k_step(void **state)
{
    (void)state;
    const uint32_t bases[] = {0x400, 0x800, 0x1000, 0x4000, 0x10000};
    int checked = 0;
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++)
        for (uint32_t s = 0; s < BC_SM100_STAGES; s++)
            for (uint32_t op = 0; op < 2; op++)
                for (uint32_t ks = 0; ks < BC_SM100_BK / 16; ks++) {
                    const uint32_t a = bases[i] + s * 49152u + op * 16384u + 32u * ks;
                    assert_true(a + 1024u <= 1u << 18);
                    assert_true(bc_sm100_smem_desc_sw128(a, 16, 1024) == (SDESC_HI | (a >> 4)));
                    checked++;
                }
    assert_int_equal(checked, 5 * 4 * 2 * 4);
    assert_int_equal(BC_SM100_STAGE_BYTES, 49152); /* the layout the addresses above assume */
    assert_int_equal(BC_SM100_A_STAGE_BYTES, 16384);
}

/* Field widths at their edges: CUTLASS assigns into 14-bit bit fields, so a
 * value with more bits keeps its low 14 (desc.hpp:107-111); LBO and SBO in
 * 16-byte units like the start address (desc.hpp:106-111 comments, "4LSB not
 * included"). */
static void test_sdesc_field_widths(void **state)
{
    (void)state;
    /* start 0x3FFF0 >> 4 = 0x3FFF: the widest start address */
    assert_true(bc_sm100_smem_desc_sw128(0x3FFF0, 16, 1024) == (SDESC_HI | 0x3FFF));
    /* 0x40400 >> 4 = 0x4040, low 14 bits 0x0040 */
    assert_true(bc_sm100_smem_desc_sw128(0x40400, 16, 1024) == (SDESC_HI | 0x40));
    /* LBO 8192 -> 512 = 0x200 at bit 16: 0x0200_0000; SBO 2048 -> 128 = 0x80 at bit 32 */
    assert_true(bc_sm100_smem_desc_sw128(0x400, 8192, 2048) == 0x4000408002000040ull);
}

/* ---------------------------------------------------------------- TMEM addresses and the configuration */

static void test_tmem_addresses(void **state)
{
    (void)state;
    /* TMEM is 128 lanes ("DP") x 512 columns of 32 bits; one lane is 1<<16
     * in a 32-bit-element TMEM address (tmem.hpp:45-53), so lane << 16 |
     * column; DeepGEMM writes the same (epilogue_warp_idx * 32) << 16
     * (dg_gemm.cuh:402-403). */
    assert_int_equal(bc_sm100_tmem_addr(0, 0), 0);
    assert_int_equal(bc_sm100_tmem_addr(96, 288), 0x00600120u);  /* 96 = 0x60, 288 = 0x120 */
    assert_int_equal(bc_sm100_tmem_addr(127, 511), 0x007F01FFu);
    /* warp w may reach lanes 32*(w%4) .. +31 (PTX ISA 9.1 §9.7.16.8.1): the
     * epilogue warps 2,3,4,5 own lanes 64, 96, 0 and 32 */
    assert_int_equal(bc_sm100_tmem_lane_base(2), 64);
    assert_int_equal(bc_sm100_tmem_lane_base(3), 96);
    assert_int_equal(bc_sm100_tmem_lane_base(4), 0);
    assert_int_equal(bc_sm100_tmem_lane_base(5), 32);
    assert_int_equal(BC_SM100_THREADS, 32 * 2 + BC_SM100_EPI_THREADS);
}

static void test_config_budget(void **state)
{
    (void)state;
    /* two 256-column f32 accumulators: all 512 TMEM columns (tmem.hpp:63,
     * Sm100TmemCapacityColumns = 512; tcgen05.alloc takes at most 512) */
    assert_int_equal(BC_SM100_TMEM_COLS, 512);
    assert_int_equal(BC_SM100_STAGE_BYTES, (128 + 256) * 64 * 2);
    /* within the per-block opt-in shared memory of sm_100: 232448 B
     * (arch.h:44, sm100_smem_capacity_bytes) ... */
    assert_true(BC_SM100_SMEM_BYTES <= 232448);
    /* ... and over half of an SM's 228 KiB (that opt-in + 1 KiB reserved per
     * block: "228 KB - 1 KB", CUTLASS
     * python/CuTeDSL/cutlass/experimental/task_scheduling/task_manager.py:1079-1087),
     * so two CTAs of this kernel never share an SM and its TMEM */
    assert_true(2 * BC_SM100_SMEM_BYTES > 232448 + 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idesc_words_from_cutlass),
        cmocka_unit_test(test_idesc_decoded_by_cutlass_fields),
        cmocka_unit_test(test_sdesc_words_from_cutlass),
        cmocka_unit_test(test_sdesc_every_stage_and_k_step),
        cmocka_unit_test(test_sdesc_field_widths),
        cmocka_unit_test(test_tmem_addresses),
        cmocka_unit_test(test_config_budget),
    };
    return cmocka_run_group_tests_name("sm100_desc", tests, NULL, NULL);
}
