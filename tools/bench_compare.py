#!/usr/bin/env python3
"""barecuda vs cuBLAS, same shapes, same dtype, same GPU, same invocation.

Runs `build/bin/barecuda bench --json` and `tools/bench_cublas.py --json`
(PyTorch's cuBLAS) one after the other, both timing device time per GEMM the
same way (anchors.md, "How to compare with cuBLAS": a CUDA graph of 50
back-to-back GEMMs over rotating input sets, median of the replays), and
prints one table:

  shape, ours us, cuBLAS us, ours TFLOP/s, cuBLAS TFLOP/s,
  ratio = cuBLAS time / our time (> 1: we are faster),
  floor us = max(2MNK / PEAK_FLOPS, (A + B + D bytes) / PEAK_BW) (with --epilogue, the sweep's floor:
    + C read, + bias),
  % of floor = floor / time (100% = at the floor), for us and for cuBLAS,
  the target ratio for the shape (the benchmark list's targets) and whether it is met.

PEAK_FLOPS defaults to 800e12 (the dense bf16 rate measured on H100 through
PyTorch at 8192^3, ~798 TFLOP/s, anchors.md), PEAK_BW to 3.02e12 B/s (the
measured device-to-device copy, bytes read + written). Needs only python3;
bench_cublas.py needs torch. Exit status: 0; 31 when barecuda reports a
shape that fails its correctness check (no time for it); 1 on any other
failure.

With --sweep COUNT --seed S both sides time the same drawn shapes and
epilogues instead (tools/sweep.py, `barecuda bench --sweep`; the cuBLAS side
times the nearest PyTorch call for each epilogue and the output says which):
one row per shape, the geometric mean and worst ratio, the ten worst shapes
with their configuration and % of floor, and the split by epilogue. With
--epilogue TAG the listed shapes all carry one of those epilogues (and its
types), timed on both sides as in a sweep (beta*C against torch.addmm, ...).

usage: tools/bench_compare.py [--shapes MxNxK,...] [--dtype bf16|f16] [--out bf16|f16|f32]
                              [--replays R] [--peak-flops F] [--peak-bw B] [--barecuda PATH]
                              [--order ours-first|cublas-first] [--config NAME] [--json | --markdown] [--csv FILE]
       tools/bench_compare.py --shapes MxNxK,... --epilogue TAG [--replays R] [...]
       tools/bench_compare.py --sweep COUNT --seed S [--mem-cap BYTES] [--epilogue-fraction F]
                              [--replays R] [--barecuda PATH] [--order ...] [--json | --markdown] [--csv FILE]
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys

import sweep
import sweep_compare
from shapelist import parse_shapes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SHAPES = ("8192x8192x8192,6144x6144x6144,4096x4096x4096,4096x4096x1024,2048x2048x2048,"
                  "1024x1024x1024,512x4096x4096,256x4096x4096,128x2048x2048,64x1024x1024,16x4096x4096,"
                  "4096x14336x4096,4096x4096x14336")
BYTES = {"bf16": 2, "f16": 2, "f32": 4}
# the benchmark list's targets: ours / cuBLAS throughput (= cuBLAS time / ours) to reach, per shape; 0.90 for every other shape
TARGETS = {(4096, 4096, 4096): 1.05, (6144, 6144, 6144): 1.00, (8192, 8192, 8192): 1.00,
           (2048, 2048, 2048): 1.10, (4096, 4096, 1024): 1.10, (512, 4096, 4096): 1.10,
           (256, 4096, 4096): 1.10}
DEFAULT_TARGET = 0.90


def run_json(cmd, what):
    """Runs cmd; returns (exit status, the JSON object it printed or None)."""
    print(f"# {what}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    except OSError as e:
        print(f"bench_compare: cannot run {what}: {e}", file=sys.stderr)
        return 127, None
    if p.stderr.strip():
        sys.stderr.write("".join(f"  [{what}] {line}\n" for line in p.stderr.rstrip().splitlines()))
    obj = None
    for line in reversed(p.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError as e:
                print(f"bench_compare: {what} printed bad JSON: {e}", file=sys.stderr)
            break
    if obj is None:
        print(f"bench_compare: {what} exited {p.returncode} without a JSON result", file=sys.stderr)
        if p.stdout.strip():
            sys.stderr.write(p.stdout[-2000:] + "\n")
    return p.returncode, obj


def floor_us(m, n, k, in_b, out_b, peak_flops, peak_bw):
    flop_s = 2.0 * m * n * k / peak_flops
    byte_s = ((m * k + n * k) * in_b + m * n * out_b) / peak_bw
    return max(flop_s, byte_s) * 1e6, "compute" if flop_s >= byte_s else "memory"


def build_rows(shapes, ours, cublas, args):
    by_ours = {(r["m"], r["n"], r["k"]): r for r in (ours or {}).get("rows", [])}
    by_cublas = {(r["m"], r["n"], r["k"]): r for r in (cublas or {}).get("rows", [])}
    in_b, out_b = BYTES[args.dtype], BYTES[args.out]
    rows = []
    for (m, n, k) in shapes:
        o, c = by_ours.get((m, n, k)), by_cublas.get((m, n, k))
        if args.epilogue:  # the sweep's floor: C's read and the bias counted
            fl, bound = sweep.floor_us(m, n, k, args.epilogue, args.peak_flops, args.peak_bw)
        else:
            fl, bound = floor_us(m, n, k, in_b, out_b, args.peak_flops, args.peak_bw)
        ours_us = o["median_us"] if o and o.get("verified") else None
        cub_us = c["median_us"] if c else None
        # the benchmark list's targets are for the plain GEMM: none for an epilogue run
        target = None if args.epilogue else TARGETS.get((m, n, k), DEFAULT_TARGET)
        ratio = cub_us / ours_us if ours_us and cub_us else None
        rows.append({
            "m": m, "n": n, "k": k,
            "ours_status": "missing" if o is None else ("ok" if o.get("verified") else "FAIL"),
            "ours_us": ours_us, "cublas_us": cub_us,
            "ours_min_us": o.get("min_us") if o else None, "ours_max_us": o.get("max_us") if o else None,
            "cublas_min_us": c.get("min_us") if c else None, "cublas_max_us": c.get("max_us") if c else None,
            "ours_tflops": 2.0 * m * n * k / (ours_us * 1e6) if ours_us else None,
            "cublas_tflops": 2.0 * m * n * k / (cub_us * 1e6) if cub_us else None,
            "ratio": ratio,
            "floor_us": fl, "floor_bound": bound,
            "ours_pct_floor": 100.0 * fl / ours_us if ours_us else None,
            "cublas_pct_floor": 100.0 * fl / cub_us if cub_us else None,
            "target": target, "met": (ratio >= target) if ratio is not None and target is not None else None,
            "config": sweep_compare.config_label(o) if o else None,
            "grid": o.get("grid") if o else None,
            "split_k": o.get("split_k") if o else None, "sets": o.get("sets") if o else None,
        })
    return rows


def fmt(v, spec, missing="-"):
    return missing if v is None else format(v, spec)


COLUMNS = [("shape", None), ("ours us", ".2f"), ("cuBLAS us", ".2f"), ("ours TFLOP/s", ".1f"),
           ("cuBLAS TFLOP/s", ".1f"), ("ratio", ".3f"), ("floor us", ".2f"), ("bound", None),
           ("ours % floor", ".1f"), ("cuBLAS % floor", ".1f"), ("target", ".2f"), ("met", None),
           ("config", None)]


def cells(r):
    shape = f"{r['m']}x{r['n']}x{r['k']}"
    ours_us = fmt(r["ours_us"], ".2f", "FAIL" if r["ours_status"] == "FAIL" else "-")
    met = "-" if r["met"] is None else ("yes" if r["met"] else "NO")
    return [shape, ours_us, fmt(r["cublas_us"], ".2f"), fmt(r["ours_tflops"], ".1f"),
            fmt(r["cublas_tflops"], ".1f"), fmt(r["ratio"], ".3f"), fmt(r["floor_us"], ".2f"), r["floor_bound"],
            fmt(r["ours_pct_floor"], ".1f"), fmt(r["cublas_pct_floor"], ".1f"), fmt(r["target"], ".2f"), met,
            r["config"] or "-"]


def summary(rows):
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    if not ratios:
        return "no shape has both times (see the messages above)"
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    worst = min(rows, key=lambda r: r["ratio"] if r["ratio"] else float("inf"))
    missed = [f"{r['m']}x{r['n']}x{r['k']}" for r in rows if r["met"] is False]
    failed = [f"{r['m']}x{r['n']}x{r['k']}" for r in rows if r["ours_status"] != "ok"]
    tail = f"; barecuda FAIL or missing (no time): {', '.join(failed)}" if failed else ""
    return (f"ratio (cuBLAS time / ours; > 1 = barecuda faster): geometric mean {geo:.3f} over {len(ratios)} shapes, "
            f"lowest {worst['ratio']:.3f} at {worst['m']}x{worst['n']}x{worst['k']}; "
            f"benchmark-list targets missed: {', '.join(missed) if missed else 'none'}{tail}")


def print_text(rows, header):
    table = [[c for c, _ in COLUMNS]] + [cells(r) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    print(header)
    for j, row in enumerate(table):
        print("  ".join(v.ljust(widths[i]) if i in (0, 7, 11, 12) else v.rjust(widths[i])
                        for i, v in enumerate(row)))
        if j == 0:
            print("  ".join("-" * w for w in widths))
    print(summary(rows))


def print_markdown(rows, header):
    print(header + "\n")
    print("| " + " | ".join(c for c, _ in COLUMNS) + " |")
    print("|" + "|".join("---" if i in (0, 7, 11, 12) else "---:" for i in range(len(COLUMNS))) + "|")
    for r in rows:
        print("| " + " | ".join(cells(r)) + " |")
    print("\n" + summary(rows))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", type=parse_shapes, default=parse_shapes(DEFAULT_SHAPES))
    ap.add_argument("--dtype", choices=["bf16", "f16"], default=None, help="input type (default bf16)")
    ap.add_argument("--out", choices=["bf16", "f16", "f32"], default=None, help="output type (default: --dtype)")
    ap.add_argument("--replays", type=int, default=20, help="barecuda's replays (bench_cublas.py always uses 20)")
    ap.add_argument("--peak-flops", type=float, default=800e12, help="FLOP/s for the floor (default 800e12)")
    ap.add_argument("--peak-bw", type=float, default=3.02e12, help="bytes/s for the floor (default 3.02e12)")
    ap.add_argument("--barecuda", default=os.path.join(ROOT, "build", "bin", "barecuda"))
    ap.add_argument("--config", default=None, help="barecuda configuration to force (e.g. sm80_128x256)")
    ap.add_argument("--stream-k", action="store_true",
                    help="barecuda's plans may take their last partial round by stream-K (bench --stream-k)")
    ap.add_argument("--order", choices=["ours-first", "cublas-first"], default="ours-first")
    ap.add_argument("--epilogue", choices=list(sweep.EPI), default=None,
                    help="every listed shape with this sweep epilogue and its types (cuBLAS: the nearest PyTorch "
                         "call, as in a sweep); not with --dtype/--out")
    fmt_group = ap.add_mutually_exclusive_group()
    fmt_group.add_argument("--json", action="store_true")
    fmt_group.add_argument("--markdown", action="store_true")
    ap.add_argument("--csv", help="also write the rows to this CSV file")
    sweep.add_arguments(ap, "--sweep")
    args = ap.parse_args(argv)
    if args.count is not None:
        args.sweep = args.count
        sweep.check_arguments(ap, args, "--sweep")
        if args.replays < 1:
            ap.error("--replays must be >= 1")
        if "--shapes" in argv or args.dtype is not None or args.out is not None or args.epilogue is not None:
            ap.error("--sweep draws its own shapes, types and epilogues: no --shapes, --dtype, --out or --epilogue")
        return main_sweep(args)
    if args.seed is not None or "--mem-cap" in argv or "--epilogue-fraction" in argv:
        ap.error("--seed, --mem-cap and --epilogue-fraction need --sweep")
    if args.epilogue and (args.dtype is not None or args.out is not None):
        ap.error("--epilogue sets the types: no --dtype or --out with it")
    if args.epilogue:
        args.dtype, args.out = sweep.EPI[args.epilogue]["ab"], sweep.EPI[args.epilogue]["out"]
    args.dtype = args.dtype or "bf16"
    args.out = args.out or args.dtype
    if args.replays < 1:
        ap.error("--replays must be >= 1")
    shapes_arg = ",".join(f"{m}x{n}x{k}" for (m, n, k) in args.shapes)
    types = ["--epilogue", args.epilogue] if args.epilogue else ["--dtype", args.dtype, "--out", args.out]
    ours_cmd = [args.barecuda, "bench", "--json", "--shapes", shapes_arg] + types + \
        ["--replays", str(args.replays)] + (["--config", args.config] if args.config else []) + \
        (["--stream-k"] if args.stream_k else [])
    cublas_cmd = [sys.executable, os.path.join(ROOT, "tools", "bench_cublas.py"), "--json"] + types + \
        [f"{m}x{n}x{k}" for (m, n, k) in args.shapes]
    notes = []
    if args.config:
        notes.append(f"barecuda forced to configuration {args.config}")
    if args.stream_k:
        notes.append("barecuda plans allowed stream-K (desc.stream_k = 1)")
    if args.replays != 20:
        notes.append(f"barecuda median of {args.replays} replays, cuBLAS of 20 (bench_cublas.py's fixed count)")
    if args.out != args.dtype and not args.epilogue:
        notes.append("cuBLAS side is torch.mm in the input type plus a copy to the output type (bench_cublas.py)")
    runs = [("barecuda", ours_cmd), ("cublas", cublas_cmd)]
    if args.order == "cublas-first":
        runs.reverse()
    results = {}
    for what, cmd in runs:
        results[what] = run_json(cmd, what)
    ours_rc, ours = results["barecuda"]
    cublas_rc, cublas = results["cublas"]

    rows = build_rows(args.shapes, ours, cublas, args)
    if args.epilogue:
        what = next((r.get("what") for r in (cublas or {}).get("rows", []) if r.get("what")), "?")
        notes.append(f"epilogue {args.epilogue}; cuBLAS side: {what}")
    device = (cublas or {}).get("device") or (ours or {}).get("device") or "?"
    header = (f"barecuda vs cuBLAS on {device} ({(ours or {}).get('image', '?')}; torch "
              f"{(cublas or {}).get('torch', '?')}), {args.dtype} -> {args.out}, device time per GEMM: graph of 50 "
              f"over rotating sets, median of replays; floor = max(2MNK / {args.peak_flops:.4g} FLOP/s, "
              f"bytes / {args.peak_bw:.4g} B/s)")
    if notes:
        header += "\nnote: " + "; ".join(notes)
    if ours and ours.get("error"):
        header += f"\nbarecuda stopped early: {ours['error']}"
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["m"])
            w.writeheader()
            w.writerows(rows)
    if args.json:
        print(json.dumps({"device": device, "dtype": args.dtype, "out": args.out, "peak_flops": args.peak_flops,
                          "peak_bw": args.peak_bw, "commands": {"barecuda": ours_cmd, "cublas": cublas_cmd},
                          "notes": notes, "rows": rows, "summary": summary(rows),
                          "barecuda_raw": ours, "cublas_raw": cublas}))
    elif args.markdown:
        print_markdown(rows, header)
    else:
        print_text(rows, header)

    if ours is None or cublas is None or cublas_rc != 0 or ours_rc not in (0, 31):
        return 1
    if ours_rc == 31 or any(r["ours_status"] == "FAIL" for r in rows):
        return 31
    return 0


def main_sweep(args):
    items = sweep.draw(args.sweep, args.seed, args.mem_cap, args.epilogue_fraction)
    ours_cmd, cublas_cmd = sweep_compare.commands(args, ROOT)
    runs = [("barecuda", ours_cmd), ("cublas", cublas_cmd)]
    if args.order == "cublas-first":
        runs.reverse()
    results = {what: run_json(cmd, what) for what, cmd in runs}
    ours_rc, ours = results["barecuda"]
    cublas_rc, cublas = results["cublas"]
    problems = sweep_compare.check_lists(items, ours, cublas)
    if problems:
        print("bench_compare: the two sides did not time the drawn list: " + "; ".join(problems[:5]), file=sys.stderr)
        return 1
    rows = sweep_compare.build_rows(items, ours, cublas, args.peak_flops, args.peak_bw)
    s = sweep_compare.summarize(rows)
    device = (cublas or {}).get("device") or (ours or {}).get("device") or "?"
    header = (f"barecuda vs cuBLAS on {device} ({(ours or {}).get('image', '?')}; torch "
              f"{(cublas or {}).get('torch', '?')}), sweep of {args.sweep} shapes from seed {args.seed} (memory cap "
              f"{args.mem_cap} B, epilogue fraction {args.epilogue_fraction:g}); device time per GEMM: graph of 50 "
              f"over rotating sets, median of {args.replays} replays on both sides; floor = max(2MNK / "
              f"{args.peak_flops:.4g} FLOP/s, bytes / {args.peak_bw:.4g} B/s), bytes = A + B + D (+ C read) (+ bias)")
    if ours and ours.get("error"):
        header += f"\nbarecuda stopped early: {ours['error']}"
    ops, kernels = (cublas or {}).get("ops", {}), (cublas or {}).get("kernels", {})
    if args.csv:
        sweep_compare.write_csv(rows, args.csv)
    if args.json:
        summary = {k: v for k, v in s.items() if k != "ten_worst"}
        summary["ten_worst"] = [sweep_compare.shape(r) for r in s["ten_worst"]]
        print(json.dumps({"device": device, "sweep": {"count": args.sweep, "seed": args.seed, "mem_cap": args.mem_cap,
                                                      "epilogue_fraction": args.epilogue_fraction},
                          "commands": {"barecuda": ours_cmd, "cublas": cublas_cmd}, "cublas_ops": ops,
                          "cublas_kernels": kernels, "rows": rows, "summary": summary}))
    else:
        print(sweep_compare.render(rows, s, header, ops, kernels, args.markdown))
    if ours is None or cublas is None or cublas_rc != 0 or ours_rc not in (0, 31):
        return 1
    return 31 if ours_rc == 31 or s["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
