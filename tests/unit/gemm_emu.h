/* Test helper: makes the fake driver "run" the GEMM kernels, so the bench and
 * latency commands can be driven end to end without a GPU. The fake records
 * launches but executes nothing; this wraps cuLaunchKernelEx and
 * cuGraphLaunch so that every bc_gemm_* kernel (launched directly, or as a
 * kernel node of a launched graph) computes D = act(alpha * A . B^T
 * (+ beta C) (+ bias)) on the CPU from its packed parameters: A and B from the
 * tensor maps' global addresses (the fake stores them in word 0), packed
 * K-major; D at p.d with p.ldd. Optionally one element of D is written wrong
 * (by every launch, or by graph launches only), or the epilogue is ignored.
 * Nothing runs while a stream captures. It also runs each step of a resident
 * executor (the fake's resident hook): every operation of the program in
 * order, GEMMs as above and copies as memcpy. Call gemm_emu_install() after
 * fake_install(). */
#ifndef BC_TESTS_GEMM_EMU_H
#define BC_TESTS_GEMM_EMU_H

#include <stdint.h>
#include <string.h>

#include "driver.h"
#include "fake_driver.h"
#include "fake_internal.h"
#include "gemm_abi.h"
#include "ref.h"
#include "resident_abi.h"

static __typeof__(((bc__driver *)0)->cuLaunchKernelEx) gemm_emu_real_launch;
static __typeof__(((bc__driver *)0)->cuGraphLaunch) gemm_emu_real_graph_launch;
static int64_t gemm_emu_wrong_index = -1; /* flat index of D written wrong, -1 for none */
static int gemm_emu_wrong_in_graphs_only;  /* 1: direct launches are right, graph launches wrong */
static int gemm_emu_wrong_in_resident_only; /* 1: only resident steps are wrong */
static uint64_t gemm_emu_runs;            /* GEMMs emulated since install */
static int gemm_emu_skip_epilogue;        /* 1: ignore C, bias and ReLU (a wrong epilogue) */

static void gemm_emu_store(void *d, bc_dtype t, size_t i, double v)
{
    if (t == BC_DTYPE_F32)
        ((float *)d)[i] = (float)v;
    else if (t == BC_DTYPE_F16)
        ((uint16_t *)d)[i] = bc_f32_to_f16((float)v);
    else
        ((uint16_t *)d)[i] = bc_f32_to_bf16((float)v);
}

/* in_graph: 0 a direct launch, 1 a graph's kernel node, 2 a resident step */
static void gemm_emu_run(const char *name, const void *param_bytes, int in_graph)
{
    if (name == NULL || strncmp(name, "bc_gemm_", 8) != 0 || param_bytes == NULL)
        return;
    bc_gemm_params p;
    memcpy(&p, param_bytes, sizeof p);
    const bc_dtype in = (bc_dtype)p.ab_type, out = (bc_dtype)p.d_type; /* the kernel reads its types here */
    const int maps = p.tmap_a[1] == FAKE_TMAP_MAGIC && p.tmap_b[1] == FAKE_TMAP_MAGIC;
    if (!maps && (p.a == 0 || p.b == 0))
        return;
    /* tensor-map kernels read A and B through the (fake) maps; the portable ones through a, b */
    const void *a = (const void *)(uintptr_t)(maps ? p.tmap_a[0] : p.a);
    const void *b = (const void *)(uintptr_t)(maps ? p.tmap_b[0] : p.b);
    /* row pitches as the kernel would read them: a map's first stride (bytes; rank >= 2), else the plan's
     * lda/ldb, else packed */
    const size_t es = bc_dtype_bytes(in);
    const uint64_t lda = maps && ((p.tmap_a[2] >> 8) & 0xFF) >= 2 && p.tmap_a[8] ? p.tmap_a[8] / es
                         : p.lda                                                  ? p.lda
                                                                                  : p.k;
    const uint64_t ldb = maps && ((p.tmap_b[2] >> 8) & 0xFF) >= 2 && p.tmap_b[8] ? p.tmap_b[8] / es
                         : p.ldb                                                  ? p.ldb
                                                                                  : p.k;
    void *d = (void *)(uintptr_t)p.d;
    for (uint32_t r = 0; r < p.m; r++)
        for (uint32_t c = 0; c < p.n; c++) {
            double s = 0.0;
            for (uint32_t k = 0; k < p.k; k++)
                s += bc_ref_get(a, in, (size_t)(r * lda + k)) * bc_ref_get(b, in, (size_t)(c * ldb + k));
            double v = (double)p.alpha * s;
            if ((p.flags & BC_GEMM_F_C) && p.c && !gemm_emu_skip_epilogue)
                v += (double)p.beta * bc_ref_get((const void *)(uintptr_t)p.c, out, (size_t)r * p.ldc + c);
            if ((p.flags & BC_GEMM_F_BIAS) && p.bias && !gemm_emu_skip_epilogue)
                v += bc_ref_get((const void *)(uintptr_t)p.bias, out, c);
            if ((p.flags & BC_GEMM_F_RELU) && v < 0.0 && !gemm_emu_skip_epilogue)
                v = 0.0;
            const size_t at = (size_t)r * p.ldd + c;
            const int wrong_here = gemm_emu_wrong_in_resident_only ? in_graph == 2
                                   : gemm_emu_wrong_in_graphs_only ? in_graph == 1
                                                                   : 1;
            if ((int64_t)at == gemm_emu_wrong_index && wrong_here)
                v += 1.0 + 0.5 * (v < 0 ? -v : v);
            gemm_emu_store(d, out, at, v);
        }
    __atomic_add_fetch(&gemm_emu_runs, 1, __ATOMIC_RELAXED); /* resident steps run on the fake's thread */
}

/* One resident step: the program's operations in order (the fake's
 * resident hook, on the kernel's thread). K is the A map's inner dimension
 * (a GEMV operation's: its bc_resident_gemv's). */
static void gemm_emu_resident_step(const void *params, uint64_t step)
{
    (void)step;
    bc_resident_params rp;
    memcpy(&rp, params, sizeof rp);
    const bc_resident_op *ops = (const bc_resident_op *)(uintptr_t)rp.program;
    for (uint32_t j = 0; j < rp.ops; j++) {
        const bc_resident_opinfo *x = &ops[j].x;
        if (x->kind == BC_RESIDENT_OP_COPY) {
            memcpy((void *)(uintptr_t)x->d, (const void *)(uintptr_t)x->c, (size_t)x->bias);
            continue;
        }
        bc_gemm_params p;
        memset(&p, 0, sizeof p);
        if (x->kind == BC_RESIDENT_OP_GEMV) { /* a GEMV plan: its operands where the maps would be */
            bc_resident_gemv g;
            memcpy(&g, ops[j].tmap_a, sizeof g);
            p.a = g.a, p.b = g.b, p.k = g.k, p.lda = g.lda, p.ldb = g.ldb;
        } else {
            memcpy(p.tmap_a, ops[j].tmap_a, sizeof p.tmap_a);
            memcpy(p.tmap_b, ops[j].tmap_b, sizeof p.tmap_b);
            p.k = (uint32_t)ops[j].tmap_a[3];
        }
        p.d = x->d, p.c = x->c, p.bias = x->bias;
        p.m = x->m, p.n = x->n, p.ldd = x->ldd, p.ldc = x->ldc;
        p.alpha = x->alpha, p.beta = x->beta, p.flags = x->flags, p.ab_type = x->ab_type, p.d_type = x->d_type;
        gemm_emu_run("bc_gemm_resident", &p, 2);
    }
}

static int gemm_emu_capturing(CUstream h)
{
    const struct CUstream_st *s = (const struct CUstream_st *)h;
    return s != NULL && s->capture != NULL;
}

static CUresult gemm_emu_launch(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
    CUresult r = gemm_emu_real_launch(cfg, f, params, extra);
    if (r == CUDA_SUCCESS && params != NULL && !gemm_emu_capturing(cfg->hStream))
        gemm_emu_run(fake_function_name(f), params[0], 0);
    return r;
}

static CUresult gemm_emu_graph_launch(CUgraphExec h, CUstream s)
{
    CUresult r = gemm_emu_real_graph_launch(h, s);
    if (r != CUDA_SUCCESS || gemm_emu_capturing(s))
        return r;
    const struct CUgraphExec_st *e = (const struct CUgraphExec_st *)h;
    for (int i = 0; i < e->n; i++)
        if (e->types[i] == NODE_KERNEL && e->k[i].param_bytes >= sizeof(bc_gemm_params))
            gemm_emu_run(fake_function_name(e->k[i].func), e->k[i].params, 1);
    return r;
}

static inline void gemm_emu_install(int64_t wrong_index)
{
    static bc__driver table;
    table = *fake_table();
    gemm_emu_real_launch = table.cuLaunchKernelEx;
    gemm_emu_real_graph_launch = table.cuGraphLaunch;
    table.cuLaunchKernelEx = gemm_emu_launch;
    table.cuGraphLaunch = gemm_emu_graph_launch;
    gemm_emu_wrong_index = wrong_index;
    gemm_emu_wrong_in_graphs_only = 0;
    gemm_emu_skip_epilogue = 0;
    gemm_emu_wrong_in_resident_only = 0;
    gemm_emu_runs = 0;
    fake_set_param_size(sizeof(bc_gemm_params));
    fake_set_resident_hook(gemm_emu_resident_step);
    bc__driver_set_override(&table);
}

#endif
