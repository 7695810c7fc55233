#!/usr/bin/env python3
"""cuBLAS (through PyTorch) device time per GEMM, timed the way anchors.md
says and the way `barecuda bench` times barecuda: a CUDA graph of 50
back-to-back GEMMs over 2..8 rotating input sets (the same rule as barecuda's:
a small shape's eight sets can still fit the L2, on both sides alike), median
over replays. D = A . B^T with A MxK, B NxK row-major.

With --sweep it draws the same shapes and epilogues as `barecuda bench
--sweep` (tools/sweep.py) and times, for each epilogue, the nearest thing
PyTorch offers (EPILOGUE_OPS below; every kernel PyTorch launches for the
call is inside the graph and timed; --json rows name what was called and how
many kernels one call launched, counted once per epilogue with the profiler).

With --epilogue TAG the listed shapes carry that sweep epilogue (and its
types), timed the same way as in a sweep.

usage: bench_cublas.py [--dtype bf16|f16] [--out bf16|f16|f32] [--json] MxNxK ...
       bench_cublas.py --epilogue TAG [--json] MxNxK ...
       bench_cublas.py --sweep COUNT --seed S [--mem-cap BYTES] [--epilogue-fraction F] [--json]
"""
import json
import sys

import torch

import sweep

NAMES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def time_graph(run, replays=20, per_graph=50):
    """Median/min/max device us per call of run(i) over a graph of per_graph calls."""
    for i in range(3):
        run(i)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for i in range(3):
            run(i)
        s.synchronize()
        with torch.cuda.graph(g, stream=s):
            for i in range(per_graph):
                run(i)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3 / per_graph)
    times.sort()
    del g
    return times[len(times) // 2], times[0], times[-1]


def time_shape(m, n, k, dtype, out_dtype, replays=20, per_graph=50):
    bytes_per_set = (m * k + n * k) * 2 + m * n * torch.tensor([], dtype=out_dtype).element_size()
    sets = max(2, min(8, (400 << 20) // max(bytes_per_set, 1)))  # barecuda's rule (tools/cli/shapes.h)
    a = [torch.randn(m, k, device="cuda", dtype=dtype) for _ in range(sets)]
    b = [torch.randn(n, k, device="cuda", dtype=dtype) for _ in range(sets)]
    d = [torch.empty(m, n, device="cuda", dtype=out_dtype) for _ in range(sets)]

    def run(i):
        if out_dtype == dtype:
            torch.mm(a[i % sets], b[i % sets].t(), out=d[i % sets])
        else:
            d[i % sets].copy_(torch.mm(a[i % sets], b[i % sets].t()))

    med, lo, hi = time_graph(run, replays, per_graph)
    return {"m": m, "n": n, "k": k, "median_us": med, "min_us": lo, "max_us": hi, "sets": sets}


# ---------------------------------------------------------------- sweeps

def mm_f32_out():
    """A callable (a, bt, out) computing bf16 x bf16 -> f32 in one cuBLAS call if this PyTorch has
    mm's out_dtype, else None."""
    a = torch.randn(16, 16, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(16, 16, device="cuda", dtype=torch.float32)
    for call in (lambda x, y, o: torch.mm(x, y, torch.float32, out=o),
                 lambda x, y, o: torch.mm(x, y, out_dtype=torch.float32, out=o)):
        try:
            call(a, a.t(), out)
            torch.cuda.synchronize()
            return call
        except (TypeError, RuntimeError):
            continue
    return None


def addmm_relu():
    """torch._addmm_activation (one cuBLASLt call with a bias+ReLU epilogue where PyTorch can) or None."""
    fn = getattr(torch, "_addmm_activation", None)
    if fn is None:
        return None
    try:
        x = torch.randn(16, 16, device="cuda", dtype=torch.bfloat16)
        fn(x[0], x, x.t(), use_gelu=False)
        torch.cuda.synchronize()
        return fn
    except (TypeError, RuntimeError):
        return None


def epilogue_ops():
    """tag -> (what is called, factory(tensors) -> run(i))."""
    f32 = mm_f32_out()
    relu = addmm_relu()

    def mm(t):
        return lambda i: torch.mm(t["a"][i], t["b"][i].t(), out=t["d"][i])

    ops = {
        "plain": ("torch.mm(A, B.t(), out=D)", mm),
        "f16_in": ("torch.mm(A, B.t(), out=D) in f16", mm),
        "c": ("torch.addmm(C, A, B.t(), out=D), C separate, beta = alpha = 1",
              lambda t: lambda i: torch.addmm(t["c"][i], t["a"][i], t["b"][i].t(), out=t["d"][i])),
        "c_alias": ("D.addmm_(A, B.t()) in place (C is D), beta = alpha = 1",
                    lambda t: lambda i: t["d"][i].addmm_(t["a"][i], t["b"][i].t())),
        "bias": ("torch.addmm(bias, A, B.t(), out=D) (what F.linear calls)",
                 lambda t: lambda i: torch.addmm(t["bias"][i], t["a"][i], t["b"][i].t(), out=t["d"][i])),
        "f16_out": ("torch.mm in bf16, then D.copy_ to f16 (no bf16 -> f16 GEMM in PyTorch)",
                    lambda t: lambda i: t["d"][i].copy_(torch.mm(t["a"][i], t["b"][i].t()))),
    }
    if relu is not None:
        ops["bias_relu"] = ("torch._addmm_activation(bias, A, B.t(), use_gelu=False) (cuBLASLt bias+ReLU epilogue)",
                            lambda t: lambda i: relu(t["bias"][i], t["a"][i], t["b"][i].t(), use_gelu=False))
    else:
        ops["bias_relu"] = ("torch.addmm(bias, A, B.t(), out=D) then relu_ (two kernels)",
                            lambda t: lambda i: torch.addmm(t["bias"][i], t["a"][i], t["b"][i].t(),
                                                            out=t["d"][i]).relu_())
    if f32 is not None:
        ops["f32_out"] = ("torch.mm(A, B.t(), out_dtype=float32, out=D) (one GEMM, f32 output)",
                          lambda t: lambda i: f32(t["a"][i], t["b"][i].t(), t["d"][i]))
    else:
        ops["f32_out"] = ("torch.mm in bf16, then D.copy_ to f32 (this PyTorch has no mm out_dtype)",
                          lambda t: lambda i: t["d"][i].copy_(torch.mm(t["a"][i], t["b"][i].t())))
    return ops


def count_kernels(run):
    """Kernels one call launches (profiler), or None when the profiler cannot say."""
    try:
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run(0)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if getattr(e, "device_type", None) is not None
                 and str(e.device_type).endswith("CUDA") and "memcpy" not in e.name.lower()
                 and "memset" not in e.name.lower()]
        return len(names)
    except Exception:  # noqa: BLE001 -- any profiler failure only loses the count
        return None


def time_sweep_item(index, m, n, k, tag, ops, kernels_seen, replays=20, per_graph=50):
    e = sweep.EPI[tag]
    dtype, out = NAMES[e["ab"]], NAMES[e["out"]]
    sets = sweep.bench_sets(sweep.set_bytes(m, n, k, tag))
    t = {"a": [torch.randn(m, k, device="cuda", dtype=dtype) for _ in range(sets)],
         "b": [torch.randn(n, k, device="cuda", dtype=dtype) for _ in range(sets)],
         "d": [torch.randn(m, n, device="cuda", dtype=out) for _ in range(sets)]}
    if e["beta"] != 0.0 and not e["c_alias"]:
        t["c"] = [torch.randn(m, n, device="cuda", dtype=out) for _ in range(sets)]
    if e["bias"]:
        t["bias"] = [torch.randn(n, device="cuda", dtype=out) for _ in range(sets)]
    what, factory = ops[tag]
    call = factory(t)

    def run(i):
        call(i % sets)

    if tag not in kernels_seen:
        kernels_seen[tag] = count_kernels(run)
    med, lo, hi = time_graph(run, replays, per_graph)
    del t, call
    return {"index": index, "m": m, "n": n, "k": k, "epilogue": tag, "median_us": med, "min_us": lo, "max_us": hi,
            "sets": sets, "what": what, "kernels": kernels_seen[tag]}


def main_sweep(argv):
    import argparse
    ap = argparse.ArgumentParser(description="cuBLAS on a barecuda shape sweep")
    sweep.add_arguments(ap, "--sweep")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--replays", type=int, default=20)
    args = ap.parse_args(argv)
    sweep.check_arguments(ap, args, "--sweep")
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    ops, kernels_seen, rows = epilogue_ops(), {}, []
    for i, (m, n, k, tag) in enumerate(sweep.draw(args.count, args.seed, args.mem_cap, args.epilogue_fraction)):
        rows.append(time_sweep_item(i, m, n, k, tag, ops, kernels_seen, args.replays))
        torch.cuda.empty_cache()
        if not args.json:
            r = rows[-1]
            print(f"cublas #{i} {m}x{n}x{k} {tag}: {r['median_us']:.2f} us ({r['what']}; {r['kernels']} kernels)",
                  flush=True)
    if args.json:
        print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                          "sweep": {"generator": 1, "count": args.count, "seed": args.seed, "mem_cap": args.mem_cap,
                                    "epilogue_fraction": args.epilogue_fraction},
                          "ops": {tag: what for tag, (what, _f) in ops.items()}, "kernels": kernels_seen,
                          "rows": rows}))
    return 0


def main(argv):
    if "--sweep" in argv:
        return main_sweep(argv)
    dtype, out, as_json, shapes, tag = torch.bfloat16, None, False, [], None
    it = iter(argv)
    for arg in it:
        if arg == "--dtype":
            dtype = NAMES[next(it)]
        elif arg == "--out":
            out = NAMES[next(it)]
        elif arg == "--json":
            as_json = True
        elif arg == "--epilogue":
            tag = next(it)
            if tag not in sweep.EPI:
                sys.exit(f"bench_cublas.py: unknown --epilogue {tag!r} ({', '.join(sweep.EPI)})")
        else:
            shapes.append(tuple(int(x) for x in arg.split("x")))
    if tag is not None and ("--dtype" in argv or "--out" in argv):
        sys.exit("bench_cublas.py: --epilogue sets the types: no --dtype or --out with it")
    out = out or dtype
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    if tag is not None:
        ops, kernels_seen = epilogue_ops(), {}
        rows = [time_sweep_item(i, m, n, k, tag, ops, kernels_seen) for i, (m, n, k) in enumerate(shapes)]
    else:
        rows = [time_shape(m, n, k, dtype, out) for (m, n, k) in shapes]
    for r in rows:
        r["tflops"] = 2.0 * r["m"] * r["n"] * r["k"] / (r["median_us"] * 1e-6) / 1e12
    if as_json:
        print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}))
    else:
        for r in rows:
            print(f"cublas {r['m']}x{r['n']}x{r['k']}: {r['median_us']:.2f} us "
                  f"(min {r['min_us']:.2f}, max {r['max_us']:.2f}) {r['tflops']:.1f} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
