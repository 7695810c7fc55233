// Device-side probe (nvcc on the device machine; not part of the library):
// how long do TMA loads of a GEMM operand's k-block take when its rows are
// shorter than the box (K = 8..56 elements, the rest zero-filled out of
// bounds) or off the 128-byte grid, against rows of exactly 64 elements,
// and which tensor-map shape loads such rows fastest?
// One CTA per SM; thread 0 issues LOADS boxes of 64 rows (each its own
// barrier and 8 KiB slot, all in flight at once), waits for all of them and
// records the time (%globaltimer); `tk 1` times one box alone (latency);
// `tk N 1`: every CTA loads the same rows (as every CTA of a GEMM row of
// tiles loads the same A box). Warm: the same matrix every launch.
// Variants (as printed): "2d sw128 p0/p128/p256": {K, rows} box {64, 64},
// 128-byte swizzle (the GEMM's map), L2 promotion none / 128 / 256 bytes;
// "2dn box K": box {K, 64}, no swizzle; "3d box 8 ch": {8, rows, K/8}
// (strides K*2 and 16 bytes) box {8, 64, 8}, no swizzle (16-byte chunks as
// wgmma's no-swizzle K-major core matrices); "3d box K ch": the same with
// box {8, 64, K/8}; "dense 128B": the 64 packed rows read as whole 128-byte
// lines (K of them). On the H100 (CUDA 13.0), 132 CTAs loading the same
// rows: two boxes 3.1 us at K = 8 against 0.61 at K = 64, dense 0.48
// (kernels_ptx/PERF_NOTES.md, change 50).
// Build and run: nvcc -arch=sm_90a -o /tmp/tk tools/device/tma_shortk_probe.cu -lcuda && /tmp/tk
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cstdlib>

#define LOADS 16
#define SLOT 8192

__device__ __forceinline__ uint64_t gtime() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void __launch_bounds__(32) probe(const __grid_constant__ CUtensorMap m, int dims, int boxbytes, int rows_total,
                                            int loads, int shared, int kdense, uint64_t *out) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t *ring = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  __shared__ __align__(8) uint64_t full[LOADS];
  if (threadIdx.x != 0)
    return;
  for (int i = 0; i < LOADS; i++)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"((uint32_t)__cvta_generic_to_shared(&full[i])));
  asm volatile("fence.mbarrier_init.release.cluster;");
  const uint64_t t0 = gtime();
  for (int l = 0; l < loads; l++) {
    const uint32_t fb = (uint32_t)__cvta_generic_to_shared(&full[l]);
    const uint32_t dst = (uint32_t)__cvta_generic_to_shared(ring + (size_t)l * SLOT);
    const int row = ((shared ? l : blockIdx.x * LOADS + l) * 64) % rows_total;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(boxbytes) : "memory");
    if (dims == -2)
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                   ::"r"(dst), "l"(&m), "r"(0), "r"(row * kdense / 64), "r"(fb) : "memory");
    else if (dims == 2)
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                   ::"r"(dst), "l"(&m), "r"(0), "r"(row), "r"(fb) : "memory");
    else
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                   ::"r"(dst), "l"(&m), "r"(0), "r"(row), "r"(0), "r"(fb) : "memory");
  }
  for (int l = 0; l < loads; l++)
    asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0; @!p bra W%=; }"
                 ::"r"((uint32_t)__cvta_generic_to_shared(&full[l])) : "memory");
  out[blockIdx.x] = gtime() - t0;
}

int main(int argc, char **argv) {
  const int loads = argc > 1 ? atoi(argv[1]) : LOADS, shared = argc > 2 ? atoi(argv[2]) : 0;
  cuInit(0);
  cudaFree(0);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int rows = sms * LOADS * 64;
  const size_t bytes = (size_t)rows * 256 * 2 + 4096;
  void *d;
  cudaMalloc(&d, bytes);
  cudaMemset(d, 0x11, bytes);
  uint64_t *out;
  cudaMalloc(&out, sms * sizeof(uint64_t));
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, LOADS * SLOT + 1024);
  const int ks[] = {8, 16, 24, 32, 56, 64, 72, 120, 128};
  printf("%-6s %-14s %10s %10s %10s  (ns for %d boxes of 64 rows in flight, one CTA per SM; median / max over CTAs, kernel us)\n",
         "K", "map", "median", "max", "kernel", loads);
  for (int ki = 0; ki < (int)(sizeof ks / sizeof ks[0]); ki++) {
    const int K = ks[ki];
    for (int v = 0; v < 7; v++) {
      CUtensorMap m;
      CUresult r;
      int dims = 2, boxbytes = 64 * 64 * 2;
      const char *name;
      if (v <= 2) {
        const CUtensorMapL2promotion pr[] = {CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B};
        const char *nm[] = {"2d sw128 p0", "2d sw128 p128", "2d sw128 p256"};
        name = nm[v];
        cuuint64_t gd[2] = {(cuuint64_t)K, (cuuint64_t)rows}, gs[1] = {(cuuint64_t)K * 2};
        cuuint32_t box[2] = {64, 64}, es[2] = {1, 1};
        r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d, gd, gs, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_128B, pr[v], CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      } else if (v == 3) {
        name = "2dn box K";
        const cuuint32_t kb = K < 64 ? (K + 7) / 8 * 8 : 64;
        cuuint64_t gd[2] = {(cuuint64_t)K, (cuuint64_t)rows}, gs[1] = {(cuuint64_t)K * 2};
        cuuint32_t box[2] = {kb, 64}, es[2] = {1, 1};
        boxbytes = kb * 64 * 2;
        r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d, gd, gs, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      } else if (v == 6) {
        name = "dense 128B";
        const cuuint32_t lines = (64 * K + 63) / 64; /* 64 packed rows of K in 128-byte lines */
        cuuint64_t gd[2] = {64, (cuuint64_t)rows * K / 64}, gs[1] = {128};
        cuuint32_t box[2] = {64, lines < 256 ? lines : 256}, es[2] = {1, 1};
        boxbytes = 128 * box[1];
        r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d, gd, gs, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        dims = -2;
      } else {
        name = v == 4 ? "3d box 8 ch" : "3d box K ch";
        dims = 3;
        const cuuint32_t ch = v == 4 || K >= 64 ? 8 : (K + 7) / 8;
        cuuint64_t gd[3] = {8, (cuuint64_t)rows, (cuuint64_t)(K + 7) / 8}, gs[2] = {(cuuint64_t)K * 2, 16};
        cuuint32_t box[3] = {8, 64, ch}, es[3] = {1, 1, 1};
        boxbytes = 8 * 64 * ch * 2;
        r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, d, gd, gs, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      }
      if (r != CUDA_SUCCESS) {
        printf("%-6d %-14s encode failed %d\n", K, name, (int)r);
        continue;
      }
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0), cudaEventCreate(&e1);
      float ms = 0;
      for (int rep = 0; rep < 4; rep++) {
        cudaEventRecord(e0);
        probe<<<sms, 32, LOADS * SLOT + 1024>>>(m, dims, boxbytes, rows, loads, shared, K, out);
        cudaEventRecord(e1);
        cudaError_t ce = cudaDeviceSynchronize();
        if (ce) {
          printf("%-6d %-14s launch: %s\n", K, name, cudaGetErrorString(ce));
          return 1;
        }
        cudaEventElapsedTime(&ms, e0, e1);
      }
      std::vector<uint64_t> h(sms);
      cudaMemcpy(h.data(), out, sms * sizeof(uint64_t), cudaMemcpyDeviceToHost);
      std::sort(h.begin(), h.end());
      printf("%-6d %-14s %10llu %10llu %10.2f\n", K, name, (unsigned long long)h[sms / 2], (unsigned long long)h[sms - 1],
             ms * 1000);
    }
  }
  return 0;
}
