/* ldmatrix (sm_75+): a warp loads four 8x8 b16 matrices from shared memory
 * into the mma.sync fragment layout. Lane l supplies the address of row
 * l % 8 of matrix l / 8 (16 contiguous bytes); afterwards register q of
 * lane l holds elements (l / 4, 2 (l % 4) .. 2 (l % 4) + 1) of matrix q. */
#ifndef BC_PTX_LDMATRIX_H
#define BC_PTX_LDMATRIX_H

#include "sreg.h"

BC_DEVICE void bc_ldmatrix_x4(uint32_t addr, uint32_t *r0, uint32_t *r1, uint32_t *r2, uint32_t *r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(*r0), "=r"(*r1), "=r"(*r2), "=r"(*r3)
                 : "r"(addr)
                 : "memory");
}

#endif
