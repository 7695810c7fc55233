// wgmma operand-swap probe (device machine only, built with nvcc there; not
// part of the library): does D^T = W . X^T on wgmma m64n16k16 (the weights
// as the 64-row A operand, a batch of 16 rows as B) give the same bits as
// D = X . W^T the way the library's skinny tiles compute it (the batch as
// A, padded to 64 rows, the weights as B, 32 or 64 columns a wgmma), and
// with the weights' fragments in registers (wgmma's A from registers)? Each
// form runs one chain of wgmma over the whole K in order, accumulating in
// f32 from the first product. If the bits agree, a resident kernel that
// holds the weights as A can keep the launched plans' results.
//
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o wsp tools/device/wgmma_swap_probe.cu
//   ./wsp
#include <cuda_runtime.h>
#include "probe_ck.h"
#include <cuda_bf16.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#define KMAX 1024 // k-blocks of 64 held in shared memory at once: 16

__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr)
{
    return (1ull << 62) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 16) | (uint64_t)((addr & 0x3FFFFu) >> 4);
}
__device__ __forceinline__ uint32_t swz(uint32_t row, uint32_t j) { return row * 128u + ((j ^ (row & 7u)) << 4); }

#define WG(N, REGS, ...)                                                                                              \
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" REGS ", 0;\n\twgmma.mma_async.sync.aligned.m64n" N       \
                 "k16.f32.bf16.bf16 " __VA_ARGS__)

// rows x K bf16 (row-major, K contiguous) into k-blocks of `rows` x 128 B, swizzled; rows past `valid` zero
__device__ void fill(uint8_t *dst, const __nv_bfloat16 *src, uint32_t rows, uint32_t valid, uint32_t k)
{
    for (uint32_t q = threadIdx.x; q < rows * (k / 8u); q += blockDim.x) {
        const uint32_t r = q / (k / 8u), kc = q % (k / 8u);
        const uint4 v = r < valid ? *(const uint4 *)(src + (size_t)r * k + kc * 8u) : make_uint4(0, 0, 0, 0);
        *(uint4 *)(dst + (kc / 8u) * rows * 128u + swz(r, kc % 8u)) = v;
    }
}

// form 0: D^T[64 x 16] = W . X^T (m64n16k16); form 3: the same, W's fragments in registers; form 1: D[64 x 32] = Xpad . W[rows 32h..]^T (m64n32k16), h = 0, 1;
// form 2: D[64 x 64] = Xpad . W^T (m64n64k16). out: [16 batch][64 columns] f32
__global__ void k_form(const __nv_bfloat16 *x, const __nv_bfloat16 *w, uint32_t k, int form, float *out)
{
    extern __shared__ uint8_t raw[];
    uint8_t *sm = (uint8_t *)(((uintptr_t)raw + 1023u) & ~(uintptr_t)1023u);
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(sm), t = threadIdx.x, kbs = k / 64u;
    // W: 64-row blocks; X: 16-row blocks (2 KB), then 8 KB of zeros. As A (forms 1 and 2), a k-block's 64
    // rows run on into the next blocks (or the zeros): rows 16-63 of D are not kept, and row b of D reads
    // row b of A only.
    uint8_t *sw = sm, *sx = sm + kbs * 8192u;
    fill(sw, w, 64, 64, k);
    fill(sx, x, 16u, 16u, k);
    for (uint32_t q = threadIdx.x; q < 512u; q += blockDim.x)
        *(uint4 *)(sx + kbs * 2048u + q * 16u) = make_uint4(0, 0, 0, 0);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const uint32_t aw = base, ax = base + kbs * 8192u, wi = t / 32u, l = t % 32u;
    if (form == 0) {
        float d[8] = {};
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (uint32_t kb = 0; kb < kbs; kb++)
            for (uint32_t j = 0; j < 4; j++) {
                const uint64_t da = desc_sw128(aw + kb * 8192u + j * 32u), db = desc_sw128(ax + kb * 2048u + j * 32u);
                const uint32_t sc = kb | j;
                WG("16", "10", "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n\t}"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                   : "l"(da), "l"(db), "r"(sc));
            }
        asm volatile("wgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;" ::: "memory");
        for (uint32_t i = 0; i < 8; i++) { // row = column of D, col = batch row
            const uint32_t r = 16u * wi + l / 4u + 8u * ((i / 2u) % 2u), b = 8u * (i / 4u) + 2u * (l % 4u) + (i % 2u);
            out[b * 64u + r] = d[i];
        }
    } else if (form == 3) { // form 0 with the weights' fragments in registers (wgmma's A from registers)
        float d[8] = {};
        const uint32_t g = l / 4u, q = l % 4u, r0 = 16u * wi + g;
        const uint32_t *w2 = (const uint32_t *)w; // pairs of bf16
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (uint32_t kb = 0; kb < kbs; kb++)
            for (uint32_t j = 0; j < 4; j++) {
                const uint32_t k0 = kb * 64u + j * 16u;
                const uint32_t a0 = w2[(r0 * k + k0) / 2u + q], a1 = w2[((r0 + 8u) * k + k0) / 2u + q],
                               a2 = w2[(r0 * k + k0 + 8u) / 2u + q], a3 = w2[((r0 + 8u) * k + k0 + 8u) / 2u + q];
                const uint64_t db = desc_sw128(ax + kb * 2048u + j * 32u);
                const uint32_t sc = kb | j;
                WG("16", "13", "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\n\t}"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(sc));
            }
        asm volatile("wgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;" ::: "memory");
        for (uint32_t i = 0; i < 8; i++) {
            const uint32_t r = 16u * wi + l / 4u + 8u * ((i / 2u) % 2u), b = 8u * (i / 4u) + 2u * (l % 4u) + (i % 2u);
            out[b * 64u + r] = d[i];
        }
    } else if (form == 1) {
        for (uint32_t h = 0; h < 2; h++) {
            float d[16] = {};
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            for (uint32_t kb = 0; kb < kbs; kb++)
                for (uint32_t j = 0; j < 4; j++) {
                    const uint64_t da = desc_sw128(ax + kb * 2048u + j * 32u),
                                   db = desc_sw128(aw + kb * 8192u + h * 32u * 128u + j * 32u);
                    const uint32_t sc = kb | j;
                    WG("32", "18",
                       "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n\t}"
                       : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                         "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                         "+f"(d[15])
                       : "l"(da), "l"(db), "r"(sc));
                }
            asm volatile("wgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;" ::: "memory");
            for (uint32_t i = 0; i < 16; i++) {
                const uint32_t b = 16u * wi + l / 4u + 8u * ((i / 2u) % 2u), c = 8u * (i / 4u) + 2u * (l % 4u) + (i % 2u);
                if (b < 16u)
                    out[b * 64u + 32u * h + c] = d[i];
            }
        }
    } else {
        float d[32] = {};
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (uint32_t kb = 0; kb < kbs; kb++)
            for (uint32_t j = 0; j < 4; j++) {
                const uint64_t da = desc_sw128(ax + kb * 2048u + j * 32u), db = desc_sw128(aw + kb * 8192u + j * 32u);
                const uint32_t sc = kb | j;
                WG("64", "34",
                   "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "
                   "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n\t}"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                     "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                     "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                     "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                     "+f"(d[30]), "+f"(d[31])
                   : "l"(da), "l"(db), "r"(sc));
            }
        asm volatile("wgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;" ::: "memory");
        for (uint32_t i = 0; i < 32; i++) {
            const uint32_t b = 16u * wi + l / 4u + 8u * ((i / 2u) % 2u), c = 8u * (i / 4u) + 2u * (l % 4u) + (i % 2u);
            if (b < 16u)
                out[b * 64u + c] = d[i];
        }
    }
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float draw(int wide) // wide: exponents over ~2^-12..2^12, else [-1, 1)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const float u = (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
    if (!wide)
        return u;
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return u * ldexpf(1.0f, (int)(rng % 25) - 12);
}

int main()
{
    CK(cudaFuncSetAttribute(k_form, cudaFuncAttributeMaxDynamicSharedMemorySize, 16 * 8192 + 16 * 2048 + 8192 + 1024));
    float *d_out;
    __nv_bfloat16 *d_x, *d_w;
    CK(cudaMalloc((void **)&d_out, 16 * 64 * 4));
    CK(cudaMalloc((void **)&d_x, 16 * KMAX * 2));
    CK(cudaMalloc((void **)&d_w, 64 * KMAX * 2));
    int all_same = 1;
    for (int wide = 0; wide < 2; wide++)
        for (uint32_t k : {64u, 128u, 256u, 512u, 1024u})
            for (int trial = 0; trial < 4; trial++) {
                std::vector<__nv_bfloat16> x(16 * k), w(64 * k);
                for (auto &v : x)
                    v = __float2bfloat16_rn(draw(wide));
                for (auto &v : w)
                    v = __float2bfloat16_rn(draw(wide));
                CK(cudaMemcpy(d_x, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(d_w, w.data(), w.size() * 2, cudaMemcpyHostToDevice));
                std::vector<float> r[4];
                for (int f = 0; f < 4; f++) {
                    CK(cudaMemset(d_out, 0xFF, 16 * 64 * 4));
                    k_form<<<1, 128, 16 * 8192 + 16 * 2048 + 8192 + 1024>>>(d_x, d_w, k, f, d_out);
                    CK(cudaGetLastError());
                    CK(cudaDeviceSynchronize());
                    r[f].resize(16 * 64);
                    CK(cudaMemcpy(r[f].data(), d_out, 16 * 64 * 4, cudaMemcpyDeviceToHost));
                }
                int diff01 = 0, diff02 = 0, diff03 = 0, nan = 0;
                double maxrel = 0;
                for (int i = 0; i < 16 * 64; i++) {
                    diff01 += memcmp(&r[0][i], &r[1][i], 4) != 0;
                    diff02 += memcmp(&r[0][i], &r[2][i], 4) != 0;
                    diff03 += memcmp(&r[0][i], &r[3][i], 4) != 0;
                    nan += r[0][i] != r[0][i] || r[1][i] != r[1][i];
                    // the same dot product in double, as a check that every form computed it at all
                    const int b = i / 64, c = i % 64;
                    double s = 0, a = 0;
                    for (uint32_t kk = 0; kk < k; kk++) {
                        const double p = (double)__bfloat162float(x[b * k + kk]) * __bfloat162float(w[c * k + kk]);
                        s += p, a += fabs(p);
                    }
                    maxrel = fmax(maxrel, fabs(r[1][i] - s) / (a > 0 ? a : 1));
                }
                all_same &= diff01 == 0 && diff02 == 0 && diff03 == 0 && nan == 0;
                printf("K %4u %s trial %d: elements differing, m64n16 (weights as A) vs m64n32 (batch as A) %4d, vs "
                       "m64n64 %4d, vs m64n16 with A in registers %4d; NaN %d; largest |m64n32 - fp64| / sum|products| %.2e\n",
                       k, wide ? "wide exponents" : "[-1, 1)       ", trial, diff01, diff02, diff03, nan, maxrel);
            }
    printf("%s\n", all_same ? "all four forms bit-identical on every draw" : "THE FORMS DIFFER");
    return 0;
}
