"""The sweep half of tools/bench_compare.py: barecuda and cuBLAS on the same
drawn shapes and epilogues (tools/sweep.py), one table, the geometric mean and
worst ratio, the ten worst shapes, and the split by epilogue."""
import csv
import math
import os
import sys

import sweep

# epilogue classes of the summary: (label, tags)
CLASSES = [("plain", ("plain",)), ("bias (bias, bias_relu)", ("bias", "bias_relu")),
           ("beta*C (c, c_alias)", ("c", "c_alias")), ("f32 out", ("f32_out",)),
           ("f16 (f16_in, f16_out)", ("f16_in", "f16_out"))]
TARGET_GEOMEAN, TARGET_WORST = 1.05, 0.90


def commands(args, root):
    opts = ["--sweep", str(args.sweep), "--seed", str(args.seed), "--mem-cap", str(args.mem_cap),
            "--epilogue-fraction", repr(args.epilogue_fraction)]
    ours = [args.barecuda, "bench", "--json", "--replays", str(args.replays)] + opts + \
        (["--stream-k"] if getattr(args, "stream_k", False) else [])
    cublas = [sys.executable, os.path.join(root, "tools", "bench_cublas.py"), "--json", "--replays",
              str(args.replays)] + opts
    return ours, cublas


def check_lists(items, ours, cublas):
    """Problems (strings) where a side's rows are not the drawn list, index for index."""
    problems = []
    for what, obj in (("barecuda", ours), ("cuBLAS", cublas)):
        for r in (obj or {}).get("rows", []):
            i = r.get("index")
            if i is None or not 0 <= i < len(items):
                problems.append(f"{what} row with index {i} outside the sweep")
            elif (r["m"], r["n"], r["k"], r["epilogue"]) != items[i]:
                problems.append(f"{what} #{i} is {r['m']}x{r['n']}x{r['k']} {r['epilogue']}, the draw says "
                                f"{items[i][0]}x{items[i][1]}x{items[i][2]} {items[i][3]}")
    return problems


def config_label(o):
    """A row's configuration as `barecuda bench` shows it: NAME, then ^T (run transposed), ^D (dense-row
    kernel), ^K (stream-K) and ^M (multicast twin) from the bench JSON's flags."""
    return ((o.get("config") or "") + ("^T" if o.get("swapped") else "") + ("^D" if o.get("dense_a") else "") +
            ("^K" if o.get("stream_k_tiles") else "") + ("^M" if o.get("multicast") else ""))


def build_rows(items, ours, cublas, peak_flops, peak_bw):
    by_ours = {r["index"]: r for r in (ours or {}).get("rows", [])}
    by_cublas = {r["index"]: r for r in (cublas or {}).get("rows", [])}
    rows = []
    for i, (m, n, k, tag) in enumerate(items):
        o, c = by_ours.get(i), by_cublas.get(i)
        fl, bound = sweep.floor_us(m, n, k, tag, peak_flops, peak_bw)
        status = "missing" if o is None else o.get("status") or ("PASS" if o.get("verified") else "FAIL")
        ours_us = o["median_us"] if o and status == "PASS" else None
        cub_us = c["median_us"] if c else None
        rows.append({
            "index": i, "m": m, "n": n, "k": k, "epilogue": tag, "ours_status": status,
            "ours_us": ours_us, "cublas_us": cub_us,
            "ratio": cub_us / ours_us if ours_us and cub_us else None,
            "floor_us": fl, "floor_bound": bound,
            "ours_pct_floor": 100.0 * fl / ours_us if ours_us else None,
            "cublas_pct_floor": 100.0 * fl / cub_us if cub_us else None,
            "config": config_label(o) if o else None,
            "split_k": o.get("split_k") if o else None,
            "sets": o.get("sets") if o else None,
            "cublas_what": c.get("what") if c else None, "cublas_kernels": c.get("kernels") if c else None,
        })
    return rows


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(rows):
    timed = [r for r in rows if r["ratio"]]
    worst = sorted(timed, key=lambda r: r["ratio"])
    groups = []
    tags = [e[0] for e in sweep.EPILOGUES]
    for label, members in [(t, (t,)) for t in tags] + [c for c in CLASSES if len(c[1]) > 1]:
        rs = [r for r in timed if r["epilogue"] in members]
        if rs:
            low = min(rs, key=lambda r: r["ratio"])
            groups.append({"label": label, "n": len(rs), "geomean": geo([r["ratio"] for r in rs]),
                           "worst": low["ratio"], "worst_shape": shape(low)})
    geomean = geo([r["ratio"] for r in timed])
    failed = [shape(r) for r in rows if r["ours_status"] == "FAIL"]
    missing = [shape(r) for r in rows if r["ours_status"] != "FAIL" and not r["ratio"]]
    return {"n": len(timed), "shapes": len(rows), "geomean": geomean,
            "worst": worst[0]["ratio"] if worst else None, "worst_shape": shape(worst[0]) if worst else None,
            "ten_worst": worst[:10], "groups": groups,
            "failed": failed, "missing": missing,
            # a shape that failed its check or was not timed on both sides is not a met target
            "targets_met": bool(worst) and not failed and not missing and geomean >= TARGET_GEOMEAN
            and worst[0]["ratio"] >= TARGET_WORST}


def shape(r):
    return f"#{r['index']} {r['m']}x{r['n']}x{r['k']} {r['epilogue']}"


def fmt(v, spec, missing="-"):
    return missing if v is None else format(v, spec)


COLUMNS = ["idx", "shape", "epilogue", "ours us", "cuBLAS us", "ratio", "floor us", "bound", "ours % floor",
           "cuBLAS % floor", "config/split"]
LEFT = {1, 2, 7, 10}


def cells(r):
    ours = fmt(r["ours_us"], ".2f", r["ours_status"] if r["ours_status"] in ("FAIL", "SKIP") else "-")
    cfg = f"{r['config']}/{r['split_k']}" if r["config"] else "-"
    return [str(r["index"]), f"{r['m']}x{r['n']}x{r['k']}", r["epilogue"], ours, fmt(r["cublas_us"], ".2f"),
            fmt(r["ratio"], ".3f"), fmt(r["floor_us"], ".2f"), r["floor_bound"], fmt(r["ours_pct_floor"], ".1f"),
            fmt(r["cublas_pct_floor"], ".1f"), cfg]


def summary_lines(s, ops, kernels):
    """(headline, [(title, header, rows)]) shared by the text and markdown renderings."""
    if not s["n"]:
        return "no shape has both times (see the messages above)", []
    head = (f"ratio (cuBLAS time / ours; > 1 = barecuda faster): geometric mean {s['geomean']:.3f} over {s['n']} of "
            f"{s['shapes']} shapes, worst {s['worst']:.3f} at {s['worst_shape']}; targets (geometric mean >= "
            f"{TARGET_GEOMEAN:.2f}, worst >= {TARGET_WORST:.2f}): {'met' if s['targets_met'] else 'NOT met'}")
    if s["failed"]:
        head += f"; barecuda FAIL (no time): {', '.join(s['failed'])}"
    if s["missing"]:
        head += f"; no ratio (a side missing): {', '.join(s['missing'][:10])}"
    worst = [[str(r["index"]), f"{r['m']}x{r['n']}x{r['k']}", r["epilogue"], f"{r['ratio']:.3f}",
              fmt(r["ours_us"], ".2f"), fmt(r["cublas_us"], ".2f"), f"{r['config']}/{r['split_k']}",
              fmt(r["ours_pct_floor"], ".1f"), fmt(r["cublas_pct_floor"], ".1f"), r["floor_bound"]]
             for r in s["ten_worst"]]
    groups = [[g["label"], str(g["n"]), f"{g['geomean']:.3f}", f"{g['worst']:.3f}", g["worst_shape"]]
              for g in s["groups"]]
    timed = [[tag, ops.get(tag, "?"), "?" if kernels.get(tag) is None else str(kernels.get(tag))]
             for tag in [e[0] for e in sweep.EPILOGUES] if tag in ops]
    return head, [
        ("ten worst shapes", ["idx", "shape", "epilogue", "ratio", "ours us", "cuBLAS us", "config/split",
                              "ours % floor", "cuBLAS % floor", "bound"], worst),
        ("by epilogue", ["epilogue", "shapes", "geomean ratio", "worst ratio", "worst shape"], groups),
        ("what the cuBLAS side times", ["epilogue", "PyTorch call", "kernels per call"], timed),
    ]


def text_table(header, rows, left):
    table = [header] + rows
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    out = []
    for j, row in enumerate(table):
        out.append("  ".join(v.ljust(widths[i]) if i in left else v.rjust(widths[i]) for i, v in enumerate(row)))
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def md_table(header, rows, left):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i in left else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def render(rows, s, header, ops, kernels, markdown):
    head, sections = summary_lines(s, ops, kernels)
    table = md_table if markdown else text_table
    parts = [header, "", table(COLUMNS, [cells(r) for r in rows], LEFT), "", head]
    for title, h, body in sections:
        parts += ["", f"### {title}" if markdown else f"{title}:", "", table(h, body, {0, 1, 2, 6, 9}
                                                                             if title.startswith("ten") else {0, 1, 4})]
    return "\n".join(parts)


def write_csv(rows, path):
    keys = ["index", "m", "n", "k", "epilogue", "ours_status", "ours_us", "cublas_us", "ratio", "floor_us",
            "floor_bound", "ours_pct_floor", "cublas_pct_floor", "config", "split_k", "sets", "cublas_what",
            "cublas_kernels"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
