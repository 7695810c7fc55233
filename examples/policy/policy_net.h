/* The example's policy network: obs -> Linear -> LayerNorm -> GELU -> Linear
 * -> LayerNorm -> GELU -> Linear -> scale * tanh -> action, for a batch of
 * observations. Weights and activations between layers are bf16 (the GEMMs'
 * inputs), each GEMM accumulates in fp32 and adds its bias in fp32. */
#ifndef POLICY_NET_H
#define POLICY_NET_H

#include <stdint.h>

#define BATCH 16
#define OBS 64
#define HIDDEN 256
#define ACT 16
#define LN_EPS 1e-5f
#define ACTION_SCALE 1.0f

/* Host copies of the parameters (bf16 bit patterns and fp32) and an input. */
typedef struct policy_params {
    uint16_t w1[HIDDEN * OBS], w2[HIDDEN * HIDDEN], w3[ACT * HIDDEN]; /* [out][in], nn.Linear's layout */
    float b1[HIDDEN], b2[HIDDEN], b3[ACT];
    float g1[HIDDEN], be1[HIDDEN], g2[HIDDEN], be2[HIDDEN];           /* LayerNorm gamma, beta */
    uint16_t obs[BATCH * OBS];
} policy_params;

/* Random parameters (weights N(0, 1/fan_in), biases and LayerNorm affine
 * near their usual values) and observations N(0, 1), from seed. */
void policy_init(policy_params *p, uint64_t seed);

/* The fp64 CPU reference of the whole network, rounding to bf16 exactly
 * where the GPU stores bf16 (the GEMMs' inputs): action[BATCH * ACT]. */
void policy_reference(const policy_params *p, double *action);

#endif
