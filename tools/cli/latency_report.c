/* barecuda latency: text table, JSON, CSV of every sample, SVG histogram. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "latency.h"
#include "svg_hist.h"

static double us(uint64_t ns) { return (double)ns / 1e3; }

static void shape_str(const lat_report *r, int floor, char *buf, size_t cap)
{
    if (floor)
        snprintf(buf, cap, "1x1x8");
    else if (r->network)
        snprintf(buf, cap, "%s", r->network);
    else
        snprintf(buf, cap, "%lldx%lldx%lld", (long long)r->m, (long long)r->n, (long long)r->k);
}

/* What series s times: the call the host makes. */
static const char *call_of(const lat_series *s)
{
    if (s->floor == 2)
        return "cuLaunchKernelEx_empty";
    if (s->resident)
        return s->kind == LAT_LAUNCH ? "bc_resident_ring" : "bc_resident_step";
    return s->graph ? "bc_graph_launch" : "bc_gemm_launch";
}

static void row(const lat_series *s, const char *label)
{
    const bc_stats_summary *m = &s->sum;
    printf("  %-34s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", label, us(m->p50), us(m->p90), us(m->p99), us(m->p999),
           us(m->max), m->mean / 1e3);
}

void lat_print_text(const lat_report *r)
{
    char shape[64], label[96];
    shape_str(r, 0, shape, sizeof shape);
    printf("barecuda latency: %s (%d SMs, %s); %s %s -> %s [%s, grid %u, cluster %u, split-K %u]\n", r->device,
           r->sm_count, r->image, shape, bc_cli_dtype_name(r->ab), bc_cli_dtype_name(r->out), r->plan.config,
           r->plan.grid_x, r->plan.cluster_x, r->plan.split_k);
    char pin[48];
    if (r->cpu >= 0)
        snprintf(pin, sizeof pin, "thread pinned to CPU %d", r->cpu);
    else
        snprintf(pin, sizeof pin, "thread not pinned");
    if (r->layer_plans)
        printf("  layer plans: %s\n", r->layer_plans);
    if (r->resident)
        printf("  resident executor: %s, %u CTAs (one per SM) held, %u operations, %u grid barriers per step, "
               "%llu KiB of split-K partials\n",
               r->resident->config, r->resident->sm_count, r->resident->operations, r->resident->barriers,
               (unsigned long long)(r->resident->partial_bytes >> 10));
    printf("  %d runs per series after %d warm-up runs; stream priority asked %d, effective %d (device range %d..%d); "
           "%s; results %s\n",
           r->runs, r->warmup, r->prio_asked, r->prio_effective, r->prio_greatest, r->prio_least, pin,
           r->checked ? "checked against the CPU reference" : "NOT checked (--no-check)");
    printf("  percentiles by nearest rank; microseconds\n\n");
    printf("end to end: clock_gettime before the launch call -> bc_stream_wait returned (host sees completion)%s\n",
           r->resident ? ";\n  resident modes: before bc_resident_step (and the input's copy) -> it returned (and the output's)" : "");
    printf("  %-34s %9s %9s %9s %9s %9s %9s\n", "mode / wait policy", "p50", "p90", "p99", "p99.9", "max", "mean");
    for (int i = 0; i < r->count; i++) {
        const lat_series *s = &r->series[i];
        if (s->kind != LAT_E2E)
            continue;
        if (s->floor == 2) {
            row(s, "empty kernel (cuLaunchKernelEx) / spin");
            continue;
        }
        shape_str(r, s->floor, shape, sizeof shape);
        if (s->resident)
            snprintf(label, sizeof label, "%s / %s", s->mode, s->policy);
        else
            snprintf(label, sizeof label, "%s / %s%s%s", s->graph ? "graph" : "stream", s->policy,
                     s->floor ? "  " : "", s->floor ? shape : "");
        row(s, label);
    }
    printf("\nhost cost of the launch call alone (until it returns; a spin wait after each, not timed)\n");
    printf("  %-34s %9s %9s %9s %9s %9s %9s\n", "call", "p50", "p90", "p99", "p99.9", "max", "mean");
    for (int i = 0; i < r->count; i++) {
        const lat_series *s = &r->series[i];
        if (s->kind != LAT_LAUNCH)
            continue;
        if (s->floor == 2) {
            row(s, "raw cuLaunchKernelEx, empty kernel");
            continue;
        }
        shape_str(r, s->floor, shape, sizeof shape);
        snprintf(label, sizeof label, "%s %s", call_of(s), shape);
        row(s, label);
    }
    printf("  floor: \"raw cuLaunchKernelEx, empty kernel\" is one driver call launching a kernel that does\n"
           "  nothing (bc_selftest_empty_launch), measured in the same run.\n");
}

static void json_series(const lat_report *r, const lat_series *s)
{
    char shape[64];
    shape_str(r, s->floor, shape, sizeof shape);
    const bc_stats_summary *m = &s->sum;
    printf("{\"mode\":\"%s\",\"policy\":\"%s\",\"what\":\"%s\",\"call\":\"%s\",\"shape\":\"%s\",\"n\":%zu,"
           "\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,\"min_us\":%.3f,"
           "\"mean_us\":%.3f}",
           s->resident ? s->mode : s->graph ? "graph" : "stream", s->policy,
           s->kind == LAT_E2E ? "end_to_end" : "launch_call", call_of(s),
           s->floor == 2 ? "empty" : shape, m->n, us(m->p50), us(m->p90), us(m->p99),
           us(m->p999), us(m->max), us(m->min), m->mean / 1e3);
}

void lat_print_json(const lat_report *r)
{
    printf("{\"tool\":\"barecuda latency\",\"device\":");
    bc_cli_json_string(stdout, r->device);
    printf(",\"sm_count\":%d,\"image\":", r->sm_count);
    bc_cli_json_string(stdout, r->image);
    if (r->network == NULL) /* a network's layers are in "network" and "layer_plans" */
        printf(",\"m\":%lld,\"n\":%lld,\"k\":%lld", (long long)r->m, (long long)r->n, (long long)r->k);
    printf(",\"dtype\":\"%s\",\"out\":\"%s\",\"config\":", bc_cli_dtype_name(r->ab), bc_cli_dtype_name(r->out));
    bc_cli_json_string(stdout, r->plan.config);
    printf(",\"grid\":%u,\"cluster\":%u,\"split_k\":%u,\"floor_config\":", r->plan.grid_x, r->plan.cluster_x,
           r->plan.split_k);
    bc_cli_json_string(stdout, r->floor_plan.config);
    if (r->network) {
        printf(",\"network\":");
        bc_cli_json_string(stdout, r->network);
    }
    if (r->layer_plans) {
        printf(",\"layer_plans\":");
        bc_cli_json_string(stdout, r->layer_plans);
    }
    if (r->resident)
        printf(",\"resident_sm_count\":%u,\"resident_operations\":%u,\"resident_barriers\":%u,"
               "\"resident_partial_bytes\":%llu",
               r->resident->sm_count, r->resident->operations, r->resident->barriers,
               (unsigned long long)r->resident->partial_bytes);
    printf(",\"runs\":%d,\"warmup\":%d,\"cpu\":%d,\"priority_asked\":%d,\"priority_effective\":%d,\"checked\":%s,"
           "\"rows_checked\":%lld,\"percentiles\":\"nearest-rank\",\"rows\":[",
           r->runs, r->warmup, r->cpu, r->prio_asked, r->prio_effective, r->checked ? "true" : "false",
           (long long)r->rows_checked);
    for (int i = 0; i < r->count; i++) {
        if (i)
            putchar(',');
        json_series(r, &r->series[i]);
    }
    printf("]}\n");
}

int lat_write_csv(const lat_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "barecuda latency: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "mode,policy,index,ns\n"); /* index: the run's position in its series, in run order */
    for (int i = 0; i < r->count; i++) {
        const lat_series *s = &r->series[i];
        for (size_t j = 0; j < s->n; j++)
            fprintf(f, "%s,%s,%zu,%llu\n", s->mode, s->policy, j, (unsigned long long)s->ns[j]);
    }
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "barecuda latency: error writing %s\n", path);
    return bad ? -1 : 0;
}

int lat_write_svg(const lat_report *r, const char *path)
{
    bc_svg_series s[32];
    char names[32][48];
    int n = 0;
    for (int i = 0; i < r->count && n < 32; i++) {
        const lat_series *x = &r->series[i];
        if (x->kind != LAT_E2E || x->floor)
            continue;
        snprintf(names[n], sizeof names[n], "%s / %s wait", x->resident ? x->mode : x->graph ? "graph" : "stream",
                 x->policy);
        s[n].name = names[n];
        s[n].sorted_ns = x->sorted;
        s[n].n = x->n;
        n++;
    }
    if (n == 0) {
        fprintf(stderr, "barecuda latency: no end-to-end series to draw in %s\n", path);
        return -1;
    }
    char title[256], shape[96];
    shape_str(r, 0, shape, sizeof shape);
    snprintf(title, sizeof title, "barecuda latency %s %s->%s [%s]\n%s: host call -> completion seen "
                                  "by the host, %d runs per series",
             shape, bc_cli_dtype_name(r->ab), bc_cli_dtype_name(r->out), r->plan.config, r->device, r->runs);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "barecuda latency: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int bad = bc_svg_hist_write(f, title, s, n) != 0;
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "barecuda latency: error writing %s\n", path);
    return bad ? -1 : 0;
}
