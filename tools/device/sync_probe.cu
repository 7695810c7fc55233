// Device-side probe (nvcc on the device machine; not part of the library):
// what a resident step's synchronisation costs, for the choice between the
// resident executor's grid-wide barrier and a cluster that passes
// activations through distributed shared memory.
//   grid    G CTAs (one per SM) meet at a barrier of the executor's kind:
//           thread 0 of each adds 1 to a global counter (red.release.gpu)
//           and polls it (ld.acquire.gpu) until it holds G per round;
//   cluster one cluster of C CTAs meets at barrier.cluster (arrive.release,
//           wait.acquire);
//   xchg    the same cluster first sends each CTA's share of a 16 x W bf16
//           activation (16 x W / C elements) to every CTA of the cluster
//           (st.shared::cluster, 16 bytes a store, through mapa), then
//           meets at barrier.cluster: one layer's hand-over of a batch-16
//           MLP held in one cluster.
// Each kernel runs ITERS rounds; CTA 0's thread 0 times them with
// %globaltimer; a line is the median over REPS launches of ns per round.
// Build and run: nvcc -arch=sm_90a -o /tmp/sp tools/device/sync_probe.cu && /tmp/sp
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>

#define ITERS 2000
#define REPS 5
#define THREADS 128

__device__ __forceinline__ uint64_t gtime() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__global__ void grid_bar(unsigned long long *ctr, unsigned long long *out) {
  const uint64_t t0 = gtime();
  for (int i = 0; i < ITERS; i++) {
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(ctr) : "memory");
      const unsigned long long target = (unsigned long long)(i + 1) * gridDim.x;
      unsigned long long v;
      do {
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(ctr) : "memory");
      } while (v < target);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && blockIdx.x == 0)
    out[0] = gtime() - t0;
}

__global__ void cluster_bar(unsigned long long *out) {
  cluster_sync();
  const uint64_t t0 = gtime();
  for (int i = 0; i < ITERS; i++)
    cluster_sync();
  if (threadIdx.x == 0 && blockIdx.x == 0)
    out[0] = gtime() - t0;
}

// The activation: 16 rows x width bf16 in every CTA's shared memory; CTA r
// owns the columns [r * width / C, (r + 1) * width / C).
__global__ void xchg(int width, unsigned long long *out) {
  extern __shared__ __align__(16) unsigned char act[];
  uint32_t rank, csize;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(csize));
  const uint32_t bytes = 16u * width * 2u, share = bytes / csize; // a share: whole 16-byte pieces
  for (uint32_t i = threadIdx.x * 16u; i < bytes; i += THREADS * 16u)
    *(uint4 *)(act + i) = make_uint4(i, rank, 0, 0);
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(act);
  cluster_sync();
  const uint64_t t0 = gtime();
  for (int it = 0; it < ITERS; it++) {
    for (uint32_t p = 0; p < csize; p++) {
      const uint32_t peer = (rank + p) % csize;
      uint32_t remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(base), "r"(peer));
      for (uint32_t i = threadIdx.x * 16u; i < share; i += THREADS * 16u) {
        const uint32_t off = rank * share + i;
        const uint4 v = *(const uint4 *)(act + off);
        asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(remote + off), "r"(v.x), "r"(v.y),
                     "r"(v.z), "r"(v.w)
                     : "memory");
      }
    }
    cluster_sync();
  }
  if (threadIdx.x == 0 && blockIdx.x == 0)
    out[0] = gtime() - t0;
}

// The same hand-over by the bulk-copy engine: each CTA's thread 0 copies
// its share to every other CTA (cp.async.bulk shared::cta ->
// shared::cluster, one instruction a peer), completing on the receiver's
// mbarrier, which expects the other CTAs' shares; the CTA waits on its own
// barrier, no cluster barrier. Two buffers and barriers alternate: a CTA
// can run at most one round ahead of another (its next round needs this
// one's shares from all).
__global__ void xchg_bulk(int width, unsigned long long *out) {
  extern __shared__ __align__(128) unsigned char sm[];
  uint32_t rank, csize;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(csize));
  const uint32_t bytes = 16u * width * 2u, share = bytes / csize;
  const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(sm), bar0 = s0, buf0 = s0 + 128u;
  for (uint32_t i = threadIdx.x * 16u; i < 2u * bytes; i += THREADS * 16u)
    *(uint4 *)(sm + 128u + i) = make_uint4(i, rank, 0, 0);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0 + 8u));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); // the fill, before the copies read it
  cluster_sync();
  const uint64_t t0 = gtime();
  for (int it = 0; it < ITERS; it++) {
    const uint32_t b = it & 1, parity = (it >> 1) & 1, bar = bar0 + 8u * b, src = buf0 + b * bytes + rank * share;
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"((csize - 1u) * share)
                   : "memory");
      for (uint32_t p = 1; p < csize; p++) {
        const uint32_t peer = (rank + p) % csize;
        uint32_t dst, mb;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst) : "r"(src), "r"(peer));
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(mb) : "r"(bar), "r"(peer));
        asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(dst), "r"(src), "r"(share), "r"(mb) : "memory");
      }
    }
    asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W%=; }" ::"r"(bar),
                 "r"(parity) : "memory");
  }
  if (threadIdx.x == 0 && blockIdx.x == 0)
    out[0] = gtime() - t0;
  cluster_sync(); // no CTA leaves while copies into it may be in flight
}

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      printf("%s: %s\n", #x, cudaGetErrorString(e_));                                          \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Launches fn REPS times on `grid` CTAs in clusters of `cl` (0: none);
// prints the median ns per round.
template <typename F>
static int measure(const char *what, int grid, int cl, size_t smem, unsigned long long *out, F launch) {
  std::vector<double> ns;
  for (int r = 0; r < REPS; r++) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = smem;
    if (cl) {
      at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = cl;
      at[0].val.clusterDim.y = 1;
      at[0].val.clusterDim.z = 1;
      cfg.attrs = at;
      cfg.numAttrs = 1;
    }
    CK(launch(cfg));
    CK(cudaDeviceSynchronize());
    unsigned long long t;
    CK(cudaMemcpy(&t, out, sizeof t, cudaMemcpyDeviceToHost));
    ns.push_back((double)t / ITERS);
  }
  printf("%-44s %8.1f ns a round (median of %d launches of %d rounds)\n", what, median(ns), REPS, ITERS);
  return 0;
}

int main() {
  unsigned long long *ctr, *out;
  CK(cudaMalloc(&ctr, 8));
  CK(cudaMalloc(&out, 8));
  CK(cudaFuncSetAttribute(cluster_bar, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(xchg, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(xchg, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  CK(cudaFuncSetAttribute(xchg_bulk, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(xchg_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, 80 * 1024));
  char what[96];
  for (int g : {16, 32, 66, 132}) {
    snprintf(what, sizeof what, "grid barrier, %d CTAs", g);
    if (measure(what, g, 0, 0, out, [&](cudaLaunchConfig_t &c) {
          cudaMemset(ctr, 0, 8);
          return cudaLaunchKernelEx(&c, grid_bar, ctr, out);
        }))
      return 1;
  }
  for (int c : {2, 4, 8, 16}) {
    snprintf(what, sizeof what, "cluster barrier, cluster of %d", c);
    if (measure(what, c, c, 0, out, [&](cudaLaunchConfig_t &cf) { return cudaLaunchKernelEx(&cf, cluster_bar, out); }))
      return 1;
  }
  for (int c : {8, 16})
    for (int w : {256, 1024}) {
      snprintf(what, sizeof what, "16 x %d bf16 to all, cluster of %d", w, c);
      if (measure(what, c, c, (size_t)16 * w * 2, out,
                  [&](cudaLaunchConfig_t &cf) { return cudaLaunchKernelEx(&cf, xchg, w, out); }))
        return 1;
    }
  for (int c : {8, 16})
    for (int w : {256, 1024}) {
      snprintf(what, sizeof what, "16 x %d bf16 to all by bulk copy, cluster of %d", w, c);
      if (measure(what, c, c, 128 + (size_t)2 * 16 * w * 2, out,
                  [&](cudaLaunchConfig_t &cf) { return cudaLaunchKernelEx(&cf, xchg_bulk, w, out); }))
        return 1;
    }
  return 0;
}
