/* barecuda gemm: one GEMM on fresh random data, checked against the fp64 CPU
 * reference (every row for small shapes, a random sample of rows for large
 * ones), then timed over back-to-back launches. */
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "ref.h"

typedef struct gemm_opts {
    bc_gemm_desc d;
    int bias;
    int64_t check_rows; /* 0 = all when small, else 64 */
    int iters;
    int json;
    int tile_report; /* per output tile of the plan: ok / wrong / wrong and exactly zero */
} gemm_opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: barecuda gemm --m M --n N --k K [--dtype bf16|f16] [--out bf16|f16|f32]\n"
               "                     [--alpha A] [--beta B] [--bias] [--relu] [--check-rows R]\n"
               "                     [--iters I] [--config NAME] [--split S] [--stream-k] [--tile-report] [--json]\n"
               "D = relu?(alpha * A[MxK] . B[NxK]^T + beta * C + bias); inputs N(0,1), fresh seed each run\n"
               "(BC_SEED replays). Exit 0 when the check passes, %d when it fails.\n",
               BC_EXIT_VERIFY);
}

#define BAD(...) return fprintf(stderr, "barecuda gemm: " __VA_ARGS__), -1

/* The options into *o; -1 (a one-line reason on stderr first) on a bad
 * one: numbers are checked whole and against their ranges. */
static int parse(int argc, char **argv, gemm_opts *o)
{
    static const struct option longs[] = {
        {"m", 1, 0, 'm'},     {"n", 1, 0, 'n'},     {"k", 1, 0, 'k'},        {"dtype", 1, 0, 't'},
        {"out", 1, 0, 'o'},   {"alpha", 1, 0, 'a'}, {"beta", 1, 0, 'b'},     {"bias", 0, 0, 'B'},
        {"relu", 0, 0, 'r'},  {"check-rows", 1, 0, 'c'}, {"iters", 1, 0, 'i'}, {"json", 0, 0, 'j'},
        {"tile-report", 0, 0, 'T'}, {"config", 1, 0, 'C'}, {"help", 0, 0, 'h'},  {"split", 1, 0, 'S'},
        {"stream-k", 0, 0, 'K'},    {0, 0, 0, 0},
    };
    bc_gemm_desc_default(&o->d);
    o->d.d_type = BC_DTYPE_BF16;
    o->iters = 20;
    int c;
    long long v = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'm': case 'n': case 'k':
            if (bc_cli_parse_ll(optarg, 1, 2147483647LL, &v))
                BAD("bad --%c '%s' (1..2^31-1)\n", c, optarg);
            *(c == 'm' ? &o->d.m : c == 'n' ? &o->d.n : &o->d.k) = v;
            break;
        case 't':
            if (bc_cli_parse_dtype(optarg, &o->d.ab_type) || o->d.ab_type == BC_DTYPE_F32)
                BAD("bad --dtype '%s' (bf16 or f16)\n", optarg);
            break;
        case 'o':
            if (bc_cli_parse_dtype(optarg, &o->d.d_type))
                BAD("bad --out '%s' (bf16, f16 or f32)\n", optarg);
            break;
        case 'a': case 'b': {
            double x = 0.0;
            if (bc_cli_parse_double(optarg, -FLT_MAX, FLT_MAX, &x))
                BAD("bad --%s '%s' (a finite number)\n", c == 'a' ? "alpha" : "beta", optarg);
            *(c == 'a' ? &o->d.alpha : &o->d.beta) = (float)x;
            break;
        }
        case 'B': o->bias = 1; break;
        case 'r': o->d.relu = 1; break;
        case 'c':
            if (bc_cli_parse_ll(optarg, 0, 2147483647LL, &v))
                BAD("bad --check-rows '%s' (0..2^31-1; 0: every row of a small GEMM, else 64)\n", optarg);
            o->check_rows = v;
            break;
        case 'i':
            if (bc_cli_parse_ll(optarg, 1, 100000000, &v))
                BAD("bad --iters '%s' (1..1e8)\n", optarg);
            o->iters = (int)v;
            break;
        case 'j': o->json = 1; break;
        case 'T': o->tile_report = 1; break;
        case 'C': o->d.config = optarg; break;
        case 'S':
            if (bc_cli_parse_ll(optarg, 0, 16, &v))
                BAD("bad --split '%s' (0 = the rule, 1 = none, 2..16)\n", optarg);
            o->d.split_k = (uint32_t)v;
            break;
        case 'K': o->d.stream_k = 1; break;
        case 'h': usage(stdout); exit(BC_EXIT_OK);
        default: BAD("unknown option or missing value: '%s'\n", argv[optind - 1]);
        }
    }
    if (optind < argc)
        BAD("unexpected argument '%s'\n", argv[optind]);
    if (o->d.m < 1 || o->d.n < 1 || o->d.k < 1)
        BAD("--m, --n and --k are required\n");
    return 0;
}

typedef struct host_bufs {
    void *a, *b, *c, *bias, *d;
} host_bufs;

/* Allocates device buffers from the arena and uploads random inputs. */
static bc_status upload(bc_device *dev, gemm_opts *o, host_bufs *h, bc_rng *r)
{
    bc_gemm_desc *d = &o->d;
    size_t ab = bc_dtype_bytes(d->ab_type), ob = bc_dtype_bytes(d->d_type);
    size_t sa = (size_t)(d->m * d->k) * ab, sb = (size_t)(d->n * d->k) * ab;
    size_t sd = (size_t)(d->m * d->n) * ob, sbias = (size_t)d->n * ob;
    h->a = malloc(sa), h->b = malloc(sb), h->c = malloc(sd), h->d = malloc(sd), h->bias = malloc(sbias);
    if (!h->a || !h->b || !h->c || !h->d || !h->bias)
        return BC_ERR_OUT_OF_HOST_MEMORY;
    bc_ref_fill_normal(h->a, d->ab_type, sa / ab, 1.0, r);
    bc_ref_fill_normal(h->b, d->ab_type, sb / ab, 1.0, r);
    bc_ref_fill_normal(h->c, d->d_type, sd / ob, 1.0, r);
    bc_ref_fill_normal(h->bias, d->d_type, (size_t)d->n, 1.0, r);
    bc_status st = bc_mem_alloc(dev, sa, &d->a);
    if (!st) st = bc_mem_alloc(dev, sb, &d->b);
    if (!st) st = bc_mem_alloc(dev, sd, &d->d);
    if (!st) st = bc_memcpy_htod(dev, d->a, h->a, sa);
    if (!st) st = bc_memcpy_htod(dev, d->b, h->b, sb);
    if (!st && d->beta != 0.0f) st = bc_mem_alloc(dev, sd, &d->c);
    if (!st && d->beta != 0.0f) st = bc_memcpy_htod(dev, d->c, h->c, sd);
    if (!st && o->bias) st = bc_mem_alloc(dev, sbias, &d->bias);
    if (!st && o->bias) st = bc_memcpy_htod(dev, d->bias, h->bias, sbias);
    return st;
}

/* Diagnosis aid: which output tiles are wrong, and whether they hold zeros. */
static void tile_report(const gemm_opts *o, const host_bufs *h, int64_t bm, int64_t bn)
{
    const bc_gemm_desc *d = &o->d;
    double *ref = malloc((size_t)d->n * sizeof *ref);
    int64_t tm = (d->m + bm - 1) / bm, tn = (d->n + bn - 1) / bn;
    size_t *bad = calloc((size_t)(tm * tn), sizeof *bad), *zero = calloc((size_t)(tm * tn), sizeof *zero);
    for (int64_t r = 0; r < d->m; r++) {
        bc_ref_gemm_row(d, h->a, h->b, h->c, o->bias ? h->bias : NULL, r, ref);
        for (int64_t c = 0; c < d->n; c++) {
            double got = bc_ref_get(h->d, d->d_type, (size_t)(r * d->n + c));
            size_t t = (size_t)((r / bm) * tn + c / bn);
            if (got == 0.0)
                zero[t]++;
            if (!(fabs(got - ref[c]) <= 0.02 * fabs(ref[c]) + 0.05))
                bad[t]++;
        }
    }
    for (int64_t i = 0; i < tm; i++) {
        printf("  tile row %3lld:", (long long)i);
        for (int64_t j = 0; j < tn; j++)
            printf(" %s", bad[i * tn + j] == 0 ? "ok" : zero[i * tn + j] == bad[i * tn + j] ? "ZERO" : "BAD");
        printf("\n");
    }
    free(ref), free(bad), free(zero);
}

static void check(const gemm_opts *o, const host_bufs *h, bc_rng *r, bc_ref_error *e, int64_t *rows_out)
{
    const bc_gemm_desc *d = &o->d;
    int64_t rows = o->check_rows;
    if (rows <= 0)
        rows = (uint64_t)d->m * (uint64_t)d->n * (uint64_t)d->k <= (1ull << 30) ? d->m : 64;
    if (rows > d->m)
        rows = d->m;
    double *ref = malloc((size_t)d->n * sizeof *ref);
    for (int64_t i = 0; i < rows; i++) {
        int64_t row = rows == d->m ? i : i == 0 ? d->m - 1 : (int64_t)(bc_rng_next(r) % (uint64_t)d->m);
        bc_ref_gemm_row(d, h->a, h->b, h->c, o->bias ? h->bias : NULL, row, ref);
        bc_ref_compare_row(d, h->d, row, ref, e);
    }
    free(ref);
    *rows_out = rows;
}

int bc_cmd_gemm(int argc, char **argv)
{
    gemm_opts o;
    memset(&o, 0, sizeof o);
    if (parse(argc, argv, &o)) {
        usage(stderr);
        return BC_EXIT_USAGE;
    }
    bc_rng rng = {bc_ref_seed()};
    uint64_t seed = rng.s;
    bc_gemm_desc *d = &o.d;
    /* the operands, and 64 MiB of slack (a stream-K workspace: two f32 128 x 128 tiles an SM fit it) */
    size_t need = (size_t)((d->m + d->n) * d->k) * 2 + 2 * (size_t)(d->m * d->n) * 4 + (64u << 20);
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.device_arena_bytes = need;
    /* any configuration may be named */
    cfg.kernel_groups = BC_KERNELS_PORTABLE | (d->stream_k ? BC_KERNELS_STREAM_K : 0u);
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    bc_gemm_plan *plan = NULL;
    bc_event *e0 = NULL, *e1 = NULL;
    host_bufs h = {0};
    bc_status st = bc_device_open(&cfg, &dev);
    if (!st) st = bc_stream_create(dev, 0, &s, NULL);
    if (!st) st = upload(dev, &o, &h, &rng);
    if (!st) st = bc_gemm_plan_create(dev, d, &plan);
    size_t sd = (size_t)(d->m * d->n) * bc_dtype_bytes(d->d_type);
    if (!st) st = bc_memset_d8_async(s, d->d, 0xFF, sd); /* poison: NaN in every type */
    if (!st) st = bc_gemm_launch(plan, s);
    if (!st) st = bc_stream_wait(s, 60ull * 1000000000ull);
    if (!st) st = bc_memcpy_dtoh(dev, h.d, d->d, sd);
    int rc = BC_EXIT_OK;
    if (st)
        goto fail;
    bc_ref_error err = {0};
    int64_t rows = 0;
    check(&o, &h, &rng, &err, &rows);
    double rel = bc_ref_rel_frobenius(&err);
    int ok = err.nonfinite == 0 && err.bad == 0 && rel <= bc_ref_bound(d->d_type, d->k);

    /* timing: warm-up, then iters back-to-back launches between two events */
    float ms = 0.0f;
    st = bc_event_create(dev, &e0);
    if (!st) st = bc_event_create(dev, &e1);
    for (int i = 0; !st && i < 3; i++)
        st = bc_gemm_launch(plan, s);
    if (!st) st = bc_event_record(e0, s);
    for (int i = 0; !st && i < o.iters; i++)
        st = bc_gemm_launch(plan, s);
    if (!st) st = bc_event_record(e1, s);
    if (!st) st = bc_stream_wait(s, 120ull * 1000000000ull);
    if (!st) st = bc_event_elapsed_ms(e0, e1, &ms);
    if (st)
        goto fail;
    double us = 1e3 * ms / o.iters;
    double tflops = 2.0 * (double)d->m * (double)d->n * (double)d->k / (us * 1e-6) / 1e12;
    bc_gemm_plan_info pi;
    bc_gemm_plan_query(plan, &pi);
    if (o.json)
        printf("{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"dtype\":\"%s\",\"out\":\"%s\",\"config\":\"%s\","
               "\"seed\":\"0x%llx\",\"rows_checked\":%lld,\"rel_frobenius\":%.3e,\"max_abs\":%.3e,"
               "\"bad\":%zu,\"unwritten\":%zu,\"pass\":%s,\"us\":%.3f,\"tflops\":%.1f}\n",
               (long long)d->m, (long long)d->n, (long long)d->k, bc_cli_dtype_name(d->ab_type), bc_cli_dtype_name(d->d_type),
               pi.config, (unsigned long long)seed, (long long)rows, rel, err.max_abs, err.bad, err.nonfinite,
               ok ? "true" : "false", us, tflops);
    else
        printf("gemm %lldx%lldx%lld %s->%s [%s, grid %u, split-K %u]: seed 0x%llx, %lld rows checked, rel frobenius "
               "%.3e (bound %.0e), max abs %.3e, %zu out of tolerance, %zu unwritten: %s; %.2f us, %.1f TFLOP/s\n",
               (long long)d->m, (long long)d->n, (long long)d->k, bc_cli_dtype_name(d->ab_type), bc_cli_dtype_name(d->d_type),
               pi.config, pi.grid_x, pi.split_k, (unsigned long long)seed, (long long)rows, rel, bc_ref_bound(d->d_type, d->k),
               err.max_abs, err.bad, err.nonfinite, ok ? "PASS" : "FAIL", us, tflops);
    if (o.tile_report)
        tile_report(&o, &h, pi.tile_m, pi.tile_n);
    for (size_t i = 0; !o.json && i < 4 && i < err.bad + err.nonfinite; i++)
        printf("  mismatch at row %lld col %lld: got %.6g, want %.6g\n", (long long)err.first_bad[i].row,
               (long long)err.first_bad[i].col, err.first_bad[i].got, err.first_bad[i].want);
    rc = ok ? BC_EXIT_OK : BC_EXIT_VERIFY;
    goto out;
fail:
    bc_cli_report("gemm", st);
    rc = bc_cli_exit_code(st);
out:
    bc_device_close(dev); /* the plan, events, stream and device buffers with it */
    free(h.a), free(h.b), free(h.c), free(h.d), free(h.bias);
    return rc;
}
