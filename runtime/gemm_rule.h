/* Internal: the configuration rule (gemm_rule.c), which the plan
 * (gemm_plan.c) calls at creation. */
#ifndef BC_RUNTIME_GEMM_RULE_H
#define BC_RUNTIME_GEMM_RULE_H

#include "gemm_internal.h"
#include "sk_sched.h"

/* The documented configuration rule for `d` on `dev` (README, "GEMM
 * configurations"), or the caller's named configuration and/or split:
 * writes the configuration, its split (1 for whole tiles and the dot
 * kernel, whose cluster bc__gemm_dot_shape sizes) and its loaded kernel.
 * BC_ERR_INVALID_ARGUMENT for a name or split that cannot run d,
 * BC_ERR_NO_KERNEL_FOR_DEVICE when nothing fits or is loaded. Outputs are
 * written only on success. */
bc_status bc__gemm_choose(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config **out, uint32_t *out_split,
                          CUfunction *out_fn);

/* Whether the rule runs the N = 1 problem `d` as its transpose on `dev`. */
int bc__gemm_swap_pays(const bc_device *dev, const bc_gemm_desc *d);

/* Whether the rule's whole-tile choice c for d gives way to its crowd_alt
 * configuration (gemm_internal.h): c's one round of tiles on more than half
 * of the SMs, the alternative's on less than half, K of at least
 * c->crowd_min_kb k-blocks, A's or B's rows off the 128-byte lines, the
 * alternative loaded for d's types and within the device's shared memory.
 * Sets *out and *out_fn when it does (the caller keeps c where c's
 * multicast twin takes the plan). */
int bc__gemm_crowded_alt(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c,
                         const bc__gemm_config **out, CUfunction *out_fn);

/* Whether the rule's choice c for d, a plan that copies D out (its pitch or
 * N off 16 bytes: the caller checks), gives way to its ud_alt configuration
 * (gemm_internal.h): a plain epilogue (no C, bias or ReLU), fewer tile
 * columns on the alternative, at least
 * c->ud_min_rounds rounds of c's tiles on the device's SMs for a 16-bit D
 * (c->ud_min_rounds_f32 for an f32 one), the
 * alternative loaded for d's types and within the device's shared memory.
 * Sets *out and *out_fn when it does. */
int bc__gemm_unaligned_alt(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c,
                           const bc__gemm_config **out, CUfunction *out_fn);

/* Whether the rule's choice c for d, a plan that stores D by TMA (its pitch
 * and N on 16 bytes: the caller checks) and does not take c's dense-row kernel
 * (`dense` 0: the caller decides), gives way to its ud_alt configuration:
 * a plain epilogue, fewer tile columns on the alternative, K from
 * c->ad_min_k and within c->max_kb k-blocks, at least c->ad_min_rounds
 * rounds of c's tiles on the device's SMs (either D type), the alternative
 * loaded for d's types and within the device's shared memory. Sets *out and
 * *out_fn when it does. */
int bc__gemm_aligned_alt(const bc_device *dev, const bc_gemm_desc *d, const bc__gemm_config *c, int dense,
                         const bc__gemm_config **out, CUfunction *out_fn);

/* D^T = B . A^T of an N = 1 problem, as the kernel runs it. */
bc_gemm_desc bc__gemm_transposed(const bc_gemm_desc *d);

/* The dot kernel's launch in its parameter: tiles_m = clusters, tiles_n =
 * 1, split_k = CTAs a cluster (kernels_ptx/gemm_dot.c). */
void bc__gemm_dot_shape(bc_gemm_params *p, uint32_t sm_count);
/* The GEMV kernel's launch in its parameter: tiles_m = clusters, tiles_n =
 * 1, split_k = CTAs a cluster (kernels_ptx/gemm_gemv.c). */
void bc__gemm_gemv_shape(bc_gemm_params *p, uint32_t sm_count);

/* Stream-K for a whole-tile plan whose caller allows it (desc.stream_k;
 * kernels_ptx/sk_sched.h): whether the rule takes the last partial round of
 * configuration c's grid (params' tiles and k-blocks, `sms` SMs) by
 * stream-K, and if so which tiles and how many CTAs (*out, written only
 * then). README, "Stream-K", says when. */
int bc__gemm_stream_k(const bc__gemm_config *c, const bc_gemm_params *p, uint32_t sms, bc_sk *out);

/* The manifest symbol of kernel `id` (kernels_ptx/manifest.h). */
const char *bc__gemm_kernel_name(bc__kernel_id id);

#endif
