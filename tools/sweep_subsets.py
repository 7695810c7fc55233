#!/usr/bin/env python3
"""Splits shape-sweep results into the subsets the README's "Shape sweeps"
table reports (by epilogue, by K, by D's row alignment, by M and N, by the
kernel that ran), from the CSV files that
`python3 tools/bench_compare.py --sweep COUNT --seed S --csv FILE` writes.

    python3 tools/sweep_subsets.py sweep_A.csv [sweep_B.csv ...]

prints one markdown row per subset: shapes, geometric mean of the ratios
(cuBLAS time / ours) and the worst ratio, one column entry per file
("a / b"). Rows whose check did not pass (no ratio) are left out."""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_compare import geo  # noqa: E402


def _esize(r):
    return 4 if r["epilogue"] == "f32_out" else 2


def _cfg(r, *names):
    return r["config"].startswith(names)


# (name, predicate): the README's subsets, in its order
SUBSETS = [
    ("plain", lambda r: r["epilogue"] == "plain"),
    ("bias (`bias`, `bias_relu`)", lambda r: r["epilogue"] in ("bias", "bias_relu")),
    ("beta·C (`c`, `c_alias`)", lambda r: r["epilogue"] in ("c", "c_alias")),
    ("f32 out", lambda r: r["epilogue"] == "f32_out"),
    ("f16 (`f16_in`, `f16_out`)", lambda r: r["epilogue"] in ("f16_in", "f16_out")),
    ("K < 64 (one partial k-block)", lambda r: r["k"] < 64),
    ("... A's rows copied as they lie (`NAME^D`)", lambda r: r["config"].endswith("^D")),
    ("K <= 128 (one or two k-blocks)", lambda r: r["k"] <= 128),
    ("K > 128", lambda r: r["k"] > 128),
    ("K a multiple of 64 (rows on the 128-byte grid)", lambda r: r["k"] % 64 == 0),
    ("K a multiple of 16, not of 64 (rows on 32-byte sectors, off the lines)",
     lambda r: r["k"] % 16 == 0 and r["k"] % 64 != 0),
    ("K an odd multiple of 8 (rows off the 32-byte sectors)", lambda r: r["k"] % 16 == 8),
    ("... on the multicast twin (`NAME^M`)", lambda r: r["config"].endswith("^M")),
    ("D rows 16-byte multiples", lambda r: r["n"] * _esize(r) % 16 == 0),
    ("D rows not 16-byte multiples", lambda r: r["n"] * _esize(r) % 16 != 0),
    ("M <= 16", lambda r: r["m"] <= 16),
    ("17 <= M <= 128 and N <= 256", lambda r: 17 <= r["m"] <= 128 and r["n"] <= 256),
    ("N = 1", lambda r: r["n"] == 1),
    ("on the dot kernel (`sm90_dot`)", lambda r: _cfg(r, "sm90_dot")),
    ("... of them at most 64 outputs", lambda r: _cfg(r, "sm90_dot") and r["m"] * r["n"] <= 64),
    ("on the GEMV kernel (`sm90_gemv`)", lambda r: r["config"].split("^")[0] == "sm90_gemv"),
    ("on the GEMV kernel's 32-row twin (`sm90_gemv32`)", lambda r: _cfg(r, "sm90_gemv32")),
    ("short-K twins (`sm90_128x64t`, `sm90_64x32t`)", lambda r: _cfg(r, "sm90_128x64t", "sm90_64x32t")),
    ("on the skinny short-K twin (`sm90_64x32m16t`, transposed or not)", lambda r: _cfg(r, "sm90_64x32m16t")),
    ("narrow split (`sm90_64x32s`)", lambda r: _cfg(r, "sm90_64x32s")),
    ("one tile row of 256 columns (`sm90_64x256`, `sm90_64x256s`)", lambda r: _cfg(r, "sm90_64x256")),
]


def load(path):
    """The passing rows of one sweep CSV, with m, n, k as ints and ratio as a float."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("ours_status") != "PASS" or not r.get("ratio"):
                continue
            r = dict(r)
            r["m"], r["n"], r["k"], r["ratio"] = int(r["m"]), int(r["n"]), int(r["k"]), float(r["ratio"])
            rows.append(r)
    return rows


def subsets(rows):
    """[(name, shapes, geometric mean or None, worst or None)] for every subset."""
    out = []
    for name, pred in SUBSETS:
        ratios = [r["ratio"] for r in rows if pred(r)]
        out.append((name, len(ratios), geo(ratios), min(ratios, default=None)))
    return out


def render(tables, labels):
    """The markdown table of several files' subsets (tables: subsets() of each)."""
    fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    lines = [f"| subset ({' / '.join(labels)}) | shapes | geomean ratio | worst |", "|---|---:|---:|---:|"]
    for i, (name, _) in enumerate(SUBSETS):
        cols = [t[i] for t in tables]
        lines.append(f"| {name} | {' / '.join(str(c[1]) for c in cols)} | {' / '.join(fmt(c[2]) for c in cols)} | "
                     f"{' / '.join(fmt(c[3]) for c in cols)} |")
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    tables = [subsets(load(p)) for p in argv]
    print(render(tables, [p.rsplit("/", 1)[-1] for p in argv]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
