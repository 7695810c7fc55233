/* GEMM operand rules: the layout arithmetic (leading dimensions, alignment,
 * extents that must not overflow) and, against the device, the memory every
 * operand's extent lies in and the overlaps that would make D depend on
 * timing. Plan creation and bc_gemm_plan_set_pointers run both. */
#include "error.h"
#include "gemm_internal.h"

#define MAX_DIM 0x7FFFFFFFll


/* One leading dimension: at least the row and within the kernel ABI; A and B
 * rows (TMA) must also start 16 bytes apart (`row_align` 16, else 1). */
static bc_status check_ld(const char *name, int64_t ld, int64_t row, uint64_t es, uint64_t row_align)
{
    if (ld < row)
        return BC_FAIL(BC_ERR_BAD_LEADING_DIM, name, "%s=%lld is smaller than the row length %lld", name,
                       (long long)ld, (long long)row);
    if (ld > MAX_DIM)
        return BC_FAIL(BC_ERR_BAD_LEADING_DIM, name, "%s=%lld exceeds 2^31-1", name, (long long)ld);
    if (((uint64_t)ld * es) % row_align)
        return BC_FAIL(BC_ERR_BAD_LEADING_DIM, name, "%s=%lld: rows are %llu bytes, not a multiple of 16", name,
                       (long long)ld, (unsigned long long)((uint64_t)ld * es));
    return BC_OK;
}

/* Pointer rules and the byte extent [p, p + ((rows-1)*ld + cols)*es). */
static bc_status check_operand(const char *name, bc_devptr p, int64_t rows, int64_t cols, int64_t ld, uint64_t es,
                               uint64_t align)
{
    if (p == 0)
        return BC_FAIL(BC_ERR_NULL_POINTER, name, "%s is a null device pointer", name);
    if (p % align)
        return BC_FAIL(BC_ERR_MISALIGNED, name, "%s=0x%llx is not %llu-byte aligned", name, (unsigned long long)p,
                       (unsigned long long)align);
    uint64_t elems, bytes, end;
    if (__builtin_mul_overflow((uint64_t)(rows - 1), (uint64_t)ld, &elems) ||
        __builtin_add_overflow(elems, (uint64_t)cols, &elems) || __builtin_mul_overflow(elems, es, &bytes) ||
        __builtin_add_overflow(p, bytes, &end))
        return BC_FAIL(BC_ERR_SIZE_OVERFLOW, name, "%s: extent of %lld x %lld (ld %lld) overflows", name,
                       (long long)rows, (long long)cols, (long long)ld);
    return BC_OK;
}

bc_status bc__gemm_check_layout(bc_gemm_desc *d)
{
    const uint64_t osz = bc__dtype_bytes(d->d_type);
    if (d->lda == 0) d->lda = d->k;
    if (d->ldb == 0) d->ldb = d->k;
    if (d->ldc == 0) d->ldc = d->n;
    if (d->ldd == 0) d->ldd = d->n;
    bc_status st = check_ld("lda", d->lda, d->k, 2, 16);
    if (!st) st = check_ld("ldb", d->ldb, d->k, 2, 16);
    if (!st) st = check_ld("ldd", d->ldd, d->n, osz, 1);
    if (!st && d->beta != 0.0f) st = check_ld("ldc", d->ldc, d->n, osz, 1);
    if (!st) st = check_operand("a", d->a, d->m, d->k, d->lda, 2, 16);
    if (!st) st = check_operand("b", d->b, d->n, d->k, d->ldb, 2, 16);
    if (!st) st = check_operand("d", d->d, d->m, d->n, d->ldd, osz, 16);
    if (!st && d->beta != 0.0f) st = check_operand("c", d->c, d->m, d->n, d->ldc, osz, 16);
    if (!st && d->bias != 0) st = check_operand("bias", d->bias, 1, d->n, d->n, osz, 4);
    return st;
}

/* The operands' byte regions (after bc__gemm_check_layout: no overflow). */
typedef struct gemm_regions {
    bc__region a, b, c, d, bias;
} gemm_regions;

static bc__region region(bc_devptr p, int64_t rows, int64_t cols, int64_t ld, uint64_t es)
{
    bc__region r = {p, (uint64_t)rows, (uint64_t)cols * es, (uint64_t)ld * es};
    return r;
}

bc_status bc__gemm_check_memory(bc_device *dev, const bc_gemm_desc *d, int d_by_tma, int c_by_tma,
                                bc__ptr_cache *cache)
{
    const uint64_t osz = bc__dtype_bytes(d->d_type);
    const int has_c = d->beta != 0.0f, has_bias = d->bias != 0;
    gemm_regions r = {
        .a = region(d->a, d->m, d->k, d->lda, 2),
        .b = region(d->b, d->n, d->k, d->ldb, 2),
        .c = region(d->c, d->m, d->n, d->ldc, osz),
        .d = region(d->d, d->m, d->n, d->ldd, osz),
        .bias = region(d->bias, 1, d->n, d->n, osz),
    };
    bc__ptr_cache local = {0};
    if (cache == NULL) /* operands carved from one allocation: one driver call */
        cache = &local;
    const unsigned rd = BC__ACC_READ, tma = BC__ACC_TMA;
    bc_status st = bc__ptr_check(dev, "a", d->a, bc__region_extent(&r.a), rd | tma, cache);
    if (!st) st = bc__ptr_check(dev, "b", d->b, bc__region_extent(&r.b), rd | tma, cache);
    if (!st) st = bc__ptr_check(dev, "d", d->d, bc__region_extent(&r.d), BC__ACC_WRITE | (d_by_tma ? tma : 0), cache);
    if (!st && has_c) st = bc__ptr_check(dev, "c", d->c, bc__region_extent(&r.c), rd | (c_by_tma ? tma : 0), cache);
    if (!st && has_bias) st = bc__ptr_check(dev, "bias", d->bias, bc__region_extent(&r.bias), rd, cache);
    /* D is written while A, B, C and bias are read, by many CTAs in no fixed
     * order: any shared byte makes the result depend on timing. C may be D
     * exactly (each element read, then written, by the same thread). */
    if (!st) st = bc__check_disjoint("d", &r.d, "a", &r.a);
    if (!st) st = bc__check_disjoint("d", &r.d, "b", &r.b);
    if (!st && has_bias) st = bc__check_disjoint("d", &r.d, "bias", &r.bias);
    if (!st && has_c && !(d->c == d->d && d->ldc == d->ldd))
        st = bc__check_disjoint("d", &r.d, "c", &r.c);
    return st;
}
