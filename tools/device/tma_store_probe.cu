// Device-side probe (nvcc on the device machine; not part of the library):
// how fast does a GEMM-shaped epilogue write a D larger than the L2, with no
// arithmetic, by tile shape, TMA box shape, tile walk and CTAs per SM?
// D is R x C bf16 (pitch P elements). Each CTA walks tiles t = cta, cta +
// grid, ... of BM x BN; each 64-row band of a tile is written by its own
// issuing thread (one per 64 rows, as each consumer warpgroup of the GEMM
// kernels), box by box from two shared buffers it alternates, waiting
// (cp.async.bulk.wait_group.read 1) only before reusing a buffer, as the
// library's epilogue does. The threads variant stores the same tiles with
// 16-byte st.global from 128 threads a band (the copy-out's pattern), and
// "linear" is a grid-stride st.global.v4 over the whole of D: the write
// bandwidth a kernel can reach at all.
// Walks: nfast (tile index -> row-major over tiles), mfast (column-major),
// g8 (column-major inside bands of 8 tile rows, the GEMM kernels' raster).
// On the H200 (CUDA 13.0; kernels_ptx/PERF_NOTES.md, change 86): linear
// 3.64 TB/s; rows on 128 bytes 3.0-3.8 TB/s for every box and walk; rows
// 16 bytes past the lines (off the 32-byte sectors), TMA stores, 2.19-2.81
// TB/s walking along the rows, 1.64-2.59 on bands of 8 tile rows,
// 0.97-2.22 down the columns (thread stores 2.20-2.93, 1.64-2.72,
// 1.12-2.41; 128 x 64 tiles by TMA, two CTAs an SM: 2.22, 1.66, 1.27).
// The 64-row box of 512-byte
// rows did not launch ("invalid argument": its four 32 KiB buffers are
// over the 100 KiB of shared memory the probe asks for), so it was not
// measured; the 32- and 8-row boxes of 512-byte rows stand for it.
// Build and run: nvcc -arch=sm_90a -o /tmp/ts tools/device/tma_store_probe.cu -lcuda && /tmp/ts
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#include <algorithm>

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

struct Job {
  int R, C, P, BM, BN, brows, bcols, walk, threads_path;
};

__device__ __forceinline__ void tile_of(const Job &j, int t, int *tm, int *tn) {
  const int tiles_m = j.R / j.BM, tiles_n = j.C / j.BN;
  if (j.walk == 0) {
    *tm = t / tiles_n, *tn = t % tiles_n;
  } else if (j.walk == 1) {
    *tm = t % tiles_m, *tn = t / tiles_m;
  } else {
    const int g = 8, band = t / (g * tiles_n), in = t % (g * tiles_n);
    const int rows = min(g, tiles_m - band * g);
    *tm = band * g + in % rows, *tn = in / rows;
  }
}

__global__ void __launch_bounds__(256) store_tiles(const __grid_constant__ CUtensorMap m, Job j, uint16_t *d) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t *sm = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  const int bands = j.BM / 64, band = threadIdx.x / 128, t128 = threadIdx.x % 128;
  const int tiles = (j.R / j.BM) * (j.C / j.BN);
  const uint32_t box_bytes = j.brows * j.bcols * 2;
  if (band >= bands)
    return;
  uint32_t seq = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int tm, tn;
    tile_of(j, t, &tm, &tn);
    const int row0 = tm * j.BM + band * 64, col0 = tn * j.BN;
    if (j.threads_path) { // 128 threads store the band's 64 rows x BN columns, 16 bytes each
      const int per_row = j.BN / 8;
      for (int i = t128; i < 64 * per_row; i += 128) {
        const int r = i / per_row, c = (i % per_row) * 8;
        uint4 v = make_uint4(0x3f803f80u, 0, 0, 0);
        *(uint4 *)(d + (size_t)(row0 + r) * j.P + col0 + c) = v;
      }
      continue;
    }
    if (t128 != 0)
      continue;
    for (int r = 0; r < 64; r += j.brows)
      for (int c = 0; c < j.BN; c += j.bcols) {
        const uint32_t buf = smem_u32(sm + (size_t)(band * 2 + (seq++ & 1)) * box_bytes);
        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(&m), "r"(col0 + c), "r"(row0 + r), "r"(buf) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      }
  }
  if (t128 == 0)
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

__global__ void linear(uint4 *d, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    d[i] = make_uint4(0x3f803f80u, 0, 0, 0);
}

static CUtensorMap make_map(void *base, const Job &j) {
  CUtensorMap m;
  memset(&m, 0, sizeof m);
  cuuint64_t dims[2] = {(cuuint64_t)j.C, (cuuint64_t)j.R}, str[1] = {(cuuint64_t)j.P * 2};
  cuuint32_t box[2] = {(cuuint32_t)j.bcols, (cuuint32_t)j.brows}, es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, str, box, es,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      j.bcols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    printf("encode failed %d\n", r);
  return m;
}

static float time_us(cudaEvent_t e0, cudaEvent_t e1, void (*f)(void *), void *arg) {
  std::vector<float> t;
  for (int it = 0; it < 13; it++) {
    cudaEventRecord(e0);
    f(arg);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (it >= 3)
      t.push_back(ms * 1000.f);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Run {
  Job j;
  CUtensorMap m;
  int grid;
  size_t smem;
  uint16_t *d;
};
static void run_tiles(void *p) {
  Run *r = (Run *)p;
  store_tiles<<<r->grid, 256, r->smem>>>(r->m, r->j, r->d);
}
struct Lin {
  uint4 *d;
  size_t n;
  int grid;
};
static void run_linear(void *p) {
  Lin *l = (Lin *)p;
  linear<<<l->grid, 512>>>(l->d, l->n);
}

int main(int argc, char **argv) {
  cuInit(0);
  cudaFree(0);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int R = 8192, C = 8192;
  const size_t bytes = (size_t)R * (C + 64) * 2 + 4096;
  uint16_t *d;
  cudaMalloc(&d, bytes);
  cudaMemset(d, 0, bytes);
  cudaFuncSetAttribute(store_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const double mb = (double)R * C * 2;
  {
    Lin l = {(uint4 *)d, (size_t)R * C * 2 / 16, sms * 4};
    const float us = time_us(e0, e1, run_linear, &l);
    printf("linear st.global.v4 over D (%d x %d bf16): %8.1f us %6.0f GB/s\n", R, C, us, mb / us / 1e3);
  }
  const char *walks[] = {"nfast", "mfast", "g8"};
  struct V {
    int BM, BN, brows, bcols, threads, per_sm;
  } vs[] = {
      {128, 64, 64, 64, 0, 1},   {128, 64, 64, 64, 0, 2},   {128, 128, 64, 64, 0, 1},  {128, 256, 64, 64, 0, 1},
      {128, 128, 64, 128, 0, 1}, {128, 256, 64, 256, 0, 1}, {128, 256, 32, 256, 0, 1}, {128, 256, 8, 256, 0, 1},
      {128, 64, 64, 64, 1, 2},   {128, 128, 64, 64, 1, 1},  {128, 256, 64, 64, 1, 1},
  };
  for (int pitch : {C, C + 8}) {
    for (const V &v : vs)
      for (int walk = 0; walk < 3; walk++) {
        Run r;
        r.j = {R, C, pitch, v.BM, v.BN, v.brows, v.bcols, walk, v.threads};
        r.m = make_map(d, r.j);
        r.grid = sms * v.per_sm;
        r.smem = (size_t)(v.BM / 64) * 2 * v.brows * v.bcols * 2 + 1024;
        r.d = d;
        const float us = time_us(e0, e1, run_tiles, &r);
        cudaError_t e = cudaGetLastError();
        printf("pitch %5d B %-7s %3dx%-3d box %2dx%3d (%3d B rows) %d CTA/SM %-5s: %8.1f us %6.0f GB/s %s\n",
               pitch * 2, v.threads ? "threads" : "TMA", v.BM, v.BN, v.brows, v.bcols, v.bcols * 2, v.per_sm,
               walks[walk], us, mb / us / 1e3, e == cudaSuccess ? "" : cudaGetErrorString(e));
      }
  }
  return 0;
}
