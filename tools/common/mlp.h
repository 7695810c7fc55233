/* A multilayer perceptron on a device, for the latency tool and the GPU
 * tests: D_l = act(X_l . W_l^T + b_l), bf16 everywhere, ReLU after every
 * layer but the last, each layer one GEMM plan reading the previous
 * layer's output. Weights N(0, 1/fan_in), biases N(0, 0.25), inputs N(0, 1).
 * Host copies of the weights and biases stay for the fp64 reference.
 * Not part of libbarecuda. */
#ifndef BC_TOOLS_MLP_H
#define BC_TOOLS_MLP_H

#include <stdint.h>

#include "barecuda.h"
#include "ref.h"

#define BC_MLP_MAX_LAYERS 8

typedef struct bc_mlp {
    int layers;
    int64_t batch;
    int64_t width[BC_MLP_MAX_LAYERS + 1];     /* width[0] inputs ... width[layers] outputs */
    bc_devptr act[BC_MLP_MAX_LAYERS + 1];     /* act[0] the input, act[l + 1] layer l's output */
    bc_devptr w[BC_MLP_MAX_LAYERS], bias[BC_MLP_MAX_LAYERS];
    void *host_w[BC_MLP_MAX_LAYERS], *host_bias[BC_MLP_MAX_LAYERS];
    bc_gemm_plan *plan[BC_MLP_MAX_LAYERS];
} bc_mlp;

/* Parses "B:W0,W1,...,WL" (batch, then layer widths: 1..BC_MLP_MAX_LAYERS
 * layers, each width a multiple of 8 in [8, 65536]); 0, or -1 on a bad spec. */
int bc_mlp_parse(const char *spec, int64_t *batch, int64_t *width, int *layers);

/* Parses "V1,V2,..." (decimal, each in [lo, hi], at most max values) into
 * out; the count, or -1 on an empty value, junk or a value out of range. */
int bc_mlp_parse_list(const char *s, long long lo, long long hi, int max, long long *out);

/* Allocates and fills everything and creates the plans (`config` pinned,
 * or NULL for the rule; split_k[l] layer l's as in bc_gemm_desc: 0 the
 * rule's, 1 whole tiles, S >= 2 split S ways; split_k NULL: the rule's for
 * every layer; resident as in bc_gemm_desc). On failure what was made is
 * released. */
bc_status bc_mlp_create(bc_device *dev, int64_t batch, const int64_t *width, int layers, const char *config,
                        const uint32_t *split_k, uint32_t resident, bc_rng *rng, bc_mlp *out);

/* Uploads a new random input into act[0]; `host` (batch x width[0] bf16)
 * receives it when not NULL. */
bc_status bc_mlp_new_input(bc_device *dev, const bc_mlp *m, bc_rng *rng, void *host);

/* Checks every layer on the device against the fp64 reference computed
 * from that layer's actual input (downloaded), so each GEMM is judged on
 * its own; *out_bad counts elements out of tolerance or non-finite. The
 * last layer's output is read from `host_out` when not NULL (an output the
 * caller already holds, e.g. in pinned memory), else downloaded. */
bc_status bc_mlp_check(bc_device *dev, const bc_mlp *m, const void *host_out, size_t *out_bad, size_t *out_checked);

/* Releases the plans and device buffers (the device may also just close). */
void bc_mlp_destroy(bc_device *dev, bc_mlp *m);

#endif
