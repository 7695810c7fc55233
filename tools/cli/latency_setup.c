/* barecuda latency: the workload and the checks before anything is timed
 * (see latency.h): upload, plans, graphs, resident executors, and every way
 * of running the workload against the CPU reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "gemm_check.h"
#include "latency.h"

#define CHECK_ROWS 8

/* Random N(0,1) inputs of one descriptor, uploaded into fresh arena blocks. */
static bc_status upload(lat_ctx *c, bc_gemm_desc *d, void *ha, void *hb)
{
    const size_t ab = bc_dtype_bytes(d->ab_type);
    const size_t sa = (size_t)(d->m * d->k) * ab, sb = (size_t)(d->n * d->k) * ab;
    const size_t sd = (size_t)(d->m * d->n) * bc_dtype_bytes(d->d_type);
    bc_ref_fill_normal(ha, d->ab_type, sa / ab, 1.0, &c->rng);
    bc_ref_fill_normal(hb, d->ab_type, sb / ab, 1.0, &c->rng);
    LAT_TRY(bc_mem_alloc(c->dev, sa, &d->a));
    LAT_TRY(bc_mem_alloc(c->dev, sb, &d->b));
    LAT_TRY(bc_mem_alloc(c->dev, sd, &d->d));
    LAT_TRY(bc_memcpy_htod(c->dev, d->a, ha, sa));
    LAT_TRY(bc_memcpy_htod(c->dev, d->b, hb, sb));
    return BC_OK;
}

/* Runs the workload once: `how` 0 its plans launched in order, 1 their
 * graph, 2 the resident executor, 3 its zero-copy twin. */
static bc_status run_once(lat_ctx *c, const bc_gemm_plan *const *plans, int n, const bc_graph *g, int how)
{
    if (how >= 2)
        return lat_resident_once(&c->rs, c->s, how == 3, c->o->timeout_ns);
    if (how == 1)
        LAT_TRY(bc_graph_launch(g, c->s));
    for (int i = 0; how == 0 && i < n; i++)
        LAT_TRY(bc_gemm_launch(plans[i], c->s));
    LAT_TRY(bc_stream_wait(c->s, c->o->timeout_ns));
    return BC_OK;
}

/* The ways the run measures the workload: launched, graph, and the
 * resident executors when there are any. */
static int check_passes(const lat_ctx *c, const bc_gemm_plan *p) { return p == c->fplan ? 2 : c->rs.zc ? 4 : c->rs.exec ? 3 : 2; }

static void report_wrong(lat_ctx *c, const char *what, int how, size_t bad, size_t checked)
{
    static const char *const ways[] = {"launched", "through a graph", "resident", "resident, zero-copy"};
    fprintf(stderr, "barecuda latency: FAIL: %s computes wrong results %s (%zu of %zu checked elements out of "
                    "tolerance): no latency reported\n", what, ways[how], bad, checked);
    c->verify_failed = 1;
}

/* Poisons D, runs the plan each way (check_passes), and checks every row
 * (small shapes) or `rows` sampled rows after each; the zero-copy output
 * must also be D's bytes. */
static bc_status check(lat_ctx *c, const bc_gemm_desc *d, const bc_gemm_plan *p, const bc_graph *g, const void *ha,
                       const void *hb, int rows, const char *what)
{
    const size_t sd = (size_t)(d->m * d->n) * bc_dtype_bytes(d->d_type);
    const int64_t count = bc_check_row_count(d, rows);
    for (int how = 0; how < check_passes(c, p); how++) {
        bc_ref_error e;
        memset(&e, 0, sizeof e);
        LAT_TRY(bc_memset_d8_async(c->s, d->d, 0xFF, sd));
        LAT_TRY(bc_stream_wait(c->s, c->o->timeout_ns));
        bc_status st = run_once(c, &p, 1, g, how);
        if (st)
            return st;
        for (int64_t i = 0; i < count; i++) {
            int64_t r = count == d->m ? i : bc_check_row_index(d->m, (int)i, (int)count, &c->rng);
            LAT_TRY(bc_check_row(c->dev, d, ha, hb, r, c->row_buf, c->ref_buf, &e));
            c->rows_checked++;
        }
        if (how == 3) {
            void *dev_d = malloc(sd);
            if (dev_d == NULL || bc_memcpy_dtoh(c->dev, dev_d, d->d, sd) || memcmp(dev_d, c->rs.host_out, sd))
                e.bad++;
            free(dev_d);
        }
        if (!bc_check_passed(d, &e)) {
            report_wrong(c, what, how, e.bad + e.nonfinite, e.checked);
            bc_check_print_mismatches(stderr, "  ", &e);
            return BC_OK;
        }
    }
    return BC_OK;
}

/* The same for the MLP: every layer against the fp64 reference of its own
 * input, after each way of running it. */
static bc_status check_mlp(lat_ctx *c)
{
    const bc_mlp *m = &c->mlp;
    for (int how = 0; how < check_passes(c, c->plan); how++) {
        for (int l = 1; l <= m->layers; l++)
            LAT_TRY(bc_memset_d8_async(c->s, m->act[l], 0xFF, (size_t)(m->batch * m->width[l]) * 2));
        LAT_TRY(bc_stream_wait(c->s, c->o->timeout_ns));
        bc_status st = run_once(c, c->seq, c->nseq, c->graph, how);
        if (st)
            return st;
        size_t bad = 0, checked = 0;
        LAT_TRY(bc_mlp_check(c->dev, m, how == 3 ? c->rs.host_out : NULL, &bad, &checked));
        c->rows_checked += m->batch * m->layers;
        if (bad) {
            report_wrong(c, "the mlp", how, bad, checked);
            return BC_OK;
        }
    }
    return BC_OK;
}

/* The workload's plans: the one GEMM, or the MLP's layers. */
static bc_status make_workload(lat_ctx *c)
{
    const lat_opts *o = c->o;
    if (o->mlp == NULL) {
        LAT_TRY(upload(c, &c->d, c->host_a, c->host_b));
        LAT_TRY(bc_gemm_plan_create(c->dev, &c->d, &c->plan));
        c->seq[0] = c->plan;
        c->nseq = 1;
        c->rs.in = c->d.a, c->rs.in_bytes = (size_t)(o->m * o->k) * bc_dtype_bytes(o->ab);
        c->rs.out = c->d.d, c->rs.out_bytes = (size_t)(o->m * o->n) * bc_dtype_bytes(o->out);
        return BC_OK;
    }
    LAT_TRY(bc_mlp_create(c->dev, o->batch, o->width, o->layers, o->config, o->split_k, (o->modes & 4) != 0,
                          &c->rng, &c->mlp));
    for (int l = 0; l < o->layers; l++)
        c->seq[l] = c->mlp.plan[l];
    c->nseq = o->layers;
    c->plan = c->mlp.plan[0];
    c->rs.in = c->mlp.act[0], c->rs.in_bytes = (size_t)(o->batch * o->width[0]) * 2;
    c->rs.out = c->mlp.act[o->layers], c->rs.out_bytes = (size_t)(o->batch * o->width[o->layers]) * 2;
    return BC_OK;
}

bc_status lat_setup(lat_ctx *c, bc_device_info *di, int *prio_eff)
{
    const lat_opts *o = c->o;
    LAT_TRY(bc_stream_create(c->dev, o->priority, &c->s, prio_eff));
    LAT_TRY(bc_device_query(c->dev, di));
    bc_gemm_desc_default(&c->d);
    c->d.m = o->m, c->d.n = o->n, c->d.k = o->k;
    c->d.ab_type = o->ab, c->d.d_type = o->out;
    c->d.config = o->config;
    c->d.split_k = o->split_k[0];
    c->d.resident = (o->modes & 4) != 0; /* every mode measures the plans the executor runs */
    c->fd = c->d;
    c->fd.m = 1, c->fd.n = 1, c->fd.k = 8;
    c->fd.config = NULL, c->fd.split_k = 0, c->fd.resident = 0; /* the floor plan takes the rule's choice */
    const size_t ab = bc_dtype_bytes(o->ab), big = (size_t)((o->m > o->n ? o->m : o->n) * o->k);
    c->host_a = malloc((size_t)(o->m * o->k) * ab);
    c->host_b = malloc((size_t)(o->n * o->k) * ab);
    c->row_buf = malloc((size_t)o->n * 4 + 64);
    c->ref_buf = malloc(((size_t)o->n + 8) * sizeof *c->ref_buf);
    uint16_t fa[8], fb[8];
    if (!c->host_a || !c->host_b || !c->row_buf || !c->ref_buf) {
        fprintf(stderr, "barecuda latency: cannot allocate %zu bytes of host inputs\n", 2 * big * ab);
        return BC_ERR_OUT_OF_HOST_MEMORY;
    }
    bc_status st = make_workload(c);
    if (!st) st = upload(c, &c->fd, fa, fb);
    if (st)
        return st;
    LAT_TRY(bc_gemm_plan_create(c->dev, &c->fd, &c->fplan));
    const bc_gemm_plan *floor_one = c->fplan;
    LAT_TRY(bc_graph_create(c->s, c->seq, c->nseq, &c->graph));
    LAT_TRY(bc_graph_create(c->s, &floor_one, 1, &c->fgraph));
    if (o->modes & 4)
        st = lat_resident_create(c->dev, c->seq, c->nseq, &o->res, o->io, &c->rs);
    if (!st && o->check) {
        st = o->mlp ? check_mlp(c) : check(c, &c->d, c->plan, c->graph, c->host_a, c->host_b, CHECK_ROWS, "the plan");
        if (!st && !c->verify_failed)
            st = check(c, &c->fd, c->fplan, c->fgraph, fa, fb, 1, "the 1x1x8 floor plan");
    }
    return st;
}
