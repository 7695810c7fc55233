// Device-side probe (nvcc on the device machine; not part of the library):
// where does a TMA tiled store stop at the tensor's innermost edge? A map of
// W columns (bf16 or f32) over rows of a 16-byte-multiple pitch P > W, the
// pitch's tail poisoned; one 64-column (bf16) or 32-column (f32) box of 8
// rows stored at column 0 and at column 64 / 32. Prints, per W, how many
// bytes past column W each row's store changed.
// On the H200 (CUDA 13.0): every 16-byte piece the box touches is written
// whole. bf16: W = 1..7 wrote 14, 12, ..., 2 bytes past W, W = 8 none, and
// so on in every 8 columns up to the box's end, from either box start; f32:
// W = 1..3 wrote 12, 8, 4 bytes past W. Nothing past the box's own end.
// So the GEMM stores D by TMA only where N is a 16-byte multiple
// (runtime/gemm_plan.c, use_tma_store).
// Build and run: nvcc -arch=sm_90a -o /tmp/tc tools/device/tma_clip_probe.cu -lcuda && /tmp/tc
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
__global__ void k(const __grid_constant__ CUtensorMap m, int c0) {
  __shared__ alignas(1024) uint8_t s[128 * 8];
  uint32_t sa = (uint32_t)__cvta_generic_to_shared(s);
  if (threadIdx.x == 0) {
    for (int i = 0; i < 128 * 8; i++) s[i] = 0x11;
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" :: "l"(&m), "r"(c0), "r"(0), "r"(sa) : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group 0;");
  }
}
int main() {
  cuInit(0); cudaFree(0);
  const int pitch = 512; // bytes
  uint8_t *d; cudaMalloc(&d, pitch * 8);
  uint8_t h[512 * 8];
  for (int es = 2; es <= 4; es += 2) {
    for (int start = 0; start <= 1; start++) {
      printf("%s, box at column %d:", es == 2 ? "bf16" : "f32", start ? 128 / es : 0);
      for (int w = 1; w <= 200 / es; w++) {
        int c0 = start ? 128 / es : 0;
        if (w <= c0) continue;
        CUtensorMap m; cuuint64_t dims[2] = {(cuuint64_t)w, 8}; cuuint64_t str[1] = {(cuuint64_t)pitch};
        cuuint32_t box[2] = {(cuuint32_t)(128 / es), 8}, el[2] = {1, 1};
        CUresult r = cuTensorMapEncodeTiled(&m, es == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, d, dims, str, box, el,
                                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r) { printf(" W=%d encode %d", w, r); continue; }
        cudaMemset(d, 0xFF, pitch * 8);
        k<<<1, 32>>>(m, c0);
        cudaError_t e = cudaDeviceSynchronize();
        if (e) { printf(" W=%d %s\n", w, cudaGetErrorString(e)); return 1; }
        cudaMemcpy(h, d, pitch * 8, cudaMemcpyDeviceToHost);
        int past = 0, short_ = 0;
        for (int y = 0; y < 8; y++) {
          for (int b = w * es; b < pitch; b++) if (h[y * pitch + b] != 0xFF) past++;
          for (int b = c0 * es; b < w * es && b < c0 * es + 128; b++) if (h[y * pitch + b] != 0x11) short_++;
        }
        printf(" %d:%d%s", w, past / 8, short_ ? "(short)" : "");
      }
      printf("\n");
    }
  }
  return 0;
}
