#!/usr/bin/env python3
"""cuBLAS (through PyTorch) device time per GEMM, timed the way anchors.md
says and the way `barecuda bench` times barecuda: a CUDA graph of 50
back-to-back GEMMs over rotating input sets (enough that small shapes do not
sit in L2), median over replays. D = A . B^T with A MxK, B NxK row-major.

usage: bench_cublas.py [--dtype bf16|f16] [--out bf16|f16|f32] [--json] MxNxK ...
"""
import json
import sys

import torch


def time_shape(m, n, k, dtype, out_dtype, replays=20, per_graph=50):
    bytes_per_set = (m * k + n * k) * 2 + m * n * torch.tensor([], dtype=out_dtype).element_size()
    sets = max(2, min(8, (400 << 20) // max(bytes_per_set, 1)))  # > 8x L2 when small, <= 8 sets
    a = [torch.randn(m, k, device="cuda", dtype=dtype) for _ in range(sets)]
    b = [torch.randn(n, k, device="cuda", dtype=dtype) for _ in range(sets)]
    d = [torch.empty(m, n, device="cuda", dtype=out_dtype) for _ in range(sets)]

    def run(i):
        if out_dtype == dtype:
            torch.mm(a[i % sets], b[i % sets].t(), out=d[i % sets])
        else:
            d[i % sets].copy_(torch.mm(a[i % sets], b[i % sets].t()))

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
    return {"m": m, "n": n, "k": k, "median_us": times[len(times) // 2], "min_us": times[0],
            "max_us": times[-1], "sets": sets}


def main(argv):
    names = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    dtype, out, as_json, shapes = torch.bfloat16, None, False, []
    it = iter(argv)
    for arg in it:
        if arg == "--dtype":
            dtype = names[next(it)]
        elif arg == "--out":
            out = names[next(it)]
        elif arg == "--json":
            as_json = True
        else:
            shapes.append(tuple(int(x) for x in arg.split("x")))
    out = out or dtype
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    rows = [time_shape(m, n, k, dtype, out) for (m, n, k) in shapes]
    for r in rows:
        r["tflops"] = 2.0 * r["m"] * r["n"] * r["k"] / (r["median_us"] * 1e-6) / 1e12
    if as_json:
        print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}))
    else:
        for r in rows:
            print(f"cublas {r['m']}x{r['n']}x{r['k']}: {r['median_us']:.2f} us "
                  f"(min {r['min_us']:.2f}, max {r['max_us']:.2f}) {r['tflops']:.1f} TFLOP/s")


if __name__ == "__main__":
    main(sys.argv[1:])
