/* Boot checks: the smoke kernel's known answer (see barecuda/selftest.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "barecuda/selftest.h"
#include "error.h"
#include "gemm_abi.h"
#include "internal.h"

/* BC_SMOKE_SEED: no bc_smoke_value(i, seed), i < BC_SMOKE_ELEMENTS, equals
 * the 0xFFFFFFFF poison, so an element the kernel never wrote cannot pass
 * (tests/unit/test_select.c checks this). */
#define SMOKE_SEED BC_SMOKE_SEED
#define SMOKE_BLOCK 256u

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Host buffer for the result: pinned from the host pool when possible. */
static bc_status host_buffer(bc_device *dev, size_t bytes, uint32_t **out_buf, int *out_pinned)
{
    void *p = NULL;
    if (dev->host_pool != NULL && bc_host_alloc(dev, bytes, &p) == BC_OK) {
        *out_buf = p;
        *out_pinned = 1;
        return BC_OK;
    }
    p = malloc(bytes);
    if (p == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "malloc", "cannot allocate %zu bytes for the smoke result", bytes);
    *out_buf = p;
    *out_pinned = 0;
    return BC_OK;
}

static bc_status launch_smoke(bc_stream *s, CUfunction fn, bc_smoke_params *params)
{
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = (params->n + SMOKE_BLOCK - 1) / SMOKE_BLOCK;
    cfg.gridDimY = 1;
    cfg.gridDimZ = 1;
    cfg.blockDimX = SMOKE_BLOCK;
    cfg.blockDimY = 1;
    cfg.blockDimZ = 1;
    cfg.hStream = s->handle;
    void *args[1] = {params};
    return BC_CU(cuLaunchKernelEx, &cfg, fn, args, NULL);
}

/* Compares every element with the CPU's value. */
static bc_status verify(const uint32_t *got, uint32_t n, uint32_t seed)
{
    uint32_t bad = 0, first = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (got[i] != bc_smoke_value(i, seed)) {
            if (bad++ == 0)
                first = i;
        }
    }
    if (bad == 0)
        return BC_OK;
    return BC_FAIL(BC_ERR_VERIFY_FAILED, "bc_selftest_smoke",
                   "smoke element %u of %u is 0x%08x, expected 0x%08x (%u wrong in total; "
                   "0xffffffff is the poison: never written)",
                   first, n, got[first], bc_smoke_value(first, seed), bad);
}

bc_status bc_selftest_smoke(bc_device *dev, bc_stream *s, bc_smoke_report *out_report)
{
    if (dev == NULL || s == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_selftest_smoke", "dev or stream is NULL");
    if (BC_STREAM_ON(s, dev, "the one checked"))
        return BC_ERR_INVALID_ARGUMENT;
    CUfunction fn = dev->image.fn[BC_K_SMOKE];
    if (fn == NULL)
        return BC_FAIL(BC_ERR_MISSING_KERNEL, "bc_selftest_smoke",
                       "no smoke kernel: the device was opened without loading kernels");
    const uint32_t n = BC_SMOKE_ELEMENTS;
    const size_t bytes = (size_t)n * sizeof(uint32_t);
    bc_devptr out = 0;
    uint32_t *host = NULL;
    int pinned = 0;
    bc_smoke_report rep = {.elements = n, .seed = SMOKE_SEED};

    bc_status st = bc_mem_alloc(dev, bytes, &out);
    if (st)
        goto fail;
    st = host_buffer(dev, bytes, &host, &pinned);
    if (st)
        goto release_device_block;
    st = bc_memset_d8_async(s, out, 0xFF, bytes);
    if (!st)
        st = bc_stream_wait(s, BC_SMOKE_TIMEOUT_NS);
    if (st)
        goto fail_in_flight;

    bc_smoke_params params = {.out = out, .n = n, .seed = SMOKE_SEED};
    double t0 = now_us();
    st = launch_smoke(s, fn, &params);
    if (!st)
        st = bc_stream_wait(s, BC_SMOKE_TIMEOUT_NS);
    if (st)
        goto fail_in_flight;
    double t1 = now_us();
    st = bc_memcpy_dtoh_async(s, host, out, bytes);
    if (!st)
        st = bc_stream_wait(s, BC_SMOKE_TIMEOUT_NS);
    if (st)
        goto fail_in_flight;
    st = verify(host, n, SMOKE_SEED);
    rep.first_launch_us = t1 - t0;
    rep.verify_us = now_us() - t1;
    if (st == BC_OK && out_report != NULL)
        *out_report = rep;
    goto release_host_buffer;

fail_in_flight:
    /* After a timeout the GPU may still write both buffers: leave them
     * allocated (bc_device_close reclaims the pools; a malloc'ed fallback
     * buffer is leaked on purpose). */
    if (st == BC_ERR_TIMEOUT)
        return st;
release_host_buffer:
    if (pinned)
        bc_host_free(dev, host);
    else
        free(host);
release_device_block:
    bc_mem_free(dev, out);
fail:
    return st;
}

bc_status bc_selftest_empty_launch(bc_stream *s)
{
    if (s == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_selftest_empty_launch", "stream is NULL");
    CUfunction fn = s->dev->image.fn[BC_K_SMOKE];
    if (fn == NULL)
        return BC_FAIL(BC_ERR_MISSING_KERNEL, "bc_selftest_empty_launch", "kernels are not loaded");
    bc_smoke_params p = {0, 0, 0};
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 32, cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s->handle;
    void *args[1] = {&p};
    return BC_CU(cuLaunchKernelEx, &cfg, fn, args, NULL);
}
