// Launch floor probe (device machine only, built with nvcc there; not part
// of the library): the device time per kernel of a CUDA graph of 50
// back-to-back launches, timed as `barecuda bench` times a GEMM, for kernels
// that do (almost) nothing, by threads per CTA, dynamic shared memory, grid
// size and programmatic serialization. It says how much of a tiny GEMM's
// time is the launch and how much the kernel's own chain.
//
//   nvcc -O2 -arch=sm_90a -o launch_floor tools/device/launch_floor.cu -lcuda
//   ./launch_floor
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

extern __shared__ char smem[];

// body: 0 nothing, 1 one thread loads a word and stores it back plus one
// (a global round trip and a store the next kernel's wait must see)
__global__ void k_probe(int *p, int pdl, int body)
{
    if (pdl) {
        asm volatile("griddepcontrol.wait;" ::: "memory");
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
    if (body == 1 && threadIdx.x == 0) {
        volatile int *q = p + blockIdx.x * 32;
        q[0] = q[0] + 1;
    }
}

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            return -1.0f;                                                              \
        }                                                                              \
    } while (0)

static float run(int threads, int smem_bytes, int grid, int pdl, int body, int *dev)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaFuncSetAttribute(k_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem_bytes;
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = pdl ? 1 : 0;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 50; i++)
        CK(cudaLaunchKernelEx(&cfg, k_probe, dev, pdl, body));
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < 23; r++) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 3)
            t.push_back(ms * 1000.0f / 50.0f);
    }
    std::sort(t.begin(), t.end());
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    return t[t.size() / 2];
}

int main()
{
    int *dev;
    if (cudaMalloc(&dev, 132 * 128) != cudaSuccess)
        return 1;
    cudaMemset(dev, 0, 132 * 128);
    printf("threads smem_kib grid pdl body us_per_kernel\n");
    const int threads[] = {128, 384};
    const int smems[] = {0, 48 * 1024, 100 * 1024, 200 * 1024};
    const int grids[] = {1, 8, 132};
    for (int body = 0; body < 2; body++)
        for (int th : threads)
            for (int sm : smems)
                for (int gr : grids)
                    for (int pdl = 0; pdl < 2; pdl++)
                        printf("%d %d %d %d %d %.3f\n", th, sm / 1024, gr, pdl, body, run(th, sm, gr, pdl, body, dev));
    return 0;
}
