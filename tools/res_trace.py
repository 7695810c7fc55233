#!/usr/bin/env python3
"""Prints where a resident step goes, from the stamps of a diagnostic build
(tools/res_trace.sh): per event, ns after CTA 0 saw the doorbell (CTA 0,
then the median, min and max over CTAs), and clock cycles on CTAs 0 and 1,
each the median over the eight steps kept. The events are res_trace's in
kernels_ptx/resident_sm90.c: pN.* are phase N (a grid barrier opens each
after the first; phases past the fourth share p3)."""
import struct, sys, statistics as st

EVENTS = 32
NAMES = {0: 'seen', 1: 'cons_start', 26: 'fin_pub', 27: 'fin_arrive', 28: 'all_arrived', 29: 'step_fenced',
         30: 'gemv_entered', 31: 'b_fenced'}
# a phase's first work item: a tile's name | a GEMV item's (the median mixes them where both kinds start a phase)
for p in range(4):
    for i, n in enumerate(['b_enter', 'pub', 'b_exit', 'first_full|loads', 'tile_done|done', 'prod_issued|parts']):
        NAMES[2 + 6 * p + i] = f'p{p}.{n}'
# a build with -DBC_RES_TRACE_FINE (TRACE_FLAGS) stamps a GEMV item's geometry and lane addresses worked out
# as events 20 + 2p and 21 + 2p of phases 0-2, in place of phase 3's (--fine names them so)
FINE = {20 + 2 * p + i: f'p{p}.gemv_{n}' for p in range(3) for i, n in enumerate(['geom', 'lane'])}
REC = 16 + 256 + 8 * 132 * EVENTS * 16  # header (magic, grid, ops, 0), sync block, stamps


def main(path):
    data = open(path, 'rb').read()
    nrec = len(data) // REC
    hdr = struct.unpack_from('4I', data, (nrec - 1) * REC)
    grid = hdr[1]
    base = (nrec - 1) * REC + 16 + 256
    rows, cyc = {}, {}
    for s in range(8):
        def ev(c, e):
            return struct.unpack_from('2Q', data, base + ((s * 132 + c) * EVENTS + e) * 16)
        t0 = ev(0, 0)[0]
        if t0 == 0:
            continue
        for e in range(EVENTS):
            vals = [ev(c, e)[0] - t0 for c in range(grid) if ev(c, e)[0]]
            if vals:
                rows.setdefault(e, []).append((ev(0, e)[0] - t0 if ev(0, e)[0] else None, max(vals),
                                               st.median(vals), min(vals), len(vals)))
        for c in (0, 1):
            c0 = ev(c, 0)[1]
            for e in range(1, EVENTS):
                gt, clk = ev(c, e)
                if gt and c0:
                    cyc.setdefault((c, e), []).append(clk - c0)
    print(f'{path}: grid {grid} ops {hdr[2]} records {nrec}')
    print(f'{"event":22s} {"cta0":>8s} {"median":>8s} {"min":>8s} {"max":>8s} {"n":>4s}   cyc(cta0) cyc(cta1)')
    for e in sorted(rows, key=lambda e: st.median([x[2] for x in rows[e]])):
        r = rows[e]
        def f(i):
            v = [x[i] for x in r if x[i] is not None]
            return st.median(v) if v else float('nan')
        c0 = st.median(cyc[(0, e)]) if (0, e) in cyc else float('nan')
        c1 = st.median(cyc[(1, e)]) if (1, e) in cyc else float('nan')
        print(f'{NAMES.get(e, e):22s} {f(0):8.0f} {f(2):8.0f} {f(3):8.0f} {f(1):8.0f} {r[0][4]:4d}   {c0:9.0f} {c1:9.0f}')


if '--fine' in sys.argv[1:]:
    NAMES.update(FINE)
for p in sys.argv[1:]:
    if p != '--fine':
        main(p)
