/* Order statistics of timing samples (see stats.h for the definition). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bc_stats_sort_u64(uint64_t *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_u64);
}

void bc_stats_sort_f64(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_f64);
}

size_t bc_stats_rank(size_t n, double p)
{
    if (n == 0)
        return 0;
    if (!(p > 0.0)) /* also NaN */
        return 1;
    if (p >= 100.0)
        return n;
    /* p in thousandths of a percent; rank = ceil(pm * n / 100000) in integers
     * (exact for n up to 1.8e14 samples) */
    const uint64_t pm = (uint64_t)llround(p * 1000.0);
    const uint64_t r = (pm * (uint64_t)n + 99999u) / 100000u;
    return r < 1 ? 1 : r > n ? n : (size_t)r;
}

uint64_t bc_stats_percentile_u64(const uint64_t *sorted, size_t n, double p)
{
    return n == 0 ? 0 : sorted[bc_stats_rank(n, p) - 1];
}

void bc_stats_summarize_u64(const uint64_t *sorted, size_t n, bc_stats_summary *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0)
        return;
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->p50 = bc_stats_percentile_u64(sorted, n, 50.0);
    out->p90 = bc_stats_percentile_u64(sorted, n, 90.0);
    out->p99 = bc_stats_percentile_u64(sorted, n, 99.0);
    out->p999 = bc_stats_percentile_u64(sorted, n, 99.9);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += (double)sorted[i];
    out->mean = sum / (double)n;
}
