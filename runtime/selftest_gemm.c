/* The known-answer GEMM boot check (see barecuda/selftest.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "barecuda/gemm.h"
#include "barecuda/selftest.h"
#include "error.h"
#include "internal.h"

enum { M = BC_GEMM_CHECK_M, N = BC_GEMM_CHECK_N, K = BC_GEMM_CHECK_K };

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Element i of operand `which`: an integer in [-4, 4], from a fixed hash. */
static int value(uint32_t which, uint32_t i)
{
    uint32_t x = (i + 1u) * 0x9E3779B1u ^ (which * 0x85EBCA6Bu);
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return (int)(x % 9u) - 4;
}

/* bf16 bits of v/4 for v in [-4, 4] (exact: at most 3 significant bits). */
static uint16_t bf16_quarter(int v)
{
    float f = (float)v / 4.0f;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

typedef struct buffers {
    bc_devptr a, b, d;
    uint16_t *ha, *hb;
    float *hd;
} buffers;

static void free_buffers(bc_device *dev, buffers *bf)
{
    if (bf->a) bc_mem_free(dev, bf->a);
    if (bf->b) bc_mem_free(dev, bf->b);
    if (bf->d) bc_mem_free(dev, bf->d);
    free(bf->ha);
    free(bf->hb);
    free(bf->hd);
}

static bc_status upload(bc_device *dev, buffers *bf)
{
    bf->ha = malloc(sizeof(uint16_t) * M * K);
    bf->hb = malloc(sizeof(uint16_t) * N * K);
    bf->hd = malloc(sizeof(float) * M * N);
    if (!bf->ha || !bf->hb || !bf->hd)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "malloc", "cannot allocate the GEMM check's host buffers");
    for (uint32_t i = 0; i < M * K; i++)
        bf->ha[i] = bf16_quarter(value(0, i));
    for (uint32_t i = 0; i < N * K; i++)
        bf->hb[i] = bf16_quarter(value(1, i));
    bc_status st = bc_mem_alloc(dev, sizeof(uint16_t) * M * K, &bf->a);
    if (!st) st = bc_mem_alloc(dev, sizeof(uint16_t) * N * K, &bf->b);
    if (!st) st = bc_mem_alloc(dev, sizeof(float) * M * N, &bf->d);
    if (!st) st = bc_memcpy_htod(dev, bf->a, bf->ha, sizeof(uint16_t) * M * K);
    if (!st) st = bc_memcpy_htod(dev, bf->b, bf->hb, sizeof(uint16_t) * N * K);
    return st;
}

/* D[r][c] = sum_k a*b / 16 exactly; compared as floats, bit for bit. */
static bc_status verify(const float *d)
{
    int8_t ia[M * K], ib[N * K]; /* 13 KiB of stack */
    for (uint32_t i = 0; i < M * K; i++)
        ia[i] = (int8_t)value(0, i);
    for (uint32_t i = 0; i < N * K; i++)
        ib[i] = (int8_t)value(1, i);
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            int sum = 0;
            for (int k = 0; k < K; k++)
                sum += ia[r * K + k] * ib[c * K + k];
            float want = (float)sum / 16.0f;
            if (memcmp(&want, &d[r * N + c], sizeof want) != 0)
                return BC_FAIL(BC_ERR_VERIFY_FAILED, "bc_selftest_gemm",
                               "D[%d][%d] = %g, the exact answer is %g (%dx%dx%d bf16 -> f32)", r, c,
                               (double)d[r * N + c], (double)want, M, N, K);
        }
    return BC_OK;
}

bc_status bc_selftest_gemm(bc_device *dev, bc_stream *s, bc_gemm_check_report *out_report)
{
    if (dev == NULL || s == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_selftest_gemm", "dev or stream is NULL");
    if (BC_STREAM_ON(s, dev, "the one checked"))
        return BC_ERR_INVALID_ARGUMENT;
    buffers bf;
    memset(&bf, 0, sizeof bf);
    bc_gemm_check_report rep = {0};
    bc_gemm_plan *plan = NULL;
    bc_status st = upload(dev, &bf);
    if (st)
        goto done;
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = M, d.n = N, d.k = K;
    d.d_type = BC_DTYPE_F32;
    d.a = bf.a, d.b = bf.b, d.d = bf.d;
    double t0 = now_us();
    st = bc_gemm_plan_create(dev, &d, &plan);
    rep.plan_us = now_us() - t0;
    if (st)
        goto done;
    st = bc_memset_d8_async(s, bf.d, 0xFF, sizeof(float) * M * N); /* poison: NaN */
    if (st)
        goto done;
    t0 = now_us();
    st = bc_gemm_launch(plan, s);
    if (!st)
        st = bc_stream_wait(s, BC_SMOKE_TIMEOUT_NS);
    rep.launch_us = now_us() - t0;
    if (st)
        goto done;
    t0 = now_us();
    st = bc_memcpy_dtoh(dev, bf.hd, bf.d, sizeof(float) * M * N);
    if (!st)
        st = verify(bf.hd);
    rep.verify_us = now_us() - t0;
    rep.elements = M * N;
done:
    bc_gemm_plan_destroy(plan);
    if (st == BC_ERR_TIMEOUT)
        bf.a = bf.b = bf.d = 0; /* the kernel may still read or write them: left to bc_device_close */
    free_buffers(dev, &bf);
    if (!st && out_report)
        *out_report = rep;
    return st;
}
