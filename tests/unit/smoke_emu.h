/* Test helper: makes the fake driver "run" the smoke kernel. The fake
 * records launches but executes nothing; this wraps its cuLaunchKernelEx so
 * that a bc_smoke_checksum launch writes bc_smoke_value(i, seed) into the
 * fake device memory (host memory), optionally with one wrong element.
 * Call smoke_emu_install() after fake_install(). */
#ifndef BC_TESTS_SMOKE_EMU_H
#define BC_TESTS_SMOKE_EMU_H

#include <stdint.h>
#include <string.h>

#include "driver.h"
#include "fake_driver.h"
#include "gemm_abi.h"

static __typeof__(((bc__driver *)0)->cuLaunchKernelEx) smoke_emu_real_launch;
static int64_t smoke_emu_wrong_index = -1; /* element written wrong, -1 for none */

static CUresult smoke_emu_launch(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
    CUresult r = smoke_emu_real_launch(cfg, f, params, extra);
    const char *name = fake_function_name(f);
    if (r != CUDA_SUCCESS || name == NULL || strcmp(name, "bc_smoke_checksum") != 0 || params == NULL)
        return r;
    bc_smoke_params p;
    memcpy(&p, params[0], sizeof p);
    uint32_t *out = (uint32_t *)(uintptr_t)p.out;
    uint64_t threads = (uint64_t)cfg->gridDimX * cfg->blockDimX;
    for (uint32_t i = 0; i < p.n && i < threads; i++)
        out[i] = bc_smoke_value(i, p.seed) ^ (i == smoke_emu_wrong_index ? 0x10u : 0u);
    return r;
}

static inline void smoke_emu_install(int64_t wrong_index)
{
    static bc__driver table;
    table = *fake_table();
    smoke_emu_real_launch = table.cuLaunchKernelEx;
    table.cuLaunchKernelEx = smoke_emu_launch;
    smoke_emu_wrong_index = wrong_index;
    bc__driver_set_override(&table);
}

#endif
