/* Checking a GEMM already run on the device against the fp64 CPU reference,
 * one sampled row at a time (the bench and latency commands' guard: a
 * configuration that computes wrong results never gets a time reported). */
#ifndef BC_TOOLS_GEMM_CHECK_H
#define BC_TOOLS_GEMM_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "barecuda.h"
#include "ref.h"

/* Row i of `count` sampled rows of an M-row output: i == 0 is the last row
 * (the ragged edge), i >= 1 a random row of band i-1 of count-1 equal bands,
 * so the samples cover every stretch of M. */
int64_t bc_check_row_index(int64_t m, int i, int count, bc_rng *r);

/* How many rows to check: every row when the whole reference costs at most
 * 2^27 multiply-adds, else `sampled` (at most M). */
int64_t bc_check_row_count(const bc_gemm_desc *d, int64_t sampled);

/* Downloads row `row` of D (d->d, packed: ldd = n) and adds its error
 * against the reference computed from host copies of A and B (packed, as the
 * descriptor says; beta 0, no bias) to *acc. row_buf holds n output
 * elements, ref_buf n doubles. The caller has waited for the GEMM. */
bc_status bc_check_row(bc_device *dev, const bc_gemm_desc *d, const void *host_a, const void *host_b, int64_t row,
                       void *row_buf, double *ref_buf, bc_ref_error *acc);

/* The same with the epilogue: host copies of C (row-major, ldc = n; NULL when
 * beta is 0) and bias (n values; NULL for none); alpha, beta and ReLU as the
 * descriptor says. */
bc_status bc_check_row_epi(bc_device *dev, const bc_gemm_desc *d, const void *host_a, const void *host_b,
                           const void *host_c, const void *host_bias, int64_t row, void *row_buf, double *ref_buf,
                           bc_ref_error *acc);

/* The pass rule of `barecuda gemm`: no unwritten (NaN-poison) element, none
 * out of the per-element tolerance, relative Frobenius error within the
 * output type's bound. */
int bc_check_passed(const bc_gemm_desc *d, const bc_ref_error *e);

/* One line per recorded mismatch (at most 4), each starting with `indent`. */
void bc_check_print_mismatches(FILE *f, const char *indent, const bc_ref_error *e);

#endif
