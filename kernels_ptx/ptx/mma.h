/* mma.sync (sm_80+): warp-wide m16n8k16 tensor-core MMA, bf16 or f16
 * inputs, f32 accumulators in registers. A is row-major 16x16 (4 registers
 * of 2 elements), B column-major 16x8 (2 registers), C/D 16x8 f32 (4).
 *
 * Fragment layouts (lane l, g = l / 4, t = l % 4):
 *   A: a0 (row g,   k 2t..2t+1)  a1 (row g+8, k 2t..2t+1)
 *      a2 (row g,   k 2t+8..)    a3 (row g+8, k 2t+8..)
 *   B: b0 (k 2t..2t+1, col g)    b1 (k 2t+8..2t+9, col g)
 *   C: c0, c1 (row g, col 2t, 2t+1)   c2, c3 (row g+8, col 2t, 2t+1)
 * which is what ldmatrix.x4 delivers for A (matrices: rows 0-7/8-15 x
 * k 0-7/8-15, in the order a0..a3) and for two n8 tiles of B stored N x K.
 */
#ifndef BC_PTX_MMA_H
#define BC_PTX_MMA_H

#include "sreg.h"

/* d += A . B; f16 (a compile-time constant) selects f16 inputs over bf16. */
BC_DEVICE void bc_mma_m16n8k16(float *d, const uint32_t *a, const uint32_t *b, const int f16)
{
    if (f16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif
