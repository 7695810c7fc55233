/* TMA: bulk tensor copies between global and shared memory (sm_90+).
 * Tensor maps are passed as generic addresses (see bc_param_addr). */
#ifndef BC_PTX_TMA_H
#define BC_PTX_TMA_H

#include "sreg.h"

/* Generic address of a kernel parameter's field, taken in parameter space so
 * the compiler never copies the parameter to local memory. `sym` is the PTX
 * parameter name, e.g. "bc_gemm_sm90_bf16_bf16_param_0"; `off` a byte offset. */
#define bc_param_addr(sym, off)                                                            \
    ({                                                                                     \
        uint64_t a_;                                                                       \
        asm("mov.b64 %0, " sym ";\n\tcvta.param.u64 %0, %0;\n\tadd.u64 %0, %0, %1;"        \
            : "=l"(a_) : "n"(off));                                                        \
        a_;                                                                                \
    })

BC_DEVICE void bc_tma_prefetch_desc(uint64_t tmap)
{
    asm volatile("prefetch.tensormap [%0];" ::"l"(tmap) : "memory");
}

/* 2-D tile load global -> shared, completing `bar` with the bytes copied.
 * c0 is the innermost (contiguous) coordinate. */
BC_DEVICE void bc_tma_load_2d(uint32_t dst, uint64_t tmap, int32_t c0, int32_t c1, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"(tmap), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

#endif
