// CK(x) for the device probes (tools/device/*_probe.cu, built alone with
// nvcc on the device machine): a failed CUDA runtime call prints where and
// why, and the probe exits.
#ifndef BC_TOOLS_PROBE_CK_H
#define BC_TOOLS_PROBE_CK_H
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

#endif
