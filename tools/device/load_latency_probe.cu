// Load latency probe (device machine only, built with nvcc there; not part
// of the library): the round trip of one dependent global load on this GPU,
// by load kind and by where the line is, in cycles (%clock64) and ns, for
// one thread of one CTA, and for one thread of each of 128 CTAs at once.
// It is the floor of every dependent read in a resident step (a GEMV
// item's operands, an epilogue's bias, a grid barrier's poll).
//
//   nvcc -O2 -arch=sm_90a -o load_latency_probe tools/device/load_latency_probe.cu
//   ./load_latency_probe
#include <cuda_runtime.h>
#include "probe_ck.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// kind: 0 ld.global.cg (L2), 1 ld.global.ca (L1 where it hits), 2 ld.global.nc, 3 ld.acquire.gpu
__device__ __forceinline__ uint64_t ld(const uint64_t *p, int kind)
{
    uint64_t v;
    if (kind == 0)
        asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else if (kind == 1)
        asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else if (kind == 2)
        asm volatile("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// buf holds a chain over its first n lines: buf[i] = index of the next element (a random cycle over lines of
// 128 bytes)
__global__ void k_chase(const uint64_t *buf, uint32_t n, int kind, int hops, uint64_t *out)
{
    if (threadIdx.x != 0)
        return;
    uint64_t i = (uint64_t)(blockIdx.x % n) * 16; /* each CTA starts elsewhere on the cycle (inside it) */
    for (int h = 0; h < 64; h++) /* warm: the lines into L2 (and L1 for ca) */
        i = ld(buf + i, kind);
    const uint64_t t0 = clock64();
    for (int h = 0; h < hops; h++)
        i = ld(buf + i, kind);
    const uint64_t t1 = clock64();
    out[blockIdx.x * 2] = t1 - t0;
    out[blockIdx.x * 2 + 1] = i;
}

int main(void)
{
    int khz = 0;
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    const size_t lines[] = {64, 4096, 65536}; /* 8 KB (L1-sized), 512 KB, 8 MB: all in L2 */
    uint64_t *d, *out;
    const size_t most = 65536 * 16;
    CK(cudaMalloc(&d, most * 8));
    CK(cudaMalloc(&out, 256 * 8));
    uint64_t *h = (uint64_t *)malloc(most * 8), *ho = (uint64_t *)malloc(256 * 8);
    const char *names[] = {"ld.global.cg", "ld.global.ca", "ld.global.nc", "ld.acquire.gpu"};
    printf("clock %d kHz\n", khz);
    for (size_t li = 0; li < 3; li++) {
        const size_t n = lines[li];
        /* a random cycle over n lines (16 u64 each): element 16*perm[j] -> 16*perm[j+1] */
        uint32_t *perm = (uint32_t *)malloc(n * 4);
        for (size_t j = 0; j < n; j++)
            perm[j] = (uint32_t)j;
        srand(7);
        for (size_t j = n - 1; j > 0; j--) {
            size_t r = (size_t)rand() % (j + 1);
            uint32_t t = perm[j];
            perm[j] = perm[r], perm[r] = t;
        }
        for (size_t j = 0; j < n * 16; j++)
            h[j] = 0;
        for (size_t j = 0; j < n; j++)
            for (int w = 0; w < 16; w++)
                h[(size_t)perm[j] * 16 + w] = (uint64_t)perm[(j + 1) % n] * 16;
        CK(cudaMemcpy(d, h, n * 16 * 8, cudaMemcpyHostToDevice));
        for (int kind = 0; kind < 4; kind++)
            for (int grid = 1; grid <= 128; grid *= 128) {
                const int hops = 2000;
                k_chase<<<grid, 32>>>(d, (uint32_t)n, kind, hops, out);
                CK(cudaDeviceSynchronize());
                CK(cudaMemcpy(ho, out, 256 * 8, cudaMemcpyDeviceToHost));
                double sum = 0, mx = 0;
                for (int b = 0; b < grid; b++) {
                    const double c = (double)ho[b * 2] / hops;
                    sum += c;
                    mx = c > mx ? c : mx;
                }
                const double cyc = sum / grid;
                printf("%-15s %8zu KB  CTAs %3d: %6.0f cycles (%5.0f ns) a load, slowest CTA %6.0f\n", names[kind],
                       n * 128 / 1024, grid, cyc, cyc / (khz / 1e6), mx);
            }
        free(perm);
    }
    return 0;
}
