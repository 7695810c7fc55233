/* The policy network's own kernels, in plain C for clang's NVPTX target,
 * built by the same clang -> ptxas -> fatbinary pipeline as barecuda's
 * kernels into a separate fatbin (examples/policy/README.md), loaded at run
 * time with bc_module_load_file. The GEMMs between them are barecuda's.
 *
 * Both kernels are launched with programmatic serialization: they wait
 * (griddepcontrol.wait) before reading what the GEMM before them wrote, and
 * at once let the next GEMM be scheduled (it waits for this kernel to finish
 * in the same way), so each launch's set-up overlaps the previous kernel. */
#include <stdint.h>

#include "ptx/griddep.h"
#include "ptx/sreg.h"

#define LN_THREADS 256u
#define LN_MAX_PER_THREAD 4u /* rows of up to LN_THREADS * 4 = 1024 features */

BC_DEVICE float tanh_approx(float x)
{
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
BC_DEVICE float gelu(float x)
{
    const float k = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanh_approx(k * (x + 0.044715f * x * x * x)));
}

BC_DEVICE uint16_t to_bf16(float x)
{
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}

BC_DEVICE float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, o, 0x1f);
    return v;
}

/* Sum over the block (LN_THREADS threads); every thread gets the result. */
BC_DEVICE float block_sum(float v, float __attribute__((address_space(3))) * scratch)
{
    const uint32_t lane = bc_tid_x() % 32u, warp = bc_tid_x() / 32u;
    v = warp_sum(v);
    if (lane == 0)
        scratch[warp] = v;
    bc_syncthreads();
    float t = lane < LN_THREADS / 32u ? scratch[lane] : 0.0f;
    t = warp_sum(t);
    bc_syncthreads(); /* scratch is reused by the next call */
    return t;
}

/* One block of LN_THREADS threads per row: out[row] = bf16(GELU(LayerNorm(in[row]) * gamma + beta)),
 * mean and variance over `cols` features (two passes over registers). */
BC_KERNEL void policy_layernorm_gelu(const float *in, uint16_t *out, const float *gamma, const float *beta,
                                     uint32_t cols, float eps)
{
    static __attribute__((address_space(3))) float scratch[LN_THREADS / 32u];
    bc_griddep_wait();
    bc_griddep_launch_dependents();
    const uint32_t row = bc_ctaid_x(), t = bc_tid_x();
    const float *x = in + (uint64_t)row * cols;
    float v[LN_MAX_PER_THREAD];
    float s = 0.0f;
#pragma unroll
    for (uint32_t i = 0; i < LN_MAX_PER_THREAD; i++) {
        const uint32_t c = t + i * LN_THREADS;
        v[i] = c < cols ? x[c] : 0.0f;
        s += v[i];
    }
    const float mean = block_sum(s, scratch) / (float)cols;
    float q = 0.0f;
#pragma unroll
    for (uint32_t i = 0; i < LN_MAX_PER_THREAD; i++) {
        const float d = t + i * LN_THREADS < cols ? v[i] - mean : 0.0f;
        q += d * d;
    }
    const float rstd = 1.0f / __builtin_sqrtf(block_sum(q, scratch) / (float)cols + eps);
    uint16_t *y = out + (uint64_t)row * cols;
#pragma unroll
    for (uint32_t i = 0; i < LN_MAX_PER_THREAD; i++) {
        const uint32_t c = t + i * LN_THREADS;
        if (c < cols)
            y[c] = to_bf16(gelu((v[i] - mean) * rstd * gamma[c] + beta[c]));
    }
}

/* The action head: out[i] = scale * tanh(in[i]) for i < n. */
BC_KERNEL void policy_tanh_head(const float *in, float *out, uint32_t n, float scale)
{
    bc_griddep_wait();
    bc_griddep_launch_dependents();
    const uint32_t i = bc_ctaid_x() * bc_ntid_x() + bc_tid_x();
    if (i < n)
        out[i] = scale * tanh_approx(in[i]);
}
