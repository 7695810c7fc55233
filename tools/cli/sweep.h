/* The shape sweep of `barecuda bench --sweep`: a deterministic, documented
 * draw of GEMM shapes and epilogues that tools/sweep.py repeats exactly in
 * Python, so that barecuda and cuBLAS time the same list (README, "Shape
 * sweeps").
 *
 * Generator (version 1), from a 64-bit seed S:
 *   - random words: splitmix64 with state S (bc_rng_next);
 *   - logu(lo, hi), an integer in [lo, hi] with log-uniform density: E is the
 *     least integer with lo * 2^E > hi; r = next() >> 32; t = r * E; q = t >> 32,
 *     f = t mod 2^32 (so x = lo * 2^(q + f / 2^32) is log-uniform on
 *     [lo, lo * 2^E)); F = 2^(f / 2^32) in Q62 fixed point as the product,
 *     truncated after each step, of the constants floor(2^(2^-i) * 2^62) for
 *     the set bits i = 1..32 of f (bit i worth 2^-i); v = ((lo << q) * F) >> 62;
 *     a v above hi is drawn again (the restriction of a log-uniform law to
 *     [lo, hi + 1) is log-uniform). Integer arithmetic only.
 *   - one candidate: M = logu(1, 16384), N = logu(1, 16384),
 *     K = 8 * floor((logu(8, 16384) + 4) / 8) (the nearest multiple of 8);
 *     then the epilogue: r = next(); if (r >> 11) < F * 2^53 (F the epilogue
 *     fraction, compared as doubles) the epilogue is variant 1 + next() % 7 of
 *     the table below, else plain;
 *   - the candidate is kept when its bytes per set (A + B + D, plus C when C
 *     is a separate buffer, plus bias) times its rotating sets
 *     (bc_bench_sets) are at most the memory cap; else a new candidate is
 *     drawn. Kept candidates are numbered 0, 1, ...
 */
#ifndef BC_TOOLS_SWEEP_H
#define BC_TOOLS_SWEEP_H

#include <stdint.h>

#include "barecuda.h"
#include "shapes.h"

/* Epilogue variants, in the generator's order (index 0 is the plain GEMM). */
typedef enum bc_epi {
    BC_EPI_PLAIN = 0,  /* bf16 -> bf16, D = A.B^T */
    BC_EPI_C,          /* D = A.B^T + 1.0 * C, C a separate M x N bf16 buffer */
    BC_EPI_C_ALIAS,    /* the same with C = D (in place: D += A.B^T) */
    BC_EPI_BIAS,       /* D = A.B^T + bias[N] */
    BC_EPI_BIAS_RELU,  /* D = max(0, A.B^T + bias[N]) */
    BC_EPI_F16_IN,     /* f16 -> f16 */
    BC_EPI_F16_OUT,    /* bf16 -> f16 */
    BC_EPI_F32_OUT,    /* bf16 -> f32 */
    BC_EPI_COUNT
} bc_epi;

typedef struct bc_epi_desc {
    const char *tag;   /* "plain", "c", "c_alias", "bias", "bias_relu", "f16_in", "f16_out", "f32_out" */
    bc_dtype ab, out;
    float alpha, beta;
    int c_alias, bias, relu;
} bc_epi_desc;

extern const bc_epi_desc bc_epi_table[BC_EPI_COUNT];

typedef struct bc_sweep_item {
    bc_shape s;
    bc_epi epi;
} bc_sweep_item;

typedef struct bc_sweep_params {
    uint64_t seed;
    int count;
    uint64_t mem_cap;       /* bytes of all rotating sets of one shape */
    double epi_fraction;    /* in [0, 1] */
} bc_sweep_params;

#define BC_SWEEP_MAX 100000
#define BC_SWEEP_DEFAULT_MEM_CAP (4ull << 30)
#define BC_SWEEP_MIN_MEM_CAP 65536ull
#define BC_SWEEP_DEFAULT_EPI_FRACTION 0.5
#define BC_SWEEP_MAX_ATTEMPTS 1000000 /* candidates per kept shape before giving up */

/* Draws p->count items into out[0..count-1]. Returns 0, or -1 when a shape
 * needed more than BC_SWEEP_MAX_ATTEMPTS candidates (a cap too small). */
int bc_sweep_draw(const bc_sweep_params *p, bc_sweep_item *out);

/* logu(lo, hi) on a splitmix64 state (exposed for the tests). */
int64_t bc_sweep_logu(uint64_t *state, int64_t lo, int64_t hi);

/* Bytes one rotating set occupies: A + B + D, C when separate, bias. */
uint64_t bc_sweep_set_bytes(const bc_shape *s, const bc_epi_desc *e);

/* Bytes the GEMM moves at least once: A + B + D, C when read (aliased or
 * not), bias. The memory floor divides this by the bandwidth. */
uint64_t bc_sweep_traffic_bytes(const bc_shape *s, const bc_epi_desc *e);

/* max(2MNK / peak_flops, traffic / peak_bw) in microseconds. */
double bc_sweep_floor_us(const bc_shape *s, const bc_epi_desc *e, double peak_flops, double peak_bw);

/* The floor constants (kernels_ptx/PERF_NOTES.md, "Floors"). */
#define BC_PEAK_FLOPS 800e12
#define BC_PEAK_BW 3.02e12

#endif
