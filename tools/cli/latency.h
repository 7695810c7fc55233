/* barecuda latency: the measured series and what the report writers need
 * (cmd_latency.c measures, latency_resident.c measures the resident
 * executor, latency_report.c prints and writes files). */
#ifndef BC_TOOLS_LATENCY_H
#define BC_TOOLS_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "barecuda.h"
#include "mlp.h"
#include "ref.h"
#include "stats.h"

typedef enum lat_kind {
    LAT_E2E = 0,    /* host call -> completion seen by the host */
    LAT_LAUNCH = 1, /* the launch call alone (a spin wait after each, untimed) */
} lat_kind;

/* Reports a failing call as "barecuda latency: <expr> failed: ..." and returns its status. */
#define LAT_TRY(expr)                                      \
    do {                                                   \
        bc_status st_ = (expr);                            \
        if (st_) {                                         \
            bc_cli_report_call("latency", #expr, st_);     \
            return st_;                                    \
        }                                                  \
    } while (0)

/* lat_series.resident: how a resident step is measured */
enum {
    LAT_RES_NONE = 0,     /* not resident: a launch */
    LAT_RES_DEVICE = 1,   /* bc_resident_step; input and output stay in device memory */
    LAT_RES_MEMCPY = 2,   /* bc_memcpy_htod of the input, the step, bc_memcpy_dtoh of the output */
    LAT_RES_ZEROCOPY = 3, /* the kernel copies the input from, and the output to, pinned host memory */
};

typedef struct lat_series {
    char mode[24];          /* CSV "mode": stream, graph, stream-1x1x8, graph-1x1x8, empty-kernel,
                               resident, resident-memcpy, resident-zerocopy */
    char policy[16];        /* CSV "policy": spin, yield, block, or launch_call */
    int graph;              /* 1: bc_graph_launch, 0: bc_gemm_launch */
    int floor;              /* 1: the 1x1x8 plan; 2: an empty kernel, raw (bc_selftest_empty_launch) */
    lat_kind kind;
    int resident;           /* LAT_RES_*: a resident step (or, LAT_LAUNCH, its ring alone) */
    bc_sched_policy wait;   /* the stream's wait policy while measuring */
    uint64_t *ns;           /* samples in run order (preallocated) */
    uint64_t *sorted;       /* the same, ascending (preallocated) */
    size_t n;
    bc_stats_summary sum;
} lat_series;

/* The resident executors of a run and the step's input and output. */
typedef struct lat_resident {
    bc_device *dev;
    bc_resident *exec;            /* the plans, input and output in device memory */
    bc_resident *zc;              /* the same plans with the input and output copies (--io) */
    bc_devptr in, out;            /* the step's first input and last output, device memory */
    size_t in_bytes, out_bytes;
    void *host_in, *host_out;     /* pinned: the copies' host side */
    bc_resident_info info;
} lat_resident;

/* Creates the executors (zc too when `io`); host_in receives in_bytes of
 * the input's current contents. */
bc_status lat_resident_create(bc_device *dev, const bc_gemm_plan *const *seq, int n, const bc_resident_config *cfg,
                              int io, lat_resident *r);

/* Starts the executor the series uses, runs warm-up runs then `runs`
 * samples into s->ns, stops it. The stream's wait policy is the series'. */
bc_status lat_resident_measure(lat_resident *r, bc_stream *st, lat_series *s, int warmup, int runs, uint64_t timeout);

/* One step of the device (zc = 0) or zero-copy executor, started and
 * stopped around it: for the checks before timing. */
bc_status lat_resident_once(lat_resident *r, bc_stream *st, int zc, uint64_t timeout);

/* The command line (cmd_latency.c parses it). */
typedef struct lat_opts {
    int64_t m, n, k;
    bc_dtype ab, out;
    int runs, warmup;
    int modes;    /* bit 0 stream, bit 1 graph, bit 2 resident */
    int policies; /* bit p: bc_sched_policy p */
    int cpu, priority, json, check;
    uint64_t timeout_ns;
    const char *csv, *svg, *config, *mlp;
    uint32_t split_k[BC_MLP_MAX_LAYERS]; /* --split: one value for every plan, or one a layer with --mlp */
    int splits;                          /* values given (0: none) */
    int io;                              /* the resident step's input and output by copy calls and by the kernel */
    bc_resident_config res;              /* --sm-count, --spin-ns, --max-sleep-ns */
    int64_t batch, width[BC_MLP_MAX_LAYERS + 1];
    int layers;
} lat_opts;

/* One run: the device, the workload and its checks (latency_setup.c). */
typedef struct lat_ctx {
    const lat_opts *o;
    bc_device *dev;
    bc_stream *s;
    bc_gemm_desc d, fd;         /* the plan's and the 1x1x8 floor plan's descriptors */
    bc_gemm_plan *plan, *fplan;
    bc_graph *graph, *fgraph;
    bc_mlp mlp;                 /* --mlp */
    const bc_gemm_plan *seq[BC_MLP_MAX_LAYERS]; /* the plans a step runs, in order */
    int nseq;
    lat_resident rs;
    void *host_a, *host_b, *row_buf;
    double *ref_buf;
    bc_rng rng;
    int64_t rows_checked;
    int verify_failed;
} lat_ctx;

/* Creates the stream, the workload (the GEMM or the mlp), the floor plan,
 * their graphs and the resident executors, then runs each way once and
 * checks it against the CPU reference unless --no-check (c->verify_failed
 * when wrong). */
bc_status lat_setup(lat_ctx *c, bc_device_info *di, int *prio_eff);

typedef struct lat_report {
    const char *device;
    int sm_count;
    const char *image;
    int64_t m, n, k;
    const char *network;      /* "mlp B:W0,...,WL", or NULL for the one GEMM m x n x k */
    const char *layer_plans;  /* mlp: each layer's configuration, "/S" when split S ways; else NULL */
    bc_dtype ab, out;
    bc_gemm_plan_info plan, floor_plan;
    const bc_resident_info *resident; /* NULL: no resident series */
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
