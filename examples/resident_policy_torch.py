#!/usr/bin/env python3
"""The control-loop policy of examples/resident_policy.c in PyTorch with a
CUDA graph, timed the same way, thread pinned, for the comparison with the
resident executor.

The network: batch 16, 256 -> 1024 -> 1024 -> 64, nn.Linear layers with bias,
ReLU but after the last, bf16. One sample = time.perf_counter_ns()
(CLOCK_MONOTONIC) right before the first call, then torch.cuda.synchronize(),
then perf_counter_ns() again; in graph+io mode the first call is the
observation's write into the pinned buffer and the last before the second
clock the action's read out of it, plain memory copies (ctypes.memmove,
no tensor dispatch, as the C example's memcpy). Two modes:
  graph      g.replay() of the captured forward; observation and action stay
             on the device (as `barecuda latency --mlp ... --resident`'s
             "resident" mode): host call -> synchronize returned;
  graph+io   the same graph with the observation copied in from pinned host
             memory and the action copied back into pinned host memory,
             captured in the graph, timed as resident_policy's steps: from
             the observation's write into the pinned buffer to the action's
             read out of it.
Actions are checked against an fp64 CPU reference (hidden layers rounded to
bf16 as the GPU stores them) before timing. Percentiles by nearest rank.
torch.cuda.synchronize waits the way the primary context's scheduling flag
says (CUDA's default, "auto": spin while fewer active contexts than cores).

usage: resident_policy_torch.py [--steps N] [--warmup W] [--cpu C] [--json]
"""
import argparse
import ctypes
import json
import os
import sys
import time

import torch

BATCH, WIDTHS = 16, (256, 1024, 1024, 64)


def nearest_rank(sorted_ns, p):
    n = len(sorted_ns)
    rank = -(-round(p * 1000) * n // 100000)  # ceil(p/100 * n) in integers
    return sorted_ns[min(max(rank, 1), n) - 1]


def build():
    layers = []
    for i in range(len(WIDTHS) - 1):
        lin = torch.nn.Linear(WIDTHS[i], WIDTHS[i + 1], bias=True, device="cuda", dtype=torch.bfloat16)
        layers.append(lin)
        if i + 2 < len(WIDTHS):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).eval()


def reference(net, obs):
    """fp64 forward; hidden activations rounded to bf16 as stored on the GPU."""
    x = obs.double().cpu()
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    for i, lin in enumerate(linears):
        x = x @ lin.weight.double().cpu().t() + lin.bias.double().cpu()
        if i + 1 < len(linears):
            x = torch.relu(x).to(torch.bfloat16).double()
    return x


def sample(fn, steps, warmup, io=None):
    """io: (pinned observation, its next value, pinned action, the host's copy), CPU tensors: the
    observation's write and the action's read, plain memory copies, are timed with the step."""
    clock, sync, move = time.perf_counter_ns, torch.cuda.synchronize, ctypes.memmove
    if io:
        w_dst, w_src, r_dst, r_src = io[0].data_ptr(), io[1].data_ptr(), io[3].data_ptr(), io[2].data_ptr()
        w_n, r_n = io[0].numel() * io[0].element_size(), io[2].numel() * io[2].element_size()
    out = [0] * steps
    for i in range(-warmup, steps):
        t0 = clock()
        if io:
            move(w_dst, w_src, w_n)
        fn()
        sync()
        if io:
            move(r_dst, r_src, r_n)
        t1 = clock()
        if i >= 0:
            out[i] = t1 - t0
    out.sort()
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--cpu", type=int, default=-1, help="pin the measuring thread to this CPU")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.manual_seed(0)
    net = build()
    obs_dev = torch.randn(BATCH, WIDTHS[0], device="cuda", dtype=torch.bfloat16)
    obs_host = torch.empty(BATCH, WIDTHS[0], dtype=torch.bfloat16).pin_memory()
    act_host = torch.empty(BATCH, WIDTHS[-1], dtype=torch.bfloat16).pin_memory()
    graphs = {}
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                act_dev = net(obs_dev)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            act_dev = net(obs_dev)
        graphs["graph"] = g
        gio = torch.cuda.CUDAGraph()
        with torch.cuda.graph(gio):
            obs_dev.copy_(obs_host, non_blocking=True)
            act_io = net(obs_dev)
            act_host.copy_(act_io, non_blocking=True)
        graphs["graph+io"] = gio
    worst = 0.0
    for trial in range(3):
        obs_host.copy_(torch.randn(BATCH, WIDTHS[0]).to(torch.bfloat16))
        act_host.fill_(float("nan"))
        gio.replay()
        torch.cuda.synchronize()
        ref = reference(net, obs_host)
        worst = max(worst, ((act_host.double() - ref).abs().max() / ref.abs().max()).item())
    if not worst < 2e-2:
        raise RuntimeError(f"actions off the fp64 reference by {worst:.3e} of their scale")
    rows = []
    host_io = (obs_host, torch.randn(BATCH, WIDTHS[0]).to(torch.bfloat16), act_host,
               torch.empty(BATCH, WIDTHS[-1], dtype=torch.bfloat16))
    for mode, gr in graphs.items():
        ns = sample(gr.replay, args.steps, args.warmup, host_io if mode == "graph+io" else None)
        rows.append({"mode": mode, "p50_us": nearest_rank(ns, 50) / 1e3, "p99_us": nearest_rank(ns, 99) / 1e3,
                     "p999_us": nearest_rank(ns, 99.9) / 1e3, "max_us": ns[-1] / 1e3,
                     "mean_us": sum(ns) / len(ns) / 1e3})
    if args.json:
        print(json.dumps({"tool": "resident_policy_torch", "device": torch.cuda.get_device_name(),
                          "torch": torch.__version__, "steps": args.steps, "cpu": args.cpu,
                          "max_rel_error": worst, "rows": rows}))
        return 0
    print(f"PyTorch {torch.__version__} CUDA graph, policy {BATCH}x{'-'.join(map(str, WIDTHS))} bf16 on "
          f"{torch.cuda.get_device_name()}: {args.steps} steps, thread {'pinned' if args.cpu >= 0 else 'not pinned'}; "
          f"actions within {worst:.2e} of the fp64 reference's scale")
    print(f"  {'mode':<10} {'p50':>9} {'p99':>9} {'p99.9':>9} {'max':>9} {'mean':>9}  (us; graph: call -> "
          f"synchronize returned; graph+io: observation written -> action read)")
    for r in rows:
        print(f"  {r['mode']:<10} {r['p50_us']:9.2f} {r['p99_us']:9.2f} {r['p999_us']:9.2f} {r['max_us']:9.2f} "
              f"{r['mean_us']:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
