// Device-side probe (nvcc on the device machine; not part of the library):
// how fast do 64-element box rows stream from L2 into shared memory when the
// row pitch is not a multiple of 128 bytes (K not a multiple of 64 in
// 16-bit types), against aligned pitches, by TMA (box heights 64, 128, 256)
// and by cp.async (16 bytes a thread)?
// 132 CTAs (one per SM); CTA c streams row-block c % (2048 / rows) of a
// 2048-row matrix (each row-block read by several CTAs, as a GEMM's A
// row-block is read by its tile columns) across 63 k-blocks, four times,
// through a ring of shared slots; no arithmetic. The matrix stays in L2.
// On the H100 (CUDA 13.0; kernels_ptx/PERF_NOTES.md, change 59), this
// version: 128-row TMA boxes take 303-309 ns a load on the grid and at 96
// or 64 bytes past a line, 376 ns off the 32-byte sectors (a pitch that is
// an odd multiple of 16 bytes: +22%); 64-row boxes 214-218 ns at every
// pitch; 256-row boxes lose even on the sectors (308 -> 421-702 ns).
// cp.async does not care about the pitch (but 256 rows off the sectors)
// and is slower: 335 / 422 / 593 ns at 64 / 128 / 256 rows.
// Build and run: nvcc -arch=sm_90a -o /tmp/tp tools/device/tma_pitch_probe.cu -lcuda && /tmp/tp
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#include <algorithm>

#define RING_BYTES (96 * 1024)
#define N_ROWS 2048
#define K 4032 // 63 k-blocks at every pitch
#define REPS 4

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void wait_parity(uint32_t bar, uint32_t par) {
  asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W%=; }" ::"r"(bar), "r"(par) : "memory");
}

// The ring: `slots` full barriers expecting `full_count` arrivals, empty ones expecting 1.
__device__ void ring_init(uint64_t *full, uint64_t *empty, int slots, int full_count) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < slots; i++) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&full[i])), "r"(full_count));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&empty[i])));
    }
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
}

// One consumer thread: waits for each load and frees its slot.
__device__ void ring_drain(uint64_t *full, uint64_t *empty, int slots, int loads) {
  for (int l = 0; l < loads; l++) {
    const int s = l % slots;
    wait_parity(smem_u32(&full[s]), (l / slots) & 1);
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&empty[s])) : "memory");
  }
}

// mode 0: thread 0 issues one TMA box of `rows` x 64 elements a k-block (m), warp 1 frees.
// mode 1: threads 0-127 copy the same box by cp.async (16 bytes each, swizzled as TMA does), thread 128 frees.
__global__ void __launch_bounds__(160) stream(const __grid_constant__ CUtensorMap m, const uint16_t *base, int pitch,
                                              int rows, int mode) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t *ring = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  __shared__ __align__(8) uint64_t full[64], empty[64];
  const uint32_t slot_bytes = 128u * rows;
  const int slots = RING_BYTES / slot_bytes, kblocks = K / 64, loads = kblocks * REPS;
  ring_init(full, empty, slots, mode == 0 ? 1 : 128);
  const int row0 = (blockIdx.x % (N_ROWS / rows)) * rows;
  const int producers = mode == 0 ? 1 : 128;
  if (threadIdx.x < producers) {
    for (int l = 0; l < loads; l++) {
      const int s = l % slots, kb = l % kblocks;
      if (l >= slots)
        wait_parity(smem_u32(&empty[s]), (l / slots - 1) & 1);
      const uint32_t dst = smem_u32(ring + (size_t)s * slot_bytes), fb = smem_u32(&full[s]);
      if (mode == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(slot_bytes) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     ::"r"(dst), "l"(&m), "r"(kb * 64), "r"(row0), "r"(fb) : "memory");
      } else {
        for (int c = threadIdx.x; c < rows * 8; c += 128) {
          const int r = c >> 3, ch = c & 7;
          const uint16_t *src = base + (size_t)(row0 + r) * pitch + kb * 64 + ch * 8;
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + r * 128 + ((ch ^ (r & 7)) << 4)), "l"(src) : "memory");
        }
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(fb) : "memory");
      }
    }
  } else if (threadIdx.x == (mode == 0 ? 32 : 128)) {
    ring_drain(full, empty, slots, loads);
  }
}

static CUtensorMap make_map(void *base, int pitch, int rows) {
  CUtensorMap m;
  memset(&m, 0, sizeof m);
  cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)N_ROWS}, str[1] = {(cuuint64_t)pitch * 2};
  cuuint32_t box[2] = {64, (cuuint32_t)rows}, es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) printf("encode failed %d\n", r);
  return m;
}

int main() {
  cuInit(0);
  cudaFree(0);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const size_t smem = RING_BYTES + 1024, bytes = (size_t)N_ROWS * 4160 * 2 + 4096;
  cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  void *buf;
  cudaMalloc(&buf, bytes);
  cudaMemset(buf, 1, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int pitches[] = {4096, 4088, 4080, 4064, 4032, 4160}; // elements
  for (int mode = 0; mode < 2; mode++)
    for (int rows : {64, 128, 256})
      for (int pitch : pitches) {
        CUtensorMap m = make_map(buf, pitch, rows);
        std::vector<float> t;
        for (int it = 0; it < 23; it++) {
          cudaEventRecord(e0);
          stream<<<sms, 160, smem>>>(m, (const uint16_t *)buf, pitch, rows, mode);
          cudaEventRecord(e1);
          cudaEventSynchronize(e1);
          float ms;
          cudaEventElapsedTime(&ms, e0, e1);
          if (it >= 3) t.push_back(ms * 1000.f);
        }
        cudaError_t e = cudaGetLastError();
        std::sort(t.begin(), t.end());
        const double us = t[t.size() / 2], moved = (double)sms * REPS * (K / 64) * 128.0 * rows;
        printf("%-8s rows %3d pitch %4d (%3d B past a line): %8.2f us %7.0f GB/s %5.0f ns/load %s\n", mode ? "cp.async" : "TMA",
               rows, pitch, (pitch * 2) % 128, us, moved / us / 1e3, us * 1e3 / (REPS * (K / 64)), cudaGetErrorString(e));
      }
  return 0;
}
