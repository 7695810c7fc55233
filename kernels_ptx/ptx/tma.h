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

/* A 64-bit load through a generic address (a kernel parameter's field, see
 * bc_param_addr), issued where it stands. */
BC_DEVICE uint64_t bc_ld_u64(uint64_t addr)
{
    uint64_t v;
    asm volatile("ld.u64 %0, [%1];" : "=l"(v) : "l"(addr));
    return v;
}

/* 1-D bulk copy global -> shared of `bytes` (a multiple of 16; both
 * addresses 16-byte aligned), completing `bar` with the bytes copied. */
BC_DEVICE void bc_bulk_load(uint32_t dst, uint64_t src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

/* The same load multicast to every CTA of the cluster whose bit is set in
 * `mask` (bit i = %cluster_ctarank i): data and complete_tx land at the
 * same shared offsets in each. */
BC_DEVICE void bc_tma_load_2d_multicast(uint32_t dst, uint64_t tmap, int32_t c0, int32_t c1, uint32_t bar,
                                        uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(dst), "l"(tmap), "r"(c0), "r"(c1), "r"(bar), "h"(mask) : "memory");
}

/* 2-D tile store shared -> global (the box at {c0, c1}; parts outside the
 * tensor are not written), tracked by this thread's bulk async-group. */
BC_DEVICE void bc_tma_store_2d(uint64_t tmap, int32_t c0, int32_t c1, uint32_t src)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(tmap), "r"(c0), "r"(c1), "r"(src) : "memory");
}

/* Closes this thread's pending bulk stores into one group. */
BC_DEVICE void bc_bulk_commit(void) { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

/* Waits until at most N of this thread's bulk groups still read shared memory. */
#define bc_bulk_wait_read(N) asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory")

/* Waits until none of this thread's bulk groups still reads shared memory
 * (before the CTA exits; the global writes complete with the grid). */
BC_DEVICE void bc_bulk_wait_read_all(void) { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
/* Waits until every bulk group of this thread has completed: its writes are
 * done and visible to this thread (then bc_fence_proxy_async_global before
 * they are published to other CTAs). */
BC_DEVICE void bc_bulk_wait_all(void) { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

#endif
