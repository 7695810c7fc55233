/* barecuda — fixed-configuration tensor-core GEMM with deterministic launch.
 *
 *   D[M,N] = act(alpha * A[M,K] . B[N,K]^T + beta * C[M,N] + bias[N])
 *
 * A is row-major M x K and B row-major N x K (both K-major: B is PyTorch's
 * nn.Linear weight layout); C and D are row-major M x N. Inputs are bf16 or
 * fp16 (both the same), accumulation is fp32, D is bf16, fp16 or fp32; C and
 * bias have D's type. act is ReLU or the identity. C may alias D exactly;
 * no other overlap of D with an input is accepted.
 *
 * Determinism: for a given build, GPU model and SM count, the same plan on
 * the same inputs writes the same bytes on every launch, on any stream,
 * whatever else runs on the GPU: every output tile is reduced by one CTA in a
 * fixed K order, with no atomics whose order depends on timing.
 */
#ifndef BARECUDA_GEMM_H
#define BARECUDA_GEMM_H

#include <stdint.h>

#include "device.h"
#include "mem.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bc_dtype {
    BC_DTYPE_BF16 = 0,
    BC_DTYPE_F16 = 1,
    BC_DTYPE_F32 = 2,
} bc_dtype;

typedef struct bc_gemm_desc {
    int64_t m, n, k;      /* each in [1, 2^31 - 1] */
    bc_dtype ab_type;     /* BC_DTYPE_BF16 or BC_DTYPE_F16 */
    bc_dtype d_type;      /* BF16, F16 or F32; C and bias use it too */
    int64_t lda, ldb;     /* elements between rows of A / B; 0 means K */
    int64_t ldc, ldd;     /* elements between rows of C / D; 0 means N */
    float alpha, beta;    /* beta != 0 requires c */
    bc_devptr a, b;       /* required, 16-byte aligned */
    bc_devptr c;          /* optional (0) unless beta != 0; 16-byte aligned */
    bc_devptr d;          /* required, 16-byte aligned */
    bc_devptr bias;       /* optional (0): N values of d_type, 4-byte aligned */
    int relu;             /* 1: clamp negatives to 0 after bias */
    const char *config;   /* NULL: the documented rule picks; else the name of a
                             compiled-in configuration (benchmarks, tests);
                             an unknown or unsuitable name is BC_ERR_INVALID_ARGUMENT */
    uint32_t split_k;     /* 0: the rule decides; 1: never split K; S >= 2: split K
                             into the largest power of two not above min(S, 8,
                             k-blocks) pieces (8: the portable cluster size),
                             reduced in a fixed order; bc_gemm_plan_info.split_k
                             says what was used. S >= 2 with a named configuration
                             without split-K is BC_ERR_INVALID_ARGUMENT (but at K of
                             one k-block, which runs whole); a named split-K one at
                             K of one k-block is too */
    uint32_t stream_k;    /* 0 (the default): every tile is reduced whole by one CTA (or by its
                             split-K cluster). 1: where the chosen whole-tile configuration
                             leaves the SMs partly idle in its last round and the rule finds it
                             pays, those last tiles are done by stream-K (README, "Stream-K"):
                             their k-blocks shared out evenly over the SMs, the pieces of a tile
                             added in a fixed order through a workspace the plan takes from the
                             device arena (bc_gemm_plan_info.workspace_bytes). Results stay
                             bitwise reproducible. Such a plan's launches must not overlap one
                             another (one stream, or ordered), and it must outlive them: see
                             bc_gemm_plan_destroy. Other values: BC_ERR_INVALID_ARGUMENT */
    uint32_t resident;    /* 0 (the default): the rule weighs every configuration. 1: the plan is meant for a
                             resident executor (bc_resident_create, sm_90a): there the rule weighs only
                             configurations that one runs (README, "Resident executor"), leaving out,
                             e.g., the dot and GEMV kernels it takes for a few rows of outputs, and keeps
                             its choice (no alternative configuration for a large or crowded grid), so
                             that a network's tile plans share one resident kernel; on other devices it
                             changes nothing. A named configuration is taken as named. Other values:
                             BC_ERR_INVALID_ARGUMENT */
} bc_gemm_desc;

/* Contract: fills *out_desc with m=n=k=0, bf16 in, bf16 out, alpha 1, beta 0,
 * no pointers, no ReLU; the caller sets the rest. */
bc_status bc_gemm_desc_default(bc_gemm_desc *out_desc);

typedef struct bc_gemm_plan bc_gemm_plan;

/* Contract: validates `desc` completely, chooses the configuration by the
 * documented rule (README, "GEMM configurations"), encodes the TMA tensor
 * maps and packs the launch. All validation happens here; the launch checks
 * nothing. Each bad input has its own status (see status.h, 50..58 and
 * 68..70) and bc_last_error() names the field. Allocates the plan with malloc
 * (the only host allocation it keeps); a stream-K plan (desc.stream_k) also
 * takes its workspace from the device arena (BC_ERR_POOL_EXHAUSTED when it
 * does not fit; the allocator's own status, such as BC_ERR_TOO_MANY_BLOCKS,
 * when it fails otherwise) and zeroes its counters with one synchronous copy from a
 * zeroed host buffer it frees before returning. With desc.stream_k = 1, a
 * configuration that has a stream-K twin needs BC_KERNELS_STREAM_K at open
 * (BC_ERR_NO_KERNEL_FOR_DEVICE otherwise), whether or not the shape takes
 * stream-K.
 * Operand memory: every operand's extent ((rows - 1) * ld + cols elements)
 * must lie in memory this device's kernels can address: inside the device or
 * pinned host arena, in ONE live block; inside a range registered with
 * bc_mem_register; or else, as the driver describes it
 * (cuPointerGetAttributes, one call per allocation), device memory of this
 * device's context or host memory mapped for it, inside one allocation.
 * BC_ERR_OUT_OF_BOUNDS / BC_ERR_WRONG_DEVICE name the operand, the bytes
 * needed and the bytes available. D may share no byte with A, B or bias, nor
 * with C unless C is D exactly (same pointer and leading dimension):
 * BC_ERR_OVERLAP. */
bc_status bc_gemm_plan_create(bc_device *dev, const bc_gemm_desc *desc, bc_gemm_plan **out_plan);

/* Contract: points an existing plan at new buffers of the same shape, types
 * and leading dimensions. Same pointer, memory and overlap checks as plan
 * creation (a graph updated from the plan relies on them); on failure the
 * plan keeps its old pointers. No allocation; host-side driver calls only
 * (cuPointerGetAttributes for operands outside the arenas and registered
 * ranges, tensor-map address replacement), nothing queued on the GPU. */
bc_status bc_gemm_plan_set_pointers(bc_gemm_plan *plan, bc_devptr a, bc_devptr b, bc_devptr c,
                                    bc_devptr d, bc_devptr bias);

/* Contract: queues the GEMM on `stream` with exactly one driver call
 * (cuLaunchKernelEx), no allocation and no lock. A NULL plan or stream, or
 * a stream of another device handle than the plan's (bc_device: two
 * handles on one primary context count as two), is BC_ERR_INVALID_ARGUMENT,
 * with no driver call. Returns BC_ERR_DRIVER if the
 * driver refuses the launch. The plan must outlive the call only (the driver
 * copies the parameters at launch). */
bc_status bc_gemm_launch(const bc_gemm_plan *plan, bc_stream *stream);

/* Contract: frees the plan. NULL is a no-op. Queued launches are unaffected,
 * except those of a plan with a stream-K workspace (workspace_bytes > 0):
 * the workspace goes back to the device arena here, so destroy such a plan
 * only once its launches (and those of graphs made from it) have completed. */
void bc_gemm_plan_destroy(bc_gemm_plan *plan);

typedef struct bc_gemm_plan_info {
    const char *config;      /* configuration name, e.g. "sm90_128x256" */
    const char *kernel;      /* kernel symbol */
    uint32_t tile_m, tile_n, tile_k;
    uint32_t grid_x, block_x, cluster_x;
    uint32_t smem_bytes;
    uint32_t tiles;          /* output tiles */
    uint32_t split_k;        /* 1 unless the plan splits K (fixed reduction order) */
    uint32_t swapped;        /* 1: an N = 1 plan runs as the 1 x M product B . A^T, so the tile,
                                grid and tile counts above describe that product (README,
                                "GEMM configurations") */
    uint32_t dense_a;        /* 1: A's rows are short and packed, and the kernel copies them as they
                                lie and lays them out itself (the configuration's dense-row kernel;
                                README, "GEMM configurations") */
    uint32_t stream_k_tiles; /* tiles done by stream-K (desc.stream_k = 1), else 0 */
    uint32_t stream_k_ctas;  /* CTAs sharing their k-blocks, else 0 */
    uint64_t workspace_bytes; /* device-arena bytes the plan holds for stream-K, else 0 */
    uint32_t multicast;      /* 0, or the configuration's multicast twin (README, "GEMM configurations"):
                                1, clusters of two CTAs (cluster_x) on pairs of tile rows sharing B's
                                loads, for A's or B's rows off the 32-byte sectors (128x256, 128x128);
                                3, clusters of four on blocks of 2 x 2 tiles sharing A's and B's loads,
                                for rows off the sectors down a long K (128x64, 64x32) */
} bc_gemm_plan_info;

/* Contract: describes the chosen configuration; no driver call. */
bc_status bc_gemm_plan_query(const bc_gemm_plan *plan, bc_gemm_plan_info *out_info);

#ifdef __cplusplus
}
#endif
#endif
