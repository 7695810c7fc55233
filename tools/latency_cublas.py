#!/usr/bin/env python3
"""End-to-end latency of one GEMM through PyTorch (cuBLAS), measured the way
`barecuda latency` measures barecuda, for the side-by-side latency table.

One sample = time.perf_counter_ns() (CLOCK_MONOTONIC) right before the call,
then torch.cuda.synchronize(), then perf_counter_ns() again: host call ->
completion seen by the host. Two modes per shape:
  eager  torch.mm(a, b.t(), out=d); torch.cuda.synchronize()
  graph  g.replay(); torch.cuda.synchronize()   (a CUDA graph of that one mm)
D = A . B^T with A MxK and B NxK row-major, random N(0,1) data, made once;
warm-up runs first, not recorded. Percentiles by nearest rank (the same
definition as tools/cli/stats.h): the sample at 1-based rank ceil(p/100 * n).
torch.cuda.synchronize waits the way the primary context's scheduling flag
says (CUDA's default, "auto": spin while fewer active contexts than cores).

usage: latency_cublas.py [--shapes MxNxK,...] [--dtype bf16|f16] [--runs N] [--warmup W]
                         [--mode eager|graph|all] [--csv FILE] [--json]
Default shapes: the latency list, 128x2048x2048, 64x1024x1024, 256x4096x4096.
"""
import argparse
import json
import sys
import time

import torch

from shapelist import parse_shapes

DEFAULT_SHAPES = "128x2048x2048,64x1024x1024,256x4096x4096"
PCTS = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9))


def nearest_rank(sorted_ns, p):
    """The sample at rank ceil(p/100 * n), computed in integers (p to 0.001)."""
    n = len(sorted_ns)
    if n == 0:
        return 0
    if p <= 0:
        return sorted_ns[0]
    if p >= 100:
        return sorted_ns[-1]
    pm = round(p * 1000)
    rank = (pm * n + 99999) // 100000
    return sorted_ns[min(max(rank, 1), n) - 1]


def sample(fn, runs, warmup):
    clock, sync = time.perf_counter_ns, torch.cuda.synchronize
    out = [0] * runs  # allocated before timing
    for i in range(-warmup, runs):
        t0 = clock()
        fn()
        sync()
        t1 = clock()
        if i >= 0:
            out[i] = t1 - t0
    out.sort()
    return out


def measure(m, n, k, dtype, runs, warmup, modes):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype)
    d = torch.empty(m, n, device="cuda", dtype=dtype)
    bt = b.t()
    ref = (a.float() @ b.float().t())
    series = {}
    if "eager" in modes:
        series["eager"] = sample(lambda: torch.mm(a, bt, out=d), runs, warmup)
        err = ((d.float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise RuntimeError(f"{m}x{n}x{k}: eager result off by {err:.3e} (relative Frobenius)")
    if "graph" in modes:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                torch.mm(a, bt, out=d)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            torch.mm(a, bt, out=d)
        d.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        err = ((d.float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise RuntimeError(f"{m}x{n}x{k}: graph result off by {err:.3e} (relative Frobenius)")
        series["graph"] = sample(g.replay, runs, warmup)
    return series


def summarize(ns):
    row = {key + "_us": nearest_rank(ns, p) / 1e3 for key, p in PCTS}
    row.update({"max_us": ns[-1] / 1e3, "min_us": ns[0] / 1e3, "mean_us": sum(ns) / len(ns) / 1e3, "samples": len(ns)})
    return row


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", type=parse_shapes, default=parse_shapes(DEFAULT_SHAPES))
    ap.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--mode", choices=["eager", "graph", "all"], default="all")
    ap.add_argument("--csv", help="write every sample: shape,mode,index,ns")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        ap.error("--runs must be >= 1 and --warmup >= 0")
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
    modes = ("eager", "graph") if args.mode == "all" else (args.mode,)
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    rows, samples = [], []
    for (m, n, k) in args.shapes:
        for mode, ns in measure(m, n, k, dtype, args.runs, args.warmup, modes).items():
            row = {"m": m, "n": n, "k": k, "mode": mode}
            row.update(summarize(ns))
            rows.append(row)
            samples.append((f"{m}x{n}x{k}", mode, ns))
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("shape,mode,index,ns\n")
            for shape, mode, ns in samples:
                f.writelines(f"{shape},{mode},{i},{v}\n" for i, v in enumerate(ns))
    if args.json:
        print(json.dumps({"tool": "latency_cublas", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                          "dtype": args.dtype, "runs": args.runs, "warmup": args.warmup,
                          "percentiles": "nearest-rank", "rows": rows}))
        return 0
    print(f"cuBLAS via PyTorch {torch.__version__} on {torch.cuda.get_device_name()}, {args.dtype}: end to end, "
          f"host call -> torch.cuda.synchronize() returned; {args.runs} runs after {args.warmup} warm-up; "
          f"nearest-rank percentiles, us")
    print(f"  {'shape':<16} {'mode':<6} {'p50':>9} {'p90':>9} {'p99':>9} {'p99.9':>9} {'max':>9} {'mean':>9}")
    for r in rows:
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        print(f"  {shape:<16} {r['mode']:<6} "
              f"{r['p50_us']:9.2f} {r['p90_us']:9.2f} {r['p99_us']:9.2f} {r['p999_us']:9.2f} {r['max_us']:9.2f} "
              f"{r['mean_us']:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
