/* wgmma (sm_90a): warpgroup-wide asynchronous MMA from shared-memory
 * descriptors, plus its fence / commit / wait. m64nNk16 with N in
 * {256, 128, 64, 32} keeps N/2 f32 accumulators per thread; index `d` only
 * with constants (fully unrolled) so they stay in registers.
 *
 * Accumulator layout (any N; thread t of the warpgroup, w = t/32, l = t%32,
 * reg i < N/2):
 *   row = 16*w + l/4 + 8*((i/2)%2),  col = 8*(i/4) + 2*(l%4) + (i%2).
 */
#ifndef BC_PTX_WGMMA_H
#define BC_PTX_WGMMA_H

#include "sreg.h"

/* Shared-memory matrix descriptor for a K-major tile written by TMA with
 * 128-byte swizzle: 8-row atoms of 1024 B (SBO = 1024), LBO unused (1),
 * layout type 1 = SWIZZLE_128B in bits 62-63. `addr` is the 32-bit shared
 * address of the (1024-B aligned) tile start plus the K offset in bytes. */
BC_DEVICE uint64_t bc_wgmma_desc_sw128(uint32_t addr)
{
    return (1ull << 62) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 16) |
           (uint64_t)((addr & 0x3FFFFu) >> 4);
}

BC_DEVICE void bc_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

BC_DEVICE void bc_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

/* Waits until at most N wgmma groups of this warp are pending. */
#define bc_wgmma_wait(N) asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory")

/* setmaxnreg: all warps of the warpgroup execute the same one. */
#define bc_setmaxnreg_inc(N) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N))
#define bc_setmaxnreg_dec(N) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N))

/* Operand lists: accumulator registers as "%i" text and as "+f"(d[i]). */
#define BC__WG_R0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define BC__WG_R1 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define BC__WG_R2 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define BC__WG_R3 ", %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define BC__WG_R4 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define BC__WG_R5 ", %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define BC__WG_R6 ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define BC__WG_R7 ", %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define BC__WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                     "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define BC__WG_D16(i) BC__WG_D8(i), BC__WG_D8(i + 8)
#define BC__WG_D32(i) BC__WG_D16(i), BC__WG_D16(i + 16)
#define BC__WG_D64(i) BC__WG_D32(i), BC__WG_D32(i + 32)
#define BC__WG_D128(i) BC__WG_D64(i), BC__WG_D64(i + 64)

/* One asm body per shape; N, the register text, the operand numbers of the
 * two descriptors and of scale_d are strings; the outputs come last. */
#define BC__WGMMA(N, TY, REGS, IA, IB, IS, ...)                                                  \
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" IS ", 0;\n\t"                          \
                 "wgmma.mma_async.sync.aligned.m64n" N "k16.f32." TY "." TY " {" REGS "}, %" IA \
                 ", %" IB ", p, 1, 1, 0, 0;\n\t}"                                                 \
                 : __VA_ARGS__                                                                    \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d))

#define BC__WG_R128 BC__WG_R0 BC__WG_R1 BC__WG_R2 BC__WG_R3 BC__WG_R4 BC__WG_R5 BC__WG_R6 BC__WG_R7
#define BC__WG_R64 BC__WG_R0 BC__WG_R1 BC__WG_R2 BC__WG_R3
#define BC__WG_R32 BC__WG_R0 BC__WG_R1
#define BC__WG_R16 BC__WG_R0

/* D(64xN, f32) {+}= A(64x16) . B(Nx16)^T from smem descriptors, both
 * K-major; f16 selects fp16 inputs (else bf16); scale_d == 0 overwrites D.
 * `n` and `f16` must be compile-time constants after inlining. */
BC_DEVICE void bc_wgmma_m64k16(const uint32_t n, float *d, uint64_t desc_a, uint64_t desc_b, uint32_t scale_d,
                               const int f16)
{
    if (n == 256) {
        if (f16)
            BC__WGMMA("256", "f16", BC__WG_R128, "128", "129", "130", BC__WG_D128(0));
        else
            BC__WGMMA("256", "bf16", BC__WG_R128, "128", "129", "130", BC__WG_D128(0));
    } else if (n == 128) {
        if (f16)
            BC__WGMMA("128", "f16", BC__WG_R64, "64", "65", "66", BC__WG_D64(0));
        else
            BC__WGMMA("128", "bf16", BC__WG_R64, "64", "65", "66", BC__WG_D64(0));
    } else if (n == 64) {
        if (f16)
            BC__WGMMA("64", "f16", BC__WG_R32, "32", "33", "34", BC__WG_D32(0));
        else
            BC__WGMMA("64", "bf16", BC__WG_R32, "32", "33", "34", BC__WG_D32(0));
    } else {
        if (f16)
            BC__WGMMA("32", "f16", BC__WG_R16, "16", "17", "18", BC__WG_D16(0));
        else
            BC__WGMMA("32", "bf16", BC__WG_R16, "16", "17", "18", BC__WG_D16(0));
    }
}

#endif
