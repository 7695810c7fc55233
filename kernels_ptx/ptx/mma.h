/* mma.sync (sm_80+): warp-wide tensor-core MMA from registers.
 *
 * m16n8k16, A row-major 16x16, B column-major 16x8 (that is, B[n][k] rows
 * of a K-major matrix), f32 accumulators. Fragments (PTX ISA, "Matrix
 * Fragments for mma.m16n8k16"), g = lane / 4, t = lane % 4, each register
 * two 16-bit elements, the lower k in the lower half:
 *   a0: A[g][2t..2t+1]    a1: A[g+8][2t..2t+1]
 *   a2: A[g][2t+8..+9]    a3: A[g+8][2t+8..+9]
 *   b0: B[k=2t..2t+1][n=g]  b1: B[k=2t+8..+9][n=g]
 *   d0, d1: D[g][2t..2t+1]  d2, d3: D[g+8][2t..2t+1]
 */
#ifndef BC_PTX_MMA_H
#define BC_PTX_MMA_H

#include "sreg.h"

/* d += A . B; f16 selects fp16 inputs (else bf16); a compile-time constant. */
BC_DEVICE void bc_mma_m16n8k16(float *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                               uint32_t b1, const int f16)
{
    if (f16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

#endif
