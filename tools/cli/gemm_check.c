/* Sampled-row checks of a device GEMM against the CPU reference (see gemm_check.h). */
#include "gemm_check.h"

int64_t bc_check_row_index(int64_t m, int i, int count, bc_rng *r)
{
    if (i <= 0 || count < 2 || m < 2)
        return m - 1;
    const int64_t bands = count - 1, band = i - 1;
    const int64_t lo = band * m / bands, hi = (band + 1) * m / bands;
    if (hi <= lo)
        return lo < m ? lo : m - 1;
    return lo + (int64_t)(bc_rng_next(r) % (uint64_t)(hi - lo));
}

int64_t bc_check_row_count(const bc_gemm_desc *d, int64_t sampled)
{
    if ((uint64_t)d->m * (uint64_t)d->n * (uint64_t)d->k <= (1ull << 27) || sampled > d->m)
        return d->m;
    return sampled < 1 ? 1 : sampled;
}

bc_status bc_check_row(bc_device *dev, const bc_gemm_desc *d, const void *host_a, const void *host_b, int64_t row,
                       void *row_buf, double *ref_buf, bc_ref_error *acc)
{
    return bc_check_row_epi(dev, d, host_a, host_b, NULL, NULL, row, row_buf, ref_buf, acc);
}

bc_status bc_check_row_epi(bc_device *dev, const bc_gemm_desc *d, const void *host_a, const void *host_b,
                           const void *host_c, const void *host_bias, int64_t row, void *row_buf, double *ref_buf,
                           bc_ref_error *acc)
{
    const size_t ob = bc_dtype_bytes(d->d_type);
    bc_status st = bc_memcpy_dtoh(dev, row_buf, d->d + (bc_devptr)((uint64_t)row * (uint64_t)d->n * ob),
                                  (size_t)d->n * ob);
    if (st)
        return st;
    bc_ref_gemm_row(d, host_a, host_b, host_c, host_bias, row, ref_buf);
    /* row_buf holds only this row: compare it as row 0, then name the real row */
    const size_t before = acc->bad + acc->nonfinite;
    bc_ref_compare_row(d, row_buf, 0, ref_buf, acc);
    for (size_t i = before; i < acc->bad + acc->nonfinite && i < 4; i++)
        acc->first_bad[i].row = row;
    return BC_OK;
}

int bc_check_passed(const bc_gemm_desc *d, const bc_ref_error *e)
{
    return e->checked > 0 && e->nonfinite == 0 && e->bad == 0 && bc_ref_rel_frobenius(e) <= bc_ref_bound(d->d_type, d->k);
}

void bc_check_print_mismatches(FILE *f, const char *indent, const bc_ref_error *e)
{
    for (size_t i = 0; i < 4 && i < e->bad + e->nonfinite; i++)
        fprintf(f, "%smismatch at row %lld col %lld: got %.6g, want %.6g\n", indent, (long long)e->first_bad[i].row,
                (long long)e->first_bad[i].col, e->first_bad[i].got, e->first_bad[i].want);
}
