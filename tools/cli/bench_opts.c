/* barecuda bench: usage and option parsing (listed shapes or a sweep). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "cli_util.h"

void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: barecuda bench [--shapes MxNxK[,MxNxK...]] [--dtype bf16|f16] [--out bf16|f16|f32]\n"
            "                      [--epilogue TAG] [--replays R] [--warmup W] [--config NAME] [--split S]\n"
            "                      [--stream-k] [--json] [--csv FILE]\n"
            "       barecuda bench --sweep COUNT --seed S [--mem-cap BYTES] [--epilogue-fraction F]\n"
            "                      [--replays R] [--warmup W] [--config NAME] [--split S] [--stream-k] [--json]\n"
            "                      [--csv FILE]\n"
            "       barecuda bench --sweep COUNT --seed S [--mem-cap BYTES] [--epilogue-fraction F] --list\n"
            "Device time per GEMM (D = A[MxK] . B[NxK]^T), timed like tools/bench_cublas.py: per shape a graph\n"
            "of %d launches over 2..8 rotating input sets (N(0,1) data), W warm-up replays (default 3), then R\n"
            "replays (default 20) each between two events; per GEMM = replay / %d; median, min, max.\n"
            "Default shapes: the benchmark list. Every shape is first checked against the CPU reference on\n"
            "poisoned outputs (direct launch, then the graph); a wrong result prints FAIL, no time, exit %d.\n"
            "--sweep draws COUNT shapes from seed S: M, N log-uniform in [1, 16384], K log-uniform in\n"
            "[8, 16384] rounded to a multiple of 8, all rotating sets of a shape within --mem-cap (default\n"
            "4 GiB); a fraction F (default 0.5) carries an epilogue: c (+C), c_alias (C is D), bias,\n"
            "bias_relu, f16_in, f16_out or f32_out, equally likely (README, \"Shape sweeps\"). --list prints\n"
            "the drawn shapes without a device (no timed-run options with it). --epilogue TAG gives every\n"
            "listed shape one of those epilogues (or plain), with its types: not with --dtype/--out. With\n"
            "--config/--split, a sweep marks the shapes the forced configuration cannot take SKIP; listed\n"
            "shapes stop at the first such shape, an error.\n"
            "%% of floor = max(2MNK / 800 TFLOP/s, bytes / 3.02 TB/s) / time.\n"
            "A configuration shown as NAME^T ran an N = 1 GEMM as the 1 x M product B . A^T; as NAME^D, its\n"
            "dense-row kernel, which copies short packed rows of A as they lie; as NAME^M, its multicast twin\n"
            "(clusters of CTAs sharing B's loads, or A's and B's, for rows off the 32-byte sectors; README,\n"
            "\"GEMM configurations\").\n"
            "--stream-k lets each plan take its last partial round by stream-K where the rule finds it pays\n"
            "(desc.stream_k = 1; shown as NAME^K; README, \"Stream-K\").\n",
            BC_BENCH_PER_GRAPH, BC_BENCH_PER_GRAPH, BC_EXIT_VERIFY);
}

static int bad(const char *what, const char *value, const char *want)
{
    fprintf(stderr, "barecuda bench: bad %s '%s' (%s)\n", what, value, want);
    return -1;
}

/* The options that only a listed-shape run or only a sweep takes. */
enum {
    SEEN_SHAPES = 1, SEEN_DTYPE = 2, SEEN_OUT = 4, SEEN_SEED = 8, SEEN_CAP = 16, SEEN_FRAC = 32, SEEN_LIST = 64,
    SEEN_EPI = 128, SEEN_RUN = 256 /* an option of a timed run (RUN_OPTIONS) */
};
/* The short codes of a timed run's options: --replays, --warmup, --config, --stream-k, --split, --csv, --json. */
#define RUN_OPTIONS "rwCKSvj"

static int check_mode(bench_opts *o, unsigned seen)
{
    if (!o->sweep) {
        if (seen & (SEEN_SEED | SEEN_CAP | SEEN_FRAC | SEEN_LIST))
            return fprintf(stderr, "barecuda bench: --seed, --mem-cap, --epilogue-fraction and --list need "
                                   "--sweep\n"), -1;
        if ((seen & SEEN_EPI) && (seen & (SEEN_DTYPE | SEEN_OUT)))
            return fprintf(stderr, "barecuda bench: --epilogue sets the types: no --dtype or --out with it\n"), -1;
        return 0;
    }
    if (seen & (SEEN_SHAPES | SEEN_DTYPE | SEEN_OUT | SEEN_EPI))
        return fprintf(stderr, "barecuda bench: --sweep draws its own shapes, types and epilogues: no --shapes, "
                               "--dtype, --out or --epilogue\n"), -1;
    if (!(seen & SEEN_SEED))
        return fprintf(stderr, "barecuda bench: --sweep needs --seed S (the sweep is named by its seed)\n"), -1;
    if ((seen & SEEN_LIST) && (seen & SEEN_RUN))
        return fprintf(stderr, "barecuda bench: --list only prints the drawn shapes: no --replays, --warmup, "
                               "--config, --split, --stream-k, --json or --csv with it\n"), -1;
    return 0;
}

static int fill_items(bench_opts *o, const bc_shape *listed, int listed_count)
{
    const int n = o->sweep ? o->sp.count : listed_count;
    o->items = calloc((size_t)n, sizeof *o->items);
    if (o->items == NULL)
        return fprintf(stderr, "barecuda bench: cannot allocate %d shapes\n", n), -1;
    o->count = n;
    if (!o->sweep) {
        for (int i = 0; i < n; i++)
            o->items[i].s = listed[i], o->items[i].epi = o->epi;
        return 0;
    }
    if (bc_sweep_draw(&o->sp, o->items))
        return fprintf(stderr, "barecuda bench: no shape fits --mem-cap %llu bytes after %d candidates\n",
                       (unsigned long long)o->sp.mem_cap, BC_SWEEP_MAX_ATTEMPTS), -1;
    return 0;
}

int bench_opts_parse(int argc, char **argv, bench_opts *o)
{
    static const struct option longs[] = {
        {"shapes", 1, 0, 's'},  {"dtype", 1, 0, 't'},  {"out", 1, 0, 'o'},     {"replays", 1, 0, 'r'},
        {"warmup", 1, 0, 'w'},  {"config", 1, 0, 'C'}, {"json", 0, 0, 'j'},    {"help", 0, 0, 'h'},
        {"split", 1, 0, 'S'},   {"sweep", 1, 0, 'W'},  {"seed", 1, 0, 'e'},    {"mem-cap", 1, 0, 'M'},
        {"epilogue-fraction", 1, 0, 'F'}, {"csv", 1, 0, 'v'}, {"list", 0, 0, 'l'}, {"epilogue", 1, 0, 'E'},
        {"stream-k", 0, 0, 'K'},
        {0, 0, 0, 0},
    };
    bc_shape listed[BC_SHAPES_MAX];
    memset(o, 0, sizeof *o);
    int listed_count = bc_shapes_default_count;
    memcpy(listed, bc_shapes_default, (size_t)listed_count * sizeof listed[0]);
    o->ab = o->out = BC_DTYPE_BF16;
    o->replays = 20;
    o->warmup = 3;
    o->sp.mem_cap = BC_SWEEP_DEFAULT_MEM_CAP;
    o->sp.epi_fraction = BC_SWEEP_DEFAULT_EPI_FRACTION;
    unsigned seen = 0;
    int c;
    long long v = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c > 0 && strchr(RUN_OPTIONS, c) != NULL)
            seen |= SEEN_RUN;
        switch (c) {
        case 's':
            if ((listed_count = bc_shapes_parse(optarg, listed, BC_SHAPES_MAX)) < 1)
                return bad("--shapes", optarg, "want MxNxK[,MxNxK...], each >= 1, at most 64 shapes");
            seen |= SEEN_SHAPES;
            break;
        case 't':
            if (bc_cli_parse_dtype(optarg, &o->ab) || o->ab == BC_DTYPE_F32)
                return bad("--dtype", optarg, "bf16 or f16");
            seen |= SEEN_DTYPE;
            break;
        case 'o':
            if (bc_cli_parse_dtype(optarg, &o->out))
                return bad("--out", optarg, "bf16, f16 or f32");
            seen |= SEEN_OUT;
            break;
        case 'r':
            if (bc_cli_parse_ll(optarg, 1, 100000, &v))
                return bad("--replays", optarg, "1..100000");
            o->replays = (int)v;
            break;
        case 'w':
            if (bc_cli_parse_ll(optarg, 0, 100000, &v))
                return bad("--warmup", optarg, "0..100000");
            o->warmup = (int)v;
            break;
        case 'C': o->config = optarg; break;
        case 'K': o->stream_k = 1; break;
        case 'S':
            if (bc_cli_parse_ll(optarg, 0, 16, &v))
                return bad("--split", optarg, "0 = the rule, 1 = none, 2..16");
            o->split_k = (uint32_t)v;
            break;
        case 'W':
            if (bc_cli_parse_ll(optarg, 1, BC_SWEEP_MAX, &v))
                return bad("--sweep", optarg, "a shape count, 1..100000");
            o->sweep = 1;
            o->sp.count = (int)v;
            break;
        case 'e':
            if (bc_cli_parse_ll(optarg, 0, 0x7FFFFFFFFFFFFFFFll, &v))
                return bad("--seed", optarg, "0..2^63-1");
            o->sp.seed = (uint64_t)v;
            seen |= SEEN_SEED;
            break;
        case 'M':
            if (bc_cli_parse_ll(optarg, (long long)BC_SWEEP_MIN_MEM_CAP, 1ll << 50, &v))
                return bad("--mem-cap", optarg, "bytes, 65536..2^50");
            o->sp.mem_cap = (uint64_t)v;
            seen |= SEEN_CAP;
            break;
        case 'F':
            if (bc_cli_parse_double(optarg, 0.0, 1.0, &o->sp.epi_fraction))
                return bad("--epilogue-fraction", optarg, "a number in [0, 1]");
            seen |= SEEN_FRAC;
            break;
        case 'E': {
            int found = 0;
            for (int e = 0; e < BC_EPI_COUNT && !found; e++)
                if (strcmp(optarg, bc_epi_table[e].tag) == 0)
                    o->epi = (bc_epi)e, found = 1;
            if (!found)
                return bad("--epilogue", optarg, "plain, c, c_alias, bias, bias_relu, f16_in, f16_out or f32_out");
            o->epi_set = 1;
            seen |= SEEN_EPI;
            break;
        }
        case 'v': o->csv = optarg; break;
        case 'l':
            o->list_only = 1;
            seen |= SEEN_LIST;
            break;
        case 'j': o->json = 1; break;
        case 'h': bench_usage(stdout); return 1;
        default:
            return fprintf(stderr, "barecuda bench: unknown option or missing value: '%s'\n", argv[optind - 1]), -1;
        }
    }
    if (optind < argc)
        return fprintf(stderr, "barecuda bench: unexpected argument '%s'\n", argv[optind]), -1;
    if (check_mode(o, seen))
        return -1;
    if (o->csv != NULL && bc_cli_check_writable("bench", "csv", o->csv))
        return -1;
    if (!(seen & SEEN_OUT))
        o->out = o->ab; /* as bench_cublas.py: the output type defaults to the input type */
    if (o->epi_set)
        o->ab = bc_epi_table[o->epi].ab, o->out = bc_epi_table[o->epi].out;
    return fill_items(o, listed, listed_count);
}

void bench_opts_free(bench_opts *o)
{
    free(o->items);
    o->items = NULL;
}

bc_epi_desc bench_item_desc(const bench_opts *o, int i)
{
    if (o->sweep || o->epi_set)
        return bc_epi_table[o->items[i].epi];
    bc_epi_desc d = bc_epi_table[BC_EPI_PLAIN];
    d.ab = o->ab;
    d.out = o->out;
    return d;
}
