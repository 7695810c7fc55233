/* Order statistics of timing samples.
 *
 * Percentiles use the nearest-rank definition: for 0 < p <= 100 the p-th
 * percentile of n ascending samples is the sample at 1-based rank
 * ceil(p/100 * n), i.e. the smallest sample with at least p% of the samples
 * at or below it; p <= 0 gives the minimum. It is always an observed value
 * (no interpolation), so "p99.9 = 14.2 us" means 0.1% of the runs took
 * longer than 14.2 us. p is resolved to 0.001 and the rank is computed in
 * integers, so p = 99 of 100 samples is rank 99, not 100 by rounding error.
 * tools/latency_cublas.py uses the same definition. */
#ifndef BC_TOOLS_STATS_H
#define BC_TOOLS_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Ascending sort in place. */
void bc_stats_sort_u64(uint64_t *v, size_t n);
void bc_stats_sort_f64(double *v, size_t n);

/* 1-based nearest rank of percentile p among n samples (1..n); 0 when n is 0. */
size_t bc_stats_rank(size_t n, double p);

/* Nearest-rank percentile of ascending `sorted`; 0 when n is 0. */
uint64_t bc_stats_percentile_u64(const uint64_t *sorted, size_t n, double p);

typedef struct bc_stats_summary {
    size_t n;
    uint64_t min, p50, p90, p99, p999, max;
    double mean;
} bc_stats_summary;

/* Summary of ascending `sorted` (all zero when n is 0). */
void bc_stats_summarize_u64(const uint64_t *sorted, size_t n, bc_stats_summary *out);

#endif
