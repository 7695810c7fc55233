#!/usr/bin/env python3
"""The example's policy network in PyTorch, timed the way example_policy
times barecuda: one sample = time.perf_counter_ns() (CLOCK_MONOTONIC)
before g.replay(), torch.cuda.synchronize(), perf_counter_ns() after: host
call -> completion seen by the host, the thread pinned to one CPU,
warm-up runs first (not recorded), nearest-rank percentiles (the sample at
1-based rank ceil(p/100 * n), as tools/cli/stats.h).

The network: Linear(64, 256) -> LayerNorm -> GELU(tanh) -> Linear(256, 256)
-> LayerNorm -> GELU(tanh) -> Linear(256, 16) -> tanh, batch 16, bf16
weights and activations (PyTorch's usual inference form), captured in one
CUDA graph. barecuda's version keeps fp32 between each GEMM and the
LayerNorm after it; the work per step is the same.

usage: policy_torch.py [--runs N] [--warmup W] [--cpu C] [--json]
"""
import argparse
import json
import os
import sys
import time

import torch

BATCH, OBS, HIDDEN, ACT = 16, 64, 256, 16


def nearest_rank(sorted_ns, p):
    n = len(sorted_ns)
    if p >= 100:
        return sorted_ns[-1]
    rank = (round(p * 1000) * n + 99999) // 100000
    return sorted_ns[min(max(rank, 1), n) - 1]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the current one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    cpu = args.cpu if args.cpu is not None else os.sched_getaffinity(0).pop()
    os.sched_setaffinity(0, {cpu})
    torch.manual_seed(1)
    dev = torch.device("cuda")
    net = torch.nn.Sequential(
        torch.nn.Linear(OBS, HIDDEN), torch.nn.LayerNorm(HIDDEN), torch.nn.GELU(approximate="tanh"),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.LayerNorm(HIDDEN), torch.nn.GELU(approximate="tanh"),
        torch.nn.Linear(HIDDEN, ACT), torch.nn.Tanh(),
    ).to(dev, torch.bfloat16).eval()
    obs = torch.randn(BATCH, OBS, device=dev, dtype=torch.bfloat16)
    with torch.inference_mode():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm the kernels up outside the capture
            for _ in range(3):
                net(obs)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            action = net(obs)
        g.replay()
        torch.cuda.synchronize()
        assert torch.isfinite(action).all()
        clock, sync = time.perf_counter_ns, torch.cuda.synchronize
        ns = [0] * args.runs
        for i in range(-args.warmup, args.runs):
            t0 = clock()
            g.replay()
            sync()
            t1 = clock()
            if i >= 0:
                ns[i] = t1 - t0
    ns.sort()
    row = {p: nearest_rank(ns, v) / 1e3 for p, v in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9))}
    row.update(max=ns[-1] / 1e3, mean=sum(ns) / len(ns) / 1e3)
    if args.json:
        print(json.dumps({"tool": "policy_torch", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                          "runs": args.runs, "warmup": args.warmup, "cpu": cpu, "us": row}))
        return 0
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: the same policy MLP as one CUDA graph, "
          f"host call -> torch.cuda.synchronize() returned,\n  {args.runs} runs after {args.warmup} warm-up, "
          f"thread pinned to CPU {cpu}; nearest-rank percentiles, us:")
    print(f"  p50 {row['p50']:.2f}  p90 {row['p90']:.2f}  p99 {row['p99']:.2f}  p99.9 {row['p999']:.2f}  "
          f"max {row['max']:.2f}  mean {row['mean']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
