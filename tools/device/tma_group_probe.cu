// Device-side probe (nvcc on the device machine; not part of the library):
// does one TMA load of G k-blocks (a 3-D view of a row-major matrix: 64
// elements, rows, k-blocks at a 128-byte stride) land the same bytes as G
// 2-D loads of one k-block each into consecutive 1024-byte-aligned slots,
// and how fast does each stream a matrix into one CTA per SM?
// Each CTA streams its R rows across K through a ring of shared slots
// (thread 0 issues, warp 1 consumes and frees); no arithmetic, so the time
// is the load path's alone. Cold: four copies of the matrix rotated (more
// than the L2 holds); warm: the same copy every launch.
// On the H100 (CUDA 13.0): the 3-D copy lands the same bytes; one barrier
// per k-block streams at ~330-350 ns a k-block, four k-blocks on one
// barrier (four 2-D copies or one 3-D) at 180-275. The GEMM kernel with
// grouped stages was slower, not faster (kernels_ptx/PERF_NOTES.md,
// change 44): its k-block already takes ~240 ns.
// Build and run: nvcc -arch=sm_90a -o /tmp/tg tools/device/tma_group_probe.cu -lcuda && /tmp/tg
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#include <algorithm>

#define RING_BYTES (96 * 1024)

__device__ __forceinline__ void wait_parity(uint32_t bar, uint32_t par) {
  asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W%=; }" ::"r"(bar), "r"(par) : "memory");
}

// mode 2: 2-D loads, one k-block each; mode 3: 3-D loads of G k-blocks each.
__global__ void __launch_bounds__(64) stream(const __grid_constant__ CUtensorMap m, int mode, int rows, int G, int kblocks,
                                             uint16_t *dump) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t *ring = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  __shared__ __align__(8) uint64_t full[64], empty[64];
  const uint32_t slot_bytes = 128u * rows * G; // one load's bytes
  const int slots = RING_BYTES / slot_bytes;
  const int loads = kblocks / G;
  if (threadIdx.x == 0) {
    for (int i = 0; i < slots; i++) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"((uint32_t)__cvta_generic_to_shared(&full[i])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"((uint32_t)__cvta_generic_to_shared(&empty[i])));
    }
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  const int row0 = blockIdx.x * rows;
  if (threadIdx.x == 0) {
    for (int l = 0; l < loads; l++) {
      const int s = l % slots, round = l / slots;
      const uint32_t fb = (uint32_t)__cvta_generic_to_shared(&full[s]);
      if (round > 0)
        wait_parity((uint32_t)__cvta_generic_to_shared(&empty[s]), (round - 1) & 1);
      const uint32_t dst = (uint32_t)__cvta_generic_to_shared(ring + (size_t)s * slot_bytes);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(slot_bytes) : "memory");
      if (mode == 2) {
        for (int g = 0; g < G; g++)
          asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                       ::"r"(dst + 128u * rows * g), "l"(&m), "r"((l * G + g) * 64), "r"(row0), "r"(fb) : "memory");
      } else {
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                     ::"r"(dst), "l"(&m), "r"(0), "r"(row0), "r"(l * G), "r"(fb) : "memory");
      }
    }
  } else if (threadIdx.x == 32) {
    for (int l = 0; l < loads; l++) {
      const int s = l % slots, round = l / slots;
      wait_parity((uint32_t)__cvta_generic_to_shared(&full[s]), round & 1);
      if (dump != nullptr && blockIdx.x == 1 && l == 1) // the second load's bytes, for the layout check
        for (uint32_t i = 0; i < slot_bytes / 2; i++)
          dump[i] = ((uint16_t *)(ring + (size_t)s * slot_bytes))[i];
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"((uint32_t)__cvta_generic_to_shared(&empty[s])) : "memory");
    }
  }
}

static CUtensorMap make_map(void *base, int n_rows, int k, int mode, int rows, int G) {
  CUtensorMap m;
  memset(&m, 0, sizeof m);
  CUresult r;
  if (mode == 2) {
    cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)n_rows}, str[1] = {(cuuint64_t)k * 2};
    cuuint32_t box[2] = {64, (cuuint32_t)rows}, es[2] = {1, 1};
    r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  } else {
    cuuint64_t dims[3] = {64, (cuuint64_t)n_rows, (cuuint64_t)k / 64}, str[2] = {(cuuint64_t)k * 2, 128};
    cuuint32_t box[3] = {64, (cuuint32_t)rows, (cuuint32_t)G}, es[3] = {1, 1, 1};
    r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, base, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  }
  if (r != CUDA_SUCCESS) {
    const char *s = "?";
    cuGetErrorString(r, &s);
    printf("encode mode %d rows %d G %d: %d %s\n", mode, rows, G, r, s);
  }
  return m;
}

int main() {
  cuInit(0);
  cudaFree(0);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int K = 4096, copies = 4;
  const size_t smem = RING_BYTES + 1024;
  cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  // the layout check: 3-D load of G k-blocks == G 2-D loads (rows 32, G 4, from the same matrix)
  {
    const int rows = 32, G = 4, n = 128 * rows;
    std::vector<uint16_t> h((size_t)n * K);
    for (size_t i = 0; i < h.size(); i++) h[i] = (uint16_t)(i * 2654435761u >> 7);
    uint16_t *d, *d2, *d3;
    cudaMalloc(&d, h.size() * 2);
    cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
    const size_t dump_elems = 64u * rows * G;
    cudaMalloc(&d2, dump_elems * 2);
    cudaMalloc(&d3, dump_elems * 2);
    CUtensorMap m2 = make_map(d, n, K, 2, rows, G), m3 = make_map(d, n, K, 3, rows, G);
    stream<<<128, 64, smem>>>(m2, 2, rows, G, K / 64, d2);
    stream<<<128, 64, smem>>>(m3, 3, rows, G, K / 64, d3);
    cudaError_t e = cudaDeviceSynchronize();
    std::vector<uint16_t> a(dump_elems), b(dump_elems);
    cudaMemcpy(a.data(), d2, dump_elems * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), d3, dump_elems * 2, cudaMemcpyDeviceToHost);
    // and against the host: slot byte layout [g][r][chunk ^ (r & 7)][8]
    int bad_host = 0;
    for (int g = 0; g < G; g++)
      for (int r = 0; r < rows; r++)
        for (int x = 0; x < 64; x++) {
          const int sx = ((((x * 2) >> 4) ^ (r & 7)) << 3) + (x & 7);
          const size_t gi = (size_t)(1 * rows + r) * K + (size_t)(1 * G + g) * 64 + x;
          if (b[(size_t)g * rows * 64 + r * 64 + sx] != h[gi]) bad_host++;
        }
    printf("layout check: %s, 3-D vs 2-D bytes %s, 3-D vs host mismatches %d\n", cudaGetErrorString(e),
           memcmp(a.data(), b.data(), dump_elems * 2) == 0 ? "identical" : "DIFFER", bad_host);
    cudaFree(d); cudaFree(d2); cudaFree(d3);
  }
  struct { int rows, G, mode; } cases[] = {{32, 1, 2}, {32, 2, 2}, {32, 4, 2}, {32, 2, 3}, {32, 4, 3}, {32, 8, 3},
                                           {16, 1, 2}, {16, 4, 2}, {16, 4, 3}, {16, 8, 3}, {64, 1, 2}, {64, 4, 3}};
  for (int warm = 0; warm < 2; warm++)
    for (auto &c : cases) {
      const int n = 128 * c.rows; // 128 CTAs
      const size_t bytes = (size_t)n * K * 2;
      void *buf[copies];
      CUtensorMap maps[copies];
      for (int i = 0; i < copies; i++) {
        cudaMalloc(&buf[i], bytes);
        cudaMemset(buf[i], 1, bytes);
        maps[i] = make_map(buf[i], n, K, c.mode, c.rows, c.G);
      }
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      std::vector<float> t;
      for (int it = 0; it < 43; it++) {
        const int i = warm ? 0 : it % copies;
        cudaEventRecord(e0);
        stream<<<128, 64, smem>>>(maps[i], c.mode, c.rows, c.G, K / 64, nullptr);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (it >= 3) t.push_back(ms * 1000.f);
      }
      cudaError_t e = cudaGetLastError();
      std::sort(t.begin(), t.end());
      const double us = t[t.size() / 2];
      const int per_load = c.mode == 2 ? 1 : c.G;
      printf("%s rows %2d %s G %d (box %2d KiB, %4d loads/CTA): %7.2f us  %6.0f GB/s  %5.0f ns/k-block  %s\n", warm ? "warm" : "cold",
             c.rows, c.mode == 2 ? "2-D" : "3-D", c.G, 128 * c.rows * per_load / 1024, (K / 64) * (c.mode == 2 ? 1 : 1) / per_load,
             us, bytes / us / 1e3, us * 1e3 / (K / 64), cudaGetErrorString(e));
      for (int i = 0; i < copies; i++) cudaFree(buf[i]);
    }
  return 0;
}
