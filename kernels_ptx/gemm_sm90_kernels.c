/* Hopper (sm_90a) GEMM kernels: one entry point per configuration and twin
 * over the shared code of gemm_sm90.c, and the static checks of their
 * shapes and shared-memory sizes. Included by image_sm90.c right after
 * gemm_sm90.c. */
/* One kernel per configuration. The parameter is only ever read field by
 * field, and the tensor maps by their parameter-space address, so it never
 * leaves parameter space. */
#define BC__SM90_KERNEL(name, dn, sk, mc, cons, bn, stages, ks, ar)                                \
    BC_KERNEL void name(bc_gemm_params p)                                                          \
    {                                                                                              \
        const sm90_shape g = {cons, bn, stages, ks, ar, dn, sk, mc};                               \
        sm90_sched sc = {p.tiles_m, p.tiles_n, p.k_blocks, p.group_m,                              \
                         {p.sk_first, p.sk_tiles, p.sk_ctas, p.k_blocks}, p.sk_ws, p.raster};      \
        bc_epi e = {p.d, p.c, p.bias, p.m, p.n, p.ldd, p.ldc, p.alpha, p.beta, p.flags, p.k};            \
        sm90_gemm(g, bc_param_addr(#name "_param_0", 0), bc_param_addr(#name "_param_0", 128),     \
                  bc_param_addr(#name "_param_0", 256), bc_param_addr(#name "_param_0", 512), &sc, &e, \
                  p.ab_type == 1, (int)p.d_type);                                                  \
    }
#define BC_SM90_KERNEL(name, cfg) BC__APPLY(BC__SM90_KERNEL, name, 0, 0, 0, cfg)
/* a short-K twin's dense-row kernel (BC_GEMM_F_DENSE_A) */
#define BC_SM90_KERNEL_DENSE(name, cfg) BC__APPLY(BC__SM90_KERNEL, name, 1, 0, 0, cfg)
/* a whole-tile configuration's stream-K twin (sk_sched.h) */
#define BC_SM90_KERNEL_SK(name, cfg) BC__APPLY(BC__SM90_KERNEL, name, 0, 1, 0, cfg)
/* a whole-tile configuration's multicast twins (SM90_MC): pairs of tile rows sharing B, launched in
 * clusters of two; blocks of 2 x 2 tiles sharing A and B, in clusters of four */
#define BC_SM90_KERNEL_MC(name, cfg) BC__APPLY(BC__SM90_KERNEL, name, 0, 0, 1, cfg)
#define BC_SM90_KERNEL_MC4(name, cfg) BC__APPLY(BC__SM90_KERNEL, name, 0, 0, 3, cfg)
/* what the multicast code assumes: whole tiles of 64-row consumers, a shared operand's rows in two
 * halves of whole 1024-byte swizzle atoms (8 rows of 128 bytes), at 1024-byte offsets in the stage */
#define BC__SM90_MC_OK(cons, bn, stages, ks, ar) (!(ks) && ((bn) == 256 || (bn) == 128) && (ar) == 64 * (cons))
#define BC__SM90_MC4_OK(cons, bn, stages, ks, ar) (!(ks) && (bn) % 16 == 0 && (ar) == 64 * (cons))
_Static_assert(BC__APPLY(BC__SM90_MC_OK, BC_SM90_CFG_128X256), "128x256m");
_Static_assert(BC__APPLY(BC__SM90_MC_OK, BC_SM90_CFG_128X128), "128x128m");
_Static_assert(BC__APPLY(BC__SM90_MC4_OK, BC_SM90_CFG_128X64), "128x64m");
_Static_assert(BC__APPLY(BC__SM90_MC4_OK, BC_SM90_CFG_64X32), "64x32m");
/* what the stream-K code assumes: whole tiles of 64-row consumers with a long ring, at most 128 columns */
#define BC__SM90_SK_OK(cons, bn, stages, ks, ar) (!(ks) && (bn) <= 128 && (stages) > BC_SM90_SHORT_K_STAGES && (ar) == 64 * (cons))
_Static_assert(BC__APPLY(BC__SM90_SK_OK, BC_SM90_CFG_128X128), "128x128k");
_Static_assert(BC__APPLY(BC__SM90_SK_OK, BC_SM90_CFG_128X64), "128x64k");
_Static_assert(BC__APPLY(BC__SM90_SK_OK, BC_SM90_CFG_64X32), "64x32k");

_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_128X256) <= 232448, "128x256: over the 227 KiB opt-in limit");
_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_128X128) <= 232448, "128x128: over the 227 KiB opt-in limit");
_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_128X64) <= 232448, "128x64: over the 227 KiB opt-in limit");
_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_64X32) <= 232448, "64x32: over the 227 KiB opt-in limit");
_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_64X32M16) <= 232448, "64x32m16: over the 227 KiB opt-in limit");
_Static_assert(BC_SM90_SMEM_OF(BC_SM90_CFG_64X256) <= 232448, "64x256: over the 227 KiB opt-in limit");
/* two of the short-K twin on an SM's 228 KiB, each with its 1 KiB the system reserves; and its registers:
 * 2 x 384 threads x 80 at launch, and the consumers' 96 within what the producer's 40 gives back */
_Static_assert(2 * (BC_SM90_SMEM_OF(BC_SM90_CFG_128X64T) + 1024) <= 233472, "128x64t: two do not fit an SM");
_Static_assert(2 * BC_SM90_THREADS(2) * BC_SM90_SHORT_K_LAUNCH_REGS <= 65536 &&
                   2 * 128 * BC_SM90_SHORT_K_CONSUMER_REGS + 128 * SM90_PRODUCER_REGS <=
                       BC_SM90_THREADS(2) * BC_SM90_SHORT_K_LAUNCH_REGS,
               "128x64t: registers");
_Static_assert(4 * (BC_SM90_SMEM_OF(BC_SM90_CFG_64X32M16T) + 1024) <= 233472, "64x32m16t: four do not fit an SM");
_Static_assert(4 * (BC_SM90_SMEM_OF(BC_SM90_CFG_64X32T) + 1024) <= 233472, "64x32t: four do not fit an SM");
_Static_assert(4 * BC_SM90_THREADS(1) * BC_SM90_SKINNY_SHORT_K_LAUNCH_REGS <= 65536 &&
                   128 * BC_SM90_SKINNY_SHORT_K_CONSUMER_REGS + 128 * SM90_PRODUCER_REGS <=
                       BC_SM90_THREADS(1) * BC_SM90_SKINNY_SHORT_K_LAUNCH_REGS,
               "64x32m16t: registers");
/* 64x32m16 and its short-K twin: a stage is 6 KiB; wgmma reads 8 KiB of A
 * from each stage start, so the last stage reads 2 KiB into the staging
 * buffers that follow it (whatever the stage count) */
_Static_assert(BC_SM90_A_STAGE_BYTES(64) - BC_SM90_STAGE_BYTES(16, 32) <= 2 * BC_SM90_EPI_BUF_BYTES, "64x32m16 overrun");
/* the split-K slots, [BM][BN + pad] f32 in all, fit in the stages they reuse */
_Static_assert(128 * (256 + BC_SPLITK_PAD) * 4 <= 4 * BC_SM90_STAGE_BYTES(128, 256), "128x256 split partial");
_Static_assert(128 * (128 + BC_SPLITK_PAD) * 4 <= 6 * BC_SM90_STAGE_BYTES(128, 128), "128x128 split partial");
_Static_assert(16 * (32 + BC_SPLITK_PAD) * 4 <= 32 * BC_SM90_STAGE_BYTES(16, 32), "64x32m16s split partial");
_Static_assert(64 * (32 + BC_SPLITK_PAD) * 4 <= 16 * BC_SM90_STAGE_BYTES(64, 32), "64x32s split partial");
_Static_assert(64 * (256 + BC_SPLITK_PAD) * 4 <= 5 * BC_SM90_STAGE_BYTES(64, 256), "64x256s split partial");

BC_SM90_KERNEL(bc_gemm_sm90_128x256, BC_SM90_CFG_128X256)
BC_SM90_KERNEL(bc_gemm_sm90_128x256s, BC_SM90_CFG_128X256S)
BC_SM90_KERNEL(bc_gemm_sm90_128x128, BC_SM90_CFG_128X128)
BC_SM90_KERNEL(bc_gemm_sm90_128x128s, BC_SM90_CFG_128X128S)
BC_SM90_KERNEL(bc_gemm_sm90_128x64, BC_SM90_CFG_128X64)
BC_SM90_KERNEL(bc_gemm_sm90_64x32, BC_SM90_CFG_64X32)
BC_SM90_KERNEL(bc_gemm_sm90_64x32s, BC_SM90_CFG_64X32S)
BC_SM90_KERNEL(bc_gemm_sm90_128x64t, BC_SM90_CFG_128X64T)
BC_SM90_KERNEL(bc_gemm_sm90_64x32m16, BC_SM90_CFG_64X32M16)
BC_SM90_KERNEL(bc_gemm_sm90_64x32m16s, BC_SM90_CFG_64X32M16S)
BC_SM90_KERNEL(bc_gemm_sm90_64x32m16t, BC_SM90_CFG_64X32M16T)
BC_SM90_KERNEL(bc_gemm_sm90_64x32t, BC_SM90_CFG_64X32T)
BC_SM90_KERNEL(bc_gemm_sm90_64x256, BC_SM90_CFG_64X256)
BC_SM90_KERNEL(bc_gemm_sm90_64x256s, BC_SM90_CFG_64X256S)
/* the dense-row code takes consumer c's rows of A from row c * 64 and puts them at c * (ar / cons) rows
 * into the stage: the same only where a consumer's share of A is 64 rows (or there is one consumer) */
#define BC__SM90_DENSE_SHARE_OK(cons, bn, stages, ks, ar) ((cons) == 1 || (ar) == 64 * (cons))
_Static_assert(BC__APPLY(BC__SM90_DENSE_SHARE_OK, BC_SM90_CFG_128X64T), "128x64td: a consumer's rows of A");
_Static_assert(BC__APPLY(BC__SM90_DENSE_SHARE_OK, BC_SM90_CFG_64X32T), "64x32td: a consumer's rows of A");
_Static_assert(BC__APPLY(BC__SM90_DENSE_SHARE_OK, BC_SM90_CFG_64X32M16T), "64x32m16td: a consumer's rows of A");
BC_SM90_KERNEL_DENSE(bc_gemm_sm90_128x64td, BC_SM90_CFG_128X64T)
BC_SM90_KERNEL_DENSE(bc_gemm_sm90_64x32m16td, BC_SM90_CFG_64X32M16T)
BC_SM90_KERNEL_DENSE(bc_gemm_sm90_64x32td, BC_SM90_CFG_64X32T)
BC_SM90_KERNEL_SK(bc_gemm_sm90_128x128k, BC_SM90_CFG_128X128)
BC_SM90_KERNEL_SK(bc_gemm_sm90_128x64k, BC_SM90_CFG_128X64)
BC_SM90_KERNEL_SK(bc_gemm_sm90_64x32k, BC_SM90_CFG_64X32)
BC_SM90_KERNEL_MC(bc_gemm_sm90_128x256m, BC_SM90_CFG_128X256)
BC_SM90_KERNEL_MC(bc_gemm_sm90_128x128m, BC_SM90_CFG_128X128)
BC_SM90_KERNEL_MC4(bc_gemm_sm90_128x64m, BC_SM90_CFG_128X64)
BC_SM90_KERNEL_MC4(bc_gemm_sm90_64x32m, BC_SM90_CFG_64X32)
