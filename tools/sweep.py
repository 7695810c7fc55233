#!/usr/bin/env python3
"""The shape sweep of `barecuda bench --sweep`, drawn exactly as the C side
draws it (tools/cli/sweep.h documents the algorithm; both sides use integer
arithmetic only, so the same seed gives the same list on any host).

usage: tools/sweep.py --count N --seed S [--mem-cap BYTES] [--epilogue-fraction F]
prints one line per shape: index MxNxK epilogue
"""
import argparse
import sys

MASK64 = (1 << 64) - 1
DEFAULT_MEM_CAP = 4 << 30
MIN_MEM_CAP = 65536
MAX_COUNT = 100000
DEFAULT_EPI_FRACTION = 0.5
MAX_ATTEMPTS = 1000000

# tag: (ab dtype, out dtype, alpha, beta, C aliases D, bias, relu) -- tools/cli/sweep.c, bc_epi_table
EPILOGUES = [
    ("plain", "bf16", "bf16", 1.0, 0.0, False, False, False),
    ("c", "bf16", "bf16", 1.0, 1.0, False, False, False),
    ("c_alias", "bf16", "bf16", 1.0, 1.0, True, False, False),
    ("bias", "bf16", "bf16", 1.0, 0.0, False, True, False),
    ("bias_relu", "bf16", "bf16", 1.0, 0.0, False, True, True),
    ("f16_in", "f16", "f16", 1.0, 0.0, False, False, False),
    ("f16_out", "bf16", "f16", 1.0, 0.0, False, False, False),
    ("f32_out", "bf16", "f32", 1.0, 0.0, False, False, False),
]
EPI = {e[0]: dict(zip(("tag", "ab", "out", "alpha", "beta", "c_alias", "bias", "relu"), e)) for e in EPILOGUES}
BYTES = {"bf16": 2, "f16": 2, "f32": 4}

ROOT2_Q62 = [
    0x5a827999fcef3242, 0x4c1bf828c6dc54b7, 0x45cae0f1f545eb73, 0x42d561b3e6243d8a,
    0x4166c34c5615d0eb, 0x40b268f9de0183b9, 0x4058f6a7ecccd5b6, 0x402c6be96af2fb58,
    0x4016321b687027a8, 0x400b18178ba33b14, 0x40058bce410147e8, 0x4002c5d7bff71dae,
    0x400162e807ee7e5b, 0x4000b1730df6a524, 0x400058b9497b8151, 0x40002c5c955dd701,
    0x4000162e46d6f26b, 0x40000b1722757b1b, 0x4000058b90fd3e0c, 0x400002c5c86f3f26,
    0x40000162e433c79b, 0x400000b17218edcf, 0x40000058b90c3968, 0x4000002c5c860d54,
    0x400000162e4302d2, 0x4000000b17218073, 0x400000058b90bffc, 0x40000002c5c85fee,
    0x4000000162e42ff3, 0x40000000b17217f8, 0x4000000058b90bfc, 0x400000002c5c85fe,
]


class SplitMix64:
    """splitmix64, as bc_rng_next in tools/common/ref.c."""

    def __init__(self, seed):
        self.s = seed & MASK64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def logu(rng, lo, hi):
    """An integer in [lo, hi], log-uniform (sweep.h, logu)."""
    e = 0
    while (lo << e) <= hi:
        e += 1
    while True:
        t = (rng.next() >> 32) * e
        q, f = t >> 32, t & 0xFFFFFFFF
        F = 1 << 62
        for i in range(1, 33):
            if (f >> (32 - i)) & 1:
                F = (F * ROOT2_Q62[i - 1]) >> 62
        v = ((lo << q) * F) >> 62
        if v <= hi:
            return v


def bench_sets(bytes_per_set):
    """Rotating input sets: max(2, min(8, 400 MiB // bytes)) (tools/cli/shapes.c, bc_bench_sets)."""
    return max(2, min(8, (400 << 20) // max(bytes_per_set, 1)))


def set_bytes(m, n, k, tag):
    e = EPI[tag]
    ob = BYTES[e["out"]]
    b = (m * k + n * k) * BYTES[e["ab"]] + m * n * ob
    if e["beta"] != 0.0 and not e["c_alias"]:
        b += m * n * ob
    if e["bias"]:
        b += n * ob
    return b


def traffic_bytes(m, n, k, tag):
    e = EPI[tag]
    ob = BYTES[e["out"]]
    b = (m * k + n * k) * BYTES[e["ab"]] + m * n * ob
    if e["beta"] != 0.0:
        b += m * n * ob
    if e["bias"]:
        b += n * ob
    return b


def floor_us(m, n, k, tag, peak_flops=800e12, peak_bw=3.02e12):
    """(floor us, 'compute' or 'memory'): max(2MNK / peak_flops, traffic / peak_bw)."""
    flop_s = 2.0 * m * n * k / peak_flops
    byte_s = traffic_bytes(m, n, k, tag) / peak_bw
    return max(flop_s, byte_s) * 1e6, "compute" if flop_s >= byte_s else "memory"


def draw(count, seed, mem_cap=DEFAULT_MEM_CAP, epi_fraction=DEFAULT_EPI_FRACTION):
    """[(m, n, k, tag), ...] as `barecuda bench --sweep count --seed seed` draws it."""
    rng = SplitMix64(seed)
    threshold = float(epi_fraction) * 9007199254740992.0
    out = []
    for _ in range(count):
        for _attempt in range(MAX_ATTEMPTS):
            m = logu(rng, 1, 16384)
            n = logu(rng, 1, 16384)
            k = 8 * ((logu(rng, 8, 16384) + 4) // 8)
            tag = "plain"
            if float(rng.next() >> 11) < threshold:
                tag = EPILOGUES[1 + rng.next() % (len(EPILOGUES) - 1)][0]
            sb = set_bytes(m, n, k, tag)
            if sb * bench_sets(sb) <= mem_cap:
                out.append((m, n, k, tag))
                break
        else:
            raise ValueError(f"no shape fits the memory cap of {mem_cap} bytes after {MAX_ATTEMPTS} candidates")
    return out


def add_arguments(ap, count_flag="--count"):
    """The sweep options, with the C side's ranges."""
    ap.add_argument(count_flag, dest="count", type=int, metavar="COUNT", help=f"shapes to draw (1..{MAX_COUNT})")
    ap.add_argument("--seed", type=int, help="generator seed (0..2^63-1)")
    ap.add_argument("--mem-cap", type=int, default=DEFAULT_MEM_CAP,
                    help=f"bytes of all rotating sets of one shape (>= {MIN_MEM_CAP}; default 4 GiB)")
    ap.add_argument("--epilogue-fraction", type=float, default=DEFAULT_EPI_FRACTION,
                    help="share of shapes with a non-plain epilogue, 0..1 (default 0.5)")


def check_arguments(ap, args, count_flag="--count"):
    if args.count is None or not 1 <= args.count <= MAX_COUNT:
        ap.error(f"{count_flag} COUNT is required, 1..{MAX_COUNT}")
    if args.seed is None or not 0 <= args.seed < (1 << 63):
        ap.error("--seed S is required, 0..2^63-1")
    if args.mem_cap < MIN_MEM_CAP:
        ap.error(f"--mem-cap must be >= {MIN_MEM_CAP}")
    if not 0.0 <= args.epilogue_fraction <= 1.0:
        ap.error("--epilogue-fraction must be in [0, 1]")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    check_arguments(ap, args)
    for i, (m, n, k, tag) in enumerate(draw(args.count, args.seed, args.mem_cap, args.epilogue_fraction)):
        print(f"{i} {m}x{n}x{k} {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
