/* wgmma (sm_90a): warpgroup-wide asynchronous MMA from shared-memory
 * descriptors, plus its fence / commit / wait. The m64n256k16 form takes the
 * warpgroup's 128 f32 accumulators per thread; index `d` only with constants
 * (fully unrolled) so they stay in registers.
 *
 * Accumulator layout (thread t of the warpgroup, w = t/32, l = t%32, reg i):
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

/* One asm body for both input types; TY is "bf16" or "f16". */
#define BC__WGMMA_M64N256K16(TY) \
    asm volatile( \
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t" \
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {" \
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
        "}, %128, %129, p, 1, 1, 0, 0;\n\t}" \
        : \
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
        : "l"(desc_a), "l"(desc_b), "r"(scale_d))

/* D(64x256, f32) {+}= A(64x16) . B(256x16)^T from smem descriptors, both
 * K-major; f16 selects fp16 inputs (else bf16). scale_d == 0 overwrites D. */
BC_DEVICE void bc_wgmma_m64n256k16(float *d, uint64_t desc_a, uint64_t desc_b, uint32_t scale_d,
                                   int f16)
{
    if (f16)
        BC__WGMMA_M64N256K16("f16");
    else
        BC__WGMMA_M64N256K16("bf16");
}

#endif
