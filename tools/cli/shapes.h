/* GEMM shape lists for the bench command: parsing, the default list (issue
 * 5) and the rotating-input-set rule shared with tools/bench_cublas.py. */
#ifndef BC_TOOLS_SHAPES_H
#define BC_TOOLS_SHAPES_H

#include <stdint.h>

typedef struct bc_shape {
    int64_t m, n, k;
} bc_shape;

#define BC_SHAPES_MAX 64 /* bench_opts.c's --shapes message says so */

/* The default bench list: 8192^3, 6144^3, 4096^3, 4096x4096x1024, 2048^3,
 * 1024^3, 512/256x4096x4096, 128x2048x2048, 64x1024x1024, 16x4096x4096 and
 * the transformer MLP shapes 4096x14336x4096, 4096x4096x14336. */
extern const bc_shape bc_shapes_default[];
extern const int bc_shapes_default_count;

/* Parses "MxNxK[,MxNxK...]" (each dimension a decimal in [1, 2^31 - 1]) into
 * out[0..cap-1]. Returns the number of shapes, or -1 on a syntax error, a
 * value out of range, an empty item or more than `cap` shapes. */
int bc_shapes_parse(const char *s, bc_shape *out, int cap);

/* Rotating input sets for one shape, the rule of tools/bench_cublas.py:
 * max(2, min(8, 400 MiB / bytes_per_set)): eight sets of a shape up to 50
 * MiB a set, two of a large one. The eight sets of a small shape can still
 * fit the 50 MB L2 together (both sides are timed alike). */
int bc_bench_sets(uint64_t bytes_per_set);

/* Bytes of one set, A + B + D (what the bandwidth figure counts). */
uint64_t bc_shape_bytes(const bc_shape *s, unsigned in_bytes, unsigned out_bytes);

#endif
