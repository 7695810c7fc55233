/* A latency histogram as a standalone SVG document, drawn by our own code
 * (no dependencies; opens in any browser).
 *
 * One panel per series, stacked, all on the same x axis: latency in µs on a
 * log scale, from the smallest sample to 1.5 x the largest p99.9 of all
 * series (samples beyond it are counted in the panel's note, never drawn off
 * the axis). Bars are counts per bin (bins equal in log space) on a
 * log10(1 + count) scale so the tail shows. Each panel marks its p50 (solid),
 * p99 (dashed) and p99.9 (dotted) with labelled vertical lines; a legend on
 * top maps colors to series with their p50 / p99 / p99.9 / max. */
#ifndef BC_TOOLS_SVG_HIST_H
#define BC_TOOLS_SVG_HIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct bc_svg_series {
    const char *name;          /* legend and panel label, e.g. "graph / spin" */
    const uint64_t *sorted_ns; /* samples in nanoseconds, ascending */
    size_t n;                  /* may be 0: the panel says "no samples" */
} bc_svg_series;

/* Writes the document to `f`. `title` may be NULL; '\n' splits it into
 * lines (the first bold, at most 4). Returns 0, or -1 when
 * `count` is not in [1, 64] or writing failed. */
int bc_svg_hist_write(FILE *f, const char *title, const bc_svg_series *series, int count);

#endif
