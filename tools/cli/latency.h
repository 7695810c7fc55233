/* barecuda latency: the measured series and what the report writers need
 * (cmd_latency.c measures, latency_report.c prints and writes files). */
#ifndef BC_TOOLS_LATENCY_H
#define BC_TOOLS_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "barecuda.h"
#include "stats.h"

typedef enum lat_kind {
    LAT_E2E = 0,    /* host call -> completion seen by the host */
    LAT_LAUNCH = 1, /* the launch call alone (a spin wait after each, untimed) */
} lat_kind;

typedef struct lat_series {
    char mode[24];          /* CSV "mode": stream, graph, stream-1x1x8, graph-1x1x8, empty-kernel */
    char policy[16];        /* CSV "policy": spin, yield, block, or launch_call */
    int graph;              /* 1: bc_graph_launch, 0: bc_gemm_launch */
    int floor;              /* 1: the 1x1x8 plan; 2: an empty kernel, raw (bc_selftest_empty_launch) */
    lat_kind kind;
    bc_sched_policy wait;   /* the stream's wait policy while measuring */
    uint64_t *ns;           /* samples in run order (preallocated) */
    uint64_t *sorted;       /* the same, ascending (preallocated) */
    size_t n;
    bc_stats_summary sum;
} lat_series;

typedef struct lat_report {
    const char *device;
    int sm_count;
    const char *image;
    int64_t m, n, k;
    bc_dtype ab, out;
    bc_gemm_plan_info plan, floor_plan;
    int runs, warmup;
    int cpu;                  /* -1: not pinned */
    int prio_asked, prio_effective, prio_greatest, prio_least;
    int checked;              /* 1: results checked against the CPU reference */
    int64_t rows_checked;
    lat_series *series;
    int count;
} lat_report;

void lat_print_text(const lat_report *r);
void lat_print_json(const lat_report *r);
/* 0, or -1 with a message on stderr. */
int lat_write_csv(const lat_report *r, const char *path);
int lat_write_svg(const lat_report *r, const char *path);

#endif
