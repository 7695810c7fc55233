// Doorbell probe (device machine only, built with nvcc there; not part of
// the library): the round trip of a resident kernel's step with no work in
// it, host store to the doorbell -> the GPU sees it -> completion seen by
// the host, for ways of watching the doorbell and of reporting the end.
// It says which of them a resident step should use and what each costs.
//
//   nvcc -O2 -arch=sm_90a -o doorbell_probe tools/device/doorbell_probe.cu
//   ./doorbell_probe [steps] [cpu]
//
// Watching: W warps of CTA 0 (lane 0 each) poll the mapped doorbell
// (ld.acquire.sys), warp w starting its polls w/W of a poll's round trip
// after warp 0, so that some poll leaves every RT/W; the first to see the
// step writes it to shared memory, which the others check between polls.
// With `all`, every CTA does so itself; otherwise CTA 0's thread 0 hands
// it on through a global word (st.release.gpu) that the others poll
// (ld.acquire.gpu), as the executor does.
// Ending: `poll`: every CTA adds 1 to a counter (red.release.gpu) and CTA 0
// polls it until all have, then stores the step to the mapped completion
// word (st.release.sys), as the executor does; `last`: every CTA adds 1
// with atom.acq_rel.gpu and the one that brings it to the total stores the
// completion word.
#include <cuda_runtime.h>
#include "probe_ck.h"
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <algorithm>
#include <cmath>
#include <vector>

__device__ __forceinline__ uint64_t ld_acq_sys(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t ld_acq_gpu(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_rel_gpu(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_rel_sys(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void red_rel_gpu(uint64_t *p)
{
    asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(p) : "memory");
}
__device__ __forceinline__ uint64_t atom_ar_gpu(uint64_t *p)
{
    uint64_t v;
    asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], 1;" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t clk(void)
{
    uint64_t c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    return c;
}

// sync[0]: the handed-on step word; sync[16]: the arrival counter, on its own 128-byte line (as the executor's)
__global__ void k_resident(const uint64_t *db, uint64_t *done, uint64_t *sync, int pollers, int all, int last,
                           uint32_t rt_cycles, uint64_t steps)
{
    __shared__ volatile uint64_t found;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int watch = all || blockIdx.x == 0;
    for (uint64_t s = 1; s <= steps; s++) {
        if (threadIdx.x == 0)
            found = 0;
        __syncthreads();
        if (watch && warp < pollers && lane == 0) {
            const uint64_t t0 = clk() + (uint64_t)rt_cycles * warp / pollers;
            while (clk() < t0 && found == 0) {
            }
            while (found == 0) {
                if (ld_acq_sys(db) >= s) {
                    found = s;
                    break;
                }
            }
        }
        __syncthreads();
        if (!watch && threadIdx.x == 0) {
            while (ld_acq_gpu(sync) < s) {
            }
        }
        if (!all && blockIdx.x == 0 && threadIdx.x == 0 && gridDim.x > 1)
            st_rel_gpu(sync, s);
        __syncthreads();
        if (threadIdx.x == 0) {
            const uint64_t target = s * gridDim.x;
            if (last) {
                if (atom_ar_gpu(sync + 16) + 1 == target)
                    st_rel_sys(done, s);
            } else {
                red_rel_gpu(sync + 16);
                if (blockIdx.x == 0) {
                    while (ld_acq_gpu(sync + 16) < target) {
                    }
                    st_rel_sys(done, s);
                }
            }
        }
    }
}

#define WARMUP 200 /* steps rung before the kept ones, as barecuda latency's default warm-up */

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void run(const char *name, int grid, int pollers, int all, int last, uint32_t rt_cycles, int steps,
                uint64_t *h_db, uint64_t *h_done, uint64_t *d_db, uint64_t *d_done, uint64_t *d_sync)
{
    *(volatile uint64_t *)h_db = 0;
    *(volatile uint64_t *)h_done = 0;
    CK(cudaMemset(d_sync, 0, 256));
    CK(cudaDeviceSynchronize());
    k_resident<<<grid, 256>>>(d_db, d_done, d_sync, pollers, all, last, rt_cycles, (uint64_t)(WARMUP + steps));
    CK(cudaGetLastError());
    std::vector<double> t(steps);
    for (int i = 1; i <= WARMUP + steps; i++) { /* the first WARMUP steps are not kept (the kernel's start) */
        const double a = now_ns();
        __atomic_store_n(h_db, (uint64_t)i, __ATOMIC_RELEASE);
        while (__atomic_load_n(h_done, __ATOMIC_ACQUIRE) != (uint64_t)i) {
        }
        if (i > WARMUP)
            t[i - WARMUP - 1] = (now_ns() - a) / 1000.0;
    }
    CK(cudaDeviceSynchronize());
    std::sort(t.begin(), t.end());
    /* nearest rank, as barecuda latency reports them (tools/cli/stats.c) */
    auto q = [&](double f) { return t[(size_t)std::max(1.0, std::ceil(f * steps)) - 1]; };
    printf("%-34s grid %3d pollers %d: p50 %6.2f p90 %6.2f p99 %6.2f p99.9 %6.2f max %7.2f us\n", name, grid, pollers,
           q(0.5), q(0.9), q(0.99), q(0.999), t[steps - 1]);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const int steps = argc > 1 ? atoi(argv[1]) : 10000;
    if (steps < 1) {
        fprintf(stderr, "doorbell_probe: steps must be at least 1\n");
        return 2;
    }
    const int cpu = argc > 2 ? atoi(argv[2]) : 3;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        perror("doorbell_probe: sched_setaffinity (the thread is not pinned)");
    CK(cudaSetDeviceFlags(cudaDeviceScheduleSpin | cudaDeviceMapHost));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int khz = 0;
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    uint64_t *h, *d, *d_sync;
    CK(cudaHostAlloc((void **)&h, 4096, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&d, h, 0));
    CK(cudaMalloc((void **)&d_sync, 256));
    uint64_t *h_db = h, *h_done = h + 64, *d_db = d, *d_done = d + 64; /* separate 512-byte lines */
    const uint32_t rt = (uint32_t)(1.2e-6 * khz * 1e3); /* a poll's round trip, ~1.2 us, in cycles */
    printf("SMs %d, clock %d kHz, stagger span %u cycles, %d steps, CPU %d\n", sms, khz, rt, steps, cpu);
    const int g = sms >= 128 ? 128 : sms;
    for (int pass = 0; pass < 2; pass++) {
        run("one CTA, end poll", 1, 1, 0, 0, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("one CTA, end poll", 1, 2, 0, 0, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("one CTA, end poll", 1, 4, 0, 0, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("one CTA, end poll", 1, 8, 0, 0, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("handed on, end poll (executor)", g, 1, 0, 0, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("handed on, end last", g, 1, 0, 1, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("handed on, end poll", g, 4, 0, 0, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("handed on, end last", g, 4, 0, 1, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("handed on, end last", g, 8, 0, 1, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("every CTA watches, end last", g, 1, 1, 1, rt, steps, h_db, h_done, d_db, d_done, d_sync);
        run("every CTA watches, end poll", g, 1, 1, 0, rt, steps, h_db, h_done, d_db, d_done, d_sync);
    }
    return 0;
}
