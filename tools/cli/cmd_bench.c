/* barecuda bench: device time per GEMM over a list of shapes, timed exactly
 * the way tools/bench_cublas.py times cuBLAS (anchors.md, "How to compare
 * with cuBLAS"), so that the two can be divided:
 *
 *   per shape: S rotating input sets (A, B, D; S = max(2, min(8, 400 MiB /
 *   set bytes))), random N(0,1) inputs, one plan per set; ONE graph of 50
 *   launches cycling through the plans; warm-up replays; then R replays, each
 *   between two events and waited for; time per GEMM = replay time / 50;
 *   median = element R/2 of the sorted replays (bench_cublas.py's choice).
 *
 * Before any timing each shape is checked twice against the fp64 CPU
 * reference on poisoned outputs: a direct launch of set 0 (every row of a small
 * shape, else 8 sampled rows),
 * then the graph's first replay (one random row of every set). A shape that
 * fails prints FAIL and no time, and the command exits BC_EXIT_VERIFY. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "gemm_check.h"
#include "ref.h"
#include "shapes.h"
#include "stats.h"

#define PER_GRAPH 50                     /* GEMMs per graph replay, as bench_cublas.py */
#define MAX_SETS 8
#define SET_SHIFT 4099                   /* elements between the host sources of consecutive sets */
#define CHECK_ROWS 8                     /* sampled rows of the direct-launch check (large shapes) */
#define WAIT_NS (120ull * 1000000000ull) /* bound on any one wait */

typedef struct bench_opts {
    bc_shape shapes[BC_SHAPES_MAX];
    int count;
    bc_dtype ab, out;
    int replays, warmup, json;
    const char *config;
    uint32_t split_k;
} bench_opts;

typedef struct bench_row {
    bc_shape s;
    int sets;
    bc_gemm_plan_info info;
    int done;                 /* the row has results (check verdict, and times if it passed) */
    int passed;
    const char *failed_check; /* "direct launch" or "graph replay" */
    bc_ref_error err;
    int64_t rows_checked;
    double med_us, min_us, max_us, tflops, gbps;
} bench_row;

typedef struct bench_ctx {
    const bench_opts *o;
    bc_device *dev;
    bc_stream *s;
    bc_event *e0, *e1;
    uint16_t *pool_a, *pool_b; /* random host inputs; set i of a shape reads from element i * SET_SHIFT */
    void *row_buf;             /* one output row */
    double *ref_buf;           /* one reference row */
    double *times;             /* replays */
    bc_rng rng;
    char error[768];           /* the first failure, for --json */
} bench_ctx;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: barecuda bench [--shapes MxNxK[,MxNxK...]] [--dtype bf16|f16] [--out bf16|f16|f32]\n"
            "                      [--replays R] [--warmup W] [--config NAME] [--split S] [--json]\n"
            "Device time per GEMM (D = A[MxK] . B[NxK]^T), timed like tools/bench_cublas.py: per shape a graph\n"
            "of %d launches over 2..8 rotating input sets (N(0,1) data), W warm-up replays (default 3), then R\n"
            "replays (default 20) each between two events; per GEMM = replay / %d; median, min, max.\n"
            "Default shapes: the issue-5 list. Every shape is first checked against the CPU reference on\n"
            "poisoned outputs (direct launch, then the graph); a wrong result prints FAIL, no time, exit %d.\n",
            PER_GRAPH, PER_GRAPH, BC_EXIT_VERIFY);
}

static int parse(int argc, char **argv, bench_opts *o)
{
    static const struct option longs[] = {
        {"shapes", 1, 0, 's'}, {"dtype", 1, 0, 't'},  {"out", 1, 0, 'o'},  {"replays", 1, 0, 'r'},
        {"warmup", 1, 0, 'w'}, {"config", 1, 0, 'C'}, {"json", 0, 0, 'j'}, {"help", 0, 0, 'h'},
        {"split", 1, 0, 'S'},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    memcpy(o->shapes, bc_shapes_default, (size_t)bc_shapes_default_count * sizeof o->shapes[0]);
    o->count = bc_shapes_default_count;
    o->ab = o->out = BC_DTYPE_BF16;
    o->replays = 20;
    o->warmup = 3;
    int c, out_set = 0;
    long long v = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 's':
            if ((o->count = bc_shapes_parse(optarg, o->shapes, BC_SHAPES_MAX)) < 1)
                return fprintf(stderr, "barecuda bench: bad --shapes '%s' (want MxNxK[,MxNxK...], each >= 1)\n",
                               optarg), -1;
            break;
        case 't':
            if (bc_cli_parse_dtype(optarg, &o->ab) || o->ab == BC_DTYPE_F32)
                return fprintf(stderr, "barecuda bench: bad --dtype '%s' (bf16 or f16)\n", optarg), -1;
            break;
        case 'o':
            if (bc_cli_parse_dtype(optarg, &o->out))
                return fprintf(stderr, "barecuda bench: bad --out '%s' (bf16, f16 or f32)\n", optarg), -1;
            out_set = 1;
            break;
        case 'r':
            if (bc_cli_parse_ll(optarg, 1, 100000, &v))
                return fprintf(stderr, "barecuda bench: bad --replays '%s' (1..100000)\n", optarg), -1;
            o->replays = (int)v;
            break;
        case 'w':
            if (bc_cli_parse_ll(optarg, 0, 100000, &v))
                return fprintf(stderr, "barecuda bench: bad --warmup '%s' (0..100000)\n", optarg), -1;
            o->warmup = (int)v;
            break;
        case 'C': o->config = optarg; break;
        case 'S':
            if (bc_cli_parse_ll(optarg, 0, 16, &v))
                return fprintf(stderr, "barecuda bench: bad --split '%s' (0 = the rule, 1 = none, 2..16)\n", optarg), -1;
            o->split_k = (uint32_t)v;
            break;
        case 'j': o->json = 1; break;
        case 'h': usage(stdout); exit(BC_EXIT_OK);
        default:
            return fprintf(stderr, "barecuda bench: unknown option or missing value: '%s'\n", argv[optind - 1]), -1;
        }
    }
    if (optind < argc)
        return fprintf(stderr, "barecuda bench: unexpected argument '%s'\n", argv[optind]), -1;
    if (!out_set)
        o->out = o->ab; /* as bench_cublas.py: the output type defaults to the input type */
    return 0;
}

static size_t round_up(size_t x) { return (x + BC_MEM_ALIGN - 1) / BC_MEM_ALIGN * BC_MEM_ALIGN; }

/* The arena the largest shape needs: its sets, and slack for the pool's own
 * rounding. */
static size_t arena_bytes(const bench_opts *o)
{
    const size_t ab = bc_dtype_bytes(o->ab), ob = bc_dtype_bytes(o->out);
    size_t need = 0;
    for (int i = 0; i < o->count; i++) {
        const bc_shape *s = &o->shapes[i];
        size_t set = round_up((size_t)(s->m * s->k) * ab) + round_up((size_t)(s->n * s->k) * ab) +
                     round_up((size_t)(s->m * s->n) * ob);
        size_t all = (size_t)bc_bench_sets(bc_shape_bytes(s, (unsigned)ab, (unsigned)ob)) * set;
        need = all > need ? all : need;
    }
    return need + (64u << 20);
}

/* Records and prints the first failure: which shape, which call, the status and its detail. */
static bc_status fail(bench_ctx *c, const bc_shape *s, const char *call, bc_status st)
{
    char where[512];
    if (s)
        snprintf(where, sizeof where, "%lldx%lldx%lld: %s", (long long)s->m, (long long)s->n, (long long)s->k, call);
    else
        snprintf(where, sizeof where, "%s", call);
    bc_cli_report_call("bench", where, st);
    if (c->error[0] == '\0') {
        bc_error_detail d;
        bc_last_error(&d);
        snprintf(c->error, sizeof c->error, "%s failed: %s%s%s", where, bc_status_string(st),
                 d.status == st && d.message[0] ? ": " : "", d.status == st ? d.message : "");
    }
    return st;
}

#define TRY(expr)                                   \
    do {                                            \
        st = (expr);                                \
        if (st) {                                   \
            fail(c, sh, #expr, st);                 \
            goto done;                              \
        }                                           \
    } while (0)

/* For helpers that already reported their failure through TRY. */
#define PROPAGATE(expr)                             \
    do {                                            \
        st = (expr);                                \
        if (st)                                     \
            goto done;                              \
    } while (0)

/* Check of the direct launch of plan 0 on a poisoned D: all rows, or CHECK_ROWS sampled ones. */
static bc_status check_direct(bench_ctx *c, const bc_shape *sh, const bc_gemm_desc *d, const bc_gemm_plan *p,
                              bench_row *row)
{
    const size_t sd = (size_t)(d->m * d->n) * bc_dtype_bytes(d->d_type);
    bc_status st = BC_OK;
    TRY(bc_memset_d8_async(c->s, d->d, 0xFF, sd)); /* NaN in every output type */
    TRY(bc_gemm_launch(p, c->s));
    TRY(bc_stream_wait(c->s, WAIT_NS));
    const int64_t rows = bc_check_row_count(d, CHECK_ROWS);
    for (int64_t i = 0; i < rows; i++) {
        int64_t r = rows == d->m ? i : bc_check_row_index(d->m, (int)i, (int)rows, &c->rng);
        TRY(bc_check_row(c->dev, d, c->pool_a, c->pool_b, r, c->row_buf, c->ref_buf, &row->err));
        row->rows_checked++;
    }
done:
    return st;
}

/* Check of the graph's first replay on poisoned outputs: one random row of every set. */
static bc_status check_graph(bench_ctx *c, const bc_shape *sh, const bc_gemm_desc *d, int sets, const bc_graph *g,
                             bench_row *row)
{
    const size_t sd = (size_t)(d[0].m * d[0].n) * bc_dtype_bytes(d[0].d_type);
    bc_status st = BC_OK;
    for (int i = 0; i < sets; i++)
        TRY(bc_memset_d8_async(c->s, d[i].d, 0xFF, sd));
    TRY(bc_graph_launch(g, c->s));
    TRY(bc_stream_wait(c->s, WAIT_NS));
    for (int i = 0; i < sets; i++) {
        int64_t r = (int64_t)(bc_rng_next(&c->rng) % (uint64_t)d[i].m);
        TRY(bc_check_row(c->dev, &d[i], c->pool_a + (size_t)i * SET_SHIFT, c->pool_b + (size_t)i * SET_SHIFT, r,
                         c->row_buf, c->ref_buf, &row->err));
        row->rows_checked++;
    }
done:
    return st;
}

static bc_status time_graph(bench_ctx *c, const bc_shape *sh, const bc_graph *g, bench_row *row)
{
    bc_status st = BC_OK;
    for (int w = 0; w < c->o->warmup; w++)
        TRY(bc_graph_launch(g, c->s));
    TRY(bc_stream_wait(c->s, WAIT_NS));
    for (int r = 0; r < c->o->replays; r++) {
        float ms = 0.0f;
        TRY(bc_event_record(c->e0, c->s));
        TRY(bc_graph_launch(g, c->s));
        TRY(bc_event_record(c->e1, c->s));
        TRY(bc_stream_wait(c->s, WAIT_NS));
        TRY(bc_event_elapsed_ms(c->e0, c->e1, &ms));
        c->times[r] = 1e3 * (double)ms / PER_GRAPH;
    }
    bc_stats_sort_f64(c->times, (size_t)c->o->replays);
    const int n = c->o->replays;
    const size_t ab = bc_dtype_bytes(c->o->ab), ob = bc_dtype_bytes(c->o->out);
    row->med_us = c->times[n / 2];
    row->min_us = c->times[0];
    row->max_us = c->times[n - 1];
    row->tflops = row->med_us > 0 ? 2.0 * (double)sh->m * (double)sh->n * (double)sh->k / (row->med_us * 1e6) : 0.0;
    row->gbps = row->med_us > 0 ? (double)bc_shape_bytes(sh, (unsigned)ab, (unsigned)ob) / (row->med_us * 1e3) : 0.0;
done:
    return st;
}

static bc_status run_shape(bench_ctx *c, const bc_shape *sh, bench_row *row)
{
    const bench_opts *o = c->o;
    const size_t ab = bc_dtype_bytes(o->ab), ob = bc_dtype_bytes(o->out);
    const size_t sa = (size_t)(sh->m * sh->k) * ab, sb = (size_t)(sh->n * sh->k) * ab,
                 sd = (size_t)(sh->m * sh->n) * ob;
    const int sets = bc_bench_sets(bc_shape_bytes(sh, (unsigned)ab, (unsigned)ob));
    bc_gemm_desc d[MAX_SETS];
    bc_gemm_plan *plan[MAX_SETS] = {0};
    const bc_gemm_plan *list[PER_GRAPH];
    bc_graph *g = NULL;
    bc_status st = BC_OK;
    row->s = *sh;
    row->sets = sets;
    for (int i = 0; i < sets; i++) {
        bc_gemm_desc_default(&d[i]);
        d[i].m = sh->m, d[i].n = sh->n, d[i].k = sh->k;
        d[i].ab_type = o->ab, d[i].d_type = o->out;
        d[i].config = o->config;
        d[i].split_k = o->split_k;
    }
    for (int i = 0; i < sets; i++) {
        TRY(bc_mem_alloc(c->dev, sa, &d[i].a));
        TRY(bc_mem_alloc(c->dev, sb, &d[i].b));
        TRY(bc_mem_alloc(c->dev, sd, &d[i].d));
        TRY(bc_memcpy_htod(c->dev, d[i].a, c->pool_a + (size_t)i * SET_SHIFT, sa));
        TRY(bc_memcpy_htod(c->dev, d[i].b, c->pool_b + (size_t)i * SET_SHIFT, sb));
        TRY(bc_gemm_plan_create(c->dev, &d[i], &plan[i]));
    }
    TRY(bc_gemm_plan_query(plan[0], &row->info));
    PROPAGATE(check_direct(c, sh, &d[0], plan[0], row));
    if (!bc_check_passed(&d[0], &row->err)) {
        row->failed_check = "direct launch";
        goto verdict;
    }
    for (int j = 0; j < PER_GRAPH; j++)
        list[j] = plan[j % sets];
    TRY(bc_graph_create(c->s, list, PER_GRAPH, &g));
    PROPAGATE(check_graph(c, sh, d, sets, g, row));
    if (!bc_check_passed(&d[0], &row->err)) {
        row->failed_check = "graph replay";
        goto verdict;
    }
    PROPAGATE(time_graph(c, sh, g, row));
    row->passed = 1;
verdict:
    row->done = 1;
done:
    bc_graph_destroy(g);
    for (int i = 0; i < sets; i++) {
        bc_gemm_plan_destroy(plan[i]);
        if (d[i].a) bc_mem_free(c->dev, d[i].a);
        if (d[i].b) bc_mem_free(c->dev, d[i].b);
        if (d[i].d) bc_mem_free(c->dev, d[i].d);
    }
    return st;
}

static void print_header(const bench_ctx *c)
{
    bc_device_info di;
    bc_device_query(c->dev, &di);
    printf("barecuda bench: %s (%d SMs, %s); %s -> %s; graph of %d GEMMs over rotating input sets, %d warm-up + "
           "%d timed replays; per GEMM = replay / %d\n",
           di.name, di.sm_count, di.image_arch, bc_cli_dtype_name(c->o->ab), bc_cli_dtype_name(c->o->out), PER_GRAPH,
           c->o->warmup, c->o->replays, PER_GRAPH);
    printf("%-18s %-26s %5s %3s %5s %4s %-5s %10s %10s %10s %8s %8s\n", "shape", "config", "grid", "clu", "split",
           "sets", "check", "median_us", "min_us", "max_us", "TFLOP/s", "GB/s");
    fflush(stdout);
}

static void print_row(const bench_row *r)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)r->s.m, (long long)r->s.n, (long long)r->s.k);
    printf("%-18s %-26s %5u %3u %5u %4d ", shape, r->info.config ? r->info.config : "?", r->info.grid_x,
           r->info.cluster_x, r->info.split_k, r->sets);
    if (r->passed)
        printf("%-5s %10.2f %10.2f %10.2f %8.1f %8.0f\n", "PASS", r->med_us, r->min_us, r->max_us, r->tflops, r->gbps);
    else
        printf("FAIL  (%s: %zu of %zu checked elements out of tolerance, %zu unwritten, rel frobenius %.3e; no "
               "time reported)\n",
               r->failed_check, r->err.bad, r->err.checked, r->err.nonfinite, bc_ref_rel_frobenius(&r->err));
    if (!r->passed)
        bc_check_print_mismatches(stdout, "    ", &r->err);
    fflush(stdout);
}

static void print_json(const bench_ctx *c, const bench_row *rows, int n)
{
    bc_device_info di;
    memset(&di, 0, sizeof di);
    if (c->dev)
        bc_device_query(c->dev, &di);
    printf("{\"tool\":\"barecuda bench\",\"device\":");
    bc_cli_json_string(stdout, di.name);
    printf(",\"sm_count\":%d,\"image\":", di.sm_count);
    bc_cli_json_string(stdout, di.image_arch ? di.image_arch : "");
    printf(",\"dtype\":\"%s\",\"out\":\"%s\",\"per_graph\":%d,\"warmup\":%d,\"replays\":%d,\"median\":\"sorted[R/2]\","
           "\"rows\":[",
           bc_cli_dtype_name(c->o->ab), bc_cli_dtype_name(c->o->out), PER_GRAPH, c->o->warmup, c->o->replays);
    for (int i = 0, printed = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        if (!r->done)
            continue;
        printf("%s{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"config\":", printed++ ? "," : "", (long long)r->s.m,
               (long long)r->s.n, (long long)r->s.k);
        bc_cli_json_string(stdout, r->info.config ? r->info.config : "");
        printf(",\"grid\":%u,\"block\":%u,\"cluster\":%u,\"split_k\":%u,\"tiles\":%u,\"sets\":%d,\"verified\":%s,"
               "\"failed_check\":",
               r->info.grid_x, r->info.block_x, r->info.cluster_x, r->info.split_k, r->info.tiles, r->sets,
               r->passed ? "true" : "false");
        if (r->failed_check)
            bc_cli_json_string(stdout, r->failed_check);
        else
            printf("null");
        printf(",\"rows_checked\":%lld,\"bad\":%zu,\"unwritten\":%zu,\"rel_frobenius\":%.3e", (long long)r->rows_checked,
               r->err.bad, r->err.nonfinite, bc_ref_rel_frobenius(&r->err));
        if (r->passed)
            printf(",\"median_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,\"tflops\":%.2f,\"gbps\":%.1f}", r->med_us,
                   r->min_us, r->max_us, r->tflops, r->gbps);
        else
            printf(",\"median_us\":null,\"min_us\":null,\"max_us\":null,\"tflops\":null,\"gbps\":null}");
    }
    printf("],\"error\":");
    if (c->error[0])
        bc_cli_json_string(stdout, c->error);
    else
        printf("null");
    printf("}\n");
}

/* Host buffers: two pools of random inputs long enough for every shape's
 * largest operand at the last set's offset; one output row and its reference. */
static bc_status host_setup(bench_ctx *c)
{
    size_t elems = 0, ncols = 0;
    for (int i = 0; i < c->o->count; i++) {
        const bc_shape *s = &c->o->shapes[i];
        size_t e = (size_t)((s->m > s->n ? s->m : s->n) * s->k);
        elems = e > elems ? e : elems;
        ncols = (size_t)s->n > ncols ? (size_t)s->n : ncols;
    }
    elems += (size_t)(MAX_SETS - 1) * SET_SHIFT;
    c->pool_a = malloc(elems * sizeof *c->pool_a);
    c->pool_b = malloc(elems * sizeof *c->pool_b);
    c->row_buf = malloc(ncols * 4);
    c->ref_buf = malloc(ncols * sizeof *c->ref_buf);
    c->times = malloc((size_t)c->o->replays * sizeof *c->times);
    if (!c->pool_a || !c->pool_b || !c->row_buf || !c->ref_buf || !c->times) {
        snprintf(c->error, sizeof c->error, "cannot allocate %zu bytes of host input pools", 2 * elems * 2);
        fprintf(stderr, "barecuda bench: %s\n", c->error);
        return BC_ERR_OUT_OF_HOST_MEMORY;
    }
    bc_ref_fill_normal(c->pool_a, c->o->ab, elems, 1.0, &c->rng);
    bc_ref_fill_normal(c->pool_b, c->o->ab, elems, 1.0, &c->rng);
    return BC_OK;
}

int bc_cmd_bench(int argc, char **argv)
{
    bench_opts o;
    if (parse(argc, argv, &o)) {
        usage(stderr);
        return BC_EXIT_USAGE;
    }
    bench_ctx c;
    memset(&c, 0, sizeof c);
    c.o = &o;
    c.rng.s = bc_ref_seed();
    bench_row *rows = calloc((size_t)o.count, sizeof *rows);
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.device_arena_bytes = arena_bytes(&o);
    bc_status st = bc_device_open(&cfg, &c.dev);
    if (st) { /* the one-line message every command prints for a missing driver or device */
        bc_cli_report("bench", st);
        free(rows);
        return bc_cli_exit_code(st);
    }
    const bc_shape *sh = NULL;
    if (rows == NULL)
        st = fail(&c, NULL, "calloc(rows)", BC_ERR_OUT_OF_HOST_MEMORY);
    if (!st) st = host_setup(&c);
    if (!st && (st = bc_stream_create(c.dev, 0, &c.s, NULL))) fail(&c, sh, "bc_stream_create", st);
    if (!st && (st = bc_event_create(c.dev, &c.e0))) fail(&c, sh, "bc_event_create", st);
    if (!st && (st = bc_event_create(c.dev, &c.e1))) fail(&c, sh, "bc_event_create", st);
    if (!st && !o.json)
        print_header(&c);
    int n = 0, failed = 0;
    for (; !st && n < o.count; n++) {
        st = run_shape(&c, &o.shapes[n], &rows[n]);
        if (rows[n].done && !o.json)
            print_row(&rows[n]);
        failed += rows[n].done && !rows[n].passed;
    }
    if (o.json && rows)
        print_json(&c, rows, n); /* the rows that finished */
    bc_device_close(c.dev);
    free(c.pool_a), free(c.pool_b), free(c.row_buf), free(c.ref_buf), free(c.times), free(rows);
    if (st)
        return bc_cli_exit_code(st);
    return failed ? BC_EXIT_VERIFY : BC_EXIT_OK;
}
