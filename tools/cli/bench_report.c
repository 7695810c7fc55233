/* barecuda bench: the text table, the JSON object, the CSV file and the
 * sweep list. */
#include <string.h>

#include "bench.h"
#include "cli_util.h"
#include "gemm_check.h"

static const char *config_name(const bench_row *r, const bench_opts *o)
{
    if (r->info.config)
        return r->info.config;
    return o->config ? o->config : "?";
}

void bench_print_header(const bench_opts *o, bc_device *dev)
{
    bc_device_info di;
    bc_device_query(dev, &di);
    if (!o->sweep) {
        printf("barecuda bench: %s (%d SMs, %s); %s -> %s%s%s; graph of %d GEMMs over rotating input sets, %d "
               "warm-up + %d timed replays; per GEMM = replay / %d\n",
               di.name, di.sm_count, di.image_arch, bc_cli_dtype_name(o->ab), bc_cli_dtype_name(o->out),
               o->epi_set ? ", epilogue " : "", o->epi_set ? bc_epi_table[o->epi].tag : "", BC_BENCH_PER_GRAPH,
               o->warmup, o->replays, BC_BENCH_PER_GRAPH);
        printf("%-18s %-26s %5s %3s %5s %4s %-5s %10s %10s %10s %8s %8s\n", "shape", "config", "grid", "clu", "split",
               "sets", "check", "median_us", "min_us", "max_us", "TFLOP/s", "GB/s");
    } else {
        printf("barecuda bench --sweep %d --seed %llu (mem cap %llu B, epilogue fraction %g%s%s, split %u): %s (%d "
               "SMs, %s); graph of %d GEMMs over rotating input sets, %d warm-up + %d timed replays; per GEMM = "
               "replay / %d; floor = max(2MNK / %.0f TFLOP/s, bytes / %.2f TB/s)\n",
               o->sp.count, (unsigned long long)o->sp.seed, (unsigned long long)o->sp.mem_cap, o->sp.epi_fraction,
               o->config ? ", config " : "", o->config ? o->config : "", o->split_k, di.name, di.sm_count,
               di.image_arch, BC_BENCH_PER_GRAPH, o->warmup, o->replays, BC_BENCH_PER_GRAPH, BC_PEAK_FLOPS / 1e12,
               BC_PEAK_BW / 1e12);
        printf("%5s %-18s %-9s %-16s %5s %4s %-5s %10s %8s %10s %7s\n", "idx", "shape", "epilogue", "config", "split",
               "sets", "check", "median_us", "TFLOP/s", "floor_us", "%floor");
    }
    fflush(stdout);
}

static void print_fail(const bench_row *r)
{
    printf("FAIL  (%s: %zu of %zu checked elements out of tolerance, %zu unwritten, rel frobenius %.3e; no "
           "time reported)\n",
           r->failed_check, r->err.bad, r->err.checked, r->err.nonfinite, bc_ref_rel_frobenius(&r->err));
    bc_check_print_mismatches(stdout, "    ", &r->err);
}

void bench_print_row(const bench_opts *o, const bench_row *r)
{
    char shape[64], cfg[64];
    /* ^T: an N = 1 plan run as the 1 x M product B . A^T (README, "GEMM configurations") */
    snprintf(cfg, sizeof cfg, "%s%s%s%s%s", config_name(r, o), r->info.swapped ? "^T" : "", r->info.dense_a ? "^D" : "",
             r->info.stream_k_tiles ? "^K" : "", r->info.multicast ? "^M" : "");
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)r->s.m, (long long)r->s.n, (long long)r->s.k);
    if (!o->sweep) {
        printf("%-18s %-26s %5u %3u %5u %4d ", shape, cfg, r->info.grid_x, r->info.cluster_x,
               r->info.split_k, r->sets);
        if (r->verdict == BENCH_PASS)
            printf("%-5s %10.2f %10.2f %10.2f %8.1f %8.0f\n", "PASS", r->med_us, r->min_us, r->max_us, r->tflops,
                   r->gbps);
        else
            print_fail(r);
    } else {
        printf("%5d %-18s %-9s %-16s %5u %4d ", r->index, shape, r->e.tag, cfg,
               r->verdict == BENCH_SKIP ? o->split_k : r->info.split_k, r->sets);
        if (r->verdict == BENCH_PASS)
            printf("%-5s %10.2f %8.1f %10.3f %7.1f\n", "PASS", r->med_us, r->tflops, r->floor_us, r->pct_floor);
        else if (r->verdict == BENCH_SKIP)
            printf("SKIP  (%s)\n", r->skip_reason);
        else
            print_fail(r);
    }
    fflush(stdout);
}

static const char *verdict_name(bench_verdict v)
{
    return v == BENCH_PASS ? "PASS" : v == BENCH_FAIL ? "FAIL" : v == BENCH_SKIP ? "SKIP" : "";
}

static void json_row(const bench_opts *o, const bench_row *r)
{
    printf("{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"config\":", (long long)r->s.m, (long long)r->s.n, (long long)r->s.k);
    bc_cli_json_string(stdout, r->verdict == BENCH_SKIP ? config_name(r, o) : r->info.config ? r->info.config : "");
    printf(",\"swapped\":%s,\"dense_a\":%s,\"stream_k_tiles\":%u,\"multicast\":%s,\"grid\":%u,\"block\":%u,\"cluster\":%u,"
           "\"split_k\":%u,\"tiles\":%u,\"sets\":%d,\"verified\":%s,\"failed_check\":",
           r->info.swapped ? "true" : "false", r->info.dense_a ? "true" : "false", r->info.stream_k_tiles,
           r->info.multicast ? "true" : "false", r->info.grid_x, r->info.block_x, r->info.cluster_x, r->info.split_k,
           r->info.tiles, r->sets,
           r->verdict == BENCH_PASS ? "true" : "false");
    if (r->failed_check)
        bc_cli_json_string(stdout, r->failed_check);
    else
        printf("null");
    printf(",\"rows_checked\":%lld,\"bad\":%zu,\"unwritten\":%zu,\"rel_frobenius\":%.3e", (long long)r->rows_checked,
           r->err.bad, r->err.nonfinite, bc_ref_rel_frobenius(&r->err));
    if (r->verdict == BENCH_PASS)
        printf(",\"median_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,\"tflops\":%.2f,\"gbps\":%.1f", r->med_us,
               r->min_us, r->max_us, r->tflops, r->gbps);
    else
        printf(",\"median_us\":null,\"min_us\":null,\"max_us\":null,\"tflops\":null,\"gbps\":null");
    printf(",\"index\":%d,\"epilogue\":\"%s\",\"ab\":\"%s\",\"out\":\"%s\",\"alpha\":%g,\"beta\":%g,\"c_alias\":%s,"
           "\"bias\":%s,\"relu\":%s,\"status\":\"%s\",\"skip_reason\":",
           r->index, r->e.tag, bc_cli_dtype_name(r->e.ab), bc_cli_dtype_name(r->e.out), (double)r->e.alpha,
           (double)r->e.beta, r->e.c_alias ? "true" : "false", r->e.bias ? "true" : "false",
           r->e.relu ? "true" : "false", verdict_name(r->verdict));
    if (r->verdict == BENCH_SKIP)
        bc_cli_json_string(stdout, r->skip_reason);
    else
        printf("null");
    printf(",\"floor_us\":%.6g,\"pct_floor\":", r->floor_us);
    if (r->verdict == BENCH_PASS)
        printf("%.6g}", r->pct_floor);
    else
        printf("null}");
}

void bench_print_json(const bench_opts *o, bc_device *dev, const bench_row *rows, int n, const char *error)
{
    bc_device_info di;
    memset(&di, 0, sizeof di);
    if (dev)
        bc_device_query(dev, &di);
    printf("{\"tool\":\"barecuda bench\",\"device\":");
    bc_cli_json_string(stdout, di.name);
    printf(",\"sm_count\":%d,\"image\":", di.sm_count);
    bc_cli_json_string(stdout, di.image_arch ? di.image_arch : "");
    printf(",\"dtype\":\"%s\",\"out\":\"%s\",\"per_graph\":%d,\"warmup\":%d,\"replays\":%d,\"median\":\"sorted[R/2]\"",
           bc_cli_dtype_name(o->ab), bc_cli_dtype_name(o->out), BC_BENCH_PER_GRAPH, o->warmup, o->replays);
    if (o->epi_set)
        printf(",\"epilogue\":\"%s\"", bc_epi_table[o->epi].tag);
    if (o->sweep)
        printf(",\"sweep\":{\"generator\":1,\"count\":%d,\"seed\":%llu,\"mem_cap\":%llu,\"epilogue_fraction\":%.17g}",
               o->sp.count, (unsigned long long)o->sp.seed, (unsigned long long)o->sp.mem_cap, o->sp.epi_fraction);
    printf(",\"forced_config\":");
    if (o->config)
        bc_cli_json_string(stdout, o->config);
    else
        printf("null");
    printf(",\"forced_split\":%u,\"peak_flops\":%.4g,\"peak_bw\":%.4g,\"rows\":[", o->split_k, BC_PEAK_FLOPS,
           BC_PEAK_BW);
    for (int i = 0, printed = 0; i < n; i++) {
        if (rows[i].verdict == BENCH_NOT_RUN)
            continue;
        printf("%s", printed++ ? "," : "");
        json_row(o, &rows[i]);
    }
    printf("],\"error\":");
    if (error && error[0])
        bc_cli_json_string(stdout, error);
    else
        printf("null");
    printf("}\n");
}

int bench_write_csv(const bench_opts *o, const bench_row *rows, int n, int sm_count)
{
    FILE *f = fopen(o->csv, "w");
    if (f == NULL)
        return fprintf(stderr, "barecuda bench: cannot write --csv %s\n", o->csv), -1;
    fprintf(f, "seed,index,m,n,k,epilogue,ab,out,alpha,beta,c_alias,bias,relu,config,split,grid,cluster,sets,status,"
               "median_us,min_us,max_us,tflops,floor_us,pct_floor,forced_config,forced_split,sm_count,swapped,dense_a,"
               "stream_k_tiles,multicast\n");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        if (r->verdict == BENCH_NOT_RUN)
            continue;
        if (o->sweep)
            fprintf(f, "%llu", (unsigned long long)o->sp.seed);
        fprintf(f, ",%d,%lld,%lld,%lld,%s,%s,%s,%g,%g,%d,%d,%d,%s,%u,%u,%u,%d,%s,", r->index, (long long)r->s.m,
                (long long)r->s.n, (long long)r->s.k, r->e.tag, bc_cli_dtype_name(r->e.ab),
                bc_cli_dtype_name(r->e.out), (double)r->e.alpha, (double)r->e.beta, r->e.c_alias, r->e.bias,
                r->e.relu, config_name(r, o), r->verdict == BENCH_SKIP ? o->split_k : r->info.split_k,
                r->info.grid_x, r->info.cluster_x, r->sets, verdict_name(r->verdict));
        if (r->verdict == BENCH_PASS)
            fprintf(f, "%.3f,%.3f,%.3f,%.2f,%.6g,%.6g,", r->med_us, r->min_us, r->max_us, r->tflops, r->floor_us,
                    r->pct_floor);
        else
            fprintf(f, ",,,,%.6g,,", r->floor_us);
        fprintf(f, "%s,%u,%d,%u,%u,%u,%u\n", o->config ? o->config : "", o->split_k, sm_count, r->info.swapped,
                r->info.dense_a, r->info.stream_k_tiles, r->info.multicast);
    }
    if (fclose(f) != 0)
        return fprintf(stderr, "barecuda bench: cannot write --csv %s\n", o->csv), -1;
    return 0;
}

void bench_print_list(const bench_opts *o)
{
    for (int i = 0; i < o->count; i++) {
        const bc_sweep_item *it = &o->items[i];
        printf("%d %lldx%lldx%lld %s\n", i, (long long)it->s.m, (long long)it->s.n, (long long)it->s.k,
               bc_epi_table[it->epi].tag);
    }
}
