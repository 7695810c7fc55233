/* The kernels each image must contain: shared by the host (which resolves
 * them at load and refuses an image that lacks one) and the build (which
 * checks the PTX against it).
 *
 * K(id, symbol, family, smem): family ALL is in every image; SM90 only in the
 * sm_90a image; SM100 only in the Blackwell images; SM80 (the portable
 * mma.sync kernels) in the sm_80 and sm_120 images and, for sm_90a, in the
 * optional groups' cubin; RES90 (the resident executor's kernels) and SK90
 * (the whole-tile kernels that can take a last partial round by stream-K)
 * only in that cubin. On sm_90a, SM80, RES90 and SK90 are optional groups, built from the
 * same PTX into a cubin of their own (build.ninja, tools/manifest_entries.sh)
 * and loaded and resolved at open only when bc_device_config.kernel_groups
 * asks for them (runtime/image.c). The sm_90a GEMM kernels
 * are one per configuration (input and output types are launch parameters);
 * the Blackwell ones one per (input type, output type). The resident
 * executor's kernels (resident_sm90.c) are one per whole-tile sm_90a
 * configuration but 128x256. smem is the dynamic shared memory the kernel
 * is launched with (bytes; gemm_abi.h, resident_abi.h), which the loader
 * sets as the kernel's limit.
 *
 * No #include guard: included once per expansion with K defined.
 */
K(SMOKE, bc_smoke_checksum, ALL, 0)
K(SPIN, bc_test_spin, ALL, 0)
K(FAULT, bc_test_fault, ALL, 0)
K(GEMM_SM90_128X256, bc_gemm_sm90_128x256, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X256))
K(GEMM_SM90_128X256S, bc_gemm_sm90_128x256s, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X256S))
K(GEMM_SM90_128X128, bc_gemm_sm90_128x128, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X128))
K(GEMM_SM90_128X128S, bc_gemm_sm90_128x128s, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X128S))
K(GEMM_SM90_128X64, bc_gemm_sm90_128x64, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X64))
K(GEMM_SM90_64X32, bc_gemm_sm90_64x32, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32))
K(GEMM_SM90_64X32S, bc_gemm_sm90_64x32s, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32S))
K(GEMM_SM90_128X64T, bc_gemm_sm90_128x64t, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X64T))
K(GEMM_SM90_64X32M16, bc_gemm_sm90_64x32m16, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32M16))
K(GEMM_SM90_64X32M16S, bc_gemm_sm90_64x32m16s, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32M16S))
K(GEMM_SM90_64X32M16T, bc_gemm_sm90_64x32m16t, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32M16T))
K(GEMM_SM90_64X32T, bc_gemm_sm90_64x32t, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32T))
K(GEMM_SM90_64X256, bc_gemm_sm90_64x256, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X256))
K(GEMM_SM90_64X256S, bc_gemm_sm90_64x256s, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X256S))
K(GEMM_SM90_128X64TD, bc_gemm_sm90_128x64td, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X64T))
K(GEMM_SM90_64X32M16TD, bc_gemm_sm90_64x32m16td, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32M16T))
K(GEMM_SM90_64X32TD, bc_gemm_sm90_64x32td, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32T))
K(GEMM_SM90_128X256M, bc_gemm_sm90_128x256m, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X256))
K(GEMM_SM90_128X128M, bc_gemm_sm90_128x128m, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X128))
K(GEMM_SM90_128X64M, bc_gemm_sm90_128x64m, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X64))
K(GEMM_SM90_64X32M, bc_gemm_sm90_64x32m, SM90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32))
K(GEMM_SM90_DOT, bc_gemm_sm90_dot, SM90, BC_DOT_SMEM_BYTES)
K(GEMM_SM90_GEMV, bc_gemm_sm90_gemv, SM90, BC_GEMV_SMEM_BYTES)
K(GEMM_SM90_GEMV32, bc_gemm_sm90_gemv32, SM90, BC_GEMV32_SMEM_BYTES)
K(GEMM_SM90_128X128K, bc_gemm_sm90_128x128k, SK90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X128))
K(GEMM_SM90_128X64K, bc_gemm_sm90_128x64k, SK90, BC_SM90_SMEM_OF(BC_SM90_CFG_128X64))
K(GEMM_SM90_64X32K, bc_gemm_sm90_64x32k, SK90, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32))
K(GEMM_SM80_128X256, bc_gemm_sm80_128x256, SM80, BC_SM80_SMEM_OF(BC_SM80_CFG_128X256))
K(GEMM_SM80_128X128, bc_gemm_sm80_128x128, SM80, BC_SM80_SMEM_OF(BC_SM80_CFG_128X128))
K(GEMM_SM80_64X64, bc_gemm_sm80_64x64, SM80, BC_SM80_SMEM_OF(BC_SM80_CFG_64X64))
K(GEMM_SM80_64X32, bc_gemm_sm80_64x32, SM80, BC_SM80_SMEM_OF(BC_SM80_CFG_64X32))
K(GEMM_SM80_32X32, bc_gemm_sm80_32x32, SM80, BC_SM80_SMEM_OF(BC_SM80_CFG_32X32))
K(RESIDENT_SM90_64X32, bc_resident_sm90_64x32, RES90, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32))
K(RESIDENT_SM90_64X32M16, bc_resident_sm90_64x32m16, RES90, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32M16))
K(RESIDENT_SM90_128X64, bc_resident_sm90_128x64, RES90, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_128X64))
K(RESIDENT_SM90_128X128, bc_resident_sm90_128x128, RES90, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_128X128))
K(GEMM_SM100_BF16_BF16, bc_gemm_sm100_bf16_bf16, SM100, BC_SM100_SMEM_BYTES)
K(GEMM_SM100_BF16_F16, bc_gemm_sm100_bf16_f16, SM100, BC_SM100_SMEM_BYTES)
K(GEMM_SM100_BF16_F32, bc_gemm_sm100_bf16_f32, SM100, BC_SM100_SMEM_BYTES)
K(GEMM_SM100_F16_BF16, bc_gemm_sm100_f16_bf16, SM100, BC_SM100_SMEM_BYTES)
K(GEMM_SM100_F16_F16, bc_gemm_sm100_f16_f16, SM100, BC_SM100_SMEM_BYTES)
K(GEMM_SM100_F16_F32, bc_gemm_sm100_f16_f32, SM100, BC_SM100_SMEM_BYTES)
