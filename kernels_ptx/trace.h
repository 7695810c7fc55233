/* Diagnostic builds only (-DBC_RES_TRACE; never shipped): time stamps from
 * inside the shared GEMM code of a resident kernel (sm90_shape.res set).
 * The resident kernel keeps the sync block's address and the step in its
 * control block (res_ctl.tr_sync, .tr_step: BC_TRACE_CTL bytes past the
 * barriers), where the hooks read them. Launched kernels (res 0) never
 * stamp. Without BC_RES_TRACE every hook is empty. Limits of the
 * diagnostic: 132 CTAs at most (the H100's SMs); phases past the fourth
 * share the fourth's slots (20-25) with the unnumbered events; with two
 * consumer warpgroups the epilogue's stamps of both land in one slot. */
#ifndef BC_KERNELS_TRACE_H
#define BC_KERNELS_TRACE_H

#ifdef BC_RES_TRACE
#include "ptx/sreg.h"
#include "resident_abi.h"
#define BC_TRACE_CTL (96u * BC_RESIDENT_MAX_OPS + 40u)

BC_DEVICE void bc_trace_at(uint64_t sync, uint64_t step, uint32_t ev)
{
    uint64_t clk;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(clk));
    const uint64_t t = bc_globaltimer_ns();
    const uint64_t a = sync + 256u + (((step & 7u) * 132u + bc_ctaid_x()) * 64u + ev) * 16u;
    asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(a), "l"(t), "l"(clk) : "memory");
}
/* ctl: the shared address of the resident control area (past the barriers) */
BC_DEVICE void bc_trace_ctl(uint32_t ctl, uint32_t ev)
{
    uint64_t sync, step;
    asm volatile("ld.shared.u64 %0, [%2];\n\tld.shared.u64 %1, [%2+8];" : "=l"(sync), "=l"(step) : "r"(ctl + BC_TRACE_CTL));
    bc_trace_at(sync, step, ev);
}
/* the epilogue's hooks: at->tr_ctl, 0 in launched kernels */
#define BC_TRACE_AT(at, ev)                                                 \
    do {                                                                   \
        if ((at)->tr_ctl && (at)->t128 == 0u)                              \
            bc_trace_ctl((at)->tr_ctl, ev);                                \
    } while (0)
#define BC_TRACE_G(g, base, ev, tid)                                        \
    do {                                                                   \
        if ((g).res && bc_tid_x() == (tid))                                \
            bc_trace_ctl(sm90_empty(g, base, (g).stages), ev);             \
    } while (0)
#else
#define BC_TRACE_G(g, base, ev, tid) ((void)0)
#define BC_TRACE_AT(at, ev) ((void)0)
#endif

#endif
