// Device-side probe (nvcc on the device machine; not part of the library):
// does a TMA tiled store accept an innermost start coordinate whose byte
// address is not 16-byte aligned, when the tensor's base is? The map views
// rows of 3497 bf16 (a pitch that is not a 16-byte multiple) eight at a time
// (dim0 = 8 rows, a 16-byte multiple stride), so only the coordinate is
// misaligned. On the H100 (CUDA 13.0) the store at coordinate 0 runs and the
// store at coordinate 3 raises CUDA_ERROR_ILLEGAL_INSTRUCTION: the copy-out
// epilogue for such D rows cannot use TMA (kernels_ptx/PERF_NOTES.md,
// changes 13 and 32).
// Build and run: nvcc -arch=sm_90a -o /tmp/tu tools/device/tma_unaligned_probe.cu -lcuda && /tmp/tu
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
__global__ void k(const __grid_constant__ CUtensorMap m, int c0, int c1, int mode) {
  __shared__ alignas(1024) uint16_t s[64 * 8];
  __shared__ alignas(8) uint64_t bar;
  uint32_t sa = (uint32_t)__cvta_generic_to_shared(s), ba = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    if (mode == 0) { // store
      for (int i = 0; i < 64 * 8; i++) s[i] = (uint16_t)(1000 + i);
      asm volatile("fence.proxy.async.shared::cta;");
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" :: "l"(&m), "r"(c0), "r"(c1), "r"(sa) : "memory");
      asm volatile("cp.async.bulk.commit_group;");
      asm volatile("cp.async.bulk.wait_group 0;");
    } else { // load
      asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(ba));
      asm volatile("fence.mbarrier_init.release.cluster;");
      asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(ba), "r"(64 * 8 * 2));
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" :: "r"(sa), "l"(&m), "r"(c0), "r"(c1), "r"(ba) : "memory");
      asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], 0; @!p bra W; }" :: "r"(ba));
      printf("load first elems: %d %d %d ... row1: %d\n", s[0], s[1], s[2], s[64]);
    }
  }
}
int main() {
  cuInit(0); cudaFree(0);
  const int ldd = 3497, rows = 64;
  uint16_t *d; cudaMalloc(&d, (size_t)ldd * rows * 2 + 4096);
  uint16_t *h = (uint16_t *)malloc((size_t)ldd * rows * 2);
  // super-row map: dim0 = 8*ldd elements, dim1 = rows/8, stride = 8*ldd*2 bytes
  CUtensorMap m; cuuint64_t dims[2] = {(cuuint64_t)8 * ldd, (cuuint64_t)rows / 8}; cuuint64_t str[1] = {(cuuint64_t)8 * ldd * 2};
  cuuint32_t box[2] = {64, 8}, es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  printf("encode %d\n", r);
  int shifts[] = {0, 3, 1, 5, 100 + 3 * ldd};
  for (int t = 0; t < 5; t++) {
    cudaMemset(d, 0, (size_t)ldd * rows * 2);
    k<<<1, 32>>>(m, shifts[t], 1, 0);
    cudaError_t e = cudaDeviceSynchronize();
    printf("store coord %d: %s\n", shifts[t], cudaGetErrorString(e));
    if (e) return 1;
    cudaMemcpy(h, d, (size_t)ldd * rows * 2, cudaMemcpyDeviceToHost);
    // expected: element (dim0 = shifts+x, dim1 = 1+y) = smem box [y][x] (swizzled 128B: 16B chunk c of line y at c ^ (y%8))
    int bad = 0, nz = 0;
    for (size_t i = 0; i < (size_t)ldd * rows; i++) if (h[i]) nz++;
    for (int y = 0; y < 8; y++) for (int x = 0; x < 64; x++) {
      size_t gi = (size_t)(1 + y) * 8 * ldd + shifts[t] + x;
      int sx = ((((x * 2) >> 4) ^ (y & 7)) << 3) + (x & 7);
      if (h[gi] != 1000 + y * 64 + sx) bad++;
    }
    printf("  nonzero %d (expect 512), mismatches %d\n", nz, bad);
    k<<<1, 32>>>(m, shifts[t], 1, 1);
    e = cudaDeviceSynchronize();
    printf("load coord %d: %s\n", shifts[t], cudaGetErrorString(e));
    if (e) return 1;
  }
  return 0;
}
