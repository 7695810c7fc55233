/* The example's parameters and its fp64 CPU reference (policy_net.h). */
#include <math.h>
#include <string.h>

#include "policy_net.h"
#include "ref.h"

void policy_init(policy_params *p, uint64_t seed)
{
    bc_rng r = {seed};
    bc_ref_fill_normal(p->w1, BC_DTYPE_BF16, HIDDEN * OBS, 1.0 / sqrt(OBS), &r);
    bc_ref_fill_normal(p->w2, BC_DTYPE_BF16, HIDDEN * HIDDEN, 1.0 / sqrt(HIDDEN), &r);
    bc_ref_fill_normal(p->w3, BC_DTYPE_BF16, ACT * HIDDEN, 1.0 / sqrt(HIDDEN), &r);
    bc_ref_fill_normal(p->obs, BC_DTYPE_BF16, BATCH * OBS, 1.0, &r);
    for (int i = 0; i < HIDDEN; i++) {
        p->b1[i] = (float)(0.1 * bc_rng_normal(&r));
        p->b2[i] = (float)(0.1 * bc_rng_normal(&r));
        p->g1[i] = (float)(1.0 + 0.1 * bc_rng_normal(&r));
        p->g2[i] = (float)(1.0 + 0.1 * bc_rng_normal(&r));
        p->be1[i] = (float)(0.1 * bc_rng_normal(&r));
        p->be2[i] = (float)(0.1 * bc_rng_normal(&r));
    }
    for (int i = 0; i < ACT; i++)
        p->b3[i] = (float)(0.1 * bc_rng_normal(&r));
}

/* y[b][o] = sum_i x[b][i] * w[o][i] + bias[o] */
static void linear(const double *x, const uint16_t *w, const float *bias, int in, int out, double *y)
{
    for (int b = 0; b < BATCH; b++)
        for (int o = 0; o < out; o++) {
            double s = bias[o];
            for (int i = 0; i < in; i++)
                s += x[b * in + i] * (double)bc_bf16_to_f32_host(w[o * in + i]);
            y[b * out + o] = s;
        }
}

static double gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* In place: LayerNorm, affine, GELU, then the bf16 rounding of the store. */
static void ln_gelu(double *h, const float *gamma, const float *beta)
{
    for (int b = 0; b < BATCH; b++) {
        double *x = h + b * HIDDEN, mean = 0, var = 0;
        for (int i = 0; i < HIDDEN; i++)
            mean += x[i];
        mean /= HIDDEN;
        for (int i = 0; i < HIDDEN; i++)
            var += (x[i] - mean) * (x[i] - mean);
        const double rstd = 1.0 / sqrt(var / HIDDEN + (double)LN_EPS);
        for (int i = 0; i < HIDDEN; i++)
            x[i] = bc_bf16_to_f32_host(bc_f32_to_bf16((float)gelu((x[i] - mean) * rstd * gamma[i] + beta[i])));
    }
}

void policy_reference(const policy_params *p, double *action)
{
    static double x[BATCH * OBS], h1[BATCH * HIDDEN], h2[BATCH * HIDDEN];
    for (int i = 0; i < BATCH * OBS; i++)
        x[i] = bc_bf16_to_f32_host(p->obs[i]);
    linear(x, p->w1, p->b1, OBS, HIDDEN, h1);
    ln_gelu(h1, p->g1, p->be1);
    linear(h1, p->w2, p->b2, HIDDEN, HIDDEN, h2);
    ln_gelu(h2, p->g2, p->be2);
    linear(h2, p->w3, p->b3, HIDDEN, ACT, action);
    for (int i = 0; i < BATCH * ACT; i++)
        action[i] = ACTION_SCALE * tanh(action[i]);
}
