/* Shared by the resident executor's GPU tests: a link, one GEMM of a
 * chain with host copies of everything it reads, made with fresh N(0,1)
 * data (make_link plans it for a resident executor) and checked against the fp64
 * reference (gpu_ref_check.h). */
#ifndef BC_TESTS_GPU_RESIDENT_LINK_H
#define BC_TESTS_GPU_RESIDENT_LINK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "gpu_ref_check.h"

/* One GEMM of a chain, with host copies of everything it reads. */
typedef struct link {
    bc_gemm_desc d;
    void *ha, *hb, *hc, *hbias;
    bc_gemm_plan *plan;
} link;

/* One link of a chain: M x N x K on `config` split `split` ways (1: whole
 * tiles); after `prev` (its D read as A) with beta * C into f32 (the thread
 * epilogue), else with its own A and bias + ReLU; then its D and its plan. */
static void make_link(gpu_env *env, link *k, const int64_t *mnk, const char *config, uint32_t split,
                      const link *prev, bc_rng *rng)
{
    bc_gemm_desc *d = &k->d;
    bc_gemm_desc_default(d);
    d->m = mnk[0], d->n = mnk[1], d->k = mnk[2];
    d->config = config;
    d->resident = 1;
    d->split_k = split;
    if (prev)
        d->a = prev->d.d, k->ha = malloc((size_t)(d->m * d->k) * 2);
    else
        k->ha = gpu_upload(env, (size_t)(d->m * d->k), BC_DTYPE_BF16, rng, &d->a);
    k->hb = gpu_upload(env, (size_t)(d->n * d->k), BC_DTYPE_BF16, rng, &d->b);
    if (prev) {
        d->d_type = BC_DTYPE_F32;
        d->beta = 0.5f;
        k->hc = gpu_upload(env, (size_t)(d->m * d->n), BC_DTYPE_F32, rng, &d->c);
    } else {
        d->relu = 1;
        k->hbias = gpu_upload(env, (size_t)d->n, BC_DTYPE_BF16, rng, &d->bias);
    }
    CHECK_BC(bc_mem_alloc(env->dev, (size_t)(d->m * d->n) * bc_dtype_bytes(d->d_type), &d->d));
    CHECK_BC(bc_gemm_plan_create(env->dev, d, &k->plan));
}

/* Every row of the link's D against the fp64 reference; its A taken from
 * the device when `a_from_device` (the previous link's output). */
static void check_link(gpu_env *env, link *k, int a_from_device)
{
    const bc_gemm_desc *d = &k->d;
    if (a_from_device)
        CHECK_BC(bc_memcpy_dtoh(env->dev, k->ha, d->a, (size_t)(d->m * d->k) * 2));
    gpu_check_d(env, d, k->ha, k->hb, k->hc, k->hbias);
}

/* Zeroed links with default descriptors. */
static void links_default(link *k, int n)
{
    memset(k, 0, (size_t)n * sizeof *k);
    for (int i = 0; i < n; i++) {
        bc_gemm_desc_default(&k[i].d);
        k[i].d.resident = 1; /* the rule's choice among what a resident kernel runs */
    }
}

/* Each link's plan, also listed in plans[]. */
static void plan_links(gpu_env *env, link *k, bc_gemm_plan **plans, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK_BC(bc_gemm_plan_create(env->dev, &k[i].d, &k[i].plan));
        plans[i] = k[i].plan;
    }
}

/* k's A and B (fresh values, bf16) uploaded and its D allocated, for k->d's shape. */
static void upload_link(gpu_env *env, link *k, bc_rng *rng)
{
    k->ha = gpu_upload(env, (size_t)(k->d.m * k->d.k), BC_DTYPE_BF16, rng, &k->d.a);
    k->hb = gpu_upload(env, (size_t)(k->d.n * k->d.k), BC_DTYPE_BF16, rng, &k->d.b);
    CHECK_BC(bc_mem_alloc(env->dev, (size_t)(k->d.m * k->d.n) * 2, &k->d.d));
}

#endif
