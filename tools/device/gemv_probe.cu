// Device-side probe (nvcc on the device machine; not part of the library):
// how fast can a GEMM with at most 16 rows of A (M <= 16) stream B when B
// is read by ordinary 16-byte loads straight into mma.sync fragments,
// rather than by TMA boxes through a shared-memory ring?
// D[M x N] = A[M x K] . B[N x K]^T, bf16 in, fp32 sums, bf16 out.
// A warp owns NT tiles of 8 columns and a contiguous slice of K (the CTA's W
// warps split K); per step of 32 k each lane loads 16 bytes of one B row per
// tile (row n0 + lane/4, k + 8 (lane%4)) and 16 bytes of A rows lane/4 and
// lane/4 + 8; the 8 k values of a chunk are the lane's k slots of two
// m16n8k16 mma (the same permutation for A and B, so the sums are the dot
// products). U steps are loaded before their mma. The W partials are added
// in warp order through shared memory.
// Variants NT x W x U / M16 / PIPE: NT 8-row groups a warp, W warps a CTA,
// U steps in flight, M16 loads rows 8..15 of A, PIPE loads the next U steps
// before the current ones' mma.
// Timed like the benchmark: a graph of 50 launches over 8 rotating input
// sets (B larger than the L2 in total, 16x1024x1024's aside), median of 20
// replays.
// On the H200 (CUDA 13.0; kernels_ptx/PERF_NOTES.md, change 87), the best
// variants of two runs: 1x4096x4096 10.3-10.5 us (3.2 TB/s of B),
// 8x4096x4096 10.8-11.0, 1x8192x8192 34.5-35.4 (3.8-3.9 TB/s), 4x11008x4096
// 23.9-24.5, 16x4096x4096 11.6-12.0 (two 8-row groups a warp),
// 16x14336x4096 33.2-33.8 (3.5 TB/s); in the first run's session the
// library's 64x32m16 took 13.9 / 13.9 / 42.8 / 32.5 / 13.9 / 41.5 us and
// cuBLAS 13.0 / 13.7 / 34.7 / 26.6 / 13.2 / 31.0. Loading the next steps
// before the current mma (PIPE) gained nothing.
// Build and run: nvcc -arch=sm_90a -O3 -o /tmp/gv tools/device/gemv_probe.cu && /tmp/gv
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>

__device__ __forceinline__ uint4 ldg_nc(const void *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 ldg_a(const void *p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ void mma(float *c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int NT, int U>
struct Frag {
  uint4 b[U][NT], alo[U], ahi[U];
};

template <int NT, int W, int U, bool M16, bool PIPE>
__global__ void __launch_bounds__(32 * W) gemv(const uint16_t *A, const uint16_t *B, uint16_t *D, int M, int N, int K) {
  __shared__ float part[W][NT * 8][16];
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * NT * 8;
  const int steps = K / 32, per = (steps + W - 1) / W;
  const int s0 = w * per, s1 = min(steps, s0 + per);
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; j++)
    acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  const uint16_t *brow[NT];
#pragma unroll
  for (int j = 0; j < NT; j++) {
    int n = min(n0 + 8 * j + g, N - 1);
    brow[j] = B + (size_t)n * K + 8 * t;
  }
  const bool a_lo = g < M, a_hi = M16 && g + 8 < M;
  const uint16_t *arow_lo = A + (size_t)min(g, M - 1) * K + 8 * t;
  const uint16_t *arow_hi = A + (size_t)min(g + 8, M - 1) * K + 8 * t;
  auto load = [&](Frag<NT, U> &f, int s) {
#pragma unroll
    for (int u = 0; u < U; u++) {
      if (s + u < s1) {
#pragma unroll
        for (int j = 0; j < NT; j++)
          f.b[u][j] = ldg_nc(brow[j] + (size_t)(s + u) * 32);
        f.alo[u] = a_lo ? ldg_a(arow_lo + (size_t)(s + u) * 32) : make_uint4(0, 0, 0, 0);
        f.ahi[u] = a_hi ? ldg_a(arow_hi + (size_t)(s + u) * 32) : make_uint4(0, 0, 0, 0);
      }
    }
  };
  auto compute = [&](const Frag<NT, U> &f, int s) {
#pragma unroll
    for (int u = 0; u < U; u++) {
      if (s + u < s1) {
#pragma unroll
        for (int j = 0; j < NT; j++) {
          mma(acc[j], f.alo[u].x, f.ahi[u].x, f.alo[u].y, f.ahi[u].y, f.b[u][j].x, f.b[u][j].y);
          mma(acc[j], f.alo[u].z, f.ahi[u].z, f.alo[u].w, f.ahi[u].w, f.b[u][j].z, f.b[u][j].w);
        }
      }
    }
  };
  if (PIPE) {
    Frag<NT, U> f0, f1;
    int s = s0;
    if (s < s1) load(f0, s);
    for (; s < s1; s += 2 * U) {
      if (s + U < s1) load(f1, s + U);
      compute(f0, s);
      if (s + U >= s1) break;
      if (s + 2 * U < s1) load(f0, s + 2 * U);
      compute(f1, s + U);
    }
  } else {
    for (int s = s0; s < s1; s += U) {
      Frag<NT, U> f;
      load(f, s);
      compute(f, s);
    }
  }
#pragma unroll
  for (int j = 0; j < NT; j++) {
    part[w][8 * j + 2 * t][g] = acc[j][0];
    part[w][8 * j + 2 * t + 1][g] = acc[j][1];
    part[w][8 * j + 2 * t][g + 8] = acc[j][2];
    part[w][8 * j + 2 * t + 1][g + 8] = acc[j][3];
  }
  __syncthreads();
  for (int o = threadIdx.x; o < NT * 8 * 16; o += 32 * W) {
    const int col = o / 16, row = o % 16;
    float v = 0.f;
    for (int x = 0; x < W; x++)
      v += part[x][col][row];
    const int n = n0 + col;
    if (row < M && n < N)
      D[(size_t)row * N + n] = __bfloat16_as_ushort(__float2bfloat16(v));
  }
}

typedef void (*kfn)(const uint16_t *, const uint16_t *, uint16_t *, int, int, int);
struct Var {
  const char *name;
  kfn f;
  int cols, threads;
};

#define V(NT, W, U, M16, P) {#NT "x" #W "x" #U "/" #M16 "/" #P, gemv<NT, W, U, M16, P>, 8 * NT, 32 * W}

static float bf2f(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

int main() {
  const int shapes[][3] = {{1, 4096, 4096}, {16, 4096, 4096}, {8, 4096, 4096}, {1, 8192, 8192}, {16, 14336, 4096},
                           {16, 4096, 14336}, {16, 1024, 1024}, {1, 2048, 2048}, {16, 2048, 8192}, {4, 11008, 4096}};
  Var m8[] = {V(1, 8, 4, false, false), V(1, 8, 4, false, true), V(1, 8, 2, false, true), V(1, 16, 2, false, true),
              V(2, 8, 2, false, true), V(1, 4, 4, false, true), V(2, 4, 4, false, true), V(1, 8, 8, false, false)};
  Var m16[] = {V(2, 8, 2, true, false), V(2, 8, 2, true, true), V(2, 16, 2, true, true), V(2, 8, 1, true, true),
               V(4, 8, 1, true, true), V(1, 8, 4, true, true), V(2, 4, 4, true, true), V(4, 4, 2, true, true)};
  const int SETS = 8, REPS = 50;
  cudaStream_t st;
  cudaStreamCreate(&st);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (auto &sh : shapes) {
    const int M = sh[0], N = sh[1], K = sh[2];
    const size_t an = (size_t)M * K, bn = (size_t)N * K, dn = (size_t)M * N;
    std::vector<uint16_t> ha(an), hb(bn);
    uint32_t seed = 12345u + M * 7u + N * 13u + K;
    auto rnd = [&]() { seed = seed * 1664525u + 1013904223u; return (float)((seed >> 9) & 0xFFFF) / 65536.f - 0.5f; };
    auto f2bf = [](float f) { uint32_t x; memcpy(&x, &f, 4); return (uint16_t)((x + 0x7FFF + ((x >> 16) & 1)) >> 16); };
    for (auto &x : ha) x = f2bf(rnd());
    for (auto &x : hb) x = f2bf(rnd());
    uint16_t *dA, *dB, *dD;
    cudaMalloc(&dA, an * 2 * SETS);
    cudaMalloc(&dB, bn * 2 * SETS);
    cudaMalloc(&dD, dn * 2 * SETS);
    for (int s = 0; s < SETS; s++) {
      cudaMemcpy(dA + s * an, ha.data(), an * 2, cudaMemcpyHostToDevice);
      cudaMemcpy(dB + s * bn, hb.data(), bn * 2, cudaMemcpyHostToDevice);
    }
    std::vector<double> ref(dn);
    for (int m = 0; m < M; m++)
      for (int n = 0; n < N; n++) {
        double v = 0;
        for (int k = 0; k < K; k++) v += (double)bf2f(ha[(size_t)m * K + k]) * bf2f(hb[(size_t)n * K + k]);
        ref[(size_t)m * N + n] = v;
      }
    printf("%dx%dx%d (B %.1f MB):", M, N, K, bn * 2 / 1e6);
    Var *vs = M > 8 ? m16 : m8;
    for (int vi = 0; vi < 8; vi++) {
      Var &v = vs[vi];
      const int grid = (N + v.cols - 1) / v.cols;
      cudaMemset(dD, 0xFF, dn * 2);
      v.f<<<grid, v.threads, 0, st>>>(dA, dB, dD, M, N, K);
      if (cudaStreamSynchronize(st) != cudaSuccess) { printf(" %s: error %s\n", v.name, cudaGetErrorString(cudaGetLastError())); return 1; }
      std::vector<uint16_t> hd(dn);
      cudaMemcpy(hd.data(), dD, dn * 2, cudaMemcpyDeviceToHost);
      double maxerr = 0;
      for (size_t i = 0; i < dn; i++) maxerr = std::max(maxerr, fabs(bf2f(hd[i]) - ref[i]) / (fabs(ref[i]) + 1.0));
      cudaGraph_t gr;
      cudaGraphExec_t ge;
      cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
      for (int r = 0; r < REPS; r++) {
        const int s = r % SETS;
        v.f<<<grid, v.threads, 0, st>>>(dA + s * an, dB + s * bn, dD + s * dn, M, N, K);
      }
      cudaStreamEndCapture(st, &gr);
      cudaGraphInstantiate(&ge, gr, 0);
      std::vector<float> ts;
      for (int rep = 0; rep < 21; rep++) {
        cudaEventRecord(e0, st);
        cudaGraphLaunch(ge, st);
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rep) ts.push_back(ms * 1000.f / REPS);
      }
      std::sort(ts.begin(), ts.end());
      const float us = ts[ts.size() / 2];
      printf(" %s %.2fus(%.2fTB/s,err%.1e)", v.name, us, bn * 2 / us / 1e6, maxerr);
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(gr);
    }
    printf("\n");
    fflush(stdout);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dD);
  }
  return 0;
}
