/* Dry run of a GPU test's harness on the fake driver (build/bin/
 * test_unit_gpu_*_on_fake): the scenarios, child processes, rows and
 * expectations run against the fake's model instead of a GPU. It proves the
 * test code, not the GPU: the fake's poisoned process and blocking close are
 * modelled on what an H100 did, and the fake computes the kernels on the
 * CPU (smoke_emu.h). The test-only kernels are modelled here: bc_test_fault
 * at an address below 64 KiB poisons the process with
 * CUDA_ERROR_ILLEGAL_ADDRESS; bc_test_spin runs for its max_ns. */
#ifndef BC_TESTS_GPU_ON_FAKE_H
#define BC_TESTS_GPU_ON_FAKE_H

#include <string.h>

#include "fake_driver.h"
#include "gemm_abi.h"
#include "smoke_emu.h"

static __typeof__(((bc__driver *)0)->cuLaunchKernelEx) gof_next_launch;

static CUresult gof_launch(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
    const char *name = fake_function_name(f);
    if (name != NULL && params != NULL && strcmp(name, "bc_test_spin") == 0) {
        bc_spin_params p;
        memcpy(&p, params[0], sizeof p);
        fake_set_kernel_duration_ms((double)p.max_ns * 1e-6);
        CUresult r = gof_next_launch(cfg, f, params, extra);
        fake_set_kernel_duration_ms(0);
        return r;
    }
    CUresult r = gof_next_launch(cfg, f, params, extra);
    if (r == CUDA_SUCCESS && name != NULL && params != NULL && strcmp(name, "bc_test_fault") == 0) {
        bc_fault_params p;
        memcpy(&p, params[0], sizeof p);
        if (p.addr < 0x10000)
            fake_poison(CUDA_ERROR_ILLEGAL_ADDRESS);
        else
            *(volatile uint32_t *)(uintptr_t)p.addr = p.value;
    }
    return r;
}

static inline void gpu_on_fake_install(void)
{
    static bc__driver table;
    fake_install();
    table = *fake_table();
    smoke_emu_real_launch = table.cuLaunchKernelEx;
    smoke_emu_wrong_index = -1;
    gof_next_launch = smoke_emu_launch;
    table.cuLaunchKernelEx = gof_launch;
    fake_set_param_size(sizeof(bc_gemm_params));
    bc__driver_set_override(&table);
}

#endif
