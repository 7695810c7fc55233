#!/usr/bin/env python3
"""Where a kernel's instructions and stalls go, by region of its SASS.

Reads the source page that Nsight Compute writes for one profiled launch,
  ncu --section SourceCounters --export r.ncu-rep <program>
  ncu --import r.ncu-rep --page source --csv --print-source sass > src.csv
and splits the SASS into regions that end at a control instruction
(barrier, branch, mbarrier wait, wgmma, TMA, exit). Prints each region that
holds at least --min percent of the executed warp instructions or of the
stall samples: its first address, length, the two shares, the instruction
that ends it and its most executed opcodes. Runs anywhere (no GPU).
kernels_ptx/PERF_NOTES.md, change 69, used it on the short-K twin.
  python3 tools/device/ncu_regions.py src.csv [--min 0.5]
"""
import argparse
import csv
import sys

ENDS = ('BAR', 'BRA', 'SYNCS', 'HGMMA', 'UTMA', 'UBLKCP', 'WARPSYNC', 'EXIT', 'RET')


def mnemonic(src):
    """The instruction of a SASS line without its predicate, modifiers kept."""
    words = src.split()
    if words and words[0].startswith('@'):
        words = words[1:]
    return words[0] if words else ''


def opcode(src):
    """The opcode of a SASS line without its predicate and modifiers."""
    return mnemonic(src).split('.')[0]


def regions(rows):
    """Regions of (address, source, executed, samples) rows, in order."""
    out, cur = [], None
    for addr, src, ex, samples in rows:
        if cur is None:
            cur = {'addr': addr, 'n': 0, 'ex': 0, 'samples': 0, 'ops': {}, 'last': ''}
        cur['n'] += 1
        cur['ex'] += ex
        cur['samples'] += samples
        op = opcode(src)
        cur['ops'][op] = cur['ops'].get(op, 0) + ex
        cur['last'] = src
        if mnemonic(src).startswith(ENDS):
            out.append(cur)
            cur = None
    if cur is not None:
        out.append(cur)
    return out


def read(path):
    """The kernel's name and its (address, source, executed, samples) rows."""
    with open(path, newline='') as f:
        lines = list(csv.reader(f))
    head = next(i for i, r in enumerate(lines) if 'Address' in r and 'Source' in r)
    name = lines[head - 1][1] if head > 0 and len(lines[head - 1]) > 1 else '?'
    cols = lines[head]
    ia, isrc = cols.index('Address'), cols.index('Source')
    iex = cols.index('Instructions Executed')
    iss = cols.index('Warp Stall Sampling (All Samples)')

    def num(s):
        return int(float(s)) if s not in ('', None) else 0
    rows = [(r[ia], r[isrc], num(r[iex]), num(r[iss])) for r in lines[head + 1:] if len(r) > iss]
    return name, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('csv', help="ncu --page source --csv --print-source sass output")
    ap.add_argument('--min', type=float, default=0.5, help='percent of instructions or samples to show a region')
    a = ap.parse_args(argv)
    name, rows = read(a.csv)
    ex = sum(r[2] for r in rows) or 1
    samples = sum(r[3] for r in rows) or 1
    print(f'{name}: {ex} warp instructions executed, {samples} stall samples')
    print('address            length  instr %  stall %  ends with                        top opcodes')
    for g in regions(rows):
        pe, ps = 100.0 * g['ex'] / ex, 100.0 * g['samples'] / samples
        if pe < a.min and ps < a.min:
            continue
        top = ', '.join(f'{o} {c}' for o, c in sorted(g['ops'].items(), key=lambda x: -x[1])[:4] if c)
        print(f"{g['addr']:18s} {g['n']:6d} {pe:8.1f} {ps:8.1f}  {g['last'][:32]:32s} {top}")
    return 0


if __name__ == '__main__':
    sys.exit(main())
