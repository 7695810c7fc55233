/* Host reference helpers (see ref.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ref.h"

uint64_t bc_ref_seed(void)
{
    const char *env = getenv("BC_SEED");
    if (env && *env)
        return strtoull(env, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}

uint64_t bc_rng_next(bc_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double bc_rng_normal(bc_rng *r)
{
    double u1 = ((double)(bc_rng_next(r) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    double u2 = (double)(bc_rng_next(r) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t bc_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float bc_bf16_to_f32_host(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t bc_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t exp = (u >> 23) & 0xFFu;
    uint32_t man = u & 0x7FFFFFu;
    if (exp == 0xFFu)
        return (uint16_t)(sign | 0x7C00u | (man ? 0x200u : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) { /* subnormal or zero: shift with round-to-nearest-even */
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = 1u << (shift - 1);
        uint32_t rest = man & ((1u << shift) - 1u);
        uint32_t r = man >> shift;
        if (rest > half || (rest == half && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rest = man & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u)))
        r++; /* may carry into the exponent, up to inf: correct */
    return (uint16_t)(sign | r);
}

float bc_f16_to_f32_host(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0) {
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    if (exp == 31)
        return bits_f32(sign | 0x7F800000u | (man << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

size_t bc_dtype_bytes(bc_dtype t) { return t == BC_DTYPE_F32 ? 4 : 2; }

double bc_ref_get(const void *p, bc_dtype t, size_t i)
{
    switch (t) {
    case BC_DTYPE_BF16:
        return bc_bf16_to_f32_host(((const uint16_t *)p)[i]);
    case BC_DTYPE_F16:
        return bc_f16_to_f32_host(((const uint16_t *)p)[i]);
    default:
        return ((const float *)p)[i];
    }
}

void bc_ref_fill_normal(void *p, bc_dtype t, size_t n, double scale, bc_rng *r)
{
    for (size_t i = 0; i < n; i++) {
        float v = (float)(scale * bc_rng_normal(r));
        if (t == BC_DTYPE_BF16)
            ((uint16_t *)p)[i] = bc_f32_to_bf16(v);
        else if (t == BC_DTYPE_F16)
            ((uint16_t *)p)[i] = bc_f32_to_f16(v);
        else
            ((float *)p)[i] = v;
    }
}

void bc_ref_gemm_row(const bc_gemm_desc *d, const void *a, const void *b, const void *c,
                     const void *bias, int64_t row, double *out_row)
{
    bc_ref_gemm_row_pre(d, a, b, c, bias, row, out_row, NULL);
}

void bc_ref_gemm_row_pre(const bc_gemm_desc *d, const void *a, const void *b, const void *c,
                         const void *bias, int64_t row, double *out_row, double *pre_sq)
{
    const int64_t lda = d->lda ? d->lda : d->k, ldb = d->ldb ? d->ldb : d->k;
    const int64_t ldc = d->ldc ? d->ldc : d->n;
    double *arow = malloc((size_t)d->k * sizeof *arow);
    for (int64_t k = 0; k < d->k; k++)
        arow[k] = bc_ref_get(a, d->ab_type, (size_t)(row * lda + k));
    for (int64_t n = 0; n < d->n; n++) {
        double s = 0.0;
        for (int64_t k = 0; k < d->k; k++)
            s += arow[k] * bc_ref_get(b, d->ab_type, (size_t)(n * ldb + k));
        double v = (double)d->alpha * s;
        if (d->beta != 0.0f)
            v += (double)d->beta * bc_ref_get(c, d->d_type, (size_t)(row * ldc + n));
        if (bias)
            v += bc_ref_get(bias, d->d_type, (size_t)n);
        if (pre_sq)
            *pre_sq += v * v;
        if (d->relu && v < 0.0)
            v = 0.0;
        out_row[n] = v;
    }
    free(arow);
}

void bc_ref_element_tol(bc_dtype d_type, int64_t k, double *out_rtol, double *out_atol)
{
    *out_rtol = d_type == BC_DTYPE_BF16 ? 0x1.0p-8 : d_type == BC_DTYPE_F16 ? 0x1.0p-10 : 0x1.0p-20;
    *out_atol = 1e-4 * sqrt((double)k);
}

void bc_ref_compare_row(const bc_gemm_desc *d, const void *host_d, int64_t row, const double *ref_row,
                        bc_ref_error *acc)
{
    const int64_t ldd = d->ldd ? d->ldd : d->n;
    double rtol, atol;
    bc_ref_element_tol(d->d_type, d->k, &rtol, &atol);
    for (int64_t n = 0; n < d->n; n++) {
        double got = bc_ref_get(host_d, d->d_type, (size_t)(row * ldd + n));
        double want = ref_row[n];
        acc->checked++;
        int bad_now = 0;
        if (!isfinite(got) && isfinite(want)) {
            acc->nonfinite++;
            bad_now = 1;
        }
        double e = fabs(got - want);
        if (!bad_now && e > rtol * fabs(want) + atol) {
            acc->bad++;
            bad_now = 1;
        }
        size_t nbad = acc->bad + acc->nonfinite;
        if (bad_now && nbad <= 4) {
            acc->first_bad[nbad - 1].row = row;
            acc->first_bad[nbad - 1].col = n;
            acc->first_bad[nbad - 1].got = got;
            acc->first_bad[nbad - 1].want = want;
        }
        if (bad_now && !isfinite(got))
            continue;
        acc->err_sq += e * e;
        acc->ref_sq += want * want;
        if (e > acc->max_abs)
            acc->max_abs = e;
    }
}

double bc_ref_rel_frobenius(const bc_ref_error *e)
{
    if (e->ref_sq == 0.0)
        return sqrt(e->err_sq);
    return sqrt(e->err_sq / e->ref_sq);
}

double bc_ref_bound(bc_dtype d_type, int64_t k)
{
    switch (d_type) {
    case BC_DTYPE_BF16:
        return 5e-3;
    case BC_DTYPE_F16:
        return 1e-3;
    default: {
        const double chunks = (double)((k + 15) / 16); /* fp32 additions into the accumulator */
        const double accumulate = chunks * 0x1.0p-23;
        return accumulate > 1e-5 ? accumulate : 1e-5;
    }
    }
}
