/* Test helper: makes the fake driver "run" the boot-check kernels. The fake
 * records launches but executes nothing; this wraps its cuLaunchKernelEx so
 * that a bc_smoke_checksum launch writes bc_smoke_value(i, seed) into the
 * fake device memory (host memory), optionally with one wrong element, and
 * a Hopper GEMM launch computes D on the CPU from the packed parameters and
 * the fake-encoded tensor maps (word 0 = address, 3/4 = dims, 8 = row
 * stride). Call smoke_emu_install() after fake_install(). */
#ifndef BC_TESTS_SMOKE_EMU_H
#define BC_TESTS_SMOKE_EMU_H

#include <stdint.h>
#include <string.h>

#include "driver.h"
#include "fake_driver.h"
#include "gemm_abi.h"

static __typeof__(((bc__driver *)0)->cuLaunchKernelEx) smoke_emu_real_launch;
static int64_t smoke_emu_wrong_index = -1; /* element written wrong, -1 for none */

static float emu_half_to_float(uint16_t h, int f16)
{
    if (!f16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? (float)m / 16777216.0f : (float)(1024 + m) / 1024.0f * (float)(1u << e) / 32768.0f;
    return (h & 0x8000) ? -v : v;
}

/* D = act(alpha A.B^T + beta C + bias) on the CPU, for f32 output only
 * (the boot check's type); other outputs are left unwritten. */
static void emu_gemm(const bc_gemm_params *p)
{
    if (p->d_type != 2) /* f32 */
        return;
    const int f16 = p->ab_type == 1;
    /* tensor-map kernels read A and B through the (fake) maps; the portable ones through a, b */
    const int maps = p->tmap_a[0] != 0;
    const uint16_t *a = (const uint16_t *)(uintptr_t)(maps ? p->tmap_a[0] : p->a);
    const uint16_t *b = (const uint16_t *)(uintptr_t)(maps ? p->tmap_b[0] : p->b);
    const uint64_t lda = maps ? p->tmap_a[8] / 2 : p->lda, ldb = maps ? p->tmap_b[8] / 2 : p->ldb;
    float *d = (float *)(uintptr_t)p->d;
    for (uint32_t r = 0; r < p->m; r++)
        for (uint32_t c = 0; c < p->n; c++) {
            float acc = 0.0f;
            for (uint32_t k = 0; k < p->k; k++)
                acc += emu_half_to_float(a[r * lda + k], f16) * emu_half_to_float(b[c * ldb + k], f16);
            float v = p->alpha * acc;
            if (p->flags & BC_GEMM_F_C)
                v += p->beta * ((const float *)(uintptr_t)p->c)[(uint64_t)r * p->ldc + c];
            if (p->flags & BC_GEMM_F_BIAS)
                v += ((const float *)(uintptr_t)p->bias)[c];
            if ((p->flags & BC_GEMM_F_RELU) && v < 0.0f)
                v = 0.0f;
            d[(uint64_t)r * p->ldd + c] = v;
        }
}

static CUresult smoke_emu_launch(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
    CUresult r = smoke_emu_real_launch(cfg, f, params, extra);
    const char *name = fake_function_name(f);
    if (r != CUDA_SUCCESS || name == NULL || params == NULL)
        return r;
    if (strncmp(name, "bc_gemm_", 8) == 0) {
        bc_gemm_params gp;
        memcpy(&gp, params[0], sizeof gp);
        emu_gemm(&gp);
        return r;
    }
    if (strcmp(name, "bc_smoke_checksum") != 0)
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
