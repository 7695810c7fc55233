/* barecuda bench, shared between its option parser (bench_opts.c), its
 * runner (cmd_bench.c) and its reports (bench_report.c). */
#ifndef BC_TOOLS_BENCH_H
#define BC_TOOLS_BENCH_H

#include <stdio.h>

#include "barecuda.h"
#include "ref.h"
#include "sweep.h"

#define BC_BENCH_PER_GRAPH 50 /* GEMMs per graph replay, as bench_cublas.py */

typedef struct bench_opts {
    bc_sweep_item *items;     /* malloc'd: the listed shapes (epilogue `epi`) or the drawn sweep */
    int count;
    bc_dtype ab, out;         /* listed shapes: the types of every shape (without --epilogue) */
    int epi_set;              /* listed shapes: --epilogue given (its types replace --dtype/--out) */
    bc_epi epi;               /* listed shapes: the epilogue of every shape */
    int replays, warmup, json;
    const char *config;       /* forced configuration, or NULL */
    uint32_t split_k;         /* forced split, 0 = the rule */
    uint32_t stream_k;        /* --stream-k: plans may take their last round by stream-K */
    int sweep;                /* 1: the items are a sweep drawn from `sp` */
    bc_sweep_params sp;
    int list_only;            /* --list: print the sweep and stop (no device) */
    const char *csv;          /* --csv FILE, or NULL */
} bench_opts;

/* Parses argv into *o (o->items malloc'd; bench_opts_free releases it).
 * Returns 0, 1 after printing --help, or -1 after printing the problem. */
int bench_opts_parse(int argc, char **argv, bench_opts *o);
void bench_opts_free(bench_opts *o);
void bench_usage(FILE *f);

/* The types and epilogue of item i: the sweep's variant, or plain with the
 * listed-shape types. */
bc_epi_desc bench_item_desc(const bench_opts *o, int i);

typedef enum bench_verdict {
    BENCH_NOT_RUN = 0,
    BENCH_PASS,     /* checked, then timed */
    BENCH_FAIL,     /* wrong result: no time */
    BENCH_SKIP,     /* the forced configuration or split cannot take the shape */
} bench_verdict;

typedef struct bench_row {
    int index;
    bc_shape s;
    bc_epi_desc e;
    int sets;
    bc_gemm_plan_info info;
    bench_verdict verdict;
    const char *failed_check; /* "direct launch" or "graph replay" */
    char skip_reason[256];
    bc_ref_error err;
    int64_t rows_checked;
    double med_us, min_us, max_us, tflops, gbps, floor_us, pct_floor;
} bench_row;

/* Reports. The header names the device; rows print as they finish. */
void bench_print_header(const bench_opts *o, bc_device *dev);
void bench_print_row(const bench_opts *o, const bench_row *r);
void bench_print_json(const bench_opts *o, bc_device *dev, const bench_row *rows, int n, const char *error);
/* Writes every finished row to o->csv (sm_count: the device's, a column of
 * every row); 0, or -1 after printing why. */
int bench_write_csv(const bench_opts *o, const bench_row *rows, int n, int sm_count);
/* The drawn sweep, one "index MxNxK tag" line each (as tools/sweep.py prints it). */
void bench_print_list(const bench_opts *o);

#endif
