/* barecuda bench: device time per GEMM over a list of shapes or a drawn
 * sweep (sweep.h), timed exactly the way tools/bench_cublas.py times cuBLAS
 * (anchors.md, "How to compare with cuBLAS"), so that the two can be divided:
 *
 *   per shape: S rotating input sets (A, B, D, and C and bias when the
 *   epilogue reads them; S = max(2, min(8, 400 MiB / set bytes))), random
 *   N(0,1) inputs, one plan per set; ONE graph of 50 launches cycling through
 *   the plans; warm-up replays; then R replays, each between two events and
 *   waited for; time per GEMM = replay time / 50; median = element R/2 of the
 *   sorted replays (bench_cublas.py's choice).
 *
 * Before any timing each shape is checked twice against the fp64 CPU
 * reference (epilogue included): a direct launch of set 0 on a poisoned D
 * (every row of a small shape, else 8 sampled rows), then a graph replay (one
 * random row of every set): the timed graph on poisoned outputs, or, when C
 * is D (the timed graph applies each set's GEMM to its own output several
 * times), a graph of one launch per set after C is uploaded again. A shape
 * that fails prints FAIL and no time, and the command exits BC_EXIT_VERIFY. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "cli_util.h"
#include "gemm_check.h"
#include "shapes.h"
#include "stats.h"

#define PER_GRAPH BC_BENCH_PER_GRAPH
#define MAX_SETS 8
#define SET_SHIFT 4099                   /* elements between the host sources of consecutive sets */
#define CHECK_ROWS 8                     /* sampled rows of the direct-launch check (large shapes) */
#define WAIT_NS (120ull * 1000000000ull) /* bound on any one wait */

/* Random host data of one type: A rows from a, B rows from b, C and bias
 * from c; set i of a shape reads from element i * SET_SHIFT. */
typedef struct host_pool {
    void *a, *b, *c;
    size_t ab_elems, c_elems;
} host_pool;

typedef struct bench_ctx {
    const bench_opts *o;
    bc_device *dev;
    bc_stream *s;
    bc_event *e0, *e1;
    host_pool pool[3];         /* by bc_dtype */
    void *row_buf;             /* one output row */
    double *ref_buf;           /* one reference row */
    double *times;             /* replays */
    bc_rng rng;
    char error[768];           /* the first failure, for --json */
} bench_ctx;

/* One shape's sets: descriptors (device buffers), host sources, plans. */
typedef struct shape_sets {
    int sets;
    bc_epi_desc e;
    bc_gemm_desc d[MAX_SETS];
    bc_devptr c_buf[MAX_SETS]; /* C when separate from D */
    const void *ha[MAX_SETS], *hb[MAX_SETS], *hc[MAX_SETS], *hbias[MAX_SETS];
    bc_gemm_plan *plan[MAX_SETS];
} shape_sets;

static size_t round_up(size_t x) { return (x + BC_MEM_ALIGN - 1) / BC_MEM_ALIGN * BC_MEM_ALIGN; }

static int reads_c(const bc_epi_desc *e) { return e->beta != 0.0f; }

/* The arena the largest shape needs: its sets, and slack for the pool's own
 * rounding. */
static size_t arena_bytes(const bench_opts *o)
{
    size_t need = 0;
    for (int i = 0; i < o->count; i++) {
        const bc_shape *s = &o->items[i].s;
        const bc_epi_desc e = bench_item_desc(o, i);
        const size_t ab = bc_dtype_bytes(e.ab), ob = bc_dtype_bytes(e.out);
        size_t set = round_up((size_t)(s->m * s->k) * ab) + round_up((size_t)(s->n * s->k) * ab) +
                     round_up((size_t)(s->m * s->n) * ob);
        if (reads_c(&e) && !e.c_alias)
            set += round_up((size_t)(s->m * s->n) * ob);
        if (e.bias)
            set += round_up((size_t)s->n * ob);
        if (o->stream_k) /* a stream-K workspace a set: 2 slots of a 128 x 128 f32 tile an SM, up to 160 SMs */
            set += round_up((size_t)2u * 160u * 128u * 128u * 4u + 4096u);
        size_t all = (size_t)bc_bench_sets(bc_sweep_set_bytes(s, &e)) * set;
        need = all > need ? all : need;
    }
    return need + (64u << 20);
}

/* Records and prints the first failure: which shape, which call, the status and its detail. */
static bc_status fail(bench_ctx *c, const bc_shape *s, const char *call, bc_status st)
{
    char where[512];
    const int len = (int)strcspn(call, "("); /* the function's name, not the expression (TRY) */
    if (s)
        snprintf(where, sizeof where, "%lldx%lldx%lld: %.*s", (long long)s->m, (long long)s->n, (long long)s->k,
                 len, call);
    else
        snprintf(where, sizeof where, "%.*s", len, call);
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

/* D of set i before a checked launch: NaN poison in every output type, or
 * C again when C is D. */
static bc_status prepare_d(bench_ctx *c, const bc_shape *sh, const shape_sets *ss, int i)
{
    const size_t sd = (size_t)(sh->m * sh->n) * bc_dtype_bytes(ss->e.out);
    bc_status st = BC_OK;
    if (ss->e.c_alias)
        TRY(bc_memcpy_htod(c->dev, ss->d[i].d, ss->hc[i], sd));
    else
        TRY(bc_memset_d8_async(c->s, ss->d[i].d, 0xFF, sd));
done:
    return st;
}

static bc_status check_one(bench_ctx *c, const bc_shape *sh, const shape_sets *ss, int i, int64_t r, bench_row *row)
{
    bc_status st = BC_OK;
    TRY(bc_check_row_epi(c->dev, &ss->d[i], ss->ha[i], ss->hb[i], ss->hc[i], ss->hbias[i], r, c->row_buf,
                         c->ref_buf, &row->err));
    row->rows_checked++;
done:
    return st;
}

/* Check of the direct launch of plan 0: all rows, or CHECK_ROWS sampled ones. */
static bc_status check_direct(bench_ctx *c, const bc_shape *sh, const shape_sets *ss, bench_row *row)
{
    bc_status st = BC_OK;
    PROPAGATE(prepare_d(c, sh, ss, 0));
    TRY(bc_gemm_launch(ss->plan[0], c->s));
    TRY(bc_stream_wait(c->s, WAIT_NS));
    const int64_t rows = bc_check_row_count(&ss->d[0], CHECK_ROWS);
    for (int64_t i = 0; i < rows; i++) {
        int64_t r = rows == sh->m ? i : bc_check_row_index(sh->m, (int)i, (int)rows, &c->rng);
        PROPAGATE(check_one(c, sh, ss, 0, r, row));
    }
done:
    return st;
}

/* Check of a graph replay: one random row of every set. */
static bc_status check_graph(bench_ctx *c, const bc_shape *sh, const shape_sets *ss, const bc_graph *timed,
                             bench_row *row)
{
    bc_status st = BC_OK;
    bc_graph *once = NULL;
    const bc_graph *g = timed;
    if (ss->e.c_alias) { /* each set once, so that D = alpha A.B^T + beta C holds for the C just uploaded */
        TRY(bc_graph_create(c->s, (const bc_gemm_plan *const *)ss->plan, ss->sets, &once));
        g = once;
    }
    for (int i = 0; i < ss->sets; i++)
        PROPAGATE(prepare_d(c, sh, ss, i));
    TRY(bc_graph_launch(g, c->s));
    TRY(bc_stream_wait(c->s, WAIT_NS));
    for (int i = 0; i < ss->sets; i++)
        PROPAGATE(check_one(c, sh, ss, i, (int64_t)(bc_rng_next(&c->rng) % (uint64_t)sh->m), row));
done:
    bc_graph_destroy(once);
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
    row->med_us = c->times[n / 2];
    row->min_us = c->times[0];
    row->max_us = c->times[n - 1];
    row->tflops = row->med_us > 0 ? 2.0 * (double)sh->m * (double)sh->n * (double)sh->k / (row->med_us * 1e6) : 0.0;
    row->gbps = row->med_us > 0 ? (double)bc_sweep_traffic_bytes(sh, &row->e) / (row->med_us * 1e3) : 0.0;
    row->pct_floor = row->med_us > 0 ? 100.0 * row->floor_us / row->med_us : 0.0;
done:
    return st;
}

static const char *pool_at(const void *base, size_t elem, bc_dtype t)
{
    return (const char *)base + elem * bc_dtype_bytes(t);
}

/* Descriptors, device buffers with their inputs uploaded, host sources. */
static bc_status setup_sets(bench_ctx *c, const bc_shape *sh, shape_sets *ss)
{
    const bench_opts *o = c->o;
    const bc_epi_desc *e = &ss->e;
    const size_t ab = bc_dtype_bytes(e->ab), ob = bc_dtype_bytes(e->out);
    const size_t sa = (size_t)(sh->m * sh->k) * ab, sb = (size_t)(sh->n * sh->k) * ab,
                 sd = (size_t)(sh->m * sh->n) * ob, sbias = (size_t)sh->n * ob;
    const host_pool *pin = &c->pool[e->ab], *pout = &c->pool[e->out];
    bc_status st = BC_OK;
    for (int i = 0; i < ss->sets; i++) {
        bc_gemm_desc *d = &ss->d[i];
        const size_t at = (size_t)i * SET_SHIFT;
        bc_gemm_desc_default(d);
        d->m = sh->m, d->n = sh->n, d->k = sh->k;
        d->ab_type = e->ab, d->d_type = e->out;
        d->alpha = e->alpha, d->beta = e->beta, d->relu = e->relu;
        d->config = o->config;
        d->split_k = o->split_k;
        d->stream_k = o->stream_k;
        ss->ha[i] = pool_at(pin->a, at, e->ab);
        ss->hb[i] = pool_at(pin->b, at, e->ab);
        ss->hc[i] = reads_c(e) ? pool_at(pout->c, at, e->out) : NULL;
        ss->hbias[i] = e->bias ? pool_at(pout->c, at + (reads_c(e) ? (size_t)(sh->m * sh->n) : 0), e->out) : NULL;
        TRY(bc_mem_alloc(c->dev, sa, &d->a));
        TRY(bc_mem_alloc(c->dev, sb, &d->b));
        TRY(bc_mem_alloc(c->dev, sd, &d->d));
        TRY(bc_memcpy_htod(c->dev, d->a, ss->ha[i], sa));
        TRY(bc_memcpy_htod(c->dev, d->b, ss->hb[i], sb));
        if (reads_c(e) && !e->c_alias) {
            TRY(bc_mem_alloc(c->dev, sd, &ss->c_buf[i]));
            TRY(bc_memcpy_htod(c->dev, ss->c_buf[i], ss->hc[i], sd));
        }
        d->c = e->c_alias ? d->d : ss->c_buf[i];
        if (e->bias) {
            TRY(bc_mem_alloc(c->dev, sbias, &d->bias));
            TRY(bc_memcpy_htod(c->dev, d->bias, ss->hbias[i], sbias));
        }
    }
done:
    return st;
}

/* A forced configuration or split that the plan refuses for this shape: the
 * row is marked SKIP (sweeps only; any other failure stays a failure). */
static int skippable(const bench_opts *o, bc_status st, bench_row *row)
{
    bc_error_detail d;
    if (!o->sweep || (o->config == NULL && o->split_k == 0) || st != BC_ERR_INVALID_ARGUMENT ||
        bc_last_error(&d) != BC_OK || d.status != st || (strcmp(d.call, "config") && strcmp(d.call, "split_k")))
        return 0;
    snprintf(row->skip_reason, sizeof row->skip_reason, "%s", d.message);
    row->verdict = BENCH_SKIP;
    return 1;
}

static bc_status run_shape(bench_ctx *c, int index, bench_row *row)
{
    const bc_shape *sh = &c->o->items[index].s;
    shape_sets ss;
    const bc_gemm_plan *list[PER_GRAPH];
    bc_graph *g = NULL;
    bc_status st = BC_OK;
    memset(&ss, 0, sizeof ss);
    ss.e = bench_item_desc(c->o, index);
    ss.sets = bc_bench_sets(bc_sweep_set_bytes(sh, &ss.e));
    row->index = index;
    row->s = *sh;
    row->e = ss.e;
    row->sets = ss.sets;
    row->floor_us = bc_sweep_floor_us(sh, &ss.e, BC_PEAK_FLOPS, BC_PEAK_BW);
    PROPAGATE(setup_sets(c, sh, &ss));
    for (int i = 0; i < ss.sets; i++) {
        st = bc_gemm_plan_create(c->dev, &ss.d[i], &ss.plan[i]);
        if (st && i == 0 && skippable(c->o, st, row)) {
            st = BC_OK;
            goto done;
        }
        if (st) {
            fail(c, sh, "bc_gemm_plan_create(c->dev, &ss.d[i], &ss.plan[i])", st);
            goto done;
        }
    }
    TRY(bc_gemm_plan_query(ss.plan[0], &row->info));
    PROPAGATE(check_direct(c, sh, &ss, row));
    if (!bc_check_passed(&ss.d[0], &row->err)) {
        row->failed_check = "direct launch";
        goto verdict;
    }
    for (int j = 0; j < PER_GRAPH; j++)
        list[j] = ss.plan[j % ss.sets];
    TRY(bc_graph_create(c->s, list, PER_GRAPH, &g));
    PROPAGATE(check_graph(c, sh, &ss, g, row));
    if (!bc_check_passed(&ss.d[0], &row->err)) {
        row->failed_check = "graph replay";
        goto verdict;
    }
    PROPAGATE(time_graph(c, sh, g, row));
    row->verdict = BENCH_PASS;
    goto done;
verdict:
    row->verdict = BENCH_FAIL;
done:
    bc_graph_destroy(g);
    for (int i = 0; i < ss.sets; i++) {
        bc_gemm_plan_destroy(ss.plan[i]);
        if (ss.d[i].a) bc_mem_free(c->dev, ss.d[i].a);
        if (ss.d[i].b) bc_mem_free(c->dev, ss.d[i].b);
        if (ss.d[i].d) bc_mem_free(c->dev, ss.d[i].d);
        if (ss.c_buf[i]) bc_mem_free(c->dev, ss.c_buf[i]);
        if (ss.d[i].bias) bc_mem_free(c->dev, ss.d[i].bias);
    }
    return st;
}

/* Host buffers: per type, pools of random inputs long enough for every
 * shape's largest operand at the last set's offset; one output row and its
 * reference. */
static bc_status host_setup(bench_ctx *c)
{
    const bench_opts *o = c->o;
    size_t ncols = 0, total = 0;
    for (int i = 0; i < o->count; i++) {
        const bc_shape *s = &o->items[i].s;
        const bc_epi_desc e = bench_item_desc(o, i);
        host_pool *pin = &c->pool[e.ab], *pout = &c->pool[e.out];
        size_t ab = (size_t)((s->m > s->n ? s->m : s->n) * s->k);
        size_t cb = (reads_c(&e) ? (size_t)(s->m * s->n) : 0) + (e.bias ? (size_t)s->n : 0);
        pin->ab_elems = ab > pin->ab_elems ? ab : pin->ab_elems;
        pout->c_elems = cb > pout->c_elems ? cb : pout->c_elems;
        ncols = (size_t)s->n > ncols ? (size_t)s->n : ncols;
    }
    for (int t = 0; t < 3; t++) {
        host_pool *p = &c->pool[t];
        const size_t es = bc_dtype_bytes((bc_dtype)t), pad = (size_t)(MAX_SETS - 1) * SET_SHIFT;
        if (p->ab_elems) {
            p->ab_elems += pad;
            p->a = malloc(p->ab_elems * es);
            p->b = malloc(p->ab_elems * es);
            total += 2 * p->ab_elems * es;
            if (p->a && p->b) {
                bc_ref_fill_normal(p->a, (bc_dtype)t, p->ab_elems, 1.0, &c->rng);
                bc_ref_fill_normal(p->b, (bc_dtype)t, p->ab_elems, 1.0, &c->rng);
            }
        }
        if (p->c_elems) {
            p->c_elems += pad;
            p->c = malloc(p->c_elems * es);
            total += p->c_elems * es;
            if (p->c)
                bc_ref_fill_normal(p->c, (bc_dtype)t, p->c_elems, 1.0, &c->rng);
        }
        if ((p->ab_elems && (!p->a || !p->b)) || (p->c_elems && !p->c))
            goto oom;
    }
    c->row_buf = malloc(ncols * 4);
    c->ref_buf = malloc(ncols * sizeof *c->ref_buf);
    c->times = malloc((size_t)o->replays * sizeof *c->times);
    if (!c->row_buf || !c->ref_buf || !c->times)
        goto oom;
    return BC_OK;
oom:
    snprintf(c->error, sizeof c->error, "cannot allocate %zu bytes of host input pools", total);
    fprintf(stderr, "barecuda bench: %s\n", c->error);
    return BC_ERR_OUT_OF_HOST_MEMORY;
}

static void host_free(bench_ctx *c)
{
    for (int t = 0; t < 3; t++)
        free(c->pool[t].a), free(c->pool[t].b), free(c->pool[t].c);
    free(c->row_buf), free(c->ref_buf), free(c->times);
}

int bc_cmd_bench(int argc, char **argv)
{
    bench_opts o;
    const int parsed = bench_opts_parse(argc, argv, &o);
    if (parsed) {
        bench_opts_free(&o);
        if (parsed > 0)
            return BC_EXIT_OK; /* --help */
        bench_usage(stderr);
        return BC_EXIT_USAGE;
    }
    if (o.list_only) {
        bench_print_list(&o);
        bench_opts_free(&o);
        return BC_EXIT_OK;
    }
    bench_ctx c;
    memset(&c, 0, sizeof c);
    c.o = &o;
    c.rng.s = bc_ref_seed();
    bench_row *rows = calloc((size_t)o.count, sizeof *rows);
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.device_arena_bytes = arena_bytes(&o);
    /* any configuration may be named */
    cfg.kernel_groups = BC_KERNELS_PORTABLE | (o.stream_k ? BC_KERNELS_STREAM_K : 0u);
    bc_status st = bc_device_open(&cfg, &c.dev);
    if (st) { /* the one-line message every command prints for a missing driver or device */
        bc_cli_report("bench", st);
        free(rows);
        bench_opts_free(&o);
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
        bench_print_header(&o, c.dev);
    int n = 0, failed = 0, skipped = 0;
    for (; !st && n < o.count; n++) {
        st = run_shape(&c, n, &rows[n]);
        if (rows[n].verdict != BENCH_NOT_RUN && !o.json)
            bench_print_row(&o, &rows[n]);
        failed += rows[n].verdict == BENCH_FAIL;
        skipped += rows[n].verdict == BENCH_SKIP;
    }
    if (o.json && rows)
        bench_print_json(&o, c.dev, rows, n, c.error); /* the rows that finished */
    int csv_failed = 0;
    if (o.csv && rows) {
        bc_device_info di;
        bc_device_query(c.dev, &di);
        csv_failed = bench_write_csv(&o, rows, n, di.sm_count);
    }
    bc_device_close(c.dev);
    host_free(&c);
    free(rows);
    bench_opts_free(&o);
    if (st)
        return bc_cli_exit_code(st);
    if (failed)
        return BC_EXIT_VERIFY;
    if (skipped == o.count) {
        fprintf(stderr, "barecuda bench: the forced configuration or split took none of the %d shapes\n", o.count);
        return BC_EXIT_ERROR;
    }
    return csv_failed ? BC_EXIT_ERROR : BC_EXIT_OK;
}
