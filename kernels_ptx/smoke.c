/* Boot-check kernels, built into every image: the known-answer smoke kernel,
 * the test-only kernel that spins until released (bounded-wait test) and the
 * test-only kernel that stores where it is told (sticky-fault tests). */
#include "gemm_abi.h"
#include "ptx/sreg.h"

BC_KERNEL void bc_smoke_checksum(bc_smoke_params p)
{
    uint32_t i = bc_ctaid_x() * bc_ntid_x() + bc_tid_x();
    if (i < p.n)
        ((uint32_t *)p.out)[i] = bc_smoke_value(i, p.seed);
}

BC_KERNEL void bc_test_spin(bc_spin_params p)
{
    const uint64_t start = bc_globaltimer_ns();
    volatile uint32_t *flag = (volatile uint32_t *)p.flag;
    while (*flag == 0u) {
        if (bc_globaltimer_ns() - start > p.max_ns)
            break;
        __nvvm_nanosleep(1000);
    }
}

BC_KERNEL void bc_test_fault(bc_fault_params p)
{
    if (bc_ctaid_x() == 0 && bc_tid_x() == 0)
        *(volatile uint32_t *)p.addr = p.value;
}
