/* Host-side helpers shared by the CLI and the GPU tests: random inputs,
 * 16-bit float conversions, the fp64 CPU reference GEMM and error norms.
 * Not part of libbarecuda. */
#ifndef BC_TOOLS_REF_H
#define BC_TOOLS_REF_H

#include <stddef.h>
#include <stdint.h>

#include "barecuda.h"

typedef struct bc_rng {
    uint64_t s;
} bc_rng;

/* Seed from the clock and pid unless BC_SEED is set in the environment. */
uint64_t bc_ref_seed(void);
uint64_t bc_rng_next(bc_rng *r);          /* splitmix64 */
double bc_rng_normal(bc_rng *r);          /* N(0, 1), Box-Muller */

uint16_t bc_f32_to_bf16(float f);         /* round to nearest even; NaN stays NaN */
uint16_t bc_f32_to_f16(float f);          /* round to nearest even; overflow to inf */
float bc_bf16_to_f32_host(uint16_t h);
float bc_f16_to_f32_host(uint16_t h);

size_t bc_dtype_bytes(bc_dtype t);
/* Element i of a typed host array, as double. */
double bc_ref_get(const void *p, bc_dtype t, size_t i);
/* Fills n elements of type t with N(0, scale^2) values rounded to the type. */
void bc_ref_fill_normal(void *p, bc_dtype t, size_t n, double scale, bc_rng *r);

/* fp64 reference of one row of D for the GEMM described by `d`, with host
 * copies of A, B, C, bias laid out as the descriptor says (lda/ldb/ldc in
 * elements; c and bias may be NULL when unused). Writes N values. */
void bc_ref_gemm_row(const bc_gemm_desc *d, const void *a, const void *b, const void *c,
                     const void *bias, int64_t row, double *out_row);

/* The same, adding to *pre_sq the squares of the row's values before the
 * activation (ReLU): the scale the accumulation error is made at, which a
 * row that ReLU clamps almost to zero no longer shows (check_result's
 * relative Frobenius bound divides by it). */
void bc_ref_gemm_row_pre(const bc_gemm_desc *d, const void *a, const void *b, const void *c,
                         const void *bias, int64_t row, double *out_row, double *pre_sq);

typedef struct bc_ref_error {
    double err_sq, ref_sq; /* sums of squares: ||D - ref||^2, ||ref||^2 */
    double max_abs;        /* largest |D - ref| */
    size_t nonfinite;      /* elements of D that are NaN/inf where ref is finite (unwritten: poison) */
    size_t bad;            /* elements with |D - ref| > rtol*|ref| + atol (bc_ref_element_tol) */
    size_t checked;
    struct {
        int64_t row, col;
        double got, want;
    } first_bad[4];        /* the first out-of-tolerance elements, for diagnosis */
} bc_ref_error;

/* Accumulates the error of D's row `row` (host copy of D, ldd elements)
 * against ref_row. */
void bc_ref_compare_row(const bc_gemm_desc *d, const void *host_d, int64_t row, const double *ref_row,
                        bc_ref_error *acc);

/* Per-element tolerance: rtol is a little over the output type's rounding
 * (bf16 2^-8, f16 2^-10, f32 2^-20); atol = 1e-4 * sqrt(K) covers fp32
 * accumulation-order differences on N(0,1) inputs. */
void bc_ref_element_tol(bc_dtype d_type, int64_t k, double *out_rtol, double *out_atol);

/* sqrt(err_sq / ref_sq), or err if ref is all zero. */
double bc_ref_rel_frobenius(const bc_ref_error *e);

/* The relative Frobenius bound stated per output type: bf16 5e-3 and f16
 * 1e-3, dominated by the output rounding (inputs are exact); f32
 * max(1e-5, ceil(K / 16) * 2^-23), where fp32 accumulation dominates: the
 * tensor cores add each 16-product chunk into an fp32 accumulator, and
 * rounding to nearest is not documented for that addition, so each may
 * lose up to one unit in the last place of the running sum. A CPU model
 * (N(0,1) bf16 inputs, 4x25 outputs, K = 14424) gives 5.6e-7 when each
 * addition rounds to nearest and 2.0e-5 when it truncates, against a
 * bound of 1.1e-4; at K = 4096, 3e-7 and 4.5e-6 against 3.1e-5. */
double bc_ref_bound(bc_dtype d_type, int64_t k);

#endif
